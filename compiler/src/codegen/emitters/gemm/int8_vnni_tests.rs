//! s8 x s8 -> s32 dots on AVX512-VNNI targets call the runtime's `vpdpbusd` GEMM, other
//! targets (AVX2, AVX-512 without VNNI) the generated one, and both give the same bits over
//! the whole s8 range, on 1-3 threads, for edge tiles, depths not a multiple of four and
//! transposed and batched operands.

use super::bf16_pairs_tests::compile_and_run_for;
use crate::backend::target::TargetOptions;
use crate::hlo::text::parse_module;
use crate::pipeline::{compile_to, prepare, CompileOptions, OutputKind};
use hlojit_runtime::{ArrayLiteral, ElementType};

const SYMBOL: &str = "hlojit_rt_gemm_s8_vnni_avx512";

fn target(cpu: &str, features: &str) -> CompileOptions {
    CompileOptions { target: TargetOptions { cpu: Some(cpu.into()), features: Some(features.into()), ..TargetOptions::default() }, ..CompileOptions::default() }
}

const AVX512: &str = "+avx,+avx2,+fma,+avx512f,+avx512bw,+avx512vl,+avx512dq";

fn vnni_target() -> CompileOptions {
    target("icelake-server", &format!("{AVX512},+avx512vnni"))
}

fn dot_module(a: &str, b: &str, out: &str, dnums: &str) -> String {
    format!("HloModule t\nENTRY e {{ a = s8{a} parameter(0) b = s8{b} parameter(1)\n ROOT d = s32{out} dot(a, b), {dnums} }}")
}

fn ir_for(hlo: &str, options: &CompileOptions) -> String {
    let _guard = super::bf16_pairs_tests::GEMM_VARIABLE.lock().unwrap_or_else(|e| e.into_inner());
    let prepared = prepare(&parse_module(hlo).expect("parses"), options).expect("prepares");
    String::from_utf8_lossy(&compile_to(&prepared, "t", options, OutputKind::LlvmIr, false).expect("compiles to IR")).into_owned()
}

/// Bytes of `dims` from a fixed sequence, -128 and 127 one in four each.
fn s8_inputs(dims: &[i64], seed: u64) -> ArrayLiteral {
    let n = dims.iter().product::<i64>() as usize;
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    let bytes: Vec<u8> = (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            match (s >> 60) % 4 {
                0 => 0x80,
                1 => 0x7f,
                _ => (s >> 40) as u8,
            }
        })
        .collect();
    ArrayLiteral::from_bytes(ElementType::S8, dims, &bytes).expect("literal")
}

fn dims_of(shape: &str) -> Vec<i64> {
    shape[1..shape.find(']').expect("dims")].split(',').map(|d| d.trim().parse().expect("dim")).collect()
}

#[test]
fn only_vnni_targets_call_the_vnni_kernel() {
    let hlo = dot_module("[70,301]", "[301,90]", "[70,90]", MATMUL);
    assert!(ir_for(&hlo, &vnni_target()).contains(SYMBOL), "AVX512-VNNI: the runtime's vpdpbusd kernel");
    let skylake = ir_for(&hlo, &target("skylake-avx512", AVX512));
    assert!(!skylake.contains("hlojit_rt_gemm_"), "AVX-512 without VNNI: the generated GEMM");
    let haswell = ir_for(&hlo, &target("haswell", "+avx,+avx2,+fma"));
    assert!(haswell.contains("hlojit_rt_gemm_s8_avx2") && !haswell.contains(SYMBOL), "AVX2: the pair kernel");
}

const MATMUL: &str = "lhs_contracting_dims={1}, rhs_contracting_dims={0}";

/// The VNNI kernel and the generated GEMM on one dot, on 1-3 threads: the same bits.
fn same_bits(a: &str, b: &str, out: &str, dnums: &str) {
    let hlo = dot_module(a, b, out, dnums);
    let args = [s8_inputs(&dims_of(a), 1), s8_inputs(&dims_of(b), 2)];
    let options = vnni_target();
    let (ir, generated) = compile_and_run_for(&hlo, &options, true, &args, 1);
    assert!(!ir.contains(SYMBOL), "{hlo}: generated when forced");
    for threads in [1, 2, 3] {
        let (ir, vnni) = compile_and_run_for(&hlo, &options, false, &args, threads);
        assert!(ir.contains(SYMBOL), "{hlo}: the VNNI kernel");
        assert!(generated == vnni, "{hlo} on {threads} threads: results differ");
    }
}

#[test]
fn vnni_kernel_matches_the_generated_gemm() {
    if !hlojit_runtime::kernels::gemm::host_multiplies_s8_quads() {
        return;
    }
    // k = 301 (not a multiple of four), edge tiles; n = 10, 48, 64 for the other tiles; k = 7 and 3 (one partial quad).
    same_bits("[70,301]", "[301,90]", "[70,90]", MATMUL);
    same_bits("[600,7]", "[7,10]", "[600,10]", MATMUL);
    same_bits("[45,300]", "[300,48]", "[45,48]", MATMUL);
    same_bits("[37,515]", "[515,64]", "[37,64]", MATMUL);
    same_bits("[300,3]", "[3,150]", "[300,150]", MATMUL);
    // Two k blocks (kc = 2048), big enough to split among the threads.
    same_bits("[256,2500]", "[2500,384]", "[256,384]", MATMUL);
    // B transposed; A read through its transpose; batched with B's batch in the middle.
    same_bits("[70,301]", "[90,301]", "[70,90]", "lhs_contracting_dims={1}, rhs_contracting_dims={1}");
    same_bits("[301,70]", "[301,90]", "[70,90]", "lhs_contracting_dims={0}, rhs_contracting_dims={0}");
    same_bits("[3,70,257]", "[257,3,50]", "[3,70,50]", "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={1}, rhs_contracting_dims={0}");
}
