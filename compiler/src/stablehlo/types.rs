//! MLIR builtin types as StableHLO uses them: `tensor<2x?x3xf32, #stablehlo.bounds<?, 7, ?>>`,
//! element types (`i1`, `si8`/`ui8`/`i8`..., `f16`, `bf16`, `f8E4M3FN`..., `complex<f32>`),
//! `!stablehlo.token` and `tuple<...>`.

use super::cursor::{Cursor, PResult};
use super::ir::{ScalarType, TensorType, Type};
use hlojit_runtime::ElementType;

/// The element type MLIR spells `name`.
pub fn scalar_type_from_name(name: &str) -> Option<ScalarType> {
    use ElementType::*;
    let t = match name {
        "i1" => Pred,
        "i2" | "si2" => S2,
        "i4" | "si4" => S4,
        "i8" | "si8" => S8,
        "i16" | "si16" => S16,
        "i32" | "si32" => S32,
        "i64" | "si64" => S64,
        "ui2" => U2,
        "ui4" => U4,
        "ui8" => U8,
        "ui16" => U16,
        "ui32" => U32,
        "ui64" => U64,
        "f16" => F16,
        "bf16" => BF16,
        "f32" => F32,
        "f64" => F64,
        "f8E5M2" => F8E5M2,
        "f8E4M3FN" => F8E4M3FN,
        "f8E4M3B11FNUZ" => F8E4M3B11FNUZ,
        "f8E5M2FNUZ" => F8E5M2FNUZ,
        "f8E4M3FNUZ" => F8E4M3FNUZ,
        "f8E4M3" => F8E4M3,
        "f8E3M4" => F8E3M4,
        "f8E8M0FNU" => F8E8M0FNU,
        "f4E2M1FN" => F4E2M1FN,
        "index" => return Some(ScalarType::Index),
        "none" => return Some(ScalarType::None),
        _ => return None,
    };
    Some(ScalarType::Element(t))
}

/// MLIR's name of an element type (for messages).
pub fn scalar_type_name(t: ScalarType) -> String {
    match t {
        ScalarType::Index => "index".into(),
        ScalarType::None => "none".into(),
        ScalarType::Element(e) => e.name().to_string(),
    }
}

/// An element type: a scalar name or `complex<f32>` / `complex<f64>`.
pub fn parse_element_type(c: &mut Cursor) -> PResult<ScalarType> {
    let start = c.pos();
    if c.eat_word("complex") {
        c.expect("<")?;
        let inner = parse_element_type(c)?;
        c.expect(">")?;
        return match inner {
            ScalarType::Element(ElementType::F32) => Ok(ScalarType::Element(ElementType::C64)),
            ScalarType::Element(ElementType::F64) => Ok(ScalarType::Element(ElementType::C128)),
            _ => Err(c.error_at(start, "complex element types are complex<f32> and complex<f64>")),
        };
    }
    let name = c.ident()?;
    scalar_type_from_name(name).ok_or_else(|| c.error_at(start, format!("unknown element type '{name}'")))
}

/// Any type.
pub fn parse_type(c: &mut Cursor) -> PResult<Type> {
    c.skip_ws();
    let start = c.pos();
    if c.eat_word("tensor") {
        return parse_tensor_body(c).map(Type::Tensor);
    }
    if c.eat_word("tuple") {
        c.expect("<")?;
        let mut elements = Vec::new();
        if !c.eat(">") {
            loop {
                elements.push(parse_type(c)?);
                if c.eat(">") {
                    break;
                }
                c.expect(",")?;
            }
        }
        return Ok(Type::Tuple(elements));
    }
    if c.eat("!stablehlo.token") || c.eat("!vhlo.token_v1") {
        return Ok(Type::Token);
    }
    if c.rest().starts_with('!') {
        let name = c.sigil_name('!')?;
        if c.peek() == Some('<') {
            c.skip_balanced('<', '>')?;
        }
        return Ok(Type::Other(name));
    }
    if c.rest().starts_with("complex") || c.rest().starts_with(|ch: char| ch.is_ascii_alphabetic()) {
        return parse_element_type(c).map(Type::Scalar);
    }
    Err(c.error_at(start, "expected a type"))
}

