//! `mpirun -n N hlojit run --distributed mpi`: the collective groups of the conformance corpus
//! (4 devices) and every multi-device file test of collectives/ and transfers/ that runs to a
//! result (2, 3 and 4 devices), one process per device, each compared with XLA:CPU's outputs
//! (the corpus) or the expected values (file tests) and bit for bit with the in-process run
//! of the same command; a failure on one rank ending every rank with a message instead of a
//! hang; and `Executable::run_distributed` from the library. Needs OpenMPI's `mpirun`
//! (`cargo xtask setup` installs it); without it the tests say so and pass.
#![cfg(feature = "mpi")]

use hlojit_runtime::{npy, ArrayLiteral};
use hlojit_tools::conformance::compare::compare;
use hlojit_tools::conformance::case::Case;
use hlojit_tools::conformance::case_dirs;
use hlojit_tools::filetest::{parse_directives, FileTest};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Whether OpenMPI's launcher is on the PATH; prints why a test is skipped when not.
fn have_mpirun(test: &str) -> bool {
    let found = Command::new("mpirun").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    if !found {
        println!("{test}: skipped, no mpirun on the PATH (cargo xtask setup installs OpenMPI)");
    }
    found
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tools/ is in the workspace").to_path_buf()
}

/// Runs `mpirun -n devices hlojit run --distributed mpi module --input ... --output-dir out
/// [--infeed ... --outfeed-dir out/feeds]` (killed after two minutes); returns (success,
/// stdout + stderr).
fn mpirun(devices: usize, module: &Path, inputs: &[PathBuf], infeeds: &[PathBuf], out: &Path) -> (bool, String) {
    let _turn = mpirun_turn();
    let mut cmd = Command::new("mpirun");
    // Root in containers and CI; more processes than cores on small machines.
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-n", &devices.to_string()]);
    cmd.arg(env!("CARGO_BIN_EXE_hlojit")).args(["run", "--distributed", "mpi"]);
    hlojit_run_args(&mut cmd, module, inputs, infeeds, out);
    run_logged(cmd, out)
}

/// The same `hlojit run` in one process (devices as threads), for the bitwise comparison.
fn in_process(module: &Path, inputs: &[PathBuf], infeeds: &[PathBuf], out: &Path) -> (bool, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hlojit"));
    cmd.arg("run");
    hlojit_run_args(&mut cmd, module, inputs, infeeds, out);
    run_logged(cmd, out)
}

fn hlojit_run_args(cmd: &mut Command, module: &Path, inputs: &[PathBuf], infeeds: &[PathBuf], out: &Path) {
    cmd.arg(module).arg("--output-dir").arg(out);
    for i in inputs {
        cmd.arg("--input").arg(i);
    }
    for i in infeeds {
        cmd.arg("--infeed").arg(i);
    }
    if !infeeds.is_empty() {
        cmd.arg("--outfeed-dir").arg(out.join("feeds"));
    }
}

/// One mpirun at a time: concurrent ones race creating OpenMPI's session directories.
fn mpirun_turn() -> std::sync::MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn run_logged(mut cmd: Command, out: &Path) -> (bool, String) {
    let log = out.with_extension("log");
    let file = std::fs::File::create(&log).unwrap();
    cmd.stdout(Stdio::from(file.try_clone().unwrap())).stderr(Stdio::from(file));
    let mut child = cmd.spawn().expect("mpirun runs (cargo xtask setup installs OpenMPI)");
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    match status {
        Some(s) => (s.success(), text),
        None => (false, format!("timed out (a hang)\n{text}")),
    }
}

fn check_outputs(out: &Path, expected: &[ArrayLiteral], exact: bool, rtol: f64, atol: f64) -> Result<(), String> {
    for (k, want) in expected.iter().enumerate() {
        let got = npy::read(&out.join(format!("out{k}.npy")), Some(want.element_type())).map_err(|e| format!("out{k}: {e}"))?;
        if let Some(diff) = compare(&got, want, exact, rtol, atol) {
            return Err(format!("out{k}: {diff}"));
        }
    }
    Ok(())
}

