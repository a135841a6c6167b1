//! Packing bf16 operands as the pair kernel reads them (`bf16.rs`): word `kk` of strip row `i`
//! holds the elements of k = 2kk (low half) and 2kk + 1 (high half), an odd last k paired with
//! a zero, rows past the strip's valid ones zero — the generated pair packing's words.
//! Layouts that the generic packing (`pack_pairs`) would walk element by element get their own
//! copies here: a row-major B (pairs of two rows interleaved, a whole row at a time) and rows
//! contiguous along k (their pairs already lie as words: a 32-bit transpose).

/// Panels `[0, panels)` of one k block of a row-major B, `stride` words apart:
/// `dst[p * stride + kk * nr + i]` = the pair (`src[2kk * row + p * nr + i]`, `src[(2kk + 1) *
/// row + p * nr + i]`) for the `cols` valid columns counted from the first panel's first one,
/// zero words past them, for the `elements` values of k (`kk < ceil(elements / 2)`).
///
/// # Safety
/// `src` holds `elements` rows (at `row` elements apart) of `cols` readable elements; `dst` has
/// `panels * stride` words, `stride >= ceil(elements / 2) * nr`; `cols <= panels * nr`; the CPU
/// has AVX-512F and AVX-512BW (the pair kernel's target has).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn pair_panels_by_rows(src: *const u16, row: i64, dst: *mut u32, stride: i64, cols: i64, panels: i64, elements: i64, nr: i64) {
    for kk in 0..(elements + 1) / 2 {
        let lo = unsafe { std::slice::from_raw_parts(src.offset((2 * kk * row) as isize), cols as usize) };
        // An odd last k has no second row: its pairs' high halves are zero.
        let hi = (2 * kk + 1 < elements).then(|| unsafe { std::slice::from_raw_parts(src.offset(((2 * kk + 1) * row) as isize), cols as usize) });
        for p in 0..panels {
            let first = (p * nr) as usize;
            let valid = (cols - p * nr).clamp(0, nr) as usize;
            let d = unsafe { std::slice::from_raw_parts_mut(dst.add((p * stride + kk * nr) as usize), nr as usize) };
            let (head, tail) = d.split_at_mut(valid);
            let lo = &lo[first..first + valid];
            // Plain (vectorized) zero-extensions and shifts.
            match hi {
                Some(hi) => {
                    for ((d, &l), &h) in head.iter_mut().zip(lo).zip(&hi[first..first + valid]) {
                        *d = u32::from(l) | (u32::from(h) << 16);
                    }
                }
                None => {
                    for (d, &l) in head.iter_mut().zip(lo) {
                        *d = u32::from(l);
                    }
                }
            }
            if valid < nr as usize {
                tail.fill(0);
            }
        }
    }
}

/// `dst[kk * w + i]` = the pair (`src[i * row + 2kk]`, `src[i * row + 2kk + 1]`) for rows
/// `i < valid` (zero words for the rest of the `w`) and the `elements` values of k: rows
/// contiguous along k, whose pairs are words already (transposed 8 x 8 words at a time where a
/// row starts on a pair, `transpose_pack.rs`).
///
/// # Safety
/// The `valid` rows of `elements` elements are readable, `dst` has `ceil(elements / 2) * w`
/// words, and the CPU has AVX2.
#[cfg(target_arch = "x86_64")]
pub(super) unsafe fn pair_rows(src: *const u16, row: i64, dst: *mut u32, valid: i64, elements: i64, w: i64) {
    let whole = elements / 2;
    let mut start = 0;
    if row % 2 == 0 {
        // Whole words only, and only blocks of eight, which the transpose reads with unaligned
        // vector loads (a bf16 row need not start 4-byte aligned).
        start = whole / 8 * 8;
        unsafe { super::transpose_pack::pack_rows_f32(src as *const f32, row / 2, dst, valid, start, w) };
    }
    for kk in start..(elements + 1) / 2 {
        let second = 2 * kk + 1 < elements;
        for i in 0..w {
            let word = if i < valid {
                let lo = unsafe { src.offset((i * row + 2 * kk) as isize) };
                let hi = if second { unsafe { *lo.add(1) } } else { 0 };
                u32::from(unsafe { *lo }) | (u32::from(hi) << 16)
            } else {
                0
            };
            unsafe { *dst.add((kk * w + i) as usize) = word };
        }
    }
}
