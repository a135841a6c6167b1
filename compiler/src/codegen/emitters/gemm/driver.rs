//! The blocked GEMM: `C[b] = A[b] x B[b]` for `A: [batch][M][K]`, `B: [batch][K][N]`.
//!
//! Work is split into units of (batch, range of A strips); each unit packs its A rows once
//! per k block and B once per (k block, column block) into its own scratch, then runs the
//! micro-kernel over every (A strip, B strip) pair: the A strip stays in L1 while B strips
//! stream from the L2-sized packed block. Units are independent, so the kernel hands them to
//! the runtime's thread pool (`hlojit_rt_parallel_for`) with one part per thread for a single
//! batch and whole batches otherwise; small problems run on the calling thread.

use super::config::Blocking;
use super::microkernel::{microkernel, set_vector_attributes, ALayout};
use super::operand::{Captures, GroupMap, Operand};
use super::pack::{pack_strip, Conversion, Strip};
use crate::codegen::array::IrArray;
use crate::codegen::context::Codegen;
use crate::codegen::kernel::KernelContext;
use crate::codegen::loops::for_loop;
use crate::error::Result;
use inkwell::values::{FunctionValue, IntValue, PointerValue};
use inkwell::IntPredicate;

/// Below this many flops a GEMM runs on the calling thread.
const PARALLEL_MIN_FLOPS: f64 = 4.0e6;

/// Where the result tiles go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputMode {
    /// Straight into the result buffer (its element type is the compute type): element
    /// `(b, m, n)` at `b * batch + m * row + n`.
    Direct { batch: i64, row: i64 },
    /// Into a compute-type scratch block; finished rows are converted and stored at the
    /// result index `map` gives for `(b, m, n)`.
    Staged { map: GroupMap },
}

/// One GEMM problem.
#[derive(Clone, Debug)]
pub struct Gemm {
    pub batch: i64,
    pub m: i64,
    pub n: i64,
    pub k: i64,
    /// `[batch][m][k]`.
    pub a: Operand,
    /// `[batch][k][n]`.
    pub b: Operand,
    pub out: OutputMode,
    pub conv: Conversion,
    pub blocking: Blocking,
    /// bf16 operands multiplied as pairs with AVX512_BF16 (compute type f32).
    pub pairs: bool,
}

/// Emits the GEMM into the current kernel; returns the kernel's parallel extent (1: the GEMM
/// splits its work itself).
pub fn emit_gemm<'ctx>(kc: &KernelContext<'_, 'ctx>, caps: &Captures<'ctx>, g: &Gemm) -> Result<i64> {
    let cg = kc.cg;
    let base = cg.function().get_name().to_string_lossy().into_owned();
    let al = if g.pairs { ALayout::bf16_pairs(g.blocking.mr) } else { ALayout::packed(g.blocking.mr) };
    let uk = microkernel(cg, g.conv.compute, &g.blocking, al)?;
    let task = emit_task(kc, caps, g, uk, &format!("{base}.task"))?;
    let strips = ceil_div(g.m, g.blocking.mr);
    let flops = 2.0 * g.batch as f64 * g.m as f64 * g.n as f64 * g.k as f64;
    if flops < PARALLEL_MIN_FLOPS || g.batch * strips == 1 {
        let ctx = caps.store(cg, &[cg.const_i64(1)])?;
        cg.call_void(task, &[ctx.into(), cg.const_i64(0).into(), cg.const_i64(g.batch).into()])?;
        return Ok(1);
    }
    let threads_fn = cg.external("hlojit_rt_num_threads", cg.fn_type(Some(cg.i64().into()), &[]));
    let threads = cg.call(threads_fn, &[])?.into_int_value();
    let batch = cg.const_i64(g.batch);
    let parts = cg.b.build_int_signed_div(cg.b.build_int_nsw_add(threads, cg.const_i64(g.batch - 1), "")?, batch, "")?;
    let parts = cg.clamp_i64(parts, cg.const_i64(1), cg.const_i64(strips))?;
    let ctx = caps.store(cg, &[parts])?;
    let units = cg.b.build_int_nsw_mul(parts, batch, "units")?;
    let pf = cg.external(
        "hlojit_rt_parallel_for",
        cg.fn_type(None, &[cg.ptr().into(), cg.ptr().into(), cg.i64().into(), cg.i64().into()]),
    );
    let f = task.as_global_value().as_pointer_value();
    cg.call_void(pf, &[f.into(), ctx.into(), units.into(), cg.const_i64(1).into()])?;
    Ok(1)
}

fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

fn round_up(a: i64, b: i64) -> i64 {
    ceil_div(a, b) * b
}

fn min<'ctx>(cg: &Codegen<'ctx>, a: IntValue<'ctx>, b: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
    Ok(cg.call_intrinsic("llvm.smin", &[cg.i64().into()], &[a.into(), b.into()])?.into_int_value())
}

/// `void task(ptr ctx, i64 u0, i64 u1)`: runs work units `[u0, u1)`.
fn emit_task<'ctx>(kc: &KernelContext<'_, 'ctx>, caps: &Captures<'ctx>, g: &Gemm, uk: FunctionValue<'ctx>, name: &str) -> Result<FunctionValue<'ctx>> {
    let cg = kc.cg;
    let saved = cg.b.get_insert_block();
    let fn_type = cg.fn_type(None, &[cg.ptr().into(), cg.i64().into(), cg.i64().into()]);
    let f = cg.add_function(name, fn_type, false);
    set_vector_attributes(cg, f);
    let entry = cg.llvm.append_basic_block(f, "entry");
    cg.b.position_at_end(entry);
    let ctx = f.get_nth_param(0).expect("ctx").into_pointer_value();
    let u0 = f.get_nth_param(1).expect("begin").into_int_value();
    let u1 = f.get_nth_param(2).expect("end").into_int_value();
    let mut env = caps.load(kc, ctx)?;
    let parts = env.ints[0];

    let bl = g.blocking;
    let es = g.conv.compute.byte_size() as i64;
    let (packed_es, depth) = if g.pairs { (2, round_up(bl.kc.min(g.k), 2)) } else { (es, bl.kc.min(g.k)) };
    let strips = ceil_div(g.m, bl.mr);
    let ap_bytes = strips * bl.mr * depth * packed_es;
    let bp_bytes = ceil_div(bl.nc.min(g.n), bl.nr()) * bl.nr() * depth * packed_es;
    let cs_bytes = match g.out {
        OutputMode::Staged { .. } => strips * bl.mr * g.n * es,
        OutputMode::Direct { .. } => 0,
    };
    let alloc = cg.external("hlojit_rt_alloc", cg.fn_type(Some(cg.ptr().into()), &[cg.i64().into()]));
    let free = cg.external("hlojit_rt_free", cg.fn_type(None, &[cg.ptr().into(), cg.i64().into()]));
    let ap = cg.call(alloc, &[cg.const_i64(ap_bytes).into()])?.into_pointer_value();
    let bp = cg.call(alloc, &[cg.const_i64(bp_bytes).into()])?.into_pointer_value();
    let cs = if cs_bytes > 0 { Some(cg.call(alloc, &[cg.const_i64(cs_bytes).into()])?.into_pointer_value()) } else { None };

    for_loop(cg, "unit", u0, u1, |u| {
        let b = cg.b.build_int_signed_div(u, parts, "b")?;
        let p = cg.b.build_int_signed_rem(u, parts, "part")?;
        let strips_c = cg.const_i64(strips);
        let s0 = cg.b.build_int_signed_div(cg.b.build_int_nsw_mul(p, strips_c, "")?, parts, "s0")?;
        let p1 = cg.b.build_int_nsw_add(p, cg.const_i64(1), "")?;
        let s1 = cg.b.build_int_signed_div(cg.b.build_int_nsw_mul(p1, strips_c, "")?, parts, "s1")?;
        let unit = Unit { b, s0, s1 };
        emit_unit(kc, caps, &mut env, g, uk, &unit, Scratch { ap, bp, cs })
    })?;

    cg.call_void(free, &[ap.into(), cg.const_i64(ap_bytes).into()])?;
    cg.call_void(free, &[bp.into(), cg.const_i64(bp_bytes).into()])?;
    if let Some(cs) = cs {
        cg.call_void(free, &[cs.into(), cg.const_i64(cs_bytes).into()])?;
    }
    cg.b.build_return(None)?;
    if let Some(bb) = saved {
        cg.b.position_at_end(bb);
    }
    Ok(f)
}

