//! Eigen-decompositions and the reductions they start from: jaxlib's `lapack_?syevd_ffi` /
//! `?heevd`, `?geev`, `?gees`, `?gehrd` and `?sytrd` / `?hetrd` targets.

use super::io::{arg, copy_in, int, ld, prefix_then, queried, ret, scratch};
use super::sys::{ComplexEig, RealEig, Scalar};
use crate::linalg::args::{expect_counts, char_attr, expect_dims, split_batch, Batch};
use hlojit_ffi::handler::{Call, Error, HandlerResult};
use hlojit_ffi::xla::{XLA_FFI_DataType_S32 as S32, XLA_FFI_Error_Code_UNIMPLEMENTED};
use num_complex::Complex;
use std::ptr::null_mut;

fn square(dims: &[i64], what: &str) -> Result<Batch, Error> {
    let b = split_batch(dims, what)?;
    if b.rows != b.cols {
        return Err(Error::invalid_argument(format!("{what} must be square, has shape {dims:?}")));
    }
    Ok(b)
}

/// `(a) -> (vectors, values: real[..., n], info)`, attributes `uplo` and `mode` ('N' or 'V').
/// Workspace sizes are jaxlib's fixed formulas, not a query: LAPACK's blocking depends on
/// them, and with it the last bits of the result.
pub fn heevd<T: Scalar>(mut call: Call<'_>) -> HandlerResult {
    expect_counts(call.args.len(), call.rets.len(), &[1], 3)?;
    let uplo = char_attr(&call.attrs, "uplo", b"LU")?;
    let mode = char_attr(&call.attrs, "mode", b"NV")?;
    let (x, dims) = arg::<T>(&call, 0, T::DTYPE, "the matrix")?;
    let b = square(dims, "the matrix")?;
    let (out, od) = ret::<T>(&mut call, 0, T::DTYPE, "the eigenvectors result")?;
    expect_dims(od, dims, "the eigenvectors result")?;
    let (w, wd) = ret::<T::Real>(&mut call, 1, T::REAL_DTYPE, "the eigenvalues result")?;
    expect_dims(wd, &prefix_then(dims, 1, &[]), "the eigenvalues result")?;
    let (info, id) = ret::<i32>(&mut call, 2, S32, "the info result")?;
    expect_dims(id, &prefix_then(dims, 2, &[]), "the info result")?;
    let n = b.rows;
    let vectors = mode == b'V';
    let (lwork, lrwork) = match (T::COMPLEX, vectors) {
        (false, false) => (2 * n + 1, 1),
        (false, true) => (1 + 6 * n + 2 * n * n, 1),
        (true, false) => (n + 1, n.max(1)),
        (true, true) => (2 * n + n * n, 1 + 5 * n + 2 * n * n),
    };
    let liwork = if vectors { 3 + 5 * n } else { 1 };
    let nn = int(n, "order")?;
    let mut work = scratch::<T>(lwork)?;
    let mut rwork = scratch::<T::Real>(lrwork)?;
    let mut iwork = scratch::<i32>(liwork)?;
    let (lw, lrw, liw) = (int(lwork, "workspace")?, int(lrwork, "workspace")?, int(liwork, "workspace")?);
    unsafe {
        copy_in(x, out, b.count * b.matrix_len());
        for i in 0..b.count {
            let mut inf = 0;
            T::heevd(mode, uplo, nn, out.add(i * n * n), ld(nn), w.add(i * n), work.as_mut_ptr(), lw, rwork.as_mut_ptr(), lrw, iwork.as_mut_ptr(), liw, &mut inf)?;
            *info.add(i) = inf;
        }
    }
    Ok(())
}

/// The eigenvector attributes of `geev`: `compute_left`, `compute_right` ('N' or 'V').
fn geev_jobs(call: &Call<'_>) -> Result<(u8, u8), Error> {
    Ok((char_attr(&call.attrs, "compute_left", b"NV")?, char_attr(&call.attrs, "compute_right", b"NV")?))
}

