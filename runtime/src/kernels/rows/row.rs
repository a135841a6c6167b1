//! One row of each kernel, in the order of the generated kernel's vector loops: LLVM
//! vectorizes each row loop with `V::LANES` lanes and four accumulators (the row a multiple
//! of four vectors, so no remainder), a sum's first accumulator starting at the init value
//! in lane 0 and -0 elsewhere, the others at -0; the accumulators added ((a1 + a0) + a2) + a3
//! and then halved across lanes down to one. A maximum's accumulators start at the init
//! value (exact in any order but for NaNs: a NaN result is computed again in order, as
//! `Reducer::redo_in_order_if_nan` in the compiler does).
//!
//! Generic over the instruction set; instantiated inside `#[target_feature]` functions
//! (`isa.rs`), which is why everything here is `#[inline(always)]`.

use super::super::simd::Simd;
use super::{RowReduction, REDUCE_MAX};

/// Four vectors: the accumulators of one reduction.
type Acc<V> = [V; 4];

/// The sum of a row of `cols` (a multiple of four vectors) elements from `init`.
#[inline(always)]
pub(super) unsafe fn row_sum<V: Simd>(x: *const f32, cols: usize, init: f32) -> f32 {
    let mut acc = sum_start::<V>(init);
    for j in (0..cols).step_by(4 * V::LANES) {
        for (i, a) in acc.iter_mut().enumerate() {
            *a = V::add(*a, V::load(x.add(j + V::LANES * i)));
        }
    }
    finish_sum(acc)
}

/// The maximum of a row of `cols` (a multiple of four vectors) elements from `init`.
#[inline(always)]
pub(super) unsafe fn row_max<V: Simd>(x: *const f32, cols: usize, init: f32) -> f32 {
    let mut acc = [V::splat(init); 4];
    for j in (0..cols).step_by(4 * V::LANES) {
        for (i, a) in acc.iter_mut().enumerate() {
            *a = V::maximum(*a, V::load(x.add(j + V::LANES * i)));
        }
    }
    finish_max(acc, x, cols, init)
}

#[inline(always)]
unsafe fn sum_start<V: Simd>(init: f32) -> Acc<V> {
    let zero = V::splat(-0.0);
    [V::first_lane(init), zero, zero, zero]
}

/// The accumulators combined, then the lanes halved (upper half onto lower) down to one, as
/// LLVM expands a reassociating `vector.reduce.fadd` on x86.
#[inline(always)]
unsafe fn finish_sum<V: Simd>(a: Acc<V>) -> f32 {
    let mut lanes = V::lanes(V::add(a[3], V::add(a[2], V::add(a[1], a[0]))));
    let mut n = V::LANES;
    while n > 1 {
        n /= 2;
        for i in 0..n {
            lanes[i] += lanes[i + n];
        }
    }
    lanes[0]
}

/// The maximum of the accumulators' lanes, or the row's maximum in order from `init` when it
/// is a NaN.
#[inline(always)]
unsafe fn finish_max<V: Simd>(a: Acc<V>, x: *const f32, cols: usize, init: f32) -> f32 {
    let lanes = V::lanes(V::maximum(V::maximum(V::maximum(a[0], a[1]), a[2]), a[3]));
    let m = lanes[..V::LANES].iter().fold(lanes[0], |m, &l| if m.is_nan() || l.is_nan() { f32::NAN } else { maximum(m, l) });
    if m.is_nan() {
        return (0..cols).fold(init, |a, j| xla_maximum(a, *x.add(j)));
    }
    m
}

