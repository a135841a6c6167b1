//! Float `maximum` / `minimum` with XLA:CPU's bits, NaN signs and payloads included.
//!
//! XLA emits both as LLVM's `llvm.maximum` / `llvm.minimum` (NaN-propagating, -0 < +0); which
//! NaN comes out is left to the back end, and the LLVM that jaxlib 0.10 carries lowers them on
//! x86 (AVX2, as on this project's machines) as (read from XLA's dumped objects, and measured
//! through jaxlib on every ordered pair of ±0, ±1, ±inf and quiet/signalling NaNs of both signs
//! with payloads):
//!
//! ```text
//! minimum(a, b) = isnan(a) ? a : bits(minss(a, b)) | (bits(a) & SIGN)
//! maximum(a, b) = isnan(a) ? a : bits(maxss(a, b)) & (bits(a) | ~SIGN)
//! ```
//!
//! where `minss(a, b)` is `a < b ? a : b` (the second operand when either is NaN). So a NaN on
//! the left comes back unchanged, a NaN on the right comes back with its sign bit ORed with the
//! left's (minimum) or ANDed with it (maximum): XLA's min(-0.40625, +NaN) is -NaN and
//! max(1, -NaN) is +NaN. Scalar and vector code are the same instructions. LLVM 19 lowers the
//! intrinsics differently (it keeps the NaN operand as is), so hlojit spells the formula out
//! in compares, selects and bit operations, which LLVM keeps bit for bit and still turns into
//! `vminps`/`vmaxps`.
//!
//! bf16 (and the f8/f4 formats) are computed in f32 as XLA's float normalization does, then
//! rounded back (a NaN keeps its sign, the payload becomes the quiet one). f16 stays half in
//! XLA's IR; without AVX512-FP16 LLVM expands vector half min/max generically: any NaN operand
//! gives the canonical +NaN (0x7e00), equal operands pick the -0 (minimum) or +0 (maximum).
//! XLA's scalar half code (a one-element array, or one element left after a loop's vectors of
//! 8) instead widens to f32 and follows the formula above; hlojit gives every f16 element the
//! vector rule, so those lone elements may differ from XLA's in the sign and payload of a NaN.
//! (On an AVX-512 host XLA's lowering may differ again; the numbers here are AVX2's.)

use crate::codegen::context::Codegen;
use crate::error::Result;
use hlojit_runtime::ElementType;
use inkwell::values::FloatValue;
use inkwell::FloatPredicate;

/// `maximum(a, b)` (`is_max`) or `minimum(a, b)` of two values of float type `t` already
/// widened to their compute type (f32 for f32 and narrower, f64 for f64).
pub(crate) fn float_max_min<'ctx>(
    cg: &Codegen<'ctx>,
    is_max: bool,
    t: ElementType,
    a: FloatValue<'ctx>,
    b: FloatValue<'ctx>,
) -> Result<FloatValue<'ctx>> {
    if t == ElementType::F16 {
        half_vector_rule(cg, is_max, a, b)
    } else {
        x86_rule(cg, is_max, a, b)
    }
}

/// The x86 lowering of `llvm.maximum`/`llvm.minimum` described in the module comment.
pub(crate) fn x86_rule<'ctx>(
    cg: &Codegen<'ctx>,
    is_max: bool,
    a: FloatValue<'ctx>,
    b: FloatValue<'ctx>,
) -> Result<FloatValue<'ctx>> {
    let ft = a.get_type();
    let bits = ft.get_bit_width();
    let it = cg.int_type(bits);
    let m = ordered_pick(cg, is_max, a, b)?;
    let mi = cg.b.build_bit_cast(m, it, "")?.into_int_value();
    let ai = cg.b.build_bit_cast(a, it, "")?.into_int_value();
    let sign = it.const_int(1u64 << (bits - 1), false);
    let r = if is_max {
        let keep = cg.b.build_or(ai, cg.b.build_not(sign, "")?, "")?;
        cg.b.build_and(mi, keep, "")?
    } else {
        let a_sign = cg.b.build_and(ai, sign, "")?;
        cg.b.build_or(mi, a_sign, "")?
    };
    let r = cg.b.build_bit_cast(r, ft, "")?.into_float_value();
    let a_is_nan = cg.b.build_float_compare(FloatPredicate::UNO, a, a, "")?;
    Ok(cg.b.build_select(a_is_nan, a, r, "")?.into_float_value())
}

/// LLVM's generic expansion, which XLA's vectorized f16 code gets on x86 without AVX512-FP16.
fn half_vector_rule<'ctx>(
    cg: &Codegen<'ctx>,
    is_max: bool,
    a: FloatValue<'ctx>,
    b: FloatValue<'ctx>,
) -> Result<FloatValue<'ctx>> {
    let ft = a.get_type();
    let it = cg.int_type(ft.get_bit_width());
    let r = ordered_pick(cg, is_max, a, b)?;
    // Equal operands have equal bits except for ±0, where the sign bits decide: AND keeps
    // +0 for maximum, OR keeps -0 for minimum.
    let ab = cg.b.build_bit_cast(a, it, "")?.into_int_value();
    let bb = cg.b.build_bit_cast(b, it, "")?.into_int_value();
    let merged = if is_max {
        cg.b.build_and(ab, bb, "")?
    } else {
        cg.b.build_or(ab, bb, "")?
    };
    let merged = cg.b.build_bit_cast(merged, ft, "")?.into_float_value();
    let equal = cg.b.build_float_compare(FloatPredicate::OEQ, a, b, "")?;
    let r = cg.b.build_select(equal, merged, r, "")?.into_float_value();
    // The canonical quiet NaN (+, payload 0): rounds to half's 0x7e00.
    let unordered = cg.b.build_float_compare(FloatPredicate::UNO, a, b, "")?;
    Ok(cg.b.build_select(unordered, ft.const_float(f64::NAN), r, "")?.into_float_value())
}

/// `a > b ? a : b` (`is_max`) or `a < b ? a : b`: x86's `maxss`/`minss`, which both rules
/// start from (the second operand when the two are equal or either is NaN).
fn ordered_pick<'ctx>(cg: &Codegen<'ctx>, is_max: bool, a: FloatValue<'ctx>, b: FloatValue<'ctx>) -> Result<FloatValue<'ctx>> {
    let predicate = if is_max { FloatPredicate::OGT } else { FloatPredicate::OLT };
    let pick_a = cg.b.build_float_compare(predicate, a, b, "")?;
    Ok(cg.b.build_select(pick_a, a, b, "")?.into_float_value())
}
