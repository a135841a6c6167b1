//! The commands that show what hlojit did: `--dump DIR` on run / compile / bench,
//! `hlojit graph` and `hlojit profile`.

use std::path::Path;
use std::process::{Command, Output};

/// exp(x) * y reduced over rows, then a dot: a loop fusion, a reduction and a GEMM.
const MODULE: &str = "HloModule inspect_me
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[64,256] parameter(0)
  y = f32[64,256] parameter(1)
  w = f32[256,32] parameter(2)
  ex = f32[64,256] exponential(x)
  m = f32[64,256] multiply(ex, y)
  zero = f32[] constant(0)
  rows = f32[64] reduce(m, zero), dimensions={1}, to_apply=add
  d = f32[64,32] dot(m, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[64], f32[64,32]) tuple(rows, d)
}
";

fn hlojit(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hlojit"));
    for a in args {
        cmd.arg(a);
    }
    cmd.env_remove("HLOJIT_DUMP_DIR").env_remove("HLOJIT_DUMP_PASSES");
    cmd.output().unwrap()
}

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "failed: {}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn module(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("inspect_me.hlo");
    std::fs::write(&p, MODULE).unwrap();
    p
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}; the dump has {:?}", files(dir)))
}

#[test]
fn run_dump_has_passes_kernels_buffers_ir_and_assembly() {
    let tmp = tempfile::tempdir().unwrap();
    let m = module(tmp.path());
    let dump = tmp.path().join("dump");
    ok(&hlojit(&[&"run", &m, &"--random-inputs", &"1", &"--dump", &dump]));
    let names = files(&dump);
    assert!(names.contains(&"inspect_me.00.input.hlo".to_string()), "{names:?}");
    let fusion = names.iter().find(|n| n.ends_with(".fusion.hlo")).unwrap_or_else(|| panic!("no fusion pass dump in {names:?}"));
    assert!(read(&dump, fusion).contains("fusion("), "the fusion pass's dump has no fusion");

    let kernels = read(&dump, "inspect_me.kernels.txt");
    // The exponential and the multiply are fused into one kernel; the dot is a GEMM with
    // 2 * 64 * 32 * 256 flops.
    assert!(kernels.lines().any(|l| l.contains("fuses:") && l.contains("exponential") && l.contains("multiply")), "{kernels}");
    assert!(kernels.contains(&format!("{} flops", 2 * 64 * 32 * 256)), "{kernels}");
    assert!(kernels.contains("loops:") && kernels.contains("threads:"), "{kernels}");

    let buffers = read(&dump, "inspect_me.buffers.txt");
    assert!(buffers.contains("peak temporary memory"), "{buffers}");
    assert!(buffers.contains("param 2") && buffers.contains("result 1"), "{buffers}");

    let before = read(&dump, "inspect_me.ir-unoptimized.ll");
    let after = read(&dump, "inspect_me.ir-optimized.ll");
    assert!(before.contains("define") && after.contains("define"));
    assert_ne!(before, after, "optimization changed nothing?");
    assert!(read(&dump, "inspect_me.s").contains("hlojit_entry"));
}

#[test]
fn compile_and_bench_dump_too() {
    let tmp = tempfile::tempdir().unwrap();
    let m = module(tmp.path());
    let dump = tmp.path().join("dump");
    ok(&hlojit(&[&"compile", &m, &"-o", &tmp.path().join("m.o"), &"--dump", &dump]));
    assert!(read(&dump, "inspect_me.kernels.txt").contains("kernels of inspect_me"));
    assert!(read(&dump, "inspect_me.s").contains("inspect_me"), "the AOT function is named after the file");

    let work = tmp.path().join("perf/inspect_me");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("module.hlo"), MODULE).unwrap();
    std::fs::write(work.join("perf.json"), r#"{"name": "inspect_me", "inputs": [{}, {}, {}], "flops": 1048576}"#).unwrap();
    let bench_dump = tmp.path().join("bench-dump");
    let out = ok(&hlojit(&[&"bench", &work, &"--runs", &"2", &"--dump", &bench_dump]));
    assert!(out.contains("inspect_me"), "{out}");
    assert!(files(&bench_dump).iter().any(|n| n.ends_with(".ir-optimized.ll")), "{:?}", files(&bench_dump));
}

#[test]
fn graph_draws_kernels_edges_and_loop_bodies() {
    let tmp = tempfile::tempdir().unwrap();
    let loop_module = tmp.path().join("loop.hlo");
    std::fs::write(
        &loop_module,
        "HloModule loop
cond {
  s = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[8] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  e = f32[8] exponential(v)
  ROOT t = (s32[], f32[8]) tuple(j, e)
}
ENTRY e {
  x = f32[8] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[8]) tuple(zero, x)
  w = (s32[], f32[8]) while(init), condition=cond, body=body
  ROOT r = f32[8] get-tuple-element(w), index=1
}
",
    )
    .unwrap();
    let dot = tmp.path().join("g.dot");
    ok(&hlojit(&[&"graph", &loop_module, &"-o", &dot]));
    let source = std::fs::read_to_string(&dot).unwrap();
    assert!(source.contains("subgraph cluster_") && source.contains("body of w"), "{source}");
    assert!(source.contains("label=\"f32[8]\""), "edges carry shapes: {source}");

    let html = tmp.path().join("g.html");
    ok(&hlojit(&[&"graph", &module(tmp.path()), &"-o", &html]));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("<svg") && page.contains("f32[64,256]"), "{page}");
    assert!(!page.contains("src=\"http"), "the page must be self-contained");

    let svg = tmp.path().join("g.svg");
    let out = hlojit(&[&"graph", &loop_module, &"-o", &svg]);
    if Command::new("dot").arg("-V").output().is_ok() {
        ok(&out);
        assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    } else {
        assert!(String::from_utf8_lossy(&out.stderr).contains("needs Graphviz"), "{}", String::from_utf8_lossy(&out.stderr));
    }

    let bad = hlojit(&[&"graph", &loop_module, &"-o", &tmp.path().join("g.png")]);
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains(".svg, .html or .dot"));
}

#[test]
fn profile_lists_every_kernel_with_its_share() {
    let tmp = tempfile::tempdir().unwrap();
    let out = ok(&hlojit(&[&"profile", &module(tmp.path()), &"--runs", &"3"]));
    let header = out.lines().next().unwrap_or_default();
    assert!(header.contains("kernel") && header.contains("share") && header.contains("of peak"), "{out}");
    // A dot kernel and a fusion with the exponential, each timed.
    let dot = out.lines().find(|l| l.contains(" dot ")).unwrap_or_else(|| panic!("no dot kernel:\n{out}"));
    assert!(dot.contains("GFLOP/s"), "a dot is judged by flops: {dot}");
    assert!(out.lines().any(|l| l.contains("exponential") && l.contains('%')), "{out}");
    let shares: f64 = out
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().find(|w| w.ends_with('%') && w.len() > 1).and_then(|w| w.trim_end_matches('%').parse::<f64>().ok()))
        .sum();
    assert!(shares > 50.0, "the shares should account for the run: {shares}\n{out}");
    assert!(out.contains("machine peaks measured now"), "{out}");
}
