//! Conversions LLVM's x86 code generator calls by name (libcalls) and that the process may not
//! have: on CPUs without AVX512-BF16, a `bfloat` value that LLVM keeps in a vector register
//! (after the SLP vectorizer packs two of them, or a `select`/`phi` it widens) is promoted to
//! f32 and truncated back through `__truncsfbf2`. compiler-rt defines it, libgcc only from
//! GCC 13, and Rust's own builtins are not exported to the JIT; without it a bf16
//! select-and-scatter failed to load ("Symbols not found: [ __truncsfbf2 ]", found by
//! `hlojit fuzz-diff`). The JIT defines these by name ([`crate::symbols::runtime_symbols`]);
//! AOT objects find them in the runtime's static library (unmangled names).
//!
//! ABI: the argument arrives in xmm0 as a float/double, and the bfloat result goes back in the
//! low 16 bits of xmm0, which is where an `f32` return value with those bits in its low half
//! puts it.

/// The names defined here: LLVM's back end calls them, hlojit's code generator never does.
pub const NAMES: &[&str] = &["__truncsfbf2", "__truncdfbf2"];

/// float → bfloat, rounding to nearest even; NaN stays NaN (quiet, sign kept).
#[no_mangle]
pub extern "C" fn __truncsfbf2(x: f32) -> f32 {
    f32::from_bits(half::bf16::from_f32(x).to_bits() as u32)
}

/// double → bfloat, rounded once (`half`'s `from_f64` goes through f32 and can round twice).
#[no_mangle]
pub extern "C" fn __truncdfbf2(x: f64) -> f32 {
    let bf16 = crate::element_type::ElementType::BF16.float_format().expect("bf16 is a float format");
    f32::from_bits(crate::float_bits::encode(x, bf16) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(r: f32) -> u16 {
        r.to_bits() as u16
    }

    #[test]
    fn rounds_to_nearest_even_and_keeps_nan_and_signs() {
        assert_eq!(bits(__truncsfbf2(1.0)), 0x3f80);
        assert_eq!(bits(__truncsfbf2(-0.0)), 0x8000);
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even 1.0.
        assert_eq!(bits(__truncsfbf2(1.0 + 2f32.powi(-8))), 0x3f80);
        // Just above halfway rounds up.
        assert_eq!(bits(__truncsfbf2(f32::from_bits(0x3f80_8001))), 0x3f81);
        assert_eq!(bits(__truncsfbf2(f32::MAX)), 0x7f80);
        assert_eq!(bits(__truncsfbf2(f32::NEG_INFINITY)), 0xff80);
        let nan = bits(__truncsfbf2(f32::NAN));
        assert_eq!(nan & 0x7f80, 0x7f80);
        assert_ne!(nan & 0x7f, 0);
        // From f64: 1 + 2^-8 + 2^-30 is above halfway; through f32 it would round to the tie
        // (1 + 2^-8) and then to 1.0.
        assert_eq!(bits(__truncdfbf2(1.0 + 2f64.powi(-8) + 2f64.powi(-30))), 0x3f81);
        assert_eq!(bits(__truncdfbf2(-2.5)), 0xc020);
    }
}
