//! The system LAPACK is opened the first time a LAPACK target runs, not when the process starts
//! (OpenBLAS's thread pool would spin on a core for the first ~100 ms of every process), and
//! without it the pure-Rust fallbacks run while the other targets say what is missing.

use hlojit_tools::conformance::case::Case;
use hlojit_tools::conformance::{compare, run_case, ModuleFile};
use hlojit_runtime::{npy, ElementType};
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn linalg_case(name: &str) -> PathBuf {
    repo().join("tests/linalg/cases").join(name)
}

/// The mapped shared libraries of this process whose names say LAPACK or BLAS.
#[cfg(target_os = "linux")]
fn mapped_lapack() -> Vec<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    let mut libs: Vec<String> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|path| {
            let file = Path::new(path).file_name().map(|f| f.to_string_lossy().to_lowercase()).unwrap_or_default();
            file.contains(".so") && (file.contains("lapack") || file.contains("blas"))
        })
        .map(str::to_string)
        .collect();
    libs.dedup();
    libs
}

#[cfg(target_os = "linux")]
#[test]
fn lapack_is_mapped_only_once_a_lapack_target_runs() {
    std::env::remove_var(hlojit_runtime::linalg::lapack::library::ENV);
    assert_eq!(mapped_lapack(), Vec::<String>::new(), "LAPACK is mapped before anything ran");
    let plain = run_case(&repo().join("tests/conformance/cases/dot_batch_matmul"), ModuleFile::Module);
    assert_eq!(plain.failure, None, "a module without linalg");
    assert_eq!(mapped_lapack(), Vec::<String>::new(), "a module without linalg loaded LAPACK");
    assert!(hlojit_runtime::linalg::lapack::library::loaded_names().is_empty());
    // jnp.linalg.svd (lapack_sgesdd_ffi), compared with XLA:CPU's outputs.
    let svd = run_case(&linalg_case("svd_full_f32"), ModuleFile::Module);
    assert_eq!(svd.failure, None, "svd_full_f32");
    assert!(!mapped_lapack().is_empty(), "the SVD ran, yet no LAPACK library is mapped");
    assert!(!hlojit_runtime::linalg::lapack::library::loaded_names().is_empty());
}

/// `hlojit run` of a linalg case with `HLOJIT_LAPACK` naming a library that does not exist.
fn run_without_lapack(case: &Path, out: &Path) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hlojit"));
    cmd.env("HLOJIT_LAPACK", "/nonexistent/libhlojit-test-lapack.so")
        .arg("run")
        .arg(case.join("module.hlo"))
        .arg("--output-dir")
        .arg(out);
    for i in 0.. {
        let input = case.join(format!("in{i}.npy"));
        if !input.exists() {
            break;
        }
        cmd.arg("--input").arg(input);
    }
    cmd.output().expect("running hlojit")
}

#[test]
fn without_lapack_the_fallbacks_run_and_other_targets_name_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    // Cholesky (lapack_spotrf_ffi) has a pure-Rust fallback: XLA:CPU's result.
    let case_dir = linalg_case("cholesky_f32");
    let out = run_without_lapack(&case_dir, &dir.path().join("cholesky"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let case = Case::load(&case_dir).unwrap();
    let want = case.read_array(&case.outputs[0]).unwrap();
    let got = npy::read(&dir.path().join("cholesky/out0.npy"), Some(ElementType::F32)).unwrap();
    assert_eq!(compare::compare(&got, &want, false, case.rtol, case.atol), None);
    // The SVD (lapack_sgesdd_ffi) has none: an error naming the routine and the library.
    let out = run_without_lapack(&linalg_case("svd_full_f32"), &dir.path().join("svd"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("sgesdd_") && stderr.contains("/nonexistent/libhlojit-test-lapack.so"), "{stderr}");
}
