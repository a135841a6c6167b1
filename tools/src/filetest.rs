//! File tests (in the style of cranelift's filetests): one `.hlo` file holds a module together
//! with its inputs and the results expected from it, written as comment directives so that
//! the file stays valid HLO text:
//!
//! ```text
//! // Doubles its input. Expected values worked out by hand.
//! // input: f32[3] {1, 2, 3}
//! // expect: f32[3] {2, 4, 6}
//! HloModule double
//! ENTRY e { x = f32[3] parameter(0)  ROOT y = f32[3] add(x, x) }
//! ```
//!
//! Directives:
//! - `// input: SHAPE LITERAL`: the next argument leaf (tuple parameters take their leaves in
//!   depth-first order). Literals are HLO constant syntax, in logical order.
//! - `// expect: SHAPE LITERAL`: the next result leaf.
//! - `// infeed: SHAPE LITERAL`: the next array queued for the program's infeed (before the
//!   run; an infeed of a tuple reads one per leaf).
//! - `// outfeed: SHAPE LITERAL`: the next array the program must outfeed (tuples flattened);
//!   the program must outfeed exactly these.
//! - `// run-error: TEXT`: running must fail with a message containing TEXT.
//! - `// tolerance: rtol=R atol=A`: compare floats within `atol + rtol * |expected|`
//!   (default: exact, any NaN matching any NaN).
//! - `// error: TEXT`: compiling (parsing, verifying or lowering) must fail with a message
//!   containing TEXT.
//! - `// check: TEXT`, `// check-next: TEXT`, `// check-not: TEXT`: the module after hlojit's
//!   HLO passes, printed as HLO text, must match (see [`crate::filecheck`]); these pin what
//!   the compiler decided. `// check-ir:`, `// check-ir-next:`, `// check-ir-not:` match the
//!   optimized LLVM IR instead. A test with checks and no `// expect:` is not run.
//! - `// cpu: NAME FEATURES`: the checks compile for that CPU and LLVM feature string
//!   (`znver4 +avx512f,+avx512vl,...`) instead of the host's, for decisions that depend on the
//!   instruction set (the features the compiler tests are the ones written).
//!
//! A directive may continue on the following comment lines while its braces are open.
//!
//! A `.mlir` file holds a StableHLO module (MLIR text) instead, with the same directives: it
//! goes through the StableHLO front end as `hlojit run` reads it.
//!
//! A module for several devices (`replica_count` / `num_partitions` above 1) runs on all of
//! them: each input and each expected result is written stacked over the devices along a new
//! leading dimension (global device order), as in the conformance corpus.

use crate::conformance::compare::compare;
use crate::conformance::multi_device::{stack, unstack};
use crate::filecheck::{run_checks, Check, CheckKind};
use hlojit::{parse_module_bytes, CompileOptions, Executable};
use hlojit_compiler::hlo::text::{parse_literal, parse_shape};
use hlojit_runtime::{ArrayLiteral, Literal};
use std::path::Path;

/// What a file test asks for.
#[derive(Debug, Default)]
pub struct FileTest {
    /// `// input:` directives: the argument leaves, in order.
    pub inputs: Vec<ArrayLiteral>,
    /// `// expect:` directives: the expected result leaves, in order.
    pub expected: Vec<ArrayLiteral>,
    /// `rtol=` of `// tolerance:` (0 when absent).
    pub rtol: f64,
    /// `atol=` of `// tolerance:` (0 when absent).
    pub atol: f64,
    /// True unless a `// tolerance:` directive is present: compare bitwise.
    pub exact: bool,
    /// `// infeed:` directives: arrays queued for the infeed, in order.
    pub infeed: Vec<ArrayLiteral>,
    /// `// outfeed:` directives: the arrays the program must outfeed, in order.
    pub outfeed: Vec<ArrayLiteral>,
    /// `// run-error:`: text the run's error must contain.
    pub run_error: Option<String>,
    /// `// error:`: text the compile error must contain; the test expects compilation to fail.
    pub error: Option<String>,
    /// `// check*:` lines, matched against the module after the HLO passes.
    pub hlo_checks: Vec<Check>,
    /// `// check-ir*:` lines, matched against the optimized LLVM IR.
    pub ir_checks: Vec<Check>,
    /// `// cpu:`: the CPU and feature string the checks compile for (the host's when absent),
    /// so that decisions that depend on the instruction set are pinned whatever machine runs
    /// the test.
    pub cpu: Option<(String, String)>,
}

