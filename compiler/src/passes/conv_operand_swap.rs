//! XLA's convolution operand swap (`SwapConvOperands` of its algebraic simplifier, now
//! `ConvOperandSwapper`): a convolution whose kernel covers more spatial positions than its
//! input becomes the convolution of the (reversed) kernel by the input.
//!
//! It is done here because it changes results: the swapped convolution is window-reversed,
//! and XLA:CPU never runs a reversed window on Eigen, so its padded taps are skipped rather than
//! multiplied (an infinite kernel over padding gives -inf, not `0 x -inf = NaN`; fuzz program
//! 8000390, measured through jaxlib: XLA's optimized HLO holds the swapped convolution), and
//! its sums run in the swapped order. Only the sizes decide, so it applies in every
//! computation, before `conv_taps` classifies the result.
//!
//! The rule, per spatial dimension: a dimension that is a feature-group dimension (window size
//! = base dilation = stride + 1, no padding, reversal or window dilation) or a pure contraction
//! (window as large as the input, nothing else set) stays as it is. Every other dimension
//! counts: the kernel's product multiplies in the window size, the swapped product the input
//! size (or the window size for a 1-element input padded by size - 1 on both sides with unit
//! stride and dilation). When the kernel's product is larger, each counted dimension gets a
//! window of the input's size, reversed (the kernel is reversed where the window was not),
//! base and window dilation exchanged, the same stride, and padding
//! `dilated input + old padding - dilated kernel` on each side; batch and output feature
//! exchange roles. Grouped convolutions are never swapped.

use super::fused_body::unique_name;
use crate::error::Result;
use crate::hlo::{Computation, ConvDimensionNumbers, InstrId, Instruction, Module, Opcode, WindowDim};
use std::collections::HashSet;

/// Swaps `id`'s operands if XLA would; returns whether it did.
fn swap(comp: &mut Computation, id: InstrId) -> bool {
    let inst = comp.get(id);
    let groups = inst.attrs.feature_group_count.unwrap_or(1).max(inst.attrs.batch_group_count.unwrap_or(1));
    let (Some(dn), &[input, kernel]) = (inst.attrs.conv_dims.clone(), &inst.operands[..]) else { return false };
    let window = inst.attrs.window_dims().to_vec();
    if groups > 1 || window.len() != dn.input_spatial.len() || dn.kernel_spatial.len() != window.len() {
        return false;
    }
    let input_shape = comp.get(input).shape.clone();
    let Some(input_dims) = input_shape.as_array().map(|a| a.dims.clone()) else { return false };
    let mut kernel_product: i64 = 1;
    let mut swapped_product: i64 = 1;
    let mut reverse = Vec::new();
    let mut swapped_window = Vec::with_capacity(window.len());
    for (s, w) in window.iter().enumerate() {
        let Some(&input_size) = input_dims.get(dn.input_spatial[s] as usize) else { return false };
        let plain = !w.window_reversal && w.padding_low == 0 && w.padding_high == 0 && w.window_dilation == 1;
        let group_dim = plain && w.base_dilation == w.size && w.stride == w.size - 1;
        let contraction = plain && w.size == input_size && w.base_dilation == 1 && w.stride == 1;
        if group_dim || contraction {
            swapped_window.push(*w);
            continue;
        }
        let dilated_kernel = 1 + (w.size - 1) * w.window_dilation;
        let dilated_input = 1 + (input_size - 1) * w.base_dilation;
        kernel_product = kernel_product.saturating_mul(w.size);
        let full_pad = w.padding_low == w.size - 1 && w.padding_high == w.size - 1;
        let unit = w.stride == 1 && w.window_dilation == 1;
        swapped_product = swapped_product.saturating_mul(if input_size == 1 && unit && full_pad { w.size } else { input_size });
        if !w.window_reversal {
            reverse.push(dn.kernel_spatial[s]);
        }
        swapped_window.push(WindowDim {
            size: input_size,
            stride: w.stride,
            padding_low: dilated_input + w.padding_low - dilated_kernel,
            padding_high: dilated_input + w.padding_high - dilated_kernel,
            window_dilation: w.base_dilation,
            base_dilation: w.window_dilation,
            window_reversal: true,
        });
    }
    if kernel_product <= swapped_product {
        return false;
    }
    let swapped_dn = ConvDimensionNumbers {
        input_batch: dn.kernel_output_feature,
        input_feature: dn.kernel_input_feature,
        input_spatial: dn.kernel_spatial.clone(),
        kernel_input_feature: dn.input_feature,
        kernel_output_feature: dn.input_batch,
        kernel_spatial: dn.input_spatial.clone(),
        output_batch: dn.output_feature,
        output_feature: dn.output_batch,
        output_spatial: dn.output_spatial.clone(),
    };
    let mut new_input = kernel;
    if !reverse.is_empty() {
        let mut names: HashSet<String> = comp.instructions.iter().map(|i| i.name.clone()).collect();
        let name = unique_name(&mut names, &format!("{}.reverse", comp.get(kernel).name));
        let shape = comp.get(kernel).shape.clone();
        let mut rev = Instruction::new(name, Opcode::Reverse, shape, vec![kernel]);
        rev.attrs.dimensions = Some(reverse);
        new_input = comp.add(rev);
    }
    let conv = comp.get_mut(id);
    conv.operands = vec![new_input, input];
    conv.attrs.window = Some(swapped_window);
    conv.attrs.conv_dims = Some(swapped_dn);
    if let Some(p) = conv.attrs.operand_precision.as_mut() {
        p.reverse();
    }
    true
}

/// Swaps every convolution XLA swaps; returns whether any was.
pub fn run(module: &mut Module) -> Result<bool> {
    let mut changed = false;
    for comp in &mut module.computations {
        let convs = comp.ids_of(Opcode::Convolution);
        let mut any = false;
        for id in convs {
            any |= swap(comp, id);
        }
        if any {
            // The reversed kernels were appended: put them back before their convolutions.
            comp.compact();
            changed = true;
        }
    }
    Ok(changed)
}

/// Swaps convolution operands as XLA's simplifier does, before `conv_taps` looks at them.
pub struct ConvOperandSwap;

impl super::pass::Pass for ConvOperandSwap {
    fn name(&self) -> &'static str {
        "conv-operand-swap"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        run(module)
    }
}
