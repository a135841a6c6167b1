//! Buffer assignment for one computation: which memory each instruction's array leaves live
//! in. Parameters and results are the caller's buffers, constants are globals, tuples,
//! get-tuple-element and bitcasts alias their operands, and everything else gets a slice of
//! one temporary arena. Slices are reused once the values in them are dead (first fit over
//! the sequential schedule).

use crate::analysis::buffers::{buffer_bytes, is_memory_bitcast};
use crate::error::{Error, Result};
use crate::hlo::{Computation, InstrId, Module, Opcode};
use hlojit_runtime::buffer::BUFFER_ALIGNMENT;
use hlojit_runtime::{ArrayShape, Shape};
use std::collections::{HashMap, HashSet};

/// Where one buffer lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Allocation {
    /// Leaf `n` of the flattened parameters.
    Parameter(usize),
    /// Leaf `n` of the flattened result.
    Result(usize),
    /// A constant instruction's global.
    Constant(InstrId),
    /// `size` bytes at `offset` in the temporary arena.
    Temp {
        /// Byte offset from the arena's start (a multiple of 64).
        offset: i64,
        /// Bytes reserved, rounded up to a multiple of 64.
        size: i64,
    },
    /// The same memory as another slot, seen through a different shape (a bitcast).
    Alias(usize),
}

/// A buffer: its allocation and the array shape (with layout) it holds.
#[derive(Clone, Debug)]
pub struct Slot {
    /// Where the bytes are.
    pub allocation: Allocation,
    /// The array the bytes hold, with the layout it is stored in.
    pub shape: ArrayShape,
}

/// The memory plan of one computation: a slot per array buffer, which slots each
/// instruction's leaves use, and the size of the temporary arena.
#[derive(Clone, Debug)]
pub struct BufferAssignment {
    /// Every buffer, addressed by slot number.
    pub slots: Vec<Slot>,
    /// For each instruction with array leaves, the slot of each leaf (depth-first).
    pub leaves: HashMap<InstrId, Vec<usize>>,
    /// Result leaves that are not computed in place: (result leaf, slot holding the value).
    pub result_copies: Vec<(usize, usize)>,
    /// The result's leaf shapes in the layouts the caller's buffers have.
    pub result_shapes: Vec<ArrayShape>,
    /// Size of the temporary arena the caller provides, in bytes (a multiple of 64, 0 when
    /// nothing needs temporary memory).
    pub arena_bytes: i64,
    /// Result leaf -> parameter leaf sharing its memory.
    pub aliases: HashMap<usize, usize>,
}

impl BufferAssignment {
    /// The slot that owns the memory of slot `s` (following bitcast aliases).
    pub fn owner(&self, s: usize) -> usize {
        owner(&self.slots, s)
    }

    /// The slots of an instruction's array leaves, depth-first; empty for instructions with
    /// none (tokens, or instructions not in the computation).
    pub fn leaf_slots(&self, id: InstrId) -> &[usize] {
        self.leaves.get(&id).map(Vec::as_slice).unwrap_or(&[])
    }

    /// An identity for the memory slot `s` lives in: slots with equal ids are the same bytes.
    pub fn memory_id(&self, s: usize) -> usize {
        let o = self.owner(s);
        if let Allocation::Result(k) = self.slots[o].allocation {
            if let Some(&j) = self.aliases.get(&k) {
                if let Some(p) = self.slots.iter().position(|sl| sl.allocation == Allocation::Parameter(j)) {
                    return p;
                }
            }
        }
        o
    }

    /// The single slot of an array-shaped instruction.
    pub fn slot_of(&self, id: InstrId) -> Result<usize> {
        match self.leaf_slots(id) {
            [s] => Ok(*s),
            other => Err(Error::Internal(format!("instruction {id:?} has {} buffers, expected one", other.len()))),
        }
    }
}

