//! The integration harness: one test binary (it links LLVM) for the conformance corpus under
//! `tests/conformance`, the builder's end-to-end tests (`harness/builder.rs`) and the library's
//! other end-to-end tests. The file tests under `tests/filetests` are `tests/filetests.rs`.

#[path = "harness/builder.rs"]
mod builder;

#[path = "harness/aliasing.rs"]
mod aliasing;
#[path = "harness/bad_inputs.rs"]
mod bad_inputs;
#[path = "harness/concurrency.rs"]
mod concurrency;
#[path = "harness/collectives.rs"]
mod collectives;
#[path = "harness/transfers.rs"]
mod transfers;
#[path = "harness/transposes.rs"]
mod transposes;
#[path = "harness/unaligned.rs"]
mod unaligned;
#[path = "harness/custom_calls/mod.rs"]
mod custom_calls;

use hlojit_tools::conformance::{self, ModuleFile};
use std::path::PathBuf;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Corpus groups that other issues own and that are reported but not required yet (none now).
const PENDING_GROUPS: &[&str] = &[];

/// Cases that cannot pass, with the error they must give instead: the printer elided the
/// constant's values (`constant({...})`), so the text does not say what to compute.
const UNCOMPUTABLE: &[(&str, &str, &str)] =
    &[("layout_constant_iota", "optimized.hlo", "its values were elided (`{...}`) when the module was printed")];

#[test]
fn conformance_corpus() {
    let dirs = conformance::case_dirs(&repo().join("tests/conformance")).expect("the corpus is in tests/conformance");
    assert!(dirs.len() > 300, "the corpus copy is incomplete: {} cases", dirs.len());
    // StableHLO text, portable artifact and jax.export run for every case that has them (the
    // JAX-lowered ones).
    let jax_forms = [ModuleFile::Stablehlo, ModuleFile::Bytecode, ModuleFile::Export];
    let outcomes = conformance::run_all(&dirs, &[ModuleFile::Module, ModuleFile::Optimized, ModuleFile::Stablehlo, ModuleFile::Bytecode, ModuleFile::Export]);
    for form in jax_forms {
        let with = dirs.iter().filter(|d| d.join(form.file_name()).exists()).count();
        assert!(with > 250, "the corpus copy lacks {} files: {with}", form.file_name());
        assert_eq!(outcomes.iter().filter(|o| o.file == form).count(), with);
    }
    let mut required = Vec::new();
    let mut pending = 0;
    for o in &outcomes {
        let expected_error =
            UNCOMPUTABLE.iter().find(|(case, file, _)| *case == o.case && *file == o.file.file_name()).map(|(_, _, e)| *e);
        match (&o.failure, expected_error) {
            (Some(reason), Some(e)) if reason.contains(e) && o.not_runnable => {}
            (reason, Some(e)) => required.push(format!("{} [{}] should fail with '{e}', got {reason:?}", o.case, o.file.file_name())),
            (Some(reason), None) => {
                let line = format!("{} [{}] {reason}", o.case, o.file.file_name());
                if PENDING_GROUPS.contains(&o.group.as_str()) {
                    pending += 1;
                    println!("not yet: {line}");
                } else {
                    required.push(line);
                }
            }
            (None, None) => {}
        }
    }
    let passed = outcomes.iter().filter(|o| o.failure.is_none()).count();
    println!("{passed} passed, {} failed ({pending} in pending groups)", outcomes.len() - passed);
    assert!(required.is_empty(), "{} cases failed:\n{}", required.len(), required.join("\n"));
}

