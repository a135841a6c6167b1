//! Dots with few result rows (a recurrent step of a batch of 16 sequences times its weight
//! matrix, a batch-1 layer): every row of A against one strip of B's columns at once, with the
//! strip's sums of all rows in registers while the contracting dimension streams by. B is
//! read where it lies, once per dot, never packed. For these shapes the packed GEMM spends
//! more time packing B than multiplying (B is as large as the whole problem's reuse allows),
//! and inside a loop it would pack the same weights on every iteration.
//!
//! Applies when the result and B have the columns contiguous, A is any strided matrix, and
//! all three are in memory in the compute type (f32 or f64). Each result element sums its
//! products in contracting order from zero with fused multiply-adds, like the GEMM's
//! micro-kernel.

use super::dot_epilogue::Epilogue;
use super::gemm::batch_walk::{batch_split, BatchWalk};
use super::gemm::dims::{logical_strides, DotDims};
use super::gemm::dot::matrix_walk;
use super::gemm::operand::GroupMap;
use super::gemm::loops::scalar_loop;
use super::gemm::microkernel::vector_type;
use crate::codegen::elemental::Input;
use crate::codegen::runtime_abi::RuntimeFunction;
use crate::codegen::kernel::KernelContext;
use crate::codegen::vectors::{lane_mask, masked_load, splat};
use crate::error::Result;
use crate::hlo::InstrId;
use hlojit_runtime::kernels::dot_strips::{strip_block, strip_units};
use hlojit_runtime::ElementType;
use inkwell::values::{IntValue, PointerValue, VectorValue};

/// Vector registers of the target: 32 with AVX-512, 16 with AVX2 or SSE.
fn vector_registers(simd_bytes: u32) -> i64 {
    if simd_bytes >= 64 {
        32
    } else {
        16
    }
}

/// The register block of a strip: `(rows, vectors)`, the result rows whose sums are held at once
/// and the vectors of columns per row. Each contracting step loads the block's `vectors` of B
/// once per row block and broadcasts every row's element of A; the block's multiply-adds are
/// `rows * vectors`. The choice minimizes loads per multiply-add over all `m` rows (a last,
/// partial row block reloads B too) with every value in a register: the sums, B's vectors when
/// more than one row reuses them (a single row takes them as memory operands) and one broadcast,
/// leaving one register spare. Measured on Zen 3 (AVX2) for the LSTM step (16 x 256 x 1024):
/// 8 rows x 1 vector (the old choice, 1.13 loads per FMA) 0.17-0.19 ms, 4 x 3 (16 registers,
/// none spare) 0.13-0.14 ms, 6 x 2 (0.69 loads per FMA) 0.11-0.14 ms, 3 x 4 (17 registers:
/// spills) 0.22-0.25 ms.
fn register_block(m: i64, column_vectors: i64, simd_bytes: u32) -> (i64, i64) {
    let usable = vector_registers(simd_bytes) - 1;
    let mut best = (1, 1);
    let mut best_cost = f64::INFINITY;
    for rows in 1..=m.min(usable) {
        for vectors in 1..=column_vectors.clamp(1, 8) {
            let held_b = if rows > 1 { vectors } else { 0 };
            if rows * vectors + held_b + 1 > usable {
                break;
            }
            let blocks = (m + rows - 1) / rows;
            let cost = (blocks * vectors + m) as f64 / (m * vectors) as f64;
            // Ties go to the wider strip (fewer strips, less loop overhead).
            if cost < best_cost - 1e-9 || (cost <= best_cost + 1e-9 && rows * vectors > best.0 * best.1) {
                best = (rows, vectors);
                best_cost = cost;
            }
        }
    }
    best
}

/// Dots with fewer multiply-adds keep the generated kernel. Those are latency-bound chains
/// of a few dozen FMAs that LLVM, with the kernel inlined into its loop body, overlaps with
/// the neighbouring kernels' chains; a call (some 12 ns, and a window of the CPU's reordering
/// spent on it) made rnn_scan's step (two dots of 2K and 4K multiply-adds) 155 -> 205 ns on
/// the Zen 4. Their generated code is small, the compile time it costs too.
pub(crate) const PRECOMPILED_MIN_MACS: i64 = 1 << 15;