/// Real `geev`: `(a) -> (wr, wi, vl: complex, vr: complex, info)`. LAPACK packs a complex
/// pair's vectors into two real columns; they are unpacked into conjugate complex columns.
/// A matrix with a non-finite entry is not passed to LAPACK and gets `info = -4`, as in jaxlib.
pub fn geev_real<T: RealEig<Real = T> + Float>(mut call: Call<'_>) -> HandlerResult {
    expect_counts(call.args.len(), call.rets.len(), &[1], 5)?;
    let (jobvl, jobvr) = geev_jobs(&call)?;
    let (x, dims) = arg::<T>(&call, 0, T::DTYPE, "the matrix")?;
    let b = square(dims, "the matrix")?;
    let n = b.rows;
    let vdims = prefix_then(dims, 1, &[]);
    let (wr, d0) = ret::<T>(&mut call, 0, T::DTYPE, "the eigenvalues' real parts")?;
    expect_dims(d0, &vdims, "the eigenvalues' real parts")?;
    let (wi, d1) = ret::<T>(&mut call, 1, T::DTYPE, "the eigenvalues' imaginary parts")?;
    expect_dims(d1, &vdims, "the eigenvalues' imaginary parts")?;
    let cdt = if T::DTYPE == hlojit_ffi::xla::XLA_FFI_DataType_F32 { hlojit_ffi::xla::XLA_FFI_DataType_C64 } else { hlojit_ffi::xla::XLA_FFI_DataType_C128 };
    let (vl, d2) = ret::<Complex<T>>(&mut call, 2, cdt, "the left eigenvectors")?;
    expect_dims(d2, dims, "the left eigenvectors")?;
    let (vr, d3) = ret::<Complex<T>>(&mut call, 3, cdt, "the right eigenvectors")?;
    expect_dims(d3, dims, "the right eigenvectors")?;
    let (info, id) = ret::<i32>(&mut call, 4, S32, "the info result")?;
    expect_dims(id, &prefix_then(dims, 2, &[]), "the info result")?;
    let nn = int(n, "order")?;
    let mut a = scratch::<T>(n * n)?;
    let mut pl = scratch::<T>(n * n)?;
    let mut pr = scratch::<T>(n * n)?;
    unsafe {
        let mut q = T::zero();
        let mut inf = 0;
        T::geev(jobvl, jobvr, nn, null_mut(), ld(nn), null_mut(), null_mut(), null_mut(), ld(nn), null_mut(), ld(nn), &mut q, -1, &mut inf)?;
        let mut work = scratch::<T>(queried(q.real_part()))?;
        let lwork = int(work.len(), "workspace")?;
        for i in 0..b.count {
            std::ptr::copy_nonoverlapping(x.add(i * n * n), a.as_mut_ptr(), n * n);
            if !a.iter().all(|v| v.finite()) {
                *info.add(i) = -4;
                continue;
            }
            let (wri, wii) = (wr.add(i * n), wi.add(i * n));
            T::geev(jobvl, jobvr, nn, a.as_mut_ptr(), ld(nn), wri, wii, pl.as_mut_ptr(), ld(nn), pr.as_mut_ptr(), ld(nn), work.as_mut_ptr(), lwork, &mut inf)?;
            *info.add(i) = inf;
            if inf == 0 {
                let imag = std::slice::from_raw_parts(wii, n);
                unpack(imag, &pl, std::slice::from_raw_parts_mut(vl.add(i * n * n), n * n));
                unpack(imag, &pr, std::slice::from_raw_parts_mut(vr.add(i * n * n), n * n));
            }
        }
    }
    Ok(())
}

/// Real `geev`'s packed eigenvectors as complex columns: a real eigenvalue's column as it is,
/// a complex pair's columns `j`, `j+1` as `v ± i·w`.
fn unpack<T: Scalar<Real = T> + Float>(imag: &[T], packed: &[T], out: &mut [Complex<T>]) {
    let n = imag.len();
    let mut j = 0;
    while j < n {
        if imag[j].real_part() == 0.0 || imag[j].is_nan_() || j + 1 == n {
            for i in 0..n {
                out[j * n + i] = Complex::new(packed[j * n + i], T::zero());
            }
            j += 1;
        } else {
            for i in 0..n {
                let (re, im) = (packed[j * n + i], packed[(j + 1) * n + i]);
                out[j * n + i] = Complex::new(re, im);
                out[(j + 1) * n + i] = Complex::new(re, im.neg_());
            }
            j += 2;
        }
    }
}

/// The two operations [`unpack`] needs beyond [`Scalar`].
pub mod num_traits_lite {
    pub trait Float: Copy {
        fn is_nan_(self) -> bool;
        fn neg_(self) -> Self;
    }
    impl Float for f32 {
        fn is_nan_(self) -> bool {
            self.is_nan()
        }
        fn neg_(self) -> Self {
            -self
        }
    }
    impl Float for f64 {
        fn is_nan_(self) -> bool {
            self.is_nan()
        }
        fn neg_(self) -> Self {
            -self
        }
    }
}
pub use num_traits_lite::Float;

