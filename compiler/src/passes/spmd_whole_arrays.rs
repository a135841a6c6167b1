//! Runs a program for several partitions whose values are split across them (JAX's pjit over a
//! mesh, `shard_map`) the simplest correct way: every partition computes the whole program on
//! whole arrays. Work is not divided; the program's inputs and results are.
//!
//! - An entry parameter that arrives in parts (a tiled `sharding`) is gathered into the whole
//!   array first: one `all-gather` across the partitions that hold its tiles (each subgroup of
//!   copies gathers on its own), then a transpose that puts the tiles where the tile
//!   assignment says, and a slice that drops the padding of uneven tiles.
//! - Each result is cut to the part of the result's sharding this partition holds: a
//!   `dynamic-slice` at offsets read from a constant table by `partition-id`.
//! - Manual regions are the same two steps inside the program: `SPMDFullToShardShape` /
//!   `xla.sdy.GlobalToLocalShape` take this partition's part of the whole value, and
//!   `SPMDShardToFullShape` / `xla.sdy.LocalToGlobalShape` gather the parts back. Collectives
//!   in the body keep their groups, since its values are the per-partition ones XLA's
//!   partitioner gives it.
//!
//! The `Sharding` markers left inside are then identities (`sharding_markers`). XLA's own SPMD
//! partitioner falls back to the same replication for what it cannot partition; a real
//! partitioner would improve on this op by op. What this cannot run is refused by name:
//! unreduced values (partial sums), values placed on one partition (`maximal`), results whose
//! sharding XLA's propagation would choose, and partially manual GSPMD regions.

use crate::error::{Error, Result};
use crate::hlo::sharding::{HloSharding, Subgroup, Tiling};
use crate::hlo::shardy::{frontend_attribute, parse_manual_axes, parse_meshes, parse_sharding, parse_sharding_per_value, Mesh};
use crate::hlo::{CompId, InstrId, Instruction, Module, Opcode, PadDim, SliceDim};
use crate::passes::expand_util::Builder;
use hlojit_runtime::{ArrayLiteral, ElementType, Shape};
use std::collections::BTreeMap;

/// Gathers split parameters and cuts results so that each partition runs the whole program.
pub struct SpmdWholeArrays;

impl super::pass::Pass for SpmdWholeArrays {
    fn name(&self) -> &'static str {
        "spmd-whole-arrays"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        run(module)
    }
}

const TO_PART: [&str; 2] = ["SPMDFullToShardShape", "xla.sdy.GlobalToLocalShape"];
const TO_WHOLE: [&str; 2] = ["SPMDShardToFullShape", "xla.sdy.LocalToGlobalShape"];

/// What the pass needs to know about the module.
struct Context {
    partitions: usize,
    replicas: usize,
    meshes: BTreeMap<String, Mesh>,
    next_channel: i64,
}

/// Rewrites a program for several partitions as described in the module docs; returns whether
/// anything changed.
///
/// # Errors
/// An annotation that does not parse, or one this strategy cannot honour, names the
/// instruction.
pub fn run(module: &mut Module) -> Result<bool> {
    let count = |key: &str| module.header_attribute(key).and_then(|v| v.trim().parse::<usize>().ok()).unwrap_or(1).max(1);
    let (partitions, replicas) = (count("num_partitions"), count("replica_count"));
    // A module XLA has scheduled went through its whole pipeline, SPMD partitioning included:
    // its shapes are per partition already.
    let partitioned = module.header_attribute("is_scheduled").is_some_and(|v| v.trim() == "true");
    if partitions <= 1 || partitioned {
        return Ok(false);
    }
    refuse_unsupported(module, partitions)?;
    let meshes = match module.header_attribute("frontend_attributes").and_then(|f| frontend_attribute(f, "xla.sdy.meshes")) {
        Some(text) => parse_meshes(&text).map_err(|e| Error::Unsupported(format!("module {}: {e}", module.name)))?,
        None => BTreeMap::new(),
    };
    let next_channel = module.computations.iter().flat_map(|c| &c.instructions).filter_map(|i| i.attrs.channel_id).max().unwrap_or(0) + 1;
    let mut cx = Context { partitions, replicas, meshes, next_channel };
    if splits_values(module) {
        refuse_propagated_shardings(module)?;
    }
    let mut changed = rewrite_manual_boundaries(module, &mut cx)?;
    // Results before parameters: a result that is a parameter is cut from the gathered whole.
    changed |= cut_results(module, &cx)?;
    changed |= gather_parameters(module, &mut cx)?;
    Ok(changed)
}

