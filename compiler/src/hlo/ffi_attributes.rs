//! Typed-FFI attributes: the MLIR dictionary JAX prints as a typed-FFI custom call's
//! `backend_config={alpha = 2.500000e+00 : f32, n = 3 : i32, name = "hi"}`, decoded into the
//! values XLA's FFI passes to handlers. XLA accepts booleans, integers of 8 to 64 bits (signed
//! or unsigned), f32/f64 floats, strings, dense arrays (`array<i32: 1, 2>`), dense elements
//! (`dense<[1, 2]> : tensor<2xi32>`) and nested dictionaries; a bare type (`dtype = f32`) is
//! passed as a `u8` scalar holding the XLA element-type number (what `ffi::DataType`
//! attributes decode from).

use hlojit_ffi::xla::*;
use hlojit_runtime::custom_call::{ArrayValue, AttrValue};

/// Parses a braced dictionary; the result is sorted by name, as XLA passes attributes.
pub fn parse_ffi_attributes(text: &str) -> Result<Vec<(String, AttrValue)>, String> {
    let mut p = P { s: text.as_bytes(), pos: 0 };
    p.ws();
    let dict = p.dict(0)?;
    p.ws();
    if p.pos != p.s.len() {
        return Err(p.err("text after the attribute dictionary"));
    }
    Ok(dict)
}

/// Element kinds of MLIR scalar types.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ty {
    Bool,
    Int { bits: u32, signed: bool },
    Float(u32),
}

struct P<'a> {
    s: &'a [u8],
    pos: usize,
}

const MAX_DEPTH: usize = 64;

impl<'a> P<'a> {
    fn err(&self, what: &str) -> String {
        format!("typed-FFI backend_config at byte {}: {what}", self.pos)
    }

