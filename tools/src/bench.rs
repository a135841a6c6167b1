//! `hlojit bench`: times the perf workloads (a folder with `module.hlo` and `perf.json`) the
//! way `xla_reference.py` times XLA:CPU — compile once, warm up, then the median of timed
//! runs — and prints the same line format, `name compile_ms run_ms_median throughput`, so the
//! two can be compared side by side.

use crate::conformance::compare::compare;
use crate::numpy_random::Generator;
use hlojit::{npy, Client, ElementType, HostBuffer};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// One workload's measurements.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// The workload's `name` from `perf.json`.
    pub name: String,
    /// Wall time of `Client::compile_text` (parse, passes, LLVM, loading), in milliseconds.
    pub compile_ms: f64,
    /// CPU time of the same compile, all of the process's threads (on a machine other programs
    /// keep busy, wall time measures the scheduler; CPU time is what the compiler spent).
    pub compile_cpu_ms: f64,
    /// With `--compiles N` above 1: the least wall and CPU time of the N-1 compiles after the
    /// first (each with a fresh client, so none is served from the client's cache), in ms.
    pub compile_min: Option<(f64, f64)>,
    /// Where the fastest of those compiles spent its time (the phases `hlojit run` prints).
    pub compile_min_phases: Option<String>,
    /// Median wall time of one `run` over the timed runs, in milliseconds (inputs already in
    /// host buffers of the entry's layouts; output allocation included).
    pub run_ms_median: f64,
    /// The fastest timed run, in milliseconds: on a machine other programs share, the one
    /// closest to what the kernels do alone (bandwidth comparisons use it).
    pub run_ms_best: f64,
    /// "12.3GFLOP/s", "4.56GB/s" or "-".
    pub throughput: String,
    /// `Some(Ok)` when outputs were checked against reference outputs and agree.
    pub check: Option<Result<(), String>>,
}

impl std::fmt::Display for Measurement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {:.1} {:.3} {}", self.name, self.compile_ms, self.run_ms_median, self.throughput)?;
        // After the four fields xla_reference.py prints (cargo xtask bench reads only those).
        write!(f, " [compile CPU {:.1} ms", self.compile_cpu_ms)?;
        if let Some((wall, cpu)) = self.compile_min {
            write!(f, "; again: {wall:.1} ms, CPU {cpu:.1} ms")?;
            if let Some(phases) = &self.compile_min_phases {
                write!(f, " ({phases})")?;
            }
        }
        write!(f, "]")?;
        match &self.check {
            Some(Ok(())) => write!(f, " (outputs match XLA)"),
            Some(Err(e)) => write!(f, " (OUTPUTS DIFFER: {e})"),
            None => Ok(()),
        }
    }
}

/// How to benchmark a workload.
pub struct BenchOptions {
    /// Timed runs whose median is reported (at least one is made).
    pub runs: usize,
    /// Untimed runs before timing (at least one is made).
    pub warmup: usize,
    /// Read inputs from `DIR/<name>/in<i>.npy` instead of generating them.
    pub inputs_dir: Option<PathBuf>,
    /// Compare outputs with `DIR/<name>/out<i>.npy`.
    pub check_dir: Option<PathBuf>,
    /// The module file of each workload folder (`module.hlo`, `module.stablehlo.mlir`, ...);
    /// its kind is told by its content.
    pub module_file: String,
    /// Dump what compiling each workload did (`--dump DIR`).
    pub dump: Option<hlojit::DumpOptions>,
    /// Compiles of each workload (the first is reported as `compile_ms`, the least of the
    /// others as `compile_min`).
    pub compiles: usize,
}