/// Instructions whose leaves are (parts of) their operands' buffers.
fn aliases_operands(opcode: Opcode) -> bool {
    use Opcode::*;
    matches!(opcode, Tuple | GetTupleElement | OptimizationBarrier | AddDependency | AfterAll)
}

/// Whether bitcast `id` shares its operand's buffer (otherwise a kernel computes it).
pub fn bitcast_aliases(comp: &Computation, id: InstrId) -> bool {
    let inst = comp.get(id);
    match (inst.shape.as_array(), comp.get(inst.operands[0]).shape.as_array()) {
        (Some(to), Some(from)) => is_memory_bitcast(from, to),
        _ => false,
    }
}

/// Assigns buffers for `comp` run in `schedule` order. `parameter_shapes` and `result_shape`
/// are the layouts of the caller's buffers.
/// `aliases` pairs result leaves with the parameter leaves whose memory they share (the
/// entry's `input_output_alias`).
pub fn assign_buffers(
    module: &Module,
    comp: &Computation,
    schedule: &[InstrId],
    result_shape: &Shape,
    aliases: &[(usize, usize)],
) -> Result<BufferAssignment> {
    let first = assign_with(module, comp, schedule, result_shape, aliases, &HashSet::new())?;
    let shared = while_state_in_init(module, comp, schedule, &first);
    if shared.is_empty() {
        return Ok(first);
    }
    assign_with(module, comp, schedule, result_shape, aliases, &shared)
}

/// The (while, state leaf) pairs whose state can live in the buffer of its initial value, so
/// the loop starts without copying it: an initial value that is a temporary of this
/// computation and dead once the loop starts (for the first element it initializes), or one the loop never writes (a state element
/// the body passes through unchanged: the loop's inputs, weights) held in a parameter or
/// constant. Decided on a first assignment's slots and liveness (`first`).
fn while_state_in_init(module: &Module, comp: &Computation, schedule: &[InstrId], first: &BufferAssignment) -> HashSet<(InstrId, usize)> {
    let mut shared = HashSet::new();
    let position: HashMap<InstrId, usize> = schedule.iter().enumerate().map(|(i, &id)| (id, i)).collect();
    let last_use = liveness(comp, schedule, &first.leaves, &first.slots);
    for &id in schedule {
        let inst = comp.get(id);
        if inst.opcode != Opcode::While {
            continue;
        }
        let Some(init) = first.leaves.get(&inst.operands[0]) else { continue };
        let state = first.leaf_slots(id);
        let passed_through = inst.while_body().map(|b| passed_through_leaves(module.computation(b))).unwrap_or_default();
        for (i, &s) in init.iter().enumerate() {
            // One buffer passed as several initial elements (JAX's zeros for every stacked
            // output of a scan, merged by CSE) is shared by the first of them; the others are
            // copied from it before the loop starts, while it still holds the initial value.
            let first_of_buffer = init.iter().position(|&t| t == s) == Some(i);
            let same_layout = state.get(i).is_some_and(|&t| first.slots[t].shape == first.slots[s].shape);
            let fits = match first.slots[s].allocation {
                Allocation::Temp { .. } => last_use.get(&s) == Some(&position[&id]),
                Allocation::Parameter(_) | Allocation::Constant(_) => passed_through.contains(&i),
                _ => false,
            };
            if first_of_buffer && same_layout && fits {
                shared.insert((id, i));
            }
        }
    }
    shared
}

/// The state leaves a while body returns unchanged (its root's element is the parameter's).
fn passed_through_leaves(body: &Computation) -> HashSet<usize> {
    let root = body.root_instruction();
    let Some(&param) = body.parameters().first() else { return HashSet::new() };
    if root.opcode != Opcode::Tuple {
        return HashSet::new();
    }
    let mut out = HashSet::new();
    let mut leaf = 0;
    for (i, &o) in root.operands.iter().enumerate() {
        let element = body.get(o);
        let n = element.shape.array_leaves().len();
        let same = element.opcode == Opcode::GetTupleElement
            && element.operands[0] == param
            && element.attrs.tuple_index == Some(i as i64)
            && element.shape.is_array();
        if same {
            out.insert(leaf);
        }
        leaf += n;
    }
    out
}

