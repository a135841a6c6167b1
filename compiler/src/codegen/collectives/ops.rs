//! The data movement of each collective once the group's buffers are known: generated loops
//! that read the peers' operand buffers and write this device's results, in any layout.

use super::groups::{broadcast_sources, permute_sources, DeviceGrid};
use super::Exchange;
use crate::codegen::array::IrArray;
use crate::codegen::context::Codegen;
use crate::codegen::elemental::{Elemental, Input, Val};
use crate::codegen::function::{copy_array, FunctionLowering};
use crate::codegen::index::Index;
use crate::codegen::loops::{emit_loop_nest, for_loop};
use crate::error::{Error, Result};
use crate::hlo::{CompId, Instruction, Module, Opcode};
use hlojit_runtime::ArrayShape;
use inkwell::module::Linkage;
use inkwell::values::{BasicValueEnum, IntValue, PointerValue};
use inkwell::IntPredicate;

pub(crate) struct OpContext<'m, 'ctx> {
    pub module: &'m Module,
    pub inst: &'m Instruction,
    /// The synchronous op it runs as (an async start runs as its op).
    pub kind: Opcode,
    pub grid: DeviceGrid,
    /// The operands' leaf slots, flattened.
    pub operand_slots: Vec<usize>,
    /// The result's leaf slots.
    pub outputs: Vec<usize>,
    pub exchange: Exchange<'ctx>,
    /// Members per group (the same for every group of the ops that need it).
    pub group_size: usize,
}

/// One leaf: the operand's shape (the same on every device), the result buffer.
struct Leaf<'ctx> {
    input: ArrayShape,
    out: IrArray<'ctx>,
}

pub(crate) fn emit<'ctx>(cg: &Codegen<'ctx>, fl: &FunctionLowering<'_, 'ctx>, c: &OpContext<'_, 'ctx>) -> Result<()> {
    let leaf = |l: usize, k: usize| -> Result<Leaf<'ctx>> {
        let s_in = *c.operand_slots.get(l).ok_or_else(|| Error::Internal("collective operand without a buffer".into()))?;
        let s_out = *c.outputs.get(k).ok_or_else(|| Error::Internal("collective result without a buffer".into()))?;
        Ok(Leaf { input: fl.assignment.slots[s_in].shape.clone(), out: IrArray::new(fl.slot_ptrs[s_out], &fl.assignment.slots[s_out].shape)? })
    };
    let inst = c.inst;
    let dimension = || -> Result<usize> {
        match inst.attrs.dimensions.as_deref() {
            Some([d]) if *d >= 0 => Ok(*d as usize),
            _ => Err(Error::Unsupported(format!("{} needs one dimension in dimensions={{..}}", inst.opcode.name()))),
        }
    };
    let reducer = || inst.to_apply().ok_or_else(|| Error::Unsupported(format!("{} without to_apply", inst.opcode.name())));
    match c.kind {
        Opcode::AllReduce => {
            let f = reducer()?;
            for l in 0..c.operand_slots.len() {
                all_reduce(cg, c, &leaf(l, l)?, l, f)?;
            }
            Ok(())
        }
        Opcode::AllGather => {
            let d = dimension()?;
            for l in 0..c.operand_slots.len() {
                all_gather(cg, c, &leaf(l, l)?, l, d)?;
            }
            Ok(())
        }
        Opcode::ReduceScatter => {
            let (d, f) = (dimension()?, reducer()?);
            for l in 0..c.operand_slots.len() {
                reduce_scatter(cg, c, &leaf(l, l)?, l, d, f)?;
            }
            Ok(())
        }
        Opcode::AllToAll if inst.attrs.dimensions.is_some() => {
            let d = dimension()?;
            for l in 0..c.operand_slots.len() {
                all_to_all_split(cg, c, &leaf(l, l)?, l, d)?;
            }
            Ok(())
        }
        Opcode::AllToAll => all_to_all_tuple(cg, fl, c),
        Opcode::CollectivePermute => {
            if inst.attrs.raw("slice_sizes").is_some() || c.operand_slots.len() != c.outputs.len() {
                return Err(Error::Unsupported("collective-permute into slices of an output buffer (slice_sizes)".into()));
            }
            let leaves = (0..c.operand_slots.len()).map(|l| leaf(l, l)).collect::<Result<Vec<_>>>()?;
            let sources = permute_sources(inst, c.grid).map_err(Error::Unsupported)?;
            copy_from_source(cg, c, &leaves, &sources)
        }
        Opcode::CollectiveBroadcast => {
            if c.operand_slots.len() != c.outputs.len() {
                return Err(Error::Internal("collective-broadcast with as many results as operands expected".into()));
            }
            let leaves = (0..c.operand_slots.len()).map(|l| leaf(l, l)).collect::<Result<Vec<_>>>()?;
            let sources = broadcast_sources(inst, c.grid).map_err(Error::Unsupported)?;
            copy_from_source(cg, c, &leaves, &sources)
        }
        op => Err(Error::Internal(format!("{} is not a collective", op.name()))),
    }
}

