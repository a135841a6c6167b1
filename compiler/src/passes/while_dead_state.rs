//! Removes loop-state elements nothing reads, as XLA's while-loop simplifier does: an element
//! whose value is not used after the loop, not read by the condition, and in the body flows
//! only into its own next value. JAX's scans carry such elements (a residual stacked for a
//! gradient nobody takes, a copy of another output); each costs a buffer, the copy of its
//! initial value and its update on every iteration.
//!
//! Loops whose body or condition is shared, whose state is read whole (not through
//! get-tuple-element) or whose body root is not a tuple are left alone. Removing one element
//! can make another dead (one only it read), so the pass repeats until nothing changes.

use crate::error::Result;
use crate::hlo::computation::has_side_effect;
use crate::hlo::{CompId, Computation, InstrId, Instruction, Module, Opcode};
use hlojit_runtime::Shape;
use std::collections::HashSet;

pub struct WhileDeadState;

impl super::pass::Pass for WhileDeadState {
    fn name(&self) -> &'static str {
        "while-dead-state"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        let mut changed = false;
        while remove_dead_state(module) {
            changed = true;
        }
        Ok(changed)
    }
}

/// Removes the dead elements of the first while loop that has some; returns whether one had.
/// (Removing renumbers the instructions of the loop's computation, so the search starts over.)
fn remove_dead_state(module: &mut Module) -> bool {
    let callers = module.caller_counts();
    for c in module.computation_post_order() {
        let comp = module.computation(c);
        let whiles = comp.ids_of(Opcode::While);
        for w in whiles {
            if let Some(dead) = dead_elements(module, c, w, &callers) {
                remove(module, c, w, &dead);
                return true;
            }
        }
    }
    false
}

/// Users of `param` when every one is a get-tuple-element: their indices.
fn element_reads(comp: &Computation, param: InstrId, users: &[Vec<InstrId>]) -> Option<Vec<(InstrId, usize)>> {
    users[param.index()]
        .iter()
        .map(|&u| {
            let inst = comp.get(u);
            (inst.opcode == Opcode::GetTupleElement).then_some(())?;
            Some((u, usize::try_from(inst.attrs.tuple_index?).ok()?))
        })
        .collect()
}

/// Whether instruction `id` has a use (an operand or control edge of something, or the root).
fn is_used(comp: &Computation, users: &[Vec<InstrId>], id: InstrId) -> bool {
    !users[id.index()].is_empty() || comp.root == id || comp.ids().any(|u| comp.get(u).control_predecessors.contains(&id))
}

/// The elements of while `w`'s state that can go, if any.
fn dead_elements(module: &Module, c: CompId, w: InstrId, callers: &[usize]) -> Option<Vec<usize>> {
    let caller = module.computation(c);
    let winst = caller.get(w);
    let (cond_id, body_id) = (winst.while_condition()?, winst.while_body()?);
    if callers.get(body_id.index()) != Some(&1) || callers.get(cond_id.index()) != Some(&1) || body_id == cond_id {
        return None;
    }
    let n = winst.shape.tuple_elements()?.len();
    let (body, cond) = (module.computation(body_id), module.computation(cond_id));
    let (&bparam, &cparam) = (body.parameters().first()?, cond.parameters().first()?);
    let root = body.root_instruction();
    if root.opcode != Opcode::Tuple || caller.root == w || body.root == bparam || cond.root == cparam {
        return None;
    }
    let caller_users = caller.users();
    let (body_users, cond_users) = (body.users(), cond.users());
    let after = element_reads(caller, w, &caller_users)?;
    let cond_reads = element_reads(cond, cparam, &cond_users)?;
    let body_reads = element_reads(body, bparam, &body_users)?;
    let mut live = vec![false; n];
    for &(g, i) in after.iter() {
        live[i] |= is_used(caller, &caller_users, g);
    }
    for &(g, i) in cond_reads.iter() {
        live[i] |= is_used(cond, &cond_users, g);
    }
    // Which next-state elements each body instruction flows into (None: into something that
    // must stay whatever the state, a side effect or a control edge).
    let mut reaches: Vec<Option<HashSet<usize>>> = vec![Some(HashSet::new()); body.instructions.len()];
    let order = body.post_order();
    let controls: HashSet<InstrId> = body.ids().flat_map(|u| body.get(u).control_predecessors.clone()).collect();
    for &id in order.iter().rev() {
        let inst = body.get(id);
        let mut set = Some(HashSet::new());
        if has_side_effect(inst) || controls.contains(&id) {
            set = None;
        }
        for &u in &body_users[id.index()] {
            let from_user = if u == body.root {
                Some(root.operands.iter().enumerate().filter(|(_, &o)| o == id).map(|(j, _)| j).collect())
            } else {
                reaches[u.index()].clone()
            };
            set = match (set, from_user) {
                (Some(mut a), Some(b)) => {
                    a.extend(b);
                    Some(a)
                }
                _ => None,
            };
        }
        reaches[id.index()] = set;
    }
    for &(g, i) in body_reads.iter() {
        match &reaches[g.index()] {
            Some(set) if set.iter().all(|&j| j == i) => {}
            _ => live[i] = true,
        }
    }
    let dead: Vec<usize> = (0..n).filter(|&i| !live[i]).collect();
    (!dead.is_empty()).then_some(dead)
}

