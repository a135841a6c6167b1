//! Every LAPACK custom-call target jaxlib registers for CPU (`lapack_{s,d,c,z}*_ffi`), running
//! the system LAPACK as jaxlib runs scipy's: the same routines with the same arguments,
//! workspace sizes and conventions (see jaxlib's `cpu/lapack_kernels.cc`), so results follow
//! LAPACK's choices — eigenvector and singular vector signs, pivot order, the Householder
//! vectors left in place — and agree with XLA:CPU's up to the BLAS underneath.
//!
//! Built with the `system-lapack` feature (the default); without it the pure-Rust routines
//! of the parent module serve the targets they cover.

mod eigen;
mod factor;
mod io;
mod svd;
pub mod sys;

use hlojit_ffi::handler::dispatch;
use hlojit_ffi::xla::{XLA_FFI_CallFrame, XLA_FFI_Error, XLA_FFI_Handler};
use num_complex::Complex;

/// A C-ABI handler for a Rust handler function.
macro_rules! h {
    ($f:expr) => {{
        unsafe extern "C" fn entry(frame: *mut XLA_FFI_CallFrame) -> *mut XLA_FFI_Error {
            // SAFETY: the host passes a valid call frame.
            unsafe { dispatch(frame, $f) }
        }
        entry as XLA_FFI_Handler
    }};
}

/// The fifteen targets of one element type; `$geev`/`$gees` differ for real and complex types.
macro_rules! family {
    ($t:ty, $p:literal, $orgqr:literal, $ormqr:literal, $syevd:literal, $sytrd:literal, $geev:expr, $gees:expr) => {
        [
            (concat!("lapack_", $p, "trsm_ffi"), h!(factor::trsm::<$t>)),
            (concat!("lapack_", $p, "getrf_ffi"), h!(factor::getrf::<$t>)),
            (concat!("lapack_", $p, "potrf_ffi"), h!(factor::potrf::<$t>)),
            (concat!("lapack_", $p, "geqrf_ffi"), h!(factor::geqrf::<$t>)),
            (concat!("lapack_", $p, "geqp3_ffi"), h!(factor::geqp3::<$t>)),
            (concat!("lapack_", $p, $orgqr, "_ffi"), h!(factor::orgqr::<$t>)),
            (concat!("lapack_", $p, $ormqr, "_ffi"), h!(factor::ormqr::<$t>)),
            (concat!("lapack_", $p, "gtsv_ffi"), h!(factor::gtsv::<$t>)),
            (concat!("lapack_", $p, "gesdd_ffi"), h!(svd::gesdd::<$t>)),
            (concat!("lapack_", $p, "gesvd_ffi"), h!(svd::gesvd::<$t>)),
            (concat!("lapack_", $p, $syevd, "_ffi"), h!(eigen::heevd::<$t>)),
            (concat!("lapack_", $p, $sytrd, "_ffi"), h!(eigen::hetrd::<$t>)),
            (concat!("lapack_", $p, "gehrd_ffi"), h!(eigen::gehrd::<$t>)),
            (concat!("lapack_", $p, "geev_ffi"), h!($geev)),
            (concat!("lapack_", $p, "gees_ffi"), h!($gees)),
        ]
    };
}

/// Routines per element type.
const PER_TYPE: usize = 15;

/// Every LAPACK target by name.
pub static TABLE: [[(&str, XLA_FFI_Handler); PER_TYPE]; 4] = [
    family!(f32, "s", "orgqr", "ormqr", "syevd", "sytrd", eigen::geev_real::<f32>, eigen::gees_real::<f32>),
    family!(f64, "d", "orgqr", "ormqr", "syevd", "sytrd", eigen::geev_real::<f64>, eigen::gees_real::<f64>),
    family!(Complex<f32>, "c", "ungqr", "unmqr", "heevd", "hetrd", eigen::geev_complex::<Complex<f32>>, eigen::gees_complex::<Complex<f32>>),
    family!(Complex<f64>, "z", "ungqr", "unmqr", "heevd", "hetrd", eigen::geev_complex::<Complex<f64>>, eigen::gees_complex::<Complex<f64>>),
];

/// The LAPACK handler for target `name`, if there is one.
pub fn handler(name: &str) -> Option<XLA_FFI_Handler> {
    TABLE.iter().flatten().find(|(n, _)| *n == name).map(|(_, h)| *h)
}
