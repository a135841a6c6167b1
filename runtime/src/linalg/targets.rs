//! The built-in LAPACK targets by name, as C-ABI typed-FFI handlers: the system LAPACK's
//! (feature `system-lapack`, every target jaxlib registers) first, then the pure-Rust
//! fallbacks, and jaxlib's own `tridiagonal_solve_perturbed_ffi` in any build.

use super::{cholesky, eigh, lu, qr, trsm, tridiagonal};
use hlojit_ffi::handler::{dispatch, Call, Error, HandlerResult};
use hlojit_ffi::xla::{XLA_FFI_CallFrame, XLA_FFI_Error, XLA_FFI_Error_Code_UNIMPLEMENTED, XLA_FFI_Handler};

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
    complex => complex_unsupported;
    tridiagonal_perturbed => tridiagonal::handler;
}

/// The complex variants' stand-in: a clear error instead of "target not found", since the
/// name is right and only the implementation is missing.
fn complex_unsupported(_: Call<'_>) -> HandlerResult {
    Err(Error::new(
        XLA_FFI_Error_Code_UNIMPLEMENTED,
        "the complex (c64/c128) LAPACK variants are not built into hlojit; load a plugin that \
         provides them (e.g. jaxlib's handlers through a bridge)",
    ))
}

/// The pure-Rust targets (the fallback without the system LAPACK) and their handlers.
const TABLE: &[(&str, XLA_FFI_Handler)] = &[
    ("lapack_sgetrf_ffi", sgetrf),
    ("lapack_dgetrf_ffi", dgetrf),
    ("lapack_cgetrf_ffi", complex),
    ("lapack_zgetrf_ffi", complex),
    ("lapack_spotrf_ffi", spotrf),
    ("lapack_dpotrf_ffi", dpotrf),
    ("lapack_cpotrf_ffi", complex),
    ("lapack_zpotrf_ffi", complex),
    ("lapack_sgeqrf_ffi", sgeqrf),
    ("lapack_dgeqrf_ffi", dgeqrf),
    ("lapack_cgeqrf_ffi", complex),
    ("lapack_zgeqrf_ffi", complex),
    ("lapack_sorgqr_ffi", sorgqr),
    ("lapack_dorgqr_ffi", dorgqr),
    ("lapack_cungqr_ffi", complex),
    ("lapack_zungqr_ffi", complex),
    ("lapack_ssyevd_ffi", ssyevd),
    ("lapack_dsyevd_ffi", dsyevd),
    ("lapack_cheevd_ffi", complex),
    ("lapack_zheevd_ffi", complex),
    ("lapack_strsm_ffi", strsm),
    ("lapack_dtrsm_ffi", dtrsm),
    ("lapack_ctrsm_ffi", complex),
    ("lapack_ztrsm_ffi", complex),
];

/// jaxlib's solver, which is not a LAPACK routine and is built in either way.
const TRIDIAGONAL_PERTURBED: (&str, XLA_FFI_Handler) = ("tridiagonal_solve_perturbed_ffi", tridiagonal_perturbed);

/// The names of all built-in targets.
pub fn builtin_targets() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = TABLE.iter().map(|(n, _)| *n).collect();
    #[cfg(feature = "system-lapack")]
    for (n, _) in super::lapack::TABLE.iter().flatten() {
        if !names.contains(n) {
            names.push(n);
        }
    }
    names.push(TRIDIAGONAL_PERTURBED.0);
    names
}

/// The built-in handler for target `name`, if there is one: the system LAPACK's when the
/// build has it, else the pure-Rust one.
pub fn builtin_handler(name: &str) -> Option<XLA_FFI_Handler> {
    #[cfg(feature = "system-lapack")]
    if let Some(h) = super::lapack::handler(name) {
        return Some(h);
    }
    fallback_handler(name)
}

/// The pure-Rust handler for target `name` (what a build without the system LAPACK runs).
pub fn fallback_handler(name: &str) -> Option<XLA_FFI_Handler> {
    if name == TRIDIAGONAL_PERTURBED.0 {
        return Some(TRIDIAGONAL_PERTURBED.1);
    }
    TABLE.iter().find(|(n, _)| *n == name).map(|(_, h)| *h)
}
