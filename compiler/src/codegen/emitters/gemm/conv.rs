//! Lowering a convolution onto the GEMM micro-kernel, without materializing im2col.
//!
//! Per (feature or batch) group `g` the convolution is a GEMM: rows are output pixels, columns
//! the group's output features, depth the window taps times the group's input features. The
//! input is first brought into a canonical image `X[batch][padded spatial...][features]`
//! (padding, base dilation and negative padding applied, elements converted to the compute
//! type) unless it already is one; then `MR` consecutive output pixels of one output line read
//! their A rows straight from `X` (rows `stride * features` apart, features contiguous, each
//! tap at a fixed offset from a table), so the micro-kernel sums over all taps and input
//! features with the C tile in registers. The kernel weights are packed once per group and
//! task. Tiles go straight into the result when its feature dimension is contiguous, else
//! through a per-line scratch buffer.

use super::config::{compute_type, Blocking};
use super::conv_dims::ConvDims;
use super::dims::logical_strides;
use super::microkernel::{microkernel, ALayout};
use super::operand::{Captures, ConvKernelMap, Operand, Source, TaskEnv};
use super::pack::{elem_zero, pack_strip, Conversion, Strip};
use crate::codegen::runtime_abi::RuntimeFunction;
use crate::codegen::array::IrArray;
use crate::codegen::context::Codegen;
use crate::codegen::index::{delinearize, Index};
use crate::codegen::kernel::KernelContext;
use super::loops::scalar_loop;
use crate::codegen::loops::for_loop;
use crate::error::{Error, Result};
use crate::hlo::InstrId;
use hlojit_runtime::ElementType;
use inkwell::values::{FunctionValue, IntValue, PointerValue};
use inkwell::IntPredicate;

/// Convolutions with fewer multiply-adds than this run the direct loop nest.
const MIN_MACS: i64 = 64 * 1024;
/// Below this many flops the convolution runs on the calling thread.
const PARALLEL_MIN_FLOPS: f64 = 4.0e6;
/// Canonical images with fewer elements than this are filled on the calling thread.
const PARALLEL_MIN_FILL: i64 = 1 << 16;

/// Where the canonical image comes from.
#[derive(Clone, Debug)]
pub(super) enum Image {
    /// The input buffer itself (captured slot): features contiguous, no padding or dilation.
    InPlace { slot: usize },
    /// A scratch copy with these padded spatial sizes.
    Copy { padded: Vec<i64> },
}

/// Element strides of the canonical image.
#[derive(Clone, Debug)]
pub(super) struct Pitches {
    pub batch: i64,
    pub spatial: Vec<i64>,
}

#[derive(Clone, Debug)]
pub(super) enum Out {
    /// Tiles into the result: strides of its batch and spatial dimensions (features are
    /// contiguous).
    Direct { batch: i64, spatial: Vec<i64> },
    /// One output line at a time through scratch.
    Staged,
}

pub(super) struct Plan {
    pub lhs: InstrId,
    pub lhs_type: ElementType,
    pub d: ConvDims,
    pub groups: i64,
    pub group_in: i64,
    pub group_out: i64,
    pub out_batch: i64,
    pub lines: i64,
    pub width: i64,
    pub taps: i64,
    pub image: Image,
    pub pitches: Pitches,
    pub out: Out,
    pub tap_offsets: Vec<i64>,
    pub bl: Blocking,
    pub conv: Conversion,
    pub kernel: Operand,
    /// One output feature per input feature (depthwise): vectorized over features instead.
    pub depthwise: bool,
}

/// Emits the convolution on the GEMM micro-kernel when it fits; `None` leaves it to the
/// direct loop nest.
pub fn try_emit(kc: &KernelContext<'_, '_>, lhs: InstrId, rhs: InstrId, d: &ConvDims) -> Result<Option<i64>> {
    let Some(plan) = plan(kc, lhs, rhs, d)? else { return Ok(None) };
    let caps = Captures::new(kc, 1)?;
    let plan = match plan.image {
        Image::InPlace { .. } => match caps.slot_of(lhs) {
            Some(slot) => Plan { image: Image::InPlace { slot }, ..plan },
            None => return Ok(None),
        },
        _ => plan,
    };
    emit(kc, &caps, &plan).map(Some)
}