/// Member `g`'s pointer for leaf `l`.
fn peer<'ctx>(cg: &Codegen<'ctx>, ex: &Exchange<'ctx>, g: IntValue<'ctx>, l: IntValue<'ctx>) -> Result<PointerValue<'ctx>> {
    let i = cg.b.build_int_nsw_mul(g, cg.const_i64(ex.leaves as i64), "")?;
    let i = cg.b.build_int_nsw_add(i, l, "")?;
    let p = cg.gep(cg.ptr().into(), ex.peers, i)?;
    Ok(cg.b.build_load(cg.ptr(), p, "peer")?.into_pointer_value())
}

fn apply<'ctx>(cg: &Codegen<'ctx>, module: &Module, f: CompId, a: BasicValueEnum<'ctx>, b: BasicValueEnum<'ctx>) -> Result<BasicValueEnum<'ctx>> {
    let comp = module.computation(f);
    let mut e = Elemental::new(cg, module, comp, vec![Input::Value(Val::Scalar(a)), Input::Value(Val::Scalar(b))])?;
    e.gen(comp.root, &Index::scalar(cg))?.scalar()
}

/// `index` with `offset` added along dimension `d`.
fn shifted<'ctx>(cg: &Codegen<'ctx>, index: &Index<'ctx>, d: usize, offset: IntValue<'ctx>) -> Result<Index<'ctx>> {
    let mut dims = index.dims.clone();
    dims[d] = cg.b.build_int_nsw_add(dims[d], offset, "")?;
    Ok(Index::new(dims))
}

/// out = member 0's operand, then out = f(out, member g's operand) for g = 1.. in group order.
fn all_reduce<'ctx>(cg: &Codegen<'ctx>, c: &OpContext<'_, 'ctx>, leaf: &Leaf<'ctx>, l: usize, f: CompId) -> Result<()> {
    let ex = &c.exchange;
    let l = cg.const_i64(l as i64);
    let first = IrArray::new(peer(cg, ex, cg.const_i64(0), l)?, &leaf.input)?;
    copy_array(cg, &first, &leaf.out)?;
    let out = &leaf.out;
    for_loop(cg, "allreduce.peer", cg.const_i64(1), ex.size, |g| {
        let src = IrArray::new(peer(cg, ex, g, l)?, &leaf.input)?;
        emit_loop_nest(cg, "allreduce", &out.shape.dims, &out.shape.layout_or_default(), None, |i| {
            let v = apply(cg, c.module, f, out.load(cg, i)?, src.load(cg, i)?)?;
            out.store(cg, i, v)
        })
    })
}

/// Member g's operand goes to [g * n, (g + 1) * n) along dimension `d`.
fn all_gather<'ctx>(cg: &Codegen<'ctx>, c: &OpContext<'_, 'ctx>, leaf: &Leaf<'ctx>, l: usize, d: usize) -> Result<()> {
    let ex = &c.exchange;
    let n = *leaf.input.dims.get(d).ok_or_else(|| Error::Unsupported(format!("all-gather dimension {d} out of range")))?;
    let l = cg.const_i64(l as i64);
    for_loop(cg, "allgather.peer", cg.const_i64(0), ex.size, |g| {
        let src = IrArray::new(peer(cg, ex, g, l)?, &leaf.input)?;
        let offset = cg.b.build_int_nsw_mul(g, cg.const_i64(n), "")?;
        emit_loop_nest(cg, "allgather", &leaf.input.dims, &leaf.input.layout_or_default(), None, |i| {
            let v = src.load(cg, i)?;
            leaf.out.store(cg, &shifted(cg, i, d, offset)?, v)
        })
    })
}

/// This device's shard (its rank along dimension `d`) of the reduction over the group.
fn reduce_scatter<'ctx>(cg: &Codegen<'ctx>, c: &OpContext<'_, 'ctx>, leaf: &Leaf<'ctx>, l: usize, d: usize, f: CompId) -> Result<()> {
    let ex = &c.exchange;
    let out = &leaf.out;
    let n = *out.shape.dims.get(d).ok_or_else(|| Error::Unsupported(format!("reduce-scatter dimension {d} out of range")))?;
    let offset = cg.b.build_int_nsw_mul(ex.rank, cg.const_i64(n), "")?;
    let l = cg.const_i64(l as i64);
    let layout = out.shape.layout_or_default();
    let first = IrArray::new(peer(cg, ex, cg.const_i64(0), l)?, &leaf.input)?;
    emit_loop_nest(cg, "reducescatter.first", &out.shape.dims, &layout, None, |i| {
        let v = first.load(cg, &shifted(cg, i, d, offset)?)?;
        out.store(cg, i, v)
    })?;
    for_loop(cg, "reducescatter.peer", cg.const_i64(1), ex.size, |g| {
        let src = IrArray::new(peer(cg, ex, g, l)?, &leaf.input)?;
        emit_loop_nest(cg, "reducescatter", &out.shape.dims, &layout, None, |i| {
            let v = apply(cg, c.module, f, out.load(cg, i)?, src.load(cg, &shifted(cg, i, d, offset)?)?)?;
            out.store(cg, i, v)
        })
    })
}

