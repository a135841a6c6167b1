//! The buffer assignment as text: where each instruction's arrays live, per sequenced
//! function, the temporary arena's size and the peak temporary memory of a run; and the same
//! facts as comments on the module's HLO text (`hlojit opt`).

use crate::codegen::plan::{FunctionPlan, LoweringPlan};
use crate::hlo::{CompId, Module};
use crate::passes::buffer_assignment::{Allocation, BufferAssignment};
use std::collections::HashMap;
use std::fmt::Write;

/// One allocation, short: `temp [0, +4096)`, `param 1`, `result 0`, `constant`, `= slot 3`.
fn describe(assignment: &BufferAssignment, module: &Module, comp: CompId, s: usize) -> String {
    match &assignment.slots[s].allocation {
        Allocation::Parameter(j) => format!("param {j}"),
        Allocation::Result(k) => match assignment.aliases.get(k) {
            Some(j) => format!("result {k} (in param {j})"),
            None => format!("result {k}"),
        },
        Allocation::Constant(_) => "constant".into(),
        Allocation::Temp { offset, size } => format!("temp [{offset}, +{size})"),
        Allocation::Alias(_) => {
            let o = assignment.owner(s);
            let name = assignment
                .leaves
                .iter()
                .find(|(_, l)| l.contains(&o))
                .map(|(id, _)| module.computation(comp).get(*id).name.clone())
                .unwrap_or_default();
            format!("shares {name}'s {}", describe(assignment, module, comp, o))
        }
    }
}

/// The function plan whose buffers a computation's instructions have: its in-place form
/// (how while bodies run) when it has one.
fn plans_by_computation(plan: &LoweringPlan) -> HashMap<CompId, &FunctionPlan> {
    let mut by: HashMap<CompId, &FunctionPlan> = HashMap::new();
    for fp in &plan.functions {
        if fp.in_place || !by.contains_key(&fp.comp) {
            by.insert(fp.comp, fp);
        }
    }
    by
}

/// Peak temporary bytes of a function's run: its arena plus the largest of the arenas of
/// the functions it calls, while they run.
fn peak(plan: &LoweringPlan, module: &Module, i: usize, memo: &mut HashMap<usize, i64>) -> i64 {
    if let Some(&p) = memo.get(&i) {
        return p;
    }
    memo.insert(i, 0); // recursion guard (HLO has none, but a bad plan must not loop)
    let fp = &plan.functions[i];
    let comp = module.computation(fp.comp);
    let mut callee = 0i64;
    for inst in &comp.instructions {
        let calls: Vec<(CompId, bool)> = match (inst.while_condition(), inst.while_body()) {
            (Some(c), Some(b)) => vec![(c, false), (b, true)],
            _ if matches!(inst.opcode, crate::hlo::Opcode::Conditional | crate::hlo::Opcode::Call) => inst.called.iter().map(|&c| (c, false)).collect(),
            _ => Vec::new(),
        };
        for (c, in_place) in calls {
            if let Some(j) = plan.functions.iter().position(|f| f.comp == c && f.in_place == in_place) {
                callee = callee.max(peak(plan, module, j, memo));
            }
        }
    }
    let p = fp.assignment.arena_bytes.saturating_add(callee);
    memo.insert(i, p);
    p
}

/// The buffer assignment report.
pub fn report(module: &Module, plan: &LoweringPlan) -> String {
    let mut out = String::new();
    let mut memo = HashMap::new();
    let entry = plan.functions.len().saturating_sub(1);
    let _ = writeln!(
        out,
        "# buffer assignment of {}: peak temporary memory {} bytes (the entry's arena plus the largest arena of what it calls, while that runs)",
        module.name,
        peak(plan, module, entry, &mut memo)
    );
    for (i, fp) in plan.functions.iter().enumerate() {
        let comp = module.computation(fp.comp);
        let a = &fp.assignment;
        let _ = writeln!(
            out,
            "\n{} (computation {}{}): arena {} bytes, peak with callees {} bytes",
            fp.name,
            comp.name,
            if fp.in_place { ", results over its parameters" } else { "" },
            a.arena_bytes,
            peak(plan, module, i, &mut memo)
        );
        for &id in &fp.schedule {
            let slots = a.leaf_slots(id);
            if slots.is_empty() {
                continue;
            }
            let inst = comp.get(id);
            let places: Vec<String> = slots.iter().map(|&s| format!("{} {}", a.slots[s].shape, describe(a, module, fp.comp, s))).collect();
            let _ = writeln!(out, "  {:<32} {}", inst.name, places.join("; "));
        }
        for (k, s) in &a.result_copies {
            let _ = writeln!(out, "  result {k} copied from {}", describe(a, module, fp.comp, *s));
        }
    }
    out
}

/// The module's HLO text with each planned instruction's buffers as a trailing `//` comment
/// (`// buffer: temp [0, +4096)`), which HLO parsers skip.
pub fn annotated_text(module: &Module, plan: &LoweringPlan) -> String {
    let mut notes: HashMap<&str, String> = HashMap::new();
    for (c, fp) in plans_by_computation(plan) {
        let comp = module.computation(c);
        for &id in &fp.schedule {
            let slots = fp.assignment.leaf_slots(id);
            if slots.is_empty() {
                continue;
            }
            let mut note = slots.iter().map(|&s| describe(&fp.assignment, module, c, s)).collect::<Vec<_>>().join("; ");
            if let Some(&k) = fp.kernels.get(&id) {
                let _ = write!(note, "; kernel {}", plan.kernels[k].name);
            }
            notes.insert(comp.get(id).name.as_str(), note);
        }
    }
    let text = crate::hlo::text::print_module(module);
    let mut out = String::with_capacity(text.len() * 5 / 4);
    for line in text.lines() {
        out.push_str(line);
        let t = line.trim_start();
        let t = t.strip_prefix("ROOT ").unwrap_or(t);
        if let Some(name) = t.strip_prefix('%').and_then(|r| r.split(" = ").next()) {
            if let Some(note) = notes.get(name) {
                let _ = write!(out, " // buffer: {note}");
            }
        }
        out.push('\n');
    }
    let mut memo = HashMap::new();
    let entry = plan.functions.len().saturating_sub(1);
    let _ = writeln!(out, "// peak temporary memory: {} bytes", peak(plan, module, entry, &mut memo));
    out
}

/// The prepared module's HLO text with buffer comments (what `hlojit opt` prints).
///
/// # Errors
/// A module whose buffers cannot be planned (a shape too large, say).
pub fn annotate(module: &Module) -> crate::error::Result<String> {
    let plan = LoweringPlan::new(module, "entry")?;
    Ok(annotated_text(module, &plan))
}
