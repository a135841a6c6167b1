"""hlojit through JAX and through hlojit.compile, compared with XLA:CPU in the same process.

Runs with the wheel installed (``cargo xtask pytest`` pip-installs it with the pinned jax into
a fresh virtual environment, target/wheel-venv, and runs this file there). Both backends live in one process:
JAX_PLATFORMS=cpu,hlojit; an array committed to a device makes jax.jit run there.
"""

import os

os.environ["JAX_PLATFORMS"] = "cpu,hlojit"
os.environ.setdefault("HLOJIT_DEVICE_COUNT", "2")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import hlojit  # noqa: E402

RNG = np.random.default_rng(0)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


FUNCTIONS = {
    "mlp": (lambda x, w, b: jax.nn.relu(x @ w + b).sum(axis=0), (_f32(8, 16), _f32(16, 4), _f32(4))),
    "softmax": (lambda x: jax.nn.softmax(x, axis=-1), (_f32(5, 7),)),
    "cumsum_where": (lambda x: jnp.where(x > 0, jnp.cumsum(x, axis=1), -x), (_f32(3, 6),)),
    "while_loop": (lambda x: jax.lax.fori_loop(0, 10, lambda i, c: c * 0.5 + jnp.sin(c), x), (_f32(4),)),
    "int_ops": (lambda a, b: (a * 3 + b) // 2 % 7, (np.arange(12, dtype=np.int32).reshape(3, 4), np.full((3, 4), 5, np.int32))),
    "bf16": (lambda x: (x.astype(jnp.bfloat16) * 2).astype(jnp.float32), (_f32(6),)),
    "grad": (jax.grad(lambda w, x: jnp.sum(jnp.tanh(x @ w) ** 2)), (_f32(3, 2), _f32(4, 3))),
}


def _cpu():
    return jax.devices("cpu")[0]


def _hlojit(i=0):
    return jax.devices("hlojit")[i]


def _reference(f, args):
    return jax.jit(f)(*[jax.device_put(a, _cpu()) for a in args])


def _close(got, want):
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=2e-6, atol=2e-6)


def test_devices_are_listed():
    devices = jax.devices("hlojit")
    assert [d.id for d in devices] == [0, 1]
    assert devices[0].platform == "cpu" and devices[0].device_kind == "cpu"


@pytest.mark.parametrize(
    "array",
    [
        np.arange(12, dtype=np.float32).reshape(3, 4),
        np.arange(12, dtype=np.float32).reshape(4, 3).T,  # not C-contiguous
        np.array([1.5, -2, 3], dtype=ml_dtypes.bfloat16),
        np.array([-8, 0, 7], dtype=ml_dtypes.int4),
        np.array([0.5, -1], dtype=ml_dtypes.float8_e4m3fn),
        np.array([[True, False]]),
        np.array([1 + 2j], dtype=np.complex64),
    ],
    ids=["f32", "transposed", "bf16", "int4", "f8e4m3fn", "pred", "c64"],
)
def test_buffers_round_trip(array):
    x = jax.device_put(array, _hlojit(1))
    assert x.devices() == {_hlojit(1)}
    back = np.asarray(x)
    assert back.dtype == array.dtype and back.shape == array.shape
    assert back.tobytes() == np.ascontiguousarray(array).tobytes()


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_compile_matches_xla(name):
    f, args = FUNCTIONS[name]
    text = jax.jit(f).lower(*args).as_text()
    got = hlojit.compile(text)(*args)
    _close(got, _reference(f, args))


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_jit_on_hlojit_matches_xla(name):
    f, args = FUNCTIONS[name]
    got = jax.jit(f)(*[jax.device_put(a, _hlojit()) for a in args])
    assert {d for leaf in jax.tree_util.tree_leaves(got) for d in leaf.devices()} == {_hlojit()}
    _close(got, _reference(f, args))


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_compiled_text_is_the_optimized_module(name):
    # as_text() is XLA printing the HloModuleProto the plugin returns as its optimized program
    # (hlojit's module after its passes); hlojit compiles that text back to the same numbers.
    f, args = FUNCTIONS[name]
    compiled = jax.jit(f).lower(*[jax.device_put(a, _hlojit()) for a in args]).compile()
    text = compiled.as_text()
    assert text.startswith("HloModule ") and "ENTRY " in text
    _close(hlojit.compile(text)(*args), _reference(f, args))


def test_token_outputs_are_token_buffers():
    # A returned token is PJRT's TOKEN type as on XLA:CPU: jaxlib refuses to read it as an
    # array, and it passes back into the next program like any buffer.
    with jax.default_device(_hlojit()):
        token = jax.lax.create_token()
        with pytest.raises(RuntimeError, match="Cannot convert a token-shape buffer to a numpy array."):
            token._buf._value
        out, token2 = jax.jit(lambda x, t: (x + 1, t))(jnp.float32(1), token)
    assert float(out) == 2.0 and type(token2).__name__ == "Token"


