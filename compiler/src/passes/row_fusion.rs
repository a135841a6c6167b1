//! Row fusion: a reduction over rows fuses into the loop that reads its result broadcast along
//! those rows, so a layernorm or a softmax is one kernel that visits each row once.
//!
//! After plain fusion, `x - mean(x)` normalized by a variance is three kernels: two reductions
//! and the loop, each streaming the whole array from memory. Fused, the loop kernel computes
//! the row's reductions at the start of the row (see `codegen::row_loops`): the row is read
//! from memory once and re-read from cache, and the reduced values never go to memory. This is
//! the normalization fusion GPU compilers do; XLA:CPU runs these as separate kernels.
//!
//! A loop or reduction fusion (the producer) merges into a loop fusion (the consumer) when:
//! the consumer is its only user; the merged body has values to compute once per row, among
//! them a reduction ([`row_values`], the rule codegen applies); the producer's result is one
//! of them, read at one index made of the row dimensions; the loop has enough rows to keep
//! every thread busy, since a row is never split; a row of each reduction's operand fits in
//! the per-core cache, so the second visit reads it from there; and the merged body stays
//! under the fusion size budget. Repeated until nothing merges: a layernorm's variance merges
//! first, then the mean that both it and the loop read.

use super::fusion::sequenced_computations;
use super::fused_body::FusedBody;
use super::multi_output::{fused_size, MAX_FUSED_INSTRUCTIONS};
use crate::analysis::row_values::{row_index, row_values, DimSource};
use crate::error::{Error, Result};
use crate::hlo::{CompId, Computation, FusionKind, InstrId, Instruction, Module, Opcode};
use std::collections::HashSet;

/// Rows the loop must have: rows are the unit of parallel work, and a reduction kernel on
/// its own would have split its work across the threads.
const MIN_ROWS: i64 = 16;
/// Bytes of one row of the reduction's operand: half of a 512 KiB per-core L2, so the row is
/// still there when the loop reads it again.
const MAX_ROW_BYTES: i64 = 256 * 1024;

/// Merges row reductions into their loops in every computation that runs as kernels.
pub fn run(module: &mut Module) -> Result<bool> {
    let mut changed = false;
    for c in sequenced_computations(module) {
        let consumers: Vec<String> = {
            let comp = module.computation(c);
            comp.post_order().into_iter().map(|id| comp.get(id).name.clone()).collect()
        };
        // By name: each merge renumbers the computation.
        for name in consumers {
            let comp = module.computation(c);
            let Some(consumer) = comp.find(&name) else { continue };
            if let Some(merged) = grow(module, comp, consumer)? {
                commit(module, c, consumer, merged)?;
                changed = true;
            }
        }
    }
    Ok(changed)
}

/// The body of loop fusion `consumer` with every producer it can take merged in, if the
/// result computes a reduction once per row; `None` if nothing merges or it would not.
fn grow(module: &Module, comp: &Computation, consumer: InstrId) -> Result<Option<Merged>> {
    let inst = comp.get(consumer);
    let (Some(f), Some(out)) = (inst.fused_computation(), inst.shape.as_array()) else { return Ok(None) };
    if inst.attrs.fusion_kind != Some(FusionKind::Loop) || !inst.control_predecessors.is_empty() {
        return Ok(None);
    }
    let layout = out.layout_or_default();
    let major_to_minor: Vec<usize> = layout.major_to_minor().iter().map(|&d| d as usize).collect();
    let users = comp.users();
    let mut merged = Merged { body: module.computation(f).clone(), operands: inst.operands.clone(), roots: Vec::new() };
    let mut absorbed: HashSet<InstrId> = HashSet::new();
    loop {
        let params = merged.body.parameters();
        let next = merged.operands.iter().enumerate().find(|&(k, &p)| {
            let producer = comp.get(p);
            let only_ours = users[p.index()].iter().all(|u| *u == consumer || absorbed.contains(u));
            let fits = row_bytes(module, producer).is_some_and(|b| b <= MAX_ROW_BYTES)
                && fused_size(module, producer) + merged.body.instructions.len() <= MAX_FUSED_INSTRUCTIONS;
            // Read as one value per row: at one index that leaves the most minor dimension out.
            let per_row = params.iter().find(|&&q| merged.body.get(q).attrs.parameter_number == Some(k as i64)).is_some_and(|&q| {
                row_index(&merged.body, q).is_some_and(|src| !src.contains(&DimSource::Output(*major_to_minor.last().unwrap_or(&0))))
            });
            only_ours && fits && per_row && producer.control_predecessors.is_empty()
        });
        let Some((_, &producer)) = next else { break };
        merged = absorb(module, comp, merged, producer)?;
        absorbed.insert(producer);
    }
    if absorbed.is_empty() {
        return Ok(None);
    }
    let Some(rows) = row_values(&merged.body, &out.dims, &layout, &|_| false) else { return Ok(None) };
    let row_count: i64 = rows.row_dims.iter().map(|&d| out.dims[d]).product();
    // Every merged result is one value per row of the loop that codegen will run.
    let per_row = merged.roots.iter().all(|&r| {
        row_index(&merged.body, r).is_some_and(|src| {
            src.iter().all(|s| match s {
                DimSource::Output(d) => rows.row_dims.contains(d),
                _ => true,
            })
        })
    });
    Ok((row_count >= MIN_ROWS && per_row).then_some(merged))
}

