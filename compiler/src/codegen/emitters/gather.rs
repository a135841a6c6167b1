//! Gather at the root of a kernel: instead of re-reading and clamping the start indices for
//! every output element (what the elemental generator has to do), loop over the batch
//! positions, compute each slice's start once, and copy the slice in an inner loop over the
//! offset dimensions, which is contiguous in the common case (an embedding lookup copies
//! whole rows) and vectorizes. Tasks split the outermost batch dimension. Layouts that
//! interleave batch and offset dimensions use the elemental loop.
//!
//! When the slices are rows read from an operand buffer (an embedding table), the loop asks
//! for the slice [`PREFETCH_AHEAD`] positions ahead before copying this one: the rows lie at
//! random places, so neither the hardware prefetchers nor the out-of-order window (one row
//! is 32 loads and 32 stores) keep more than a row or two in flight, and each row waits for
//! memory. Prefetches change no value.
//!
//! When each slice is also one contiguous run of the output and the kernel moves more than
//! the last-level cache holds, the slices are copied with non-temporal stores
//! (`streaming_stores::stream_copy`, no staging: the source row is already in memory): a plain
//! store would first read every output line it writes, a third of the kernel's traffic.

use super::ranges::{box_loop, major_to_minor, Bounds};
use crate::codegen::elemental::gather::GatherPlan;
use crate::codegen::index::Index;
use crate::codegen::kernel::{emit_elemental_loop, KernelContext};
use crate::codegen::streaming_stores;
use crate::error::Result;
use crate::codegen::array::IrArray;
use crate::codegen::elemental::{Elemental, Input};
use crate::hlo::{InstrId, Opcode};
use inkwell::values::IntValue;
use inkwell::IntPredicate;

/// Batch positions between the slice prefetched and the slice copied. Measured on the
/// embedding lookup (16384 rows of 1 KiB from a 51 MB table, loaded machine, best of 30
/// runs in four interleaved pairs): 2.25-2.41 ms without prefetches, 1.71-2.10 ms with 8.
const PREFETCH_AHEAD: i64 = 8;
/// Slices up to this many bytes are prefetched line by line (larger ones stream long enough
/// for the hardware prefetchers).
const PREFETCH_MAX_BYTES: i64 = 4096;

pub fn emit(kc: &KernelContext) -> Result<i64> {
    let cg = kc.cg;
    let root = kc.comp.get(kc.root);
    if root.opcode != Opcode::Gather || kc.outputs.len() != 1 {
        return emit_elemental_loop(kc);
    }
    let out = &kc.outputs[0];
    let dims = out.shape.dims.clone();
    if dims.contains(&0) {
        return Ok(1);
    }
    let plan = GatherPlan::of(kc.comp, kc.root)?;
    let order = major_to_minor(&out.shape.layout_or_default());
    let batch_order: Vec<usize> = order.iter().copied().filter(|d| plan.batch_dims.contains(d)).collect();
    let offset_order: Vec<usize> = order.iter().copied().filter(|d| plan.offset_dims.contains(d)).collect();
    if order != [batch_order.clone(), offset_order.clone()].concat() {
        return emit_elemental_loop(kc);
    }
    let operand = root.operands[0];
    let split = batch_order.iter().copied().find(|&d| dims[d] > 1);
    let mut outer: Vec<Bounds> = dims.iter().map(|_| Bounds::full(cg, 1)).collect();
    for &d in &batch_order {
        outer[d] = Bounds::full(cg, dims[d]);
    }
    if let Some(d) = split {
        outer[d] = Bounds::new(kc.begin, kc.end);
    }
    let mut e = kc.elemental();
    // Rows of a table in memory, one batch dimension walked in order: prefetch ahead.
    let table = match (kc.bindings.get(&operand), split) {
        (Some(Input::Array(a)), Some(d)) if batch_order.len() == 1 => Some((a.clone(), d)),
        _ => None,
    };
    let streamed = match &table {
        Some((array, _)) if streams(kc, &plan, array, &offset_order) => Some(array.clone()),
        _ => None,
    };
    kc.streamed.set(streamed.is_some());
    let slice_elements: i64 = plan.slice_sizes.iter().product();
    box_loop(cg, "gather.batch", &outer, &batch_order, |b| {
        e.scoped(|e| {
            let batch_index: Vec<_> = plan.batch_dims.iter().map(|&d| b.dims[d]).collect();
            if let Some((array, d)) = &table {
                prefetch_slice(e, kc.root, &plan, array, b.dims[*d], dims[*d])?;
            }
            let start = e.gather_slice_start(kc.root, &plan, &batch_index)?;
            if let Some(array) = &streamed {
                let src = array.address(cg, &Index::new(start))?;
                return streaming_stores::stream_copy(cg, out.element_type(), src, out.address(cg, b)?, cg.const_i64(slice_elements));
            }
            let mut inner: Vec<Bounds> = b.dims.iter().map(|&i| Bounds::new(i, i)).collect();
            for &d in &offset_order {
                inner[d] = Bounds::full(cg, dims[d]);
            }
            box_loop(cg, "gather.slice", &inner, &offset_order, |o| {
                e.scoped(|e| {
                    let mut operand_index = start.clone();
                    for (&od, &out_d) in plan.offset_operand_dims.iter().zip(&plan.offset_dims) {
                        operand_index[od] = cg.b.build_int_nsw_add(start[od], o.dims[out_d], "")?;
                    }
                    let v = e.gen_scalar(operand, &Index::new(operand_index))?;
                    out.store(cg, o, v)
                })
            })
        })
    })?;
    if streamed.is_some() {
        streaming_stores::fence(cg)?;
    }
    Ok(split.map(|d| dims[d]).unwrap_or(1))
}

