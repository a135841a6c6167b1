//! Sorts that XLA:CPU runs as top-k, marked stable so that ties come out in XLA's order.
//!
//! A `sort` with `is_stable=false` is ordered as XLA:CPU's `std::sort` leaves it (the runtime's
//! introsort port), ties included. But XLA:CPU first rewrites the top-k pattern — a sort of an
//! `f32` array of rank 1 or 2 along its last dimension, alone or with an `s32` iota along that
//! dimension, whose results are only read through slices that start at 0 (`approx_max_k` and
//! `lax.top_k` written as sort + slice lower to this) — into its TopK runtime call
//! (`TopkRewriter`), which breaks ties by position: the stable order. This pass sets
//! `is_stable` on exactly those sorts.

use crate::error::Result;
use crate::hlo::{Computation, InstrId, Module, Opcode};
use hlojit_runtime::ElementType;

/// Marks the unstable sorts XLA:CPU would run as top-k stable; returns whether any was.
pub fn run(module: &mut Module) -> Result<bool> {
    let mut changed = false;
    for c in module.comp_ids().collect::<Vec<_>>() {
        let comp = module.computation_mut(c);
        let users = comp.users();
        let found: Vec<InstrId> = comp.ids().filter(|&id| is_xla_topk(comp, id, &users)).collect();
        for id in found {
            comp.get_mut(id).attrs.is_stable = true;
            changed = true;
        }
    }
    Ok(changed)
}

fn is_xla_topk(comp: &Computation, id: InstrId, users: &[Vec<InstrId>]) -> bool {
    let sort = comp.get(id);
    if sort.opcode != Opcode::Sort || sort.attrs.is_stable || sort.operands.is_empty() || sort.operands.len() > 2 {
        return false;
    }
    let data = &comp.get(sort.operands[0]).shape;
    let rank = data.dims().len();
    let dim = sort.attrs.dimensions.as_ref().and_then(|d| d.first().copied());
    if data.element_type() != Some(ElementType::F32) || !(1..=2).contains(&rank) || dim != Some(rank as i64 - 1) {
        return false;
    }
    if let Some(&second) = sort.operands.get(1) {
        let iota = comp.get(second);
        // JAX broadcasts a 1-D iota over the rows.
        let iota = if iota.opcode == Opcode::Broadcast && iota.operands.len() == 1 {
            let inner = comp.get(iota.operands[0]);
            let ok = iota.attrs.dimensions.as_deref() == Some(&[rank as i64 - 1][..]) && inner.attrs.iota_dimension == Some(0);
            if !ok {
                return false;
            }
            inner
        } else {
            if iota.attrs.iota_dimension != Some(rank as i64 - 1) {
                return false;
            }
            iota
        };
        if iota.opcode != Opcode::Iota || iota.shape.element_type() != Some(ElementType::S32) {
            return false;
        }
    }
    // Every use reads a proper prefix along the sort dimension (through get-tuple-element when
    // the sort has two results). A slice of everything is gone (XLA's simplifier removes it)
    // before the rewrite looks, so it does not count.
    let n = data.dims()[rank - 1];
    let is_prefix_slice = |u: InstrId| {
        let s = comp.get(u);
        s.opcode == Opcode::Slice
            && s.attrs.slice.as_ref().is_some_and(|d| {
                d.iter().all(|d| d.start == 0 && d.stride == 1) && d.get(rank - 1).is_some_and(|d| d.limit < n)
            })
    };
    let uses = &users[id.index()];
    !uses.is_empty()
        && uses.iter().all(|&u| {
            let user = comp.get(u);
            if sort.operands.len() == 1 {
                is_prefix_slice(u)
            } else {
                user.opcode == Opcode::GetTupleElement && !users[u.index()].is_empty() && users[u.index()].iter().all(|&s| is_prefix_slice(s))
            }
        })
}

/// Marks XLA:CPU's top-k sorts stable.
pub struct TopkSorts;

impl super::pass::Pass for TopkSorts {
    fn name(&self) -> &'static str {
        "topk-sorts"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        run(module)
    }
}
