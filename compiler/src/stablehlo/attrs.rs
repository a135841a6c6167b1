//! MLIR attributes as JAX prints them: builtin ones (integers and floats with types, strings,
//! arrays, dictionaries, `array<i64: ...>`, `dense<...>` and `dense_resource<...>` elements,
//! symbol references, types) and dialect ones (`#stablehlo<comparison_direction LT>`,
//! `#stablehlo.gather<...>`, `#stablehlo.conv<...>`, `#sdy...`, locations).

use super::cursor::{Cursor, PResult};
use super::ir::{Attr, DenseElements, ScalarType, TensorType, Type};
use super::types::{parse_type, scalar_type_from_name};
use hlojit_runtime::ElementType;
use std::collections::BTreeMap;

pub fn parse_attr(c: &mut Cursor) -> PResult<Attr> {
    c.skip_ws();
    let start = c.pos();
    let rest = c.rest();
    if rest.starts_with("dense<") {
        c.set_pos(start + 5);
        return parse_dense(c);
    }
    if rest.starts_with("dense_resource<") {
        c.set_pos(start + "dense_resource".len());
        c.expect("<")?;
        let name = c.ident()?.to_string();
        c.expect(">")?;
        c.expect(":")?;
        let ty = expect_tensor(c)?;
        return Ok(Attr::Dense(DenseElements { ty, bits: Vec::new(), resource: Some(name) }));
    }
    if rest.starts_with("array<") {
        c.set_pos(start + 5);
        c.expect("<")?;
        let elt = c.ident()?;
        let is_bool = elt == "i1";
        let mut values = Vec::new();
        if c.eat(":") {
            loop {
                if is_bool {
                    values.push(if c.eat_word("true") { 1 } else if c.eat_word("false") { 0 } else { return Err(c.error("expected true or false")) });
                } else {
                    let p = c.pos();
                    values.push(i64::try_from(c.integer()?).map_err(|_| c.error_at(p, "array element out of range"))?);
                }
                if !c.eat(",") {
                    break;
                }
            }
        }
        c.expect(">")?;
        return Ok(Attr::DenseArray(values));
    }
    if rest.starts_with('[') {
        c.set_pos(start + 1);
        let mut items = Vec::new();
        if !c.eat("]") {
            loop {
                items.push(parse_attr(c)?);
                if c.eat("]") {
                    break;
                }
                c.expect(",")?;
            }
        }
        return Ok(Attr::Array(items));
    }
    if rest.starts_with('{') {
        return parse_dict(c).map(Attr::Dict);
    }
    if rest.starts_with('"') {
        let s = c.string()?;
        // A typed string (`"..." : !type`) keeps only the string.
        let save = c.pos();
        if c.eat(":") && !c.rest().trim_start().starts_with(|ch: char| ch == '%' ) {
            if parse_type(c).is_err() {
                c.set_pos(save);
            }
        }
        return Ok(Attr::String(s));
    }
    if rest.starts_with('@') {
        let mut name = c.sigil_name('@')?;
        while c.rest().starts_with("::@") {
            c.set_pos(c.pos() + 2);
            name.push_str("::");
            name.push_str(&c.sigil_name('@')?);
        }
        return Ok(Attr::Symbol(name));
    }
    if rest.starts_with('#') {
        return parse_hash_attr(c);
    }
    if c.eat_word("true") {
        return Ok(Attr::Bool(true));
    }
    if c.eat_word("false") {
        return Ok(Attr::Bool(false));
    }
    if c.eat_word("unit") {
        return Ok(Attr::Unit);
    }
    if rest.starts_with("loc(") {
        c.set_pos(start + 3);
        c.skip_balanced('(', ')')?;
        return Ok(Attr::Opaque("loc".into()));
    }
    if rest.starts_with(|ch: char| ch.is_ascii_digit() || ch == '-' || ch == '+') {
        let text = c.number_text()?;
        // `1 : i64` is a typed number; in `dim = 0 : tensor<...>` the colon starts the op's
        // signature instead.
        let save = c.pos();
        let mut ty = None;
        if c.eat(":") {
            c.skip_ws();
            let r = c.rest();
            let word = &r[..r.find(|ch: char| !ch.is_ascii_alphanumeric()).unwrap_or(r.len())];
            if scalar_type_from_name(word).is_some() || word == "complex" {
                ty = Some(parse_scalar_attr_type(c)?);
            } else {
                c.set_pos(save);
            }
        }
        return number_attr(c, start, text, ty);
    }
    if rest.starts_with("tensor") || rest.starts_with('!') || rest.starts_with("tuple") || rest.starts_with("complex") {
        return parse_type(c).map(Attr::Type);
    }
    if rest.starts_with(|ch: char| ch.is_ascii_alphabetic()) {
        let save = c.pos();
        let word = c.ident()?;
        if scalar_type_from_name(word).is_some() {
            c.set_pos(save);
            return parse_type(c).map(Attr::Type);
        }
        return Ok(Attr::Enum(word.to_string()));
    }
    Err(c.error("expected an attribute"))
}

