//! XLA's primitive (element) types and their properties.

use std::fmt;

/// An XLA primitive type. Names follow HLO text (`f32`, `bf16`, `f8e4m3fn`, ...).
///
/// ```rust
/// use hlojit_runtime::ElementType;
///
/// let t = ElementType::from_name("bf16").unwrap();
/// assert_eq!(t, ElementType::BF16);
/// assert_eq!(t.to_string(), "bf16");
/// assert_eq!((t.bit_width(), t.byte_size()), (16, 2));
/// assert!(t.is_float() && t.is_native_float() && !t.is_complex());
/// assert_eq!(t.float_format().unwrap().mantissa_bits, 7);
/// assert_eq!(ElementType::S4.byte_size(), 1); // sub-byte types take a byte each
/// assert_eq!(ElementType::C64.complex_component(), Some(ElementType::F32));
/// assert_eq!(ElementType::from_name("float32"), None); // HLO names only
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElementType {
    /// `pred`: a boolean, stored as one byte holding 0 or 1.
    Pred,
    /// `s2`: 2-bit signed integer (stored one per byte, in the low bits).
    S2,
    /// `s4`: 4-bit signed integer (stored one per byte, in the low bits).
    S4,
    /// `s8`: 8-bit signed integer.
    S8,
    /// `s16`: 16-bit signed integer.
    S16,
    /// `s32`: 32-bit signed integer.
    S32,
    /// `s64`: 64-bit signed integer.
    S64,
    /// `u2`: 2-bit unsigned integer (stored one per byte, in the low bits).
    U2,
    /// `u4`: 4-bit unsigned integer (stored one per byte, in the low bits).
    U4,
    /// `u8`: 8-bit unsigned integer.
    U8,
    /// `u16`: 16-bit unsigned integer.
    U16,
    /// `u32`: 32-bit unsigned integer.
    U32,
    /// `u64`: 64-bit unsigned integer.
    U64,
    /// `f16`: IEEE half precision (1 sign, 5 exponent, 10 mantissa bits).
    F16,
    /// `bf16`: bfloat16, the upper half of an f32 (8 exponent, 7 mantissa bits).
    BF16,
    /// `f32`: IEEE single precision.
    F32,
    /// `f64`: IEEE double precision.
    F64,
    /// `f8e5m2`: 8-bit float, 5 exponent and 2 mantissa bits, IEEE-style inf and NaN.
    F8E5M2,
    /// `f8e4m3fn`: 8-bit float, 4 exponent and 3 mantissa bits, no infinities, NaN only
    /// when all bits but the sign are set.
    F8E4M3FN,
    /// `f8e4m3b11fnuz`: 8-bit float, 4 exponent (bias 11) and 3 mantissa bits, no
    /// infinities, no negative zero; `0x80` is the NaN.
    F8E4M3B11FNUZ,
    /// `f8e5m2fnuz`: 8-bit float, 5 exponent (bias 16) and 2 mantissa bits, no infinities,
    /// no negative zero; `0x80` is the NaN.
    F8E5M2FNUZ,
    /// `f8e4m3fnuz`: 8-bit float, 4 exponent (bias 8) and 3 mantissa bits, no infinities,
    /// no negative zero; `0x80` is the NaN.
    F8E4M3FNUZ,
    /// `f8e4m3`: 8-bit float, 4 exponent and 3 mantissa bits, IEEE-style inf and NaN.
    F8E4M3,
    /// `f8e3m4`: 8-bit float, 3 exponent and 4 mantissa bits, IEEE-style inf and NaN.
    F8E3M4,
    /// `f8e8m0fnu`: 8-bit unsigned power of two (exponent only, bias 127); `0xff` is NaN.
    F8E8M0FNU,
    /// `f4e2m1fn`: 4-bit float, 2 exponent and 1 mantissa bit, no infinities or NaN
    /// (stored one per byte, in the low bits).
    F4E2M1FN,
    /// `c64`: complex of two f32s (real part first).
    C64,
    /// `c128`: complex of two f64s (real part first).
    C128,
}

