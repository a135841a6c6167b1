//! Which kernels are emitted into the module of the code that calls them (the sequencing
//! module) instead of a parallel-compiled partition: the kernels of small loop bodies and
//! conditions. There they are internal functions called once each, which LLVM inlines into
//! the loop.
//!
//! Why: a loop whose body is a handful of tiny kernels (rnn_scan's step: a 1x32 and a 1x64
//! dot, a tanh of 64 elements, a dynamic-update-slice, the counter) spends a good part of each
//! step on the calls themselves: every kernel reloads its buffer pointers from the table,
//! stores its result to memory for the next one, and the calls bound what the out-of-order
//! core can overlap across kernels. Inlined, LLVM keeps the state in registers across the
//! step (the while state slots of `while_registers.rs` promote only where nothing escapes to
//! a call), forwards one kernel's result to the next and schedules the step as one block.
//! Measured on rnn_scan (Zen 3, loaded, alternating runs, outputs checked): 0.279-0.293 ->
//! 0.253-0.257 ms per run.
//!
//! Only small bodies: a large body's kernels are compiled on the partition threads, in
//! parallel, and their calls cost nothing next to their work.

use crate::codegen::plan::LoweringPlan;

/// Most LLVM work ([`crate::hlo::Opcode::weight`] summed over a kernel's instructions) that
/// one loop body's (or condition's) kernels may have together to be inlined: a body of two
/// small dots and a few elementwise kernels (rnn_scan's is ~100).
pub const MAX_INLINED_BODY_WORK: usize = 128;

/// The kernels (indices into `plan.kernels`) to emit into the sequencing module, given each
/// kernel's work: every kernel of a function that is not exported (a loop body or condition,
/// a called computation) whose kernels' work adds up to at most [`MAX_INLINED_BODY_WORK`].
pub fn inlined_kernels(plan: &LoweringPlan, work: &[usize]) -> Vec<usize> {
    let mut body_work = vec![0usize; plan.functions.len()];
    for (j, k) in plan.kernels.iter().enumerate() {
        body_work[k.function] = body_work[k.function].saturating_add(work[j]);
    }
    plan.kernels
        .iter()
        .enumerate()
        .filter(|(_, k)| !plan.functions[k.function].exported && body_work[k.function] <= MAX_INLINED_BODY_WORK)
        .map(|(j, _)| j)
        .collect()
}