/// The runtime's strip kernel for f32 on this target and its lanes, unless the generated
/// kernel is asked for (`HLOJIT_GENERATED_GEMM`). It sums in the same order with the same
/// fused multiply-adds, so the same bits; f64 and targets without FMA keep the generated one.
fn precompiled(cg: &crate::codegen::context::Codegen, ty: ElementType) -> Option<(RuntimeFunction, i64)> {
    if ty != ElementType::F32 || !cg.x86 || super::gemm::precompiled::generated_forced() {
        return None;
    }
    match cg.simd_bytes {
        64 => Some((RuntimeFunction::DotStripsF32Avx512, 16)),
        32 if cg.avx2 && cg.fma => Some((RuntimeFunction::DotStripsF32Avx2, 8)),
        _ => None,
    }
}

/// Dots with more result rows take the packed GEMM, whose register tiles reuse each loaded
/// vector of B for more rows.
pub(crate) const MAX_ROWS: i64 = 16;


/// Where a matrix lives: its buffer, how its batches are walked (`batch_walk.rs`) and the
/// element strides of its rows and columns.
struct Strided<'ctx> {
    ptr: PointerValue<'ctx>,
    batch: BatchWalk,
    row: i64,
    col: i64,
}

/// Matrix views of the operands and the result over their (batch, row, column) dimension
/// groups, the batches split alike in all three, if their layouts allow.
fn strided<'ctx>(views: [(&crate::codegen::array::IrArray<'ctx>, [&[usize]; 3]); 3]) -> Option<[Strided<'ctx>; 3]> {
    let strides = views.map(|(array, _)| logical_strides(&array.shape));
    let layouts: Vec<_> = views.iter().zip(&strides).map(|((array, groups), s)| s.as_deref().map(|s| (s, &array.shape.dims[..], groups[0]))).collect();
    let split = batch_split(&layouts);
    let view = |i: usize| -> Option<Strided<'ctx>> {
        let (array, groups) = views[i];
        let (batch, row, col) = matrix_walk(strides[i].as_deref()?, &array.shape.dims, groups, split)?;
        Some(Strided { ptr: array.ptr, batch, row, col })
    };
    Some([view(0)?, view(1)?, view(2)?])
}

fn bound_array<'a, 'ctx>(kc: &'a KernelContext<'_, 'ctx>, id: InstrId) -> Option<&'a crate::codegen::array::IrArray<'ctx>> {
    match kc.bindings.get(&id) {
        Some(Input::Array(a)) => Some(a),
        _ => None,
    }
}

