//! Kernels of dot epilogue fusions (`passes/dot_epilogue_fusion.rs`): a fused computation whose
//! root is an elementwise loop over the result of the one dot inside it. The dot is computed
//! into the output buffer and the loop is applied to each finished region of it in place:
//!
//! - on the precompiled GEMM, by a generated region function the runtime calls after a region's
//!   last k block, while the region is still in cache (`GemmF32::epilogue`);
//! - on the generated GEMM, by the same region code after each work unit (its rows, all
//!   columns), or on each finished row of a staged result;
//! - on the plain loop nest, on each element's sum before it is stored.
//!
//! Every element of the root reads the dot at its own index only (the pass checks it, and
//! [`epilogue_of`] again), so a region can be finished alone and written over the dot's
//! values; the loop's other operands never share the output buffer (buffer assignment).
//!
//! A row loop (a softmax over the product's columns, `passes/dot_row_epilogue_fusion.rs`)
//! reads the dot anywhere in the row of the element it computes: its regions are whole rows
//! (the runtime's GEMM is told so and never splits a row among units), each row copied to a
//! stack buffer first and then finished as the row kernel would (`codegen::row_loops`): row
//! values, scratch values, elements.

use crate::analysis::row_values::{rows_reading_within, RowValues};
use crate::codegen::array::IrArray;
use crate::codegen::context::Codegen;
use crate::codegen::elemental::{Elemental, Input};
use crate::codegen::kernel::KernelContext;
use crate::codegen::loops::{close_loop_at_latch, for_loop, open_loop, set_loop_options, Nest};
use crate::codegen::row_loops;
use crate::error::{Error, Result};
use crate::hlo::{Computation, InstrId, Opcode};
use hlojit_runtime::{ArrayShape, Layout};
use inkwell::values::{InstructionValue, IntValue, PointerValue};

use super::gemm::dims::DotDims;
use super::gemm::operand::GroupMap;

/// The loop a dot's values go through before they are stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Epilogue {
    /// The dot, read at the index being finished (or, with `rows`, anywhere in its row).
    pub dot: InstrId,
    /// The loop's root: the kernel's output.
    pub root: InstrId,
    /// For a loop that reads whole rows of the dot: the values it computes once per row. Its
    /// regions are then whole rows.
    pub rows: Option<RowValues>,
}

/// Bytes of the row buffers a whole-row epilogue keeps on the stack (the dot's row and each
/// scratch value's): it runs on the runtime's threads, whose stacks are 2 MiB.
const MAX_ROW_BUFFER_BYTES: i64 = 128 * 1024;

/// The row values of a loop (`comp`, rooted at an array of the dot's dimensions and layout)
/// that can finish whole rows of a product with `d`'s dimensions in place of `input` (the dot,
/// or the parameter standing for it): the loop reads `input` only inside the row it computes,
/// its rows are the product's batch and row dimensions, it computes nothing but elemental ops
/// and reductions, its row buffers fit [`MAX_ROW_BUFFER_BYTES`], and the product runs on the
/// GEMM engine (whose regions can be whole rows; the strip kernel's are strips of columns).
pub fn row_epilogue(comp: &Computation, input: InstrId, d: &DotDims) -> Option<RowValues> {
    if !super::gemm::dot::on_gemm_engine(d) || d.m <= super::dot_strips::MAX_ROWS {
        return None;
    }
    let (_, _, columns) = d.out_groups();
    let rows = rows_reading_within(comp, input, &columns)?;
    let computable = comp.ids().all(|i| {
        let op = comp.get(i).opcode;
        i == input || op.is_elemental() || op == Opcode::Reduce
    });
    let row_bytes = |id: InstrId| comp.get(id).shape.element_type().map_or(0, |t| t.byte_size() as i64).saturating_mul(d.n);
    let bytes = rows.scratch.iter().fold(row_bytes(input), |sum, &(id, _)| sum.saturating_add(row_bytes(id)));
    (computable && bytes <= MAX_ROW_BUFFER_BYTES).then_some(rows)
}