fn parse_scalar_attr_type(c: &mut Cursor) -> PResult<ScalarType> {
    let start = c.pos();
    match parse_type(c)? {
        Type::Scalar(s) => Ok(s),
        _ => Err(c.error_at(start, "expected a scalar type")),
    }
}

fn number_attr(c: &Cursor, at: usize, text: &str, ty: Option<ScalarType>) -> PResult<Attr> {
    let is_float_type = matches!(ty, Some(ScalarType::Element(e)) if e.is_floating());
    let looks_float = text.contains(['.', 'e', 'E', 'n', 'i']) && !text.contains("0x");
    if is_float_type || looks_float {
        let v = parse_float_text(text, ty).ok_or_else(|| c.error_at(at, format!("bad number '{text}'")))?;
        return Ok(Attr::Float(v, ty));
    }
    let v = parse_int_text(text).ok_or_else(|| c.error_at(at, format!("bad integer '{text}'")))?;
    Ok(Attr::Int(v, ty))
}

fn parse_int_text(text: &str) -> Option<i128> {
    let (neg, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text.trim_start_matches('+')),
    };
    let v = if let Some(hex) = digits.strip_prefix("0x") { i128::from_str_radix(hex, 16).ok()? } else { digits.parse().ok()? };
    Some(if neg { -v } else { v })
}

/// A float as f64; hex text is the bit pattern of the type `ty`.
fn parse_float_text(text: &str, ty: Option<ScalarType>) -> Option<f64> {
    if text.contains("0x") {
        let bits = parse_int_text(text)? as u64;
        let t = match ty {
            Some(ScalarType::Element(t)) => t,
            _ => ElementType::F64,
        };
        return Some(decode_float(bits, t));
    }
    match text {
        "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        "nan" | "-nan" => Some(f64::NAN),
        _ => text.parse().ok(),
    }
}

fn decode_float(bits: u64, t: ElementType) -> f64 {
    match t {
        ElementType::F32 => f64::from(f32::from_bits(bits as u32)),
        ElementType::F64 => f64::from_bits(bits),
        _ => t.float_format().map_or(f64::NAN, |f| hlojit_runtime::float_bits::decode(bits, f)),
    }
}

/// The bit pattern of `v` in float type `t`.
pub fn encode_float(v: f64, t: ElementType) -> u64 {
    match t {
        ElementType::F32 => u64::from((v as f32).to_bits()),
        ElementType::F64 => v.to_bits(),
        _ => t.float_format().map_or(0, |f| hlojit_runtime::float_bits::encode(v, f)),
    }
}

/// `{name = value, unit_name, ...}`.
pub fn parse_dict(c: &mut Cursor) -> PResult<BTreeMap<String, Attr>> {
    c.expect("{")?;
    let mut map = BTreeMap::new();
    if c.eat("}") {
        return Ok(map);
    }
    loop {
        c.skip_ws();
        let name = if c.rest().starts_with('"') { c.string()? } else { c.ident()?.to_string() };
        let value = if c.eat("=") { parse_attr(c)? } else { Attr::Unit };
        map.insert(name, value);
        if c.eat("}") {
            return Ok(map);
        }
        c.expect(",")?;
    }
}

fn expect_tensor(c: &mut Cursor) -> PResult<TensorType> {
    let start = c.pos();
    match parse_type(c)? {
        Type::Tensor(t) => Ok(t),
        _ => Err(c.error_at(start, "expected a tensor type")),
    }
}

/// One element of a `dense<...>` literal, before its type is known.
enum DenseItem {
    Number(usize, String),
    Bool(bool),
    Complex(Box<DenseItem>, Box<DenseItem>),
}

/// `dense<...> : tensor<...>` after `dense`.
fn parse_dense(c: &mut Cursor) -> PResult<Attr> {
    c.expect("<")?;
    let body_start = c.pos();
    let mut items = Vec::new();
    let mut hex: Option<(usize, String)> = None;
    c.skip_ws();
    if c.rest().starts_with('"') {
        let at = c.pos();
        hex = Some((at, c.string()?));
    } else if !c.rest().starts_with('>') {
        parse_dense_items(c, &mut items)?;
    }
    c.expect(">")?;
    c.expect(":")?;
    let ty = expect_tensor(c)?;
    let _ = body_start;
    let ScalarType::Element(et) = ty.element else {
        // `index` tensors (layouts in custom_call attributes): integers.
        let bits = items.iter().map(|i| item_int_bits(c, i)).collect::<PResult<Vec<_>>>()?;
        return Ok(Attr::Dense(DenseElements { ty, bits, resource: None }));
    };
    let bits = if let Some((at, h)) = hex {
        let bytes = decode_hex(&h).ok_or_else(|| c.error_at(at, "bad hex string in dense elements"))?;
        bytes_to_bits(&bytes, et).ok_or_else(|| c.error_at(at, "hex data of dense elements does not fit its type"))?
    } else {
        let mut bits = Vec::new();
        for item in &items {
            push_item_bits(c, item, et, &mut bits)?;
        }
        bits
    };
    Ok(Attr::Dense(DenseElements { ty, bits, resource: None }))
}

