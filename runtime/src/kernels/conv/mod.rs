//! The f32 convolution, built once with the runtime instead of generated and optimized by
//! LLVM in every module that has one (that was most of such a module's compile time): the
//! GEMM lowering without im2col and the depthwise kernel of `compiler/src/codegen/emitters/
//! gemm/conv.rs` and `depthwise.rs`, step for step, so results are the same bits. One
//! variant per instruction set (AVX-512, AVX2 + FMA), chosen by the compiler from its
//! target's features, with the tile its blocking would have generated.
//!
//! The input is first brought into a canonical image `X[batch][padded spatial...][features]`
//! (padding, base dilation and negative padding applied) unless it already is one. Per
//! (feature or batch) group and output line, strips of `mr` output pixels read their A rows
//! straight from the image at a fixed offset per window tap; the group's kernel is packed
//! `[taps * Cg][nr]` once per group and task. Padding and base-dilation holes are zeros that
//! get multiplied (XLA:CPU's Eigen convolution; the compiler takes this path only where that
//! is XLA's semantics, see `compiler/src/passes/conv_taps.rs`).

mod depthwise;
mod tile;

use crate::custom_call::last_error::set_failure as set_last_error;
use crate::kernels::gemm::{Isa, Scratch};
use crate::symbols::{hlojit_rt_parallel_for, ALLOCATION_FAILURE};
use std::sync::atomic::{AtomicBool, Ordering};

/// Spatial dimensions the descriptor has room for.
pub const MAX_SPATIAL: usize = 3;
/// Below this many flops the convolution runs on the calling thread (as the generated one).
const PARALLEL_MIN_FLOPS: f64 = 4.0e6;
/// Canonical images with fewer elements than this are filled on the calling thread.
const PARALLEL_MIN_FILL: i64 = 1 << 16;

/// One convolution, as generated code passes it (all fields 64-bit; strides in elements;
/// per-spatial-dimension arrays in spatial order, the first `spatial` entries used).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ConvF32 {
    pub spatial: i64,
    /// Input batch and features; the kernel's input and output features per group.
    pub batch: i64,
    pub features_in: i64,
    pub group_in: i64,
    pub group_out: i64,
    pub feature_groups: i64,
    pub batch_groups: i64,
    pub in_size: [i64; MAX_SPATIAL],
    pub out_size: [i64; MAX_SPATIAL],
    pub window: [i64; MAX_SPATIAL],
    pub stride: [i64; MAX_SPATIAL],
    pub pad_low: [i64; MAX_SPATIAL],
    pub pad_high: [i64; MAX_SPATIAL],
    pub base_dilation: [i64; MAX_SPATIAL],
    pub window_dilation: [i64; MAX_SPATIAL],
    /// Non-zero where the window is reversed.
    pub reversed: [i64; MAX_SPATIAL],
    pub input: *const f32,
    pub in_batch: i64,
    pub in_feature: i64,
    pub in_spatial: [i64; MAX_SPATIAL],
    pub kernel: *const f32,
    pub kernel_in: i64,
    pub kernel_out: i64,
    pub kernel_spatial: [i64; MAX_SPATIAL],
    /// Output features are contiguous.
    pub output: *mut f32,
    pub out_batch: i64,
    pub out_spatial: [i64; MAX_SPATIAL],
    /// Register tile rows and vectors per row (GEMM lowering).
    pub mr: i64,
    pub nv: i64,
    /// Non-zero: one output feature per input feature, vectorized over features.
    pub depthwise: i64,
}

/// Whether a variant exists for this register tile (GEMM lowering; the depthwise kernel has
/// no tile).
pub fn has_tile(isa: Isa, mr: i64, nv: i64) -> bool {
    tile::select(isa, mr, nv).is_some()
}

/// The AVX-512 convolution; 0 on success, 1 with this thread's last error set when scratch
/// memory cannot be had or the descriptor has no variant.
///
/// # Safety
/// `desc` describes valid input, kernel and output buffers (the output not overlapping the
/// others) for its sizes, and the CPU has AVX-512F.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_conv_f32_avx512(desc: *const ConvF32) -> i32 {
    unsafe { conv(&*desc, Isa::Avx512) }
}

/// The AVX2 + FMA convolution (as [`hlojit_rt_conv_f32_avx512`]).
///
/// # Safety
/// As [`hlojit_rt_conv_f32_avx512`], with a CPU that has AVX2 and FMA.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_conv_f32_avx2(desc: *const ConvF32) -> i32 {
    unsafe { conv(&*desc, Isa::Avx2Fma) }
}

