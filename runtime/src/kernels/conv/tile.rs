//! The convolution micro-kernel: an `mr x nr` tile of output pixels x output features, summed
//! over every window tap and input feature with the tile in vector registers. A is not
//! packed: row `i` (output pixel) of tap `t` starts at `a + taps[t] + i * row` in the
//! canonical image, its input features contiguous; B is the group's kernel packed
//! `[taps * kc][nr]`. The generated kernel's arithmetic exactly (`compiler/src/codegen/
//! emitters/gemm/microkernel.rs` with a tap table): per tap, per input feature, one fused
//! multiply-add of the broadcast image element and the B vector into each accumulator, from
//! zero; the tile then replaces C (vector stores, or element by element for a partial tile).

use crate::kernels::gemm::Isa;

/// `(a, b, c, kc, ldc, cols, row, taps)`; rows are always `mr` (the last strip of a line
/// overlaps the one before it).
pub type Kernel = unsafe fn(*const f32, *const f32, *mut f32, usize, usize, usize, isize, &[isize]);

/// The tap kernel for `mr` rows of `nv` vectors on `isa`, if built: the tiles the compiler's
/// blocking picks for lines at least `mr` pixels wide (AVX-512: 12x1, 12x2, 9x3, 6x4; AVX2:
/// 12x1, 6x2, and 4x2 for 8-pixel lines split into equal strips).
pub fn select(isa: Isa, mr: i64, nv: i64) -> Option<Kernel> {
    #[cfg(target_arch = "x86_64")]
    {
        let k: Kernel = match (isa, mr, nv) {
            (Isa::Avx512, 12, 1) => avx512::tile::<12, 1>,
            (Isa::Avx512, 12, 2) => avx512::tile::<12, 2>,
            (Isa::Avx512, 9, 3) => avx512::tile::<9, 3>,
            (Isa::Avx512, 6, 4) => avx512::tile::<6, 4>,
            (Isa::Avx2Fma, 12, 1) => avx2::tile::<12, 1>,
            (Isa::Avx2Fma, 6, 2) => avx2::tile::<6, 2>,
            (Isa::Avx2Fma, 4, 2) => avx2::tile::<4, 2>,
            _ => return None,
        };
        Some(k)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (isa, mr, nv);
        None
    }
}

macro_rules! isa_tiles {
    ($module:ident, $features:literal, $vec:ty, $lanes:expr, $zero:ident, $load:ident, $store:ident, $set1:ident, $fmadd:ident) => {
        #[cfg(target_arch = "x86_64")]
        mod $module {
            use std::arch::x86_64::*;
            const LANES: usize = $lanes;

            /// # Safety
            /// Every image element the taps reach and the tile's C elements are valid; the CPU
            /// has this module's features.
            #[target_feature(enable = $features)]
            #[allow(clippy::too_many_arguments)]
            pub unsafe fn tile<const MR: usize, const NV: usize>(
                a: *const f32,
                b: *const f32,
                c: *mut f32,
                kc: usize,
                ldc: usize,
                cols: usize,
                row: isize,
                taps: &[isize],
            ) {
                let nr = NV * LANES;
                let mut acc: [[$vec; NV]; MR] = [[$zero(); NV]; MR];
                for (t, &off) in taps.iter().enumerate() {
                    let at = unsafe { a.offset(off) };
                    let bt = unsafe { b.add(t * kc * nr) };
                    for k in 0..kc {
                        let bk = unsafe { bt.add(k * nr) };
                        let mut bv: [$vec; NV] = [$zero(); NV];
                        for v in 0..NV {
                            bv[v] = unsafe { $load(bk.add(v * LANES)) };
                        }
                        let ak = unsafe { at.add(k) };
                        for r in 0..MR {
                            let s = $set1(unsafe { *ak.offset(r as isize * row) });
                            for v in 0..NV {
                                acc[r][v] = $fmadd(s, bv[v], acc[r][v]);
                            }
                        }
                    }
                }
                if cols == nr {
                    for r in 0..MR {
                        for v in 0..NV {
                            unsafe { $store(c.add(r * ldc + v * LANES), acc[r][v]) };
                        }
                    }
                    return;
                }
                // The group's last, partial column strip: each vector through a copy of its
                // lanes. (A zeroed copy of the largest tile, 3 KB, cost as much as the tile's
                // arithmetic for lenet's 6-feature first convolution.)
                let mut lane = [0f32; LANES];
                for r in 0..MR {
                    for v in 0..NV {
                        let first = v * LANES;
                        if first >= cols {
                            break;
                        }
                        unsafe { $store(lane.as_mut_ptr(), acc[r][v]) };
                        for (j, &x) in lane.iter().enumerate().take(cols - first) {
                            unsafe { *c.add(r * ldc + first + j) = x };
                        }
                    }
                }
            }
        }
    };
}

isa_tiles!(avx512, "avx512f", __m512, 16, _mm512_setzero_ps, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps, _mm512_fmadd_ps);
isa_tiles!(avx2, "avx2,fma", __m256, 8, _mm256_setzero_ps, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_fmadd_ps);
