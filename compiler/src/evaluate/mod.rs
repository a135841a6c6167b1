//! Evaluation of instructions on constant literals, with the semantics of XLA's `HloEvaluator`.
//!
//! XLA folds instructions whose operands are constants with its evaluator (see
//! [`crate::passes::constant_folding`]), and the evaluator computes some operations with other
//! bits than XLA:CPU's generated code: it calls the C library where compiled code uses XLA's
//! own polynomial approximations (measured with jaxlib: `exp` of 4,000 f32 constants differs
//! from `exp` of the same values passed as a parameter in 396 elements, `tanh` in 2,358,
//! `log1p` in 696). A program that applies `log1p` to a constant gets the C library's value on
//! XLA, so hlojit folds the same instructions and computes them as the evaluator does:
//!
//! - f32 in f32 (`std::exp(float)` is the C library's `expf`); f16 and bf16 in f32, rounded to
//!   nearest even once at the end (NaN: the sign with the canonical quiet NaN, as Eigen does);
//!   f64 in f64; the f8 and f4 formats are not evaluated;
//! - signed integers in 64 bits and unsigned ones in unsigned 64 bits, wrapped to the element
//!   width: division by zero gives -1 (all ones unsigned), the remainder of a division by zero
//!   is the dividend, `MIN / -1` is `MIN`, a negative integer power is 0 unless the base is 1;
//! - `maximum`/`minimum` return the first NaN operand, else `std::max`/`std::min` (of two equal
//!   values, zeros of either sign included, the first operand);
//! - `cbrt` is not evaluated: Rust's standard library brings its own `cbrt`, not the C
//!   library's that XLA calls;
//! - complex numbers through exact operations (add, subtract, negate, real, imag, complex,
//!   compare, select, conversion from reals and data movement) and multiply, which the
//!   evaluator does with C++ complex multiplication (C99 Annex G recovery of infinities,
//!   reproduced in `elementwise.rs`); its complex divide (also Annex G, with scaling) is not
//!   reproduced.
//!
//! An instruction the evaluator here does not cover is left unevaluated (`None`): it then runs
//! as generated code, as everything did before folding existed.

mod elementwise;
mod reduce_precision;
mod shape_ops;

use crate::hlo::{Instruction, Opcode};
use half::{bf16, f16};
use hlojit_runtime::{ArrayLiteral, ElementType};
use num_complex::{Complex32, Complex64};

/// The value of `inst` applied to `operands` (one literal per operand, in order), or `None`
/// when this evaluator does not compute it exactly as XLA's does.
pub fn evaluate(inst: &Instruction, operands: &[&ArrayLiteral]) -> Option<ArrayLiteral> {
    let shape = inst.shape.as_array()?;
    if shape.dynamic.iter().any(|&d| d) {
        return None;
    }
    match inst.opcode {
        Opcode::Broadcast => shape_ops::broadcast(inst, operands[0]),
        Opcode::Reshape => shape_ops::reshape(inst, operands[0]),
        Opcode::Transpose => shape_ops::transpose(inst, operands[0]),
        Opcode::Slice => shape_ops::slice(inst, operands[0]),
        Opcode::Concatenate => shape_ops::concatenate(inst, operands),
        Opcode::Reverse => shape_ops::reverse(inst, operands[0]),
        Opcode::Pad => shape_ops::pad(inst, operands[0], operands[1]),
        Opcode::Iota => shape_ops::iota(inst),
        Opcode::Copy => Some(operands[0].clone()),
        _ => elementwise::evaluate(inst, operands),
    }
}

/// An array's elements in the type XLA's evaluator computes them in.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Elems {
    Pred(Vec<bool>),
    /// s2 to s64, sign-extended.
    Signed(Vec<i64>),
    /// u2 to u64.
    Unsigned(Vec<u64>),
    /// f16, bf16 and f32.
    F32(Vec<f32>),
    F64(Vec<f64>),
    C64(Vec<Complex32>),
    C128(Vec<Complex64>),
}

