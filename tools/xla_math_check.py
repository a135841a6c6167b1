#!/usr/bin/env python3
"""Bit-for-bit comparison of hlojit's real transcendental functions with XLA:CPU's (jaxlib).

  target/venv/bin/python3 tools/xla_math_check.py [--ops log,log1p] [--types f32,f16]
                                                   [--n 4000000] [--hlojit target/release/hlojit]

For each (op, type) one module `ROOT r = T[N] op(p)` runs on XLA:CPU (jax.jit) and on
`hlojit run` with the same input: every f16/bf16 bit pattern (all 65,536), for f32/f64
random bit patterns plus uniform values around 1 (where log and log1p cancel), and the special
values ±0, ±subnormal, ±inf, NaNs with payloads. Each array is also run with a length that is
not a multiple of any vector width, so scalar tails are covered. Prints, per case, how many
results differ in value (NaN = NaN) and how many NaNs differ in their bits.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np

jax.config.update("jax_enable_x64", True)

TYPES = {"f16": (np.float16, np.uint16), "bf16": (ml_dtypes.bfloat16, np.uint16),
         "f32": (np.float32, np.uint32), "f64": (np.float64, np.uint64)}
OPS = {"log": jnp.log, "log1p": jnp.log1p, "exp": jnp.exp, "expm1": jnp.expm1, "tanh": jnp.tanh,
       "logistic": jax.nn.sigmoid, "erf": jax.lax.erf, "sine": jnp.sin, "cosine": jnp.cos,
       "tan": jnp.tan, "cbrt": jnp.cbrt, "rsqrt": jax.lax.rsqrt}

HLO_NAMES = {"log1p": "log-plus-one", "exp": "exponential", "expm1": "exponential-minus-one"}


def inputs(t, n, rng):
    dt, it = TYPES[t]
    bits = 8 * np.dtype(it).itemsize
    if bits == 16:
        x = np.arange(1 << 16, dtype=np.uint32).astype(it).view(dt)
    else:
        raw = rng.integers(0, 1 << (bits - 1), n, dtype=np.uint64) * 2 + rng.integers(0, 2, n, dtype=np.uint64)
        x = np.concatenate([
            raw.astype(it).view(dt),
            rng.uniform(0.25, 4.0, n // 4).astype(dt),
            rng.uniform(-0.5, 0.5, n // 4).astype(dt),
            rng.uniform(-1, 1, n // 8).astype(dt) * dt(1e-3),
        ])
    sub = ml_dtypes.finfo(dt).smallest_subnormal
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, sub, -sub,
                        ml_dtypes.finfo(dt).tiny, ml_dtypes.finfo(dt).max, -ml_dtypes.finfo(dt).max], dtype=dt)
    return np.concatenate([special, x])


def run_hlojit(hlojit, op, t, x):
    n = x.shape[0]
    text = (f"HloModule m\n\nENTRY e {{\n  p = {t}[{n}]{{0}} parameter(0)\n"
            f"  ROOT r = {t}[{n}]{{0}} {HLO_NAMES.get(op, op)}(p)\n}}\n")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.hlo")
        with open(path, "w") as f:
            f.write(text)
        np.save(os.path.join(d, "in0.npy"), x)
        subprocess.run([hlojit, "run", path, "--input", os.path.join(d, "in0.npy"), "--output-dir", d],
                       check=True, capture_output=True)
        out = np.load(os.path.join(d, "out0.npy"))
        # bf16 results come back as raw bits (uint16).
        return out.view(x.dtype) if out.dtype != x.dtype else out


def compare(got, want, it):
    g = np.asarray(got).view(it)
    w = np.asarray(want).view(it)
    gn = np.isnan(np.asarray(got).astype(np.float64))
    wn = np.isnan(np.asarray(want).astype(np.float64))
    value = int(((g != w) & ~(gn & wn)).sum())
    nan_bits = int(((g != w) & gn & wn).sum())
    where = np.concatenate([np.nonzero((g != w) & ~(gn & wn))[0][:5], np.nonzero((g != w) & gn & wn)[0][:3]])
    return value, nan_bits, where


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", default="log,log1p")
    ap.add_argument("--types", default="f32,f64,f16,bf16")
    ap.add_argument("--n", type=int, default=4_000_000)
    ap.add_argument("--hlojit", default="target/release/hlojit")
    args = ap.parse_args()
    rng = np.random.default_rng(8)
    for t in args.types.split(","):
        x = inputs(t, args.n, rng)
        _, it = TYPES[t]
        for op in args.ops.split(","):
            for xs in (x, x[:37]):
                want = np.asarray(jax.jit(OPS[op])(xs))
                got = run_hlojit(args.hlojit, op, t, xs)
                value, nan_bits, where = compare(got, want, it)
                print(f"{op:9} {t:5} n={xs.shape[0]:9}: {value} values differ, {nan_bits} NaNs differ in bits")
                for i in where[:5]:
                    print(f"    x={xs[i]!r} ({np.asarray(xs[i]).view(it):#x}) xla={want[i]!r} "
                          f"({np.asarray(want[i]).view(it):#x}) hlojit={got[i]!r} ({np.asarray(got[i]).view(it):#x})")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
