use super::*;
use crate::hlo::attributes::{FftType, RngDistribution};
use crate::hlo::shape_inference::*;

#[test]
fn rng_ops() {
    assert_shape(infer_rng(&scalar(F32), &scalar(F32), RngDistribution::Uniform, &arr(F32, &[3, 4])), "f32[3,4]");
    assert_err(
        infer_rng(&scalar(S32), &scalar(S32), RngDistribution::Normal, &arr(S32, &[3])),
        &["rng:", "rng_normal", "s32"],
    );
    assert_err(
        infer_rng(&scalar(F32), &scalar(F64), RngDistribution::Uniform, &arr(F32, &[3])),
        &["rng:", "operand 1"],
    );
    let declared = Shape::Tuple(vec![arr(U64, &[2]), arr(U32, &[7, 3])]);
    assert_shape(infer_rng_bit_generator(&arr(U64, &[2]), &declared), "(u64[2], u32[7,3])");
    let floats = Shape::Tuple(vec![arr(U64, &[2]), arr(F32, &[7, 3])]);
    assert_err(infer_rng_bit_generator(&arr(U64, &[2]), &floats), &["rng-bit-generator:", "integers"]);
    assert_eq!(infer_rng_get_and_update_state().to_string(), "u64[2]");
}

#[test]
fn fft_shapes() {
    // RFFT keeps n/2+1 complex coefficients of the last dimension.
    assert_shape(infer_fft(&arr(F32, &[5, 32]), FftType::Rfft, &[32]), "c64[5,17]");
    assert_shape(infer_fft(&arr(F32, &[2, 9, 15]), FftType::Rfft, &[9, 15]), "c64[2,9,8]");
    assert_shape(infer_fft(&arr(C64, &[4, 8]), FftType::Irfft, &[15]), "f32[4,15]");
    assert_shape(infer_fft(&arr(ElementType::C128, &[3, 20]), FftType::Ifft, &[20]), "c128[3,20]");
    assert_err(infer_fft(&arr(F32, &[4, 8]), FftType::Fft, &[8]), &["fft:", "complex"]);
    assert_err(infer_fft(&arr(C64, &[4, 9]), FftType::Irfft, &[15]), &["fft:", "fft_length/2+1 = 8"]);
    assert_err(infer_fft(&arr(C64, &[8]), FftType::Fft, &[2, 4]), &["fft:", "rank >= 2"]);
    assert_err(infer_fft(&arr(C64, &[8]), FftType::Fft, &[]), &["fft:", "1 to 3"]);
}

#[test]
fn linear_algebra() {
    assert_shape(infer_cholesky(&arr(F32, &[3, 5, 5])), "f32[3,5,5]");
    assert_err(infer_cholesky(&arr(F32, &[3, 4, 5])), &["cholesky:", "minor dimensions"]);
    assert_err(infer_cholesky(&arr(S32, &[5, 5])), &["cholesky:", "floating-point or complex"]);
    assert_shape(infer_triangular_solve(&arr(F32, &[5, 5]), &arr(F32, &[5, 3]), true), "f32[5,3]");
    assert_shape(infer_triangular_solve(&arr(C64, &[2, 3, 3]), &arr(C64, &[2, 4, 3]), false), "c64[2,4,3]");
    assert_err(
        infer_triangular_solve(&arr(F32, &[5, 5]), &arr(F32, &[5, 3]), false),
        &["triangular-solve:", "minor dimension of b f32[5,3]"],
    );
    assert_err(
        infer_triangular_solve(&arr(F32, &[2, 5, 5]), &arr(F32, &[3, 5, 3]), true),
        &["triangular-solve:", "batch dimensions"],
    );
}

#[test]
fn batch_norm() {
    let x = arr(F32, &[2, 3, 4]);
    let f = arr(F32, &[3]);
    assert_shape(infer_batch_norm_training(&x, &f, &f, 1), "(f32[2,3,4], f32[3], f32[3])");
    assert_shape(infer_batch_norm_inference(&x, &f, &f, &f, &f, 1), "f32[2,3,4]");
    assert_shape(infer_batch_norm_grad(&x, &f, &f, &f, &x, 1), "(f32[2,3,4], f32[3], f32[3])");
    assert_err(
        infer_batch_norm_training(&x, &arr(F32, &[4]), &f, 1),
        &["batch-norm-training:", "scale must be f32[3]"],
    );
    assert_err(infer_batch_norm_training(&x, &f, &f, 3), &["batch-norm-training:", "feature_index 3"]);
    assert_err(infer_batch_norm_grad(&x, &f, &f, &f, &arr(F32, &[2, 3, 5]), 1), &["batch-norm-grad:", "grad_output"]);
}

#[test]
fn topk_and_dimension_sizes() {
    assert_shape(infer_topk(&arr(F32, &[3, 10]), 4), "(f32[3,4], s32[3,4])");
    assert_err(infer_topk(&arr(F32, &[3, 10]), 11), &["topk:", "k = 11"]);
    assert_err(infer_topk(&scalar(F32), 1), &["topk:", "rank >= 1"]);
    assert_shape(infer_get_dimension_size(&arr(F32, &[3, 7]), 1), "s32[]");
    assert_err(infer_get_dimension_size(&arr(F32, &[3, 7]), 2), &["get-dimension-size:", "dimension 2"]);
    assert_shape(infer_set_dimension_size(&arr(F32, &[3, 7]), &scalar(S32), 1), "f32[3,<=7]");
    assert_err(infer_set_dimension_size(&arr(F32, &[3, 7]), &scalar(U32), 1), &["set-dimension-size:", "s32[]"]);
}
