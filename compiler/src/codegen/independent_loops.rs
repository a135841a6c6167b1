//! Telling LLVM that the iterations of a loop kernel are independent.
//!
//! An elementwise kernel that writes its output over one of its inputs (a `while` state
//! updated in place, see `buffer_assignment`'s `reads_param_in_step`) reads that buffer only at
//! the element it writes. LLVM cannot know that the two buffer pointers, loaded from the
//! buffer table, are equal or disjoint: its vectorizer then emits a run-time overlap check,
//! which fails for identical pointers (distance 0 is less than a vector), and the whole loop
//! runs scalar — 10× slower for a `tanh` chain. Putting the kernel's buffer accesses in an
//! access group and marking the loops `llvm.loop.parallel_accesses` states what we know: no
//! iteration reads what another one writes.
//!
//! Only accesses to the kernel's buffers (pointers loaded from its buffer table) join the
//! group: stack slots that an element's computation reuses (reduction accumulators) are shared
//! by all iterations and must keep their ordinary dependences.

use super::context::Codegen;
use crate::error::{Error, Result};
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::values::{BasicValue, BasicValueEnum, FunctionValue, InstructionOpcode, InstructionValue, MetadataValue};

/// A distinct metadata node with no operands: what LLVM accepts as an access group. The C API
/// only builds uniqued nodes, so the node comes from parsing a one-line module in the same
/// context (metadata belongs to the context and outlives that module).
pub fn access_group<'ctx>(cg: &Codegen<'ctx>) -> Result<MetadataValue<'ctx>> {
    if let Some(group) = cg.access_group.get() {
        return Ok(group);
    }
    const NAMED: &str = "hlojit.access_group";
    let text = format!("!{NAMED} = !{{!0}}\n!0 = distinct !{{}}\n");
    let buffer = MemoryBuffer::create_from_memory_range_copy(text.as_bytes(), "access_group");
    let module = cg.llvm.create_module_from_ir(buffer).map_err(|e| Error::Llvm(format!("access group: {e}")))?;
    let group = module
        .get_global_metadata(NAMED)
        .into_iter()
        .next()
        .ok_or_else(|| Error::Internal("access group: node missing from its module".into()))?;
    cg.access_group.set(Some(group));
    Ok(group)
}

/// Puts every buffer access of `function` in the access group and marks the loops whose
/// back edges are `latches` as having independent iterations for those accesses.
pub fn declare_independent<'ctx>(cg: &Codegen<'ctx>, function: FunctionValue<'ctx>, latches: &[InstructionValue<'ctx>]) -> Result<()> {
    declare_independent_with(cg, function, latches, &[])
}

/// [`declare_independent`] with further loop options (`extra`) on the same loops: a loop
/// has one loop id, so every option must be attached at once.
pub fn declare_independent_with<'ctx>(
    cg: &Codegen<'ctx>,
    function: FunctionValue<'ctx>,
    latches: &[InstructionValue<'ctx>],
    extra: &[MetadataValue<'ctx>],
) -> Result<()> {
    if latches.is_empty() {
        return Ok(());
    }
    let group = access_group(cg)?;
    let group_kind = cg.llvm.get_kind_id("llvm.access.group");
    let Some(table) = function.get_nth_param(0) else { return Ok(()) };
    for block in function.get_basic_block_iter() {
        for inst in block.get_instructions() {
            let address = match inst.get_opcode() {
                InstructionOpcode::Load => inst.get_operand(0),
                InstructionOpcode::Store => inst.get_operand(1),
                _ => continue,
            };
            let Some(address) = address.and_then(|a| a.value()) else { continue };
            if inst.get_volatile().unwrap_or(true) || !addresses_buffer(address, table) {
                continue;
            }
            inst.set_metadata(group, group_kind).map_err(|e| Error::Llvm(format!("access group: {e}")))?;
        }
    }
    let parallel = cg.llvm.metadata_string("llvm.loop.parallel_accesses");
    let option = cg.llvm.metadata_node(&[parallel.into(), group.into()]);
    let options: Vec<MetadataValue<'ctx>> = std::iter::once(option).chain(extra.iter().copied()).collect();
    for &latch in latches {
        super::loops::set_loop_options(cg, latch, &options)?;
    }
    Ok(())
}

/// Whether `address` points into a buffer of the kernel's table: past address arithmetic, a
/// pointer loaded from the table (an element of the table, or the table itself).
fn addresses_buffer<'ctx>(address: BasicValueEnum<'ctx>, table: BasicValueEnum<'ctx>) -> bool {
    let base = strip_geps(address);
    let Some(load) = base.as_instruction_value().filter(|i| i.get_opcode() == InstructionOpcode::Load) else { return false };
    match load.get_operand(0).and_then(|o| o.value()) {
        Some(slot) => strip_geps(slot) == table,
        None => false,
    }
}

fn strip_geps(mut value: BasicValueEnum<'_>) -> BasicValueEnum<'_> {
    while let Some(gep) = value.as_instruction_value().filter(|i| i.get_opcode() == InstructionOpcode::GetElementPtr) {
        match gep.get_operand(0).and_then(|o| o.value()) {
            Some(base) => value = base,
            None => break,
        }
    }
    value
}
