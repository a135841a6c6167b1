//! The HLO verifier: checks that a module is well-formed and that every instruction's
//! declared shape is the one shape inference derives from its operands (layouts ignored).
//!
//! Module-level checks: references (operands, control predecessors, called computations,
//! roots) point at existing things, operands form no cycle and computations do not recurse,
//! names are unique, parameter numbers are `0..N`, every layout is a permutation of its
//! shape's dimensions, `entry_computation_layout` agrees with the entry computation and
//! `input_output_alias` names existing parameters and outputs of equal shapes.

use super::computation::Computation;
use super::instruction::{CompId, InstrId, Instruction};
use super::module::{Module, ProgramShape};
use super::opcode::Opcode;
use super::shape_inference::{infer_shape, signature};
use crate::error::{Error, Result};
use hlojit_runtime::limits::MAX_DEVICES;
use hlojit_runtime::physical::{LayoutError, PhysicalLayout};
use hlojit_runtime::Shape;
use std::collections::{HashMap, HashSet};

/// Verifies `module`; the first problem found is returned as [`Error::Verify`] naming the
/// computation and instruction.
pub fn verify_module(module: &Module) -> Result<()> {
    check_structure(module)?;
    let signatures: Vec<ProgramShape> = module.computations.iter().map(signature).collect();
    for comp in &module.computations {
        for inst in &comp.instructions {
            verify_instruction(comp, inst, &signatures)
                .map_err(|message| Error::verify(&comp.name, &inst.name, message))?;
        }
    }
    check_entry_layout(module)?;
    check_aliases(module)
}

/// Verifies one instruction of `computation` (whose operands and called computations must
/// exist); the error is the message alone.
pub fn verify_instruction_shape(
    module: &Module,
    computation: &Computation,
    inst: &Instruction,
) -> std::result::Result<(), String> {
    let signatures: Vec<ProgramShape> = inst.called.iter().map(|&c| signature(module.computation(c))).collect();
    let refs: Vec<&ProgramShape> = signatures.iter().collect();
    check_against_inference(computation, inst, &refs)
}

fn verify_instruction(
    comp: &Computation,
    inst: &Instruction,
    signatures: &[ProgramShape],
) -> std::result::Result<(), String> {
    check_shape_valid(&inst.shape).map_err(|m| format!("invalid shape {}: {m}", inst.shape))?;
    if let Some(constraints) = &inst.attrs.operand_layout_constraints {
        for c in constraints {
            check_shape_valid(c).map_err(|m| format!("invalid operand layout constraint {c}: {m}"))?;
        }
    }
    check_mixed_precision(comp, inst)?;
    let called: Vec<&ProgramShape> = inst.called.iter().map(|c| &signatures[c.index()]).collect();
    check_against_inference(comp, inst, &called)?;
    check_output_to_operand_aliasing(comp, inst)?;
    if inst.opcode == Opcode::Call && inst.attrs.is_composite {
        let named = inst.attrs.raw("frontend_attributes").is_some_and(|f| f.contains("composite.name="));
        if !named {
            return Err("call: a composite call needs frontend_attributes with composite.name".to_string());
        }
    }
    Ok(())
}

/// `output_to_operand_aliasing={{out}: (operand, {in}), ...}` of custom-call and fusion: the
/// indices exist and the aliased buffers have equal shapes.
fn check_output_to_operand_aliasing(comp: &Computation, inst: &Instruction) -> std::result::Result<(), String> {
    let Some(pairs) = &inst.attrs.output_to_operand_aliasing else {
        return Ok(());
    };
    let op = inst.opcode;
    // The parser admits only non-negative indices; a builder's negative one names nothing.
    let index = |i: &[i64]| -> Vec<usize> { i.iter().map(|&x| usize::try_from(x).unwrap_or(usize::MAX)).collect() };
    for pair in pairs {
        let (output_index, operand, operand_index) = (index(&pair.output), pair.operand, index(&pair.operand_index));
        let output = inst.shape.subshape(&output_index).ok_or_else(|| {
            format!("{op}: output_to_operand_aliasing names output {output_index:?}, which does not exist")
        })?;
        let operand_shape =
            inst.operands.get(operand).map(|&o| &comp.get(o).shape).ok_or_else(|| {
                format!("{op}: output_to_operand_aliasing names operand {operand}, which does not exist")
            })?;
        let input = operand_shape.subshape(&operand_index).ok_or_else(|| {
            format!("{op}: output_to_operand_aliasing names index {operand_index:?} of operand {operand}, which does not exist")
        })?;
        if !output.compatible(input) {
            return Err(format!(
                "{op}: output {output_index:?} ({}) is aliased with operand {operand} at {operand_index:?} ({})",
                output.to_text(false),
                input.to_text(false)
            ));
        }
    }
    Ok(())
}

