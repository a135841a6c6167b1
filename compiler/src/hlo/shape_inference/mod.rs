//! Shape inference for every HLO opcode, following XLA's rules.
//!
//! Each op family has its own file with one function per op (`infer_dot(lhs, rhs, dnums,
//! preferred)`, `infer_broadcast(operand, out_dims, dims)`, ...) that a builder can call
//! directly. [`infer_shape`] dispatches on the opcode, reading the op's attributes from an
//! [`Attributes`] value and the called computations' signatures; it needs no `Instruction`.
//!
//! Inferred shapes carry no layouts. Some results are not derivable from the operands (the
//! target type of `convert`, the dimensions of `broadcast` and `reshape`, `iota`,
//! `parameter`, `custom-call`, `rng`, the context of async ops, ...): for those the caller
//! passes the declared shape and inference checks what can be checked against it. For dot and
//! convolution the declared element type is the preferred element type.
//!
//! Errors are messages that start with the opcode: `dot: lhs contracting dimension 1 has size
//! 3, rhs contracting dimension 0 has size 4`.

mod common;

pub mod collectives;
pub mod control;
pub mod dot_conv;
pub mod elementwise;
pub mod gather_scatter;
pub mod misc;
pub mod reduce;
pub mod shape_ops;

#[cfg(test)]
mod tests;

use crate::hlo::attributes::Attributes;
use crate::hlo::computation::Computation;
use crate::hlo::module::ProgramShape;
use crate::hlo::opcode::{Arity, Opcode};
use common::{
    array, at_least_operands, called_count, declared as need_declared, fail, operand_count, required, single_dimension,
    window_or_scalar,
};
use hlojit_runtime::Shape;

pub use collectives::*;
pub use control::*;
pub use dot_conv::*;
pub use elementwise::*;
pub use gather_scatter::*;
pub use misc::*;
pub use reduce::*;
pub use shape_ops::*;

/// The signature of a computation: its parameters (by parameter number) and its root's shape.
pub fn signature(computation: &Computation) -> ProgramShape {
    ProgramShape { parameters: computation.parameter_shapes(), result: computation.result_shape().clone() }
}

/// How many called computations an opcode takes: `(minimum, maximum)`, from the opcode table.
pub fn called_computation_arity(opcode: Opcode) -> (usize, usize) {
    match opcode.info().called {
        Arity::Exact(n) => (n, n),
        Arity::AtLeast(n) => (n, usize::MAX),
    }
}

