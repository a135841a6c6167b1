"""Writes the indexing file tests with expected values from the numpy reference in lib.py.
Usage: python3 gen_sort_dus.py tests/filetests"""
import os
import sys
import numpy as np
sys.path.insert(0, os.path.dirname(__file__))
from lib import write, sort_rows, total_order_key

ROOT = sys.argv[1]
for d in ("sort", "topk", "dus"):
    os.makedirs(f"{ROOT}/{d}", exist_ok=True)
NOTE = "Expected values: Python's stable sorted() / numpy reference loops (tests/filetests/reference)."

# --- sort: generic comparator (lexicographic, FLOAT compare) along dim 0 of a 3-D array
k = np.array([[[1, 2], [2, 2]], [[1, 1], [0, 2]], [[1, 2], [2, 1]]], dtype=np.int32)
v = np.array([[[0.5, -1], [3, 4]], [[0.25, 7], [9, -2]], [[-0.5, 6], [1, 8]]], dtype=np.float32)
ok, ov = sort_rows([k, v], 0, lambda e: (-int(e[0]), float(e[1])))
write(f"{ROOT}/sort/lexicographic_comparator_dim0.hlo",
      f"""sort of (s32 keys, f32 values) along dimension 0 of a 3-D shape with a lexicographic
comparator (key descending, then value ascending by FLOAT compare): not a key order, so
this runs the generic merge sort calling the emitted comparator.
{NOTE}""",
      [k, v], [ok, ov], """
HloModule sort_lex, entry_computation_layout={(s32[3,2,2]{2,1,0}, f32[3,2,2]{2,1,0})->(s32[3,2,2]{2,1,0}, f32[3,2,2]{2,1,0})}

cmp {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  x = f32[] parameter(2)
  y = f32[] parameter(3)
  gt = pred[] compare(a, b), direction=GT
  eq = pred[] compare(a, b), direction=EQ
  lt = pred[] compare(x, y), direction=LT
  tie = pred[] and(eq, lt)
  ROOT r = pred[] or(gt, tie)
}

ENTRY main {
  k = s32[3,2,2]{2,1,0} parameter(0)
  v = f32[3,2,2]{2,1,0} parameter(1)
  ROOT s = (s32[3,2,2]{2,1,0}, f32[3,2,2]{2,1,0}) sort(k, v), dimensions={0}, to_apply=cmp
}""")