fn check_against_inference(
    comp: &Computation,
    inst: &Instruction,
    called: &[&ProgramShape],
) -> std::result::Result<(), String> {
    let operands: Vec<&Shape> = inst.operands.iter().map(|&o| &comp.get(o).shape).collect();
    let inferred = infer_shape(inst.opcode, &operands, &inst.attrs, called, Some(&inst.shape))?;
    if !inferred.compatible(&inst.shape) {
        return Err(format!(
            "expected shape {} but the instruction declares {}",
            inferred.to_text(false),
            inst.shape.to_text(false)
        ));
    }
    Ok(())
}

/// Dimensions are non-negative, dynamic flags fit the rank and layouts are permutations of
/// the dimensions.
pub fn check_shape_valid(shape: &Shape) -> std::result::Result<(), String> {
    match shape {
        Shape::Array(a) => {
            if let Some(d) = a.dims.iter().find(|&&d| d < 0) {
                return Err(format!("negative dimension size {d}"));
            }
            if a.dynamic.len() > a.dims.len() {
                return Err(format!("{} dynamic flags for rank {}", a.dynamic.len(), a.dims.len()));
            }
            if let Some(layout) = &a.layout {
                let m2m = &layout.minor_to_major;
                let mut seen = vec![false; a.dims.len()];
                let valid = m2m.len() == a.dims.len()
                    && m2m.iter().all(|&d| {
                        usize::try_from(d)
                            .ok()
                            .filter(|&i| i < seen.len())
                            .is_some_and(|i| !std::mem::replace(&mut seen[i], true))
                    });
                if !valid {
                    return Err(format!("layout {layout} is not a permutation of the {} dimensions", a.dims.len()));
                }
            }
            // Sizes beyond the limits are errors; layouts hlojit cannot lay out (packed
            // elements, say) are valid HLO and fail later, where they would be used.
            match PhysicalLayout::new(a) {
                Err(e @ LayoutError::TooLarge { .. }) => Err(e.to_string()),
                _ => Ok(()),
            }
        }
        Shape::Tuple(elements) => elements.iter().try_for_each(check_shape_valid),
        Shape::Token | Shape::Opaque => Ok(()),
    }
}

