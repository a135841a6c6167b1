"""Writes elementwise/erf_expm1_tanh_logistic_xla_bits.hlo: f32 erf and expm1, f64 expm1 and
tanh, f16 expm1 and logistic, bf16 logistic with XLA:CPU's results (jax.jit on the CPU backend)
compared as bit patterns, NaN payloads included.

The inputs are the edges (±0, ±subnormals, ±inf, NaNs with payloads, ±1, the largest and
smallest normals, the switches at |x| = 1/2 of expm1, 3.8325 of f32 erf, 20 of tanh) and, for
f32 and f64, values where XLA's result is not the correctly rounded one (its rational
approximations; found by comparing with the f64 result rounded for f32 and with NumPy's libm
for f64), so that only XLA's own evaluation order passes; f16 and bf16 get random bit patterns.
Usage: target/venv/bin/python tests/filetests/reference/gen_xla_math.py tests/filetests"""
import os
import sys

import ml_dtypes
import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
from jax import lax  # noqa: E402

jax.config.update("jax_enable_x64", True)
sys.path.insert(0, os.path.dirname(__file__))
from lib import write  # noqa: E402

ROOT = sys.argv[1]
rng = np.random.default_rng(88)
HLO = {"erf": "erf", "expm1": "exponential-minus-one", "tanh": "tanh", "logistic": "logistic"}
FN = {"erf": lax.erf, "expm1": lax.expm1, "tanh": lax.tanh, "logistic": lax.logistic}
NP = {"expm1": np.expm1, "tanh": np.tanh}


def edges(dt, it):
    fi = ml_dtypes.finfo(dt)
    nb = 8 * np.dtype(it).itemsize
    sign = 1 << (nb - 1)
    inf = int(np.array(np.inf, dt).view(it))
    vals = [0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 0.5, -0.5, 0.50001, -0.50001, 2.0, float(fi.max),
            -float(fi.max), float(fi.tiny), -float(fi.tiny), float(fi.smallest_subnormal),
            -float(fi.smallest_subnormal), float(fi.tiny) / 2, 3.8325, -3.8325, 3.9, 20.0, -20.0,
            17.7, 88.5, -88.0, 1e-3, -1e-3, 1e-6, 3.0, -30.0]
    x = np.array(vals, dtype=dt).view(it)
    mant = int(np.array(fi.tiny, dt).view(it)) - 1  # all mantissa bits
    top = (mant + 1) >> 1
    nans = [inf | top, inf | top | sign, inf | top | 1, inf | 1, inf | 1 | sign, inf | mant | sign]
    return np.concatenate([x, np.array(nans, dtype=np.uint64).astype(it)])


def hard(dt, it, op, n):
    """Values where XLA's result differs from a more accurate one."""
    cand = np.concatenate([rng.uniform(-6, 6, 100_000), rng.uniform(-0.6, 0.6, 100_000),
                           rng.uniform(-1e-3, 1e-3, 50_000)]).astype(dt)
    got = np.asarray(jax.jit(FN[op])(cand))
    if dt == np.float32:
        better = np.asarray(jax.jit(FN[op])(cand.astype(np.float64))).astype(dt)
    else:
        better = NP[op](cand)
    return cand[(got != better) & np.isfinite(got)][:n].view(it)


CASES = [("f32", np.float32, np.uint32, ["erf", "expm1"]), ("f64", np.float64, np.uint64, ["expm1", "tanh"]),
         ("f16", np.float16, np.uint16, ["expm1", "logistic"]),
         ("bf16", ml_dtypes.bfloat16, np.uint16, ["logistic"])]
cases = []
for name, dt, it, ops in CASES:
    x = edges(dt, it)
    if name in ("f32", "f64"):
        x = np.concatenate([x] + [hard(dt, it, op, 24) for op in ops])
    else:
        x = np.concatenate([x, rng.integers(0, 1 << 16, 60).astype(it)])
    xv = x.view(dt)
    cases.append((name, it, x, ops, [np.asarray(jax.jit(FN[op])(xv)).view(it) for op in ops]))

params, body, roots, inputs, expects = [], [], [], [], []
for i, (name, it, x, ops, outs) in enumerate(cases):
    ut = {np.uint16: "u16", np.uint32: "u32", np.uint64: "u64"}[it]
    n = x.size
    params.append(f"  p{i} = {ut}[{n}] parameter({i})")
    body.append(f"  x{i} = {name}[{n}] bitcast-convert(p{i})")
    for op in ops:
        body.append(f"  {op}{i} = {name}[{n}] {HLO[op]}(x{i})")
        body.append(f"  {op}{i}_bits = {ut}[{n}] bitcast-convert({op}{i})")
        roots.append((f"{op}{i}_bits", f"{ut}[{n}]"))
    inputs.append(x)
    expects += outs

module = "HloModule erf_expm1_tanh_logistic_xla_bits\n\nENTRY main {\n" + "\n".join(params + body) + "\n"
module += f"  ROOT t = ({', '.join(s for _, s in roots)}) tuple({', '.join(r for r, _ in roots)})\n}}\n"
write(f"{ROOT}/elementwise/erf_expm1_tanh_logistic_xla_bits.hlo",
      """f32 erf and expm1, f64 expm1 and tanh, f16 expm1 and logistic, bf16 logistic as XLA:CPU
computes them, compared as bit patterns (NaN payloads included): erf the rational x P(x^2) /
Q(x^2) (xla_erf.rs), f64 tanh XLA's degree-9 rational (xla_tanh.rs), expm1 e - 1 beyond 1/2 and
tanh(x/2) (e + 1) within (xla_expm1.rs; f16 in f16 arithmetic with libm's expf), logistic of
f16/bf16 rounded after each of exp, add, divide (xla_logistic.rs). Inputs: the edges and values
where XLA's result is not the correctly rounded one. Expected: jax.jit on XLA:CPU
(tests/filetests/reference/gen_xla_math.py).""",
      inputs, expects, module)
