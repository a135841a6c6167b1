//! Batches numbered across two strides (`GemmF32::batch_inner`). JAX keeps attention's heads
//! between sequence and features (`[batch, seq, heads, dim]`), so its batch `outer * heads +
//! head` lies at `outer * seq * heads * dim + head * dim`: no single stride walks it. Each
//! variant must read and write such operands where they lie, checked element by element
//! against a product on the logical indices (small integers: exact in every type).

use super::*;

/// What the operands are stored as (the result is f32, or s32 for s8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Elements {
    F32,
    Bf16,
    S8,
}

/// How a logical `[outer][inner][rows][cols]` matrix is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stored {
    /// As it is numbered: one batch stride.
    Plain,
    /// `[outer][rows][inner][cols]`: the inner batch between rows and columns.
    Interleaved,
    /// `[outer][cols][inner][rows]`: interleaved and transposed.
    InterleavedTransposed,
}

/// Sizes of a case: `outer * inner` batches of `m x k` times `k x n`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Case {
    pub outer: i64,
    pub inner: i64,
    pub m: i64,
    pub n: i64,
    pub k: i64,
}

/// Batch strides, row stride and column stride of a `rows x cols` matrix stored as `s`.
fn strides(s: Stored, inner: i64, rows: i64, cols: i64) -> (BatchStrides, i64, i64) {
    match s {
        Stored::Plain => (BatchStrides { outer: inner * rows * cols, inner: rows * cols }, cols, 1),
        Stored::Interleaved => (BatchStrides { outer: rows * inner * cols, inner: cols }, inner * cols, 1),
        Stored::InterleavedTransposed => (BatchStrides { outer: cols * inner * rows, inner: rows }, 1, inner * rows),
    }
}

/// Small integers `-3..=3`, one per element of a logical matrix.
fn values(count: i64, seed: u64) -> Vec<i64> {
    let mut s = seed;
    (0..count)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 33) % 7) as i64 - 3
        })
        .collect()
}

/// The logical `[batch][rows][cols]` values `v` laid out as `s` (`inner` batches per outer
/// one), as the bytes of `elements`.
fn lay_out(v: &[i64], elements: Elements, s: Stored, inner: i64, rows: i64, cols: i64) -> Vec<u8> {
    let size = match elements {
        Elements::F32 => 4,
        Elements::Bf16 => 2,
        Elements::S8 => 1,
    };
    let (bs, row, col) = strides(s, inner, rows, cols);
    let mut out = vec![0u8; v.len() * size];
    for (e, &x) in v.iter().enumerate() {
        let e = e as i64;
        let (b, r, c) = (e / (rows * cols), e / cols % rows, e % cols);
        let at = ((b / inner * bs.outer + b % inner * bs.inner + r * row + c * col) as usize) * size;
        let f = x as f32;
        match elements {
            Elements::F32 => out[at..at + 4].copy_from_slice(&f.to_ne_bytes()),
            Elements::Bf16 => out[at..at + 2].copy_from_slice(&((f.to_bits() >> 16) as u16).to_ne_bytes()),
            Elements::S8 => out[at] = x as i8 as u8,
        }
    }
    out
}

/// Runs `gemm` (on a pool of `threads`) on the case with A, B and C stored as `a`, `b` and
/// `c`, and checks every element of C.
#[allow(clippy::too_many_arguments)]
pub(super) fn check(gemm: &(dyn Fn(&GemmF32) -> i32 + Sync), elements: Elements, t: Case, a: Stored, b: Stored, c: Stored, tile: (i64, i64, i64), threads: usize) {
    let batch = t.outer * t.inner;
    let (mr, nv, kc) = tile;
    let av = values(batch * t.m * t.k, (t.m * 31 + t.k) as u64);
    let bv = values(batch * t.k * t.n, (t.n * 7 + t.k) as u64);
    let (a_bytes, b_bytes) = (lay_out(&av, elements, a, t.inner, t.m, t.k), lay_out(&bv, elements, b, t.inner, t.k, t.n));
    let (a_batch, a_row, a_col) = strides(a, t.inner, t.m, t.k);
    let (b_batch, b_row, b_col) = strides(b, t.inner, t.k, t.n);
    let (c_batch, c_row, c_col) = strides(c, t.inner, t.m, t.n);
    assert_eq!(c_col, 1, "C's columns are contiguous");
    // C as 4-byte words (f32 or s32), each a NaN (and an s32 no sum of these reaches) until
    // written.
    const UNWRITTEN: u32 = 0x7fc0_1234;
    let mut out = vec![UNWRITTEN; (batch * t.m * t.n) as usize];
    let desc = GemmF32 {
        batch,
        batch_inner: t.inner,
        m: t.m,
        n: t.n,
        k: t.k,
        a: a_bytes.as_ptr() as *const std::ffi::c_void,
        a_batch,
        a_row,
        a_col,
        b: b_bytes.as_ptr() as *const std::ffi::c_void,
        b_batch,
        b_row,
        b_col,
        c: out.as_mut_ptr() as *mut std::ffi::c_void,
        c_batch,
        c_row,
        mr,
        nv,
        kc,
        nc: t.n,
        epilogue: None,
        epilogue_ctx: std::ptr::null(),
        epilogue_rows: 0,
    };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    // The descriptor's pointers are not `Send`: passed as an address.
    let at = &desc as *const GemmF32 as usize;
    assert_eq!(pool.install(move || gemm(unsafe { &*(at as *const GemmF32) })), 0);
    let what = format!("{elements:?} {t:?} A {a:?} B {b:?} C {c:?} tile {mr}x{nv} kc={kc} threads={threads}");
    for bi in 0..batch {
        for i in 0..t.m {
            for j in 0..t.n {
                let want: i64 = (0..t.k).map(|p| av[((bi * t.m + i) * t.k + p) as usize] * bv[((bi * t.k + p) * t.n + j) as usize]).sum();
                let word = out[(bi / t.inner * c_batch.outer + bi % t.inner * c_batch.inner + i * c_row + j) as usize];
                let got = if elements == Elements::S8 { i64::from(word as i32) } else { f32::from_bits(word) as i64 };
                assert_eq!(got, want, "{what}: C[{bi}][{i}][{j}]");
            }
        }
    }
}

