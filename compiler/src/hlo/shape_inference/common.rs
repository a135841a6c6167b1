//! Helpers every op family uses: operand and attribute access with messages that name the
//! problem, dimension-list checks, window arithmetic and reducer signatures.

use crate::hlo::attributes::WindowDim;
use crate::hlo::module::ProgramShape;
use hlojit_runtime::limits::MAX_ARRAY_ELEMENTS;
use hlojit_runtime::{ArrayShape, ElementType, Shape};
use std::collections::HashSet;
use std::fmt::Display;

/// Returns `Err("<op>: <message>")`.
macro_rules! fail {
    ($op:expr, $($arg:tt)*) => {
        return Err(format!("{}: {}", $op, format_args!($($arg)*)))
    };
}
pub(crate) use fail;

/// A shape as messages print it: no layout.
pub(crate) fn text(shape: &Shape) -> String {
    shape.to_text(false)
}

pub(crate) fn array_text(shape: &ArrayShape) -> String {
    Shape::Array(shape.clone()).to_text(false)
}

pub(crate) fn list(values: &[i64]) -> String {
    let parts: Vec<String> = values.iter().map(|v| v.to_string()).collect();
    format!("{{{}}}", parts.join(","))
}

/// The operand as an array, or an error naming it.
pub(crate) fn array<'a>(op: impl Display, shape: &'a Shape, what: &str) -> Result<&'a ArrayShape, String> {
    match shape {
        Shape::Array(a) => Ok(a),
        other => fail!(op, "{what} must be an array, got {}", text(other)),
    }
}

pub(crate) fn operand_count(op: impl Display, operands: &[&Shape], expected: usize) -> Result<(), String> {
    if operands.len() != expected {
        fail!(op, "expected {expected} operand(s), got {}", operands.len());
    }
    Ok(())
}

pub(crate) fn at_least_operands(op: impl Display, operands: &[&Shape], minimum: usize) -> Result<(), String> {
    if operands.len() < minimum {
        fail!(op, "expected at least {minimum} operand(s), got {}", operands.len());
    }
    Ok(())
}

pub(crate) fn called_count(op: impl Display, called: &[&ProgramShape], expected: usize) -> Result<(), String> {
    if called.len() != expected {
        fail!(op, "expected {expected} called computation(s), got {}", called.len());
    }
    Ok(())
}

/// A required attribute.
pub(crate) fn required<'a, T>(op: impl Display, value: Option<&'a T>, name: &str) -> Result<&'a T, String> {
    match value {
        Some(v) => Ok(v),
        None => fail!(op, "missing required attribute {name}"),
    }
}

/// `window=` of reduce-window and select-and-scatter, which XLA prints without it for a rank-0
/// operand (the window then has no dimensions).
pub(crate) fn window_or_scalar<'a>(
    op: impl Display,
    window: Option<&'a Vec<crate::hlo::attributes::WindowDim>>,
    operand: Option<&Shape>,
) -> Result<&'a [crate::hlo::attributes::WindowDim], String> {
    match window {
        Some(w) => Ok(w),
        None if operand.is_some_and(|s| s.is_array() && s.dims().is_empty()) => Ok(&[]),
        None => fail!(op, "missing required attribute window"),
    }
}

/// The declared result shape, for ops whose result is not derivable from their operands.
pub(crate) fn declared<'a>(op: impl Display, declared: Option<&'a Shape>, why: &str) -> Result<&'a Shape, String> {
    match declared {
        Some(s) => Ok(s),
        None => fail!(op, "the result shape is not derivable from the operands ({why}); a declared shape is needed"),
    }
}

/// A single dimension given as `dimensions={d}`.
pub(crate) fn single_dimension(op: impl Display, dims: Option<&Vec<i64>>) -> Result<i64, String> {
    let dims = required(&op, dims, "dimensions")?;
    match dims.as_slice() {
        [d] => Ok(*d),
        _ => fail!(op, "dimensions must hold exactly one dimension, got {}", list(dims)),
    }
}

