//! Loop nests that walk an array in its physical order: the layout's most-major dimension is
//! the outermost loop and the most-minor the innermost, so that consecutive iterations touch
//! consecutive memory and LLVM can vectorize the innermost loop.

use super::context::Codegen;
use super::index::Index;
use crate::error::Result;
use hlojit_runtime::Layout;
use inkwell::basic_block::BasicBlock;
use inkwell::values::{InstructionValue, IntValue, MetadataValue, PhiValue};
use inkwell::IntPredicate;

/// A loop whose header and body have been emitted but whose latch has not.
pub struct OpenLoop<'ctx> {
    header: BasicBlock<'ctx>,
    exit: BasicBlock<'ctx>,
    phi: PhiValue<'ctx>,
    pub induction: IntValue<'ctx>,
}

/// Opens `for (i = start; i < end; ++i)`; the builder is left inside the body.
pub fn open_loop<'ctx>(cg: &Codegen<'ctx>, name: &str, start: IntValue<'ctx>, end: IntValue<'ctx>) -> Result<OpenLoop<'ctx>> {
    let preheader = cg.b.get_insert_block().expect("positioned");
    let header = cg.block(&format!("{name}.header"));
    let body = cg.block(&format!("{name}.body"));
    let exit = cg.block(&format!("{name}.exit"));
    cg.b.build_unconditional_branch(header)?;
    cg.b.position_at_end(header);
    let phi = cg.b.build_phi(cg.i64(), name)?;
    phi.add_incoming(&[(&start, preheader)]);
    let induction = phi.as_basic_value().into_int_value();
    let cond = cg.b.build_int_compare(IntPredicate::SLT, induction, end, "")?;
    cg.b.build_conditional_branch(cond, body, exit)?;
    cg.b.position_at_end(body);
    Ok(OpenLoop { header, exit, phi, induction })
}

/// Closes a loop opened by [`open_loop`]; the builder is left after the loop.
pub fn close_loop<'ctx>(cg: &Codegen<'ctx>, l: OpenLoop<'ctx>) -> Result<()> {
    close_loop_at_latch(cg, l).map(|_| ())
}

/// [`close_loop`], returning the back-edge branch (where loop metadata goes).
pub fn close_loop_at_latch<'ctx>(cg: &Codegen<'ctx>, l: OpenLoop<'ctx>) -> Result<InstructionValue<'ctx>> {
    let next = cg.b.build_int_nsw_add(l.induction, cg.const_i64(1), "")?;
    let latch = cg.b.get_insert_block().expect("positioned");
    let back = cg.b.build_unconditional_branch(l.header)?;
    l.phi.add_incoming(&[(&next, latch)]);
    cg.b.position_at_end(l.exit);
    Ok(back)
}

/// Emits `for (i = start; i < end; ++i) body(i)`; the builder ends positioned after the loop.
pub fn for_loop<'ctx>(
    cg: &Codegen<'ctx>,
    name: &str,
    start: IntValue<'ctx>,
    end: IntValue<'ctx>,
    body: impl FnOnce(IntValue<'ctx>) -> Result<()>,
) -> Result<()> {
    let l = open_loop(cg, name, start, end)?;
    body(l.induction)?;
    close_loop(cg, l)
}

/// The dimension the outermost loop of a nest over `dims` in `layout` runs over: the most
/// major one of size > 1 (or the most major one if all are 1). `None` for scalars.
pub fn outer_dimension(dims: &[i64], layout: &Layout) -> Option<usize> {
    let order = layout.major_to_minor();
    order.iter().map(|&d| d as usize).find(|&d| dims[d] > 1).or_else(|| order.first().map(|&d| d as usize))
}

/// Loops opened one inside the other, and the index of the element their bodies visit
/// (dimensions without a loop stay at their initial value).
pub struct Nest<'ctx> {
    index: Vec<IntValue<'ctx>>,
    open: Vec<OpenLoop<'ctx>>,
}

