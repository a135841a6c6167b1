//! XLA:CPU's f64 exp, step for step, so that results agree with XLA's bit for bit.
//!
//! Read in the LLVM IR and object code XLA (jaxlib 0.10.2) emits for an `f64[64]` exponential
//! (`XLA_FLAGS=--xla_dump_to`): the argument clamped to [-708.39, 709.78], n = floor(x log2(e)
//! + 1/2), the Cody-Waite reduction g = x - n C1 - n C2, the Cephes rational
//! e^g = 1 + 2 g P(g^2) / (Q(g^2) - g P(g^2)), and 2^n applied as three factors 2^(n >> 2)
//! and one 2^(n - 3 (n >> 2)), so that no factor overflows. Below the range 0, above it
//! infinity. The multiply-adds XLA's back end contracts into FMAs (`vfmadd`/`vfnmadd` in its
//! object code) are written as FMAs here; the other products stay separate.

use super::fops::FV;
use super::Elemental;
use crate::error::Result;
use inkwell::FloatPredicate;

const HI: u64 = 0x40862E42FEFA39EF;
const LO: u64 = 0xC086232BDD7ABCD2;
const LOG2E: u64 = 0x3FF71547652B82FE;
const C1: u64 = 0x3FE62E4000000000;
const C2: u64 = 0x3EB7F7D1CF79ABCA;
/// P(z) = P1 + P0 z, times g.
const P: [u64; 2] = [0x3F2089CDD5E44BE8, 0x3F9F06D10CCA2C7E];
/// Q(z) = 2 + Q2 z + Q1 z^2 + Q0 z^3 (highest first below).
const Q: [u64; 3] = [0x3EC92EB6BC365FA0, 0x3F64AE39B508B6C0, 0x3FCD17099887E074];

impl<'a, 'ctx> Elemental<'a, 'ctx> {
    /// e^x for f64 as XLA:CPU computes it.
    pub(super) fn xla_exp_f64(&self, x0: FV<'ctx>) -> Result<FV<'ctx>> {
        let f = self.f(x0.get_type());
        let k = |bits: u64| f.k(f64::from_bits(bits));
        // XLA clamps with llvm.minimum/maximum, which keep a NaN; unordered compares do too.
        let x = f.sel(f.cmp(FloatPredicate::ULE, x0, k(HI))?, x0, k(HI))?;
        let x = f.sel(f.cmp(FloatPredicate::UGE, x, k(LO))?, x, k(LO))?;
        let n = f.intr1("llvm.floor", f.fma(x, k(LOG2E), f.k(0.5))?)?;
        let g = f.fma(f.neg(n)?, k(C1), x)?;
        let g = f.fma(f.neg(n)?, k(C2), g)?;
        let z = f.mul(g, g)?;
        let p = f.mul(f.fma(f.fma(z, k(P[0]), k(P[1]))?, z, f.k(1.0))?, g)?;
        let q = f.fma(f.fma(f.fma(z, k(Q[0]), k(Q[1]))?, z, k(Q[2]))?, z, f.k(2.0))?;
        let e_g = f.fma(f.div(p, f.sub(q, p)?)?, f.k(2.0), f.k(1.0))?;
        // XLA converts n with cvttpd2dq (a NaN n gives INT_MIN, clamped to -2099); LLVM's
        // fptosi of NaN is poison, so NaN maps to 0 first (the result is NaN either way).
        let b = &self.cg.b;
        let n = f.sel(f.is_nan(n)?, f.k(0.0), n)?;
        let ni = b.build_float_to_signed_int(n, f.it(), "")?;
        let ni = b.build_select(f.icmp(inkwell::IntPredicate::SLT, ni, f.ki(-2099))?, f.ki(-2099), ni, "")?.into_int_value();
        let ni = b.build_select(f.icmp(inkwell::IntPredicate::SGT, ni, f.ki(2099))?, f.ki(2099), ni, "")?.into_int_value();
        let quarter = b.build_right_shift(ni, f.ki(2), true, "")?;
        let factor = |e: inkwell::values::IntValue<'ctx>| -> Result<FV<'ctx>> {
            f.float_from_bits(b.build_left_shift(b.build_int_add(e, f.ki(1023), "")?, f.ki(52), "")?)
        };
        let f1 = factor(quarter)?;
        let rest = b.build_int_sub(ni, b.build_int_mul(quarter, f.ki(3), "")?, "")?;
        let y = f.mul(f.mul(f.mul(f.mul(e_g, f1)?, f1)?, f1)?, factor(rest)?)?;
        let y = f.sel(f.cmp(FloatPredicate::OLT, x0, k(LO))?, f.k(0.0), y)?;
        f.sel(f.cmp(FloatPredicate::OGT, x0, k(HI))?, f.k(f64::INFINITY), y)
    }
}
