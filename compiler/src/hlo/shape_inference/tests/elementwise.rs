use super::*;
use crate::hlo::attributes::ComparisonType;
use crate::hlo::opcode::Opcode;
use crate::hlo::shape_inference::*;

#[test]
fn unary_result_types() {
    assert_shape(infer_unary(Opcode::Abs, &arr(C64, &[2])), "f32[2]");
    assert_shape(infer_unary(Opcode::Abs, &arr(S32, &[2])), "s32[2]");
    assert_shape(infer_unary(Opcode::IsFinite, &arr(F16, &[3])), "pred[3]");
    assert_shape(infer_unary(Opcode::Real, &arr(F32, &[3])), "f32[3]");
    assert_shape(infer_unary(Opcode::Imag, &arr(ElementType::C128, &[3])), "f64[3]");
    assert_shape(infer_unary(Opcode::Sqrt, &arr(C64, &[1, 2])), "c64[1,2]");
    assert_shape(infer_unary(Opcode::Clz, &arr(U8, &[4])), "u8[4]");
    assert_shape(infer_unary(Opcode::Not, &arr(Pred, &[4])), "pred[4]");
    assert_shape(infer_unary(Opcode::Negate, &arr(U32, &[4])), "u32[4]");
    assert_shape(infer_unary(Opcode::Copy, &Shape::Tuple(vec![arr(F32, &[2]), Shape::Token])), "(f32[2], token[])");
}

#[test]
fn unary_type_errors() {
    assert_err(infer_unary(Opcode::Abs, &arr(U32, &[2])), &["abs:", "signed", "u32[2]"]);
    assert_err(infer_unary(Opcode::Floor, &arr(S32, &[2])), &["floor:", "floating-point"]);
    assert_err(infer_unary(Opcode::Floor, &arr(C64, &[2])), &["floor:"]);
    assert_err(infer_unary(Opcode::Not, &arr(F32, &[2])), &["not:", "pred or integer"]);
    assert_err(infer_unary(Opcode::Popcnt, &arr(Pred, &[2])), &["popcnt:", "integer"]);
    assert_err(infer_unary(Opcode::Negate, &arr(Pred, &[2])), &["negate:"]);
    assert_err(infer_unary(Opcode::Sign, &arr(U8, &[2])), &["sign:"]);
    assert_err(infer_unary(Opcode::Exp, &arr(S32, &[2])), &["exponential:", "floating-point or complex"]);
    assert_err(infer_unary(Opcode::Log, &Shape::Tuple(vec![])), &["log:", "must be an array"]);
}

#[test]
fn binary_ops_need_equal_shapes() {
    assert_shape(infer_binary(Opcode::Add, &arr(F32, &[2, 3]), &arr(F32, &[2, 3])), "f32[2,3]");
    assert_err(
        infer_binary(Opcode::Add, &arr(F32, &[2, 3]), &arr(F32, &[3, 2])),
        &["add:", "equal dimensions", "f32[2,3]", "f32[3,2]"],
    );
    // A scalar operand is not broadcast implicitly in HLO.
    assert_err(infer_binary(Opcode::Multiply, &arr(F32, &[2, 3]), &scalar(F32)), &["multiply:", "equal dimensions"]);
    assert_err(infer_binary(Opcode::Add, &arr(F32, &[2]), &arr(BF16, &[2])), &["add:", "same element type"]);
}

#[test]
fn binary_result_types() {
    assert_shape(infer_binary(Opcode::Compare, &arr(S32, &[4]), &arr(S32, &[4])), "pred[4]");
    assert_shape(infer_binary(Opcode::Complex, &arr(F32, &[4]), &arr(F32, &[4])), "c64[4]");
    assert_shape(infer_binary(Opcode::Complex, &arr(F64, &[4]), &arr(F64, &[4])), "c128[4]");
    assert_shape(infer_binary(Opcode::And, &arr(Pred, &[4]), &arr(Pred, &[4])), "pred[4]");
    assert_shape(infer_binary(Opcode::ShiftLeft, &arr(U8, &[4]), &arr(U8, &[4])), "u8[4]");
    assert_shape(infer_binary(Opcode::Atan2, &arr(F32, &[1]), &arr(F32, &[1])), "f32[1]");
}

