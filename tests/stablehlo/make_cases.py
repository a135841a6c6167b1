"""Writes StableHLO test cases with today's jax (not in the corpus): jax.export of a function
mixing control flow, a custom reduction, gather, a CHLO op and a scalar-predicate select, and
of a function exported for two platforms (cuda, cpu: the module takes the platform index as a
first argument); each module as jax.export writes it (text of `mlir_module()`, the serialized
artifact, `serialize()`), inputs and jax's own outputs on XLA:CPU (`exp.call`).

Run with the project's venv: target/venv/bin/python3 make_cases.py [OUT_DIR] (default: the
checked-in cases next to this file; tests/harness.rs also runs it into a fresh directory at
test time, so today's jax is what is tested)."""
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

def g(x, y):
    return jnp.sin(x) * 2 + y, jnp.sum(x, axis=0)

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases")
rng = np.random.default_rng(11)
args_f = (rng.standard_normal((5, 6)).astype(np.float32), np.array([4, 0, 2], np.int32), np.int32(2))
args_g = (rng.standard_normal((3, 4)).astype(np.float32), np.float32(0.25))

def write_case(name, description, fn, args, platforms=None):
    here = os.path.join(root, name)
    os.makedirs(here, exist_ok=True)
    exp = export.export(jax.jit(fn, keep_unused=True), platforms=platforms)(*args)
    # A multi-platform module takes the platform's index as an argument; only the jax.export
    # file says which index is cpu, so that case has no text or artifact file.
    if platforms is None:
        with open(os.path.join(here, "module.stablehlo.mlir"), "w") as fh:
            fh.write(exp.mlir_module())
        with open(os.path.join(here, "module.stablehlo.mlirbc"), "wb") as fh:
            fh.write(exp.mlir_module_serialized)
    with open(os.path.join(here, "module.jax_export"), "wb") as fh:  # needs `flatbuffers`
        fh.write(exp.serialize())
    outs = jax.tree_util.tree_leaves(exp.call(*args))
    write_data(here, name, description, args, outs)

def write_data(here, name, description, args, outs):
    inputs, outputs = [], []
    for i, a in enumerate(args):
        a = np.asarray(a)
        np.save(os.path.join(here, f"in{i}.npy"), a)
        inputs.append({"file": f"in{i}.npy", "dtype": {"float32": "f32", "int32": "s32"}[str(a.dtype)], "shape": list(a.shape)})
    for j, o in enumerate(outs):
        o = np.asarray(o)
        np.save(os.path.join(here, f"out{j}.npy"), o)
        outputs.append({"file": f"out{j}.npy", "dtype": {"float32": "f32", "int32": "s32"}[str(o.dtype)], "shape": list(o.shape)})
    case = {"name": name, "group": "export", "description": f"jax.export with jax {jax.__version__}: {description}",
            "hlo_opcodes": [], "inputs": inputs, "outputs": outputs, "rtol": 1e-5, "atol": 1e-6, "exact": False, "x64": False}
    with open(os.path.join(here, "case.json"), "w") as fh:
        json.dump(case, fh, indent=1)
    print("wrote", here, "jax", jax.__version__)

write_case("export_roundtrip_mixed", "fori_loop, take, cond with erf_inv, where on a scalar predicate, argmax, cumsum", f, args_f)
write_case("export_two_platforms", "exported for cuda and cpu (a platform-index first argument), sine, broadcast, reduce", g, args_g, platforms=["cuda", "cpu"])
