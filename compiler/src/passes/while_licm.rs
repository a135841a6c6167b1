//! While-loop invariant code motion, as XLA's `WhileLoopInvariantCodeMotion`: an instruction
//! of a while body whose operands are all loop invariant (constants, elements of the loop state
//! the body passes through unchanged, or other hoisted instructions) is computed once before the
//! loop and its value carried in the loop state as a new, pass-through element.
//!
//! What is not hoisted, as in XLA:
//! - instructions with side effects, control edges, parameters, tokens, and instructions that
//!   call computations (while, conditional, call, custom-call, collectives);
//! - on their own, instructions that only move or replicate data (broadcast, iota, reshape,
//!   bitcast, transpose, slice, reverse, tuple, constants): hoisting them gains nothing and
//!   keeps a copy alive for the whole loop; they move out only with a hoisted user;
//! - instructions whose result is much bigger than their operands (a dot's outer product, a
//!   pad): their result would occupy memory through the whole loop. XLA leaves that check off
//!   on CPU; here the ratio is [`MAX_SIZE_INFLATION`], so that hoisting never makes a loop need
//!   much more memory than it reads.
//!
//! Runs after calls are inlined (JAX's scan bodies call helpers) and before layout assignment
//! and fusion, so that hoisted values get layouts and fusions of their own.

use crate::error::Result;
use crate::hlo::computation::has_side_effect;
use crate::hlo::{CompId, Computation, InstrId, Instruction, Module, Opcode};
use hlojit_runtime::Shape;
use std::collections::{HashMap, HashSet};

/// A hoisted instruction's result may be at most this many times the size of its operands.
const MAX_SIZE_INFLATION: i64 = 2;

pub struct WhileLicm;

impl super::pass::Pass for WhileLicm {
    fn name(&self) -> &'static str {
        "while-licm"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        while_licm(module)
    }
}

/// Hoists loop-invariant instructions out of every while body; returns whether any moved.
pub fn while_licm(module: &mut Module) -> Result<bool> {
    let callers = module.caller_counts();
    let mut changed = false;
    // Inner loops first: what leaves an inner body may then leave the outer one.
    for c in module.computation_post_order() {
        let whiles = module.computation(c).ids_of(Opcode::While);
        for w in whiles {
            changed |= hoist_from(module, c, w, &callers)?;
        }
    }
    Ok(changed)
}

/// Opcodes never hoisted: they call computations, have effects or carry tokens.
fn never_hoisted(inst: &Instruction) -> bool {
    use Opcode::*;
    has_side_effect(inst)
        || !inst.called.is_empty()
        || !inst.control_predecessors.is_empty()
        || inst.shape.is_token()
        || matches!(
            inst.opcode,
            Parameter | AfterAll | AddDependency | OptimizationBarrier | CustomCall | While | Conditional | Call | Rng | RngBitGenerator
                | RngGetAndUpdateState | ReplicaId | PartitionId | GetDimensionSize | SetDimensionSize
        )
        || inst.opcode.is_collective()
}

/// XLA's `NotWorthHoistingIndividually`: moving these alone saves no work.
fn not_worth_alone(opcode: Opcode) -> bool {
    use Opcode::*;
    matches!(opcode, Constant | Reshape | Bitcast | Broadcast | Iota | Reverse | Slice | Transpose | Tuple | GetTupleElement)
}

fn bytes(shape: &Shape) -> i64 {
    shape.array_leaves().iter().map(|a| a.element_count().saturating_mul(a.element_type.byte_size() as i64)).sum()
}

