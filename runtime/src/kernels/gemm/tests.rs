//! Products of small integers are exact in f32 (and the integers in bf16), so every variant,
//! operand type, tile, edge, k block and thread split must give exactly the integer product.

use super::*;

fn small(seed: &mut u64) -> f32 {
    *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    ((*seed >> 33) % 7) as f32 - 3.0
}

/// C = A x B for A `[batch][m][k]` row-major and B `[batch][k][n]` (transposed when `bt`),
/// through the variant; checked against integer arithmetic.
#[allow(clippy::too_many_arguments)]
fn check(isa: Isa, operands: Operands, batch: i64, m: i64, n: i64, k: i64, mr: i64, nv: i64, kc: i64, nc: i64, bt: bool) {
    check_a(isa, operands, batch, m, n, k, mr, nv, kc, nc, bt, false);
}

/// As [`check`], with A stored column-major (`[batch][k][m]`) when `at`: f32 A is then packed,
/// not read in place.
#[allow(clippy::too_many_arguments)]
fn check_a(isa: Isa, operands: Operands, batch: i64, m: i64, n: i64, k: i64, mr: i64, nv: i64, kc: i64, nc: i64, bt: bool, at: bool) {
    check_full(isa, operands, batch, m, n, k, mr, nv, kc, nc, bt, at, Finish::Nothing);
}

/// What the GEMM's epilogue does to C in [`check_full`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Finish {
    Nothing,
    /// [`double_plus_one`] on any regions.
    Elements,
    /// [`minus_row_max`] on whole rows.
    Rows,
}

/// What the test epilogue sees: C and how often it finished each element.
struct Seen {
    c: *mut f32,
    c_batch: i64,
    c_row: i64,
    counts: Vec<std::sync::atomic::AtomicU32>,
    /// Elements per batch and columns, to number the elements.
    m: i64,
    n: i64,
    /// Regions a whole-row epilogue got that were not whole rows.
    partial_rows: std::sync::atomic::AtomicU32,
}

impl Seen {
    fn element(&self, b: i64, i: i64, j: i64) -> *mut f32 {
        self.c.wrapping_offset((b * self.c_batch + i * self.c_row + j) as isize)
    }

    fn count(&self, b: i64, i: i64, j: i64) {
        self.counts[(b * self.m * self.n + i * self.n + j) as usize].fetch_add(1, Ordering::Relaxed);
    }
}

/// An epilogue as generated code would be: `x -> 2x + 1` on the region, counting visits.
unsafe extern "C" fn double_plus_one(ctx: *const std::ffi::c_void, b: i64, r0: i64, r1: i64, c0: i64, c1: i64) {
    let s = unsafe { &*(ctx as *const Seen) };
    for i in r0..r1 {
        for j in c0..c1 {
            let p = s.element(b, i, j);
            unsafe { *p = 2.0 * *p + 1.0 };
            s.count(b, i, j);
        }
    }
}

/// A whole-row epilogue as a softmax's would be: `x -> x - max(row)`, the max read from the
/// row before any of it is written.
unsafe extern "C" fn minus_row_max(ctx: *const std::ffi::c_void, b: i64, r0: i64, r1: i64, c0: i64, c1: i64) {
    let s = unsafe { &*(ctx as *const Seen) };
    if (c0, c1) != (0, s.n) {
        s.partial_rows.fetch_add(1, Ordering::Relaxed);
        return;
    }
    for i in r0..r1 {
        let max = (0..s.n).map(|j| unsafe { *s.element(b, i, j) }).fold(f32::NEG_INFINITY, f32::max);
        for j in 0..s.n {
            unsafe { *s.element(b, i, j) -= max };
            s.count(b, i, j);
        }
    }
}

