//! Sibling multi-output fusion, as XLA's multi-output fusion pass does it: two fusions that
//! read the same operand and run the same loop become one kernel with two outputs, so the
//! shared operand streams through memory once instead of twice (two reductions of one array,
//! a reduction and an elementwise output of its operand, the three updates of an optimizer
//! step that all read the gradient).
//!
//! XLA's rules, kept here: the shared operand must be worth sharing (not an effective scalar
//! or a broadcast of one: reading it twice costs nothing); the two fusions must have
//! compatible loops ([`LoopSpace::merge`]); neither may reach the other through other
//! instructions (the merged fusion would depend on itself); and the merged body stays under
//! the fusion size budget. Pairs are merged greedily, operands in post order, until none is
//! left.

use super::fusion::sequenced_computations;
use super::multi_output::{fused_size, loop_space, merge, reaches, LoopSpace, MAX_FUSED_INSTRUCTIONS};
use crate::error::Result;
use crate::hlo::{CompId, InstrId, Module, Opcode};

/// Merges sibling fusions in every computation that runs as a sequence of kernels.
pub fn run(module: &mut Module) -> Result<bool> {
    let mut changed = false;
    for c in sequenced_computations(module) {
        while let Some((a, b)) = find_pair(module, c) {
            merge(module, c, a, b, false)?;
            changed = true;
        }
    }
    Ok(changed)
}

/// An effective scalar (one element), or a broadcast of one, is no saving to read once.
fn worth_sharing(module: &Module, c: CompId, id: InstrId) -> bool {
    let comp = module.computation(c);
    let inst = comp.get(id);
    let scalar = |s: &hlojit_runtime::Shape| s.as_array().is_none_or(|a| a.element_count() <= 1);
    !(scalar(&inst.shape) || inst.opcode == Opcode::Broadcast && scalar(&comp.get(inst.operands[0]).shape))
}

/// The first pair of sibling fusions that may merge, by their shared operand's post order.
fn find_pair(module: &Module, c: CompId) -> Option<(InstrId, InstrId)> {
    let comp = module.computation(c);
    let users = comp.users();
    for operand in comp.post_order() {
        if !worth_sharing(module, c, operand) {
            continue;
        }
        let mut candidates: Vec<(InstrId, LoopSpace)> = Vec::new();
        for &u in &users[operand.index()] {
            if candidates.iter().any(|(x, _)| *x == u) {
                continue;
            }
            if let Some(space) = loop_space(module, c, u) {
                candidates.push((u, space));
            }
        }
        for (i, (a, sa)) in candidates.iter().enumerate() {
            for (b, sb) in &candidates[i + 1..] {
                let fits = fused_size(module, comp.get(*a)) + fused_size(module, comp.get(*b)) <= MAX_FUSED_INSTRUCTIONS;
                if fits && sa.merge(sb).is_some() && !reaches(&users, *a, *b, &[]) && !reaches(&users, *b, *a, &[]) {
                    return Some((*a, *b));
                }
            }
        }
    }
    None
}

/// Sibling multi-output fusion.
pub struct SiblingFusion;

impl super::pass::Pass for SiblingFusion {
    fn name(&self) -> &'static str {
        "sibling-fusion"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        run(module)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::test_util::run_verified;

    fn entry_opcodes(m: &Module) -> Vec<Opcode> {
        let e = m.entry_computation();
        e.post_order().into_iter().map(|id| e.get(id).opcode).collect()
    }

    fn fused(text: &str) -> Module {
        let mut m = crate::hlo::text::parse_module(text).unwrap();
        crate::passes::fusion::fuse(&mut m).unwrap();
        crate::hlo::text::parse_module(&crate::hlo::text::print_module(&m)).unwrap()
    }

    const ADD: &str = "add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }\n";

