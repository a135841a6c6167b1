"""Writes the file test of a dot whose few result rows are its result's columns: a classifier's
weight gradient g^T h (10 classes) with the transpose after it folded into the dot, so the dot
itself is 272 x 10 in a {0,1} layout. The strip kernel computes it transposed (10 rows, h read
where it lies) instead of the packed GEMM packing h for ten columns. XLA:CPU's outputs (jaxlib)
are the expected values.
Usage: target/venv/bin/python tests/filetests/reference/gen_transposed_strips.py tests/filetests"""
import os
import sys
import numpy as np
sys.path.insert(0, os.path.dirname(__file__))
from lib import write, run_hlo_on_xla_cpu

ROOT = sys.argv[1]
rng = np.random.default_rng(29)
values = lambda *shape: rng.integers(-3, 4, size=shape).astype(np.float32)

# 272 columns (17 vectors of 16 lanes), 96 steps of contraction.
MODULE = """
HloModule transposed_strips, entry_computation_layout={(f32[96,10]{1,0}, f32[96,272]{1,0})->f32[272,10]{0,1}}

ENTRY main {
  g = f32[96,10]{1,0} parameter(0)
  h = f32[96,272]{1,0} parameter(1)
  dw = f32[10,272]{1,0} dot(g, h), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT t = f32[272,10]{0,1} transpose(dw), dimensions={1,0}
}
"""

args = [values(96, 10), values(96, 272)]
expected = run_hlo_on_xla_cpu(MODULE, args)
write(f"{ROOT}/decisions/ir/weight_gradient_few_columns_runs_as_strips.hlo",
      """A classifier's weight gradient g^T h (10 classes) whose transpose is folded into the dot
is a dot of 272 rows and 10 columns, laid out column by column. Computed transposed, its 10
rows are strips that read h where it lies; the packed GEMM packed all of h for ten columns
that fill no register tile, every tile an edge tile (1024 x 10 x 256: 0.07-0.10 ms against
0.03-0.05 ms as strips, two threads).
Expected values: XLA:CPU (jaxlib). Small integers: every product and sum is exact.
cpu: znver4
check-ir-not: hlojit_rt_gemm_
check-ir: call void @hlojit_rt_dot_strips_f32_avx512(""",
      args, expected, MODULE)
