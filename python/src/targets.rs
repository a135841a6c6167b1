//! Custom-call targets from Python into hlojit's process-wide registry: what
//! `jax.ffi.register_ffi_target` (and jaxlib's own LAPACK and host-callback targets) hand to
//! the host platform reaches the PJRT plugin this way (see `hlojit/jax_plugin.py`).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::ffi::c_void;

/// The function pointer a `PyCapsule` holds.
fn capsule_pointer(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<*mut c_void> {
    // SAFETY: plain CPython capsule calls on a live object, with the GIL held.
    unsafe {
        if pyo3::ffi::PyCapsule_CheckExact(obj.as_ptr()) == 0 {
            return Err(PyValueError::new_err(format!("{what}: expected a PyCapsule, got {}", obj.get_type().name()?)));
        }
        let name = pyo3::ffi::PyCapsule_GetName(obj.as_ptr());
        let p = pyo3::ffi::PyCapsule_GetPointer(obj.as_ptr(), name);
        if p.is_null() {
            return Err(PyErr::take(obj.py()).unwrap_or_else(|| PyValueError::new_err(format!("{what}: the capsule holds null"))));
        }
        Ok(p)
    }
}

/// Registers `target` under `name`: a capsule (the function, any calling convention) or, for
/// the typed FFI, a dict of stage name to capsule whose "execute" stage runs the call (hlojit
/// runs no other stage).
#[pyfunction]
pub fn register_custom_call_target(name: &str, target: &Bound<'_, PyAny>, api_version: i32) -> PyResult<()> {
    if !(0..=1).contains(&api_version) {
        return Err(PyValueError::new_err(format!("custom-call target '{name}': api_version {api_version} (0 or 1 expected)")));
    }
    let pointer = if target.is_instance_of::<PyDict>() {
        let execute = target
            .get_item("execute")
            .map_err(|_| PyValueError::new_err(format!("custom-call target '{name}': the handler dict has no 'execute' stage")))?;
        capsule_pointer(&execute, name)?
    } else {
        capsule_pointer(target, name)?
    };
    // SAFETY: the capsule's owner vouches that it holds a function of the convention the
    // custom calls naming it declare, alive for the process (jaxlib's and users' targets are).
    unsafe { hlojit_runtime::custom_call::CustomCallRegistry::global().register_raw(name, pointer) };
    Ok(())
}
