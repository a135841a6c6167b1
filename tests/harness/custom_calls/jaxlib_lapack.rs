//! Binary compatibility with real XLA FFI handlers: jaxlib's own LAPACK handlers (the
//! `lapack_*_ffi` targets JAX programs call on CPU) run the corpus's `jaxffi_*` cases through
//! `plugins/jaxlib_lapack_bridge.c`, which takes them from jaxlib unchanged (see its comment for
//! why a bridge is needed at all). Needs python3 with jax and scipy: `cargo xtask setup`
//! installs them; without them this test fails rather than skips.

use super::{build_dir, jax_include_dir, repo, run_build};
use hlojit_tools::conformance::{self, ModuleFile};
use hlojit::CustomCallRegistry;
use std::process::Command;

fn python_config(args: &[&str]) -> Vec<String> {
    let out = Command::new("python3-config")
        .args(args)
        .output()
        .expect("python3-config (python3 development files) is needed");
    assert!(out.status.success(), "python3-config {args:?} failed");
    String::from_utf8_lossy(&out.stdout).split_whitespace().map(str::to_string).collect()
}

#[test]
fn jaxlib_lapack_handlers_run_the_jaxffi_cases() {
    jax_include_dir(); // fails loudly if jax is missing
    let lib = build_dir().join("libjaxlib_lapack_bridge.so");
    run_build(
        Command::new("cc")
            .args(["-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-I"])
            .arg(repo().join("ffi/include"))
            .args(python_config(&["--includes"]))
            .arg(repo().join("tests/harness/custom_calls/plugins/jaxlib_lapack_bridge.c"))
            .arg("-o")
            .arg(&lib)
            .args(python_config(&["--ldflags", "--embed"])),
    );
    // The conformance runner compiles with default options: load into the process-wide registry.
    CustomCallRegistry::global().load_plugin(&lib).unwrap_or_else(|e| panic!("{e}"));
    // hlojit has built-in versions of these targets; a plugin must take precedence over them,
    // or this test would not be running jaxlib's code at all.
    for target in [
        "lapack_sgetrf_ffi",
        "lapack_spotrf_ffi",
        "lapack_sgeqrf_ffi",
        "lapack_sorgqr_ffi",
        "lapack_ssyevd_ffi",
        "lapack_strsm_ffi",
    ] {
        let resolved = hlojit_runtime::custom_call::resolve_target(&[CustomCallRegistry::global()], target, &hlojit::ProcessSymbols::None);
        assert!(resolved.is_some_and(|r| r.plugin.is_some()), "{target} must come from the bridge plugin");
    }
    let dirs: Vec<_> = conformance::case_dirs(&repo().join("tests/conformance"))
        .expect("the corpus is in tests/conformance")
        .into_iter()
        .filter(|d| d.file_name().is_some_and(|n| n.to_string_lossy().starts_with("jaxffi_")))
        .collect();
    assert_eq!(dirs.len(), 5, "the corpus has five jaxffi cases");
    let outcomes = conformance::run_all(&dirs, &[ModuleFile::Module, ModuleFile::Optimized]);
    let mut passed = Vec::new();
    for o in &outcomes {
        match &o.failure {
            None => passed.push(o.case.clone()),
            // Other op families (dot, scatter, ...) land separately; the custom calls must not
            // be what fails.
            Some(reason) if reason.starts_with("unsupported:") && !reason.contains("custom") => {
                println!("not yet: {} [{}] {reason}", o.case, o.file.file_name())
            }
            Some(reason) => panic!("{} [{}] failed: {reason}", o.case, o.file.file_name()),
        }
    }
    for case in ["jaxffi_eigh", "jaxffi_qr", "jaxffi_triangular_solve"] {
        assert_eq!(passed.iter().filter(|c| *c == case).count(), 2, "{case} must pass from both files");
    }
}
