//! End-to-end checks of convolutions big enough to take the GEMM lowering (and of the
//! direct loop nest for the rest), compared with a plain reference convolution written here
//! from the operation's definition. Inputs are small integers, so sums are exact.

use crate::executable::Executable;
use crate::hlo::text::parse_module;
use crate::pipeline::CompileOptions;
use hlojit_runtime::{ArrayLiteral, ElementType, Literal};

#[derive(Clone, Copy)]
struct Win {
    size: i64,
    stride: i64,
    lo: i64,
    hi: i64,
    lhs_dil: i64,
    rhs_dil: i64,
    rev: bool,
}

fn win(size: i64) -> Win {
    Win { size, stride: 1, lo: 0, hi: 0, lhs_dil: 1, rhs_dil: 1, rev: false }
}

struct Case {
    /// dim_labels parts, e.g. "b01f", "01io", "b01f".
    lhs: &'static str,
    rhs: &'static str,
    out: &'static str,
    batch: i64,
    features: i64,
    spatial: Vec<i64>,
    out_features: i64,
    window: Vec<Win>,
    feature_groups: i64,
    batch_groups: i64,
    in_type: &'static str,
    out_type: &'static str,
    out_layout: Option<&'static str>,
}

fn case(spatial: &[i64], window: Vec<Win>, features: i64, out_features: i64) -> Case {
    Case {
        lhs: "b01f",
        rhs: "01io",
        out: "b01f",
        batch: 2,
        features,
        spatial: spatial.to_vec(),
        out_features,
        window,
        feature_groups: 1,
        batch_groups: 1,
        in_type: "f32",
        out_type: "f32",
        out_layout: None,
    }
}

fn labels_for(n: usize, text: &str) -> String {
    // "b01f" written for 2-D; other ranks use as many digits as spatial dimensions.
    let digits: String = (0..n).map(|i| char::from(b'0' + i as u8)).collect();
    text.replace("01", &digits)
}

fn dims_for(labels: &str, sizes: &dyn Fn(char) -> i64) -> Vec<i64> {
    labels.chars().map(sizes).collect()
}

struct Arr {
    dims: Vec<i64>,
    v: Vec<f64>,
}

fn strides(dims: &[i64]) -> Vec<i64> {
    let mut s = vec![1; dims.len()];
    for d in (0..dims.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * dims[d + 1];
    }
    s
}

fn values(n: usize, seed: u64, lo: i64, hi: i64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15).wrapping_add(7);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (lo + ((s >> 33) % (hi - lo + 1) as u64) as i64) as f64
        })
        .collect()
}

fn out_size(n: i64, w: &Win) -> i64 {
    let dilated = if n == 0 { 0 } else { (n - 1) * w.lhs_dil + 1 };
    let padded = dilated + w.lo + w.hi;
    let window = (w.size - 1) * w.rhs_dil + 1;
    if padded < window {
        0
    } else {
        (padded - window) / w.stride + 1
    }
}

