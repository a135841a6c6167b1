//! Verifier tests on modules built in Rust: valid modules pass, each kind of defect is reported
//! naming the computation and instruction.

use super::*;
use crate::hlo::attributes::{ComparisonDirection, OutputAlias, WindowDim};
use crate::hlo::module::{AliasEntry, AliasKind};
use hlojit_runtime::{ElementType::*, Layout};

fn arr(t: hlojit_runtime::ElementType, dims: &[i64]) -> Shape {
    Shape::array(t, dims.to_vec())
}

fn param(comp: &mut Computation, name: &str, number: i64, shape: Shape) -> InstrId {
    let mut p = Instruction::new(name, Opcode::Parameter, shape, vec![]);
    p.attrs.parameter_number = Some(number);
    comp.add(p)
}

fn op(comp: &mut Computation, name: &str, opcode: Opcode, shape: Shape, operands: &[InstrId]) -> InstrId {
    comp.add(Instruction::new(name, opcode, shape, operands.to_vec()))
}

/// `main(x: f32[2,3], y: f32[2,3]) -> f32[2,3] { ROOT sum = add(x, y) }`.
fn add_module() -> Module {
    let mut main = Computation::new("main");
    let x = param(&mut main, "x", 0, arr(F32, &[2, 3]));
    let y = param(&mut main, "y", 1, arr(F32, &[2, 3]));
    main.root = op(&mut main, "sum", Opcode::Add, arr(F32, &[2, 3]), &[x, y]);
    let mut m = Module::new("m");
    m.entry = m.add_computation(main);
    m
}

/// `add_f32 (a, b) -> a + b` scalars.
fn add_reducer() -> Computation {
    let mut c = Computation::new("add_f32");
    let a = param(&mut c, "a", 0, Shape::scalar(F32));
    let b = param(&mut c, "b", 1, Shape::scalar(F32));
    c.root = op(&mut c, "r", Opcode::Add, Shape::scalar(F32), &[a, b]);
    c
}

#[track_caller]
fn assert_verify_err(m: &Module, computation: &str, instruction: &str, fragments: &[&str]) {
    match verify_module(m) {
        Err(Error::Verify { computation: c, instruction: i, message }) => {
            assert_eq!((c.as_str(), i.as_str()), (computation, instruction), "message: {message}");
            for f in fragments {
                assert!(message.contains(f), "{message:?} does not contain {f:?}");
            }
        }
        other => panic!("expected a verify error, got {other:?}"),
    }
}

#[test]
fn a_valid_module_verifies() {
    assert_eq!(verify_module(&add_module()), Ok(()));
}

#[test]
fn a_wrong_declared_shape_names_the_instruction() {
    let mut m = add_module();
    m.computations[0].instructions[2].shape = arr(F32, &[3, 2]);
    assert_verify_err(&m, "main", "sum", &["expected shape f32[2,3] but the instruction declares f32[3,2]"]);
    let mut m = add_module();
    m.computations[0].instructions[2].shape = arr(BF16, &[2, 3]);
    assert_verify_err(&m, "main", "sum", &["expected shape f32[2,3] but the instruction declares bf16[2,3]"]);
}

#[test]
fn layouts_are_ignored_when_comparing_shapes() {
    let mut m = add_module();
    let sum = &mut m.computations[0].instructions[2];
    sum.shape = Shape::Array(sum.shape.as_array().unwrap().clone().with_layout(Layout::new(vec![0, 1])));
    assert_eq!(verify_module(&m), Ok(()));
}

#[test]
fn bad_attributes_fail_with_inference_messages() {
    let mut main = Computation::new("main");
    let x = param(&mut main, "x", 0, arr(F32, &[2, 3]));
    main.root = op(&mut main, "t", Opcode::Transpose, arr(F32, &[3, 2]), &[x]);
    main.get_mut(main.root).attrs.dimensions = Some(vec![0, 0]);
    let mut m = Module::new("m");
    m.add_computation(main);
    assert_verify_err(&m, "main", "t", &["transpose:", "not a permutation"]);
    m.computations[0].get_mut(InstrId(1)).attrs.dimensions = None;
    assert_verify_err(&m, "main", "t", &["transpose: missing required attribute dimensions"]);
    m.computations[0].get_mut(InstrId(1)).attrs.dimensions = Some(vec![1, 0]);
    assert_eq!(verify_module(&m), Ok(()));
}

#[test]
fn wrong_operand_counts_are_reported() {
    let mut m = add_module();
    m.computations[0].instructions[2].operands.pop();
    assert_verify_err(&m, "main", "sum", &["add: expected 2 operand(s), got 1"]);
}

