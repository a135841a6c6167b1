//! The conformance runner: compiles each corpus case's `module.hlo` and/or `optimized.hlo`,
//! runs it on the case's inputs and compares with XLA:CPU's outputs.

mod aot;
pub mod case;
pub mod compare;
pub mod multi_device;

use hlojit::{parse_module_bytes, CompileOptions, Executable, RunOptions, TargetOptions};
use case::Case;
use hlojit_runtime::{ArrayLiteral, Literal};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

/// Which HLO file of a case to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModuleFile {
    /// `module.hlo`: the module as the frontend produced it, before XLA's optimizations.
    Module,
    /// `optimized.hlo`: the module after XLA:CPU's optimization passes (fusions, layouts).
    Optimized,
    /// `module.stablehlo.mlir`: the program as StableHLO MLIR text (JAX-lowered cases).
    Stablehlo,
    /// `module.stablehlo.mlirbc`: the StableHLO portable artifact (MLIR bytecode, VHLO).
    Bytecode,
    /// `module.jax_export`: the program as `jax.export` serializes it.
    Export,
}

impl ModuleFile {
    /// The file's name within a case directory.
    pub fn file_name(self) -> &'static str {
        match self {
            ModuleFile::Module => "module.hlo",
            ModuleFile::Optimized => "optimized.hlo",
            ModuleFile::Stablehlo => "module.stablehlo.mlir",
            ModuleFile::Bytecode => "module.stablehlo.mlirbc",
            ModuleFile::Export => "module.jax_export",
        }
    }

    /// Forms only JAX-lowered cases have: a case without the file is not run in that form.
    pub fn optional(self) -> bool {
        matches!(self, ModuleFile::Stablehlo | ModuleFile::Bytecode | ModuleFile::Export)
    }
}

/// The outcome of one case with one of its HLO files.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The case's name (from `case.json`; the directory name if that cannot be read).
    pub case: String,
    /// The case's group (empty if `case.json` cannot be read).
    pub group: String,
    /// Which HLO file was run.
    pub file: ModuleFile,
    /// `None` when the case passed; the reason otherwise.
    pub failure: Option<String>,
    /// The failure is the module text's, not hlojit's: it lacks data needed to run it (XLA's
    /// printer elided a constant's values).
    pub not_runnable: bool,
    /// Compile time in milliseconds (0 when compilation did not succeed).
    pub compile_ms: f64,
}

/// The case directories under `dir/cases` (or `dir` itself if it is a case), sorted.
pub fn case_dirs(dir: &Path) -> Result<Vec<PathBuf>, String> {
    if dir.join("case.json").exists() {
        return Ok(vec![dir.to_path_buf()]);
    }
    let cases = dir.join("cases");
    let root = if cases.is_dir() { cases } else { dir.to_path_buf() };
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .map_err(|e| format!("{}: {e}", root.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("case.json").exists())
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// The (case, file) pairs [`run_all`] runs: optional forms only where the case has the file.
pub fn job_count(dirs: &[PathBuf], files: &[ModuleFile]) -> usize {
    dirs.iter().flat_map(|d| files.iter().map(move |&f| (d, f))).filter(|(d, f)| !f.optional() || d.join(f.file_name()).exists()).count()
}

/// Runs every (case, file) pair, in parallel, and returns the outcomes in order.
pub fn run_all(dirs: &[PathBuf], files: &[ModuleFile]) -> Vec<Outcome> {
    run_all_with(dirs, files, &|_| {})
}

/// [`run_all`], calling `done` after each (case, file) pair (from the worker threads).
pub fn run_all_with(dirs: &[PathBuf], files: &[ModuleFile], done: &(dyn Fn(&Outcome) + Sync)) -> Vec<Outcome> {
    run_all_on(&Runner::default(), dirs, files, done)
}

/// How the corpus is compiled and run.
#[derive(Clone, Debug, Default)]
pub struct Runner {
    /// As AOT objects linked into programs of their own (`aot.rs`) instead of by the JIT in
    /// this process.
    pub aot: bool,
    /// The machine code's target: the host's by default; a lesser CPU runs the code paths
    /// for what this host has beyond it (`--cpu x86-64`: SSE2 only).
    pub target: TargetOptions,
}

impl Runner {
    fn options(&self) -> CompileOptions {
        // The corpus is a test of the passes too: each pass's result is verified.
        CompileOptions { verify_passes: true, target: self.target.clone(), ..CompileOptions::default() }
    }
}

/// [`run_all_with`] as `runner` says.
pub fn run_all_on(runner: &Runner, dirs: &[PathBuf], files: &[ModuleFile], done: &(dyn Fn(&Outcome) + Sync)) -> Vec<Outcome> {
    let jobs: Vec<(&PathBuf, ModuleFile)> = dirs
        .iter()
        .flat_map(|d| files.iter().map(move |&f| (d, f)))
        .filter(|(d, f)| !f.optional() || d.join(f.file_name()).exists())
        .collect();
    jobs.par_iter()
        .map(|&(dir, file)| {
            let outcome = run_case_on(runner, dir, file);
            done(&outcome);
            outcome
        })
        .collect()
}

/// Runs one case from one of its files; never panics (a panic becomes a failure).
pub fn run_case(dir: &Path, file: ModuleFile) -> Outcome {
    run_case_on(&Runner::default(), dir, file)
}

/// [`run_case`] as `runner` says.
pub fn run_case_on(runner: &Runner, dir: &Path, file: ModuleFile) -> Outcome {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut outcome = Outcome { case: name, group: String::new(), file, failure: None, not_runnable: false, compile_ms: 0.0 };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if runner.aot {
            aot::run_case(dir, file, &runner.options(), &mut outcome)
        } else {
            run_case_inner(dir, file, &runner.options(), &mut outcome)
        }
    }));
    outcome.failure = match result {
        Ok(Ok(())) => None,
        Ok(Err(reason)) => Some(reason),
        Err(panic) => Some(format!(
            "panic: {}",
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        )),
    };
    outcome
}

