//! Scatter (variadic too) at the root of a kernel: copy the operands into the outputs (unless
//! the output buffer is the operand's), then walk the update windows in order and combine each
//! window element with the output element it lands on using the update computation. Updates
//! are applied in the row-major order of the scatter dimensions, so duplicate indices combine
//! in order; a window whose start lies outside `[0, operand_dim - window_size]` in any
//! dimension is skipped whole (XLA's semantics). `indices_are_sorted` and `unique_indices`
//! are only hints and are not relied on.
//!
//! Tasks split an operand dimension that no index addresses (its window start is always 0):
//! a task copies and updates only its range of that dimension, so no two tasks touch the
//! same element and the order of updates to each element is preserved.

use super::in_place::output_is_operand;
use super::ranges::{box_loop, major_to_minor, Bounds};
use crate::codegen::elemental::gather::{index_to_i64, start_vector_index};
use crate::codegen::array::IrArray;
use crate::codegen::elemental::{Elemental, Input, Val};
use crate::codegen::index::Index;
use crate::codegen::kernel::KernelContext;
use crate::error::{Error, Result};
use crate::hlo::{Opcode, ScatterDimensionNumbers};
use inkwell::values::IntValue;
use inkwell::IntPredicate;

pub fn emit(kc: &KernelContext) -> Result<i64> {
    let cg = kc.cg;
    let root = kc.comp.get(kc.root);
    if root.opcode != Opcode::Scatter {
        return Err(Error::Unsupported(format!("{}: scatter fused below the root", root.name)));
    }
    let n = (root.operands.len() - 1) / 2;
    let operands = root.operands[..n].to_vec();
    let indices = root.operands[n];
    let updates = root.operands[n + 1..].to_vec();
    if kc.outputs.len() != n || n == 0 {
        return Err(Error::Internal(format!("{}: {} outputs for {n} operands", root.name, kc.outputs.len())));
    }
    let dn = root
        .attrs
        .scatter_dims
        .clone()
        .ok_or_else(|| Error::Internal(format!("{}: scatter without dimension numbers", root.name)))?;
    let to_apply =
        root.to_apply().ok_or_else(|| Error::Internal(format!("{}: scatter without to_apply", root.name)))?;
    let operand_dims = kc.comp.get(operands[0]).shape.dims().to_vec();
    let update_dims = kc.comp.get(updates[0]).shape.dims().to_vec();
    let indices_rank = kc.comp.get(indices).shape.rank();
    let index_type = kc.comp.get(indices).shape.element_type().unwrap_or(hlojit_runtime::ElementType::S32);
    let plan = ScatterPlan::new(&dn, &operand_dims, &update_dims);
    let out_layout = kc.outputs[0].shape.layout_or_default();
    let operand_order = major_to_minor(&out_layout);
    let in_place = n == 1 && output_is_operand(kc, operands[0]);
    // Working in place while the updates or indices also read the operand (a fused gather of
    // it, say): they must see its original values, so they read a staged copy, and the whole
    // scatter runs as one task.
    let read_elsewhere = in_place && kc.comp.users()[operands[0].index()].iter().any(|&u| u != kc.root);
    let split = if read_elsewhere { None } else { plan.split_dimension(&dn, &operand_dims, &operand_order) };

    // This task's range of the split operand dimension.
    let mut copy_bounds: Vec<Bounds> = operand_dims.iter().map(|&d| Bounds::full(cg, d)).collect();
    if let Some(d) = split {
        copy_bounds[d] = Bounds::new(kc.begin, kc.end);
    }
    let staged = if read_elsewhere { Some(stage_operand(kc)?) } else { None };
    let mut e = match &staged {
        Some((copy, _)) => {
            let mut bindings = kc.bindings.clone();
            bindings.insert(operands[0], Input::Array(copy.clone()));
            Elemental::with_bindings(cg, kc.module, kc.comp, bindings)
        }
        None => kc.elemental(),
    };
    if !in_place {
        box_loop(cg, "scatter.copy", &copy_bounds, &operand_order, |i| {
            e.scoped(|e| {
                for (m, &op) in operands.iter().enumerate() {
                    let v = e.gen_scalar(op, i)?;
                    kc.outputs[m].store(cg, i, v)?;
                }
                Ok(())
            })
        })?;
    }

    // Scatter dimensions of the updates, outer loops in row-major order (the order updates
    // apply in); then the window, in the output's layout order.
    let scatter_bounds: Vec<Bounds> =
        plan.update_scatter_dims.iter().map(|&d| Bounds::full(cg, update_dims[d])).collect();
    let scatter_order: Vec<usize> = (0..scatter_bounds.len()).collect();
    box_loop(cg, "scatter.index", &scatter_bounds, &scatter_order, |g| {
        e.scoped(|e| {
            let mut start = vec![cg.const_i64(0); operand_dims.len()];
            for (k, &d) in dn.scatter_dims_to_operand_dims.iter().enumerate() {
                let position = start_vector_index(cg, &g.dims, dn.index_vector_dim as usize, indices_rank, k as i64);
                let raw = e.gen_scalar(indices, &position)?.into_int_value();
                start[d as usize] = index_to_i64(cg, index_type, raw)?;
            }
            for (&od, &id) in dn.input_batching_dims.iter().zip(&dn.scatter_indices_batching_dims) {
                let b = if id > dn.index_vector_dim { id - 1 } else { id } as usize;
                start[od as usize] = g.dims[b];
            }
            let valid = plan.window_in_bounds(cg, &start, &operand_dims)?;
            cg.if_then("scatter.valid", valid, || {
                let mut window_bounds: Vec<Bounds> = plan.window_sizes.iter().map(|&w| Bounds::full(cg, w)).collect();
                if let Some(d) = split {
                    let hi = super::ranges::smin(cg, kc.end, cg.const_i64(plan.window_sizes[d]))?;
                    window_bounds[d] = Bounds::new(kc.begin, hi);
                }
                box_loop(cg, "scatter.window", &window_bounds, &operand_order, |w| {
                    e.scoped(|e| apply_update(kc, e, &plan, &updates, to_apply, &g.dims, &start, w))
                })
            })
        })
    })?;
    if let Some((copy, bytes)) = staged {
        cg.scratch_free(copy.ptr, bytes)?;
    }
    Ok(split.map(|d| operand_dims[d]).unwrap_or(1).max(1))
}

