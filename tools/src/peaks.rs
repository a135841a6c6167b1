//! The machine's measured peaks, which `hlojit profile` compares kernels with: memory
//! bandwidth (a STREAM-style triad over arrays much larger than the caches, all threads) and
//! f32 fused multiply-add throughput (independent FMA chains in the widest vector registers,
//! all threads). Measured in well under a second; the best of several repetitions counts, and
//! on a machine other programs keep busy the peaks come out low (kernels may then show more
//! than 100%).

use rayon::prelude::*;
use std::time::Instant;

/// Bytes per second and f32 flops per second this machine reaches.
#[derive(Clone, Copy, Debug)]
pub struct Peaks {
    pub bytes_per_second: f64,
    pub flops_per_second: f64,
}

/// Elements of each triad array: 3 × 64 MiB, far beyond the last-level caches.
const STREAM_ELEMENTS: usize = 1 << 24;

/// Measures both peaks.
pub fn measure() -> Peaks {
    Peaks { bytes_per_second: stream_triad(), flops_per_second: fma_peak() }
}

/// `a[i] = b[i] + s * c[i]`: 12 bytes per element moved (a written, b and c read).
fn stream_triad() -> f64 {
    let mut a = vec![0.0f32; STREAM_ELEMENTS];
    let b = vec![1.0f32; STREAM_ELEMENTS];
    let c = vec![2.0f32; STREAM_ELEMENTS];
    let chunk = 1 << 16;
    let mut best = f64::INFINITY;
    for _ in 0..6 {
        let t = Instant::now();
        a.par_chunks_mut(chunk).zip(b.par_chunks(chunk)).zip(c.par_chunks(chunk)).for_each(|((a, b), c)| {
            for i in 0..a.len() {
                a[i] = b[i] + 3.0 * c[i];
            }
        });
        best = best.min(t.elapsed().as_secs_f64());
    }
    std::hint::black_box(&a);
    (STREAM_ELEMENTS * 12) as f64 / best
}

/// Iterations of the FMA loop per thread.
const FMA_ITERATIONS: u64 = 1_000_000;

/// f32 flops per second on the current rayon pool's threads (all of them at once).
pub fn fma_peak() -> f64 {
    let threads = rayon::current_num_threads().max(1);
    let mut best = 0.0f64;
    // Short bursts, the best of many: on a machine other programs share, some burst gets
    // whole cores.
    for _ in 0..12 {
        let t = Instant::now();
        let flops: u64 = (0..threads).into_par_iter().map(|_| fma_thread()).sum();
        best = best.max(flops as f64 / t.elapsed().as_secs_f64());
    }
    best
}

/// Runs the FMA loop on this thread; returns the flops done.
fn fma_thread() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked just above).
            return unsafe { fma_avx512() };
        }
        if is_x86_feature_detected!("fma") && is_x86_feature_detected!("avx") {
            // SAFETY: the CPU has FMA and AVX (checked just above).
            return unsafe { fma_avx2() };
        }
    }
    fma_scalar()
}

/// 12 independent accumulators hide the FMA latency (4 cycles × 2 ports and some margin).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn fma_avx512() -> u64 {
    use std::arch::x86_64::*;
    let m = _mm512_set1_ps(0.999_999);
    let a = _mm512_set1_ps(1e-7);
    let mut acc = [_mm512_set1_ps(1.0); 12];
    for _ in 0..FMA_ITERATIONS {
        for x in acc.iter_mut() {
            *x = _mm512_fmadd_ps(*x, m, a);
        }
    }
    std::hint::black_box(&acc);
    FMA_ITERATIONS * 12 * 16 * 2
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,fma")]
unsafe fn fma_avx2() -> u64 {
    use std::arch::x86_64::*;
    let m = _mm256_set1_ps(0.999_999);
    let a = _mm256_set1_ps(1e-7);
    let mut acc = [_mm256_set1_ps(1.0); 12];
    for _ in 0..FMA_ITERATIONS {
        for x in acc.iter_mut() {
            *x = _mm256_fmadd_ps(*x, m, a);
        }
    }
    std::hint::black_box(&acc);
    FMA_ITERATIONS * 12 * 8 * 2
}

/// bf16 dot-product flops per second (`vdpbf16ps`: per lane two bf16 products added to an f32
/// accumulator, 4 flops) on the current rayon pool's threads, or `None` without AVX512-BF16.
pub fn bf16_dot_peak() -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bf16") {
        let threads = rayon::current_num_threads().max(1);
        let mut best = 0.0f64;
        for _ in 0..12 {
            let t = Instant::now();
            // SAFETY: the CPU has AVX-512F and AVX512-BF16 (checked just above).
            let flops: u64 = (0..threads).into_par_iter().map(|_| unsafe { bf16_dot_avx512() }).sum();
            best = best.max(flops as f64 / t.elapsed().as_secs_f64());
        }
        return Some(best);
    }
    None
}

/// 12 independent `vdpbf16ps` chains, as [`fma_avx512`]'s FMAs.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn bf16_dot_avx512() -> u64 {
    use std::arch::x86_64::*;
    // SAFETY: bf16 vectors are plain bits (1.0 and 2^-24 in every element).
    let (x, y): (__m512bh, __m512bh) = unsafe { (std::mem::transmute(_mm512_set1_epi16(0x3f80)), std::mem::transmute(_mm512_set1_epi16(0x3380))) };
    let mut acc = [_mm512_setzero_ps(); 12];
    for _ in 0..FMA_ITERATIONS {
        for a in acc.iter_mut() {
            *a = _mm512_dpbf16_ps(*a, x, y);
        }
    }
    std::hint::black_box(&acc);
    FMA_ITERATIONS * 12 * 16 * 4
}

fn fma_scalar() -> u64 {
    let mut acc = [1.0f32; 12];
    for _ in 0..FMA_ITERATIONS / 4 {
        for x in acc.iter_mut() {
            *x = x.mul_add(0.999_999, 1e-7);
        }
    }
    std::hint::black_box(&acc);
    FMA_ITERATIONS / 4 * 12 * 2
}
