"""Writes StableHLO test cases with today's jax (not in the corpus): jax.export of a function
mixing control flow, a custom reduction, gather, a CHLO op and a scalar-predicate select; the
module as jax.export writes it (text of `mlir_module()` and the serialized artifact), inputs
and jax's own outputs on XLA:CPU. Run with the project's venv: target/venv/bin/python3."""
import json, os, sys
import numpy as np
import jax, jax.numpy as jnp
from jax import export

def f(x, idx, k):
    def body(i, c):
        return c * 0.5 + jnp.sin(x) * i
    y = jax.lax.fori_loop(0, 3, body, x)
    z = jnp.take(y, idx, axis=0)
    w = jax.lax.cond(k > 0, lambda a: jnp.tanh(a), lambda a: jax.scipy.special.erfinv(a * 0.1), z)
    s = jnp.where(k > 1, w, -w)
    return s, jnp.argmax(y, axis=1), jnp.cumsum(y, axis=0)

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases", "export_roundtrip_mixed")
os.makedirs(here, exist_ok=True)
rng = np.random.default_rng(11)
args = (rng.standard_normal((5, 6)).astype(np.float32), np.array([4, 0, 2], np.int32), np.int32(2))
exp = export.export(jax.jit(f, keep_unused=True))(*args)
with open(os.path.join(here, "module.stablehlo.mlir"), "w") as fh:
    fh.write(exp.mlir_module())
with open(os.path.join(here, "module.stablehlo.mlirbc"), "wb") as fh:
    fh.write(exp.mlir_module_serialized)
try:  # needs the `flatbuffers` package
    with open(os.path.join(here, "module.jax_export"), "wb") as fh:
        fh.write(exp.serialize())
except ImportError as e:
    os.remove(os.path.join(here, "module.jax_export"))
    print("no module.jax_export:", e, file=sys.stderr)
outs = jax.tree_util.tree_leaves(exp.call(*args))
inputs, outputs = [], []
for i, a in enumerate(args):
    a = np.asarray(a)
    np.save(os.path.join(here, f"in{i}.npy"), a)
    inputs.append({"file": f"in{i}.npy", "dtype": {"float32": "f32", "int32": "s32"}[str(a.dtype)], "shape": list(a.shape)})
for j, o in enumerate(outs):
    o = np.asarray(o)
    np.save(os.path.join(here, f"out{j}.npy"), o)
    outputs.append({"file": f"out{j}.npy", "dtype": {"float32": "f32", "int32": "s32"}[str(o.dtype)], "shape": list(o.shape)})
case = {"name": "export_roundtrip_mixed", "group": "export", "description": f"jax.export with jax {jax.__version__}: fori_loop, take, cond with erf_inv, where on a scalar predicate, argmax, cumsum",
        "hlo_opcodes": [], "inputs": inputs, "outputs": outputs, "rtol": 1e-5, "atol": 1e-6, "exact": False, "x64": False}
with open(os.path.join(here, "case.json"), "w") as fh:
    json.dump(case, fh, indent=1)
print("wrote", here, "jax", jax.__version__)
