//! Elementwise operations as XLA's evaluator computes them (see the module above for the
//! evaluation types and the rules that differ from generated code).

use super::{Class, Elems};
use crate::hlo::{ComparisonDirection, ComparisonType, Instruction, Opcode};
use hlojit_runtime::literal::{sign_extend, width_mask as mask};
use hlojit_runtime::{ArrayLiteral, ElementType};
use num_complex::{Complex32, Complex64};

pub(super) fn evaluate(inst: &Instruction, operands: &[&ArrayLiteral]) -> Option<ArrayLiteral> {
    let shape = inst.shape.as_array()?;
    let t = shape.element_type;
    if inst.opcode == Opcode::BitcastConvert {
        let from = operands[0];
        return (from.element_type().bit_width() == t.bit_width())
            .then(|| ArrayLiteral::from_bytes(t, &shape.dims, from.bytes()).ok())
            .flatten();
    }
    if inst.opcode == Opcode::ReducePrecision {
        return super::reduce_precision::evaluate(inst, operands.first()?);
    }
    let loaded: Vec<Elems> = operands.iter().map(|o| Elems::load(o)).collect::<Option<_>>()?;
    let width = operands.first().map(|o| o.element_type().bit_width()).unwrap_or(64);
    let result = match (inst.opcode, loaded.as_slice()) {
        (Opcode::Convert, [a]) => convert(a, t)?,
        (Opcode::Compare, [a, b]) => {
            let dir = inst.attrs.direction?;
            Elems::Pred(compare(a, b, dir, inst.attrs.comparison_type == Some(ComparisonType::TotalOrder))?)
        }
        (Opcode::Select, [Elems::Pred(p), a, b]) => select(p, a, b)?,
        (Opcode::Clamp, [lo, x, hi]) => clamp(lo, x, hi)?,
        (Opcode::Real, [Elems::C64(v)]) => Elems::F32(map1(v, |c| c.re)),
        (Opcode::Imag, [Elems::C64(v)]) => Elems::F32(map1(v, |c| c.im)),
        (Opcode::Real, [Elems::C128(v)]) => Elems::F64(map1(v, |c| c.re)),
        (Opcode::Imag, [Elems::C128(v)]) => Elems::F64(map1(v, |c| c.im)),
        (Opcode::Complex, [Elems::F32(re), Elems::F32(im)]) if t == ElementType::C64 => {
            Elems::C64(map2(re, im, Complex32::new)?)
        }
        (Opcode::Complex, [Elems::F64(re), Elems::F64(im)]) => Elems::C128(map2(re, im, Complex64::new)?),
        (op, [a]) => unary(op, a, width)?,
        (op, [a, b]) => binary(op, a, b, width)?,
        _ => return None,
    };
    result.store(t, &shape.dims)
}

fn unary(op: Opcode, a: &Elems, width: u32) -> Option<Elems> {
    Some(match a {
        Elems::Pred(v) if op == Opcode::Not => Elems::Pred(map1(v, |x| !x)),
        Elems::Signed(v) => Elems::Signed(match op {
            Opcode::Abs => map1(v, i64::wrapping_abs),
            Opcode::Negate => map1(v, i64::wrapping_neg),
            Opcode::Sign => map1(v, i64::signum),
            Opcode::Not => map1(v, |x| !x),
            Opcode::Popcnt => map1(v, |x| (x as u64 & mask(width)).count_ones() as i64),
            _ => return None,
        }),
        Elems::Unsigned(v) => Elems::Unsigned(match op {
            Opcode::Abs => v.clone(),
            Opcode::Negate => map1(v, u64::wrapping_neg),
            Opcode::Sign => map1(v, |x| (x != 0) as u64),
            Opcode::Not => map1(v, |x| !x),
            Opcode::Popcnt => map1(v, |x| (x & mask(width)).count_ones() as u64),
            _ => return None,
        }),
        Elems::F32(v) if op == Opcode::IsFinite => Elems::Pred(map1(v, |x| x.is_finite())),
        Elems::F64(v) if op == Opcode::IsFinite => Elems::Pred(map1(v, |x| x.is_finite())),
        Elems::F32(v) => Elems::F32(unary_float(op, v)?),
        Elems::F64(v) => Elems::F64(unary_float(op, v)?),
        Elems::C64(v) if op == Opcode::Negate => Elems::C64(map1(v, |x| -x)),
        Elems::C128(v) if op == Opcode::Negate => Elems::C128(map1(v, |x| -x)),
        _ => return None,
    })
}

