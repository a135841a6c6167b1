//! Ops whose results nothing reads are dropped before conversion. JAX's StableHLO keeps some
//! (the HLO it prints has been cleaned by XLA): a dead reduce over a scan's stacked residual
//! would otherwise keep that residual alive in the loop state, where HLO's dead-state
//! removal cannot see it is unused. Ops that may have effects stay.

use super::super::ir::{Op, Region, ValueRef};
use std::collections::HashSet;

fn may_have_effects(op: &Op) -> bool {
    let short = op.name.split_once('.').map_or(op.name.as_str(), |x| x.1);
    op.name.starts_with("func.")
        || !op.name.starts_with("stablehlo.") && !op.name.starts_with("chlo.")
        || op.results.is_empty()
        || !op.regions.is_empty()
        || matches!(
            short,
            "custom_call"
                | "return"
                | "infeed"
                | "outfeed"
                | "send"
                | "recv"
                | "after_all"
                | "all_reduce"
                | "all_gather"
                | "all_to_all"
                | "reduce_scatter"
                | "collective_permute"
                | "collective_broadcast"
                | "composite"
        )
}

pub fn remove_dead_ops(ops: &mut [Op]) {
    for op in ops.iter_mut() {
        for r in &mut op.regions {
            dce_region(r);
        }
    }
}

fn dce_region(region: &mut Region) {
    for block in &mut region.blocks {
        for op in &mut block.ops {
            for r in &mut op.regions {
                dce_region(r);
            }
        }
        // Reverse order: an op is live if something live after it reads one of its results.
        let mut used: HashSet<ValueRef> = HashSet::new();
        let mut keep = vec![true; block.ops.len()];
        for (i, op) in block.ops.iter().enumerate().rev() {
            let live = may_have_effects(op) || op.result_refs().iter().any(|r| used.contains(r));
            if live {
                collect_uses(op, &mut used);
            } else {
                keep[i] = false;
            }
        }
        let mut i = 0;
        block.ops.retain(|_| {
            i += 1;
            keep[i - 1]
        });
    }
}

fn collect_uses(op: &Op, used: &mut HashSet<ValueRef>) {
    used.extend(op.operands.iter().cloned());
    for r in &op.regions {
        for b in &r.blocks {
            for o in &b.ops {
                collect_uses(o, used);
            }
        }
    }
}
