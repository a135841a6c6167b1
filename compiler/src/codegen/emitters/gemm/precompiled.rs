//! GEMMs the runtime has precompiled (`hlojit_runtime::kernels::gemm`): f32 operands, or bf16
//! ones (widened exactly while packing, as the generated packing does), read from buffers, an
//! f32 result stored directly, on an x86-64 target with AVX-512 or AVX2 + FMA; bf16 operands
//! multiplied as pairs (`vdpbf16ps`, the generated pair kernel's steps) on AVX-512 targets
//! with AVX512-BF16; and s8 operands with an s32 result on AVX2 (`vpmaddwd` on i16 pairs) and
//! on AVX-512 targets with AVX512-VNNI (`vpdpbusd` on byte quads; integer sums are the same
//! bits in any order). The kernel then only fills a descriptor and calls the runtime, instead of generating (and
//! having LLVM optimize) micro-kernel, packing and driver for every module — most of the
//! compile time of a module with a dot. Same blocking, same arithmetic: the same bits.

use super::config::Blocking;
use super::driver::{Gemm, OutputMode};
use super::microkernel::set_vector_attributes;
use super::operand::{Captures, GroupMap, Source};
use crate::codegen::array::IrArray;
use crate::codegen::context::Codegen;
use crate::codegen::emitters::dot_epilogue::Epilogue;
use crate::codegen::kernel::KernelContext;
use crate::error::Error;
use crate::codegen::runtime_abi::RuntimeFunction;
use crate::error::Result;
use hlojit_runtime::kernels::gemm::{has_tile, Isa, Operands};
use hlojit_runtime::ElementType;
use inkwell::values::{FunctionValue, IntValue};

/// Set (to anything but `0`) to generate every GEMM as before, for comparisons.
pub const GENERATED_GEMM_VARIABLE: &str = "HLOJIT_GENERATED_GEMM";

pub fn generated_forced() -> bool {
    std::env::var_os(GENERATED_GEMM_VARIABLE).is_some_and(|v| v != "0")
}

/// The runtime variant that computes `g` for this target, if one does, and its block sizes.
/// bf16 operands on a target with AVX512-BF16 (`g.pairs`) are multiplied as pairs there too;
/// s8 ones on a target with AVX512-VNNI as quads, in blocks of their own (the generated GEMM
/// multiplies s8 as s32 in `g.blocking`'s); both on AMX tiles where the target also has AMX.
fn variant(cg: &Codegen, g: &Gemm) -> Option<(RuntimeFunction, Blocking)> {
    use ElementType::{BF16, F32, S32, S8};
    let strided = |s: &Source| matches!(s, Source::Strided { .. });
    let result = (g.conv.compute, g.conv.out);
    let operands = match (g.a.ty, g.b.ty, result) {
        (F32, F32, (F32, F32)) => Operands::F32,
        (BF16, BF16, (F32, F32)) if g.pairs => Operands::Bf16Pairs,
        (BF16, BF16, (F32, F32)) => Operands::Bf16,
        (S8, S8, (S32, S32)) if cg.simd_bytes == 64 && cg.avx512_vnni => Operands::S8Quads,
        (S8, S8, (S32, S32)) => Operands::S8,
        _ => return None,
    };
    if !cg.x86 || !strided(&g.a.source) || !strided(&g.b.source) || !matches!(g.out, OutputMode::Direct { .. }) {
        return None;
    }
    let avx2_fma = cg.avx2 && cg.fma;
    let (isa, f) = match (cg.simd_bytes, operands) {
        (64, Operands::F32) => (Isa::Avx512, RuntimeFunction::GemmF32Avx512),
        (64, Operands::Bf16) => (Isa::Avx512, RuntimeFunction::GemmBf16Avx512),
        // `g.pairs` is set only for AVX-512 targets with AVX512-BF16 (and AVX-512BW, which
        // every CPU with AVX512-BF16 has).
        // With AMX the runtime's tile GEMM, which falls back to the pair kernel (this
        // descriptor's tile) where the process cannot use AMX.
        (64, Operands::Bf16Pairs) if cg.amx_bf16 => (Isa::Avx512, RuntimeFunction::GemmBf16Amx),
        (64, Operands::Bf16Pairs) => (Isa::Avx512, RuntimeFunction::GemmBf16PairsAvx512),
        (32, Operands::F32) if avx2_fma => (Isa::Avx2Fma, RuntimeFunction::GemmF32Avx2),
        (32, Operands::Bf16) if avx2_fma => (Isa::Avx2Fma, RuntimeFunction::GemmBf16Avx2),
        (32, Operands::S8) if avx2_fma => (Isa::Avx2Fma, RuntimeFunction::GemmS8Avx2),
        (64, Operands::S8Quads) if cg.amx_int8 => (Isa::Avx512, RuntimeFunction::GemmS8Amx),
        (64, Operands::S8Quads) => (Isa::Avx512, RuntimeFunction::GemmS8VnniAvx512),
        _ => return None,
    };
    let bl = if operands == Operands::S8Quads { Blocking::s8_quads(64, g.n) } else { g.blocking };
    (bl.lanes == isa.lanes() && has_tile(isa, operands, bl.mr, bl.nv) && !generated_forced()).then_some((f, bl))
}

