#!/usr/bin/env python3
"""Writes the numerics file tests (tests/filetests/{elementwise,convert,bitcast,compare,
reduce_precision}/*.hlo) with expected values computed here, independently of hlojit:
numpy / ml_dtypes conversions and math, and small bit-level Python models of the XLA:CPU
semantics the files state (each file's header says which). Regenerate with
`python3 tests/filetests/tools/gen_numerics.py` (needs numpy and ml_dtypes).
"""
import math
import os
import struct

import ml_dtypes
import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BF16, E4M3, E5M2 = ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2
HLO_NAME = {np.dtype(np.float16): "f16", np.dtype(BF16): "bf16", np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
            np.dtype(E4M3): "f8e4m3fn", np.dtype(E5M2): "f8e5m2", np.dtype(np.int8): "s8", np.dtype(np.int16): "s16",
            np.dtype(np.int32): "s32", np.dtype(np.int64): "s64", np.dtype(np.uint8): "u8", np.dtype(np.uint16): "u16",
            np.dtype(np.uint32): "u32", np.dtype(np.uint64): "u64", np.dtype(np.bool_): "pred",
            np.dtype(np.complex64): "c64", np.dtype(np.complex128): "c128"}
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def fmt_float(v, dt):
    v = np.asarray(v, dtype=dt)
    f = float(v)
    if math.isnan(f):
        bits = int(v.view(UINT[v.dtype.itemsize]))
        width = v.dtype.itemsize * 8
        sign = "-" if bits >> (width - 1) else ""
        mant_bits = {2: 7 if v.dtype == BF16 else 10, 4: 23, 8: 52, 1: 3 if v.dtype == E4M3 else 2}[v.dtype.itemsize]
        payload = bits & ((1 << mant_bits) - 1)
        quiet = 1 << (mant_bits - 1)
        return f"{sign}nan" if payload == quiet else f"{sign}nan(0x{payload:x})"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    if f == 0:
        return "-0" if math.copysign(1, f) < 0 else "0"
    return repr(f)


def fmt(values, dt):
    values = np.asarray(values, dtype=dt).ravel()
    if values.dtype.kind == "c":
        part = np.float32 if values.dtype == np.complex64 else np.float64
        return ", ".join(f"({fmt_float(v.real, part)}, {fmt_float(v.imag, part)})" for v in values)
    if values.dtype.kind in "iu":
        return ", ".join(str(int(v)) for v in values)
    if values.dtype == np.bool_:
        return ", ".join("true" if v else "false" for v in values)
    return ", ".join(fmt_float(v, dt) for v in values)


def lit(values, dt, shape=None):
    values = np.asarray(values, dtype=dt)
    shape = values.shape if shape is None else shape
    name = HLO_NAME[np.dtype(dt)]
    flat = values.ravel()
    if len(shape) <= 1:
        body = "{" + fmt(flat, dt) + "}"
    else:
        body = nested(flat.reshape(shape), dt)
    return f"{name}[{','.join(map(str, shape))}] {body}"


def nested(a, dt):
    if a.ndim == 1:
        return "{" + fmt(a, dt) + "}"
    return "{" + ", ".join(nested(x, dt) for x in a) + "}"


def write(rel, header, inputs, expects, body, tolerance=None):
    lines = [f"// {h}" if h else "//" for h in header]
    if tolerance:
        lines.append(f"// tolerance: {tolerance}")
    lines += [f"// input: {x}" for x in inputs]
    lines += [f"// expect: {x}" for x in expects]
    path = os.path.join(ROOT, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n" + body.strip() + "\n")


# --- bit helpers -------------------------------------------------------------------------
def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def bits_f32(b):
    return struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]


