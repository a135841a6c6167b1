//! A packed once for every unit of a GEMM whose row blocks are split into panel ranges.
//!
//! With few rows (mlp_train's 256 x 1024 x 1024 dots: two row blocks, four panel ranges each
//! on two threads) every range packed its block's A again: four copies of A per k block, 4-5%
//! of the step's CPU time in packing A. Packed here instead, in the phase that packs B, split
//! into strips that the threads share out with B's panels. The packed words are the ones a
//! unit would have packed for itself (same layout, same copies), so the results are the same
//! bits.

use super::{ceil_div, pack_b_task, pack_operand, Plan};

/// Strips of one packed block (`mc` rows).
fn strips_per_block(p: &Plan) -> i64 {
    ceil_div(p.mc, p.g.mr)
}

/// Words of one packed block: `mc` rows of the first (deepest) k block.
fn block_words(p: &Plan) -> i64 {
    p.mc * p.depth
}

/// Bytes of the packed A of every batch, row block and k block.
pub(super) fn bytes(p: &Plan) -> usize {
    (p.g.batch * p.m_blocks * p.k_blocks * block_words(p) * 4) as usize
}

/// Packing units: one strip of one block (`mr x depth` words, a B panel's size in words
/// within a factor of three, so the threads' chunks stay about even).
pub(super) fn units(p: &Plan) -> i64 {
    p.g.batch * p.m_blocks * p.k_blocks * strips_per_block(p)
}

/// The packed block of batch `b`, row block `ib`, k block `pcb`.
///
/// # Safety
/// `p.ap_shared` is set and the indices are in range.
pub(super) unsafe fn block(p: &Plan, b: i64, ib: i64, pcb: i64) -> *mut u32 {
    let index = (b * p.m_blocks + ib) * p.k_blocks + pcb;
    unsafe { p.ap_shared.add((index * block_words(p)) as usize) }
}

/// Packing units `[u0, u1)`: B's panels first (as [`pack_b_task`] numbers them; none where the
/// units pack their own), then A's strips.
pub(super) unsafe extern "C" fn pack_task(ctx: *const *mut u8, u0: i64, u1: i64) {
    let p = unsafe { &*(ctx as *const Plan) };
    let b_units = p.shared_b_panels();
    if u0 < b_units {
        unsafe { pack_b_task(ctx, u0, u1.min(b_units)) };
    }
    for u in u0.max(b_units)..u1 {
        unsafe { pack_strip(p, u - b_units) };
    }
}

/// Strip `s % strips_per_block` of block `s / strips_per_block` (numbered as [`block`] does).
unsafe fn pack_strip(p: &Plan, s: i64) {
    let g = &p.g;
    let per_block = strips_per_block(p);
    let (index, is) = (s / per_block, s % per_block);
    let pcb = index % p.k_blocks;
    let ib = (index / p.k_blocks) % p.m_blocks;
    let b = index / (p.k_blocks * p.m_blocks);
    let r0 = ib * p.mc;
    let rows = (g.m - r0).min(p.mc);
    let first = is * g.mr;
    if first >= rows {
        return; // the last block's strips past A's rows
    }
    let pc = pcb * g.kc;
    let kcv = g.kc.min(g.k - pc);
    // As `run_unit` packs its block: strip `is` at `first * kcv` words.
    let dst = unsafe { block(p, b, ib, pcb).add((first * kcv) as usize) };
    let valid = (rows - first).min(g.mr);
    let offset = g.batch_offset(b, g.a_batch) + (r0 + first) * g.a_row;
    unsafe { pack_operand(p, g.a, offset, pc, g.a_row, g.a_col, dst, valid, kcv, g.mr) };
}