/// Checks that every dimension number is in `[0, rank)` and none repeats.
pub(crate) fn dims_in_range_unique(op: impl Display, what: &str, dims: &[i64], rank: usize) -> Result<(), String> {
    let mut seen = HashSet::new();
    for &d in dims {
        if d < 0 || d >= rank as i64 {
            fail!(op, "{what} {d} is out of range for rank {rank}");
        }
        if !seen.insert(d) {
            fail!(op, "{what} {d} appears more than once in {}", list(dims));
        }
    }
    Ok(())
}

pub(crate) fn is_sorted_strictly(dims: &[i64]) -> bool {
    dims.windows(2).all(|w| w[0] < w[1])
}

pub(crate) fn is_permutation(dims: &[i64], rank: usize) -> bool {
    if dims.len() != rank {
        return false;
    }
    let mut seen = vec![false; rank];
    for &d in dims {
        if d < 0 || d >= rank as i64 || std::mem::replace(&mut seen[d as usize], true) {
            return false;
        }
    }
    true
}

pub(crate) fn make(element_type: ElementType, dims: Vec<i64>, dynamic: Vec<bool>) -> Shape {
    debug_assert_eq!(dims.len(), dynamic.len());
    Shape::Array(ArrayShape { element_type, dims, dynamic, layout: None })
}

pub(crate) fn make_static(element_type: ElementType, dims: Vec<i64>) -> Shape {
    Shape::Array(ArrayShape::new(element_type, dims))
}

/// The same dimensions with another element type (dynamic flags kept, layout dropped).
pub(crate) fn with_type(shape: &ArrayShape, element_type: ElementType) -> Shape {
    make(element_type, shape.dims.clone(), dynamic_flags(shape))
}

/// Dynamic flags, padded to the rank when a hand-built shape left them short.
pub(crate) fn dynamic_flags(shape: &ArrayShape) -> Vec<bool> {
    (0..shape.rank()).map(|i| shape.dynamic.get(i).copied().unwrap_or(false)).collect()
}

pub(crate) fn is_dynamic(shape: &ArrayShape, dim: usize) -> bool {
    shape.dynamic.get(dim).copied().unwrap_or(false)
}

