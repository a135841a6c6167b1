//! Encoding and decoding of every float format XLA has, on the host, bit-exact: decoding is
//! exact in f64; encoding rounds to nearest even and follows each format's rules for overflow,
//! NaN and negative zero (the ones XLA:CPU's conversions have).

use crate::element_type::{FloatEncoding, FloatFormat};

/// The value a bit pattern of `fmt` encodes.
pub fn decode(bits: u64, fmt: FloatFormat) -> f64 {
    let m = fmt.mantissa_bits;
    let e = fmt.exponent_bits;
    let signed = fmt.encoding != FloatEncoding::ExponentOnlyUnsigned;
    let sign_bit = if signed { (bits >> (e + m)) & 1 } else { 0 };
    let exp = ((bits >> m) & ((1 << e) - 1)) as i64;
    let man = bits & ((1u64 << m) - 1);
    let max_exp = (1i64 << e) - 1;
    let sign = if sign_bit == 1 { -1.0 } else { 1.0 };
    match fmt.encoding {
        FloatEncoding::Ieee if exp == max_exp => {
            return if man == 0 { sign * f64::INFINITY } else { f64::NAN };
        }
        FloatEncoding::FiniteAllOnesNan if exp == max_exp && man == (1 << m) - 1 => return f64::NAN,
        FloatEncoding::FiniteNegZeroNan if sign_bit == 1 && exp == 0 && man == 0 => return f64::NAN,
        FloatEncoding::ExponentOnlyUnsigned if exp == max_exp => return f64::NAN,
        _ => {}
    }
    let value = if exp == 0 && fmt.encoding != FloatEncoding::ExponentOnlyUnsigned {
        man as f64 * 2f64.powi(1 - fmt.bias - m as i32)
    } else {
        (1.0 + man as f64 / (1u64 << m) as f64) * 2f64.powi(exp as i32 - fmt.bias)
    };
    sign * value
}

/// The largest finite value of a format.
pub fn max_finite(fmt: FloatFormat) -> f64 {
    let m = fmt.mantissa_bits;
    let max_exp = (1i64 << fmt.exponent_bits) - 1;
    let (top_exp, top_man) = match fmt.encoding {
        FloatEncoding::Ieee => (max_exp - 1, (1u64 << m) - 1),
        FloatEncoding::FiniteAllOnesNan => (max_exp, (1u64 << m) - 2),
        FloatEncoding::FiniteNegZeroNan | FloatEncoding::FiniteNoNan => (max_exp, (1u64 << m) - 1),
        FloatEncoding::ExponentOnlyUnsigned => (max_exp - 1, 0),
    };
    (1.0 + top_man as f64 / (1u64 << m) as f64) * 2f64.powi(top_exp as i32 - fmt.bias)
}

/// The bit pattern of `fmt` nearest to `value` (ties to even).
pub fn encode(value: f64, fmt: FloatFormat) -> u64 {
    let m = fmt.mantissa_bits;
    let e = fmt.exponent_bits;
    let max_exp = (1u64 << e) - 1;
    let signed = fmt.encoding != FloatEncoding::ExponentOnlyUnsigned;
    let sign_shift = e + m;
    let nan_bits = match fmt.encoding {
        FloatEncoding::Ieee => (max_exp << m) | (1 << (m.max(1) - 1)),
        FloatEncoding::FiniteAllOnesNan => (max_exp << m) | ((1 << m) - 1),
        FloatEncoding::FiniteNegZeroNan => 1 << sign_shift,
        FloatEncoding::ExponentOnlyUnsigned => max_exp,
        FloatEncoding::FiniteNoNan => 0,
    };
    if value.is_nan() {
        return nan_bits;
    }
    let negative = value.is_sign_negative();
    let sign = if negative && signed { 1u64 << sign_shift } else { 0 };
    if !signed && negative && value != 0.0 {
        return nan_bits;
    }
    let a = value.abs();
    let overflow = || match fmt.encoding {
        FloatEncoding::Ieee => sign | (max_exp << m),
        FloatEncoding::FiniteNoNan => sign | (max_exp << m) | ((1 << m) - 1),
        _ => nan_bits,
    };
    if a.is_infinite() {
        return overflow();
    }
    if a == 0.0 {
        return if fmt.encoding == FloatEncoding::FiniteNegZeroNan { 0 } else { sign };
    }
    // Quantise |value| onto the format's grid at its exponent: ulp = 2^(exp - bias - m).
    let min_normal_exp = 1 - fmt.bias;
    let mut exp = a.log2().floor() as i32;
    // log2 can be off by one near powers of two; correct it exactly.
    if 2f64.powi(exp) > a {
        exp -= 1;
    } else if 2f64.powi(exp + 1) <= a {
        exp += 1;
    }
    let exp_for_grid = exp.max(min_normal_exp);
    let ulp_exp = exp_for_grid - m as i32;
    let scaled = a * 2f64.powi(-ulp_exp); // exact: a power-of-two scale
    let rounded = round_half_even(scaled);
    // rounded is the significand in units of ulp; it may have carried into the next binade.
    let mut q = rounded as u64;
    let mut biased_exp: i64 = if exp >= min_normal_exp { (exp + fmt.bias) as i64 } else { 0 };
    if biased_exp == 0 {
        // Subnormal: q < 2^m unless it rounded up to the smallest normal.
        if q >= (1 << m) {
            biased_exp = 1;
            q -= 1 << m;
        }
    } else {
        if q >= (2 << m) {
            q >>= 1;
            biased_exp += 1;
        }
        q -= 1 << m;
    }
    if fmt.encoding == FloatEncoding::ExponentOnlyUnsigned {
        // No subnormals and no zero: round onto the nearest power of two.
        let biased = (exp + fmt.bias) as i64 + if scaled >= 1.5 { 1 } else { 0 };
        return if biased >= max_exp as i64 { nan_bits } else { biased.max(0) as u64 };
    }
    // Beyond the largest exponent the field would spill into the sign bit (e4m3b11fnuz of
    // -226 gave -0.0034): overflow, before the bits are put together.
    if biased_exp > max_exp as i64 {
        return overflow();
    }
    let bits = sign | ((biased_exp as u64) << m) | q;
    let magnitude = bits & !sign;
    let max_magnitude = encode_magnitude_of_max(fmt);
    if magnitude > max_magnitude {
        return overflow();
    }
    if fmt.encoding == FloatEncoding::FiniteNegZeroNan && magnitude == 0 {
        return 0;
    }
    bits
}

