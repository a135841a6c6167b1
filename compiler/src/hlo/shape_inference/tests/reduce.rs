use super::*;
use crate::hlo::attributes::WindowDim;
use crate::hlo::shape_inference::*;

fn window(sizes: &[i64], strides: &[i64]) -> Vec<WindowDim> {
    sizes.iter().zip(strides).map(|(&size, &stride)| WindowDim { stride, ..WindowDim::new(size) }).collect()
}

#[test]
fn reduce_drops_the_reduced_dimensions() {
    let x = arr(F32, &[2, 3, 4]);
    assert_shape(infer_reduce(&[&x, &scalar(F32)], &[1], &binary_reducer(F32)), "f32[2,4]");
    assert_shape(infer_reduce(&[&x, &scalar(F32)], &[0, 1, 2], &binary_reducer(F32)), "f32[]");
    assert_shape(infer_reduce(&[&x, &scalar(F32)], &[], &binary_reducer(F32)), "f32[2,3,4]");
}

#[test]
fn variadic_reduce_returns_a_tuple() {
    // argmax: (value, index) pairs.
    let reducer =
        sig(&[scalar(F32), scalar(S32), scalar(F32), scalar(S32)], Shape::Tuple(vec![scalar(F32), scalar(S32)]));
    let result = infer_reduce(&[&arr(F32, &[5, 2]), &arr(S32, &[5, 2]), &scalar(F32), &scalar(S32)], &[0], &reducer);
    assert_shape(result, "(f32[2], s32[2])");
}

#[test]
fn reduce_errors() {
    let x = arr(F32, &[2, 3]);
    assert_err(infer_reduce(&[&x, &scalar(F32)], &[2], &binary_reducer(F32)), &["reduce:", "reduced dimension 2"]);
    assert_err(infer_reduce(&[&x, &scalar(F32)], &[1, 1], &binary_reducer(F32)), &["reduce:", "more than once"]);
    assert_err(infer_reduce(&[&x, &scalar(S32)], &[1], &binary_reducer(F32)), &["reduce:", "init value 0 is s32[]"]);
    assert_err(
        infer_reduce(&[&x, &arr(F32, &[1])], &[1], &binary_reducer(F32)),
        &["reduce:", "init value 0 must be a scalar"],
    );
    assert_err(infer_reduce(&[&x], &[1], &binary_reducer(F32)), &["reduce:", "even"]);
    let three = sig(&[scalar(F32), scalar(F32), scalar(F32)], scalar(F32));
    assert_err(infer_reduce(&[&x, &scalar(F32)], &[1], &three), &["reduce:", "must take 2 parameters, but takes 3"]);
    let non_scalar = sig(&[scalar(F32), scalar(F32)], arr(F32, &[2]));
    assert_err(infer_reduce(&[&x, &scalar(F32)], &[1], &non_scalar), &["reduce:", "scalar"]);
    // The reducer must take the input's element type.
    assert_err(infer_reduce(&[&arr(BF16, &[2]), &scalar(BF16)], &[0], &binary_reducer(F32)), &["reduce:"]);
    let y = arr(F32, &[3, 2]);
    let reducer =
        sig(&[scalar(F32), scalar(F32), scalar(F32), scalar(F32)], Shape::Tuple(vec![scalar(F32), scalar(F32)]));
    assert_err(
        infer_reduce(&[&x, &y, &scalar(F32), &scalar(F32)], &[0], &reducer),
        &["reduce:", "dimensions of input 0"],
    );
}

#[test]
fn reduce_window_output_sizes() {
    // 2x2 windows with stride 2 over 4x6: 2x3 positions.
    assert_shape(
        infer_reduce_window(&[&arr(F32, &[4, 6]), &scalar(F32)], &window(&[2, 2], &[2, 2]), &binary_reducer(F32)),
        "f32[2,3]",
    );
    // Base 4 dilated by 2 is 7 long, padded by 1 on both sides 9; a size-3 window fits 7 times.
    let w = WindowDim { base_dilation: 2, padding_low: 1, padding_high: 1, ..WindowDim::new(3) };
    assert_shape(infer_reduce_window(&[&arr(S32, &[4]), &scalar(S32)], &[w], &binary_reducer(S32)), "s32[7]");
    // Window 2 dilated by 3 spans 4 elements: over 5 elements it fits twice.
    let w = WindowDim { window_dilation: 3, ..WindowDim::new(2) };
    assert_shape(infer_reduce_window(&[&arr(F32, &[5]), &scalar(F32)], &[w], &binary_reducer(F32)), "f32[2]");
    assert_err(
        infer_reduce_window(&[&arr(F32, &[4, 6]), &scalar(F32)], &window(&[2], &[1]), &binary_reducer(F32)),
        &["reduce-window:", "1 dimensions", "rank 2"],
    );
    assert_err(
        infer_reduce_window(&[&arr(F32, &[4]), &scalar(F32)], &window(&[2], &[0]), &binary_reducer(F32)),
        &["reduce-window:", "stride 0"],
    );
}

#[test]
fn select_and_scatter_source_matches_the_windows() {
    let select = sig(&[scalar(F32), scalar(F32)], scalar(Pred));
    let w = window(&[2, 2], &[2, 2]);
    let ok = infer_select_and_scatter(
        &arr(F32, &[4, 6]),
        &arr(F32, &[2, 3]),
        &scalar(F32),
        &w,
        &select,
        &binary_reducer(F32),
    );
    assert_shape(ok, "f32[4,6]");
    let bad = infer_select_and_scatter(
        &arr(F32, &[4, 6]),
        &arr(F32, &[2, 2]),
        &scalar(F32),
        &w,
        &select,
        &binary_reducer(F32),
    );
    assert_err(bad, &["select-and-scatter:", "source f32[2,2]", "[2, 3]"]);
    let bad_select = sig(&[scalar(F32), scalar(F32)], scalar(F32));
    let bad = infer_select_and_scatter(
        &arr(F32, &[4, 6]),
        &arr(F32, &[2, 3]),
        &scalar(F32),
        &w,
        &bad_select,
        &binary_reducer(F32),
    );
    assert_err(bad, &["select-and-scatter:", "select computation must return pred[]"]);
}
