//! dot (dot_general) and convolution.
//!
//! Both accumulate, so the result element type may be chosen (`preferred_element_type`, in HLO
//! simply the declared type); without one it is the more precise operand type.

use super::common::{array, array_text, fail, higher_precision, is_dynamic, list, make, window_output_dims};
use crate::hlo::attributes::{ConvDimensionNumbers, DotDimensionNumbers, WindowDim};
use crate::hlo::opcode::Opcode;
use hlojit_runtime::{ElementType, Shape};
use std::collections::HashSet;

/// The result type: `preferred` if given, else the more precise operand type. An integer
/// result may not be narrower than integer operands.
fn result_type(
    op: Opcode,
    lhs: ElementType,
    rhs: ElementType,
    preferred: Option<ElementType>,
) -> Result<ElementType, String> {
    let natural = higher_precision(lhs, rhs);
    match preferred {
        None => Ok(natural),
        Some(p) if p == natural => Ok(p),
        Some(p) => {
            if !natural.is_floating() && !natural.is_pred() && p.bit_width() < natural.bit_width() {
                fail!(op, "result type {p} is narrower than the operand type {natural}");
            }
            Ok(p)
        }
    }
}

fn check_dot_dims(side: &str, rank: usize, contracting: &[i64], batch: &[i64]) -> Result<(), String> {
    let mut seen = HashSet::new();
    for (what, dims) in [("contracting", contracting), ("batch", batch)] {
        for &d in dims {
            if d < 0 || d >= rank as i64 {
                fail!(Opcode::Dot, "{side} {what} dimension {d} is out of range for rank {rank}");
            }
            if !seen.insert(d) {
                fail!(Opcode::Dot, "{side} dimension {d} is used more than once as a batch or contracting dimension");
            }
        }
    }
    Ok(())
}

/// `dot(lhs, rhs)`: result dimensions are the batch dimensions, then lhs's free dimensions,
/// then rhs's free dimensions.
pub fn infer_dot(
    lhs: &Shape,
    rhs: &Shape,
    dnums: &DotDimensionNumbers,
    preferred: Option<ElementType>,
) -> Result<Shape, String> {
    let op = Opcode::Dot;
    let l = array(op, lhs, "lhs")?;
    let r = array(op, rhs, "rhs")?;
    check_dot_dims("lhs", l.rank(), &dnums.lhs_contracting, &dnums.lhs_batch)?;
    check_dot_dims("rhs", r.rank(), &dnums.rhs_contracting, &dnums.rhs_batch)?;
    if dnums.lhs_contracting.len() != dnums.rhs_contracting.len() {
        fail!(
            op,
            "lhs has {} contracting dimensions {} but rhs has {} {}",
            dnums.lhs_contracting.len(),
            list(&dnums.lhs_contracting),
            dnums.rhs_contracting.len(),
            list(&dnums.rhs_contracting)
        );
    }
    for (&lc, &rc) in dnums.lhs_contracting.iter().zip(&dnums.rhs_contracting) {
        let (ls, rs) = (l.dims[lc as usize], r.dims[rc as usize]);
        if ls != rs {
            fail!(op, "lhs contracting dimension {lc} has size {ls}, rhs contracting dimension {rc} has size {rs}");
        }
    }
    if dnums.lhs_batch.len() != dnums.rhs_batch.len() {
        fail!(
            op,
            "lhs has {} batch dimensions {} but rhs has {} {}",
            dnums.lhs_batch.len(),
            list(&dnums.lhs_batch),
            dnums.rhs_batch.len(),
            list(&dnums.rhs_batch)
        );
    }
    for (&lb, &rb) in dnums.lhs_batch.iter().zip(&dnums.rhs_batch) {
        let (ls, rs) = (l.dims[lb as usize], r.dims[rb as usize]);
        if ls != rs {
            fail!(op, "lhs batch dimension {lb} has size {ls}, rhs batch dimension {rb} has size {rs}");
        }
    }
    let mut dims = Vec::new();
    let mut dynamic = Vec::new();
    for &b in &dnums.lhs_batch {
        dims.push(l.dims[b as usize]);
        dynamic.push(is_dynamic(l, b as usize));
    }
    for (shape, contracting, batch) in
        [(l, &dnums.lhs_contracting, &dnums.lhs_batch), (r, &dnums.rhs_contracting, &dnums.rhs_batch)]
    {
        for i in 0..shape.rank() {
            let d = i as i64;
            if !contracting.contains(&d) && !batch.contains(&d) {
                dims.push(shape.dims[i]);
                dynamic.push(is_dynamic(shape, i));
            }
        }
    }
    let t = result_type(op, l.element_type, r.element_type, preferred)?;
    Ok(make(t, dims, dynamic))
}