/// As [`check_a`], the GEMM finishing C as `finish` says: its epilogue must see every element
/// once and only after its last k block (a whole-row one only whole rows).
#[allow(clippy::too_many_arguments)]
fn check_full(isa: Isa, operands: Operands, batch: i64, m: i64, n: i64, k: i64, mr: i64, nv: i64, kc: i64, nc: i64, bt: bool, at: bool, finish: Finish) {
    let mut seed = (m * 31 + n * 7 + k) as u64;
    let a: Vec<f32> = (0..batch * m * k).map(|_| small(&mut seed)).collect();
    let b: Vec<f32> = (0..batch * k * n).map(|_| small(&mut seed)).collect();
    // bf16 operands: the high halves of the (exactly representable) f32 values.
    let bf16 = |v: &[f32]| v.iter().map(|x| (x.to_bits() >> 16) as u16).collect::<Vec<u16>>();
    let (a16, b16) = (bf16(&a), bf16(&b));
    let (a_ptr, b_ptr) = match operands {
        Operands::F32 => (a.as_ptr() as *const std::ffi::c_void, b.as_ptr() as *const std::ffi::c_void),
        Operands::Bf16 | Operands::Bf16Pairs => (a16.as_ptr() as *const std::ffi::c_void, b16.as_ptr() as *const std::ffi::c_void),
        Operands::S8 | Operands::S8Quads => panic!("s8 operands are checked by check_s8"),
    };
    let mut c = vec![f32::NAN; (batch * m * n) as usize];
    let (b_row, b_col) = if bt { (1, k) } else { (n, 1) };
    let (a_row, a_col) = if at { (1, m) } else { (k, 1) };
    // The same logical A, stored as the strides say.
    let a: Vec<f32> = if at { (0..batch * m * k).map(|e| a[((e / (m * k)) * m * k + (e % m) * k + (e % (m * k)) / m) as usize]).collect() } else { a };
    let a16 = if at { bf16(&a) } else { a16 };
    let a_ptr = if at && operands == Operands::F32 { a.as_ptr() as *const std::ffi::c_void } else if at { a16.as_ptr() as *const std::ffi::c_void } else { a_ptr };
    let desc = GemmF32 {
        batch,
        batch_inner: 1,
        m,
        n,
        k,
        a: a_ptr,
        a_batch: BatchStrides::single(m * k),
        a_row,
        a_col,
        b: b_ptr,
        b_batch: BatchStrides::single(k * n),
        b_row,
        b_col,
        c: c.as_mut_ptr() as *mut std::ffi::c_void,
        c_batch: BatchStrides::single(m * n),
        c_row: n,
        mr,
        nv,
        kc,
        nc,
        epilogue: None,
        epilogue_ctx: std::ptr::null(),
        epilogue_rows: 0,
    };
    let seen = Seen { c: c.as_mut_ptr(), c_batch: m * n, c_row: n, counts: (0..batch * m * n).map(|_| Default::default()).collect(), m, n, partial_rows: Default::default() };
    let ctx = &seen as *const Seen as *const std::ffi::c_void;
    let desc = match finish {
        Finish::Nothing => desc,
        Finish::Elements => GemmF32 { epilogue: Some(double_plus_one), epilogue_ctx: ctx, ..desc },
        Finish::Rows => GemmF32 { epilogue: Some(minus_row_max), epilogue_ctx: ctx, epilogue_rows: 1, ..desc },
    };
    let status = unsafe { gemm(&desc, isa, operands) };
    assert_eq!(status, 0);
    if finish != Finish::Nothing {
        assert_eq!(seen.partial_rows.load(Ordering::Relaxed), 0, "{isa:?} {batch}x{m}x{n}x{k}: a whole-row epilogue got part of a row");
        assert!(seen.counts.iter().all(|c| c.load(Ordering::Relaxed) == 1), "{isa:?} {batch}x{m}x{n}x{k}: an element finished other than once");
    }
    let product = |bi: i64, i: i64, j: i64| -> i64 {
        (0..k)
            .map(|p| {
                let bv = if bt { b[(bi * k * n + j * k + p) as usize] } else { b[(bi * k * n + p * n + j) as usize] };
                let av = if at { a[(bi * m * k + p * m + i) as usize] } else { a[(bi * m * k + i * k + p) as usize] };
                av as i64 * bv as i64
            })
            .sum()
    };
    for bi in 0..batch {
        for i in 0..m {
            let row_max = if finish == Finish::Rows { (0..n).map(|j| product(bi, i, j)).max().unwrap_or(0) } else { 0 };
            for j in 0..n {
                let want = product(bi, i, j);
                let want = match finish {
                    Finish::Nothing => want,
                    Finish::Elements => 2 * want + 1,
                    Finish::Rows => want - row_max,
                };
                let got = c[(bi * m * n + i * n + j) as usize];
                assert_eq!(got, want as f32, "{isa:?} {operands:?} {batch}x{m}x{n}x{k} tile {mr}x{nv}: C[{bi}][{i}][{j}]");
            }
        }
    }
}

