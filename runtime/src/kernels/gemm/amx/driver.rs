//! The AMX GEMM, generic over the tile unit (the hardware, or the model in tests and in the
//! probe): `C[b] (=) A[b] x B[b]` for bf16 operands into f32 or s8 operands into s32, as the
//! AVX-512 word kernels compute it (descriptor, k blocks, units shared out to the threads,
//! epilogue regions), with tile products for micro-kernels.
//!
//! Blocking (chosen by reasoning, not yet measured on a Xeon): C in blocks of 32 rows x 32
//! columns, four 16 x 16 accumulator tiles (tmm4-7) held over a k block; per k step of 16
//! words (32 bf16 or 64 s8 elements) two A tiles (tmm0-1, 16 rows each) and two B tiles
//! (tmm2-3, 16 columns each), four products. B is packed as the word kernels pack it for
//! 32-column panels: row `kk` of a panel is 32 words (128 bytes), so its two tiles lie 64
//! bytes apart with a 128-byte stride. A is packed per block of rows into whole tiles, 1 KiB
//! each (16 rows of one k step, 64 bytes apart). k is padded with zero words to whole steps
//! in both, and rows of A past M with zero rows: every product is of finite packed values.
//! The first k block starts from zero tiles, later ones load C (through a small buffer at the
//! edges of C, whose rows and columns need not fill a tile).

use super::super::{block_rows, bf16_pack, ceil_div, int8_quads, pack_pairs, share_units, GemmF32, Scratch, PARALLEL_MIN_FLOPS};
use super::unit::{palette1, TileConfig, TileUnit};
use crate::custom_call::last_error::set_failure as set_last_error;
use crate::symbols::{hlojit_rt_num_threads, hlojit_rt_parallel_for, ALLOCATION_FAILURE};
use std::sync::atomic::{AtomicBool, Ordering};

/// The operand types a tile product takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// bf16 x bf16 -> f32 (TDPBF16PS): pairs of k-adjacent elements per word.
    Bf16,
    /// s8 x s8 -> s32 (TDPBSSD): quads per word.
    S8,
}

impl Kind {
    fn per_word(self) -> i64 {
        match self {
            Kind::Bf16 => 2,
            Kind::S8 => 4,
        }
    }

    fn element_bytes(self) -> i64 {
        4 / self.per_word()
    }
}

/// Words of k per tile product: B tiles of 16 rows, A tiles of 64 bytes per row.
const STEP: i64 = 16;
/// Rows and columns of C per block of four accumulator tiles.
const STRIP: i64 = 32;
const PANEL: i64 = 32;
/// Words of one packed A tile.
const A_TILE_WORDS: i64 = 16 * STEP;

/// Every tile 16 rows of 64 bytes.
fn config() -> TileConfig {
    palette1([(16, 64); 8])
}

pub(crate) struct Plan {
    g: GemmF32,
    kind: Kind,
    /// k in words, and words per k block (a multiple of [`STEP`]).
    words: i64,
    kc: i64,
    k_blocks: i64,
    /// Words of the deepest packed k block (padded to whole steps).
    depth: i64,
    panels: i64,
    /// Rows of an A block (a multiple of [`STRIP`]), blocks per batch, panel ranges per block.
    mc: i64,
    m_blocks: i64,
    n_parts: i64,
    /// Packed B: `[batch][k block][panel]` panels of `depth x 32` words.
    bp: *mut u32,
    failed: AtomicBool,
}

impl Plan {
    fn panel_words(&self) -> i64 {
        self.depth * PANEL
    }

    /// Words of k block `pcb`, and those padded to whole steps.
    fn block_words(&self, pcb: i64) -> (i64, i64) {
        let words = self.kc.min(self.words - pcb * self.kc);
        (words, ceil_div(words, STEP) * STEP)
    }

    /// Operand elements of k block `pcb`.
    fn elements(&self, pcb: i64) -> i64 {
        let per = self.kind.per_word();
        (self.g.k - per * pcb * self.kc).min(per * self.kc)
    }
}

