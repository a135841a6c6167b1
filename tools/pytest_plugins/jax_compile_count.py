"""pytest plugin for tools/jax_tests.py: counts the programs JAX compiles, per backend.

With JAX_PLATFORMS=hlojit,cpu both hlojit and XLA:CPU are in the process; these counts show
which one the suite's programs ran on (a program without an explicit device or backend must
go to hlojit, the default backend). Every compile goes through
jax._src.compiler.backend_compile_and_load; the wrapper counts it under "hlojit" when the
backend is the plugin (its platform_version names hlojit; the plugin's platform is "cpu"
because JAX must lower for it as for XLA:CPU) and under the backend's platform otherwise.
At the end of the session the counts, the default backend and jtu.device_under_test() go to the JSON file named by JAX_COMPILE_COUNT_FILE.
"""
import collections
import json
import os

_counts = collections.Counter()


def _backend_name(backend):
    if "hlojit" in getattr(backend, "platform_version", ""):
        return "hlojit"
    return getattr(backend, "platform", "unknown")


def pytest_configure(config):
    from jax._src import compiler

    inner = compiler.backend_compile_and_load

    def counted(backend, *args, **kwargs):
        _counts[_backend_name(backend)] += 1
        return inner(backend, *args, **kwargs)

    compiler.backend_compile_and_load = counted


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("JAX_COMPILE_COUNT_FILE")
    if not path:
        return
    from jax._src import test_util as jtu
    from jax._src import xla_bridge

    # What the suite took as the device under test: the default backend (hlojit when listed
    # first in JAX_PLATFORMS) and the platform name jtu's run_on_devices/skip_on_devices see.
    info = {"compiles": dict(_counts), "default_backend": _backend_name(xla_bridge.get_backend()),
            "device_under_test": jtu.device_under_test()}
    with open(path, "w") as f:
        json.dump(info, f)
