//! Which attributes each opcode takes, as XLA's HLO parser accepts them: the named lists the
//! opcode table's attribute column refers to. An attribute outside
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

/// The attribute lists of the opcode table's last column (see `opcode/mod.rs`), one per
/// family of opcodes that take the same attributes.
type List = &'static [&'static str];

pub const NO_OWN: List = &[];
pub const UNARY: List = &["result_accuracy"];
pub const PARAMETER: List = &["parameter_replication"];
pub const COMPARE: List = &["direction", "type"];
pub const DIMENSIONS: List = &["dimensions"];
pub const RESHAPE: List = &["inferred_dimension"];
pub const REDUCE: List = &["dimensions", "to_apply"];
pub const SORT: List = &["dimensions", "is_stable", "to_apply"];
pub const SLICE: List = &["slice"];
pub const DYNAMIC_SLICE: List = &["dynamic_slice_sizes"];
pub const PAD: List = &["padding"];
pub const IOTA: List = &["iota_dimension"];
pub const REDUCE_PRECISION: List = &["exponent_bits", "mantissa_bits"];
pub const CONVOLUTION: List =
    &["window", "dim_labels", "feature_group_count", "batch_group_count", "operand_precision", "algorithm"];
pub const DOT: List = &[
    "lhs_batch_dims",
    "rhs_batch_dims",
    "lhs_contracting_dims",
    "rhs_contracting_dims",
    "operand_precision",
    "algorithm",
];
pub const GATHER: List = &[
    "offset_dims",
    "collapsed_slice_dims",
    "start_index_map",
    "index_vector_dim",
    "slice_sizes",
    "indices_are_sorted",
    "operand_batching_dims",
    "start_indices_batching_dims",
];
pub const SCATTER: List = &[
    "update_window_dims",
    "inserted_window_dims",
    "scatter_dims_to_operand_dims",
    "index_vector_dim",
    "indices_are_sorted",
    "unique_indices",
    "input_batching_dims",
    "scatter_indices_batching_dims",
    "to_apply",
];
pub const REDUCE_WINDOW: List = &["window", "to_apply"];
pub const SELECT_AND_SCATTER: List = &["window", "select", "scatter"];
/// Custom calls XLA:CPU rewrites to convolutions carry a convolution's attributes.
pub const CUSTOM_CALL: List = &[
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
];
pub const FUSION: List = &["kind", "calls", "output_to_operand_aliasing"];
pub const CALL: List = &["to_apply", "is_composite"];
pub const WHILE: List = &["condition", "body"];
pub const CONDITIONAL: List = &["branch_computations", "true_computation", "false_computation"];
pub const FFT: List = &["fft_type", "fft_length"];
pub const RNG: List = &["distribution"];
pub const RNG_BIT_GENERATOR: List = &["algorithm"];
pub const RNG_STATE: List = &["delta"];
pub const CHOLESKY: List = &["lower"];
pub const TRIANGULAR_SOLVE: List = &["left_side", "lower", "unit_diagonal", "transpose_a"];
pub const BATCH_NORM: List = &["epsilon", "feature_index"];
pub const TOPK: List = &["k", "largest"];
pub const GET_TUPLE_ELEMENT: List = &["index"];
pub const COLLECTIVE: List = &["replica_groups", "channel_id", "use_global_device_ids", "constrain_layout"];
pub const ALL_REDUCE: List =
    &["replica_groups", "channel_id", "use_global_device_ids", "constrain_layout", "to_apply"];
pub const REDUCE_SCATTER: List =
    &["replica_groups", "channel_id", "use_global_device_ids", "constrain_layout", "to_apply", "dimensions"];
pub const ALL_GATHER: List =
    &["replica_groups", "channel_id", "use_global_device_ids", "constrain_layout", "dimensions"];
pub const COLLECTIVE_PERMUTE: List = &["source_target_pairs", "channel_id", "slice_sizes"];
pub const SEND_RECV: List = &["channel_id", "is_host_transfer"];
pub const INFEED: List = &["infeed_config"];
pub const OUTFEED: List = &["outfeed_config", "outfeed_shape"];
pub const COPY_START: List = &["cross_program_prefetch_index"];
pub const DOMAIN: List = &["domain"];
pub const ASYNC: List = &["calls", "async_execution_thread"];

/// The attributes of `op` beyond [`COMMON`].
pub fn attributes_of(op: Opcode) -> &'static [&'static str] {
    op.info().attributes
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
