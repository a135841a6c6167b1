//! Packing f32 strips whose rows lie contiguous along k — a row-major A (`x W`), or a B read
//! transposed (`dy W^T`) — transposed 8 x 8 in vector registers. The plain packing gathers one
//! element per row for each k, a scalar load and store per element; this loads eight k values
//! of eight rows as eight vectors, transposes them with shuffles and stores each k's rows at
//! once. Measured on a transformer block: the scalar packing took 10% of the time its GEMMs
//! spent, as much as a seventh of the micro-kernels' time. Packing only copies: the packed
//! values, and so the results, are the same bits.

/// `dst[kk * w + i] = src[i * row + kk]` for rows `i < valid` (zero for the rest of the `w`)
/// and `kk < depth`, where `row` is the distance between the strip's rows.
///
/// # Safety
/// The `valid` rows of `depth` elements are readable, `dst` has `depth * w` words, and the
/// CPU has AVX2 (every precompiled GEMM variant's target has).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn pack_rows_f32(src: *const f32, row: i64, dst: *mut u32, valid: i64, depth: i64, w: i64) {
    use std::arch::x86_64::*;
    let dst = dst as *mut f32;
    let full = depth / 8 * 8;
    let mut i0 = 0;
    while i0 < w {
        let rows = (valid - i0).clamp(0, 8) as usize;
        let lanes = (w - i0).min(8);
        let mut k0 = 0;
        while k0 < full {
            let mut v = [_mm256_setzero_ps(); 8];
            for (r, x) in v.iter_mut().enumerate().take(rows) {
                *x = unsafe { _mm256_loadu_ps(src.offset(((i0 + r as i64) * row + k0) as isize)) };
            }
            let t = transpose8(v);
            for (j, x) in t.iter().enumerate() {
                unsafe { store_lanes(dst.add(((k0 + j as i64) * w + i0) as usize), *x, lanes) };
            }
            k0 += 8;
        }
        i0 += 8;
    }
    // The last `depth % 8` values of k, one by one.
    for kk in full..depth {
        for i in 0..w {
            let x = if i < valid { unsafe { *src.offset((i * row + kk) as isize) } } else { 0.0 };
            unsafe { *dst.add((kk * w + i) as usize) = x };
        }
    }
}

/// Columns of the 8 x 8 block whose rows are `v`: `out[j][r] = v[r][j]`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn transpose8(v: [std::arch::x86_64::__m256; 8]) -> [std::arch::x86_64::__m256; 8] {
    use std::arch::x86_64::*;
    // Pairs of rows interleaved, then quadruples, then the 128-bit halves exchanged.
    let t0 = _mm256_unpacklo_ps(v[0], v[1]);
    let t1 = _mm256_unpackhi_ps(v[0], v[1]);
    let t2 = _mm256_unpacklo_ps(v[2], v[3]);
    let t3 = _mm256_unpackhi_ps(v[2], v[3]);
    let t4 = _mm256_unpacklo_ps(v[4], v[5]);
    let t5 = _mm256_unpackhi_ps(v[4], v[5]);
    let t6 = _mm256_unpacklo_ps(v[6], v[7]);
    let t7 = _mm256_unpackhi_ps(v[6], v[7]);
    let u0 = _mm256_shuffle_ps::<0x44>(t0, t2);
    let u1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
    let u2 = _mm256_shuffle_ps::<0x44>(t1, t3);
    let u3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
    let u4 = _mm256_shuffle_ps::<0x44>(t4, t6);
    let u5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
    let u6 = _mm256_shuffle_ps::<0x44>(t5, t7);
    let u7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
    [
        _mm256_permute2f128_ps::<0x20>(u0, u4),
        _mm256_permute2f128_ps::<0x20>(u1, u5),
        _mm256_permute2f128_ps::<0x20>(u2, u6),
        _mm256_permute2f128_ps::<0x20>(u3, u7),
        _mm256_permute2f128_ps::<0x31>(u0, u4),
        _mm256_permute2f128_ps::<0x31>(u1, u5),
        _mm256_permute2f128_ps::<0x31>(u2, u6),
        _mm256_permute2f128_ps::<0x31>(u3, u7),
    ]
}

/// Stores the first `lanes` (1 to 8) elements of `x` at `d`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn store_lanes(d: *mut f32, x: std::arch::x86_64::__m256, lanes: i64) {
    use std::arch::x86_64::*;
    if lanes == 8 {
        unsafe { _mm256_storeu_ps(d, x) };
        return;
    }
    let (mut rest, mut at, mut part) = (lanes, 0, _mm256_castps256_ps128(x));
    if rest >= 4 {
        unsafe { _mm_storeu_ps(d, part) };
        (rest, at, part) = (rest - 4, 4, _mm256_extractf128_ps::<1>(x));
    }
    if rest >= 2 {
        unsafe { _mm_store_sd(d.add(at) as *mut f64, _mm_castps_pd(part)) };
        (rest, at, part) = (rest - 2, at + 2, _mm_movehl_ps(part, part));
    }
    if rest == 1 {
        unsafe { _mm_store_ss(d.add(at), part) };
    }
}