impl Elems {
    /// The elements of `lit` in their evaluation type; `None` for the f8/f4 formats.
    pub(crate) fn load(lit: &ArrayLiteral) -> Option<Elems> {
        let t = lit.element_type();
        let n = lit.element_count();
        Some(match t {
            ElementType::Pred => Elems::Pred((0..n).map(|i| lit.bits(i) != 0).collect()),
            _ if t.is_signed_int() => Elems::Signed((0..n).map(|i| lit.get_i64(i)).collect()),
            _ if t.is_unsigned_int() => Elems::Unsigned((0..n).map(|i| lit.get_i64(i) as u64).collect()),
            ElementType::F16 => Elems::F32((0..n).map(|i| f16::from_bits(lit.bits(i) as u16).to_f32()).collect()),
            ElementType::BF16 => Elems::F32((0..n).map(|i| bf16::from_bits(lit.bits(i) as u16).to_f32()).collect()),
            ElementType::F32 => Elems::F32((0..n).map(|i| f32::from_bits(lit.bits(i) as u32)).collect()),
            ElementType::F64 => Elems::F64((0..n).map(|i| f64::from_bits(lit.bits(i))).collect()),
            ElementType::C64 => Elems::C64((0..n).map(|i| {
                let c = lit.get_c128(i);
                Complex32::new(c.re as f32, c.im as f32)
            }).collect()),
            ElementType::C128 => Elems::C128((0..n).map(|i| lit.get_c128(i)).collect()),
            _ => return None,
        })
    }

    /// The evaluation type `t`'s elements are computed in.
    pub(crate) fn class_of(t: ElementType) -> Option<Class> {
        Some(match t {
            ElementType::Pred => Class::Pred,
            _ if t.is_signed_int() => Class::Signed,
            _ if t.is_unsigned_int() => Class::Unsigned,
            ElementType::F16 | ElementType::BF16 | ElementType::F32 => Class::F32,
            ElementType::F64 => Class::F64,
            ElementType::C64 => Class::C64,
            ElementType::C128 => Class::C128,
            _ => return None,
        })
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Elems::Pred(v) => v.len(),
            Elems::Signed(v) => v.len(),
            Elems::Unsigned(v) => v.len(),
            Elems::F32(v) => v.len(),
            Elems::F64(v) => v.len(),
            Elems::C64(v) => v.len(),
            Elems::C128(v) => v.len(),
        }
    }

    /// Stores the elements as an array of type `t` and dimensions `dims`: integers wrap to the
    /// width, f16 and bf16 round to nearest even; `None` when the class does not fit `t`.
    pub(crate) fn store(&self, t: ElementType, dims: &[i64]) -> Option<ArrayLiteral> {
        if Elems::class_of(t)? != self.class() {
            return None;
        }
        let mut lit = ArrayLiteral::try_zeros(t, dims).ok()?;
        if lit.element_count() != self.len() {
            return None;
        }
        match self {
            Elems::Pred(v) => v.iter().enumerate().for_each(|(i, &x)| lit.set_bits(i, x as u64)),
            Elems::Signed(v) => v.iter().enumerate().for_each(|(i, &x)| lit.set_i64(i, x)),
            Elems::Unsigned(v) => v.iter().enumerate().for_each(|(i, &x)| lit.set_i64(i, x as i64)),
            Elems::F32(v) => v.iter().enumerate().for_each(|(i, &x)| lit.set_bits(i, narrow_f32(x, t))),
            Elems::F64(v) => v.iter().enumerate().for_each(|(i, &x)| lit.set_bits(i, x.to_bits())),
            Elems::C64(v) => v.iter().enumerate().for_each(|(i, x)| lit.set_c128(i, Complex64::new(x.re as f64, x.im as f64))),
            Elems::C128(v) => v.iter().enumerate().for_each(|(i, &x)| lit.set_c128(i, x)),
        }
        Some(lit)
    }

    fn class(&self) -> Class {
        match self {
            Elems::Pred(_) => Class::Pred,
            Elems::Signed(_) => Class::Signed,
            Elems::Unsigned(_) => Class::Unsigned,
            Elems::F32(_) => Class::F32,
            Elems::F64(_) => Class::F64,
            Elems::C64(_) => Class::C64,
            Elems::C128(_) => Class::C128,
        }
    }
}

/// The kinds of [`Elems`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    Pred,
    Signed,
    Unsigned,
    F32,
    F64,
    C64,
    C128,
}

/// The bits of `x` as an element of `t` (f16, bf16 or f32): rounded to nearest even; a NaN
/// keeps its sign and becomes the canonical quiet NaN, as Eigen's conversions make it.
fn narrow_f32(x: f32, t: ElementType) -> u64 {
    let sign = x.is_sign_negative() as u16;
    match t {
        ElementType::F16 if x.is_nan() => ((sign << 15) | 0x7e00) as u64,
        ElementType::BF16 if x.is_nan() => ((sign << 15) | 0x7fc0) as u64,
        ElementType::F16 => f16::from_f32(x).to_bits() as u64,
        ElementType::BF16 => bf16::from_f32(x).to_bits() as u64,
        _ => x.to_bits() as u64,
    }
}

#[cfg(test)]
mod tests;