# --- sort: key paths (u8 descending, s64 wide keys, f16 total order) with stability checks
u = np.array([[3, 250, 3, 0, 7], [9, 9, 1, 255, 9]], dtype=np.uint8)
up = np.array([[0, 1, 2, 3, 4], [0, 1, 2, 3, 4]], dtype=np.int32)
ou, oup = sort_rows([u, up], 1, lambda e: -int(e[0]))
s = np.array([-(2**62), 5, 2**40, -1, 5, -(2**63)], dtype=np.int64)
(os_,) = sort_rows([s], 0, lambda e: int(e[0]))
h = np.array([1.5, -0.0, np.nan, 0.0, -np.inf, -2.0, np.inf, 0.0, -0.0, 65504], dtype=np.float16)
hi = np.arange(10, dtype=np.int32)
hk = total_order_key(np.where(np.isnan(h), np.float16(np.nan), np.where(h == 0, np.float16(0), h)))
oh, ohi = sort_rows([h, hi], 0, lambda e: int(hk[int(e[1])]))
write(f"{ROOT}/sort/key_orders.hlo",
      f"""sorts whose comparators are recognised as orders on a key: u8 descending (GT) with
equal keys keeping their order (the s32 payload shows it), s64 ascending (64-bit keys:
the wide-key path), and f16 in JAX's form (NaN and -0 canonicalised, then TOTALORDER LT),
so -0 and +0 are equal and keep their order, NaN goes last.
{NOTE}""",
      [u, up, s, h, hi], [ou, oup, os_, oh, ohi], """
HloModule sort_keys, entry_computation_layout={(u8[2,5]{1,0}, s32[2,5]{1,0}, s64[6]{0}, f16[10]{0}, s32[10]{0})->(u8[2,5]{1,0}, s32[2,5]{1,0}, s64[6]{0}, f16[10]{0}, s32[10]{0})}

gt_u8 {
  a = u8[] parameter(0)
  b = u8[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=GT
}

lt_s64 {
  a = s64[] parameter(0)
  b = s64[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=LT
}

lt_f16 {
  a = f16[] parameter(0)
  b = f16[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  nan = f16[] constant(nan)
  zero = f16[] constant(0)
  a_nan = pred[] compare(a, a), direction=NE
  a_zero = pred[] compare(a, zero), direction=EQ
  a1 = f16[] select(a_zero, zero, a)
  a2 = f16[] select(a_nan, nan, a1)
  b_nan = pred[] compare(b, b), direction=NE
  b_zero = pred[] compare(b, zero), direction=EQ
  b1 = f16[] select(b_zero, zero, b)
  b2 = f16[] select(b_nan, nan, b1)
  ROOT r = pred[] compare(a2, b2), direction=LT, type=TOTALORDER
}

ENTRY main {
  u = u8[2,5]{1,0} parameter(0)
  up = s32[2,5]{1,0} parameter(1)
  s = s64[6]{0} parameter(2)
  h = f16[10]{0} parameter(3)
  hi = s32[10]{0} parameter(4)
  su = (u8[2,5]{1,0}, s32[2,5]{1,0}) sort(u, up), dimensions={1}, is_stable=true, to_apply=gt_u8
  ss = s64[6]{0} sort(s), dimensions={0}, is_stable=true, to_apply=lt_s64
  sh = (f16[10]{0}, s32[10]{0}) sort(h, hi), dimensions={0}, is_stable=true, to_apply=lt_f16
  ou = u8[2,5]{1,0} get-tuple-element(su), index=0
  oup = s32[2,5]{1,0} get-tuple-element(su), index=1
  oh = f16[10]{0} get-tuple-element(sh), index=0
  ohi = s32[10]{0} get-tuple-element(sh), index=1
  ROOT t = (u8[2,5]{1,0}, s32[2,5]{1,0}, s64[6]{0}, f16[10]{0}, s32[10]{0}) tuple(ou, oup, ss, oh, ohi)
}""")

