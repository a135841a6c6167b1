//! The pass's decisions on small modules (which values take which layouts, which copies it
//! inserts), and on the conformance corpus: modules XLA already laid out stay as they are,
//! every other module comes out verified and consistent (a second run changes nothing).

use super::run;
use crate::hlo::text::{parse_module, print_module};
use crate::hlo::{verify_module, Module, Opcode};
use std::path::{Path, PathBuf};

/// The module after the pass (verified), and whether the pass changed it.
fn assign(text: &str) -> (Module, bool) {
    let mut m = parse_module(text).expect("parses");
    verify_module(&m).expect("verifies before");
    let changed = run(&mut m).expect("layout assignment");
    verify_module(&m).unwrap_or_else(|e| panic!("does not verify after the pass: {e}\n{}", print_module(&m)));
    (m, changed)
}

/// The printed shape of instruction `name` (looked up in every computation).
fn shape_of(m: &Module, name: &str) -> String {
    m.computations
        .iter()
        .find_map(|c| c.find(name).map(|id| c.get(id).shape.to_string()))
        .unwrap_or_else(|| panic!("no instruction {name}"))
}

/// The `copy` instructions of computation `comp`, as `name = shape copy(operand)`.
fn copies(m: &Module, comp: &str) -> Vec<String> {
    let c = m.computation(m.find_computation(comp).expect("computation"));
    c.instructions
        .iter()
        .filter(|i| i.opcode == Opcode::Copy)
        .map(|i| format!("{} copy({})", i.shape, c.get(i.operands[0]).name))
        .collect()
}

const CONSISTENT: &str = r#"
HloModule consistent, entry_computation_layout={(f32[2,3]{0,1}, pred[])->(f32[2,3]{0,1}, f32[2,3]{0,1})}

