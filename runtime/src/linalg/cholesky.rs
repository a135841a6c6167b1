//! `potrf`: Cholesky factorization of a symmetric positive definite matrix.

use super::args::{batch_then, char_attr, counted, expect_counts, expect_dims, split_batch};
use super::scalar::Real;
use hlojit_ffi::handler::{Call, Error, HandlerResult};

/// Factors the column-major `n` x `n` matrix `a` in place as `L·Lᵀ` (`lower`, reading and
/// writing the lower triangle) or `Uᵀ·U` (reading and writing the upper one); the other
/// triangle keeps its input, as LAPACK leaves it. Returns `info`: 0, or `j + 1` when the
/// leading minor of order `j + 1` is not positive definite (then column `j` holds the
/// offending non-positive value on the diagonal and the factorization stops there).
pub fn potrf<T: Real>(a: &mut [T], n: usize, lower: bool) -> i32 {
    // Both cases walk the factor's columns of L (rows of U); `at(i, j)` addresses element
    // (i, j) of L, which for the upper case is U[j][i], the same memory transposed.
    let at = |i: usize, j: usize| if lower { j * n + i } else { i * n + j };
    for j in 0..n {
        let mut d = a[at(j, j)].to_f64();
        for k in 0..j {
            let l = a[at(j, k)].to_f64();
            d -= l * l;
        }
        // NaN fails like a non-positive pivot, as in LAPACK.
        if d.is_nan() || d <= 0.0 {
            a[at(j, j)] = T::from_f64(d);
            return (j + 1) as i32;
        }
        let d = T::from_f64(d).sqrt();
        a[at(j, j)] = d;
        for i in j + 1..n {
            let mut s = a[at(i, j)].to_f64();
            for k in 0..j {
                s -= a[at(i, k)].to_f64() * a[at(j, k)].to_f64();
            }
            a[at(i, j)] = T::from_f64(s) / d;
        }
    }
    0
}

/// The `lapack_?potrf_ffi` handler: `(a) -> (factor, info: s32[...])` with attribute
/// `uplo` (`'L'` or `'U'`).
pub fn handler<T: Real>(mut call: Call<'_>) -> HandlerResult {
    expect_counts(call.args.len(), call.rets.len(), &[1], 2)?;
    let lower = char_attr(&call.attrs, "uplo", b"LU")? == b'L';
    let x = call.arg(0)?;
    let dims = x.dims();
    let b = split_batch(dims, "the matrix")?;
    if b.rows != b.cols {
        return Err(Error::invalid_argument(format!("the matrix must be square, has shape {dims:?}")));
    }
    let input = x.as_slice::<T>()?;
    let [out, info, ..] = &mut call.rets[..] else { return Err(counted()) };
    expect_dims(out.dims(), dims, "the factor result")?;
    expect_dims(info.dims(), &batch_then(dims, &[]), "the info result")?;
    let out = out.as_mut_slice::<T>()?;
    let info = info.as_mut_slice::<i32>()?;
    out.copy_from_slice(input);
    let len = b.matrix_len();
    for (i, info) in info.iter_mut().enumerate().take(b.count) {
        *info = potrf(&mut out[i * len..(i + 1) * len], b.rows, lower);
    }
    Ok(())
}