def round_f8(x, dt):
    """Correctly rounded (nearest even) f64 -> f8 using exact rationals: e4m3fn overflows to NaN,
    e5m2 to inf (ml_dtypes casts from f64 through f32, rounding twice, so it is not used here)."""
    from fractions import Fraction
    e4 = dt == E4M3
    m, bias = (3, 7) if e4 else (2, 15)
    if math.isnan(x):
        return np.asarray(np.nan, np.float32).astype(dt)
    neg = math.copysign(1, x) < 0
    a = abs(x)
    finite = sorted({float(v) for v in np.arange(256, dtype=np.uint8).view(dt).astype(np.float64) if np.isfinite(v) and v >= 0})
    top = finite[-1]
    if math.isinf(a):
        r = math.nan if e4 else math.inf
    else:
        fa = Fraction(a)
        lo = max(v for v in finite if Fraction(v) <= fa) if fa <= Fraction(top) else top
        hi_candidates = [v for v in finite if Fraction(v) >= fa]
        if fa <= Fraction(top):
            hi = min(hi_candidates)
            if lo == hi:
                r = lo
            else:
                dl, dh = fa - Fraction(lo), Fraction(hi) - fa
                if dl != dh:
                    r = lo if dl < dh else hi
                else:  # tie: the one with an even last mantissa bit
                    lb = int(np.asarray(lo, np.float32).astype(dt).view(np.uint8))
                    r = lo if lb % 2 == 0 else hi
        else:
            # beyond the largest finite value: the next step up (2^(e+1) spacing) decides.
            step = Fraction(top) - Fraction(finite[-2])
            next_up = Fraction(top) + step
            r = top if (fa - Fraction(top) < next_up - fa or (fa - Fraction(top) == next_up - fa and
                        int(np.asarray(top, np.float32).astype(dt).view(np.uint8)) % 2 == 0)) else (math.nan if e4 else math.inf)
    v = np.asarray(r, np.float32).astype(dt)
    return -v if neg else v


def ftz32(x):
    """f32 flush-to-zero (sign kept)."""
    x = np.float32(x)
    return np.float32(math.copysign(0.0, x)) if x != 0 and abs(x) < np.finfo(np.float32).tiny else x


# --- convert: f64 -> narrow floats --------------------------------------------------------
def gen_convert_f64_narrow():
    xs = np.array([1 + 2**-11 + 2**-40, 1 + 2**-8 + 2**-40, 1 + 2**-4 + 2**-40, 1 + 2**-3 + 2**-40, -(1 + 2**-11 + 2**-40),
                   1e-40, -3e-39, 2**-140, 6e-8, 65519.99, 65520.0, 3.4e38, 3.5e38, 1e300, -1e300, 448.0, 464.0, 57344.0,
                   61440.0, 0.0, -0.0, np.inf, -np.inf, np.nan], np.float64)
    # f32 first (with FTZ, as the hardware conversion under flush-to-zero), then the narrow type.
    via_f32 = np.array([ftz32(np.float32(x)) for x in xs], np.float32)
    f16 = via_f32.astype(np.float16)
    bf16 = via_f32.astype(BF16)
    e4m3 = np.array([round_f8(float(x), E4M3) for x in xs], E4M3)  # f8 formats round the f64 value once
    e5m2 = np.array([round_f8(float(x), E5M2) for x in xs], E5M2)
    n = len(xs)
    write("convert/f64_to_narrow_floats.hlo",
          ["f64 -> f32 / f16 / bf16 / f8. As XLA:CPU does: f16 and bf16 go through f32 (rounded twice:",
           "1 + 2^-11 + 2^-40 becomes 1 in f16, 1 + 2^-8 + 2^-40 becomes 1 in bf16; values below f32's",
           "normal range flush to +-0 first), the f8 formats round the f64 value once (1 + 2^-4 + 2^-40",
           "-> 1.125 in f8e4m3fn). Expected: numpy f64->f32 with an explicit flush-to-zero, then",
           "numpy/ml_dtypes casts; the f8 columns are exact rational round-to-nearest-even of the f64 value."],
          [lit(xs, np.float64)],
          [lit(via_f32, np.float32), lit(f16, np.float16), lit(bf16, BF16), lit(e4m3, E4M3), lit(e5m2, E5M2)],
          f"""
HloModule convert_f64_narrow
ENTRY main {{
  x = f64[{n}] parameter(0)
  a = f32[{n}] convert(x)
  b = f16[{n}] convert(x)
  c = bf16[{n}] convert(x)
  d = f8e4m3fn[{n}] convert(x)
  e = f8e5m2[{n}] convert(x)
  ROOT t = (f32[{n}], f16[{n}], bf16[{n}], f8e4m3fn[{n}], f8e5m2[{n}]) tuple(a, b, c, d, e)
}}""")


