#!/usr/bin/env python3
"""Second look at the JAX-suite mismatches whose elementwise comparison is the wrong question.

  jax_suite_recheck.py TOOL OUT [--hlojit BIN] [--seed S]

`TOOL` is ../shared/tools/jax_suite_diff.py, `OUT` a folder its `diff` has run on. The tool
compares every output element by element (rtol 1e-3 for f32). Two classes of linalg_test modules
differ that way although hlojit computes them as XLA does (evidence in tests/linalg/README.md,
"JAX's linalg_test.py through the differential"); each gets the comparison its mathematics
supports, and nothing else is re-judged:

- `schur`: a complex Schur decomposition (the only custom call is lapack_cgees_ffi or
  lapack_zgees_ffi, outputs T and Z as jax.scipy.linalg.schur returns them). Without sorting it
  is not unique: the QR iteration of another LAPACK release deflates the eigenvalues in another
  order and picks other phases (hlojit links Debian's OpenBLAS 0.3.21, jaxlib scipy's 0.3.30).
  Accepted when hlojit's T is upper triangular, its Z unitary, Z·T·Zᴴ equals XLA's Z·T·Zᴴ (the
  same matrix) and T's diagonal holds XLA's eigenvalues, all within the tool's rtol relative to
  the matrix's largest element.
- `eigh`: a symmetric / Hermitian eigendecomposition (the only custom call is
  lapack_{s,d}syevd_ffi or lapack_{c,z}heevd_ffi; outputs the eigenvectors V and the
  eigenvalues w, in either order). Where eigenvalues repeat (export_back_compat_test's eigh of a
  rank-2 8 x 8 matrix: six zeros) any orthonormal basis of their eigenspace is a right answer,
  and another LAPACK release picks another. Accepted when hlojit's eigenvalues are XLA's, its V
  unitary, and V·diag(w)·Vᴴ equals XLA's (the same matrix), within the tool's rtol relative to
  the largest eigenvalue.
- `normwise`: jax.scipy.linalg.expm / expm_frechet (module jit_expm / jit_expm_frechet, or one
  holding expm's computations `_calc_P_Q` and `_squaring`, as when a test wraps it). Padé
  approximant and repeated squaring are matrix products, whose error is bounded relative to the
  matrix's norm, not per element: XLA:CPU's own result misses float64 scipy.linalg.expm by more
  than the tool's per-element tolerance in the same small elements. Accepted when
  max|hlojit - XLA| <= rtol * max|XLA| per output (the tool's rtol for the type).

Re-runs each such mismatch with the tool's inputs (same seed) and writes OUT/report_recheck.json
(module -> rule, accepted or mismatch, the measured quantity).
"""
import collections, json, os, re, shutil, subprocess, tempfile

import numpy as np

from jax_suite_narrow import load_tool, tool_arguments

GEES = re.compile(r'custom_call_target="lapack_[cz]gees_ffi"')
EVD = re.compile(r'custom_call_target="lapack_(?:[sd]syevd|[cz]heevd)_ffi"')
EXPM_PADE = re.compile(r"^%_calc_P_Q[.\d]* ", re.M)
EXPM_SQUARING = re.compile(r"^%_squaring[.\d]* ", re.M)


def rule_for(text):
    """The rule a module falls under, or None."""
    name = text.split(",", 1)[0].split()[-1]
    targets = set(re.findall(r'custom_call_target="([^"]+)"', text))
    if len(targets) == 1 and GEES.search(text):
        return "schur"
    if len(targets) == 1 and EVD.search(text):
        return "eigh"
    # expm's scaling and squaring, also when a test wraps it (jit_wrapped_fun): JAX names the
    # computations of its jitted helpers after them.
    if name in ("jit_expm", "jit_expm_frechet") or (EXPM_PADE.search(text) and EXPM_SQUARING.search(text)):
        return "normwise"
    return None


def schur_equivalent(got, want, rtol):
    """None when hlojit's (T, Z) is a Schur decomposition of the matrix XLA's (T, Z) decomposes,
    with the same eigenvalues; else a message. Errors are relative to the largest element."""
    if len(got) != 2 or len(want) != 2:
        return f"expected outputs T, Z; got {len(got)}"
    (tg, zg), (tw, zw) = [np.asarray(x, np.complex128) for x in got], [np.asarray(x, np.complex128) for x in want]
    h = lambda x: np.conj(np.swapaxes(x, -1, -2))
    a = zw @ tw @ h(zw)
    scale = np.abs(a).max()
    checks = {
        "Z T Zᴴ differs from XLA's": np.abs(zg @ tg @ h(zg) - a).max() / scale,
        "Z is not unitary": np.abs(h(zg) @ zg - np.eye(zg.shape[-1])).max(),
        "T is not upper triangular": np.abs(np.tril(tg, -1)).max() / scale,
    }
    for what, err in checks.items():
        if not err <= rtol:
            return f"{what}: {err:.3g}"
    # The same eigenvalues in any order: each of hlojit's diagonal entries matched to the
    # nearest of XLA's not yet taken.
    for eg, ew in zip(np.diagonal(tg, axis1=-2, axis2=-1).reshape(-1, tg.shape[-1]), np.diagonal(tw, axis1=-2, axis2=-1).reshape(-1, tw.shape[-1])):
        left = list(ew)
        for e in eg:
            k = int(np.argmin(np.abs(np.array(left) - e)))
            if abs(left[k] - e) > rtol * scale:
                return f"eigenvalue {e:.6g} of hlojit's T is not among XLA's"
            left.pop(k)
    return None


