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
//! - `// tolerance: rtol=R atol=A`: compare floats within `atol + rtol * |expected|`
//!   (default: exact, any NaN matching any NaN).
//! - `// error: TEXT`: compiling (parsing, verifying or lowering) must fail with a message
//!   containing TEXT.
//! - `// check: TEXT`, `// check-next: TEXT`, `// check-not: TEXT`: the module after hlojit's
//!   HLO passes, printed as HLO text, must match (see [`crate::filecheck`]); these pin what
//!   the compiler decided. `// check-ir:`, `// check-ir-next:`, `// check-ir-not:` match the
//!   optimized LLVM IR instead. A test with checks and no `// expect:` is not run.
//!
//! A directive may continue on the following comment lines while its braces are open.
//!
//! A module for several devices (`replica_count` / `num_partitions` above 1) runs on all of
//! them: each input and each expected result is written stacked over the devices along a new
//! leading dimension (global device order), as in the conformance corpus.

use crate::conformance::compare::compare;
use crate::filecheck::{run_checks, Check, CheckKind};
use hlojit::{parse_module, CompileOptions, Executable};
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
    /// `// error:`: text the compile error must contain; the test expects compilation to fail.
    pub error: Option<String>,
    /// `// check*:` lines, matched against the module after the HLO passes.
    pub hlo_checks: Vec<Check>,
    /// `// check-ir*:` lines, matched against the optimized LLVM IR.
    pub ir_checks: Vec<Check>,
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
    let module = parse_module(text).map_err(|e| e.to_string())?;
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

/// Runs one file test; `Err` describes the failure.
pub fn run_file(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let test = parse_directives(&text)?;
    let options = CompileOptions { verify_passes: true, ..CompileOptions::default() };
    if !test.hlo_checks.is_empty() || !test.ir_checks.is_empty() {
        check_decisions(&text, &test, &options)?;
        if test.expected.is_empty() && test.error.is_none() {
            return Ok(());
        }
    }
    let compiled = parse_module(&text)
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
    let (stacked, result);
    let got: Vec<&ArrayLiteral> = if exe.num_devices() > 1 {
        stacked = crate::conformance::run_stacked(&exe, exe.num_devices(), test.inputs, &hlojit::RunOptions::default())?;
        stacked.iter().collect()
    } else {
        let args = Literal::group_leaves(exe.parameter_shapes(), test.inputs)?;
        result = exe.run_literals(&args).map_err(|e| e.to_string())?;
        result.leaves()
    };
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