#[test]
fn every_tile_with_edges_k_blocks_and_threads() {
    for (isa, tiles) in [(Isa::Avx512, &[(12, 1), (12, 2), (9, 3), (6, 4)][..]), (Isa::Avx2Fma, &[(12, 1), (6, 2)][..])] {
        if !host_supports(isa) {
            continue;
        }
        for &(mr, nv) in tiles {
            let nr = nv * isa.lanes();
            for ops in [Operands::F32, Operands::Bf16] {
                // Serial, with edge rows and columns, three k blocks (the last partial).
                check(isa, ops, 1, 2 * mr + 3, 2 * nr + 5, 70, mr, nv, 32, 2 * nr, false);
                // Batched and parallel (above the flop threshold), B transposed, column blocks.
                check(isa, ops, 3, 100, 3 * nr + 1, 300, mr, nv, 128, nr, true);
                // One strip: its panels split among the threads.
                check(isa, ops, 1, mr, 256, 512, mr, nv, 512, 256 / nr * nr, false);
                // A column-major: packed (row-major f32 A in deep k blocks is read in place by
                // the direct micro-kernels; in the shallow ones above it is packed).
                check_a(isa, ops, 2, 2 * mr + 1, nr + 3, 45, mr, nv, 16, nr, true, true);
                // A column-major (a weight gradient's x^T) in several blocks of strips, the
                // last one partial; B row-major (packed walking its rows), parallel.
                check_a(isa, ops, 1, 2 * block_rows(mr, 128, 1 << 20) + mr + 1, 2 * nr + 1, 300, mr, nv, 128, nr, false, true);
                // One panel (f32 A read in place at any depth), a column edge, a partial
                // second k block, serial and parallel.
                check(isa, ops, 2, 5 * mr + 3, nr - 3, 40, mr, nv, 32, nr, false);
                check(isa, ops, 1, 1000, nr - 3, 40, mr, nv, 32, nr, false);
                // Deep k blocks (f32 A read in place), edge rows and columns, a shallower last
                // block, batched and parallel.
                check(isa, ops, 2, 8 * mr + 3, 2 * nr + 5, 600, mr, nv, 256, nr, false);
                // Rows in three A blocks (the last partial), more panels than A is read in
                // place for (packed in deep blocks), two k blocks, parallel column parts.
                let rows = 2 * block_rows(mr, 512, 1 << 20) + mr + 1;
                check(isa, ops, 1, rows, (DIRECT_A_MAX_PANELS + 1) * nr + 3, 1000, mr, nv, 512, nr, false);
                // A in one block and more B panels than a unit packs at once: units pack
                // their own panel ranges, two k blocks, a column edge, parallel.
                check(isa, ops, 1, 2 * mr + 1, 9 * nr + 5, 600, mr, nv, 512, nr, false);
            }
        }
    }
}

