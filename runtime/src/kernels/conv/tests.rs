//! The precompiled convolution against the operation's definition, computed here directly
//! (inputs are small integers, so every sum is exact and any order gives the same value).

use super::*;
use crate::kernels::gemm::host_supports;

/// NHWC input, HWIO kernel (the kernel's I is per group), NHWC output; 2 spatial dims.
struct Case {
    batch: i64,
    c_in: i64,
    c_out: i64,
    size: [i64; 2],
    window: [i64; 2],
    stride: [i64; 2],
    pad: [(i64, i64); 2],
    lhs_dil: [i64; 2],
    rhs_dil: [i64; 2],
    reversed: [bool; 2],
    feature_groups: i64,
    batch_groups: i64,
    depthwise: bool,
}

fn base() -> Case {
    Case {
        batch: 2,
        c_in: 8,
        c_out: 20,
        size: [9, 13],
        window: [3, 3],
        stride: [1, 1],
        pad: [(1, 1), (1, 1)],
        lhs_dil: [1, 1],
        rhs_dil: [1, 1],
        reversed: [false, false],
        feature_groups: 1,
        batch_groups: 1,
        depthwise: false,
    }
}

fn values(n: i64, seed: i64) -> Vec<f32> {
    (0..n).map(|i| ((i * 7 + seed * 13) % 7 - 3) as f32).collect()
}

fn run(c: &Case, isa: Isa, mr: i64, nv: i64) {
    let groups = c.feature_groups * c.batch_groups;
    let cg_in = c.c_in / c.feature_groups;
    let out_size: Vec<i64> = (0..2)
        .map(|s| {
            let dilated = (c.size[s] - 1) * c.lhs_dil[s] + 1 + c.pad[s].0 + c.pad[s].1;
            let span = (c.window[s] - 1) * c.rhs_dil[s] + 1;
            (dilated - span) / c.stride[s] + 1
        })
        .collect();
    let out_batch = c.batch / c.batch_groups;
    let x = values(c.batch * c.size[0] * c.size[1] * c.c_in, 1);
    let w = values(c.window[0] * c.window[1] * cg_in * c.c_out, 2);
    let mut y = vec![f32::NAN; (out_batch * out_size[0] * out_size[1] * c.c_out) as usize];
    let d = ConvF32 {
        spatial: 2,
        batch: c.batch,
        features_in: c.c_in,
        group_in: cg_in,
        group_out: c.c_out / groups,
        feature_groups: c.feature_groups,
        batch_groups: c.batch_groups,
        in_size: [c.size[0], c.size[1], 0],
        out_size: [out_size[0], out_size[1], 0],
        window: [c.window[0], c.window[1], 0],
        stride: [c.stride[0], c.stride[1], 0],
        pad_low: [c.pad[0].0, c.pad[1].0, 0],
        pad_high: [c.pad[0].1, c.pad[1].1, 0],
        base_dilation: [c.lhs_dil[0], c.lhs_dil[1], 0],
        window_dilation: [c.rhs_dil[0], c.rhs_dil[1], 0],
        reversed: [i64::from(c.reversed[0]), i64::from(c.reversed[1]), 0],
        input: x.as_ptr(),
        in_batch: c.size[0] * c.size[1] * c.c_in,
        in_feature: 1,
        in_spatial: [c.size[1] * c.c_in, c.c_in, 0],
        kernel: w.as_ptr(),
        kernel_in: c.c_out,
        kernel_out: 1,
        kernel_spatial: [c.window[1] * cg_in * c.c_out, cg_in * c.c_out, 0],
        output: y.as_mut_ptr(),
        out_batch: out_size[0] * out_size[1] * c.c_out,
        out_spatial: [out_size[1] * c.c_out, c.c_out, 0],
        mr,
        nv,
        depthwise: i64::from(c.depthwise),
    };
    assert_eq!(unsafe { conv(&d, isa) }, 0);
    let group_out_f = c.c_out / c.feature_groups;
    let group_out_b = c.c_out / c.batch_groups;
    for ob in 0..out_batch {
        for oy in 0..out_size[0] {
            for ox in 0..out_size[1] {
                for o in 0..c.c_out {
                    let (gf, gb) = (o / group_out_f, o / group_out_b);
                    let n_in = gb * out_batch + ob;
                    let mut want = 0f32;
                    for ky in 0..c.window[0] {
                        for kx in 0..c.window[1] {
                            let pos = [oy * c.stride[0] - c.pad[0].0 + ky * c.rhs_dil[0], ox * c.stride[1] - c.pad[1].0 + kx * c.rhs_dil[1]];
                            let u: Vec<Option<i64>> = (0..2)
                                .map(|s| (pos[s] >= 0 && pos[s] % c.lhs_dil[s] == 0 && pos[s] / c.lhs_dil[s] < c.size[s]).then(|| pos[s] / c.lhs_dil[s]))
                                .collect();
                            let (Some(uy), Some(ux)) = (u[0], u[1]) else { continue };
                            let wy = if c.reversed[0] { c.window[0] - 1 - ky } else { ky };
                            let wx = if c.reversed[1] { c.window[1] - 1 - kx } else { kx };
                            for ci in 0..cg_in {
                                let xv = x[(((n_in * c.size[0] + uy) * c.size[1] + ux) * c.c_in + gf * cg_in + ci) as usize];
                                let wv = w[(((wy * c.window[1] + wx) * cg_in + ci) * c.c_out + o) as usize];
                                want += xv * wv;
                            }
                        }
                    }
                    let got = y[(((ob * out_size[0] + oy) * out_size[1] + ox) * c.c_out + o) as usize];
                    assert_eq!(got, want, "output ({ob}, {oy}, {ox}, {o}) with tile {mr}x{nv} on {isa:?}");
                }
            }
        }
    }
}

