#!/usr/bin/env python3
"""Where hlojit's jax.scipy.linalg.expm first differs from XLA:CPU's (evidence for
tests/linalg/README.md, "expm / expm_frechet").

  target/venv/bin/python3 tools/expm_stages.py [--hlojit target/release/hlojit] [--n 100]

Runs expm and each of its stages — the Padé numerator/denominator (_calc_P_Q), the LU
factorization and solve (getrf + trsm), the squarings (_squaring), and one f32 dot — on XLA:CPU
(jax.jit) and on `hlojit run`, every stage on XLA's own intermediate values, so a difference
belongs to that stage alone. Prints per stage how many elements differ, by how many ulps, and
for expm and the dot the error of both against float64 (scipy.linalg.expm, a float64 product).
The input is the JAX-suite differential's: uniform in [-2, 2], seed 0.
"""
import argparse, os, shutil, subprocess, tempfile

import numpy as np
import scipy.linalg as sl
import jax, jax.numpy as jnp
from jax import lax
from jax._src.scipy import linalg as jlinalg


def run_hlojit(hlojit, f, *args):
    text = jax.jit(f, keep_unused=True).lower(*args).as_text(dialect="hlo")
    d = tempfile.mkdtemp(prefix="expm_stages.")
    try:
        open(os.path.join(d, "m.hlo"), "w").write(text)
        cmd = [hlojit, "run", os.path.join(d, "m.hlo"), "--output-dir", d]
        for i, a in enumerate(args):
            np.save(os.path.join(d, f"in{i}.npy"), np.asarray(a))
            cmd += ["--input", os.path.join(d, f"in{i}.npy")]
        subprocess.run(cmd, check=True, capture_output=True)
        outs, j = [], 0
        while os.path.exists(os.path.join(d, f"out{j}.npy")):
            outs.append(np.load(os.path.join(d, f"out{j}.npy")))
            j += 1
        return outs
    finally:
        shutil.rmtree(d, ignore_errors=True)


def ulps(a, b):
    """Distance in f32 units in the last place (sign-magnitude bits mapped to a line)."""
    def line(x):
        i = x.astype(np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return np.abs(line(a) - line(b))


def report(name, got, want):
    u = ulps(got, want)
    rel = np.abs(got.astype(np.float64) - want) / np.maximum(np.abs(want), 1e-30)
    i = np.unravel_index(np.argmax(rel), rel.shape)
    print(f"{name}: {np.count_nonzero(u)}/{u.size} elements differ, max {u.max()} ulp; largest relative "
          f"difference {rel.max():.3g} at {tuple(int(k) for k in i)} (hlojit {got[i]!r}, XLA {want[i]!r}; max |XLA| {np.abs(want).max():.3g})")


def stage(hlojit, name, f, *args):
    want = [np.asarray(o) for o in jax.tree_util.tree_leaves(jax.jit(f)(*args))]
    got = run_hlojit(hlojit, f, *args)
    for k, (g, w) in enumerate(zip(got, want)):
        if w.dtype.kind == "f":
            report(f"{name}[{k}]", g, w)
    return want, got


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hlojit", default="target/release/hlojit")
    ap.add_argument("--n", type=int, default=100)
    a = ap.parse_args()
    hlojit = os.path.abspath(a.hlojit)
    A = np.random.default_rng(0).uniform(-2, 2, size=(a.n, a.n)).astype(np.float32)
    (xla,), (ours,) = stage(hlojit, "expm", jlinalg.expm, A)
    truth = sl.expm(A.astype(np.float64))
    for who, x in (("XLA", xla), ("hlojit", ours)):
        e = np.abs(x - truth)
        print(f"  {who} vs float64 scipy: normwise {e.max() / np.abs(truth).max():.3g}, elements outside rtol 1e-3 / atol 1e-4: "
              f"{np.count_nonzero(e > 1e-3 * np.abs(truth) + 1e-4)}")
    (P, Q, n), _ = stage(hlojit, "calc_P_Q (Padé, dots)", jlinalg._calc_P_Q, A)
    stage(hlojit, "lu (getrf)", lax.linalg.lu, Q)
    (R,), _ = stage(hlojit, "solve (getrf + trsm)", jnp.linalg.solve, Q, P)
    stage(hlojit, f"squaring ({int(n)} squarings)", lambda r, n: jlinalg._squaring(r, n, 16), R, n)
    scaled = A / np.float32(2 ** int(n))
    dot = lambda x: jnp.dot(x, x, precision=lax.Precision.HIGHEST)
    (w,), (g,) = stage(hlojit, "one dot (A/2^s)·(A/2^s)", dot, scaled)
    exact = scaled.astype(np.float64) @ scaled.astype(np.float64)
    print(f"  mean |error| vs float64 product: XLA {np.abs(w - exact).mean():.3g}, hlojit {np.abs(g - exact).mean():.3g}")


if __name__ == "__main__":
    jax.config.update("jax_enable_x64", True)
    main()
