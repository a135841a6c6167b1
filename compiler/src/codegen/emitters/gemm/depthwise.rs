//! Depthwise convolutions (one output feature per input feature): no reduction over features,
//! so instead of a GEMM the kernel vectorizes over features. For a block of `R` output pixels
//! of one line and one vector of features it keeps `R` accumulators and, per window tap, loads
//! the tap's weights once and the `R` input vectors from the canonical image. Feature vectors
//! past the last feature are masked.

use super::conv::{begin_task, Image, Out, Plan};
use super::microkernel::vector_type;
use super::operand::Captures;
use crate::codegen::vectors::{lane_mask, masked_load};
use crate::codegen::index::delinearize;
use crate::codegen::kernel::KernelContext;
use super::loops::scalar_loop;
use crate::codegen::loops::for_loop;
use crate::error::{Error, Result};
use inkwell::values::{FunctionValue, PointerValue};

/// Output pixels computed together (accumulators in registers).
const PIXELS: i64 = 8;

/// `task(ctx, l0, l1)`: output lines `[l0, l1)`.
pub(super) fn emit_task<'ctx>(
    kc: &KernelContext<'_, 'ctx>,
    caps: &Captures<'ctx>,
    p: &Plan,
    table: PointerValue<'ctx>,
    name: &str,
) -> Result<FunctionValue<'ctx>> {
    let cg = kc.cg;
    let saved = cg.b.get_insert_block();
    let (f, l0, l1, mut env, scratch_image) = begin_task(kc, caps, name)?;
    let d = &p.d;
    let n = d.spatial_rank();
    let features = d.features_out;
    let lanes = p.bl.lanes;
    let es = p.conv.compute.byte_size() as i64;
    let elem = cg.value_type(p.conv.compute);
    let vt = vector_type(elem, lanes as u32)?;
    let is_float = p.conv.compute.is_float();
    let (out_batch_stride, out_spatial) = match &p.out {
        Out::Direct { batch, spatial } => (*batch, spatial.clone()),
        Out::Staged => return Err(Error::Internal("depthwise convolution needs a direct result".into())),
    };
    let image = match p.image {
        Image::InPlace { slot } => env.ptrs[slot],
        Image::Copy { .. } => scratch_image,
    };
    let out_ptr = env.ptrs[caps.out_slot];

    // The weights as [tap][feature] in the compute type.
    let w_bytes = p.taps * features * es;
    let wp = cg.scratch_alloc(w_bytes, "scratch")?;
    scalar_loop(cg, "pack.t", cg.const_i64(0), cg.const_i64(p.taps), |t| {
        for_loop(cg, "pack.f", cg.const_i64(0), cg.const_i64(features), |fe| {
            env.e.scoped(|e| {
                // Feature fe is group fe; the kernel matrix of a group is [taps][1].
                let v = p.kernel.transposed().load(&env.ptrs, e, fe, t, cg.const_i64(0))?;
                let v = p.conv.operand(e, v, p.kernel.ty)?;
                let at = cg.b.build_int_nsw_add(cg.b.build_int_nsw_mul(t, cg.const_i64(features), "")?, fe, "")?;
                cg.b.build_store(cg.gep(elem, wp, at)?, v)?;
                Ok(())
            })
        })
    })?;

    let pixels = PIXELS.min(p.width);
    let blocks = (p.width + pixels - 1) / pixels;
    let vectors = (features + lanes - 1) / lanes;
    let x_step = d.window[n - 1].stride * p.pitches.spatial[n - 1];
    let ldc = out_spatial[n - 1];
    let mut line_sizes = vec![p.out_batch];
    line_sizes.extend_from_slice(&d.out_spatial[..n - 1]);
    let align = cg.i32().const_int(es as u64, false);
    scalar_loop(cg, "line", l0, l1, |line| {
        let li = delinearize(cg, line, &line_sizes)?;
        let ob = li.dims[0];
        let mut a_off = cg.b.build_int_nsw_mul(ob, cg.const_i64(p.pitches.batch), "")?;
        let mut c_off = cg.b.build_int_nsw_mul(ob, cg.const_i64(out_batch_stride), "")?;
        #[allow(clippy::needless_range_loop)] // indexes several per-dimension lists
        for s in 0..n - 1 {
            let o = li.dims[s + 1];
            a_off = cg.b.build_int_nsw_add(a_off, cg.b.build_int_nsw_mul(o, cg.const_i64(d.window[s].stride * p.pitches.spatial[s]), "")?, "")?;
            c_off = cg.b.build_int_nsw_add(c_off, cg.b.build_int_nsw_mul(o, cg.const_i64(out_spatial[s]), "")?, "")?;
        }
        let a_line = cg.gep(elem, image, a_off)?;
        let c_line = cg.gep(elem, out_ptr, c_off)?;
        scalar_loop(cg, "block", cg.const_i64(0), cg.const_i64(blocks), |blk| {
            // The last block ends at the line's end, overlapping the one before.
            let ow0 = cg.b.build_int_nsw_mul(blk, cg.const_i64(pixels), "")?;
            let ow0 = cg.call_intrinsic("llvm.smin", &[cg.i64().into()], &[ow0.into(), cg.const_i64(p.width - pixels).into()])?.into_int_value();
            let a_blk = cg.gep(elem, a_line, cg.b.build_int_nsw_mul(ow0, cg.const_i64(x_step), "")?)?;
            let c_blk = cg.gep(elem, c_line, cg.b.build_int_nsw_mul(ow0, cg.const_i64(ldc), "")?)?;
            scalar_loop(cg, "fv", cg.const_i64(0), cg.const_i64(vectors), |fv| {
                let f0 = cg.b.build_int_nsw_mul(fv, cg.const_i64(lanes), "")?;
                let mask = lane_mask(cg, lanes, cg.b.build_int_nsw_sub(cg.const_i64(features), f0, "")?)?;
                let slots: Vec<PointerValue> = (0..pixels)
                    .map(|_| {
                        let s = cg.entry_alloca(vt.into(), "acc")?;
                        cg.b.build_store(s, vt.const_zero())?;
                        Ok(s)
                    })
                    .collect::<Result<_>>()?;
                for_loop(cg, "tap", cg.const_i64(0), cg.const_i64(p.taps), |t| {
                    let w_at = cg.b.build_int_nsw_add(cg.b.build_int_nsw_mul(t, cg.const_i64(features), "")?, f0, "")?;
                    let w = masked_load(cg, vt, cg.gep(elem, wp, w_at)?, align, mask)?;
                    let off = cg.b.build_load(cg.i64(), cg.gep(cg.i64().into(), table, t)?, "tap.off")?.into_int_value();
                    let a_tap = cg.gep(elem, a_blk, cg.b.build_int_nsw_add(off, f0, "")?)?;
                    for (r, slot) in slots.iter().enumerate() {
                        let x = masked_load(cg, vt, cg.gep(elem, a_tap, cg.const_i64(r as i64 * x_step))?, align, mask)?;
                        let acc = cg.b.build_load(vt, *slot, "")?.into_vector_value();
                        let next = if is_float {
                            cg.call_intrinsic("llvm.fmuladd", &[vt.into()], &[x.into(), w.into(), acc.into()])?
                        } else {
                            cg.b.build_int_add(acc, cg.b.build_int_mul(x, w, "")?, "")?.into()
                        };
                        cg.b.build_store(*slot, next)?;
                    }
                    Ok(())
                })?;
                let store = cg.intrinsic("llvm.masked.store", &[vt.into(), cg.ptr().into()])?;
                for (r, slot) in slots.iter().enumerate() {
                    let acc = cg.b.build_load(vt, *slot, "")?;
                    let at = cg.b.build_int_nsw_add(cg.const_i64(r as i64 * ldc), f0, "")?;
                    cg.call_void(store, &[acc.into(), cg.gep(elem, c_blk, at)?.into(), align.into(), mask.into()])?;
                }
                Ok(())
            })
        })
    })?;
    cg.scratch_free(wp, w_bytes)?;
    cg.b.build_return(None)?;
    if let Some(bb) = saved {
        cg.b.position_at_end(bb);
    }
    Ok(f)
}
