//! Lowering a computation to an LLVM function that runs its kernels in schedule order:
//! `i32 f(ptr params, ptr results)`, where `params` and `results` are arrays of pointers to
//! the array leaves of the parameters and of the result, each in its declared layout. It
//! returns 0, or the non-zero status of a failed step (a custom call, say).
//!
//! The function allocates one arena for its temporaries, fills a table with the address of
//! every buffer, and hands the table to its kernels. while, conditional and call run the
//! functions of their computations on the same ABI.

use super::array::IrArray;
use super::context::Codegen;
use super::index::Index;
use super::kernel::kernel_fn_type;
use super::plan::{step_of, FunctionPlan, LoweringPlan, Step};
use super::loops::emit_loop_nest;
use crate::codegen::runtime_abi::RuntimeFunction;
use crate::error::{Error, Result};
use crate::hlo::{CompId, Computation, InstrId, Module};
use crate::passes::buffer_assignment::{Allocation, BufferAssignment};
use hlojit_runtime::ArrayShape;
use inkwell::basic_block::BasicBlock;
use inkwell::values::{FunctionValue, IntValue, PointerValue};
use inkwell::IntPredicate;
use std::collections::HashMap;

/// Temporaries of a non-entry function up to this size live on the stack (see `lower`). Nested
/// loops stack one such arena per level; threads that run programs have at least 2 MiB.
const STACK_ARENA_MAX_BYTES: i64 = 64 << 10;
/// The alignment of every buffer, as the runtime's allocator gives it.
const ARENA_ALIGNMENT: u32 = hlojit_runtime::block_cache::BUFFER_ALIGNMENT as u32;

/// What the sequencing code needs to know about a generated kernel.
#[derive(Clone, Debug)]
pub struct KernelInfo {
    pub name: String,
    /// Iterations of its parallel dimension (1 when it cannot be split).
    pub extent: i64,
    /// Elements of work (the output's, or the emitter's own count).
    pub elements: i64,
    /// Its estimated time on one thread (`thread_cost`), to decide whether splitting pays.
    pub work_ns: f64,
    /// Whether it allocates scratch, so that the caller must ask whether that failed.
    pub may_fail: bool,
    /// Whether it writes its output with non-temporal stores (`streaming_stores`).
    pub streamed: bool,
}

impl KernelInfo {
    /// `(extent, min_chunk)` when the sequencing code hands the kernel to the thread pool
    /// (split into chunks of at least `min_chunk` iterations), `None` when it runs on the
    /// calling thread.
    pub fn parallel_split(&self) -> Option<(i64, i64)> {
        super::thread_cost::split(self.extent, self.work_ns)
    }
}

/// Lowers the sequenced functions of a plan whose kernels are already generated (in this
/// LLVM module or in others the JIT links with it).
pub struct ModuleLowering<'a, 'ctx> {
    pub cg: &'a Codegen<'ctx>,
    pub module: &'a Module,
    plan: &'a LoweringPlan,
    kernels: &'a [KernelInfo],
    functions: HashMap<(CompId, bool), FunctionValue<'ctx>>,
}

impl<'a, 'ctx> ModuleLowering<'a, 'ctx> {
    pub fn new(cg: &'a Codegen<'ctx>, module: &'a Module, plan: &'a LoweringPlan, kernels: &'a [KernelInfo]) -> Self {
        ModuleLowering { cg, module, plan, kernels, functions: HashMap::new() }
    }

