//! A kernel's estimated cost: the bytes it must move (operands read once, results written
//! once) and the floating-point operations it performs. Dumps, `hlojit graph` and
//! `hlojit profile` use it to say what a kernel is and how close it runs to the machine's
//! limits; nothing decides code generation with it.

use crate::hlo::{Computation, Instruction, Module, Opcode};
use hlojit_runtime::Shape;

/// What one kernel costs, estimated from shapes alone.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelCost {
    /// Bytes read from its operands plus bytes written to its results.
    pub bytes: i64,
    /// Floating-point (or integer arithmetic) operations: 2 per multiply-add in dots and
    /// convolutions, 1 per element of other arithmetic ops and reductions.
    pub flops: i64,
    /// The opcodes it computes (a fusion's fused instructions, parameters and tuples left
    /// out), in the fused computation's order.
    pub ops: Vec<Opcode>,
}

impl KernelCost {
    /// Whether the kernel does more arithmetic than memory traffic per byte than a typical
    /// CPU balances (about 4 flops per byte): such kernels are judged against peak flops.
    pub fn compute_bound(&self) -> bool {
        self.flops > 4 * self.bytes.max(1)
    }

    /// The fused ops as text: `fusion(dot, add, maximum)` style, repeated ops counted.
    pub fn ops_text(&self) -> String {
        let mut counts: Vec<(Opcode, usize)> = Vec::new();
        for &op in &self.ops {
            match counts.iter_mut().find(|(o, _)| *o == op) {
                Some((_, n)) => *n += 1,
                None => counts.push((op, 1)),
            }
        }
        counts.iter().map(|(o, n)| if *n > 1 { format!("{}×{n}", o.name()) } else { o.name().to_string() }).collect::<Vec<_>>().join(" ")
    }
}

fn shape_bytes(shape: &Shape) -> i64 {
    shape.array_leaves().iter().map(|a| a.element_count().saturating_mul(a.element_type.byte_size() as i64)).fold(0, i64::saturating_add)
}

fn elements(shape: &Shape) -> i64 {
    shape.array_leaves().iter().map(|a| a.element_count()).fold(0, i64::saturating_add)
}

/// The cost of the kernel that computes `inst` (in `comp`), a fusion or a single op.
pub fn kernel_cost(module: &Module, comp: &Computation, inst: &Instruction) -> KernelCost {
    let bytes = inst.operands.iter().map(|&o| shape_bytes(&comp.get(o).shape)).fold(shape_bytes(&inst.shape), i64::saturating_add);
    let mut cost = KernelCost { bytes, ..KernelCost::default() };
    match inst.fused_computation() {
        Some(f) => {
            let fused = module.computation(f);
            for i in &fused.instructions {
                if matches!(i.opcode, Opcode::Parameter | Opcode::Tuple | Opcode::GetTupleElement) {
                    continue;
                }
                cost.ops.push(i.opcode);
                cost.flops = cost.flops.saturating_add(op_flops(fused, i));
            }
        }
        None => {
            cost.ops.push(inst.opcode);
            cost.flops = op_flops(comp, inst);
        }
    }
    cost
}

/// Arithmetic of one (unfused) instruction.
fn op_flops(comp: &Computation, inst: &Instruction) -> i64 {
    let out = elements(&inst.shape);
    let operand = |i: usize| comp.get(inst.operands[i]).shape.as_array().cloned();
    match inst.opcode {
        Opcode::Dot => {
            let k: i64 = match (&inst.attrs.dot_dims, operand(0)) {
                (Some(d), Some(lhs)) => d.lhs_contracting.iter().filter_map(|&c| lhs.dims.get(c as usize)).product(),
                _ => 1,
            };
            out.saturating_mul(k).saturating_mul(2)
        }
        Opcode::Convolution => {
            // Each output element sums kernel elements / output features products.
            let per_output: i64 = match (&inst.attrs.conv_dims, operand(1)) {
                (Some(d), Some(kernel)) => {
                    let outputs = kernel.dims.get(d.kernel_output_feature as usize).copied().unwrap_or(1).max(1);
                    kernel.element_count() / outputs
                }
                _ => 1,
            };
            out.saturating_mul(per_output).saturating_mul(2)
        }
        Opcode::Reduce | Opcode::ReduceWindow => inst.operands.first().map_or(0, |&o| elements(&comp.get(o).shape)),
        op if op.is_elementwise() && !matches!(op, Opcode::Convert | Opcode::Copy | Opcode::BitcastConvert | Opcode::Select | Opcode::Compare) => out,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hlo::text::parse_module;

    #[test]
    fn dot_counts_two_flops_per_multiply_add_and_every_operand_byte() {
        let m = parse_module(
            "HloModule m\nENTRY e { a = f32[4,8] parameter(0)  b = f32[8,16] parameter(1)\n ROOT d = f32[4,16] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0} }\n",
        )
        .unwrap();
        let comp = m.entry_computation();
        let c = kernel_cost(&m, comp, comp.root_instruction());
        assert_eq!(c.flops, 2 * 4 * 16 * 8);
        assert_eq!(c.bytes, 4 * (4 * 8 + 8 * 16 + 4 * 16));
        assert_eq!(c.ops, vec![Opcode::Dot]);
        assert!(c.compute_bound() == (c.flops > 4 * c.bytes));
    }
}
