#!/usr/bin/env python3
"""What running through JAX costs on hlojit's PJRT plugin, next to XLA:CPU and `hlojit bench`.

  jax_dispatch.py trivial [--calls N]
      per-call time of a trivial jitted function (x + 1 on an f32 scalar already on the device),
      on XLA:CPU and on hlojit in one process: synchronous (each result awaited) and
      asynchronous (N calls queued, the last awaited); the platforms alternate for R rounds
      (--rounds) and each prints the median, min and max over the rounds.
  jax_dispatch.py workloads --hlojit BIN [--root DIR] [--runs N] [NAME...]
      each perf workload's module.stablehlo.mlir compiled and executed through JAX's PJRT client
      on hlojit (compile_and_load + execute_sharded: the calls jax.jit makes for a compiled
      function), median of N runs, next to `hlojit bench --module module.stablehlo.mlir`'s
      median for the same inputs; the two alternate per workload so that load on a shared
      machine hits both alike.
  jax_dispatch.py jit [--root DIR] [--runs N] [NAME...]
      workloads written again as the JAX functions they were lowered from (checked: the
      lowering has the workload's StableHLO operations), a `jax.jit` call on hlojit next to the
      same module through the library in this process (`hlojit.compile`, Executable::run as
      `hlojit bench` times it), taking turns, best of N each: on a loaded machine medians of
      separate runs moved by 20%, the best of interleaved runs far less.

  jax_dispatch.py jit-bench --hlojit BIN [--root DIR] [--rounds R] [--runs N] [NAME...]
      the same `jax.jit` call on hlojit against `hlojit bench --module module.stablehlo.mlir`
      (a separate process, as a user runs it) in alternating rounds: each round times N jit
      calls (their median) and then runs `hlojit bench --runs N` (its median); the ratio of
      each round's two medians, over R rounds, is printed as median [min, max], so that the
      spread a loaded machine puts on one comparison is shown next to it.

Needs the hlojit wheel importable (PYTHONPATH=target/python-site after `cargo xtask wheel`).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
import timeit

os.environ["JAX_PLATFORMS"] = "cpu,hlojit"

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax._src.lib import xla_client  # noqa: E402


def trivial(args):
    f = jax.jit(lambda v: v + 1)
    xs = {p: jax.device_put(np.float32(1), jax.devices(p)[0]) for p in ("cpu", "hlojit")}

    def queued(x):
        y = x
        for _ in range(args.calls):
            y = f(x)
        y.block_until_ready()

    # The platforms take turns round after round, so that load on a shared machine hits both
    # alike; each round's time is the best of 3 batches of N calls.
    sync = {p: [] for p in xs}
    asyn = {p: [] for p in xs}
    for x in xs.values():
        f(x).block_until_ready()
    for _ in range(args.rounds):
        for p, x in xs.items():
            sync[p].append(min(timeit.repeat(lambda: f(x).block_until_ready(), number=args.calls, repeat=3)) / args.calls * 1e6)
            asyn[p].append(min(timeit.repeat(lambda: queued(x), number=1, repeat=3)) / args.calls * 1e6)
    print(f"us/call over {args.rounds} rounds: median [min, max]")
    print(f"{'platform':10} {'awaited each call':>26} {'calls queued':>26}")
    for p in xs:
        cells = [f"{statistics.median(t):.2f} [{min(t):.2f}, {max(t):.2f}]" for t in (sync[p], asyn[p])]
        print(f"{p:10} {cells[0]:>26} {cells[1]:>26}", flush=True)


def load_perf_inputs(root):
    sys.path.insert(0, root)
    import xla_reference  # the workloads' own input recipe

    return xla_reference


def workloads(args):
    ref = load_perf_inputs(args.root)
    names = args.names or sorted(n for n in os.listdir(args.root) if os.path.isfile(os.path.join(args.root, n, "perf.json")))
    dev = jax.devices("hlojit")[0]
    client = dev.client
    print(f"{'workload':34} {'jax+plugin ms':>14} {'hlojit bench ms':>16} {'ratio':>7}")
    for name in names:
        d = os.path.join(args.root, name)
        meta = json.load(open(os.path.join(d, "perf.json")))
        mlir = open(os.path.join(d, "module.stablehlo.mlir")).read()
        exe = client.compile_and_load(mlir, xla_client.DeviceList((dev,)), xla_client.CompileOptions())
        inputs = [jax.device_put(a, dev) for a in ref.make_inputs(meta)]
        jax.block_until_ready(inputs)

        def once():
            outs = [r[0] for r in exe.execute_sharded(inputs).disassemble_into_single_device_arrays()]
            jax.block_until_ready(outs)

        for _ in range(2):
            once()
        times = []
        for _ in range(args.runs):
            t = time.perf_counter()
            once()
            times.append(time.perf_counter() - t)
        ours = statistics.median(times) * 1e3
        out = subprocess.run([args.hlojit, "bench", "--root", args.root, "--module", "module.stablehlo.mlir", "--runs", str(args.runs), "--json", name],
                             capture_output=True, text=True, check=True).stdout
        bench_ms = json.loads(out)[0]["run_ms_median"]
        print(f"{name:34} {ours:14.3f} {bench_ms:16.3f} {ours / bench_ms:7.3f}", flush=True)


def _gelu(x):
    return jax.nn.gelu(x, approximate=True)


def _layernorm(x, scale, bias):
    import jax.numpy as jnp

    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * scale + bias


# Workload name -> the JAX function its module.stablehlo.mlir was lowered from.
JAX_FUNCTIONS = {
    "gelu_16m_f32": _gelu,
    "matmul_1024_f32": lambda a, b: a @ b,
    "matmul_2048_f32": lambda a, b: a @ b,
    "batched_matmul_16x512x64x512_f32": lambda a, b: a @ b,
    "softmax_4096x4096_f32": lambda x: jax.nn.softmax(x, axis=-1),
    "layernorm_8192x1024_f32": _layernorm,
    "sort_1m_f32": lambda x: jax.numpy.sort(x),
}


def _ops(mlir):
    """The stablehlo operations of MLIR text in order (not attributes such as
    `{stablehlo.mesh = ...}`, which a lowering for a device adds)."""
    return re.findall(r'(?m)(?:^\s*|=\s*|")stablehlo\.([a-z_]+)', mlir)


def jit(args):
    import hlojit

    ref = load_perf_inputs(args.root)
    dev = jax.devices("hlojit")[0]
    print(f"{'workload':34} {'jax.jit ms':>11} {'library ms':>11} {'ratio':>7}  same program")
    for name in args.names or sorted(JAX_FUNCTIONS):
        d = os.path.join(args.root, name)
        meta = json.load(open(os.path.join(d, "perf.json")))
        mlir = open(os.path.join(d, "module.stablehlo.mlir")).read()
        host = ref.make_inputs(meta)
        inputs = [jax.device_put(a, dev) for a in host]
        f = jax.jit(JAX_FUNCTIONS[name])
        same = _ops(f.lower(*inputs).as_text()) == _ops(mlir)
        direct = hlojit.compile(mlir)
        calls = [lambda: jax.block_until_ready(f(*inputs)), lambda: direct(*host)]
        best = [float("inf")] * len(calls)
        for call in calls:
            call()
        for _ in range(args.runs):
            for k, call in enumerate(calls):
                t = time.perf_counter()
                call()
                best[k] = min(best[k], (time.perf_counter() - t) * 1e3)
        print(f"{name:34} {best[0]:11.3f} {best[1]:11.3f} {best[0] / best[1]:7.3f}  {'yes' if same else 'NO'}", flush=True)


def jit_bench(args):
    ref = load_perf_inputs(args.root)
    dev = jax.devices("hlojit")[0]
    print(f"{'workload':34} {'jax.jit ms':>11} {'bench ms':>9} {'ratio median [min, max] of ' + str(args.rounds) + ' rounds':>36}")
    for name in args.names or sorted(JAX_FUNCTIONS):
        d = os.path.join(args.root, name)
        meta = json.load(open(os.path.join(d, "perf.json")))
        mlir = open(os.path.join(d, "module.stablehlo.mlir")).read()
        inputs = [jax.device_put(a, dev) for a in ref.make_inputs(meta)]
        f = jax.jit(JAX_FUNCTIONS[name])
        if _ops(f.lower(*inputs).as_text()) != _ops(mlir):
            print(f"{name:34} skipped: jax.jit's lowering is not the workload's program", flush=True)
            continue
        for _ in range(2):
            jax.block_until_ready(f(*inputs))
        ours, theirs, ratios = [], [], []
        for _ in range(args.rounds):
            times = []
            for _ in range(args.runs):
                t = time.perf_counter()
                jax.block_until_ready(f(*inputs))
                times.append((time.perf_counter() - t) * 1e3)
            out = subprocess.run([args.hlojit, "bench", "--root", args.root, "--module", "module.stablehlo.mlir",
                                  "--runs", str(args.runs), "--json", name], capture_output=True, text=True, check=True).stdout
            ours.append(statistics.median(times))
            theirs.append(json.loads(out)[0]["run_ms_median"])
            ratios.append(ours[-1] / theirs[-1])
        spread = f"{statistics.median(ratios):.3f} [{min(ratios):.3f}, {max(ratios):.3f}]"
        print(f"{name:34} {statistics.median(ours):11.3f} {statistics.median(theirs):9.3f} {spread:>36}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    t = sub.add_parser("trivial")
    t.add_argument("--calls", type=int, default=500)
    t.add_argument("--rounds", type=int, default=15)
    w = sub.add_parser("workloads")
    w.add_argument("--hlojit", required=True)
    w.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "../../shared/perf"))
    w.add_argument("--runs", type=int, default=10)
    w.add_argument("names", nargs="*")
    j = sub.add_parser("jit")
    j.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "../../shared/perf"))
    j.add_argument("--runs", type=int, default=10)
    j.add_argument("names", nargs="*")
    b = sub.add_parser("jit-bench")
    b.add_argument("--hlojit", required=True)
    b.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "../../shared/perf"))
    b.add_argument("--rounds", type=int, default=9)
    b.add_argument("--runs", type=int, default=10)
    b.add_argument("names", nargs="*")
    args = p.parse_args()
    {"trivial": trivial, "workloads": workloads, "jit": jit, "jit-bench": jit_bench}[args.what](args)


if __name__ == "__main__":
    main()