/// Complex `geev`: `(a) -> (w, vl, vr, info)`.
pub fn geev_complex<T: ComplexEig>(mut call: Call<'_>) -> HandlerResult {
    expect_counts(call.args.len(), call.rets.len(), &[1], 4)?;
    let (jobvl, jobvr) = geev_jobs(&call)?;
    let (x, dims) = arg::<T>(&call, 0, T::DTYPE, "the matrix")?;
    let b = square(dims, "the matrix")?;
    let n = b.rows;
    let (w, d0) = ret::<T>(&mut call, 0, T::DTYPE, "the eigenvalues")?;
    expect_dims(d0, &prefix_then(dims, 1, &[]), "the eigenvalues")?;
    let (vl, d1) = ret::<T>(&mut call, 1, T::DTYPE, "the left eigenvectors")?;
    expect_dims(d1, dims, "the left eigenvectors")?;
    let (vr, d2) = ret::<T>(&mut call, 2, T::DTYPE, "the right eigenvectors")?;
    expect_dims(d2, dims, "the right eigenvectors")?;
    let (info, id) = ret::<i32>(&mut call, 3, S32, "the info result")?;
    expect_dims(id, &prefix_then(dims, 2, &[]), "the info result")?;
    let nn = int(n, "order")?;
    let mut a = scratch::<T>(n * n)?;
    let mut rwork = scratch::<T::Real>(2 * n)?;
    unsafe {
        let mut q = T::zero();
        let mut inf = 0;
        T::geev(jobvl, jobvr, nn, null_mut(), ld(nn), null_mut(), null_mut(), ld(nn), null_mut(), ld(nn), &mut q, -1, rwork.as_mut_ptr(), &mut inf)?;
        let mut work = scratch::<T>(queried(q.real_part()))?;
        let lwork = int(work.len(), "workspace")?;
        for i in 0..b.count {
            std::ptr::copy_nonoverlapping(x.add(i * n * n), a.as_mut_ptr(), n * n);
            if !a.iter().all(|v| v.finite()) {
                *info.add(i) = -4;
                continue;
            }
            T::geev(jobvl, jobvr, nn, a.as_mut_ptr(), ld(nn), w.add(i * n), vl.add(i * n * n), ld(nn), vr.add(i * n * n), ld(nn), work.as_mut_ptr(), lwork, rwork.as_mut_ptr(), &mut inf)?;
            *info.add(i) = inf;
        }
    }
    Ok(())
}

/// The attributes of `gees`: `mode` ('N' or 'V' Schur vectors) and `sort`, which jaxlib
/// only accepts as 'N' (it has no way to pass a selection function).
fn gees_attrs(call: &Call<'_>) -> Result<(u8, u8), Error> {
    let mode = char_attr(&call.attrs, "mode", b"NV")?;
    let sort = char_attr(&call.attrs, "sort", b"NS")?;
    if sort != b'N' {
        return Err(Error::new(XLA_FFI_Error_Code_UNIMPLEMENTED, "Ordering eigenvalues on the diagonal is not implemented (as in jaxlib)"));
    }
    Ok((mode, sort))
}

