//! Non-temporal ("streaming") stores for loop kernels whose output is far larger than the
//! last-level cache.
//!
//! A plain store first reads its cache line from memory (write-allocate), so a kernel that
//! reads one array and writes another of the same size moves three bytes for every two it
//! counts; a non-temporal store writes whole lines past the caches and moves two. Once the
//! output is larger than the last-level cache, nothing is lost by bypassing it: by the time
//! the kernel ends, its first lines have been evicted by its later ones, and whoever reads the
//! output reads it from memory either way. XLA:CPU's loop emitter does not do this; it is what
//! STREAM-class copies (glibc's large `memcpy`) do.
//!
//! LLVM's loop vectorizer only widens a `!nontemporal` store it can prove aligned to the
//! vector, which it never can for an element store, so the kernel computes each span of
//! elements into a small staging buffer (the computation stays an ordinary vectorizable
//! loop) and [`stream_copy`] moves the span out with explicit aligned vector stores.
//! Non-temporal stores are weakly ordered: the kernel ends with an `sfence` so that whoever
//! the runtime tells the kernel is done sees them.

use super::array::IrArray;
use super::context::Codegen;
use super::index::Index;
use super::kernel::KernelContext;
use super::loops::{outer_dimension, Nest};
use crate::error::Result;
use crate::hlo::InstrId;
use hlojit_runtime::{ElementType, Layout};
use inkwell::values::{BasicValue, InstructionValue, IntValue, PointerValue};

/// Outputs at least this large are streamed: the size of the last-level cache of the
/// machines this runs on (32 MiB on the Zen 3 and Zen 4 hosts), so that the output no longer
/// fits beside the inputs it is computed from.
pub const MIN_OUTPUT_BYTES: i64 = 32 << 20;

/// Elements a loop kernel computes into its staging buffer before streaming them out: 4 KiB
/// of f32, an eighth of the L1 data cache, so the buffer stays in L1 beside the inputs.
pub const STAGING_ELEMENTS: i64 = 1024;

/// Whether the kernel's stores to `outs` should be streamed: an x86 target (where `sfence`
/// orders them), 4- or 8-byte elements in untiled layouts of one shape, outputs of at least
/// [`MIN_OUTPUT_BYTES`] together, and a computation bound by memory ([`memory_bound`]).
pub fn applies(kc: &KernelContext, outs: &[IrArray]) -> bool {
    let Some(first) = outs.first() else { return false };
    let total: i64 = outs.iter().map(|o| o.byte_size()).sum();
    outs.iter().all(|o| can_stream_to(kc, o, &[4, 8]) && o.shape.dims == first.shape.dims && o.shape.layout_or_default() == first.shape.layout_or_default())
        && total >= MIN_OUTPUT_BYTES
        && memory_bound(kc, first.shape.element_count(), outs)
}

/// Whether the kernel's target can stream stores to `out`: x86 (where `sfence` orders them)
/// with vectors of at least 16 bytes, an untiled layout, and elements of one of
/// `element_bytes` sizes.
pub fn can_stream_to(kc: &KernelContext, out: &IrArray, element_bytes: &[usize]) -> bool {
    kc.cg.x86 && kc.cg.simd_bytes >= 16 && element_bytes.contains(&out.element_type().byte_size()) && out.shape.layout_or_default().tiles.is_empty()
}

/// Memory time must exceed arithmetic time by this factor ([`memory_bound`]): the staging
/// copy adds arithmetic of its own, and the model is rough. An Adam update (seven arrays, a
/// sqrt and a division per element: 1.5 by the model) measured no faster streamed on the Zen 3
/// — on one core its arithmetic and its memory traffic take about as long — while a layernorm
/// (2.6) gained.
const MEMORY_MARGIN: f64 = 2.0;

