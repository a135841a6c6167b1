"""Writes f8 logistic and tan file tests with XLA:CPU's values, all 256 bit patterns per type:

- stablehlo/fold_f8.mlir: of constants, which XLA's StableHLO-to-HLO translation folds in
  double and rounds once to the f8 type (an overflow is NaN or inf as the format has it);
- elementwise/logistic_f8_xla_rounding.hlo: of a parameter, which XLA expands into
  exp / add / divide of the f8 type, each result rounded to f8.
Results are compared as bits (bitcast to u8).
Usage: target/venv/bin/python tests/filetests/reference/gen_f8_logistic.py"""
import os
import sys

import ml_dtypes
import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lib  # noqa: E402
from gen_stablehlo_fold import hex_dense, xla  # noqa: E402

TYPES = [("f8E4M3FN", "f8e4m3fn", ml_dtypes.float8_e4m3fn), ("f8E5M2", "f8e5m2", ml_dtypes.float8_e5m2),
         ("f8E4M3B11FNUZ", "f8e4m3b11fnuz", ml_dtypes.float8_e4m3b11fnuz), ("f8E3M4", "f8e3m4", ml_dtypes.float8_e3m4)]
bits = np.arange(256, dtype=np.uint8)

# Constants (StableHLO).
lines, rets, rtypes, expects = [], [], [], []
for k, (mt, _, dt) in enumerate(TYPES):
    t, u = f"tensor<256x{mt}>", "tensor<256xui8>"
    lines.append(f"    %c{k} = stablehlo.constant dense<{hex_dense(bits.view(dt))}> : {t}")
    for op in ("logistic", "tan"):
        lines.append(f"    %{op}{k} = stablehlo.{op} %c{k} : {t}")
        lines.append(f"    %{op}{k}_bits = stablehlo.bitcast_convert %{op}{k} : ({t}) -> {u}")
        rets.append(f"%{op}{k}_bits")
        rtypes.append(u)
text = (f"module @fold_f8 {{\n  func.func public @main() -> ({', '.join(rtypes)}) {{\n" + "\n".join(lines)
        + f"\n    return {', '.join(rets)} : {', '.join(rtypes)}\n  }}\n}}\n")
outs = xla(text)
head = ["// logistic and tan of f8 constants (all 256 values of e4m3fn, e5m2, e4m3b11fnuz, e3m4), which",
        "// XLA's StableHLO-to-HLO translation folds in double and rounds once to the type (tan(11) overflows",
        "// to NaN or -inf). Bits (u8). Expected: XLA:CPU (jaxlib 0.10.2); tests/filetests/reference/gen_f8_logistic.py."]
head += [lib.directive("expect", np.asarray(o)) for o in outs]
open(os.path.join(HERE, "..", "stablehlo", "fold_f8.mlir"), "w").write("\n".join(head) + "\n" + text)

# Parameters (HLO).
params, body, roots, inputs, expects = [], [], [], [], []
shapes = []
for k, (_, ht, dt) in enumerate(TYPES):
    # NaN inputs are left out: which NaN XLA's f8 conversions produce is not yet reproduced.
    x = bits[~np.isnan(bits.view(dt).astype(np.float32))]
    n = x.size
    params.append(f"  p{k} = u8[{n}] parameter({k})")
    body += [f"  x{k} = {ht}[{n}] bitcast-convert(p{k})", f"  l{k} = {ht}[{n}] logistic(x{k})",
             f"  b{k} = u8[{n}] bitcast-convert(l{k})"]
    roots.append(f"b{k}")
    shapes.append(f"u8[{n}]")
    inputs.append(x)
    expects.append(np.asarray(jax.jit(jax.nn.sigmoid)(x.view(dt))).view(np.uint8))
module = ("HloModule logistic_f8_xla_rounding\n\nENTRY main {\n" + "\n".join(params + body)
          + f"\n  ROOT t = ({', '.join(shapes)}) tuple({', '.join(roots)})\n}}\n")
lib.write(os.path.join(HERE, "..", "elementwise", "logistic_f8_xla_rounding.hlo"),
          """logistic of f8 values (all non-NaN of e4m3fn, e5m2, e4m3b11fnuz, e3m4) as XLA:CPU computes it: its
LogisticExpander makes it 1 / (1 + exp(-x)) in the element type, so exp, the sum and the quotient
are each rounded to f8 (computing in f32 and rounding once differs for 20-89 of 256 values per
type). Bits (u8). Expected: jax.jit on XLA:CPU; tests/filetests/reference/gen_f8_logistic.py.""",
          inputs, expects, module)
