//! Removes the custom calls that only annotate how a value is sharded across partitions.
//!
//! JAX emits them for `with_sharding_constraint`, a sharded `device_put` and `shard_map`
//! even on one device: `Sharding` (GSPMD), `SPMDFullToShardShape` / `SPMDShardToFullShape`
//! (manual regions) and Shardy's `xla.sdy.*` markers. XLA's SPMD partitioner consumes them; on
//! one partition every shard is the whole array, so each marker is its operand, which is what
//! XLA:CPU computes. On several partitions `spmd_whole_arrays` runs first: it makes every
//! value outside manual regions whole on each partition and replaces the markers that change
//! shapes (manual-region boundaries), so the `Sharding` markers left are identities here too.

use crate::error::{Error, Result};
use crate::hlo::{InstrId, Module, Opcode};
use hlojit_runtime::Shape;

/// Whether a custom-call target is a sharding annotation rather than a computation.
pub fn is_sharding_marker(target: &str) -> bool {
    matches!(target, "Sharding" | "SPMDFullToShardShape" | "SPMDShardToFullShape") || target.starts_with("xla.sdy.")
}

/// Shardy's `shard_alike` marker: asks for one sharding for a group of values and has no
/// value itself (its result is `()`, unused).
const SHARDING_GROUP: &str = "xla.sdy.ShardingGroup";

/// Replaces every sharding marker by its operand (and drops `shard_alike`'s group markers,
/// which have no value); returns whether any was removed.
///
/// # Errors
/// A marker whose result is not its operand's shape names the instruction.
pub fn run(module: &mut Module) -> Result<bool> {
    let mut changed = false;
    for c in module.comp_ids().collect::<Vec<_>>() {
        let comp = module.computation(c);
        let users = comp.users();
        let markers: Vec<InstrId> = comp
            .ids()
            .filter(|&id| {
                let inst = comp.get(id);
                inst.opcode == Opcode::CustomCall && inst.attrs.custom_call_target.as_deref().is_some_and(is_sharding_marker)
            })
            .map(|id| {
                let inst = comp.get(id);
                let target = inst.attrs.custom_call_target.as_deref().unwrap_or_default();
                let refuse = |why: String| Error::Unsupported(format!("{} (custom-call target \"{target}\"): {why}", inst.name));
                match inst.operands.as_slice() {
                    [_] if target == SHARDING_GROUP && inst.shape == Shape::Tuple(Vec::new()) && users[id.index()].is_empty() => Ok(id),
                    [operand] if comp.get(*operand).shape.compatible(&inst.shape) => Ok(id),
                    [operand] => Err(refuse(format!(
                        "with every value whole on each partition the marker is an identity, but it changes the shape {} to {}",
                        comp.get(*operand).shape,
                        inst.shape
                    ))),
                    operands => Err(refuse(format!("a sharding marker takes one operand, not {}", operands.len()))),
                }
            })
            .collect::<Result<_>>()?;
        let comp = module.computation_mut(c);
        for &marker in &markers {
            // Read the operand now: it may itself have been a marker, replaced just before.
            let operand = comp.get(marker).operands[0];
            if comp.get(marker).attrs.custom_call_target.as_deref() != Some(SHARDING_GROUP) {
                comp.replace_all_uses(marker, operand);
            }
            // Markers may be flagged side-effecting to keep them alive for the partitioner;
            // on one partition nothing needs them.
            comp.get_mut(marker).attrs.custom_call_has_side_effect = false;
        }
        if !markers.is_empty() {
            comp.compact();
            changed = true;
        }
    }
    Ok(changed)
}


/// Removes sharding annotations on one partition.
pub struct ShardingMarkers;

impl super::pass::Pass for ShardingMarkers {
    fn name(&self) -> &'static str {
        "sharding-markers"
    }

    fn run(&self, module: &mut crate::hlo::Module) -> crate::error::Result<bool> {
        run(module)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hlo::text::parse_module;

    const CONSTRAINED: &str = r#"HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}
ENTRY main {
  x = f32[4]{0} parameter(0)
  c = f32[4]{0} custom-call(x), custom_call_target="Sharding", sharding={replicated}
  s = f32[4]{0} custom-call(c), custom_call_target="xla.sdy.FuncResultSharding", custom_call_has_side_effect=true
  ROOT y = f32[4]{0} negate(s)
}
"#;

    #[test]
    fn markers_become_their_operands_on_one_partition() {
        let mut m = parse_module(CONSTRAINED).unwrap();
        assert!(run(&mut m).unwrap());
        let entry = m.entry_computation();
        assert!(entry.instructions.iter().all(|i| i.opcode != Opcode::CustomCall));
        assert_eq!(entry.get(entry.root_instruction().operands[0]).opcode, Opcode::Parameter);
        assert!(!run(&mut m).unwrap());
    }

    #[test]
    fn sharding_groups_are_dropped() {
        let text = r#"HloModule m, entry_computation_layout={(f32[])->f32[8]{0}}
ENTRY main {
  x = f32[] parameter(0)
  ROOT b = f32[8]{0} broadcast(x), dimensions={}
  g = () custom-call(b), custom_call_target="xla.sdy.ShardingGroup", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.sharding_group_id="7 : i64"}
}
"#;
        let mut m = parse_module(text).unwrap();
        assert!(run(&mut m).unwrap());
        assert!(m.entry_computation().instructions.iter().all(|i| i.opcode != Opcode::CustomCall));
    }

    #[test]
    fn other_custom_calls_stay() {
        assert!(!is_sharding_marker("lapack_spotrf_ffi"));
        assert!(is_sharding_marker("SPMDFullToShardShape") && is_sharding_marker("xla.sdy.GlobalToLocalShape"));
    }
}