/// Emits the dot as row strips when it has the shape and layouts for them; `None` otherwise.
/// With `epilogue`, each strip of the kernel's units goes through it once all its sums are
/// stored, while it is still in cache.
pub fn try_emit<'ctx>(kc: &KernelContext<'_, 'ctx>, lhs: InstrId, rhs: InstrId, d: &DotDims, epilogue: Option<&Epilogue>) -> Result<Option<i64>> {
    let cg = kc.cg;
    let out = &kc.outputs[0];
    let ty = out.element_type();
    if !matches!(ty, ElementType::F32 | ElementType::F64) {
        return Ok(None);
    }
    // Its regions are strips of columns; a whole-row epilogue goes to the GEMM engine.
    if epilogue.is_some_and(|e| e.rows.is_some()) {
        return Ok(None);
    }
    let lanes = (cg.simd_bytes as i64 / ty.byte_size() as i64).max(1);
    let macs = d.b.saturating_mul(d.m).saturating_mul(d.n).saturating_mul(d.k);
    // A product with few columns laid out column by column (a classifier's weight gradient
    // `g^T h` with its transpose folded into the dot: 1024 x 10 in a {0,1} layout) is
    // computed transposed, `C^T = B^T A^T`, whose rows are the few ones: its operand is then
    // read where it lies instead of packed for ten columns that fill no register tile. Its
    // strips would be the result's rows, which an epilogue does not take.
    let transposed = d.m > MAX_ROWS && d.n <= MAX_ROWS && epilogue.is_none();
    let (m, n) = if transposed { (d.n, d.m) } else { (d.m, d.n) };
    // No lower bound on the work: measured in a 20,000-step loop on Zen 3, a strip is never
    // slower than the plain loop nest (1 x 8 x 8: 0.26 ms both) and faster from a thousand
    // multiply-adds on (4 x 16 x 16: 0.51 vs 0.97 ms, 1 x 32 x 64 in rnn_scan: the plain
    // nest's row of sums lives in memory, a strip's in registers).
    if m > MAX_ROWS || n < lanes || d.k == 0 {
        return Ok(None);
    }
    let (Some(la), Some(ra)) = (bound_array(kc, lhs), bound_array(kc, rhs)) else { return Ok(None) };
    if la.element_type() != ty || ra.element_type() != ty {
        return Ok(None);
    }
    let (gb, gm, gn) = d.out_groups();
    let views = if transposed {
        [(ra, [&d.rhs_batch[..], &d.rhs_free, &d.rhs_contracting]), (la, [&d.lhs_batch[..], &d.lhs_contracting, &d.lhs_free]), (out, [&gb[..], &gn, &gm])]
    } else {
        [(la, [&d.lhs_batch[..], &d.lhs_free, &d.lhs_contracting]), (ra, [&d.rhs_batch[..], &d.rhs_contracting, &d.rhs_free]), (out, [&gb[..], &gm, &gn])]
    };
    let Some([a, b, c]) = strided(views) else { return Ok(None) };
    // One numbering of the batches for all three.
    let inner_count = c.batch.inner_count;
    if b.col != 1 || c.col != 1 || a.batch.inner_count != inner_count || b.batch.inner_count != inner_count {
        return Ok(None);
    }
    kc.work_elements.set(Some(macs / 8));
    if let Some((f, lanes)) = precompiled(cg, ty).filter(|_| macs >= PRECOMPILED_MIN_MACS) {
        let int = |p| cg.b.build_ptr_to_int(p, cg.i64(), "");
        let num = |v: i64| cg.const_i64(v);
        // The fields of `DotStripsF32`, in order.
        let block = strip_block(m, n, lanes);
        #[rustfmt::skip]
        let fields = [
            num(d.b), num(inner_count), num(m), num(n), num(d.k),
            int(a.ptr)?, num(a.batch.outer), num(a.batch.inner), num(a.row), num(a.col),
            int(b.ptr)?, num(b.batch.outer), num(b.batch.inner), num(b.row),
            int(c.ptr)?, num(c.batch.outer), num(c.batch.inner), num(c.row),
            num(block.rows), num(block.vectors),
        ];
        let desc = cg.descriptor(&fields, "dot.strips.desc")?;
        cg.call_void(cg.runtime(f)?, &[desc.into(), kc.begin.into(), kc.end.into()])?;
        if let Some(ep) = epilogue {
            finish_strips(kc, d, ep, block.vectors * lanes)?;
        }
        return Ok(Some(strip_units(d.b, m, n, lanes)));
    }
    cg.mark_generated_product();

    // Rows whose sums are in registers at once (more rows are taken a block at a time, each
    // block streaming the strip of B again, from L1) and vectors per strip.
    let (block_rows, vectors) = register_block(m, (n + lanes - 1) / lanes, cg.simd_bytes);
    let width = vectors * lanes;
    let full = n / width;
    let tail = n % width;
    let strips = full + i64::from(tail > 0);
    let units = d.b * strips;

    let elem = cg.value_type(ty);
    let vt = vector_type(elem, lanes as u32)?;
    let align = cg.i32().const_int(ty.byte_size() as u64, false);
    let accs: Vec<PointerValue> =
        (0..block_rows * vectors).map(|_| cg.entry_alloca(vt.into(), "dot.strip.acc")).collect::<Result<_>>()?;
    let mul = |x: IntValue<'ctx>, s: i64| cg.b.build_int_nsw_mul(x, cg.const_i64(s), "");
    let add = |x: IntValue<'ctx>, y: IntValue<'ctx>| cg.b.build_int_nsw_add(x, y, "");

    // Rows `rows` of one strip of `width` columns from column `j0`; `masks` limit the last,
    // partial strip.
    let strip_rows = |batch: IntValue<'ctx>, j0: IntValue<'ctx>, masks: Option<&[VectorValue<'ctx>]>, rows: std::ops::Range<i64>| -> Result<()> {
        let a_base = cg.gep(elem, a.ptr, add(a.batch.offset(cg, batch)?, cg.const_i64(rows.start * a.row))?)?;
        let b_base = cg.gep(elem, b.ptr, add(b.batch.offset(cg, batch)?, j0)?)?;
        let c_base = cg.gep(elem, c.ptr, add(add(c.batch.offset(cg, batch)?, j0)?, cg.const_i64(rows.start * c.row))?)?;
        let rows = rows.end - rows.start;
        for acc in &accs[..(rows * vectors) as usize] {
            cg.b.build_store(*acc, vt.const_zero())?;
        }
        scalar_loop(cg, "dot.strip.k", cg.const_i64(0), cg.const_i64(d.k), |k| {
            let b_row = cg.gep(elem, b_base, mul(k, b.row)?)?;
            let bv: Vec<VectorValue> = (0..vectors)
                .map(|v| {
                    let at = cg.gep(elem, b_row, cg.const_i64(v * lanes))?;
                    match masks {
                        Some(m) => masked_load(cg, vt, at, align, m[v as usize]),
                        None => {
                            let load = cg.b.build_load(vt, at, "")?;
                            set_alignment(load, ty.byte_size() as u32);
                            Ok(load.into_vector_value())
                        }
                    }
                })
                .collect::<Result<_>>()?;
            let a_col = cg.gep(elem, a_base, mul(k, a.col)?)?;
            for i in 0..rows {
                let x = cg.b.build_load(elem, cg.gep(elem, a_col, cg.const_i64(i * a.row))?, "")?;
                let x = splat(cg, vt, x)?;
                for (v, bv) in bv.iter().enumerate() {
                    let slot = accs[(i * vectors) as usize + v];
                    let acc = cg.b.build_load(vt, slot, "")?;
                    let next = cg.call_intrinsic("llvm.fmuladd", &[vt.into()], &[x.into(), (*bv).into(), acc.into()])?;
                    cg.b.build_store(slot, next)?;
                }
            }
            Ok(())
        })?;
        let store = cg.intrinsic("llvm.masked.store", &[vt.into(), cg.ptr().into()])?;
        for i in 0..rows {
            for v in 0..vectors {
                let acc = cg.b.build_load(vt, accs[(i * vectors + v) as usize], "")?;
                let at = cg.gep(elem, c_base, cg.const_i64(i * c.row + v * lanes))?;
                match masks {
                    Some(m) => {
                        cg.call_void(store, &[acc.into(), at.into(), align.into(), m[v as usize].into()])?;
                    }
                    None => {
                        let st = cg.b.build_store(at, acc)?;
                        st.set_alignment(ty.byte_size() as u32).map_err(|e| crate::error::Error::Internal(e.to_string()))?;
                    }
                }
            }
        }
        Ok(())
    };
    let strip = |batch: IntValue<'ctx>, j0: IntValue<'ctx>, masks: Option<&[VectorValue<'ctx>]>| -> Result<()> {
        (0..m).step_by(block_rows as usize).try_for_each(|r0| strip_rows(batch, j0, masks, r0..(r0 + block_rows).min(m)))
    };

    scalar_loop(cg, "dot.strip", kc.begin, kc.end, |unit| {
        let batch = cg.b.build_int_signed_div(unit, cg.const_i64(strips), "")?;
        let s = cg.b.build_int_signed_rem(unit, cg.const_i64(strips), "")?;
        let j0 = mul(s, width)?;
        if tail == 0 {
            return strip(batch, j0, None);
        }
        let f = cg.function();
        let full_bb = cg.llvm.append_basic_block(f, "dot.strip.full");
        let tail_bb = cg.llvm.append_basic_block(f, "dot.strip.tail");
        let done_bb = cg.llvm.append_basic_block(f, "dot.strip.done");
        let is_full = cg.b.build_int_compare(inkwell::IntPredicate::SLT, s, cg.const_i64(full), "")?;
        cg.b.build_conditional_branch(is_full, full_bb, tail_bb)?;
        cg.b.position_at_end(full_bb);
        strip(batch, j0, None)?;
        cg.b.build_unconditional_branch(done_bb)?;
        cg.b.position_at_end(tail_bb);
        let masks: Vec<VectorValue> =
            (0..vectors).map(|v| lane_mask(cg, lanes, cg.const_i64(tail - v * lanes))).collect::<Result<_>>()?;
        strip(batch, j0, Some(&masks))?;
        cg.b.build_unconditional_branch(done_bb)?;
        cg.b.position_at_end(done_bb);
        Ok(())
    })?;
    if let Some(ep) = epilogue {
        finish_strips(kc, d, ep, width)?;
    }
    Ok(Some(units))
}

