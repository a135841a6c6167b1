//! How element types live in registers and in memory, and moving them between the two.
//!
//! In registers: pred is `i1`, integers are `iN` of their exact width (so s4 arithmetic wraps
//! at 4 bits), f16/bf16/f32/f64 are LLVM's `half`/`bfloat`/`float`/`double`, the f8/f4 formats
//! are their raw bits in an `i8` (they are computed through f32), complex numbers are
//! `{re, im}` structs. In memory every element takes `byte_size` bytes: pred, sub-byte integers
//! and small floats one byte each.

use super::context::Codegen;
use crate::error::{Error, Result};
use hlojit_runtime::ElementType;
use inkwell::types::BasicTypeEnum;
use inkwell::values::{BasicValueEnum, FloatValue, IntValue, PointerValue, StructValue};
use inkwell::IntPredicate;

impl<'ctx> Codegen<'ctx> {
    /// The register type of one element.
    pub fn value_type(&self, t: ElementType) -> BasicTypeEnum<'ctx> {
        use ElementType::*;
        let l = self.llvm;
        match t {
            Pred => l.bool_type().into(),
            F16 => l.f16_type().into(),
            BF16 => l.bf16_type().into(),
            F32 => l.f32_type().into(),
            F64 => l.f64_type().into(),
            C64 => l.struct_type(&[l.f32_type().into(), l.f32_type().into()], false).into(),
            C128 => l.struct_type(&[l.f64_type().into(), l.f64_type().into()], false).into(),
            _ if t.is_small_float() => l.i8_type().into(),
            _ => self.int_type(t.bit_width()).into(),
        }
    }

    /// The memory type of one element.
    pub fn memory_type(&self, t: ElementType) -> BasicTypeEnum<'ctx> {
        if t.is_pred() || t.bit_width() < 8 {
            self.i8().into()
        } else {
            self.value_type(t)
        }
    }

    /// The LLVM float type of a native float element type (f16, bf16, f32, f64) or a complex
    /// type's component.
    pub fn float_type(&self, t: ElementType) -> inkwell::types::FloatType<'ctx> {
        use ElementType::*;
        match t {
            F16 => self.llvm.f16_type(),
            BF16 => self.llvm.bf16_type(),
            F64 | C128 => self.llvm.f64_type(),
            _ => self.llvm.f32_type(),
        }
    }

    /// Loads the element at `ptr` into its register form.
    pub fn load_element(&self, t: ElementType, ptr: PointerValue<'ctx>) -> Result<BasicValueEnum<'ctx>> {
        let raw = self.b.build_load(self.memory_type(t), ptr, "")?;
        if t.is_pred() {
            let ne = self.b.build_int_compare(IntPredicate::NE, raw.into_int_value(), self.i8().const_zero(), "")?;
            return Ok(ne.into());
        }
        if t.is_int() && t.bit_width() < 8 {
            let narrow = self.int_type(t.bit_width());
            return Ok(self.b.build_int_truncate(raw.into_int_value(), narrow, "")?.into());
        }
        Ok(raw)
    }

    /// Stores a register value of type `t` at `ptr`.
    pub fn store_element(&self, t: ElementType, ptr: PointerValue<'ctx>, value: BasicValueEnum<'ctx>) -> Result<()> {
        let v: BasicValueEnum = if t.is_pred() {
            self.b.build_int_z_extend(value.into_int_value(), self.i8(), "")?.into()
        } else if t.is_int() && t.bit_width() < 8 {
            // Sub-byte integers sit in a byte sign- or zero-extended, as XLA keeps them unpacked.
            if t.is_signed_int() {
                self.b.build_int_s_extend(value.into_int_value(), self.i8(), "")?.into()
            } else {
                self.b.build_int_z_extend(value.into_int_value(), self.i8(), "")?.into()
            }
        } else {
            value
        };
        self.b.build_store(ptr, v)?;
        Ok(())
    }

    /// A register constant of type `t` from the element's raw bits (as a literal stores them).
    pub fn const_from_bits(&self, t: ElementType, bits: u64, high_bits: u64) -> Result<BasicValueEnum<'ctx>> {
        use ElementType::*;
        Ok(match t {
            Pred => self.const_bool(bits & 1 != 0).into(),
            F32 => self.llvm.f32_type().const_float(f32::from_bits(bits as u32) as f64).into(),
            F64 => self.llvm.f64_type().const_float(f64::from_bits(bits)).into(),
            F16 | BF16 => {
                let i = self.llvm.i16_type().const_int(bits & 0xffff, false);
                self.b.build_bit_cast(i, self.value_type(t), "")?
            }
            C64 => {
                let re = self.llvm.f32_type().const_float(f32::from_bits(bits as u32) as f64);
                let im = self.llvm.f32_type().const_float(f32::from_bits((bits >> 32) as u32) as f64);
                self.llvm.const_struct(&[re.into(), im.into()], false).into()
            }
            C128 => {
                let re = self.llvm.f64_type().const_float(f64::from_bits(bits));
                let im = self.llvm.f64_type().const_float(f64::from_bits(high_bits));
                self.llvm.const_struct(&[re.into(), im.into()], false).into()
            }
            _ => self.value_type(t).into_int_type().const_int(bits, false).into(),
        })
    }

    /// Builds a complex value of element type `t` (c64 or c128) from its parts.
    pub fn make_complex(&self, t: ElementType, re: FloatValue<'ctx>, im: FloatValue<'ctx>) -> Result<BasicValueEnum<'ctx>> {
        let ty = self.value_type(t).into_struct_type();
        let v = self.b.build_insert_value(ty.get_undef(), re, 0, "")?;
        let v = self.b.build_insert_value(v, im, 1, "")?;
        Ok(v.into_struct_value().into())
    }

    /// The real and imaginary parts of a complex register value.
    pub fn complex_parts(&self, v: BasicValueEnum<'ctx>) -> Result<(FloatValue<'ctx>, FloatValue<'ctx>)> {
        let s: StructValue = v.into_struct_value();
        let re = self.b.build_extract_value(s, 0, "re")?.into_float_value();
        let im = self.b.build_extract_value(s, 1, "im")?.into_float_value();
        Ok((re, im))
    }

    /// Widens an `iN` of a signed or unsigned element type to i64.
    pub fn int_to_i64(&self, t: ElementType, v: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
        if v.get_type().get_bit_width() == 64 {
            return Ok(v);
        }
        Ok(if t.is_signed_int() {
            self.b.build_int_s_extend(v, self.i64(), "")?
        } else {
            self.b.build_int_z_extend(v, self.i64(), "")?
        })
    }

    /// An error for an element type an emitter cannot handle.
    pub fn unsupported_type(&self, what: &str, t: ElementType) -> Error {
        Error::Unsupported(format!("{what} on {t}"))
    }
}