/// Infers the result shape of `opcode` applied to `operands` with `attrs`; `called` holds the
/// signatures of the called computations in the opcode's order (see
/// [`crate::hlo::Instruction::called`]); `declared` is the declared result shape, needed by
/// ops whose result is not derivable from their operands and used as the preferred element
/// type of dot and convolution.
pub fn infer_shape(
    opcode: Opcode,
    operands: &[&Shape],
    attrs: &Attributes,
    called: &[&ProgramShape],
    declared: Option<&Shape>,
) -> Result<Shape, String> {
    use Opcode::*;
    let op = opcode;
    let (min_called, max_called) = called_computation_arity(op);
    if called.len() < min_called || called.len() > max_called {
        if min_called == max_called {
            called_count(op, called, min_called)?;
        }
        fail!(op, "expected at least {min_called} called computation(s), got {}", called.len());
    }
    // Operand counts come from the opcode table; the rules below check only what a count
    // cannot say (pairs of inputs and init values, ...).
    match op.info().operands {
        Arity::Exact(n) => operand_count(op, operands, n)?,
        Arity::AtLeast(n) => at_least_operands(op, operands, n)?,
    }
    let preferred = declared.and_then(Shape::element_type);
    let declared_array = |why: &str| -> Result<&hlojit_runtime::ArrayShape, String> {
        array(op, need_declared(op, declared, why)?, "the declared result")
    };
    match op {
        _ if op.is_elementwise_unary() && !matches!(op, Convert | BitcastConvert | ReducePrecision) => {
            infer_unary(op, operands[0])
        }
        Domain | OptimizationBarrier => {
            infer_unary(op, operands[0])
        }
        Convert => {
            infer_convert(operands[0], declared_array("the target element type")?.element_type)
        }
        BitcastConvert => {
            infer_bitcast_convert(operands[0], declared_array("the target element type")?.element_type)
        }
        StochasticConvert => {
            infer_stochastic_convert(operands[0], operands[1], declared_array("the target element type")?.element_type)
        }
        ReducePrecision => {
            let e = *required(op, attrs.exponent_bits.as_ref(), "exponent_bits")?;
            let m = *required(op, attrs.mantissa_bits.as_ref(), "mantissa_bits")?;
            infer_reduce_precision(operands[0], e, m)
        }
        Compare => {
            required(op, attrs.direction.as_ref(), "direction")?;
            let shape = infer_binary(op, operands[0], operands[1])?;
            if let (Some(t), Some(element)) = (attrs.comparison_type, operands[0].element_type()) {
                check_comparison_type(element, t)?;
            }
            Ok(shape)
        }
        _ if op.is_elementwise_binary() && op != StochasticConvert => {
            infer_binary(op, operands[0], operands[1])
        }
        Select => {
            infer_select(operands[0], operands[1], operands[2])
        }
        Clamp => {
            infer_clamp(operands[0], operands[1], operands[2])
        }

        Broadcast => {
            let dims = required(op, attrs.dimensions.as_ref(), "dimensions")?;
            infer_broadcast(operands[0], &declared_array("the output dimensions")?.dims, dims)
        }
        Reshape => {
            infer_reshape(operands[0], &declared_array("the output dimensions")?.dims)
        }
        DynamicReshape => {
            let out = declared_array("the output bounds")?;
            infer_dynamic_reshape(operands[0], &operands[1..], &out.dims, &out.dynamic)
        }
        Transpose => {
            infer_transpose(operands[0], required(op, attrs.dimensions.as_ref(), "dimensions")?)
        }
        Slice => {
            infer_slice(operands[0], required(op, attrs.slice.as_ref(), "slice")?)
        }
        Concatenate => {
            infer_concatenate(operands, single_dimension(op, attrs.dimensions.as_ref())?)
        }
        Pad => {
            infer_pad(operands[0], operands[1], required(op, attrs.padding.as_ref(), "padding")?)
        }
        Reverse => {
            infer_reverse(operands[0], required(op, attrs.dimensions.as_ref(), "dimensions")?)
        }
        Iota => {
            let dim = *required(op, attrs.iota_dimension.as_ref(), "iota_dimension")?;
            infer_iota(need_declared(op, declared, "iota's shape")?, dim)
        }
        DynamicSlice => {
            let sizes = required(op, attrs.slice_sizes.as_ref(), "dynamic_slice_sizes")?;
            infer_dynamic_slice(operands[0], &operands[1..], sizes)
        }
        DynamicUpdateSlice => {
            infer_dynamic_update_slice(operands[0], operands[1], &operands[2..])
        }

        Reduce => {
            let dims = required(op, attrs.dimensions.as_ref(), "dimensions")?;
            infer_reduce(operands, dims, called[0])
        }
        ReduceWindow => {
            let window = window_or_scalar(op, attrs.window.as_ref(), operands.first().copied())?;
            infer_reduce_window(operands, window, called[0])
        }
        SelectAndScatter => {
            let window = window_or_scalar(op, attrs.window.as_ref(), operands.first().copied())?;
            infer_select_and_scatter(operands[0], operands[1], operands[2], window, called[0], called[1])
        }

        Dot => {
            let dnums = attrs.dot_dims.clone().unwrap_or_default();
            infer_dot(operands[0], operands[1], &dnums, preferred)
        }
        Convolution => {
            let dnums = required(op, attrs.conv_dims.as_ref(), "dim_labels")?;
            let no_window = Vec::new();
            let window = match &attrs.window {
                Some(w) => w,
                None if dnums.input_spatial.is_empty() => &no_window,
                None => fail!(op, "missing required attribute window"),
            };
            infer_convolution(
                operands[0],
                operands[1],
                window,
                dnums,
                attrs.feature_group_count.unwrap_or(1),
                attrs.batch_group_count.unwrap_or(1),
                preferred,
            )
        }

        Gather => {
            let dnums = required(op, attrs.gather_dims.as_ref(), "gather dimension numbers")?;
            let sizes = required(op, attrs.slice_sizes.as_ref(), "slice_sizes")?;
            infer_gather(operands[0], operands[1], dnums, sizes)
        }
        Scatter => {
            let dnums = required(op, attrs.scatter_dims.as_ref(), "scatter dimension numbers")?;
            infer_scatter(operands, dnums, called[0])
        }

        Parameter => {
            let n = *required(op, attrs.parameter_number.as_ref(), "parameter number")?;
            if n < 0 {
                fail!(op, "parameter number {n} is negative");
            }
            Ok(need_declared(op, declared, "a parameter's shape")?.without_layouts())
        }
        Constant => {
            match &attrs.literal {
                Some(literal) => Ok(infer_constant(&literal.shape())),
                // XLA prints large constants as `{...}`: the values (and so the shape) are not
                // in the text, only the declared shape is.
                None => Ok(need_declared(op, declared, "the literal is missing")?.without_layouts()),
            }
        }
        Tuple => Ok(infer_tuple(operands)),
        GetTupleElement => {
            infer_get_tuple_element(operands[0], *required(op, attrs.tuple_index.as_ref(), "index")?)
        }
        Call => infer_call(operands, called[0]),
        Fusion => {
            required(op, attrs.fusion_kind.as_ref(), "kind")?;
            infer_fusion(operands, called[0])
        }
        While => {
            infer_while(operands[0], called[0], called[1])
        }
        Conditional => {
            infer_conditional(operands[0], &operands[1..], called)
        }
        Map => infer_map(operands, attrs.dimensions.as_deref(), called[0]),
        Sort => infer_sort(operands, single_dimension(op, attrs.dimensions.as_ref())?, called[0]),
        CustomCall => {
            required(op, attrs.custom_call_target.as_ref(), "custom_call_target")?;
            let result = need_declared(op, declared, "a custom call's result")?;
            infer_custom_call(operands, attrs.operand_layout_constraints.as_deref(), result)
        }
        AfterAll => infer_after_all(operands),
        AddDependency => {
            infer_add_dependency(operands[0], operands[1])
        }
        Bitcast => {
            infer_bitcast(operands[0], need_declared(op, declared, "a bitcast's result")?)
        }
        CopyStart => {
            Ok(infer_copy_start(operands[0]))
        }
        CopyDone => {
            infer_copy_done(operands[0])
        }
        Send => {
            infer_send(operands[0], operands[1])
        }
        SendDone => {
            Ok(Shape::Token)
        }
        Recv => {
            infer_recv(operands[0], need_declared(op, declared, "the received value's shape")?)
        }
        RecvDone => {
            infer_recv_done(operands[0])
        }
        Infeed => {
            infer_infeed(operands[0], need_declared(op, declared, "the infed value's shape")?)
        }
        Outfeed => {
            infer_outfeed(operands[1])
        }
        AsyncStart => infer_async_start(operands, called[0], need_declared(op, declared, "the async context")?),
        AsyncUpdate => {
            infer_async_update(operands[0])
        }
        AsyncDone => {
            infer_async_done(operands[0])
        }

        Rng => {
            let distribution = *required(op, attrs.distribution.as_ref(), "distribution")?;
            infer_rng(operands[0], operands[1], distribution, need_declared(op, declared, "the random array's shape")?)
        }
        RngBitGenerator => {
            infer_rng_bit_generator(operands[0], need_declared(op, declared, "the generated bits' shape")?)
        }
        RngGetAndUpdateState => {
            required(op, attrs.rng_delta.as_ref(), "delta")?;
            Ok(infer_rng_get_and_update_state())
        }
        Fft => {
            let t = *required(op, attrs.fft_type.as_ref(), "fft_type")?;
            infer_fft(operands[0], t, required(op, attrs.fft_length.as_ref(), "fft_length")?)
        }
        Cholesky => {
            infer_cholesky(operands[0])
        }
        TriangularSolve => {
            infer_triangular_solve(operands[0], operands[1], attrs.left_side.unwrap_or(false))
        }
        BatchNormTraining => {
            required(op, attrs.epsilon.as_ref(), "epsilon")?;
            let f = *required(op, attrs.feature_index.as_ref(), "feature_index")?;
            infer_batch_norm_training(operands[0], operands[1], operands[2], f)
        }
        BatchNormInference => {
            required(op, attrs.epsilon.as_ref(), "epsilon")?;
            let f = *required(op, attrs.feature_index.as_ref(), "feature_index")?;
            infer_batch_norm_inference(operands[0], operands[1], operands[2], operands[3], operands[4], f)
        }
        BatchNormGrad => {
            required(op, attrs.epsilon.as_ref(), "epsilon")?;
            let f = *required(op, attrs.feature_index.as_ref(), "feature_index")?;
            infer_batch_norm_grad(operands[0], operands[1], operands[2], operands[3], operands[4], f)
        }
        TopK => {
            infer_topk(operands[0], *required(op, attrs.k.as_ref(), "k")?)
        }
        GetDimensionSize => {
            infer_get_dimension_size(operands[0], single_dimension(op, attrs.dimensions.as_ref())?)
        }
        SetDimensionSize => {
            infer_set_dimension_size(operands[0], operands[1], single_dimension(op, attrs.dimensions.as_ref())?)
        }

        AllReduce | AllReduceStart => {
            let groups = attrs.replica_groups.as_deref().unwrap_or(&[]);
            check_replica_groups(op, groups, false)?;
            infer_all_reduce(operands, called[0]).map_err(|e| e.replacen(AllReduce.name(), op.name(), 1))
        }
        AllReduceDone => {
            Ok(operands[0].without_layouts())
        }
        AllGather | AllGatherStart => {
            let dim = single_dimension(op, attrs.dimensions.as_ref())?;
            let groups = attrs.replica_groups.as_deref().unwrap_or(&[]);
            let shard_count = match check_replica_groups(op, groups, true)? {
                Some(n) => n,
                None => {
                    let out = need_declared(op, declared, "no replica_groups give the shard count")?;
                    let out = if op == AllGatherStart {
                        out.tuple_elements().and_then(|e| e.get(1)).unwrap_or(out)
                    } else {
                        out
                    };
                    let input = operands.first().copied().unwrap_or(out);
                    shard_count_from_shapes(input, out, dim).unwrap_or(1)
                }
            };
            if op == AllGather {
                infer_all_gather(operands, dim, shard_count)
            } else {
                infer_all_gather_start(operands, dim, shard_count)
            }
        }
        AllGatherDone | CollectivePermuteDone => {
            infer_collective_done(op, operands[0])
        }
        ReduceScatter => {
            let dim = single_dimension(op, attrs.dimensions.as_ref())?;
            let groups = attrs.replica_groups.as_deref().unwrap_or(&[]);
            let shard_count = match check_replica_groups(op, groups, true)? {
                Some(n) => n,
                None => {
                    let out = need_declared(op, declared, "no replica_groups give the shard count")?;
                    let input = operands.first().copied().unwrap_or(out);
                    shard_count_from_shapes(out, input, dim).unwrap_or(1)
                }
            };
            infer_reduce_scatter(operands, dim, shard_count, called[0])
        }
        AllToAll => {
            let groups = attrs.replica_groups.as_deref().unwrap_or(&[]);
            let split_count = check_replica_groups(op, groups, true)?;
            let dim = match &attrs.dimensions {
                Some(_) => Some(single_dimension(op, attrs.dimensions.as_ref())?),
                None => None,
            };
            infer_all_to_all(operands, dim, split_count)
        }
        RaggedAllToAll => {
            check_replica_groups(op, attrs.replica_groups.as_deref().unwrap_or(&[]), true)?;
            infer_ragged_all_to_all(operands)
        }
        CollectivePermute | CollectivePermuteStart => {
            check_source_target_pairs(op, required(op, attrs.source_target_pairs.as_ref(), "source_target_pairs")?)?;
            let in_place = is_in_place_permute(operands, attrs.raw("slice_sizes").is_some());
            if op == CollectivePermute {
                infer_collective_permute(operands, in_place)
            } else {
                infer_collective_permute_start(operands, declared, in_place)
            }
        }
        CollectiveBroadcast => {
            check_replica_groups(op, attrs.replica_groups.as_deref().unwrap_or(&[]), true)?;
            infer_collective_broadcast(operands)
        }
        PartitionId | ReplicaId => {
            Ok(infer_device_id())
        }
        _ => fail!(op, "no shape inference rule"),
    }
}