fn parse_dense_items(c: &mut Cursor, out: &mut Vec<DenseItem>) -> PResult<()> {
    if c.eat("[") {
        if c.eat("]") {
            return Ok(());
        }
        loop {
            parse_dense_items(c, out)?;
            if c.eat("]") {
                return Ok(());
            }
            c.expect(",")?;
        }
    }
    out.push(parse_dense_scalar(c)?);
    Ok(())
}

fn parse_dense_scalar(c: &mut Cursor) -> PResult<DenseItem> {
    if c.eat_word("true") {
        return Ok(DenseItem::Bool(true));
    }
    if c.eat_word("false") {
        return Ok(DenseItem::Bool(false));
    }
    if c.eat("(") {
        let re = parse_dense_scalar(c)?;
        c.expect(",")?;
        let im = parse_dense_scalar(c)?;
        c.expect(")")?;
        return Ok(DenseItem::Complex(Box::new(re), Box::new(im)));
    }
    c.skip_ws();
    let at = c.pos();
    Ok(DenseItem::Number(at, c.number_text()?.to_string()))
}

fn item_int_bits(c: &Cursor, item: &DenseItem) -> PResult<u64> {
    match item {
        DenseItem::Bool(b) => Ok(u64::from(*b)),
        DenseItem::Number(at, t) => parse_int_text(t).map(|v| v as u64).ok_or_else(|| c.error_at(*at, format!("expected an integer, found '{t}'"))),
        DenseItem::Complex(..) => Err(c.error("a complex value in an integer tensor")),
    }
}

fn push_item_bits(c: &Cursor, item: &DenseItem, t: ElementType, out: &mut Vec<u64>) -> PResult<()> {
    if let Some(component) = t.complex_component() {
        let DenseItem::Complex(re, im) = item else {
            return Err(c.error("expected a complex value (re, im)"));
        };
        push_item_bits(c, re, component, out)?;
        return push_item_bits(c, im, component, out);
    }
    let bits = if t.is_floating() {
        match item {
            DenseItem::Number(at, text) => {
                if text.contains("0x") {
                    parse_int_text(text).ok_or_else(|| c.error_at(*at, "bad hex float"))? as u64
                } else {
                    let v = parse_float_text(text, Some(ScalarType::Element(t))).ok_or_else(|| c.error_at(*at, format!("bad float '{text}'")))?;
                    encode_float(v, t)
                }
            }
            DenseItem::Bool(b) => encode_float(f64::from(u8::from(*b)), t),
            DenseItem::Complex(..) => return Err(c.error("a complex value in a real tensor")),
        }
    } else {
        item_int_bits(c, item)? & hlojit_runtime::literal::width_mask(t.bit_width())
    };
    out.push(bits);
    Ok(())
}

pub fn decode_hex(h: &str) -> Option<Vec<u8>> {
    let digits = h.strip_prefix("0x")?;
    if digits.len() % 2 != 0 {
        return None;
    }
    (0..digits.len()).step_by(2).map(|i| u8::from_str_radix(&digits[i..i + 2], 16).ok()).collect()
}

/// Raw little-endian element data (MLIR's dense hex and resource blobs) as one bit pattern per
/// scalar. i1 takes a byte per element; sub-byte integers and f4 a byte each as well.
pub fn bytes_to_bits(bytes: &[u8], t: ElementType) -> Option<Vec<u64>> {
    let (width, parts) = match t.complex_component() {
        Some(c) => (c.byte_size(), 2),
        None => (t.byte_size().max(1), 1),
    };
    let _ = parts;
    if bytes.len() % width != 0 {
        return None;
    }
    Some(
        bytes
            .chunks(width)
            .map(|chunk| {
                let mut word = [0u8; 8];
                word[..width].copy_from_slice(chunk);
                u64::from_le_bytes(word)
            })
            .collect(),
    )
}

