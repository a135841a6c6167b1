//! The rewrites of `divide` that XLA's algebraic simplifier makes and that change results.
//!
//! XLA:CPU (jaxlib 0.10) replaces several divisions by multiplications before it compiles, so
//! its numbers are those of the rewritten program (`x / 3` is `x * 0.33333334`, which differs
//! from the correctly rounded quotient in about a third of all x). Measured through jaxlib on
//! HLO text (4,000 random values per rule, all equal to the rewritten form, none to the plain
//! division beyond chance), in the order XLA tries them:
//!
//! - `exp(A) / exp(B)` => `exp(A - B)`, `A / exp(B)` => `A * exp(-B)`;
//! - `A / pow(B, C)` => `A * pow(B, -C)`, integers included (`7 / pow(2, 1)` is `7 * pow(2, -1)`,
//!   which is 0);
//! - `A / sqrt(B)` => `A * rsqrt(B)` and `A / rsqrt(B)` => `A * sqrt(B)` when the root has no other
//!   user;
//! - then, for real floats only: `A / C` => `A * (1 / C)` for a constant C or a broadcast of one,
//!   and `A / broadcast(B)` => `A * broadcast(1 / B)` for a B the broadcast is the only user of
//!   (jaxlib's simplifier does this for run-time scalars and vectors alike, so `x / s` with `s` a
//!   parameter is `x * (1 / s)`; but a B with another user — a parameter also returned, a scale
//!   also carried through a loop — keeps the division, and so does a second broadcast of B,
//!   whose B the first rewrite gave a second user: XLA's optimized HLO, hijax_test's quantizing
//!   while loop and `jax_suite/divide_by_shared_broadcast.hlo`), where A is not a constant (XLA
//!   folds constant quotients instead);
//! - for real and complex floats: `(A / B) / (C / D)` => `(A * D) / (B * C)`, `(A / B) / C` =>
//!   `A / (B * C)`, `A / (B / C)` => `(A * C) / B` (c64, 4,096 random values each: XLA's results
//!   differ from the plain divisions in 5,302 / 5,799 / 5,291 of 8,192 parts, from the rewritten
//!   ones in 1,429 / 2,520 / 1,384, which are XLA's complex products rounding otherwise, the
//!   context-dependent class of fuzz program 5000646; fuzz program 9300544: `(x / 0) / x` is
//!   `x / (0 * x)`, infinities where the plain division gives NaN).
//!
//! `1 / C` for a constant C is then folded by constant folding, as XLA folds it (f16/bf16
//! divide in f32 and round). Complex divisors do not become reciprocals: XLA folds `1 / c` with
//! C++'s complex division, whose results at zeros and infinities the run-time division does not
//! share.

use super::fused_body::unique_name;
use crate::hlo::{Computation, InstrId, Instruction, Opcode};
use std::collections::HashSet;
use hlojit_runtime::{ArrayLiteral, Literal, Shape};

/// The instruction that replaces the divide `id`, if a rule applies (new instructions are added
/// to `comp`).
pub(super) fn rewrite(comp: &mut Computation, id: InstrId) -> Option<InstrId> {
    let new = rewrite_to(comp, id)?;
    // The replacement keeps the divide's name (the divide itself is dropped with this round).
    let name = comp.get(id).name.clone();
    comp.get_mut(id).name = format!("{name}.replaced");
    comp.get_mut(new).name = name;
    Some(new)
}

