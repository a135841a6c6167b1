//! Random numbers, FFT, linear algebra, batch normalization, top-k and dynamic dimension sizes.

use super::common::{array, array_text, dynamic_flags, fail, make, make_static, text, with_type};
use crate::hlo::attributes::{FftType, RngDistribution};
use crate::hlo::opcode::Opcode;
use hlojit_runtime::{ArrayShape, ElementType, Shape};

/// `rng(a, b)` of `distribution` producing `declared`: scalar bounds of the result's type.
pub fn infer_rng(a: &Shape, b: &Shape, distribution: RngDistribution, declared: &Shape) -> Result<Shape, String> {
    let op = Opcode::Rng;
    let out = array(op, declared, "the result")?;
    for (i, s) in [a, b].into_iter().enumerate() {
        match s {
            Shape::Array(x) if x.dims.is_empty() && x.element_type == out.element_type => {}
            other => fail!(op, "operand {i} must be a {}[] scalar, got {}", out.element_type, text(other)),
        }
    }
    let t = out.element_type;
    let ok = match distribution {
        RngDistribution::Uniform => t.is_float() || t.is_int() || t.is_pred(),
        RngDistribution::Normal => t.is_float(),
    };
    if !ok {
        fail!(op, "{distribution} does not produce {t} values");
    }
    Ok(with_type(out, t))
}

/// `rng-bit-generator(state)` producing `(state, bits)`; the bits' shape is as declared and
/// must be an integer array.
pub fn infer_rng_bit_generator(state: &Shape, declared: &Shape) -> Result<Shape, String> {
    let op = Opcode::RngBitGenerator;
    let s = array(op, state, "the state")?;
    if s.rank() != 1 || !s.element_type.is_int() {
        fail!(op, "the state must be a rank-1 integer array, got {}", array_text(s));
    }
    let bits = match declared.tuple_elements() {
        Some([_, bits]) => array(op, bits, "the generated bits")?,
        _ => fail!(op, "the result must be a tuple (state, bits), got {}", text(declared)),
    };
    if !bits.element_type.is_int() {
        fail!(op, "the generated bits must be integers, got {}", array_text(bits));
    }
    Ok(Shape::Tuple(vec![state.without_layouts(), with_type(bits, bits.element_type)]))
}

/// `rng-get-and-update-state()`: `u64[2]`.
pub fn infer_rng_get_and_update_state() -> Shape {
    make_static(ElementType::U64, vec![2])
}

/// Operand dimensions `minor..` equal `lengths` (all or all but the last of fft_length).
fn check_fft_dims(a: &ArrayShape, minor: usize, lengths: &[i64]) -> Result<(), String> {
    for (i, (&d, &l)) in a.dims[minor..].iter().zip(lengths).enumerate() {
        if d != l {
            fail!(Opcode::Fft, "dimension {} of {} must equal fft_length[{i}] = {l}", minor + i, array_text(a));
        }
    }
    Ok(())
}

/// `fft` of `fft_type` over the `fft_length.len()` minor dimensions.
pub fn infer_fft(operand: &Shape, fft_type: FftType, fft_length: &[i64]) -> Result<Shape, String> {
    let op = Opcode::Fft;
    let a = array(op, operand, "the operand")?;
    let n = fft_length.len();
    if !(1..=3).contains(&n) {
        fail!(op, "fft_length must have 1 to 3 entries, got {}", n);
    }
    if a.rank() < n {
        fail!(op, "an FFT over {n} dimensions needs an operand of rank >= {n}, got {}", array_text(a));
    }
    let minor = a.rank() - n;
    let t = a.element_type;
    match fft_type {
        FftType::Fft | FftType::Ifft => {
            if !t.is_complex() {
                fail!(op, "{fft_type} needs a complex operand, got {}", array_text(a));
            }
            check_fft_dims(a, minor, fft_length)?;
            Ok(with_type(a, t))
        }
        FftType::Rfft => {
            let out = match t {
                ElementType::F32 => ElementType::C64,
                ElementType::F64 => ElementType::C128,
                _ => fail!(op, "RFFT needs an f32 or f64 operand, got {}", array_text(a)),
            };
            check_fft_dims(a, minor, fft_length)?;
            let mut dims = a.dims.clone();
            if fft_length[n - 1] != 0 {
                dims[a.rank() - 1] = fft_length[n - 1] / 2 + 1;
            }
            Ok(make(out, dims, dynamic_flags(a)))
        }
        FftType::Irfft => {
            let Some(out) = t.complex_component() else {
                fail!(op, "IRFFT needs a complex operand, got {}", array_text(a));
            };
            check_fft_dims(a, minor, &fft_length[..n - 1])?;
            let last = a.dims[a.rank() - 1];
            let expected = fft_length[n - 1] / 2 + 1;
            if (last != 0 || fft_length[n - 1] != 0) && last != expected {
                fail!(op, "the last dimension of {} must be fft_length/2+1 = {expected}", array_text(a));
            }
            let mut dims = a.dims.clone();
            dims[a.rank() - 1] = fft_length[n - 1];
            Ok(make(out, dims, dynamic_flags(a)))
        }
    }
}

