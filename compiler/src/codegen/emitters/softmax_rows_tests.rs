//! The precompiled softmax against the generated row kernel it replaces: the same bits on
//! every element (the generated kernel is what the conformance corpus checks against XLA), and
//! the generated kernel wherever the runtime's would not repeat it.

use super::GENERATED_ROWS_VARIABLE;
use crate::backend::target::TargetOptions;
use crate::executable::Executable;
use crate::hlo::text::parse_module;
use crate::pipeline::{compile_to, prepare, CompileOptions, OutputKind};
use hlojit_runtime::{ArrayLiteral, ElementType, Literal};

const SYMBOL: &str = "hlojit_rt_softmax_rows_f32_avx2";

/// JAX's `jax.nn.softmax(x, axis=-1)` on f32[dims] as it reaches hlojit.
fn softmax_module(dims: &[i64]) -> String {
    let shape = |d: &[i64]| format!("f32[{}]", d.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","));
    let outer = &dims[..dims.len() - 1];
    let keep: Vec<String> = (0..outer.len()).map(|d| d.to_string()).collect();
    let (x, o) = (shape(dims), shape(outer));
    format!(
        "HloModule softmax\n\
         max {{ a = f32[] parameter(0) b = f32[] parameter(1) ROOT m = f32[] maximum(a, b) }}\n\
         add {{ a = f32[] parameter(0) b = f32[] parameter(1) ROOT s = f32[] add(a, b) }}\n\
         ENTRY e {{\n  x = {x} parameter(0)\n  ninf = f32[] constant(-inf)\n\
           m = {o} reduce(x, ninf), dimensions={{{last}}}, to_apply=max\n\
           mb = {o} broadcast(ninf), dimensions={{}}\n  mm = {o} maximum(m, mb)\n\
           b = {x} broadcast(mm), dimensions={{{keep}}}\n  d = {x} subtract(x, b)\n  ex = {x} exponential(d)\n\
           zero = f32[] constant(0)\n  s = {o} reduce(ex, zero), dimensions={{{last}}}, to_apply=add\n\
           sb = {x} broadcast(s), dimensions={{{keep}}}\n  ROOT r = {x} divide(ex, sb)\n}}\n",
        last = dims.len() - 1,
        keep = keep.join(",")
    )
}

/// Haswell's features (the kernel's), so that the test means the same on an AVX-512 host.
fn haswell() -> CompileOptions {
    let target = TargetOptions { cpu: Some("haswell".into()), features: Some("+avx,+avx2,+fma".into()), ..TargetOptions::default() };
    CompileOptions { target, ..CompileOptions::default() }
}

fn host_has_avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Serializes the tests that set the variable (other tests' softmax modules only ever see
/// the same bits either way).
static VARIABLE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Compiles `hlo` for Haswell, its LLVM IR and the bits of every result element on `args`,
/// the runtime's kernels allowed or not.
fn compile_and_run(hlo: &str, generated: bool, args: &[ArrayLiteral]) -> (String, Vec<u32>) {
    let options = haswell();
    let _guard = VARIABLE.lock().unwrap_or_else(|e| e.into_inner());
    if generated {
        std::env::set_var(GENERATED_ROWS_VARIABLE, "1");
    }
    let module = parse_module(hlo).expect("test module parses");
    let prepared = prepare(&module, &options).expect("prepares");
    let ir = compile_to(&prepared, "rows", &options, OutputKind::LlvmIr, true).map(|b| String::from_utf8_lossy(&b).into_owned());
    let exe = Executable::compile(&module, &options);
    std::env::remove_var(GENERATED_ROWS_VARIABLE);
    let args: Vec<Literal> = args.iter().map(|a| Literal::from(a.clone())).collect();
    let out = exe.expect("compiles").run_literals(&args).expect("runs");
    let bits = out
        .leaves()
        .into_iter()
        .flat_map(|a| (0..a.element_count()).map(|i| (a.get_f64(i) as f32).to_bits()).collect::<Vec<_>>())
        .collect();
    (ir.expect("compiles to IR"), bits)
}

/// Values over the whole range exp clamps (-87.8 .. 88.8 and beyond), ties for the maximum,
/// signed zeros, infinities, subnormals and NaNs of both signs, spread over the rows (the
/// comparisons are bit for bit: which NaN a row gives is part of the result).
fn inputs(dims: &[i64]) -> ArrayLiteral {
    let n = dims.iter().product::<i64>() as usize;
    let cols = dims[dims.len() - 1] as usize;
    let mut state = 0x9e3779b97f4a7c15u64;
    let specials = [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, -f64::NAN, 1e-40, -1e-40, 100.0, -200.0, 88.9, -87.9];
    let v: Vec<f64> = (0..n)
        .map(|i| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            // One special in every third row, the others plain, so most results are finite.
            let (row, col) = (i / cols, i % cols);
            if row % 3 == 0 && col == (row * 7) % cols { specials[(row / 3) % specials.len()] } else { (u - 0.5) * 40.0 }
        })
        .collect();
    ArrayLiteral::from_f64s(ElementType::F32, dims, &v).expect("literal")
}

