//! StableHLO text: parsing, conversion and errors; the corpus cases' results are checked by
//! the conformance runner (`--module stablehlo`), here the front end alone.

use super::*;

#[test]
fn parses_and_converts_a_simple_module() {
    let text = r#"module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x4xf32>) -> (tensor<3x4xf32> {jax.result_info = "result[0]"}) {
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %1 = stablehlo.add %arg0, %0 : tensor<3x4xf32>
    return %1 : tensor<3x4xf32>
  }
}"#;
    let hlo = mlir_text_to_hlo_text(text).unwrap();
    assert!(hlo.contains("broadcast("), "{hlo}");
    let m = parse_mlir_text(text).unwrap();
    let printed = crate::hlo::text::print_module(&m);
    assert!(printed.contains("add("), "{printed}");
}

/// JAX lowers lax.mulhi to chlo.mulhi (jaxlib 0.10), which is one HLO `mulhi`; its values are
/// checked by the file test jax_suite/mulhi.hlo.
#[test]
fn chlo_mulhi_is_the_mulhi_instruction() {
    let text = r#"module @jit_mulhi attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xi32>, %arg1: tensor<4xi32>) -> (tensor<4xi32> {jax.result_info = "result"}) {
    %0 = chlo.mulhi %arg0, %arg1 : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
    return %0 : tensor<4xi32>
  }
}"#;
    let hlo = mlir_text_to_hlo_text(text).unwrap();
    assert!(hlo.contains("= s32[4] mulhi("), "{hlo}");
}

#[test]
fn unknown_op_names_the_op_and_location() {
    let text = "module {\n  func.func public @main(%arg0: tensor<f32>) -> tensor<f32> {\n    %0 = stablehlo.frobnicate %arg0 : tensor<f32>\n    return %0 : tensor<f32>\n  }\n}";
    let err = parse_mlir_text(text).unwrap_err().to_string();
    assert!(err.starts_with("3:5:") && err.contains("stablehlo.frobnicate"), "{err}");
}

#[test]
fn syntax_error_has_line_and_column() {
    let text = "module {\n  func.func public @main(%arg0: tensor<f32>) -> tensor<f32> {\n    %0 = stablehlo.add %arg0, %arg0 : : tensor<f32>\n    return %0 : tensor<f32>\n  }\n}";
    let err = parse_mlir_text(text).unwrap_err();
    assert!(matches!(err, Error::Parse { line: 3, .. }), "{err}");
}

#[test]
fn detects_input_kinds() {
    assert_eq!(detect(b"HloModule m\n"), InputKind::HloText);
    assert_eq!(detect(b"module @x {\n}"), InputKind::MlirText);
    assert_eq!(detect(b"#loc = loc(unknown)\nmodule @x {\n}"), InputKind::MlirText);
    assert_eq!(detect(b"ML\xEFR\x00\x01"), InputKind::MlirBytecode);
    // Comment lines longer than the window detect() reads (a file test's expected values).
    let long = format!("// expect: f32[2000] {{{}}}\nmodule @x {{\n}}", "1.5, ".repeat(2000));
    assert_eq!(detect(long.as_bytes()), InputKind::MlirText);
    assert_eq!(detect(format!("// {}\nHloModule m\n", "x".repeat(5000)).as_bytes()), InputKind::HloText);
    assert_eq!(detect(b"// only a comment\n"), InputKind::HloText);
}

#[test]
fn invariant_constant_loop_state_is_sunk_into_the_loop() {
    // A ones-broadcast JAX passes through a while unchanged (`%iterArg_1` is returned as is):
    // it leaves the loop state and is computed in the body, the while's result #1 reads the
    // broadcast itself; a sort comparator's constant from outside is copied in.
    let text = r#"module @m {
  func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:3 = stablehlo.while(%iterArg = %arg0, %iterArg_1 = %0, %iterArg_2 = %c) : tensor<4xf32>, tensor<4xf32>, tensor<i32>
    cond {
      %c_3 = stablehlo.constant dense<3> : tensor<i32>
      %2 = stablehlo.compare LT, %iterArg_2, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %2 : tensor<i1>
    } do {
      %c_4 = stablehlo.constant dense<1> : tensor<i32>
      %3 = stablehlo.add %iterArg, %iterArg_1 : tensor<4xf32>
      %4 = stablehlo.add %iterArg_2, %c_4 : tensor<i32>
      stablehlo.return %3, %iterArg_1, %4 : tensor<4xf32>, tensor<4xf32>, tensor<i32>
    }
    %5 = "stablehlo.sort"(%1#0) <{dimension = 0 : i64, is_stable = true}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %6 = stablehlo.add %a, %cst : tensor<f32>
      %7 = stablehlo.compare LT, %6, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %7 : tensor<i1>
    }) : (tensor<4xf32>) -> tensor<4xf32>
    return %1#0, %1#1, %5 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}"#;
    let hlo = mlir_text_to_hlo_text(text).unwrap();
    let while_line = hlo.lines().find(|l| l.contains(" while(")).unwrap();
    assert!(while_line.contains("= (f32[4], s32[]) while("), "{hlo}");
    let m = parse_mlir_text(text).unwrap();
    let exe = crate::Client::new().compile(&m).unwrap();
    let x = hlojit_runtime::HostBuffer::from_slice(&[4], &[0.0f32, 1.0, 2.0, 3.0]).unwrap();
    let out = exe.run([&x]).unwrap();
    let got: Vec<Vec<f32>> = out.iter().map(|b| b.to_literal().as_slice::<f32>().unwrap().to_vec()).collect();
    // numpy: x + 3 * ones; the ones themselves; sorted with the comparator a + 1 < b.
    assert_eq!(got[0], [3.0, 4.0, 5.0, 6.0]);
    assert_eq!(got[1], [1.0; 4]);
    assert_eq!(got[2].len(), 4);
}