/// Bytes of the longest row a reduce of fusion `fusion` reads per result element (0 without
/// reduces); `None` unless `fusion` is a loop or reduction fusion with one array result.
fn row_bytes(module: &Module, fusion: &Instruction) -> Option<i64> {
    if !matches!(fusion.attrs.fusion_kind, Some(FusionKind::Loop | FusionKind::Input)) || !fusion.shape.is_array() {
        return None;
    }
    let body = module.computation(fusion.fused_computation()?);
    let bytes = body.instructions.iter().filter(|i| i.opcode == Opcode::Reduce).filter_map(|reduce| {
        let operand = body.get(*reduce.operands.first()?).shape.as_array()?;
        let elements: i64 = reduce.attrs.dims().iter().map(|&d| operand.dims.get(d as usize).copied().unwrap_or(1)).product();
        Some(elements.saturating_mul(operand.element_type.byte_size() as i64))
    });
    Some(bytes.max().unwrap_or(0))
}

/// A consumer's body with producers computed inside it.
struct Merged {
    body: Computation,
    /// The fusion's operands, by parameter number.
    operands: Vec<InstrId>,
    /// The merged producers' roots, inside `body`.
    roots: Vec<InstrId>,
}

/// `merged` with the parameters that read `producer` replaced by `producer`'s fused body;
/// parameters for the operands of both, one per operand.
fn absorb(module: &Module, comp: &Computation, merged: Merged, producer: InstrId) -> Result<Merged> {
    let p = comp.get(producer);
    let fp = module.computation(p.fused_computation().ok_or_else(|| Error::Internal(format!("{} is not a fusion", p.name)))?);
    let fu = &merged.body;
    let mut fused = FusedBody::new(fu.name.clone());
    let shape = |o: InstrId| comp.get(o).shape.clone();
    // The producer's body first, its parameters bound to its operands.
    let map_p = fused.copy(fp, &mut |f, n| {
        let operand = *p.operands.get(n).ok_or_else(|| Error::Internal(format!("{}: no operand {n}", p.name)))?;
        Ok(f.parameter(operand, &shape(operand)))
    })?;
    let root = map_p[&fp.root];
    // Then the consumer's, reading the producer's root where it read the producer.
    let map_u = fused.copy(fu, &mut |f, n| {
        let operand = *merged.operands.get(n).ok_or_else(|| Error::Internal(format!("{}: no operand {n}", fu.name)))?;
        Ok(if operand == producer { root } else { f.parameter(operand, &shape(operand)) })
    })?;
    fused.body.root = map_u[&fu.root];
    let mut roots: Vec<InstrId> = merged.roots.iter().map(|r| map_u[r]).collect();
    roots.push(root);
    Ok(Merged { body: fused.body, operands: fused.operands, roots })
}

/// Points `consumer` at the merged body and its operands; the producers it absorbed, now
/// unused, go.
fn commit(module: &mut Module, c: CompId, consumer: InstrId, merged: Merged) -> Result<()> {
    let Merged { mut body, operands, .. } = merged;
    // Both bodies often compute the same values (broadcast constants, `x - mean`).
    crate::passes::cse::cse_computation(&mut body);
    body.compact();
    let mut name = format!("{}.row", body.name);
    while module.find_computation(&name).is_some() {
        name.push('_');
    }
    body.name = name;
    // A new computation rather than an edit: the old one may be called elsewhere (dce drops it
    // when not).
    let f = module.add_computation(body);
    let comp = module.computation_mut(c);
    let inst = comp.get_mut(consumer);
    inst.operands = operands;
    inst.called = vec![f];
    comp.compact();
    Ok(())
}

/// Fuses row reductions into the loops that use them.
pub struct RowFusion;

impl super::pass::Pass for RowFusion {
    fn name(&self) -> &'static str {
        "row-fusion"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        run(module)
    }
}
