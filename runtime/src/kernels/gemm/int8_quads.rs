//! Packing s8 operands as the VNNI kernel reads them (`int8_vnni.rs`): word `kq` of strip row
//! `i` holds the elements of k = 4kq .. 4kq + 3 in its bytes, lowest k in the low byte; k past
//! the operand's depth and rows past the strip's valid ones are zero bytes. A's bytes are
//! offset to unsigned (`a + 128`, the sign bit flipped) for `vpdpbusd`'s unsigned factor; a B
//! panel gets one more row: `-128 * sum_k B[k][j]` over its k block, which takes the offset
//! out again (B's zero padding adds nothing, whatever A's padding holds).

/// The sign bits of four bytes: flipping them maps s8 `a` to u8 `a + 128`.
pub(super) const OFFSET_A: u32 = 0x8080_8080;

/// `dst[kq * w + i]` = the bytes `src[i * row + (4kq + t) * col]` (t = 0..3), each with
/// `flip`'s bits flipped, for rows `i < valid` and the `elements` values of k (a last partial
/// word's missing bytes zero before the flip); zero words for the rest of the `w`.
///
/// # Safety
/// The `valid` rows of `elements` elements are readable at those strides, and `dst` has
/// `ceil(elements / 4) * w` words.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn pack(src: *const i8, row: i64, col: i64, dst: *mut u32, valid: i64, elements: i64, w: i64, flip: u32) {
    for kq in 0..(elements + 3) / 4 {
        let d = unsafe { std::slice::from_raw_parts_mut(dst.add((kq * w) as usize), w as usize) };
        let (head, tail) = d.split_at_mut(valid as usize);
        let first = unsafe { src.offset((4 * kq * col) as isize) };
        let present = (elements - 4 * kq).min(4);
        if present == 4 && row == 1 {
            // Strip rows adjacent (a row-major B): four runs of bytes interleaved, vectorized.
            let run = |t: i64| unsafe { std::slice::from_raw_parts(first.offset((t * col) as isize) as *const u8, valid as usize) };
            let (r0, r1, r2, r3) = (run(0), run(1), run(2), run(3));
            for (i, d) in head.iter_mut().enumerate() {
                *d = u32::from_le_bytes([r0[i], r1[i], r2[i], r3[i]]) ^ flip;
            }
        } else if present == 4 && col == 1 {
            // Rows contiguous along k (a row-major A, a transposed B): a word is four bytes as
            // they lie.
            for (i, d) in head.iter_mut().enumerate() {
                let word = unsafe { (first.offset(i as isize * row as isize) as *const u32).read_unaligned() };
                *d = u32::from_le(word) ^ flip;
            }
        } else {
            for (i, d) in head.iter_mut().enumerate() {
                let mut bytes = [0u8; 4];
                for (t, byte) in bytes.iter_mut().enumerate().take(present as usize) {
                    *byte = unsafe { *first.offset(i as isize * row as isize + t as isize * col as isize) } as u8;
                }
                *d = u32::from_le_bytes(bytes) ^ flip;
            }
        }
        tail.fill(0);
    }
}

/// `correction[i]` = -128 times the sum of the signed bytes of the `words` packed words of
/// column `i` (`panel[kq * w + i]`), wrapping.
///
/// # Safety
/// `panel` has `words * w` words and `correction` `w`, not overlapping.
pub(super) unsafe fn column_correction(panel: *const u32, words: i64, w: i64, correction: *mut u32) {
    let correction = unsafe { std::slice::from_raw_parts_mut(correction as *mut i32, w as usize) };
    correction.fill(0);
    for kq in 0..words {
        let row = unsafe { std::slice::from_raw_parts(panel.add((kq * w) as usize), w as usize) };
        for (sum, &word) in correction.iter_mut().zip(row) {
            let b = word.to_le_bytes().map(|x| i32::from(x as i8));
            *sum = sum.wrapping_add(b[0] + b[1] + b[2] + b[3]);
        }
    }
    for sum in correction.iter_mut() {
        *sum = sum.wrapping_mul(-128);
    }
}
