//! Softmax, layer normalization and row sums and maxima over the rows of row-major f32
//! arrays, precompiled for AVX2 + FMA and for AVX-512: what the compiler's row kernels
//! (`codegen/row_loops.rs` and the reduce emitter, vectorized by LLVM) compute on a target of
//! that vector width, step for step, so that a module made of them needs no machine code at
//! all (XLA:CPU hands the same fusions to YNNPACK, a precompiled library, and so compiles them
//! without LLVM).
//!
//! Same bits as the generated kernel for the rows [`RowIsa::accepts_row`] accepts (see
//! `row.rs` for the order of operations). Rows are independent, so the split across threads
//! does not change a bit.

mod isa;
#[cfg(target_arch = "x86_64")]
mod row;

use crate::custom_call::last_error::set_failure;
use crate::symbols::{hlojit_rt_parallel_for, ALLOCATION_FAILURE};
use isa::{Avx2, Avx512, Isa};
use std::sync::atomic::{AtomicBool, Ordering};

/// The vector width a set of row kernels repeats the generated loops of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowIsa {
    /// 8 lanes (AVX2 + FMA, or AVX-512 CPUs whose LLVM tuning prefers 256-bit vectors).
    Avx2,
    /// 16 lanes (AVX-512F with AVX2 + FMA).
    Avx512,
}

impl RowIsa {
    pub const ALL: [RowIsa; 2] = [RowIsa::Avx2, RowIsa::Avx512];

    pub fn lanes(self) -> i64 {
        match self {
            RowIsa::Avx2 => 8,
            RowIsa::Avx512 => 16,
        }
    }

    /// Whether the kernels repeat the generated loops for rows of `cols`: a multiple of four
    /// vectors (LLVM interleaves four accumulators, and its loops then have no remainder), at
    /// least two such steps (for fewer LLVM interleaves fewer, or straightens a single step
    /// into one block where it reassociates and contracts the sums in another order).
    pub fn accepts_row(self, cols: i64) -> bool {
        let step = 4 * self.lanes();
        cols > 0 && cols % step == 0 && cols >= 2 * step
    }
}

/// The fields of the descriptor the generated kernel passes (all 64-bit).
#[repr(C)]
pub struct SoftmaxRowsF32 {
    pub rows: i64,
    pub cols: i64,
    /// Input and output: `rows * cols` f32 elements each, row-major.
    pub x: i64,
    pub out: i64,
    /// Rows per task on the thread pool; 0 runs every row on the calling thread.
    pub min_chunk: i64,
    /// Non-zero: write the output with non-temporal stores where a row is aligned to the
    /// vectors (for outputs larger than the cache).
    pub stream: i64,
}

/// Softmax of each row of `desc.x` into `desc.out` with 8-lane vectors; non-zero (and
/// recorded as a failure) when the scratch row cannot be allocated.
///
/// # Safety
/// `desc` points to a valid descriptor whose buffers hold `rows * cols` f32 elements, `cols`
/// one [`RowIsa::Avx2`] accepts; the CPU has AVX2 and FMA.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_softmax_rows_f32_avx2(desc: *const SoftmaxRowsF32) -> i32 {
    unsafe { softmax_rows::<Avx2>(desc) }
}

/// [`hlojit_rt_softmax_rows_f32_avx2`] with 16-lane vectors.
///
/// # Safety
/// As [`hlojit_rt_softmax_rows_f32_avx2`], `cols` one [`RowIsa::Avx512`] accepts; the CPU
/// has AVX-512F, AVX2 and FMA.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_softmax_rows_f32_avx512(desc: *const SoftmaxRowsF32) -> i32 {
    unsafe { softmax_rows::<Avx512>(desc) }
}

/// # Safety
/// As the entry points', with a CPU that has `I`.
unsafe fn softmax_rows<I: Isa>(desc: *const SoftmaxRowsF32) -> i32 {
    // SAFETY: as this function's contract.
    let d = unsafe { &*desc };
    if d.rows <= 0 {
        return 0;
    }
    let task = Task { desc: d, failed: AtomicBool::new(false) };
    // SAFETY: the tasks read `task` through the context, alive for the call.
    unsafe { run_rows(softmax_task::<I>, &task as *const Task as *const *mut u8, d.rows, d.min_chunk) };
    // A task that could not allocate failed on its own thread: say so on this one.
    if task.failed.load(Ordering::Relaxed) {
        set_failure(format!("{ALLOCATION_FAILURE} two rows of temporary memory for a softmax"));
        1
    } else {
        0
    }
}

