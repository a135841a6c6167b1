//! The file tests under `tests/filetests` (`.hlo` and StableHLO `.mlir` files, format:
//! `hlojit_tools::filetest`), each its own
//! test case named by its path: `cargo test --release --test filetests -- fusion/` runs those
//! under `fusion/`.

use libtest_mimic::{Arguments, Failed, Trial};
use std::path::{Path, PathBuf};

fn test_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            test_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "hlo" || x == "mlir") {
            out.push(p);
        }
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/filetests");
    let mut files = Vec::new();
    test_files(&root, &mut files);
    files.sort();
    assert!(!files.is_empty(), "no file tests under {}", root.display());
    let trials = files
        .into_iter()
        .map(|f| {
            let name = f.strip_prefix(&root).unwrap_or(&f).display().to_string();
            Trial::test(name, move || hlojit_tools::filetest::run_file(&f).map_err(Failed::from))
        })
        .collect();
    libtest_mimic::run(&Arguments::from_args(), trials).exit();
}