def eigh_equivalent(got, want, rtol):
    """None when hlojit's (V, w) decomposes the matrix XLA's (V, w) does, with the same
    eigenvalues; else a message. Errors are relative to the largest eigenvalue."""
    if len(got) != 2 or len(want) != 2:
        return f"expected outputs V, w; got {len(got)}"
    vectors_first = np.ndim(want[0]) == np.ndim(want[1]) + 1
    wide = lambda x: np.asarray(x, np.complex128)
    (vg, wg), (vw, ww) = [[wide(x) for x in (pair if vectors_first else pair[::-1])] for pair in (got, want)]
    h = lambda x: np.conj(np.swapaxes(x, -1, -2))
    rebuild = lambda v, w: (v * w[..., None, :]) @ h(v)
    scale = max(np.abs(ww).max(), np.finfo(np.float64).tiny)
    checks = {
        "the eigenvalues differ from XLA's": np.abs(np.sort(wg.real, -1) - np.sort(ww.real, -1)).max() / scale,
        "V diag(w) Vᴴ differs from XLA's": np.abs(rebuild(vg, wg) - rebuild(vw, ww)).max() / scale,
        "V is not unitary": np.abs(h(vg) @ vg - np.eye(vg.shape[-1])).max(),
    }
    for what, err in checks.items():
        if not err <= rtol:
            return f"{what}: {err:.3g}"
    return None


def normwise(got, want, rtol):
    for j, (g, w) in enumerate(zip(got, want)):
        wide = np.complex128 if np.asarray(w).dtype.kind == "c" else np.float64
        g, w = np.asarray(g, wide), np.asarray(w, wide)
        err = np.abs(g - w).max() / max(np.abs(w).max(), np.finfo(np.float64).tiny)
        if not err <= rtol:
            return f"output {j}: max|hlojit - XLA| / max|XLA| = {err:.3g} > {rtol}"
    return None


def main():
    ap = tool_arguments(__doc__)
    a = ap.parse_args()
    tool = load_tool(a.tool)
    report = json.load(open(os.path.join(a.out, "report.json")))
    results, counts = {}, collections.Counter()
    tmp = tempfile.mkdtemp(prefix="jaxrecheck.")
    xla = tool.XlaRunner()
    for h in sorted(h for h, v in report.items() if v["outcome"] == "mismatch"):
        path = os.path.join(a.out, "modules", h + ".hlo")
        text = open(path).read()
        rule = rule_for(text)
        if rule is None:
            continue
        params, outs = tool.entry_signature(text)
        rng = np.random.default_rng(a.seed)  # the tool's inputs: one generator per module
        inputs = [tool.random_input(rng, dt, shape) for dt, shape in params]
        status, want = xla.run(text, inputs, 60)
        if status != "ok":
            results[h] = {"src": report[h]["src"], "rule": rule, "outcome": "mismatch", "detail": f"XLA: {want}"}
            counts["mismatch"] += 1
            continue
        d = os.path.join(tmp, h)
        os.makedirs(d)
        args = []
        for i, x in enumerate(inputs):
            np.save(os.path.join(d, f"in{i}.npy"), x)
            args += ["--input", os.path.join(d, f"in{i}.npy")]
        r = subprocess.run([os.path.abspath(a.hlojit), "run", path, *args, "--output-dir", d], capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            detail = (r.stderr.strip().splitlines() or ["?"])[-1][:300]
            results[h] = {"src": report[h]["src"], "rule": rule, "outcome": "mismatch", "detail": detail}
            counts["mismatch"] += 1
            continue
        got = [np.load(os.path.join(d, f"out{j}.npy")) for j in range(len(outs))]
        rtol = tool.TOL[outs[0][0]][0]
        why = {"schur": schur_equivalent, "eigh": eigh_equivalent, "normwise": normwise}[rule](got, want, rtol)
        outcome = "mismatch" if why else "accepted"
        results[h] = {"src": report[h]["src"], "rule": rule, "outcome": outcome, "detail": why or ""}
        counts[outcome] += 1
    shutil.rmtree(tmp, ignore_errors=True)
    with open(os.path.join(a.out, "report_recheck.json"), "w") as fh:
        json.dump(results, fh, indent=1)
    print(f"mismatches re-checked by their rule: {dict(counts)}")
    for h, v in sorted(results.items()):
        print(f"  {h} {v['rule']:8s} {v['outcome']:8s} {v['src']} {v['detail']}")


if __name__ == "__main__":
    main()