/// Last schedule position each owner slot is read at (tuples and get-tuple-elements only pass
/// buffers on; results live to the end).
fn liveness(comp: &Computation, schedule: &[InstrId], leaves: &HashMap<InstrId, Vec<usize>>, slots: &[Slot]) -> HashMap<usize, usize> {
    let mut last_use: HashMap<usize, usize> = HashMap::new();
    for (pos, &id) in schedule.iter().enumerate() {
        // Counting tuples and get-tuple-elements as uses kept every leaf of a loop state alive
        // until its last get-tuple-element, so no state array was updated in place.
        if matches!(comp.get(id).opcode, Opcode::Tuple | Opcode::GetTupleElement) {
            continue;
        }
        for op in &comp.get(id).operands {
            for &s in leaves.get(op).map(Vec::as_slice).unwrap_or(&[]) {
                let s = owner(slots, s);
                let e = last_use.entry(s).or_insert(pos);
                *e = (*e).max(pos);
            }
        }
    }
    for &s in leaves.get(&comp.root).map(Vec::as_slice).unwrap_or(&[]) {
        last_use.insert(owner(slots, s), schedule.len());
    }
    last_use
}

fn assign_with(
    module: &Module,
    comp: &Computation,
    schedule: &[InstrId],
    result_shape: &Shape,
    aliases: &[(usize, usize)],
    while_state_in_init: &HashSet<(InstrId, usize)>,
) -> Result<BufferAssignment> {
    let users = comp.users();
    let mut slots: Vec<Slot> = Vec::new();
    let mut leaves: HashMap<InstrId, Vec<usize>> = HashMap::new();
    let mut defined_temps: Vec<(usize, usize)> = Vec::new(); // (slot, schedule position)
    let mut param_leaf_base = HashMap::new();
    let mut base = 0usize;
    for p in comp.parameters() {
        param_leaf_base.insert(p, base);
        base += comp.get(p).shape.array_leaves().len();
    }

    for (pos, &id) in schedule.iter().enumerate() {
        let inst = comp.get(id);
        let ids: Vec<usize> = match inst.opcode {
            Opcode::Parameter => {
                let first = param_leaf_base[&id];
                inst.shape
                    .array_leaves()
                    .into_iter()
                    .enumerate()
                    .map(|(i, a)| push(&mut slots, Allocation::Parameter(first + i), a))
                    .collect()
            }
            Opcode::Constant if inst.shape.is_array() => {
                vec![push(&mut slots, Allocation::Constant(id), inst.array_shape())]
            }
            Opcode::Tuple => inst.operands.iter().flat_map(|o| leaves.get(o).cloned().unwrap_or_default()).collect(),
            Opcode::GetTupleElement => {
                let operand = comp.get(inst.operands[0]);
                let i = inst.attrs.tuple_index.unwrap_or(0) as usize;
                let elements = operand.shape.tuple_elements().unwrap_or(&[]);
                let start: usize = elements[..i.min(elements.len())].iter().map(|s| s.array_leaves().len()).sum();
                let n = inst.shape.array_leaves().len();
                leaves.get(&inst.operands[0]).map(|l| l[start..start + n].to_vec()).unwrap_or_default()
            }
            Opcode::Bitcast if bitcast_aliases(comp, id) => {
                // Same bytes seen through another shape: a new slot over the same allocation.
                let src = leaves.get(&inst.operands[0]).and_then(|l| l.first().copied());
                match src {
                    Some(s) => vec![push(&mut slots, Allocation::Alias(s), inst.array_shape())],
                    None => Vec::new(),
                }
            }
            op if aliases_operands(op) => leaves.get(&inst.operands.first().copied().unwrap_or(id)).cloned().unwrap_or_default(),
            Opcode::While if !while_state_in_init.is_empty() => {
                let init = leaves.get(&inst.operands[0]).cloned().unwrap_or_default();
                inst.shape
                    .array_leaves()
                    .into_iter()
                    .enumerate()
                    .map(|(i, a)| match init.get(i) {
                        Some(&s) if while_state_in_init.contains(&(id, i)) => s,
                        _ => {
                            let s = push(&mut slots, Allocation::Temp { offset: -1, size: 0 }, a);
                            defined_temps.push((s, pos));
                            s
                        }
                    })
                    .collect()
            }
            _ if can_update_in_place(module, comp, id, &users, &leaves, &slots) => {
                // The operand's buffer is dead after this instruction: update it in place.
                let operand = leaves[&inst.operands[0]][0];
                vec![push(&mut slots, Allocation::Alias(operand), inst.array_shape())]
            }
            _ => inst
                .shape
                .array_leaves()
                .into_iter()
                .map(|a| {
                    let s = push(&mut slots, Allocation::Temp { offset: -1, size: 0 }, a);
                    defined_temps.push((s, pos));
                    s
                })
                .collect(),
        };
        leaves.insert(id, ids);
    }

    // Liveness: from definition to last use (by any alias of the slot); results live to the end.
    let position: HashMap<InstrId, usize> = schedule.iter().enumerate().map(|(i, &id)| (id, i)).collect();
    let last_use = liveness(comp, schedule, &leaves, &slots);
    let result_leaves = leaves.get(&comp.root).cloned().unwrap_or_default();

    // Results: computed in place when the value is a temp of this computation used once as a
    // result and laid out as the caller wants; copied otherwise. A result aliased with a
    // parameter is that parameter's memory: it is computed there only once the parameter is
    // dead (or read only at the very element being written).
    let result_shapes: Vec<ArrayShape> = result_shape
        .array_leaves()
        .into_iter()
        .map(|a| ArrayShape { layout: Some(a.layout_or_default()), ..a.clone() })
        .collect();
    if result_shapes.len() != result_leaves.len() {
        return Err(Error::Internal(format!("{}: result has {} leaves, caller expects {}", comp.name, result_leaves.len(), result_shapes.len())));
    }
    let alias_of: HashMap<usize, usize> = aliases.iter().copied().collect();
    let param_slot = |j: usize| slots.iter().position(|sl| sl.allocation == Allocation::Parameter(j));
    // The instruction that writes each slot: the first in the schedule holding it (later ones,
    // tuples and get-tuple-elements, only pass it on).
    let mut definer: HashMap<usize, InstrId> = HashMap::new();
    for &id in schedule {
        for &s in leaves.get(&id).into_iter().flatten() {
            definer.entry(s).or_insert(id);
        }
    }
    let mut result_copies = Vec::new();
    let mut taken = std::collections::HashSet::new();
    let mut in_place: HashMap<usize, usize> = HashMap::new(); // temp slot -> result leaf
    for (k, &s) in result_leaves.iter().enumerate() {
        let slot = &slots[s];
        if let Some(&j) = alias_of.get(&k) {
            if slot.allocation == Allocation::Parameter(j) && slot.shape.layout_or_default() == result_shapes[k].layout_or_default() {
                continue; // the output is the parameter, untouched: nothing to do
            }
        }
        let same_layout = slot.shape.layout_or_default() == result_shapes[k].layout_or_default();
        let is_own_temp = matches!(slot.allocation, Allocation::Temp { .. });
        let param_dead = match alias_of.get(&k) {
            None => true,
            Some(&j) => match (param_slot(j), definer.get(&s)) {
                (Some(p), Some(&d)) => {
                    let dead_after = last_use.get(&p).copied().unwrap_or(0);
                    dead_after < position[&d] || (dead_after == position[&d] && reads_param_in_step(module, comp, d, p, &leaves))
                }
                _ => true,
            },
        };
        if is_own_temp && same_layout && param_dead && taken.insert(s) {
            in_place.insert(s, k);
        } else {
            result_copies.push((k, s));
        }
    }
    for (s, k) in &in_place {
        slots[*s].allocation = Allocation::Result(*k);
    }
    // Copies that read parameters go first: a later copy may write an aliased parameter.
    result_copies.sort_by_key(|&(_, s)| !matches!(slots[owner(&slots, s)].allocation, Allocation::Parameter(_)));

    let arena_bytes = pack_temps(&mut slots, &defined_temps, &last_use)?;
    Ok(BufferAssignment { slots, leaves, result_copies, result_shapes, arena_bytes, aliases: alias_of })
}