#[test]
fn epilogue_finishes_every_element_once_after_its_last_k_block() {
    for (isa, mr, nv) in [(Isa::Avx512, 12, 2), (Isa::Avx512, 6, 4), (Isa::Avx2Fma, 6, 2), (Isa::Avx2Fma, 12, 1)] {
        if !host_supports(isa) {
            continue;
        }
        let nr = nv * isa.lanes();
        // Serial with edges and three k blocks; batched, parallel, B transposed; deep blocks
        // with A read in place; several A blocks and parallel column parts.
        check_full(isa, Operands::F32, 1, 2 * mr + 3, 2 * nr + 5, 70, mr, nv, 32, 2 * nr, false, false, Finish::Elements);
        check_full(isa, Operands::F32, 3, 100, 3 * nr + 1, 300, mr, nv, 128, nr, true, false, Finish::Elements);
        check_full(isa, Operands::F32, 2, 8 * mr + 3, 2 * nr + 5, 600, mr, nv, 256, nr, false, false, Finish::Elements);
        let rows = 2 * block_rows(mr, 512, 1 << 20) + mr + 1;
        check_full(isa, Operands::Bf16, 1, rows, (DIRECT_A_MAX_PANELS + 1) * nr + 3, 1000, mr, nv, 512, nr, false, false, Finish::Elements);
        // Panels too deep for a strip to walk several at once (`strip_pass`): each panel meets
        // the block's strips in turn, its column of tiles finished together.
        assert!(!strip_pass(isa, 2, 8192 * nr));
        check_full(isa, Operands::F32, 1, 2 * mr + 1, 8 * nr + 3, 8200, mr, nv, 8192, nr, false, true, Finish::Elements);
    }
}

/// A whole-row epilogue gets whole rows however the work would otherwise be split: shallow
/// blocks walked strip by strip (attention scores, k = 64), one A block whose panels the
/// threads would share, several A blocks, panels walked one at a time, several k blocks.
#[test]
fn whole_row_epilogue_sees_each_final_row_once() {
    for (isa, mr, nv) in [(Isa::Avx512, 12, 2), (Isa::Avx2Fma, 6, 2)] {
        if !host_supports(isa) {
            continue;
        }
        let nr = nv * isa.lanes();
        assert_eq!(strip_pass(isa, 4, 64 * nr), isa == Isa::Avx512);
        check_full(isa, Operands::F32, 4, 3 * mr + 2, 4 * nr - 3, 64, mr, nv, 512, nr, true, false, Finish::Rows);
        check_full(isa, Operands::F32, 1, mr + 1, 9 * nr + 5, 600, mr, nv, 512, nr, false, false, Finish::Rows);
        let rows = 2 * block_rows(mr, 256, 1 << 20) + mr + 1;
        check_full(isa, Operands::F32, 1, rows, 3 * nr + 1, 300, mr, nv, 256, nr, false, false, Finish::Rows);
        assert!(!strip_pass(isa, 2, 8192 * nr));
        check_full(isa, Operands::F32, 2, 2 * mr + 1, 2 * nr + 3, 8200, mr, nv, 8192, nr, false, true, Finish::Rows);
        check_full(isa, Operands::Bf16, 1, 2 * mr + 3, 2 * nr + 5, 70, mr, nv, 32, 2 * nr, false, false, Finish::Rows);
    }
}

/// An s8 GEMM's operands and layout: A `[batch][m][k]` (column-major `[batch][k][m]` when
/// `at`), B `[batch][k][n]` (transposed when `bt`).
#[derive(Clone, Copy)]
struct S8Case {
    batch: i64,
    m: i64,
    n: i64,
    k: i64,
    kc: i64,
    bt: bool,
    at: bool,
}

/// What an s8 case's elements are drawn from.
#[derive(Clone, Copy)]
enum S8Values {
    /// Every byte, uniformly.
    Any,
    /// The ends of the range: -128 and 127 most often, and -127, -1, 0, 1.
    Extremes,
    /// Only -128: every product 2^14, so that deep sums wrap modulo 2^32.
    AllMin,
}

