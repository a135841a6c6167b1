//! compare (every direction, float / signed / unsigned / total order), select and clamp.

use super::{Elemental, Val};
use crate::codegen::index::Index;
use crate::error::Result;
use crate::hlo::{ComparisonDirection, ComparisonType, InstrId, Opcode};
use hlojit_runtime::ElementType;
use inkwell::values::{BasicValueEnum, IntValue};
use inkwell::{FloatPredicate, IntPredicate};

impl<'a, 'ctx> Elemental<'a, 'ctx> {
    pub(super) fn gen_compare(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let inst = self.comp.get(id);
        let dir = inst.attrs.direction.unwrap_or(ComparisonDirection::Eq);
        let kind = inst.attrs.comparison_type;
        let (lhs, rhs) = (inst.operands[0], inst.operands[1]);
        let t = self.element_type(lhs)?;
        let a = self.gen_scalar(lhs, index)?;
        let b = self.gen_scalar(rhs, index)?;
        Ok(Val::Scalar(self.compare_values(dir, kind, t, a, b)?.into()))
    }

    /// `a <dir> b` for elements of type `t`.
    pub fn compare_values(
        &self,
        dir: ComparisonDirection,
        kind: Option<ComparisonType>,
        t: ElementType,
        a: BasicValueEnum<'ctx>,
        b: BasicValueEnum<'ctx>,
    ) -> Result<IntValue<'ctx>> {
        let cg = self.cg;
        use ComparisonDirection::*;
        if t.is_complex() {
            let (ar, ai) = cg.complex_parts(a)?;
            let (br, bi) = cg.complex_parts(b)?;
            let (p, join_and) = match dir {
                Ne => (FloatPredicate::UNE, false),
                _ => (FloatPredicate::OEQ, true),
            };
            let re = cg.b.build_float_compare(p, ar, br, "")?;
            let im = cg.b.build_float_compare(p, ai, bi, "")?;
            return Ok(if join_and {
                cg.b.build_and(re, im, "")?
            } else {
                cg.b.build_or(re, im, "")?
            });
        }
        if t.is_float() && kind == Some(ComparisonType::TotalOrder) {
            let ka = self.total_order_key(t, a)?;
            let kb = self.total_order_key(t, b)?;
            return Ok(cg.b.build_int_compare(signed_predicate(dir), ka, kb, "")?);
        }
        if t.is_float() {
            let fa = self.float_to_compute(a, t)?;
            let fb = self.float_to_compute(b, t)?;
            let p = match dir {
                Eq => FloatPredicate::OEQ,
                Ne => FloatPredicate::UNE,
                Lt => FloatPredicate::OLT,
                Le => FloatPredicate::OLE,
                Gt => FloatPredicate::OGT,
                Ge => FloatPredicate::OGE,
            };
            return Ok(cg.b.build_float_compare(p, fa, fb, "")?);
        }
        let p = if t.is_signed_int() {
            signed_predicate(dir)
        } else {
            unsigned_predicate(dir)
        };
        Ok(cg.b.build_int_compare(p, a.into_int_value(), b.into_int_value(), "")?)
    }

    /// A signed integer whose order is the IEEE total order of the float's bit pattern
    /// (-NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN); subnormals are not flushed.
    fn total_order_key(&self, t: ElementType, v: BasicValueEnum<'ctx>) -> Result<IntValue<'ctx>> {
        let cg = self.cg;
        let bits = t.bit_width();
        let it = cg.int_type(bits);
        let raw = if t.is_small_float() {
            v.into_int_value()
        } else {
            cg.b.build_bit_cast(v, it, "")?.into_int_value()
        };
        // Negative values: flip all bits but the sign, so that more negative is smaller.
        let sign_fill =
            cg.b.build_right_shift(raw, it.const_int(bits as u64 - 1, false), true, "")?;
        let mask = cg.b.build_right_shift(sign_fill, it.const_int(1, false), false, "")?;
        Ok(cg.b.build_xor(raw, mask, "")?)
    }

    pub(super) fn gen_select(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let cg = self.cg;
        let inst = self.comp.get(id);
        let (p, on_true, on_false) = (inst.operands[0], inst.operands[1], inst.operands[2]);
        let pred_index = if self.comp.get(p).shape.is_scalar() {
            Index::scalar(cg)
        } else {
            index.clone()
        };
        let c = self.gen_scalar(p, &pred_index)?.into_int_value();
        let a = self.gen(on_true, index)?;
        let b = self.gen(on_false, index)?;
        select_vals(cg, c, a, b)
    }

    pub(super) fn gen_clamp(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let cg = self.cg;
        let inst = self.comp.get(id);
        let (lo, x, hi) = (inst.operands[0], inst.operands[1], inst.operands[2]);
        let t = self.element_type(x)?;
        let at = |e: &Self, o: InstrId| {
            if e.comp.get(o).shape.is_scalar() {
                Index::scalar(cg)
            } else {
                index.clone()
            }
        };
        let lo_index = at(self, lo);
        let hi_index = at(self, hi);
        let lo_v = self.gen_scalar(lo, &lo_index)?;
        let x_v = self.gen_scalar(x, index)?;
        let hi_v = self.gen_scalar(hi, &hi_index)?;
        // clamp = minimum(maximum(lo, x), hi), the operand order of XLA:CPU's IR (jaxlib 0.10;
        // older XLA sources read minimum(hi, maximum(lo, x))): which NaN comes out depends on
        // it (minmax.rs); 216 triples of NaNs and numbers measured.
        let v = if t.is_float() {
            let (l, v, h) = (
                self.float_to_compute(lo_v, t)?,
                self.float_to_compute(x_v, t)?,
                self.float_to_compute(hi_v, t)?,
            );
            let m = self.float_binary(Opcode::Maximum, t, l, v)?;
            let m = self.float_binary(Opcode::Minimum, t, m, h)?;
            self.compute_to_float(m, t)?
        } else {
            let m = self.int_binary(Opcode::Maximum, t, x_v.into_int_value(), lo_v.into_int_value())?;
            self.int_binary(Opcode::Minimum, t, m, hi_v.into_int_value())?.into()
        };
        Ok(Val::Scalar(v))
    }
}

