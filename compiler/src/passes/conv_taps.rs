//! Which zeros of a convolution XLA:CPU multiplies by the kernel (`ConvTaps` on each
//! convolution), so that a NaN or infinite weight on padding gives what XLA gives.
//!
//! The operation semantics pad the input with zeros (and fill base-dilation holes with zeros)
//! and multiply every tap, so `0 x NaN = NaN` reaches the output. XLA:CPU (jaxlib 0.10.2,
//! measured, and read in xla/service/cpu and xla/backends/cpu/runtime) does so only where the
//! convolution runs on Eigen's patch extraction + contraction; its elemental loop nest skips
//! taps outside the real input. Which one runs:
//!
//! - Eigen (`PotentiallyImplementedAsEigenConvolution` + `ConvolutionThunk`): F16 or F32 at
//!   emission time, which after `FloatNormalization` (bf16 -> f32, f8 and f4 -> f16) and
//!   `ChangeOpDataType` (f16 -> f32) means every float type of 32 bits or fewer, f64 never;
//!   1 to 3 spatial dimensions; no window reversal; canonical dimension numbers (input
//!   `b0..f`, kernel `0..io`, output `b0..f`), which `ConvCanonicalization` establishes with
//!   transposes but only in the entry computation; and input, kernel and output buffers of at
//!   least 9 bytes as f32 (`minimum_alignment_for_allocation` gives smaller buffers less than
//!   the 16-byte alignment Eigen needs), i.e. at least 3 elements each.
//! - Within Eigen, 1-D and 2-D convolutions with base dilation, unit strides, no window
//!   dilation and one feature group take `EigenTransposedConv2D`: input x kernel products
//!   scattered onto the output, so padding and holes again contribute nothing (unless its
//!   8 GiB scratch matrix would be larger, when it falls back to the generic path).
//! - A while loop that XLA hoists into a "small call" (`SmallWhileLoopHoistingPass`: one
//!   iteration accesses under 1 kB, nothing it cannot run; small_while.rs) is compiled as one
//!   kernel by the legacy emitter, which emits convolutions elementally. Any other loop runs
//!   its body as a thunk sequence, where a convolution takes Eigen as in a conditional branch
//!   (canonical dimension numbers only). (A loop XLA removes, one whose trip count is known to
//!   be 1, counts as its caller (`runs_once`); a convolution of loop-invariant operands that
//!   XLA hoists out of the loop is not modelled.)
//! - A conditional branch is emitted as its own thunk sequence: Eigen when the dimension
//!   numbers are already canonical. A conditional on a constant index is folded into its
//!   caller by XLA, and so is a `call`.
//!
//! Separately, `ConvolutionGroupConverter` expands feature groups of every type but F16/F32
//! into one ungrouped convolution, in one of two ways. With one input feature per group
//! (depthwise) the kernel is broadcast over all input features and masked to zero outside each
//! group's block, so for f64 and complex an infinite or NaN input feature of one group poisons
//! the outputs of every group (`x x 0`). With several input features per group the groups
//! become an extra spatial dimension with base dilation (window size = groups, stride
//! groups - 1, lhs_dilate = groups; XLA's optimized HLO names it `convolution-base-dilated`),
//! whose holes the elemental loop nest skips, so the groups stay apart (fuzz program 6000886).
//! Measured examples are in tests/filetests/conv/xla_taps_*.

use crate::error::Result;
use crate::hlo::{CompId, ConvDimensionNumbers, ConvTaps, InstrId, Instruction, Module, Opcode};
use hlojit_runtime::ElementType;

/// Where a convolution sits, as far as XLA:CPU's choice of implementation goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Home {
    /// The entry computation (or a computation `call`ed from it, which XLA inlines).
    Entry,
    /// A conditional branch, or the body or condition of a while loop too large for XLA's
    /// small-call kernel: a thunk sequence of its own, never canonicalized.
    Branch,
    /// The body or condition of a small while loop: one kernel, elemental convolutions.
    Loop,
}

/// Largest scratch matrix of Eigen's transposed convolution (`kMaxConvMatrixSize`).
const MAX_TRANSPOSED_MATRIX_BYTES: i64 = 8 << 30;

/// XLA:CPU's treatment of `conv`'s padded taps, given its operands' shapes and its home.
pub fn decide(conv: &Instruction, lhs: &[i64], rhs: &[i64], ty: ElementType, home: Home) -> ConvTaps {
    let groups = conv.attrs.feature_group_count.unwrap_or(1);
    let eigen_type = ty.is_float() && ty.byte_size() <= 4;
    let Some(dn) = conv.attrs.conv_dims.as_ref() else { return ConvTaps { multiply_padding: false, cross_group_zeros: false } };
    // Only the depthwise expansion (one input feature per group) multiplies by a zero mask.
    let depthwise = rhs.get(dn.kernel_input_feature as usize) == Some(&1);
    let cross_group_zeros = groups > 1 && depthwise && !eigen_type && (ty.is_float() || ty.is_complex());
    let window = conv.attrs.window_dims();
    let n = dn.input_spatial.len();
    let out = conv.shape.dims();
    let at_least_3 = |d: &[i64]| d.iter().product::<i64>() >= 3;
    let eigen = eigen_type
        && (1..=3).contains(&n)
        && window.len() == n
        && !window.iter().any(|w| w.window_reversal)
        && home != Home::Loop
        && (home == Home::Entry || canonical(dn, n))
        && at_least_3(lhs)
        && at_least_3(rhs)
        && at_least_3(out);
    let transposed = eigen && n <= 2 && transposed_path(conv, dn, lhs, rhs);
    ConvTaps { multiply_padding: eigen && !transposed, cross_group_zeros }
}

