#!/usr/bin/env python3
"""Differential test of the JAX-suite modules that need several devices.

  jax_suite_devices.py TOOL OUT [--hlojit BIN] [--seed S] [--report NAME]

`TOOL` is ../shared/tools/jax_suite_diff.py, `OUT` a folder its `diff` has run on (read only:
the report goes to `--report`, default OUT/report_devices.json, which may be anywhere). The tool
skips every module with `replica_count` or `num_partitions` above 1 ("several devices"): pjit
with a mesh, shard_map, pmap. This runs each of them on XLA:CPU with that many host devices
(`--xla_force_host_platform_device_count`, set before jax is imported) and on `hlojit run` with
the same per-device inputs, and compares device by device.

Inputs: the tool's random generator gives each parameter one global array (its shape in the
module's entry signature). XLA:CPU compiles the module with SPMD partitioning, as JAX does (a
module exported from Shardy, with `xla.sdy.meshes`, through XLA's Shardy partitioner), and
each device gets the part of that array the compiled program's parameter sharding assigns it (a
replicated parameter: all of it). hlojit gets the same parts, stacked over devices as `hlojit
run` takes them. Each device's results are compared with the tool's tolerances (narrow types bit
for bit, through jax_suite_narrow.py's comparison).

hlojit is asked first (`hlojit opt`, its passes without running): a module it refuses is counted
as an error with its message, without running XLA.
"""
import collections, json, os, re, shutil, subprocess, sys, tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_suite_narrow as narrow  # noqa: E402

MAX_DEVICES = 8  # pjit_test's largest mesh


def header(text):
    return next((line for line in text.splitlines() if line.startswith("HloModule")), "")


def device_grid(text):
    head = header(text)
    get = lambda key: int(m.group(1)) if (m := re.search(rf"\b{key}=(\d+)", head)) else 1
    return get("replica_count"), get("num_partitions")


def as_gspmd(text):
    """The module with Shardy's `xla.sdy.FuncResultSharding` markers of replicated results
    (no mesh axis named in the line) written as GSPMD's `Sharding` custom call, replicated.
    XLA compiles HLO text through GSPMD (jaxlib's MLIR compile keeps Shardy only for modules
    holding `sdy` dialect ops, and the text's converted form has none), and GSPMD refuses
    `xla.sdy.*` custom calls; both markers are the identity on a replicated value."""
    def rewrite(line):
        if 'custom_call_target="xla.sdy.FuncResultSharding"' not in line or '\\"' in line:
            return line
        return line.replace('custom_call_target="xla.sdy.FuncResultSharding"',
                            'custom_call_target="Sharding", sharding={replicated}')
    return "\n".join(rewrite(line) for line in text.split("\n"))


def without_gspmd_shardings(text):
    """The module without its `sharding={...}` attributes, for XLA's Shardy partitioner: JAX
    exports Shardy's shardings twice, as `xla.sdy.*` frontend attributes and as GSPMD
    `sharding=`, and XLA given both falls back to GSPMD, which rejects Shardy's manual regions
    (`xla.sdy.GlobalToLocalShape`) and split `xla.sdy.FuncResultSharding`s."""
    out, i = [], 0
    while (j := text.find(", sharding={", i)) >= 0:
        out.append(text[i:j])
        k, depth = j + len(", sharding="), 0
        while True:
            depth += {"{": 1, "}": -1}.get(text[k], 0)
            k += 1
            if depth == 0:
                break
        i = k
    return "".join(out) + text[i:]


