//! Softmax over the minor dimension of a row-major f32 array, as JAX writes it
//! (`exp(x - max(x)) * (1 / sum(exp(x - max(x))))` after the simplifier), run by the runtime's
//! precompiled kernel (`hlojit_runtime::kernels::rows`) instead of a generated row loop.
//!
//! Why: a module of this one fusion otherwise spends ~11 ms CPU in LLVM here (optimization
//! 3.5, machine code 7-8) on two small functions — its whole compile is LLVM's — where XLA:CPU
//! hands the fusion to YNNPACK and compiles in ~9 ms. With the call, the module runs as a
//! program of runtime calls (`backend/library_program.rs`) and LLVM never runs.
//!
//! The runtime kernel repeats the generated kernel's arithmetic step for step (see its
//! docs) with LLVM's vector width for the target (`row_isa.rs`: 8 lanes on AVX2 and Intel's
//! AVX-512 CPUs, 16 on AMD's) and rows of a multiple of four vectors, at least eight;
//! anything else keeps the generated kernel. `HLOJIT_GENERATED_ROWS=1` forces the generated
//! kernel (for comparisons).

use crate::codegen::elemental::Input;
use crate::codegen::kernel::KernelContext;
use crate::codegen::reducer::associative_op;
use crate::codegen::runtime_abi::RuntimeFunction;
use crate::error::Result;
use crate::hlo::{Computation, InstrId, Instruction, Module, Opcode};
use super::row_isa::{any_accepts_row, row_isa};
use hlojit_runtime::kernels::rows::RowIsa;
use hlojit_runtime::{ArrayShape, ElementType};

/// The fused parameter a softmax fusion rooted at `root` reads, when `comp` computes exactly
/// a softmax of it over its minor dimension in the form the runtime kernel reproduces.
pub fn softmax_input(module: &Module, comp: &Computation, root: InstrId) -> Option<InstrId> {
    let get = |id: InstrId| comp.get(id);
    let r = get(root);
    // Shapes are asked with `as_array`: roots and operands may be tuples (variadic reduces).
    let x = r.shape.as_array()?;
    let rank = x.dims.len();
    if r.opcode != Opcode::Multiply || x.element_type != ElementType::F32 || rank == 0 || !row_major(x) {
        return None;
    }
    let cols = x.dims[rank - 1];
    // Row lengths a kernel repeats the generated code for (the target's is checked when
    // emitting); at least one row.
    if !any_accepts_row(cols) || x.element_count() == 0 {
        return None;
    }
    let outer: Vec<i64> = (0..rank as i64 - 1).collect();
    // multiply(e, broadcast(divide(broadcast(1), reduce_add(e, 0)))), e = exp(x - broadcast(max)).
    let (e, scale) = (get(r.operands[0]), get(r.operands[1]));
    let recip = broadcast_of(comp, scale, &outer)?;
    if recip.opcode != Opcode::Divide || !is_broadcast_constant(comp, get(recip.operands[0]), 1.0) {
        return None;
    }
    let sum = get(recip.operands[1]);
    if !is_row_reduce(module, comp, sum, Opcode::Add, 0.0, rank) || sum.operands[0] != r.operands[0] {
        return None;
    }
    if e.opcode != Opcode::Exp {
        return None;
    }
    let diff = get(e.operands[0]);
    if diff.opcode != Opcode::Subtract {
        return None;
    }
    let param = diff.operands[0];
    let p = get(param);
    if p.opcode != Opcode::Parameter || !p.shape.as_array().is_some_and(|a| row_major(a) && a.dims == x.dims) {
        return None;
    }
    let mut max = broadcast_of(comp, get(diff.operands[1]), &outer)?;
    // maximum(reduce_max(x), broadcast(-inf)) is reduce_max(x) itself, bit for bit.
    if max.opcode == Opcode::Maximum && is_broadcast_constant(comp, get(max.operands[1]), f64::NEG_INFINITY) {
        max = get(max.operands[0]);
    }
    (is_row_reduce(module, comp, max, Opcode::Maximum, f64::NEG_INFINITY, rank) && max.operands[0] == param).then_some(param)
}

/// Whether the shape's layout is the plain row-major one (no tiles).
fn row_major(a: &ArrayShape) -> bool {
    let layout = a.layout_or_default();
    layout.tiles.is_empty() && layout.minor_to_major.iter().rev().copied().eq(0..a.dims.len() as i64)
}