/// Runs `epilogue` over the strips of the kernel's units `[begin, end)`, each `width` columns
/// of every row of one batch, in the order they were computed.
fn finish_strips(kc: &KernelContext, d: &DotDims, epilogue: &Epilogue, width: i64) -> Result<()> {
    let cg = kc.cg;
    let out = &kc.outputs[0];
    let (gb, gm, gn) = d.out_groups();
    let with_sizes = |g: &[usize]| g.iter().map(|&x| (x, out.shape.dims[x])).collect::<Vec<_>>();
    let map = GroupMap { rank: out.shape.dims.len(), batch: with_sizes(&gb), row: with_sizes(&gm), col: with_sizes(&gn) };
    let strips = (d.n + width - 1) / width;
    let mut e = kc.elemental();
    scalar_loop(cg, "dot.strip.epilogue", kc.begin, kc.end, |unit| {
        let batch = cg.b.build_int_signed_div(unit, cg.const_i64(strips), "")?;
        let s = cg.b.build_int_signed_rem(unit, cg.const_i64(strips), "")?;
        let c0 = cg.b.build_int_nsw_mul(s, cg.const_i64(width), "")?;
        let c1 = cg.b.build_int_nsw_add(c0, cg.const_i64(width), "")?;
        let c1 = cg.clamp_i64(c1, c0, cg.const_i64(d.n))?;
        epilogue.emit_region(&mut e, out, &map, batch, cg.const_i64(0), cg.const_i64(d.m), c0, c1)
    })
}

