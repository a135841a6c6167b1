//! The FFT kernel behind HLO `fft`: FFT, IFFT, RFFT and IRFFT over the innermost 1 to 3
//! dimensions of a row-major array, in single or double precision, for any lengths (rustfft
//! picks mixed-radix, Rader or Bluestein algorithms as the length needs).
//!
//! Semantics (XLA's): FFT is the unnormalized forward transform; IFFT the inverse scaled by
//! 1/N with N the product of the transform lengths; RFFT transforms real input and keeps the
//! non-negative frequencies `n/2 + 1` of the innermost dimension; IRFFT is its inverse: the
//! innermost dimension's missing half is the conjugate mirror of the given half, and the
//! imaginary parts that a real result cannot carry (the zero-frequency bin and, for even `n`,
//! the Nyquist bin) are ignored, as C2R transforms do.

use crate::float_env::FlushDenormals;
use num_complex::Complex;
use rayon::prelude::*;
use rustfft::{Fft, FftDirection, FftNum, FftPlanner};
use std::sync::{Arc, Mutex, OnceLock};

/// `fft_type` code of [`hlojit_rt_fft`]: forward complex-to-complex transform.
pub const FFT: i32 = 0;
/// `fft_type` code: inverse complex-to-complex transform, scaled by 1/N.
pub const IFFT: i32 = 1;
/// `fft_type` code: real-to-complex forward transform keeping `n/2 + 1` frequencies.
pub const RFFT: i32 = 2;
/// `fft_type` code: complex-to-real inverse of [`RFFT`], scaled by 1/N.
pub const IRFFT: i32 = 3;

/// Work (in complex elements) below which a transform runs on the calling thread (which
/// already runs with flush-to-zero, like generated code).
const PARALLEL_MIN_ELEMENTS: usize = 1 << 15;

/// Runs an HLO `fft` on row-major buffers.
///
/// `input` holds `batch` arrays of the transform's input dimensions (`lengths`, with the
/// innermost one `lengths[rank-1]/2 + 1` for IRFFT), complex (interleaved re, im) except for
/// RFFT, where it is real. `output` receives `batch` arrays of the output dimensions
/// (`lengths`, with the innermost `lengths[rank-1]/2 + 1` for RFFT), real for IRFFT.
/// `double` selects f64/c128 (non-zero) or f32/c64. Returns 0, or 1 for arguments it cannot
/// handle (the compiler never emits those).
///
/// # Safety
/// The buffers must be valid for the sizes above, and `lengths` for `rank` elements.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_fft(
    input: *const u8,
    output: *mut u8,
    fft_type: i32,
    double: i32,
    batch: i64,
    rank: i64,
    lengths: *const i64,
) -> i32 {
    if !(1..=3).contains(&rank) || batch < 0 || lengths.is_null() {
        return 1;
    }
    // SAFETY: the caller passes `rank` lengths.
    let lengths: Vec<usize> =
        unsafe { std::slice::from_raw_parts(lengths, rank as usize) }.iter().map(|&l| l.max(0) as usize).collect();
    let Ok(spec) = Spec::new(fft_type, batch as usize, lengths) else {
        return 1;
    };
    if spec.is_empty() {
        return 0;
    }
    if double != 0 {
        // SAFETY: forwarded caller guarantees.
        unsafe { run::<f64>(&spec, input, output) }
    } else {
        // SAFETY: forwarded caller guarantees.
        unsafe { run::<f32>(&spec, input, output) }
    }
    0
}

/// The shape of one transform.
#[derive(Clone, Debug)]
struct Spec {
    kind: i32,
    batch: usize,
    lengths: Vec<usize>,
}

impl Spec {
    fn new(kind: i32, batch: usize, lengths: Vec<usize>) -> Result<Spec, ()> {
        if !matches!(kind, FFT | IFFT | RFFT | IRFFT) {
            return Err(());
        }
        Ok(Spec { kind, batch, lengths })
    }

    fn is_empty(&self) -> bool {
        self.batch == 0 || self.lengths.contains(&0)
    }