def gen_convert_f32_bf16():
    bits = [0x3F808000, 0x3F818000, 0x3F808001, 0x3F80FFFF, 0xBF808000, 0xBF818000, 0x7F7FFFFF, 0xFF7FFFFF,
            0x7F7F7FFF, 0x7F7F8000, 0x00000001, 0x000116C2, 0x80010000, 0x00018000, 0x007FFFFF, 0x7FC00000,
            0xFFC00000, 0x7F800001, 0x7F800000, 0xFF800000, 0x00000000, 0x80000000, 0x3EAAAAAB, 0xC0490FDB]
    xs = np.array(bits, np.uint32).view(np.float32)
    want = xs.astype(BF16)  # ml_dtypes rounds to nearest even, keeps subnormals, overflow -> inf
    n = len(xs)
    write("convert/f32_to_bf16_rounding.hlo",
          ["f32 -> bf16: round to nearest even on the bits (ties at 0x8000 go to the even result), largest",
           "finite values round up to inf, subnormal inputs are rounded (not flushed) as XLA's integer",
           "rounding does, NaNs stay NaN. 32 elements so that the loop vectorizes. Expected: ml_dtypes casts."],
          [lit(np.resize(xs, 32), np.float32)], [lit(np.resize(want, 32), BF16)],
          """
HloModule convert_f32_bf16
ENTRY main {
  x = f32[32] parameter(0)
  ROOT y = bf16[32] convert(x)
}""")


# --- elementwise: max/min with NaN and signed zeros on f16 / bf16 --------------------------
def xla_max(a, b, is_max):
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if a == b:  # +-0: maximum prefers +0, minimum -0
        if a == 0:
            neg = (math.copysign(1, a) < 0, math.copysign(1, b) < 0)
            return -0.0 if (all(neg) if is_max else any(neg)) else 0.0
        return a
    return max(a, b) if is_max else min(a, b)


def gen_minmax_nan():
    base = [np.nan, 0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 2.5]
    pairs = [(a, b) for a in base for b in base]
    a = np.array([p[0] for p in pairs], np.float64)
    b = np.array([p[1] for p in pairs], np.float64)
    n = len(a)
    mx = [xla_max(x, y, True) for x, y in pairs]
    mn = [xla_max(x, y, False) for x, y in pairs]
    for dt, name in [(np.float16, "f16"), (BF16, "bf16")]:
        write(f"elementwise/max_min_nan_zero_{name}.hlo",
              [f"maximum / minimum on {name} over all pairs of NaN, +-0, +-1, +-inf, 2.5 ({n} elements, so the",
               "loop is vectorized): NaN propagates, -0 < +0. LLVM 19 lowers vector half/bfloat maximum",
               "wrongly for NaN against +-0. Expected: a Python model of IEEE 754-2019 maximum/minimum."],
              [lit(a, dt), lit(b, dt)], [lit(mx, dt), lit(mn, dt)],
              f"""
HloModule max_min_{name}
ENTRY main {{
  a = {name}[{n}] parameter(0)
  b = {name}[{n}] parameter(1)
  mx = {name}[{n}] maximum(a, b)
  mn = {name}[{n}] minimum(a, b)
  ROOT t = ({name}[{n}], {name}[{n}]) tuple(mx, mn)
}}""")


def gen_select_convert_bf16():
    rng = np.random.default_rng(3)
    i = rng.integers(0, 3, 40).astype(np.int32)
    a, b, c = [(rng.uniform(-1, 1, 40)).astype(BF16) for _ in range(3)]
    want = np.where(i < 1, a, np.where(i < 2, b, c)).astype(BF16)
    write("elementwise/select_convert_fusion_bf16.hlo",
          ["A kLoop fusion as XLA:CPU emits for jnp.select on bf16: bf16 -> f32 converts, selects, and",
           "f32 -> bf16 -> f32 -> bf16 round trips. LLVM 19's x86 back end dropped the sign of such",
           "selected bfloat values when bf16 was widened with fpext; negative values must keep their",
           "sign. Expected: numpy.where on the bf16 inputs (the converts are exact)."],
          [lit(i, np.int32), lit(a, BF16), lit(b, BF16), lit(c, BF16)], [lit(want, BF16)],
          """
HloModule select_convert_bf16
fused (p0: bf16[40], p1: bf16[40], p2: s32[40], p3: bf16[40]) -> bf16[40] {
  p2 = s32[40] parameter(2)
  one = s32[] constant(1)
  ones = s32[40] broadcast(one), dimensions={}
  lt1 = pred[40] compare(p2, ones), direction=LT
  p3 = bf16[40] parameter(3)
  a = f32[40] convert(p3)
  two = s32[] constant(2)
  twos = s32[40] broadcast(two), dimensions={}
  lt2 = pred[40] compare(p2, twos), direction=LT
  p1 = bf16[40] parameter(1)
  b = f32[40] convert(p1)
  p0 = bf16[40] parameter(0)
  c = f32[40] convert(p0)
  s1 = f32[40] select(lt2, b, c)
  r1 = bf16[40] convert(s1)
  w1 = f32[40] convert(r1)
  s0 = f32[40] select(lt1, a, w1)
  ROOT out = bf16[40] convert(s0)
}
ENTRY main {
  i = s32[40] parameter(0)
  a = bf16[40] parameter(1)
  b = bf16[40] parameter(2)
  c = bf16[40] parameter(3)
  ROOT f = bf16[40] fusion(c, b, i, a), kind=kLoop, calls=fused
}""")


