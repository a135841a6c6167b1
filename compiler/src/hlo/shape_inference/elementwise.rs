//! Elementwise ops: unary and binary arithmetic, compare, select, clamp and the conversions.
//!
//! HLO has no implicit broadcasting: binary operands have equal dimensions and (mixed
//! precision being disallowed) equal element types.

use super::common::{array, array_text, dynamic_flags, fail, make, text, with_type};
use crate::hlo::attributes::ComparisonType;
use crate::hlo::opcode::Opcode;
use hlojit_runtime::{ArrayShape, ElementType, Shape};

/// Unary elementwise ops (`copy` also accepts tuples and tokens).
pub fn infer_unary(op: Opcode, operand: &Shape) -> Result<Shape, String> {
    use Opcode::*;
    if matches!(op, Copy | Domain | OptimizationBarrier) {
        return Ok(operand.without_layouts());
    }
    let a = array(op, operand, "the operand")?;
    let t = a.element_type;
    let same = || Ok(with_type(a, t));
    let type_error =
        |wanted: &str| -> Result<Shape, String> { fail!(op, "expected {wanted} operand, got {}", array_text(a)) };
    match op {
        Floor | Ceil | RoundNearestAfz | RoundNearestEven | Erf => {
            if t.is_float() {
                same()
            } else {
                type_error("a floating-point")
            }
        }
        Cosine | Sine | Tan | Exp | Expm1 | Log | Log1p | Logistic | Rsqrt | Sqrt | Cbrt | Tanh => {
            if t.is_floating() {
                same()
            } else {
                type_error("a floating-point or complex")
            }
        }
        Real | Imag => match t.complex_component() {
            Some(component) => Ok(with_type(a, component)),
            None if t.is_float() => same(),
            None => type_error("a floating-point or complex"),
        },
        Abs => match t.complex_component() {
            Some(component) => Ok(with_type(a, component)),
            None if t.is_float() || t.is_signed_int() => same(),
            None => type_error("a signed integer, floating-point or complex"),
        },
        Sign => {
            if t.is_float() || t.is_signed_int() || t.is_complex() {
                same()
            } else {
                type_error("a signed integer, floating-point or complex")
            }
        }
        Negate => {
            if t.is_int() || t.is_floating() {
                same()
            } else {
                type_error("an integer, floating-point or complex")
            }
        }
        Clz | Popcnt => {
            if t.is_int() {
                same()
            } else {
                type_error("an integer")
            }
        }
        Not => {
            if t.is_int() || t.is_pred() {
                same()
            } else {
                type_error("a pred or integer")
            }
        }
        IsFinite => {
            if t.is_float() {
                Ok(with_type(a, ElementType::Pred))
            } else {
                type_error("a floating-point")
            }
        }
        _ => fail!(op, "is not a unary elementwise op"),
    }
}

/// Both operands are arrays of equal dimensions and element type; returns the lhs array and
/// the merged dynamic flags.
fn same_shape_operands<'a>(op: Opcode, lhs: &'a Shape, rhs: &'a Shape) -> Result<(&'a ArrayShape, Vec<bool>), String> {
    let l = array(op, lhs, "lhs")?;
    let r = array(op, rhs, "rhs")?;
    if l.dims != r.dims {
        fail!(
            op,
            "operands must have equal dimensions (HLO does not broadcast implicitly), got {} and {}",
            array_text(l),
            array_text(r)
        );
    }
    if l.element_type != r.element_type {
        fail!(op, "operands must have the same element type, got {} and {}", array_text(l), array_text(r));
    }
    let dynamic = dynamic_flags(l).iter().zip(dynamic_flags(r)).map(|(a, b)| *a || b).collect();
    Ok((l, dynamic))
}

/// Binary elementwise ops, compare included (its direction and type are checked by
/// [`check_comparison_type`]).
pub fn infer_binary(op: Opcode, lhs: &Shape, rhs: &Shape) -> Result<Shape, String> {
    use Opcode::*;
    let (l, dynamic) = same_shape_operands(op, lhs, rhs)?;
    let t = l.element_type;
    let result = |t: ElementType| Ok(make(t, l.dims.clone(), dynamic.clone()));
    match op {
        Add | Multiply | Maximum | Minimum => result(t),
        Subtract | Divide | Remainder | Power | Atan2 => {
            if t.is_pred() {
                fail!(op, "expected arithmetic operands, got {}", array_text(l));
            }
            if op == Atan2 && !t.is_floating() {
                fail!(op, "expected floating-point or complex operands, got {}", array_text(l));
            }
            result(t)
        }
        ShiftLeft | ShiftRightArithmetic | ShiftRightLogical | MulHi => {
            if !t.is_int() {
                fail!(op, "expected integer operands, got {}", array_text(l));
            }
            result(t)
        }
        And | Or | Xor => {
            if !t.is_int() && !t.is_pred() {
                fail!(op, "expected pred or integer operands, got {}", array_text(l));
            }
            result(t)
        }
        Complex => match t {
            ElementType::F32 => result(ElementType::C64),
            ElementType::F64 => result(ElementType::C128),
            _ => fail!(op, "expected f32 or f64 operands, got {}", array_text(l)),
        },
        Compare => result(ElementType::Pred),
        _ => fail!(op, "is not a binary elementwise op"),
    }
}

