//! FileCheck-style matching of a compiler's output against `// check:` lines, as LLVM's
//! FileCheck and cranelift's filetests do, so that tests pin what the compiler decided (what
//! was fused, where a copy went) and not only the numbers it computed.
//!
//! - `check: TEXT`: a line containing TEXT, after the line the previous check matched;
//! - `check-next: TEXT`: the line right after the previous match contains TEXT;
//! - `check-not: TEXT`: no line between the previous match and the next one (or the end)
//!   contains TEXT.
//!
//! TEXT is matched as a substring after trimming; `{{...}}` stands for any text, so
//! `fusion({{.*}}), kind=kLoop` matches whatever the operands are.

/// How a check line matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckKind {
    /// `check:`.
    Check,
    /// `check-next:`.
    Next,
    /// `check-not:`.
    Not,
}

/// One check line of a test.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub kind: CheckKind,
    /// What the output line must (or, for `check-not`, must not) contain.
    pub pattern: String,
    /// The check's own line in the test file, for messages.
    pub line: usize,
}

/// Whether `line` contains `pattern`, where each `{{...}}` in the pattern matches any text.
fn matches(line: &str, pattern: &str) -> bool {
    let mut rest = line;
    for piece in split_wildcards(pattern.trim()) {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

fn split_wildcards(pattern: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = pattern;
    while let Some(open) = rest.find("{{") {
        pieces.push(&rest[..open]);
        match rest[open..].find("}}") {
            Some(close) => rest = &rest[open + close + 2..],
            None => {
                rest = "";
                break;
            }
        }
    }
    pieces.push(rest);
    pieces
}

/// Matches `output` against `checks` in order; `Err` says which check failed and where.
pub fn run_checks(output: &str, checks: &[Check], what: &str) -> Result<(), String> {
    let lines: Vec<&str> = output.lines().collect();
    let mut pos = 0usize;
    let mut nots: Vec<&Check> = Vec::new();
    let not_between = |nots: &[&Check], from: usize, to: usize| -> Result<(), String> {
        for not in nots {
            if let Some(k) = (from..to).find(|&k| matches(lines[k], &not.pattern)) {
                return Err(format!("check-not '{}' (line {}) matched {what} line {}: {}", not.pattern, not.line, k + 1, lines[k].trim()));
            }
        }
        Ok(())
    };
    for check in checks {
        match check.kind {
            CheckKind::Not => nots.push(check),
            CheckKind::Check => {
                let Some(found) = (pos..lines.len()).find(|&k| matches(lines[k], &check.pattern)) else {
                    return Err(format!(
                        "check '{}' (line {}) matches no line of the {what} after line {pos}:\n{output}",
                        check.pattern, check.line
                    ));
                };
                not_between(&nots, pos, found)?;
                nots.clear();
                pos = found + 1;
            }
            CheckKind::Next => {
                if !nots.is_empty() {
                    return Err(format!("check-next (line {}) cannot follow a check-not", check.line));
                }
                match lines.get(pos) {
                    Some(l) if matches(l, &check.pattern) => pos += 1,
                    other => {
                        return Err(format!(
                            "check-next '{}' (line {}): the {what}'s next line is {:?}:\n{output}",
                            check.pattern,
                            check.line,
                            other.map(|l| l.trim())
                        ))
                    }
                }
            }
        }
    }
    not_between(&nots, pos, lines.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(kind: CheckKind, pattern: &str) -> Check {
        Check { kind, pattern: pattern.into(), line: 1 }
    }

    const OUT: &str = "a = add(x, y)\nb = fusion(a, z), kind=kLoop\nc = copy(b)\nROOT d = negate(c)";

    #[test]
    fn checks_match_in_order() {
        use CheckKind::*;
        assert!(run_checks(OUT, &[check(Check, "add("), check(Check, "fusion({{.*}}), kind=kLoop")], "HLO").is_ok());
        assert!(run_checks(OUT, &[check(Check, "fusion("), check(Check, "add(")], "HLO").is_err());
        assert!(run_checks(OUT, &[check(Check, "fusion("), check(Next, "copy(")], "HLO").is_ok());
        assert!(run_checks(OUT, &[check(Check, "add("), check(Next, "copy(")], "HLO").is_err());
        assert!(run_checks(OUT, &[check(Check, "add("), check(Not, "copy("), check(Check, "negate")], "HLO").is_err());
        assert!(run_checks(OUT, &[check(Check, "copy("), check(Not, "add(")], "HLO").is_ok());
        assert!(run_checks(OUT, &[check(Not, "multiply(")], "HLO").is_ok());
        assert!(run_checks(OUT, &[check(Check, "fusion({{.*}}), kind=kInput")], "HLO").is_err());
    }
}
