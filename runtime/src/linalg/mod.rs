//! Built-in implementations of the LAPACK typed-FFI custom-call targets JAX programs call on
//! CPU (`lapack_sgetrf_ffi`, `lapack_dpotrf_ffi`, ...), so that they run without jaxlib.
//!
//! They take the same buffers and attributes as jaxlib's handlers (column-major matrices with
//! leading batch dimensions, one-character options, 1-based `s32` pivots, an `s32` `info` per
//! matrix) and are reached through the same C ABI, as the last place a target is looked up
//! (see [`crate::custom_call::resolve_target`]): a registered function or plugin of the same
//! name, such as jaxlib's own handlers, takes precedence. Real types (`s`, `d`) are built in;
//! the complex variants (`c`, `z`) resolve but fail with an error saying so.

pub mod args;
pub mod cholesky;
pub mod eigh;
pub mod lu;
pub mod qr;
pub mod scalar;
mod targets;
pub mod trsm;

pub use targets::{builtin_handler, BUILTIN_TARGETS};

#[cfg(test)]
mod tests;
