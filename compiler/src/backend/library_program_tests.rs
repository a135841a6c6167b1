//! Modules of precompiled runtime calls run without machine code, with the results the
//! generated code gives (integer-valued f32 products: exact in any summation order, so XLA's
//! values are these).

use crate::{Client, CodeSource, CompileOptions};
use hlojit_runtime::HostBuffer;

const M: usize = 48;
const K: usize = 64;
const N: usize = 40;

/// `a · b`, then `epilogue` (an instruction using `d`, the root) if given.
fn dot_module(epilogue: Option<&str>) -> String {
    let root = if epilogue.is_some() { "" } else { "ROOT " };
    let epilogue = epilogue.map(|e| format!("  ROOT {e}\n")).unwrap_or_default();
    format!(
        "HloModule m\nENTRY e {{\n  a = f32[{M},{K}] parameter(0)\n  b = f32[{K},{N}] parameter(1)\n  \
         {root}d = f32[{M},{N}] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n{epilogue}}}\n"
    )
}

fn inputs() -> (Vec<f32>, Vec<f32>) {
    let a = (0..M * K).map(|x| ((x / K * 7 + x % K * 3) % 11) as f32 - 5.0).collect();
    let b = (0..K * N).map(|x| ((x / N * 5 + x % N * 2) % 13) as f32 - 6.0).collect();
    (a, b)
}

fn expected(scale: f32) -> Vec<f32> {
    let (a, b) = inputs();
    (0..M * N).map(|x| scale * (0..K).map(|k| a[x / N * K + k] * b[k * N + x % N]).sum::<f32>()).collect()
}

fn run(text: &str, options: CompileOptions) -> (CodeSource, Vec<f32>) {
    let exe = Client::with_options(options).compile_text(text).unwrap();
    let (a, b) = inputs();
    let a = HostBuffer::from_slice(&[M as i64, K as i64], &a).unwrap();
    let b = HostBuffer::from_slice(&[K as i64, N as i64], &b).unwrap();
    let out = exe.run([&a, &b]).unwrap()[0].as_slice::<f32>().unwrap().to_vec();
    (exe.compile_stats().source, out)
}

/// Whether this host gets the runtime's precompiled f32 GEMM (AVX2 with FMA, or AVX-512).
fn host_has_precompiled_gemm() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

#[test]
fn a_matmul_runs_as_a_runtime_call() {
    let text = dot_module(None);
    let (source, out) = run(&text, CompileOptions::default());
    assert_eq!(source, if host_has_precompiled_gemm() { CodeSource::RuntimeCalls } else { CodeSource::Compiled });
    assert_eq!(out, expected(1.0));
    // Asking for profiling timers asks for code: the same product, compiled.
    let (source, compiled) = run(&text, CompileOptions { profile: true, ..CompileOptions::default() });
    assert_eq!(source, CodeSource::Compiled);
    assert_eq!(compiled, out);
}

#[test]
fn a_matmul_with_more_work_is_compiled() {
    let (source, out) = run(&dot_module(Some("r = f32[48,40] add(d, d)")), CompileOptions::default());
    assert_eq!(source, CodeSource::Compiled);
    assert_eq!(out, expected(2.0));
}
