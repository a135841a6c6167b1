"""Writes the file test of while_residual_remat (tests/filetests/decisions/licm/remat_*): a
scan stacking tanh(..) and 1 - tanh(..), and its reverse loop, which recomputes the second stack
from the first. The module runs on XLA:CPU through jaxlib; XLA's outputs become the
`// expect:` lines, next to `// check:` lines that pin what hlojit decided.

Usage: target/venv/bin/python tests/filetests/reference/gen_residual_remat.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from lib import write  # noqa: E402
from gen_pipeline import run_xla  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "decisions", "licm")
rng = np.random.default_rng(11)


def u(*shape):
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


SCAN = """HloModule remat_scan_grad
fbody {
  p = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3], f32[4,2,3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  h = f32[2,3] get-tuple-element(p), index=1
  xs = f32[4,2,3] get-tuple-element(p), index=4
  z = s32[] constant(0)
  xd = f32[1,2,3] dynamic-slice(xs, i, z, z), dynamic_slice_sizes={1,2,3}
  x = f32[2,3] reshape(xd)
  half = f32[] constant(0.5)
  halves = f32[2,3] broadcast(half), dimensions={}
  hh = f32[2,3] multiply(h, halves)
  s = f32[2,3] add(x, hh)
  t = f32[2,3] tanh(s)
  c1 = f32[] constant(1)
  ones = f32[2,3] broadcast(c1), dimensions={}
  d = f32[2,3] subtract(ones, t)
  pair = (f32[2,3], f32[2,3]) tuple(t, d)
  t1 = f32[2,3] get-tuple-element(pair), index=0
  d1 = f32[2,3] get-tuple-element(pair), index=1
  ys = f32[4,2,3] get-tuple-element(p), index=2
  tr = f32[1,2,3] reshape(t1)
  ys2 = f32[4,2,3] dynamic-update-slice(ys, tr, i, z, z)
  ds = f32[4,2,3] get-tuple-element(p), index=3
  dr = f32[1,2,3] reshape(d1)
  ds2 = f32[4,2,3] dynamic-update-slice(ds, dr, i, z, z)
  ROOT r = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3], f32[4,2,3]) tuple(next, t, ys2, ds2, xs)
}
fcond {
  p = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3], f32[4,2,3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
bbody {
  p = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  g = f32[2,3] get-tuple-element(p), index=1
  n = s32[] constant(3)
  j = s32[] subtract(n, i)
  z = s32[] constant(0)
  ys = f32[4,2,3] get-tuple-element(p), index=2
  yd = f32[1,2,3] dynamic-slice(ys, j, z, z), dynamic_slice_sizes={1,2,3}
  y = f32[2,3] reshape(yd)
  ds = f32[4,2,3] get-tuple-element(p), index=3
  dd = f32[1,2,3] dynamic-slice(ds, j, z, z), dynamic_slice_sizes={1,2,3}
  d = f32[2,3] reshape(dd)
  gy = f32[2,3] multiply(g, y)
  gd = f32[2,3] multiply(gy, d)
  half = f32[] constant(0.5)
  halves = f32[2,3] broadcast(half), dimensions={}
  g2 = f32[2,3] multiply(gd, halves)
  ROOT r = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3]) tuple(next, g2, ys, ds)
}
bcond {
  p = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  xs = f32[4,2,3] parameter(0)
  h0 = f32[2,3] parameter(1)
  z = s32[] constant(0)
  c = f32[] constant(0)
  zeros = f32[4,2,3] broadcast(c), dimensions={}
  init = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3], f32[4,2,3]) tuple(z, h0, zeros, zeros, xs)
  fw = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3], f32[4,2,3]) while(init), condition=fcond, body=fbody
  h = f32[2,3] get-tuple-element(fw), index=1
  ys = f32[4,2,3] get-tuple-element(fw), index=2
  ds = f32[4,2,3] get-tuple-element(fw), index=3
  binit = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3]) tuple(z, h, ys, ds)
  bw = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3]) while(binit), condition=bcond, body=bbody
  ROOT gout = f32[2,3] get-tuple-element(bw), index=1
}"""

COMMENT = """A scan stacking t = tanh(..) and 1 - t for its reverse: every row of both stacks is
written, so the 1 - t stack is 1 - (the t stack); the reverse loop computes 1 - t from the
slice of the t stack it reads anyway, and the forward loop stops storing it (one stack fewer in
both loops: a store, a line read and a load per element saved).
check: %d.remat = f32[1,2,3]{2,1,0} subtract(
check: ENTRY %main
check: %fw = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3]) while("""


def main():
    inputs = [u(4, 2, 3), u(2, 3)]
    outs = run_xla(SCAN, inputs)
    write(os.path.join(OUT, "remat_one_minus_tanh.hlo"), COMMENT, inputs, outs, SCAN, "rtol=1e-6 atol=1e-6")
    print("wrote remat_one_minus_tanh")


if __name__ == "__main__":
    main()
