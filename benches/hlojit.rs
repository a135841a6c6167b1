//! Criterion benchmarks: compile latency on corpus models and run time of perf workloads.
//! (`cargo xtask bench` compares with XLA:CPU on the full perf suite in one run.)

use criterion::{criterion_group, criterion_main, Criterion};
use hlojit::Client;
use std::path::PathBuf;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Parse + verify + optimize + LLVM + JIT load of whole modules.
fn compile_latency(c: &mut Criterion) {
    let mut group = c.benchmark_group("compile");
    group.sample_size(10);
    for case in ["elementwise_chain_f32", "model_mlp_grad", "model_attention", "while_fori_loop"] {
        for file in ["module.hlo", "optimized.hlo"] {
            let path = repo().join("tests/conformance/cases").join(case).join(file);
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            group.bench_function(format!("{case}/{file}"), |b| b.iter(|| Client::new().compile_text(&text)));
        }
    }
    group.finish();
}

/// Run time of the perf workloads that fit a criterion run.
fn workloads(c: &mut Criterion) {
    let perf = repo().join("../shared/perf");
    let mut group = c.benchmark_group("run");
    group.sample_size(10);
    for name in ["gelu_16m_f32", "softmax_4096x4096_f32", "matmul_1024_f32", "layernorm_8192x1024_f32"] {
        let dir = perf.join(name);
        if !dir.exists() {
            continue;
        }
        let text = match std::fs::read_to_string(dir.join("module.hlo")) {
            Ok(t) => t,
            Err(_) => continue,
        };
        let Ok(exe) = Client::new().compile_text(&text) else { continue };
        let inputs: Vec<hlojit::HostBuffer> = exe
            .argument_shapes()
            .into_iter()
            .map(|s| hlojit::HostBuffer::zeros(s).expect("valid shape"))
            .collect();
        group.bench_function(name, |b| b.iter(|| exe.run(&inputs).expect("runs")));
    }
    group.finish();
}

/// Per-call overhead of `Executable::run` (argument checks, output allocation, the entry's
/// setup) on programs whose kernels take a few nanoseconds: the whole time is overhead.
fn per_call_overhead(c: &mut Criterion) {
    let mut group = c.benchmark_group("per_call");
    let programs = [
        ("add_f32x4", "HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  y = f32[4] parameter(1)\n  ROOT r = f32[4] add(x, y)\n}\n"),
        (
            "tuple_of_3_from_4_args",
            "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n  c = s32[] parameter(2)\n  d = f32[2,2] parameter(3)\n  s = f32[4] multiply(a, b)\n  t = s32[] add(c, c)\n  n = f32[2,2] negate(d)\n  ROOT r = (f32[4], s32[], f32[2,2]) tuple(s, t, n)\n}\n",
        ),
    ];
    for (name, text) in programs {
        let exe = Client::new().compile_text(text).expect("compiles");
        let inputs: Vec<hlojit::HostBuffer> = exe
            .argument_shapes()
            .into_iter()
            .map(|s| hlojit::HostBuffer::zeros(s).expect("valid shape"))
            .collect();
        group.bench_function(name, |b| b.iter(|| exe.run(&inputs).expect("runs")));
    }
    // The cost of a compilation served by the client's cache (fingerprint of the module text).
    let client = Client::new();
    let text = programs[1].1;
    client.compile_text(text).expect("compiles");
    group.bench_function("compile_cached_in_process", |b| b.iter(|| client.compile_text(text).expect("cached")));
    group.finish();
}

/// What handing a kernel to the thread pool costs (the number the sequencing code's thread cost
/// model, `codegen/thread_cost.rs`, is built on): `hlojit_rt_parallel_for` over two chunks of a
/// kernel that does nothing, against calling that kernel directly. The calling thread runs
/// every chunk no helper has claimed and waits only for claimed ones, so this is the price of
/// spawning helpers (and, on an idle machine, of waking one).
fn thread_dispatch(c: &mut Criterion) {
    unsafe extern "C" fn nothing(_table: *const *mut u8, begin: i64, end: i64) {
        std::hint::black_box((begin, end));
    }
    let table = [std::ptr::null_mut::<u8>()];
    let mut group = c.benchmark_group("thread_dispatch");
    group.bench_function("direct_call", |b| {
        b.iter(|| unsafe { (std::hint::black_box(nothing as hlojit_runtime::symbols::KernelTask))(table.as_ptr(), 0, 2) })
    });
    group.bench_function("parallel_for_2_chunks", |b| {
        b.iter(|| unsafe { hlojit_runtime::symbols::hlojit_rt_parallel_for(nothing, table.as_ptr(), 2, 1) })
    });
    group.finish();
}

criterion_group!(benches, compile_latency, workloads, per_call_overhead, thread_dispatch);
criterion_main!(benches);