# --- sort: long rows (radix path) split over tasks, keys computed in the module
rows, n = 48, 1024
lin = np.arange(rows * n, dtype=np.int64).reshape(rows, n)
keys = ((lin * 7919) % 1009 - 500).astype(np.int32)
pos = np.broadcast_to(np.arange(n, dtype=np.int32), (rows, n))
sk, sp = sort_rows([keys, pos], 1, lambda e: int(e[0]))
pick_r = [0, 17, 47]
pick_c = [0, 1, 500, 1022, 1023]
ok = sk[pick_r][:, pick_c]
op = sp[pick_r][:, pick_c]
write(f"{ROOT}/sort/long_rows_parallel.hlo",
      f"""argsort-style sort of 48 rows of 1024 s32 keys (with many equal keys) along the minor
dimension: long enough for the radix sort and enough elements for parallel tasks. Keys are
((row * 1024 + col) * 7919) % 1009 - 500, computed in the module; a few sorted elements
and their original positions are checked.
{NOTE}""",
      [], [ok, op], """
HloModule sort_long, entry_computation_layout={()->(s32[3,5]{1,0}, s32[3,5]{1,0})}

lt {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=LT
}

ENTRY main {
  r = s64[48,1024]{1,0} iota(), iota_dimension=0
  c = s64[48,1024]{1,0} iota(), iota_dimension=1
  w = s64[] constant(1024)
  wb = s64[48,1024]{1,0} broadcast(w), dimensions={}
  rw = s64[48,1024]{1,0} multiply(r, wb)
  lin = s64[48,1024]{1,0} add(rw, c)
  m = s64[] constant(7919)
  mb = s64[48,1024]{1,0} broadcast(m), dimensions={}
  x = s64[48,1024]{1,0} multiply(lin, mb)
  p = s64[] constant(1009)
  pb = s64[48,1024]{1,0} broadcast(p), dimensions={}
  y = s64[48,1024]{1,0} remainder(x, pb)
  o = s64[] constant(500)
  ob = s64[48,1024]{1,0} broadcast(o), dimensions={}
  z = s64[48,1024]{1,0} subtract(y, ob)
  keys = s32[48,1024]{1,0} convert(z)
  pos = s32[48,1024]{1,0} iota(), iota_dimension=1
  s = (s32[48,1024]{1,0}, s32[48,1024]{1,0}) sort(keys, pos), dimensions={1}, is_stable=true, to_apply=lt
  sk = s32[48,1024]{1,0} get-tuple-element(s), index=0
  sp = s32[48,1024]{1,0} get-tuple-element(s), index=1
  rows = s32[3,1]{1,0} constant({{0}, {17}, {47}})
  gk = s32[3,1024]{1,0} gather(sk, rows), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,1024}
  gp = s32[3,1024]{1,0} gather(sp, rows), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,1024}
  cols = s32[5,1]{1,0} constant({{0}, {1}, {500}, {1022}, {1023}})
  ck = s32[3,5]{1,0} gather(gk, cols), offset_dims={0}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=1, slice_sizes={3,1}
  cp = s32[3,5]{1,0} gather(gp, cols), offset_dims={0}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=1, slice_sizes={3,1}
  ROOT t = (s32[3,5]{1,0}, s32[3,5]{1,0}) tuple(ck, cp)
}""")

# --- topk: NaNs of both signs, -0/+0, ties; largest true and false; s8 with ties
x = np.array([[1.0, np.nan, -0.0, 0.0, 3.0, 3.0], [-np.inf, 2.0, -np.nan, 2.0, -1.0, 0.5]], dtype=np.float32)
key = total_order_key(x)
def topk(vals, keys, k, largest):
    vi, ii = [], []
    for r in range(vals.shape[0]):
        order = sorted(range(vals.shape[1]), key=lambda i: (-int(keys[r, i]) if largest else int(keys[r, i])))[:k]
        vi.append(vals[r, order])
        ii.append(np.array(order, dtype=np.int32))
    return np.array(vi), np.array(ii)
v1, i1 = topk(x, key, 4, True)
v2, i2 = topk(x, key, 3, False)
s8 = np.array([[5, -3, 5, 127, -128, 5, 0]], dtype=np.int8)
v3, i3 = topk(s8, s8.astype(np.int64), 3, True)
write(f"{ROOT}/topk/total_order_ties.hlo",
      f"""topk over the float total order (-NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN) with
largest=true (descending) and largest=false (ascending): equal values keep the lower index
first; and an s8 top-3 with ties.
{NOTE}""",
      [x, s8], [v1, i1, v2, i2, v3, i3], """
HloModule topk_ties, entry_computation_layout={(f32[2,6]{1,0}, s8[1,7]{1,0})->(f32[2,4]{1,0}, s32[2,4]{1,0}, f32[2,3]{1,0}, s32[2,3]{1,0}, s8[1,3]{1,0}, s32[1,3]{1,0})}

ENTRY main {
  x = f32[2,6]{1,0} parameter(0)
  y = s8[1,7]{1,0} parameter(1)
  a = (f32[2,4]{1,0}, s32[2,4]{1,0}) topk(x), k=4, largest=true
  b = (f32[2,3]{1,0}, s32[2,3]{1,0}) topk(x), k=3, largest=false
  c = (s8[1,3]{1,0}, s32[1,3]{1,0}) topk(y), k=3, largest=true
  av = f32[2,4]{1,0} get-tuple-element(a), index=0
  ai = s32[2,4]{1,0} get-tuple-element(a), index=1
  bv = f32[2,3]{1,0} get-tuple-element(b), index=0
  bi = s32[2,3]{1,0} get-tuple-element(b), index=1
  cv = s8[1,3]{1,0} get-tuple-element(c), index=0
  ci = s32[1,3]{1,0} get-tuple-element(c), index=1
  ROOT t = (f32[2,4]{1,0}, s32[2,4]{1,0}, f32[2,3]{1,0}, s32[2,3]{1,0}, s8[1,3]{1,0}, s32[1,3]{1,0}) tuple(av, ai, bv, bi, cv, ci)
}""")

