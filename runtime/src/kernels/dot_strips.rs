//! f32 dots with few result rows (a recurrent step's batch times its weights, a batch-1
//! layer), precompiled for AVX2 + FMA and AVX-512: every row of A against one strip of B's
//! columns at once, the strip's sums of a block of rows in registers while the contracting
//! dimension streams by, B read where it lies (never packed). The compiler's
//! `codegen/emitters/dot_strips.rs` calls these from its kernel task with a range of units
//! (a unit: one strip of one batch), so the thread pool splits them as before.
//!
//! Each result element is its products summed in contracting order from +0 with one fused
//! multiply-add each: exactly what the generated strip kernel computes, whatever the register
//! block, so the block is chosen here for this code alone.
//!
//! Why precompiled: generated, the strip kernel of an LSTM step (16 x 256 x 1024) was about
//! 30 ms of LLVM's time per module, 40% of the whole compile.

use super::gemm::BatchStrides;
#[cfg(target_arch = "x86_64")]
use super::simd::Simd;

/// The descriptor (all fields 64-bit; strides in elements).
#[repr(C)]
pub struct DotStripsF32 {
    pub batch: i64,
    /// Batches per outer batch, as the GEMM's `batch_inner` (attention's batch x heads, whose
    /// operands keep the heads between sequence and features); 1 where one stride walks them.
    pub batch_inner: i64,
    pub m: i64,
    pub n: i64,
    pub k: i64,
    /// A: `m x k` per batch, any strides.
    pub a: i64,
    pub a_batch: BatchStrides,
    pub a_row: i64,
    pub a_col: i64,
    /// B: `k x n` per batch, columns contiguous.
    pub b: i64,
    pub b_batch: BatchStrides,
    pub b_row: i64,
    /// The result: `m x n` per batch, columns contiguous.
    pub c: i64,
    pub c_batch: BatchStrides,
    pub c_row: i64,
    /// [`strip_block`] for these `m`, `n` and the kernel's lanes (computed once, by the
    /// caller: a small dot in a loop has no time to spare for it on every call).
    pub block_rows: i64,
    pub block_vectors: i64,
}

/// Rows whose sums are held at once and vectors of columns per strip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StripBlock {
    pub rows: i64,
    pub vectors: i64,
}

/// Most rows in a block and vectors in a strip the kernels are built for (one row takes up to
/// [`MAX_ROW_VECTORS`]: its B vectors are memory operands).
const MAX_ROWS: i64 = 8;
const MAX_VECTORS: i64 = 4;
const MAX_ROW_VECTORS: i64 = 8;

/// The block for `m` rows of `n` columns with vectors of `lanes` f32: the fewest loads per
/// multiply-add over all rows (a last, partial block loads B again) with the sums, B's vectors
/// (when more than one row reuses them) and a broadcast in registers (16 with AVX2, 32 with
/// AVX-512), one spare; ties go to the wider block.
pub fn strip_block(m: i64, n: i64, lanes: i64) -> StripBlock {
    let usable = if lanes >= 16 { 31 } else { 15 };
    let column_vectors = ((n + lanes - 1) / lanes).max(1);
    let m = m.max(1);
    let mut best = StripBlock { rows: 1, vectors: 1 };
    let mut best_cost = f64::INFINITY;
    for rows in 1..=m.min(MAX_ROWS) {
        let most = if rows == 1 { MAX_ROW_VECTORS } else { MAX_VECTORS };
        for vectors in 1..=column_vectors.min(most) {
            let held_b = if rows > 1 { vectors } else { 0 };
            if rows * vectors + held_b + 1 > usable {
                break;
            }
            let blocks = (m + rows - 1) / rows;
            let cost = (blocks * vectors + m) as f64 / (m * vectors) as f64;
            if cost < best_cost - 1e-9 || (cost <= best_cost + 1e-9 && rows * vectors > best.rows * best.vectors) {
                best = StripBlock { rows, vectors };
                best_cost = cost;
            }
        }
    }
    best
}

/// Units of work of a dot (`batch` strips of [`strip_block`]'s width each): what the caller
/// splits across threads.
pub fn strip_units(batch: i64, m: i64, n: i64, lanes: i64) -> i64 {
    let width = strip_block(m, n, lanes).vectors * lanes;
    batch * ((n + width - 1) / width)
}

