//! The blocked GEMM: `C[b] = A[b] x B[b]` for `A: [batch][M][K]`, `B: [batch][K][N]`.
//!
//! Two phases. First B is packed once, into panels of `nr` columns per (batch, k block),
//! shared by everyone (the panels are split among threads). Then work is split into units of
//! (batch, range of A strips); each unit packs its A rows once per k block and runs the
//! micro-kernel over every (A strip, B panel) pair, column block by column block: the A strip
//! stays in L1 while the block's B panels stream from L2. Phases hand their units to the
//! runtime's thread pool (`hlojit_rt_parallel_for`), with one part per thread for a single
//! batch and whole batches otherwise; small problems run on the calling thread.

use super::batch_walk::BatchWalk;
use super::config::Blocking;
use super::microkernel::{microkernel, ALayout};
use super::operand::{Captures, GroupMap, Operand, TaskEnv};
use crate::codegen::emitters::dot_epilogue::Epilogue;
use super::pack::{pack_strip, Conversion, Strip};
use crate::codegen::runtime_abi::RuntimeFunction;
use crate::codegen::array::IrArray;
use crate::codegen::context::Codegen;
use crate::codegen::kernel::KernelContext;
use super::loops::scalar_loop;
use crate::codegen::loops::for_loop;
use crate::error::Result;
use inkwell::types::BasicTypeEnum;
use inkwell::values::{FunctionValue, IntValue, PointerValue};
use inkwell::IntPredicate;

/// Below this many flops a GEMM runs on the calling thread.
const PARALLEL_MIN_FLOPS: f64 = 4.0e6;

/// Where the result tiles go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputMode {
    /// Straight into the result buffer (its element type is the compute type): element
    /// `(b, m, n)` at `batch.offset(b) + m * row + n`.
    Direct { batch: BatchWalk, row: i64 },
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
    /// A fused elementwise loop the finished values go through, and the result index of
    /// GEMM element `(b, m, n)`.
    pub epilogue: Option<(Epilogue, GroupMap)>,
}

/// Sizes shared by the phases.
struct Geometry {
    /// A strips (of `mr` rows) per batch.
    strips: i64,
    k_blocks: i64,
    /// B panels (of `nr` columns) per (batch, k block).
    panels: i64,
    /// Depth of a packed row of the first k block (a whole number of pairs for bf16 pairs).
    depth: i64,
    /// Bytes of a packed element.
    packed_bytes: i64,
}

impl Geometry {
    fn new(g: &Gemm) -> Geometry {
        let bl = g.blocking;
        let depth = if g.pairs { round_up(bl.kc.min(g.k), 2) } else { bl.kc.min(g.k) };
        let packed_bytes = if g.pairs { 2 } else { g.conv.compute.byte_size() as i64 };
        Geometry { strips: ceil_div(g.m, bl.mr), k_blocks: ceil_div(g.k, bl.kc), panels: ceil_div(g.n, bl.nr()), depth, packed_bytes }
    }

    /// Elements of one packed B panel.
    fn panel(&self, g: &Gemm) -> i64 {
        self.depth * g.blocking.nr()
    }

    fn b_bytes(&self, g: &Gemm) -> i64 {
        g.batch * self.k_blocks * self.panels * self.panel(g) * self.packed_bytes
    }
}

