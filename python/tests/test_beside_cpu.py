"""hlojit as JAX's default backend with XLA:CPU beside it (JAX_PLATFORMS=hlojit,cpu, the
configuration JAX's own suite runs in): programs go to hlojit, `jax.default_device("cpu")` and
`jax.devices("cpu")` to XLA:CPU, arrays move between the two bit for bit. The cases live in
beside_cpu_cases.py and run in one subprocess (this pytest process has started JAX with
XLA:CPU first)."""

import pytest

import subprocess_cases

# beside_cpu_cases.CASES, by name (importing it here would start JAX in this process's order).
NAMES = [
    "default_backend_is_hlojit",
    "default_device_cpu_runs_on_xla",
    "transfers_between_hlojit_and_cpu",
    "results_match_xla_across_devices",
    "bfloat16_from_cpu_to_a_hlojit_mesh",
    "zero_length_scan_and_fori_loop",
]


@pytest.fixture(scope="module")
def outcomes():
    return subprocess_cases.outcomes("beside_cpu_cases.py", NAMES, timeout=600)


@pytest.mark.parametrize("name", NAMES)
def test_beside_cpu(outcomes, name):
    assert outcomes[name] == "ok", outcomes[name]
