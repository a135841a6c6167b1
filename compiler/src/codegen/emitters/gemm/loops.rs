//! Loop helpers shared by the dot and convolution emitters.

use crate::codegen::context::Codegen;
use crate::codegen::loops::{close_loop_at_latch, for_loop, open_loop};
use crate::error::Result;
use inkwell::values::IntValue;

/// Emits one loop per entry of `sizes` (outermost first; loops of size 1 are left out and
/// their index is 0) and calls `body` with the indices in the innermost body.
pub fn nested_loops<'ctx>(
    cg: &Codegen<'ctx>,
    name: &str,
    sizes: &[i64],
    body: &mut dyn FnMut(&[IntValue<'ctx>]) -> Result<()>,
) -> Result<()> {
    let mut idx = Vec::with_capacity(sizes.len());
    nest(cg, name, sizes, &mut idx, body)
}

fn nest<'ctx>(
    cg: &Codegen<'ctx>,
    name: &str,
    sizes: &[i64],
    idx: &mut Vec<IntValue<'ctx>>,
    body: &mut dyn FnMut(&[IntValue<'ctx>]) -> Result<()>,
) -> Result<()> {
    let d = idx.len();
    if d == sizes.len() {
        return body(idx);
    }
    if sizes[d] == 1 {
        idx.push(cg.const_i64(0));
        let r = nest(cg, name, sizes, idx, body);
        idx.pop();
        return r;
    }
    for_loop(cg, &format!("{name}.{d}"), cg.const_i64(0), cg.const_i64(sizes[d]), |i| {
        idx.push(i);
        let r = nest(cg, name, sizes, idx, body);
        idx.pop();
        r
    })
}

/// Emits `for (i = start; i < end; ++i) body(i)` marked neither to be vectorized nor unrolled:
/// for transposing copies, which LLVM would otherwise turn into huge interleaved shuffle or
/// scatter sequences that cost much compile time and run no faster than scalar moves.
pub fn scalar_loop<'ctx>(
    cg: &Codegen<'ctx>,
    name: &str,
    start: IntValue<'ctx>,
    end: IntValue<'ctx>,
    body: impl FnOnce(IntValue<'ctx>) -> Result<()>,
) -> Result<()> {
    let l = open_loop(cg, name, start, end)?;
    body(l.induction)?;
    let back = close_loop_at_latch(cg, l)?;
    disable_vectorization(cg, back);
    Ok(())
}

/// Attaches `!llvm.loop !{self, !{"llvm.loop.vectorize.enable", i1 false},
/// !{"llvm.loop.unroll.disable"}}` to a loop's latch branch. The C API is needed for the
/// self-referential (distinct) loop id node.
fn disable_vectorization(cg: &Codegen<'_>, latch: inkwell::values::InstructionValue<'_>) {
    use inkwell::context::AsContextRef;
    use inkwell::values::AsValueRef;
    use llvm_sys::core::*;
    use llvm_sys::debuginfo::{LLVMMetadataReplaceAllUsesWith, LLVMTemporaryMDNode};
    let ctx = cg.llvm.as_ctx_ref();
    let key = "llvm.loop.vectorize.enable";
    let kind = "llvm.loop";
    // SAFETY: every reference passed belongs to `ctx` and outlives the calls; the temporary
    // node is replaced (and so freed) before the loop id is used.
    unsafe {
        let name = LLVMMDStringInContext2(ctx, key.as_ptr().cast(), key.len());
        let off = LLVMValueAsMetadata(cg.const_bool(false).as_value_ref());
        let mut option = [name, off];
        let option = LLVMMDNodeInContext2(ctx, option.as_mut_ptr(), option.len());
        let unroll = "llvm.loop.unroll.disable";
        let mut no_unroll = [LLVMMDStringInContext2(ctx, unroll.as_ptr().cast(), unroll.len())];
        let no_unroll = LLVMMDNodeInContext2(ctx, no_unroll.as_mut_ptr(), 1);
        let temp = LLVMTemporaryMDNode(ctx, std::ptr::null_mut(), 0);
        let mut ops = [temp, option, no_unroll];
        let id = LLVMMDNodeInContext2(ctx, ops.as_mut_ptr(), ops.len());
        LLVMMetadataReplaceAllUsesWith(temp, id);
        let kind_id = LLVMGetMDKindIDInContext(ctx, kind.as_ptr().cast(), kind.len() as u32);
        LLVMSetMetadata(latch.as_value_ref(), kind_id, LLVMMetadataAsValue(ctx, id));
    }
}