def run_xla_devices(text, inputs, replicas, partitions):
    """XLA:CPU on replicas x partitions host devices. Returns (per-device inputs, per-device
    outputs): lists over parameters / outputs of lists over devices (global device order)."""
    import jax
    from jax._src.lib import xla_client
    from jax._src.sharding_impls import GSPMDSharding  # not public in jax 0.10
    jax.config.update("jax_enable_x64", True)
    if 'custom_call_target="lapack_' in text:
        from jax._src.lib import lapack  # as the tool's run_hlo: the FFI kernels need their LAPACK set up
        lapack.prepare_lapack_call("potrf_ffi", np.float32)
    n = replicas * partitions
    devs = jax.devices()[:n]
    shardy = "xla.sdy.meshes" in header(text)  # JAX's Shardy export: partition as JAX did
    mod = xla_client.hlo.hlo_module_from_text(without_gspmd_shardings(text) if shardy else as_gspmd(text))
    mlir = xla_client._xla.mlir.hlo_to_stablehlo(mod.as_serialized_hlo_module_proto())
    opts = xla_client.CompileOptions()
    ebo = opts.executable_build_options
    ebo.num_replicas, ebo.num_partitions = replicas, partitions
    ebo.use_spmd_partitioning = partitions > 1
    ebo.use_shardy_partitioner = shardy
    ebo.device_assignment = xla_client.DeviceAssignment.create(np.arange(n).reshape(replicas, partitions))
    exe = devs[0].client.compile_and_load(mlir, xla_client.DeviceList(tuple(devs)), opts)
    if partitions > 1:
        shardings = [GSPMDSharding(devs, s) for s in exe.get_parameter_shardings()]
    else:  # replicas only: every device takes the whole array
        shardings = [GSPMDSharding.get_replicated(devs) for _ in inputs]
    per_device_in, arrays = [], []
    for x, sh in zip(inputs, shardings):
        where = sh.devices_indices_map(x.shape)
        per_device_in.append([x[where[d]] for d in devs])
        arrays.append(jax.make_array_from_single_device_arrays(
            x.shape, sh, [jax.device_put(x[where[d]], d) for d in devs]))
    outs = exe.execute_sharded(arrays).disassemble_into_single_device_arrays()
    order = {d.id: i for i, d in enumerate(devs)}
    per_device_out = []
    for per_dev in outs:
        got = [None] * n
        for a in per_dev:
            got[order[next(iter(a.devices())).id]] = np.asarray(a)
        per_device_out.append(got)
    return per_device_in, per_device_out


def _worker(conn):
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        try:
            conn.send(("ok", run_xla_devices(*job)))
        except Exception as e:  # noqa: BLE001
            conn.send(("err", (str(e).splitlines() or [type(e).__name__])[0][:300]))


class XlaDevices:
    """XLA:CPU with MAX_DEVICES host devices in a child process (stoppable when a program never ends)."""

    def __init__(self):
        import multiprocessing as mp
        self.mp = mp.get_context("spawn")
        self.proc = None

    def run(self, job, timeout):
        if self.proc is None or not self.proc.is_alive():
            flags = os.environ.get("XLA_FLAGS", "")
            os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={MAX_DEVICES}".strip()
            self.conn, child = self.mp.Pipe()
            self.proc = self.mp.Process(target=_worker, args=(child,), daemon=True)
            self.proc.start()
            os.environ["XLA_FLAGS"] = flags
        self.conn.send(job)
        if not self.conn.poll(timeout):
            self.stop()
            return "err", f"did not finish in {timeout} s"
        try:
            return self.conn.recv()
        except EOFError:
            self.stop()
            return "err", "XLA's process died"

    def stop(self):
        self.proc.kill()
        self.proc.join()
        self.proc = None


def last_line(stderr):
    return (stderr.strip().splitlines() or ["?"])[-1][:400]


def failure(r):
    return "crash" if r.returncode >= 128 or r.returncode < 0 or "panicked" in r.stderr else "error"


def other_skip(tool, text):
    """The tool's reason to skip the module had it been for one device (python callbacks,
    tokens, ...), unless jax_suite_narrow.py shows it comparable; sharded values are what
    several devices are for."""
    head, rest = text.split("\n", 1) if "\n" in text else (text, "")
    why = tool.skip_reason(re.sub(r"\b(replica_count|num_partitions)=\d+", "", head) + "\n" + rest)
    return None if why is None or why == "sharded" or narrow.comparable_skip(why) else why


