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
//!
//! A value that both a row's reduction and the row's elements read, and that is expensive to
//! compute (a softmax's `exp(x - max)`), is computed once per element into a row-sized scratch
//! just before the first row value that reads it; every later reader loads it from there (the
//! row stays in the core's cache). Loading a stored value gives the same bits as computing it
//! again, so the results are those of the plain kernel.

use super::array::IrArray;
use super::context::Codegen;
use super::elemental::{Elemental, Input};
use super::index::Index;
use super::kernel::KernelContext;
use super::loops::{outer_dimension, Nest};
use super::reducer::LoopDim;
use super::streaming_stores;
use crate::analysis::row_values::{row_values, DimSource, RowValues};
use crate::error::{Error, Result};
use crate::hlo::InstrId;
use hlojit_runtime::{ArrayShape, Layout};
use inkwell::values::{BasicValueEnum, InstructionValue};

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
    let parallel = outer_dimension(dims, layout).unwrap_or(rows.row_dims[0]);
    let loop_dim = |d: usize| {
        if d == parallel {
            LoopDim { dim: d, start: kc.begin, end: kc.end }
        } else {
            LoopDim::full(cg, d, dims[d])
        }
    };
    let row_loops: Vec<LoopDim> = rows.row_dims.iter().filter(|&&d| d == parallel || dims[d] != 1).map(|&d| loop_dim(d)).collect();
    let element_loops = element_loops(cg, dims, layout, &rows.row_dims);
    let out = &kc.outputs[0];
    // A row contiguous in an output larger than the cache is computed into a row-sized
    // staging buffer and streamed out (see `streaming_stores`).
    let element_dims: Vec<usize> = element_loops.iter().map(|l| l.dim).collect();
    let row_elements: i64 = element_dims.iter().map(|&d| dims[d]).product();
    let staging = if streaming_stores::applies(kc, std::slice::from_ref(out)) && streaming_stores::is_minor_suffix(dims, layout, &element_dims) && row_elements >= streaming_stores::MIN_SPAN {
        kc.streamed.set(true);
        Some(row_scratch(kc, kc.root, &rows.row_dims, layout)?)
    } else {
        None
    };
    let scratch = rows.scratch.iter().map(|&(id, before)| Ok((id, before, row_scratch(kc, id, &rows.row_dims, layout)?))).collect::<Result<Vec<_>>>()?;
    let mut rows_nest = Nest::new(vec![cg.const_i64(0); dims.len()]);
    for l in &row_loops {
        rows_nest.enter(cg, &format!("row.d{}", l.dim), Some(l.dim), l.start, l.end)?;
    }
    let mut element_latches = Vec::new();
    let row_latches = e.scoped(|e| {
        rows_nest.finish_at_latches(cg, |row| {
            let target = staging.as_ref().unwrap_or(out);
            element_latches.extend(emit_row(cg, e, kc.root, rows, row, &element_loops, &scratch, &|idx, v| target.store(cg, idx, v))?);
            if let Some(staging) = &staging {
                let count = cg.const_i64(row_elements);
                streaming_stores::stream_copy(cg, out.element_type(), staging.ptr, out.address(cg, row)?, count)?;
            }
            Ok(())
        })
    })?;
    // As in every loop kernel, no iteration reads what another writes (see `kernel`); the
    // reductions' loops are not marked: their accumulators carry a dependence.
    for array in scratch.iter().map(|(_, _, a)| a).chain(&staging) {
        cg.scratch_free(array.ptr, array.byte_size())?;
    }
    if staging.is_some() {
        streaming_stores::fence(cg)?;
    }
    let latches: Vec<_> = element_latches.into_iter().chain(row_latches).collect();
    super::independent_loops::declare_independent(cg, cg.function(), &latches)?;
    let extent = dims[parallel].max(1);
    // Each reduction walks its row once more; the other row values cost one element per row.
    let walks = 1 + rows.values.iter().filter(|(id, _)| kc.comp.get(*id).opcode == crate::hlo::Opcode::Reduce).count() as i64;
    kc.work_elements.set(Some(dims.iter().product::<i64>() * walks));
    Ok(extent)
}

