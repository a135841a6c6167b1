"""Runs fuzz programs on XLA:CPU through jaxlib, for `hlojit fuzz-diff`.

Usage: python3 fuzz_xla.py DIR. Every DIR/*/ folder holds module.hlo, inputs.txt (one HLO
element type per line, the parameters in order) and in<i>.npy (bf16 as raw uint16 bits). This
writes xla_out<i>.npy (the result leaves, bf16 as raw bits) and xla_done, or xla_error.txt.
A program that crashes the process is left with only xla_started: the caller marks it and
runs this again, which skips the programs already done. One process
for all programs, so that jax is imported once.
"""
import os
import sys

import ml_dtypes
import numpy as np


def main():
    import jax
    jax.config.update("jax_enable_x64", True)
    from jax._src.lib import xla_client
    dev = jax.devices("cpu")[0]
    root = sys.argv[1]
    for d in sorted(os.listdir(root)):
        p = os.path.join(root, d)
        if not os.path.isfile(os.path.join(p, "module.hlo")):
            continue
        # Done by an earlier run that a crash of XLA ended (the caller restarts us).
        if os.path.exists(os.path.join(p, "xla_error.txt")) or os.path.exists(os.path.join(p, "xla_done")):
            continue
        open(os.path.join(p, "xla_started"), "w").close()
        try:
            with open(os.path.join(p, "module.hlo")) as fh:
                text = fh.read()
            with open(os.path.join(p, "inputs.txt")) as fh:
                types = fh.read().split()
            inputs = []
            for i, t in enumerate(types):
                a = np.load(os.path.join(p, f"in{i}.npy"))
                inputs.append(a.view(ml_dtypes.bfloat16) if t == "bf16" else a)
            mod = xla_client.hlo.hlo_module_from_text(text)
            mlir = xla_client._xla.mlir.hlo_to_stablehlo(mod.as_serialized_hlo_module_proto())
            exe = dev.client.compile_and_load(mlir, xla_client.DeviceList((dev,)), xla_client.CompileOptions())
            res = exe.execute_sharded([jax.device_put(a, dev) for a in inputs]).disassemble_into_single_device_arrays()
            for i, r in enumerate(res):
                out = np.asarray(r[0])
                if out.dtype == ml_dtypes.bfloat16:
                    out = out.view(np.uint16)
                np.save(os.path.join(p, f"xla_out{i}.npy"), out)
            open(os.path.join(p, "xla_done"), "w").close()
        except Exception as e:  # noqa: BLE001 -- reported per program
            with open(os.path.join(p, "xla_error.txt"), "w") as fh:
                fh.write((str(e).splitlines() or [type(e).__name__])[0][:500])


if __name__ == "__main__":
    main()