def compare_module(tool, hlojit, path, text, seed, xla, tmp):
    """(outcome, detail) for one module."""
    why = other_skip(tool, text)
    if why:
        return "skipped", why
    replicas, partitions = device_grid(text)
    n = replicas * partitions
    if n > MAX_DEVICES:
        return "skipped", f"{n} devices (this tool gives XLA {MAX_DEVICES})"
    r = subprocess.run([hlojit, "opt", path], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return failure(r), last_line(r.stderr)
    params, outs = tool.entry_signature(text)
    unknown = sorted({dt for dt, _ in params + outs if narrow.dtype(tool, dt) is None})
    if unknown:
        return "skipped", f"element types {unknown}"
    rng = np.random.default_rng(seed)
    inputs = [narrow.random_input(tool, rng, dt, shape) for dt, shape in params]
    status, got = xla.run((text, inputs, replicas, partitions), 60)
    if status != "ok":
        return "skipped", f"XLA: {got}"
    per_device_in, want = got
    d = os.path.join(tmp, os.path.basename(path)[:-4])
    os.makedirs(d, exist_ok=True)
    args = []
    for i, ((dt, _), parts) in enumerate(zip(params, per_device_in)):
        if len({p.shape for p in parts}) > 1:
            return "skipped", f"parameter {i}: devices hold parts of different shapes"
        f = os.path.join(d, f"in{i}.npy")
        np.save(f, np.stack([narrow.to_file(dt, p) for p in parts]))
        args += ["--input", f]
    try:
        r = subprocess.run([hlojit, "run", path, *args, "--output-dir", d], capture_output=True, text=True,
                           timeout=120)
    except subprocess.TimeoutExpired:
        return "hang", "no result in 120 s"
    if r.returncode != 0:
        return failure(r), last_line(r.stderr)
    for j, ((dt, _), per_dev) in enumerate(zip(outs, want)):
        stacked = np.load(os.path.join(d, f"out{j}.npy"))
        if stacked.shape[0] != n:
            return "mismatch", f"output {j}: {stacked.shape[0]} devices' results, not {n}"
        for dev, w in enumerate(per_dev):
            m = narrow.compare(tool, dt, stacked[dev], np.asarray(w))
            if m:
                return "mismatch", f"output {j} ({dt}) device {dev}: {m}"
    shutil.rmtree(d, ignore_errors=True)
    return "pass", ""


def main():
    ap = narrow.tool_arguments(__doc__)
    ap.add_argument("--report", help="where the JSON report goes (default OUT/report_devices.json)")
    a = ap.parse_args()
    tool = narrow.load_tool(a.tool)
    report = json.load(open(os.path.join(a.out, "report.json")))
    todo = sorted(h for h, v in report.items() if v["outcome"] == "skipped" and v["detail"] == "several devices")
    results, counts = {}, collections.Counter()
    tmp = tempfile.mkdtemp(prefix="jaxdevices.")
    xla = XlaDevices()
    for k, h in enumerate(todo):
        path = os.path.join(a.out, "modules", h + ".hlo")
        text = open(path).read()
        try:
            outcome, detail = compare_module(tool, os.path.abspath(a.hlojit), path, text, a.seed, xla, tmp)
        except subprocess.TimeoutExpired:
            outcome, detail = "hang", "hlojit opt: no result in 120 s"
        results[h] = {"src": report[h]["src"], "outcome": outcome, "detail": detail}
        counts[outcome] += 1
        if (k + 1) % 100 == 0:
            print(f"[{k + 1}/{len(todo)}] {dict(counts)}", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    with open(a.report or os.path.join(a.out, "report_devices.json"), "w") as fh:
        json.dump(results, fh, indent=1)
    ran = sum(v for k, v in counts.items() if k != "skipped")
    print(f"modules for several devices {len(todo)}: {dict(counts)}; pass rate {counts['pass']}/{ran}")
    groups = collections.Counter((v["outcome"], re.sub(r"\d+", "N", v["detail"])[:160]) for v in results.values()
                                 if v["outcome"] != "pass")
    for (o, dtl), c in groups.most_common(40):
        print(f"  {c:5d} {o:8s} {dtl}")


if __name__ == "__main__":
    main()
