//! Gives every while-loop state element that starts as a broadcast constant its own broadcast.
//!
//! JAX starts each stacked output of a `scan` (forward outputs, reverse-mode residuals) as
//! `broadcast(0)`, and CSE merges those into one instruction. One buffer cannot hold two state
//! elements, so buffer assignment then copies the shared initial value into the loop's own
//! buffers before the loop starts: for scan_grad_200x32x256 two 6.5 MB copies per run on top of
//! the broadcast itself. A broadcast of a constant costs no more to compute than to copy (it
//! only writes), so each element gets its own, which buffer assignment then places in the
//! element's buffer: the loop starts with no copy at all.
//!
//! Runs after CSE (which would merge the copies again) and before fusion.

use crate::error::Result;
use crate::hlo::{InstrId, Instruction, Module, Opcode};
use std::collections::HashSet;

pub struct WhileInitBroadcasts;

impl super::pass::Pass for WhileInitBroadcasts {
    fn name(&self) -> &'static str {
        "while-init-broadcasts"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        let mut changed = false;
        for comp in &mut module.computations {
            let users = comp.users();
            let mut names: HashSet<String> = comp.ids().map(|i| comp.get(i).name.clone()).collect();
            let inits: Vec<InstrId> = comp
                .ids()
                .filter(|&id| comp.get(id).opcode == Opcode::While)
                .map(|w| comp.get(w).operands[0])
                .filter(|&t| comp.get(t).opcode == Opcode::Tuple && users[t.index()].len() == 1)
                .collect();
            for tuple in inits {
                let mut seen: HashSet<InstrId> = HashSet::new();
                for k in 0..comp.get(tuple).operands.len() {
                    let b = comp.get(tuple).operands[k];
                    let first = seen.insert(b);
                    // Other users (here or after the loop) keep the broadcast's buffer alive
                    // past the loop's start, which also forces a copy.
                    let only_this_tuple = users[b.index()].iter().all(|&u| u == tuple);
                    if (first && only_this_tuple) || !is_constant_broadcast(comp, b) {
                        continue;
                    }
                    let old = comp.get(b);
                    let name = (1..).map(|n| format!("{}.while_init{n}", old.name)).find(|n| !names.contains(n)).unwrap_or_default();
                    names.insert(name.clone());
                    let mut new = Instruction::new(name, Opcode::Broadcast, old.shape.clone(), old.operands.clone());
                    new.attrs = old.attrs.clone();
                    let id = comp.add(new);
                    comp.get_mut(tuple).operands[k] = id;
                    changed = true;
                }
            }
        }
        Ok(changed)
    }
}

/// A broadcast of a constant with no control edges: recomputing it gives the same array.
pub(super) fn is_constant_broadcast(comp: &crate::hlo::Computation, id: InstrId) -> bool {
    let inst = comp.get(id);
    inst.opcode == Opcode::Broadcast
        && inst.control_predecessors.is_empty()
        && inst.shape.is_array()
        && comp.get(inst.operands[0]).opcode == Opcode::Constant
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::pass::Pass;

    fn run(m: &mut Module) -> Result<bool> {
        WhileInitBroadcasts.run(m)
    }

    const LOOP: &str = r#"HloModule m
body {
  p = (s32[], f32[4,2], f32[4,2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  a = f32[4,2] get-tuple-element(p), index=1
  b = f32[4,2] get-tuple-element(p), index=2
  ROOT t = (s32[], f32[4,2], f32[4,2]) tuple(j, b, a)
}
cond {
  p = (s32[], f32[4,2], f32[4,2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  z = s32[] constant(0)
  c = f32[] constant(0)
  zeros = f32[4,2] broadcast(c), dimensions={}
  init = (s32[], f32[4,2], f32[4,2]) tuple(z, zeros, zeros)
  w = (s32[], f32[4,2], f32[4,2]) while(init), condition=cond, body=body
  ROOT r = f32[4,2] get-tuple-element(w), index=1
}
"#;

    #[test]
    fn each_state_element_gets_its_own_broadcast() {
        let (changed, m) = crate::passes::test_util::run_verified(LOOP, run);
        assert!(changed);
        let c = m.entry_computation();
        let init = c.ids().find(|&i| c.get(i).name == "init").unwrap();
        let ops = &c.get(init).operands;
        assert_eq!(c.get(ops[1]).name, "zeros");
        assert_eq!(c.get(ops[2]).name, "zeros.while_init1");
        assert_eq!(c.get(ops[2]).opcode, Opcode::Broadcast);
        // Nothing left to split: a second run changes nothing.
        let mut m = m;
        assert!(!run(&mut m).unwrap());
    }

    #[test]
    fn a_broadcast_of_a_parameter_is_shared_as_before() {
        let text = LOOP.replace("c = f32[] constant(0)", "c = f32[] parameter(0)");
        let (changed, _) = crate::passes::test_util::run_verified(&text, run);
        assert!(!changed);
    }
}
