//! Stable sorts by a 32-bit key along the minor dimension of row-major operands, run by the
//! runtime's `hlojit_rt_sort_rows` (`hlojit_runtime::kernels::sort_rows`) from a descriptor
//! instead of a generated key loop, sort call and gather: the keys the runtime computes are
//! f32 in total order (after JAX's canonicalization of NaNs and zeros, when the comparator
//! does it), s32 and u32, ascending or descending. A module that only sorts (`jnp.sort`,
//! `jnp.argsort`) then runs as a program of runtime calls: its ~11-20 ms of LLVM were the
//! whole compile, where XLA:CPU took ~21 ms. Other sorts keep `sort.rs`.

use super::sort_key::{recognize, KeyKind, KeyOrder};
use crate::codegen::elemental::Input;
use crate::codegen::kernel::KernelContext;
use crate::codegen::runtime_abi::RuntimeFunction;
use crate::error::Result;
use crate::hlo::{ComparisonDirection, ComparisonType, Computation, InstrId, Instruction, Module, Opcode};
use hlojit_runtime::kernels::sort_rows::{MAX_SORT_OPERANDS, SORT_KEY_F32, SORT_KEY_S32, SORT_KEY_U32};
use hlojit_runtime::{ArrayShape, ElementType};

/// What the runtime needs to know of a sort beyond its buffers.
pub struct RuntimeSort {
    key: KeyOrder,
    key_type: i64,
    /// f32 bits NaNs and zeros become before ordering, as the comparator's key expression says.
    nan: Option<u32>,
    zero: Option<u32>,
    rows: i64,
    n: i64,
}

/// The runtime sort of `sort` (an instruction of `comp`), when the runtime computes exactly
/// what the generated kernel would: stable, a recognised order on a 32-bit key whose
/// expression is the identity or a canonicalization of NaNs and zeros, at most
/// [`MAX_SORT_OPERANDS`] operands of whole-byte elements, all row-major and sorted along the
/// minor dimension.
pub fn runtime_sort(module: &Module, comp: &Computation, sort: &Instruction) -> Option<RuntimeSort> {
    if sort.opcode != Opcode::Sort || !sort.attrs.is_stable || sort.operands.is_empty() || sort.operands.len() > MAX_SORT_OPERANDS {
        return None;
    }
    let first = comp.get(sort.operands[0]).shape.as_array()?;
    let rank = first.dims.len();
    if rank == 0 || sort.attrs.dimensions.as_deref() != Some(&[rank as i64 - 1][..]) {
        return None;
    }
    let plain = |a: &ArrayShape| a.dims == first.dims && row_major(a) && a.element_type.bit_width() as usize == 8 * a.element_type.byte_size() && a.element_type.byte_size() <= 8;
    let operands_plain = sort.operands.iter().all(|&o| comp.get(o).shape.as_array().is_some_and(plain));
    let results_plain = match sort.shape.as_array() {
        Some(a) => plain(a),
        None => sort.shape.tuple_elements().is_some_and(|t| t.iter().all(|s| s.as_array().is_some_and(plain))),
    };
    if !operands_plain || !results_plain {
        return None;
    }
    let key = recognize(module, sort.to_apply()?, sort.operands.len())?;
    let key_type = match key.kind {
        KeyKind::FloatTotal(ElementType::F32) => SORT_KEY_F32,
        KeyKind::Signed(ElementType::S32) => SORT_KEY_S32,
        KeyKind::Unsigned(ElementType::U32) => SORT_KEY_U32,
        _ => return None,
    };
    let (nan, zero) = match key.key {
        None => (None, None),
        Some(expr) if key_type == SORT_KEY_F32 => canonicalization(module.computation(sort.to_apply()?), expr, 2 * key.operand)?,
        Some(_) => return None,
    };
    let n = first.dims[rank - 1];
    let rows = first.element_count() / n.max(1);
    // The runtime packs positions into 32 bits.
    (n <= u32::MAX as i64).then_some(RuntimeSort { key, key_type, nan, zero, rows, n })
}

