//! Bad input on the command line, each with the exact error `hlojit` must print and none
//! ending the process with a signal: module files that are empty, not UTF-8 or too large,
//! .npy inputs that are corrupt, truncated, of the wrong dtype, shape or count (checked before
//! anything is compiled), conflicting flags, plugins the loader refuses, CPUs LLVM cannot
//! generate code for, and loops that only a timeout ends.

use hlojit_runtime::{npy, ArrayLiteral};
use std::path::{Path, PathBuf};
use std::process::Command;

fn hlojit() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_hlojit"))
}

/// Runs `hlojit` with `args`; returns (exit code, stdout, stderr). A signal is a failure.
fn hlojit_run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(hlojit())
        .args(args)
        .output()
        .expect("the hlojit binary runs");
    let code = out
        .status
        .code()
        .unwrap_or_else(|| panic!("hlojit {args:?} was killed: {}", out.status));
    (
        code,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `hlojit` expecting failure with exactly `message` on stderr (after `error: `) and
/// nothing compiled.
fn fails_with(args: &[&str], message: &str) {
    let (code, stdout, stderr) = hlojit_run(args);
    assert_eq!(code, 1, "hlojit {args:?}: exit {code}\n{stdout}\n{stderr}");
    assert_eq!(stderr.trim_end(), format!("error: {message}"), "hlojit {args:?}");
    assert!(
        !stdout.contains("compiled"),
        "hlojit {args:?} compiled before failing: {stdout}"
    );
}

struct Dir(tempfile::TempDir);

impl Dir {
    fn new() -> Dir {
        Dir(tempfile::tempdir().expect("a temporary directory"))
    }

    fn file(&self, name: &str, bytes: &[u8]) -> String {
        let path = self.0.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path.display().to_string()
    }

    fn path(&self, name: &str) -> String {
        self.0.path().join(name).display().to_string()
    }
}

const ADD: &str = "HloModule m
ENTRY e {
  x = f32[2,3] parameter(0)
  y = f32[2,3] parameter(1)
  ROOT z = f32[2,3] add(x, y)
}
";

fn npy_bytes(array: &ArrayLiteral) -> Vec<u8> {
    npy::to_bytes(array)
}

/// A version 1.0 .npy file with this header text and data.
fn raw_npy(header: &str, data: &[u8]) -> Vec<u8> {
    let header = format!("{header}\n");
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

#[test]
fn module_files_that_are_not_modules() {
    let dir = Dir::new();
    let empty = dir.file("empty.hlo", b"");
    fails_with(
        &["run", &empty, "--random-inputs", "1"],
        &format!("{empty}:1:1: expected 'HloModule' at the start of the module, found end of input"),
    );
    let latin1 = dir.file("latin1.hlo", b"HloModule m\n// caf\xe9\n");
    fails_with(
        &["run", &latin1],
        &format!("{latin1}:2:7: the module text is not UTF-8 (byte 18 is invalid)"),
    );
    let missing = dir.path("missing.hlo");
    fails_with(
        &["run", &missing],
        &format!("{missing}: No such file or directory (os error 2)"),
    );
    // Larger than the bound (a sparse file: nothing is written or read).
    let huge = dir.path("huge.hlo");
    std::fs::File::create(&huge).unwrap().set_len((1 << 30) + 1).unwrap();
    fails_with(
        &["run", &huge],
        &format!("{huge}: larger than 1073741824 bytes (1.0 GiB), the most hlojit reads as module text"),
    );
    fails_with(
        &["compile", &huge, "-o", &dir.path("out.o")],
        &format!("{huge}: larger than 1073741824 bytes (1.0 GiB), the most hlojit reads as module text"),
    );
}

#[test]
fn inputs_are_checked_before_compiling() {
    let dir = Dir::new();
    let module = dir.file("add.hlo", ADD.as_bytes());
    let good = dir.file(
        "good.npy",
        &npy_bytes(&ArrayLiteral::from_slice(&[2, 3], &[1.0f32; 6]).unwrap()),
    );
    let (code, stdout, stderr) = hlojit_run(&["run", &module, "--input", &good, "--input", &good]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("out0: f32[2, 3] [2.000000, 2.000000"), "{stdout}");

    fails_with(
        &["run", &module, "--input", &good],
        "the module takes 2 input arrays, 1 given with --input (or use --random-inputs SEED)",
    );
    let ints = dir.file(
        "ints.npy",
        &npy_bytes(&ArrayLiteral::from_slice(&[2, 3], &[1i32; 6]).unwrap()),
    );
    fails_with(
        &["run", &module, "--input", &good, "--input", &ints],
        &format!("--input {ints} for input 1: .npy dtype '<i4' cannot hold f32 values"),
    );
    let wide = dir.file(
        "wide.npy",
        &npy_bytes(&ArrayLiteral::from_slice(&[3, 2], &[1.0f32; 6]).unwrap()),
    );
    fails_with(
        &["run", &module, "--input", &wide, "--input", &good],
        &format!("--input {wide} for input 0 is f32[3,2], the module takes f32[2,3]"),
    );

    let garbage = dir.file("garbage.npy", &raw_npy(",,,", &[]));
    fails_with(
        &["run", &module, "--input", &garbage, "--input", &good],
        &format!("--input {garbage} for input 0: not a .npy file: bad header: expected '{{' at \",,,\""),
    );
    let maybe = dir.file(
        "maybe.npy",
        &raw_npy("{'descr': '<f4', 'fortran_order': maybe, 'shape': (2, 3), }", &[0; 24]),
    );
    fails_with(&["run", &module, "--input", &maybe, "--input", &good], &format!("--input {maybe} for input 0: not a .npy file: bad header: expected True or False at \"maybe, 'shape': (2, \""));
    let truncated = dir.file(
        "truncated.npy",
        &raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", &[0; 10]),
    );
    fails_with(&["run", &module, "--input", &truncated, "--input", &good], &format!("--input {truncated} for input 0: not a .npy file: the shape [2, 3] of <f4 takes 24 data bytes, the file has 10"));
    let object = dir.file(
        "object.npy",
        &raw_npy("{'descr': '|O', 'fortran_order': False, 'shape': (2, 3), }", &[0; 48]),
    );
    fails_with(
        &["run", &module, "--input", &object, "--input", &good],
        &format!("--input {object} for input 0: unsupported .npy dtype '|O'"),
    );
    let not_npy = dir.file("not.npy", b"hello");
    fails_with(
        &["run", &module, "--input", &not_npy, "--input", &good],
        &format!("--input {not_npy} for input 0: not a .npy file: missing magic string"),
    );

    // Fortran order is read in logical order: [[1, 2, 3], [4, 5, 6]] stored by columns.
    let data: Vec<u8> = [1.0f32, 4.0, 2.0, 5.0, 3.0, 6.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let fortran = dir.file(
        "fortran.npy",
        &raw_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", &data),
    );
    let out = dir.path("out");
    let (code, _, stderr) = hlojit_run(&[
        "run",
        &module,
        "--input",
        &fortran,
        "--input",
        &good,
        "--output-dir",
        &out,
    ]);
    assert_eq!(code, 0, "{stderr}");
    let sum = npy::read(Path::new(&out).join("out0.npy").as_path(), None).unwrap();
    assert_eq!(sum.as_slice::<f32>().unwrap(), &[2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
}

#[test]
fn conflicting_flags_are_refused() {
    let dir = Dir::new();
    let module = dir.file("add.hlo", ADD.as_bytes());
    let good = dir.file(
        "good.npy",
        &npy_bytes(&ArrayLiteral::from_slice(&[2, 3], &[1.0f32; 6]).unwrap()),
    );
    let (code, _, stderr) = hlojit_run(&["run", &module, "--input", &good, "--random-inputs", "1"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("error: the argument '--input <INPUTS>' cannot be used with '--random-inputs <RANDOM_INPUTS>'"),
        "{stderr}"
    );
    let (code, _, stderr) = hlojit_run(&["run", &module, "--random-inputs", "1", "--timeout=-1"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("'-1' is not a positive number of seconds"), "{stderr}");
}

#[test]
fn a_runaway_loop_ends_at_the_timeout() {
    let dir = Dir::new();
    let module = dir.file(
        "forever.hlo",
        b"HloModule m
cond {
  s = s32[] parameter(0)
  ROOT t = pred[] constant(true)
}
body {
  s = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT n = s32[] add(s, one)
}
ENTRY e {
  x = s32[] parameter(0)
  ROOT w = s32[] while(x), condition=cond, body=body
}
",
    );
    let (code, _, stderr) = hlojit_run(&["run", &module, "--random-inputs", "1", "--timeout", "0.2"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.starts_with("error: the run's deadline passed (stopped "),
        "{stderr}"
    );
}

#[test]
fn custom_calls_cannot_reach_the_c_library() {
    let dir = Dir::new();
    let module = dir.file(
        "system.hlo",
        b"HloModule m
ENTRY e {
  x = u8[16] parameter(0)
  ROOT y = u8[16] custom-call(x), custom_call_target=\"system\"
}
",
    );
    let message = "custom-call target 'system' not found (not registered, in no loaded plugin, not built in; the process's own symbols are searched only when allowed: CompileOptions::process_symbols, hlojit --allow-process-symbols)";
    fails_with(&["run", &module, "--random-inputs", "1"], message);
    fails_with(
        &[
            "run",
            &module,
            "--random-inputs",
            "1",
            "--allow-process-symbol",
            "system",
        ],
        message,
    );
    fails_with(
        &["run", &module, "--random-inputs", "1", "--allow-process-symbols"],
        message,
    );
}

#[test]
fn plugins_the_loader_refuses_show_its_message() {
    let dir = Dir::new();
    let module = dir.file("add.hlo", ADD.as_bytes());
    let not_a_library = dir.file("libnot.so", b"not a shared library");
    let (code, _, stderr) = hlojit_run(&["run", &module, "--random-inputs", "1", "--plugin", &not_a_library]);
    assert_eq!(code, 1);
    // glibc: "file too short" (or "invalid ELF header"): the loader's own words, not just "dlopen failed".
    let prefix = format!("error: cannot load custom-call plugin {not_a_library}: dlopen failed: {not_a_library}: ");
    assert!(
        stderr.starts_with(&prefix) && stderr.trim_end().len() > prefix.len(),
        "{stderr}"
    );
}

#[test]
fn targets_llvm_cannot_generate_code_for_are_errors() {
    let dir = Dir::new();
    let module = dir.file("add.hlo", ADD.as_bytes());
    let out = dir.path("out.o");
    fails_with(
        &["compile", &module, "-o", &out, "--target", "x86_64-unknown-linux-gnu", "--cpu", "pentium"],
        "invalid argument: CPU 'pentium' with these features cannot run 64-bit code, which target x86_64-unknown-linux-gnu needs: choose an x86-64 CPU (x86-64, x86-64-v3, skylake-avx512, znver4, ...) or a 32-bit triple (i686-unknown-linux-gnu)",
    );
    fails_with(
        &["compile", &module, "-o", &out, "--features", "avx2"],
        "invalid argument: target feature 'avx2' must start with '+' or '-'",
    );
    // A 32-bit CPU is fine for a 32-bit triple.
    let (code, _, stderr) = hlojit_run(&[
        "compile",
        &module,
        "-o",
        &out,
        "--target",
        "i686-unknown-linux-gnu",
        "--cpu",
        "pentium",
    ]);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn device_counts_are_bounded() {
    let dir = Dir::new();
    let module = dir.file(
        "many.hlo",
        ADD.replace("HloModule m", "HloModule m, replica_count=100000")
            .as_bytes(),
    );
    let (code, stdout, stderr) = hlojit_run(&["run", &module, "--random-inputs", "1"]);
    assert_eq!(code, 1, "{stdout}");
    assert_eq!(
        stderr.trim_end(),
        "error: in m: replica_count x num_partitions is 100000 devices; hlojit runs at most 1024 in one process"
    );
}
