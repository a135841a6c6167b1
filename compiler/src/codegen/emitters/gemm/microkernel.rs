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
}

impl ALayout {
    /// A packed `[kc][mr]` strip.
    pub fn packed(mr: i64) -> ALayout {
        ALayout { row: 1, depth: mr, taps: false }
    }
}

/// Emits the micro-kernel for `compute` elements (f32, f64, 32/64-bit integers).
pub fn emit_microkernel<'ctx>(
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
    let acc_bb = cg.block("store.acc");
    let set_bb = cg.block("store.set");
    cg.b.build_conditional_branch(accumulate, acc_bb, set_bb)?;
    for (bb, add) in [(acc_bb, true), (set_bb, false)] {
        cg.b.position_at_end(bb);
        let full_bb = cg.block("store.full");
        let edge_bb = cg.block("store.edge");
        cg.b.build_conditional_branch(full, full_bb, edge_bb)?;
        cg.b.position_at_end(full_bb);
        st.store_full(cg, &tile, add)?;
        cg.b.build_unconditional_branch(done)?;
        cg.b.position_at_end(edge_bb);
        st.store_edge(cg, &tile, add, rows, cols)?;
        cg.b.build_unconditional_branch(done)?;
    }
    cg.b.position_at_end(done);
    cg.b.build_return(None)?;
    if let Some(bb) = saved {
        cg.b.position_at_end(bb);
    }
    Ok(f)
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
        add_to_c: bool,
        rows: IntValue<'ctx>,
        cols: IntValue<'ctx>,
    ) -> Result<()> {
        let lanes = self.lanes as u32;
        let iota: Vec<IntValue> = (0..lanes).map(|l| cg.i64().const_int(l as u64, false)).collect();
        let iota = VectorType::const_vector(&iota);
        let cols_v = splat(cg, cg.i64().vec_type(lanes), cols.into())?;
        let mut masks = Vec::with_capacity(self.nv);
        for v in 0..self.nv {
            let base = splat(cg, cg.i64().vec_type(lanes), cg.const_i64(v as i64 * self.lanes).into())?;
            let col = cg.b.build_int_add(iota, base, "")?;
            masks.push(cg.b.build_int_compare(IntPredicate::SLT, col, cols_v, "mask")?);
        }
        let align = cg.i32().const_int(self.elem_bytes as u64, false);
        for r in 0..self.mr {
            let live = cg.b.build_int_compare(IntPredicate::SLT, cg.const_i64(r as i64), rows, "")?;
            cg.if_then("row", live, || {
                for v in 0..self.nv {
                    let p = self.address(cg, r, v)?;
                    let mut x = tile[r * self.nv + v];
                    if add_to_c {
                        let old = cg
                            .call_intrinsic(
                                "llvm.masked.load",
                                &[self.vt.into(), cg.ptr().into()],
                                &[p.into(), align.into(), masks[v].into(), self.vt.const_zero().into()],
                            )?
                            .into_vector_value();
                        x = add(cg, self.is_float, x, old)?;
                    }
                    let store = cg.intrinsic("llvm.masked.store", &[self.vt.into(), cg.ptr().into()])?;
                    cg.call_void(store, &[x.into(), p.into(), align.into(), masks[v].into()])?;
                }
                Ok(())
            })?;
        }
        Ok(())
    }
}