/// As [`check`] for s8 operands and an s32 result through `operands`' variant on `threads`
/// threads, against a scalar reference that wraps as XLA's s32 dot does.
fn check_s8(operands: Operands, case: S8Case, values: S8Values, mr: i64, nv: i64, threads: usize) {
    let S8Case { batch, m, n, k, kc, bt, at } = case;
    let mut seed = (m * 17 + n * 5 + k) as u64;
    let mut next = || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let r = (seed >> 56) as u8;
        match values {
            S8Values::Any => r as i8,
            S8Values::Extremes => [-128, 127, -128, 127, -127, -1, 0, 1][(r % 8) as usize],
            S8Values::AllMin => -128,
        }
    };
    let a: Vec<i8> = (0..batch * m * k).map(|_| next()).collect();
    let b: Vec<i8> = (0..batch * k * n).map(|_| next()).collect();
    let mut c = vec![i32::MIN; (batch * m * n) as usize];
    let (b_row, b_col) = if bt { (1, k) } else { (n, 1) };
    let (a_row, a_col) = if at { (1, m) } else { (k, 1) };
    let desc = GemmF32 {
        batch, batch_inner: 1, m, n, k,
        a: a.as_ptr() as *const std::ffi::c_void, a_batch: BatchStrides::single(m * k), a_row, a_col,
        b: b.as_ptr() as *const std::ffi::c_void, b_batch: BatchStrides::single(k * n), b_row, b_col,
        c: c.as_mut_ptr() as *mut std::ffi::c_void, c_batch: BatchStrides::single(m * n), c_row: n,
        mr, nv, kc, nc: n,
        epilogue: None, epilogue_ctx: std::ptr::null(), epilogue_rows: 0,
    };
    let isa = if operands == Operands::S8Quads { Isa::Avx512 } else { Isa::Avx2Fma };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    // The descriptor's pointers are not `Send`: passed as an address.
    let desc = &desc as *const GemmF32 as usize;
    assert_eq!(pool.install(move || unsafe { gemm(&*(desc as *const GemmF32), isa, operands) }), 0);
    let what = format!("{operands:?} {batch}x{m}x{n}x{k} kc={kc} bt={bt} at={at} tile {mr}x{nv} threads={threads}");
    for bi in 0..batch {
        for i in 0..m {
            for j in 0..n {
                let mut want = 0i32;
                for p in 0..k {
                    let av = if at { a[(bi * m * k + p * m + i) as usize] } else { a[(bi * m * k + i * k + p) as usize] };
                    let bv = if bt { b[(bi * k * n + j * k + p) as usize] } else { b[(bi * k * n + p * n + j) as usize] };
                    want = want.wrapping_add(i32::from(av) * i32::from(bv));
                }
                assert_eq!(c[(bi * m * n + i * n + j) as usize], want, "{what}: C[{bi}][{i}][{j}]");
            }
        }
    }
}

/// A serial s8 case, B and A row-major.
fn s8(batch: i64, m: i64, n: i64, k: i64, kc: i64) -> S8Case {
    S8Case { batch, m, n, k, kc, bt: false, at: false }
}

#[test]
fn s8_tiles_with_odd_depths_edges_k_blocks_and_threads() {
    if !host_supports(Isa::Avx2Fma) {
        return;
    }
    for (mr, nv) in [(12, 1), (6, 2)] {
        let nr = nv * 8;
        // Odd k (a last pair with a zero) in each of three k blocks' worth, edge tiles.
        check_s8(Operands::S8, s8(1, 2 * mr + 3, 2 * nr + 5, 71, 32), S8Values::Any, mr, nv, 1);
        // Batched and parallel, B transposed.
        check_s8(Operands::S8, S8Case { bt: true, ..s8(3, 100, 3 * nr + 1, 301, 128) }, S8Values::Any, mr, nv, 2);
        // k = 1: one pair of an element and a zero.
        check_s8(Operands::S8, s8(1, mr + 1, nr + 1, 1, 512), S8Values::Extremes, mr, nv, 1);
    }
}

