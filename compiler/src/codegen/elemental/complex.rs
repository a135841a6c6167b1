//! Elementwise ops on complex numbers (c64, c128), computed on their parts.

use super::Elemental;
use crate::error::{Error, Result};
use crate::hlo::Opcode;
use hlojit_runtime::ElementType;
use inkwell::values::{BasicValueEnum, FloatValue};

impl<'a, 'ctx> Elemental<'a, 'ctx> {
    pub(super) fn complex_unary(&self, op: Opcode, t: ElementType, x: BasicValueEnum<'ctx>) -> Result<BasicValueEnum<'ctx>> {
        let cg = self.cg;
        let (re, im) = cg.complex_parts(x)?;
        let ft = re.get_type();
        use Opcode::*;
        match op {
            Real => Ok(re.into()),
            Imag => Ok(im.into()),
            Copy => Ok(x),
            Negate => cg.make_complex(t, cg.b.build_float_neg(re, "")?, cg.b.build_float_neg(im, "")?),
            Abs => Ok(self.complex_abs(re, im)?.into()),
            Exp => {
                // e^re * (cos im + i sin im)
                let m = cg.call_intrinsic("llvm.exp", &[ft.into()], &[re.into()])?.into_float_value();
                let c = cg.call_intrinsic("llvm.cos", &[ft.into()], &[im.into()])?.into_float_value();
                let s = cg.call_intrinsic("llvm.sin", &[ft.into()], &[im.into()])?.into_float_value();
                cg.make_complex(t, cg.b.build_float_mul(m, c, "")?, cg.b.build_float_mul(m, s, "")?)
            }
            Log => {
                // log|z| + i atan2(im, re)
                let a = self.complex_abs(re, im)?;
                let l = cg.call_intrinsic("llvm.log", &[ft.into()], &[a.into()])?.into_float_value();
                let arg = self.float_math_binary(Atan2, im, re)?;
                cg.make_complex(t, l, arg)
            }
            other => Err(Error::Unsupported(format!("{other} on {t}"))),
        }
    }

    pub(super) fn complex_binary(
        &self,
        op: Opcode,
        t: ElementType,
        a: BasicValueEnum<'ctx>,
        b: BasicValueEnum<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        let cg = self.cg;
        let (ar, ai) = cg.complex_parts(a)?;
        let (br, bi) = cg.complex_parts(b)?;
        use Opcode::*;
        match op {
            Add => cg.make_complex(t, cg.b.build_float_add(ar, br, "")?, cg.b.build_float_add(ai, bi, "")?),
            Subtract => cg.make_complex(t, cg.b.build_float_sub(ar, br, "")?, cg.b.build_float_sub(ai, bi, "")?),
            Multiply => {
                let rr = cg.b.build_float_mul(ar, br, "")?;
                let ii = cg.b.build_float_mul(ai, bi, "")?;
                let ri = cg.b.build_float_mul(ar, bi, "")?;
                let ir = cg.b.build_float_mul(ai, br, "")?;
                cg.make_complex(t, cg.b.build_float_sub(rr, ii, "")?, cg.b.build_float_add(ri, ir, "")?)
            }
            Divide => {
                // (a * conj(b)) / |b|^2
                let d = cg.b.build_float_add(cg.b.build_float_mul(br, br, "")?, cg.b.build_float_mul(bi, bi, "")?, "")?;
                let re = cg.b.build_float_add(cg.b.build_float_mul(ar, br, "")?, cg.b.build_float_mul(ai, bi, "")?, "")?;
                let im = cg.b.build_float_sub(cg.b.build_float_mul(ai, br, "")?, cg.b.build_float_mul(ar, bi, "")?, "")?;
                cg.make_complex(t, cg.b.build_float_div(re, d, "")?, cg.b.build_float_div(im, d, "")?)
            }
            other => Err(Error::Unsupported(format!("{other} on {t}"))),
        }
    }

    /// |re + i im| without overflow for large parts (hypot).
    pub(super) fn complex_abs(&self, re: FloatValue<'ctx>, im: FloatValue<'ctx>) -> Result<FloatValue<'ctx>> {
        let cg = self.cg;
        let ft = re.get_type();
        let symbol = if ft == cg.llvm.f32_type() { "hypotf" } else { "hypot" };
        let f = cg.external(symbol, ft.fn_type(&[ft.into(), ft.into()], false));
        Ok(cg.call(f, &[re.into(), im.into()])?.into_float_value())
    }
}
