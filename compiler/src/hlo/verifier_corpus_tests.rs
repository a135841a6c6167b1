//! The verifier on the conformance corpus: every module XLA accepted (module.hlo and XLA:CPU's
//! optimized.hlo) verifies, and hand-broken copies fail naming the broken instruction.

use super::verify_module;
use crate::error::Error;
use crate::hlo::text::parse_module;
use std::path::{Path, PathBuf};

/// `<repo>/tests/conformance`, `../../shared/conformance` beside the repository, or
/// `/work/shared/conformance`.
fn conformance_dir() -> Option<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    [
        manifest.join("../tests/conformance"),
        manifest.join("../../shared/conformance"),
        PathBuf::from("/work/shared/conformance"),
    ]
    .into_iter()
    .find(|p| p.join("cases").is_dir())
}

fn case_text(case: &str, file: &str) -> Option<String> {
    let dir = conformance_dir()?;
    Some(
        std::fs::read_to_string(dir.join("cases").join(case).join(file))
            .unwrap_or_else(|e| panic!("{case}/{file}: {e}")),
    )
}

#[test]
fn every_corpus_module_verifies() {
    let Some(dir) = conformance_dir() else {
        eprintln!("conformance corpus not found; skipping");
        return;
    };
    let mut cases: Vec<PathBuf> =
        std::fs::read_dir(dir.join("cases")).expect("read cases").map(|e| e.expect("entry").path()).collect();
    cases.sort();
    let mut failures = Vec::new();
    let mut verified = 0;
    for case in &cases {
        for name in ["module.hlo", "optimized.hlo"] {
            let Ok(text) = std::fs::read_to_string(case.join(name)) else { continue };
            let label = format!("{}/{name}", case.file_name().and_then(|n| n.to_str()).unwrap_or("?"));
            match parse_module(&text) {
                Err(e) => failures.push(format!("{label}: does not parse: {e}")),
                Ok(module) => match verify_module(&module) {
                    Ok(()) => verified += 1,
                    Err(e) => failures.push(format!("{label}: {e}")),
                },
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} modules fail:\n{}",
        failures.len(),
        verified + failures.len(),
        failures.join("\n")
    );
    assert!(verified >= 2 * 300, "only {verified} modules verified");
}

/// Parses a corpus module after replacing `from` (which must occur) by `to`, and expects the
/// verifier to reject it naming `instruction` with a message containing `fragments`.
#[track_caller]
fn assert_broken(case: &str, file: &str, from: &str, to: &str, instruction: &str, fragments: &[&str]) {
    let Some(text) = case_text(case, file) else {
        eprintln!("conformance corpus not found; skipping");
        return;
    };
    assert!(text.contains(from), "{case}/{file} does not contain {from:?}");
    let module = parse_module(&text.replacen(from, to, 1)).unwrap_or_else(|e| panic!("{case}/{file} modified: {e}"));
    assert_eq!(
        verify_module(&parse_module(&text).expect("original parses")),
        Ok(()),
        "{case}/{file} unmodified must verify"
    );
    match verify_module(&module) {
        Err(Error::Verify { instruction: got, message, .. }) => {
            assert_eq!(got, instruction, "message: {message}");
            for f in fragments {
                assert!(message.contains(f), "{message:?} does not contain {f:?}");
            }
        }
        other => panic!("{case}/{file}: expected a verify error at {instruction}, got {other:?}"),
    }
}

#[test]
fn wrong_declared_shapes_are_found() {
    assert_broken(
        "dot_batch_matmul",
        "module.hlo",
        "ROOT dot_general.1 = f32[4,2,17,9]{3,2,1,0} dot",
        "ROOT dot_general.1 = f32[4,2,9,17]{3,2,1,0} dot",
        "dot_general.1",
        &["expected shape f32[4,2,17,9] but the instruction declares f32[4,2,9,17]"],
    );
    assert_broken(
        "reduce_sum_axes_f32",
        "module.hlo",
        "reduce_sum.50 = f32[3,5]{1,0} reduce",
        "reduce_sum.50 = f32[3,4]{1,0} reduce",
        "reduce_sum.50",
        &["expected shape f32[3,5] but the instruction declares f32[3,4]"],
    );
}

#[test]
fn bad_dimensions_are_found() {
    assert_broken(
        "transpose_2d_odd",
        "module.hlo",
        "dimensions={1,0}",
        "dimensions={1,1}",
        "transpose.1",
        &["transpose:", "not a permutation"],
    );
    assert_broken(
        "reduce_sum_axes_f32",
        "module.hlo",
        "dimensions={0,2}, to_apply=region_4.5",
        "dimensions={0,3}, to_apply=region_4.5",
        "reduce_sum.53",
        &["reduce:", "reduced dimension 3 is out of range for rank 3"],
    );
    assert_broken(
        "dot_batch_matmul",
        "module.hlo",
        "rhs_contracting_dims={2}",
        "rhs_contracting_dims={3}",
        "dot_general.1",
        &["dot: lhs contracting dimension 3 has size 33, rhs contracting dimension 3 has size 9"],
    );
}

#[test]
fn windows_gathers_and_scatters_are_checked() {
    // Without the stride the 5-wide dilated window fits 11 - 5 + 1 = 7 times.
    assert_broken(
        "hlo_conv_dim_labels_0bf",
        "module.hlo",
        "stride=2",
        "stride=1",
        "c",
        &["expected shape f32[7,2,4] but the instruction declares f32[4,2,4]"],
    );
    assert_broken(
        "gather_index_1d",
        "module.hlo",
        "slice_sizes={1,5}",
        "slice_sizes={2,5}",
        "gather.1",
        &["gather:", "operand dimension 0 has slice size 2"],
    );
    assert_broken(
        "scatter_add_duplicates_f32",
        "module.hlo",
        "inserted_window_dims={0}",
        "inserted_window_dims={}",
        "scatter-add.5",
        &["scatter:", "cover the 2 operand dimensions"],
    );
}

#[test]
fn control_flow_is_checked() {
    assert_broken(
        "while_fori_loop",
        "module.hlo",
        "while.1 = (s32[], s32[], f32[3,4]{1,0}, f32[3,4]{1,0}) while(",
        "while.1 = (s32[], s32[], f32[3,4]{1,0}, f32[4,3]{1,0}) while(",
        "while.1",
        &["expected shape (s32[], s32[], f32[3,4], f32[3,4]) but the instruction declares (s32[], s32[], f32[3,4], f32[4,3])"],
    );
    assert_broken(
        "hlo_conditional",
        "module.hlo",
        "r0 = f32[4]{0} conditional(j0, x, xk, x), branch_computations={b0, b1, b2}",
        "r0 = f32[4]{0} conditional(j0, x, xk, x), branch_computations={b1, b0, b2}",
        "r0",
        &["conditional:", "operand 1 is f32[4] but branch 0 takes (f32[4], s32[])"],
    );
    assert_broken(
        "sort_ints",
        "module.hlo",
        "dimensions={1}, is_stable",
        "dimensions={2}, is_stable",
        "sort.5",
        &["sort:", "sort dimension 2"],
    );
}

#[test]
fn optimized_modules_collectives_and_entry_layouts_are_checked() {
    assert_broken(
        "hlo_get_set_dimension_size",
        "optimized.hlo",
        "%select_reduce_fusion.1 = f32[3]{0} fusion",
        "%select_reduce_fusion.1 = f32[4]{0} fusion",
        "select_reduce_fusion.1",
        &["expected shape f32[3] but the instruction declares f32[4]"],
    );
    // Four participants scatter 8 elements: 2 each.
    assert_broken(
        "collective_reduce_scatter",
        "module.hlo",
        "reduce_scatter.14 = f32[2]{0} reduce-scatter",
        "reduce_scatter.14 = f32[4]{0} reduce-scatter",
        "reduce_scatter.14",
        &["expected shape f32[2] but the instruction declares f32[4]"],
    );
    assert_broken(
        "transpose_2d_odd",
        "module.hlo",
        "->f32[33,17]{0,1}}",
        "->f32[17,33]{0,1}}",
        "transpose.1",
        &["entry_computation_layout: the result is f32[17,33] but the root instruction is f32[33,17]"],
    );
}

#[test]
fn every_perf_workload_verifies() {
    let Some(perf) = conformance_dir().and_then(|d| Some(d.parent()?.join("perf"))).filter(|p| p.is_dir()) else {
        eprintln!("perf workloads not found; skipping");
        return;
    };
    let mut failures = Vec::new();
    let mut verified = 0;
    for entry in std::fs::read_dir(&perf).expect("read perf") {
        let path = entry.expect("entry").path().join("module.hlo");
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        match parse_module(&text).map_err(|e| e.to_string()).and_then(|m| verify_module(&m).map_err(|e| e.to_string()))
        {
            Ok(()) => verified += 1,
            Err(e) => failures.push(format!("{}: {e}", path.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(verified > 0, "no perf workload found");
}
