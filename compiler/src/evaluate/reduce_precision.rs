//! reduce-precision as XLA's evaluator folds it: on each element's own bits, the mantissa
//! rounded to nearest even, the exponent range cut (overflow to ±inf, underflow to ±0), NaN
//! kept (quieted when no mantissa bit is left). The same steps as the generated code
//! (`codegen/elemental/convert.rs`), so folding a constant gives what running it gives (XLA
//! folds `reduce-precision(constant)`, and what follows folds with it: fuzz program 9000079).

use crate::hlo::Instruction;
use hlojit_runtime::ArrayLiteral;

pub(super) fn evaluate(inst: &Instruction, operand: &ArrayLiteral) -> Option<ArrayLiteral> {
    let t = operand.element_type();
    let fmt = t.float_format().filter(|_| t.is_native_float())?;
    let exponent_bits = inst.attrs.exponent_bits.unwrap_or(fmt.exponent_bits as i64);
    let mantissa_bits = inst.attrs.mantissa_bits.unwrap_or(fmt.mantissa_bits as i64);
    if exponent_bits < 1 || mantissa_bits < 0 {
        return None;
    }
    let mut out = operand.clone();
    for i in 0..out.element_count() {
        out.set_bits(i, reduce(operand.bits(i), t.bit_width() as i64, fmt.exponent_bits as i64, fmt.mantissa_bits as i64, exponent_bits, mantissa_bits));
    }
    Some(out)
}

fn reduce(original: u64, w: i64, src_e: i64, src_m: i64, exponent_bits: i64, mantissa_bits: i64) -> u64 {
    let width_mask = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
    let mut bits = original;
    if mantissa_bits < src_m {
        let drop = src_m - mantissa_bits;
        let last_bit = 1u64 << drop;
        let lsb = (bits >> drop) & 1;
        let bias = lsb + (last_bit >> 1) - 1;
        bits = (bits.wrapping_add(bias) & !(last_bit - 1)) & width_mask;
    }
    if exponent_bits < src_e {
        let sign_mask = 1u64 << (w - 1);
        let exp_mask = ((1u64 << src_e) - 1) << src_m;
        let src_bias = (1i64 << (src_e - 1)) - 1;
        let reduced_bias = (1i64 << (exponent_bits - 1)) - 1;
        let max_exp = (src_bias + reduced_bias) as u64;
        let min_exp = (src_bias - reduced_bias) as u64;
        let e = bits & exp_mask;
        let signed_zero = bits & sign_mask;
        if e > max_exp << src_m {
            bits = signed_zero | exp_mask;
        } else if e <= min_exp << src_m {
            bits = signed_zero;
        }
    }
    let abs = original & !(1u64 << (w - 1));
    let inf = ((1u64 << src_e) - 1) << src_m;
    if abs > inf {
        bits = if mantissa_bits > 0 { original } else { original | (1u64 << (src_m - 1)) };
    }
    bits
}
