//! The `hlojit` command line: run HLO modules, check them against the conformance corpus.

use clap::{Parser, Subcommand, ValueEnum};
use hlojit_tools::conformance::{self, ModuleFile};
use hlojit::{compile_aot, npy, Argument, ArrayLiteral, CompileOptions, CustomCallRegistry, Executable, HostBuffer, OutputKind, ProcessSymbols, RunOptions, TargetOptions};
use hlojit_tools::module_file::read_module;
use hlojit_tools::summary::summarize;
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(name = "hlojit", version, about = "Compile and run XLA HLO modules with LLVM")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compile and run a module on inputs from .npy files or random ones.
    Run {
        module: PathBuf,
        /// The inputs, in parameter order (tuple parameters take their leaves): a .npy file per
        /// array, a directory of in0.npy, in1.npy, …, or an .npz archive (np.savez). bf16 and
        /// f8 arrays may be raw bits (uint16 / uint8) or ml_dtypes arrays saved with np.save.
        #[arg(long = "input", conflicts_with = "random_inputs")]
        inputs: Vec<PathBuf>,
        /// Generate random inputs from this seed instead.
        #[arg(long)]
        random_inputs: Option<u64>,
        /// Write the results as out0.npy, out1.npy, ... (tuples flattened).
        #[arg(long)]
        output_dir: Option<PathBuf>,
        /// Donate parameter INDEX: outputs aliased with it are computed in its memory.
        #[arg(long = "donate", value_name = "INDEX")]
        donate: Vec<usize>,
        /// Stop the run with an error if it has not finished after SECONDS (while loops
        /// check the deadline every iteration).
        #[arg(long, value_name = "SECONDS", value_parser = parse_timeout)]
        timeout: Option<Duration>,
        /// Queue a .npy file for the program's infeed ops (repeatable, in the order the program
        /// reads them; an infeed of a tuple reads one file per leaf; stacked over the devices
        /// for a multi-device program).
        #[arg(long = "infeed", value_name = "F.npy")]
        infeeds: Vec<PathBuf>,
        /// Write what the program outfeeds as DIR/outfeed0.npy, outfeed1.npy, ... (tuples
        /// flattened; DIR/device<d>/ for each device of a multi-device program).
        #[arg(long, value_name = "DIR")]
        outfeed_dir: Option<PathBuf>,
        /// Run each device of a multi-device program in its own process:
        /// `mpirun -n DEVICES hlojit run --distributed mpi ...` (rank = global device id; the
        /// inputs and outputs are the same stacked files as without it, written by rank 0).
        #[arg(long, value_enum)]
        distributed: Option<Distributed>,
        #[command(flatten)]
        targets: TargetSources,
        #[command(flatten)]
        dump: DumpArg,
    },
    /// Compile a module ahead of time: an object file (or assembly, or LLVM IR) and a C header.
    Compile {
        module: PathBuf,
        #[arg(long, value_enum, default_value = "obj")]
        emit: Emit,
        /// The output file.
        #[arg(short = 'o', long)]
        output: PathBuf,
        /// Also write the C header declaring the function.
        #[arg(long)]
        header: Option<PathBuf>,
        /// The exported function's name (default: the module file's name).
        #[arg(long)]
        name: Option<String>,
        /// Target triple (default: this machine).
        #[arg(long)]
        target: Option<String>,
        /// Target CPU (default: this machine's, or "generic" with --target).
        #[arg(long)]
        cpu: Option<String>,
        /// Target features, e.g. "+avx2,-avx512f".
        #[arg(long)]
        features: Option<String>,
        #[command(flatten)]
        dump: DumpArg,
    },
    /// Print the module after hlojit's HLO passes (fusion, layouts, expansions) as HLO text.
    Opt {
        module: PathBuf,
        /// Write it here instead of standard output.
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
    },
    /// Draw the fused graph (after hlojit's HLO passes): kernels coloured by kind, edges
    /// labelled with shapes, loop and conditional bodies as clusters.
    Graph {
        module: PathBuf,
        /// OUT.svg (needs Graphviz's dot), OUT.html (self-contained; laid out by dot when
        /// installed, by hlojit otherwise) or OUT.dot (Graphviz source).
        #[arg(short = 'o', long)]
        output: PathBuf,
    },
    /// Run a module with per-kernel timers and print where the time goes, with each kernel's
    /// throughput against this machine's measured memory bandwidth and FMA peak.
    Profile {
        module: PathBuf,
        /// The inputs, as for `run` (default: random inputs from seed 0).
        #[arg(long = "input", conflicts_with = "random_inputs")]
        inputs: Vec<PathBuf>,
        #[arg(long)]
        random_inputs: Option<u64>,
        /// Timed runs (after one untimed run).
        #[arg(long, default_value_t = 10)]
        runs: usize,
        /// Kernels listed (the slowest first; the rest are summed).
        #[arg(long, default_value_t = 20)]
        top: usize,
        #[command(flatten)]
        targets: TargetSources,
    },
    /// Measure this machine's peaks, which kernels are judged against: STREAM triad bandwidth
    /// and f32 FMA throughput (and bf16 dot products with AVX512-BF16), all threads (low when
    /// other programs keep the machine busy).
    Peaks {
        /// Also run the STREAM kernels (copy, scale, add, triad, memcpy, a read-only sum) on one
        /// thread and on all of them.
        #[arg(long)]
        stream: bool,
    },
    /// Time perf workloads (folders with module.hlo and perf.json) like xla_reference.py does.
    Bench {
        /// Workload folders, or names under --root; all workloads of --root if none.
        workloads: Vec<String>,
        #[arg(long, default_value = "../shared/perf")]
        root: PathBuf,
        #[arg(long, default_value_t = 10)]
        runs: usize,
        #[arg(long, default_value_t = 2)]
        warmup: usize,
        /// Read inputs from DIR/<name>/in<i>.npy (by default they are generated exactly as the
        /// workloads' recipe says, numpy's default_rng(0) stream included).
        #[arg(long)]
        inputs_dir: Option<PathBuf>,
        /// Compare outputs with DIR/<name>/out<i>.npy (as xla_reference.py --save-outputs writes).
        #[arg(long)]
        check_dir: Option<PathBuf>,
        /// The module file of each workload to compile: module.hlo, or module.stablehlo.mlir
        /// (StableHLO text; any kind is told by content).
        #[arg(long, default_value = "module.hlo")]
        module: String,
        #[command(flatten)]
        dump: DumpArg,
        /// Print the measurements as JSON (one object per workload) instead of lines.
        #[arg(long)]
        json: bool,
        /// Compile each workload N times, each with a fresh client: besides the first compile,
        /// report the least wall and CPU time of the others (less noise on a busy machine).
        #[arg(long, default_value_t = 1)]
        compiles: usize,
    },
    /// How close perf workloads come to this machine's limits: bandwidth-bound ones against
    /// STREAM copy/triad/read, compute-bound ones (more than 4 flops per byte) against the f32
    /// FMA peak, each reference measured right before the workload on the same threads.
    Roofline {
        /// Workload folders, or names under --root; all workloads of --root if none.
        workloads: Vec<String>,
        #[arg(long, default_value = "../shared/perf")]
        root: PathBuf,
        /// Thread counts, comma-separated (default: 1 and all cores).
        #[arg(long, value_delimiter = ',')]
        threads: Vec<usize>,
        /// Samples per workload and thread count (references, then the workload): the spread.
        #[arg(long, default_value_t = 5)]
        samples: usize,
        /// Timed runs of the workload per sample (the fastest counts).
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Runs of each STREAM kernel per sample (the fastest counts).
        #[arg(long, default_value_t = 3)]
        stream_runs: usize,
        /// Read inputs from DIR/<name>/in<i>.npy.
        #[arg(long)]
        inputs_dir: Option<PathBuf>,
        /// Compare outputs with DIR/<name>/out<i>.npy.
        #[arg(long)]
        check_dir: Option<PathBuf>,
        /// Print every sample as JSON instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Differential fuzzing: random HLO programs run on hlojit and on XLA:CPU (jaxlib).
    FuzzDiff {
        /// How many programs.
        #[arg(long, default_value_t = 100)]
        programs: u64,
        /// Program i is generated from seed S + i (so `--seed S+i --programs 1` reproduces it).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Write every failing program here as a file test with XLA's results.
        #[arg(long)]
        keep_dir: Option<PathBuf>,
        /// Print the first program's HLO text and stop (for looking at the generator).
        #[arg(long)]
        print: bool,
    },
    /// Run conformance corpus cases and compare with XLA's outputs.
    Conformance {
        dirs: Vec<PathBuf>,
        #[arg(long, value_enum, default_value = "both")]
        module: Which,
        /// Only cases whose name contains this.
        #[arg(long)]
        filter: Option<String>,
        /// Write a JSON report.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Print the JSON report on standard output instead of the FAIL lines and totals.
        #[arg(long)]
        json: bool,
        /// Compile each case ahead of time, link it with the runtime's static library and a C
        /// driver (`cc`), and run that program instead of the JIT.
        #[arg(long)]
        aot: bool,
        /// Compile for this CPU instead of this machine's (one it can run: `x86-64` tests the
        /// SSE2-only code paths).
        #[arg(long)]
        cpu: Option<String>,
        /// Target features, e.g. "-avx512f".
        #[arg(long)]
        features: Option<String>,
        #[command(flatten)]
        targets: TargetSources,
    },
}