fn encode_magnitude_of_max(fmt: FloatFormat) -> u64 {
    let m = fmt.mantissa_bits;
    let max_exp = (1u64 << fmt.exponent_bits) - 1;
    match fmt.encoding {
        FloatEncoding::Ieee => ((max_exp - 1) << m) | ((1 << m) - 1),
        FloatEncoding::FiniteAllOnesNan => (max_exp << m) | ((1 << m) - 2),
        FloatEncoding::FiniteNegZeroNan | FloatEncoding::FiniteNoNan => (max_exp << m) | ((1 << m) - 1),
        FloatEncoding::ExponentOnlyUnsigned => max_exp - 1,
    }
}

fn round_half_even(x: f64) -> f64 {
    let r = x.round();
    if (r - x).abs() == 0.5 && r % 2.0 != 0.0 {
        r - x.signum()
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::element_type::ElementType;

    fn fmt(t: ElementType) -> FloatFormat {
        t.float_format().unwrap()
    }

    #[test]
    fn f16_and_bf16_agree_with_half_crate() {
        for bits in 0..=u16::MAX {
            let h = half::f16::from_bits(bits).to_f64();
            let d = decode(bits as u64, fmt(ElementType::F16));
            assert!(h == d || (h.is_nan() && d.is_nan()), "f16 {bits:#x}");
            if !h.is_nan() {
                assert_eq!(encode(h, fmt(ElementType::F16)), bits as u64);
            }
            let b = half::bf16::from_bits(bits).to_f64();
            assert!(b == decode(bits as u64, fmt(ElementType::BF16)) || b.is_nan());
        }
        for x in [1.0e-3f64, 65519.0, 65520.0, 1e-8, 3.0e-8, -2.5, 1.0 / 3.0] {
            assert_eq!(encode(x, fmt(ElementType::F16)), half::f16::from_f64(x).to_bits() as u64, "{x}");
            assert_eq!(encode(x, fmt(ElementType::BF16)), half::bf16::from_f64(x).to_bits() as u64, "{x}");
        }
    }

    #[test]
    fn f8_special_values() {
        let e4m3fn = fmt(ElementType::F8E4M3FN);
        assert_eq!(max_finite(e4m3fn), 448.0);
        assert_eq!(encode(1000.0, e4m3fn), 0x7f, "overflow is NaN in e4m3fn");
        assert_eq!(encode(464.0, e4m3fn), 0x7e, "rounds down to max below the halfway point");
        let e5m2 = fmt(ElementType::F8E5M2);
        assert_eq!(max_finite(e5m2), 57344.0);
        assert_eq!(encode(1e6, e5m2), 0x7c, "overflow is inf in e5m2");
        assert_eq!(decode(0x01, e5m2), 2f64.powi(-16));
        let fnuz = fmt(ElementType::F8E4M3FNUZ);
        assert_eq!(encode(-0.0, fnuz), 0);
        assert!(decode(0x80, fnuz).is_nan());
        // Far beyond the range (the exponent field itself overflows): ml_dtypes' values.
        assert_eq!(encode(-225.95, fmt(ElementType::F8E4M3B11FNUZ)), 0x80, "NaN, the only one");
        assert_eq!(encode(-225.95, fmt(ElementType::F8E3M4)), 0xf0, "-inf");
        assert_eq!(encode(1e30, e4m3fn), 0x7f);
        assert_eq!(encode(-1e30, e5m2), 0xfc);
    }
}
