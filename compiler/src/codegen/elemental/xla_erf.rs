//! XLA:CPU's f32 erf, step for step, so that results agree with XLA's bit for bit.
//!
//! Read in the LLVM IR XLA (jaxlib 0.10.2) emits for an `f32[64]` erf (`xla.erf.v8f32`, expanded
//! after Eigen's `generic_fast_erf_float`): erf(x) = x P(x^2) / Q(x^2), a rational function of odd
//! degree 9 over even degree 12, and ±1 from |x| >= 3.832 on (where it rounds to ±1 anyway). No
//! clamp and no exp: one division per element. The Horner steps are fused multiply-adds in XLA's
//! IR itself; the numerator's final product by x stays a separate multiply.

use super::fops::FV;
use super::Elemental;
use crate::error::Result;
use inkwell::FloatPredicate;

/// P(z), highest power first, as f32 bit patterns.
const P: [u32; 5] = [0x39702D51, 0x3B5F5DA2, 0x3D50B6EB, 0x3E3DA740, 0x3F906EBA];
/// Q(z), highest power first; the constant term is 1.
const Q: [u32; 7] = [0xB3FD3906, 0x37C588DF, 0x3A856D28, 0x3C6687D4, 0x3DE34C21, 0x3EFEB44A, 0x3F800000];
/// From this |x| on the result is ±1 (3.8325...).
const ONE_FROM: u32 = 0x407547CB;

impl<'a, 'ctx> Elemental<'a, 'ctx> {
    /// erf(x) for f32 as XLA:CPU computes it.
    pub(super) fn xla_erf_f32(&self, x: FV<'ctx>) -> Result<FV<'ctx>> {
        let f = self.f(x.get_type());
        let k = |bits: u32| f.k(f32::from_bits(bits) as f64);
        let horner = |z: FV<'ctx>, c: &[u32]| -> Result<FV<'ctx>> {
            let mut acc = f.fma(z, k(c[0]), k(c[1]))?;
            for &ci in &c[2..] {
                acc = f.fma(z, acc, k(ci))?;
            }
            Ok(acc)
        };
        let z = f.mul(x, x)?;
        let num = f.mul(x, horner(z, &P)?)?;
        let ratio = f.div(num, horner(z, &Q)?)?;
        let one = f.cmp(FloatPredicate::OGE, f.abs(x)?, k(ONE_FROM))?;
        f.sel(one, f.copysign(f.k(1.0), x)?, ratio)
    }
}
