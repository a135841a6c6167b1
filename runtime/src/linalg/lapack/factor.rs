//! Triangular solves, LU, Cholesky and QR (plain and pivoted, Q formed or applied), and the
//! general tridiagonal solver: jaxlib's `lapack_?trsm_ffi`, `?getrf`, `?potrf`, `?geqrf`,
//! `?geqp3`, `?orgqr`/`?ungqr`, `?ormqr`/`?unmqr` and `?gtsv` targets with their operands,
//! results and attributes (column-major matrices after leading batch dimensions).

use super::io::{arg, copy_in, int, ld, prefix_then, queried, ret, scratch};
use super::sys::Scalar;
use crate::linalg::args::{expect_counts, char_attr, expect_dims, split_batch};
use hlojit_ffi::handler::{Call, Error, HandlerResult};
use hlojit_ffi::xla::XLA_FFI_DataType_S32 as S32;
use std::ptr::null_mut;

/// `(a, b) -> b_out`: solves `op(A)·X = B` or `X·op(A) = B` with alpha = 1 (older jaxlib
/// passes alpha as a third, scalar operand: `op(A)·X = alpha·B`).
pub fn trsm<T: Scalar>(mut call: Call<'_>) -> HandlerResult {
    expect_counts(call.args.len(), call.rets.len(), &[2, 3], 1)?;
    let alpha = if call.args.len() == 3 {
        let (p, dims) = arg::<T>(&call, 2, T::DTYPE, "alpha")?;
        expect_dims(dims, &[], "alpha")?;
        // SAFETY: a scalar buffer of the checked type.
        unsafe { *p }
    } else {
        T::one()
    };
    let side = char_attr(&call.attrs, "side", b"LR")?;
    let uplo = char_attr(&call.attrs, "uplo", b"LU")?;
    let trans = char_attr(&call.attrs, "trans_x", b"NTC")?;
    let diag = char_attr(&call.attrs, "diag", b"NU")?;
    let (a, adims) = arg::<T>(&call, 0, T::DTYPE, "the triangular matrix")?;
    let (b, bdims) = arg::<T>(&call, 1, T::DTYPE, "the right-hand side")?;
    let bb = split_batch(bdims, "the right-hand side")?;
    let k = if side == b'L' { bb.rows } else { bb.cols };
    expect_dims(adims, &prefix_then(bdims, 2, &[k as i64, k as i64]), "the triangular matrix")?;
    let (out, odims) = ret::<T>(&mut call, 0, T::DTYPE, "the solution")?;
    expect_dims(odims, bdims, "the solution")?;
    let (m, n, kk) = (int(bb.rows, "rows")?, int(bb.cols, "columns")?, int(k, "order")?);
    unsafe {
        copy_in(b, out, bb.count * bb.matrix_len());
        if bb.matrix_len() == 0 {
            return Ok(());
        }
        for i in 0..bb.count {
            T::trsm(side, uplo, trans, diag, m, n, alpha, a.add(i * k * k), ld(kk), out.add(i * bb.matrix_len()), ld(m))?;
        }
    }
    Ok(())
}

/// `(a) -> (lu, ipiv: s32[..., min(m,n)], info: s32[...])`.
pub fn getrf<T: Scalar>(mut call: Call<'_>) -> HandlerResult {
    expect_counts(call.args.len(), call.rets.len(), &[1], 3)?;
    let (x, dims) = arg::<T>(&call, 0, T::DTYPE, "the matrix")?;
    let b = split_batch(dims, "the matrix")?;
    let k = b.rows.min(b.cols);
    let (out, od) = ret::<T>(&mut call, 0, T::DTYPE, "the factor result")?;
    expect_dims(od, dims, "the factor result")?;
    let (ipiv, pd) = ret::<i32>(&mut call, 1, S32, "the pivots result")?;
    expect_dims(pd, &prefix_then(dims, 2, &[k as i64]), "the pivots result")?;
    let (info, id) = ret::<i32>(&mut call, 2, S32, "the info result")?;
    expect_dims(id, &prefix_then(dims, 2, &[]), "the info result")?;
    let (m, n) = (int(b.rows, "rows")?, int(b.cols, "columns")?);
    unsafe {
        copy_in(x, out, b.count * b.matrix_len());
        for i in 0..b.count {
            let mut inf = 0;
            T::getrf(m, n, out.add(i * b.matrix_len()), ld(m), ipiv.add(i * k), &mut inf)?;
            *info.add(i) = inf;
        }
    }
    Ok(())
}

