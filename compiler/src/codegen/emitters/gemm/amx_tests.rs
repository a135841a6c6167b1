//! Targets with AMX call the runtime's AMX GEMMs (`hlojit_rt_gemm_bf16_amx`,
//! `hlojit_rt_gemm_s8_amx`), targets without it the AVX-512 word kernels; on a host without AMX
//! the AMX entry points run those kernels, so the results are the generated GEMM's bits.

use super::bf16_pairs_tests::compile_and_run_for;
use crate::backend::target::TargetOptions;
use crate::hlo::text::parse_module;
use crate::pipeline::{compile_to, prepare, CompileOptions, OutputKind};
use hlojit_runtime::{ArrayLiteral, ElementType};

const BF16_AMX: &str = "hlojit_rt_gemm_bf16_amx";
const S8_AMX: &str = "hlojit_rt_gemm_s8_amx";

const AVX512: &str = "+avx,+avx2,+fma,+avx512f,+avx512bw,+avx512vl,+avx512dq,+avx512bf16,+avx512vnni";
const AMX: &str = "+amx-tile,+amx-bf16,+amx-int8";

fn target(cpu: &str, features: &str) -> CompileOptions {
    CompileOptions { target: TargetOptions { cpu: Some(cpu.into()), features: Some(features.into()), ..TargetOptions::default() }, ..CompileOptions::default() }
}

fn dot(ty: &str, out: &str) -> String {
    format!("HloModule t\nENTRY e {{ a = {ty}[70,301] parameter(0) b = {ty}[301,90] parameter(1)\n ROOT d = {out}[70,90] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}} }}")
}

fn ir_for(hlo: &str, options: &CompileOptions) -> String {
    let _guard = super::bf16_pairs_tests::GEMM_VARIABLE.lock().unwrap_or_else(|e| e.into_inner());
    let prepared = prepare(&parse_module(hlo).expect("parses"), options).expect("prepares");
    String::from_utf8_lossy(&compile_to(&prepared, "t", options, OutputKind::LlvmIr, false).expect("compiles to IR")).into_owned()
}

#[test]
fn only_amx_targets_call_the_amx_kernels() {
    let (bf16, s8) = (dot("bf16", "f32"), dot("s8", "s32"));
    let spr = target("sapphirerapids", &format!("{AVX512},{AMX}"));
    assert!(ir_for(&bf16, &spr).contains(BF16_AMX), "Sapphire Rapids: bf16 on AMX");
    assert!(ir_for(&s8, &spr).contains(S8_AMX), "Sapphire Rapids: s8 on AMX");
    let zen4 = target("znver4", AVX512);
    let (zen4_bf16, zen4_s8) = (ir_for(&bf16, &zen4), ir_for(&s8, &zen4));
    assert!(zen4_bf16.contains("hlojit_rt_gemm_bf16_pairs_avx512") && !zen4_bf16.contains(BF16_AMX), "Zen 4: the pair kernel");
    assert!(zen4_s8.contains("hlojit_rt_gemm_s8_vnni_avx512") && !zen4_s8.contains(S8_AMX), "Zen 4: the VNNI kernel");
    // Each product needs its own AMX feature besides the tiles (the CPU's name implies all
    // three: a feature string takes them away).
    let bf16_only = target("sapphirerapids", &format!("{AVX512},+amx-tile,+amx-bf16,-amx-int8"));
    assert!(!ir_for(&s8, &bf16_only).contains(S8_AMX), "no AMX-INT8: the VNNI kernel");
    assert!(!ir_for(&bf16, &target("sapphirerapids", &format!("{AVX512},+amx-bf16,-amx-tile"))).contains(BF16_AMX), "no AMX tiles");
    assert!(ir_for(&bf16, &target("sapphirerapids", "")).contains(BF16_AMX), "the name alone: AMX");
}

/// Operand bits from a fixed sequence: bf16 fractions in (-2, 2), or any s8 byte.
fn inputs(ty: ElementType, dims: &[i64], seed: u64) -> ArrayLiteral {
    let n = dims.iter().product::<i64>() as usize;
    let mut s = seed;
    let mut next = move || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        s >> 40
    };
    let bytes: Vec<u8> = match ty {
        ElementType::BF16 => (0..n).flat_map(|_| (((((next() % 4001) as f32) / 1000.0 - 2.0).to_bits() >> 16) as u16).to_le_bytes()).collect(),
        _ => (0..n).map(|_| next() as u8).collect(),
    };
    ArrayLiteral::from_bytes(ty, dims, &bytes).expect("literal")
}

#[test]
fn amx_targets_give_the_generated_gemms_bits_on_a_host_without_amx() {
    let host = hlojit_runtime::kernels::gemm::host_multiplies_bf16_pairs() && hlojit_runtime::kernels::gemm::host_multiplies_s8_quads();
    if !host || hlojit_runtime::kernels::gemm::amx_status(true).is_ok() {
        println!("not run: the host has AMX, or lacks AVX512-BF16 or AVX512-VNNI");
        return;
    }
    // Zen 4's CPU with AMX features added: nothing this host lacks besides AMX.
    let options = target("znver4", &format!("{AVX512},{AMX}"));
    for (ty, out, symbol) in [(ElementType::BF16, "f32", BF16_AMX), (ElementType::S8, "s32", S8_AMX)] {
        let hlo = dot(if ty == ElementType::BF16 { "bf16" } else { "s8" }, out);
        let args = [inputs(ty, &[70, 301], 1), inputs(ty, &[301, 90], 2)];
        let (_, generated) = compile_and_run_for(&hlo, &options, true, &args, 1);
        for threads in [1, 2, 3] {
            let (ir, amx) = compile_and_run_for(&hlo, &options, false, &args, threads);
            assert!(ir.contains(symbol), "{ty:?}: the AMX entry point");
            assert!(amx == generated, "{ty:?} on {threads} threads: the AMX entry point's fallback differs from the generated GEMM");
        }
    }
}
