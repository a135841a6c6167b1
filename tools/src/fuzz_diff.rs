//! `hlojit fuzz-diff`: differential testing of compiled code. Programs from [`crate::fuzzgen`]
//! run on hlojit (in process) and on XLA:CPU (jaxlib, through `tools/fuzz_xla.py`, one Python
//! process per batch) with the same inputs; integers and exact values must agree bitwise,
//! floats within tolerances that allow for XLA's transcendental approximations. Every
//! program that disagrees, or that one side rejects, is written to the keep directory as a
//! self-contained file test: its inputs and XLA's results as `// input:` / `// expect:`.

use crate::conformance::compare::compare;
use crate::fuzzgen::{self, types::shape_text};
use hlojit::{npy, parse_module, ArrayLiteral, CompileOptions, ElementType, Executable, Literal};
use hlojit_compiler::hlo::text::literal_to_text;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What to run.
pub struct Options {
    pub programs: u64,
    pub seed: u64,
    /// Where reproducers go (none kept when `None`).
    pub keep_dir: Option<PathBuf>,
    /// The Python that has jax (`HLOJIT_PYTHON`, else the workspace's `target/venv/bin/python3`
    /// if it exists, else `python3` from PATH).
    pub python: PathBuf,
    /// `tools/fuzz_xla.py`.
    pub script: PathBuf,
    /// Print each failing program as it is found.
    pub verbose: bool,
}

impl Options {
    pub fn new(programs: u64, seed: u64) -> Options {
        let python = std::env::var_os("HLOJIT_PYTHON").map(PathBuf::from).unwrap_or_else(|| {
            let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/venv/bin/python3");
            if venv.exists() { venv } else { PathBuf::from("python3") }
        });
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz_xla.py");
        Options { programs, seed, keep_dir: None, python, script, verbose: true }
    }
}

/// What happened.
#[derive(Default, Debug)]
pub struct Report {
    pub run: u64,
    /// Programs whose results differ: (seed, first difference).
    pub mismatches: Vec<(u64, String)>,
    /// Programs XLA ran and hlojit rejected or failed: (seed, error).
    pub hlojit_errors: Vec<(u64, String)>,
    /// Programs XLA rejected (generator bugs): (seed, error).
    pub xla_errors: Vec<(u64, String)>,
}

/// Tolerances per float type: XLA:CPU's exp/log/tanh/... are polynomial approximations a
/// few ulp from the correctly rounded result, and chains of them compound that.
pub fn tolerance(t: ElementType) -> (f64, f64) {
    match t {
        ElementType::F64 | ElementType::C128 => (1e-9, 1e-12),
        ElementType::F32 | ElementType::C64 => (2e-4, 2e-5),
        ElementType::F16 => (1e-2, 2e-3),
        ElementType::BF16 => (5e-2, 2e-2),
        _ => (0.0, 0.0),
    }
}

/// The tolerance for a result of type `t` of program `p` (see [`fuzzgen::Program::low_precision`]).
fn program_tolerance(p: &fuzzgen::Program, t: ElementType) -> (f64, f64) {
    let (r, a) = tolerance(t);
    match p.low_precision {
        Some(low) if r > 0.0 => {
            let (lr, la) = tolerance(low);
            (r.max(lr), a.max(la))
        }
        _ => (r, a),
    }
}

const BATCH: u64 = 250;

pub fn run(opts: &Options) -> Result<Report, String> {
    let mut report = Report::default();
    let work = std::env::temp_dir().join(format!("hlojit-fuzz-{}-{}", std::process::id(), opts.seed));
    let mut start = 0;
    while start < opts.programs {
        let end = (start + BATCH).min(opts.programs);
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
        let mut progs = Vec::new();
        for i in start..end {
            let seed = opts.seed.wrapping_add(i);
            let p = fuzzgen::generate(seed);
            let dir = work.join(format!("p{i:08}"));
            write_program(&dir, &p).map_err(|e| format!("{}: {e}", dir.display()))?;
            progs.push((seed, dir, p));
        }
        run_xla(opts, &work, &progs)?;
        for (seed, dir, p) in progs {
            report.run += 1;
            check_program(opts, &mut report, seed, &dir, &p);
        }
        start = end;
    }
    let _ = std::fs::remove_dir_all(&work);
    Ok(report)
}

/// Runs the Python side over a batch; when XLA crashes the process on a program (XLA's
/// constant folder dies of SIGFPE on some integer divisions), that program is marked as an
/// XLA error and the rest of the batch runs in a new process.
fn run_xla(opts: &Options, work: &Path, progs: &[(u64, PathBuf, fuzzgen::Program)]) -> Result<(), String> {
    loop {
        let status = Command::new(&opts.python)
            .arg(&opts.script)
            .arg(work)
            .status()
            .map_err(|e| format!("cannot run {}: {e}", opts.python.display()))?;
        if status.success() {
            return Ok(());
        }
        let crashed = progs.iter().find(|(_, d, _)| {
            d.join("xla_started").exists() && !d.join("xla_done").exists() && !d.join("xla_error.txt").exists()
        });
        let Some((_, dir, _)) = crashed else {
            return Err(format!("{} {} failed: {status}", opts.python.display(), opts.script.display()));
        };
        std::fs::write(dir.join("xla_error.txt"), format!("XLA crashed: {status}")).map_err(|e| e.to_string())?;
    }
}