/// The larger of two ordered numbers, +0 above -0.
fn maximum(a: f32, b: f32) -> f32 {
    if a == b {
        f32::from_bits(a.to_bits() & b.to_bits())
    } else if a > b {
        a
    } else {
        b
    }
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

/// XLA's f32 e^x as the row kernel computes it (`fcmp olt/ogt` + select clamps keep a NaN;
/// every multiply-add written as `llvm.fmuladd` in the IR is one FMA), for `x <= 0` or NaN —
/// all softmax asks for, x minus the row's maximum — where three of its clamps do nothing:
/// the upper clamp of x (88.8: `min` returns a NaN second operand, and anything else is
/// below), and both clamps of n to ±127 (n = floor(x log2(e) + 0.5) lies in [-127, 0] for x
/// clamped to [-87.8, 0], and a NaN n passes them unchanged).
#[inline(always)]
unsafe fn exp_of_nonpositive<V: Simd>(x: V) -> V {
    let k = |bits: u32| V::splat(f32::from_bits(bits));
    // `x < lo ? lo : x` is max(lo, x), which returns its second operand x when either is NaN
    // or they are equal.
    let x = V::max(k(0xc2af999a), x); // -87.8
    let n = V::floor(V::fmadd(x, k(0x3fb8aa3b), V::splat(0.5)));
    let neg_n = V::neg(n);
    let g = V::fmadd(neg_n, k(0x3f318000), x);
    let g = V::fmadd(neg_n, k(0xb95e8083), g);
    let p = V::fmadd(g, k(0x39506967), k(0x3ab743ce));
    let p = V::fmadd(p, g, k(0x3c088908));
    let p = V::fmadd(p, g, k(0x3d2aa9c1));
    let p = V::fmadd(p, g, k(0x3e2aaaaa));
    let p = V::fmadd(p, g, V::splat(0.5));
    let e = V::fmadd(p, V::mul(g, g), g);
    V::mul(V::add(e, V::splat(1.0)), V::pow2(n))
}

/// Softmax of `rows` consecutive rows: per row the maximum, e^(x - max) into a scratch row
/// and summed as `row_sum` would sum them, and each e^(x - max) times 1 / sum (XLA's
/// simplifier turned the divide into that product).
///
/// Each row is read from memory once, by its maximum; the exponentials (the arithmetic) then
/// work on it in the cache. Memory is kept busy while they do: the same loop prefetches the
/// next row and writes out the previous row's results (from the other half of `scratch`,
/// two rows long), so reads and writes overlap the arithmetic instead of taking turns with
/// it. `stream` writes the output with non-temporal stores where it is aligned to the
/// vectors.
#[inline(always)]
pub(super) unsafe fn softmax_rows<V: Simd>(x: *const f32, out: *mut f32, scratch: *mut f32, cols: usize, rows: usize, stream: bool) {
    // Rows are whole vectors long (`RowIsa::accepts_row`), so all are aligned if the first is.
    let stream = stream && (out as usize) % (4 * V::LANES) == 0;
    let mut pending: Option<Scaled<V>> = None;
    for r in 0..rows {
        let (row, exps) = (x.add(r * cols), scratch.add((r % 2) * cols));
        // The last row prefetches itself (it is in the cache already): no branch in the loop.
        let next = if r + 1 < rows { row.add(cols) } else { row };
        let m = V::splat(row_max::<V>(row, cols, f32::NEG_INFINITY));
        let sum = match &pending {
            Some(previous) => exp_pass::<V, true>(row, m, exps, cols, next, previous, stream),
            // Nothing to write out yet: `exp_pass` without `WRITE` never looks at it.
            None => exp_pass::<V, false>(row, m, exps, cols, next, &Scaled { to: out, from: exps, inv: m }, stream),
        };
        pending = Some(Scaled { to: out.add(r * cols), from: exps, inv: V::splat(1.0 / sum) });
    }
    if let Some(last) = pending {
        for j in (0..cols).step_by(V::LANES) {
            last.write(j, stream);
        }
    }
}

/// e^(row - m) into `exps` and their sum in `row_sum`'s order (four vectors a step, each
/// added to its own accumulator), prefetching `next`; with `WRITE`, also `previous`'s
/// results.
#[inline(always)]
unsafe fn exp_pass<V: Simd, const WRITE: bool>(row: *const f32, m: V, exps: *mut f32, cols: usize, next: *const f32, previous: &Scaled<V>, stream: bool) -> f32 {
    let mut acc = sum_start::<V>(0.0);
    for j in (0..cols).step_by(4 * V::LANES) {
        for (i, a) in acc.iter_mut().enumerate() {
            let at = j + V::LANES * i;
            if at % LINE_FLOATS == 0 {
                prefetch(next.add(at));
            }
            let e = exp_of_nonpositive(V::sub(V::load(row.add(at)), m));
            V::store(exps.add(at), e);
            *a = V::add(*a, e);
            if WRITE {
                previous.write(at, stream);
            }
        }
    }
    finish_sum(acc)
}

/// A row whose exponentials are computed (`from`) and which is yet to be written to `to`:
/// each times `inv`, 1 / their sum.
struct Scaled<V> {
    to: *mut f32,
    from: *const f32,
    inv: V,
}

impl<V: Simd> Scaled<V> {
    /// The result's vector at element `at`.
    #[inline(always)]
    unsafe fn write(&self, at: usize, stream: bool) {
        let y = V::mul(V::load(self.from.add(at)), self.inv);
        if stream {
            V::stream(self.to.add(at), y);
        } else {
            V::store(self.to.add(at), y);
        }
    }
}

/// f32 elements in a cache line.
const LINE_FLOATS: usize = 16;

/// Starts loading the cache line of `p` into the L2 cache.
#[inline(always)]
unsafe fn prefetch(p: *const f32) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
    _mm_prefetch::<_MM_HINT_T1>(p as *const i8)
}

