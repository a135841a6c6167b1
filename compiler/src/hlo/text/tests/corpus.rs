//! Every module of the conformance corpus parses, prints to a fixed point, and agrees with
//! the facts its case.json records independently of us (opcodes, input and output shapes).

use super::super::{parse_module, print_module};
use crate::hlo::module::Module;
use std::path::{Path, PathBuf};

/// The conformance corpus: `<repo>/tests/conformance` (CI), `../../shared/conformance` (beside
/// the repository), or `/work/shared/conformance`; `None` if none exists.
pub(crate) fn conformance_dir() -> Option<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    [
        manifest.join("../tests/conformance"),
        manifest.join("../../shared/conformance"),
        PathBuf::from("/work/shared/conformance"),
    ]
    .into_iter()
    .find(|p| p.join("cases").is_dir())
}

/// (case directory, file name, text) of every module.hlo and optimized.hlo.
fn corpus_files() -> Vec<(PathBuf, &'static str, String)> {
    let Some(dir) = conformance_dir() else {
        eprintln!("conformance corpus not found; skipping");
        return Vec::new();
    };
    let mut cases: Vec<PathBuf> = std::fs::read_dir(dir.join("cases"))
        .expect("read cases")
        .map(|e| e.expect("entry").path())
        .collect();
    cases.sort();
    let mut files = Vec::new();
    for case in cases {
        for name in ["module.hlo", "optimized.hlo"] {
            if let Ok(text) = std::fs::read_to_string(case.join(name)) {
                files.push((case.clone(), name, text));
            }
        }
    }
    files
}

fn parse(case: &Path, name: &str, text: &str) -> Module {
    parse_module(text).unwrap_or_else(|e| panic!("{}/{name}: {e}", case.display()))
}

#[test]
fn every_corpus_module_parses_and_prints_to_a_fixed_point() {
    let files = corpus_files();
    let mut failures = Vec::new();
    for (case, name, text) in &files {
        let first = match parse_module(text) {
            Ok(m) => m,
            Err(e) => {
                failures.push(format!("{}/{name}: {e}", case.display()));
                continue;
            }
        };
        let printed = print_module(&first);
        let second = match parse_module(&printed) {
            Ok(m) => m,
            Err(e) => {
                failures.push(format!(
                    "{}/{name}: printed text does not parse: {e}\n{printed}",
                    case.display()
                ));
                continue;
            }
        };
        let reprinted = print_module(&second);
        if reprinted != printed {
            let line = printed.lines().zip(reprinted.lines()).find(|(a, b)| a != b);
            failures.push(format!(
                "{}/{name}: print is not a fixed point; first difference:\n{line:?}",
                case.display()
            ));
            continue;
        }
        let third = parse(case, name, &reprinted);
        if third != second {
            failures.push(format!(
                "{}/{name}: reparsing the printed text gives a different module",
                case.display()
            ));
        }
    }
    if !files.is_empty() {
        assert!(
            files.len() >= 600,
            "only {} corpus files found",
            files.len()
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {} files failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

/// The strings of a JSON array field such as `"hlo_opcodes": ["abs", "add"]` (enough JSON
/// for case.json, which has no escapes in these fields).
fn json_string_array(json: &str, field: &str) -> Vec<String> {
    let Some(start) = json.find(&format!("\"{field}\"")) else {
        return Vec::new();
    };
    let rest = &json[start..];
    let open = rest.find('[').expect("array");
    let close = rest.find(']').expect("array end");
    rest[open + 1..close]
        .split(',')
        .map(|s| s.trim().trim_matches('"').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// `"shape": [4, 5]` entries of the inputs or outputs array, in order.
fn json_shapes(json: &str, field: &str) -> Vec<(String, Vec<i64>)> {
    let Some(start) = json.find(&format!("\"{field}\"")) else {
        return Vec::new();
    };
    let rest = &json[start..];
    // The field's array ends where its brackets balance.
    let open = rest.find('[').expect("array");
    let mut depth = 0;
    let mut end = rest.len();
    for (i, ch) in rest.char_indices().skip(open) {
        match ch {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            end = i;
            break;
        }
    }
    let body = &rest[open..end];
    let mut out = Vec::new();
    for entry in body.split("\"dtype\"").skip(1) {
        let dtype = entry.split('"').nth(1).unwrap_or_default().to_string();
        let shape_at = entry.find('[').expect("shape");
        let shape_end = entry[shape_at..].find(']').expect("shape end") + shape_at;
        let dims = entry[shape_at + 1..shape_end]
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect();
        out.push((dtype, dims));
    }
    out
}

#[test]
fn parsed_modules_agree_with_case_json() {
    let Some(dir) = conformance_dir() else { return };
    let mut checked = 0;
    for entry in std::fs::read_dir(dir.join("cases")).expect("cases") {
        let case = entry.expect("entry").path();
        let (Ok(json), Ok(text)) = (
            std::fs::read_to_string(case.join("case.json")),
            std::fs::read_to_string(case.join("module.hlo")),
        ) else {
            continue;
        };
        if json.contains("\"replicas\"") {
            // Collective cases store one input per replica, stacked on a leading axis.
            continue;
        }
        let module = parse(&case, "module.hlo", &text);
        let opcodes: Vec<String> = module
            .opcodes()
            .iter()
            .map(|o| o.name().to_string())
            .collect();
        let mut expected = json_string_array(&json, "hlo_opcodes");
        expected.sort();
        let mut got = opcodes.clone();
        got.sort();
        assert_eq!(got, expected, "{}: opcodes", case.display());

        // Inputs are the entry layout's parameters with tuples flattened depth-first.
        let layout = module
            .entry_layout
            .as_ref()
            .expect("entry_computation_layout");
        let leaves = |shapes: &[hlojit_runtime::Shape]| -> Vec<(String, Vec<i64>)> {
            shapes
                .iter()
                .flat_map(|s| s.array_leaves())
                .map(|a| (a.element_type.name().to_string(), a.dims.clone()))
                .collect()
        };
        assert_eq!(
            leaves(&layout.parameters),
            json_shapes(&json, "inputs"),
            "{}: inputs",
            case.display()
        );
        assert_eq!(
            leaves(std::slice::from_ref(&layout.result)),
            json_shapes(&json, "outputs"),
            "{}: outputs",
            case.display()
        );
        checked += 1;
    }
    assert!(checked >= 290, "checked only {checked} cases");
}
