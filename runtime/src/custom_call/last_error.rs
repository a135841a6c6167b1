//! The message of the last failed custom call on this thread. Generated code only sees a
//! non-zero status; the runtime function that made the call records why, and the host
//! (`Executable::run`, or a C program through `hlojit_last_error`) reads it back. Custom calls
//! run on the thread that runs the computation, so a thread-local carries the message.

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, CString};

thread_local! {
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
    /// Set when something that cannot return a status (an allocation inside a kernel) failed;
    /// generated code asks with `hlojit_rt_take_failure`.
    static FAILED: Cell<bool> = const { Cell::new(false) };
}

/// Records `message` as this thread's last error and marks the thread as failed, for code
/// that learns of failures only by asking ([`take_failure`]).
pub fn set_failure(message: impl Into<String>) {
    set_last_error(message);
    FAILED.with(|f| f.set(true));
}

/// Whether this thread failed since the last call (the message stays the last error).
pub fn take_failure() -> bool {
    FAILED.with(|f| f.replace(false))
}

/// Records `message` as this thread's last error.
pub fn set_last_error(message: impl Into<String>) {
    let text = message.into().replace('\0', " ");
    let c = CString::new(text).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = Some(c));
}

/// Takes this thread's last error, leaving none.
pub fn take_last_error() -> Option<String> {
    LAST_ERROR.with(|e| e.borrow_mut().take()).map(|c| c.to_string_lossy().into_owned())
}

/// Forgets this thread's last error and failure.
pub fn clear_last_error() {
    LAST_ERROR.with(|e| *e.borrow_mut() = None);
    FAILED.with(|f| f.set(false));
}

/// C access for AOT programs: this thread's last error message, or null. The pointer stays
/// valid until the next failure on this thread.
#[no_mangle]
pub extern "C" fn hlojit_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ref().map_or(std::ptr::null(), |c| c.as_ptr()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_error_is_per_thread_and_taken_once() {
        set_last_error("boom");
        let other = std::thread::spawn(take_last_error).join().unwrap();
        assert_eq!(other, None);
        assert!(!hlojit_last_error().is_null());
        assert_eq!(take_last_error().as_deref(), Some("boom"));
        assert_eq!(take_last_error(), None);
        assert!(hlojit_last_error().is_null());
    }
}
