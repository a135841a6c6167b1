//! Packing a B that lies row-major (contiguous along n, `x W`) for a run of adjacent panels
//! at once, walking B's rows front to back. Packed panel by panel, each k step of a panel
//! reads one 64-byte piece of a row, the next k step the piece a whole row further on (8 KiB
//! for n = 2048): every panel touches all of its k block's rows and pages once more, and the
//! hardware prefetchers see short strided streams. Walking whole rows reads B as one
//! sequential stream and writes each panel's rows in order; measured on 512 x 2048 x 512 the
//! panel-by-panel packing was 8% of the GEMM's time. Packing only copies (widening bf16):
//! the packed words, and so the results, are the same bits.

use super::Element;

/// Rows of B requested ahead of the one being copied. Each row of a block starts a new page
/// (a row is 4 KiB at n = 1024), where the hardware prefetchers start over, so without
/// requests ahead the copy waits on memory line by line: a weight matrix that comes from
/// memory (mlp_train's forward dots) is packed at a fraction of the bandwidth.
const PREFETCH_ROWS: i64 = 8;

/// Requests the lines of `bytes` bytes from `start` into the cache; never faults.
#[inline(always)]
fn prefetch_row(start: *const u8, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    for offset in (0..bytes).step_by(64) {
        // SAFETY: a prefetch only hints; it never faults, whatever the address.
        unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(start.wrapping_add(offset) as *const i8) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (start, bytes);
}

/// Panels `[0, panels)` of one k block, `stride` words apart: `dst[p * stride + kk * nr + i] =
/// src[kk * row + p * nr + i]` (widened, as f32 bits) for the `cols` valid columns counted from the first
/// panel's first one, zero words past them, for `kk < depth`.
///
/// # Safety
/// `src` holds the `depth` rows (at `row` elements apart) of `cols` readable elements; `dst`
/// has `panels * stride` words, `stride >= depth * nr`; `cols <= panels * nr`.
pub(super) unsafe fn pack_panels_by_rows<T: Element>(src: *const T, row: i64, dst: *mut u32, stride: i64, cols: i64, panels: i64, depth: i64, nr: i64) {
    let row_bytes = cols as usize * std::mem::size_of::<T>();
    for kk in 0..depth {
        let s = unsafe { src.offset((kk * row) as isize) };
        if kk + PREFETCH_ROWS < depth {
            prefetch_row(s.wrapping_offset((PREFETCH_ROWS * row) as isize) as *const u8, row_bytes);
        }
        for p in 0..panels {
            let first = p * nr;
            let valid = (cols - first).clamp(0, nr);
            let d = unsafe { dst.add((p * stride + kk * nr) as usize) };
            // A plain (vectorizable) copy or widening.
            let s = unsafe { std::slice::from_raw_parts(s.add(first as usize), valid as usize) };
            let d = unsafe { std::slice::from_raw_parts_mut(d, nr as usize) };
            let (head, tail) = d.split_at_mut(valid as usize);
            for (d, s) in head.iter_mut().zip(s) {
                *d = s.widen().to_bits();
            }
            // Only the last panel has a tail: an empty fill is still a call to memset, once
            // per row and panel (2% of a 256 x 1024 x 1024 GEMM's samples).
            if valid < nr {
                tail.fill(0);
            }
        }
    }
}
