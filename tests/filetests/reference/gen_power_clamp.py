"""Writes two file tests of XLA algebraic-simplifier rewrites that change results, with XLA:CPU's
results for the HLO text itself (compiled by jaxlib's XLA from the same module), exact:

- elementwise/power_constant_exponent.hlo (passes/power_rewrites.rs): pow(A, 0 | 1 | 2 | 3 | -1)
  become 1, A, A*A, A*(A*A), 1/A, so s32 pow(0, -1) is -1 (1/0) and f32/c64 powers are products;
- decisions/simplify/max_of_clamp.hlo (passes/max_of_clamp.rs): maximum(lo, clamp(lo, x, hi))
  becomes the clamp even where lo > hi; a second broadcast of the same scalar keeps the maximum.

Usage: target/venv/bin/python tests/filetests/reference/gen_power_clamp.py tests/filetests"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from lib import run_hlo_on_xla_cpu as run, write  # noqa: E402

ROOT = sys.argv[1]

rng = np.random.default_rng(5)
N = 24
i = np.array([0, -1, 1, 2, -2, 3, -2147483648, 2147483647] * 3, np.int32)
ie = np.full(N, -1, np.int32)
x = np.concatenate([[np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-30, -1e30, 3.0],
                    rng.normal(0, 3, N - 8)]).astype(np.float32)
h = rng.normal(0, 3, N).astype(np.float16)
re = rng.normal(0, 2, N).astype(np.float32)
im = rng.normal(0, 2, N).astype(np.float32)
scalar = np.float32(-0.578125)

power = f"""
HloModule power_constant_exponent

ENTRY main {{
  i = s32[{N}] parameter(0)
  ie = s32[{N}] parameter(1)
  x = f32[{N}] parameter(2)
  h = f16[{N}] parameter(3)
  re = f32[{N}] parameter(4)
  im = f32[{N}] parameter(5)
  p = f32[] parameter(6)
  m1 = s32[] constant(-1)
  bm1 = s32[{N}] broadcast(m1), dimensions={{}}
  int_inverse = s32[{N}] power(i, bm1)
  int_general = s32[{N}] power(i, ie)
  pc = s32[] convert(p)
  scalar_inverse = s32[] power(pc, m1)
  c0 = f32[] constant(0)
  b0 = f32[{N}] broadcast(c0), dimensions={{}}
  c2 = f32[] constant(2)
  b2 = f32[{N}] broadcast(c2), dimensions={{}}
  c3 = f32[] constant(3)
  b3 = f32[{N}] broadcast(c3), dimensions={{}}
  cm1 = f32[] constant(-1)
  bm1f = f32[{N}] broadcast(cm1), dimensions={{}}
  f_zero = f32[{N}] power(x, b0)
  f_square = f32[{N}] power(x, b2)
  f_cube = f32[{N}] power(x, b3)
  f_inverse = f32[{N}] power(x, bm1f)
  h3 = f16[] constant(3)
  bh3 = f16[{N}] broadcast(h3), dimensions={{}}
  h_cube = f16[{N}] power(h, bh3)
  z = c64[{N}] complex(re, im)
  z2 = c64[] constant((2, 0))
  bz2 = c64[{N}] broadcast(z2), dimensions={{}}
  zm1 = c64[] constant((-1, 0))
  bzm1 = c64[{N}] broadcast(zm1), dimensions={{}}
  zs = c64[{N}] power(z, bz2)
  zi = c64[{N}] power(z, bzm1)
  zs_re = f32[{N}] real(zs)
  zs_im = f32[{N}] imag(zs)
  zi_re = f32[{N}] real(zi)
  zi_im = f32[{N}] imag(zi)
  ROOT t = (s32[{N}], s32[{N}], s32[], f32[{N}], f32[{N}], f32[{N}], f32[{N}], f16[{N}], f32[{N}], f32[{N}], f32[{N}], f32[{N}]) tuple(int_inverse, int_general, scalar_inverse, f_zero, f_square, f_cube, f_inverse, h_cube, zs_re, zs_im, zi_re, zi_im)
}}
"""
inputs = [i, ie, x, h, re, im, scalar]
outs = run(power, inputs)
print("s32 pow(i, -1), constant exponent:", outs[0][:8], "run-time exponent:", outs[1][:8])
print("f32 pow(x, 3) differs from x*(x*x) in", int((outs[5] != x * (x * x)).sum()), "of", N)
write(f"{ROOT}/elementwise/power_constant_exponent.hlo",
      """Powers by a constant exponent are XLA's algebraic simplifier's rewrites