/// `(a) -> (factor, info)`, attribute `uplo`; the other triangle keeps its input.
pub fn potrf<T: Scalar>(mut call: Call<'_>) -> HandlerResult {
    expect_counts(call.args.len(), call.rets.len(), &[1], 2)?;
    let uplo = char_attr(&call.attrs, "uplo", b"LU")?;
    let (x, dims) = arg::<T>(&call, 0, T::DTYPE, "the matrix")?;
    let b = split_batch(dims, "the matrix")?;
    if b.rows != b.cols {
        return Err(Error::invalid_argument(format!("the matrix must be square, has shape {dims:?}")));
    }
    let (out, od) = ret::<T>(&mut call, 0, T::DTYPE, "the factor result")?;
    expect_dims(od, dims, "the factor result")?;
    let (info, id) = ret::<i32>(&mut call, 1, S32, "the info result")?;
    expect_dims(id, &prefix_then(dims, 2, &[]), "the info result")?;
    let n = int(b.rows, "order")?;
    unsafe {
        copy_in(x, out, b.count * b.matrix_len());
        for i in 0..b.count {
            let mut inf = 0;
            T::potrf(uplo, n, out.add(i * b.matrix_len()), ld(n), &mut inf)?;
            *info.add(i) = inf;
        }
    }
    Ok(())
}

/// `(a) -> (r_and_householder, tau: [..., min(m,n)])`.
pub fn geqrf<T: Scalar>(mut call: Call<'_>) -> HandlerResult {
    expect_counts(call.args.len(), call.rets.len(), &[1], 2)?;
    let (x, dims) = arg::<T>(&call, 0, T::DTYPE, "the matrix")?;
    let b = split_batch(dims, "the matrix")?;
    let k = b.rows.min(b.cols);
    let (out, od) = ret::<T>(&mut call, 0, T::DTYPE, "the factor result")?;
    expect_dims(od, dims, "the factor result")?;
    let (tau, td) = ret::<T>(&mut call, 1, T::DTYPE, "the tau result")?;
    expect_dims(td, &prefix_then(dims, 2, &[k as i64]), "the tau result")?;
    let (m, n) = (int(b.rows, "rows")?, int(b.cols, "columns")?);
    unsafe {
        copy_in(x, out, b.count * b.matrix_len());
        let mut q = T::zero();
        let mut inf = 0;
        T::geqrf(m, n, null_mut(), ld(m), null_mut(), &mut q, -1, &mut inf)?;
        let mut work = scratch::<T>(queried(q.real_part()))?;
        let lwork = int(work.len(), "workspace")?;
        for i in 0..b.count {
            T::geqrf(m, n, out.add(i * b.matrix_len()), ld(m), tau.add(i * k), work.as_mut_ptr(), lwork, &mut inf)?;
        }
    }
    Ok(())
}