/// Units `begin..end` of the dot with 8-lane vectors.
///
/// # Safety
/// `desc` points to a valid descriptor whose buffers hold what it says; `0 <= begin <= end <=`
/// [`strip_units`]; the CPU has AVX2 and FMA.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_dot_strips_f32_avx2(desc: *const DotStripsF32, begin: i64, end: i64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as this function's contract.
    unsafe {
        isa::avx2::run(&*desc, begin, end)
    };
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (desc, begin, end);
        unreachable!("the compiler selects the strip kernels for x86-64 targets only");
    }
}

/// [`hlojit_rt_dot_strips_f32_avx2`] with 16-lane vectors.
///
/// # Safety
/// As [`hlojit_rt_dot_strips_f32_avx2`]; the CPU has AVX-512F, AVX2 and FMA.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_dot_strips_f32_avx512(desc: *const DotStripsF32, begin: i64, end: i64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as this function's contract.
    unsafe {
        isa::avx512::run(&*desc, begin, end)
    };
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (desc, begin, end);
        unreachable!("the compiler selects the strip kernels for x86-64 targets only");
    }
}

/// Where one block's operands start, and the strides it steps by.
#[cfg(target_arch = "x86_64")]
struct Block {
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    k: i64,
    a_row: isize,
    a_col: isize,
    b_row: isize,
    c_row: isize,
}

/// Units `begin..end` of `d`, each block run by `run_block(block, rows, vectors, tail)`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn units(d: &DotStripsF32, begin: i64, end: i64, lanes: i64, run_block: impl Fn(&Block, i64, i64, usize)) {
    let width = d.block_vectors * lanes;
    let strips = (d.n + width - 1) / width;
    // Generated code passes at least 1; a division by zero must not abort the process.
    let batch_inner = d.batch_inner.max(1);
    for unit in begin..end {
        let (batch, j0) = (unit / strips, unit % strips * width);
        let columns = (d.n - j0).min(width);
        let vectors = (columns + lanes - 1) / lanes;
        let tail = (columns % lanes) as usize;
        // The batch's offsets once per unit (a division each), not per row block.
        let (a_batch, b_batch, c_batch) = (d.a_batch.offset(batch, batch_inner), d.b_batch.offset(batch, batch_inner), d.c_batch.offset(batch, batch_inner));
        let mut r0 = 0;
        while r0 < d.m {
            let rows = d.block_rows.min(d.m - r0);
            let at = |base: i64, offset: i64| (base as *mut f32).wrapping_offset(offset as isize);
            let p = Block {
                a: at(d.a, a_batch + r0 * d.a_row),
                b: at(d.b, b_batch + j0),
                c: at(d.c, c_batch + r0 * d.c_row + j0),
                k: d.k,
                a_row: d.a_row as isize,
                a_col: d.a_col as isize,
                b_row: d.b_row as isize,
                c_row: d.c_row as isize,
            };
            run_block(&p, rows, vectors, tail);
            r0 += rows;
        }
    }
}

