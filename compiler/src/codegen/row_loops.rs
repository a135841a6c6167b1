//! Loop kernels that compute their reductions, and the values broadcast from them, once per
//! row (see `analysis::row_values`): a layernorm or softmax whose reductions the row-fusion
//! pass put into the loop that uses them.
//!
//! The kernel walks the row dimensions (the parallel one outermost, split into tasks as usual);
//! at the start of each row it runs every such reduction over that row's operands — the row
//! is still in cache from the previous one — and binds the result as a value, so the loops
//! over the row's elements read it from a register. Each reduction is the same per-element
//! generator a loop kernel would run for it (same accumulation order), only placed where it
//! runs once.

use super::elemental::Input;
use super::index::Index;
use super::kernel::KernelContext;
use super::loops::{outer_dimension, Nest};
use super::reducer::LoopDim;
use crate::analysis::row_values::{row_values, DimSource, RowValues};
use crate::error::Result;
use hlojit_runtime::Layout;

/// The row values of a loop kernel with one output of `dims` in `layout`, if it should
/// be emitted as rows: the kernel computes a fusion, and its parallel dimension indexes rows.
pub fn plan(kc: &KernelContext, dims: &[i64], layout: &Layout) -> Option<RowValues> {
    if kc.outputs.len() != 1 || kc.root != kc.comp.root || dims.contains(&0) {
        return None;
    }
    let rows = row_values(kc.comp, dims, layout, &|id| kc.bindings.contains_key(&id))?;
    let parallel = outer_dimension(dims, layout)?;
    rows.row_dims.contains(&parallel).then_some(rows)
}

/// Emits the kernel as rows; returns the parallel extent (the size of the outermost row
/// dimension that is not 1, which the runtime splits into tasks).
pub fn emit(kc: &KernelContext, rows: &RowValues, dims: &[i64], layout: &Layout) -> Result<i64> {
    let cg = kc.cg;
    let mut e = kc.elemental();
    let order: Vec<usize> = layout.major_to_minor().iter().map(|&d| d as usize).collect();
    let parallel = outer_dimension(dims, layout).unwrap_or(rows.row_dims[0]);
    let loop_dim = |d: usize| {
        if d == parallel {
            LoopDim { dim: d, start: kc.begin, end: kc.end }
        } else {
            LoopDim::full(cg, d, dims[d])
        }
    };
    let row_loops: Vec<LoopDim> = rows.row_dims.iter().filter(|&&d| d == parallel || dims[d] != 1).map(|&d| loop_dim(d)).collect();
    let element_loops: Vec<LoopDim> =
        order.iter().filter(|d| !rows.row_dims.contains(d) && dims[**d] != 1).map(|&d| loop_dim(d)).collect();
    let out = &kc.outputs[0];
    let mut rows_nest = Nest::new(vec![cg.const_i64(0); dims.len()]);
    for l in &row_loops {
        rows_nest.enter(cg, &format!("row.d{}", l.dim), Some(l.dim), l.start, l.end)?;
    }
    let mut element_latches = Vec::new();
    let row_latches = e.scoped(|e| {
        rows_nest.finish_at_latches(cg, |row| {
            for (id, sources) in &rows.values {
                let at: Vec<_> = sources
                    .iter()
                    .map(|s| match s {
                        DimSource::Output(d) => row.dims[*d],
                        _ => cg.const_i64(0),
                    })
                    .collect();
                let value = e.gen(*id, &Index::new(at))?;
                e.bind(*id, Input::Value(value));
            }
            let mut elements = Nest::new(row.dims.clone());
            for l in &element_loops {
                elements.enter(cg, &format!("row.elements.d{}", l.dim), Some(l.dim), l.start, l.end)?;
            }
            element_latches = e.scoped(|e| {
                elements.finish_at_latches(cg, |idx| {
                    let v = e.gen_scalar(kc.root, idx)?;
                    out.store(cg, idx, v)
                })
            })?;
            Ok(())
        })
    })?;
    // As in every loop kernel, no iteration reads what another writes (see `kernel`); the
    // reductions' loops are not marked: their accumulators carry a dependence.
    let latches: Vec<_> = element_latches.into_iter().chain(row_latches).collect();
    super::independent_loops::declare_independent(cg, cg.function(), &latches)?;
    let extent = dims[parallel].max(1);
    // Each reduction walks its row once more; the other row values cost one element per row.
    let walks = 1 + rows.values.iter().filter(|(id, _)| kc.comp.get(*id).opcode == crate::hlo::Opcode::Reduce).count() as i64;
    kc.work_elements.set(Some(dims.iter().product::<i64>() * walks));
    Ok(extent)
}
