//! The precompiled row kernels against the generated row kernels they replace: the same bits
//! on every element (the generated kernels are what the conformance corpus checks against
//! XLA), for each vector width (AVX2, Intel's AVX-512 with LLVM's 8 lanes, AMD's with 16),
//! and the generated kernel wherever the runtime's would not repeat it.

use super::super::row_isa::{GENERATED_ROWS_VARIABLE, NARROW_AVX512_CPUS, WIDE_AVX512_CPUS};
use crate::backend::target::TargetOptions;
use crate::executable::Executable;
use crate::hlo::text::parse_module;
use crate::pipeline::{compile_to, prepare, CompileOptions, OutputKind};
use hlojit_runtime::kernels::rows::RowIsa;
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

fn target(cpu: &str, features: &str) -> CompileOptions {
    let target = TargetOptions { cpu: Some(cpu.into()), features: Some(features.into()), ..TargetOptions::default() };
    CompileOptions { target, ..CompileOptions::default() }
}

/// Haswell's features (the AVX2 kernels'), so that the test means the same on an AVX-512 host.
fn haswell() -> CompileOptions {
    target("haswell", "+avx,+avx2,+fma")
}

const AVX512: &str = "+avx,+avx2,+fma,+avx512f";

/// The targets of each vector width this host can run, with the row kernels the compiler
/// should call on each: Haswell, and on AVX-512 hosts Zen 4 (16 lanes) and Skylake-X
/// (AVX-512, but LLVM's 8 lanes).
fn targets() -> Vec<(CompileOptions, RowIsa)> {
    #[cfg(target_arch = "x86_64")]
    {
        let mut t = Vec::new();
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            t.push((haswell(), RowIsa::Avx2));
        }
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512cd")
        {
            t.push((target("znver4", AVX512), RowIsa::Avx512));
            t.push((target("skylake-avx512", AVX512), RowIsa::Avx2));
        }
        t
    }
    #[cfg(not(target_arch = "x86_64"))]
    Vec::new()
}

/// Serializes the tests that set the variable (other tests' softmax modules only ever see
/// the same bits either way).
static VARIABLE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The optimized LLVM IR of `hlo` for `options`, the runtime's row kernels allowed or not.
fn ir(hlo: &str, options: &CompileOptions, generated: bool) -> String {
    let _guard = VARIABLE.lock().unwrap_or_else(|e| e.into_inner());
    if generated {
        std::env::set_var(GENERATED_ROWS_VARIABLE, "1");
    }
    let prepared = prepare(&parse_module(hlo).expect("parses"), options).expect("prepares");
    let ir = compile_to(&prepared, "rows", options, OutputKind::LlvmIr, true);
    std::env::remove_var(GENERATED_ROWS_VARIABLE);
    String::from_utf8_lossy(&ir.expect("compiles to IR")).into_owned()
}

/// Compiles `hlo` for `options`, its LLVM IR and the bits of every result element on `args`,
/// the runtime's kernels allowed or not.
fn compile_and_run(hlo: &str, options: &CompileOptions, generated: bool, args: &[ArrayLiteral]) -> (String, Vec<u32>) {
    let ir = ir(hlo, options, generated);
    let _guard = VARIABLE.lock().unwrap_or_else(|e| e.into_inner());
    if generated {
        std::env::set_var(GENERATED_ROWS_VARIABLE, "1");
    }
    let exe = Executable::compile(&parse_module(hlo).expect("test module parses"), options);
    std::env::remove_var(GENERATED_ROWS_VARIABLE);
    let args: Vec<Literal> = args.iter().map(|a| Literal::from(a.clone())).collect();
    let out = exe.expect("compiles").run_literals(&args).expect("runs");
    let bits = out
        .leaves()
        .into_iter()
        .flat_map(|a| (0..a.element_count()).map(|i| (a.get_f64(i) as f32).to_bits()).collect::<Vec<_>>())
        .collect();
    (ir, bits)
}