/// Rewrites while `w` without the `dead` elements: its initial state, users, body and
/// condition.
fn remove(module: &mut Module, c: CompId, w: InstrId, dead: &[usize]) {
    let winst = module.computation(c).get(w).clone();
    let (Some(cond_id), Some(body_id)) = (winst.while_condition(), winst.while_body()) else { return };
    let old: Vec<Shape> = winst.shape.tuple_elements().map(<[Shape]>::to_vec).unwrap_or_default();
    let kept: Vec<usize> = (0..old.len()).filter(|i| !dead.contains(i)).collect();
    let new_index = |i: usize| kept.iter().position(|&k| k == i);
    let state = Shape::Tuple(kept.iter().map(|&i| old[i].clone()).collect());

    let caller = module.computation_mut(c);
    let init = winst.operands[0];
    let elements: Vec<InstrId> = match caller.get(init).opcode {
        Opcode::Tuple => kept.iter().map(|&i| caller.get(init).operands[i]).collect(),
        _ => kept
            .iter()
            .map(|&i| {
                let mut g = Instruction::new(format!("{}.in{i}", winst.name), Opcode::GetTupleElement, old[i].clone(), vec![init]);
                g.attrs.tuple_index = Some(i as i64);
                caller.add(g)
            })
            .collect(),
    };
    let new_init = caller.add(Instruction::new(format!("{}.init", winst.name), Opcode::Tuple, state.clone(), elements));
    let wi = caller.get_mut(w);
    wi.operands[0] = new_init;
    wi.shape = state.clone();
    reindex_reads(caller, w, &new_index);
    caller.compact();

    let body = module.computation_mut(body_id);
    let bparam = body.parameters()[0];
    body.get_mut(bparam).shape = state.clone();
    let root = body.root;
    let operands: Vec<InstrId> = kept.iter().map(|&i| body.get(root).operands[i]).collect();
    body.get_mut(root).operands = operands;
    body.get_mut(root).shape = state.clone();
    // Reads of dead elements flow only into the dead next values: they go with them.
    body.compact();
    reindex_reads(body, bparam, &new_index);

    let cond = module.computation_mut(cond_id);
    let cparam = cond.parameters()[0];
    cond.get_mut(cparam).shape = state;
    cond.compact();
    reindex_reads(cond, cparam, &new_index);
}

