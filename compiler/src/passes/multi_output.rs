//! What sibling and producer-consumer multi-output fusion share (XLA's
//! `multi_output_fusion.cc` and its GPU/CPU variants): which loop a fusion runs, when two loops
//! can be one, whether merging two instructions would create a cycle, and the merge itself.
//!
//! A multi-output fusion is a `fusion` whose fused root is a tuple; its users read the outputs
//! through `get-tuple-element`. The kernel emitters already run such a fusion as one loop nest:
//! an elementwise loop stores each output at the index it visits, a reduction kernel walks its
//! operand once and feeds every reduction (and stores elementwise outputs of the operand's
//! shape) from the same element. So two fusions may merge exactly when their loops are the
//! same loop: the same dimensions in the same physical order, and, for reductions, the same
//! reduced dimensions.

use super::fused_body::FusedBody;
use crate::error::{Error, Result};
use crate::hlo::{CompId, FusionKind, InstrId, Instruction, Module, Opcode};
use hlojit_runtime::Shape;
use std::collections::HashSet;

/// Merged fusions stop growing at this many fused instructions (as the fusion pass's groups
/// do: compile time grows with kernel size).
pub const MAX_FUSED_INSTRUCTIONS: usize = 256;

/// The loop nest a fusion's kernel runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoopSpace {
    /// Every output element computed at its own index: the outputs' dimensions and their
    /// physical order (minor to major).
    Elementwise { dims: Vec<i64>, minor_to_major: Vec<i64> },
    /// A walk over the reduced operand's elements: its dimensions, physical order and the
    /// reduced dimensions (sorted).
    Reduce { dims: Vec<i64>, minor_to_major: Vec<i64>, reduced: Vec<i64> },
}

impl LoopSpace {
    /// The loop both `self` and `other` can share, if any: equal loops, or a reduction walk
    /// whose operand has the elementwise loop's dimensions and order (the reduction kernel
    /// stores such outputs as it visits each element).
    pub fn merge(&self, other: &LoopSpace) -> Option<LoopSpace> {
        use LoopSpace::*;
        match (self, other) {
            _ if self == other => Some(self.clone()),
            (Reduce { dims, minor_to_major, .. }, Elementwise { dims: d, minor_to_major: m })
            | (Elementwise { dims: d, minor_to_major: m }, Reduce { dims, minor_to_major, .. })
                if dims == d && minor_to_major == m =>
            {
                Some(if matches!(self, Reduce { .. }) { self.clone() } else { other.clone() })
            }
            _ => None,
        }
    }

    /// The loop's dimensions (the elementwise outputs' or the reduced operand's).
    pub fn dims(&self) -> &[i64] {
        match self {
            LoopSpace::Elementwise { dims, .. } | LoopSpace::Reduce { dims, .. } => dims,
        }
    }
}

fn minor_to_major(shape: &Shape) -> Option<Vec<i64>> {
    shape.as_array().map(|a| a.layout_or_default().minor_to_major)
}

/// The values a fusion outputs: the operands of its fused root tuple, or the root itself.
pub fn fused_outputs(module: &Module, fusion: &Instruction) -> Option<(CompId, Vec<InstrId>)> {
    let f = fusion.fused_computation()?;
    let fused = module.computation(f);
    let root = fused.root_instruction();
    Some((f, if root.opcode == Opcode::Tuple { root.operands.clone() } else { vec![fused.root] }))
}

