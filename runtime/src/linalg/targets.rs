//! The built-in LAPACK targets by name, as C-ABI typed-FFI handlers.

use super::{cholesky, eigh, lu, qr, trsm};
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

/// Every built-in target name and its handler.
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

/// The names of all built-in targets.
pub const BUILTIN_TARGETS: [&str; TABLE.len()] = {
    let mut names = [""; TABLE.len()];
    let mut i = 0;
    while i < TABLE.len() {
        names[i] = TABLE[i].0;
        i += 1;
    }
    names
};

/// The built-in handler for target `name`, if there is one.
pub fn builtin_handler(name: &str) -> Option<XLA_FFI_Handler> {
    TABLE.iter().find(|(n, _)| *n == name).map(|(_, h)| *h)
}
