//! What a module lowers to before any LLVM IR exists: one sequenced function per computation
//! that runs as a sequence of steps (the entry, control-flow bodies; a while body in its
//! in-place form), each with its schedule and buffer assignment, and the list of kernels those
//! functions run. Kernels depend only on this plan, so they can be generated (and compiled)
//! independently of each other and of the sequencing code.

use super::function::sanitize;
use crate::error::Result;
use crate::hlo::{CompId, Computation, InstrId, Module, Opcode};
use crate::passes::buffer_assignment::{assign_buffers, bitcast_aliases, BufferAssignment};
use hlojit_runtime::Shape;
use std::collections::HashMap;

/// How the sequencing function carries out one instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing to run: the value is a parameter, a constant or an alias of other buffers.
    None,
    /// A kernel computes it.
    Kernel,
    While,
    Conditional,
    Call,
    /// A call into a custom-call target.
    CustomCall,
    /// A collective (or device id) that runs on the device's own thread.
    Collective,
    /// infeed, outfeed, send, recv: data to or from the host queues or another device.
    Transfer,
}

pub fn step_of(comp: &Computation, id: InstrId) -> Step {
    let inst = comp.get(id);
    use Opcode::*;
    match inst.opcode {
        op if op.is_structural() => Step::None,
        Bitcast if bitcast_aliases(comp, id) => Step::None,
        While => Step::While,
        Conditional => Step::Conditional,
        Call => Step::Call,
        // An uninitialized buffer: buffer assignment gives it memory, nothing writes it.
        CustomCall if crate::analysis::custom_calls::is_allocate_buffer(inst) => Step::None,
        CustomCall if !super::emitters::is_builtin_custom_call(inst) => Step::CustomCall,
        op if super::collectives::is_collective_step(op) => Step::Collective,
        op if super::transfers::is_transfer_step(op) => Step::Transfer,
        _ => Step::Kernel,
    }
}

/// One sequenced function.
pub struct FunctionPlan {
    pub comp: CompId,
    /// Results overwrite the parameters (the form a while body runs in).
    pub in_place: bool,
    pub name: String,
    pub exported: bool,
    pub schedule: Vec<InstrId>,
    pub assignment: BufferAssignment,
    /// The kernel (index into [`LoweringPlan::kernels`]) of each instruction that has one.
    pub kernels: HashMap<InstrId, usize>,
}

/// One kernel to generate.
pub struct KernelJob {
    /// The function plan whose buffers it works on.
    pub function: usize,
    pub inst: InstrId,
    /// Its symbol, unique in the module.
    pub name: String,
}

/// The entry function's exported name, result shape and (result leaf, parameter) aliases.
type EntrySpec<'s> = (&'s str, Shape, Vec<(usize, usize)>);

/// Everything a module lowers to, planned before any LLVM IR is generated.
pub struct LoweringPlan {
    /// Callees before callers; the entry last.
    pub functions: Vec<FunctionPlan>,
    pub kernels: Vec<KernelJob>,
    index: HashMap<(CompId, bool), usize>,
}

impl LoweringPlan {
    /// Plans the entry (exported as `entry_name`) and everything it runs.
    pub fn new(module: &Module, entry_name: &str) -> Result<LoweringPlan> {
        let mut plan = LoweringPlan { functions: Vec::new(), kernels: Vec::new(), index: HashMap::new() };
        let aliases: Vec<(usize, usize)> = module.alias_leaf_pairs().into_iter().map(|(k, j, _)| (k, j)).collect();
        plan.add(module, module.entry, false, Some((entry_name, module.entry_result_shape(), aliases)))?;
        Ok(plan)
    }

    /// The plan of computation `c` in the given form.
    pub fn function(&self, c: CompId, in_place: bool) -> Option<&FunctionPlan> {
        self.index.get(&(c, in_place)).map(|&i| &self.functions[i])
    }

    fn add(
        &mut self,
        module: &Module,
        c: CompId,
        in_place: bool,
        entry: Option<EntrySpec>,
    ) -> Result<usize> {
        if let Some(&i) = self.index.get(&(c, in_place)) {
            return Ok(i);
        }
        let comp = module.computation(c);
        for inst in &comp.instructions {
            match inst.opcode {
                Opcode::While => {
                    if let (Some(cond), Some(body)) = (inst.while_condition(), inst.while_body()) {
                        self.add(module, cond, false, None)?;
                        self.add(module, body, true, None)?;
                    }
                }
                Opcode::Conditional | Opcode::Call => {
                    for &callee in &inst.called {
                        self.add(module, callee, false, None)?;
                    }
                }
                _ => {}
            }
        }
        let (name, exported, result_shape, aliases) = match entry {
            Some((name, shape, aliases)) => (name.to_string(), true, shape, aliases),
            None if in_place => {
                // Result leaf k is parameter leaf k: the body writes the next state over this one.
                let state = comp.parameter_shapes().into_iter().next().unwrap_or_else(|| Shape::Tuple(Vec::new()));
                let leaves = state.array_leaves().len();
                (format!("comp{}.{}.in_place", self.functions.len(), sanitize(&comp.name)), false, state.with_default_layouts(), (0..leaves).map(|k| (k, k)).collect())
            }
            None => (format!("comp{}.{}", self.functions.len(), sanitize(&comp.name)), false, comp.result_shape().clone(), Vec::new()),
        };
        let schedule = comp.post_order();
        let assignment = assign_buffers(module, comp, &schedule, &result_shape, &aliases)?;
        let function = self.functions.len();
        let mut kernels = HashMap::new();
        for &id in &schedule {
            if step_of(comp, id) == Step::Kernel {
                kernels.insert(id, self.kernels.len());
                let name = format!("k{}.{}", self.kernels.len() + 1, sanitize(&comp.get(id).name));
                self.kernels.push(KernelJob { function, inst: id, name });
            }
        }
        self.functions.push(FunctionPlan { comp: c, in_place, name, exported, schedule, assignment, kernels });
        self.index.insert((c, in_place), function);
        Ok(function)
    }
}