# --- TopK custom call: XLA:CPU's form (bits compare) and a plain float GT comparator
z = np.array([[0.5, -2.0, 7.0, 7.0, -0.0, 0.0, 1.0, -9.0]], dtype=np.float32)
zk = total_order_key(z)
v4, i4 = topk(z, zk, 3, True)
v5, i5 = topk(z, z.astype(np.float64), 5, True)  # float GT: -0 == +0, stable
write(f"{ROOT}/topk/custom_call_topk.hlo",
      f"""the TopK custom call XLA:CPU puts in optimized modules, with its comparator in the form
XLA writes it (a GT compare of the float bits made monotone, recognised as a key order),
and with a plain float GT comparator (generic path: -0 and +0 compare equal and keep their
order).
{NOTE}""",
      [z], [v4, i4, v5, i5], """
HloModule topk_custom_call, entry_computation_layout={(f32[1,8]{1,0})->(f32[1,3]{1,0}, s32[1,3]{1,0}, f32[1,5]{1,0}, s32[1,5]{1,0})}

bits_gt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  zero = s32[] constant(0)
  mask = s32[] constant(2147483647)
  ab = s32[] bitcast(a)
  bb = s32[] bitcast(b)
  ax = s32[] xor(mask, ab)
  an = pred[] compare(ab, zero), direction=LT
  bx = s32[] xor(mask, bb)
  bn = pred[] compare(bb, zero), direction=LT
  ak = s32[] select(an, ax, ab)
  bk = s32[] select(bn, bx, bb)
  ROOT r = pred[] compare(ak, bk), direction=GT
}

float_gt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=GT
}

ENTRY main {
  z = f32[1,8]{1,0} parameter(0)
  t1 = (f32[1,3]{1,0}, s32[1,3]{1,0}) custom-call(z), custom_call_target="TopK", called_computations={bits_gt}
  t2 = (f32[1,5]{1,0}, s32[1,5]{1,0}) custom-call(z), custom_call_target="TopK", called_computations={float_gt}
  v1 = f32[1,3]{1,0} get-tuple-element(t1), index=0
  i1 = s32[1,3]{1,0} get-tuple-element(t1), index=1
  v2 = f32[1,5]{1,0} get-tuple-element(t2), index=0
  i2 = s32[1,5]{1,0} get-tuple-element(t2), index=1
  ROOT t = (f32[1,3]{1,0}, s32[1,3]{1,0}, f32[1,5]{1,0}, s32[1,5]{1,0}) tuple(v1, i1, v2, i2)
}""")

