"""Executable serialization on the hlojit plugin, run by test_serialize.py in child processes
(JAX_PLATFORMS=hlojit): `fill DIR` and `hit DIR` run FUNCTIONS with JAX's persistent
compilation cache in DIR (the second process should load every executable from it);
`roundtrip DIR` serializes compiled functions with jax.experimental.serialize_executable and
loads them back. Each writes the outputs as DIR/<mode>_<function>_<k>.npy for the parent to
compare with XLA:CPU, counts cache hits and misses (jax.monitoring) into DIR/<mode>_events.json
and prints one JSON object: case name -> "ok" or why it failed.
"""

import json
import os
import sys

if __name__ == "__main__":
    os.environ["JAX_PLATFORMS"] = "hlojit"
    os.environ.pop("HLOJIT_DEVICE_COUNT", None)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402


def _inputs():
    rng = np.random.default_rng(7)
    f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    return {
        "elementwise": (f32(8, 16), f32(8, 16)),
        "matmul": (f32(64, 64), f32(64, 64)),
        "softmax": (f32(16, 128),),
        "scan": (f32(4),),
        "donated_update": (f32(32), f32(32)),
    }


def functions():
    """name -> (jitted function, inputs): the same in every process."""
    inputs = _inputs()
    fns = {
        "elementwise": jax.jit(lambda x, y: jnp.sin(x) * y + 1.0),
        # A module of one precompiled GEMM call: hlojit runs it without machine code.
        "matmul": jax.jit(lambda a, b: a @ b),
        "softmax": jax.jit(lambda x: jax.nn.softmax(x, axis=-1)),
        "scan": jax.jit(lambda x: jax.lax.fori_loop(0, 10, lambda i, c: c * 0.5 + jnp.sin(c), x)),
        "donated_update": jax.jit(lambda w, g: (w - 0.1 * g, jnp.sum(g * g)), donate_argnums=0),
    }
    return {name: (fns[name], inputs[name]) for name in fns}


def _save(out_dir, mode, name, outputs):
    for k, leaf in enumerate(jax.tree_util.tree_leaves(outputs)):
        np.save(os.path.join(out_dir, f"{mode}_{name}_{k}.npy"), np.asarray(leaf))


def _fresh(args):
    # Donation consumes the device buffers: every call gets its own.
    return [jnp.asarray(a) for a in args]


def main(mode, out_dir):
    events = {}
    jax.monitoring.register_event_listener(lambda event, **kw: events.__setitem__(event, events.get(event, 0) + 1))
    cases = []
    if mode in ("fill", "hit"):
        jax.config.update("jax_compilation_cache_dir", os.path.join(out_dir, "jax_cache"))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        for name, (fn, args) in functions().items():
            def case(fn=fn, args=args, name=name):
                _save(out_dir, mode, name, fn(*_fresh(args)))
            case.__name__ = name
            cases.append(case)
    else:
        from jax.experimental import serialize_executable as se

        for name, (fn, args) in functions().items():
            def case(fn=fn, args=args, name=name):
                compiled = fn.lower(*_fresh(args)).compile()
                payload, in_tree, out_tree = se.serialize(compiled)
                loaded = se.deserialize_and_load(payload, in_tree, out_tree)
                assert "HloModule" in loaded.as_text()
                _save(out_dir, "compiled", name, compiled(*_fresh(args)))
                _save(out_dir, mode, name, loaded(*_fresh(args)))
            case.__name__ = name
            cases.append(case)
    import subprocess_cases

    subprocess_cases.report(cases)
    with open(os.path.join(out_dir, f"{mode}_events.json"), "w") as f:
        json.dump(events, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
