//! Layer normalization over the minor dimension of a row-major f32 array, in the form JAX
//! writes `(x - mean) * rsqrt(var + eps) * gamma + beta` with `var = mean((x - mean)^2)`, run
//! by the runtime's precompiled kernel (`hlojit_runtime::kernels::rows`) instead of a
//! generated row loop, for the reasons of `softmax_rows.rs` (XLA:CPU runs this fusion in
//! YNNPACK; LLVM took ~14 ms CPU of a ~15 ms compile here).
//!
//! The kernel repeats the generated one's arithmetic (see its docs) on the targets and row
//! lengths `row_isa.rs` and `RowIsa::accepts_row` name; the shape of the expression must be
//! exactly the one below (other groupings round differently and keep the generated kernel).

use super::row_isa::{any_accepts_row, row_isa};
use crate::codegen::elemental::Input;
use crate::codegen::kernel::KernelContext;
use crate::codegen::reducer::associative_op;
use crate::codegen::runtime_abi::RuntimeFunction;
use crate::error::Result;
use crate::hlo::{Computation, InstrId, Instruction, Module, Opcode};
use hlojit_runtime::kernels::rows::RowIsa;
use hlojit_runtime::{ArrayShape, ElementType};

/// What a matched layernorm reads: the fused parameters of x, gamma and beta, and the f32
/// constants scaling the two row sums and epsilon.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Layernorm {
    pub x: InstrId,
    pub gamma: InstrId,
    pub beta: InstrId,
    pub mean_scale: f32,
    pub var_scale: f32,
    pub epsilon: f32,
}

/// The layernorm `comp` computes at `root`, if it is exactly
/// `add(multiply(multiply(d, broadcast(rsqrt(add(sum(d * d) * s2, eps)))), broadcast(gamma)), broadcast(beta))`
/// with `d = x - broadcast(sum(x) * s1)`, sums over the minor dimension from +0, row vectors
/// possibly reshaped between `[rows]` and `[rows, 1]`.
pub fn layernorm(module: &Module, comp: &Computation, root: InstrId) -> Option<Layernorm> {
    let get = |id: InstrId| comp.get(id);
    let r = get(root);
    let x = r.shape.as_array()?;
    let rank = x.dims.len();
    if r.opcode != Opcode::Add || x.element_type != ElementType::F32 || rank < 2 || !row_major(x) {
        return None;
    }
    let cols = x.dims[rank - 1];
    if !any_accepts_row(cols) || x.element_count() == 0 {
        return None;
    }
    let outer: Vec<i64> = (0..rank as i64 - 1).collect();
    let minor = [rank as i64 - 1];
    let vector_param = |b: &Instruction| -> Option<InstrId> {
        let p = (b.opcode == Opcode::Broadcast && b.attrs.dimensions.as_deref() == Some(&minor[..])).then(|| b.operands[0])?;
        (get(p).opcode == Opcode::Parameter && get(p).shape.as_array().is_some_and(|a| a.dims == [cols] && row_major(a))).then_some(p)
    };
    let beta = vector_param(get(r.operands[1]))?;
    let scaled = get(r.operands[0]);
    if scaled.opcode != Opcode::Multiply {
        return None;
    }
    let gamma = vector_param(get(scaled.operands[1]))?;
    let normalized = get(scaled.operands[0]);
    if normalized.opcode != Opcode::Multiply {
        return None;
    }
    let d = normalized.operands[0];
    let rs = row_value(comp, get(normalized.operands[1]), &outer)?;
    if rs.opcode != Opcode::Rsqrt {
        return None;
    }
    let plus = strip(comp, get(rs.operands[0]));
    if plus.opcode != Opcode::Add {
        return None;
    }
    let epsilon = constant(comp, get(plus.operands[1]))?;
    let (squares, var_scale) = scaled_row_sum(module, comp, strip(comp, get(plus.operands[0])), rank)?;
    let sq = get(squares);
    if sq.opcode != Opcode::Multiply || sq.operands[0] != d || sq.operands[1] != d {
        return None;
    }
    let diff = get(d);
    if diff.opcode != Opcode::Subtract {
        return None;
    }
    let xp = diff.operands[0];
    let (summed, mean_scale) = scaled_row_sum(module, comp, row_value(comp, get(diff.operands[1]), &outer)?, rank)?;
    let p = get(xp);
    if summed != xp || p.opcode != Opcode::Parameter || !p.shape.as_array().is_some_and(|a| row_major(a) && a.dims == x.dims) {
        return None;
    }
    Some(Layernorm { x: xp, gamma, beta, mean_scale, var_scale, epsilon })
}

fn row_major(a: &ArrayShape) -> bool {
    let layout = a.layout_or_default();
    layout.tiles.is_empty() && layout.minor_to_major.iter().rev().copied().eq(0..a.dims.len() as i64)
}

/// `i` without reshapes (`[rows]` <-> `[rows, 1]` keep the row-major order of elements).
fn strip<'c>(comp: &'c Computation, mut i: &'c Instruction) -> &'c Instruction {
    while matches!(i.opcode, Opcode::Reshape | Opcode::Bitcast) && i.operands.len() == 1 {
        i = comp.get(i.operands[0]);
    }
    i
}