/// Checks that `dims` (a role list of one operand of a convolution) is a permutation of
/// `0..rank`.
fn check_conv_roles(what: &str, dims: &[i64], rank: usize) -> Result<(), String> {
    let mut seen = vec![false; rank];
    for &d in dims {
        if d < 0 || d >= rank as i64 {
            fail!(Opcode::Convolution, "{what} dimension number {d} is out of range for rank {rank}");
        }
        if std::mem::replace(&mut seen[d as usize], true) {
            fail!(Opcode::Convolution, "{what} dimension {d} is given two roles in dim_labels");
        }
    }
    Ok(())
}

/// `convolution(lhs, rhs)` with `window`, dimension numbers and group counts.
pub fn infer_convolution(
    lhs: &Shape,
    rhs: &Shape,
    window: &[WindowDim],
    dnums: &ConvDimensionNumbers,
    feature_group_count: i64,
    batch_group_count: i64,
    preferred: Option<ElementType>,
) -> Result<Shape, String> {
    let op = Opcode::Convolution;
    let l = array(op, lhs, "lhs")?;
    let r = array(op, rhs, "rhs")?;
    if feature_group_count <= 0 {
        fail!(op, "feature_group_count must be positive, got {feature_group_count}");
    }
    if batch_group_count <= 0 {
        fail!(op, "batch_group_count must be positive, got {batch_group_count}");
    }
    if feature_group_count > 1 && batch_group_count > 1 {
        fail!(op, "feature_group_count ({feature_group_count}) and batch_group_count ({batch_group_count}) cannot both exceed 1");
    }
    let spatial = dnums.input_spatial.len();
    if dnums.kernel_spatial.len() != spatial || dnums.output_spatial.len() != spatial {
        fail!(
            op,
            "dim_labels give {} input, {} kernel and {} output spatial dimensions",
            spatial,
            dnums.kernel_spatial.len(),
            dnums.output_spatial.len()
        );
    }
    if window.len() != spatial {
        fail!(op, "the window has {} dimensions but there are {spatial} spatial dimensions", window.len());
    }
    let rank = spatial + 2;
    if l.rank() != rank {
        fail!(op, "lhs {} must have rank {rank}", array_text(l));
    }
    if r.rank() != rank {
        fail!(op, "rhs {} must have rank {rank}", array_text(r));
    }
    let mut input = vec![dnums.input_batch, dnums.input_feature];
    input.extend(&dnums.input_spatial);
    check_conv_roles("input", &input, rank)?;
    let mut kernel = vec![dnums.kernel_input_feature, dnums.kernel_output_feature];
    kernel.extend(&dnums.kernel_spatial);
    check_conv_roles("kernel", &kernel, rank)?;
    let mut output = vec![dnums.output_batch, dnums.output_feature];
    output.extend(&dnums.output_spatial);
    check_conv_roles("output", &output, rank)?;

    let input_batch = l.dims[dnums.input_batch as usize];
    let input_features = l.dims[dnums.input_feature as usize];
    let kernel_input_features = r.dims[dnums.kernel_input_feature as usize];
    let kernel_output_features = r.dims[dnums.kernel_output_feature as usize];
    if kernel_output_features % batch_group_count != 0 {
        fail!(op, "kernel output features ({kernel_output_features}) must be a multiple of batch_group_count ({batch_group_count})");
    }
    if input_batch % batch_group_count != 0 {
        fail!(op, "input batch ({input_batch}) must be a multiple of batch_group_count ({batch_group_count})");
    }
    if input_features % feature_group_count != 0 || input_features / feature_group_count != kernel_input_features {
        fail!(
            op,
            "input features ({input_features}) must be feature_group_count ({feature_group_count}) times the kernel input features ({kernel_input_features})"
        );
    }
    if kernel_output_features % feature_group_count != 0 {
        fail!(op, "kernel output features ({kernel_output_features}) must be a multiple of feature_group_count ({feature_group_count})");
    }
    for (i, w) in window.iter().enumerate() {
        let k = r.dims[dnums.kernel_spatial[i] as usize];
        if w.size != k {
            fail!(op, "window size {} of spatial dimension {i} differs from the kernel's size {k}", w.size);
        }
    }
    let base: Vec<i64> = dnums.input_spatial.iter().map(|&d| l.dims[d as usize]).collect();
    let spatial_out = window_output_dims(op, &base, window)?;
    let mut dims = vec![0; rank];
    let mut dynamic = vec![false; rank];
    dims[dnums.output_batch as usize] = input_batch / batch_group_count;
    dynamic[dnums.output_batch as usize] = is_dynamic(l, dnums.input_batch as usize);
    dims[dnums.output_feature as usize] = kernel_output_features;
    for (i, &size) in spatial_out.iter().enumerate() {
        let o = dnums.output_spatial[i] as usize;
        dims[o] = size;
        dynamic[o] = is_dynamic(l, dnums.input_spatial[i] as usize) || is_dynamic(r, dnums.kernel_spatial[i] as usize);
    }
    let t = result_type(op, l.element_type, r.element_type, preferred)?;
    Ok(make(t, dims, dynamic))
}