/// How a small float format encodes non-finite values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatEncoding {
    /// IEEE-754: all-ones exponent is inf (zero mantissa) or NaN.
    Ieee,
    /// "fn": no infinities; only the all-ones bit pattern (per sign) is NaN.
    FiniteAllOnesNan,
    /// "fnuz": no infinities, no negative zero; the pattern `1000..0` is the only NaN.
    FiniteNegZeroNan,
    /// "fnu" (e8m0): unsigned, exponent only; all ones is NaN.
    ExponentOnlyUnsigned,
    /// "fn" with no NaN at all (f4e2m1fn).
    FiniteNoNan,
}

/// Bit-level description of a floating-point element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FloatFormat {
    /// Width of the biased exponent field.
    pub exponent_bits: u32,
    /// Width of the stored mantissa (fraction) field, without the implicit leading bit.
    pub mantissa_bits: u32,
    /// Exponent bias: a normal value is `1.m * 2^(e - bias)`.
    pub bias: i32,
    /// How infinities, NaNs and negative zero are encoded.
    pub encoding: FloatEncoding,
}

impl FloatFormat {
    /// Bits of one value: sign (absent for the unsigned e8m0 format), exponent and mantissa.
    pub fn total_bits(&self) -> u32 {
        let sign = if self.encoding == FloatEncoding::ExponentOnlyUnsigned { 0 } else { 1 };
        sign + self.exponent_bits + self.mantissa_bits
    }
}

const ALL: [ElementType; 28] = [
    ElementType::Pred,
    ElementType::S2,
    ElementType::S4,
    ElementType::S8,
    ElementType::S16,
    ElementType::S32,
    ElementType::S64,
    ElementType::U2,
    ElementType::U4,
    ElementType::U8,
    ElementType::U16,
    ElementType::U32,
    ElementType::U64,
    ElementType::F16,
    ElementType::BF16,
    ElementType::F32,
    ElementType::F64,
    ElementType::F8E5M2,
    ElementType::F8E4M3FN,
    ElementType::F8E4M3B11FNUZ,
    ElementType::F8E5M2FNUZ,
    ElementType::F8E4M3FNUZ,
    ElementType::F8E4M3,
    ElementType::F8E3M4,
    ElementType::F8E8M0FNU,
    ElementType::F4E2M1FN,
    ElementType::C64,
    ElementType::C128,
];

