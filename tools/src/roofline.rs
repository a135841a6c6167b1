//! `hlojit roofline`: how close perf workloads come to this machine's limits — the
//! bandwidth-bound ones to the STREAM bandwidth, the compute-bound ones to the f32 FMA peak.
//!
//! On a machine other programs share, a peak measured a minute earlier says little about the
//! memory a kernel gets now, so every sample pairs a reference with the workload: STREAM copy,
//! triad and read (or the FMA peak) measured right before the workload's runs, in the same
//! process and on the same rayon pool (the thread count the kernels split their work over).
//! Several samples give the spread.
//!
//! Bytes: `perf.json`'s `bytes` counts each array read or written once, as STREAM counts.
//! The memory moves more: a plain store reads its cache line first (write-allocate), so the
//! bytes on the bus are that count plus the bytes written (the outputs' sizes). Fractions
//! compare bus bytes per second with bus bytes per second of the STREAM kernel ([`Kernel::bus_bytes`]),
//! so a kernel that writes as much as it reads is judged against copy on equal terms; one that
//! stores past the cache (non-temporal) moves fewer bytes than counted and may exceed 100%.
//! The last yardstick avoids that convention: counted bytes per second against STREAM copy
//! with non-temporal stores, whose bus bytes are its counted ones — the fastest way this
//! machine copies (memcpy-class), which a kernel that reads and writes once can at best match.
//! Workloads with more than 4 flops per counted byte are judged by GFLOP/s against the FMA peak.

use crate::bench::{load_workload, BenchOptions, Workload};
use crate::stream::{Arrays, Kernel};
use std::path::Path;

/// How to measure.
pub struct RooflineOptions {
    /// Thread counts to measure on (each a rayon pool of that size).
    pub threads: Vec<usize>,
    /// Samples per workload and thread count (each: references, then the workload).
    pub samples: usize,
    /// Timed runs of the workload per sample; the fastest counts.
    pub runs: usize,
    /// Runs of each STREAM kernel per sample; the fastest counts.
    pub stream_runs: usize,
    /// Inputs, checking and compile options as `hlojit bench` takes them.
    pub bench: BenchOptions,
}

/// What a workload is judged against.
#[derive(Clone, Copy, Debug)]
pub enum Bound {
    /// Bandwidth: bytes as STREAM counts them, and bytes written (write-allocated).
    Memory { counted: f64, written: f64 },
    /// Compute: f32 flops of one run.
    Flops(f64),
}

/// One sample: the references measured just before, and the workload's fastest run.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub seconds: f64,
    /// Bus bytes per second of STREAM copy, triad and read; zero for compute-bound workloads.
    pub copy: f64,
    pub triad: f64,
    pub read: f64,
    /// Bytes per second of STREAM copy with non-temporal stores (the bus moves what STREAM
    /// counts): the yardstick in counted bytes, memcpy-class.
    pub copy_nt: f64,
    /// f32 flops per second; zero for bandwidth-bound workloads.
    pub fma: f64,
}

/// One workload on one thread count.
pub struct Row {
    pub name: String,
    pub threads: usize,
    pub bound: Bound,
    pub samples: Vec<Sample>,
    /// Outputs against `--check-dir`, when given.
    pub check: Option<Result<(), String>>,
}

impl Row {
    /// The workload's rate in sample `s`: bus bytes or flops per second.
    pub fn rate(&self, s: &Sample) -> f64 {
        match self.bound {
            Bound::Memory { counted, written } => (counted + written) / s.seconds,
            Bound::Flops(f) => f / s.seconds,
        }
    }

    /// Fractions of one reference over the samples: (median, least, most).
    pub fn fraction(&self, reference: impl Fn(&Sample) -> f64) -> (f64, f64, f64) {
        let mut f: Vec<f64> = self
            .samples
            .iter()
            .map(|s| self.rate(s) / reference(s))
            .collect();
        f.sort_by(f64::total_cmp);
        (f[f.len() / 2], f[0], f[f.len() - 1])
    }