fn binary(op: Opcode, a: &Elems, b: &Elems, width: u32) -> Option<Elems> {
    Some(match (a, b) {
        (Elems::Pred(x), Elems::Pred(y)) => Elems::Pred(match op {
            Opcode::And | Opcode::Minimum => map2(x, y, |p, q| p & q)?,
            Opcode::Or | Opcode::Maximum => map2(x, y, |p, q| p | q)?,
            Opcode::Xor => map2(x, y, |p, q| p ^ q)?,
            _ => return None,
        }),
        (Elems::Signed(x), Elems::Signed(y)) => Elems::Signed(map2(x, y, signed_op(op, width)?)?),
        (Elems::Unsigned(x), Elems::Unsigned(y)) => Elems::Unsigned(map2(x, y, unsigned_op(op, width)?)?),
        (Elems::F32(x), Elems::F32(y)) => Elems::F32(map2(x, y, float_op(op)?)?),
        (Elems::F64(x), Elems::F64(y)) => Elems::F64(map2(x, y, float_op(op)?)?),
        (Elems::C64(x), Elems::C64(y)) => Elems::C64(match op {
            Opcode::Add => map2(x, y, |p, q| p + q)?,
            Opcode::Subtract => map2(x, y, |p, q| p - q)?,
            Opcode::Multiply => map2(x, y, |p, q| {
                let (re, im) = annex_g_multiply_f32(p.re, p.im, q.re, q.im);
                Complex32::new(re, im)
            })?,
            _ => return None,
        }),
        (Elems::C128(x), Elems::C128(y)) => Elems::C128(match op {
            Opcode::Add => map2(x, y, |p, q| p + q)?,
            Opcode::Subtract => map2(x, y, |p, q| p - q)?,
            Opcode::Multiply => map2(x, y, |p, q| {
                let (re, im) = annex_g_multiply_f64(p.re, p.im, q.re, q.im);
                Complex64::new(re, im)
            })?,
            _ => return None,
        }),
        _ => return None,
    })
}

/// The C library's functions the evaluator calls that Rust's standard library lacks.
mod libm {
    extern "C" {
        pub fn erff(x: f32) -> f32;
        pub fn erf(x: f64) -> f64;
    }
}

/// f32 and f64 as the evaluator computes them: through the C library's `float` and `double`
/// functions (Rust's float methods call the same ones).
trait Float: Copy + PartialOrd + std::ops::Neg<Output = Self> + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self> + std::ops::Mul<Output = Self> + std::ops::Div<Output = Self>
    + std::ops::Rem<Output = Self>
{
    const ZERO: Self;
    const ONE: Self;
    fn is_nan(self) -> bool;
    fn unary(op: Opcode, x: Self) -> Option<Self>;
    fn pow(self, y: Self) -> Self;
    fn atan2(self, x: Self) -> Self;
    fn copysign(self, sign: Self) -> Self;
}

