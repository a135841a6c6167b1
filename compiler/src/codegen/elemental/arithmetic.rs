//! Elementwise unary and binary arithmetic on integers, floats and complex numbers, with
//! XLA:CPU's results at the edges (integer division by zero, shifts past the width, NaN and
//! signed zeros in maximum/minimum).
//!
//! Floats narrower than f32 (f16, bf16, the f8 formats) are computed in f32 and rounded back
//! after every op, as XLA does.

use super::{Elemental, Val};
use crate::codegen::index::Index;
use crate::error::{Error, Result};
use crate::hlo::{InstrId, Opcode};
use hlojit_runtime::ElementType;
use inkwell::values::{BasicValueEnum, FloatValue, IntValue};
use inkwell::{FloatPredicate, IntPredicate};

impl<'a, 'ctx> Elemental<'a, 'ctx> {
    pub(super) fn gen_unary(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let inst = self.comp.get(id);
        let opcode = inst.opcode;
        let operand = inst.operands[0];
        let in_type = self.element_type(operand)?;
        let out_type = self.element_type(id)?;
        let x = self.gen_scalar(operand, index)?;
        let v = if in_type.is_complex() {
            self.complex_unary(opcode, in_type, x)?
        } else if in_type.is_float() {
            let wide = self.float_to_compute(x, in_type)?;
            // XLA leaves an f16 log to LLVM, which computes it with libm's logf (xla_log.rs).
            let r = if in_type == ElementType::F16 && opcode == Opcode::Log {
                self.xla_log_f16(wide)?.into()
            } else if in_type == ElementType::F32 && opcode == Opcode::Rsqrt {
                // The processor's approximation and a Newton step, as XLA (xla_rsqrt.rs).
                self.xla_rsqrt_f32(wide)?.into()
            } else if in_type == ElementType::F16 && opcode == Opcode::Expm1 {
                // XLA computes f16 expm1 in f16 arithmetic (xla_expm1.rs).
                self.xla_expm1_f16(wide)?.into()
            } else if opcode == Opcode::Logistic && wide.get_type() == self.cg.llvm.f32_type() && in_type != ElementType::F32 {
                // XLA expands logistic into ops of the element type (xla_logistic.rs).
                self.xla_logistic_narrow(wide, in_type)?.into()
            } else {
                self.float_unary(opcode, wide)?
            };
            match r {
                BasicValueEnum::FloatValue(f) if out_type.is_float() => self.compute_to_float(f, out_type)?,
                other => other,
            }
        } else {
            self.int_unary(opcode, in_type, x.into_int_value())?
        };
        Ok(Val::Scalar(v))
    }

    pub(super) fn gen_binary(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let inst = self.comp.get(id);
        let opcode = inst.opcode;
        let (lhs, rhs) = (inst.operands[0], inst.operands[1]);
        let t = self.element_type(lhs)?;
        let out_type = self.element_type(id)?;
        let a = self.gen_scalar(lhs, index)?;
        let b = self.gen_scalar(rhs, index)?;
        let v = if opcode == Opcode::StochasticConvert {
            self.stochastic_convert(t, out_type, a, b, self.element_type(rhs)?)?
        } else if opcode == Opcode::Complex {
            let part = out_type.complex_component().expect("complex result");
            let re = self.float_to_compute(a, t)?;
            let im = self.float_to_compute(b, t)?;
            let re = self.compute_to_float(re, part)?.into_float_value();
            let im = self.compute_to_float(im, part)?.into_float_value();
            self.cg.make_complex(out_type, re, im)?
        } else if t.is_complex() {
            self.complex_binary(opcode, t, a, b)?
        } else if t.is_float() {
            let wa = self.float_to_compute(a, t)?;
            let wb = self.float_to_compute(b, t)?;
            let r = self.float_binary(opcode, t, wa, wb)?;
            self.compute_to_float(r, t)?
        } else if opcode == Opcode::Power && inst.attrs.small_call {
            self.int_power_small_call(a.into_int_value(), b.into_int_value())?.into()
        } else {
            self.int_binary(opcode, t, a.into_int_value(), b.into_int_value())?
                .into()
        };
        Ok(Val::Scalar(v))
    }

