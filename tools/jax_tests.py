#!/usr/bin/env python3
"""JAX's own test files on hlojit (the PJRT plugin) and on XLA:CPU, file by file.

  jax_tests.py --tests-dir DIR --out OUT [--site SITE] [--platforms P,...] [FILE.py ...] [-- PYTEST_ARGS...]

Runs each test file with pytest once per platform configuration:
  cpu          JAX_PLATFORMS=cpu          XLA:CPU alone (the reference)
  hlojit       JAX_PLATFORMS=hlojit,cpu   hlojit the default backend, XLA:CPU beside it, as a real
                                          installation has the host platform beside an accelerator
                                          plugin: tests that ask for the backend named `cpu`
                                          (jax.default_device("cpu"), jax.devices("cpu")) get it
  hlojit-only  JAX_PLATFORMS=hlojit       hlojit alone; tests that ask for `cpu` fail
The default is cpu,hlojit. The plugin is found through the `jax_plugins` entry point of the
wheel installed in SITE, which goes first on PYTHONPATH for every run so that all see the same
packages. A pytest plugin (tools/pytest_plugins/jax_compile_count.py) counts the programs
compiled per backend and records the default backend and jtu.device_under_test(): the report
shows that the suite's programs ran on hlojit and not on the XLA:CPU beside it.

Per file and configuration it keeps pytest's JUnit XML and log in OUT, then writes
OUT/report.md and OUT/report.json: passed / failed / errors / skipped on each, and every test
that passes on XLA:CPU but not on hlojit with the first line of its failure. XLA's results are
reused when OUT already has them (they do not change with hlojit); hlojit's are run again each
time. Each run leaves OUT/<file>.<platform>.json and the report is rebuilt from all of them, so
files and platforms may run separately.

A Python crash (a signal, e.g. a segfault in the plugin) loses pytest's XML; the report then
says so and names the test that was running (the last unfinished line of the -v log).
DIR is the `tests/` folder of the jax repository at the installed jax's tag.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

# Smaller files first: a broken plugin shows up in minutes, not after lax_numpy_test.
DEFAULT_FILES = [
    "fft_test.py",
    "lax_numpy_operators_test.py",
    "nn_test.py",
    "lax_vmap_test.py",
    "lax_numpy_reducers_test.py",
    "lax_autodiff_test.py",
    "random_test.py",
    "lax_numpy_indexing_test.py",
    "linalg_test.py",
    "lax_control_flow_test.py",
    "lax_test.py",
    "lax_numpy_test.py",
    "api_test.py",
    "pjit_test.py",
]
# Configuration name -> JAX_PLATFORMS.
PLATFORMS = {"cpu": "cpu", "hlojit": "hlojit,cpu", "hlojit-only": "hlojit"}
PLUGIN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytest_plugins")


def run_file(args, test_file, platform, extra):
    stem = test_file[:-3] if test_file.endswith(".py") else test_file
    xml = os.path.join(args.out, f"{stem}.{platform}.xml")
    log = os.path.join(args.out, f"{stem}.{platform}.log")
    run_info = os.path.join(args.out, f"{stem}.{platform}.json")
    if platform == "cpu" and os.path.exists(xml) and os.path.exists(run_info) and not args.rerun_xla:
        earlier = json.load(open(run_info))
        if earlier.get("pytest_args") == extra and earlier.get("generated_cases") == args.generated_cases:
            return xml, log, None, 0.0
    env = dict(os.environ)
    env["JAX_PLATFORMS"] = PLATFORMS[platform]
    env["JAX_COMPILE_COUNT_FILE"] = os.path.join(args.out, f"{stem}.{platform}.compiles.json")
    if args.generated_cases:
        env["JAX_NUM_GENERATED_CASES"] = str(args.generated_cases)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [args.site, PLUGIN_DIR, env.get("PYTHONPATH")]))
    cmd = ["nice", sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p", "jax_compile_count",
           f"--junitxml={xml}",
           os.path.join(args.tests_dir, test_file)] + extra
    if os.path.exists(xml):
        os.remove(xml)
    start = time.time()
    with open(log, "w") as out:
        try:
            rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                cwd=os.path.dirname(os.path.abspath(args.tests_dir)),
                                timeout=args.timeout).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    return xml, log, rc, time.time() - start


def outcomes(xml):
    """{test id: (outcome, first line of the message)} from pytest's JUnit XML."""
    result = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "errors", "skipped": "skipped"}[child.tag]
                message = (child.get("message") or child.text or "").strip().splitlines()[:1]
                message = message[0][:300] if message else ""
                break
        result[name] = (outcome, message)
    return result