/// The epilogue of a dot epilogue fusion's body, if the kernel is one: a single-array root that
/// is not the dot, one dot in the computation, its dimensions and layout the root's, read only
/// at the root's index through elemental ops, or only inside its row by a row loop
/// ([`row_epilogue`]).
pub fn epilogue_of(kc: &KernelContext) -> Option<Epilogue> {
    let root = kc.comp.get(kc.root);
    if root.opcode == Opcode::Dot || !root.shape.is_array() || kc.outputs.len() != 1 {
        return None;
    }
    let mut dots = kc.comp.ids().filter(|&i| kc.comp.get(i).opcode == Opcode::Dot);
    let (Some(dot), None) = (dots.next(), dots.next()) else { return None };
    // An unfused op's kernel sees its whole enclosing computation, where a dot it reads is an
    // input in memory (bound), not a dot of this kernel.
    if kc.bindings.contains_key(&dot) {
        return None;
    }
    // Nor is a dot beside it that it does not read (fuzz program 10000921: `negate(a)` next to
    // `dot(a, b)` in the entry took the dot for its own and read `b`, which it does not bind).
    if !reads(kc.comp, kc.root, dot) {
        return None;
    }
    if !crate::passes::dot_epilogue_fusion::same_array_shape(&kc.comp.get(dot).shape, &root.shape) {
        return None;
    }
    let elemental = kc.comp.ids().all(|i| i == dot || kc.comp.get(i).opcode.is_elemental());
    if elemental && crate::passes::buffer_assignment::same_logical_index_only(kc.comp, kc.root, &[dot]) {
        return Some(Epilogue { dot, root: kc.root, rows: None });
    }
    let d = dot_dims(kc.comp, dot)?;
    let rows = row_epilogue(kc.comp, dot, &d)?;
    Some(Epilogue { dot, root: kc.root, rows: Some(rows) })
}

/// The dimension groups of `dot` in `comp`.
pub fn dot_dims(comp: &Computation, dot: InstrId) -> Option<DotDims> {
    let inst = comp.get(dot);
    let [lhs, rhs] = inst.operands[..] else { return None };
    DotDims::new(inst.attrs.dot_dimension_numbers(), comp.get(lhs).shape.dims(), comp.get(rhs).shape.dims()).ok()
}

/// Whether `target` is among the values `id` is computed from.
fn reads(comp: &Computation, id: InstrId, target: InstrId) -> bool {
    let mut stack = vec![id];
    let mut seen = std::collections::HashSet::new();
    while let Some(i) = stack.pop() {
        if i == target {
            return true;
        }
        if seen.insert(i) {
            stack.extend(comp.get(i).operands.iter().copied());
        }
    }
    false
}

/// Emits the kernel of a dot epilogue fusion.
pub fn emit(kc: &KernelContext, epilogue: &Epilogue) -> Result<i64> {
    // The dot's emitters see a kernel rooted at the dot, writing the fusion's output.
    let inner = KernelContext {
        cg: kc.cg,
        module: kc.module,
        comp: kc.comp,
        root: epilogue.dot,
        bindings: kc.bindings.clone(),
        outputs: kc.outputs.clone(),
        begin: kc.begin,
        end: kc.end,
        in_place_operand: None,
        work_elements: Default::default(),
        // The epilogue finishes each region in cache; the GEMM's stores stay plain.
        streamed: Default::default(),
    };
    super::dot::emit_dot_with_epilogue(&inner, epilogue)
}

impl Epilogue {
    /// The finished element at `index`: the root with the dot read as `value`.
    pub fn finish_value<'ctx>(&self, e: &mut Elemental<'_, 'ctx>, index: &crate::codegen::index::Index<'ctx>, value: inkwell::values::BasicValueEnum<'ctx>) -> Result<inkwell::values::BasicValueEnum<'ctx>> {
        e.bind(self.dot, Input::Value(crate::codegen::elemental::Val::Scalar(value)));
        e.gen_scalar(self.root, index)
    }

