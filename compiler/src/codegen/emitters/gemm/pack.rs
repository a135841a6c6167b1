//! Packing: copying a strip of an operand into the contiguous, zero-padded panel layout the
//! micro-kernel reads (`dst[k * w + i]` for the strip's `w` rows and `depth` values of k),
//! converting elements to the compute type on the way. This is where operand layouts,
//! element types and fused producers stop mattering.

use super::operand::Operand;
use crate::codegen::context::Codegen;
use crate::codegen::elemental::Elemental;
use crate::codegen::loops::for_loop;
use crate::error::Result;
use hlojit_runtime::ElementType;
use inkwell::values::{BasicValueEnum, IntValue, PointerValue};
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
}

/// Packs `strip` of `op` into `dst`.
pub fn pack_strip<'ctx>(
    ptrs: &[PointerValue<'ctx>],
    e: &mut Elemental<'_, 'ctx>,
    op: &Operand,
    conv: &Conversion,
    dst: PointerValue<'ctx>,
    s: &Strip<'ctx>,
) -> Result<()> {
    let cg = e.cg;
    let elem = cg.value_type(conv.compute);
    let zero = elem_zero(cg, conv.compute);
    let store = |cg: &Codegen<'ctx>, k: IntValue<'ctx>, i: IntValue<'ctx>, v: BasicValueEnum<'ctx>| -> Result<()> {
        let row = cg.b.build_int_nsw_mul(k, cg.const_i64(s.w), "")?;
        let off = cg.b.build_int_nsw_add(row, i, "")?;
        let p = cg.gep(elem, dst, off)?;
        cg.b.build_store(p, v)?;
        Ok(())
    };
    let w = cg.const_i64(s.w);
    if matches!(op.strides(), Some((_, 1))) {
        // k is contiguous in memory: one row at a time, reading along k.
        return for_loop(cg, "pack.i", cg.const_i64(0), w, |i| {
            let live = cg.b.build_int_compare(IntPredicate::SLT, i, s.valid, "")?;
            let row = cg.b.build_int_nsw_add(s.p0, i, "")?;
            let then_bb = cg.block("pack.live");
            let else_bb = cg.block("pack.pad");
            let done = cg.block("pack.row.done");
            cg.b.build_conditional_branch(live, then_bb, else_bb)?;
            cg.b.position_at_end(then_bb);
            for_loop(cg, "pack.k", cg.const_i64(0), s.depth, |k| {
                e.scoped(|e| {
                    let col = cg.b.build_int_nsw_add(s.k0, k, "")?;
                    let v = op.load(ptrs, e, s.b, row, col)?;
                    let v = conv.operand(e, v, op.ty)?;
                    store(cg, k, i, v)
                })
            })?;
            cg.b.build_unconditional_branch(done)?;
            cg.b.position_at_end(else_bb);
            for_loop(cg, "pack.z", cg.const_i64(0), s.depth, |k| store(cg, k, i, zero))?;
            cg.b.build_unconditional_branch(done)?;
            cg.b.position_at_end(done);
            Ok(())
        });
    }
    // Otherwise walk k outside and the strip's rows inside (contiguous when rows are).
    let full = cg.b.build_int_compare(IntPredicate::EQ, s.valid, w, "")?;
    let full_bb = cg.block("pack.full");
    let edge_bb = cg.block("pack.edge");
    let done = cg.block("pack.done");
    cg.b.build_conditional_branch(full, full_bb, edge_bb)?;
    cg.b.position_at_end(full_bb);
    for_loop(cg, "pack.k", cg.const_i64(0), s.depth, |k| {
        let col = cg.b.build_int_nsw_add(s.k0, k, "")?;
        for_loop(cg, "pack.i", cg.const_i64(0), w, |i| {
            e.scoped(|e| {
                let row = cg.b.build_int_nsw_add(s.p0, i, "")?;
                let v = op.load(ptrs, e, s.b, row, col)?;
                let v = conv.operand(e, v, op.ty)?;
                store(cg, k, i, v)
            })
        })
    })?;
    cg.b.build_unconditional_branch(done)?;
    cg.b.position_at_end(edge_bb);
    let last = cg.b.build_int_nsw_sub(s.valid, cg.const_i64(1), "")?;
    for_loop(cg, "pack.k", cg.const_i64(0), s.depth, |k| {
        let col = cg.b.build_int_nsw_add(s.k0, k, "")?;
        for_loop(cg, "pack.i", cg.const_i64(0), w, |i| {
            e.scoped(|e| {
                // Rows past the edge read the last real row (always in bounds) and store zero.
                let live = cg.b.build_int_compare(IntPredicate::SLT, i, s.valid, "")?;
                let clamped = cg.b.build_select(live, i, last, "")?.into_int_value();
                let row = cg.b.build_int_nsw_add(s.p0, clamped, "")?;
                let v = op.load(ptrs, e, s.b, row, col)?;
                let v = conv.operand(e, v, op.ty)?;
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
