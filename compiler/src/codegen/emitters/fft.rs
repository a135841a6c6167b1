//! HLO `fft`: the runtime's FFT kernel (`hlojit_rt_fft`) on row-major staging of the operand
//! and the result. The transform runs over the innermost `fft_length.len()` dimensions; the
//! outer ones are a batch. The kernel parallelizes internally, so this kernel is not split.

use super::staging::{finish_output, release, stage_operand, stage_output};
use crate::codegen::runtime_abi::RuntimeFunction;
use crate::codegen::kernel::KernelContext;
use crate::error::{Error, Result};
use crate::hlo::attributes::FftType;
use hlojit_runtime::kernels::fft as rt;
use hlojit_runtime::ElementType;

/// Emits the FFT at the kernel's root.
pub fn emit_fft(kc: &KernelContext) -> Result<i64> {
    let cg = kc.cg;
    let inst = kc.comp.get(kc.root);
    let fail = |why: &str| Error::Unsupported(format!("{}: fft {why}", inst.name));
    let fft_type = inst.attrs.fft_type.ok_or_else(|| fail("without fft_type"))?;
    let lengths = inst.attrs.fft_length.clone().ok_or_else(|| fail("without fft_length"))?;
    if lengths.is_empty() || lengths.len() > 3 {
        return Err(fail("over other than 1 to 3 dimensions"));
    }
    let operand = *inst.operands.first().ok_or_else(|| fail("without an operand"))?;
    let in_shape = kc.comp.get(operand).shape.as_array().ok_or_else(|| fail("on a tuple"))?.clone();
    let out_shape = inst.shape.as_array().ok_or_else(|| fail("with a tuple result"))?.clone();
    let rank = lengths.len();
    if in_shape.rank() < rank || out_shape.rank() != in_shape.rank() {
        return Err(fail("whose operand rank does not fit fft_length"));
    }
    let double = match (fft_type, in_shape.element_type) {
        (FftType::Rfft, ElementType::F32) | (_, ElementType::C64) => false,
        (FftType::Rfft, ElementType::F64) | (_, ElementType::C128) => true,
        (_, t) => return Err(cg.unsupported_type(&format!("fft {fft_type}"), t)),
    };
    let batch: i64 = out_shape.dims[..out_shape.rank() - rank].iter().product();
    if batch == 0 || out_shape.element_count() == 0 {
        return Ok(1);
    }
    let code = match fft_type {
        FftType::Fft => rt::FFT,
        FftType::Ifft => rt::IFFT,
        FftType::Rfft => rt::RFFT,
        FftType::Irfft => rt::IRFFT,
    };

    let input = stage_operand(kc, operand)?;
    let output = stage_output(kc, 0)?;
    let len_array = cg.entry_alloca(cg.i64().array_type(rank as u32).into(), "fft.lengths")?;
    for (i, &l) in lengths.iter().enumerate() {
        let p = cg.gep(cg.i64().into(), len_array, cg.const_i64(i as i64))?;
        cg.b.build_store(p, cg.const_i64(l))?;
    }
    let i32t = cg.i32();
    let f = cg.runtime(RuntimeFunction::Fft)?;
    cg.call(
        f,
        &[
            input.array.ptr.into(),
            output.array.ptr.into(),
            i32t.const_int(code as u64, false).into(),
            i32t.const_int(double as u64, false).into(),
            cg.const_i64(batch).into(),
            cg.const_i64(rank as i64).into(),
            len_array.into(),
        ],
    )?;
    release(kc, input)?;
    finish_output(kc, output, 0)?;
    Ok(1)
}