/// The loop the kernel of instruction `id` of `comp` runs, if it may take part in multi-output
/// fusion: a loop or reduction fusion, or an unfused elementwise op or reduce (which becomes a
/// fusion of one instruction when merged); array outputs only, elemental or reductions, no
/// control edges, and none of the ops that have a kernel of their own when they are the root
/// (gather, dynamic-update-slice), which merging would take away.
pub fn loop_space(module: &Module, comp: CompId, id: InstrId) -> Option<LoopSpace> {
    let computation = module.computation(comp);
    let inst = computation.get(id);
    if !inst.control_predecessors.is_empty() {
        return None;
    }
    if inst.opcode != Opcode::Fusion {
        return output_space(computation, id).filter(|_| !inst.opcode.is_structural());
    }
    if !matches!(inst.attrs.fusion_kind, Some(FusionKind::Loop | FusionKind::Input)) {
        return None;
    }
    let (f, outputs) = fused_outputs(module, inst)?;
    let fused = module.computation(f);
    // A loop that computes reductions inside (row fusion's kernels) walks rows and computes
    // them once per row; in any other loop they would be recomputed for every element.
    if fused.ids().any(|i| fused.get(i).opcode == Opcode::Reduce && !outputs.contains(&i)) {
        return None;
    }
    let mut reduce: Option<LoopSpace> = None;
    let mut elementwise: Option<LoopSpace> = None;
    for &o in &outputs {
        let space = output_space(fused, o)?;
        let slot = if matches!(space, LoopSpace::Reduce { .. }) { &mut reduce } else { &mut elementwise };
        match slot {
            None => *slot = Some(space),
            Some(s) if *s == space => {}
            Some(_) => return None,
        }
    }
    match (reduce, elementwise) {
        (Some(r), Some(e)) => r.merge(&e),
        (r, e) => r.or(e),
    }
}

/// The loop that computes output `id` of a kernel whose instructions are in `comp`.
fn output_space(comp: &crate::hlo::Computation, id: InstrId) -> Option<LoopSpace> {
    let out = comp.get(id);
    if !out.shape.is_array() || !out.control_predecessors.is_empty() {
        return None;
    }
    match out.opcode {
        Opcode::Reduce if out.operands.len() == 2 => {
            let input = &comp.get(out.operands[0]).shape;
            let mut reduced = out.attrs.dims().to_vec();
            reduced.sort_unstable();
            Some(LoopSpace::Reduce { dims: input.dims().to_vec(), minor_to_major: minor_to_major(input)?, reduced })
        }
        op if op.can_root_fusion() && !crate::codegen::emitters::has_root_emitter(op) && op != Opcode::Tuple => {
            Some(LoopSpace::Elementwise { dims: out.shape.dims().to_vec(), minor_to_major: minor_to_major(&out.shape)? })
        }
        _ => None,
    }
}

/// Turns unfused instruction `id` into a fusion of that one instruction (XLA's
/// multi-output fusion does the same before merging): returns the fusion, or `id` when it
/// is one already.
fn as_fusion(module: &mut Module, c: CompId, id: InstrId) -> InstrId {
    let inst = module.computation(c).get(id).clone();
    if inst.opcode == Opcode::Fusion {
        return id;
    }
    let mut body = crate::hlo::Computation::new(unique_computation_name(module, &inst.name));
    let mut params = Vec::new();
    for (n, &o) in inst.operands.iter().enumerate() {
        let mut p = Instruction::new(format!("param_{n}"), Opcode::Parameter, module.computation(c).get(o).shape.clone(), vec![]);
        p.attrs.parameter_number = Some(n as i64);
        params.push(body.add(p));
    }
    let mut copy = inst.clone();
    copy.operands = params;
    body.root = body.add(copy);
    let kind = if inst.opcode == Opcode::Reduce { FusionKind::Input } else { FusionKind::Loop };
    let body_id = module.add_computation(body);
    let comp = module.computation_mut(c);
    let mut fusion = Instruction::new(format!("{}.fusion", inst.name), Opcode::Fusion, inst.shape.clone(), inst.operands.clone());
    fusion.attrs.fusion_kind = Some(kind);
    fusion.called = vec![body_id];
    let new = comp.add(fusion);
    comp.replace_all_uses(id, new);
    new
}

