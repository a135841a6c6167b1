//! End-to-end checks of the GEMM engine: dots big enough to take it (edge tiles, several k
//! and column blocks, batches, transposed and column-major operands and results, type
//! conversions, fused operands, the parallel split) compiled and run, compared with a plain
//! reference written here. Inputs are small integers, so float sums are exact whatever the
//! summation order and results can be compared exactly.

use crate::executable::Executable;
use crate::hlo::text::parse_module;
use crate::pipeline::CompileOptions;
use hlojit_runtime::{ArrayLiteral, ElementType, Literal};

/// A logical row-major array of values held as f64 (exact for the integers used here).
struct Arr {
    dims: Vec<i64>,
    v: Vec<f64>,
}

impl Arr {
    fn at(&self, idx: &[i64]) -> f64 {
        let mut lin = 0i64;
        for (d, &i) in idx.iter().enumerate() {
            lin = lin * self.dims[d] + i;
        }
        self.v[lin as usize]
    }
}

/// Deterministic small integers in `[lo, hi]`.
fn values(n: usize, seed: u64, lo: i64, hi: i64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (lo + ((s >> 33) % (hi - lo + 1) as u64) as i64) as f64
        })
        .collect()
}

/// Every index of `dims` in row-major order.
fn indices(dims: &[i64]) -> Vec<Vec<i64>> {
    let mut out = vec![vec![]];
    for &d in dims {
        out = out.into_iter().flat_map(|p| (0..d).map(move |i| [p.clone(), vec![i]].concat())).collect();
    }
    out
}

/// Reference dot_general: result dims are batch, lhs free, rhs free (XLA's order).
fn reference(lhs: &Arr, rhs: &Arr, lb: &[usize], lc: &[usize], rb: &[usize], rc: &[usize]) -> Arr {
    let lf: Vec<usize> = (0..lhs.dims.len()).filter(|d| !lb.contains(d) && !lc.contains(d)).collect();
    let rf: Vec<usize> = (0..rhs.dims.len()).filter(|d| !rb.contains(d) && !rc.contains(d)).collect();
    let mut dims: Vec<i64> = lb.iter().map(|&d| lhs.dims[d]).collect();
    dims.extend(lf.iter().map(|&d| lhs.dims[d]));
    dims.extend(rf.iter().map(|&d| rhs.dims[d]));
    let kdims: Vec<i64> = lc.iter().map(|&d| lhs.dims[d]).collect();
    let mut v = Vec::new();
    for o in indices(&dims) {
        let mut li = vec![0; lhs.dims.len()];
        let mut ri = vec![0; rhs.dims.len()];
        for (i, (&l, &r)) in lb.iter().zip(rb).enumerate() {
            li[l] = o[i];
            ri[r] = o[i];
        }
        for (i, &l) in lf.iter().enumerate() {
            li[l] = o[lb.len() + i];
        }
        for (i, &r) in rf.iter().enumerate() {
            ri[r] = o[lb.len() + lf.len() + i];
        }
        let mut sum = 0.0;
        for k in indices(&kdims) {
            for (i, (&l, &r)) in lc.iter().zip(rc).enumerate() {
                li[l] = k[i];
                ri[r] = k[i];
            }
            sum += lhs.at(&li) * rhs.at(&ri);
        }
        v.push(sum);
    }
    Arr { dims, v }
}

/// Runs `hlo` on `inputs` and returns its (single) result as f64s.
fn run(hlo: &str, inputs: &[(&Arr, ElementType)]) -> Vec<f64> {
    let module = parse_module(hlo).expect("test module parses");
    let exe = Executable::compile(&module, &CompileOptions::default()).expect("compiles");
    let args: Vec<Literal> = inputs
        .iter()
        .map(|(a, t)| ArrayLiteral::from_f64s(*t, &a.dims, &a.v).expect("literal").into())
        .collect();
    let out = exe.run_literals(&args).expect("runs");
    let out = out.as_array().expect("array result");
    (0..out.element_count()).map(|i| out.get_f64(i)).collect()
}

fn arr(dims: &[i64], seed: u64, lo: i64, hi: i64) -> Arr {
    let n = dims.iter().product::<i64>() as usize;
    Arr { dims: dims.to_vec(), v: values(n, seed, lo, hi) }
}

fn check(got: &[f64], want: &Arr) {
    assert_eq!(got.len(), want.v.len());
    for (i, (g, w)) in got.iter().zip(&want.v).enumerate() {
        assert_eq!(g, w, "element {i}: got {g}, want {w}");
    }
}

