//! Data movement on literals: every element of the result is a copy of one operand element (or
//! of the padding value), so these are exact for every element type.

use crate::hlo::Instruction;
use hlojit_runtime::{ArrayLiteral, ElementType};
use num_complex::Complex64;

pub(super) fn broadcast(inst: &Instruction, operand: &ArrayLiteral) -> Option<ArrayLiteral> {
    let dims = inst.attrs.dimensions.as_deref().unwrap_or(&[]);
    let strides = row_major_strides(operand.dims());
    move_elements(inst, operand, None, |out| {
        Some(dims.iter().zip(&strides).map(|(&d, &s)| out[d as usize] * s).sum::<i64>() as usize)
    })
}

pub(super) fn reshape(inst: &Instruction, operand: &ArrayLiteral) -> Option<ArrayLiteral> {
    let shape = inst.shape.as_array()?;
    operand.clone().reshaped(&shape.dims).ok()
}

pub(super) fn transpose(inst: &Instruction, operand: &ArrayLiteral) -> Option<ArrayLiteral> {
    let perm = inst.attrs.dimensions.as_deref()?;
    let strides = row_major_strides(operand.dims());
    move_elements(inst, operand, None, |out| {
        Some(perm.iter().enumerate().map(|(i, &p)| out[i] * strides[p as usize]).sum::<i64>() as usize)
    })
}

pub(super) fn slice(inst: &Instruction, operand: &ArrayLiteral) -> Option<ArrayLiteral> {
    let bounds = inst.attrs.slice.as_deref()?;
    let strides = row_major_strides(operand.dims());
    move_elements(inst, operand, None, |out| {
        Some(bounds.iter().zip(&strides).zip(out).map(|((b, &s), &o)| (b.start + o * b.stride) * s).sum::<i64>() as usize)
    })
}

pub(super) fn reverse(inst: &Instruction, operand: &ArrayLiteral) -> Option<ArrayLiteral> {
    let reversed = inst.attrs.dimensions.as_deref().unwrap_or(&[]);
    let dims = operand.dims();
    let strides = row_major_strides(dims);
    move_elements(inst, operand, None, |out| {
        let index = |d: usize| if reversed.contains(&(d as i64)) { dims[d] - 1 - out[d] } else { out[d] };
        Some((0..dims.len()).map(|d| index(d) * strides[d]).sum::<i64>() as usize)
    })
}

pub(super) fn pad(inst: &Instruction, operand: &ArrayLiteral, value: &ArrayLiteral) -> Option<ArrayLiteral> {
    let padding = inst.attrs.padding.as_deref()?;
    let dims = operand.dims();
    let strides = row_major_strides(dims);
    move_elements(inst, operand, Some(value.bytes()), |out| {
        let mut at = 0;
        for (d, p) in padding.iter().enumerate() {
            let shifted = out[d] - p.low;
            let step = p.interior + 1;
            if shifted < 0 || shifted % step != 0 || shifted / step >= dims[d] {
                return None;
            }
            at += shifted / step * strides[d];
        }
        Some(at as usize)
    })
}

pub(super) fn concatenate(inst: &Instruction, operands: &[&ArrayLiteral]) -> Option<ArrayLiteral> {
    let axis = *inst.attrs.dimensions.as_deref()?.first()? as usize;
    let shape = inst.shape.as_array()?;
    let mut out = ArrayLiteral::try_zeros(shape.element_type, &shape.dims).ok()?;
    let elem = shape.element_type.byte_size();
    // Row-major: each operand contributes one contiguous run per index of the dimensions
    // before the axis.
    let outer: i64 = shape.dims[..axis].iter().product();
    let inner: i64 = shape.dims[axis + 1..].iter().product();
    let mut offset = 0usize;
    for o in operands {
        if o.element_type() != shape.element_type {
            return None;
        }
        let run = (o.dims()[axis] * inner) as usize * elem;
        let row = (shape.dims[axis] * inner) as usize * elem;
        for r in 0..outer as usize {
            out.bytes_mut()[r * row + offset..r * row + offset + run].copy_from_slice(&o.bytes()[r * run..(r + 1) * run]);
        }
        offset += run;
    }
    Some(out)
}

/// `iota`: each element is its index along `iota_dimension`, converted to the element type.
pub(super) fn iota(inst: &Instruction) -> Option<ArrayLiteral> {
    let shape = inst.shape.as_array()?;
    let axis = inst.attrs.iota_dimension? as usize;
    let t = shape.element_type;
    if !(t.is_int() || t.is_native_float() || t.is_complex()) {
        return None;
    }
    let mut out = ArrayLiteral::try_zeros(t, &shape.dims).ok()?;
    let inner: i64 = shape.dims[axis + 1..].iter().product();
    let size = shape.dims[axis];
    for i in 0..out.element_count() {
        let v = (i as i64 / inner.max(1)) % size.max(1);
        match t {
            _ if t.is_int() => out.set_i64(i, v),
            // Through f32 as XLA converts an integer to f16/bf16 (exact below 2^24).
            ElementType::F16 | ElementType::BF16 => out.set_f64(i, v as f32 as f64),
            _ if t.is_complex() => out.set_c128(i, Complex64::new(v as f64, 0.0)),
            _ => out.set_f64(i, v as f64),
        }
    }
    Some(out)
}

fn row_major_strides(dims: &[i64]) -> Vec<i64> {
    let mut strides = vec![1; dims.len()];
    for d in (0..dims.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * dims[d + 1];
    }
    strides
}

/// The result of `inst`: element by element (row-major), the operand element `source` names
/// for the result index, or `fill` (one element's bytes) where it names none.
fn move_elements(
    inst: &Instruction,
    operand: &ArrayLiteral,
    fill: Option<&[u8]>,
    source: impl Fn(&[i64]) -> Option<usize>,
) -> Option<ArrayLiteral> {
    let shape = inst.shape.as_array()?;
    if operand.element_type() != shape.element_type {
        return None;
    }
    let mut out = ArrayLiteral::try_zeros(shape.element_type, &shape.dims).ok()?;
    let elem = shape.element_type.byte_size();
    let mut index = vec![0i64; shape.dims.len()];
    for i in 0..out.element_count() {
        let bytes = match source(&index) {
            Some(at) => operand.bytes().get(at * elem..(at + 1) * elem)?,
            None => fill?,
        };
        out.bytes_mut()[i * elem..(i + 1) * elem].copy_from_slice(bytes);
        for d in (0..index.len()).rev() {
            index[d] += 1;
            if index[d] < shape.dims[d] {
                break;
            }
            index[d] = 0;
        }
    }
    Some(out)
}
