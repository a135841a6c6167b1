//! Vectorizable f32 exp and tanh built from polynomial approximations with nothing but
//! arithmetic, bit operations and selects, so that LLVM's loop vectorizer turns an elementwise
//! loop over them into SIMD code (a libm call per element blocks that and costs far more). Both
//! are XLA:CPU's own (Cephes expf, Eigen's rational tanh), so that results agree with XLA's bit
//! for bit; erf, expm1, log and log1p are XLA's too, each in its own `xla_*.rs` file.

use super::fops::FV;
use super::Elemental;
use crate::error::Result;
use inkwell::FloatPredicate;

/// XLA:CPU's f32 exp (Cephes `expf`, as its dumped IR and object code show): e^r = 1 + r + r^2 P(r)
/// with these f32 coefficients (highest power first), r = x - n ln2 for n = floor(x log2(e) + 1/2).
const EXP_P: [u32; 6] = [0x39506967, 0x3AB743CE, 0x3C088908, 0x3D2AA9C1, 0x3E2AAAAA, 0x3F000000];
/// ln 2 = EXP_C1 - EXP_C2 (EXP_C1 exact in 9 bits), as f32 bit patterns.
const EXP_C1: u32 = 0x3F318000;
const EXP_C2: u32 = 0xB95E8083;
/// XLA clamps x to [EXP_LO, EXP_HI] and n to [-127, 127] (2^-127 is the bit pattern 0, so
/// the smallest results are 0; 2^127 times the polynomial overflows to inf).
const EXP_LO: f64 = -87.8;
const EXP_HI: f64 = 88.8;

/// XLA:CPU's f32 tanh (xla/codegen/intrinsic/tanh.cc, after Eigen's `ptanh_float`) is the
/// rational function x N(x^2) / D(x^2) with these f32 coefficients (increasing powers of x^2).
/// Its results differ from the correctly rounded tanh by a few ulp; using the same function,
/// evaluated the same way (fused Horner steps), gives XLA's results, and it costs one division
/// instead of an exp and a division.
#[allow(clippy::excessive_precision)] // XLA's decimal text, rounded to f32 as in XLA
const TANH_NUM: [f32; 7] = [
    4.89352455891786e-03,
    6.37261928875436e-04,
    1.48572235717979e-05,
    5.12229709037114e-08,
    -8.60467152213735e-11,
    2.00018790482477e-13,
    -2.76076847742355e-16,
];
#[allow(clippy::excessive_precision)]
const TANH_DEN: [f32; 4] = [
    4.89352518554385e-03,
    2.26843463243900e-03,
    1.18534705686654e-04,
    1.19825839466702e-06,
];
/// The rational function is exactly ±1 (with fused steps) at ±this argument; larger arguments
/// are clamped to it so that the result never leaves [-1, 1].
const TANH_CLAMP: f32 = 7.998_811_7;
/// Below this |x| XLA returns x itself (the rational function would flush tiny arguments to 0).
const TANH_LINEAR_BELOW: f64 = 0.0004;
/// From this |x| on XLA returns ±1 directly.
const TANH_ONE_FROM: f64 = 20.0;

impl<'a, 'ctx> Elemental<'a, 'ctx> {
    /// Whether `x` (f32) gets the vectorizable implementations.
    pub(super) fn has_vector_math(&self, x: FV<'ctx>) -> bool {
        x.get_type() == self.cg.llvm.f32_type()
    }

    /// e^x for f32, evaluated as XLA:CPU does (`EXP_P`): the same clamps, the same fused steps
    /// (XLA's back end contracts each multiply-add whose product has no other use), so the
    /// results are XLA's bit for bit.
    pub(super) fn vexp(&self, x: FV<'ctx>) -> Result<FV<'ctx>> {
        let f = self.f(x.get_type());
        let k = |bits: u32| f.k(f32::from_bits(bits) as f64);
        // Unordered compares keep a NaN argument (XLA's `select(x >= lo or NaN, x, lo)`).
        let x = f.sel(f.cmp(FloatPredicate::UGE, x, f.k(EXP_LO))?, x, f.k(EXP_LO))?;
        let x = f.sel(f.cmp(FloatPredicate::ULE, x, f.k(EXP_HI))?, x, f.k(EXP_HI))?;
        let n = f.intr1("llvm.floor", f.fma(x, k(0x3FB8AA3B), f.k(0.5))?)?; // log2(e)
        let n = f.sel(f.cmp(FloatPredicate::UGE, n, f.k(-127.0))?, n, f.k(-127.0))?;
        let n = f.sel(f.cmp(FloatPredicate::ULE, n, f.k(127.0))?, n, f.k(127.0))?;
        let r = f.fma(f.neg(n)?, k(EXP_C1), x)?;
        let r = f.fma(f.neg(n)?, k(EXP_C2), r)?;
        let mut y = f.fma(r, k(EXP_P[0]), k(EXP_P[1]))?;
        for &c in &EXP_P[2..] {
            y = f.fma(y, r, k(c))?;
        }
        let y = f.add(f.k(1.0), f.fma(y, f.mul(r, r)?, r)?)?;
        // 2^n from the exponent bits. XLA converts n with cvttps2dq, which gives 0x80000000 for
        // a NaN n and so a factor of 1.0; LLVM's fptosi of NaN is poison, so NaN is mapped to 0
        // first (the same factor).
        let b = &self.cg.b;
        let n = f.sel(f.is_nan(n)?, f.k(0.0), n)?;
        let ni = b.build_float_to_signed_int(n, f.it(), "")?;
        let bits = b.build_left_shift(b.build_int_add(ni, f.ki(127), "")?, f.ki(23), "")?;
        f.mul(y, f.float_from_bits(bits)?)
    }

    /// tanh(x) for f32, computed as XLA:CPU computes it (see `TANH_NUM`): x below 0.0004,
    /// ±1 from 20 on, otherwise x N(x^2) / D(x^2) of x clamped to ±`TANH_CLAMP`. The clamp
    /// is written as XLA's "fast" min/max (an unordered compare and a select), so NaN passes
    /// through it and comes out as NaN.
    pub(super) fn vtanh(&self, x: FV<'ctx>) -> Result<FV<'ctx>> {
        let f = self.f(x.get_type());
        let a = f.abs(x)?;
        let lo = f.k(-(TANH_CLAMP as f64));
        let hi = f.k(TANH_CLAMP as f64);
        let c = f.sel(f.cmp(FloatPredicate::UGE, x, lo)?, x, lo)?;
        let c = f.sel(f.cmp(FloatPredicate::ULE, c, hi)?, c, hi)?;
        let c2 = f.mul(c, c)?;
        let num: Vec<f64> = TANH_NUM.iter().map(|&v| v as f64).collect();
        let den: Vec<f64> = TANH_DEN.iter().map(|&v| v as f64).collect();
        let r = f.div(f.mul(c, f.poly_inc(c2, &num)?)?, f.poly_inc(c2, &den)?)?;
        let r = f.sel(f.cmp(FloatPredicate::OLT, a, f.k(TANH_LINEAR_BELOW))?, x, r)?;
        f.sel(f.cmp(FloatPredicate::OGE, a, f.k(TANH_ONE_FROM))?, f.copysign(f.k(1.0), x)?, r)
    }
}
