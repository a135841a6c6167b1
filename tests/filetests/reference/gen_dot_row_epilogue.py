"""Writes the file tests of dot row epilogue fusion (tests/filetests/decisions/fusion/
dot_row_epilogue_*): a dot whose only user is a row loop (a softmax, a row-centering) over its
columns. Each module runs on XLA:CPU through jaxlib and XLA's outputs become the `// expect:`
lines, next to the `// check:` lines that pin whether the loop went into the dot's kernel.

Operands come from `gen_dot_epilogue.pattern` (exact multiples of 1/8 scaled by a parameter).

Usage: target/venv/bin/python tests/filetests/reference/gen_dot_row_epilogue.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from gen_dot_epilogue import ADD, pattern, write_cases  # noqa: E402

MAX = "max { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT m = f32[] maximum(a, b) }"
S = np.float32(0.75)
# d = x w, 64 x 256 x 64, with `s` as the scale.
PRODUCT_64 = f"""{pattern("x", (64, 256), 7, 3, 9, 4)}
{pattern("w", (256, 64), 5, 11, 7, 3)}
  d = f32[64,64] dot(x, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}"""
# The dot and the loop's reductions in one fused computation, which the entry calls as a
# kOutput fusion and nothing else of them.
ONE_KERNEL = """check: dot(
check: reduce(
check: ENTRY
check-not: reduce(
check-not: dot(
check: kind=kOutput
check-not: reduce(
check-not: dot("""


def masked_softmax(name, comment):
    """Attention scores of 4 heads (96 queries and keys, depth 32) scaled, causally masked and
    put through a softmax over the keys, as JAX writes it."""
    return (
        comment,
        f"""HloModule {name}
{ADD}
{MAX}
ENTRY main {{
  s = f32[] parameter(0)
{pattern("q", (96, 32), 7, 3, 9, 4, batch="4")}
{pattern("k", (96, 32), 5, 11, 7, 3, batch="4")}
  d = f32[4,96,96] dot(q, k), lhs_batch_dims={{0}}, lhs_contracting_dims={{2}}, rhs_batch_dims={{0}}, rhs_contracting_dims={{2}}
  sc = f32[] constant(0.25)
  scb = f32[4,96,96] broadcast(sc), dimensions={{}}
  ds = f32[4,96,96] multiply(d, scb)
  r = s32[96,96] iota(), iota_dimension=0
  c = s32[96,96] iota(), iota_dimension=1
  causal = pred[96,96] compare(r, c), direction=GE
  cb = pred[4,96,96] broadcast(causal), dimensions={{1,2}}
  ninf = f32[] constant(-1e9)
  ninfb = f32[4,96,96] broadcast(ninf), dimensions={{}}
  masked = f32[4,96,96] select(cb, ds, ninfb)
  lo = f32[] constant(-inf)
  mx = f32[4,96] reduce(masked, lo), dimensions={{2}}, to_apply=max
  mxb = f32[4,96,96] broadcast(mx), dimensions={{0,1}}
  sh = f32[4,96,96] subtract(masked, mxb)
  e = f32[4,96,96] exponential(sh)
  z = f32[] constant(0)
  sum = f32[4,96] reduce(e, z), dimensions={{2}}, to_apply=add
  sumb = f32[4,96,96] broadcast(sum), dimensions={{0,1}}
  ROOT p = f32[4,96,96] divide(e, sumb)
}}""",
        [S],
        "rtol=1e-6 atol=1e-7",
    )


CASES = {
    "dot_row_epilogue_masked_softmax": masked_softmax(
        "dot_row_epilogue_masked_softmax",
        """Attention's scores (4 x 96 x 32 x 96) scaled, causally masked and softmaxed over the keys:
row fusion makes the softmax one loop, the dot's only user, which reads the scores only inside
the row it computes. It becomes the dot's epilogue (one kOutput fusion with the dot, the mask
and both reductions): the GEMM finishes whole rows in cache instead of writing the scores out
for a second kernel.
""" + ONE_KERNEL,
    ),
    "dot_row_epilogue_generated_gemm": masked_softmax(
        "dot_row_epilogue_generated_gemm",
        """The masked softmax of `dot_row_epilogue_masked_softmax` for a target without the runtime's
GEMM (x86-64's SSE2): the generated GEMM finishes each work unit's rows, all columns, with the
same row code.
cpu: x86-64
check-ir-not: hlojit_rt_gemm_
""" + ONE_KERNEL,
    ),
    "dot_row_epilogue_centers_each_row": (
        """A dot's result less its row sums (as a normalization has): row fusion makes the sum and
the subtraction one loop, the dot's only user, and the loop finishes whole rows of the dot
inside its kernel.
""" + ONE_KERNEL,
        f"""HloModule dot_then_row_sum
{ADD}
ENTRY main {{
  s = f32[] parameter(0)
{PRODUCT_64}
  z = f32[] constant(0)
  rs = f32[64] reduce(d, z), dimensions={{1}}, to_apply=add
  rb = f32[64,64] broadcast(rs), dimensions={{0}}
  ROOT o = f32[64,64] subtract(d, rb)
}}""",
        [S],
        "rtol=1e-6 atol=1e-5",
    ),
    "dot_row_epilogue_not_when_reading_other_rows": (
        """The row sums are taken of the dot's rows in reverse order (row i less the sum of row 63 -
i): the loop reads the dot outside the row it computes, so a finished block of rows is not
enough to finish it, and the dot stays a kernel of its own.
check: ENTRY
check: dot(
check-not: kind=kOutput""",
        f"""HloModule dot_then_other_row_sum
{ADD}
ENTRY main {{
  s = f32[] parameter(0)
{PRODUCT_64}
  rev = f32[64,64] reverse(d), dimensions={{0}}
  z = f32[] constant(0)
  rs = f32[64] reduce(rev, z), dimensions={{1}}, to_apply=add
  rb = f32[64,64] broadcast(rs), dimensions={{0}}
  ROOT o = f32[64,64] subtract(d, rb)
}}""",
        [S],
        "rtol=1e-6 atol=1e-5",
    ),
    "dot_row_epilogue_not_when_the_scores_are_an_output": (
        """The masked softmax's scores are also a result of the module: the dot has a reader besides
the loop and stays a kernel of its own, stored once for both.
check: ENTRY
check: dot(
check-not: kind=kOutput""",
        f"""HloModule dot_scores_and_softmax
{ADD}
{MAX}
ENTRY main {{
  s = f32[] parameter(0)
{PRODUCT_64}
  lo = f32[] constant(-inf)
  mx = f32[64] reduce(d, lo), dimensions={{1}}, to_apply=max
  mxb = f32[64,64] broadcast(mx), dimensions={{0}}
  sh = f32[64,64] subtract(d, mxb)
  e = f32[64,64] exponential(sh)
  z = f32[] constant(0)
  sum = f32[64] reduce(e, z), dimensions={{1}}, to_apply=add
  sumb = f32[64,64] broadcast(sum), dimensions={{0}}
  p = f32[64,64] divide(e, sumb)
  ROOT t = (f32[64,64], f32[64,64]) tuple(d, p)
}}""",
        [S],
        "rtol=1e-6 atol=1e-6",
    ),
}


if __name__ == "__main__":
    write_cases(CASES)
