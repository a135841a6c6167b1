"""Writes the file tests of while_input_projection (tests/filetests/decisions/licm/projection_*):
scan loops whose x_t @ W dot is computed for all steps before the loop. Each module runs on
XLA:CPU through jaxlib; XLA's outputs become the `// expect:` lines, next to `// check:` lines
that pin what hlojit decided.

Usage: target/venv/bin/python tests/filetests/reference/gen_input_projection.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from lib import write  # noqa: E402
from gen_pipeline import run_xla  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "decisions", "licm")
rng = np.random.default_rng(7)


def u(*shape):
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


RNN = """HloModule projection_rnn_scan
body {
  p = (s32[], f32[2,4], f32[6,2,4], f32[6,2,3], f32[3,4], f32[4,4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  h = f32[2,4] get-tuple-element(p), index=1
  ys = f32[6,2,4] get-tuple-element(p), index=2
  xs = f32[6,2,3] get-tuple-element(p), index=3
  wx = f32[3,4] get-tuple-element(p), index=4
  wh = f32[4,4] get-tuple-element(p), index=5
  q = f32[] constant(0.25)
  qb = f32[3,4] broadcast(q), dimensions={}
  wq = f32[3,4] multiply(wx, qb)
  z = s32[] constant(0)
  xd = f32[1,2,3] dynamic-slice(xs, i, z, z), dynamic_slice_sizes={1,2,3}
  x = f32[2,3] reshape(xd)
  a = f32[2,4] dot(x, wq), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b = f32[2,4] dot(h, wh), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s = f32[2,4] add(a, b)
  t = f32[2,4] tanh(s)
  tr = f32[1,2,4] reshape(t)
  u = f32[6,2,4] dynamic-update-slice(ys, tr, i, z, z)
  ROOT r = (s32[], f32[2,4], f32[6,2,4], f32[6,2,3], f32[3,4], f32[4,4]) tuple(next, t, u, xs, wx, wh)
}
cond {
  p = (s32[], f32[2,4], f32[6,2,4], f32[6,2,3], f32[3,4], f32[4,4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(STEPS)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  xs = f32[6,2,3] parameter(0)
  wx = f32[3,4] parameter(1)
  wh = f32[4,4] parameter(2)
  h0 = f32[2,4] parameter(3)
  z = s32[] constant(0)
  c = f32[] constant(0)
  ys = f32[6,2,4] broadcast(c), dimensions={}
  init = (s32[], f32[2,4], f32[6,2,4], f32[6,2,3], f32[3,4], f32[4,4]) tuple(z, h0, ys, xs, wx, wh)
  w = (s32[], f32[2,4], f32[6,2,4], f32[6,2,3], f32[3,4], f32[4,4]) while(init), condition=cond, body=body
  h = f32[2,4] get-tuple-element(w), index=1
  y = f32[6,2,4] get-tuple-element(w), index=2
  ROOT out = (f32[2,4], f32[6,2,4]) tuple(h, y)
}"""

REVERSE = """HloModule projection_reverse_inner_dim
body {
  p = (s32[], f32[4,2], f32[3,5,2], f32[4,3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  acc = f32[4,2] get-tuple-element(p), index=1
  xs = f32[3,5,2] get-tuple-element(p), index=2
  w = f32[4,3] get-tuple-element(p), index=3
  four = s32[] constant(4)
  t = s32[] subtract(four, i)
  z = s32[] constant(0)
  xd = f32[3,1,2] dynamic-slice(xs, z, t, z), dynamic_slice_sizes={3,1,2}
  x = f32[3,2] reshape(xd)
  d = f32[4,2] dot(w, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  th = f32[4,2] tanh(acc)
  a = f32[4,2] add(th, d)
  ROOT r = (s32[], f32[4,2], f32[3,5,2], f32[4,3]) tuple(next, a, xs, w)
}
cond {
  p = (s32[], f32[4,2], f32[3,5,2], f32[4,3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(7)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  xs = f32[3,5,2] parameter(0)
  w = f32[4,3] parameter(1)
  z = s32[] constant(0)
  c = f32[] constant(0)
  a0 = f32[4,2] broadcast(c), dimensions={}
  init = (s32[], f32[4,2], f32[3,5,2], f32[4,3]) tuple(z, a0, xs, w)
  l = (s32[], f32[4,2], f32[3,5,2], f32[4,3]) while(init), condition=cond, body=body
  ROOT y = f32[4,2] get-tuple-element(l), index=1
}"""

RNN_INPUTS = [u(6, 2, 3), u(3, 4), u(4, 4), u(2, 4)]
RNN_ONE_ROW = [("f32[6,2,", "f32[6,1,"), ("f32[1,2,", "f32[1,1,"), ("{1,2,3}", "{1,1,3}"), ("f32[2,", "f32[1,")]


def one_row(text):
    for two, one in RNN_ONE_ROW:
        text = text.replace(two, one)
    return text

CASES = {
    "projection_rnn_scan": (
        """An RNN scan of batch 2: x_t @ (wx * 0.25) does not depend on the carried state, so
while_input_projection computes it for all six steps as one f32[6,2,4] dot before the loop
and the body slices its step's rows; only h @ wh stays in the loop.
check: %body
check: %a.projected.licm = f32[6,2,4]{2,1,0} get-tuple-element(
check: ENTRY %main
check: f32[6,2,4]{2,1,0} dot(""",
        RNN_INPUTS,
        RNN.replace("STEPS", "6"),
    ),
    "projection_not_for_fewer_steps": (
        """The same scan running five of its six steps: a dot of all six rows before the loop
would compute a row no step reads, so the dot stays in the body.
check-not: projected""",
        RNN_INPUTS,
        RNN.replace("STEPS", "5").replace("HloModule projection_rnn_scan", "HloModule projection_not_for_fewer_steps"),
    ),
    "projection_one_row": (
        """The same scan at batch 1: each step's x_t @ wx is one row, a vector-matrix product;
projected all the same, so the thread pool can split the six rows' products while the loop
keeps only the serial h @ wh.
check: %body
check: %a.projected.licm = f32[6,1,4]{2,1,0} get-tuple-element(
check: ENTRY %main
check: f32[6,1,4]{2,1,0} dot(""",
        [u(6, 1, 3), u(3, 4), u(4, 4), u(1, 4)],
        one_row(RNN.replace("STEPS", "6")).replace("HloModule projection_rnn_scan", "HloModule projection_one_row"),
    ),
    "projection_reverse_inner_dim": (
        """A loop reading xs[:, 4 - i, :] (a reverse scan over dimension 1; from step 5 on the
start index is negative and clamps to row 0) as the rhs of w @ x_t: the projected dot is
f32[4,5,2], its dimension 1 the step, and the clamped steps read the same row as before.
check: %d.projected.licm = f32[4,5,2]{2,1,0} get-tuple-element(
check: ENTRY %main
check: f32[4,5,2]{2,1,0} dot(""",
        [u(3, 5, 2), u(4, 3)],
        REVERSE,
    ),
}


def main():
    for name, (comment, inputs, text) in CASES.items():
        outs = run_xla(text, inputs)
        write(os.path.join(OUT, name + ".hlo"), comment, inputs, outs, text, "rtol=1e-6 atol=1e-6")
        print("wrote", name)


if __name__ == "__main__":
    main()