#[test]
fn the_precompiled_softmax_has_the_generated_kernels_bits() {
    if !host_has_avx2_fma() {
        return;
    }
    // At least 16 rows: fewer stay separate kernels (passes/row_fusion.rs).
    for dims in [&[20, 64][..], &[17, 96], &[4, 5, 128], &[33, 1024], &[16, 4096], &[16, 160]] {
        let hlo = softmax_module(dims);
        let x = inputs(dims);
        let (ir, precompiled) = compile_and_run(&hlo, false, std::slice::from_ref(&x));
        assert!(ir.contains(SYMBOL), "{dims:?}: the runtime's softmax");
        let (ir, generated) = compile_and_run(&hlo, true, std::slice::from_ref(&x));
        assert!(!ir.contains(SYMBOL), "{dims:?}: the generated kernel when forced");
        let nan = |b: u32| f32::from_bits(b).is_nan();
        let differ = precompiled.iter().zip(&generated).filter(|(p, g)| p != g).count();
        assert_eq!(differ, 0, "{dims:?}: {differ} of {} elements differ", generated.len());
        assert!(generated.iter().any(|&g| nan(g)) && generated.iter().any(|&g| !nan(g) && g != 0), "{dims:?}: the inputs reach both kinds");
    }
}

#[test]
fn other_softmaxes_and_targets_keep_the_generated_kernel() {
    let ir = |hlo: &str, options: &CompileOptions| {
        let prepared = prepare(&parse_module(hlo).expect("parses"), options).expect("prepares");
        String::from_utf8_lossy(&compile_to(&prepared, "softmax", options, OutputKind::LlvmIr, true).expect("compiles")).into_owned()
    };
    assert!(ir(&softmax_module(&[16, 64]), &haswell()).contains(SYMBOL));
    // Rows of 100: LLVM's vector loops leave remainders, summed in another order.
    assert!(!ir(&softmax_module(&[16, 100]), &haswell()).contains(SYMBOL));
    // Rows of 32: one iteration, straightened and reassociated by LLVM.
    assert!(!ir(&softmax_module(&[16, 32]), &haswell()).contains(SYMBOL));
    assert!(!ir(&layernorm_module(16, 32), &haswell()).contains("hlojit_rt_layernorm_rows_f32_avx2"));
    // 16-lane vectors on AVX-512: another order of additions.
    let avx512 = TargetOptions { cpu: Some("skylake-avx512".into()), features: Some("+avx,+avx2,+fma,+avx512f".into()), ..TargetOptions::default() };
    assert!(!ir(&softmax_module(&[16, 64]), &CompileOptions { target: avx512, ..CompileOptions::default() }).contains(SYMBOL));
    // Without FMA the polynomial rounds differently.
    let no_fma = TargetOptions { cpu: Some("x86-64".into()), features: Some("+avx,+avx2".into()), ..TargetOptions::default() };
    assert!(!ir(&softmax_module(&[16, 64]), &CompileOptions { target: no_fma, ..CompileOptions::default() }).contains(SYMBOL));
    // A softmax over the major dimension is another kernel.
    let major = softmax_module(&[64, 64]).replace("dimensions={1}, to_apply", "dimensions={0}, to_apply").replace("dimensions={0}\n", "dimensions={1}\n");
    assert!(!ir(&major, &haswell()).contains(SYMBOL));
}

/// Row sums and maxima as reduce_sum_max writes them (a multi-output row reduction, then the
/// maximum of the row maxima through a temporary), and a lone sum with another init.
fn reductions_module(rows: i64, cols: i64, init: &str) -> String {
    format!(
        "HloModule reductions\n\
         max {{ a = f32[] parameter(0) b = f32[] parameter(1) ROOT m = f32[] maximum(a, b) }}\n\
         add {{ a = f32[] parameter(0) b = f32[] parameter(1) ROOT s = f32[] add(a, b) }}\n\
         ENTRY e {{\n  x = f32[{rows},{cols}] parameter(0)\n  zero = f32[] constant({init})\n\
           s = f32[{rows}] reduce(x, zero), dimensions={{1}}, to_apply=add\n\
           ninf = f32[] constant(-inf)\n  m = f32[] reduce(x, ninf), dimensions={{0,1}}, to_apply=max\n\
           ROOT t = (f32[{rows}], f32[]) tuple(s, m)\n}}\n"
    )
}

