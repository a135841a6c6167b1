//! Register-blocked micro-kernels: `C[mr x nr] (+)= Ap[mr x kc] * Bp[kc x nr]` on packed
//! panels (A `[kc][mr]`, B `[kc][nr]`), the tile in vector registers for the whole k loop.
//! The same arithmetic as the generated micro-kernel: per k, every accumulator gets one fused
//! multiply-add of the broadcast A element and the B vector, from zero; a full tile is stored
//! or added to C with vector adds, an edge tile element by element. Panels and C are 4-byte
//! words: f32 values, or (s8 kernels, see `int8.rs`) i16 pairs and an s32 result.
//!
//! The direct variants read an f32 A whose rows are contiguous along k where it lies (one
//! broadcast per row from that row's stream): the packed strip would hold the same values,
//! read in the same order, so the results are the same bits, without the copy.

use super::{Isa, Operands};

pub(super) type Kernel = unsafe fn(*const u32, *const u32, *mut u32, usize, usize, usize, usize, bool);
type DirectKernel = unsafe fn(*const f32, usize, *const u32, *mut u32, usize, usize, usize, usize, bool);

/// A micro-kernel chosen for a tile and instruction set, with the variant that reads f32 A
/// unpacked when there is one.
#[derive(Clone, Copy)]
pub struct Microkernel(Kernel, Option<DirectKernel>);

impl Microkernel {
    /// The kernel for `mr` rows of `nv` vectors, if one is built: the tiles the compiler's
    /// blocking picks (AVX-512: 12x1, 12x2, 9x3, 6x4; AVX2: 12x1, 6x2; s8 pairs: AVX2 only,
    /// s8 quads: AVX-512 only).
    pub fn select(isa: Isa, operands: Operands, mr: i64, nv: i64) -> Option<Microkernel> {
        #[cfg(target_arch = "x86_64")]
        {
            // The word kernels of AVX-512 only, for the tiles of 4-byte results and 32 registers.
            let words: Option<Kernel> = match (isa, operands, mr, nv) {
                (Isa::Avx512, Operands::Bf16Pairs, 12, 1) => Some(super::bf16::tile::<12, 1>),
                (Isa::Avx512, Operands::Bf16Pairs, 12, 2) => Some(super::bf16::tile::<12, 2>),
                (Isa::Avx512, Operands::Bf16Pairs, 9, 3) => Some(super::bf16::tile::<9, 3>),
                (Isa::Avx512, Operands::Bf16Pairs, 6, 4) => Some(super::bf16::tile::<6, 4>),
                (Isa::Avx512, Operands::S8Quads, 12, 1) => Some(super::int8_vnni::tile::<12, 1>),
                (Isa::Avx512, Operands::S8Quads, 12, 2) => Some(super::int8_vnni::tile::<12, 2>),
                (Isa::Avx512, Operands::S8Quads, 9, 3) => Some(super::int8_vnni::tile::<9, 3>),
                (Isa::Avx512, Operands::S8Quads, 6, 4) => Some(super::int8_vnni::tile::<6, 4>),
                _ => None,
            };
            if matches!(operands, Operands::Bf16Pairs | Operands::S8Quads) {
                return words.map(|k| Microkernel(k, None));
            }
            let floats = matches!(operands, Operands::F32 | Operands::Bf16);
            let direct: Option<DirectKernel> = match (isa, operands, mr, nv) {
                (Isa::Avx512, Operands::F32, 12, 1) => Some(avx512::direct::<12, 1>),
                (Isa::Avx512, Operands::F32, 12, 2) => Some(avx512::direct::<12, 2>),
                (Isa::Avx512, Operands::F32, 9, 3) => Some(avx512::direct::<9, 3>),
                (Isa::Avx512, Operands::F32, 6, 4) => Some(avx512::direct::<6, 4>),
                (Isa::Avx2Fma, Operands::F32, 12, 1) => Some(avx2::direct::<12, 1>),
                (Isa::Avx2Fma, Operands::F32, 6, 2) => Some(avx2::direct::<6, 2>),
                _ => None,
            };
            let k: Kernel = match (isa, floats, mr, nv) {
                (Isa::Avx512, true, 12, 1) => avx512::tile::<12, 1>,
                (Isa::Avx512, true, 12, 2) => avx512::tile::<12, 2>,
                (Isa::Avx512, true, 9, 3) => avx512::tile::<9, 3>,
                (Isa::Avx512, true, 6, 4) => avx512::tile::<6, 4>,
                (Isa::Avx2Fma, true, 12, 1) => avx2::tile::<12, 1>,
                (Isa::Avx2Fma, true, 6, 2) => avx2::tile::<6, 2>,
                (Isa::Avx2Fma, false, 12, 1) => super::int8::avx2_tile::<12, 1>,
                (Isa::Avx2Fma, false, 6, 2) => super::int8::avx2_tile::<6, 2>,
                _ => return None,
            };
            Some(Microkernel(k, direct))
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (isa, operands, mr, nv);
            None
        }
    }