    /// Lowers every function of the plan, callees first; returns the entry's.
    pub fn lower_all(&mut self) -> Result<FunctionValue<'ctx>> {
        let mut last = None;
        for fp in &self.plan.functions {
            let f = self.lower(fp)?;
            self.functions.insert((fp.comp, fp.in_place), f);
            last = Some(f);
        }
        last.ok_or_else(|| Error::Internal("empty lowering plan".into()))
    }

    /// The function of computation `c` (its in-place form for a while body).
    pub(crate) fn function_for(&self, c: CompId, in_place: bool) -> Result<FunctionValue<'ctx>> {
        self.functions
            .get(&(c, in_place))
            .copied()
            .ok_or_else(|| Error::Internal(format!("computation {} is called before it is lowered", self.module.computation(c).name)))
    }

    fn lower(&mut self, fp: &FunctionPlan) -> Result<FunctionValue<'ctx>> {
        let cg = self.cg;
        let comp = self.module.computation(fp.comp);
        let assignment = &fp.assignment;
        let exported = fp.exported;
        let fn_type = cg.fn_type(Some(cg.i32().into()), &[cg.ptr().into(), cg.ptr().into()]);
        let function = cg.add_function(&fp.name, fn_type, exported);
        let entry = cg.llvm.append_basic_block(function, "entry");
        cg.b.position_at_end(entry);
        let params = function.get_nth_param(0).expect("params").into_pointer_value();
        let results = function.get_nth_param(1).expect("results").into_pointer_value();

        let saved_mxcsr = if exported && cg.x86 { Some(enter_flush_denormals(cg)?) } else { None };
        // The temporaries of a function that runs inside a loop (a while body or condition, a
        // called computation) live on the stack when they are small: LLVM inlines the function
        // into its caller and hoists the allocation out of the loop, so an iteration costs no
        // runtime call. The entry's, and large ones, come from the runtime's allocator.
        let on_stack = !exported && assignment.arena_bytes > 0 && assignment.arena_bytes <= STACK_ARENA_MAX_BYTES;
        let heap_bytes = if on_stack { 0 } else { assignment.arena_bytes };
        let arena_size = cg.const_i64(heap_bytes);
        let arena = if on_stack {
            let bytes = cg.i8().array_type(assignment.arena_bytes as u32);
            let arena = cg.b.build_alloca(bytes, "arena")?;
            arena
                .as_instruction()
                .ok_or_else(|| Error::Internal("an alloca is an instruction".into()))?
                .set_alignment(ARENA_ALIGNMENT)
                .map_err(|e| Error::Llvm(e.to_string()))?;
            arena
        } else if heap_bytes > 0 {
            let alloc = cg.runtime(RuntimeFunction::Alloc)?;
            let arena = cg.call(alloc, &[arena_size.into()])?.into_pointer_value();
            // The runtime recorded why the allocation failed; the caller turns status 1 into
            // an out-of-memory error naming the size.
            let failed = cg.b.build_is_null(arena, "")?;
            let no_memory = cg.llvm.append_basic_block(function, "no_memory");
            let allocated = cg.llvm.append_basic_block(function, "allocated");
            cg.b.build_conditional_branch(failed, no_memory, allocated)?;
            cg.b.position_at_end(no_memory);
            if let Some(saved) = saved_mxcsr {
                leave_flush_denormals(cg, saved)?;
            }
            cg.b.build_return(Some(&cg.i32().const_int(1, false)))?;
            cg.b.position_at_end(allocated);
            arena
        } else {
            cg.ptr().const_null()
        };
        let n = assignment.slots.len().max(1) as u32;
        let table = cg.b.build_array_alloca(cg.ptr(), cg.i32().const_int(n as u64, false), "table")?;
        let mut slot_ptrs: Vec<Option<PointerValue>> = vec![None; assignment.slots.len()];
        for s in 0..assignment.slots.len() {
            let p = self.slot_pointer(comp, assignment, s, params, results, arena, &mut slot_ptrs)?;
            let dst = cg.gep(cg.ptr().into(), table, cg.const_i64(s as i64))?;
            cg.b.build_store(dst, p)?;
        }
        let slot_ptrs: Vec<PointerValue> = slot_ptrs.into_iter().map(|p| p.expect("every slot resolved")).collect();

        // Failure exit: free the arena and return the status.
        let body_bb = cg.b.get_insert_block().expect("positioned");
        let fail = cg.llvm.append_basic_block(function, "fail");
        cg.b.position_at_end(fail);
        let status_phi = cg.b.build_phi(cg.i32(), "status")?;
        self.free(arena, arena_size, heap_bytes)?;
        if let Some(saved) = saved_mxcsr {
            leave_flush_denormals(cg, saved)?;
        }
        cg.b.build_return(Some(&status_phi.as_basic_value()))?;
        cg.b.position_at_end(body_bb);

        let mut fl = FunctionLowering { assignment, table, slot_ptrs, fail, status_phi, cleanups: Vec::new() };
        for &id in &fp.schedule {
            self.lower_instruction(fp, comp, id, &mut fl)?;
        }
        self.copy_results(assignment, &mut fl, results)?;
        self.free(arena, arena_size, heap_bytes)?;
        if let Some(saved) = saved_mxcsr {
            leave_flush_denormals(cg, saved)?;
        }
        cg.b.build_return(Some(&cg.i32().const_zero()))?;
        if fl.status_phi.count_incoming() == 0 {
            // Nothing can fail: drop the unused exit.
            unsafe { fail.delete().map_err(|_| Error::Llvm("could not delete a block".into()))? };
        }
        Ok(function)
    }

    /// Copies the results not computed in place into the caller's buffers. A result whose
    /// buffer is also a parameter another copy still reads (a state swap, say) is staged
    /// through scratch memory first.
    fn copy_results(&self, assignment: &BufferAssignment, fl: &mut FunctionLowering<'_, 'ctx>, results: PointerValue<'ctx>) -> Result<()> {
        let cg = self.cg;
        let slot_ptrs = fl.slot_ptrs.clone();
        let source_param = |s: usize| match assignment.slots[assignment.owner(s)].allocation {
            Allocation::Parameter(j) => Some(j),
            _ => None,
        };
        let read: Vec<usize> = assignment.result_copies.iter().filter_map(|&(_, s)| source_param(s)).collect();
        let hazardous = |k: usize, s: usize| {
            assignment.aliases.get(&k).is_some_and(|j| read.contains(j) && source_param(s) != Some(*j))
        };
        let mut staged = Vec::new();
        let cleanups_before = fl.cleanups.len();
        for &(k, s) in &assignment.result_copies {
            if hazardous(k, s) {
                let src = IrArray::new(slot_ptrs[s], &assignment.slots[s].shape)?;
                let bytes = src.byte_size();
                let scratch = fl.alloc(cg, bytes)?;
                fl.cleanups.push((scratch, bytes));
                let tmp = IrArray::new(scratch, &src.shape)?;
                copy_array(cg, &src, &tmp)?;
                staged.push((k, tmp, bytes));
            }
        }
        for &(k, s) in &assignment.result_copies {
            if !hazardous(k, s) {
                let dst = IrArray::new(load_ptr_at(cg, results, k)?, &assignment.result_shapes[k])?;
                copy_array(cg, &IrArray::new(slot_ptrs[s], &assignment.slots[s].shape)?, &dst)?;
            }
        }
        for (k, tmp, bytes) in staged {
            let dst = IrArray::new(load_ptr_at(cg, results, k)?, &assignment.result_shapes[k])?;
            copy_array(cg, &tmp, &dst)?;
            self.free(tmp.ptr, cg.const_i64(bytes), bytes)?;
        }
        fl.cleanups.truncate(cleanups_before);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn slot_pointer(
        &self,
        comp: &Computation,
        assignment: &BufferAssignment,
        s: usize,
        params: PointerValue<'ctx>,
        results: PointerValue<'ctx>,
        arena: PointerValue<'ctx>,
        resolved: &mut Vec<Option<PointerValue<'ctx>>>,
    ) -> Result<PointerValue<'ctx>> {
        if let Some(p) = resolved[s] {
            return Ok(p);
        }
        let cg = self.cg;
        let p = match &assignment.slots[s].allocation {
            Allocation::Parameter(n) => load_ptr_at(cg, params, *n)?,
            Allocation::Result(n) => load_ptr_at(cg, results, *n)?,
            Allocation::Temp { offset, .. } => cg.byte_offset(arena, *offset)?,
            Allocation::Alias(t) => self.slot_pointer(comp, assignment, *t, params, results, arena, resolved)?,
            Allocation::Constant(id) => {
                let inst = comp.get(*id);
                let literal = inst.array_literal()?;
                let name = format!("const.{}.{}", comp.name, inst.name);
                cg.constant_array(&name, literal, &assignment.slots[s].shape)?
            }
        };
        resolved[s] = Some(p);
        Ok(p)
    }

    fn free(&self, arena: PointerValue<'ctx>, size: IntValue<'ctx>, bytes: i64) -> Result<()> {
        if bytes > 0 {
            let cg = self.cg;
            let free = cg.runtime(RuntimeFunction::Free)?;
            cg.call_void(free, &[arena.into(), size.into()])?;
        }
        Ok(())
    }

    fn lower_instruction(&mut self, fp: &FunctionPlan, comp: &Computation, id: InstrId, fl: &mut FunctionLowering<'_, 'ctx>) -> Result<()> {
        match step_of(comp, id) {
            Step::None => Ok(()),
            Step::While => self.lower_while(comp, id, fl),
            Step::Conditional => self.lower_conditional(comp, id, fl),
            Step::Call => self.lower_call(comp, id, fl),
            Step::CustomCall => self.lower_custom_call(comp, id, fl),
            Step::Collective => self.lower_collective(comp, id, fl),
            Step::Transfer => self.lower_transfer(comp, id, fl),
            Step::Kernel => {
                let job = fp.kernels.get(&id).ok_or_else(|| Error::Internal(format!("no kernel for {}", comp.get(id).name)))?;
                if !self.cg.profile {
                    return self.run_kernel(&self.kernels[*job], fl);
                }
                // A profiling build: the kernel's wall time, parallel or not, by its number.
                let cg = self.cg;
                let start = cg.call(cg.runtime(RuntimeFunction::ProfileNow)?, &[])?;
                self.run_kernel(&self.kernels[*job], fl)?;
                cg.call_void(cg.runtime(RuntimeFunction::ProfileRecord)?, &[cg.const_i64(*job as i64).into(), start.into()])
            }
        }
    }

    /// Calls a kernel over its whole range, on the thread pool when it is big enough.
    fn run_kernel(&self, kernel: &KernelInfo, fl: &mut FunctionLowering<'_, 'ctx>) -> Result<()> {
        let cg = self.cg;
        let table = fl.table;
        let function = cg.external(&kernel.name, kernel_fn_type(cg))?;
        let extent = cg.const_i64(kernel.extent);
        if let Some((_, min_chunk)) = kernel.parallel_split() {
            let pf = cg.runtime(RuntimeFunction::ParallelFor)?;
            let f = function.as_global_value().as_pointer_value();
            cg.call_void(pf, &[f.into(), table.into(), extent.into(), cg.const_i64(min_chunk).into()])?;
        } else {
            cg.call_void(function, &[table.into(), cg.const_i64(0).into(), extent.into()])?;
        }
        if kernel.may_fail {
            let take = cg.runtime(RuntimeFunction::TakeFailure)?;
            let status = cg.call(take, &[])?.into_int_value();
            fl.check(cg, status)?;
        }
        Ok(())
    }

    /// Runs `f(params, results)` and leaves through the failure exit if it fails.
    fn call_computation(
        &self,
        f: FunctionValue<'ctx>,
        params: &[PointerValue<'ctx>],
        results: &[PointerValue<'ctx>],
        fl: &mut FunctionLowering<'_, 'ctx>,
    ) -> Result<()> {
        let cg = self.cg;
        let p = pointer_array(cg, params, "args")?;
        let r = pointer_array(cg, results, "results")?;
        let status = cg.call(f, &[p.into(), r.into()])?.into_int_value();
        fl.check(cg, status)
    }

    fn leaf_ptrs(&self, fl: &FunctionLowering<'_, 'ctx>, id: InstrId) -> Vec<PointerValue<'ctx>> {
        fl.assignment.leaf_slots(id).iter().map(|&s| fl.slot_ptrs[s]).collect()
    }

    fn leaf_shapes(&self, fl: &FunctionLowering<'_, 'ctx>, id: InstrId) -> Vec<ArrayShape> {
        fl.assignment.leaf_slots(id).iter().map(|&s| fl.assignment.slots[s].shape.clone()).collect()
    }

    fn lower_call(&mut self, comp: &Computation, id: InstrId, fl: &mut FunctionLowering<'_, 'ctx>) -> Result<()> {
        let inst = comp.get(id);
        let callee = inst.to_apply().ok_or_else(|| Error::Internal(format!("{}: call without a computation", inst.name)))?;
        let f = self.function_for(callee, false)?;
        let params: Vec<PointerValue> = inst.operands.iter().flat_map(|&o| self.leaf_ptrs(fl, o)).collect();
        let results = self.leaf_ptrs(fl, id);
        self.call_computation(f, &params, &results, fl)
    }

    /// while: the loop state lives in the while's own buffers, which the body updates in
    /// place each iteration; small leaves live in stack slots of the loop instead and are
    /// copied to their buffers when it ends (`while_registers`).
    fn lower_while(&mut self, comp: &Computation, id: InstrId, fl: &mut FunctionLowering<'_, 'ctx>) -> Result<()> {
        let cg = self.cg;
        let inst = comp.get(id);
        let (cond, body) = match (inst.while_condition(), inst.while_body()) {
            (Some(c), Some(b)) => (c, b),
            _ => return Err(Error::Internal(format!("{}: while without condition or body", inst.name))),
        };
        let cond_fn = self.function_for(cond, false)?;
        let body_fn = self.function_for(body, true)?;
        let buffers = self.leaf_ptrs(fl, id);
        let shapes = self.leaf_shapes(fl, id);
        let init = self.leaf_ptrs(fl, inst.operands[0]);
        let init_shapes = self.leaf_shapes(fl, inst.operands[0]);
        let state = super::while_registers::state_slots(cg, &buffers, &shapes)?;
        for i in 0..state.len() {
            copy_array(cg, &IrArray::new(init[i], &init_shapes[i])?, &IrArray::new(state[i], &shapes[i])?)?;
        }
        let pred = cg.entry_alloca(cg.i8().into(), "while.pred")?;
        let header = cg.block("while.header");
        let body_bb = cg.block("while.body");
        let exit = cg.block("while.exit");
        cg.b.build_unconditional_branch(header)?;
        cg.b.position_at_end(header);
        poll_interrupt(cg, fl)?;
        self.call_computation(cond_fn, &state, &[pred], fl)?;
        let p = cg.b.build_load(cg.i8(), pred, "pred")?.into_int_value();
        let go = cg.b.build_int_compare(IntPredicate::NE, p, cg.i8().const_zero(), "")?;
        cg.b.build_conditional_branch(go, body_bb, exit)?;
        cg.b.position_at_end(body_bb);
        self.call_computation(body_fn, &state, &state, fl)?;
        cg.b.build_unconditional_branch(header)?;
        cg.b.position_at_end(exit);
        for i in 0..state.len() {
            copy_array(cg, &IrArray::new(state[i], &shapes[i])?, &IrArray::new(buffers[i], &shapes[i])?)?;
        }
        Ok(())
    }

    /// conditional: runs the selected branch with its operand; a pred selects branch 0 when
    /// true, an index out of range selects the last branch.
    fn lower_conditional(&mut self, comp: &Computation, id: InstrId, fl: &mut FunctionLowering<'_, 'ctx>) -> Result<()> {
        let cg = self.cg;
        let inst = comp.get(id);
        let branches = inst.branch_computations().to_vec();
        let selector = inst.operands[0];
        let sel_slot = fl.assignment.slot_of(selector)?;
        let sel_type = comp.get(selector).shape.element_type().unwrap_or(hlojit_runtime::ElementType::S32);
        let sel_ptr = fl.slot_ptrs[sel_slot];
        let n = branches.len() as i64;
        let index = if sel_type.is_pred() {
            let v = cg.b.build_load(cg.i8(), sel_ptr, "")?.into_int_value();
            let t = cg.b.build_int_compare(IntPredicate::NE, v, cg.i8().const_zero(), "")?;
            cg.b.build_select(t, cg.const_i64(0), cg.const_i64(1), "")?.into_int_value()
        } else {
            let v = cg.load_element(sel_type, sel_ptr)?.into_int_value();
            let v = cg.int_to_i64(sel_type, v)?;
            let lo = cg.b.build_int_compare(IntPredicate::SLT, v, cg.const_i64(0), "")?;
            let hi = cg.b.build_int_compare(IntPredicate::SGE, v, cg.const_i64(n), "")?;
            let out = cg.b.build_or(lo, hi, "")?;
            cg.b.build_select(out, cg.const_i64(n - 1), v, "")?.into_int_value()
        };
        let results = self.leaf_ptrs(fl, id);
        let done = cg.block("cond.done");
        let mut cases: Vec<(IntValue, BasicBlock)> = Vec::new();
        let mut blocks = Vec::new();
        for (i, _) in branches.iter().enumerate() {
            let bb = cg.block(&format!("cond.branch{i}"));
            cases.push((cg.const_i64(i as i64), bb));
            blocks.push(bb);
        }
        let default = *blocks.last().ok_or_else(|| Error::Internal("conditional without branches".into()))?;
        cg.b.build_switch(index, default, &cases)?;
        for (i, &branch) in branches.iter().enumerate() {
            cg.b.position_at_end(blocks[i]);
            let f = self.function_for(branch, false)?;
            let params = self.leaf_ptrs(fl, inst.operands[i + 1]);
            self.call_computation(f, &params, &results, fl)?;
            cg.b.build_unconditional_branch(done)?;
        }
        cg.b.position_at_end(done);
        Ok(())
    }
}

