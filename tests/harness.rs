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
    // StableHLO text runs for every case that has it (the JAX-lowered ones).
    let outcomes = conformance::run_all(&dirs, &[ModuleFile::Module, ModuleFile::Optimized, ModuleFile::Stablehlo]);
    let with_stablehlo = dirs.iter().filter(|d| d.join(ModuleFile::Stablehlo.file_name()).exists()).count();
    assert!(with_stablehlo > 250, "the corpus copy lacks module.stablehlo.mlir files: {with_stablehlo}");
    assert_eq!(outcomes.iter().filter(|o| o.file == ModuleFile::Stablehlo).count(), with_stablehlo);
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

/// A module written by today's `jax.export` (tests/stablehlo/make_cases.py, not in the corpus:
/// locations everywhere, CHLO already decomposed by JAX) runs from its StableHLO text and gives
/// jax's results on XLA:CPU.
#[test]
fn stablehlo_written_by_jax_export() {
    let dirs = conformance::case_dirs(&repo().join("tests/stablehlo")).expect("tests/stablehlo/cases");
    assert!(!dirs.is_empty());
    let outcomes = conformance::run_all(&dirs, &[ModuleFile::Stablehlo]);
    assert_eq!(outcomes.len(), dirs.len());
    let failures: Vec<String> = outcomes.iter().filter_map(|o| o.failure.as_ref().map(|f| format!("{}: {f}", o.case))).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
