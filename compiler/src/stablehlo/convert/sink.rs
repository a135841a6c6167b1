//! Constants defined outside a region and used inside it are copied into the region.
//!
//! MLIR lets a region that is not isolated from above (a sort comparator, a reducer) use
//! values of the enclosing function, and StableHLO's serializer shares equal constants that
//! way: the portable artifact of `jnp.sort` defines the comparator's `0.0` outside it. An HLO
//! computation sees only its parameters, so each region gets its own copy, as XLA's converter
//! materializes them.

use super::super::ir::{Attr, Block, Op, Region, ValueRef};
use std::collections::{HashMap, HashSet};

pub fn sink_constants(ops: &mut [Op]) {
    let mut counter = 0;
    walk_block_ops(ops, &HashMap::new(), &mut counter);
}

fn is_constant(op: &Op) -> bool {
    op.name == "stablehlo.constant" && op.regions.is_empty() && op.operands.is_empty() && matches!(op.attr("value"), Some(Attr::Dense(_)))
}

/// Walks a block's ops in order, constants seen so far being visible to later ops' regions.
fn walk_block_ops(ops: &mut [Op], visible: &HashMap<ValueRef, Op>, counter: &mut usize) {
    let mut local = visible.clone();
    for op in ops.iter_mut() {
        for region in &mut op.regions {
            sink_into(region, &local, counter);
        }
        if is_constant(op) {
            for r in op.result_refs() {
                local.insert(r, op.clone());
            }
        }
    }
}

fn sink_into(region: &mut Region, visible: &HashMap<ValueRef, Op>, counter: &mut usize) {
    if region.blocks.is_empty() {
        return;
    }
    let (mut used, mut defined) = (Vec::new(), HashSet::new());
    collect(region, &mut used, &mut defined);
    let mut renames = HashMap::new();
    let mut copies = Vec::new();
    for v in used {
        if defined.contains(&v) || renames.contains_key(&v) {
            continue;
        }
        if let Some(c) = visible.get(&v) {
            *counter += 1;
            let name = format!("{}_in_region{}", v.name, counter);
            let mut copy = c.clone();
            copy.results = vec![(name.clone(), 1)];
            renames.insert(v, ValueRef { name, index: 0 });
            copies.push(copy);
        }
    }
    if !renames.is_empty() {
        rename(region, &renames);
        let block = &mut region.blocks[0];
        let rest = std::mem::take(&mut block.ops);
        block.ops = copies;
        block.ops.extend(rest);
    }
    for block in &mut region.blocks {
        walk_block_ops(&mut block.ops, visible, counter);
    }
}

fn collect(region: &Region, used: &mut Vec<ValueRef>, defined: &mut HashSet<ValueRef>) {
    for Block { args, ops } in &region.blocks {
        for (name, _) in args {
            defined.insert(ValueRef { name: name.clone(), index: 0 });
        }
        for op in ops {
            used.extend(op.operands.iter().cloned());
            defined.extend(op.result_refs());
            for r in &op.regions {
                collect(r, used, defined);
            }
        }
    }
}

fn rename(region: &mut Region, renames: &HashMap<ValueRef, ValueRef>) {
    for block in &mut region.blocks {
        for op in &mut block.ops {
            for v in &mut op.operands {
                if let Some(n) = renames.get(v) {
                    *v = n.clone();
                }
            }
            for r in &mut op.regions {
                rename(r, renames);
            }
        }
    }
}
