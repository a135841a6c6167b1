//! Built-in implementations of the LAPACK typed-FFI custom-call targets JAX programs call on
//! CPU (`lapack_sgetrf_ffi`, `lapack_dpotrf_ffi`, ...), so that they run without jaxlib.
//!
//! They take the same buffers and attributes as jaxlib's handlers (column-major matrices with
//! leading batch dimensions, one-character options, 1-based `s32` pivots, an `s32` `info` per
//! matrix) and are reached through the same C ABI, as the last place a target is looked up
//! (see [`crate::custom_call::resolve_target`]): a registered function or plugin of the same
//! name, such as jaxlib's own handlers, takes precedence.
//!
//! With the `system-lapack` feature (the default) every target jaxlib registers runs the
//! system LAPACK ([`lapack`]), in all four element types. Without it, the pure-Rust routines
//! here serve the real types (`s`, `d`) of getrf, potrf, geqrf, orgqr, syevd and trsm; the
//! complex variants then resolve but fail with an error saying so.

pub mod args;
pub mod cholesky;
pub mod eigh;
pub mod field;
#[cfg(feature = "system-lapack")]
pub mod lapack;
pub mod lu;
pub mod qr;
pub mod scalar;
mod targets;
pub mod tridiagonal;
pub mod trsm;

/// What a program linking the runtime's static library must add to its link line for the
/// LAPACK targets: the system LAPACK and BLAS (empty in builds without `system-lapack`).
pub const LINK_LIBS: &str = if cfg!(feature = "system-lapack") { "-llapack -lblas" } else { "" };

pub use targets::{builtin_handler, builtin_targets, fallback_handler};

#[cfg(test)]
mod tests;
