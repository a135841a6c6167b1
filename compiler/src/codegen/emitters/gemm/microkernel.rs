//! The register-blocked micro-kernel: `C[mr x nr] (+)= Ap[mr x kc] * Bp[kc x nr]` on packed
//! panels, with the C tile held in vector registers for the whole k loop.
//!
//! `void ukernel(ptr a, ptr b, ptr c, i64 kc, i64 ldc, i64 rows, i64 cols, i1 accumulate)`:
//! `a` is an A strip (packed `[kc][mr]`, or rows of an image for convolutions: [`ALayout`]), `b` a B strip packed `[kc][nr]` (zero-padded past
//! the problem's edges), `c` the tile's top-left element with rows `ldc` elements apart and
//! columns contiguous. Only the first `rows x cols` elements are stored; with `accumulate`
//! they are added to what C holds, otherwise they replace it.

use super::config::Blocking;
use crate::codegen::context::Codegen;
use crate::codegen::loops::for_loop;
use crate::error::Result;
use hlojit_runtime::ElementType;
use inkwell::types::{BasicTypeEnum, VectorType};
use inkwell::values::{BasicValue, BasicValueEnum, FunctionValue, IntValue, PointerValue, VectorValue};
use inkwell::IntPredicate;

/// How the micro-kernel finds element `(row i, depth k)` of its A operand: at
/// `a + i * row + k * depth` (plus a tap offset when the kernel walks taps).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ALayout {
    pub row: i64,
    pub depth: i64,
    /// Whether the kernel takes a table of tap offsets: `ptr taps, i64 ntaps` follow the
    /// usual parameters, and for tap `t` A starts at `a + taps[t]` and B at
    /// `b + t * kc * nr`, so one call sums over `ntaps * kc` values of k.
    pub taps: bool,
    /// A and B are packed bf16 pairs (A `[kc/2][mr][2]`, B `[kc/2][nr][2]`) multiplied with
    /// AVX512_BF16 dot products into f32 accumulators.
    pub pairs: bool,
}

impl ALayout {
    /// A packed `[kc][mr]` strip.
    pub fn packed(mr: i64) -> ALayout {
        ALayout { row: 1, depth: mr, taps: false, pairs: false }
    }

    /// A packed strip of bf16 pairs.
    pub fn bf16_pairs(mr: i64) -> ALayout {
        ALayout { row: 1, depth: mr, taps: false, pairs: true }
    }
}

/// The micro-kernel for `compute` elements (f32, f64, 32/64-bit integers) with this tile and
/// A layout: one function per module and configuration, shared by every kernel that uses it
/// (and not inlined), which keeps compile times low.
pub fn microkernel<'ctx>(cg: &Codegen<'ctx>, compute: ElementType, bl: &Blocking, al: ALayout) -> Result<FunctionValue<'ctx>> {
    let name = format!(
        "hlojit.ukernel.{compute}.{}x{}x{}.a{}_{}{}{}",
        bl.mr,
        bl.nv,
        bl.lanes,
        al.row,
        al.depth,
        if al.taps { ".taps" } else { "" },
        if al.pairs { ".bf16pairs" } else { "" }
    );
    if let Some(f) = cg.module.get_function(&name) {
        return Ok(f);
    }
    emit_microkernel(cg, &name, compute, bl, al)
}

