"""Writes the indexing file tests with expected values from the numpy reference in lib.py.
Usage: python3 gen_gather_scatter.py tests/filetests"""
import os
import sys
import numpy as np
sys.path.insert(0, os.path.dirname(__file__))
from lib import write, gather, scatter

ROOT = sys.argv[1]
os.makedirs(f"{ROOT}/gather", exist_ok=True)
os.makedirs(f"{ROOT}/scatter", exist_ok=True)
NOTE = "Expected values: numpy reference loops written from XLA's gather/scatter semantics (tests/filetests/reference)."

# --- gather: implicit index vector dim, clamped starts, column-major output (elemental path)
op = np.arange(20, dtype=np.float32).reshape(5, 4) * 1.5 - 7
idx = np.array([3, -2, 7, 0], dtype=np.int64)
out = gather(op, idx, offset_dims=[1], collapsed=[0], start_index_map=[0], ivd=1, slice_sizes=[1, 4])
write(f"{ROOT}/gather/implicit_index_vector_dim_clamped.hlo",
      f"""gather with index_vector_dim == rank(start_indices) (an implicit trailing 1), s64 indices
out of bounds on both sides (clamped to the last and first row), output in a column-major
layout (batch and offset loops interleaved, so the elemental generator does the work).
{NOTE}""",
      [op, idx], [out], """
HloModule gather_implicit_ivd, entry_computation_layout={(f32[5,4]{1,0}, s64[4]{0})->f32[4,4]{0,1}}

ENTRY main {
  op = f32[5,4]{1,0} parameter(0)
  idx = s64[4]{0} parameter(1)
  ROOT g = f32[4,4]{0,1} gather(op, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
}""")

# --- gather: batching dims with the index vector dim in the middle, u8 indices
op = (np.arange(36, dtype=np.int32).reshape(2, 6, 3) * 7) % 23 - 11
idx = np.array([[[1, 200, 4]], [[5, 0, 2]]], dtype=np.uint8)  # [2 (batch), 1 (ivd), 3]
out = gather(op, idx, offset_dims=[2], collapsed=[1], start_index_map=[1], ivd=1, slice_sizes=[1, 1, 2],
             operand_batching=[0], indices_batching=[0])
write(f"{ROOT}/gather/batching_dims_index_vector_dim_middle.hlo",
      f"""gather with operand_batching_dims / start_indices_batching_dims, index_vector_dim=1 in the
middle of start_indices, u8 indices (200 clamps to the last valid start), a partial slice
along the last operand dimension (size 2 of 3).
{NOTE}""",
      [op, idx], [out], """
HloModule gather_batching, entry_computation_layout={(s32[2,6,3]{2,1,0}, u8[2,1,3]{2,1,0})->s32[2,3,2]{2,1,0}}

ENTRY main {
  op = s32[2,6,3]{2,1,0} parameter(0)
  idx = u8[2,1,3]{2,1,0} parameter(1)
  ROOT g = s32[2,3,2]{2,1,0} gather(op, idx), offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=1, slice_sizes={1,1,2}
}""")

# --- gather inside a fusion: operand produced by a fused convert, result negated; 2-D starts, u64
op = np.arange(30, dtype=np.int16).reshape(5, 6) - 9
idx = np.array([[1, 2], [4, 5], [18446744073709551615, 0], [0, 3]], dtype=np.uint64)
g = gather(op.astype(np.float32), idx, offset_dims=[1, 2], collapsed=[], start_index_map=[0, 1], ivd=1, slice_sizes=[2, 3])
out = -g
write(f"{ROOT}/gather/fused_two_component_starts.hlo",
      f"""gather in the middle of a fusion (its operand a fused convert, its result negated), with
two-component start vectors of u64 (2^64-1 is past the end and clamps to the last start,
not to 0), 2x3 windows.
{NOTE}""",
      [op, idx], [out], """
HloModule gather_fused, entry_computation_layout={(s16[5,6]{1,0}, u64[4,2]{1,0})->f32[4,2,3]{2,1,0}}

fused {
  p0 = s16[5,6]{1,0} parameter(0)
  p1 = u64[4,2]{1,0} parameter(1)
  c = f32[5,6]{1,0} convert(p0)
  g = f32[4,2,3]{2,1,0} gather(c, p1), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={2,3}
  ROOT n = f32[4,2,3]{2,1,0} negate(g)
}

ENTRY main {
  op = s16[5,6]{1,0} parameter(0)
  idx = u64[4,2]{1,0} parameter(1)
  ROOT f = f32[4,2,3]{2,1,0} fusion(op, idx), kind=kLoop, calls=fused
}""")

