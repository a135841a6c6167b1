//! Inlines every `call` (JAX emits helper computations for jnp functions, and composite calls):
//! the callee's instructions are copied into the caller with parameters replaced by the call's
//! operands. Later passes then see one flat graph to fuse.

use crate::error::{Error, Result};
use crate::hlo::{CompId, InstrId, Module, Opcode};
use std::collections::HashMap;

/// Calls nested deeper than this are taken to be recursion, which HLO forbids.
const MAX_INLINE_DEPTH: usize = 64;

/// Inlines every call of the module; recursive calls (which HLO forbids) are an error.
/// Returns whether there was any call.
pub fn inline_calls(module: &mut Module) -> Result<bool> {
    let mut counter = 0usize;
    for c in module.comp_ids().collect::<Vec<_>>() {
        let mut rounds = 0;
        while let Some(call) = first_call(module, c) {
            rounds += 1;
            if rounds > MAX_INLINE_DEPTH * module.computations.len().max(1) {
                return Err(Error::Unsupported(format!("recursive calls in {}", module.computation(c).name)));
            }
            counter += 1;
            inline_called(module, c, call, &format!("i{counter}"))?;
            module.computation_mut(c).compact();
        }
    }
    Ok(counter > 0)
}

fn first_call(module: &Module, c: CompId) -> Option<InstrId> {
    let comp = module.computation(c);
    comp.ids().find(|&id| comp.get(id).opcode == Opcode::Call && comp.get(id).to_apply().is_some())
}

/// Replaces instruction `id` of computation `c` (a call, or a fusion) by a copy of the
/// computation it calls, parameters bound to its operands; copies get `.{suffix}` names.
pub(crate) fn inline_called(module: &mut Module, c: CompId, id: InstrId, suffix: &str) -> Result<()> {
    let call_inst = module.computation(c).get(id).clone();
    let callee_id = *call_inst.called.first().ok_or_else(|| Error::Internal(format!("{} calls no computation", call_inst.name)))?;
    if callee_id == c {
        return Err(Error::Unsupported(format!("recursive call {}", call_inst.name)));
    }
    let callee = module.computation(callee_id).clone();
    let caller = module.computation_mut(c);
    let mut map: HashMap<InstrId, InstrId> = HashMap::new();
    for callee_instr in callee.post_order() {
        let inst = callee.get(callee_instr);
        if inst.opcode == Opcode::Parameter {
            let n = inst.attrs.parameter_number.unwrap_or(0) as usize;
            let operand = *call_inst
                .operands
                .get(n)
                .ok_or_else(|| Error::Internal(format!("{}: no operand for parameter {n}", call_inst.name)))?;
            map.insert(callee_instr, operand);
            continue;
        }
        let mut copy = inst.clone();
        copy.name = format!("{}.{suffix}", inst.name);
        copy.operands = inst.operands.iter().map(|o| map[o]).collect();
        copy.control_predecessors = inst.control_predecessors.iter().filter_map(|p| map.get(p).copied()).collect();
        let new = caller.add(copy);
        map.insert(callee_instr, new);
    }
    let new_root = map[&callee.root];
    caller.replace_all_uses(id, new_root);
    Ok(())
}

/// Inlines every `call`.
pub struct InlineCalls;

impl super::pass::Pass for InlineCalls {
    fn name(&self) -> &'static str {
        "inline-calls"
    }

    fn run(&self, module: &mut crate::hlo::Module) -> crate::error::Result<bool> {
        inline_calls(module)
    }
}