/// The GEMM on tile units `U` (one per thread and task), k blocks of `kc_words` words
/// (rounded down to whole steps); 0 on success, 1 with this thread's last error set when
/// scratch memory cannot be had.
///
/// # Safety
/// `g` describes valid operands (bf16 or s8 as `kind` says) and result (f32 or s32); the tile
/// unit can run (the hardware: `hardware::unusable_because` said nothing and the probe passed).
pub(crate) unsafe fn gemm_on<U: TileUnit + Default>(g: &GemmF32, kind: Kind, kc_words: i64) -> i32 {
    if !g.batches_numbered() {
        return 1;
    }
    let words = ceil_div(g.k, kind.per_word());
    if g.batch <= 0 || g.m <= 0 || g.n <= 0 || words <= 0 {
        // No k blocks: the word kernels store nothing either.
        return 0;
    }
    let kc = (kc_words / STEP * STEP).max(STEP);
    let depth = kc.min(ceil_div(words, STEP) * STEP);
    let mut plan = Plan { g: *g, kind, words, kc, k_blocks: ceil_div(words, kc), depth, panels: ceil_div(g.n, PANEL), mc: 0, m_blocks: 0, n_parts: 1, bp: std::ptr::null_mut(), failed: AtomicBool::new(false) };
    plan.mc = block_rows(STRIP, depth, g.m);
    plan.m_blocks = ceil_div(g.m, plan.mc);
    let Some(bp) = Scratch::new((g.batch * plan.k_blocks * plan.panels * plan.panel_words() * 4) as usize) else { return 1 };
    plan.bp = bp.ptr as *mut u32;
    let pack_units = g.batch * plan.k_blocks * plan.panels;
    let flops = 2.0 * g.batch as f64 * g.m as f64 * g.n as f64 * g.k as f64;
    let threads = hlojit_rt_num_threads();
    if flops < PARALLEL_MIN_FLOPS || threads == 1 {
        let ctx = &plan as *const Plan as *const *mut u8;
        unsafe { pack_b_task(ctx, 0, pack_units) };
        return unsafe { run_units::<U>(&plan, 0, g.batch * plan.m_blocks) };
    }
    let share = share_units(ceil_div(g.m, STRIP), plan.mc / STRIP, g.batch, g.splittable_panels(plan.panels), threads);
    plan.mc = share.strips * STRIP;
    plan.m_blocks = ceil_div(g.m, plan.mc);
    plan.n_parts = share.n_parts;
    let ctx = &plan as *const Plan as *const *mut u8;
    unsafe { hlojit_rt_parallel_for(pack_b_task, ctx, pack_units, 1) };
    unsafe { hlojit_rt_parallel_for(unit_task::<U>, ctx, g.batch * plan.m_blocks * plan.n_parts, 1) };
    if plan.failed.load(Ordering::Relaxed) {
        set_last_error(format!("{ALLOCATION_FAILURE} temporary memory for a matrix product"));
        return 1;
    }
    0
}

/// Packs B panels `[u0, u1)` (numbered batch, k block, panel), zero words past each block's
/// elements up to its padded depth.
unsafe extern "C" fn pack_b_task(ctx: *const *mut u8, u0: i64, u1: i64) {
    let p = unsafe { &*(ctx as *const Plan) };
    let g = &p.g;
    let per = p.kind.per_word();
    for u in u0..u1 {
        let (b, rest) = (u / (p.k_blocks * p.panels), u % (p.k_blocks * p.panels));
        let (pcb, js) = (rest / p.panels, rest % p.panels);
        let (first, k0) = (js * PANEL, per * pcb * p.kc);
        let valid = (g.n - first).min(PANEL);
        let elements = p.elements(pcb);
        let dst = unsafe { p.bp.add((u * p.panel_words()) as usize) };
        // Strip rows are B's columns.
        let offset = (g.batch_offset(b, g.b_batch) + first * g.b_col + k0 * g.b_row) as isize;
        match p.kind {
            #[cfg(target_arch = "x86_64")]
            Kind::Bf16 if g.b_col == 1 && avx512bw() => unsafe { bf16_pack::pair_panels_by_rows((g.b as *const u16).offset(offset), g.b_row, dst, p.panel_words(), valid, 1, elements, PANEL) },
            Kind::Bf16 => unsafe { pack_pairs((g.b as *const u16).offset(offset), g.b_col, g.b_row, dst, valid, elements, PANEL) },
            Kind::S8 => unsafe { int8_quads::pack((g.b as *const i8).offset(offset), g.b_col, g.b_row, dst, valid, elements, PANEL, 0) },
        }
        let (filled, padded) = (ceil_div(elements, per), p.block_words(pcb).1);
        let tail = unsafe { std::slice::from_raw_parts_mut(dst.add((filled * PANEL) as usize), ((padded - filled) * PANEL) as usize) };
        tail.fill(0);
    }
}

/// Whether the row-major bf16 B packing (AVX-512BW) may run: always on AMX hosts, not
/// necessarily where the model runs.
#[cfg(target_arch = "x86_64")]
fn avx512bw() -> bool {
    std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512bw")
}

unsafe extern "C" fn unit_task<U: TileUnit + Default>(ctx: *const *mut u8, u0: i64, u1: i64) {
    let p = unsafe { &*(ctx as *const Plan) };
    if unsafe { run_units::<U>(p, u0, u1) } != 0 {
        p.failed.store(true, Ordering::Relaxed);
    }
}

