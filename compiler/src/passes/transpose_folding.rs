//! Transpose folding, as XLA's `TransposeFolding` does it for dots: a dot whose operand is a
//! transpose reads the transpose's operand instead, its dimension numbers renamed through the
//! permutation, so the GEMM's packing reads the data where it lies and no transposed copy is
//! written first.
//!
//! `transpose(a, perm)` has dimension `i` equal to `a`'s dimension `perm[i]`, so a batch or
//! contracting dimension `d` of the transpose is dimension `perm[d]` of `a`. The dot's result
//! lists batch dimensions (in the order the dimension numbers give), then each operand's other
//! ("free") dimensions in increasing order. Folding keeps the result only when the free
//! dimensions keep their relative order through the permutation; otherwise the transpose
//! stays (XLA checks the same). The transpose itself stays if anything else uses it.

use crate::error::Result;
use crate::hlo::{Computation, DotDimensionNumbers, InstrId, Module, Opcode};

/// Folds transposed dot operands in every computation; returns whether any was folded.
pub fn run(module: &mut Module) -> Result<bool> {
    let mut changed = false;
    for comp in &mut module.computations {
        let mut folded = false;
        for id in comp.ids().collect::<Vec<_>>() {
            if comp.get(id).opcode == Opcode::Dot {
                folded |= fold_operand(comp, id, 0);
                folded |= fold_operand(comp, id, 1);
            }
        }
        if folded {
            // Transposes only the dots used are dead now.
            comp.compact();
            changed = true;
        }
    }
    Ok(changed)
}

/// Folds operand `side` (0 lhs, 1 rhs) of the dot `id` if it is a foldable transpose.
fn fold_operand(comp: &mut Computation, id: InstrId, side: usize) -> bool {
    let dot = comp.get(id);
    let t = comp.get(dot.operands[side]);
    if t.opcode != Opcode::Transpose || !t.control_predecessors.is_empty() {
        return false;
    }
    let perm = t.attrs.dims().to_vec();
    let source = t.operands[0];
    let dims = dot.attrs.dot_dimension_numbers().clone();
    let (batch, contracting) = if side == 0 { (&dims.lhs_batch, &dims.lhs_contracting) } else { (&dims.rhs_batch, &dims.rhs_contracting) };
    let Some(new) = renamed(&perm, batch, contracting) else { return false };
    let mut numbers: DotDimensionNumbers = dims.clone();
    if side == 0 {
        (numbers.lhs_batch, numbers.lhs_contracting) = new;
    } else {
        (numbers.rhs_batch, numbers.rhs_contracting) = new;
    }
    let dot = comp.get_mut(id);
    dot.operands[side] = source;
    dot.attrs.dot_dims = Some(numbers);
    true
}

/// The batch and contracting dimensions of the transpose's operand, if the free dimensions
/// keep their order (so the dot's result does not change).
fn renamed(perm: &[i64], batch: &[i64], contracting: &[i64]) -> Option<(Vec<i64>, Vec<i64>)> {
    let map = |d: &i64| perm.get(usize::try_from(*d).ok()?).copied();
    let new_batch: Vec<i64> = batch.iter().map(map).collect::<Option<_>>()?;
    let new_contracting: Vec<i64> = contracting.iter().map(map).collect::<Option<_>>()?;
    let free: Vec<i64> = (0..perm.len() as i64).filter(|d| !batch.contains(d) && !contracting.contains(d)).map(|d| perm[d as usize]).collect();
    free.windows(2).all(|w| w[0] < w[1]).then_some((new_batch, new_contracting))
}

/// Folds transposes into the dots that read them.
pub struct TransposeFolding;

impl super::pass::Pass for TransposeFolding {
    fn name(&self) -> &'static str {
        "transpose-folding"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        run(module)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(text: &str) -> (bool, Module) {
        crate::passes::test_util::run_verified(text, run)
    }

    #[test]
    fn a_transposed_matrix_becomes_a_contracting_dimension() {
        let text = "HloModule m
ENTRY e {
  a = f32[8,4] parameter(0)
  b = f32[8,3] parameter(1)
  at = f32[4,8] transpose(a), dimensions={1,0}
  ROOT d = f32[4,3] dot(at, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
";
        let (changed, m) = folded(text);
        assert!(changed);
        let c = m.entry_computation();
        let root = c.root_instruction();
        assert_eq!(c.get(root.operands[0]).name, "a");
        assert_eq!(root.attrs.dot_dimension_numbers().lhs_contracting, vec![0]);
        assert_eq!(c.instructions.len(), 3, "the transpose is gone");
    }

    #[test]
    fn batch_dimensions_are_renamed() {
        // The attention pattern: [b, s, h, d] viewed as [b, h, s, d].
        let text = "HloModule m
ENTRY e {
  q = f32[1,5,2,4] parameter(0)
  k = f32[1,5,2,4] parameter(1)
  qt = f32[1,2,5,4] transpose(q), dimensions={0,2,1,3}
  kt = f32[1,2,5,4] transpose(k), dimensions={0,2,1,3}
  ROOT s = f32[1,2,5,5] dot(qt, kt), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}
}
";
        let (changed, m) = folded(text);
        assert!(changed);
        let d = m.entry_computation().root_instruction().attrs.dot_dimension_numbers().clone();
        assert_eq!((d.lhs_batch, d.lhs_contracting, d.rhs_batch, d.rhs_contracting), (vec![0, 2], vec![3], vec![0, 2], vec![3]));
    }

    #[test]
    fn reordered_free_dimensions_keep_the_transpose() {
        // The free dimensions 0 and 1 swap: folding would transpose the result.
        let text = "HloModule m
ENTRY e {
  a = f32[2,3,4] parameter(0)
  b = f32[4,5] parameter(1)
  at = f32[3,2,4] transpose(a), dimensions={1,0,2}
  ROOT d = f32[3,2,5] dot(at, b), lhs_contracting_dims={2}, rhs_contracting_dims={0}
}
";
        assert!(!folded(text).0);
    }

    #[test]
    fn a_transpose_with_other_users_stays_for_them() {
        let text = "HloModule m
ENTRY e {
  a = f32[8,4] parameter(0)
  b = f32[8,3] parameter(1)
  at = f32[4,8] transpose(a), dimensions={1,0}
  d = f32[4,3] dot(at, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[4,3], f32[4,8]) tuple(d, at)
}
";
        let (changed, m) = folded(text);
        assert!(changed);
        assert!(m.entry_computation().instructions.iter().any(|i| i.opcode == Opcode::Transpose));
    }
}
