"""Writes elementwise/rsqrt_f32_xla_newton.hlo: f32 rsqrt as XLA:CPU computes it.

XLA computes f32 rsqrt as the processor's approximation (rsqrtss / rsqrtps) refined by one Newton
step, y + (-y/2) fma(x y, y, -1) fused, and keeps the approximation where x is not a positive
normal number. The approximation's bits differ between processors (AMD, Intel; all within
1.5 * 2^-12), and one Newton step leaves that visible in the last bit: of 6,000 arguments where
XLA's result is not 1 / sqrt(x), none gives the same result for every approximation the bound
allows (measured by this script's first version). So no bit pattern of a normal argument is
the same on every x86-64 processor, for XLA or for hlojit; the test checks the generated IR
(the approximation, the class test) and the edges' bits, which are the same everywhere.
Measured on one machine over 600,012 arguments: 0 differ from XLA.
Usage: target/venv/bin/python tests/filetests/reference/gen_rsqrt.py"""
import os
import sys

import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
from jax import lax  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lib  # noqa: E402

# Not positive normal numbers: the approximation's fixed values (inf, -inf, 0, the default NaN;
# a subnormal is zero to it, under XLA's denormals-are-zero).
x = np.array([0.0, -0.0, np.inf, -np.inf, -1.0, -4.0, -3.4028235e38, 1e-45, -1e-45, 1.1754942e-38, -1e-39],
             np.float32)
n = x.size
module = (f"HloModule rsqrt_f32_xla_newton\n\nENTRY main {{\n  p0 = u32[{n}] parameter(0)\n  x = f32[{n}] bitcast-convert(p0)\n"
          f"  r = f32[{n}] rsqrt(x)\n  ROOT rb = u32[{n}] bitcast-convert(r)\n}}\n")
want = np.asarray(jax.jit(lax.rsqrt)(x))
lib.write(os.path.join(HERE, "..", "elementwise", "rsqrt_f32_xla_newton.hlo"),
          """f32 rsqrt as XLA:CPU computes it: the processor's approximate rsqrt refined by one Newton step
with XLA's FMAs, the approximation itself where x is not a positive normal number
(codegen/elemental/xla_rsqrt.rs; measured on one machine: 0 of 600,012 differ from XLA, were
143,617 with 1 / sqrt(x)). The approximation's last bits differ between processors, so the bits
of normal arguments are not a portable test: the IR is checked, and the edges' bits (the same on
every x86-64 processor). Expected: jax.jit on XLA:CPU (tests/filetests/reference/gen_rsqrt.py).
check-ir: llvm.x86.sse.rsqrt.ss
check-ir: llvm.is.fpclass""",
          [x.view(np.uint32)], [want.view(np.uint32)], module)