/// Calls `$f::<R, W, MASKED>` for the block of `rows` x `vectors` ([`strip_block`]'s, or a
/// smaller last one); `tail` non-zero: the last vector has only that many columns.
#[cfg(target_arch = "x86_64")]
macro_rules! dispatch {
    ($f:ident, $p:expr, $rows:expr, $vectors:expr, $tail:expr) => {
        dispatch!(@arms $f, $p, $rows, $vectors, $tail;
            (1, 1), (1, 2), (1, 3), (1, 4), (1, 5), (1, 6), (1, 7), (1, 8),
            (2, 1), (2, 2), (2, 3), (2, 4), (3, 1), (3, 2), (3, 3), (3, 4),
            (4, 1), (4, 2), (4, 3), (4, 4), (5, 1), (5, 2), (5, 3), (5, 4),
            (6, 1), (6, 2), (6, 3), (6, 4), (7, 1), (7, 2), (7, 3), (8, 1),
            (8, 2), (8, 3))
    };
    (@arms $f:ident, $p:expr, $rows:expr, $vectors:expr, $tail:expr; $(($r:literal, $v:literal)),*) => {
        // SAFETY: a block inside the descriptor's buffers (the entry point's contract).
        match ($rows, $vectors, $tail > 0) {
            $(
                ($r, $v, false) => unsafe { $f::<$r, $v, false>($p, 0) },
                ($r, $v, true) => unsafe { $f::<$r, $v, true>($p, $tail) },
            )*
            (rows, vectors, _) => unreachable!("no strip kernel for blocks of {rows} x {vectors}"),
        }
    };
}
/// `R` rows x `W` vectors of sums, `k` steps of one FMA each; with `MASKED`, the last vector
/// reads and writes only its first `tail` columns.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn block<V: Simd, const R: usize, const W: usize, const MASKED: bool>(p: &Block, tail: usize) {
    // SAFETY (whole body): rows, columns and steps inside the buffers (caller's contract).
    unsafe {
        let mask = if MASKED { V::first_lanes(tail) } else { V::first_lanes(0) };
        let zero = V::splat(0.0);
        let mut sums = [[zero; W]; R];
        let (mut a, mut b) = (p.a, p.b);
        for _ in 0..p.k {
            let mut bv = [zero; W];
            for (v, x) in bv.iter_mut().enumerate() {
                let at = b.add(v * V::LANES);
                *x = if MASKED && v == W - 1 { V::load_masked(at, mask) } else { V::load(at) };
            }
            for (i, row) in sums.iter_mut().enumerate() {
                let x = V::splat(*a.offset(i as isize * p.a_row));
                for (s, y) in row.iter_mut().zip(&bv) {
                    *s = V::fmadd(x, *y, *s);
                }
            }
            a = a.offset(p.a_col);
            b = b.offset(p.b_row);
        }
        for (i, row) in sums.iter().enumerate() {
            for (v, s) in row.iter().enumerate() {
                let at = p.c.offset(i as isize * p.c_row).add(v * V::LANES);
                if MASKED && v == W - 1 {
                    V::store_masked(at, mask, *s);
                } else {
                    V::store(at, *s);
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod isa {
    use super::{block, units, Block, DotStripsF32};
    use std::arch::x86_64::{__m256, __m512};

    /// The kernels of one instruction set: `run` walks the units and calls a block function
    /// per block, each compiled on its own (inlined into one function, the 68 blocks left it
    /// a frame of spills to set up on every call).
    macro_rules! isa {
        ($module:ident, $features:literal, $vector:ident) => {
            pub(super) mod $module {
                use super::*;

                #[target_feature(enable = $features)]
                #[inline(never)]
                unsafe fn block_of<const R: usize, const W: usize, const MASKED: bool>(p: &Block, tail: usize) {
                    // SAFETY: as `block`'s.
                    unsafe { block::<$vector, R, W, MASKED>(p, tail) }
                }

                #[target_feature(enable = $features)]
                pub(in super::super) unsafe fn run(d: &DotStripsF32, begin: i64, end: i64) {
                    let run_block = |p: &Block, rows: i64, vectors: i64, tail: usize| dispatch!(block_of, p, rows, vectors, tail);
                    // SAFETY: as the entry point's.
                    unsafe { units(d, begin, end, <$vector as super::super::Simd>::LANES as i64, run_block) }
                }
            }
        };
    }
    isa!(avx2, "avx2,fma", __m256);
    isa!(avx512, "avx512f,avx2,fma", __m512);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_fit_the_registers_and_the_kernels_built() {
        for lanes in [8, 16] {
            let usable = if lanes == 16 { 31 } else { 15 };
            for m in 1..=16 {
                for n in [1, 7, 8, 9, 16, 40, 64, 100, 256, 1024] {
                    let b = strip_block(m, n, lanes);
                    let held = if b.rows > 1 { b.vectors } else { 0 };
                    assert!(b.rows * b.vectors + held + 1 <= usable, "{m} x {n} / {lanes}: {b:?} spills");
                    assert!(b.rows <= MAX_ROWS && b.vectors <= if b.rows == 1 { MAX_ROW_VECTORS } else { MAX_VECTORS });
                    assert!(b.vectors * lanes < n + lanes, "{m} x {n} / {lanes}: {b:?} wider than the row");
                }
            }
        }
        // The LSTM step's 16 rows: three blocks of 6, 6 and 4 rows of four 16-lane vectors.
        assert_eq!(strip_block(16, 1024, 16), StripBlock { rows: 6, vectors: 4 });
        assert_eq!(strip_block(1, 1024, 8), StripBlock { rows: 1, vectors: 8 });
    }

    /// Every element against a plain loop of fused multiply-adds in contracting order, for
    /// blocks with partial rows, tails, strides and batches (walked with one stride, or two as
    /// attention's batch x heads: A's in order, B's heads-major, C's with a gap between outer
    /// batches), on the instruction sets this CPU has; the units split in two calls.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn strips_sum_each_element_in_contracting_order() {
        let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
        let avx512 = avx2 && is_x86_feature_detected!("avx512f");
        let mut kernels: Vec<(i64, unsafe extern "C" fn(*const DotStripsF32, i64, i64))> = Vec::new();
        if avx2 {
            kernels.push((8, hlojit_rt_dot_strips_f32_avx2));
        }
        if avx512 {
            kernels.push((16, hlojit_rt_dot_strips_f32_avx512));
        }
        let mut state = 0x2545f4914f6cdd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 8.0
        };
        let cases = [(1, 1, 16, 1024, 37), (2, 1, 5, 19, 3), (1, 1, 1, 100, 64), (3, 1, 13, 40, 9), (1, 1, 8, 8, 1), (1, 1, 2, 130, 0), (6, 3, 2, 40, 9), (8, 4, 1, 64, 20)];
        for &(lanes, kernel) in &kernels {
            for (batch, inner, m, n, k) in cases {
                let outer = batch / inner;
                // A transposed (column-major per batch) and padded, B and C with padded rows.
                let (a_col, a_row, a_per) = (m + 1, 1, (m + 1) * k + 3);
                let (b_row, b_per) = (n + 5, (n + 5) * k + 2);
                let (c_row, c_per) = (n + 3, (n + 3) * m + 1);
                let a_batch = BatchStrides { outer: a_per * inner, inner: a_per };
                let b_batch = BatchStrides { outer: b_per, inner: b_per * outer };
                let c_batch = BatchStrides { outer: c_per * inner + 1, inner: c_per };
                let at = |s: BatchStrides, t: i64| s.offset(t, inner);
                let a: Vec<f32> = (0..batch * a_per).map(|_| next()).collect();
                let b: Vec<f32> = (0..batch * b_per).map(|_| next()).collect();
                let c_len = at(c_batch, batch - 1) + c_per;
                let mut c = vec![f32::NAN; c_len as usize];
                let d = DotStripsF32 {
                    batch,
                    batch_inner: inner,
                    m,
                    n,
                    k,
                    a: a.as_ptr() as i64,
                    a_batch,
                    a_row,
                    a_col,
                    b: b.as_ptr() as i64,
                    b_batch,
                    b_row,
                    c: c.as_mut_ptr() as i64,
                    c_batch,
                    c_row,
                    block_rows: strip_block(m, n, lanes).rows,
                    block_vectors: strip_block(m, n, lanes).vectors,
                };
                let units = strip_units(batch, m, n, lanes);
                // SAFETY: the buffers hold what the descriptor says; the CPU has the kernel's features.
                unsafe {
                    kernel(&d, 0, units / 2);
                    kernel(&d, units / 2, units);
                }
                let mut written = vec![false; c.len()];
                for (t, i, j) in (0..batch).flat_map(|t| (0..m).flat_map(move |i| (0..n).map(move |j| (t, i, j)))) {
                    let want = (0..k).fold(0f32, |s, l| a[(at(a_batch, t) + i * a_row + l * a_col) as usize].mul_add(b[(at(b_batch, t) + l * b_row + j) as usize], s));
                    let x = (at(c_batch, t) + i * c_row + j) as usize;
                    assert_eq!(c[x].to_bits(), want.to_bits(), "{lanes} lanes, {batch}x{m}x{n}x{k} ({inner} inner): [{t},{i},{j}]");
                    written[x] = true;
                }
                // Nothing outside the result was written.
                assert!(c.iter().zip(&written).all(|(v, &w)| w || v.is_nan()), "{batch}x{m}x{n}x{k} ({inner} inner): wrote outside");
            }
        }
    }
}