/// Reads the directives of a file test.
pub fn parse_directives(text: &str) -> Result<FileTest, String> {
    let mut test = FileTest { exact: true, ..FileTest::default() };
    let mut lines = text.lines().enumerate().peekable();
    while let Some((n, line)) = lines.next() {
        let Some(body) = line.trim_start().strip_prefix("//") else { continue };
        let body = body.trim();
        let Some((key, rest)) = body.split_once(':') else { continue };
        let mut value = rest.trim().to_string();
        // Continue across comment lines while braces are unbalanced.
        while value.matches('{').count() > value.matches('}').count() {
            match lines.next() {
                Some((_, next)) => value.push_str(next.trim_start().trim_start_matches("//")),
                None => return Err(format!("line {}: unbalanced braces in {key}", n + 1)),
            }
        }
        match key.trim() {
            "input" => test.inputs.push(literal(&value).map_err(|e| format!("line {}: {e}", n + 1))?),
            "expect" => test.expected.push(literal(&value).map_err(|e| format!("line {}: {e}", n + 1))?),
            "infeed" => test.infeed.push(literal(&value).map_err(|e| format!("line {}: {e}", n + 1))?),
            "outfeed" => test.outfeed.push(literal(&value).map_err(|e| format!("line {}: {e}", n + 1))?),
            "run-error" => test.run_error = Some(value),
            "cpu" => {
                let (cpu, features) = value.split_once(' ').unwrap_or((value.as_str(), ""));
                test.cpu = Some((cpu.to_string(), features.trim().to_string()));
            }
            "tolerance" => {
                test.exact = false;
                for part in value.split_whitespace() {
                    let (k, v) = part.split_once('=').ok_or_else(|| format!("line {}: bad tolerance {part}", n + 1))?;
                    let v: f64 = v.parse().map_err(|_| format!("line {}: bad number {v}", n + 1))?;
                    match k {
                        "rtol" => test.rtol = v,
                        "atol" => test.atol = v,
                        _ => return Err(format!("line {}: unknown tolerance {k}", n + 1)),
                    }
                }
            }
            "error" => test.error = Some(value),
            key => {
                let (ir, kind) = match key {
                    "check" => (false, CheckKind::Check),
                    "check-next" => (false, CheckKind::Next),
                    "check-not" => (false, CheckKind::Not),
                    "check-ir" => (true, CheckKind::Check),
                    "check-ir-next" => (true, CheckKind::Next),
                    "check-ir-not" => (true, CheckKind::Not),
                    _ => continue,
                };
                let check = Check { kind, pattern: value, line: n + 1 };
                if ir { test.ir_checks.push(check) } else { test.hlo_checks.push(check) }
            }
        }
    }
    Ok(test)
}

/// `SHAPE LITERAL`, e.g. `f32[2] {1, 2}`.
fn literal(text: &str) -> Result<ArrayLiteral, String> {
    let split = shape_end(text).ok_or_else(|| format!("expected a shape and a literal, found '{text}'"))?;
    let shape = parse_shape(&text[..split]).map_err(|e| e.to_string())?;
    let lit = parse_literal(text[split..].trim(), &shape).map_err(|e| e.to_string())?;
    match lit {
        Literal::Array(a) => Ok(a),
        _ => Err("tuple literals are written as one directive per leaf".into()),
    }
}

/// The end of the leading `type[dims]` (and `{layout}` if any) in `text`.
fn shape_end(text: &str) -> Option<usize> {
    let close = text.find(']')? + 1;
    let rest = &text[close..];
    // A layout follows directly (`{1,0}`) only when the literal is written after a space.
    if rest.starts_with('{') {
        let end = rest.find('}')? + 1;
        return Some(close + end);
    }
    Some(close)
}

/// Matches the prepared HLO and the optimized LLVM IR against the test's checks.
fn check_decisions(text: &str, test: &FileTest, options: &CompileOptions) -> Result<(), String> {
    use hlojit_compiler::pipeline::{compile_to, prepare, OutputKind};
    let module = parse_module_bytes(text.as_bytes()).map_err(|e| e.to_string())?;
    let prepared = prepare(&module, options).map_err(|e| e.to_string())?;
    if !test.hlo_checks.is_empty() {
        run_checks(&hlojit_compiler::hlo::text::print_module(&prepared), &test.hlo_checks, "prepared HLO")?;
    }
    if !test.ir_checks.is_empty() {
        let ir = compile_to(&prepared, "entry", options, OutputKind::LlvmIr, true).map_err(|e| e.to_string())?;
        run_checks(&String::from_utf8_lossy(&ir), &test.ir_checks, "LLVM IR")?;
    }
    Ok(())
}