    fn ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.peek() == Some(c) {
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
            Err(self.err(&format!("expected '{}'", c as char)))
        }
    }

    /// An identifier: letters, digits, `_`, `$`, `.`, `-` after a letter or `_`.
    fn ident(&mut self) -> Result<String, String> {
        self.ws();
        let start = self.pos;
        while let Some(c) = self.peek() {
            let ok =
                c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c == b'.' || (c == b'-' && self.pos > start);
            if !ok {
                break;
            }
            self.pos += 1;
        }
        if self.pos == start {
            return Err(self.err("expected a name"));
        }
        Ok(String::from_utf8_lossy(&self.s[start..self.pos]).into_owned())
    }

    fn string(&mut self) -> Result<String, String> {
        self.expect(b'"')?;
        let mut out = Vec::new();
        loop {
            let Some(c) = self.peek() else { return Err(self.err("unterminated string")) };
            self.pos += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let Some(e) = self.peek() else { return Err(self.err("unterminated escape")) };
                    self.pos += 1;
                    match e {
                        b'"' | b'\\' => out.push(e),
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        h if h.is_ascii_hexdigit() => {
                            // MLIR escapes other bytes as two hex digits.
                            let l =
                                self.peek().filter(u8::is_ascii_hexdigit).ok_or_else(|| self.err("bad hex escape"))?;
                            self.pos += 1;
                            let v = u8::from_str_radix(&format!("{}{}", h as char, l as char), 16)
                                .map_err(|e| e.to_string())?;
                            out.push(v);
                        }
                        other => return Err(self.err(&format!("unknown escape '\\{}'", other as char))),
                    }
                }
                c => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| self.err("string is not UTF-8"))
    }

    fn dict(&mut self, depth: usize) -> Result<Vec<(String, AttrValue)>, String> {
        if depth > MAX_DEPTH {
            return Err(self.err("dictionaries nest too deeply"));
        }
        self.expect(b'{')?;
        let mut out: Vec<(String, AttrValue)> = Vec::new();
        if self.eat(b'}') {
            return Ok(out);
        }
        loop {
            self.ws();
            let name = if self.peek() == Some(b'"') { self.string()? } else { self.ident()? };
            if !self.eat(b'=') {
                return Err(self.err(&format!(
                    "attribute '{name}' has no value (unit attributes are not supported by XLA's FFI)"
                )));
            }
            let value = self.value(depth)?;
            if out.iter().any(|(n, _)| *n == name) {
                return Err(self.err(&format!("attribute '{name}' appears twice")));
            }
            out.push((name, value));
            if self.eat(b'}') {
                break;
            }
            self.expect(b',')?;
        }
        out.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        Ok(out)
    }

    fn value(&mut self, depth: usize) -> Result<AttrValue, String> {
        self.ws();
        match self.peek() {
            Some(b'{') => Ok(AttrValue::Dict(self.dict(depth + 1)?)),
            Some(b'"') => Ok(AttrValue::Str(self.string()?)),
            Some(c) if c == b'-' || c == b'+' || c.is_ascii_digit() => {
                let number = self.number()?;
                let ty = if self.eat(b':') { Some(self.scalar_type()?) } else { None };
                scalar(&number, ty).map_err(|e| self.err(&e))
            }
            Some(_) => {
                let save = self.pos;
                let word = self.ident()?;
                match word.as_str() {
                    "true" | "false" => {
                        let v = word == "true";
                        if self.eat(b':') {
                            let t = self.scalar_type()?;
                            if t != Ty::Bool {
                                return Err(self.err("a boolean must have type i1"));
                            }
                        }
                        Ok(AttrValue::Bool(v))
                    }
                    "array" => self.dense_array(),
                    "dense" => self.dense_elements(),
                    _ => {
                        self.pos = save;
                        let code = self.type_code()?;
                        Ok(AttrValue::U8(code))
                    }
                }
            }
            None => Err(self.err("expected a value")),
        }
    }

    /// A number token as written (sign, digits, `.`, exponent, or hex).
    fn number(&mut self) -> Result<String, String> {
        self.ws();
        let start = self.pos;
        if matches!(self.peek(), Some(b'-') | Some(b'+')) {
            self.pos += 1;
        }
        if self.s[self.pos..].starts_with(b"0x") || self.s[self.pos..].starts_with(b"0X") {
            self.pos += 2;
            while self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                self.pos += 1;
            }
        } else {
            while let Some(c) = self.peek() {
                let exp_sign = (c == b'-' || c == b'+') && matches!(self.s.get(self.pos - 1), Some(b'e') | Some(b'E'));
                if c.is_ascii_digit() || c == b'.' || c == b'e' || c == b'E' || exp_sign {
                    self.pos += 1;
                } else {
                    break;
                }
            }
        }
        let text = String::from_utf8_lossy(&self.s[start..self.pos]).into_owned();
        if text.is_empty() || text == "-" || text == "+" {
            return Err(self.err("expected a number"));
        }
        Ok(text)
    }

    fn scalar_type(&mut self) -> Result<Ty, String> {
        let name = self.ident()?;
        parse_scalar_type(&name).ok_or_else(|| self.err(&format!("unsupported attribute type '{name}'")))
    }

    /// A bare type as an XLA element-type number.
    fn type_code(&mut self) -> Result<u8, String> {
        self.ws();
        let start = self.pos;
        let name = self.ident()?;
        let name = if name == "complex" {
            self.expect(b'<')?;
            let inner = self.ident()?;
            self.expect(b'>')?;
            format!("complex<{inner}>")
        } else {
            name
        };
        type_code(&name).ok_or_else(|| {
            self.pos = start;
            self.err(&format!("unsupported attribute value '{name}'"))
        })
    }

    /// `array<i32: 1, 2, 3>` (after the word `array`).
    fn dense_array(&mut self) -> Result<AttrValue, String> {
        self.expect(b'<')?;
        let ty = self.scalar_type()?;
        let mut items = Vec::new();
        if self.eat(b':') {
            loop {
                self.ws();
                let item = match self.peek() {
                    Some(b't') | Some(b'f') => self.ident()?,
                    _ => self.number()?,
                };
                items.push(item);
                if !self.eat(b',') {
                    break;
                }
            }
        }
        self.expect(b'>')?;
        array(ty, &items).map(AttrValue::Array).map_err(|e| self.err(&e))
    }

    /// `dense<[1, 2]> : tensor<2xi32>` or a splat `dense<5> : tensor<3xi64>` (after `dense`).
    fn dense_elements(&mut self) -> Result<AttrValue, String> {
        self.expect(b'<')?;
        let mut items = Vec::new();
        self.dense_items(&mut items, 0)?;
        self.expect(b'>')?;
        self.expect(b':')?;
        let kind = self.ident()?;
        if kind != "tensor" && kind != "vector" {
            return Err(self.err("dense elements need a tensor type"));
        }
        self.expect(b'<')?;
        // `2x3xi32`: dimensions, then the element type.
        self.ws();
        let start = self.pos;
        while self.peek().is_some_and(|c| c != b'>') {
            self.pos += 1;
        }
        let spec = String::from_utf8_lossy(&self.s[start..self.pos]).trim().to_string();
        self.expect(b'>')?;
        let mut parts: Vec<&str> = spec.split('x').collect();
        let elem = parts.pop().unwrap_or_default();
        // A type like `complex<f32>` contains no `x`; `i32` and `ui8` neither.
        let ty = parse_scalar_type(elem).ok_or_else(|| self.err(&format!("unsupported element type '{elem}'")))?;
        let mut count = 1usize;
        for d in parts {
            let d: usize = d.trim().parse().map_err(|_| self.err(&format!("bad tensor dimension '{d}'")))?;
            count = count.checked_mul(d).ok_or_else(|| self.err("tensor too large"))?;
        }
        if items.len() == 1 && count != 1 {
            let v = items[0].clone();
            items = vec![v; count];
        }
        if items.len() != count {
            return Err(self.err(&format!("dense attribute has {} elements, its type {count}", items.len())));
        }
        array(ty, &items).map(AttrValue::Array).map_err(|e| self.err(&e))
    }

    fn dense_items(&mut self, out: &mut Vec<String>, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(self.err("dense elements nest too deeply"));
        }
        if self.eat(b'[') {
            if self.eat(b']') {
                return Ok(());
            }
            loop {
                self.dense_items(out, depth + 1)?;
                if self.eat(b']') {
                    return Ok(());
                }
                self.expect(b',')?;
            }
        }
        self.ws();
        let item = match self.peek() {
            Some(b't') | Some(b'f') => self.ident()?,
            Some(b'"') => return Err(self.err("dense hex blobs are not supported")),
            _ => self.number()?,
        };
        out.push(item);
        Ok(())
    }
}

