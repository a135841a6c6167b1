//! The generic rows of `row.rs` compiled once per instruction set, each inside a
//! `#[target_feature]` function so that its vector operations inline as that set's
//! instructions.

use super::RowReduction;

/// One instruction set's row kernels.
pub(super) trait Isa {
    /// # Safety
    /// As `row::softmax_rows`, on a CPU with this instruction set.
    unsafe fn softmax_rows(x: *const f32, out: *mut f32, scratch: *mut f32, cols: usize, rows: usize, stream: bool);
    /// # Safety
    /// As `row::layernorm_row`, on a CPU with this instruction set.
    unsafe fn layernorm_row(x: *const f32, gamma: *const f32, beta: *const f32, out: *mut f32, cols: usize, scales: [f32; 3], stream: bool);
    /// # Safety
    /// As `row::reduce_row`, on a CPU with this instruction set.
    unsafe fn reduce_row(reductions: &[RowReduction], r: usize, cols: usize);
}

macro_rules! isa {
    ($name:ident, $module:ident, $features:literal, $vector:ident) => {
        /// The row kernels for this instruction set.
        pub(super) struct $name;

        #[cfg(target_arch = "x86_64")]
        mod $module {
            use super::super::{row, RowReduction};
            use std::arch::x86_64::$vector;

            #[target_feature(enable = $features)]
            pub(super) unsafe fn softmax_rows(x: *const f32, out: *mut f32, scratch: *mut f32, cols: usize, rows: usize, stream: bool) {
                row::softmax_rows::<$vector>(x, out, scratch, cols, rows, stream)
            }

            #[target_feature(enable = $features)]
            pub(super) unsafe fn layernorm_row(x: *const f32, gamma: *const f32, beta: *const f32, out: *mut f32, cols: usize, scales: [f32; 3], stream: bool) {
                row::layernorm_row::<$vector>(x, gamma, beta, out, cols, scales, stream)
            }

            #[target_feature(enable = $features)]
            pub(super) unsafe fn reduce_row(reductions: &[RowReduction], r: usize, cols: usize) {
                row::reduce_row::<$vector>(reductions, r, cols)
            }
        }

        #[cfg(target_arch = "x86_64")]
        impl Isa for $name {
            unsafe fn softmax_rows(x: *const f32, out: *mut f32, scratch: *mut f32, cols: usize, rows: usize, stream: bool) {
                $module::softmax_rows(x, out, scratch, cols, rows, stream)
            }
            unsafe fn layernorm_row(x: *const f32, gamma: *const f32, beta: *const f32, out: *mut f32, cols: usize, scales: [f32; 3], stream: bool) {
                $module::layernorm_row(x, gamma, beta, out, cols, scales, stream)
            }
            unsafe fn reduce_row(reductions: &[RowReduction], r: usize, cols: usize) {
                $module::reduce_row(reductions, r, cols)
            }
        }

        #[cfg(not(target_arch = "x86_64"))]
        impl Isa for $name {
            unsafe fn softmax_rows(_: *const f32, _: *mut f32, _: *mut f32, _: usize, _: usize, _: bool) {
                unreachable!("the compiler selects the row kernels for x86-64 targets only")
            }
            unsafe fn layernorm_row(_: *const f32, _: *const f32, _: *const f32, _: *mut f32, _: usize, _: [f32; 3], _: bool) {
                unreachable!("the compiler selects the row kernels for x86-64 targets only")
            }
            unsafe fn reduce_row(_: &[RowReduction], _: usize, _: usize) {
                unreachable!("the compiler selects the row kernels for x86-64 targets only")
            }
        }
    };
}

isa!(Avx2, avx2, "avx2,fma", __m256);
isa!(Avx512, avx512, "avx512f,avx512dq,avx2,fma", __m512);