/// Whether the convolution is big enough and shaped for the GEMM or depthwise kernel.
pub fn plan_fits(kc: &KernelContext<'_, '_>, lhs: InstrId, rhs: InstrId, d: &ConvDims) -> Result<bool> {
    Ok(plan(kc, lhs, rhs, d)?.is_some())
}

fn plan(kc: &KernelContext<'_, '_>, lhs: InstrId, rhs: InstrId, d: &ConvDims) -> Result<Option<Plan>> {
    let out = &kc.outputs[0];
    let out_type = out.element_type();
    let Some(compute) = compute_type(out_type) else { return Ok(None) };
    let n = d.spatial_rank();
    if n == 0 {
        return Ok(None);
    }
    let groups = d.feature_groups * d.batch_groups;
    let group_out = d.features_out / groups;
    let group_in = d.group_features_in;
    let taps = d.taps();
    let out_batch = d.batch_in / d.batch_groups;
    let width = d.out_spatial[n - 1];
    let pixels = out_batch * d.out_spatial.iter().product::<i64>();
    let macs = pixels.saturating_mul(d.features_out).saturating_mul(taps * group_in);
    let depthwise = group_in == 1 && group_out == 1 && d.batch_groups == 1 && d.feature_groups > 1;
    if macs < MIN_MACS || width == 0 || pixels == 0 || (!depthwise && (group_out < 4 || group_in * taps < 4)) {
        return Ok(None);
    }
    let lhs_inst = kc.comp.get(lhs);
    let lhs_type = lhs_inst.shape.element_type().ok_or_else(|| Error::Internal("convolution input is not an array".into()))?;
    let dn = &d.dn;

    // Use the input in place when it already is a canonical image.
    let plain = d.window.iter().all(|w| w.padding_low == 0 && w.padding_high == 0 && w.base_dilation == 1);
    let bound = kc.bindings.get(&lhs).and_then(|i| match i {
        crate::codegen::elemental::Input::Array(a) => Some(a),
        _ => None,
    });
    let in_strides = bound.and_then(|a| logical_strides(&a.shape));
    let (image, pitches) = match in_strides {
        Some(s) if plain && lhs_type == compute && s[dn.input_feature as usize] == 1 => (
            Image::InPlace { slot: 0 },
            Pitches { batch: s[dn.input_batch as usize], spatial: dn.input_spatial.iter().map(|&x| s[x as usize]).collect() },
        ),
        _ => {
            let padded: Vec<i64> = (0..n)
                .map(|s| {
                    let w = &d.window[s];
                    let dilated = if d.in_spatial[s] == 0 { 0 } else { (d.in_spatial[s] - 1) * w.base_dilation + 1 };
                    (dilated + w.padding_low + w.padding_high).max(0)
                })
                .collect();
            let mut spatial = vec![0; n];
            let mut pitch = d.features_in;
            for s in (0..n).rev() {
                spatial[s] = pitch;
                pitch *= padded[s];
            }
            (Image::Copy { padded }, Pitches { batch: pitch, spatial })
        }
    };

    let out_strides = logical_strides(&out.shape);
    let out_plan = match out_strides {
        Some(s) if out_type == compute && (s[dn.output_feature as usize] == 1 || d.features_out == 1) => {
            Out::Direct { batch: s[dn.output_batch as usize], spatial: dn.output_spatial.iter().map(|&x| s[x as usize]).collect() }
        }
        _ => Out::Staged,
    };
    if depthwise && matches!(out_plan, Out::Staged) {
        return Ok(None);
    }

    let sizes: Vec<i64> = d.window.iter().map(|w| w.size).collect();
    let mut tap_offsets = Vec::with_capacity(taps as usize);
    for t in 0..taps {
        let mut rest = t;
        let mut off = 0;
        for s in (0..n).rev() {
            let ts = rest % sizes[s];
            rest /= sizes[s];
            off += ts * d.window[s].window_dilation * pitches.spatial[s];
        }
        tap_offsets.push(off);
    }

    let mut bl = Blocking::new(compute.byte_size() as i64, kc.cg.simd_bytes as i64, group_out);
    bl.mr = equal_strips(kc.cg.simd_bytes, bl.mr.min(width), bl.nv, width);
    let rhs_inst = kc.comp.get(rhs);
    let rhs_type = rhs_inst.shape.element_type().ok_or_else(|| Error::Internal("convolution kernel is not an array".into()))?;
    let kernel = Operand {
        source: Source::ConvKernel(ConvKernelMap {
            id: rhs,
            rank: rhs_inst.shape.rank(),
            in_feature: dn.kernel_input_feature as usize,
            out_feature: dn.kernel_output_feature as usize,
            spatial: (0..n).map(|s| (dn.kernel_spatial[s] as usize, sizes[s], d.window[s].window_reversal)).collect(),
            group_in,
            group_out,
            transposed: true,
        }),
        ty: rhs_type,
        rows: group_out,
        cols: taps * group_in,
    };
    let lines = out_batch * d.out_spatial[..n - 1].iter().product::<i64>();
    Ok(Some(Plan {
        lhs,
        lhs_type,
        d: d.clone(),
        groups,
        group_in,
        group_out,
        out_batch,
        lines,
        width,
        taps,
        image,
        pitches,
        out: out_plan,
        tap_offsets,
        bl,
        conv: Conversion { out: out_type, compute },
        kernel,
        depthwise,
    }))
}

