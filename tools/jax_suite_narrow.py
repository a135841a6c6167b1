#!/usr/bin/env python3
"""Differential test of the JAX-suite modules the shared tool skips but that can be compared.

  jax_suite_narrow.py TOOL OUT [--hlojit BIN] [--seed S]

`TOOL` is ../shared/tools/jax_suite_diff.py, `OUT` a folder its `diff` has run on. That diff skips
every module with a parameter or result of a type outside NumPy's own (s2/s4/u2/u4, the f8 and f4
formats): "element type outside the comparison set". JAX's lax_test compiles dozens of them
(iota, convert, bitcast-convert, comparisons, dot of f8). This runs those modules the same way —
the tool's own input generator, XLA:CPU through the tool's `run_hlo` in a child process, `hlojit
run` on the same inputs — with the narrow types carried by ml_dtypes, and compares bit for bit
(NaNs equal whatever their payload, as the tool does). It also runs the modules the tool skips for
a Shardy marker custom call (`xla.sdy.FuncResultSharding`, ...), which its list of identity
markers lacks, and for `dce_sink` and `tridiagonal_solve_perturbed_ffi`, targets jaxlib
registers and hlojit builds in. Results go to OUT/report_narrow.json.

How hlojit's .npy files hold these types (runtime/src/npy.rs): s2/s4 as int8 and u2/u4 as uint8
(one element per byte), the f8/f4 formats as their raw bits in uint8.
"""
import argparse, collections, importlib.util, json, os, shutil, subprocess, sys, tempfile

import ml_dtypes
import numpy as np

NARROW_INT = {"s2": ml_dtypes.int2, "s4": ml_dtypes.int4, "u2": ml_dtypes.uint2, "u4": ml_dtypes.uint4}
NARROW_FLOAT = {
    "f8e5m2": ml_dtypes.float8_e5m2, "f8e4m3fn": ml_dtypes.float8_e4m3fn, "f8e4m3": ml_dtypes.float8_e4m3,
    "f8e3m4": ml_dtypes.float8_e3m4, "f8e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz,
    "f8e5m2fnuz": ml_dtypes.float8_e5m2fnuz, "f8e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "f8e8m0fnu": ml_dtypes.float8_e8m0fnu, "f4e2m1fn": ml_dtypes.float4_e2m1fn,
}


def comparable_skip(detail):
    """The tool's skips this script runs: narrow element types; Shardy's `xla.sdy.*` markers,
    which the tool's custom-call list omits although both XLA:CPU and hlojit (its pass
    passes/sharding_markers.rs) take them as the identity on one device; and `dce_sink` and
    `tridiagonal_solve_perturbed_ffi` (lax.linalg.tridiagonal_solve's CPU kernel), targets jaxlib
    registers for XLA:CPU without the tool's `lapack_` prefix and hlojit builds in."""
    return (detail == "element type outside the comparison set" or detail.startswith("custom call xla.sdy.")
            or detail in ("custom call dce_sink", "custom call tridiagonal_solve_perturbed_ffi"))


