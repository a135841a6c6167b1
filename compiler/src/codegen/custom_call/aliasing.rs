//! `output_to_operand_aliasing={{0}: (0, {}), ...}`: which output of a custom call shares its
//! buffer with which operand, i.e. which results a target computes in place over its input.

/// One pair: the output at `output` (a shape index) starts as operand `operand`'s value at
/// `operand_index`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputAlias {
    pub output: Vec<i64>,
    pub operand: usize,
    pub operand_index: Vec<i64>,
}

/// Parses the attribute's value as written (braces included).
pub fn parse_output_aliasing(text: &str) -> Result<Vec<OutputAlias>, String> {
    let mut c = Cur { s: text.as_bytes(), pos: 0 };
    let bad = |c: &Cur, what: &str| format!("output_to_operand_aliasing at byte {}: {what}", c.pos);
    c.expect(b'{').map_err(|w| bad(&c, &w))?;
    let mut out = Vec::new();
    if c.eat(b'}') {
        return c.end().map(|_| out).map_err(|w| bad(&c, &w));
    }
    loop {
        let output = c.index().map_err(|w| bad(&c, &w))?;
        c.expect(b':').map_err(|w| bad(&c, &w))?;
        c.expect(b'(').map_err(|w| bad(&c, &w))?;
        let operand = c.int().map_err(|w| bad(&c, &w))?;
        let operand = usize::try_from(operand).map_err(|_| bad(&c, "negative operand number"))?;
        c.expect(b',').map_err(|w| bad(&c, &w))?;
        let operand_index = c.index().map_err(|w| bad(&c, &w))?;
        c.expect(b')').map_err(|w| bad(&c, &w))?;
        out.push(OutputAlias { output, operand, operand_index });
        if c.eat(b'}') {
            break;
        }
        c.expect(b',').map_err(|w| bad(&c, &w))?;
    }
    c.end().map_err(|w| bad(&c, &w))?;
    Ok(out)
}

struct Cur<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Cur<'_> {
    fn ws(&mut self) {
        while self.s.get(self.pos).is_some_and(u8::is_ascii_whitespace) {
            self.pos += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.pos) == Some(&c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected '{}'", c as char))
        }
    }
    fn end(&mut self) -> Result<(), String> {
        self.ws();
        if self.pos == self.s.len() {
            Ok(())
        } else {
            Err("unexpected text".into())
        }
    }
    fn int(&mut self) -> Result<i64, String> {
        self.ws();
        let start = self.pos;
        if self.s.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        while self.s.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        std::str::from_utf8(&self.s[start..self.pos])
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| "expected a number".into())
    }
    /// `{}` or `{1, 2}`.
    fn index(&mut self) -> Result<Vec<i64>, String> {
        self.expect(b'{')?;
        let mut v = Vec::new();
        if self.eat(b'}') {
            return Ok(v);
        }
        loop {
            v.push(self.int()?);
            if self.eat(b'}') {
                return Ok(v);
            }
            self.expect(b',')?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_forms_jax_prints() {
        assert_eq!(
            parse_output_aliasing("{{0}: (0, {})}").unwrap(),
            vec![OutputAlias { output: vec![0], operand: 0, operand_index: vec![] }]
        );
        assert_eq!(
            parse_output_aliasing("{{}: (1, {}), {2, 0}: (0, {1})}").unwrap(),
            vec![
                OutputAlias { output: vec![], operand: 1, operand_index: vec![] },
                OutputAlias { output: vec![2, 0], operand: 0, operand_index: vec![1] },
            ]
        );
        assert_eq!(parse_output_aliasing("{}").unwrap(), vec![]);
        assert!(parse_output_aliasing("{{0}: (x, {})}").is_err());
        assert!(parse_output_aliasing("{{0}: (0, {})").is_err());
    }
}
