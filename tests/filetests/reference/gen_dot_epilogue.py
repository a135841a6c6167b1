"""Writes the file tests of dot epilogue fusion (tests/filetests/decisions/fusion/dot_epilogue_*):
each module runs on XLA:CPU through jaxlib and XLA's outputs become the `// expect:` lines, next
to the `// check:` lines that pin what hlojit fused into the dot's kernel (kOutput) and what not.

The operands are built inside the modules from iotas (exact small multiples of 1/8 scaled by a
parameter) so the files stay small while the dots are large enough for the GEMM engine, whose
finished regions the epilogue rewrites.

Usage: target/venv/bin/python tests/filetests/reference/gen_dot_epilogue.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from lib import write  # noqa: E402
from gen_pipeline import run_xla  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "decisions", "fusion")
ADD = "add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }"

rng = np.random.default_rng(8)
S = np.float32(0.75)
B64 = rng.uniform(-1, 1, size=(64,)).astype(np.float32)
B96 = rng.uniform(-1, 1, size=(96,)).astype(np.float32)


def pattern(name, dims, a, b, m, shift, batch=""):
    """`name` = ((iota_0 * a + iota_1 * b) mod m - shift) / 8 * s over f32[batch + dims]:
    exact values, different in every row and column."""
    shape = ",".join(str(d) for d in [*([int(x) for x in batch.split(",")] if batch else []), *dims])
    r = len(shape.split(","))
    d0, d1 = r - 2, r - 1
    return f"""  {name}.i0 = s32[{shape}] iota(), iota_dimension={d0}
  {name}.i1 = s32[{shape}] iota(), iota_dimension={d1}
  {name}.ca = s32[] constant({a})
  {name}.cab = s32[{shape}] broadcast({name}.ca), dimensions={{}}
  {name}.cb = s32[] constant({b})
  {name}.cbb = s32[{shape}] broadcast({name}.cb), dimensions={{}}
  {name}.cm = s32[] constant({m})
  {name}.cmb = s32[{shape}] broadcast({name}.cm), dimensions={{}}
  {name}.p0 = s32[{shape}] multiply({name}.i0, {name}.cab)
  {name}.p1 = s32[{shape}] multiply({name}.i1, {name}.cbb)
  {name}.sum = s32[{shape}] add({name}.p0, {name}.p1)
  {name}.rem = s32[{shape}] remainder({name}.sum, {name}.cmb)
  {name}.f = f32[{shape}] convert({name}.rem)
  {name}.cs = f32[] constant({shift})
  {name}.csb = f32[{shape}] broadcast({name}.cs), dimensions={{}}
  {name}.c = f32[{shape}] subtract({name}.f, {name}.csb)
  {name}.e = f32[] constant(0.125)
  {name}.es = f32[] multiply({name}.e, s)
  {name}.esb = f32[{shape}] broadcast({name}.es), dimensions={{}}
  {name} = f32[{shape}] multiply({name}.c, {name}.esb)"""


CASES = {
    "dot_epilogue_bias_gelu_in_the_dot_kernel": (
        """A 64 x 256 x 64 dot whose only user is bias add and tanh-gelu: one kOutput fusion rooted