    /// Fractions of `reference` (counted bytes per second) that the workload's counted bytes per
    /// second are over the samples: (median, least, most). Zero for compute-bound workloads.
    pub fn counted_fraction(&self, reference: impl Fn(&Sample) -> f64) -> (f64, f64, f64) {
        let Bound::Memory { counted, .. } = self.bound else { return (0.0, 0.0, 0.0) };
        let mut f: Vec<f64> = self.samples.iter().map(|s| counted / s.seconds / reference(s)).collect();
        f.sort_by(f64::total_cmp);
        (f[f.len() / 2], f[0], f[f.len() - 1])
    }

    /// The fastest run over all samples, in seconds.
    pub fn best_seconds(&self) -> f64 {
        self.samples
            .iter()
            .map(|s| s.seconds)
            .fold(f64::INFINITY, f64::min)
    }
}

/// Flops per counted byte above which a workload is judged by its flops.
const COMPUTE_INTENSITY: f64 = 4.0;

fn bound_of(w: &Workload) -> Result<Bound, String> {
    let flops = w.meta["flops"].as_f64();
    let bytes = w.meta["bytes"].as_f64();
    match (flops, bytes) {
        (Some(f), Some(b)) if f > COMPUTE_INTENSITY * b => Ok(Bound::Flops(f)),
        (Some(f), None) => Ok(Bound::Flops(f)),
        (_, Some(counted)) => {
            let written = w
                .exe
                .output_shapes()
                .iter()
                .map(|s| s.element_count() as f64 * s.element_type.byte_size() as f64)
                .sum();
            Ok(Bound::Memory { counted, written })
        }
        (None, None) => Err(format!(
            "{}: perf.json gives neither flops nor bytes",
            w.name
        )),
    }
}

/// Measures one workload folder on every thread count of `options`.
pub fn measure(
    dir: &Path,
    arrays: &mut Arrays,
    options: &RooflineOptions,
) -> Result<Vec<Row>, String> {
    let w = load_workload(dir, &options.bench)?;
    let bound = bound_of(&w)?;
    let mut rows = Vec::new();
    for &threads in &options.threads {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .build()
            .map_err(|e| e.to_string())?;
        let row = pool.install(|| -> Result<Row, String> {
            let mut samples = Vec::new();
            let mut outputs = Vec::new();
            for _ in 0..options.samples.max(1) {
                let mut s = Sample {
                    seconds: 0.0,
                    copy: 0.0,
                    triad: 0.0,
                    read: 0.0,
                    copy_nt: 0.0,
                    fma: 0.0,
                };
                match bound {
                    Bound::Memory { .. } => {
                        let bus = |arrays: &mut Arrays, k: Kernel| {
                            arrays.best(k, options.stream_runs) * k.bus_bytes() as f64
                                / k.counted_bytes() as f64
                        };
                        s.copy = bus(arrays, Kernel::Copy);
                        s.triad = bus(arrays, Kernel::Triad);
                        s.read = bus(arrays, Kernel::Read);
                        s.copy_nt = arrays.best(Kernel::CopyNonTemporal, options.stream_runs);
                    }
                    Bound::Flops(_) => s.fma = crate::peaks::fma_peak(),
                }
                let (times, out) = w.time_runs(1, options.runs)?;
                s.seconds = times[0];
                outputs = out;
                samples.push(s);
            }
            let check = options
                .bench
                .check_dir
                .as_ref()
                .map(|d| w.check(&outputs, d));
            Ok(Row {
                name: w.name.clone(),
                threads,
                bound,
                samples,
                check,
            })
        })?;
        rows.push(row);
    }
    Ok(rows)
}

