//! An array in memory as generated code sees it: a base pointer plus the shape and layout
//! that turn a logical index into an address.

use super::context::Codegen;
use super::index::Index;
use crate::error::{Error, Result};
use hlojit_runtime::physical::{CoordOp, PhysicalLayout};
use hlojit_runtime::{ArrayShape, ElementType};
use inkwell::values::{BasicValueEnum, IntValue, PointerValue};

#[derive(Clone, Debug)]
pub struct IrArray<'ctx> {
    pub ptr: PointerValue<'ctx>,
    pub shape: ArrayShape,
    pub physical: PhysicalLayout,
}

impl<'ctx> IrArray<'ctx> {
    pub fn new(ptr: PointerValue<'ctx>, shape: &ArrayShape) -> Result<IrArray<'ctx>> {
        let physical = PhysicalLayout::new(shape).map_err(|e| Error::Unsupported(e.to_string()))?;
        Ok(IrArray { ptr, shape: shape.clone(), physical })
    }

    pub fn element_type(&self) -> ElementType {
        self.shape.element_type
    }

    /// Element offset (not bytes) of a logical index.
    pub fn offset(&self, cg: &Codegen<'ctx>, index: &Index<'ctx>) -> Result<IntValue<'ctx>> {
        if self.physical.is_row_major_dense() {
            return index.linearize(cg, &self.shape.dims);
        }
        let mut acc = cg.const_i64(0);
        for d in &self.physical.dims {
            let Some(l) = d.logical_dim else { continue };
            if d.size == 1 {
                continue;
            }
            let mut v = index.dims[l];
            for op in &d.ops {
                v = match *op {
                    CoordOp::Div(t) => cg.b.build_int_unsigned_div(v, cg.const_i64(t), "")?,
                    CoordOp::Rem(t) => cg.b.build_int_unsigned_rem(v, cg.const_i64(t), "")?,
                };
            }
            let term = if d.stride == 1 { v } else { cg.b.build_int_nsw_mul(v, cg.const_i64(d.stride), "")? };
            acc = cg.b.build_int_nsw_add(acc, term, "")?;
        }
        Ok(acc)
    }

    pub fn address(&self, cg: &Codegen<'ctx>, index: &Index<'ctx>) -> Result<PointerValue<'ctx>> {
        let offset = self.offset(cg, index)?;
        cg.gep(cg.memory_type(self.element_type()), self.ptr, offset)
    }

    pub fn load(&self, cg: &Codegen<'ctx>, index: &Index<'ctx>) -> Result<BasicValueEnum<'ctx>> {
        let addr = self.address(cg, index)?;
        cg.load_element(self.element_type(), addr)
    }

    pub fn store(&self, cg: &Codegen<'ctx>, index: &Index<'ctx>, value: BasicValueEnum<'ctx>) -> Result<()> {
        let addr = self.address(cg, index)?;
        cg.store_element(self.element_type(), addr, value)
    }

    /// Bytes the buffer occupies (padding of tiled layouts included).
    pub fn byte_size(&self) -> i64 {
        self.physical.storage_elements * self.element_type().byte_size() as i64
    }
}

pub use crate::analysis::buffers::{buffer_bytes, is_memory_bitcast};
