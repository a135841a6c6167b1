//! The LAPACK and BLAS routines jaxlib's CPU targets call, behind one trait over the four
//! element types (`s`, `d`, `c`, `z`), so each handler is written once.
//!
//! Calls go to the Fortran symbols (`sgesdd_`, ...) of the library [`super::library`] opens on
//! first use, with every argument by pointer and no hidden string lengths, as scipy's
//! `cython_lapack` (which jaxlib calls) does. Each wrapper's argument list is the routine's
//! signature; a routine the library lacks is an error naming it. The real routines take no
//! `rwork`; their wrappers ignore it.

#![allow(clippy::too_many_arguments)]

use hlojit_ffi::xla::{
    XLA_FFI_DataType, XLA_FFI_DataType_C128, XLA_FFI_DataType_C64, XLA_FFI_DataType_F32, XLA_FFI_DataType_F64,
};
use super::library::Routine;
use hlojit_ffi::handler::Error;
use num_complex::Complex;
use std::ffi::c_void;
use std::os::raw::c_char;

/// A LAPACK element type. All methods are thin `unsafe` wrappers: the caller passes pointers
/// to buffers of the sizes LAPACK documents.
pub trait Scalar: Copy + Default + Send + Sync + 'static {
    /// The real type of the same precision (singular values, eigenvalues of Hermitian matrices).
    type Real: Copy + Default + PartialEq + Into<f64> + 'static;
    /// The FFI element type of this type.
    const DTYPE: XLA_FFI_DataType;
    /// The FFI element type of [`Scalar::Real`].
    const REAL_DTYPE: XLA_FFI_DataType;
    /// Whether the type is complex (it then transposes conjugated and needs `rwork`).
    const COMPLEX: bool;
    /// The LAPACK type letter: `s`, `d`, `c` or `z`.
    const LETTER: char;
    fn one() -> Self;
    fn zero() -> Self;
    /// The real part, for workspace sizes returned in `work[0]`.
    fn real_part(self) -> f64;
    /// Whether both parts are finite.
    fn finite(self) -> bool;
    fn real_from_f64(v: f64) -> Self::Real;

    unsafe fn trsm(side: u8, uplo: u8, trans: u8, diag: u8, m: i32, n: i32, alpha: Self, a: *const Self, lda: i32, b: *mut Self, ldb: i32) -> Result<(), Error>;
    unsafe fn getrf(m: i32, n: i32, a: *mut Self, lda: i32, ipiv: *mut i32, info: &mut i32) -> Result<(), Error>;
    unsafe fn potrf(uplo: u8, n: i32, a: *mut Self, lda: i32, info: &mut i32) -> Result<(), Error>;
    unsafe fn geqrf(m: i32, n: i32, a: *mut Self, lda: i32, tau: *mut Self, work: *mut Self, lwork: i32, info: &mut i32) -> Result<(), Error>;
    unsafe fn geqp3(m: i32, n: i32, a: *mut Self, lda: i32, jpvt: *mut i32, tau: *mut Self, work: *mut Self, lwork: i32, rwork: *mut Self::Real, info: &mut i32) -> Result<(), Error>;
    unsafe fn orgqr(m: i32, n: i32, k: i32, a: *mut Self, lda: i32, tau: *const Self, work: *mut Self, lwork: i32, info: &mut i32) -> Result<(), Error>;
    unsafe fn ormqr(side: u8, trans: u8, m: i32, n: i32, k: i32, a: *const Self, lda: i32, tau: *const Self, c: *mut Self, ldc: i32, work: *mut Self, lwork: i32, info: &mut i32) -> Result<(), Error>;
    unsafe fn gesdd(jobz: u8, m: i32, n: i32, a: *mut Self, lda: i32, s: *mut Self::Real, u: *mut Self, ldu: i32, vt: *mut Self, ldvt: i32, work: *mut Self, lwork: i32, rwork: *mut Self::Real, iwork: *mut i32, info: &mut i32) -> Result<(), Error>;
    unsafe fn gesvd(jobu: u8, jobvt: u8, m: i32, n: i32, a: *mut Self, lda: i32, s: *mut Self::Real, u: *mut Self, ldu: i32, vt: *mut Self, ldvt: i32, work: *mut Self, lwork: i32, rwork: *mut Self::Real, info: &mut i32) -> Result<(), Error>;
    /// `syevd` for real types, `heevd` for complex ones (`rwork` unused by the real ones).
    unsafe fn heevd(jobz: u8, uplo: u8, n: i32, a: *mut Self, lda: i32, w: *mut Self::Real, work: *mut Self, lwork: i32, rwork: *mut Self::Real, lrwork: i32, iwork: *mut i32, liwork: i32, info: &mut i32) -> Result<(), Error>;
    unsafe fn gehrd(n: i32, ilo: i32, ihi: i32, a: *mut Self, lda: i32, tau: *mut Self, work: *mut Self, lwork: i32, info: &mut i32) -> Result<(), Error>;
    /// `sytrd` for real types, `hetrd` for complex ones.
    unsafe fn hetrd(uplo: u8, n: i32, a: *mut Self, lda: i32, d: *mut Self::Real, e: *mut Self::Real, tau: *mut Self, work: *mut Self, lwork: i32, info: &mut i32) -> Result<(), Error>;
    unsafe fn gtsv(n: i32, nrhs: i32, dl: *mut Self, d: *mut Self, du: *mut Self, b: *mut Self, ldb: i32, info: &mut i32) -> Result<(), Error>;
}

