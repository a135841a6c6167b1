//! Packing: copying a strip of an operand into the contiguous, zero-padded panel layout the
//! micro-kernel reads (`dst[k * w + i]` for the strip's `w` rows and `depth` values of k),
//! converting elements to the compute type on the way. This is where operand layouts,
//! element types and fused producers stop mattering.

use super::operand::{Operand, Source};
use crate::codegen::context::Codegen;
use crate::codegen::elemental::Elemental;
use super::loops::scalar_loop;
use crate::codegen::loops::for_loop;
use crate::error::Result;
use hlojit_runtime::ElementType;
use inkwell::values::{BasicValueEnum, FunctionValue, IntValue, PointerValue};
use inkwell::IntPredicate;

/// Conversions between operand, result and compute types (XLA's: an operand element is
/// converted to the result type, then widened to the compute type; the sum is narrowed to the
/// result type at the end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conversion {
    pub out: ElementType,
    pub compute: ElementType,
}

impl Conversion {
    /// An operand element of type `from` in the compute type.
    pub fn operand<'ctx>(&self, e: &Elemental<'_, 'ctx>, v: BasicValueEnum<'ctx>, from: ElementType) -> Result<BasicValueEnum<'ctx>> {
        let cg = e.cg;
        let v = e.convert_value(v, from, self.out)?;
        if self.compute.is_float() {
            return Ok(e.float_to_compute(v, self.out)?.into());
        }
        let wide = cg.value_type(self.compute).into_int_type();
        let v = v.into_int_value();
        if v.get_type() == wide {
            return Ok(v.into());
        }
        Ok(cg.b.build_int_cast_sign_flag(v, wide, self.out.is_signed_int(), "")?.into())
    }

    /// A compute-type sum as a result element.
    pub fn finish<'ctx>(&self, e: &Elemental<'_, 'ctx>, v: BasicValueEnum<'ctx>) -> Result<BasicValueEnum<'ctx>> {
        let cg = e.cg;
        if self.compute.is_float() {
            return e.compute_to_float(v.into_float_value(), self.out);
        }
        let narrow = cg.value_type(self.out).into_int_type();
        let v = v.into_int_value();
        if v.get_type() == narrow {
            return Ok(v.into());
        }
        Ok(cg.b.build_int_truncate(v, narrow, "")?.into())
    }
}

/// One strip to pack: rows `p0 .. p0 + w` of `op` (only the first `valid` exist; the rest
/// are zeros) and columns `k0 .. k0 + depth`, of batch `b`.
pub struct Strip<'ctx> {
    pub b: IntValue<'ctx>,
    pub p0: IntValue<'ctx>,
    pub valid: IntValue<'ctx>,
    pub k0: IntValue<'ctx>,
    pub depth: IntValue<'ctx>,
    pub w: i64,
    /// Pack bf16 pairs for the AVX512_BF16 micro-kernel: element `(i, k)` at
    /// `((k / 2) * w + i) * 2 + k % 2`, kept as bf16 (an odd depth is padded with a zero).
    pub pairs: bool,
}

/// Packs `strip` of `op` into `dst`. Strips of buffers are packed by a function shared by
/// all kernels of the module with the same element types, width and contiguity; generated
/// operands are packed inline.
pub fn pack_strip<'ctx>(
    ptrs: &[PointerValue<'ctx>],
    e: &mut Elemental<'_, 'ctx>,
    op: &Operand,
    conv: &Conversion,
    dst: PointerValue<'ctx>,
    s: &Strip<'ctx>,
) -> Result<()> {
    let cg = e.cg;
    if let Source::Strided { slot, batch, row, col } = op.source {
        let mut off = batch.offset(cg, s.b)?;
        off = cg.b.build_int_nsw_add(off, cg.b.build_int_nsw_mul(s.p0, cg.const_i64(row), "")?, "")?;
        off = cg.b.build_int_nsw_add(off, cg.b.build_int_nsw_mul(s.k0, cg.const_i64(col), "")?, "")?;
        let src = cg.gep(cg.memory_type(op.ty), ptrs[slot], off)?;
        let kind = if col == 1 {
            Contiguity::Depth
        } else if row == 1 {
            Contiguity::Rows
        } else {
            Contiguity::None
        };
        let f = strided_packer(e, op.ty, conv, s.w, kind, s.pairs)?;
        let args = [src.into(), cg.const_i64(row).into(), cg.const_i64(col).into(), dst.into(), s.valid.into(), s.depth.into()];
        return cg.call_void(f, &args);
    }
    let (b, p0, k0) = (s.b, s.p0, s.k0);
    let mut load = |e: &mut Elemental<'_, 'ctx>, i: IntValue<'ctx>, k: IntValue<'ctx>| -> Result<BasicValueEnum<'ctx>> {
        let row = cg.b.build_int_nsw_add(p0, i, "")?;
        let col = cg.b.build_int_nsw_add(k0, k, "")?;
        op.load(ptrs, e, b, row, col)
    };
    pack_loops(e, op.ty, conv, dst, s.valid, s.depth, s.w, false, true, s.pairs, &mut load)
}

