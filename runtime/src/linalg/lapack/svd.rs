//! Singular value decompositions: jaxlib's `lapack_?gesdd_ffi` (divide and conquer, what
//! `jnp.linalg.svd` calls) and `lapack_?gesvd_ffi` (QR iteration, `algorithm=QR`).
//!
//! `(a) -> (a_out, s: real[..., min(m,n)], u, vt, info)` with attribute `mode`: `'A'` full
//! U (m x m) and Vᴴ (n x n), `'S'` thin ones, `'N'` none (the U and Vᴴ buffers are then
//! left as they are). Vᴴ's leading dimension is its buffer's row count, as in jaxlib.

use super::io::{arg, copy_in, int, ld, prefix_then, queried, ret, scratch};
use super::sys::Scalar;
use crate::linalg::args::{expect_counts, char_attr, expect_dims, split_batch};
use hlojit_ffi::handler::{Call, Error, HandlerResult};
use hlojit_ffi::xla::XLA_FFI_DataType_S32 as S32;
use std::ptr::null_mut;

/// Which LAPACK driver runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Driver {
    DivideAndConquer,
    Qr,
}

pub fn gesdd<T: Scalar>(call: Call<'_>) -> HandlerResult {
    svd::<T>(call, Driver::DivideAndConquer)
}

pub fn gesvd<T: Scalar>(call: Call<'_>) -> HandlerResult {
    svd::<T>(call, Driver::Qr)
}

fn svd<T: Scalar>(mut call: Call<'_>, driver: Driver) -> HandlerResult {
    expect_counts(call.args.len(), call.rets.len(), &[1], 5)?;
    let mode = char_attr(&call.attrs, "mode", b"ASNO")?;
    if mode == b'O' {
        return Err(Error::new(
            hlojit_ffi::xla::XLA_FFI_Error_Code_UNIMPLEMENTED,
            "SVD mode 'O' (overwrite the input with U) is not supported, as in jaxlib",
        ));
    }
    let (x, dims) = arg::<T>(&call, 0, T::DTYPE, "the matrix")?;
    let b = split_batch(dims, "the matrix")?;
    let k = b.rows.min(b.cols);
    let (out, od) = ret::<T>(&mut call, 0, T::DTYPE, "the overwritten matrix")?;
    expect_dims(od, dims, "the overwritten matrix")?;
    let (s, sd) = ret::<T::Real>(&mut call, 1, T::REAL_DTYPE, "the singular values")?;
    expect_dims(sd, &prefix_then(dims, 2, &[k as i64]), "the singular values")?;
    let (u, ud) = ret::<T>(&mut call, 2, T::DTYPE, "U")?;
    let ub = split_batch(ud, "U")?;
    let (vt, vd) = ret::<T>(&mut call, 3, T::DTYPE, "Vt")?;
    let vb = split_batch(vd, "Vt")?;
    let (info, id) = ret::<i32>(&mut call, 4, S32, "the info result")?;
    expect_dims(id, &prefix_then(dims, 2, &[]), "the info result")?;
    // LAPACK writes U as ldu x ucols and Vᴴ as ldvt x n: the buffers must hold that much.
    let (ucols, vrows) = match mode {
        b'A' => (b.rows, b.cols),
        b'S' => (k, k),
        _ => (0, 0),
    };
    if ub.count != b.count || vb.count != b.count || (mode != b'N' && (ub.rows != b.rows || ub.cols < ucols || vb.rows < vrows || vb.cols != b.cols)) {
        return Err(Error::invalid_argument(format!(
            "SVD result shapes do not fit mode '{}' for {dims:?}: U {ud:?}, Vt {vd:?}",
            mode as char
        )));
    }
    let (m, n) = (int(b.rows, "rows")?, int(b.cols, "columns")?);
    let ldu = ld(int(ub.rows, "U rows")?);
    let ldvt = ld(int(vb.rows, "Vt rows")?);
    let rwork_len = if !T::COMPLEX {
        1
    } else if driver == Driver::Qr {
        5 * k
    } else if mode == b'N' {
        7 * k
    } else {
        let big = b.rows.max(b.cols);
        (5 * k * k + 5 * k).max(2 * big * k + 2 * k * k + k)
    };
    unsafe {
        copy_in(x, out, b.count * b.matrix_len());
        let mut rwork = scratch::<T::Real>(rwork_len)?;
        let mut iwork = scratch::<i32>(8 * k)?;
        let mut q = T::zero();
        let mut inf = 0;
        // The query with the leading dimensions jaxlib's query uses.
        let qldvt = ld(int(if mode == b'A' { b.cols } else { k }, "Vt rows")?);
        match driver {
            Driver::DivideAndConquer => T::gesdd(mode, m, n, null_mut(), ld(m), null_mut(), null_mut(), ld(m), null_mut(), qldvt, &mut q, -1, rwork.as_mut_ptr(), iwork.as_mut_ptr(), &mut inf)?,
            Driver::Qr => T::gesvd(mode, mode, m, n, null_mut(), ld(m), null_mut(), null_mut(), ld(m), null_mut(), qldvt, &mut q, -1, rwork.as_mut_ptr(), &mut inf)?,
        }
        let mut work = scratch::<T>(queried(q.real_part()))?;
        let lwork = int(work.len(), "workspace")?;
        for i in 0..b.count {
            let a = out.add(i * b.matrix_len());
            let (si, ui, vi) = (s.add(i * k), u.add(i * ub.matrix_len()), vt.add(i * vb.matrix_len()));
            match driver {
                Driver::DivideAndConquer => T::gesdd(mode, m, n, a, ld(m), si, ui, ldu, vi, ldvt, work.as_mut_ptr(), lwork, rwork.as_mut_ptr(), iwork.as_mut_ptr(), &mut inf)?,
                Driver::Qr => T::gesvd(mode, mode, m, n, a, ld(m), si, ui, ldu, vi, ldvt, work.as_mut_ptr(), lwork, rwork.as_mut_ptr(), &mut inf)?,
            }
            *info.add(i) = inf;
        }
    }
    Ok(())
}