# --- integer power ------------------------------------------------------------------------
def xla_ipow(base, exp, bits):
    mask = (1 << bits) - 1
    e = exp & mask
    if e >> (bits - 1):  # negative when read as signed (unsigned types too)
        b = base & mask
        if b == 1:
            return 1
        if b == mask:
            return mask if e & 1 else 1
        return 0
    acc, b = 1, base & mask
    for _ in range(6):  # six squaring steps: only the low six exponent bits count
        if e & 1:
            acc = (acc * b) & mask
        b = (b * b) & mask
        e >>= 1
    return acc


def gen_integer_pow():
    for dt, name, bits in [(np.int32, "s32", 32), (np.uint8, "u8", 8), (np.int64, "s64", 64)]:
        bases = [0, 1, 2, 3, -1, -2, 7] if name[0] == "s" else [0, 1, 2, 3, 255, 254, 7]
        exps = [0, 1, 5, 31, 63, 64, 65, 100, -1, -2, -3] if name[0] == "s" else [0, 1, 5, 63, 64, 65, 100, 127, 128, 129, 255]
        pairs = [(b, e) for b in bases for e in exps]
        a = np.array([p[0] for p in pairs], np.int64).astype(dt)
        e = np.array([p[1] for p in pairs], np.int64).astype(dt)
        want = [xla_ipow(int(p[0]), int(p[1]), bits) for p in pairs]
        want = np.array([w - (1 << bits) if name[0] == "s" and w >> (bits - 1) else w for w in want], dtype=object).astype(dt)
        n = len(pairs)
        write(f"elementwise/integer_pow_{name}.hlo",
              [f"power on {name} as XLA:CPU computes it: exponentiation by squaring with six steps, so only",
               "the exponent's low six bits count (2^64 -> 1, 3^100 -> 3^36 mod 2^N); an exponent that is",
               "negative when read as signed (for unsigned types: >= 2^(N-1)) gives 1 for base 1, +-1 by",
               "parity for base -1 (all bits set) and 0 otherwise. Expected: a Python model of that rule",
               "(checked against XLA:CPU through jaxlib when written)."],
              [lit(a, dt), lit(e, dt)], [lit(want, dt)],
              f"""
HloModule integer_pow_{name}
ENTRY main {{
  a = {name}[{n}] parameter(0)
  b = {name}[{n}] parameter(1)
  ROOT p = {name}[{n}] power(a, b)
}}""")


# --- stochastic-convert -------------------------------------------------------------------
def stochastic(x, r, to_bits, rand_bits, src_dt):
    x = float(x)
    lo, hi = -(1 << (to_bits - 1)), (1 << (to_bits - 1)) - 1
    lo_f, hi_f = float(np.asarray(lo, np.float64).astype(src_dt)), float(np.asarray(hi, np.float64).astype(src_dt))
    if math.isnan(x):
        return 0
    if x >= hi_f:
        return hi
    if x <= lo_f:
        return lo
    a = abs(x)
    fl = math.floor(a)
    frac = a - fl
    threshold = min(int(frac * 2.0**rand_bits), (1 << rand_bits) - 1)
    m = fl + (1 if r < threshold else 0)
    return -m if x < 0 else m


