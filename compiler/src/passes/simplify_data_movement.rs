//! The algebraic simplifier's rewrites of pure data movement (no arithmetic, so every one is
//! exact): a reshape, broadcast, transpose, slice, pad, reverse or concatenate that moves
//! nothing is its operand, two in a row of the same kind are one, and a slice of a broadcast
//! scalar is a broadcast.
//!
//! A composed instruction takes the shape (and layout) of the instruction it replaces and
//! its name with a suffix, so dumps still say where it came from.

use crate::hlo::{Computation, InstrId, Instruction, Opcode, SliceDim};

/// The replacement for a data-movement instruction `id`, if it has one.
pub(super) fn simplify(comp: &mut Computation, id: InstrId) -> Option<InstrId> {
    let inst = comp.get(id);
    if inst.operands.is_empty() {
        return None;
    }
    let x = inst.operands[0];
    let operand = comp.get(x);
    // Bounded dynamic dimensions carry a runtime size these rewrites do not track.
    let dynamic = |i: &Instruction| i.shape.as_array().is_some_and(|a| a.is_dynamic());
    if dynamic(inst) || dynamic(operand) {
        return None;
    }
    let same_dims = operand.shape.dims() == inst.shape.dims();
    match inst.opcode {
        Opcode::Reshape if same_dims => Some(x),
        // reshape(reshape(y)) is reshape(y): both keep the row-major element order.
        Opcode::Reshape if operand.opcode == Opcode::Reshape => {
            let y = operand.operands[0];
            Some(compose(comp, id, Opcode::Reshape, y, |_| {}))
        }
        Opcode::Broadcast if same_dims && is_identity(inst.attrs.dims()) => Some(x),
        // broadcast(broadcast(y, inner), outer): y's dimension i lands at outer[inner[i]].
        Opcode::Broadcast if operand.opcode == Opcode::Broadcast => {
            let outer = inst.attrs.dims();
            let dims: Option<Vec<i64>> = operand.attrs.dims().iter().map(|&d| outer.get(d as usize).copied()).collect();
            let y = operand.operands[0];
            Some(compose(comp, id, Opcode::Broadcast, y, |i| i.attrs.dimensions = dims))
        }
        Opcode::Transpose if is_identity(inst.attrs.dims()) => Some(x),
        // transpose(transpose(y, inner), outer): output dimension i is y's inner[outer[i]].
        Opcode::Transpose if operand.opcode == Opcode::Transpose => {
            let (outer, inner) = (inst.attrs.dims(), operand.attrs.dims());
            let perm: Option<Vec<i64>> = outer.iter().map(|&o| inner.get(o as usize).copied()).collect();
            let y = operand.operands[0];
            let perm = perm?;
            if is_identity(&perm) {
                return Some(y);
            }
            Some(compose(comp, id, Opcode::Transpose, y, |i| i.attrs.dimensions = Some(perm)))
        }
        Opcode::Slice if same_dims => Some(x),
        // A slice or dynamic-slice of a broadcast scalar is the scalar broadcast to the slice's
        // shape, whatever the offsets (XLA's simplifier rewrites both): the gradient of a sum
        // over a scan reads such a slice of a broadcast 1 on every step.
        Opcode::Slice | Opcode::DynamicSlice
            if operand.opcode == Opcode::Broadcast && comp.get(operand.operands[0]).shape.rank() == 0 =>
        {
            let scalar = operand.operands[0];
            let mut new = Instruction::new(format!("{}.simplified", inst.name), Opcode::Broadcast, inst.shape.clone(), vec![scalar]);
            new.attrs.dimensions = Some(Vec::new());
            Some(comp.add(new))
        }
        Opcode::Slice if operand.opcode == Opcode::Slice => {
            let dims: Vec<SliceDim> = inst
                .attrs
                .slice_dims()
                .iter()
                .zip(operand.attrs.slice_dims())
                .zip(inst.shape.dims())
                .map(|((outer, inner), &n)| compose_slices(inner, outer, n))
                .collect();
            if dims.len() != inst.shape.rank() {
                return None;
            }
            let y = operand.operands[0];
            Some(compose(comp, id, Opcode::Slice, y, |i| i.attrs.slice = Some(dims)))
        }
        Opcode::Concatenate if inst.operands.len() == 1 => Some(x),
        Opcode::Pad if inst.attrs.pad_dims().iter().all(|p| p.low == 0 && p.high == 0 && p.interior == 0) => Some(x),
        // Reversing dimensions of size 1 moves nothing.
        Opcode::Reverse if inst.attrs.dims().iter().all(|&d| inst.shape.dims().get(d as usize) == Some(&1)) => Some(x),
        _ => None,
    }
}

/// Whether `dims` is `0, 1, ..., n-1`.
fn is_identity(dims: &[i64]) -> bool {
    dims.iter().enumerate().all(|(i, &d)| d == i as i64)
}

/// The slice of the original operand that `outer` of (`inner` of it) reads, `n` elements long.
fn compose_slices(inner: &SliceDim, outer: &SliceDim, n: i64) -> SliceDim {
    let stride = inner.stride * outer.stride;
    let start = inner.start + outer.start * inner.stride;
    // The smallest limit that still yields n elements: the last one read, plus one.
    let limit = if n == 0 { start } else { start + (n - 1) * stride + 1 };
    SliceDim { start, limit, stride }
}

/// Adds an instruction like `id` (shape, opcode and name) reading `operand`, with its
/// attributes set by `set`.
fn compose(comp: &mut Computation, id: InstrId, opcode: Opcode, operand: InstrId, set: impl FnOnce(&mut Instruction)) -> InstrId {
    let old = comp.get(id);
    let mut new = Instruction::new(format!("{}.simplified", old.name), opcode, old.shape.clone(), vec![operand]);
    new.attrs = old.attrs.clone();
    set(&mut new);
    comp.add(new)
}
