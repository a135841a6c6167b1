//! `tridiagonal_solve_perturbed_ffi`: jaxlib's own tridiagonal solver (not a LAPACK routine),
//! which `jax.scipy.linalg.eigh_tridiagonal` uses for inverse iteration. Gaussian elimination
//! with partial pivoting as LAPACK's `?lagtf` + `?lagts` do it, where tiny pivots of a
//! numerically singular matrix are perturbed by `eps·max|U|` instead of failing. The steps
//! and their order follow jaxlib's `tridiagonal_solve_perturbed.h`, so results agree to the
//! last bit where the arithmetic does.
//!
//! `(dl, d, du, b) -> x`, all of one element type (f32, f64, c64, c128); `dl`, `d`, `du` are
//! `[..., n]` (`dl[0]` and `du[n-1]` unused), `b` and `x` are `[..., n, k]` column-major.

use super::args::{expect_dims, split_batch};
use super::field::Tri;
use hlojit_ffi::handler::{dtype_name, Call, Error, HandlerResult};
use hlojit_ffi::xla::{XLA_FFI_DataType_C128, XLA_FFI_DataType_C64, XLA_FFI_DataType_F32, XLA_FFI_DataType_F64};
use num_complex::Complex;

/// The handler: dispatches on the element type, as jaxlib's takes any buffer type.
pub fn handler(call: Call<'_>) -> HandlerResult {
    call.expect_arity(4, 1)?;
    let dtype = call.arg(1)?.dtype();
    if dtype == XLA_FFI_DataType_F32 {
        solve_all::<f32>(call)
    } else if dtype == XLA_FFI_DataType_F64 {
        solve_all::<f64>(call)
    } else if dtype == XLA_FFI_DataType_C64 {
        solve_all::<Complex<f32>>(call)
    } else if dtype == XLA_FFI_DataType_C128 {
        solve_all::<Complex<f64>>(call)
    } else {
        Err(Error::invalid_argument(format!("tridiagonal_solve_perturbed: unsupported element type {}", dtype_name(dtype))))
    }
}

fn solve_all<T: Tri>(mut call: Call<'_>) -> HandlerResult {
    for i in 0..4 {
        if call.args[i].dtype() != T::DTYPE {
            return Err(Error::invalid_argument("tridiagonal_solve_perturbed: all types must match"));
        }
    }
    if call.rets[0].dtype() != T::DTYPE {
        return Err(Error::invalid_argument("tridiagonal_solve_perturbed: all types must match"));
    }
    let bdims = call.args[3].dims();
    let b = split_batch(bdims, "the right-hand side")?;
    let ddims = &bdims[..bdims.len() - 1];
    for (i, name) in ["the subdiagonal", "the diagonal", "the superdiagonal"].into_iter().enumerate() {
        expect_dims(call.args[i].dims(), ddims, name)?;
    }
    expect_dims(call.rets[0].dims(), bdims, "the solution")?;
    let (n, k) = (b.rows, b.cols);
    // Copies of the operands: the result may alias `b` (and the slices must not overlap).
    let read = |i: usize| -> Vec<T> {
        let a = call.args[i];
        // SAFETY: the buffer holds `element_count` elements of the checked type.
        unsafe { std::slice::from_raw_parts(a.data() as *const T, a.element_count()) }.to_vec()
    };
    let (dl, d, du, rhs) = (read(0), read(1), read(2), read(3));
    let out = &mut call.rets[0];
    let len = out.element_count();
    // SAFETY: as above, for the result.
    let x = unsafe { std::slice::from_raw_parts_mut(out.data() as *mut T, len) };
    let mut u = vec![T::zero(); n * 3];
    let mut row = vec![T::zero(); k];
    for i in 0..b.count {
        let s = i * n;
        let m = i * n * k;
        solve(n, k, &dl[s..s + n], &d[s..s + n], &du[s..s + n], &rhs[m..m + n * k], &mut x[m..m + n * k], &mut u, &mut row);
    }
    Ok(())
}

/// Adjusts `pivot` so that neither `row / pivot` nor `1 / pivot` overflows (from `?lagts`).
fn maybe_perturb<T: Tri>(perturb: T::R, pivot: &mut T, row: &mut [T]) {
    let one = T::r(1.0);
    let tiny = T::min_positive();
    let small = one / T::max_value();
    let safemin = if small < tiny { tiny } else { small * (one + T::epsilon()) };
    let bignum = one / safemin;
    let mut abs_pivot = pivot.abs();
    if abs_pivot >= one {
        return;
    }
    let mut perturb = T::copysign(T::rmax(T::rabs(perturb), safemin), pivot.re());
    let max_factor = row.iter().fold(T::r(0.0), |m, v| T::rmax(m, v.abs()));
    let mut stop = false;
    while abs_pivot < one && !stop {
        if abs_pivot < safemin {
            if abs_pivot == T::r(0.0) || max_factor * safemin > abs_pivot {
                *pivot = pivot.add_re(perturb);
                perturb = perturb * T::r(2.0);
            } else {
                *pivot = pivot.scale(bignum);
                row.iter_mut().for_each(|v| *v = v.scale(bignum));
                stop = true;
            }
        } else if max_factor > abs_pivot * bignum {
            *pivot = pivot.add_re(perturb);
            perturb = perturb * T::r(2.0);
        } else {
            stop = true;
        }
        abs_pivot = pivot.abs();
    }
}