/// The body's state elements that pass through unchanged: `index -> get-tuple-element`.
/// The root must be a tuple whose element `i` is `get-tuple-element(param, i)`.
pub(super) fn invariant_elements(body: &Computation) -> HashMap<InstrId, usize> {
    let mut out = HashMap::new();
    let root = body.root_instruction();
    let Some(&param) = body.parameters().first() else { return out };
    if root.opcode != Opcode::Tuple {
        return out;
    }
    for (i, &op) in root.operands.iter().enumerate() {
        let inst = body.get(op);
        if inst.opcode == Opcode::GetTupleElement && inst.operands[0] == param && inst.attrs.tuple_index == Some(i as i64) && inst.shape.is_array() {
            out.insert(op, i);
        }
    }
    // Other reads of the same element are as invariant.
    for id in body.ids() {
        let inst = body.get(id);
        if inst.opcode == Opcode::GetTupleElement && inst.operands[0] == param {
            if let Some(i) = inst.attrs.tuple_index {
                if out.values().any(|&j| j == i as usize) {
                    out.insert(id, i as usize);
                }
            }
        }
    }
    out
}

/// Which body instructions to hoist, in post order, and which of them the body still uses
/// (those become new loop-state elements).
fn choose(body: &Computation, invariant: &HashMap<InstrId, usize>) -> Vec<InstrId> {
    let mut hoisted: HashSet<InstrId> = HashSet::new();
    let mut order: Vec<InstrId> = Vec::new();
    // Legal to hoist but not worth it alone: moved only with a hoisted user.
    let mut pending: HashSet<InstrId> = HashSet::new();
    let post_order = body.post_order();
    let position: HashMap<InstrId, usize> = post_order.iter().enumerate().map(|(i, &x)| (x, i)).collect();
    let is_invariant = |id: &InstrId, hoisted: &HashSet<InstrId>, pending: &HashSet<InstrId>| {
        invariant.contains_key(id) || hoisted.contains(id) || pending.contains(id) || body.get(*id).opcode == Opcode::Constant
    };
    for &id in &post_order {
        let inst = body.get(id);
        if invariant.contains_key(&id) || id == body.root || never_hoisted(inst) {
            continue;
        }
        if !inst.operands.iter().all(|o| is_invariant(o, &hoisted, &pending)) {
            continue;
        }
        if not_worth_alone(inst.opcode) {
            pending.insert(id);
            continue;
        }
        let input: i64 = inst.operands.iter().map(|&o| bytes(&body.get(o).shape)).sum();
        if bytes(&inst.shape) > input.max(1).saturating_mul(MAX_SIZE_INFLATION) {
            continue;
        }
        // Move the pending operands (transitively) along with it.
        let mut stack: Vec<InstrId> = inst.operands.clone();
        let mut deps = Vec::new();
        while let Some(o) = stack.pop() {
            if (pending.contains(&o) || body.get(o).opcode == Opcode::Constant) && !hoisted.contains(&o) && !deps.contains(&o) {
                deps.push(o);
                stack.extend(body.get(o).operands.iter().copied());
            }
        }
        // Post order among them: an operand before its users.
        deps.sort_by_key(|d| position[d]);
        for d in deps {
            pending.remove(&d);
            hoisted.insert(d);
            order.push(d);
        }
        hoisted.insert(id);
        order.push(id);
    }
    order
}

/// Hoists from while `w` of computation `c`; returns whether anything moved.
fn hoist_from(module: &mut Module, c: CompId, w: InstrId, callers: &[usize]) -> Result<bool> {
    hoist(module, c, w, callers, &choose)
}