macro_rules! float_impl {
    ($t:ty, $erf:ident, $log:path) => {
        impl Float for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn unary(op: Opcode, x: Self) -> Option<Self> {
                Some(match op {
                    Opcode::Abs => x.abs(),
                    Opcode::Negate => -x,
                    Opcode::Exp => x.exp(),
                    Opcode::Expm1 => x.exp_m1(),
                    Opcode::Log => $log(x),
                    Opcode::Log1p => x.ln_1p(),
                    Opcode::Logistic => 1.0 / (1.0 + (-x).exp()),
                    Opcode::Sqrt => x.sqrt(),
                    Opcode::Rsqrt => 1.0 / x.sqrt(),
                    Opcode::Sine => x.sin(),
                    Opcode::Cosine => x.cos(),
                    Opcode::Tan => x.tan(),
                    Opcode::Tanh => x.tanh(),
                    // SAFETY: a pure C library function of one number.
                    Opcode::Erf => unsafe { libm::$erf(x) },
                    Opcode::Floor => x.floor(),
                    Opcode::Ceil => x.ceil(),
                    Opcode::RoundNearestAfz => x.round(),
                    Opcode::RoundNearestEven => x.round_ties_even(),
                    _ => return None,
                })
            }
            fn pow(self, y: Self) -> Self {
                self.powf(y)
            }
            fn atan2(self, x: Self) -> Self {
                <$t>::atan2(self, x)
            }
            fn copysign(self, sign: Self) -> Self {
                <$t>::copysign(self, sign)
            }
        }
    };
}
float_impl!(f32, erff, f32::ln);
float_impl!(f64, erf, jaxlib_log);

/// f64 log as XLA's evaluator computes it in jaxlib, under the flush-to-zero mode the constant
/// folders run in. jaxlib (a manylinux wheel) binds glibc's `log@GLIBC_2.2.5` (`nm -D
/// --with-symbol-versions libjax_common.so`), the implementation glibc keeps for old binaries;
/// Rust's `f64::ln` binds the one from glibc 2.29 on. With denormals-are-zero the old one sees a
/// subnormal argument of either sign as zero and returns -inf, the new one rescales its bits and
/// returns -745.13 (positive) or NaN (negative) (measured by calling both versions through
/// `dlvsym` with MXCSR's FTZ/DAZ set). Elsewhere the two agree: 0 of 3,000,000 random arguments
/// differ, nor do the two versions of `exp` and `pow`, with or without the flush.
fn jaxlib_log(x: f64) -> f64 {
    if x != 0.0 && x.abs() < f64::MIN_POSITIVE {
        f64::NEG_INFINITY
    } else {
        x.ln()
    }
}

fn unary_float<F: Float>(op: Opcode, v: &[F]) -> Option<Vec<F>> {
    if op == Opcode::Sign {
        return Some(map1(v, |x| if x.is_nan() { x } else { (if x != F::ZERO { F::ONE } else { F::ZERO }).copysign(x) }));
    }
    F::unary(op, F::ZERO)?;
    Some(map1(v, |x| F::unary(op, x).expect("checked above")))
}

fn float_op<F: Float>(op: Opcode) -> Option<fn(F, F) -> F> {
    Some(match op {
        // The host's arithmetic, as XLA's evaluator: on x86 an invalid operation (inf - inf,
        // 0 / 0) gives the negative quiet NaN (measured through jaxlib on constants a call's
        // inlining makes; constants of the module as written are folded before, by
        // `passes::stablehlo_folding`, which gives the positive one).
        Opcode::Add => |x, y| x + y,
        Opcode::Subtract => |x, y| x - y,
        Opcode::Multiply => |x, y| x * y,
        Opcode::Divide => |x, y| x / y,
        // Rust's float `%` is C's fmod.
        Opcode::Remainder => |x, y| x % y,
        Opcode::Maximum => |x, y| first_nan(x, y).unwrap_or(if x < y { y } else { x }),
        Opcode::Minimum => |x, y| first_nan(x, y).unwrap_or(if y < x { y } else { x }),
        Opcode::Power => |x, y| if x == F::ONE || y == F::ZERO { F::ONE } else { x.pow(y) },
        Opcode::Atan2 => |x, y| x.atan2(y),
        _ => return None,
    })
}

fn first_nan<F: Float>(x: F, y: F) -> Option<F> {
    if x.is_nan() {
        Some(x)
    } else if y.is_nan() {
        Some(y)
    } else {
        None
    }
}

/// Whether shifting a `width`-bit integer by `amount` (an element of the same type) moves
/// every bit out: the amount read as unsigned of that width is at least the width.
fn shift_out_of_bounds(amount: u64, width: u32) -> bool {
    amount & mask(width) >= width as u64
}