/// Whether instruction `d`, the last reader of parameter slot `p`, reads it only at the index
/// it writes (an elementwise kernel over equal shapes and layouts), or only as the operand a
/// dynamic-update-slice or scatter updates — so writing its output over the parameter is safe.
fn reads_param_in_step(module: &Module, comp: &Computation, d: InstrId, p: usize, leaves: &HashMap<InstrId, Vec<usize>>) -> bool {
    let inst = comp.get(d);
    let reads_p = |o: &InstrId| leaves.get(o).is_some_and(|l| l.contains(&p));
    let positions: Vec<usize> = inst.operands.iter().enumerate().filter(|(_, o)| reads_p(o)).map(|(i, _)| i).collect();
    if positions.is_empty() {
        return true;
    }
    let (body, root, params): (&Computation, InstrId, Vec<InstrId>) = match inst.fused_computation() {
        Some(f) => {
            let fused = module.computation(f);
            let ps = fused.parameters();
            (fused, fused.root, positions.iter().filter_map(|&i| ps.get(i).copied()).collect())
        }
        None => (comp, d, positions.iter().map(|&i| inst.operands[i]).collect()),
    };
    let root_inst = body.get(root);
    // A dot's epilogue (`dot_epilogue_fusion`) reads its other operands only after the GEMM
    // has written the whole result over the output buffer.
    if body.ids().any(|i| body.get(i).opcode == Opcode::Dot) {
        return false;
    }
    if matches!(root_inst.opcode, Opcode::DynamicUpdateSlice | Opcode::Scatter) {
        // Only as the updated operand, and nowhere else.
        let users = body.users();
        return params.iter().all(|&q| root_inst.operands[0] == q && users[q.index()].len() == 1);
    }
    same_index_only(body, root, &params)
}

