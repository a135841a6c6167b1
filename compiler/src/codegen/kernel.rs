//! Kernels: one LLVM function per fusion (or unfused op) that computes its output buffers.
//! A kernel has the signature `void k(ptr table, i64 begin, i64 end)`: it finds its buffers in
//! the caller's buffer table and computes iterations `[begin, end)` of its parallel dimension,
//! so the runtime can split it across threads.

use super::array::IrArray;
use super::context::Codegen;
use super::elemental::{Elemental, Input};
use super::loops::{emit_loop_nest_at_latches, emit_tiled_loop_nest, outer_dimension};
use super::streaming_stores;
use super::transpose_tiling::{transposed_dimensions, TILE};
use super::index::Index;
use crate::error::{Error, Result};
use crate::hlo::{Computation, InstrId, Module, Opcode};
use super::function::KernelInfo;
use super::plan::LoweringPlan;
use crate::passes::buffer_assignment::BufferAssignment;
use hlojit_runtime::Shape;
use inkwell::values::{FunctionValue, IntValue, PointerValue};
use std::collections::HashMap;

/// What the caller needs to know to run a kernel.
pub struct Kernel<'ctx> {
    pub function: FunctionValue<'ctx>,
    /// Iterations of the parallel dimension (1 when the kernel cannot be split).
    pub extent: i64,
    /// Output elements, to decide whether splitting is worth it.
    pub elements: i64,
    /// Whether it writes its output with non-temporal stores (`streaming_stores`).
    pub streamed: bool,
}

/// Everything an op emitter gets: the computation whose root it computes, how the
/// computation's inputs are bound to buffers, the output buffers and the task range.
pub struct KernelContext<'a, 'ctx> {
    pub cg: &'a Codegen<'ctx>,
    pub module: &'a Module,
    /// The fused computation, or the enclosing computation for an unfused op.
    pub comp: &'a Computation,
    pub root: InstrId,
    pub bindings: HashMap<InstrId, Input<'ctx>>,
    pub outputs: Vec<IrArray<'ctx>>,
    pub begin: IntValue<'ctx>,
    pub end: IntValue<'ctx>,
    /// The operand (of the fusion, or of the unfused op) whose buffer is also the output's:
    /// the kernel then updates that buffer in place instead of copying it first.
    pub in_place_operand: Option<usize>,
    /// Elements of work the emitter does (when it differs from the output size, as for a
    /// reduction): decides whether running the kernel in parallel is worth it.
    pub work_elements: std::cell::Cell<Option<i64>>,
    /// Set by emitters that write the output with non-temporal stores (`streaming_stores`).
    pub streamed: std::cell::Cell<bool>,
}

impl<'a, 'ctx> KernelContext<'a, 'ctx> {
    pub fn elemental(&self) -> Elemental<'a, 'ctx> {
        Elemental::with_bindings(self.cg, self.module, self.comp, self.bindings.clone())
    }
}

/// `void k(ptr table, i64 begin, i64 end)`.
pub fn kernel_fn_type<'ctx>(cg: &Codegen<'ctx>) -> inkwell::types::FunctionType<'ctx> {
    cg.fn_type(None, &[cg.ptr().into(), cg.i64().into(), cg.i64().into()])
}

/// Emits the planned kernels `jobs` into `cg`'s module. With `exported`, the kernels are
/// visible to other modules (the sequencing code is compiled separately).
pub fn emit_kernels(cg: &Codegen, module: &Module, plan: &LoweringPlan, jobs: &[usize], exported: bool) -> Result<Vec<(usize, KernelInfo)>> {
    let mut out = Vec::with_capacity(jobs.len());
    for &j in jobs {
        let job = &plan.kernels[j];
        let fp = &plan.functions[job.function];
        let comp = module.computation(fp.comp);
        cg.take_kernel_may_fail();
        let kernel = emit_kernel(cg, module, comp, job.inst, &fp.assignment, &job.name, exported)
            .map_err(|e| e.in_instruction(&comp.name, &comp.get(job.inst).name))?;
        let may_fail = cg.take_kernel_may_fail();
        let inst = comp.get(job.inst);
        let cost = crate::analysis::cost::kernel_cost(module, comp, inst);
        let bytes = super::thread_cost::touched_bytes(comp, inst, &cost);
        let work_ns = super::thread_cost::single_thread_ns(&cost, bytes, kernel.elements);
        out.push((j, KernelInfo { name: job.name.clone(), extent: kernel.extent, elements: kernel.elements, work_ns, may_fail, streamed: kernel.streamed }));
    }
    Ok(out)
}