struct Unit<'ctx> {
    b: IntValue<'ctx>,
    /// A strips `[s0, s1)`.
    s0: IntValue<'ctx>,
    s1: IntValue<'ctx>,
}

#[derive(Clone, Copy)]
struct Scratch<'ctx> {
    ap: PointerValue<'ctx>,
    bp: PointerValue<'ctx>,
    cs: Option<PointerValue<'ctx>>,
}

/// One unit: rows `[s0 * mr, min(s1 * mr, m))` of batch `b`, all columns.
fn emit_unit<'ctx>(
    kc: &KernelContext<'_, 'ctx>,
    caps: &Captures<'ctx>,
    env: &mut super::operand::TaskEnv<'_, 'ctx>,
    g: &Gemm,
    uk: FunctionValue<'ctx>,
    u: &Unit<'ctx>,
    s: Scratch<'ctx>,
) -> Result<()> {
    let cg = kc.cg;
    let bl = g.blocking;
    let (mr, nr) = (bl.mr, bl.nr());
    let elem = cg.value_type(g.conv.compute);
    // Packed panels hold the compute type, or bf16 pairs.
    let pelem = if g.pairs { cg.llvm.bf16_type().into() } else { elem };
    let r0 = cg.b.build_int_nsw_mul(u.s0, cg.const_i64(mr), "r0")?;
    let r1 = min(cg, cg.b.build_int_nsw_mul(u.s1, cg.const_i64(mr), "")?, cg.const_i64(g.m))?;
    let rows = cg.b.build_int_nsw_sub(r1, r0, "rows")?;
    let nstrips = cg.b.build_int_nsw_sub(u.s1, u.s0, "")?;
    let bt = g.b.transposed();
    let out_ptr = env.ptrs[caps.out_slot];
    // Where row m of the C tiles starts, and the distance between rows.
    let (c_base, ldc) = match (&g.out, s.cs) {
        (OutputMode::Direct { batch, row }, _) => {
            let off = cg.b.build_int_nsw_mul(u.b, cg.const_i64(*batch), "")?;
            (cg.gep(elem, out_ptr, off)?, *row)
        }
        (OutputMode::Staged { .. }, Some(cs)) => (cs, g.n),
        (OutputMode::Staged { .. }, None) => return Err(crate::error::Error::Internal("staged GEMM without scratch".into())),
    };
    // The scratch block holds the unit's rows from r0 on.
    let first_c_row = if s.cs.is_some() { r0 } else { cg.const_i64(0) };
    let c_row_ptr = |m: IntValue<'ctx>| -> Result<PointerValue<'ctx>> {
        let local = cg.b.build_int_nsw_sub(m, first_c_row, "")?;
        cg.gep(elem, c_base, cg.b.build_int_nsw_mul(local, cg.const_i64(ldc), "")?)
    };
    let k_blocks = ceil_div(g.k, bl.kc);
    let n_blocks = ceil_div(g.n, bl.nc);
    for_loop(cg, "pc", cg.const_i64(0), cg.const_i64(k_blocks), |pcb| {
        let pc = cg.b.build_int_nsw_mul(pcb, cg.const_i64(bl.kc), "pc")?;
        let kcv = min(cg, cg.const_i64(bl.kc), cg.b.build_int_nsw_sub(cg.const_i64(g.k), pc, "")?)?;
        // Panel rows are kcv deep, rounded up to whole pairs for the bf16 kernel.
        let kstride = if g.pairs {
            cg.b.build_and(cg.b.build_int_nsw_add(kcv, cg.const_i64(1), "")?, cg.const_i64(-2), "")?
        } else {
            kcv
        };
        let accumulate = cg.b.build_int_compare(IntPredicate::SGT, pcb, cg.const_i64(0), "")?;
        // Pack this unit's A rows for the k block.
        for_loop(cg, "pack.a", cg.const_i64(0), nstrips, |is| {
            let first = cg.b.build_int_nsw_mul(is, cg.const_i64(mr), "")?;
            let dst = cg.gep(pelem, s.ap, cg.b.build_int_nsw_mul(first, kstride, "")?)?;
            let left = cg.b.build_int_nsw_sub(rows, first, "")?;
            let strip = Strip {
                b: u.b,
                p0: cg.b.build_int_nsw_add(r0, first, "")?,
                valid: min(cg, left, cg.const_i64(mr))?,
                k0: pc,
                depth: kcv,
                w: mr,
                pairs: g.pairs,
            };
            pack_strip(&env.ptrs, &mut env.e, &g.a, &g.conv, dst, &strip)
        })?;
        for_loop(cg, "jc", cg.const_i64(0), cg.const_i64(n_blocks), |jcb| {
            let jc = cg.b.build_int_nsw_mul(jcb, cg.const_i64(bl.nc), "jc")?;
            let ncv = min(cg, cg.const_i64(bl.nc), cg.b.build_int_nsw_sub(cg.const_i64(g.n), jc, "")?)?;
            let nbs = cg.b.build_int_signed_div(cg.b.build_int_nsw_add(ncv, cg.const_i64(nr - 1), "")?, cg.const_i64(nr), "")?;
            for_loop(cg, "pack.b", cg.const_i64(0), nbs, |js| {
                let first = cg.b.build_int_nsw_mul(js, cg.const_i64(nr), "")?;
                let dst = cg.gep(pelem, s.bp, cg.b.build_int_nsw_mul(first, kstride, "")?)?;
                let left = cg.b.build_int_nsw_sub(ncv, first, "")?;
                let strip = Strip {
                    b: u.b,
                    p0: cg.b.build_int_nsw_add(jc, first, "")?,
                    valid: min(cg, left, cg.const_i64(nr))?,
                    k0: pc,
                    depth: kcv,
                    w: nr,
                    pairs: g.pairs,
                };
                pack_strip(&env.ptrs, &mut env.e, &bt, &g.conv, dst, &strip)
            })?;
            for_loop(cg, "ir", cg.const_i64(0), nstrips, |is| {
                let first_row = cg.b.build_int_nsw_mul(is, cg.const_i64(mr), "")?;
                let a_ptr = cg.gep(pelem, s.ap, cg.b.build_int_nsw_mul(first_row, kstride, "")?)?;
                let rows_here = min(cg, cg.b.build_int_nsw_sub(rows, first_row, "")?, cg.const_i64(mr))?;
                let m = cg.b.build_int_nsw_add(r0, first_row, "m")?;
                let c_row = c_row_ptr(m)?;
                for_loop(cg, "jr", cg.const_i64(0), nbs, |js| {
                    let first_col = cg.b.build_int_nsw_mul(js, cg.const_i64(nr), "")?;
                    let b_ptr = cg.gep(pelem, s.bp, cg.b.build_int_nsw_mul(first_col, kstride, "")?)?;
                    let cols_here = min(cg, cg.b.build_int_nsw_sub(ncv, first_col, "")?, cg.const_i64(nr))?;
                    let n = cg.b.build_int_nsw_add(jc, first_col, "")?;
                    let c_ptr = cg.gep(elem, c_row, n)?;
                    let args = [a_ptr.into(), b_ptr.into(), c_ptr.into(), kcv.into(), cg.const_i64(ldc).into(), rows_here.into(), cols_here.into(), accumulate.into()];
                    cg.call_void(uk, &args)
                })
            })
        })
    })?;
    if let (OutputMode::Staged { map }, Some(_)) = (&g.out, s.cs) {
        let out = &kc.outputs[0];
        let out = IrArray { ptr: out_ptr, shape: out.shape.clone(), physical: out.physical.clone() };
        for_loop(cg, "store.m", r0, r1, |m| {
            let row = c_row_ptr(m)?;
            for_loop(cg, "store.n", cg.const_i64(0), cg.const_i64(g.n), |n| {
                env.e.scoped(|e| {
                    let v = cg.b.build_load(elem, cg.gep(elem, row, n)?, "")?;
                    let v = g.conv.finish(e, v)?;
                    let index = map.index(cg, u.b, m, n)?;
                    out.store(cg, &index, v)
                })
            })
        })?;
    }
    Ok(())
}