/// Points the get-tuple-elements of `tuple` at the elements' new indices.
fn reindex_reads(comp: &mut Computation, tuple: InstrId, new_index: &dyn Fn(usize) -> Option<usize>) {
    let reads: Vec<InstrId> =
        comp.ids().filter(|&u| comp.get(u).opcode == Opcode::GetTupleElement && comp.get(u).operands[0] == tuple).collect();
    for g in reads {
        let inst = comp.get_mut(g);
        if let Some(i) = inst.attrs.tuple_index.and_then(|i| usize::try_from(i).ok()).and_then(new_index) {
            inst.attrs.tuple_index = Some(i as i64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hlo::text::{parse_module, print_module};
    use crate::hlo::verify_module;
    use crate::passes::pass::Pass;

    fn run(text: &str) -> (Module, bool) {
        let mut m = parse_module(text).expect("parses");
        verify_module(&m).expect("verifies before");
        let changed = WhileDeadState.run(&mut m).expect("runs");
        verify_module(&m).unwrap_or_else(|e| panic!("does not verify after the pass: {e}\n{}", print_module(&m)));
        (m, changed)
    }

    fn state_of(m: &Module) -> String {
        let e = m.computation(m.entry);
        let w = e.ids().find(|&i| e.get(i).opcode == Opcode::While).expect("a while");
        e.get(w).shape.to_string()
    }

    // A scan stacking tanh(x) twice (two residuals), of which only the second is read after
    // the loop, and an element (c) the first residual's update reads.
    const SCAN: &str = r#"
HloModule scan
body {
  p = (s32[], f32[4,2], f32[4,2], f32[2], f32[2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  c = f32[2] get-tuple-element(p), index=3
  t = f32[2] tanh(c)
  r = f32[1,2] reshape(t)
  zero = s32[] constant(0)
  a = f32[4,2] get-tuple-element(p), index=1
  ua = f32[4,2] dynamic-update-slice(a, r, i, zero)
  b = f32[4,2] get-tuple-element(p), index=2
  ub = f32[4,2] dynamic-update-slice(b, r, i, zero)
  d = f32[2] get-tuple-element(p), index=4
  e = f32[2] add(d, d)
  ROOT out = (s32[], f32[4,2], f32[4,2], f32[2], f32[2]) tuple(next, ua, ub, c, e)
}
cond {
  p = (s32[], f32[4,2], f32[4,2], f32[2], f32[2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  x = f32[2] parameter(0)
  z = s32[] constant(0)
  f = f32[] constant(0)
  s = f32[4,2] broadcast(f), dimensions={}
  init = (s32[], f32[4,2], f32[4,2], f32[2], f32[2]) tuple(z, s, s, x, x)
  w = (s32[], f32[4,2], f32[4,2], f32[2], f32[2]) while(init), condition=cond, body=body
  ROOT b = f32[4,2] get-tuple-element(w), index=2
}
"#;

    #[test]
    fn unread_residuals_and_self_only_elements_go() {
        let (m, changed) = run(SCAN);
        assert!(changed);
        // The first residual (never read after the loop) and d (only feeds itself) go; c stays
        // because the kept residual reads it.
        assert_eq!(state_of(&m), "(s32[], f32[4,2], f32[2])");
        let text = print_module(&m);
        assert!(text.contains("get-tuple-element(%w), index=1"), "{text}");
    }

    #[test]
    fn loops_whose_elements_are_all_read_stay() {
        let read_all = SCAN.replace("ROOT b = f32[4,2] get-tuple-element(w), index=2", "ROOT b = (s32[], f32[4,2], f32[4,2], f32[2], f32[2]) copy(w)");
        let (m, changed) = run(&read_all);
        assert!(!changed);
        assert_eq!(state_of(&m), "(s32[], f32[4,2], f32[4,2], f32[2], f32[2])");
    }

    #[test]
    fn side_effects_keep_what_they_read() {
        let with_effect = SCAN.replace(
            "  e = f32[2] add(d, d)\n",
            "  e = f32[2] add(d, d)\n  tok = token[] after-all()\n  o = token[] outfeed(e, tok), outfeed_shape=f32[2]\n",
        );
        let (m, _) = run(&with_effect);
        assert_eq!(state_of(&m), "(s32[], f32[4,2], f32[2], f32[2])");
    }
}