#[test]
fn called_computation_signatures_are_checked() {
    let mut m = Module::new("m");
    let reducer = m.add_computation(add_reducer());
    let mut main = Computation::new("main");
    let x = param(&mut main, "x", 0, arr(F32, &[4, 6]));
    let zero = op(&mut main, "zero", Opcode::Parameter, Shape::scalar(F32), &[]);
    main.get_mut(zero).attrs.parameter_number = Some(1);
    let r = op(&mut main, "red", Opcode::Reduce, arr(F32, &[4]), &[x, zero]);
    main.get_mut(r).attrs.dimensions = Some(vec![1]);
    main.get_mut(r).called = vec![reducer];
    main.root = r;
    m.entry = m.add_computation(main);
    assert_eq!(verify_module(&m), Ok(()));

    // A reducer of three parameters.
    param(&mut m.computations[0], "c", 2, Shape::scalar(F32));
    assert_verify_err(&m, "main", "red", &["reduce:", "must take 2 parameters, but takes 3"]);
}

#[test]
fn while_and_windows_through_the_verifier() {
    let mut m = Module::new("m");
    let reducer = m.add_computation(add_reducer());
    let mut main = Computation::new("main");
    let x = param(&mut main, "x", 0, arr(F32, &[4, 6]));
    let zero = param(&mut main, "zero", 1, Shape::scalar(F32));
    let rw = op(&mut main, "pool", Opcode::ReduceWindow, arr(F32, &[2, 3]), &[x, zero]);
    main.get_mut(rw).attrs.window = Some(vec![WindowDim { stride: 2, ..WindowDim::new(2) }; 2]);
    main.get_mut(rw).called = vec![reducer];
    main.root = rw;
    m.entry = m.add_computation(main);
    assert_eq!(verify_module(&m), Ok(()));
    m.computations[1].get_mut(rw).shape = arr(F32, &[3, 3]);
    assert_verify_err(&m, "main", "pool", &["expected shape f32[2,3] but the instruction declares f32[3,3]"]);
}

#[test]
fn parameter_numbers_must_not_have_gaps() {
    let mut m = add_module();
    m.computations[0].instructions[1].attrs.parameter_number = Some(2);
    assert_verify_err(&m, "main", "", &["parameter numbers must be 0..2", "1 is missing"]);
    m.computations[0].instructions[1].attrs.parameter_number = Some(0);
    assert_verify_err(&m, "main", "y", &["parameter number 0 is also used by x"]);
}

#[test]
fn names_must_be_unique_in_a_computation() {
    let mut m = add_module();
    m.computations[0].instructions[1].name = "x".into();
    assert_verify_err(&m, "main", "x", &["another instruction of the computation has this name"]);
}

#[test]
fn references_must_exist_and_be_acyclic() {
    let mut m = add_module();
    m.computations[0].instructions[2].operands[1] = InstrId(7);
    assert_verify_err(&m, "main", "sum", &["operand 7 does not exist"]);

    let mut m = add_module();
    let main = &mut m.computations[0];
    let n = op(main, "n", Opcode::Negate, arr(F32, &[2, 3]), &[InstrId(2)]);
    main.instructions[2].operands[1] = n;
    assert_verify_err(&m, "main", "n", &["cycle"]);

    let mut m = add_module();
    m.computations[0].root = InstrId(9);
    assert_verify_err(&m, "main", "", &["root 9 does not exist"]);
}

#[test]
fn recursion_is_rejected() {
    let mut m = Module::new("m");
    let mut f = Computation::new("f");
    let p = param(&mut f, "p", 0, Shape::scalar(F32));
    f.root = op(&mut f, "again", Opcode::Call, Shape::scalar(F32), &[p]);
    f.get_mut(f.root).called = vec![CompId(0)];
    m.entry = m.add_computation(f);
    assert_verify_err(&m, "f", "", &["calls f recursively"]);
}

#[test]
fn layouts_must_be_permutations() {
    let mut m = add_module();
    let x = &mut m.computations[0].instructions[0];
    x.shape = Shape::Array(x.shape.as_array().unwrap().clone().with_layout(Layout::new(vec![0, 0])));
    assert_verify_err(&m, "main", "x", &["layout {0,0} is not a permutation of the 2 dimensions"]);
}

#[test]
fn entry_layout_must_match_the_entry() {
    let mut m = add_module();
    m.entry_layout =
        Some(ProgramShape { parameters: vec![arr(F32, &[2, 3]), arr(F32, &[2, 3])], result: arr(F32, &[2, 3]) });
    assert_eq!(verify_module(&m), Ok(()));
    m.entry_layout =
        Some(ProgramShape { parameters: vec![arr(F32, &[2, 3]), arr(F32, &[3, 3])], result: arr(F32, &[2, 3]) });
    assert_verify_err(&m, "main", "y", &["entry_computation_layout: parameter 1 is f32[3,3]"]);
    m.entry_layout = Some(ProgramShape { parameters: vec![arr(F32, &[2, 3])], result: arr(F32, &[2, 3]) });
    assert_verify_err(&m, "main", "", &["lists 1 parameters but the entry computation has 2"]);
    m.entry_layout =
        Some(ProgramShape { parameters: vec![arr(F32, &[2, 3]), arr(F32, &[2, 3])], result: arr(S32, &[2, 3]) });
    assert_verify_err(&m, "main", "sum", &["the result is s32[2,3]"]);
}

