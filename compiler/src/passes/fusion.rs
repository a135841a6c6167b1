//! Producer-consumer fusion, as XLA does it: an elemental consumer (or a reduce) absorbs the
//! elemental producers of its operands into one `fusion` instruction, so that the intermediate
//! arrays are never materialized — each fused op becomes a generator composed into the
//! consumer's loop.
//!
//! A producer is absorbed when every user of it is already in the fusion (so nothing else
//! needs it in memory), or when it is cheap enough to recompute in each fusion that wants it
//! (constants, iotas, broadcasts and other pure index remappings). Expensive producers are not
//! pulled through an expanding broadcast, which would recompute each of their elements many
//! times. Instructions this pass leaves alone (dot, convolution, sort, control flow, ...) get
//! kernels of their own.

use crate::error::Result;
use crate::hlo::{CompId, Computation, FusionKind, InstrId, Instruction, Module, Opcode};
use std::collections::{BTreeSet, HashMap, HashSet};

/// Fuses every computation that runs as a sequence of kernels (the entry and the bodies of
/// control flow), leaving reducers, comparators and existing fused computations alone.
pub fn fuse(module: &mut Module) -> Result<bool> {
    let mut counter = 0usize;
    for c in sequenced_computations(module) {
        // A second round fuses what the first left standalone: a producer that one group
        // claimed, whose root then went into other groups as a clone, stays behind as its own
        // kernel, and its cheap producers (a broadcast of a constant, say) with it; the second
        // round gives it a fusion of its own, so nothing cheap is materialized.
        fuse_computation(module, c, &mut counter)?;
        fuse_computation(module, c, &mut counter)?;
    }
    Ok(counter > 0)
}

/// The entry and every computation reached from it through while, conditional and call.
pub fn sequenced_computations(module: &Module) -> Vec<CompId> {
    let mut seen = HashSet::new();
    let mut stack = vec![module.entry];
    let mut out = Vec::new();
    while let Some(c) = stack.pop() {
        if !seen.insert(c) {
            continue;
        }
        out.push(c);
        for inst in &module.computation(c).instructions {
            if matches!(inst.opcode, Opcode::While | Opcode::Conditional | Opcode::Call) {
                stack.extend(inst.called.iter().copied());
            }
        }
    }
    out
}

/// Ops that may be the root of a fusion.
fn can_root(inst: &Instruction) -> bool {
    inst.shape.is_array() && inst.opcode.can_root_fusion()
}

/// Ops that may be fused into a consumer (computed per element where they are used).
fn can_fuse_producer(inst: &Instruction) -> bool {
    inst.shape.is_array() && inst.opcode.is_elemental() && !inst.opcode.is_passthrough()
}

/// Cheap to recompute wherever it is used: no arithmetic beyond index remapping.
fn is_cheap(inst: &Instruction) -> bool {
    inst.opcode.is_cheap()
}

/// Fusions stop growing at this many instructions (compile time grows with kernel size).
const MAX_FUSION_SIZE: usize = 256;

/// An elementwise producer with few users is recomputed in each consumer's fusion rather
/// than written to memory and read back: on a CPU, streaming a large intermediate through
/// memory costs more than a few vectorized operations per element.
///
/// A dynamic-slice is duplicable too: recomputed, it reads its slice of the source where the
/// source lies (an index offset, like a slice), which costs what reading a materialized copy
/// costs, and the copy is saved (a reverse scan reads each step's residuals through one
/// dynamic-slice per stack, used by the gradient's several outputs). Not when the source is
/// also updated in place (a dynamic-update-slice or scatter on it): a second reader of the
/// source, scheduled after the update, would cost the update its in-place buffer.
fn is_duplicable(module: &Module, comp: &Computation, inst: &Instruction, users: &[InstrId], all_users: &[Vec<InstrId>]) -> bool {
    let few_users = users.len() <= 3;
    match inst.opcode {
        Opcode::DynamicSlice => few_users && !updated_in_place(module, comp, inst.operands[0], all_users),
        op => op.is_elementwise() && few_users,
    }
}

/// Whether some user of `source` writes it in place: a dynamic-update-slice or scatter of it,
/// alone or at the root of a fusion.
fn updated_in_place(module: &Module, comp: &Computation, source: InstrId, all_users: &[Vec<InstrId>]) -> bool {
    let updates = |op: Opcode| matches!(op, Opcode::DynamicUpdateSlice | Opcode::Scatter);
    all_users[source.index()].iter().any(|&u| {
        let user = comp.get(u);
        updates(user.opcode) || user.fused_computation().is_some_and(|f| updates(module.computation(f).root_instruction().opcode))
    })
}

/// Costly per element: not worth recomputing for every element of a broadcast.
fn is_expensive(inst: &Instruction) -> bool {
    inst.opcode.is_expensive(inst.shape.element_type().is_some_and(|t| t.is_floating()))
}

/// How many times a consumer reads each element of its operand, roughly.
fn reuse_factor(comp: &Computation, consumer: &Instruction, operand: InstrId) -> i64 {
    let out: i64 = consumer.shape.dims().iter().product::<i64>().max(1);
    let inp: i64 = comp.get(operand).shape.dims().iter().product::<i64>().max(1);
    match consumer.opcode {
        Opcode::Broadcast => out / inp,
        _ => 1,
    }
}