# --- scatter: variadic, order-dependent combiner, duplicates, a partially out-of-bounds window
a = np.arange(24, dtype=np.float32).reshape(6, 4) / 4
b = (np.arange(24, dtype=np.int32).reshape(6, 4) % 5) - 2
idx = np.array([[1], [5], [3], [1], [-1]], dtype=np.int32)
ua = np.arange(40, dtype=np.float32).reshape(5, 2, 4) - 20
ub = (np.arange(40, dtype=np.int32).reshape(5, 2, 4) * 3) % 7
def comb(x0, x1, y0, y1):
    return (np.float32(x0 + y0), np.int32(x1 * 10 + y1))
oa, ob = scatter([a, b], idx, [ua, ub], update_window_dims=[1, 2], inserted=[], sd2od=[0], ivd=1, combine=comb)
write(f"{ROOT}/scatter/variadic_order_dependent.hlo",
      f"""variadic scatter (two operands) whose combiner is order dependent (x1*10 + y1), with a
duplicate start (row 1 twice: updates apply in order), a window starting at row 5 whose
second row would be out of bounds (the whole window is skipped) and a negative start.
{NOTE}""",
      [a, b, idx, ua, ub], [oa, ob], """
HloModule scatter_variadic, entry_computation_layout={(f32[6,4]{1,0}, s32[6,4]{1,0}, s32[5,1]{1,0}, f32[5,2,4]{2,1,0}, s32[5,2,4]{2,1,0})->(f32[6,4]{1,0}, s32[6,4]{1,0})}

comb {
  x0 = f32[] parameter(0)
  x1 = s32[] parameter(1)
  y0 = f32[] parameter(2)
  y1 = s32[] parameter(3)
  s = f32[] add(x0, y0)
  ten = s32[] constant(10)
  m = s32[] multiply(x1, ten)
  t = s32[] add(m, y1)
  ROOT r = (f32[], s32[]) tuple(s, t)
}

ENTRY main {
  a = f32[6,4]{1,0} parameter(0)
  b = s32[6,4]{1,0} parameter(1)
  idx = s32[5,1]{1,0} parameter(2)
  ua = f32[5,2,4]{2,1,0} parameter(3)
  ub = s32[5,2,4]{2,1,0} parameter(4)
  ROOT s = (f32[6,4]{1,0}, s32[6,4]{1,0}) scatter(a, b, idx, ua, ub), update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=comb
}""")

# --- scatter: implicit index vector dim, "set" combiner (last duplicate wins), out of bounds
op = np.array([1, 2, 3, 4, 5], dtype=np.float32)
idx = np.array([[2, 0], [2, -1], [5, 4]], dtype=np.int32)  # [3, 2], ivd = 2 (implicit)
upd = np.array([[10, 20], [30, 40], [50, 60]], dtype=np.float32)
(out,) = scatter([op], idx, [upd], update_window_dims=[], inserted=[0], sd2od=[0], ivd=2, combine=lambda x, y: y)
write(f"{ROOT}/scatter/implicit_index_vector_dim_set.hlo",
      f"""scatter of scalars with index_vector_dim == rank(scatter_indices) (implicit trailing 1),
a combiner that returns the update (so the last of the duplicates at index 2 wins), and
out-of-bounds indices -1 and 5 that are dropped.
{NOTE}""",
      [op, idx, upd], [out], """
HloModule scatter_set, entry_computation_layout={(f32[5]{0}, s32[3,2]{1,0}, f32[3,2]{1,0})->f32[5]{0}}

set {
  x = f32[] parameter(0)
  ROOT y = f32[] parameter(1)
}

ENTRY main {
  op = f32[5]{0} parameter(0)
  idx = s32[3,2]{1,0} parameter(1)
  upd = f32[3,2]{1,0} parameter(2)
  ROOT s = f32[5]{0} scatter(op, idx, upd), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=2, to_apply=set
}""")

# --- scatter: batching dims
op = np.arange(10, dtype=np.int32).reshape(2, 5)
idx = np.array([[4, 0, 4], [1, 1, 7]], dtype=np.int32)
upd = np.array([[100, 200, 300], [1000, 2000, 3000]], dtype=np.int32)
(out,) = scatter([op], idx, [upd], update_window_dims=[], inserted=[1], sd2od=[1], ivd=2, combine=lambda x, y: x + y,
                 input_batching=[0], indices_batching=[0])
write(f"{ROOT}/scatter/batching_dims_add.hlo",
      f"""scatter-add with input_batching_dims / scatter_indices_batching_dims: each batch row of the
indices scatters into its own operand row; duplicates add up; index 7 is dropped.
{NOTE}""",
      [op, idx, upd], [out], """
HloModule scatter_batching, entry_computation_layout={(s32[2,5]{1,0}, s32[2,3]{1,0}, s32[2,3]{1,0})->s32[2,5]{1,0}}

add {
  x = s32[] parameter(0)
  y = s32[] parameter(1)
  ROOT r = s32[] add(x, y)
}

ENTRY main {
  op = s32[2,5]{1,0} parameter(0)
  idx = s32[2,3]{1,0} parameter(1)
  upd = s32[2,3]{1,0} parameter(2)
  ROOT s = s32[2,5]{1,0} scatter(op, idx, upd), update_window_dims={}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, input_batching_dims={0}, scatter_indices_batching_dims={0}, index_vector_dim=2, to_apply=add
}""")