#[test]
fn edges_and_several_k_blocks() {
    // M = 37 and N = 45 leave partial register tiles; K = 300 spans two k blocks.
    let a = arr(&[37, 300], 1, -3, 3);
    let b = arr(&[300, 45], 2, -3, 3);
    let hlo = "HloModule t\nENTRY e { a = f32[37,300] parameter(0) b = f32[300,45] parameter(1)\n\
               ROOT d = f32[37,45] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0} }";
    check(&run(hlo, &[(&a, ElementType::F32), (&b, ElementType::F32)]), &reference(&a, &b, &[], &[1], &[], &[0]));
}

#[test]
fn batched_with_several_column_blocks() {
    // N = 600 spans two packed column blocks.
    let a = arr(&[2, 30, 20], 3, -3, 3);
    let b = arr(&[2, 20, 600], 4, -3, 3);
    let hlo = "HloModule t\nENTRY e { a = f32[2,30,20] parameter(0) b = f32[2,20,600] parameter(1)\n\
               ROOT d = f32[2,30,600] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1} }";
    let want = reference(&a, &b, &[0], &[2], &[0], &[1]);
    check(&run(hlo, &[(&a, ElementType::F32), (&b, ElementType::F32)]), &want);
}

#[test]
fn transposed_operands_and_odd_batch_positions() {
    // lhs [K=40, batch=3, M=50], rhs [N=33, K=40, batch=3]: batch and contracting dims are
    // neither leading nor trailing.
    let a = arr(&[40, 3, 50], 5, -3, 3);
    let b = arr(&[33, 40, 3], 6, -3, 3);
    let hlo = "HloModule t\nENTRY e { a = f32[40,3,50] parameter(0) b = f32[33,40,3] parameter(1)\n\
               ROOT d = f32[3,50,33] dot(a, b), lhs_batch_dims={1}, lhs_contracting_dims={0}, rhs_batch_dims={2}, rhs_contracting_dims={1} }";
    let want = reference(&a, &b, &[1], &[0], &[2], &[1]);
    check(&run(hlo, &[(&a, ElementType::F32), (&b, ElementType::F32)]), &want);
}

#[test]
fn column_major_layouts() {
    // Column-major operands and result: the engine transposes the problem so that the
    // result's contiguous dimension is the vector dimension.
    let a = arr(&[64, 70], 7, -3, 3);
    let b = arr(&[70, 48], 8, -3, 3);
    let hlo = "HloModule t, entry_computation_layout={(f32[64,70]{0,1}, f32[70,48]{0,1})->f32[64,48]{0,1}}\n\
               ENTRY e { a = f32[64,70]{0,1} parameter(0) b = f32[70,48]{0,1} parameter(1)\n\
               ROOT d = f32[64,48]{0,1} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0} }";
    check(&run(hlo, &[(&a, ElementType::F32), (&b, ElementType::F32)]), &reference(&a, &b, &[], &[1], &[], &[0]));
}

#[test]
fn result_with_batch_dimension_minor_goes_through_scratch() {
    let a = arr(&[4, 20, 30], 9, -3, 3);
    let b = arr(&[4, 30, 40], 10, -3, 3);
    let hlo = "HloModule t, entry_computation_layout={(f32[4,20,30]{2,1,0}, f32[4,30,40]{2,1,0})->f32[4,20,40]{0,2,1}}\n\
               ENTRY e { a = f32[4,20,30] parameter(0) b = f32[4,30,40] parameter(1)\n\
               ROOT d = f32[4,20,40]{0,2,1} dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1} }";
    let want = reference(&a, &b, &[0], &[2], &[0], &[1]);
    check(&run(hlo, &[(&a, ElementType::F32), (&b, ElementType::F32)]), &want);
}

#[test]
fn bf16_operands_f32_and_bf16_results() {
    let a = arr(&[30, 40], 11, -2, 2);
    let b = arr(&[40, 50], 12, -2, 2);
    let want = reference(&a, &b, &[], &[1], &[], &[0]);
    for out in ["f32", "bf16"] {
        let hlo = format!(
            "HloModule t\nENTRY e {{ a = bf16[30,40] parameter(0) b = bf16[40,50] parameter(1)\n\
             ROOT d = {out}[30,50] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}} }}"
        );
        // |sums| <= 160: exact in bf16 too.
        check(&run(&hlo, &[(&a, ElementType::BF16), (&b, ElementType::BF16)]), &want);
    }
}

