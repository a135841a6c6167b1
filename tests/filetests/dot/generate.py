#!/usr/bin/env python3
"""Writes the dot and convolution file tests (tests/filetests/dot/*.hlo, conv/*.hlo).

Expected values are computed here with numpy from the operations' definitions (XLA's
semantics: operands converted to the result type, sums in float64 / exact integers, wrapped to
the result's integer width, rounded once to 16-bit float results; convolution as the textbook
loop over output elements, window taps and the group's input features), independently of
hlojit. Inputs come from a fixed seed. Run: python3 tests/filetests/dot/generate.py
(needs numpy and ml_dtypes).
"""
import itertools
import os

import ml_dtypes
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CONV_DIR = os.path.join(os.path.dirname(HERE), "conv")
rng = np.random.default_rng(20240611)

NP = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
      "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
      "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
      "c64": np.complex64, "c128": np.complex128, "pred": np.bool_}


def fmt_scalar(v, t):
    if t == "pred":
        return "true" if v else "false"
    if t in ("c64", "c128"):
        return f"({fmt_scalar(v.real, 'f64')}, {fmt_scalar(v.imag, 'f64')})"
    if t in ("f16", "bf16", "f32", "f64"):
        f = float(v)
        if f == int(f) and abs(f) < 1e15:
            return str(int(f))
        return repr(f)
    return str(int(v))


def fmt_literal(a, t):
    def rec(x):
        if x.ndim == 0:
            return fmt_scalar(x[()], t)
        return "{" + ", ".join(rec(x[i]) for i in range(x.shape[0])) + "}"
    dims = ",".join(str(d) for d in a.shape)
    if a.ndim == 0:
        return f"{t}[] {fmt_scalar(a[()], t)}"
    return f"{t}[{dims}] {rec(a)}"


def write(path, comment, inputs, expects, module, tolerance=None):
    lines = [f"// {l}" if l else "//" for l in comment.strip().splitlines()]
    lines.append("// Expected values computed with numpy by generate.py in tests/filetests/dot.")
    if tolerance:
        lines.append(f"// tolerance: {tolerance}")
    for a, t in inputs:
        lines.append("// input: " + fmt_literal(a, t))
    for a, t in expects:
        lines.append("// expect: " + fmt_literal(a, t))
    lines.append(module.strip())
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


def ints(shape, lo, hi, t):
    return rng.integers(lo, hi + 1, size=shape).astype(NP[t])


def floats(shape, t):
    return rng.uniform(-1, 1, size=shape).astype(NP[t])


def wrap(x, t):
    """Exact integer sums wrapped to type t."""
    bits = np.dtype(NP[t]).itemsize * 8
    x = np.asarray(x, dtype=object) % (1 << bits)
    if np.issubdtype(NP[t], np.signedinteger):
        x = np.where(x >= (1 << (bits - 1)), x - (1 << bits), x)
    return np.array(x.tolist(), dtype=object).astype(np.int64).astype(NP[t]) if bits < 64 else \
        np.array([int(v) for v in x.flat], dtype=object).reshape(x.shape).astype(NP[t])


def dot_general(a, b, lb, lc, rb, rc, out_t):
    """Reference dot_general: result dims batch, lhs free, rhs free."""
    lf = [d for d in range(a.ndim) if d not in lb and d not in lc]
    rf = [d for d in range(b.ndim) if d not in rb and d not in rc]
    if out_t in ("pred",):
        a = a.astype(np.int64)
        b = b.astype(np.int64)
    elif np.issubdtype(NP[out_t], np.integer):
        a = a.astype(object)
        b = b.astype(object)
    elif out_t in ("c64", "c128"):
        a = a.astype(np.complex128)
        b = b.astype(np.complex128)
    else:
        # Operands are converted to the result type first (a no-op or exact widening here).
        a = a.astype(NP[out_t]).astype(np.float64)
        b = b.astype(NP[out_t]).astype(np.float64)
    at = np.transpose(a, lb + lf + lc)
    bt = np.transpose(b, rb + rc + rf)
    bs = [a.shape[d] for d in lb]
    ms = [a.shape[d] for d in lf]
    ks = [a.shape[d] for d in lc]
    ns = [b.shape[d] for d in rf]
    B, M, K, N = (int(np.prod(x, dtype=np.int64)) for x in (bs, ms, ks, ns))
    a3 = at.reshape(B, M, K)
    b3 = bt.reshape(B, K, N)
    out = np.zeros((B, M, N), dtype=a3.dtype)
    for i in range(B):
        out[i] = a3[i].dot(b3[i]) if K > 0 else 0
    out = out.reshape(bs + ms + ns)
    if out_t == "pred":
        return out != 0
    if np.issubdtype(NP[out_t], np.integer):
        return wrap(out, out_t)
    return out.astype(NP[out_t])