/// Emits one row of a row kernel at `row` (an index whose row dimensions are set): its row
/// values in order, each scratch value filled just before the first row value that reads it,
/// then the loops over the row's elements, each element of `root` handed to `store`. Returns
/// the latches of the loops over elements, none of whose iterations reads what another writes.
#[allow(clippy::too_many_arguments)]
pub fn emit_row<'ctx>(
    cg: &Codegen<'ctx>,
    e: &mut Elemental<'_, 'ctx>,
    root: InstrId,
    rows: &RowValues,
    row: &Index<'ctx>,
    element_loops: &[LoopDim<'ctx>],
    scratch: &[(InstrId, usize, IrArray<'ctx>)],
    store: &dyn Fn(&Index<'ctx>, BasicValueEnum<'ctx>) -> Result<()>,
) -> Result<Vec<InstructionValue<'ctx>>> {
    let mut latches = Vec::new();
    for (position, (id, sources)) in rows.values.iter().enumerate() {
        latches.extend(fill_scratch(cg, e, row, element_loops, scratch, position)?);
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
    latches.extend(fill_scratch(cg, e, row, element_loops, scratch, rows.values.len())?);
    let mut elements = Nest::new(row.dims.clone());
    for l in element_loops {
        elements.enter(cg, &format!("row.elements.d{}", l.dim), Some(l.dim), l.start, l.end)?;
    }
    latches.extend(e.scoped(|e| {
        elements.finish_at_latches(cg, |idx| {
            let v = e.gen_scalar(root, idx)?;
            store(idx, v)
        })
    })?);
    Ok(latches)
}

/// The loops over a row's elements: the dimensions other than the row dimensions (and those of
/// one element), in the layout's major-to-minor order.
pub fn element_loops<'ctx>(cg: &Codegen<'ctx>, dims: &[i64], layout: &Layout, row_dims: &[usize]) -> Vec<LoopDim<'ctx>> {
    layout.major_to_minor().iter().map(|&d| d as usize).filter(|d| !row_dims.contains(d) && dims[*d] != 1).map(|d| LoopDim::full(cg, d, dims[d])).collect()
}

/// One row of an array of `shape`: its dimensions with the row dimensions set to 1, in the
/// output's physical order (the loops over the row walk it contiguously). A dimension of size
/// 1 adds nothing to an address, so the index of any element of the current row reads its
/// place in it.
pub fn row_shape(shape: &ArrayShape, row_dims: &[usize], layout: &Layout) -> ArrayShape {
    let dims: Vec<i64> = shape.dims.iter().enumerate().map(|(d, &n)| if row_dims.contains(&d) { 1 } else { n }).collect();
    ArrayShape::new(shape.element_type, dims).with_layout(Layout::new(layout.minor_to_major.clone()))
}

/// A scratch for one row of value `id` (see [`row_shape`]).
fn row_scratch<'ctx>(kc: &KernelContext<'_, 'ctx>, id: InstrId, row_dims: &[usize], layout: &Layout) -> Result<IrArray<'ctx>> {
    let inst = kc.comp.get(id);
    let shape = inst.shape.as_array().ok_or_else(|| Error::Internal(format!("row scratch for {}: not an array", inst.name)))?;
    let row = row_shape(shape, row_dims, layout);
    let bytes = row.element_count() * row.element_type.byte_size() as i64;
    let ptr = kc.cg.scratch_alloc(bytes.max(1), "row.scratch")?;
    IrArray::new(ptr, &row)
}

/// Fills the scratch of every value due before row value `position` with the current row's
/// elements, and binds the value to it; returns the loops' latches.
fn fill_scratch<'ctx>(
    cg: &Codegen<'ctx>,
    e: &mut Elemental<'_, 'ctx>,
    row: &Index<'ctx>,
    element_loops: &[LoopDim<'ctx>],
    scratch: &[(InstrId, usize, IrArray<'ctx>)],
    position: usize,
) -> Result<Vec<InstructionValue<'ctx>>> {
    let mut latches = Vec::new();
    for (id, _, array) in scratch.iter().filter(|s| s.1 == position) {
        let mut nest = Nest::new(row.dims.clone());
        for l in element_loops {
            nest.enter(cg, &format!("row.scratch.d{}", l.dim), Some(l.dim), l.start, l.end)?;
        }
        latches.extend(e.scoped(|e| {
            nest.finish_at_latches(cg, |idx| {
                let v = e.gen_scalar(*id, idx)?;
                array.store(cg, idx, v)
            })
        })?);
        e.bind(*id, Input::Array(array.clone()));
    }
    Ok(latches)
}
