use super::*;
use crate::hlo::attributes::{PadDim, SliceDim};
use crate::hlo::shape_inference::*;

#[test]
fn broadcast_maps_operand_dimensions_exactly() {
    assert_shape(infer_broadcast(&arr(F32, &[3]), &[2, 3], &[1]), "f32[2,3]");
    assert_shape(infer_broadcast(&scalar(S32), &[2, 3], &[]), "s32[2,3]");
    assert_shape(infer_broadcast(&arr(F32, &[3, 2]), &[2, 4, 3], &[2, 0]), "f32[2,4,3]");
    assert_err(
        infer_broadcast(&arr(F32, &[3]), &[2, 3], &[0]),
        &["broadcast: operand dimension 0 has size 3 but output dimension 0 has size 2"],
    );
    // HLO broadcast does not stretch size-1 dimensions.
    assert_err(infer_broadcast(&arr(F32, &[1]), &[4], &[0]), &["broadcast:", "size 1"]);
    assert_err(infer_broadcast(&arr(F32, &[3]), &[2, 3], &[2]), &["broadcast:", "out of range"]);
    assert_err(infer_broadcast(&arr(F32, &[3]), &[2, 3], &[]), &["broadcast:", "one entry per operand dimension"]);
}

#[test]
fn reshape_keeps_the_element_count() {
    assert_shape(infer_reshape(&arr(F32, &[2, 3]), &[6]), "f32[6]");
    assert_shape(infer_reshape(&arr(F32, &[1, 1]), &[]), "f32[]");
    assert_err(infer_reshape(&arr(F32, &[2, 3]), &[4]), &["reshape:", "6 elements", "4 elements"]);
    assert_shape(
        infer_dynamic_reshape(&arr(F32, &[6]), &[&scalar(S32), &scalar(S32)], &[2, 3], &[false, true]),
        "f32[2,<=3]",
    );
    assert_err(
        infer_dynamic_reshape(&arr(F32, &[6]), &[&scalar(S32)], &[2, 3], &[]),
        &["dynamic-reshape:", "size operands"],
    );
}

#[test]
fn transpose_permutes_dimensions() {
    // Output dimension i is operand dimension perm[i]: [2,3,4] with {2,0,1} -> [4,2,3].
    assert_shape(infer_transpose(&arr(F32, &[2, 3, 4]), &[2, 0, 1]), "f32[4,2,3]");
    assert_err(infer_transpose(&arr(F32, &[2, 3, 4]), &[0, 0, 1]), &["transpose:", "not a permutation"]);
    assert_err(infer_transpose(&arr(F32, &[2, 3]), &[0]), &["transpose:", "not a permutation"]);
}

#[test]
fn slice_sizes_round_up() {
    let s = |start, limit, stride| SliceDim { start, limit, stride };
    // [1:8:3] picks 1, 4, 7.
    assert_shape(infer_slice(&arr(F32, &[10]), &[s(1, 8, 3)]), "f32[3]");
    assert_shape(infer_slice(&arr(F32, &[10, 4]), &[s(0, 10, 1), s(2, 2, 1)]), "f32[10,0]");
    assert_err(infer_slice(&arr(F32, &[10]), &[s(0, 11, 1)]), &["slice:", "dimension 0", "[0:11]"]);
    assert_err(infer_slice(&arr(F32, &[10]), &[s(5, 4, 1)]), &["slice:", "start <= limit"]);
    assert_err(infer_slice(&arr(F32, &[10]), &[s(0, 4, 0)]), &["slice:", "stride 0"]);
    assert_err(infer_slice(&arr(F32, &[10]), &[]), &["slice:", "rank 1"]);
}