def conv(x, w, lhs, rhs, out, window, fgc=1, bgc=1, out_t="f32"):
    """Reference convolution. window: list of (size, stride, lo, hi, lhs_dil, rhs_dil, rev)."""
    sp = len(window)
    integer = np.issubdtype(NP[out_t], np.integer)
    acc_t = object if integer else np.float64
    x = x.astype(acc_t) if integer else x.astype(NP[out_t]).astype(np.float64)
    w = w.astype(acc_t) if integer else w.astype(NP[out_t]).astype(np.float64)
    ib, iff = lhs.index("b"), lhs.index("f")
    isp = [lhs.index(str(i)) for i in range(sp)]
    ko, ki = rhs.index("o"), rhs.index("i")
    ksp = [rhs.index(str(i)) for i in range(sp)]
    ob, of = out.index("b"), out.index("f")
    osp = [out.index(str(i)) for i in range(sp)]
    B, O, Cg = x.shape[ib], w.shape[ko], w.shape[ki]
    osizes = []
    for d, (size, stride, lo, hi, ld, rd, rev) in enumerate(window):
        n = x.shape[isp[d]]
        base = (n - 1) * ld + 1 + lo + hi if n else lo + hi
        win = (size - 1) * rd + 1
        osizes.append(max(0, (base - win) // stride + 1) if base >= win else 0)
    oshape = [0] * (sp + 2)
    oshape[ob], oshape[of] = B // bgc, O
    for d in range(sp):
        oshape[osp[d]] = osizes[d]
    res = np.zeros(oshape, dtype=acc_t)
    og = O // fgc
    for oidx in itertools.product(*[range(s) for s in oshape]):
        b, o = oidx[ob], oidx[of]
        g = o // og
        bb = (o // (O // bgc)) * (B // bgc) + b if bgc > 1 else b
        acc = 0
        for taps in itertools.product(*[range(wd[0]) for wd in window]):
            xi, wi = [0] * (sp + 2), [0] * (sp + 2)
            ok = True
            for d, (size, stride, lo, hi, ld, rd, rev) in enumerate(window):
                u = oidx[osp[d]] * stride - lo + taps[d] * rd
                if u % ld or u < 0 or u // ld >= x.shape[isp[d]]:
                    ok = False
                    break
                xi[isp[d]] = u // ld
                wi[ksp[d]] = size - 1 - taps[d] if rev else taps[d]
            if not ok:
                continue
            for ci in range(Cg):
                xi[ib], xi[iff], wi[ki], wi[ko] = bb, g * Cg + ci, ci, o
                acc += x[tuple(xi)] * w[tuple(wi)]
        res[oidx] = acc
    if integer:
        return wrap(res, out_t)
    return res.astype(NP[out_t])


def shape(t, dims, layout=None):
    s = f"{t}[{','.join(str(d) for d in dims)}]"
    return s + (layout if layout else "")


def window_text(window):
    j = lambda f: "x".join(str(f(w)) for w in window)
    return (f"size={j(lambda w: w[0])} stride={j(lambda w: w[1])} pad={j(lambda w: f'{w[2]}_{w[3]}')} "
            f"lhs_dilate={j(lambda w: w[4])} rhs_dilate={j(lambda w: w[5])} rhs_reversal={j(lambda w: int(w[6]))}")


def dot_text(lb, lc, rb, rc):
    f = lambda v: "{" + ",".join(str(d) for d in v) + "}"
    s = f"lhs_contracting_dims={f(lc)}, rhs_contracting_dims={f(rc)}"
    if lb:
        s = f"lhs_batch_dims={f(lb)}, " + s + f", rhs_batch_dims={f(rb)}"
    return s


def dot_case(name, comment, a_t, b_t, out_t, a, b, lb, lc, rb, rc, layouts=(None, None, None), tolerance=None):
    want = dot_general(a, b, lb, lc, rb, rc, out_t)
    la, lb_, lo = layouts
    module = f"""HloModule {name}

ENTRY main {{
  a = {shape(a_t, a.shape, la)} parameter(0)
  b = {shape(b_t, b.shape, lb_)} parameter(1)
  ROOT d = {shape(out_t, want.shape, lo)} dot(a, b), {dot_text(lb, lc, rb, rc)}
}}"""
    write(os.path.join(HERE, f"{name}.hlo"), comment, [(a, a_t), (b, b_t)], [(want, out_t)], module, tolerance)


def conv_case(name, comment, in_t, out_t, x, w, labels, window, fgc=1, bgc=1, out_layout=None, tolerance=None, x_t=None):
    lhs, rhs, out = labels
    want = conv(x, w, lhs, rhs, out, window, fgc, bgc, out_t)
    module = f"""HloModule {name}

ENTRY main {{
  x = {shape(in_t, x.shape)} parameter(0)
  w = {shape(in_t, w.shape)} parameter(1)
  ROOT c = {shape(out_t, want.shape, out_layout)} convolution(x, w), window={{{window_text(window)}}}, dim_labels={lhs}_{rhs}->{out}, feature_group_count={fgc}, batch_group_count={bgc}
}}"""
    write(os.path.join(CONV_DIR, f"{name}.hlo"), comment, [(x, in_t), (w, in_t)], [(want, out_t)], module, tolerance)


def W(size, stride=1, lo=0, hi=0, ld=1, rd=1, rev=False):
    return (size, stride, lo, hi, ld, rd, rev)


def main():
    os.makedirs(CONV_DIR, exist_ok=True)
    # ---- dot ----
    dot_case("u8_u32", "Unsigned 8-bit operands, u32 result.", "u8", "u8", "u32",
             ints((4, 6), 0, 255, "u8"), ints((6, 3), 0, 255, "u8"), [], [1], [], [0])
    dot_case("s16_s32_negative", "s16 operands with negative values, s32 result.", "s16", "s16", "s32",
             ints((5, 7), -30000, 30000, "s16"), ints((7, 4), -30000, 30000, "s16"), [], [1], [], [0])
    dot_case("s8_s8_wraps", "s8 result: products and sums wrap modulo 2^8.", "s8", "s8", "s8",
             ints((3, 9), -128, 127, "s8"), ints((9, 5), -128, 127, "s8"), [], [1], [], [0])
    dot_case("u32_wraps", "u32 sums wrap modulo 2^32.", "u32", "u32", "u32",
             ints((3, 4), 0, 2**32 - 1, "u32"), ints((4, 2), 0, 2**32 - 1, "u32"), [], [1], [], [0])
    dot_case("pred", "pred x pred -> pred: true where some product is true (or of ands).", "pred", "pred", "pred",
             rng.random((4, 5)) < 0.25, rng.random((5, 6)) < 0.25, [], [1], [], [0])
    dot_case("two_batch_dims_odd_positions",
             "Two batch dimensions in odd positions (lhs {3,0}, rhs {1,3}), contracting in the middle.",
             "f64", "f64", "f64", ints((2, 5, 3, 4), -9, 9, "f64"), ints((3, 4, 6, 2), -9, 9, "f64"),
             [3, 0], [2], [1, 3], [0])
    dot_case("multi_contracting_layouts",
             "Two contracting dimensions (in different orders on each side) and non-default layouts\n"
             "on both operands and the result.",
             "f32", "f32", "f32", ints((3, 4, 5), -5, 5, "f32"), ints((5, 3, 2), -5, 5, "f32"), [], [0, 2], [], [1, 0],
             layouts=("{0,2,1}", "{1,0,2}", "{0,1}"))
    a = (rng.integers(-4, 5, (2, 3, 4)) + 1j * rng.integers(-4, 5, (2, 3, 4))).astype(np.complex128)
    b = (rng.integers(-4, 5, (2, 4, 2)) + 1j * rng.integers(-4, 5, (2, 4, 2))).astype(np.complex128)
    dot_case("c128_batched", "Batched complex128 dot.", "c128", "c128", "c128", a, b, [0], [2], [0], [1])
    dot_case("bf16_result", "bf16 result: summed in f32, rounded once at the end.", "bf16", "bf16", "bf16",
             floats((6, 40), "bf16"), floats((40, 7), "bf16"), [], [1], [], [0], tolerance="rtol=8e-3 atol=1e-2")
    dot_case("f16_result", "f16 operands and result.", "f16", "f16", "f16",
             floats((5, 33), "f16"), floats((33, 6), "f16"), [], [1], [], [0], tolerance="rtol=2e-3 atol=4e-3")
    dot_case("empty_contracting", "No contracting elements: the result is all zeros.", "f32", "f32", "f32",
             np.zeros((3, 0), np.float32), np.zeros((0, 4), np.float32), [], [1], [], [0])
    dot_case("gemm_edges",
             "Big enough for the blocked GEMM: 37 x 70 x 45 leaves partial register tiles in both\n"
             "directions. Small integers, so the sums are exact.",
             "f32", "f32", "f32", ints((37, 70), -4, 4, "f32"), ints((70, 45), -4, 4, "f32"), [], [1], [], [0])
    dot_case("gemm_s8_s32", "Blocked GEMM on s8 operands with an s32 result.", "s8", "s8", "s32",
             ints((30, 70), -128, 127, "s8"), ints((70, 20), -128, 127, "s8"), [], [1], [], [0])
    dot_case("gemm_batched_result_layout",
             "Blocked batched GEMM whose result has the batch dimension minor-most (written through\n"
             "scratch), with a column-major rhs.",
             "f32", "f32", "f32", ints((3, 20, 30), -4, 4, "f32"), ints((3, 30, 25), -4, 4, "f32"), [0], [2], [0], [1],
             layouts=(None, "{1,2,0}", "{0,2,1}"))
    dot_case("gemm_matvec", "Matrix-vector product big enough for the GEMM (problem transposed).",
             "f32", "f32", "f32", ints((260, 64), -4, 4, "f32"), ints((64,), -4, 4, "f32"), [], [1], [], [0])
    # A fusion like XLA's __ynn_fusion: the dot's operands are a converted and a transposed
    # parameter, generated while packing.
    a = ints((50, 40), -4, 4, "s8")
    b = ints((60, 50), -4, 4, "f32")
    want = dot_general(a.T.astype(np.float32), b.T, [], [1], [], [0], "f32")
    module = """HloModule gemm_fused_operands

fused {
  p0 = s8[50,40]{1,0} parameter(0)
  p1 = f32[60,50]{1,0} parameter(1)
  t0 = s8[40,50]{1,0} transpose(p0), dimensions={1,0}
  c0 = f32[40,50]{1,0} convert(t0)
  t1 = f32[50,60]{1,0} transpose(p1), dimensions={1,0}
  ROOT d = f32[40,60]{1,0} dot(c0, t1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

ENTRY main {
  a = s8[50,40]{1,0} parameter(0)
  b = f32[60,50]{1,0} parameter(1)
  ROOT f = f32[40,60]{1,0} fusion(a, b), kind=kCustom, calls=fused, backend_config={"fusion_config":{"kind":"__ynn_fusion"}}
}"""
    write(os.path.join(HERE, "gemm_fused_operands.hlo"),
          "A kCustom fusion (as in XLA's optimized modules) whose dot reads a converted and two\n"
          "transposed parameters: the GEMM packs generated elements.",
          [(a, "s8"), (b, "f32")], [(want, "f32")], module)

    # ---- convolution ----
    conv_case("batch_group_count_nhwc", "batch_group_count = 3 in NHWC: output feature o reads input batch\n"
              "group o / (O / 3).", "f32", "f32", ints((6, 5, 5, 2), -3, 3, "f32"), ints((3, 3, 2, 6), -3, 3, "f32"),
              ("b01f", "01io", "b01f"), [W(3, lo=1, hi=1), W(3)], bgc=3)
    conv_case("negative_padding_dilations",
              "Negative low padding, base and window dilation, stride and window reversal together.",
              "f32", "f32", ints((2, 3, 11), -3, 3, "f32"), ints((4, 3, 3), -3, 3, "f32"),
              ("bf0", "oi0", "bf0"), [W(3, stride=2, lo=-2, hi=3, ld=2, rd=2, rev=True)])
    conv_case("odd_dim_labels", "Every dimension in an unusual place: f0b1 input, i1o0 kernel, 1fb0 output.",
              "f32", "f32", ints((3, 6, 2, 5), -3, 3, "f32"), ints((3, 2, 4, 3), -3, 3, "f32"),
              ("f0b1", "i1o0", "1fb0"), [W(3, stride=2, lo=1, hi=0), W(2, lo=0, hi=1)])
    conv_case("s8_s32_groups", "Integer convolution (s8 -> s32) with feature groups.", "s8", "s32",
              ints((1, 6, 6, 4), -128, 127, "s8"), ints((3, 3, 2, 6), -128, 127, "s8"),
              ("b01f", "01io", "b01f"), [W(3, lo=1, hi=1)] * 2, fgc=2)
    conv_case("depthwise_gemm_sized",
              "Depthwise 5x5 (20 features, one per group), big enough for the vectorized kernel;\n"
              "20 features leave a masked vector.",
              "f32", "f32", ints((1, 12, 12, 20), -3, 3, "f32"), ints((5, 5, 1, 20), -3, 3, "f32"),
              ("b01f", "01io", "b01f"), [W(5, lo=2, hi=2)] * 2, fgc=20)
    conv_case("three_d_feature_groups", "3-D convolution with two feature groups, big enough for the GEMM lowering.",
              "f32", "f32", ints((1, 7, 6, 6, 8), -3, 3, "f32"), ints((3, 3, 3, 4, 8), -3, 3, "f32"),
              ("b012f", "012io", "b012f"), [W(3, stride=2, lo=1, hi=1), W(3, lo=0, hi=1), W(3, lo=1, hi=0)], fgc=2)
    conv_case("gemm_result_layout", "GEMM-sized convolution whose result layout puts features major.",
              "f32", "f32", ints((2, 6, 7, 32), -3, 3, "f32"), ints((3, 3, 32, 16), -3, 3, "f32"),
              ("b01f", "01io", "b01f"), [W(3, lo=1, hi=1)] * 2, out_layout="{2,1,0,3}")
    conv_case("f16", "f16 input, kernel and result.", "f16", "f16", floats((1, 5, 5, 3), "f16"),
              floats((3, 3, 3, 4), "f16"), ("b01f", "01io", "b01f"), [W(3, lo=1, hi=1)] * 2,
              tolerance="rtol=2e-3 atol=5e-3")
    conv_case("bf16_f32_gemm", "bf16 input and kernel with an f32 result, through the GEMM lowering.",
              "bf16", "f32", ints((1, 8, 8, 16), -3, 3, "bf16"), ints((3, 3, 16, 16), -3, 3, "bf16"),
              ("b01f", "01io", "b01f"), [W(3, lo=1, hi=1)] * 2)
    # Few-row dots (appended last, so the cases above keep their random inputs).
    dot_case("strips_column_major_lhs_tail",
             "Few result rows (dot_strips.rs): 5 rows against strips of B's columns, the last strip\n"
             "partial (70 columns), A column-major. Small integers, so the sums are exact.",
             "f32", "f32", "f32", ints((5, 40), -4, 4, "f32"), ints((40, 70), -4, 4, "f32"), [], [1], [], [0],
             layouts=("{0,1}", None, None))
    dot_case("strips_batched_f64",
             "Few result rows, batched, f64: every strip partial (20 columns, 8-lane vectors).",
             "f64", "f64", "f64", ints((3, 2, 40), -9, 9, "f64"), ints((3, 40, 20), -9, 9, "f64"), [0], [2], [0], [1])
    dot_case("strips_row_vector",
             "One row times a matrix (a batch-1 layer): one register-blocked strip after another.",
             "f32", "f32", "f32", ints((1, 64), -4, 4, "f32"), ints((64, 300), -4, 4, "f32"), [], [1], [], [0])
    dot_case("strips_sixteen_rows_blocks",
             "16 result rows (an LSTM step's batch): on AVX2 blocks of 6, 6 and 4 rows times 2 vectors\n"
             "of columns (dot_strips.rs register_block); 70 columns leave a partial last strip.",
             "f32", "f32", "f32", ints((16, 33), -4, 4, "f32"), ints((33, 70), -4, 4, "f32"), [], [1], [], [0])
    dot_case("strips_tiny",
             "A tiny dot (2 x 5 x 12: 120 multiply-adds) takes the strip path too: no lower bound\n"
             "on the work (dot_strips.rs).",
             "f32", "f32", "f32", ints((2, 5), -4, 4, "f32"), ints((5, 12), -4, 4, "f32"), [], [1], [], [0])


if __name__ == "__main__":
    main()