/// The work of one call, shared by its tasks.
struct Plan<'a> {
    d: &'a ConvF32,
    n: usize,
    /// Canonical image and its strides (batch, spatial; features contiguous).
    image: *const f32,
    pitch_batch: i64,
    pitch: [i64; MAX_SPATIAL],
    /// The image's padded spatial sizes (a copy only).
    padded: [i64; MAX_SPATIAL],
    taps: Vec<isize>,
    /// Each tap's offset in the kernel (mirrored in reversed dimensions): packing reads
    /// `taps * Cg * nr` weights per group, and computing a tap's position per weight (a
    /// division and a remainder per spatial dimension) was most of a small convolution's
    /// time (lenet's 5x5x6x16 kernel: 2,400 weights per call, about as long as its tiles).
    kernel_taps: Vec<isize>,
    lines: i64,
    width: i64,
    isa: Isa,
    failed: AtomicBool,
}

impl Plan<'_> {
    /// `(batch, spatial[..n-1])` of output line `line`.
    fn line_coords(&self, line: i64) -> (i64, [i64; MAX_SPATIAL]) {
        let mut rest = line;
        let mut at = [0; MAX_SPATIAL];
        for s in (0..self.n - 1).rev() {
            at[s] = rest % self.d.out_size[s];
            rest /= self.d.out_size[s];
        }
        (rest, at)
    }

    /// Image offset of output line `(ob, at)`'s first pixel for input batch `n_in`.
    fn image_line(&self, n_in: i64, at: &[i64; MAX_SPATIAL]) -> i64 {
        let lead = self.n - 1;
        let steps = at[..lead].iter().zip(&self.d.stride[..lead]).zip(&self.pitch[..lead]);
        n_in * self.pitch_batch + steps.map(|((a, st), p)| a * st * p).sum::<i64>()
    }

    fn output_line(&self, ob: i64, at: &[i64; MAX_SPATIAL]) -> i64 {
        let lead = self.n - 1;
        ob * self.d.out_batch + at[..lead].iter().zip(&self.d.out_spatial[..lead]).map(|(a, s)| a * s).sum::<i64>()
    }

    /// The kernel element at input feature `ci`, output feature `o` and window tap `t`.
    fn weight(&self, ci: i64, o: i64, t: usize) -> f32 {
        let off = (ci * self.d.kernel_in + o * self.d.kernel_out) as isize + self.kernel_taps[t];
        unsafe { *self.d.kernel.offset(off) }
    }
}

/// Kernel offset of every window tap (taps row-major over the window, mirrored in reversed
/// dimensions).
fn kernel_taps(d: &ConvF32, n: usize, count: i64) -> Vec<isize> {
    (0..count)
        .map(|t| {
            let (mut rest, mut off) = (t, 0);
            for s in (0..n).rev() {
                let mut ts = rest % d.window[s];
                rest /= d.window[s];
                if d.reversed[s] != 0 {
                    ts = d.window[s] - 1 - ts;
                }
                off += ts * d.kernel_spatial[s];
            }
            off as isize
        })
        .collect()
}

fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

