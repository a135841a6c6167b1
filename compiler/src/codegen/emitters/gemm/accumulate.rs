//! Sums of products as dot and convolution compute them (XLA's semantics): each operand
//! element is first converted to the result element type, products are accumulated in the
//! type the result is computed in (f32 for f32 and narrower floats, f64, the complex parts'
//! type, the result's own integer width with wrap-around, logical or/and for pred), and the
//! sum is rounded to the result type once at the end.

use crate::codegen::context::Codegen;
use crate::codegen::elemental::Elemental;
use crate::error::{Error, Result};
use hlojit_runtime::ElementType;
use inkwell::types::BasicTypeEnum;
use crate::codegen::index::Index;
use crate::codegen::kernel::KernelContext;
use crate::codegen::loops::{emit_loop_nest, outer_dimension};
use crate::hlo::InstrId;
use inkwell::values::{BasicValueEnum, PointerValue};

/// How the products of one dot or convolution are summed.
#[derive(Clone, Copy, Debug)]
pub struct Accumulator {
    /// The result element type.
    pub out: ElementType,
    kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// f32 or f64 registers.
    Float,
    /// `{re, im}` with f32 or f64 parts.
    Complex,
    /// Integers of the result's width, wrapping.
    Int,
    /// pred: or of ands.
    Pred,
}

impl Accumulator {
    pub fn new(out: ElementType) -> Result<Accumulator> {
        let kind = if out.is_pred() {
            Kind::Pred
        } else if out.is_complex() {
            Kind::Complex
        } else if out.is_float() {
            Kind::Float
        } else if out.is_int() {
            Kind::Int
        } else {
            return Err(Error::Unsupported(format!("dot/convolution with result type {out}")));
        };
        Ok(Accumulator { out, kind })
    }

    /// The element type the sum is kept in (f32 for bf16, say); equal to `out` when no
    /// rounding happens at the end.
    pub fn compute_type(&self) -> ElementType {
        match self.kind {
            Kind::Float if self.out == ElementType::F64 => ElementType::F64,
            Kind::Float => ElementType::F32,
            _ => self.out,
        }
    }

    /// The register type of the running sum.
    pub fn llvm_type<'ctx>(&self, cg: &Codegen<'ctx>) -> BasicTypeEnum<'ctx> {
        cg.value_type(self.compute_type())
    }

    pub fn zero<'ctx>(&self, cg: &Codegen<'ctx>) -> Result<BasicValueEnum<'ctx>> {
        Ok(match self.kind {
            Kind::Float => cg.float_type(self.compute_type()).const_zero().into(),
            Kind::Complex => {
                let part = cg.float_type(self.out);
                cg.llvm.const_struct(&[part.const_zero().into(), part.const_zero().into()], false).into()
            }
            Kind::Int | Kind::Pred => cg.value_type(self.out).into_int_type().const_zero().into(),
        })
    }

    /// An operand element of type `from`, as a factor in the compute type.
    pub fn operand<'ctx>(&self, e: &Elemental<'_, 'ctx>, v: BasicValueEnum<'ctx>, from: ElementType) -> Result<BasicValueEnum<'ctx>> {
        let v = e.convert_value(v, from, self.out)?;
        match self.kind {
            Kind::Float => Ok(e.float_to_compute(v, self.out)?.into()),
            _ => Ok(v),
        }
    }

    /// Adds the product of two generated operand elements, `(instruction, index, element
    /// type)` each, to the running sum kept in `slot`.
    pub fn add_product<'ctx>(
        &self,
        e: &mut Elemental<'_, 'ctx>,
        slot: PointerValue<'ctx>,
        (lhs, lhs_index, lhs_type): (InstrId, Index<'ctx>, ElementType),
        (rhs, rhs_index, rhs_type): (InstrId, Index<'ctx>, ElementType),
    ) -> Result<()> {
        let cg = e.cg;
        let a = e.gen_scalar(lhs, &lhs_index)?;
        let b = e.gen_scalar(rhs, &rhs_index)?;
        let a = self.operand(e, a, lhs_type)?;
        let b = self.operand(e, b, rhs_type)?;
        let sum = cg.b.build_load(self.llvm_type(cg), slot, "")?;
        let sum = self.mul_add(cg, sum, a, b)?;
        cg.b.build_store(slot, sum)?;
        Ok(())
    }

    /// Adds `v x 0` for one generated operand element `v`: a zero of the padded input (or of a
    /// masked kernel) met by `v`. Only a non-finite `v` changes the sum (to NaN).
    pub fn add_times_zero<'ctx>(
        &self,
        e: &mut Elemental<'_, 'ctx>,
        slot: PointerValue<'ctx>,
        (id, index, ty): (InstrId, Index<'ctx>, ElementType),
    ) -> Result<()> {
        let cg = e.cg;
        let v = e.gen_scalar(id, &index)?;
        let v = self.operand(e, v, ty)?;
        let sum = cg.b.build_load(self.llvm_type(cg), slot, "")?;
        let sum = self.mul_add(cg, sum, v, self.zero(cg)?)?;
        cg.b.build_store(slot, sum)?;
        Ok(())
    }

    /// `acc + a * b` on compute-type values.
    pub fn mul_add<'ctx>(
        &self,
        cg: &Codegen<'ctx>,
        acc: BasicValueEnum<'ctx>,
        a: BasicValueEnum<'ctx>,
        b: BasicValueEnum<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        Ok(match self.kind {
            Kind::Float => {
                let ty = acc.get_type();
                cg.call_intrinsic("llvm.fmuladd", &[ty], &[a.into(), b.into(), acc.into()])?
            }
            Kind::Complex => {
                let (ar, ai) = cg.complex_parts(a)?;
                let (br, bi) = cg.complex_parts(b)?;
                let (cr, ci) = cg.complex_parts(acc)?;
                let rr = cg.b.build_float_mul(ar, br, "")?;
                let ii = cg.b.build_float_mul(ai, bi, "")?;
                let ri = cg.b.build_float_mul(ar, bi, "")?;
                let ir = cg.b.build_float_mul(ai, br, "")?;
                let re = cg.b.build_float_add(cr, cg.b.build_float_sub(rr, ii, "")?, "")?;
                let im = cg.b.build_float_add(ci, cg.b.build_float_add(ri, ir, "")?, "")?;
                cg.make_complex(self.out, re, im)?
            }
            Kind::Int => {
                let p = cg.b.build_int_mul(a.into_int_value(), b.into_int_value(), "")?;
                cg.b.build_int_add(acc.into_int_value(), p, "")?.into()
            }
            Kind::Pred => {
                let p = cg.b.build_and(a.into_int_value(), b.into_int_value(), "")?;
                cg.b.build_or(acc.into_int_value(), p, "")?.into()
            }
        })
    }

    /// The finished sum as a result element.
    pub fn finish<'ctx>(&self, e: &Elemental<'_, 'ctx>, acc: BasicValueEnum<'ctx>) -> Result<BasicValueEnum<'ctx>> {
        match self.kind {
            Kind::Float => e.compute_to_float(acc.into_float_value(), self.out),
            _ => Ok(acc),
        }
    }
}

