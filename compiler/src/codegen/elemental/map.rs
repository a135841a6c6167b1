//! `map`: applies its scalar computation to the operands' elements at the same index. XLA
//! allows `dimensions` to be only all of the operands' dimensions in order, so the output
//! index is every operand's index.

use super::{Elemental, Val};
use crate::codegen::index::Index;
use crate::error::{Error, Result};
use crate::hlo::InstrId;

impl<'a, 'ctx> Elemental<'a, 'ctx> {
    pub(super) fn gen_map(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let inst = self.comp.get(id);
        let f = inst.to_apply().ok_or_else(|| Error::Internal(format!("{}: map without to_apply", inst.name)))?;
        let operands = inst.operands.clone();
        let args = operands.iter().map(|&o| self.gen(o, index)).collect::<Result<Vec<_>>>()?;
        self.call_scalar(f, args)
    }
}