/// Emits the kernel computing instruction `id` of `comp` into the buffers `assignment` gave.
pub fn emit_kernel<'ctx>(
    cg: &Codegen<'ctx>,
    module: &Module,
    comp: &Computation,
    id: InstrId,
    assignment: &BufferAssignment,
    name: &str,
    exported: bool,
) -> Result<Kernel<'ctx>> {
    let saved = cg.b.get_insert_block();
    let function = cg.add_function(name, kernel_fn_type(cg), exported);
    let entry = cg.llvm.append_basic_block(function, "entry");
    cg.b.position_at_end(entry);
    let table = function.get_nth_param(0).expect("table").into_pointer_value();
    let begin = function.get_nth_param(1).expect("begin").into_int_value();
    let end = function.get_nth_param(2).expect("end").into_int_value();

    let inst = comp.get(id);
    let slot_ptr = |slot: usize| load_slot(cg, table, slot);
    let bind = |operand: InstrId| -> Result<Input<'ctx>> {
        let mut leaves = assignment.leaf_slots(operand).iter().copied();
        input_for_shape(cg, &comp.get(operand).shape, &mut leaves, assignment, &slot_ptr)
    };
    let (body_comp, root, bindings) = match inst.fused_computation() {
        Some(fused) => {
            let fused = module.computation(fused);
            let params = fused.parameters();
            let mut bindings = HashMap::new();
            for (i, &p) in params.iter().enumerate() {
                let operand = *inst.operands.get(i).ok_or_else(|| Error::Internal(format!("{}: missing operand {i}", inst.name)))?;
                bindings.insert(p, bind(operand)?);
            }
            (fused, fused.root, bindings)
        }
        None => {
            let mut bindings = HashMap::new();
            for &operand in &inst.operands {
                bindings.insert(operand, bind(operand)?);
            }
            (comp, id, bindings)
        }
    };
    let outputs = assignment
        .leaf_slots(id)
        .iter()
        .map(|&s| IrArray::new(slot_ptr(s)?, &assignment.slots[s].shape))
        .collect::<Result<Vec<_>>>()?;
    let out_owners: Vec<usize> = assignment.leaf_slots(id).iter().map(|&s| assignment.memory_id(s)).collect();
    let in_place_operand = inst.operands.iter().position(|&o| {
        let owners: Vec<usize> = assignment.leaf_slots(o).iter().map(|&s| assignment.memory_id(s)).collect();
        owners.len() == 1 && out_owners.len() == 1 && owners[0] == out_owners[0]
    });
    let kc = KernelContext { cg, module, comp: body_comp, root, bindings, outputs, begin, end, in_place_operand, work_elements: Default::default(), streamed: Default::default() };
    let extent = emit_root(&kc)?;
    cg.b.build_return(None)?;
    if let Some(bb) = saved {
        cg.b.position_at_end(bb);
    }
    let outputs = inst.shape.array_leaves().iter().map(|a| a.element_count()).sum::<i64>();
    let elements = kc.work_elements.get().unwrap_or(outputs).max(1);
    Ok(Kernel { function, extent, elements, streamed: kc.streamed.get() })
}

/// Emits the computation of the kernel's root by the emitter of its op family (its "hero":
/// the root, or for a multi-output fusion the first non-elemental op among the root tuple's
/// operands); returns the parallel extent.
fn emit_root(kc: &KernelContext) -> Result<i64> {
    let root = kc.comp.get(kc.root);
    let hero = if root.opcode == Opcode::Tuple {
        root.operands.iter().map(|&o| kc.comp.get(o).opcode).find(|&op| !op.is_elemental()).unwrap_or(Opcode::Tuple)
    } else {
        root.opcode
    };
    if let Some(epilogue) = super::emitters::dot_epilogue::epilogue_of(kc) {
        return super::emitters::dot_epilogue::emit(kc, &epilogue);
    }
    if let Some(extent) = super::emitters::softmax_rows::emit(kc)? {
        return Ok(extent);
    }
    if let Some(extent) = super::emitters::layernorm_rows::emit(kc)? {
        return Ok(extent);
    }
    if hero.is_elemental() && !super::emitters::has_root_emitter(hero) {
        return emit_elemental_loop(kc);
    }
    super::emitters::emit(kc, hero)
}