/// Every result of the MPI run equals the in-process run's bit for bit.
fn same_as_in_process(mpi: &Path, threads: &Path, count: usize) -> Result<(), String> {
    for k in 0..count {
        let name = format!("out{k}.npy");
        let (a, b) = (std::fs::read(mpi.join(&name)), std::fs::read(threads.join(&name)));
        match (a, b) {
            (Ok(a), Ok(b)) if a == b => {}
            (Ok(_), Ok(_)) => return Err(format!("{name} differs from the in-process run's")),
            (a, b) => return Err(format!("{name}: {:?} {:?}", a.err(), b.err())),
        }
    }
    Ok(())
}

#[test]
fn corpus_collective_cases_on_four_processes() {
    if !have_mpirun("corpus_collective_cases_on_four_processes") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut ran = 0;
    let mut failures = Vec::new();
    for dir in case_dirs(&repo().join("tests/conformance")).unwrap() {
        let case = Case::load(&dir).unwrap();
        if case.replicas < 2 {
            continue;
        }
        let out = tmp.path().join(&case.name);
        let threads = tmp.path().join(format!("{}.threads", case.name));
        let inputs: Vec<PathBuf> = case.inputs.iter().map(|a| dir.join(&a.file)).collect();
        let module = dir.join("module.hlo");
        let (ok, log) = mpirun(case.replicas, &module, &inputs, &[], &out);
        let (ok_threads, log_threads) = in_process(&module, &inputs, &[], &threads);
        let expected: Vec<ArrayLiteral> = case.outputs.iter().map(|a| case.read_array(a).unwrap()).collect();
        let result = match (ok, ok_threads) {
            (false, _) => Err(log),
            (_, false) => Err(format!("in process: {log_threads}")),
            _ => check_outputs(&out, &expected, case.exact, case.rtol, case.atol).and_then(|()| same_as_in_process(&out, &threads, expected.len())),
        };
        if let Err(e) = result {
            failures.push(format!("{} ({} processes): {e}", case.name, case.replicas));
        }
        ran += 1;
    }
    assert!(ran >= 6, "the corpus has {ran} collective cases");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `replica_count` × `num_partitions` from a module's header line.
fn header_devices(text: &str) -> usize {
    let header = text.lines().find(|l| l.starts_with("HloModule")).unwrap_or("");
    let count = |key: &str| {
        header.split(key).nth(1).and_then(|rest| rest.trim_start_matches('=').split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()).unwrap_or(1usize)
    };
    count("replica_count") * count("num_partitions")
}

/// Writes `arrays` as `dir/<prefix><i>.npy`.
fn write_all(dir: &Path, prefix: &str, arrays: &[ArrayLiteral]) -> Vec<PathBuf> {
    arrays
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let p = dir.join(format!("{prefix}{i}.npy"));
            npy::write(&p, a).unwrap();
            p
        })
        .collect()
}

/// Outfeed value `k` of the file test (stacked over the devices) against what each process
/// wrote to `feeds/device<d>/outfeed<k>.npy`.
fn check_outfeeds(feeds: &Path, test: &FileTest, devices: usize) -> Result<(), String> {
    use hlojit_tools::conformance::multi_device::unstack;
    for (k, stacked) in test.outfeed.iter().enumerate() {
        for (d, want) in unstack(stacked, devices)?.iter().enumerate() {
            let path = feeds.join(format!("device{d}/outfeed{k}.npy"));
            let got = npy::read(&path, Some(want.element_type())).map_err(|e| format!("{}: {e}", path.display()))?;
            if let Some(diff) = compare(&got, want, test.exact, test.rtol, test.atol) {
                return Err(format!("device {d} outfeed {k}: {diff}"));
            }
        }
    }
    Ok(())
}

/// File tests that end with an error on MPI, and the error: a send or recv that names no peer
/// (no `_xla_send_recv_source_target_pairs`) goes to whichever device receives on the channel
/// in one process, but MPI has to name the rank; a deadlock (every device receives before it
/// sends) is detected across processes as in one.
const MPI_ERRORS: &[(&str, &str)] = &[
    ("transfers/send_recv_branches.hlo", "needs _xla_send_recv_source_target_pairs"),
    ("transfers/send_recv_deadlock.hlo", "deadlock: every running device waits"),
];