/// `--dump DIR`: what the compilation did, written to DIR (see `hlojit_compiler::dump`).
#[derive(clap::Args)]
struct DumpArg {
    /// Write the HLO after every pass that changed it, the kernel list, the buffer assignment
    /// and each LLVM module's IR (before and after optimization) and assembly to DIR
    /// (HLOJIT_DUMP_PASSES=fusion,layout limits the HLO dumps to those passes).
    #[arg(long, value_name = "DIR")]
    dump: Option<PathBuf>,
}

impl DumpArg {
    /// The dump options: `--dump`, else what the environment says.
    fn options(&self) -> Option<hlojit_compiler::dump::DumpOptions> {
        let from_env = hlojit_compiler::dump::DumpOptions::from_env();
        match &self.dump {
            Some(dir) => Some(hlojit_compiler::dump::DumpOptions { dir: dir.clone(), passes: from_env.map(|d| d.passes).unwrap_or_default() }),
            None => from_env,
        }
    }
}

/// Where custom-call targets come from besides hlojit's built-ins.
#[derive(clap::Args)]
struct TargetSources {
    /// Load custom-call targets from this shared library (repeatable).
    #[arg(long = "plugin")]
    plugins: Vec<PathBuf>,
    /// Let custom calls call this function the hlojit executable itself exports (repeatable).
    #[arg(long = "allow-process-symbol", value_name = "NAME")]
    process_symbols: Vec<String>,
    /// Let custom calls call any function the hlojit executable itself exports (never the C
    /// library's or another shared library's). Only for modules you trust.
    #[arg(long = "allow-process-symbols", conflicts_with = "process_symbols")]
    all_process_symbols: bool,
}

