//! The AMX driver on the tile model against float64 and wrapping-i32 references; the model
//! against the instruction descriptions; the hardware against the model where there is AMX,
//! and elsewhere the entry points' fallback.

use super::driver::{gemm_on, Kind};
use super::hardware::Hardware;
use super::model::TileModel;
use super::unit::{palette1, TileUnit};
use super::*;
use crate::kernels::gemm::Epilogue;
use std::sync::atomic::{AtomicU32, Ordering};

/// One GEMM: sizes, k block depth in words, B transposed (`bt`), A column-major (`at`).
#[derive(Clone, Copy, Debug)]
struct Case {
    batch: i64,
    m: i64,
    n: i64,
    k: i64,
    kc_words: i64,
    bt: bool,
    at: bool,
}

fn case(m: i64, n: i64, k: i64) -> Case {
    Case { batch: 1, m, n, k, kc_words: 512, bt: false, at: false }
}

/// Operand values, as their bits (bf16) or bytes (s8).
#[derive(Clone, Copy, PartialEq)]
enum Values {
    /// Integers in -4..=4 (bf16) or any byte (s8): every partial sum exact.
    Exact,
    /// Fractions in (-1, 1) with 8 significant bits: bf16 sums round.
    Fractions,
}

struct Operands {
    a: Vec<u16>,
    b: Vec<u16>,
}

fn operands(kind: Kind, c: Case, values: Values) -> Operands {
    let mut seed = (c.m * 31 + c.n * 7 + c.k) as u64;
    let mut next = move || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let r = seed >> 40;
        match (kind, values) {
            (Kind::S8, _) => (r as u8) as u16,
            (Kind::Bf16, Values::Exact) => (((r % 9) as f32 - 4.0).to_bits() >> 16) as u16,
            (Kind::Bf16, Values::Fractions) => (((r % 511) as f32 / 256.0 - 0.998).to_bits() >> 16) as u16,
        }
    };
    let a = (0..c.batch * c.m * c.k).map(|_| next()).collect();
    let b = (0..c.batch * c.k * c.n).map(|_| next()).collect();
    Operands { a, b }
}


/// A's and B's element at logical positions, as f64 (bf16 widened, s8 sign-extended).
fn value(kind: Kind, bits: u16) -> f64 {
    match kind {
        Kind::Bf16 => f64::from(f32::from_bits(u32::from(bits) << 16)),
        Kind::S8 => f64::from(bits as u8 as i8),
    }
}

fn a_index(c: &Case, bi: i64, i: i64, p: i64) -> usize {
    (bi * c.m * c.k + if c.at { p * c.m + i } else { i * c.k + p }) as usize
}

fn b_index(c: &Case, bi: i64, p: i64, j: i64) -> usize {
    (bi * c.k * c.n + if c.bt { j * c.k + p } else { p * c.n + j }) as usize
}

/// What an epilogue saw: C and how often each element was finished.
struct Seen {
    n: i64,
    m: i64,
    counts: Vec<AtomicU32>,
    /// Whether the epilogue asked for whole rows, and the regions it got that were not.
    whole_rows: bool,
    partial_rows: AtomicU32,
}

