//! The bf16 x bf16 -> f32 micro-kernel for AVX512-BF16: packed words hold k-adjacent pairs of
//! bf16 elements (the even k in the low half), and `vdpbf16ps` adds both products of each lane's
//! pair to its f32 accumulator. It repeats the compiler's generated pair kernel
//! (`bf16_pair_steps` in `compiler/src/codegen/emitters/gemm/microkernel.rs`) step for step:
//! per pair, every accumulator gets one `vdpbf16ps` of the broadcast A pair and the B vector
//! (A first, as the generated call passes them), from zero; the tile is stored or added to C
//! as the f32 kernels store theirs. `vdpbf16ps` flushes subnormal inputs and outputs and rounds
//! once per pair, whoever calls it: the same instruction sequence gives the same bits.

#[cfg(target_arch = "x86_64")]
use super::microkernel::prefetch_c_rows;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Largest tile: 12 rows of 4 vectors of 16 lanes.
#[cfg(target_arch = "x86_64")]
const MAX_TILE: usize = 12 * 64;

/// `C[MR x 16NV] (+)= Ap x Bp` over `kp` packed pair-words (A `[kp][MR]`, B `[kp][16NV]`).
///
/// # Safety
/// As [`super::microkernel::Microkernel::call`], on a CPU with AVX-512F and AVX512-BF16.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn tile<const MR: usize, const NV: usize>(a: *const u32, b: *const u32, c: *mut u32, kp: usize, ldc: usize, rows: usize, cols: usize, accumulate: bool) {
    const LANES: usize = 16;
    let nr = NV * LANES;
    prefetch_c_rows(c, ldc, MR.min(rows), nr * 4);
    let mut acc: [[__m512; NV]; MR] = [[_mm512_setzero_ps(); NV]; MR];
    super::microkernel::k_loop!(kp, |p| {
        let bp = unsafe { b.add(p * nr) };
        let mut bv: [__m512bh; NV] = [pairs(_mm512_setzero_si512()); NV];
        for v in 0..NV {
            bv[v] = pairs(unsafe { _mm512_loadu_si512(bp.add(v * LANES) as *const __m512i) });
        }
        let ap = unsafe { a.add(p * MR) };
        for r in 0..MR {
            let s = pairs(_mm512_set1_epi32(unsafe { *ap.add(r) } as i32));
            for v in 0..NV {
                acc[r][v] = _mm512_dpbf16_ps(acc[r][v], s, bv[v]);
            }
        }
    }, |p| {
        // The A strip streams from L2 (the B panel stays in L1): ask for it sixteen steps
        // ahead, as the f32 kernels do.
        _mm_prefetch::<_MM_HINT_T0>(a.wrapping_add((p + 16) * MR) as *const i8);
    });
    super::microkernel::store_tile!(acc, c as *mut f32, ldc, rows, cols, accumulate, MR, NV, LANES, __m512, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_add_ps);
}


/// 32 bf16 values from their bits.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn pairs(v: __m512i) -> __m512bh {
    // SAFETY: both are 64 bytes of plain bits.
    unsafe { std::mem::transmute::<__m512i, __m512bh>(v) }
}