/// `#...` attributes.
fn parse_hash_attr(c: &mut Cursor) -> PResult<Attr> {
    let start = c.pos();
    c.set_pos(start + 1);
    let rest = c.rest();
    let len = rest.find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_' || ch == '.')).unwrap_or(rest.len());
    let name = rest[..len].to_string();
    c.set_pos(c.pos() + len);
    if !c.rest().starts_with('<') {
        // An alias (`#loc3`, `#sdy.mesh` defined above): nothing to interpret.
        return Ok(Attr::Opaque(name));
    }
    let Some((dialect, kind)) = name.split_once('.') else {
        // `#stablehlo<comparison_direction LT>`: an enum.
        c.expect("<")?;
        let kind = c.ident()?.to_string();
        let value = c.ident()?.to_string();
        c.expect(">")?;
        let mut fields = BTreeMap::new();
        fields.insert("value".to_string(), Attr::Enum(value));
        let _ = name;
        return Ok(Attr::Dialect { name: kind, fields });
    };
    if dialect != "stablehlo" && dialect != "mhlo" && dialect != "chlo" {
        // Kept whole: a Shardy mesh (`#sdy.mesh<["x"=2]>`) is checked for its axis sizes.
        let rest = c.rest();
        let body_start = c.pos();
        c.skip_balanced('<', '>')?;
        let body = &rest[..c.pos() - body_start];
        return Ok(Attr::Opaque(format!("#{name}{body}")));
    }
    let kind = kind.to_string();
    c.expect("<")?;
    if kind == "conv" {
        // `#stablehlo.conv<[b, 0, f]x[0, i, o]->[b, 0, f]>` or `<raw input_batch_dimension = ...>`.
        let fields = if c.eat_word("raw") { parse_struct_fields(c)? } else { parse_conv_dim_labels(c)? };
        c.expect(">")?;
        return Ok(Attr::Dialect { name: kind, fields });
    }
    if c.rest().trim_start().starts_with(|ch: char| ch.is_ascii_uppercase()) {
        // `#chlo<comparison_direction LT>`-like enum with a dotted dialect name.
        let value = c.ident()?.to_string();
        c.expect(">")?;
        let mut fields = BTreeMap::new();
        fields.insert("value".to_string(), Attr::Enum(value));
        return Ok(Attr::Dialect { name: kind, fields });
    }
    let fields = parse_struct_fields(c)?;
    c.expect(">")?;
    Ok(Attr::Dialect { name: kind, fields })
}

/// `key = value, key = value` inside a dialect struct attribute (up to the closing `>`).
fn parse_struct_fields(c: &mut Cursor) -> PResult<BTreeMap<String, Attr>> {
    let mut fields = BTreeMap::new();
    loop {
        c.skip_ws();
        if c.rest().starts_with('>') {
            return Ok(fields);
        }
        let key = c.ident()?.to_string();
        c.expect("=")?;
        let value = parse_attr(c)?;
        fields.insert(key, value);
        if !c.eat(",") {
            return Ok(fields);
        }
    }
}

/// Convolution dimension labels `[b, 0, f]x[0, i, o]->[b, 0, f]` as the generic fields
/// (`input_batch_dimension`, `input_spatial_dimensions`, ...).
pub fn parse_conv_dim_labels(c: &mut Cursor) -> PResult<BTreeMap<String, Attr>> {
    let mut fields = BTreeMap::new();
    let parts = [("input", ["batch", "feature"]), ("kernel", ["output_feature", "input_feature"]), ("output", ["batch", "feature"])];
    for (k, (prefix, [first, second])) in parts.iter().enumerate() {
        if k == 1 {
            c.expect("x")?;
        } else if k == 2 {
            c.expect("->")?;
        }
        c.expect("[")?;
        let mut spatial: Vec<(i64, i64)> = Vec::new();
        let (mut a, mut b) = (None, None);
        let mut pos = 0i64;
        loop {
            c.skip_ws();
            let at = c.pos();
            if c.rest().starts_with(|ch: char| ch.is_ascii_digit()) {
                let s = c.integer()? as i64;
                spatial.push((s, pos));
            } else {
                let label = c.ident()?;
                let (first_label, second_label) = if *prefix == "kernel" { ("o", "i") } else { ("b", "f") };
                if label == first_label {
                    a = Some(pos);
                } else if label == second_label {
                    b = Some(pos);
                } else {
                    return Err(c.error_at(at, format!("unknown convolution dimension label '{label}'")));
                }
            }
            pos += 1;
            if c.eat("]") {
                break;
            }
            c.expect(",")?;
        }
        spatial.sort();
        let (Some(a), Some(b)) = (a, b) else {
            return Err(c.error("convolution dimension labels are missing a batch/feature label"));
        };
        fields.insert(format!("{prefix}_{first}_dimension"), Attr::Int(a as i128, None));
        fields.insert(format!("{prefix}_{second}_dimension"), Attr::Int(b as i128, None));
        fields.insert(format!("{prefix}_spatial_dimensions"), Attr::DenseArray(spatial.iter().map(|s| s.1).collect()));
    }
    Ok(fields)
}