/// Emits the GEMM into the current kernel; returns the kernel's parallel extent (1: the GEMM
/// splits its work itself).
pub fn emit_gemm<'ctx>(kc: &KernelContext<'_, 'ctx>, caps: &Captures<'ctx>, g: &Gemm) -> Result<i64> {
    let cg = kc.cg;
    if super::precompiled::emit_precompiled(kc, caps, g)? {
        return Ok(1);
    }
    cg.mark_generated_product();
    let base = cg.function().get_name().to_string_lossy().into_owned();
    let al = if g.pairs { ALayout::bf16_pairs(g.blocking.mr) } else { ALayout::packed(g.blocking.mr) };
    let uk = microkernel(cg, g.conv.compute, &g.blocking, al)?;
    let geo = Geometry::new(g);
    let pack = emit_pack_task(kc, caps, g, &geo, &format!("{base}.pack"))?;
    let task = emit_task(kc, caps, g, &geo, uk, &format!("{base}.task"))?;
    let b_bytes = geo.b_bytes(g);
    let bp = cg.scratch_alloc(b_bytes, "scratch")?;
    let bp_int = cg.b.build_ptr_to_int(bp, cg.i64(), "")?;
    let pack_units = cg.const_i64(g.batch * geo.k_blocks * geo.panels);
    let flops = 2.0 * g.batch as f64 * g.m as f64 * g.n as f64 * g.k as f64;
    if flops < PARALLEL_MIN_FLOPS || g.batch * geo.strips == 1 {
        let ctx = caps.store(cg, &[cg.const_i64(1), bp_int])?;
        cg.call_void(pack, &[ctx.into(), cg.const_i64(0).into(), pack_units.into()])?;
        cg.call_void(task, &[ctx.into(), cg.const_i64(0).into(), cg.const_i64(g.batch).into()])?;
    } else {
        let threads_fn = cg.runtime(RuntimeFunction::NumThreads)?;
        let threads = cg.call(threads_fn, &[])?.into_int_value();
        let batch = cg.const_i64(g.batch);
        let parts = cg.b.build_int_signed_div(cg.b.build_int_nsw_add(threads, cg.const_i64(g.batch - 1), "")?, batch, "")?;
        let parts = cg.clamp_i64(parts, cg.const_i64(1), cg.const_i64(geo.strips))?;
        let ctx = caps.store(cg, &[parts, bp_int])?;
        let units = cg.b.build_int_nsw_mul(parts, batch, "units")?;
        let pf = cg.runtime(RuntimeFunction::ParallelFor)?;
        let pack_fn = pack.as_global_value().as_pointer_value();
        cg.call_void(pf, &[pack_fn.into(), ctx.into(), pack_units.into(), cg.const_i64(1).into()])?;
        let task_fn = task.as_global_value().as_pointer_value();
        cg.call_void(pf, &[task_fn.into(), ctx.into(), units.into(), cg.const_i64(1).into()])?;
    }
    cg.scratch_free(bp, b_bytes)?;
    Ok(1)
}

/// `pack(ctx, u0, u1)`: packs B panels `[u0, u1)`, numbered in (batch, k block, panel) order,
/// which is also their order in the packed buffer.
fn emit_pack_task<'ctx>(kc: &KernelContext<'_, 'ctx>, caps: &Captures<'ctx>, g: &Gemm, geo: &Geometry, name: &str) -> Result<FunctionValue<'ctx>> {
    let cg = kc.cg;
    let saved = cg.b.get_insert_block();
    let (f, u0, u1, mut env) = caps.begin_task(kc, name)?;
    let bl = g.blocking;
    let nr = bl.nr();
    let bp = cg.b.build_int_to_ptr(env.ints[1], cg.ptr(), "bp")?;
    let pelem = packed_type(cg, g);
    let bt = g.b.transposed();
    scalar_loop(cg, "panel", u0, u1, |u| {
        let per_batch = cg.const_i64(geo.k_blocks * geo.panels);
        let b = cg.b.build_int_signed_div(u, per_batch, "b")?;
        let rest = cg.b.build_int_signed_rem(u, per_batch, "")?;
        let pcb = cg.b.build_int_signed_div(rest, cg.const_i64(geo.panels), "pcb")?;
        let js = cg.b.build_int_signed_rem(rest, cg.const_i64(geo.panels), "js")?;
        let k0 = cg.b.build_int_nsw_mul(pcb, cg.const_i64(bl.kc), "")?;
        let first = cg.b.build_int_nsw_mul(js, cg.const_i64(nr), "")?;
        let strip = Strip {
            b,
            p0: first,
            valid: min(cg, cg.b.build_int_nsw_sub(cg.const_i64(g.n), first, "")?, cg.const_i64(nr))?,
            k0,
            depth: min(cg, cg.const_i64(bl.kc), cg.b.build_int_nsw_sub(cg.const_i64(g.k), k0, "")?)?,
            w: nr,
            pairs: g.pairs,
        };
        let dst = cg.gep(pelem, bp, cg.b.build_int_nsw_mul(u, cg.const_i64(geo.panel(g)), "")?)?;
        pack_strip(&env.ptrs, &mut env.e, &bt, &g.conv, dst, &strip)
    })?;
    cg.b.build_return(None)?;
    if let Some(bb) = saved {
        cg.b.position_at_end(bb);
    }
    Ok(f)
}