/// What the thread-pool tasks share.
struct Task<'a> {
    desc: &'a SoftmaxRowsF32,
    failed: AtomicBool,
}

/// Rows `begin..end` (a thread-pool task; `ctx` is the [`Task`]).
unsafe extern "C" fn softmax_task<I: Isa>(ctx: *const *mut u8, begin: i64, end: i64) {
    // SAFETY: the caller passes its Task.
    let task = unsafe { &*(ctx as *const Task) };
    let d = task.desc;
    let cols = d.cols as usize;
    // Two rows (`row::softmax_rows` writes one out while computing the next), from the
    // runtime's allocator, as the generated kernel's row: aligned for any vector (a
    // 16-byte-aligned Vec made every other 32-byte access split a cache line: 5-40% slower).
    let bytes = 2 * d.cols * 4;
    let scratch = crate::symbols::hlojit_rt_alloc(bytes) as *mut f32;
    if scratch.is_null() {
        task.failed.store(true, Ordering::Relaxed);
        return;
    }
    let offset = begin as usize * cols;
    // SAFETY: rows inside the buffers (contract); the CPU has the instruction set (contract).
    unsafe { I::softmax_rows((d.x as *const f32).add(offset), (d.out as *mut f32).add(offset), scratch, cols, (end - begin) as usize, d.stream != 0) };
    // SAFETY: allocated above with this size.
    unsafe { crate::symbols::hlojit_rt_free(scratch as *mut u8, bytes) };
    if d.stream != 0 {
        fence_streamed_stores();
    }
}

/// Runs `task` over rows `0..rows`: on the thread pool in chunks of at least `min_chunk`
/// rows, or all on the calling thread when `min_chunk` is 0.
///
/// # Safety
/// `task` may be called with `ctx` on any thread of the pool.
unsafe fn run_rows(task: unsafe extern "C" fn(*const *mut u8, i64, i64), ctx: *const *mut u8, rows: i64, min_chunk: i64) {
    if min_chunk > 0 {
        // SAFETY: as this function's contract.
        unsafe { hlojit_rt_parallel_for(task, ctx, rows, min_chunk) };
    } else {
        // SAFETY: as above.
        unsafe { task(ctx, 0, rows) };
    }
}

/// One reduction of [`hlojit_rt_row_reduce_f32_avx2`]: four fields of its descriptor.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct RowReduction {
    /// [`REDUCE_ADD`] or [`REDUCE_MAX`].
    pub op: i64,
    /// The init value's f32 bits.
    pub init: i64,
    /// `rows * cols` f32 elements, row-major.
    pub input: i64,
    /// `rows` f32 results.
    pub out: i64,
}

pub const REDUCE_ADD: i64 = 0;
pub const REDUCE_MAX: i64 = 1;
/// Reductions one call computes (a multi-output fusion's).
pub const MAX_ROW_REDUCTIONS: usize = 4;

/// The descriptor of [`hlojit_rt_row_reduce_f32_avx2`].
#[repr(C)]
pub struct RowReduceF32 {
    pub rows: i64,
    pub cols: i64,
    /// Rows per thread-pool task; 0 runs every row on the calling thread.
    pub min_chunk: i64,
    /// Reductions used, at most [`MAX_ROW_REDUCTIONS`].
    pub count: i64,
    pub reductions: [RowReduction; MAX_ROW_REDUCTIONS],
}

/// Sums and maxima of the rows of f32 arrays with 8-lane vectors, as the generated reduce
/// kernel computes them.
///
/// # Safety
/// `desc` points to a valid descriptor (the first `count` reductions filled in) whose buffers
/// hold `rows * cols` inputs and `rows` outputs, `cols` one [`RowIsa::Avx2`] accepts; the CPU
/// has AVX2 and FMA.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_row_reduce_f32_avx2(desc: *const RowReduceF32) -> i32 {
    // SAFETY: as this function's contract.
    unsafe { run_descriptor(desc, (*desc).rows, (*desc).min_chunk, reduce_task::<Avx2>) }
}

/// [`hlojit_rt_row_reduce_f32_avx2`] with 16-lane vectors.
///
/// # Safety
/// As [`hlojit_rt_row_reduce_f32_avx2`], `cols` one [`RowIsa::Avx512`] accepts; the CPU has
/// AVX-512F, AVX2 and FMA.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_row_reduce_f32_avx512(desc: *const RowReduceF32) -> i32 {
    // SAFETY: as this function's contract.
    unsafe { run_descriptor(desc, (*desc).rows, (*desc).min_chunk, reduce_task::<Avx512>) }
}

