//! Small `while` loop state in stack slots of the loop, so that LLVM can keep it in registers.
//!
//! The body updates the loop state in place. In the while's own buffers (memory the caller
//! owns: an output, an arena slot) the state cannot be promoted to registers: the runtime call
//! that polls for interrupts, any call the body makes, may read or write such memory, so every
//! iteration stores the state and loads it back. A stack slot whose address never escapes the
//! function (the body and condition are inlined) is promotable: LLVM's SROA turns it into SSA
//! values carried across iterations, once the kernels that touch it are straight-line code
//! (`small_loops`). Small leaves (a counter, an f32[16] estimate) are copied into such slots
//! before the loop and to their buffers after it; large leaves (a scan's output stack) stay in
//! their buffers, where promotion could not help and the stack would not hold them.

use super::array::IrArray;
use super::context::Codegen;
use crate::error::{Error, Result};
use hlojit_runtime::ArrayShape;
use inkwell::values::PointerValue;

/// A leaf of at most this many bytes gets a stack slot: a few vector registers' worth.
pub const MAX_LEAF_BYTES: i64 = 256;

/// At most this many bytes of a loop's state move to the stack (the slots of nested loops add
/// up in one frame).
pub const MAX_STATE_BYTES: i64 = 1024;

/// Where each leaf of a while's state lives during the loop: a fresh 64-byte aligned stack slot
/// for small leaves (while the budget lasts), the leaf's buffer otherwise.
pub fn state_slots<'ctx>(cg: &Codegen<'ctx>, buffers: &[PointerValue<'ctx>], shapes: &[ArrayShape]) -> Result<Vec<PointerValue<'ctx>>> {
    let mut budget = MAX_STATE_BYTES;
    let mut slots = Vec::with_capacity(buffers.len());
    for (&buffer, shape) in buffers.iter().zip(shapes) {
        let bytes = IrArray::new(buffer, shape)?.byte_size();
        if bytes <= 0 || bytes > MAX_LEAF_BYTES || bytes > budget {
            slots.push(buffer);
            continue;
        }
        budget -= bytes;
        let slot = cg.entry_alloca(cg.i8().array_type(bytes as u32).into(), "while.state")?;
        slot.as_instruction()
            .ok_or_else(|| Error::Internal("an alloca is an instruction".into()))?
            .set_alignment(64)
            .map_err(|e| Error::Llvm(e.to_string()))?;
        slots.push(slot);
    }
    Ok(slots)
}
