//! How much LLVM optimization a module's code gets: chosen by the kinds of kernels in it, since
//! LLVM's O3 costs most of a small module's compile time and loop kernels need little of it.

use crate::codegen::plan::{KernelJob, LoweringPlan};
use crate::hlo::opcode::Category;
use crate::hlo::{Module, Opcode};

/// How much LLVM optimization a module's code gets (see [`optimization_for`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Optimization {
    /// LLVM's `default<O3>`: dots, convolutions, comparator sorts, while loops and calls,
    /// whose code needs inlining, GVN, unswitching and the rest.
    Full,
    /// Loop kernels only (elementwise, data movement, reductions, sorts by a key): their IR is loop nests over
    /// buffers with accumulators in allocas, and all they need is promotion to registers,
    /// loop canonicalization for the vectorizer, the vectorizer and a cleanup. O3 runs some
    /// eighty passes, several of them many times, over such code; this runs each once or twice
    /// (measured: about half of O3's optimization time on the softmax, layernorm and reduce
    /// workloads, with the same vector loops in the optimized IR).
    LoopKernels,
}

impl Optimization {
    /// The pass pipeline, in `opt -passes=` syntax.
    pub fn passes(self) -> &'static str {
        match self {
            Optimization::Full => "default<O3>",
            // No inliner: loop kernels call only runtime functions and the workers the thread
            // pool runs.
            // InstCombine as the default pipelines run it: without `no-verify-fixpoint`, LLVM
            // aborts the process when one round leaves more to combine.
            Optimization::LoopKernels => concat!(
                "function(sroa,early-cse,simplifycfg,instcombine<no-verify-fixpoint>,",
                // Reassociate orders the operands of commutative operations by rank, as O3 (and so
                // XLA:CPU) does; which product of `a * b + c * d` is the first operand decides which
                // one the backend fuses into an FMA, so without it results differ in the last bit
                // (jnp.linspace's `start * (1 - t) + stop * t`, floored to an integer, by one).
                "reassociate,",
                // Rotated loops with hoisted invariants and canonical induction variables are
                // what the vectorizer accepts.
                "loop-mssa(loop-rotate,licm),loop(indvars),",
                "loop-vectorize,instcombine<no-verify-fixpoint>,simplifycfg)"
            ),
        }
    }

    /// How dumps and file tests name it (module metadata `!hlojit.optimization`).
    pub fn name(self) -> &'static str {
        match self {
            Optimization::Full => "full",
            Optimization::LoopKernels => "loop kernels",
        }
    }
}

/// The optimization for an LLVM module holding the kernels `jobs` of `plan` (and, with
/// `with_entry`, the sequencing code of every function): loop kernels when every instruction
/// they compute is elementwise, data movement, a generator or a reduction, and the sequencing
/// code only calls kernels; full otherwise (dots, convolutions, sorts, custom calls, while
/// loops and conditionals run natively in the sequencing code, collectives).
pub fn optimization_for(module: &Module, plan: &LoweringPlan, jobs: &[usize], with_entry: bool) -> Optimization {
    let kernel_is_loop = |job: &KernelJob| {
        let inst = module.computation(plan.functions[job.function].comp).get(job.inst);
        match inst.fused_computation() {
            Some(f) => module.computation(f).instructions.iter().all(|i| is_loop_instruction(module, i)),
            None => is_loop_instruction(module, inst),
        }
    };
    let kernels = jobs.iter().all(|&j| kernel_is_loop(&plan.kernels[j]));
    let entry = !with_entry
        || plan.functions.iter().all(|f| {
            module.computation(f.comp).instructions.iter().all(|i| is_loop_instruction(module, i) || i.opcode == Opcode::Fusion)
        });
    if kernels && entry {
        Optimization::LoopKernels
    } else {
        Optimization::Full
    }
}

/// Instructions whose code is loop nests over elements and calls of runtime functions: the
/// loop ops below, and a stable sort whose comparator is a key order (`codegen::sort_key`):
/// its kernel is a loop computing keys, the runtime's radix sort and a loop gathering the
/// outputs, with nothing to inline (measured on sort_1m: the key and gather loops come out
/// vectorized the same, and O3's pipeline cost twice the lean one's optimization time).
/// A sort with any other comparator calls the comparator per comparison, from the runtime's
/// merge sort, so it keeps the full pipeline.
fn is_loop_instruction(module: &Module, inst: &crate::hlo::Instruction) -> bool {
    match inst.opcode {
        Opcode::Sort => {
            inst.attrs.is_stable
                && inst.to_apply().is_some_and(|c| crate::codegen::emitters::sort_order_is_key(module, c, inst.operands.len()))
        }
        op => is_loop_op(op),
    }
}

/// Ops whose code is a loop nest over elements (a reduction's scalar reducer is emitted
/// inline). `map` calls a computation, so it is not one of them.
fn is_loop_op(op: Opcode) -> bool {
    let category = op.info().category;
    op != Opcode::Map
        && matches!(category, Category::Elementwise | Category::DataMovement | Category::Generator | Category::Reduction | Category::Structural)
}