/// A compare's explicit `type=` must fit its operands' element type.
pub fn check_comparison_type(element_type: ElementType, comparison: ComparisonType) -> Result<(), String> {
    let ok = match comparison {
        ComparisonType::Float | ComparisonType::TotalOrder => element_type.is_floating(),
        ComparisonType::Signed => element_type.is_signed_int(),
        ComparisonType::Unsigned => element_type.is_unsigned_int() || element_type.is_pred(),
    };
    if ok {
        Ok(())
    } else {
        fail!(Opcode::Compare, "comparison type {comparison} does not apply to {element_type} operands")
    }
}

/// `select(pred, on_true, on_false)`: pred has the dimensions of the branches.
pub fn infer_select(pred: &Shape, on_true: &Shape, on_false: &Shape) -> Result<Shape, String> {
    let op = Opcode::Select;
    let p = array(op, pred, "the predicate")?;
    let (t, dynamic) = same_shape_operands(op, on_true, on_false)?;
    if p.element_type != ElementType::Pred {
        fail!(op, "the predicate must have element type pred, got {}", array_text(p));
    }
    if p.dims != t.dims {
        fail!(op, "the predicate {} must have the dimensions of the operands {}", array_text(p), array_text(t));
    }
    Ok(make(t.element_type, t.dims.clone(), dynamic))
}

/// `clamp(min, operand, max)`: min and max are scalars or have the operand's shape.
pub fn infer_clamp(min: &Shape, operand: &Shape, max: &Shape) -> Result<Shape, String> {
    let op = Opcode::Clamp;
    let x = array(op, operand, "the operand")?;
    for (bound, name) in [(min, "min"), (max, "max")] {
        let b = array(op, bound, name)?;
        if b.element_type != x.element_type {
            fail!(op, "{name} {} must have the element type of the operand {}", array_text(b), array_text(x));
        }
        if !b.dims.is_empty() && b.dims != x.dims {
            fail!(
                op,
                "{name} {} must be a scalar or have the dimensions of the operand {}",
                array_text(b),
                array_text(x)
            );
        }
    }
    Ok(with_type(x, x.element_type))
}

/// `convert` to `new_type`.
pub fn infer_convert(operand: &Shape, new_type: ElementType) -> Result<Shape, String> {
    let a = array(Opcode::Convert, operand, "the operand")?;
    Ok(with_type(a, new_type))
}

/// `bitcast-convert` to `new_type`: equal widths keep the dimensions; a narrower result gains
/// a minor dimension of size `ratio`, a wider result drops a minor dimension that must be
/// `ratio`.
pub fn infer_bitcast_convert(operand: &Shape, new_type: ElementType) -> Result<Shape, String> {
    let op = Opcode::BitcastConvert;
    let a = array(op, operand, "the operand")?;
    let old_type = a.element_type;
    if old_type.is_complex() != new_type.is_complex() {
        fail!(op, "cannot convert between complex and real types ({} to {new_type})", array_text(a));
    }
    let (from, to) = (old_type.bit_width() as i64, new_type.bit_width() as i64);
    if from.max(to) % from.min(to) != 0 {
        fail!(op, "bit widths {from} ({old_type}) and {to} ({new_type}) do not divide");
    }
    let mut dims = a.dims.clone();
    let mut dynamic = dynamic_flags(a);
    if from > to {
        dims.push(from / to);
        dynamic.push(false);
    } else if from < to {
        let ratio = to / from;
        if dims.last() != Some(&ratio) {
            fail!(op, "converting {} to the wider {new_type} needs a last dimension of size {ratio}", array_text(a));
        }
        dims.pop();
        dynamic.pop();
    }
    Ok(make(new_type, dims, dynamic))
}

/// `stochastic-convert(operand, random)` to `new_type`: random bits are unsigned, as wide as
/// the operand's type, of the operand's dimensions.
pub fn infer_stochastic_convert(operand: &Shape, random: &Shape, new_type: ElementType) -> Result<Shape, String> {
    let op = Opcode::StochasticConvert;
    let a = array(op, operand, "the operand")?;
    let r = array(op, random, "the random operand")?;
    if !a.element_type.is_float() {
        fail!(op, "the operand must be floating-point, got {}", array_text(a));
    }
    if !r.element_type.is_unsigned_int() {
        fail!(op, "the random operand must be unsigned integers, got {}", array_text(r));
    }
    if r.element_type.bit_width() != a.element_type.bit_width() {
        fail!(op, "the random operand {} must be as wide as the operand {}", array_text(r), array_text(a));
    }
    if r.dims != a.dims {
        fail!(op, "the random operand {} must have the dimensions of the operand {}", array_text(r), array_text(a));
    }
    Ok(with_type(a, new_type))
}

/// `reduce-precision` with `exponent_bits` >= 1 and `mantissa_bits` >= 0, floats only.
pub fn infer_reduce_precision(operand: &Shape, exponent_bits: i64, mantissa_bits: i64) -> Result<Shape, String> {
    let op = Opcode::ReducePrecision;
    let a = array(op, operand, "the operand")?;
    if !a.element_type.is_float() {
        fail!(op, "expected a floating-point operand, got {}", text(operand));
    }
    if exponent_bits < 1 {
        fail!(op, "exponent_bits must be at least 1, got {exponent_bits}");
    }
    if mantissa_bits < 0 {
        fail!(op, "mantissa_bits must be non-negative, got {mantissa_bits}");
    }
    Ok(with_type(a, a.element_type))
}
