# Scan-gradient workloads at several trip counts (T = 100, 400, 1600), in the layout of
# ../shared/perf, so that xla_reference.py and `hlojit bench` time them on the same inputs and
# show whether a loop's time per iteration is independent of its trip count:
#
#   target/venv/bin/python3 benches/scan_grad_scaling.py /tmp/scanT
#   target/venv/bin/python3 ../shared/perf/xla_reference.py --save-outputs /tmp/scanT.out \
#       /tmp/scanT/scan_grad_T100_32x256 /tmp/scanT/scan_grad_T400_32x256 /tmp/scanT/scan_grad_T1600_32x256
#   target/release/hlojit bench --root /tmp/scanT --check-dir /tmp/scanT.out
import json, os, sys
import jax, jax.numpy as jnp

def f(xs, c):
    def step(h, x):
        h = jnp.tanh(x * c + h * 0.5)
        return h, h
    h, hs = jax.lax.scan(step, jnp.zeros_like(c), xs)
    return jnp.sum(hs) + jnp.sum(h)

g = jax.grad(f, argnums=1)
root = sys.argv[1]
for T in (100, 400, 1600):
    name = f"scan_grad_T{T}_32x256"
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    xs = jax.ShapeDtypeStruct((T, 32, 256), jnp.float32)
    c = jax.ShapeDtypeStruct((32, 256), jnp.float32)
    lowered = jax.jit(g, keep_unused=True).lower(xs, c)
    open(os.path.join(d, "module.hlo"), "w").write(lowered.as_text(dialect="hlo"))
    open(os.path.join(d, "module.stablehlo.mlir"), "w").write(lowered.as_text())
    json.dump({"name": name, "description": f"grad of a {T}-step elementwise scan", "inputs": [
        {"dtype": "f32", "shape": [T, 32, 256]}, {"dtype": "f32", "shape": [32, 256]}],
        "flops": None, "bytes": T * 32 * 256 * 4 * 2}, open(os.path.join(d, "perf.json"), "w"))