/// Whether `to` can be reached from `from` through users, not counting the direct edges from
/// `from` to the instructions in `skip`.
pub fn reaches(users: &[Vec<InstrId>], from: InstrId, to: InstrId, skip: &[InstrId]) -> bool {
    let mut stack: Vec<InstrId> = users[from.index()].iter().copied().filter(|u| !skip.contains(u)).collect();
    let mut seen = HashSet::new();
    while let Some(x) = stack.pop() {
        if x == to {
            return true;
        }
        if seen.insert(x) {
            stack.extend(users[x.index()].iter().copied());
        }
    }
    false
}

/// The instructions that carry `fusion`'s values to its users: the fusion itself when it has
/// one output, else its get-tuple-element users.
pub fn value_nodes(comp: &crate::hlo::Computation, users: &[Vec<InstrId>], fusion: InstrId) -> Vec<InstrId> {
    if comp.get(fusion).shape.is_array() {
        return vec![fusion];
    }
    let mut nodes: Vec<InstrId> =
        users[fusion.index()].iter().copied().filter(|&u| comp.get(u).opcode == Opcode::GetTupleElement).collect();
    nodes.sort();
    nodes.dedup();
    nodes
}

/// Instructions in the fused computation of `fusion`.
pub fn fused_size(module: &Module, fusion: &Instruction) -> usize {
    fusion.fused_computation().map_or(1, |f| module.computation(f).instructions.len())
}

/// Merges fusions `first` and `second` of computation `c` into one multi-output fusion whose
/// outputs are `first`'s then `second`'s. With `producer`, `second` reads values of `first`
/// (`first` itself or get-tuple-elements of it): it reads them from inside the merged fusion
/// instead of from memory.
/// The merged fused computation reads each distinct operand once (one parameter per operand)
/// and computes equal subexpressions of the two bodies once (CSE). Users of either fusion read
/// the merged one through `get-tuple-element`. The caller has checked that the merge is legal
/// (no cycle, compatible loops).
pub fn merge(module: &mut Module, c: CompId, first: InstrId, second: InstrId, producer: bool) -> Result<InstrId> {
    let first = as_fusion(module, c, first);
    let second = as_fusion(module, c, second);
    let comp = module.computation(c);
    let (a, b) = (comp.get(first).clone(), comp.get(second).clone());
    let (fa, outs_a) = fused_outputs(module, &a).ok_or_else(|| Error::Internal(format!("{} is not a fusion", a.name)))?;
    let (fb, outs_b) = fused_outputs(module, &b).ok_or_else(|| Error::Internal(format!("{} is not a fusion", b.name)))?;
    // With `producer`, the operands of `second` that are `first`'s values: `first` itself, or
    // a get-tuple-element of it (output k).
    let produced = |o: InstrId| -> Option<usize> {
        if !producer {
            return None;
        }
        if o == first {
            return a.shape.is_array().then_some(0);
        }
        let g = comp.get(o);
        (g.opcode == Opcode::GetTupleElement && g.operands == [first]).then(|| g.attrs.tuple_index.unwrap_or(-1) as usize)
    };

    let mut fused = FusedBody::new(unique_computation_name(module, a.name.trim_end_matches(".multi")));
    let shape = |o: InstrId| comp.get(o).shape.clone();
    // Parameters in operand order: first's operands, then second's that are new.
    for &o in &a.operands {
        fused.parameter(o, &shape(o));
    }
    for &o in &b.operands {
        if produced(o).is_none() {
            fused.parameter(o, &shape(o));
        }
    }
    let operand_of = |caller: &Instruction, n: usize| -> Result<InstrId> {
        caller.operands.get(n).copied().ok_or_else(|| Error::Internal(format!("{}: no operand {n}", caller.name)))
    };
    let map_a = fused.copy(module.computation(fa), &mut |f, n| {
        let o = operand_of(&a, n)?;
        Ok(f.parameter(o, &shape(o)))
    })?;
    let map_b = fused.copy(module.computation(fb), &mut |f, n| {
        let o = operand_of(&b, n)?;
        Ok(match produced(o).and_then(|k| outs_a.get(k)) {
            Some(out) => map_a[out],
            None => f.parameter(o, &shape(o)),
        })
    })?;

    let outputs: Vec<InstrId> = outs_a.iter().map(|o| map_a[o]).chain(outs_b.iter().map(|o| map_b[o])).collect();
    let tuple_name = fused.fresh_name("tuple");
    let FusedBody { body: mut fused, operands, .. } = fused;
    let shapes: Vec<Shape> = outputs.iter().map(|&o| fused.get(o).shape.clone()).collect();
    fused.root = fused.add(Instruction::new(tuple_name, Opcode::Tuple, Shape::Tuple(shapes.clone()), outputs));
    // The two bodies often compute the same values (a fusion pass that duplicated a producer
    // into both): computing them once is the point of the merge.
    crate::passes::cse::cse_computation(&mut fused);
    fused.compact();
    let reduces = fused.root_instruction().operands.iter().any(|&o| fused.get(o).opcode == Opcode::Reduce);

    let fused_id = module.add_computation(fused);
    let comp = module.computation_mut(c);
    let base = a.name.trim_end_matches(".multi");
    let mut fusion = Instruction::new(format!("{base}.multi"), Opcode::Fusion, Shape::Tuple(shapes.clone()), operands);
    fusion.attrs.fusion_kind = Some(if reduces { FusionKind::Input } else { FusionKind::Loop });
    fusion.called = vec![fused_id];
    let new = comp.add(fusion);
    let mut offset = 0;
    for (old, n) in [(first, outs_a.len()), (second, outs_b.len())] {
        redirect(comp, old, new, offset, n, &shapes);
        offset += n;
    }
    comp.compact();
    let new = comp.ids().find(|&id| comp.get(id).called == [fused_id]).ok_or_else(|| Error::Internal("merged fusion lost".into()))?;
    Ok(new)
}

