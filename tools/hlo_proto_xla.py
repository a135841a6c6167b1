#!/usr/bin/env python3
"""XLA's reading of hlojit's HloModuleProtos (pjrt/tests/hlo_proto.rs).

  hlo_proto_xla.py DIR

For every DIR/NAME.pb (a serialized xla.HloModuleProto written by hlojit), rebuilds the module
with jaxlib's HloModule.from_serialized_hlo_module_proto — XLA's HloModule::CreateFromProto,
what PJRT clients run on PJRT_Executable_OptimizedProgram — and writes XLA's text of it to
DIR/NAME.xla.hlo (large constants in full, no metadata), or the error to DIR/NAME.err.
DIR/current names the module being read, so a crash inside XLA leaves its name behind.
"""
import os
import sys

from jaxlib import _hlo


def main(directory):
    options = _hlo.HloPrintOptions()
    options.print_large_constants = True
    options.print_metadata = False
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".pb"):
            continue
        stem = os.path.join(directory, name[:-3])
        with open(os.path.join(directory, "current"), "w") as f:
            f.write(name)
        with open(os.path.join(directory, name), "rb") as f:
            data = f.read()
        try:
            text = _hlo.HloModule.from_serialized_hlo_module_proto(data).to_string(options)
        except Exception as e:  # XLA's status errors arrive as exceptions
            with open(stem + ".err", "w") as f:
                f.write(f"{type(e).__name__}: {e}\n")
            continue
        with open(stem + ".xla.hlo", "w") as f:
            f.write(text)
    os.remove(os.path.join(directory, "current"))


if __name__ == "__main__":
    main(sys.argv[1])
