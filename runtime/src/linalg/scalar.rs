//! The real element types the built-in LAPACK routines are generic over.

use hlojit_ffi::handler::Element;
use std::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};

/// `f32` or `f64`: the arithmetic the factorizations need, plus exact conversions to `f64`
/// for the places that accumulate in double precision.
pub trait Real:
    Element
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + Default
    + std::fmt::Debug
{
    const ZERO: Self;
    const ONE: Self;
    /// The smallest normal number: below it, a reciprocal overflows.
    const MIN_POSITIVE: Self;
    fn abs(self) -> Self;
    fn sqrt(self) -> Self;
    fn is_nan(self) -> bool;
    fn is_finite(self) -> bool;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
}

macro_rules! real {
    ($t:ty) => {
        impl Real for $t {
            const ZERO: $t = 0.0;
            const ONE: $t = 1.0;
            const MIN_POSITIVE: $t = <$t>::MIN_POSITIVE;
            fn abs(self) -> $t {
                <$t>::abs(self)
            }
            fn sqrt(self) -> $t {
                <$t>::sqrt(self)
            }
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            fn from_f64(v: f64) -> $t {
                v as $t
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
    };
}
real!(f32);
real!(f64);

/// The Euclidean norm of `xs`, scaled so that squaring neither overflows nor underflows
/// (what BLAS `nrm2` guarantees), accumulated in `f64`.
pub fn norm2<T: Real>(xs: impl Iterator<Item = T> + Clone) -> T {
    let scale = xs.clone().fold(0.0f64, |m, x| m.max(x.to_f64().abs()));
    if scale == 0.0 || !scale.is_finite() {
        // All zero, or an infinity/NaN that the plain sum propagates correctly.
        return T::from_f64(xs.map(|x| x.to_f64() * x.to_f64()).sum::<f64>().sqrt());
    }
    let sum: f64 = xs.map(|x| (x.to_f64() / scale).powi(2)).sum();
    T::from_f64(scale * sum.sqrt())
}
