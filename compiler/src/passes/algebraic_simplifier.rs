//! Algebraic simplification: the identities of XLA's `AlgebraicSimplifier` that remove work
//! without changing any result XLA would compute.
//!
//! Arithmetic identities are applied exactly where XLA applies them, so that hlojit's numbers
//! stay XLA's: `x + 0`, `0 + x`, `x - 0`, `x * 1`, `1 * x` and `x / 1` are `x` for every
//! type (XLA drops them too, so an input of `-0.0` stays `-0.0` and a denormal is not flushed);
//! `x * 0` is `0` for integers only (for floats, `NaN * 0` and `inf * 0` are NaN and `-1 * 0` is
//! `-0`). Three kinds of XLA's rewrites change results and are done as XLA does them: the
//! constants of a sum are gathered so that they fold into one ([`super::constant_sums`]),
//! divisions XLA turns into multiplications are turned the same way ([`super::divide_rewrites`]),
//! and so are powers by a constant exponent ([`super::power_rewrites`]) and products with
//! constant factors ([`super::multiply_constants`]) or converted predicates
//! ([`super::predicate_products`]), and logs of exp, pow, sqrt, rsqrt ([`super::log_rewrites`]), and
//! bf16 dots read as f32 keep XLA's excess precision ([`super::bf16_product_widening`]); XLA's
//! `maximum(lo, clamp(lo, x, hi))` => `clamp(lo, x, hi)` is made even where lo > hi
//! ([`super::max_of_clamp`]).
//! Pure data movement is composed or dropped: see [`super::simplify_data_movement`].
//!
//! A rewrite never changes an instruction's shape, layout included: a replacement whose shape
//! differs (an operand in another layout, say) is not used. Instructions with control edges are
//! left alone, so the ordering they express survives.

use super::{
    bf16_product_widening, constant_sums, divide_rewrites, log_rewrites, max_of_clamp, multiply_constants, power_rewrites, predicate_products,
    simplify_data_movement,
};
use crate::error::Result;
use crate::hlo::{Computation, InstrId, Instruction, Module, Opcode};
use std::collections::{HashMap, HashSet};

/// Rounds of rewriting per computation at most: each round sees the previous round's results,
/// and chains of identities settle in a few.
const MAX_ROUNDS: usize = 8;

/// Simplifies every computation; returns whether anything changed.
///
/// Divisions by a broadcast of a run-time value wait for rounds in which nothing else changes
/// (`Phase::Divisions`): whether XLA turns one into a product depends on how many users the
/// broadcast value has ([`super::divide_rewrites`]), which XLA counts once the chain of
/// reshapes and broadcasts in front of it has collapsed (its simplifier replaces each operand
/// before it visits the user); here a round leaves replaced instructions in place until it
/// ends, and a chain collapses over several rounds.
pub fn run(module: &mut Module) -> Result<bool> {
    let mut changed = false;
    for comp in &mut module.computations {
        for _ in 0..MAX_ROUNDS {
            if !simplify_round(comp, Phase::Identities) && !simplify_round(comp, Phase::Divisions) {
                break;
            }
            changed = true;
        }
    }
    Ok(changed)
}

/// What a round rewrites.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Everything but divisions by a broadcast of a run-time value.
    Identities,
    /// Those divisions as well, once the rest has settled.
    Divisions,
}

/// One walk in post order. Each instruction's operands are forwarded to their replacements
/// before it is looked at, so a rewrite sees already simplified operands.
fn simplify_round(comp: &mut Computation, phase: Phase) -> bool {
    let ordered: HashSet<InstrId> = comp.instructions.iter().flat_map(|i| i.control_predecessors.iter().copied()).collect();
    let mut forward: HashMap<InstrId, InstrId> = HashMap::new();
    for id in comp.post_order() {
        let operands: Vec<InstrId> = comp.get(id).operands.iter().map(|o| *forward.get(o).unwrap_or(o)).collect();
        comp.get_mut(id).operands = operands;
        if ordered.contains(&id) || !comp.get(id).control_predecessors.is_empty() {
            continue;
        }
        let Some(new) = simplify(comp, id, phase) else { continue };
        if new != id && comp.get(new).shape == comp.get(id).shape {
            forward.insert(id, new);
        }
    }
    if forward.is_empty() {
        return false;
    }
    if let Some(&new) = forward.get(&comp.root) {
        comp.root = new;
    }
    comp.compact();
    true
}

