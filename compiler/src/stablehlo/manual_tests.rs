//! Per-device programs from Shardy's manual computations (convert/manual.rs), in the form JAX's
//! portable artifacts carry them (the text below is `jax.pmap`'s artifact for
//! `psum(v, "i") * v + axis_index("i")` over 2 devices, deserialized by jaxlib 0.10).

use super::*;

const PMAP: &str = r##"module @jit__fun attributes {mhlo.frontend_attributes = {xla.sdy.meshes = "{mesh = #sdy.mesh<[\22i\22=2]>}"}, mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x4xf32> {mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding<@mesh, [{\22i\22}, {}]>"}, mhlo.sharding = "{devices=[2,1]<=[2]}"}) -> (tensor<2x4xf32> {jax.result_info = "result", mhlo.sharding = "{devices=[2,1]<=[2]}"}) {
    %0 = stablehlo.custom_call @xla.sdy.GlobalToLocalShape(%arg0) {has_side_effect = true, mhlo.frontend_attributes = {xla.sdy.in_shardings = "#sdy.sharding_per_value<[<@mesh, [{\22i\22}, {}]>]>", xla.sdy.manual_axes = "#sdy<manual_axes{\22i\22}>"}} : (tensor<2x4xf32>) -> tensor<1x4xf32>
    %1 = call @xla.sdy.manual_computation_body(%0) {mhlo.frontend_attributes = {inlineable = "false"}} : (tensor<1x4xf32>) -> tensor<1x4xf32>
    %2 = stablehlo.custom_call @xla.sdy.LocalToGlobalShape(%1) {has_side_effect = true, mhlo.frontend_attributes = {xla.sdy.manual_axes = "#sdy<manual_axes{\22i\22}>", xla.sdy.out_shardings = "#sdy.sharding_per_value<[<@mesh, [{\22i\22}, {}]>]>"}} : (tensor<1x4xf32>) -> tensor<2x4xf32>
    %3 = stablehlo.custom_call @xla.sdy.FuncResultSharding(%2) {has_side_effect = true, mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding_per_value<[<@mesh, [{\22i\22}, {}]>]>"}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    return %3 : tensor<2x4xf32>
  }
  func.func @xla.sdy.manual_computation_body(%arg0: tensor<1x4xf32>) -> tensor<1x4xf32> {
    %c = stablehlo.constant dense<2> : tensor<ui32>
    %c_0 = stablehlo.constant dense<1> : tensor<ui32>
    %0 = stablehlo.reshape %arg0 : (tensor<1x4xf32>) -> tensor<4xf32>
    %1 = "stablehlo.all_reduce"(%0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %11 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %11 : tensor<f32>
    }) : (tensor<4xf32>) -> tensor<4xf32>
    %2 = stablehlo.multiply %1, %0 : tensor<4xf32>
    %3 = stablehlo.partition_id : tensor<ui32>
    %4 = stablehlo.divide %3, %c_0 : tensor<ui32>
    %5 = stablehlo.remainder %4, %c : tensor<ui32>
    %6 = stablehlo.convert %5 : (tensor<ui32>) -> tensor<i32>
    %7 = stablehlo.convert %6 : (tensor<i32>) -> tensor<f32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %9 = stablehlo.add %2, %8 : tensor<4xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
    return %10 : tensor<1x4xf32>
  }
}"##;

/// The shapes of the entry computation's parameter 0 and root, as printed (layouts dropped).
fn entry_signature(text: &str) -> (String, String) {
    let entry = &text[text.find("ENTRY").expect("an entry computation")..];
    let shape_of = |line: &str| {
        let after = line.split(" = ").nth(1).unwrap_or("");
        after.split_whitespace().next().unwrap_or("").split('{').next().unwrap_or("").to_string()
    };
    let param = entry.lines().find(|l| l.contains("parameter(0)")).map(shape_of).unwrap_or_default();
    let root = entry.lines().find(|l| l.trim_start().starts_with("ROOT")).map(shape_of).unwrap_or_default();
    (param, root)
}

#[test]
fn a_pmap_becomes_the_program_each_device_runs() {
    let m = parse_mlir_text(PMAP).unwrap();
    let text = crate::hlo::text::print_module(&m);
    assert!(text.contains("num_partitions=2"), "{text}");
    // @main takes and returns one device's shard; the boundary conversions are gone (the
    // body keeps its function's name).
    assert!(!text.contains("custom-call") && !text.contains("GlobalToLocalShape"), "{text}");
    assert_eq!(entry_signature(&text), ("f32[1,4]".to_string(), "f32[1,4]".to_string()), "{text}");
    assert!(text.contains("all-reduce(") && text.contains("partition-id()"), "{text}");
}