fn rewrite_to(comp: &mut Computation, id: InstrId) -> Option<InstrId> {
    let inst = comp.get(id);
    let (a, b) = (inst.operands[0], inst.operands[1]);
    let ty = inst.shape.element_type()?;
    let shape = inst.shape.clone();
    let name = inst.name.clone();
    let (a_op, b_op) = (comp.get(a).opcode, comp.get(b).opcode);
    let b_operands = comp.get(b).operands.clone();
    // New names must not clash with any in the computation (the verifier checks).
    // Collected only once a rule applies.
    let mut names: Option<HashSet<String>> = None;
    let mut add = |comp: &mut Computation, opcode: Opcode, shape: Shape, operands: Vec<InstrId>| {
        let names = names.get_or_insert_with(|| comp.instructions.iter().map(|i| i.name.clone()).collect());
        let unique = unique_name(names, &format!("{name}.rewritten"));
        comp.add(Instruction::new(unique, opcode, shape, operands))
    };
    let shape_of = |comp: &Computation, i: InstrId| comp.get(i).shape.clone();

    if a_op == Opcode::Exp && b_op == Opcode::Exp {
        let (x, y) = (comp.get(a).operands[0], b_operands[0]);
        let diff = add(comp, Opcode::Subtract, shape_of(comp, x), vec![x, y]);
        return Some(add(comp, Opcode::Exp, shape, vec![diff]));
    }
    if b_op == Opcode::Exp {
        let neg = add(comp, Opcode::Negate, shape_of(comp, b_operands[0]), vec![b_operands[0]]);
        let e = add(comp, Opcode::Exp, shape_of(comp, b), vec![neg]);
        return Some(add(comp, Opcode::Multiply, shape, vec![a, e]));
    }
    if b_op == Opcode::Power {
        let (base, exponent) = (b_operands[0], b_operands[1]);
        let neg = add(comp, Opcode::Negate, shape_of(comp, exponent), vec![exponent]);
        let p = add(comp, Opcode::Power, shape_of(comp, base), vec![base, neg]);
        return Some(add(comp, Opcode::Multiply, shape, vec![a, p]));
    }
    if matches!(b_op, Opcode::Sqrt | Opcode::Rsqrt) && single_user(comp, b) {
        let inverse = if b_op == Opcode::Sqrt { Opcode::Rsqrt } else { Opcode::Sqrt };
        let r = add(comp, inverse, shape_of(comp, b), vec![b_operands[0]]);
        return Some(add(comp, Opcode::Multiply, shape, vec![a, r]));
    }
    if !ty.is_floating() {
        return None;
    }
    // A / constant, A / broadcast(B): multiply by the reciprocal (real floats only), B either a
    // constant or used by the broadcast alone.
    let reciprocal_applies = match b_op {
        Opcode::Constant => true,
        Opcode::Broadcast => comp.get(b_operands[0]).opcode == Opcode::Constant || single_user(comp, b_operands[0]),
        _ => false,
    };
    if !ty.is_complex() && a_op != Opcode::Constant && reciprocal_applies {
        let divisor = if b_op == Opcode::Constant { b } else { b_operands[0] };
        let divisor_shape = shape_of(comp, divisor);
        // A scalar 1 broadcast to the divisor's shape, as XLA's MakeScalarLike builds it: a
        // materialized array of ones would be a constant of the divisor's size in the code.
        let scalar_shape = Shape::scalar(ty);
        let ones = ones_like(&scalar_shape)?;
        let mut one = add(comp, Opcode::Constant, scalar_shape, vec![]);
        comp.get_mut(one).attrs.literal = Some(Literal::Array(ones));
        if divisor_shape.as_array().is_some_and(|a| !a.dims.is_empty()) {
            one = add(comp, Opcode::Broadcast, divisor_shape.clone(), vec![one]);
            comp.get_mut(one).attrs.dimensions = Some(Vec::new());
        }
        let reciprocal = add(comp, Opcode::Divide, divisor_shape, vec![one, divisor]);
        let factor = if b_op == Opcode::Constant {
            reciprocal
        } else {
            let dims = comp.get(b).attrs.dimensions.clone();
            let bcast = add(comp, Opcode::Broadcast, shape_of(comp, b), vec![reciprocal]);
            comp.get_mut(bcast).attrs.dimensions = dims;
            bcast
        };
        return Some(add(comp, Opcode::Multiply, shape, vec![a, factor]));
    }
    let a_operands = comp.get(a).operands.clone();
    if a_op == Opcode::Divide && b_op == Opcode::Divide {
        let (x, y, z, w) = (a_operands[0], a_operands[1], b_operands[0], b_operands[1]);
        let xw = add(comp, Opcode::Multiply, shape.clone(), vec![x, w]);
        let yz = add(comp, Opcode::Multiply, shape.clone(), vec![y, z]);
        return Some(add(comp, Opcode::Divide, shape, vec![xw, yz]));
    }
    if a_op == Opcode::Divide {
        let (x, y) = (a_operands[0], a_operands[1]);
        let yb = add(comp, Opcode::Multiply, shape.clone(), vec![y, b]);
        return Some(add(comp, Opcode::Divide, shape, vec![x, yb]));
    }
    if b_op == Opcode::Divide {
        let (y, z) = (b_operands[0], b_operands[1]);
        let az = add(comp, Opcode::Multiply, shape.clone(), vec![a, z]);
        return Some(add(comp, Opcode::Divide, shape, vec![az, y]));
    }
    None
}

/// Whether the divide `id` divides by a broadcast of anything but a constant: the rewrites of
/// such a division depend on the users of the broadcast value, so the simplifier makes them
/// once the operands have settled.
pub(super) fn by_runtime_broadcast(comp: &Computation, id: InstrId) -> bool {
    let b = comp.get(comp.get(id).operands[1]);
    b.opcode == Opcode::Broadcast && comp.get(b.operands[0]).opcode != Opcode::Constant
}

/// Whether `id` has exactly one user (XLA's `WithOneUse`; the root counts as a use).
fn single_user(comp: &Computation, id: InstrId) -> bool {
    let users = comp.instructions.iter().flat_map(|i| i.operands.iter()).filter(|&&o| o == id).count();
    users == 1 && comp.root != id
}

/// An array of ones of `shape`'s type and dimensions.
fn ones_like(shape: &Shape) -> Option<ArrayLiteral> {
    let array = shape.as_array()?;
    let n: i64 = array.dims.iter().product();
    ArrayLiteral::from_f64s(array.element_type, &array.dims, &vec![1.0; n as usize]).ok()
}
