//! Lowering a dot onto the GEMM engine: operands become `[batch][rows][cols]` matrices over
//! their dimension groups (read through strides when the layout allows, generated
//! otherwise); the result is written in place when its column group is contiguous (or,
//! transposing the problem, its row group), and through a scratch block otherwise.

use super::batch_walk::{batch_split, BatchWalk, GroupLayout};
use super::config::{compute_type, Blocking};
use super::dims::{group_stride, logical_strides, DotDims};
use super::driver::{emit_gemm, Gemm, OutputMode};
use super::operand::{Captures, GroupMap, Operand, Source};
use super::pack::Conversion;
use crate::codegen::emitters::dot_epilogue::Epilogue;
use crate::codegen::kernel::KernelContext;
use crate::error::{Error, Result};
use crate::hlo::InstrId;
use hlojit_runtime::ElementType;

/// Dots with fewer multiply-adds than this run the plain loop nest: packing and task setup
/// would cost more than they save.
const GEMM_MIN_MACS: i64 = 16 * 1024;

/// A vector times a matrix of at most this many elements skips the GEMM engine: packing the
/// matrix costs as much as the product, which reads each matrix element once anyway.
const MATRIX_VECTOR_MAX_ELEMENTS: i64 = 1 << 20;

/// One row times a matrix that fits in cache (a batch-1 layer): the generic loop nest runs it
/// row-wise, streaming the matrix once without packing it.
fn is_small_matrix_vector(d: &DotDims) -> bool {
    d.b == 1 && d.m == 1 && d.k.saturating_mul(d.n) <= MATRIX_VECTOR_MAX_ELEMENTS
}

/// Whether a dot of these dimensions (of a type the engine computes) runs on the blocked GEMM
/// engine: enough work for packing and task setup to pay off.
pub fn on_gemm_engine(d: &DotDims) -> bool {
    let macs = d.b.saturating_mul(d.m).saturating_mul(d.n).saturating_mul(d.k);
    d.k > 0 && macs >= GEMM_MIN_MACS && !(d.m == 1 && d.n == 1) && !is_small_matrix_vector(d)
}