/// `geev` and `gees` for real types: eigenvalues as separate real and imaginary parts.
pub trait RealEig: Scalar {
    unsafe fn geev(jobvl: u8, jobvr: u8, n: i32, a: *mut Self, lda: i32, wr: *mut Self, wi: *mut Self, vl: *mut Self, ldvl: i32, vr: *mut Self, ldvr: i32, work: *mut Self, lwork: i32, info: &mut i32) -> Result<(), Error>;
    unsafe fn gees(jobvs: u8, sort: u8, n: i32, a: *mut Self, lda: i32, sdim: &mut i32, wr: *mut Self, wi: *mut Self, vs: *mut Self, ldvs: i32, work: *mut Self, lwork: i32, bwork: *mut i32, info: &mut i32) -> Result<(), Error>;
}

/// `geev` and `gees` for complex types.
pub trait ComplexEig: Scalar {
    unsafe fn geev(jobvl: u8, jobvr: u8, n: i32, a: *mut Self, lda: i32, w: *mut Self, vl: *mut Self, ldvl: i32, vr: *mut Self, ldvr: i32, work: *mut Self, lwork: i32, rwork: *mut Self::Real, info: &mut i32) -> Result<(), Error>;
    unsafe fn gees(jobvs: u8, sort: u8, n: i32, a: *mut Self, lda: i32, sdim: &mut i32, w: *mut Self, vs: *mut Self, ldvs: i32, work: *mut Self, lwork: i32, rwork: *mut Self::Real, bwork: *mut i32, info: &mut i32) -> Result<(), Error>;
}

fn ch(c: &u8) -> *const c_char {
    (c as *const u8).cast()
}

/// `_`, one per argument: the routine's parameter types are the arguments' types.
macro_rules! infer {
    ($arg:expr) => {
        _
    };
}

/// Calls Fortran routine `$symbol` with the arguments as they are (all pointers), looking it up
/// the first time this call site runs.
macro_rules! fortran {
    ($symbol:ident($($arg:expr),* $(,)?)) => {{
        static ROUTINE: Routine = Routine::new(stringify!($symbol));
        let address = ROUTINE.address()?;
        // SAFETY: `address` is the routine of that name, whose parameters are pointers to exactly
        // these arguments (LAPACK's documented argument lists; the caller passes valid buffers).
        let routine: unsafe extern "C" fn($(infer!($arg)),*) = unsafe { std::mem::transmute::<usize, _>(address) };
        unsafe { routine($($arg),*) };
        Ok(())
    }};
}

