//! Custom calls that are operations compiled here rather than calls of a target.

use crate::hlo::{Instruction, Opcode};

/// Whether `inst` is a `TopK` custom call (XLA:CPU's; compiled here, not called as a target).
pub fn is_topk_custom_call(inst: &Instruction) -> bool {
    inst.opcode == Opcode::CustomCall && inst.attrs.custom_call_target.as_deref() == Some("TopK")
}

/// XLA's custom call for a buffer left uninitialized (a loop state whose initial value is
/// never read, see `passes::while_dead_init`): no operands, nothing to run.
pub const ALLOCATE_BUFFER: &str = "AllocateBuffer";

/// Whether `inst` is an `AllocateBuffer` custom call.
pub fn is_allocate_buffer(inst: &Instruction) -> bool {
    inst.opcode == Opcode::CustomCall
        && inst.attrs.custom_call_target.as_deref() == Some(ALLOCATE_BUFFER)
        && inst.operands.is_empty()
        && inst.shape.is_array()
}

/// Custom calls XLA introduces for ops compiled here rather than called as targets.
pub fn is_builtin_custom_call(inst: &Instruction) -> bool {
    is_topk_custom_call(inst) || is_allocate_buffer(inst)
}