    /// Finishes GEMM rows `[r0, r1)` x columns `[c0, c1)` of batch `b` in place in `out`, whose
    /// index of GEMM element `(b, m, n)` `map` gives. A whole-row epilogue takes whole rows
    /// only: its callers pass all columns.
    #[allow(clippy::too_many_arguments)]
    pub fn emit_region<'ctx>(
        &self,
        e: &mut Elemental<'_, 'ctx>,
        out: &IrArray<'ctx>,
        map: &GroupMap,
        b: IntValue<'ctx>,
        r0: IntValue<'ctx>,
        r1: IntValue<'ctx>,
        c0: IntValue<'ctx>,
        c1: IntValue<'ctx>,
    ) -> Result<()> {
        if let Some(rows) = &self.rows {
            return self.emit_rows(rows, e, out, map, b, r0, r1);
        }
        let cg = e.cg;
        e.bind(self.dot, Input::Array(out.clone()));
        for_loop(cg, "epilogue.m", r0, r1, |m| {
            let l = open_loop(cg, "epilogue.n", c0, c1)?;
            e.scoped(|e| {
                let index = map.index(cg, b, m, l.induction)?;
                let v = e.gen_scalar(self.root, &index)?;
                out.store(cg, &index, v)
            })?;
            let latch = close_loop_at_latch(cg, l)?;
            one_vector_per_iteration(cg, latch)
        })
    }

    /// Finishes whole rows `[r0, r1)` of batch `b`: each row of the dot is copied to a stack
    /// buffer (the loop may read any of its elements after others are written) and the row
    /// loop runs on it, storing into `out`.
    #[allow(clippy::too_many_arguments)]
    fn emit_rows<'ctx>(
        &self,
        rows: &RowValues,
        e: &mut Elemental<'_, 'ctx>,
        out: &IrArray<'ctx>,
        map: &GroupMap,
        b: IntValue<'ctx>,
        r0: IntValue<'ctx>,
        r1: IntValue<'ctx>,
    ) -> Result<()> {
        let cg = e.cg;
        let layout = out.shape.layout_or_default();
        let dims = out.shape.dims.clone();
        let element_loops = row_loops::element_loops(cg, &dims, &layout, &rows.row_dims);
        let dot_row = stack_row(cg, &out.shape, &rows.row_dims, &layout, "epilogue.dot.row")?;
        let scratch = rows
            .scratch
            .iter()
            .map(|&(id, before)| {
                let shape = e.comp.get(id).shape.as_array().ok_or_else(|| Error::Internal(format!("row epilogue: {} is not an array", e.comp.get(id).name)))?;
                Ok((id, before, stack_row(cg, shape, &rows.row_dims, &layout, "epilogue.row.scratch")?))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut latches: Vec<InstructionValue<'ctx>> = Vec::new();
        for_loop(cg, "epilogue.row", r0, r1, |m| {
            let row = map.index(cg, b, m, cg.const_i64(0))?;
            let mut copy = Nest::new(row.dims.clone());
            for l in &element_loops {
                copy.enter(cg, &format!("epilogue.copy.d{}", l.dim), Some(l.dim), l.start, l.end)?;
            }
            latches.extend(copy.finish_at_latches(cg, |idx| dot_row.store(cg, idx, out.load(cg, idx)?))?);
            e.scoped(|e| {
                e.bind(self.dot, Input::Array(dot_row.clone()));
                latches.extend(row_loops::emit_row(cg, e, self.root, rows, &row, &element_loops, &scratch, &|idx, v| out.store(cg, idx, v))?);
                Ok(())
            })
        })?;
        crate::codegen::independent_loops::declare_independent(cg, cg.function(), &latches)
    }
}

/// A buffer on the stack for one row of an array of `shape` (see [`row_loops::row_shape`]).
fn stack_row<'ctx>(cg: &Codegen<'ctx>, shape: &ArrayShape, row_dims: &[usize], layout: &Layout, name: &str) -> Result<IrArray<'ctx>> {
    let row = row_loops::row_shape(shape, row_dims, layout);
    let bytes = (row.element_count() * row.element_type.byte_size() as i64).max(1);
    let ptr: PointerValue<'ctx> = cg.entry_alloca(cg.llvm.i8_type().array_type(bytes as u32).into(), name)?;
    // Whole vectors, as the row kernel's heap scratch has.
    if let Some(alloca) = ptr.as_instruction() {
        alloca.set_alignment(64).map_err(|e| Error::Internal(format!("row buffer alignment: {e}")))?;
    }
    IrArray::new(ptr, &row)
}

/// Asks the vectorizer for one vector per iteration of a region row. A region of the
/// precompiled GEMM is one B panel wide (8 or 16 f32 on AVX2): left to its cost model, LLVM
/// interleaved a light epilogue (transformer_block's residual add) four vectors deep, a loop
/// that needs 32 columns, so every column ran through the scalar remainder (perf: `vaddss`,
/// 1.7% of the workload's samples, the dot's others reading memory one element at a time).
fn one_vector_per_iteration<'ctx>(cg: &crate::codegen::context::Codegen<'ctx>, latch: inkwell::values::InstructionValue<'ctx>) -> Result<()> {
    let once = cg.llvm.metadata_node(&[cg.llvm.metadata_string("llvm.loop.interleave.count").into(), cg.const_i32(1).into()]);
    set_loop_options(cg, latch, &[once])
}
