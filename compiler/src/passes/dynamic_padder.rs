//! Dynamic dimensions, handled the way XLA's dynamic padder does: arrays keep their static
//! bound in memory and the dynamic size travels as a separate s32 value.
//!
//! - `set-dimension-size(x, n), dimensions={d}` makes dimension `d` dynamic with size `n`; it
//!   becomes `x` itself, and `n` is remembered for dimension `d` of it and of the elementwise
//!   ops computed from it.
//! - `get-dimension-size(x), dimensions={d}` becomes that size, or the static size as an s32
//!   constant when the dimension is static.
//! - A `reduce` over a dynamic dimension combines only the first `n` elements along it: its
//!   operand becomes `select(iota_d < n, x, init)`, so the padding contributes the identity.
//!
//! Afterwards no shape is dynamic any more.

use super::expand_util::Builder;
use crate::error::{Error, Result};
use crate::hlo::{CompId, ComparisonDirection, InstrId, Instruction, Module, Opcode};
use hlojit_runtime::{ElementType, Shape};
use std::collections::HashMap;

/// Rewrites every computation that uses dynamic dimensions; returns whether there was one.
pub fn pad_dynamic_dimensions(module: &mut Module) -> Result<bool> {
    let mut changed = false;
    for c in module.comp_ids().collect::<Vec<_>>() {
        let uses_dynamic = module.computation(c).instructions.iter().any(|i| {
            matches!(i.opcode, Opcode::SetDimensionSize | Opcode::GetDimensionSize) || has_dynamic_dims(&i.shape)
        });
        if uses_dynamic {
            pad_computation(module, c)?;
            changed = true;
        }
    }
    Ok(changed)
}

fn has_dynamic_dims(shape: &Shape) -> bool {
    shape.array_leaves().iter().any(|a| a.is_dynamic())
}

fn pad_computation(module: &mut Module, c: CompId) -> Result<()> {
    let order = module.computation(c).post_order();
    // (instruction, dimension) -> the s32 scalar holding its dynamic size.
    let mut sizes: HashMap<(InstrId, i64), InstrId> = HashMap::new();
    let mut replacements: Vec<(InstrId, InstrId)> = Vec::new();
    for id in order {
        let inst = module.computation(c).get(id).clone();
        let fail = |why: &str| Error::Unsupported(format!("{}: {} {why}", inst.name, inst.opcode.name()));
        match inst.opcode {
            Opcode::SetDimensionSize => {
                let d = single_dimension(&inst).ok_or_else(|| fail("needs one dimension"))?;
                let (x, n) = match inst.operands.as_slice() {
                    [x, n] => (*x, *n),
                    _ => return Err(fail("takes two operands")),
                };
                inherit(&mut sizes, x, id);
                sizes.insert((id, d), n);
            }
            Opcode::GetDimensionSize => {
                let d = single_dimension(&inst).ok_or_else(|| fail("needs one dimension"))?;
                let x = *inst.operands.first().ok_or_else(|| fail("takes one operand"))?;
                let size = match sizes.get(&(x, d)) {
                    Some(&n) => n,
                    None => {
                        let dims = module.computation(c).get(x).shape.dims().to_vec();
                        let v = *dims.get(d as usize).ok_or_else(|| fail("dimension out of range"))?;
                        let mut b = Builder::new(module, c, format!("{}.static", inst.name));
                        b.scalar(ElementType::S32, v as f64)?
                    }
                };
                replacements.push((id, size));
            }
            Opcode::Reduce => mask_reduce(module, c, &inst, id, &sizes)?,
            op if op.is_elementwise() => {
                for &o in &inst.operands {
                    inherit(&mut sizes, o, id);
                }
            }
            Opcode::Copy | Opcode::OptimizationBarrier => inherit(&mut sizes, inst.operands[0], id),
            _ => {}
        }
    }
    let comp = module.computation_mut(c);
    for (old, new) in replacements {
        comp.replace_all_uses(old, new);
    }
    // set-dimension-size is now its operand.
    let sets: Vec<(InstrId, InstrId)> = comp
        .ids()
        .filter(|&id| comp.get(id).opcode == Opcode::SetDimensionSize)
        .map(|id| (id, comp.get(id).operands[0]))
        .collect();
    for (old, new) in sets {
        comp.replace_all_uses(old, new);
    }
    for inst in &mut comp.instructions {
        make_static(&mut inst.shape);
    }
    comp.compact();
    Ok(())
}

/// Dynamic sizes of `from` carry over to `to` (same dimensions, elementwise).
fn inherit(sizes: &mut HashMap<(InstrId, i64), InstrId>, from: InstrId, to: InstrId) {
    let found: Vec<(i64, InstrId)> =
        sizes.iter().filter(|((i, _), _)| *i == from).map(|((_, d), &n)| (*d, n)).collect();
    for (d, n) in found {
        sizes.entry((to, d)).or_insert(n);
    }
}

fn single_dimension(inst: &Instruction) -> Option<i64> {
    match inst.attrs.dimensions.as_deref() {
        Some([d]) => Some(*d),
        _ => None,
    }
}

/// Replaces each operand of reduce `id` that is dynamic along a reduced dimension by the
/// operand with the elements past the dynamic size set to the reduce's init value.
fn mask_reduce(
    module: &mut Module,
    c: CompId,
    inst: &Instruction,
    id: InstrId,
    sizes: &HashMap<(InstrId, i64), InstrId>,
) -> Result<()> {
    let reduced = inst.attrs.dims().to_vec();
    let half = inst.operands.len() / 2;
    let mut new_operands = inst.operands.clone();
    for (k, slot) in new_operands.iter_mut().enumerate().take(half) {
        let (x, init) = (inst.operands[k], inst.operands[half + k]);
        let dynamic: Vec<(i64, InstrId)> =
            reduced.iter().filter_map(|&d| sizes.get(&(x, d)).map(|&n| (d, n))).collect();
        if dynamic.is_empty() {
            continue;
        }
        let mut b = Builder::new(module, c, format!("{}.pad{k}", inst.name));
        let dims = b.dims(x)?;
        let mut masked = x;
        for (d, n) in dynamic {
            let mut iota = Instruction::new("", Opcode::Iota, Shape::array(ElementType::S32, dims.clone()), Vec::new());
            iota.attrs.iota_dimension = Some(d);
            let iota = b.add(iota)?;
            let bound = b.broadcast(n, &dims, vec![])?;
            let mut lt =
                Instruction::new("", Opcode::Compare, Shape::array(ElementType::Pred, dims.clone()), vec![iota, bound]);
            lt.attrs.direction = Some(ComparisonDirection::Lt);
            let inside = b.add(lt)?;
            let fill = b.broadcast(init, &dims, vec![])?;
            let t = b.element_type(x)?;
            masked = b.op(Opcode::Select, Shape::array(t, dims.clone()), vec![inside, masked, fill])?;
        }
        *slot = masked;
    }
    module.computation_mut(c).get_mut(id).operands = new_operands;
    Ok(())
}

fn make_static(shape: &mut Shape) {
    match shape {
        Shape::Array(a) => a.dynamic.iter_mut().for_each(|d| *d = false),
        Shape::Tuple(elements) => elements.iter_mut().for_each(make_static),
        _ => {}
    }
}

/// Pads dynamic dimensions to their bounds.
pub struct DynamicPadder;

impl super::pass::Pass for DynamicPadder {
    fn name(&self) -> &'static str {
        "dynamic-padder"
    }

    fn run(&self, module: &mut crate::hlo::Module) -> crate::error::Result<bool> {
        pad_dynamic_dimensions(module)
    }
}