/// Emits a loop nest over the kernel's single output, in its physical order with the
/// outermost dimension split into tasks, that computes each element as a sum of products:
/// `sum` gets the element's index and the slot of its running sum (zero at first), and adds
/// to it. Returns the parallel extent.
pub fn emit_sum_per_element<'a, 'ctx>(
    kc: &KernelContext<'a, 'ctx>,
    name: &str,
    sum: impl FnMut(&mut Elemental<'a, 'ctx>, &Accumulator, &Index<'ctx>, PointerValue<'ctx>) -> Result<()>,
) -> Result<i64> {
    emit_sum_per_element_finished(kc, name, sum, |_, _, v| Ok(v))
}

/// [`emit_sum_per_element`] with each finished sum passed through `finish` (a fused dot's
/// epilogue) before it is stored.
pub fn emit_sum_per_element_finished<'a, 'ctx>(
    kc: &KernelContext<'a, 'ctx>,
    name: &str,
    mut sum: impl FnMut(&mut Elemental<'a, 'ctx>, &Accumulator, &Index<'ctx>, PointerValue<'ctx>) -> Result<()>,
    mut finish: impl FnMut(&mut Elemental<'a, 'ctx>, &Index<'ctx>, BasicValueEnum<'ctx>) -> Result<BasicValueEnum<'ctx>>,
) -> Result<i64> {
    let cg = kc.cg;
    let out = &kc.outputs[0];
    let acc = Accumulator::new(out.element_type())?;
    let dims = out.shape.dims.clone();
    let layout = out.shape.layout_or_default();
    let extent = outer_dimension(&dims, &layout).map(|d| dims[d]).unwrap_or(1);
    let mut e = kc.elemental();
    let range = Some((kc.begin, kc.end)).filter(|_| !dims.is_empty());
    emit_loop_nest(cg, name, &dims, &layout, range, |index| {
        e.scoped(|e| {
            let slot = cg.entry_alloca(acc.llvm_type(cg), &format!("{name}.acc"))?;
            cg.b.build_store(slot, acc.zero(cg)?)?;
            sum(e, &acc, index, slot)?;
            let total = cg.b.build_load(acc.llvm_type(cg), slot, "")?;
            let value = acc.finish(e, total)?;
            out.store(cg, index, finish(e, index, value)?)
        })
    })?;
    Ok(extent.max(1))
}

/// The element type of a dot or convolution operand.
pub fn operand_type(kc: &KernelContext, id: InstrId) -> Result<ElementType> {
    let inst = kc.comp.get(id);
    inst.shape.element_type().ok_or_else(|| Error::Internal(format!("{}: dot/convolution operand is not an array", inst.name)))
}
