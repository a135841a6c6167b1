//! hlojit's HLO IR as XLA's `HloModuleProtoWithConfig`, the `hlo_with_config` program format.
//!
//! jaxlib reads `PJRT_Executable_OptimizedProgram` only as that proto (or MLIR): it rebuilds
//! an `xla::HloModule` from it for `compiled.as_text()`, and its default output-sharding and
//! layout queries look at it too. So the optimized program is written here from hlojit's
//! IR: every computation reachable from the entry (callees first, as XLA requires), each
//! instruction with the fields XLA's `CreateFromProto` reads for its opcode, and a config
//! whose entry layout matches the entry computation (XLA checks that).

mod instruction;
pub mod messages;
mod raw;
mod shape;

use hlojit::hlo::{AliasKind, Module, Opcode};
use messages::*;
use prost::Message;
use std::collections::HashSet;

pub use instruction::instruction_id;

/// The serialized `HloModuleProtoWithConfig` of `module` for `replicas` x `partitions` devices.
pub fn module_with_config(module: &Module, replicas: usize, partitions: usize) -> Vec<u8> {
    let hlo = module_proto(module);
    let config = HloModuleConfigProto {
        entry_computation_layout: hlo.host_program_shape.clone(),
        replica_count: replicas.max(1) as i64,
        num_partitions: partitions.max(1) as i64,
    };
    HloModuleProtoWithConfig { hlo_module: Some(hlo), config: Some(config) }.encode_to_vec()
}

/// The `HloModuleProto` alone (what `xla_client`'s `HloModule.from_serialized_hlo_module_proto`
/// reads; the tests use it).
pub fn module_proto(module: &Module) -> HloModuleProto {
    let order = module.computation_post_order();
    let fused: Vec<bool> = fusion_computations(module);
    let mut names = HashSet::new();
    let computations: Vec<HloComputationProto> =
        order.iter().map(|&c| computation(module, c.index(), fused[c.index()], &mut names)).collect();
    let entry = module.entry_computation();
    let host_program_shape = entry_program_shape(module);
    HloModuleProto {
        name: module.name.clone(),
        entry_computation_name: entry.name.clone(),
        entry_computation_id: module.entry.index() as i64,
        computations,
        host_program_shape: Some(host_program_shape),
        id: 0,
        input_output_alias: Some(HloInputOutputAliasProto {
            entries: module
                .input_output_alias
                .iter()
                .map(|e| AliasEntryProto {
                    output_shape_index: e.output_index.clone(),
                    parameter_number: e.parameter,
                    parameter_shape_index: e.parameter_index.clone(),
                    kind: match e.kind {
                        AliasKind::MayAlias => 1,
                        AliasKind::MustAlias => 2,
                    },
                })
                .collect(),
        }),
    }
}

/// Which computations are fusion bodies (XLA marks them, and keeps them out of the list of
/// computations it prints at the top level).
fn fusion_computations(module: &Module) -> Vec<bool> {
    let mut fused = vec![false; module.computations.len()];
    for comp in &module.computations {
        for inst in &comp.instructions {
            if inst.opcode == Opcode::Fusion {
                if let Some(c) = inst.fused_computation() {
                    fused[c.index()] = true;
                }
            }
        }
    }
    fused
}

/// A name not in `used` (and now in it): `name` itself, else `name.1`, `name.2`, ...
/// hlojit names instructions uniquely per computation (fusion bodies reuse `param_0`),
/// XLA requires names unique in the module.
fn unique_name(name: &str, used: &mut HashSet<String>) -> String {
    let mut candidate = name.to_string();
    let mut n = 0;
    while used.contains(&candidate) {
        n += 1;
        candidate = format!("{name}.{n}");
    }
    used.insert(candidate.clone());
    candidate
}

fn computation(module: &Module, id: usize, is_fusion: bool, names: &mut HashSet<String>) -> HloComputationProto {
    let comp = &module.computations[id];
    let instructions: Vec<HloInstructionProto> = comp
        .post_order()
        .into_iter()
        .map(|i| {
            let inst = comp.get(i);
            let operand_shapes: Vec<hlojit::Shape> = inst.operands.iter().map(|&o| comp.get(o).shape.clone()).collect();
            let mut p = instruction::instruction(inst, id, i.index(), &operand_shapes);
            p.name = unique_name(&inst.name, names);
            p
        })
        .collect();
    let name_of = |i: hlojit::hlo::InstrId| {
        let wanted = instruction_id(id, i.index());
        instructions.iter().find(|p| p.id == wanted).map_or_else(|| comp.get(i).name.clone(), |p| p.name.clone())
    };
    let params = comp.parameters();
    let parameter_names: Vec<String> = params.iter().map(|&p| name_of(p)).collect();
    HloComputationProto {
        name: comp.name.clone(),
        instructions,
        program_shape: Some(ProgramShapeProto {
            parameters: params.iter().map(|&p| shape::shape(&comp.get(p).shape)).collect(),
            result: Some(shape::shape(comp.result_shape())),
            parameter_names,
        }),
        id: id as i64,
        root_id: instruction_id(id, comp.root.index()),
        is_fusion_computation: is_fusion,
    }
}

/// The entry's signature at the module boundary: `entry_computation_layout` when the module
/// has one, else the entry computation's own shapes.
fn entry_program_shape(module: &Module) -> ProgramShapeProto {
    let entry = module.entry_computation();
    let params = entry.parameters();
    let names: Vec<String> = params.iter().map(|&p| entry.get(p).name.clone()).collect();
    match &module.entry_layout {
        Some(layout) if layout.parameters.len() == params.len() => ProgramShapeProto {
            parameters: layout.parameters.iter().map(shape::shape).collect(),
            result: Some(shape::shape(&layout.result)),
            parameter_names: names,
        },
        _ => ProgramShapeProto {
            parameters: params.iter().map(|&p| shape::shape(&entry.get(p).shape)).collect(),
            result: Some(shape::shape(entry.result_shape())),
            parameter_names: names,
        },
    }
}