/// `(a, jpvt: s32[..., n]) -> (r_and_householder, jpvt_out, tau)`: QR with column pivoting;
/// a nonzero `jpvt[j]` (1-based) fixes column `j` to the front, as LAPACK documents.
pub fn geqp3<T: Scalar>(mut call: Call<'_>) -> HandlerResult {
    expect_counts(call.args.len(), call.rets.len(), &[2], 3)?;
    let (x, dims) = arg::<T>(&call, 0, T::DTYPE, "the matrix")?;
    let b = split_batch(dims, "the matrix")?;
    let k = b.rows.min(b.cols);
    let (jpvt, jd) = arg::<i32>(&call, 1, S32, "the pivots")?;
    let jdims = prefix_then(dims, 2, &[b.cols as i64]);
    expect_dims(jd, &jdims, "the pivots")?;
    let (out, od) = ret::<T>(&mut call, 0, T::DTYPE, "the factor result")?;
    expect_dims(od, dims, "the factor result")?;
    let (jout, jod) = ret::<i32>(&mut call, 1, S32, "the pivots result")?;
    expect_dims(jod, &jdims, "the pivots result")?;
    let (tau, td) = ret::<T>(&mut call, 2, T::DTYPE, "the tau result")?;
    expect_dims(td, &prefix_then(dims, 2, &[k as i64]), "the tau result")?;
    let (m, n) = (int(b.rows, "rows")?, int(b.cols, "columns")?);
    unsafe {
        copy_in(x, out, b.count * b.matrix_len());
        copy_in(jpvt, jout, b.count * b.cols);
        let mut q = T::zero();
        let mut inf = 0;
        let mut rwork = scratch::<T::Real>(2 * b.cols)?;
        T::geqp3(m, n, null_mut(), ld(m), null_mut(), null_mut(), &mut q, -1, rwork.as_mut_ptr(), &mut inf)?;
        let mut work = scratch::<T>(queried(q.real_part()))?;
        let lwork = int(work.len(), "workspace")?;
        for i in 0..b.count {
            T::geqp3(m, n, out.add(i * b.matrix_len()), ld(m), jout.add(i * b.cols), tau.add(i * k), work.as_mut_ptr(), lwork, rwork.as_mut_ptr(), &mut inf)?;
        }
    }
    Ok(())
}

/// `(householder, tau: [..., k]) -> q`: the first `n` columns of `Q = H(1)···H(k)`.
pub fn orgqr<T: Scalar>(mut call: Call<'_>) -> HandlerResult {
    expect_counts(call.args.len(), call.rets.len(), &[2], 1)?;
    let (x, dims) = arg::<T>(&call, 0, T::DTYPE, "the Householder vectors")?;
    let b = split_batch(dims, "the Householder vectors")?;
    let (tau, td) = arg::<T>(&call, 1, T::DTYPE, "tau")?;
    let k = td.last().copied().unwrap_or(-1);
    expect_dims(td, &prefix_then(dims, 2, &[k]), "tau")?;
    if k < 0 || k as usize > b.cols || b.cols > b.rows {
        return Err(Error::invalid_argument(format!("orgqr needs rows >= columns >= k, got {dims:?} and k = {k}")));
    }
    let (out, od) = ret::<T>(&mut call, 0, T::DTYPE, "the Q result")?;
    expect_dims(od, dims, "the Q result")?;
    let k = k as usize;
    let (m, n, kk) = (int(b.rows, "rows")?, int(b.cols, "columns")?, int(k, "k")?);
    unsafe {
        copy_in(x, out, b.count * b.matrix_len());
        let mut q = T::zero();
        let mut inf = 0;
        T::orgqr(m, n, kk, null_mut(), ld(m), std::ptr::null(), &mut q, -1, &mut inf)?;
        let mut work = scratch::<T>(queried(q.real_part()))?;
        let lwork = int(work.len(), "workspace")?;
        for i in 0..b.count {
            T::orgqr(m, n, kk, out.add(i * b.matrix_len()), ld(m), tau.add(i * k), work.as_mut_ptr(), lwork, &mut inf)?;
        }
    }
    Ok(())
}

