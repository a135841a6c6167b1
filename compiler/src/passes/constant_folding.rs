//! Constant folding as XLA's `HloConstantFolding` does it.
//!
//! This pass is about results, not only speed: XLA computes a folded instruction with its
//! evaluator, whose transcendental functions are the C library's, while generated code uses
//! XLA's own approximations. A JAX program that applies `log1p` to a constant gets the C
//! library's bits from XLA, so hlojit must fold exactly the instructions XLA folds and compute
//! them as the evaluator does ([`crate::evaluate`]). XLA's rules, followed here:
//!
//! - at least one operand is a constant and every operand is a constant, a broadcast of a
//!   constant or an iota;
//! - an elementwise instruction whose operands are all broadcasts of scalar constants is
//!   computed once on the scalars and broadcast: in XLA the algebraic simplifier moves the
//!   operation before the broadcast and the folder then folds the scalar operation;
//! - broadcast and iota themselves are never folded (they would only grow constants), nor
//!   instructions with side effects or control edges, nor a pad of a broadcast;
//! - results and operands of more than 45 million elements are left alone;
//! - fusion computations are not looked into: what XLA fused, it fused after folding;
//! - the evaluator runs with subnormals flushed, as XLA's compiling thread does.
//!
//! Instructions the evaluator does not cover (reductions, dots, calls, ...) stay as they are:
//! XLA would fold them too, so their results may still differ where the evaluator's
//! arithmetic is not generated code's.

use crate::error::Result;
use crate::evaluate::evaluate;
use crate::hlo::computation::has_side_effect;
use super::fused_body;
use crate::hlo::{Attributes, CompId, Computation, InstrId, Instruction, Module, Opcode};
use hlojit_runtime::{ArrayLiteral, Literal, Shape};
use std::borrow::Cow;
use std::collections::HashSet;

/// XLA's `kMaximumConstantSizeElements`.
const MAX_ELEMENTS: usize = 45_000_000;

/// Folds constant instructions in every computation but fusion bodies; returns whether
/// anything was folded. The folded instructions' operands are left for DCE.
pub fn run(module: &mut Module) -> Result<bool> {
    // XLA compiles, and so folds, with subnormals flushed (FTZ/DAZ): its evaluator's C library
    // calls and arithmetic see a subnormal operand as zero and flush subnormal results
    // (measured through jaxlib: expm1 of the f64 constant 1e-310 folds to 0).
    let _flush = hlojit_runtime::float_env::FlushDenormals::new();
    let fusion_bodies: HashSet<CompId> = module
        .computations
        .iter()
        .flat_map(|c| c.instructions.iter())
        .filter(|i| i.opcode == Opcode::Fusion)
        .flat_map(|i| i.called.iter().copied())
        .collect();
    let mut names: HashSet<String> =
        module.computations.iter().flat_map(|c| c.instructions.iter().map(|i| i.name.clone())).collect();
    let mut changed = false;
    for (n, comp) in module.computations.iter_mut().enumerate() {
        if !fusion_bodies.contains(&CompId(n as u32)) {
            changed |= fold_computation(comp, &mut names);
        }
    }
    Ok(changed)
}

fn fold_computation(comp: &mut Computation, names: &mut HashSet<String>) -> bool {
    let ordered: HashSet<InstrId> = comp.instructions.iter().flat_map(|i| i.control_predecessors.iter().copied()).collect();
    let mut changed = false;
    // Post order: an instruction folded here is a constant for its users below.
    for id in comp.post_order() {
        if ordered.contains(&id) {
            continue;
        }
        if let Some(scalar) = fold_scalar_broadcasts(comp, id) {
            let name = fused_body::unique_name(names, &format!("{}.scalar", comp.get(id).name));
            let mut constant = Instruction::new(name, Opcode::Constant, Shape::scalar(scalar.element_type()), Vec::new());
            constant.attrs.literal = Some(Literal::Array(scalar));
            let c = comp.add(constant);
            let inst = comp.get_mut(id);
            inst.opcode = Opcode::Broadcast;
            inst.operands = vec![c];
            inst.attrs = Attributes { dimensions: Some(Vec::new()), ..Attributes::default() };
            changed = true;
            continue;
        }
        if !is_candidate(comp, id) {
            continue;
        }
        let Some(value) = fold(comp, id) else { continue };
        let inst = comp.get_mut(id);
        inst.opcode = Opcode::Constant;
        inst.operands.clear();
        inst.called.clear();
        inst.attrs = Attributes { literal: Some(Literal::Array(value)), ..Attributes::default() };
        changed = true;
    }
    changed
}