/// A tuple shape's elements, or the shape alone.
fn elements_of(shape: &Shape) -> Vec<Shape> {
    match shape {
        Shape::Tuple(elements) => elements.clone(),
        one => vec![one.clone()],
    }
}

fn unsupported(inst: &Instruction, why: impl std::fmt::Display) -> Error {
    Error::Unsupported(format!("{}: {why}", inst.name))
}

/// Refuses values this strategy would compute wrongly: partial sums and values on one
/// partition.
fn refuse_unsupported(module: &Module, partitions: usize) -> Result<()> {
    let why_not = |s: &HloSharding| match s {
        HloSharding::Maximal { .. } => Some("a value placed on one partition (maximal)"),
        HloSharding::Tiled(t) if !t.has_subgroup(Subgroup::Unreduced) => None,
        HloSharding::Unreduced | HloSharding::Tiled(_) => Some("an unreduced value (partial sums on each partition)"),
        _ => None,
    };
    for inst in module.computations.iter().flat_map(|c| &c.instructions) {
        if let Some(text) = inst.attrs.raw("sharding") {
            let sharding = HloSharding::parse(text).map_err(|e| unsupported(inst, e))?;
            if let Some(why) = sharding.elements().iter().find_map(why_not) {
                return Err(unsupported(inst, format!("sharding={text} is {why}, which hlojit does not run on {partitions} partitions")));
            }
        }
        if let Some(f) = inst.attrs.raw("frontend_attributes").filter(|f| f.contains("xla.sdy.")) {
            if f.contains("unreduced={\\\"") {
                return Err(unsupported(inst, format!("{f} has unreduced axes (partial sums on each partition), which hlojit does not run")));
            }
            if f.contains("@maximal_mesh") {
                return Err(unsupported(inst, format!("{f} places a value on one partition, which hlojit does not run")));
            }
        }
    }
    Ok(())
}

/// Whether any value of the module is split: a tiled `sharding` of more than one tile, or a
/// Shardy annotation naming a mesh axis.
fn splits_values(module: &Module) -> bool {
    module.computations.iter().flat_map(|c| &c.instructions).any(|inst| {
        let tiled = inst.attrs.raw("sharding").and_then(|s| HloSharding::parse(s).ok()).is_some_and(|s| {
            s.elements().iter().any(|l| matches!(l, HloSharding::Tiled(t) if t.tile_count() > 1))
        });
        tiled || inst.attrs.raw("frontend_attributes").is_some_and(|f| f.contains("xla.sdy.") && f.contains("{\\\""))
    })
}

/// Refuses entry values whose sharding the header leaves to XLA's sharding propagation
/// (`allow_spmd_sharding_propagation_to_output={true}`): XLA then picks it from the values
/// around it, whatever the annotation says, and hlojit does not propagate shardings.
fn refuse_propagated_shardings(module: &Module) -> Result<()> {
    let entry = module.entry_computation();
    let ranked = |s: &Shape| s.as_array().is_some_and(|a| !a.dims.is_empty());
    let to_parameter = propagation_allowed(module, "allow_spmd_sharding_propagation_to_parameters");
    for (k, id) in entry.parameters().into_iter().enumerate() {
        if to_parameter(k) && ranked(&entry.get(id).shape) {
            return Err(unsupported(entry.get(id), "how this parameter is split is left to XLA's sharding propagation, which hlojit does not do"));
        }
    }
    let root = entry.root_instruction();
    let leaves = elements_of(&root.shape);
    let to_output = propagation_allowed(module, "allow_spmd_sharding_propagation_to_output");
    match (0..leaves.len()).find(|&k| to_output(k) && ranked(&leaves[k])) {
        Some(k) => Err(unsupported(root, format!("how result {k} is split is left to XLA's sharding propagation, which hlojit does not do"))),
        None => Ok(()),
    }
}