/// Whether the work per output element is bound by memory on one core by the thread cost
/// model (`thread_cost::memory_over_arithmetic`) by [`MEMORY_MARGIN`]: the elementwise ops
/// evaluated at every element (transcendentals weighed by their length) against the bytes each
/// element reads from full-size inputs and writes. A transcendental per element of a kernel
/// that reads and writes one array (gelu's tanh, softmax's exp) makes it bound by its
/// arithmetic on these cores, and the staging copy would only add to the bound that matters.
/// Values computed once per row (a layernorm's rsqrt of the variance) have fewer elements and
/// do not count.
fn memory_bound(kc: &KernelContext, elements: i64, outs: &[IrArray]) -> bool {
    let mut bytes: f64 = outs.iter().map(|o| o.element_type().byte_size() as f64).sum();
    let (mut ops, mut transcendentals) = (0, 0);
    let mut stack: Vec<InstrId> = match kc.comp.get(kc.root) {
        r if r.opcode == crate::hlo::Opcode::Tuple => r.operands.clone(),
        _ => vec![kc.root],
    };
    let mut seen = std::collections::HashSet::new();
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        let inst = kc.comp.get(id);
        let full = inst.shape.as_array().filter(|a| a.element_count() == elements);
        if kc.bindings.contains_key(&id) || inst.opcode == crate::hlo::Opcode::Parameter {
            bytes += full.map_or(0.0, |a| a.element_type.byte_size() as f64);
            continue;
        }
        if full.is_some() && inst.opcode.is_elementwise() {
            ops += 1;
            transcendentals += usize::from(inst.opcode.is_expensive(false));
        }
        stack.extend(inst.operands.iter().copied());
    }
    super::thread_cost::memory_over_arithmetic(ops, transcendentals, bytes) >= MEMORY_MARGIN
}

/// Whether the dimensions `inner` (a set of dimensions of an array of `dims` in `layout`)
/// are the most-minor ones of the layout, ignoring dimensions of size 1: then one index of
/// the other dimensions addresses a contiguous span of the array.
pub fn is_minor_suffix(dims: &[i64], layout: &Layout, inner: &[usize]) -> bool {
    let order: Vec<usize> = layout.minor_to_major.iter().map(|&d| d as usize).filter(|&d| dims[d] != 1).collect();
    let count = order.iter().filter(|d| inner.contains(d)).count();
    order[..count].iter().all(|d| inner.contains(d))
}

/// A staging buffer of [`STAGING_ELEMENTS`] elements of `ty` in the kernel's stack frame.
pub fn staging_buffer<'ctx>(cg: &Codegen<'ctx>, ty: ElementType) -> Result<PointerValue<'ctx>> {
    use inkwell::types::BasicType;
    let array = cg.memory_type(ty).array_type(STAGING_ELEMENTS as u32);
    let ptr = cg.entry_alloca(array.into(), "stream.staging")?;
    if let Some(alloca) = ptr.as_instruction() {
        // Aligned to a cache line so that the copy's loads do not straddle lines needlessly.
        let _ = alloca.set_alignment(64);
    }
    Ok(ptr)
}

/// Copies `count` elements of `ty` from `src` to `dst` (which do not overlap): plain stores
/// until `dst` reaches a vector boundary, whole vectors with non-temporal stores, plain stores
/// for the rest. Bits are copied as integers, so every value (NaN payloads too) arrives as is.
pub fn stream_copy<'ctx>(cg: &Codegen<'ctx>, ty: ElementType, src: PointerValue<'ctx>, dst: PointerValue<'ctx>, count: IntValue<'ctx>) -> Result<()> {
    let size = ty.byte_size() as i64;
    let vector = i64::from(cg.simd_bytes.clamp(16, 64));
    let lanes = vector / size;
    let it = cg.int_type(size as u32 * 8);
    let vt = it.vec_type(lanes as u32);
    let b = &cg.b;
    // Elements before the first vector boundary of dst (dst is element-aligned).
    let address = b.build_ptr_to_int(dst, cg.i64(), "")?;
    let misaligned = b.build_and(address, cg.const_i64(vector - 1), "")?;
    let to_boundary = b.build_and(b.build_int_sub(cg.const_i64(vector), misaligned, "")?, cg.const_i64(vector - 1), "")?;
    let head = b.build_int_unsigned_div(to_boundary, cg.const_i64(size), "")?;
    let head = cg.call_intrinsic("llvm.smin", &[cg.i64().into()], &[head.into(), count.into()])?.into_int_value();
    let vectors = b.build_int_signed_div(b.build_int_nsw_sub(count, head, "")?, cg.const_i64(lanes), "")?;
    let body_end = b.build_int_nsw_add(head, b.build_int_nsw_mul(vectors, cg.const_i64(lanes), "")?, "")?;

    // Head and tail copy fewer elements than a vector holds: kept scalar loops (see
    // `keep_scalar`), they cost LLVM no vectorized copies, runtime checks or remainders.
    let scalar_copy = |from: IntValue<'ctx>, to: IntValue<'ctx>, name: &str| {
        let l = super::loops::open_loop(cg, name, from, to)?;
        let v = b.build_load(it, cg.gep(it.into(), src, l.induction)?, "")?;
        b.build_store(cg.gep(it.into(), dst, l.induction)?, v)?;
        keep_scalar(cg, super::loops::close_loop_at_latch(cg, l)?)
    };
    scalar_copy(cg.const_i64(0), head, "stream.head")?;
    let nontemporal = cg.llvm.metadata_node(&[cg.i32().const_int(1, false).into()]);
    let kind = cg.llvm.get_kind_id("nontemporal");
    let l = super::loops::open_loop(cg, "stream.vectors", cg.const_i64(0), vectors)?;
    {
        let v = l.induction;
        let i = b.build_int_nsw_add(head, b.build_int_nsw_mul(v, cg.const_i64(lanes), "")?, "")?;
        let load = b.build_load(vt, cg.gep(it.into(), src, i)?, "")?;
        if let Some(l) = load.as_instruction_value() {
            let _ = l.set_alignment(size as u32);
        }
        let store = b.build_store(cg.gep(it.into(), dst, i)?, load)?;
        let _ = store.set_alignment(vector as u32);
        store.set_metadata(nontemporal, kind).map_err(|e| crate::error::Error::Llvm(format!("nontemporal store: {e}")))?;
    }
    // Already whole vectors: widening or interleaving it again only adds code to compile.
    keep_scalar(cg, super::loops::close_loop_at_latch(cg, l)?)?;
    scalar_copy(body_end, count, "stream.tail")
}

