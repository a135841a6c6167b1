//! The reassociations of constant factors that XLA's algebraic simplifier makes in
//! `HandleMultiply`. They change floating-point results (the constants are multiplied first,
//! rounded once, and the product is applied), which is why they are done as XLA does them:
//!
//! 1. `(A * C1) * (B * C2)` => `(A * B) * (C1 * C2)`, A and B not constants, C1 and C2 constants;
//! 2. `(A * C1) * C2` => `A * (C1 * C2)`, A not a constant, and the same with C1 and C2 scalar
//!    constants broadcast;
//! 3. `(A * broadcast(C)) * broadcast(B)` => `A * broadcast(B * broadcast(C))`, C a scalar
//!    constant, B anything.
//!
//! Every product is matched in either operand order. XLA first turns an array constant whose
//! elements are all equal into a broadcast of a scalar (`HandleConstant`), so such a constant
//! counts as a broadcast here, not as a constant. Measured through jaxlib 0.10.2 on HLO text
//! (f32, f16, f64; tests/filetests/reference/gen_multiply_constants.py): of 20,000 random f32
//! x, `(x * 0.3) * 1.7` is `x * (0.3 * 1.7)` in all and `(x * 0.3) * 1.7` itself in 7,856 not;
//! `(x * 0.3) * broadcast(p)` is `x * (p * 0.3)` in all; with broadcast operands
//! `(x * 0.3) * (y * 1.7)` keeps its order (rule 1 wants constants), and
//! `(x * broadcast(p)) * 0.3` keeps its order (rule 3 wants the constant inside).

use super::fused_body::unique_name;
use crate::hlo::{Computation, InstrId, Instruction, Opcode};
use hlojit_runtime::{ArrayLiteral, Literal, Shape};
use std::collections::HashSet;

/// What an operand of a product is, as XLA's patterns see it.
enum Factor {
    /// A constant instruction (a scalar or an array whose elements are not all equal).
    Constant,
    /// A scalar constant broadcast, or an array constant of equal elements (`Some(scalar)` when
    /// it already exists, `None` for an array constant whose scalar must be made).
    ScalarBroadcast(Option<InstrId>),
    /// Anything else.
    Other,
}

fn factor(comp: &Computation, id: InstrId) -> Factor {
    let inst = comp.get(id);
    match inst.opcode {
        Opcode::Broadcast => {
            let op = inst.operands[0];
            let o = comp.get(op);
            if o.opcode == Opcode::Constant && o.shape.dims().is_empty() {
                Factor::ScalarBroadcast(Some(op))
            } else {
                Factor::Other
            }
        }
        Opcode::Constant if !inst.shape.dims().is_empty() && uniform(inst) => Factor::ScalarBroadcast(None),
        Opcode::Constant => Factor::Constant,
        _ => Factor::Other,
    }
}

/// Whether an array constant's elements all have the first one's bits.
fn uniform(inst: &Instruction) -> bool {
    let Ok(lit) = inst.array_literal() else { return false };
    let n = lit.element_count();
    n > 0 && (1..n).all(|i| lit.bits(i) == lit.bits(0))
}

fn is_constant(comp: &Computation, id: InstrId) -> bool {
    matches!(factor(comp, id), Factor::Constant)
}

/// The two operands of `id` if it is a multiply.
fn product(comp: &Computation, id: InstrId) -> Option<(InstrId, InstrId)> {
    let inst = comp.get(id);
    (inst.opcode == Opcode::Multiply).then(|| (inst.operands[0], inst.operands[1]))
}

/// Adds instructions with names unique in the computation.
struct Builder {
    names: HashSet<String>,
    base: String,
}

impl Builder {
    fn add(&mut self, comp: &mut Computation, opcode: Opcode, shape: Shape, operands: Vec<InstrId>) -> InstrId {
        let name = unique_name(&mut self.names, &format!("{}.reassociated", self.base));
        comp.add(Instruction::new(name, opcode, shape, operands))
    }

    fn broadcast(&mut self, comp: &mut Computation, x: InstrId, shape: &Shape, dims: Vec<i64>) -> InstrId {
        let identity = dims.iter().enumerate().all(|(i, &d)| d == i as i64);
        if comp.get(x).shape.dims() == shape.dims() && dims.len() == shape.dims().len() && identity {
            return x;
        }
        let b = self.add(comp, Opcode::Broadcast, shape.clone(), vec![x]);
        comp.get_mut(b).attrs.dimensions = Some(dims);
        b
    }