/// The tiling of a tiled sharding with more than one tile; `None` for a whole value.
fn tiling_of(inst: &Instruction, sharding: &HloSharding, cx: &Context) -> Result<Option<Tiling>> {
    match sharding {
        HloSharding::Replicated | HloSharding::Manual => Ok(None),
        HloSharding::Tiled(t) if t.devices.len() != cx.partitions => {
            Err(unsupported(inst, format!("its sharding spans {} partitions, the module has {}", t.devices.len(), cx.partitions)))
        }
        HloSharding::Tiled(t) if t.has_subgroup(Subgroup::Manual) => Err(unsupported(inst, "a partially manual value outside a manual region is not supported")),
        HloSharding::Tiled(t) => Ok((t.tile_count() > 1).then(|| t.clone())),
        other => Err(unsupported(inst, format!("sharding {other:?} cannot be gathered"))),
    }
}

/// The sharding an instruction gives its value: `sharding=`, else Shardy's `xla.sdy.sharding`
/// over all of its mesh's axes; `None` when it has neither.
fn declared_sharding(inst: &Instruction, cx: &Context) -> Result<Option<HloSharding>> {
    if let Some(text) = inst.attrs.raw("sharding") {
        return HloSharding::parse(text).map(Some).map_err(|e| unsupported(inst, e));
    }
    let Some(text) = inst.attrs.raw("frontend_attributes").and_then(|f| frontend_attribute(f, "xla.sdy.sharding")) else { return Ok(None) };
    let shardings = if text.starts_with("#sdy.sharding_per_value") { parse_sharding_per_value(&text) } else { parse_sharding(&text).map(|s| vec![s]) }
        .map_err(|e| unsupported(inst, e))?;
    let leaves = shardings.iter().map(|s| named_axes(inst, &s.mesh, &s.dims, None, cx)).collect::<Result<Vec<_>>>()?;
    Ok(Some(match <[HloSharding; 1]>::try_from(leaves) {
        Ok([one]) => one,
        Err(leaves) => HloSharding::Tuple(leaves),
    }))
}

/// Shardy's sharding `dims` over mesh `mesh`, counting only the axes in `only` (the manual
/// ones of a region) when given.
fn named_axes(inst: &Instruction, mesh: &str, dims: &[Vec<String>], only: Option<&[String]>, cx: &Context) -> Result<HloSharding> {
    if dims.iter().all(|d| d.is_empty()) {
        return Ok(HloSharding::Replicated);
    }
    let m = cx.meshes.get(mesh).ok_or_else(|| unsupported(inst, format!("its sharding names mesh @{mesh}, which the module does not define")))?;
    let kept: Vec<Vec<String>> = dims.iter().map(|axes| axes.iter().filter(|a| only.is_none_or(|o| o.contains(a))).cloned().collect()).collect();
    Tiling::from_mesh_axes(&kept, m).map(HloSharding::Tiled).map_err(|e| unsupported(inst, e))
}

/// For each operand of a manual-region boundary, how the whole value is tiled.
fn boundary_shardings(module: &Module, comp: CompId, id: InstrId, cx: &Context) -> Result<Vec<Option<Tiling>>> {
    let c = module.computation(comp);
    let inst = c.get(id);
    let target = inst.attrs.custom_call_target.as_deref().unwrap_or_default();
    if let Some(sdy) = target.strip_prefix("xla.sdy.") {
        let f = inst.attrs.raw("frontend_attributes").unwrap_or_default();
        let key = if sdy == "GlobalToLocalShape" { "xla.sdy.in_shardings" } else { "xla.sdy.out_shardings" };
        let get = |k: &str| frontend_attribute(f, k).ok_or_else(|| unsupported(inst, format!("{target} without {k}")));
        let manual = parse_manual_axes(&get("xla.sdy.manual_axes")?).map_err(|e| unsupported(inst, e))?;
        let shardings = parse_sharding_per_value(&get(key)?).map_err(|e| unsupported(inst, e))?;
        if shardings.len() != inst.operands.len() {
            return Err(unsupported(inst, format!("{} shardings for {} operands", shardings.len(), inst.operands.len())));
        }
        return shardings.iter().map(|s| tiling_of(inst, &named_axes(inst, &s.mesh, &s.dims, Some(&manual), cx)?, cx)).collect();
    }
    // GSPMD: the whole side's sharding is the operand's `Sharding` marker (to a part) or the
    // marker's own (to the whole); the part side must be wholly manual.
    let (whole_side, manual_side) = if TO_PART.contains(&target) { (c.get(inst.operands[0]), inst) } else { (inst, c.get(inst.operands[0])) };
    let manual = manual_side.attrs.raw("sharding").map(HloSharding::parse).transpose().map_err(|e| unsupported(inst, e))?;
    if !matches!(manual, None | Some(HloSharding::Manual)) {
        return Err(unsupported(inst, "a region manual on some partitions' axes only (partially manual) is not supported"));
    }
    let whole = declared_sharding(whole_side, cx)?.ok_or_else(|| unsupported(inst, format!("{target}: the whole value {} has no sharding", whole_side.name)))?;
    Ok(vec![tiling_of(inst, &whole, cx)?])
}

