//! The scalar arithmetic jaxlib's perturbed tridiagonal solver needs, over f32, f64, c64 and
//! c128 (magnitudes and perturbations are real).

use hlojit_ffi::xla::{XLA_FFI_DataType, XLA_FFI_DataType_C128, XLA_FFI_DataType_C64, XLA_FFI_DataType_F32, XLA_FFI_DataType_F64};
use num_complex::Complex;
use std::ops::{Add, Div, Mul, Neg, Sub};

/// A real or complex element with its real type `R`.
pub trait Tri:
    Copy + PartialEq + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self> + Neg<Output = Self>
{
    type R: Copy + PartialOrd + Add<Output = Self::R> + Mul<Output = Self::R> + Div<Output = Self::R>;
    const DTYPE: XLA_FFI_DataType;
    fn zero() -> Self;
    fn one() -> Self;
    /// The magnitude (`hypot` for complex numbers, as `std::abs`).
    fn abs(self) -> Self::R;
    fn re(self) -> Self::R;
    /// Adds a real number to the real part.
    fn add_re(self, r: Self::R) -> Self;
    /// Multiplies by a real number.
    fn scale(self, r: Self::R) -> Self;
    /// Division as jaxlib's compiled C++ does it: for complex numbers libgcc's `__divdc3`
    /// (Smith's algorithm), whose rounding differs from the textbook formula `num_complex` uses;
    /// near-singular systems amplify that difference.
    fn div_c(self, other: Self) -> Self;
    fn r(v: f64) -> Self::R;
    fn rabs(r: Self::R) -> Self::R;
    fn rmax(a: Self::R, b: Self::R) -> Self::R;
    fn copysign(mag: Self::R, sign: Self::R) -> Self::R;
    fn epsilon() -> Self::R;
    fn min_positive() -> Self::R;
    fn max_value() -> Self::R;
}

macro_rules! real_ops {
    ($r:ty) => {
        fn r(v: f64) -> $r {
            v as $r
        }
        fn rabs(r: $r) -> $r {
            r.abs()
        }
        fn rmax(a: $r, b: $r) -> $r {
            // std::max: the first unless the second is larger (NaN never is).
            if a < b {
                b
            } else {
                a
            }
        }
        fn copysign(mag: $r, sign: $r) -> $r {
            mag.copysign(sign)
        }
        fn epsilon() -> $r {
            <$r>::EPSILON
        }
        fn min_positive() -> $r {
            <$r>::MIN_POSITIVE
        }
        fn max_value() -> $r {
            <$r>::MAX
        }
    };
}

macro_rules! real {
    ($r:ty, $dt:ident) => {
        impl Tri for $r {
            type R = $r;
            const DTYPE: XLA_FFI_DataType = $dt;
            fn zero() -> Self {
                0.0
            }
            fn one() -> Self {
                1.0
            }
            fn abs(self) -> $r {
                <$r>::abs(self)
            }
            fn re(self) -> $r {
                self
            }
            fn add_re(self, r: $r) -> Self {
                self + r
            }
            fn scale(self, r: $r) -> Self {
                self * r
            }
            fn div_c(self, other: Self) -> Self {
                self / other
            }
            real_ops!($r);
        }
    };
}

macro_rules! complex {
    ($r:ty, $dt:ident) => {
        impl Tri for Complex<$r> {
            type R = $r;
            const DTYPE: XLA_FFI_DataType = $dt;
            fn zero() -> Self {
                Complex::new(0.0, 0.0)
            }
            fn one() -> Self {
                Complex::new(1.0, 0.0)
            }
            fn abs(self) -> $r {
                self.re.hypot(self.im)
            }
            fn re(self) -> $r {
                self.re
            }
            fn add_re(self, r: $r) -> Self {
                Complex::new(self.re + r, self.im)
            }
            fn scale(self, r: $r) -> Self {
                Complex::new(self.re * r, self.im * r)
            }
            fn div_c(self, other: Self) -> Self {
                let (a, b, c, d) = (self.re, self.im, other.re, other.im);
                if c.abs() < d.abs() {
                    let ratio = c / d;
                    let denom = c * ratio + d;
                    Complex::new((a * ratio + b) / denom, (b * ratio - a) / denom)
                } else if c == 0.0 && d == 0.0 {
                    self / other
                } else {
                    let ratio = d / c;
                    let denom = d * ratio + c;
                    Complex::new((b * ratio + a) / denom, (b - a * ratio) / denom)
                }
            }
            real_ops!($r);
        }
    };
}

real!(f32, XLA_FFI_DataType_F32);
real!(f64, XLA_FFI_DataType_F64);
complex!(f32, XLA_FFI_DataType_C64);
complex!(f64, XLA_FFI_DataType_C128);
