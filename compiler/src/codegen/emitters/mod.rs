//! Emitters for the ops that are not computed one output element at a time: each gets the
//! kernel's context (its computation, root, operand bindings and output buffers) and emits the
//! whole computation of the outputs, returning the extent of its parallel dimension (1 when
//! the kernel cannot be split). One op family per file.

mod fft;
mod linalg;
pub mod rng;
mod staging;
mod reduce;
mod reduce_window;
mod select_and_scatter;

use super::kernel::KernelContext;
use crate::error::{Error, Result};
use crate::hlo::Opcode;

/// Emits the kernel whose hero op is `hero`.
pub fn emit(kc: &KernelContext, hero: Opcode) -> Result<i64> {
    match hero {
        Opcode::Fft => fft::emit_fft(kc),
        Opcode::Cholesky => linalg::emit_cholesky(kc),
        Opcode::TriangularSolve => linalg::emit_triangular_solve(kc),
        Opcode::RngBitGenerator => rng::emit_rng_bit_generator(kc),
        Opcode::RngGetAndUpdateState => rng::emit_rng_get_and_update_state(kc),
        Opcode::Reduce => reduce::emit(kc),
        Opcode::ReduceWindow => reduce_window::emit(kc),
        Opcode::SelectAndScatter => select_and_scatter::emit(kc),
        op => Err(Error::Unsupported(op.name().to_string())),
    }
}
