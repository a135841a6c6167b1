//! XLA:CPU's f32 rsqrt: the processor's approximate reciprocal square root refined by one
//! Newton step, so that results agree with XLA's bit for bit on the same processor.
//!
//! Read in the LLVM IR and object code XLA (jaxlib 0.10.2) emits for an `f32[64]` rsqrt (its
//! `xla.rsqrt` intrinsic, after Eigen's AVX512 prsqrt): y = rsqrtss(x) (about 12 bits), then
//! y + (-y/2) (x y y - 1) as `vmulss`, `vmulss`, `vfmadd`, `vfmadd`; where x is not a positive
//! normal number (zeros, subnormals, infinities, negatives) the approximation itself is the
//! result (inf for ±0 and, with denormals-are-zero, subnormals; 0 for +inf; NaN below zero).
//! The complex rsqrt of c64 uses the same routine (`vrsqrtps` there, the same approximation).
//!
//! The approximation is the processor's: AMD and Intel give different bits (both within
//! 1.5 * 2^-12), so XLA's results, and these, differ between processors in the last bit for
//! some arguments. Only x86-64 has it; other targets get 1 / sqrt(x).

use super::fops::FV;
use super::Elemental;
use crate::error::Result;

/// `llvm.is.fpclass` test bits: everything but a positive normal number and NaN.
const NOT_POSITIVE_NORMAL: u32 = 0x2FC;

impl<'a, 'ctx> Elemental<'a, 'ctx> {
    /// 1 / sqrt(x) for f32 as XLA:CPU computes it.
    pub(super) fn xla_rsqrt_f32(&self, x: FV<'ctx>) -> Result<FV<'ctx>> {
        let cg = self.cg;
        let f = self.f(x.get_type());
        if !cg.x86 {
            return f.div(f.k(1.0), f.sqrt(x)?);
        }
        let b = &cg.b;
        let v4 = cg.llvm.f32_type().vec_type(4);
        let i64t = cg.llvm.i64_type();
        let lane = b.build_insert_element(v4.get_undef(), x, i64t.const_zero(), "")?;
        let approx = cg.call_intrinsic("llvm.x86.sse.rsqrt.ss", &[], &[lane.into()])?.into_vector_value();
        let y = b.build_extract_element(approx, i64t.const_zero(), "")?.into_float_value();
        let t = f.mul(x, y)?;
        let h = f.mul(y, f.k(-0.5))?;
        let refined = f.fma(h, f.fma(t, y, f.k(-1.0))?, y)?;
        let class = cg.call_intrinsic(
            "llvm.is.fpclass",
            &[x.get_type().into()],
            &[x.into(), cg.llvm.i32_type().const_int(NOT_POSITIVE_NORMAL as u64, false).into()],
        )?;
        f.sel(class.into_int_value(), y, refined)
    }
}