/// The generic loop kernel: walks the output in its physical order and stores the generated
/// element of each output (several for a multi-output fusion whose root is a tuple).
pub(crate) fn emit_elemental_loop<'ctx>(kc: &KernelContext<'_, 'ctx>) -> Result<i64> {
    let cg = kc.cg;
    let root = kc.comp.get(kc.root);
    let values: Vec<InstrId> = if root.opcode == Opcode::Tuple && kc.outputs.len() != 1 {
        root.operands.clone()
    } else {
        vec![kc.root]
    };
    if values.len() != kc.outputs.len() {
        return Err(Error::Internal(format!("{}: {} outputs for {} buffers", root.name, values.len(), kc.outputs.len())));
    }
    let Some(first) = kc.outputs.first() else { return Ok(1) };
    let dims = first.shape.dims.clone();
    let layout = first.shape.layout_or_default();
    let extent = outer_dimension(&dims, &layout).map(|d| dims[d]).unwrap_or(1);
    if let Some(rows) = super::row_loops::plan(kc, &dims, &layout) {
        return super::row_loops::emit(kc, &rows, &dims, &layout);
    }
    let range = Some((kc.begin, kc.end)).filter(|_| !dims.is_empty());
    let transposed = transposed_dimensions(kc, &dims, &layout);
    let streamed = match transposed {
        None if streaming_stores::applies(kc, &kc.outputs) => streaming_stores::span_dimension(&dims, &layout),
        _ => None,
    };
    let latches = match (streamed, transposed) {
        (Some(minor), _) => {
            kc.streamed.set(true);
            streaming_stores::emit_loop(kc, &values, &dims, &layout, minor)?
        }
        (None, Some(pair)) if layout.tiles.is_empty() => emit_tiled_loop_nest(cg, "loop", &dims, &layout, range, pair, TILE, element_body(kc, &values))?,
        (None, _) => {
            let unroll = super::small_loops::unroll_after_vectorizing(cg, &dims);
            if unroll.is_empty() || range.is_none() {
                emit_loop_nest_at_latches(cg, "loop", &dims, &layout, range, element_body(kc, &values))?
            } else {
                // The unrolling needs a constant trip count, which the kernel has when it runs
                // whole (always, for one this small) or once inlined; the general loop stays
                // for a caller that passes a part, and folds away where the range is known.
                let whole = super::small_loops::runs_whole(cg, kc.begin, kc.end, extent)?;
                let straight = cg.block("loop.whole");
                let general = cg.block("loop.part");
                let join = cg.block("loop.done");
                cg.b.build_conditional_branch(whole, straight, general)?;
                cg.b.position_at_end(straight);
                let constant = Some((cg.const_i64(0), cg.const_i64(extent)));
                let unrolled = emit_loop_nest_at_latches(cg, "loop", &dims, &layout, constant, element_body(kc, &values))?;
                super::independent_loops::declare_independent_with(cg, cg.function(), &unrolled, &unroll)?;
                cg.b.build_unconditional_branch(join)?;
                cg.b.position_at_end(general);
                let latches = emit_loop_nest_at_latches(cg, "loop", &dims, &layout, range, element_body(kc, &values))?;
                cg.b.build_unconditional_branch(join)?;
                cg.b.position_at_end(join);
                latches
            }
        }
    };
    // Each iteration writes only its own output elements, and an output shares memory with an
    // input only where that input is read at the element written (buffer assignment's
    // in-place rule), so no iteration depends on another.
    super::independent_loops::declare_independent(cg, cg.function(), &latches)?;
    Ok(extent.max(1))
}

/// The body of the generic loop kernel at one index. Every output's element is computed before
/// any is stored: an output may be written over an input that another output reads at the same
/// element (a loop state updated in place by a multi-output fusion, see buffer assignment's
/// `same_index_only`). Each loop nest gets its own generator: values generated in one nest do
/// not dominate another.
fn element_body<'k, 'a, 'ctx>(kc: &'k KernelContext<'a, 'ctx>, values: &'k [InstrId]) -> impl FnOnce(&Index<'ctx>) -> Result<()> + 'k {
    let mut e = kc.elemental();
    move |index: &Index<'ctx>| {
        let computed: Vec<_> = values.iter().map(|value| e.gen_scalar(*value, index)).collect::<Result<_>>()?;
        for (v, out) in computed.into_iter().zip(&kc.outputs) {
            out.store(kc.cg, index, v)?;
        }
        Ok(())
    }
}

/// The pointer in slot `slot` of a buffer table.
pub fn load_slot<'ctx>(cg: &Codegen<'ctx>, table: PointerValue<'ctx>, slot: usize) -> Result<PointerValue<'ctx>> {
    let p = cg.gep(cg.ptr().into(), table, cg.const_i64(slot as i64))?;
    Ok(cg.b.build_load(cg.ptr(), p, &format!("buf{slot}"))?.into_pointer_value())
}

/// Binds a value of `shape` whose array leaves are the next slots of `leaves`.
fn input_for_shape<'ctx>(
    cg: &Codegen<'ctx>,
    shape: &Shape,
    leaves: &mut impl Iterator<Item = usize>,
    assignment: &BufferAssignment,
    slot_ptr: &impl Fn(usize) -> Result<PointerValue<'ctx>>,
) -> Result<Input<'ctx>> {
    match shape {
        Shape::Array(a) if a.dims.is_empty() && a.element_type.is_int() => {
            // An integer scalar (a loop counter, a dynamic-slice start) is read once at the
            // kernel's entry: read inside the loop nest, LLVM must reload it after every store
            // (it cannot tell the buffers apart), so slices indexed by it had no
            // loop-invariant start and their loops stayed scalar.
            let s = leaves.next().ok_or_else(|| Error::Internal("missing buffer for an operand".into()))?;
            let v = cg.load_element(a.element_type, slot_ptr(s)?)?;
            Ok(Input::Value(crate::codegen::elemental::Val::Scalar(v)))
        }
        Shape::Array(_) => {
            let s = leaves.next().ok_or_else(|| Error::Internal("missing buffer for an operand".into()))?;
            Ok(Input::Array(IrArray::new(slot_ptr(s)?, &assignment.slots[s].shape)?))
        }
        Shape::Tuple(elements) => Ok(Input::Tuple(
            elements.iter().map(|e| input_for_shape(cg, e, leaves, assignment, slot_ptr)).collect::<Result<_>>()?,
        )),
        Shape::Token | Shape::Opaque => Ok(Input::Tuple(Vec::new())),
    }
}
