//! One instruction as `xla.HloInstructionProto`: hlojit's typed attributes under the fields
//! XLA's `HloInstruction::CreateFromProto` reads for the opcode.

use super::messages::*;
use super::raw;
use super::shape::{literal, shape};
use hlojit::hlo::attributes::{BackendConfig, CustomCallApiVersion, FftType, RngAlgorithm, RngDistribution, Transpose};
use hlojit::hlo::{Instruction, Opcode};

/// Ids the proto refers to: instruction `i` of computation `c` and computation `c` itself.
/// XLA writes instruction ids as (computation id << 32) | index and reads them back the same
/// way, so ids stay unique across the module.
pub fn instruction_id(computation: usize, index: usize) -> i64 {
    ((computation as i64) << 32) | index as i64
}

/// Instruction `index` of computation `computation` (proto ids are hlojit's indices);
/// `operand_shapes` are its operands' shapes.
pub fn instruction(inst: &Instruction, computation: usize, index: usize, operand_shapes: &[hlojit::Shape]) -> HloInstructionProto {
    let a = &inst.attrs;
    let mut p = HloInstructionProto {
        name: inst.name.clone(),
        opcode: inst.opcode.name().to_string(),
        shape: Some(shape(&inst.shape)),
        id: instruction_id(computation, index),
        operand_ids: inst.operands.iter().map(|o| instruction_id(computation, o.index())).collect(),
        control_predecessor_ids: inst.control_predecessors.iter().map(|o| instruction_id(computation, o.index())).collect(),
        called_computation_ids: called_in_xla_order(inst).into_iter().map(|c| c as i64).collect(),
        ..HloInstructionProto::default()
    };
    if let Some(n) = a.parameter_number {
        p.parameter_number = n;
    }
    if let Some(l) = &a.literal {
        p.literal = Some(literal(l, &inst.shape));
    }
    if let Some(i) = a.tuple_index {
        p.tuple_index = i;
    }
    // XLA keeps single-dimension attributes of several opcodes in `dimensions`.
    if let Some(d) = a.iota_dimension {
        p.dimensions = vec![d];
    }
    if let Some(d) = &a.dimensions {
        p.dimensions = d.clone();
    }
    if let Some(slice) = &a.slice {
        p.slice_dimensions = slice.iter().map(|d| SliceDimensions { start: d.start, limit: d.limit, stride: d.stride }).collect();
    }
    if let Some(pad) = &a.padding {
        p.padding_config = Some(PaddingConfig {
            dimensions: pad
                .iter()
                .map(|d| PaddingConfigDimension { edge_padding_low: d.low, edge_padding_high: d.high, interior_padding: d.interior })
                .collect(),
        });
    }
    if let Some(w) = &a.window {
        p.window = Some(Window {
            dimensions: w
                .iter()
                .map(|d| WindowDimension {
                    size: d.size,
                    stride: d.stride,
                    padding_low: d.padding_low,
                    padding_high: d.padding_high,
                    window_dilation: d.window_dilation,
                    base_dilation: d.base_dilation,
                    window_reversal: d.window_reversal,
                })
                .collect(),
        });
    }
    if let Some(c) = &a.conv_dims {
        p.convolution_dimension_numbers = Some(ConvolutionDimensionNumbers {
            input_batch_dimension: c.input_batch,
            input_feature_dimension: c.input_feature,
            input_spatial_dimensions: c.input_spatial.clone(),
            kernel_input_feature_dimension: c.kernel_input_feature,
            kernel_output_feature_dimension: c.kernel_output_feature,
            kernel_spatial_dimensions: c.kernel_spatial.clone(),
            output_batch_dimension: c.output_batch,
            output_feature_dimension: c.output_feature,
            output_spatial_dimensions: c.output_spatial.clone(),
        });
    }
    if inst.opcode == Opcode::Convolution {
        // Absent means 1 in hlojit's IR; the proto's 0 would be an invalid count.
        p.feature_group_count = a.feature_group_count.unwrap_or(1);
        p.batch_group_count = a.batch_group_count.unwrap_or(1);
    }
    if let Some(d) = &a.dot_dims {
        p.dot_dimension_numbers = Some(DotDimensionNumbers {
            lhs_contracting_dimensions: d.lhs_contracting.clone(),
            rhs_contracting_dimensions: d.rhs_contracting.clone(),
            lhs_batch_dimensions: d.lhs_batch.clone(),
            rhs_batch_dimensions: d.rhs_batch.clone(),
        });
    }
    if let Some(precision) = &a.operand_precision {
        let level = |s: &String| match s.to_ascii_lowercase().as_str() {
            "high" => 1,
            "highest" => 2,
            _ => 0,
        };
        p.precision_config = Some(PrecisionConfig { operand_precision: precision.iter().map(level).collect() });
    }
    if let Some(g) = &a.gather_dims {
        p.gather_dimension_numbers = Some(GatherDimensionNumbers {
            offset_dims: g.offset_dims.clone(),
            collapsed_slice_dims: g.collapsed_slice_dims.clone(),
            start_index_map: g.start_index_map.clone(),
            index_vector_dim: g.index_vector_dim,
            operand_batching_dims: g.operand_batching_dims.clone(),
            start_indices_batching_dims: g.start_indices_batching_dims.clone(),
        });
    }
    if let Some(s) = &a.scatter_dims {
        p.scatter_dimension_numbers = Some(ScatterDimensionNumbers {
            update_window_dims: s.update_window_dims.clone(),
            inserted_window_dims: s.inserted_window_dims.clone(),
            scatter_dims_to_operand_dims: s.scatter_dims_to_operand_dims.clone(),
            index_vector_dim: s.index_vector_dim,
            input_batching_dims: s.input_batching_dims.clone(),
            scatter_indices_batching_dims: s.scatter_indices_batching_dims.clone(),
        });
    }
    if let Some(sizes) = &a.slice_sizes {
        if inst.opcode == Opcode::DynamicSlice {
            p.dynamic_slice_sizes = sizes.clone();
        } else {
            p.gather_slice_sizes = sizes.clone();
        }
    }
    p.indices_are_sorted = a.indices_are_sorted;
    p.unique_indices = a.unique_indices;
    if let Some(d) = a.direction {
        p.comparison_direction = d.name().to_string();
    }
    if let Some(t) = a.comparison_type {
        p.comparison_type = t.name().to_string();
    }
    if let Some(n) = a.exponent_bits {
        p.exponent_bits = n as i32;
    }
    if let Some(n) = a.mantissa_bits {
        p.mantissa_bits = n as i32;
    }
    if let Some(kind) = a.fusion_kind {
        p.fusion_kind = kind.name().to_string();
    }
    if let Some(d) = a.distribution {
        p.distribution = match d {
            RngDistribution::Uniform => 1,
            RngDistribution::Normal => 2,
        };
    }
    if let Some(alg) = a.rng_algorithm {
        p.rng_algorithm = match alg {
            RngAlgorithm::Default => 0,
            RngAlgorithm::ThreeFry => 1,
            RngAlgorithm::Philox => 2,
        };
    }
    if let Some(t) = a.fft_type {
        p.fft_type = match t {
            FftType::Fft => 0,
            FftType::Ifft => 1,
            FftType::Rfft => 2,
            FftType::Irfft => 3,
        };
    }
    if let Some(len) = &a.fft_length {
        p.fft_length = len.clone();
    }
    p.is_stable = a.is_stable;
    if let Some(k) = a.k {
        p.k = k;
    }
    if inst.opcode == Opcode::TopK {
        // XLA's default for an absent `largest` is true.
        p.largest = a.largest.unwrap_or(true);
    }
    if let Some(delta) = a.rng_delta {
        p.delta = delta;
    }
    custom_call(inst, &mut p);
    if let Some(pairs) = &a.output_to_operand_aliasing {
        p.output_operand_aliasing = pairs
            .iter()
            .map(|x| OutputOperandAliasing { output_shape_index: x.output.clone(), operand_index: x.operand as i64, operand_shape_index: x.operand_index.clone() })
            .collect();
    }
    if inst.opcode == Opcode::TriangularSolve {
        p.triangular_solve_options = Some(TriangularSolveOptions {
            left_side: a.left_side.unwrap_or(false),
            lower: a.lower.unwrap_or(false),
            unit_diagonal: a.unit_diagonal.unwrap_or(false),
            transpose_a: match a.transpose_a.unwrap_or(Transpose::NoTranspose) {
                Transpose::NoTranspose => 1,
                Transpose::Transpose => 2,
                Transpose::Adjoint => 3,
            },
        });
    }
    if inst.opcode == Opcode::Cholesky {
        p.cholesky_options = Some(CholeskyOptions { lower: a.lower.unwrap_or(false) });
    }
    if let Some(e) = a.epsilon {
        p.epsilon = e;
    }
    if let Some(i) = a.feature_index {
        p.feature_index = i;
    }
    if let Some(groups) = &a.replica_groups {
        p.replica_groups = groups.iter().map(|g| ReplicaGroup { replica_ids: g.clone() }).collect();
    }
    if let Some(id) = a.channel_id {
        p.channel_id = id;
    }
    p.use_global_device_ids = a.use_global_device_ids;
    if let Some(pairs) = &a.source_target_pairs {
        p.source_target_pairs = pairs.iter().map(|&(source, target)| SourceTarget { source, target }).collect();
    }
    if inst.opcode == Opcode::Outfeed {
        // XLA checks the outfeed shape against the data operand's.
        p.outfeed_shape = operand_shapes.first().map(shape);
    }
    p.is_host_transfer = a.raw("is_host_transfer") == Some("true");
    p.metadata = a.raw("metadata").and_then(raw::metadata);
    p.frontend_attributes = a.raw("frontend_attributes").map(|f| FrontendAttributes { map: raw::frontend_attributes(f) });
    // XLA insists a composite call carries its frontend attributes; without them it is an
    // ordinary call.
    p.is_composite = a.is_composite && p.frontend_attributes.is_some();
    p
}

