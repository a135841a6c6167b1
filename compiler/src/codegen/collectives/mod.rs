//! Collective ops (all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute,
//! collective-broadcast)
//! and the device ids (replica-id, partition-id), lowered as steps of the sequencing function
//! that runs on the device's own thread.
//!
//! A collective publishes this device's operand buffers through the runtime's rendezvous
//! (`hlojit_rt_collective_enter`), which returns the buffers of every member of its group;
//! generated code then reads the peers' buffers directly and writes this device's results,
//! and `hlojit_rt_collective_leave` waits until no member reads this device's buffers any
//! more. Groups are computed here, at compile time, for every device of the module's
//! `replica_count` × `num_partitions` (see [`groups`]).

mod builtin;
pub mod groups;
mod ops;

use super::array::IrArray;
use super::function::{copy_array, pointer_array, FunctionLowering, ModuleLowering};
use crate::codegen::runtime_abi::RuntimeFunction;
use crate::error::{Error, Result};
use crate::hlo::{Computation, InstrId, Instruction, Opcode};
use groups::{participants, DeviceGrid};
use hlojit_runtime::collectives::entry_points::REDUCE_BY_EXCHANGE;
use hlojit_runtime::collectives::BuiltinReduction;
use hlojit_runtime::physical::PhysicalLayout;
use inkwell::basic_block::BasicBlock;
use inkwell::module::Linkage;
use inkwell::values::{IntValue, PointerValue};
use inkwell::IntPredicate;

/// Whether `op` is lowered here.
pub fn is_collective_step(op: Opcode) -> bool {
    use Opcode::*;
    matches!(op, AllReduce | AllGather | ReduceScatter | AllToAll | CollectivePermute | CollectiveBroadcast | ReplicaId | PartitionId)
        || matches!(op, AllReduceStart | AllGatherStart | CollectivePermuteStart)
        || matches!(op, AllReduceDone | AllGatherDone | CollectivePermuteDone)
}

/// The synchronous collective an async start runs as, and where in the start's result
/// leaves that collective's results go: (kind, first leaf, leaf count).
fn synchronous_form(op: Opcode, operand_leaves: usize, result_leaves: usize) -> (Opcode, usize, usize) {
    match op {
        // (operands, results): the results are the second half.
        Opcode::AllGatherStart => (Opcode::AllGather, operand_leaves, result_leaves - operand_leaves.min(result_leaves)),
        // (operands, results, u32[], u32[]): one result per operand leaf.
        Opcode::CollectivePermuteStart => (Opcode::CollectivePermute, operand_leaves, operand_leaves),
        Opcode::AllReduceStart => (Opcode::AllReduce, 0, result_leaves),
        op => (op, 0, result_leaves),
    }
}

/// What `hlojit_rt_collective_enter` returned: every member's operand pointers (member `g`'s
/// leaf `l` at `g * leaves + l`), this device's position in its group and the group's size.
pub(crate) struct Exchange<'ctx> {
    pub peers: PointerValue<'ctx>,
    pub leaves: usize,
    pub rank: IntValue<'ctx>,
    pub size: IntValue<'ctx>,
}

