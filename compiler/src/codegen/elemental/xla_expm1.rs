//! XLA:CPU's expm1 for f32, f64 and f16, step for step, so that results agree with XLA's bit
//! for bit.
//!
//! Read in the LLVM IR and object code XLA (jaxlib 0.10.2) emits for `f32[64]`, `f64[64]` and
//! `f16[64]` exponential-minus-one (its elemental emitter's `EmitExpm1`): with e = exp(x) (XLA's
//! own exp) and h = x / 2,
//!   expm1(x) = e - 1                  where |x| > 1/2,
//!              tanh(h) (e + 1)        elsewhere (no cancellation near 0),
//!              x                      where h == 0 (keeps -0 and, under flush-to-zero,
//!                                     subnormal arguments).
//! tanh is XLA's own (the rational functions of `vtanh` / `xla_tanh_f64`). None of these
//! products or sums is contracted into an FMA by XLA's back end (e feeds two sums; the
//! object code has separate `vmul`/`vadd` for them), so none is here.
//!
//! f16 is computed in f16 arithmetic: LLVM lowers XLA's `llvm.exp.f16` to libm's `expf` of the
//! widened argument, every f16 add and multiply is rounded to f16, and only tanh is XLA's f32
//! routine on the widened half argument.

use super::fops::FV;
use super::Elemental;
use crate::error::Result;
use hlojit_runtime::ElementType;
use inkwell::FloatPredicate;

impl<'a, 'ctx> Elemental<'a, 'ctx> {
    /// e^x - 1 for f32 or f64 as XLA:CPU computes it.
    pub(super) fn xla_expm1(&self, x: FV<'ctx>) -> Result<FV<'ctx>> {
        let f = self.f(x.get_type());
        let is_f64 = x.get_type() == self.cg.llvm.f64_type();
        let e = if is_f64 { self.xla_exp_f64(x)? } else { self.vexp(x)? };
        let h = f.mul(x, f.k(0.5))?;
        let tanh = if is_f64 { self.xla_tanh_f64(h)? } else { self.vtanh(h)? };
        let near_zero = f.mul(tanh, f.add(e, f.k(1.0))?)?;
        let far = f.add(e, f.k(-1.0))?;
        let r = f.sel(f.cmp(FloatPredicate::OGT, f.abs(x)?, f.k(0.5))?, far, near_zero)?;
        f.sel(f.oeq(h, f.k(0.0))?, x, r)
    }

    /// e^x - 1 for an f16 value widened to f32, rounded to f16 where XLA's f16 code rounds.
    pub(super) fn xla_expm1_f16(&self, x: FV<'ctx>) -> Result<FV<'ctx>> {
        let f = self.f(x.get_type());
        let half = |v: FV<'ctx>| self.round_through(v, ElementType::F16);
        let e = half(self.libm_unary("exp", x)?)?;
        let h = half(f.mul(x, f.k(0.5))?)?;
        let tanh = half(self.vtanh(h)?)?;
        let near_zero = half(f.mul(half(f.add(e, f.k(1.0))?)?, tanh)?)?;
        let far = half(f.add(e, f.k(-1.0))?)?;
        let r = f.sel(f.cmp(FloatPredicate::OGT, f.abs(x)?, f.k(0.5))?, far, near_zero)?;
        f.sel(f.oeq(h, f.k(0.0))?, x, r)
    }

    /// `v` rounded to the narrow float type `t` and widened back to the type it is computed in.
    pub(super) fn round_through(&self, v: FV<'ctx>, t: ElementType) -> Result<FV<'ctx>> {
        let narrow = self.round_to_float(v, t)?;
        self.float_to_compute(narrow, t)
    }
}
