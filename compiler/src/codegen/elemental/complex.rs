//! Elementwise ops on complex numbers (c64, c128), computed on their parts.
//!
//! The formulas and their special cases (infinities, NaNs, signed zeros, overflow-safe
//! magnitudes) are the ones XLA's elemental emitter uses, so that edge cases come out as
//! XLA:CPU computes them; the real functions they call (exp, sin, atan2, ...) are ours.

use super::fops::{F, FV};
use super::Elemental;
use crate::error::{Error, Result};
use crate::hlo::Opcode;
use hlojit_runtime::ElementType;
use inkwell::values::{BasicValueEnum, FloatValue};
use inkwell::FloatPredicate;

type Parts<'ctx> = (FloatValue<'ctx>, FloatValue<'ctx>);

impl<'a, 'ctx> Elemental<'a, 'ctx> {
    pub(super) fn complex_unary(
        &self,
        op: Opcode,
        t: ElementType,
        x: BasicValueEnum<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        let cg = self.cg;
        let (re, im) = cg.complex_parts(x)?;
        let f = self.f(re.get_type());
        use Opcode::*;
        let (r, i) = match op {
            Real => return Ok(re.into()),
            Imag => return Ok(im.into()),
            Copy => return Ok(x),
            Abs => return Ok(self.complex_abs(re, im)?.into()),
            Negate => (f.neg(re)?, f.neg(im)?),
            Sign => {
                // z / |z|, and z itself where |z| is 0, as XLA:CPU: the zero keeps its signs
                // (sign(-0 - 0i) = -0 - 0i) and, |z| of a subnormal being flushed to 0, a
                // subnormal z comes back unchanged.
                let m = self.complex_abs(re, im)?;
                let is_zero = f.oeq(m, f.k(0.0))?;
                f.sel2(is_zero, (re, im), (f.div(re, m)?, f.div(im, m)?))?
            }
            Exp => self.complex_exp(re, im)?,
            Log => self.complex_log(re, im)?,
            Log1p => self.complex_log1p(re, im)?,
            Expm1 => self.complex_expm1(re, im)?,
            Sine | Cosine => self.complex_sin_cos(op == Sine, re, im)?,
            Tanh => self.complex_tanh(re, im)?,
            Tan => {
                // tan(x + iy) = -i tanh(-y + ix). XLA negates y and tanh's real part as -1 * v,
                // and the x86 multiply returns a NaN operand with its sign, so NaNs keep their
                // signs where a sign flip would change them (measured through jaxlib: 44 of 169
                // special pairs differed in the NaN sign of the imaginary part, c64 and c128;
                // zeros are negated as by a flip).
                let neg_keeping_nan = |v| -> Result<_> { f.sel(f.is_nan(v)?, v, f.neg(v)?) };
                let (r, i) = self.complex_tanh(neg_keeping_nan(im)?, re)?;
                (i, neg_keeping_nan(r)?)
            }
            Sqrt => self.complex_sqrt(re, im)?,
            Rsqrt => self.complex_rsqrt(re, im)?,
            other => return Err(Error::Unsupported(format!("{other} on {t}"))),
        };
        cg.make_complex(t, r, i)
    }

    pub(super) fn complex_binary(
        &self,
        op: Opcode,
        t: ElementType,
        a: BasicValueEnum<'ctx>,
        b: BasicValueEnum<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        let cg = self.cg;
        let x = cg.complex_parts(a)?;
        let y = cg.complex_parts(b)?;
        let f = self.f(x.0.get_type());
        use Opcode::*;
        let (r, i) = match op {
            Add => (f.add(x.0, y.0)?, f.add(x.1, y.1)?),
            Subtract => (f.sub(x.0, y.0)?, f.sub(x.1, y.1)?),
            Multiply => complex_mul(&f, x, y)?,
            Divide => self.complex_div(x, y)?,
            Power => self.complex_pow(x, y)?,
            Atan2 => self.complex_atan2(x, y)?,
            other => return Err(Error::Unsupported(format!("{other} on {t}"))),
        };
        cg.make_complex(t, r, i)
    }

    /// max(|re|, |im|) * sqrt(1 + (min/max)^2) and the parts it is made of; `min` is the
    /// result where that is NaN ((0, 0), (inf, inf), NaN parts).
    fn complex_abs_parts(&self, re: FV<'ctx>, im: FV<'ctx>) -> Result<(FV<'ctx>, FV<'ctx>, FV<'ctx>)> {
        let f = self.f(re.get_type());
        let (ar, ai) = (f.abs(re)?, f.abs(im)?);
        let max = f.max(ar, ai)?;
        let min = f.min(ar, ai)?;
        let ratio = f.div(min, max)?;
        // XLA's back end contracts ratio^2 + 1 into an FMA (its c128 rsqrt object code). Written
        // as one here, so that it stays fused when LLVM merges ratio^2 with the same product of
        // another op in the fusion (a complex sqrt beside it), which would block the contraction.
        let one_plus = f.fma(ratio, ratio, f.k(1.0))?;
        Ok((min, max, one_plus))
    }

