//! Reductions that combine nothing, computed as XLA computes them.
//!
//! XLA's algebraic simplifier replaces a `reduce` whose result has as many elements as its
//! input (no dimension reduced, or only dimensions of size 1) by a reshape of the input: the
//! init value is taken to be the reducer's identity and is never applied. A rank-0
//! `reduce-window` (printed without `window=`) is likewise its operand. Programs can pass an
//! init that is not an identity, and XLA's results then differ from applying the reducer once
//! (measured on XLA:CPU: `reduce(f32[3,1] x, 3), dimensions={1}` is `x`, not `x + 3`), so
//! hlojit follows XLA. A reduce-window of rank 1 or more over windows of one element does apply
//! its init on XLA:CPU and is left alone.

use crate::error::Result;
use crate::hlo::{Instruction, InstrId, Module, Opcode};
use hlojit_runtime::Shape;

/// Rewrites every trivial reduction; returns whether any was found.
pub fn run(module: &mut Module) -> Result<bool> {
    let mut changed = false;
    for c in module.comp_ids().collect::<Vec<_>>() {
        let comp = module.computation_mut(c);
        for id in comp.ids().collect::<Vec<_>>() {
            let inst = comp.get(id);
            let inputs = inst.operands.len() / 2;
            let results: Vec<Shape> = match &inst.shape {
                Shape::Tuple(elements) => elements.clone(),
                array => vec![array.clone()],
            };
            let trivial = match inst.opcode {
                Opcode::Reduce => (0..inputs).all(|i| {
                    let input = &comp.get(inst.operands[i]).shape;
                    input.is_array() && results.get(i).is_some_and(|r| r.as_array().map(|a| a.element_count()) == input.as_array().map(|a| a.element_count()))
                }),
                Opcode::ReduceWindow => inst.attrs.window_dims().is_empty() && results.iter().all(|r| r.dims().is_empty()),
                _ => false,
            };
            if !trivial || inputs == 0 || results.len() != inputs {
                continue;
            }
            let name = inst.name.clone();
            let operands = inst.operands[..inputs].to_vec();
            let reshaped: Vec<InstrId> = operands
                .iter()
                .zip(&results)
                .enumerate()
                .map(|(i, (&operand, shape))| comp.add(Instruction::new(format!("{name}.reshape{i}"), Opcode::Reshape, shape.clone(), vec![operand])))
                .collect();
            let replacement = match comp.get(id).shape {
                Shape::Tuple(_) => comp.add(Instruction::new(format!("{name}.tuple"), Opcode::Tuple, comp.get(id).shape.clone(), reshaped)),
                _ => reshaped[0],
            };
            comp.replace_all_uses(id, replacement);
            changed = true;
        }
        if changed {
            comp.compact();
        }
    }
    Ok(changed)
}


/// Rewrites reductions that combine nothing as XLA does.
pub struct TrivialReductions;

impl super::pass::Pass for TrivialReductions {
    fn name(&self) -> &'static str {
        "trivial-reductions"
    }

    fn run(&self, module: &mut crate::hlo::Module) -> crate::error::Result<bool> {
        run(module)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(text: &str) -> (bool, Module) {
        crate::passes::test_util::run_verified(text, run)
    }

    fn root_opcode(m: &Module) -> Opcode {
        m.entry_computation().root_instruction().opcode
    }

    const ADD: &str = "add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }\n";

    #[test]
    fn reducing_size_one_dimensions_is_a_reshape() {
        let text = format!("HloModule m\n{ADD}ENTRY e {{\n  x = f32[3,1] parameter(0)\n  i = f32[] constant(3)\n  ROOT r = f32[3] reduce(x, i), dimensions={{1}}, to_apply=add\n}}\n");
        let (changed, m) = rewritten(&text);
        assert!(changed);
        assert_eq!(root_opcode(&m), Opcode::Reshape);
    }

    #[test]
    fn variadic_reduce_of_nothing_is_a_tuple_of_reshapes() {
        let text = "HloModule m
add2 { a = f32[] parameter(0)  b = s32[] parameter(1)  c = f32[] parameter(2)  d = s32[] parameter(3)
  s = f32[] add(a, c)  t = s32[] add(b, d)  ROOT r = (f32[], s32[]) tuple(s, t) }
ENTRY e {
  x = f32[3] parameter(0)
  k = s32[3] iota(), iota_dimension=0
  i = f32[] constant(3)
  j = s32[] constant(5)
  ROOT v = (f32[3], s32[3]) reduce(x, k, i, j), dimensions={}, to_apply=add2
}
";
        let (changed, m) = rewritten(text);
        assert!(changed);
        let entry = m.entry_computation();
        assert_eq!(root_opcode(&m), Opcode::Tuple);
        assert!(entry.root_instruction().operands.iter().all(|&o| entry.get(o).opcode == Opcode::Reshape));
    }

    #[test]
    fn rank0_reduce_window_is_its_operand_but_unit_windows_of_arrays_stay() {
        let text = format!("HloModule m\n{ADD}ENTRY e {{\n  x = f32[] parameter(0)\n  i = f32[] constant(3)\n  ROOT w = f32[] reduce-window(x, i), to_apply=add\n}}\n");
        assert_eq!(root_opcode(&rewritten(&text).1), Opcode::Reshape);
        let text = format!("HloModule m\n{ADD}ENTRY e {{\n  x = f32[3] parameter(0)\n  i = f32[] constant(3)\n  ROOT w = f32[3] reduce-window(x, i), window={{size=1}}, to_apply=add\n}}\n");
        assert!(!rewritten(&text).0);
    }

    #[test]
    fn real_reductions_stay() {
        let text = format!("HloModule m\n{ADD}ENTRY e {{\n  x = f32[3,2] parameter(0)\n  i = f32[] constant(0)\n  ROOT r = f32[3] reduce(x, i), dimensions={{1}}, to_apply=add\n}}\n");
        assert!(!rewritten(&text).0);
    }
}
