#!/usr/bin/env python3
"""Dispatch through JAX on the hlojit plugin, against XLA:CPU and against `hlojit bench`.

  jax_dispatch_bench.py [--perf DIR] [--hlojit BIN] [--runs N] [--calls N] [WORKLOAD ...]

Run with the wheel importable (PYTHONPATH=target/python-site) and JAX_PLATFORMS=cpu,hlojit.
Prints two things:

1. A trivial jitted function's time per call (`x + 1` on a scalar, and two arrays in, two out)
   on hlojit and on XLA:CPU: the overhead of a JAX call on each backend (best of 7 rounds).
2. For perf workloads (../shared/perf) written again as the JAX functions they were lowered
   from: a `jax.jit` call on hlojit (inputs on the device, result waited for) and the same
   StableHLO module through the library (`hlojit.compile`, Executable::run as `hlojit bench`
   times it), best of N taking turns in this process, plus `hlojit bench`'s median of the
   module (another process, another moment), and whether `jax.jit(f).lower` gives the
   workload's StableHLO operations (so all time the same program).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np


def gelu(x):
    return jax.nn.gelu(x, approximate=True)


def layernorm(x, scale, bias):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * scale + bias


# Workload name -> the JAX function its module.stablehlo.mlir was lowered from.
WORKLOADS = {
    "gelu_16m_f32": gelu,
    "matmul_1024_f32": lambda a, b: a @ b,
    "matmul_2048_f32": lambda a, b: a @ b,
    "batched_matmul_16x512x64x512_f32": lambda a, b: a @ b,
    "softmax_4096x4096_f32": lambda x: jax.nn.softmax(x, axis=-1),
    "layernorm_8192x1024_f32": layernorm,
    "sort_1m_f32": jnp.sort,
}


def inputs(perf_json):
    """The workload's inputs, generated as perf/README.md says (float inputs only here)."""
    rng = np.random.default_rng(0)
    out = []
    for spec in perf_json["inputs"]:
        assert spec["dtype"] == "f32" and "gen" not in spec, spec
        out.append(rng.uniform(-1.0, 1.0, size=spec["shape"]).astype(np.float32))
    return out


def ops(mlir):
    """The sequence of stablehlo operation names in MLIR text (not attributes such as
    `{stablehlo.mesh = ...}`, which a lowering for a device adds)."""
    return re.findall(r'(?m)(?:^\s*|=\s*|")stablehlo\.([a-z_]+)', mlir)


def per_call_us(f, args, calls, rounds=7):
    for _ in range(200):
        r = f(*args)
    jax.block_until_ready(r)
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            r = f(*args)
        jax.block_until_ready(r)
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


def trivial(calls):
    for name, f, make in [
        ("x + 1 (scalar)", jax.jit(lambda x: x + 1), lambda: [np.float32(1.0)]),
        ("2 arrays in, 2 out", jax.jit(lambda a, b: (a * b, a + b)), lambda: [np.ones((4, 4), np.float32)] * 2),
    ]:
        times = {}
        for platform in ("cpu", "hlojit"):
            device = jax.devices(platform)[0]
            args = [jax.device_put(a, device) for a in make()]
            times[platform] = per_call_us(f, args, calls)
        print(f"trivial jit, {name}: hlojit {times['hlojit']:.1f} us/call, XLA:CPU {times['cpu']:.1f} us/call")


def interleaved_min_ms(calls, runs):
    """Best time of each callable over `runs` rounds, taking turns, so that the load of a busy
    machine falls on both alike (medians of separate runs moved by 20% here)."""
    best = [float("inf")] * len(calls)
    for _ in range(runs):
        for k, call in enumerate(calls):
            start = time.perf_counter()
            call()
            best[k] = min(best[k], (time.perf_counter() - start) * 1e3)
    return best


def bench_median_ms(binary, perf_dir, name, runs):
    # The StableHLO module, as the plugin gets it from JAX (module.hlo is XLA's HLO text of it).
    out = subprocess.run([binary, "bench", "--root", perf_dir, "--runs", str(runs), "--json",
                          "--module", "module.stablehlo.mlir", name],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)[0]["run_ms_median"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--perf", default=os.path.join(os.path.dirname(__file__), "../../shared/perf"), help="the perf workloads (as hlojit bench --root)")
    p.add_argument("--hlojit", default=os.path.join(os.path.dirname(__file__), "../target/release/hlojit"))
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--calls", type=int, default=5000)
    p.add_argument("workloads", nargs="*")
    a = p.parse_args()
    trivial(a.calls)
    import hlojit

    device = jax.devices("hlojit")[0]
    for name in a.workloads or list(WORKLOADS):
        f = jax.jit(WORKLOADS[name])
        folder = os.path.join(a.perf, name)
        spec = json.load(open(os.path.join(folder, "perf.json")))
        host = inputs(spec)
        args = [jax.device_put(x, device) for x in host]
        mlir = open(os.path.join(folder, "module.stablehlo.mlir")).read()
        same = ops(f.lower(*args).as_text()) == ops(mlir)
        # The library path `hlojit bench` times (Executable::run on host arrays), in this process.
        direct = hlojit.compile(mlir)
        jax.block_until_ready(f(*args))
        direct(*host)
        jit_ms, direct_ms = interleaved_min_ms([lambda: jax.block_until_ready(f(*args)), lambda: direct(*host)], a.runs)
        bench_ms = bench_median_ms(a.hlojit, a.perf, name, a.runs)
        print(f"{name}: jax.jit on hlojit {jit_ms:.3f} ms, hlojit.compile {direct_ms:.3f} ms (best of {a.runs}, "
              f"interleaved), ratio {jit_ms / direct_ms:.3f}; hlojit bench median {bench_ms:.3f} ms; "
              f"same program: {'yes' if same else 'NO'}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
