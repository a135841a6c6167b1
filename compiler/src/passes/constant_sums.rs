//! XLA's algebraic simplifier gathers the constants of a sum so that they fold into one:
//! `(A + C1) + C2` becomes `A + (C1 + C2)` and `(C1 - A) + C2` becomes `(C1 + C2) - A`, where
//! `C1`, `C2` are constants, or both broadcasts of scalar constants, and `A` is not a constant.
//!
//! For floats this changes results (`(x + 0.1) + 0.2` rounds twice, `x + 0.3` once), and XLA
//! does it for every element type, so hlojit does too: `x + 0.1 + 0.2` in a JAX program is
//! `x + 0.3` on XLA. XLA first puts a constant left operand of an add on the right
//! (`C + A` is `A + C`); the patterns here read each add in that order without rewriting it.
//! The constant sum `C1 + C2` is left to constant folding, as in XLA.

use crate::hlo::{Attributes, Computation, InstrId, Instruction, Opcode};

/// The rewritten sum for the add `id`, if one of the two patterns matches.
pub(super) fn gather(comp: &mut Computation, id: InstrId) -> Option<InstrId> {
    let (x, c2) = canonical_operands(comp, id)?;
    let inner = comp.get(x);
    let (opcode, rest, c1) = match inner.opcode {
        Opcode::Add => {
            let (a, c1) = canonical_operands(comp, x)?;
            (Opcode::Add, a, c1)
        }
        Opcode::Subtract => (Opcode::Subtract, inner.operands[1], inner.operands[0]),
        _ => return None,
    };
    if comp.get(rest).opcode == Opcode::Constant {
        return None;
    }
    let both_constants = is_constant(comp, c1) && is_constant(comp, c2);
    let both_scalar_broadcasts = scalar_of_broadcast(comp, c1).is_some() && scalar_of_broadcast(comp, c2).is_some();
    if !both_constants && !both_scalar_broadcasts {
        return None;
    }
    let name = comp.get(id).name.clone();
    let shape = comp.get(id).shape.clone();
    let sum = if both_constants {
        comp.add(Instruction::new(format!("{name}.constants"), Opcode::Add, shape.clone(), vec![c1, c2]))
    } else {
        let (s1, s2) = (scalar_of_broadcast(comp, c1)?, scalar_of_broadcast(comp, c2)?);
        let scalar_shape = comp.get(s1).shape.clone();
        let scalar_sum = comp.add(Instruction::new(format!("{name}.constants"), Opcode::Add, scalar_shape, vec![s1, s2]));
        let mut broadcast = Instruction::new(format!("{name}.constants.broadcast"), Opcode::Broadcast, shape.clone(), vec![scalar_sum]);
        broadcast.attrs = Attributes { dimensions: Some(Vec::new()), ..Attributes::default() };
        comp.add(broadcast)
    };
    let operands = if opcode == Opcode::Add { vec![rest, sum] } else { vec![sum, rest] };
    Some(comp.add(Instruction::new(format!("{name}.reassociated"), opcode, shape, operands)))
}

/// The operands of the add `id` with a constant left operand of a non-constant moved right,
/// as XLA's canonicalization puts them.
fn canonical_operands(comp: &Computation, id: InstrId) -> Option<(InstrId, InstrId)> {
    let inst = comp.get(id);
    if inst.opcode != Opcode::Add {
        return None;
    }
    let (l, r) = (inst.operands[0], inst.operands[1]);
    Some(if is_constant(comp, l) && !is_constant(comp, r) { (r, l) } else { (l, r) })
}

fn is_constant(comp: &Computation, id: InstrId) -> bool {
    comp.get(id).opcode == Opcode::Constant
}

/// The scalar constant `id` broadcasts, if it is such a broadcast.
fn scalar_of_broadcast(comp: &Computation, id: InstrId) -> Option<InstrId> {
    let inst = comp.get(id);
    let operand = *inst.operands.first()?;
    (inst.opcode == Opcode::Broadcast && is_constant(comp, operand) && comp.get(operand).shape.is_scalar()).then_some(operand)
}
