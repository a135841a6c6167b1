//! The s8 x s8 -> s32 micro-kernel for AVX2 (no VNNI needed): packed words hold k-adjacent
//! pairs of elements widened to i16, and `vpmaddwd` multiplies a broadcast A pair with eight B
//! pairs, adding each lane's two products into one i32 (exact: both products are at most 2^14
//! in magnitude). Accumulators add with wrapping i32 adds, as XLA's s32 dot does; integer
//! addition in any order gives the same bits. Same tile walk and edge handling as the float
//! kernels (`microkernel.rs`).

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Largest tile: 12 rows of 2 vectors of 8 lanes.
#[cfg(target_arch = "x86_64")]
const MAX_TILE: usize = 12 * 16;

/// `C[MR x 8NV] (+)= Ap x Bp` over `kp` packed pair-words.
///
/// # Safety
/// As [`super::microkernel::Microkernel::call`], on a CPU with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn avx2_tile<const MR: usize, const NV: usize>(
    a: *const u32,
    b: *const u32,
    c: *mut u32,
    kp: usize,
    ldc: usize,
    rows: usize,
    cols: usize,
    accumulate: bool,
) {
    const LANES: usize = 8;
    let nr = NV * LANES;
    let mut acc: [[__m256i; NV]; MR] = [[_mm256_setzero_si256(); NV]; MR];
    for p in 0..kp {
        let bp = unsafe { b.add(p * nr) };
        let mut bv: [__m256i; NV] = [_mm256_setzero_si256(); NV];
        for v in 0..NV {
            bv[v] = unsafe { _mm256_loadu_si256(bp.add(v * LANES) as *const __m256i) };
        }
        let ap = unsafe { a.add(p * MR) };
        for r in 0..MR {
            let s = _mm256_set1_epi32(unsafe { *ap.add(r) } as i32);
            for v in 0..NV {
                acc[r][v] = _mm256_add_epi32(acc[r][v], _mm256_madd_epi16(s, bv[v]));
            }
        }
    }
    if rows == MR && cols == nr {
        for r in 0..MR {
            for v in 0..NV {
                let p = unsafe { c.add(r * ldc + v * LANES) } as *mut __m256i;
                let x = if accumulate { _mm256_add_epi32(acc[r][v], unsafe { _mm256_loadu_si256(p) }) } else { acc[r][v] };
                unsafe { _mm256_storeu_si256(p, x) };
            }
        }
        return;
    }
    // An edge tile: through a copy of the tile, element by element.
    let mut buf = [0i32; MAX_TILE];
    for r in 0..MR {
        for v in 0..NV {
            unsafe { _mm256_storeu_si256(buf.as_mut_ptr().add(r * nr + v * LANES) as *mut __m256i, acc[r][v]) };
        }
    }
    for r in 0..rows {
        for j in 0..cols {
            let x = buf[r * nr + j];
            let p = unsafe { c.add(r * ldc + j) } as *mut i32;
            unsafe { *p = if accumulate { x.wrapping_add(*p) } else { x } };
        }
    }
}
