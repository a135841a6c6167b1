//! Built-in implementations of the LAPACK typed-FFI custom-call targets JAX programs call on
//! CPU (`lapack_sgetrf_ffi`, `lapack_dpotrf_ffi`, ...), so that they run without jaxlib.
//!
//! They take the same buffers and attributes as jaxlib's handlers (column-major matrices with
//! leading batch dimensions, one-character options, 1-based `s32` pivots, an `s32` `info` per
//! matrix) and are reached through the same C ABI, as the last place a target is looked up
//! (see [`crate::custom_call::resolve_target`]): a registered function or plugin of the same
//! name, such as jaxlib's own handlers, takes precedence.
//!
//! Every target jaxlib registers runs the system LAPACK ([`lapack`]), in all four element
//! types, loaded on first use. Where it cannot be loaded or lacks a routine, the pure-Rust
//! routines here serve the real types (`s`, `d`) of getrf, potrf, geqrf, orgqr, syevd and
//! trsm; the other targets then fail with an error naming the missing routine.

pub mod args;
pub mod cholesky;
pub mod eigh;
pub mod field;
pub mod lapack;
pub mod lu;
pub mod qr;
pub mod scalar;
mod targets;
pub mod tridiagonal;
pub mod trsm;

pub use targets::{builtin_handler, builtin_targets, fallback_handler};

#[cfg(test)]
mod tests;
