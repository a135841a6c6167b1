//! The thread cost model: whether a kernel's work pays for handing it to the thread pool.
//!
//! A kernel's single-thread time is estimated from its cost (`analysis::cost`): the bytes it
//! moves at one core's streaming bandwidth, plus its arithmetic at one core's vector rate, with
//! transcendental functions (exp, tanh, log, ...: polynomial evaluations of a dozen or more
//! operations per element) weighted by their length. A kernel is split only when that time is
//! many times the price of a dispatch, and then into chunks that each carry a grain of time.
//!
//! The dispatch price, criterion `thread_dispatch` in benches/hlojit.rs on this project's Zen 3
//! (AVX2, 2 cores, 2.45 GHz) while six other sessions kept both cores busy: handing two chunks
//! of an empty kernel to `hlojit_rt_parallel_for` costs 0.72-0.83 us against 19-39 ns for calling
//! it; there the helper almost never starts in time, so that is the spawn alone (the calling
//! thread runs both chunks). On an idle machine waking a parked helper adds a futex wake and a
//! context switch, a few microseconds: DISPATCH_NS_MEASURED plans with 3 us. Splitting a kernel
//! of T ns over two threads saves at most T / 2 - dispatch, so kernels below SPLIT_MIN_NS (a
//! 256 KB memset, ~25 us: a 1000-step scan's output initialization, which under load took
//! milliseconds when split) stay on the calling thread.
//! The old rule counted output elements (32,768), which split cheap stores and kept expensive
//! elementwise chains of the same size serial alike.

use crate::analysis::cost::KernelCost;
use crate::hlo::{Computation, Instruction, Opcode};

/// A core's streaming bandwidth, bytes per ns (this machine: ~10 GB/s for one thread's
/// read + write streams; the whole machine's triad measures 11-12 GB/s).
const BYTES_PER_NS: f64 = 10.0;
/// Vectorized elementwise arithmetic of one core, operations per ns: 8 f32 lanes, two vector
/// pipes at 2.45 GHz (39 per ns), about half of that once loads, stores, selects and integer
/// work share the pipes.
const FLOPS_PER_NS: f64 = 16.0;
/// Dots and convolutions run on fused multiply-adds near the FMA peak (two 8-lane FMAs per
/// cycle: 78 flops per ns at 2.45 GHz; taken at about half).
const MATMUL_FLOPS_PER_NS: f64 = 32.0;
/// Operations per element of a transcendental function (XLA's rational tanh is 13, exp 15-20,
/// log, erf and pow more).
const TRANSCENDENTAL_OPS: f64 = 16.0;
/// The price of one dispatch planned with (see the module comment).
pub const DISPATCH_NS_MEASURED: f64 = 3_000.0;
/// Split only work of at least this many ns on one thread: ~10 dispatches, so that even
/// the best case (two threads, both on time) gains 4 of them and a late helper costs at most a
/// tenth.
pub const SPLIT_MIN_NS: f64 = 10.0 * DISPATCH_NS_MEASURED;
/// Each chunk carries at least this much time, so that chunk claims stay rare next to the work.
pub const GRAIN_NS: f64 = 10_000.0;

/// The bytes a kernel touches: its cost's bytes, except that a kernel of elemental ops only
/// (a loop fusion) reads at most one element of each operand per index of its loop, so a step
/// of a scan reading its slice of a stacked operand is charged for the slice, not the stack.
/// The loop of a multi-output fusion is its largest output's (the outputs share the loop).
pub fn touched_bytes(comp: &Computation, inst: &Instruction, cost: &KernelCost) -> i64 {
    if !cost.ops.iter().all(|o| o.is_elemental()) {
        return cost.bytes;
    }
    let outputs: i64 = inst.shape.array_leaves().iter().map(|a| a.element_count()).max().unwrap_or(0);
    let written: i64 = inst.shape.array_leaves().iter().map(|a| a.element_count().saturating_mul(a.element_type.byte_size() as i64)).sum();
    let read = inst
        .operands
        .iter()
        .flat_map(|&o| comp.get(o).shape.array_leaves().into_iter().cloned().collect::<Vec<_>>())
        .map(|a| {
            let size = a.element_type.byte_size() as i64;
            a.element_count().min(outputs).saturating_mul(size)
        })
        .fold(0i64, i64::saturating_add);
    cost.bytes.min(written.saturating_add(read))
}

/// The estimated time of the whole kernel on one thread, in ns. `work_elements` is the
/// emitter's own count of the elements it walks when that differs from the output (a
/// reduction's input, a dot's multiply-adds / 8), which bounds the arithmetic from below.
pub fn single_thread_ns(cost: &KernelCost, bytes: i64, elements: i64) -> f64 {
    let matmul = cost.ops.iter().any(|o| matches!(o, Opcode::Dot | Opcode::Convolution));
    // Elementwise ops expensive for every type (not divide, whose cost is a float's only).
    let transcendental = cost.ops.iter().filter(|o| o.is_elementwise() && o.is_expensive(false)).count() as f64;
    let memory = bytes as f64 / BYTES_PER_NS;
    let arithmetic = if matmul {
        cost.flops as f64 / MATMUL_FLOPS_PER_NS
    } else {
        // Each transcendental op is counted once per element in `flops`; weigh it by its length.
        let per_element = transcendental * (TRANSCENDENTAL_OPS - 1.0);
        (cost.flops as f64 + per_element * elements as f64) / FLOPS_PER_NS
    };
    // The two overlap on an out-of-order core: the longer one bounds the time.
    memory.max(arithmetic).max(elements as f64 / FLOPS_PER_NS)
}