/// CPU time this process has used so far, all threads (user and system).
pub fn process_cpu_time() -> std::time::Duration {
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| std::time::Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// A workload compiled, with its inputs in host buffers, ready to run.
pub struct Workload {
    /// The workload's `name` from `perf.json`.
    pub name: String,
    /// `perf.json`: `flops` and `bytes` (each array read or written once) among others.
    pub meta: Value,
    pub exe: hlojit::Executable,
    pub inputs: Vec<HostBuffer>,
    pub compile_ms: f64,
    pub compile_cpu_ms: f64,
    pub compile_min: Option<(f64, f64)>,
    pub compile_min_phases: Option<String>,
}

/// Compiles one workload folder and reads (or generates) its inputs.
pub fn load_workload(dir: &Path, options: &BenchOptions) -> Result<Workload, String> {
    let meta_path = dir.join("perf.json");
    let meta: Value = serde_json::from_str(&std::fs::read_to_string(&meta_path).map_err(|e| format!("{}: {e}", meta_path.display()))?)
        .map_err(|e| format!("{}: {e}", meta_path.display()))?;
    let name = meta["name"].as_str().unwrap_or("workload").to_string();
    let bytes = crate::module_file::read_module_bytes(&dir.join(&options.module_file))?;
    let compile = || {
        let (start, cpu) = (Instant::now(), process_cpu_time());
        let client = Client::with_options(hlojit::CompileOptions { dump: options.dump.clone(), ..hlojit::CompileOptions::default() });
        let exe = client.compile_stablehlo(&bytes).map_err(|e| format!("{name} ({}): {e}", options.module_file))?;
        Ok::<_, String>((exe, start.elapsed().as_secs_f64() * 1e3, (process_cpu_time() - cpu).as_secs_f64() * 1e3))
    };
    let (exe, compile_ms, compile_cpu_ms) = compile()?;
    let mut compile_min: Option<(f64, f64)> = None;
    let mut compile_min_phases = None;
    for _ in 1..options.compiles {
        let (again, wall, cpu) = compile()?;
        if compile_min.is_none_or(|(w, _)| wall < w) {
            compile_min_phases = Some(again.compile_stats().to_string());
        }
        compile_min = Some(compile_min.map_or((wall, cpu), |(w, c)| (w.min(wall), c.min(cpu))));
    }

    let mut inputs = Vec::new();
    let mut rng = Generator::new(0);
    for (i, shape) in exe.argument_shapes().into_iter().enumerate() {
        let literal = match &options.inputs_dir {
            Some(d) => npy::read(&d.join(&name).join(format!("in{i}.npy")), Some(shape.element_type)).map_err(|e| e.to_string())?,
            None => generate(&mut rng, shape, &meta["inputs"][i]).map_err(|e| format!("{name}: input {i}: {e}"))?,
        };
        let buffer = HostBuffer::from_literal(literal).relayout(shape.layout_or_default()).map_err(|e| e.to_string())?;
        inputs.push(buffer);
    }
    Ok(Workload { name, meta, exe, inputs, compile_ms, compile_cpu_ms, compile_min, compile_min_phases })
}

impl Workload {
    /// Runs the workload `warmup` times untimed, then `runs` times timed; returns the run
    /// times in seconds, sorted, and the last run's outputs.
    pub fn time_runs(&self, warmup: usize, runs: usize) -> Result<(Vec<f64>, Vec<HostBuffer>), String> {
        let mut outputs = Vec::new();
        for _ in 0..warmup {
            outputs = self.exe.run(&self.inputs).map_err(|e| format!("{}: {e}", self.name))?;
        }
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs.max(1) {
            let t = Instant::now();
            outputs = self.exe.run(&self.inputs).map_err(|e| format!("{}: {e}", self.name))?;
            times.push(t.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        Ok((times, outputs))
    }

    /// Compares `outputs` with `DIR/<name>/out<i>.npy`.
    pub fn check(&self, outputs: &[HostBuffer], dir: &Path) -> Result<(), String> {
        for (i, out) in outputs.iter().enumerate() {
            let got = out.to_literal();
            let want = npy::read(&dir.join(&self.name).join(format!("out{i}.npy")), Some(got.element_type())).map_err(|e| e.to_string())?;
            // Both reorder float sums (blocked GEMMs, vectorized reductions), so compare with a
            // tolerance relative to the output's scale.
            let scale = (0..want.element_count()).map(|e| want.get_f64(e).abs()).filter(|v| v.is_finite()).fold(0.0, f64::max);
            if let Some(diff) = compare(&got, &want, false, 2e-3, 1e-4 * scale.max(1.0)) {
                return Err(format!("output {i}: {diff}"));
            }
        }
        Ok(())
    }
}

/// Benchmarks one workload folder.
pub fn bench_workload(dir: &Path, options: &BenchOptions) -> Result<Measurement, String> {
    let w = load_workload(dir, options)?;
    let (times, outputs) = w.time_runs(options.warmup.max(1), options.runs)?;
    let median = times[times.len() / 2];
    let throughput = if let Some(flops) = w.meta["flops"].as_f64() {
        format!("{:.1}GFLOP/s", flops / median / 1e9)
    } else if let Some(bytes) = w.meta["bytes"].as_f64() {
        format!("{:.2}GB/s", bytes / median / 1e9)
    } else {
        "-".into()
    };
    let check = options.check_dir.as_ref().map(|d| w.check(&outputs, d));
    Ok(Measurement {
        name: w.name,
        compile_ms: w.compile_ms,
        compile_cpu_ms: w.compile_cpu_ms,
        compile_min: w.compile_min,
        compile_min_phases: w.compile_min_phases,
        run_ms_median: median * 1e3,
        run_ms_best: times[0] * 1e3,
        throughput,
        check,
    })
}

/// Input `spec` of a workload by the recipe of ../shared/perf/README.md, exactly as numpy
/// draws it (inputs in parameter order from one `default_rng(0)`): `integers(low, high)` as
/// int64 for `"gen": {"kind": "randint", ...}`, `uniform(-1, 1)` as float64 otherwise, then
/// cast to the parameter's type.
fn generate(rng: &mut Generator, shape: &hlojit::ArrayShape, spec: &Value) -> Result<hlojit::ArrayLiteral, String> {
    let mut lit = hlojit::ArrayLiteral::zeros(shape.element_type, &shape.dims);
    let n = lit.element_count();
    let gen = &spec["gen"];
    if gen["kind"].as_str() == Some("randint") {
        let (low, high) = match (gen["low"].as_i64(), gen["high"].as_i64()) {
            (Some(l), Some(h)) => (l, h),
            _ => return Err(format!("randint needs integer low and high, got {gen}")),
        };
        let values = rng.integers(low, high, n).ok_or_else(|| format!("empty randint range [{low}, {high})"))?;
        for (i, v) in values.into_iter().enumerate() {
            lit.set_i64(i, v);
        }
    } else {
        for (i, v) in rng.uniform(-1.0, 1.0, n).into_iter().enumerate() {
            // ml_dtypes casts float64 to bfloat16 through float32 (two roundings).
            let v = if shape.element_type == ElementType::BF16 { f64::from(v as f32) } else { v };
            lit.set_f64(i, v);
        }
    }
    Ok(lit)
}

/// Workload folders: each argument is a folder or a name under `default_root`; none means all.
pub fn workload_dirs(items: &[String], default_root: &Path) -> Result<Vec<PathBuf>, String> {
    if items.is_empty() {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(default_root)
            .map_err(|e| format!("{}: {e}", default_root.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("perf.json").exists())
            .collect();
        dirs.sort();
        return Ok(dirs);
    }
    items
        .iter()
        .map(|it| {
            let p = PathBuf::from(it);
            let d = if p.join("perf.json").exists() { p } else { default_root.join(it) };
            if d.join("perf.json").exists() {
                Ok(d)
            } else {
                Err(format!("not a workload folder: {it}"))
            }
        })
        .collect()
}
