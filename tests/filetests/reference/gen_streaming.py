"""Writes the file tests of non-temporal output stores (tests/filetests/decisions/ir): kernels
whose output is at least 32 MiB write it past the cache (codegen/streaming_stores.rs), and the
elements must land where plain stores would put them — the unaligned head of each span, the
vectors and the tail. Each module computes a large array from iota (no large inputs), keeps it
whole with an optimization barrier, and returns slices and a reduction over every element, run
on XLA:CPU through jaxlib for the `// expect:` lines.

Usage: target/venv/bin/python tests/filetests/reference/gen_streaming.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from lib import write  # noqa: E402
from gen_pipeline import run_xla  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "decisions", "ir")
ADD = "add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }"
MAX = "max { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] maximum(a, b) }"

CASES = {
    "large_output_streamed_past_cache": (
        """An elementwise kernel whose output (8388611 f32, just over 32 MiB) exceeds the last-level
cache stores it with non-temporal vector stores and ends with a store fence: a plain store
would first read every line it writes. The odd length leaves a tail. The second kernel reads
the array back after an optimization barrier and compares every element with the value
computed again: the largest difference must be 0.
check-ir: call void @llvm.x86.sse.sfence()
check-ir: store <{{[0-9]+}} x i32> {{.*}}, !nontemporal""",
        [np.float32(0.5)],
        f"""HloModule large_output_streamed_past_cache
{MAX}
ENTRY main {{
  p = f32[] parameter(0)
  i = f32[8388611] iota(), iota_dimension=0
  pb = f32[8388611] broadcast(p), dimensions={{}}
  y = f32[8388611] multiply(i, pb)
  t = f32[8388611] add(y, pb)
  b = f32[8388611] opt-barrier(t)
  one = f32[] constant(1)
  onesb = f32[8388611] broadcast(one), dimensions={{}}
  i1 = f32[8388611] add(i, onesb)
  again = f32[8388611] multiply(i1, pb)
  diff = f32[8388611] subtract(b, again)
  d = f32[8388611] abs(diff)
  zero = f32[] constant(0)
  dmax = f32[] reduce(d, zero), dimensions={{0}}, to_apply=max
  head = f32[12] slice(b), slice={{[0:12]}}
  middle = f32[12] slice(b), slice={{[4194300:4194312]}}
  tail = f32[12] slice(b), slice={{[8388599:8388611]}}
  ROOT r = (f32[], f32[12], f32[12], f32[12]) tuple(dmax, head, middle, tail)
}}""",
        None,
    ),
    "large_layernorm_rows_streamed": (
        """A row-fused layernorm whose output (2048 rows of 4100 f32, 33.6 MB) exceeds the last-level
