//! Common subexpression elimination, as XLA's `HloCSE` does it: two instructions of one
//! computation with the same opcode, shape (layout included), operands, called computations and
//! attributes compute the same value, so the later one's uses move to the earlier one.
//!
//! Only instructions whose value is all they do may merge. Side-effecting instructions
//! (infeed, outfeed, send/recv, rng, custom calls with `custom_call_has_side_effect`) run once
//! each; collectives and anything with a `channel_id` are communication steps that pair up with
//! other devices' steps one for one, so two of them are two exchanges; parameters are distinct
//! inputs; instructions with control edges keep their ordering role. Constants merge when their
//! bytes are equal (so `-0.0` and `0.0`, or NaNs with different payloads, stay apart). Attributes
//! that only describe where an instruction came from (`metadata`, `statistics`, `original_value`)
//! do not keep two instructions apart.

use crate::error::Result;
use crate::hlo::computation::has_side_effect;
use crate::hlo::{Attributes, Computation, InstrId, Instruction, Module, Opcode};
use std::collections::HashMap;

/// Merges equal instructions in every computation; returns whether any merged.
pub fn run(module: &mut Module) -> Result<bool> {
    let mut changed = false;
    for comp in &mut module.computations {
        changed |= cse_computation(comp);
    }
    Ok(changed)
}

/// One pass in post order: each instruction's operands are already canonical when it is looked
/// at, so chains of equal instructions merge in a single walk.
pub(crate) fn cse_computation(comp: &mut Computation) -> bool {
    let mut canonical: HashMap<InstrId, InstrId> = HashMap::new();
    // (opcode, operands) -> instructions seen with that key; full equality is checked on a hit.
    let mut seen: HashMap<(Opcode, Vec<InstrId>), Vec<InstrId>> = HashMap::new();
    for id in comp.post_order() {
        let operands: Vec<InstrId> = comp.get(id).operands.iter().map(|o| *canonical.get(o).unwrap_or(o)).collect();
        comp.get_mut(id).operands.clone_from(&operands);
        if !mergeable(comp.get(id)) {
            continue;
        }
        let candidates = seen.entry((comp.get(id).opcode, operands)).or_default();
        match candidates.iter().find(|&&c| same_value(comp.get(c), comp.get(id))) {
            Some(&earlier) => {
                canonical.insert(id, earlier);
            }
            None => candidates.push(id),
        }
    }
    if canonical.is_empty() {
        return false;
    }
    for (&dup, &keep) in &canonical {
        comp.replace_all_uses(dup, keep);
    }
    comp.compact();
    true
}

/// Whether an instruction may be replaced by an equal one.
fn mergeable(inst: &Instruction) -> bool {
    !(inst.opcode == Opcode::Parameter
        || has_side_effect(inst)
        || inst.opcode.is_collective()
        || inst.attrs.channel_id.is_some()
        || !inst.control_predecessors.is_empty())
}

/// Whether two instructions with the same opcode and operands compute the same value.
fn same_value(a: &Instruction, b: &Instruction) -> bool {
    a.shape == b.shape && a.called == b.called && same_attributes(&a.attrs, &b.attrs)
}

/// Attribute equality ignoring those that only record provenance.
fn same_attributes(a: &Attributes, b: &Attributes) -> bool {
    let significant = |attrs: &Attributes| -> Attributes {
        let mut copy = attrs.clone();
        copy.other.retain(|r| !matches!(r.key.as_str(), "metadata" | "statistics" | "original_value"));
        copy
    };
    // Cheap first: most attribute sets have no provenance entries at all.
    a == b || significant(a) == significant(b)
}

/// Merges equal instructions.
pub struct Cse;

impl super::pass::Pass for Cse {
    fn name(&self) -> &'static str {
        "cse"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        run(module)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cse(text: &str) -> (bool, Module) {
        crate::passes::test_util::run_verified(text, run)
    }

    fn names(m: &Module) -> Vec<String> {
        m.entry_computation().instructions.iter().map(|i| i.name.clone()).collect()
    }

    #[test]
    fn equal_chains_merge_in_one_walk() {
        let text = "HloModule m
ENTRY e {
  x = f32[2] parameter(0)
  a = f32[2] exponential(x), metadata={op_name=\"a\"}
  b = f32[2] exponential(x), metadata={op_name=\"b\"}
  na = f32[2] negate(a)
  nb = f32[2] negate(b)
  ROOT s = f32[2] add(na, nb)
}
";
        let (changed, m) = cse(text);
        assert!(changed);
        assert_eq!(names(&m), ["x", "a", "na", "s"]);
        let root = m.entry_computation().root_instruction();
        assert_eq!(root.operands[0], root.operands[1]);
    }

    #[test]
    fn constants_merge_by_their_bytes() {
        let text = "HloModule m
ENTRY e {
  z = f32[] constant(0)
  nz = f32[] constant(-0)
  z2 = f32[] constant(0)
  ROOT t = (f32[], f32[], f32[]) tuple(z, nz, z2)
}
";
        let (changed, m) = cse(text);
        assert!(changed);
        assert_eq!(names(&m), ["z", "nz", "t"]);
    }

    #[test]
    fn effects_channels_and_different_attributes_stay_apart() {
        let text = "HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e {
  x = f32[2,2] parameter(0)
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  r1 = f32[2] rng(lo, hi), distribution=rng_uniform
  r2 = f32[2] rng(lo, hi), distribution=rng_uniform
  c1 = f32[2] custom-call(r1), custom_call_target=\"f\", custom_call_has_side_effect=true
  c2 = f32[2] custom-call(r1), custom_call_target=\"f\", custom_call_has_side_effect=true
  a1 = f32[2,2] all-reduce(x), channel_id=1, replica_groups={}, to_apply=add
  a2 = f32[2,2] all-reduce(x), channel_id=2, replica_groups={}, to_apply=add
  t1 = f32[2,2] transpose(x), dimensions={1,0}
  t2 = f32[2,2] transpose(x), dimensions={0,1}
  ROOT t = (f32[2], f32[2], f32[2], f32[2], f32[2,2], f32[2,2], f32[2,2], f32[2,2]) tuple(r1, r2, c1, c2, a1, a2, t1, t2)
}
";
        let (changed, m) = cse(text);
        assert!(!changed, "{:?}", names(&m));
    }

    #[test]
    fn pure_custom_calls_merge() {
        let text = "HloModule m
ENTRY e {
  x = f32[2] parameter(0)
  c1 = f32[2] custom-call(x), custom_call_target=\"f\"
  c2 = f32[2] custom-call(x), custom_call_target=\"f\"
  c3 = f32[2] custom-call(x), custom_call_target=\"g\"
  ROOT t = (f32[2], f32[2], f32[2]) tuple(c1, c2, c3)
}
";
        let (changed, m) = cse(text);
        assert!(changed);
        assert_eq!(names(&m), ["x", "c1", "c3", "t"]);
    }
}