(passes/power_rewrites.rs): pow(A, 0) = 1, pow(A, 2) = A*A, pow(A, 3) = A*(A*A),
pow(A, -1) = 1/A, for every type. So s32 pow(0, -1) is -1 (XLA's 1/0) with a constant exponent
but 0 with the same exponent as a parameter (output 1), the scalar case of fuzz program 7002955
is -1, and f32, f16 and c64 powers are XLA's products and quotients, not its run-time pow.
(c64 pow(z, 3) is left out: XLA's complex product contracts im = b*c + a*d into fma(b, c, a*d)
and hlojit's codegen/elemental/complex.rs forms fma(a, d, b*c): 4 of 24 differ in the last bit.)
Expected: XLA:CPU's results for this module (tests/filetests/reference/gen_power_clamp.py), exact.""",
      inputs, outs, power)

lo = np.array([-0.42, 0.1, 0.5, -1.0, 2.0, np.nan], np.float32)
cx = np.array([3.0, -2.0, 0.2, np.nan, 1.0, 0.0], np.float32)
hi = np.array([-1.44, 1.0, 0.3, 1.0, -3.0, 1.0], np.float32)
ilo = np.array([5, 0, -3, 7], np.int32)
ix = np.array([9, 4, -9, 0], np.int32)
ihi = np.array([1, 2, 3, -8], np.int32)
s_lo = np.float32(-0.42)
clamp = """
HloModule max_of_clamp

ENTRY main {
  lo = f32[6] parameter(0)
  x = f32[6] parameter(1)
  hi = f32[6] parameter(2)
  ilo = s32[4] parameter(3)
  ix = s32[4] parameter(4)
  ihi = s32[4] parameter(5)
  s = f32[] parameter(6)
  c = f32[6] clamp(lo, x, hi)
  max_after = f32[6] maximum(c, lo)
  max_before = f32[6] maximum(lo, c)
  ic = s32[4] clamp(ilo, ix, ihi)
  int_max = s32[4] maximum(ic, ilo)
  b1 = f32[6] broadcast(s), dimensions={}
  b2 = f32[6] broadcast(s), dimensions={}
  cb = f32[6] clamp(b1, x, hi)
  other_broadcast = f32[6] maximum(cb, b2)
  k1 = f32[6] constant({-0.42, 0.1, 0.5, -1, 2, 0})
  k2 = f32[6] constant({-0.42, 0.1, 0.5, -1, 2, 0})
  ck = f32[6] clamp(k1, x, hi)
  equal_constant = f32[6] maximum(ck, k2)
  ROOT t = (f32[6], f32[6], s32[4], f32[6], f32[6]) tuple(max_after, max_before, int_max, other_broadcast, equal_constant)
}
"""
inputs = [lo, cx, hi, ilo, ix, ihi, s_lo]
outs = run(clamp, inputs)
print("max(clamp(lo, x, hi), lo):", outs[0], "second broadcast:", outs[3])
write(f"{ROOT}/decisions/simplify/max_of_clamp.hlo",
      """XLA's algebraic simplifier replaces maximum(lo, clamp(lo, x, hi)) by the clamp, in either
operand order, without looking at the bounds (passes/max_of_clamp.rs): where lo > hi the result
is hi, not lo (lo = -0.42, x = 3, hi = -1.44 gives -1.44; fuzz program 7002634). A second
broadcast of the same scalar is another instruction and keeps the maximum (-0.42); a second
constant with equal bytes is the same value on jaxlib's path (MLIR makes them one).
Expected: XLA:CPU's results for this module (tests/filetests/reference/gen_power_clamp.py), exact.""",
      inputs, outs, clamp)