fn parse_scalar_type(name: &str) -> Option<Ty> {
    Some(match name {
        "i1" => Ty::Bool,
        "f32" => Ty::Float(32),
        "f64" => Ty::Float(64),
        _ => {
            let (signed, bits) = if let Some(b) = name.strip_prefix("ui") {
                (false, b)
            } else if let Some(b) = name.strip_prefix("si") {
                (true, b)
            } else if let Some(b) = name.strip_prefix('i') {
                (true, b)
            } else {
                return None;
            };
            let bits: u32 = bits.parse().ok()?;
            if !matches!(bits, 8 | 16 | 32 | 64) {
                return None;
            }
            Ty::Int { bits, signed }
        }
    })
}

/// XLA's element-type number for an MLIR type name.
fn type_code(name: &str) -> Option<u8> {
    let code = match name {
        "i1" => XLA_FFI_DataType_PRED,
        "i8" | "si8" => XLA_FFI_DataType_S8,
        "i16" | "si16" => XLA_FFI_DataType_S16,
        "i32" | "si32" => XLA_FFI_DataType_S32,
        "i64" | "si64" => XLA_FFI_DataType_S64,
        "ui8" => XLA_FFI_DataType_U8,
        "ui16" => XLA_FFI_DataType_U16,
        "ui32" => XLA_FFI_DataType_U32,
        "ui64" => XLA_FFI_DataType_U64,
        "i4" | "si4" => XLA_FFI_DataType_S4,
        "ui4" => XLA_FFI_DataType_U4,
        "f16" => XLA_FFI_DataType_F16,
        "bf16" => XLA_FFI_DataType_BF16,
        "f32" => XLA_FFI_DataType_F32,
        "f64" => XLA_FFI_DataType_F64,
        "complex<f32>" => XLA_FFI_DataType_C64,
        "complex<f64>" => XLA_FFI_DataType_C128,
        "f8E5M2" => XLA_FFI_DataType_F8E5M2,
        "f8E4M3FN" => XLA_FFI_DataType_F8E4M3FN,
        "f8E4M3B11FNUZ" => XLA_FFI_DataType_F8E4M3B11FNUZ,
        "f8E5M2FNUZ" => XLA_FFI_DataType_F8E5M2FNUZ,
        "f8E4M3FNUZ" => XLA_FFI_DataType_F8E4M3FNUZ,
        "f8E4M3" => XLA_FFI_DataType_F8E4M3,
        "f8E3M4" => XLA_FFI_DataType_F8E3M4,
        "f4E2M1FN" => XLA_FFI_DataType_F4E2M1FN,
        "f8E8M0FNU" => XLA_FFI_DataType_F8E8M0FNU,
        "none" => XLA_FFI_DataType_TOKEN,
        _ => return None,
    };
    u8::try_from(code).ok()
}