/// The reference: for every output element, the sum over window taps and the group's input
/// features of input * kernel, skipping taps on padding or dilation holes.
fn reference(c: &Case, x: &Arr, w: &Arr, lhs: &str, rhs: &str, out: &str, out_dims: &[i64]) -> Vec<f64> {
    let n = c.spatial.len();
    let pos = |labels: &str, ch: char| labels.find(ch).expect("label");
    let sp = |s: usize| char::from(b'0' + s as u8);
    let xs = strides(&x.dims);
    let ws = strides(&w.dims);
    let groups_in = c.features / c.feature_groups;
    let out_per_fgroup = c.out_features / c.feature_groups;
    let out_per_bgroup = c.out_features / c.batch_groups;
    let bgroup_size = c.batch / c.batch_groups;
    let total: i64 = out_dims.iter().product();
    let os = strides(out_dims);
    let mut result = vec![0.0; total as usize];
    for (lin, r) in result.iter_mut().enumerate() {
        let at = |d: usize| (lin as i64 / os[d]) % out_dims[d];
        let b = at(pos(out, 'b'));
        let o = at(pos(out, 'f'));
        let g = o / out_per_fgroup;
        let batch_in = (o / out_per_bgroup) * bgroup_size * (c.batch_groups > 1) as i64 + b;
        let mut sum = 0.0;
        let taps: i64 = c.window.iter().map(|w| w.size).product();
        for t in 0..taps {
            let mut rest = t;
            let mut tap = vec![0; n];
            for s in (0..n).rev() {
                tap[s] = rest % c.window[s].size;
                rest /= c.window[s].size;
            }
            let mut xo = batch_in * xs[pos(lhs, 'b')];
            let mut wo = o * ws[pos(rhs, 'o')];
            let mut ok = true;
            for s in 0..n {
                let wd = &c.window[s];
                let p = at(pos(out, sp(s))) * wd.stride - wd.lo + tap[s] * wd.rhs_dil;
                if p < 0 || p % wd.lhs_dil != 0 || p / wd.lhs_dil >= c.spatial[s] {
                    ok = false;
                    break;
                }
                xo += (p / wd.lhs_dil) * xs[pos(lhs, sp(s))];
                let k = if wd.rev { wd.size - 1 - tap[s] } else { tap[s] };
                wo += k * ws[pos(rhs, sp(s))];
            }
            if !ok {
                continue;
            }
            for ci in 0..groups_in {
                let xv = x.v[(xo + (g * groups_in + ci) * xs[pos(lhs, 'f')]) as usize];
                let wv = w.v[(wo + ci * ws[pos(rhs, 'i')]) as usize];
                sum += xv * wv;
            }
        }
        *r = sum;
    }
    result
}

fn check(c: &Case, seed: u64) {
    let n = c.spatial.len();
    let (lhs, rhs, out) = (labels_for(n, c.lhs), labels_for(n, c.rhs), labels_for(n, c.out));
    let x_dims = dims_for(&lhs, &|ch| match ch {
        'b' => c.batch,
        'f' => c.features,
        d => c.spatial[d as usize - '0' as usize],
    });
    let w_dims = dims_for(&rhs, &|ch| match ch {
        'i' => c.features / c.feature_groups,
        'o' => c.out_features,
        d => c.window[d as usize - '0' as usize].size,
    });
    let out_dims = dims_for(&out, &|ch| match ch {
        'b' => c.batch / c.batch_groups,
        'f' => c.out_features,
        d => {
            let s = d as usize - '0' as usize;
            out_size(c.spatial[s], &c.window[s])
        }
    });
    let x = Arr { v: values(x_dims.iter().product::<i64>() as usize, seed, -3, 3), dims: x_dims };
    let w = Arr { v: values(w_dims.iter().product::<i64>() as usize, seed + 1, -3, 3), dims: w_dims };
    let want = reference(c, &x, &w, &lhs, &rhs, &out, &out_dims);
    let join = |v: Vec<String>| v.join("x");
    let window = format!(
        "size={} stride={} pad={} lhs_dilate={} rhs_dilate={} rhs_reversal={}",
        join(c.window.iter().map(|w| w.size.to_string()).collect()),
        join(c.window.iter().map(|w| w.stride.to_string()).collect()),
        join(c.window.iter().map(|w| format!("{}_{}", w.lo, w.hi)).collect()),
        join(c.window.iter().map(|w| w.lhs_dil.to_string()).collect()),
        join(c.window.iter().map(|w| w.rhs_dil.to_string()).collect()),
        join(c.window.iter().map(|w| (w.rev as i64).to_string()).collect()),
    );
    let shape = |t: &str, d: &[i64]| format!("{t}[{}]", d.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","));
    let out_shape = format!("{}{}", shape(c.out_type, &out_dims), c.out_layout.unwrap_or(""));
    let hlo = format!(
        "HloModule t\nENTRY e {{ x = {} parameter(0) w = {} parameter(1)\n ROOT c = {out_shape} convolution(x, w), window={{{window}}}, dim_labels={lhs}_{rhs}->{out}, feature_group_count={}, batch_group_count={} }}",
        shape(c.in_type, &x.dims),
        shape(c.in_type, &w.dims),
        c.feature_groups,
        c.batch_groups
    );
    let module = parse_module(&hlo).unwrap_or_else(|e| panic!("{e}\n{hlo}"));
    let exe = Executable::compile(&module, &CompileOptions::default()).unwrap_or_else(|e| panic!("{e}\n{hlo}"));
    let t = ElementType::from_name(c.in_type).expect("type");
    let args: Vec<Literal> = [&x, &w].iter().map(|a| ArrayLiteral::from_f64s(t, &a.dims, &a.v).expect("literal").into()).collect();
    let got = exe.run_literals(&args).expect("runs");
    let got = got.as_array().expect("array");
    assert_eq!(got.element_count(), want.len(), "{hlo}");
    for (i, want) in want.iter().enumerate() {
        assert_eq!(got.get_f64(i), *want, "element {i} of\n{hlo}");
    }
}