#[test]
fn aliases_must_name_existing_equal_buffers() {
    let alias = |output_index: Vec<i64>, parameter: i64| AliasEntry {
        output_index,
        parameter,
        parameter_index: vec![],
        kind: AliasKind::MayAlias,
    };
    let mut m = add_module();
    m.input_output_alias = vec![alias(vec![], 1)];
    assert_eq!(verify_module(&m), Ok(()));
    m.input_output_alias = vec![alias(vec![], 2)];
    assert_verify_err(&m, "main", "", &["input_output_alias: parameter 2 does not exist"]);
    m.input_output_alias = vec![alias(vec![0], 0)];
    assert_verify_err(&m, "main", "", &["output index [0] does not exist"]);
    m.input_output_alias = vec![alias(vec![], 0), alias(vec![], 1)];
    assert_verify_err(&m, "main", "", &["aliased more than once"]);
    m.computations[0].instructions[0].shape = arr(F32, &[3, 2]);
    m.input_output_alias = vec![alias(vec![], 0)];
    // The add itself now fails first: shapes are checked before aliases.
    assert!(verify_module(&m).is_err());
}

#[test]
fn mixed_precision_operands_are_rejected() {
    // map's own rule accepts per-operand parameter types; XLA still forbids mixing floats.
    let mut m = Module::new("m");
    let mut f = Computation::new("f");
    let a = param(&mut f, "a", 0, Shape::scalar(F32));
    let b = param(&mut f, "b", 1, Shape::scalar(BF16));
    let bf = op(&mut f, "bf", Opcode::Convert, Shape::scalar(F32), &[b]);
    f.root = op(&mut f, "s", Opcode::Add, Shape::scalar(F32), &[a, bf]);
    let fid = m.add_computation(f);
    let mut main = Computation::new("main");
    let x = param(&mut main, "x", 0, arr(F32, &[4]));
    let y = param(&mut main, "y", 1, arr(BF16, &[4]));
    main.root = op(&mut main, "mapped", Opcode::Map, arr(F32, &[4]), &[x, y]);
    main.get_mut(main.root).called = vec![fid];
    m.entry = m.add_computation(main);
    assert_verify_err(&m, "main", "mapped", &["mix floating-point types f32 and bf16"]);
}

#[test]
fn compare_through_the_verifier() {
    let mut m = add_module();
    let main = &mut m.computations[0];
    main.instructions[2].opcode = Opcode::Compare;
    main.instructions[2].shape = arr(Pred, &[2, 3]);
    assert_verify_err(&m, "main", "sum", &["compare: missing required attribute direction"]);
    m.computations[0].instructions[2].attrs.direction = Some(ComparisonDirection::Ge);
    assert_eq!(verify_module(&m), Ok(()));
}

#[test]
fn output_to_operand_aliasing_is_checked() {
    let alias = |output: &[i64], operand: usize| {
        Some(vec![OutputAlias { output: output.to_vec(), operand, operand_index: vec![] }])
    };
    let mut m = add_module();
    let main = &mut m.computations[0];
    let cc = op(main, "cc", Opcode::CustomCall, arr(F32, &[2, 3]), &[InstrId(0), InstrId(1)]);
    main.get_mut(cc).attrs.custom_call_target = Some("f".into());
    main.get_mut(cc).attrs.output_to_operand_aliasing = alias(&[], 1);
    assert_eq!(verify_module(&m), Ok(()));
    m.computations[0].get_mut(cc).attrs.output_to_operand_aliasing = alias(&[], 2);
    assert_verify_err(&m, "main", "cc", &["operand 2, which does not exist"]);
    m.computations[0].get_mut(cc).attrs.output_to_operand_aliasing = alias(&[0], 1);
    assert_verify_err(&m, "main", "cc", &["output [0], which does not exist"]);
}

#[test]
fn module_level_problems_name_the_module() {
    let mut m = add_module();
    m.entry = CompId(3);
    assert_verify_err(&m, "m", "", &["the entry computation 3 does not exist"]);
    let mut m = add_module();
    let copy = m.computations[0].clone();
    m.add_computation(copy);
    assert_verify_err(&m, "m", "", &["two computations are named main"]);
}