/// Whether every path from `params` to `root` goes through elementwise ops on equal shapes.
/// A multi-output fusion's tuple root qualifies when each of its outputs does and all have one
/// shape and layout: its loop computes every output's element before storing any (see
/// `emit_elemental_loop`), so an output written over a parameter that another output reads at
/// the same element is still safe.
pub(crate) fn same_index_only(body: &Computation, root: InstrId, params: &[InstrId]) -> bool {
    same_index_paths(body, root, params, true)
}

/// As [`same_index_only`], but the values between `params` and `root` may have any layout:
/// where they are computed element by element at the root's index and never stored (a dot
/// epilogue's loop), their layouts name no memory. An SGD update `w - lr * dW` keeps the
/// layout layout assignment gave the transposed gradient on its product (mlp_train's
/// `multiply{0,1}` between a `{1,0}` dot and a `{1,0}` root).
pub(crate) fn same_logical_index_only(body: &Computation, root: InstrId, params: &[InstrId]) -> bool {
    same_index_paths(body, root, params, false)
}

fn same_index_paths(body: &Computation, root: InstrId, params: &[InstrId], physical: bool) -> bool {
    let root_inst = body.get(root);
    if root_inst.opcode == Opcode::Tuple {
        let first = root_inst.operands.first().map(|&o| &body.get(o).shape);
        let one_shape = root_inst.operands.iter().all(|&o| Some(&body.get(o).shape) == first && body.get(o).shape.is_array());
        return one_shape && root_inst.operands.iter().all(|&o| same_index_paths(body, o, params, physical));
    }
    let root_shape = &body.get(root).shape;
    let mut stack = vec![root];
    let mut seen = std::collections::HashSet::new();
    while let Some(id) = stack.pop() {
        if !seen.insert(id) || params.contains(&id) {
            continue;
        }
        let inst = body.get(id);
        let depends = |o: &InstrId| depends_on(body, *o, params);
        if inst.operands.iter().any(depends) {
            let elementwise = inst.opcode.is_elementwise() && inst.shape.dims() == root_shape.dims();
            let same_layout = inst.operands.iter().filter(|o| depends(o)).all(|&o| {
                body.get(o).shape.dims() == root_shape.dims()
                    && (!physical || body.get(o).shape.as_array().map(|a| a.layout_or_default()) == root_shape.as_array().map(|a| a.layout_or_default()))
            });
            if !elementwise || !same_layout {
                return false;
            }
            stack.extend(inst.operands.iter().copied());
        }
    }
    true
}

