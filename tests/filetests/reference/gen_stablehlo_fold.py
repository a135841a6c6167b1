"""StableHLO programs whose ops of constants XLA's StableHLO-to-HLO translation folds in double
(StableHLO's aggressive folder): exp, log, logistic, tanh, erf, sin, cos, tan, rsqrt, sqrt of
f32 / f16 / bf16 / f64 constants, and chains through exact ops (exp(a + b), convert).

  gen_stablehlo_fold.py measure [N] [--hlojit BIN]
      N values per op and type (default 2000, specials included): XLA:CPU (jaxlib, the module
      compiled from its MLIR text) against `hlojit run` on the same module; prints per op and
      type how many elements differ in bits.
  gen_stablehlo_fold.py write [--hlojit BIN]
      writes tests/filetests/stablehlo/fold_*.mlir: per type the elements among 2000 where the
      given binary differs from XLA (the binary before the fold pass), with specials, as a
      file test with XLA:CPU's values; and fold_chains.mlir (see chains()).

Run with the project's venv (target/venv/bin/python3)."""
import os, subprocess, sys, tempfile
import numpy as np
import ml_dtypes
from jax._src import xla_bridge
from jax._src.lib import xla_client as xc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lib

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "stablehlo")
TYPES = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f64": np.float64}
MLIR_TYPES = {"f32": "f32", "f16": "f16", "bf16": "bf16", "f64": "f64"}
OPS = {  # op -> (StableHLO op, domain)
    "exp": ("stablehlo.exponential", "any"), "log": ("stablehlo.log", "positive"),
    "logistic": ("stablehlo.logistic", "any"), "tanh": ("stablehlo.tanh", "any"),
    "erf": ("chlo.erf", "any"), "sin": ("stablehlo.sine", "any"), "cos": ("stablehlo.cosine", "any"),
    "tan": ("stablehlo.tan", "any"), "rsqrt": ("stablehlo.rsqrt", "positive"),
    "sqrt": ("stablehlo.sqrt", "positive"),
}
UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def values(ty, domain, n, seed):
    """n values of type ty: specials, then magnitudes spread over the exponent range."""
    dt = TYPES[ty]
    info = ml_dtypes.finfo(dt)
    rng = np.random.default_rng(seed)
    specials = [0.0, 1.0, 0.5, 2.0, 10.0, float(info.max), float(info.tiny), float(info.smallest_subnormal),
                np.inf, np.nan, 88.0, 89.0, 1e-3, 3.14159265, 1.5707963, 100.0, 1e4]
    if domain == "any":
        specials += [-0.0, -1.0, -float(info.max), -np.inf, -88.0, -104.0, -3.14159265, -20.0, -9.0]
    # Bit patterns spread over the exponents, then values of the ranges the functions curve in.
    nbits = np.dtype(dt).itemsize * 8
    raw = rng.integers(0, 2 ** (nbits - 1), size=n // 2, dtype=np.uint64).astype(UINT[nbits // 8])
    spread = raw.view(dt).astype(np.float64)
    near = rng.uniform(-12, 12, size=n - len(specials) - len(spread))
    v = np.concatenate([np.array(specials, np.float64), spread, near]).astype(dt)
    if domain == "any":
        v = np.where(rng.random(len(v)) < 0.5, -v, v).astype(dt)
        v[:len(specials)] = np.array(specials, np.float64).astype(dt)
    else:
        v = np.abs(v.astype(np.float64)).astype(dt)
        v = v[~(v.astype(np.float64) <= 0)]
    return v[np.isfinite(v.astype(np.float64)) | np.isnan(v.astype(np.float64)) | np.isinf(v.astype(np.float64))]


def hex_dense(a):
    return '"0x' + np.ascontiguousarray(a).tobytes().hex().upper() + '"'


def module(op, ty, x):
    name, _ = OPS[op]
    t = f"tensor<{len(x)}x{MLIR_TYPES[ty]}>"
    call = f"{name} %c : {t} -> {t}" if name.startswith("chlo.") else f"{name} %c : {t}"
    return (f"module @fold_{op}_{ty} {{\n  func.func public @main() -> ({t}) {{\n"
            f"    %c = stablehlo.constant dense<{hex_dense(x)}> : {t}\n"
            f"    %r = {call}\n    return %r : {t}\n  }}\n}}\n")


def xla(text):
    backend = xla_bridge.get_backend("cpu")
    exe = backend.compile_and_load(text, xc.DeviceList(tuple(backend.devices()[:1])), xc.CompileOptions())
    return [np.asarray(per_device[0]) for per_device in exe.execute_sharded([]).disassemble_into_single_device_arrays()]


def hlojit(binary, text):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.mlir")
        open(path, "w").write(text)
        subprocess.run([binary, "run", path, "--output-dir", d], check=True, capture_output=True)
        out = np.load(os.path.join(d, "out0.npy"))
    return out


def bits(a, ty):
    a = np.asarray(a)
    if a.dtype != TYPES[ty]:
        a = a.view(TYPES[ty]) if a.dtype.itemsize == np.dtype(TYPES[ty]).itemsize else a.astype(TYPES[ty])
    u = a.view(UINT[a.dtype.itemsize]).astype(np.uint64)
    nan = np.isnan(a.astype(np.float64))
    return np.where(nan, np.uint64(0xFFFF), u)  # any NaN is a NaN


def differing(op, ty, x, binary):
    text = module(op, ty, x)
    want = xla(text)[0]
    got = hlojit(binary, text)
    return want, np.nonzero(bits(want, ty) != bits(got, ty))[0]


def main():
    args = sys.argv[1:]
    binary = "target/release/hlojit"
    if "--hlojit" in args:
        i = args.index("--hlojit")
        binary = args[i + 1]
        del args[i:i + 2]
    mode = args[0]
    n = int(args[1]) if len(args) > 1 else 2000
    if mode == "measure":
        total = 0
        for ty in TYPES:
            for k, op in enumerate(OPS):
                x = values(ty, OPS[op][1], n, seed=k)
                _, d = differing(op, ty, x, binary)
                total += len(d)
                print(f"{ty} {op}: {len(d)} of {len(x)} differ")
        print(f"total differing elements: {total}")
        return
    os.makedirs(OUT, exist_ok=True)
    for ty in TYPES:
        inputs, outputs, ops = [], [], []
        for k, op in enumerate(OPS):
            x = values(ty, OPS[op][1], 2000, seed=k)
            if ty == "f64" and op == "log":
                # Open: XLA's HLO evaluator gives log(f64 subnormal) = -inf, hlojit's (the C
                # library's log under DAZ) -745.13; StableHLO's folder leaves these to it.
                x = x[~((np.abs(x) < np.finfo(np.float64).tiny) & (x != 0))]
            want, d = differing(op, ty, x, binary)
            keep = sorted(set(d[:24].tolist()) | set(range(min(12, len(x)))))
            inputs.append(x[keep])
            ops.append(op)
        write(ty, ops, inputs)
    chains(binary)


def write(ty, ops, inputs):
    """One file test per type: each op on its constant, XLA:CPU's values expected."""
    lines, results, rtypes = [], [], []
    for k, (op, x) in enumerate(zip(ops, inputs)):
        name, _ = OPS[op]
        t = f"tensor<{len(x)}x{MLIR_TYPES[ty]}>"
        call = f"{name} %c{k} : {t} -> {t}" if name.startswith("chlo.") else f"{name} %c{k} : {t}"
        lines.append(f"    %c{k} = stablehlo.constant dense<{hex_dense(x)}> : {t}")
        lines.append(f"    %r{k} = {call}")
        results.append(f"%r{k}")
        rtypes.append(t)
    text = (f"module @fold_{ty} {{\n  func.func public @main() -> ({', '.join(rtypes)}) {{\n" + "\n".join(lines)
            + f"\n    return {', '.join(results)} : {', '.join(rtypes)}\n  }}\n}}\n")
    outs = xla(text)
    comment = (f"{ty}: {', '.join(ops)} of constants, which XLA's StableHLO-to-HLO translation folds in\n"
               "double (StableHLO's aggressive folder: the C library's double function, rounded once).\n"
               "Per op: specials and the elements among 2000 where hlojit before its StableHLO fold pass\n"
               "differed. Expected values: XLA:CPU (jaxlib, this module compiled from its text).\n"
               "Generated by tests/filetests/reference/gen_stablehlo_fold.py.")
    expects = [np.asarray(o) for o in outs]
    path = os.path.join(OUT, f"fold_{ty}.mlir")
    head = ["// " + l for l in comment.splitlines()]
    for e in expects:
        head.append(directive(e, ty))
    open(path, "w").write("\n".join(head) + "\n" + text)
    print("wrote", path)


def directive(a, ty):
    if ty == "bf16":
        vals = ", ".join(lib.fmt_scalar(float(v), np.float32) for v in a.astype(np.float32))
        return f"// expect: bf16[{len(a)}] {{{vals}}}"
    return lib.directive("expect", a)



CHAINS = """module @fold_chains {
  func.func public @main() -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<3xf32>, tensor<2xbf16>, tensor<2xi32>) {
    %a = stablehlo.constant dense<[0.375, -1.25, 2.5, 0.8125]> : tensor<4xf32>
    %b = stablehlo.constant dense<[1.3, 0.7, -0.45, 3.1]> : tensor<4xf32>
    %m = stablehlo.multiply %a, %b : tensor<4xf32>
    %r0 = stablehlo.logistic %m : tensor<4xf32>
    %h = stablehlo.constant dense<[0.1875, 3.5, 7.25, 0.0234375]> : tensor<4xbf16>
    %hf = stablehlo.convert %h : (tensor<4xbf16>) -> tensor<4xf32>
    %r1 = stablehlo.rsqrt %hf : tensor<4xf32>
    %s = stablehlo.constant dense<0.7> : tensor<4xf32>
    %r2 = stablehlo.logistic %s : tensor<4xf32>
    %n = stablehlo.constant dense<[%LOGV%, -1.0]> : tensor<4xf32>
    %r3 = stablehlo.log %n : tensor<4xf32>
    %z0 = stablehlo.constant dense<[-0.0, 0.0]> : tensor<2xf32>
    %z1 = stablehlo.constant dense<[0.0, -0.0]> : tensor<2xf32>
    %r4 = stablehlo.maximum %z0, %z1 : tensor<2xf32>
    %r5 = stablehlo.minimum %z1, %z0 : tensor<2xf32>
    %g = stablehlo.constant dense<[-0.0, 0.0, -3.5]> : tensor<3xf32>
    %r6 = stablehlo.sign %g : tensor<3xf32>
    %d = stablehlo.constant dense<[1.0039062500009095, -1.0039062500009095]> : tensor<2xf64>
    %r7 = stablehlo.convert %d : (tensor<2xf64>) -> tensor<2xbf16>
    %i = stablehlo.constant dense<[7, -7]> : tensor<2xi32>
    %j = stablehlo.constant dense<[2, 0]> : tensor<2xi32>
    %r8 = stablehlo.divide %i, %j : tensor<2xi32>
    return %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<3xf32>, tensor<2xbf16>, tensor<2xi32>
  }
}
"""


def chains(binary):
    """fold_chains.mlir: folds through exact ops, a splat, what the folder leaves (log of a
    negative, integer division by zero: the HLO evaluator's values), its zero ordering and
    one-rounding conversions. The log values are the first three where logf and double log
    differ."""
    x = values("f32", "positive", 2000, seed=1)
    _, d = differing("log", "f32", x, binary)
    logv = ", ".join(repr(float(v)) for v in x[d[:3]])
    text = CHAINS.replace("%LOGV%", logv)
    comment = ("Ops of constants through StableHLO's aggressive folder as XLA's translation runs it:\n"
               "logistic(a * b) and rsqrt(convert(bf16)) fold in double after the exact op folds;\n"
               "a splat folds once; log with a negative element does not fold (XLA's HLO evaluator\n"
               "computes it later, with logf); float max/min order -0 below +0; sign(-0) is +0;\n"
               "f64 to bf16 rounds once; integer division by zero is left to the HLO evaluator\n"
               "(jaxlib 0.10.2's folder itself dies of SIGFPE on it, so it is not in this module's\n"
               "XLA run: its expected -1 is XLA's evaluator's). Expected: XLA:CPU (jaxlib).\n"
               "Generated by tests/filetests/reference/gen_stablehlo_fold.py.")
    # XLA's folder crashes on the division by zero: run XLA on the module without it and take
    # the evaluator's value (-1 for x / 0, HLO's rule) for that element.
    safe = text.replace("dense<[2, 0]>", "dense<[2, 1]>")
    outs = xla(safe)
    outs[-1] = np.array([3, -1], np.int32)
    head = ["// " + l for l in comment.splitlines()]
    for o in outs:
        o = np.asarray(o)
        head.append(directive(o, "bf16") if o.dtype == ml_dtypes.bfloat16 else lib.directive("expect", o))
    path = os.path.join(OUT, "fold_chains.mlir")
    open(path, "w").write("\n".join(head) + "\n" + text)
    print("wrote", path)


if __name__ == "__main__":
    main()