#[test]
fn multi_device_file_tests_on_two_to_four_processes() {
    if !have_mpirun("multi_device_file_tests_on_two_to_four_processes") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut ran = Vec::new();
    for folder in ["collectives", "transfers"] {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(repo().join("tests/filetests").join(folder)).unwrap().map(|e| e.unwrap().path()).collect();
        paths.sort();
        for path in paths {
            let text = std::fs::read_to_string(&path).unwrap();
            let devices = header_devices(&text);
            let test = parse_directives(&text).unwrap();
            // Runs that must fail are the in-process rendezvous's errors (deadlock, a send
            // without a receiver); an_error_on_one_rank_ends_every_rank covers MPI's.
            let name = format!("{folder}/{}", path.file_name().unwrap().to_string_lossy());
            let mpi_error = MPI_ERRORS.iter().find(|(n, _)| *n == name);
            if devices < 2 || test.error.is_some() || (test.run_error.is_some() && mpi_error.is_none()) {
                continue;
            }
            let work = tmp.path().join(name.replace('/', "_"));
            std::fs::create_dir_all(&work).unwrap();
            let inputs = write_all(&work, "in", &test.inputs);
            let infeeds = write_all(&work, "infeed", &test.infeed);
            let (out, threads) = (work.join("out"), work.join("threads"));
            let (ok, log) = mpirun(devices, &path, &inputs, &infeeds, &out);
            if let Some((_, message)) = mpi_error {
                // Must end with its error, not hang (the runs have no --timeout) and not run.
                if ok || !log.contains(message) || log.contains("timed out") {
                    failures.push(format!("{name} ({devices} processes) should fail with '{message}': {log}"));
                }
                ran.push((name, devices));
                continue;
            }
            let (ok_threads, log_threads) = in_process(&path, &inputs, &infeeds, &threads);
            let result = match (ok, ok_threads) {
                (false, _) => Err(log),
                (_, false) => Err(format!("in process: {log_threads}")),
                _ => check_outputs(&out, &test.expected, test.exact, test.rtol, test.atol)
                    .and_then(|()| same_as_in_process(&out, &threads, test.expected.len()))
                    .and_then(|()| check_outfeeds(&out.join("feeds"), &test, devices)),
            };
            if let Err(e) = result {
                failures.push(format!("{name} ({devices} processes): {e}"));
            }
            ran.push((name, devices));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The groups the issue asks for: 2 and 4 processes, and the ops the MPI path must carry.
    for must in [
        "collectives/all_reduce_builtin.hlo",
        "collectives/async_forms.hlo",
        "collectives/broadcast.hlo",
        "collectives/permute_several_operands.hlo",
        "transfers/infeed_per_device.hlo",
        "transfers/send_recv_deadlock.hlo",
    ] {
        assert!(ran.iter().any(|(n, _)| n == must), "{must} did not run: {ran:?}");
    }
    assert!(ran.iter().any(|&(_, d)| d == 2) && ran.iter().any(|&(_, d)| d == 4), "{ran:?}");
}

#[test]
fn an_error_on_one_rank_ends_every_rank() {
    if !have_mpirun("an_error_on_one_rank_ends_every_rank") {
        return;
    }
    // Replica 1 fails (its branch sends without naming a receiver, which MPI cannot do) while
    // replica 0 already waits in an all-reduce for it: the run ends with replica 1's message
    // instead of hanging.
    let tmp = tempfile::tempdir().unwrap();
    let module = tmp.path().join("one_rank_fails.hlo");
    std::fs::write(&module, ONE_RANK_FAILS).unwrap();
    let input = tmp.path().join("in0.npy");
    npy::write(&input, &ArrayLiteral::from_slice(&[2, 3], &[1f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap()).unwrap();
    let start = Instant::now();
    let (ok, log) = mpirun(2, &module, &[input], &[], &tmp.path().join("out"));
    assert!(!ok, "{log}");
    assert!(log.contains("device 1: ") && log.contains("needs _xla_send_recv_source_target_pairs"), "{log}");
    assert!(!log.contains("timed out"), "{log}");
    assert!(start.elapsed() < Duration::from_secs(60), "{log}");
}

#[test]
fn a_rank_waiting_for_one_that_finished_fails_instead_of_hanging() {
    if !have_mpirun("a_rank_waiting_for_one_that_finished_fails_instead_of_hanging") {
        return;
    }
    // Replica 1 skips the all-reduce replica 0 waits in and finishes the program.
    let tmp = tempfile::tempdir().unwrap();
    let module = tmp.path().join("one_rank_skips.hlo");
    std::fs::write(&module, ONE_RANK_SKIPS).unwrap();
    let input = tmp.path().join("in0.npy");
    npy::write(&input, &ArrayLiteral::from_slice(&[2, 3], &[1f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap()).unwrap();
    let (ok, log) = mpirun(2, &module, &[input], &[], &tmp.path().join("out"));
    assert!(!ok, "{log}");
    assert!(log.contains("device 0: ") && log.contains("device 1 finished the program without joining collective op"), "{log}");
}

const ONE_RANK_FAILS: &str = "HloModule one_rank_fails, replica_count=2

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

waits {
  p = f32[3] parameter(0)
  ROOT r = f32[3] all-reduce(p), replica_groups={}, to_apply=add
}

fails {
  p = f32[3] parameter(0)
  t = token[] after-all()
  s = (f32[3], u32[], token[]) send(p, t), channel_id=2
  sd = token[] send-done(s), channel_id=2
  ROOT r = f32[3] copy(p)
}

ENTRY e {
  p = f32[3] parameter(0)
  id = u32[] replica-id()
  i = s32[] convert(id)
  ROOT c = f32[3] conditional(i, p, p), branch_computations={waits, fails}
}
";

const ALL_REDUCE_AND_PERMUTE: &str = "HloModule library_run, replica_count=2

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  x = f32[2] parameter(0)
  s = f32[2] all-reduce(x), replica_groups={}, to_apply=add
  p = f32[2] collective-permute(x), source_target_pairs={{0,1}}
  ROOT t = (f32[2], f32[2]) tuple(s, p)
}
";

/// One MPI process of [`run_distributed_from_the_library`] (a no-op in an ordinary test run):
/// device d runs with {d + 1, 10 (d + 1)} through `Executable::run_distributed`.
#[test]
fn library_worker() {
    if std::env::var_os("HLOJIT_MPI_LIBRARY_WORKER").is_none() {
        return;
    }
    use hlojit::{Client, Communicator, HostBuffer};
    use std::sync::Arc;
    let universe = hlojit_mpi::initialize().expect("MPI initializes once");
    let communicator: Arc<dyn Communicator> = Arc::new(hlojit_mpi::MpiCommunicator::new(&universe));
    let rank = communicator.local_device().expect("an MPI communicator runs one device");
    let exe = Client::new().compile_text(ALL_REDUCE_AND_PERMUTE).unwrap();
    let x = (rank + 1) as f32;
    let mine = HostBuffer::from_slice(&[2], &[x, 10.0 * x]).unwrap();
    let results = exe.run_distributed(&communicator, vec![&mine]).unwrap();
    assert_eq!(results[0].as_slice::<f32>().unwrap(), &[3.0, 30.0]);
    // Replica 1 receives replica 0's operand; replica 0 is nobody's target and gets zeros.
    let permuted: &[f32] = if rank == 1 { &[1.0, 10.0] } else { &[0.0, 0.0] };
    assert_eq!(results[1].as_slice::<f32>().unwrap(), permuted);
    println!("library worker {rank}: ok");
}

/// `Executable::run_distributed` with hlojit-mpi's communicator, in a program of its own on
/// each of two MPI processes (this test binary, running `library_worker`).
#[test]
fn run_distributed_from_the_library() {
    if !have_mpirun("run_distributed_from_the_library") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let _turn = mpirun_turn();
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-n", "2", "-x", "HLOJIT_MPI_LIBRARY_WORKER=1"]);
    cmd.arg(std::env::current_exe().unwrap()).args(["--exact", "library_worker", "--nocapture", "--test-threads", "1"]);
    let (ok, log) = run_logged(cmd, &tmp.path().join("library"));
    assert!(ok, "{log}");
    assert!(log.contains("library worker 0: ok") && log.contains("library worker 1: ok"), "{log}");
}

const ONE_RANK_SKIPS: &str = "HloModule one_rank_skips, replica_count=2

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

waits {
  p = f32[3] parameter(0)
  ROOT r = f32[3] all-reduce(p), replica_groups={}, to_apply=add
}

skips {
  p = f32[3] parameter(0)
  ROOT r = f32[3] negate(p)
}

ENTRY e {
  p = f32[3] parameter(0)
  id = u32[] replica-id()
  i = s32[] convert(id)
  ROOT c = f32[3] conditional(i, p, p), branch_computations={waits, skips}
}
";
