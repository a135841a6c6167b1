//! The rewrites of `power` that XLA's algebraic simplifier makes (all but one by a constant
//! exponent), in its order (`HandlePower`):
//!
//! - `pow(A, 0)` => `broadcast(1)`;
//! - `pow(A, 1)` => `A`;
//! - `pow(exp(A), B)` => `exp(A * B)` for any B (fuzz program 10600281: `pow(exp(0), NaN)` is
//!   NaN in XLA, where a power gives 1; `exp(700)^2` is inf either way);
//! - `pow(A, 2)` => `A * A`;
//! - `pow(A, 3)` => `A * (A * A)`;
//! - `pow(A, -1)` => `broadcast(1) / A`.
//!
//! An exponent counts when it is a constant or a broadcast of one whose every element has that
//! value (XLA's `IsAll`), for every element type. They change results, which is why they are
//! done as XLA does them: XLA's run-time `pow` is not correctly rounded (of 20,000 random f32
//! bases, `pow(x, 2)` differs from `x * x` in 13 and `pow(x, 3)` from `x * (x * x)` in 5,146;
//! XLA's numbers are the products in all of them), complex products and quotients are not
//! complex powers, and for integers `pow(0, -1)` is 0 where `1 / 0` is -1 (XLA's integer
//! division by zero): measured through jaxlib on HLO text, `s32` `pow(x, -1)` for
//! x = 0, -1, 1, 2 gives -1, -1, 1, 0 with a constant exponent and 0, -1, 1, 0 with the same
//! exponent as a parameter.
//!
//! XLA's last rule, `pow(A, 0.5)` => `sqrt(A)` for an A it can tell is non-negative (abs, x * x,
//! constants >= 0, ...), is not made here; whether hlojit's `pow(A, 0.5)` differs from it was not
//! measured.

use super::algebraic_simplifier::is_all;
use super::fused_body::unique_name;
use crate::hlo::{Computation, InstrId, Instruction, Opcode};
use hlojit_runtime::{ArrayLiteral, Literal, Shape};
use std::collections::HashSet;

/// The instruction that replaces the power `id`, if a rule applies (new instructions are added
/// to `comp`).
pub(super) fn rewrite(comp: &mut Computation, id: InstrId) -> Option<InstrId> {
    let inst = comp.get(id);
    let (base, exponent) = (inst.operands[0], inst.operands[1]);
    let shape = inst.shape.clone();
    let name = inst.name.clone();
    let mut names: Option<HashSet<String>> = None;
    // New names must not clash with any in the computation (the verifier checks); the names
    // are collected only once a rule applies.
    let mut add = |comp: &mut Computation, opcode: Opcode, operands: Vec<InstrId>| {
        let names = names.get_or_insert_with(|| comp.instructions.iter().map(|i| i.name.clone()).collect());
        let unique = unique_name(names, &format!("{name}.rewritten"));
        comp.add(Instruction::new(unique, opcode, shape.clone(), operands))
    };
    if is_all(comp, exponent, 0) {
        return ones(comp, &shape, &mut add);
    }
    if is_all(comp, exponent, 1) {
        return Some(base);
    }
    if comp.get(base).opcode == Opcode::Exp {
        let a = comp.get(base).operands[0];
        let product = add(comp, Opcode::Multiply, vec![a, exponent]);
        return Some(add(comp, Opcode::Exp, vec![product]));
    }
    if is_all(comp, exponent, 2) {
        return Some(add(comp, Opcode::Multiply, vec![base, base]));
    }
    if is_all(comp, exponent, 3) {
        let square = add(comp, Opcode::Multiply, vec![base, base]);
        return Some(add(comp, Opcode::Multiply, vec![base, square]));
    }
    if is_all(comp, exponent, -1) {
        let one = ones(comp, &shape, &mut add)?;
        return Some(add(comp, Opcode::Divide, vec![one, base]));
    }
    None
}

/// A scalar constant 1 of `shape`'s element type broadcast to `shape` (XLA's `MakeScalarLike`),
/// or the scalar itself when `shape` is a scalar.
fn ones(
    comp: &mut Computation,
    shape: &Shape,
    add: &mut impl FnMut(&mut Computation, Opcode, Vec<InstrId>) -> InstrId,
) -> Option<InstrId> {
    let array = shape.as_array()?;
    let one = ArrayLiteral::from_f64s(array.element_type, &[], &[1.0]).ok()?;
    let constant = add(comp, Opcode::Constant, vec![]);
    let scalar = Shape::scalar(array.element_type);
    {
        let c = comp.get_mut(constant);
        c.shape = scalar;
        c.attrs.literal = Some(Literal::Array(one));
    }
    if array.dims.is_empty() {
        // A scalar constant carries no layout to keep apart from the power's.
        comp.get_mut(constant).shape = shape.clone();
        return Some(constant);
    }
    let broadcast = add(comp, Opcode::Broadcast, vec![constant]);
    comp.get_mut(broadcast).attrs.dimensions = Some(Vec::new());
    Some(broadcast)
}