impl TargetSources {
    /// Loads the plugins into the process-wide registry every compilation consults, and
    /// returns the compile options that allow the process symbols asked for.
    fn load(&self) -> Result<CompileOptions, String> {
        for p in &self.plugins {
            CustomCallRegistry::global().load_plugin(p).map_err(|e| e.to_string())?;
        }
        let process_symbols = if self.all_process_symbols {
            ProcessSymbols::MainExecutable
        } else if self.process_symbols.is_empty() {
            ProcessSymbols::None
        } else {
            ProcessSymbols::only(self.process_symbols.iter().cloned())
        };
        Ok(CompileOptions { process_symbols, ..CompileOptions::default() })
    }
}

fn parse_timeout(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text.parse().map_err(|_| format!("'{text}' is not a number of seconds"))?;
    Duration::try_from_secs_f64(seconds).map_err(|_| format!("'{text}' is not a positive number of seconds"))
}

#[derive(Clone, Copy, ValueEnum)]
enum Emit {
    Obj,
    Asm,
    LlvmIr,
}

#[derive(Clone, Copy, ValueEnum)]
enum Which {
    Module,
    Optimized,
    Both,
    /// module.stablehlo.mlir (StableHLO text)
    Stablehlo,
    /// module.stablehlo.mlirbc (portable artifact)
    Bytecode,
    /// module.jax_export
    Export,
    /// every form
    All,
}

