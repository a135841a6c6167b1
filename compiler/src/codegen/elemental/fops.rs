//! A small builder for float formulas (complex functions, polynomial approximations): one
//! method per operation on values of a single float type, so that code reads like the math.

use super::Elemental;
use crate::codegen::context::Codegen;
use crate::error::Result;
use inkwell::types::{FloatType, IntType};
use inkwell::values::{FloatValue, IntValue};
use inkwell::{FloatPredicate, IntPredicate};

/// Float arithmetic on one component type, written the way the formulas read.
pub(super) struct F<'a, 'ctx> {
    pub cg: &'a Codegen<'ctx>,
    pub ft: FloatType<'ctx>,
}

pub(super) type FV<'ctx> = FloatValue<'ctx>;
pub(super) type B<'ctx> = IntValue<'ctx>;

impl<'a, 'ctx> F<'a, 'ctx> {
    pub fn k(&self, v: f64) -> FV<'ctx> {
        self.ft.const_float(v)
    }
    pub fn add(&self, a: FV<'ctx>, b: FV<'ctx>) -> Result<FV<'ctx>> {
        Ok(self.cg.b.build_float_add(a, b, "")?)
    }
    pub fn sub(&self, a: FV<'ctx>, b: FV<'ctx>) -> Result<FV<'ctx>> {
        Ok(self.cg.b.build_float_sub(a, b, "")?)
    }
    pub fn mul(&self, a: FV<'ctx>, b: FV<'ctx>) -> Result<FV<'ctx>> {
        Ok(self.cg.b.build_float_mul(a, b, "")?)
    }
    pub fn div(&self, a: FV<'ctx>, b: FV<'ctx>) -> Result<FV<'ctx>> {
        Ok(self.cg.b.build_float_div(a, b, "")?)
    }
    pub fn neg(&self, a: FV<'ctx>) -> Result<FV<'ctx>> {
        Ok(self.cg.b.build_float_neg(a, "")?)
    }
    pub fn intr1(&self, name: &str, a: FV<'ctx>) -> Result<FV<'ctx>> {
        Ok(self
            .cg
            .call_intrinsic(name, &[self.ft.into()], &[a.into()])?
            .into_float_value())
    }
    pub fn intr2(&self, name: &str, a: FV<'ctx>, b: FV<'ctx>) -> Result<FV<'ctx>> {
        Ok(self
            .cg
            .call_intrinsic(name, &[self.ft.into()], &[a.into(), b.into()])?
            .into_float_value())
    }
    pub fn abs(&self, a: FV<'ctx>) -> Result<FV<'ctx>> {
        self.intr1("llvm.fabs", a)
    }
    pub fn sqrt(&self, a: FV<'ctx>) -> Result<FV<'ctx>> {
        self.intr1("llvm.sqrt", a)
    }
    pub fn copysign(&self, magnitude: FV<'ctx>, sign: FV<'ctx>) -> Result<FV<'ctx>> {
        self.intr2("llvm.copysign", magnitude, sign)
    }
    /// NaN-propagating maximum / minimum: XLA's `llvm.maximum`/`llvm.minimum` as its x86
    /// back end lowers them (minmax.rs), so that NaN bits agree in formulas built on them.
    pub fn max(&self, a: FV<'ctx>, b: FV<'ctx>) -> Result<FV<'ctx>> {
        super::minmax::x86_rule(self.cg, true, a, b)
    }
    pub fn min(&self, a: FV<'ctx>, b: FV<'ctx>) -> Result<FV<'ctx>> {
        super::minmax::x86_rule(self.cg, false, a, b)
    }
    pub fn cmp(&self, p: FloatPredicate, a: FV<'ctx>, b: FV<'ctx>) -> Result<B<'ctx>> {
        Ok(self.cg.b.build_float_compare(p, a, b, "")?)
    }
    pub fn oeq(&self, a: FV<'ctx>, b: FV<'ctx>) -> Result<B<'ctx>> {
        self.cmp(FloatPredicate::OEQ, a, b)
    }
    pub fn one(&self, a: FV<'ctx>, b: FV<'ctx>) -> Result<B<'ctx>> {
        self.cmp(FloatPredicate::ONE, a, b)
    }
    pub fn is_nan(&self, a: FV<'ctx>) -> Result<B<'ctx>> {
        self.cmp(FloatPredicate::UNO, a, a)
    }
    pub fn and(&self, a: B<'ctx>, b: B<'ctx>) -> Result<B<'ctx>> {
        Ok(self.cg.b.build_and(a, b, "")?)
    }
    pub fn or(&self, a: B<'ctx>, b: B<'ctx>) -> Result<B<'ctx>> {
        Ok(self.cg.b.build_or(a, b, "")?)
    }
    pub fn not(&self, a: B<'ctx>) -> Result<B<'ctx>> {
        Ok(self.cg.b.build_not(a, "")?)
    }
    pub fn sel(&self, c: B<'ctx>, a: FV<'ctx>, b: FV<'ctx>) -> Result<FV<'ctx>> {
        Ok(self.cg.b.build_select(c, a, b, "")?.into_float_value())
    }
    /// Selects between two complex values given as parts.
    pub fn sel2(&self, c: B<'ctx>, a: (FV<'ctx>, FV<'ctx>), b: (FV<'ctx>, FV<'ctx>)) -> Result<(FV<'ctx>, FV<'ctx>)> {
        Ok((self.sel(c, a.0, b.0)?, self.sel(c, a.1, b.1)?))
    }
    pub fn inf(&self) -> FV<'ctx> {
        self.k(f64::INFINITY)
    }
    pub fn nan(&self) -> FV<'ctx> {
        self.k(f64::NAN)
    }
    /// Horner evaluation of `coeffs[0] * x^(n-1) + ... + coeffs[n-1]`.
    pub fn poly(&self, x: FV<'ctx>, coeffs: &[f64]) -> Result<FV<'ctx>> {
        let mut acc = self.k(coeffs[0]);
        for &c in &coeffs[1..] {
            acc = self.add(self.mul(acc, x)?, self.k(c))?;
        }
        Ok(acc)
    }
}