/// A batch of square matrices of a floating-point or complex type.
fn square_matrices<'a>(op: Opcode, shape: &'a Shape, what: &str) -> Result<&'a ArrayShape, String> {
    let a = array(op, shape, what)?;
    if !a.element_type.is_floating() {
        fail!(op, "{what} must be floating-point or complex, got {}", array_text(a));
    }
    if a.rank() < 2 {
        fail!(op, "{what} must have rank >= 2, got {}", array_text(a));
    }
    if a.dims[a.rank() - 1] != a.dims[a.rank() - 2] {
        fail!(op, "the two minor dimensions of {what} {} must be equal", array_text(a));
    }
    Ok(a)
}

/// `cholesky(a), lower=...`: the operand's shape. The operand must be a batch of square
/// matrices (rank >= 2, equal minor dimensions) of a floating-point or complex type; the
/// error says which rule is broken.
pub fn infer_cholesky(operand: &Shape) -> Result<Shape, String> {
    let a = square_matrices(Opcode::Cholesky, operand, "the operand")?;
    Ok(with_type(a, a.element_type))
}

/// `triangular-solve(a, b)`: solves with the triangular `a` on the left or right of `x`.
pub fn infer_triangular_solve(a: &Shape, b: &Shape, left_side: bool) -> Result<Shape, String> {
    let op = Opcode::TriangularSolve;
    let m = square_matrices(op, a, "a")?;
    let r = array(op, b, "b")?;
    if r.element_type != m.element_type {
        fail!(op, "a {} and b {} must have the same element type", array_text(m), array_text(r));
    }
    if r.rank() != m.rank() {
        fail!(op, "a {} and b {} must have the same rank", array_text(m), array_text(r));
    }
    let n = m.rank();
    let shared = if left_side { r.dims[n - 2] } else { r.dims[n - 1] };
    if shared != m.dims[n - 1] {
        fail!(
            op,
            "the {} dimension of b {} must equal the size of a {} (left_side={left_side})",
            if left_side { "second-minor" } else { "minor" },
            array_text(r),
            array_text(m)
        );
    }
    if r.dims[..n - 2] != m.dims[..n - 2] {
        fail!(op, "a {} and b {} must have the same batch dimensions", array_text(m), array_text(r));
    }
    Ok(with_type(r, r.element_type))
}

/// Checks an operand of batch normalization and the rank-1 per-feature inputs (scale, offset,
/// mean, variance); returns the operand and the feature count.
fn batch_norm_inputs<'a>(
    op: Opcode,
    operand: &'a Shape,
    per_feature: &[(&Shape, &str)],
    feature_index: i64,
) -> Result<(&'a ArrayShape, i64), String> {
    let a = array(op, operand, "the operand")?;
    if !a.element_type.is_float() {
        fail!(op, "the operand must be floating-point, got {}", array_text(a));
    }
    if feature_index < 0 || feature_index >= a.rank() as i64 {
        fail!(op, "feature_index {feature_index} is out of range for {}", array_text(a));
    }
    let features = a.dims[feature_index as usize];
    for (shape, name) in per_feature {
        let s = array(op, shape, name)?;
        if s.rank() != 1 || s.dims[0] != features || s.element_type != a.element_type {
            fail!(op, "{name} must be {}[{features}] (one value per feature), got {}", a.element_type, array_text(s));
        }
    }
    Ok((a, features))
}

/// `batch-norm-training(x, scale, offset), feature_index=f`: `(normalized x, batch mean,
/// batch variance)`, the last two one value per feature. `x` must be a floating-point array
/// with dimension `f`, and `scale` and `offset` rank-1 arrays of its type and feature count.
pub fn infer_batch_norm_training(
    operand: &Shape,
    scale: &Shape,
    offset: &Shape,
    feature_index: i64,
) -> Result<Shape, String> {
    let (a, features) =
        batch_norm_inputs(Opcode::BatchNormTraining, operand, &[(scale, "scale"), (offset, "offset")], feature_index)?;
    let per_feature = make_static(a.element_type, vec![features]);
    Ok(Shape::Tuple(vec![with_type(a, a.element_type), per_feature.clone(), per_feature]))
}