    #[test]
    fn two_row_reductions_of_one_operand_become_one_kernel() {
        let text = format!(
            "HloModule m\n{ADD}ENTRY e {{ x = f32[64,32] parameter(0)  z = f32[] constant(0)\n\
             s = f32[64] reduce(x, z), dimensions={{1}}, to_apply=add\n\
             xx = f32[64,32] multiply(x, x)\n\
             q = f32[64] reduce(xx, z), dimensions={{1}}, to_apply=add\n\
             ROOT t = (f32[64], f32[64]) tuple(s, q) }}\n"
        );
        let m = fused(&text);
        let (changed, m) = run_verified(&crate::hlo::text::print_module(&m), run);
        assert!(changed);
        let ops = entry_opcodes(&m);
        assert_eq!(ops.iter().filter(|&&o| o == Opcode::Fusion).count(), 1, "{ops:?}");
        let e = m.entry_computation();
        let f = e.ids().find(|&i| e.get(i).opcode == Opcode::Fusion).unwrap();
        // x is read through one parameter by both reductions.
        assert_eq!(e.get(f).operands.len(), 1);
        let body = m.computation(e.get(f).fused_computation().unwrap());
        assert_eq!(body.parameters().len(), 1);
        assert_eq!(body.root_instruction().opcode, Opcode::Tuple);
    }

    #[test]
    fn different_reduced_dimensions_stay_apart() {
        // A row sum and a column sum walk x differently: not one loop.
        let text = format!(
            "HloModule m\n{ADD}ENTRY e {{ x = f32[64,32] parameter(0)  z = f32[] constant(0)\n\
             a = f32[64] reduce(x, z), dimensions={{1}}, to_apply=add\n\
             b = f32[32] reduce(x, z), dimensions={{0}}, to_apply=add\n\
             ROOT t = (f32[64], f32[32]) tuple(a, b) }}\n"
        );
        let m = fused(&text);
        let (changed, _) = run_verified(&crate::hlo::text::print_module(&m), run);
        assert!(!changed);
    }

    #[test]
    fn a_fusion_that_reads_its_sibling_is_not_merged() {
        // n reads the sum through a broadcast: merging would make the fusion its own operand.
        let text = format!(
            "HloModule m\n{ADD}ENTRY e {{ x = f32[64,32] parameter(0)  z = f32[] constant(0)\n\
             s = f32[64] reduce(x, z), dimensions={{1}}, to_apply=add\n\
             sb = f32[64,32] broadcast(s), dimensions={{0}}\n\
             ROOT n = f32[64,32] divide(x, sb) }}\n"
        );
        let m = fused(&text);
        let (changed, _) = run_verified(&crate::hlo::text::print_module(&m), run);
        assert!(!changed);
    }

    #[test]
    fn elementwise_siblings_of_one_shape_share_their_reads_and_values() {
        // Both outputs compute m = 0.9*a + 0.1*g; the merged kernel computes it once.
        let text = "HloModule m\nENTRY e { a = f32[256] parameter(0)  g = f32[256] parameter(1)  p = f32[256] parameter(2)\n\
             c9 = f32[] constant(0.9)  c1 = f32[] constant(0.1)\n\
             b9 = f32[256] broadcast(c9), dimensions={}  b1 = f32[256] broadcast(c1), dimensions={}\n\
             x = f32[256] multiply(a, b9)  y = f32[256] multiply(g, b1)  m = f32[256] add(x, y)\n\
             q = f32[256] subtract(p, m)  e2 = f32[256] exponential(m)\n\
             ROOT t = (f32[256], f32[256], f32[256]) tuple(m, q, e2) }\n";
        let m = fused(text);
        let before = entry_opcodes(&m).iter().filter(|&&o| o == Opcode::Fusion).count();
        assert!(before >= 2, "{before}");
        let (changed, m) = run_verified(&crate::hlo::text::print_module(&m), run);
        assert!(changed);
        let e = m.entry_computation();
        let fusions: Vec<_> = e.ids().filter(|&i| e.get(i).opcode == Opcode::Fusion).collect();
        assert_eq!(fusions.len(), 1);
        let body = m.computation(e.get(fusions[0]).fused_computation().unwrap());
        let adds = body.ids().filter(|&i| body.get(i).opcode == Opcode::Add).count();
        assert_eq!(adds, 1, "{}", crate::hlo::text::print_module(&m));
    }

    #[test]
    fn a_shared_scalar_is_no_reason_to_merge() {
        let text = "HloModule m\nENTRY e { s = f32[] parameter(0)  a = f32[256] parameter(1)  b = f32[256] parameter(2)\n\
             sa = f32[256] broadcast(s), dimensions={}\n\
             x = f32[256] multiply(a, sa)  y = f32[256] add(b, sa)\n\
             ROOT t = (f32[256], f32[256]) tuple(x, y) }\n";
        let m = fused(text);
        let (changed, _) = run_verified(&crate::hlo::text::print_module(&m), run);
        assert!(!changed);
    }
}
