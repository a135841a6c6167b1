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
use crate::hlo::{ConvTaps, InstrId};
use crate::passes::conv_taps::{decide, Home};
use crate::codegen::loops::emit_loop_nest;
use inkwell::{FloatPredicate, IntPredicate};

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
    let taps = conv_taps(kc)?;
    // The GEMM and depthwise kernels read a zero-padded image, so they multiply padding and
    // holes and keep groups apart. Where XLA:CPU does otherwise, that matters only for
    // non-finite weights (padding) or inputs (group expansion): those are checked for at run
    // time, once per call, and then the direct loop nest computes the whole result.
    let has_zeros = dims.window.iter().any(|w| w.padding_low > 0 || w.padding_high > 0 || w.base_dilation > 1);
    let mut check = Vec::new();
    if taps.cross_group_zeros {
        check.push(lhs);
    }
    if !taps.multiply_padding && has_zeros {
        check.push(rhs);
    }
    check.retain(|&id| kc.comp.get(id).shape.element_type().is_some_and(|t| t.is_floating()));
    if super::gemm::conv::plan_fits(kc, lhs, rhs, &dims)? {
        if check.is_empty() {
            if let Some(extent) = super::gemm::conv::try_emit(kc, lhs, rhs, &dims)? {
                return Ok(extent);
            }
            return emit_direct(kc, lhs, rhs, &dims);
        }
        let cg = kc.cg;
        let mut bad = cg.const_bool(false);
        for &id in &check {
            let b = any_non_finite(kc, id)?;
            bad = cg.b.build_or(bad, b, "")?;
        }
        let mut emitted = None;
        let good = cg.b.build_not(bad, "")?;
        cg.if_then("conv.gemm", good, || {
            emitted = super::gemm::conv::try_emit(kc, lhs, rhs, &dims)?;
            Ok(())
        })?;
        return match emitted {
            Some(extent) => {
                cg.if_then("conv.direct", bad, || emit_direct(&whole(kc, extent)?, lhs, rhs, &dims).map(|_| ()))?;
                Ok(extent)
            }
            // The GEMM path declined after all: the direct loop nest computes everything.
            None => emit_direct(kc, lhs, rhs, &dims),
        };
    }
    emit_direct(kc, lhs, rhs, &dims)
}

/// `kc` over the whole output: the GEMM path runs as one task (extent 1), so a fallback
/// inside it computes every element.
fn whole<'a, 'ctx>(kc: &KernelContext<'a, 'ctx>, extent: i64) -> Result<KernelContext<'a, 'ctx>> {
    if extent != 1 {
        return Err(Error::Internal("convolution fallback inside a split kernel".into()));
    }
    let out = &kc.outputs[0];
    let dims = &out.shape.dims;
    let layout = out.shape.layout_or_default();
    let outer = crate::codegen::loops::outer_dimension(dims, &layout).map(|d| dims[d]).unwrap_or(1);
    Ok(KernelContext {
        cg: kc.cg,
        module: kc.module,
        comp: kc.comp,
        root: kc.root,
        bindings: kc.bindings.clone(),
        outputs: kc.outputs.clone(),
        begin: kc.cg.const_i64(0),
        end: kc.cg.const_i64(outer.max(1)),
        in_place_operand: kc.in_place_operand,
        work_elements: std::cell::Cell::new(kc.work_elements.get()),
        streamed: std::cell::Cell::new(kc.streamed.get()),
    })
}

/// An `i1` that is true when some element of the generated operand `id` is infinite or NaN
/// (`x - x` is NaN exactly then; for complex, in either part).
fn any_non_finite<'ctx>(kc: &KernelContext<'_, 'ctx>, id: InstrId) -> Result<inkwell::values::IntValue<'ctx>> {
    let cg = kc.cg;
    let inst = kc.comp.get(id);
    let ty = operand_type(kc, id)?;
    let dims = inst.shape.dims().to_vec();
    let layout = inst.shape.as_array().map(|a| a.layout_or_default()).unwrap_or_else(|| hlojit_runtime::Layout::row_major(dims.len()));
    let flag = cg.entry_alloca(cg.i1().into(), "conv.nonfinite")?;
    cg.b.build_store(flag, cg.const_bool(false))?;
    let mut e = kc.elemental();
    emit_loop_nest(cg, "conv.scan", &dims, &layout, None, |index| {
        e.scoped(|e| {
            let v = e.gen_scalar(id, index)?;
            let parts = if ty.is_complex() {
                let (re, im) = cg.complex_parts(v)?;
                vec![re, im]
            } else {
                vec![e.float_to_compute(v, ty)?]
            };
            let mut bad = cg.b.build_load(cg.i1(), flag, "")?.into_int_value();
            for x in parts {
                let d = cg.b.build_float_sub(x, x, "")?;
                let nan = cg.b.build_float_compare(FloatPredicate::UNO, d, d, "")?;
                bad = cg.b.build_or(bad, nan, "")?;
            }
            cg.b.build_store(flag, bad)?;
            Ok(())
        })
    })?;
    Ok(cg.b.build_load(cg.i1(), flag, "")?.into_int_value())
}