/// Emits the dot with the blocked GEMM engine when that pays off; `None` leaves it to the
/// generic loop nest.
/// With `epilogue`, the finished values go through it before they are stored.
pub fn try_emit(kc: &KernelContext<'_, '_>, lhs: InstrId, rhs: InstrId, d: &DotDims, epilogue: Option<&Epilogue>) -> Result<Option<i64>> {
    let out = &kc.outputs[0];
    let out_type = out.element_type();
    let Some(compute) = compute_type(out_type) else { return Ok(None) };
    if !on_gemm_engine(d) {
        return Ok(None);
    }
    let caps = Captures::new(kc, 2)?;
    let (gb, gm, gn) = d.out_groups();
    let out_dims = &out.shape.dims;
    let strides = logical_strides(&out.shape);
    let (lhs_strides, rhs_strides) = (buffer_strides(&caps, lhs), buffer_strides(&caps, rhs));
    let (lhs_dims, rhs_dims) = (kc.comp.get(lhs).shape.dims(), kc.comp.get(rhs).shape.dims());
    let split = batch_split(&[
        lhs_strides.as_deref().map(|s| (s, lhs_dims, &d.lhs_batch[..])),
        rhs_strides.as_deref().map(|s| (s, rhs_dims, &d.rhs_batch[..])),
        strides.as_deref().map(|s| (s, &out_dims[..], &gb[..])),
    ]);
    let a = operand(kc, &caps, lhs, lhs_strides.as_deref(), [&d.lhs_batch, &d.lhs_free, &d.lhs_contracting], split)?;
    let b = operand(kc, &caps, rhs, rhs_strides.as_deref(), [&d.rhs_batch, &d.rhs_contracting, &d.rhs_free], split)?;

    let with_sizes = |g: &[usize]| g.iter().map(|&x| (x, out_dims[x])).collect::<Vec<_>>();
    let map = GroupMap { rank: out_dims.len(), batch: with_sizes(&gb), row: with_sizes(&gm), col: with_sizes(&gn) };
    let stride = |g: &[usize]| strides.as_ref().and_then(|s| group_stride(s, out_dims, g));
    let sb = strides.as_deref().and_then(|s| BatchWalk::of((s, out_dims, &gb), split));
    let (sm, sn) = (stride(&gm), stride(&gn));
    let same_type = compute == out_type;
    let unit = |s: Option<i64>, extent: i64| s == Some(1) || (s.is_some() && extent == 1);
    let direct_normal = same_type && sb.is_some() && sm.is_some() && unit(sn, d.n);
    let direct_swapped = same_type && sb.is_some() && sn.is_some() && unit(sm, d.m);
    let lanes = (kc.cg.simd_bytes as i64 / compute.byte_size() as i64).max(1);
    // The vector dimension should be the wide one.
    let prefer_swap = d.n < lanes && d.m > d.n;
    // A whole-row epilogue needs regions of whole rows of the dot, not of its transpose.
    let whole_rows = epilogue.is_some_and(|e| e.rows.is_some());
    let swap = if whole_rows {
        false
    } else if direct_normal && direct_swapped {
        prefer_swap
    } else if direct_normal || direct_swapped {
        direct_swapped
    } else {
        prefer_swap
    };
    let (a, b, m, n) = if swap { (b.transposed(), a.transposed(), d.n, d.m) } else { (a, b, d.m, d.n) };
    let gemm_map = if swap { map.transposed() } else { map.clone() };
    let out_mode = match (swap, sb, sm, sn) {
        (false, Some(batch), Some(row), _) if direct_normal => OutputMode::Direct { batch, row },
        (true, Some(batch), _, Some(row)) if direct_swapped => OutputMode::Direct { batch, row },
        (false, ..) => OutputMode::Staged { map },
        (true, ..) => OutputMode::Staged { map: map.transposed() },
    };
    // bf16 x bf16 runs as bf16 pairs where the target multiplies them natively.
    let pairs = kc.cg.avx512_bf16
        && kc.cg.simd_bytes == 64
        && compute == ElementType::F32
        && a.ty == ElementType::BF16
        && b.ty == ElementType::BF16;
    let g = Gemm {
        batch: d.b,
        m,
        n,
        k: d.k,
        a,
        b,
        out: out_mode,
        conv: Conversion { out: out_type, compute },
        blocking: if pairs {
            Blocking::bf16_pairs(kc.cg.simd_bytes as i64, n)
        } else {
            let bytes = compute.byte_size() as i64;
            Blocking::new(bytes, kc.cg.simd_bytes as i64, n).deepened(bytes, m, d.k)
        },
        pairs,
        epilogue: epilogue.map(|e| (e.clone(), gemm_map)),
    };
    emit_gemm(kc, &caps, &g).map(Some)
}