fn emit<'ctx>(kc: &KernelContext<'_, 'ctx>, caps: &Captures<'ctx>, p: &Plan) -> Result<i64> {
    if super::precompiled_conv::emit_precompiled(kc, caps, p)? {
        return Ok(1);
    }
    let cg = kc.cg;
    cg.mark_generated_product();
    let base = cg.function().get_name().to_string_lossy().into_owned();
    let al = ALayout { row: p.d.window[p.d.spatial_rank() - 1].stride * p.pitches.spatial[p.d.spatial_rank() - 1], depth: 1, taps: true, pairs: false };
    let table = tap_table(cg, &format!("{base}.taps"), &p.tap_offsets);
    let es = p.conv.compute.byte_size() as i64;
    let pf = cg.runtime(RuntimeFunction::ParallelFor)?;
    // The canonical image, if it is a copy.
    let image_bytes = match &p.image {
        Image::Copy { .. } => p.pitches.batch * p.d.batch_in * es,
        Image::InPlace { .. } => 0,
    };
    let image = if image_bytes > 0 {
        cg.scratch_alloc(image_bytes, "scratch")?
    } else {
        cg.ptr().const_null()
    };
    let image_int = cg.b.build_ptr_to_int(image, cg.i64(), "")?;
    let ctx = caps.store(cg, &[image_int])?;
    if let Image::Copy { padded } = &p.image {
        let fill = emit_fill(kc, caps, p, padded, &format!("{base}.fill"))?;
        let lines = p.d.batch_in * padded[..padded.len() - 1].iter().product::<i64>();
        if image_bytes / es >= PARALLEL_MIN_FILL {
            let f = fill.as_global_value().as_pointer_value();
            cg.call_void(pf, &[f.into(), ctx.into(), cg.const_i64(lines).into(), cg.const_i64(1).into()])?;
        } else {
            cg.call_void(fill, &[ctx.into(), cg.const_i64(0).into(), cg.const_i64(lines).into()])?;
        }
    }
    let (task, units) = if p.depthwise {
        (super::depthwise::emit_task(kc, caps, p, table, &format!("{base}.task"))?, p.lines)
    } else {
        let uk = microkernel(cg, p.conv.compute, &p.bl, al)?;
        (emit_task(kc, caps, p, uk, table, &format!("{base}.task"))?, p.groups * p.lines)
    };
    let flops = 2.0 * (p.groups * p.lines * p.width) as f64 * p.group_out as f64 * (p.taps * p.group_in) as f64;
    if flops < PARALLEL_MIN_FLOPS {
        cg.call_void(task, &[ctx.into(), cg.const_i64(0).into(), cg.const_i64(units).into()])?;
    } else {
        let f = task.as_global_value().as_pointer_value();
        cg.call_void(pf, &[f.into(), ctx.into(), cg.const_i64(units).into(), cg.const_i64(1).into()])?;
    }
    if image_bytes > 0 {
        cg.scratch_free(image, image_bytes)?;
    }
    Ok(1)
}