/// `base ** exponent` by squaring in wrapping unsigned 64-bit arithmetic, as XLA's `IPow`.
fn ipow(mut base: u64, mut exponent: u64) -> u64 {
    let mut result = 1u64;
    while exponent > 0 {
        if exponent & 1 == 1 {
            result = result.wrapping_mul(base);
        }
        exponent >>= 1;
        base = base.wrapping_mul(base);
    }
    result
}

fn signed_op(op: Opcode, width: u32) -> Option<Box<dyn Fn(i64, i64) -> i64>> {
    Some(match op {
        Opcode::Add => Box::new(i64::wrapping_add),
        Opcode::Subtract => Box::new(i64::wrapping_sub),
        Opcode::Multiply => Box::new(i64::wrapping_mul),
        Opcode::Divide => Box::new(|x, y| if y == 0 { -1 } else { x.wrapping_div(y) }),
        Opcode::Remainder => Box::new(|x, y| if y == 0 { x } else { x.wrapping_rem(y) }),
        Opcode::Maximum => Box::new(|x: i64, y| x.max(y)),
        Opcode::Minimum => Box::new(|x: i64, y| x.min(y)),
        Opcode::Power => Box::new(|x, y| match () {
            _ if x == 1 || y == 0 => 1,
            _ if y < 0 => 0,
            _ => ipow(x as u64, y as u64) as i64,
        }),
        Opcode::And => Box::new(|x, y| x & y),
        Opcode::Or => Box::new(|x, y| x | y),
        Opcode::Xor => Box::new(|x, y| x ^ y),
        Opcode::ShiftLeft => Box::new(move |x, y| if shift_out_of_bounds(y as u64, width) { 0 } else { x << y }),
        Opcode::ShiftRightArithmetic => Box::new(move |x, y| {
            let x = sign_extend(x as u64, width);
            if shift_out_of_bounds(y as u64, width) { if x < 0 { -1 } else { 0 } } else { x >> y }
        }),
        Opcode::ShiftRightLogical => Box::new(move |x, y| {
            if shift_out_of_bounds(y as u64, width) { 0 } else { ((x as u64 & mask(width)) >> y) as i64 }
        }),
        _ => return None,
    })
}

fn unsigned_op(op: Opcode, width: u32) -> Option<Box<dyn Fn(u64, u64) -> u64>> {
    Some(match op {
        Opcode::Add => Box::new(u64::wrapping_add),
        Opcode::Subtract => Box::new(u64::wrapping_sub),
        Opcode::Multiply => Box::new(u64::wrapping_mul),
        Opcode::Divide => Box::new(|x, y| if y == 0 { u64::MAX } else { x / y }),
        Opcode::Remainder => Box::new(|x, y| if y == 0 { x } else { x % y }),
        Opcode::Maximum => Box::new(|x: u64, y| x.max(y)),
        Opcode::Minimum => Box::new(|x: u64, y| x.min(y)),
        Opcode::Power => Box::new(|x, y| if x == 1 || y == 0 { 1 } else { ipow(x, y) }),
        Opcode::And => Box::new(|x, y| x & y),
        Opcode::Or => Box::new(|x, y| x | y),
        Opcode::Xor => Box::new(|x, y| x ^ y),
        Opcode::ShiftLeft => Box::new(move |x, y| if shift_out_of_bounds(y, width) { 0 } else { x << y }),
        Opcode::ShiftRightArithmetic => Box::new(move |x, y| {
            let x = sign_extend(x, width);
            (if shift_out_of_bounds(y, width) { if x < 0 { -1 } else { 0 } } else { x >> y }) as u64
        }),
        Opcode::ShiftRightLogical => Box::new(move |x, y| if shift_out_of_bounds(y, width) { 0 } else { (x & mask(width)) >> y }),
        _ => return None,
    })
}

