//! Small elementwise kernels as straight-line code.
//!
//! A kernel over a few vectors of elements (a `while` loop's state of f32[16], say) vectorizes
//! into a loop of one or two iterations. Left a loop, its accesses to the loop state have a
//! variable offset, so LLVM cannot keep that state in registers across the iterations of the
//! enclosing `while` (SROA only promotes constant-offset accesses): every step stores the state
//! and loads it back, a store-to-load forwarding (~7 cycles) on the loop's dependence chain.
//! Asking LLVM to unroll the vectorized loop fully (a follow-up attribute of the vectorizer, so
//! that the scalar loop is vectorized first and not unrolled into scalars) leaves vector
//! instructions at constant offsets, which the SROA after LLVM's late unrolling promotes when the
//! state lives in stack slots (see `function.rs`, `lower_while`). The pipeline runs without
//! LLVM's own unrolling (`backend/target.rs`), so only loops marked here are unrolled.

use super::context::Codegen;
use crate::error::Result;
use inkwell::values::{IntValue, MetadataValue};
use inkwell::IntPredicate;

/// Kernels with at most this many elements are unrolled after vectorizing: eight AVX2 vectors
/// of f32 (four AVX-512 ones), a few dozen instructions once unrolled.
pub const MAX_UNROLLED_ELEMENTS: i64 = 64;

/// The loop options that fully unroll a kernel over `dims` once vectorized (its vector loop
/// and any scalar remainder), or none when the kernel is too large for that to pay.
pub fn unroll_after_vectorizing<'ctx>(cg: &Codegen<'ctx>, dims: &[i64]) -> Vec<MetadataValue<'ctx>> {
    let elements: i64 = dims.iter().product();
    if elements <= 1 || elements > MAX_UNROLLED_ELEMENTS {
        return Vec::new();
    }
    let full = cg.llvm.metadata_node(&[cg.llvm.metadata_string("llvm.loop.unroll.full").into()]);
    let followup = cg.llvm.metadata_string("llvm.loop.vectorize.followup_all");
    vec![cg.llvm.metadata_node(&[followup.into(), full.into()])]
}

/// Whether a kernel call covers its whole parallel extent: `begin == 0 && end == extent`.
pub fn runs_whole<'ctx>(cg: &Codegen<'ctx>, begin: IntValue<'ctx>, end: IntValue<'ctx>, extent: i64) -> Result<IntValue<'ctx>> {
    let first = cg.b.build_int_compare(IntPredicate::EQ, begin, cg.const_i64(0), "")?;
    let last = cg.b.build_int_compare(IntPredicate::EQ, end, cg.const_i64(extent), "")?;
    Ok(cg.b.build_and(first, last, "whole")?)
}