unsafe fn conv(d: &ConvF32, isa: Isa) -> i32 {
    let n = d.spatial as usize;
    if !(1..=MAX_SPATIAL).contains(&n) || d.feature_groups < 1 || d.batch_groups < 1 || d.group_in < 1 {
        set_last_error(format!("precompiled convolution: unsupported descriptor {d:?}"));
        return 1;
    }
    let depthwise = d.depthwise != 0;
    if !depthwise && (tile::select(isa, d.mr, d.nv).is_none() || d.out_size[n - 1] < d.mr) {
        set_last_error(format!("no precompiled convolution tile {}x{} for {isa:?}", d.mr, d.nv));
        return 1;
    }
    let out_batch = d.batch / d.batch_groups;
    let width = d.out_size[n - 1];
    let lines = out_batch * d.out_size[..n - 1].iter().product::<i64>();
    if width <= 0 || lines <= 0 || d.group_out <= 0 {
        return 0;
    }
    // The input is the image when it has no padding or holes and contiguous features.
    let plain = (0..n).all(|s| d.pad_low[s] == 0 && d.pad_high[s] == 0 && d.base_dilation[s] == 1) && (d.in_feature == 1 || d.features_in == 1);
    let mut padded = [0; MAX_SPATIAL];
    let (pitch_batch, pitch, image_len) = if plain {
        (d.in_batch, d.in_spatial, 0)
    } else {
        let mut pitch = [0; MAX_SPATIAL];
        let mut p = d.features_in;
        for s in (0..n).rev() {
            let dilated = if d.in_size[s] == 0 { 0 } else { (d.in_size[s] - 1) * d.base_dilation[s] + 1 };
            padded[s] = (dilated + d.pad_low[s] + d.pad_high[s]).max(0);
            pitch[s] = p;
            p *= padded[s];
        }
        (p, pitch, p * d.batch)
    };
    let taps_count: i64 = d.window[..n].iter().product();
    let mut taps = Vec::with_capacity(taps_count as usize);
    for t in 0..taps_count {
        let (mut rest, mut off) = (t, 0);
        for s in (0..n).rev() {
            off += rest % d.window[s] * d.window_dilation[s] * pitch[s];
            rest /= d.window[s];
        }
        taps.push(off as isize);
    }
    let Some(image) = Scratch::new(image_len as usize * 4) else { return 1 };
    let plan = Plan {
        d,
        n,
        image: if plain { d.input } else { image.ptr as *const f32 },
        pitch_batch,
        pitch,
        padded,
        taps,
        kernel_taps: kernel_taps(d, n, taps_count),
        lines,
        width,
        isa,
        failed: AtomicBool::new(false),
    };
    let ctx = &plan as *const Plan as *const *mut u8;
    if !plain {
        let fill_lines = d.batch * padded[..n - 1].iter().product::<i64>();
        if image_len >= PARALLEL_MIN_FILL {
            unsafe { hlojit_rt_parallel_for(fill_task, ctx, fill_lines, 1) };
        } else {
            unsafe { fill_task(ctx, 0, fill_lines) };
        }
    }
    let groups = d.feature_groups * d.batch_groups;
    let flops = 2.0 * (groups * lines * width) as f64 * d.group_out as f64 * (taps_count * d.group_in) as f64;
    let (task, units): (crate::symbols::KernelTask, i64) = if depthwise { (depthwise_task, lines) } else { (gemm_task, groups * lines) };
    if flops < PARALLEL_MIN_FLOPS {
        unsafe { task(ctx, 0, units) };
    } else {
        unsafe { hlojit_rt_parallel_for(task, ctx, units, 1) };
    }
    drop(image);
    if plan.failed.load(Ordering::Relaxed) {
        set_last_error(format!("{ALLOCATION_FAILURE} temporary memory for a convolution"));
        return 1;
    }
    0
}

/// Fills image lines `[l0, l1)` (batch x all padded spatial dimensions but the last): the
/// input element where a padded position maps to one, zero elsewhere.
unsafe extern "C" fn fill_task(ctx: *const *mut u8, l0: i64, l1: i64) {
    let p = unsafe { &*(ctx as *const Plan) };
    let d = p.d;
    let n = p.n;
    let c = d.features_in;
    let image = p.image as *mut f32;
    // The input coordinate of padded position `q` in dimension `s`, if it is a real element.
    let unpad = |s: usize, q: i64| -> Option<i64> {
        let q = q - d.pad_low[s];
        (q >= 0 && q % d.base_dilation[s] == 0 && q / d.base_dilation[s] < d.in_size[s]).then(|| q / d.base_dilation[s])
    };
    for l in l0..l1 {
        let mut rest = l;
        let mut src = Some(0i64);
        for s in (0..n - 1).rev() {
            let q = rest % p.padded[s];
            rest /= p.padded[s];
            src = src.and_then(|o| unpad(s, q).map(|u| o + u * d.in_spatial[s]));
        }
        let src = src.map(|o| o + rest * d.in_batch);
        let dst = unsafe { image.add((l * p.padded[n - 1] * c) as usize) };
        for x in 0..p.padded[n - 1] {
            let row = unsafe { std::slice::from_raw_parts_mut(dst.add((x * c) as usize), c as usize) };
            match src.and_then(|o| unpad(n - 1, x).map(|u| o + u * d.in_spatial[n - 1])) {
                Some(o) => {
                    for (ch, v) in row.iter_mut().enumerate() {
                        *v = unsafe { *d.input.offset((o + ch as i64 * d.in_feature) as isize) };
                    }
                }
                None => row.fill(0.0),
            }
        }
    }
}

