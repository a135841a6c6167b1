#!/usr/bin/env python3
"""XLA:CPU's compile time of the perf workloads, wall and CPU, beside `hlojit bench --compiles N`.

xla_reference.py reports the wall time of one compile; on a machine other programs keep busy that
measures the scheduler as much as the compiler. This compiles each workload's StableHLO module
the same way (jaxlib's CPU client, `compile_and_load`) N times and prints, per workload:

    name first_wall_ms first_cpu_ms [min_wall_ms min_cpu_ms over the other N-1 compiles]

CPU time is the process's (all threads: XLA compiles large modules on several), so it compares
with the CPU time `hlojit bench` prints. The workloads run in one process, in name order, as
both benches do, so only the first one pays for the process's first compile.

Usage (target/venv): python benches/xla_compile_times.py [--compiles N] [--root DIR] [names...]
"""
import argparse
import os
import time

import jax
from jax._src.lib import xla_client


def compile_once(client, dev, mlir):
    wall, cpu = time.perf_counter(), time.process_time()
    client.compile_and_load(mlir, xla_client.DeviceList((dev,)), xla_client.CompileOptions())
    return (time.perf_counter() - wall) * 1e3, (time.process_time() - cpu) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workloads", nargs="*")
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "perf"))
    ap.add_argument("--compiles", type=int, default=1)
    args = ap.parse_args()
    names = args.workloads or sorted(n for n in os.listdir(args.root) if os.path.isfile(os.path.join(args.root, n, "perf.json")))
    dev = jax.devices("cpu")[0]
    for name in names:
        with open(os.path.join(args.root, name, "module.stablehlo.mlir")) as fh:
            mlir = fh.read()
        first = compile_once(dev.client, dev, mlir)
        line = f"{name} {first[0]:.1f} {first[1]:.1f}"
        rest = [compile_once(dev.client, dev, mlir) for _ in range(args.compiles - 1)]
        if rest:
            line += f" {min(r[0] for r in rest):.1f} {min(r[1] for r in rest):.1f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
