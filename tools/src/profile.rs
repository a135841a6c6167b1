//! `hlojit profile`: runs a module compiled with per-kernel timers (a profiling build: the
//! sequencing code reads the clock around every kernel call) and prints where the time went,
//! kernel by kernel, with each kernel's throughput against the machine's measured peaks —
//! GB/s for kernels that move more than they compute, GFLOP/s for the others.

use crate::peaks::Peaks;
use hlojit::{Argument, CompileOptions, Executable, HostBuffer};
use hlojit_compiler::analysis::cost::{kernel_cost, KernelCost};
use hlojit_compiler::codegen::plan::LoweringPlan;
use hlojit_compiler::hlo::Module;
use std::fmt::Write;
use std::time::Instant;

/// One kernel's line.
pub struct Row {
    pub kernel: String,
    pub cost: KernelCost,
    /// Calls per run.
    pub calls: f64,
    /// Seconds per run.
    pub seconds: f64,
}

/// A profile: kernel rows (slowest first) and the wall time of a run.
pub struct Profile {
    pub rows: Vec<Row>,
    /// Median wall time of one run, in seconds.
    pub run_seconds: f64,
    pub runs: usize,
}

/// Compiles `module` with timers and runs it `runs` times (after one untimed run) on `inputs`
/// (host buffers in parameter-leaf order).
pub fn profile(module: &Module, options: &CompileOptions, inputs: Vec<HostBuffer>, runs: usize) -> Result<Profile, String> {
    let options = CompileOptions { profile: true, ..options.clone() };
    let exe = Executable::compile(module, &options).map_err(|e| e.to_string())?;
    if exe.num_devices() > 1 {
        return Err("profile runs single-device programs (this one runs on several devices)".into());
    }
    // The kernels as the executable's plan numbers them: the same passes on the same module
    // give the same plan.
    let prepared = hlojit_compiler::pipeline::prepare(module, &options).map_err(|e| e.to_string())?;
    let plan = LoweringPlan::new(&prepared, "hlojit_entry").map_err(|e| e.to_string())?;
    let mut buffers = Vec::with_capacity(inputs.len());
    for (b, shape) in inputs.into_iter().zip(exe.argument_shapes()) {
        let layout = shape.layout_or_default();
        buffers.push(if b.layout() == &layout { b } else { b.relayout(layout).map_err(|e| e.to_string())? });
    }
    let args = || buffers.iter().map(Argument::from).collect::<Vec<_>>();
    exe.run(args()).map_err(|e| e.to_string())?;
    let _ = hlojit_runtime::profile::take();
    let runs = runs.max(1);
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        exe.run(args()).map_err(|e| e.to_string())?;
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    let totals = hlojit_runtime::profile::take();
    let mut rows: Vec<Row> = plan
        .kernels
        .iter()
        .enumerate()
        .map(|(j, job)| {
            let comp = prepared.computation(plan.functions[job.function].comp);
            let t = totals.get(j).copied().unwrap_or_default();
            Row {
                kernel: job.name.clone(),
                cost: kernel_cost(&prepared, comp, comp.get(job.inst)),
                calls: t.calls as f64 / runs as f64,
                seconds: t.nanos as f64 * 1e-9 / runs as f64,
            }
        })
        .collect();
    rows.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
    Ok(Profile { rows, run_seconds: times[times.len() / 2], runs })
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

impl Profile {
    /// The table, at most `limit` kernels (the rest summed in one line).
    pub fn table(&self, peaks: &Peaks, limit: usize) -> String {
        let mut out = String::new();
        let kernel_seconds: f64 = self.rows.iter().map(|r| r.seconds).sum();
        let total = self.run_seconds.max(kernel_seconds).max(1e-12);
        let _ = writeln!(
            out,
            "{:<34} {:<36} {:>6} {:>9} {:>6} {:>15} {:>7}",
            "kernel", "fused ops", "calls", "time ms", "share", "throughput", "of peak"
        );
        for r in self.rows.iter().take(limit) {
            // Loop bodies run `calls` times: the estimate is per call.
            let (rate, peak) = if r.cost.compute_bound() {
                let f = r.cost.flops as f64 * r.calls / r.seconds.max(1e-12);
                (format!("{:.1} GFLOP/s", f / 1e9), f / peaks.flops_per_second)
            } else {
                let b = r.cost.bytes as f64 * r.calls / r.seconds.max(1e-12);
                (format!("{:.1} GB/s", b / 1e9), b / peaks.bytes_per_second)
            };
            let _ = writeln!(
                out,
                "{:<34} {:<36} {:>6} {:>9.3} {:>5.1}% {:>15} {:>6.0}%",
                clip(&r.kernel, 34),
                clip(&r.cost.ops_text(), 36),
                format!("{}", r.calls.round()),
                r.seconds * 1e3,
                100.0 * r.seconds / total,
                rate,
                100.0 * peak
            );
        }
        if self.rows.len() > limit {
            let rest: f64 = self.rows[limit..].iter().map(|r| r.seconds).sum();
            let _ = writeln!(out, "{:<34} {:<36} {:>6} {:>9.3} {:>5.1}%", format!("({} more kernels)", self.rows.len() - limit), "", "", rest * 1e3, 100.0 * rest / total);
        }
        let outside = (self.run_seconds - kernel_seconds).max(0.0);
        let _ = writeln!(
            out,
            "{:<34} {:<36} {:>6} {:>9.3} {:>5.1}%",
            "(outside kernels)", "sequencing, custom calls, copies", "", outside * 1e3, 100.0 * outside / total
        );
        let _ = writeln!(
            out,
            "run: {:.3} ms (median of {} runs); machine peaks measured now: {:.1} GB/s memory (triad), {:.1} GFLOP/s f32 FMA",
            self.run_seconds * 1e3,
            self.runs,
            peaks.bytes_per_second / 1e9,
            peaks.flops_per_second / 1e9
        );
        out
    }
}