/// Whether `dot` (in `comp`) is likely to call the runtime's precompiled GEMM or strip kernel
/// on a target that has them: large enough for either (not a small matrix times a vector,
/// which the generated loop nest streams), and reading both operands where they lie and
/// storing its result directly, as those take them: each operand a buffer (a kernel's or a
/// fusion's parameter) whose row and column groups each walk with one stride and its batch
/// group with one or two (`batch_walk.rs`, split alike in all three), and the result's groups
/// too, its columns (or rows) contiguous. A guess made before lowering, from the layouts the
/// shapes carry; lowering decides.
pub fn likely_precompiled(comp: &crate::hlo::Computation, dot: &crate::hlo::Instruction, in_fusion: bool) -> bool {
    let [lhs, rhs] = dot.operands[..] else { return false };
    let Some(out) = dot.shape.as_array() else { return false };
    let (l, r) = (comp.get(lhs), comp.get(rhs));
    let (Some(ls), Some(rs)) = (l.shape.as_array(), r.shape.as_array()) else { return false };
    let Ok(d) = DotDims::new(dot.attrs.dot_dimension_numbers(), &ls.dims, &rs.dims) else { return false };
    let macs = d.b.saturating_mul(d.m).saturating_mul(d.n).saturating_mul(d.k);
    if macs < GEMM_MIN_MACS.max(crate::codegen::emitters::dot_strips::PRECOMPILED_MIN_MACS) || is_small_matrix_vector(&d) {
        return false;
    }
    let buffer = |i: &crate::hlo::Instruction| !in_fusion || i.opcode == crate::hlo::Opcode::Parameter;
    let (gb, gm, gn) = d.out_groups();
    let (l_strides, r_strides, out_strides) = (logical_strides(ls), logical_strides(rs), logical_strides(out));
    fn layout<'a>(s: &'a Option<Vec<i64>>, dims: &'a [i64], g: &'a [usize]) -> Option<GroupLayout<'a>> {
        s.as_deref().map(|s| (s, dims, g))
    }
    let split = batch_split(&[layout(&l_strides, &ls.dims, &d.lhs_batch), layout(&r_strides, &rs.dims, &d.rhs_batch), layout(&out_strides, &out.dims, &gb)]);
    let walks = |s: &Option<Vec<i64>>, dims: &[i64], groups: [&[usize]; 3]| s.as_deref().and_then(|s| matrix_walk(s, dims, groups, split)).is_some();
    let unit = |g: &[usize]| out_strides.as_ref().and_then(|s| group_stride(s, &out.dims, g)).is_some_and(|s| s == 1 || g.iter().map(|&x| out.dims[x]).product::<i64>() == 1);
    buffer(l)
        && buffer(r)
        && walks(&l_strides, &ls.dims, [&d.lhs_batch, &d.lhs_free, &d.lhs_contracting])
        && walks(&r_strides, &rs.dims, [&d.rhs_batch, &d.rhs_contracting, &d.rhs_free])
        && walks(&out_strides, &out.dims, [&gb, &gm, &gn])
        && (unit(&gn) || unit(&gm))
}

/// How a matrix over the dimension groups `[batch, row, col]` of an array with element
/// `strides` is walked: its batches split after `split` dimensions, rows and columns each with
/// one stride; `None` if its layout does not allow that.
pub(crate) fn matrix_walk(strides: &[i64], dims: &[i64], [batch, row, col]: [&[usize]; 3], split: usize) -> Option<(BatchWalk, i64, i64)> {
    Some((BatchWalk::of((strides, dims, batch), split)?, group_stride(strides, dims, row)?, group_stride(strides, dims, col)?))
}

/// The element strides of a buffer the kernel binds `id` to (untiled), if it binds one.
fn buffer_strides(caps: &Captures, id: InstrId) -> Option<Vec<i64>> {
    caps.slot_of(id)?;
    logical_strides(&caps.array_of(id)?.shape)
}

/// Operand `id` as a matrix over its batch, row and column dimension groups: read where it
/// lies if it is a buffer with element `strides` that allow it (batches split after `split`
/// dimensions), generated otherwise.
fn operand(kc: &KernelContext, caps: &Captures, id: InstrId, strides: Option<&[i64]>, groups: [&[usize]; 3], split: usize) -> Result<Operand> {
    let inst = kc.comp.get(id);
    let ty = inst.shape.element_type().ok_or_else(|| Error::Internal(format!("{}: dot operand is not an array", inst.name)))?;
    let dims = inst.shape.dims();
    let [batch, row, col] = groups;
    let size = |g: &[usize]| g.iter().map(|&x| dims[x]).product::<i64>();
    let (rows, cols) = (size(row), size(col));
    let walk = strides.and_then(|s| matrix_walk(s, dims, groups, split));
    if let (Some(slot), Some((batch, row, col))) = (caps.slot_of(id), walk) {
        return Ok(Operand { source: Source::Strided { slot, batch, row, col }, ty, rows, cols });
    }
    let with_sizes = |g: &[usize]| g.iter().map(|&x| (x, dims[x])).collect::<Vec<_>>();
    let map = GroupMap { rank: dims.len(), batch: with_sizes(batch), row: with_sizes(row), col: with_sizes(col) };
    Ok(Operand { source: Source::Generated { id, map }, ty, rows, cols })
}