fn suffix(isa: RowIsa) -> &'static str {
    match isa {
        RowIsa::Avx2 => "avx2",
        RowIsa::Avx512 => "avx512",
    }
}

/// Runs `hlo` (rows of `cols`) on `args` with the runtime's `kernel` (named without its
/// suffix) and with the generated kernels, on every target of [`targets`] whose kernels take
/// such rows, and asserts the same bits; on the others, that the kernel is not called.
fn assert_same_bits(what: &str, hlo: &str, cols: i64, kernel: &str, args: &[ArrayLiteral]) {
    for (options, isa) in targets() {
        let symbol = format!("{kernel}_{}", suffix(isa));
        let cpu = options.target.cpu.clone().unwrap_or_default();
        if !isa.accepts_row(cols) {
            assert!(!ir(hlo, &options, false).contains(kernel), "{what} on {cpu}: rows of {cols} stay generated");
            continue;
        }
        let (ir, precompiled) = compile_and_run(hlo, &options, false, args);
        assert!(ir.contains(&format!("@{symbol}(")), "{what} on {cpu}: calls {symbol}");
        let (ir, generated) = compile_and_run(hlo, &options, true, args);
        assert!(!ir.contains(kernel), "{what} on {cpu}: generated when forced");
        let differ: Vec<usize> = (0..generated.len()).filter(|&i| precompiled[i] != generated[i]).collect();
        let show = |i: usize| format!("[{i}] {:#x} vs generated {:#x}", precompiled[i], generated[i]);
        assert!(
            differ.is_empty(),
            "{what} on {cpu}: {} of {} elements differ, first {:?}",
            differ.len(),
            generated.len(),
            differ.iter().take(4).map(|&i| show(i)).collect::<Vec<_>>()
        );
    }
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
    // At least 16 rows: fewer stay separate kernels (passes/row_fusion.rs). 2048x4096 is
    // 32 MiB, written with non-temporal stores.
    for dims in [&[20, 64][..], &[17, 96], &[4, 5, 128], &[33, 1024], &[16, 4096], &[16, 160], &[18, 192], &[2048, 4096]] {
        let x = inputs(dims);
        let cols = dims[dims.len() - 1];
        assert_same_bits(&format!("softmax {dims:?}"), &softmax_module(dims), cols, "hlojit_rt_softmax_rows_f32", std::slice::from_ref(&x));
        let nan = |v: f64| v.is_nan();
        let values: Vec<f64> = (0..x.element_count()).map(|i| x.get_f64(i)).collect();
        assert!(values.iter().any(|&v| nan(v)) && values.iter().any(|&v| v == f64::INFINITY), "{dims:?}: the inputs reach the specials");
    }
}

#[test]
fn other_softmaxes_and_targets_keep_the_generated_kernel() {
    let calls = |hlo: &str, options: &CompileOptions, symbol: &str| ir(hlo, options, false).contains(symbol);
    assert!(calls(&softmax_module(&[16, 64]), &haswell(), SYMBOL));
    // Rows of 100: LLVM's vector loops leave remainders, summed in another order.
    assert!(!calls(&softmax_module(&[16, 100]), &haswell(), SYMBOL));
    // Rows of 32: one iteration, straightened and reassociated by LLVM.
    assert!(!calls(&softmax_module(&[16, 32]), &haswell(), SYMBOL));
    assert!(!calls(&layernorm_module(16, 32), &haswell(), "hlojit_rt_layernorm_rows_f32"));
    // Intel's AVX-512 CPUs: LLVM vectorizes with 8 lanes, as on AVX2.
    assert!(calls(&softmax_module(&[16, 64]), &target("skylake-avx512", AVX512), SYMBOL));
    // Zen 4: 16 lanes, so rows of 128 and more; 64 is one step (straightened), 96 two
    // accumulators of 16 lanes, not four.
    let zen4 = target("znver4", AVX512);
    assert!(calls(&softmax_module(&[16, 128]), &zen4, "hlojit_rt_softmax_rows_f32_avx512"));
    assert!(!calls(&softmax_module(&[16, 64]), &zen4, "hlojit_rt_softmax_rows_f32"));
    assert!(!calls(&softmax_module(&[16, 96]), &zen4, "hlojit_rt_softmax_rows_f32"));
    // An AVX-512 CPU whose vector width is not known here.
    assert!(!calls(&softmax_module(&[16, 128]), &target("x86-64", AVX512), "hlojit_rt_softmax_rows_f32"));
    // Without FMA the polynomial rounds differently.
    assert!(!calls(&softmax_module(&[16, 64]), &target("x86-64", "+avx,+avx2"), SYMBOL));
    // A softmax over the major dimension is another kernel.
    let major = softmax_module(&[64, 64]).replace("dimensions={1}, to_apply", "dimensions={0}, to_apply").replace("dimensions={0}\n", "dimensions={1}\n");
    assert!(!calls(&major, &haswell(), SYMBOL));
}

