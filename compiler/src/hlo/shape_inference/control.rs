//! Control flow and structure: tuple, get-tuple-element, call, while, conditional, map, fusion,
//! sort, custom-call, async wrappers, tokens and host transfers.

use super::common::{array, array_text, fail, list, make, text};
use crate::hlo::module::ProgramShape;
use crate::hlo::opcode::Opcode;
use hlojit_runtime::{ElementType, Shape};

fn u32_scalar() -> Shape {
    Shape::scalar(ElementType::U32)
}

/// `tuple(a, b, ...)`: the tuple of the operands' shapes, layouts dropped. Never fails.
pub fn infer_tuple(operands: &[&Shape]) -> Shape {
    Shape::Tuple(operands.iter().map(|s| s.without_layouts()).collect())
}

/// `get-tuple-element(t), index=i`: element `i` of the tuple `t`, layouts dropped. Fails when
/// `t` is not a tuple or `i` is out of range.
pub fn infer_get_tuple_element(operand: &Shape, index: i64) -> Result<Shape, String> {
    let op = Opcode::GetTupleElement;
    let Shape::Tuple(elements) = operand else {
        fail!(op, "the operand must be a tuple, got {}", text(operand));
    };
    match usize::try_from(index).ok().and_then(|i| elements.get(i)) {
        Some(e) => Ok(e.without_layouts()),
        None => fail!(op, "index {index} is out of range for {}", text(operand)),
    }
}

/// Arguments match a computation's parameters one to one.
fn check_arguments(op: Opcode, what: &str, arguments: &[&Shape], computation: &ProgramShape) -> Result<(), String> {
    if arguments.len() != computation.parameters.len() {
        fail!(
            op,
            "{what} takes {} parameters but {} arguments are given",
            computation.parameters.len(),
            arguments.len()
        );
    }
    for (i, (a, p)) in arguments.iter().zip(&computation.parameters).enumerate() {
        if !a.compatible(p) {
            fail!(op, "argument {i} is {} but parameter {i} of {what} is {}", text(a), text(p));
        }
    }
    Ok(())
}

/// `call(args...)`: the result is the callee's.
pub fn infer_call(operands: &[&Shape], to_apply: &ProgramShape) -> Result<Shape, String> {
    check_arguments(Opcode::Call, "the called computation", operands, to_apply)?;
    Ok(to_apply.result.without_layouts())
}

/// `fusion(args...)`: the result is the fused computation's root. A fused computation may
/// leave trailing operands unused, so it takes at most as many parameters as there are
/// operands.
pub fn infer_fusion(operands: &[&Shape], fused: &ProgramShape) -> Result<Shape, String> {
    let op = Opcode::Fusion;
    if fused.parameters.len() > operands.len() {
        fail!(
            op,
            "the fused computation takes {} parameters but only {} operands are given",
            fused.parameters.len(),
            operands.len()
        );
    }
    for (i, p) in fused.parameters.iter().enumerate() {
        if !operands[i].compatible(p) {
            fail!(op, "operand {i} is {} but fused parameter {i} is {}", text(operands[i]), text(p));
        }
    }
    Ok(fused.result.without_layouts())
}

/// `while(init)`: condition `(T) -> pred[]`, body `(T) -> T`.
pub fn infer_while(init: &Shape, condition: &ProgramShape, body: &ProgramShape) -> Result<Shape, String> {
    let op = Opcode::While;
    if condition.parameters.len() != 1 {
        fail!(op, "the condition must take 1 parameter, but takes {}", condition.parameters.len());
    }
    if body.parameters.len() != 1 {
        fail!(op, "the body must take 1 parameter, but takes {}", body.parameters.len());
    }
    if !condition.result.compatible(&Shape::scalar(ElementType::Pred)) {
        fail!(op, "the condition must return pred[], but returns {}", text(&condition.result));
    }
    for (what, shape) in [
        ("the body parameter", &body.parameters[0]),
        ("the condition parameter", &condition.parameters[0]),
        ("the body result", &body.result),
    ] {
        if !shape.compatible(init) {
            fail!(op, "{what} is {} but the loop state (init) is {}", text(shape), text(init));
        }
    }
    Ok(init.without_layouts())
}