/// XLA's ordering of "precision" for mixed operands (dot, convolution): complex over real
/// floats over integers over pred, then the wider type; among floats of one width, more
/// exponent bits then more mantissa bits.
pub(crate) fn higher_precision(a: ElementType, b: ElementType) -> ElementType {
    fn rank(t: ElementType) -> (u8, u32, u32) {
        let class = if t.is_complex() {
            3
        } else if t.is_float() {
            2
        } else if t.is_int() {
            1
        } else {
            0
        };
        let (exponent, mantissa) = t.float_format().map(|f| (f.exponent_bits, f.mantissa_bits)).unwrap_or((0, 0));
        (class, t.bit_width() * 64 + exponent, mantissa)
    }
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

/// Size of a base of `bound` elements dilated by `dilation` (holes inserted between elements),
/// in i128 so that attribute values from the text cannot overflow it.
pub(crate) fn dilated_bound(bound: i64, dilation: i64) -> i128 {
    if bound == 0 {
        0
    } else {
        (bound as i128 - 1) * dilation as i128 + 1
    }
}

/// Number of window positions of a window of `window` elements over `bound` elements.
pub(crate) fn strided_bound(bound: i128, window: i128, stride: i64) -> i128 {
    if window > bound || bound <= 0 {
        0
    } else {
        (bound - window) / stride as i128 + 1
    }
}

/// A dimension size computed (in i128) from attributes: an error when it is beyond the array
/// size limit, so that no size computed from the text wraps around.
pub(crate) fn checked_size(op: impl Display, what: impl Display, size: i128) -> Result<i64, String> {
    if size > MAX_ARRAY_ELEMENTS as i128 {
        fail!(op, "{what} gives a dimension of {size} elements, more than hlojit's limit of {MAX_ARRAY_ELEMENTS}");
    }
    Ok(size as i64)
}

/// Output dimensions of a windowed op (reduce-window, convolution, select-and-scatter) over a base
/// of `base` dimensions.
pub(crate) fn window_output_dims(op: impl Display, base: &[i64], window: &[WindowDim]) -> Result<Vec<i64>, String> {
    if window.len() != base.len() {
        fail!(op, "the window has {} dimensions but the base has rank {}", window.len(), base.len());
    }
    let mut out = Vec::with_capacity(base.len());
    for (i, (w, &b)) in window.iter().zip(base).enumerate() {
        if w.size <= 0 {
            fail!(op, "window dimension {i} has non-positive size {}", w.size);
        }
        if w.stride <= 0 {
            fail!(op, "window dimension {i} has non-positive stride {}", w.stride);
        }
        if w.base_dilation < 1 {
            fail!(op, "window dimension {i} has base dilation {} (must be >= 1)", w.base_dilation);
        }
        if w.window_dilation < 1 {
            fail!(op, "window dimension {i} has window dilation {} (must be >= 1)", w.window_dilation);
        }
        let padded = w.padding_low as i128 + dilated_bound(b, w.base_dilation) + w.padding_high as i128;
        let size = strided_bound(padded, dilated_bound(w.size, w.window_dilation), w.stride);
        out.push(checked_size(&op, format_args!("window dimension {i}"), size)?);
    }
    Ok(out)
}

/// Checks a reducer (reduce, reduce-window, scatter, select-and-scatter's scatter): it takes
/// `2N` scalars (N accumulators, then N inputs) and returns a scalar (N = 1) or a tuple of N
/// scalars; accumulator `i` has the type of `init_types[i]`, input `i` the type of
/// `input_types[i]`. Returns the accumulator types.
pub(crate) fn check_reducer(
    op: impl Display,
    reducer: &ProgramShape,
    init_types: &[ElementType],
    input_types: &[ElementType],
) -> Result<Vec<ElementType>, String> {
    let n = input_types.len();
    if reducer.parameters.len() != 2 * n {
        fail!(op, "the reduction computation must take {} parameters, but takes {}", 2 * n, reducer.parameters.len());
    }
    let accumulators: Vec<&Shape> = match &reducer.result {
        Shape::Tuple(elements) => {
            if elements.len() != n {
                fail!(
                    op,
                    "the reduction computation must return a tuple of {n} scalars, but returns {}",
                    text(&reducer.result)
                );
            }
            elements.iter().collect()
        }
        array @ Shape::Array(_) if n == 1 => vec![array],
        other => fail!(
            op,
            "the reduction computation must return {}, but returns {}",
            if n == 1 { "a scalar".to_string() } else { format!("a tuple of {n} scalars") },
            text(other)
        ),
    };
    let mut types = Vec::with_capacity(n);
    for (i, acc) in accumulators.iter().enumerate() {
        let Some(acc_type) = acc.element_type().filter(|_| acc.is_scalar()) else {
            fail!(op, "the reduction computation must return scalars, but returns {}", text(&reducer.result));
        };
        let acc_param = &reducer.parameters[i];
        if !acc_param.compatible(&Shape::scalar(acc_type)) {
            fail!(
                op,
                "parameter {i} of the reduction computation is {} but its result {i} is {}",
                text(acc_param),
                text(acc)
            );
        }
        if init_types[i] != acc_type {
            fail!(op, "init value {i} is {}[] but the reduction computation accumulates {}[]", init_types[i], acc_type);
        }
        let input_param = &reducer.parameters[n + i];
        if !input_param.compatible(&Shape::scalar(input_types[i])) {
            fail!(
                op,
                "parameter {} of the reduction computation is {} but input {i} has element type {}",
                n + i,
                text(input_param),
                input_types[i]
            );
        }
        if input_types[i] != acc_type {
            fail!(
                op,
                "input {i} has element type {} but the reduction computation accumulates {}[]",
                input_types[i],
                acc_type
            );
        }
        types.push(acc_type);
    }
    Ok(types)
}
