//! XLA:CPU's f64 tanh, step for step, so that results agree with XLA's bit for bit (f32 tanh is
//! `vtanh` in vmath.rs).
//!
//! Read in the LLVM IR and object code XLA (jaxlib 0.10.2) emits for an `f64[64]` tanh: the
//! argument clamped to ±17.71 (where the rational function reaches ±1), x N(x^2) / D(x^2) with
//! two polynomials of degree 9 in x^2, and ±1 from |x| >= 20 on. Unlike f32 there is no
//! linear branch for tiny arguments. XLA's IR writes each Horner step as a multiply and an add;
//! its back end contracts every one of them into an FMA (`vfmadd213pd` in the object code),
//! while x^2 and the numerator's product by x stay separate multiplies.

use super::fops::FV;
use super::Elemental;
use crate::error::Result;
use inkwell::FloatPredicate;

/// ±CLAMP is where x N / D rounds to ±1 (17.714...).
const CLAMP: u64 = 0x4031B6D58F246197;
/// N(z), highest power first; the constant term is 1.
const NUM: [u64; 10] = [
    0x3B3F9F82E5D782DF, 0x3C2C3C836C04B4C8, 0x3CEC3379F905E662, 0x3D929AFF6C8EDD96, 0x3E2525A389DCE7C2,
    0x3EA708819BE51CD9, 0x3F18996F4026A7FA, 0x3F787F80B957ED00, 0x3FC36FBA9B450E5A, 0x3FF0000000000000,
];
/// D(z), highest power first; the constant term is 1.
const DEN: [u64; 10] = [
    0x3BBE8630CF903250, 0x3C90AABCA9A5FEA0, 0x3D4232981AA2BBA8, 0x3DDEE2F015EA8065, 0x3E681F1947C52304,
    0x3EE26C82AB46D140, 0x3F4B2E7C4D488C04, 0x3FA1998830265B50, 0x3FDF0D32A2F7DC79, 0x3FF0000000000000,
];

impl<'a, 'ctx> Elemental<'a, 'ctx> {
    /// tanh(x) for f64 as XLA:CPU computes it.
    pub(super) fn xla_tanh_f64(&self, x: FV<'ctx>) -> Result<FV<'ctx>> {
        let f = self.f(x.get_type());
        let k = |bits: u64| f.k(f64::from_bits(bits));
        let horner = |z: FV<'ctx>, c: &[u64]| -> Result<FV<'ctx>> {
            let mut acc = f.fma(z, k(c[0]), k(c[1]))?;
            for &ci in &c[2..] {
                acc = f.fma(z, acc, k(ci))?;
            }
            Ok(acc)
        };
        // XLA's clamp is `select(x < lo, lo, x)`, which keeps a NaN (unordered compares here).
        let lo = f.neg(k(CLAMP))?;
        let c = f.sel(f.cmp(FloatPredicate::UGE, x, lo)?, x, lo)?;
        let c = f.sel(f.cmp(FloatPredicate::ULE, c, k(CLAMP))?, c, k(CLAMP))?;
        let z = f.mul(c, c)?;
        let r = f.div(f.mul(c, horner(z, &NUM)?)?, horner(z, &DEN)?)?;
        let one = f.cmp(FloatPredicate::OGE, f.abs(x)?, f.k(20.0))?;
        f.sel(one, f.copysign(f.k(1.0), x)?, r)
    }
}
