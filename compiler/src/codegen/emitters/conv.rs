//! convolution: any dim_labels, 1-D to 3-D (and more), strides, padding (negative too), base
//! and window dilation, window reversal, feature and batch groups, mixed precision. Big
//! convolutions run on the GEMM engine (implicit im2col) or the depthwise kernel; the rest run
//! a direct loop nest that generates operand elements, so fused operands work too.

use super::gemm::accumulate::{emit_sum_per_element, operand_type};
use super::gemm::conv_dims::ConvDims;
use super::gemm::loops::nested_loops;
use crate::codegen::index::Index;
use crate::codegen::kernel::KernelContext;
use crate::codegen::loops::for_loop;
use crate::error::{Error, Result};
use crate::hlo::InstrId;
use inkwell::IntPredicate;

/// Emits the kernel of a fusion or op whose root is a convolution.
pub fn emit_convolution(kc: &KernelContext) -> Result<i64> {
    let conv = kc.comp.get(kc.root);
    if kc.outputs.len() != 1 {
        return Err(Error::Unsupported(format!("{}: convolution in a multi-output kernel", conv.name)));
    }
    let (lhs, rhs) = match conv.operands[..] {
        [l, r] => (l, r),
        _ => return Err(Error::Internal(format!("{}: convolution takes two operands", conv.name))),
    };
    let dn = conv.attrs.conv_dims.clone().ok_or_else(|| Error::Internal(format!("{}: no dim_labels", conv.name)))?;
    let window = conv.attrs.window_dims().to_vec();
    let dims = ConvDims::new(
        &dn,
        &window,
        conv.attrs.feature_group_count.unwrap_or(1),
        conv.attrs.batch_group_count.unwrap_or(1),
        kc.comp.get(lhs).shape.dims(),
        kc.comp.get(rhs).shape.dims(),
        &kc.outputs[0].shape.dims,
    )
    .map_err(|e| Error::Unsupported(format!("{}: {e}", conv.name)))?;
    if let Some(extent) = super::gemm::conv::try_emit(kc, lhs, rhs, &dims)? {
        return Ok(extent);
    }
    emit_direct(kc, lhs, rhs, &dims)
}

/// One output element at a time: the sum over window taps and the group's input features,
/// skipping taps that fall on padding or base-dilation holes.
fn emit_direct(kc: &KernelContext, lhs: InstrId, rhs: InstrId, d: &ConvDims) -> Result<i64> {
    let cg = kc.cg;
    let lhs_type = operand_type(kc, lhs)?;
    let rhs_type = operand_type(kc, rhs)?;
    let dn = &d.dn;
    let n = d.spatial_rank();
    let group_out = d.group_features_out();
    let batch_group_out = d.features_out / d.batch_groups;
    let batch_group_size = d.batch_in / d.batch_groups;
    let taps: Vec<i64> = d.window.iter().map(|w| w.size).collect();
    emit_sum_per_element(kc, "conv", |e, acc, index, slot| {
        let b = index.dims[dn.output_batch as usize];
        let o = index.dims[dn.output_feature as usize];
        let group = cg.b.build_int_unsigned_div(o, cg.const_i64(group_out), "group")?;
        let feature_base = cg.b.build_int_nsw_mul(group, cg.const_i64(d.group_features_in), "")?;
        let batch = if d.batch_groups > 1 {
            let bg = cg.b.build_int_unsigned_div(o, cg.const_i64(batch_group_out), "")?;
            let base = cg.b.build_int_nsw_mul(bg, cg.const_i64(batch_group_size), "")?;
            cg.b.build_int_nsw_add(base, b, "")?
        } else {
            b
        };
        nested_loops(cg, "conv.tap", &taps, &mut |t| {
            let mut valid = cg.const_bool(true);
            let mut in_pos = Vec::with_capacity(n);
            let mut k_pos = Vec::with_capacity(n);
            #[allow(clippy::needless_range_loop)] // indexes several per-dimension lists
            for s in 0..n {
                let w = &d.window[s];
                let p = index.dims[dn.output_spatial[s] as usize];
                let mut u = cg.b.build_int_nsw_mul(p, cg.const_i64(w.stride), "")?;
                u = cg.b.build_int_nsw_add(u, cg.const_i64(-w.padding_low), "")?;
                let tap = cg.b.build_int_nsw_mul(t[s], cg.const_i64(w.window_dilation), "")?;
                u = cg.b.build_int_nsw_add(u, tap, "")?;
                if w.base_dilation > 1 {
                    let dil = cg.const_i64(w.base_dilation);
                    let rem = cg.b.build_int_signed_rem(u, dil, "")?;
                    let on_grid = cg.b.build_int_compare(IntPredicate::EQ, rem, cg.const_i64(0), "")?;
                    valid = cg.b.build_and(valid, on_grid, "")?;
                    u = cg.b.build_int_signed_div(u, dil, "")?;
                }
                let lo = cg.b.build_int_compare(IntPredicate::SGE, u, cg.const_i64(0), "")?;
                let hi = cg.b.build_int_compare(IntPredicate::SLT, u, cg.const_i64(d.in_spatial[s]), "")?;
                valid = cg.b.build_and(valid, cg.b.build_and(lo, hi, "")?, "")?;
                in_pos.push(u);
                k_pos.push(if w.window_reversal {
                    cg.b.build_int_nsw_sub(cg.const_i64(w.size - 1), t[s], "")?
                } else {
                    t[s]
                });
            }
            cg.if_then("conv.valid", valid, || {
                for_loop(cg, "conv.ci", cg.const_i64(0), cg.const_i64(d.group_features_in), |ci| {
                    e.scoped(|e| {
                        let mut xi = vec![cg.const_i64(0); n + 2];
                        let mut wi = vec![cg.const_i64(0); n + 2];
                        xi[dn.input_batch as usize] = batch;
                        xi[dn.input_feature as usize] = cg.b.build_int_nsw_add(feature_base, ci, "")?;
                        wi[dn.kernel_input_feature as usize] = ci;
                        wi[dn.kernel_output_feature as usize] = o;
                        for s in 0..n {
                            xi[dn.input_spatial[s] as usize] = in_pos[s];
                            wi[dn.kernel_spatial[s] as usize] = k_pos[s];
                        }
                        acc.add_product(e, slot, (lhs, Index::new(xi), lhs_type), (rhs, Index::new(wi), rhs_type))
                    })
                })
            })
        })
    })
}