/// The routines with the same argument lists in all four types.
macro_rules! common {
    ($t:ty, $r:ty, $dt:ident, $rdt:ident, $cx:expr, $letter:expr, $one:expr, $zero:expr, $re:expr, $fin:expr,
     $trsm:ident, $getrf:ident, $potrf:ident, $geqrf:ident, $orgqr:ident, $ormqr:ident, $gehrd:ident, $gtsv:ident) => {
        const DTYPE: XLA_FFI_DataType = $dt;
        const REAL_DTYPE: XLA_FFI_DataType = $rdt;
        const COMPLEX: bool = $cx;
        const LETTER: char = $letter;
        fn one() -> Self {
            $one
        }
        fn zero() -> Self {
            $zero
        }
        fn real_part(self) -> f64 {
            ($re)(self)
        }
        fn finite(self) -> bool {
            ($fin)(self)
        }
        fn real_from_f64(v: f64) -> $r {
            v as $r
        }
        unsafe fn trsm(side: u8, uplo: u8, trans: u8, diag: u8, m: i32, n: i32, alpha: Self, a: *const Self, lda: i32, b: *mut Self, ldb: i32) -> Result<(), Error> {
            fortran!($trsm(ch(&side), ch(&uplo), ch(&trans), ch(&diag), &m, &n, &alpha, a, &lda, b, &ldb))
        }
        unsafe fn getrf(m: i32, n: i32, a: *mut Self, lda: i32, ipiv: *mut i32, info: &mut i32) -> Result<(), Error> {
            fortran!($getrf(&m, &n, a, &lda, ipiv, info))
        }
        unsafe fn potrf(uplo: u8, n: i32, a: *mut Self, lda: i32, info: &mut i32) -> Result<(), Error> {
            fortran!($potrf(ch(&uplo), &n, a, &lda, info))
        }
        unsafe fn geqrf(m: i32, n: i32, a: *mut Self, lda: i32, tau: *mut Self, work: *mut Self, lwork: i32, info: &mut i32) -> Result<(), Error> {
            fortran!($geqrf(&m, &n, a, &lda, tau, work, &lwork, info))
        }
        unsafe fn orgqr(m: i32, n: i32, k: i32, a: *mut Self, lda: i32, tau: *const Self, work: *mut Self, lwork: i32, info: &mut i32) -> Result<(), Error> {
            fortran!($orgqr(&m, &n, &k, a, &lda, tau, work, &lwork, info))
        }
        unsafe fn ormqr(side: u8, trans: u8, m: i32, n: i32, k: i32, a: *const Self, lda: i32, tau: *const Self, c: *mut Self, ldc: i32, work: *mut Self, lwork: i32, info: &mut i32) -> Result<(), Error> {
            fortran!($ormqr(ch(&side), ch(&trans), &m, &n, &k, a, &lda, tau, c, &ldc, work, &lwork, info))
        }
        unsafe fn gehrd(n: i32, ilo: i32, ihi: i32, a: *mut Self, lda: i32, tau: *mut Self, work: *mut Self, lwork: i32, info: &mut i32) -> Result<(), Error> {
            fortran!($gehrd(&n, &ilo, &ihi, a, &lda, tau, work, &lwork, info))
        }
        unsafe fn gtsv(n: i32, nrhs: i32, dl: *mut Self, d: *mut Self, du: *mut Self, b: *mut Self, ldb: i32, info: &mut i32) -> Result<(), Error> {
            fortran!($gtsv(&n, &nrhs, dl, d, du, b, &ldb, info))
        }
    };
}

