//! Attributes hlojit keeps as text (`metadata={...}`, `frontend_attributes={...}`) read back
//! into their proto messages: `{key=value key="quoted, value" ...}`, pairs separated by
//! spaces or commas, quoted values with C escapes.

use super::messages::OpMetadata;
use std::collections::BTreeMap;

/// The `key=value` pairs of a braced attribute, in order; `None` when the text is not one.
fn pairs(text: &str) -> Option<Vec<(String, String)>> {
    let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?;
    let mut out = Vec::new();
    let mut chars = inner.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        if chars.peek().is_none() {
            return Some(out);
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' {
                break;
            }
            key.push(c);
            chars.next();
        }
        chars.next()?; // '='
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next()? {
                    '"' => break,
                    '\\' => match chars.next()? {
                        'n' => value.push('\n'),
                        't' => value.push('\t'),
                        c => value.push(c),
                    },
                    c => value.push(c),
                }
            }
        } else {
            // A bare value may itself be braced (`composite.attributes={n = 1 : i32}`).
            let mut depth = 0usize;
            while let Some(&c) = chars.peek() {
                if depth == 0 && (c.is_whitespace() || c == ',') {
                    break;
                }
                match c {
                    '{' => depth += 1,
                    '}' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                value.push(c);
                chars.next();
            }
        }
        out.push((key.trim().to_string(), value));
    }
}

/// `metadata={op_name="..." source_file="..." source_line=N}`: the fields `as_text` shows.
pub fn metadata(text: &str) -> Option<OpMetadata> {
    let mut m = OpMetadata::default();
    for (key, value) in pairs(text)? {
        match key.as_str() {
            "op_type" => m.op_type = value,
            "op_name" => m.op_name = value,
            "source_file" => m.source_file = value,
            "source_line" => m.source_line = value.parse().unwrap_or(0),
            _ => {}
        }
    }
    Some(m)
}

/// `frontend_attributes={key="value",...}`; text that does not parse gives an empty map.
pub fn frontend_attributes(text: &str) -> BTreeMap<String, String> {
    pairs(text).unwrap_or_default().into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_quoted_and_bare_values() {
        let m = metadata(r#"{op_name="jit(f)/add \"x\"" source_file="/a, b.py" source_line=12}"#).unwrap();
        assert_eq!(m.op_name, "jit(f)/add \"x\"");
        assert_eq!(m.source_file, "/a, b.py");
        assert_eq!(m.source_line, 12);
        let f = frontend_attributes(r#"{composite.name="my.op",composite.version="1", x=y, composite.attributes={n = 1 : i32}}"#);
        assert_eq!(f.get("composite.name").map(String::as_str), Some("my.op"));
        assert_eq!(f.get("composite.version").map(String::as_str), Some("1"));
        assert_eq!(f.get("x").map(String::as_str), Some("y"));
        assert_eq!(f.get("composite.attributes").map(String::as_str), Some("{n = 1 : i32}"));
        assert!(metadata("not braced").is_none());
        assert!(frontend_attributes("{unterminated=\"").is_empty());
    }
}