fn run_case_inner(dir: &Path, file: ModuleFile, options: &CompileOptions, outcome: &mut Outcome) -> Result<(), String> {
    let case = Case::load(dir)?;
    outcome.case = case.name.clone();
    outcome.group = case.group.clone();
    let path = dir.join(file.file_name());
    let bytes = crate::module_file::read_module_bytes(&path)?;
    let module = parse_module_bytes(&bytes).map_err(|e| format!("parse: {e}"))?;
    let start = std::time::Instant::now();
    let exe = Executable::compile(&module, options).map_err(|e| {
        outcome.not_runnable = matches!(e, hlojit::Error::ElidedConstant(_));
        e.to_string()
    })?;
    outcome.compile_ms = start.elapsed().as_secs_f64() * 1e3;
    let leaves: Vec<ArrayLiteral> = case.inputs.iter().map(|a| case.read_array(a)).collect::<Result<_, _>>()?;
    let stacked: Vec<ArrayLiteral>;
    let result;
    let got: Vec<&ArrayLiteral> = if case.replicas > 1 {
        stacked = run_stacked(&exe, case.replicas, leaves, &RunOptions::default())?;
        stacked.iter().collect()
    } else {
        let args = Literal::group_leaves(exe.parameter_shapes(), leaves)?;
        result = exe.run_literals(&args).map_err(|e| e.to_string())?;
        result.leaves()
    };
    compare_outputs(&case, &got)
}

/// Compares a case's results with XLA:CPU's, within the case's tolerances.
fn compare_outputs(case: &Case, got: &[&ArrayLiteral]) -> Result<(), String> {
    if got.len() != case.outputs.len() {
        return Err(format!("{} results, expected {}", got.len(), case.outputs.len()));
    }
    for (i, (g, want)) in got.iter().zip(&case.outputs).enumerate() {
        let w = case.read_array(want)?;
        let diff = if case.unique_up_to_phase {
            compare::compare_up_to_phase(g, &w, case.rtol, case.atol)
        } else {
            compare::compare(g, &w, case.exact, case.rtol, case.atol)
        };
        if let Some(diff) = diff {
            return Err(format!("output {i}: {diff}"));
        }
    }
    Ok(())
}

/// Runs a multi-device program: every input holds one slice per device along its leading
/// dimension (global device order), and so does every returned output.
pub fn run_stacked(
    exe: &Executable,
    devices: usize,
    leaves: Vec<ArrayLiteral>,
    options: &RunOptions,
) -> Result<Vec<ArrayLiteral>, String> {
    if exe.num_devices() != devices {
        return Err(format!("the case runs on {devices} devices, the module declares {}", exe.num_devices()));
    }
    let mut per_device: Vec<Vec<ArrayLiteral>> = vec![Vec::new(); devices];
    for leaf in &leaves {
        for (d, slice) in multi_device::unstack(leaf, devices)?.into_iter().enumerate() {
            per_device[d].push(slice);
        }
    }
    let args: Vec<Vec<Literal>> =
        per_device.into_iter().map(|l| Literal::group_leaves(exe.parameter_shapes(), l)).collect::<Result<_, _>>()?;
    let results = exe.run_literals_devices_with(&args, options).map_err(|e| e.to_string())?;
    let per_device: Vec<Vec<ArrayLiteral>> = results.into_iter().map(Literal::into_leaves).collect();
    let outputs = per_device.first().map_or(0, Vec::len);
    (0..outputs).map(|j| multi_device::stack(&per_device.iter().map(|r| &r[j]).collect::<Vec<_>>())).collect()
}

/// A JSON report of outcomes.
pub fn report_json(outcomes: &[Outcome]) -> String {
    let cases: Vec<serde_json::Value> = outcomes
        .iter()
        .map(|o| {
            serde_json::json!({
                "case": o.case,
                "group": o.group,
                "module": o.file.file_name(),
                "passed": o.failure.is_none(),
                "not_runnable": o.not_runnable,
                "reason": o.failure,
                "compile_ms": o.compile_ms,
            })
        })
        .collect();
    let passed = outcomes.iter().filter(|o| o.failure.is_none()).count();
    let not_runnable = outcomes.iter().filter(|o| o.not_runnable).count();
    serde_json::to_string_pretty(&serde_json::json!({
        "passed": passed,
        "failed": outcomes.len() - passed - not_runnable,
        "not_runnable": not_runnable,
        "cases": cases,
    }))
    .unwrap_or_default()
}
