//! The pretty (custom assembly) forms of StableHLO and CHLO ops, read as a sequence of items
//! (operands, `key = value`, bare enum words, `[a:b:c]` slices, `@callee(...)`, attribute
//! dictionaries) up to the signature, then normalized to the generic form's attribute names so
//! that conversion does not care which form was written.

use super::attrs::{parse_attr, parse_conv_dim_labels, parse_dict};
use super::cursor::{Cursor, PResult};
use super::ir::{Attr, Type, ValueRef};
use super::parser::parse_value_ref;
use super::types::parse_op_signature;
use std::collections::BTreeMap;

#[derive(Default)]
pub struct PrettyItems {
    pub operands: Vec<ValueRef>,
    pub attrs: BTreeMap<String, Attr>,
    pub result_types: Vec<Type>,
    /// `stablehlo.while(%iterArg = %init, ...)`: the names of the regions' block arguments.
    pub block_args: Vec<String>,
}

struct Raw {
    operands: Vec<ValueRef>,
    inits: Vec<ValueRef>,
    keywords: Vec<(String, Attr)>,
    words: Vec<String>,
    slice: Option<Vec<(i64, Option<i64>, Option<i64>)>>,
    symbol: Option<String>,
    string: Option<String>,
    dict: BTreeMap<String, Attr>,
    block_args: Vec<String>,
}

pub fn parse_pretty_body(c: &mut Cursor, name: &str, name_at: usize, result_count: usize) -> PResult<PrettyItems> {
    let mut raw = Raw {
        operands: Vec::new(),
        inits: Vec::new(),
        keywords: Vec::new(),
        words: Vec::new(),
        slice: None,
        symbol: None,
        string: None,
        dict: BTreeMap::new(),
        block_args: Vec::new(),
    };
    if name == "stablehlo.constant" {
        let value = parse_attr(c)?;
        let Attr::Dense(d) = &value else {
            return Err(c.error_at(name_at, "stablehlo.constant expects dense elements"));
        };
        let ty = Type::Tensor(d.ty.clone());
        let mut attrs = BTreeMap::new();
        attrs.insert("value".to_string(), value);
        return Ok(PrettyItems { attrs, result_types: vec![ty], ..PrettyItems::default() });
    }
    parse_items(c, &mut raw, 0)?;
    c.expect(":")?;
    let (inputs, mut result_types) = parse_op_signature(c)?;
    // Without an arrow the types are the operands' then the results' (`select`: `i1, f32`),
    // or one type for all of them.
    if inputs.is_none() && result_types.len() > result_count {
        result_types.drain(..result_types.len() - result_count);
    }
    if inputs.is_none() && result_types.len() == 1 && result_count > 1 {
        result_types = vec![result_types[0].clone(); result_count];
    }
    let mut items = PrettyItems { operands: raw.operands, result_types, block_args: raw.block_args, ..PrettyItems::default() };
    normalize(c, name, name_at, raw.keywords, raw.words, raw.slice, raw.symbol, raw.string, raw.inits, &mut items)?;
    items.attrs.extend(raw.dict);
    Ok(items)
}

fn parse_items(c: &mut Cursor, raw: &mut Raw, depth: usize) -> PResult<()> {
    if depth > 4 {
        return Err(c.error("too deeply parenthesized"));
    }
    loop {
        c.skip_ws();
        let rest = c.rest();
        if rest.starts_with(':') && !rest.starts_with("::") || rest.starts_with(')') || rest.is_empty() {
            return Ok(());
        }
        if rest.starts_with('%') {
            let v = parse_value_ref(c)?;
            if c.eat("=") {
                // `%iterArg = %init` in stablehlo.while.
                raw.block_args.push(v.name);
                raw.operands.push(parse_value_ref(c)?);
            } else if c.eat_word("init") {
                c.expect(":")?;
                raw.operands.push(v);
                raw.inits.push(parse_value_ref(c)?);
            } else {
                raw.operands.push(v);
            }
        } else if rest.starts_with('(') {
            c.set_pos(c.pos() + 1);
            parse_items(c, raw, depth + 1)?;
            c.expect(")")?;
        } else if rest.starts_with('[') {
            raw.slice = Some(parse_slice(c)?);
        } else if rest.starts_with('@') {
            raw.symbol = Some(c.sigil_name('@')?);
        } else if rest.starts_with('"') {
            raw.string = Some(c.string()?);
        } else if rest.starts_with("<{") {
            c.set_pos(c.pos() + 1);
            raw.dict.extend(parse_dict(c)?);
            c.expect(">")?;
        } else if rest.starts_with('{') {
            raw.dict.extend(parse_dict(c)?);
        } else if rest.starts_with(|ch: char| ch.is_ascii_alphabetic() || ch == '_') {
            let word = c.ident()?.to_string();
            if c.eat("=") {
                let value = if word == "dim_numbers" {
                    Attr::Dialect { name: "conv".into(), fields: parse_conv_dim_labels(c)? }
                } else {
                    let first = parse_attr(c)?;
                    // `batching_dims = [0] x [0]`.
                    let save = c.pos();
                    if c.eat_word("x") && c.peek() == Some('[') {
                        Attr::Array(vec![first, parse_attr(c)?])
                    } else {
                        c.set_pos(save);
                        first
                    }
                };
                raw.keywords.push((word, value));
            } else {
                raw.words.push(word);
            }
        } else if rest.starts_with(|ch: char| ch.is_ascii_digit() || ch == '-') {
            // `k = 4` is a keyword; a bare number does not occur.
            return Err(c.error("unexpected number"));
        } else {
            return Err(c.error("unexpected text in op"));
        }
        c.eat(",");
    }
}

