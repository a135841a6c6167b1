//! Ops that move elements around: broadcast, reshape, transpose, slice, concatenate, pad,
//! reverse, iota, dynamic-slice and dynamic-update-slice.

use super::common::{
    array, array_text, checked_size, dims_in_range_unique, dynamic_flags, fail, is_dynamic, is_permutation, list, make,
    make_static, with_type,
};
use crate::hlo::attributes::{PadDim, SliceDim};
use crate::hlo::opcode::Opcode;
use hlojit_runtime::{ElementType, Shape};

/// `broadcast` to `out_dims`: operand dimension `i` becomes output dimension `dims[i]` and
/// must have its size exactly (HLO broadcast does not stretch size-1 dimensions).
pub fn infer_broadcast(operand: &Shape, out_dims: &[i64], dims: &[i64]) -> Result<Shape, String> {
    let op = Opcode::Broadcast;
    let a = array(op, operand, "the operand")?;
    if dims.len() != a.rank() {
        fail!(op, "dimensions {} must have one entry per operand dimension of {}", list(dims), array_text(a));
    }
    dims_in_range_unique(op, "broadcast dimension", dims, out_dims.len())?;
    if let Some(&d) = out_dims.iter().find(|&&d| d < 0) {
        fail!(op, "negative output dimension size {d}");
    }
    let mut dynamic = vec![false; out_dims.len()];
    for (i, &d) in dims.iter().enumerate() {
        if out_dims[d as usize] != a.dims[i] {
            fail!(
                op,
                "operand dimension {i} has size {} but output dimension {d} has size {}",
                a.dims[i],
                out_dims[d as usize]
            );
        }
        dynamic[d as usize] = is_dynamic(a, i);
    }
    Ok(make(a.element_type, out_dims.to_vec(), dynamic))
}

/// `reshape` to `new_dims` (same element count, logical row-major order).
pub fn infer_reshape(operand: &Shape, new_dims: &[i64]) -> Result<Shape, String> {
    let op = Opcode::Reshape;
    let a = array(op, operand, "the operand")?;
    if let Some(&d) = new_dims.iter().find(|&&d| d < 0) {
        fail!(op, "negative dimension size {d}");
    }
    let count: i64 = new_dims.iter().product();
    if count != a.element_count() {
        fail!(
            op,
            "cannot reshape {} ({} elements) to {:?} ({count} elements)",
            array_text(a),
            a.element_count(),
            new_dims
        );
    }
    Ok(make_static(a.element_type, new_dims.to_vec()))
}

/// `dynamic-reshape(operand, sizes...)` to bounds `new_dims`: one s32 scalar size per result
/// dimension.
pub fn infer_dynamic_reshape(
    operand: &Shape,
    sizes: &[&Shape],
    new_dims: &[i64],
    dynamic: &[bool],
) -> Result<Shape, String> {
    let op = Opcode::DynamicReshape;
    let a = array(op, operand, "the operand")?;
    if sizes.len() != new_dims.len() {
        fail!(op, "expected {} size operands (one per result dimension), got {}", new_dims.len(), sizes.len());
    }
    for (i, s) in sizes.iter().enumerate() {
        if !s.compatible(&Shape::scalar(ElementType::S32)) {
            fail!(op, "size operand {i} must be s32[], got {}", s.to_text(false));
        }
    }
    let count: i64 = new_dims.iter().product();
    if count != a.element_count() {
        fail!(
            op,
            "cannot reshape {} ({} elements) to bounds {:?} ({count} elements)",
            array_text(a),
            a.element_count(),
            new_dims
        );
    }
    let dynamic = (0..new_dims.len()).map(|i| dynamic.get(i).copied().unwrap_or(false)).collect();
    Ok(make(a.element_type, new_dims.to_vec(), dynamic))
}

/// `transpose`: output dimension `i` is operand dimension `permutation[i]`.
pub fn infer_transpose(operand: &Shape, permutation: &[i64]) -> Result<Shape, String> {
    let op = Opcode::Transpose;
    let a = array(op, operand, "the operand")?;
    if !is_permutation(permutation, a.rank()) {
        fail!(op, "dimensions {} are not a permutation of the dimensions of {}", list(permutation), array_text(a));
    }
    let dims = permutation.iter().map(|&p| a.dims[p as usize]).collect();
    let dynamic = permutation.iter().map(|&p| is_dynamic(a, p as usize)).collect();
    Ok(make(a.element_type, dims, dynamic))
}