#[test]
fn precompiled_row_reductions_have_the_generated_kernels_bits() {
    if !host_has_avx2_fma() {
        return;
    }
    for (rows, cols, init) in [(16, 64, "0"), (40, 96, "0"), (64, 4096, "0"), (300, 1024, "0"), (16, 128, "2.5")] {
        let hlo = reductions_module(rows, cols, init);
        let x = inputs(&[rows, cols]);
        let (ir, precompiled) = compile_and_run(&hlo, false, std::slice::from_ref(&x));
        assert!(ir.contains("hlojit_rt_row_reduce_f32_avx2"), "{rows}x{cols}: the runtime's row reduction");
        let (ir, generated) = compile_and_run(&hlo, true, std::slice::from_ref(&x));
        assert!(!ir.contains("hlojit_rt_row_reduce_f32_avx2"), "{rows}x{cols}: generated when forced");
        let differ = precompiled.iter().zip(&generated).filter(|(p, g)| p != g).count();
        assert_eq!(differ, 0, "{rows}x{cols}: {differ} of {} results differ", generated.len());
    }
}

/// The perf suite's layernorm (JAX's `(x - mean) * rsqrt(var + 1e-5) * g + b`) on f32[rows, cols].
fn layernorm_module(rows: i64, cols: i64) -> String {
    format!(
        "HloModule layernorm\n\
         add {{ a = f32[] parameter(0) b = f32[] parameter(1) ROOT s = f32[] add(a, b) }}\n\
         ENTRY e {{\n  x = f32[{rows},{cols}] parameter(0)\n  g = f32[{cols}] parameter(1)\n  b = f32[{cols}] parameter(2)\n\
           zero = f32[] constant(0)\n  s = f32[{rows}] reduce(x, zero), dimensions={{1}}, to_apply=add\n\
           s1 = f32[{rows},1] reshape(s)\n  n = f32[] constant({cols})\n  nb = f32[{rows},1] broadcast(n), dimensions={{}}\n\
           mean = f32[{rows},1] divide(s1, nb)\n  mb = f32[{rows},1] broadcast(mean), dimensions={{0,1}}\n  m = f32[{rows}] reshape(mb)\n\
           mx = f32[{rows},{cols}] broadcast(m), dimensions={{0}}\n  d = f32[{rows},{cols}] subtract(x, mx)\n\
           sq = f32[{rows},{cols}] multiply(d, d)\n  v = f32[{rows}] reduce(sq, zero), dimensions={{1}}, to_apply=add\n\
           v1 = f32[{rows},1] reshape(v)\n  var = f32[{rows},1] divide(v1, nb)\n  eps = f32[] constant(1e-05)\n\
           eb = f32[{rows},1] broadcast(eps), dimensions={{}}\n  ve = f32[{rows},1] add(var, eb)\n  r = f32[{rows},1] rsqrt(ve)\n\
           rb = f32[{rows},1] broadcast(r), dimensions={{0,1}}\n  r1 = f32[{rows}] reshape(rb)\n  rx = f32[{rows},{cols}] broadcast(r1), dimensions={{0}}\n\
           y = f32[{rows},{cols}] multiply(d, rx)\n  gx = f32[{rows},{cols}] broadcast(g), dimensions={{1}}\n  yg = f32[{rows},{cols}] multiply(y, gx)\n\
           bx = f32[{rows},{cols}] broadcast(b), dimensions={{1}}\n  ROOT o = f32[{rows},{cols}] add(yg, bx)\n}}\n"
    )
}

#[test]
fn the_precompiled_layernorm_has_the_generated_kernels_bits() {
    if !host_has_avx2_fma() {
        return;
    }
    // Rows of equal values (variance 0: the estimate path of rsqrt) come with the specials.
    for (rows, cols) in [(16, 64), (40, 96), (64, 1024), (17, 4096)] {
        let hlo = layernorm_module(rows, cols);
        let x = inputs(&[rows, cols]);
        let g = inputs(&[1, cols]);
        let b = inputs(&[2, cols]);
        let vector = |a: &ArrayLiteral, row: usize| {
            let v: Vec<f64> = (0..cols as usize).map(|i| a.get_f64(row * cols as usize + i)).collect();
            ArrayLiteral::from_f64s(ElementType::F32, &[cols], &v).expect("literal")
        };
        let args = [x, vector(&g, 0), vector(&b, 1)];
        let (ir, precompiled) = compile_and_run(&hlo, false, &args);
        assert!(ir.contains("hlojit_rt_layernorm_rows_f32_avx2"), "{rows}x{cols}: the runtime's layernorm");
        let (ir, generated) = compile_and_run(&hlo, true, &args);
        assert!(!ir.contains("hlojit_rt_layernorm_rows_f32_avx2"), "{rows}x{cols}: generated when forced");
        let differ: Vec<usize> = (0..generated.len()).filter(|&i| precompiled[i] != generated[i]).collect();
        let show = |i: usize| format!("[{i}] {} vs generated {}", f32::from_bits(precompiled[i]), f32::from_bits(generated[i]));
        assert!(differ.is_empty(), "{rows}x{cols}: {} of {} elements differ, first {:?}", differ.len(), generated.len(), differ.iter().take(4).map(|&i| show(i)).collect::<Vec<_>>());
    }
}