    /// # Safety
    /// Panels and tile as the generated kernel takes them; the CPU has the kernel's features.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn call(&self, a: *const u32, b: *const u32, c: *mut u32, kc: usize, ldc: usize, rows: usize, cols: usize, accumulate: bool) {
        unsafe { (self.0)(a, b, c, kc, ldc, rows, cols, accumulate) }
    }

    /// Whether [`Microkernel::call_direct`] may be called (f32 operands).
    pub fn has_direct(&self) -> bool {
        self.1.is_some()
    }

    /// As [`Microkernel::call`] with A unpacked: `rows` (at least one) rows of `kc` f32
    /// values, row `r` at `a + r * lda`.
    ///
    /// # Safety
    /// As [`Microkernel::call`], and [`Microkernel::has_direct`].
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn call_direct(&self, a: *const f32, lda: usize, b: *const u32, c: *mut u32, kc: usize, ldc: usize, rows: usize, cols: usize, accumulate: bool) {
        if let Some(f) = self.1 {
            unsafe { f(a, lda, b, c, kc, ldc, rows, cols, accumulate) }
        }
    }
}

/// Stores (or adds) the `rows x cols` corner of the register tile `acc` to C. A macro, not a
/// function: a `#[target_feature]` function cannot be forced inline, and the call (the tile
/// spilled to the stack) cost a few percent of a GEMM with k = 64.
macro_rules! store_tile {
    ($acc:ident, $c:expr, $ldc:ident, $rows:ident, $cols:ident, $accumulate:ident, $mr:ident, $nv:ident, $lanes:ident, $vec:ty, $load:ident, $store:ident, $add:ident) => {{
        let c: *mut f32 = $c;
        let nr = $nv * $lanes;
        if $rows == $mr && $cols == nr {
            for r in 0..$mr {
                for v in 0..$nv {
                    let p = unsafe { c.add(r * $ldc + v * $lanes) };
                    let x: $vec = if $accumulate { $add($acc[r][v], unsafe { $load(p) }) } else { $acc[r][v] };
                    unsafe { $store(p, x) };
                }
            }
        } else {
            // An edge tile: through a copy of the tile, element by element.
            let mut buf = [0f32; MAX_TILE];
            for r in 0..$mr {
                for v in 0..$nv {
                    unsafe { $store(buf.as_mut_ptr().add(r * nr + v * $lanes), $acc[r][v]) };
                }
            }
            for r in 0..$rows {
                for j in 0..$cols {
                    let x = buf[r * nr + j];
                    let p = unsafe { c.add(r * $ldc + j) };
                    unsafe { *p = if $accumulate { x + *p } else { x } };
                }
            }
        }
    }};
}

/// Asks for the C rows (`rows` of `row_bytes`, `ldc` elements apart) a tile will store to or
/// add to while its k loop runs: they come from L3 or memory (C is walked in panels, its rows
/// far apart). Rows need not start on a cache line, so the last byte of each is asked for too.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn prefetch_c_rows<T>(c: *const T, ldc: usize, rows: usize, row_bytes: usize) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    for r in 0..rows {
        let row = c.wrapping_add(r * ldc) as *const i8;
        for offset in (0..row_bytes).step_by(64).chain([row_bytes - 1]) {
            // SAFETY: a prefetch does not fault.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(row.wrapping_add(offset)) };
        }
    }
}

/// `for k in 0..$kc { $step(k) }`, unrolled by four with `$every4(k)` before each group:
/// the loop's own instructions (counter, compare, branch) otherwise take issue slots the
/// FMAs need (measured: about 5% of a tile's throughput). The steps run in the same order.
macro_rules! k_loop {
    ($kc:expr, |$k:ident| $step:block, |$k4:ident| $every4:block) => {{
        let kc: usize = $kc;
        let mut k0 = 0;
        while k0 + 4 <= kc {
            {
                let $k4 = k0;
                $every4
            }
            for $k in k0..k0 + 4 $step
            k0 += 4;
        }
        for $k in k0..kc $step
    }};
}