fn compare(a: &Elems, b: &Elems, dir: ComparisonDirection, total_order: bool) -> Option<Vec<bool>> {
    use std::cmp::Ordering;
    let test = |o: Option<Ordering>| match (dir, o) {
        (ComparisonDirection::Ne, None) => true,
        (_, None) => false,
        (ComparisonDirection::Eq, Some(o)) => o == Ordering::Equal,
        (ComparisonDirection::Ne, Some(o)) => o != Ordering::Equal,
        (ComparisonDirection::Lt, Some(o)) => o == Ordering::Less,
        (ComparisonDirection::Le, Some(o)) => o != Ordering::Greater,
        (ComparisonDirection::Gt, Some(o)) => o == Ordering::Greater,
        (ComparisonDirection::Ge, Some(o)) => o != Ordering::Less,
    };
    match (a, b) {
        (Elems::Pred(x), Elems::Pred(y)) => map2(x, y, |p, q| test(p.partial_cmp(&q))),
        (Elems::Signed(x), Elems::Signed(y)) => map2(x, y, |p, q| test(p.partial_cmp(&q))),
        (Elems::Unsigned(x), Elems::Unsigned(y)) => map2(x, y, |p, q| test(p.partial_cmp(&q))),
        (Elems::F32(x), Elems::F32(y)) if total_order => map2(x, y, |p, q| test(Some(p.total_cmp(&q)))),
        (Elems::F64(x), Elems::F64(y)) if total_order => map2(x, y, |p, q| test(Some(p.total_cmp(&q)))),
        (Elems::F32(x), Elems::F32(y)) => map2(x, y, |p, q| test(p.partial_cmp(&q))),
        (Elems::F64(x), Elems::F64(y)) => map2(x, y, |p, q| test(p.partial_cmp(&q))),
        (Elems::C64(x), Elems::C64(y)) => complex_equality(dir, x, y),
        (Elems::C128(x), Elems::C128(y)) => complex_equality(dir, x, y),
        _ => None,
    }
}

fn complex_equality<T: Copy + PartialEq>(dir: ComparisonDirection, x: &[T], y: &[T]) -> Option<Vec<bool>> {
    match dir {
        ComparisonDirection::Eq => map2(x, y, |p, q| p == q),
        ComparisonDirection::Ne => map2(x, y, |p, q| p != q),
        _ => None,
    }
}

fn select(p: &[bool], a: &Elems, b: &Elems) -> Option<Elems> {
    fn pick<T: Copy>(p: &[bool], x: &[T], y: &[T]) -> Option<Vec<T>> {
        let n = x.len().max(y.len());
        (same_or_scalar(p.len(), n) && same_or_scalar(x.len(), n) && same_or_scalar(y.len(), n))
            .then(|| (0..n).map(|i| if at(p, i) { at(x, i) } else { at(y, i) }).collect())
    }
    Some(match (a, b) {
        (Elems::Pred(x), Elems::Pred(y)) => Elems::Pred(pick(p, x, y)?),
        (Elems::Signed(x), Elems::Signed(y)) => Elems::Signed(pick(p, x, y)?),
        (Elems::Unsigned(x), Elems::Unsigned(y)) => Elems::Unsigned(pick(p, x, y)?),
        (Elems::F32(x), Elems::F32(y)) => Elems::F32(pick(p, x, y)?),
        (Elems::F64(x), Elems::F64(y)) => Elems::F64(pick(p, x, y)?),
        (Elems::C64(x), Elems::C64(y)) => Elems::C64(pick(p, x, y)?),
        (Elems::C128(x), Elems::C128(y)) => Elems::C128(pick(p, x, y)?),
        _ => return None,
    })
}

