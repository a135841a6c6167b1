//! The custom-call targets hlojit builds in (every LAPACK and solver target jaxlib registers,
//! and jaxlib's other CPU targets), found by name. The JIT resolves them after the user's own
//! targets; an AOT object reaches them through `hlojit_rt_builtin_target_call`, from a weak
//! definition under the target's name that a program's own definition replaces at link time.

use hlojit_ffi::handler::{dispatch, Error};
use hlojit_ffi::xla::{XLA_FFI_CallFrame, XLA_FFI_Error, XLA_FFI_Handler};
use std::ffi::{c_char, CStr};

/// The built-in handler of target `name`, if hlojit has one.
pub fn builtin_target(name: &str) -> Option<XLA_FFI_Handler> {
    crate::linalg::builtin_handler(name).or_else(|| super::jaxlib_targets::handler(name))
}

/// Runs built-in target `name` on `frame`; an error naming it when there is no such target
/// (an object compiled by another hlojit version than the runtime it is linked with).
///
/// # Safety
/// `name` must be a NUL-terminated string and `frame` a call frame from a host implementing
/// XLA's FFI C API.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_builtin_target_call(
    name: *const c_char,
    frame: *mut XLA_FFI_CallFrame,
) -> *mut XLA_FFI_Error {
    // SAFETY: the caller passes a NUL-terminated name.
    let name = if name.is_null() {
        None
    } else {
        unsafe { CStr::from_ptr(name) }.to_str().ok()
    };
    match name.and_then(builtin_target) {
        // SAFETY: the host passes a valid call frame, which the handler takes as it is.
        Some(handler) => unsafe { handler(frame) },
        // SAFETY: as above.
        None => unsafe {
            dispatch(frame, |_| {
                Err(Error::invalid_argument(format!(
                    "this hlojit runtime has no built-in custom-call target {:?}",
                    name.unwrap_or("(not UTF-8)")
                )))
            })
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_lapack_and_jaxlib_targets_and_nothing_else() {
        assert!(builtin_target("lapack_spotrf_ffi").is_some());
        assert!(builtin_target("lapack_zgesdd_ffi").is_some());
        assert!(builtin_target("tridiagonal_solve_perturbed_ffi").is_some());
        assert!(builtin_target("dce_sink").is_some());
        assert!(builtin_target("spotrf_").is_none());
        assert!(builtin_target("my_target").is_none());
    }
}