#[test]
fn s8_quad_tiles_with_every_depth_edges_strides_k_blocks_and_threads() {
    if !host_multiplies_s8_quads() {
        return;
    }
    let ops = Operands::S8Quads;
    for (mr, nv) in [(12, 1), (12, 2), (9, 3), (6, 4)] {
        let nr = nv * 16;
        // k = 1..9: quads with one to four elements, one or more words; odd rows and columns.
        for k in 1..=9 {
            check_s8(ops, s8(1, mr + 1, nr + 3, k, 512), S8Values::Extremes, mr, nv, 1);
        }
        // Three k blocks of 8 quads, the last partial and ending in a partial quad; edge tiles.
        check_s8(ops, s8(1, 2 * mr + 3, 2 * nr + 5, 71, 32), S8Values::Any, mr, nv, 1);
        // Batched and parallel: B transposed (columns contiguous along k, unaligned), A
        // column-major (bytes gathered one by one), both.
        for threads in 1..=3 {
            check_s8(ops, S8Case { bt: true, ..s8(3, 100, 3 * nr + 1, 301, 128) }, S8Values::Any, mr, nv, threads);
            check_s8(ops, S8Case { at: true, ..s8(2, 2 * mr + 1, nr + 3, 45, 16) }, S8Values::Extremes, mr, nv, threads);
            check_s8(ops, S8Case { at: true, bt: true, ..s8(2, 37, 2 * nr + 1, 203, 64) }, S8Values::Any, mr, nv, threads);
        }
        // Several A blocks, the last partial; panels split among the threads; two k blocks.
        let rows = 2 * block_rows(mr, 128, 1 << 20) + mr + 1;
        check_s8(ops, s8(1, rows, 9 * nr + 3, 1000, 512), S8Values::Any, mr, nv, 2);
        // One strip, its panels split among the threads.
        check_s8(ops, s8(1, mr, 256, 512, 2048), S8Values::Extremes, mr, nv, 3);
    }
}

#[test]
fn s8_quad_sums_wrap_as_xla_s32_dots_do() {
    if !host_multiplies_s8_quads() {
        return;
    }
    // 2^14 per product, 2^17 + 5 products: each sum passes 2^31 and wraps, in one k block
    // (kc = 2048 elements is what the compiler picks) and in many.
    for kc in [2048, 1 << 18] {
        for threads in [1, 2] {
            check_s8(Operands::S8Quads, s8(1, 13, 17, (1 << 17) + 5, kc), S8Values::AllMin, 12, 2, threads);
        }
    }
}

#[test]
fn unknown_tiles_are_refused_with_an_error() {
    assert!(!has_tile(Isa::Avx512, Operands::F32, 7, 2));
    assert!(!has_tile(Isa::Avx512, Operands::S8, 12, 1));
    assert!(!has_tile(Isa::Avx2Fma, Operands::S8Quads, 6, 2));
    let desc = GemmF32 {
        batch: 1, batch_inner: 1, m: 1, n: 1, k: 1,
        a: std::ptr::null(), a_batch: BatchStrides::single(0), a_row: 0, a_col: 0,
        b: std::ptr::null(), b_batch: BatchStrides::single(0), b_row: 0, b_col: 0,
        c: std::ptr::null_mut(), c_batch: BatchStrides::single(0), c_row: 0,
        mr: 7, nv: 2, kc: 1, nc: 1,
        epilogue: None, epilogue_ctx: std::ptr::null(), epilogue_rows: 0,
    };
    assert_eq!(unsafe { gemm(&desc, Isa::Avx512, Operands::F32) }, 1);
    assert!(crate::custom_call::take_last_error().unwrap().contains("no precompiled GEMM tile 7x2"));
}


