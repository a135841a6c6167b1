//! Gives the compiler a build identity for its on-disk executable cache: a hash of the sources
//! that decide what code it generates (compiler, runtime, FFI). The crate version alone would
//! let a rebuilt compiler load objects an older one generated.

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let mut roots = vec![manifest.join("src")];
    for sibling in ["runtime/src", "ffi/src"] {
        let dir = manifest.join("..").join(sibling);
        if dir.is_dir() {
            roots.push(dir);
        }
    }
    let mut files = Vec::new();
    for root in &roots {
        println!("cargo:rerun-if-changed={}", root.display());
        collect(root, &mut files);
    }
    files.sort();
    // FNV-1a over each file's path (relative to its root) and contents.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for (rel, path) in &files {
        feed(rel.as_bytes());
        feed(&std::fs::read(path).unwrap_or_default());
    }
    println!("cargo:rustc-env=HLOJIT_BUILD_ID={h:016x}");
}

fn collect(dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs" || e == "h") {
            let rel = path.to_string_lossy().into_owned();
            let rel = rel.rsplit_once("/src/").map(|(_, r)| r.to_string()).unwrap_or(rel);
            out.push((rel, path));
        }
    }
}
