//! Programs for several devices that are already per device: `jax.pmap` and `shard_map` bodies
//! (Shardy manual computations with every mesh axis manual) become the program each device
//! runs, as XLA's SPMD partitioner leaves them.
//!
//! JAX's portable artifact carries a manual computation in Shardy's round-trip export form:
//!
//! ```text
//! %l = custom_call @xla.sdy.GlobalToLocalShape(%global)  {xla.sdy.in_shardings, xla.sdy.manual_axes}
//! %r = call @xla.sdy.manual_computation_body(%l)
//! %g = custom_call @xla.sdy.LocalToGlobalShape(%r)       {xla.sdy.out_shardings, xla.sdy.manual_axes}
//! %o = custom_call @xla.sdy.FuncResultSharding(%g)       {xla.sdy.sharding}
//! ```
//!
//! On each device a sharded array is its shard, so where the shardings at the boundaries agree
//! the conversions are identities on the device's buffers: @main takes and returns shards, and
//! the body runs as it is (its collectives and `partition_id` are per device already). Values
//! that are replicated (every device holds all of the array) may be computed outside manual
//! computations too: each device computes the whole value. Anything else — an op on a sharded
//! array outside a manual computation, a manual computation over only some mesh axes, shardings
//! that disagree and would need resharding — needs XLA's SPMD partitioner, which hlojit does not
//! have: such programs are refused, saying so.

use super::super::ir::{Attr, MlirModule, Op, Region, TensorType, Type, ValueRef};
use crate::hlo::shardy::{parse_manual_axes, parse_mesh_body, parse_meshes, parse_sharding, parse_sharding_per_value, Mesh, Sharding};
use super::{str_attr, text, ConvertError};
use std::collections::{BTreeMap, HashMap};

const PARTITIONING: &str = "hlojit runs programs that are already per device (jax.pmap, shard_map over every mesh axis) and does not partition sharded programs (SPMD partitioning)";

/// Where a value of @main lives.
#[derive(Clone, Debug)]
enum Land {
    /// A whole (global) array; each device holds the shard its sharding gives it.
    Global(Sharding),
    /// A per-device value of a manual computation.
    Manual,
}

fn err(op: &Op, message: String) -> ConvertError {
    ConvertError { loc: op.loc, message: format!("{}: {message}", op.name) }
}

