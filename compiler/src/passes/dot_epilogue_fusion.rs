//! Dot epilogue fusion: a large f32 dot whose only user is an elementwise loop over its result
//! (bias add through a broadcast, scaling, relu / gelu / tanh / logistic, a residual add) becomes
//! one `kOutput` fusion rooted at that loop, the dot inside. Its kernel runs the GEMM into the
//! output buffer and applies the loop to each finished region of the result while the region
//! is still in cache (`codegen/emitters/dot_epilogue.rs`), instead of a second kernel that reads
//! the whole result back from memory and writes it again.
//!
//! XLA:CPU keeps these apart (its optimized HLO of the transformer block has the dot as a
//! `__ynn_fusion` and bias + gelu as a separate `kLoop` fusion); the values are the same either
//! way: the epilogue computes each element from the dot's finished f32 element with the same
//! generated code as the separate loop would.
//!
//! Only where every element of the loop's result reads the dot at its own index (elementwise
//! ops on equal shapes and layouts from the dot to the root), so a region can be finished
//! alone and the result written over the dot's; and only for dots with regions to finish in
//! cache: those the GEMM engine runs (large, many rows and columns), and those with few rows
//! the precompiled strip kernel runs (an LSTM step's `h @ W_h`, a batch-1 layer), whose
//! strips of columns the kernel finishes after the call. Smaller dots stay apart: their
//! generated code sits inlined in its loop body beside the epilogue already.

use super::buffer_assignment::same_logical_index_only;
use crate::codegen::emitters::dot_strips as strip_kernel;
use super::fused_body::FusedBody;
use crate::error::{Error, Result};
use crate::hlo::{CompId, Computation, FusionKind, InstrId, Instruction, Module, Opcode};
use hlojit_runtime::ElementType;

/// Least rows and columns of the dot's result: smaller ones run the row-strip kernel or the
/// plain loop nest, which have no cached tiles to finish (see `codegen/emitters/dot_strips.rs`).
const MIN_ROWS_AND_COLUMNS: i64 = 64;

/// Least multiply-adds: below this the second pass over the result costs little.
const MIN_MACS: i64 = 1 << 20;

/// Whether `user` is an epilogue `dot` (in `comp`) can take.
pub(super) type Accepts = fn(&Module, &Computation, InstrId, InstrId) -> bool;

/// Fuses the epilogues of the dots of every sequenced computation.
pub fn fuse_epilogues(module: &mut Module) -> Result<bool> {
    fuse_accepted(module, is_epilogue)
}

/// Fuses every dot with the epilogue `accepts` takes, in every sequenced computation.
pub(super) fn fuse_accepted(module: &mut Module, accepts: Accepts) -> Result<bool> {
    let mut changed = false;
    for c in super::fusion::sequenced_computations(module) {
        while let Some((dot, user)) = find_candidate(module, c, accepts) {
            fuse(module, c, dot, user)?;
            changed = true;
        }
    }
    Ok(changed)
}

/// The first dot of `c` with an epilogue to fuse, and that epilogue (its only user).
fn find_candidate(module: &Module, c: CompId, accepts: Accepts) -> Option<(InstrId, InstrId)> {
    let comp = module.computation(c);
    let users = comp.users();
    comp.ids().find_map(|id| {
        let dot = comp.get(id);
        if dot.opcode != Opcode::Dot || !finished_in_regions(comp, dot) || !dot.control_predecessors.is_empty() || comp.root == id {
            return None;
        }
        let [user] = users[id.index()][..] else { return None };
        let no_control_users = comp.ids().all(|i| !comp.get(i).control_predecessors.contains(&id));
        (no_control_users && accepts(module, comp, id, user)).then_some((id, user))
    })
}

/// An f32 result of at least [`MIN_ROWS_AND_COLUMNS`] columns (the free dimensions of the
/// rhs) and either as many rows and [`MIN_MACS`] multiply-adds (the GEMM engine) or few rows
/// and the multiply-adds of the precompiled strip kernel.
fn finished_in_regions(comp: &Computation, dot: &Instruction) -> bool {
    let Some(out) = dot.shape.as_array() else { return false };
    let (Some(lhs), Some(rhs)) = (dot.operands.first().map(|&o| comp.get(o).shape.dims()), dot.operands.get(1).map(|&o| comp.get(o).shape.dims())) else {
        return false;
    };
    let dn = dot.attrs.dot_dimension_numbers();
    let free = |dims: &[i64], batch: &[i64], contracting: &[i64]| -> i64 {
        (0..dims.len() as i64).filter(|d| !batch.contains(d) && !contracting.contains(d)).map(|d| dims[d as usize]).product()
    };
    let m = free(lhs, &dn.lhs_batch, &dn.lhs_contracting);
    let n = free(rhs, &dn.rhs_batch, &dn.rhs_contracting);
    let k: i64 = dn.lhs_contracting.iter().map(|&d| lhs.get(d as usize).copied().unwrap_or(0)).product();
    let macs = out.element_count().saturating_mul(k);
    let gemm = m >= MIN_ROWS_AND_COLUMNS && macs >= MIN_MACS;
    let strips = m <= strip_kernel::MAX_ROWS && macs >= strip_kernel::PRECOMPILED_MIN_MACS;
    out.element_type == ElementType::F32 && n >= MIN_ROWS_AND_COLUMNS && (gemm || strips)
}