    /// Dimensions of the complex half-spectrum of a real transform: the innermost length
    /// becomes `n/2 + 1`.
    fn half_dims(&self) -> Vec<usize> {
        let mut d = self.lengths.clone();
        let last = d.len() - 1;
        d[last] = d[last] / 2 + 1;
        d
    }
}

/// Reads and writes the buffers as the element type `T` says and runs the transform.
unsafe fn run<T: FftNum>(spec: &Spec, input: *const u8, output: *mut u8) {
    let batch = spec.batch;
    let full: usize = spec.lengths.iter().product();
    let half: usize = spec.half_dims().iter().product();
    // SAFETY (all four arms): the caller sized the buffers for these element counts; input
    // and output may be the same buffer only for FFT/IFFT, where the input is copied first.
    match spec.kind {
        FFT | IFFT => {
            let n = batch * full;
            let out = unsafe { std::slice::from_raw_parts_mut(output as *mut Complex<T>, n) };
            if !std::ptr::eq(input, output) {
                let inp = unsafe { std::slice::from_raw_parts(input as *const Complex<T>, n) };
                out.copy_from_slice(inp);
            }
            let direction = if spec.kind == FFT { FftDirection::Forward } else { FftDirection::Inverse };
            let dims = batched(batch, &spec.lengths);
            for axis in 1..dims.len() {
                transform_axis(out, &dims, axis, direction);
            }
            if spec.kind == IFFT {
                scale(out, T::from_f64(1.0 / full as f64).unwrap_or_else(T::zero));
            }
        }
        RFFT => {
            let inp = unsafe { std::slice::from_raw_parts(input as *const T, batch * full) };
            let out = unsafe { std::slice::from_raw_parts_mut(output as *mut Complex<T>, batch * half) };
            rfft(spec, inp, out);
        }
        _ => {
            let inp = unsafe { std::slice::from_raw_parts(input as *const Complex<T>, batch * half) };
            let out = unsafe { std::slice::from_raw_parts_mut(output as *mut T, batch * full) };
            irfft(spec, inp, out);
        }
    }
}

fn batched(batch: usize, dims: &[usize]) -> Vec<usize> {
    let mut d = vec![batch];
    d.extend_from_slice(dims);
    d
}

/// Real-to-complex: a complex FFT of each innermost row (keeping `n/2 + 1` bins), then
/// complex FFTs along the outer transform dimensions.
fn rfft<T: FftNum>(spec: &Spec, input: &[T], output: &mut [Complex<T>]) {
    let n = *spec.lengths.last().expect("rank >= 1");
    let kept = n / 2 + 1;
    let plan = plan::<T>(n, FftDirection::Forward);
    let rows = output.len() / kept;
    let work = |(out_rows, in_rows): (&mut [Complex<T>], &[T])| {
        let _env = FlushDenormals::new();
        let mut line = vec![Complex::new(T::zero(), T::zero()); n];
        let mut scratch = vec![Complex::new(T::zero(), T::zero()); plan.get_inplace_scratch_len()];
        for (o, i) in out_rows.chunks_mut(kept).zip(in_rows.chunks(n)) {
            for (c, &x) in line.iter_mut().zip(i) {
                *c = Complex::new(x, T::zero());
            }
            plan.process_with_scratch(&mut line, &mut scratch);
            o.copy_from_slice(&line[..kept]);
        }
    };
    let rows_per_task = rows_per_task(rows, n);
    if rows_per_task >= rows {
        work((output, input));
    } else {
        output.par_chunks_mut(rows_per_task * kept).zip(input.par_chunks(rows_per_task * n)).for_each(work);
    }
    let dims = batched(spec.batch, &spec.half_dims());
    for axis in 1..dims.len() - 1 {
        transform_axis(output, &dims, axis, FftDirection::Forward);
    }
}

