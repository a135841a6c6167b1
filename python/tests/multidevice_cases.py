"""pmap and shard_map over 4 devices on hlojit and on XLA:CPU (4 forced host devices), in one
process. Run by test_multidevice.py in a subprocess: the device counts must be set before JAX
starts, which the other test files in the same pytest process have done already. Prints one JSON
object: case name -> "ok" or the reason it failed.
"""

import os

import subprocess_cases

os.environ["JAX_PLATFORMS"] = "cpu,hlojit"
os.environ["HLOJIT_DEVICE_COUNT"] = "4"
os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

RNG = np.random.default_rng(1)
X = RNG.standard_normal((4, 8)).astype(np.float32)
W = RNG.standard_normal((4, 8)).astype(np.float32)


def close(got, want):
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-6)


def on_both(run):
    """`run(devices)` on hlojit's 4 devices and on XLA:CPU's, results compared."""
    close(run(jax.devices("hlojit")[:4]), run(jax.devices("cpu")[:4]))


def pmap_psum_axis_index():
    f = lambda v: jax.lax.psum(v, "i") * v + jax.lax.axis_index("i")
    on_both(lambda d: jax.pmap(f, axis_name="i", devices=d)(X))


def pmap_collectives():
    def f(v):
        perm = [(j, (j + 1) % 4) for j in range(4)]
        return (
            jax.lax.all_gather(v, "i"),
            jax.lax.ppermute(v, "i", perm),
            jax.lax.pmax(v, "i"),
            jax.lax.psum_scatter(v, "i", tiled=True),
            jax.lax.all_to_all(v.reshape(4, 2), "i", 0, 0),
        )

    on_both(lambda d: jax.pmap(f, axis_name="i", devices=d)(X))


def all_to_all_across_dimensions():
    # Split along one dimension, concatenate along another (both orders), as XLA's builder
    # does it around HLO's single-dimension all-to-all.
    def f(v):
        m = v.reshape(4, 2)
        return jax.lax.all_to_all(m, "i", 0, 1), jax.lax.all_to_all(m.T, "i", 1, 0)

    on_both(lambda d: jax.pmap(f, axis_name="i", devices=d)(X))


def pmap_grad():
    loss = lambda w, x: jax.lax.psum(jnp.sum(jnp.tanh(x * w) ** 2), "i")
    on_both(lambda d: jax.pmap(jax.grad(loss), axis_name="i", devices=d)(W, X))


def _mesh(devices, shape, names):
    return Mesh(np.array(devices).reshape(shape), names)


def shard_map_1d():
    def run(d):
        mesh = _mesh(d, (4,), ("x",))
        f = jax.shard_map(lambda a: jax.lax.psum(a * a, "x") + a, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
        # Output shardings given: JAX reads unspecified ones from the compiled HLO module,
        # which the plugin cannot hand over yet (PJRT_Executable_OptimizedProgram is HLO text).
        return jax.jit(f, out_shardings=NamedSharding(mesh, P("x")))(jax.device_put(X, NamedSharding(mesh, P("x"))))

    on_both(run)


def shard_map_in_a_nested_jit():
    # The manual computation lands in a function @main calls, twice.
    def run(d):
        mesh = _mesh(d, (4,), ("x",))
        inner = jax.jit(jax.shard_map(lambda a: jax.lax.psum(a * 2, "x") - a, mesh=mesh, in_specs=P("x"), out_specs=P("x")))
        outer = jax.jit(lambda a: inner(inner(a)), out_shardings=NamedSharding(mesh, P("x")))
        return outer(jax.device_put(X, NamedSharding(mesh, P("x"))))

    on_both(run)


def shard_map_2d_replicated_output():
    def run(d):
        mesh = _mesh(d, (2, 2), ("x", "y"))
        body = lambda a: jax.lax.psum(jnp.sum(a, axis=0, keepdims=True), ("x", "y")) - jax.lax.pmax(a[:1], ("x", "y"))
        f = jax.shard_map(body, mesh=mesh, in_specs=P("x", "y"), out_specs=P())
        return jax.jit(f, out_shardings=NamedSharding(mesh, P()))(jax.device_put(X, NamedSharding(mesh, P("x", "y"))))

    on_both(run)


def _expect_refusal(run):
    run(jax.devices("cpu")[:4])  # XLA partitions it
    try:
        run(jax.devices("hlojit")[:4])
    except Exception as e:  # noqa: BLE001 - any JAX error type; the message is what counts
        assert "does not partition sharded programs" in str(e), str(e)
        return
    raise AssertionError("hlojit ran a program that needs SPMD partitioning")


def refuses_sharded_jit():
    def run(d):
        mesh = _mesh(d, (4,), ("x",))
        return jax.jit(lambda a: jnp.sin(a).sum(axis=0))(jax.device_put(X, NamedSharding(mesh, P("x"))))

    _expect_refusal(run)


def refuses_partially_manual_shard_map():
    def run(d):
        mesh = _mesh(d, (2, 2), ("x", "y"))
        f = jax.shard_map(lambda a: jax.lax.psum(a, "x"), mesh=mesh, in_specs=P("x"), out_specs=P(), axis_names={"x"})
        return jax.jit(f)(jax.device_put(X, NamedSharding(mesh, P("x"))))

    _expect_refusal(run)


CASES = [pmap_psum_axis_index, pmap_collectives, all_to_all_across_dimensions, pmap_grad, shard_map_1d, shard_map_in_a_nested_jit, shard_map_2d_replicated_output,
         refuses_sharded_jit, refuses_partially_manual_shard_map]

if __name__ == "__main__":
    subprocess_cases.report(CASES)