fn depends_on(body: &Computation, id: InstrId, params: &[InstrId]) -> bool {
    let mut stack = vec![id];
    let mut seen = std::collections::HashSet::new();
    while let Some(x) = stack.pop() {
        if params.contains(&x) {
            return true;
        }
        if seen.insert(x) {
            stack.extend(body.get(x).operands.iter().copied());
        }
    }
    false
}

/// Whether instruction `id` (a dynamic-update-slice or scatter, alone or as the root of a
/// fusion on its first operand) may write its result over its first operand: only when that
/// operand is a temporary of this computation that nothing else uses.
fn can_update_in_place(
    module: &Module,
    comp: &Computation,
    id: InstrId,
    users: &[Vec<InstrId>],
    leaves: &HashMap<InstrId, Vec<usize>>,
    slots: &[Slot],
) -> bool {
    let inst = comp.get(id);
    let updates_operand0 = match inst.opcode {
        Opcode::DynamicUpdateSlice => true,
        Opcode::Scatter => inst.operands.len() == 3,
        Opcode::Fusion => inst.fused_computation().is_some_and(|f| {
            let fused = module.computation(f);
            let root = fused.root_instruction();
            matches!(root.opcode, Opcode::DynamicUpdateSlice | Opcode::Scatter)
                && fused.get(root.operands[0]).opcode == Opcode::Parameter
                && fused.get(root.operands[0]).attrs.parameter_number == Some(0)
                && root.shape.is_array()
        }),
        _ => false,
    };
    if !updates_operand0 || !inst.shape.is_array() {
        return false;
    }
    let operand = inst.operands[0];
    let Some(&[slot]) = leaves.get(&operand).map(Vec::as_slice) else { return false };
    let sole_user = users[operand.index()].iter().all(|&u| u == id) && users[operand.index()].len() == 1;
    sole_user
        && operand != comp.root
        && matches!(slots[slot].allocation, Allocation::Temp { .. })
        && slots[slot].shape.layout_or_default() == inst.array_shape().layout_or_default()
        && slots[slot].shape.dims == inst.array_shape().dims
}

fn push(slots: &mut Vec<Slot>, allocation: Allocation, shape: &ArrayShape) -> usize {
    let shape = ArrayShape { layout: Some(shape.layout_or_default()), ..shape.clone() };
    slots.push(Slot { allocation, shape });
    slots.len() - 1
}

fn owner(slots: &[Slot], mut s: usize) -> usize {
    while let Allocation::Alias(t) = slots[s].allocation {
        s = t;
    }
    s
}

/// First-fit packing of temps into the arena; returns its size.
fn pack_temps(slots: &mut [Slot], defined: &[(usize, usize)], last_use: &HashMap<usize, usize>) -> Result<i64> {
    struct Live {
        offset: i64,
        size: i64,
        end: usize,
    }
    let mut live: Vec<Live> = Vec::new();
    let mut arena = 0i64;
    for &(s, pos) in defined {
        if !matches!(slots[s].allocation, Allocation::Temp { .. }) {
            continue;
        }
        let size = round_up(buffer_bytes(&slots[s].shape)?.max(1), BUFFER_ALIGNMENT as i64);
        live.retain(|l| l.end >= pos);
        live.sort_by_key(|l| l.offset);
        let mut offset = 0i64;
        for l in &live {
            if offset + size <= l.offset {
                break;
            }
            offset = offset.max(l.offset + l.size);
        }
        let end = last_use.get(&s).copied().unwrap_or(pos);
        live.push(Live { offset, size, end });
        arena = arena.max(offset + size);
        slots[s].allocation = Allocation::Temp { offset, size };
    }
    Ok(arena)
}

