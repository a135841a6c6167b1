//! `log` and `log1p` as XLA:CPU (jaxlib 0.10) computes them, bit for bit.
//!
//! Read from XLA's dumped LLVM IR and objects (`XLA_FLAGS=--xla_dump_to=...`) and checked
//! against jaxlib with `tools/xla_math_check.py` (every f16/bf16 value, millions of f32/f64):
//!
//! - f32 `log` is Eigen's `plog_float` (the Cephes polynomial with an exponent split), which
//!   XLA's intrinsic rewriter substitutes for `llvm.log.v{1,2,4,8,16}f32`; bf16 is computed in
//!   f32 by XLA's float normalization, so it takes the same code. XLA's back end contracts some
//!   of its multiply-adds into FMAs (`AllowFPOpFusion = Fast`); the FMAs below are exactly the
//!   ones in XLA's object code, every other step is rounded on its own.
//! - f16 `log` stays `llvm.log.f16`, which LLVM widens to f32 and calls libm's `logf` on.
//! - f64 `log` is a call of `log` (correctly rounded on every value measured), with XLA's
//!   edges: ±0 and subnormals give -inf (flush-to-zero), a negative argument gives +NaN.
//! - `log1p` (f32, and f16/bf16 through f32, and f64) is XLA's own expansion: for |x| below
//!   sqrt(2) - 1 the Cephes rational x - x^2/2 + x^3 N(x) / D(x) with fused Horner steps,
//!   otherwise `log(x + 1)` with the `log` above.
//!
//! Not matched: a kernel of fewer than 16 elements whose last `n mod 8` elements do not fill
//! a vector of 1, 2 or 4 (n = 3, 5-7, 11, 13-15) computes those elements with libm's `logf`
//! on XLA (its loop emitter hands them to `llvm.log.v3f32` and so on, which the rewriter does
//! not replace); they may differ from the polynomial in the last bit.

use super::fops::FV;
use super::Elemental;
use crate::error::Result;
use inkwell::{FloatPredicate, IntPredicate};

/// Eigen's `plog_float` coefficients (Cephes `logf`), as f32 bit patterns: p0..p8 of
/// log(1 + x) = x - x^2/2 + x^3 P(x) on [sqrt(1/2) - 1, sqrt(2) - 1].
const LOGF_P: [u32; 9] = [
    0x3D9021BB, 0xBDEBD1B8, 0x3DEF251A, 0xBDFE5D4F, 0x3E11E9BF, 0xBE2AAE50, 0x3E4CCEAC, 0xBE7FFFFC, 0x3EAAAAAA,
];
/// ln 2 split as q2 (exact in 9 bits) + q1.
const LOGF_Q1: u32 = 0xB95E8083;
const LOGF_Q2: u32 = 0x3F318000;
/// sqrt(1/2) as f32: mantissas below it are doubled and the exponent lowered by one.
const SQRT_HALF_F32: u32 = 0x3F3504F3;

/// Cephes `log1p` rational (xla/codegen/intrinsic/log1p.cc), numerator and denominator from
/// the highest power down, the same decimal values for f32 and f64.
#[allow(clippy::excessive_precision)]
const LOG1P_NUM: [f64; 7] = [
    4.5270000862445199635215E-5,
    4.9854102823193375972212E-1,
    6.5787325942061044846969E0,
    2.9911919328553073277375E1,
    6.0949667980987787057556E1,
    5.7112963590585538103336E1,
    2.0039553499201281259648E1,
];
#[allow(clippy::excessive_precision)]
const LOG1P_DEN: [f64; 7] = [
    1.0,
    1.5062909083469192043167E1,
    8.3047565967967209469434E1,
    2.2176239823732856465394E2,
    3.0909872225312059774938E2,
    2.1642788614495947685003E2,
    6.0118660497603843919306E1,
];

