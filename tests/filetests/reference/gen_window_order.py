"""Writes two file tests of the order in which XLA:CPU visits a window (codegen/window_peel.rs),
with XLA:CPU's results for the HLO text itself (compiled by jaxlib's XLA), exact:

- reduce_window/xla_visit_order.hlo: s64 reduce-windows whose reducer acc * 64 + x over the
  operand positions 1, 2, ... spells out each window's visit order in base 64;
- select_and_scatter/peeled_window_ties.hlo: select-and-scatter ties that only that order
  reproduces (fuzz programs 7002250 and 7000155, reduced; no order of the window dimensions does).

Usage: target/venv/bin/python tests/filetests/reference/gen_window_order.py tests/filetests"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from lib import run_hlo_on_xla_cpu as run, write  # noqa: E402

ROOT = sys.argv[1]

def out_dims(dims, win):
    return [(n + lo + hi - size) // stride + 1 for n, (size, stride, lo, hi) in zip(dims, win)]


def window_attr(win):
    return ("window={size=" + "x".join(str(w[0]) for w in win) + " stride=" + "x".join(str(w[1]) for w in win)
            + " pad=" + "x".join(f"{w[2]}_{w[3]}" for w in win) + "}")


# (operand dims, window (size, stride, low, high) per dimension)
CASES = [
    ([7, 8], [(3, 1, 1, 0), (3, 2, 0, 1)]),           # columns 0-1 of all rows, then column 2
    ([4, 3, 2], [(3, 2, 0, 2), (3, 2, 0, 2), (2, 2, 2, 0)]),  # low-padded size 2: outermost
    ([3, 4, 4], [(1, 2, 1, 0), (2, 2, 0, 1), (2, 2, 0, 2)]),  # output-only constraint: row-major
    ([2, 3, 4], [(2, 1, 1, 1), (3, 1, 0, 1), (2, 2, 1, 0)]),
    ([5, 6], [(3, 2, 2, 2), (2, 1, 1, 0)]),
]
params, bodies, shapes, inputs = [], [], [], []
for k, (dims, win) in enumerate(CASES):
    sh = ",".join(map(str, dims))
    params.append(f"  a{k} = s64[{sh}] parameter({k})")
    o = ",".join(map(str, out_dims(dims, win)))
    bodies.append(f"  r{k} = s64[{o}] reduce-window(a{k}, z), {window_attr(win)}, to_apply=spell")
    shapes.append(f"s64[{o}]")
    inputs.append(np.arange(1, int(np.prod(dims)) + 1, dtype=np.int64).reshape(dims))
order = "\n".join(["HloModule xla_visit_order", "", "spell {", "  a = s64[] parameter(0)",
                   "  b = s64[] parameter(1)", "  k = s64[] constant(64)", "  m = s64[] multiply(a, k)",
                   "  ROOT s = s64[] add(m, b)", "}", "", "ENTRY main {"] + params + ["  z = s64[] constant(0)"]
                  + bodies + [f"  ROOT t = ({', '.join(shapes)}) tuple({', '.join(f'r{k}' for k in range(len(CASES)))})",
                              "}"])
outs = run(order, inputs)
write(f"{ROOT}/reduce_window/xla_visit_order.hlo",
      """The order in which XLA:CPU visits a window (codegen/window_peel.rs): the reducer
acc * 64 + x over operand positions 1, 2, ... spells each window's visits in base 64. Row-major,
except that one padded window dimension may be peeled: its last position is visited after all
the others (case 0: columns 0-1 of every row, then column 2; case 1: the low-padded size-2
dimension outermost). Case 2 is not peeled (its constraint is on the output index alone).
Expected: XLA:CPU's results for this module (tests/filetests/reference/gen_window_order.py), exact.""",
      inputs, outs, order)

# Fuzz 7002250, reduced: s32 LE over a 3x3 window padded low in rows and high in columns.
v0 = np.array([[-1, -1, 1, -1, 1, 0, 0, -1], [0, 0, 1, -1, -1, 1, 0, 0], [0, 0, 0, -1, 0, 0, 0, 0],
               [1, 1, 100, 1, 1, 1, 0, -1], [-1, -1, 1, 1, 0, 0, 0, -1], [-2147483648, 0, 100, 0, -1, -1, 0, 1],
               [0, 1, 1, -1, 0, 1, 0, 0]], np.int32)
src = np.ones((6, 4), np.int32)
rng = np.random.default_rng(3)
# 7000155's window on an f16 operand of few distinct values (many ties), select GE.
h = rng.integers(-2, 3, (5, 2, 5, 4)).astype(np.float16)
hs = (rng.integers(1, 8, (5, 4, 3, 2))).astype(np.float16)
ties = """
HloModule peeled_window_ties

le {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=LE
}

add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] add(a, b)
}

ge16 {
  a = f16[] parameter(0)
  b = f16[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=GE
}

add16 {
  a = f16[] parameter(0)
  b = f16[] parameter(1)
  ROOT r = f16[] add(a, b)
}

ENTRY main {
  a = s32[7,8] parameter(0)
  s = s32[6,4] parameter(1)
  h = f16[5,2,5,4] parameter(2)
  hs = f16[5,4,3,2] parameter(3)
  z = s32[] constant(-2)
  z16 = f16[] constant(0)
  r = s32[7,8] select-and-scatter(a, s, z), window={size=3x3 stride=1x2 pad=1_0x0_1}, select=le, scatter=add
  r16 = f16[5,2,5,4] select-and-scatter(h, hs, z16), window={size=2x1x2x3 stride=1x1x2x2 pad=0_1x1_1x1_0x0_1}, select=ge16, scatter=add16
  ROOT t = (s32[7,8], f16[5,2,5,4]) tuple(r, r16)
}
"""
inputs = [v0, src, h, hs]
outs = run(ties, inputs)
write(f"{ROOT}/select_and_scatter/peeled_window_ties.hlo",
      """Select-and-scatter ties decided by XLA:CPU's window visit order (codegen/window_peel.rs):
XLA rewrites select-and-scatter into a reduce-window over (operand, iotas) whose emitter peels
the last position of one padded window dimension into a second loop nest. s32 LE over a 3x3
window (fuzz 7002250, reduced: column 2 of the window comes after columns 0-1 of every row)
and f16 GE over 7000155's 2x1x2x3 window padded in three dimensions (position 2 of the last
dimension comes last); no order of the window dimensions gives these results.
Expected: XLA:CPU's results for this module (tests/filetests/reference/gen_window_order.py), exact.""",
      inputs, outs, ties)