impl<'a, 'ctx> F<'a, 'ctx> {
    /// a * b + c, fused where the target has FMA.
    pub fn fma(&self, a: FV<'ctx>, b: FV<'ctx>, c: FV<'ctx>) -> Result<FV<'ctx>> {
        Ok(self
            .cg
            .call_intrinsic("llvm.fmuladd", &[self.ft.into()], &[a.into(), b.into(), c.into()])?
            .into_float_value())
    }
    /// Horner evaluation with fused steps: `coeffs[0] + coeffs[1] x + ... ` (increasing powers).
    pub fn poly_inc(&self, x: FV<'ctx>, coeffs: &[f64]) -> Result<FV<'ctx>> {
        let mut acc = self.k(coeffs[coeffs.len() - 1]);
        for &c in coeffs[..coeffs.len() - 1].iter().rev() {
            acc = self.fma(acc, x, self.k(c))?;
        }
        Ok(acc)
    }
    /// The integer type as wide as the float type.
    pub fn it(&self) -> IntType<'ctx> {
        self.cg.int_type(self.ft.get_bit_width())
    }
    pub fn ki(&self, v: i64) -> IntValue<'ctx> {
        self.it().const_int(v as u64, true)
    }
    pub fn to_bits(&self, v: FV<'ctx>) -> Result<IntValue<'ctx>> {
        Ok(self.cg.b.build_bit_cast(v, self.it(), "")?.into_int_value())
    }
    pub fn float_from_bits(&self, v: IntValue<'ctx>) -> Result<FV<'ctx>> {
        Ok(self.cg.b.build_bit_cast(v, self.ft, "")?.into_float_value())
    }
    pub fn icmp(&self, p: IntPredicate, a: IntValue<'ctx>, b: IntValue<'ctx>) -> Result<B<'ctx>> {
        Ok(self.cg.b.build_int_compare(p, a, b, "")?)
    }
}

impl<'a, 'ctx> Elemental<'a, 'ctx> {
    pub(super) fn f(&self, ft: FloatType<'ctx>) -> F<'a, 'ctx> {
        F { cg: self.cg, ft }
    }
}
