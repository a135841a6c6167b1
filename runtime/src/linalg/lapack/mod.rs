//! Every LAPACK custom-call target jaxlib registers for CPU (`lapack_{s,d,c,z}*_ffi`), running
//! the system LAPACK as jaxlib runs scipy's: the same routines with the same arguments,
//! workspace sizes and conventions (see jaxlib's `cpu/lapack_kernels.cc`), so results follow
//! LAPACK's choices — eigenvector and singular vector signs, pivot order, the Householder
//! vectors left in place — and agree with XLA:CPU's up to the BLAS underneath.
//!
//! The library is opened the first time a target runs ([`library`]). Where it is absent or
//! lacks the routine, the pure-Rust routines of the parent module serve the targets they
//! cover, and the others fail with an error naming the routine and the libraries searched.

mod eigen;
mod factor;
mod io;
pub mod library;
mod svd;
pub mod sys;

use hlojit_ffi::handler::dispatch;
use hlojit_ffi::xla::{XLA_FFI_CallFrame, XLA_FFI_Error, XLA_FFI_Handler};
use num_complex::Complex;

/// Target `lapack_{$p}{$routine}_ffi` and its C-ABI handler, which calls the Fortran routine
/// `{$p}{$routine}_` through the Rust handler `$f`, or the pure-Rust fallback when the library
/// lacks the routine and there is one.
macro_rules! target {
    ($p:literal, $routine:literal, $f:expr) => {{
        unsafe extern "C" fn entry(frame: *mut XLA_FFI_CallFrame) -> *mut XLA_FFI_Error {
            static ROUTINE: library::Routine = library::Routine::new(concat!($p, $routine, "_"));
            if ROUTINE.address().is_err() {
                if let Some(fallback) = crate::linalg::fallback_handler(concat!("lapack_", $p, $routine, "_ffi")) {
                    // SAFETY: the host passes a valid call frame.
                    return unsafe { fallback(frame) };
                }
            }
            // SAFETY: the host passes a valid call frame.
            unsafe { dispatch(frame, $f) }
        }
        (concat!("lapack_", $p, $routine, "_ffi"), entry as XLA_FFI_Handler)
    }};
}

/// The fifteen targets of one element type; `$geev`/`$gees` differ for real and complex types.
macro_rules! family {
    ($t:ty, $p:literal, $orgqr:literal, $ormqr:literal, $syevd:literal, $sytrd:literal, $geev:expr, $gees:expr) => {
        [
            target!($p, "trsm", factor::trsm::<$t>),
            target!($p, "getrf", factor::getrf::<$t>),
            target!($p, "potrf", factor::potrf::<$t>),
            target!($p, "geqrf", factor::geqrf::<$t>),
            target!($p, "geqp3", factor::geqp3::<$t>),
            target!($p, $orgqr, factor::orgqr::<$t>),
            target!($p, $ormqr, factor::ormqr::<$t>),
            target!($p, "gtsv", factor::gtsv::<$t>),
            target!($p, "gesdd", svd::gesdd::<$t>),
            target!($p, "gesvd", svd::gesvd::<$t>),
            target!($p, $syevd, eigen::heevd::<$t>),
            target!($p, $sytrd, eigen::hetrd::<$t>),
            target!($p, "gehrd", eigen::gehrd::<$t>),
            target!($p, "geev", $geev),
            target!($p, "gees", $gees),
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
