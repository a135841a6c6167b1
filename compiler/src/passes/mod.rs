//! Passes over HLO: one pass per file.

pub mod algebraic_simplifier;
pub mod batch_norm_expander;
pub mod buffer_assignment;
pub mod channel_order;
pub mod constant_folding;
mod constant_sums;
pub mod conv_taps;
pub mod cse;
pub mod dce;
mod divide_rewrites;
pub mod dynamic_padder;
pub mod expand_util;
pub mod fused_body;
pub mod fusion;
pub mod inline_calls;
pub mod layout_assignment;
pub mod multi_output;
pub mod pass;
pub mod producer_consumer_fusion;
pub mod reduction_splitting;
pub mod rng_expander;
pub mod row_fusion;
pub mod sharding_markers;
pub mod sibling_fusion;
#[cfg(test)]
mod test_util;
pub mod simplify_data_movement;
pub mod small_call_marks;
pub mod small_while;
pub mod topk_sorts;
pub mod transpose_folding;
pub mod trivial_reductions;
pub mod unfuse;
pub mod while_dead_init;
pub mod while_dead_state;
pub mod while_init_broadcasts;
pub mod while_licm;