/// Solves one system; `u` (3n) and `row` (k) are workspace.
#[allow(clippy::too_many_arguments)]
fn solve<T: Tri>(n: usize, k: usize, sub: &[T], diag: &[T], sup: &[T], rhs: &[T], x: &mut [T], u: &mut [T], row: &mut [T]) {
    let zero = T::zero();
    let at = |r: usize, c: usize| c * n + r;
    if n == 0 {
        return;
    }
    if n == 1 {
        let mut p = diag[0];
        let perturb = T::epsilon() * p.abs();
        for j in 0..k {
            row[j] = rhs[at(0, j)];
        }
        maybe_perturb(perturb, &mut p, row);
        for j in 0..k {
            x[at(0, j)] = row[j].div_c(p);
        }
        return;
    }
    // u(i, 0..3): U's diagonal and two superdiagonals (column-major n x 3).
    u.iter_mut().for_each(|v| *v = zero);
    let ui = |r: usize, c: usize| c * n + r;
    u[ui(0, 0)] = diag[0];
    u[ui(0, 1)] = sup[0];
    let mut max_abs_u = T::rmax(u[ui(0, 0)].abs(), u[ui(0, 1)].abs());
    let mut scale1 = u[ui(0, 0)].abs() + u[ui(0, 1)].abs();
    for j in 0..k {
        x[at(0, j)] = rhs[at(0, j)];
    }
    for kk in 0..n - 1 {
        u[ui(kk + 1, 0)] = diag[kk + 1];
        let mut scale2 = sub[kk + 1].abs() + u[ui(kk + 1, 0)].abs();
        if kk < n - 2 {
            scale2 = scale2 + sup[kk + 1].abs();
        }
        if sub[kk + 1] == zero {
            scale1 = scale2;
            u[ui(kk + 1, 1)] = sup[kk + 1];
            u[ui(kk, 2)] = zero;
            for j in 0..k {
                x[at(kk + 1, j)] = rhs[at(kk + 1, j)];
            }
        } else {
            let piv1 = if u[ui(kk, 0)] == zero { T::r(0.0) } else { u[ui(kk, 0)].abs() / scale1 };
            let piv2 = sub[kk + 1].abs() / scale2;
            if piv2 <= piv1 {
                scale1 = scale2;
                let factor = sub[kk + 1].div_c(u[ui(kk, 0)]);
                u[ui(kk + 1, 0)] = u[ui(kk + 1, 0)] - factor * u[ui(kk, 1)];
                u[ui(kk + 1, 1)] = sup[kk + 1];
                u[ui(kk, 2)] = zero;
                for j in 0..k {
                    x[at(kk + 1, j)] = rhs[at(kk + 1, j)] - factor * x[at(kk, j)];
                }
            } else {
                let factor = u[ui(kk, 0)].div_c(sub[kk + 1]);
                let utmp = u[ui(kk, 1)];
                u[ui(kk, 0)] = sub[kk + 1];
                u[ui(kk + 1, 0)] = utmp - factor * diag[kk + 1];
                u[ui(kk, 1)] = diag[kk + 1];
                if kk < n - 2 {
                    u[ui(kk, 2)] = sup[kk + 1];
                    u[ui(kk + 1, 1)] = -(factor * sup[kk + 1]);
                }
                for j in 0..k {
                    x[at(kk + 1, j)] = x[at(kk, j)] - factor * rhs[at(kk + 1, j)];
                    x[at(kk, j)] = rhs[at(kk + 1, j)];
                }
                scale1 = u[ui(kk + 1, 0)].abs() + u[ui(kk + 1, 1)].abs();
            }
        }
        if kk < n - 2 {
            for c in 0..3 {
                max_abs_u = T::rmax(max_abs_u, u[ui(kk, c)].abs());
            }
        }
    }
    max_abs_u = T::rmax(max_abs_u, u[ui(n - 1, 0)].abs());
    let perturb = T::epsilon() * max_abs_u;
    let one = T::one();
    // Back substitution.
    let mut p = u[ui(n - 1, 0)];
    for j in 0..k {
        row[j] = x[at(n - 1, j)];
    }
    maybe_perturb(perturb, &mut p, row);
    let inv = one.div_c(p);
    for j in 0..k {
        x[at(n - 1, j)] = row[j] * inv;
    }
    p = u[ui(n - 2, 0)];
    for j in 0..k {
        row[j] = x[at(n - 2, j)] - u[ui(n - 2, 1)] * x[at(n - 1, j)];
    }
    maybe_perturb(T::copysign(perturb, p.re()), &mut p, row);
    let inv = one.div_c(p);
    for j in 0..k {
        x[at(n - 2, j)] = row[j] * inv;
    }
    for kk in (0..n.saturating_sub(2)).rev() {
        p = u[ui(kk, 0)];
        for j in 0..k {
            row[j] = x[at(kk, j)] - u[ui(kk, 1)] * x[at(kk + 1, j)] - u[ui(kk, 2)] * x[at(kk + 2, j)];
        }
        maybe_perturb(T::copysign(perturb, p.re()), &mut p, row);
        let inv = one.div_c(p);
        for j in 0..k {
            x[at(kk, j)] = row[j] * inv;
        }
    }
}
