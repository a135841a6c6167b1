//! HLO text pieces for converted ops: shapes, literals and attribute values, as XLA prints them.

use super::super::ir::{Attr, DenseElements, ScalarType, TensorType, Type};
use crate::hlo::text::literal_to_text;
use hlojit_runtime::{ArrayLiteral, ElementType, Literal};

pub fn shape_text(ty: &Type) -> Result<String, String> {
    match ty {
        Type::Tensor(t) => tensor_shape_text(t),
        Type::Token => Ok("token[]".into()),
        Type::Tuple(elements) => {
            let parts = elements.iter().map(shape_text).collect::<Result<Vec<_>, _>>()?;
            Ok(format!("({})", parts.join(", ")))
        }
        Type::Scalar(ScalarType::Element(e)) => Ok(format!("{}[]", e.name())),
        other => Err(format!("type {other:?} has no HLO shape")),
    }
}

pub fn element_type(t: &TensorType) -> Result<ElementType, String> {
    match t.element {
        ScalarType::Element(e) => Ok(e),
        _ => Err("a tensor of index or none has no HLO element type".into()),
    }
}

pub fn tensor_shape_text(t: &TensorType) -> Result<String, String> {
    let e = element_type(t)?;
    let dims = t
        .dims
        .iter()
        .enumerate()
        .map(|(i, d)| match (d, t.bounds.as_ref().and_then(|b| b.get(i).copied().flatten())) {
            (Some(d), _) => Ok(d.to_string()),
            (None, Some(bound)) => Ok(format!("<={bound}")),
            (None, None) => Err("unbounded dynamic dimensions are not supported (no static bound)".to_string()),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(format!("{}[{}]", e.name(), dims.join(",")))
}

/// The static dimensions of a tensor type (bounds for bounded dynamic ones).
pub fn dims(t: &TensorType) -> Vec<i64> {
    t.dims.iter().enumerate().map(|(i, d)| d.or_else(|| t.bounds.as_ref().and_then(|b| b.get(i).copied().flatten())).unwrap_or(0)).collect()
}

/// A `dense<...>` constant as an HLO literal (`f32[2] {1, 2}`), splats expanded.
pub fn dense_literal_text(d: &DenseElements) -> Result<String, String> {
    let t = element_type(&d.ty)?;
    let dims = dims(&d.ty);
    let count: usize = dims.iter().try_fold(1usize, |acc, &x| acc.checked_mul(usize::try_from(x).ok()?)).ok_or("constant too large")?;
    if count > (1 << 28) {
        return Err("constant too large".into());
    }
    let per = if t.is_complex() { 2 } else { 1 };
    let mut array = ArrayLiteral::try_zeros(t, &dims).map_err(|e| e.to_string())?;
    let bits = &d.bits;
    let splat = bits.len() == per;
    if !splat && bits.len() != count * per {
        return Err(format!("dense constant has {} values for {} elements", bits.len() / per, count));
    }
    if t.is_complex() {
        let w = t.complex_component().map_or(4, |c| c.byte_size());
        let bytes = array.bytes_mut();
        for i in 0..count {
            let k = if splat { 0 } else { i };
            for part in 0..2 {
                let b = bits[k * 2 + part].to_le_bytes();
                let at = (i * 2 + part) * w;
                bytes[at..at + w].copy_from_slice(&b[..w]);
            }
        }
    } else {
        for i in 0..count {
            array.set_bits(i, bits[if splat { 0 } else { i }]);
        }
    }
    Ok(literal_to_text(&Literal::Array(array)))
}

/// Integers of an attribute: `array<i64: ...>`, `[1, 2]`, or `dense<...>` of integers.
pub fn ints(a: &Attr) -> Result<Vec<i64>, String> {
    match a {
        Attr::DenseArray(v) => Ok(v.clone()),
        Attr::Array(items) => items
            .iter()
            .map(|i| match i {
                Attr::Int(v, _) => i64::try_from(*v).map_err(|_| "integer out of range".to_string()),
                Attr::Bool(b) => Ok(i64::from(*b)),
                other => Err(format!("expected an integer, found {other:?}")),
            })
            .collect(),
        Attr::Dense(d) => {
            let e = match d.ty.element {
                ScalarType::Element(e) => Some(e),
                _ => None,
            };
            let count: i64 = dims(&d.ty).iter().product();
            let bits: Vec<u64> = if d.bits.len() == 1 && count > 1 { vec![d.bits[0]; count.min(1 << 20) as usize] } else { d.bits.clone() };
            Ok(bits
                .iter()
                .map(|&b| match e {
                    Some(e) if e.is_signed_int() => hlojit_runtime::literal::sign_extend(b, e.bit_width()),
                    _ => b as i64,
                })
                .collect())
        }
        Attr::Int(v, _) => Ok(vec![i64::try_from(*v).map_err(|_| "integer out of range".to_string())?]),
        other => Err(format!("expected a list of integers, found {other:?}")),
    }
}

/// A dense padding attribute `[[lo, hi], ...]` as pairs.
pub fn pairs(a: &Attr) -> Result<Vec<(i64, i64)>, String> {
    match a {
        Attr::Array(rows) if rows.iter().all(|r| matches!(r, Attr::Array(_))) => rows
            .iter()
            .map(|r| {
                let v = ints(r)?;
                if v.len() != 2 {
                    return Err("padding rows have two values".to_string());
                }
                Ok((v[0], v[1]))
            })
            .collect(),
        _ => {
            let flat = ints(a)?;
            if flat.len() % 2 != 0 {
                return Err("padding has an odd number of values".into());
            }
            Ok(flat.chunks(2).map(|p| (p[0], p[1])).collect())
        }
    }
}

pub fn list(v: &[i64]) -> String {
    format!("{{{}}}", v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","))
}

/// A string as an HLO text string literal.
pub fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            _ => out.push(ch),
        }
    }
    out.push('"');
    out
}

/// An attribute printed back as MLIR text (for `backend_config` dictionaries and
/// `frontend_attributes`, which XLA keeps as MLIR text).
pub fn mlir_attr_text(a: &Attr) -> String {
    match a {
        Attr::Unit => "unit".into(),
        Attr::Bool(b) => b.to_string(),
        Attr::Int(v, ty) => match ty {
            Some(t) => format!("{v} : {}", mlir_scalar_name(*t)),
            None => v.to_string(),
        },
        Attr::Float(v, _) => format!("{v:e}"),
        Attr::String(s) => quote(s),
        Attr::Array(items) => format!("[{}]", items.iter().map(mlir_attr_text).collect::<Vec<_>>().join(", ")),
        Attr::DenseArray(v) => format!("array<i64: {}>", v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")),
        Attr::Dict(m) => format!("{{{}}}", m.iter().map(|(k, v)| format!("{k} = {}", mlir_attr_text(v))).collect::<Vec<_>>().join(", ")),
        Attr::Symbol(s) => format!("@{s}"),
        Attr::Enum(e) => e.clone(),
        _ => String::new(),
    }
}

fn mlir_scalar_name(t: ScalarType) -> String {
    match t {
        ScalarType::Element(ElementType::Pred) => "i1".into(),
        ScalarType::Element(e) if e.is_signed_int() => format!("i{}", e.bit_width()),
        ScalarType::Element(e) if e.is_unsigned_int() => format!("ui{}", e.bit_width()),
        other => super::super::types::scalar_type_name(other),
    }
}