/// Whether the slices are copied to the output with non-temporal stores: each is one
/// contiguous run of the table and of the output, and the rows read and the output written
/// together fill the last-level cache (`MIN_OUTPUT_BYTES`), so the output's first lines would
/// be gone from it by the end anyway. The output alone may be half that: the embedding lookup
/// writes 16 MiB.
fn streams(kc: &KernelContext, plan: &GatherPlan, array: &IrArray, offset_order: &[usize]) -> bool {
    let out = &kc.outputs[0];
    let layout = out.shape.layout_or_default();
    streaming_stores::can_stream_to(kc, out, &[2, 4, 8])
        && streaming_stores::is_minor_suffix(&out.shape.dims, &layout, offset_order)
        && contiguous_slice(array, plan)
        && 2 * out.byte_size() >= streaming_stores::MIN_OUTPUT_BYTES
}

/// Whether a slice of `array` (row-major) is one contiguous run: it spans whole minor
/// dimensions, then part of one.
fn contiguous_slice(array: &IrArray, plan: &GatherPlan) -> bool {
    let dims = &array.shape.dims;
    let layout = array.shape.layout_or_default();
    let row_major = layout.tiles.is_empty() && layout.minor_to_major.iter().rev().copied().eq(0..dims.len() as i64);
    let mut seen_partial = false;
    for d in (0..dims.len()).rev() {
        let size = plan.slice_sizes.get(d).copied().unwrap_or(1);
        if seen_partial && size != 1 {
            return false;
        }
        if size != dims[d] {
            seen_partial = true;
        }
    }
    row_major
}

/// Prefetches the slice of batch position `position + PREFETCH_AHEAD` (the last one near the
/// end) of a gather with one batch dimension of `extent` positions, when it is a short
/// contiguous run of `array`.
fn prefetch_slice<'ctx>(e: &mut Elemental<'_, 'ctx>, root: InstrId, plan: &GatherPlan, array: &IrArray<'ctx>, position: IntValue<'ctx>, extent: i64) -> Result<()> {
    let cg = e.cg;
    let elem = array.element_type().byte_size() as i64;
    let bytes = plan.slice_sizes.iter().product::<i64>() * elem;
    if !contiguous_slice(array, plan) || bytes > PREFETCH_MAX_BYTES || bytes < 64 || extent <= PREFETCH_AHEAD {
        return Ok(());
    }
    let ahead = cg.b.build_int_nsw_add(position, cg.const_i64(PREFETCH_AHEAD), "")?;
    let ahead = cg.b.build_select(cg.b.build_int_compare(IntPredicate::SLT, ahead, cg.const_i64(extent), "")?, ahead, cg.const_i64(extent - 1), "")?.into_int_value();
    let start = e.gather_slice_start(root, plan, &[ahead])?;
    let base = array.address(cg, &Index::new(start))?;
    let prefetch = cg.intrinsic("llvm.prefetch", &[cg.ptr().into()])?;
    let mut offset = 0;
    while offset < bytes {
        // SAFETY: the line lies within the slice, inside the array.
        let line = unsafe { cg.b.build_gep(cg.i8(), base, &[cg.const_i64(offset)], "")? };
        // Read, high locality (into every level), data cache.
        let args = [line.into(), cg.i32().const_int(0, false).into(), cg.i32().const_int(3, false).into(), cg.i32().const_int(1, false).into()];
        cg.call_void(prefetch, &args)?;
        offset += 64;
    }
    Ok(())
}