/// `batch-norm-inference(x, scale, offset, mean, variance), feature_index=f`: `x`'s shape.
/// The four per-feature operands must be rank-1 arrays of `x`'s type and feature count.
pub fn infer_batch_norm_inference(
    operand: &Shape,
    scale: &Shape,
    offset: &Shape,
    mean: &Shape,
    variance: &Shape,
    feature_index: i64,
) -> Result<Shape, String> {
    let (a, _) = batch_norm_inputs(
        Opcode::BatchNormInference,
        operand,
        &[(scale, "scale"), (offset, "offset"), (mean, "mean"), (variance, "variance")],
        feature_index,
    )?;
    Ok(with_type(a, a.element_type))
}

/// `batch-norm-grad(x, scale, mean, variance, grad_output), feature_index=f`:
/// `(grad x, grad scale, grad offset)`. `grad_output` must have `x`'s shape; the per-feature
/// operands must be rank-1 arrays of `x`'s type and feature count.
pub fn infer_batch_norm_grad(
    operand: &Shape,
    scale: &Shape,
    mean: &Shape,
    variance: &Shape,
    grad_output: &Shape,
    feature_index: i64,
) -> Result<Shape, String> {
    let op = Opcode::BatchNormGrad;
    let (a, features) =
        batch_norm_inputs(op, operand, &[(scale, "scale"), (mean, "mean"), (variance, "variance")], feature_index)?;
    let g = array(op, grad_output, "grad_output")?;
    if g.dims != a.dims || g.element_type != a.element_type {
        fail!(op, "grad_output {} must have the operand's shape {}", array_text(g), array_text(a));
    }
    let per_feature = make_static(a.element_type, vec![features]);
    Ok(Shape::Tuple(vec![with_type(a, a.element_type), per_feature.clone(), per_feature]))
}

/// `topk(x), k=K`: `(values, s32 indices)` with the last dimension cut to `k`.
pub fn infer_topk(operand: &Shape, k: i64) -> Result<Shape, String> {
    let op = Opcode::TopK;
    let a = array(op, operand, "the operand")?;
    let Some(&last) = a.dims.last() else {
        fail!(op, "the operand must have rank >= 1, got {}", array_text(a));
    };
    if k < 0 || k > last {
        fail!(op, "k = {k} must be within [0, {last}] (the last dimension of {})", array_text(a));
    }
    let mut dims = a.dims.clone();
    *dims.last_mut().expect("rank >= 1") = k;
    let dynamic = dynamic_flags(a);
    Ok(Shape::Tuple(vec![make(a.element_type, dims.clone(), dynamic.clone()), make(ElementType::S32, dims, dynamic)]))
}

/// `get-dimension-size(x), dimensions={d}`: `s32[]`.
pub fn infer_get_dimension_size(operand: &Shape, dimension: i64) -> Result<Shape, String> {
    let op = Opcode::GetDimensionSize;
    let a = array(op, operand, "the operand")?;
    if dimension < 0 || dimension >= a.rank() as i64 {
        fail!(op, "dimension {dimension} is out of range for {}", array_text(a));
    }
    if a.dims[dimension as usize] > i32::MAX as i64 {
        fail!(op, "dimension {dimension} of {} does not fit in s32", array_text(a));
    }
    Ok(Shape::scalar(ElementType::S32))
}

/// `set-dimension-size(x, n), dimensions={d}`: `x` with dimension `d` dynamic (bounded by its
/// static size).
pub fn infer_set_dimension_size(operand: &Shape, size: &Shape, dimension: i64) -> Result<Shape, String> {
    let op = Opcode::SetDimensionSize;
    let a = array(op, operand, "the operand")?;
    if dimension < 0 || dimension >= a.rank() as i64 {
        fail!(op, "dimension {dimension} is out of range for {}", array_text(a));
    }
    if !size.compatible(&Shape::scalar(ElementType::S32)) {
        fail!(op, "the size must be s32[], got {}", text(size));
    }
    let mut dynamic = dynamic_flags(a);
    dynamic[dimension as usize] = true;
    Ok(make(a.element_type, a.dims.clone(), dynamic))
}
