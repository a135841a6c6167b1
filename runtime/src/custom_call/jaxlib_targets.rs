//! Custom-call targets that jaxlib registers for XLA:CPU besides its LAPACK and solver kernels
//! (those are in `linalg`), built in so that the programs JAX emits run as they do on XLA:CPU.

use hlojit_ffi::handler::{dispatch, Call, HandlerResult};
use hlojit_ffi::xla::{XLA_FFI_CallFrame, XLA_FFI_Error, XLA_FFI_Handler};

/// `dce_sink`: what `jax.lax.dce_sink(x, prevent_mlir_dce=True)` lowers to — a custom call with
/// a side effect that takes the value and does nothing, so that neither MLIR's nor XLA's dead
/// code elimination removes the computation of `x`. jaxlib's CPU handler (`dce_sink_cpu_ffi`)
/// binds one buffer of any type and no results; so does this one.
fn dce_sink(call: Call<'_>) -> HandlerResult {
    call.expect_arity(1, 0)
}

/// # Safety
/// `frame` must be a call frame from a host implementing XLA's FFI C API.
unsafe extern "C" fn dce_sink_ffi(frame: *mut XLA_FFI_CallFrame) -> *mut XLA_FFI_Error {
    // SAFETY: the host passes a valid call frame.
    unsafe { dispatch(frame, dce_sink) }
}

const TABLE: &[(&str, XLA_FFI_Handler)] = &[("dce_sink", dce_sink_ffi)];

/// The built-in handler jaxlib registers under `name`, if it is one of these.
pub fn handler(name: &str) -> Option<XLA_FFI_Handler> {
    TABLE.iter().find(|(n, _)| *n == name).map(|(_, h)| *h)
}