/// Points the users of `old` (whose `n` outputs are outputs `offset..` of `new`) at `new`:
/// a `get-tuple-element` of a multi-output `old` is renumbered; other uses read a
/// `get-tuple-element` (or a tuple of them) of `new`.
fn redirect(comp: &mut crate::hlo::Computation, old: InstrId, new: InstrId, offset: usize, n: usize, shapes: &[Shape]) {
    let gte = |comp: &mut crate::hlo::Computation, k: usize| {
        let name = format!("{}.{k}", comp.get(new).name);
        let mut g = Instruction::new(name, Opcode::GetTupleElement, shapes[k].clone(), vec![new]);
        g.attrs.tuple_index = Some(k as i64);
        comp.add(g)
    };
    if comp.get(old).shape.is_array() {
        let g = gte(comp, offset);
        comp.replace_all_uses(old, g);
        return;
    }
    for id in comp.ids().collect::<Vec<_>>() {
        let inst = comp.get_mut(id);
        if inst.opcode == Opcode::GetTupleElement && inst.operands == [old] {
            inst.operands[0] = new;
            inst.attrs.tuple_index = inst.attrs.tuple_index.map(|k| k + offset as i64);
        }
    }
    let elements: Vec<InstrId> = (offset..offset + n).map(|k| gte(comp, k)).collect();
    let shape = Shape::Tuple(shapes[offset..offset + n].to_vec());
    let name = format!("{}.outputs{offset}", comp.get(new).name);
    let t = comp.add(Instruction::new(name, Opcode::Tuple, shape, elements));
    comp.replace_all_uses(old, t);
}

fn unique_computation_name(module: &Module, base: &str) -> String {
    let stem = format!("fused_computation.{base}.multi");
    let mut name = stem.clone();
    let mut k = 1;
    while module.find_computation(&name).is_some() {
        name = format!("{stem}.{k}");
        k += 1;
    }
    name
}
