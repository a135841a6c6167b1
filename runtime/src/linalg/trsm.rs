//! `trsm`: solving a triangular system with many right-hand sides.

use super::args::{batch_then, char_attr, counted, expect_counts, expect_dims, split_batch};
use super::scalar::Real;
use hlojit_ffi::handler::{Call, Error, HandlerResult};

/// How the triangular matrix enters the equation (LAPACK's `side`, `uplo`, `transa`, `diag`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// `op(A)·X = alpha·B` when true, `X·op(A) = alpha·B` otherwise.
    pub left: bool,
    /// `A`'s lower triangle holds it (the other one is not read).
    pub lower: bool,
    /// `op(A) = Aᵀ` (for real types `'C'` means the same).
    pub transpose: bool,
    /// `A`'s diagonal is taken as ones and not read.
    pub unit_diagonal: bool,
}

/// Overwrites the column-major `m` x `n` matrix `b` with the solution `X`; `a` is column-major
/// `k` x `k` with `k = m` (left) or `n` (right).
pub fn trsm<T: Real>(opts: Options, m: usize, n: usize, alpha: T, a: &[T], b: &mut [T]) {
    if alpha != T::ONE {
        for x in b.iter_mut() {
            *x = alpha * *x;
        }
    }
    let k = if opts.left { m } else { n };
    // Element (i, j) of the triangle T that multiplies X: op(A) on the left. On the right,
    // X·op(A) = B is solved row by row as op(A)ᵀ·xᵀ = bᵀ, so T = op(A)ᵀ there.
    let transposed = opts.transpose == opts.left;
    let t = |i: usize, j: usize| if transposed { a[i * k + j] } else { a[j * k + i] };
    let lower = opts.lower != transposed;
    let (count, stride, step) = if opts.left { (n, m, 1) } else { (m, 1, m) };
    // Each right-hand side is the k elements of b starting at r*stride, step apart.
    for r in 0..count {
        let at = |i: usize| r * stride + i * step;
        for idx in 0..k {
            // Forward substitution for a lower triangle, backward for an upper one.
            let i = if lower { idx } else { k - 1 - idx };
            let solved = if lower { 0..i } else { i + 1..k };
            let mut x = b[at(i)];
            for j in solved {
                x -= t(i, j) * b[at(j)];
            }
            b[at(i)] = if opts.unit_diagonal { x } else { x / t(i, i) };
        }
    }
}

/// The `lapack_?trsm_ffi` handler: `(a, b[, alpha]) -> (x)` with attributes `side`
/// (`'L'`/`'R'`), `uplo` (`'L'`/`'U'`), `trans_x` (`'N'`/`'T'`/`'C'`) and `diag`
/// (`'N'`/`'U'`). Older jaxlib passes `alpha` as a third, scalar argument; newer solves with
/// alpha = 1.
pub fn handler<T: Real>(mut call: Call<'_>) -> HandlerResult {
    expect_counts(call.args.len(), call.rets.len(), &[2, 3], 1)?;
    let opts = Options {
        left: char_attr(&call.attrs, "side", b"LR")? == b'L',
        lower: char_attr(&call.attrs, "uplo", b"LU")? == b'L',
        transpose: char_attr(&call.attrs, "trans_x", b"NTC")? != b'N',
        unit_diagonal: char_attr(&call.attrs, "diag", b"NU")? == b'U',
    };
    let a = call.arg(0)?;
    let bm = call.arg(1)?;
    let alpha = match call.args.get(2) {
        Some(s) => {
            let s = s.as_slice::<T>()?;
            *s.first().ok_or_else(|| Error::invalid_argument("alpha is empty"))?
        }
        None => T::ONE,
    };
    let dims = bm.dims();
    let b = split_batch(dims, "the right-hand side")?;
    let k = if opts.left { b.rows } else { b.cols };
    expect_dims(a.dims(), &batch_then(dims, &[k as i64, k as i64]), "the triangular matrix")?;
    let a = a.as_slice::<T>()?;
    let rhs = bm.as_slice::<T>()?;
    let [out, ..] = &mut call.rets[..] else { return Err(counted()) };
    expect_dims(out.dims(), dims, "the solution result")?;
    let out = out.as_mut_slice::<T>()?;
    out.copy_from_slice(rhs);
    let len = b.matrix_len();
    for i in 0..b.count {
        trsm(opts, b.rows, b.cols, alpha, &a[i * k * k..(i + 1) * k * k], &mut out[i * len..(i + 1) * len]);
    }
    Ok(())
}