#[test]
fn f64_and_integer_types() {
    let a = arr(&[20, 70], 13, -100, 100);
    let b = arr(&[70, 30], 14, -100, 100);
    let want = reference(&a, &b, &[], &[1], &[], &[0]);
    for (t, out) in [("f64", "f64"), ("s8", "s32"), ("s32", "s32"), ("s16", "s64"), ("f32", "f64"), ("s16", "f32")] {
        let hlo = format!(
            "HloModule t\nENTRY e {{ a = {t}[20,70] parameter(0) b = {t}[70,30] parameter(1)\n\
             ROOT d = {out}[20,30] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}} }}"
        );
        let et = ElementType::from_name(t).expect("type");
        check(&run(&hlo, &[(&a, et), (&b, et)]), &want);
    }
}

#[test]
fn unsigned_and_half_precision() {
    // Sums of 70 products of values in 0..=3 stay exact in every result type used: below 2048
    // (f16), and for these inputs below 256 (bf16; the comparison is exact, so it would catch it).
    let a = arr(&[20, 70], 26, 0, 3);
    let b = arr(&[70, 30], 27, 0, 3);
    let want = reference(&a, &b, &[], &[1], &[], &[0]);
    for (t, out) in [("u8", "u32"), ("u16", "u64"), ("f16", "f16"), ("f16", "f32"), ("bf16", "bf16")] {
        let hlo = format!(
            "HloModule t\nENTRY e {{ a = {t}[20,70] parameter(0) b = {t}[70,30] parameter(1)\n\
             ROOT d = {out}[20,30] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}} }}"
        );
        let et = ElementType::from_name(t).expect("type");
        check(&run(&hlo, &[(&a, et), (&b, et)]), &want);
    }
}

#[test]
fn integer_results_wrap() {
    // s32 products and sums wrap modulo 2^32; an s8 result keeps the low 8 bits.
    let a = arr(&[16, 64], 15, -(1 << 20), 1 << 20);
    let b = arr(&[64, 24], 16, -(1 << 20), 1 << 20);
    let exact = reference(&a, &b, &[], &[1], &[], &[0]);
    let wrap = |v: f64, bits: u32| -> f64 {
        let m = 1i128 << bits;
        let r = (v as i128).rem_euclid(m);
        (if r >= m / 2 { r - m } else { r }) as f64
    };
    let hlo = "HloModule t\nENTRY e { a = s32[16,64] parameter(0) b = s32[64,24] parameter(1)\n\
               ROOT d = s32[16,24] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0} }";
    let got = run(hlo, &[(&a, ElementType::S32), (&b, ElementType::S32)]);
    let want = Arr { dims: exact.dims.clone(), v: exact.v.iter().map(|&v| wrap(v, 32)).collect() };
    check(&got, &want);
    let a8 = Arr { dims: a.dims.clone(), v: a.v.iter().map(|&v| wrap(v, 8)).collect() };
    let b8 = Arr { dims: b.dims.clone(), v: b.v.iter().map(|&v| wrap(v, 8)).collect() };
    let exact8 = reference(&a8, &b8, &[], &[1], &[], &[0]);
    let hlo = "HloModule t\nENTRY e { a = s8[16,64] parameter(0) b = s8[64,24] parameter(1)\n\
               ROOT d = s8[16,24] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0} }";
    let got = run(hlo, &[(&a8, ElementType::S8), (&b8, ElementType::S8)]);
    check(&got, &Arr { dims: exact8.dims.clone(), v: exact8.v.iter().map(|&v| wrap(v, 8)).collect() });
}

#[test]
fn fused_operands_are_generated() {
    // The fusion transposes and converts its operands before the dot (as XLA's optimized
    // modules do): the engine packs generated elements.
    let a = arr(&[50, 40], 17, -3, 3);
    let b = arr(&[60, 50], 18, -3, 3);
    let hlo = "HloModule t\n\
               f { p0 = s32[50,40] parameter(0) p1 = f32[60,50] parameter(1)\n\
                   t0 = s32[40,50] transpose(p0), dimensions={1,0} c0 = f32[40,50] convert(t0)\n\
                   t1 = f32[50,60] transpose(p1), dimensions={1,0}\n\
                   ROOT d = f32[40,60] dot(c0, t1), lhs_contracting_dims={1}, rhs_contracting_dims={0} }\n\
               ENTRY e { a = s32[50,40] parameter(0) b = f32[60,50] parameter(1)\n\
                   ROOT r = f32[40,60] fusion(a, b), kind=kOutput, calls=f }";
    // dot(transpose(a), transpose(b)) contracts a's dim 0 with b's dim 1.
    let want = reference(&a, &b, &[], &[0], &[], &[1]);
    check(&run(hlo, &[(&a, ElementType::S32), (&b, ElementType::F32)]), &want);
}