cache computes each row into a row scratch and streams it out; rows of 4100 elements start at
every 16-byte offset, so each row has an unaligned head and a tail. The rsqrt is computed once
per row, so the elements cost a few multiply-adds and the kernel is bound by memory. Slices of
three rows and the sum of squares of all elements (each row's is 4100 / (1 + 1e-5 * 4100 / var))
come back. (The input comes from iota through an optimization barrier, so the kernel reads it
from memory as a layernorm does.)
check-ir: call void @llvm.x86.sse.sfence()
check-ir: store <{{[0-9]+}} x i32> {{.*}}, !nontemporal""",
        [np.float32(0.003), np.float32(0.01)],
        f"""HloModule large_layernorm_rows_streamed
{ADD}
ENTRY main {{
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  c = f32[2048,4100] iota(), iota_dimension=1
  r = f32[2048,4100] iota(), iota_dimension=0
  pb = f32[2048,4100] broadcast(p), dimensions={{}}
  qb = f32[2048,4100] broadcast(q), dimensions={{}}
  cp = f32[2048,4100] multiply(c, pb)
  rq = f32[2048,4100] multiply(r, qb)
  x0 = f32[2048,4100] add(cp, rq)
  x = f32[2048,4100] opt-barrier(x0)
  zero = f32[] constant(0)
  n = f32[] constant(0.00024390243)
  nb = f32[2048] broadcast(n), dimensions={{}}
  sum = f32[2048] reduce(x, zero), dimensions={{1}}, to_apply=add
  mean = f32[2048] multiply(sum, nb)
  meanb = f32[2048,4100] broadcast(mean), dimensions={{0}}
  xc = f32[2048,4100] subtract(x, meanb)
  sq = f32[2048,4100] multiply(xc, xc)
  ssq = f32[2048] reduce(sq, zero), dimensions={{1}}, to_apply=add
  var = f32[2048] multiply(ssq, nb)
  eps = f32[] constant(1e-05)
  epsb = f32[2048] broadcast(eps), dimensions={{}}
  ve = f32[2048] add(var, epsb)
  inv = f32[2048] rsqrt(ve)
  invb = f32[2048,4100] broadcast(inv), dimensions={{0}}
  y = f32[2048,4100] multiply(xc, invb)
  b = f32[2048,4100] opt-barrier(y)
  head = f32[1,12] slice(b), slice={{[0:1], [0:12]}}
  middle = f32[1,12] slice(b), slice={{[1024:1025], [4088:4100]}}
  tail = f32[1,12] slice(b), slice={{[2047:2048], [2000:2012]}}
  b2 = f32[2048,4100] multiply(b, b)
  total = f32[] reduce(b2, zero), dimensions={{0,1}}, to_apply=add
  ROOT t = (f32[], f32[1,12], f32[1,12], f32[1,12]) tuple(total, head, middle, tail)
}}""",
        "rtol=1e-4 atol=1e-6",
    ),
    "large_gather_rows_streamed": (
        """A gather of 4100 rows of 1027 f32 (16.8 MB) from a table in memory: with the rows it
reads, the kernel moves more than the last-level cache holds, so each row is copied straight
to the output with non-temporal stores (no staging: the row is already contiguous). Output
rows start at every 4-byte offset of a vector, so each has an unaligned head and a tail. Table
element [r, c] holds r * 1027 + c; start indices run from -100 to 3099 and clamp to the 3000
rows. After an optimization barrier every element is compared with the value computed again
from its clamped index: the largest difference must be 0.
check-ir: call void @llvm.x86.sse.sfence()
check-ir: store <{{[0-9]+}} x i32> {{.*}}, !nontemporal""",
        [np.int32(7919)],
        f"""HloModule large_gather_rows_streamed
{MAX}
ENTRY main {{
  p = s32[] parameter(0)
  tc = f32[3000,1027] iota(), iota_dimension=1
  tr = f32[3000,1027] iota(), iota_dimension=0
  k = f32[] constant(1027)
  kb = f32[3000,1027] broadcast(k), dimensions={{}}
  trk = f32[3000,1027] multiply(tr, kb)
  t0 = f32[3000,1027] add(trk, tc)
  t = f32[3000,1027] opt-barrier(t0)
  i = s32[4100] iota(), iota_dimension=0
  pb = s32[4100] broadcast(p), dimensions={{}}
  ip = s32[4100] multiply(i, pb)
  m = s32[] constant(3200)
  mb = s32[4100] broadcast(m), dimensions={{}}
  im = s32[4100] remainder(ip, mb)
  shift = s32[] constant(100)
  sb = s32[4100] broadcast(shift), dimensions={{}}
  ids = s32[4100] subtract(im, sb)
  ids2 = s32[4100,1] reshape(ids)
  g0 = f32[4100,1027] gather(t, ids2), offset_dims={{1}}, collapsed_slice_dims={{0}}, start_index_map={{0}}, index_vector_dim=1, slice_sizes={{1,1027}}
  g = f32[4100,1027] opt-barrier(g0)
  lo = s32[] constant(0)
  hi = s32[] constant(2999)
  row = s32[4100] clamp(lo, ids, hi)
  rowf = f32[4100] convert(row)
  rowb = f32[4100,1027] broadcast(rowf), dimensions={{0}}
  kb2 = f32[4100,1027] broadcast(k), dimensions={{}}
  base = f32[4100,1027] multiply(rowb, kb2)
  col = f32[4100,1027] iota(), iota_dimension=1
  want = f32[4100,1027] add(base, col)
  diff = f32[4100,1027] subtract(g, want)
  d = f32[4100,1027] abs(diff)
  zero = f32[] constant(0)
  dmax = f32[] reduce(d, zero), dimensions={{0,1}}, to_apply=max
  head = f32[2,12] slice(g), slice={{[0:2], [0:12]}}
  tail = f32[1,12] slice(g), slice={{[4099:4100], [1015:1027]}}
  ROOT r = (f32[], f32[2,12], f32[1,12]) tuple(dmax, head, tail)
}}""",
        None,
    ),
    "large_update_outputs_streamed": (
        """A momentum update (a multi-output loop kernel: parameters and velocity, a few multiply-adds
per element) reads three arrays and writes two of 4194305 f32, 32 MiB of outputs together:
bound by memory, so both are staged and streamed out, every value of a span computed before
any is stored. The inputs come from iota through an optimization barrier; the results come back
as slices and sums over every element.
check-ir: call void @llvm.x86.sse.sfence()
check-ir: store <{{[0-9]+}} x i32> {{.*}}, !nontemporal""",
        [np.float32(1e-6)],
        f"""HloModule large_update_outputs_streamed
{ADD}
ENTRY main {{
  s = f32[] parameter(0)
  i = f32[4194305] iota(), iota_dimension=0
  sb = f32[4194305] broadcast(s), dimensions={{}}
  half = f32[] constant(0.5)
  halfb = f32[4194305] broadcast(half), dimensions={{}}
  w0 = f32[4194305] multiply(i, sb)
  g0a = f32[4194305] multiply(w0, halfb)
  g0 = f32[4194305] subtract(g0a, halfb)
  m0 = f32[4194305] multiply(w0, w0)
  in = (f32[4194305], f32[4194305], f32[4194305]) tuple(w0, g0, m0)
  bar = (f32[4194305], f32[4194305], f32[4194305]) opt-barrier(in)
  w = f32[4194305] get-tuple-element(bar), index=0
  g = f32[4194305] get-tuple-element(bar), index=1
  m = f32[4194305] get-tuple-element(bar), index=2
  mu = f32[] constant(0.9)
  mub = f32[4194305] broadcast(mu), dimensions={{}}
  lr = f32[] constant(0.01)
  lrb = f32[4194305] broadcast(lr), dimensions={{}}
  bm = f32[4194305] multiply(mub, m)
  m1 = f32[4194305] add(bm, g)
  step = f32[4194305] multiply(lrb, m1)
  w1 = f32[4194305] subtract(w, step)
  out = (f32[4194305], f32[4194305]) tuple(w1, m1)
  bar2 = (f32[4194305], f32[4194305]) opt-barrier(out)
  wr = f32[4194305] get-tuple-element(bar2), index=0
  mr = f32[4194305] get-tuple-element(bar2), index=1
  zero = f32[] constant(0)
  ws = f32[] reduce(wr, zero), dimensions={{0}}, to_apply=add
  ms = f32[] reduce(mr, zero), dimensions={{0}}, to_apply=add
  wh = f32[12] slice(wr), slice={{[0:12]}}
  mm = f32[12] slice(mr), slice={{[2097150:2097162]}}
  mt = f32[12] slice(mr), slice={{[4194293:4194305]}}
  ROOT t = (f32[], f32[], f32[12], f32[12], f32[12]) tuple(ws, ms, wh, mm, mt)
}}""",
        "rtol=1e-4 atol=1e-6",
    ),
    "large_adam_update_not_streamed": (
        """An Adam update of the same size (four arrays in, three out, a sqrt and a division per
element) keeps plain stores: by the thread cost model its memory time is only 1.5 times its
arithmetic, under the 2x margin streaming asks for, and measured streamed it was no faster on
the Zen 3 (on one core its arithmetic and memory take about as long).
check-ir-not: !nontemporal""",
        None,
        f"""HloModule large_adam_update_not_streamed
{ADD}
ENTRY main {{
  w = f32[4194305] parameter(0)
  g = f32[4194305] parameter(1)
  m = f32[4194305] parameter(2)
  v = f32[4194305] parameter(3)
  b1 = f32[] constant(0.9)
  b1b = f32[4194305] broadcast(b1), dimensions={{}}
  c1 = f32[] constant(0.1)
  c1b = f32[4194305] broadcast(c1), dimensions={{}}
  b2 = f32[] constant(0.999)
  b2b = f32[4194305] broadcast(b2), dimensions={{}}
  c2 = f32[] constant(0.001)
  c2b = f32[4194305] broadcast(c2), dimensions={{}}
  lr = f32[] constant(0.01)
  lrb = f32[4194305] broadcast(lr), dimensions={{}}
  eps = f32[] constant(1e-08)
  epsb = f32[4194305] broadcast(eps), dimensions={{}}
  bm = f32[4194305] multiply(b1b, m)
  cg = f32[4194305] multiply(c1b, g)
  m1 = f32[4194305] add(bm, cg)
  bv = f32[4194305] multiply(b2b, v)
  gg = f32[4194305] multiply(g, g)
  cgg = f32[4194305] multiply(c2b, gg)
  v1 = f32[4194305] add(bv, cgg)
  sq = f32[4194305] sqrt(v1)
  den = f32[4194305] add(sq, epsb)
  q = f32[4194305] divide(m1, den)
  step = f32[4194305] multiply(lrb, q)
  w1 = f32[4194305] subtract(w, step)
  ROOT out = (f32[4194305], f32[4194305], f32[4194305]) tuple(w1, m1, v1)
}}""",
        None,
    ),
    "large_softmax_rows_not_streamed": (
        """A row-fused softmax of the same size evaluates exp at every element: bound by its
arithmetic on a core, not by memory, so its output keeps plain stores (a staging copy would
only add to its time).
check-ir-not: !nontemporal""",
        None,
        f"""HloModule large_softmax_rows_not_streamed
{ADD}
{MAX}
ENTRY main {{
  x = f32[2048,4100] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[2048] reduce(x, ninf), dimensions={{1}}, to_apply=max
  mxb = f32[2048,4100] broadcast(mx), dimensions={{0}}
  xs = f32[2048,4100] subtract(x, mxb)
  e = f32[2048,4100] exponential(xs)
  zero = f32[] constant(0)
  sum = f32[2048] reduce(e, zero), dimensions={{1}}, to_apply=add
  sumb = f32[2048,4100] broadcast(sum), dimensions={{0}}
  ROOT sm = f32[2048,4100] divide(e, sumb)
}}""",
        None,
    ),
}


def main():
    for name, (comment, inputs, module, tol) in CASES.items():
        # A check-only case (no inputs) is compiled, not run.
        outs = run_xla(module, inputs) if inputs is not None else []
        inputs = inputs or []
        write(os.path.join(OUT, name + ".hlo"), comment, inputs, outs, module, tol)


if __name__ == "__main__":
    main()
