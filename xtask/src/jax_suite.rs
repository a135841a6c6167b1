//! `cargo xtask jax-suite`: JAX's own test files as a differential test against XLA:CPU
//! (`../shared/tools/jax_suite_diff.py` does the work; this wraps it).
//!
//! The shared tool collects a test file in one pytest run with a one-hour limit and keeps nothing
//! of a run that exceeds it. On a loaded machine whole files (lax_test.py,
//! lax_scipy_special_functions_test.py) take longer, so a file can be collected in parts:
//! `--parts N` runs the tool N times, each on every N-th test (the pytest plugin
//! `tools/jax_suite_parts.py`, loaded through PYTEST_ADDOPTS, which the tool passes on to pytest).
//! All parts add to the same deduplicated module folder, and each finished part leaves a marker,
//! so an interrupted collection resumes with the parts still missing.
//!
//! After the tool's diff, `tools/jax_suite_narrow.py` runs the modules the tool skipped although
//! they can be compared: element types outside its set (s2/s4/u2/u4, f8, f4) and Shardy markers;
//! `tools/jax_suite_recheck.py` compares two documented classes of linalg mismatches (complex
//! Schur forms, expm) by the rule their mathematics allows (up to the Schur form's freedom,
//! normwise).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{cargo, root, run, venv};

/// The JAX test files the differential test runs by default (issue: "JAX's own test suite as a
/// differential test").
const JAX_SUITE_FILES: &[&str] = &[
    "lax_control_flow_test.py",
    "lax_numpy_reducers_test.py",
    "lax_test.py",
    "lax_numpy_operators_test.py",
    "lax_numpy_indexing_test.py",
    "lax_autodiff_test.py",
    "lax_vmap_op_test.py",
    "random_lax_test.py",
    "nn_test.py",
    "fft_test.py",
    "lax_scipy_special_functions_test.py",
    "lax_scipy_test.py",
    "linalg_test.py",
];

const USAGE: &str = "usage: cargo xtask jax-suite TESTS_DIR [--parts N] [--collect-only] [TEST_FILE.py]...\n  \
    TESTS_DIR: the tests/ folder of jax at the installed version's tag\n  \
    --parts N: collect each file in N pytest runs (every N-th test each), resumable\n  \
    --collect-only: collect, do not diff";

struct Options {
    tests_dir: String,
    parts: u32,
    collect_only: bool,
    files: Vec<String>,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut it = args.iter();
    let tests_dir = it.next().ok_or(USAGE)?.clone();
    let (mut parts, mut collect_only, mut files) = (1, false, Vec::new());
    while let Some(a) = it.next() {
        match a.as_str() {
            "--parts" => {
                let n = it.next().ok_or("--parts needs a number")?;
                parts = n.parse().ok().filter(|&n| n >= 1).ok_or_else(|| format!("--parts {n}: expected a whole number >= 1"))?;
            }
            "--collect-only" => collect_only = true,
            f if f.starts_with("--") => return Err(format!("unknown option {f}\n{USAGE}")),
            f => files.push(f.to_string()),
        }
    }
    if files.is_empty() {
        files = JAX_SUITE_FILES.iter().map(|f| f.to_string()).collect();
    }
    Ok(Options { tests_dir, parts, collect_only, files })
}

