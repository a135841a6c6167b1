"""Writes elementwise/multiply_constants.hlo (passes/multiply_constants.rs): XLA's algebraic
simplifier reassociates constant factors of products ((A*C1)*C2 => A*(C1*C2), (A*C1)*(B*C2) =>
(A*B)*(C1*C2), (A*broadcast(C))*broadcast(B) => A*broadcast(B*C)), which changes rounding.
Expected values are XLA:CPU's (jaxlib 0.10.2) for the HLO text itself, exact; the script also
prints how many elements each result shares with each association order.

Usage: target/venv/bin/python tests/filetests/reference/gen_multiply_constants.py tests/filetests"""
import os
import sys

import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
from jax._src.lib import xla_client  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from lib import write  # noqa: E402

ROOT = sys.argv[1]
jax.config.update("jax_enable_x64", True)
dev = jax.devices("cpu")[0]


def run(module, inputs):
    mod = xla_client.hlo.hlo_module_from_text(module)
    mlir = xla_client._xla.mlir.hlo_to_stablehlo(mod.as_serialized_hlo_module_proto())
    exe = dev.client.compile_and_load(mlir, xla_client.DeviceList((dev,)), xla_client.CompileOptions())
    res = exe.execute_sharded([jax.device_put(a, dev) for a in inputs]).disassemble_into_single_device_arrays()
    return [np.asarray(r[0]) for r in res]


rng = np.random.default_rng(11)
N = 64
x = rng.normal(0, 3, N).astype(np.float32)
y = rng.normal(0, 3, N).astype(np.float32)
h = rng.normal(0, 3, N).astype(np.float16)
d = rng.normal(0, 3, N)
p = np.float32(1.3)
xs = np.float32(5.805263996124268)
ys = np.float32(-0.8088609576225281)
varied = ", ".join(str(v) for v in np.linspace(0.1, 0.9, N, dtype=np.float32))

module = f"""
HloModule multiply_constants

ENTRY main {{
  x = f32[{N}] parameter(0)
  y = f32[{N}] parameter(1)
  h = f16[{N}] parameter(2)
  d = f64[{N}] parameter(3)
  p = f32[] parameter(4)
  xs = f32[] parameter(5)
  ys = f32[] parameter(6)
  k1 = f32[] constant(0.3)
  k2 = f32[] constant(1.7)
  b1 = f32[{N}] broadcast(k1), dimensions={{}}
  b2 = f32[{N}] broadcast(k2), dimensions={{}}
  bp = f32[{N}] broadcast(p), dimensions={{}}
  xb1 = f32[{N}] multiply(b1, x)
  chain_bcast = f32[{N}] multiply(b2, xb1)
  xsk1 = f32[] multiply(xs, k1)
  chain_scalar = f32[] multiply(xsk1, k2)
  ysk2 = f32[] multiply(ys, k2)
  two_chains = f32[] multiply(xsk1, ysk2)
  yb2 = f32[{N}] multiply(y, b2)
  two_bcast_chains = f32[{N}] multiply(xb1, yb2)
  param_bcast = f32[{N}] multiply(bp, xb1)
  xbp = f32[{N}] multiply(x, bp)
  param_inside = f32[{N}] multiply(xbp, b1)
  u = f32[{N}] constant({{{", ".join(["0.3"] * N)}}})
  xu = f32[{N}] multiply(x, u)
  uniform_array = f32[{N}] multiply(xu, b2)
  v = f32[{N}] constant({{{varied}}})
  w = f32[{N}] constant({{{varied}}})
  xv = f32[{N}] multiply(x, v)
  varied_arrays = f32[{N}] multiply(xv, w)
  hk1 = f16[] constant(0.3)
  hk2 = f16[] constant(1.7)
  hb1 = f16[{N}] broadcast(hk1), dimensions={{}}
  hb2 = f16[{N}] broadcast(hk2), dimensions={{}}
  hh = f16[{N}] multiply(h, hb1)
  chain_f16 = f16[{N}] multiply(hh, hb2)
  dk1 = f64[] constant(0.3)
  dk2 = f64[] constant(1.7)
  db1 = f64[{N}] broadcast(dk1), dimensions={{}}
  db2 = f64[{N}] broadcast(dk2), dimensions={{}}
  dd = f64[{N}] multiply(d, db1)
  chain_f64 = f64[{N}] multiply(dd, db2)
  ROOT out = (f32[{N}], f32[], f32[], f32[{N}], f32[{N}], f32[{N}], f32[{N}], f32[{N}], f16[{N}], f64[{N}]) tuple(chain_bcast, chain_scalar, two_chains, two_bcast_chains, param_bcast, param_inside, uniform_array, varied_arrays, chain_f16, chain_f64)
}}
"""
inputs = [x, y, h, d, p, xs, ys]
expects = run(module, inputs)
vv = np.linspace(0.1, 0.9, N, dtype=np.float32)
k1, k2 = np.float32(0.3), np.float32(1.7)
checks = [
    ("chain_bcast", (x * k1) * k2, x * (k1 * k2)),
    ("chain_scalar", (xs * k1) * k2, xs * (k1 * k2)),
    ("two_chains", (xs * k1) * (ys * k2), (xs * ys) * (k1 * k2)),
    ("two_bcast_chains", (x * k1) * (y * k2), (x * y) * (k1 * k2)),
    ("param_bcast", (x * k1) * p, x * (p * k1)),
    ("param_inside", (x * p) * k1, x * (p * k1)),
    ("uniform_array", (x * k1) * k2, x * (k1 * k2)),
    ("varied_arrays", (x * vv) * vv, x * (vv * vv)),
    ("chain_f16", (h * np.float16(0.3)) * np.float16(1.7), h * (np.float16(0.3) * np.float16(1.7))),
    ("chain_f64", (d * 0.3) * 1.7, d * (0.3 * 1.7)),
]
for (name, written, reassociated), got in zip(checks, expects):
    print(f"{name}: differs from written order {int(np.sum(got != written))}, "
          f"from reassociated {int(np.sum(got != reassociated))}")
comment = """XLA's simplifier reassociates constant factors of products, which changes rounding:
(A*C1)*C2 => A*(C1*C2) with constants or broadcast scalar constants (chain_bcast, chain_scalar,
uniform_array: an array constant of equal elements is a broadcast to XLA, varied_arrays,
chain_f16, chain_f64); (A*C1)*(B*C2) => (A*B)*(C1*C2) for constants (two_chains) but not
broadcasts (two_bcast_chains keeps its order); (A*broadcast(C))*broadcast(B) =>
A*broadcast(B*C) (param_bcast) but not with the constant outside (param_inside).
Expected values from XLA:CPU (jaxlib 0.10.2), generated by reference/gen_multiply_constants.py."""
write(os.path.join(ROOT, "elementwise/multiply_constants.hlo"), comment, inputs, expects, module)
