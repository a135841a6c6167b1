//! The f32 vector operations the precompiled kernels are written in (`rows/row.rs`,
//! `dot_strips.rs`), for AVX2 (8 lanes) and AVX-512 (16 lanes): each one the instruction LLVM
//! selects for the generated kernel's IR on that instruction set, so that generic kernels
//! compute the same bits per lane.
//!
//! Every method is `#[inline(always)]` without target features of its own: it is inlined into
//! the `#[target_feature]` function of its instruction set (`rows/isa.rs`, say), where the
//! intrinsics then inline too.

use std::arch::x86_64::*;

pub(super) trait Simd: Copy {
    const LANES: usize;
    /// Which lanes a masked load or store touches.
    type Mask: Copy;
    unsafe fn splat(x: f32) -> Self;
    /// `init` in lane 0, -0 in the others: how LLVM seeds the first accumulator of a sum.
    unsafe fn first_lane(init: f32) -> Self;
    unsafe fn load(p: *const f32) -> Self;
    unsafe fn store(p: *mut f32, v: Self);
    /// The first `n` lanes (`n` below [`Simd::LANES`]).
    unsafe fn first_lanes(n: usize) -> Self::Mask;
    /// The lanes of `mask` from `p`, zeros in the others; nothing else is read.
    unsafe fn load_masked(p: *const f32, mask: Self::Mask) -> Self;
    /// The lanes of `mask` to `p`; nothing else is written.
    unsafe fn store_masked(p: *mut f32, mask: Self::Mask, v: Self);
    /// A non-temporal store; `p` aligned to the vector.
    unsafe fn stream(p: *mut f32, v: Self);
    /// The lanes, in the first [`Simd::LANES`] elements.
    unsafe fn lanes(v: Self) -> [f32; 16];
    unsafe fn add(a: Self, b: Self) -> Self;
    unsafe fn sub(a: Self, b: Self) -> Self;
    unsafe fn mul(a: Self, b: Self) -> Self;
    /// `a * b + c`, rounded once.
    unsafe fn fmadd(a: Self, b: Self, c: Self) -> Self;
    /// `maxps`: `b` when either is NaN or both are zeros (a clamp `b < a ? a : b`
    /// in one instruction, as LLVM selects it).
    unsafe fn max(a: Self, b: Self) -> Self;
    unsafe fn floor(a: Self) -> Self;
    unsafe fn neg(a: Self) -> Self;
    /// LLVM's `llvm.maximum`: a NaN operand gives a NaN, +0 is above -0.
    unsafe fn maximum(a: Self, b: Self) -> Self;
    /// 2^n from the bits of the integral `n` (within ±127); a NaN `n` gives 1 (the result it
    /// scales is NaN then anyway), as LLVM's `select(ord(n), n, 0)` before the conversion
    /// does: `cvttps2dq` of a NaN is 0x80000000, which the shift makes 0 as well.
    unsafe fn pow2(n: Self) -> Self;
}

#[inline(always)]
fn first_lane_array(init: f32) -> [f32; 16] {
    let mut a = [-0.0f32; 16];
    a[0] = init;
    a
}

impl Simd for __m256 {
    const LANES: usize = 8;
    type Mask = __m256i;
    #[inline(always)]
    unsafe fn splat(x: f32) -> Self {
        _mm256_set1_ps(x)
    }
    #[inline(always)]
    unsafe fn first_lane(init: f32) -> Self {
        _mm256_loadu_ps(first_lane_array(init).as_ptr())
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        _mm256_loadu_ps(p)
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: Self) {
        _mm256_storeu_ps(p, v)
    }
    #[inline(always)]
    unsafe fn first_lanes(n: usize) -> __m256i {
        _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
    }
    #[inline(always)]
    unsafe fn load_masked(p: *const f32, mask: __m256i) -> Self {
        _mm256_maskload_ps(p, mask)
    }
    #[inline(always)]
    unsafe fn store_masked(p: *mut f32, mask: __m256i, v: Self) {
        _mm256_maskstore_ps(p, mask, v)
    }
    #[inline(always)]
    unsafe fn stream(p: *mut f32, v: Self) {
        _mm256_stream_ps(p, v)
    }
    #[inline(always)]
    unsafe fn lanes(v: Self) -> [f32; 16] {
        let mut a = [0f32; 16];
        _mm256_storeu_ps(a.as_mut_ptr(), v);
        a
    }
    #[inline(always)]
    unsafe fn add(a: Self, b: Self) -> Self {
        _mm256_add_ps(a, b)
    }
    #[inline(always)]
    unsafe fn sub(a: Self, b: Self) -> Self {
        _mm256_sub_ps(a, b)
    }
    #[inline(always)]
    unsafe fn mul(a: Self, b: Self) -> Self {
        _mm256_mul_ps(a, b)
    }
    #[inline(always)]
    unsafe fn fmadd(a: Self, b: Self, c: Self) -> Self {
        _mm256_fmadd_ps(a, b, c)
    }
    #[inline(always)]
    unsafe fn max(a: Self, b: Self) -> Self {
        _mm256_max_ps(a, b)
    }
    #[inline(always)]
    unsafe fn floor(a: Self) -> Self {
        _mm256_floor_ps(a)
    }
    #[inline(always)]
    unsafe fn neg(a: Self) -> Self {
        _mm256_xor_ps(a, _mm256_set1_ps(-0.0))
    }
    /// As LLVM lowers it for AVX2, so that even the NaN kept is the same: the operands
    /// ordered by the sign of `a`, `maxps`, and the first ordered operand itself when it is a
    /// NaN (five instructions).
    #[inline(always)]
    unsafe fn maximum(a: Self, b: Self) -> Self {
        let x = _mm256_blendv_ps(b, a, a);
        let y = _mm256_blendv_ps(a, b, a);
        let m = _mm256_max_ps(x, y);
        _mm256_blendv_ps(m, x, _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x))
    }
    #[inline(always)]
    unsafe fn pow2(n: Self) -> Self {
        _mm256_castsi256_ps(_mm256_add_epi32(_mm256_slli_epi32::<23>(_mm256_cvttps_epi32(n)), _mm256_set1_epi32(0x3f800000)))
    }
}