fn parse_int(text: &str) -> Result<i128, String> {
    let (neg, body) = match text.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        i128::from_str_radix(h, 16)
    } else {
        body.parse::<i128>()
    }
    .map_err(|_| format!("'{text}' is not an integer"))?;
    Ok(if neg { -v } else { v })
}

fn parse_float(text: &str, bits: u32) -> Result<f64, String> {
    // MLIR writes NaN and infinities as the hexadecimal bit pattern of the type.
    if let Some(h) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        let raw = u64::from_str_radix(h, 16).map_err(|_| format!("'{text}' is not a float"))?;
        return Ok(if bits == 32 { f32::from_bits(raw as u32) as f64 } else { f64::from_bits(raw) });
    }
    text.parse::<f64>().map_err(|_| format!("'{text}' is not a float"))
}

fn scalar(text: &str, ty: Option<Ty>) -> Result<AttrValue, String> {
    let is_float_text = !text.contains("0x") && (text.contains('.') || text.contains('e') || text.contains('E'));
    let ty = ty.unwrap_or(if is_float_text { Ty::Float(64) } else { Ty::Int { bits: 64, signed: true } });
    Ok(match ty {
        Ty::Float(32) => AttrValue::F32(parse_float(text, 32)? as f32),
        Ty::Float(_) => AttrValue::F64(parse_float(text, 64)?),
        Ty::Bool => AttrValue::Bool(parse_int(text)? != 0),
        Ty::Int { bits, signed } => {
            let v = parse_int(text)?;
            let fits = |lo: i128, hi: i128| {
                if (lo..=hi).contains(&v) {
                    Ok(())
                } else {
                    Err(format!("{text} does not fit its type"))
                }
            };
            // MLIR prints unsigned values as such and accepts negative literals for signless
            // types by two's complement; keep XLA's reading: signed unless `ui`.
            match (bits, signed) {
                (8, true) => {
                    fits(i8::MIN as i128, u8::MAX as i128)?;
                    AttrValue::I8(v as i8)
                }
                (16, true) => {
                    fits(i16::MIN as i128, u16::MAX as i128)?;
                    AttrValue::I16(v as i16)
                }
                (32, true) => {
                    fits(i32::MIN as i128, u32::MAX as i128)?;
                    AttrValue::I32(v as i32)
                }
                (64, true) => {
                    fits(i64::MIN as i128, u64::MAX as i128)?;
                    AttrValue::I64(v as i64)
                }
                (8, false) => {
                    fits(0, u8::MAX as i128)?;
                    AttrValue::U8(v as u8)
                }
                (16, false) => {
                    fits(0, u16::MAX as i128)?;
                    AttrValue::U16(v as u16)
                }
                (32, false) => {
                    fits(0, u32::MAX as i128)?;
                    AttrValue::U32(v as u32)
                }
                _ => {
                    fits(0, u64::MAX as i128)?;
                    AttrValue::U64(v as u64)
                }
            }
        }
    })
}

