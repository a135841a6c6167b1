//! Splits a reduction over several dimensions into two consecutive reductions (the rewrite
//! XLA's `ReductionSplitter` makes) when the inner one is then a sibling of another reduction
//! of the same operand: `max(x)` over both dimensions of a matrix whose rows are also summed
//! becomes `max(rowmax(x))`, and sibling multi-output fusion makes the row maximum and the row
//! sum one walk over x. The second reduction reads one value per row.
//!
//! Only reductions that may be reassociated are split (one associative, commutative op on f32
//! or f64 — add, multiply, maximum, minimum — as the reduction kernels already reorder them):
//! the inner reduction starts from the op's identity, the outer one from the original init, so
//! the init value is still applied once.

use super::expand_util::Builder;
use super::fusion::sequenced_computations;
use crate::codegen::reducer::associative_op;
use crate::error::Result;
use crate::hlo::{CompId, InstrId, Module, Opcode};
use hlojit_runtime::ElementType;

/// Splits reductions in every computation that runs as a sequence of kernels.
pub fn run(module: &mut Module) -> Result<bool> {
    let mut changed = false;
    for c in sequenced_computations(module) {
        while let Some((reduce, inner_dims)) = find(module, c) {
            split(module, c, reduce, inner_dims)?;
            changed = true;
        }
    }
    Ok(changed)
}

/// The identity of reducer op `op` on floating type `t`, if it has one here.
fn identity(op: Opcode) -> Option<f64> {
    match op {
        Opcode::Add => Some(0.0),
        Opcode::Multiply => Some(1.0),
        Opcode::Maximum => Some(f64::NEG_INFINITY),
        Opcode::Minimum => Some(f64::INFINITY),
        _ => None,
    }
}

fn sorted_dims(module: &Module, c: CompId, id: InstrId) -> Vec<i64> {
    let mut d = module.computation(c).get(id).attrs.dims().to_vec();
    d.sort_unstable();
    d
}

/// A reassociable reduction and the dimensions of a sibling reduction of the same operand
/// that reduces a strict subset of its dimensions.
fn find(module: &Module, c: CompId) -> Option<(InstrId, Vec<i64>)> {
    let comp = module.computation(c);
    let users = comp.users();
    for id in comp.post_order() {
        let r = comp.get(id);
        if r.opcode != Opcode::Reduce || r.operands.len() != 2 || !r.control_predecessors.is_empty() {
            continue;
        }
        let t = r.shape.element_type();
        let op = r.to_apply().and_then(|f| associative_op(module, f));
        if !matches!(t, Some(ElementType::F32 | ElementType::F64)) || op.and_then(identity).is_none() {
            continue;
        }
        let dims = sorted_dims(module, c, id);
        let x = r.operands[0];
        for &s in &users[x.index()] {
            let sib = comp.get(s);
            if s == id || sib.opcode != Opcode::Reduce || sib.operands.len() != 2 || sib.operands[0] != x {
                continue;
            }
            let inner = sorted_dims(module, c, s);
            if !inner.is_empty() && inner.len() < dims.len() && inner.iter().all(|d| dims.contains(d)) {
                return Some((id, inner));
            }
        }
    }
    None
}

fn split(module: &mut Module, c: CompId, reduce: InstrId, inner: Vec<i64>) -> Result<()> {
    let r = module.computation(c).get(reduce).clone();
    let (x, init) = (r.operands[0], r.operands[1]);
    let reducer = r.to_apply().ok_or_else(|| crate::error::Error::Internal(format!("{}: no reducer", r.name)))?;
    let op = associative_op(module, reducer).and_then(identity);
    let t = r.shape.element_type().unwrap_or(ElementType::F32);
    let dims = r.attrs.dims().to_vec();
    // The outer reduction's dimensions, numbered in the inner result's dimensions.
    let outer: Vec<i64> =
        dims.iter().filter(|d| !inner.contains(d)).map(|&d| d - inner.iter().filter(|&&i| i < d).count() as i64).collect();
    let mut b = Builder::new(module, c, format!("{}.split", r.name));
    let id = b.scalar(t, op.unwrap_or(0.0))?;
    let partial = b.reduce(x, id, inner, reducer)?;
    let whole = b.reduce(partial, init, outer, reducer)?;
    let comp = module.computation_mut(c);
    comp.get_mut(whole).shape = r.shape.clone();
    comp.replace_all_uses(reduce, whole);
    comp.compact();
    Ok(())
}

/// Reduction splitting for multi-output fusion.
pub struct ReductionSplitting;

impl super::pass::Pass for ReductionSplitting {
    fn name(&self) -> &'static str {
        "reduction-splitting"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        run(module)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::test_util::run_verified;

    const REDUCERS: &str = "add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }\n\
        max { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] maximum(a, b) }\n";

    #[test]
    fn a_full_maximum_next_to_a_row_sum_becomes_a_maximum_of_row_maxima() {
        let text = format!(
            "HloModule m\n{REDUCERS}ENTRY e {{ x = f32[64,32] parameter(0)  z = f32[] constant(0)  n = f32[] constant(-inf)\n\
             s = f32[64] reduce(x, z), dimensions={{1}}, to_apply=add\n\
             m = f32[] reduce(x, n), dimensions={{0,1}}, to_apply=max\n\
             ROOT t = (f32[64], f32[]) tuple(s, m) }}\n"
        );
        let (changed, m) = run_verified(&text, run);
        assert!(changed);
        let e = m.entry_computation();
        let root = e.root_instruction();
        let whole = e.get(root.operands[1]);
        assert_eq!((whole.opcode, whole.attrs.dims()), (Opcode::Reduce, &[0][..]));
        let partial = e.get(whole.operands[0]);
        assert_eq!((partial.opcode, partial.attrs.dims(), partial.shape.dims()), (Opcode::Reduce, &[1][..], &[64][..]));
        // The inner reduction starts from max's identity; the original init goes to the outer.
        assert_eq!(e.get(whole.operands[1]).name, "n");
        assert!(e.get(partial.operands[1]).attrs.literal.is_some());
    }

    #[test]
    fn no_sibling_or_no_reassociation_leaves_the_reduction_alone() {
        // A full reduction alone: nothing to share.
        let alone = format!(
            "HloModule m\n{REDUCERS}ENTRY e {{ x = f32[64,32] parameter(0)  n = f32[] constant(-inf)\n\
             ROOT m = f32[] reduce(x, n), dimensions={{0,1}}, to_apply=max }}\n"
        );
        assert!(!run_verified(&alone, run).0);
        // A bf16 sum rounds after every step: its order is part of the result.
        let bf16 = "HloModule m\nadd { a = bf16[] parameter(0)  b = bf16[] parameter(1)  ROOT s = bf16[] add(a, b) }\n\
             ENTRY e { x = bf16[64,32] parameter(0)  z = bf16[] constant(0)\n\
             s = bf16[64] reduce(x, z), dimensions={1}, to_apply=add\n\
             w = bf16[] reduce(x, z), dimensions={0,1}, to_apply=add\n\
             ROOT t = (bf16[64], bf16[]) tuple(s, w) }\n";
        assert!(!run_verified(bf16, run).0);
    }
}