impl ElementType {
    /// Every element type, in declaration order.
    pub fn all() -> &'static [ElementType] {
        &ALL
    }

    /// The lowercase name HLO text uses.
    pub fn name(self) -> &'static str {
        use ElementType::*;
        match self {
            Pred => "pred",
            S2 => "s2",
            S4 => "s4",
            S8 => "s8",
            S16 => "s16",
            S32 => "s32",
            S64 => "s64",
            U2 => "u2",
            U4 => "u4",
            U8 => "u8",
            U16 => "u16",
            U32 => "u32",
            U64 => "u64",
            F16 => "f16",
            BF16 => "bf16",
            F32 => "f32",
            F64 => "f64",
            F8E5M2 => "f8e5m2",
            F8E4M3FN => "f8e4m3fn",
            F8E4M3B11FNUZ => "f8e4m3b11fnuz",
            F8E5M2FNUZ => "f8e5m2fnuz",
            F8E4M3FNUZ => "f8e4m3fnuz",
            F8E4M3 => "f8e4m3",
            F8E3M4 => "f8e3m4",
            F8E8M0FNU => "f8e8m0fnu",
            F4E2M1FN => "f4e2m1fn",
            C64 => "c64",
            C128 => "c128",
        }
    }

    /// The type an HLO name denotes (`"f32"`, `"pred"`, ...); `None` for anything else
    /// (names are lowercase, as HLO prints them).
    pub fn from_name(name: &str) -> Option<ElementType> {
        ALL.iter().copied().find(|t| t.name() == name)
    }

    /// Bits of one element's value (pred counts as 8: it is stored as a byte).
    pub fn bit_width(self) -> u32 {
        use ElementType::*;
        match self {
            Pred => 8,
            S2 | U2 => 2,
            S4 | U4 | F4E2M1FN => 4,
            S8 | U8 => 8,
            F8E5M2 | F8E4M3FN | F8E4M3B11FNUZ | F8E5M2FNUZ | F8E4M3FNUZ | F8E4M3 | F8E3M4
            | F8E8M0FNU => 8,
            S16 | U16 | F16 | BF16 => 16,
            S32 | U32 | F32 => 32,
            S64 | U64 | F64 | C64 => 64,
            C128 => 128,
        }
    }

    /// Bytes one element takes in an unpacked buffer (sub-byte types take a whole byte).
    pub fn byte_size(self) -> usize {
        (self.bit_width() as usize).div_ceil(8)
    }

    /// True for `pred`.
    pub fn is_pred(self) -> bool {
        self == ElementType::Pred
    }

    /// True for `s2` to `s64`.
    pub fn is_signed_int(self) -> bool {
        use ElementType::*;
        matches!(self, S2 | S4 | S8 | S16 | S32 | S64)
    }

    /// True for `u2` to `u64`.
    pub fn is_unsigned_int(self) -> bool {
        use ElementType::*;
        matches!(self, U2 | U4 | U8 | U16 | U32 | U64)
    }

    /// Signed or unsigned integer (not pred).
    pub fn is_int(self) -> bool {
        self.is_signed_int() || self.is_unsigned_int()
    }

    /// True for `c64` and `c128`.
    pub fn is_complex(self) -> bool {
        matches!(self, ElementType::C64 | ElementType::C128)
    }

    /// Real floating-point types, including the small (f8/f4) formats.
    pub fn is_float(self) -> bool {
        self.float_format().is_some()
    }

    /// f16, bf16, f32 and f64: the types with native LLVM counterparts.
    pub fn is_native_float(self) -> bool {
        use ElementType::*;
        matches!(self, F16 | BF16 | F32 | F64)
    }

    /// Float formats narrower than 16 bits, computed through a wider type.
    pub fn is_small_float(self) -> bool {
        self.is_float() && self.bit_width() < 16
    }

    /// Any type arithmetic treats as floating point (real or complex).
    pub fn is_floating(self) -> bool {
        self.is_float() || self.is_complex()
    }

    /// The real component type of a complex type.
    pub fn complex_component(self) -> Option<ElementType> {
        match self {
            ElementType::C64 => Some(ElementType::F32),
            ElementType::C128 => Some(ElementType::F64),
            _ => None,
        }
    }

    /// The bit layout of a real floating-point type; `None` for integers, pred and complex types.
    pub fn float_format(self) -> Option<FloatFormat> {
        use ElementType::*;
        use FloatEncoding::*;
        let f = |exponent_bits, mantissa_bits, bias, encoding| {
            Some(FloatFormat { exponent_bits, mantissa_bits, bias, encoding })
        };
        match self {
            F16 => f(5, 10, 15, Ieee),
            BF16 => f(8, 7, 127, Ieee),
            F32 => f(8, 23, 127, Ieee),
            F64 => f(11, 52, 1023, Ieee),
            F8E5M2 => f(5, 2, 15, Ieee),
            F8E4M3 => f(4, 3, 7, Ieee),
            F8E3M4 => f(3, 4, 3, Ieee),
            F8E4M3FN => f(4, 3, 7, FiniteAllOnesNan),
            F8E4M3FNUZ => f(4, 3, 8, FiniteNegZeroNan),
            F8E5M2FNUZ => f(5, 2, 16, FiniteNegZeroNan),
            F8E4M3B11FNUZ => f(4, 3, 11, FiniteNegZeroNan),
            F8E8M0FNU => f(8, 0, 127, ExponentOnlyUnsigned),
            F4E2M1FN => f(2, 1, 1, FiniteNoNan),
            _ => None,
        }
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
