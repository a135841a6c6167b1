//! The runtime's strip kernels (`hlojit_rt_dot_strips_f32_*`) against the generated strips
//! they replace: the same bits on every element, for each vector width this host runs, with
//! transposed and batched operands, partial row blocks and column tails, on one to three
//! threads; and the generated kernel where the runtime's is not used.

use super::super::gemm::bf16_pairs_tests::{compile_and_run_for, GEMM_VARIABLE};
use crate::backend::target::TargetOptions;
use crate::hlo::text::parse_module;
use crate::pipeline::{compile_to, prepare, CompileOptions, OutputKind};
use hlojit_runtime::{ArrayLiteral, ElementType};

fn target(cpu: &str, features: &str) -> CompileOptions {
    let target = TargetOptions { cpu: Some(cpu.into()), features: Some(features.into()), ..TargetOptions::default() };
    CompileOptions { target, ..CompileOptions::default() }
}

/// Haswell (8 lanes) and, on AVX-512 hosts, Zen 4 (16 lanes).
fn targets() -> Vec<(CompileOptions, &'static str)> {
    let mut t = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            t.push((target("haswell", "+avx,+avx2,+fma"), "hlojit_rt_dot_strips_f32_avx2"));
        }
        if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512bw") {
            t.push((target("znver4", "+avx,+avx2,+fma,+avx512f,+avx512bw,+avx512dq,+avx512vl"), "hlojit_rt_dot_strips_f32_avx512"));
        }
    }
    t
}