fn frontend_attr(op_attrs: &BTreeMap<String, Attr>, key: &str) -> Option<String> {
    match op_attrs.get("mhlo.frontend_attributes") {
        Some(Attr::Dict(d)) => match d.get(key) {
            Some(Attr::String(s)) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}

fn custom_call_target(op: &Op) -> Option<String> {
    (op.name == "stablehlo.custom_call").then(|| str_attr(op, "call_target_name")).flatten()
}

/// A manual computation (as the op, or its exported custom calls) or a sharding annotation.
fn is_sdy_call(op: &Op) -> bool {
    op.name == "sdy.manual_computation" || custom_call_target(op).is_some_and(|t| t.starts_with("xla.sdy.") || t == "Sharding")
}

pub(super) fn any_sdy_call(ops: &[Op]) -> bool {
    ops.iter().any(|op| is_sdy_call(op) || op.regions.iter().any(|r| r.blocks.iter().any(|b| any_sdy_call(&b.ops))))
}

/// Rewrites @main of `module` into the per-device program when it is one (see the module
/// comment); modules without several partitions or Shardy's boundaries are left as they are.
pub fn localize(module: &mut MlirModule) -> Result<(), ConvertError> {
    super::inline_sdy::inline_sdy_callees(module)?;
    let partitions = module.attrs.get("mhlo.num_partitions").and_then(|a| text::ints(a).ok()).and_then(|v| v.first().copied()).unwrap_or(1);
    let main_index = module.ops.iter().position(|op| op.name == "func.func" && str_attr(op, "sym_name").as_deref() == Some("main"));
    let Some(main_index) = main_index else { return Ok(()) };
    for (i, op) in module.ops.iter().enumerate() {
        if i != main_index && op.regions.iter().any(|r| r.blocks.iter().any(|b| any_sdy_call(&b.ops))) {
            return Err(err(op, format!("a Shardy manual computation or sharding inside function @{}: {PARTITIONING}", str_attr(op, "sym_name").unwrap_or_default())));
        }
    }
    // Meshes: `sdy.mesh` ops (MLIR bytecode) or the exported `xla.sdy.meshes` attribute.
    let mut meshes = match frontend_attr(&module.attrs, "xla.sdy.meshes") {
        Some(text) => parse_meshes(&text).map_err(|e| err(&module.ops[main_index], e))?,
        None => BTreeMap::new(),
    };
    for op in module.ops.iter().filter(|op| op.name == "sdy.mesh") {
        let name = str_attr(op, "sym_name").ok_or_else(|| err(op, "a mesh without a name".into()))?;
        let Some(Attr::Opaque(text)) = op.attr("mesh") else { return Err(err(op, format!("mesh @{name} has no axes"))) };
        let body = text.strip_prefix("#sdy.mesh").unwrap_or(text);
        meshes.insert(name, parse_mesh_body(body).map_err(|e| err(op, e))?);
    }
    module.ops.retain(|op| op.name != "sdy.mesh");
    let main_index = module.ops.iter().position(|op| op.name == "func.func" && str_attr(op, "sym_name").as_deref() == Some("main")).unwrap_or(0);
    let main = &module.ops[main_index];
    let sdy_in_main = main.regions.iter().any(|r| r.blocks.iter().any(|b| b.ops.iter().any(is_sdy_call)));
    if partitions <= 1 && !sdy_in_main && meshes.values().all(|m| m.devices() <= 1) {
        return Ok(());
    }
    let main = &mut module.ops[main_index];
    Localizer { meshes: &meshes, lands: HashMap::new(), types: HashMap::new(), renames: HashMap::new() }.run(main)
}

struct Localizer<'a> {
    meshes: &'a BTreeMap<String, Mesh>,
    lands: HashMap<ValueRef, Land>,
    /// Per-device types of @main's values.
    types: HashMap<ValueRef, Type>,
    /// Results of the boundary conversions, which are the values they convert.
    renames: HashMap<ValueRef, ValueRef>,
}

impl Localizer<'_> {
    fn local_type(&self, op: &Op, ty: &Type, sharding: &Sharding) -> Result<Type, ConvertError> {
        match ty {
            Type::Tensor(t) => {
                let dims = t.dims.iter().map(|d| d.ok_or_else(|| err(op, "a dynamic dimension on a sharded array".into()))).collect::<Result<Vec<_>, _>>()?;
                let local = sharding.local_dims(&dims, self.meshes).map_err(|e| err(op, e))?;
                Ok(Type::Tensor(TensorType { dims: local.into_iter().map(Some).collect(), bounds: t.bounds.clone(), element: t.element }))
            }
            other if sharding.is_replicated() => Ok(other.clone()),
            other => Err(err(op, format!("a sharded value of type {other:?}"))),
        }
    }

    fn check_manual_axes(&self, op: &Op) -> Result<(), ConvertError> {
        let text = frontend_attr(&op.attrs, "xla.sdy.manual_axes").ok_or_else(|| err(op, "no xla.sdy.manual_axes".into()))?;
        self.check_manual_list(op, &text)
    }

    fn check_manual_list(&self, op: &Op, text: &str) -> Result<(), ConvertError> {
        let manual = parse_manual_axes(text).map_err(|e| err(op, e))?;
        for (name, mesh) in self.meshes {
            for (axis, size) in &mesh.axes {
                if *size > 1 && !manual.contains(axis) {
                    return Err(err(op, format!("a manual computation over some mesh axes only (axis \"{axis}\" of mesh @{name} is not manual): {PARTITIONING}")));
                }
            }
        }
        Ok(())
    }

    /// A sharding without the mesh axes of size 1 (they split nothing), so that shardings
    /// placing the same data compare equal.
    fn norm(&self, mut s: Sharding) -> Sharding {
        if let Some(mesh) = self.meshes.get(&s.mesh) {
            for d in &mut s.dims {
                d.retain(|a| mesh.size(a) != Some(1));
            }
        }
        s
    }

    fn shardings(&self, op: &Op, key: &str, count: usize) -> Result<Vec<Sharding>, ConvertError> {
        let text = frontend_attr(&op.attrs, key).ok_or_else(|| err(op, format!("no {key}")))?;
        self.per_value(op, &text, count, key)
    }

    fn per_value(&self, op: &Op, text: &str, count: usize, key: &str) -> Result<Vec<Sharding>, ConvertError> {
        let list: Vec<Sharding> = parse_sharding_per_value(text).map_err(|e| err(op, e))?.into_iter().map(|s| self.norm(s)).collect();
        if list.len() != count {
            return Err(err(op, format!("{key} has {} shardings for {count} values", list.len())));
        }
        Ok(list)
    }

    fn global_sharding(&self, op: &Op, v: &ValueRef) -> Result<Sharding, ConvertError> {
        match self.lands.get(v) {
            Some(Land::Global(s)) => Ok(s.clone()),
            Some(Land::Manual) => Err(err(op, format!("%{} is a value of a manual computation, used as a global array", v.name))),
            None => Err(err(op, format!("%{} is not defined before its use", v.name))),
        }
    }

    /// `sdy.manual_computation` (the op form, as MLIR bytecode carries it): its body joins
    /// @main, its block arguments read the operands' shards and its results are what
    /// `sdy.return` gives, each checked against the shardings at the boundary.
    fn inline_manual(&mut self, op: Op, kept: &mut Vec<Op>) -> Result<(), ConvertError> {
        let opaque = |key: &str| match op.attr(key) {
            Some(Attr::Opaque(t)) => Some(t.clone()),
            _ => None,
        };
        // Named in MLIR text; positional (properties, sorted by name) in bytecode.
        let per_value: Vec<String> = op.attrs.values().filter_map(|a| match a {
            Attr::Opaque(t) if t.starts_with("#sdy.sharding_per_value") => Some(t.clone()),
            _ => None,
        }).collect();
        let in_text = opaque("in_shardings").or_else(|| per_value.first().cloned()).ok_or_else(|| err(&op, "no in_shardings".into()))?;
        let out_text = opaque("out_shardings").or_else(|| per_value.get(1).cloned()).ok_or_else(|| err(&op, "no out_shardings".into()))?;
        let manual = opaque("manual_axes").or_else(|| op.attrs.values().find_map(|a| match a {
            Attr::Opaque(t) if t.starts_with("#sdy<manual_axes") => Some(t.clone()),
            _ => None,
        })).ok_or_else(|| err(&op, "no manual_axes".into()))?;
        self.check_manual_list(&op, &manual)?;
        let ins = self.per_value(&op, &in_text, op.operands.len(), "in_shardings")?;
        let results = op.result_refs();
        let outs = self.per_value(&op, &out_text, results.len(), "out_shardings")?;
        let loc_op = Op { name: op.name.clone(), loc: op.loc, ..Default::default() };
        let Some(block) = op.regions.into_iter().next().and_then(|r| r.blocks.into_iter().next()) else {
            return Err(err(&loc_op, "no body".into()));
        };
        if block.args.len() != op.operands.len() {
            return Err(err(&loc_op, format!("{} operands, {} block arguments", op.operands.len(), block.args.len())));
        }
        for ((v, (name, ty)), want) in op.operands.iter().zip(&block.args).zip(&ins) {
            let have = self.global_sharding(&loc_op, v)?;
            if !have.same_as(want) {
                return Err(err(&loc_op, format!("%{} is sharded as {have:?}, the manual computation takes it as {want:?} (resharding): {PARTITIONING}", v.name)));
            }
            if self.types.get(v) != Some(ty) {
                return Err(err(&loc_op, format!("the shard of %{} has type {:?}, the manual computation takes {ty:?}", v.name, self.types.get(v))));
            }
            let arg = ValueRef { name: name.clone(), index: 0 };
            // On each device the shard is the body's argument: one buffer.
            self.renames.insert(arg.clone(), v.clone());
            self.types.insert(arg.clone(), ty.clone());
            self.lands.insert(arg, Land::Manual);
        }
        for inner in block.ops {
            if inner.name == "sdy.return" {
                if inner.operands.len() != results.len() {
                    return Err(err(&loc_op, format!("sdy.return gives {} values for {} results", inner.operands.len(), results.len())));
                }
                for (k, (w, s)) in inner.operands.iter().zip(&outs).enumerate() {
                    let global = op.result_types.get(k).ok_or_else(|| err(&loc_op, "fewer result types than results".into()))?;
                    let local = self.local_type(&loc_op, global, s)?;
                    if self.types.get(w) != Some(&local) {
                        return Err(err(&loc_op, format!("a shard of {global:?} sharded as {s:?} is {local:?}, the body gives {:?}", self.types.get(w))));
                    }
                    self.renames.insert(results[k].clone(), w.clone());
                    self.types.insert(results[k].clone(), local);
                    self.lands.insert(results[k].clone(), Land::Global(s.clone()));
                }
                continue;
            }
            if inner.name == "sdy.manual_computation" || any_sdy_call(std::slice::from_ref(&inner)) {
                return Err(err(&inner, format!("a manual computation nested in another: {PARTITIONING}")));
            }
            for (r, ty) in inner.result_refs().into_iter().zip(&inner.result_types) {
                self.types.insert(r.clone(), ty.clone());
                self.lands.insert(r, Land::Manual);
            }
            kept.push(inner);
        }
        Ok(())
    }

    fn run(mut self, main: &mut Op) -> Result<(), ConvertError> {
        let arg_attrs: Vec<BTreeMap<String, Attr>> = match main.attr("arg_attrs") {
            Some(Attr::Array(a)) => a.iter().map(|d| if let Attr::Dict(d) = d { d.clone() } else { BTreeMap::new() }).collect(),
            _ => Vec::new(),
        };
        let main_copy = Op { name: main.name.clone(), loc: main.loc, ..Default::default() };
        let Some(block) = main.regions.first_mut().and_then(|r| r.blocks.first_mut()) else { return Ok(()) };
        let mut arg_types = Vec::new();
        for (i, (name, ty)) in block.args.iter_mut().enumerate() {
            let attrs = arg_attrs.get(i).cloned().unwrap_or_default();
            let sharding = self.norm(arg_sharding(&attrs).map_err(|e| err(&main_copy, format!("argument {i}: {e}")))?);
            *ty = self.local_type(&main_copy, ty, &sharding)?;
            let v = ValueRef { name: name.clone(), index: 0 };
            self.types.insert(v.clone(), ty.clone());
            self.lands.insert(v, Land::Global(sharding));
            arg_types.push(ty.clone());
        }
        let ops = std::mem::take(&mut block.ops);
        let mut kept = Vec::with_capacity(ops.len());
        let mut result_types = None;
        for op in ops {
            let results = op.result_refs();
            if op.name == "sdy.manual_computation" {
                self.inline_manual(op, &mut kept)?;
                continue;
            }
            if op.name == "sdy.sharding_constraint" || op.name == "sdy.reshard" {
                let want = op.attrs.values().find_map(|a| match a {
                    Attr::Opaque(t) if t.starts_with("#sdy.sharding<") => Some(t.clone()),
                    _ => None,
                });
                let want = self.norm(parse_sharding(&want.ok_or_else(|| err(&op, "no sharding".into()))?).map_err(|e| err(&op, e))?);
                let (Some(v), Some(r)) = (op.operands.first(), results.first()) else { return Err(err(&op, "takes one operand".into())) };
                let have = self.global_sharding(&op, v)?;
                if !have.same_as(&want) {
                    return Err(err(&op, format!("%{} is sharded as {have:?} and constrained to {want:?} (resharding): {PARTITIONING}", v.name)));
                }
                self.renames.insert(r.clone(), v.clone());
                self.types.insert(r.clone(), self.types.get(v).cloned().ok_or_else(|| err(&op, format!("%{} has no type", v.name)))?);
                self.lands.insert(r.clone(), Land::Global(have));
                continue;
            }
            if op.name == "builtin.unrealized_conversion_cast" && op.operands.len() == results.len() {
                // Between equal types (the converter checks): the same values, sharded as they were.
                for (v, r) in op.operands.iter().zip(&results) {
                    let land = self.lands.get(v).cloned().ok_or_else(|| err(&op, format!("%{} is not defined before its use", v.name)))?;
                    self.renames.insert(r.clone(), v.clone());
                    self.types.insert(r.clone(), self.types.get(v).cloned().ok_or_else(|| err(&op, format!("%{} has no type", v.name)))?);
                    self.lands.insert(r.clone(), land);
                }
                continue;
            }
            if op.name.starts_with("sdy.") {
                return Err(err(&op, format!("Shardy's {}: {PARTITIONING}", op.name)));
            }
            match custom_call_target(&op).as_deref() {
                Some("xla.sdy.GlobalToLocalShape") => {
                    self.check_manual_axes(&op)?;
                    let wanted = self.shardings(&op, "xla.sdy.in_shardings", op.operands.len())?;
                    for ((v, r), want) in op.operands.iter().zip(&results).zip(&wanted) {
                        let have = self.global_sharding(&op, v)?;
                        if !have.same_as(want) {
                            return Err(err(&op, format!("%{} is sharded as {have:?}, the manual computation takes it as {want:?} (resharding): {PARTITIONING}", v.name)));
                        }
                        let ty = &op.result_types[results.iter().position(|x| x == r).unwrap_or(0)];
                        if self.types.get(v) != Some(ty) {
                            return Err(err(&op, format!("the shard of %{} has type {:?}, the manual computation takes {ty:?}", v.name, self.types.get(v))));
                        }
                        // On each device the shard is the manual computation's value: one buffer.
                        self.renames.insert(r.clone(), v.clone());
                        self.types.insert(r.clone(), ty.clone());
                        self.lands.insert(r.clone(), Land::Manual);
                    }
                    continue;
                }
                Some("xla.sdy.LocalToGlobalShape") => {
                    self.check_manual_axes(&op)?;
                    let given = self.shardings(&op, "xla.sdy.out_shardings", op.operands.len())?;
                    for (k, (v, s)) in op.operands.iter().zip(&given).enumerate() {
                        if !matches!(self.lands.get(v), Some(Land::Manual)) {
                            return Err(err(&op, format!("%{} is not a value of a manual computation", v.name)));
                        }
                        let global = op.result_types.get(k).ok_or_else(|| err(&op, "fewer results than operands".into()))?;
                        let local = self.local_type(&op, global, s)?;
                        if self.types.get(v) != Some(&local) {
                            return Err(err(&op, format!("a shard of {global:?} sharded as {s:?} is {local:?}, the manual computation gives {:?}", self.types.get(v))));
                        }
                        // The same buffer, now the device's shard of a global array.
                        self.renames.insert(results[k].clone(), v.clone());
                        self.types.insert(results[k].clone(), local);
                        self.lands.insert(results[k].clone(), Land::Global(s.clone()));
                    }
                    continue;
                }
                Some(t @ ("xla.sdy.FuncResultSharding" | "Sharding")) => {
                    let wanted = match frontend_attr(&op.attrs, "xla.sdy.sharding") {
                        Some(text) if text.starts_with("#sdy.sharding_per_value") => self.per_value(&op, &text, op.operands.len(), "xla.sdy.sharding")?,
                        Some(text) => vec![self.norm(parse_sharding(&text).map_err(|e| err(&op, e))?)],
                        None if mhlo_replicated(&op.attrs) => vec![Sharding::replicated(); op.operands.len()],
                        None => return Err(err(&op, format!("@{t} without a Shardy sharding: {PARTITIONING}"))),
                    };
                    if wanted.len() != op.operands.len() || results.len() != op.operands.len() {
                        return Err(err(&op, format!("@{t}: {} shardings for {} values", wanted.len(), op.operands.len())));
                    }
                    for ((v, r), want) in op.operands.iter().zip(&results).zip(&wanted) {
                        let have = self.global_sharding(&op, v)?;
                        if !have.same_as(want) {
                            return Err(err(&op, format!("%{} is sharded as {have:?} and constrained to {want:?} (resharding): {PARTITIONING}", v.name)));
                        }
                        self.renames.insert(r.clone(), v.clone());
                        self.types.insert(r.clone(), self.types.get(v).cloned().ok_or_else(|| err(&op, format!("%{} has no type", v.name)))?);
                        self.lands.insert(r.clone(), Land::Global(have));
                    }
                    continue;
                }
                Some(t) if t.starts_with("xla.sdy.") => return Err(err(&op, format!("Shardy's @{t}: {PARTITIONING}"))),
                _ => {}
            }
            if op.name == "func.return" || op.name == "stablehlo.return" {
                let mut types = Vec::new();
                for v in &op.operands {
                    self.global_sharding(&op, v)?;
                    types.push(self.types.get(v).cloned().ok_or_else(|| err(&op, format!("%{} has no type", v.name)))?);
                }
                result_types = Some(types);
                kept.push(op);
                continue;
            }
            // Any other op: per device when it reads a manual value, the whole value on every
            // device when all it reads is replicated, otherwise a job for a partitioner.
            let mut manual = false;
            let mut reads = op.operands.clone();
            reads.extend(captured(&op).into_iter().filter(|v| self.lands.contains_key(v)));
            for v in &reads {
                match self.lands.get(v) {
                    Some(Land::Manual) => manual = true,
                    Some(Land::Global(s)) if s.is_replicated() => {}
                    Some(Land::Global(s)) => {
                        return Err(err(&op, format!("an op outside shard_map reads %{}, an array sharded as {s:?}: {PARTITIONING}", v.name)));
                    }
                    None => return Err(err(&op, format!("%{} is not defined before its use", v.name))),
                }
            }
            if op.result_types.len() != results.len() {
                return Err(err(&op, format!("{} results, {} result types", results.len(), op.result_types.len())));
            }
            for (r, ty) in results.iter().zip(&op.result_types) {
                self.types.insert(r.clone(), ty.clone());
                self.lands.insert(r.clone(), if manual { Land::Manual } else { Land::Global(Sharding::replicated()) });
            }
            kept.push(op);
        }
        // Uses of the conversions' results read the values they convert (chains resolved).
        let resolved: HashMap<ValueRef, ValueRef> = self
            .renames
            .keys()
            .map(|k| {
                let mut v = k;
                while let Some(next) = self.renames.get(v) {
                    v = next;
                }
                (k.clone(), v.clone())
            })
            .collect();
        for op in &mut kept {
            rename_uses(op, &resolved);
        }
        block.ops = kept;
        let result_types = result_types.ok_or_else(|| err(&main_copy, "@main does not return".into()))?;
        let to_attrs = |types: &[Type]| Attr::Array(types.iter().cloned().map(Attr::Type).collect());
        main.attrs.insert("function_type".into(), Attr::Array(vec![to_attrs(&arg_types), to_attrs(&result_types)]));
        Ok(())
    }
}

