//! The integration harness: one test binary (it links LLVM) for the file tests under
//! `tests/filetests`, the conformance corpus under `tests/conformance` and the builder's
//! end-to-end tests (`harness/builder.rs`).

#[path = "harness/builder.rs"]
mod builder;

#[path = "harness/aliasing.rs"]
mod aliasing;
#[path = "harness/custom_calls/mod.rs"]
mod custom_calls;

use hlojit::conformance::{self, ModuleFile};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn hlo_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            hlo_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "hlo") {
            out.push(p);
        }
    }
}

#[test]
fn filetests() {
    let mut files = Vec::new();
    hlo_files(&repo().join("tests/filetests"), &mut files);
    files.sort();
    let failures: Vec<String> = files
        .iter()
        .filter_map(|f| hlojit::filetest::run_file(f).err().map(|e| format!("{}: {e}", f.display())))
        .collect();
    assert!(failures.is_empty(), "{} of {} file tests failed:\n{}", failures.len(), files.len(), failures.join("\n"));
}

/// Corpus groups whose every case must pass from both `module.hlo` and `optimized.hlo`.
/// Groups not listed are run and reported but do not fail the test yet; each issue that
/// delivers a group adds it here.
const DELIVERED_GROUPS: &[&str] = &[
    "bitcast", "broadcast", "clamp", "compare", "concat", "convert", "elementwise", "fft", "iota", "pad", "reduce_precision",
    "reshape", "rev", "select", "slice", "transpose",
    "reduce", "reduce_window",
    "dot", "conv",
    "dus", "dynamic_slice", "gather", "scatter", "sort", "topk",
];

#[test]
fn conformance_corpus() {
    let dirs = conformance::case_dirs(&repo().join("tests/conformance")).expect("the corpus is in tests/conformance");
    assert!(dirs.len() > 300, "the corpus copy is incomplete: {} cases", dirs.len());
    let outcomes = conformance::run_all(&dirs, &[ModuleFile::Module, ModuleFile::Optimized]);
    let mut required = Vec::new();
    let mut pending = 0;
    for o in &outcomes {
        if let Some(reason) = &o.failure {
            let line = format!("{} [{}] {reason}", o.case, o.file.file_name());
            if DELIVERED_GROUPS.contains(&o.group.as_str()) {
                required.push(line);
            } else {
                pending += 1;
                println!("not yet: {line}");
            }
        }
    }
    let passed = outcomes.iter().filter(|o| o.failure.is_none()).count();
    println!("{passed} passed, {} failed ({pending} in groups not yet delivered)", outcomes.len() - passed);
    assert!(required.is_empty(), "{} delivered cases failed:\n{}", required.len(), required.join("\n"));
}
