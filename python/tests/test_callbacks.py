"""Host callbacks and FFI targets registered from Python, on hlojit and on XLA:CPU.

JAX's callbacks place their inputs on the `cpu` backend (pure_callback_impl and friends), so
both backends live in this process, as in test_jax.py: JAX_PLATFORMS=cpu,hlojit.
"""

import os

os.environ["JAX_PLATFORMS"] = "cpu,hlojit"
os.environ.setdefault("HLOJIT_DEVICE_COUNT", "2")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.experimental import io_callback  # noqa: E402

X = np.linspace(-2.0, 3.0, 6, dtype=np.float32)


def _on(platform, f, *args):
    device = jax.devices(platform)[0]
    return jax.jit(f)(*[jax.device_put(a, device) for a in args])


def _both(f, *args):
    got, want = _on("hlojit", f, *args), _on("cpu", f, *args)
    for g in jax.tree_util.tree_leaves(got):
        assert g.devices() == {jax.devices("hlojit")[0]}
    return got, want


def test_debug_print_prints_the_values(capfd):
    def f(x):
        jax.debug.print("x={x} sum={s}", x=x, s=x.sum())
        return x * 2

    got, want = _both(f, X)
    jax.effects_barrier()
    out = capfd.readouterr().out.splitlines()
    printed = [line for line in out if line.startswith("x=")]
    # The same line from each backend.
    assert len(printed) == 2 and printed[0] == printed[1], out
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_pure_callback_results_flow_back():
    def f(x):
        y = jax.pure_callback(lambda a: np.sinh(a) + 1, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
        return jnp.cos(y) * x

    got, want = _both(f, X)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_callback_returning_a_transposed_array_and_several_results():
    # The callback's result is not in row-major order: the handler lays it out as the program
    # expects.
    def f(x):
        m = x.reshape(3, 2)
        t, s = jax.pure_callback(
            lambda a: ((a * 2).T, np.int32(a.size)),
            (jax.ShapeDtypeStruct((2, 3), m.dtype), jax.ShapeDtypeStruct((), jnp.int32)),
            m,
        )
        return t + 1, s

    got, want = _both(f, X)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    np.testing.assert_array_equal(np.asarray(got[0]), X.reshape(3, 2).T * 2 + 1)


def test_ordered_io_callback_sees_every_iteration():
    seen = {"cpu": [], "hlojit": []}

    def run(platform):
        def log(i):
            seen[platform].append(int(i))
            return np.int32(i * i)

        def body(i, acc):
            return acc + io_callback(log, jax.ShapeDtypeStruct((), jnp.int32), i, ordered=True)

        return _on(platform, lambda n: jax.lax.fori_loop(0, 5, body, n), np.int32(0))

    got, want = run("hlojit"), run("cpu")
    assert int(got) == int(want) == 30
    assert seen["hlojit"] == seen["cpu"] == [0, 1, 2, 3, 4]


def test_callback_error_is_raised_not_a_crash():
    def bad(a):
        raise ValueError("callback refuses")

    def f(x):
        return jax.pure_callback(bad, jax.ShapeDtypeStruct(x.shape, x.dtype), x)

    for platform in ("hlojit", "cpu"):
        try:
            np.asarray(_on(platform, f, X))
        except Exception as e:  # JAX wraps it (XlaRuntimeError on both)
            assert "callback refuses" in str(e) or "CpuCallback error" in str(e), str(e)
        else:
            raise AssertionError(f"no error on {platform}")


def test_registered_ffi_target_reaches_hlojit():
    # jaxlib's LAPACK LU handler under a name of our own: jax.ffi.register_ffi_target must make
    # it callable on hlojit (whose built-in LAPACK targets do not include this name).
    from jaxlib.cpu import _lapack

    _lapack.initialize()
    jax.ffi.register_ffi_target("hlojit_test_sgetrf", _lapack.registrations()["lapack_sgetrf_ffi"], platform="cpu")

    def lu(a):
        out = (
            jax.ShapeDtypeStruct(a.shape, a.dtype),
            jax.ShapeDtypeStruct(a.shape[:-1], jnp.int32),
            jax.ShapeDtypeStruct((), jnp.int32),
        )
        return jax.ffi.ffi_call(
            "hlojit_test_sgetrf",
            out,
            input_layouts=[(0, 1)],
            output_layouts=[(0, 1), None, None],
            input_output_aliases={0: 0},
        )(a)

    a = np.random.default_rng(3).standard_normal((5, 5)).astype(np.float32)
    got, want = _both(lu, a)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    assert int(got[2]) == 0
