//! Reductions: reduce, reduce-window and select-and-scatter.

use super::common::{
    array, array_text, check_reducer, dims_in_range_unique, fail, is_dynamic, make, text, window_output_dims,
};
use crate::hlo::attributes::WindowDim;
use crate::hlo::module::ProgramShape;
use crate::hlo::opcode::Opcode;
use hlojit_runtime::{ArrayShape, ElementType, Shape};

/// Splits `inputs..., inits...` and checks the inputs share dimensions and the inits are
/// scalars.
fn split_inputs_and_inits<'a>(
    op: Opcode,
    operands: &[&'a Shape],
) -> Result<(Vec<&'a ArrayShape>, Vec<ElementType>), String> {
    let n = operands.len() / 2;
    if n == 0 || 2 * n != operands.len() {
        fail!(op, "expected an even, non-zero number of operands (inputs then init values), got {}", operands.len());
    }
    let mut inputs: Vec<&ArrayShape> = Vec::with_capacity(n);
    for (i, s) in operands[..n].iter().enumerate() {
        let a = array(op, s, &format!("input {i}"))?;
        if let Some(first) = inputs.first() {
            if first.dims != a.dims {
                fail!(op, "input {i} {} must have the dimensions of input 0 {}", array_text(a), array_text(first));
            }
        }
        inputs.push(a);
    }
    let mut init_types = Vec::with_capacity(n);
    for (i, s) in operands[n..].iter().enumerate() {
        match s {
            Shape::Array(a) if a.dims.is_empty() => init_types.push(a.element_type),
            other => fail!(op, "init value {i} must be a scalar, got {}", text(other)),
        }
    }
    Ok((inputs, init_types))
}

/// One result per input, as a single array or a tuple.
fn one_or_tuple(mut shapes: Vec<Shape>) -> Shape {
    if shapes.len() == 1 {
        shapes.pop().expect("one shape")
    } else {
        Shape::Tuple(shapes)
    }
}

/// `reduce(inputs..., inits...)` over `dimensions` with `reducer`.
pub fn infer_reduce(operands: &[&Shape], dimensions: &[i64], reducer: &ProgramShape) -> Result<Shape, String> {
    let op = Opcode::Reduce;
    let (inputs, init_types) = split_inputs_and_inits(op, operands)?;
    let input_types: Vec<ElementType> = inputs.iter().map(|a| a.element_type).collect();
    let first = inputs[0];
    dims_in_range_unique(op, "reduced dimension", dimensions, first.rank())?;
    let types = check_reducer(op, reducer, &init_types, &input_types)?;
    let kept: Vec<usize> = (0..first.rank()).filter(|i| !dimensions.contains(&(*i as i64))).collect();
    let dims: Vec<i64> = kept.iter().map(|&i| first.dims[i]).collect();
    let dynamic: Vec<bool> = kept.iter().map(|&i| is_dynamic(first, i)).collect();
    let shapes = types.into_iter().map(|t| make(t, dims.clone(), dynamic.clone())).collect();
    Ok(match &reducer.result {
        Shape::Tuple(_) => Shape::Tuple(shapes),
        _ => one_or_tuple(shapes),
    })
}

/// `reduce-window(inputs..., inits...)` with `window` and `reducer`.
pub fn infer_reduce_window(operands: &[&Shape], window: &[WindowDim], reducer: &ProgramShape) -> Result<Shape, String> {
    let op = Opcode::ReduceWindow;
    let (inputs, init_types) = split_inputs_and_inits(op, operands)?;
    let input_types: Vec<ElementType> = inputs.iter().map(|a| a.element_type).collect();
    let types = check_reducer(op, reducer, &init_types, &input_types)?;
    let first = inputs[0];
    let dims = window_output_dims(op, &first.dims, window)?;
    let dynamic: Vec<bool> = (0..first.rank()).map(|i| is_dynamic(first, i)).collect();
    let shapes = types.into_iter().map(|t| make(t, dims.clone(), dynamic.clone())).collect();
    Ok(match &reducer.result {
        Shape::Tuple(_) => Shape::Tuple(shapes),
        _ => one_or_tuple(shapes),
    })
}

/// `select-and-scatter(operand, source, init)`: `select` picks one element per window
/// (`(T, T) -> pred`), `scatter` combines source values into it; `source` has the shape of
/// the windowed operand.
pub fn infer_select_and_scatter(
    operand: &Shape,
    source: &Shape,
    init: &Shape,
    window: &[WindowDim],
    select: &ProgramShape,
    scatter: &ProgramShape,
) -> Result<Shape, String> {
    let op = Opcode::SelectAndScatter;
    let a = array(op, operand, "the operand")?;
    let s = array(op, source, "the source")?;
    let init_type = match init {
        Shape::Array(i) if i.dims.is_empty() => i.element_type,
        other => fail!(op, "the init value must be a scalar, got {}", text(other)),
    };
    if select.parameters.len() != 2 {
        fail!(op, "the select computation must take 2 parameters, but takes {}", select.parameters.len());
    }
    if !select.result.compatible(&Shape::scalar(ElementType::Pred)) {
        fail!(op, "the select computation must return pred[], but returns {}", text(&select.result));
    }
    let element = Shape::scalar(a.element_type);
    for (i, p) in select.parameters.iter().enumerate() {
        if !p.compatible(&element) {
            fail!(
                op,
                "parameter {i} of the select computation is {} but the operand has element type {}",
                text(p),
                a.element_type
            );
        }
    }
    check_reducer(op, scatter, &[init_type], &[s.element_type])?;
    let windowed = window_output_dims(op, &a.dims, window)?;
    if windowed != s.dims {
        fail!(op, "the source {} must have the windowed operand's dimensions {:?}", array_text(s), windowed);
    }
    if s.element_type != a.element_type {
        fail!(op, "the source {} must have the operand's element type ({})", array_text(s), array_text(a));
    }
    Ok(operand.without_layouts())
}