fn round_up(x: i64, to: i64) -> i64 {
    (x + to - 1) / to * to
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hlo::text::parse_module;

    /// The in-place form of a while body, as the lowering plan assigns it: result leaf k is
    /// parameter leaf k.
    fn assign_in_place_body(text: &str, body: &str) -> BufferAssignment {
        let m = parse_module(text).expect("parses");
        let comp = m.computation(m.find_computation(body).expect("body"));
        let state = comp.parameter_shapes()[0].with_default_layouts();
        let leaves = state.array_leaves().len();
        let aliases: Vec<(usize, usize)> = (0..leaves).map(|k| (k, k)).collect();
        assign_buffers(&m, comp, &comp.post_order(), &state, &aliases).expect("assigns")
    }

    // Three stacked outputs; the root tuple lists them so that the post order reads the state's
    // elements one after another, each after the previous update.
    const STACKED: &str = r#"
HloModule stacked
body {
  s = (s32[], f32[64,8], f32[64,8], f32[64,8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  f = f32[] convert(i)
  zero = s32[] constant(0)
  row = f32[1,8] broadcast(f), dimensions={}
  a = f32[64,8] get-tuple-element(s), index=1
  ua = f32[64,8] dynamic-update-slice(a, row, i, zero)
  b = f32[64,8] get-tuple-element(s), index=2
  ub = f32[64,8] dynamic-update-slice(b, row, i, zero)
  c = f32[64,8] get-tuple-element(s), index=3
  uc = f32[64,8] dynamic-update-slice(c, row, i, zero)
  one = s32[] constant(1)
  next = s32[] add(i, one)
  ROOT t = (s32[], f32[64,8], f32[64,8], f32[64,8]) tuple(next, ua, ub, uc)
}
ENTRY e {
  x = f32[64,8] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[64,8], f32[64,8], f32[64,8]) tuple(z, x, x, x)
  ROOT w = (s32[], f32[64,8], f32[64,8], f32[64,8]) while(t), condition=body, body=body
}
"#;

    #[test]
    fn every_stacked_update_of_a_loop_state_is_in_place() {
        let a = assign_in_place_body(STACKED, "body");
        // Each update writes the state's own buffer: no stacked array is copied back.
        let copied: Vec<usize> = a.result_copies.iter().map(|&(k, _)| k).collect();
        assert!(copied.iter().all(|&k| k == 0), "stacked leaves copied every iteration: {copied:?}");
        for k in 1..4 {
            assert!(a.slots.iter().any(|sl| sl.allocation == Allocation::Result(k)), "leaf {k} not computed in place");
        }
        // The 2 KiB buffers are not temporaries either.
        assert!(a.arena_bytes < 64 * 8 * 4, "arena {}", a.arena_bytes);
    }

    #[test]
    fn an_update_whose_operand_is_read_later_is_not_in_place() {
        // `a` is read again after its update (by the sum): writing the update over it would
        // change what the sum reads, so that leaf is computed apart and copied.
        let text = STACKED
            .replace("  one = s32[] constant(1)", "  late = f32[64,8] add(a, uc)\n  one = s32[] constant(1)")
            .replace("tuple(next, ua, ub, uc)", "tuple(next, ua, ub, late)");
        let a = assign_in_place_body(&text, "body");
        assert!(!a.slots.iter().any(|sl| sl.allocation == Allocation::Result(1)), "leaf 1 must not be written over its parameter");
    }
}