fn signed_predicate(dir: ComparisonDirection) -> IntPredicate {
    use ComparisonDirection::*;
    match dir {
        Eq => IntPredicate::EQ,
        Ne => IntPredicate::NE,
        Lt => IntPredicate::SLT,
        Le => IntPredicate::SLE,
        Gt => IntPredicate::SGT,
        Ge => IntPredicate::SGE,
    }
}

fn unsigned_predicate(dir: ComparisonDirection) -> IntPredicate {
    use ComparisonDirection::*;
    match dir {
        Eq => IntPredicate::EQ,
        Ne => IntPredicate::NE,
        Lt => IntPredicate::ULT,
        Le => IntPredicate::ULE,
        Gt => IntPredicate::UGT,
        Ge => IntPredicate::UGE,
    }
}

/// `c ? a : b` elementwise over (possibly tuple) values.
pub fn select_vals<'ctx>(
    cg: &crate::codegen::context::Codegen<'ctx>,
    c: IntValue<'ctx>,
    a: Val<'ctx>,
    b: Val<'ctx>,
) -> Result<Val<'ctx>> {
    match (a, b) {
        (Val::Scalar(x), Val::Scalar(y)) => Ok(Val::Scalar(cg.b.build_select(c, x, y, "")?)),
        (Val::Tuple(xs), Val::Tuple(ys)) => Ok(Val::Tuple(
            xs.into_iter()
                .zip(ys)
                .map(|(x, y)| select_vals(cg, c, x, y))
                .collect::<Result<_>>()?,
        )),
        _ => Err(crate::error::Error::Internal(
            "select between values of different structure".into(),
        )),
    }
}