#[test]
fn units_are_a_multiple_of_the_threads_with_few_panel_ranges() {
    // 512 rows of 6-row strips (86) in blocks of at most 32 strips: three blocks gave 9 units
    // (three panel ranges each) on 2 threads; four blocks of 22 strips, two ranges, give 8.
    assert_eq!(share_units(86, 32, 1, 128, 2), Share { strips: 22, n_parts: 2 });
    // 2048 rows: 11 blocks of 32 strips -> 12 blocks of 29, B panels not split.
    assert_eq!(share_units(342, 32, 1, 128, 2), Share { strips: 29, n_parts: 1 });
    // Eight batches of three blocks are already 24 units.
    assert_eq!(share_units(86, 29, 8, 4, 2), Share { strips: 29, n_parts: 1 });
    for (strips, fit, batch, panels, threads) in [(171, 32, 1, 64, 2), (86, 32, 1, 128, 3), (40, 8, 3, 16, 8)] {
        let s = share_units(strips, fit, batch, panels, threads);
        let units = batch * ceil_div(strips, s.strips) * s.n_parts;
        assert!(s.strips <= fit && s.n_parts <= panels, "{strips} {fit} {batch} {panels} {threads}: {s:?}");
        assert!(units >= 4 * threads && units % threads == 0, "{strips} {fit} {batch} {panels} {threads}: {units} units");
    }
    // No even split of 5 strips and 7 panels into at least 16 units: all 7 panels apart, and
    // blocks of 2 strips (21 units).
    assert_eq!(share_units(5, 32, 1, 7, 4), Share { strips: 2, n_parts: 7 });
    // One panel (a 1024 x 10 weight gradient, K = 256: blocks of at most 64 strips): blocks of
    // 22 strips, 8 units, not 3 blocks of 57 (3 units on 2 threads).
    assert_eq!(share_units(171, 64, 1, 1, 2), Share { strips: 22, n_parts: 1 });
    // One strip and one panel: nothing to split, one unit.
    assert_eq!(share_units(1, 32, 1, 1, 2), Share { strips: 1, n_parts: 1 });
}

/// C of a GEMM of fractional values (rounding in every fused multiply-add), A row-major or
/// column-major, run on a rayon pool of `threads` threads.
#[allow(clippy::too_many_arguments)]
fn fractional_product(isa: Isa, operands: Operands, m: i64, n: i64, k: i64, mr: i64, nv: i64, kc: i64, at: bool, threads: usize) -> Vec<u32> {
    let mut seed = (m * 13 + n * 3 + k) as u64;
    let mut next = || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 1.7
    };
    let a: Vec<f32> = (0..m * k).map(|_| next()).collect();
    let b: Vec<f32> = (0..k * n).map(|_| next()).collect();
    let (a16, b16): (Vec<u16>, Vec<u16>) = (a.iter().map(|x| (x.to_bits() >> 16) as u16).collect(), b.iter().map(|x| (x.to_bits() >> 16) as u16).collect());
    let (a_ptr, b_ptr) = match operands {
        Operands::Bf16 | Operands::Bf16Pairs => (a16.as_ptr() as *const std::ffi::c_void, b16.as_ptr() as *const std::ffi::c_void),
        _ => (a.as_ptr() as *const std::ffi::c_void, b.as_ptr() as *const std::ffi::c_void),
    };
    let mut c = vec![0f32; (m * n) as usize];
    let (a_row, a_col) = if at { (1, m) } else { (k, 1) };
    let desc = GemmF32 {
        batch: 1, batch_inner: 1, m, n, k,
        a: a_ptr, a_batch: BatchStrides::single(0), a_row, a_col,
        b: b_ptr, b_batch: BatchStrides::single(0), b_row: n, b_col: 1,
        c: c.as_mut_ptr() as *mut std::ffi::c_void, c_batch: BatchStrides::single(0), c_row: n,
        mr, nv, kc, nc: n,
        epilogue: None, epilogue_ctx: std::ptr::null(), epilogue_rows: 0,
    };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    // The descriptor's pointers are not `Send`: passed as an address (the call returns
    // before `install` does).
    let desc = &desc as *const GemmF32 as usize;
    assert_eq!(pool.install(move || unsafe { gemm(&*(desc as *const GemmF32), isa, operands) }), 0);
    c.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn results_are_the_same_bits_on_any_number_of_threads() {
    // Few rows and many panels (row blocks split into panel ranges, A packed once and
    // shared; mlp_train's 256 x 1024 x 1024 at a smaller size), A row-major and
    // column-major, two k blocks; and a shape whose blocks are not split.
    for (isa, mr, nv) in [(Isa::Avx512, 12, 2), (Isa::Avx2Fma, 6, 2)] {
        if !host_supports(isa) {
            continue;
        }
        for ops in [Operands::F32, Operands::Bf16] {
            // And one block of A meeting more B panels than one unit packs (several panel
            // ranges on one thread, eight on two, blocks split by `share_units` on three).
            for (m, n, k, kc, at) in [(70, 512, 300, 256, false), (70, 512, 300, 256, true), (300, 40, 200, 128, false), (70, 9 * nv * isa.lanes() + 5, 600, 512, false)] {
                let one = fractional_product(isa, ops, m, n, k, mr, nv, kc, at, 1);
                for threads in [2, 3] {
                    assert!(one == fractional_product(isa, ops, m, n, k, mr, nv, kc, at, threads), "{isa:?} {ops:?} {m}x{n}x{k} at={at}: {threads} threads differ from one");
                }
            }
        }
    }
}

