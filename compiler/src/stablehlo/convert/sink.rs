//! Constants defined outside a region and used inside it are copied into the region, with
//! broadcasts and iotas made of them.
//!
//! MLIR lets a region that is not isolated from above (a sort comparator, a reducer) use
//! values of the enclosing function, and StableHLO's serializer shares equal constants that
//! way: the portable artifact of `jnp.sort` defines the comparator's `0.0` outside it. An HLO
//! computation sees only its parameters, so each region gets its own copy, as XLA's converter
//! materializes them. For while bodies it is also what XLA's WhileLoopConstantSinking does:
//! a zero broadcast JAX defines outside a scan would otherwise be captured into the loop
//! state, a buffer filled once and read every iteration instead of values computed in place.

use super::super::ir::{Attr, Block, Op, Region, ValueRef};
use std::collections::{HashMap, HashSet};

pub fn sink_constants(ops: &mut [Op]) {
    for op in ops.iter_mut() {
        for r in &mut op.regions {
            for b in &mut r.blocks {
                drop_invariant_while_state(&mut b.ops, &HashMap::new());
            }
        }
    }
    let mut counter = 0;
    walk_block_ops(ops, &HashMap::new(), &mut counter);
}

/// A while operand that is copyable (a constant, a broadcast of one) and that the body returns
/// unchanged is not loop state: its uses in cond and body read the outer value instead (which
/// `sink_into` then copies in) and uses of the while's result read it too. JAX passes scan
/// constants such as a ones-broadcast through the loop this way.
fn drop_invariant_while_state(ops: &mut [Op], visible: &HashMap<ValueRef, Op>) {
    let mut local = visible.clone();
    let mut renames: HashMap<ValueRef, ValueRef> = HashMap::new();
    for op in ops.iter_mut() {
        if !renames.is_empty() {
            rename_op(op, &renames);
        }
        if op.name == "stablehlo.while" && op.regions.len() == 2 && op.results.len() == 1 {
            let n = op.operands.len();
            let invariant: Vec<bool> = (0..n).map(|k| local.contains_key(&op.operands[k]) && passes_through(&op.regions[1], k)).collect();
            let ok_shape = op.regions.iter().all(|r| r.blocks.len() == 1 && r.blocks[0].args.len() == n) && op.result_types.len() == n && op.results[0].1 == n;
            if ok_shape && invariant.iter().any(|&x| x) && invariant.iter().any(|&x| !x) {
                let outer: Vec<ValueRef> = op.operands.clone();
                let result_name = op.results[0].0.clone();
                for region in &mut op.regions {
                    let block = &mut region.blocks[0];
                    let mut arg_renames = HashMap::new();
                    for k in (0..n).rev() {
                        if invariant[k] {
                            let (name, _) = block.args.remove(k);
                            arg_renames.insert(ValueRef { name, index: 0 }, outer[k].clone());
                        }
                    }
                    rename(region, &arg_renames);
                }
                if let Some(ret) = op.regions[1].blocks[0].ops.last_mut() {
                    let mut k = 0;
                    ret.operands.retain(|_| {
                        k += 1;
                        !invariant[k - 1]
                    });
                }
                let mut kept = 0;
                for k in 0..n {
                    let from = ValueRef { name: result_name.clone(), index: k };
                    if invariant[k] {
                        renames.insert(from, outer[k].clone());
                    } else {
                        if kept != k {
                            renames.insert(from, ValueRef { name: result_name.clone(), index: kept });
                        }
                        kept += 1;
                    }
                }
                let mut k = 0;
                op.operands.retain(|_| {
                    k += 1;
                    !invariant[k - 1]
                });
                let mut k = 0;
                op.result_types.retain(|_| {
                    k += 1;
                    !invariant[k - 1]
                });
                op.results[0].1 = kept;
            }
        }
        for region in &mut op.regions {
            for b in &mut region.blocks {
                drop_invariant_while_state(&mut b.ops, &local);
            }
        }
        if is_sinkable(op, &local) {
            for r in op.result_refs() {
                local.insert(r, op.clone());
            }
        }
    }
}

/// Whether a while body returns its argument `k` unchanged at position `k`.
fn passes_through(body: &Region, k: usize) -> bool {
    let Some(block) = body.blocks.first() else { return false };
    let (Some((arg, _)), Some(ret)) = (block.args.get(k), block.ops.last()) else { return false };
    ret.operands.get(k) == Some(&ValueRef { name: arg.clone(), index: 0 })
}

fn rename_op(op: &mut Op, renames: &HashMap<ValueRef, ValueRef>) {
    for v in &mut op.operands {
        if let Some(n) = renames.get(v) {
            *v = n.clone();
        }
    }
    for r in &mut op.regions {
        rename(r, renames);
    }
}

/// Ops worth copying into a region instead of capturing: constants, iotas, and broadcasts
/// (or reshapes, converts) of values that are themselves copyable.
fn is_sinkable(op: &Op, visible: &HashMap<ValueRef, Op>) -> bool {
    if !op.regions.is_empty() || op.result_types.len() != 1 {
        return false;
    }
    match op.name.as_str() {
        "stablehlo.constant" => op.operands.is_empty() && matches!(op.attr("value"), Some(Attr::Dense(_))),
        "stablehlo.iota" => op.operands.is_empty(),
        "stablehlo.broadcast_in_dim" | "stablehlo.reshape" | "stablehlo.convert" => op.operands.iter().all(|v| visible.contains_key(v)),
        _ => false,
    }
}

/// Walks a block's ops in order, constants seen so far being visible to later ops' regions.
fn walk_block_ops(ops: &mut [Op], visible: &HashMap<ValueRef, Op>, counter: &mut usize) {
    let mut local = visible.clone();
    for op in ops.iter_mut() {
        for region in &mut op.regions {
            sink_into(region, &local, counter);
        }
        if is_sinkable(op, &local) {
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
        if !defined.contains(&v) {
            copy_in(&v, visible, &mut renames, &mut copies, counter);
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

/// Copies the op defining `v` (after what it uses) into `copies`, once.
fn copy_in(v: &ValueRef, visible: &HashMap<ValueRef, Op>, renames: &mut HashMap<ValueRef, ValueRef>, copies: &mut Vec<Op>, counter: &mut usize) {
    if renames.contains_key(v) {
        return;
    }
    let Some(op) = visible.get(v) else { return };
    let mut copy = op.clone();
    for o in &mut copy.operands {
        copy_in(o, visible, renames, copies, counter);
        if let Some(n) = renames.get(o) {
            *o = n.clone();
        }
    }
    *counter += 1;
    let name = format!("{}_in_region{}", v.name, counter);
    copy.results = vec![(name.clone(), 1)];
    renames.insert(v.clone(), ValueRef { name, index: 0 });
    copies.push(copy);
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
            rename_op(op, renames);
        }
    }
}