/// Real `gees`: `(a) -> (t, vs, wr, wi, sdim, info)`.
pub fn gees_real<T: RealEig>(mut call: Call<'_>) -> HandlerResult {
    expect_counts(call.args.len(), call.rets.len(), &[1], 6)?;
    let (mode, sort) = gees_attrs(&call)?;
    let (x, dims) = arg::<T>(&call, 0, T::DTYPE, "the matrix")?;
    let b = square(dims, "the matrix")?;
    let n = b.rows;
    let vdims = prefix_then(dims, 1, &[]);
    let sdims = prefix_then(dims, 2, &[]);
    let (t, d0) = ret::<T>(&mut call, 0, T::DTYPE, "the Schur form")?;
    expect_dims(d0, dims, "the Schur form")?;
    let (vs, d1) = ret::<T>(&mut call, 1, T::DTYPE, "the Schur vectors")?;
    expect_dims(d1, dims, "the Schur vectors")?;
    let (wr, d2) = ret::<T>(&mut call, 2, T::DTYPE, "the eigenvalues' real parts")?;
    expect_dims(d2, &vdims, "the eigenvalues' real parts")?;
    let (wi, d3) = ret::<T>(&mut call, 3, T::DTYPE, "the eigenvalues' imaginary parts")?;
    expect_dims(d3, &vdims, "the eigenvalues' imaginary parts")?;
    let (sdim, d4) = ret::<i32>(&mut call, 4, S32, "the selected count")?;
    expect_dims(d4, &sdims, "the selected count")?;
    let (info, d5) = ret::<i32>(&mut call, 5, S32, "the info result")?;
    expect_dims(d5, &sdims, "the info result")?;
    let nn = int(n, "order")?;
    unsafe {
        copy_in(x, t, b.count * n * n);
        let mut q = T::zero();
        let (mut inf, mut sd) = (0, 0);
        T::gees(mode, sort, nn, null_mut(), ld(nn), &mut sd, null_mut(), null_mut(), null_mut(), ld(nn), &mut q, -1, null_mut(), &mut inf)?;
        let mut work = scratch::<T>(queried(q.real_part()))?;
        let lwork = int(work.len(), "workspace")?;
        for i in 0..b.count {
            T::gees(mode, sort, nn, t.add(i * n * n), ld(nn), &mut sd, wr.add(i * n), wi.add(i * n), vs.add(i * n * n), ld(nn), work.as_mut_ptr(), lwork, null_mut(), &mut inf)?;
            *sdim.add(i) = sd;
            *info.add(i) = inf;
        }
    }
    Ok(())
}

/// Complex `gees`: `(a) -> (t, vs, w, sdim, info)`.
pub fn gees_complex<T: ComplexEig>(mut call: Call<'_>) -> HandlerResult {
    expect_counts(call.args.len(), call.rets.len(), &[1], 5)?;
    let (mode, sort) = gees_attrs(&call)?;
    let (x, dims) = arg::<T>(&call, 0, T::DTYPE, "the matrix")?;
    let b = square(dims, "the matrix")?;
    let n = b.rows;
    let sdims = prefix_then(dims, 2, &[]);
    let (t, d0) = ret::<T>(&mut call, 0, T::DTYPE, "the Schur form")?;
    expect_dims(d0, dims, "the Schur form")?;
    let (vs, d1) = ret::<T>(&mut call, 1, T::DTYPE, "the Schur vectors")?;
    expect_dims(d1, dims, "the Schur vectors")?;
    let (w, d2) = ret::<T>(&mut call, 2, T::DTYPE, "the eigenvalues")?;
    expect_dims(d2, &prefix_then(dims, 1, &[]), "the eigenvalues")?;
    let (sdim, d3) = ret::<i32>(&mut call, 3, S32, "the selected count")?;
    expect_dims(d3, &sdims, "the selected count")?;
    let (info, d4) = ret::<i32>(&mut call, 4, S32, "the info result")?;
    expect_dims(d4, &sdims, "the info result")?;
    let nn = int(n, "order")?;
    let mut rwork = scratch::<T::Real>(n)?;
    unsafe {
        copy_in(x, t, b.count * n * n);
        let mut q = T::zero();
        let (mut inf, mut sd) = (0, 0);
        T::gees(mode, sort, nn, null_mut(), ld(nn), &mut sd, null_mut(), null_mut(), ld(nn), &mut q, -1, rwork.as_mut_ptr(), null_mut(), &mut inf)?;
        let mut work = scratch::<T>(queried(q.real_part()))?;
        let lwork = int(work.len(), "workspace")?;
        for i in 0..b.count {
            T::gees(mode, sort, nn, t.add(i * n * n), ld(nn), &mut sd, w.add(i * n), vs.add(i * n * n), ld(nn), work.as_mut_ptr(), lwork, rwork.as_mut_ptr(), null_mut(), &mut inf)?;
            *sdim.add(i) = sd;
            *info.add(i) = inf;
        }
    }
    Ok(())
}