/// `conditional(selector, branch_args...)`: a pred selector takes exactly two branches (true,
/// false), an s32 selector one or more; branch `j` takes operand `j + 1`; all branches return
/// one shape.
pub fn infer_conditional(
    selector: &Shape,
    branch_operands: &[&Shape],
    branches: &[&ProgramShape],
) -> Result<Shape, String> {
    let op = Opcode::Conditional;
    let selector_type = match selector {
        Shape::Array(a) if a.dims.is_empty() && matches!(a.element_type, ElementType::Pred | ElementType::S32) => {
            a.element_type
        }
        other => fail!(op, "the selector must be pred[] or s32[], got {}", text(other)),
    };
    if selector_type == ElementType::Pred && branches.len() != 2 {
        fail!(op, "a pred selector needs exactly 2 branches, got {}", branches.len());
    }
    if branches.is_empty() {
        fail!(op, "needs at least one branch computation");
    }
    if branch_operands.len() != branches.len() {
        fail!(
            op,
            "{} branches need {} branch operands after the selector, got {}",
            branches.len(),
            branches.len(),
            branch_operands.len()
        );
    }
    for (j, (arg, branch)) in branch_operands.iter().zip(branches).enumerate() {
        if branch.parameters.len() != 1 {
            fail!(op, "branch {j} must take 1 parameter, but takes {}", branch.parameters.len());
        }
        if !arg.compatible(&branch.parameters[0]) {
            fail!(op, "operand {} is {} but branch {j} takes {}", j + 1, text(arg), text(&branch.parameters[0]));
        }
        if !branch.result.compatible(&branches[0].result) {
            fail!(op, "branch {j} returns {} but branch 0 returns {}", text(&branch.result), text(&branches[0].result));
        }
    }
    Ok(branches[0].result.without_layouts())
}

/// `map(args...)` with a scalar computation applied elementwise; `dimensions` (if given) must
/// be all dimensions in order.
pub fn infer_map(operands: &[&Shape], dimensions: Option<&[i64]>, to_apply: &ProgramShape) -> Result<Shape, String> {
    let op = Opcode::Map;
    let Some(first) = operands.first() else {
        fail!(op, "expected at least one operand");
    };
    let first = array(op, first, "operand 0")?;
    for (i, s) in operands.iter().enumerate() {
        let a = array(op, s, &format!("operand {i}"))?;
        if a.dims != first.dims {
            fail!(op, "operand {i} {} must have the dimensions of operand 0 {}", array_text(a), array_text(first));
        }
    }
    if let Some(dims) = dimensions {
        if dims.iter().enumerate().any(|(i, &d)| d != i as i64) || dims.len() != first.rank() {
            fail!(op, "dimensions {} must list all {} dimensions in order", list(dims), first.rank());
        }
    }
    if to_apply.parameters.len() != operands.len() {
        fail!(
            op,
            "the mapped computation takes {} parameters but there are {} operands",
            to_apply.parameters.len(),
            operands.len()
        );
    }
    for (i, (p, s)) in to_apply.parameters.iter().zip(operands).enumerate() {
        let t = s.element_type().unwrap_or(ElementType::Pred);
        if !p.compatible(&Shape::scalar(t)) {
            fail!(op, "parameter {i} of the mapped computation is {} but operand {i} has element type {t}", text(p));
        }
    }
    let result_type = match &to_apply.result {
        Shape::Array(a) if a.dims.is_empty() => a.element_type,
        other => fail!(op, "the mapped computation must return a scalar, but returns {}", text(other)),
    };
    Ok(make(result_type, first.dims.clone(), vec![false; first.rank()]))
}