/// The operand of `b` when it broadcasts it along the minor dimension (`dimensions` = the
/// outer ones).
fn broadcast_of<'c>(comp: &'c Computation, b: &'c Instruction, outer: &[i64]) -> Option<&'c Instruction> {
    (b.opcode == Opcode::Broadcast && b.attrs.dimensions.as_deref() == Some(outer)).then(|| comp.get(b.operands[0]))
}

/// Whether `i` is an f32 scalar constant of exactly `value` (sign of zero included), or a
/// broadcast of one.
fn is_broadcast_constant(comp: &Computation, i: &Instruction, value: f64) -> bool {
    let c = if i.opcode == Opcode::Broadcast { comp.get(i.operands[0]) } else { i };
    c.opcode == Opcode::Constant
        && c.shape.as_array().is_some_and(|a| a.dims.is_empty() && a.element_type == ElementType::F32)
        && c.array_literal().is_ok_and(|l| l.get_f64(0).to_bits() == value.to_bits())
}

/// Whether `i` reduces an f32 array of `rank` over its minor dimension with `op` from `init`.
fn is_row_reduce(module: &Module, comp: &Computation, i: &Instruction, op: Opcode, init: f64, rank: usize) -> bool {
    i.opcode == Opcode::Reduce
        && i.operands.len() == 2
        && i.attrs.dimensions.as_deref() == Some(&[rank as i64 - 1][..])
        && i.to_apply().is_some_and(|c| associative_op(module, c) == Some(op))
        && is_broadcast_constant(comp, comp.get(i.operands[1]), init)
        && i.shape.as_array().is_some_and(row_major)
}

/// Emits the runtime call for a softmax fusion when the target has the kernel; `None` (nothing
/// emitted) otherwise. Returns the parallel extent: 1, the runtime splits the rows itself.
pub fn emit(kc: &KernelContext) -> Result<Option<i64>> {
    let cg = kc.cg;
    let Some(isa) = row_isa(cg) else { return Ok(None) };
    if kc.outputs.len() != 1 {
        return Ok(None);
    }
    let Some(param) = softmax_input(kc.module, kc.comp, kc.root) else { return Ok(None) };
    let Some(Input::Array(input)) = kc.bindings.get(&param) else { return Ok(None) };
    let out = &kc.outputs[0];
    if !row_major(&out.shape) || !row_major(&input.shape) {
        return Ok(None);
    }
    let cols = out.shape.dims[out.shape.dims.len() - 1];
    if !isa.accepts_row(cols) {
        return Ok(None);
    }
    let rows = out.shape.element_count() / cols;
    let int = |p| cg.b.build_ptr_to_int(p, cg.i64(), "");
    let c = |v: i64| cg.const_i64(v);
    // The fields of `SoftmaxRowsF32`, in order.
    // Streamed once the output outgrows the cache: the kernel's stores then come from a row in
    // L1, so nothing is staged and the arithmetic is no reason to keep them cached.
    let stream = cg.x86 && out.byte_size() >= crate::codegen::streaming_stores::MIN_OUTPUT_BYTES;
    let fields = [c(rows), c(cols), int(input.ptr)?, int(out.ptr)?, c(min_chunk(kc, rows, cols)), c(i64::from(stream))];
    // Non-zero only when a scratch row could not be allocated (recorded for the caller).
    let f = match isa {
        RowIsa::Avx2 => RuntimeFunction::SoftmaxRowsF32Avx2,
        RowIsa::Avx512 => RuntimeFunction::SoftmaxRowsF32Avx512,
    };
    cg.call_with_descriptor(f, &fields, "softmax.desc")?;
    cg.note_kernel_may_fail();
    Ok(Some(1))
}

/// Rows per thread-pool task, or 0 to stay on the calling thread: the thread-cost model's
/// decision for the generated kernel's work (one exponential and a few flops per element,
/// the array read and written).
fn min_chunk(kc: &KernelContext, rows: i64, cols: i64) -> i64 {
    let elements = rows * cols;
    let ops: Vec<Opcode> = kc.comp.instructions.iter().map(|i| i.opcode).filter(|o| *o != Opcode::Parameter).collect();
    let cost = crate::analysis::cost::KernelCost { bytes: 2 * 4 * elements, flops: 5 * elements, ops };
    let ns = crate::codegen::thread_cost::single_thread_ns(&cost, cost.bytes, elements);
    crate::codegen::thread_cost::split(rows, ns).map_or(0, |(_, chunk)| chunk)
}

#[cfg(test)]
#[path = "softmax_rows_tests.rs"]
mod tests;