impl<'a, 'ctx> Elemental<'a, 'ctx> {
    fn f32_from_bits(&self, bits: u32) -> FV<'ctx> {
        self.cg.llvm.f32_type().const_float(f32::from_bits(bits) as f64)
    }

    /// f32 log: Eigen's `plog_float` as XLA's object code evaluates it.
    pub(super) fn xla_logf(&self, x: FV<'ctx>) -> Result<FV<'ctx>> {
        let f = self.f(x.get_type());
        let b = &self.cg.b;
        let k = |bits| self.f32_from_bits(bits);
        let bits = f.to_bits(x)?;
        // frexp: x = m 2^e with m in [0.5, 1) (e counted as float, as Eigen does). Arguments
        // for which this is meaningless (<= 0, subnormal, inf, NaN) are replaced below.
        let biased = b.build_right_shift(bits, f.ki(23), false, "")?;
        let e = b.build_signed_int_to_float(b.build_int_sub(biased, f.ki(127), "")?, f.ft, "")?;
        let e = f.add(e, f.k(1.0))?;
        let m = f.float_from_bits(b.build_or(b.build_and(bits, f.ki(0x807f_ffff), "")?, f.ki(0x3f00_0000), "")?)?;
        // m < sqrt(1/2): use 2m - 1 and e - 1, so that the argument is in [sqrt(1/2)-1, sqrt(2)-1].
        let low = f.cmp(FloatPredicate::OLT, m, k(SQRT_HALF_F32))?;
        let t = f.add(f.sub(m, f.k(1.0))?, f.sel(low, m, f.k(0.0))?)?;
        let e = f.sub(e, f.sel(low, f.k(1.0), f.k(0.0))?)?;
        let t2 = f.mul(t, t)?;
        let t3 = f.mul(t2, t)?;
        let p = |i: usize| k(LOGF_P[i]);
        let y = f.fma(f.fma(t, p(0), p(1))?, t, p(2))?;
        let y1 = f.fma(f.fma(t, p(3), p(4))?, t, p(5))?;
        let y2 = f.fma(f.fma(t, p(6), p(7))?, t, p(8))?;
        let y = f.fma(y, t3, y1)?;
        let y = f.fma(y, t3, y2)?;
        let y = f.fma(y, t3, f.mul(e, k(LOGF_Q1))?)?;
        let r = f.add(f.fma(t2, f.k(-0.5), t)?, y)?;
        let r = f.fma(e, k(LOGF_Q2), r)?;
        // Eigen's edges under XLA's flush-to-zero: ±0 and subnormals (equal to 0 under DAZ)
        // give -inf, +inf gives +inf, and everything else <= 0 or NaN gives the all-ones NaN
        // (Eigen ORs the "invalid" mask into the result).
        let abs = b.build_and(bits, f.ki(0x7fff_ffff), "")?;
        let zero = f.icmp(IntPredicate::ULT, abs, f.ki(0x0080_0000))?;
        let pos_inf = f.icmp(IntPredicate::EQ, bits, f.ki(0x7f80_0000))?;
        let invalid = f.or(
            f.icmp(IntPredicate::SLT, bits, f.ki(0))?,
            f.icmp(IntPredicate::UGT, abs, f.ki(0x7f80_0000))?,
        )?;
        let r = f.sel(invalid, f.float_from_bits(f.ki(-1))?, r)?;
        let r = f.sel(pos_inf, f.inf(), r)?;
        f.sel(zero, f.k(f64::NEG_INFINITY), r)
    }

    /// f64 log: libm's, with XLA's results at the edges.
    pub(super) fn xla_log_f64(&self, x: FV<'ctx>) -> Result<FV<'ctx>> {
        let f = self.f(x.get_type());
        let b = &self.cg.b;
        let r = f.intr1("llvm.log", x)?;
        let bits = f.to_bits(x)?;
        let abs = b.build_and(bits, f.ki(i64::MAX), "")?;
        let zero = f.icmp(IntPredicate::ULT, abs, f.ki(1 << 52))?;
        // Negative numbers (-inf included), not NaNs: the positive quiet NaN.
        let negative = f.and(
            f.icmp(IntPredicate::SLT, bits, f.ki(0))?,
            f.icmp(IntPredicate::ULE, abs, f.ki(0x7ff0_0000_0000_0000))?,
        )?;
        let r = f.sel(negative, f.float_from_bits(f.ki(0x7ff8_0000_0000_0000))?, r)?;
        f.sel(zero, f.k(f64::NEG_INFINITY), r)
    }

    /// log of an f16 value widened to f32: libm's `logf`, as LLVM lowers XLA's `llvm.log.f16`.
    pub(super) fn xla_log_f16(&self, x: FV<'ctx>) -> Result<FV<'ctx>> {
        self.libm_unary("log", x)
    }

    /// log1p for f32 or f64 (`log` is the matching XLA log above).
    pub(super) fn xla_log1p(&self, x: FV<'ctx>) -> Result<FV<'ctx>> {
        let f = self.f(x.get_type());
        let is_f32 = x.get_type() == self.cg.llvm.f32_type();
        let horner = |coeffs: &[f64]| -> Result<FV<'ctx>> {
            // XLA's loop starts from `0 * x + c0`, which is c0 wherever this branch is taken.
            let mut acc = f.k(coeffs[0]);
            for &c in &coeffs[1..] {
                acc = f.fma(acc, x, f.k(c))?;
            }
            Ok(acc)
        };
        let x2 = f.mul(x, x)?;
        let ratio = f.div(horner(&LOG1P_NUM)?, horner(&LOG1P_DEN)?)?;
        let small = f.add(x, f.fma(x2, f.k(-0.5), f.mul(f.mul(x, x2)?, ratio)?)?)?;
        let u = f.add(x, f.k(1.0))?;
        let large = if is_f32 { self.xla_logf(u)? } else { self.xla_log_f64(u)? };
        // sqrt(2) - 1 rounded to the type, as XLA's constant.
        let bound = if is_f32 { f32::from_bits(0x3ED413CD) as f64 } else { f64::from_bits(0x3FDA827999FCEF32) };
        f.sel(f.cmp(FloatPredicate::OLT, f.abs(x)?, f.k(bound))?, small, large)
    }
}
