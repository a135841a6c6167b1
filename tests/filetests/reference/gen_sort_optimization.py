"""Writes the file tests of the LLVM pipeline chosen for sorts (backend/optimization.rs), with
XLA:CPU's outputs (jaxlib) as expected values.
Usage: target/venv/bin/python tests/filetests/reference/gen_sort_optimization.py tests/filetests"""
import os
import sys
import numpy as np
sys.path.insert(0, os.path.dirname(__file__))
from lib import write, run_hlo_on_xla_cpu

ROOT = sys.argv[1]
OUT = f"{ROOT}/decisions/ir"
NOTE = "Expected values: XLA:CPU (jaxlib)."
rng = np.random.default_rng(7)
x = rng.uniform(-2, 2, size=(4, 16)).astype(np.float32)
x[0, 3] = np.nan
x[1, 5] = -0.0
x[1, 6] = 0.0
x[2, 0] = -np.inf

# jnp.sort's comparator: NaN-aware total order with -0.0 == 0.0 (a key order).
KEY_SORT = """
HloModule sort_key_rows, entry_computation_layout={(f32[4,16]{1,0})->f32[4,16]{1,0}}

cmp {
  a = f32[] parameter(0)
  na = pred[] compare(a, a), direction=NE
  qnan = f32[] constant(nan)
  zero = f32[] constant(0)
  za = pred[] compare(a, zero), direction=EQ
  a0 = f32[] select(za, zero, a)
  ka = f32[] select(na, qnan, a0)
  b = f32[] parameter(1)
  nb = pred[] compare(b, b), direction=NE
  zb = pred[] compare(b, zero), direction=EQ
  b0 = f32[] select(zb, zero, b)
  kb = f32[] select(nb, qnan, b0)
  ROOT lt = pred[] compare(ka, kb), direction=LT, type=TOTALORDER
}

ENTRY main {
  x = f32[4,16]{1,0} parameter(0)
  ROOT s = f32[4,16]{1,0} sort(x), dimensions={1}, is_stable=true, to_apply=cmp
}
"""
write(f"{OUT}/key_sorts_call_the_runtime.hlo",
      f"""A stable sort by a 32-bit key along the minor dimension (jnp.sort's comparator: total
order, -0.0 equal to 0.0, NaN last) is one call of the runtime's sort (emitters/sort_rows.rs),
which computes the keys, radix-sorts and gathers: no key loop or gather loop is generated,
and a module of such sorts needs no machine code. Results stay XLA's.
{NOTE}
check-ir: call i32 @hlojit_rt_sort_rows(
check-ir-not: sort.key""",
      [x], run_hlo_on_xla_cpu(KEY_SORT, [x]), KEY_SORT)

# The same order along the major dimension: the runtime sorts contiguous rows only, so the
# kernel is generated (key loop, the runtime's radix sort, gather loop).
KEY_SORT_MAJOR = KEY_SORT.replace("sort_key_rows", "sort_key_columns").replace("dimensions={1}", "dimensions={0}")
write(f"{OUT}/key_sorts_get_lean_optimization.hlo",
      f"""A module whose only kernel is a generated stable sort by a key (jnp.sort's comparator,
along the major dimension, which the runtime's sort does not take) gets the lean LLVM
pipeline (backend/optimization.rs), not O3: its kernel is a key loop, the runtime's radix
sort and a gather loop, nothing to inline (O3's pipeline cost twice the lean one's
optimization time on sort_1m). Results stay XLA's.
{NOTE}
check-ir: sort.key
check-ir: !hlojit.optimization = !{{!{{{{[0-9]+}}}}}}
check-ir: !"loop kernels"
check-ir-not: !"full\"""",
      [x], run_hlo_on_xla_cpu(KEY_SORT_MAJOR, [x]), KEY_SORT_MAJOR)

# argsort, descending (GT on the canonical key), with the positions as a second operand.
# The comparator's key part is KEY_SORT's; it compares with GT and carries two more parameters.
KEY_CMP = KEY_SORT[KEY_SORT.index("cmp {"):KEY_SORT.index("  ROOT lt")]
ARGSORT_DESC = f"""
HloModule argsort_desc, entry_computation_layout={{(f32[4,16]{{1,0}}, s32[4,16]{{1,0}})->(f32[4,16]{{1,0}}, s32[4,16]{{1,0}})}}

{KEY_CMP}  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT gt = pred[] compare(ka, kb), direction=GT, type=TOTALORDER
}}

ENTRY main {{
  x = f32[4,16]{{1,0}} parameter(0)
  p = s32[4,16]{{1,0}} parameter(1)
  ROOT s = (f32[4,16]{{1,0}}, s32[4,16]{{1,0}}) sort(x, p), dimensions={{1}}, is_stable=true, to_apply=cmp
}}
"""
# Ties among the keys (and -0 beside +0) show the stability.
xt = x.copy()
xt[3, :8] = 0.5
xt[3, 8] = -0.0
xt[3, 9] = 0.0
positions = np.tile(np.arange(16, dtype=np.int32), (4, 1))
write(f"{OUT}/argsorts_descending_call_the_runtime.hlo",
      f"""jnp.argsort(x, descending=True) as a stable sort of (keys, positions) with a GT comparator on
the canonical key: one call of the runtime's sort, which carries the positions along; equal
keys (ties, -0 and +0) keep their order. Results stay XLA's.
{NOTE}
check-ir: call i32 @hlojit_rt_sort_rows(
check-ir-not: sort.key""",
      [xt, positions], run_hlo_on_xla_cpu(ARGSORT_DESC, [xt, positions]), ARGSORT_DESC)

# A comparator that is not a key order (by s32 key descending, then f32 value ascending): the
# runtime's merge sort calls the emitted comparator, which keeps the full pipeline.
CMP_SORT = """
HloModule sort_lex_rows, entry_computation_layout={(s32[4,16]{1,0}, f32[4,16]{1,0})->(s32[4,16]{1,0}, f32[4,16]{1,0})}

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
  k = s32[4,16]{1,0} parameter(0)
  v = f32[4,16]{1,0} parameter(1)
  ROOT s = (s32[4,16]{1,0}, f32[4,16]{1,0}) sort(k, v), dimensions={1}, is_stable=true, to_apply=cmp
}
"""
k = rng.integers(0, 4, size=(4, 16)).astype(np.int32)
v = rng.uniform(-2, 2, size=(4, 16)).astype(np.float32)
write(f"{OUT}/comparator_sorts_get_full_optimization.hlo",
      f"""A stable sort whose comparator is not a key order (s32 key descending, then f32 value
ascending) keeps LLVM's full O3 pipeline (backend/optimization.rs): the runtime's merge sort
calls the emitted comparator.
{NOTE}
check-ir: !hlojit.optimization = !{{!{{{{[0-9]+}}}}}}
check-ir: !"full"
check-ir-not: !"loop kernels\"""",
      [k, v], run_hlo_on_xla_cpu(CMP_SORT, [k, v]), CMP_SORT)