#[test]
fn big_enough_to_split_across_threads() {
    let a = arr(&[200, 130], 19, -3, 3);
    let b = arr(&[130, 150], 20, -3, 3);
    let hlo = "HloModule t\nENTRY e { a = f32[200,130] parameter(0) b = f32[130,150] parameter(1)\n\
               ROOT d = f32[200,150] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0} }";
    check(&run(hlo, &[(&a, ElementType::F32), (&b, ElementType::F32)]), &reference(&a, &b, &[], &[1], &[], &[0]));
}

#[test]
fn matrix_vector_and_vector_matrix() {
    let a = arr(&[300, 80], 21, -3, 3);
    let v = arr(&[80], 22, -3, 3);
    let hlo = "HloModule t\nENTRY e { a = f32[300,80] parameter(0) v = f32[80] parameter(1)\n\
               ROOT d = f32[300] dot(a, v), lhs_contracting_dims={1}, rhs_contracting_dims={0} }";
    check(&run(hlo, &[(&a, ElementType::F32), (&v, ElementType::F32)]), &reference(&a, &v, &[], &[1], &[], &[0]));
    let w = arr(&[300], 23, -3, 3);
    let hlo = "HloModule t\nENTRY e { w = f32[300] parameter(0) a = f32[300,80] parameter(1)\n\
               ROOT d = f32[80] dot(w, a), lhs_contracting_dims={0}, rhs_contracting_dims={0} }";
    check(&run(hlo, &[(&w, ElementType::F32), (&a, ElementType::F32)]), &reference(&w, &a, &[], &[0], &[], &[0]));
}

#[test]
fn tiled_operand_layout() {
    let a = arr(&[40, 128], 24, -3, 3);
    let b = arr(&[128, 40], 25, -3, 3);
    let hlo = "HloModule t, entry_computation_layout={(f32[40,128]{1,0:T(8,128)}, f32[128,40]{1,0})->f32[40,40]{1,0}}\n\
               ENTRY e { a = f32[40,128]{1,0:T(8,128)} parameter(0) b = f32[128,40] parameter(1)\n\
               ROOT d = f32[40,40] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0} }";
    check(&run(hlo, &[(&a, ElementType::F32), (&b, ElementType::F32)]), &reference(&a, &b, &[], &[1], &[], &[0]));
}

/// `dot(a, b)` of `ty` operands (`[70,300] x [300,90]`) with an `out` result, compiled for
/// `target` and run here; the result and the optimized LLVM IR.
fn run_for(target: crate::backend::target::TargetOptions, ty: (&str, ElementType), out: &str, a: &Arr, b: &Arr) -> (Vec<f64>, String) {
    let hlo = format!(
        "HloModule t\nENTRY e {{ a = {t}[70,300] parameter(0) b = {t}[300,90] parameter(1)\n\
         ROOT d = {out}[70,90] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}} }}",
        t = ty.0
    );
    let module = parse_module(&hlo).expect("test module parses");
    let options = CompileOptions { target, ..CompileOptions::default() };
    let prepared = crate::pipeline::prepare(&module, &options).expect("prepares");
    let ir = crate::pipeline::compile_to(&prepared, "t", &options, crate::pipeline::OutputKind::LlvmIr, true).expect("compiles to IR");
    let exe = Executable::compile(&module, &options).expect("compiles");
    let args: Vec<Literal> = [a, b].iter().map(|x| ArrayLiteral::from_f64s(ty.1, &x.dims, &x.v).expect("literal").into()).collect();
    let out = exe.run_literals(&args).expect("runs");
    let out = out.as_array().expect("array result");
    ((0..out.element_count()).map(|i| out.get_f64(i)).collect(), String::from_utf8_lossy(&ir).into_owned())
}