macro_rules! real_scalar {
    ($t:ty, $dt:ident, $trsm:ident, $getrf:ident, $potrf:ident, $geqrf:ident, $geqp3:ident, $orgqr:ident, $ormqr:ident,
     $gesdd:ident, $gesvd:ident, $syevd:ident, $gehrd:ident, $sytrd:ident, $gtsv:ident, $geev:ident, $gees:ident, $letter:expr) => {
        impl Scalar for $t {
            type Real = $t;
            common!($t, $t, $dt, $dt, false, $letter, 1.0, 0.0, |x: $t| x as f64, |x: $t| x.is_finite(),
                $trsm, $getrf, $potrf, $geqrf, $orgqr, $ormqr, $gehrd, $gtsv);
            unsafe fn geqp3(m: i32, n: i32, a: *mut Self, lda: i32, jpvt: *mut i32, tau: *mut Self, work: *mut Self, lwork: i32, _rwork: *mut $t, info: &mut i32) -> Result<(), Error> {
                fortran!($geqp3(&m, &n, a, &lda, jpvt, tau, work, &lwork, info))
            }
            unsafe fn gesdd(jobz: u8, m: i32, n: i32, a: *mut Self, lda: i32, s: *mut $t, u: *mut Self, ldu: i32, vt: *mut Self, ldvt: i32, work: *mut Self, lwork: i32, _rwork: *mut $t, iwork: *mut i32, info: &mut i32) -> Result<(), Error> {
                fortran!($gesdd(ch(&jobz), &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info))
            }
            unsafe fn gesvd(jobu: u8, jobvt: u8, m: i32, n: i32, a: *mut Self, lda: i32, s: *mut $t, u: *mut Self, ldu: i32, vt: *mut Self, ldvt: i32, work: *mut Self, lwork: i32, _rwork: *mut $t, info: &mut i32) -> Result<(), Error> {
                fortran!($gesvd(ch(&jobu), ch(&jobvt), &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, info))
            }
            unsafe fn heevd(jobz: u8, uplo: u8, n: i32, a: *mut Self, lda: i32, w: *mut $t, work: *mut Self, lwork: i32, _rwork: *mut $t, _lrwork: i32, iwork: *mut i32, liwork: i32, info: &mut i32) -> Result<(), Error> {
                fortran!($syevd(ch(&jobz), ch(&uplo), &n, a, &lda, w, work, &lwork, iwork, &liwork, info))
            }
            unsafe fn hetrd(uplo: u8, n: i32, a: *mut Self, lda: i32, d: *mut $t, e: *mut $t, tau: *mut Self, work: *mut Self, lwork: i32, info: &mut i32) -> Result<(), Error> {
                fortran!($sytrd(ch(&uplo), &n, a, &lda, d, e, tau, work, &lwork, info))
            }
        }
        impl RealEig for $t {
            unsafe fn geev(jobvl: u8, jobvr: u8, n: i32, a: *mut Self, lda: i32, wr: *mut Self, wi: *mut Self, vl: *mut Self, ldvl: i32, vr: *mut Self, ldvr: i32, work: *mut Self, lwork: i32, info: &mut i32) -> Result<(), Error> {
                fortran!($geev(ch(&jobvl), ch(&jobvr), &n, a, &lda, wr, wi, vl, &ldvl, vr, &ldvr, work, &lwork, info))
            }
            unsafe fn gees(jobvs: u8, sort: u8, n: i32, a: *mut Self, lda: i32, sdim: &mut i32, wr: *mut Self, wi: *mut Self, vs: *mut Self, ldvs: i32, work: *mut Self, lwork: i32, bwork: *mut i32, info: &mut i32) -> Result<(), Error> {
                fortran!($gees(ch(&jobvs), ch(&sort), std::ptr::null::<c_void>(), &n, a, &lda, sdim, wr, wi, vs, &ldvs, work, &lwork, bwork, info))
            }
        }
    };
}

