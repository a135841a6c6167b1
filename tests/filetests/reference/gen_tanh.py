"""Writes elementwise/tanh_f32_xla_rational.hlo: f32 tanh at the points where XLA:CPU's rational
approximation changes regime (x itself below 0.0004, the clamp at +-7.998811721801758, +-1 from 20
on), special values and a sweep, with XLA:CPU's own results (jax.jit on the CPU backend), so the
file pins hlojit to XLA's bits rather than to the correctly rounded tanh.
Usage: target/venv/bin/python tests/filetests/reference/gen_tanh.py tests/filetests"""
import os
import sys

import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from lib import write  # noqa: E402

ROOT = sys.argv[1]
edges = [0.0, -0.0, 1e-45, -1e-40, 1e-30, 3.9999e-4, 4e-4, -4.0001e-4, 0.01, 0.3, 0.5, 0.625, -0.7,
         1.0, 1.5, -2.0, 3.0, 4.5, 6.0, 7.5, 7.9, 7.998811721801758, -7.998812, 8.0, 9.0, 12.0,
         19.999998, 20.0, -20.0, 100.0, 3e38, np.inf, -np.inf, np.nan]
sweep = np.linspace(-9.0, 9.0, 61)
x = np.array(edges + list(sweep), dtype=np.float32)
y = np.asarray(jax.jit(jax.numpy.tanh)(x))
n = x.size
write(f"{ROOT}/elementwise/tanh_f32_xla_rational.hlo",
      """f32 tanh as XLA:CPU computes it: x N(x^2) / D(x^2) of x clamped to +-7.998811721801758, x itself
below |x| = 0.0004 (subnormals pass through), +-1 from 20 on, NaN stays NaN. Expected: XLA:CPU's
results (jax.jit(jnp.tanh) on the CPU backend, tests/filetests/reference/gen_tanh.py), compared
bit for bit: the approximation is a few ulp from the correctly rounded tanh.""",
      [x], [y], f"""
HloModule tanh_f32

ENTRY main {{
  x = f32[{n}] parameter(0)
  ROOT t = f32[{n}] tanh(x)
}}
""")