/// Marks a copy loop of `stream_copy` neither to be vectorized nor unrolled. Left to the
/// vectorizer, the head and tail loops each became a vector loop with its checks and a scalar
/// remainder (optimized IR of the layernorm workload) for at most a vector's worth of
/// elements; a streamed 8192x1024 layernorm took about twice the LLVM time per compile of
/// the same module at 4096x1024, which is not streamed (`bench --compiles`: CPU 24-28 vs
/// 12-17 ms on a loaded machine).
fn keep_scalar<'ctx>(cg: &Codegen<'ctx>, latch: InstructionValue<'ctx>) -> Result<()> {
    let no_vectorize = cg.llvm.metadata_node(&[cg.llvm.metadata_string("llvm.loop.vectorize.enable").into(), cg.const_bool(false).into()]);
    let no_unroll = cg.llvm.metadata_node(&[cg.llvm.metadata_string("llvm.loop.unroll.disable").into()]);
    super::loops::set_loop_options(cg, latch, &[no_vectorize, no_unroll])
}

/// Orders the kernel's non-temporal stores before whatever follows (the runtime's signal that
/// the task is done): they bypass the usual x86 store ordering.
pub fn fence(cg: &Codegen) -> Result<()> {
    let sfence = match cg.module.get_function("llvm.x86.sse.sfence") {
        Some(f) => f,
        None => cg.module.add_function("llvm.x86.sse.sfence", cg.llvm.void_type().fn_type(&[], false), None),
    };
    cg.call_void(sfence, &[])
}

/// Contiguous spans shorter than this are not streamed: the copy's head and tail would be
/// most of each span.
pub const MIN_SPAN: i64 = 256;

/// The dimension a streamed loop kernel over `dims` in `layout` computes in spans — the
/// most-minor one of size > 1 — if the kernel is worth streaming: its spans (the whole
/// dimension, or the task's range of it when it is also the parallel one) are long enough.
pub fn span_dimension(dims: &[i64], layout: &Layout) -> Option<usize> {
    let minor = layout.minor_to_major.iter().map(|&d| d as usize).find(|&d| dims[d] > 1)?;
    (outer_dimension(dims, layout) == Some(minor) || dims[minor] >= MIN_SPAN).then_some(minor)
}