/// `sort(operands...)` along `dimension` with a comparator `(a0, b0, a1, b1, ...) -> pred[]`.
pub fn infer_sort(operands: &[&Shape], dimension: i64, comparator: &ProgramShape) -> Result<Shape, String> {
    let op = Opcode::Sort;
    let Some(first) = operands.first() else {
        fail!(op, "expected at least one operand");
    };
    let first = array(op, first, "operand 0")?;
    for (i, s) in operands.iter().enumerate() {
        let a = array(op, s, &format!("operand {i}"))?;
        if a.dims != first.dims {
            fail!(op, "operand {i} {} must have the dimensions of operand 0 {}", array_text(a), array_text(first));
        }
    }
    if dimension < 0 || dimension >= first.rank() as i64 {
        fail!(op, "sort dimension {dimension} is out of range for rank {}", first.rank());
    }
    if comparator.parameters.len() != 2 * operands.len() {
        fail!(
            op,
            "the comparator must take {} parameters, but takes {}",
            2 * operands.len(),
            comparator.parameters.len()
        );
    }
    for (p, param) in comparator.parameters.iter().enumerate() {
        let t = operands[p / 2].element_type().unwrap_or(ElementType::Pred);
        if !param.compatible(&Shape::scalar(t)) {
            fail!(op, "comparator parameter {p} is {} but operand {} has element type {t}", text(param), p / 2);
        }
    }
    if !comparator.result.compatible(&Shape::scalar(ElementType::Pred)) {
        fail!(op, "the comparator must return pred[], but returns {}", text(&comparator.result));
    }
    Ok(if operands.len() == 1 { operands[0].without_layouts() } else { infer_tuple(operands) })
}

/// `custom-call`: the result is as declared; with `operand_layout_constraints` there is one
/// constraint per operand, of the operand's shape.
pub fn infer_custom_call(
    operands: &[&Shape],
    layout_constraints: Option<&[Shape]>,
    declared: &Shape,
) -> Result<Shape, String> {
    let op = Opcode::CustomCall;
    if let Some(constraints) = layout_constraints {
        if constraints.len() != operands.len() {
            fail!(op, "{} operand_layout_constraints given for {} operands", constraints.len(), operands.len());
        }
        for (i, (c, s)) in constraints.iter().zip(operands).enumerate() {
            if !c.compatible(s) {
                fail!(op, "operand layout constraint {i} is {} but operand {i} is {}", text(c), text(s));
            }
        }
    }
    Ok(declared.without_layouts())
}

/// `constant`: the literal's shape.
pub fn infer_constant(literal_shape: &Shape) -> Shape {
    literal_shape.without_layouts()
}

/// `after-all(tokens...)`.
pub fn infer_after_all(operands: &[&Shape]) -> Result<Shape, String> {
    for (i, s) in operands.iter().enumerate() {
        if !s.is_token() {
            fail!(Opcode::AfterAll, "operand {i} must be a token, got {}", text(s));
        }
    }
    Ok(Shape::Token)
}

/// `add-dependency(value, token)`: the value, ordered after the token.
pub fn infer_add_dependency(value: &Shape, token: &Shape) -> Result<Shape, String> {
    if !token.is_token() {
        fail!(Opcode::AddDependency, "operand 1 must be a token, got {}", text(token));
    }
    Ok(value.without_layouts())
}

/// `bitcast`: a reinterpretation whose result is as declared; without tiling both sides hold
/// the same number of bits.
pub fn infer_bitcast(operand: &Shape, declared: &Shape) -> Result<Shape, String> {
    let op = Opcode::Bitcast;
    if let (Shape::Array(a), Shape::Array(d)) = (operand, declared) {
        let untiled = |s: &hlojit_runtime::ArrayShape| s.layout.iter().all(|l| l.tiles.is_empty());
        let bits = |s: &hlojit_runtime::ArrayShape| s.element_count() as i128 * s.element_type.bit_width() as i128;
        if untiled(a) && untiled(d) && bits(a) != bits(d) {
            fail!(op, "cannot reinterpret {} as {}: they hold different numbers of bits", array_text(a), array_text(d));
        }
    }
    Ok(declared.without_layouts())
}

/// `copy-start(x)`: `(destination, source, context)`.
pub fn infer_copy_start(operand: &Shape) -> Shape {
    let s = operand.without_layouts();
    Shape::Tuple(vec![s.clone(), s, u32_scalar()])
}