/// `clamp(lo, x, hi)`: a NaN bound or operand (in that order) is the result, else
/// `std::min(hi, std::max(x, lo))`; `lo` and `hi` may be scalars.
fn clamp(lo: &Elems, x: &Elems, hi: &Elems) -> Option<Elems> {
    fn each<T: Copy + PartialOrd>(lo: &[T], x: &[T], hi: &[T], nan: impl Fn(T) -> bool) -> Option<Vec<T>> {
        let n = x.len();
        (same_or_scalar(lo.len(), n) && same_or_scalar(hi.len(), n)).then(|| {
            (0..n)
                .map(|i| {
                    let (l, v, h) = (at(lo, i), x[i], at(hi, i));
                    if nan(l) {
                        l
                    } else if nan(v) {
                        v
                    } else if nan(h) {
                        h
                    } else {
                        let m = if v < l { l } else { v };
                        if m < h { m } else { h }
                    }
                })
                .collect()
        })
    }
    Some(match (lo, x, hi) {
        (Elems::Signed(l), Elems::Signed(v), Elems::Signed(h)) => Elems::Signed(each(l, v, h, |_| false)?),
        (Elems::Unsigned(l), Elems::Unsigned(v), Elems::Unsigned(h)) => Elems::Unsigned(each(l, v, h, |_| false)?),
        (Elems::F32(l), Elems::F32(v), Elems::F32(h)) => Elems::F32(each(l, v, h, f32::is_nan)?),
        (Elems::F64(l), Elems::F64(v), Elems::F64(h)) => Elems::F64(each(l, v, h, f64::is_nan)?),
        _ => return None,
    })
}

/// XLA's literal conversion: integers wrap, floats to integers truncate toward zero with NaN
/// to 0 and saturation, anything to f16/bf16 goes through f32 (as Eigen converts), to pred
/// is `!= 0`. Conversions to or from complex numbers are not evaluated.
fn convert(a: &Elems, to: ElementType) -> Option<Elems> {
    let class = Elems::class_of(to)?;
    let width = to.bit_width();
    let (lo, hi) = match class {
        Class::Signed => (-(1i128 << (width - 1)), (1i128 << (width - 1)) - 1),
        _ => (0, mask(width) as i128),
    };
    // Rust's float-to-integer `as` truncates toward zero, saturates and maps NaN to 0.
    let saturate = |x: f64| (x as i128).clamp(lo, hi);
    let ints: Option<Vec<i128>> = match a {
        Elems::Pred(v) => Some(map1(v, |x| x as i128)),
        Elems::Signed(v) => Some(map1(v, |x| x as i128)),
        Elems::Unsigned(v) => Some(map1(v, |x| x as i128)),
        _ => None,
    };
    Some(match (class, a) {
        // Real floats to complex: (x, 0), as XLA folds them (the product of fuzz program
        // 10000109 needs its converted factor folded).
        (Class::C64, Elems::F32(v)) => Elems::C64(map1(v, |x| Complex32::new(x, 0.0))),
        (Class::C64, Elems::F64(v)) => Elems::C64(map1(v, |x| Complex32::new(x as f32, 0.0))),
        (Class::C128, Elems::F32(v)) => Elems::C128(map1(v, |x| Complex64::new(x as f64, 0.0))),
        (Class::C128, Elems::F64(v)) => Elems::C128(map1(v, |x| Complex64::new(x, 0.0))),
        (Class::C64 | Class::C128, _) | (_, Elems::C64(_) | Elems::C128(_)) => return None,
        (Class::Pred, Elems::F32(v)) => Elems::Pred(map1(v, |x| x != 0.0)),
        (Class::Pred, Elems::F64(v)) => Elems::Pred(map1(v, |x| x != 0.0)),
        (Class::Pred, _) => Elems::Pred(map1(&ints?, |x| x != 0)),
        (Class::Signed, Elems::F32(v)) => Elems::Signed(map1(v, |x| saturate(x as f64) as i64)),
        (Class::Signed, Elems::F64(v)) => Elems::Signed(map1(v, |x| saturate(x) as i64)),
        (Class::Signed, _) => Elems::Signed(map1(&ints?, |x| x as i64)),
        (Class::Unsigned, Elems::F32(v)) => Elems::Unsigned(map1(v, |x| saturate(x as f64) as u64)),
        (Class::Unsigned, Elems::F64(v)) => Elems::Unsigned(map1(v, |x| saturate(x) as u64)),
        (Class::Unsigned, _) => Elems::Unsigned(map1(&ints?, |x| x as u64)),
        (Class::F32, Elems::F32(v)) => Elems::F32(v.clone()),
        (Class::F32, Elems::F64(v)) => Elems::F32(map1(v, |x| x as f32)),
        (Class::F32, Elems::Unsigned(v)) => Elems::F32(map1(v, |x| x as f32)),
        (Class::F32, _) => Elems::F32(map1(&ints?, |x| x as i64 as f32)),
        (Class::F64, Elems::F32(v)) => Elems::F64(map1(v, |x| x as f64)),
        (Class::F64, Elems::F64(v)) => Elems::F64(v.clone()),
        (Class::F64, Elems::Unsigned(v)) => Elems::F64(map1(v, |x| x as f64)),
        (Class::F64, _) => Elems::F64(map1(&ints?, |x| x as i64 as f64)),
    })
}