/// Runs `task` over rows `0..rows` (see [`run_rows`]) with the descriptor as its context;
/// always 0 (these kernels allocate nothing).
///
/// # Safety
/// `task` reads `desc` as its descriptor, alive for the call.
unsafe fn run_descriptor<D>(desc: *const D, rows: i64, min_chunk: i64, task: unsafe extern "C" fn(*const *mut u8, i64, i64)) -> i32 {
    if rows > 0 {
        // SAFETY: as this function's contract.
        unsafe { run_rows(task, desc as *const *mut u8, rows, min_chunk) };
    }
    0
}

/// Rows `begin..end` of every reduction (a thread-pool task; `ctx` is the descriptor).
unsafe extern "C" fn reduce_task<I: Isa>(ctx: *const *mut u8, begin: i64, end: i64) {
    // SAFETY: the caller passes its descriptor.
    let d = unsafe { &*(ctx as *const RowReduceF32) };
    let cols = d.cols as usize;
    let reductions = &d.reductions[..(d.count.clamp(0, MAX_ROW_REDUCTIONS as i64) as usize)];
    for r in begin..end {
        // SAFETY: rows inside the buffers, a CPU with the instruction set (contract).
        unsafe { I::reduce_row(reductions, r as usize, cols) };
    }
}

/// The descriptor of [`hlojit_rt_layernorm_rows_f32_avx2`] (all fields 64-bit).
#[repr(C)]
pub struct LayernormRowsF32 {
    pub rows: i64,
    pub cols: i64,
    /// `rows * cols` f32 elements, row-major.
    pub x: i64,
    /// `cols` f32 elements each: the scale and the offset.
    pub gamma: i64,
    pub beta: i64,
    pub out: i64,
    /// f32 bits of the factors that make the row sums means (1/cols as the simplifier wrote it).
    pub mean_scale: i64,
    pub var_scale: i64,
    /// f32 bits of epsilon.
    pub epsilon: i64,
    /// Rows per thread-pool task; 0 runs every row on the calling thread.
    pub min_chunk: i64,
    /// Non-zero: write the output with non-temporal stores where a row is aligned to the
    /// vectors (as the generated kernel does for outputs larger than the cache).
    pub stream: i64,
}

/// Layer normalization of each row with 8-lane vectors, as the generated row kernel computes
/// it (`row::layernorm_row`).
///
/// # Safety
/// `desc` points to a valid descriptor whose buffers hold what it says, `cols` one
/// [`RowIsa::Avx2`] accepts; the CPU has AVX2 and FMA.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_layernorm_rows_f32_avx2(desc: *const LayernormRowsF32) -> i32 {
    // SAFETY: as this function's contract.
    unsafe { run_descriptor(desc, (*desc).rows, (*desc).min_chunk, layernorm_task::<Avx2>) }
}

/// [`hlojit_rt_layernorm_rows_f32_avx2`] with 16-lane vectors.
///
/// # Safety
/// As [`hlojit_rt_layernorm_rows_f32_avx2`], `cols` one [`RowIsa::Avx512`] accepts; the CPU
/// has AVX-512F, AVX2 and FMA.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_layernorm_rows_f32_avx512(desc: *const LayernormRowsF32) -> i32 {
    // SAFETY: as this function's contract.
    unsafe { run_descriptor(desc, (*desc).rows, (*desc).min_chunk, layernorm_task::<Avx512>) }
}

/// Rows `begin..end` (a thread-pool task; `ctx` is the descriptor).
unsafe extern "C" fn layernorm_task<I: Isa>(ctx: *const *mut u8, begin: i64, end: i64) {
    // SAFETY: the caller passes its descriptor.
    let d = unsafe { &*(ctx as *const LayernormRowsF32) };
    let cols = d.cols as usize;
    let bits = |v: i64| f32::from_bits(v as u32);
    for r in begin..end {
        let offset = r as usize * cols;
        // SAFETY: rows inside the buffers, a CPU with the instruction set (contract).
        unsafe {
            I::layernorm_row(
                (d.x as *const f32).add(offset),
                d.gamma as *const f32,
                d.beta as *const f32,
                (d.out as *mut f32).add(offset),
                cols,
                [bits(d.mean_scale), bits(d.var_scale), bits(d.epsilon)],
                d.stream != 0,
            )
        };
    }
    if d.stream != 0 {
        fence_streamed_stores();
    }
}

/// Non-temporal stores are weakly ordered: a task that streamed makes them visible before it
/// ends.
fn fence_streamed_stores() {
    // SAFETY: a plain fence.
    #[cfg(target_arch = "x86_64")]
    unsafe { std::arch::x86_64::_mm_sfence() };
}