#[test]
fn binary_type_errors() {
    assert_err(infer_binary(Opcode::Complex, &arr(F16, &[4]), &arr(F16, &[4])), &["complex:", "f32 or f64"]);
    assert_err(infer_binary(Opcode::Xor, &arr(F32, &[4]), &arr(F32, &[4])), &["xor:", "pred or integer"]);
    assert_err(
        infer_binary(Opcode::ShiftRightLogical, &arr(Pred, &[4]), &arr(Pred, &[4])),
        &["shift-right-logical:", "integer"],
    );
    assert_err(infer_binary(Opcode::Subtract, &arr(Pred, &[4]), &arr(Pred, &[4])), &["subtract:", "arithmetic"]);
    assert_err(infer_binary(Opcode::Atan2, &arr(S32, &[4]), &arr(S32, &[4])), &["atan2:"]);
}

#[test]
fn comparison_types() {
    assert!(check_comparison_type(F32, ComparisonType::TotalOrder).is_ok());
    assert!(check_comparison_type(U32, ComparisonType::Unsigned).is_ok());
    assert!(check_comparison_type(S32, ComparisonType::Signed).is_ok());
    let e = check_comparison_type(S32, ComparisonType::TotalOrder).unwrap_err();
    assert!(e.contains("TOTALORDER") && e.contains("s32"), "{e}");
    assert!(check_comparison_type(U8, ComparisonType::Signed).is_err());
}

#[test]
fn select_needs_a_pred_of_the_operands_dimensions() {
    assert_shape(infer_select(&arr(Pred, &[2, 3]), &arr(F32, &[2, 3]), &arr(F32, &[2, 3])), "f32[2,3]");
    assert_err(
        infer_select(&scalar(Pred), &arr(F32, &[2, 3]), &arr(F32, &[2, 3])),
        &["select:", "predicate", "dimensions"],
    );
    assert_err(infer_select(&arr(S32, &[2]), &arr(F32, &[2]), &arr(F32, &[2])), &["select:", "pred"]);
    assert_err(infer_select(&arr(Pred, &[2]), &arr(F32, &[2]), &arr(S32, &[2])), &["select:", "same element type"]);
}

#[test]
fn clamp_takes_scalar_or_full_bounds() {
    assert_shape(infer_clamp(&scalar(F32), &arr(F32, &[64]), &scalar(F32)), "f32[64]");
    assert_shape(infer_clamp(&arr(S32, &[4, 16]), &arr(S32, &[4, 16]), &arr(S32, &[4, 16])), "s32[4,16]");
    assert_err(infer_clamp(&arr(F32, &[3]), &arr(F32, &[4]), &scalar(F32)), &["clamp:", "min", "f32[3]"]);
    assert_err(infer_clamp(&scalar(F32), &arr(F32, &[4]), &scalar(BF16)), &["clamp:", "max", "element type"]);
}

#[test]
fn conversions() {
    assert_shape(infer_convert(&arr(S32, &[2, 2]), F32), "f32[2,2]");
    // Narrowing bitcast-convert appends the ratio as a minor dimension, widening removes it.
    assert_shape(infer_bitcast_convert(&arr(F32, &[4]), U8), "u8[4,4]");
    assert_shape(infer_bitcast_convert(&arr(U8, &[3, 4]), F32), "f32[3]");
    assert_shape(infer_bitcast_convert(&arr(F32, &[2, 3]), S32), "s32[2,3]");
    assert_shape(infer_bitcast_convert(&arr(ElementType::U16, &[5, 2]), F32), "f32[5]");
    assert_err(infer_bitcast_convert(&arr(U8, &[4, 3]), F32), &["bitcast-convert:", "last dimension of size 4"]);
    assert_err(infer_bitcast_convert(&arr(F32, &[4]), C64), &["bitcast-convert:", "complex"]);
    assert_shape(infer_stochastic_convert(&arr(F32, &[8]), &arr(U32, &[8]), S8), "s8[8]");
    assert_err(
        infer_stochastic_convert(&arr(F32, &[8]), &arr(ElementType::U16, &[8]), S8),
        &["stochastic-convert:", "as wide"],
    );
    assert_err(
        infer_stochastic_convert(&arr(S32, &[8]), &arr(U32, &[8]), S8),
        &["stochastic-convert:", "floating-point"],
    );
    assert_shape(infer_reduce_precision(&arr(F64, &[12]), 8, 23), "f64[12]");
    assert_err(infer_reduce_precision(&arr(F32, &[2]), 0, 3), &["reduce-precision:", "exponent_bits"]);
    assert_err(infer_reduce_precision(&arr(S32, &[2]), 5, 3), &["reduce-precision:", "floating-point"]);
}
