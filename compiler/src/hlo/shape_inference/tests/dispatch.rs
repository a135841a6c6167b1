use super::*;
use crate::hlo::attributes::{Attributes, ComparisonDirection, DotDimensionNumbers};
use crate::hlo::opcode::Opcode;
use crate::hlo::shape_inference::*;
use hlojit_runtime::{ArrayLiteral, Literal};

#[test]
fn every_opcode_has_a_rule() {
    // Whatever the (missing) operands and attributes, no opcode falls through the dispatcher.
    for &op in Opcode::ALL {
        if let Err(e) = infer_shape(op, &[], &Attributes::default(), &[], None) {
            assert!(!e.contains("no shape inference rule"), "{op}: {e}");
            assert!(e.starts_with(op.name()), "{op}: message does not name the op: {e}");
        }
    }
}

#[test]
fn attributes_come_from_attributes() {
    let x = arr(F32, &[3]);
    let mut attrs = Attributes::default();
    assert_err(
        infer_shape(Opcode::Broadcast, &[&x], &attrs, &[], Some(&arr(F32, &[2, 3]))),
        &["broadcast: missing required attribute dimensions"],
    );
    attrs.dimensions = Some(vec![1]);
    assert_shape(infer_shape(Opcode::Broadcast, &[&x], &attrs, &[], Some(&arr(F32, &[2, 3]))), "f32[2,3]");
    assert_err(infer_shape(Opcode::Broadcast, &[&x], &attrs, &[], None), &["broadcast:", "declared shape is needed"]);
    assert_err(infer_shape(Opcode::Negate, &[&x, &x], &attrs, &[], None), &["negate: expected 1 operand(s), got 2"]);
}

#[test]
fn declared_types_drive_conversions_and_accumulation() {
    let a = Attributes::default();
    assert_shape(infer_shape(Opcode::Convert, &[&arr(S32, &[2])], &a, &[], Some(&arr(BF16, &[2]))), "bf16[2]");
    // The declared dims of a convert are checked by comparing, not taken over.
    assert_shape(infer_shape(Opcode::Convert, &[&arr(S32, &[2])], &a, &[], Some(&arr(F32, &[3]))), "f32[2]");
    let dot = Attributes {
        dot_dims: Some(DotDimensionNumbers {
            lhs_contracting: vec![1],
            rhs_contracting: vec![0],
            ..Default::default()
        }),
        ..Default::default()
    };
    let (l, r) = (arr(S8, &[2, 3]), arr(S8, &[3, 4]));
    assert_shape(infer_shape(Opcode::Dot, &[&l, &r], &dot, &[], Some(&arr(S32, &[2, 4]))), "s32[2,4]");
    assert_shape(infer_shape(Opcode::Dot, &[&l, &r], &dot, &[], None), "s8[2,4]");
}

#[test]
fn compare_needs_a_direction() {
    let x = arr(F32, &[2]);
    let mut attrs = Attributes::default();
    assert_err(
        infer_shape(Opcode::Compare, &[&x, &x], &attrs, &[], None),
        &["compare: missing required attribute direction"],
    );
    attrs.direction = Some(ComparisonDirection::Lt);
    assert_shape(infer_shape(Opcode::Compare, &[&x, &x], &attrs, &[], None), "pred[2]");
}

#[test]
fn called_computations_are_counted() {
    let x = arr(F32, &[2]);
    let attrs = Attributes { dimensions: Some(vec![0]), ..Default::default() };
    assert_err(
        infer_shape(Opcode::Reduce, &[&x, &scalar(F32)], &attrs, &[], None),
        &["reduce: expected 1 called computation(s), got 0"],
    );
    let r = binary_reducer(F32);
    assert_shape(infer_shape(Opcode::Reduce, &[&x, &scalar(F32)], &attrs, &[&r], None), "f32[]");
    assert_err(
        infer_shape(Opcode::Add, &[&x, &x], &Attributes::default(), &[&r], None),
        &["add: expected 0 called computation(s), got 1"],
    );
}

#[test]
fn constants_take_the_literal_shape() {
    let attrs = Attributes { literal: Some(Literal::Array(ArrayLiteral::zeros(S32, &[2, 2]))), ..Default::default() };
    assert_shape(infer_shape(Opcode::Constant, &[], &attrs, &[], None), "s32[2,2]");
    // An elided literal (`constant({...})`) leaves only the declared shape.
    assert_shape(infer_shape(Opcode::Constant, &[], &Attributes::default(), &[], Some(&arr(F32, &[3]))), "f32[3]");
    assert_err(
        infer_shape(Opcode::Constant, &[], &Attributes::default(), &[], None),
        &["constant:", "literal is missing"],
    );
}

#[test]
fn shard_counts_come_from_replica_groups_or_the_declared_shape() {
    let x = arr(F32, &[1, 3]);
    let mut attrs =
        Attributes { dimensions: Some(vec![0]), replica_groups: Some(vec![vec![0, 1, 2, 3]]), ..Default::default() };
    assert_shape(infer_shape(Opcode::AllGather, &[&x], &attrs, &[], None), "f32[4,3]");
    attrs.replica_groups = None;
    assert_shape(infer_shape(Opcode::AllGather, &[&x], &attrs, &[], Some(&arr(F32, &[2, 3]))), "f32[2,3]");
}
