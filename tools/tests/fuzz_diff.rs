//! A bounded, deterministic differential fuzzing run: 40 generated programs (fixed seeds) on
//! hlojit and on XLA:CPU through jaxlib (the Python that `cargo xtask test` puts first on
//! PATH, or the workspace's target/venv), every result compared. `hlojit fuzz-diff` runs
//! the same for as many programs as wanted.

use hlojit_tools::fuzz_diff::{run, Options};

#[test]
fn forty_programs_agree_with_xla() {
    let mut opts = Options::new(40, 7_000_000);
    opts.verbose = true;
    let report = run(&opts).expect("the XLA side needs python3 with jax (cargo xtask setup installs it into target/venv)");
    assert_eq!(report.run, 40);
    assert!(report.mismatches.is_empty(), "mismatches: {:?}", report.mismatches);
    assert!(report.hlojit_errors.is_empty(), "hlojit errors: {:?}", report.hlojit_errors);
    assert!(report.xla_errors.is_empty(), "programs XLA rejects (generator bugs): {:?}", report.xla_errors);
}
