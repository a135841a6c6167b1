"""Runs `hlojit opt` output on XLA:CPU through jaxlib, for tools/tests/opt_roundtrip.rs.

Usage: python3 opt_xla.py DIR. Every DIR/*/ folder is a conformance case (case.json, in<i>.npy,
bf16 as raw uint16 bits) whose module.hlo is hlojit's optimized module. For each, this parses
the text with XLA's HLO parser exactly as printed, then compiles and runs it on XLA:CPU and
writes xla_parsed once the parser took it, then xla_out<i>.npy (bf16 as raw bits) and
xla_done, or xla_error.txt.

jaxlib compiles HLO only through XLA's HLO -> StableHLO importer, which refuses fusions of any
kind but kLoop ("Unsupported fusion kind"); the kind is an emitter hint with no meaning for
the result, so the run uses the text with every fusion kind set to kLoop. Cases on several
devices are skipped (xla_skipped). XLA aborts the process on some modules (CHECK failures in
its fusion emitters): the cases run in a worker process, each marked xla_started first, and
when a worker dies its case gets xla_error.txt with XLA's last message and a new worker
continues with the rest.
"""
import json
import os
import re
import subprocess
import sys

import ml_dtypes
import numpy as np


def worker(root):
    import jax
    jax.config.update("jax_enable_x64", True)
    from jax._src.lib import xla_client
    dev = jax.devices("cpu")[0]
    for d in sorted(os.listdir(root)):
        p = os.path.join(root, d)
        if not os.path.isfile(os.path.join(p, "module.hlo")):
            continue
        if any(os.path.exists(os.path.join(p, f)) for f in ("xla_done", "xla_error.txt", "xla_skipped")):
            continue
        open(os.path.join(p, "xla_started"), "w").close()
        try:
            case = json.load(open(os.path.join(p, "case.json")))
            if case.get("replicas", 1) > 1:
                open(os.path.join(p, "xla_skipped"), "w").close()
                continue
            text = open(os.path.join(p, "module.hlo")).read()
            xla_client.hlo.hlo_module_from_text(text)  # XLA's parser accepts it as printed
            open(os.path.join(p, "xla_parsed"), "w").close()
            if 'custom_call_target="lapack_' in text:
                from jax._src.lib import lapack  # the LAPACK FFI kernels need their LAPACK set up
                lapack.prepare_lapack_call("potrf_ffi", np.float32)
            runnable = re.sub(r"kind=k(Input|Output|Custom)", "kind=kLoop", text)
            mod = xla_client.hlo.hlo_module_from_text(runnable)
            mlir = xla_client._xla.mlir.hlo_to_stablehlo(mod.as_serialized_hlo_module_proto())
            exe = dev.client.compile_and_load(mlir, xla_client.DeviceList((dev,)), xla_client.CompileOptions())
            inputs = []
            for a in case["inputs"]:
                x = np.load(os.path.join(p, a["file"]))
                inputs.append(x.view(ml_dtypes.bfloat16) if a["dtype"] == "bf16" else x)
            res = exe.execute_sharded([jax.device_put(a, dev) for a in inputs]).disassemble_into_single_device_arrays()
            for i, r in enumerate(res):
                out = np.asarray(r[0])
                if out.dtype == ml_dtypes.bfloat16:
                    out = out.view(np.uint16)
                np.save(os.path.join(p, f"xla_out{i}.npy"), out)
            open(os.path.join(p, "xla_done"), "w").close()
        except Exception as e:  # noqa: BLE001 -- reported per case
            with open(os.path.join(p, "xla_error.txt"), "w") as fh:
                fh.write((str(e).splitlines() or [type(e).__name__])[0][:500])


def main():
    root = sys.argv[1]
    if sys.argv[2:] == ["--worker"]:
        worker(root)
        return
    while True:
        r = subprocess.run([sys.executable, __file__, root, "--worker"], capture_output=True, text=True)
        crashed = [d for d in sorted(os.listdir(root))
                   if os.path.exists(os.path.join(root, d, "xla_started"))
                   and not any(os.path.exists(os.path.join(root, d, f)) for f in ("xla_done", "xla_error.txt", "xla_skipped"))]
        if not crashed:
            if r.returncode != 0:
                sys.exit(f"the worker failed: {r.stderr[-2000:]}")
            return
        lines = [l for l in r.stderr.splitlines() if l.strip() and not l.lstrip().startswith("@")]
        with open(os.path.join(root, crashed[0], "xla_error.txt"), "w") as fh:
            fh.write("XLA crashed: " + (lines[0] if lines else f"exit status {r.returncode}")[:500])


if __name__ == "__main__":
    main()