/// `<2x?x3xf32, encoding>` after `tensor`.
fn parse_tensor_body(c: &mut Cursor) -> PResult<TensorType> {
    c.expect("<")?;
    let mut dims = Vec::new();
    loop {
        c.skip_ws();
        let rest = c.rest();
        if rest.starts_with('?') {
            c.set_pos(c.pos() + 1);
            dims.push(None);
        } else if rest.starts_with(|ch: char| ch.is_ascii_digit()) {
            let len = rest.find(|ch: char| !ch.is_ascii_digit()).unwrap_or(rest.len());
            let start = c.pos();
            let v: i64 = rest[..len].parse().map_err(|_| c.error_at(start, "dimension size out of range"))?;
            c.set_pos(c.pos() + len);
            dims.push(Some(v));
        } else {
            break;
        }
        if !c.rest().starts_with('x') {
            return Err(c.error("expected 'x' after a dimension size"));
        }
        c.set_pos(c.pos() + 1);
    }
    let element = parse_element_type(c)?;
    let mut bounds = None;
    if c.eat(",") {
        // The encoding: `#stablehlo.bounds<?, 7>` (or VHLO's); anything else is ignored.
        if c.eat("#stablehlo.bounds<") || c.eat("#vhlo.type_extensions_v1<bounds =") {
            let mut b = Vec::new();
            c.eat("[");
            loop {
                if c.eat("?") {
                    b.push(None);
                } else {
                    let start = c.pos();
                    let v = c.integer()?;
                    b.push(Some(i64::try_from(v).map_err(|_| c.error_at(start, "bound out of range"))?));
                }
                if !c.eat(",") {
                    break;
                }
            }
            c.eat("]");
            c.expect(">")?;
            bounds = Some(b);
        } else {
            skip_attribute_like(c)?;
        }
    }
    c.expect(">")?;
    Ok(TensorType { dims, bounds, element })
}

/// Skips one attribute-ish item (an encoding we do not interpret).
fn skip_attribute_like(c: &mut Cursor) -> PResult<()> {
    c.skip_ws();
    let rest = c.rest();
    let len = rest.find(|ch: char| ch == '<' || ch == '>' || ch == ',').unwrap_or(rest.len());
    c.set_pos(c.pos() + len);
    if c.rest().starts_with('<') {
        c.skip_balanced('<', '>')?;
    }
    Ok(())
}

/// A list of types: `(t, t) -> t`, `(t) -> (t, t)`, `t, t` or `t -> t` after an op's colon,
/// returned as (operand types if a function type was written, result types).
pub fn parse_op_signature(c: &mut Cursor) -> PResult<(Option<Vec<Type>>, Vec<Type>)> {
    let save = c.pos();
    if c.eat("(") {
        let mut inputs = Vec::new();
        if !c.eat(")") {
            loop {
                inputs.push(parse_type(c)?);
                if c.eat(")") {
                    break;
                }
                c.expect(",")?;
            }
        }
        if c.eat("->") {
            return Ok((Some(inputs), parse_result_types(c)?));
        }
        c.set_pos(save);
    }
    let mut types = vec![parse_type(c)?];
    loop {
        let before = c.pos();
        if c.eat("->") {
            return Ok((Some(types), parse_result_types(c)?));
        }
        // A comma continues the list only if a type follows (not the next attribute).
        if c.eat(",") {
            let after = c.pos();
            c.skip_ws();
            let r = c.rest();
            if r.starts_with("tensor") || r.starts_with('!') || r.starts_with("tuple") {
                let _ = after;
                types.push(parse_type(c)?);
                continue;
            }
        }
        c.set_pos(before);
        return Ok((None, types));
    }
}

/// Result types after `->`: one type or a parenthesized list.
pub fn parse_result_types(c: &mut Cursor) -> PResult<Vec<Type>> {
    if c.eat("(") {
        let mut types = Vec::new();
        if c.eat(")") {
            return Ok(types);
        }
        loop {
            types.push(parse_type(c)?);
            // Result attributes in function signatures: `tensor<f32> {jax.result_info = ...}`.
            if c.peek() == Some('{') {
                c.skip_balanced('{', '}')?;
            }
            if c.rest().starts_with("loc(") {
                c.set_pos(c.pos() + 3);
                c.skip_balanced('(', ')')?;
            }
            if c.eat(")") {
                return Ok(types);
            }
            c.expect(",")?;
        }
    }
    Ok(vec![parse_type(c)?])
}