/// Hoists the body instructions `pick` names (given the body and its invariant elements; in
/// post order, their operands invariant elements or earlier picks) out of while `w` of
/// computation `c`; returns whether anything moved. Other passes that find invariant values
/// of their own (`while_input_projection`) hoist them through here.
pub(super) fn hoist(
    module: &mut Module,
    c: CompId,
    w: InstrId,
    callers: &[usize],
    pick: &dyn Fn(&Computation, &HashMap<InstrId, usize>) -> Vec<InstrId>,
) -> Result<bool> {
    let winst = module.computation(c).get(w).clone();
    let (Some(cond_id), Some(body_id)) = (winst.while_condition(), winst.while_body()) else { return Ok(false) };
    // A body or condition shared with another loop would need a copy; leave those alone.
    if callers.get(body_id.index()).copied().unwrap_or(0) != 1 || callers.get(cond_id.index()).copied().unwrap_or(0) != 1 || body_id == cond_id {
        return Ok(false);
    }
    let Some(old_elements) = winst.shape.tuple_elements().map(<[Shape]>::to_vec) else { return Ok(false) };
    let body = module.computation(body_id);
    let cond = module.computation(cond_id);
    let (Some(&bparam), Some(&cparam)) = (body.parameters().first(), cond.parameters().first()) else { return Ok(false) };
    // The condition may only read elements of the state, whose indices stay valid.
    let cusers = cond.users();
    if cusers[cparam.index()].iter().any(|&u| cond.get(u).opcode != Opcode::GetTupleElement) || cond.root == cparam {
        return Ok(false);
    }
    let invariant = invariant_elements(body);
    let order = pick(body, &invariant);
    if order.is_empty() {
        return Ok(false);
    }
    let hoisted: HashSet<InstrId> = order.iter().copied().collect();
    // Values the body still reads after hoisting: hoisted instructions with a user left in it.
    let busers = body.users();
    let live_in: Vec<InstrId> = order
        .iter()
        .copied()
        .filter(|&h| busers[h.index()].iter().any(|u| !hoisted.contains(u)) || body.root == h)
        // Data movement moved out only for a user stays in the body too if it has other
        // users there: recomputing it (usually fused) is cheaper than carrying it.
        .filter(|&h| !not_worth_alone(body.get(h).opcode))
        .collect();
    if live_in.is_empty() {
        return Ok(false);
    }
    let body = body.clone();
    let n = old_elements.len();

    // 1. Copies of the hoisted instructions in the caller, reading the loop's initial state.
    let caller = module.computation_mut(c);
    let caller_before = caller.instructions.len();
    let init = winst.operands[0];
    let init_tuple = (caller.get(init).opcode == Opcode::Tuple).then(|| caller.get(init).operands.clone());
    let mut element: HashMap<usize, InstrId> = HashMap::new();
    let mut element_of = |caller: &mut Computation, i: usize| -> InstrId {
        if let Some(&e) = element.get(&i) {
            return e;
        }
        let e = match &init_tuple {
            Some(ops) => ops[i],
            None => {
                let mut g = Instruction::new(format!("{}.licm.in{i}", winst.name), Opcode::GetTupleElement, old_elements[i].clone(), vec![init]);
                g.attrs.tuple_index = Some(i as i64);
                caller.add(g)
            }
        };
        element.insert(i, e);
        e
    };
    let mut copy_of: HashMap<InstrId, InstrId> = HashMap::new();
    for &h in &order {
        let inst = body.get(h);
        let mut copy = inst.clone();
        copy.name = format!("{}.licm", inst.name);
        copy.operands = inst
            .operands
            .iter()
            .map(|o| match invariant.get(o) {
                Some(&i) => element_of(caller, i),
                None => copy_of[o],
            })
            .collect();
        let id = caller.add(copy);
        copy_of.insert(h, id);
    }

    // 2. The new loop state: the old elements, then the hoisted values.
    let mut elements = old_elements.clone();
    elements.extend(live_in.iter().map(|h| body.get(*h).shape.clone()));
    let state = Shape::Tuple(elements);
    let mut init_ops: Vec<InstrId> = (0..n).map(|i| element_of(caller, i)).collect();
    init_ops.extend(live_in.iter().map(|h| copy_of[h]));
    let new_init = caller.add(Instruction::new(format!("{}.licm.init", winst.name), Opcode::Tuple, state.clone(), init_ops));
    {
        let wi = caller.get_mut(w);
        wi.operands[0] = new_init;
        wi.shape = state.clone();
    }
    // Users of the loop that see the whole state get the old state's elements.
    let wusers: Vec<InstrId> = caller.ids().filter(|&u| u != w && caller.get(u).operands.contains(&w)).collect();
    let needs_narrowing = caller.root == w || wusers.iter().any(|&u| caller.get(u).opcode != Opcode::GetTupleElement);
    if needs_narrowing {
        let gtes: Vec<InstrId> = (0..n)
            .map(|i| {
                let mut g = Instruction::new(format!("{}.licm.out{i}", winst.name), Opcode::GetTupleElement, old_elements[i].clone(), vec![w]);
                g.attrs.tuple_index = Some(i as i64);
                caller.add(g)
            })
            .collect();
        let narrowed = caller.add(Instruction::new(format!("{}.licm.state", winst.name), Opcode::Tuple, Shape::Tuple(old_elements.clone()), gtes));
        let whole: Vec<InstrId> = wusers.into_iter().filter(|&u| caller.get(u).opcode != Opcode::GetTupleElement).collect();
        for u in whole {
            for op in caller.get_mut(u).operands.iter_mut().filter(|o| **o == w) {
                *op = narrowed;
            }
        }
        if caller.root == w {
            caller.root = narrowed;
        }
    }

    rename_duplicates(caller, caller_before);

    // 3. The body reads the hoisted values from the state and passes them on.
    let b = module.computation_mut(body_id);
    let body_before = b.instructions.len();
    b.get_mut(bparam).shape = state.clone();
    let mut passed = Vec::new();
    for (k, &h) in live_in.iter().enumerate() {
        let mut g = Instruction::new(format!("{}.licm", body.get(h).name), Opcode::GetTupleElement, body.get(h).shape.clone(), vec![bparam]);
        g.attrs.tuple_index = Some((n + k) as i64);
        let g = b.add(g);
        b.replace_all_uses(h, g);
        passed.push(g);
    }
    let root = b.root;
    b.get_mut(root).operands.extend(passed);
    b.get_mut(root).shape = state.clone();
    rename_duplicates(b, body_before);
    b.compact();

    // 4. The condition's parameter takes the new state.
    let k = module.computation_mut(cond_id);
    k.get_mut(cparam).shape = state;
    Ok(true)
}

