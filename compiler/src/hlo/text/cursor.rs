//! A cursor over HLO text: the lexer the recursive-descent parser pulls tokens from.
//!
//! HLO's token set depends on context (`3x3` is one window size, `b01f_01io->b01f` one
//! dimension-label string, `{...}` after `metadata=` is kept verbatim), so instead of a separate
//! token stream the parser asks the cursor for the kind of token it expects next. The cursor
//! works on bytes (all of HLO's syntax is ASCII; non-ASCII only occurs inside strings and
//! verbatim values) and turns byte offsets into 1-based line:column only when reporting errors.

use crate::error::Error;

/// Deepest nesting of tuples and braces the parser follows; deeper input is rejected instead of
/// risking the stack.
pub(crate) const MAX_DEPTH: usize = 64;

pub(crate) type PResult<T> = Result<T, Error>;

pub(crate) struct Cursor<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

/// Characters of instruction, computation and attribute names.
pub(crate) fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')
}

impl<'a> Cursor<'a> {
    pub fn new(text: &'a str) -> Cursor<'a> {
        Cursor {
            text,
            bytes: text.as_bytes(),
            pos: 0,
        }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn set_pos(&mut self, pos: usize) {
        self.pos = pos.min(self.bytes.len());
    }

    /// The text between two byte offsets (empty if they do not delimit valid UTF-8).
    pub fn slice(&self, from: usize, to: usize) -> &'a str {
        self.text.get(from..to).unwrap_or("")
    }

    /// Bytes left after the cursor.
    pub fn remaining_len(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// The byte at the cursor, without skipping anything.
    pub fn peek_raw(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    pub fn peek_raw_at(&self, offset: usize) -> Option<u8> {
        self.bytes.get(self.pos + offset).copied()
    }

    pub fn bump(&mut self) {
        if self.pos < self.bytes.len() {
            self.pos += 1;
        }
    }

    /// True if the raw text at the cursor starts with `s`.
    pub fn starts_with(&self, s: &str) -> bool {
        self.bytes
            .get(self.pos..)
            .is_some_and(|rest| rest.starts_with(s.as_bytes()))
    }

    /// Skips whitespace, `/* ... */` and `// ...` comments (XLA prints `/*index=5*/` inside
    /// long lists).
    pub fn skip_trivia(&mut self) {
        self.skip(true);
    }

    /// Like [`Cursor::skip_trivia`] but stops at line ends (for values that end with the line).
    pub fn skip_inline_trivia(&mut self) {
        self.skip(false);
    }

    fn skip(&mut self, newlines: bool) {
        loop {
            match self.peek_raw() {
                Some(b' ' | b'\t') => self.pos += 1,
                Some(b'\n' | b'\r') if newlines => self.pos += 1,
                Some(b'/') if self.peek_raw_at(1) == Some(b'*') => {
                    match self
                        .text
                        .get(self.pos + 2..)
                        .and_then(|rest| rest.find("*/"))
                    {
                        Some(end) => self.pos += 2 + end + 2,
                        // An unterminated comment runs to the end; the caller then reports
                        // whatever it expected as missing.
                        None => self.pos = self.bytes.len(),
                    }
                }
                Some(b'/') if self.peek_raw_at(1) == Some(b'/') => {
                    while !matches!(self.peek_raw(), None | Some(b'\n')) {
                        self.pos += 1;
                    }
                }
                _ => return,
            }
        }
    }

    /// The next byte after trivia.
    pub fn peek(&mut self) -> Option<u8> {
        self.skip_trivia();
        self.peek_raw()
    }

    pub fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    /// Consumes `b` (after trivia) if it is next.
    pub fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Consumes `s` (after trivia) if it is next.
    pub fn eat_str(&mut self, s: &str) -> bool {
        self.skip_trivia();
        if self.starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    /// Consumes `b` or fails with "expected 'b' {context}, found ...".
    pub fn expect(&mut self, b: u8, context: &str) -> PResult<()> {
        if self.eat(b) {
            Ok(())
        } else {
            let what = format!("'{}' {context}", b as char);
            Err(self.expected(what.trim_end()))
        }
    }

    /// "expected {what}, found {next token}", at the next token.
    pub fn expected(&mut self, what: &str) -> Error {
        self.skip_trivia();
        let found = self.describe_at(self.pos);
        self.error_at(self.pos, format!("expected {what}, found {found}"))
    }

    pub fn error_at(&self, pos: usize, message: impl Into<String>) -> Error {
        let (line, column) = self.line_col(pos);
        Error::Parse {
            line,
            column,
            message: message.into(),
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, pos: usize) -> (usize, usize) {
        let pos = pos.min(self.bytes.len());
        let before = &self.bytes[..pos];
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
        // Count characters, not bytes: skip UTF-8 continuation bytes.
        let column = 1 + before[line_start..]
            .iter()
            .filter(|&&b| b & 0xC0 != 0x80)
            .count();
        (line, column)
    }

    /// A short description of the token at `pos` for error messages.
    pub fn describe_at(&self, pos: usize) -> String {
        match self.bytes.get(pos) {
            None => "end of input".to_string(),
            Some(b'\n' | b'\r') => "end of line".to_string(),
            Some(&b) if is_name_byte(b) => {
                let len = self.bytes[pos..]
                    .iter()
                    .take_while(|&&b| is_name_byte(b))
                    .count();
                let shown = len.min(40);
                let dots = if len > shown { "..." } else { "" };
                format!("'{}{dots}'", self.slice(pos, pos + shown))
            }
            Some(&b) if b.is_ascii() => format!("'{}'", b as char),
            Some(_) => match self.text.get(pos..).and_then(|s| s.chars().next()) {
                Some(ch) => format!("'{ch}'"),
                None => "a non-UTF-8 byte".to_string(),
            },
        }
    }

    /// A run of name characters starting with a letter or `_` (keywords, opcodes, attribute
    /// keys, element types), after trivia. Returns its start offset and text.
    pub fn ident(&mut self) -> Option<(usize, &'a str)> {
        self.skip_trivia();
        let start = self.pos;
        match self.peek_raw() {
            Some(b) if b.is_ascii_alphabetic() || b == b'_' => {}
            _ => return None,
        }
        while self.peek_raw().is_some_and(is_name_byte) {
            self.pos += 1;
        }
        Some((start, self.slice(start, self.pos)))
    }

    /// An instruction or computation name, with or without a leading `%` (which is dropped).
    pub fn name(&mut self) -> Option<(usize, &'a str)> {
        self.skip_trivia();
        let start = self.pos;
        let percent = self.peek_raw() == Some(b'%');
        if percent {
            self.pos += 1;
        }
        let name_start = self.pos;
        while self.peek_raw().is_some_and(is_name_byte) {
            self.pos += 1;
        }
        if self.pos == name_start {
            self.pos = start;
            return None;
        }
        Some((start, self.slice(name_start, self.pos)))
    }

    /// A name or an error saying what kind of name was expected.
    pub fn expect_name(&mut self, what: &str) -> PResult<(usize, &'a str)> {
        match self.name() {
            Some(n) => Ok(n),
            None => Err(self.expected(what)),
        }
    }

    /// A decimal integer with an optional sign, after trivia.
    pub fn int(&mut self, what: &str) -> PResult<i64> {
        self.skip_trivia();
        self.int_here(what)
    }

    /// A decimal integer starting exactly at the cursor (inside tokens like `1_2x3_4`).
    pub fn int_here(&mut self, what: &str) -> PResult<i64> {
        let start = self.pos;
        let negative = match self.peek_raw() {
            Some(b'-') => {
                self.pos += 1;
                true
            }
            Some(b'+') => {
                self.pos += 1;
                false
            }
            _ => false,
        };
        let digits_start = self.pos;
        let mut value: i64 = 0;
        let mut overflow = false;
        while let Some(b) = self.peek_raw().filter(u8::is_ascii_digit) {
            let digit = i64::from(b - b'0');
            // Accumulate negatively so that i64::MIN is representable.
            match value.checked_mul(10).and_then(|v| v.checked_sub(digit)) {
                Some(v) => value = v,
                None => overflow = true,
            }
            self.pos += 1;
        }
        if self.pos == digits_start {
            self.pos = start;
            return Err(self.expected(what));
        }
        let value = if negative {
            Some(value)
        } else {
            value.checked_neg()
        };
        match value {
            Some(v) if !overflow => Ok(v),
            _ => Err(self.error_at(
                start,
                format!(
                    "{what} '{}' does not fit in 64 bits",
                    self.slice(start, self.pos)
                ),
            )),
        }
    }

    /// An integer that must not be negative.
    pub fn non_negative(&mut self, what: &str) -> PResult<i64> {
        self.skip_trivia();
        let start = self.pos;
        let v = self.int_here(what)?;
        if v < 0 {
            return Err(self.error_at(start, format!("{what} must not be negative, found {v}")));
        }
        Ok(v)
    }

    /// `true` or `false`.
    pub fn bool_value(&mut self, what: &str) -> PResult<bool> {
        let save = self.pos;
        match self.ident() {
            Some((_, "true")) => Ok(true),
            Some((_, "false")) => Ok(false),
            _ => {
                self.pos = save;
                Err(self.expected(&format!("true or false for {what}")))
            }
        }
    }

    /// A double-quoted string with C escapes; returns the unescaped contents.
    pub fn string(&mut self, what: &str) -> PResult<String> {
        self.skip_trivia();
        let start = self.pos;
        if self.peek_raw() != Some(b'"') {
            return Err(self.expected(what));
        }
        self.pos += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(b) = self.peek_raw() else {
                return Err(self.error_at(start, "unterminated string"));
            };
            self.pos += 1;
            match b {
                b'"' => break,
                b'\\' => out.extend(self.escape(start)?),
                b'\n' => {
                    return Err(self.error_at(start, "unterminated string (end of line inside it)"))
                }
                _ => out.push(b),
            }
        }
        Ok(String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }

    /// One escape sequence after a backslash.
    fn escape(&mut self, string_start: usize) -> PResult<Option<u8>> {
        let Some(b) = self.peek_raw() else {
            return Err(self.error_at(string_start, "unterminated string"));
        };
        self.pos += 1;
        let simple = match b {
            b'n' => Some(b'\n'),
            b't' => Some(b'\t'),
            b'r' => Some(b'\r'),
            b'a' => Some(7),
            b'b' => Some(8),
            b'f' => Some(12),
            b'v' => Some(11),
            b'\\' | b'"' | b'\'' | b'?' => Some(b),
            _ => None,
        };
        if simple.is_some() {
            return Ok(simple);
        }
        let (radix, max_len, first) = match b {
            b'x' => (16, 2, None),
            b'0'..=b'7' => (8, 3, Some(b)),
            _ => {
                return Err(self.error_at(
                    self.pos - 2,
                    format!("unknown escape '\\{}' in string", b as char),
                ))
            }
        };
        let mut value: u32 = first.map_or(0, |d| u32::from(d - b'0'));
        let mut len = usize::from(first.is_some());
        while len < max_len {
            match self.peek_raw().and_then(|d| (d as char).to_digit(radix)) {
                Some(d) => {
                    value = value * radix + d;
                    self.pos += 1;
                    len += 1;
                }
                None => break,
            }
        }
        if len == 0 || value > 255 {
            return Err(self.error_at(
                self.pos.saturating_sub(len + 2),
                "bad numeric escape in string",
            ));
        }
        Ok(Some(value as u8))
    }

    /// Skips a string whose opening quote is at the cursor, keeping it verbatim.
    fn skip_string(&mut self) -> PResult<()> {
        let start = self.pos;
        self.pos += 1;
        loop {
            match self.peek_raw() {
                None => return Err(self.error_at(start, "unterminated string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(b'\\') => self.pos = (self.pos + 2).min(self.bytes.len()),
                Some(_) => self.pos += 1,
            }
        }
    }

    /// An attribute value hlojit keeps verbatim: a balanced `{...}`, `(...)` or `[...]` group,
    /// a quoted string, or a bare word running to the next space, `,` or line end outside
    /// brackets and strings. Returns the text as written.
    pub fn raw_value(&mut self, what: &str) -> PResult<&'a str> {
        self.skip_inline_trivia();
        if self.peek_raw() == Some(b'"') {
            let start = self.pos;
            self.skip_string()?;
            return Ok(self.slice(start, self.pos));
        }
        let group = matches!(self.peek_raw(), Some(b'{' | b'(' | b'['));
        self.scan_verbatim(what, group)
    }

    /// A balanced `{...}` kept verbatim, braces included.
    pub fn braced_raw(&mut self, what: &str) -> PResult<&'a str> {
        self.skip_trivia();
        if self.peek_raw() != Some(b'{') {
            return Err(self.expected(&format!("'{{' to start {what}")));
        }
        self.balanced_group(what)
    }

    /// A balanced group starting at the opening bracket under the cursor, kept verbatim.
    pub fn balanced_group(&mut self, what: &str) -> PResult<&'a str> {
        self.scan_verbatim(what, true)
    }

    /// Scans text kept verbatim, checking that brackets match and skipping strings: up to the
    /// close of the group that starts under the cursor (`whole_group`), or else up to a space,
    /// `,`, line end or unmatched closer outside brackets.
    fn scan_verbatim(&mut self, what: &str, whole_group: bool) -> PResult<&'a str> {
        let start = self.pos;
        let mut open: Vec<(u8, usize)> = Vec::new();
        while let Some(b) = self.peek_raw() {
            match b {
                b'"' => {
                    self.skip_string()?;
                    continue;
                }
                b'{' | b'(' | b'[' => open.push((b, self.pos)),
                b'}' | b')' | b']' => {
                    let Some((opener, at)) = open.pop() else {
                        break;
                    };
                    let expected = matching_close(opener);
                    if b != expected {
                        return Err(self.error_at(
                            self.pos,
                            format!(
                                "expected '{}' to close the '{}' at {}, found '{}'",
                                expected as char,
                                opener as char,
                                self.position_text(at),
                                b as char
                            ),
                        ));
                    }
                    if whole_group && open.is_empty() {
                        self.pos += 1;
                        return Ok(self.slice(start, self.pos));
                    }
                }
                b',' | b' ' | b'\t' | b'\n' | b'\r' if open.is_empty() => break,
                _ => {}
            }
            self.pos += 1;
        }
        if let Some(&(opener, at)) = open.last() {
            return Err(self.error_at(
                at,
                format!("unterminated '{}' in {what}: no matching '{}'", opener as char, matching_close(opener) as char),
            ));
        }
        if self.pos == start || whole_group {
            return Err(self.expected(what));
        }
        Ok(self.slice(start, self.pos))
    }

    /// "line:column" of an offset, for messages that point back at an opener.
    pub fn position_text(&self, pos: usize) -> String {
        let (line, column) = self.line_col(pos);
        format!("{line}:{column}")
    }

    /// The rest of the current line (without the line break) and moves past it.
    pub fn rest_of_line(&mut self) -> &'a str {
        let start = self.pos;
        while !matches!(self.peek_raw(), None | Some(b'\n')) {
            self.pos += 1;
        }
        let line = self.slice(start, self.pos);
        self.bump();
        line.trim_end()
    }

    /// True if only spaces, tabs or comments remain on the current line.
    pub fn line_is_blank_from_here(&self) -> bool {
        let rest = &self.bytes[self.pos..];
        let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
        rest[..end].iter().all(|b| b.is_ascii_whitespace())
    }
}

fn matching_close(open: u8) -> u8 {
    match open {
        b'{' => b'}',
        b'(' => b')',
        _ => b']',
    }
}
