"""Writes the file tests of tests/filetests/jax_suite/: small modules for the classes of
difference that JAX's own test suite found between hlojit and XLA:CPU (`cargo xtask jax-suite`).
Expected values are XLA:CPU's, computed here through jaxlib.
Usage: target/venv/bin/python3 tests/filetests/reference/gen_jax_suite.py tests/filetests"""
import os
import sys
import numpy as np
sys.path.insert(0, os.path.dirname(__file__))
from lib import write

import jax
jax.config.update("jax_enable_x64", True)
from jax._src.lib import xla_client

ROOT = sys.argv[1]
os.makedirs(f"{ROOT}/jax_suite", exist_ok=True)
NOTE = "Expected values: XLA:CPU through jaxlib (tests/filetests/reference/gen_jax_suite.py)."


def xla_run(text, inputs):
    """Compiles and runs HLO text on XLA:CPU; returns the result leaves."""
    mod = xla_client.hlo.hlo_module_from_text(text)
    mlir = xla_client._xla.mlir.hlo_to_stablehlo(mod.as_serialized_hlo_module_proto())
    dev = jax.devices("cpu")[0]
    exe = dev.client.compile_and_load(mlir, xla_client.DeviceList((dev,)), xla_client.CompileOptions())
    res = exe.execute_sharded([jax.device_put(a, dev) for a in inputs]).disassemble_into_single_device_arrays()
    return [np.asarray(r[0]) for r in res]


def case(name, comment, inputs, module, tolerance=None):
    inputs = [np.asarray(a) for a in inputs]
    write(f"{ROOT}/jax_suite/{name}.hlo", comment + "\n" + NOTE, inputs, xla_run(module, inputs), module, tolerance)


# --- a * b + c is one fused multiply-add on XLA:CPU (LLVM's AllowFPOpFusion=Fast): rounded once.
a = np.array([1 + 2**-12, 2e19, -3e19, 1.5], np.float32)
c = np.array([-(1 + 2**-11), -1e38, 2e38, 0.25], np.float32)
a64 = np.array([1 + 2**-30, 1e200, 3.0], np.float64)
c64 = np.array([-(1 + 2**-29), -1e308, 0.5], np.float64)
case("fused_multiply_add", """a * b + c as XLA:CPU computes it: one fused multiply-add where the CPU has FMA (XLA's
LLVM target options allow FP-op fusion), so the product is not rounded on its own: (1+2^-12)^2
- (1+2^-11) is 2^-24, not 0, and 2e19 * 2e19 - 1e38 is finite, not inf. JAX's suite found
this as infinities of the opposite sign in hyp2f1's derivatives. (Assumes a CPU with FMA, as
XLA's own results do.)""", [a, a, c, a64, a64, c64], """
HloModule fma, entry_computation_layout={(f32[4]{0}, f32[4]{0}, f32[4]{0}, f64[3]{0}, f64[3]{0}, f64[3]{0})->(f32[4]{0}, f64[3]{0})}

ENTRY main {
  a = f32[4]{0} parameter(0)
  b = f32[4]{0} parameter(1)
  c = f32[4]{0} parameter(2)
  m = f32[4]{0} multiply(a, b)
  s = f32[4]{0} add(m, c)
  x = f64[3]{0} parameter(3)
  y = f64[3]{0} parameter(4)
  z = f64[3]{0} parameter(5)
  m64 = f64[3]{0} multiply(x, y)
  r = f64[3]{0} add(m64, z)
  ROOT t = (f32[4]{0}, f64[3]{0}) tuple(s, r)
}""")
