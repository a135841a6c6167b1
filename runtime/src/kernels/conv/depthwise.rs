//! The depthwise line kernel (one output feature per input feature): for a block of `PIXELS`
//! output pixels of one line and a vector of features, the accumulators stay in registers
//! while every window tap adds `image x weight` with a fused multiply-add, from zero, in tap
//! order — the generated depthwise kernel's arithmetic (`compiler/src/codegen/emitters/gemm/
//! depthwise.rs`). Its masked last vector of features is done here one feature at a time
//! with the same fused multiply-adds in the same order, so every output element is the same
//! bits.

use crate::kernels::gemm::Isa;

/// Output pixels computed together (the generated kernel's block).
pub const PIXELS: usize = 8;

/// One output line: `a` the line's first image pixel, `c` its first output pixel.
#[derive(Clone, Copy)]
pub struct Line<'a> {
    pub a: *const f32,
    pub c: *mut f32,
    /// `[tap][feature]` weights.
    pub w: *const f32,
    pub features: usize,
    pub width: usize,
    /// Elements between the image pixels of consecutive output pixels.
    pub x_step: isize,
    /// Elements between consecutive output pixels.
    pub ldc: usize,
    pub taps: &'a [isize],
}

pub type LineKernel = unsafe fn(&Line<'_>);

pub fn select(isa: Isa) -> Option<LineKernel> {
    #[cfg(target_arch = "x86_64")]
    {
        Some(match isa {
            Isa::Avx512 => avx512::line,
            Isa::Avx2Fma => avx2::line,
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = isa;
        None
    }
}

macro_rules! isa_line {
    ($module:ident, $features:literal, $vec:ty, $lanes:expr, $zero:ident, $load:ident, $store:ident, $fmadd:ident) => {
        #[cfg(target_arch = "x86_64")]
        mod $module {
            use super::{Line, PIXELS};
            use std::arch::x86_64::*;
            const LANES: usize = $lanes;

            /// # Safety
            /// The line's image, weights and outputs are valid for its sizes; the CPU has this
            /// module's features.
            #[target_feature(enable = $features)]
            pub unsafe fn line(l: &Line<'_>) {
                let pixels = PIXELS.min(l.width);
                let blocks = l.width.div_ceil(pixels);
                for blk in 0..blocks {
                    // The last block ends at the line's end, overlapping the one before.
                    let ow0 = (blk * pixels).min(l.width - pixels);
                    let a = unsafe { l.a.offset(ow0 as isize * l.x_step) };
                    let c = unsafe { l.c.add(ow0 * l.ldc) };
                    let full = if pixels == PIXELS { l.features / LANES * LANES } else { 0 };
                    let mut f0 = 0;
                    while f0 < full {
                        let mut acc: [$vec; PIXELS] = [$zero(); PIXELS];
                        for (t, &off) in l.taps.iter().enumerate() {
                            let w = unsafe { $load(l.w.add(t * l.features + f0)) };
                            let at = unsafe { a.offset(off).add(f0) };
                            for (r, acc) in acc.iter_mut().enumerate() {
                                let x = unsafe { $load(at.offset(r as isize * l.x_step)) };
                                *acc = $fmadd(x, w, *acc);
                            }
                        }
                        for (r, acc) in acc.iter().enumerate() {
                            unsafe { $store(c.add(r * l.ldc + f0), *acc) };
                        }
                        f0 += LANES;
                    }
                    for f in full..l.features {
                        for r in 0..pixels {
                            let mut acc = 0f32;
                            for (t, &off) in l.taps.iter().enumerate() {
                                let w = unsafe { *l.w.add(t * l.features + f) };
                                let x = unsafe { *a.offset(off + r as isize * l.x_step).add(f) };
                                acc = x.mul_add(w, acc);
                            }
                            unsafe { *c.add(r * l.ldc + f) = acc };
                        }
                    }
                }
            }
        }
    };
}

isa_line!(avx512, "avx512f", __m512, 16, _mm512_setzero_ps, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_fmadd_ps);
isa_line!(avx2, "avx2,fma", __m256, 8, _mm256_setzero_ps, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_fmadd_ps);