/// The LLVM type of packed elements: the compute type, or bf16 for pairs.
fn packed_type<'ctx>(cg: &Codegen<'ctx>, g: &Gemm) -> BasicTypeEnum<'ctx> {
    if g.pairs {
        cg.llvm.bf16_type().into()
    } else {
        cg.value_type(g.conv.compute)
    }
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
fn emit_task<'ctx>(
    kc: &KernelContext<'_, 'ctx>,
    caps: &Captures<'ctx>,
    g: &Gemm,
    geo: &Geometry,
    uk: FunctionValue<'ctx>,
    name: &str,
) -> Result<FunctionValue<'ctx>> {
    let cg = kc.cg;
    let saved = cg.b.get_insert_block();
    let (f, u0, u1, mut env) = caps.begin_task(kc, name)?;
    let parts = env.ints[0];
    let bp = cg.b.build_int_to_ptr(env.ints[1], cg.ptr(), "bp")?;
    let bl = g.blocking;
    let es = g.conv.compute.byte_size() as i64;
    let ap_bytes = geo.strips * bl.mr * geo.depth * geo.packed_bytes;
    let cs_bytes = match g.out {
        OutputMode::Staged { .. } => geo.strips * bl.mr * g.n * es,
        OutputMode::Direct { .. } => 0,
    };
    let ap = cg.scratch_alloc(ap_bytes, "scratch")?;
    let cs = if cs_bytes > 0 { Some(cg.scratch_alloc(cs_bytes, "scratch")?) } else { None };

    scalar_loop(cg, "unit", u0, u1, |u| {
        let b = cg.b.build_int_signed_div(u, parts, "b")?;
        let p = cg.b.build_int_signed_rem(u, parts, "part")?;
        let strips_c = cg.const_i64(geo.strips);
        let s0 = cg.b.build_int_signed_div(cg.b.build_int_nsw_mul(p, strips_c, "")?, parts, "s0")?;
        let p1 = cg.b.build_int_nsw_add(p, cg.const_i64(1), "")?;
        let s1 = cg.b.build_int_signed_div(cg.b.build_int_nsw_mul(p1, strips_c, "")?, parts, "s1")?;
        let unit = Unit { b, s0, s1 };
        emit_unit(kc, caps, &mut env, g, geo, uk, &unit, Scratch { ap, bp, cs })
    })?;

    cg.scratch_free(ap, ap_bytes)?;
    if let Some(cs) = cs {
        cg.scratch_free(cs, cs_bytes)?;
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
#[allow(clippy::too_many_arguments)]
fn emit_unit<'ctx>(
    kc: &KernelContext<'_, 'ctx>,
    caps: &Captures<'ctx>,
    env: &mut TaskEnv<'_, 'ctx>,
    g: &Gemm,
    geo: &Geometry,
    uk: FunctionValue<'ctx>,
    u: &Unit<'ctx>,
    s: Scratch<'ctx>,
) -> Result<()> {
    let cg = kc.cg;
    let bl = g.blocking;
    let (mr, nr) = (bl.mr, bl.nr());
    let elem = cg.value_type(g.conv.compute);
    let pelem = packed_type(cg, g);
    // This batch's packed B panels.
    let b_batch = cg.gep(pelem, s.bp, cg.b.build_int_nsw_mul(u.b, cg.const_i64(geo.k_blocks * geo.panels * geo.panel(g)), "")?)?;
    let r0 = cg.b.build_int_nsw_mul(u.s0, cg.const_i64(mr), "r0")?;
    let r1 = min(cg, cg.b.build_int_nsw_mul(u.s1, cg.const_i64(mr), "")?, cg.const_i64(g.m))?;
    let rows = cg.b.build_int_nsw_sub(r1, r0, "rows")?;
    let nstrips = cg.b.build_int_nsw_sub(u.s1, u.s0, "")?;
    let out_ptr = env.ptrs[caps.out_slot];
    // Where row m of the C tiles starts, and the distance between rows.
    let (c_base, ldc) = match (&g.out, s.cs) {
        (OutputMode::Direct { batch, row }, _) => {
            (cg.gep(elem, out_ptr, batch.offset(cg, u.b)?)?, *row)
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
    scalar_loop(cg, "pc", cg.const_i64(0), cg.const_i64(k_blocks), |pcb| {
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
        scalar_loop(cg, "pack.a", cg.const_i64(0), nstrips, |is| {
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
        scalar_loop(cg, "jc", cg.const_i64(0), cg.const_i64(n_blocks), |jcb| {
            let jc = cg.b.build_int_nsw_mul(jcb, cg.const_i64(bl.nc), "jc")?;
            let ncv = min(cg, cg.const_i64(bl.nc), cg.b.build_int_nsw_sub(cg.const_i64(g.n), jc, "")?)?;
            let nbs = cg.b.build_int_signed_div(cg.b.build_int_nsw_add(ncv, cg.const_i64(nr - 1), "")?, cg.const_i64(nr), "")?;
            // The k block's panels of this column block.
            let panel0 = cg.b.build_int_nsw_add(
                cg.b.build_int_nsw_mul(pcb, cg.const_i64(geo.panels), "")?,
                cg.b.build_int_signed_div(jc, cg.const_i64(nr), "")?,
                "",
            )?;
            let b_block = cg.gep(pelem, b_batch, cg.b.build_int_nsw_mul(panel0, cg.const_i64(geo.panel(g)), "")?)?;
            scalar_loop(cg, "ir", cg.const_i64(0), nstrips, |is| {
                let first_row = cg.b.build_int_nsw_mul(is, cg.const_i64(mr), "")?;
                let a_ptr = cg.gep(pelem, s.ap, cg.b.build_int_nsw_mul(first_row, kstride, "")?)?;
                let rows_here = min(cg, cg.b.build_int_nsw_sub(rows, first_row, "")?, cg.const_i64(mr))?;
                let m = cg.b.build_int_nsw_add(r0, first_row, "m")?;
                let c_row = c_row_ptr(m)?;
                scalar_loop(cg, "jr", cg.const_i64(0), nbs, |js| {
                    let first_col = cg.b.build_int_nsw_mul(js, cg.const_i64(nr), "")?;
                    let b_ptr = cg.gep(pelem, b_block, cg.b.build_int_nsw_mul(js, cg.const_i64(geo.panel(g)), "")?)?;
                    let cols_here = min(cg, cg.b.build_int_nsw_sub(ncv, first_col, "")?, cg.const_i64(nr))?;
                    let n = cg.b.build_int_nsw_add(jc, first_col, "")?;
                    let c_ptr = cg.gep(elem, c_row, n)?;
                    let args = [a_ptr.into(), b_ptr.into(), c_ptr.into(), kcv.into(), cg.const_i64(ldc).into(), rows_here.into(), cols_here.into(), accumulate.into()];
                    cg.call_void(uk, &args)
                })
            })
        })
    })?;
    let out = &kc.outputs[0];
    let out = IrArray { ptr: out_ptr, shape: out.shape.clone(), physical: out.physical.clone() };
    if let (OutputMode::Staged { map }, Some(_)) = (&g.out, s.cs) {
        // An elementwise epilogue finishes each element on its way out; a whole-row one the
        // stored rows after.
        let per_element = g.epilogue.as_ref().filter(|(ep, _)| ep.rows.is_none());
        for_loop(cg, "store.m", r0, r1, |m| {
            let row = c_row_ptr(m)?;
            for_loop(cg, "store.n", cg.const_i64(0), cg.const_i64(g.n), |n| {
                env.e.scoped(|e| {
                    let v = cg.b.build_load(elem, cg.gep(elem, row, n)?, "")?;
                    let v = g.conv.finish(e, v)?;
                    let index = map.index(cg, u.b, m, n)?;
                    let v = match per_element {
                        Some((ep, _)) => ep.finish_value(e, &index, v)?,
                        None => v,
                    };
                    out.store(cg, &index, v)
                })
            })
        })?;
        if let Some((ep, map)) = g.epilogue.as_ref().filter(|(ep, _)| ep.rows.is_some()) {
            ep.emit_region(&mut env.e, &out, map, u.b, r0, r1, cg.const_i64(0), cg.const_i64(g.n))?;
        }
    } else if let Some((ep, map)) = &g.epilogue {
        // The unit's rows are final: finish them while they are in cache.
        ep.emit_region(&mut env.e, &out, map, u.b, r0, r1, cg.const_i64(0), cg.const_i64(g.n))?;
    }
    Ok(())
}