    /// |re + i im| without overflow for large parts.
    pub(super) fn complex_abs(&self, re: FV<'ctx>, im: FV<'ctx>) -> Result<FV<'ctx>> {
        let f = self.f(re.get_type());
        let (min, max, one_plus) = self.complex_abs_parts(re, im)?;
        let r = f.mul(max, f.sqrt(one_plus)?)?;
        f.sel(f.is_nan(r)?, min, r)
    }

    /// e^x (cos y + i sin y). Where e^x overflows, e^(x/2) is applied twice so that a small
    /// cos or sin still gives a finite part; a zero y gives a +0 imaginary part (also for an
    /// infinite or NaN x).
    fn complex_exp(&self, x: FV<'ctx>, y: FV<'ctx>) -> Result<Parts<'ctx>> {
        let f = self.f(x.get_type());
        let zero = f.k(0.0);
        let e = self.float_math_unary(Opcode::Exp, x)?;
        let overflows = f.oeq(e, f.inf())?;
        let eh = self.float_math_unary(Opcode::Exp, f.mul(x, f.k(0.5))?)?;
        let cos = self.float_math_unary(Opcode::Cosine, y)?;
        let sin = self.float_math_unary(Opcode::Sine, y)?;
        let real = f.sel(overflows, f.mul(f.mul(eh, cos)?, eh)?, f.mul(e, cos)?)?;
        let imag = f.sel(overflows, f.mul(f.mul(eh, sin)?, eh)?, f.mul(e, sin)?)?;
        Ok((real, f.sel(f.oeq(y, zero)?, zero, imag)?))
    }

    /// log(z) = log|z| + i arg z. |z| near 1 would lose the real part to cancellation, so
    /// there s = x^2 + y^2 - 1 is summed from exact (Dekker) squares and the real part is
    /// log1p(s) / 2; elsewhere it is log(max) + log1p((min/max)^2) / 2 (StableHLO's complex
    /// math expansion, which XLA applies).
    fn complex_log(&self, x: FV<'ctx>, y: FV<'ctx>) -> Result<Parts<'ctx>> {
        let f = self.f(x.get_type());
        let half = f.k(0.5);
        let minus_one = f.k(-1.0);
        let (yyh, yyl) = self.square_dekker(y)?;
        let (xxh, xxl) = self.square_dekker(x)?;
        let y_bigger = f.cmp(FloatPredicate::OGT, yyh, xxh)?;
        let mxh = f.sel(y_bigger, yyh, xxh)?;
        let mnh = f.sel(y_bigger, xxh, yyh)?;
        let s = fast2sum(&f, &[minus_one, mxh, mnh, yyl, xxl])?; // -1 is the constant
        let near_one = f.cmp(FloatPredicate::OLT, f.abs(s)?, half)?;
        let near = f.mul(half, self.float_math_unary(Opcode::Log1p, s)?)?;
        let far = self.log_hypot_far(x, y)?;
        let real = f.sel(near_one, near, far)?;
        Ok((real, self.float_math_binary(Opcode::Atan2, y, x)?))
    }

    /// log(hypot(x, y)) as log(max) + log1p((min/max)^2) / 2, with min/max = 1 when they are
    /// equal (both 0 or both inf).
    fn log_hypot_far(&self, x: FV<'ctx>, y: FV<'ctx>) -> Result<FV<'ctx>> {
        let f = self.f(x.get_type());
        let (ax, ay) = (f.abs(x)?, f.abs(y)?);
        let mx = f.max(ax, ay)?;
        let mn = f.min(ax, ay)?;
        let r = f.sel(f.oeq(mn, mx)?, f.k(1.0), f.div(mn, mx)?)?;
        let l = self.float_math_unary(Opcode::Log1p, f.mul(r, r)?)?;
        f.add(self.float_math_unary(Opcode::Log, mx)?, f.mul(f.k(0.5), l)?)
    }

    /// v^2 as an unevaluated sum high + low (Veltkamp split, Dekker product).
    fn square_dekker(&self, v: FV<'ctx>) -> Result<Parts<'ctx>> {
        let f = self.f(v.get_type());
        let splitter = if v.get_type() == self.cg.llvm.f64_type() {
            134217729.0
        } else {
            4097.0
        };
        let high = f.mul(v, v)?;
        let vc = f.mul(f.k(splitter), v)?;
        let vh = f.add(vc, f.sub(v, vc)?)?;
        let vl = f.sub(v, vh)?;
        let hl = f.mul(vh, vl)?;
        let low = f.add(
            f.add(f.add(f.add(f.neg(high)?, f.mul(vh, vh)?)?, hl)?, hl)?,
            f.mul(vl, vl)?,
        )?;
        Ok((high, low))
    }

    /// log1p(x + iy): real part log(hypot(x + 1, y)) evaluated by cases (StableHLO's complex
    /// math expansion): rescaled for huge parts, directly near x = -1, otherwise as
    /// log1p(2x + x^2 + y^2) / 2 with the sum taken from exact squares.
    fn complex_log1p(&self, x: FV<'ctx>, y: FV<'ctx>) -> Result<Parts<'ctx>> {
        let f = self.f(x.get_type());
        let one = f.k(1.0);
        let half = f.k(0.5);
        let largest = if x.get_type() == self.cg.llvm.f64_type() {
            f64::MAX
        } else {
            f32::MAX as f64
        };
        let (ax, ay) = (f.abs(x)?, f.abs(y)?);
        let mx = f.max(ax, ay)?;
        let huge = f.cmp(FloatPredicate::OGT, mx, f.k(largest.sqrt() * 0.01))?;
        let far = self.log_hypot_far(x, y)?;
        let xp1 = f.add(x, one)?;
        let (yyh, yyl) = self.square_dekker(y)?;
        let close_to_minus_one = f.cmp(FloatPredicate::OLT, f.add(f.abs(xp1)?, ay)?, f.k(0.2))?;
        let direct = f.mul(half, self.float_math_unary(Opcode::Log, f.add(f.mul(xp1, xp1)?, yyh)?)?)?;
        let (xxh, xxl) = self.square_dekker(x)?;
        let s = two_sum(&f, &[f.add(x, x)?, yyh, xxh, yyl, xxl])?;
        let general = f.mul(half, self.float_math_unary(Opcode::Log1p, s)?)?;
        let real = f.sel(huge, far, f.sel(close_to_minus_one, direct, general)?)?;
        Ok((real, self.float_math_binary(Opcode::Atan2, y, xp1)?))
    }

    /// cos(x) - 1, accurate near 0 (a Cephes polynomial for |x| <= pi/4).
    fn cosm1(&self, x: FV<'ctx>) -> Result<FV<'ctx>> {
        let f = self.f(x.get_type());
        const COEFFS: [f64; 7] = [
            4.737750796424621e-14,
            -1.147028484342536e-11,
            2.087675428708152e-09,
            -2.755731921499979e-07,
            2.480158730157055e-05,
            -0.0013888888888888872,
            0.041666666666666664,
        ];
        let large = f.sub(self.float_math_unary(Opcode::Cosine, x)?, f.k(1.0))?;
        let xx = f.mul(x, x)?;
        let small = f.add(f.mul(f.mul(xx, xx)?, f.poly(xx, &COEFFS)?)?, f.mul(f.k(-0.5), xx)?)?;
        f.sel(f.cmp(FloatPredicate::OGT, xx, f.k(0.61685))?, large, small)
    }

    /// exp(a + bi) - 1 = (expm1(a) cos(b) + cosm1(b)) + i exp(a) sin(b).
    fn complex_expm1(&self, a: FV<'ctx>, b: FV<'ctx>) -> Result<Parts<'ctx>> {
        let f = self.f(a.get_type());
        let one = f.k(1.0);
        let zero = f.k(0.0);
        let expm1_a = self.float_math_unary(Opcode::Expm1, a)?;
        let exp_a = f.add(expm1_a, one)?;
        let sin_b = self.float_math_unary(Opcode::Sine, b)?;
        let cos_b_m1 = self.cosm1(b)?;
        let cos_b = f.add(cos_b_m1, one)?;
        let real = f.add(f.mul(expm1_a, cos_b)?, cos_b_m1)?;
        let imag = f.sel(f.oeq(b, zero)?, zero, f.mul(exp_a, sin_b)?)?;
        Ok((real, imag))
    }

    /// sin/cos(x + iy) through sinh(y), cosh(y) from exp(y), as XLA's elemental emitter
    /// writes them: cos's imaginary part is sin(x) (e^-y/2 - e^y/2), not -(sin(x) sinh(y)),
    /// which gives +0 for cos(0 + 0i) (measured on XLA's HLO `cosine`; `jnp.cos` differs, as
    /// JAX lowers complex cos to real ops itself).
    fn complex_sin_cos(&self, is_sin: bool, x: FV<'ctx>, y: FV<'ctx>) -> Result<Parts<'ctx>> {
        let f = self.f(x.get_type());
        let exp_y = self.float_math_unary(Opcode::Exp, y)?;
        let half_exp_y = f.mul(f.k(0.5), exp_y)?;
        let half_exp_neg_y = f.div(f.k(0.5), exp_y)?;
        let sin_x = self.float_math_unary(Opcode::Sine, x)?;
        let cos_x = self.float_math_unary(Opcode::Cosine, x)?;
        let sinh_y = f.sub(half_exp_y, half_exp_neg_y)?;
        let cosh_y = f.add(half_exp_y, half_exp_neg_y)?;
        Ok(if is_sin {
            (f.mul(sin_x, cosh_y)?, f.mul(cos_x, sinh_y)?)
        } else {
            (f.mul(cos_x, cosh_y)?, f.mul(sin_x, f.sub(half_exp_neg_y, half_exp_y)?)?)
        })
    }

    /// tanh(a + bi) = (e^2a - e^-2a + 2i sin 2b) / (e^2a + e^-2a + 2 cos 2b), with the
    /// exponentials as expm1 (accurate for small a) and the limits for infinite a.
    fn complex_tanh(&self, a: FV<'ctx>, b: FV<'ctx>) -> Result<Parts<'ctx>> {
        let f = self.f(a.get_type());
        let two_a = f.add(a, a)?;
        let neg_two_a = f.mul(f.k(-1.0), two_a)?;
        let e2a_m1 = self.float_math_unary(Opcode::Expm1, two_a)?;
        let en2a_m1 = self.float_math_unary(Opcode::Expm1, neg_two_a)?;
        let real_num = f.sub(e2a_m1, en2a_m1)?;
        let cos_b = self.float_math_unary(Opcode::Cosine, b)?;
        let four = f.k(4.0);
        let two_cos_2b_p2 = f.mul(f.mul(cos_b, cos_b)?, four)?;
        let sin_b = self.float_math_unary(Opcode::Sine, b)?;
        let imag_num = f.mul(four, f.mul(cos_b, sin_b)?)?;
        let exp_sum_m2 = f.add(e2a_m1, en2a_m1)?;
        let denom = f.add(exp_sum_m2, two_cos_2b_p2)?;
        let inf = f.inf();
        let is_inf = f.oeq(exp_sum_m2, inf)?;
        let real_limit = f.copysign(f.k(1.0), a)?;
        let real = f.sel(is_inf, real_limit, f.div(real_num, denom)?)?;
        let imag = f.div(imag_num, denom)?;
        // Finite a with b infinite or NaN gives (NaN, NaN); infinite a gives (±1, ±0) even
        // then; b = 0 keeps the imaginary part 0 (also for a NaN).
        let zero = f.k(0.0);
        let a_is_inf = f.oeq(f.abs(a)?, inf)?;
        let b_is_zero = f.oeq(b, zero)?;
        let sin_2b_is_nan = f.is_nan(imag_num)?;
        let real_is_nan = f.and(sin_2b_is_nan, f.not(a_is_inf)?)?;
        let imag_is_zero = f.or(b_is_zero, f.and(a_is_inf, sin_2b_is_nan)?)?;
        Ok((f.sel(real_is_nan, f.nan(), real)?, f.sel(imag_is_zero, zero, imag)?))
    }

    /// sqrt(x + iy) from u = sqrt((hypot(x, y) + |x|) / 2) and |y| / (2u), which avoids
    /// cancellation for either sign of x, with rescaled forms where u under- or overflows
    /// (StableHLO's complex math expansion, which XLA applies), after XLA's algebraic
    /// simplifier: its optimized HLO divides by the constants sqrt(2) and 2.197... as products
    /// with their reciprocals, and (sqrt(ax) * 1.5537...) * (1 / sqrt(2)) becomes sqrt(ax)
    /// times the folded product of the constants, each constant rounded in the element type
    /// (these give XLA's last bits, e.g. for sqrt(1 + i)).
    fn complex_sqrt(&self, x: FV<'ctx>, y: FV<'ctx>) -> Result<Parts<'ctx>> {
        let f = self.f(x.get_type());
        let is_f32 = x.get_type() == self.cg.llvm.f32_type();
        // A constant expression as XLA's folder evaluates it: in the element type.
        let typed = |v: f64| if is_f32 { v as f32 as f64 } else { v };
        let quotient = |a: f64, b: f64| if is_f32 { (a as f32 / b as f32) as f64 } else { a / b };
        let product = |a: f64, b: f64| if is_f32 { (a as f32 * b as f32) as f64 } else { a * b };
        let inv_sq_2_value = quotient(1.0, std::f64::consts::SQRT_2);
        let inv_sq_2 = f.k(inv_sq_2_value);
        let zero = f.k(0.0);
        let one = f.k(1.0);
        let two = f.k(2.0);
        let sq_2 = f.k(std::f64::consts::SQRT_2);
        let (ax, ay) = (f.abs(x)?, f.abs(y)?);
        let eq = f.oeq(ax, ay)?;
        let lt = f.cmp(FloatPredicate::OLT, ax, ay)?;
        let gt = f.cmp(FloatPredicate::OGT, ax, ay)?;
        let sq_ax = f.sqrt(ax)?;
        let sq_ay = f.sqrt(ay)?;
        let mx = f.max(ax, ay)?;
        let mn = f.min(ax, ay)?;
        let u_general = f.sqrt(f.add(f.div(self.hypot_parts(mx, mn)?, two)?, f.div(ax, two)?)?)?;
        let u_extreme = f.or(f.oeq(u_general, zero)?, f.oeq(u_general, f.inf())?)?;
        // Rescaled by the larger part: r = min/max ratio in (0, 1].
        let r0 = f.sel(eq, one, f.sel(lt, f.div(ax, ay)?, f.div(ay, ax)?)?)?;
        let abs_r0 = f.abs(r0)?;
        let h = self.hypot_parts(f.max(one, abs_r0)?, f.min(one, abs_r0)?)?;
        let sq_1h = f.sqrt(f.add(one, h)?)?;
        let sq_rh = f.sqrt(f.add(r0, h)?)?;
        let u_scaled = f.sel(
            gt,
            f.mul(sq_ax, f.mul(sq_1h, inv_sq_2)?)?,
            f.mul(sq_ay, f.mul(sq_rh, inv_sq_2)?)?,
        )?;
        // For ax == ay: u = sqrt(ax) sqrt((1 + sqrt 2) / 2), the constants folded.
        let u_eq = f.mul(sq_ax, f.k(product(typed(1.5537739740300374), inv_sq_2_value)))?;
        let u = f.sel(eq, u_eq, f.sel(u_extreme, u_scaled, u_general)?)?;
        let ratio_sq = f.sel(eq, one, f.sel(lt, f.div(sq_ax, sq_ay)?, f.div(sq_ay, sq_ax)?)?)?;
        let ay_div_u_scaled = f.sel(
            gt,
            f.div(f.mul(sq_ay, ratio_sq)?, f.mul(sq_1h, sq_2)?)?,
            f.div(sq_ay, f.mul(sq_rh, sq_2)?)?,
        )?;
        let ay_div_u = f.sel(
            eq,
            f.mul(sq_ay, f.k(quotient(1.0, typed(2.19736822693562))))?,
            f.sel(u_extreme, ay_div_u_scaled, f.div(ay, f.mul(u_general, two)?)?)?,
        )?;
        let real = f.sel(f.cmp(FloatPredicate::OGE, x, zero)?, u, ay_div_u)?;
        let y_neg = f.cmp(FloatPredicate::OLT, y, zero)?;
        let imag_mag = f.sel(f.cmp(FloatPredicate::OLT, x, zero)?, u, ay_div_u)?;
        let imag = f.sel(y_neg, f.neg(imag_mag)?, imag_mag)?;
        Ok((real, imag))
    }

    /// hypot from max >= min >= 0: sqrt(2) max when equal, else max sqrt(1 + (min/max)^2)
    /// (or max + max r / 2 where that square root rounds to 1).
    fn hypot_parts(&self, mx: FV<'ctx>, mn: FV<'ctx>) -> Result<FV<'ctx>> {
        let f = self.f(mx.get_type());
        let one = f.k(1.0);
        let ratio = f.div(mn, mx)?;
        let r = f.mul(ratio, ratio)?;
        let sqa = f.sqrt(f.add(one, r)?)?;
        let tiny = f.and(f.oeq(sqa, one)?, f.cmp(FloatPredicate::OGT, r, f.k(0.0))?)?;
        let general = f.sel(tiny, f.add(mx, f.div(f.mul(mx, r)?, f.k(2.0))?)?, f.mul(mx, sqa)?)?;
        f.sel(f.oeq(mx, mn)?, f.mul(f.k(std::f64::consts::SQRT_2), mx)?, general)
    }

    /// rsqrt(z) = |z|^-1/2 (cos(-t/2) + i sin(-t/2)), with XLA's special values.
    fn complex_rsqrt(&self, a: FV<'ctx>, b: FV<'ctx>) -> Result<Parts<'ctx>> {
        let f = self.f(a.get_type());
        // c64 takes XLA's f32 rsqrt (the processor's approximation refined, xla_rsqrt.rs).
        let is_f32 = a.get_type() == self.cg.llvm.f32_type();
        let rsqrt = |x: FV<'ctx>| -> Result<FV<'ctx>> {
            if is_f32 {
                self.xla_rsqrt_f32(x)
            } else {
                f.div(f.k(1.0), f.sqrt(x)?)
            }
        };
        let (min, max, one_plus) = self.complex_abs_parts(a, b)?;
        // XLA's order: sqrt(rsqrt(1 + (min/max)^2)) * rsqrt(max) (its IR for c128).
        let r = f.mul(f.sqrt(rsqrt(one_plus)?)?, rsqrt(max)?)?;
        let r = f.sel(f.is_nan(r)?, rsqrt(min)?, r)?;
        let t = self.float_math_binary(Opcode::Atan2, b, a)?;
        let angle = f.mul(t, f.k(-0.5))?;
        let cos = self.float_math_unary(Opcode::Cosine, angle)?;
        let sin = self.float_math_unary(Opcode::Sine, angle)?;
        let zero = f.k(0.0);
        let inf = f.inf();
        let a_signed_zero = f.copysign(zero, a)?;
        let neg_b_signed_zero = f.mul(f.copysign(zero, b)?, f.k(-1.0))?;
        let abs_a = f.abs(a)?;
        let abs_b = f.abs(b)?;
        let is_zero_zero = f.and(f.oeq(b, zero)?, f.oeq(a, zero)?)?;
        let vanishes = f.or(f.and(f.oeq(abs_b, inf)?, f.is_nan(a)?)?, f.oeq(abs_a, inf)?)?;
        let real = f.sel(is_zero_zero, inf, f.sel(vanishes, a_signed_zero, f.mul(r, cos)?)?)?;
        let imag = f.sel(
            is_zero_zero,
            f.nan(),
            f.sel(vanishes, neg_b_signed_zero, f.mul(r, sin)?)?,
        )?;
        Ok((real, imag))
    }

    /// Smith's division, with the C99 Annex G results for zero and infinite operands where
    /// it gives (NaN, NaN).
    fn complex_div(&self, x: Parts<'ctx>, y: Parts<'ctx>) -> Result<Parts<'ctx>> {
        let f = self.f(x.0.get_type());
        let ((a_r, a_i), (b_r, b_i)) = (x, y);
        let r_i_ratio = f.div(b_r, b_i)?;
        let r_i_denom = f.add(b_i, f.mul(r_i_ratio, b_r)?)?;
        let i_r_ratio = f.div(b_i, b_r)?;
        let i_r_denom = f.add(b_r, f.mul(i_r_ratio, b_i)?)?;
        let b_r_abs = f.abs(b_r)?;
        let b_i_abs = f.abs(b_i)?;
        let r_lt_i = f.cmp(FloatPredicate::OLT, b_r_abs, b_i_abs)?;
        let c_r = f.sel(
            r_lt_i,
            f.div(f.add(f.mul(r_i_ratio, a_r)?, a_i)?, r_i_denom)?,
            f.div(f.add(f.mul(i_r_ratio, a_i)?, a_r)?, i_r_denom)?,
        )?;
        let c_i = f.sel(
            r_lt_i,
            f.div(f.sub(f.mul(r_i_ratio, a_i)?, a_r)?, r_i_denom)?,
            f.div(f.sub(a_i, f.mul(i_r_ratio, a_r)?)?, i_r_denom)?,
        )?;
        let zero = f.k(0.0);
        let one = f.k(1.0);
        let inf = f.inf();
        // Zero denominator, numerator not all NaN: inf with b_r's sign times the numerator.
        let ordered = |v: FV<'ctx>| f.cmp(FloatPredicate::ORD, v, zero);
        let zero_denominator = f.and(
            f.and(f.oeq(b_r_abs, zero)?, f.oeq(b_i_abs, zero)?)?,
            f.or(ordered(a_r)?, ordered(a_i)?)?,
        )?;
        let signed_inf = f.copysign(inf, b_r)?;
        let zero_denominator_result = (f.mul(signed_inf, a_r)?, f.mul(signed_inf, a_i)?);
        // Infinite numerator, finite denominator.
        let (a_r_abs, a_i_abs) = (f.abs(a_r)?, f.abs(a_i)?);
        let a_r_inf = f.oeq(a_r_abs, inf)?;
        let a_i_inf = f.oeq(a_i_abs, inf)?;
        let inf_num_finite_denom = f.and(
            f.or(a_r_inf, a_i_inf)?,
            f.and(f.one(b_r_abs, inf)?, f.one(b_i_abs, inf)?)?,
        )?;
        let a_r_unit = f.copysign(f.sel(a_r_inf, one, zero)?, a_r)?;
        let a_i_unit = f.copysign(f.sel(a_i_inf, one, zero)?, a_i)?;
        let inf_num_result = (
            f.mul(inf, f.add(f.mul(a_r_unit, b_r)?, f.mul(a_i_unit, b_i)?)?)?,
            f.mul(inf, f.sub(f.mul(a_i_unit, b_r)?, f.mul(a_r_unit, b_i)?)?)?,
        );
        // Finite numerator, infinite denominator.
        let b_r_inf = f.oeq(b_r_abs, inf)?;
        let b_i_inf = f.oeq(b_i_abs, inf)?;
        let finite_num_inf_denom = f.and(
            f.or(b_r_inf, b_i_inf)?,
            f.and(f.one(a_r_abs, inf)?, f.one(a_i_abs, inf)?)?,
        )?;
        let b_r_unit = f.copysign(f.sel(b_r_inf, one, zero)?, b_r)?;
        let b_i_unit = f.copysign(f.sel(b_i_inf, one, zero)?, b_i)?;
        let inf_denom_result = (
            f.mul(zero, f.add(f.mul(a_r, b_r_unit)?, f.mul(a_i, b_i_unit)?)?)?,
            f.mul(zero, f.sub(f.mul(a_i, b_r_unit)?, f.mul(a_r, b_i_unit)?)?)?,
        );
        let c_nan = f.and(
            f.cmp(FloatPredicate::UNO, c_r, zero)?,
            f.cmp(FloatPredicate::UNO, c_i, zero)?,
        )?;
        let special = f.sel2(finite_num_inf_denom, inf_denom_result, (c_r, c_i))?;
        let special = f.sel2(inf_num_finite_denom, inf_num_result, special)?;
        let special = f.sel2(zero_denominator, zero_denominator_result, special)?;
        f.sel2(c_nan, special, (c_r, c_i))
    }

    /// (a + bi)^(c + di) = |z|^c e^(-d arg z) (cos q + i sin q), q = c arg z + d log|z|, with
    /// Kahan's conventions for 0^w, z^0, 1^w and inf^c.
    fn complex_pow(&self, x: Parts<'ctx>, y: Parts<'ctx>) -> Result<Parts<'ctx>> {
        let f = self.f(x.0.get_type());
        let ((a, b), (c, d)) = (x, y);
        let m = self.complex_abs(a, b)?;
        let m_to_c = self.float_math_binary(Opcode::Power, m, c)?;
        let arg = self.float_math_binary(Opcode::Atan2, b, a)?;
        let e = self.float_math_unary(Opcode::Exp, f.mul(f.neg(d)?, arg)?)?;
        let coeff = f.mul(m_to_c, e)?;
        let ln_m = self.float_math_unary(Opcode::Log, m)?;
        let q = f.add(f.mul(c, arg)?, f.mul(d, ln_m)?)?;
        let cos_q = self.float_math_unary(Opcode::Cosine, q)?;
        let sin_q = self.float_math_unary(Opcode::Sine, q)?;
        let inf = f.inf();
        let zero = f.k(0.0);
        let one = f.k(1.0);
        let general = (f.mul(coeff, cos_q)?, f.mul(coeff, sin_q)?);
        let d_zero = f.oeq(d, zero)?;
        let c_zero = f.oeq(zero, c)?;
        let base_zero = f.and(f.and(f.oeq(m, zero)?, d_zero)?, f.cmp(FloatPredicate::OLE, zero, c)?)?;
        let r = f.sel2(base_zero, (f.sel(c_zero, one, zero)?, zero), general)?;
        let r = f.sel2(f.and(c_zero, d_zero)?, (one, zero), r)?;
        let r = f.sel2(f.and(f.oeq(a, one)?, f.oeq(b, zero)?)?, (one, zero), r)?;
        let inf_real = f.and(f.oeq(a, inf)?, f.and(f.oeq(b, zero)?, d_zero)?)?;
        let r = f.sel2(f.and(inf_real, f.cmp(FloatPredicate::OGT, c, zero)?)?, (inf, zero), r)?;
        f.sel2(f.and(inf_real, f.cmp(FloatPredicate::OLT, c, zero)?)?, (zero, zero), r)
    }

    /// log|z| + i arg z from the plain magnitude (what XLA uses inside complex atan2).
    fn complex_log_polar(&self, re: FV<'ctx>, im: FV<'ctx>) -> Result<Parts<'ctx>> {
        let angle = self.float_math_binary(Opcode::Atan2, im, re)?;
        let m = self.complex_abs(re, im)?;
        Ok((self.float_math_unary(Opcode::Log, m)?, angle))
    }
    /// sqrt(z) = sqrt(|z|) (cos(t/2) + i sin(t/2)), t = arg z, with C99's special values
    /// (the polar form XLA uses inside complex atan2).
    fn complex_sqrt_polar(&self, a: FV<'ctx>, b: FV<'ctx>) -> Result<Parts<'ctx>> {
        let f = self.f(a.get_type());
        // sqrt(|z|) = sqrt(max) * (1 + (min/max)^2)^(1/4)
        let (min, max, one_plus) = self.complex_abs_parts(a, b)?;
        let r = f.mul(
            f.sqrt(max)?,
            self.float_math_binary(Opcode::Power, one_plus, f.k(0.25))?,
        )?;
        let r = f.sel(f.is_nan(r)?, min, r)?;
        let t = self.float_math_binary(Opcode::Atan2, b, a)?;
        let angle = f.mul(t, f.k(0.5))?;
        let cos = self.float_math_unary(Opcode::Cosine, angle)?;
        let sin = self.float_math_unary(Opcode::Sine, angle)?;
        let zero = f.k(0.0);
        let inf = f.inf();
        let neg_inf = f.k(f64::NEG_INFINITY);
        let abs_b = f.abs(b)?;
        let b_inf = f.oeq(abs_b, inf)?;
        let real = f.sel(
            f.or(b_inf, f.oeq(a, inf)?)?,
            inf,
            f.sel(f.and(f.oeq(a, neg_inf)?, f.one(abs_b, inf)?)?, zero, f.mul(r, cos)?)?,
        )?;
        let b_signed_inf = f.copysign(inf, b)?;
        let imag = f.sel(
            f.or(b_inf, f.oeq(a, neg_inf)?)?,
            b_signed_inf,
            f.sel(f.is_nan(r)?, f.nan(), f.sel(f.oeq(sin, zero)?, sin, f.mul(r, sin)?)?)?,
        )?;
        f.sel2(f.oeq(r, zero)?, (zero, zero), (real, imag))
    }

    /// atan2(y, x) = -i log((x + iy) / sqrt(x^2 + y^2)) on complex numbers.
    fn complex_atan2(&self, y: Parts<'ctx>, x: Parts<'ctx>) -> Result<Parts<'ctx>> {
        let f = self.f(x.0.get_type());
        let xx = complex_mul(&f, x, x)?;
        let yy = complex_mul(&f, y, y)?;
        let sum = (f.add(xx.0, yy.0)?, f.add(xx.1, yy.1)?);
        let root = self.complex_sqrt_polar(sum.0, sum.1)?;
        let iy = complex_mul(&f, (f.k(0.0), f.k(1.0)), y)?;
        let num = (f.add(x.0, iy.0)?, f.add(x.1, iy.1)?);
        let q = self.complex_div(num, root)?;
        let l = self.complex_log_polar(q.0, q.1)?;
        // -i (l.0 + i l.1) = l.1 - i l.0
        complex_mul(&f, (f.k(0.0), f.k(-1.0)), l)
    }
}

