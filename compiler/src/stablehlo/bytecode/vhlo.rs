//! VHLO ops to the StableHLO form the text parser produces, so conversion to HLO is shared:
//! `vhlo.add_v1` is `stablehlo.add`, `vhlo.func_v1` `func.func`, and attributes VHLO keeps
//! flat (gather, scatter, convolution and dot dimension numbers) are regrouped into the
//! `#stablehlo.*` structs the converter reads. Properties arrive sorted by attribute name
//! (ODS's order; the table below lists them as declared); every VHLO op of StableHLO 1.20.0 is known by name, so an op the
//! converter does not handle is reported by its name.

use crate::stablehlo::ir::{Attr, Op};
use std::collections::BTreeMap;

/// The newest StableHLO version whose portable artifacts are read.
pub const NEWEST: (u32, u32, u32) = (1, 20, 0);

/// `StableHLO_v1.15.0` (the producer string of a portable artifact) as (1, 15, 0).
pub fn producer_version(producer: &str) -> Option<(u32, u32, u32)> {
    let v = producer.strip_prefix("StableHLO_v")?;
    let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
    let out = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(out)
}

pub fn to_stablehlo(op: &mut Op, props: Vec<Option<Attr>>) -> Result<(), String> {
    if op.name == "builtin.module" {
        for (name, value) in ["sym_name", "sym_visibility"].iter().zip(props) {
            if let Some(v) = value {
                op.attrs.insert(name.to_string(), v);
            }
        }
        return Ok(());
    }
    if op.name == "sdy.mesh" {
        // JAX names a Shardy mesh in every module whose arrays are committed to devices, also
        // in portable artifacts: its name and axes, which the converter checks against the
        // module's partitions (convert/manual.rs).
        for attr in props.into_iter().flatten() {
            match attr {
                Attr::String(name) => {
                    op.attrs.insert("sym_name".into(), Attr::String(name));
                }
                Attr::Opaque(text) if text.starts_with("#sdy.mesh") => {
                    op.attrs.insert("mesh".into(), Attr::Opaque(text));
                }
                _ => {}
            }
        }
        return Ok(());
    }
    if op.name == "builtin.unrealized_conversion_cast" || op.name.starts_with("sdy.") {
        // Ops of other dialects that StableHLO's serializer leaves in the artifact (see
        // `pass_through` in the converter); their properties keep their positions.
        for (i, value) in props.into_iter().enumerate() {
            if let Some(v) = value {
                op.attrs.insert(format!("property{i}"), v);
            }
        }
        return Ok(());
    }
    let Some(short) = op.name.strip_prefix("vhlo.") else {
        return Err(format!("op '{}' is not VHLO (a portable artifact holds VHLO ops only)", op.name));
    };
    let Some((_, first, _, names)) = OPS.iter().find(|o| o.0 == short) else {
        return Err(format!(
            "unknown VHLO op '{}' (StableHLO up to {}.{}.{} is read; the artifact may come from a newer one)",
            op.name, NEWEST.0, NEWEST.1, NEWEST.2
        ));
    };
    let _ = first;
    if !props.is_empty() {
        if props.len() != names.len() {
            return Err(format!("{}: {} properties, the op has {} attributes", op.name, props.len(), names.len()));
        }
        // ODS keeps inherent attributes in properties sorted by name.
        let mut sorted: Vec<&str> = names.to_vec();
        sorted.sort_unstable();
        for (name, value) in sorted.iter().zip(props) {
            if let Some(v) = value {
                op.attrs.insert(name.to_string(), v);
            }
        }
    }
    let base = short.rsplit_once("_v").map_or(short, |(b, _)| b).to_string();
    op.name = match base.as_str() {
        "func" => "func.func".into(),
        "call" => "func.call".into(),
        "return" => "stablehlo.return".into(),
        _ => format!("stablehlo.{base}"),
    };
    let group = |op: &mut Op, into: &str, name: &str, fields: &[&str]| {
        let mut f = BTreeMap::new();
        for k in fields {
            if let Some(v) = op.attrs.remove(*k) {
                f.insert(k.to_string(), v);
            }
        }
        op.attrs.insert(into.to_string(), Attr::Dialect { name: name.to_string(), fields: f });
    };
    match base.as_str() {
        "dot_general" => group(
            op,
            "dot_dimension_numbers",
            "dot",
            &["lhs_batching_dimensions", "rhs_batching_dimensions", "lhs_contracting_dimensions", "rhs_contracting_dimensions"],
        ),
        "gather" | "dynamic_gather" => group(
            op,
            "dimension_numbers",
            "gather",
            &["offset_dims", "collapsed_slice_dims", "operand_batching_dims", "start_indices_batching_dims", "start_index_map", "index_vector_dim"],
        ),
        "scatter" => group(
            op,
            "scatter_dimension_numbers",
            "scatter",
            &[
                "update_window_dims",
                "inserted_window_dims",
                "input_batching_dims",
                "scatter_indices_batching_dims",
                "scatter_dims_to_operand_dims",
                "index_vector_dim",
            ],
        ),
        "convolution" | "dynamic_conv" => group(
            op,
            "dimension_numbers",
            "conv",
            &[
                "input_batch_dimension",
                "input_feature_dimension",
                "input_spatial_dimensions",
                "kernel_input_feature_dimension",
                "kernel_output_feature_dimension",
                "kernel_spatial_dimensions",
                "output_batch_dimension",
                "output_feature_dimension",
                "output_spatial_dimensions",
            ],
        ),
        "call" => {
            if let Some(Attr::String(s)) = op.attrs.remove("callee") {
                op.attrs.insert("callee".into(), Attr::Symbol(s));
            }
        }
        _ => {}
    }
    Ok(())
}

