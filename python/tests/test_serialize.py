"""Serialized executables of the hlojit plugin: JAX's persistent compilation cache across two
processes (the second loads every executable, compiling none: the plugin's trace shows no
PJRT_Client_Compile) and jax.experimental.serialize_executable, with results equal to
XLA:CPU's. The JAX sides run in child processes (serialize_cases.py); XLA:CPU's results are
computed here."""

import json
import os
import subprocess
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu,hlojit")

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import serialize_cases  # noqa: E402
import subprocess_cases  # noqa: E402

NAMES = list(serialize_cases.functions())


def _child(mode, out_dir):
    """Runs serialize_cases.py in `mode`: its outcomes, its events and the plugin's trace."""
    env = dict(os.environ, HLOJIT_PJRT_TRACE="1")
    script = os.path.join(subprocess_cases.HERE, "serialize_cases.py")
    out = subprocess.run([sys.executable, script, mode, out_dir], capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-4000:]
    outcomes = json.loads(out.stdout.strip().splitlines()[-1])
    assert sorted(outcomes) == sorted(NAMES)
    with open(os.path.join(out_dir, f"{mode}_events.json")) as f:
        events = json.load(f)
    return outcomes, events, out.stderr


def _xla_outputs():
    cpu = jax.devices("cpu")[0]
    expected = {}
    for name, (fn, args) in serialize_cases.functions().items():
        out = fn(*[jax.device_put(a, cpu) for a in args])
        expected[name] = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(out)]
    return expected


def _check_outputs(out_dir, mode, expected):
    for name, leaves in expected.items():
        for k, want in enumerate(leaves):
            got = np.load(os.path.join(out_dir, f"{mode}_{name}_{k}.npy"))
            np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6, err_msg=f"{mode} {name} output {k}")


@pytest.fixture(scope="module")
def expected():
    return _xla_outputs()


def test_the_persistent_compilation_cache_serves_a_second_process(tmp_path, expected):
    fill, fill_events, fill_trace = _child("fill", str(tmp_path))
    assert all(v == "ok" for v in fill.values()), fill
    assert fill_trace.count("PJRT_Executable_Serialize") >= len(NAMES), fill_events
    hit, hit_events, hit_trace = _child("hit", str(tmp_path))
    assert all(v == "ok" for v in hit.values()), hit
    assert hit_events.get("/jax/compilation_cache/cache_hits", 0) >= len(NAMES), hit_events
    # Every executable came from the cache: the plugin compiled nothing.
    assert "PJRT_Client_Compile" not in hit_trace
    assert hit_trace.count("PJRT_Executable_DeserializeAndLoad") >= len(NAMES)
    _check_outputs(str(tmp_path), "fill", expected)
    _check_outputs(str(tmp_path), "hit", expected)


def test_serialize_executable_round_trips(tmp_path, expected):
    outcomes, _, trace = _child("roundtrip", str(tmp_path))
    assert all(v == "ok" for v in outcomes.values()), outcomes
    assert trace.count("PJRT_Executable_DeserializeAndLoad") >= len(NAMES)
    _check_outputs(str(tmp_path), "compiled", expected)
    _check_outputs(str(tmp_path), "roundtrip", expected)