fn array(ty: Ty, items: &[String]) -> Result<ArrayValue, String> {
    let scalars: Vec<AttrValue> = items
        .iter()
        .map(|t| match t.as_str() {
            "true" => Ok(AttrValue::Bool(true)),
            "false" => Ok(AttrValue::Bool(false)),
            _ => scalar(t, Some(ty)),
        })
        .collect::<Result<_, _>>()?;
    macro_rules! collect {
        ($variant:ident) => {
            ArrayValue::$variant(
                scalars.iter().filter_map(|s| if let AttrValue::$variant(v) = s { Some(*v) } else { None }).collect(),
            )
        };
    }
    Ok(match ty {
        Ty::Bool => return Err("boolean arrays are not supported by XLA's FFI".into()),
        Ty::Float(32) => collect!(F32),
        Ty::Float(_) => collect!(F64),
        Ty::Int { bits: 8, signed: true } => collect!(I8),
        Ty::Int { bits: 16, signed: true } => collect!(I16),
        Ty::Int { bits: 32, signed: true } => collect!(I32),
        Ty::Int { bits: 64, signed: true } => collect!(I64),
        Ty::Int { bits: 8, signed: false } => collect!(U8),
        Ty::Int { bits: 16, signed: false } => collect!(U16),
        Ty::Int { bits: 32, signed: false } => collect!(U32),
        Ty::Int { .. } => collect!(U64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jax_scalars_strings_and_empty() {
        let a = parse_ffi_attributes("{alpha = 2.500000e+00 : f32, n = 3 : i32, name = \"hi\"}").unwrap();
        assert_eq!(
            a,
            vec![
                ("alpha".into(), AttrValue::F32(2.5)),
                ("n".into(), AttrValue::I32(3)),
                ("name".into(), AttrValue::Str("hi".into())),
            ]
        );
        assert_eq!(parse_ffi_attributes("{}").unwrap(), vec![]);
        // The corpus's LAPACK calls: sorted by name whatever the written order.
        let a = parse_ffi_attributes("{uplo = 76 : ui8, mode = 86 : ui8}").unwrap();
        assert_eq!(a, vec![("mode".into(), AttrValue::U8(86)), ("uplo".into(), AttrValue::U8(76))]);
    }

    #[test]
    fn defaults_booleans_and_special_floats() {
        let a = parse_ffi_attributes(
            "{a = 7, b = 1.5, c = true, d = false, e = 0x7F800000 : f32, f = -4 : i8, g = 1 : i1}",
        )
        .unwrap();
        assert_eq!(a[0].1, AttrValue::I64(7));
        assert_eq!(a[1].1, AttrValue::F64(1.5));
        assert_eq!(a[2].1, AttrValue::Bool(true));
        assert_eq!(a[3].1, AttrValue::Bool(false));
        assert_eq!(a[4].1, AttrValue::F32(f32::INFINITY));
        assert_eq!(a[5].1, AttrValue::I8(-4));
        assert_eq!(a[6].1, AttrValue::Bool(true));
    }

    #[test]
    fn arrays_dicts_and_dtypes() {
        let a = parse_ffi_attributes(
            "{xs = array<i64: 1, -2, 3>, fs = array<f32: 0.5, 2.0>, e = array<i32>, d = {inner = \"q\\22\", k = 2 : ui16}, \
             t = dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>, s = dense<1.0> : tensor<3xf64>, dt = f32, ct = complex<f64>}",
        )
        .unwrap();
        let get = |n: &str| a.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone()).unwrap();
        assert_eq!(get("xs"), AttrValue::Array(ArrayValue::I64(vec![1, -2, 3])));
        assert_eq!(get("fs"), AttrValue::Array(ArrayValue::F32(vec![0.5, 2.0])));
        assert_eq!(get("e"), AttrValue::Array(ArrayValue::I32(vec![])));
        assert_eq!(
            get("d"),
            AttrValue::Dict(vec![("inner".into(), AttrValue::Str("q\"".into())), ("k".into(), AttrValue::U16(2))])
        );
        assert_eq!(get("t"), AttrValue::Array(ArrayValue::I32(vec![1, 2, 3, 4])));
        assert_eq!(get("s"), AttrValue::Array(ArrayValue::F64(vec![1.0; 3])));
        assert_eq!(get("dt"), AttrValue::U8(11)); // XLA's F32
        assert_eq!(get("ct"), AttrValue::U8(18)); // XLA's C128
    }

    #[test]
    fn errors_say_what_is_wrong() {
        for (text, want) in [
            ("{a}", "no value"),
            ("{a = 300 : ui8}", "does not fit"),
            ("{a = 1 : i7}", "unsupported attribute type"),
            ("{a = \"x}", "unterminated"),
            ("{a = 1, a = 2}", "twice"),
            ("{a = 1} x", "after"),
            ("{a = array<i32: 1, 2}", "expected '>'"),
            ("{a = dense<[1, 2]> : tensor<3xi32>}", "2 elements"),
            ("{a = widget}", "unsupported attribute value"),
        ] {
            let e = parse_ffi_attributes(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