// Generated from stablehlo/dialect/VhloOps.td (StableHLO 1.20.0): op, first version,
// last version, inherent attributes in declaration order.
pub const OPS: &[(&str, &str, &str, &[&str])] = &[
    ("abs_v1", "0.9.0", "current", &[]),
    ("add_v1", "0.9.0", "current", &[]),
    ("after_all_v1", "0.9.0", "current", &[]),
    ("all_gather_v1", "0.9.0", "1.4.0", &["all_gather_dim", "replica_groups", "channel_id", "use_global_device_ids"]),
    ("all_gather_v2", "1.5.0", "current", &["all_gather_dim", "replica_groups", "channel_id", "use_global_device_ids"]),
    ("all_reduce_v1", "0.9.0", "1.4.0", &["replica_groups", "channel_id", "use_global_device_ids"]),
    ("all_reduce_v2", "1.5.0", "current", &["replica_groups", "channel_id", "use_global_device_ids"]),
    ("all_to_all_v1", "0.9.0", "1.4.0", &["split_dimension", "concat_dimension", "split_count", "replica_groups", "channel_id"]),
    ("all_to_all_v2", "1.5.0", "current", &["split_dimension", "concat_dimension", "split_count", "replica_groups", "channel_id"]),
    ("and_v1", "0.9.0", "current", &[]),
    ("async_start_v1", "1.15.0", "current", &[]),
    ("async_done_v1", "1.15.0", "current", &[]),
    ("atan2_v1", "0.9.0", "current", &[]),
    ("batch_norm_grad_v1", "0.9.0", "current", &["epsilon", "feature_index"]),
    ("batch_norm_inference_v1", "0.9.0", "current", &["epsilon", "feature_index"]),
    ("batch_norm_training_v1", "0.9.0", "current", &["epsilon", "feature_index"]),
    ("bitcast_convert_v1", "0.9.0", "current", &[]),
    ("broadcast_in_dim_v1", "0.9.0", "current", &["broadcast_dimensions"]),
    ("broadcast_v1", "0.9.0", "current", &["broadcast_sizes"]),
    ("call_v1", "0.9.0", "current", &["callee"]),
    ("case_v1", "0.9.0", "current", &[]),
    ("cbrt_v1", "0.9.0", "1.9.0", &[]),
    ("cbrt_v2", "1.10.0", "current", &["result_accuracy"]),
    ("ceil_v1", "0.9.0", "current", &[]),
    ("cholesky_v1", "0.9.0", "current", &["lower"]),
    ("clamp_v1", "0.9.0", "current", &[]),
    ("count_leading_zeros_v1", "0.9.0", "current", &[]),
    ("collective_broadcast_v1", "0.16.0", "1.19.0", &["replica_groups", "channel_id"]),
    ("collective_broadcast_v2", "1.20.0", "current", &["replica_groups", "channel_id", "has_dynamic_root"]),
    ("collective_reduce_v1", "1.19.0", "current", &["replica_groups", "channel_id", "use_global_device_ids", "has_dynamic_root"]),
    ("collective_permute_v1", "0.9.0", "current", &["source_target_pairs", "channel_id"]),
    ("compare_v1", "0.9.0", "current", &["comparison_direction", "compare_type"]),
    ("complex_v1", "0.9.0", "current", &[]),
    ("composite_v1", "0.19.0", "1.13.0", &["name", "composite_attributes", "decomposition", "version"]),
    ("composite_v2", "1.14.0", "current", &["name", "composite_attributes", "decomposition", "version"]),
    ("concatenate_v1", "0.9.0", "current", &["dimension"]),
    ("constant_v1", "0.9.0", "current", &["value"]),
    ("convert_v1", "0.9.0", "current", &[]),
    ("convolution_v1", "0.9.0", "current", &["window_strides", "padding", "lhs_dilation", "rhs_dilation", "window_reversal", "input_batch_dimension", "input_feature_dimension", "input_spatial_dimensions", "kernel_input_feature_dimension", "kernel_output_feature_dimension", "kernel_spatial_dimensions", "output_batch_dimension", "output_feature_dimension", "output_spatial_dimensions", "feature_group_count", "batch_group_count", "precision_config"]),
    ("cosine_v1", "0.9.0", "1.9.0", &[]),
    ("cosine_v2", "1.10.0", "current", &["result_accuracy"]),
    ("create_token_v1", "0.9.0", "current", &[]),
    ("custom_call_v1", "0.9.0", "1.17.0", &["call_target_name", "has_side_effect", "backend_config", "api_version", "called_computations", "operand_layouts", "result_layouts", "output_operand_aliases"]),
    ("custom_call_v2", "1.18.0", "current", &["call_target_name", "has_side_effect", "backend_config", "api_version", "called_computations", "operand_layouts", "result_layouts", "output_operand_aliases", "result_tilings"]),
    ("divide_v1", "0.9.0", "current", &[]),
    ("dot_general_v1", "0.9.0", "1.5.0", &["lhs_batching_dimensions", "rhs_batching_dimensions", "lhs_contracting_dimensions", "rhs_contracting_dimensions", "precision_config"]),
    ("dot_general_v2", "1.6.0", "current", &["lhs_batching_dimensions", "rhs_batching_dimensions", "lhs_contracting_dimensions", "rhs_contracting_dimensions", "precision_config", "lhs_precision_type", "rhs_precision_type", "accumulation_type", "lhs_component_count", "rhs_component_count", "num_primitive_operations", "allow_imprecise_accumulation"]),
    ("dot_v1", "0.9.0", "current", &[]),
    ("dynamic_broadcast_in_dim_v1", "0.9.0", "current", &["broadcast_dimensions", "known_expanding_dimensions", "known_nonexpanding_dimensions"]),
    ("dynamic_conv_v1", "0.9.0", "0.19.0", &["window_strides", "padding", "lhs_dilation", "rhs_dilation", "window_reversal", "input_batch_dimension", "input_feature_dimension", "input_spatial_dimensions", "kernel_input_feature_dimension", "kernel_output_feature_dimension", "kernel_spatial_dimensions", "output_batch_dimension", "output_feature_dimension", "output_spatial_dimensions", "feature_group_count", "batch_group_count", "precision_config"]),
    ("dynamic_conv_v2", "0.20.0", "current", &["window_strides", "lhs_dilation", "rhs_dilation", "window_reversal", "input_batch_dimension", "input_feature_dimension", "input_spatial_dimensions", "kernel_input_feature_dimension", "kernel_output_feature_dimension", "kernel_spatial_dimensions", "output_batch_dimension", "output_feature_dimension", "output_spatial_dimensions", "feature_group_count", "batch_group_count", "precision_config"]),
    ("dynamic_gather_v1", "0.9.0", "1.0.0", &["offset_dims", "collapsed_slice_dims", "start_index_map", "index_vector_dim", "indices_are_sorted"]),
    ("dynamic_gather_v2", "1.1.0", "current", &["offset_dims", "collapsed_slice_dims", "operand_batching_dims", "start_indices_batching_dims", "start_index_map", "index_vector_dim", "indices_are_sorted"]),
    ("dynamic_iota_v1", "0.9.0", "current", &["iota_dimension"]),
    ("dynamic_pad_v1", "0.9.0", "current", &[]),
    ("dynamic_reshape_v1", "0.9.0", "current", &[]),
    ("dynamic_slice_v1", "0.9.0", "current", &["slice_sizes"]),
    ("dynamic_update_slice_v1", "0.9.0", "current", &[]),
    ("einsum_v1", "0.9.0", "current", &["einsum_config"]),
    ("exponential_minus_one_v1", "0.9.0", "1.9.0", &[]),
    ("exponential_minus_one_v2", "1.10.0", "current", &["result_accuracy"]),
    ("exponential_v1", "0.9.0", "1.8.0", &[]),
    ("exponential_v2", "1.9.0", "current", &["result_accuracy"]),
    ("fft_v1", "0.9.0", "current", &["fft_type", "fft_length"]),
    ("floor_v1", "0.9.0", "current", &[]),
    ("func_v1", "0.9.0", "current", &["sym_name", "function_type", "sym_visibility", "arg_attrs", "res_attrs"]),
    ("gather_v1", "0.9.0", "1.0.0", &["offset_dims", "collapsed_slice_dims", "start_index_map", "index_vector_dim", "slice_sizes", "indices_are_sorted"]),
    ("gather_v2", "1.1.0", "current", &["offset_dims", "collapsed_slice_dims", "operand_batching_dims", "start_indices_batching_dims", "start_index_map", "index_vector_dim", "slice_sizes", "indices_are_sorted"]),
    ("get_dimension_size_v1", "0.9.0", "current", &["dimension"]),
    ("get_tuple_element_v1", "0.9.0", "current", &["index"]),
    ("if_v1", "0.9.0", "current", &[]),
    ("imag_v1", "0.9.0", "current", &[]),
    ("infeed_v1", "0.9.0", "current", &["infeed_config", "layout"]),
    ("iota_v1", "0.9.0", "current", &["iota_dimension"]),
    ("is_finite_v1", "0.9.0", "current", &[]),
    ("log_plus_one_v1", "0.9.0", "1.9.0", &[]),
    ("log_plus_one_v2", "1.10.0", "current", &["result_accuracy"]),
    ("logistic_v1", "0.9.0", "1.9.0", &[]),
    ("logistic_v2", "1.10.0", "current", &["result_accuracy"]),
    ("log_v1", "0.9.0", "1.9.0", &[]),
    ("log_v2", "1.10.0", "current", &["result_accuracy"]),
    ("map_v1", "0.9.0", "current", &["dimensions"]),
    ("maximum_v1", "0.9.0", "current", &[]),
    ("minimum_v1", "0.9.0", "current", &[]),
    ("multiply_v1", "0.9.0", "current", &[]),
    ("negate_v1", "0.9.0", "current", &[]),
    ("not_v1", "0.9.0", "current", &[]),
    ("optimization_barrier_v1", "0.9.0", "current", &[]),
    ("or_v1", "0.9.0", "current", &[]),
    ("outfeed_v1", "0.9.0", "current", &["outfeed_config"]),
    ("pad_v1", "0.9.0", "current", &["edge_padding_low", "edge_padding_high", "interior_padding"]),
    ("partition_id_v1", "0.9.0", "current", &[]),
    ("popcnt_v1", "0.9.0", "current", &[]),
    ("power_v1", "0.9.0", "current", &[]),
    ("real_dynamic_slice_v1", "0.9.0", "current", &[]),
    ("real_v1", "0.9.0", "current", &[]),
    ("recv_v1", "0.9.0", "1.11.0", &["channel_id", "channel_type", "is_host_transfer"]),
    ("recv_v2", "1.12.0", "current", &["channel_id", "channel_type", "is_host_transfer", "source_target_pairs"]),
    ("reduce_v1", "0.9.0", "current", &["dimensions"]),
    ("reduce_precision_v1", "0.9.0", "current", &["exponent_bits", "mantissa_bits"]),
    ("reduce_scatter_v1", "0.9.0", "current", &["scatter_dimension", "replica_groups", "channel_id", "use_global_device_ids"]),
    ("reduce_window_v1", "0.9.0", "current", &["window_dimensions", "window_strides", "base_dilations", "window_dilations", "padding"]),
    ("remainder_v1", "0.9.0", "current", &[]),
    ("replica_id_v1", "0.9.0", "current", &[]),
    ("reshape_v1", "0.9.0", "current", &[]),
    ("return_v1", "0.9.0", "current", &[]),
    ("reverse_v1", "0.9.0", "current", &["dimensions"]),
    ("rng_bit_generator_v1", "0.9.0", "current", &["rng_algorithm"]),
    ("rng_v1", "0.9.0", "current", &["rng_distribution"]),
    ("round_nearest_even_v1", "0.9.0", "current", &[]),
    ("round_nearest_afz_v1", "0.9.0", "current", &[]),
    ("rsqrt_v1", "0.9.0", "1.9.0", &[]),
    ("rsqrt_v2", "1.10.0", "current", &["result_accuracy"]),
    ("scatter_v1", "0.9.0", "1.0.0", &["update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims", "index_vector_dim", "indices_are_sorted", "unique_indices"]),
    ("scatter_v2", "1.1.0", "current", &["update_window_dims", "inserted_window_dims", "input_batching_dims", "scatter_indices_batching_dims", "scatter_dims_to_operand_dims", "index_vector_dim", "indices_are_sorted", "unique_indices"]),
    ("select_and_scatter_v1", "0.9.0", "current", &["window_dimensions", "window_strides", "padding"]),
    ("select_v1", "0.9.0", "current", &[]),
    ("send_v1", "0.9.0", "1.11.0", &["channel_id", "channel_type", "is_host_transfer"]),
    ("send_v2", "1.12.0", "current", &["channel_id", "channel_type", "is_host_transfer", "source_target_pairs"]),
    ("set_dimension_size_v1", "0.9.0", "current", &["dimension"]),
    ("shift_left_v1", "0.9.0", "current", &[]),
    ("shift_right_arithmetic_v1", "0.9.0", "current", &[]),
    ("shift_right_logical_v1", "0.9.0", "current", &[]),
    ("sign_v1", "0.9.0", "current", &[]),
    ("sine_v1", "0.9.0", "1.9.0", &[]),
    ("sine_v2", "1.10.0", "current", &["result_accuracy"]),
    ("slice_v1", "0.9.0", "current", &["start_indices", "limit_indices", "strides"]),
    ("sort_v1", "0.9.0", "current", &["dimension", "is_stable"]),
    ("sqrt_v1", "0.9.0", "1.9.0", &[]),
    ("sqrt_v2", "1.10.0", "current", &["result_accuracy"]),
    ("subtract_v1", "0.9.0", "current", &[]),
    ("tan_v1", "1.4.0", "1.9.0", &[]),
    ("tan_v2", "1.10.0", "current", &["result_accuracy"]),
    ("tanh_v1", "0.9.0", "1.9.0", &[]),
    ("tanh_v2", "1.10.0", "current", &["result_accuracy"]),
    ("torch_index_select_v1", "0.9.0", "current", &["dim", "batch_dims"]),
    ("transpose_v1", "0.9.0", "current", &["permutation"]),
    ("triangular_solve_v1", "0.9.0", "current", &["left_side", "lower", "unit_diagonal", "transpose_a"]),
    ("tuple_v1", "0.9.0", "current", &[]),
    ("unary_einsum_v1", "0.9.0", "current", &["einsum_config"]),
    ("uniform_dequantize_v1", "0.9.0", "current", &[]),
    ("uniform_quantize_v1", "0.9.0", "current", &[]),
    ("while_v1", "0.9.0", "current", &[]),
    ("xor_v1", "0.9.0", "current", &[]),
];
