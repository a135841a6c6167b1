//! How much LLVM optimization a module's code gets: chosen by the kinds of kernels in it, since
//! LLVM's O3 costs most of a small module's compile time and loop kernels need little of it.

use crate::codegen::plan::{KernelJob, LoweringPlan};
use crate::hlo::opcode::Category;
use crate::hlo::{Computation, Instruction, Module, Opcode};

/// How much LLVM optimization a module's code gets (see [`optimization_for`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Optimization {
    /// LLVM's `default<O3>`: generated dots and convolutions, comparator sorts, while loops
    /// and calls, whose code needs inlining, GVN, unswitching and the rest.
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

/// What is known of how a module's dots and convolutions are lowered when its optimization is
/// chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Products {
    /// Lowered, and some product's arithmetic was generated (`Codegen::generated_products`),
    /// or not lowered yet for a target without precompiled products: all count as generated.
    Generated,
    /// Lowered, and every product calls the runtime's precompiled kernels.
    Precompiled,
    /// Not lowered yet, for a target with precompiled products
    /// ([`precompiled_products_expected`]): dots guessed from their sizes and layouts
    /// (`emitters::dot_likely_precompiled`), convolutions counted as generated.
    Expected,
}

impl Products {
    /// As the lowered module `generated` says.
    pub fn lowered(generated: bool) -> Products {
        if generated {
            Products::Generated
        } else {
            Products::Precompiled
        }
    }

    /// Whether `inst` (in `comp`, a fusion's body when `in_fusion`) is a product whose code is
    /// only a call of the runtime's kernels.
    fn precompiled(self, comp: &Computation, inst: &Instruction, in_fusion: bool) -> bool {
        match self {
            Products::Generated => false,
            Products::Precompiled => matches!(inst.opcode, Opcode::Dot | Opcode::Convolution),
            Products::Expected => match inst.opcode {
                Opcode::Dot => crate::codegen::emitters::dot_likely_precompiled(comp, inst, in_fusion),
                // The runtime takes a convolution only in the register tiles it has, which the
                // blocking chooses by shape (lenet's 8 x 1 is generated): counted as generated.
                _ => false,
            },
        }
    }
}

/// The optimization for an LLVM module holding the kernels `jobs` of `plan` (and, with
/// `with_entry`, the sequencing code of every function): loop kernels when every instruction
/// they compute is elementwise, data movement, a generator or a reduction, or a dot or
/// convolution that only calls the runtime's precompiled kernels (`products`), and the
/// sequencing code only calls kernels; full otherwise (generated dots and convolutions,
/// sorts, custom calls, while loops and conditionals run natively in the sequencing code,
/// collectives). A kernel that calls a precompiled GEMM only fills a descriptor, and its
/// epilogue is an elementwise loop: O3 over them cost mlp_train a third of its compile time
/// (with the LLVM modules they were kept in apart from the loop kernels) and changed none of
/// its loops.
pub fn optimization_for(module: &Module, plan: &LoweringPlan, jobs: &[usize], with_entry: bool, products: Products) -> Optimization {
    let lean = |comp: &Computation, i: &Instruction, in_fusion: bool| is_loop_instruction(module, i) || products.precompiled(comp, i, in_fusion);
    let kernel_is_loop = |job: &KernelJob| {
        let comp = module.computation(plan.functions[job.function].comp);
        let inst = comp.get(job.inst);
        match inst.fused_computation() {
            Some(f) => module.computation(f).instructions.iter().all(|i| lean(module.computation(f), i, true)),
            None => lean(comp, inst, false),
        }
    };
    let kernels = jobs.iter().all(|&j| kernel_is_loop(&plan.kernels[j]));
    let entry = !with_entry
        || plan.functions.iter().all(|f| {
            let comp = module.computation(f.comp);
            comp.instructions.iter().all(|i| lean(comp, i, false) || i.opcode == Opcode::Fusion)
        });
    if kernels && entry {
        Optimization::LoopKernels
    } else {
        Optimization::Full
    }
}

/// Whether the dots and convolutions of modules for this target will mostly call the
/// runtime's precompiled kernels (x86-64 with AVX-512, or AVX2 and FMA: see
/// `codegen/emitters/gemm/precompiled.rs`), so that how kernels are grouped into LLVM
/// modules, decided before lowering, can expect the lean pipeline for them
/// ([`Products::Expected`]).
pub fn precompiled_products_expected(machine: &inkwell::targets::TargetMachine, x86_64: bool) -> bool {
    use super::target::{has_feature, simd_bytes};
    x86_64 && (simd_bytes(machine) == 64 || (has_feature(machine, "avx2") && has_feature(machine, "fma")))
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