/// Which of a strided operand's strides is 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Contiguity {
    Depth,
    Rows,
    None,
}

/// `void pack(ptr src, i64 row_stride, i64 col_stride, ptr dst, i64 valid, i64 depth)`:
/// packs rows `0 .. w` (the first `valid` real) and columns `0 .. depth` of the strided matrix
/// at `src`.
fn strided_packer<'ctx>(
    e: &Elemental<'_, 'ctx>,
    ty: ElementType,
    conv: &Conversion,
    w: i64,
    kind: Contiguity,
    pairs: bool,
) -> Result<FunctionValue<'ctx>> {
    let cg = e.cg;
    let name = format!("hlojit.pack.{ty}.{}.{}.w{w}.{kind:?}{}", conv.out, conv.compute, if pairs { ".pairs" } else { "" });
    if let Some(f) = cg.module.get_function(&name) {
        return Ok(f);
    }
    let saved = cg.b.get_insert_block();
    let (p, i) = (cg.ptr().into(), cg.i64().into());
    let f = cg.add_function(&name, cg.fn_type(None, &[p, i, i, p, i, i]), false);
    super::microkernel::set_vector_attributes(cg, f);
    f.add_attribute(inkwell::attributes::AttributeLoc::Function, cg.enum_attr("noinline"));
    let entry = cg.llvm.append_basic_block(f, "entry");
    cg.b.position_at_end(entry);
    let param = |n: u32| f.get_nth_param(n).expect("pack parameter");
    let src = param(0).into_pointer_value();
    let row_stride = if kind == Contiguity::Rows { cg.const_i64(1) } else { param(1).into_int_value() };
    let col_stride = if kind == Contiguity::Depth { cg.const_i64(1) } else { param(2).into_int_value() };
    let dst = param(3).into_pointer_value();
    let valid = param(4).into_int_value();
    let depth = param(5).into_int_value();
    let mem = cg.memory_type(ty);
    let mut load = |_: &mut Elemental<'_, 'ctx>, i: IntValue<'ctx>, k: IntValue<'ctx>| -> Result<BasicValueEnum<'ctx>> {
        let off = cg.b.build_int_nsw_add(cg.b.build_int_nsw_mul(i, row_stride, "")?, cg.b.build_int_nsw_mul(k, col_stride, "")?, "")?;
        cg.load_element(ty, cg.gep(mem, src, off)?)
    };
    let mut scratch = Elemental::with_bindings(cg, e.module, e.comp, Default::default());
    pack_loops(&mut scratch, ty, conv, dst, valid, depth, w, kind == Contiguity::Depth, kind == Contiguity::Rows, pairs, &mut load)?;
    cg.b.build_return(None)?;
    if let Some(bb) = saved {
        cg.b.position_at_end(bb);
    }
    Ok(f)
}

type Loader<'l, 'a, 'ctx> = dyn FnMut(&mut Elemental<'a, 'ctx>, IntValue<'ctx>, IntValue<'ctx>) -> Result<BasicValueEnum<'ctx>> + 'l;

