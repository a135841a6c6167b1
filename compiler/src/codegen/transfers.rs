//! infeed, outfeed, send, recv (and send-done, recv-done), lowered as steps of the sequencing
//! function: each is one call of the runtime's `hlojit_rt_transfer`, which moves the op's
//! arrays between the program and the executable's host queues or another device of the run.
//!
//! The runtime sees arrays row-major; a buffer in another layout goes through a row-major
//! staging copy. Token operands and results carry no data: the schedule orders these ops by
//! their token dependencies (after-all, add-dependency) like any other operand.
//!
//! A send does its transfer at `send` and a recv at `recv-done` (where the received value
//! is defined); `send-done` and `recv` only hand over their context. Between devices, sends
//! never wait and receives wait for their value, which gives the channel order the spec
//! requires without a handshake.

use super::array::IrArray;
use super::function::{copy_array, pointer_array, FunctionLowering, ModuleLowering};
use crate::codegen::collectives::groups::DeviceGrid;
use crate::codegen::runtime_abi::RuntimeFunction;
use crate::error::{Error, Result};
use crate::hlo::{Computation, InstrId, Instruction, Opcode};
use hlojit_runtime::transfers::entry_points::{element_type_code, TransferKind};
use hlojit_runtime::ArrayShape;
use inkwell::module::Linkage;
use inkwell::values::PointerValue;

/// Whether `op` is lowered here.
pub fn is_transfer_step(op: Opcode) -> bool {
    use Opcode::*;
    matches!(op, Infeed | Outfeed | Send | SendDone | Recv | RecvDone)
}

/// `is_host_transfer=true`.
fn is_host_transfer(inst: &Instruction) -> bool {
    inst.attrs.raw("is_host_transfer").is_some_and(|v| v.trim() == "true")
}

/// The (source, target) device pairs of `frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1},{1,2}}"}`.
fn send_recv_pairs(inst: &Instruction) -> Result<Option<Vec<(i64, i64)>>, String> {
    let Some(attrs) = inst.attrs.raw("frontend_attributes") else { return Ok(None) };
    const KEY: &str = "_xla_send_recv_source_target_pairs";
    let Some(at) = attrs.find(KEY) else { return Ok(None) };
    let rest = &attrs[at + KEY.len()..];
    let rest = rest.trim_start().strip_prefix('=').ok_or("malformed _xla_send_recv_source_target_pairs")?.trim_start();
    let body = match rest.strip_prefix('"') {
        Some(r) => &r[..r.find('"').ok_or("unterminated _xla_send_recv_source_target_pairs")?],
        None => rest,
    };
    let numbers: Vec<i64> = body
        .split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .filter(|t| !t.is_empty())
        .map(|t| t.parse::<i64>().map_err(|_| format!("bad device id '{t}' in _xla_send_recv_source_target_pairs")))
        .collect::<Result<_, _>>()?;
    if numbers.len() % 2 != 0 {
        return Err("_xla_send_recv_source_target_pairs must list pairs".into());
    }
    Ok(Some(numbers.chunks(2).map(|p| (p[0], p[1])).collect()))
}

/// By global device id, where a send goes (`recv`: false) or where a recv's value comes
/// from (`recv`: true); -1 for none.
fn peer_table(pairs: &[(i64, i64)], devices: usize, recv: bool) -> Result<Vec<i64>, String> {
    let mut table = vec![-1i64; devices];
    for &(s, t) in pairs {
        let (at, peer) = if recv { (t, s) } else { (s, t) };
        if s < 0 || t < 0 || s as usize >= devices || t as usize >= devices {
            return Err(format!("send/recv pair {{{s},{t}}} names a device beyond the {devices} there are"));
        }
        if table[at as usize] >= 0 {
            return Err(format!("device {at} is in two send/recv pairs of one channel"));
        }
        table[at as usize] = peer;
    }
    Ok(table)
}

impl<'a, 'ctx> ModuleLowering<'a, 'ctx> {
    /// Lowers transfer op `id` of `comp` at the current position of the sequencing function.
    pub(crate) fn lower_transfer(&mut self, comp: &Computation, id: InstrId, fl: &mut FunctionLowering<'_, 'ctx>) -> Result<()> {
        let inst = comp.get(id);
        let verr = |m: String| Error::verify(&comp.name, &inst.name, m);
        let devices = DeviceGrid::of(self.module).devices();
        // (kind, the instruction whose attributes apply, leaf slots moved)
        let (kind, attrs_of, slots) = match inst.opcode {
            Opcode::Infeed => (TransferKind::Infeed, inst, fl.assignment.leaf_slots(id).to_vec()),
            Opcode::Outfeed => (TransferKind::Outfeed, inst, fl.assignment.leaf_slots(inst.operands[0]).to_vec()),
            Opcode::Send => {
                let kind = if is_host_transfer(inst) { TransferKind::SendToHost } else { TransferKind::SendToDevice };
                (kind, inst, fl.assignment.leaf_slots(inst.operands[0]).to_vec())
            }
            Opcode::RecvDone => {
                let recv = comp.get(inst.operands[0]);
                let host = is_host_transfer(inst) || is_host_transfer(recv);
                let kind = if host { TransferKind::RecvFromHost } else { TransferKind::RecvFromDevice };
                // recv-done's leaves: the value's, then none (the token has no buffer).
                (kind, recv, fl.assignment.leaf_slots(id).to_vec())
            }
            // The context is only ever read by the matching done.
            Opcode::SendDone | Opcode::Recv => return Ok(()),
            op => return Err(Error::Internal(format!("{} is not a transfer", op.name()))),
        };
        let channel = attrs_of.attrs.channel_id.or(inst.attrs.channel_id).unwrap_or(0);
        let peers = match kind {
            TransferKind::SendToDevice | TransferKind::RecvFromDevice => match send_recv_pairs(attrs_of).map_err(verr)? {
                Some(pairs) => Some(peer_table(&pairs, devices, kind == TransferKind::RecvFromDevice).map_err(verr)?),
                None => None,
            },
            _ => None,
        };
        self.call_transfer(fl, inst, kind, channel, peers.as_deref(), &slots)
    }

