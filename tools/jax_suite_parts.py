"""pytest plugin: run only part I of N of the collected tests (HLOJIT_SUITE_PART="I/N", 0 <= I < N).

`cargo xtask jax-suite --parts N` loads it (PYTEST_ADDOPTS="-p jax_suite_parts") so that one JAX
test file is collected by several shorter pytest runs: the shared collector gives each run one
hour and keeps nothing of a run that exceeds it, and on a loaded machine whole files
(lax_test.py, lax_scipy_special_functions_test.py) take longer than that.

Test I, I+N, I+2N, ... of the collection order belong to part I. Striding rather than contiguous
slices spreads a slow family of parametrized cases over all parts. The collection order is the
same in every run because JAX's test generator samples its cases with a fixed seed.
"""
import os


def _part():
    spec = os.environ.get("HLOJIT_SUITE_PART", "")
    if not spec:
        return None
    try:
        i, n = (int(x) for x in spec.split("/"))
    except ValueError:
        raise ValueError(f"HLOJIT_SUITE_PART={spec!r}: expected I/N") from None
    if not 0 <= i < n:
        raise ValueError(f"HLOJIT_SUITE_PART={spec!r}: need 0 <= I < N")
    return i, n


def pytest_collection_modifyitems(config, items):
    part = _part()
    if part is None:
        return
    i, n = part
    keep = [it for k, it in enumerate(items) if k % n == i]
    drop = [it for k, it in enumerate(items) if k % n != i]
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep
