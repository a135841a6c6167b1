//! Softmax over the rows of a row-major f32 array, precompiled for AVX2 + FMA: what the
//! compiler's row kernel (`codegen/row_loops.rs`, vectorized by LLVM) computes, step for step,
//! so that a module made of it needs no machine code at all (XLA:CPU hands the same fusion to
//! YNNPACK, a precompiled library, and so compiles it without LLVM).
//!
//! Same bits as the generated kernel, for rows whose length is a multiple of 32 (LLVM then
//! vectorizes every row loop without a remainder): the row maximum in four 8-lane
//! accumulators, e^(x - max) with XLA's f32 polynomial into a row of scratch, the sum of that
//! row in four 8-lane accumulators (the first starting at +0 in lane 0, -0 elsewhere, as LLVM
//! seeds a reduction with the init value), the accumulators added ((a1 + a0) + a2) + a3 and
//! halved 8 -> 4 -> 2 -> 1, and each e^(x - max) multiplied by 1 / sum (XLA's simplifier
//! turned the divide into that product). Rows are independent, so the split across threads
//! does not change a bit.

use crate::custom_call::last_error::set_failure;
use crate::symbols::{hlojit_rt_parallel_for, ALLOCATION_FAILURE};
use std::sync::atomic::{AtomicBool, Ordering};

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
}

/// Row lengths the kernels reproduce the generated code for: multiples of 32 (LLVM's vector
/// loops then have no remainder) ...
pub const ROW_MULTIPLE: i64 = 32;
/// ... of at least two iterations: a single iteration is straightened into one block, where
/// LLVM reassociates and contracts the sums in another order (seen on a layernorm of rows
/// of 32: the squares added last to first).
pub const MIN_ROW: i64 = 64;

/// Softmax of each row of `desc.x` into `desc.out` (AVX2 + FMA); non-zero (and recorded as a
/// failure) when the scratch row cannot be allocated.
///
/// # Safety
/// `desc` points to a valid descriptor whose buffers hold `rows * cols` f32 elements and
/// whose `cols` is a positive multiple of [`ROW_MULTIPLE`]; the CPU has AVX2 and FMA.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_softmax_rows_f32_avx2(desc: *const SoftmaxRowsF32) -> i32 {
    // SAFETY: as this function's contract.
    let d = unsafe { &*desc };
    if d.rows <= 0 {
        return 0;
    }
    let task = Task { desc: d, failed: AtomicBool::new(false) };
    // SAFETY: the tasks read `task` through the context, alive for the call.
    unsafe { run_rows(rows_task, &task as *const Task as *const *mut u8, d.rows, d.min_chunk) };
    // A task that could not allocate failed on its own thread: say so on this one.
    if task.failed.load(Ordering::Relaxed) {
        set_failure(format!("{ALLOCATION_FAILURE} a row of temporary memory for a softmax"));
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
unsafe extern "C" fn rows_task(ctx: *const *mut u8, begin: i64, end: i64) {
    // SAFETY: the caller passes its Task.
    let task = unsafe { &*(ctx as *const Task) };
    let d = task.desc;
    let cols = d.cols as usize;
    // From the runtime's allocator, as the generated kernel's row: aligned for any vector
    // (a 16-byte-aligned Vec made every other 32-byte access split a cache line: 5-40% slower).
    let bytes = d.cols * 4;
    let scratch = crate::symbols::hlojit_rt_alloc(bytes) as *mut f32;
    if scratch.is_null() {
        task.failed.store(true, Ordering::Relaxed);
        return;
    }
    for r in begin..end {
        let offset = r as usize * cols;
        // SAFETY: rows inside the buffers (contract); the CPU has AVX2 and FMA (contract).
        unsafe { avx2::softmax_row((d.x as *const f32).add(offset), (d.out as *mut f32).add(offset), scratch, cols) };
    }
    // SAFETY: allocated above with this size.
    unsafe { crate::symbols::hlojit_rt_free(scratch as *mut u8, bytes) };
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

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// LLVM's `llvm.maximum` (a NaN operand gives a NaN, +0 is above -0) as LLVM lowers it
    /// for x86, so that even the NaN it keeps is the same: the operands ordered by the sign of
    /// `a`, `maxps`, and the first ordered operand itself when it is a NaN (five instructions).
    #[inline(always)]
    unsafe fn maximum(a: __m256, b: __m256) -> __m256 {
        let x = _mm256_blendv_ps(b, a, a);
        let y = _mm256_blendv_ps(a, b, a);
        let m = _mm256_max_ps(x, y);
        _mm256_blendv_ps(m, x, _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x))
    }

    #[inline(always)]
    unsafe fn k(bits: u32) -> __m256 {
        _mm256_set1_ps(f32::from_bits(bits))
    }

    /// XLA's f32 e^x as the row kernel computes it (`fcmp olt/ogt` + select clamps keep a
    /// NaN; every multiply-add written as `llvm.fmuladd` in the IR is one FMA).
    #[inline(always)]
    unsafe fn exp(x: __m256) -> __m256 {
        let lo = k(0xc2af999a); // -87.8
        let hi = k(0x42b1999a); // 88.8
        // `x < lo ? lo : x` is maxps(lo, x), which returns its second operand x when either is
        // NaN or they are equal; likewise minps for the upper bounds (one instruction each,
        // as LLVM selects them, instead of a compare and a blend).
        let x = _mm256_min_ps(hi, _mm256_max_ps(lo, x));
        let n = _mm256_floor_ps(_mm256_fmadd_ps(x, k(0x3fb8aa3b), _mm256_set1_ps(0.5)));
        let n = _mm256_min_ps(_mm256_set1_ps(127.0), _mm256_max_ps(_mm256_set1_ps(-127.0), n));
        let neg_n = _mm256_xor_ps(n, _mm256_set1_ps(-0.0));
        let g = _mm256_fmadd_ps(neg_n, k(0x3f318000), x);
        let g = _mm256_fmadd_ps(neg_n, k(0xb95e8083), g);
        let p = _mm256_fmadd_ps(g, k(0x39506967), k(0x3ab743ce));
        let p = _mm256_fmadd_ps(p, g, k(0x3c088908));
        let p = _mm256_fmadd_ps(p, g, k(0x3d2aa9c1));
        let p = _mm256_fmadd_ps(p, g, k(0x3e2aaaaa));
        let p = _mm256_fmadd_ps(p, g, _mm256_set1_ps(0.5));
        let e = _mm256_fmadd_ps(p, _mm256_mul_ps(g, g), g);
        let e = _mm256_add_ps(e, _mm256_set1_ps(1.0));
        // 2^n from n's bits (a NaN n becomes 0; the result is NaN either way).
        let n = _mm256_and_ps(n, _mm256_cmp_ps::<_CMP_ORD_Q>(n, n));
        let scale = _mm256_add_epi32(_mm256_slli_epi32::<23>(_mm256_cvttps_epi32(n)), _mm256_set1_epi32(0x3f800000));
        _mm256_mul_ps(e, _mm256_castsi256_ps(scale))
    }

    /// Lane 0 + lane 1 after halving 8 -> 4 -> 2 lanes, as LLVM expands a reassociating
    /// `vector.reduce.fadd` on x86 (`vextractf128`, `vshufpd`, `vmovshdup`).
    #[inline(always)]
    unsafe fn sum_lanes(v: __m256) -> f32 {
        let v4 = _mm_add_ps(_mm256_extractf128_ps::<1>(v), _mm256_castps256_ps128(v));
        let v2 = _mm_add_ps(_mm_castpd_ps(_mm_shuffle_pd::<1>(_mm_castps_pd(v4), _mm_castps_pd(v4))), v4);
        _mm_cvtss_f32(_mm_add_ss(v2, _mm_movehdup_ps(v2)))
    }

    /// `maximum` over the lanes (exact: the order only picks among NaNs).
    #[inline(always)]
    unsafe fn max_lanes(v: __m256) -> f32 {
        let mut lanes = [0f32; 8];
        _mm256_storeu_ps(lanes.as_mut_ptr(), v);
        let mut m = _mm256_set1_ps(lanes[0]);
        for &l in &lanes[1..] {
            m = maximum(m, _mm256_set1_ps(l));
        }
        _mm256_cvtss_f32(m)
    }

    /// The maximum of a row of `cols` (a multiple of 32) elements from `init`: four 8-lane
    /// accumulators starting at `init` (exact in any order: only NaNs could differ). A NaN
    /// result is computed again in order, as the generated kernel does
    /// (`Reducer::redo_in_order_if_nan` in the compiler).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn row_max(x: *const f32, cols: usize, init: f32) -> f32 {
        let mut acc = [_mm256_set1_ps(init); 4];
        for j in (0..cols).step_by(32) {
            for (i, a) in acc.iter_mut().enumerate() {
                *a = maximum(*a, _mm256_loadu_ps(x.add(j + 8 * i)));
            }
        }
        let m = max_lanes(maximum(maximum(maximum(acc[0], acc[1]), acc[2]), acc[3]));
        if m.is_nan() {
            return (0..cols).fold(init, |a, j| xla_maximum(a, *x.add(j)));
        }
        m
    }

    /// XLA:CPU's scalar `maximum(a, b)` on x86 (codegen/elemental/minmax.rs in the compiler):
    /// a NaN `a` comes back unchanged, a NaN `b` with its sign ANDed with `a`'s.
    fn xla_maximum(a: f32, b: f32) -> f32 {
        if a.is_nan() {
            return a;
        }
        let m = if a > b { a } else { b };
        f32::from_bits(m.to_bits() & (a.to_bits() | !(1 << 31)))
    }

    /// The sum of a row of `cols` (a multiple of 32) elements from `init`, in LLVM's order:
    /// four 8-lane accumulators (`init` in lane 0 of the first, -0 elsewhere), added
    /// ((a1 + a0) + a2) + a3, then halved across lanes.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn row_sum(x: *const f32, cols: usize, init: f32) -> f32 {
        let zero = _mm256_set1_ps(-0.0);
        let mut acc = [_mm256_setr_ps(init, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0), zero, zero, zero];
        for j in (0..cols).step_by(32) {
            for (i, a) in acc.iter_mut().enumerate() {
                *a = _mm256_add_ps(*a, _mm256_loadu_ps(x.add(j + 8 * i)));
            }
        }
        sum_lanes(_mm256_add_ps(acc[3], _mm256_add_ps(acc[2], _mm256_add_ps(acc[1], acc[0]))))
    }

    /// XLA's f32 rsqrt as LLVM lowers it for x86: the `rsqrtss` estimate refined by one
    /// Newton step, r (a r r - 1)(-r / 2) + r as two FMAs; the estimate itself when `a` is
    /// anything but a positive normal number or a NaN (`llvm.is.fpclass` mask 764).
    #[inline(always)]
    unsafe fn rsqrt(a: f32) -> f32 {
        let r = _mm_cvtss_f32(_mm_rsqrt_ss(_mm_set_ss(a)));
        let step = (-0.5 * r).mul_add((a * r).mul_add(r, -1.0), r);
        let positive_normal = a.is_sign_positive() && a.is_normal();
        if positive_normal || a.is_nan() { step } else { r }
    }

    /// One row of layer normalization (`scales`: mean scale, variance scale, epsilon).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn layernorm_row(x: *const f32, gamma: *const f32, beta: *const f32, out: *mut f32, cols: usize, scales: [f32; 3], stream: bool) {
        let [mean_scale, var_scale, epsilon] = scales;
        let mean = row_sum(x, cols, 0.0) * mean_scale;
        let m = _mm256_set1_ps(mean);
        let zero = _mm256_set1_ps(-0.0);
        let mut acc = [_mm256_setr_ps(0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0), zero, zero, zero];
        for j in (0..cols).step_by(32) {
            for (i, a) in acc.iter_mut().enumerate() {
                let d = _mm256_sub_ps(_mm256_loadu_ps(x.add(j + 8 * i)), m);
                *a = _mm256_fmadd_ps(d, d, *a);
            }
        }
        let var = sum_lanes(_mm256_add_ps(acc[3], _mm256_add_ps(acc[2], _mm256_add_ps(acc[1], acc[0]))));
        let r = _mm256_set1_ps(rsqrt(var.mul_add(var_scale, epsilon)));
        let stream = stream && (out as usize) % 32 == 0;
        for j in (0..cols).step_by(8) {
            let d = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x.add(j)), m), r);
            let y = _mm256_fmadd_ps(d, _mm256_loadu_ps(gamma.add(j)), _mm256_loadu_ps(beta.add(j)));
            if stream {
                _mm256_stream_ps(out.add(j), y);
            } else {
                _mm256_storeu_ps(out.add(j), y);
            }
        }
    }

    /// The reductions of row `r`: two at once in one walk over the row, as the generated
    /// multi-output kernel does (each with its own four accumulators in registers, so each
    /// sees its additions in the order of `row_sum` / `row_max`), others one by one.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn reduce_row(reductions: &[super::RowReduction], r: usize, cols: usize) {
        let row = |red: &super::RowReduction| (red.input as *const f32).add(r * cols);
        let init = |red: &super::RowReduction| f32::from_bits(red.init as u32);
        let store = |red: &super::RowReduction, v: f32| *(red.out as *mut f32).add(r) = v;
        let is_max = |red: &super::RowReduction| red.op == super::REDUCE_MAX;
        if let [a, b] = reductions {
            let (va, vb) = match (is_max(a), is_max(b)) {
                (false, true) => two(row(a), row(b), cols, sum_start(init(a)), [_mm256_set1_ps(init(b)); 4], add, maximum),
                (true, false) => two(row(a), row(b), cols, [_mm256_set1_ps(init(a)); 4], sum_start(init(b)), maximum, add),
                (false, false) => two(row(a), row(b), cols, sum_start(init(a)), sum_start(init(b)), add, add),
                (true, true) => two(row(a), row(b), cols, [_mm256_set1_ps(init(a)); 4], [_mm256_set1_ps(init(b)); 4], maximum, maximum),
            };
            store(a, if is_max(a) { finish_max(va) } else { finish_sum(va) });
            store(b, if is_max(b) { finish_max(vb) } else { finish_sum(vb) });
            return;
        }
        for red in reductions {
            store(red, if is_max(red) { row_max(row(red), cols, init(red)) } else { row_sum(row(red), cols, init(red)) });
        }
    }

    #[inline(always)]
    unsafe fn add(a: __m256, b: __m256) -> __m256 {
        _mm256_add_ps(a, b)
    }

    /// A sum's accumulators: the init value in lane 0 of the first, -0 elsewhere (LLVM's).
    #[inline(always)]
    unsafe fn sum_start(init: f32) -> [__m256; 4] {
        let zero = _mm256_set1_ps(-0.0);
        [_mm256_setr_ps(init, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0), zero, zero, zero]
    }

    #[inline(always)]
    unsafe fn finish_sum(a: [__m256; 4]) -> f32 {
        sum_lanes(_mm256_add_ps(a[3], _mm256_add_ps(a[2], _mm256_add_ps(a[1], a[0]))))
    }

    #[inline(always)]
    unsafe fn finish_max(a: [__m256; 4]) -> f32 {
        max_lanes(maximum(maximum(maximum(a[0], a[1]), a[2]), a[3]))
    }

    /// Two reductions of rows `x` and `y` in one walk (the ops inlined).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn two(
        x: *const f32,
        y: *const f32,
        cols: usize,
        mut a: [__m256; 4],
        mut b: [__m256; 4],
        fa: unsafe fn(__m256, __m256) -> __m256,
        fb: unsafe fn(__m256, __m256) -> __m256,
    ) -> ([__m256; 4], [__m256; 4]) {
        for j in (0..cols).step_by(32) {
            for i in 0..4 {
                a[i] = fa(a[i], _mm256_loadu_ps(x.add(j + 8 * i)));
                b[i] = fb(b[i], _mm256_loadu_ps(y.add(j + 8 * i)));
            }
        }
        (a, b)
    }

    /// One row of `cols` (a multiple of 32) elements.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn softmax_row(x: *const f32, out: *mut f32, scratch: *mut f32, cols: usize) {
        let m = _mm256_set1_ps(row_max(x, cols, f32::NEG_INFINITY));
        for j in (0..cols).step_by(8) {
            _mm256_storeu_ps(scratch.add(j), exp(_mm256_sub_ps(_mm256_loadu_ps(x.add(j)), m)));
        }
        let inv = _mm256_set1_ps(1.0 / row_sum(scratch, cols, 0.0));
        // Four vectors a step, as LLVM interleaves this loop.
        for j in (0..cols).step_by(32) {
            for i in 0..4 {
                let at = j + 8 * i;
                _mm256_storeu_ps(out.add(at), _mm256_mul_ps(_mm256_loadu_ps(scratch.add(at)), inv));
            }
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod avx2 {
    pub(super) unsafe fn softmax_row(_: *const f32, _: *mut f32, _: *mut f32, _: usize) {
        unreachable!("the compiler selects AVX2 kernels for x86-64 targets only")
    }
    pub(super) unsafe fn row_max(_: *const f32, _: usize, _: f32) -> f32 {
        unreachable!("the compiler selects AVX2 kernels for x86-64 targets only")
    }
    pub(super) unsafe fn reduce_row(_: &[super::RowReduction], _: usize, _: usize) {
        unreachable!("the compiler selects AVX2 kernels for x86-64 targets only")
    }
    pub(super) unsafe fn row_sum(_: *const f32, _: usize, _: f32) -> f32 {
        unreachable!("the compiler selects AVX2 kernels for x86-64 targets only")
    }
    pub(super) unsafe fn layernorm_row(_: *const f32, _: *const f32, _: *const f32, _: *mut f32, _: usize, _: [f32; 3], _: bool) {
        unreachable!("the compiler selects AVX2 kernels for x86-64 targets only")
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

/// Sums and maxima of the rows of f32 arrays (AVX2 + FMA), as the generated reduce kernel
/// computes them for rows of a multiple of 32 elements: a sum in four 8-lane accumulators
/// (lane 0 of the first starting at the init value, the rest at -0), combined as in the
/// softmax; a maximum in four accumulators starting at the init value (exact in any order).
///
/// # Safety
/// `desc` points to a valid descriptor (the first `count` reductions filled in) whose buffers
/// hold `rows * cols` inputs and `rows` outputs, `cols` a positive multiple of
/// [`ROW_MULTIPLE`]; the CPU has AVX2 and FMA.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_row_reduce_f32_avx2(desc: *const RowReduceF32) -> i32 {
    // SAFETY: as this function's contract.
    let d = unsafe { &*desc };
    if d.rows <= 0 {
        return 0;
    }
    // SAFETY: the tasks read the descriptor through the context, alive for the call.
    unsafe { run_rows(reduce_task, desc as *const *mut u8, d.rows, d.min_chunk) };
    0
}

/// Rows `begin..end` of every reduction (a thread-pool task; `ctx` is the descriptor).
unsafe extern "C" fn reduce_task(ctx: *const *mut u8, begin: i64, end: i64) {
    // SAFETY: the caller passes its descriptor.
    let d = unsafe { &*(ctx as *const RowReduceF32) };
    let cols = d.cols as usize;
    let reductions = &d.reductions[..(d.count.clamp(0, MAX_ROW_REDUCTIONS as i64) as usize)];
    for r in begin..end {
        // SAFETY: rows inside the buffers, a CPU with AVX2 and FMA (contract).
        unsafe { avx2::reduce_row(reductions, r as usize, cols) };
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
    /// Non-zero: write the output with non-temporal stores where a row is 32-byte aligned
    /// (as the generated kernel does for outputs larger than the cache).
    pub stream: i64,
}

/// Layer normalization of each row (AVX2 + FMA), as the generated row kernel computes it for
/// rows of a multiple of 32 elements: mean = sum(x) * mean_scale and sum((x - mean)^2) in
/// LLVM's order (the square added by FMA), a = sum * var_scale + epsilon (one FMA), XLA's
/// rsqrt (the `rsqrtss` estimate and one Newton step, the estimate itself unless `a` is a
/// positive normal number or NaN), then ((x - mean) * r) * gamma + beta (one FMA).
///
/// # Safety
/// `desc` points to a valid descriptor whose buffers hold what it says, `cols` a positive
/// multiple of [`ROW_MULTIPLE`]; the CPU has AVX2 and FMA.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_layernorm_rows_f32_avx2(desc: *const LayernormRowsF32) -> i32 {
    // SAFETY: as this function's contract.
    let d = unsafe { &*desc };
    if d.rows <= 0 {
        return 0;
    }
    // SAFETY: the tasks read the descriptor through the context, alive for the call.
    unsafe { run_rows(layernorm_task, desc as *const *mut u8, d.rows, d.min_chunk) };
    0
}

/// Rows `begin..end` (a thread-pool task; `ctx` is the descriptor).
unsafe extern "C" fn layernorm_task(ctx: *const *mut u8, begin: i64, end: i64) {
    // SAFETY: the caller passes its descriptor.
    let d = unsafe { &*(ctx as *const LayernormRowsF32) };
    let cols = d.cols as usize;
    let bits = |v: i64| f32::from_bits(v as u32);
    for r in begin..end {
        let offset = r as usize * cols;
        // SAFETY: rows inside the buffers, a CPU with AVX2 and FMA (contract).
        unsafe {
            avx2::layernorm_row(
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
        // Non-temporal stores are weakly ordered: make them visible before the task ends.
        // SAFETY: a plain fence.
        #[cfg(target_arch = "x86_64")]
        unsafe { std::arch::x86_64::_mm_sfence() };
    }
}