#[test]
fn concatenate_adds_up_one_dimension() {
    assert_shape(infer_concatenate(&[&arr(F32, &[2, 3]), &arr(F32, &[4, 3])], 0), "f32[6,3]");
    assert_shape(infer_concatenate(&[&arr(U8, &[2, 1]), &arr(U8, &[2, 2]), &arr(U8, &[2, 5])], 1), "u8[2,8]");
    assert_err(infer_concatenate(&[&arr(F32, &[2, 3]), &arr(F32, &[4, 3])], 1), &["concatenate:", "dimension 0"]);
    assert_err(infer_concatenate(&[&arr(F32, &[2]), &arr(S32, &[2])], 0), &["concatenate:", "element type"]);
    assert_err(infer_concatenate(&[&arr(F32, &[2])], 1), &["concatenate:", "out of range"]);
}

#[test]
fn pad_low_high_interior() {
    let p = |low, high, interior| PadDim { low, high, interior };
    // 3 elements, 2 holes of 2, one in front, one cut at the end: 3 + 4 + 1 - 1 = 7.
    assert_shape(infer_pad(&arr(F32, &[3]), &scalar(F32), &[p(1, -1, 2)]), "f32[7]");
    assert_shape(infer_pad(&arr(F32, &[0, 2]), &scalar(F32), &[p(1, 1, 3), p(0, 0, 0)]), "f32[2,2]");
    assert_err(infer_pad(&arr(F32, &[3]), &scalar(F32), &[p(-5, 0, 0)]), &["pad:", "negative"]);
    assert_err(infer_pad(&arr(F32, &[3]), &scalar(F32), &[p(0, 0, -1)]), &["pad:", "interior"]);
    assert_err(infer_pad(&arr(F32, &[3]), &arr(F32, &[1]), &[p(0, 0, 0)]), &["pad:", "scalar"]);
    assert_err(infer_pad(&arr(F32, &[3]), &scalar(F64), &[p(0, 0, 0)]), &["pad:", "element type"]);
}

#[test]
fn reverse_and_iota() {
    assert_shape(infer_reverse(&arr(S8, &[3, 4]), &[0, 1]), "s8[3,4]");
    assert_err(infer_reverse(&arr(S8, &[3, 4]), &[1, 1]), &["reverse:", "more than once"]);
    assert_err(infer_reverse(&arr(S8, &[3, 4]), &[2]), &["reverse:", "out of range"]);
    assert_shape(infer_iota(&arr(S32, &[4, 5]), 1), "s32[4,5]");
    assert_err(infer_iota(&arr(S32, &[4, 5]), 2), &["iota:", "iota_dimension 2"]);
    assert_err(infer_iota(&scalar(S32), 0), &["iota:", "rank >= 1"]);
    assert_err(infer_iota(&arr(Pred, &[3]), 0), &["iota:", "pred"]);
}

#[test]
fn dynamic_slice_and_update() {
    let i = scalar(S32);
    assert_shape(infer_dynamic_slice(&arr(F32, &[10, 10]), &[&i, &i], &[3, 4]), "f32[3,4]");
    assert_err(infer_dynamic_slice(&arr(F32, &[10, 10]), &[&i, &i], &[3, 11]), &["dynamic-slice:", "slice size 11"]);
    assert_err(
        infer_dynamic_slice(&arr(F32, &[10, 10]), &[&i], &[3, 4]),
        &["dynamic-slice:", "expected 2 start indices"],
    );
    assert_err(
        infer_dynamic_slice(&arr(F32, &[10, 10]), &[&i, &scalar(U32)], &[3, 4]),
        &["dynamic-slice:", "one type"],
    );
    assert_err(infer_dynamic_slice(&arr(F32, &[10]), &[&scalar(F32)], &[3]), &["dynamic-slice:", "integer scalar"]);
    assert_shape(infer_dynamic_update_slice(&arr(F32, &[10, 10]), &arr(F32, &[2, 10]), &[&i, &i]), "f32[10,10]");
    assert_err(
        infer_dynamic_update_slice(&arr(F32, &[10, 10]), &arr(F32, &[2, 11]), &[&i, &i]),
        &["dynamic-update-slice:", "larger"],
    );
    assert_err(
        infer_dynamic_update_slice(&arr(F32, &[10]), &arr(S32, &[2]), &[&i]),
        &["dynamic-update-slice:", "element type"],
    );
}