/// Replaces each manual-region boundary by the slice or gather it stands for.
fn rewrite_manual_boundaries(module: &mut Module, cx: &mut Context) -> Result<bool> {
    let mut changed = false;
    for comp in module.comp_ids().collect::<Vec<_>>() {
        let boundaries: Vec<InstrId> = module
            .computation(comp)
            .ids()
            .filter(|&id| {
                let inst = module.computation(comp).get(id);
                inst.opcode == Opcode::CustomCall
                    && inst.attrs.custom_call_target.as_deref().is_some_and(|t| TO_PART.contains(&t) || TO_WHOLE.contains(&t))
            })
            .collect();
        for &id in &boundaries {
            let tilings = boundary_shardings(module, comp, id, cx)?;
            let inst = module.computation(comp).get(id).clone();
            let to_part = TO_PART.contains(&inst.attrs.custom_call_target.as_deref().unwrap_or_default());
            let results = elements_of(&inst.shape);
            if results.len() != inst.operands.len() {
                return Err(unsupported(&inst, format!("{} results for {} operands", results.len(), inst.operands.len())));
            }
            let mut b = Builder::new(module, comp, format!("{}.spmd", inst.name));
            let mut values = Vec::new();
            for ((&operand, tiling), result) in inst.operands.iter().zip(&tilings).zip(&results) {
                let dims = result.as_array().ok_or_else(|| unsupported(&inst, "a boundary of a tuple value"))?.dims.clone();
                values.push(match tiling {
                    None => operand,
                    Some(t) if to_part => part_of_whole(&mut b, operand, t, cx)?,
                    Some(t) => whole_of_parts(&mut b, operand, t, &dims, cx)?,
                });
            }
            let value = if let [one] = values.as_slice() { *one } else { b.tuple(values)? };
            if !b.shape(value).compatible(&inst.shape) {
                return Err(unsupported(&inst, format!("this partition's value is {}, the instruction's shape {}", b.shape(value), inst.shape)));
            }
            let c = module.computation_mut(comp);
            c.replace_all_uses(id, value);
            // Kept alive for the partitioner by its side-effect flag; nothing needs it now.
            c.get_mut(id).attrs.custom_call_has_side_effect = false;
        }
        if !boundaries.is_empty() {
            module.computation_mut(comp).compact();
            changed = true;
        }
    }
    Ok(changed)
}

/// Replaces each split entry parameter by its part, gathered into the whole array.
fn gather_parameters(module: &mut Module, cx: &mut Context) -> Result<bool> {
    let entry = module.entry;
    let mut changed = false;
    for (number, id) in module.entry_computation().parameters().into_iter().enumerate() {
        let inst = module.computation(entry).get(id).clone();
        let Some(sharding) = declared_sharding(&inst, cx)? else { continue };
        let Some(array) = inst.shape.as_array() else {
            for leaf in sharding.leaves(inst.shape.array_leaves().len()).map_err(|e| unsupported(&inst, e))? {
                if tiling_of(&inst, &leaf, cx)?.is_some() {
                    return Err(unsupported(&inst, "a split tuple parameter is not supported"));
                }
            }
            continue;
        };
        let Some(tiling) = tiling_of(&inst, &sharding, cx)? else { continue };
        let whole_dims = array.dims.clone();
        let part_dims = tiling.tile_dims(&whole_dims).map_err(|e| unsupported(&inst, e))?;
        let mut part_shape = array.clone();
        part_shape.dims = part_dims;
        part_shape.dynamic = vec![false; whole_dims.len()];
        let param = module.computation_mut(entry).get_mut(id);
        param.shape = Shape::Array(part_shape.clone());
        // What arrives is this partition's own value now.
        param.attrs.set_raw("sharding", "{manual}");
        if let Some(Shape::Array(a)) = module.entry_layout.as_mut().and_then(|l| l.parameters.get_mut(number)) {
            a.dims = part_shape.dims.clone();
        }
        let users_before = module.computation(entry).instructions.len();
        let mut b = Builder::new(module, entry, format!("{}.spmd", inst.name));
        let whole = whole_of_parts(&mut b, id, &tiling, &whole_dims, cx)?;
        // Every use of the parameter outside the gather now reads the whole array.
        let c = module.computation_mut(entry);
        for user in 0..users_before {
            for op in &mut c.instructions[user].operands {
                if *op == id {
                    *op = whole;
                }
            }
        }
        if c.root == id {
            c.root = whole;
        }
        changed = true;
    }
    Ok(changed)
}