/// XLA disallows mixing floating-point precisions among an instruction's operands, except
/// for ops that only pass data through or group it, and the accumulating dot/convolution.
fn check_mixed_precision(comp: &Computation, inst: &Instruction) -> std::result::Result<(), String> {
    use Opcode::*;
    let exempt = matches!(
        inst.opcode,
        Call | Conditional
            | Constant
            | Convolution
            | Dot
            | AllReduce
            | AllReduceStart
            | AllReduceDone
            | AllGather
            | AllGatherStart
            | AllGatherDone
            | AsyncDone
            | AsyncUpdate
            | AsyncStart
            | CopyDone
            | CopyStart
            | CustomCall
            | Domain
            | Fusion
            | GetTupleElement
            | OptimizationBarrier
            | Infeed
            | Outfeed
            | Parameter
            | Recv
            | RecvDone
            | ReducePrecision
            | ReduceWindow
            | Send
            | SendDone
            | Sort
            | Tuple
            | While
    );
    if exempt {
        return Ok(());
    }
    let mut seen = None;
    for &o in &inst.operands {
        for leaf in comp.get(o).shape.array_leaves() {
            let t = leaf.element_type;
            if !t.is_float() {
                continue;
            }
            match seen {
                None => seen = Some(t),
                Some(s) if s != t => {
                    return Err(format!("{}: operands mix floating-point types {s} and {t}", inst.opcode));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

fn structure_error(comp: &Computation, inst: Option<&Instruction>, message: impl Into<String>) -> Error {
    Error::verify(&comp.name, inst.map_or("", |i| i.name.as_str()), message)
}

/// References, cycles, names and parameter numbers.
fn check_structure(module: &Module) -> Result<()> {
    // Problems of the module as a whole name the module in place of a computation.
    let module_error = |message: String| Error::verify(&module.name, "", message);
    if module.entry.index() >= module.computations.len() {
        return Err(module_error(format!("the entry computation {} does not exist", module.entry.0)));
    }
    let mut comp_names = HashSet::new();
    for comp in &module.computations {
        if !comp_names.insert(comp.name.as_str()) {
            return Err(module_error(format!("two computations are named {}", comp.name)));
        }
        check_computation_structure(module, comp)?;
    }
    check_device_counts(module).map_err(module_error)?;
    check_no_recursion(module)
}

/// `replica_count` and `num_partitions` are positive integers, and the devices they make
/// (each a thread with its own buffers) within [`MAX_DEVICES`].
fn check_device_counts(module: &Module) -> std::result::Result<(), String> {
    let mut devices: u128 = 1;
    for key in ["replica_count", "num_partitions"] {
        let Some(text) = module.header_attribute(key) else { continue };
        let count = text.trim().parse::<u128>().ok().filter(|&n| n > 0);
        let count = count.ok_or_else(|| format!("{key}={text} is not a positive integer"))?;
        devices = devices.saturating_mul(count);
    }
    if devices > MAX_DEVICES as u128 {
        return Err(format!(
            "replica_count x num_partitions is {devices} devices; hlojit runs at most {MAX_DEVICES} in one process"
        ));
    }
    Ok(())
}

fn check_computation_structure(module: &Module, comp: &Computation) -> Result<()> {
    let n = comp.instructions.len();
    if n == 0 {
        return Err(structure_error(comp, None, "the computation has no instructions"));
    }
    if comp.root.index() >= n {
        return Err(structure_error(comp, None, format!("the root {} does not exist", comp.root.0)));
    }
    let mut names = HashSet::new();
    let mut parameters: HashMap<i64, &str> = HashMap::new();
    for inst in &comp.instructions {
        if !names.insert(inst.name.as_str()) {
            return Err(structure_error(comp, Some(inst), "another instruction of the computation has this name"));
        }
        for (what, ids) in [("operand", &inst.operands), ("control predecessor", &inst.control_predecessors)] {
            if let Some(bad) = ids.iter().find(|id| id.index() >= n) {
                return Err(structure_error(comp, Some(inst), format!("{what} {} does not exist", bad.0)));
            }
        }
        if let Some(bad) = inst.called.iter().find(|c| c.index() >= module.computations.len()) {
            return Err(structure_error(comp, Some(inst), format!("called computation {} does not exist", bad.0)));
        }
        if inst.opcode == Opcode::Parameter {
            let Some(number) = inst.attrs.parameter_number else {
                return Err(structure_error(comp, Some(inst), "parameter: missing parameter number"));
            };
            if let Some(other) = parameters.insert(number, &inst.name) {
                return Err(structure_error(
                    comp,
                    Some(inst),
                    format!("parameter number {number} is also used by {other}"),
                ));
            }
        }
    }
    for number in 0..parameters.len() as i64 {
        if !parameters.contains_key(&number) {
            let max = parameters.keys().max().copied().unwrap_or(0);
            return Err(structure_error(
                comp,
                None,
                format!(
                    "parameter numbers must be 0..{} without gaps, but {number} is missing (highest is {max})",
                    parameters.len()
                ),
            ));
        }
    }
    check_acyclic(comp)
}

/// Operands and control predecessors must form a DAG.
fn check_acyclic(comp: &Computation) -> Result<()> {
    // 0 = unvisited, 1 = on the stack, 2 = done.
    let mut state = vec![0u8; comp.instructions.len()];
    for start in comp.ids() {
        if state[start.index()] != 0 {
            continue;
        }
        let mut stack: Vec<(InstrId, usize)> = vec![(start, 0)];
        state[start.index()] = 1;
        while let Some(&mut (id, ref mut next)) = stack.last_mut() {
            let inst = comp.get(id);
            let n_operands = inst.operands.len();
            if *next < n_operands + inst.control_predecessors.len() {
                let child = if *next < n_operands {
                    inst.operands[*next]
                } else {
                    inst.control_predecessors[*next - n_operands]
                };
                *next += 1;
                match state[child.index()] {
                    0 => {
                        state[child.index()] = 1;
                        stack.push((child, 0));
                    }
                    1 => {
                        return Err(structure_error(
                            comp,
                            Some(inst),
                            format!("depends on itself through {} (operands form a cycle)", comp.get(child).name),
                        ))
                    }
                    _ => {}
                }
            } else {
                state[id.index()] = 2;
                stack.pop();
            }
        }
    }
    Ok(())
}

/// No computation may (transitively) call itself.
fn check_no_recursion(module: &Module) -> Result<()> {
    let n = module.computations.len();
    let mut state = vec![0u8; n];
    fn visit(module: &Module, c: CompId, state: &mut [u8]) -> std::result::Result<(), (CompId, CompId)> {
        state[c.index()] = 1;
        for inst in &module.computation(c).instructions {
            for &callee in &inst.called {
                match state[callee.index()] {
                    0 => visit(module, callee, state)?,
                    1 => return Err((c, callee)),
                    _ => {}
                }
            }
        }
        state[c.index()] = 2;
        Ok(())
    }
    for c in module.comp_ids() {
        if state[c.index()] == 0 {
            if let Err((caller, callee)) = visit(module, c, &mut state) {
                let comp = module.computation(caller);
                return Err(structure_error(
                    comp,
                    None,
                    format!("calls {} recursively (computations may not recurse)", module.computation(callee).name),
                ));
            }
        }
    }
    Ok(())
}

/// `entry_computation_layout` agrees with the entry's parameters and root (layouts aside).
fn check_entry_layout(module: &Module) -> Result<()> {
    let Some(layout) = &module.entry_layout else {
        return Ok(());
    };
    let entry = module.entry_computation();
    let params = entry.parameters();
    let error = |inst: Option<InstrId>, message: String| {
        Error::verify(
            &entry.name,
            inst.map_or("", |i| entry.get(i).name.as_str()),
            format!("entry_computation_layout: {message}"),
        )
    };
    for shape in layout.parameters.iter().chain(std::iter::once(&layout.result)) {
        check_shape_valid(shape).map_err(|m| error(None, format!("invalid shape {shape}: {m}")))?;
    }
    if layout.parameters.len() != params.len() {
        return Err(error(
            None,
            format!("lists {} parameters but the entry computation has {}", layout.parameters.len(), params.len()),
        ));
    }
    for (i, (declared, &id)) in layout.parameters.iter().zip(&params).enumerate() {
        let actual = &entry.get(id).shape;
        if !declared.compatible(actual) {
            return Err(error(
                Some(id),
                format!(
                    "parameter {i} is {} but the parameter instruction is {}",
                    declared.to_text(false),
                    actual.to_text(false)
                ),
            ));
        }
    }
    let root = entry.root_instruction();
    if !layout.result.compatible(&root.shape) {
        return Err(error(
            Some(entry.root),
            format!(
                "the result is {} but the root instruction is {}",
                layout.result.to_text(false),
                root.shape.to_text(false)
            ),
        ));
    }
    Ok(())
}

fn index_path(index: &[i64]) -> Option<Vec<usize>> {
    index.iter().map(|&i| usize::try_from(i).ok()).collect()
}

/// `input_output_alias` refers to existing outputs and parameters of equal shapes, each output
/// at most once.
fn check_aliases(module: &Module) -> Result<()> {
    let entry = module.entry_computation();
    let params = entry.parameters();
    let result = entry.result_shape();
    let error = |message: String| Error::verify(&entry.name, "", format!("input_output_alias: {message}"));
    let mut outputs = HashSet::new();
    let mut inputs = HashSet::new();
    for alias in &module.input_output_alias {
        let output = index_path(&alias.output_index).and_then(|p| result.subshape(&p)).ok_or_else(|| {
            error(format!(
                "output index {:?} does not exist in the result {}",
                alias.output_index,
                result.to_text(false)
            ))
        })?;
        let param_id = usize::try_from(alias.parameter).ok().and_then(|p| params.get(p)).ok_or_else(|| {
            error(format!("parameter {} does not exist ({} parameters)", alias.parameter, params.len()))
        })?;
        let param_shape = &entry.get(*param_id).shape;
        let input = index_path(&alias.parameter_index).and_then(|p| param_shape.subshape(&p)).ok_or_else(|| {
            error(format!(
                "index {:?} does not exist in parameter {} {}",
                alias.parameter_index,
                alias.parameter,
                param_shape.to_text(false)
            ))
        })?;
        if !output.compatible(input) {
            return Err(error(format!(
                "output {:?} is {} but parameter {} at {:?} is {}",
                alias.output_index,
                output.to_text(false),
                alias.parameter,
                alias.parameter_index,
                input.to_text(false)
            )));
        }
        if !outputs.insert(alias.output_index.clone()) {
            return Err(error(format!("output {:?} is aliased more than once", alias.output_index)));
        }
        if !inputs.insert((alias.parameter, alias.parameter_index.clone())) {
            return Err(error(format!(
                "parameter {} at {:?} is aliased more than once",
                alias.parameter, alias.parameter_index
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "verifier_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "verifier_corpus_tests.rs"]
mod corpus_tests;