fn fuse_computation(module: &mut Module, c: CompId, counter: &mut usize) -> Result<()> {
    let comp = module.computation(c);
    let order = comp.post_order();
    let position: HashMap<InstrId, usize> = order.iter().enumerate().map(|(i, &id)| (id, i)).collect();
    let users = comp.users();
    let mut owner: HashMap<InstrId, usize> = HashMap::new(); // instruction -> group (for non-clones)
    let mut groups: Vec<BTreeSet<usize>> = Vec::new(); // members by post-order position
    let mut roots: Vec<InstrId> = Vec::new();

    for &id in order.iter().rev() {
        let inst = comp.get(id);
        if owner.contains_key(&id) || !can_root(inst) || id == comp.root && inst.opcode == Opcode::Tuple {
            continue;
        }
        let g = groups.len();
        let mut members = BTreeSet::new();
        members.insert(position[&id]);
        owner.insert(id, g);
        // Grow from the root toward the parameters, users before producers.
        let mut frontier: BTreeSet<usize> = BTreeSet::new();
        frontier.insert(position[&id]);
        while let Some(&pos) = frontier.iter().next_back() {
            frontier.remove(&pos);
            let consumer_id = order[pos];
            let consumer = comp.get(consumer_id);
            for &p in &consumer.operands {
                let producer = comp.get(p);
                if members.contains(&position[&p]) || !can_fuse_producer(producer) || members.len() >= MAX_FUSION_SIZE {
                    continue;
                }
                if is_expensive(producer) && reuse_factor(comp, consumer, p) > 1 {
                    continue;
                }
                // Owned: every user is computed by this fusion, so the producer disappears
                // into it. Cloned: it stays for its other users and is recomputed here.
                let all_users_owned = users[p.index()].iter().all(|u| owner.get(u) == Some(&g));
                let owned = all_users_owned && !owner.contains_key(&p);
                if owned || is_cheap(producer) || is_duplicable(module, comp, producer, &users[p.index()], &users) {
                    if owned {
                        owner.insert(p, g);
                    }
                    members.insert(position[&p]);
                    frontier.insert(position[&p]);
                }
            }
        }
        groups.push(members);
        roots.push(id);
    }

    let mut replacements: Vec<(InstrId, Instruction, Computation)> = Vec::new();
    for (g, members) in groups.iter().enumerate() {
        if members.len() < 2 {
            continue;
        }
        let root = roots[g];
        *counter += 1;
        let (fusion, fused) = build_fusion(comp, root, members, &order, *counter, module);
        replacements.push((root, fusion, fused));
    }
    for (root, fusion, fused) in replacements {
        let fused_id = module.add_computation(fused);
        let comp = module.computation_mut(c);
        let mut fusion = fusion;
        fusion.called = vec![fused_id];
        let new = comp.add(fusion);
        comp.replace_all_uses(root, new);
    }
    module.computation_mut(c).compact();
    Ok(())
}

/// The fusion instruction replacing `root` and its fused computation.
fn build_fusion(
    comp: &Computation,
    root: InstrId,
    members: &BTreeSet<usize>,
    order: &[InstrId],
    n: usize,
    module: &Module,
) -> (Instruction, Computation) {
    let member_ids: Vec<InstrId> = members.iter().map(|&p| order[p]).collect();
    let inside: HashSet<InstrId> = member_ids.iter().copied().collect();
    let mut fused = Computation::new(unique_computation_name(module, n));
    let mut map: HashMap<InstrId, InstrId> = HashMap::new();
    let mut operands: Vec<InstrId> = Vec::new();
    for &id in &member_ids {
        for &o in &comp.get(id).operands {
            if !inside.contains(&o) && !map.contains_key(&o) {
                let mut param = Instruction::new(format!("param_{}", operands.len()), Opcode::Parameter, comp.get(o).shape.clone(), vec![]);
                param.attrs.parameter_number = Some(operands.len() as i64);
                let pid = fused.add(param);
                map.insert(o, pid);
                operands.push(o);
            }
        }
        let mut copy = comp.get(id).clone();
        copy.operands = copy.operands.iter().map(|o| map[o]).collect();
        copy.control_predecessors.clear();
        let new = fused.add(copy);
        map.insert(id, new);
    }
    fused.root = map[&root];
    let root_inst = comp.get(root);
    let kind = if root_inst.opcode == Opcode::Reduce { FusionKind::Input } else { FusionKind::Loop };
    let mut fusion = Instruction::new(format!("{}.fusion{n}", root_inst.name), Opcode::Fusion, root_inst.shape.clone(), operands);
    fusion.attrs.fusion_kind = Some(kind);
    fusion.control_predecessors = root_inst.control_predecessors.clone();
    (fusion, fused)
}

fn unique_computation_name(module: &Module, n: usize) -> String {
    let mut name = format!("fused_computation.hlojit.{n}");
    while module.find_computation(&name).is_some() {
        name.push('_');
    }
    name
}

/// Fuses producers into consumers.
pub struct Fusion;

impl super::pass::Pass for Fusion {
    fn name(&self) -> &'static str {
        "fusion"
    }

    fn run(&self, module: &mut crate::hlo::Module) -> crate::error::Result<bool> {
        fuse(module)
    }
}
