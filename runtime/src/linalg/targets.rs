//! The built-in LAPACK targets by name, as C-ABI typed-FFI handlers: every target jaxlib
//! registers runs the system LAPACK ([`super::lapack`]), which falls back to the pure-Rust
//! handlers here where it cannot; jaxlib's own `tridiagonal_solve_perturbed_ffi` is pure Rust.

use super::{cholesky, eigh, lu, qr, trsm, tridiagonal};
use hlojit_ffi::handler::dispatch;
use hlojit_ffi::xla::{XLA_FFI_CallFrame, XLA_FFI_Error, XLA_FFI_Handler};

macro_rules! handlers {
    ($($fn_name:ident => $body:expr;)*) => {
        $(
            /// # Safety
            /// `frame` must be a call frame from a host implementing XLA's FFI C API.
            unsafe extern "C" fn $fn_name(frame: *mut XLA_FFI_CallFrame) -> *mut XLA_FFI_Error {
                // SAFETY: the host passes a valid call frame.
                unsafe { dispatch(frame, $body) }
            }
        )*
    };
}

handlers! {
    sgetrf => lu::handler::<f32>;
    dgetrf => lu::handler::<f64>;
    spotrf => cholesky::handler::<f32>;
    dpotrf => cholesky::handler::<f64>;
    sgeqrf => qr::geqrf_handler::<f32>;
    dgeqrf => qr::geqrf_handler::<f64>;
    sorgqr => qr::orgqr_handler::<f32>;
    dorgqr => qr::orgqr_handler::<f64>;
    ssyevd => eigh::handler::<f32>;
    dsyevd => eigh::handler::<f64>;
    strsm => trsm::handler::<f32>;
    dtrsm => trsm::handler::<f64>;
    tridiagonal_perturbed => tridiagonal::handler;
}

/// The pure-Rust targets (the fallback where the system LAPACK cannot serve) and their handlers.
const TABLE: &[(&str, XLA_FFI_Handler)] = &[
    ("lapack_sgetrf_ffi", sgetrf),
    ("lapack_dgetrf_ffi", dgetrf),
    ("lapack_spotrf_ffi", spotrf),
    ("lapack_dpotrf_ffi", dpotrf),
    ("lapack_sgeqrf_ffi", sgeqrf),
    ("lapack_dgeqrf_ffi", dgeqrf),
    ("lapack_sorgqr_ffi", sorgqr),
    ("lapack_dorgqr_ffi", dorgqr),
    ("lapack_ssyevd_ffi", ssyevd),
    ("lapack_dsyevd_ffi", dsyevd),
    ("lapack_strsm_ffi", strsm),
    ("lapack_dtrsm_ffi", dtrsm),
];

/// jaxlib's solver, which is not a LAPACK routine and is built in either way.
const TRIDIAGONAL_PERTURBED: (&str, XLA_FFI_Handler) = ("tridiagonal_solve_perturbed_ffi", tridiagonal_perturbed);

/// The names of all built-in targets.
pub fn builtin_targets() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = super::lapack::TABLE.iter().flatten().map(|(n, _)| *n).collect();
    names.push(TRIDIAGONAL_PERTURBED.0);
    names
}

/// The built-in handler for target `name`, if there is one.
pub fn builtin_handler(name: &str) -> Option<XLA_FFI_Handler> {
    super::lapack::handler(name).or_else(|| (name == TRIDIAGONAL_PERTURBED.0).then_some(TRIDIAGONAL_PERTURBED.1))
}

/// The pure-Rust handler for target `name` (what runs where the system LAPACK cannot).
pub fn fallback_handler(name: &str) -> Option<XLA_FFI_Handler> {
    TABLE.iter().find(|(n, _)| *n == name).map(|(_, h)| *h)
}
