"""Writes elementwise/divide_xla_rewrites.hlo: divisions that XLA's algebraic simplifier turns
into multiplications (passes/divide_rewrites.rs), with XLA:CPU's results for the HLO text itself
(compiled by jaxlib's XLA from the same module), compared exactly: the plain quotients differ
from these in about a third of the elements.
Usage: target/venv/bin/python tests/filetests/reference/gen_divide.py tests/filetests"""
import os
import sys

import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
from jax._src.lib import xla_client  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from lib import write  # noqa: E402

ROOT = sys.argv[1]
N = 48
rng = np.random.default_rng(11)
x = rng.uniform(-10, 10, N).astype(np.float32)
y = rng.uniform(0.5, 10, N).astype(np.float32)
s = np.float32(3.0)
v = rng.uniform(0.5, 10, 4).astype(np.float64)
m = rng.uniform(-10, 10, (4, 12)).astype(np.float64)
h = rng.uniform(-10, 10, N).astype(np.float16)
i = np.array([7, -7, 9, 100, 5, 6, 8, 1] * 6, np.int32)
ib = np.array([2, 2, -1, 3, 1, -1, 2, 5] * 6, np.int32)
ic = np.array([1, 2, 1, 2, 3, 2, 0, 1] * 6, np.int32)

module = f"""
HloModule divide_xla_rewrites

ENTRY main {{
  x = f32[{N}] parameter(0)
  y = f32[{N}] parameter(1)
  s = f32[] parameter(2)
  v = f64[4] parameter(3)
  m = f64[4,12] parameter(4)
  h = f16[{N}] parameter(5)
  i = s32[{N}] parameter(6)
  ib = s32[{N}] parameter(7)
  ic = s32[{N}] parameter(8)
  three = f32[] constant(3)
  b3 = f32[{N}] broadcast(three), dimensions={{}}
  by_const = f32[{N}] divide(x, b3)
  bs = f32[{N}] broadcast(s), dimensions={{}}
  by_scalar = f32[{N}] divide(x, bs)
  bv = f64[4,12] broadcast(v), dimensions={{0}}
  by_vector = f64[4,12] divide(m, bv)
  xy = f32[{N}] divide(x, y)
  nested_left = f32[{N}] divide(xy, y)
  yx = f32[{N}] divide(y, x)
  nested_right = f32[{N}] divide(y, yx)
  ey = f32[{N}] exponential(y)
  by_exp = f32[{N}] divide(x, ey)
  ch = f16[] constant(7)
  bh = f16[{N}] broadcast(ch), dimensions={{}}
  half_by_const = f16[{N}] divide(h, bh)
  pw = s32[{N}] power(ib, ic)
  int_by_pow = s32[{N}] divide(i, pw)
  ROOT t = (f32[{N}], f32[{N}], f64[4,12], f32[{N}], f32[{N}], f32[{N}], f16[{N}], s32[{N}]) tuple(by_const, by_scalar, by_vector, nested_left, nested_right, by_exp, half_by_const, int_by_pow)
}}
"""

jax.config.update("jax_enable_x64", True)
dev = jax.devices("cpu")[0]
inputs = [x, y, s, v, m, h, i, ib, ic]
mod = xla_client.hlo.hlo_module_from_text(module)
mlir = xla_client._xla.mlir.hlo_to_stablehlo(mod.as_serialized_hlo_module_proto())
exe = dev.client.compile_and_load(mlir, xla_client.DeviceList((dev,)), xla_client.CompileOptions())
res = exe.execute_sharded([jax.device_put(a, dev) for a in inputs]).disassemble_into_single_device_arrays()
outs = [np.asarray(r[0]) for r in res]
plain = [x / s, x / s, m / v[:, None], (x / y) / y, y / (y / x), None, None, None]
for k, (o, p) in enumerate(zip(outs, plain)):
    if p is not None:
        print(f"output {k}: {int((o != p).sum())} of {o.size} differ from the plain quotient")
write(f"{ROOT}/elementwise/divide_xla_rewrites.hlo",
      """Divisions XLA's algebraic simplifier rewrites into multiplications (passes/divide_rewrites.rs):
x / broadcast(constant), x / broadcast(run-time scalar), x / broadcast(vector), (x / y) / y,
y / (y / x), x / exp(y), f16 x / 7, and integer i / pow(b, c) (XLA: i * pow(b, -c), 0 for |b| > 1).
Expected: XLA:CPU's results for this module (tests/filetests/reference/gen_divide.py), exact.""",
      inputs, outs, module)
