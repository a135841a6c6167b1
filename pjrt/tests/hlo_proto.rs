//! The optimized program the plugin hands to JAX (`PJRT_Executable_OptimizedProgram`) is an
//! HloModuleProto that XLA reads back as the module hlojit compiled: for every conformance
//! case, the module after hlojit's passes (and XLA's own optimized module, which has XLA's
//! fusions and layouts) is written as a proto, rebuilt by XLA through jaxlib
//! (`HloModule::CreateFromProto`, tools/hlo_proto_xla.py), printed by XLA, parsed by hlojit
//! and compared instruction by instruction with the original.
//!
//! Needs python3 with jaxlib (target/venv from `cargo xtask setup`, or HLOJIT_PYTHON); without
//! it the test says so and checks only that every module encodes.

use hlojit::hlo::attributes::CustomCallApiVersion;
use hlojit::hlo::{Module, Opcode};
use prost::Message;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn python() -> PathBuf {
    std::env::var_os("HLOJIT_PYTHON").map(PathBuf::from).unwrap_or_else(|| {
        let venv = workspace().join("target/venv/bin/python3");
        if venv.exists() { venv } else { PathBuf::from("python3") }
    })
}

/// The modules to write: (file stem, module).
fn corpus() -> Vec<(String, Module)> {
    let dir = workspace().join("tests/conformance/cases");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    cases.sort();
    assert!(cases.len() > 300, "the corpus has only {} cases", cases.len());
    let mut out = Vec::new();
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(case.join("module.hlo")).unwrap();
        let module = hlojit::parse_module(&text).unwrap();
        let optimized = hlojit_compiler::pipeline::prepare(&module, &hlojit::CompileOptions::default())
            .unwrap_or_else(|e| panic!("{name}: hlojit's passes: {e}"));
        out.push((format!("{name}.hlojit"), optimized));
        // XLA's optimized module where hlojit parses it (an elided constant makes it unusable).
        if let Ok(text) = std::fs::read_to_string(case.join("optimized.hlo")) {
            if let Ok(m) = hlojit::parse_module(&text) {
                out.push((format!("{name}.xla"), m));
            }
        }
    }
    out
}

/// What XLA's text shows of a module, as comparable lines per computation: attributes hlojit
/// keeps verbatim (metadata, sharding, frontend and backend configs of other ops) are left
/// out, and settings XLA prints only when they differ from their default are normalized to
/// "absent".
fn comparable(m: &Module) -> BTreeMap<String, Vec<String>> {
    let mut m = m.clone();
    for comp in &mut m.computations {
        // The proto makes names unique across the module (XLA requires it; hlojit's fusion
        // bodies reuse `param_0`): compare by position instead.
        for (k, id) in comp.post_order().into_iter().enumerate() {
            comp.instructions[id.index()].name = format!("v{k}");
        }
        for inst in &mut comp.instructions {
            // An absent layout is the row-major one; XLA prints it.
            inst.shape = inst.shape.with_default_layouts();
            let a = &mut inst.attrs;
            // XLA prints the solver options only when true.
            for flag in [&mut a.left_side, &mut a.lower, &mut a.unit_diagonal] {
                if *flag == Some(false) {
                    *flag = None;
                }
            }
            a.other.clear();
            if a.api_version == Some(CustomCallApiVersion::Original) {
                a.api_version = None;
            }
            if inst.opcode != Opcode::CustomCall {
                a.backend_config = None;
            }
            if a.feature_group_count == Some(1) {
                a.feature_group_count = None;
            }
            if a.batch_group_count == Some(1) {
                a.batch_group_count = None;
            }
            if a.operand_precision.as_ref().is_some_and(|p| p.iter().all(|s| s.eq_ignore_ascii_case("default"))) {
                a.operand_precision = None;
            }
        }
    }
    let mut out = BTreeMap::new();
    for id in m.comp_ids() {
        let text = hlojit::hlo::text::print_computation(&m, id);
        let mut lines: Vec<String> = text.lines().skip(1).map(str::to_string).collect();
        lines.sort();
        out.insert(m.computation(id).name.clone(), lines);
    }
    // Computations nothing calls are not written.
    let reachable: Vec<String> = m.computation_post_order().iter().map(|&c| m.computation(c).name.clone()).collect();
    out.retain(|name, _| reachable.contains(name));
    out
}

#[test]
fn xla_reads_back_every_optimized_corpus_module() {
    let tmp = tempfile::tempdir().unwrap();
    let modules = corpus();
    for (stem, module) in &modules {
        let bytes = hlojit_pjrt::hlo_proto::module_proto(module).encode_to_vec();
        std::fs::write(tmp.path().join(format!("{stem}.pb")), bytes).unwrap();
    }
    let python = python();
    let has_jax = Command::new(&python).args(["-c", "import jaxlib._hlo"]).output().is_ok_and(|o| o.status.success());
    if !has_jax {
        eprintln!("skipping XLA's half: {} cannot import jaxlib (cargo xtask setup installs it into target/venv)", python.display());
        return;
    }
    // XLA logs every refused proto with a stack trace; keep that out of the test's output.
    let log = std::fs::File::create(tmp.path().join("xla.log")).unwrap();
    let status = Command::new(&python).arg(workspace().join("tools/hlo_proto_xla.py")).arg(tmp.path()).stderr(log).status().unwrap();
    let current = std::fs::read_to_string(tmp.path().join("current")).unwrap_or_default();
    assert!(status.success(), "hlo_proto_xla.py failed (XLA crashed reading {current})");
    let mut failures = Vec::new();
    for (stem, module) in &modules {
        let err = tmp.path().join(format!("{stem}.err"));
        if err.exists() {
            failures.push(format!("{stem}: XLA refuses the proto: {}", std::fs::read_to_string(err).unwrap().trim()));
            continue;
        }
        let text = std::fs::read_to_string(tmp.path().join(format!("{stem}.xla.hlo"))).unwrap();
        let back = match hlojit::parse_module(&text) {
            Ok(m) => m,
            Err(e) => {
                failures.push(format!("{stem}: hlojit cannot parse XLA's text: {e}\n{text}"));
                continue;
            }
        };
        let (want, got) = (comparable(module), comparable(&back));
        if want != got {
            let mut diff = String::new();
            for (name, lines) in &want {
                match got.get(name) {
                    None => diff.push_str(&format!("  computation {name} missing\n")),
                    Some(g) => {
                        for l in lines.iter().filter(|l| !g.contains(l)) {
                            diff.push_str(&format!("  - {l}\n"));
                        }
                        for l in g.iter().filter(|l| !lines.contains(l)) {
                            diff.push_str(&format!("  + {l}\n"));
                        }
                    }
                }
            }
            failures.push(format!("{stem}: XLA's module differs:\n{diff}"));
        }
    }
    assert!(failures.is_empty(), "{} of {} modules do not round-trip:\n{}", failures.len(), modules.len(), failures.join("\n"));
}