#[test]
fn programs_that_need_a_partitioner_are_refused_saying_so() {
    // Only one of two mesh axes manual: the body still works on arrays sharded over "j".
    let partial = PMAP
        .replace(r##"#sdy.mesh<[\22i\22=2]>"##, r##"#sdy.mesh<[\22i\22=2, \22j\22=2]>"##)
        .replace("mhlo.num_partitions = 2", "mhlo.num_partitions = 4");
    let err = parse_mlir_text(&partial).unwrap_err().to_string();
    assert!(err.contains("some mesh axes only") && err.contains("does not partition sharded programs"), "{err}");
    // An op on the sharded argument outside the manual computation.
    let outside = PMAP.replace(
        "%0 = stablehlo.custom_call @xla.sdy.GlobalToLocalShape(%arg0)",
        "%n = stablehlo.negate %arg0 : tensor<2x4xf32>\n    %0 = stablehlo.custom_call @xla.sdy.GlobalToLocalShape(%n)",
    );
    let err = parse_mlir_text(&outside).unwrap_err().to_string();
    assert!(err.contains("stablehlo.negate") && err.contains("does not partition sharded programs"), "{err}");
    // The argument arrives split along another dimension than the body takes it (resharding).
    let reshard = PMAP.replacen(r##"xla.sdy.sharding = "#sdy.sharding<@mesh, [{\22i\22}, {}]>""##, r##"xla.sdy.sharding = "#sdy.sharding<@mesh, [{}, {\22i\22}]>""##, 1);
    let err = parse_mlir_text(&reshard).unwrap_err().to_string();
    assert!(err.contains("resharding"), "{err}");
}

#[test]
fn replicated_programs_run_whole_on_every_device() {
    let text = r##"module @jit_f attributes {mhlo.frontend_attributes = {xla.sdy.meshes = "{mesh = #sdy.mesh<[\22x\22=2]>}"}, mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32> {mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding<@mesh, [{}]>"}, mhlo.sharding = "{replicated}"}) -> (tensor<3xf32>) {
    %0 = stablehlo.add %arg0, %arg0 : tensor<3xf32>
    return %0 : tensor<3xf32>
  }
}"##;
    let printed = crate::hlo::text::print_module(&parse_mlir_text(text).unwrap());
    assert_eq!(entry_signature(&printed), ("f32[3]".to_string(), "f32[3]".to_string()), "{printed}");
}

#[test]
fn a_shard_map_in_a_nested_function_is_inlined_into_main() {
    // PMAP's boundary conversions moved into @inner (as a shard_map inside a nested jax.jit
    // lowers), which @main calls twice; its value names repeat @main's.
    let (head, rest) = PMAP.split_once("    %0 = stablehlo.custom_call @xla.sdy.GlobalToLocalShape").unwrap();
    let (boundary, rest) = rest.split_once("    return %3 : tensor<2x4xf32>\n  }\n").unwrap();
    let nested = format!(
        "{head}    %0 = call @inner(%arg0) : (tensor<2x4xf32>) -> tensor<2x4xf32>\n    %1 = call @inner(%0) : (tensor<2x4xf32>) -> tensor<2x4xf32>\n    return %1 : tensor<2x4xf32>\n  }}\n  func.func private @inner(%arg0: tensor<2x4xf32>) -> tensor<2x4xf32> {{\n    %0 = stablehlo.custom_call @xla.sdy.GlobalToLocalShape{boundary}    return %2 : tensor<2x4xf32>\n  }}\n{rest}"
    );
    let nested = nested.replace("%3 = stablehlo.custom_call @xla.sdy.FuncResultSharding(%2)", "%9 = stablehlo.custom_call @xla.sdy.FuncResultSharding(%2)");
    let m = parse_mlir_text(&nested).unwrap_or_else(|e| panic!("{e}\n{nested}"));
    let text = crate::hlo::text::print_module(&m);
    assert!(!text.contains("custom-call") && !text.contains("GlobalToLocalShape"), "{text}");
    assert_eq!(entry_signature(&text), ("f32[1,4]".to_string(), "f32[1,4]".to_string()), "{text}");
    // The body (one computation, called twice) keeps its collective.
    assert!(text.contains("all-reduce("), "{text}");
}