/// XLA's f32 rsqrt as LLVM lowers it for x86: the `rsqrtss` estimate refined by one
/// Newton step, r (a r r - 1)(-r / 2) + r as two FMAs; the estimate itself when `a` is
/// anything but a positive normal number or a NaN (`llvm.is.fpclass` mask 764).
#[inline(always)]
unsafe fn rsqrt(a: f32) -> f32 {
    use std::arch::x86_64::{_mm_cvtss_f32, _mm_rsqrt_ss, _mm_set_ss};
    let r = _mm_cvtss_f32(_mm_rsqrt_ss(_mm_set_ss(a)));
    let step = (-0.5 * r).mul_add((a * r).mul_add(r, -1.0), r);
    let positive_normal = a.is_sign_positive() && a.is_normal();
    if positive_normal || a.is_nan() {
        step
    } else {
        r
    }
}

/// One row of layer normalization (`scales`: mean scale, variance scale, epsilon):
/// mean = sum(x) * mean_scale, sum((x - mean)^2) (the square added by FMA),
/// r = rsqrt(sum * var_scale + epsilon) (one FMA), then ((x - mean) * r) * gamma + beta (one FMA).
#[inline(always)]
pub(super) unsafe fn layernorm_row<V: Simd>(x: *const f32, gamma: *const f32, beta: *const f32, out: *mut f32, cols: usize, scales: [f32; 3], stream: bool) {
    let [mean_scale, var_scale, epsilon] = scales;
    let mean = row_sum::<V>(x, cols, 0.0) * mean_scale;
    let m = V::splat(mean);
    let mut acc = sum_start::<V>(0.0);
    for j in (0..cols).step_by(4 * V::LANES) {
        for (i, a) in acc.iter_mut().enumerate() {
            let d = V::sub(V::load(x.add(j + V::LANES * i)), m);
            *a = V::fmadd(d, d, *a);
        }
    }
    let var = finish_sum(acc);
    let r = V::splat(rsqrt(var.mul_add(var_scale, epsilon)));
    let stream = stream && (out as usize) % (4 * V::LANES) == 0;
    for j in (0..cols).step_by(V::LANES) {
        let d = V::mul(V::sub(V::load(x.add(j)), m), r);
        let y = V::fmadd(d, V::load(gamma.add(j)), V::load(beta.add(j)));
        if stream {
            V::stream(out.add(j), y);
        } else {
            V::store(out.add(j), y);
        }
    }
}

/// The reductions of row `r`: two at once in one walk over the row, as the generated
/// multi-output kernel does (each with its own four accumulators in registers, so each sees
/// its additions in the order of `row_sum` / `row_max`), others one by one.
#[inline(always)]
pub(super) unsafe fn reduce_row<V: Simd>(reductions: &[RowReduction], r: usize, cols: usize) {
    let row = |red: &RowReduction| (red.input as *const f32).add(r * cols);
    let init = |red: &RowReduction| f32::from_bits(red.init as u32);
    let is_max = |red: &RowReduction| red.op == REDUCE_MAX;
    let store = |red: &RowReduction, v: f32| *(red.out as *mut f32).add(r) = v;
    if let [a, b] = reductions {
        let (x, y, ia, ib) = (row(a), row(b), init(a), init(b));
        let (va, vb) = match (is_max(a), is_max(b)) {
            (false, true) => {
                let (va, vb) = two(x, y, cols, sum_start::<V>(ia), [V::splat(ib); 4], V::add, V::maximum);
                (finish_sum(va), finish_max(vb, y, cols, ib))
            }
            (true, false) => {
                let (va, vb) = two(x, y, cols, [V::splat(ia); 4], sum_start::<V>(ib), V::maximum, V::add);
                (finish_max(va, x, cols, ia), finish_sum(vb))
            }
            (false, false) => {
                let (va, vb) = two(x, y, cols, sum_start::<V>(ia), sum_start::<V>(ib), V::add, V::add);
                (finish_sum(va), finish_sum(vb))
            }
            (true, true) => {
                let (va, vb) = two(x, y, cols, [V::splat(ia); 4], [V::splat(ib); 4], V::maximum, V::maximum);
                (finish_max(va, x, cols, ia), finish_max(vb, y, cols, ib))
            }
        };
        store(a, va);
        store(b, vb);
        return;
    }
    for red in reductions {
        store(red, if is_max(red) { row_max::<V>(row(red), cols, init(red)) } else { row_sum::<V>(row(red), cols, init(red)) });
    }
}

/// Two reductions of rows `x` and `y` in one walk (the ops inlined).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn two<V: Simd>(
    x: *const f32,
    y: *const f32,
    cols: usize,
    mut a: Acc<V>,
    mut b: Acc<V>,
    fa: unsafe fn(V, V) -> V,
    fb: unsafe fn(V, V) -> V,
) -> (Acc<V>, Acc<V>) {
    for j in (0..cols).step_by(4 * V::LANES) {
        for i in 0..4 {
            a[i] = fa(a[i], V::load(x.add(j + V::LANES * i)));
            b[i] = fb(b[i], V::load(y.add(j + V::LANES * i)));
        }
    }
    (a, b)
}
