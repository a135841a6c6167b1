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
//!
//! A transpose of a dot's result that puts the rhs's free dimensions before the lhs's becomes
//! the dot with its operands swapped (XLA's algebraic simplifier does the same): `(A B)^T =
//! B^T A^T`, and the GEMM reads either operand through strides, so the transposed result is
//! written where it belongs instead of being read back column-wise (a weight gradient
//! `dy^T x` consumed as `x^T dy` by the update). Each element is the same products summed in
//! the same order, so the bits do not change.

use crate::error::Result;
use crate::hlo::{Computation, DotDimensionNumbers, InstrId, Module, Opcode};

/// Folds transposed dot operands in every computation; returns whether any was folded.
pub fn run(module: &mut Module) -> Result<bool> {
    let mut changed = false;
    // A bitcast means the module is past XLA's layout assignment: its printed layouts are
    // facts there (a bitcast reinterprets its operand's bytes), hints otherwise.
    let laid_out = module.computations.iter().any(|c| c.instructions.iter().any(|i| i.opcode == Opcode::Bitcast));
    for comp in &mut module.computations {
        let mut folded = false;
        let users = comp.users();
        for id in comp.ids().collect::<Vec<_>>() {
            if comp.get(id).opcode == Opcode::Transpose {
                folded |= fold_result(comp, &users, id, laid_out);
            }
        }
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

/// Turns the transpose `id` of a dot used only by it into that dot with swapped operands, if
/// the permutation keeps the batch dimensions in front and swaps the two free groups, each in
/// its order. The old dot is left dead. Unless the module is `laid_out`, the new dot drops the
/// transpose's printed layout: that hint (JAX prints `{0,1}` there) only made the transpose a
/// bitcast of the old dot's row-major result, and kept, it would have the swapped dot write
/// the old dot's bytes, which the consumers would again read column-wise. Without one, layout
/// assignment gives the dot the row-major layout its elementwise consumers walk in.
fn fold_result(comp: &mut Computation, users: &[Vec<InstrId>], id: InstrId, laid_out: bool) -> bool {
    let t = comp.get(id);
    let dot_id = t.operands[0];
    let dot = comp.get(dot_id);
    let only_user = users[dot_id.index()] == [id];
    let root = comp.root == dot_id;
    if dot.opcode != Opcode::Dot || !only_user || root || !dot.control_predecessors.is_empty() || !t.control_predecessors.is_empty() {
        return false;
    }
    let perm = t.attrs.dims();
    let dims = dot.attrs.dot_dimension_numbers();
    let rank = |x: InstrId| comp.get(x).shape.dims().len() as i64;
    let nb = dims.lhs_batch.len() as i64;
    let lhs_free = rank(dot.operands[0]) - nb - dims.lhs_contracting.len() as i64;
    let rhs_free = rank(dot.operands[1]) - nb - dims.rhs_contracting.len() as i64;
    if perm.len() as i64 != nb + lhs_free + rhs_free {
        return false;
    }
    // Result dimension i of the swapped dot: the batch dimensions as the transpose orders
    // them, then the rhs's free ones (old result dims nb+lhs_free..), then the lhs's.
    let batch_ok = (0..nb).all(|i| perm[i as usize] < nb);
    let rhs_ok = (0..rhs_free).all(|i| perm[(nb + i) as usize] == nb + lhs_free + i);
    let lhs_ok = (0..lhs_free).all(|i| perm[(nb + rhs_free + i) as usize] == nb + i);
    if !(batch_ok && rhs_ok && lhs_ok) || perm.iter().enumerate().all(|(i, &p)| p == i as i64) {
        return false;
    }
    let pick = |b: &[i64]| (0..nb as usize).map(|i| b[perm[i] as usize]).collect::<Vec<_>>();
    let numbers = DotDimensionNumbers {
        lhs_batch: pick(&dims.rhs_batch),
        rhs_batch: pick(&dims.lhs_batch),
        lhs_contracting: dims.rhs_contracting.clone(),
        rhs_contracting: dims.lhs_contracting.clone(),
    };
    let (lhs, rhs) = (dot.operands[0], dot.operands[1]);
    let mut attrs = dot.attrs.clone();
    attrs.dot_dims = Some(numbers);
    if let Some(p) = attrs.operand_precision.as_mut() {
        p.reverse();
    }
    let t = comp.get_mut(id);
    t.opcode = Opcode::Dot;
    t.operands = vec![rhs, lhs];
    t.attrs = attrs;
    if !laid_out {
        t.shape = t.shape.without_layouts();
    }
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
    #[test]
    fn a_transposed_result_swaps_the_operands() {
        let text = "HloModule m
ENTRY e {
  a = f32[2,8,4] parameter(0)
  b = f32[2,8,3] parameter(1)
  d = f32[2,4,3] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}, operand_precision={high,default}
  ROOT t = f32[2,3,4]{1,2,0} transpose(d), dimensions={0,2,1}
}
";
        let (changed, m) = folded(text);
        assert!(changed);
        let c = m.entry_computation();
        let root = c.root_instruction();
        assert_eq!(root.opcode, Opcode::Dot);
        // The printed layout was a hint, dropped: layout assignment lays the dot out row-major.
        assert_eq!(root.shape.as_array().map(|a| a.layout.is_none()), Some(true));
        assert_eq!((c.get(root.operands[0]).name.as_str(), c.get(root.operands[1]).name.as_str()), ("b", "a"));
        assert_eq!(root.attrs.operand_precision.as_deref(), Some(&["default".to_string(), "high".to_string()][..]));
        assert_eq!(c.instructions.len(), 3, "the old dot is gone");
    }

    #[test]
    fn a_transposed_result_with_other_users_or_moved_batch_stays() {
        let text = "HloModule m
ENTRY e {
  a = f32[8,4] parameter(0)
  b = f32[8,3] parameter(1)
  d = f32[4,3] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  t = f32[3,4] transpose(d), dimensions={1,0}
  p = f32[2,3,4] parameter(2)
  q = f32[2,4,5] parameter(3)
  e = f32[2,3,5] dot(p, q), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  et = f32[3,2,5] transpose(e), dimensions={1,0,2}
  ROOT r = (f32[3,4], f32[4,3], f32[3,2,5]) tuple(t, d, et)
}
";
        assert!(!folded(text).0);
    }
}