/// Output lines `[u0, u1)` of all groups (unit = group x line) on the tap micro-kernel.
unsafe extern "C" fn gemm_task(ctx: *const *mut u8, u0: i64, u1: i64) {
    let p = unsafe { &*(ctx as *const Plan) };
    let d = p.d;
    let Some(uk) = tile::select(p.isa, d.mr, d.nv) else { return p.failed.store(true, Ordering::Relaxed) };
    let nr = d.nv * p.isa.lanes();
    let depth = p.taps.len() as i64 * d.group_in;
    let strips_n = ceil_div(d.group_out, nr);
    let Some(bp) = Scratch::new((strips_n * nr * depth * 4) as usize) else { return p.failed.store(true, Ordering::Relaxed) };
    let bp = bp.ptr as *mut f32;
    let batch_group_size = if d.batch_groups > 1 { d.batch / d.batch_groups } else { 0 };
    let n = p.n;
    let mr = d.mr;
    let row = (d.stride[n - 1] * p.pitch[n - 1]) as isize;
    let ldc = d.out_spatial[n - 1];
    for u in u0..u1 {
        let g = u / p.lines;
        let line = u % p.lines;
        if u == u0 || line == 0 {
            // The group's kernel as `[strip][tap * Cg + ci][nr]`, zero past its last column.
            for js in 0..strips_n {
                let first = js * nr;
                let valid = (d.group_out - first).min(nr);
                let dst = unsafe { bp.add((first * depth) as usize) };
                // Everything but the element loads hoisted into locals: through raw pointers
                // the compiler cannot tell the stores from the descriptor's fields.
                let (kernel, k_in, k_out) = (d.kernel, d.kernel_in as isize, d.kernel_out as isize);
                let o0 = ((g * d.group_out + first) * d.kernel_out) as isize;
                let (nr_u, valid) = (nr as usize, valid as usize);
                let mut kk = 0usize;
                for &kt in &p.kernel_taps {
                    for ci in 0..d.group_in as isize {
                        let src = unsafe { kernel.offset(o0 + ci * k_in + kt) };
                        let row = unsafe { std::slice::from_raw_parts_mut(dst.add(kk * nr_u), nr_u) };
                        let (real, pad) = row.split_at_mut(valid);
                        if k_out == 1 {
                            real.copy_from_slice(unsafe { std::slice::from_raw_parts(src, valid) });
                        } else {
                            for (i, w) in real.iter_mut().enumerate() {
                                *w = unsafe { *src.offset(i as isize * k_out) };
                            }
                        }
                        pad.fill(0.0);
                        kk += 1;
                    }
                }
            }
        }
        let (ob, at) = p.line_coords(line);
        let n_in = ob + g * batch_group_size;
        let feature0 = if d.feature_groups > 1 { g * d.group_in } else { 0 };
        let a_line = unsafe { p.image.offset((p.image_line(n_in, &at) + feature0) as isize) };
        let c_line = unsafe { d.output.offset((p.output_line(ob, &at) + g * d.group_out) as isize) };
        for si in 0..ceil_div(p.width, mr) {
            // The last strip ends at the line's end (overlapping the one before), so every
            // strip has mr real pixels.
            let ow0 = (si * mr).min(p.width - mr);
            let a = unsafe { a_line.offset(ow0 as isize * row) };
            let c = unsafe { c_line.offset((ow0 * ldc) as isize) };
            for js in 0..strips_n {
                let first = js * nr;
                let cols = (d.group_out - first).min(nr);
                unsafe {
                    uk(a, bp.add((first * depth) as usize), c.add(first as usize), d.group_in as usize, ldc as usize, cols as usize, row, &p.taps)
                };
            }
        }
    }
}

/// Output lines `[l0, l1)` of a depthwise convolution.
unsafe extern "C" fn depthwise_task(ctx: *const *mut u8, l0: i64, l1: i64) {
    let p = unsafe { &*(ctx as *const Plan) };
    let d = p.d;
    let Some(kernel) = depthwise::select(p.isa) else { return p.failed.store(true, Ordering::Relaxed) };
    let features = d.group_out * d.feature_groups;
    let taps = p.taps.len() as i64;
    let Some(wp) = Scratch::new((taps * features * 4) as usize) else { return p.failed.store(true, Ordering::Relaxed) };
    let wp = wp.ptr as *mut f32;
    for t in 0..taps {
        for f in 0..features {
            unsafe { *wp.add((t * features + f) as usize) = p.weight(0, f, t as usize) };
        }
    }
    let n = p.n;
    for line in l0..l1 {
        let (ob, at) = p.line_coords(line);
        let l = depthwise::Line {
            a: unsafe { p.image.offset(p.image_line(ob, &at) as isize) },
            c: unsafe { d.output.offset(p.output_line(ob, &at) as isize) },
            w: wp,
            features: features as usize,
            width: p.width as usize,
            x_step: (d.stride[n - 1] * p.pitch[n - 1]) as isize,
            ldc: d.out_spatial[n - 1] as usize,
            taps: &p.taps,
        };
        unsafe { kernel(&l) };
    }
}

#[cfg(test)]
mod tests;