cond {
  s = (s32[], f32[2,3]{0,1}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  s = (s32[], f32[2,3]{0,1}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  x = f32[2,3]{0,1} get-tuple-element(s), index=1
  y = f32[2,3]{0,1} add(x, x)
  ROOT t = (s32[], f32[2,3]{0,1}) tuple(next, y)
}

yes {
  a = f32[2,3]{0,1} parameter(0)
  ROOT n = f32[2,3]{0,1} negate(a)
}

no {
  a = f32[2,3]{0,1} parameter(0)
  ROOT e = f32[2,3]{0,1} exponential(a)
}

ENTRY e {
  p = f32[2,3]{0,1} parameter(0)
  q = pred[] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[2,3]{0,1}) tuple(zero, p)
  w = (s32[], f32[2,3]{0,1}) while(init), condition=cond, body=body
  r = f32[2,3]{0,1} get-tuple-element(w), index=1
  c = f32[2,3]{0,1} conditional(q, r, p), true_computation=yes, false_computation=no
  ROOT out = (f32[2,3]{0,1}, f32[2,3]{0,1}) tuple(r, c)
}
"#;

#[test]
fn a_consistent_module_is_left_alone() {
    let before = print_module(&parse_module(CONSISTENT).expect("parses"));
    let (m, changed) = assign(CONSISTENT);
    assert!(!changed);
    assert_eq!(print_module(&m), before);
}

#[test]
fn a_module_without_layouts_is_left_alone() {
    let text = CONSISTENT.replace("{0,1}", "").replace(
        ", entry_computation_layout={(f32[2,3], pred[])->(f32[2,3], f32[2,3])}",
        "",
    );
    let before = print_module(&parse_module(&text).expect("parses"));
    let (m, changed) = assign(&text);
    assert!(!changed);
    assert_eq!(print_module(&m), before);
}

/// jax.vmap over lax.scan: a transpose printed in its own layout feeds a loop whose body and
/// condition declare another. The transpose only feeds the loop, so it is computed in the
/// loop's layout: no copy.
const TRANSPOSE_INTO_LOOP: &str = r#"
HloModule transpose_into_loop, entry_computation_layout={(f32[3,2]{1,0})->f32[2,3]{1,0}}

cond {
  s = (s32[], f32[2,3]{1,0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(2)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  s = (s32[], f32[2,3]{1,0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  x = f32[2,3]{1,0} get-tuple-element(s), index=1
  y = f32[2,3]{1,0} add(x, x)
  ROOT t = (s32[], f32[2,3]{1,0}) tuple(next, y)
}

ENTRY e {
  p = f32[3,2]{1,0} parameter(0)
  tr = f32[2,3]{0,1} transpose(p), dimensions={1,0}
  zero = s32[] constant(0)
  init = (s32[], f32[2,3]{0,1}) tuple(zero, tr)
  w = (s32[], f32[2,3]{0,1}) while(init), condition=cond, body=body
  ROOT r = f32[2,3]{0,1} get-tuple-element(w), index=1
}
"#;

#[test]
fn a_free_producer_takes_the_loop_state_layout() {
    let (m, changed) = assign(TRANSPOSE_INTO_LOOP);
    assert!(changed);
    assert_eq!(shape_of(&m, "tr"), "f32[2,3]{1,0}");
    assert_eq!(shape_of(&m, "init"), "(s32[], f32[2,3]{1,0})");
    assert_eq!(shape_of(&m, "w"), "(s32[], f32[2,3]{1,0})");
    // The root is the state, whose layout is also the entry result's: no copy anywhere.
    assert_eq!(shape_of(&m, "r"), "f32[2,3]{1,0}");
    for comp in ["e", "body", "cond"] {
        assert!(copies(&m, comp).is_empty(), "{comp}: {:?}", copies(&m, comp));
    }
}

#[test]
fn an_entry_parameter_in_another_layout_is_copied_into_the_loop() {
    let text = TRANSPOSE_INTO_LOOP
        .replace("{(f32[3,2]{1,0})->f32[2,3]{1,0}}", "{(f32[2,3]{0,1})->f32[2,3]{1,0}}")
        .replace(
            "p = f32[3,2]{1,0} parameter(0)\n  tr = f32[2,3]{0,1} transpose(p), dimensions={1,0}",
            "tr = f32[2,3]{0,1} parameter(0)",
        );
    let (m, changed) = assign(&text);
    assert!(changed);
    assert_eq!(
        shape_of(&m, "tr"),
        "f32[2,3]{0,1}",
        "entry parameters arrive in the entry layout"
    );
    assert_eq!(copies(&m, "e"), vec!["f32[2,3]{1,0} copy(tr)"]);
    let e = m.entry_computation();
    let w = e.get(e.find("w").expect("while"));
    assert_eq!(e.get(w.operands[0]).shape.to_string(), "(s32[], f32[2,3]{1,0})");
}

#[test]
fn a_body_swapping_leaves_of_different_layouts_copies_both() {
    let text = r#"
HloModule swap

cond {
  s = (f32[2,2]{1,0}, f32[2,2]{0,1}) parameter(0)
  ROOT f = pred[] constant(false)
}

body {
  s = (f32[2,2]{1,0}, f32[2,2]{0,1}) parameter(0)
  a = f32[2,2]{1,0} get-tuple-element(s), index=0
  b = f32[2,2]{0,1} get-tuple-element(s), index=1
  ROOT t = (f32[2,2]{0,1}, f32[2,2]{1,0}) tuple(b, a)
}

ENTRY e {
  x = f32[2,2]{1,0} parameter(0)
  y = f32[2,2]{0,1} parameter(1)
  init = (f32[2,2]{1,0}, f32[2,2]{0,1}) tuple(x, y)
  ROOT w = (f32[2,2]{1,0}, f32[2,2]{0,1}) while(init), condition=cond, body=body
}
"#;
    let (m, changed) = assign(text);
    assert!(changed);
    let mut body_copies = copies(&m, "body");
    body_copies.sort();
    assert_eq!(body_copies, vec!["f32[2,2]{0,1} copy(a)", "f32[2,2]{1,0} copy(b)"]);
    assert!(copies(&m, "e").is_empty());
    assert_eq!(
        m.computation(m.find_computation("body").unwrap())
            .root_instruction()
            .shape
            .to_string(),
        "(f32[2,2]{1,0}, f32[2,2]{0,1})"
    );
}

#[test]
fn a_conditional_takes_its_largest_branch_layout_and_the_others_follow() {
    let text = r#"
HloModule branches, entry_computation_layout={(s32[], f32[2,3]{1,0})->f32[2,3]{1,0}}

big {
  a = f32[2,3]{0,1} parameter(0)
  n = f32[2,3]{0,1} negate(a)
  ROOT m = f32[2,3]{0,1} multiply(n, n)
}

small {
  a = f32[2,3]{1,0} parameter(0)
  ROOT e = f32[2,3]{1,0} exponential(a)
}

ENTRY e {
  i = s32[] parameter(0)
  p = f32[2,3]{1,0} parameter(1)
  c = f32[2,3]{1,0} conditional(i, p, p), branch_computations={small, big}
  ROOT r = f32[2,3]{1,0} add(c, c)
}
"#;
    let (m, changed) = assign(text);
    assert!(changed);
    // big has more instructions: its root's layout is the conditional's; small's root follows.
    assert_eq!(shape_of(&m, "c"), "f32[2,3]{0,1}");
    assert_eq!(shape_of(&m, "e"), "f32[2,3]{0,1}");
    assert!(copies(&m, "small").is_empty() && copies(&m, "big").is_empty());
    // Parameters are the branches' own: p goes to big through a copy, to small as it is.
    assert_eq!(shape_of(&m, "a"), "f32[2,3]{0,1}");
    assert_eq!(copies(&m, "e"), vec!["f32[2,3]{0,1} copy(p)"]);
    let e = m.entry_computation();
    let c = e.get(e.find("c").unwrap());
    assert_eq!(e.get(c.operands[1]).name, "p");
}

#[test]
fn a_call_passes_arguments_in_the_callee_layout_and_returns_the_callee_root_layout() {
    let text = r#"
HloModule call, entry_computation_layout={(f32[2,3]{1,0})->f32[2,3]{1,0}}

f {
  a = f32[2,3]{0,1} parameter(0)
  ROOT n = f32[2,3]{0,1} negate(a)
}

ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  c = f32[2,3]{1,0} call(p), to_apply=f
  ROOT r = f32[2,3]{1,0} add(c, c)
}
"#;
    let (m, changed) = assign(text);
    assert!(changed);
    assert_eq!(copies(&m, "e"), vec!["f32[2,3]{0,1} copy(p)"]);
    assert_eq!(shape_of(&m, "c"), "f32[2,3]{0,1}");
    assert_eq!(
        shape_of(&m, "r"),
        "f32[2,3]{1,0}",
        "the root keeps the entry result layout"
    );
}

#[test]
fn the_entry_root_is_computed_in_the_entry_result_layout() {
    let text = r#"
HloModule result, entry_computation_layout={(f32[2,3]{1,0})->(f32[2,3]{0,1}, f32[2,3]{0,1})}

ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  n = f32[2,3]{1,0} negate(p)
  ROOT t = (f32[2,3]{1,0}, f32[2,3]{1,0}) tuple(n, p)
}
"#;
    let (m, changed) = assign(text);
    assert!(changed);
    // negate is free to take the result layout; the parameter is a fact, so it is copied.
    assert_eq!(shape_of(&m, "n"), "f32[2,3]{0,1}");
    assert_eq!(copies(&m, "e"), vec!["f32[2,3]{0,1} copy(p)"]);
    assert_eq!(
        m.entry_computation().root_instruction().shape.to_string(),
        "(f32[2,3]{0,1}, f32[2,3]{0,1})"
    );
}

#[test]
fn custom_call_layout_constraints_bind() {
    let text = r#"
HloModule lapack, entry_computation_layout={(f32[3,3]{1,0})->(f32[3,3]{1,0}, f32[3,3]{0,1})}

ENTRY e {
  p = f32[3,3]{1,0} parameter(0)
  n = f32[3,3]{1,0} negate(p)
  k = f32[3,3]{0,1} custom-call(n, p), custom_call_target="target", operand_layout_constraints={f32[3,3]{0,1}, f32[3,3]{0,1}}
  ROOT t = (f32[3,3]{1,0}, f32[3,3]{0,1}) tuple(n, k)
}
"#;
    let (m, changed) = assign(text);
    assert!(changed);
    // n feeds the call and the result: its own layout is the result's, so the call gets a copy;
    // the parameter is a fact and is copied too. The call's result layout is kept.
    let mut e_copies = copies(&m, "e");
    e_copies.sort();
    assert_eq!(e_copies, vec!["f32[3,3]{0,1} copy(n)", "f32[3,3]{0,1} copy(p)"]);
    assert_eq!(shape_of(&m, "n"), "f32[3,3]{1,0}");
    assert_eq!(shape_of(&m, "k"), "f32[3,3]{0,1}");
}

#[test]
fn a_producer_feeding_a_custom_call_only_takes_its_layout() {
    let text = r#"
HloModule lapack2, entry_computation_layout={(f32[3,3]{1,0})->f32[3,3]{1,0}}

ENTRY e {
  p = f32[3,3]{1,0} parameter(0)
  n = f32[3,3]{1,0} negate(p)
  ROOT k = f32[3,3]{1,0} custom-call(n), custom_call_target="target", operand_layout_constraints={f32[3,3]{0,1}}
}
"#;
    let (m, _) = assign(text);
    assert_eq!(shape_of(&m, "n"), "f32[3,3]{0,1}");
    assert!(copies(&m, "e").is_empty());
}

/// An optimized module (it has a bitcast) whose loop body declares another state layout than
/// the while, the caller's `{0,1}` being what the bitcast makes of the parameter's bytes.
const BITCAST_INTO_LOOP: &str = r#"
HloModule optimized

cond {
  s = (s32[], f32[3,2]{1,0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(2)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  s = (s32[], f32[3,2]{1,0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  x = f32[3,2]{1,0} get-tuple-element(s), index=1
  ROOT t = (s32[], f32[3,2]{1,0}) tuple(next, x)
}

ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  flat = f32[3,2]{0,1} bitcast(p)
  zero = s32[] constant(0)
  init = (s32[], f32[3,2]{0,1}) tuple(zero, flat)
  w = (s32[], f32[3,2]{0,1}) while(init), condition=cond, body=body
  ROOT r = (f32[3,2]{0,1}, (s32[], f32[3,2]{0,1})) tuple(flat, w)
}
"#;

#[test]
fn with_a_bitcast_printed_layouts_stay_and_only_copies_are_added() {
    let (m, changed) = assign(BITCAST_INTO_LOOP);
    assert!(changed);
    assert_eq!(shape_of(&m, "flat"), "f32[3,2]{0,1}");
    assert_eq!(
        shape_of(&m, "w"),
        "(s32[], f32[3,2]{1,0})",
        "the loop state is the body's"
    );
    let mut e_copies = copies(&m, "e");
    e_copies.sort();
    assert_eq!(e_copies, vec!["f32[3,2]{0,1} copy(w.1)", "f32[3,2]{1,0} copy(flat)"]);
    assert_eq!(
        m.entry_computation().root_instruction().shape.to_string(),
        "(f32[3,2]{0,1}, (s32[], f32[3,2]{0,1}))"
    );

    let consistent = BITCAST_INTO_LOOP.replace("f32[3,2]{1,0}", "f32[3,2]{0,1}");
    let before = print_module(&parse_module(&consistent).unwrap());
    let (m, changed) = assign(&consistent);
    assert!(!changed);
    assert_eq!(print_module(&m), before);
}

#[test]
fn running_twice_changes_nothing_the_second_time() {
    for text in [TRANSPOSE_INTO_LOOP, CONSISTENT] {
        let (mut m, _) = assign(text);
        let once = print_module(&m);
        assert!(!run(&mut m).expect("second run"));
        assert_eq!(print_module(&m), once);
    }
}

/// `<repo>/tests/conformance`, or the shared corpus.
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

/// Runs `check` on every corpus module called `file` that parses; returns (checked, failures).
fn over_corpus(file: &str, check: impl Fn(Module) -> Result<(), String>) -> (usize, Vec<String>) {
    let Some(dir) = conformance_dir() else {
        return (0, vec!["conformance corpus not found".into()]);
    };
    let mut cases: Vec<PathBuf> = std::fs::read_dir(dir.join("cases"))
        .expect("cases")
        .map(|e| e.expect("entry").path())
        .collect();
    cases.sort();
    let mut checked = 0;
    let mut failures = Vec::new();
    for case in cases {
        let Ok(text) = std::fs::read_to_string(case.join(file)) else {
            continue;
        };
        let Ok(module) = parse_module(&text) else { continue };
        checked += 1;
        if let Err(e) = check(module) {
            failures.push(format!(
                "{}: {e}",
                case.file_name().and_then(|n| n.to_str()).unwrap_or("?")
            ));
        }
    }
    (checked, failures)
}

#[test]
fn every_optimized_corpus_module_is_left_alone() {
    let (checked, failures) = over_corpus("optimized.hlo", |mut m| {
        let before = print_module(&m);
        let changed = run(&mut m).map_err(|e| e.to_string())?;
        let after = print_module(&m);
        if changed || after != before {
            let diff: Vec<String> = before
                .lines()
                .zip(after.lines())
                .filter(|(a, b)| a != b)
                .map(|(a, b)| format!("- {a}\n+ {b}"))
                .take(4)
                .collect();
            return Err(format!("changed={changed}\n{}", diff.join("\n")));
        }
        Ok(())
    });
    assert!(
        failures.is_empty(),
        "{} of {checked} optimized modules changed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked > 100, "only {checked} optimized modules found");
}

#[test]
fn every_corpus_module_comes_out_verified_and_consistent() {
    let count_copies = |m: &Module| {
        m.computations
            .iter()
            .flat_map(|c| &c.instructions)
            .filter(|i| i.opcode == Opcode::Copy)
            .count()
    };
    let (changed_modules, added_copies) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
    let (checked, failures) = over_corpus("module.hlo", |mut m| {
        let copies_before = count_copies(&m);
        if run(&mut m).map_err(|e| e.to_string())? {
            changed_modules.set(changed_modules.get() + 1);
            added_copies.set(added_copies.get() + count_copies(&m) - copies_before);
        }
        verify_module(&m).map_err(|e| format!("does not verify after the pass: {e}"))?;
        let once = print_module(&m);
        if run(&mut m).map_err(|e| e.to_string())? || print_module(&m) != once {
            return Err("a second run changed the module".into());
        }
        Ok(())
    });
    eprintln!(
        "layout assignment changed {} of {checked} modules, adding {} copies",
        changed_modules.get(),
        added_copies.get()
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} modules fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked > 100, "only {checked} modules found");
}
