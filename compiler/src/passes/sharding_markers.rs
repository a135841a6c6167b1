//! Removes the custom calls that only annotate how a value is sharded across partitions.
//!
//! JAX emits them for `with_sharding_constraint`, a sharded `device_put` and `shard_map`
//! even on one device: `Sharding` (GSPMD), `SPMDFullToShardShape` / `SPMDShardToFullShape`
//! (manual regions) and Shardy's `xla.sdy.*` markers. XLA's SPMD partitioner consumes them; on
//! one partition every shard is the whole array, so each marker is its operand, which is what
//! XLA:CPU computes. The same holds on several partitions when every value is replicated
//! (JAX's pjit with replicated in and out shardings) or manual (already per device): XLA's
//! SPMD partitioner then leaves each partition the program as written. Partitioning a program whose values are split across
//! partitions is a different job (the markers then change shapes, parameters arrive in parts);
//! such a program gets an error here rather than wrong results.

use crate::error::{Error, Result};
use crate::hlo::{InstrId, Module, Opcode};

/// Whether a custom-call target is a sharding annotation rather than a computation.
pub fn is_sharding_marker(target: &str) -> bool {
    matches!(target, "Sharding" | "SPMDFullToShardShape" | "SPMDShardToFullShape") || target.starts_with("xla.sdy.")
}

/// Whether an HLO `sharding` attribute leaves each partition's value as the program writes
/// it: `{replicated}` (the whole value everywhere) or `{manual}` (already per device, as in
/// the partitioned pmap modules of the conformance corpus), per leaf of a tuple
/// (`{{replicated}, {manual}}`).
fn is_unsplit(sharding: &str) -> bool {
    let leaves = sharding.trim().trim_start_matches('{').trim_end_matches('}');
    leaves.split(',').all(|leaf| matches!(leaf.trim().trim_matches(|c| c == '{' || c == '}').trim(), "replicated" | "manual"))
}

/// Whether Shardy's annotations in `frontend_attributes` split or place a value: a sharding
/// over named mesh axes (quoted, `{\"x\"}`), unreduced or manual axes (also named), or a
/// maximal mesh (one device).
fn sdy_splits(frontend_attributes: &str) -> bool {
    frontend_attributes.contains("xla.sdy.") && (frontend_attributes.contains("\\\"") || frontend_attributes.contains("@maximal_mesh"))
}

/// The first instruction whose value is split over the partitions (or placed on one), with
/// its annotation.
fn split_value(module: &Module) -> Option<String> {
    module.comp_ids().find_map(|c| {
        module.computation(c).instructions.iter().find_map(|inst| {
            let sharding = inst.attrs.raw("sharding").filter(|s| !is_unsplit(s));
            let sdy = inst.attrs.raw("frontend_attributes").filter(|f| sdy_splits(f));
            sharding.or(sdy).map(|why| format!("{} ({why})", inst.name))
        })
    })
}

/// Replaces every sharding marker by its operand; returns whether any was removed.
///
/// # Errors
/// A module for several partitions in which a value is split or placed (it would need
/// partitioning), or a marker whose result is not its operand's shape, names the instruction.
pub fn run(module: &mut Module) -> Result<bool> {
    let partitions = module.header_attribute("num_partitions").and_then(|v| v.trim().parse::<i64>().ok()).unwrap_or(1);
    // A module XLA has scheduled went through its whole pipeline, SPMD partitioning included:
    // its shapes are per device already, and the annotations it keeps on parameters only say
    // how those parts make up the global arrays.
    let partitioned = module.header_attribute("is_scheduled").is_some_and(|v| v.trim() == "true");
    if partitions > 1 && !partitioned {
        if let Some(split) = split_value(module) {
            return Err(Error::Unsupported(format!(
                "{split}: partitioning a program whose values are split across its {partitions} partitions (SPMD) is not supported; programs whose values are all replicated, or that are already per-device (shard_map, pmap) without sharding annotations, run"
            )));
        }
    }
    let mut changed = false;
    for c in module.comp_ids().collect::<Vec<_>>() {
        let comp = module.computation(c);
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
            comp.replace_all_uses(marker, operand);
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
    fn replicated_values_on_several_partitions_drop_their_markers() {
        let text = CONSTRAINED
            .replace("HloModule m,", "HloModule m, num_partitions=2,")
            .replace("parameter(0)", "parameter(0), sharding={replicated}");
        let mut m = parse_module(&text).unwrap();
        assert!(run(&mut m).unwrap());
        assert!(m.entry_computation().instructions.iter().all(|i| i.opcode != Opcode::CustomCall));
    }

    #[test]
    fn split_values_on_several_partitions_are_refused_by_name() {
        let text = CONSTRAINED.replace("HloModule m,", "HloModule m, num_partitions=2,");
        let split = text.replace("parameter(0)", "parameter(0), sharding={devices=[2]<=[2]}");
        let e = run(&mut parse_module(&split).unwrap()).unwrap_err().to_string();
        assert!(e.contains("x ({devices=[2]<=[2]})") && e.contains("2 partitions"), "{e}");
        let shardy = text.replace(
            "parameter(0)",
            r##"parameter(0), frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{\"x\"}]>"}"##,
        );
        assert!(run(&mut parse_module(&shardy).unwrap()).unwrap_err().to_string().contains("x ({xla.sdy.sharding"));
        let tuple = text.replace("sharding={replicated}", "sharding={{replicated}, {maximal device=0}}");
        assert!(run(&mut parse_module(&tuple).unwrap()).is_err());
    }

    #[test]
    fn a_module_xla_partitioned_runs_as_written() {
        let text = "HloModule m, is_scheduled=true, num_partitions=2
ENTRY main {
  x = f32[2]{0} parameter(0), sharding={devices=[2]<=[2]}
  ROOT y = f32[2]{0} negate(x)
}
";
        let mut m = parse_module(text).unwrap();
        assert!(!run(&mut m).unwrap());
        assert!(run(&mut parse_module(&text.replace("is_scheduled=true, ", "")).unwrap()).is_err());
    }

    #[test]
    fn unsplit_annotations() {
        assert!(is_unsplit("{replicated}") && is_unsplit("{{replicated}, {replicated}}") && is_unsplit("{manual}"));
        assert!(!is_unsplit("{maximal device=0}") && !is_unsplit("{unreduced}") && !is_unsplit("{devices=[2,1]0,1}"));
        assert!(!sdy_splits(r##"{xla.sdy.sharding="#sdy.sharding<@mesh, [{}, {}]>"}"##));
        assert!(sdy_splits(r##"{xla.sdy.manual_axes="#sdy<manual_axes{\"x\"}>"}"##));
    }

    #[test]
    fn other_custom_calls_stay() {
        assert!(!is_sharding_marker("lapack_spotrf_ffi"));
        assert!(is_sharding_marker("SPMDFullToShardShape") && is_sharding_marker("xla.sdy.GlobalToLocalShape"));
    }
}
