//! Custom calls that are operations compiled here rather than calls of a target.

use crate::hlo::{Instruction, Opcode};

/// Whether `inst` is a `TopK` custom call (XLA:CPU's; compiled here, not called as a target).
pub fn is_topk_custom_call(inst: &Instruction) -> bool {
    inst.opcode == Opcode::CustomCall && inst.attrs.custom_call_target.as_deref() == Some("TopK")
}

/// Custom calls XLA introduces for ops compiled here rather than called as targets.
pub fn is_builtin_custom_call(inst: &Instruction) -> bool {
    is_topk_custom_call(inst)
}
