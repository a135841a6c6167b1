//! Which attributes each opcode takes, as XLA's HLO parser accepts them. An attribute outside
//! its opcode's list is an error at its line and column: XLA's parser rejects it too, and
//! accepting it silently would compute something else than the text says (`topk(x), k=2,
//! largst=false` returned the largest elements).

use super::opcode::Opcode;

/// Attributes XLA's parser accepts on every instruction: metadata and annotations for other
/// passes, which do not change what an instruction computes on one device.
pub const COMMON: &[&str] = &[
    "metadata",
    "sharding",
    "frontend_attributes",
    "backend_config",
    "control-predecessors",
    "statistics",
    "original_value",
];

const COLLECTIVE: &[&str] = &["replica_groups", "channel_id", "use_global_device_ids", "constrain_layout"];

/// The attributes of `op` beyond [`COMMON`].
pub fn attributes_of(op: Opcode) -> &'static [&'static str] {
    use Opcode::*;
    match op {
        Parameter => &["parameter_replication"],
        Compare => &["direction", "type"],
        Broadcast | Transpose | Reverse | Concatenate | GetDimensionSize | SetDimensionSize => &["dimensions"],
        Reshape => &["inferred_dimension"],
        Reduce | Map => &["dimensions", "to_apply"],
        Sort => &["dimensions", "is_stable", "to_apply"],
        Slice => &["slice"],
        DynamicSlice => &["dynamic_slice_sizes"],
        Pad => &["padding"],
        Iota => &["iota_dimension"],
        ReducePrecision => &["exponent_bits", "mantissa_bits"],
        Convolution => &["window", "dim_labels", "feature_group_count", "batch_group_count", "operand_precision", "algorithm"],
        Dot => &[
            "lhs_batch_dims",
            "rhs_batch_dims",
            "lhs_contracting_dims",
            "rhs_contracting_dims",
            "operand_precision",
            "algorithm",
        ],
        Gather => &[
            "offset_dims",
            "collapsed_slice_dims",
            "start_index_map",
            "index_vector_dim",
            "slice_sizes",
            "indices_are_sorted",
            "operand_batching_dims",
            "start_indices_batching_dims",
        ],
        Scatter => &[
            "update_window_dims",
            "inserted_window_dims",
            "scatter_dims_to_operand_dims",
            "index_vector_dim",
            "indices_are_sorted",
            "unique_indices",
            "input_batching_dims",
            "scatter_indices_batching_dims",
            "to_apply",
        ],
        ReduceWindow => &["window", "to_apply"],
        SelectAndScatter => &["window", "select", "scatter"],
        CustomCall => &[
            "custom_call_target",
            "api_version",
            "operand_layout_constraints",
            "output_to_operand_aliasing",
            "custom_call_has_side_effect",
            "called_computations",
            "to_apply",
            "schedule",
            "padding_type",
            "literal",
            "window",
            "dim_labels",
            "feature_group_count",
            "batch_group_count",
            "operand_precision",
        ],
        Fusion => &["kind", "calls", "output_to_operand_aliasing"],
        Call => &["to_apply", "is_composite"],
        While => &["condition", "body"],
        Conditional => &["branch_computations", "true_computation", "false_computation"],
        Fft => &["fft_type", "fft_length"],
        Rng => &["distribution"],
        RngBitGenerator => &["algorithm"],
        RngGetAndUpdateState => &["delta"],
        Cholesky => &["lower"],
        TriangularSolve => &["left_side", "lower", "unit_diagonal", "transpose_a"],
        BatchNormTraining | BatchNormInference | BatchNormGrad => &["epsilon", "feature_index"],
        TopK => &["k", "largest"],
        GetTupleElement => &["index"],
        AllReduce | AllReduceStart => &["replica_groups", "channel_id", "use_global_device_ids", "constrain_layout", "to_apply"],
        ReduceScatter => &["replica_groups", "channel_id", "use_global_device_ids", "constrain_layout", "to_apply", "dimensions"],
        AllGather | AllGatherStart | AllToAll => &["replica_groups", "channel_id", "use_global_device_ids", "constrain_layout", "dimensions"],
        RaggedAllToAll | CollectiveBroadcast => COLLECTIVE,
        CollectivePermute | CollectivePermuteStart => &["source_target_pairs", "channel_id", "slice_sizes"],
        Send | SendDone | Recv | RecvDone => &["channel_id", "is_host_transfer"],
        Infeed => &["infeed_config"],
        Outfeed => &["outfeed_config", "outfeed_shape"],
        CopyStart => &["cross_program_prefetch_index"],
        Domain => &["domain"],
        AsyncStart | AsyncUpdate | AsyncDone => &["calls", "async_execution_thread"],
        op if op.is_elementwise_unary() => &["result_accuracy"],
        _ => &[],
    }
}

/// Whether `op` takes the attribute `key`.
pub fn takes(op: Opcode, key: &str) -> bool {
    COMMON.contains(&key) || attributes_of(op).contains(&key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_attributes_the_issue_found_ignored_are_not_taken() {
        assert!(takes(Opcode::TopK, "largest") && !takes(Opcode::TopK, "largst"));
        assert!(takes(Opcode::Compare, "type") && !takes(Opcode::Compare, "typ"));
        assert!(!takes(Opcode::Add, "foo"));
        assert!(takes(Opcode::Add, "metadata") && takes(Opcode::Exp, "result_accuracy"));
    }
}
