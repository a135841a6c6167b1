"""hlojit as the default backend with XLA:CPU beside it (JAX_PLATFORMS=hlojit,cpu), as a real
installation has the host platform beside an accelerator plugin. Run by test_beside_cpu.py in a
subprocess: the platform order is fixed when JAX starts, and the other test files in the same
pytest process start it with XLA:CPU first. Prints one JSON object: case name -> "ok" or the
reason it failed.
"""

import os

import subprocess_cases

os.environ["JAX_PLATFORMS"] = "hlojit,cpu"
os.environ.pop("HLOJIT_DEVICE_COUNT", None)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
from jax._src import test_util as jtu  # noqa: E402
from jax._src import xla_bridge  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

RNG = np.random.default_rng(2)


def is_hlojit(device):
    # The plugin's platform is "cpu" (JAX lowers for it as for XLA:CPU); its client says hlojit.
    return "hlojit" in device.client.platform_version


def default_backend_is_hlojit():
    backend = xla_bridge.get_backend()
    assert "hlojit" in backend.platform_version, backend.platform_version
    # JAX's tests take the default backend's platform as the device under test.
    assert jtu.device_under_test() == backend.platform == "cpu"
    assert is_hlojit(jax.devices()[0]) and not is_hlojit(jax.devices("cpu")[0])
    out = jax.jit(lambda x: x * 2 + 1)(np.arange(5, dtype=np.float32))
    assert is_hlojit(out.device) and out.device == jax.local_devices()[0]
    assert np.array_equal(np.asarray(out), np.arange(5, dtype=np.float32) * 2 + 1)


def default_device_cpu_runs_on_xla():
    # api_test's test_jit_default_platform.
    with jax.default_device("cpu"):
        out = jax.jit(lambda x: x + 1)(1)
    assert out.device == jax.local_devices(backend="cpu")[0] and not is_hlojit(out.device)
    out = jax.jit(lambda x: x + 1)(1)
    assert out.device == jax.local_devices()[0] and is_hlojit(out.device)


# Host values of the dtypes buffers carry, bit patterns included (NaN payloads, -0.0, subnormals).
def _values():
    f32 = np.array([0.0, -0.0, 1.5, np.inf, -np.inf, np.nan, 1e-40, -3.25], np.float32)
    return {
        "float32": f32.reshape(2, 4),
        "float64": np.array([1e-310, -2.5, np.pi], np.float64),
        "bfloat16": f32.astype(ml_dtypes.bfloat16),
        "float16": f32.astype(np.float16),
        "float8_e4m3fn": np.array([0.5, -1.0, 448.0, 0.0], ml_dtypes.float8_e4m3fn),
        "int4": np.array([-8, -1, 0, 7], ml_dtypes.int4),
        "uint8": np.arange(250, 256, dtype=np.uint8),
        "int64": np.array([-(2**62), 3, 2**40], np.int64),
        "bool": np.array([True, False, True]),
        "complex64": np.array([1 + 2j, -0.5j], np.complex64),
        "scalar": np.float32(7.0),
        "empty": np.zeros((0, 3), np.float32),
    }


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    assert got.tobytes() == want.tobytes(), (got, want)


def transfers_between_hlojit_and_cpu():
    with jax.enable_x64(True):
        for name, value in _values().items():
            on_hlojit = jax.device_put(value, jax.devices()[0])
            on_cpu = jax.device_put(on_hlojit, jax.devices("cpu")[0])
            assert not is_hlojit(on_cpu.device), name
            _same_bits(on_cpu, value)
            back = jax.device_put(on_cpu, jax.devices()[0])
            assert is_hlojit(back.device), name
            _same_bits(back, value)


def results_match_xla_across_devices():
    x = RNG.standard_normal((16, 8)).astype(np.float32)
    w = RNG.standard_normal((8, 4)).astype(np.float32)
    f = jax.jit(lambda x, w: jnp.tanh(x @ w).sum(axis=0))
    ours = f(x, w)
    xla = f(jax.device_put(x, jax.devices("cpu")[0]), jax.device_put(w, jax.devices("cpu")[0]))
    assert is_hlojit(ours.device) and not is_hlojit(xla.device)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(xla), rtol=2e-6, atol=2e-6)
    # A result computed by XLA:CPU as an argument of a hlojit program, and the other way.
    mixed = jax.jit(lambda a, b: a * b)(jax.device_put(xla, jax.devices()[0]), ours)
    np.testing.assert_allclose(np.asarray(mixed), np.asarray(xla) * np.asarray(ours), rtol=1e-6)


def bfloat16_from_cpu_to_a_hlojit_mesh():
    # pjit_test's test_cpu_bfloat16_to_tpu.
    mesh = Mesh(np.array(jax.devices()[:1]), ("x",))
    arr_cpu = jax.device_put(np.full((8, 2), 1.5, ml_dtypes.bfloat16), jax.devices("cpu")[0])
    arr = jax.device_put(arr_cpu, NamedSharding(mesh, P()))
    assert is_hlojit(next(iter(arr.devices())))
    total = jax.jit(lambda x: jnp.sum(x))(arr)
    assert is_hlojit(total.device) and float(total) == 24.0


def zero_length_scan_and_fori_loop():
    # lax_control_flow_test's testForiLoopIssue8152: a scan over an empty array.
    assert float(jax.lax.fori_loop(0, 0, lambda i, x: x + i, 1.0)) == 1.0
    carry, _ = jax.lax.scan(lambda c, x: (c + x, x), 0.0, np.array([], np.float32))
    assert float(carry) == 0.0


CASES = [default_backend_is_hlojit, default_device_cpu_runs_on_xla, transfers_between_hlojit_and_cpu,
         results_match_xla_across_devices, bfloat16_from_cpu_to_a_hlojit_mesh, zero_length_scan_and_fori_loop]

if __name__ == "__main__":
    subprocess_cases.report(CASES)
