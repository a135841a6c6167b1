//! `geqrf` (QR factorization by Householder reflections) and `orgqr` (forming `Q` from them).

use super::args::{batch_then, counted, expect_counts, expect_dims, split_batch};
use super::scalar::{norm2, Real};
use hlojit_ffi::handler::{Call, Error, HandlerResult};

/// Builds the reflector `H = I - tau·v·vᵀ` with `H·x = (beta, 0, ..., 0)` for `x = col`
/// (`col[0]` is alpha). LAPACK's `larfg` conventions: `beta = -sign(alpha)·‖x‖`,
/// `tau = (beta - alpha) / beta`, `v[0] = 1` implicit and `v[1..]` stored in `col[1..]`;
/// `tau = 0` (H = I) when `x[1..]` is already zero. Leaves `beta` in `col[0]`, returns `tau`.
fn reflector<T: Real>(col: &mut [T]) -> T {
    let alpha = col[0];
    let xnorm = norm2(col[1..].iter().copied());
    if xnorm == T::ZERO {
        return T::ZERO;
    }
    let norm = norm2([alpha, xnorm].into_iter());
    let beta = if alpha >= T::ZERO { -norm } else { norm };
    let tau = (beta - alpha) / beta;
    let scale = T::ONE / (alpha - beta);
    for v in &mut col[1..] {
        *v *= scale;
    }
    col[0] = beta;
    tau
}

/// Applies `H = I - tau·v·vᵀ` from the left to columns `cols` of the column-major `a`
/// (`m` rows), where `v` is `(1, a[r+1..m, vc])`, the reflector stored in column `vc` below
/// row `r`; only rows `r..m` change.
fn apply_left<T: Real>(a: &mut [T], m: usize, r: usize, vc: usize, tau: T, cols: std::ops::Range<usize>) {
    if tau == T::ZERO {
        return;
    }
    for c in cols {
        let mut w = a[c * m + r];
        for i in r + 1..m {
            w += a[vc * m + i] * a[c * m + i];
        }
        let tw = tau * w;
        a[c * m + r] -= tw;
        for i in r + 1..m {
            let v = a[vc * m + i];
            a[c * m + i] -= tw * v;
        }
    }
}

/// Factors the column-major `m` x `n` matrix `a` in place: `R` on and above the diagonal, the
/// reflectors' vectors below it, their scalars in `tau` (`min(m, n)` of them), so that
/// `A = H(0)·H(1)···H(k-1)·R`.
pub fn geqrf<T: Real>(a: &mut [T], m: usize, n: usize, tau: &mut [T]) {
    for j in 0..m.min(n) {
        tau[j] = reflector(&mut a[j * m + j..(j + 1) * m]);
        apply_left(a, m, j, j, tau[j], j + 1..n);
    }
}

/// Overwrites the column-major `m` x `n` matrix `a` (`m >= n`), which holds `k = tau.len()`
/// reflectors as [`geqrf`] left them, with the first `n` columns of `Q = H(0)···H(k-1)`.
pub fn orgqr<T: Real>(a: &mut [T], m: usize, n: usize, tau: &[T]) {
    let k = tau.len();
    // Columns past the reflectors start as identity columns.
    for c in k..n {
        a[c * m..(c + 1) * m].fill(T::ZERO);
        if c < m {
            a[c * m + c] = T::ONE;
        }
    }
    // Q is accumulated backwards: each H(i) only touches rows and columns from i on.
    for i in (0..k).rev() {
        if i + 1 < n {
            a[i * m + i] = T::ONE;
            apply_left(a, m, i, i, tau[i], i + 1..n);
        }
        for r in i + 1..m {
            a[i * m + r] = -tau[i] * a[i * m + r];
        }
        a[i * m + i] = T::ONE - tau[i];
        a[i * m..i * m + i].fill(T::ZERO);
    }
}

/// The `lapack_?geqrf_ffi` handler: `(a) -> (qr, tau: [..., min(m,n)])`; results after
/// those (older jaxlib's `info` and workspace) are ignored.
pub fn geqrf_handler<T: Real>(mut call: Call<'_>) -> HandlerResult {
    expect_counts(call.args.len(), call.rets.len(), &[1], 2)?;
    let x = call.arg(0)?;
    let dims = x.dims();
    let b = split_batch(dims, "the matrix")?;
    let k = b.rows.min(b.cols);
    let input = x.as_slice::<T>()?;
    let [out, tau, ..] = &mut call.rets[..] else { return Err(counted()) };
    expect_dims(out.dims(), dims, "the factor result")?;
    expect_dims(tau.dims(), &batch_then(dims, &[k as i64]), "the tau result")?;
    let out = out.as_mut_slice::<T>()?;
    let tau = tau.as_mut_slice::<T>()?;
    out.copy_from_slice(input);
    let len = b.matrix_len();
    for i in 0..b.count {
        geqrf(&mut out[i * len..(i + 1) * len], b.rows, b.cols, &mut tau[i * k..(i + 1) * k]);
    }
    Ok(())
}

/// The `lapack_?orgqr_ffi` handler: `(a, tau) -> (q)` for `a` of `m` x `n` (`m >= n`) and
/// `k <= n` reflectors; later results (older jaxlib's `info` and workspace) are ignored.
pub fn orgqr_handler<T: Real>(mut call: Call<'_>) -> HandlerResult {
    expect_counts(call.args.len(), call.rets.len(), &[2], 1)?;
    let x = call.arg(0)?;
    let t = call.arg(1)?;
    let dims = x.dims();
    let b = split_batch(dims, "the matrix")?;
    let k = t.dims().last().copied().unwrap_or(-1);
    expect_dims(t.dims(), &batch_then(dims, &[k.max(0)]), "tau")?;
    let k = k as usize;
    if b.rows < b.cols || k > b.cols {
        return Err(Error::invalid_argument(format!(
            "orgqr needs rows >= columns >= reflectors, got a {}x{} matrix and {k} reflectors",
            b.rows, b.cols
        )));
    }
    let input = x.as_slice::<T>()?;
    let tau = t.as_slice::<T>()?;
    let [out, ..] = &mut call.rets[..] else { return Err(counted()) };
    expect_dims(out.dims(), dims, "the Q result")?;
    let out = out.as_mut_slice::<T>()?;
    out.copy_from_slice(input);
    let len = b.matrix_len();
    for i in 0..b.count {
        orgqr(&mut out[i * len..(i + 1) * len], b.rows, b.cols, &tau[i * k..(i + 1) * k]);
    }
    Ok(())
}
