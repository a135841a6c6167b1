//! Transcendental functions of real floats: the vectorizable implementations of `vmath` for
//! f32 where there is one, otherwise LLVM intrinsics where LLVM has one and libm. Arguments
//! are f32 or f64 (narrower floats are computed in f32).

use super::Elemental;
use crate::error::{Error, Result};
use crate::hlo::Opcode;
use inkwell::values::FloatValue;

impl<'a, 'ctx> Elemental<'a, 'ctx> {
    pub(super) fn float_math_unary(&self, op: Opcode, x: FloatValue<'ctx>) -> Result<FloatValue<'ctx>> {
        let cg = self.cg;
        let ft = x.get_type();
        let intrinsic = |name: &str| -> Result<FloatValue<'ctx>> {
            Ok(cg.call_intrinsic(name, &[ft.into()], &[x.into()])?.into_float_value())
        };
        use Opcode::*;
        if self.has_vector_math(x) {
            match op {
                Exp => return self.vexp(x),
                Log => return self.xla_logf(x),
                Tanh => return self.vtanh(x),
                Erf => return self.xla_erf_f32(x),
                Expm1 => return self.subnormal_argument(x, self.xla_expm1(x)?, x),
                Log1p => {
                    let signed_zero =
                        cg.call_intrinsic("llvm.copysign", &[ft.into()], &[ft.const_zero().into(), x.into()])?;
                    return self.subnormal_argument(x, self.xla_log1p(x)?, signed_zero.into_float_value());
                }
                _ => {}
            }
        }
        match op {
            Exp if ft == cg.llvm.f64_type() => self.xla_exp_f64(x),
            Exp => intrinsic("llvm.exp"),
            Log => self.xla_log_f64(x),
            Sine => intrinsic("llvm.sin"),
            Cosine => intrinsic("llvm.cos"),
            Tan => self.libm_unary("tan", x),
            Tanh => self.xla_tanh_f64(x),
            Expm1 => self.subnormal_argument(x, self.xla_expm1(x)?, x),
            Log1p => {
                let signed_zero =
                    cg.call_intrinsic("llvm.copysign", &[ft.into()], &[ft.const_zero().into(), x.into()])?;
                self.subnormal_argument(x, self.xla_log1p(x)?, signed_zero.into_float_value())
            }
            Erf => self.libm_unary("erf", x),
            Cbrt => self.libm_unary("cbrt", x),
            Logistic => {
                // 1 / (1 + exp(-x))
                let neg = cg.b.build_float_neg(x, "")?;
                let e = self.float_math_unary(Exp, neg)?;
                let d = cg.b.build_float_add(ft.const_float(1.0), e, "")?;
                Ok(cg.b.build_float_div(ft.const_float(1.0), d, "")?)
            }
            other => Err(Error::Unsupported(format!("{other} on floats"))),
        }
    }

    /// `r`, or `special` where `x` is ±0 or subnormal: libm sees the exact argument, while
    /// XLA:CPU computes these functions with flush-to-zero arithmetic, which treats a
    /// subnormal as 0 (log: -inf, log1p: ±0) or keeps it (expm1: x).
    fn subnormal_argument(
        &self,
        x: FloatValue<'ctx>,
        r: FloatValue<'ctx>,
        special: FloatValue<'ctx>,
    ) -> Result<FloatValue<'ctx>> {
        let cg = self.cg;
        let ft = x.get_type();
        let bits = ft.get_bit_width();
        let it = cg.int_type(bits);
        let raw = cg.b.build_bit_cast(x, it, "")?.into_int_value();
        let abs = cg.b.build_and(raw, it.const_int(u64::MAX >> (65 - bits), false), "")?;
        let mantissa_bits = if bits == 64 { 52 } else { 23 };
        let tiny = cg.b.build_int_compare(
            inkwell::IntPredicate::ULT,
            abs,
            it.const_int(1 << mantissa_bits, false),
            "",
        )?;
        Ok(cg.b.build_select(tiny, special, r, "")?.into_float_value())
    }

    pub(super) fn float_math_binary(
        &self,
        op: Opcode,
        a: FloatValue<'ctx>,
        b: FloatValue<'ctx>,
    ) -> Result<FloatValue<'ctx>> {
        match op {
            Opcode::Power => self.libm_binary("pow", a, b),
            Opcode::Atan2 => self.libm_binary("atan2", a, b),
            other => Err(Error::Unsupported(format!("{other} on floats"))),
        }
    }

    /// Calls libm's `name` (`namef` for f32).
    pub(super) fn libm_unary(&self, name: &str, x: FloatValue<'ctx>) -> Result<FloatValue<'ctx>> {
        let cg = self.cg;
        let ft = x.get_type();
        let symbol = if ft == cg.llvm.f32_type() {
            format!("{name}f")
        } else {
            name.to_string()
        };
        let f = cg.external(&symbol, ft.fn_type(&[ft.into()], false))?;
        mark_pure(cg, f);
        Ok(cg.call(f, &[x.into()])?.into_float_value())
    }

    fn libm_binary(&self, name: &str, a: FloatValue<'ctx>, b: FloatValue<'ctx>) -> Result<FloatValue<'ctx>> {
        let cg = self.cg;
        let ft = a.get_type();
        let symbol = if ft == cg.llvm.f32_type() {
            format!("{name}f")
        } else {
            name.to_string()
        };
        let f = cg.external(&symbol, ft.fn_type(&[ft.into(), ft.into()], false))?;
        mark_pure(cg, f);
        Ok(cg.call(f, &[a.into(), b.into()])?.into_float_value())
    }
}

/// libm functions as hlojit calls them neither read nor write memory (errno is not observed),
/// so LLVM may reuse, hoist or drop the calls.
fn mark_pure<'ctx>(cg: &crate::codegen::context::Codegen<'ctx>, f: inkwell::values::FunctionValue<'ctx>) {
    use inkwell::attributes::AttributeLoc;
    let memory = inkwell::attributes::Attribute::get_named_enum_kind_id("memory");
    f.add_attribute(AttributeLoc::Function, cg.llvm.create_enum_attribute(memory, 0));
    f.add_attribute(AttributeLoc::Function, cg.enum_attr("nounwind"));
    f.add_attribute(AttributeLoc::Function, cg.enum_attr("willreturn"));
}