/// Copies the output buffer (which holds the operand, updated in place) into fresh memory;
/// returns the copy and its size in bytes.
fn stage_operand<'ctx>(kc: &KernelContext<'_, 'ctx>) -> Result<(IrArray<'ctx>, i64)> {
    let cg = kc.cg;
    let out = &kc.outputs[0];
    let bytes = out.byte_size();
    let ptr = cg.scratch_alloc(bytes, "scratch")?;
    if bytes > 0 {
        // The output may be the caller's memory, aligned only to its element type.
        let align = out.element_type().byte_size().max(1) as u32;
        cg.b.build_memcpy(ptr, align, out.ptr, align, cg.const_i64(bytes)).map_err(|e| Error::Llvm(e.to_string()))?;
    }
    Ok((IrArray::new(ptr, &out.shape)?, bytes))
}

/// Combines one window element `w` (an operand-space offset) of the update at scatter
/// position `g` with the output element at `start + w`.
#[allow(clippy::too_many_arguments)]
fn apply_update<'ctx>(
    kc: &KernelContext<'_, 'ctx>,
    e: &mut crate::codegen::elemental::Elemental<'_, 'ctx>,
    plan: &ScatterPlan,
    updates: &[crate::hlo::InstrId],
    to_apply: crate::hlo::CompId,
    g: &[IntValue<'ctx>],
    start: &[IntValue<'ctx>],
    w: &Index<'ctx>,
) -> Result<()> {
    let cg = kc.cg;
    let target: Vec<IntValue> = start
        .iter()
        .zip(&w.dims)
        .map(|(&s, &o)| cg.b.build_int_nsw_add(s, o, ""))
        .collect::<std::result::Result<_, _>>()?;
    let target = Index::new(target);
    let update_index = plan.update_index(cg, g, w);
    let mut args = Vec::with_capacity(updates.len() * 2);
    for out in &kc.outputs {
        args.push(Val::Scalar(out.load(cg, &target)?));
    }
    for &u in updates {
        args.push(e.gen(u, &update_index)?);
    }
    let combined = e.call_scalar(to_apply, args)?.into_elements();
    for (out, v) in kc.outputs.iter().zip(combined) {
        out.store(cg, &target, v.scalar()?)?;
    }
    Ok(())
}

/// How scatter's dimension numbers relate update, operand and index dimensions.
struct ScatterPlan {
    /// Update dimensions that are not window dimensions, in order.
    update_scatter_dims: Vec<usize>,
    /// For each operand dimension, the update dimension of its window (None for inserted and
    /// batching dimensions, whose window size is 1).
    window_update_dim: Vec<Option<usize>>,
    /// Window size per operand dimension.
    window_sizes: Vec<i64>,
    update_rank: usize,
}

impl ScatterPlan {
    fn new(dn: &ScatterDimensionNumbers, operand_dims: &[i64], update_dims: &[i64]) -> ScatterPlan {
        let update_rank = update_dims.len();
        let update_scatter_dims = (0..update_rank).filter(|d| !dn.update_window_dims.contains(&(*d as i64))).collect();
        let mut window_update_dim = vec![None; operand_dims.len()];
        let mut window_sizes = vec![1; operand_dims.len()];
        let windowed = (0..operand_dims.len()).filter(|&d| {
            !dn.inserted_window_dims.contains(&(d as i64)) && !dn.input_batching_dims.contains(&(d as i64))
        });
        for (od, &ud) in windowed.zip(&dn.update_window_dims) {
            window_update_dim[od] = Some(ud as usize);
            window_sizes[od] = update_dims[ud as usize];
        }
        ScatterPlan { update_scatter_dims, window_update_dim, window_sizes, update_rank }
    }

    /// The operand dimension tasks split: a windowed dimension no index addresses, the most
    /// major such in the output's layout; None if there is none.
    fn split_dimension(&self, dn: &ScatterDimensionNumbers, operand_dims: &[i64], order: &[usize]) -> Option<usize> {
        order.iter().copied().find(|&d| {
            self.window_update_dim[d].is_some()
                && !dn.scatter_dims_to_operand_dims.contains(&(d as i64))
                && operand_dims[d] > 1
                && self.window_sizes[d] > 1
        })
    }

    /// Whether `0 <= start[d] <= operand_dims[d] - window_sizes[d]` in every dimension.
    fn window_in_bounds<'ctx>(
        &self,
        cg: &crate::codegen::context::Codegen<'ctx>,
        start: &[IntValue<'ctx>],
        operand_dims: &[i64],
    ) -> Result<IntValue<'ctx>> {
        let mut ok = cg.const_bool(true);
        for (d, &s) in start.iter().enumerate() {
            let max = operand_dims[d] - self.window_sizes[d];
            if let Some(c) = s.get_sign_extended_constant() {
                if !(0..=max).contains(&c) {
                    ok = cg.const_bool(false);
                }
                continue;
            }
            // Unsigned compare covers both bounds.
            let le = cg.b.build_int_compare(IntPredicate::ULE, s, cg.const_i64(max), "")?;
            ok = cg.b.build_and(ok, le, "")?;
        }
        Ok(ok)
    }

    /// The update index of window offset `w` at scatter position `g`.
    fn update_index<'ctx>(
        &self,
        cg: &crate::codegen::context::Codegen<'ctx>,
        g: &[IntValue<'ctx>],
        w: &Index<'ctx>,
    ) -> Index<'ctx> {
        let mut dims = vec![cg.const_i64(0); self.update_rank];
        for (k, &d) in self.update_scatter_dims.iter().enumerate() {
            dims[d] = g[k];
        }
        for (od, ud) in self.window_update_dim.iter().enumerate() {
            if let Some(ud) = ud {
                dims[*ud] = w.dims[od];
            }
        }
        Index::new(dims)
    }
}