/// Every CPU `row_isa.rs` lists gets f32 row loops of the width it says from LLVM (a check on
/// the lists when LLVM's tuning changes), and calls the kernels of that width.
#[test]
fn every_listed_cpu_vectorizes_rows_as_listed() {
    let hlo = softmax_module(&[16, 4096]);
    for (cpus, lanes, isa) in [(&WIDE_AVX512_CPUS[..], 16, RowIsa::Avx512), (&NARROW_AVX512_CPUS[..], 8, RowIsa::Avx2)] {
        for cpu in cpus {
            let options = target(cpu, AVX512);
            let generated = ir(&hlo, &options, true);
            let vectors = |n: i64| generated.contains(&format!("<{n} x float>"));
            assert!(vectors(lanes) && !vectors(24 - lanes), "{cpu}: LLVM vectorizes with {lanes} lanes");
            assert!(ir(&hlo, &options, false).contains(&format!("@hlojit_rt_softmax_rows_f32_{}(", suffix(isa))), "{cpu}: calls the {lanes}-lane kernel");
        }
    }
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
    for (rows, cols, init) in [(16, 64, "0"), (40, 96, "0"), (64, 4096, "0"), (300, 1024, "0"), (16, 128, "2.5"), (20, 192, "0")] {
        let hlo = reductions_module(rows, cols, init);
        assert_same_bits(&format!("reductions {rows}x{cols}"), &hlo, cols, "hlojit_rt_row_reduce_f32", &[inputs(&[rows, cols])]);
        // Both outputs row maxima and sums (the row maxima with NaNs of both signs kept, not
        // just their maximum): the walk of two reductions at once.
        let rowwise = hlo.replace("f32[] reduce(x, ninf), dimensions={0,1}", &format!("f32[{rows}] reduce(x, ninf), dimensions={{1}}")).replace(", f32[]) tuple", &format!(", f32[{rows}]) tuple"));
        assert_same_bits(&format!("row sums and maxima {rows}x{cols}"), &rowwise, cols, "hlojit_rt_row_reduce_f32", &[inputs(&[rows, cols])]);
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
    // Rows of equal values (variance 0: the estimate path of rsqrt) come with the specials;
    // 8192 rows of 1024 (32 MB) are written with non-temporal stores.
    for (rows, cols) in [(16, 64), (40, 96), (64, 1024), (17, 4096), (18, 192), (8192, 1024)] {
        let hlo = layernorm_module(rows, cols);
        let x = inputs(&[rows, cols]);
        let g = inputs(&[1, cols]);
        let b = inputs(&[2, cols]);
        let vector = |a: &ArrayLiteral, row: usize| {
            let v: Vec<f64> = (0..cols as usize).map(|i| a.get_f64(row * cols as usize + i)).collect();
            ArrayLiteral::from_f64s(ElementType::F32, &[cols], &v).expect("literal")
        };
        assert_same_bits(&format!("layernorm {rows}x{cols}"), &hlo, cols, "hlojit_rt_layernorm_rows_f32", &[x, vector(&g, 0), vector(&b, 1)]);
    }
}
