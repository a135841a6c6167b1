"""Writes the file tests of the LLVM pipeline chosen for modules with dots
(backend/optimization.rs), with XLA:CPU's outputs (jaxlib) as expected values.
Usage: target/venv/bin/python tests/filetests/reference/gen_product_optimization.py tests/filetests"""
import os
import sys
import numpy as np
sys.path.insert(0, os.path.dirname(__file__))
from lib import write, run_hlo_on_xla_cpu

ROOT = sys.argv[1]
OUT = f"{ROOT}/decisions/ir"
NOTE = "Expected values: XLA:CPU (jaxlib)."
rng = np.random.default_rng(11)
x = rng.uniform(-1, 1, size=(48, 64)).astype(np.float32)
w = rng.uniform(-1, 1, size=(64, 40)).astype(np.float32)

DOT = """
HloModule dot_gemm_exp, entry_computation_layout={(f32[48,64]{1,0}, f32[64,40]{1,0})->f32[48,40]{1,0}}

ENTRY main {
  x = f32[48,64]{1,0} parameter(0)
  w = f32[64,40]{1,0} parameter(1)
  d = f32[48,40]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT e = f32[48,40]{1,0} exponential(d)
}
"""
expected = run_hlo_on_xla_cpu(DOT, [x, w])
write(f"{OUT}/dot_modules_calling_the_gemm_get_lean_optimization.hlo",
      f"""A module whose dot calls the runtime's precompiled GEMM (an AVX-512 target) gets the lean
LLVM pipeline of loop kernels (backend/optimization.rs): the dot's kernel only fills a
descriptor, and what else there is are loops. Results stay XLA's.
{NOTE}
cpu: znver4
check-ir: call i32 @hlojit_rt_gemm_f32_avx512(
check-ir: !hlojit.optimization = !{{!{{{{[0-9]+}}}}}}
check-ir: !"loop kernels"
check-ir-not: !"full\"""",
      [x, w], expected, DOT, tolerance="rtol=1e-5 atol=1e-6")
write(f"{OUT}/dot_modules_generating_the_gemm_get_full_optimization.hlo",
      f"""The same module for a target without a precompiled GEMM (x86-64's SSE2) generates the
GEMM's micro-kernel, packing and driver, which get LLVM's full O3 pipeline
(backend/optimization.rs). Results stay XLA's.
{NOTE}
cpu: x86-64
check-ir-not: hlojit_rt_gemm_
check-ir: !hlojit.optimization = !{{!{{{{[0-9]+}}}}}}
check-ir: !"full\"""",
      [x, w], expected, DOT.replace("dot_gemm_exp", "dot_gemm_exp_sse"), tolerance="rtol=1e-5 atol=1e-6")