    /// A float element widened to the type it is computed in: f32 for f32 and narrower, f64
    /// for f64.
    pub fn float_to_compute(&self, v: BasicValueEnum<'ctx>, t: ElementType) -> Result<FloatValue<'ctx>> {
        let cg = self.cg;
        match t {
            ElementType::F32 | ElementType::F64 => Ok(v.into_float_value()),
            ElementType::F16 => Ok(cg.b.build_float_ext(v.into_float_value(), cg.llvm.f32_type(), "")?),
            // Widened on the bits, not with fpext, which LLVM 19 narrows into bfloat code its
            // x86 back end miscompiles (see `bf16_to_f32`).
            ElementType::BF16 => self.bf16_to_f32(v.into_float_value()),
            _ if t.is_small_float() => self.small_float_to_f32(v.into_int_value(), t),
            _ => Err(Error::Internal(format!("{t} is not a float type"))),
        }
    }

    /// Rounds a computed f32/f64 value back to float type `t`.
    pub fn compute_to_float(&self, v: FloatValue<'ctx>, t: ElementType) -> Result<BasicValueEnum<'ctx>> {
        let from_f64 = v.get_type() == self.cg.llvm.f64_type();
        match t {
            ElementType::F64 if from_f64 => Ok(v.into()),
            ElementType::F32 if !from_f64 => Ok(v.into()),
            _ => self.round_to_float(v, t),
        }
    }

    fn float_unary(&self, op: Opcode, x: FloatValue<'ctx>) -> Result<BasicValueEnum<'ctx>> {
        let cg = self.cg;
        let ft = x.get_type();
        let intr = |name: &str| -> Result<BasicValueEnum<'ctx>> { cg.call_intrinsic(name, &[ft.into()], &[x.into()]) };
        use Opcode::*;
        Ok(match op {
            Abs => intr("llvm.fabs")?,
            Negate => cg.b.build_float_neg(x, "")?.into(),
            Ceil => intr("llvm.ceil")?,
            Floor => intr("llvm.floor")?,
            RoundNearestAfz => intr("llvm.round")?,
            RoundNearestEven => intr("llvm.roundeven")?,
            Sqrt => intr("llvm.sqrt")?,
            Rsqrt => {
                let s = intr("llvm.sqrt")?.into_float_value();
                cg.b.build_float_div(ft.const_float(1.0), s, "")?.into()
            }
            Copy | Real => x.into(),
            Imag => ft.const_zero().into(),
            IsFinite => {
                let a = intr("llvm.fabs")?.into_float_value();
                cg.b.build_float_compare(FloatPredicate::OLT, a, ft.const_float(f64::INFINITY), "")?
                    .into()
            }
            Sign => self.float_sign_value(x)?.into(),
            Exp | Expm1 | Log | Log1p | Logistic | Sine | Cosine | Tan | Tanh | Erf | Cbrt => {
                self.float_math_unary(op, x)?.into()
            }
            other => return Err(Error::Unsupported(format!("{other} on floats"))),
        })
    }

    /// sign(x): ±1, ±0 for ±0, NaN for NaN. As in XLA, copysign((x != 0) as float, x): with
    /// flush-to-zero a subnormal x compares equal to 0 and gives ±0.
    pub(super) fn float_sign_value(&self, x: FloatValue<'ctx>) -> Result<FloatValue<'ctx>> {
        let cg = self.cg;
        let ft = x.get_type();
        let nonzero = cg.b.build_float_compare(FloatPredicate::ONE, x, ft.const_zero(), "")?;
        let magnitude = cg.b.build_unsigned_int_to_float(nonzero, ft, "")?;
        let signed = cg
            .call_intrinsic("llvm.copysign", &[ft.into()], &[magnitude.into(), x.into()])?
            .into_float_value();
        let is_nan = cg.b.build_float_compare(FloatPredicate::UNO, x, x, "")?;
        Ok(cg.b.build_select(is_nan, x, signed, "")?.into_float_value())
    }

    /// `a op b` on values of float type `t` widened to their compute type.
    pub(super) fn float_binary(
        &self,
        op: Opcode,
        t: ElementType,
        a: FloatValue<'ctx>,
        b: FloatValue<'ctx>,
    ) -> Result<FloatValue<'ctx>> {
        let cg = self.cg;
        use Opcode::*;
        Ok(match op {
            Add => cg.b.build_float_add(a, b, "")?,
            Subtract => cg.b.build_float_sub(a, b, "")?,
            Multiply => cg.b.build_float_mul(a, b, "")?,
            Divide => cg.b.build_float_div(a, b, "")?,
            Remainder => cg.b.build_float_rem(a, b, "")?,
            // NaN-propagating, -0 < +0, and the NaN bits XLA:CPU's lowering gives (minmax.rs).
            Maximum | Minimum => super::minmax::float_max_min(cg, op == Maximum, t, a, b)?,
            Power | Atan2 => self.float_math_binary(op, a, b)?,
            other => return Err(Error::Unsupported(format!("{other} on floats"))),
        })
    }

    fn int_unary(&self, op: Opcode, t: ElementType, x: IntValue<'ctx>) -> Result<BasicValueEnum<'ctx>> {
        let cg = self.cg;
        let it = x.get_type();
        use Opcode::*;
        Ok(match op {
            Not => cg.b.build_not(x, "")?.into(),
            Negate => cg.b.build_int_neg(x, "")?.into(),
            Abs if t.is_signed_int() => {
                cg.call_intrinsic("llvm.abs", &[it.into()], &[x.into(), cg.const_bool(false).into()])?
            }
            Abs | Copy | Real => x.into(),
            Popcnt => cg.call_intrinsic("llvm.ctpop", &[it.into()], &[x.into()])?,
            Clz => cg.call_intrinsic("llvm.ctlz", &[it.into()], &[x.into(), cg.const_bool(false).into()])?,
            Sign if t.is_signed_int() => {
                let pos = cg.b.build_int_compare(IntPredicate::SGT, x, it.const_zero(), "")?;
                let neg = cg.b.build_int_compare(IntPredicate::SLT, x, it.const_zero(), "")?;
                let pos = cg.b.build_int_z_extend(pos, it, "")?;
                let neg = cg.b.build_int_z_extend(neg, it, "")?;
                cg.b.build_int_sub(pos, neg, "")?.into()
            }
            Sign => {
                let nz = cg.b.build_int_compare(IntPredicate::NE, x, it.const_zero(), "")?;
                cg.b.build_int_z_extend(nz, it, "")?.into()
            }
            other => return Err(Error::Unsupported(format!("{other} on {t}"))),
        })
    }

    pub(super) fn int_binary(
        &self,
        op: Opcode,
        t: ElementType,
        a: IntValue<'ctx>,
        b: IntValue<'ctx>,
    ) -> Result<IntValue<'ctx>> {
        let cg = self.cg;
        let it = a.get_type();
        let signed = t.is_signed_int();
        let zero = it.const_zero();
        let all_ones = it.const_all_ones();
        use Opcode::*;
        Ok(match op {
            Add => cg.b.build_int_add(a, b, "")?,
            Subtract => cg.b.build_int_sub(a, b, "")?,
            Multiply => cg.b.build_int_mul(a, b, "")?,
            MulHi => {
                // The upper half of the exact product: widen to twice the width (sign- or
                // zero-extended as the type is read), multiply, keep the high bits. LLVM lowers
                // the i128 product of 64-bit operands to one widening multiply on x86.
                let bits = it.get_bit_width();
                let wide = cg.int_type(2 * bits);
                let (wa, wb) = if signed {
                    (cg.b.build_int_s_extend(a, wide, "")?, cg.b.build_int_s_extend(b, wide, "")?)
                } else {
                    (cg.b.build_int_z_extend(a, wide, "")?, cg.b.build_int_z_extend(b, wide, "")?)
                };
                let p = cg.b.build_int_mul(wa, wb, "")?;
                let hi = cg.b.build_right_shift(p, wide.const_int(bits as u64, false), false, "")?;
                cg.b.build_int_truncate(hi, it, "")?
            }
            And => cg.b.build_and(a, b, "")?,
            Or => cg.b.build_or(a, b, "")?,
            Xor => cg.b.build_xor(a, b, "")?,
            Maximum | Minimum => {
                let name = match (op == Maximum, signed) {
                    (true, true) => "llvm.smax",
                    (true, false) => "llvm.umax",
                    (false, true) => "llvm.smin",
                    (false, false) => "llvm.umin",
                };
                cg.call_intrinsic(name, &[it.into()], &[a.into(), b.into()])?
                    .into_int_value()
            }
            Divide | Remainder => {
                // XLA: x / 0 = -1 (all ones), x % 0 = x; INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0.
                let is_zero = cg.b.build_int_compare(IntPredicate::EQ, b, zero, "")?;
                let mut unsafe_divisor = is_zero;
                if signed {
                    let min = it.const_int(1u64 << (it.get_bit_width() - 1), false);
                    let a_min = cg.b.build_int_compare(IntPredicate::EQ, a, min, "")?;
                    let b_neg1 = cg.b.build_int_compare(IntPredicate::EQ, b, all_ones, "")?;
                    let overflow = cg.b.build_and(a_min, b_neg1, "")?;
                    unsafe_divisor = cg.b.build_or(is_zero, overflow, "")?;
                    let safe_b =
                        cg.b.build_select(unsafe_divisor, it.const_int(1, false), b, "")?
                            .into_int_value();
                    if op == Divide {
                        let q = cg.b.build_int_signed_div(a, safe_b, "")?;
                        // overflow: a / 1 = INT_MIN already; division by zero: -1.
                        cg.b.build_select(is_zero, all_ones, q, "")?.into_int_value()
                    } else {
                        let r = cg.b.build_int_signed_rem(a, safe_b, "")?;
                        let r = cg.b.build_select(overflow, zero, r, "")?.into_int_value();
                        cg.b.build_select(is_zero, a, r, "")?.into_int_value()
                    }
                } else {
                    let safe_b =
                        cg.b.build_select(unsafe_divisor, it.const_int(1, false), b, "")?
                            .into_int_value();
                    if op == Divide {
                        let q = cg.b.build_int_unsigned_div(a, safe_b, "")?;
                        cg.b.build_select(is_zero, all_ones, q, "")?.into_int_value()
                    } else {
                        let r = cg.b.build_int_unsigned_rem(a, safe_b, "")?;
                        cg.b.build_select(is_zero, a, r, "")?.into_int_value()
                    }
                }
            }
            ShiftLeft | ShiftRightLogical | ShiftRightArithmetic => {
                // Shift amounts are unsigned; at or past the width the result is 0, or the sign
                // fill for an arithmetic right shift.
                let width = it.const_int(it.get_bit_width() as u64, false);
                let too_far = cg.b.build_int_compare(IntPredicate::UGE, b, width, "")?;
                let safe = cg.b.build_select(too_far, zero, b, "")?.into_int_value();
                match op {
                    ShiftLeft => {
                        let s = cg.b.build_left_shift(a, safe, "")?;
                        cg.b.build_select(too_far, zero, s, "")?.into_int_value()
                    }
                    ShiftRightLogical => {
                        let s = cg.b.build_right_shift(a, safe, false, "")?;
                        cg.b.build_select(too_far, zero, s, "")?.into_int_value()
                    }
                    _ => {
                        let max_shift = it.const_int(it.get_bit_width() as u64 - 1, false);
                        let amount = cg.b.build_select(too_far, max_shift, b, "")?.into_int_value();
                        cg.b.build_right_shift(a, amount, true, "")?
                    }
                }
            }
            Power => self.int_power(a, b)?,
            other => return Err(Error::Unsupported(format!("{other} on {t}"))),
        })
    }

    /// Integer power as XLA:CPU computes it: six squaring steps, so only the exponent's low six
    /// bits count (larger exponents overflow anyway, except for bases 0, 1 and -1, where
    /// XLA's result is what is reproduced here). An exponent that is negative when read as
    /// signed (also for unsigned types) gives 1 for base 1, ±1 by parity for base -1 (all
    /// bits set) and 0 otherwise.
    fn int_power(&self, base: IntValue<'ctx>, exp: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
        let (acc, negative_result) = self.int_power_parts(base, exp)?;
        let cg = self.cg;
        let one = base.get_type().const_int(1, false);
        let all_ones = base.get_type().const_all_ones();
        let zero = base.get_type().const_zero();
        let is_minus_one = cg.b.build_int_compare(IntPredicate::EQ, base, all_ones, "")?;
        let odd =
            cg.b.build_int_compare(IntPredicate::NE, cg.b.build_and(exp, one, "")?, zero, "")?;
        let minus_one_result = cg.b.build_select(odd, all_ones, one, "")?.into_int_value();
        let neg_result = cg.b.build_select(is_minus_one, minus_one_result, negative_result, "")?.into_int_value();
        let negative = cg.b.build_int_compare(IntPredicate::SLT, exp, zero, "")?;
        Ok(cg.b.build_select(negative, neg_result, acc, "")?.into_int_value())
    }

    /// Integer power as XLA:CPU's legacy elemental emitter computes it inside a while loop's
    /// small-call kernel (`passes::small_call_marks`): the same six squaring steps, but a
    /// negative exponent gives 1 for base 1 and 0 for every other base, -1 included.
    fn int_power_small_call(&self, base: IntValue<'ctx>, exp: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
        let (acc, negative_result) = self.int_power_parts(base, exp)?;
        let cg = self.cg;
        let zero = base.get_type().const_zero();
        let negative = cg.b.build_int_compare(IntPredicate::SLT, exp, zero, "")?;
        Ok(cg.b.build_select(negative, negative_result, acc, "")?.into_int_value())
    }

    /// What both integer powers share: the product over the exponent's low six bits, and the
    /// result of a negative exponent for any base but -1 (1 for base 1, else 0).
    fn int_power_parts(&self, base: IntValue<'ctx>, exp: IntValue<'ctx>) -> Result<(IntValue<'ctx>, IntValue<'ctx>)> {
        let cg = self.cg;
        let it = base.get_type();
        let one = it.const_int(1, false);
        let zero = it.const_zero();
        let mut acc = one;
        let mut b = base;
        let mut e = exp;
        for step in 0..6 {
            let low = cg.b.build_and(e, one, "")?;
            let odd = cg.b.build_int_compare(IntPredicate::NE, low, zero, "")?;
            let mul = cg.b.build_int_mul(acc, b, "")?;
            acc = cg.b.build_select(odd, mul, acc, "")?.into_int_value();
            if step < 5 {
                b = cg.b.build_int_mul(b, b, "")?;
                e = cg.b.build_right_shift(e, one, false, "")?;
            }
        }
        let is_one = cg.b.build_int_compare(IntPredicate::EQ, base, one, "")?;
        let negative_result = cg.b.build_select(is_one, one, zero, "")?.into_int_value();
        Ok((acc, negative_result))
    }
}
