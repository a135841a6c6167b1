//! XLA's legacy custom-call status (`API_VERSION_STATUS_RETURNING` and
//! `API_VERSION_STATUS_RETURNING_UNIFIED`): an opaque object the host passes to the target,
//! which reports failure through `XlaCustomCallStatusSetFailure`. The host (the `hlojit`
//! binary, the runtime library) defines both functions; a plugin binds to them when loaded.

use std::ffi::{c_char, c_void};

/// The status object; only the host knows its contents.
#[repr(C)]
pub struct XlaCustomCallStatus {
    _opaque: [u8; 0],
}

/// `API_VERSION_ORIGINAL`: `void f(void* out, const void** in)`.
pub type OriginalFn = unsafe extern "C" fn(out: *mut c_void, ins: *const *const c_void);
/// `API_VERSION_STATUS_RETURNING`: `void f(void* out, const void** in, XlaCustomCallStatus*)`.
pub type StatusReturningFn =
    unsafe extern "C" fn(out: *mut c_void, ins: *const *const c_void, status: *mut XlaCustomCallStatus);
/// `API_VERSION_STATUS_RETURNING_UNIFIED`: adds the opaque `backend_config` string.
pub type StatusReturningUnifiedFn = unsafe extern "C" fn(
    out: *mut c_void,
    ins: *const *const c_void,
    opaque: *const c_char,
    opaque_len: usize,
    status: *mut XlaCustomCallStatus,
);

extern "C" {
    /// Marks the call as successful (the default).
    pub fn XlaCustomCallStatusSetSuccess(status: *mut XlaCustomCallStatus);
    /// Marks the call as failed with a message of `message_len` bytes.
    pub fn XlaCustomCallStatusSetFailure(status: *mut XlaCustomCallStatus, message: *const c_char, message_len: usize);
}

/// Reports a failure with `message` through the host's status functions.
///
/// # Safety
/// `status` must be the status object the host passed to this call, and the host must export
/// `XlaCustomCallStatusSetFailure` (hlojit does).
pub unsafe fn set_failure(status: *mut XlaCustomCallStatus, message: &str) {
    XlaCustomCallStatusSetFailure(status, message.as_ptr() as *const c_char, message.len());
}
