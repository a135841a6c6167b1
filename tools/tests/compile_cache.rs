//! The on-disk compilation cache across processes (`HLOJIT_CACHE_DIR`): the first `hlojit
//! run` compiles and stores, later ones load the stored machine code and give the same
//! results; a damaged entry is reported, compiled anew and replaced; processes started
//! together on an empty cache all succeed and leave one whole entry.

use hlojit_runtime::{npy, ArrayLiteral, ElementType};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

const MODULE: &str = "HloModule cached
ENTRY e {
  a = f32[2,2] parameter(0)
  b = f32[2,2] parameter(1)
  d = f32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = f32[2,2] add(d, a)
}
";

/// numpy: `a @ b + a` for a = [[1, 2], [3, 4]], b = [[5, 6], [7, 8]].
const EXPECTED: [f32; 4] = [20.0, 24.0, 46.0, 54.0];

fn start(dir: &Path, cache: &Path, out: &str) -> Child {
    let module = dir.join("m.hlo");
    if !module.exists() {
        std::fs::write(&module, MODULE).unwrap();
        let a = ArrayLiteral::from_slice(&[2, 2], &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
        let b = ArrayLiteral::from_slice(&[2, 2], &[5.0f32, 6.0, 7.0, 8.0]).unwrap();
        std::fs::write(dir.join("a.npy"), npy::to_bytes(&a)).unwrap();
        std::fs::write(dir.join("b.npy"), npy::to_bytes(&b)).unwrap();
    }
    Command::new(env!("CARGO_BIN_EXE_hlojit"))
        .env("HLOJIT_CACHE_DIR", cache)
        .arg("run")
        .arg(&module)
        .arg("--input")
        .arg(dir.join("a.npy"))
        .arg("--input")
        .arg(dir.join("b.npy"))
        .arg("--output-dir")
        .arg(dir.join(out))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for a run; checks its result; returns (stdout, stderr).
fn finish(dir: &Path, child: Child, out: &str) -> (String, String) {
    let Output { status, stdout, stderr } = child.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&stdout).into_owned(), String::from_utf8_lossy(&stderr).into_owned());
    assert!(status.success(), "{stdout}\n{stderr}");
    let got = npy::read(&dir.join(out).join("out0.npy"), Some(ElementType::F32)).unwrap();
    assert_eq!(got, ArrayLiteral::from_slice(&[2, 2], &EXPECTED).unwrap(), "{stdout}");
    (stdout, stderr)
}

fn run(dir: &Path, cache: &Path) -> (String, String) {
    finish(dir, start(dir, cache, "out"), "out")
}

fn entries(cache: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(cache).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

#[test]
fn a_second_process_loads_the_machine_code_the_first_compiled() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let (first, _) = run(dir.path(), &cache);
    assert!(first.contains("LLVM module"), "{first}");
    let stored = entries(&cache);
    assert_eq!(stored.len(), 1);
    assert!(stored[0].ends_with(".hlojit"), "{stored:?}");
    let (second, stderr) = run(dir.path(), &cache);
    assert!(second.contains("from the compilation cache"), "{second}");
    assert!(stderr.is_empty(), "{stderr}");
    // Another module is another entry.
    std::fs::write(dir.path().join("m.hlo"), MODULE.replace("cached", "renamed")).unwrap();
    let (third, _) = run(dir.path(), &cache);
    assert!(third.contains("LLVM module"), "{third}");
    assert_eq!(entries(&cache).len(), 2);
}

#[test]
fn a_damaged_entry_is_reported_and_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    run(dir.path(), &cache);
    let entry = cache.join(&entries(&cache)[0]);
    let good = std::fs::read(&entry).unwrap();
    for damaged in [good[..good.len() / 2].to_vec(), good.iter().map(|b| b ^ 0x5a).collect::<Vec<u8>>(), Vec::new()] {
        std::fs::write(&entry, &damaged).unwrap();
        let (stdout, stderr) = run(dir.path(), &cache);
        assert!(stdout.contains("LLVM module"), "{stdout}");
        assert!(stderr.starts_with("warning: hlojit: ignoring an unusable compilation cache entry"), "{stderr}");
        // Replaced by a good entry: the next run loads it.
        let (stdout, stderr) = run(dir.path(), &cache);
        assert!(stdout.contains("from the compilation cache"), "{stdout}");
        assert!(stderr.is_empty(), "{stderr}");
    }
}

#[test]
fn processes_started_together_share_one_entry() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let children: Vec<(Child, String)> = (0..4).map(|i| (start(dir.path(), &cache, &format!("out{i}")), format!("out{i}"))).collect();
    for (child, out) in children {
        let (_, stderr) = finish(dir.path(), child, &out);
        assert!(stderr.is_empty(), "{stderr}");
    }
    // One entry, no temporary files left.
    assert_eq!(entries(&cache).len(), 1, "{:?}", entries(&cache));
    let (stdout, _) = run(dir.path(), &cache);
    assert!(stdout.contains("from the compilation cache"), "{stdout}");
}

#[test]
fn an_unwritable_cache_is_a_warning_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the directory should be.
    let cache = dir.path().join("not-a-dir");
    std::fs::write(&cache, b"").unwrap();
    let (stdout, stderr) = run(dir.path(), &cache);
    assert!(stdout.contains("LLVM module"), "{stdout}");
    assert!(stderr.starts_with("warning: hlojit: cannot write to the compilation cache"), "{stderr}");
}