/// A constant table of i64 values.
pub(super) fn tap_table<'ctx>(cg: &Codegen<'ctx>, name: &str, values: &[i64]) -> PointerValue<'ctx> {
    let consts: Vec<IntValue> = values.iter().map(|&v| cg.const_i64(v)).collect();
    let init = cg.i64().const_array(&consts);
    let global = cg.module.add_global(init.get_type(), None, name);
    global.set_initializer(&init);
    global.set_constant(true);
    global.set_linkage(inkwell::module::Linkage::Private);
    global.as_pointer_value()
}

/// Starts a convolution task function (see [`Captures::begin_task`]); also returns the image
/// buffer, the first captured integer.
pub(super) fn begin_task<'a, 'ctx>(
    kc: &KernelContext<'a, 'ctx>,
    caps: &Captures<'ctx>,
    name: &str,
) -> Result<(FunctionValue<'ctx>, IntValue<'ctx>, IntValue<'ctx>, TaskEnv<'a, 'ctx>, PointerValue<'ctx>)> {
    let (f, begin, end, env) = caps.begin_task(kc, name)?;
    let image = kc.cg.b.build_int_to_ptr(env.ints[0], kc.cg.ptr(), "image")?;
    Ok((f, begin, end, env, image))
}

/// Maps a coordinate `p` of the padded, dilated input to the input coordinate: `(valid, u)`.
fn unpad<'ctx>(cg: &Codegen<'ctx>, p: IntValue<'ctx>, low: i64, dilation: i64, size: i64) -> Result<(IntValue<'ctx>, IntValue<'ctx>)> {
    let q = cg.b.build_int_nsw_sub(p, cg.const_i64(low), "")?;
    let mut valid = cg.b.build_int_compare(IntPredicate::SGE, q, cg.const_i64(0), "")?;
    let u = if dilation > 1 {
        let rem = cg.b.build_int_signed_rem(q, cg.const_i64(dilation), "")?;
        let on_grid = cg.b.build_int_compare(IntPredicate::EQ, rem, cg.const_i64(0), "")?;
        valid = cg.b.build_and(valid, on_grid, "")?;
        cg.b.build_int_signed_div(q, cg.const_i64(dilation), "")?
    } else {
        q
    };
    let below = cg.b.build_int_compare(IntPredicate::SLT, u, cg.const_i64(size), "")?;
    Ok((cg.b.build_and(valid, below, "")?, u))
}

/// `fill(ctx, l0, l1)`: fills lines `[l0, l1)` (batch x all padded spatial dimensions but
/// the last) of the canonical image.
fn emit_fill<'ctx>(kc: &KernelContext<'_, 'ctx>, caps: &Captures<'ctx>, p: &Plan, padded: &[i64], name: &str) -> Result<FunctionValue<'ctx>> {
    let cg = kc.cg;
    let saved = cg.b.get_insert_block();
    let (f, l0, l1, mut env, image) = begin_task(kc, caps, name)?;
    let d = &p.d;
    let dn = &d.dn;
    let n = d.spatial_rank();
    let elem = cg.value_type(p.conv.compute);
    let zero = elem_zero(cg, p.conv.compute);
    let c = d.features_in;
    let rank = kc.comp.get(p.lhs).shape.rank();
    let mut line_sizes = vec![d.batch_in];
    line_sizes.extend_from_slice(&padded[..n - 1]);
    scalar_loop(cg, "fill.line", l0, l1, |l| {
        let idx = delinearize(cg, l, &line_sizes)?;
        let mut valid = cg.const_bool(true);
        let mut coords = vec![cg.const_i64(0); rank];
        coords[dn.input_batch as usize] = idx.dims[0];
        for s in 0..n - 1 {
            let w = &d.window[s];
            let (v, u) = unpad(cg, idx.dims[s + 1], w.padding_low, w.base_dilation, d.in_spatial[s])?;
            valid = cg.b.build_and(valid, v, "")?;
            coords[dn.input_spatial[s] as usize] = u;
        }
        let line_base = cg.b.build_int_nsw_mul(l, cg.const_i64(padded[n - 1] * c), "")?;
        for_loop(cg, "fill.x", cg.const_i64(0), cg.const_i64(padded[n - 1]), |x| {
            let w = &d.window[n - 1];
            let (v, u) = unpad(cg, x, w.padding_low, w.base_dilation, d.in_spatial[n - 1])?;
            let live = cg.b.build_and(valid, v, "")?;
            let row = cg.b.build_int_nsw_add(line_base, cg.b.build_int_nsw_mul(x, cg.const_i64(c), "")?, "")?;
            let row_ptr = cg.gep(elem, image, row)?;
            let copy_bb = cg.block("fill.copy");
            let zero_bb = cg.block("fill.zero");
            let done = cg.block("fill.done");
            cg.b.build_conditional_branch(live, copy_bb, zero_bb)?;
            cg.b.position_at_end(copy_bb);
            let mut coords = coords.clone();
            coords[dn.input_spatial[n - 1] as usize] = u;
            for_loop(cg, "fill.c", cg.const_i64(0), cg.const_i64(c), |ch| {
                env.e.scoped(|e| {
                    let mut at = coords.clone();
                    at[dn.input_feature as usize] = ch;
                    let v = e.gen_scalar(p.lhs, &Index::new(at))?;
                    let v = p.conv.operand(e, v, p.lhs_type)?;
                    cg.b.build_store(cg.gep(elem, row_ptr, ch)?, v)?;
                    Ok(())
                })
            })?;
            cg.b.build_unconditional_branch(done)?;
            cg.b.position_at_end(zero_bb);
            for_loop(cg, "fill.z", cg.const_i64(0), cg.const_i64(c), |ch| {
                cg.b.build_store(cg.gep(elem, row_ptr, ch)?, zero)?;
                Ok(())
            })?;
            cg.b.build_unconditional_branch(done)?;
            cg.b.position_at_end(done);
            Ok(())
        })
    })?;
    cg.b.build_return(None)?;
    if let Some(bb) = saved {
        cg.b.position_at_end(bb);
    }
    Ok(f)
}