/// Complex-to-real: inverse complex FFTs along the outer transform dimensions of the
/// half-spectrum, then per innermost row the Hermitian completion, an inverse FFT and its real
/// part, all scaled by 1/N.
fn irfft<T: FftNum>(spec: &Spec, input: &[Complex<T>], output: &mut [T]) {
    let n = *spec.lengths.last().expect("rank >= 1");
    let kept = n / 2 + 1;
    let mut work = input.to_vec();
    let dims = batched(spec.batch, &spec.half_dims());
    for axis in 1..dims.len() - 1 {
        transform_axis(&mut work, &dims, axis, FftDirection::Inverse);
    }
    let full: usize = spec.lengths.iter().product();
    let norm = T::from_f64(1.0 / full as f64).unwrap_or_else(T::zero);
    let plan = plan::<T>(n, FftDirection::Inverse);
    let rows = output.len() / n;
    let task = |(out_rows, in_rows): (&mut [T], &[Complex<T>])| {
        let _env = FlushDenormals::new();
        let mut line = vec![Complex::new(T::zero(), T::zero()); n];
        let mut scratch = vec![Complex::new(T::zero(), T::zero()); plan.get_inplace_scratch_len()];
        for (o, i) in out_rows.chunks_mut(n).zip(in_rows.chunks(kept)) {
            line[..kept].copy_from_slice(i);
            for k in kept..n {
                line[k] = i[n - k].conj();
            }
            plan.process_with_scratch(&mut line, &mut scratch);
            for (x, c) in o.iter_mut().zip(&line) {
                *x = c.re * norm;
            }
        }
    };
    let rows_per_task = rows_per_task(rows, n);
    if rows_per_task >= rows {
        task((output, &work));
    } else {
        output.par_chunks_mut(rows_per_task * n).zip(work.par_chunks(rows_per_task * kept)).for_each(task);
    }
}

/// Rows of length `n` one task takes: all of them when the work is small.
fn rows_per_task(rows: usize, n: usize) -> usize {
    if rows * n < PARALLEL_MIN_ELEMENTS {
        rows.max(1)
    } else {
        (PARALLEL_MIN_ELEMENTS / 4 / n.max(1)).clamp(1, rows.max(1))
    }
}

/// In-place complex FFTs of every line along `axis` of the row-major array `dims`.
fn transform_axis<T: FftNum>(data: &mut [Complex<T>], dims: &[usize], axis: usize, direction: FftDirection) {
    let n = dims[axis];
    if n <= 1 {
        return;
    }
    let inner: usize = dims[axis + 1..].iter().product();
    let plan = plan::<T>(n, direction);
    if inner == 1 {
        let rows = data.len() / n;
        let per_task = rows_per_task(rows, n);
        let task = |chunk: &mut [Complex<T>]| {
            let _env = FlushDenormals::new();
            let mut scratch = vec![Complex::new(T::zero(), T::zero()); plan.get_inplace_scratch_len()];
            plan.process_with_scratch(chunk, &mut scratch);
        };
        if per_task >= rows {
            task(data);
        } else {
            data.par_chunks_mut(per_task * n).for_each(task);
        }
        return;
    }
    // Strided lines: transpose each [n, inner] block to [inner, n], transform its rows, and
    // transpose back.
    let block = n * inner;
    let blocks = data.len() / block;
    let per_task = rows_per_task(blocks * inner, n).div_ceil(inner).max(1);
    let task = |chunk: &mut [Complex<T>]| {
        let _env = FlushDenormals::new();
        let mut t = vec![Complex::new(T::zero(), T::zero()); block];
        let mut scratch = vec![Complex::new(T::zero(), T::zero()); plan.get_inplace_scratch_len()];
        for b in chunk.chunks_mut(block) {
            for i in 0..n {
                for j in 0..inner {
                    t[j * n + i] = b[i * inner + j];
                }
            }
            plan.process_with_scratch(&mut t, &mut scratch);
            for i in 0..n {
                for j in 0..inner {
                    b[i * inner + j] = t[j * n + i];
                }
            }
        }
    };
    if per_task >= blocks {
        task(data);
    } else {
        data.par_chunks_mut(per_task * block).for_each(task);
    }
}

fn scale<T: FftNum>(data: &mut [Complex<T>], factor: T) {
    for c in data {
        *c = Complex::new(c.re * factor, c.im * factor);
    }
}

/// A cached plan: planning computes twiddles and picks algorithms, which costs more than a
/// small transform.
fn plan<T: FftNum>(n: usize, direction: FftDirection) -> Arc<dyn Fft<T>> {
    Planners::get::<T>(n, direction)
}

/// One process-wide planner per precision (the planner caches the plans it made).
struct Planners;