/// Attention's products: scores `Q K^T` (A interleaved, B interleaved and transposed, C
/// plain), context `P V` (C interleaved), and the gradients' `P^T dO` (A transposed); a small
/// serial case with edges and three k blocks and one large enough to run on the threads.
pub(super) fn attention_cases(gemm: &(dyn Fn(&GemmF32) -> i32 + Sync), elements: Elements, mr: i64, nv: i64, lanes: i64) {
    use Stored::*;
    let nr = nv * lanes;
    let layouts = [(Interleaved, InterleavedTransposed, Plain), (Plain, Interleaved, Interleaved), (InterleavedTransposed, Interleaved, Interleaved)];
    for (a, b, c) in layouts {
        let small = Case { outer: 2, inner: 3, m: 2 * mr + 3, n: nr + 5, k: 37 };
        check(gemm, elements, small, a, b, c, (mr, nv, 16), 1);
        let large = Case { outer: 2, inner: 4, m: 128, n: 64, k: 64 };
        for threads in [1, 3] {
            check(gemm, elements, large, a, b, c, (mr, nv, 512), threads);
        }
    }
    // One inner batch (a single stride after all) and one outer batch.
    check(gemm, elements, Case { outer: 3, inner: 1, m: mr + 1, n: nr, k: 20 }, Interleaved, Interleaved, Interleaved, (mr, nv, 512), 2);
    check(gemm, elements, Case { outer: 1, inner: 3, m: mr + 1, n: nr, k: 20 }, Interleaved, Interleaved, Interleaved, (mr, nv, 512), 2);
}

#[test]
fn batches_of_two_strides_on_every_word_variant() {
    let variants = [
        (Isa::Avx512, Operands::F32, Elements::F32, 12, 2, host_supports(Isa::Avx512)),
        (Isa::Avx512, Operands::Bf16, Elements::Bf16, 6, 4, host_supports(Isa::Avx512)),
        (Isa::Avx512, Operands::Bf16Pairs, Elements::Bf16, 12, 2, host_multiplies_bf16_pairs()),
        (Isa::Avx512, Operands::S8Quads, Elements::S8, 9, 3, host_multiplies_s8_quads()),
        (Isa::Avx2Fma, Operands::F32, Elements::F32, 6, 2, host_supports(Isa::Avx2Fma)),
        (Isa::Avx2Fma, Operands::Bf16, Elements::Bf16, 12, 1, host_supports(Isa::Avx2Fma)),
        (Isa::Avx2Fma, Operands::S8, Elements::S8, 6, 2, host_supports(Isa::Avx2Fma)),
    ];
    for (isa, operands, elements, mr, nv, runs) in variants {
        if runs {
            attention_cases(&|g: &GemmF32| unsafe { gemm(g, isa, operands) }, elements, mr, nv, isa.lanes());
        }
    }
}

#[test]
fn a_descriptor_without_inner_batches_is_refused() {
    let mut c = [0f32; 1];
    let a = [1f32; 1];
    let desc = GemmF32 {
        batch: 1,
        batch_inner: 0,
        m: 1,
        n: 1,
        k: 1,
        a: a.as_ptr() as *const std::ffi::c_void,
        a_batch: BatchStrides::single(0),
        a_row: 1,
        a_col: 1,
        b: a.as_ptr() as *const std::ffi::c_void,
        b_batch: BatchStrides::single(0),
        b_row: 1,
        b_col: 1,
        c: c.as_mut_ptr() as *mut std::ffi::c_void,
        c_batch: BatchStrides::single(0),
        c_row: 1,
        mr: 12,
        nv: 2,
        kc: 1,
        nc: 1,
        epilogue: None,
        epilogue_ctx: std::ptr::null(),
        epilogue_rows: 0,
    };
    assert_eq!(unsafe { gemm(&desc, Isa::Avx512, Operands::F32) }, 1);
    let message = crate::custom_call::take_last_error().unwrap_or_default();
    assert!(message.contains("0 inner batches"), "{message}");
}
