//! Gather at the root of a kernel: instead of re-reading and clamping the start indices for
//! every output element (what the elemental generator has to do), loop over the batch
//! positions, compute each slice's start once, and copy the slice in an inner loop over the
//! offset dimensions, which is contiguous in the common case (an embedding lookup copies
//! whole rows) and vectorizes. Tasks split the outermost batch dimension. Layouts that
//! interleave batch and offset dimensions use the elemental loop.

use super::ranges::{box_loop, major_to_minor, Bounds};
use crate::codegen::elemental::gather::GatherPlan;
use crate::codegen::index::Index;
use crate::codegen::kernel::{emit_elemental_loop, KernelContext};
use crate::error::Result;
use crate::hlo::Opcode;

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
    box_loop(cg, "gather.batch", &outer, &batch_order, |b| {
        e.scoped(|e| {
            let batch_index: Vec<_> = plan.batch_dims.iter().map(|&d| b.dims[d]).collect();
            let start = e.gather_slice_start(kc.root, &plan, &batch_index)?;
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
    Ok(split.map(|d| dims[d]).unwrap_or(1))
}
