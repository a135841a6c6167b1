//! Loop helpers shared by the dot and convolution emitters.

use crate::codegen::context::Codegen;
use crate::codegen::loops::{close_loop_at_latch, for_loop, open_loop, set_loop_options};
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
    disable_vectorization(cg, back)
}

/// Marks a loop neither to be vectorized nor unrolled.
fn disable_vectorization<'ctx>(cg: &Codegen<'ctx>, latch: inkwell::values::InstructionValue<'ctx>) -> Result<()> {
    let no_vectorize = cg.llvm.metadata_node(&[cg.llvm.metadata_string("llvm.loop.vectorize.enable").into(), cg.const_bool(false).into()]);
    let no_unroll = cg.llvm.metadata_node(&[cg.llvm.metadata_string("llvm.loop.unroll.disable").into()]);
    set_loop_options(cg, latch, &[no_vectorize, no_unroll])
}
