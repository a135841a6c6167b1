//! Input projections out of scan loops: in a while body, a dot of one step's slice of a
//! loop-invariant stacked input with a loop-invariant matrix (`x_t @ W_x` of an RNN or LSTM)
//! does not depend on the carried state, so the products of all steps are one big dot computed
//! before the loop, and the body reads its step's rows of that result.
//!
//! Why: a step's small dot (an RNN's 1x32 by 32x64, an LSTM's 16x256 by 256x1024) runs on one
//! core at the speed of its loads, one step after the other; the whole stack's dot is a GEMM
//! with T times the rows that the packed path runs near the FMA peak on every core. What stays
//! in the loop (`h_t @ W_h` and the elementwise gates) is the serial part only.
//!
//! The rule, for a dot in the body of a loop known to run N times (`while_dead_init`'s counted
//! loop: a counter from 0 by 1 while `counter < N`):
//! - one operand is `reshape(dynamic-slice(X, ...))` where `X` is a state element the body
//!   passes through unchanged, the dynamic-slice takes all of `X` but one row (size 1) of one
//!   dimension `d`, and the reshape only drops that unit dimension;
//! - the other operand is a state element the body passes through unchanged.
//!
//! Then `dot(reshape(ds(X, s)), W)` is `reshape(ds(dot(X, W), s'))`, where `dot(X, W)` has
//! `X`'s dimension `d` as one more free dimension and `s'` starts at the same index in it and
//! at 0 elsewhere. The start index clamps the same way in both (both sliced dimensions have
//! X's size), and each output element is the same sum of the same products, so the values are
//! XLA's up to the order the GEMM adds them in, as for any dot. The big dot is hoisted through
//! `while_licm`, carried as a new state element.
//!
//! Only where it pays: the loop runs at least as many times as `X` has rows in `d` (a scan over
//! its input: every row of the hoisted result is used, no work is added), and the hoisted
//! result fits in [`MAX_HOISTED_BYTES`] (it lives through the whole loop). Runs after
//! `while_licm`, which makes the scaled weights (`W * 0.25`) invariant state elements.
//!
//! Steps of one row (a vector-matrix product, an RNN of batch 1) are hoisted too. In the loop
//! the step's dot shares the core's FMA pipes with the serial `h @ W_h` chain; hoisted, its
//! products run as one GEMM that the thread pool splits. Measured on rnn_scan_1000x64_b1 (Zen
//! 4, best of 500 runs, alternating): one thread 148 us either way, two threads 146 us in the
//! loop against 128 us hoisted.

use super::while_dead_init::counted_loop;
use super::while_licm::{hoist, invariant_elements};
use crate::error::Result;
use crate::hlo::{CompId, Computation, InstrId, Instruction, Module, Opcode};
use hlojit_runtime::{ArrayLiteral, Literal, Shape};
use std::collections::HashMap;

/// The largest hoisted dot result: it stays allocated while the loop runs, and a result much
/// bigger than the last-level cache is written and read back from memory.
const MAX_HOISTED_BYTES: i64 = 32 << 20;

pub struct WhileInputProjection;

impl super::pass::Pass for WhileInputProjection {
    fn name(&self) -> &'static str {
        "while-input-projection"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        let mut changed = false;
        for c in module.computation_post_order() {
            let whiles = module.computation(c).ids_of(Opcode::While);
            for w in whiles {
                // One dot at a time: each hoist renumbers the body.
                while project_one(module, c, w)? {
                    changed = true;
                }
            }
        }
        Ok(changed)
    }
}

/// A dot of the body that qualifies: the dot, which operand is the slice, the stacked input
/// `X` (a get-tuple-element of the body), the dynamic-slice and its sliced dimension.
struct Candidate {
    dot: InstrId,
    slice_operand: usize,
    stack: InstrId,
    slice: InstrId,
    dim: usize,
}

/// Projects one qualifying dot of while `w`'s body out of the loop; returns whether it did.
fn project_one(module: &mut Module, c: CompId, w: InstrId) -> Result<bool> {
    let winst = module.computation(c).get(w).clone();
    let (Some(cond_id), Some(body_id)) = (winst.while_condition(), winst.while_body()) else { return Ok(false) };
    let caller = module.computation(c);
    let init = caller.get(winst.operands[0]);
    if init.opcode != Opcode::Tuple {
        return Ok(false);
    }
    let Some((_, trips)) = counted_loop(caller, init, module.computation(cond_id), module.computation(body_id)) else {
        return Ok(false);
    };
    let body = module.computation(body_id);
    let invariant = invariant_elements(body);
    let Some(cand) = body.ids().find_map(|id| candidate(body, id, &invariant, trips)) else { return Ok(false) };

    // Rewrite the body to compute the whole stack's dot and slice it, then hoist that dot. If
    // the loop refuses hoisting (a shared body, say), the module goes back as it was: the big
    // dot must never run on every step.
    let saved = module.clone();
    let big = rewrite(module.computation_mut(body_id), &cand);
    let callers = module.caller_counts();
    let pick = move |_: &Computation, _: &HashMap<InstrId, usize>| vec![big];
    if hoist(module, c, w, &callers, &pick)? {
        Ok(true)
    } else {
        *module = saved;
        Ok(false)
    }
}

/// Whether dot `id` qualifies (see the module comment), and how.
fn candidate(body: &Computation, id: InstrId, invariant: &HashMap<InstrId, usize>, trips: i64) -> Option<Candidate> {
    let dot = body.get(id);
    if dot.opcode != Opcode::Dot || !dot.shape.is_array() {
        return None;
    }
    (0..2).find_map(|k| {
        let other = dot.operands[1 - k];
        if !invariant.contains_key(&other) {
            return None;
        }
        let reshape = body.get(dot.operands[k]);
        if reshape.opcode != Opcode::Reshape {
            return None;
        }
        let slice = body.get(reshape.operands[0]);
        if slice.opcode != Opcode::DynamicSlice || !invariant.contains_key(&slice.operands[0]) {
            return None;
        }
        let stack = slice.operands[0];
        let full = body.get(stack).shape.dims();
        let sizes = slice.attrs.slice_sizes.as_deref()?;
        // All of X but one row of one dimension, and the reshape drops just that dimension.
        let cut: Vec<usize> = (0..full.len()).filter(|&i| sizes[i] != full[i]).collect();
        let [dim] = cut.as_slice() else { return None };
        let mut dropped = full.to_vec();
        dropped.remove(*dim);
        if sizes[*dim] != 1 || reshape.shape.dims() != dropped.as_slice() || trips < full[*dim] {
            return None;
        }
        let rows = full[*dim];
        let bytes = dot.shape.dims().iter().product::<i64>().saturating_mul(rows).saturating_mul(dot.shape.element_type()?.byte_size() as i64);
        (bytes <= MAX_HOISTED_BYTES).then_some(Candidate { dot: id, slice_operand: k, stack, slice: reshape.operands[0], dim: *dim })
    })
}

/// Adds `dot(X, W)` to the body and replaces the dot by `reshape(dynamic-slice(dot(X, W)))`;
/// returns the new big dot (invariant: its operands are state elements passed through).
fn rewrite(body: &mut Computation, cand: &Candidate) -> InstrId {
    let dot = body.get(cand.dot).clone();
    let dims = dot.attrs.dot_dims.clone().unwrap_or_default();
    let d = cand.dim as i64;
    // Dimension j of the slice's reshape is X's dimension j, or j + 1 from `d` on.
    let widen = |v: &[i64]| v.iter().map(|&j| if j >= d { j + 1 } else { j }).collect::<Vec<i64>>();
    let mut big_dims = dims.clone();
    let (batch, contracting) = if cand.slice_operand == 0 {
        (widen(&dims.lhs_batch), widen(&dims.lhs_contracting))
    } else {
        (widen(&dims.rhs_batch), widen(&dims.rhs_contracting))
    };
    if cand.slice_operand == 0 {
        (big_dims.lhs_batch, big_dims.lhs_contracting) = (batch.clone(), contracting.clone());
    } else {
        (big_dims.rhs_batch, big_dims.rhs_contracting) = (batch.clone(), contracting.clone());
    }
    // Where X's dimension d lands in the result: after the batch dimensions, the lhs's free
    // dimensions (when X is the rhs), and X's free dimensions before d.
    let rank = |id: InstrId| body.get(id).shape.dims().len() as i64;
    let free_before_d = (0..d).filter(|j| !batch.contains(j) && !contracting.contains(j)).count();
    let lhs_free = if cand.slice_operand == 1 { rank(dot.operands[0]) as usize - dims.lhs_batch.len() - dims.lhs_contracting.len() } else { 0 };
    let at = dims.lhs_batch.len() + lhs_free + free_before_d;
    let rows = body.get(cand.stack).shape.dims()[cand.dim];
    let ty = dot.shape.element_type().expect("array dot");
    let mut big_shape_dims = dot.shape.dims().to_vec();
    big_shape_dims.insert(at, rows);
    let big_shape = Shape::array_row_major(ty, big_shape_dims.clone());

    let mut operands = dot.operands.clone();
    operands[cand.slice_operand] = cand.stack;
    let mut big = Instruction::new(format!("{}.projected", dot.name), Opcode::Dot, big_shape, operands);
    big.attrs = dot.attrs.clone();
    big.attrs.dot_dims = Some(big_dims);
    let big = body.add(big);

    // The step's rows: the slice's start index in dimension `at`, 0 in the others.
    let slice = body.get(cand.slice).clone();
    let start = slice.operands[1 + cand.dim];
    let index_type = body.get(start).shape.element_type().expect("scalar index");
    let mut zero = Instruction::new(format!("{}.zero", dot.name), Opcode::Constant, Shape::scalar(index_type), vec![]);
    zero.attrs.literal = Some(Literal::Array(ArrayLiteral::zeros(index_type, &[])));
    let zero = body.add(zero);
    let mut starts = vec![zero; big_shape_dims.len()];
    starts[at] = start;
    let mut sizes = big_shape_dims.clone();
    sizes[at] = 1;
    let mut step_shape_dims = dot.shape.dims().to_vec();
    step_shape_dims.insert(at, 1);
    let mut ds = Instruction::new(format!("{}.step", dot.name), Opcode::DynamicSlice, Shape::array_row_major(ty, step_shape_dims), [vec![big], starts].concat());
    ds.attrs.slice_sizes = Some(sizes);
    let ds = body.add(ds);
    let rows_of_step = body.add(Instruction::new(format!("{}.rows", dot.name), Opcode::Reshape, dot.shape.clone(), vec![ds]));
    body.replace_all_uses(cand.dot, rows_of_step);
    big
}

#[cfg(test)]
#[path = "while_input_projection_tests.rs"]
mod tests;