/// An argument's sharding: its Shardy sharding, else an `mhlo.sharding` that must be
/// replicated (anything else is a GSPMD sharding, for a partitioner), else replicated.
fn arg_sharding(attrs: &BTreeMap<String, Attr>) -> Result<Sharding, String> {
    if let Some(Attr::Opaque(text)) = attrs.get("sdy.sharding") {
        return parse_sharding(text);
    }
    if let Some(text) = frontend_attr(attrs, "xla.sdy.sharding") {
        return parse_sharding(&text);
    }
    if attrs.contains_key("mhlo.sharding") && !mhlo_replicated(attrs) {
        return Err(format!("a GSPMD sharding ({:?}): {PARTITIONING}", attrs.get("mhlo.sharding")));
    }
    Ok(Sharding::replicated())
}

fn mhlo_replicated(attrs: &BTreeMap<String, Attr>) -> bool {
    matches!(attrs.get("mhlo.sharding"), Some(Attr::String(s)) if s == "{replicated}")
}

/// Values an op's regions use (from outside, when they are @main's).
fn captured(op: &Op) -> Vec<ValueRef> {
    let mut out = Vec::new();
    for r in &op.regions {
        for b in &r.blocks {
            for inner in &b.ops {
                out.extend(inner.operands.iter().cloned());
                out.extend(captured(inner));
            }
        }
    }
    out
}

fn rename_uses(op: &mut Op, renames: &HashMap<ValueRef, ValueRef>) {
    if renames.is_empty() {
        return;
    }
    for v in &mut op.operands {
        if let Some(to) = renames.get(v) {
            *v = to.clone();
        }
    }
    for r in &mut op.regions {
        rename_region(r, renames);
    }
}

fn rename_region(r: &mut Region, renames: &HashMap<ValueRef, ValueRef>) {
    for b in &mut r.blocks {
        for op in &mut b.ops {
            rename_uses(op, renames);
        }
    }
}
