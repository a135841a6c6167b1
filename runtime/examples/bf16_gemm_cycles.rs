//! Times the precompiled bf16 pair GEMM (AVX512-BF16) on one shape, in wall time and in CPU
//! time of this process (GFLOP per CPU-second is what a loaded machine still measures), beside
//! a `vdpbf16ps` loop that gives the per-core bf16 dot peak the same way. The GEMM's threads
//! are rayon's (RAYON_NUM_THREADS).
//!
//! `cargo run --release -p hlojit-runtime --example bf16_gemm_cycles -- M N K [runs] [kc]`
//! (kc in elements; 1024 is what the compiler's `Blocking::bf16_pairs` picks)

#[cfg(target_arch = "x86_64")]
use hlojit_runtime::kernels::gemm::{hlojit_rt_gemm_bf16_pairs_avx512, host_multiplies_bf16_pairs, BatchStrides, GemmF32};

#[path = "common/cpu_time.rs"]
mod cpu_time;
use cpu_time::cpu_seconds;

/// 12 independent `vdpbf16ps` chains (64 flops each: 16 lanes, two products and two adds).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn dot_loop(iters: usize) -> f32 {
    use std::arch::x86_64::*;
    let x: __m512bh = unsafe { std::mem::transmute(_mm512_set1_epi16(0x3f80)) };
    let y: __m512bh = unsafe { std::mem::transmute(_mm512_set1_epi16(0x3380)) };
    let mut acc = [_mm512_setzero_ps(); 12];
    for _ in 0..iters {
        for a in acc.iter_mut() {
            *a = _mm512_dpbf16_ps(*a, x, y);
        }
    }
    acc.iter().map(|&a| _mm512_reduce_add_ps(a)).sum()
}

#[cfg(not(target_arch = "x86_64"))]
fn main() {}

#[cfg(target_arch = "x86_64")]
fn main() {
    if !host_multiplies_bf16_pairs() {
        eprintln!("this CPU has no AVX512-BF16");
        return;
    }
    let args: Vec<String> = std::env::args().collect();
    let num = |i: usize, d: i64| args.get(i).map(|s| s.parse().unwrap()).unwrap_or(d);
    let (m, n, k, runs, kc) = (num(1, 1024), num(2, 1024), num(3, 1024), num(4, 20), num(5, 1024));
    let bf16 = |x: f32| (x.to_bits() >> 16) as u16;
    let a: Vec<u16> = (0..m * k).map(|i| bf16(((i * 7 % 13) as f32 - 6.0) * 0.1)).collect();
    let b: Vec<u16> = (0..k * n).map(|i| bf16(((i * 5 % 11) as f32 - 5.0) * 0.1)).collect();
    let mut c = vec![0f32; (m * n) as usize];
    // The blocking the compiler picks for a wide bf16-pair problem on AVX-512.
    let g = GemmF32 {
        batch: 1, batch_inner: 1, m, n, k,
        a: a.as_ptr() as *const _, a_batch: BatchStrides::single(0), a_row: k, a_col: 1,
        b: b.as_ptr() as *const _, b_batch: BatchStrides::single(0), b_row: n, b_col: 1,
        c: c.as_mut_ptr() as *mut _, c_batch: BatchStrides::single(0), c_row: n,
        mr: 12, nv: 2, kc, nc: 256,
        epilogue: None, epilogue_ctx: std::ptr::null(), epilogue_rows: 0,
    };
    let it = 20_000_000;
    let (w0, c0) = (std::time::Instant::now(), cpu_seconds());
    let s = unsafe { dot_loop(it) };
    let (w, cpu) = (w0.elapsed().as_secs_f64(), cpu_seconds() - c0);
    let per_iter = 12.0 * 64.0;
    let peak = it as f64 * per_iter / cpu / 1e9;
    println!("bf16 dot peak {:.1} GFLOP per CPU-s ({:.1} wall) [{s}]", peak, it as f64 * per_iter / w / 1e9);
    unsafe { hlojit_rt_gemm_bf16_pairs_avx512(&g) };
    let flops = 2.0 * (m * n * k) as f64;
    let mut best_wall = f64::MAX;
    let (c0, w0) = (cpu_seconds(), std::time::Instant::now());
    for _ in 0..runs {
        let t = std::time::Instant::now();
        assert_eq!(unsafe { hlojit_rt_gemm_bf16_pairs_avx512(&g) }, 0);
        best_wall = best_wall.min(t.elapsed().as_secs_f64());
    }
    let cpu = (cpu_seconds() - c0) / runs as f64;
    let wall = w0.elapsed().as_secs_f64() / runs as f64;
    println!(
        "{m}x{n}x{k} threads={}: best {:.2} ms ({:.1} GFLOP/s), mean {:.2} ms, {:.1} GFLOP per CPU-s = {:.0}% of the per-core peak",
        rayon::current_num_threads(),
        best_wall * 1e3,
        flops / best_wall / 1e9,
        wall * 1e3,
        flops / cpu / 1e9,
        100.0 * flops / cpu / 1e9 / peak
    );
}