impl Simd for __m512 {
    const LANES: usize = 16;
    type Mask = __mmask16;
    #[inline(always)]
    unsafe fn splat(x: f32) -> Self {
        _mm512_set1_ps(x)
    }
    #[inline(always)]
    unsafe fn first_lane(init: f32) -> Self {
        _mm512_loadu_ps(first_lane_array(init).as_ptr())
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        _mm512_loadu_ps(p)
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: Self) {
        _mm512_storeu_ps(p, v)
    }
    #[inline(always)]
    unsafe fn first_lanes(n: usize) -> __mmask16 {
        ((1u32 << n) - 1) as __mmask16
    }
    #[inline(always)]
    unsafe fn load_masked(p: *const f32, mask: __mmask16) -> Self {
        _mm512_maskz_loadu_ps(mask, p)
    }
    #[inline(always)]
    unsafe fn store_masked(p: *mut f32, mask: __mmask16, v: Self) {
        _mm512_mask_storeu_ps(p, mask, v)
    }
    #[inline(always)]
    unsafe fn stream(p: *mut f32, v: Self) {
        _mm512_stream_ps(p, v)
    }
    #[inline(always)]
    unsafe fn lanes(v: Self) -> [f32; 16] {
        let mut a = [0f32; 16];
        _mm512_storeu_ps(a.as_mut_ptr(), v);
        a
    }
    #[inline(always)]
    unsafe fn add(a: Self, b: Self) -> Self {
        _mm512_add_ps(a, b)
    }
    #[inline(always)]
    unsafe fn sub(a: Self, b: Self) -> Self {
        _mm512_sub_ps(a, b)
    }
    #[inline(always)]
    unsafe fn mul(a: Self, b: Self) -> Self {
        _mm512_mul_ps(a, b)
    }
    #[inline(always)]
    unsafe fn fmadd(a: Self, b: Self, c: Self) -> Self {
        _mm512_fmadd_ps(a, b, c)
    }
    #[inline(always)]
    unsafe fn max(a: Self, b: Self) -> Self {
        _mm512_max_ps(a, b)
    }
    #[inline(always)]
    unsafe fn floor(a: Self) -> Self {
        _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(a)
    }
    #[inline(always)]
    unsafe fn neg(a: Self) -> Self {
        _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32(i32::MIN)))
    }
    /// `vrangeps` choosing the maximum with the sign from the comparison (AVX-512DQ) puts +0
    /// above -0 but passes over a quiet NaN operand, so lanes where either operand is a NaN
    /// take their sum (a NaN) instead: three instructions for LLVM's six, which keep a
    /// particular NaN; the row kernels only ask whether the result is one.
    #[inline(always)]
    unsafe fn maximum(a: Self, b: Self) -> Self {
        let unordered = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(a, b);
        _mm512_mask_add_ps(_mm512_range_ps::<0b0101>(a, b), unordered, a, b)
    }
    #[inline(always)]
    unsafe fn pow2(n: Self) -> Self {
        _mm512_castsi512_ps(_mm512_add_epi32(_mm512_slli_epi32::<23>(_mm512_cvttps_epi32(n)), _mm512_set1_epi32(0x3f800000)))
    }
}