fn each_isa(f: impl Fn(Isa)) {
    for isa in [Isa::Avx2Fma, Isa::Avx512] {
        if host_supports(isa) {
            f(isa);
        }
    }
}

fn gemm_tiles(c: &Case) {
    each_isa(|isa| {
        let tiles: &[(i64, i64)] = if isa == Isa::Avx512 { &[(12, 1), (12, 2), (9, 3), (6, 4)] } else { &[(12, 1), (6, 2), (4, 2)] };
        for &(mr, nv) in tiles {
            run(c, isa, mr, nv);
        }
    });
}

#[test]
fn padded_convolution_with_a_partial_column_strip() {
    gemm_tiles(&base());
}

#[test]
fn strides_dilations_reversal_and_negative_padding() {
    gemm_tiles(&Case { stride: [2, 1], rhs_dil: [1, 2], lhs_dil: [2, 1], reversed: [true, false], pad: [(2, -1), (1, 2)], size: [7, 17], ..base() });
}

#[test]
fn unpadded_input_is_read_in_place() {
    gemm_tiles(&Case { pad: [(0, 0), (0, 0)], size: [5, 14], ..base() });
}

#[test]
fn feature_and_batch_groups() {
    gemm_tiles(&Case { feature_groups: 2, c_out: 24, ..base() });
    gemm_tiles(&Case { batch_groups: 2, c_out: 24, ..base() });
}

#[test]
fn depthwise_with_a_partial_feature_vector_and_short_lines() {
    each_isa(|isa| {
        for (features, size) in [(20, [9, 11]), (40, [4, 5])] {
            let c = Case { c_in: features, c_out: features, feature_groups: features, depthwise: true, size, ..base() };
            run(&c, isa, 0, 0);
        }
    });
}

#[test]
fn unsupported_descriptors_are_errors() {
    each_isa(|isa| {
        let mut d = unsafe { std::mem::zeroed::<ConvF32>() };
        d.spatial = 4;
        assert_eq!(unsafe { conv(&d, isa) }, 1);
    });
}