/// Work units `[u0, u1)` (batch, row block, panel range) on one tile unit, configured for them
/// and released after.
unsafe fn run_units<U: TileUnit + Default>(p: &Plan, u0: i64, u1: i64) -> i32 {
    let Some(ap) = Scratch::new((p.mc * p.depth * 4) as usize) else { return 1 };
    let ap = ap.ptr as *mut u32;
    let mut unit = U::default();
    unsafe { unit.configure(&config()) };
    let per_batch = p.m_blocks * p.n_parts;
    for u in u0..u1 {
        let (b, rest) = (u / per_batch, u % per_batch);
        let (ib, part) = (rest / p.n_parts, rest % p.n_parts);
        let r0 = ib * p.mc;
        let r1 = (r0 + p.mc).min(p.g.m);
        let (j0, j1) = (part * p.panels / p.n_parts, (part + 1) * p.panels / p.n_parts);
        unsafe { run_unit(&mut unit, p, ap, b, r0, r1, j0, j1) };
    }
    unsafe { unit.release() };
    0
}

/// Rows `[r0, r1)` of batch `b` times B panels `[j0, j1)`: per k block the rows' A is packed
/// once, then each panel meets every 32-row strip; the epilogue gets each panel's columns of
/// the rows after the last k block.
#[allow(clippy::too_many_arguments)]
unsafe fn run_unit<U: TileUnit>(unit: &mut U, p: &Plan, ap: *mut u32, b: i64, r0: i64, r1: i64, j0: i64, j1: i64) {
    let g = &p.g;
    for pcb in 0..p.k_blocks {
        let steps = p.block_words(pcb).1 / STEP;
        unsafe { pack_a(p, ap, b, r0, r1, pcb, steps) };
        let last = pcb + 1 == p.k_blocks;
        for js in j0..j1 {
            let panel = unsafe { p.bp.add((((b * p.k_blocks + pcb) * p.panels + js) * p.panel_words()) as usize) };
            for is in 0..ceil_div(r1 - r0, STRIP) {
                let block = CBlock { b, row: r0 + is * STRIP, rows_end: r1, col: js * PANEL, accumulate: pcb > 0 };
                let a = unsafe { ap.add((2 * is * steps * A_TILE_WORDS) as usize) };
                match p.kind {
                    Kind::Bf16 => unsafe { block_product::<U, false>(unit, g, &block, a, panel, steps) },
                    Kind::S8 => unsafe { block_product::<U, true>(unit, g, &block, a, panel, steps) },
                }
            }
            if last {
                let first = js * PANEL;
                unsafe { g.finish(b, r0, r1, first, (first + PANEL).min(g.n)) };
            }
        }
    }
}

/// Packs rows `[r0, r1)` of batch `b`'s A, k block `pcb`, as whole tiles: tile `(t, s)` (rows
/// `16t..16t + 16` of the block, k step `s`) at word `(t * steps + s) * 256`, a row's 16 words
/// 64 bytes after the previous row's; its bytes are the row's elements in k order (pairs and
/// quads low element first), zero past the block's elements and in rows past `r1`, up to
/// whole 32-row strips.
unsafe fn pack_a(p: &Plan, ap: *mut u32, b: i64, r0: i64, r1: i64, pcb: i64, steps: i64) {
    let g = &p.g;
    let size = p.kind.element_bytes() as usize;
    let elements = p.elements(pcb);
    let per_step = STEP * p.kind.per_word();
    let rows = ceil_div(r1 - r0, STRIP) * STRIP;
    for i in 0..rows {
        let src = (g.batch_offset(b, g.a_batch) + (r0 + i) * g.a_row + p.kind.per_word() * pcb * p.kc * g.a_col) * size as i64;
        let src = (g.a as *const u8).wrapping_offset(src as isize);
        for s in 0..steps {
            let word = ((i / 16 * steps + s) * A_TILE_WORDS + i % 16 * STEP) as usize;
            let dst = unsafe { std::slice::from_raw_parts_mut(ap.add(word) as *mut u8, 4 * STEP as usize) };
            let e0 = s * per_step;
            let count = if r0 + i < r1 { (elements - e0).clamp(0, per_step) as usize } else { 0 };
            if g.a_col == 1 {
                let from = unsafe { std::slice::from_raw_parts(src.wrapping_add(e0 as usize * size), count * size) };
                dst[..count * size].copy_from_slice(from);
            } else {
                for e in 0..count {
                    let at = src.wrapping_offset(((e0 + e as i64) * g.a_col * size as i64) as isize);
                    let from = unsafe { std::slice::from_raw_parts(at, size) };
                    dst[e * size..(e + 1) * size].copy_from_slice(from);
                }
            }
            dst[count * size..].fill(0);
        }
    }
}