macro_rules! complex_scalar {
    ($r:ty, $dt:ident, $rdt:ident, $trsm:ident, $getrf:ident, $potrf:ident, $geqrf:ident, $geqp3:ident, $orgqr:ident, $ormqr:ident,
     $gesdd:ident, $gesvd:ident, $heevd:ident, $gehrd:ident, $hetrd:ident, $gtsv:ident, $geev:ident, $gees:ident, $letter:expr) => {
        impl Scalar for Complex<$r> {
            type Real = $r;
            common!(Complex<$r>, $r, $dt, $rdt, true, $letter, Complex::new(1.0, 0.0), Complex::new(0.0, 0.0),
                |x: Complex<$r>| x.re as f64, |x: Complex<$r>| x.re.is_finite() && x.im.is_finite(),
                $trsm, $getrf, $potrf, $geqrf, $orgqr, $ormqr, $gehrd, $gtsv);
            unsafe fn geqp3(m: i32, n: i32, a: *mut Self, lda: i32, jpvt: *mut i32, tau: *mut Self, work: *mut Self, lwork: i32, rwork: *mut $r, info: &mut i32) -> Result<(), Error> {
                fortran!($geqp3(&m, &n, a, &lda, jpvt, tau, work, &lwork, rwork, info))
            }
            unsafe fn gesdd(jobz: u8, m: i32, n: i32, a: *mut Self, lda: i32, s: *mut $r, u: *mut Self, ldu: i32, vt: *mut Self, ldvt: i32, work: *mut Self, lwork: i32, rwork: *mut $r, iwork: *mut i32, info: &mut i32) -> Result<(), Error> {
                fortran!($gesdd(ch(&jobz), &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, rwork, iwork, info))
            }
            unsafe fn gesvd(jobu: u8, jobvt: u8, m: i32, n: i32, a: *mut Self, lda: i32, s: *mut $r, u: *mut Self, ldu: i32, vt: *mut Self, ldvt: i32, work: *mut Self, lwork: i32, rwork: *mut $r, info: &mut i32) -> Result<(), Error> {
                fortran!($gesvd(ch(&jobu), ch(&jobvt), &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, rwork, info))
            }
            unsafe fn heevd(jobz: u8, uplo: u8, n: i32, a: *mut Self, lda: i32, w: *mut $r, work: *mut Self, lwork: i32, rwork: *mut $r, lrwork: i32, iwork: *mut i32, liwork: i32, info: &mut i32) -> Result<(), Error> {
                fortran!($heevd(ch(&jobz), ch(&uplo), &n, a, &lda, w, work, &lwork, rwork, &lrwork, iwork, &liwork, info))
            }
            unsafe fn hetrd(uplo: u8, n: i32, a: *mut Self, lda: i32, d: *mut $r, e: *mut $r, tau: *mut Self, work: *mut Self, lwork: i32, info: &mut i32) -> Result<(), Error> {
                fortran!($hetrd(ch(&uplo), &n, a, &lda, d, e, tau, work, &lwork, info))
            }
        }
        impl ComplexEig for Complex<$r> {
            unsafe fn geev(jobvl: u8, jobvr: u8, n: i32, a: *mut Self, lda: i32, w: *mut Self, vl: *mut Self, ldvl: i32, vr: *mut Self, ldvr: i32, work: *mut Self, lwork: i32, rwork: *mut $r, info: &mut i32) -> Result<(), Error> {
                fortran!($geev(ch(&jobvl), ch(&jobvr), &n, a, &lda, w, vl, &ldvl, vr, &ldvr, work, &lwork, rwork, info))
            }
            unsafe fn gees(jobvs: u8, sort: u8, n: i32, a: *mut Self, lda: i32, sdim: &mut i32, w: *mut Self, vs: *mut Self, ldvs: i32, work: *mut Self, lwork: i32, rwork: *mut $r, bwork: *mut i32, info: &mut i32) -> Result<(), Error> {
                fortran!($gees(ch(&jobvs), ch(&sort), std::ptr::null::<c_void>(), &n, a, &lda, sdim, w, vs, &ldvs, work, &lwork, rwork, bwork, info))
            }
        }
    };
}

real_scalar!(f32, XLA_FFI_DataType_F32, strsm_, sgetrf_, spotrf_, sgeqrf_, sgeqp3_, sorgqr_, sormqr_, sgesdd_, sgesvd_, ssyevd_, sgehrd_, ssytrd_, sgtsv_, sgeev_, sgees_, 's');
real_scalar!(f64, XLA_FFI_DataType_F64, dtrsm_, dgetrf_, dpotrf_, dgeqrf_, dgeqp3_, dorgqr_, dormqr_, dgesdd_, dgesvd_, dsyevd_, dgehrd_, dsytrd_, dgtsv_, dgeev_, dgees_, 'd');
complex_scalar!(f32, XLA_FFI_DataType_C64, XLA_FFI_DataType_F32, ctrsm_, cgetrf_, cpotrf_, cgeqrf_, cgeqp3_, cungqr_, cunmqr_, cgesdd_, cgesvd_, cheevd_, cgehrd_, chetrd_, cgtsv_, cgeev_, cgees_, 'c');
complex_scalar!(f64, XLA_FFI_DataType_C128, XLA_FFI_DataType_F64, ztrsm_, zgetrf_, zpotrf_, zgeqrf_, zgeqp3_, zungqr_, zunmqr_, zgesdd_, zgesvd_, zheevd_, zgehrd_, zhetrd_, zgtsv_, zgeev_, zgees_, 'z');
