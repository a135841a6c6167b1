//! Takes apart fusions of the input that are not one kernel here.
//!
//! Optimized HLO from XLA carries XLA's own fusion decisions: `kind=kLoop`, `kInput`,
//! `kOutput` and `kCustom` (XLA:CPU's `__ynn_fusion` puts a batched dot and the reduction after
//! it in one fusion). hlojit emits a fusion as one kernel: a hero at the root (an elementwise
//! loop, a reduction, a dot, ...) with everything before it computed per element. A fusion
//! shaped otherwise — a dot whose result a reduction or an epilogue then reads — is inlined
//! into its caller, and hlojit's own fusion pass fuses it again in the way it can emit.

use super::inline_calls::inline_called;
use crate::error::Result;
use crate::hlo::{CompId, Computation, InstrId, Module, Opcode};

/// Inlines every fusion that is not one kernel; returns whether there was any.
pub fn run(module: &mut Module) -> Result<bool> {
    let mut changed = false;
    let mut counter = 0usize;
    for c in module.comp_ids().collect::<Vec<_>>() {
        while let Some(fusion) = first_split_fusion(module, c) {
            counter += 1;
            inline_called(module, c, fusion, &format!("u{counter}"))?;
            module.computation_mut(c).compact();
            changed = true;
        }
    }
    Ok(changed)
}

fn first_split_fusion(module: &Module, c: CompId) -> Option<InstrId> {
    let comp = module.computation(c);
    comp.ids().find(|&id| comp.get(id).fused_computation().is_some_and(|f| !is_one_kernel(module.computation(f))))
}

/// Whether a fused computation is a hero at its root (for a tuple root: at most one operand
/// that is not elementwise) with only per-element computations before it.
pub fn is_one_kernel(fused: &Computation) -> bool {
    let root = fused.root_instruction();
    let outputs: Vec<InstrId> = if root.opcode == Opcode::Tuple { root.operands.clone() } else { vec![fused.root] };
    let heroes: Vec<InstrId> = outputs.iter().copied().filter(|&o| !fused.get(o).opcode.is_elemental()).collect();
    if heroes.len() > 1 {
        return false;
    }
    fused.ids().all(|id| id == fused.root || heroes.contains(&id) || generated_per_element(fused.get(id).opcode))
}

/// Ops the elemental generators compute at any index, so a kernel can fuse them anywhere.
fn generated_per_element(op: Opcode) -> bool {
    op.is_elemental() || matches!(op, Opcode::Reduce | Opcode::ReduceWindow | Opcode::Copy)
}


/// Takes apart the input's fusions that are not one kernel here.
pub struct Unfuse;

impl super::pass::Pass for Unfuse {
    fn name(&self) -> &'static str {
        "unfuse"
    }

    fn run(&self, module: &mut crate::hlo::Module) -> crate::error::Result<bool> {
        run(module)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hlo::text::parse_module;

    fn module(fused_body: &str, root_shape: &str) -> String {
        format!(
            "HloModule m
add {{ a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }}
fused_computation {{
  p0 = f32[2,3,4]{{2,1,0}} parameter(0)
  p1 = f32[4,5]{{1,0}} parameter(1)
{fused_body}
}}
ENTRY main {{
  a = f32[2,3,4]{{2,1,0}} parameter(0)
  b = f32[4,5]{{1,0}} parameter(1)
  ROOT f = {root_shape} fusion(a, b), kind=kCustom, calls=fused_computation
}}
"
        )
    }

    #[test]
    fn a_dot_followed_by_a_reduction_is_inlined() {
        let text = module(
            "  d = f32[2,3,5]{2,1,0} dot(p0, p1), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  z = f32[] constant(0)
  ROOT r = f32[3,5]{1,0} reduce(d, z), dimensions={0}, to_apply=add",
            "f32[3,5]{1,0}",
        );
        let mut m = parse_module(&text).unwrap();
        assert!(run(&mut m).unwrap());
        let entry = m.entry_computation();
        assert_eq!(entry.root_instruction().opcode, Opcode::Reduce);
        assert!(entry.instructions.iter().all(|i| i.opcode != Opcode::Fusion));
        crate::hlo::verify_module(&m).unwrap();
    }

    #[test]
    fn a_dot_at_the_root_with_fused_operands_stays() {
        let text = module(
            "  n = f32[2,3,4]{2,1,0} negate(p0)
  ROOT d = f32[2,3,5]{2,1,0} dot(n, p1), lhs_contracting_dims={2}, rhs_contracting_dims={0}",
            "f32[2,3,5]{2,1,0}",
        );
        let mut m = parse_module(&text).unwrap();
        assert!(!run(&mut m).unwrap());
    }
}