# --- dynamic-update-slice inside a fusion below the root (elemental), clamped u32/s8 starts
op = np.arange(20, dtype=np.float32).reshape(4, 5)
up = np.array([[100, 200, 300]], dtype=np.float32) * np.array([[1], [-1]], dtype=np.float32)
i, j = np.uint32(3), np.uint32(4294967292)
ci = min(max(int(i), 0), 4 - 2)
cj = min(max(int(j), 0), 5 - 3)
res = op.copy()
res[ci:ci + 2, cj:cj + 3] = up
out = -res
write(f"{ROOT}/dus/fused_below_root_clamped.hlo",
      f"""dynamic-update-slice inside a fusion with a negate after it (generated per element, not by
the root emitter), with u32 starts past the end: 3 (clamped to 2) and 2^32-4 (clamped to the last start, 2,
as an unsigned value, not to 0).
{NOTE}""",
      [op, up, np.array(i), np.array(j)], [out], """
HloModule dus_fused, entry_computation_layout={(f32[4,5]{1,0}, f32[2,3]{1,0}, u32[], u32[])->f32[4,5]{1,0}}

fused {
  p0 = f32[4,5]{1,0} parameter(0)
  p1 = f32[2,3]{1,0} parameter(1)
  p2 = u32[] parameter(2)
  p3 = u32[] parameter(3)
  d = f32[4,5]{1,0} dynamic-update-slice(p0, p1, p2, p3)
  ROOT n = f32[4,5]{1,0} negate(d)
}

ENTRY main {
  op = f32[4,5]{1,0} parameter(0)
  up = f32[2,3]{1,0} parameter(1)
  i = u32[] parameter(2)
  j = u32[] parameter(3)
  ROOT f = f32[4,5]{1,0} fusion(op, up, i, j), kind=kLoop, calls=fused
}""")

# --- in-place DUS whose update reads the operand elsewhere (staged through scratch)
x = np.arange(8, dtype=np.float32) + 1
t = x + x
start = 2
ds = t[start + 1:start + 1 + 3]
res = t.copy()
res[start:start + 3] = ds[::-1]
write(f"{ROOT}/dus/in_place_update_reads_operand.hlo",
      f"""dynamic-update-slice at the root of a fusion whose output buffer is its operand's (x + x
dies there, so buffer assignment updates it in place), while the update reads that operand
at other positions (reverse of the slice starting one further): the update must be
computed before any of it is written.
{NOTE}""",
      [x, np.array(start, dtype=np.int32)], [res], """
HloModule dus_in_place_reads, entry_computation_layout={(f32[8]{0}, s32[])->f32[8]{0}}

fused {
  p0 = f32[8]{0} parameter(0)
  p1 = s32[] parameter(1)
  one = s32[] constant(1)
  s = s32[] add(p1, one)
  ds = f32[3]{0} dynamic-slice(p0, s), dynamic_slice_sizes={3}
  r = f32[3]{0} reverse(ds), dimensions={0}
  ROOT d = f32[8]{0} dynamic-update-slice(p0, r, p1)
}

ENTRY main {
  x = f32[8]{0} parameter(0)
  i = s32[] parameter(1)
  t = f32[8]{0} add(x, x)
  ROOT f = f32[8]{0} fusion(t, i), kind=kLoop, calls=fused
}""")

# --- scan: a while loop writing one row per iteration with dynamic-update-slice
n = 5
acc = np.zeros((n, 3), dtype=np.float32)
for it in range(n):
    acc[it, :] = np.float32(it * it)
write(f"{ROOT}/dus/while_scan_rows.hlo",
      f"""a scan-style while loop: iteration i writes row i of the carried array with
dynamic-update-slice (update i*i broadcast over the row).
{NOTE}""",
      [], [acc], """
HloModule dus_scan, entry_computation_layout={()->f32[5,3]{1,0}}

cond {
  s = (s32[], f32[5,3]{1,0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  s = (s32[], f32[5,3]{1,0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[5,3]{1,0} get-tuple-element(s), index=1
  sq = s32[] multiply(i, i)
  f = f32[] convert(sq)
  row = f32[1,3]{1,0} broadcast(f), dimensions={}
  zero = s32[] constant(0)
  a2 = f32[5,3]{1,0} dynamic-update-slice(a, row, i, zero)
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  ROOT t = (s32[], f32[5,3]{1,0}) tuple(i2, a2)
}

ENTRY main {
  zero = s32[] constant(0)
  z = f32[] constant(0)
  a = f32[5,3]{1,0} broadcast(z), dimensions={}
  init = (s32[], f32[5,3]{1,0}) tuple(zero, a)
  w = (s32[], f32[5,3]{1,0}) while(init), condition=cond, body=body
  ROOT r = f32[5,3]{1,0} get-tuple-element(w), index=1
}""")