/// `(householder, tau, c) -> c_out`: `Q·C`, `Qᴴ·C`, `C·Q` or `C·Qᴴ` by the boolean attributes
/// `left` and `transpose` (conjugate transpose for complex types, as jaxlib does).
pub fn ormqr<T: Scalar>(mut call: Call<'_>) -> HandlerResult {
    expect_counts(call.args.len(), call.rets.len(), &[3], 1)?;
    let left = call.attrs.bool("left")?;
    let transpose = call.attrs.bool("transpose")?;
    let (a, adims) = arg::<T>(&call, 0, T::DTYPE, "the Householder vectors")?;
    let ab = split_batch(adims, "the Householder vectors")?;
    let (tau, td) = arg::<T>(&call, 1, T::DTYPE, "tau")?;
    let (c, cdims) = arg::<T>(&call, 2, T::DTYPE, "the matrix C")?;
    let cb = split_batch(cdims, "the matrix C")?;
    let k = td.last().copied().unwrap_or(-1);
    expect_dims(td, &prefix_then(cdims, 2, &[k]), "tau")?;
    let order = if left { cb.rows } else { cb.cols };
    if k < 0 || k as usize > order || ab.rows != order || (k as usize) > ab.cols || ab.count != cb.count {
        return Err(Error::invalid_argument(format!(
            "ormqr shapes do not fit: Householder vectors {adims:?}, tau {td:?}, C {cdims:?}"
        )));
    }
    let (out, od) = ret::<T>(&mut call, 0, T::DTYPE, "the result")?;
    expect_dims(od, cdims, "the result")?;
    let side = if left { b'L' } else { b'R' };
    let trans = match (transpose, T::COMPLEX) {
        (false, _) => b'N',
        (true, true) => b'C',
        (true, false) => b'T',
    };
    let k = k as usize;
    let (m, n, kk, lda) = (int(cb.rows, "rows")?, int(cb.cols, "columns")?, int(k, "k")?, int(ab.rows, "rows")?);
    unsafe {
        copy_in(c, out, cb.count * cb.matrix_len());
        let mut q = T::zero();
        let mut inf = 0;
        T::ormqr(side, trans, m, n, kk, std::ptr::null(), ld(lda), std::ptr::null(), null_mut(), ld(m), &mut q, -1, &mut inf)?;
        let mut work = scratch::<T>(queried(q.real_part()))?;
        let lwork = int(work.len(), "workspace")?;
        for i in 0..cb.count {
            T::ormqr(side, trans, m, n, kk, a.add(i * ab.matrix_len()), ld(lda), tau.add(i * k), out.add(i * cb.matrix_len()), ld(m), work.as_mut_ptr(), lwork, &mut inf)?;
        }
    }
    Ok(())
}

/// `(dl, d, du, b) -> (dl_out, d_out, du_out, b_out, info)`: LAPACK's `gtsv` on each system
/// of `b: [..., n, nrhs]`; `dl[0]` and `du[n-1]` are padding (jaxlib passes `dl + 1`).
pub fn gtsv<T: Scalar>(mut call: Call<'_>) -> HandlerResult {
    expect_counts(call.args.len(), call.rets.len(), &[4], 5)?;
    let (bp, bdims) = arg::<T>(&call, 3, T::DTYPE, "the right-hand side")?;
    let b = split_batch(bdims, "the right-hand side")?;
    let ddims = prefix_then(bdims, 1, &[]);
    let mut diags = [(std::ptr::null::<T>(), null_mut::<T>()); 3];
    for (j, name) in ["the subdiagonal", "the diagonal", "the superdiagonal"].into_iter().enumerate() {
        let (p, dims) = arg::<T>(&call, j, T::DTYPE, name)?;
        expect_dims(dims, &ddims, name)?;
        let (o, od) = ret::<T>(&mut call, j, T::DTYPE, name)?;
        expect_dims(od, &ddims, name)?;
        diags[j] = (p, o);
    }
    let (bout, bod) = ret::<T>(&mut call, 3, T::DTYPE, "the solution")?;
    expect_dims(bod, bdims, "the solution")?;
    let (info, id) = ret::<i32>(&mut call, 4, S32, "the info result")?;
    expect_dims(id, &prefix_then(bdims, 2, &[]), "the info result")?;
    let (n, nrhs) = (int(b.rows, "order")?, int(b.cols, "right-hand sides")?);
    unsafe {
        for (p, o) in diags {
            copy_in(p, o, b.count * b.rows);
        }
        copy_in(bp, bout, b.count * b.matrix_len());
        for i in 0..b.count {
            let mut inf = 0;
            if n > 0 {
                let [dl, d, du] = diags.map(|(_, o)| o.add(i * b.rows));
                T::gtsv(n, nrhs, dl.add(1), d, du, bout.add(i * b.matrix_len()), ld(n), &mut inf)?;
            }
            *info.add(i) = inf;
        }
    }
    Ok(())
}
