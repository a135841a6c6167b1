//! Times the precompiled f32 GEMM on one shape, in wall time and in CPU time of this process
//! (GFLOP per CPU-second is what a loaded machine still measures), beside an FMA loop that
//! gives the per-core peak the same way. The GEMM's threads are rayon's (RAYON_NUM_THREADS).
//!
//! `cargo run --release -p hlojit-runtime --example gemm_cycles -- M N K [runs] [at] [bt] [kc]`
//! (`at`/`bt` = 1 stores A / B transposed). Environment: `ISA=avx2` for the AVX2 + FMA
//! variant (default: AVX-512 where the host has it), `BATCH`, and `MR` / `NV` for the
//! register tile (default: the compiler's blocking for the ISA and `N`).

use hlojit_runtime::kernels::gemm::{hlojit_rt_gemm_f32_avx2, hlojit_rt_gemm_f32_avx512, host_supports, BatchStrides, GemmF32, Isa};

#[path = "common/cpu_time.rs"]
mod cpu_time;
use cpu_time::cpu_seconds;

/// Independent FMA chains of 256-bit vectors: the f32 FMA peak of one core (Zen 4 splits a
/// 512-bit FMA over the same two 256-bit pipes, so the peak is the same).
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
    let env = |name: &str, d: i64| std::env::var(name).ok().map(|s| s.parse().unwrap()).unwrap_or(d);
    let (m, n, k, runs) = (num(1, 1024), num(2, 1024), num(3, 1024), num(4, 10));
    let at = num(5, 0) != 0;
    let bt = num(6, 0) != 0;
    let isa = match std::env::var("ISA").as_deref() {
        Ok("avx2") => Isa::Avx2Fma,
        _ if host_supports(Isa::Avx512) => Isa::Avx512,
        _ => Isa::Avx2Fma,
    };
    let batch = env("BATCH", 1);
    let (default_mr, default_nv) = match isa {
        Isa::Avx512 if n <= 64 => (6, 4),
        Isa::Avx512 => (12, 2),
        Isa::Avx2Fma => (6, 2),
    };
    let (mr, nv) = (env("MR", default_mr), env("NV", default_nv));
    let a: Vec<f32> = (0..batch * m * k).map(|i| ((i * 7 % 13) as f32 - 6.0) * 0.1).collect();
    let b: Vec<f32> = (0..batch * k * n).map(|i| ((i * 5 % 11) as f32 - 5.0) * 0.1).collect();
    let mut c = vec![0f32; (batch * m * n) as usize];
    let g = GemmF32 {
        batch,
        batch_inner: 1,
        m,
        n,
        k,
        a: a.as_ptr() as *const _,
        a_batch: BatchStrides::single(m * k),
        a_row: if at { 1 } else { k },
        a_col: if at { m } else { 1 },
        b: b.as_ptr() as *const _,
        b_batch: BatchStrides::single(k * n),
        b_row: if bt { 1 } else { n },
        b_col: if bt { k } else { 1 },
        c: c.as_mut_ptr() as *mut _,
        c_batch: BatchStrides::single(m * n),
        c_row: n,
        mr,
        nv,
        kc: num(7, 512),
        nc: 1024,
        epilogue: None,
        epilogue_ctx: std::ptr::null(),
        epilogue_rows: 0,
    };
    let gemm = |g: &GemmF32| unsafe {
        match isa {
            Isa::Avx512 => hlojit_rt_gemm_f32_avx512(g),
            Isa::Avx2Fma => hlojit_rt_gemm_f32_avx2(g),
        }
    };
    let it = 50_000_000;
    let (w0, c0) = (std::time::Instant::now(), cpu_seconds());
    let s = unsafe { fma_loop(it) };
    let (w, cpu) = (w0.elapsed().as_secs_f64(), cpu_seconds() - c0);
    let peak = it as f64 * 12.0 * 16.0 / cpu / 1e9;
    println!("fma peak {:.1} GFLOP per CPU-s ({:.1} wall) [{s}]", peak, it as f64 * 192.0 / w / 1e9);
    gemm(&g);
    let flops = 2.0 * (batch * m * n * k) as f64;
    let mut best_wall = f64::MAX;
    let (c0, w0) = (cpu_seconds(), std::time::Instant::now());
    for _ in 0..runs {
        let t = std::time::Instant::now();
        assert_eq!(gemm(&g), 0);
        best_wall = best_wall.min(t.elapsed().as_secs_f64());
    }
    let cpu = (cpu_seconds() - c0) / runs as f64;
    let wall = w0.elapsed().as_secs_f64() / runs as f64;
    println!(
        "{isa:?} {mr}x{nv} kc={} {batch}x{m}x{n}x{k} at={at} bt={bt} threads={}: best {:.2} ms ({:.1} GFLOP/s), mean {:.2} ms, {:.1} GFLOP per CPU-s = {:.0}% of the per-core peak",
        g.kc,
        rayon::current_num_threads(),
        best_wall * 1e3,
        flops / best_wall / 1e9,
        wall * 1e3,
        flops / cpu / 1e9,
        100.0 * flops / cpu / 1e9 / peak
    );
}