/// Runs JAX's own test files (from the jax repository at the installed jax's tag, e.g.
/// `git archive jax-v0.10.2 tests`) with XLA's dump on, then every HLO module they compiled on
/// XLA:CPU and on hlojit with the same inputs. Modules are collected per test file into
/// target/jax-suite/<file>/ (delete it to collect again); each file's report is
/// target/jax-suite/<file>/report.json.
pub fn jax_suite(args: &[String]) -> Result<(), String> {
    let o = parse(args)?;
    let tool = tool()?;
    let python = || {
        let mut c = Command::new(venv().join("bin/python3"));
        c.arg(&tool);
        c
    };
    for file in &o.files {
        let test = Path::new(&o.tests_dir).join(file);
        if !test.exists() {
            return Err(format!("{}: no such test file", test.display()));
        }
        let out = root().join("target/jax-suite").join(file.trim_end_matches(".py"));
        collect(&out, &test, o.parts, &python)?;
        if o.collect_only {
            continue;
        }
        run(cargo().args(["build", "--release", "--quiet", "-p", "hlojit-tools", "--bin", "hlojit"]))?;
        eprintln!("xtask: {file}: XLA:CPU against hlojit");
        let hlojit = root().join("target/release/hlojit");
        run(python().arg("diff").arg(&out).arg("--hlojit").arg(&hlojit))?;
        // The modules the tool skips for their element types (s4, f8, ...) or Shardy markers.
        run(Command::new(venv().join("bin/python3")).arg(root().join("tools/jax_suite_narrow.py")).arg(&tool).arg(&out).arg("--hlojit").arg(&hlojit))?;
        // The mismatches whose per-element comparison is the wrong question (complex Schur
        // forms, expm's matrix products), each compared as its mathematics allows.
        run(Command::new(venv().join("bin/python3")).arg(root().join("tools/jax_suite_recheck.py")).arg(&tool).arg(&out).arg("--hlojit").arg(&hlojit))?;
    }
    Ok(())
}

/// The shared tool: `../shared/tools/jax_suite_diff.py` beside the main checkout. A linked git
/// worktree can live elsewhere, so the main checkout is also found through git's common directory.
fn tool() -> Result<PathBuf, String> {
    const REL: &str = "../shared/tools/jax_suite_diff.py";
    let mut tried = vec![root().join(REL)];
    let common = Command::new("git").current_dir(root()).args(["rev-parse", "--path-format=absolute", "--git-common-dir"]).output();
    if let Some(o) = common.ok().filter(|o| o.status.success()) {
        let dir = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
        if let Some(main) = dir.parent() {
            tried.push(main.join(REL));
        }
    }
    match tried.iter().find(|p| p.exists()) {
        Some(p) => Ok(p.clone()),
        None => Err(format!("jax_suite_diff.py not found (looked for {})", tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))),
    }
}

/// Collects the modules of one test file into `out` in `parts` pytest runs, skipping the parts an
/// earlier run finished (`out/collected/I-of-N`). A module folder without markers comes from a
/// whole-file collection (an earlier version of this task) and counts as complete.
fn collect(out: &Path, test: &Path, parts: u32, python: &dyn Fn() -> Command) -> Result<(), String> {
    let markers = out.join("collected");
    if out.join("modules").is_dir() && !markers.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(&markers).map_err(|e| format!("{}: {e}", markers.display()))?;
    let plugins = root().join("tools");
    for i in 0..parts {
        let marker = markers.join(format!("{i}-of-{parts}"));
        if marker.exists() {
            continue;
        }
        eprintln!("xtask: collecting the modules {} compiles, part {}/{parts} (runs the tests)", test.display(), i + 1);
        let mut cmd = python();
        cmd.arg("collect").arg(out).arg(test);
        if parts > 1 {
            let pythonpath = match std::env::var_os("PYTHONPATH") {
                Some(p) => std::env::join_paths([plugins.as_os_str(), &p]).map_err(|e| e.to_string())?,
                None => plugins.clone().into_os_string(),
            };
            let addopts = format!("{} -p jax_suite_parts", std::env::var("PYTEST_ADDOPTS").unwrap_or_default());
            cmd.env("PYTHONPATH", pythonpath).env("PYTEST_ADDOPTS", addopts.trim()).env("HLOJIT_SUITE_PART", format!("{i}/{parts}"));
        }
        run(&mut cmd)?;
        std::fs::write(&marker, "").map_err(|e| format!("{}: {e}", marker.display()))?;
    }
    Ok(())
}
