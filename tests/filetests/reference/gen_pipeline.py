"""Writes the file tests of the HLO optimization pipeline (tests/filetests/decisions/simplify):
each module runs on XLA:CPU through jaxlib, on inputs chosen to expose NaN, -0 and denormal
handling, and XLA's outputs become the `// expect:` lines, next to `// check:` lines that pin
what hlojit's passes decided.

Usage: target/venv/bin/python tests/filetests/reference/gen_pipeline.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from lib import run_hlo_on_xla_cpu, write  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "decisions", "simplify")


# The other generators import the runner from here.
run_xla = run_hlo_on_xla_cpu


# Values that tell arithmetic identities apart: -0, NaN, infinities and an f32 denormal (which
# XLA:CPU's arithmetic flushes to zero, but an identity XLA removes passes through unchanged).
SPECIAL = np.array([-0.0, np.nan, np.inf, -np.inf, 1e-40, -2.5, 3.0, 0.0], np.float32)

CASES = {
    "cse_merges_equal_values": (
        """Two equal exponentials (as JAX emits when a value is used in two places) are computed
once; so are the two equal negations after them, and the result tuple holds the one value twice.
check: exponential(
check-not: exponential(
check: ROOT %t = (f32[8], f32[8]) tuple(%n1.fusion1, %n1.fusion1)""",
        [SPECIAL],
        """HloModule cse_merges_equal_values
ENTRY main {
  x = f32[8] parameter(0)
  e1 = f32[8] exponential(x)
  e2 = f32[8] exponential(x)
  s = f32[8] add(e1, e2)
  n1 = f32[8] negate(s)
  n2 = f32[8] negate(s)
  ROOT t = (f32[8], f32[8]) tuple(n1, n2)
}""",
    ),
    "dce_drops_dead_code_and_computations": (
        """An unused instruction and a computation nothing calls are removed (side effects, which
stay, are in dce.rs's unit tests: XLA:CPU blocks on an outfeed nobody reads).
check-not: %unused_max
check-not: %dead""",
        [SPECIAL],
        """HloModule dce_drops_dead_code_and_computations
unused_max { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT m = f32[] maximum(a, b) }
ENTRY main {
  x = f32[8] parameter(0)
  dead = f32[8] exponential(x)
  ROOT y = f32[8] negate(x)
}""",
    ),
    "identities_removed": (
        """x * 1 + 0 is x as XLA computes it: -0 stays -0 and the denormal 1e-40 is not flushed
(XLA's simplifier removes both ops); x * 0 stays a multiply for floats (NaN * 0 is NaN,
-2.5 * 0 is -0). Transposes, reshapes and slices in a row become one each.
check: %fused_computation
check: transpose(%param_0), dimensions={2,0,1}
check-next: reshape(
check-next: slice({{.*}}), slice={[1:5:3], [1:4:2]}
check-not: add(
check: multiply(%param_0, %zeros)
check-not: add(
check: ROOT %t = (f32[8], f32[8], f32[2,2]) tuple(%x,""",
        [SPECIAL, np.arange(24, dtype=np.float32).reshape(2, 3, 4)],
        """HloModule identities_removed
ENTRY main {
  x = f32[8] parameter(0)
  one = f32[] constant(1)
  ones = f32[8] broadcast(one), dimensions={}
  zero = f32[] constant(0)
  zeros = f32[8] broadcast(zero), dimensions={}
  m1 = f32[8] multiply(x, ones)
  a0 = f32[8] add(m1, zeros)
  c = f32[8] convert(a0)
  m0 = f32[8] multiply(x, zeros)
  y = f32[2,3,4] parameter(1)
  t1 = f32[3,4,2] transpose(y), dimensions={1,2,0}
  t2 = f32[4,2,3] transpose(t1), dimensions={1,2,0}
  r1 = f32[24] reshape(t2)
  r2 = f32[6,4] reshape(r1)
  sl1 = f32[5,4] slice(r2), slice={[1:6], [0:4]}
  sl2 = f32[2,2] slice(sl1), slice={[0:5:3], [1:4:2]}
  ROOT t = (f32[8], f32[8], f32[2,2]) tuple(c, m0, sl2)
}""",
    ),
    "transpose_folded_into_dot": (
        """Attention scores as JAX lowers them: q and k, [batch, seq, heads, dim], transposed to
[batch, heads, seq, dim] for a batched dot. The dot reads q and k where they lie, batch
dimensions {0,2}: no transposed copy is written. A transposed matrix becomes a contracting
dimension the same way; one whose free dimensions would swap keeps its transpose.
check: %s = f32[1,2,5,5] dot(%q, %k), lhs_batch_dims={0,2}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={3}
check: %m = f32[4,3] dot(%a, %b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
check: transpose(
check: dot(""",
        [np.linspace(-1, 1, 40, dtype=np.float32).reshape(1, 5, 2, 4),
         np.linspace(2, -1, 40, dtype=np.float32).reshape(1, 5, 2, 4),
         np.linspace(-3, 3, 32, dtype=np.float32).reshape(8, 4),
         np.linspace(1, 2, 24, dtype=np.float32).reshape(8, 3),
         np.linspace(-2, 2, 24, dtype=np.float32).reshape(2, 3, 4),
         np.linspace(0, 1, 20, dtype=np.float32).reshape(4, 5)],
        """HloModule transpose_folded_into_dot
ENTRY main {
  q = f32[1,5,2,4] parameter(0)
  k = f32[1,5,2,4] parameter(1)
  qt = f32[1,2,5,4] transpose(q), dimensions={0,2,1,3}
  kt = f32[1,2,5,4] transpose(k), dimensions={0,2,1,3}
  s = f32[1,2,5,5] dot(qt, kt), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}
  a = f32[8,4] parameter(2)
  b = f32[8,3] parameter(3)
  at = f32[4,8] transpose(a), dimensions={1,0}
  m = f32[4,3] dot(at, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  c = f32[2,3,4] parameter(4)
  d = f32[4,5] parameter(5)
  ct = f32[3,2,4] transpose(c), dimensions={1,0,2}
  n = f32[3,2,5] dot(ct, d), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  ROOT t = (f32[1,2,5,5], f32[4,3], f32[3,2,5]) tuple(s, m, n)
}""",
        # XLA's GEMMs sum in another order: results agree to rounding, not bitwise.
        "rtol=1e-6 atol=1e-6",
    ),
    "transposed_dot_result_swaps_operands": (
        """A weight gradient as JAX lowers the backward pass: dW = dot(dy, x) contracting the batch,
transposed to the weight's [in, out] for the update. The transpose becomes the dot with its
operands swapped (XLA's simplifier does the same), so the GEMM writes the result where the
update reads it, row by row. The batched form keeps its batch dimension in front; a transpose
that moves the batch dimension stays.
check: %dw = f32[16,40] dot(%x, %dy), lhs_contracting_dims={0}, rhs_contracting_dims={0}
check: %bt = f32[2,5,3] dot(%q, %p), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={2}
check: transpose(""",
        [np.linspace(-1, 1, 32 * 40, dtype=np.float32).reshape(32, 40),
         np.linspace(2, -1, 32 * 16, dtype=np.float32).reshape(32, 16),
         np.linspace(-3, 3, 16 * 40, dtype=np.float32).reshape(16, 40),
         np.linspace(-2, 2, 24, dtype=np.float32).reshape(2, 3, 4),
         np.linspace(0, 1, 40, dtype=np.float32).reshape(2, 4, 5),
         np.linspace(1, 2, 24, dtype=np.float32).reshape(2, 3, 4)],
        """HloModule transposed_dot_result_swaps_operands
ENTRY main {
  dy = f32[32,40] parameter(0)
  x = f32[32,16] parameter(1)
  w = f32[16,40] parameter(2)
  g = f32[40,16] dot(dy, x), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  dw = f32[16,40] transpose(g), dimensions={1,0}
  lr = f32[] constant(0.01)
  lrb = f32[16,40] broadcast(lr), dimensions={}
  step = f32[16,40] multiply(dw, lrb)
  nw = f32[16,40] subtract(w, step)
  p = f32[2,3,4] parameter(3)
  q = f32[2,4,5] parameter(4)
  b = f32[2,3,5] dot(p, q), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  bt = f32[2,5,3] transpose(b), dimensions={0,2,1}
  r = f32[2,3,4] parameter(5)
  c = f32[2,3,3] dot(p, r), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}
  ct = f32[3,2,3] transpose(c), dimensions={1,0,2}
  ROOT t = (f32[16,40], f32[2,5,3], f32[3,2,3]) tuple(nw, bt, ct)
}""",
        # XLA's GEMMs sum in another order: results agree to rounding, not bitwise.
        "rtol=1e-5 atol=1e-5",
    ),
}


def main():
    only = sys.argv[1:]
    for name, (comment, inputs, text, *tolerance) in CASES.items():
        if only and name not in only:
            continue
        outs = run_xla(text, inputs)
        write(os.path.join(OUT, name + ".hlo"), comment, inputs, outs, text, *tolerance)
        print("wrote", name)


if __name__ == "__main__":
    main()
