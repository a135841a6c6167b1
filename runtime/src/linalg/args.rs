//! Reading a LAPACK handler's buffers and attributes the way jaxlib's handlers do: leading
//! dimensions are batch dimensions, the last two are a column-major matrix, and option
//! attributes are single LAPACK characters (`uplo = 76 : ui8` is `'L'`).

use hlojit_ffi::handler::{Attrs, Error};

/// A stack of matrices: `count` matrices of `rows` x `cols`, each stored column-major.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Batch {
    /// The product of the batch dimensions (1 without any).
    pub count: usize,
    /// The matrix's rows (second-to-last dimension).
    pub rows: usize,
    /// The matrix's columns (last dimension).
    pub cols: usize,
}

impl Batch {
    /// Elements in one matrix.
    pub fn matrix_len(&self) -> usize {
        self.rows * self.cols
    }
}

/// Splits `dims` into batch dimensions and a matrix; `what` names the buffer in errors.
pub fn split_batch(dims: &[i64], what: &str) -> Result<Batch, Error> {
    if dims.len() < 2 {
        return Err(Error::invalid_argument(format!("{what} must have at least 2 dimensions, has shape {dims:?}")));
    }
    if dims.iter().any(|&d| d < 0) {
        return Err(Error::invalid_argument(format!("{what} has a negative dimension: {dims:?}")));
    }
    let (batch, matrix) = dims.split_at(dims.len() - 2);
    Ok(Batch { count: batch.iter().product::<i64>() as usize, rows: matrix[0] as usize, cols: matrix[1] as usize })
}

/// Checks that a buffer has exactly the dimensions `want`.
pub fn expect_dims(dims: &[i64], want: &[i64], what: &str) -> Result<(), Error> {
    if dims == want {
        Ok(())
    } else {
        Err(Error::invalid_argument(format!("{what} has shape {dims:?}, expected {want:?}")))
    }
}

/// The batch dimensions of `dims` followed by `tail`: the expected shape of a per-matrix
/// result such as pivots (`tail = [k]`) or `info` (`tail = []`).
pub fn batch_then(dims: &[i64], tail: &[i64]) -> Vec<i64> {
    let mut v = dims[..dims.len().saturating_sub(2)].to_vec();
    v.extend_from_slice(tail);
    v
}

/// A one-character option attribute that must be one of `allowed` (as jaxlib requires, a
/// `u8` scalar holding the character code).
pub fn char_attr(attrs: &Attrs<'_>, name: &str, allowed: &[u8]) -> Result<u8, Error> {
    let v = attrs.i64(name)?;
    match u8::try_from(v) {
        Ok(c) if allowed.contains(&c) => Ok(c),
        _ => {
            let options: Vec<String> = allowed.iter().map(|&c| format!("'{}' ({c})", c as char)).collect();
            Err(Error::invalid_argument(format!("attribute '{name}' is {v}, expected one of {}", options.join(", "))))
        }
    }
}

/// Fails unless the call has `args` arguments and at least `min_rets` results (jaxlib's
/// older handlers also return workspace buffers after the documented results, which the
/// built-ins ignore).
pub fn expect_counts(args: usize, rets: usize, want_args: &[usize], min_rets: usize) -> Result<(), Error> {
    if want_args.contains(&args) && rets >= min_rets {
        return Ok(());
    }
    let want: Vec<String> = want_args.iter().map(|n| n.to_string()).collect();
    Err(Error::invalid_argument(format!(
        "expected {} arguments and at least {min_rets} results, got {args} and {rets}",
        want.join(" or ")
    )))
}

/// The error for a result list shorter than [`expect_counts`] allowed (it cannot happen after
/// that check; an error rather than a panic keeps handlers panic-free).
pub fn counted() -> Error {
    Error::internal("result count changed after it was checked")
}