# --- scatter: big enough to be split across tasks, updating a temporary in place
rows, cols = 64, 1024
base = (np.arange(rows * cols, dtype=np.float32).reshape(rows, cols) % 97) * 2  # x + x of the iota % 97
idx = np.array([[3], [60], [3], [63], [64]], dtype=np.int32)
upd = np.ones((5, 1, cols), dtype=np.float32) * np.arange(1, 6, dtype=np.float32)[:, None, None]
(full,) = scatter([base], idx, [upd], update_window_dims=[1, 2], inserted=[], sd2od=[0], ivd=1, combine=lambda x, y: x * y)
out = full[[2, 3, 60, 63], :][:, [0, 1, 511, 1023]]
write(f"{ROOT}/scatter/parallel_in_place_multiply.hlo",
      f"""scatter-multiply of whole rows into a 64x1024 temporary (x + x, dead afterwards, so the
scatter updates its buffer in place) large enough to be split into tasks along the
unindexed column dimension; row 3 is hit twice, row 64 is out of bounds. A few elements
are checked through a gather of the result.
{NOTE}""",
      [idx, upd], [out], """
HloModule scatter_parallel, entry_computation_layout={(s32[5,1]{1,0}, f32[5,1,1024]{2,1,0})->f32[4,4]{1,0}}

mul {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT r = f32[] multiply(x, y)
}

ENTRY main {
  idx = s32[5,1]{1,0} parameter(0)
  upd = f32[5,1,1024]{2,1,0} parameter(1)
  i = s32[64,1024]{1,0} iota(), iota_dimension=1
  r = s32[64,1024]{1,0} iota(), iota_dimension=0
  k = s32[] constant(1024)
  kb = s32[64,1024]{1,0} broadcast(k), dimensions={}
  rk = s32[64,1024]{1,0} multiply(r, kb)
  lin = s32[64,1024]{1,0} add(rk, i)
  p = s32[] constant(97)
  pb = s32[64,1024]{1,0} broadcast(p), dimensions={}
  m = s32[64,1024]{1,0} remainder(lin, pb)
  f = f32[64,1024]{1,0} convert(m)
  x = f32[64,1024]{1,0} add(f, f)
  s = f32[64,1024]{1,0} scatter(x, idx, upd), update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=mul
  rows = s32[4,1]{1,0} constant({{2}, {3}, {60}, {63}})
  g = f32[4,1024]{1,0} gather(s, rows), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,1024}
  s0 = f32[4,1]{1,0} slice(g), slice={[0:4], [0:1]}
  s1 = f32[4,1]{1,0} slice(g), slice={[0:4], [1:2]}
  s2 = f32[4,1]{1,0} slice(g), slice={[0:4], [511:512]}
  s3 = f32[4,1]{1,0} slice(g), slice={[0:4], [1023:1024]}
  ROOT c = f32[4,4]{1,0} concatenate(s0, s1, s2, s3), dimensions={1}
}""")

# --- scatter in place whose updates read the operand (a fused gather of it)
x = np.array([3, 1, 4, 1, 5, 9], dtype=np.float32)
t = np.sort(x)
idx = np.array([[1], [1], [4]], dtype=np.int32)
g = gather(t, idx, offset_dims=[], collapsed=[0], start_index_map=[0], ivd=1, slice_sizes=[1])
(out,) = scatter([t], idx, [g * 2], update_window_dims=[], inserted=[0], sd2od=[0], ivd=1, combine=lambda a, b: a + b)
write(f"{ROOT}/scatter/in_place_updates_read_operand.hlo",
      f"""scatter-add at the root of a fusion that updates its operand's buffer in place (a sort's
output, dead afterwards) while its updates are a fused gather of that same operand: every
update must read the original values even though index 1 is updated twice.
{NOTE}""",
      [x, idx], [out], """
HloModule scatter_in_place_reads, entry_computation_layout={(f32[6]{0}, s32[3,1]{1,0})->f32[6]{0}}

lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=LT
}

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}

fused {
  p0 = f32[6]{0} parameter(0)
  p1 = s32[3,1]{1,0} parameter(1)
  g = f32[3]{0} gather(p0, p1), offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1}
  two = f32[] constant(2)
  tb = f32[3]{0} broadcast(two), dimensions={}
  u = f32[3]{0} multiply(g, tb)
  ROOT s = f32[6]{0} scatter(p0, p1, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}

ENTRY main {
  x = f32[6]{0} parameter(0)
  idx = s32[3,1]{1,0} parameter(1)
  t = f32[6]{0} sort(x), dimensions={0}, to_apply=lt
  ROOT f = f32[6]{0} fusion(t, idx), kind=kLoop, calls=fused
}""")
