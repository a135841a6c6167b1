//! What the rewrite builds; the values it computes are checked against XLA by the file tests
//! `tests/filetests/jax_suite/*_partitions.hlo`.

use super::*;
use crate::hlo::text::parse_module;
use crate::hlo::verify_module;

fn rewritten(text: &str) -> Module {
    let mut m = parse_module(text).unwrap();
    assert!(run(&mut m).unwrap());
    verify_module(&m).unwrap();
    m
}

fn count(m: &Module, opcode: Opcode) -> usize {
    m.entry_computation().instructions.iter().filter(|i| i.opcode == opcode).count()
}

const TILED: &str = "HloModule m, num_partitions=4, entry_computation_layout={(f32[5,6]{1,0})->f32[5,6]{1,0}}
ENTRY main {
  x = f32[5,6]{1,0} parameter(0), sharding={devices=[2,2]<=[2,2]T(1,0)}
  ROOT y = f32[5,6]{1,0} negate(x), sharding={devices=[1,4]<=[4]}
}
";

#[test]
fn split_parameters_are_gathered_and_results_cut() {
    let m = rewritten(TILED);
    let entry = m.entry_computation();
    // Uneven rows: tiles of 3, the gathered 6 sliced back to 5.
    assert_eq!(entry.parameter_shapes()[0].to_string(), "f32[3,3]{1,0}");
    assert_eq!(m.entry_layout.as_ref().unwrap().parameters[0].to_string(), "f32[3,3]{1,0}");
    let gather = entry.instructions.iter().find(|i| i.opcode == Opcode::AllGather).unwrap();
    assert_eq!(gather.attrs.replica_groups, Some(vec![vec![0, 2, 1, 3]]));
    assert!(gather.attrs.use_global_device_ids && gather.attrs.channel_id.is_some());
    assert_eq!(count(&m, Opcode::Slice), 1);
    // The result: columns of 6 cut in 4 tiles of 2 (padded to 8), by partition-id.
    assert_eq!(entry.result_shape().to_string(), "f32[5,2]");
    assert_eq!(m.entry_layout.as_ref().unwrap().result.to_string(), "f32[5,2]{1,0}");
    assert_eq!((count(&m, Opcode::Pad), count(&m, Opcode::PartitionId)), (1, 1));
    assert!(!run(&mut m.clone()).unwrap(), "a second run finds nothing split");
}

#[test]
fn replicated_subgroups_gather_within_each_group() {
    let m = rewritten(
        "HloModule m, num_partitions=4, replica_count=2
ENTRY main {
  x = s32[2,3]{1,0} parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  ROOT y = s32[4,3]{1,0} concatenate(x, x), dimensions={0}
}
",
    );
    let gather = m.entry_computation().instructions.iter().find(|i| i.opcode == Opcode::AllGather).unwrap();
    // Global device ids: replica r's partition p is r * 4 + p.
    assert_eq!(gather.attrs.replica_groups, Some(vec![vec![0, 2], vec![1, 3], vec![4, 6], vec![5, 7]]));
    assert_eq!(m.entry_computation().parameter_shapes()[0].to_string(), "s32[1,3]{1,0}");
}

#[test]
fn manual_region_boundaries_become_slices_and_gathers() {
    let m = rewritten(
        r##"HloModule m, num_partitions=2, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=2]>}}
ENTRY main {
  x = f32[4]{0} parameter(0), sharding={replicated}
  l = f32[2]{0} custom-call(x), custom_call_target="xla.sdy.GlobalToLocalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"x\"}>"}
  n = f32[2]{0} negate(l)
  ROOT g = f32[4]{0} custom-call(n), custom_call_target="xla.sdy.LocalToGlobalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.manual_axes="#sdy<manual_axes{\"x\"}>",xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"}]>]>"}
}
"##,
    );
    assert!(m.entry_computation().instructions.iter().all(|i| i.opcode != Opcode::CustomCall));
    assert_eq!((count(&m, Opcode::DynamicSlice) > 0, count(&m, Opcode::AllGather)), (true, 1));
    assert_eq!(m.entry_computation().result_shape().to_string(), "f32[4]");
}

#[test]
fn one_partition_and_scheduled_modules_are_left_alone() {
    let one = TILED.replace("num_partitions=4, ", "");
    assert!(!run(&mut parse_module(&one).unwrap()).unwrap());
    let scheduled = TILED.replace("HloModule m,", "HloModule m, is_scheduled=true,");
    assert!(!run(&mut parse_module(&scheduled).unwrap()).unwrap());
}

#[test]
fn what_does_not_run_is_refused_by_name() {
    let refused = |text: &str| run(&mut parse_module(text).unwrap()).unwrap_err().to_string();
    let e = refused(&TILED.replace("sharding={devices=[1,4]<=[4]}", "sharding={unreduced}"));
    assert!(e.contains("y: ") && e.contains("unreduced"), "{e}");
    let e = refused(&TILED.replace("HloModule m,", "HloModule m, allow_spmd_sharding_propagation_to_output={true},"));
    assert!(e.contains("sharding propagation"), "{e}");
    let e = refused(&TILED.replace("<=[2,2]T(1,0)", "<=[2,2]T(1,1)"));
    assert!(e.contains("x: bad iota"), "{e}");
    let e = refused(&TILED.replace("{devices=[1,4]<=[4]}", "{devices=[1,2]<=[2]}"));
    assert!(e.contains("spans 2 partitions, the module has 4"), "{e}");
    let sdy = r##"HloModule m, num_partitions=2
ENTRY main {
  x = f32[4]{0} parameter(0), frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{\"x\"}]>"}
  ROOT y = f32[4]{0} negate(x)
}
"##;
    assert!(refused(sdy).contains("x: its sharding names mesh @mesh, which the module does not define"));
}