/// Whether a header attribute `allow_..._propagation_...={true,false}` allows it for entry
/// value `k` (one value for all when it lists one).
fn propagation_allowed(module: &Module, key: &str) -> impl Fn(usize) -> bool {
    let flags: Vec<bool> = module
        .header_attribute(key)
        .map(|v| v.trim().trim_matches(|c| c == '{' || c == '}').split(',').map(|f| f.trim() == "true").collect())
        .unwrap_or_default();
    move |k| flags.get(k).or(if flags.len() == 1 { flags.first() } else { None }).copied().unwrap_or(false)
}

/// Cuts each split result leaf to this partition's part.
fn cut_results(module: &mut Module, cx: &Context) -> Result<bool> {
    let entry = module.entry;
    let root = module.entry_computation().root_instruction().clone();
    let leaves = elements_of(&root.shape);
    let Some(sharding) = declared_sharding(&root, cx)? else { return Ok(false) };
    let shardings = sharding.leaves(leaves.len()).map_err(|e| unsupported(&root, e))?;
    let tilings = shardings.iter().map(|s| tiling_of(&root, s, cx)).collect::<Result<Vec<_>>>()?;
    if tilings.iter().all(Option::is_none) {
        return Ok(false);
    }
    let tuple = matches!(root.shape, Shape::Tuple(_));
    let root_id = module.entry_computation().root;
    let mut b = Builder::new(module, entry, format!("{}.spmd", root.name));
    let mut parts = Vec::new();
    for (k, (tiling, shape)) in tilings.iter().zip(&leaves).enumerate() {
        let leaf = if tuple {
            let mut gte = Instruction::new("", Opcode::GetTupleElement, shape.clone(), vec![root_id]);
            gte.attrs.tuple_index = Some(k as i64);
            b.add(gte)?
        } else {
            root_id
        };
        parts.push(match tiling {
            Some(t) => part_of_whole(&mut b, leaf, t, cx)?,
            None => leaf,
        });
    }
    let new_root = if tuple { b.tuple(parts)? } else { parts[0] };
    let result = b.shape(new_root).clone();
    module.computation_mut(entry).root = new_root;
    if let Some(layout) = module.entry_layout.as_mut() {
        layout.result = with_layouts_of(&result, &layout.result);
    }
    Ok(true)
}

/// `shape` (this partition's part) with the layouts of `declared` (the whole's).
fn with_layouts_of(shape: &Shape, declared: &Shape) -> Shape {
    match (shape, declared) {
        (Shape::Array(a), Shape::Array(d)) => Shape::Array(hlojit_runtime::ArrayShape { dims: a.dims.clone(), dynamic: a.dynamic.clone(), ..d.clone() }),
        (Shape::Tuple(a), Shape::Tuple(d)) if a.len() == d.len() => Shape::Tuple(a.iter().zip(d).map(|(a, d)| with_layouts_of(a, d)).collect()),
        _ => shape.clone(),
    }
}