/// Whether XLA would try to fold `id` (see the module documentation).
fn is_candidate(comp: &Computation, id: InstrId) -> bool {
    let inst = comp.get(id);
    let operand = |i: usize| comp.get(inst.operands[i]);
    let constant_like = |o: InstrId| {
        let op = comp.get(o);
        match op.opcode {
            Opcode::Constant | Opcode::Iota => true,
            Opcode::Broadcast => comp.get(op.operands[0]).opcode == Opcode::Constant,
            _ => false,
        }
    };
    let never = matches!(
        inst.opcode,
        Opcode::Parameter | Opcode::Constant | Opcode::Tuple | Opcode::Broadcast | Opcode::Iota | Opcode::Fft | Opcode::While
    );
    let pad_of_broadcast = inst.opcode == Opcode::Pad && operand(0).opcode == Opcode::Broadcast;
    let elements = |o: InstrId| comp.get(o).shape.as_array().map_or(0, |a| a.element_count() as usize);
    let too_big = elements(id) > MAX_ELEMENTS || inst.operands.iter().map(|&o| elements(o)).sum::<usize>() > MAX_ELEMENTS;
    !never
        && !pad_of_broadcast
        && !too_big
        && inst.shape.as_array().is_some()
        && !has_side_effect(inst)
        && inst.control_predecessors.is_empty()
        && inst.operands.iter().any(|&o| comp.get(o).opcode == Opcode::Constant)
        && inst.operands.iter().all(|&o| constant_like(o))
}

/// The folded value of `id`, when every operand's value is known and the evaluator covers it.
fn fold(comp: &Computation, id: InstrId) -> Option<ArrayLiteral> {
    let inst = comp.get(id);
    let values: Vec<Cow<ArrayLiteral>> = inst.operands.iter().map(|&o| operand_value(comp, o)).collect::<Option<_>>()?;
    let refs: Vec<&ArrayLiteral> = values.iter().map(|v| v.as_ref()).collect();
    evaluate(inst, &refs)
}

/// For an elementwise instruction of broadcast scalar constants: its value on the scalars.
fn fold_scalar_broadcasts(comp: &Computation, id: InstrId) -> Option<ArrayLiteral> {
    let inst = comp.get(id);
    let scalar_of = |o: InstrId| {
        let b = comp.get(o);
        let c = comp.get(*b.operands.first()?);
        (b.opcode == Opcode::Broadcast && c.opcode == Opcode::Constant && c.shape.is_scalar()).then(|| c.array_literal().ok()).flatten()
    };
    if !inst.opcode.is_elementwise() || inst.operands.is_empty() || has_side_effect(inst) || !inst.control_predecessors.is_empty() {
        return None;
    }
    let scalars: Vec<&ArrayLiteral> = inst.operands.iter().map(|&o| scalar_of(o)).collect::<Option<_>>()?;
    let mut on_scalars = inst.clone();
    on_scalars.shape = Shape::scalar(inst.shape.element_type()?);
    evaluate(&on_scalars, &scalars)
}

/// The value of a constant, a broadcast of one or an iota.
fn operand_value(comp: &Computation, id: InstrId) -> Option<Cow<'_, ArrayLiteral>> {
    let inst = comp.get(id);
    match inst.opcode {
        Opcode::Constant => inst.array_literal().ok().map(Cow::Borrowed),
        Opcode::Iota => evaluate(inst, &[]).map(Cow::Owned),
        Opcode::Broadcast => evaluate(inst, &[comp.get(inst.operands[0]).array_literal().ok()?]).map(Cow::Owned),
        _ => None,
    }
}

/// Folds instructions of constants as XLA's evaluator computes them.
pub struct ConstantFolding;

impl super::pass::Pass for ConstantFolding {
    fn name(&self) -> &'static str {
        "constant-folding"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        run(module)
    }
}
