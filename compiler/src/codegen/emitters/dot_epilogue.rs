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
//! [`epilogue_dot`] again), so a region can be finished alone and written over the dot's
//! values; the loop's other operands never share the output buffer (buffer assignment).

use crate::codegen::array::IrArray;
use crate::codegen::elemental::{Elemental, Input};
use crate::codegen::kernel::KernelContext;
use crate::codegen::loops::{close_loop_at_latch, for_loop, open_loop, set_loop_options};
use crate::error::Result;
use crate::hlo::{Computation, InstrId, Opcode};
use inkwell::values::IntValue;

use super::gemm::operand::GroupMap;

/// The elementwise loop a dot's values go through before they are stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Epilogue {
    /// The dot, read at the index being finished.
    pub dot: InstrId,
    /// The loop's root: the kernel's output.
    pub root: InstrId,
}

/// The dot of a dot epilogue fusion's body, if the kernel is one: a single-array root that is
/// not the dot, one dot in the computation, its dimensions and layout the root's, read only at
/// the root's index through elemental ops.
pub fn epilogue_dot(kc: &KernelContext) -> Option<InstrId> {
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
    let elemental = kc.comp.ids().all(|i| i == dot || kc.comp.get(i).opcode.is_elemental());
    let same_shape = crate::passes::dot_epilogue_fusion::same_array_shape(&kc.comp.get(dot).shape, &root.shape);
    (elemental && same_shape && crate::passes::buffer_assignment::same_logical_index_only(kc.comp, kc.root, &[dot])).then_some(dot)
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

/// Emits the kernel of a dot epilogue fusion whose dot is `dot`.
pub fn emit(kc: &KernelContext, dot: InstrId) -> Result<i64> {
    // The dot's emitters see a kernel rooted at the dot, writing the fusion's output.
    let inner = KernelContext {
        cg: kc.cg,
        module: kc.module,
        comp: kc.comp,
        root: dot,
        bindings: kc.bindings.clone(),
        outputs: kc.outputs.clone(),
        begin: kc.begin,
        end: kc.end,
        in_place_operand: None,
        work_elements: Default::default(),
        // The epilogue finishes each region in cache; the GEMM's stores stay plain.
        streamed: Default::default(),
    };
    super::dot::emit_dot_with_epilogue(&inner, &Epilogue { dot, root: kc.root })
}

impl Epilogue {
    /// The finished element at `index`: the root with the dot read as `value`.
    pub fn finish_value<'ctx>(&self, e: &mut Elemental<'_, 'ctx>, index: &crate::codegen::index::Index<'ctx>, value: inkwell::values::BasicValueEnum<'ctx>) -> Result<inkwell::values::BasicValueEnum<'ctx>> {
        e.bind(self.dot, Input::Value(crate::codegen::elemental::Val::Scalar(value)));
        e.gen_scalar(self.root, index)
    }

    /// Finishes GEMM rows `[r0, r1)` x columns `[c0, c1)` of batch `b` in place in `out`, whose
    /// index of GEMM element `(b, m, n)` `map` gives.
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
