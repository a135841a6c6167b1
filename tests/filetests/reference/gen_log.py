"""Writes elementwise/log_log1p_xla_bits.hlo: log and log-plus-one of f32, f64, f16 and bf16 with
XLA:CPU's results (jax.jit on the CPU backend) compared as bit patterns, NaN payloads included.

The inputs are the edges (±0, ±subnormals, ±inf, NaNs with payloads, ±1, the largest and
smallest normals, log1p's switch at sqrt(2) - 1 and -1) and, for f32 and f64, values where
XLA's result is not the correctly rounded one (Eigen's polynomial log, the Cephes log1p
rational), so that only XLA's own evaluation order passes. Arrays have more than 16 elements:
XLA computes the tail of smaller kernels with libm (codegen/elemental/xla_log.rs).
Usage: target/venv/bin/python tests/filetests/reference/gen_log.py tests/filetests"""
import os
import sys

import ml_dtypes
import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_enable_x64", True)
sys.path.insert(0, os.path.dirname(__file__))
from lib import write  # noqa: E402

ROOT = sys.argv[1]
rng = np.random.default_rng(81)


def edges(dt, it):
    fi = ml_dtypes.finfo(dt)
    nb = 8 * np.dtype(it).itemsize
    sign = 1 << (nb - 1)
    inf = int(np.array(np.inf, dt).view(it))
    vals = [0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 2.0, 0.5, float(fi.max), -float(fi.max),
            float(fi.tiny), -float(fi.tiny), float(fi.smallest_subnormal), -float(fi.smallest_subnormal),
            float(fi.tiny) / 2, 0.41421356, -0.41421356, 0.4142136, -0.4142136, -0.9999, -1.0001,
            1e-3, -1e-3, 3.0, 10.0, 100.0, 1e30 if nb > 16 else 1e4]
    x = np.array(vals, dtype=dt).view(it)
    # NaNs: quiet and signalling, both signs, with payloads.
    mant = int(np.array(fi.tiny, dt).view(it)) - 1  # all mantissa bits
    top = (mant + 1) >> 1
    nans = [inf | top, inf | top | sign, inf | top | 1, inf | 1, inf | 1 | sign, inf | mant | sign]
    return np.concatenate([x, np.array(nans, dtype=np.uint64).astype(it)])


def hard(dt, it, f, n):
    """Values where XLA's f differs from a more accurate one (f32: XLA's f64 result rounded;
    f64: NumPy's, i.e. libm's)."""
    cand = np.concatenate([rng.uniform(0.01, 100, 200_000), rng.uniform(-0.6, 0.6, 200_000),
                           rng.uniform(-0.999, 4, 200_000)]).astype(dt)
    got = np.asarray(jax.jit(f)(cand))
    if dt == np.float32:
        better = np.asarray(jax.jit(f)(cand.astype(np.float64))).astype(dt)
    else:
        better = (np.log if f is jnp.log else np.log1p)(cand)
    differ = cand[(got != better) & np.isfinite(got)]
    return differ[:n].view(it)


cases = []
for name, dt, it in [("f32", np.float32, np.uint32), ("f64", np.float64, np.uint64),
                     ("f16", np.float16, np.uint16), ("bf16", ml_dtypes.bfloat16, np.uint16)]:
    x = edges(dt, it)
    if name in ("f32", "f64"):
        x = np.concatenate([x, hard(dt, it, jnp.log, 24), hard(dt, it, jnp.log1p, 24)])
    else:
        x = np.concatenate([x, rng.integers(0, 1 << 16, 40).astype(it)])
    xv = x.view(dt)
    outs = [np.asarray(jax.jit(f)(xv)).view(it) for f in (jnp.log, jnp.log1p)]
    cases.append((name, it, x, outs))

params, body, roots, inputs, expects = [], [], [], [], []
for i, (name, it, x, outs) in enumerate(cases):
    ut = {np.uint16: "u16", np.uint32: "u32", np.uint64: "u64"}[it]
    n = x.size
    params.append(f"  p{i} = {ut}[{n}] parameter({i})")
    body.append(f"  x{i} = {name}[{n}] bitcast-convert(p{i})")
    for op in ("log", "log-plus-one"):
        tag = op.replace("-", "_")
        body.append(f"  {tag}{i} = {name}[{n}] {op}(x{i})")
        body.append(f"  {tag}{i}_bits = {ut}[{n}] bitcast-convert({tag}{i})")
        roots.append((f"{tag}{i}_bits", f"{ut}[{n}]"))
    inputs.append(x)
    expects += outs

module = "HloModule log_log1p_xla_bits\n\nENTRY main {\n" + "\n".join(params + body) + "\n"
module += f"  ROOT t = ({', '.join(s for _, s in roots)}) tuple({', '.join(r for r, _ in roots)})\n}}\n"
write(f"{ROOT}/elementwise/log_log1p_xla_bits.hlo",
      """log and log-plus-one of f32, f64, f16 and bf16 as XLA:CPU computes them, compared as bit
patterns (NaN payloads included). f32 (and bf16 through f32): Eigen's plog_float with XLA's FMAs;
f16 log: libm logf; f64 log: libm log with +NaN for negative and -inf for subnormal arguments;
log1p: the Cephes rational below sqrt(2) - 1, log(1 + x) above. Inputs: the edges and values
where XLA's result is not the correctly rounded one. Expected: jax.jit on XLA:CPU
(tests/filetests/reference/gen_log.py).""",
      inputs, expects, module)
