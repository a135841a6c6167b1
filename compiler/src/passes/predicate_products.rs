//! XLA's algebraic simplifier turns a product by a converted predicate into a select
//! (`HandleMultiply`): `convert(P) * A` and `A * convert(P)` => `select(P, A, 0)`, P of type
//! pred. It changes results: where P is false the product is 0 even when A is NaN or
//! infinite (measured through jaxlib 0.10.2: `convert(p) * inf` and `convert(p) * NaN` with p
//! false give 0). With XLA's division by a constant (`divide_rewrites`: A / 0 => A * inf)
//! this is why `convert(p) / sin(0)` is 0 in XLA (fuzz program 9000079).

use super::fused_body::unique_name;
use crate::hlo::{Computation, InstrId, Instruction, Opcode};
use hlojit_runtime::{ArrayLiteral, Literal, Shape};

/// The select that replaces the multiply `id`, if one operand is a converted predicate.
pub(super) fn rewrite(comp: &mut Computation, id: InstrId) -> Option<InstrId> {
    let inst = comp.get(id);
    let shape = inst.shape.clone();
    let array = shape.as_array()?;
    let ty = array.element_type;
    if ty.is_pred() {
        return None;
    }
    let name = inst.name.clone();
    let (lhs, rhs) = (inst.operands[0], inst.operands[1]);
    let predicate = |x: InstrId| {
        let c = comp.get(x);
        (c.opcode == Opcode::Convert && comp.get(c.operands[0]).shape.element_type().is_some_and(|t| t.is_pred()))
            .then(|| c.operands[0])
    };
    let (p, a) = if let Some(p) = predicate(lhs) { (p, rhs) } else { (predicate(rhs)?, lhs) };
    let mut names = comp.instructions.iter().map(|i| i.name.clone()).collect();
    let mut add = |comp: &mut Computation, opcode: Opcode, shape: Shape, operands: Vec<InstrId>| {
        let unique = unique_name(&mut names, &format!("{name}.select"));
        comp.add(Instruction::new(unique, opcode, shape, operands))
    };
    let zero = add(comp, Opcode::Constant, Shape::scalar(ty), vec![]);
    comp.get_mut(zero).attrs.literal = Some(Literal::Array(ArrayLiteral::zeros(ty, &[])));
    let zero = if array.dims.is_empty() {
        comp.get_mut(zero).shape = shape.clone();
        zero
    } else {
        let b = add(comp, Opcode::Broadcast, shape.clone(), vec![zero]);
        comp.get_mut(b).attrs.dimensions = Some(Vec::new());
        b
    };
    Some(add(comp, Opcode::Select, shape, vec![p, a, zero]))
}
