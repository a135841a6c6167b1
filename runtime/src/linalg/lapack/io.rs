//! Buffers and scratch memory for the LAPACK handlers: raw pointers checked for element type
//! and shape (a result may alias its operand, `output_to_operand_aliasing`, so the handlers
//! never hold a slice of both), sizes checked to fit LAPACK's 32-bit integers, and workspace
//! allocated fallibly.

use hlojit_ffi::handler::{dtype_name, Call, Error};
use hlojit_ffi::xla::XLA_FFI_DataType;

/// Operand `i` as a typed pointer with its dimensions; `what` names it in errors.
pub fn arg<'a, T>(call: &Call<'a>, i: usize, dtype: XLA_FFI_DataType, what: &str) -> Result<(*const T, &'a [i64]), Error> {
    let b = call.arg(i)?;
    check_dtype(b.dtype(), dtype, what)?;
    Ok((b.data().cast(), b.dims()))
}

/// Result `i` as a typed pointer with its dimensions.
pub fn ret<'a, T>(call: &mut Call<'a>, i: usize, dtype: XLA_FFI_DataType, what: &str) -> Result<(*mut T, &'a [i64]), Error> {
    let b = call.rets.get_mut(i).ok_or_else(|| Error::invalid_argument(format!("the call has no result {i} ({what})")))?;
    check_dtype(b.dtype(), dtype, what)?;
    let dims = b.dims();
    Ok((b.data().cast(), dims))
}

fn check_dtype(got: XLA_FFI_DataType, want: XLA_FFI_DataType, what: &str) -> Result<(), Error> {
    if got == want {
        Ok(())
    } else {
        Err(Error::invalid_argument(format!("{what} has element type {}, expected {}", dtype_name(got), dtype_name(want))))
    }
}

/// `dims` without its last `drop` dimensions, followed by `tail`.
pub fn prefix_then(dims: &[i64], drop: usize, tail: &[i64]) -> Vec<i64> {
    let mut v = dims[..dims.len().saturating_sub(drop)].to_vec();
    v.extend_from_slice(tail);
    v
}

/// A dimension as LAPACK's `int`.
pub fn int(v: usize, what: &str) -> Result<i32, Error> {
    i32::try_from(v).map_err(|_| Error::invalid_argument(format!("{what} ({v}) exceeds LAPACK's 32-bit sizes")))
}

/// A leading dimension: LAPACK requires at least 1, even for empty matrices.
pub fn ld(rows: i32) -> i32 {
    rows.max(1)
}

/// `n` zeroed elements of scratch memory, or an error when they cannot be allocated.
pub fn scratch<T: Copy + Default>(n: usize) -> Result<Vec<T>, Error> {
    let mut v = Vec::new();
    v.try_reserve_exact(n.max(1))
        .map_err(|_| Error::new(hlojit_ffi::xla::XLA_FFI_Error_Code_RESOURCE_EXHAUSTED, format!("cannot allocate LAPACK workspace of {n} elements")))?;
    v.resize(n.max(1), T::default());
    Ok(v)
}

/// The workspace size a query (`lwork = -1`) left in `work[0]`.
pub fn queried(size: f64) -> usize {
    if size.is_finite() && size >= 1.0 {
        size as usize
    } else {
        1
    }
}

/// Copies `n` elements from an operand to the result that may alias it.
///
/// # Safety
/// Both pointers must be valid for `n` elements.
pub unsafe fn copy_in<T>(src: *const T, dst: *mut T, n: usize) {
    if src != dst as *const T && n > 0 {
        std::ptr::copy(src, dst, n);
    }
}