/// Lets a deadline or a cancellation stop a loop (see the runtime's `executor::interrupt`):
/// loads the process-wide interrupt flag and, only when it is set, asks the runtime whether this
/// thread's run must stop, leaving with its status if so. Costs a load and a branch per
/// iteration; the load is volatile so that it stays in the loop.
fn poll_interrupt<'ctx>(cg: &Codegen<'ctx>, fl: &mut FunctionLowering<'_, 'ctx>) -> Result<()> {
    const FLAG: &str = crate::codegen::runtime_abi::INTERRUPT_FLAG;
    let flag = cg.module.get_global(FLAG).unwrap_or_else(|| cg.module.add_global(cg.i32(), None, FLAG));
    let load = cg.b.build_load(cg.i32(), flag.as_pointer_value(), "interrupt")?.into_int_value();
    let instruction = load.as_instruction().ok_or_else(|| Error::Internal("a load is an instruction".into()))?;
    instruction.set_volatile(true).map_err(|e| Error::Llvm(e.to_string()))?;
    let raised = cg.b.build_int_compare(IntPredicate::NE, load, cg.i32().const_zero(), "")?;
    let raised = cg.call_intrinsic("llvm.expect", &[cg.i1().into()], &[raised.into(), cg.i1().const_zero().into()])?;
    let poll = cg.block("interrupt.poll");
    let cont = cg.block("interrupt.none");
    cg.b.build_conditional_branch(raised.into_int_value(), poll, cont)?;
    cg.b.position_at_end(poll);
    let poll_fn = cg.runtime(RuntimeFunction::PollInterrupt)?;
    let status = cg.call(poll_fn, &[])?.into_int_value();
    fl.check(cg, status)?;
    cg.b.build_unconditional_branch(cont)?;
    cg.b.position_at_end(cont);
    Ok(())
}