/// Every array the run outfed, in order (stacked over the devices of a multi-device program,
/// which must each outfeed as many).
fn outfed(exe: &Executable) -> Result<Vec<ArrayLiteral>, String> {
    let per_device: Vec<Vec<ArrayLiteral>> = (0..exe.num_devices())
        .map(|d| {
            let mut arrays = Vec::new();
            while exe.outfeed_len(d) > 0 {
                let leaves = exe.outfeed(d, std::time::Duration::ZERO).map_err(|e| e.to_string())?;
                arrays.extend(leaves.iter().map(|b| b.to_literal()));
            }
            Ok(arrays)
        })
        .collect::<Result<_, String>>()?;
    if per_device.len() == 1 {
        return Ok(per_device.into_iter().next().unwrap_or_default());
    }
    let count = per_device[0].len();
    if per_device.iter().any(|a| a.len() != count) {
        return Err(format!("devices outfed different numbers of arrays: {:?}", per_device.iter().map(Vec::len).collect::<Vec<_>>()));
    }
    (0..count).map(|k| stack(&per_device.iter().map(|a| &a[k]).collect::<Vec<_>>())).collect()
}

/// Runs one file test; `Err` describes the failure.
pub fn run_file(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let test = parse_directives(&text)?;
    let options = CompileOptions { verify_passes: true, ..CompileOptions::default() };
    if !test.hlo_checks.is_empty() || !test.ir_checks.is_empty() {
        let mut options = options.clone();
        if let Some((cpu, features)) = &test.cpu {
            options.target.cpu = Some(cpu.clone());
            options.target.features = Some(features.clone());
        }
        check_decisions(&text, &test, &options)?;
        if test.expected.is_empty() && test.error.is_none() && test.run_error.is_none() && test.outfeed.is_empty() {
            return Ok(());
        }
    }
    let compiled = parse_module_bytes(text.as_bytes())
        .map_err(|e| e.to_string())
        .and_then(|m| Executable::compile(&m, &options).map_err(|e| e.to_string()));
    if let Some(want) = &test.error {
        return match compiled {
            Ok(_) => Err(format!("compiled, but an error containing '{want}' was expected")),
            Err(e) if e.contains(want.as_str()) => Ok(()),
            Err(e) => Err(format!("error '{e}' does not contain '{want}'")),
        };
    }
    let exe = compiled?;
    let devices = exe.num_devices();
    for array in &test.infeed {
        let parts = if devices > 1 { unstack(array, devices)? } else { vec![array.clone()] };
        for (d, part) in parts.into_iter().enumerate() {
            exe.infeed(d, &Literal::Array(part)).map_err(|e| e.to_string())?;
        }
    }
    exe.set_transfer_wait_limit(std::time::Duration::ZERO);
    // The results as leaves: stacked over the devices, or the one device's.
    let run: Result<Vec<ArrayLiteral>, String> = if devices > 1 {
        crate::conformance::run_stacked(&exe, devices, test.inputs, &hlojit::RunOptions::default())
    } else {
        Literal::group_leaves(exe.parameter_shapes(), test.inputs)
            .and_then(|args| exe.run_literals(&args).map_err(|e| e.to_string()))
            .map(|r| r.leaves().into_iter().cloned().collect())
    };
    if let Some(want) = &test.run_error {
        return match run {
            Ok(_) => Err(format!("ran, but an error containing '{want}' was expected")),
            Err(e) if e.contains(want.as_str()) => Ok(()),
            Err(e) => Err(format!("run error '{e}' does not contain '{want}'")),
        };
    }
    let got = run?;
    let outfed = outfed(&exe)?;
    if outfed.len() != test.outfeed.len() {
        return Err(format!("{} arrays outfed, {} expected", outfed.len(), test.outfeed.len()));
    }
    for (k, (g, w)) in outfed.iter().zip(&test.outfeed).enumerate() {
        if let Some(diff) = compare(g, w, test.exact, test.rtol, test.atol) {
            return Err(format!("outfeed {k}: {diff}"));
        }
    }
    if got.len() != test.expected.len() {
        return Err(format!("{} results, {} expected", got.len(), test.expected.len()));
    }
    for (i, (g, w)) in got.iter().zip(&test.expected).enumerate() {
        if let Some(diff) = compare(g, w, test.exact, test.rtol, test.atol) {
            return Err(format!("result {i}: {diff}"));
        }
    }
    Ok(())
}

