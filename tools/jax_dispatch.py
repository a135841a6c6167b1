#!/usr/bin/env python3
"""What running through JAX costs on hlojit's PJRT plugin, next to XLA:CPU and `hlojit bench`.

  jax_dispatch.py trivial [--calls N]
      per-call time of a trivial jitted function (x + 1 on an f32 scalar already on the device),
      on XLA:CPU and on hlojit in one process: synchronous (each result awaited) and
      asynchronous (N calls queued, the last awaited), best of 7 rounds as timeit reports it.
  jax_dispatch.py workloads --hlojit BIN [--root DIR] [--runs N] [NAME...]
      each perf workload's module.stablehlo.mlir compiled and executed through JAX's PJRT client
      on hlojit (compile_and_load + execute_sharded: the calls jax.jit makes for a compiled
      function), median of N runs, next to `hlojit bench --module module.stablehlo.mlir`'s
      median for the same inputs; the two alternate per workload so that load on a shared
      machine hits both alike.

Needs the hlojit wheel importable (PYTHONPATH=target/python-site after `cargo xtask wheel`).
"""
import argparse
import json
import os
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
    print(f"{'platform':10} {'sync us/call':>14} {'async us/call':>14}")
    for platform in ("cpu", "hlojit"):
        x = jax.device_put(np.float32(1), jax.devices(platform)[0])
        f(x).block_until_ready()
        sync = min(timeit.repeat(lambda: f(x).block_until_ready(), number=args.calls, repeat=7)) / args.calls

        def queued():
            y = x
            for _ in range(args.calls):
                y = f(x)
            y.block_until_ready()

        asyn = min(timeit.repeat(queued, number=1, repeat=7)) / args.calls
        print(f"{platform:10} {sync * 1e6:14.2f} {asyn * 1e6:14.2f}", flush=True)


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


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    t = sub.add_parser("trivial")
    t.add_argument("--calls", type=int, default=2000)
    w = sub.add_parser("workloads")
    w.add_argument("--hlojit", required=True)
    w.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "../../shared/perf"))
    w.add_argument("--runs", type=int, default=10)
    w.add_argument("names", nargs="*")
    args = p.parse_args()
    trivial(args) if args.what == "trivial" else workloads(args)


if __name__ == "__main__":
    main()