/// `[0:4, 1:3:2]` (or `[2]` for get_tuple_element).
fn parse_slice(c: &mut Cursor) -> PResult<Vec<(i64, Option<i64>, Option<i64>)>> {
    c.expect("[")?;
    let mut out = Vec::new();
    if c.eat("]") {
        return Ok(out);
    }
    let int = |c: &mut Cursor| -> PResult<i64> {
        let at = c.pos();
        i64::try_from(c.integer()?).map_err(|_| c.error_at(at, "index out of range"))
    };
    loop {
        let start = int(c)?;
        let (mut limit, mut stride) = (None, None);
        if c.eat(":") {
            limit = Some(int(c)?);
            if c.eat(":") {
                stride = Some(int(c)?);
            }
        }
        out.push((start, limit, stride));
        if c.eat("]") {
            return Ok(out);
        }
        c.expect(",")?;
    }
}

fn dialect(name: &str, fields: Vec<(&str, Attr)>) -> Attr {
    Attr::Dialect { name: name.into(), fields: fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect() }
}

fn enum_attr(kind: &str, value: &str) -> Attr {
    dialect(kind, vec![("value", Attr::Enum(value.to_string()))])
}

#[allow(clippy::too_many_arguments)]
fn normalize(
    c: &Cursor,
    name: &str,
    at: usize,
    keywords: Vec<(String, Attr)>,
    words: Vec<String>,
    slice: Option<Vec<(i64, Option<i64>, Option<i64>)>>,
    symbol: Option<String>,
    string: Option<String>,
    inits: Vec<ValueRef>,
    items: &mut PrettyItems,
) -> PResult<()> {
    let short = name.split_once('.').map_or(name, |(_, s)| s);
    let attrs = &mut items.attrs;
    let rename = |k: &str| -> String {
        match (short, k) {
            ("broadcast_in_dim", "dims") => "broadcast_dimensions",
            ("transpose", "dims") => "permutation",
            ("reverse", "dims") => "dimensions",
            ("concatenate", "dim") => "dimension",
            ("iota", "dim") => "iota_dimension",
            ("dynamic_slice", "sizes") => "slice_sizes",
            ("pad", "low") => "edge_padding_low",
            ("pad", "high") => "edge_padding_high",
            ("pad", "interior") => "interior_padding",
            ("fft", "type") => "fft_type",
            ("fft", "length") => "fft_length",
            ("convolution", "dim_numbers") => "dimension_numbers",
            ("get_tuple_element", "index") => "index",
            _ => k,
        }
        .to_string()
    };
    for (k, v) in keywords {
        match (short, k.as_str()) {
            ("dot_general", "batching_dims" | "contracting_dims") => {
                let Attr::Array(pair) = v else {
                    return Err(c.error_at(at, format!("{k} expects 'lhs x rhs'")));
                };
                let prefix = if k == "batching_dims" { "batching" } else { "contracting" };
                let dn = attrs.entry("dot_dimension_numbers".into()).or_insert_with(|| dialect("dot", vec![]));
                if let (Attr::Dialect { fields, .. }, [l, r]) = (dn, pair.as_slice()) {
                    fields.insert(format!("lhs_{prefix}_dimensions"), l.clone());
                    fields.insert(format!("rhs_{prefix}_dimensions"), r.clone());
                }
            }
            ("dot_general", "precision") | ("dot", "precision") => {
                let list = match v {
                    Attr::Array(items) => items.into_iter().map(|p| match p {
                        Attr::Enum(e) => enum_attr("precision", &e),
                        other => other,
                    }).collect(),
                    other => vec![other],
                };
                attrs.insert("precision_config".into(), Attr::Array(list));
            }
            ("dot_general", "algorithm") => {
                attrs.insert("algorithm".into(), v);
            }
            ("convolution", "window") => {
                let Attr::Dict(w) = v else {
                    return Err(c.error_at(at, "convolution window expects {...}"));
                };
                for (wk, wv) in w {
                    let key = match wk.as_str() {
                        "stride" => "window_strides",
                        "pad" => "padding",
                        "lhs_dilate" => "lhs_dilation",
                        "rhs_dilate" => "rhs_dilation",
                        "reverse" => "window_reversal",
                        other => return Err(c.error_at(at, format!("unknown convolution window field '{other}'"))),
                    };
                    attrs.insert(key.into(), wv);
                }
            }
            ("rng_bit_generator", "algorithm") => {
                attrs.insert("rng_algorithm".into(), enum_of(v, "rng_algorithm"));
            }
            ("fft", "type") => {
                attrs.insert("fft_type".into(), enum_of(v, "fft_type"));
            }
            ("reduce_precision", "format") => {
                let Attr::Enum(f) = &v else {
                    return Err(c.error_at(at, "reduce_precision format expects eXmY"));
                };
                let parsed = f.strip_prefix('e').and_then(|r| r.split_once('m')).and_then(|(e, m)| Some((e.parse::<i128>().ok()?, m.parse::<i128>().ok()?)));
                let Some((e, m)) = parsed else {
                    return Err(c.error_at(at, format!("bad reduce_precision format '{f}'")));
                };
                attrs.insert("exponent_bits".into(), Attr::Int(e, None));
                attrs.insert("mantissa_bits".into(), Attr::Int(m, None));
            }
            ("reduce", "dimensions") => {
                attrs.insert("dimensions".into(), v);
            }
            _ => {
                attrs.insert(rename(&k), v);
            }
        }
    }
    match short {
        "compare" => {
            let mut it = words.into_iter();
            let dir = it.next().ok_or_else(|| c.error_at(at, "compare expects a direction"))?;
            attrs.insert("comparison_direction".into(), enum_attr("comparison_direction", &dir));
            if let Some(t) = it.next() {
                attrs.insert("compare_type".into(), enum_attr("comparison_type", &t));
            }
        }
        "reduce" => {
            // `applies stablehlo.add across dimensions = [...]`: the body is that one op.
            let mut it = words.iter();
            while let Some(w) = it.next() {
                if w == "applies" {
                    let body = it.next().ok_or_else(|| c.error_at(at, "expected an op after 'applies'"))?;
                    attrs.insert("__applies".into(), Attr::String(body.clone()));
                }
            }
            // Inputs first, then init values, as in the generic form.
            items.operands.extend(inits);
        }
        "slice" => {
            let s = slice.ok_or_else(|| c.error_at(at, "slice expects [start:limit:stride, ...]"))?;
            attrs.insert("start_indices".into(), Attr::DenseArray(s.iter().map(|x| x.0).collect()));
            attrs.insert("limit_indices".into(), Attr::DenseArray(s.iter().map(|x| x.1.unwrap_or(x.0 + 1)).collect()));
            attrs.insert("strides".into(), Attr::DenseArray(s.iter().map(|x| x.2.unwrap_or(1)).collect()));
        }
        "get_tuple_element" => {
            let s = slice.ok_or_else(|| c.error_at(at, "get_tuple_element expects [index]"))?;
            let index = s.first().map_or(0, |x| x.0);
            attrs.insert("index".into(), Attr::Int(index as i128, None));
        }
        "custom_call" => {
            let target = symbol.ok_or_else(|| c.error_at(at, "custom_call expects @target"))?;
            attrs.insert("call_target_name".into(), Attr::String(target));
        }
        "call" => {
            let callee = symbol.ok_or_else(|| c.error_at(at, "func.call expects @callee"))?;
            attrs.insert("callee".into(), Attr::Symbol(callee));
        }
        "composite" => {
            let n = string.ok_or_else(|| c.error_at(at, "composite expects a name"))?;
            attrs.insert("name".into(), Attr::String(n));
        }
        _ => {
            if let Some(w) = words.first() {
                return Err(c.error_at(at, format!("unexpected word '{w}' in {name}")));
            }
        }
    }
    Ok(())
}

fn enum_of(v: Attr, kind: &str) -> Attr {
    match v {
        Attr::Enum(e) => enum_attr(kind, &e),
        other => other,
    }
}