at the gelu with the dot inside. Its kernel runs the GEMM into the output and finishes each region
of it through the gelu while the region is in cache, instead of a second kernel over the result.
check: %fused_computation{{.*}}
check: %d = f32[64,64]{{.*}} dot(
check: tanh(
check: ENTRY
check: %g{{.*}}.epilogue = f32[64,64]{{.*}} fusion({{.*}}), kind=kOutput
check-not: dot(""",
        f"""HloModule dot_bias_gelu
ENTRY main {{
  s = f32[] parameter(0)
  b = f32[64] parameter(1)
{pattern("x", (64, 256), 7, 3, 9, 4)}
{pattern("w", (256, 64), 5, 11, 7, 3)}
  d = f32[64,64] dot(x, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  bb = f32[64,64] broadcast(b), dimensions={{1}}
  h = f32[64,64] add(d, bb)
  h2 = f32[64,64] multiply(h, h)
  h3 = f32[64,64] multiply(h2, h)
  k = f32[] constant(0.044715)
  kb = f32[64,64] broadcast(k), dimensions={{}}
  t1 = f32[64,64] multiply(h3, kb)
  t2 = f32[64,64] add(h, t1)
  c = f32[] constant(0.797884583)
  cb = f32[64,64] broadcast(c), dimensions={{}}
  t3 = f32[64,64] multiply(t2, cb)
  t4 = f32[64,64] tanh(t3)
  one = f32[] constant(1)
  oneb = f32[64,64] broadcast(one), dimensions={{}}
  t5 = f32[64,64] add(t4, oneb)
  half = f32[] constant(0.5)
  halfb = f32[64,64] broadcast(half), dimensions={{}}
  t6 = f32[64,64] multiply(t5, halfb)
  ROOT g = f32[64,64] multiply(h, t6)
}}""",
        [S, B64],
        "rtol=1e-6 atol=1e-6",
    ),
    "dot_epilogue_batched_scale_and_residual": (
        """A batched dot (2 x 64 x 128 x 64) scaled by a constant, plus a residual (an array in
memory, computed by its own kernel), then logistic: the epilogue of every batch's GEMM regions,
the residual read at each result index.
check: %fused_computation{{.*}}
check: dot(
check: logistic(
check: ENTRY
check: kind=kOutput
check-not: dot(""",
        f"""HloModule dot_scale_residual
ENTRY main {{
  s = f32[] parameter(0)
{pattern("r", (64, 64), 3, 7, 13, 6, batch="2")}
{pattern("x", (64, 128), 3, 5, 11, 5, batch="2")}
{pattern("w", (128, 64), 13, 2, 9, 4, batch="2")}
  d = f32[2,64,64] dot(x, w), lhs_batch_dims={{0}}, lhs_contracting_dims={{2}}, rhs_batch_dims={{0}}, rhs_contracting_dims={{1}}
  q = f32[] constant(0.125)
  qb = f32[2,64,64] broadcast(q), dimensions={{}}
  ds = f32[2,64,64] multiply(d, qb)
  a = f32[2,64,64] add(ds, r)
  ROOT l = f32[2,64,64] logistic(a)
}}""",
        [S],
        "rtol=1e-6 atol=1e-6",
    ),
    "dot_epilogue_sgd_update_through_a_transposed_layout": (
        """An SGD step on a weight, w - lr * dW, with dW a weight gradient X^T G (64 x 256 x 64,
contracting the batch) transposed: transpose folding puts the transpose into the dot, and the
product by lr keeps the {0,1} layout the transpose had, between the {1,0} dot and the {1,0}
update. That layout is of a value computed element by element and never stored, so the update
still finishes the dot's regions (mlp_train's weight updates).
check: %fused_computation{{.*}}
check: dot(
check: subtract(
check: ENTRY
check: kind=kOutput
check-not: dot(""",
        f"""HloModule dot_sgd_update
ENTRY main {{
  s = f32[] parameter(0)
{pattern("w", (64, 64), 3, 7, 13, 6)}
{pattern("x", (256, 64), 3, 5, 11, 5)}
{pattern("g", (256, 64), 13, 2, 9, 4)}
  dt = f32[64,64]{{1,0}} dot(g, x), lhs_contracting_dims={{0}}, rhs_contracting_dims={{0}}
  dw = f32[64,64]{{0,1}} transpose(dt), dimensions={{1,0}}
  lr = f32[] constant(0.01)
  lrb = f32[64,64]{{0,1}} broadcast(lr), dimensions={{}}
  step = f32[64,64]{{0,1}} multiply(dw, lrb)
  ROOT u = f32[64,64]{{1,0}} subtract(w, step)
}}""",
        [S],
        "rtol=1e-6 atol=1e-6",
    ),
    "dot_epilogue_few_rows_in_the_strip_kernel": (
        """A dot with few rows (2 batches of 4 x 256 x 96, as an LSTM step's h @ W_h) plus a bias,
then tanh: the strip kernel (precompiled on x86) computes the kernel's strips of columns and
the epilogue finishes each strip after it, the last one partial (96 columns).
check: %fused_computation{{.*}}
check: dot(
check: tanh(
check: ENTRY
check: %t{{.*}}.epilogue = f32[2,4,96]{{.*}} fusion({{.*}}), kind=kOutput
check-not: dot(""",
        f"""HloModule dot_few_rows_bias_tanh
ENTRY main {{
  s = f32[] parameter(0)
  b = f32[96] parameter(1)
{pattern("x", (4, 256), 7, 3, 9, 4, batch="2")}
{pattern("w", (256, 96), 5, 11, 7, 3, batch="2")}
  d = f32[2,4,96] dot(x, w), lhs_batch_dims={{0}}, lhs_contracting_dims={{2}}, rhs_batch_dims={{0}}, rhs_contracting_dims={{1}}
  bb = f32[2,4,96] broadcast(b), dimensions={{2}}
  h = f32[2,4,96] add(d, bb)
  ROOT t = f32[2,4,96] tanh(h)
}}""",
        [S, B96],
        "rtol=1e-6 atol=1e-6",
    ),
    "dot_epilogue_reads_a_loop_counter": (
        """A while loop whose step scales a GEMM's result (128 x 128 x 64) by its counter plus
one. A kernel reads an integer scalar operand once at its entry, as a value rather than
through its buffer, so the GEMM's task functions, which run the epilogue, receive it through
a stack slot (jax's qdwh_test failed to compile: "a kernel binding holds a value").
check: %body
check: kind=kOutput""",
        f"""HloModule dot_epilogue_loop_counter
{ADD}
body {{
  p = (s32[], f32[128,64], f32[128,128]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  y = f32[128,64] get-tuple-element(p), index=1
  w = f32[128,128] get-tuple-element(p), index=2
  one = s32[] constant(1)
  j = s32[] add(i, one)
  d = f32[128,64] dot(w, y), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  jf = f32[] convert(j)
  jb = f32[128,64] broadcast(jf), dimensions={{}}
  y2 = f32[128,64] multiply(d, jb)
  ROOT r = (s32[], f32[128,64], f32[128,128]) tuple(j, y2, w)
}}
cond {{
  p = (s32[], f32[128,64], f32[128,128]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}}
ENTRY main {{
  s = f32[] parameter(0)
{pattern("w", (128, 128), 7, 3, 9, 4)}
{pattern("y", (128, 64), 5, 11, 7, 3)}
  z = s32[] constant(0)
  t = (s32[], f32[128,64], f32[128,128]) tuple(z, y, w)
  l = (s32[], f32[128,64], f32[128,128]) while(t), condition=cond, body=body
  yl = f32[128,64] get-tuple-element(l), index=1
  zf = f32[] constant(0)
  ROOT sums = f32[64] reduce(yl, zf), dimensions={{0}}, to_apply=add
}}""",
        [S],
        "rtol=1e-5 atol=1e-5",
    ),
    "dot_epilogue_not_for_small_strips": (
        """A batch-1 step's small dot (1 x 32 x 64, 2K multiply-adds, as rnn_scan's): its strips
are generated code that sits inlined beside the bias add already, so the two stay apart.
check: ENTRY
check: dot(
check-not: kind=kOutput""",
        f"""HloModule dot_small_strip_bias
ENTRY main {{
  s = f32[] parameter(0)
  b = f32[64] parameter(1)
{pattern("x", (1, 32), 7, 3, 9, 4)}
{pattern("w", (32, 64), 5, 11, 7, 3)}
  d = f32[1,64] dot(x, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  bb = f32[1,64] broadcast(b), dimensions={{1}}
  ROOT h = f32[1,64] add(d, bb)
}}""",
        [S, B64],
        "rtol=1e-6 atol=1e-6",
    ),
}


def write_cases(cases):
    """Runs each case's module on XLA:CPU and writes its file test."""
    for name, (comment, module, inputs, tol) in cases.items():
        outs = run_xla(module, inputs)
        write(os.path.join(OUT, name + ".hlo"), comment, inputs, outs, module, tol)
        print("wrote", name)


if __name__ == "__main__":
    write_cases(CASES)