/// `task(ctx, u0, u1)`: output lines `[u0, u1)` of all groups (unit = group x line).
fn emit_task<'ctx>(
    kc: &KernelContext<'_, 'ctx>,
    caps: &Captures<'ctx>,
    p: &Plan,
    uk: FunctionValue<'ctx>,
    table: PointerValue<'ctx>,
    name: &str,
) -> Result<FunctionValue<'ctx>> {
    let cg = kc.cg;
    let saved = cg.b.get_insert_block();
    let (f, u0, u1, mut env, scratch_image) = begin_task(kc, caps, name)?;
    let d = &p.d;
    let dn = &d.dn;
    let n = d.spatial_rank();
    let bl = p.bl;
    let nr = bl.nr();
    let es = p.conv.compute.byte_size() as i64;
    let elem = cg.value_type(p.conv.compute);
    let depth = p.taps * p.group_in;
    let n_strips = (p.group_out + nr - 1) / nr;
    let image = match p.image {
        Image::InPlace { slot } => env.ptrs[slot],
        Image::Copy { .. } => scratch_image,
    };
    let bp_bytes = n_strips * nr * depth * es;
    let bp = cg.scratch_alloc(bp_bytes, "scratch")?;
    let line_bytes = p.width * p.group_out * es;
    let line_scratch = match p.out {
        Out::Staged => Some(cg.scratch_alloc(line_bytes, "scratch")?),
        Out::Direct { .. } => None,
    };
    let out_ptr = env.ptrs[caps.out_slot];
    let mut line_sizes = vec![p.out_batch];
    line_sizes.extend_from_slice(&d.out_spatial[..n - 1]);
    let batch_group_size = if d.batch_groups > 1 { d.batch_in / d.batch_groups } else { 0 };
    let last_stride = d.window[n - 1].stride;

    scalar_loop(cg, "unit", u0, u1, |u| {
        let g = cg.b.build_int_signed_div(u, cg.const_i64(p.lines), "g")?;
        let line = cg.b.build_int_signed_rem(u, cg.const_i64(p.lines), "line")?;
        // Pack the group's kernel at the first unit of the range and of every group.
        let first = cg.b.build_int_compare(IntPredicate::EQ, u, u0, "")?;
        let new_group = cg.b.build_int_compare(IntPredicate::EQ, line, cg.const_i64(0), "")?;
        cg.if_then("pack", cg.b.build_or(first, new_group, "")?, || {
            scalar_loop(cg, "pack.b", cg.const_i64(0), cg.const_i64(n_strips), |js| {
                let first_col = cg.b.build_int_nsw_mul(js, cg.const_i64(nr), "")?;
                let dst = cg.gep(elem, bp, cg.b.build_int_nsw_mul(first_col, cg.const_i64(depth), "")?)?;
                let left = cg.b.build_int_nsw_sub(cg.const_i64(p.group_out), first_col, "")?;
                let valid = cg.call_intrinsic("llvm.smin", &[cg.i64().into()], &[left.into(), cg.const_i64(nr).into()])?.into_int_value();
                let strip = Strip { b: g, p0: first_col, valid, k0: cg.const_i64(0), depth: cg.const_i64(depth), w: nr, pairs: false };
                pack_strip(&env.ptrs, &mut env.e, &p.kernel, &p.conv, dst, &strip)
            })
        })?;
        let li = delinearize(cg, line, &line_sizes)?;
        let ob = li.dims[0];
        let n_in = if batch_group_size > 0 {
            cg.b.build_int_nsw_add(ob, cg.b.build_int_nsw_mul(g, cg.const_i64(batch_group_size), "")?, "")?
        } else {
            ob
        };
        let feature0 = if d.feature_groups > 1 { cg.b.build_int_nsw_mul(g, cg.const_i64(p.group_in), "")? } else { cg.const_i64(0) };
        let mut a_off = cg.b.build_int_nsw_add(cg.b.build_int_nsw_mul(n_in, cg.const_i64(p.pitches.batch), "")?, feature0, "")?;
        for s in 0..n - 1 {
            let pos = cg.b.build_int_nsw_mul(li.dims[s + 1], cg.const_i64(d.window[s].stride * p.pitches.spatial[s]), "")?;
            a_off = cg.b.build_int_nsw_add(a_off, pos, "")?;
        }
        let a_line = cg.gep(elem, image, a_off)?;
        let out_feature0 = cg.b.build_int_nsw_mul(g, cg.const_i64(p.group_out), "")?;
        let (c_line, ldc) = match (&p.out, line_scratch) {
            (Out::Direct { batch, spatial }, _) => {
                let mut off = cg.b.build_int_nsw_add(cg.b.build_int_nsw_mul(ob, cg.const_i64(*batch), "")?, out_feature0, "")?;
                #[allow(clippy::needless_range_loop)] // indexes several per-dimension lists
                for s in 0..n - 1 {
                    off = cg.b.build_int_nsw_add(off, cg.b.build_int_nsw_mul(li.dims[s + 1], cg.const_i64(spatial[s]), "")?, "")?;
                }
                (cg.gep(elem, out_ptr, off)?, spatial[n - 1])
            }
            (Out::Staged, Some(ls)) => (ls, p.group_out),
            (Out::Staged, None) => return Err(Error::Internal("staged convolution without scratch".into())),
        };
        let strips = (p.width + bl.mr - 1) / bl.mr;
        scalar_loop(cg, "ow", cg.const_i64(0), cg.const_i64(strips), |si| {
            // The last strip ends at the line's end (overlapping the one before), so every
            // strip has mr real pixels and reads only real image rows.
            let ow0 = cg.b.build_int_nsw_mul(si, cg.const_i64(bl.mr), "")?;
            let ow0 = cg.call_intrinsic("llvm.smin", &[cg.i64().into()], &[ow0.into(), cg.const_i64(p.width - bl.mr).into()])?.into_int_value();
            let a = cg.gep(elem, a_line, cg.b.build_int_nsw_mul(ow0, cg.const_i64(last_stride * p.pitches.spatial[n - 1]), "")?)?;
            let c = cg.gep(elem, c_line, cg.b.build_int_nsw_mul(ow0, cg.const_i64(ldc), "")?)?;
            scalar_loop(cg, "jr", cg.const_i64(0), cg.const_i64(n_strips), |js| {
                let first_col = cg.b.build_int_nsw_mul(js, cg.const_i64(nr), "")?;
                let b_ptr = cg.gep(elem, bp, cg.b.build_int_nsw_mul(first_col, cg.const_i64(depth), "")?)?;
                let cols = cg.call_intrinsic(
                    "llvm.smin",
                    &[cg.i64().into()],
                    &[cg.b.build_int_nsw_sub(cg.const_i64(p.group_out), first_col, "")?.into(), cg.const_i64(nr).into()],
                )?;
                let c_ptr = cg.gep(elem, c, first_col)?;
                let args = [
                    a.into(),
                    b_ptr.into(),
                    c_ptr.into(),
                    cg.const_i64(p.group_in).into(),
                    cg.const_i64(ldc).into(),
                    cg.const_i64(bl.mr).into(),
                    cols.into(),
                    cg.const_bool(false).into(),
                    table.into(),
                    cg.const_i64(p.taps).into(),
                ];
                cg.call_void(uk, &args)
            })
        })?;
        if let (Out::Staged, Some(ls)) = (&p.out, line_scratch) {
            let out = &kc.outputs[0];
            let out = IrArray { ptr: out_ptr, shape: out.shape.clone(), physical: out.physical.clone() };
            for_loop(cg, "store.x", cg.const_i64(0), cg.const_i64(p.width), |x| {
                for_loop(cg, "store.f", cg.const_i64(0), cg.const_i64(p.group_out), |fo| {
                    env.e.scoped(|e| {
                        let at = cg.b.build_int_nsw_add(cg.b.build_int_nsw_mul(x, cg.const_i64(p.group_out), "")?, fo, "")?;
                        let v = cg.b.build_load(elem, cg.gep(elem, ls, at)?, "")?;
                        let v = p.conv.finish(e, v)?;
                        let mut idx = vec![cg.const_i64(0); n + 2];
                        idx[dn.output_batch as usize] = ob;
                        idx[dn.output_feature as usize] = cg.b.build_int_nsw_add(out_feature0, fo, "")?;
                        for s in 0..n - 1 {
                            idx[dn.output_spatial[s] as usize] = li.dims[s + 1];
                        }
                        idx[dn.output_spatial[n - 1] as usize] = x;
                        out.store(cg, &Index::new(idx), v)
                    })
                })
            })?;
        }
        Ok(())
    })?;
    cg.scratch_free(bp, bp_bytes)?;
    if let Some(ls) = line_scratch {
        cg.scratch_free(ls, line_bytes)?;
    }
    cg.b.build_return(None)?;
    if let Some(bb) = saved {
        cg.b.position_at_end(bb);
    }
    Ok(f)
}