/// The replacements of `expr`, a nest of `select(x != x, nan, ...)` and
/// `select(x == 0, zero, ...)` around parameter `param` (each at most once, IEEE compares,
/// f32 constants): JAX's comparators make NaNs one NaN and -0 +0 that way.
fn canonicalization(c: &Computation, expr: InstrId, param: usize) -> Option<(Option<u32>, Option<u32>)> {
    let is_param = |id: InstrId| c.get(id).opcode == Opcode::Parameter && c.get(id).attrs.parameter_number == Some(param as i64);
    let f32_constant = |id: InstrId| {
        let i = c.get(id);
        let a = i.shape.as_array()?;
        (i.opcode == Opcode::Constant && a.dims.is_empty() && a.element_type == ElementType::F32).then(|| i.array_literal().ok().map(|l| l.bits(0) as u32)).flatten()
    };
    let (mut nan, mut zero) = (None, None);
    let mut at = expr;
    while !is_param(at) {
        let s = c.get(at);
        if s.opcode != Opcode::Select {
            return None;
        }
        let (pred, on_true, rest) = (c.get(s.operands[0]), s.operands[1], s.operands[2]);
        let ieee = matches!(pred.attrs.comparison_type, None | Some(ComparisonType::Float));
        if pred.opcode != Opcode::Compare || !ieee {
            return None;
        }
        let (l, r) = (pred.operands[0], pred.operands[1]);
        let replacement = f32_constant(on_true)?;
        match pred.attrs.direction? {
            ComparisonDirection::Ne if is_param(l) && is_param(r) && nan.is_none() => nan = Some(replacement),
            ComparisonDirection::Eq if zero.is_none() && is_zero_compare(l, r, &is_param, &f32_constant) => zero = Some(replacement),
            _ => return None,
        }
        at = rest;
    }
    Some((nan, zero))
}

/// Whether `(l, r)` are the parameter and a zero constant of either sign, in either order.
fn is_zero_compare(l: InstrId, r: InstrId, is_param: &impl Fn(InstrId) -> bool, constant: &impl Fn(InstrId) -> Option<u32>) -> bool {
    let zero = |id: InstrId| constant(id).is_some_and(|b| b << 1 == 0);
    (is_param(l) && zero(r)) || (is_param(r) && zero(l))
}

fn row_major(a: &ArrayShape) -> bool {
    let layout = a.layout_or_default();
    layout.tiles.is_empty() && layout.minor_to_major.iter().rev().copied().eq(0..a.dims.len() as i64)
}

/// Emits the runtime call for the kernel's sort when [`runtime_sort`] applies; `None` (nothing
/// emitted) otherwise. The runtime splits the rows across threads itself.
pub fn try_emit(kc: &KernelContext) -> Result<Option<i64>> {
    let cg = kc.cg;
    let sort = kc.comp.get(kc.root);
    let Some(rs) = runtime_sort(kc.module, kc.comp, sort) else { return Ok(None) };
    if kc.outputs.len() != sort.operands.len() {
        return Ok(None);
    }
    let mut inputs = Vec::new();
    for &o in &sort.operands {
        match kc.bindings.get(&o) {
            Some(Input::Array(a)) if row_major(&a.shape) => inputs.push(a.ptr),
            _ => return Ok(None),
        }
    }
    if !kc.outputs.iter().all(|o| row_major(&o.shape)) {
        return Ok(None);
    }
    let int = |p| cg.b.build_ptr_to_int(p, cg.i64(), "");
    let c = |v: i64| cg.const_i64(v);
    let bits = |b: Option<u32>| c(i64::from(b.unwrap_or(0)));
    // The fields of `SortRows`, in order.
    let mut fields = vec![
        c(rs.rows),
        c(rs.n),
        c(rs.key_type),
        c(i64::from(rs.key.descending)),
        c(i64::from(rs.nan.is_some())),
        bits(rs.nan),
        c(i64::from(rs.zero.is_some())),
        bits(rs.zero),
        c(rs.key.operand as i64),
        c(min_chunk(kc, &rs)),
        c(inputs.len() as i64),
    ];
    for m in 0..MAX_SORT_OPERANDS {
        match (inputs.get(m), kc.outputs.get(m)) {
            (Some(&input), Some(out)) => fields.extend([int(input)?, int(out.ptr)?, c(out.element_type().byte_size() as i64)]),
            _ => fields.extend([c(0), c(0), c(0)]),
        }
    }
    // Non-zero only when the keys' scratch could not be allocated (recorded for the caller).
    cg.call_with_descriptor(RuntimeFunction::SortRows, &fields, "sort.desc")?;
    cg.note_kernel_may_fail();
    Ok(Some(1))
}

/// Rows per thread-pool task, or 0 to stay on the calling thread: the thread-cost model on a
/// radix sort's work (four passes over the packed keys, the operands read and written).
fn min_chunk(kc: &KernelContext, rs: &RuntimeSort) -> i64 {
    let elements = rs.rows * rs.n;
    let bytes = kc.outputs.iter().map(|o| 2 * o.byte_size()).sum::<i64>() + 8 * 16 * elements;
    let cost = crate::analysis::cost::KernelCost { bytes, flops: 16 * elements, ops: vec![Opcode::Sort] };
    let ns = crate::codegen::thread_cost::single_thread_ns(&cost, cost.bytes, elements);
    crate::codegen::thread_cost::split(rs.rows, ns).map_or(0, |(_, chunk)| chunk)
}