def test_single_device_sharding_constraint():
    # fftfreq with a device under jit writes sdy.sharding_constraint on a one-device mesh; in
    # the portable artifact it sits between unrealized_conversion_casts.
    def f(device):
        return jax.jit(lambda x: x + jnp.fft.fftfreq(5, d=0.1, device=device, dtype=jnp.float32))

    x = _f32(5)
    _close(f(_hlojit())(jax.device_put(x, _hlojit())), f(_cpu())(jax.device_put(x, _cpu())))


def test_donation_consumes_the_argument():
    x = jax.device_put(np.arange(4, dtype=np.float32), _hlojit())
    y = jax.jit(lambda v: v * 2, donate_argnums=0)(x)
    assert x.is_deleted()
    np.testing.assert_array_equal(np.asarray(y), [0, 2, 4, 6])


def test_pmap_on_one_device_with_psum():
    # A one-device pmap is a per-device program already: stablehlo.all_reduce (psum) over
    # replica group {0}, inside a scan as in JAX's issue 804.
    def f(device):
        body = lambda c, x: (c + jax.lax.psum(x, "i"), c)
        return jax.pmap(lambda xs: jax.lax.scan(body, 0.0, xs), axis_name="i", devices=[device])

    x = _f32(1, 4)
    _close(f(_hlojit())(x), f(_cpu())(x))


def test_pmap_uses_both_devices():
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    got = jax.pmap(lambda v: jax.lax.psum(v, "i"), axis_name="i", devices=jax.devices("hlojit"))(x)
    np.testing.assert_array_equal(np.asarray(got), np.broadcast_to(x.sum(axis=0), (2, 4)))


def test_errors_carry_hlojit_messages():
    with pytest.raises(hlojit.HlojitError, match=r"instruction n: expected shape f32\[3\]"):
        hlojit.compile("HloModule m\nENTRY e { p = f32[3] parameter(0)\n ROOT n = f32[4] negate(p) }")
    exe = hlojit.compile("HloModule m\nENTRY e { p = f32[3] parameter(0)\n ROOT n = f32[3] negate(p) }")
    with pytest.raises(hlojit.HlojitError, match="parameter 0"):
        exe(np.zeros(4, np.float32))


def test_results_are_numpy_views_of_hlojit_memory():
    exe = hlojit.compile("HloModule m\nENTRY e { p = f32[2,3] parameter(0)\n ROOT n = f32[2,3] negate(p) }")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = exe(x)
    np.testing.assert_array_equal(y, -x)
    assert not y.flags.writeable and not y.flags.owndata  # lent, not copied
    assert exe.parameters == [("float32", [2, 3])] and exe.results == [("float32", [2, 3])]


# x @ w + b with column-major parameters and result, as the entry computation layout says.
COLUMN_MAJOR_DOT = """HloModule m, entry_computation_layout={(f32[4,3]{0,1}, f32[3,5]{0,1}, f32[4,5]{1,0})->f32[4,5]{0,1}}
ENTRY e {
  x = f32[4,3]{0,1} parameter(0)
  w = f32[3,5]{0,1} parameter(1)
  b = f32[4,5]{1,0} parameter(2)
  d = f32[4,5]{0,1} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = f32[4,5]{0,1} add(d, b)
}"""


@pytest.mark.parametrize("order", ["C", "F", "strided"])
def test_compile_takes_arrays_in_any_layout(order):
    x, w, b = _f32(4, 3), _f32(3, 5), _f32(4, 5)
    want = _reference(lambda x, w, b: x @ w + b, (x, w, b))
    if order == "F":  # the parameters' own layout for x and w, read in place
        x, w = np.asfortranarray(x), np.asfortranarray(w)
    elif order == "strided":  # every other column of a wider array: copied
        x = np.repeat(x, 2, axis=1)[:, ::2]
        w = np.asfortranarray(np.repeat(w, 2, axis=0))[::2]
    got = hlojit.compile(COLUMN_MAJOR_DOT)(x, w, b)
    _close(got, want)
    # The column-major result is lent to numpy in its layout (Fortran order), not copied.
    assert got.flags.f_contiguous and not got.flags.c_contiguous and not got.flags.owndata


def test_compile_reads_transposed_arrays_in_place_of_permuted_layouts():
    # A 3-D parameter in layout {0,2,1}: a C-order array transposed to (0,2,1)... and back.
    text = """HloModule m, entry_computation_layout={(s32[2,3,4]{0,2,1})->s32[2,3,4]{2,1,0}}
ENTRY e {
  p = s32[2,3,4]{0,2,1} parameter(0)
  c = s32[] constant(3)
  bc = s32[2,3,4]{0,2,1} broadcast(c), dimensions={}
  ROOT m = s32[2,3,4]{2,1,0} multiply(p, bc)
}"""
    exe = hlojit.compile(text)
    base = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    permuted = np.ascontiguousarray(base.transpose(1, 2, 0)).transpose(2, 0, 1)  # strides in {0,2,1} order
    assert np.array_equal(permuted, base) and not permuted.flags.c_contiguous
    for arg in (base, permuted, np.asfortranarray(base)):
        got = exe(arg)
        assert got.flags.c_contiguous and np.array_equal(got, base * 3)