fn set_alignment(v: inkwell::values::BasicValueEnum<'_>, align: u32) {
    use inkwell::values::BasicValue;
    if let Some(i) = v.as_instruction_value() {
        let _ = i.set_alignment(align);
    }
}

#[cfg(test)]
mod tests {
    use super::register_block;

    #[test]
    fn register_blocks_fit_the_registers_and_reuse_loads() {
        // AVX2: the LSTM step's 16 rows in blocks of 6 rows x 2 vectors (12 sums, 2 of B, a
        // broadcast: 15 of 16 registers).
        assert_eq!(register_block(16, 128, 32), (6, 2));
        // One row: B's vectors are memory operands, so eight sums fit.
        assert_eq!(register_block(1, 8, 32), (1, 8));
        assert_eq!(register_block(1, 100, 32), (1, 8));
        // Fewer columns than the registers allow: the strip is the whole row.
        assert_eq!(register_block(2, 2, 32).1, 2);
        for simd in [16, 32, 64] {
            let regs = if simd >= 64 { 32 } else { 16 };
            for m in 1..=16 {
                for cv in 1..=40 {
                    let (r, v) = register_block(m, cv, simd);
                    assert!(r >= 1 && r <= m && v >= 1 && v <= cv.clamp(1, 8), "{m} {cv} -> {r} {v}");
                    let held = if r > 1 { v } else { 0 };
                    assert!(r * v + held + 1 < regs, "{m} {cv} -> {r} {v} spills");
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "dot_strips_tests.rs"]
mod precompiled_tests;
