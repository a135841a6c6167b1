//! Questions the in-place emitters (dynamic-update-slice, scatter) ask about the buffer they
//! write: is it the buffer of the operand they update, and does anything else in the kernel
//! read that operand where the kernel may already have written?

use crate::codegen::kernel::KernelContext;
use crate::hlo::{InstrId, Opcode};

/// Whether the kernel's output buffer is the buffer of `operand`, an operand of the root
/// (buffer assignment found it dead after this kernel). For a fusion, that operand is the
/// fused parameter bound to the fusion operand `kc.in_place_operand`; for an unfused op, it
/// is the op's operand with that number.
pub fn output_is_operand(kc: &KernelContext, operand: InstrId) -> bool {
    let Some(i) = kc.in_place_operand else { return false };
    let root = kc.comp.get(kc.root);
    let inst = kc.comp.get(operand);
    let fused_parameter = inst.opcode == Opcode::Parameter && inst.attrs.parameter_number == Some(i as i64);
    let unfused_operand = root.operands.get(i) == Some(&operand);
    kc.bindings.contains_key(&operand) && (fused_parameter || unfused_operand)
}

/// Whether every read of `operand` other than by the root goes through an elementwise path
/// into the root's operand `value` at the same index as the root writes, i.e. through a
/// dynamic-slice with the root's own start operands and the shape of `value`. Writing in place
/// element by element is then safe: each element is read before it is overwritten, and only
/// by the iteration that overwrites it.
pub fn reads_only_at_written_index(kc: &KernelContext, operand: InstrId, value: InstrId, starts: &[InstrId]) -> bool {
    let comp = kc.comp;
    let users = comp.users();
    let value_dims = comp.get(value).shape.dims().to_vec();
    // Every transitive user of `operand` up to the root must be an elementwise op of the
    // value's dims, or the matching dynamic-slice.
    let mut stack: Vec<InstrId> = users[operand.index()].iter().copied().filter(|&u| u != kc.root).collect();
    let mut seen = std::collections::HashSet::new();
    while let Some(u) = stack.pop() {
        if !seen.insert(u) {
            continue;
        }
        let inst = comp.get(u);
        let ok = match inst.opcode {
            Opcode::DynamicSlice => {
                inst.operands[0] == operand
                    && inst.operands[1..] == *starts
                    && inst.shape.dims() == value_dims.as_slice()
            }
            op => op.is_elementwise() && inst.shape.dims() == value_dims.as_slice(),
        };
        if !ok {
            return false;
        }
        for &next in &users[u.index()] {
            if next == kc.root {
                // Only as the written value (not as a start index or the operand itself).
                if u != value {
                    return false;
                }
            } else {
                stack.push(next);
            }
        }
    }
    true
}
