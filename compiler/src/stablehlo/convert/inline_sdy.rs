//! A shard_map inside a nested `jax.jit` (or any function @main calls) lowers to a manual
//! computation in that function, not in @main. The localizer (manual.rs) turns @main into the
//! per-device program and must see every boundary between global and per-device values, so
//! functions that hold a manual computation or a sharding annotation are inlined into @main at
//! their calls first: their values become @main's values, under fresh names. What is left in
//! other places (a manual computation inside a loop body or a branch) is still refused there.

use super::super::ir::{MlirModule, Op, Region, ValueRef};
use super::{str_attr, ConvertError};
use std::collections::{HashMap, HashSet};

fn callee(op: &Op) -> Option<String> {
    (op.name == "func.call").then(|| str_attr(op, "callee")).flatten()
}

fn body(f: &Op) -> Option<&super::super::ir::Block> {
    f.regions.first().and_then(|r| r.blocks.first())
}

/// True when `name`'s body has a Shardy op, or calls (at its top level, where inlining reaches)
/// a function that has one.
fn needs_inlining(name: &str, funcs: &HashMap<String, &Op>, memo: &mut HashMap<String, bool>, visiting: &mut HashSet<String>) -> bool {
    if let Some(&known) = memo.get(name) {
        return known;
    }
    let Some(block) = funcs.get(name).and_then(|f| body(f)) else { return false };
    if !visiting.insert(name.to_string()) {
        return false; // recursion: never inlined
    }
    let answer = super::manual::any_sdy_call(&block.ops)
        || block.ops.iter().filter_map(callee).any(|c| needs_inlining(&c, funcs, memo, visiting));
    visiting.remove(name);
    memo.insert(name.to_string(), answer);
    answer
}

/// Inlines the calls of @main (at its top level) to functions that hold Shardy ops; the
/// functions no longer called are dropped.
pub fn inline_sdy_callees(module: &mut MlirModule) -> Result<(), ConvertError> {
    let funcs: HashMap<String, &Op> =
        module.ops.iter().filter(|op| op.name == "func.func").filter_map(|op| Some((str_attr(op, "sym_name")?, op))).collect();
    let mut memo = HashMap::new();
    let targets: HashSet<String> = funcs
        .keys()
        .filter(|n| n.as_str() != "main" && needs_inlining(n, &funcs, &mut memo, &mut HashSet::new()))
        .cloned()
        .collect();
    if targets.is_empty() {
        return Ok(());
    }
    let funcs: HashMap<String, Op> = funcs.into_iter().filter(|(n, _)| targets.contains(n)).map(|(n, f)| (n, f.clone())).collect();
    let Some(main) = module.ops.iter_mut().find(|op| op.name == "func.func" && str_attr(op, "sym_name").as_deref() == Some("main")) else {
        return Ok(());
    };
    let Some(block) = main.regions.first_mut().and_then(|r| r.blocks.first_mut()) else { return Ok(()) };
    let mut inliner = Inliner { funcs: &funcs, counter: 0, depth: 0 };
    let ops = std::mem::take(&mut block.ops);
    block.ops = inliner.inline(ops, &HashMap::new(), "")?;
    let mut called = HashSet::new();
    for op in &module.ops {
        collect_callees(op, &mut called);
    }
    module.ops.retain(|op| !(op.name == "func.func" && str_attr(op, "sym_name").is_some_and(|n| targets.contains(&n) && !called.contains(&n))));
    Ok(())
}

fn collect_callees(op: &Op, out: &mut HashSet<String>) {
    if let Some(c) = callee(op) {
        out.insert(c);
    }
    for block in op.regions.iter().flat_map(|r| &r.blocks) {
        for inner in &block.ops {
            collect_callees(inner, out);
        }
    }
}

struct Inliner<'a> {
    funcs: &'a HashMap<String, Op>,
    counter: usize,
    depth: usize,
}

/// JAX nests jitted functions a few levels deep; a cycle would never end.
const MAX_DEPTH: usize = 64;

impl Inliner<'_> {
    /// `ops` with their names prefixed by `prefix` and the values in `args` (a callee's block
    /// arguments) replaced; calls to the target functions expanded in place.
    fn inline(&mut self, ops: Vec<Op>, args: &HashMap<ValueRef, ValueRef>, prefix: &str) -> Result<Vec<Op>, ConvertError> {
        // Call results, once inlined, are the callee's returned values.
        let mut subst: HashMap<ValueRef, ValueRef> = args.clone();
        let mut out = Vec::with_capacity(ops.len());
        for op in ops {
            let mut op = rename(op, &subst, prefix);
            let Some(f) = callee(&op).and_then(|c| self.funcs.get(&c)) else {
                out.push(op);
                continue;
            };
            if self.depth >= MAX_DEPTH {
                return Err(ConvertError { loc: op.loc, message: format!("func.call: calls nested more than {MAX_DEPTH} deep") });
            }
            let Some(block) = body(f) else { out.push(op); continue };
            if block.args.len() != op.operands.len() {
                return Err(ConvertError { loc: op.loc, message: format!("func.call: {} operands for {} parameters", op.operands.len(), block.args.len()) });
            }
            self.counter += 1;
            let inner_prefix = format!("inl{}.", self.counter);
            let bound: HashMap<ValueRef, ValueRef> =
                block.args.iter().map(|(n, _)| ValueRef { name: n.clone(), index: 0 }).zip(std::mem::take(&mut op.operands)).collect();
            self.depth += 1;
            let mut inlined = self.inline(block.ops.clone(), &bound, &inner_prefix)?;
            self.depth -= 1;
            let ret = match inlined.last() {
                // (MLIR bytecode brings the terminator back as stablehlo.return.)
                Some(r) if r.name == "func.return" || r.name == "stablehlo.return" => inlined.pop().map(|r| r.operands).unwrap_or_default(),
                _ => return Err(ConvertError { loc: op.loc, message: format!("func.call: @{} does not end in func.return", callee(&op).unwrap_or_default()) }),
            };
            let results = op.result_refs();
            if results.len() != ret.len() {
                return Err(ConvertError { loc: op.loc, message: format!("func.call: {} results, the callee returns {}", results.len(), ret.len()) });
            }
            // Later uses of the call's results (by their names before renaming) read the
            // callee's returned values.
            for (r, v) in results.into_iter().zip(ret) {
                subst.insert(ValueRef { name: r.name.strip_prefix(prefix).unwrap_or(&r.name).to_string(), index: r.index }, v);
            }
            out.append(&mut inlined);
        }
        Ok(out)
    }
}

/// `op` with its results and block arguments renamed `prefix` + name and its operands mapped
/// through `subst` (else prefixed), in nested regions too.
fn rename(mut op: Op, subst: &HashMap<ValueRef, ValueRef>, prefix: &str) -> Op {
    for v in &mut op.operands {
        *v = subst.get(v).cloned().unwrap_or_else(|| ValueRef { name: format!("{prefix}{}", v.name), index: v.index });
    }
    for (name, _) in &mut op.results {
        *name = format!("{prefix}{name}");
    }
    op.regions = std::mem::take(&mut op.regions)
        .into_iter()
        .map(|r| Region {
            blocks: r
                .blocks
                .into_iter()
                .map(|mut b| {
                    for (name, _) in &mut b.args {
                        *name = format!("{prefix}{name}");
                    }
                    b.ops = std::mem::take(&mut b.ops).into_iter().map(|o| rename(o, subst, prefix)).collect();
                    b
                })
                .collect(),
            ..r
        })
        .collect();
    op
}
