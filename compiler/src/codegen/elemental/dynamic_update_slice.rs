//! Dynamic-update-slice as an elemental op, for when it is not the root of its kernel (say,
//! followed by a convert in a fusion): an output element comes from the update if it lies in
//! the update's region, from the operand otherwise. The start indices are clamped so that the
//! update fits (XLA's semantics). The root case has its own emitter, which writes only the
//! region when the output buffer is the operand's.

use super::{Elemental, Val};
use crate::codegen::index::Index;
use crate::error::Result;
use crate::hlo::InstrId;
use inkwell::values::IntValue;
use inkwell::IntPredicate;

impl<'a, 'ctx> Elemental<'a, 'ctx> {
    pub(super) fn gen_dynamic_update_slice(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let cg = self.cg;
        let inst = self.comp.get(id);
        let (operand, update) = (inst.operands[0], inst.operands[1]);
        let starts = self.dynamic_update_slice_starts(id)?;
        let update_dims = self.dims(update).to_vec();
        let mut inside = cg.const_bool(true);
        let mut update_index = Vec::with_capacity(starts.len());
        for (d, &start) in starts.iter().enumerate() {
            // Unsigned compare of (i - start) < size checks both bounds at once.
            let u = cg.b.build_int_nsw_sub(index.dims[d], start, "")?;
            let lt = cg.b.build_int_compare(IntPredicate::ULT, u, cg.const_i64(update_dims[d]), "")?;
            inside = cg.b.build_and(inside, lt, "")?;
            update_index.push(u);
        }
        self.select_val("dus", inside, |e| e.gen(update, &Index::new(update_index)), |e| e.gen(operand, index))
    }

    /// The clamped start indices of dynamic-update-slice `id`, one per dimension.
    pub fn dynamic_update_slice_starts(&mut self, id: InstrId) -> Result<Vec<IntValue<'ctx>>> {
        let inst = self.comp.get(id);
        let (operand, update) = (inst.operands[0], inst.operands[1]);
        let starts = inst.operands[2..].to_vec();
        let operand_dims = self.dims(operand).to_vec();
        let update_dims = self.dims(update).to_vec();
        (0..operand_dims.len()).map(|d| self.clamped_start_index(starts[d], operand_dims[d] - update_dims[d])).collect()
    }
}