/// Gives the instructions added to `comp` from index `first_new` on names no other instruction
/// has: a loop hoisted from twice (by this pass, then by `while_input_projection`) would
/// otherwise get two `<loop>.licm.init` tuples, and two loops may hoist equally named values.
fn rename_duplicates(comp: &mut Computation, first_new: usize) {
    let mut names: HashSet<String> = comp.instructions[..first_new].iter().map(|i| i.name.clone()).collect();
    for inst in &mut comp.instructions[first_new..] {
        inst.name = super::fused_body::unique_name(&mut names, &inst.name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hlo::text::{parse_module, print_module};
    use crate::hlo::verify_module;

    fn licm(text: &str) -> (Module, bool) {
        let mut m = parse_module(text).expect("parses");
        verify_module(&m).expect("verifies before");
        let changed = while_licm(&mut m).expect("licm");
        verify_module(&m).unwrap_or_else(|e| panic!("does not verify after the pass: {e}\n{}", print_module(&m)));
        (m, changed)
    }

    fn names(m: &Module, comp: &str) -> Vec<String> {
        let c = m.computation(m.find_computation(comp).expect("computation"));
        c.post_order().into_iter().map(|id| c.get(id).name.clone()).collect()
    }

    // An RNN step: `w * 0.25` is invariant (w passes through), `h * w` is not.
    const RNN: &str = r#"
HloModule rnn, entry_computation_layout={(f32[4]{0}, f32[4]{0})->f32[4]{0}}

body {
  p = (s32[], f32[4]{0}, f32[4]{0}) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  h = f32[4]{0} get-tuple-element(p), index=1
  w = f32[4]{0} get-tuple-element(p), index=2
  q = f32[] constant(0.25)
  qb = f32[4]{0} broadcast(q), dimensions={}
  ws = f32[4]{0} multiply(w, qb)
  hw = f32[4]{0} multiply(h, ws)
  t = f32[4]{0} tanh(hw)
  big = f32[4,4]{1,0} broadcast(w), dimensions={1}
  ROOT r = (s32[], f32[4]{0}, f32[4]{0}) tuple(next, t, w)
}

cond {
  p = (s32[], f32[4]{0}, f32[4]{0}) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}

ENTRY main {
  h0 = f32[4]{0} parameter(0)
  w0 = f32[4]{0} parameter(1)
  z = s32[] constant(0)
  init = (s32[], f32[4]{0}, f32[4]{0}) tuple(z, h0, w0)
  loop = (s32[], f32[4]{0}, f32[4]{0}) while(init), condition=cond, body=body
  ROOT out = f32[4]{0} get-tuple-element(loop), index=1
}
"#;

    #[test]
    fn hoists_invariant_arithmetic_with_its_broadcast() {
        let (m, changed) = licm(RNN);
        assert!(changed);
        let entry = names(&m, "main");
        assert!(entry.contains(&"ws.licm".to_string()), "{entry:?}");
        assert!(entry.contains(&"qb.licm".to_string()), "{entry:?}");
        let body = names(&m, "body");
        assert!(!body.contains(&"ws".to_string()) && !body.contains(&"qb".to_string()), "{body:?}");
        // The varying multiply and tanh stay; the state grew by the hoisted value.
        assert!(body.contains(&"hw".to_string()) && body.contains(&"t".to_string()));
        let b = m.computation(m.find_computation("body").unwrap());
        assert_eq!(b.root_instruction().operands.len(), 4);
        let w = m.entry_computation().find("loop").unwrap();
        assert_eq!(m.entry_computation().get(w).shape.tuple_elements().unwrap().len(), 4);
        // A second run finds nothing more to move.
        let mut again = m.clone();
        assert!(!while_licm(&mut again).unwrap());
    }

    #[test]
    fn leaves_varying_and_inflating_values() {
        let (m, _) = licm(RNN);
        // `big` inflates w four times and is not worth hoisting alone; it is dead anyway and the
        // body's DCE drops it, but it never appears in the caller.
        assert!(!names(&m, "main").contains(&"big.licm".to_string()));
        // A broadcast alone (no hoisted user) stays.
        let text = RNN.replace("ws = f32[4]{0} multiply(w, qb)\n  hw = f32[4]{0} multiply(h, ws)", "hw = f32[4]{0} multiply(h, qb)");
        let (m, changed) = licm(&text);
        assert!(!changed, "{}", print_module(&m));
    }

    #[test]
    fn a_dot_whose_result_is_much_bigger_stays() {
        let text = RNN
            .replace("ws = f32[4]{0} multiply(w, qb)", "b16 = f32[16]{0} broadcast(q), dimensions={}\n  outer = f32[4,16]{1,0} dot(w, b16), lhs_contracting_dims={}, rhs_contracting_dims={}\n  ws = f32[4]{0} reduce(outer, q), dimensions={1}, to_apply=add")
            .replace("cond {", "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\ncond {");
        let (m, changed) = licm(&text);
        // The outer product is 3.2 times the size of its operands: it stays, and so does the
        // reduce that reads it.
        assert!(!changed, "{}", print_module(&m));
    }

    #[test]
    fn a_loop_whose_state_is_used_whole_keeps_its_result_shape() {
        let text = RNN.replace("ROOT out = f32[4]{0} get-tuple-element(loop), index=1", "ROOT out = (s32[], f32[4]{0}, f32[4]{0}) tuple(loop)")
            .replace("->f32[4]{0}}", "->((s32[], f32[4]{0}, f32[4]{0}))}")
            .replace("ROOT out = (s32[], f32[4]{0}, f32[4]{0}) tuple(loop)", "ROOT out = ((s32[], f32[4]{0}, f32[4]{0})) tuple(loop)");
        let (m, changed) = licm(&text);
        assert!(changed);
        assert_eq!(m.entry_computation().root_instruction().shape.to_string(), "((s32[], f32[4]{0}, f32[4]{0}))");
    }
}