/// The table `hlojit roofline` prints.
pub fn table(rows: &[Row]) -> String {
    use std::fmt::Write;
    let pct = |(m, lo, hi): (f64, f64, f64)| {
        format!("{:3.0}% [{:.0}-{:.0}]", m * 100.0, lo * 100.0, hi * 100.0)
    };
    let mut out = String::new();
    let _ = writeln!(out, "bandwidth-bound: MB counted as STREAM (each array once) + MB written (write-allocate) = bus MB; GB/s on the bus;");
    let _ = writeln!(out, "fraction of the bus GB/s of STREAM copy / triad / read measured just before, median [least-most] of the samples;");
    let _ = writeln!(out, "of copy (nt): counted GB/s against STREAM copy with non-temporal stores, counted (memcpy-class: no write-allocate)");
    let _ = writeln!(
        out,
        "{:<34} {:>3} {:>8} {:>8} {:>9} {:>8} {:>8} {:>17} {:>17} {:>17} {:>17}",
        "workload",
        "thr",
        "MB cnt",
        "MB wr",
        "best ms",
        "GB/s",
        "copy",
        "of copy",
        "of triad",
        "of read",
        "of copy (nt)"
    );
    for r in rows {
        if let Bound::Memory { counted, written } = r.bound {
            let best = r.best_seconds();
            let copy = r.samples.iter().map(|s| s.copy).fold(0.0, f64::max);
            let _ = writeln!(
                out,
                "{:<34} {:>3} {:>8.1} {:>8.1} {:>9.3} {:>8.2} {:>8.2} {:>17} {:>17} {:>17} {:>17}{}",
                r.name,
                r.threads,
                counted / 1e6,
                written / 1e6,
                best * 1e3,
                (counted + written) / best / 1e9,
                copy / 1e9,
                pct(r.fraction(|s| s.copy)),
                pct(r.fraction(|s| s.triad)),
                pct(r.fraction(|s| s.read)),
                pct(r.counted_fraction(|s| s.copy_nt)),
                check_note(&r.check)
            );
        }
    }
    let _ = writeln!(out, "compute-bound: GFLOP/s of the fastest run; fraction of the f32 FMA peak measured just before on as many threads");
    let _ = writeln!(
        out,
        "{:<34} {:>3} {:>9} {:>9} {:>9} {:>17}",
        "workload", "thr", "best ms", "GFLOP/s", "peak", "of peak"
    );
    for r in rows {
        if let Bound::Flops(flops) = r.bound {
            let best = r.best_seconds();
            let peak = r.samples.iter().map(|s| s.fma).fold(0.0, f64::max);
            let _ = writeln!(
                out,
                "{:<34} {:>3} {:>9.3} {:>9.1} {:>9.1} {:>17}{}",
                r.name,
                r.threads,
                best * 1e3,
                flops / best / 1e9,
                peak / 1e9,
                pct(r.fraction(|s| s.fma)),
                check_note(&r.check)
            );
        }
    }
    out
}

fn check_note(check: &Option<Result<(), String>>) -> String {
    match check {
        Some(Ok(())) => String::new(),
        Some(Err(e)) => format!("  (OUTPUTS DIFFER: {e})"),
        None => "  (outputs not checked)".into(),
    }
}

/// The rows as JSON, one object per workload and thread count, every sample included.
pub fn json(rows: &[Row]) -> serde_json::Value {
    serde_json::Value::Array(
        rows.iter()
            .map(|r| {
                let (kind, counted, written, flops) = match r.bound {
                    Bound::Memory { counted, written } => ("memory", counted, written, 0.0),
                    Bound::Flops(f) => ("compute", 0.0, 0.0, f),
                };
                serde_json::json!({
                    "name": r.name, "threads": r.threads, "bound": kind,
                    "bytes_counted": counted, "bytes_written": written, "flops": flops,
                    "check": r.check.as_ref().map(|c| c.as_ref().err().cloned().unwrap_or_else(|| "match".into())),
                    "samples": r.samples.iter().map(|s| serde_json::json!({
                        "seconds": s.seconds, "rate": r.rate(s), "copy_bus": s.copy, "triad_bus": s.triad, "read_bus": s.read, "copy_nt": s.copy_nt, "fma": s.fma,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}
