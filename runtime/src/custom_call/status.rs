//! The host side of XLA's legacy custom-call status: the object passed to
//! `API_VERSION_STATUS_RETURNING(_UNIFIED)` targets and the two functions they call on it.
//! Both functions are exported under XLA's names so that plugins built for XLA bind to them.

use super::last_error::set_last_error;
use std::ffi::{c_char, c_void, CStr};

/// A call's status: success unless the target reported a failure.
#[derive(Debug, Default)]
pub struct CustomCallStatus {
    failure: Option<String>,
}

impl CustomCallStatus {
    /// The message a target set with `XlaCustomCallStatusSetFailure`; `None` on success.
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }
}

/// Marks the call as successful.
///
/// # Safety
/// `status` must be null or the status object of the current call.
#[no_mangle]
pub unsafe extern "C" fn XlaCustomCallStatusSetSuccess(status: *mut c_void) {
    if let Some(s) = (status as *mut CustomCallStatus).as_mut() {
        s.failure = None;
    }
}

/// Marks the call as failed with the `message_len` bytes at `message`.
///
/// # Safety
/// `status` must be null or the status object of the current call; `message` must hold
/// `message_len` readable bytes (or be null).
#[no_mangle]
pub unsafe extern "C" fn XlaCustomCallStatusSetFailure(
    status: *mut c_void,
    message: *const c_char,
    message_len: usize,
) {
    if let Some(s) = (status as *mut CustomCallStatus).as_mut() {
        let text = if message.is_null() || message_len == 0 {
            String::new()
        } else {
            String::from_utf8_lossy(std::slice::from_raw_parts(message as *const u8, message_len)).into_owned()
        };
        s.failure = Some(text);
    }
}

/// A legacy target with a status argument.
type StatusFn = unsafe extern "C" fn(*mut c_void, *const *const c_void, *mut c_void);
/// A legacy target with the opaque string and a status argument.
type UnifiedFn = unsafe extern "C" fn(*mut c_void, *const *const c_void, *const c_char, usize, *mut c_void);

/// Calls a status-returning target (`unified` selects the form with the opaque string) and
/// returns 0, or 1 after recording the target's failure message as the thread's last error.
///
/// # Safety
/// `target` must be a function of the selected form; `out`, `ins` and `opaque` must be what it
/// expects; `name` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_custom_call_status(
    target: *const c_void,
    unified: i32,
    out: *mut c_void,
    ins: *const *const c_void,
    opaque: *const c_char,
    opaque_len: i64,
    name: *const c_char,
) -> i32 {
    let mut status = CustomCallStatus::default();
    let sp = &mut status as *mut CustomCallStatus as *mut c_void;
    if unified != 0 {
        let f: UnifiedFn = std::mem::transmute::<*const c_void, UnifiedFn>(target);
        f(out, ins, opaque, opaque_len.max(0) as usize, sp);
    } else {
        let f: StatusFn = std::mem::transmute::<*const c_void, StatusFn>(target);
        f(out, ins, sp);
    }
    match status.failure {
        None => 0,
        Some(message) => {
            let target = if name.is_null() { "?".into() } else { CStr::from_ptr(name).to_string_lossy() };
            set_last_error(format!("custom call '{target}' failed: {message}"));
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::last_error::take_last_error;
    use super::*;

    unsafe extern "C" fn fails(_out: *mut c_void, _ins: *const *const c_void, status: *mut c_void) {
        let m = "negative input";
        XlaCustomCallStatusSetFailure(status, m.as_ptr() as *const c_char, m.len());
    }

    unsafe extern "C" fn echoes(
        out: *mut c_void,
        _ins: *const *const c_void,
        opaque: *const c_char,
        len: usize,
        status: *mut c_void,
    ) {
        std::ptr::copy_nonoverlapping(opaque as *const u8, out as *mut u8, len);
        XlaCustomCallStatusSetSuccess(status);
    }

    #[test]
    fn failure_message_becomes_the_last_error() {
        let rc = unsafe {
            hlojit_rt_custom_call_status(
                fails as *const c_void,
                0,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
                0,
                c"t".as_ptr(),
            )
        };
        assert_eq!(rc, 1);
        assert_eq!(take_last_error().as_deref(), Some("custom call 't' failed: negative input"));
    }

    #[test]
    fn unified_form_gets_the_opaque_string() {
        let mut out = [0u8; 5];
        let rc = unsafe {
            hlojit_rt_custom_call_status(
                echoes as *const c_void,
                1,
                out.as_mut_ptr() as *mut c_void,
                std::ptr::null(),
                c"hello".as_ptr(),
                5,
                c"e".as_ptr(),
            )
        };
        assert_eq!(rc, 0);
        assert_eq!(&out, b"hello");
    }
}