fn complex_mul<'ctx>(f: &F<'_, 'ctx>, x: Parts<'ctx>, y: Parts<'ctx>) -> Result<Parts<'ctx>> {
    Ok((
        f.sub(f.mul(x.0, y.0)?, f.mul(x.1, y.1)?)?,
        f.add(f.mul(x.0, y.1)?, f.mul(x.1, y.0)?)?,
    ))
}

/// Sum of `terms` in order with Fast2Sum error terms added back (callers order the terms by
/// decreasing magnitude, as Fast2Sum requires), the first term a constant, as in XLA's
/// optimized HLO: its algebraic simplifier folds the first error term's (t + c) - c into t,
/// so that term is t - t (0, or NaN for an infinite t), not the rounding error of t + c
/// (measured on complex log: 291 of 100,000 c64 real parts differed with the textbook term).
fn fast2sum<'ctx>(f: &F<'_, 'ctx>, terms: &[FV<'ctx>]) -> Result<FV<'ctx>> {
    let mut high = terms[0];
    let mut low: Option<FV<'ctx>> = None;
    for (i, &t) in terms[1..].iter().enumerate() {
        let sum = f.add(high, t)?;
        let err = if i == 0 { f.sub(t, t)? } else { f.sub(t, f.sub(sum, high)?)? };
        low = Some(match low {
            None => err,
            Some(l) => f.add(l, err)?,
        });
        high = sum;
    }
    match low {
        Some(l) => f.add(high, l),
        None => Ok(high),
    }
}

/// Sum of `terms` in order with exact 2Sum error terms added back.
fn two_sum<'ctx>(f: &F<'_, 'ctx>, terms: &[FV<'ctx>]) -> Result<FV<'ctx>> {
    let mut high = terms[0];
    let mut low: Option<FV<'ctx>> = None;
    for &t in &terms[1..] {
        let sum = f.add(high, t)?;
        let t_part = f.sub(sum, high)?;
        let err = f.add(f.sub(high, f.sub(sum, t_part)?)?, f.sub(t, t_part)?)?;
        low = Some(match low {
            None => err,
            Some(l) => f.add(l, err)?,
        });
        high = sum;
    }
    match low {
        Some(l) => f.add(high, l),
        None => Ok(high),
    }
}