fn emit_microkernel<'ctx>(
    cg: &Codegen<'ctx>,
    name: &str,
    compute: ElementType,
    bl: &Blocking,
    al: ALayout,
) -> Result<FunctionValue<'ctx>> {
    let saved = cg.b.get_insert_block();
    let p = cg.ptr().into();
    let i = cg.i64().into();
    let mut params = vec![p, p, p, i, i, i, i, cg.i1().into()];
    if al.taps {
        params.extend([p, i]);
    }
    let fn_type = cg.fn_type(None, &params);
    let f = cg.add_function(name, fn_type, false);
    set_vector_attributes(cg, f);
    f.add_attribute(inkwell::attributes::AttributeLoc::Function, cg.enum_attr("noinline"));
    let entry = cg.llvm.append_basic_block(f, "entry");
    cg.b.position_at_end(entry);
    let param = |n: u32| f.get_nth_param(n).expect("micro-kernel parameter");
    let a = param(0).into_pointer_value();
    let b = param(1).into_pointer_value();
    let c = param(2).into_pointer_value();
    let kc = param(3).into_int_value();
    let ldc = param(4).into_int_value();
    let rows = param(5).into_int_value();
    let cols = param(6).into_int_value();
    let accumulate = param(7).into_int_value();
    let (taps, ntaps) = if al.taps {
        (Some(param(8).into_pointer_value()), param(9).into_int_value())
    } else {
        (None, cg.const_i64(1))
    };

    let elem = cg.value_type(compute);
    let vt = vector_type(elem, bl.lanes as u32)?;
    let is_float = compute.is_float();
    let mr = bl.mr as usize;
    let nv = bl.nv as usize;
    let nr = bl.nr();
    let elem_bytes = compute.byte_size() as i64;
    // Packed B rows start 64-byte aligned when a row is a whole number of cache lines.
    let b_align = if (nr * elem_bytes) % 64 == 0 { 64.min(bl.lanes * elem_bytes) as u32 } else { elem_bytes as u32 };

    // The tile lives in stack slots that LLVM promotes to registers (phis of the loops).
    let mut slots = Vec::with_capacity(mr * nv);
    for _ in 0..mr * nv {
        let slot = cg.entry_alloca(vt.into(), "acc")?;
        cg.b.build_store(slot, vt.const_zero())?;
        slots.push(slot);
    }
    for_loop(cg, "tap", cg.const_i64(0), ntaps, |t| {
        let (a_t, b_t) = match taps {
            Some(table) => {
                let off = cg.b.build_load(cg.i64(), cg.gep(cg.i64().into(), table, t)?, "tap.off")?.into_int_value();
                let b_off = cg.b.build_int_nsw_mul(cg.b.build_int_nsw_mul(t, kc, "")?, cg.const_i64(nr), "")?;
                (cg.gep(elem, a, off)?, cg.gep(elem, b, b_off)?)
            }
            None => (a, b),
        };
        if al.pairs {
            return bf16_pair_steps(cg, a_t, b_t, kc, &slots, bl, vt);
        }
        for_loop(cg, "k", cg.const_i64(0), kc, |k| {
            let b_row = cg.b.build_int_nsw_mul(k, cg.const_i64(nr), "")?;
            let mut bvec = Vec::with_capacity(nv);
            for v in 0..nv {
                let off = cg.b.build_int_nsw_add(b_row, cg.const_i64(v as i64 * bl.lanes), "")?;
                let load = cg.b.build_load(vt, cg.gep(elem, b_t, off)?, "b")?;
                set_align(load, b_align);
                bvec.push(load.into_vector_value());
            }
            let a_k = cg.b.build_int_nsw_mul(k, cg.const_i64(al.depth), "")?;
            let acc: Vec<VectorValue> = slots
                .iter()
                .map(|s| Ok(cg.b.build_load(vt, *s, "")?.into_vector_value()))
                .collect::<Result<_>>()?;
            for r in 0..mr {
                let off = cg.b.build_int_nsw_add(a_k, cg.const_i64(r as i64 * al.row), "")?;
                let s = cg.b.build_load(elem, cg.gep(elem, a_t, off)?, "a")?;
                let splat = splat(cg, vt, s)?;
                for v in 0..nv {
                    let x = mul_add(cg, is_float, splat, bvec[v], acc[r * nv + v])?;
                    cg.b.build_store(slots[r * nv + v], x)?;
                }
            }
            Ok(())
        })
    })?;

    let tile: Vec<VectorValue> =
        slots.iter().map(|s| Ok(cg.b.build_load(vt, *s, "")?.into_vector_value())).collect::<Result<_>>()?;
    let full_rows = cg.b.build_int_compare(IntPredicate::EQ, rows, cg.const_i64(bl.mr), "")?;
    let full_cols = cg.b.build_int_compare(IntPredicate::EQ, cols, cg.const_i64(nr), "")?;
    let full = cg.b.build_and(full_rows, full_cols, "full")?;
    let st = TileStore { elem, vt, is_float, mr, nv, lanes: bl.lanes, c, ldc, elem_bytes };
    let done = cg.block("done");
    let full_bb = cg.block("store.full");
    let edge_bb = cg.block("store.edge");
    cg.b.build_conditional_branch(full, full_bb, edge_bb)?;
    cg.b.position_at_end(full_bb);
    let acc_bb = cg.block("store.acc");
    let set_bb = cg.block("store.set");
    cg.b.build_conditional_branch(accumulate, acc_bb, set_bb)?;
    for (bb, add) in [(acc_bb, true), (set_bb, false)] {
        cg.b.position_at_end(bb);
        st.store_full(cg, &tile, add)?;
        cg.b.build_unconditional_branch(done)?;
    }
    // Partial tiles (at the problem's edges) go through a stack copy of the tile and a scalar
    // loop: rare, and much less code than masked stores for every row.
    cg.b.position_at_end(edge_bb);
    st.store_edge(cg, &tile, accumulate, rows, cols)?;
    cg.b.build_unconditional_branch(done)?;
    cg.b.position_at_end(done);
    cg.b.build_return(None)?;
    if let Some(bb) = saved {
        cg.b.position_at_end(bb);
    }
    Ok(f)
}