/// Whether `user` is an elementwise loop that reads `dot` (once, as one operand) only at the
/// index it writes, with the dot's dimensions and layout, and computes nothing but elemental ops.
fn is_epilogue(module: &Module, comp: &Computation, dot: InstrId, user: InstrId) -> bool {
    let u = comp.get(user);
    if !u.control_predecessors.is_empty() || u.operands.iter().filter(|&&o| o == dot).count() != 1 || !u.shape.is_array() {
        return false;
    }
    let same_shape = same_array_shape(&u.shape, &comp.get(dot).shape);
    let position = u.operands.iter().position(|&o| o == dot).unwrap_or(0);
    match (u.opcode, u.fused_computation()) {
        (Opcode::Fusion, Some(f)) if u.attrs.fusion_kind == Some(FusionKind::Loop) => {
            let body = module.computation(f);
            let all_elemental = body.ids().all(|i| body.get(i).opcode.is_elemental() && body.get(i).opcode != Opcode::Dot);
            let params = body.parameters();
            let root_shape = same_array_shape(&body.get(body.root).shape, &comp.get(dot).shape);
            same_shape && root_shape && all_elemental && params.get(position).is_some_and(|&p| same_logical_index_only(body, body.root, &[p]))
        }
        (op, None) => same_shape && op.is_elementwise() && u.operands.iter().all(|&o| same_array_shape(&comp.get(o).shape, &u.shape)),
        _ => false,
    }
}

/// Arrays of one element type, dimensions and physical layout (an unset layout is the default
/// one: a dot whose transpose was folded into it has none printed).
pub fn same_array_shape(a: &hlojit_runtime::Shape, b: &hlojit_runtime::Shape) -> bool {
    match (a.as_array(), b.as_array()) {
        (Some(a), Some(b)) => a.element_type == b.element_type && a.dims == b.dims && a.layout_or_default() == b.layout_or_default(),
        _ => false,
    }
}

/// Replaces `dot` and its epilogue `user` by one `kOutput` fusion: the dot's operands are its
/// first parameters, the epilogue's other operands follow.
fn fuse(module: &mut Module, c: CompId, dot: InstrId, user: InstrId) -> Result<()> {
    let comp = module.computation(c);
    let (d, u) = (comp.get(dot).clone(), comp.get(user).clone());
    let name = unique_computation_name(module, &format!("{}.epilogue", d.name));
    let mut fused = FusedBody::new(name);
    let shape = |o: InstrId| comp.get(o).shape.clone();
    let mut inner = d.clone();
    inner.operands = d.operands.iter().map(|&o| fused.parameter(o, &shape(o))).collect();
    inner.control_predecessors.clear();
    inner.name = fused.fresh_name(&d.name);
    let inner = fused.body.add(inner);
    let loop_body = match u.fused_computation() {
        Some(f) => module.computation(f).clone(),
        None => single_instruction_body(comp, &u),
    };
    let operand = |n: usize| u.operands.get(n).copied().ok_or_else(|| Error::Internal(format!("{}: no operand {n}", u.name)));
    let map = fused.copy(&loop_body, &mut |f, n| {
        let o = operand(n)?;
        Ok(if o == dot { inner } else { f.parameter(o, &shape(o)) })
    })?;
    let FusedBody { mut body, operands, .. } = fused;
    body.root = map[&loop_body.root];
    let body_id = module.add_computation(body);
    let comp = module.computation_mut(c);
    let mut fusion = Instruction::new(format!("{}.epilogue", u.name), Opcode::Fusion, u.shape.clone(), operands);
    fusion.attrs.fusion_kind = Some(FusionKind::Output);
    fusion.called = vec![body_id];
    let new = comp.add(fusion);
    comp.replace_all_uses(user, new);
    comp.compact();
    Ok(())
}

/// An unfused elementwise op as the body of a fusion: its operands become parameters.
fn single_instruction_body(comp: &Computation, u: &Instruction) -> Computation {
    let mut body = Computation::new(format!("{}.body", u.name));
    let mut params = Vec::new();
    for (n, &o) in u.operands.iter().enumerate() {
        let mut p = Instruction::new(format!("param_{n}"), Opcode::Parameter, comp.get(o).shape.clone(), vec![]);
        p.attrs.parameter_number = Some(n as i64);
        params.push(body.add(p));
    }
    let mut copy = u.clone();
    copy.operands = params;
    copy.control_predecessors.clear();
    body.root = body.add(copy);
    body
}

fn unique_computation_name(module: &Module, base: &str) -> String {
    let mut name = base.to_string();
    while module.find_computation(&name).is_some() {
        name.push('_');
    }
    name
}

/// Fuses dot epilogues (see the module documentation).
pub struct DotEpilogueFusion;

impl super::pass::Pass for DotEpilogueFusion {
    fn name(&self) -> &'static str {
        "dot-epilogue-fusion"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        fuse_epilogues(module)
    }
}
