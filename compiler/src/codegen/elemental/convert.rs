//! convert, bitcast-convert and reduce-precision, and the float encodings they rest on.
//!
//! Narrowing to f16, bf16 and the f8/f4 formats is done on the integer bits (round to nearest
//! even, with each format's rules for overflow, NaN and negative zero) so that results are
//! exact whatever the target CPU has; widening small formats goes through a lookup table.

use super::{Elemental, Val};
use crate::codegen::index::Index;
use crate::error::{Error, Result};
use crate::hlo::InstrId;
use hlojit_runtime::element_type::{FloatEncoding, FloatFormat};
use hlojit_runtime::{float_bits, ElementType};
use inkwell::module::Linkage;
use inkwell::values::{BasicValueEnum, FloatValue, IntValue};
use inkwell::{FloatPredicate, IntPredicate};

impl<'a, 'ctx> Elemental<'a, 'ctx> {
    pub(super) fn gen_convert(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let operand = self.comp.get(id).operands[0];
        let from = self.element_type(operand)?;
        let to = self.element_type(id)?;
        let x = self.gen_scalar(operand, index)?;
        Ok(Val::Scalar(self.convert_value(x, from, to)?))
    }

    /// Converts one element from type `from` to type `to` with XLA's semantics.
    pub fn convert_value(
        &self,
        x: BasicValueEnum<'ctx>,
        from: ElementType,
        to: ElementType,
    ) -> Result<BasicValueEnum<'ctx>> {
        let cg = self.cg;
        if from == to {
            return Ok(x);
        }
        if from.is_complex() {
            let (re, im) = cg.complex_parts(x)?;
            if to.is_complex() {
                let part = to.complex_component().expect("complex");
                let re = self
                    .compute_to_float(self.float_resize(re, part)?, part)?
                    .into_float_value();
                let im = self
                    .compute_to_float(self.float_resize(im, part)?, part)?
                    .into_float_value();
                return cg.make_complex(to, re, im);
            }
            return self.convert_value(re.into(), from.complex_component().expect("complex"), to);
        }
        if to.is_complex() {
            let part = to.complex_component().expect("complex");
            let re = self.convert_value(x, from, part)?.into_float_value();
            return cg.make_complex(to, re, cg.float_type(part).const_zero());
        }
        if to.is_pred() {
            return Ok(if from.is_float() {
                let f = self.float_to_compute(x, from)?;
                cg.b.build_float_compare(FloatPredicate::UNE, f, f.get_type().const_zero(), "")?
                    .into()
            } else {
                let v = x.into_int_value();
                cg.b.build_int_compare(IntPredicate::NE, v, v.get_type().const_zero(), "")?
                    .into()
            });
        }
        if from.is_float() && to.is_float() {
            let wide = self.float_to_compute(x, from)?;
            if from == ElementType::F64 && to == ElementType::F32 {
                return Ok(cg.b.build_float_trunc(wide, cg.llvm.f32_type(), "")?.into());
            }
            if to == ElementType::F64 {
                let ext = cg.b.build_float_ext(wide, cg.llvm.f64_type(), "")?;
                if from == ElementType::F8E8M0FNU {
                    return self.e8m0_to_f64(x.into_int_value(), ext);
                }
                return Ok(ext.into());
            }
            let rounded = self.round_to_float(wide, to)?;
            if to == ElementType::F8E5M2 && (from == ElementType::F16 || from.byte_size() == 1) {
                // XLA converts f16 and the other 8-bit floats to f8e5m2 through f16, whose NaNs
                // all become 0x7f (either sign; measured through jaxlib), not the 0x7e / 0xfe
                // an f32 NaN gives.
                let nan = cg.b.build_float_compare(FloatPredicate::UNO, wide, wide, "")?;
                return Ok(cg.b.build_select(nan, cg.i8().const_int(0x7f, false), rounded.into_int_value(), "")?);
            }
            return Ok(rounded);
        }
        if from.is_float() {
            // float -> integer: truncate toward zero, saturate, NaN -> 0.
            let wide = self.float_to_compute(x, from)?;
            let it = cg.value_type(to).into_int_type();
            let name = if to.is_signed_int() {
                "llvm.fptosi.sat"
            } else {
                "llvm.fptoui.sat"
            };
            return cg.call_intrinsic(name, &[it.into(), wide.get_type().into()], &[wide.into()]);
        }
        // From an integer or pred.
        let v = x.into_int_value();
        let signed = from.is_signed_int();
        if to.is_float() {
            // XLA converts an integer to f8e8m0fnu through f32 (one rounding, not two).
            let target = match to {
                ElementType::F32 | ElementType::F8E8M0FNU => cg.llvm.f32_type(),
                _ => cg.llvm.f64_type(),
            };
            let f = if signed {
                cg.b.build_signed_int_to_float(v, target, "")?
            } else {
                cg.b.build_unsigned_int_to_float(v, target, "")?
            };
            return if to == ElementType::F32 || to == ElementType::F64 {
                Ok(f.into())
            } else {
                self.round_to_float(f, to)
            };
        }
        let it = cg.value_type(to).into_int_type();
        Ok(cg.b.build_int_cast_sign_flag(v, it, signed, "")?.into())
    }

    /// stochastic-convert of float `x` (type `from`) to signed integer type `to` with the
    /// unsigned random bits `random` (type `rand_type`), as XLA decomposes it: |x| is rounded
    /// up iff random < frac(|x|) * 2^bits(random) (that product converted to the random type),
    /// then the sign is applied; values at or beyond the integer range (the bounds rounded to
    /// `from`) saturate, NaN gives 0. Arithmetic is done in `from` (f16: the product in f32).
    pub fn stochastic_convert(
        &self,
        from: ElementType,
        to: ElementType,
        x: BasicValueEnum<'ctx>,
        random: BasicValueEnum<'ctx>,
        rand_type: ElementType,
    ) -> Result<BasicValueEnum<'ctx>> {
        let cg = self.cg;
        if !to.is_signed_int() || !from.is_float() || !rand_type.is_unsigned_int() {
            return Err(Error::Unsupported(format!(
                "stochastic-convert from {from} to {to} with {rand_type} random bits"
            )));
        }
        let fmt = from
            .float_format()
            .ok_or_else(|| cg.unsupported_type("stochastic-convert", from))?;
        let v = self.float_to_compute(x, from)?;
        let ft = v.get_type();
        let it = cg.value_type(to).into_int_type();
        let rt = cg.value_type(rand_type).into_int_type();
        let abs = cg
            .call_intrinsic("llvm.fabs", &[ft.into()], &[v.into()])?
            .into_float_value();
        let floor = cg
            .call_intrinsic("llvm.floor", &[ft.into()], &[abs.into()])?
            .into_float_value();
        let frac = cg.b.build_float_sub(abs, floor, "")?;
        // frac * 2^bits, rounded to `from` as XLA's multiply in that type is (f16 multiplies
        // in f32 because 2^16 is not an f16).
        let scaled =
            cg.b.build_float_mul(frac, ft.const_float((rand_type.bit_width() as f64).exp2()), "")?;
        let scaled = if from == ElementType::F16 || from == ElementType::F32 || from == ElementType::F64 {
            scaled
        } else {
            let narrow = self.compute_to_float(scaled, from)?;
            self.float_to_compute(narrow, from)?
        };
        let threshold = cg
            .call_intrinsic("llvm.fptoui.sat", &[rt.into(), ft.into()], &[scaled.into()])?
            .into_int_value();
        let round_up =
            cg.b.build_int_compare(IntPredicate::ULT, random.into_int_value(), threshold, "")?;
        let truncated = cg
            .call_intrinsic("llvm.fptosi.sat", &[it.into(), ft.into()], &[floor.into()])?
            .into_int_value();
        let plus_one = cg.b.build_int_add(truncated, it.const_int(1, false), "")?;
        let magnitude = cg.b.build_select(round_up, plus_one, truncated, "")?.into_int_value();
        let sign = self.float_sign_value(v)?;
        let negative =
            cg.b.build_float_compare(FloatPredicate::OLT, sign, ft.const_zero(), "")?;
        let negated = cg.b.build_int_neg(magnitude, "")?;
        let result = cg.b.build_select(negative, negated, magnitude, "")?.into_int_value();
        let bits = to.bit_width();
        let min = -(1i128 << (bits - 1));
        let max = (1i128 << (bits - 1)) - 1;
        // The bounds as the nearest values of type `from`.
        let bound = |b: i128| {
            ft.const_float(match from {
                ElementType::F64 => b as f64,
                ElementType::F32 => b as f64 as f32 as f64,
                _ => float_bits::decode(float_bits::encode(b as f64, fmt), fmt),
            })
        };
        let is_min = cg.b.build_float_compare(FloatPredicate::OLE, v, bound(min), "")?;
        let is_max = cg.b.build_float_compare(FloatPredicate::OGE, v, bound(max), "")?;
        let result =
            cg.b.build_select(is_min, it.const_int(min as u64, true), result, "")?
                .into_int_value();
        Ok(cg.b.build_select(is_max, it.const_int(max as u64, true), result, "")?)
    }

    /// Extends or truncates a float register value to the compute type of `part` (f32/f64).
    fn float_resize(&self, v: FloatValue<'ctx>, part: ElementType) -> Result<FloatValue<'ctx>> {
        let cg = self.cg;
        let want = cg.float_type(part);
        if v.get_type() == want {
            return Ok(v);
        }
        Ok(if part == ElementType::F64 {
            cg.b.build_float_ext(v, want, "")?
        } else {
            cg.b.build_float_trunc(v, want, "")?
        })
    }

    /// Rounds an f32 or f64 value to float type `t` (to nearest even).
    ///
    /// As in XLA, f64 reaches f16 and bf16 through f32 (so it is rounded twice, and values
    /// below f32's normal range flush to zero), while the f8 formats are rounded directly.
    pub fn round_to_float(&self, v: FloatValue<'ctx>, t: ElementType) -> Result<BasicValueEnum<'ctx>> {
        let cg = self.cg;
        let src_is_f64 = v.get_type() == cg.llvm.f64_type();
        let f32t = cg.llvm.f32_type();
        match t {
            ElementType::F32 if src_is_f64 => return Ok(cg.b.build_float_trunc(v, f32t, "")?.into()),
            ElementType::F32 => return Ok(v.into()),
            ElementType::F64 => return Ok(cg.b.build_float_ext(v, cg.llvm.f64_type(), "")?.into()),
            ElementType::F16 | ElementType::BF16 => {
                let narrow = if src_is_f64 {
                    cg.b.build_float_trunc(v, f32t, "")?
                } else {
                    v
                };
                return Ok(if t == ElementType::F16 {
                    cg.b.build_float_trunc(narrow, cg.llvm.f16_type(), "")?.into()
                } else {
                    self.f32_to_bf16(narrow)?.into()
                });
            }
            _ => {}
        }
        let fmt = t
            .float_format()
            .ok_or_else(|| Error::Internal(format!("{t} is not a float")))?;
        if fmt.encoding == FloatEncoding::ExponentOnlyUnsigned {
            return Ok(self.encode_e8m0(v)?.into());
        }
        let bits = self.encode_float(v, fmt)?;
        Ok(cg.b.build_int_truncate(bits, cg.i8(), "")?.into())
    }

    /// f8e8m0fnu `bits` as f64, as XLA converts it: directly, so code 0 is 2^-127 (subnormal in
    /// f32, where the flushing f32 route `through_f32` would make it 0; measured through
    /// jaxlib); the NaN code keeps `through_f32`'s bits.
    fn e8m0_to_f64(&self, bits: IntValue<'ctx>, through_f32: FloatValue<'ctx>) -> Result<BasicValueEnum<'ctx>> {
        let cg = self.cg;
        let i64t = cg.i64();
        let e = cg.b.build_int_z_extend(bits, i64t, "")?;
        let biased = cg.b.build_int_add(e, i64t.const_int(1023 - 127, false), "")?;
        let power = cg.b.build_left_shift(biased, i64t.const_int(52, false), "")?;
        let power = cg.b.build_bit_cast(power, cg.llvm.f64_type(), "")?.into_float_value();
        let nan = cg.b.build_int_compare(IntPredicate::EQ, e, i64t.const_int(0xff, false), "")?;
        Ok(cg.b.build_select(nan, through_f32, power, "")?)
    }

    /// f8e8m0fnu (a power of two, 2^-127 to 2^127, or NaN) for `v` as XLA:CPU computes it,
    /// on the bits as integers (so subnormal inputs are not flushed by the run time's
    /// denormals-are-zero). Zero, negative numbers, infinities and NaN give NaN (0xff), a
    /// value rounding past 2^127 too; otherwise the exponent is rounded up from half a step
    /// (1.5 -> 2, 0.75 -> 1, 1.5 - 2^-30 -> 1 in f64). f32 (and everything XLA converts
    /// through f32: f16, bf16, the other 8-bit floats, integers) and f64 differ only below
    /// 2^-126; see `e8m0_small_f32` / `e8m0_small_f64`. Measured through jaxlib; file test
    /// `convert/e8m0_from_bits.hlo`.
    fn encode_e8m0(&self, v: FloatValue<'ctx>) -> Result<IntValue<'ctx>> {
        let cg = self.cg;
        let (it, mantissa, bias) = if v.get_type() == cg.llvm.f64_type() {
            (cg.i64(), 52u64, 1023u64)
        } else {
            (cg.i32(), 23, 127)
        };
        let c = |x: u64| it.const_int(x, false);
        let bits = cg.b.build_bit_cast(v, it, "")?.into_int_value();
        // Sign bit set or zero (signed compare), before any rounding.
        let zero_or_negative = cg.b.build_int_compare(IntPredicate::SLE, bits, c(0), "")?;
        // Half an exponent step added, then the exponent rebiased to e8m0's 127. Infinity, NaN
        // and everything rounding past 2^127 land above 254 (the add cannot reach the sign
        // bit's meaning since the shift is logical).
        let rounded = cg.b.build_int_add(bits, c(1 << (mantissa - 1)), "")?;
        let exponent = cg.b.build_right_shift(rounded, c(mantissa), false, "")?;
        let code = cg.b.build_int_sub(exponent, c(bias - 127), "")?;
        // Below 2^-126 (and exponent `code` then wraps or is 0): the rules of each type.
        let field = cg.b.build_right_shift(bits, c(mantissa), false, "")?;
        let small = cg.b.build_int_compare(IntPredicate::ULE, field, c(bias - 127), "")?;
        let small_code = if mantissa == 52 { self.e8m0_small_f64(bits, field)? } else { self.e8m0_small_f32(bits)? };
        let code = cg.b.build_select(small, small_code, code, "")?.into_int_value();
        let too_big = cg.b.build_int_compare(IntPredicate::UGT, code, c(254), "")?;
        let nan = cg.b.build_or(zero_or_negative, too_big, "")?;
        let result = cg.b.build_select(nan, c(0xff), code, "")?.into_int_value();
        Ok(cg.b.build_int_truncate(result, cg.i8(), "")?)
    }

    /// e8m0 code of a positive f32 below 2^-126 (XLA's EmitF32ToF8e8m0fnu): up to 2^-127
    /// (bits 0x400000) it is 0, above it 1 (2^-126), whatever the distance.
    fn e8m0_small_f32(&self, bits: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
        let cg = self.cg;
        let above = cg.b.build_int_compare(IntPredicate::UGT, bits, cg.i32().const_int(0x40_0000, false), "")?;
        Ok(cg.b.build_int_z_extend(above, cg.i32(), "")?)
    }

    /// e8m0 code of a positive f64 below 2^-126 (XLA converts f64 with its generic
    /// float-to-float emitter, whose subnormal-result path rounds the value with its implicit
    /// bit, shifted by 53 or more, to nearest even and gives NaN past a 53-bit shift): in
    /// [2^-127, 2^-126) it is 0 at exactly 2^-127 and 1 above, below 2^-127 it is NaN
    /// (2^-128 and 1e-39 measured: 0xff). `field` is the f64 exponent field.
    fn e8m0_small_f64(&self, bits: IntValue<'ctx>, field: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
        let cg = self.cg;
        let i64t = cg.i64();
        let frac = cg.b.build_and(bits, i64t.const_int((1 << 52) - 1, false), "")?;
        let above = cg.b.build_int_compare(IntPredicate::NE, frac, i64t.const_zero(), "")?;
        let in_range = cg.b.build_int_compare(IntPredicate::EQ, field, i64t.const_int(1023 - 127, false), "")?;
        let one_or_zero = cg.b.build_int_z_extend(above, i64t, "")?;
        Ok(cg.b.build_select(in_range, one_or_zero, i64t.const_int(0xff, false), "")?.into_int_value())
    }

    /// bf16 to f32 by moving its bits up (exact; no floating-point operation, so LLVM never
    /// turns the surrounding f32 code into bfloat arithmetic, which its x86 back end
    /// mis-lowers in places).
    pub fn bf16_to_f32(&self, v: FloatValue<'ctx>) -> Result<FloatValue<'ctx>> {
        let cg = self.cg;
        let i16v = cg.b.build_bit_cast(v, cg.llvm.i16_type(), "")?.into_int_value();
        let wide = cg.b.build_int_z_extend(i16v, cg.i32(), "")?;
        let shifted = cg.b.build_left_shift(wide, cg.i32().const_int(16, false), "")?;
        Ok(cg.b.build_bit_cast(shifted, cg.llvm.f32_type(), "")?.into_float_value())
    }

    /// f32 to bf16, rounded to nearest even on the bits (subnormals are rounded, not flushed;
    /// overflow carries into the exponent and gives inf); NaNs become quiet NaNs of the same sign.
    pub fn f32_to_bf16(&self, v: FloatValue<'ctx>) -> Result<FloatValue<'ctx>> {
        let cg = self.cg;
        let i32t = cg.i32();
        let c = |x: u64| i32t.const_int(x, false);
        let bits = cg.b.build_bit_cast(v, i32t, "")?.into_int_value();
        let lsb =
            cg.b.build_and(cg.b.build_right_shift(bits, c(16), false, "")?, c(1), "")?;
        let rounded = cg.b.build_int_add(bits, cg.b.build_int_add(lsb, c(0x7fff), "")?, "")?;
        let abs = cg.b.build_and(bits, c(0x7fff_ffff), "")?;
        let is_nan = cg.b.build_int_compare(IntPredicate::UGT, abs, c(0x7f80_0000), "")?;
        let quiet =
            cg.b.build_or(cg.b.build_and(bits, c(0xffc0_0000), "")?, c(0x0040_0000), "")?;
        let chosen = cg.b.build_select(is_nan, quiet, rounded, "")?.into_int_value();
        let high = cg.b.build_right_shift(chosen, c(16), false, "")?;
        let narrow = cg.b.build_int_truncate(high, cg.llvm.i16_type(), "")?;
        Ok(cg.b.build_bit_cast(narrow, cg.llvm.bf16_type(), "")?.into_float_value())
    }

    /// f64 to a small float format's bits (used where a value is produced in f64).
    pub fn f64_to_small_float(&self, v: FloatValue<'ctx>, t: ElementType) -> Result<BasicValueEnum<'ctx>> {
        self.round_to_float(v, t)
    }

    /// The bits (in an integer as wide as the source) of the `fmt` value nearest to `v`.
    fn encode_float(&self, v: FloatValue<'ctx>, fmt: FloatFormat) -> Result<IntValue<'ctx>> {
        let cg = self.cg;
        let src_is_f64 = v.get_type() == cg.llvm.f64_type();
        let (w, src_m, src_bias) = if src_is_f64 {
            (64u32, 52u32, 1023i64)
        } else {
            (32, 23, 127)
        };
        let it = cg.int_type(w);
        let c = |x: i64| it.const_int(x as u64, true);
        let x = cg.b.build_bit_cast(v, it, "")?.into_int_value();
        let sign_mask = 1u64 << (w - 1);
        let abs = cg.b.build_and(x, it.const_int(!sign_mask, false), "")?;
        let negative = cg.b.build_int_compare(
            IntPredicate::NE,
            cg.b.build_and(x, it.const_int(sign_mask, false), "")?,
            c(0),
            "",
        )?;
        let m = fmt.mantissa_bits as i64;
        let drop = src_m as i64 - m;
        let emin = 1 - fmt.bias as i64; // smallest normal exponent of the target
        let max_biased = (1i64 << fmt.exponent_bits) - 1;

        // Normal path: round the source mantissa to m bits (may carry into the exponent).
        let half_minus_one = c((1i64 << (drop - 1)) - 1);
        let lsb =
            cg.b.build_and(cg.b.build_right_shift(abs, c(drop), false, "")?, c(1), "")?;
        let rounded =
            cg.b.build_int_add(abs, cg.b.build_int_add(half_minus_one, lsb, "")?, "")?;
        let rounded = cg.b.build_and(rounded, c(!((1i64 << drop) - 1)), "")?;
        let src_exp = cg.b.build_right_shift(rounded, c(src_m as i64), false, "")?;
        let exp = cg.b.build_int_sub(src_exp, c(src_bias), "")?; // unbiased
        let mant = cg.b.build_and(
            cg.b.build_right_shift(rounded, c(drop), false, "")?,
            c((1i64 << m) - 1),
            "",
        )?;
        let target_exp = cg.b.build_int_add(exp, c(fmt.bias as i64), "")?;
        let normal_bits = cg.b.build_or(cg.b.build_left_shift(target_exp, c(m), "")?, mant, "")?;

        // Subnormal path: significand shifted right so that its unit is the target's smallest
        // subnormal, rounded to nearest even. A result of 2^m is the smallest normal number,
        // which the same bit pattern encodes.
        let raw_exp = cg.b.build_right_shift(abs, c(src_m as i64), false, "")?;
        let raw_mant = cg.b.build_and(abs, c((1i64 << src_m) - 1), "")?;
        let is_src_subnormal = cg.b.build_int_compare(IntPredicate::EQ, raw_exp, c(0), "")?;
        let implicit =
            cg.b.build_select(is_src_subnormal, c(0), c(1i64 << src_m), "")?
                .into_int_value();
        let sig = cg.b.build_or(raw_mant, implicit, "")?;
        let e_unbiased = cg.b.build_int_sub(
            cg.b.build_select(is_src_subnormal, c(1), raw_exp, "")?.into_int_value(),
            c(src_bias),
            "",
        )?;
        // shift = drop + (emin - e), at least `drop`, capped below the width.
        let shift =
            cg.b.build_int_add(c(drop), cg.b.build_int_sub(c(emin), e_unbiased, "")?, "")?;
        let shift = cg.b.build_select(
            cg.b.build_int_compare(IntPredicate::SGT, shift, c(w as i64 - 1), "")?,
            c(w as i64 - 1),
            shift,
            "",
        )?;
        let sub_bits = rne_shift_right(cg, sig, shift.into_int_value())?;

        let unrounded_exp = cg.b.build_int_sub(raw_exp, c(src_bias), "")?;
        let is_normal = cg.b.build_int_compare(IntPredicate::SGE, unrounded_exp, c(emin), "")?;
        let mut bits =
            cg.b.build_select(is_normal, normal_bits, sub_bits, "")?
                .into_int_value();

        // Overflow and non-finite inputs.
        let src_inf = c(((1i64 << (w - 1 - src_m)) - 1) << src_m);
        let is_nan = cg.b.build_int_compare(IntPredicate::UGT, abs, src_inf, "")?;
        let is_inf = cg.b.build_int_compare(IntPredicate::EQ, abs, src_inf, "")?;
        let max_magnitude = match fmt.encoding {
            FloatEncoding::Ieee => ((max_biased - 1) << m) | ((1 << m) - 1),
            FloatEncoding::FiniteAllOnesNan => (max_biased << m) | ((1 << m) - 2),
            _ => (max_biased << m) | ((1 << m) - 1),
        };
        let overflow = cg.b.build_int_compare(IntPredicate::SGT, bits, c(max_magnitude), "")?;
        let overflow = cg.b.build_and(overflow, cg.b.build_not(is_nan, "")?, "")?;
        let overflow = cg.b.build_or(overflow, is_inf, "")?;
        let nan_bits = float_bits::encode(f64::NAN, fmt) as i64;
        let overflow_bits = match fmt.encoding {
            FloatEncoding::Ieee => max_biased << m,
            FloatEncoding::FiniteNoNan => max_magnitude,
            _ => nan_bits,
        };
        bits =
            cg.b.build_select(overflow, c(overflow_bits), bits, "")?
                .into_int_value();
        let sign_bit = c(1i64 << (fmt.exponent_bits + fmt.mantissa_bits));
        let result_is_nan = cg.b.build_or(
            is_nan,
            cg.b.build_and(
                overflow,
                cg.b.build_int_compare(IntPredicate::EQ, c(overflow_bits), c(nan_bits), "")?,
                "",
            )?,
            "",
        )?;
        let with_sign = cg.b.build_or(bits, sign_bit, "")?;
        let mut signed = cg.b.build_select(negative, with_sign, bits, "")?.into_int_value();
        if fmt.encoding == FloatEncoding::FiniteNegZeroNan {
            // No negative zero: -0 is +0 (the pattern 1000..0 is the NaN).
            let is_zero = cg.b.build_int_compare(IntPredicate::EQ, bits, c(0), "")?;
            signed = cg.b.build_select(is_zero, c(0), signed, "")?.into_int_value();
        }
        // XLA keeps the sign of a NaN (and of an infinity that becomes NaN) where the format
        // has a signed NaN: measured through jaxlib, f32 -NaN and -inf give f8e4m3fn 0xff,
        // f8e5m2 0xfe, f8e4m3 0xfc, f8e3m4 0xf8 (fnuz and e8m0 have one NaN).
        // A format without NaN (f4e2m1fn) takes a NaN of either sign as -0 in XLA
        // (`EmitF16ToF4e2m1fn`: "undefined (implemented as minus zero)"; measured through
        // jaxlib, fuzz program 10200124: atan2 of the round trip was -pi).
        let nan_out = if matches!(fmt.encoding, FloatEncoding::Ieee | FloatEncoding::FiniteAllOnesNan) {
            cg.b.build_select(negative, c(nan_bits | (1i64 << (fmt.exponent_bits + fmt.mantissa_bits))), c(nan_bits), "")?
                .into_int_value()
        } else if fmt.encoding == FloatEncoding::FiniteNoNan {
            sign_bit
        } else {
            c(nan_bits)
        };
        Ok(cg
            .b
            .build_select(result_is_nan, nan_out, signed, "")?
            .into_int_value())
    }

    /// A small float (its bits in an i8) as f32, through a table of all its values.
    pub fn small_float_to_f32(&self, bits: IntValue<'ctx>, t: ElementType) -> Result<FloatValue<'ctx>> {
        let cg = self.cg;
        let fmt = t
            .float_format()
            .ok_or_else(|| Error::Internal(format!("{t} is not a float")))?;
        let count = 1u64 << fmt.total_bits();
        let name = format!("hlojit.{}_to_f32", t.name());
        let f32t = cg.llvm.f32_type();
        let table = match cg.module.get_global(&name) {
            Some(g) => g,
            None => {
                // A NaN keeps its sign bit, as in XLA (f8e4m3fn 0xff is f32 0xffc00000); the
                // formats whose only NaN is the sign bit pattern give a positive NaN.
                let signed_nan = matches!(fmt.encoding, FloatEncoding::Ieee | FloatEncoding::FiniteAllOnesNan);
                let values: Vec<FloatValue> = (0..count)
                    .map(|b| {
                        let v = float_bits::decode(b, fmt);
                        let negative = b >> (fmt.exponent_bits + fmt.mantissa_bits) & 1 == 1;
                        f32t.const_float(if v.is_nan() && signed_nan && negative { -f64::NAN } else { v })
                    })
                    .collect();
                let init = f32t.const_array(&values);
                let g = cg.module.add_global(init.get_type(), None, &name);
                g.set_initializer(&init);
                g.set_constant(true);
                g.set_linkage(Linkage::Private);
                g
            }
        };
        let mask = cg.i8().const_int(count - 1, false);
        let i = cg.b.build_and(bits, mask, "")?;
        let i = cg.b.build_int_z_extend(i, cg.i64(), "")?;
        let p = cg.gep(f32t.into(), table.as_pointer_value(), i)?;
        Ok(cg.b.build_load(f32t, p, "")?.into_float_value())
    }

    /// The raw bits of a register value of type `t`, as an integer of the type's width.
    pub fn to_bits(&self, v: BasicValueEnum<'ctx>, t: ElementType) -> Result<IntValue<'ctx>> {
        let cg = self.cg;
        if t.is_complex() {
            let (re, im) = cg.complex_parts(v)?;
            let half = cg.int_type(t.bit_width() / 2);
            let wide = cg.int_type(t.bit_width());
            let r =
                cg.b.build_int_z_extend(cg.b.build_bit_cast(re, half, "")?.into_int_value(), wide, "")?;
            let i =
                cg.b.build_int_z_extend(cg.b.build_bit_cast(im, half, "")?.into_int_value(), wide, "")?;
            let i =
                cg.b.build_left_shift(i, wide.const_int(t.bit_width() as u64 / 2, false), "")?;
            return Ok(cg.b.build_or(r, i, "")?);
        }
        match v {
            BasicValueEnum::IntValue(i) => Ok(i),
            other => Ok(cg
                .b
                .build_bit_cast(other, cg.int_type(t.bit_width()), "")?
                .into_int_value()),
        }
    }

    /// A register value of type `t` from its raw bits (an integer of the type's width).
    pub fn from_bits(&self, bits: IntValue<'ctx>, t: ElementType) -> Result<BasicValueEnum<'ctx>> {
        let cg = self.cg;
        if t.is_complex() {
            let part = t.complex_component().expect("complex");
            let half = cg.int_type(t.bit_width() / 2);
            let lo = cg.b.build_int_truncate(bits, half, "")?;
            let hi = cg.b.build_right_shift(
                bits,
                bits.get_type().const_int(t.bit_width() as u64 / 2, false),
                false,
                "",
            )?;
            let hi = cg.b.build_int_truncate(hi, half, "")?;
            let re = cg.b.build_bit_cast(lo, cg.float_type(part), "")?.into_float_value();
            let im = cg.b.build_bit_cast(hi, cg.float_type(part), "")?.into_float_value();
            return cg.make_complex(t, re, im);
        }
        let vt = cg.value_type(t);
        if vt.is_int_type() {
            return Ok(bits.into());
        }
        Ok(cg.b.build_bit_cast(bits, vt, "")?)
    }

    pub(super) fn gen_bitcast_convert(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let cg = self.cg;
        let inst = self.comp.get(id);
        let operand = inst.operands[0];
        let from = self.element_type(operand)?;
        let to = self.element_type(id)?;
        let (wf, wt) = (from.bit_width(), to.bit_width());
        if wf == wt {
            let x = self.gen_scalar(operand, index)?;
            let bits = self.to_bits(x, from)?;
            return Ok(Val::Scalar(self.from_bits(bits, to)?));
        }
        let rank = inst.shape.rank();
        if wf > wt {
            // The output has one more (minor) dimension: the pieces of each input element,
            // least significant first.
            let piece = index.dims[rank - 1];
            let x = self.gen_scalar(operand, &Index::new(index.dims[..rank - 1].to_vec()))?;
            let bits = self.to_bits(x, from)?;
            let wide = bits.get_type();
            let shift = cg.b.build_int_mul(
                cg.b.build_int_truncate_or_bit_cast(piece, wide, "")?,
                wide.const_int(wt as u64, false),
                "",
            )?;
            let shifted = cg.b.build_right_shift(bits, shift, false, "")?;
            let narrow = cg.b.build_int_truncate(shifted, cg.int_type(wt), "")?;
            return Ok(Val::Scalar(self.from_bits(narrow, to)?));
        }
        // The input has the extra minor dimension: assemble its pieces.
        let pieces = (wt / wf) as u64;
        let wide = cg.int_type(wt);
        let mut acc = wide.const_zero();
        for j in 0..pieces {
            let mut dims = index.dims.clone();
            dims.push(cg.const_i64(j as i64));
            let x = self.gen_scalar(operand, &Index::new(dims))?;
            let bits = self.to_bits(x, from)?;
            let part = cg.b.build_int_z_extend(bits, wide, "")?;
            let part = cg.b.build_left_shift(part, wide.const_int(j * wf as u64, false), "")?;
            acc = cg.b.build_or(acc, part, "")?;
        }
        Ok(Val::Scalar(self.from_bits(acc, to)?))
    }

    /// reduce-precision: rounds the mantissa to `mantissa_bits` (nearest even) and the
    /// exponent range to `exponent_bits` (overflow to ±inf, underflow to ±0), on the element's
    /// own bits; NaN stays NaN.
    pub(super) fn gen_reduce_precision(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let cg = self.cg;
        let inst = self.comp.get(id);
        let operand = inst.operands[0];
        let t = self.element_type(operand)?;
        let fmt = t
            .float_format()
            .filter(|_| t.is_native_float())
            .ok_or_else(|| cg.unsupported_type("reduce-precision", t))?;
        let exponent_bits = inst.attrs.exponent_bits.unwrap_or(fmt.exponent_bits as i64);
        let mantissa_bits = inst.attrs.mantissa_bits.unwrap_or(fmt.mantissa_bits as i64);
        let x = self.gen_scalar(operand, index)?;
        let w = t.bit_width();
        let it = cg.int_type(w);
        let c = |v: i64| it.const_int(v as u64, true);
        let src_m = fmt.mantissa_bits as i64;
        let src_e = fmt.exponent_bits as i64;
        let mut bits = self.to_bits(x, t)?;
        let original = bits;
        if mantissa_bits < src_m {
            let drop = src_m - mantissa_bits;
            let last_bit = 1i64 << drop;
            let lsb =
                cg.b.build_and(cg.b.build_right_shift(bits, c(drop), false, "")?, c(1), "")?;
            let bias = cg.b.build_int_add(lsb, c((last_bit >> 1) - 1), "")?;
            bits =
                cg.b.build_and(cg.b.build_int_add(bits, bias, "")?, c(!(last_bit - 1)), "")?;
        }
        if exponent_bits < src_e {
            let sign_mask = c(1i64 << (w - 1));
            let exp_mask = c(((1i64 << src_e) - 1) << src_m);
            let src_bias = (1i64 << (src_e - 1)) - 1;
            let reduced_bias = (1i64 << (exponent_bits - 1)) - 1;
            let max_exp = src_bias + reduced_bias;
            let min_exp = src_bias - reduced_bias;
            let e = cg.b.build_and(bits, exp_mask, "")?;
            let overflows = cg.b.build_int_compare(IntPredicate::UGT, e, c(max_exp << src_m), "")?;
            let underflows = cg.b.build_int_compare(IntPredicate::ULE, e, c(min_exp << src_m), "")?;
            let signed_zero = cg.b.build_and(bits, sign_mask, "")?;
            let signed_inf = cg.b.build_or(signed_zero, exp_mask, "")?;
            bits = cg.b.build_select(underflows, signed_zero, bits, "")?.into_int_value();
            bits = cg.b.build_select(overflows, signed_inf, bits, "")?.into_int_value();
        }
        // NaN in, NaN out (rounding may have turned a NaN's payload into inf's pattern).
        let abs = cg.b.build_and(original, c(!(1i64 << (w - 1))), "")?;
        let inf = c(((1i64 << src_e) - 1) << src_m);
        let is_nan = cg.b.build_int_compare(IntPredicate::UGT, abs, inf, "")?;
        let quiet_nan = cg.b.build_or(original, c(1i64 << (src_m - 1)), "")?;
        let nan_out = if mantissa_bits > 0 { original } else { quiet_nan };
        bits = cg.b.build_select(is_nan, nan_out, bits, "")?.into_int_value();
        Ok(Val::Scalar(self.from_bits(bits, t)?))
    }
}

/// `x >> shift` rounded to nearest even (x non-negative, 0 <= shift < width).
fn rne_shift_right<'ctx>(
    cg: &crate::codegen::context::Codegen<'ctx>,
    x: IntValue<'ctx>,
    shift: IntValue<'ctx>,
) -> Result<IntValue<'ctx>> {
    let it = x.get_type();
    let one = it.const_int(1, false);
    let q = cg.b.build_right_shift(x, shift, false, "")?;
    let mask = cg.b.build_int_sub(cg.b.build_left_shift(one, shift, "")?, one, "")?;
    let rem = cg.b.build_and(x, mask, "")?;
    let half =
        cg.b.build_right_shift(cg.b.build_left_shift(one, shift, "")?, one, false, "")?;
    let above = cg.b.build_int_compare(IntPredicate::UGT, rem, half, "")?;
    let tie = cg.b.build_int_compare(IntPredicate::EQ, rem, half, "")?;
    let odd =
        cg.b.build_int_compare(IntPredicate::NE, cg.b.build_and(q, one, "")?, it.const_zero(), "")?;
    let shift_nonzero = cg.b.build_int_compare(IntPredicate::NE, shift, it.const_zero(), "")?;
    let up = cg.b.build_or(above, cg.b.build_and(tie, odd, "")?, "")?;
    let up = cg.b.build_and(up, shift_nonzero, "")?;
    Ok(cg.b.build_int_add(q, cg.b.build_int_z_extend(up, it, "")?, "")?)
}
