//! Residual rematerialization between a scan and its reverse: a stack the forward loop fills
//! with a cheap elementwise function of what it stores in another stack of the same steps is
//! not stored; the reverse loop computes it from the other stack's rows where it reads it.
//!
//! Why: JAX's reverse-mode of `scan` stacks every residual the backward step needs, and some
//! are cheap functions of others (tanh's derivative `1 - y` of the stacked `y`). Each such stack
//! costs a store of every element in the forward loop (plus the read of the cache line it
//! writes) and a load of it in the backward loop: scan_grad_200x32x256 moves a 6.5 MB stack
//! three times for one subtraction per element. Recomputing the subtraction where the
//! backward step loads the other stack's row (which it loads anyway) costs one vector op.
//!
//! The rule, for a while `W1` in computation `C`, state elements `a` and `b` of `W1`:
//! - `W1` runs exactly N times (`while_dead_init`'s counted loop) and both elements are
//!   stacks of N rows that each iteration overwrites row by row, at the same start indices,
//!   with updates of the same shape: `b`'s update is `g(x)` and `a`'s is `x` (both possibly
//!   through one reshape), where `g` is a few cheap elementwise ops of `x` and of broadcast
//!   scalar constants. Every row of both stacks is written, so after the loop `b == g(a)`,
//!   bit for bit (the same ops on the same values).
//! - `W1`'s result `b` is read only once, by the initial tuple of a while `W2`, which also
//!   carries `W1`'s result `a`; `W2`'s body passes both elements through unchanged, reads `b`
//!   only through dynamic-slices and its condition does not read `b`.
//!
//! Then each `dynamic-slice(b, s)` of `W2`'s body becomes `g(dynamic-slice(a, s))` (an
//! elementwise `g` commutes with slicing), `W2` no longer reads `b`, and `while_dead_state`
//! (which runs next) removes the element from both loops.

use super::while_dead_init::{counted_loop, element_reads, overwritten_each_row, tuple_index_of_parameter};
use crate::error::Result;
use crate::hlo::{CompId, Computation, InstrId, Instruction, Module, Opcode};
use hlojit_runtime::Shape;

/// Most elementwise ops recomputed per element: a stored f32 element costs its store, the
/// read of the line it is stored into and its load (12 bytes, several cycles of memory
/// bandwidth), a vector op an eighth of a cycle per element; beyond a handful of ops the
/// recomputation would start to show in the reverse loop, which is often compute-heavy.
const MAX_REMAT_OPS: usize = 4;

pub struct WhileResidualRemat;

impl super::pass::Pass for WhileResidualRemat {
    fn name(&self) -> &'static str {
        "while-residual-remat"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        let mut changed = false;
        // One stack at a time: each rewrite renumbers the reverse loop's body.
        while let Some(plan) = find(module) {
            apply(module, &plan)?;
            changed = true;
        }
        Ok(changed)
    }
}

/// A stack to recompute: `W2`'s body `body2` reads element `pb` (the stack `b` of the forward
/// loop) and gets `g` applied to element `pa` instead. `g` is the forward body's instructions
/// from `x` to `b`'s update, in post order, its last one the value (empty when `b` stores `x`
/// itself).
struct Plan {
    body1: CompId,
    x: InstrId,
    g: Vec<InstrId>,
    body2: CompId,
    pa: usize,
    pb: usize,
}

fn find(module: &Module) -> Option<Plan> {
    let callers = module.caller_counts();
    for c in module.computation_post_order() {
        let comp = module.computation(c);
        let users = comp.users();
        for w1 in comp.ids_of(Opcode::While) {
            if let Some(plan) = candidate(module, comp, &users, w1, &callers) {
                return Some(plan);
            }
        }
    }
    None
}

/// Follows get-tuple-element of a tuple to the tuple's operand (inlined calls leave them).
fn resolve(comp: &Computation, mut id: InstrId) -> InstrId {
    loop {
        let inst = comp.get(id);
        if inst.opcode != Opcode::GetTupleElement {
            return id;
        }
        let tuple = comp.get(inst.operands[0]);
        match (tuple.opcode, inst.attrs.tuple_index) {
            (Opcode::Tuple, Some(k)) if (k as usize) < tuple.operands.len() => id = tuple.operands[k as usize],
            _ => return id,
        }
    }
}

/// The value a stack's update stores, under at most one reshape: `(value, reshaped)`.
fn stored_value(body: &Computation, update: InstrId) -> (InstrId, bool) {
    let u = resolve(body, update);
    let inst = body.get(u);
    if inst.opcode == Opcode::Reshape {
        (resolve(body, inst.operands[0]), true)
    } else {
        (u, false)
    }
}