/// XLA:CPU's treatment of the kernel root's padded taps: the `conv-taps` pass's decision, or
/// the entry computation's rules when the convolution did not go through that pass.
pub(super) fn conv_taps(kc: &KernelContext) -> Result<ConvTaps> {
    let conv = kc.comp.get(kc.root);
    if let Some(t) = conv.attrs.conv_taps {
        return Ok(t);
    }
    let lhs = kc.comp.get(conv.operands[0]).shape.dims();
    let rhs = kc.comp.get(conv.operands[1]).shape.dims();
    Ok(decide(conv, lhs, rhs, operand_type(kc, conv.operands[0])?, Home::Entry))
}

/// One output element at a time: the sum over window taps and the group's input features.
/// Taps on padding or base-dilation holes contribute `0 x w` or nothing, and grouped f64 and
/// complex convolutions add the other groups' features times zero, as [`ConvTaps`] says.
fn emit_direct(kc: &KernelContext, lhs: InstrId, rhs: InstrId, d: &ConvDims) -> Result<i64> {
    let cg = kc.cg;
    cg.mark_generated_product();
    let lhs_type = operand_type(kc, lhs)?;
    let rhs_type = operand_type(kc, rhs)?;
    let dn = &d.dn;
    let n = d.spatial_rank();
    let group_out = d.group_features_out();
    let batch_group_out = d.features_out / d.batch_groups;
    let batch_group_size = d.batch_in / d.batch_groups;
    let sizes: Vec<i64> = d.window.iter().map(|w| w.size).collect();
    let taps = conv_taps(kc)?;
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
        nested_loops(cg, "conv.tap", &sizes, &mut |t| {
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
            // The kernel element of input feature `ci` of this output feature at this tap.
            let weight = |ci| {
                let mut wi = vec![cg.const_i64(0); n + 2];
                wi[dn.kernel_input_feature as usize] = ci;
                wi[dn.kernel_output_feature as usize] = o;
                for s in 0..n {
                    wi[dn.kernel_spatial[s] as usize] = k_pos[s];
                }
                (rhs, Index::new(wi), rhs_type)
            };
            // Input feature `f` at this tap's input position.
            let input = |f| {
                let mut xi = vec![cg.const_i64(0); n + 2];
                xi[dn.input_batch as usize] = batch;
                xi[dn.input_feature as usize] = f;
                for s in 0..n {
                    xi[dn.input_spatial[s] as usize] = in_pos[s];
                }
                (lhs, Index::new(xi), lhs_type)
            };
            cg.if_then("conv.valid", valid, || {
                for_loop(cg, "conv.ci", cg.const_i64(0), cg.const_i64(d.group_features_in), |ci| {
                    e.scoped(|e| {
                        let f = cg.b.build_int_nsw_add(feature_base, ci, "")?;
                        acc.add_product(e, slot, input(f), weight(ci))
                    })
                })?;
                if taps.cross_group_zeros {
                    // The other groups' features times the expanded kernel's zeros.
                    for_loop(cg, "conv.other", cg.const_i64(0), cg.const_i64(d.features_in), |f| {
                        let rel = cg.b.build_int_sub(f, feature_base, "")?;
                        let outside = cg.b.build_int_compare(IntPredicate::UGE, rel, cg.const_i64(d.group_features_in), "")?;
                        cg.if_then("conv.other_group", outside, || e.scoped(|e| acc.add_times_zero(e, slot, input(f))))
                    })?;
                }
                Ok(())
            })?;
            if taps.multiply_padding {
                // Padding and holes are zeros that Eigen multiplies: 0 x w.
                let invalid = cg.b.build_not(valid, "")?;
                cg.if_then("conv.padded", invalid, || {
                    for_loop(cg, "conv.ci", cg.const_i64(0), cg.const_i64(d.group_features_in), |ci| {
                        e.scoped(|e| acc.add_times_zero(e, slot, weight(ci)))
                    })
                })?;
            }
            Ok(())
        })
    })
}