def running_test(log):
    """The test a crashed pytest -v run was in: its last line without a result."""
    try:
        lines = [l for l in open(log, errors="replace").read().splitlines() if "::" in l]
    except OSError:
        return None
    for line in reversed(lines):
        if not any(w in line for w in ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")):
            return line.strip()
    return None


RESULT_WORDS = ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")


def outcomes_from_log(log):
    """{test id: (outcome, "")} of the tests a -v log shows finished: for a run stopped before
    pytest wrote its XML. Ids as in the XML (`tests.file.Class::name`)."""
    result = {}
    for line in open(log, errors="replace"):
        parts = line.split()
        if len(parts) < 2 or "::" not in parts[0] or parts[1] not in RESULT_WORDS:
            continue
        path, _, rest = parts[0].partition("::")
        cls, _, name = rest.rpartition("::")
        test = f"{path[:-3].replace('/', '.')}.{cls}::{name}" if cls else f"{path[:-3].replace('/', '.')}::{name}"
        outcome = {"PASSED": "passed", "XPASS": "passed", "FAILED": "failed", "ERROR": "errors"}.get(parts[1], "skipped")
        result[test] = (outcome, "")
    return result


def counts(results):
    c = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    for outcome, _ in results.values():
        c[outcome] += 1
    return c


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tests-dir", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--site", help="directory with the hlojit wheel installed (pip install --target)")
    p.add_argument("--timeout", type=float, default=3600, help="seconds per file and platform")
    p.add_argument("--rerun-xla", action="store_true", help="run XLA:CPU again even if OUT has its results")
    p.add_argument("--platforms", default="cpu,hlojit")
    p.add_argument("--generated-cases", type=int, help="JAX_NUM_GENERATED_CASES (JAX's default: 10 per parametrized "
                   "test); sampling is seeded, so both platforms run the same cases")
    p.add_argument("files", nargs="*")
    args = p.parse_args(argv)
    # pytest runs in the tests folder's parent: paths given relative to here must still hold.
    args.out = os.path.abspath(args.out)
    args.site = os.path.abspath(args.site) if args.site else None
    os.makedirs(args.out, exist_ok=True)
    for test_file in args.files or DEFAULT_FILES:
        stem = test_file[:-3] if test_file.endswith(".py") else test_file
        for platform in args.platforms.split(","):
            xml, log, rc, seconds = run_file(args, test_file, platform, extra)
            if rc is None:
                continue  # XLA's earlier results
            # One small file per run, so that runs of different files or platforms (even at
            # the same time) never overwrite each other's results; the report is rebuilt
            # from all of them.
            info = {"seconds": round(seconds, 1), "pytest_args": extra, "generated_cases": args.generated_cases}
            if rc == "timeout" or rc < 0 or not os.path.exists(xml):
                info.update(crashed=f"return code {rc}", running=running_test(log))
            with open(os.path.join(args.out, f"{stem}.{platform}.json"), "w") as f:
                json.dump(info, f)
            print(f"{test_file} on {platform}: {info}", flush=True)
        write_report(args.out)
    print(open(os.path.join(args.out, "report.md")).read())