    /// The scalar constant behind a `ScalarBroadcast` factor `id`.
    fn scalar(&mut self, comp: &mut Computation, id: InstrId, existing: Option<InstrId>) -> Option<InstrId> {
        if existing.is_some() {
            return existing;
        }
        let lit = comp.get(id).array_literal().ok()?;
        let ty = lit.element_type();
        let mut one = ArrayLiteral::zeros(ty, &[]);
        one.set_bits(0, lit.bits(0));
        let c = self.add(comp, Opcode::Constant, Shape::scalar(ty), vec![]);
        comp.get_mut(c).attrs.literal = Some(Literal::Array(one));
        Some(c)
    }
}

/// The instruction that replaces the multiply `id`, if a rule applies (new instructions are
/// added to `comp`).
pub(super) fn rewrite(comp: &mut Computation, id: InstrId) -> Option<InstrId> {
    let inst = comp.get(id);
    let shape = inst.shape.clone();
    let ty = shape.element_type()?;
    if ty.is_pred() {
        return None;
    }
    let (lhs, rhs) = (inst.operands[0], inst.operands[1]);
    let base = inst.name.clone();
    let b = |comp: &Computation| Builder { names: comp.instructions.iter().map(|i| i.name.clone()).collect(), base: base.clone() };
    // Rule 1: (A * C1) * (B * C2).
    if let (Some(l), Some(r)) = (product(comp, lhs), product(comp, rhs)) {
        let split = |(x, y): (InstrId, InstrId)| -> Option<(InstrId, InstrId)> {
            if !is_constant(comp, x) && is_constant(comp, y) {
                Some((x, y))
            } else if is_constant(comp, x) && !is_constant(comp, y) {
                Some((y, x))
            } else {
                None
            }
        };
        if let (Some((a, c1)), Some((bb, c2))) = (split(l), split(r)) {
            let mut b = b(comp);
            let ab = b.add(comp, Opcode::Multiply, shape.clone(), vec![a, bb]);
            let cc = b.add(comp, Opcode::Multiply, comp.get(c1).shape.clone(), vec![c1, c2]);
            return Some(b.add(comp, Opcode::Multiply, shape, vec![ab, cc]));
        }
    }
    for (inner, outer) in [(lhs, rhs), (rhs, lhs)] {
        let Some((x, y)) = product(comp, inner) else { continue };
        for (a, c1) in [(x, y), (y, x)] {
            // Rule 2 with constants.
            if !is_constant(comp, a) && is_constant(comp, c1) && is_constant(comp, outer) {
                let mut b = b(comp);
                let cc = b.add(comp, Opcode::Multiply, comp.get(c1).shape.clone(), vec![c1, outer]);
                return Some(b.add(comp, Opcode::Multiply, shape, vec![a, cc]));
            }
            let Factor::ScalarBroadcast(s1) = factor(comp, c1) else { continue };
            // Rule 2 with broadcast scalars (A may be anything here).
            if let Factor::ScalarBroadcast(s2) = factor(comp, outer) {
                let mut b = b(comp);
                let k1 = b.scalar(comp, c1, s1)?;
                let k2 = b.scalar(comp, outer, s2)?;
                let kk = b.add(comp, Opcode::Multiply, Shape::scalar(ty), vec![k1, k2]);
                let bk = b.broadcast(comp, kk, &shape, vec![]);
                return Some(b.add(comp, Opcode::Multiply, shape, vec![a, bk]));
            }
            // Rule 3: the outer factor is a broadcast of anything.
            let o = comp.get(outer);
            if o.opcode == Opcode::Broadcast && !is_constant(comp, a) {
                let (bop, dims) = (o.operands[0], o.attrs.dims().to_vec());
                let bshape = comp.get(bop).shape.clone();
                let mut b = b(comp);
                let k = b.scalar(comp, c1, s1)?;
                let bk = b.broadcast(comp, k, &bshape, vec![]);
                let prod = b.add(comp, Opcode::Multiply, bshape, vec![bop, bk]);
                let back = b.broadcast(comp, prod, &shape, dims);
                return Some(b.add(comp, Opcode::Multiply, shape, vec![a, back]));
            }
        }
    }
    None
}