    fn call_transfer(
        &mut self,
        fl: &mut FunctionLowering<'_, 'ctx>,
        inst: &Instruction,
        kind: TransferKind,
        channel: i64,
        peers: Option<&[i64]>,
        slots: &[usize],
    ) -> Result<()> {
        let cg = self.cg;
        let writes = matches!(kind, TransferKind::Infeed | TransferKind::RecvFromDevice | TransferKind::RecvFromHost);
        let mut table = Vec::new();
        let mut ptrs: Vec<PointerValue<'ctx>> = Vec::new();
        // (slot array, staging array, bytes) of leaves not row-major.
        let mut staged = Vec::new();
        let cleanups_before = fl.cleanups.len();
        for &s in slots {
            let shape = &fl.assignment.slots[s].shape;
            let slot = IrArray::new(fl.slot_ptrs[s], shape)?;
            table.push(element_type_code(shape.element_type));
            table.push(shape.rank() as i64);
            table.extend(&shape.dims);
            if slot.physical.is_row_major_dense() {
                ptrs.push(slot.ptr);
                continue;
            }
            let dense = ArrayShape::new(shape.element_type, shape.dims.clone());
            let bytes = shape.element_count() * shape.element_type.byte_size() as i64;
            let scratch = fl.alloc(cg, bytes)?;
            fl.cleanups.push((scratch, bytes));
            let staging = IrArray::new(scratch, &dense)?;
            if !writes {
                copy_array(cg, &slot, &staging)?;
            }
            ptrs.push(scratch);
            staged.push((slot, staging, bytes));
        }
        let table_ptr = self.i64_table(&format!("transfer.shapes.{}", inst.name), &table);
        let (peers_ptr, devices) = match peers {
            Some(p) => (self.i64_table(&format!("transfer.peers.{}", inst.name), p), p.len()),
            None => (cg.ptr().const_null(), 0),
        };
        let buffers = pointer_array(cg, &ptrs, "transfer.buffers")?;
        let name = self.c_string(&format!("transfer.name.{}", inst.name), &inst.name);
        let f = cg.runtime(RuntimeFunction::Transfer)?;
        let args = [
            cg.const_i32(kind as i32).into(),
            cg.const_i64(channel).into(),
            peers_ptr.into(),
            cg.const_i64(devices as i64).into(),
            table_ptr.into(),
            cg.const_i64(table.len() as i64).into(),
            cg.const_i64(slots.len() as i64).into(),
            buffers.into(),
            name.into(),
        ];
        let status = cg.call(f, &args)?.into_int_value();
        fl.check(cg, status)?;
        let free = cg.runtime(RuntimeFunction::Free)?;
        for (slot, staging, bytes) in staged {
            if writes {
                copy_array(cg, &staging, &slot)?;
            }
            cg.call_void(free, &[staging.ptr.into(), cg.const_i64(bytes).into()])?;
        }
        fl.cleanups.truncate(cleanups_before);
        Ok(())
    }

    /// A private constant `i64` array.
    fn i64_table(&self, name: &str, values: &[i64]) -> PointerValue<'ctx> {
        let cg = self.cg;
        if let Some(g) = cg.module.get_global(name) {
            return g.as_pointer_value();
        }
        let items: Vec<_> = values.iter().map(|&v| cg.i64().const_int(v as u64, true)).collect();
        let init = cg.i64().const_array(&items);
        let g = cg.module.add_global(init.get_type(), None, name);
        g.set_initializer(&init);
        g.set_constant(true);
        g.set_linkage(Linkage::Private);
        g.as_pointer_value()
    }

    /// A private NUL-terminated string.
    fn c_string(&self, name: &str, text: &str) -> PointerValue<'ctx> {
        let cg = self.cg;
        if let Some(g) = cg.module.get_global(name) {
            return g.as_pointer_value();
        }
        let init = cg.llvm.const_string(text.as_bytes(), true);
        let g = cg.module.add_global(init.get_type(), None, name);
        g.set_initializer(&init);
        g.set_constant(true);
        g.set_linkage(Linkage::Private);
        g.as_pointer_value()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_come_from_the_frontend_attribute() {
        let mut i = Instruction::new("send", Opcode::Send, hlojit_runtime::Shape::Token, vec![]);
        assert_eq!(send_recv_pairs(&i).unwrap(), None);
        i.attrs.set_raw("frontend_attributes", "{_xla_send_recv_source_target_pairs=\"{{0,1},{1,2}}\"}");
        assert_eq!(send_recv_pairs(&i).unwrap(), Some(vec![(0, 1), (1, 2)]));
        assert_eq!(peer_table(&[(0, 1), (1, 2)], 3, false).unwrap(), vec![1, 2, -1]);
        assert_eq!(peer_table(&[(0, 1), (1, 2)], 3, true).unwrap(), vec![-1, 0, 1]);
        assert!(peer_table(&[(0, 5)], 3, true).is_err());
    }
}
