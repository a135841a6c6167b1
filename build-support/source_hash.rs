// Shared by the build scripts of `hlojit-compiler` and `hlojit-runtime` (through `include!`):
// what identifies a build is a hash of the sources that decide it, so it changes with any edit
// and needs no number bumped by hand. The compiler's build (the disk cache's and serialized
// executables' key) hashes its own sources with the runtime's and the FFI's; the runtime's ABI
// identity (the symbol AOT objects reference) hashes the runtime's and the FFI's.

/// FNV-1a over each `.rs` and `.h` file under `roots` (path relative to its `src/`, then
/// contents), as 16 hexadecimal digits; tells cargo to run the build script again when a file
/// under them changes. A root that is not a directory is skipped.
fn source_hash(roots: &[std::path::PathBuf]) -> String {
    let mut files = Vec::new();
    for root in roots.iter().filter(|r| r.is_dir()) {
        println!("cargo:rerun-if-changed={}", root.display());
        collect_sources(root, &mut files);
    }
    files.sort();
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
    format!("{h:016x}")
}

fn collect_sources(dir: &std::path::Path, out: &mut Vec<(String, std::path::PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs" || e == "h") {
            let rel = path.to_string_lossy().into_owned();
            let rel = rel.rsplit_once("/src/").map(|(_, r)| r.to_string()).unwrap_or(rel);
            out.push((rel, path));
        }
    }
}
