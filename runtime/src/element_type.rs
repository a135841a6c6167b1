//! XLA's primitive (element) types and their properties.

use std::fmt;

/// An XLA primitive type. Names follow HLO text (`f32`, `bf16`, `f8e4m3fn`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElementType {
    Pred,
    S2,
    S4,
    S8,
    S16,
    S32,
    S64,
    U2,
    U4,
    U8,
    U16,
    U32,
    U64,
    F16,
    BF16,
    F32,
    F64,
    F8E5M2,
    F8E4M3FN,
    F8E4M3B11FNUZ,
    F8E5M2FNUZ,
    F8E4M3FNUZ,
    F8E4M3,
    F8E3M4,
    F8E8M0FNU,
    F4E2M1FN,
    C64,
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
    pub exponent_bits: u32,
    pub mantissa_bits: u32,
    pub bias: i32,
    pub encoding: FloatEncoding,
}

impl FloatFormat {
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

    pub fn is_pred(self) -> bool {
        self == ElementType::Pred
    }

    pub fn is_signed_int(self) -> bool {
        use ElementType::*;
        matches!(self, S2 | S4 | S8 | S16 | S32 | S64)
    }

    pub fn is_unsigned_int(self) -> bool {
        use ElementType::*;
        matches!(self, U2 | U4 | U8 | U16 | U32 | U64)
    }

    /// Signed or unsigned integer (not pred).
    pub fn is_int(self) -> bool {
        self.is_signed_int() || self.is_unsigned_int()
    }

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
