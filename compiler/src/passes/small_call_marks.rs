//! Marks the integer `power` instructions that XLA:CPU would compile inside a while loop's
//! "small call" kernel (`Attributes::small_call`), where its results differ from the main path.
//!
//! A loop that `SmallWhileLoopHoistingPass` hoists (small_while.rs; homes as in conv_taps.rs)
//! is emitted whole by the legacy `ElementalIrEmitter`, whose `EmitIntegerPow` ends with
//! `select(exponent >= 0, acc, select(base == 1, 1, 0))`: a negative exponent gives 0 for
//! base -1 too, where the main path gives ±1 by the exponent's parity. Measured through jaxlib
//! 0.10.2 on `s32[8]` (fuzz program 5001420): pow(-1, -1) and pow(-1, -2) are 0 in a loop run
//! twice, -1 and 1 outside it and in a loop run once (which XLA inlines).
//!
//! Runs after `while_licm`: a power whose operands do not change in the loop is hoisted out
//! of it (by XLA's `WhileLoopInvariantCodeMotion` as by hlojit's) and computed on the main
//! path, which the same experiment shows.

use super::conv_taps::{homes, Home};
use crate::error::Result;
use crate::hlo::{Module, Opcode};

pub struct SmallCallMarks;

impl super::pass::Pass for SmallCallMarks {
    fn name(&self) -> &'static str {
        "small-call-marks"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        let home = homes(module);
        let mut changed = false;
        for c in module.comp_ids().collect::<Vec<_>>() {
            let in_loop = home[c.index()] == Some(Home::Loop);
            let comp = module.computation_mut(c);
            for id in comp.ids().collect::<Vec<_>>() {
                let inst = comp.get(id);
                let int_power = inst.opcode == Opcode::Power && inst.shape.element_type().is_some_and(|t| t.is_int());
                if int_power && inst.attrs.small_call != in_loop {
                    comp.get_mut(id).attrs.small_call = in_loop;
                    changed = true;
                }
            }
        }
        Ok(changed)
    }
}