/// State of the function being lowered.
pub(crate) struct FunctionLowering<'b, 'ctx> {
    pub(crate) assignment: &'b BufferAssignment,
    table: PointerValue<'ctx>,
    pub(crate) slot_ptrs: Vec<PointerValue<'ctx>>,
    fail: BasicBlock<'ctx>,
    status_phi: inkwell::values::PhiValue<'ctx>,
    /// Scratch memory to free if a step fails now.
    pub(crate) cleanups: Vec<(PointerValue<'ctx>, i64)>,
}

impl<'b, 'ctx> FunctionLowering<'b, 'ctx> {
    /// Continues if `status` is 0; otherwise frees pending scratch and leaves with it.
    /// Calls the runtime's allocator for `bytes`; when it returns null, leaves the function
    /// with status 1 (the runtime recorded the failure, and the host reports it as running out of
    /// memory). The caller lists the block in `cleanups` if a later failure must free it.
    pub(crate) fn alloc(&mut self, cg: &Codegen<'ctx>, bytes: i64) -> Result<PointerValue<'ctx>> {
        let alloc = cg.runtime(RuntimeFunction::Alloc)?;
        let p = cg.call(alloc, &[cg.const_i64(bytes).into()])?.into_pointer_value();
        let null = cg.b.build_is_null(p, "")?;
        let status = cg.b.build_int_z_extend(null, cg.i32(), "")?;
        self.check(cg, status)?;
        Ok(p)
    }

    pub(crate) fn check(&mut self, cg: &Codegen<'ctx>, status: IntValue<'ctx>) -> Result<()> {
        let ok = cg.b.build_int_compare(IntPredicate::EQ, status, cg.i32().const_zero(), "")?;
        let cont = cg.block("ok");
        let cleanup = cg.block("failed");
        cg.b.build_conditional_branch(ok, cont, cleanup)?;
        cg.b.position_at_end(cleanup);
        let free = cg.runtime(RuntimeFunction::Free)?;
        for &(p, size) in &self.cleanups {
            cg.call_void(free, &[p.into(), cg.const_i64(size).into()])?;
        }
        cg.b.build_unconditional_branch(self.fail)?;
        self.status_phi.add_incoming(&[(&status, cleanup)]);
        cg.b.position_at_end(cont);
        Ok(())
    }
}

/// Copies an array into another of the same dimensions and element type, converting layouts.
pub fn copy_array<'ctx>(cg: &Codegen<'ctx>, src: &IrArray<'ctx>, dst: &IrArray<'ctx>) -> Result<()> {
    if src.ptr == dst.ptr && src.shape.layout_or_default() == dst.shape.layout_or_default() {
        return Ok(());
    }
    if src.physical == dst.physical {
        let bytes = dst.byte_size();
        if bytes > 0 {
            // Entry parameters and results may be the caller's memory, aligned only to their
            // element type (a borrowed slice, an AOT function's buffers).
            let align = dst.element_type().byte_size().max(1) as u32;
            cg.b.build_memcpy(dst.ptr, align, src.ptr, align, cg.const_i64(bytes)).map_err(|e| Error::Llvm(e.to_string()))?;
        }
        return Ok(());
    }
    let dims = dst.shape.dims.clone();
    let layout = dst.shape.layout_or_default();
    emit_loop_nest(cg, "copy", &dims, &layout, None, |index: &Index<'ctx>| {
        let v = src.load(cg, index)?;
        dst.store(cg, index, v)
    })
}