/// Whether Eigen's 1-D/2-D convolution takes its transposed-convolution algorithm.
fn transposed_path(conv: &Instruction, dn: &ConvDimensionNumbers, lhs: &[i64], rhs: &[i64]) -> bool {
    let window = conv.attrs.window_dims();
    let plain = window.iter().any(|w| w.base_dilation > 1)
        && window.iter().all(|w| w.stride == 1 && w.window_dilation == 1)
        && conv.attrs.feature_group_count.unwrap_or(1) == 1;
    if !plain {
        return false;
    }
    // batch x input pixels x (kernel taps x output features) f32 values.
    let get = |d: &[i64], i: i64| d.get(i as usize).copied().unwrap_or(0);
    let pixels: i64 = dn.input_spatial.iter().map(|&i| get(lhs, i)).product();
    let taps: i64 = dn.kernel_spatial.iter().map(|&i| get(rhs, i)).product();
    let bytes = get(lhs, dn.input_batch)
        .saturating_mul(pixels)
        .saturating_mul(taps)
        .saturating_mul(get(rhs, dn.kernel_output_feature))
        .saturating_mul(4);
    bytes <= MAX_TRANSPOSED_MATRIX_BYTES
}

/// NHWC input and output, HWIO kernel, spatial dimensions in order.
fn canonical(dn: &ConvDimensionNumbers, n: usize) -> bool {
    let last = n as i64 + 1;
    let in_order = |dims: &[i64], first: i64| dims.iter().enumerate().all(|(i, &d)| d == first + i as i64);
    dn.input_batch == 0
        && dn.input_feature == last
        && in_order(&dn.input_spatial, 1)
        && dn.output_batch == 0
        && dn.output_feature == last
        && in_order(&dn.output_spatial, 1)
        && in_order(&dn.kernel_spatial, 0)
        && dn.kernel_input_feature == n as i64
        && dn.kernel_output_feature == last
}

/// Whether while `id` of `c` counts from 0 to 1 (as `while_dead_init` recognizes counted
/// loops), a loop XLA replaces by its body (measured: an integer power in such a loop of
/// `s32[8]` gives XLA's main-path result, in the same loop run twice the small-call one).
fn runs_once(module: &Module, c: CompId, id: InstrId) -> bool {
    let comp = module.computation(c);
    let inst = comp.get(id);
    let (Some(cond), Some(body), Some(&init)) = (inst.while_condition(), inst.while_body(), inst.operands.first()) else {
        return false;
    };
    let init = comp.get(init);
    init.opcode == Opcode::Tuple
        && super::while_dead_init::counted_loop(comp, init, module.computation(cond), module.computation(body))
            .is_some_and(|(_, trips)| trips == 1)
}

/// Each computation's home, from the entry down (the first home found wins for a computation
/// reached several ways).
pub(crate) fn homes(module: &Module) -> Vec<Option<Home>> {
    let mut home = vec![None; module.computations.len()];
    let mut stack = vec![(module.entry, Home::Entry)];
    while let Some((c, h)) = stack.pop() {
        if home[c.index()].is_some() {
            continue;
        }
        home[c.index()] = Some(h);
        let comp = module.computation(c);
        for id in comp.ids() {
            let inst = comp.get(id);
            // XLA folds a conditional on a constant into its caller.
            let constant_index = inst.operands.first().is_some_and(|&i| comp.get(i).opcode == Opcode::Constant);
            let callee_home = |callee: CompId| -> Home {
                match inst.opcode {
                    // XLA's WhileLoopSimplifier inlines a loop that runs once into its caller.
                    Opcode::While if runs_once(module, c, id) => h,
                    // Inside a small loop everything is one elemental kernel.
                    Opcode::While if h == Home::Loop || super::small_while::is_small(module, c, id) => Home::Loop,
                    Opcode::While => Home::Branch,
                    Opcode::Conditional if h == Home::Entry && !constant_index && inst.branch_computations().contains(&callee) => {
                        Home::Branch
                    }
                    _ => h,
                }
            };
            for &callee in &inst.called {
                stack.push((callee, callee_home(callee)));
            }
        }
    }
    home
}

/// Records the decision on every convolution; returns whether any was recorded.
pub fn run(module: &mut Module) -> Result<bool> {
    let home = homes(module);
    let mut changed = false;
    for c in module.comp_ids().collect::<Vec<_>>() {
        let h = home[c.index()].unwrap_or(Home::Entry);
        let comp = module.computation_mut(c);
        for id in comp.ids().collect::<Vec<_>>() {
            let inst = comp.get(id);
            if inst.opcode != Opcode::Convolution || inst.attrs.conv_taps.is_some() || inst.operands.len() != 2 {
                continue;
            }
            let lhs = comp.get(inst.operands[0]).shape.clone();
            let rhs = comp.get(inst.operands[1]).shape.clone();
            let Some(ty) = lhs.element_type() else { continue };
            let taps = decide(inst, lhs.dims(), rhs.dims(), ty, h);
            comp.get_mut(id).attrs.conv_taps = Some(taps);
            changed = true;
        }
    }
    Ok(changed)
}

/// Decides each convolution's padded-tap semantics before calls are inlined.
pub struct ConvTapsPass;

impl super::pass::Pass for ConvTapsPass {
    fn name(&self) -> &'static str {
        "conv-taps"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        run(module)
    }
}