/// `slice` with `[start:limit:stride]` per dimension.
pub fn infer_slice(operand: &Shape, slice: &[SliceDim]) -> Result<Shape, String> {
    let op = Opcode::Slice;
    let a = array(op, operand, "the operand")?;
    if slice.len() != a.rank() {
        fail!(op, "{} slice ranges given for {} of rank {}", slice.len(), array_text(a), a.rank());
    }
    let mut dims = Vec::with_capacity(slice.len());
    let mut dynamic = Vec::with_capacity(slice.len());
    for (i, s) in slice.iter().enumerate() {
        if s.start < 0 || s.start > s.limit || s.limit > a.dims[i] {
            fail!(
                op,
                "dimension {i}: slice [{}:{}] is not within [0:{}] with start <= limit",
                s.start,
                s.limit,
                a.dims[i]
            );
        }
        if s.stride <= 0 {
            fail!(op, "dimension {i}: stride {} must be positive", s.stride);
        }
        // At most limit - start; in i128 so that a huge stride cannot overflow the rounding.
        let size = (((s.limit - s.start) as i128 + s.stride as i128 - 1) / s.stride as i128) as i64;
        dims.push(size);
        // Slicing one element out of a dynamic dimension makes it static.
        dynamic.push(size != 1 && is_dynamic(a, i));
    }
    Ok(make(a.element_type, dims, dynamic))
}

/// `concatenate` along `dimension`: all operands agree on every other dimension.
pub fn infer_concatenate(operands: &[&Shape], dimension: i64) -> Result<Shape, String> {
    let op = Opcode::Concatenate;
    let Some(first) = operands.first() else {
        fail!(op, "expected at least one operand");
    };
    let first = array(op, first, "operand 0")?;
    if dimension < 0 || dimension >= first.rank() as i64 {
        fail!(op, "dimension {dimension} is out of range for rank {}", first.rank());
    }
    let d = dimension as usize;
    let mut dims = first.dims.clone();
    let mut dynamic = dynamic_flags(first);
    for (k, shape) in operands.iter().enumerate().skip(1) {
        let a = array(op, shape, &format!("operand {k}"))?;
        if a.element_type != first.element_type {
            fail!(op, "operand {k} {} has another element type than operand 0 {}", array_text(a), array_text(first));
        }
        if a.rank() != first.rank() {
            fail!(op, "operand {k} {} has another rank than operand 0 {}", array_text(a), array_text(first));
        }
        for (i, flag) in dynamic.iter_mut().enumerate() {
            if i != d && a.dims[i] != first.dims[i] {
                fail!(
                    op,
                    "operand {k} {} differs from operand 0 {} in dimension {i}, which is not the concatenated dimension {d}",
                    array_text(a),
                    array_text(first)
                );
            }
            *flag |= is_dynamic(a, i);
        }
        dims[d] += a.dims[d];
    }
    Ok(make(first.element_type, dims, dynamic))
}

/// `pad(operand, value)` with `low_high_interior` per dimension (low/high may be negative).
pub fn infer_pad(operand: &Shape, value: &Shape, padding: &[PadDim]) -> Result<Shape, String> {
    let op = Opcode::Pad;
    let a = array(op, operand, "the operand")?;
    let v = array(op, value, "the padding value")?;
    if !v.dims.is_empty() {
        fail!(op, "the padding value must be a scalar, got {}", array_text(v));
    }
    if v.element_type != a.element_type {
        fail!(op, "the padding value {} must have the operand's element type ({})", array_text(v), array_text(a));
    }
    if padding.len() != a.rank() {
        fail!(op, "{} padding entries given for {} of rank {}", padding.len(), array_text(a), a.rank());
    }
    let mut dims = Vec::with_capacity(a.rank());
    for (i, p) in padding.iter().enumerate() {
        if p.interior < 0 {
            fail!(op, "dimension {i}: interior padding {} must be non-negative", p.interior);
        }
        let n = a.dims[i] as i128;
        let size = n + p.low as i128 + p.high as i128 + (n - 1).max(0) * p.interior as i128;
        if size < 0 {
            fail!(op, "dimension {i}: padding {}_{}_{} makes the size negative ({size})", p.low, p.high, p.interior);
        }
        dims.push(checked_size(op, format_args!("dimension {i}: padding {}_{}_{}", p.low, p.high, p.interior), size)?);
    }
    Ok(make(a.element_type, dims, dynamic_flags(a)))
}