#[test]
fn donated_arguments_become_input_output_aliases() {
    // What jax.jit(f, donate_argnums=(0, 1)) writes for two results: each donated argument
    // names the result it may be computed in.
    let text = r#"module @jit_f {
  func.func public @main(%arg0: tensor<4xf32> {tf.aliasing_output = 1 : i32}, %arg1: tensor<4xf32> {tf.aliasing_output = 0 : i32}) -> (tensor<4xf32>, tensor<4xf32>) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>
    %1 = stablehlo.multiply %arg0, %arg1 : tensor<4xf32>
    return %0, %1 : tensor<4xf32>, tensor<4xf32>
  }
}"#;
    let m = parse_mlir_text(text).unwrap();
    let pairs = m.alias_leaf_pairs();
    assert_eq!(pairs.len(), 2, "{pairs:?}");
    assert!(pairs.iter().any(|&(out, param, _)| (out, param) == (1, 0)), "{pairs:?}");
    assert!(pairs.iter().any(|&(out, param, _)| (out, param) == (0, 1)), "{pairs:?}");
}

#[test]
fn shardy_meshes_of_single_devices_are_skipped_and_sharded_ones_refused() {
    // What JAX writes for a jit whose argument is committed to one device.
    let one = r#"module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @empty_mesh = <[]> {stablehlo.mesh = {axes = []}}
  func.func public @main(%arg0: tensor<f32> {sdy.sharding = #sdy.sharding<@empty_mesh, []>}) -> (tensor<f32> {jax.result_info = "result"}) {
    %0 = stablehlo.add %arg0, %arg0 : tensor<f32>
    return %0 : tensor<f32>
  }
}"#;
    let m = parse_mlir_text(one).unwrap();
    assert!(crate::hlo::text::print_module(&m).contains("add("));
    let sharded = one.replace("<[]>", "<[\"x\"=2]>");
    let err = parse_mlir_text(&sharded).unwrap_err().to_string();
    assert!(err.starts_with("2:3:") && err.contains("sdy.mesh with an axis of 2 devices"), "{err}");
}

#[test]
fn regions_use_constants_of_the_enclosing_function() {
    // A sort comparator as JAX's canonicalization leaves it: its constant hoisted out.
    let text = r#"module @jit_sort {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = "stablehlo.sort"(%arg0) <{dimension = 0 : i64, is_stable = true}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %1 = stablehlo.compare EQ, %arg1, %cst_0, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %2 = stablehlo.select %1, %cst_0, %arg1 : tensor<i1>, tensor<f32>
      %3 = stablehlo.compare LT, %2, %arg2, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %3 : tensor<i1>
    }) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}"#;
    let hlo = mlir_text_to_hlo_text(text).unwrap();
    // The comparator has its own copy of the constant.
    let comparator = hlo.split("\n\n").find(|c| c.contains("compare(") && !c.contains("ENTRY")).unwrap_or(&hlo).to_string();
    assert!(comparator.matches("constant(0)").count() >= 1, "{hlo}");
    parse_mlir_text(text).unwrap();
}

#[test]
fn custom_call_layouts_leave_token_operands_bare() {
    // What JAX writes for an ordered io_callback: the token's layout is `dense<>`.
    let text = r#"module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: !stablehlo.token, %arg1: tensor<i32>) -> (!stablehlo.token, tensor<i32>) {
    %0:2 = stablehlo.custom_call @cb(%arg0, %arg1) {has_side_effect = true, mhlo.backend_config = {index = 0 : ui64}, operand_layouts = [dense<> : tensor<0xindex>, dense<> : tensor<0xindex>], result_layouts = [dense<> : tensor<0xindex>, dense<> : tensor<0xindex>]} : (!stablehlo.token, tensor<i32>) -> (!stablehlo.token, tensor<i32>)
    return %0#0, %0#1 : !stablehlo.token, tensor<i32>
  }
}"#;
    let hlo = mlir_text_to_hlo_text(text).unwrap();
    assert!(hlo.contains("operand_layout_constraints={token[], s32[]{}}"), "{hlo}");
    parse_mlir_text(text).unwrap();
}

#[test]
fn reduce_window_of_a_scalar_has_an_empty_window() {
    // lax.reduce_window on a rank-0 operand (JAX's testReduceWindowScalar).
    let text = r#"module @jit_f {
  func.func public @main(%arg0: tensor<f32>) -> tensor<f32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = "stablehlo.reduce_window"(%arg0, %cst) <{window_dimensions = array<i64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %1 = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %1 : tensor<f32>
    }) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}"#;
    let hlo = mlir_text_to_hlo_text(text).unwrap();
    assert!(hlo.contains("window={}"), "{hlo}");
    parse_mlir_text(text).unwrap();
}

#[test]
fn create_token_becomes_an_after_all_of_nothing() {
    let text = r#"module @jit_f {
  func.func public @main(%arg0: tensor<f32>) -> (!stablehlo.token, tensor<f32>) {
    %0 = stablehlo.create_token : !stablehlo.token
    return %0, %arg0 : !stablehlo.token, tensor<f32>
  }
}"#;
    let hlo = mlir_text_to_hlo_text(text).unwrap();
    assert!(hlo.contains("after-all()"), "{hlo}");
    parse_mlir_text(text).unwrap();
}