fn main() -> ExitCode {
    // Like other command-line tools, end quietly when the reader of our output goes away
    // (`hlojit run ... | head`) instead of failing to print.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run { module, inputs, random_inputs, output_dir, donate, timeout, infeeds, outfeed_dir, distributed, targets, dump } => targets.load().and_then(|options| {
            let options = CompileOptions { dump: dump.options(), ..options };
            let run_options = timeout.map_or_else(RunOptions::default, |t| RunOptions::default().with_timeout(t));
            let inputs = match random_inputs {
                Some(seed) => Inputs::Random(seed),
                None => Inputs::Files(&inputs),
            };
            let feeds = Feeds { infeeds: &infeeds, outfeed_dir: outfeed_dir.as_deref(), distributed };
            run(&module, inputs, output_dir.as_deref(), &donate, &feeds, &options, &run_options)
        }),
        Command::Compile { module, emit, output, header, name, target, cpu, features, dump } => {
            let options = CompileOptions { target: TargetOptions { triple: target, cpu, features }, dump: dump.options(), ..CompileOptions::default() };
            compile(&module, emit, &output, header.as_deref(), name, options)
        }
        Command::Opt { module, output } => opt(&module, output.as_deref()),
        Command::Graph { module, output } => graph(&module, &output),
        Command::Profile { module, inputs, random_inputs, runs, top, targets } => targets.load().and_then(|options| {
            let inputs = match (random_inputs, inputs.is_empty()) {
                (Some(seed), _) => Inputs::Random(seed),
                (None, true) => Inputs::Random(0),
                (None, false) => Inputs::Files(&inputs),
            };
            profile(&module, inputs, runs, top, &options)
        }),
        Command::Peaks { stream } => {
            let p = hlojit_tools::peaks::measure();
            println!("memory bandwidth (STREAM triad, all threads): {:.1} GB/s", p.bytes_per_second / 1e9);
            println!("f32 FMA peak (all threads): {:.1} GFLOP/s", p.flops_per_second / 1e9);
            if let Some(bf16) = hlojit_tools::peaks::bf16_dot_peak() {
                println!("bf16 dot peak (vdpbf16ps, all threads): {:.1} GFLOP/s", bf16 / 1e9);
            }
            if stream {
                let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
                hlojit_tools::stream::measure(threads).map(|results| {
                    println!("STREAM, f32 arrays of {} MiB, best of repeats:", hlojit_tools::stream::ELEMENTS * 4 >> 20);
                    for r in results {
                        println!("  {:<11} {} thread(s) {:7.1} GB/s", r.kernel, r.threads, r.bytes_per_second / 1e9);
                    }
                    ExitCode::SUCCESS
                })
            } else {
                Ok(ExitCode::SUCCESS)
            }
        }
        Command::Bench { workloads, root, runs, warmup, inputs_dir, check_dir, module, dump, json, compiles } => {
            let options = hlojit_tools::bench::BenchOptions { runs, warmup, inputs_dir, check_dir, module_file: module, dump: dump.options(), compiles };
            bench(&workloads, &root, options, json)
        }
        Command::Roofline { workloads, root, threads, samples, runs, stream_runs, inputs_dir, check_dir, json } => {
            let bench = hlojit_tools::bench::BenchOptions { runs, warmup: 1, inputs_dir, check_dir, module_file: "module.hlo".into(), dump: None, compiles: 1 };
            let threads = if threads.is_empty() {
                let all = std::thread::available_parallelism().map_or(1, |n| n.get());
                if all > 1 { vec![1, all] } else { vec![1] }
            } else {
                threads
            };
            let options = hlojit_tools::roofline::RooflineOptions { threads, samples, runs, stream_runs, bench };
            roofline(&workloads, &root, &options, json)
        }
        Command::FuzzDiff { programs, seed, keep_dir, print } => fuzz_diff(programs, seed, keep_dir, print),
        Command::Conformance { dirs, module, filter, report, json, aot, cpu, features, targets } => {
            let runner = conformance::Runner { aot, target: TargetOptions { triple: None, cpu, features } };
            targets.load().and_then(|_| conformance_cmd(&dirs, module, &runner, filter.as_deref(), report.as_deref(), json))
        }
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn fuzz_diff(programs: u64, seed: u64, keep_dir: Option<PathBuf>, print: bool) -> Result<ExitCode, String> {
    use hlojit_tools::fuzz_diff;
    if print {
        print!("{}", hlojit_tools::fuzzgen::generate(seed).text);
        return Ok(ExitCode::SUCCESS);
    }
    let mut opts = fuzz_diff::Options::new(programs, seed);
    opts.keep_dir = keep_dir;
    let r = fuzz_diff::run(&opts)?;
    println!(
        "{} programs run, {} mismatches, {} hlojit errors, {} XLA errors (generator)",
        r.run,
        r.mismatches.len(),
        r.hlojit_errors.len(),
        r.xla_errors.len()
    );
    let bad = r.mismatches.len() + r.hlojit_errors.len() + r.xla_errors.len();
    Ok(if bad == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn opt(path: &Path, output: Option<&Path>) -> Result<ExitCode, String> {
    let module = read_module(path)?;
    let options = CompileOptions { verify_passes: true, ..CompileOptions::default() };
    let prepared = hlojit_compiler::pipeline::prepare(&module, &options).map_err(|e| e.to_string())?;
    // Buffer offsets and kernel names go in as `//` comments, which HLO parsers skip.
    let text = hlojit_compiler::dump::buffers::annotate(&prepared).map_err(|e| e.to_string())?;
    match output {
        Some(file) => std::fs::write(file, text).map_err(|e| format!("{}: {e}", file.display()))?,
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

fn graph(path: &Path, output: &Path) -> Result<ExitCode, String> {
    let module = read_module(path)?;
    let prepared = hlojit_compiler::pipeline::prepare(&module, &CompileOptions::default()).map_err(|e| e.to_string())?;
    let how = hlojit_tools::graph::write(&prepared, output)?;
    println!("wrote {} ({how})", output.display());
    Ok(ExitCode::SUCCESS)
}

fn profile(path: &Path, inputs: Inputs, runs: usize, top: usize, options: &CompileOptions) -> Result<ExitCode, String> {
    let module = read_module(path)?;
    let devices = declared_devices(&module);
    if devices > 1 {
        return Err("profile runs single-device programs (this one declares several devices)".into());
    }
    let buffers = input_arrays(&text_parameter_leaves(&module), 1, inputs)?.into_iter().map(HostBuffer::from_literal).collect();
    let p = hlojit_tools::profile::profile(&module, options, buffers, runs)?;
    let peaks = hlojit_tools::peaks::measure();
    print!("{}", p.table(&peaks, top));
    Ok(ExitCode::SUCCESS)
}

fn compile(path: &Path, emit: Emit, output: &Path, header: Option<&Path>, name: Option<String>, options: CompileOptions) -> Result<ExitCode, String> {
    let module = read_module(path)?;
    let name = name.unwrap_or_else(|| c_name(path));
    let kind = match emit {
        Emit::Obj => OutputKind::Object,
        Emit::Asm => OutputKind::Assembly,
        Emit::LlvmIr => OutputKind::LlvmIr,
    };
    let spinner = hlojit_tools::progress::Spinner::new(&format!("compiling {}", module.name));
    let out = compile_aot(&module, &name, &options, kind).map_err(|e| e.to_string())?;
    drop(spinner);
    std::fs::write(output, &out.code).map_err(|e| format!("{}: {e}", output.display()))?;
    if let Some(h) = header {
        std::fs::write(h, &out.header).map_err(|e| format!("{}: {e}", h.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A C identifier from a file name: `my-model.hlo` -> `my_model`.
fn c_name(path: &Path) -> String {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let mut name: String = stem.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        name.insert(0, '_');
    }
    name
}

/// Where `run` takes its inputs from.
enum Inputs<'a> {
    /// One .npy file per parameter leaf (stacked over devices for a multi-device program).
    Files(&'a [PathBuf]),
    /// Random values from this seed.
    Random(u64),
}

/// `run`'s infeed files and outfeed directory.
struct Feeds<'a> {
    infeeds: &'a [PathBuf],
    outfeed_dir: Option<&'a Path>,
    /// Devices as processes (`--distributed`).
    distributed: Option<Distributed>,
}

/// How the devices of a multi-device program run when not as threads of this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Distributed {
    /// One MPI process per device (`mpirun -n DEVICES hlojit run --distributed mpi ...`).
    Mpi,
}

impl Feeds<'_> {
    fn write_outfeeds(&self, exe: &Executable) -> Result<(), String> {
        self.write_outfeeds_of(exe, 0..exe.num_devices())
    }

    /// Warns about unread infeed values and writes the outfed ones of the devices this
    /// process ran.
    fn write_outfeeds_of(&self, exe: &Executable, devices: impl IntoIterator<Item = usize> + Clone) -> Result<(), String> {
        let unread: usize = devices.clone().into_iter().map(|d| exe.infeed_len(d)).sum();
        if unread > 0 {
            eprintln!("warning: the program left {unread} --infeed arrays unread");
        }
        if let Some(dir) = self.outfeed_dir {
            let n = hlojit_tools::feeds::write_outfeeds_of(exe, dir, devices)?;
            println!("outfeed: {n} arrays written to {}", dir.display());
        }
        Ok(())
    }
}

fn run(
    path: &Path,
    inputs: Inputs,
    output_dir: Option<&Path>,
    donate: &[usize],
    feeds: &Feeds,
    options: &CompileOptions,
    run_options: &RunOptions,
) -> Result<ExitCode, String> {
    let module = read_module(path)?;
    // Inputs are checked before compiling, except for a program for several partitions: a
    // split parameter arrives as each device's part, whose shape compiling works out.
    let partitioned = module.header_attribute("num_partitions").and_then(|v| v.trim().parse::<usize>().ok()).is_some_and(|n| n > 1);
    let checked = if partitioned { Err(inputs) } else { Ok(input_arrays(&text_parameter_leaves(&module), declared_devices(&module), inputs)?) };
    let spinner = hlojit_tools::progress::Spinner::new(&format!("compiling {}", module.name));
    let exe = Executable::compile(&module, options).map_err(|e| e.to_string())?;
    drop(spinner);
    println!("compiled {} in {:.1} ms ({})", module.name, exe.compile_time().as_secs_f64() * 1e3, exe.compile_stats());
    let leaves: Vec<hlojit::ArrayShape> = exe.argument_shapes().into_iter().cloned().collect();
    let arrays = match checked {
        Ok(arrays) => arrays,
        Err(inputs) => input_arrays(&leaves, exe.num_devices(), inputs)?,
    };
    hlojit_tools::feeds::queue_infeeds(&exe, feeds.infeeds)?;
    if feeds.distributed == Some(Distributed::Mpi) {
        let start = Instant::now();
        // Rank 0 gets the stacked results; the other ranks print and write nothing.
        let process = hlojit_tools::distributed::run_mpi(&exe, arrays, run_options)?;
        // Each process holds its own device's outfeed values and writes them to
        // DIR/device<d>/ (for a program of several devices) itself.
        feeds.write_outfeeds_of(&exe, [process.device])?;
        if let Some(outputs) = process.stacked_outputs {
            println!("ran on {} processes in {:.3} ms", exe.num_devices(), start.elapsed().as_secs_f64() * 1e3);
            for (i, literal) in outputs.iter().enumerate() {
                println!("out{i}: {}", summarize(literal));
                if let Some(dir) = output_dir {
                    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                    npy::write(&dir.join(format!("out{i}.npy")), literal).map_err(|e| e.to_string())?;
                }
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    if exe.num_devices() > 1 {
        let code = run_devices(&exe, arrays, output_dir, run_options)?;
        feeds.write_outfeeds(&exe)?;
        return Ok(code);
    }
    // Arguments in the entry layouts; donated parameters are passed by value.
    let donated_leaves = parameter_leaves(exe.parameter_shapes(), donate)?;
    let mut buffers = Vec::new();
    for (array, shape) in arrays.into_iter().zip(&leaves) {
        let b = HostBuffer::from_literal(array);
        buffers.push(if b.layout() == &shape.layout_or_default() { b } else { b.relayout(shape.layout_or_default()).map_err(|e| e.to_string())? });
    }
    let donated_ptrs: Vec<(usize, *const u8)> = donated_leaves.iter().map(|&j| (j, buffers[j].as_ptr())).collect();
    let (donated, kept): (Vec<_>, Vec<_>) = buffers.into_iter().enumerate().partition(|(j, _)| donated_leaves.contains(j));
    let mut args: Vec<(usize, Argument)> = kept.iter().map(|(j, b)| (*j, Argument::from(b))).collect();
    args.extend(donated.into_iter().map(|(j, b)| (j, Argument::Donated(b))));
    args.sort_by_key(|(j, _)| *j);
    let args = args.into_iter().map(|(_, a)| a);
    let start = Instant::now();
    let outputs = exe.run_with(args, run_options).map_err(|e| e.to_string())?;
    println!("ran in {:.3} ms", start.elapsed().as_secs_f64() * 1e3);
    for (i, out) in outputs.iter().enumerate() {
        let reused = donated_ptrs.iter().find(|(_, p)| *p == out.as_ptr()).map(|(j, _)| format!(" (in the memory of donated argument {j})")).unwrap_or_default();
        let literal = out.to_literal();
        println!("out{i}: {}{reused}", summarize(&literal));
        if let Some(dir) = output_dir {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            npy::write(&dir.join(format!("out{i}.npy")), &literal).map_err(|e| e.to_string())?;
        }
    }
    feeds.write_outfeeds(&exe)?;
    Ok(ExitCode::SUCCESS)
}

/// The entry's parameter leaves as the module's text gives them.
fn text_parameter_leaves(module: &hlojit::hlo::Module) -> Vec<hlojit::ArrayShape> {
    module.entry_parameter_shapes().iter().flat_map(|s| s.array_leaves().into_iter().cloned()).collect()
}

/// The inputs, read and checked against one device's parameter leaves `leaves`, stacked over
/// `devices` when there are several.
fn input_arrays(leaves: &[hlojit::ArrayShape], devices: usize, inputs: Inputs) -> Result<Vec<ArrayLiteral>, String> {
    let leaves: Vec<hlojit::ArrayShape> = leaves
        .iter()
        .map(|s| if devices > 1 { hlojit::ArrayShape::new(s.element_type, [&[devices as i64][..], &s.dims].concat()) } else { s.clone() })
        .collect();
    match inputs {
        Inputs::Random(seed) => {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            leaves.iter().map(|s| random_array(&mut rng, s)).collect::<Result<Vec<_>, _>>()
        }
        Inputs::Files(files) => read_inputs(files, &leaves, devices),
    }
}

/// The devices the module's header asks for (1 where it does not say or says something
/// invalid, which compiling reports).
fn declared_devices(module: &hlojit::hlo::Module) -> usize {
    let count = |key: &str| module.header_attribute(key).and_then(|v| v.trim().parse::<usize>().ok()).filter(|&n| n > 0);
    let devices = count("replica_count").unwrap_or(1).saturating_mul(count("num_partitions").unwrap_or(1));
    devices.min(hlojit_runtime::limits::MAX_DEVICES)
}

/// Reads one .npy file per parameter leaf and checks its element type and dimensions.
fn read_inputs(paths: &[PathBuf], leaves: &[hlojit::ArrayShape], devices: usize) -> Result<Vec<ArrayLiteral>, String> {
    let files = hlojit_tools::input_files::expand(paths)?;
    if files.len() != leaves.len() {
        let stacked = if devices > 1 { format!(" (each stacked over {devices} devices)") } else { String::new() };
        return Err(format!(
            "the module takes {} input arrays{stacked}, {} given with --input (or use --random-inputs SEED)",
            leaves.len(),
            files.len()
        ));
    }
    files
        .iter()
        .zip(leaves)
        .enumerate()
        .map(|(j, (p, want))| {
            let array = npy::parse(&p.bytes, Some(want.element_type)).map_err(|e| format!("--input {} for input {j}: {e}", p.origin))?;
            if array.dims() != want.dims.as_slice() {
                return Err(format!(
                    "--input {} for input {j} is {}, the module takes {}",
                    p.origin,
                    array.shape(),
                    hlojit::ArrayShape { layout: None, ..want.clone() }
                ));
            }
            Ok(array)
        })
        .collect()
}

/// `run` for a program on several devices: inputs and outputs are stacked over the devices
/// along a new leading dimension (global device order), as in the conformance corpus.
fn run_devices(exe: &Executable, arrays: Vec<ArrayLiteral>, output_dir: Option<&Path>, run_options: &RunOptions) -> Result<ExitCode, String> {
    let devices = exe.num_devices();
    let start = Instant::now();
    let outputs = hlojit_tools::conformance::run_stacked(exe, devices, arrays, run_options)?;
    println!("ran on {devices} devices in {:.3} ms", start.elapsed().as_secs_f64() * 1e3);
    for (i, literal) in outputs.iter().enumerate() {
        println!("out{i}: {}", summarize(literal));
        if let Some(dir) = output_dir {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            npy::write(&dir.join(format!("out{i}.npy")), literal).map_err(|e| e.to_string())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The argument (leaf) indices of the given parameters.
fn parameter_leaves(shapes: &[hlojit::Shape], params: &[usize]) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    let mut base = 0;
    for (i, s) in shapes.iter().enumerate() {
        let n = s.array_leaves().len();
        if params.contains(&i) {
            out.extend(base..base + n);
        }
        base += n;
    }
    if let Some(bad) = params.iter().find(|&&p| p >= shapes.len()) {
        return Err(format!("--donate {bad}: the module has {} parameters", shapes.len()));
    }
    Ok(out)
}

fn random_array(rng: &mut impl Rng, shape: &hlojit::ArrayShape) -> Result<ArrayLiteral, String> {
    let t = shape.element_type;
    let mut lit = ArrayLiteral::try_zeros(t, &shape.dims).map_err(|e| format!("a random input: {e}"))?;
    let n = lit.element_count();
    for i in 0..n {
        if t.is_floating() {
            lit.set_f64(i, rng.gen_range(-1.0..1.0));
        } else if t.is_pred() {
            lit.set_i64(i, rng.gen_range(0..2));
        } else {
            lit.set_i64(i, rng.gen_range(0..100));
        }
    }
    Ok(lit)
}

fn roofline(workloads: &[String], root: &Path, options: &hlojit_tools::roofline::RooflineOptions, json: bool) -> Result<ExitCode, String> {
    use hlojit_tools::progress::Progress;
    let dirs = hlojit_tools::bench::workload_dirs(workloads, root)?;
    let progress = Progress::new("roofline", dirs.len(), json);
    let mut arrays = hlojit_tools::stream::Arrays::default();
    let mut rows = Vec::new();
    for dir in dirs {
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        rows.extend(hlojit_tools::roofline::measure(&dir, &mut arrays, options)?);
        progress.tick(&name);
    }
    progress.finish();
    if json {
        println!("{}", serde_json::to_string_pretty(&hlojit_tools::roofline::json(&rows)).unwrap_or_default());
    } else {
        print!("{}", hlojit_tools::roofline::table(&rows));
    }
    let failed = rows.iter().any(|r| matches!(r.check, Some(Err(_))));
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

fn bench(workloads: &[String], root: &Path, options: hlojit_tools::bench::BenchOptions, json: bool) -> Result<ExitCode, String> {
    use hlojit_tools::progress::Progress;
    let dirs = hlojit_tools::bench::workload_dirs(workloads, root)?;
    let progress = Progress::new("bench", dirs.len(), json);
    if !json {
        // The line format is xla_reference.py's (cargo xtask bench pairs them up by name).
        progress.println("# workload compile_ms run_ms_median throughput (median of --runs runs; GFLOP/s or GB/s from perf.json)");
    }
    let mut failed = false;
    let mut records = Vec::new();
    for dir in dirs {
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match hlojit_tools::bench::bench_workload(&dir, &options) {
            Ok(m) => {
                failed |= matches!(m.check, Some(Err(_)));
                records.push(serde_json::json!({
                    "name": m.name, "compile_ms": m.compile_ms, "compile_cpu_ms": m.compile_cpu_ms,
                    "compile_min_ms": m.compile_min.map(|m| m.0), "compile_cpu_min_ms": m.compile_min.map(|m| m.1),
                    "run_ms_median": m.run_ms_median, "run_ms_best": m.run_ms_best,
                    "throughput": m.throughput, "check": m.check.as_ref().map(|c| c.as_ref().err().cloned().unwrap_or_else(|| "match".into())),
                }));
                if !json {
                    progress.println(&m.to_string());
                }
            }
            Err(e) => {
                failed = true;
                records.push(serde_json::json!({ "name": name, "error": e }));
                if !json {
                    progress.println(&format!("{name} failed: {e}"));
                }
            }
        }
        progress.tick(&name);
    }
    progress.finish();
    if json {
        println!("{}", serde_json::to_string_pretty(&records).unwrap_or_default());
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

fn conformance_cmd(dirs: &[PathBuf], which: Which, runner: &conformance::Runner, filter: Option<&str>, report: Option<&Path>, json: bool) -> Result<ExitCode, String> {
    let files: &[ModuleFile] = match which {
        Which::Module => &[ModuleFile::Module],
        Which::Optimized => &[ModuleFile::Optimized],
        Which::Both => &[ModuleFile::Module, ModuleFile::Optimized],
        Which::Stablehlo => &[ModuleFile::Stablehlo],
        Which::Bytecode => &[ModuleFile::Bytecode],
        Which::Export => &[ModuleFile::Export],
        Which::All => &[ModuleFile::Module, ModuleFile::Optimized, ModuleFile::Stablehlo, ModuleFile::Bytecode, ModuleFile::Export],
    };
    let mut cases = Vec::new();
    for dir in dirs {
        cases.extend(conformance::case_dirs(dir)?);
    }
    if let Some(f) = filter {
        cases.retain(|c| c.file_name().is_some_and(|n| n.to_string_lossy().contains(f)));
    }
    if cases.is_empty() {
        let matching = filter.map(|f| format!(" matching '{f}'")).unwrap_or_default();
        return Err(format!("no conformance cases{matching} under {} (a case is a directory cases/NAME with case.json)", dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")));
    }
    let progress = hlojit_tools::progress::Progress::new("conformance", conformance::job_count(&cases, files), json);
    let outcomes = conformance::run_all_on(runner, &cases, files, &|o| progress.tick(&o.case));
    progress.finish();
    let (mut failed, mut not_runnable) = (0, 0);
    if json {
        println!("{}", conformance::report_json(&outcomes));
    }
    for o in outcomes.iter().filter(|_| !json) {
        match &o.failure {
            Some(reason) if o.not_runnable => {
                not_runnable += 1;
                println!("NOT RUNNABLE {} [{}] {}", o.case, o.file.file_name(), reason);
            }
            Some(reason) => {
                failed += 1;
                println!("FAIL {} [{}] {}", o.case, o.file.file_name(), reason);
            }
            None => {}
        }
    }
    if let Some(path) = report {
        std::fs::write(path, conformance::report_json(&outcomes)).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if json {
        let failed = outcomes.iter().filter(|o| o.failure.is_some() && !o.not_runnable).count();
        return Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE });
    }
    let passed = outcomes.len() - failed - not_runnable;
    if not_runnable == 0 {
        println!("{passed} passed, {failed} failed");
    } else {
        let why = if runner.aot { "the text lacks data, or several devices" } else { "the text lacks data" };
        println!("{passed} passed, {failed} failed, {not_runnable} not runnable ({why})");
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