/// Runs the cases under `root` from StableHLO text, portable artifact and jax.export file
/// (every case has the last; a multi-platform one has no other), all required to pass.
fn run_jax_export_cases(root: &std::path::Path) {
    let dirs = conformance::case_dirs(root).expect("jax.export cases");
    assert!(dirs.len() >= 2, "{} cases under {}", dirs.len(), root.display());
    let forms = [ModuleFile::Stablehlo, ModuleFile::Bytecode, ModuleFile::Export];
    let outcomes = conformance::run_all(&dirs, &forms);
    let files = dirs.iter().flat_map(|d| forms.iter().filter(move |f| d.join(f.file_name()).exists())).count();
    assert_eq!(outcomes.len(), files);
    assert_eq!(outcomes.iter().filter(|o| o.file == ModuleFile::Export).count(), dirs.len(), "every case has a module.jax_export");
    let failures: Vec<String> = outcomes.iter().filter_map(|o| o.failure.as_ref().map(|f| format!("{} [{}]: {f}", o.case, o.file.file_name()))).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Modules written by `jax.export` (tests/stablehlo/make_cases.py, not in the corpus:
/// locations everywhere, CHLO already decomposed by JAX, one exported for cuda and cpu) run
/// from each form and give jax's results on XLA:CPU.
#[test]
fn stablehlo_written_by_jax_export() {
    run_jax_export_cases(&repo().join("tests/stablehlo"));
}

/// The same cases written at test time by the jax in the venv (so a newer jax's output is what
/// is tested), compared with that jax's own results. Skipped only without the venv (`cargo
/// xtask setup` creates it; CI has it).
#[test]
fn stablehlo_written_by_jax_export_now() {
    let python = std::env::var_os("HLOJIT_PYTHON").map(PathBuf::from).unwrap_or_else(|| repo().join("target/venv/bin/python3"));
    if !python.exists() {
        println!("skipped: no python at {} (cargo xtask setup creates target/venv)", python.display());
        return;
    }
    let out = std::env::temp_dir().join(format!("hlojit-jax-export-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let status = std::process::Command::new(&python)
        .arg(repo().join("tests/stablehlo/make_cases.py"))
        .arg(out.join("cases"))
        .status()
        .expect("running make_cases.py");
    assert!(status.success(), "tests/stablehlo/make_cases.py failed with {status}");
    run_jax_export_cases(&out);
    let _ = std::fs::remove_dir_all(&out);
}

/// Every jnp.linalg / jax.scipy.linalg / lax.linalg function JAX lowers to a LAPACK custom call
/// on CPU, real and complex (tests/linalg/make_cases.py), runs from its HLO and gives XLA:CPU's
/// results: the LAPACK targets follow jaxlib's conventions, and LAPACK's choices (signs of
/// eigen- and singular vectors, pivots) come out the same.
#[test]
fn linalg_written_by_jax() {
    let dirs = conformance::case_dirs(&repo().join("tests/linalg")).expect("tests/linalg/cases");
    assert!(dirs.len() >= 198, "tests/linalg/cases is incomplete: {} cases", dirs.len());
    let outcomes = conformance::run_all(&dirs, &[ModuleFile::Module]);
    assert_eq!(outcomes.len(), dirs.len());
    let failures: Vec<String> = outcomes
        .iter()
        .filter_map(|o| o.failure.as_ref().map(|f| format!("{}: {f}", o.case)))
        .collect();
    assert!(failures.is_empty(), "{} cases failed:\n{}", failures.len(), failures.join("\n"));
}

/// The corpus's modules and the LAPACK cases as AOT objects, each linked with a C driver and
/// `libhlojit_runtime.a` alone into a program of its own (`conformance/aot.rs`), give XLA:CPU's
/// results as the JIT does. Programs for several devices have no AOT form yet: they must be
/// refused as such.
#[test]
fn conformance_as_aot_programs() {
    let mut dirs = conformance::case_dirs(&repo().join("tests/conformance")).expect("the corpus is in tests/conformance");
    dirs.extend(conformance::case_dirs(&repo().join("tests/linalg")).expect("tests/linalg/cases"));
    let outcomes = conformance::run_all_on(&conformance::Runner { aot: true, ..Default::default() }, &dirs, &[ModuleFile::Module], &|_| {});
    assert_eq!(outcomes.len(), dirs.len());
    let mut failures = Vec::new();
    for o in &outcomes {
        match &o.failure {
            Some(reason) if o.not_runnable && reason.contains("AOT compilation of a program for") => {}
            Some(reason) => failures.push(format!("{}: {reason}", o.case)),
            None => {}
        }
    }
    let passed = outcomes.iter().filter(|o| o.failure.is_none()).count();
    println!("{passed} passed as AOT programs, {} multi-device modules refused", outcomes.len() - passed - failures.len());
    assert!(failures.is_empty(), "{} cases failed:\n{}", failures.len(), failures.join("\n"));
}

/// The corpus compiled for lesser CPUs than this host runs the code paths of machines without
/// its instructions: SSE2 only (`x86-64`) and AVX2 (`haswell`, where this host has AVX2).
#[test]
fn conformance_compiled_for_lesser_cpus() {
    let dirs = conformance::case_dirs(&repo().join("tests/conformance")).expect("the corpus is in tests/conformance");
    let mut cpus = vec!["x86-64"];
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        cpus.push("haswell");
    }
    for cpu in cpus {
        let runner = conformance::Runner {
            target: hlojit::TargetOptions { cpu: Some(cpu.to_string()), ..Default::default() },
            ..Default::default()
        };
        let outcomes = conformance::run_all_on(&runner, &dirs, &[ModuleFile::Module], &|_| {});
        assert_eq!(outcomes.len(), dirs.len());
        let failures: Vec<String> = outcomes.iter().filter_map(|o| o.failure.as_ref().map(|f| format!("{}: {f}", o.case))).collect();
        assert!(failures.is_empty(), "{} cases failed compiled for {cpu}:\n{}", failures.len(), failures.join("\n"));
    }
}