/// The loop kernel computing `values` into the kernel's outputs (see
/// `kernel::emit_elemental_loop`), one per output, with the spans along `minor`
/// ([`span_dimension`]) staged and streamed out. Every value of a span is computed before any
/// is stored, so an output written over an input read at the same element (an update in
/// place) still reads the old values. Returns the latches of the loops whose iterations are
/// independent.
pub fn emit_loop<'ctx>(kc: &KernelContext<'_, 'ctx>, values: &[InstrId], dims: &[i64], layout: &Layout, minor: usize) -> Result<Vec<InstructionValue<'ctx>>> {
    let cg = kc.cg;
    let staging = kc.outputs.iter().map(|o| staging_buffer(cg, o.element_type())).collect::<Result<Vec<_>>>()?;
    let outer = outer_dimension(dims, layout);
    let mut nest = Nest::new(vec![cg.const_i64(0); dims.len()]);
    for d in layout.major_to_minor() {
        let d = d as usize;
        if d == minor || dims[d] == 1 {
            continue;
        }
        let (start, end) = if Some(d) == outer { (kc.begin, kc.end) } else { (cg.const_i64(0), cg.const_i64(dims[d])) };
        nest.enter(cg, &format!("stream.d{d}"), Some(d), start, end)?;
    }
    let (start, end) = if Some(minor) == outer { (kc.begin, kc.end) } else { (cg.const_i64(0), cg.const_i64(dims[minor])) };
    let mut e = kc.elemental();
    let mut element_latches = Vec::new();
    let b = &cg.b;
    let mut latches = nest.finish_at_latches(cg, |idx| {
        let span = b.build_int_nsw_sub(end, start, "")?;
        let blocks = b.build_int_signed_div(b.build_int_nsw_add(span, cg.const_i64(STAGING_ELEMENTS - 1), "")?, cg.const_i64(STAGING_ELEMENTS), "")?;
        super::loops::for_loop(cg, "stream.block", cg.const_i64(0), blocks, |block| {
            let first = b.build_int_nsw_add(start, b.build_int_nsw_mul(block, cg.const_i64(STAGING_ELEMENTS), "")?, "")?;
            let full = b.build_int_nsw_add(first, cg.const_i64(STAGING_ELEMENTS), "")?;
            let last = cg.call_intrinsic("llvm.smin", &[cg.i64().into()], &[full.into(), end.into()])?.into_int_value();
            let l = super::loops::open_loop(cg, "stream.elements", first, last)?;
            let mut at = idx.dims.clone();
            at[minor] = l.induction;
            let at = Index::new(at);
            let computed = e.scoped(|e| values.iter().map(|&v| e.gen_scalar(v, &at)).collect::<Result<Vec<_>>>())?;
            let slot = b.build_int_nsw_sub(l.induction, first, "")?;
            for ((v, out), buffer) in computed.into_iter().zip(&kc.outputs).zip(&staging) {
                let ty = out.element_type();
                cg.store_element(ty, cg.gep(cg.memory_type(ty), *buffer, slot)?, v)?;
            }
            element_latches.push(super::loops::close_loop_at_latch(cg, l)?);
            let mut at = idx.dims.clone();
            at[minor] = first;
            let at = Index::new(at);
            let count = b.build_int_nsw_sub(last, first, "")?;
            for (out, buffer) in kc.outputs.iter().zip(&staging) {
                stream_copy(cg, out.element_type(), *buffer, out.address(cg, &at)?, count)?;
            }
            Ok(())
        })
    })?;
    fence(cg)?;
    latches.splice(0..0, element_latches);
    Ok(latches)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_dimensions_must_be_major_to_the_streamed_ones() {
        let row_major = Layout::new(vec![1, 0]);
        assert!(is_minor_suffix(&[2048, 4100], &row_major, &[1]));
        // Rows along dimension 1 of a row-major array are strided columns.
        assert!(!is_minor_suffix(&[2048, 4100], &row_major, &[0]));
        // A dimension of size 1 between them does not break the span.
        assert!(is_minor_suffix(&[8, 1, 64], &Layout::new(vec![2, 1, 0]), &[2]));
        assert!(!is_minor_suffix(&[8, 4, 64], &Layout::new(vec![2, 1, 0]), &[1]));
    }

    #[test]
    fn spans_run_along_the_most_minor_dimension_when_long_enough() {
        let row_major = Layout::new(vec![1, 0]);
        assert_eq!(span_dimension(&[8192, 1024], &row_major), Some(1));
        // Short rows would be mostly head and tail.
        assert_eq!(span_dimension(&[50000, 64], &row_major), None);
        // One dimension: the task's range of it is the span.
        assert_eq!(span_dimension(&[1 << 24], &Layout::new(vec![0])), Some(0));
        assert_eq!(span_dimension(&[1 << 20, 1], &row_major), Some(0));
    }
}
