//! Makes the entry computation's parameters carry the layouts of `entry_computation_layout`,
//! which is what the caller's buffers have. Layouts never change values, so this only changes
//! how parameters are read.

use crate::error::{Error, Result};
use crate::hlo::Module;

/// Gives the entry's parameter instructions the layouts of the entry computation layout.
pub fn apply_entry_layout(module: &mut Module) -> Result<()> {
    let shapes = module.entry_parameter_shapes();
    let entry = module.entry;
    let comp = module.computation_mut(entry);
    for (i, id) in comp.parameters().into_iter().enumerate() {
        let inst = comp.get_mut(id);
        let Some(shape) = shapes.get(i) else { continue };
        if !inst.shape.compatible(shape) {
            return Err(Error::verify(
                &module.computations[entry.index()].name,
                &module.computations[entry.index()].get(id).name,
                format!("entry_computation_layout gives parameter {i} the shape {shape}, the parameter is {}", module.computations[entry.index()].get(id).shape),
            ));
        }
        inst.shape = shape.clone();
    }
    Ok(())
}