fn same_or_scalar(len: usize, n: usize) -> bool {
    len == n || len == 1
}

/// Element `i`, or the only element of a scalar.
fn at<T: Copy>(v: &[T], i: usize) -> T {
    if v.len() == 1 {
        v[0]
    } else {
        v[i]
    }
}

fn map1<T: Copy, U>(v: &[T], f: impl Fn(T) -> U) -> Vec<U> {
    v.iter().map(|&x| f(x)).collect()
}

fn map2<T: Copy, U>(x: &[T], y: &[T], f: impl Fn(T, T) -> U) -> Option<Vec<U>> {
    (x.len() == y.len()).then(|| x.iter().zip(y).map(|(&p, &q)| f(p, q)).collect())
}

/// A complex product as XLA's constant folder computes it: C++ complex multiplication, which
/// follows C99 Annex G (compiler-rt's `__mulsc3` / `__muldc3`): when both naive parts are NaN,
/// an infinite operand's parts become +-1 (infinite) or +-0 (finite), NaN parts of the other
/// operand +-0, and the naive formula is redone times infinity; likewise when a partial
/// product overflowed. So (-inf, -inf) * (5, 0) is (-inf, -inf), not (NaN, NaN) as at run
/// time (measured through jaxlib: file test `elementwise/fold_complex_multiply.hlo`).
macro_rules! annex_g_multiply {
    ($name:ident, $f:ty) => {
        fn $name(a: $f, b: $f, c: $f, d: $f) -> ($f, $f) {
            let (ac, bd, ad, bc) = (a * c, b * d, a * d, b * c);
            let (x, y) = (ac - bd, ad + bc);
            if !(x.is_nan() && y.is_nan()) {
                return (x, y);
            }
            let (mut a, mut b, mut c, mut d) = (a, b, c, d);
            let box_inf = |v: $f| (if v.is_infinite() { 1.0 as $f } else { 0.0 }).copysign(v);
            let zero_nan = |v: $f| if v.is_nan() { (0.0 as $f).copysign(v) } else { v };
            let mut recalc = false;
            if a.is_infinite() || b.is_infinite() {
                (a, b) = (box_inf(a), box_inf(b));
                (c, d) = (zero_nan(c), zero_nan(d));
                recalc = true;
            }
            if c.is_infinite() || d.is_infinite() {
                (c, d) = (box_inf(c), box_inf(d));
                (a, b) = (zero_nan(a), zero_nan(b));
                recalc = true;
            }
            if !recalc && (ac.is_infinite() || bd.is_infinite() || ad.is_infinite() || bc.is_infinite()) {
                (a, b, c, d) = (zero_nan(a), zero_nan(b), zero_nan(c), zero_nan(d));
                recalc = true;
            }
            if recalc {
                (<$f>::INFINITY * (a * c - b * d), <$f>::INFINITY * (a * d + b * c))
            } else {
                (x, y)
            }
        }
    };
}
annex_g_multiply!(annex_g_multiply_f32, f32);
annex_g_multiply!(annex_g_multiply_f64, f64);
