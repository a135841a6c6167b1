//! Dead code elimination, as XLA's `HloDCE` does it: instructions whose values nothing needs,
//! and computations no instruction calls.
//!
//! An instruction is live when the root depends on it (through operands or control edges), when
//! it is a parameter (a computation's signature never changes here), or when it has a side
//! effect ([`crate::hlo::computation::has_side_effect`]: infeed, outfeed, send/recv, rng, custom
//! calls marked `custom_call_has_side_effect`). Everything else goes. A computation is live when
//! the entry reaches it through the instructions' `called` lists; the others are removed and the
//! remaining ones renumbered. Dead elements of while-loop state are `while_dead_state`'s job.

use crate::error::Result;
use crate::hlo::computation::has_side_effect;
use crate::hlo::{CompId, Computation, Module, Opcode};

/// Removes dead instructions from every computation and computations nothing calls; returns
/// whether anything was removed.
pub fn run(module: &mut Module) -> Result<bool> {
    let mut changed = remove_unreachable_computations(module);
    for comp in &mut module.computations {
        if has_dead_instruction(comp) {
            comp.compact();
            changed = true;
        }
    }
    Ok(changed)
}

/// Whether `compact` would remove anything. A dead instruction's users are all dead too, so
/// following users from one (the graph has no cycles) reaches a dead instruction nothing uses:
/// it is enough to look for an unused instruction that is not kept for its own sake. Checking
/// first keeps computations without dead code in their order (`compact` renumbers).
fn has_dead_instruction(comp: &Computation) -> bool {
    let mut used = vec![false; comp.instructions.len()];
    used[comp.root.index()] = true;
    for inst in &comp.instructions {
        for op in inst.operands.iter().chain(&inst.control_predecessors) {
            used[op.index()] = true;
        }
    }
    comp.ids().any(|id| {
        let inst = comp.get(id);
        !used[id.index()] && inst.opcode != Opcode::Parameter && !has_side_effect(inst)
    })
}

/// Drops computations the entry does not reach and renumbers the rest (in their old order, so
/// the printed module keeps its order); returns whether any was dropped.
fn remove_unreachable_computations(module: &mut Module) -> bool {
    let mut live = vec![false; module.computations.len()];
    for c in module.computation_post_order() {
        live[c.index()] = true;
    }
    if live.iter().all(|&l| l) {
        return false;
    }
    let mut new_id = vec![None; live.len()];
    let mut next = 0u32;
    for (old, &l) in live.iter().enumerate() {
        if l {
            new_id[old] = Some(CompId(next));
            next += 1;
        }
    }
    let old = std::mem::take(&mut module.computations);
    module.computations = old.into_iter().zip(&live).filter(|(_, &l)| l).map(|(c, _)| c).collect();
    for comp in &mut module.computations {
        for inst in &mut comp.instructions {
            for callee in &mut inst.called {
                *callee = new_id[callee.index()].expect("a live computation calls only live ones");
            }
        }
    }
    module.entry = new_id[module.entry.index()].expect("the entry is live");
    true
}

/// Removes dead instructions and unused computations.
pub struct Dce;

impl super::pass::Pass for Dce {
    fn name(&self) -> &'static str {
        "dce"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        run(module)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hlo::text::print_module;

    fn dce(text: &str) -> (bool, Module) {
        crate::passes::test_util::run_verified(text, run)
    }

    #[test]
    fn dead_chains_go_side_effects_and_parameters_stay() {
        let text = "HloModule m
ENTRY e {
  x = f32[2] parameter(0)
  unused = f32[2] parameter(1)
  a = f32[2] exponential(x)
  b = f32[2] negate(a)
  t = token[] after-all()
  o = token[] outfeed(x, t), outfeed_shape=f32[2]
  c = f32[2] custom-call(x), custom_call_target=\"log\", custom_call_has_side_effect=true
  d = f32[2] custom-call(x), custom_call_target=\"pure\"
  ROOT y = f32[2] abs(x)
}
";
        let (changed, m) = dce(text);
        assert!(changed);
        let names: Vec<&str> = m.entry_computation().instructions.iter().map(|i| i.name.as_str()).collect();
        for kept in ["x", "unused", "t", "o", "c", "y"] {
            assert!(names.contains(&kept), "{kept} missing from {names:?}");
        }
        for gone in ["a", "b", "d"] {
            assert!(!names.contains(&gone), "{gone} still in {names:?}");
        }
    }

    #[test]
    fn control_predecessors_keep_an_instruction_alive() {
        let text = "HloModule m
ENTRY e {
  x = f32[2] parameter(0)
  a = f32[2] exponential(x)
  ROOT y = f32[2] abs(x), control-predecessors={a}
}
";
        let (changed, m) = dce(text);
        assert!(!changed);
        assert_eq!(m.entry_computation().instructions.len(), 3);
    }

    #[test]
    fn uncalled_computations_go_and_calls_are_renumbered() {
        let text = "HloModule m
unused_add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
max { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] maximum(a, b) }
ENTRY e {
  x = f32[4] parameter(0)
  i = f32[] constant(-inf)
  ROOT r = f32[] reduce(x, i), dimensions={0}, to_apply=max
}
";
        let (changed, m) = dce(text);
        assert!(changed);
        assert_eq!(m.computations.len(), 2);
        assert!(m.find_computation("unused_add").is_none());
        let printed = print_module(&m);
        assert!(printed.contains("to_apply=%max"), "{printed}");
        assert!(!dce(&printed).0, "a second run finds nothing");
    }
}