def gen_stochastic():
    rng = np.random.default_rng(11)
    cases = []
    for src, sname, rdt, rname, rbits, dst, dname, dbits in [(np.float32, "f32", np.uint32, "u32", 32, np.int8, "s8", 8),
                                                              (BF16, "bf16", np.uint16, "u16", 16, np.int16, "s16", 16),
                                                              (np.float64, "f64", np.uint64, "u64", 64, np.int32, "s32", 32)]:
        x = np.array([0.25, -0.25, 0.5, -0.5, 0.75, 2.5, -2.5, 126.5, -127.5, 127.25, -128.0, 300.0, -300.0, np.nan,
                      np.inf, -np.inf, -0.0, 3.0, 1.125, -1.875], np.float64).astype(src)
        # random: just below / at / above the threshold frac * 2^bits, and extremes.
        r = []
        for i, v in enumerate(x.astype(np.float64)):
            frac = abs(v) - math.floor(abs(v)) if np.isfinite(v) else 0.0
            t = int(frac * 2.0**rbits)
            r.append([max(t - 1, 0), t, (1 << rbits) - 1, 0][i % 4])
        r = np.array(r, dtype=object).astype(rdt)
        want = np.array([stochastic(v, int(q), dbits, rbits, src) for v, q in zip(x, r)], dtype=np.int64).astype(dst)
        cases.append((sname, rname, dname, x, r, want, src, rdt, dst))
    n = len(cases[0][3])
    params = []
    inputs, expects, insts, outs = [], [], [], []
    for k, (sname, rname, dname, x, r, want, src, rdt, dst) in enumerate(cases):
        params.append(f"  x{k} = {sname}[{n}] parameter({2 * k})\n  r{k} = {rname}[{n}] parameter({2 * k + 1})")
        insts.append(f"  c{k} = {dname}[{n}] stochastic-convert(x{k}, r{k})")
        outs.append((f"{dname}[{n}]", f"c{k}"))
        inputs += [lit(x, src), lit(r, rdt)]
        expects.append(lit(want, dst))
    body = "HloModule stochastic_convert\nENTRY main {\n" + "\n".join(params) + "\n" + "\n".join(insts) + \
        f"\n  ROOT t = ({', '.join(o[0] for o in outs)}) tuple({', '.join(o[1] for o in outs)})\n}}"
    write("convert/stochastic_convert.hlo",
          ["stochastic-convert float -> signed int: |x| rounds up iff random < frac(|x|) * 2^bits(random)",
           "(unsigned compare; the product converted to the random type), then the sign is applied; NaN -> 0,",
           "values at or beyond the integer range (bounds rounded to the source type) saturate. Random",
           "values sit just below, at and above each threshold. Expected: a Python model of that rule",
           "(from the corpus README and XLA's StochasticConvertDecomposer)."],
          inputs, expects, body)


# --- compare TOTALORDER -------------------------------------------------------------------
def total_key(bits, width):
    sign = bits >> (width - 1)
    return -(bits & ((1 << (width - 1)) - 1)) - 1 if sign else bits  # -0 sorts below +0


