//! `mpirun -n N hlojit run --distributed mpi`: the collective groups of the conformance corpus
//! (4 devices, compared with XLA:CPU's outputs) and the multi-device file tests of 2 and 3
//! devices (compared with their expected values), one process per device; and a failure on
//! one rank ending every rank with a message instead of a hang. Needs OpenMPI's `mpirun`
//! (`cargo xtask setup` installs it).
#![cfg(feature = "mpi")]

use hlojit_runtime::{npy, ArrayLiteral};
use hlojit_tools::conformance::compare::compare;
use hlojit_tools::conformance::case::Case;
use hlojit_tools::conformance::case_dirs;
use hlojit_tools::filetest::parse_directives;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tools/ is in the workspace").to_path_buf()
}

/// Runs `mpirun -n devices hlojit run --distributed mpi module --input ... --output-dir out`
/// (killed after two minutes); returns (success, stdout + stderr).
fn mpirun(devices: usize, module: &Path, inputs: &[PathBuf], out: &Path) -> (bool, String) {
    // One mpirun at a time: concurrent ones race creating OpenMPI's session directories.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut cmd = Command::new("mpirun");
    // Root in containers and CI; more processes than cores on small machines.
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-n", &devices.to_string()]);
    cmd.arg(env!("CARGO_BIN_EXE_hlojit")).args(["run", "--distributed", "mpi"]).arg(module).arg("--output-dir").arg(out);
    for i in inputs {
        cmd.arg("--input").arg(i);
    }
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

#[test]
fn corpus_collective_cases_on_four_processes() {
    let tmp = tempfile::tempdir().unwrap();
    let mut ran = 0;
    let mut failures = Vec::new();
    for dir in case_dirs(&repo().join("tests/conformance")).unwrap() {
        let case = Case::load(&dir).unwrap();
        if case.replicas < 2 {
            continue;
        }
        let out = tmp.path().join(&case.name);
        let inputs: Vec<PathBuf> = case.inputs.iter().map(|a| dir.join(&a.file)).collect();
        let (ok, log) = mpirun(case.replicas, &dir.join("module.hlo"), &inputs, &out);
        let expected: Vec<ArrayLiteral> = case.outputs.iter().map(|a| case.read_array(a).unwrap()).collect();
        let result = if ok { check_outputs(&out, &expected, case.exact, case.rtol, case.atol) } else { Err(log) };
        if let Err(e) = result {
            failures.push(format!("{} ({} processes): {e}", case.name, case.replicas));
        }
        ran += 1;
    }
    assert!(ran >= 6, "the corpus has {ran} collective cases");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn multi_device_file_tests_on_two_and_three_processes() {
    let tmp = tempfile::tempdir().unwrap();
    let tests = [
        ("collectives/async_forms.hlo", 2),
        ("collectives/grid_2x2.hlo", 4),
        ("collectives/permute_several_operands.hlo", 3),
        ("transfers/send_recv_ring.hlo", 3),
        ("transfers/send_recv_partial.hlo", 3),
    ];
    let mut failures = Vec::new();
    for (name, devices) in tests {
        let path = repo().join("tests/filetests").join(name);
        let test = parse_directives(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let work = tmp.path().join(name.replace('/', "_"));
        std::fs::create_dir_all(&work).unwrap();
        let inputs: Vec<PathBuf> = test
            .inputs
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let p = work.join(format!("in{i}.npy"));
                npy::write(&p, a).unwrap();
                p
            })
            .collect();
        let out = work.join("out");
        let (ok, log) = mpirun(devices, &path, &inputs, &out);
        let result = if ok { check_outputs(&out, &test.expected, test.exact, test.rtol, test.atol) } else { Err(log) };
        if let Err(e) = result {
            failures.push(format!("{name} ({devices} processes): {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn an_error_on_one_rank_ends_every_rank() {
    // The branches send and receive without naming the other side, which MPI cannot do: the
    // ranks fail, and the run ends with the message instead of hanging.
    let tmp = tempfile::tempdir().unwrap();
    let module = repo().join("tests/filetests/transfers/send_recv_branches.hlo");
    let input = tmp.path().join("in0.npy");
    npy::write(&input, &ArrayLiteral::from_slice(&[2, 3], &[1f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap()).unwrap();
    let (ok, log) = mpirun(2, &module, &[input], &tmp.path().join("out"));
    assert!(!ok, "{log}");
    assert!(log.contains("needs _xla_send_recv_source_target_pairs"), "{log}");
    assert!(!log.contains("timed out"), "{log}");
}