/// The operand is split into group-size chunks along `d`; chunk k goes to member k, and the
/// chunk received from member g lands at position g.
fn all_to_all_split<'ctx>(cg: &Codegen<'ctx>, c: &OpContext<'_, 'ctx>, leaf: &Leaf<'ctx>, l: usize, d: usize) -> Result<()> {
    let ex = &c.exchange;
    let total = *leaf.input.dims.get(d).ok_or_else(|| Error::Unsupported(format!("all-to-all dimension {d} out of range")))?;
    let members = c.group_size.max(1) as i64;
    if total % members != 0 {
        return Err(Error::Unsupported(format!("all-to-all splits dimension {d} of size {total} into {members} chunks")));
    }
    let n = total / members;
    let mut chunk = leaf.input.dims.clone();
    chunk[d] = n;
    let from = cg.b.build_int_nsw_mul(ex.rank, cg.const_i64(n), "")?;
    let l = cg.const_i64(l as i64);
    for_loop(cg, "alltoall.peer", cg.const_i64(0), ex.size, |g| {
        let src = IrArray::new(peer(cg, ex, g, l)?, &leaf.input)?;
        let to = cg.b.build_int_nsw_mul(g, cg.const_i64(n), "")?;
        emit_loop_nest(cg, "alltoall", &chunk, &leaf.out.shape.layout_or_default(), None, |i| {
            let v = src.load(cg, &shifted(cg, i, d, from)?)?;
            leaf.out.store(cg, &shifted(cg, i, d, to)?, v)
        })
    })
}

/// Tuple form: operand k goes to member k; result g is what member g sent this device.
fn all_to_all_tuple<'ctx>(cg: &Codegen<'ctx>, fl: &FunctionLowering<'_, 'ctx>, c: &OpContext<'_, 'ctx>) -> Result<()> {
    let ex = &c.exchange;
    let leaves = c.operand_slots.len();
    if c.outputs.len() != leaves || c.group_size != leaves {
        return Err(Error::Unsupported(format!(
            "all-to-all of {leaves} operands into {} results over groups of {}",
            c.outputs.len(),
            c.group_size
        )));
    }
    let input = fl.assignment.slots[c.operand_slots[0]].shape.clone();
    if c.operand_slots.iter().any(|&s| fl.assignment.slots[s].shape != input) {
        return Err(Error::Unsupported("all-to-all operands of different shapes or layouts".into()));
    }
    for (g, &s) in c.outputs.iter().enumerate() {
        let out = IrArray::new(fl.slot_ptrs[s], &fl.assignment.slots[s].shape)?;
        let src = IrArray::new(peer(cg, ex, cg.const_i64(g as i64), ex.rank)?, &input)?;
        copy_array(cg, &src, &out)?;
    }
    Ok(())
}

/// Collective-permute and collective-broadcast: the device's source (`sources`, by global
/// device id, which is its rank in the all-device group) sends its operands (one or several
/// arrays, leaf `l` to result `l`); a device without a source gets zeros.
fn copy_from_source<'ctx>(cg: &Codegen<'ctx>, c: &OpContext<'_, 'ctx>, leaves: &[Leaf<'ctx>], sources: &[Option<usize>]) -> Result<()> {
    let table: Vec<IntValue> = sources.iter().map(|s| cg.i64().const_int(s.map_or(-1i64, |v| v as i64) as u64, true)).collect();
    let init = cg.i64().const_array(&table);
    let global = cg.module.add_global(init.get_type(), None, "collective.sources");
    global.set_initializer(&init);
    global.set_constant(true);
    global.set_linkage(Linkage::Private);
    let ex = &c.exchange;
    let at = cg.gep(cg.i64().into(), global.as_pointer_value(), ex.rank)?;
    let source = cg.b.build_load(cg.i64(), at, "source")?.into_int_value();
    let receives = cg.b.build_int_compare(IntPredicate::SGE, source, cg.const_i64(0), "")?;
    let nothing = cg.b.build_not(receives, "")?;
    cg.if_then("permute.receive", receives, || {
        for (l, leaf) in leaves.iter().enumerate() {
            let src = IrArray::new(peer(cg, ex, source, cg.const_i64(l as i64))?, &leaf.input)?;
            copy_array(cg, &src, &leaf.out)?;
        }
        Ok(())
    })?;
    cg.if_then("permute.zero", nothing, || {
        for leaf in leaves {
            let bytes = leaf.out.byte_size();
            if bytes > 0 {
                cg.b.build_memset(leaf.out.ptr, 1, cg.i8().const_zero(), cg.const_i64(bytes)).map_err(|e| Error::Llvm(e.to_string()))?;
            }
        }
        Ok(())
    })
}
