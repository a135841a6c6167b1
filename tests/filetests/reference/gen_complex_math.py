"""Writes elementwise/complex_math_xla_bits.hlo: complex sqrt, tan, tanh, expm1, log (c64 and
c128) and rsqrt (c128) with XLA:CPU's results on the same HLO (HLO text -> StableHLO ->
XLA, as tools/xla_complex_special.py), compared bit for bit.

Inputs: for sqrt and rsqrt the 121 pairs of {±0, ±1, 0.5, ±inf, NaN, -NaN, 3e38, 1e-40}; for
every op, random values where XLA's result is not NumPy's (c128; for c64 NumPy's c128 result
rounded), which is where XLA's own real routines (exp, expm1, tanh; its folded sqrt constants;
its rsqrt order) show. c64 rsqrt is left out: XLA computes it with the host's approximate
`rsqrtps` and one Newton step, whose bits differ between processors.
Usage: target/venv/bin/python tests/filetests/reference/gen_complex_math.py tests/filetests"""
import os
import sys

import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tools"))
from lib import fmt_scalar  # noqa: E402
from xla_complex_special import VALUES, xla_hlo  # noqa: E402

ROOT = sys.argv[1]
rng = np.random.default_rng(121)
NP = {"sqrt": np.sqrt, "rsqrt": lambda z: 1 / np.sqrt(z), "tan": np.tan, "tanh": np.tanh,
      "exponential-minus-one": np.expm1, "log": np.log}
TYPES = {"c64": (np.complex64, np.float32), "c128": (np.complex128, np.float64)}
CASES = [("c64", ["sqrt", "tan", "tanh", "exponential-minus-one", "log"]),
         ("c128", ["sqrt", "rsqrt", "tan", "tanh", "exponential-minus-one", "log"])]


def run_xla(t, op, z):
    text = f"HloModule m\n\nENTRY e {{\n  p = {t}[{z.size}]{{0}} parameter(0)\n  ROOT r = {t}[{z.size}]{{0}} {op}(p)\n}}\n"
    return xla_hlo(text, z)


def specials(ct, ft):
    re, im = np.meshgrid(VALUES, VALUES, indexing="ij")
    parts = np.empty(2 * re.size, ft)
    parts[0::2], parts[1::2] = re.ravel(), im.ravel()
    return parts.view(ct)


def hard(t, op, n):
    ct, ft = TYPES[t]
    parts = np.concatenate([rng.uniform(-4, 4, 40_000), rng.standard_normal(20_000) * 10.0 ** rng.integers(-8, 8, 20_000)])
    if op == "log":
        # |z| in (0.7, 1.2): log's near-one branch, where XLA's simplified Fast2Sum shows.
        r, a = rng.uniform(0.7, 1.2, 30_000), rng.uniform(-np.pi, np.pi, 30_000)
        parts = np.stack([r * np.cos(a), r * np.sin(a)], 1).ravel()
    z = parts.astype(ft).view(ct)
    got = run_xla(t, op, z)
    with np.errstate(all="ignore"):
        ref = NP[op](z.astype(np.complex128)).astype(ct)
    return z[(got != ref) & np.isfinite(got)][:n]


def fmt(z):
    return "{" + ", ".join(f"({fmt_scalar(v.real, np.float64)}, {fmt_scalar(v.imag, np.float64)})" for v in z) + "}"


lines = [
    "// Complex sqrt, tan, tanh, expm1, log (c64, c128) and rsqrt (c128) as XLA:CPU computes them, bit",
    "// for bit: sqrt is StableHLO's expansion after XLA's algebraic simplifier (constant divisors",
    "// as reciprocal products, folded constants; complex.rs), rsqrt takes",
    "// sqrt(rsqrt(1 + (min/max)^2)) * rsqrt(max), tan/tanh/expm1 use XLA's real exp, expm1, tanh",
    "// (xla_exp.rs, xla_expm1.rs, xla_tanh.rs), log's Fast2Sum with the error term XLA's simplifier",
    "// folds to t - t. Inputs: the 121 special pairs for sqrt and rsqrt and",
    "// values where XLA's result is not NumPy's. Values from XLA:CPU (jaxlib 0.10.2) on this HLO",
    "// (tests/filetests/reference/gen_complex_math.py). c64 rsqrt is left out: XLA uses the host's",
    "// approximate rsqrtps, whose bits differ between processors.",
]
params, body, roots, shapes = [], [], [], []
for i, (t, ops) in enumerate(CASES):
    ct, ft = TYPES[t]
    z = np.concatenate([specials(ct, ft)] + [hard(t, op, 30 if op == "log" else 12) for op in ops])
    n = z.size
    lines.append(f"// input: {t}[{n}] {fmt(z)}")
    params.append(f"  z{i} = {t}[{n}] parameter({i})")
    for op in ops:
        name = f"{op.replace('-', '_')}{i}"
        body.append(f"  {name} = {t}[{n}] {op}(z{i})")
        roots.append(name)
        shapes.append(f"{t}[{n}]")
        lines.append(f"// expect: {t}[{n}] {fmt(run_xla(t, op, z))}")
module = ["HloModule complex_math_xla_bits", "", "ENTRY main {"] + params + body
module += [f"  ROOT out = ({', '.join(shapes)}) tuple({', '.join(roots)})", "}"]
open(f"{ROOT}/elementwise/complex_math_xla_bits.hlo", "w").write("\n".join(lines + module) + "\n")