/// `g` from `x` to `value` when `value` is a few cheap elementwise ops of `x` (of `x`'s
/// dimensions) and of broadcast scalar constants: the ops in post order.
fn elementwise_of(body: &Computation, value: InstrId, x: InstrId) -> Option<Vec<InstrId>> {
    fn walk(body: &Computation, id: InstrId, x: InstrId, dims: &[i64], out: &mut Vec<InstrId>) -> Option<bool> {
        let id = resolve(body, id);
        if id == x {
            return Some(true);
        }
        let inst = body.get(id);
        if !inst.control_predecessors.is_empty() || inst.shape.dims() != dims {
            return None;
        }
        let scalar_constant = |o: InstrId| {
            let c = body.get(o);
            c.opcode == Opcode::Constant && c.shape.dims().is_empty()
        };
        if inst.opcode == Opcode::Broadcast && inst.operands.len() == 1 && scalar_constant(inst.operands[0]) {
            if !out.contains(&id) {
                out.push(id);
            }
            return Some(false);
        }
        let floating = inst.shape.element_type().is_some_and(|t| t.is_floating());
        if !inst.opcode.is_elementwise() || inst.opcode.is_expensive(floating) || inst.operands.is_empty() {
            return None;
        }
        let mut reads_x = false;
        for &o in &inst.operands {
            reads_x |= walk(body, o, x, dims, out)?;
        }
        if !out.contains(&id) {
            out.push(id);
        }
        Some(reads_x)
    }
    let mut out = Vec::new();
    let reads_x = walk(body, value, x, body.get(x).shape.dims(), &mut out)?;
    let ops = out.iter().filter(|&&i| body.get(i).opcode != Opcode::Broadcast).count();
    (reads_x || value == x).then_some(out).filter(|_| ops <= MAX_REMAT_OPS)
}

fn candidate(module: &Module, comp: &Computation, users: &[Vec<InstrId>], w1: InstrId, callers: &[usize]) -> Option<Plan> {
    let w1inst = comp.get(w1);
    let (cond1_id, body1_id) = (w1inst.while_condition()?, w1inst.while_body()?);
    let (cond1, body1) = (module.computation(cond1_id), module.computation(body1_id));
    let init1 = comp.get(w1inst.operands[0]);
    if init1.opcode != Opcode::Tuple {
        return None;
    }
    let (counter, trips) = counted_loop(comp, init1, cond1, body1)?;
    let root1 = body1.root_instruction();
    if root1.opcode != Opcode::Tuple {
        return None;
    }
    let body1_users = body1.users();
    // The forward loop's stacks: element -> (update's start operands, stored value, reshaped).
    let stack = |k: usize| -> Option<(Vec<InstrId>, InstrId, bool)> {
        let dims = w1inst.shape.tuple_elements()?.get(k)?.dims().to_vec();
        if k == counter || dims.first() != Some(&trips) || !overwritten_each_row(body1, &body1_users, k, counter) {
            return None;
        }
        let dus = body1.get(root1.operands[k]);
        let (value, reshaped) = stored_value(body1, dus.operands[1]);
        Some((dus.operands[2..].to_vec(), value, reshaped))
    };
    // `W1`'s results read by one while's initial tuple only, each at one position.
    let results = |k: usize| users[w1.index()].iter().copied().filter(move |&g| comp.get(g).opcode == Opcode::GetTupleElement && comp.get(g).attrs.tuple_index == Some(k as i64));
    for gb in users[w1.index()].iter().copied().filter(|&g| comp.get(g).opcode == Opcode::GetTupleElement) {
        let b = comp.get(gb).attrs.tuple_index? as usize;
        let [t2] = users[gb.index()].as_slice() else { continue };
        let t2inst = comp.get(*t2);
        let [w2] = users[t2.index()].as_slice() else { continue };
        let w2inst = comp.get(*w2);
        if t2inst.opcode != Opcode::Tuple || w2inst.opcode != Opcode::While || w2inst.operands[0] != *t2 {
            continue;
        }
        let positions = |g: InstrId| t2inst.operands.iter().enumerate().filter(move |(_, &o)| o == g).map(|(p, _)| p);
        let [pb] = positions(gb).collect::<Vec<_>>()[..] else { continue };
        let Some((starts_b, value_b, reshaped_b)) = stack(b) else { continue };
        let (Some(cond2_id), Some(body2_id)) = (w2inst.while_condition(), w2inst.while_body()) else { continue };
        if callers.get(body2_id.index()) != Some(&1) || body2_id == body1_id || cond2_id == body2_id {
            continue;
        }
        let (cond2, body2) = (module.computation(cond2_id), module.computation(body2_id));
        if !reads_only_by_slices(body2, pb) || reads_element(cond2, pb) {
            continue;
        }
        for a in 0..root1.operands.len() {
            if a == b {
                continue;
            }
            let Some((starts_a, x, reshaped_a)) = stack(a) else { continue };
            let same_shape = w1inst.shape.tuple_elements()?.get(a)? == w1inst.shape.tuple_elements()?.get(b)?;
            if starts_a != starts_b || reshaped_a != reshaped_b || !same_shape {
                continue;
            }
            let Some(g) = elementwise_of(body1, value_b, x) else { continue };
            // Two stacks of the same values (`g` empty) would each qualify as the other's
            // recomputation, and rewriting one back into the other never ends: only the later
            // stack is read from the earlier.
            if g.is_empty() && a > b {
                continue;
            }
            // `W2` carries `W1`'s `a` too, passed through unchanged.
            let Some(pa) = results(a).flat_map(|g| positions(g).collect::<Vec<_>>()).next() else { continue };
            if !passes_through(body2, pa) {
                continue;
            }
            return Some(Plan { body1: body1_id, x, g, body2: body2_id, pa, pb });
        }
    }
    None
}