/// The per-row value `b` broadcasts along the minor dimension.
fn row_value<'c>(comp: &'c Computation, b: &'c Instruction, outer: &[i64]) -> Option<&'c Instruction> {
    (b.opcode == Opcode::Broadcast && b.attrs.dimensions.as_deref() == Some(outer)).then(|| strip(comp, comp.get(b.operands[0])))
}

/// An f32 scalar constant, or a broadcast (or reshape) of one.
fn constant(comp: &Computation, i: &Instruction) -> Option<f32> {
    let mut c = i;
    while matches!(c.opcode, Opcode::Broadcast | Opcode::Reshape) && c.operands.len() == 1 {
        c = comp.get(c.operands[0]);
    }
    let a = c.shape.as_array()?;
    if c.opcode != Opcode::Constant || a.element_type != ElementType::F32 || a.element_count() != 1 {
        return None;
    }
    c.array_literal().ok().map(|l| l.get_f64(0) as f32)
}

/// `multiply(sum, constant)` where `sum` adds the minor dimension of an f32 array of `rank`
/// from +0: the summed operand and the constant.
fn scaled_row_sum(module: &Module, comp: &Computation, i: &Instruction, rank: usize) -> Option<(InstrId, f32)> {
    if i.opcode != Opcode::Multiply {
        return None;
    }
    let scale = constant(comp, comp.get(i.operands[1]))?;
    let sum = strip(comp, comp.get(i.operands[0]));
    let plain_zero = |id: InstrId| constant(comp, comp.get(id)).is_some_and(|z| z.to_bits() == 0);
    let ok = sum.opcode == Opcode::Reduce
        && sum.operands.len() == 2
        && sum.attrs.dimensions.as_deref() == Some(&[rank as i64 - 1][..])
        && sum.to_apply().is_some_and(|c| associative_op(module, c) == Some(Opcode::Add))
        && plain_zero(sum.operands[1]);
    ok.then(|| (sum.operands[0], scale))
}

/// Emits the runtime call for a layernorm fusion when the target has the kernel; `None`
/// (nothing emitted) otherwise. Returns the parallel extent: 1, the runtime splits the rows.
pub fn emit(kc: &KernelContext) -> Result<Option<i64>> {
    let cg = kc.cg;
    let Some(isa) = row_isa(cg) else { return Ok(None) };
    if kc.outputs.len() != 1 {
        return Ok(None);
    }
    let Some(l) = layernorm(kc.module, kc.comp, kc.root) else { return Ok(None) };
    let array = |id| match kc.bindings.get(&id) {
        Some(Input::Array(a)) if row_major(&a.shape) => Some(a.ptr),
        _ => None,
    };
    let (Some(x), Some(gamma), Some(beta)) = (array(l.x), array(l.gamma), array(l.beta)) else { return Ok(None) };
    let out = &kc.outputs[0];
    if !row_major(&out.shape) {
        return Ok(None);
    }
    let cols = out.shape.dims[out.shape.dims.len() - 1];
    if !isa.accepts_row(cols) {
        return Ok(None);
    }
    let rows = out.shape.element_count() / cols;
    let int = |p| cg.b.build_ptr_to_int(p, cg.i64(), "");
    let c = |v: i64| cg.const_i64(v);
    let bits = |v: f32| c(i64::from(v.to_bits()));
    // The fields of `LayernormRowsF32`, in order.
    let fields = [
        c(rows),
        c(cols),
        int(x)?,
        int(gamma)?,
        int(beta)?,
        int(out.ptr)?,
        bits(l.mean_scale),
        bits(l.var_scale),
        bits(l.epsilon),
        c(min_chunk(kc, rows, cols)),
        // Streamed where the generated kernel would stream (outputs larger than the cache).
        c(i64::from(crate::codegen::streaming_stores::applies(kc, &kc.outputs))),
    ];
    // The status is always 0 (nothing to allocate), unused as for the other runtime kernels.
    let f = match isa {
        RowIsa::Avx2 => RuntimeFunction::LayernormRowsF32Avx2,
        RowIsa::Avx512 => RuntimeFunction::LayernormRowsF32Avx512,
    };
    cg.call_with_descriptor(f, &fields, "layernorm.desc")?;
    Ok(Some(1))
}

/// Rows per thread-pool task, or 0 to stay on the calling thread (the thread-cost model on
/// the kernel's work: the array read twice and written once, a few flops per element).
fn min_chunk(kc: &KernelContext, rows: i64, cols: i64) -> i64 {
    let elements = rows * cols;
    let ops: Vec<Opcode> = kc.comp.instructions.iter().map(|i| i.opcode).filter(|o| *o != Opcode::Parameter).collect();
    let cost = crate::analysis::cost::KernelCost { bytes: 2 * 4 * elements, flops: 7 * elements, ops };
    let ns = crate::codegen::thread_cost::single_thread_ns(&cost, cost.bytes, elements);
    crate::codegen::thread_cost::split(rows, ns).map_or(0, |(_, chunk)| chunk)
}