def load_tool(path):
    # The XLA runner's child process is spawned and unpickles its worker by module name, so the
    # tool must be importable as a module, not just executed from its path.
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location("jax_suite_diff", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["jax_suite_diff"] = mod
    spec.loader.exec_module(mod)
    return mod


def dtype(tool, dt):
    return NARROW_INT.get(dt) or NARROW_FLOAT.get(dt) or tool.NP.get(dt)


def random_input(tool, rng, dt, shape):
    if dt in NARROW_INT:
        info = ml_dtypes.iinfo(NARROW_INT[dt])
        lo, hi = max(int(info.min), -4), min(int(info.max), 12)  # the tool's range for integers
        return rng.integers(lo, hi + 1, size=shape).astype(NARROW_INT[dt])
    if dt in NARROW_FLOAT:
        # The tool's range for floats; e8m0 (a power of two, no sign) takes magnitudes.
        v = rng.uniform(-2, 2, size=shape)
        return (np.abs(v) if dt == "f8e8m0fnu" else v).astype(NARROW_FLOAT[dt])
    return tool.random_input(rng, dt, shape)


def to_file(dt, a):
    """The array as hlojit reads it from .npy."""
    if dt in NARROW_INT:
        return a.astype(np.int8 if dt[0] == "s" else np.uint8)
    if dt in NARROW_FLOAT:
        return a.view(np.uint8)
    return a.view(np.uint16) if dt == "bf16" else a


def compare(tool, dt, got_file, want):
    """None when equal, else a message. Narrow types compare exactly (bits for floats)."""
    if dt in NARROW_INT:
        got = got_file.astype(want.dtype)
        bad = got != want
    elif dt in NARROW_FLOAT:
        got = got_file.view(want.dtype)
        gn, wn = np.isnan(got.astype(np.float32)), np.isnan(want.astype(np.float32))
        if (gn != wn).any():
            return f"NaN mismatch at {np.argwhere(gn != wn)[0].tolist()}"
        bad = (got.view(np.uint8) != want.view(np.uint8)) & ~wn
    else:
        g = got_file.view(tool.NP[dt]) if dt in tool.RAW else got_file
        rtol, atol = tool.TOL.get(dt, (0, 0))
        return tool.compare(g.astype(want.dtype) if g.dtype != want.dtype and g.dtype.kind == want.dtype.kind else g,
                            want, dt not in tool.TOL, rtol, atol)
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        return f"{int(bad.sum())} elements differ, first at {list(i)}: got {got[i]!r} want {want[i]!r}"
    return None


def tool_arguments(doc):
    """The arguments every re-run tool takes: the shared tool, its output folder, the hlojit
    binary and the input seed."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tool")
    ap.add_argument("out")
    ap.add_argument("--hlojit", default="target/release/hlojit")
    ap.add_argument("--seed", type=int, default=0)
    return ap


def main():
    ap = tool_arguments(__doc__)
    a = ap.parse_args()
    tool = load_tool(a.tool)
    report = json.load(open(os.path.join(a.out, "report.json")))
    todo = sorted(h for h, v in report.items() if v["outcome"] == "skipped" and comparable_skip(v["detail"]))
    results, counts = {}, collections.Counter()
    tmp = tempfile.mkdtemp(prefix="jaxnarrow.")
    xla = tool.XlaRunner()
    for h in todo:
        path = os.path.join(a.out, "modules", h + ".hlo")
        text = open(path).read()
        src = report[h]["src"]
        params, outs = tool.entry_signature(text)
        unknown = sorted({dt for dt, _ in params + outs if dtype(tool, dt) is None})
        if unknown:
            results[h] = {"src": src, "outcome": "skipped", "detail": f"element types {unknown}"}
            counts["skipped"] += 1
            continue
        rng = np.random.default_rng(a.seed)
        inputs = [random_input(tool, rng, dt, shape) for dt, shape in params]
        status, want = xla.run(text, inputs, 60)
        if status != "ok":
            results[h] = {"src": src, "outcome": "skipped", "detail": f"XLA: {want}"}
            counts["skipped"] += 1
            continue
        d = os.path.join(tmp, h)
        os.makedirs(d)
        args = []
        for i, ((dt, _), x) in enumerate(zip(params, inputs)):
            f = os.path.join(d, f"in{i}.npy")
            np.save(f, to_file(dt, x))
            args += ["--input", f]
        try:
            r = subprocess.run([os.path.abspath(a.hlojit), "run", path, *args, "--output-dir", d],
                               capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            results[h] = {"src": src, "outcome": "hang", "detail": "no result in 120 s"}
            counts["hang"] += 1
            continue
        if r.returncode != 0:
            kind = "crash" if r.returncode >= 128 or r.returncode < 0 or "panicked" in r.stderr else "error"
            results[h] = {"src": src, "outcome": kind, "detail": (r.stderr.strip().splitlines() or ["?"])[-1][:300]}
            counts[kind] += 1
            continue
        bad = None
        for j, ((dt, _), w) in enumerate(zip(outs, want)):
            m = compare(tool, dt, np.load(os.path.join(d, f"out{j}.npy")), np.asarray(w))
            if m:
                bad = f"output {j} ({dt}): {m}"
                break
        outcome = "mismatch" if bad else "pass"
        results[h] = {"src": src, "outcome": outcome, "detail": bad or ""}
        counts[outcome] += 1
    shutil.rmtree(tmp, ignore_errors=True)
    with open(os.path.join(a.out, "report_narrow.json"), "w") as fh:
        json.dump(results, fh, indent=1)
    ran = sum(v for k, v in counts.items() if k != "skipped")
    print(f"modules the tool skipped, compared here {len(todo)}: {dict(counts)}; pass rate {counts['pass']}/{ran}")
    for h, v in sorted(results.items()):
        if v["outcome"] != "pass":
            print(f"  {h} {v['outcome']:8s} {v['src']}: {v['detail']}")


if __name__ == "__main__":
    main()