/// Whether the condition reads element `k` (or its parameter whole).
fn reads_element(cond: &Computation, k: usize) -> bool {
    let users = cond.users();
    element_reads(cond, &users, k).is_none_or(|r| r.iter().any(|g| !users[g.index()].is_empty() || cond.root == *g))
}

/// Whether the body's root passes element `k` of its parameter through unchanged.
fn passes_through(body: &Computation, k: usize) -> bool {
    let root = body.root_instruction();
    root.opcode == Opcode::Tuple
        && root.operands.get(k).is_some_and(|&o| tuple_index_of_parameter(body, body.get(resolve(body, o))) == Some(k))
}

/// Whether the body reads element `k` as the operand of dynamic-slices, and otherwise only
/// passes it through unchanged.
fn reads_only_by_slices(body: &Computation, k: usize) -> bool {
    let users = body.users();
    let Some(reads) = element_reads(body, &users, k) else { return false };
    let root = body.root_instruction();
    let sliced = reads.iter().any(|&g| users[g.index()].iter().any(|&u| body.get(u).opcode == Opcode::DynamicSlice));
    sliced
        && passes_through(body, k)
        && reads.iter().all(|&g| {
            users[g.index()].iter().all(|&u| {
                let inst = body.get(u);
                let in_root = u == body.root && root.operands.iter().enumerate().all(|(p, &o)| o != g || p == k);
                let slice = inst.opcode == Opcode::DynamicSlice && inst.operands[0] == g && !inst.operands[1..].contains(&g);
                in_root || slice
            })
        })
}

/// A name not yet taken in `comp`.
fn fresh_name(comp: &Computation, base: &str) -> String {
    let mut name = format!("{base}.remat");
    let mut n = 1;
    while comp.find(&name).is_some() {
        name = format!("{base}.remat{n}");
        n += 1;
    }
    name
}

/// Where an op of `g` takes an operand from: `x`, an earlier op of `g`, or (for a broadcast)
/// its scalar constant.
enum Source {
    X,
    Op(usize),
    Constant(Instruction),
}

fn apply(module: &mut Module, plan: &Plan) -> Result<()> {
    let body1 = module.computation(plan.body1);
    let g: Vec<(Instruction, Vec<Source>)> = plan
        .g
        .iter()
        .map(|&i| {
            let inst = body1.get(i).clone();
            let sources = inst
                .operands
                .iter()
                .map(|&o| {
                    let o = resolve(body1, o);
                    match plan.g.iter().position(|&p| p == o) {
                        _ if o == plan.x => Source::X,
                        Some(k) => Source::Op(k),
                        None => Source::Constant(body1.get(o).clone()),
                    }
                })
                .collect();
            (inst, sources)
        })
        .collect();
    let body = module.computation_mut(plan.body2);
    let param = body.parameters()[0];
    let users = body.users();
    let reads = element_reads(body, &users, plan.pb).unwrap_or_default();
    let slices: Vec<InstrId> = reads.iter().flat_map(|g| users[g.index()].iter().copied()).filter(|&u| body.get(u).opcode == Opcode::DynamicSlice).collect();
    let param_shape = body.get(param).shape.clone();
    let a_shape = param_shape.tuple_elements().and_then(|t| t.get(plan.pa)).cloned().unwrap_or(param_shape.clone());
    let mut read_a = Instruction::new(fresh_name(body, "stack"), Opcode::GetTupleElement, a_shape, vec![param]);
    read_a.attrs.tuple_index = Some(plan.pa as i64);
    let read_a = body.add(read_a);
    for s in slices {
        let slice = body.get(s).clone();
        let dims = slice.shape.dims().to_vec();
        let mut ds = slice.clone();
        ds.name = fresh_name(body, &slice.name);
        ds.operands[0] = read_a;
        let ds = body.add(ds);
        // `g` again, on the slice's shape: `x` is the slice of `a`; each op keeps its element
        // type and takes the slice's dimensions.
        let mut made: Vec<InstrId> = Vec::with_capacity(g.len());
        for (inst, sources) in &g {
            let mut copy = inst.clone();
            copy.name = fresh_name(body, &inst.name);
            copy.control_predecessors.clear();
            copy.shape = Shape::array_row_major(inst.shape.element_type().expect("array op"), dims.clone());
            let mut operands = Vec::with_capacity(sources.len());
            for source in sources {
                operands.push(match source {
                    Source::X => ds,
                    Source::Op(k) => made[*k],
                    Source::Constant(c) => {
                        let mut c = c.clone();
                        c.name = fresh_name(body, &c.name);
                        body.add(c)
                    }
                });
            }
            copy.operands = operands;
            made.push(body.add(copy));
        }
        body.replace_all_uses(s, made.last().copied().unwrap_or(ds));
    }
    body.compact();
    Ok(())
}

#[cfg(test)]
#[path = "while_residual_remat_tests.rs"]
mod tests;