def gen_totalorder():
    for dt, name, width in [(np.float32, "f32", 32), (BF16, "bf16", 16), (np.float64, "f64", 64)]:
        u = UINT[width // 8]
        specials = {32: [0xFFC00000, 0xFF800001, 0xFF800000, 0xC0000000, 0x80000001, 0x80000000, 0x00000000, 0x00000001,
                         0x00800000, 0x3F800000, 0x7F800000, 0x7F800001, 0x7FC00000],
                    16: [0xFFC0, 0xFF81, 0xFF80, 0xC000, 0x8001, 0x8000, 0x0000, 0x0001, 0x0080, 0x3F80, 0x7F80, 0x7F81,
                         0x7FC0],
                    64: [0xFFF8000000000000, 0xFFF0000000000001, 0xFFF0000000000000, 0xC000000000000000, 0x8000000000000001,
                         0x8000000000000000, 0, 1, 0x0010000000000000, 0x3FF0000000000000, 0x7FF0000000000000,
                         0x7FF0000000000001, 0x7FF8000000000000]}[width]
        pairs = [(a, b) for a in specials for b in specials]
        a = np.array([p[0] for p in pairs], dtype=object).astype(u).view(dt)
        b = np.array([p[1] for p in pairs], dtype=object).astype(u).view(dt)
        ka = [total_key(p[0], width) for p in pairs]
        kb = [total_key(p[1], width) for p in pairs]
        n = len(pairs)
        ops = {"LT": [x < y for x, y in zip(ka, kb)], "EQ": [x == y for x, y in zip(ka, kb)],
               "GE": [x >= y for x, y in zip(ka, kb)], "NE": [x != y for x, y in zip(ka, kb)]}
        write(f"compare/totalorder_{name}.hlo",
              [f"compare type=TOTALORDER on {name} over all pairs of -qNaN, -sNaN, -inf, -2, -subnormal, -0, +0,",
               "+subnormal, smallest normal, 1, inf, +sNaN, +qNaN: the order of the bit patterns (sign-magnitude",
               "flipped for negatives), so -NaN < -inf < ... < -0 < +0 < ... < inf < NaN, NaNs equal only",
               "themselves, subnormals not flushed. Expected: Python integer keys from the bit patterns."],
              [lit(a, dt), lit(b, dt)], [lit(ops[d], np.bool_) for d in ops],
              f"""
HloModule totalorder_{name}
ENTRY main {{
  a = {name}[{n}] parameter(0)
  b = {name}[{n}] parameter(1)
  lt = pred[{n}] compare(a, b), direction=LT, type=TOTALORDER
  eq = pred[{n}] compare(a, b), direction=EQ, type=TOTALORDER
  ge = pred[{n}] compare(a, b), direction=GE, type=TOTALORDER
  ne = pred[{n}] compare(a, b), direction=NE, type=TOTALORDER
  ROOT t = (pred[{n}], pred[{n}], pred[{n}], pred[{n}]) tuple(lt, eq, ge, ne)
}}""")


# --- reduce-precision ---------------------------------------------------------------------
def reduce_precision(bits, width, src_m, e_bits, m_bits):
    """XLA's reduce-precision on raw bits (mantissa RNE, exponent overflow -> inf, underflow -> 0)."""
    src_e = width - 1 - src_m
    sign_mask = 1 << (width - 1)
    exp_mask = ((1 << src_e) - 1) << src_m
    full = (1 << width) - 1
    is_nan = (bits & ~sign_mask & full) > exp_mask
    x = bits
    if m_bits < src_m:
        drop = src_m - m_bits
        last = 1 << drop
        bias = (last >> 1) - 1 + ((x >> drop) & 1)
        x = ((x + bias) & full) & ~(last - 1) & full
    if e_bits < src_e:
        src_bias = (1 << (src_e - 1)) - 1
        red_bias = (1 << (e_bits - 1)) - 1
        e = x & exp_mask
        if e > (src_bias + red_bias) << src_m:
            x = (x & sign_mask) | exp_mask
        elif e <= (src_bias - red_bias) << src_m:
            x = x & sign_mask
    if is_nan:
        x = bits if m_bits > 0 else (bits | (1 << (src_m - 1)))
    return x


def gen_reduce_precision():
    rng = np.random.default_rng(5)
    for dt, name, width, src_m in [(BF16, "bf16", 16, 7), (np.float32, "f32", 32, 23)]:
        u = UINT[width // 8]
        special = {16: [0x3F80, 0x3F81, 0x3F88, 0x3F98, 0x3FFF, 0x7F7F, 0x0001, 0x0080, 0x8080, 0x4780, 0x477F, 0x3800,
                        0x3780, 0x7FC0, 0xFFC1, 0x7F80, 0xFF80, 0x0000, 0x8000, 0x7F81],
                   32: [0x3F800000, 0x3F801000, 0x3F803000, 0x3F7FFFFF, 0x477FEFFF, 0x477FF000, 0x38800000, 0x387FFFFF,
                        0x33800000, 0x00000001, 0x00400000, 0x007FFFFF, 0x7F7FFFFF, 0x7FC00000, 0xFFC00001, 0x7F800001,
                        0x7F800000, 0x80000000, 0xC0490FDB, 0x3EAAAAAB]}[width]
        bits = special + [int(v) for v in rng.integers(0, 1 << width, 12, dtype=np.uint64)]
        x = np.array(bits, dtype=object).astype(u).view(dt)
        formats = [(5, 10), (4, 3), (5, 2), (8, 0), (2, 1), (8, 3)] if width == 32 else [(5, 2), (4, 3), (8, 2), (8, 0), (3, 1)]
        n = len(bits)
        insts, types, names, expects = [], [], [], []
        for k, (e, m) in enumerate(formats):
            want = np.array([reduce_precision(b, width, src_m, e, m) for b in bits], dtype=object).astype(u).view(dt)
            insts.append(f"  r{k} = {name}[{n}] reduce-precision(x), exponent_bits={e}, mantissa_bits={m}")
            types.append(f"{name}[{n}]")
            names.append(f"r{k}")
            expects.append(lit(want, dt))
        write(f"reduce_precision/formats_{name}.hlo",
              [f"reduce-precision on {name} to " + ", ".join(f"e{e}m{m}" for e, m in formats) + ": mantissa",
               "rounded to nearest even on the bits (a carry may bump the exponent), exponents above the",
               "reduced range -> +-inf, at or below its minimum -> +-0 (no reduced subnormals; with the",
               "source's exponent width subnormals are rounded, not flushed), NaN stays NaN (quieted for",
               "mantissa_bits=0). Expected: a Python bit-level model of XLA's EmitReducePrecisionIR."],
              [lit(x, dt)], expects,
              f"HloModule reduce_precision_{name}\nENTRY main {{\n  x = {name}[{n}] parameter(0)\n" + "\n".join(insts) +
              f"\n  ROOT t = ({', '.join(types)}) tuple({', '.join(names)})\n}}")


# --- bitcast-convert between widths -------------------------------------------------------
def gen_bitcast_widths():
    rng = np.random.default_rng(9)
    raw = rng.integers(0, 256, 64, dtype=np.uint8)
    raw[:8] = [0x00, 0x00, 0xC0, 0x7F, 0x01, 0x00, 0x80, 0x80]  # a quiet NaN and a negative subnormal-ish half
    # little-endian: element i of the wide type is made of pieces [i, k], least significant first.
    f32 = raw[:32].view(np.float32)                     # u8[8,4] -> f32[8]
    bf = raw[:32].view(np.uint16).view(BF16)            # f32[8] -> bf16[8,2]
    f64 = raw[:64].view(np.float64)                     # f16[8,4] -> f64[8]
    e4 = raw[:16].view(E4M3)                            # f16[8] -> f8e4m3fn[8,2]
    s64 = raw[:16].view(np.int64)                       # s8[2,8] -> s64[2]
    write("bitcast/bitcast_convert_widths.hlo",
          ["bitcast-convert between widths: the narrower type has an extra minor dimension holding the",
           "pieces of one wide element, least significant first (little-endian), for u8->f32, f32->bf16,",
           "f16->f64, f16->f8e4m3fn and s8->s64; NaN and subnormal bit patterns pass unchanged.",
           "Expected: numpy .view() of the same bytes."],
          [lit(raw[:32].reshape(8, 4), np.uint8), lit(f32, np.float32), lit(raw[:64].view(np.float16).reshape(8, 4), np.float16),
           lit(raw[:16].view(np.float16), np.float16), lit(raw[:16].view(np.int8).reshape(2, 8), np.int8)],
          [lit(f32, np.float32), lit(bf.reshape(8, 2), BF16), lit(f64, np.float64), lit(e4.reshape(8, 2), E4M3),
           lit(s64, np.int64)],
          """
HloModule bitcast_convert_widths
ENTRY main {
  a = u8[8,4] parameter(0)
  b = f32[8] parameter(1)
  c = f16[8,4] parameter(2)
  d = f16[8] parameter(3)
  e = s8[2,8] parameter(4)
  ra = f32[8] bitcast-convert(a)
  rb = bf16[8,2] bitcast-convert(b)
  rc = f64[8] bitcast-convert(c)
  rd = f8e4m3fn[8,2] bitcast-convert(d)
  re = s64[2] bitcast-convert(e)
  ROOT t = (f32[8], bf16[8,2], f64[8], f8e4m3fn[8,2], s64[2]) tuple(ra, rb, rc, rd, re)
}""")


# --- complex functions --------------------------------------------------------------------
def gen_complex():
    z = np.array([0.5 + 0.25j, -1.5 + 2j, 3 - 0.5j, -0.1 - 0.2j, 20 + 1j, -20 + 1j, 1e-3 + 1e-3j, 2 + 40j,
                  complex(np.inf, 0), complex(-np.inf, 0), complex(0, np.inf), complex(np.nan, 0), 0j, 1 + 0j,
                  -4 + 0j, 0.75 - 3j], np.complex128)
    with np.errstate(all="ignore"):
        tanh = np.tanh(z)
        rsqrt = 1 / np.sqrt(z)
        expm1 = np.exp(z) - 1
        # (0, inf): tanh(0 + i inf) is (NaN, NaN) in C99 and XLA; rsqrt(-4) = -0.5i (principal root).
        expm1_small = np.array([complex(math.expm1(v.real) * math.cos(v.imag) + (math.cos(v.imag) - 1), math.exp(v.real) * math.sin(v.imag))
                                if abs(v) < 1e-2 else e for v, e in zip(z, expm1)])
    keep = [i for i in range(len(z)) if np.isfinite(z[i])]
    zf = z[keep]
    n = len(zf)
    write("elementwise/complex_tanh_rsqrt_expm1_c64.hlo",
          ["tanh, rsqrt and exponential-minus-one on c64 (the complex ops JAX leaves to XLA), with small,",
           "large and negative real parts. Expected: numpy complex128 tanh, 1/sqrt, and exp(z) - 1",
           "(expm1(re) cos(im) + (cos(im) - 1) for |z| < 1e-2, from Python's math), rounded to c64."],
          [lit(zf.astype(np.complex64), np.complex64)],
          [lit(tanh[keep].astype(np.complex64), np.complex64), lit(rsqrt[keep].astype(np.complex64), np.complex64),
           lit(expm1_small[keep].astype(np.complex64), np.complex64)],
          f"""
HloModule complex_unary
ENTRY main {{
  z = c64[{n}] parameter(0)
  a = c64[{n}] tanh(z)
  b = c64[{n}] rsqrt(z)
  c = c64[{n}] exponential-minus-one(z)
  ROOT t = (c64[{n}], c64[{n}], c64[{n}]) tuple(a, b, c)
}}""", tolerance="rtol=2e-6 atol=1e-7")
    special = np.array([complex(np.inf, 0), complex(-np.inf, 1), complex(1, np.inf), complex(np.nan, 0), 0j], np.complex128)
    # C99 Annex G / XLA: tanh(inf + 0i) = 1 + 0i, tanh(-inf + i) = -1 + 0i (sign of sin(2)),
    # tanh(1 + i inf) = NaN + NaN i, tanh(NaN + 0i) = NaN + 0i, tanh(0) = 0.
    want = np.array([complex(1, 0), complex(-1, 0.0), complex(np.nan, np.nan), complex(np.nan, 0), 0j], np.complex128)
    write("elementwise/complex_tanh_special_c64.hlo",
          ["tanh on c64 at infinities and NaN, the C99 Annex G values XLA also gives: tanh(inf + 0i) =",
           "1 + 0i, tanh(-inf + 1i) = -1 + 0i, tanh(1 + inf i) = NaN + NaN i, tanh(NaN + 0i) = NaN + 0i.",
           "Expected: written by hand from those rules."],
          [lit(special.astype(np.complex64), np.complex64)], [lit(want.astype(np.complex64), np.complex64)],
          """
HloModule complex_tanh_special
ENTRY main {
  z = c64[5] parameter(0)
  ROOT t = c64[5] tanh(z)
}""")


def gen_clz_popcnt_small():
    vals = list(range(-8, 8))
    s4 = np.array(vals, np.int8)
    u4 = np.array([v & 15 for v in vals], np.uint8)
    clz4 = lambda v: 4 - (v & 15).bit_length()
    write("elementwise/clz_popcnt_s4_u4.hlo",
          ["count-leading-zeros and popcnt on 4-bit integers (all 16 values): counted within 4 bits.",
           "Expected: Python int.bit_length / bin().count on the 4-bit patterns."],
          [lit(s4, np.int8).replace("s8", "s4"), lit(u4, np.uint8).replace("u8", "u4")],
          [lit([clz4(v) for v in vals], np.int8).replace("s8", "s4"), lit([bin(v & 15).count("1") for v in vals], np.int8).replace("s8", "s4"),
           lit([clz4(v) for v in vals], np.uint8).replace("u8", "u4"), lit([bin(v & 15).count("1") for v in vals], np.uint8).replace("u8", "u4")],
          """
HloModule clz_popcnt_4bit
ENTRY main {
  a = s4[16] parameter(0)
  b = u4[16] parameter(1)
  ca = s4[16] count-leading-zeros(a)
  pa = s4[16] popcnt(a)
  cb = u4[16] count-leading-zeros(b)
  pb = u4[16] popcnt(b)
  ROOT t = (s4[16], s4[16], u4[16], u4[16]) tuple(ca, pa, cb, pb)
}""")


def gen_sign_ftz():
    x = np.array([5e-324, -5e-324, 2.2250738585072014e-308, -1e-310, 0.0, -0.0, np.nan, 3.0, -np.inf], np.float64)
    tiny = np.finfo(np.float64).tiny
    want = np.array([math.copysign(0.0, v) if (v == 0 or abs(v) < tiny) else (np.nan if np.isnan(v) else math.copysign(1.0, v))
                     for v in x], np.float64)
    write("elementwise/sign_subnormal_f64.hlo",
          ["sign on f64 with flush-to-zero: a subnormal compares equal to 0, so its sign is +-0 (XLA",
           "computes copysign((x != 0) as float, x)); NaN stays NaN. Expected: by hand from that rule."],
          [lit(x, np.float64)], [lit(want, np.float64)],
          """
HloModule sign_ftz
ENTRY main {
  x = f64[9] parameter(0)
  ROOT s = f64[9] sign(x)
}""")


if __name__ == "__main__":
    np.seterr(all="ignore")
    gen_convert_f64_narrow()
    gen_convert_f32_bf16()
    gen_minmax_nan()
    gen_select_convert_bf16()
    gen_integer_pow()
    gen_stochastic()
    gen_totalorder()
    gen_reduce_precision()
    gen_bitcast_widths()
    gen_complex()
    gen_clz_popcnt_small()
    gen_sign_ftz()