/// For a commutative op with identity element `identity`: the operand of `a`, `b` that is
/// left when the other is all `identity` (`b` checked first, as XLA does).
fn other_than(comp: &Computation, a: InstrId, b: InstrId, identity: i64) -> Option<InstrId> {
    if is_all(comp, b, identity) {
        Some(a)
    } else if is_all(comp, a, identity) {
        Some(b)
    } else {
        None
    }
}

/// The instruction `id` can be replaced by, if any (new instructions are added to `comp`).
fn simplify(comp: &mut Computation, id: InstrId, phase: Phase) -> Option<InstrId> {
    let inst = comp.get(id);
    let ty = inst.shape.element_type()?;
    let operand = |i: usize| inst.operands[i];
    match inst.opcode {
        Opcode::Add if !ty.is_pred() => {
            let (a, b) = (operand(0), operand(1));
            other_than(comp, a, b, 0).or_else(|| constant_sums::gather(comp, id))
        }
        Opcode::Subtract if is_all(comp, operand(1), 0) => Some(operand(0)),
        Opcode::Multiply if !ty.is_pred() => {
            if let Some(x) = other_than(comp, operand(0), operand(1), 1) {
                Some(x)
            } else if ty.is_int() && is_all(comp, operand(0), 0) {
                Some(operand(0))
            } else if ty.is_int() && is_all(comp, operand(1), 0) {
                Some(operand(1))
            } else {
                multiply_constants::rewrite(comp, id).or_else(|| predicate_products::rewrite(comp, id))
            }
        }
        Opcode::Divide if is_all(comp, operand(1), 1) => Some(operand(0)),
        Opcode::Divide if phase == Phase::Identities && divide_rewrites::by_runtime_broadcast(comp, id) => None,
        Opcode::Divide => divide_rewrites::rewrite(comp, id),
        Opcode::Power => power_rewrites::rewrite(comp, id),
        Opcode::Log => log_rewrites::rewrite(comp, id),
        Opcode::Maximum => max_of_clamp::rewrite(comp, operand(0), operand(1)),
        // XLA: `A && True => A`, `A || False => A` for predicates.
        Opcode::And if ty.is_pred() => other_than(comp, operand(0), operand(1), 1),
        Opcode::Or if ty.is_pred() => other_than(comp, operand(0), operand(1), 0),
        Opcode::Negate => {
            let inner = comp.get(operand(0));
            (inner.opcode == Opcode::Negate).then(|| inner.operands[0])
        }
        Opcode::Convert => {
            let from = comp.get(operand(0)).shape.element_type()?;
            if from == ty { Some(operand(0)) } else { bf16_product_widening::rewrite(comp, id) }
        }
        Opcode::Select => {
            let (p, on_true, on_false) = (operand(0), operand(1), operand(2));
            if on_true == on_false {
                Some(on_true)
            } else if is_all(comp, p, 1) {
                Some(on_true)
            } else if is_all(comp, p, 0) {
                Some(on_false)
            } else {
                None
            }
        }
        _ => simplify_data_movement::simplify(comp, id),
    }
}

/// Whether every element of `id` is known to equal `value`: a constant, or a broadcast of one.
/// Floats compare by value, so `-0.0` counts as 0 (as in XLA's `IsAll`); complex numbers need a
/// zero imaginary part.
pub(super) fn is_all(comp: &Computation, id: InstrId, value: i64) -> bool {
    let inst: &Instruction = comp.get(id);
    match inst.opcode {
        Opcode::Broadcast => is_all(comp, inst.operands[0], value),
        Opcode::Constant => {
            let Ok(lit) = inst.array_literal() else { return false };
            let ty = lit.element_type();
            (0..lit.element_count()).all(|i| {
                if ty.is_complex() {
                    let c = lit.get_c128(i);
                    c.re == value as f64 && c.im == 0.0
                } else if ty.is_floating() {
                    lit.get_f64(i) == value as f64
                } else {
                    lit.get_i64(i) == value
                }
            })
        }
        _ => false,
    }
}

/// Simplifies algebraic identities and data movement.
pub struct AlgebraicSimplifier;

impl super::pass::Pass for AlgebraicSimplifier {
    fn name(&self) -> &'static str {
        "algebraic-simplifier"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        run(module)
    }
}

#[cfg(test)]
#[path = "algebraic_simplifier_tests.rs"]
mod tests;