impl<'ctx> Nest<'ctx> {
    /// A nest whose index starts at `initial`.
    pub fn new(initial: Vec<IntValue<'ctx>>) -> Nest<'ctx> {
        Nest { index: initial, open: Vec::new() }
    }

    /// Opens a loop inside the others over `[start, end)`; with `dim`, it indexes that
    /// dimension. Returns the induction variable.
    pub fn enter(&mut self, cg: &Codegen<'ctx>, name: &str, dim: Option<usize>, start: IntValue<'ctx>, end: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
        let l = open_loop(cg, name, start, end)?;
        let i = l.induction;
        if let Some(d) = dim {
            self.index[d] = i;
        }
        self.open.push(l);
        Ok(i)
    }

    /// Emits `body` innermost and closes every loop; the builder ends after the nest.
    pub fn finish(self, cg: &Codegen<'ctx>, body: impl FnOnce(&Index<'ctx>) -> Result<()>) -> Result<()> {
        self.finish_at_latches(cg, body).map(|_| ())
    }

    /// [`Nest::finish`], returning the back-edge branches of the nest's loops (innermost
    /// first), where loop metadata goes.
    pub fn finish_at_latches(mut self, cg: &Codegen<'ctx>, body: impl FnOnce(&Index<'ctx>) -> Result<()>) -> Result<Vec<InstructionValue<'ctx>>> {
        body(&Index::new(std::mem::take(&mut self.index)))?;
        let mut latches = Vec::with_capacity(self.open.len());
        while let Some(l) = self.open.pop() {
            latches.push(close_loop_at_latch(cg, l)?);
        }
        Ok(latches)
    }
}

/// [`emit_loop_nest`] with dimensions `minor` (the layout's fastest-varying one) and `other`
/// walked in `tile`×`tile` blocks: the loops over the remaining dimensions come first, in
/// layout order, then the blocks of `other`, the blocks of `minor`, and the elements of a
/// block. `outer_range` restricts [`outer_dimension`] as in [`emit_loop_nest`].
#[allow(clippy::too_many_arguments)] // the loop nest's shape, its split and its body
pub fn emit_tiled_loop_nest<'ctx>(
    cg: &Codegen<'ctx>,
    name: &str,
    dims: &[i64],
    layout: &Layout,
    outer_range: Option<(IntValue<'ctx>, IntValue<'ctx>)>,
    (minor, other): (usize, usize),
    tile: i64,
    body: impl FnOnce(&Index<'ctx>) -> Result<()>,
) -> Result<Vec<InstructionValue<'ctx>>> {
    if dims.contains(&0) {
        return Ok(Vec::new());
    }
    let outer = outer_dimension(dims, layout);
    let range_of = |d: usize| match outer_range {
        Some(r) if Some(d) == outer => r,
        _ => (cg.const_i64(0), cg.const_i64(dims[d])),
    };
    let mut nest = Nest::new(vec![cg.const_i64(0); dims.len()]);
    for d in layout.major_to_minor() {
        let d = d as usize;
        if d == minor || d == other || (dims[d] == 1 && Some(d) != outer) {
            continue;
        }
        let (start, end) = range_of(d);
        nest.enter(cg, &format!("{name}.d{d}"), Some(d), start, end)?;
    }
    // Block loops count blocks, so that a task range need not start on a tile boundary.
    let mut block_ranges = Vec::new();
    for d in [other, minor] {
        let (start, end) = range_of(d);
        let span = cg.b.build_int_nsw_sub(end, start, "")?;
        let rounded = cg.b.build_int_nsw_add(span, cg.const_i64(tile - 1), "")?;
        let blocks = cg.b.build_int_signed_div(rounded, cg.const_i64(tile), "")?;
        let block = nest.enter(cg, &format!("{name}.block{d}"), None, cg.const_i64(0), blocks)?;
        let offset = cg.b.build_int_nsw_mul(block, cg.const_i64(tile), "")?;
        let first = cg.b.build_int_nsw_add(start, offset, "")?;
        let full = cg.b.build_int_nsw_add(first, cg.const_i64(tile), "")?;
        let short = cg.b.build_int_compare(IntPredicate::SLT, end, full, "")?;
        let last = cg.b.build_select(short, end, full, "")?.into_int_value();
        block_ranges.push((d, first, last));
    }
    for (d, first, last) in block_ranges {
        nest.enter(cg, &format!("{name}.d{d}"), Some(d), first, last)?;
    }
    nest.finish_at_latches(cg, body)
}

