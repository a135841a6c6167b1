//! The order the spec gives the instructions of one channel: a `send` runs before the
//! `recv-done` of the same channel. Nothing in the data flow says so (a device sends its value
//! and receives another device's on the same channel, independently), and a schedule that
//! put the receive first would leave every device waiting for a value nobody has sent yet. This
//! pass makes each non-host send a control predecessor of the recv-dones of its channel in the
//! same computation, unless the send depends on that recv-done (then the program itself
//! orders them, and the edge would be a cycle).

use crate::error::Result;
use crate::hlo::{Computation, InstrId, Module, Opcode};

fn is_host_transfer(comp: &Computation, id: InstrId) -> bool {
    comp.get(id).attrs.raw("is_host_transfer").is_some_and(|v| v.trim() == "true")
}

/// Whether `from` depends on `to` through operands and control predecessors.
fn depends_on(comp: &Computation, from: InstrId, to: InstrId) -> bool {
    let mut seen = vec![false; comp.instructions.len()];
    let mut stack = vec![from];
    while let Some(id) = stack.pop() {
        if id == to {
            return true;
        }
        if std::mem::replace(&mut seen[id.index()], true) {
            continue;
        }
        let inst = comp.get(id);
        stack.extend(inst.operands.iter().chain(&inst.control_predecessors));
    }
    false
}

pub fn run(module: &mut Module) -> Result<bool> {
    let mut changed = false;
    for c in module.comp_ids().collect::<Vec<_>>() {
        let comp = module.computation_mut(c);
        let ids: Vec<InstrId> = comp.ids().collect();
        let sends: Vec<(InstrId, Option<i64>)> = ids
            .iter()
            .filter(|&&id| comp.get(id).opcode == Opcode::Send && !is_host_transfer(comp, id))
            .map(|&id| (id, comp.get(id).attrs.channel_id))
            .collect();
        if sends.is_empty() {
            continue;
        }
        for &r in &ids {
            if comp.get(r).opcode != Opcode::RecvDone || is_host_transfer(comp, r) {
                continue;
            }
            let channel = comp.get(r).attrs.channel_id.or_else(|| comp.get(comp.get(r).operands[0]).attrs.channel_id);
            for &(s, ch) in &sends {
                if ch != channel || comp.get(r).control_predecessors.contains(&s) || depends_on(comp, s, r) {
                    continue;
                }
                comp.get_mut(r).control_predecessors.push(s);
                changed = true;
            }
        }
    }
    Ok(changed)
}

pub struct ChannelOrder;

impl super::pass::Pass for ChannelOrder {
    fn name(&self) -> &'static str {
        "channel-order"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        run(module)
    }
}