/// The whole array (dimensions `whole_dims`) of which each partition holds the tile `part`.
fn whole_of_parts(b: &mut Builder, part: InstrId, tiling: &Tiling, whole_dims: &[i64], cx: &mut Context) -> Result<InstrId> {
    let t = b.element_type(part)?;
    let tile = tiling.tile_dims(whole_dims).map_err(Error::Unsupported)?;
    if b.dims(part)? != tile {
        return Err(Error::Unsupported(format!("a part of {:?} where the sharding's tiles of {whole_dims:?} are {tile:?}", b.dims(part)?)));
    }
    let rank = tile.len();
    let count = tiling.tile_count();
    let one = b.op(Opcode::Reshape, Shape::array(t, [&[1][..], &tile].concat()), vec![part])?;
    let groups: Vec<Vec<i64>> = (0..cx.replicas as i64)
        .flat_map(|r| tiling.gather_groups().into_iter().map(move |g| g.iter().map(|p| r * tiling.devices.len() as i64 + p).collect()))
        .collect();
    let mut gather = Instruction::new("", Opcode::AllGather, Shape::array(t, [&[count][..], &tile].concat()), vec![one]);
    gather.attrs.dimensions = Some(vec![0]);
    gather.attrs.replica_groups = Some(groups);
    gather.attrs.channel_id = Some(cx.next_channel);
    gather.attrs.use_global_device_ids = true;
    cx.next_channel += 1;
    let tiles = b.add(gather)?;
    let split = b.op(Opcode::Reshape, Shape::array(t, [&tiling.tiles[..], &tile].concat()), vec![tiles])?;
    // [tiles..., tile...] -> [tiles_0, tile_0, tiles_1, tile_1, ...]
    let perm: Vec<i64> = (0..rank as i64).flat_map(|k| [k, rank as i64 + k]).collect();
    let interleaved_dims: Vec<i64> = (0..rank).flat_map(|k| [tiling.tiles[k], tile[k]]).collect();
    let mut transpose = Instruction::new("", Opcode::Transpose, Shape::array(t, interleaved_dims), vec![split]);
    transpose.attrs.dimensions = Some(perm);
    let interleaved = b.add(transpose)?;
    let padded_dims: Vec<i64> = (0..rank).map(|k| tiling.tiles[k] * tile[k]).collect();
    let padded = b.op(Opcode::Reshape, Shape::array(t, padded_dims.clone()), vec![interleaved])?;
    if padded_dims == whole_dims {
        return Ok(padded);
    }
    let mut slice = Instruction::new("", Opcode::Slice, Shape::array(t, whole_dims.to_vec()), vec![padded]);
    slice.attrs.slice = Some(whole_dims.iter().map(|&d| SliceDim { start: 0, limit: d, stride: 1 }).collect());
    b.add(slice)
}

/// The tile of the whole array `whole` this partition holds.
fn part_of_whole(b: &mut Builder, whole: InstrId, tiling: &Tiling, cx: &Context) -> Result<InstrId> {
    let t = b.element_type(whole)?;
    let dims = b.dims(whole)?;
    let tile = tiling.tile_dims(&dims).map_err(Error::Unsupported)?;
    let padded_dims: Vec<i64> = tile.iter().zip(&tiling.tiles).map(|(s, n)| s * n).collect();
    let padded = if padded_dims == dims {
        whole
    } else {
        let zero = b.scalar(t, 0.0)?;
        let mut pad = Instruction::new("", Opcode::Pad, Shape::array(t, padded_dims.clone()), vec![whole, zero]);
        pad.attrs.padding = Some(dims.iter().zip(&padded_dims).map(|(d, p)| PadDim { low: 0, high: p - d, interior: 0 }).collect());
        b.add(pad)?
    };
    let id = b.op(Opcode::PartitionId, Shape::scalar(ElementType::U32), vec![])?;
    let id = b.convert(id, ElementType::S32)?;
    let tiles = tiling.tile_of_each_partition();
    let mut offsets = Vec::new();
    for k in 0..tile.len() {
        if tiling.tiles[k] == 1 {
            offsets.push(b.scalar(ElementType::S32, 0.0)?);
            continue;
        }
        let by_partition: Vec<i32> = tiles.iter().map(|c| (c[k] * tile[k]) as i32).collect();
        let table = ArrayLiteral::from_slice(&[cx.partitions as i64], &by_partition).map_err(|e| Error::Internal(e.to_string()))?;
        let table = b.constant(table)?;
        let mut pick = Instruction::new("", Opcode::DynamicSlice, Shape::array(ElementType::S32, vec![1]), vec![table, id]);
        pick.attrs.slice_sizes = Some(vec![1]);
        let picked = b.add(pick)?;
        offsets.push(b.op(Opcode::Reshape, Shape::scalar(ElementType::S32), vec![picked])?);
    }
    let mut slice = Instruction::new("", Opcode::DynamicSlice, Shape::array(t, tile.clone()), [vec![padded], offsets].concat());
    slice.attrs.slice_sizes = Some(tile);
    b.add(slice)
}

#[cfg(test)]
#[path = "spmd_whole_arrays_tests.rs"]
mod tests;