/// The k loop of the bf16-pair kernel: per pair of k values, `nv` vectors of 16 column pairs
/// of B and, per row, the row's pair of A broadcast to all lanes; `vdpbf16ps` adds both
/// products of each lane's pair to the f32 accumulator.
fn bf16_pair_steps<'ctx>(
    cg: &Codegen<'ctx>,
    a: PointerValue<'ctx>,
    b: PointerValue<'ctx>,
    kc: IntValue<'ctx>,
    slots: &[PointerValue<'ctx>],
    bl: &Blocking,
    acc_t: VectorType<'ctx>,
) -> Result<()> {
    let (mr, nv, lanes) = (bl.mr, bl.nv as usize, bl.lanes);
    let nr = bl.nr();
    let bf16 = cg.llvm.bf16_type();
    let pair_vec = bf16.vec_type(2 * lanes as u32);
    let i32s = cg.i32().vec_type(lanes as u32);
    let dp = cg.intrinsic("llvm.x86.avx512bf16.dpbf16ps.512", &[])?;
    let pairs = cg.b.build_int_signed_div(cg.b.build_int_nsw_add(kc, cg.const_i64(1), "")?, cg.const_i64(2), "pairs")?;
    for_loop(cg, "kp", cg.const_i64(0), pairs, |p| {
        let b_row = cg.b.build_int_nsw_mul(p, cg.const_i64(2 * nr), "")?;
        let mut bvec = Vec::with_capacity(nv);
        for v in 0..nv {
            let off = cg.b.build_int_nsw_add(b_row, cg.const_i64(v as i64 * 2 * lanes), "")?;
            let load = cg.b.build_load(pair_vec, cg.gep(bf16.into(), b, off)?, "b")?;
            set_align(load, 64);
            bvec.push(load);
        }
        let a_row = cg.b.build_int_nsw_mul(p, cg.const_i64(mr), "")?;
        for r in 0..mr as usize {
            let off = cg.b.build_int_nsw_add(a_row, cg.const_i64(r as i64), "")?;
            let pair = cg.b.build_load(cg.i32(), cg.gep(cg.i32().into(), a, off)?, "a")?;
            let wide = splat(cg, i32s, pair)?;
            let a_pairs = cg.b.build_bit_cast(wide, pair_vec, "")?;
            for v in 0..nv {
                let slot = slots[r * nv + v];
                let acc = cg.b.build_load(acc_t, slot, "")?;
                let x = cg.call(dp, &[acc.into(), a_pairs.into(), bvec[v].into()])?;
                cg.b.build_store(slot, x)?;
            }
        }
        Ok(())
    })
}

/// Lets the x86 back end use full-width vector registers in GEMM functions even where the
/// CPU's tuning prefers narrower ones.
pub fn set_vector_attributes(cg: &Codegen<'_>, f: FunctionValue<'_>) {
    use inkwell::attributes::AttributeLoc;
    let bits = (cg.simd_bytes * 8).to_string();
    f.add_attribute(AttributeLoc::Function, cg.llvm.create_string_attribute("min-legal-vector-width", &bits));
    f.add_attribute(AttributeLoc::Function, cg.llvm.create_string_attribute("prefer-vector-width", &bits));
}

pub fn vector_type(elem: BasicTypeEnum<'_>, lanes: u32) -> Result<VectorType<'_>> {
    match elem {
        BasicTypeEnum::FloatType(t) => Ok(t.vec_type(lanes)),
        BasicTypeEnum::IntType(t) => Ok(t.vec_type(lanes)),
        other => Err(crate::error::Error::Internal(format!("no vectors of {other:?}"))),
    }
}

fn set_align(v: BasicValueEnum<'_>, align: u32) {
    if let Some(inst) = v.as_instruction_value() {
        let _ = inst.set_alignment(align);
    }
}

/// A vector with every lane `s`.
fn splat<'ctx>(cg: &Codegen<'ctx>, vt: VectorType<'ctx>, s: BasicValueEnum<'ctx>) -> Result<VectorValue<'ctx>> {
    let undef = vt.get_undef();
    let one = cg.b.build_insert_element(undef, s, cg.const_i32(0), "")?;
    let mask = cg.i32().vec_type(vt.get_size()).const_zero();
    Ok(cg.b.build_shuffle_vector(one, undef, mask, "splat")?)
}

