//! Constant literals as read-only globals laid out in their shape's physical layout.

use super::context::Codegen;
use crate::error::{Error, Result};
use hlojit_runtime::buffer::BUFFER_ALIGNMENT;
use hlojit_runtime::physical::{logical_to_physical, PhysicalLayout};
use hlojit_runtime::{ArrayLiteral, ArrayShape};
use inkwell::module::Linkage;
use inkwell::values::{BasicValueEnum, PointerValue};

impl<'ctx> Codegen<'ctx> {
    /// A private global holding `literal` laid out as `shape` says; one per `name`.
    pub fn constant_array(&self, name: &str, literal: &ArrayLiteral, shape: &ArrayShape) -> Result<PointerValue<'ctx>> {
        if let Some(g) = self.module.get_global(name) {
            return Ok(g.as_pointer_value());
        }
        let physical = PhysicalLayout::new(shape).map_err(|e| Error::Unsupported(e.to_string()))?;
        let elem = literal.element_type().byte_size();
        let mut bytes = vec![0u8; physical.storage_elements as usize * elem];
        logical_to_physical(literal.bytes(), &mut bytes, literal.dims(), &physical, elem);
        let init = self.llvm.const_string(&bytes, false);
        let g = self.module.add_global(init.get_type(), None, name);
        g.set_initializer(&init);
        g.set_constant(true);
        g.set_linkage(Linkage::Private);
        g.set_unnamed_addr(true);
        g.set_alignment(BUFFER_ALIGNMENT as u32);
        Ok(g.as_pointer_value())
    }

    /// Element `i` of a literal as a register constant.
    pub fn literal_element(&self, literal: &ArrayLiteral, i: usize) -> Result<BasicValueEnum<'ctx>> {
        let t = literal.element_type();
        if t == hlojit_runtime::ElementType::C128 {
            let c = literal.get_c128(i);
            return self.const_from_bits(t, c.re.to_bits(), c.im.to_bits());
        }
        self.const_from_bits(t, literal.bits(i), 0)
    }
}
