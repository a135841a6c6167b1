//! A character cursor over MLIR text with line:column positions, shared by the type, attribute
//! and op parsers. MLIR's grammar is context-sensitive (`2x3xf32` inside `tensor<...>`,
//! `[3:4]` slices in pretty forms), so the parsers read characters rather than a token stream.

use crate::error::Error;

/// Result of the MLIR text parsers; errors are `Error::Parse` with line:column.
pub type PResult<T> = Result<T, Error>;

#[derive(Clone)]
pub struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(text: &'a str) -> Cursor<'a> {
        Cursor { text, pos: 0 }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn set_pos(&mut self, pos: usize) {
        self.pos = pos;
    }

    pub fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    /// 1-based line and column (in characters) of byte offset `pos`.
    pub fn line_col(&self, pos: usize) -> (usize, usize) {
        let before = &self.text[..pos.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, column)
    }

    pub fn error_at(&self, pos: usize, message: impl Into<String>) -> Error {
        let (line, column) = self.line_col(pos);
        Error::Parse { line, column, message: message.into() }
    }

    /// An error at the current position that shows the text found there.
    pub fn error(&self, message: impl Into<String>) -> Error {
        let found: String = self.rest().chars().take(24).take_while(|&c| c != '\n').collect();
        let message = message.into();
        if found.is_empty() {
            self.error_at(self.pos, format!("{message}, found the end of the line"))
        } else {
            self.error_at(self.pos, format!("{message}, found '{found}'"))
        }
    }

    /// Skips white space and `//` comments.
    pub fn skip_ws(&mut self) {
        loop {
            let rest = self.rest();
            let trimmed = rest.trim_start();
            self.pos += rest.len() - trimmed.len();
            if trimmed.starts_with("//") {
                self.pos += trimmed.find('\n').unwrap_or(trimmed.len());
            } else {
                return;
            }
        }
    }

    pub fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.rest().chars().next()
    }

    pub fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    /// Skips white space; true (and consumes it) if the text continues with `s`.
    pub fn eat(&mut self, s: &str) -> bool {
        self.skip_ws();
        if self.rest().starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    /// Like `eat` for a keyword: `s` must not continue as an identifier.
    pub fn eat_word(&mut self, s: &str) -> bool {
        self.skip_ws();
        let rest = self.rest();
        if rest.starts_with(s) && !rest[s.len()..].starts_with(|c: char| is_ident_char(c)) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    pub fn expect(&mut self, s: &str) -> PResult<()> {
        if self.eat(s) {
            Ok(())
        } else {
            Err(self.error(format!("expected '{s}'")))
        }
    }

    /// A bare identifier: letters, digits, `_`, `$`, `.`, `-` after the first character.
    pub fn ident(&mut self) -> PResult<&'a str> {
        self.skip_ws();
        let rest = self.rest();
        if !rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            return Err(self.error("expected an identifier"));
        }
        let len = rest.find(|c: char| !is_ident_char(c)).unwrap_or(rest.len());
        self.pos += len;
        Ok(&rest[..len])
    }

    /// The name after a sigil (`%`, `@`, `^`, `#`, `!`): an identifier, a number, or a string.
    pub fn sigil_name(&mut self, sigil: char) -> PResult<String> {
        self.skip_ws();
        let start = self.pos;
        if !self.rest().starts_with(sigil) {
            return Err(self.error(format!("expected '{sigil}'")));
        }
        self.pos += 1;
        if self.rest().starts_with('"') {
            return self.string();
        }
        let rest = self.rest();
        let len = rest.find(|c: char| !is_ident_char(c)).unwrap_or(rest.len());
        if len == 0 {
            return Err(self.error_at(start, format!("expected a name after '{sigil}'")));
        }
        self.pos += len;
        Ok(rest[..len].to_string())
    }

    /// A string literal with MLIR's escapes (`\"`, `\\`, `\n`, `\t`, two hex digits).
    pub fn string(&mut self) -> PResult<String> {
        self.skip_ws();
        let start = self.pos;
        if !self.rest().starts_with('"') {
            return Err(self.error("expected a string"));
        }
        self.pos += 1;
        let mut bytes = Vec::new();
        loop {
            let rest = self.rest().as_bytes();
            let Some(&b) = rest.first() else {
                return Err(self.error_at(start, "unterminated string"));
            };
            self.pos += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let Some(&e) = rest.get(1) else {
                        return Err(self.error_at(start, "unterminated string"));
                    };
                    self.pos += 1;
                    match e {
                        b'n' => bytes.push(b'\n'),
                        b't' => bytes.push(b'\t'),
                        b'"' | b'\\' => bytes.push(e),
                        _ => {
                            let hex = std::str::from_utf8(rest.get(1..3).unwrap_or(&[])).unwrap_or("");
                            let v = u8::from_str_radix(hex, 16)
                                .map_err(|_| self.error_at(self.pos - 2, "bad escape in string"))?;
                            bytes.push(v);
                            self.pos += 1;
                        }
                    }
                }
                _ => bytes.push(b),
            }
        }
        // Strings may hold arbitrary bytes (escaped); keep them losslessly as Latin-1 if not UTF-8.
        Ok(String::from_utf8(bytes.clone()).unwrap_or_else(|_| bytes.iter().map(|&b| b as char).collect()))
    }

    /// An integer literal (decimal or `0x` hex), with an optional sign.
    pub fn integer(&mut self) -> PResult<i128> {
        self.skip_ws();
        let start = self.pos;
        let negative = self.eat("-");
        let rest = self.rest();
        let (digits, radix) = if rest.starts_with("0x") { (&rest[2..], 16) } else { (rest, 10) };
        let len = digits.find(|c: char| !c.is_digit(radix)).unwrap_or(digits.len());
        if len == 0 {
            self.pos = start;
            return Err(self.error("expected an integer"));
        }
        let v = i128::from_str_radix(&digits[..len], radix).map_err(|_| self.error_at(start, "integer out of range"))?;
        self.pos += len + if radix == 16 { 2 } else { 0 };
        Ok(if negative { -v } else { v })
    }

    /// A number as written: integer or float text (`1`, `-2.5e+01`, `0x7FC00000`), unparsed.
    pub fn number_text(&mut self) -> PResult<&'a str> {
        self.skip_ws();
        let rest = self.rest();
        let mut len = 0;
        let b = rest.as_bytes();
        if b.first() == Some(&b'-') || b.first() == Some(&b'+') {
            len += 1;
        }
        if rest[len..].starts_with("0x") {
            len += 2;
            while b.get(len).is_some_and(|c| c.is_ascii_hexdigit()) {
                len += 1;
            }
        } else {
            while let Some(&c) = b.get(len) {
                let prev = if len > 0 { b[len - 1] } else { 0 };
                if c.is_ascii_digit() || c == b'.' || c == b'e' || c == b'E' || ((c == b'-' || c == b'+') && (prev == b'e' || prev == b'E')) {
                    len += 1;
                } else {
                    break;
                }
            }
        }
        let digits = rest[..len].trim_start_matches(['-', '+']);
        if digits.is_empty() || !digits.starts_with(|c: char| c.is_ascii_digit()) {
            // `inf`, `nan` are not MLIR syntax, but be lenient for hand-written input.
            for word in ["inf", "-inf", "nan", "-nan"] {
                if rest.starts_with(word) {
                    self.pos += word.len();
                    return Ok(&rest[..word.len()]);
                }
            }
            return Err(self.error("expected a number"));
        }
        self.pos += len;
        Ok(&rest[..len])
    }

    /// Skips a balanced group starting at the current `open` character (strings respected).
    pub fn skip_balanced(&mut self, open: char, close: char) -> PResult<()> {
        self.skip_ws();
        let start = self.pos;
        let mut depth = 0usize;
        let mut chars = self.rest().char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    let mut escaped = false;
                    for (_, d) in chars.by_ref() {
                        if escaped {
                            escaped = false;
                        } else if d == '\\' {
                            escaped = true;
                        } else if d == '"' {
                            break;
                        }
                    }
                }
                _ if c == open => depth += 1,
                // `->` inside `<...>` (sharding rules) is not a closing bracket.
                '>' if close == '>' && i > 0 && self.rest().as_bytes()[i - 1] == b'-' => {}
                _ if c == close => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        self.pos = start + i + c.len_utf8();
                        return Ok(());
                    }
                }
                _ => {}
            }
        }
        Err(self.error_at(start, format!("unbalanced '{open}'")))
    }
}

pub fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '.' || c == '-'
}
