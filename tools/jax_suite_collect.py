#!/usr/bin/env python3
"""Collects the HLO modules one JAX test file compiles, as `jax_suite_diff.py collect OUT FILE`
does (same XLA dump flags, same OUT/modules/<hash>.hlo + .src naming and deduplication), but
without its one-hour pytest timeout: linalg_test.py alone ran 1 h 23 min on the shared 2-core
machine, and the timeout then drops every module the file dumped.

  jax_suite_collect.py OUT TESTFILE [--cases N]
"""
import argparse, glob, hashlib, os, shutil, subprocess, sys, tempfile


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("file")
    ap.add_argument("--cases", type=int, default=5, help="JAX_NUM_GENERATED_CASES")
    a = ap.parse_args()
    mods = os.path.join(a.out, "modules")
    os.makedirs(mods, exist_ok=True)
    dump = tempfile.mkdtemp(prefix="jaxdump.")
    env = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={dump} --xla_dump_hlo_as_text --xla_dump_large_constants --xla_dump_hlo_pass_re=^$",
               JAX_NUM_GENERATED_CASES=str(a.cases), JAX_PLATFORMS="cpu")
    try:
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", a.file], env=env, capture_output=True, text=True)
        last = (r.stdout.strip().splitlines() or ["?"])[-1]
        n = 0
        for p in glob.glob(os.path.join(dump, "*.before_optimizations.txt")):
            text = open(p).read()
            body = text.split("\n", 1)[1] if "\n" in text else text
            dst = os.path.join(mods, hashlib.sha1(body.encode()).hexdigest()[:16] + ".hlo")
            if not os.path.exists(dst):
                with open(dst, "w") as fh:
                    fh.write(text)
                with open(dst[:-4] + ".src", "w") as fh:
                    fh.write(f"{os.path.basename(a.file)} {os.path.basename(p)}\n")
                n += 1
    finally:
        shutil.rmtree(dump, ignore_errors=True)
    print(f"{os.path.basename(a.file)}: {last} -> {n} new modules", flush=True)


if __name__ == "__main__":
    main()