fn mul_add<'ctx>(
    cg: &Codegen<'ctx>,
    is_float: bool,
    a: VectorValue<'ctx>,
    b: VectorValue<'ctx>,
    acc: VectorValue<'ctx>,
) -> Result<BasicValueEnum<'ctx>> {
    if is_float {
        cg.call_intrinsic("llvm.fmuladd", &[acc.get_type().into()], &[a.into(), b.into(), acc.into()])
    } else {
        let p = cg.b.build_int_mul(a, b, "")?;
        Ok(cg.b.build_int_add(acc, p, "")?.into())
    }
}

fn add<'ctx>(cg: &Codegen<'ctx>, is_float: bool, a: VectorValue<'ctx>, b: VectorValue<'ctx>) -> Result<VectorValue<'ctx>> {
    Ok(if is_float { cg.b.build_float_add(a, b, "")? } else { cg.b.build_int_add(a, b, "")? })
}

struct TileStore<'ctx> {
    elem: BasicTypeEnum<'ctx>,
    vt: VectorType<'ctx>,
    is_float: bool,
    mr: usize,
    nv: usize,
    lanes: i64,
    c: PointerValue<'ctx>,
    ldc: IntValue<'ctx>,
    elem_bytes: i64,
}

impl<'ctx> TileStore<'ctx> {
    fn address(&self, cg: &Codegen<'ctx>, r: usize, v: usize) -> Result<PointerValue<'ctx>> {
        let row = cg.b.build_int_nsw_mul(cg.const_i64(r as i64), self.ldc, "")?;
        let off = cg.b.build_int_nsw_add(row, cg.const_i64(v as i64 * self.lanes), "")?;
        cg.gep(self.elem, self.c, off)
    }

    fn store_full(&self, cg: &Codegen<'ctx>, tile: &[VectorValue<'ctx>], add_to_c: bool) -> Result<()> {
        for r in 0..self.mr {
            for v in 0..self.nv {
                let p = self.address(cg, r, v)?;
                let mut x = tile[r * self.nv + v];
                if add_to_c {
                    let old = cg.b.build_load(self.vt, p, "")?;
                    set_align(old, self.elem_bytes as u32);
                    x = add(cg, self.is_float, x, old.into_vector_value())?;
                }
                let s = cg.b.build_store(p, x)?;
                let _ = s.set_alignment(self.elem_bytes as u32);
            }
        }
        Ok(())
    }

    fn store_edge(
        &self,
        cg: &Codegen<'ctx>,
        tile: &[VectorValue<'ctx>],
        accumulate: IntValue<'ctx>,
        rows: IntValue<'ctx>,
        cols: IntValue<'ctx>,
    ) -> Result<()> {
        let nr = self.nv as i64 * self.lanes;
        let buf_ty = self.vt.array_type((self.mr * self.nv) as u32);
        let buf = cg.entry_alloca(buf_ty.into(), "tile")?;
        for r in 0..self.mr {
            for v in 0..self.nv {
                let at = cg.gep(self.elem, buf, cg.const_i64(r as i64 * nr + v as i64 * self.lanes))?;
                let s = cg.b.build_store(at, tile[r * self.nv + v])?;
                let _ = s.set_alignment(self.elem_bytes as u32);
            }
        }
        for_loop(cg, "edge.r", cg.const_i64(0), rows, |r| {
            let src_row = cg.b.build_int_nsw_mul(r, cg.const_i64(nr), "")?;
            let dst_row = cg.b.build_int_nsw_mul(r, self.ldc, "")?;
            for_loop(cg, "edge.c", cg.const_i64(0), cols, |c| {
                let x = cg.b.build_load(self.elem, cg.gep(self.elem, buf, cg.b.build_int_nsw_add(src_row, c, "")?)?, "")?;
                let p = cg.gep(self.elem, self.c, cg.b.build_int_nsw_add(dst_row, c, "")?)?;
                let old = cg.b.build_load(self.elem, p, "")?;
                let sum: BasicValueEnum = if self.is_float {
                    cg.b.build_float_add(x.into_float_value(), old.into_float_value(), "")?.into()
                } else {
                    cg.b.build_int_add(x.into_int_value(), old.into_int_value(), "")?.into()
                };
                let v = cg.b.build_select(accumulate, sum, x, "")?;
                cg.b.build_store(p, v)?;
                Ok(())
            })
        })
    }
}
