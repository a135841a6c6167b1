//! `getrf`: LU factorization with partial pivoting, `P·A = L·U`.

use super::args::{batch_then, counted, expect_counts, expect_dims, split_batch};
use super::scalar::Real;
use hlojit_ffi::handler::{Call, HandlerResult};

/// Factors the column-major `m` x `n` matrix `a` in place: `U` on and above the diagonal, the
/// unit-diagonal `L` below it. `ipiv[j]` is the 1-based row swapped with row `j` at step `j`.
/// Returns LAPACK's `info`: 0, or `j + 1` for the first exactly zero pivot `U[j][j]` (the
/// factorization is still completed, as LAPACK does).
pub fn getrf<T: Real>(a: &mut [T], m: usize, n: usize, ipiv: &mut [i32]) -> i32 {
    let mut info = 0;
    for j in 0..m.min(n) {
        let col = j * m;
        // The first row of largest magnitude, as BLAS `i?amax` picks it (so ties resolve the
        // way XLA's LAPACK does); NaN is never larger, so it is only taken if nothing else is.
        let mut p = j;
        let mut best = a[col + j].abs();
        for i in j + 1..m {
            let v = a[col + i].abs();
            if v > best || (best.is_nan() && !v.is_nan()) {
                best = v;
                p = i;
            }
        }
        ipiv[j] = (p + 1) as i32;
        let pivot = a[col + p];
        if pivot != T::ZERO {
            if p != j {
                for c in 0..n {
                    a.swap(c * m + j, c * m + p);
                }
            }
            // A reciprocal is what LAPACK multiplies by, unless it would overflow.
            if pivot.abs() >= T::MIN_POSITIVE {
                let r = T::ONE / pivot;
                for i in j + 1..m {
                    a[col + i] *= r;
                }
            } else {
                for i in j + 1..m {
                    a[col + i] = a[col + i] / pivot;
                }
            }
        } else if info == 0 {
            info = (j + 1) as i32;
        }
        // Rank-1 update of the trailing block, column by column (contiguous in memory).
        for c in j + 1..n {
            let u = a[c * m + j];
            if u == T::ZERO {
                continue;
            }
            for i in j + 1..m {
                let l = a[col + i];
                a[c * m + i] -= l * u;
            }
        }
    }
    info
}

/// The `lapack_?getrf_ffi` handler: `(a) -> (lu, ipiv: s32[..., min(m,n)], info: s32[...])`.
pub fn handler<T: Real>(mut call: Call<'_>) -> HandlerResult {
    expect_counts(call.args.len(), call.rets.len(), &[1], 3)?;
    let x = call.arg(0)?;
    let dims = x.dims();
    let b = split_batch(dims, "the matrix")?;
    let k = b.rows.min(b.cols);
    let input = x.as_slice::<T>()?;
    let [lu, ipiv, info, ..] = &mut call.rets[..] else { return Err(counted()) };
    expect_dims(lu.dims(), dims, "the factor result")?;
    expect_dims(ipiv.dims(), &batch_then(dims, &[k as i64]), "the pivots result")?;
    expect_dims(info.dims(), &batch_then(dims, &[]), "the info result")?;
    let lu = lu.as_mut_slice::<T>()?;
    let ipiv = ipiv.as_mut_slice::<i32>()?;
    let info = info.as_mut_slice::<i32>()?;
    lu.copy_from_slice(input);
    for i in 0..b.count {
        let len = b.matrix_len();
        info[i] = getrf(&mut lu[i * len..(i + 1) * len], b.rows, b.cols, &mut ipiv[i * k..(i + 1) * k]);
    }
    Ok(())
}
