//! The s8 x s8 -> s32 micro-kernel for AVX512-VNNI: packed words hold four k-adjacent
//! elements (`int8_quads.rs`), and `vpdpbusd` adds the four byte products of each lane's word
//! to its i32 accumulator, 64 multiply-adds per instruction (twice `vpdpwssd` on i16 pairs).
//! Its first factor is unsigned, so A is packed offset to `a + 128`; the B panel's last row
//! holds `-128 * sum_k B[k][j]` for its k block, which the accumulators start from. Every sum
//! wraps modulo 2^32 (`vpdpbusd` does not saturate), as XLA's s32 dot does, and integer sums
//! in any order give the same bits: `sum (a + 128) b - 128 sum b = sum a b` exactly.

#[cfg(target_arch = "x86_64")]
use super::microkernel::prefetch_c_rows;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Largest tile: 12 rows of 4 vectors of 16 lanes.
#[cfg(target_arch = "x86_64")]
const MAX_TILE: usize = 12 * 64;

/// `C[MR x 16NV] (+)= Ap x Bp` over `kq` packed quad-words (A `[kq][MR]` offset to unsigned,
/// B `[kq][16NV]` followed by its `16NV` column corrections).
///
/// # Safety
/// As [`super::microkernel::Microkernel::call`] (B with its correction row), on a CPU with
/// AVX-512F, AVX-512BW and AVX512-VNNI.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn tile<const MR: usize, const NV: usize>(a: *const u32, b: *const u32, c: *mut u32, kq: usize, ldc: usize, rows: usize, cols: usize, accumulate: bool) {
    const LANES: usize = 16;
    let nr = NV * LANES;
    prefetch_c_rows(c, ldc, MR.min(rows), nr * 4);
    let correction = unsafe { b.add(kq * nr) };
    let mut start = [_mm512_setzero_si512(); NV];
    for (v, s) in start.iter_mut().enumerate() {
        *s = unsafe { _mm512_loadu_si512(correction.add(v * LANES) as *const __m512i) };
    }
    let mut acc: [[__m512i; NV]; MR] = [start; MR];
    super::microkernel::k_loop!(kq, |p| {
        let bp = unsafe { b.add(p * nr) };
        let mut bv = [_mm512_setzero_si512(); NV];
        for v in 0..NV {
            bv[v] = unsafe { _mm512_loadu_si512(bp.add(v * LANES) as *const __m512i) };
        }
        let ap = unsafe { a.add(p * MR) };
        for r in 0..MR {
            let s = _mm512_set1_epi32(unsafe { *ap.add(r) } as i32);
            for v in 0..NV {
                acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], s, bv[v]);
            }
        }
    }, |p| {
        // The A strip streams from L2 (the B panel stays in L1): ask for it sixteen steps
        // ahead, as the f32 kernels do.
        _mm_prefetch::<_MM_HINT_T0>(a.wrapping_add((p + 16) * MR) as *const i8);
    });
    let c = c as *mut i32;
    if rows == MR && cols == nr {
        for r in 0..MR {
            for v in 0..NV {
                let p = unsafe { c.add(r * ldc + v * LANES) } as *mut __m512i;
                let x = if accumulate { _mm512_add_epi32(acc[r][v], unsafe { _mm512_loadu_si512(p) }) } else { acc[r][v] };
                unsafe { _mm512_storeu_si512(p, x) };
            }
        }
        return;
    }
    // An edge tile: through a copy of the tile, element by element.
    let mut buf = [0i32; MAX_TILE];
    for r in 0..MR {
        for v in 0..NV {
            unsafe { _mm512_storeu_si512(buf.as_mut_ptr().add(r * nr + v * LANES) as *mut __m512i, acc[r][v]) };
        }
    }
    for r in 0..rows {
        for j in 0..cols {
            let x = buf[r * nr + j];
            let p = unsafe { c.add(r * ldc + j) };
            unsafe { *p = if accumulate { x.wrapping_add(*p) } else { x } };
        }
    }
}