def write_report(out):
    report = {}
    suffixes = tuple(f".{p}.{kind}" for p in PLATFORMS for kind in ("json", "log"))
    names = sorted({n.rsplit(".", 2)[0] for n in os.listdir(out) if n.endswith(suffixes)})
    for stem in names:
        entry, results = {}, {}
        for platform in PLATFORMS:
            run_info = os.path.join(out, f"{stem}.{platform}.json")
            log = os.path.join(out, f"{stem}.{platform}.log")
            if not os.path.exists(run_info):
                if os.path.exists(log):
                    # Still running, or stopped: the tests its log shows finished.
                    results[platform] = outcomes_from_log(log)
                    entry[platform] = dict(counts(results[platform]), partial=True)
                continue
            info = json.load(open(run_info))
            compiles = os.path.join(out, f"{stem}.{platform}.compiles.json")
            if os.path.exists(compiles):
                info["backends"] = json.load(open(compiles))
            xml = os.path.join(out, f"{stem}.{platform}.xml")
            if info.get("crashed") == "return code timeout" and os.path.exists(log):
                # Out of time is not a crash: report what it finished.
                results[platform] = outcomes_from_log(log)
                entry[platform] = dict(counts(results[platform]), partial=True, timeout=True)
                continue
            if "crashed" not in info and os.path.exists(xml):
                results[platform] = outcomes(xml)
                info.update(counts(results[platform]))
            entry[platform] = info
        xla = results.get("cpu")
        for platform in ("hlojit", "hlojit-only"):
            ours = results.get(platform)
            if xla is None or ours is None:
                continue
            partial = any(entry.get(p, {}).get("partial") for p in ("cpu", platform))
            # A run of a -k selection of a file whose XLA run was whole (slow files).
            selection = entry[platform].get("pytest_args") if entry[platform].get("pytest_args") != entry.get("cpu", {}).get("pytest_args") else None
            passing = [t for t, (o, _) in xla.items() if o == "passed"]
            if partial or selection:
                # Compare only the tests both (incomplete or selected) runs got to.
                passing = [t for t in passing if t in ours]
            lost = {}
            for t in passing:
                outcome, message = ours.get(t, ("missing", ""))
                if outcome != "passed":
                    lost[t] = f"{outcome}: {message}"
            entry[f"{platform}_vs_xla"] = {
                "xla_passing": len(passing), "passing_of_those": len(passing) - len(lost),
                "percent": round(100.0 * (len(passing) - len(lost)) / max(1, len(passing)), 2),
                "partial": partial, "selection": selection, "not_passing": lost}
        report[stem + ".py"] = entry
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    write_markdown(report, os.path.join(out, "report.md"))


def write_markdown(report, path):
    def cell(info):
        if not info:
            return "not run"
        if "crashed" in info:
            return f"CRASH ({info['crashed']}, in {info.get('running')})"
        if "passed" not in info:
            return "no results"
        if info.get("partial"):
            why = "timed out" if info.get("timeout") else "stopped early"
            return f"{info['passed']} / {info['failed']} / {info['errors']} ({info['skipped']} skipped; {why})"
        return f"{info['passed']} / {info['failed']} / {info['errors']} ({info['skipped']} skipped, {info['seconds']} s)"

    def share(cmp):
        if not cmp:
            return ""
        text = f"{cmp['passing_of_those']} of {cmp['xla_passing']} ({cmp['percent']}%)"
        if cmp.get("selection"):
            text += f" of those `{' '.join(cmp['selection'])}` selects"
        return text + " of the tests both runs reached" if cmp["partial"] else text

    def backends(info):
        b = (info or {}).get("backends")
        if not b:
            return ""
        compiles = ", ".join(f"{k} {v}" for k, v in sorted(b["compiles"].items()))
        return f"default {b['default_backend']}, DUT `{b['device_under_test']}`; compiles: {compiles}"

    only = any("hlojit-only" in e for e in report.values())
    head = ["file", "XLA:CPU passed / failed / errors", "hlojit (`hlojit,cpu`) passed / failed / errors",
            "XLA-passing that pass on hlojit", "programs compiled in the hlojit run"]
    if only:
        head += ["hlojit alone (`hlojit`) passed / failed / errors", "XLA-passing that pass on hlojit alone"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for test_file in DEFAULT_FILES + sorted(set(report) - set(DEFAULT_FILES)):
        if test_file not in report:
            continue
        e = report[test_file]
        runs = [e.get(p) or {} for p in PLATFORMS]
        args = (e.get("cpu") or {}).get("pytest_args")  # (a hlojit run's own selection: in its share)
        sub = f" (`{' '.join(args)}`)" if args else ""
        cases = next((r["generated_cases"] for r in runs if r.get("generated_cases")), None)
        if cases:
            sub += f" (JAX_NUM_GENERATED_CASES={cases})"
        row = [test_file + sub, cell(e.get("cpu")), cell(e.get("hlojit")), share(e.get("hlojit_vs_xla")),
               backends(e.get("hlojit"))]
        if only:
            row += [cell(e.get("hlojit-only")), share(e.get("hlojit-only_vs_xla"))]
        lines.append("| " + " | ".join(row) + " |")
    for test_file in sorted(report):
        for platform in ("hlojit", "hlojit-only"):
            lost = (report[test_file].get(f"{platform}_vs_xla") or {}).get("not_passing") or {}
            if lost:
                lines += ["", f"## {test_file}: {len(lost)} XLA-passing tests not passing on {platform}", ""]
                lines += [f"- `{t}`: {m}" for t, m in sorted(lost.items())]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