#[test]
fn nhwc_same_padding_with_edges() {
    // Width 13 is not a multiple of the register tile's rows; 20 output features leave a
    // partial vector; 5 input features.
    let w = Win { lo: 1, hi: 1, ..win(3) };
    check(&case(&[11, 13], vec![w, w], 5, 20), 1);
}

#[test]
fn nhwc_valid_reads_the_input_in_place() {
    check(&case(&[12, 17], vec![win(3), win(2)], 8, 16), 2);
}

#[test]
fn nchw_layouts_go_through_copies_and_scratch() {
    let mut c = case(&[10, 12], vec![Win { lo: 1, hi: 0, ..win(3) }, Win { lo: 0, hi: 2, ..win(3) }], 6, 12);
    c.lhs = "bf01";
    c.rhs = "oi01";
    c.out = "bf01";
    check(&c, 3);
}

#[test]
fn result_layout_without_contiguous_features() {
    let mut c = case(&[12, 12], vec![win(3), win(3)], 4, 16);
    c.out_layout = Some("{0,3,2,1}");
    check(&c, 4);
}

#[test]
fn strides_dilations_negative_padding_and_reversal() {
    let a = Win { stride: 2, lo: -1, hi: 2, rhs_dil: 2, rev: true, ..win(3) };
    let b = Win { lo: 2, hi: 1, lhs_dil: 2, ..win(2) };
    check(&case(&[15, 9], vec![a, b], 7, 24), 5);
}

#[test]
fn feature_and_batch_groups() {
    let w = Win { lo: 1, hi: 1, ..win(3) };
    let mut c = case(&[10, 10], vec![w, w], 12, 24);
    c.feature_groups = 3;
    check(&c, 6);
    let mut c = case(&[10, 10], vec![w, w], 6, 16);
    c.batch = 4;
    c.batch_groups = 2;
    check(&c, 7);
}

#[test]
fn one_and_three_spatial_dimensions() {
    check(&case(&[40], vec![Win { stride: 3, lo: 2, hi: 2, ..win(5) }], 9, 32), 8);
    let w = Win { lo: 1, hi: 1, ..win(3) };
    check(&case(&[5, 6, 7], vec![w, win(2), w], 4, 16), 9);
}

#[test]
fn narrow_images_and_other_types() {
    // Output width 3 is less than the tile's rows.
    check(&case(&[30, 5], vec![win(3), win(3)], 8, 32), 10);
    let w = Win { lo: 1, hi: 1, ..win(3) };
    for (i, o) in [("s8", "s32"), ("bf16", "f32"), ("f64", "f64"), ("s32", "s32")] {
        let mut c = case(&[8, 9], vec![w, w], 6, 16);
        c.in_type = i;
        c.out_type = o;
        check(&c, 11);
    }
}

#[test]
fn depthwise() {
    // 40 features: two full vectors and a masked one; width 13 is not a multiple of the pixel
    // block.
    let w = Win { lo: 1, hi: 1, ..win(3) };
    let mut c = case(&[12, 13], vec![w, w], 40, 40);
    c.feature_groups = 40;
    check(&c, 12);
    let a = Win { stride: 2, lo: 2, hi: 1, rhs_dil: 2, rev: true, ..win(3) };
    let mut c = case(&[40, 9], vec![a, Win { lo: 1, hi: 1, ..win(3) }], 24, 24);
    c.feature_groups = 24;
    check(&c, 13);
}

