//! `PJRT_Error`: a status code and hlojit's message, owned by the caller until
//! `PJRT_Error_Destroy`. Entry points run inside [`guard`], which checks the argument struct
//! and turns errors and panics into `PJRT_Error`s (nothing unwinds into C).

use crate::abi::args::{ErrorDestroyArgs, ErrorForEachPayloadArgs, ErrorGetCodeArgs, ErrorMessageArgs};
use crate::abi::{Args, ErrorCode};
use std::panic::{catch_unwind, AssertUnwindSafe};

#[derive(Debug, Clone)]
pub struct PjrtError {
    pub code: ErrorCode,
    pub message: String,
}

impl PjrtError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> PjrtError {
        PjrtError { code, message: message.into() }
    }

    pub fn invalid(message: impl Into<String>) -> PjrtError {
        PjrtError::new(ErrorCode::InvalidArgument, message)
    }

    pub fn into_raw(self) -> *mut PjrtError {
        Box::into_raw(Box::new(self))
    }
}

impl From<hlojit::Error> for PjrtError {
    fn from(e: hlojit::Error) -> PjrtError {
        use hlojit::Error as E;
        let code = match &e {
            E::Unsupported(_) | E::MissingCustomCallTarget(_) => ErrorCode::Unimplemented,
            E::OutOfMemory(_) => ErrorCode::ResourceExhausted,
            E::DeadlineExceeded(_) => ErrorCode::DeadlineExceeded,
            E::Cancelled => ErrorCode::Cancelled,
            E::Internal(_) | E::Llvm(_) => ErrorCode::Internal,
            _ => ErrorCode::InvalidArgument,
        };
        PjrtError::new(code, e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, PjrtError>;

/// The error of an entry point hlojit does not implement.
pub fn unimplemented(name: &str) -> *mut PjrtError {
    if trace() {
        eprintln!("hlojit-pjrt: {name} (not implemented)");
    }
    PjrtError::new(ErrorCode::Unimplemented, format!("{name} is not implemented by the hlojit PJRT plugin")).into_raw()
}

/// Runs entry point `A::NAME` on its argument struct: null and too-small structs are errors,
/// so are panics.
///
/// # Safety
/// `args` is null or points to a struct of at least `struct_size` bytes, as the C API says.
pub unsafe fn guard<A: Args>(args: *mut A, body: impl FnOnce(&mut A) -> Result<()>) -> *mut PjrtError {
    if trace() {
        eprintln!("hlojit-pjrt: {}", A::NAME);
    }
    if args.is_null() {
        return PjrtError::invalid(format!("{}: the argument struct is null", A::NAME)).into_raw();
    }
    // SAFETY: not null; the caller vouches for the rest.
    let a = unsafe { &mut *args };
    if a.struct_size() < A::STRUCT_SIZE {
        return PjrtError::invalid(format!(
            "{}: struct_size is {}, hlojit needs at least {} (a caller built for an older PJRT C API?)",
            A::NAME,
            a.struct_size(),
            A::STRUCT_SIZE
        ))
        .into_raw();
    }
    match catch_unwind(AssertUnwindSafe(|| body(a))) {
        Ok(Ok(())) => std::ptr::null_mut(),
        Ok(Err(e)) => e.into_raw(),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            PjrtError::new(ErrorCode::Internal, format!("{}: internal error in hlojit: {what}", A::NAME)).into_raw()
        }
    }
}

/// `HLOJIT_PJRT_TRACE=1` prints every entry point the framework calls, to stderr.
fn trace() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("HLOJIT_PJRT_TRACE").is_some_and(|v| v != "0"))
}

/// A handle argument the caller must give.
pub fn non_null<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    // SAFETY: handles we hand out point to live objects until the caller destroys them.
    unsafe { p.as_mut() }.ok_or_else(|| PjrtError::invalid(format!("{what} is null")))
}

pub unsafe extern "C" fn error_destroy(args: *mut ErrorDestroyArgs) -> *mut PjrtError {
    if let Some(a) = unsafe { args.as_mut() } {
        if !a.error.is_null() {
            // SAFETY: errors are boxes we made with `into_raw`.
            drop(unsafe { Box::from_raw(a.error) });
            a.error = std::ptr::null_mut();
        }
    }
    std::ptr::null_mut()
}

pub unsafe extern "C" fn error_message(args: *mut ErrorMessageArgs) -> *mut PjrtError {
    if let Some(a) = unsafe { args.as_mut() } {
        match unsafe { a.error.as_ref() } {
            Some(e) => {
                a.message = e.message.as_ptr().cast();
                a.message_size = e.message.len();
            }
            None => {
                a.message = std::ptr::null();
                a.message_size = 0;
            }
        }
    }
    std::ptr::null_mut()
}

pub unsafe extern "C" fn error_get_code(args: *mut ErrorGetCodeArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let e = a.error.as_ref().ok_or_else(|| PjrtError::invalid("PJRT_Error_GetCode: error is null"))?;
            a.code = e.code as i32;
            Ok(())
        })
    }
}

/// hlojit's errors carry no payloads: the visitor is never called. (The framework calls this
/// while converting any error, so it must not fail.)
pub unsafe extern "C" fn error_for_each_payload(args: *mut ErrorForEachPayloadArgs) -> *mut PjrtError {
    unsafe { guard(args, |_| Ok(())) }
}
