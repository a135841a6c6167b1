//! The rewrites of `log` that XLA's algebraic simplifier makes (`HandleLog`), in its order:
//!
//! - `log(exp(A))` => `A`;
//! - `log(pow(A, B))` => `log(abs(A)) * B` (`log(A) * B` for complex A);
//! - `log(sqrt(A))` => `log(A) * 0.5`;
//! - `log(rsqrt(A))` => `log(A) * -0.5`.
//!
//! They change results, which is why they are done as XLA does them: measured through jaxlib
//! 0.10.2 on HLO text (f64 and f32), `log(pow(-3, 1.5))` is 1.5 * log(3) = 1.648 rather than
//! NaN, `log(exp(1000))` is 1000 rather than inf, and `log(sqrt(x))` rounds as half of
//! `log(x)` (fuzz program 9000213: `log(pow(x, x))` of negative x).

use super::fused_body::unique_name;
use crate::hlo::{Computation, InstrId, Instruction, Opcode};
use hlojit_runtime::{ArrayLiteral, Literal, Shape};
use std::collections::HashSet;

/// The instruction that replaces the log `id`, if a rule applies (new instructions are added
/// to `comp`).
pub(super) fn rewrite(comp: &mut Computation, id: InstrId) -> Option<InstrId> {
    let inst = comp.get(id);
    let shape = inst.shape.clone();
    let ty = shape.element_type()?;
    let name = inst.name.clone();
    let inner = comp.get(inst.operands[0]);
    let (opcode, operands) = (inner.opcode, inner.operands.clone());
    if opcode == Opcode::Exp && comp.get(operands[0]).shape == shape {
        return Some(operands[0]);
    }
    let mut names: HashSet<String> = comp.instructions.iter().map(|i| i.name.clone()).collect();
    let mut add = |comp: &mut Computation, opcode: Opcode, shape: Shape, operands: Vec<InstrId>| {
        let unique = unique_name(&mut names, &format!("{name}.rewritten"));
        comp.add(Instruction::new(unique, opcode, shape, operands))
    };
    match opcode {
        Opcode::Power => {
            let (a, b) = (operands[0], operands[1]);
            let of = if ty.is_complex() { a } else { add(comp, Opcode::Abs, shape.clone(), vec![a]) };
            let log = add(comp, Opcode::Log, shape.clone(), vec![of]);
            Some(add(comp, Opcode::Multiply, shape, vec![log, b]))
        }
        Opcode::Sqrt | Opcode::Rsqrt => {
            let factor = if opcode == Opcode::Sqrt { 0.5 } else { -0.5 };
            let array = shape.as_array()?;
            let lit = ArrayLiteral::from_f64s(array.element_type, &[], &[factor]).ok()?;
            let log = add(comp, Opcode::Log, shape.clone(), vec![operands[0]]);
            let constant = add(comp, Opcode::Constant, Shape::scalar(array.element_type), vec![]);
            comp.get_mut(constant).attrs.literal = Some(Literal::Array(lit));
            let scalar = if array.dims.is_empty() {
                comp.get_mut(constant).shape = shape.clone();
                constant
            } else {
                let b = add(comp, Opcode::Broadcast, shape.clone(), vec![constant]);
                comp.get_mut(b).attrs.dimensions = Some(Vec::new());
                b
            };
            Some(add(comp, Opcode::Multiply, shape, vec![log, scalar]))
        }
        _ => None,
    }
}
