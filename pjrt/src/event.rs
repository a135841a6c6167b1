//! `PJRT_Event`: hlojit runs and copies synchronously, so the events it returns are ready
//! when made. Events a caller makes with `PJRT_Event_Create` become ready at `PJRT_Event_Set`.

use crate::abi::args::*;
use crate::abi::{ErrorCode, OnReadyCallback};
use crate::error::{guard, non_null, PjrtError, Result};
use std::ffi::c_void;
use std::sync::{Condvar, Mutex};

struct Waiter {
    callback: unsafe extern "C" fn(*mut PjrtError, *mut c_void),
    user_arg: *mut c_void,
}
// SAFETY: the caller hands the callback and its argument to whichever thread sets the event.
unsafe impl Send for Waiter {}

#[derive(Default)]
struct State {
    /// `Some(result)` once ready.
    done: Option<std::result::Result<(), PjrtError>>,
    waiters: Vec<Waiter>,
}

#[repr(C)]
#[derive(Default)]
pub struct Event {
    pub head: crate::abi::HandleHead,
    state: Mutex<State>,
    ready: Condvar,
}

impl Event {
    /// An event that is already ready, with `result`.
    pub fn ready(result: std::result::Result<(), PjrtError>) -> *mut Event {
        let e = Event::default();
        e.state.lock().unwrap_or_else(|p| p.into_inner()).done = Some(result);
        Box::into_raw(Box::new(e))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set(&self, result: std::result::Result<(), PjrtError>) -> Result<()> {
        let waiters = {
            let mut s = self.lock();
            if s.done.is_some() {
                return Err(PjrtError::new(ErrorCode::FailedPrecondition, "PJRT_Event_Set: the event is already set"));
            }
            s.done = Some(result.clone());
            std::mem::take(&mut s.waiters)
        };
        self.ready.notify_all();
        for w in waiters {
            let e = result.clone().err().map_or(std::ptr::null_mut(), PjrtError::into_raw);
            // SAFETY: the callback the caller registered, with its own argument.
            unsafe { (w.callback)(e, w.user_arg) };
        }
        Ok(())
    }

    fn wait(&self) -> std::result::Result<(), PjrtError> {
        let mut s = self.lock();
        loop {
            if let Some(r) = &s.done {
                return r.clone();
            }
            s = self.ready.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }
}

fn raw(r: std::result::Result<(), PjrtError>) -> *mut PjrtError {
    r.err().map_or(std::ptr::null_mut(), PjrtError::into_raw)
}

pub unsafe extern "C" fn event_destroy(args: *mut EventDestroyArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            if !a.event.is_null() {
                drop(Box::from_raw(a.event));
            }
            Ok(())
        })
    }
}

pub unsafe extern "C" fn event_is_ready(args: *mut EventIsReadyArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            a.is_ready = non_null(a.event, "event")?.lock().done.is_some();
            Ok(())
        })
    }
}

pub unsafe extern "C" fn event_error(args: *mut EventErrorArgs) -> *mut PjrtError {
    let mut out = std::ptr::null_mut();
    let e = unsafe {
        guard(args, |a| {
            let s = non_null(a.event, "event")?.lock();
            match &s.done {
                Some(r) => out = raw(r.clone()),
                None => return Err(PjrtError::new(ErrorCode::FailedPrecondition, "PJRT_Event_Error: the event is not ready")),
            }
            Ok(())
        })
    };
    if e.is_null() { out } else { e }
}

pub unsafe extern "C" fn event_await(args: *mut EventAwaitArgs) -> *mut PjrtError {
    let mut out = std::ptr::null_mut();
    let e = unsafe {
        guard(args, |a| {
            out = raw(non_null(a.event, "event")?.wait());
            Ok(())
        })
    };
    if e.is_null() { out } else { e }
}

pub unsafe extern "C" fn event_on_ready(args: *mut EventOnReadyArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let callback: OnReadyCallback = a.callback;
            let callback = callback.ok_or_else(|| PjrtError::invalid("PJRT_Event_OnReady: callback is null"))?;
            let event = non_null(a.event, "event")?;
            let done = {
                let mut s = event.lock();
                match &s.done {
                    Some(r) => Some(r.clone()),
                    None => {
                        s.waiters.push(Waiter { callback, user_arg: a.user_arg });
                        None
                    }
                }
            };
            if let Some(r) = done {
                callback(raw(r), a.user_arg);
            }
            Ok(())
        })
    }
}

pub unsafe extern "C" fn event_create(args: *mut EventCreateArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            a.event = Box::into_raw(Box::new(Event::default()));
            Ok(())
        })
    }
}

pub unsafe extern "C" fn event_set(args: *mut EventSetArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let event = non_null(a.event, "event")?;
            let result = if a.error_code == 0 {
                Ok(())
            } else {
                let message = crate::util::string(a.error_message, a.error_message_size);
                let code = crate::util::error_code(a.error_code);
                Err(PjrtError::new(code, message))
            };
            event.set(result)
        })
    }
}
