//! Convolutions the runtime has precompiled (`hlojit_runtime::kernels::conv`): f32 input,
//! kernel and result read from and written to buffers, on an x86-64 target with AVX-512 or
//! AVX2 + FMA. The kernel then only fills a descriptor and calls the runtime instead of
//! generating (and having LLVM optimize) image fill, packing, tap micro-kernel and driver for
//! every module — tens of milliseconds of compile time per convolution. Same plan, same
//! blocking, same arithmetic as the generated path in `conv.rs`: the same bits.

use super::conv::{Out, Plan};
use super::dims::logical_strides;
use super::operand::{Captures, Source};
use super::precompiled::generated_forced;
use crate::codegen::context::Codegen;
use crate::codegen::runtime_abi::RuntimeFunction;
use crate::codegen::kernel::KernelContext;
use crate::error::Result;
use hlojit_runtime::kernels::conv::{has_tile, ConvF32, MAX_SPATIAL};
use hlojit_runtime::kernels::gemm::Isa;
use hlojit_runtime::ElementType;
use inkwell::values::IntValue;

/// The runtime variant for this target, if one does the convolution of `p`.
fn variant(cg: &Codegen, p: &Plan) -> Option<(Isa, RuntimeFunction)> {
    let f32s = p.lhs_type == ElementType::F32 && p.kernel.ty == ElementType::F32 && p.conv.out == ElementType::F32 && p.conv.compute == ElementType::F32;
    if !cg.x86 || !f32s || p.d.spatial_rank() > MAX_SPATIAL || generated_forced() {
        return None;
    }
    let (isa, f) = match cg.simd_bytes {
        64 => (Isa::Avx512, RuntimeFunction::ConvF32Avx512),
        32 if cg.avx2 && cg.fma => (Isa::Avx2Fma, RuntimeFunction::ConvF32Avx2),
        _ => return None,
    };
    let fits = p.bl.lanes == isa.lanes() && (p.depthwise || has_tile(isa, p.bl.mr, p.bl.nv));
    fits.then_some((isa, f))
}

/// Emits a call of the runtime's convolution when there is one for `p` and its input and
/// kernel are plain buffers; false otherwise (nothing emitted).
pub(super) fn emit_precompiled<'ctx>(kc: &KernelContext<'_, 'ctx>, caps: &Captures<'ctx>, p: &Plan) -> Result<bool> {
    let cg = kc.cg;
    let Some((_, f)) = variant(cg, p) else { return Ok(false) };
    let Out::Direct { batch: out_batch, spatial: out_spatial } = &p.out else { return Ok(false) };
    let Source::ConvKernel(km) = &p.kernel.source else { return Ok(false) };
    // Both operands must be buffers (not fused expressions) with plain strides.
    let strided = |id| -> Option<(usize, Vec<i64>)> {
        let slot = caps.slot_of(id)?;
        Some((slot, logical_strides(&caps.array_of(id)?.shape)?))
    };
    let (Some((in_slot, si)), Some((k_slot, sk))) = (strided(p.lhs), strided(km.id)) else { return Ok(false) };
    let d = &p.d;
    let dn = &d.dn;
    let n = d.spatial_rank();
    let per_dim = |f: &dyn Fn(usize) -> i64| -> [i64; MAX_SPATIAL] {
        let mut a = [0; MAX_SPATIAL];
        for (s, v) in a.iter_mut().enumerate().take(n) {
            *v = f(s);
        }
        a
    };
    let w = &d.window;
    let desc = ConvF32 {
        spatial: n as i64,
        batch: d.batch_in,
        features_in: d.features_in,
        group_in: p.group_in,
        group_out: p.group_out,
        feature_groups: d.feature_groups,
        batch_groups: d.batch_groups,
        in_size: per_dim(&|s| d.in_spatial[s]),
        out_size: per_dim(&|s| d.out_spatial[s]),
        window: per_dim(&|s| w[s].size),
        stride: per_dim(&|s| w[s].stride),
        pad_low: per_dim(&|s| w[s].padding_low),
        pad_high: per_dim(&|s| w[s].padding_high),
        base_dilation: per_dim(&|s| w[s].base_dilation),
        window_dilation: per_dim(&|s| w[s].window_dilation),
        reversed: per_dim(&|s| i64::from(w[s].window_reversal)),
        input: std::ptr::null(),
        in_batch: si[dn.input_batch as usize],
        in_feature: si[dn.input_feature as usize],
        in_spatial: per_dim(&|s| si[dn.input_spatial[s] as usize]),
        kernel: std::ptr::null(),
        kernel_in: sk[km.in_feature],
        kernel_out: sk[km.out_feature],
        kernel_spatial: per_dim(&|s| sk[km.spatial[s].0]),
        output: std::ptr::null_mut(),
        out_batch: *out_batch,
        out_spatial: per_dim(&|s| out_spatial[s]),
        mr: p.bl.mr,
        nv: p.bl.nv,
        depthwise: i64::from(p.depthwise),
    };
    let int = |ptr| cg.b.build_ptr_to_int(ptr, cg.i64(), "");
    let c = |v: i64| cg.const_i64(v);
    // The descriptor's fields in order (`ConvF32` is 64-bit fields throughout).
    let mut fields: Vec<IntValue<'ctx>> = [desc.spatial, desc.batch, desc.features_in, desc.group_in, desc.group_out, desc.feature_groups, desc.batch_groups]
        .into_iter()
        .map(c)
        .collect();
    for a in [desc.in_size, desc.out_size, desc.window, desc.stride, desc.pad_low, desc.pad_high, desc.base_dilation, desc.window_dilation, desc.reversed] {
        fields.extend(a.map(c));
    }
    fields.push(int(caps.ptrs[in_slot])?);
    fields.extend([c(desc.in_batch), c(desc.in_feature)]);
    fields.extend(desc.in_spatial.map(c));
    fields.push(int(caps.ptrs[k_slot])?);
    fields.extend([c(desc.kernel_in), c(desc.kernel_out)]);
    fields.extend(desc.kernel_spatial.map(c));
    fields.push(int(caps.ptrs[caps.out_slot])?);
    fields.push(c(desc.out_batch));
    fields.extend(desc.out_spatial.map(c));
    fields.extend([c(desc.mr), c(desc.nv), c(desc.depthwise)]);
    if fields.len() * 8 != std::mem::size_of::<ConvF32>() {
        return Err(crate::error::Error::Internal("convolution descriptor out of step with the runtime's".into()));
    }
    // Non-zero only when scratch memory ran out: the runtime has recorded the failure, which
    // the sequencing code collects after the kernel.
    cg.call_with_descriptor(f, &fields, "conv.desc")?;
    cg.note_kernel_may_fail();
    Ok(true)
}
