use super::*;
use crate::hlo::attributes::{GatherDimensionNumbers, ScatterDimensionNumbers};
use crate::hlo::shape_inference::*;

fn rows_gather() -> GatherDimensionNumbers {
    // Take whole rows of a [5,7] matrix: jnp.take(x, idx, axis=0).
    GatherDimensionNumbers {
        offset_dims: vec![1],
        collapsed_slice_dims: vec![0],
        start_index_map: vec![0],
        index_vector_dim: 1,
        ..Default::default()
    }
}

#[test]
fn gather_shapes() {
    assert_shape(infer_gather(&arr(F32, &[5, 7]), &arr(S32, &[3, 1]), &rows_gather(), &[1, 7]), "f32[3,7]");
    // index_vector_dim equal to the indices' rank means an implicit trailing 1.
    assert_shape(infer_gather(&arr(F32, &[5, 7]), &arr(S32, &[3]), &rows_gather(), &[1, 7]), "f32[3,7]");
    // Batching dims: operand dim 0 pairs with indices dim 1 (size 3); the output is
    // [indices dim 0, indices dim 1, offset] = [2,3,4].
    let batched = GatherDimensionNumbers {
        offset_dims: vec![2],
        collapsed_slice_dims: vec![1],
        start_index_map: vec![1],
        operand_batching_dims: vec![0],
        start_indices_batching_dims: vec![1],
        index_vector_dim: 2,
    };
    assert_shape(infer_gather(&arr(F32, &[3, 5, 4]), &arr(S32, &[2, 3, 1]), &batched, &[1, 1, 4]), "f32[2,3,4]");
    assert_err(
        infer_gather(&arr(F32, &[4, 5, 4]), &arr(S32, &[2, 3, 1]), &batched, &[1, 1, 4]),
        &["gather:", "operand batching dimension 0 has size 4 but indices batching dimension 1 has size 3"],
    );
}

#[test]
fn gather_errors() {
    assert_err(
        infer_gather(&arr(F32, &[5, 7]), &arr(S32, &[3, 1]), &rows_gather(), &[2, 7]),
        &["gather:", "operand dimension 0 has slice size 2"],
    );
    assert_err(
        infer_gather(&arr(F32, &[5, 7]), &arr(S32, &[3, 1]), &rows_gather(), &[1, 8]),
        &["gather:", "slice size 8"],
    );
    assert_err(
        infer_gather(&arr(F32, &[5, 7]), &arr(S32, &[3, 2]), &rows_gather(), &[1, 7]),
        &["gather:", "start_index_map {0} has 1 entries", "size 2"],
    );
    assert_err(
        infer_gather(&arr(F32, &[5, 7]), &arr(F32, &[3, 1]), &rows_gather(), &[1, 7]),
        &["gather:", "indices must be integers"],
    );
    let mut d = rows_gather();
    d.index_vector_dim = 3;
    assert_err(infer_gather(&arr(F32, &[5, 7]), &arr(S32, &[3, 1]), &d, &[1, 7]), &["gather:", "index_vector_dim 3"]);
    let mut d = rows_gather();
    d.collapsed_slice_dims = vec![];
    assert_err(
        infer_gather(&arr(F32, &[5, 7]), &arr(S32, &[3, 1]), &d, &[1, 7]),
        &["gather:", "cover the 2 operand dimensions"],
    );
}

fn window_scatter() -> ScatterDimensionNumbers {
    ScatterDimensionNumbers {
        update_window_dims: vec![0, 2],
        inserted_window_dims: vec![1],
        scatter_dims_to_operand_dims: vec![1],
        index_vector_dim: 1,
        ..Default::default()
    }
}

#[test]
fn scatter_shapes() {
    let op = arr(F32, &[4, 5, 6]);
    let idx = arr(S32, &[3, 1]);
    assert_shape(
        infer_scatter(&[&op, &idx, &arr(F32, &[4, 3, 6])], &window_scatter(), &binary_reducer(F32)),
        "f32[4,5,6]",
    );
    // Updates window smaller than the operand is fine.
    assert_shape(
        infer_scatter(&[&op, &idx, &arr(F32, &[2, 3, 6])], &window_scatter(), &binary_reducer(F32)),
        "f32[4,5,6]",
    );
    let two = sig(&[scalar(F32), scalar(S32), scalar(F32), scalar(S32)], Shape::Tuple(vec![scalar(F32), scalar(S32)]));
    let ints = arr(S32, &[4, 5, 6]);
    let result =
        infer_scatter(&[&op, &ints, &idx, &arr(F32, &[4, 3, 6]), &arr(S32, &[4, 3, 6])], &window_scatter(), &two);
    assert_shape(result, "(f32[4,5,6], s32[4,5,6])");
}

#[test]
fn scatter_errors() {
    let op = arr(F32, &[4, 5, 6]);
    let idx = arr(S32, &[3, 1]);
    let d = window_scatter();
    let r = binary_reducer(F32);
    assert_err(
        infer_scatter(&[&op, &idx, &arr(F32, &[4, 2, 6])], &d, &r),
        &["scatter:", "updates scatter dimension 1 has size 2", "size 3"],
    );
    assert_err(
        infer_scatter(&[&op, &idx, &arr(F32, &[5, 3, 6])], &d, &r),
        &["scatter:", "updates window dimension 0 has size 5"],
    );
    assert_err(infer_scatter(&[&op, &idx, &arr(F32, &[4, 3])], &d, &r), &["scatter:", "must have rank 3"]);
    assert_err(infer_scatter(&[&op, &idx], &d, &r), &["scatter:", "odd number"]);
    assert_err(
        infer_scatter(&[&op, &idx, &arr(F32, &[4, 3, 6])], &d, &binary_reducer(S32)),
        &["scatter:", "accumulates s32"],
    );
}
