"""Test cases that need JAX started with their own platforms or device counts run in a child
process: the case module runs its cases and prints one JSON object (case name -> "ok" or why it
failed), and the pytest side runs that module and checks every case by name. This module
imports nothing of JAX, so either side may use it."""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def report(cases):
    """The case module's main: runs every case and prints the outcomes."""
    results = {}
    for case in cases:
        try:
            case()
            results[case.__name__] = "ok"
        except Exception as e:  # noqa: BLE001 - reported per case
            results[case.__name__] = f"{type(e).__name__}: {e}"[:2000]
    json.dump(results, sys.stdout)


def outcomes(script, names, timeout):
    """Runs the case module `script` (beside this file) and returns its outcomes by name."""
    out = subprocess.run([sys.executable, os.path.join(HERE, script)], capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr[-4000:]
    results = json.loads(out.stdout.strip().splitlines()[-1])
    assert sorted(results) == sorted(names)
    return results
