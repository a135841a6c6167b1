//! Reductions over dynamic dimensions. `set-dimension-size` makes a dimension dynamic: a
//! reduce over it combines only the first `n` elements. Like XLA's dynamic padder, this pass
//! rewrites such a reduce to read the static array with the elements at positions `>= n`
//! replaced by the reduce's init value, `select(iota < n, x, init)`, so the reduce itself (and
//! its kernel) stays static. Dynamic dimensions the reduce keeps are left as they are.

use crate::error::Result;
use crate::hlo::{ComparisonDirection, Computation, InstrId, Instruction, Module, Opcode};
use hlojit_runtime::{ArrayShape, ElementType, Shape};

/// Rewrites every reduce whose input is made dynamic, along a reduced dimension, by
/// set-dimension-size.
pub fn pad_dynamic_reductions(module: &mut Module) -> Result<()> {
    let comps: Vec<_> = module.comp_ids().collect();
    for c in comps {
        let comp = module.computation_mut(c);
        let reduces: Vec<InstrId> = comp.ids().filter(|&id| comp.get(id).opcode == Opcode::Reduce).collect();
        for id in reduces {
            rewrite_reduce(comp, id);
        }
    }
    Ok(())
}

fn rewrite_reduce(comp: &mut Computation, id: InstrId) {
    let inst = comp.get(id).clone();
    let n = inst.operands.len() / 2;
    let reduced = inst.attrs.dimensions.clone().unwrap_or_default();
    for i in 0..n {
        let input = inst.operands[i];
        // Walk the chain of set-dimension-size; the outermost size of each dimension wins.
        let mut base = input;
        let mut sizes: Vec<(i64, InstrId)> = Vec::new();
        while comp.get(base).opcode == Opcode::SetDimensionSize && comp.get(base).operands.len() == 2 {
            let s = comp.get(base);
            if let Some(&d) = s.attrs.dimensions.as_ref().and_then(|d| d.first()) {
                if reduced.contains(&d) && !sizes.iter().any(|&(e, _)| e == d) {
                    sizes.push((d, s.operands[1]));
                }
            }
            base = s.operands[0];
        }
        if sizes.is_empty() {
            continue;
        }
        let Some(array) = comp.get(base).shape.as_array().cloned() else { continue };
        let masked = mask(comp, &inst, &array, base, inst.operands[n + i], &sizes);
        comp.get_mut(id).operands[i] = masked;
    }
}

/// `select(iota_d < n_d for every (d, n_d), base, broadcast(init))`.
fn mask(
    comp: &mut Computation,
    reduce: &Instruction,
    array: &ArrayShape,
    base: InstrId,
    init: InstrId,
    sizes: &[(i64, InstrId)],
) -> InstrId {
    let layout = array.layout_or_default();
    let shaped = |t: ElementType| Shape::Array(ArrayShape::new(t, array.dims.clone()).with_layout(layout.clone()));
    let name = |what: &str| format!("{}.dynamic_{what}", reduce.name);
    let mut keep: Option<InstrId> = None;
    for &(d, size) in sizes {
        let size_type = comp.get(size).shape.element_type().unwrap_or(ElementType::S32);
        let mut iota = Instruction::new(name("iota"), Opcode::Iota, shaped(size_type), vec![]);
        iota.attrs.iota_dimension = Some(d);
        let iota = comp.add(iota);
        let mut bound = Instruction::new(name("size"), Opcode::Broadcast, shaped(size_type), vec![size]);
        bound.attrs.dimensions = Some(Vec::new());
        let bound = comp.add(bound);
        let mut lt = Instruction::new(name("in_bounds"), Opcode::Compare, shaped(ElementType::Pred), vec![iota, bound]);
        lt.attrs.direction = Some(ComparisonDirection::Lt);
        let lt = comp.add(lt);
        keep = Some(match keep {
            None => lt,
            Some(k) => {
                comp.add(Instruction::new(name("in_bounds"), Opcode::And, shaped(ElementType::Pred), vec![k, lt]))
            }
        });
    }
    let keep = keep.expect("at least one dynamic dimension");
    let mut fill = Instruction::new(name("fill"), Opcode::Broadcast, shaped(array.element_type), vec![init]);
    fill.attrs.dimensions = Some(Vec::new());
    let fill = comp.add(fill);
    comp.add(Instruction::new(name("select"), Opcode::Select, shaped(array.element_type), vec![keep, base, fill]))
}
