//! Concurrency and memory: one executable run from many threads gives bit-identical results,
//! modules compile on several threads at once, and compile + run + drop cycles keep resident
//! memory flat. The bounded versions run with the harness; the long ones are ignored tests:
//!
//! ```sh
//! cargo test --release --test harness concurrency -- --ignored --nocapture
//! ```
//!
//! (8 threads x 20,000 runs of two modules, and 10,000 compile + run + drop cycles of the
//! corpus's layer norm: about half an hour on two cores.)

use hlojit::{parse_module, release_cached_memory, ArrayLiteral, CompileOptions, Executable, HostBuffer, Literal};
use std::path::PathBuf;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn module_text(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Deterministic arguments for an executable: element `i` of leaf `j` is a small function of
/// both, in every parameter's layout.
fn arguments(exe: &Executable) -> Vec<HostBuffer> {
    exe.argument_shapes()
        .into_iter()
        .enumerate()
        .map(|(j, shape)| {
            let mut literal = ArrayLiteral::zeros(shape.element_type, &shape.dims);
            for i in 0..literal.element_count() {
                literal.set_f64(i, ((i * 7 + j * 13) % 17) as f64 / 8.0 - 1.0);
            }
            HostBuffer::from_literal(literal)
                .relayout(shape.layout_or_default())
                .unwrap()
        })
        .collect()
}

fn bytes(outputs: &[HostBuffer]) -> Vec<Vec<u8>> {
    outputs.iter().map(|b| b.bytes().to_vec()).collect()
}

/// Runs one executable from `threads` threads, `runs` times each, and checks every result is
/// bit-identical to a run on this thread.
fn same_results_from_many_threads(text: &str, threads: usize, runs: usize) {
    let exe = Executable::compile(&parse_module(text).unwrap(), &CompileOptions::default()).unwrap();
    let args = arguments(&exe);
    let expected = bytes(&exe.run(&args).unwrap());
    std::thread::scope(|s| {
        for t in 0..threads {
            let (exe, args, expected) = (&exe, &args, &expected);
            s.spawn(move || {
                for r in 0..runs {
                    let got = bytes(&exe.run(args).unwrap());
                    assert!(got == *expected, "thread {t}, run {r} differs");
                }
            });
        }
    });
}

/// A small layer: matrix product, bias, tanh, a reduction and a loop, so that runs are short.
const LAYER: &str = "HloModule layer
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
cond {
  s = (s32[], f32[16,8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[16,8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  h = f32[16,8] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  t = f32[16,8] tanh(h)
  ROOT r = (s32[], f32[16,8]) tuple(j, t)
}
ENTRY e {
  x = f32[16,32] parameter(0)
  w = f32[32,8] parameter(1)
  b = f32[8] parameter(2)
  d = f32[16,8] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[16,8] broadcast(b), dimensions={1}
  h = f32[16,8] add(d, bb)
  zero = s32[] constant(0)
  init = (s32[], f32[16,8]) tuple(zero, h)
  loop = (s32[], f32[16,8]) while(init), condition=cond, body=body
  y = f32[16,8] get-tuple-element(loop), index=1
  z = f32[] constant(0)
  sum = f32[16] reduce(y, z), dimensions={1}, to_apply=add
  ROOT out = (f32[16,8], f32[16]) tuple(y, sum)
}";

#[test]
fn one_executable_from_8_threads_x_1000_runs_is_bit_identical() {
    same_results_from_many_threads(LAYER, 8, 1000);
}

#[test]
#[ignore = "long (minutes): cargo test --release --test harness concurrency -- --ignored"]
fn one_executable_from_8_threads_x_20000_runs_is_bit_identical() {
    same_results_from_many_threads(LAYER, 8, 20_000);
    same_results_from_many_threads(
        &module_text("tests/conformance/cases/model_layernorm/module.hlo"),
        8,
        20_000,
    );
}

#[test]
fn several_modules_compile_on_several_threads_at_once() {
    let paths = [
        "examples/mlp.hlo",
        "examples/gelu.hlo",
        "examples/training_loop.hlo",
        "tests/conformance/cases/model_layernorm/module.hlo",
    ];
    // Reference results, compiled and run one at a time.
    let expected: Vec<Vec<Vec<u8>>> = paths
        .iter()
        .map(|p| {
            let exe = Executable::compile(&parse_module(&module_text(p)).unwrap(), &CompileOptions::default()).unwrap();
            bytes(&exe.run(&arguments(&exe)).unwrap())
        })
        .collect();
    std::thread::scope(|s| {
        for round in 0..2 {
            for (p, want) in paths.iter().zip(&expected) {
                s.spawn(move || {
                    let module = parse_module(&module_text(p)).unwrap();
                    let exe = Executable::compile(&module, &CompileOptions::default()).unwrap();
                    assert!(
                        bytes(&exe.run(&arguments(&exe)).unwrap()) == *want,
                        "{p} (round {round})"
                    );
                });
            }
        }
    });
}

fn resident_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS");
    line.split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .expect("a number of kB")
}

/// Compiles, runs and drops a module `cycles` times after `warmup` cycles; returns resident
/// memory before and after the measured cycles in kB (after giving cached blocks back).
fn resident_over_cycles(text: &str, warmup: usize, cycles: usize) -> (u64, u64) {
    let module = parse_module(text).unwrap();
    // One thread: compile-time thread pools and caches are what they will stay.
    let options = CompileOptions {
        parallel_compile: false,
        ..CompileOptions::default()
    };
    let cycle = || {
        let exe = Executable::compile(&module, &options).unwrap();
        let args: Vec<Literal> = exe
            .parameter_shapes()
            .iter()
            .map(|s| {
                let a = s.as_array().expect("array parameters");
                ArrayLiteral::zeros(a.element_type, &a.dims).into()
            })
            .collect();
        exe.run_literals(&args).unwrap();
    };
    for _ in 0..warmup {
        cycle();
    }
    release_cached_memory();
    let before = resident_kb();
    for _ in 0..cycles {
        cycle();
    }
    release_cached_memory();
    (before, resident_kb())
}

const SMALL: &str = "HloModule small
ENTRY e {
  x = f32[64] parameter(0)
  y = f32[64] parameter(1)
  m = f32[64] multiply(x, y)
  ROOT r = f32[64] add(m, x)
}";

/// Runs [`resident_memory_probe`] in a process of its own (other tests of this binary compile
/// and allocate at the same time) on `module` (a path, or the small module when empty); returns
/// resident memory before and after the measured cycles in kB.
fn resident_in_own_process(module: &str, warmup: usize, cycles: usize) -> (u64, u64) {
    let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "concurrency::resident_memory_probe",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PROBE_VARIABLE, format!("{module}|{warmup}|{cycles}"))
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // libtest prints the test's name on the same line as its first output.
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("resident kB: ").map(|(_, rest)| rest.trim()))
        .unwrap_or_else(|| {
            panic!(
                "the probe printed no result:\n{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let (before, after) = line.split_once(" -> ").expect("BEFORE -> AFTER");
    (before.parse().expect("kB"), after.parse().expect("kB"))
}

/// `MODULE|WARMUP|CYCLES` for [`resident_memory_probe`].
const PROBE_VARIABLE: &str = "HLOJIT_RESIDENT_MEMORY_PROBE";

#[test]
#[ignore = "a helper: the memory tests run it in a process of its own"]
fn resident_memory_probe() {
    let Ok(spec) = std::env::var(PROBE_VARIABLE) else {
        return;
    };
    let parts: Vec<&str> = spec.split('|').collect();
    let text = if parts[0].is_empty() {
        SMALL.to_string()
    } else {
        module_text(parts[0])
    };
    let (before, after) = resident_over_cycles(&text, parts[1].parse().unwrap(), parts[2].parse().unwrap());
    println!("resident kB: {before} -> {after}");
}

#[test]
fn compile_run_drop_cycles_keep_resident_memory_flat() {
    // Each compile used to keep about 3 kB (the target machine's feature strings, which
    // inkwell never frees): 200 cycles grew by ~600 kB, 2,000 cycles of model_layernorm from
    // 51 to 89 MB. Now the growth is the allocator's noise.
    let (before, after) = resident_in_own_process("", 20, 200);
    let growth = after as i64 - before as i64;
    assert!(
        growth < 200,
        "200 compile + run + drop cycles grew resident memory from {before} to {after} kB"
    );
}

#[test]
#[ignore = "long (about 20 minutes): cargo test --release --test harness concurrency -- --ignored"]
fn ten_thousand_compile_run_drop_cycles_keep_resident_memory_flat() {
    let path = "tests/conformance/cases/model_layernorm/module.hlo";
    let (before, after) = resident_in_own_process(path, 100, 10_000);
    let growth = after as i64 - before as i64;
    println!("{path}: 10000 cycles, resident {before} -> {after} kB ({growth:+} kB)");
    assert!(
        growth < 4096,
        "10,000 compile + run + drop cycles grew resident memory from {before} to {after} kB"
    );
}
