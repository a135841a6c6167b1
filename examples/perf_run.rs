//! Times a module: compiles it once and runs it repeatedly on random inputs in [-1, 1),
//! printing the median run time (and GFLOP/s when a flop count is given). With `--asm FILE`
//! it also writes the optimized assembly.
//!
//! `cargo run --release --example perf_run -- MODULE.hlo [--runs N] [--flops F] [--asm FILE] [--compiles N]`

use hlojit::{parse_module, ArrayLiteral, CompileOptions, Executable};
use rand::{Rng, SeedableRng};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.first().ok_or("usage: perf_run MODULE.hlo [--runs N] [--flops F] [--asm FILE]")?;
    let opt = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let runs: usize = opt("--runs").map(|s| s.parse()).transpose()?.unwrap_or(10);
    let flops: Option<f64> = opt("--flops").map(|s| s.parse()).transpose()?;
    let text = std::fs::read_to_string(path)?;
    let module = parse_module(&text)?;
    if let Some(asm) = opt("--asm") {
        let prepared = hlojit_compiler::pipeline::prepare(&module)?;
        let options = CompileOptions::default();
        let kind = if asm.ends_with(".ll") {
            hlojit_compiler::pipeline::OutputKind::LlvmIr
        } else {
            hlojit_compiler::pipeline::OutputKind::Assembly
        };
        let bytes = hlojit_compiler::pipeline::compile_to(&prepared, "entry", &options, kind, false)?;
        std::fs::write(&asm, bytes)?;
    }
    // Compile several times for a CPU-time figure finer than the clock tick.
    let compiles: usize = opt("--compiles").map(|s| s.parse()).transpose()?.unwrap_or(1).max(1);
    let compile_cpu0 = cpu_seconds();
    for _ in 1..compiles {
        Executable::compile(&module, &CompileOptions::default())?;
    }
    let exe = Executable::compile(&module, &CompileOptions::default())?;
    let compile_cpu_ms = (cpu_seconds() - compile_cpu0) * 1e3 / compiles as f64;
    let shapes = exe.parameter_shapes().to_vec();
    let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    let arrays: Vec<ArrayLiteral> = shapes
        .iter()
        .flat_map(|s| s.array_leaves())
        .map(|s| {
            let mut lit = ArrayLiteral::zeros(s.element_type, &s.dims);
            for i in 0..s.element_count() as usize {
                if s.element_type.is_floating() {
                    lit.set_f64(i, rng.gen_range(-1.0..1.0));
                } else {
                    lit.set_i64(i, rng.gen_range(0..100));
                }
            }
            lit
        })
        .collect();
    exe.run(arrays.iter())?;
    let cpu0 = cpu_seconds();
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        exe.run(arrays.iter())?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let cpu_ms = (cpu_seconds() - cpu0) * 1e3 / runs as f64;
    times.sort_by(|a, b| a.total_cmp(b));
    let median = times[times.len() / 2];
    print!(
        "{} compile {:.1} ms (cpu {compile_cpu_ms:.0} ms), run median {:.3} ms (min {:.3})",
        module.name,
        exe.compile_time().as_secs_f64() * 1e3,
        median,
        times[0]
    );
    if let Some(f) = flops {
        print!(", {:.1} GFLOP/s", f / median / 1e6);
    }
    print!("; cpu {cpu_ms:.2} ms per run");
    if let Some(f) = flops {
        print!(" ({:.1} GFLOP per cpu-s)", f / cpu_ms / 1e6);
    }
    println!();
    Ok(())
}

/// User + system CPU time of this process (all threads), from /proc (Linux; 0 elsewhere):
/// a measure that does not depend on how busy the machine is.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    // Fields after the parenthesized command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}
