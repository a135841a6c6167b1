//! The kernel list: one entry per generated kernel, in the order the plan numbers them.

use crate::analysis::cost::kernel_cost;
use crate::codegen::function::KernelInfo;
use crate::codegen::plan::LoweringPlan;
use crate::hlo::{Instruction, Module, Opcode};
use std::fmt::Write;

/// The loops a kernel's output is walked in: dimensions from outermost to innermost, as the
/// output's layout orders them (the innermost is the contiguous one).
pub fn loop_nest(inst: &Instruction) -> String {
    let Some(shape) = inst.shape.array_leaves().first().copied().cloned() else { return "no array output".into() };
    let layout = shape.layout_or_default();
    let loops: Vec<String> = layout.minor_to_major.iter().rev().map(|&d| format!("d{d}={}", shape.dims.get(d as usize).copied().unwrap_or(0))).collect();
    let leaves = inst.shape.array_leaves().len();
    let more = if leaves > 1 { format!(" (and {} more outputs)", leaves - 1) } else { String::new() };
    if loops.is_empty() {
        format!("{shape}: one element{more}")
    } else {
        format!("{shape}: {}{more}", loops.join(" > "))
    }
}

/// How the sequencing code runs the kernel.
pub fn threads(info: &KernelInfo, ops: &[Opcode]) -> String {
    // GEMM, convolution, split-reduction and RNG emitters hand their own pieces to the pool.
    let splits_itself = ops.iter().any(|o| matches!(o, Opcode::Dot | Opcode::Convolution | Opcode::Reduce | Opcode::RngBitGenerator));
    match info.parallel_split() {
        None if splits_itself => "its emitter splits large work across the thread pool itself".into(),
        Some((extent, min_chunk)) => {
            let pool = hlojit_runtime::symbols::hlojit_rt_num_threads();
            let tasks = (extent + min_chunk - 1) / min_chunk;
            format!(
                "parallel: {extent} iterations of the outermost loop in chunks of >= {min_chunk}, up to {} threads (~{:.1} us of work)",
                tasks.min(pool),
                info.work_ns / 1000.0
            )
        }
        None => format!("1 thread ({} elements, ~{:.1} us of work)", info.elements, info.work_ns / 1000.0),
    }
}

/// The kernel list as text.
pub fn report(module: &Module, plan: &LoweringPlan, infos: &[KernelInfo]) -> String {
    let mut out = String::new();
    let (mut bytes, mut flops) = (0i64, 0i64);
    let _ = writeln!(out, "# kernels of {} ({} kernels)", module.name, plan.kernels.len());
    for (job, info) in plan.kernels.iter().zip(infos) {
        let fp = &plan.functions[job.function];
        let comp = module.computation(fp.comp);
        let inst = comp.get(job.inst);
        let cost = kernel_cost(module, comp, inst);
        bytes = bytes.saturating_add(cost.bytes);
        flops = flops.saturating_add(cost.flops);
        let kind = inst.attrs.fusion_kind.map(|k| format!(" {}", k.name())).unwrap_or_default();
        let _ = writeln!(out, "\n{} ({} {}{kind}, in {})", job.name, inst.opcode.name(), inst.name, fp.name);
        if inst.opcode == Opcode::Fusion {
            let _ = writeln!(out, "  fuses:   {}", cost.ops_text());
        }
        let _ = writeln!(out, "  loops:   {}", loop_nest(inst));
        let _ = writeln!(out, "  threads: {}", threads(info, &cost.ops));
        if info.streamed {
            let _ = writeln!(out, "  stores:  non-temporal (the kernel moves more than the {} MiB last-level cache)", crate::codegen::streaming_stores::MIN_OUTPUT_BYTES >> 20);
        }
        let _ = writeln!(out, "  cost:    {} bytes, {} flops (estimated from shapes)", cost.bytes, cost.flops);
    }
    let _ = writeln!(out, "\n# total per run (loop bodies counted once): {bytes} bytes, {flops} flops");
    out
}