/// Finite values with mixed signs and magnitudes (every product and sum rounds), zeros of both
/// signs, and one infinity and one NaN in `a`.
fn inputs(dims: &[i64], seed: u64, specials: bool) -> ArrayLiteral {
    let n = dims.iter().product::<i64>() as usize;
    let mut s = seed;
    let v: Vec<f64> = (0..n)
        .map(|i| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            match (specials, i) {
                (true, 5) => f64::INFINITY,
                (true, 11) => f64::NAN,
                (_, i) if i % 17 == 3 => -0.0,
                _ => ((s >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 6.0,
            }
        })
        .collect();
    ArrayLiteral::from_f64s(ElementType::F32, dims, &v).expect("literal")
}

#[test]
fn the_precompiled_strips_have_the_generated_kernels_bits() {
    // (a, b, result, dimension numbers): the LSTM step; A transposed; a batch with a column
    // tail and a partial row block; one row (a batch-1 layer) with a tail; attention's context
    // with batch x heads as dims 0 and 2 of B, then of A too (two batch strides).
    let cases = [
        ("f32[16,256]{1,0}", "f32[256,1024]{1,0}", "f32[16,1024]{1,0}", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
        ("f32[96,13]{1,0}", "f32[96,200]{1,0}", "f32[13,200]{1,0}", "lhs_contracting_dims={0}, rhs_contracting_dims={0}"),
        ("f32[3,7,40]{2,1,0}", "f32[3,40,150]{2,1,0}", "f32[3,7,150]{2,1,0}", "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}"),
        ("f32[1,784]{1,0}", "f32[784,250]{1,0}", "f32[1,250]{1,0}", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
        ("f32[2,3,4,96]{3,2,1,0}", "f32[2,96,3,72]{3,2,1,0}", "f32[2,3,4,72]{3,2,1,0}", "lhs_batch_dims={0,1}, rhs_batch_dims={0,2}, lhs_contracting_dims={3}, rhs_contracting_dims={1}"),
        ("f32[2,5,3,96]{3,2,1,0}", "f32[2,96,3,72]{3,2,1,0}", "f32[2,3,5,72]{3,2,1,0}", "lhs_batch_dims={0,2}, rhs_batch_dims={0,2}, lhs_contracting_dims={3}, rhs_contracting_dims={1}"),
    ];
    let dims = |s: &str| -> Vec<i64> { s[4..s.find(']').unwrap()].split(',').map(|d| d.parse().unwrap()).collect() };
    for (options, symbol) in targets() {
        for (i, (a, b, out, dnums)) in cases.iter().enumerate() {
            let hlo = format!(
                "HloModule t, entry_computation_layout={{({a}, {b})->{out}}}\n\
                 ENTRY e {{ a = {a} parameter(0) b = {b} parameter(1)\n ROOT d = {out} dot(a, b), {dnums} }}"
            );
            // One row with a NaN would make every result NaN.
            let specials = dims(out)[dims(out).len() - 2] > 1;
            let args = [inputs(&dims(a), i as u64, specials), inputs(&dims(b), 100 + i as u64, false)];
            let (gen_ir, want) = compile_and_run_for(&hlo, &options, true, &args, 1);
            assert!(!gen_ir.contains(symbol) && gen_ir.contains("dot.strip"), "case {i}: the generated strips");
            let finite = want.iter().filter(|&&w| f32::from_bits(w).is_finite()).count();
            assert!(want.iter().any(|&w| f32::from_bits(w).is_nan()) == specials && finite > want.len() / 2, "case {i}: specials reach some results, most are finite");
            for threads in 1..=3 {
                let (ir, got) = compile_and_run_for(&hlo, &options, false, &args, threads);
                assert!(ir.contains(symbol), "case {i}: calls {symbol}");
                let differ = got.iter().zip(&want).filter(|(g, w)| g != w).count();
                assert_eq!(differ, 0, "case {i} {symbol} on {threads} threads: {differ} elements differ");
            }
        }
    }
}

#[test]
fn small_dots_and_f64_keep_the_generated_strips() {
    for (options, symbol) in targets() {
        let ir = |hlo: &str| {
            let _guard = GEMM_VARIABLE.lock().unwrap_or_else(|e| e.into_inner());
            let module = parse_module(hlo).expect("parses");
            let ir = prepare(&module, &options).and_then(|p| compile_to(&p, "t", &options, OutputKind::LlvmIr, true)).expect("compiles");
            String::from_utf8_lossy(&ir).into_owned()
        };
        let dot = |ty: &str, m: i64, k: i64, n: i64| {
            format!("HloModule t\nENTRY e {{ a = {ty}[{m},{k}] parameter(0) b = {ty}[{k},{n}] parameter(1)\n ROOT d = {ty}[{m},{n}] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}} }}")
        };
        // A recurrent step of rnn_scan (2K multiply-adds): left to LLVM to overlap with its neighbours.
        assert!(!ir(&dot("f32", 1, 32, 64)).contains(symbol));
        assert!(ir(&dot("f32", 4, 256, 256)).contains(symbol));
        assert!(!ir(&dot("f64", 4, 256, 256)).contains("hlojit_rt_dot_strips"));
    }
}

#[test]
fn an_epilogue_finishes_the_strips_as_it_would_apart() {
    // (a, b, result, dimension numbers, bias broadcast dimension): a batch with a column tail
    // and a partial row block; one row with a tail.
    let cases = [
        ("f32[2,7,200]{2,1,0}", "f32[2,200,150]{2,1,0}", "f32[2,7,150]{2,1,0}", "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}", 2),
        ("f32[1,784]{1,0}", "f32[784,250]{1,0}", "f32[1,250]{1,0}", "lhs_contracting_dims={1}, rhs_contracting_dims={0}", 1),
    ];
    let dims = |s: &str| -> Vec<i64> { s[4..s.find(']').unwrap()].split(',').map(|d| d.parse().unwrap()).collect() };
    for (options, symbol) in targets() {
        for (i, (a, b, out, dnums, bias_dim)) in cases.iter().enumerate() {
            let n = *dims(out).last().unwrap();
            let finish = format!("bb = {out} broadcast(bias), dimensions={{{bias_dim}}}\n h = {out} add(d, bb)\n ROOT t = {out} tanh(h)");
            let fused = format!(
                "HloModule t, entry_computation_layout={{({a}, {b}, f32[{n}]{{0}})->{out}}}\n\
                 ENTRY e {{ a = {a} parameter(0) b = {b} parameter(1) bias = f32[{n}] parameter(2)\n d = {out} dot(a, b), {dnums}\n {finish} }}"
            );
            let dot_alone = format!("HloModule t\nENTRY e {{ a = {a} parameter(0) b = {b} parameter(1)\n ROOT d = {out} dot(a, b), {dnums} }}");
            let apart = format!("HloModule t\nENTRY e {{ d = {out} parameter(0) bias = f32[{n}] parameter(1)\n {finish} }}");
            let args = [inputs(&dims(a), 10 + i as u64, false), inputs(&dims(b), 20 + i as u64, false), inputs(&[n], 30 + i as u64, false)];
            for generated in [true, false] {
                let (_, d) = compile_and_run_for(&dot_alone, &options, generated, &args[..2], 1);
                let bytes: Vec<u8> = d.iter().flat_map(|w| w.to_le_bytes()).collect();
                let d = ArrayLiteral::from_bytes(ElementType::F32, &dims(out), &bytes).expect("literal");
                let (_, want) = compile_and_run_for(&apart, &options, generated, &[d, args[2].clone()], 1);
                for threads in 1..=3 {
                    let (ir, got) = compile_and_run_for(&fused, &options, generated, &args, threads);
                    assert!(ir.contains(".epilogue") && ir.contains(symbol) != generated, "case {i} ({symbol}, generated {generated}): the fused strips");
                    let differ = got.iter().zip(&want).filter(|(g, w)| g != w).count();
                    assert_eq!(differ, 0, "case {i} {symbol} generated {generated} on {threads} threads: {differ} elements differ");
                }
            }
        }
    }
}
