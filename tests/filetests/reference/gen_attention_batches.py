"""Writes the file tests of dots whose batch group no single stride walks (attention's batch x
heads, dims 0 and 2 of [batch, seq, heads, dim]): the runtime's precompiled GEMM reads and
writes them where they lie (gemm/batch_walk.rs), f32 and bf16 operands; the generated GEMM of
a target without precompiled kernels too. XLA:CPU's outputs (jaxlib) are the expected values.
Usage: target/venv/bin/python tests/filetests/reference/gen_attention_batches.py tests/filetests"""
import os
import sys
import ml_dtypes
import numpy as np
sys.path.insert(0, os.path.dirname(__file__))
from lib import write, run_hlo_on_xla_cpu

ROOT = sys.argv[1]
OUT = f"{ROOT}/decisions/ir"
NOTE = "Expected values: XLA:CPU (jaxlib). Small integers: every product and sum is exact."
rng = np.random.default_rng(19)


def operands(dtype):
    values = lambda *shape: rng.integers(-3, 4, size=shape).astype(np.float32).astype(dtype)
    return [values(2, 24, 3, 16), values(2, 24, 3, 16), values(2, 3, 24, 24)]


# Scores Q K^T, context P V (also written with the heads between sequence and features, as
# [batch, seq, heads, dim]) and a gradient's Q^T P (A transposed): batch x heads is dims 0 and
# 2 of every [2,24,3,16] operand.
MODULE = """
HloModule NAME, entry_computation_layout={(T[2,24,3,16]{3,2,1,0}, T[2,24,3,16]{3,2,1,0}, T[2,3,24,24]{3,2,1,0})->(f32[2,3,24,24]{3,2,1,0}, f32[2,3,24,16]{3,2,1,0}, f32[2,3,16,24]{3,2,1,0}, f32[2,3,24,16]{3,1,2,0})}

ENTRY main {
  q = T[2,24,3,16]{3,2,1,0} parameter(0)
  k = T[2,24,3,16]{3,2,1,0} parameter(1)
  p = T[2,3,24,24]{3,2,1,0} parameter(2)
  scores = f32[2,3,24,24]{3,2,1,0} dot(q, k), lhs_batch_dims={0,2}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={3}
  context = f32[2,3,24,16]{3,2,1,0} dot(p, k), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={1}
  grad = f32[2,3,16,24]{3,2,1,0} dot(q, p), lhs_batch_dims={0,2}, lhs_contracting_dims={1}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  heads_minor = f32[2,3,24,16]{3,1,2,0} dot(p, q), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={1}
  ROOT t = (f32[2,3,24,24]{3,2,1,0}, f32[2,3,24,16]{3,2,1,0}, f32[2,3,16,24]{3,2,1,0}, f32[2,3,24,16]{3,1,2,0}) tuple(scores, context, grad, heads_minor)
}
"""


def module(name, ty):
    return MODULE.replace("NAME", name).replace("T[", f"{ty}[")


def calls(symbol):
    return "\n".join([f"check-ir: call i32 @{symbol}("] * 4)


f32 = operands(np.float32)
f32_module = module("attention_batches_f32", "f32")
f32_expected = run_hlo_on_xla_cpu(f32_module, f32)
write(f"{OUT}/attention_dots_call_the_precompiled_gemm.hlo",
      f"""Attention's dots, whose batch x heads group is dims 0 and 2 of [batch, seq, heads, dim]
operands (and of a result laid out so), call the runtime's precompiled kernels with a batch
index of two strides (gemm/batch_walk.rs) instead of generating them: the GEMM, and for the
gradient, which has 16 rows, the strip kernel (dot_strips.rs). No micro-kernel in the
module, the lean pipeline of loop kernels.
{NOTE}
cpu: znver4
check-ir-not: hlojit.ukernel
check-ir: call i32 @hlojit_rt_gemm_f32_avx512(
check-ir: call i32 @hlojit_rt_gemm_f32_avx512(
check-ir: call void @hlojit_rt_dot_strips_f32_avx512(
check-ir: call i32 @hlojit_rt_gemm_f32_avx512(
check-ir: !"loop kernels\"""",
      f32, f32_expected, f32_module)

bf16 = operands(ml_dtypes.bfloat16)
bf16_module = module("attention_batches_bf16", "bf16")
write(f"{OUT}/attention_bf16_dots_call_the_precompiled_gemm.hlo",
      f"""The same dots of bf16 operands with f32 results call the runtime's bf16 pair GEMM
(AVX512-BF16) with the same two-stride batches.
{NOTE}
cpu: znver4
check-ir-not: hlojit.ukernel
{calls("hlojit_rt_gemm_bf16_pairs_avx512")}
check-ir: !"loop kernels\"""",
      bf16, run_hlo_on_xla_cpu(bf16_module, bf16), bf16_module)

sse_module = module("attention_batches_sse", "f32")
write(f"{OUT}/attention_dots_generated_with_two_stride_batches.hlo",
      f"""For a target without precompiled GEMMs (x86-64's SSE2) the generated GEMM reads and
writes the same two-stride batches where they lie, as the runtime does: the scores' K (its
columns contiguous along k) and the two contexts' V go through the shared packers of strided
buffers, which operands generated element by element do not use; the gradient (16 rows)
is generated strips walking them too.
{NOTE}
cpu: x86-64
check-ir-not: hlojit_rt_gemm_
check-ir: define {{{{.*}}}}@hlojit.pack.f32.f32.f32.w8.Depth(
check-ir: define {{{{.*}}}}@hlojit.pack.f32.f32.f32.w8.Rows(
check-ir: dot.strip""",
      f32, f32_expected, sse_module)