/// Counts visits (the product is checked unchanged: the count says each element came once,
/// after its last k block, which the exact result then shows).
unsafe extern "C" fn count_visits(ctx: *const std::ffi::c_void, b: i64, r0: i64, r1: i64, c0: i64, c1: i64) {
    let s = unsafe { &*(ctx as *const Seen) };
    if s.whole_rows && (c0, c1) != (0, s.n) {
        s.partial_rows.fetch_add(1, Ordering::Relaxed);
    }
    for i in r0..r1 {
        for j in c0..c1 {
            s.counts[(b * s.m * s.n + i * s.n + j) as usize].fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// C of the case on `U` tile units (a rayon pool of `threads`), as 4-byte words; with
/// `epilogue`, checks that every element was finished exactly once (and, with `whole_rows`,
/// in regions of whole rows).
fn run<U: TileUnit + Default>(kind: Kind, c: Case, ops: &Operands, threads: usize, epilogue: bool, whole_rows: bool) -> Vec<u32> {
    let a8: Vec<u8> = ops.a.iter().map(|&x| x as u8).collect();
    let b8: Vec<u8> = ops.b.iter().map(|&x| x as u8).collect();
    let (a, b) = match kind {
        Kind::Bf16 => (ops.a.as_ptr() as *const std::ffi::c_void, ops.b.as_ptr() as *const std::ffi::c_void),
        Kind::S8 => (a8.as_ptr() as *const std::ffi::c_void, b8.as_ptr() as *const std::ffi::c_void),
    };
    let mut out = vec![0xdead_beefu32; (c.batch * c.m * c.n) as usize];
    let (a_row, a_col) = if c.at { (1, c.m) } else { (c.k, 1) };
    let (b_row, b_col) = if c.bt { (1, c.k) } else { (c.n, 1) };
    let seen = Seen { n: c.n, m: c.m, counts: (0..c.batch * c.m * c.n).map(|_| AtomicU32::new(0)).collect(), whole_rows, partial_rows: AtomicU32::new(0) };
    let desc = GemmF32 {
        batch: c.batch, batch_inner: 1, m: c.m, n: c.n, k: c.k,
        a, a_batch: BatchStrides::single(c.m * c.k), a_row, a_col,
        b, b_batch: BatchStrides::single(c.k * c.n), b_row, b_col,
        c: out.as_mut_ptr() as *mut std::ffi::c_void, c_batch: BatchStrides::single(c.m * c.n), c_row: c.n,
        mr: 0, nv: 0, kc: 0, nc: 0,
        epilogue: if epilogue { Some(count_visits as Epilogue) } else { None },
        epilogue_ctx: &seen as *const Seen as *const std::ffi::c_void,
        epilogue_rows: i64::from(whole_rows),
    };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let desc = &desc as *const GemmF32 as usize;
    assert_eq!(pool.install(move || unsafe { gemm_on::<U>(&*(desc as *const GemmF32), kind, c.kc_words) }), 0);
    if epilogue {
        assert!(seen.counts.iter().all(|n| n.load(Ordering::Relaxed) == 1), "{c:?}: an element finished other than once");
        assert_eq!(seen.partial_rows.load(Ordering::Relaxed), 0, "{c:?}: a whole-row epilogue got part of a row");
    }
    out
}

/// Checks C against the reference: bit for bit with exact values (s8 wrapping), else within
/// the rounding bound of a depth-`k` f32 sum.
fn check(kind: Kind, c: Case, values: Values, got: &[u32], what: &str) {
    let ops = operands(kind, c, values);
    for bi in 0..c.batch {
        for i in 0..c.m {
            for j in 0..c.n {
                let (mut sum, mut magnitude, mut wrapped) = (0f64, 0f64, 0i32);
                for p in 0..c.k {
                    let x = value(kind, ops.a[a_index(&c, bi, i, p)]) * value(kind, ops.b[b_index(&c, bi, p, j)]);
                    sum += x;
                    magnitude += x.abs();
                    wrapped = wrapped.wrapping_add(x as i32);
                }
                let word = got[(bi * c.m * c.n + i * c.n + j) as usize];
                let at = format!("{what} {c:?}: C[{bi}][{i}][{j}]");
                match (kind, values) {
                    (Kind::S8, _) => assert_eq!(word as i32, wrapped, "{at}"),
                    (Kind::Bf16, Values::Exact) => assert_eq!(f32::from_bits(word), sum as f32, "{at}"),
                    (Kind::Bf16, Values::Fractions) => {
                        // Each of at most k + 2 roundings errs by at most 2^-24 of a partial sum.
                        let bound = (c.k as f64 + 2.0) * magnitude * f64::powi(2.0, -24);
                        let err = (f64::from(f32::from_bits(word)) - sum).abs();
                        assert!(err <= bound, "{at}: {} against {sum} (bound {bound})", f32::from_bits(word));
                    }
                }
            }
        }
    }
}

/// The case on the model, checked.
fn check_model(kind: Kind, c: Case, values: Values, threads: usize) {
    let got = run::<TileModel>(kind, c, &operands(kind, c, values), threads, false, false);
    check(kind, c, values, &got, &format!("model, {threads} threads"));
}

/// Shapes around the tiles' sizes: M and N 1..70 (one and more 16-row tiles, 32-row strips
/// and panels, partial ones), K short of, at and past whole k steps.
#[test]
fn model_driver_gives_exact_products_for_edge_shapes() {
    for kind in [Kind::Bf16, Kind::S8] {
        let step = 16 * if kind == Kind::Bf16 { 2 } else { 4 };
        for (m, n) in [(1, 1), (15, 17), (16, 16), (31, 33), (32, 32), (45, 70), (70, 45)] {
            for k in [1, 3, step - 1, step, step + 1, 2 * step + 7] {
                check_model(kind, case(m, n, k), Values::Exact, 1);
            }
        }
    }
}

/// Several k blocks (C loaded back into the tiles, edges through the buffer), batches, B
/// transposed and A column-major, 1-3 threads, and the epilogue seeing each element once.
#[test]
fn model_driver_handles_k_blocks_strides_batches_and_threads() {
    for kind in [Kind::Bf16, Kind::S8] {
        for threads in 1..=3 {
            for (bt, at) in [(false, false), (true, false), (false, true), (true, true)] {
                // Three k blocks of 16 words, the last partial: big enough to run in parallel.
                let c = Case { batch: 2, m: 67, n: 70, k: 16 * 4 * 2 + 3, kc_words: 16, bt, at };
                check_model(kind, c, Values::Exact, threads);
            }
        }
        let c = Case { batch: 3, m: 40, n: 50, k: 300, kc_words: 32, bt: false, at: false };
        let got = run::<TileModel>(kind, c, &operands(kind, c, Values::Exact), 2, true, false);
        check(kind, c, Values::Exact, &got, "model with an epilogue");
        // Wider than a panel: the threads would share a row block's panels.
        let c = Case { batch: 1, m: 40, n: 150, k: 300, kc_words: 32, bt: false, at: false };
        let got = run::<TileModel>(kind, c, &operands(kind, c, Values::Exact), 2, true, true);
        check(kind, c, Values::Exact, &got, "model with a whole-row epilogue");
    }
}

/// Fractions: rounded sums within the depth's bound; s8 sums that wrap modulo 2^32.
#[test]
fn model_driver_walks_batches_of_two_strides() {
    use super::super::batch_tests::{attention_cases, Elements};
    // Sizes around the driver's 32-row strips and 32-column panels (the descriptor's tile is
    // not used); k blocks of two steps, so that the small cases take several.
    attention_cases(&|g: &GemmF32| unsafe { gemm_on::<TileModel>(g, Kind::Bf16, 32) }, Elements::Bf16, 32, 2, 16);
    attention_cases(&|g: &GemmF32| unsafe { gemm_on::<TileModel>(g, Kind::S8, 32) }, Elements::S8, 32, 2, 16);
}

#[test]
fn model_driver_rounds_within_bounds_and_wraps() {
    for threads in [1, 2] {
        check_model(Kind::Bf16, Case { batch: 1, m: 50, n: 40, k: 1000, kc_words: 128, bt: false, at: false }, Values::Fractions, threads);
    }
    // 2^14 per product of -128 and -128, 2^17 + 5 products: the sums pass 2^31.
    let c = Case { batch: 1, m: 3, n: 2, k: (1 << 17) + 5, kc_words: 4096, bt: false, at: false };
    let ops = Operands { a: vec![0x80; (c.m * c.k) as usize], b: vec![0x80; (c.k * c.n) as usize] };
    let got = run::<TileModel>(Kind::S8, c, &ops, 1, false, false);
    let want = (((1i64 << 17) + 5) << 14) as i32;
    assert!(got.iter().all(|&w| w as i32 == want), "wrapped sums: {:?}, want {want}", &got[..3]);
}

#[test]
fn model_follows_the_instruction_rules() {
    let mut t = TileModel::default();
    // Nothing configured: every tile instruction faults.
    assert!(t.tilezero(0).is_err());
    // Reserved bytes, too many rows, rows without bytes: #GP.
    let good = palette1([(16, 64); 8]);
    for (at, byte) in [(2, 1), (40, 1), (60, 1), (48, 17), (16, 0)] {
        let mut bad = good;
        bad[at] = byte;
        if at == 16 {
            bad[17] = 0;
        }
        assert!(t.ldtilecfg(&bad).is_err(), "byte {at} = {byte}");
    }
    assert!(t.ldtilecfg(&[2; 64]).is_err(), "palette 2");
    // Tile 0: 2 rows of 8 bytes; tiles 1 and 2 as A (2 x 8) and B (2 x 8); tile 3 unused.
    let mut shapes = [(0, 0); 8];
    shapes[0] = (2, 8);
    shapes[1] = (2, 8);
    shapes[2] = (2, 8);
    t.ldtilecfg(&palette1(shapes)).unwrap();
    assert!(t.tilezero(3).is_err(), "an unconfigured tile");
    // A load reads the configured bytes of each row at the stride; the rest stays zero.
    let memory: Vec<u8> = (1..=32).collect();
    unsafe { t.tileloadd(0, memory.as_ptr(), 16) }.unwrap();
    let mut out = [0u8; 32];
    unsafe { t.tilestored(0, out.as_mut_ptr(), 16) }.unwrap();
    assert_eq!(&out[..8], &memory[..8]);
    assert_eq!(&out[8..16], &[0; 8], "past the row's bytes: not written");
    assert_eq!(&out[16..24], &memory[16..24]);
    // s8: C[i][j] += sum over words p and bytes t of A[i][4p + t] * B[p][4j + t], wrapping.
    let a: [u8; 16] = [1, 2, 3, 4, 5, 6, 7, 8, 0xff, 0, 0, 0x80, 0, 0, 0, 0];
    let b: [u8; 16] = [1, 1, 1, 1, 2, 0, 0, 0x80, 0, 0, 0, 1, 1, 0, 0, 0];
    unsafe {
        t.tileloadd(1, a.as_ptr(), 8).unwrap();
        t.tileloadd(2, b.as_ptr(), 8).unwrap();
        t.tilezero(0).unwrap();
        t.tdpbssd(0, 1, 2).unwrap();
        t.tdpbssd(0, 1, 2).unwrap();
        t.tilestored(0, out.as_mut_ptr(), 8).unwrap();
    }
    let c: Vec<i32> = out[..16].chunks(4).map(|w| i32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
    // Row 0: j = 0: (1+2+3+4) + 0*... ; B row 1 = words [0,0,0,1], [1,0,0,0].
    let want = |i: usize, j: usize| -> i32 {
        (0..2).map(|p| (0..4).map(|q| i32::from(a[8 * i + 4 * p + q] as i8) * i32::from(b[8 * p + 4 * j + q] as i8)).sum::<i32>()).sum::<i32>() * 2
    };
    assert_eq!(c, vec![want(0, 0), want(0, 1), want(1, 0), want(1, 1)]);
    // Shapes that do not multiply, and a tile used twice: #UD.
    assert!(t.tdpbssd(0, 1, 1).is_err());
    t.ldtilecfg(&palette1([(2, 8), (3, 8), (2, 8), (0, 0), (0, 0), (0, 0), (0, 0), (0, 0)])).unwrap();
    assert!(t.tdpbssd(0, 1, 2).is_err(), "C rows != A rows");
    // bf16: pairs of each A word and B word multiplied and added to C.
    t.ldtilecfg(&palette1([(1, 4), (1, 8), (2, 4), (0, 0), (0, 0), (0, 0), (0, 0), (0, 0)])).unwrap();
    let bf = |x: f32| ((x.to_bits() >> 16) as u16).to_le_bytes();
    let a: Vec<u8> = [1.5f32, -2.0, 4.0, 0.25].iter().flat_map(|&x| bf(x)).collect();
    let b: Vec<u8> = [2.0f32, 3.0, -1.0, 8.0].iter().flat_map(|&x| bf(x)).collect();
    let c0 = 10f32.to_le_bytes();
    unsafe {
        t.tileloadd(0, c0.as_ptr(), 4).unwrap();
        t.tileloadd(1, a.as_ptr(), 8).unwrap();
        t.tileloadd(2, b.as_ptr(), 4).unwrap();
        t.tdpbf16ps(0, 1, 2).unwrap();
        t.tilestored(0, out.as_mut_ptr(), 4).unwrap();
    }
    // 10 + (1.5 * 2 - 2 * 3) + (4 * -1 + 0.25 * 8) = 5.
    assert_eq!(f32::from_le_bytes([out[0], out[1], out[2], out[3]]), 5.0);
}

/// On a CPU with AMX the hardware must match the model (the probe passed, and a larger
/// product agrees); elsewhere the hardware unit is reported unusable. Says which it checked.
#[test]
fn hardware_matches_the_model_or_is_reported_unusable() {
    for (bf16, kind) in [(true, Kind::Bf16), (false, Kind::S8)] {
        match amx_status(bf16) {
            Ok(()) => {
                for values in [Values::Exact, Values::Fractions] {
                    let c = Case { batch: 2, m: 70, n: 67, k: 16 * 4 * 4 + 9, kc_words: 32, bt: true, at: false };
                    let ops = operands(kind, c, values);
                    for threads in [1, 2] {
                        let hw = run::<Hardware>(kind, c, &ops, threads, false, false);
                        check(kind, c, values, &hw, "hardware");
                        if values == Values::Exact {
                            assert!(hw == run::<TileModel>(kind, c, &ops, threads, false, false), "{kind:?}: hardware and model differ");
                        }
                    }
                }
                println!("{kind:?}: checked the AMX hardware against the model");
            }
            Err(why) => {
                let has_amx = hardware::unusable_because(if bf16 { hardware::Product::Bf16 } else { hardware::Product::Int8 }).is_none();
                assert!(!has_amx, "{kind:?}: the CPU and OS allow AMX, yet the probe failed: {why}");
                println!("{kind:?}: AMX unusable here ({why}); checked that it is reported so");
            }
        }
    }
}

/// Without AMX the entry points are the word kernels: the same bits as calling those.
#[test]
fn entry_points_fall_back_to_the_word_kernels() {
    if amx_status(true).is_ok() || !super::super::host_multiplies_bf16_pairs() || !super::super::host_multiplies_s8_quads() {
        println!("fallback not checked: the host has AMX, or lacks the word kernels' features");
        return;
    }
    for (kind, entry, operands_kind) in [(Kind::Bf16, hlojit_rt_gemm_bf16_amx as unsafe extern "C" fn(*const GemmF32) -> i32, super::super::Operands::Bf16Pairs), (Kind::S8, hlojit_rt_gemm_s8_amx, super::super::Operands::S8Quads)] {
        let c = case(45, 70, 301);
        let ops = operands(kind, c, Values::Fractions);
        let a8: Vec<u8> = ops.a.iter().map(|&x| x as u8).collect();
        let b8: Vec<u8> = ops.b.iter().map(|&x| x as u8).collect();
        let (a, b) = match kind {
            Kind::Bf16 => (ops.a.as_ptr() as *const std::ffi::c_void, ops.b.as_ptr() as *const std::ffi::c_void),
            Kind::S8 => (a8.as_ptr() as *const std::ffi::c_void, b8.as_ptr() as *const std::ffi::c_void),
        };
        let result = |f: &dyn Fn(&GemmF32) -> i32| {
            let mut out = vec![0u32; (c.m * c.n) as usize];
            let desc = GemmF32 {
                batch: 1, batch_inner: 1, m: c.m, n: c.n, k: c.k,
                a, a_batch: BatchStrides::single(0), a_row: c.k, a_col: 1,
                b, b_batch: BatchStrides::single(0), b_row: c.n, b_col: 1,
                c: out.as_mut_ptr() as *mut std::ffi::c_void, c_batch: BatchStrides::single(0), c_row: c.n,
                mr: 12, nv: 2, kc: 1024, nc: c.n,
                epilogue: None, epilogue_ctx: std::ptr::null(), epilogue_rows: 0,
            };
            assert_eq!(f(&desc), 0);
            out
        };
        let via_entry = result(&|d| unsafe { entry(d) });
        let direct = result(&|d| unsafe { gemm(d, Isa::Avx512, operands_kind) });
        assert!(via_entry == direct, "{kind:?}: the AMX entry point without AMX differs from the word kernel");
        check(kind, c, Values::Fractions, &via_entry, "fallback");
    }
    println!("no AMX: both entry points ran the word kernels");
}