/// Emits a call of the runtime's GEMM when there is one for `g`; false otherwise (nothing
/// emitted).
pub fn emit_precompiled<'ctx>(kc: &KernelContext<'_, 'ctx>, caps: &Captures<'ctx>, g: &Gemm) -> Result<bool> {
    let cg = kc.cg;
    let Some((f, bl)) = variant(cg, g) else { return Ok(false) };
    let (Source::Strided { slot: sa, batch: a_batch, row: a_row, col: a_col }, Source::Strided { slot: sb, batch: b_batch, row: b_row, col: b_col }, OutputMode::Direct { batch: c_batch, row: c_row }) =
        (&g.a.source, &g.b.source, &g.out)
    else {
        return Ok(false);
    };
    // One numbering of the batches for all three (`batch_walk.rs`: they are split alike).
    let inner_count = c_batch.inner_count;
    if a_batch.inner_count != inner_count || b_batch.inner_count != inner_count {
        return Ok(false);
    }
    let int = |p| cg.b.build_ptr_to_int(p, cg.i64(), "");
    let c = |v: i64| cg.const_i64(v);
    // A fused epilogue: a generated region function and the captures it reads.
    let (epilogue, epilogue_ctx, epilogue_rows) = match &g.epilogue {
        Some((ep, map)) => {
            let ctx = caps.store(cg, &[c(0), c(0)])?;
            let function = emit_region_function(kc, caps, ep, map)?;
            (int(function.as_global_value().as_pointer_value())?, int(ctx)?, c(i64::from(ep.rows.is_some())))
        }
        None => (c(0), c(0), c(0)),
    };
    // The fields of `GemmF32`, in order.
    let fields: [IntValue<'ctx>; 26] = [
        c(g.batch),
        c(inner_count),
        c(g.m),
        c(g.n),
        c(g.k),
        int(caps.ptrs[*sa])?,
        c(a_batch.outer),
        c(a_batch.inner),
        c(*a_row),
        c(*a_col),
        int(caps.ptrs[*sb])?,
        c(b_batch.outer),
        c(b_batch.inner),
        c(*b_row),
        c(*b_col),
        int(caps.ptrs[caps.out_slot])?,
        c(c_batch.outer),
        c(c_batch.inner),
        c(*c_row),
        c(bl.mr),
        c(bl.nv),
        c(bl.kc),
        c(bl.nc),
        epilogue,
        epilogue_ctx,
        epilogue_rows,
    ];
    // The status is non-zero only when scratch memory ran out: the runtime has then recorded
    // the failure, which the sequencing code collects after the kernel.
    cg.call_with_descriptor(f, &fields, "gemm.desc")?;
    cg.note_kernel_may_fail();
    Ok(true)
}

/// `void region(ptr ctx, i64 b, i64 r0, i64 r1, i64 c0, i64 c1)`: the epilogue the runtime's
/// GEMM calls on each finished region of the result (`GemmF32::epilogue`).
fn emit_region_function<'ctx>(kc: &KernelContext<'_, 'ctx>, caps: &Captures<'ctx>, ep: &Epilogue, map: &GroupMap) -> Result<FunctionValue<'ctx>> {
    let cg = kc.cg;
    let saved = cg.b.get_insert_block();
    let i64t = cg.i64().into();
    let name = format!("{}.epilogue", cg.function().get_name().to_string_lossy());
    let f = cg.add_function(&name, cg.fn_type(None, &[cg.ptr().into(), i64t, i64t, i64t, i64t, i64t]), false);
    set_vector_attributes(cg, f);
    cg.b.position_at_end(cg.llvm.append_basic_block(f, "entry"));
    let param = |i: u32| f.get_nth_param(i).ok_or_else(|| Error::Internal("epilogue parameter".into()));
    let ctx = param(0)?.into_pointer_value();
    let [b, r0, r1, c0, c1] = [param(1)?, param(2)?, param(3)?, param(4)?, param(5)?].map(|v| v.into_int_value());
    let mut env = caps.load(kc, ctx)?;
    let out = &kc.outputs[0];
    let out = IrArray { ptr: env.ptrs[caps.out_slot], shape: out.shape.clone(), physical: out.physical.clone() };
    ep.emit_region(&mut env.e, &out, map, b, r0, r1, c0, c1)?;
    cg.b.build_return(None)?;
    if let Some(bb) = saved {
        cg.b.position_at_end(bb);
    }
    Ok(f)
}
