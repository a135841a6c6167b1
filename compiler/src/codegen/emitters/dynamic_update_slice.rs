//! Dynamic-update-slice at the root of a kernel. When the output buffer is the operand's
//! (buffer assignment saw the operand die here), only the update region is written: the cost
//! is the update's size, not the operand's, which is what makes scan-style loops that update
//! one row per iteration cheap. Otherwise each task copies its share of the operand and then
//! writes the part of the update region that falls into that share.
//!
//! Start indices are clamped so that the update fits inside the operand (XLA's semantics).

use super::in_place::{output_is_operand, reads_only_at_written_index};
use super::ranges::{box_loop, major_to_minor, smax, smin, Bounds};
use crate::codegen::array::IrArray;
use crate::codegen::index::Index;
use crate::codegen::kernel::{emit_elemental_loop, KernelContext};
use crate::codegen::loops::{emit_loop_nest, outer_dimension};
use crate::error::Result;
use crate::hlo::Opcode;
use hlojit_runtime::{ArrayShape, Layout};
use inkwell::values::IntValue;

/// Updates at least this large are split into parallel tasks when written in place.
const PARALLEL_UPDATE_ELEMENTS: i64 = 1 << 15;

pub fn emit(kc: &KernelContext) -> Result<i64> {
    let root = kc.comp.get(kc.root);
    if root.opcode != Opcode::DynamicUpdateSlice || kc.outputs.len() != 1 {
        // A multi-output fusion with a dynamic-update-slice among its roots.
        return emit_elemental_loop(kc);
    }
    let (operand, update) = (root.operands[0], root.operands[1]);
    let starts = root.operands[2..].to_vec();
    if output_is_operand(kc, operand) {
        let safe = reads_only_at_written_index(kc, operand, update, &starts);
        return emit_in_place(kc, safe);
    }
    emit_copy_then_update(kc)
}

/// Writes the update region over the operand's buffer. Unless `direct` (the update reads the
/// operand only where it is written), the update is first computed into a scratch buffer,
/// since writing it piecemeal would change what later elements of it read.
fn emit_in_place<'ctx>(kc: &KernelContext<'_, 'ctx>, direct: bool) -> Result<i64> {
    let cg = kc.cg;
    let root = kc.comp.get(kc.root);
    let update = root.operands[1];
    let out = &kc.outputs[0];
    let update_dims = kc.comp.get(update).shape.dims().to_vec();
    let update_elements: i64 = update_dims.iter().product();
    let order = major_to_minor(&out.shape.layout_or_default());
    let mut e = kc.elemental();
    let starts = e.dynamic_update_slice_starts(kc.root)?;
    let shifted = |u: &Index<'ctx>| -> Result<Vec<IntValue<'ctx>>> {
        u.dims.iter().zip(&starts).map(|(&i, &s)| Ok(cg.b.build_int_nsw_add(i, s, "")?)).collect()
    };

    if direct {
        let split = outer_dimension(&update_dims, &Layout::new(order.iter().rev().map(|&d| d as i64).collect()));
        let parallel = update_elements >= PARALLEL_UPDATE_ELEMENTS && split.is_some();
        let mut bounds: Vec<Bounds> = update_dims.iter().map(|&n| Bounds::full(cg, n)).collect();
        if let (true, Some(d)) = (parallel, split) {
            bounds[d] = Bounds::new(kc.begin, kc.end);
        }
        box_loop(cg, "dus", &bounds, &order, |u| {
            e.scoped(|e| {
                let v = e.gen_scalar(update, u)?;
                out.store(cg, &Index::new(shifted(u)?), v)
            })
        })?;
        return Ok(match (parallel, split) {
            (true, Some(d)) => update_dims[d],
            _ => 1,
        });
    }

    let t = kc.comp.get(update).shape.element_type().unwrap_or(out.element_type());
    let scratch_shape = ArrayShape::new(t, update_dims.clone());
    let bytes = crate::codegen::array::buffer_bytes(&scratch_shape)?;
    let ptr = cg.scratch_alloc(bytes, "scratch")?;
    let scratch = IrArray::new(ptr, &scratch_shape)?;
    let all: Vec<Bounds> = update_dims.iter().map(|&n| Bounds::full(cg, n)).collect();
    box_loop(cg, "dus.stage", &all, &order, |u| e.scoped(|e| scratch.store(cg, u, e.gen_scalar(update, u)?)))?;
    box_loop(cg, "dus.write", &all, &order, |u| out.store(cg, &Index::new(shifted(u)?), scratch.load(cg, u)?))?;
    cg.scratch_free(ptr, bytes)?;
    Ok(1)
}

/// Copies the operand into the output and writes the update region; a task owns a range of
/// the output's outermost dimension and writes only there.
fn emit_copy_then_update(kc: &KernelContext) -> Result<i64> {
    let cg = kc.cg;
    let root = kc.comp.get(kc.root);
    let (operand, update) = (root.operands[0], root.operands[1]);
    let out = &kc.outputs[0];
    let dims = out.shape.dims.clone();
    let layout = out.shape.layout_or_default();
    let update_dims = kc.comp.get(update).shape.dims().to_vec();
    let split = outer_dimension(&dims, &layout);
    let mut e = kc.elemental();
    let starts = e.dynamic_update_slice_starts(kc.root)?;

    let range = split.map(|_| (kc.begin, kc.end));
    emit_loop_nest(cg, "dus.copy", &dims, &layout, range, |i| {
        e.scoped(|e| out.store(cg, i, e.gen_scalar(operand, i)?))
    })?;

    let mut bounds: Vec<Bounds> = update_dims.iter().map(|&n| Bounds::full(cg, n)).collect();
    if let Some(d) = split {
        // Update positions u with begin <= start + u < end.
        let lo = smax(cg, cg.b.build_int_nsw_sub(kc.begin, starts[d], "")?, cg.const_i64(0))?;
        let hi = smin(cg, cg.b.build_int_nsw_sub(kc.end, starts[d], "")?, cg.const_i64(update_dims[d]))?;
        bounds[d] = Bounds::new(lo, hi);
    }
    let order = major_to_minor(&layout);
    box_loop(cg, "dus.update", &bounds, &order, |u| {
        e.scoped(|e| {
            let v = e.gen_scalar(update, u)?;
            let dims: Vec<_> = u
                .dims
                .iter()
                .zip(&starts)
                .map(|(&i, &s)| cg.b.build_int_nsw_add(i, s, ""))
                .collect::<std::result::Result<_, _>>()?;
            out.store(cg, &Index::new(dims), v)
        })
    })?;
    Ok(split.map(|d| dims[d]).unwrap_or(1).max(1))
}
