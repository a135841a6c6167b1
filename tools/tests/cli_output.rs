//! What the command line prints: `--json` for conformance and bench, bench's header, plain
//! progress lines when standard error is not a terminal, result summaries (complex values,
//! all-NaN results), and the way out named for an HloModuleProto given as a module.

use std::path::Path;
use std::process::{Command, Output};

fn hlojit(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hlojit"));
    for a in args {
        cmd.arg(a);
    }
    cmd.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn corpus() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance")
}

#[test]
fn conformance_json_is_the_report_and_progress_goes_to_stderr() {
    let out = hlojit(&[&"conformance", &corpus(), &"--filter", &"while", &"--module", &"module", &"--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&out.stdout)));
    let cases = report["cases"].as_array().unwrap();
    assert!(!cases.is_empty() && cases.iter().all(|c| c["case"].as_str().unwrap().contains("while")));
    assert_eq!(report["passed"].as_u64().unwrap() as usize, cases.len());
    assert!(text(&out.stderr).is_empty(), "--json keeps standard error for errors: {}", text(&out.stderr));

    let out = hlojit(&[&"conformance", &corpus(), &"--filter", &"while", &"--module", &"module"]);
    let stderr = text(&out.stderr);
    assert!(stderr.lines().last().is_some_and(|l| l.starts_with("conformance: ") && l.ends_with(" done")), "plain progress lines: {stderr}");
    assert!(text(&out.stdout).ends_with(" passed, 0 failed\n"), "{}", text(&out.stdout));
}

#[test]
fn bench_has_a_header_with_units_and_json() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("neg");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("module.hlo"), "HloModule neg\nENTRY e { x = f32[1024] parameter(0)  ROOT n = f32[1024] negate(x) }\n").unwrap();
    std::fs::write(work.join("perf.json"), r#"{"name": "neg", "inputs": [{}], "bytes": 8192}"#).unwrap();
    let out = hlojit(&[&"bench", &work, &"--runs", &"2"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut lines = stdout.lines();
    let header = lines.next().unwrap();
    assert!(header.starts_with('#') && header.contains("compile_ms") && header.contains("GB/s"), "{stdout}");
    let fields: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(fields[0], "neg");
    assert!(fields[1].parse::<f64>().is_ok() && fields[2].parse::<f64>().is_ok() && fields[3].ends_with("GB/s"), "{stdout}");

    let out = hlojit(&[&"bench", &work, &"--runs", &"2", &"--json"]);
    let records: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&out.stdout)));
    assert_eq!(records[0]["name"], "neg");
    assert!(records[0]["run_ms_median"].as_f64().unwrap() > 0.0);
}

#[test]
fn summaries_show_imaginary_parts_and_all_nan_results() {
    let tmp = tempfile::tempdir().unwrap();
    let m = tmp.path().join("m.hlo");
    std::fs::write(
        &m,
        "HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n  zero = f32[2] constant({0, 0})\n  nan = f32[2] divide(zero, zero)\n  \
         c = c64[2] constant({(1, -2), (0.5, 4)})\n  ROOT t = (f32[2], c64[2]) tuple(nan, c)\n}\n",
    )
    .unwrap();
    let out = hlojit(&[&"run", &m, &"--random-inputs", &"0"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("out0: f32[2] [NaN, NaN] no finite values, 2 NaN"), "{stdout}");
    assert!(stdout.contains("[1.000000-2.000000j, 0.500000+4.000000j]") && stdout.contains("imaginary: min -2.000000 max 4.000000"), "{stdout}");
}

#[test]
fn a_binary_proto_gets_the_way_to_text() {
    let tmp = tempfile::tempdir().unwrap();
    let pb = tmp.path().join("module.pb");
    // The start of a serialized HloModuleProto: field 1 (name), field 3 (computations).
    std::fs::write(&pb, b"\x0a\x04gelu\x1a\x00\x01\x02").unwrap();
    let out = hlojit(&[&"run", &pb, &"--random-inputs", &"0"]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("from_serialized_hlo_module_proto") && stderr.contains("as_text(dialect=\"hlo\")"), "{stderr}");
}