impl<'a, 'ctx> ModuleLowering<'a, 'ctx> {
    /// Lowers collective `id` of `comp` at the current position of the sequencing function.
    pub(crate) fn lower_collective(&mut self, comp: &Computation, id: InstrId, fl: &mut FunctionLowering<'_, 'ctx>) -> Result<()> {
        let cg = self.cg;
        let inst = comp.get(id);
        let verr = |m: String| Error::verify(&comp.name, &inst.name, m);
        let grid = DeviceGrid::of(self.module);
        let outputs: Vec<usize> = fl.assignment.leaf_slots(id).to_vec();
        match inst.opcode {
            Opcode::ReplicaId | Opcode::PartitionId => {
                let which = if inst.opcode == Opcode::ReplicaId { RuntimeFunction::ReplicaId } else { RuntimeFunction::PartitionId };
                let f = cg.runtime(which)?;
                let v = cg.call(f, &[])?;
                let out = *outputs.first().ok_or_else(|| Error::Internal(format!("{}: no buffer", inst.name)))?;
                cg.b.build_store(fl.slot_ptrs[out], v)?;
                Ok(())
            }
            Opcode::AllReduceDone | Opcode::AllGatherDone | Opcode::CollectivePermuteDone => {
                // The start did the work (synchronously): hand over its results.
                let start = fl.assignment.leaf_slots(inst.operands[0]).to_vec();
                let first = match inst.opcode {
                    // After the operands' leaves, one per result.
                    Opcode::CollectivePermuteDone => outputs.len(),
                    _ => start.len().saturating_sub(outputs.len()),
                };
                for (k, &out) in outputs.iter().enumerate() {
                    let src = *start.get(first + k).ok_or_else(|| verr("the done's start has too few results".into()))?;
                    let src = IrArray::new(fl.slot_ptrs[src], &fl.assignment.slots[src].shape)?;
                    copy_array(cg, &src, &IrArray::new(fl.slot_ptrs[out], &fl.assignment.slots[out].shape)?)?;
                }
                Ok(())
            }
            _ => {
                let operand_slots: Vec<usize> = inst.operands.iter().flat_map(|&o| fl.assignment.leaf_slots(o).to_vec()).collect();
                let (kind, first, count) = synchronous_form(inst.opcode, operand_slots.len(), outputs.len());
                let outputs = outputs.get(first..first + count).ok_or_else(|| verr("unexpected result shape".into()))?.to_vec();
                let members = if matches!(kind, Opcode::CollectivePermute | Opcode::CollectiveBroadcast) {
                    // Every device meets every other; each then picks its source (a device
                    // may have none, and sources need not be grouped).
                    vec![(0..grid.devices()).collect(); grid.devices()]
                } else {
                    participants(inst, grid).map_err(verr)?
                };
                let op_uid = op_uid(&comp.name, &inst.name);
                let native = match kind {
                    Opcode::AllReduce => self.builtin_reduction(fl, inst, &operand_slots, &outputs),
                    _ => None,
                };
                // With a built-in reduction the exchange below runs only when the communicator
                // has no native one; both paths meet at `done`.
                let done = match native {
                    Some(reduction) => Some(self.offer_builtin(fl, op_uid, &members, &operand_slots, &outputs, reduction)?),
                    None => None,
                };
                let exchange = self.enter(fl, op_uid, &members, &operand_slots)?;
                let group_size = members.first().map_or(1, Vec::len);
                let ctx = ops::OpContext { module: self.module, inst, kind, grid, operand_slots, outputs, exchange, group_size };
                ops::emit(cg, fl, &ctx).map_err(|e| match e {
                    Error::Unsupported(m) => verr(m),
                    e => e,
                })?;
                let leave = cg.runtime(RuntimeFunction::CollectiveLeave)?;
                let status = cg.call(leave, &[])?.into_int_value();
                fl.check(cg, status)?;
                if let Some(done) = done {
                    cg.b.build_unconditional_branch(done)?;
                    cg.b.position_at_end(done);
                }
                Ok(())
            }
        }
    }

    /// The built-in reduction of an all-reduce whose every leaf reduces its operand buffer
    /// element by element into a result buffer of the same physical layout; `None` otherwise.
    fn builtin_reduction(&self, fl: &FunctionLowering<'_, 'ctx>, inst: &Instruction, operand_slots: &[usize], outputs: &[usize]) -> Option<BuiltinReduction> {
        let shape = |s: usize| &fl.assignment.slots[s].shape;
        let element = shape(*outputs.first()?).element_type;
        let same = operand_slots.len() == outputs.len()
            && operand_slots.iter().zip(outputs).all(|(&i, &o)| {
                let (a, b) = (shape(i), shape(o));
                a.dims == b.dims
                    && a.element_type == element
                    && b.element_type == element
                    && PhysicalLayout::new(a).ok().zip(PhysicalLayout::new(b).ok()).is_some_and(|(x, y)| x == y)
            });
        if !same {
            return None;
        }
        builtin::recognise(self.module, inst.to_apply()?, element)
    }

