"""Writes the file tests of multi-output fusion (tests/filetests/decisions/fusion): each module
runs on XLA:CPU through jaxlib and XLA's outputs become the `// expect:` lines, next to the
`// check:` lines that pin which kernels hlojit's sibling and producer-consumer fusion made.

Usage: target/venv/bin/python tests/filetests/reference/gen_multi_output.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from lib import write  # noqa: E402
from gen_pipeline import run_xla  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "decisions", "fusion")
ADD = "add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }"
MAX = "max { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] maximum(a, b) }"

rng = np.random.default_rng(13)
X = rng.uniform(-2, 2, size=(8, 16)).astype(np.float32)
V = [rng.uniform(-1, 1, size=(4, 8)).astype(np.float32) for _ in range(4)]

CASES = {
    "sibling_reductions_share_one_kernel": (
        """Two reductions of the same input over the same dimension are one kernel with two outputs
(sibling multi-output fusion): x streams through memory once, and x*x is computed inside it.
check: multiply(%param_0, %param_0)
check: ROOT %tuple = (f32[8], f32[8]) tuple(
check: ENTRY
check-next: %x = f32[8,16] parameter(0)
check-next: fusion(%x), kind=kInput
check-not: fusion(""",
        f"""HloModule sum_and_sum_of_squares
{ADD}
ENTRY main {{
  x = f32[8,16] parameter(0)
  z = f32[] constant(0)
  s = f32[8] reduce(x, z), dimensions={{1}}, to_apply=add
  xx = f32[8,16] multiply(x, x)
  q = f32[8] reduce(xx, z), dimensions={{1}}, to_apply=add
  ROOT t = (f32[8], f32[8]) tuple(s, q)
}}""",
        [X],
        "rtol=1e-6 atol=1e-6",
    ),
    "reduction_and_elementwise_sibling": (
        """A row maximum and an elementwise output of the same input: the reduction kernel stores
exp(x) as it visits each element, so x is read once.
check: ENTRY
check-next: %x = f32[8,16] parameter(0)
check-next: (f32[8,16], f32[8]) fusion(%x), kind=kInput
check-not: fusion(""",
        f"""HloModule max_and_exp
{MAX}
ENTRY main {{
  x = f32[8,16] parameter(0)
  ninf = f32[] constant(-inf)
  e = f32[8,16] exponential(x)
  m = f32[8] reduce(x, ninf), dimensions={{1}}, to_apply=max
  ROOT t = (f32[8,16], f32[8]) tuple(e, m)
}}""",
        [X],
        "rtol=1e-6 atol=0",
    ),
    "optimizer_step_one_loop": (
        """An Adam-style update: the new moments m and v are module outputs and are also read by the
parameter update. Plain fusion recomputes them inside the update; multi-output fusion makes the
three outputs one loop that reads p, g, m and v once and computes each moment once.
check: %fused_computation{{.*}}.multi
check: %mn = f32[4,8] add(
check-not: %mn.1 =
check-not: %vn.1 =
check: ENTRY
check: (f32[4,8], f32[4,8], f32[4,8]) fusion(
check-not: fusion(""",
        """HloModule adam_step
ENTRY main {
  p = f32[4,8] parameter(0)
  g = f32[4,8] parameter(1)
  m = f32[4,8] parameter(2)
  v = f32[4,8] parameter(3)
  b1 = f32[] constant(0.9)
  b1c = f32[] constant(0.1)
  b2 = f32[] constant(0.999)
  b2c = f32[] constant(0.001)
  lr = f32[] constant(0.001)
  eps = f32[] constant(1e-08)
  mb = f32[4,8] broadcast(b1), dimensions={}
  mcb = f32[4,8] broadcast(b1c), dimensions={}
  vb = f32[4,8] broadcast(b2), dimensions={}
  vcb = f32[4,8] broadcast(b2c), dimensions={}
  lrb = f32[4,8] broadcast(lr), dimensions={}
  epsb = f32[4,8] broadcast(eps), dimensions={}
  m1 = f32[4,8] multiply(m, mb)
  m2 = f32[4,8] multiply(g, mcb)
  mn = f32[4,8] add(m1, m2)
  gg = f32[4,8] multiply(g, g)
  v1 = f32[4,8] multiply(v, vb)
  v2 = f32[4,8] multiply(gg, vcb)
  vn = f32[4,8] add(v1, v2)
  sq = f32[4,8] sqrt(vn)
  den = f32[4,8] add(sq, epsb)
  st = f32[4,8] divide(mn, den)
  up = f32[4,8] multiply(st, lrb)
  pn = f32[4,8] subtract(p, up)
  ROOT t = (f32[4,8], f32[4,8], f32[4,8]) tuple(pn, mn, vn)
}""",
        V,
        "rtol=1e-6 atol=1e-7",
    ),
    "producer_output_stored_by_its_consumers": (
        """exp(x) is a module output with five users, too many to recompute in each: plain fusion
leaves it a kernel of its own, and producer-consumer fusion puts it into its first consumer's
loop (which stores it); the other consumers join as siblings. One kernel, one exp per element.
check: exponential(
check-not: exponential(
check: ENTRY
check-next: %x = f32[8,16] parameter(0)
check-next: fusion(%x), kind=kLoop
check-not: fusion(""",
        """HloModule exp_and_consumers
ENTRY main {
  x = f32[8,16] parameter(0)
  p = f32[8,16] exponential(x)
  a = f32[8,16] add(p, x)
  b = f32[8,16] multiply(p, x)
  c = f32[8,16] subtract(p, x)
  d = f32[8,16] divide(p, x)
  ROOT t = (f32[8,16], f32[8,16], f32[8,16], f32[8,16], f32[8,16]) tuple(p, a, b, c, d)
}""",
        [X],
        "rtol=1e-6 atol=0",
    ),
    "full_reduction_split_to_share_the_walk": (
        """The maximum over all of x and the row sums: the maximum is split into row maxima and a
maximum of those (reduction splitting), and the row maxima join the row sums in one walk over x
(sibling fusion). The second kernel reads one value per row.
check: ENTRY
check-next: %x = f32[8,16] parameter(0)
check-next: (f32[8], f32[8]) fusion(%x), kind=kInput
check: f32[] fusion(
check-not: fusion(""",
        f"""HloModule sum_rows_and_max
{ADD}
{MAX}
ENTRY main {{
  x = f32[8,16] parameter(0)
  z = f32[] constant(0)
  ninf = f32[] constant(-inf)
  s = f32[8] reduce(x, z), dimensions={{1}}, to_apply=add
  m = f32[] reduce(x, ninf), dimensions={{0,1}}, to_apply=max
  ROOT t = (f32[8], f32[]) tuple(s, m)
}}""",
        [X],
        "rtol=1e-6 atol=1e-6",
    ),
}


def main():
    for name, (comment, module, inputs, tol) in CASES.items():
        outs = run_xla(module, inputs)
        write(os.path.join(OUT, name + ".hlo"), comment, inputs, outs, module, tol)
        print("wrote", name)


if __name__ == "__main__":
    main()