/// `reverse` along `dims`.
pub fn infer_reverse(operand: &Shape, dims: &[i64]) -> Result<Shape, String> {
    let op = Opcode::Reverse;
    let a = array(op, operand, "the operand")?;
    dims_in_range_unique(op, "dimension", dims, a.rank())?;
    Ok(with_type(a, a.element_type))
}

/// `iota` of `shape` counting along `iota_dimension`: an array of rank >= 1 of a numeric type.
pub fn infer_iota(shape: &Shape, iota_dimension: i64) -> Result<Shape, String> {
    let op = Opcode::Iota;
    let a = array(op, shape, "the result")?;
    if a.rank() == 0 {
        fail!(op, "the result must have rank >= 1, got {}", array_text(a));
    }
    if iota_dimension < 0 || iota_dimension >= a.rank() as i64 {
        fail!(op, "iota_dimension {iota_dimension} is out of range for {}", array_text(a));
    }
    let t = a.element_type;
    if !(t.is_int() || t.is_floating()) {
        fail!(op, "the element type must be an integer, floating-point or complex type, got {t}");
    }
    Ok(with_type(a, t))
}

/// Start indices of dynamic-slice / dynamic-update-slice: one integer scalar per operand
/// dimension, all of one type.
fn check_start_indices(op: Opcode, indices: &[&Shape], rank: usize) -> Result<(), String> {
    if indices.len() != rank {
        fail!(op, "expected {rank} start indices (one per operand dimension), got {}", indices.len());
    }
    let mut first_type = None;
    for (i, s) in indices.iter().enumerate() {
        let t = match s {
            Shape::Array(a) if a.dims.is_empty() && a.element_type.is_int() => a.element_type,
            other => fail!(op, "start index {i} must be an integer scalar, got {}", other.to_text(false)),
        };
        match first_type {
            None => first_type = Some(t),
            Some(f) if f != t => fail!(op, "start indices must all have one type, got {f} and {t}"),
            _ => {}
        }
    }
    Ok(())
}

/// `dynamic-slice(operand, starts...)` of `slice_sizes`.
pub fn infer_dynamic_slice(operand: &Shape, start_indices: &[&Shape], slice_sizes: &[i64]) -> Result<Shape, String> {
    let op = Opcode::DynamicSlice;
    let a = array(op, operand, "the operand")?;
    check_start_indices(op, start_indices, a.rank())?;
    if slice_sizes.len() != a.rank() {
        fail!(op, "{} slice sizes given for {} of rank {}", slice_sizes.len(), array_text(a), a.rank());
    }
    for (i, &size) in slice_sizes.iter().enumerate() {
        if size < 0 || size > a.dims[i] {
            fail!(op, "slice size {size} of dimension {i} is not within [0, {}]", a.dims[i]);
        }
    }
    Ok(make_static(a.element_type, slice_sizes.to_vec()))
}

/// `dynamic-update-slice(operand, update, starts...)`.
pub fn infer_dynamic_update_slice(operand: &Shape, update: &Shape, start_indices: &[&Shape]) -> Result<Shape, String> {
    let op = Opcode::DynamicUpdateSlice;
    let a = array(op, operand, "the operand")?;
    let u = array(op, update, "the update")?;
    check_start_indices(op, start_indices, a.rank())?;
    if u.rank() != a.rank() {
        fail!(op, "the update {} must have the rank of the operand {}", array_text(u), array_text(a));
    }
    if u.element_type != a.element_type {
        fail!(op, "the update {} must have the element type of the operand {}", array_text(u), array_text(a));
    }
    for i in 0..a.rank() {
        if u.dims[i] > a.dims[i] {
            fail!(op, "the update {} is larger than the operand {} in dimension {i}", array_text(u), array_text(a));
        }
    }
    Ok(with_type(a, a.element_type))
}