/// `(optimized LLVM IR, result bits)` of `hlo` run on `args` compiled for `target`.
fn bits_for(hlo: &str, target: crate::backend::target::TargetOptions, args: &[&Arr]) -> (String, Vec<u64>) {
    let module = parse_module(hlo).expect("test module parses");
    let options = CompileOptions { target, ..CompileOptions::default() };
    let prepared = crate::pipeline::prepare(&module, &options).expect("prepares");
    let ir = crate::pipeline::compile_to(&prepared, "t", &options, crate::pipeline::OutputKind::LlvmIr, true).expect("compiles to IR");
    let exe = Executable::compile(&module, &options).expect("compiles");
    let args: Vec<Literal> = args.iter().map(|a| ArrayLiteral::from_f64s(ElementType::F32, &a.dims, &a.v).expect("literal").into()).collect();
    let out = exe.run_literals(&args).expect("runs");
    let out = out.as_array().expect("array result");
    (String::from_utf8_lossy(&ir).into_owned(), (0..out.element_count()).map(|i| out.get_f64(i).to_bits()).collect())
}

/// Floats with 24 random bits in [-1, 1): sums that round, so equal bits mean equal
/// arithmetic.
fn random_floats(dims: &[i64], seed: u64) -> Arr {
    let n = dims.iter().product::<i64>() as usize;
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15).wrapping_add(11);
    let v = (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f64 / (1u64 << 24) as f64) * 2.0 - 1.0
        })
        .collect();
    Arr { dims: dims.to_vec(), v }
}

#[test]
fn precompiled_convolution_is_bitwise_the_generated_one() {
    use crate::backend::target::TargetOptions;
    if !(std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")) {
        return;
    }
    // Haswell calls the runtime's AVX2 convolution; AVX + FMA without AVX2 generates the same
    // 8-lane tiles with the same fused multiply-adds.
    let haswell = || TargetOptions { cpu: Some("haswell".into()), features: Some("+avx,+avx2,+fma".into()), ..TargetOptions::default() };
    let generated = || TargetOptions { cpu: Some("x86-64".into()), features: Some("+avx,+fma,-avx2".into()), ..TargetOptions::default() };
    let cases = [
        // Padded (an image copy), 20 output features (a partial column strip).
        ("f32[2,10,13,24]", "f32[3,3,24,20]", "f32[2,10,13,20]", "size=3x3 pad=1_1x1_1", 1),
        // Strided and dilated, read in place.
        ("f32[2,11,17,16]", "f32[3,2,16,32]", "f32[2,5,15,32]", "size=3x2 stride=2x1 rhs_dilate=1x2", 1),
        // Depthwise, 36 features (a partial vector), 13 pixels a line (overlapping blocks).
        ("f32[2,12,13,36]", "f32[3,3,1,36]", "f32[2,12,13,36]", "size=3x3 pad=1_1x1_1", 36),
    ];
    // Which path a convolution takes depends on HLOJIT_GENERATED_GEMM, which other tests set.
    let _guard = super::bf16_pairs_tests::GEMM_VARIABLE.lock().unwrap_or_else(|e| e.into_inner());
    for (i, (x, w, out, window, groups)) in cases.into_iter().enumerate() {
        let hlo = format!(
            "HloModule t\nENTRY e {{ x = {x} parameter(0) w = {w} parameter(1)\n ROOT c = {out} convolution(x, w), window={{{window}}}, dim_labels=b01f_01io->b01f, feature_group_count={groups} }}"
        );
        let dims = |s: &str| -> Vec<i64> { s[4..s.len() - 1].split(',').map(|d| d.parse().expect("dim")).collect() };
        let (xa, wa) = (random_floats(&dims(x), 2 * i as u64), random_floats(&dims(w), 2 * i as u64 + 1));
        let (ir, fast) = bits_for(&hlo, haswell(), &[&xa, &wa]);
        assert!(ir.contains("hlojit_rt_conv_f32_avx2"), "haswell should call the runtime's convolution:\n{hlo}");
        let (ir, slow) = bits_for(&hlo, generated(), &[&xa, &wa]);
        assert!(!ir.contains("hlojit_rt_conv_f32"), "no AVX2 convolution without AVX2");
        assert_eq!(fast, slow, "{hlo}");
    }
}