#[test]
fn bf16_pair_tiles_with_odd_depths_edges_strides_k_blocks_and_threads() {
    if !host_multiplies_bf16_pairs() {
        return;
    }
    let ops = Operands::Bf16Pairs;
    for (mr, nv) in [(12, 1), (12, 2), (9, 3), (6, 4)] {
        let nr = nv * 16;
        // Serial, edge rows and columns, odd k: three k blocks of 16 pairs, the last partial
        // and ending in half a pair.
        check(Isa::Avx512, ops, 1, 2 * mr + 3, 2 * nr + 5, 71, mr, nv, 32, 2 * nr, false);
        // Batched and parallel, B transposed (its rows contiguous along k, odd: pairs not
        // word-aligned), column blocks.
        check(Isa::Avx512, ops, 3, 100, 3 * nr + 1, 301, mr, nv, 128, nr, true);
        // One strip: its panels split among the threads; k = 1 (one half pair).
        check(Isa::Avx512, ops, 1, mr, 256, 512, mr, nv, 512, 256 / nr * nr, false);
        check(Isa::Avx512, ops, 1, mr + 1, nr + 1, 1, mr, nv, 512, nr, false);
        // A column-major (pairs gathered element by element), batched.
        check_a(Isa::Avx512, ops, 2, 2 * mr + 1, nr + 3, 45, mr, nv, 16, nr, true, true);
        // A and B row-major with even k (pairs transposed as words), several A blocks, the
        // last partial, parallel column parts, two k blocks.
        let rows = 2 * block_rows(mr, 256, 1 << 20) + mr + 1;
        check(Isa::Avx512, ops, 1, rows, (DIRECT_A_MAX_PANELS + 1) * nr + 3, 1000, mr, nv, 512, nr, false);
    }
    check_full(Isa::Avx512, ops, 2, 8 * 12 + 3, 2 * 32 + 5, 601, 12, 2, 256, 32, false, false, Finish::Elements);
}

#[test]
fn bf16_pair_results_are_the_same_bits_on_any_number_of_threads() {
    if !host_multiplies_bf16_pairs() {
        return;
    }
    for (m, n, k, kc, at) in [(70, 512, 300, 256, false), (70, 512, 301, 256, true), (300, 40, 201, 128, false)] {
        let one = fractional_product(Isa::Avx512, Operands::Bf16Pairs, m, n, k, 12, 2, kc, at, 1);
        for threads in [2, 3] {
            assert!(one == fractional_product(Isa::Avx512, Operands::Bf16Pairs, m, n, k, 12, 2, kc, at, threads), "{m}x{n}x{k} at={at}: {threads} threads differ from one");
        }
    }
}