/// The strip height for lines of `width` pixels: the same number of strips as `mr` gives,
/// of equal height. A line whose width is not a multiple of the height ends with a strip
/// overlapping the one before (every strip has its full height of real pixels), which
/// computes the overlap twice: lenet's second convolution (8-pixel lines, AVX2's 6-row tile)
/// did 12 rows of work for 8, and 4-row strips do 8. Each output element is the same sum in
/// the same order whatever the height. Kept at `mr` where the runtime has no tile of the
/// equal height (its precompiled convolution would be lost for generated code).
fn equal_strips(simd_bytes: u32, mr: i64, nv: i64, width: i64) -> i64 {
    use hlojit_runtime::kernels::{conv::has_tile, gemm::Isa};
    let strips = (width + mr - 1) / mr.max(1);
    let even = (width + strips - 1) / strips.max(1);
    let isa = match simd_bytes {
        64 => Some(Isa::Avx512),
        32 => Some(Isa::Avx2Fma),
        _ => None,
    };
    let tiled = |m| isa.is_none_or(|isa| !has_tile(isa, mr, nv) || has_tile(isa, m, nv));
    if even < mr && tiled(even) {
        even
    } else {
        mr
    }
}

#[cfg(test)]
mod strip_tests {
    use super::equal_strips;

    #[test]
    fn strips_of_a_line_have_equal_height_where_a_tile_exists() {
        // AVX2, 16 output features (two vectors): 8-pixel lines in two 4-row strips.
        assert_eq!(equal_strips(32, 6, 2, 8), 4);
        // A multiple of the height, or one strip: unchanged.
        assert_eq!(equal_strips(32, 12, 1, 24), 12);
        assert_eq!(equal_strips(32, 6, 2, 6), 6);
        // No 5-row tile in the runtime: the precompiled 6-row one stays.
        assert_eq!(equal_strips(32, 6, 2, 10), 6);
    }
}