    /// Offers the all-reduce to the communicator's built-in `reduction`. Leaves the builder
    /// where the exchange fallback goes and returns the block both paths continue in.
    fn offer_builtin(
        &self,
        fl: &mut FunctionLowering<'_, 'ctx>,
        op: i64,
        members: &[Vec<usize>],
        operand_slots: &[usize],
        outputs: &[usize],
        reduction: BuiltinReduction,
    ) -> Result<BasicBlock<'ctx>> {
        let cg = self.cg;
        let (table, stride) = self.groups_table(op, members);
        let inputs: Vec<PointerValue> = operand_slots.iter().map(|&s| fl.slot_ptrs[s]).collect();
        let inputs = pointer_array(cg, &inputs, "allreduce.inputs")?;
        let results: Vec<PointerValue> = outputs.iter().map(|&s| fl.slot_ptrs[s]).collect();
        let results = pointer_array(cg, &results, "allreduce.outputs")?;
        let sizes = cg.entry_alloca(cg.i64().array_type(outputs.len().max(1) as u32).into(), "allreduce.sizes")?;
        for (l, &s) in outputs.iter().enumerate() {
            let bytes = IrArray::new(fl.slot_ptrs[s], &fl.assignment.slots[s].shape)?.byte_size();
            let at = cg.gep(cg.i64().into(), sizes, cg.const_i64(l as i64))?;
            cg.b.build_store(at, cg.const_i64(bytes))?;
        }
        let f = cg.runtime(RuntimeFunction::CollectiveReduceBuiltin)?;
        let args = [
            cg.const_i64(op).into(),
            cg.const_i64(members.len() as i64).into(),
            table.into(),
            cg.const_i64(stride as i64).into(),
            cg.const_i64(outputs.len() as i64).into(),
            inputs.into(),
            results.into(),
            sizes.into(),
            cg.i32().const_int(reduction.op as u64, false).into(),
            cg.i32().const_int(reduction.element as u64, false).into(),
        ];
        let status = cg.call(f, &args)?.into_int_value();
        let by_exchange = cg.b.build_int_compare(IntPredicate::EQ, status, cg.i32().const_int(REDUCE_BY_EXCHANGE as u64, false), "")?;
        let exchange = cg.block("allreduce.exchange");
        let native = cg.block("allreduce.native");
        let done = cg.block("allreduce.done");
        cg.b.build_conditional_branch(by_exchange, exchange, native)?;
        cg.b.position_at_end(native);
        fl.check(cg, status)?;
        cg.b.build_unconditional_branch(done)?;
        cg.b.position_at_end(exchange);
        Ok(done)
    }

    /// The constant table of every device's group (`[size, members..]` rows) and its stride.
    fn groups_table(&self, op: i64, members: &[Vec<usize>]) -> (PointerValue<'ctx>, usize) {
        let cg = self.cg;
        let max_group = members.iter().map(Vec::len).max().unwrap_or(1).max(1);
        let stride = max_group + 1;
        let mut table = Vec::with_capacity(members.len() * stride);
        for row in members {
            table.push(cg.i64().const_int(row.len() as u64, false));
            table.extend(row.iter().map(|&m| cg.i64().const_int(m as u64, false)));
            table.extend(std::iter::repeat_n(cg.i64().const_zero(), stride - 1 - row.len()));
        }
        let init = cg.i64().const_array(&table);
        let name = format!("collective.groups.{op:x}");
        let global = match cg.module.get_global(&name) {
            Some(g) => g,
            None => {
                let g = cg.module.add_global(init.get_type(), None, &name);
                g.set_initializer(&init);
                g.set_constant(true);
                g.set_linkage(Linkage::Private);
                g
            }
        };
        (global.as_pointer_value(), stride)
    }

    /// Publishes this device's operand leaves and receives its group's.
    fn enter(&self, fl: &mut FunctionLowering<'_, 'ctx>, op: i64, members: &[Vec<usize>], operand_slots: &[usize]) -> Result<Exchange<'ctx>> {
        let cg = self.cg;
        let devices = members.len();
        let max_group = members.iter().map(Vec::len).max().unwrap_or(1).max(1);
        let (table, stride) = self.groups_table(op, members);
        let leaves = operand_slots.len();
        let mine: Vec<PointerValue> = operand_slots.iter().map(|&s| fl.slot_ptrs[s]).collect();
        let mine = pointer_array(cg, &mine, "collective.mine")?;
        // Byte sizes, for implementations that copy buffers between processes.
        let sizes = cg.entry_alloca(cg.i64().array_type(leaves.max(1) as u32).into(), "collective.sizes")?;
        for (l, &s) in operand_slots.iter().enumerate() {
            let bytes = IrArray::new(fl.slot_ptrs[s], &fl.assignment.slots[s].shape)?.byte_size();
            let at = cg.gep(cg.i64().into(), sizes, cg.const_i64(l as i64))?;
            cg.b.build_store(at, cg.const_i64(bytes))?;
        }
        let peers = cg.entry_alloca(cg.ptr().array_type((max_group * leaves).max(1) as u32).into(), "collective.peers")?;
        let rank = cg.entry_alloca(cg.i64().into(), "collective.rank")?;
        let size = cg.entry_alloca(cg.i64().into(), "collective.size")?;
        let enter = cg.runtime(RuntimeFunction::CollectiveEnter)?;
        let args = [
            cg.const_i64(op).into(),
            cg.const_i64(devices as i64).into(),
            table.into(),
            cg.const_i64(stride as i64).into(),
            cg.const_i64(leaves as i64).into(),
            mine.into(),
            sizes.into(),
            peers.into(),
            rank.into(),
            size.into(),
        ];
        let status = cg.call(enter, &args)?.into_int_value();
        fl.check(cg, status)?;
        let rank = cg.b.build_load(cg.i64(), rank, "rank")?.into_int_value();
        let size = cg.b.build_load(cg.i64(), size, "size")?.into_int_value();
        Ok(Exchange { peers, leaves, rank, size })
    }
}

/// An id for a collective op that every device computes alike (FNV-1a of its names).
fn op_uid(comp: &str, inst: &str) -> i64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in comp.bytes().chain([0u8]).chain(inst.bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    (h >> 1) as i64
}
