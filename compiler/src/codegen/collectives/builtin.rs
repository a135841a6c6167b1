//! All-reduces whose reduction computation is one built-in operation (a single add, multiply,
//! minimum, maximum, and, or or xor of its two parameters) on an element type where every
//! combining order gives the same result: generated code first offers them to the run's
//! communicator (`hlojit_rt_collective_reduce_builtin`), which MPI runs with its own reduction
//! (MPI_SUM, MPI_BAND, ...); when the communicator has none (the in-process rendezvous) the op
//! falls back to the exchange, whose results are the same. Which element types qualify and
//! why floating point does not: `hlojit_runtime::collectives::BuiltinReduction`.

use crate::hlo::{CompId, Module, Opcode};
use hlojit_runtime::collectives::{BuiltinElement, BuiltinOp, BuiltinReduction};
use hlojit_runtime::ElementType;

/// The built-in reduction `to_apply` computes on `element`, if it is one.
pub(crate) fn recognise(module: &Module, to_apply: CompId, element: ElementType) -> Option<BuiltinReduction> {
    let comp = module.computation(to_apply);
    let params = comp.parameters();
    if params.len() != 2 {
        return None;
    }
    let root = comp.root_instruction();
    let number = |id| comp.get(id).attrs.parameter_number;
    // Both operands are the parameters, one each (every operation here is commutative).
    let operands: Vec<Option<i64>> = root.operands.iter().map(|&o| if comp.get(o).opcode == Opcode::Parameter { number(o) } else { None }).collect();
    if !(operands == [Some(0), Some(1)] || operands == [Some(1), Some(0)]) {
        return None;
    }
    // A scalar of the all-reduce's own type: no conversion hidden in the computation.
    let scalar = |s: &hlojit_runtime::Shape| s.as_array().is_some_and(|a| a.dims.is_empty() && a.element_type == element);
    if !scalar(&root.shape) || !params.iter().all(|&p| scalar(&comp.get(p).shape)) {
        return None;
    }
    let op = match root.opcode {
        Opcode::Add => BuiltinOp::Sum,
        Opcode::Multiply => BuiltinOp::Product,
        Opcode::Minimum => BuiltinOp::Min,
        Opcode::Maximum => BuiltinOp::Max,
        Opcode::And => BuiltinOp::And,
        Opcode::Or => BuiltinOp::Or,
        Opcode::Xor => BuiltinOp::Xor,
        _ => return None,
    };
    let element = match element {
        ElementType::S8 => BuiltinElement::S8,
        ElementType::S16 => BuiltinElement::S16,
        ElementType::S32 => BuiltinElement::S32,
        ElementType::S64 => BuiltinElement::S64,
        ElementType::U8 => BuiltinElement::U8,
        ElementType::U16 => BuiltinElement::U16,
        ElementType::U32 => BuiltinElement::U32,
        ElementType::U64 => BuiltinElement::U64,
        ElementType::Pred => BuiltinElement::Pred,
        _ => return None,
    };
    BuiltinReduction::new(op, element)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hlo::text::parse_module;

    fn reduction_of(body: &str, ty: &str) -> Option<BuiltinReduction> {
        let text = format!(
            "HloModule m, replica_count=2\n\nr {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  {body}\n}}\n\nENTRY e {{\n  x = {ty}[4] parameter(0)\n  ROOT y = {ty}[4] all-reduce(x), replica_groups={{}}, to_apply=r\n}}\n"
        );
        let m = parse_module(&text).expect("parses");
        let root = m.entry_computation().root_instruction();
        let element = root.shape.as_array().expect("array").element_type;
        recognise(&m, root.to_apply().expect("to_apply"), element)
    }

    #[test]
    fn single_order_independent_operations_are_recognised() {
        let r = |body, ty| reduction_of(body, ty).map(|r| (r.op, r.element));
        assert_eq!(r("ROOT c = s32[] add(a, b)", "s32"), Some((BuiltinOp::Sum, BuiltinElement::S32)));
        assert_eq!(r("ROOT c = u8[] multiply(b, a)", "u8"), Some((BuiltinOp::Product, BuiltinElement::U8)));
        assert_eq!(r("ROOT c = s64[] minimum(a, b)", "s64"), Some((BuiltinOp::Min, BuiltinElement::S64)));
        assert_eq!(r("ROOT c = u32[] maximum(a, b)", "u32"), Some((BuiltinOp::Max, BuiltinElement::U32)));
        assert_eq!(r("ROOT c = pred[] or(a, b)", "pred"), Some((BuiltinOp::Or, BuiltinElement::Pred)));
        assert_eq!(r("ROOT c = s16[] xor(a, b)", "s16"), Some((BuiltinOp::Xor, BuiltinElement::S16)));
    }

    #[test]
    fn order_dependent_or_composite_reductions_keep_the_exchange() {
        // Floating point: MPI may regroup the sum, and its min/max drop NaNs.
        assert_eq!(reduction_of("ROOT c = f32[] add(a, b)", "f32"), None);
        assert_eq!(reduction_of("ROOT c = f64[] maximum(a, b)", "f64"), None);
        // Not a single operation of the two parameters.
        assert_eq!(reduction_of("s = s32[] add(a, b)\n  ROOT c = s32[] add(s, a)", "s32"), None);
        assert_eq!(reduction_of("ROOT c = s32[] subtract(a, b)", "s32"), None);
        assert_eq!(reduction_of("ROOT c = s32[] add(a, a)", "s32"), None);
        // XLA's add on predicates is not a bitwise operation MPI has.
        assert_eq!(reduction_of("ROOT c = pred[] add(a, b)", "pred"), None);
    }
}