/// Runs the dot for Haswell (where the host can: the runtime's kernel `symbol`) and for
/// baseline x86-64 (SSE2 only: the generated GEMM), comparing both with the reference.
fn precompiled_and_fallback(ty: (&str, ElementType), out: &str, symbol: &str, a: &Arr, b: &Arr) {
    use crate::backend::target::TargetOptions;
    let want = reference(a, b, &[], &[1], &[], &[0]);
    // Which path a dot takes depends on HLOJIT_GENERATED_GEMM, which other tests set.
    let _guard = super::bf16_pairs_tests::GEMM_VARIABLE.lock().unwrap_or_else(|e| e.into_inner());
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // Kernels are chosen by the feature string, so it names what Haswell has.
        let haswell = TargetOptions { cpu: Some("haswell".into()), features: Some("+avx,+avx2,+fma".into()), ..TargetOptions::default() };
        let (got, ir) = run_for(haswell, ty, out, a, b);
        assert!(ir.contains(symbol), "haswell should call {symbol}");
        check(&got, &want);
    }
    let baseline = TargetOptions { cpu: Some("x86-64".into()), features: Some(String::new()), ..TargetOptions::default() };
    let (got, ir) = run_for(baseline, ty, out, a, b);
    assert!(!ir.contains("hlojit_rt_gemm_"), "x86-64 has no precompiled GEMM");
    check(&got, &want);
    // AVX and FMA without AVX2 (as AMD's Piledriver, whose other extensions this host may
    // lack): the AVX2 kernels cannot run there.
    let no_avx2 = TargetOptions { cpu: Some("x86-64".into()), features: Some("+avx,+fma,-avx2".into()), ..TargetOptions::default() };
    let (got, ir) = run_for(no_avx2, ty, out, a, b);
    assert!(!ir.contains("hlojit_rt_gemm_"), "no AVX2 GEMM without AVX2");
    check(&got, &want);
}

#[test]
fn bf16_dot_on_the_precompiled_kernel_and_on_the_fallback() {
    let (a, b) = (arr(&[70, 300], 21, -3, 3), arr(&[300, 90], 22, -3, 3));
    precompiled_and_fallback(("bf16", ElementType::BF16), "f32", "hlojit_rt_gemm_bf16_avx2", &a, &b);
}

#[test]
fn s8_dot_on_the_precompiled_kernel_and_on_the_fallback() {
    // The whole s8 range: products of -128 and -128 included.
    let (a, b) = (arr(&[70, 300], 23, -128, 127), arr(&[300, 90], 24, -128, 127));
    precompiled_and_fallback(("s8", ElementType::S8), "s32", "hlojit_rt_gemm_s8_avx2", &a, &b);
}

#[test]
fn bf16_dot_for_avx512_bf16_multiplies_pairs() {
    // Compiled only (this test cannot assume the host runs AVX512-BF16): Cooper Lake calls the
    // runtime's `vdpbf16ps` kernel (not its widening one), and with HLOJIT_GENERATED_GEMM the
    // generated pair kernel.
    let hlo = "HloModule t\nENTRY e { a = bf16[70,300] parameter(0) b = bf16[300,90] parameter(1)\n\
               ROOT d = f32[70,90] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0} }";
    let module = parse_module(hlo).expect("test module parses");
    let features = "+avx,+avx2,+fma,+avx512f,+avx512bw,+avx512vl,+avx512dq,+avx512bf16";
    let target = crate::backend::target::TargetOptions { cpu: Some("cooperlake".into()), features: Some(features.into()), ..Default::default() };
    let options = CompileOptions { target, ..CompileOptions::default() };
    let prepared = crate::pipeline::prepare(&module, &options).expect("prepares");
    let ir = |generated: bool| {
        let _guard = super::bf16_pairs_tests::GEMM_VARIABLE.lock().unwrap_or_else(|e| e.into_inner());
        if generated {
            std::env::set_var(super::precompiled::GENERATED_GEMM_VARIABLE, "1");
        }
        let ir = crate::pipeline::compile_to(&prepared, "t", &options, crate::pipeline::OutputKind::LlvmIr, false);
        std::env::remove_var(super::precompiled::GENERATED_GEMM_VARIABLE);
        String::from_utf8_lossy(&ir.expect("compiles to IR")).into_owned()
    };
    let precompiled = ir(false);
    assert!(precompiled.contains("hlojit_rt_gemm_bf16_pairs_avx512"), "cooperlake should call the pair kernel");
    assert!(!precompiled.contains("dpbf16ps"), "nothing generated");
    let generated = ir(true);
    assert!(generated.contains("llvm.x86.avx512bf16.dpbf16ps.512"), "generated: bf16 pairs multiplied");
    assert!(!generated.contains("hlojit_rt_gemm_"), "generated: no runtime GEMM");
}
