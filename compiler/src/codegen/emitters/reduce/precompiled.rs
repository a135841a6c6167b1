//! Row sums and maxima of f32 arrays run by the runtime's precompiled kernel
//! (`hlojit_runtime::kernels::rows::hlojit_rt_row_reduce_f32_avx2` / `_avx512`) instead of
//! generated loops, for the same reason as the softmax (`emitters/softmax_rows.rs`): a module
//! of such reductions then needs no LLVM at all (XLA:CPU runs them in YNNPACK).
//!
//! Taken when the runtime kernel repeats the generated loop bit for bit: a target with LLVM's
//! vector width known (`row_isa.rs`), f32 reductions by `add` or `maximum` from a constant
//! init, each reading a buffer row-major over its minor dimension (or a whole vector too
//! small to split), rows `RowIsa::accepts_row` accepts, no elementwise outputs. The
//! reductions share the walk in the generated kernel; run one after the other they give the
//! same bits (each output depends only on its own row).

use super::{split, Plan};
use crate::codegen::elemental::Input;
use crate::codegen::emitters::row_isa::row_isa;
use crate::codegen::kernel::KernelContext;
use crate::codegen::runtime_abi::RuntimeFunction;
use crate::error::Result;
use crate::hlo::Opcode;
use hlojit_runtime::kernels::rows::{RowIsa, MAX_ROW_REDUCTIONS, REDUCE_ADD, REDUCE_MAX};
use hlojit_runtime::ElementType;
use inkwell::values::IntValue;

/// Emits the runtime call when the plan qualifies; `None` (nothing emitted) otherwise.
/// Returns the parallel extent: 1, the runtime splits the rows itself.
pub(super) fn emit(kc: &KernelContext, p: &Plan) -> Result<Option<i64>> {
    let cg = kc.cg;
    let rank = p.dims.len();
    let Some(isa) = row_isa(cg) else { return Ok(None) };
    if rank == 0 {
        return Ok(None);
    }
    let row_major = p.minor_to_major.iter().rev().copied().eq(0..rank as i64);
    // Rows over the minor dimension; a lone vector only when the emitter would not split it.
    let rows_shape = p.reduced == [rank - 1] && (rank > 1 || !split::applies(p));
    let cols = p.dims[rank - 1];
    if !row_major || !rows_shape || !isa.accepts_row(cols) || !p.elementwise.is_empty() {
        return Ok(None);
    }
    if p.groups.is_empty() || p.groups.len() > MAX_ROW_REDUCTIONS {
        return Ok(None);
    }
    let rows: i64 = p.dims[..rank - 1].iter().product();
    let int = |v| cg.b.build_ptr_to_int(v, cg.i64(), "");
    let c = |v: i64| cg.const_i64(v);
    let mut reductions: Vec<[IntValue; 4]> = Vec::new();
    for g in &p.groups {
        let ([input], [init], [out]) = (g.inputs.as_slice(), g.inits.as_slice(), g.outputs.as_slice()) else { return Ok(None) };
        let op = match g.reducer.op {
            Some(Opcode::Add) if g.reducer.reassociate => REDUCE_ADD,
            Some(Opcode::Maximum) => REDUCE_MAX,
            _ => return Ok(None),
        };
        let (i, init_inst) = (kc.comp.get(*input), kc.comp.get(*init));
        let f32_array = |s: &hlojit_runtime::Shape| s.as_array().is_some_and(|a| a.element_type == ElementType::F32);
        // The input must be a buffer (a bound parameter or operand, not a computed value).
        if !f32_array(&i.shape) || init_inst.opcode != Opcode::Constant || !f32_array(&init_inst.shape) {
            return Ok(None);
        }
        let Ok(init_bits) = init_inst.array_literal().map(|l| (l.get_f64(0) as f32).to_bits()) else { return Ok(None) };
        let Some(Input::Array(array)) = kc.bindings.get(input) else { return Ok(None) };
        let Some(output) = kc.outputs.get(*out) else { return Ok(None) };
        let plain = |a: &hlojit_runtime::ArrayShape| {
            let l = a.layout_or_default();
            l.tiles.is_empty() && l.minor_to_major.iter().rev().copied().eq(0..a.dims.len() as i64) && a.element_type == ElementType::F32
        };
        if !plain(&array.shape) || !plain(&output.shape) || output.shape.element_count() != rows {
            return Ok(None);
        }
        reductions.push([c(op), c(i64::from(init_bits)), int(array.ptr)?, int(output.ptr)?]);
    }
    // The fields of `RowReduceF32`, in order; unused reductions zero.
    let mut fields = vec![c(rows), c(cols), c(min_chunk(p, rows)), c(reductions.len() as i64)];
    for k in 0..MAX_ROW_REDUCTIONS {
        fields.extend(reductions.get(k).copied().unwrap_or([c(0); 4]));
    }
    // The status is always 0 (nothing to allocate), unused as for the other runtime kernels.
    let f = match isa {
        RowIsa::Avx2 => RuntimeFunction::RowReduceF32Avx2,
        RowIsa::Avx512 => RuntimeFunction::RowReduceF32Avx512,
    };
    cg.call_with_descriptor(f, &fields, "reduce.desc")?;
    Ok(Some(1))
}

/// Rows per thread-pool task, or 0 to stay on the calling thread: the thread-cost model's
/// decision for reading the rows once and adding or comparing each element per reduction.
fn min_chunk(p: &Plan, rows: i64) -> i64 {
    let elements: i64 = p.dims.iter().product();
    let ops = vec![Opcode::Reduce; p.groups.len()];
    let cost = crate::analysis::cost::KernelCost { bytes: 4 * elements * p.groups.len() as i64, flops: elements * p.groups.len() as i64, ops };
    let ns = crate::codegen::thread_cost::single_thread_ns(&cost, cost.bytes, elements);
    crate::codegen::thread_cost::split(rows, ns).map_or(0, |(_, chunk)| chunk)
}