pub(super) use {k_loop, store_tile};

/// One instruction set's kernels: `$vec` of `$lanes` f32 and its intrinsics.
macro_rules! isa_kernels {
    ($module:ident, $features:literal, $vec:ty, $lanes:expr, $zero:ident, $load:ident, $store:ident, $set1:ident, $fmadd:ident, $add:ident) => {
        #[cfg(target_arch = "x86_64")]
        mod $module {
            use std::arch::x86_64::*;
            const LANES: usize = $lanes;
            /// Largest tile: 12 rows of 4 vectors of 16 lanes.
            const MAX_TILE: usize = 12 * 64;

            /// # Safety
            /// As [`super::Microkernel::call`].
            #[target_feature(enable = $features)]
            #[allow(clippy::too_many_arguments)]
            pub unsafe fn tile<const MR: usize, const NV: usize>(
                a: *const u32,
                b: *const u32,
                c: *mut u32,
                kc: usize,
                ldc: usize,
                rows: usize,
                cols: usize,
                accumulate: bool,
            ) {
                let (a, b) = (a as *const f32, b as *const f32);
                let nr = NV * LANES;
                super::prefetch_c_rows(c, ldc, MR.min(rows), nr * 4);
                let mut acc: [[$vec; NV]; MR] = [[$zero(); NV]; MR];
                k_loop!(kc, |k| {
                    let bk = unsafe { b.add(k * nr) };
                    let mut bv: [$vec; NV] = [$zero(); NV];
                    for v in 0..NV {
                        bv[v] = unsafe { $load(bk.add(v * LANES)) };
                    }
                    let ak = unsafe { a.add(k * MR) };
                    for r in 0..MR {
                        let s = $set1(unsafe { *ak.add(r) });
                        for v in 0..NV {
                            acc[r][v] = $fmadd(s, bv[v], acc[r][v]);
                        }
                    }
                }, |k| {
                    // The A strip streams from L2 (the B panel stays in L1): ask for it
                    // sixteen steps ahead.
                    _mm_prefetch::<_MM_HINT_T0>(a.wrapping_add((k + 16) * MR) as *const i8);
                });
                store_tile!(acc, c as *mut f32, ldc, rows, cols, accumulate, MR, NV, LANES, $vec, $load, $store, $add);
            }

            /// [`tile`] reading A where it lies, row `r` at `a + r * lda`, contiguous along k
            /// (rows past `rows` read the last one again; their results are not stored).
            ///
            /// # Safety
            /// As [`super::Microkernel::call_direct`].
            #[target_feature(enable = $features)]
            #[allow(clippy::too_many_arguments)]
            pub unsafe fn direct<const MR: usize, const NV: usize>(
                a: *const f32,
                lda: usize,
                b: *const u32,
                c: *mut u32,
                kc: usize,
                ldc: usize,
                rows: usize,
                cols: usize,
                accumulate: bool,
            ) {
                let b = b as *const f32;
                let nr = NV * LANES;
                let mut row = [a; MR];
                for (r, p) in row.iter_mut().enumerate() {
                    *p = unsafe { a.add(r.min(rows - 1) * lda) };
                }
                super::prefetch_c_rows(c, ldc, MR.min(rows), nr * 4);
                let mut acc: [[$vec; NV]; MR] = [[$zero(); NV]; MR];
                k_loop!(kc, |k| {
                    let bk = unsafe { b.add(k * nr) };
                    let mut bv: [$vec; NV] = [$zero(); NV];
                    for v in 0..NV {
                        bv[v] = unsafe { $load(bk.add(v * LANES)) };
                    }
                    for r in 0..MR {
                        let s = $set1(unsafe { *row[r].add(k) });
                        for v in 0..NV {
                            acc[r][v] = $fmadd(s, bv[v], acc[r][v]);
                        }
                    }
                }, |_k| {});
                store_tile!(acc, c as *mut f32, ldc, rows, cols, accumulate, MR, NV, LANES, $vec, $load, $store, $add);
            }
        }
    };
}

isa_kernels!(avx512, "avx512f", __m512, 16, _mm512_setzero_ps, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps);
isa_kernels!(avx2, "avx2,fma", __m256, 8, _mm256_setzero_ps, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps);
