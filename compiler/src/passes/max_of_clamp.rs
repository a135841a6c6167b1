//! XLA's `maximum(lo, clamp(lo, x, hi))` => `clamp(lo, x, hi)`, which changes results.
//!
//! The rewrite holds only when lo <= hi. With lo > hi the clamp is hi and the maximum lo, but
//! XLA's algebraic simplifier (`HandleMaximum`) makes it without looking at the bounds, so
//! XLA:CPU gives hi: measured through jaxlib on HLO text, lo = -0.42, x = 3, hi = -1.44 gives
//! -1.44 with either operand order, for scalars and arrays, floats and integers. It matches
//! `MaximumAnyOrder(Op(m), Clamp(lo, x, hi))` and requires `m` to be the clamp's very lower
//! bound instruction: a second broadcast of the same scalar keeps the maximum (measured:
//! -0.42), while a second constant with equal bytes counts as the same (measured: -1.44;
//! jaxlib compiles HLO text through MLIR, which makes equal constants one). There is no such
//! rule for `minimum` (`minimum(clamp(lo, x, hi), hi)` equals the clamp for any bounds).

use crate::hlo::{Computation, InstrId, Opcode};

/// The clamp that replaces the maximum of `a` and `b`, if the rule applies.
pub(super) fn rewrite(comp: &Computation, a: InstrId, b: InstrId) -> Option<InstrId> {
    // The pattern matcher binds the clamp to the second operand when that one is a clamp and
    // only otherwise tries the first; the bound is checked after the match, so a maximum of
    // two clamps is judged on the first order alone.
    let (other, clamp) = if comp.get(b).opcode == Opcode::Clamp {
        (a, b)
    } else if comp.get(a).opcode == Opcode::Clamp {
        (b, a)
    } else {
        return None;
    };
    let lower = comp.get(clamp).operands[0];
    same_instruction(comp, other, lower).then_some(clamp)
}

/// Whether `x` and `y` are one value as XLA sees it after MLIR: the same instruction, or two
/// constants of one shape with equal bytes.
fn same_instruction(comp: &Computation, x: InstrId, y: InstrId) -> bool {
    if x == y {
        return true;
    }
    let (a, b) = (comp.get(x), comp.get(y));
    a.opcode == Opcode::Constant
        && b.opcode == Opcode::Constant
        && a.shape == b.shape
        && a.attrs.literal.is_some()
        && a.attrs.literal == b.attrs.literal
}