# --- big in-place DUS split over tasks, and a big copying DUS (operand is still used elsewhere)
R, C = 256, 256
base = (np.arange(R * C, dtype=np.float32).reshape(R, C) % 13)
t2 = np.sort(base * 3, axis=1)
u = np.ones((200, C), dtype=np.float32) * 5
s0 = 100  # clamped from 100 to 56
cs = min(max(s0, 0), R - 200)
res = t2.copy()
res[cs:cs + 200, :] = u
res2 = base.copy()
res2[cs:cs + 200, :] = u
rows_pick = [0, 55, 56, 200, 255]
write(f"{ROOT}/dus/large_in_place_and_copy.hlo",
      f"""dynamic-update-slice of a 200x256 block into 256x256 arrays at a start clamped from 100 to
56: once over a temporary (updated in place, split into tasks along rows), once over a
value used elsewhere (copied, then updated, each task owning a range of rows). The
arrays are (row * 256 + col) % 13; the temporary is that times 3, sorted along rows (a
sort's output, so that no fusion absorbs it). The results are sorted along rows again (so
that the updates stay fusion roots) and rows 0, 55, 56, 200 and 255 (first and last
column) are checked.
{NOTE}""",
      [], [np.sort(res, axis=1)[rows_pick][:, [0, 255]], np.sort(res2, axis=1)[rows_pick][:, [0, 255]]], """
HloModule dus_large, entry_computation_layout={()->(f32[5,2]{1,0}, f32[5,2]{1,0})}

lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=LT
}

ENTRY main {
  ir = s32[256,256]{1,0} iota(), iota_dimension=0
  ic = s32[256,256]{1,0} iota(), iota_dimension=1
  w = s32[] constant(256)
  wb = s32[256,256]{1,0} broadcast(w), dimensions={}
  irw = s32[256,256]{1,0} multiply(ir, wb)
  lin = s32[256,256]{1,0} add(irw, ic)
  m = s32[] constant(13)
  mb = s32[256,256]{1,0} broadcast(m), dimensions={}
  rem = s32[256,256]{1,0} remainder(lin, mb)
  x = f32[256,256]{1,0} convert(rem)
  three = f32[] constant(3)
  tb = f32[256,256]{1,0} broadcast(three), dimensions={}
  t3 = f32[256,256]{1,0} multiply(x, tb)
  t = f32[256,256]{1,0} sort(t3), dimensions={1}, to_apply=lt
  five = f32[] constant(5)
  u = f32[200,256]{1,0} broadcast(five), dimensions={}
  s = s32[] constant(100)
  zero = s32[] constant(0)
  d1 = f32[256,256]{1,0} dynamic-update-slice(t, u, s, zero)
  d2 = f32[256,256]{1,0} dynamic-update-slice(x, u, s, zero)
  rows = s32[5,1]{1,0} constant({{0}, {55}, {56}, {200}, {255}})
  cols = s32[2,1]{1,0} constant({{0}, {255}})
  e1 = f32[256,256]{1,0} sort(d1), dimensions={1}, to_apply=lt
  e2 = f32[256,256]{1,0} sort(d2), dimensions={1}, to_apply=lt
  g1 = f32[5,256]{1,0} gather(e1, rows), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,256}
  g2 = f32[5,256]{1,0} gather(e2, rows), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,256}
  c1 = f32[5,2]{1,0} gather(g1, cols), offset_dims={0}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=1, slice_sizes={5,1}
  c2 = f32[5,2]{1,0} gather(g2, cols), offset_dims={0}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=1, slice_sizes={5,1}
  ROOT r = (f32[5,2]{1,0}, f32[5,2]{1,0}) tuple(c1, c2)
}""")
