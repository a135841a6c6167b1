//! The execution context typed-FFI handlers receive in their call frame (XLA's
//! `ffi::ExecutionContext`): user data by type id, given by whoever starts a run. JAX passes
//! its host callbacks this way (`FfiLoadedHostCallbacks`, through the PJRT FFI extension), and
//! jaxlib's `xla_ffi_python_cpu_callback` looks them up with `XLA_FFI_ExecutionContext_Get`.
//!
//! A run's context is installed on the thread that runs the entry function (custom calls are
//! called from there, and every device of a multi-device run has its own thread), and call
//! frames point at it for the duration of the run.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

/// Deleter of a user-data object, called when the context that owns it is dropped.
pub type Deleter = unsafe extern "C" fn(*mut c_void);

struct Entry {
    data: usize,
    deleter: Option<Deleter>,
}

/// User data for one or more runs, keyed by the type ids handlers ask for.
#[derive(Default)]
pub struct ExecutionContext {
    entries: Mutex<HashMap<i64, Entry>>,
}

impl std::fmt::Debug for ExecutionContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<i64> = self.lock().keys().copied().collect();
        f.debug_struct("ExecutionContext").field("type_ids", &ids).finish()
    }
}

impl ExecutionContext {
    pub fn new() -> ExecutionContext {
        ExecutionContext::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds `data` under `type_id`; the context calls `deleter` (if any) on it when dropped.
    /// A type id is given once, as XLA's `ExecutionContext::Insert` requires.
    ///
    /// # Safety
    /// `data` must stay valid for as long as handlers may run with this context, and
    /// `deleter` must be safe to call once on it.
    pub unsafe fn insert(&self, type_id: i64, data: *mut c_void, deleter: Option<Deleter>) -> Result<(), String> {
        let mut entries = self.lock();
        if entries.contains_key(&type_id) {
            return Err(format!("user data of type id {type_id} is already in the execution context"));
        }
        entries.insert(type_id, Entry { data: data as usize, deleter });
        Ok(())
    }

    /// The user data of type `type_id`, if given.
    pub fn lookup(&self, type_id: i64) -> Option<*mut c_void> {
        self.lock().get(&type_id).map(|e| e.data as *mut c_void)
    }
}

impl Drop for ExecutionContext {
    fn drop(&mut self) {
        for (_, e) in self.lock().drain() {
            if let Some(d) = e.deleter {
                // SAFETY: `insert`'s caller vouched for the deleter.
                unsafe { d(e.data as *mut c_void) };
            }
        }
    }
}

/// The context of runs that were given none: lookups find nothing.
fn empty() -> &'static ExecutionContext {
    static EMPTY: std::sync::OnceLock<ExecutionContext> = std::sync::OnceLock::new();
    EMPTY.get_or_init(ExecutionContext::new)
}

thread_local! {
    static CURRENT: Cell<*const ExecutionContext> = const { Cell::new(std::ptr::null()) };
}

/// Keeps a run's context installed on this thread until dropped (restoring the one before,
/// so nested runs — a handler running another program — see their own).
pub struct Installed {
    previous: *const ExecutionContext,
    _context: Option<Arc<ExecutionContext>>,
}

/// Installs `context` (or the empty one) as the context of the call frames this thread makes.
pub fn install(context: Option<&Arc<ExecutionContext>>) -> Installed {
    let ptr = context.map_or(empty() as *const ExecutionContext, Arc::as_ptr);
    let previous = CURRENT.with(|c| c.replace(ptr));
    Installed { previous, _context: context.cloned() }
}

impl Drop for Installed {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.previous));
    }
}

/// The context for a call frame made on this thread now (never null).
pub(crate) fn current() -> *const ExecutionContext {
    let p = CURRENT.with(Cell::get);
    if p.is_null() {
        empty()
    } else {
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static DELETED: AtomicUsize = AtomicUsize::new(0);
    unsafe extern "C" fn count_delete(_: *mut c_void) {
        DELETED.fetch_add(1, Ordering::SeqCst);
    }

    #[test]
    fn lookup_finds_inserted_data_and_drop_runs_deleters() {
        let mut value = 7u32;
        let c = Arc::new(ExecutionContext::new());
        unsafe { c.insert(42, &mut value as *mut u32 as *mut c_void, Some(count_delete)).unwrap() };
        assert!(unsafe { c.insert(42, std::ptr::null_mut(), None) }.is_err(), "a type id is given once");
        assert_eq!(c.lookup(42), Some(&mut value as *mut u32 as *mut c_void));
        assert_eq!(c.lookup(43), None);
        {
            let _g = install(Some(&c));
            assert_eq!(current(), Arc::as_ptr(&c));
            {
                let _inner = install(None);
                assert_eq!(unsafe { &*current() }.lookup(42), None);
            }
            assert_eq!(current(), Arc::as_ptr(&c));
        }
        assert_eq!(unsafe { &*current() }.lookup(42), None);
        let before = DELETED.load(Ordering::SeqCst);
        drop(c);
        assert_eq!(DELETED.load(Ordering::SeqCst), before + 1);
    }
}