/// `copy-done(copy-start)`: the destination.
pub fn infer_copy_done(operand: &Shape) -> Result<Shape, String> {
    match operand.tuple_elements() {
        Some([dest, src, ..]) if dest.compatible(src) => Ok(dest.without_layouts()),
        _ => fail!(
            Opcode::CopyDone,
            "the operand must be a copy-start tuple (dest, src, context), got {}",
            text(operand)
        ),
    }
}

/// `send(value, token)`: `(value, context, token)`.
pub fn infer_send(value: &Shape, token: &Shape) -> Result<Shape, String> {
    if !token.is_token() {
        fail!(Opcode::Send, "operand 1 must be a token, got {}", text(token));
    }
    Ok(Shape::Tuple(vec![value.without_layouts(), u32_scalar(), Shape::Token]))
}

/// `recv(token)`: `(value, context, token)`, the value as declared.
pub fn infer_recv(token: &Shape, declared: &Shape) -> Result<Shape, String> {
    let op = Opcode::Recv;
    if !token.is_token() {
        fail!(op, "the operand must be a token, got {}", text(token));
    }
    match declared.tuple_elements() {
        Some([value, ..]) => Ok(Shape::Tuple(vec![value.without_layouts(), u32_scalar(), Shape::Token])),
        _ => fail!(op, "the result must be a tuple (value, context, token), got {}", text(declared)),
    }
}

/// `recv-done(recv)`: `(value, token)`.
pub fn infer_recv_done(operand: &Shape) -> Result<Shape, String> {
    match operand.tuple_elements() {
        Some([value, ..]) => Ok(Shape::Tuple(vec![value.without_layouts(), Shape::Token])),
        _ => fail!(Opcode::RecvDone, "the operand must be a recv tuple, got {}", text(operand)),
    }
}

/// `infeed(token)`: `(value, token)`, the value as declared.
pub fn infer_infeed(token: &Shape, declared: &Shape) -> Result<Shape, String> {
    let op = Opcode::Infeed;
    if !token.is_token() {
        fail!(op, "the operand must be a token, got {}", text(token));
    }
    match declared.tuple_elements() {
        Some([value, token]) if token.is_token() => Ok(Shape::Tuple(vec![value.without_layouts(), Shape::Token])),
        _ => fail!(op, "the result must be a tuple (value, token), got {}", text(declared)),
    }
}

/// `outfeed(value, token)`: a token.
pub fn infer_outfeed(token: &Shape) -> Result<Shape, String> {
    if !token.is_token() {
        fail!(Opcode::Outfeed, "operand 1 must be a token, got {}", text(token));
    }
    Ok(Shape::Token)
}

/// `async-start(args...)` of a wrapped computation: `((args...), result, context...)`, the
/// context as declared.
pub fn infer_async_start(operands: &[&Shape], wrapped: &ProgramShape, declared: &Shape) -> Result<Shape, String> {
    let op = Opcode::AsyncStart;
    check_arguments(op, "the wrapped computation", operands, wrapped)?;
    let context = match declared.tuple_elements() {
        Some(elements) if elements.len() >= 2 => &elements[2..],
        _ => fail!(op, "the result must be a tuple ((args...), result, context...), got {}", text(declared)),
    };
    let mut elements = vec![
        Shape::Tuple(wrapped.parameters.iter().map(Shape::without_layouts).collect()),
        wrapped.result.without_layouts(),
    ];
    elements.extend(context.iter().map(Shape::without_layouts));
    Ok(Shape::Tuple(elements))
}

/// `async-update(async-start)`: unchanged.
pub fn infer_async_update(operand: &Shape) -> Result<Shape, String> {
    match operand.tuple_elements() {
        Some(elements) if elements.len() >= 2 => Ok(operand.without_layouts()),
        _ => fail!(Opcode::AsyncUpdate, "the operand must be an async tuple, got {}", text(operand)),
    }
}

/// `async-done(async-start)`: the wrapped computation's result.
pub fn infer_async_done(operand: &Shape) -> Result<Shape, String> {
    match operand.tuple_elements() {
        Some(elements) if elements.len() >= 2 => Ok(elements[1].without_layouts()),
        _ => fail!(Opcode::AsyncDone, "the operand must be an async tuple, got {}", text(operand)),
    }
}