fn load_ptr_at<'ctx>(cg: &Codegen<'ctx>, array: PointerValue<'ctx>, i: usize) -> Result<PointerValue<'ctx>> {
    let p = cg.gep(cg.ptr().into(), array, cg.const_i64(i as i64))?;
    Ok(cg.b.build_load(cg.ptr(), p, "")?.into_pointer_value())
}

/// A stack array holding `ptrs`.
pub(crate) fn pointer_array<'ctx>(cg: &Codegen<'ctx>, ptrs: &[PointerValue<'ctx>], name: &str) -> Result<PointerValue<'ctx>> {
    let ty = cg.ptr().array_type(ptrs.len().max(1) as u32);
    let a = cg.entry_alloca(ty.into(), name)?;
    for (i, p) in ptrs.iter().enumerate() {
        let dst = cg.gep(cg.ptr().into(), a, cg.const_i64(i as i64))?;
        cg.b.build_store(dst, *p)?;
    }
    Ok(a)
}

/// Sets FTZ/DAZ in MXCSR; returns the slot holding the previous value.
fn enter_flush_denormals<'ctx>(cg: &Codegen<'ctx>) -> Result<PointerValue<'ctx>> {
    let saved = cg.entry_alloca(cg.i32().into(), "mxcsr.saved")?;
    let stmxcsr = cg.intrinsic("llvm.x86.sse.stmxcsr", &[])?;
    let ldmxcsr = cg.intrinsic("llvm.x86.sse.ldmxcsr", &[])?;
    cg.call_void(stmxcsr, &[saved.into()])?;
    let old = cg.b.build_load(cg.i32(), saved, "")?.into_int_value();
    let new = cg.b.build_or(old, cg.i32().const_int(0x8040, false), "")?;
    let tmp = cg.entry_alloca(cg.i32().into(), "mxcsr.new")?;
    cg.b.build_store(tmp, new)?;
    cg.call_void(ldmxcsr, &[tmp.into()])?;
    Ok(saved)
}

fn leave_flush_denormals<'ctx>(cg: &Codegen<'ctx>, saved: PointerValue<'ctx>) -> Result<()> {
    let ldmxcsr = cg.intrinsic("llvm.x86.sse.ldmxcsr", &[])?;
    cg.call_void(ldmxcsr, &[saved.into()])
}


/// A name LLVM symbol tables and object files accept everywhere.
pub fn sanitize(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '.' { c } else { '_' }).collect()
}
