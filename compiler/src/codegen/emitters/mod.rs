//! Emitters for the ops that are not computed one output element at a time: each gets the
//! kernel's context (its computation, root, operand bindings and output buffers) and emits the
//! whole computation of the outputs, returning the extent of its parallel dimension (1 when
//! the kernel cannot be split). One op family per file.

mod conv;
mod dot;
pub mod dot_epilogue;
pub(crate) mod dot_strips;
mod gemm;
pub use gemm::dot::likely_precompiled as dot_likely_precompiled;
pub use gemm::precompiled::{generated_forced as generated_gemm_forced, GENERATED_GEMM_VARIABLE};
mod dynamic_update_slice;
mod fft;
mod gather;
mod in_place;
mod linalg;
mod ranges;
mod reduce;
mod reduce_window;
pub mod rng;
mod scatter;
pub(crate) mod select_and_scatter;
mod sort;
mod sort_key;
pub mod sort_rows;
pub mod row_isa;
pub mod softmax_rows;
pub mod layernorm_rows;
mod staging;
mod topk;

use super::kernel::KernelContext;
use crate::error::{Error, Result};
use crate::hlo::Opcode;

/// Elemental ops that have a better emitter when they are the root of a kernel: gather copies
/// whole slices, dynamic-update-slice writes only the update region when it works in place.
pub fn has_root_emitter(op: Opcode) -> bool {
    matches!(op, Opcode::Gather | Opcode::DynamicUpdateSlice)
}

pub use crate::analysis::custom_calls::is_builtin_custom_call;

/// Whether a sort of `operands` operands with comparator `comparator` sorts by a key (the
/// runtime's radix sort) rather than by calling the comparator: what the LLVM pipeline
/// choice needs to know (backend/optimization.rs).
pub fn sort_order_is_key(module: &crate::hlo::Module, comparator: crate::hlo::CompId, operands: usize) -> bool {
    sort_key::recognize(module, comparator, operands).is_some()
}

/// Emits the kernel whose hero op is `hero`.
pub fn emit(kc: &KernelContext, hero: Opcode) -> Result<i64> {
    match hero {
        Opcode::Dot => dot::emit_dot(kc),
        Opcode::Convolution => conv::emit_convolution(kc),
        Opcode::DynamicUpdateSlice => dynamic_update_slice::emit(kc),
        Opcode::Gather => gather::emit(kc),
        Opcode::Scatter => scatter::emit(kc),
        Opcode::Sort => sort::emit(kc),
        Opcode::TopK => topk::emit(kc),
        Opcode::CustomCall if topk::is_topk_custom_call(kc.comp.get(kc.root)) => topk::emit(kc),
        Opcode::Fft => fft::emit_fft(kc),
        Opcode::Cholesky => linalg::emit_cholesky(kc),
        Opcode::TriangularSolve => linalg::emit_triangular_solve(kc),
        Opcode::RngBitGenerator => rng::emit_rng_bit_generator(kc),
        Opcode::RngGetAndUpdateState => rng::emit_rng_get_and_update_state(kc),
        Opcode::Reduce => reduce::emit(kc),
        Opcode::ReduceWindow => reduce_window::emit(kc),
        Opcode::SelectAndScatter => select_and_scatter::emit(kc),
        op => Err(Error::Unsupported(format!("{}: no emitter for this op", op.name()))),
    }
}