/// `(a) -> (h_and_householder, tau: [..., n-1], info)`, attributes `low`, `high` (LAPACK's
/// 1-based `ilo`, `ihi`).
pub fn gehrd<T: Scalar>(mut call: Call<'_>) -> HandlerResult {
    expect_counts(call.args.len(), call.rets.len(), &[1], 3)?;
    let low = call.attrs.i64("low")?;
    let high = call.attrs.i64("high")?;
    let (x, dims) = arg::<T>(&call, 0, T::DTYPE, "the matrix")?;
    let b = square(dims, "the matrix")?;
    let n = b.rows;
    let n1 = n.saturating_sub(1);
    if !(1..=n.max(1) as i64).contains(&low) || high < low.min(n as i64) || high > n as i64 {
        return Err(Error::invalid_argument(format!("gehrd needs 1 <= low <= high <= n = {n}, got low = {low}, high = {high}")));
    }
    let (out, d0) = ret::<T>(&mut call, 0, T::DTYPE, "the Hessenberg result")?;
    expect_dims(d0, dims, "the Hessenberg result")?;
    let (tau, d1) = ret::<T>(&mut call, 1, T::DTYPE, "the tau result")?;
    expect_dims(d1, &prefix_then(dims, 2, &[n1 as i64]), "the tau result")?;
    let (info, d2) = ret::<i32>(&mut call, 2, S32, "the info result")?;
    expect_dims(d2, &prefix_then(dims, 2, &[]), "the info result")?;
    let nn = int(n, "order")?;
    let (lo, hi) = (low as i32, high as i32);
    // LAPACK writes tau(1 .. n-1) and reads nothing past it; a 1x1 matrix has no tau.
    let mut tau_pad = scratch::<T>(1)?;
    unsafe {
        copy_in(x, out, b.count * n * n);
        let mut q = T::zero();
        let mut inf = 0;
        T::gehrd(nn, lo, hi, null_mut(), ld(nn), null_mut(), &mut q, -1, &mut inf)?;
        let mut work = scratch::<T>(queried(q.real_part()))?;
        let lwork = int(work.len(), "workspace")?;
        for i in 0..b.count {
            let t = if n1 == 0 { tau_pad.as_mut_ptr() } else { tau.add(i * n1) };
            T::gehrd(nn, lo, hi, out.add(i * n * n), ld(nn), t, work.as_mut_ptr(), lwork, &mut inf)?;
            *info.add(i) = inf;
        }
    }
    Ok(())
}

/// `(a) -> (reflectors, d: real[..., n], e: real[..., n-1], tau: [..., n-1], info)`,
/// attribute `uplo`: `sytrd` for real types, `hetrd` for complex ones.
pub fn hetrd<T: Scalar>(mut call: Call<'_>) -> HandlerResult {
    expect_counts(call.args.len(), call.rets.len(), &[1], 5)?;
    let uplo = char_attr(&call.attrs, "uplo", b"LU")?;
    let (x, dims) = arg::<T>(&call, 0, T::DTYPE, "the matrix")?;
    let b = square(dims, "the matrix")?;
    let n = b.rows;
    let n1 = n.saturating_sub(1);
    let (out, d0) = ret::<T>(&mut call, 0, T::DTYPE, "the reflectors result")?;
    expect_dims(d0, dims, "the reflectors result")?;
    let (d, d1) = ret::<T::Real>(&mut call, 1, T::REAL_DTYPE, "the diagonal result")?;
    expect_dims(d1, &prefix_then(dims, 1, &[]), "the diagonal result")?;
    let (e, d2) = ret::<T::Real>(&mut call, 2, T::REAL_DTYPE, "the off-diagonal result")?;
    expect_dims(d2, &prefix_then(dims, 2, &[n1 as i64]), "the off-diagonal result")?;
    let (tau, d3) = ret::<T>(&mut call, 3, T::DTYPE, "the tau result")?;
    expect_dims(d3, &prefix_then(dims, 2, &[n1 as i64]), "the tau result")?;
    let (info, d4) = ret::<i32>(&mut call, 4, S32, "the info result")?;
    expect_dims(d4, &prefix_then(dims, 2, &[]), "the info result")?;
    let nn = int(n, "order")?;
    let mut e_pad = scratch::<T::Real>(1)?;
    let mut tau_pad = scratch::<T>(1)?;
    unsafe {
        copy_in(x, out, b.count * n * n);
        let mut q = T::zero();
        let mut inf = 0;
        T::hetrd(b'L', nn, null_mut(), ld(nn), null_mut(), null_mut(), null_mut(), &mut q, -1, &mut inf)?;
        let mut work = scratch::<T>(queried(q.real_part()))?;
        let lwork = int(work.len(), "workspace")?;
        for i in 0..b.count {
            let (ei, ti) = if n1 == 0 { (e_pad.as_mut_ptr(), tau_pad.as_mut_ptr()) } else { (e.add(i * n1), tau.add(i * n1)) };
            T::hetrd(uplo, nn, out.add(i * n * n), ld(nn), d.add(i * n), ei, ti, work.as_mut_ptr(), lwork, &mut inf)?;
            *info.add(i) = inf;
        }
    }
    Ok(())
}
