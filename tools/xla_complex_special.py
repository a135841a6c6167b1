#!/usr/bin/env python3
"""Complex functions at special values, hlojit against XLA:CPU (jaxlib), bit for bit.

  target/venv/bin/python3 tools/xla_complex_special.py [--ops cosine,sine] [--hlojit target/release/hlojit]
      [--reference hlo|jnp]

The 121 pairs (re, im) from {±0, ±1, 0.5, ±inf, NaN, -NaN, 3e38, 1e-40} run through each op for
c64 and c128 on both; prints per op and type how many results differ in a part's bits other
than a NaN's sign and payload (zeros' signs count), and how many NaNs differ only in their bits.

The reference is by default the same one-op HLO module compiled by XLA:CPU (what `hlojit
fuzz-diff` and HLO users compare with). `--reference jnp` takes `jax.jit(jnp.<op>)` instead:
JAX lowers some complex functions itself before XLA sees them (complex cos and sin become
real ops: cos(a) cosh(b) built from expm1, -sin(a) sinh(b), with a select on a == 0; read
in XLA's dump of jnp.cos), so those differ from XLA's own complex `cosine`/`sine` at zeros'
signs and infinities.
"""
import argparse
import os
import subprocess
import tempfile

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)
OPS = {"cosine": jnp.cos, "sine": jnp.sin, "tan": jnp.tan, "tanh": jnp.tanh, "exponential": jnp.exp,
       "log": jnp.log, "log-plus-one": jnp.log1p, "exponential-minus-one": jnp.expm1, "sqrt": jnp.sqrt,
       "rsqrt": jax.lax.rsqrt}
VALUES = [0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, np.nan, -np.nan, 3e38, 1e-40]


def xla_hlo(text, z):
    """Runs one-parameter HLO text on XLA:CPU, as tools/fuzz_xla.py does."""
    from jax._src.lib import xla_client
    dev = jax.devices("cpu")[0]
    mod = xla_client.hlo.hlo_module_from_text(text)
    mlir = xla_client._xla.mlir.hlo_to_stablehlo(mod.as_serialized_hlo_module_proto())
    exe = dev.client.compile_and_load(mlir, xla_client.DeviceList((dev,)), xla_client.CompileOptions())
    res = exe.execute_sharded([jax.device_put(z, dev)]).disassemble_into_single_device_arrays()
    return np.asarray(res[0][0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--hlojit", default="target/release/hlojit")
    ap.add_argument("--reference", choices=("hlo", "jnp"), default="hlo")
    args = ap.parse_args()
    re, im = np.meshgrid(VALUES, VALUES, indexing="ij")
    for t, ct, it in (("c64", np.complex64, np.uint32), ("c128", np.complex128, np.uint64)):
        z = np.empty(re.size, ct)
        parts = z.view(re.dtype.type(0).astype(np.float32 if t == "c64" else np.float64).dtype)
        parts[0::2] = re.ravel()
        parts[1::2] = im.ravel()
        for op in args.ops.split(","):
            with tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "m.hlo")
                n = z.size
                text = f"HloModule m\n\nENTRY e {{\n  p = {t}[{n}] parameter(0)\n  ROOT r = {t}[{n}] {op}(p)\n}}\n"
                open(path, "w").write(text)
                want = xla_hlo(text, z) if args.reference == "hlo" else np.asarray(jax.jit(OPS[op])(z))
                np.save(os.path.join(d, "in0.npy"), z)
                subprocess.run([args.hlojit, "run", path, "--input", os.path.join(d, "in0.npy"),
                                "--output-dir", d], check=True, capture_output=True)
                got = np.load(os.path.join(d, "out0.npy"))
            g, w = got.view(it), want.view(it)
            gf, wf = got.view(parts.dtype), want.view(parts.dtype)
            both_nan = np.isnan(gf) & np.isnan(wf)
            value = ((g != w) & ~both_nan).reshape(-1, 2).any(axis=1)
            nan_bits = ((g != w) & both_nan).reshape(-1, 2).any(axis=1) & ~value
            print(f"{op:22} {t:5}: {int(value.sum())} of {n} differ, {int(nan_bits.sum())} more only in NaN bits")
            for i in np.nonzero(value)[0][:3]:
                print(f"    z={z[i]} xla={want[i]} hlojit={got[i]}")


if __name__ == "__main__":
    main()
