"""Writes the file tests of dots with at most 16 result rows whose batch group no single stride
walks (attention's batch x heads, dims 0 and 2 of [batch, seq, heads, dim]): a decoding step's
or a short chunk's context P V, the strip kernel reading V (and a [batch, seq, heads, kv] A)
where it lies with two batch strides; the runtime's kernel on AVX-512, the generated strips
on a target without it. XLA:CPU's outputs (jaxlib) are the expected values.
Usage: target/venv/bin/python tests/filetests/reference/gen_attention_strips.py tests/filetests"""
import os
import sys
import numpy as np
sys.path.insert(0, os.path.dirname(__file__))
from lib import write, run_hlo_on_xla_cpu

ROOT = sys.argv[1]
OUT = f"{ROOT}/decisions/ir"
NOTE = "Expected values: XLA:CPU (jaxlib). Small integers: every product and sum is exact."
rng = np.random.default_rng(23)
values = lambda *shape: rng.integers(-3, 4, size=shape).astype(np.float32)

# Context of one decoding step (1 row), of 4 rows, and of 5 rows whose A keeps the heads
# between rows and contraction too: batch x heads is dims 0 and 2 of V f32[2,48,3,56] (56
# columns: a tail on 16 lanes). The step has too few multiply-adds for a call
# (dot_strips.rs's PRECOMPILED_MIN_MACS): its strips are generated on every target.
MODULE = """
HloModule NAME, entry_computation_layout={(f32[2,3,1,48]{3,2,1,0}, f32[2,3,4,48]{3,2,1,0}, f32[2,5,3,48]{3,2,1,0}, f32[2,48,3,56]{3,2,1,0})->(f32[2,3,1,56]{3,2,1,0}, f32[2,3,4,56]{3,2,1,0}, f32[2,3,5,56]{3,2,1,0})}

ENTRY main {
  p1 = f32[2,3,1,48]{3,2,1,0} parameter(0)
  p4 = f32[2,3,4,48]{3,2,1,0} parameter(1)
  a5 = f32[2,5,3,48]{3,2,1,0} parameter(2)
  v = f32[2,48,3,56]{3,2,1,0} parameter(3)
  c1 = f32[2,3,1,56]{3,2,1,0} dot(p1, v), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={1}
  c4 = f32[2,3,4,56]{3,2,1,0} dot(p4, v), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={1}
  c5 = f32[2,3,5,56]{3,2,1,0} dot(a5, v), lhs_batch_dims={0,2}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={1}
  ROOT t = (f32[2,3,1,56]{3,2,1,0}, f32[2,3,4,56]{3,2,1,0}, f32[2,3,5,56]{3,2,1,0}) tuple(c1, c4, c5)
}
"""

args = [values(2, 3, 1, 48), values(2, 3, 4, 48), values(2, 5, 3, 48), values(2, 48, 3, 56)]
module = MODULE.replace("NAME", "attention_strips")
expected = run_hlo_on_xla_cpu(module, args)
write(f"{OUT}/attention_few_rows_call_the_strip_kernel.hlo",
      f"""Attention's context dots with few rows, whose batch x heads group is dims 0 and 2 of V
[batch, seq, heads, dim] (and of A in the last one), are strips with a batch index of two
strides (gemm/batch_walk.rs), reading V where it lies, instead of the packed GEMM: the two
larger ones call the runtime's strip kernel.
{NOTE}
cpu: znver4
check-ir-not: hlojit_rt_gemm_
check-ir: dot.strip
check-ir: call void @hlojit_rt_dot_strips_f32_avx512(
check-ir: call void @hlojit_rt_dot_strips_f32_avx512(""",
      args, expected, module)
write(f"{OUT}/attention_few_rows_generated_strips.hlo",
      f"""For a target without the runtime's strip kernels (x86-64's SSE2) the generated strips
walk the same two-stride batches.
{NOTE}
cpu: x86-64
check-ir-not: hlojit_rt_dot_strips
check-ir-not: hlojit_rt_gemm_
check-ir: dot.strip""",
      args, expected, module.replace("attention_strips", "attention_strips_sse"))
