//! Times the precompiled f32 GEMM on one shape, in wall time and in CPU time of this process
//! (GFLOP per CPU-second is what a loaded machine still measures), beside an FMA loop that
//! gives the per-core peak the same way. The GEMM's threads are rayon's (RAYON_NUM_THREADS).
//!
//! `cargo run --release -p hlojit-runtime --example gemm_cycles -- M N K [runs] [at] [bt] [kc]`
//! (an AVX2 + FMA host; `at`/`bt` = 1 stores A / B transposed).

use hlojit_runtime::kernels::gemm::{hlojit_rt_gemm_f32_avx2, GemmF32};

fn cpu_seconds() -> f64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |x: libc::timeval| x.tv_sec as f64 + x.tv_usec as f64 * 1e-6;
    t(u.ru_utime) + t(u.ru_stime)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fma_loop(iters: usize) -> f32 {
    use std::arch::x86_64::*;
    let mut acc = [_mm256_set1_ps(0.0); 12];
    let x = _mm256_set1_ps(1.0000001);
    let y = _mm256_set1_ps(0.9999999);
    for _ in 0..iters {
        for a in acc.iter_mut() {
            *a = _mm256_fmadd_ps(*a, x, y);
        }
    }
    let mut s = 0.0;
    for a in acc {
        let mut o = [0f32; 8];
        unsafe { _mm256_storeu_ps(o.as_mut_ptr(), a) };
        s += o.iter().sum::<f32>();
    }
    s
}

#[cfg(not(target_arch = "x86_64"))]
fn main() {}

#[cfg(target_arch = "x86_64")]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let num = |i: usize, d: i64| args.get(i).map(|s| s.parse().unwrap()).unwrap_or(d);
    let (m, n, k, runs) = (num(1, 1024), num(2, 1024), num(3, 1024), num(4, 10));
    let at = num(5, 0) != 0;
    let bt = num(6, 0) != 0;
    let a: Vec<f32> = (0..m * k)
        .map(|i| ((i * 7 % 13) as f32 - 6.0) * 0.1)
        .collect();
    let b: Vec<f32> = (0..k * n)
        .map(|i| ((i * 5 % 11) as f32 - 5.0) * 0.1)
        .collect();
    let mut c = vec![0f32; (m * n) as usize];
    let g = GemmF32 {
        batch: 1,
        m,
        n,
        k,
        a: a.as_ptr() as *const _,
        a_batch: 0,
        a_row: if at { 1 } else { k },
        a_col: if at { m } else { 1 },
        b: b.as_ptr() as *const _,
        b_batch: 0,
        b_row: if bt { 1 } else { n },
        b_col: if bt { k } else { 1 },
        c: c.as_mut_ptr() as *mut _,
        c_batch: 0,
        c_row: n,
        mr: 6,
        nv: 2,
        kc: num(7, 512),
        nc: 1024,
        epilogue: None,
        epilogue_ctx: std::ptr::null(),
    };
    let it = 50_000_000;
    let (w0, c0) = (std::time::Instant::now(), cpu_seconds());
    let s = unsafe { fma_loop(it) };
    let (w, cpu) = (w0.elapsed().as_secs_f64(), cpu_seconds() - c0);
    let peak = it as f64 * 12.0 * 16.0 / cpu / 1e9;
    println!(
        "fma peak {:.1} GFLOP per CPU-s ({:.1} wall) [{s}]",
        peak,
        it as f64 * 192.0 / w / 1e9
    );
    unsafe { hlojit_rt_gemm_f32_avx2(&g) };
    let flops = 2.0 * (m * n * k) as f64;
    let mut best_wall = f64::MAX;
    let (c0, w0) = (cpu_seconds(), std::time::Instant::now());
    for _ in 0..runs {
        let t = std::time::Instant::now();
        assert_eq!(unsafe { hlojit_rt_gemm_f32_avx2(&g) }, 0);
        best_wall = best_wall.min(t.elapsed().as_secs_f64());
    }
    let cpu = (cpu_seconds() - c0) / runs as f64;
    let wall = w0.elapsed().as_secs_f64() / runs as f64;
    println!(
        "{m}x{n}x{k} at={at} bt={bt} threads={}: best {:.2} ms ({:.1} GFLOP/s), mean {:.2} ms, {:.1} GFLOP per CPU-s = {:.0}% of the per-core peak",
        rayon::current_num_threads(),
        best_wall * 1e3,
        flops / best_wall / 1e9,
        wall * 1e3,
        flops / cpu / 1e9,
        100.0 * flops / cpu / 1e9 / peak
    );
}