fn write_program(dir: &Path, p: &fuzzgen::Program) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("module.hlo"), &p.text)?;
    let types: Vec<String> = p.inputs.iter().map(|a| a.element_type().to_string()).collect();
    std::fs::write(dir.join("inputs.txt"), types.join("\n"))?;
    for (i, a) in p.inputs.iter().enumerate() {
        npy::write(&dir.join(format!("in{i}.npy")), a).map_err(std::io::Error::other)?;
    }
    Ok(())
}

/// Compiles and runs `text` on hlojit; a panic is an error too (reported, never fatal).
pub fn run_hlojit(text: &str, inputs: &[ArrayLiteral]) -> Result<Vec<ArrayLiteral>, String> {
    let text = text.to_string();
    let inputs = inputs.to_vec();
    std::panic::catch_unwind(move || {
        let m = parse_module(&text).map_err(|e| e.to_string())?;
        let exe = Executable::compile(&m, &CompileOptions::default()).map_err(|e| e.to_string())?;
        let args = Literal::group_leaves(exe.parameter_shapes(), inputs)?;
        let out = exe.run_literals(&args).map_err(|e| e.to_string())?;
        Ok(out.into_leaves())
    })
    .unwrap_or_else(|e| {
        let msg = e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
        Err(format!("panic: {}", msg.unwrap_or_default()))
    })
}

fn check_program(opts: &Options, report: &mut Report, seed: u64, dir: &Path, p: &fuzzgen::Program) {
    if let Ok(e) = std::fs::read_to_string(dir.join("xla_error.txt")) {
        if opts.verbose {
            eprintln!("program {seed}: XLA rejects it: {e}");
        }
        keep(opts, &format!("xla_error_{seed}"), &format!("XLA: {e}"), p, &[]);
        report.xla_errors.push((seed, e));
        return;
    }
    let got = run_hlojit(&p.text, &p.inputs);
    let want_types: Option<Vec<ElementType>> = got.as_ref().ok().map(|g| g.iter().map(|a| a.element_type()).collect());
    let mut want = Vec::new();
    for i in 0.. {
        let f = dir.join(format!("xla_out{i}.npy"));
        if !f.exists() {
            break;
        }
        let t = want_types.as_ref().and_then(|w| w.get(i).copied());
        match npy::read(&f, t) {
            Ok(a) => want.push(a),
            Err(e) => {
                report.xla_errors.push((seed, e.to_string()));
                return;
            }
        }
    }
    let verdict = match got {
        Err(e) => Err(("error", e)),
        Ok(got) if got.len() != want.len() => Err(("mismatch", format!("{} results, XLA gave {}", got.len(), want.len()))),
        Ok(got) => got
            .iter()
            .zip(&want)
            .enumerate()
            .find_map(|(i, (g, w))| {
                let (rtol, atol) = program_tolerance(p, w.element_type());
                compare(g, w, rtol == 0.0, rtol, atol).map(|d| format!("result {i}: {d}"))
            })
            .map_or(Ok(()), |d| Err(("mismatch", d))),
    };
    if let Err((kind, msg)) = verdict {
        if opts.verbose {
            eprintln!("program {seed}: {kind}: {msg}");
        }
        keep(opts, &format!("{kind}_{seed}"), &msg, p, &want);
        if kind == "error" {
            report.hlojit_errors.push((seed, msg));
        } else {
            report.mismatches.push((seed, msg));
        }
    }
}

/// Writes the program as a file test with XLA's results as its expectations.
fn keep(opts: &Options, name: &str, why: &str, p: &fuzzgen::Program, want: &[ArrayLiteral]) {
    let Some(dir) = &opts.keep_dir else { return };
    let _ = std::fs::create_dir_all(dir);
    let mut s = format!("// hlojit fuzz-diff program {name}: {}\n", why.replace('\n', " "));
    let loosest = want.iter().map(|w| program_tolerance(p, w.element_type())).fold((0.0, 0.0), |a: (f64, f64), b| (a.0.max(b.0), a.1.max(b.1)));
    if loosest.0 > 0.0 {
        s += &format!("// tolerance: rtol={} atol={}\n", loosest.0, loosest.1);
    }
    for a in &p.inputs {
        s += &format!("// input: {}\n", directive(a));
    }
    for a in want {
        s += &format!("// expect: {}\n", directive(a));
    }
    s += &p.text;
    let _ = std::fs::write(dir.join(format!("{name}.hlo")), s);
}

fn directive(a: &ArrayLiteral) -> String {
    format!("{} {}", shape_text(a.element_type(), a.dims(), None), literal_to_text(&Literal::Array(a.clone())))
}