fn custom_call(inst: &Instruction, p: &mut HloInstructionProto) {
    let a = &inst.attrs;
    if inst.opcode != Opcode::CustomCall {
        return;
    }
    p.custom_call_target = a.custom_call_target.clone().unwrap_or_default();
    p.custom_call_has_side_effect = a.custom_call_has_side_effect;
    p.custom_call_api_version = match a.api_version.unwrap_or(CustomCallApiVersion::Original) {
        CustomCallApiVersion::Original => 1,
        CustomCallApiVersion::StatusReturning => 2,
        CustomCallApiVersion::StatusReturningUnified => 3,
        CustomCallApiVersion::TypedFfi => 4,
    };
    if let Some(config) = &a.backend_config {
        p.backend_config = match config {
            BackendConfig::Quoted(s) | BackendConfig::Braced(s) => s.clone().into_bytes(),
        };
    }
    if let Some(shapes) = &a.operand_layout_constraints {
        p.constrain_layout = true;
        p.operand_shapes_with_layout = shapes.iter().map(shape).collect();
    }
}

/// hlojit's called computations in the order XLA keeps them: a while loop is
/// `[condition, body]` in hlojit and `[body, condition]` in XLA; every other opcode agrees.
pub fn called_in_xla_order(inst: &Instruction) -> Vec<usize> {
    let mut called: Vec<usize> = inst.called.iter().map(|c| c.index()).collect();
    if inst.opcode == Opcode::While && called.len() == 2 {
        called.swap(0, 1);
    }
    called
}