impl Planners {
    fn get<T: FftNum>(n: usize, direction: FftDirection) -> Arc<dyn Fft<T>> {
        use std::any::Any;
        static F32: OnceLock<Mutex<FftPlanner<f32>>> = OnceLock::new();
        static F64: OnceLock<Mutex<FftPlanner<f64>>> = OnceLock::new();
        let any: Box<dyn Any> = if std::mem::size_of::<T>() == 4 {
            let mut p = F32.get_or_init(|| Mutex::new(FftPlanner::new())).lock().unwrap_or_else(|e| e.into_inner());
            Box::new(p.plan_fft(n, direction))
        } else {
            let mut p = F64.get_or_init(|| Mutex::new(FftPlanner::new())).lock().unwrap_or_else(|e| e.into_inner());
            Box::new(p.plan_fft(n, direction))
        };
        match any.downcast::<Arc<dyn Fft<T>>>() {
            Ok(plan) => *plan,
            // Only f32 and f64 implement FftNum's float math here; any other T gets its own planner.
            Err(_) => FftPlanner::<T>::new().plan_fft(n, direction),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The textbook O(n^2) DFT along one axis of length n (the reference for the tests).
    fn naive_dft(x: &[Complex<f64>], inverse: bool) -> Vec<Complex<f64>> {
        let n = x.len();
        let sign = if inverse { 1.0 } else { -1.0 };
        (0..n)
            .map(|k| {
                x.iter()
                    .enumerate()
                    .map(|(j, v)| {
                        let a = sign * 2.0 * std::f64::consts::PI * (j * k) as f64 / n as f64;
                        v * Complex::new(a.cos(), a.sin())
                    })
                    .sum()
            })
            .collect()
    }

    fn signal(n: usize, seed: f64) -> Vec<Complex<f64>> {
        (0..n).map(|i| Complex::new((i as f64 * 0.7 + seed).sin(), (i as f64 * 1.3 - seed).cos())).collect()
    }

    fn close(a: &[Complex<f64>], b: &[Complex<f64>], tol: f64) {
        assert_eq!(a.len(), b.len());
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            assert!((x - y).norm() <= tol, "element {i}: {x} vs {y}");
        }
    }

    #[test]
    fn fft_and_ifft_match_the_naive_dft_for_awkward_lengths() {
        for n in [1usize, 2, 3, 7, 12, 17, 20] {
            let x = signal(n * 2, n as f64);
            let mut out = vec![Complex::new(0.0, 0.0); n * 2];
            unsafe {
                hlojit_rt_fft(x.as_ptr() as *const u8, out.as_mut_ptr() as *mut u8, FFT, 1, 2, 1, [n as i64].as_ptr())
            };
            let want: Vec<_> = x.chunks(n).flat_map(|r| naive_dft(r, false)).collect();
            close(&out, &want, 1e-9);
            unsafe {
                hlojit_rt_fft(x.as_ptr() as *const u8, out.as_mut_ptr() as *mut u8, IFFT, 1, 2, 1, [n as i64].as_ptr())
            };
            let want: Vec<_> = x.chunks(n).flat_map(|r| naive_dft(r, true)).map(|c| c / n as f64).collect();
            close(&out, &want, 1e-9);
        }
    }

    #[test]
    fn two_dimensional_fft_is_rows_then_columns() {
        let (r, c) = (3usize, 5usize);
        let x = signal(r * c, 0.3);
        let mut out = vec![Complex::new(0.0, 0.0); r * c];
        unsafe {
            hlojit_rt_fft(
                x.as_ptr() as *const u8,
                out.as_mut_ptr() as *mut u8,
                FFT,
                1,
                1,
                2,
                [r as i64, c as i64].as_ptr(),
            )
        };
        let rows: Vec<Complex<f64>> = x.chunks(c).flat_map(|row| naive_dft(row, false)).collect();
        let mut want = rows.clone();
        for j in 0..c {
            let col: Vec<_> = (0..r).map(|i| rows[i * c + j]).collect();
            for (i, v) in naive_dft(&col, false).into_iter().enumerate() {
                want[i * c + j] = v;
            }
        }
        close(&out, &want, 1e-9);
    }

    #[test]
    fn rfft_then_irfft_round_trips_odd_and_even_lengths() {
        for n in [5usize, 8, 15] {
            let x: Vec<f32> = (0..2 * n).map(|i| ((i * 7 % 11) as f32) - 5.0).collect();
            let kept = n / 2 + 1;
            let mut spec = vec![Complex::<f32>::new(0.0, 0.0); 2 * kept];
            let mut back = vec![0f32; 2 * n];
            let len = [n as i64];
            unsafe {
                hlojit_rt_fft(x.as_ptr() as *const u8, spec.as_mut_ptr() as *mut u8, RFFT, 0, 2, 1, len.as_ptr());
                hlojit_rt_fft(spec.as_ptr() as *const u8, back.as_mut_ptr() as *mut u8, IRFFT, 0, 2, 1, len.as_ptr());
            }
            let wide: Vec<Complex<f64>> = x.iter().map(|&v| Complex::new(v as f64, 0.0)).collect();
            let want: Vec<Complex<f64>> = wide.chunks(n).flat_map(|r| naive_dft(r, false)[..kept].to_vec()).collect();
            let got: Vec<Complex<f64>> = spec.iter().map(|c| Complex::new(c.re as f64, c.im as f64)).collect();
            close(&got, &want, 1e-4);
            for (a, b) in back.iter().zip(&x) {
                assert!((a - b).abs() < 1e-4, "{a} vs {b}");
            }
        }
    }

    #[test]
    fn irfft_ignores_the_imaginary_part_of_the_zero_frequency() {
        let n = 4usize;
        let spec = [Complex::new(4.0f64, 9.0), Complex::new(0.0, 0.0), Complex::new(0.0, 5.0)];
        let mut out = vec![0f64; n];
        unsafe { hlojit_rt_fft(spec.as_ptr() as *const u8, out.as_mut_ptr() as *mut u8, IRFFT, 1, 1, 1, [4].as_ptr()) };
        assert_eq!(out, vec![1.0; 4]);
    }

    #[test]
    fn transforms_split_across_threads_match_one_matrix_at_a_time() {
        // 4 x [128, 128]: big enough to be split into tasks, while each matrix alone is not.
        let (b, r, c) = (4usize, 128usize, 128usize);
        let x = signal(b * r * c, 1.7);
        let lengths = [r as i64, c as i64];
        let mut whole = vec![Complex::new(0.0, 0.0); b * r * c];
        unsafe {
            hlojit_rt_fft(x.as_ptr() as *const u8, whole.as_mut_ptr() as *mut u8, FFT, 1, b as i64, 2, lengths.as_ptr())
        };
        for k in 0..b {
            let one = &x[k * r * c..(k + 1) * r * c];
            let mut out = vec![Complex::new(0.0, 0.0); r * c];
            unsafe {
                hlojit_rt_fft(one.as_ptr() as *const u8, out.as_mut_ptr() as *mut u8, FFT, 1, 1, 2, lengths.as_ptr())
            };
            close(&whole[k * r * c..(k + 1) * r * c], &out, 1e-9);
        }
        // Spot-check one matrix against the separable naive DFT on a few entries.
        let first = &x[..r * c];
        let rows: Vec<Complex<f64>> = first.chunks(c).flat_map(|row| naive_dft(row, false)).collect();
        for j in [0usize, 5, 127] {
            let col: Vec<_> = (0..r).map(|i| rows[i * c + j]).collect();
            let want = naive_dft(&col, false);
            for i in [0usize, 3, 64] {
                assert!((whole[i * c + j] - want[i]).norm() < 1e-7, "({i}, {j})");
            }
        }
    }

    #[test]
    fn bad_arguments_are_rejected() {
        let mut out = [0u8; 8];
        assert_eq!(unsafe { hlojit_rt_fft(out.as_ptr(), out.as_mut_ptr(), FFT, 0, 1, 4, [1, 1, 1, 1].as_ptr()) }, 1);
        assert_eq!(unsafe { hlojit_rt_fft(out.as_ptr(), out.as_mut_ptr(), 9, 0, 1, 1, [1].as_ptr()) }, 1);
    }
}