/// Emits a loop nest over every index of `dims`, ordered by `layout`, calling `body` once per
/// element. With `outer_range`, the outermost dimension ([`outer_dimension`]) only runs over
/// that range: this is how a kernel is split into parallel tasks.
pub fn emit_loop_nest<'ctx>(
    cg: &Codegen<'ctx>,
    name: &str,
    dims: &[i64],
    layout: &Layout,
    outer_range: Option<(IntValue<'ctx>, IntValue<'ctx>)>,
    body: impl FnOnce(&Index<'ctx>) -> Result<()>,
) -> Result<()> {
    emit_loop_nest_at_latches(cg, name, dims, layout, outer_range, body).map(|_| ())
}

/// [`emit_loop_nest`], returning the back-edge branches of its loops (innermost first).
pub fn emit_loop_nest_at_latches<'ctx>(
    cg: &Codegen<'ctx>,
    name: &str,
    dims: &[i64],
    layout: &Layout,
    outer_range: Option<(IntValue<'ctx>, IntValue<'ctx>)>,
    body: impl FnOnce(&Index<'ctx>) -> Result<()>,
) -> Result<Vec<InstructionValue<'ctx>>> {
    if dims.contains(&0) {
        return Ok(Vec::new());
    }
    let outer = outer_dimension(dims, layout);
    let mut nest = Nest::new(vec![cg.const_i64(0); dims.len()]);
    for d in layout.major_to_minor() {
        let d = d as usize;
        let range = match outer_range {
            Some(r) if Some(d) == outer => Some(r),
            _ if dims[d] == 1 => None,
            _ => Some((cg.const_i64(0), cg.const_i64(dims[d]))),
        };
        if let Some((start, end)) = range {
            nest.enter(cg, &format!("{name}.d{d}"), Some(d), start, end)?;
        }
    }
    nest.finish_at_latches(cg, body)
}

/// Attaches `!llvm.loop !{self, options...}` to a loop's back-edge branch. The C API is
/// needed for the self-referential (distinct) loop id node.
pub fn set_loop_options<'ctx>(cg: &Codegen<'ctx>, latch: InstructionValue<'ctx>, options: &[MetadataValue<'ctx>]) -> Result<()> {
    use inkwell::context::AsContextRef;
    use inkwell::values::AsValueRef;
    use llvm_sys::core::*;
    use llvm_sys::debuginfo::{LLVMMetadataReplaceAllUsesWith, LLVMTemporaryMDNode};
    let ctx = cg.llvm.as_ctx_ref();
    let kind = "llvm.loop";
    // SAFETY: every reference passed belongs to `ctx` and outlives the calls; the temporary
    // node is replaced (and so freed) before the loop id is used.
    unsafe {
        let temp = LLVMTemporaryMDNode(ctx, std::ptr::null_mut(), 0);
        let mut ops = vec![temp];
        ops.extend(options.iter().map(|o| LLVMValueAsMetadata(o.as_value_ref())));
        let id = LLVMMDNodeInContext2(ctx, ops.as_mut_ptr(), ops.len());
        LLVMMetadataReplaceAllUsesWith(temp, id);
        let kind_id = LLVMGetMDKindIDInContext(ctx, kind.as_ptr().cast(), kind.len() as u32);
        LLVMSetMetadata(latch.as_value_ref(), kind_id, LLVMMetadataAsValue(ctx, id));
    }
    Ok(())
}