/// How a loop kernel whose every element costs `ops` elementwise operations, of which
/// `transcendentals` are transcendental functions, and moves `bytes` to or from memory
/// divides its time on one core by this model: memory time over arithmetic time (above 1:
/// bound by memory).
pub fn memory_over_arithmetic(ops: usize, transcendentals: usize, bytes: f64) -> f64 {
    let arithmetic = (ops as f64 + transcendentals as f64 * (TRANSCENDENTAL_OPS - 1.0)) / FLOPS_PER_NS;
    (bytes / BYTES_PER_NS) / arithmetic.max(f64::MIN_POSITIVE)
}

/// `(extent, min_chunk)` when a kernel of `extent` parallel iterations and `ns` estimated
/// single-thread time should run on the thread pool in chunks of at least `min_chunk`
/// iterations; `None` when it stays on the calling thread.
pub fn split(extent: i64, ns: f64) -> Option<(i64, i64)> {
    if extent <= 1 || ns < SPLIT_MIN_NS {
        return None;
    }
    let per_iteration = ns / extent as f64;
    let min_chunk = (GRAIN_NS / per_iteration).ceil().max(1.0) as i64;
    Some((extent, min_chunk.min(extent)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(bytes: i64, flops: i64, ops: &[Opcode]) -> KernelCost {
        KernelCost { bytes, flops, ops: ops.to_vec() }
    }

    #[test]
    fn a_scan_output_initialization_stays_on_the_calling_thread() {
        // rnn_scan's f32[1000,1,64] of zeros: 256 KB of stores, 64,000 elements (the old
        // element rule split it).
        let c = cost(256_000, 0, &[Opcode::Constant, Opcode::Broadcast]);
        let ns = single_thread_ns(&c, c.bytes, 64_000);
        assert!(ns < SPLIT_MIN_NS, "{ns}");
        assert_eq!(split(1000, ns), None);
    }

    #[test]
    fn expensive_elementwise_work_splits_where_cheap_work_of_its_size_does_not() {
        // f32[32768]: 256 KB in and out either way, but tanh is a polynomial per element.
        let tanh = single_thread_ns(&cost(262_144, 32_768, &[Opcode::Tanh]), 262_144, 32_768);
        let negate = single_thread_ns(&cost(262_144, 32_768, &[Opcode::Negate]), 262_144, 32_768);
        assert!(tanh > negate);
        assert!(split(128, tanh).is_some(), "{tanh}");
        assert!(split(128, negate).is_none(), "{negate}");
        // A scan step's f32[64,256] tanh stays on the calling thread.
        assert!(split(64, single_thread_ns(&cost(131_072, 16_384, &[Opcode::Tanh]), 131_072, 16_384)).is_none());
    }

    #[test]
    fn a_layernorm_is_bound_by_memory_and_gelu_by_arithmetic() {
        // Per element: layernorm reads and writes an f32 with a handful of operations; gelu
        // does as many plus a tanh; Adam reads four arrays and writes three with a dozen
        // operations and a sqrt.
        let layernorm = memory_over_arithmetic(5, 0, 8.0);
        let gelu = memory_over_arithmetic(8, 1, 8.0);
        let adam = memory_over_arithmetic(14, 1, 28.0);
        assert!(layernorm > 2.0, "{layernorm}");
        assert!(gelu < 1.0, "{gelu}");
        assert!(adam > 1.0 && adam < 2.0, "{adam}");
    }

    #[test]
    fn a_scan_step_is_charged_for_its_slice_not_the_stack() {
        let m = crate::hlo::text::parse_module(
            "HloModule m\nf { s = f32[200,32,256] parameter(0)  i = s32[] parameter(1)  z = s32[] constant(0)\n d = f32[1,32,256] dynamic-slice(s, i, z, z), dynamic_slice_sizes={1,32,256}\n ROOT t = f32[1,32,256] tanh(d) }\nENTRY e { s = f32[200,32,256] parameter(0)  i = s32[] parameter(1)\n ROOT k = f32[1,32,256] fusion(s, i), kind=kLoop, calls=f }\n",
        )
        .unwrap();
        let comp = m.entry_computation();
        let inst = comp.root_instruction();
        let c = crate::analysis::cost::kernel_cost(&m, comp, inst);
        assert!(c.bytes > 6_000_000);
        // The slice read (32 KB), the index, and the result (32 KB).
        assert_eq!(touched_bytes(comp, inst, &c), 2 * 8192 * 4 + 4);
    }

    #[test]
    fn big_streams_split_in_chunks_of_a_grain() {
        // gelu over 16M f32: 128 MB moved.
        let ns = single_thread_ns(&cost(134_217_728, 16 << 20, &[Opcode::Multiply, Opcode::Tanh]), 134_217_728, 16 << 20);
        let (extent, chunk) = split(4096, ns).expect("splits");
        assert_eq!(extent, 4096);
        assert!(chunk >= 1 && (chunk as f64) * ns / 4096.0 >= GRAIN_NS);
        // One iteration never splits.
        assert_eq!(split(1, ns), None);
    }
}