/// A 32 x 32 block of C: batch, first row, end of the unit's rows, first column, and whether
/// earlier k blocks left sums in it.
struct CBlock {
    b: i64,
    row: i64,
    rows_end: i64,
    col: i64,
    accumulate: bool,
}

/// One k block of a C block: its four tiles from zero or from C, `steps` products of the two
/// A tiles (`a`: packed tiles, the second strip's `steps` tiles later) and the panel's two B
/// tiles, stored back.
unsafe fn block_product<U: TileUnit, const S8: bool>(u: &mut U, g: &GemmF32, c: &CBlock, a: *const u32, panel: *const u32, steps: i64) {
    unsafe {
        c_in::<U, 4>(u, g, c, 0, 0);
        c_in::<U, 5>(u, g, c, 0, 16);
        c_in::<U, 6>(u, g, c, 16, 0);
        c_in::<U, 7>(u, g, c, 16, 16);
        let a1 = a.add((steps * A_TILE_WORDS) as usize);
        for s in 0..steps as usize {
            let tile = s * A_TILE_WORDS as usize;
            u.load::<0>(a.add(tile) as *const u8, 64);
            u.load::<1>(a1.add(tile) as *const u8, 64);
            let b = panel.add(s * (STEP * PANEL) as usize) as *const u8;
            u.load::<2>(b, 128);
            u.load::<3>(b.add(64), 128);
            if S8 {
                u.dot_s8::<4, 0, 2>();
                u.dot_s8::<5, 0, 3>();
                u.dot_s8::<6, 1, 2>();
                u.dot_s8::<7, 1, 3>();
            } else {
                u.dot_bf16::<4, 0, 2>();
                u.dot_bf16::<5, 0, 3>();
                u.dot_bf16::<6, 1, 2>();
                u.dot_bf16::<7, 1, 3>();
            }
        }
        c_out::<U, 4>(u, g, c, 0, 0);
        c_out::<U, 5>(u, g, c, 0, 16);
        c_out::<U, 6>(u, g, c, 16, 0);
        c_out::<U, 7>(u, g, c, 16, 16);
    }
}

/// The valid rows and columns of the 16 x 16 tile at `(dr, dc)` in the block, and its first
/// element (as a 4-byte word) when it has any.
fn c_tile(g: &GemmF32, c: &CBlock, dr: i64, dc: i64) -> (usize, usize, *mut u32) {
    let (row, col) = (c.row + dr, c.col + dc);
    let rows = (c.rows_end - row).clamp(0, 16) as usize;
    let cols = (g.n - col).clamp(0, 16) as usize;
    let at = (g.c as *mut u32).wrapping_offset((g.batch_offset(c.b, g.c_batch) + row * g.c_row + col) as isize);
    (rows, cols, at)
}

/// Accumulator tile `T`: zero, or C's values (an edge tile through a zero-padded buffer).
unsafe fn c_in<U: TileUnit, const T: u8>(u: &mut U, g: &GemmF32, c: &CBlock, dr: i64, dc: i64) {
    let (rows, cols, at) = c_tile(g, c, dr, dc);
    let stride = g.c_row as usize * 4;
    unsafe {
        if !c.accumulate || rows == 0 || cols == 0 {
            u.zero::<T>();
        } else if rows == 16 && cols == 16 {
            u.load::<T>(at as *const u8, stride);
        } else {
            let mut buf = [0u32; 256];
            for r in 0..rows {
                buf[16 * r..16 * r + cols].copy_from_slice(std::slice::from_raw_parts(at.add(r * g.c_row as usize), cols));
            }
            u.load::<T>(buf.as_ptr() as *const u8, 64);
        }
    }
}

/// Stores accumulator tile `T`'s valid rows and columns to C.
unsafe fn c_out<U: TileUnit, const T: u8>(u: &mut U, g: &GemmF32, c: &CBlock, dr: i64, dc: i64) {
    let (rows, cols, at) = c_tile(g, c, dr, dc);
    unsafe {
        if rows == 16 && cols == 16 {
            u.store::<T>(at as *mut u8, g.c_row as usize * 4);
        } else if rows > 0 && cols > 0 {
            let mut buf = [0u32; 256];
            u.store::<T>(buf.as_mut_ptr() as *mut u8, 64);
            for r in 0..rows {
                std::slice::from_raw_parts_mut(at.add(r * g.c_row as usize), cols).copy_from_slice(&buf[16 * r..16 * r + cols]);
            }
        }
    }
}
