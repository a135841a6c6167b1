"""pmap and shard_map on several hlojit devices, compared with XLA:CPU on as many forced host
devices; sharded programs that need SPMD partitioning refused with a message saying so. The
cases live in multidevice_cases.py and run in one subprocess (device counts are fixed when JAX
starts, and this pytest process has started it with other counts)."""

import pytest

import subprocess_cases

# multidevice_cases.CASES, by name (importing it here would set the device counts for this process).
NAMES = [
    "pmap_psum_axis_index",
    "pmap_collectives",
    "all_to_all_across_dimensions",
    "pmap_grad",
    "shard_map_1d",
    "shard_map_in_a_nested_jit",
    "shard_map_2d_replicated_output",
    "refuses_sharded_jit",
    "refuses_partially_manual_shard_map",
]


@pytest.fixture(scope="module")
def outcomes():
    return subprocess_cases.outcomes("multidevice_cases.py", NAMES, timeout=900)


@pytest.mark.parametrize("name", NAMES)
def test_multidevice(outcomes, name):
    assert outcomes[name] == "ok", outcomes[name]
