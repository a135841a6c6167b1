//! Dot row epilogue fusion: a large f32 dot whose only user is a row loop over its result (a
//! softmax over its columns: attention's `softmax(q k^T / sqrt(d) + mask)`, after row fusion
//! has put the row's max and sum into the loop) becomes one `kOutput` fusion rooted at that
//! loop, the dot inside, as `dot_epilogue_fusion` does for elementwise loops.
//!
//! The GEMM then finishes whole rows of its result while they are still in cache: each block of
//! rows, once its every column is final, goes through the row loop (`codegen/emitters/
//! dot_epilogue.rs`). Apart, the scores went to memory, the softmax read them back and wrote
//! the probabilities: transformer_block's 8 x 512 x 512 scores were 8 MiB each way.
//! XLA:CPU keeps the two apart; the values are the same: each row goes through the same
//! generated row code, in the same order, from the dot's finished f32 elements.
//!
//! Only where the loop reads the dot inside the row it computes and its rows are the dot's
//! batch and row dimensions, its columns those of the dot's right-hand side (a reduction over
//! them is what needs the whole row), and the dot runs on the GEMM engine, whose regions can
//! be whole rows (`dot_epilogue::row_epilogue`). Runs after row fusion, which makes the loop.

use super::dot_epilogue_fusion::{fuse_accepted, same_array_shape};
use crate::codegen::emitters::dot_epilogue::{dot_dims, row_epilogue};
use crate::error::Result;
use crate::hlo::{Computation, FusionKind, InstrId, Module};

/// Whether `user` is a row loop fusion that can finish whole rows of `dot` in place.
fn is_row_epilogue(module: &Module, comp: &Computation, dot: InstrId, user: InstrId) -> bool {
    let u = comp.get(user);
    let positions: Vec<usize> = u.operands.iter().enumerate().filter(|&(_, &o)| o == dot).map(|(k, _)| k).collect();
    let (Some(f), &[position]) = (u.fused_computation(), positions.as_slice()) else { return false };
    if u.attrs.fusion_kind != Some(FusionKind::Loop) || !u.control_predecessors.is_empty() || !same_array_shape(&u.shape, &comp.get(dot).shape) {
        return false;
    }
    let body = module.computation(f);
    let Some(&param) = body.parameters().get(position) else { return false };
    let Some(d) = dot_dims(comp, dot) else { return false };
    same_array_shape(&body.get(body.root).shape, &u.shape) && row_epilogue(body, param, &d).is_some()
}

/// Fuses dot row epilogues (see the module documentation).
pub struct DotRowEpilogueFusion;

impl super::pass::Pass for DotRowEpilogueFusion {
    fn name(&self) -> &'static str {
        "dot-row-epilogue-fusion"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        fuse_accepted(module, is_row_epilogue)
    }
}
