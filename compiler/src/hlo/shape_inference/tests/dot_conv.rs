use super::*;
use crate::hlo::attributes::{ConvDimensionNumbers, DotDimensionNumbers, WindowDim};
use crate::hlo::shape_inference::*;

fn dnums(lb: &[i64], rb: &[i64], lc: &[i64], rc: &[i64]) -> DotDimensionNumbers {
    DotDimensionNumbers {
        lhs_batch: lb.to_vec(),
        rhs_batch: rb.to_vec(),
        lhs_contracting: lc.to_vec(),
        rhs_contracting: rc.to_vec(),
    }
}

#[test]
fn dot_result_dimensions() {
    assert_shape(infer_dot(&arr(F32, &[2, 3]), &arr(F32, &[3, 4]), &dnums(&[], &[], &[1], &[0]), None), "f32[2,4]");
    // Batch dims first, then lhs free dims, then rhs free dims.
    assert_shape(
        infer_dot(&arr(F32, &[2, 5, 3]), &arr(F32, &[3, 5, 4]), &dnums(&[1], &[1], &[2], &[0]), None),
        "f32[5,2,4]",
    );
    assert_shape(infer_dot(&arr(F32, &[3]), &arr(F32, &[3]), &dnums(&[], &[], &[0], &[0]), None), "f32[]");
    // No contraction: an outer product.
    assert_shape(infer_dot(&arr(F32, &[2]), &arr(F32, &[3]), &dnums(&[], &[], &[], &[]), None), "f32[2,3]");
}

#[test]
fn dot_result_type() {
    let d = dnums(&[], &[], &[1], &[0]);
    assert_shape(infer_dot(&arr(S8, &[2, 3]), &arr(S8, &[3, 4]), &d, Some(S32)), "s32[2,4]");
    assert_shape(infer_dot(&arr(BF16, &[2, 3]), &arr(BF16, &[3, 4]), &d, Some(F32)), "f32[2,4]");
    assert_shape(infer_dot(&arr(F32, &[2, 3]), &arr(F32, &[3, 4]), &d, Some(BF16)), "bf16[2,4]");
    assert_shape(infer_dot(&arr(BF16, &[2, 3]), &arr(F32, &[3, 4]), &d, None), "f32[2,4]");
    assert_err(infer_dot(&arr(S32, &[2, 3]), &arr(S32, &[3, 4]), &d, Some(S8)), &["dot:", "narrower"]);
}

#[test]
fn dot_errors() {
    assert_err(
        infer_dot(&arr(F32, &[2, 3]), &arr(F32, &[4, 5]), &dnums(&[], &[], &[1], &[0]), None),
        &["dot: lhs contracting dimension 1 has size 3, rhs contracting dimension 0 has size 4"],
    );
    assert_err(
        infer_dot(&arr(F32, &[2, 3]), &arr(F32, &[3, 4]), &dnums(&[], &[], &[2], &[0]), None),
        &["dot:", "lhs contracting dimension 2 is out of range"],
    );
    assert_err(
        infer_dot(&arr(F32, &[2, 3]), &arr(F32, &[3, 4]), &dnums(&[], &[], &[1], &[]), None),
        &["dot:", "contracting dimensions"],
    );
    assert_err(
        infer_dot(&arr(F32, &[2, 3]), &arr(F32, &[3, 3]), &dnums(&[1], &[1], &[1], &[0]), None),
        &["dot:", "more than once"],
    );
    assert_err(
        infer_dot(&arr(F32, &[2, 3]), &arr(F32, &[5, 3]), &dnums(&[0], &[0], &[1], &[1]), None),
        &["dot:", "lhs batch dimension 0 has size 2, rhs batch dimension 0 has size 5"],
    );
}

/// `b01f_01io->b01f` (NHWC input, HWIO kernel).
fn nhwc() -> ConvDimensionNumbers {
    ConvDimensionNumbers {
        input_batch: 0,
        input_feature: 3,
        input_spatial: vec![1, 2],
        kernel_input_feature: 2,
        kernel_output_feature: 3,
        kernel_spatial: vec![0, 1],
        output_batch: 0,
        output_feature: 3,
        output_spatial: vec![1, 2],
    }
}

fn window(size: i64, stride: i64, pad: i64) -> Vec<WindowDim> {
    vec![WindowDim { stride, padding_low: pad, padding_high: pad, ..WindowDim::new(size) }; 2]
}

#[test]
fn convolution_output_sizes() {
    let lhs = arr(F32, &[1, 5, 5, 3]);
    let rhs = arr(F32, &[3, 3, 3, 8]);
    // Valid 3x3 over 5x5: 3x3; "same" padding 1: 5x5; stride 2 with padding 1: (7-3)/2+1 = 3.
    assert_shape(infer_convolution(&lhs, &rhs, &window(3, 1, 0), &nhwc(), 1, 1, None), "f32[1,3,3,8]");
    assert_shape(infer_convolution(&lhs, &rhs, &window(3, 1, 1), &nhwc(), 1, 1, None), "f32[1,5,5,8]");
    assert_shape(infer_convolution(&lhs, &rhs, &window(3, 2, 1), &nhwc(), 1, 1, None), "f32[1,3,3,8]");
    // Depthwise: 3 groups of one input feature each.
    assert_shape(
        infer_convolution(&lhs, &arr(F32, &[3, 3, 1, 6]), &window(3, 1, 0), &nhwc(), 3, 1, None),
        "f32[1,3,3,6]",
    );
    // Batch groups divide the batch: 4 / 2 = 2.
    assert_shape(
        infer_convolution(&arr(F32, &[4, 5, 5, 3]), &rhs, &window(3, 1, 0), &nhwc(), 1, 2, None),
        "f32[2,3,3,8]",
    );
    assert_shape(
        infer_convolution(
            &arr(BF16, &[1, 5, 5, 3]),
            &arr(BF16, &[3, 3, 3, 8]),
            &window(3, 1, 0),
            &nhwc(),
            1,
            1,
            Some(F32),
        ),
        "f32[1,3,3,8]",
    );
}

#[test]
fn convolution_errors() {
    let lhs = arr(F32, &[1, 5, 5, 3]);
    assert_err(
        infer_convolution(&lhs, &arr(F32, &[3, 3, 4, 8]), &window(3, 1, 0), &nhwc(), 1, 1, None),
        &["convolution:", "input features (3)", "kernel input features (4)"],
    );
    assert_err(
        infer_convolution(&lhs, &arr(F32, &[3, 3, 3, 8]), &window(2, 1, 0), &nhwc(), 1, 1, None),
        &["convolution:", "window size 2", "kernel's size 3"],
    );
    assert_err(
        infer_convolution(&lhs, &arr(F32, &[3, 3, 1, 8]), &window(3, 1, 0), &nhwc(), 3, 2, None),
        &["convolution:", "cannot both exceed 1"],
    );
    let mut bad = nhwc();
    bad.input_feature = 1;
    assert_err(
        infer_convolution(&lhs, &arr(F32, &[3, 3, 3, 8]), &window(3, 1, 0), &bad, 1, 1, None),
        &["convolution:", "input dimension 1 is given two roles"],
    );
    assert_err(
        infer_convolution(&arr(F32, &[5, 5, 3]), &arr(F32, &[3, 3, 3, 8]), &window(3, 1, 0), &nhwc(), 1, 1, None),
        &["convolution:", "lhs f32[5,5,3] must have rank 4"],
    );
}