/// The packing loops: `dst[k * w + i] = load(i, k)` converted, zero for rows `i >= valid`.
/// With `depth_contiguous` one row at a time (reads along k), otherwise k outside and the
/// strip's rows inside.
#[allow(clippy::too_many_arguments)]
fn pack_loops<'a, 'ctx>(
    e: &mut Elemental<'a, 'ctx>,
    ty: ElementType,
    conv: &Conversion,
    dst: PointerValue<'ctx>,
    valid: IntValue<'ctx>,
    depth: IntValue<'ctx>,
    w_size: i64,
    depth_contiguous: bool,
    rows_contiguous: bool,
    pairs: bool,
    load: &mut Loader<'_, 'a, 'ctx>,
) -> Result<()> {
    let cg = e.cg;
    let stored = if pairs { ElementType::BF16 } else { conv.compute };
    let elem = cg.value_type(stored);
    let zero = elem_zero(cg, stored);
    let store = |cg: &Codegen<'ctx>, k: IntValue<'ctx>, i: IntValue<'ctx>, v: BasicValueEnum<'ctx>| -> Result<()> {
        let off = if pairs {
            let pair = cg.b.build_right_shift(k, cg.const_i64(1), false, "")?;
            let slot = cg.b.build_int_nsw_add(cg.b.build_int_nsw_mul(pair, cg.const_i64(w_size), "")?, i, "")?;
            let odd = cg.b.build_and(k, cg.const_i64(1), "")?;
            cg.b.build_int_nsw_add(cg.b.build_int_nsw_mul(slot, cg.const_i64(2), "")?, odd, "")?
        } else {
            cg.b.build_int_nsw_add(cg.b.build_int_nsw_mul(k, cg.const_i64(w_size), "")?, i, "")?
        };
        cg.b.build_store(cg.gep(elem, dst, off)?, v)?;
        Ok(())
    };
    let convert = |e: &Elemental<'a, 'ctx>, v: BasicValueEnum<'ctx>| -> Result<BasicValueEnum<'ctx>> {
        if pairs {
            e.convert_value(v, ty, ElementType::BF16)
        } else {
            conv.operand(e, v, ty)
        }
    };
    let w = cg.const_i64(w_size);
    if pairs {
        // An odd depth leaves half a pair: zero it (the micro-kernel reads whole pairs).
        let odd = cg.b.build_and(depth, cg.const_i64(1), "")?;
        let has_half = cg.b.build_int_compare(IntPredicate::NE, odd, cg.const_i64(0), "")?;
        cg.if_then("pack.half", has_half, || {
            for_loop(cg, "pack.hz", cg.const_i64(0), w, |i| store(cg, depth, i, zero))
        })?;
    }
    if depth_contiguous {
        // Reads run along k, stores jump by w: a transpose.
        return scalar_loop(cg, "pack.i", cg.const_i64(0), w, |i| {
            let live = cg.b.build_int_compare(IntPredicate::SLT, i, valid, "")?;
            let then_bb = cg.block("pack.live");
            let else_bb = cg.block("pack.pad");
            let done = cg.block("pack.row.done");
            cg.b.build_conditional_branch(live, then_bb, else_bb)?;
            cg.b.position_at_end(then_bb);
            scalar_loop(cg, "pack.k", cg.const_i64(0), depth, |k| {
                e.scoped(|e| {
                    let v = load(e, i, k)?;
                    let v = convert(e, v)?;
                    store(cg, k, i, v)
                })
            })?;
            cg.b.build_unconditional_branch(done)?;
            cg.b.position_at_end(else_bb);
            scalar_loop(cg, "pack.z", cg.const_i64(0), depth, |k| store(cg, k, i, zero))?;
            cg.b.build_unconditional_branch(done)?;
            cg.b.position_at_end(done);
            Ok(())
        });
    }
    let full = cg.b.build_int_compare(IntPredicate::EQ, valid, w, "")?;
    let full_bb = cg.block("pack.full");
    let edge_bb = cg.block("pack.edge");
    let done = cg.block("pack.done");
    cg.b.build_conditional_branch(full, full_bb, edge_bb)?;
    cg.b.position_at_end(full_bb);
    let mut row = |e: &mut Elemental<'a, 'ctx>, k: IntValue<'ctx>, i: IntValue<'ctx>| -> Result<()> {
        e.scoped(|e| {
            let v = load(e, i, k)?;
            let v = convert(e, v)?;
            store(cg, k, i, v)
        })
    };
    // Whole strips: the strip's rows are vectorized when they are contiguous in memory.
    scalar_loop(cg, "pack.k", cg.const_i64(0), depth, |k| {
        if rows_contiguous {
            for_loop(cg, "pack.i", cg.const_i64(0), w, |i| row(e, k, i))
        } else {
            scalar_loop(cg, "pack.i", cg.const_i64(0), w, |i| row(e, k, i))
        }
    })?;
    cg.b.build_unconditional_branch(done)?;
    cg.b.position_at_end(edge_bb);
    let last = cg.b.build_int_nsw_sub(valid, cg.const_i64(1), "")?;
    scalar_loop(cg, "pack.k", cg.const_i64(0), depth, |k| {
        scalar_loop(cg, "pack.i", cg.const_i64(0), w, |i| {
            e.scoped(|e| {
                // Rows past the edge read the last real row (always in bounds) and store zero.
                let live = cg.b.build_int_compare(IntPredicate::SLT, i, valid, "")?;
                let clamped = cg.b.build_select(live, i, last, "")?.into_int_value();
                let v = load(e, clamped, k)?;
                let v = convert(e, v)?;
                let v = cg.b.build_select(live, v, zero, "")?;
                store(cg, k, i, v)
            })
        })
    })?;
    cg.b.build_unconditional_branch(done)?;
    cg.b.position_at_end(done);
    Ok(())
}

pub fn elem_zero<'ctx>(cg: &Codegen<'ctx>, t: ElementType) -> BasicValueEnum<'ctx> {
    match cg.value_type(t) {
        inkwell::types::BasicTypeEnum::FloatType(f) => f.const_zero().into(),
        other => other.into_int_type().const_zero().into(),
    }
}
