//! Heap blocks with the alignment generated code expects, and reuse of large freed ones.
//!
//! A large allocation comes from fresh `mmap`ed pages, and the kernel zeroes each page on its
//! first touch: running a 16M-element elementwise kernel spent about three times longer in page
//! faults than in the kernel. So large freed blocks (outputs, arenas and scratch of earlier
//! runs) are kept and handed out again, as XLA's and most ML runtimes' allocators do; the
//! amount kept is bounded, and [`release_cached_memory`] gives it back to the system.

use std::alloc::{self, Layout};
use std::ptr::NonNull;
use std::sync::Mutex;

/// Alignment in bytes of every block, and so of every host buffer and literal: one cache line,
/// one AVX-512 vector. Generated code may assume it for aligned vector loads and stores.
pub const BUFFER_ALIGNMENT: usize = 64;

/// Blocks from this size up are cached when freed. From 128 KiB glibc's malloc serves them from
/// fresh `mmap`ed pages (its M_MMAP_THRESHOLD starts there), so each run of rnn_scan faulted in
/// its 256 KB output page by page (about a tenth of the run in the kernel's page-fault path and
/// the variance between runs). Below it, malloc takes them from its heap, but a block that ends
/// the heap merges on free with the free space above it, and once that passes M_TRIM_THRESHOLD
/// (128 KiB) glibc gives it back to the system: a ~100 KiB arena freed at the end of every run
/// was faulted in again by the next (rnn_scan at 400 steps: 0.15 ms CPU per run, 0.09 without
/// trimming, measured with MALLOC_TRIM_THRESHOLD_ raised). Small blocks stay with malloc.
const MIN_CACHED_BYTES: usize = 32 << 10;
/// Cached sizes from 128 KiB up are rounded up to this granule, so that nearby sizes share
/// blocks; smaller ones to [`SMALL_GRANULE`], which wastes less of them.
const GRANULE: usize = 64 << 10;
/// The granule of cached sizes below 128 KiB: a page.
const SMALL_GRANULE: usize = 4 << 10;
/// At most this much memory is kept; the oldest blocks are freed first.
const MAX_CACHED_BYTES: usize = 1 << 30;

/// Freed blocks, oldest first: (address, size class).
static CACHE: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

/// The layout a block of `len` bytes (> 0) is allocated with.
fn layout_of(len: usize) -> Option<Layout> {
    let size = match len {
        _ if len >= 128 << 10 => len.checked_next_multiple_of(GRANULE)?,
        _ if len >= MIN_CACHED_BYTES => len.next_multiple_of(SMALL_GRANULE),
        _ => len,
    };
    Layout::from_size_align(size, BUFFER_ALIGNMENT).ok()
}

fn take_cached(size: usize) -> Option<NonNull<u8>> {
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let i = cache.iter().rposition(|&(_, s)| s == size)?;
    NonNull::new(cache.remove(i).0 as *mut u8)
}

/// Allocates `len` (> 0) uninitialized bytes; `None` when the size is impossible or memory is
/// exhausted.
pub fn allocate(len: usize) -> Option<NonNull<u8>> {
    let layout = layout_of(len)?;
    if layout.size() >= MIN_CACHED_BYTES {
        if let Some(p) = take_cached(layout.size()) {
            return Some(p);
        }
    }
    // SAFETY: the layout has a non-zero size.
    NonNull::new(unsafe { alloc::alloc(layout) })
}

/// Allocates `len` (> 0) zeroed bytes.
pub fn allocate_zeroed(len: usize) -> Option<NonNull<u8>> {
    let layout = layout_of(len)?;
    if layout.size() >= MIN_CACHED_BYTES {
        if let Some(p) = take_cached(layout.size()) {
            // SAFETY: the cached block holds `layout.size()` >= `len` bytes.
            unsafe { p.as_ptr().write_bytes(0, len) };
            return Some(p);
        }
    }
    // SAFETY: the layout has a non-zero size.
    NonNull::new(unsafe { alloc::alloc_zeroed(layout) })
}

/// Frees a block.
///
/// # Safety
/// `ptr` must come from [`allocate`] or [`allocate_zeroed`] with the same `len`, and must not be
/// used afterwards.
pub unsafe fn free(ptr: NonNull<u8>, len: usize) {
    let layout = layout_of(len).expect("the layout was valid when allocated");
    if layout.size() < MIN_CACHED_BYTES || layout.size() > MAX_CACHED_BYTES {
        // SAFETY: allocated with this layout (see `allocate`).
        unsafe { alloc::dealloc(ptr.as_ptr(), layout) };
        return;
    }
    let evicted = {
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        cache.push((ptr.as_ptr() as usize, layout.size()));
        let mut total: usize = cache.iter().map(|&(_, s)| s).sum();
        let mut evicted = Vec::new();
        while total > MAX_CACHED_BYTES {
            let (p, s) = cache.remove(0);
            total -= s;
            evicted.push((p, s));
        }
        evicted
    };
    for (p, s) in evicted {
        // SAFETY: every cached block was allocated with size class `s` and our alignment.
        unsafe { alloc::dealloc(p as *mut u8, Layout::from_size_align_unchecked(s, BUFFER_ALIGNMENT)) };
    }
}

/// Returns the cached free blocks to the system allocator; returns how many bytes they held.
pub fn release_cached_memory() -> usize {
    let blocks = std::mem::take(&mut *CACHE.lock().unwrap_or_else(|e| e.into_inner()));
    let mut bytes = 0;
    for (p, s) in blocks {
        bytes += s;
        // SAFETY: as in `free`.
        unsafe { alloc::dealloc(p as *mut u8, Layout::from_size_align_unchecked(s, BUFFER_ALIGNMENT)) };
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_freed_large_block_is_reused_and_zeroed_on_request() {
        let len = 3 << 20;
        let a = allocate(len).expect("memory");
        // SAFETY: `a` holds `len` bytes.
        unsafe { a.as_ptr().write_bytes(7, len) };
        unsafe { free(a, len) };
        // Same size class (rounded to the granule), so the block comes back, zeroed.
        let b = allocate_zeroed(len + 100).expect("memory");
        // SAFETY: `b` holds `len + 100` bytes.
        let bytes = unsafe { std::slice::from_raw_parts(b.as_ptr(), len + 100) };
        assert!(bytes.iter().all(|&x| x == 0));
        assert_eq!(b.as_ptr() as usize % BUFFER_ALIGNMENT, 0);
        unsafe { free(b, len + 100) };
        release_cached_memory();
    }

    #[test]
    fn a_block_below_malloc_s_mmap_threshold_is_cached_too() {
        // 100 KiB: malloc would serve it from its heap and could trim it away when freed. It is
        // cached, in a size class of whole pages; 16 KiB is left to malloc. (Which block comes
        // back is not asserted: tests in parallel release the cache.)
        assert_eq!(layout_of((100 << 10) + 1).unwrap().size(), 104 << 10);
        assert!(layout_of(100 << 10).unwrap().size() >= MIN_CACHED_BYTES);
        assert!(layout_of(16 << 10).unwrap().size() < MIN_CACHED_BYTES);
        let len = 100 << 10;
        let a = allocate(len).expect("memory");
        unsafe { a.as_ptr().write_bytes(1, len) };
        unsafe { free(a, len) };
        let b = allocate_zeroed(len).expect("memory");
        assert!(unsafe { std::slice::from_raw_parts(b.as_ptr(), len) }.iter().all(|&x| x == 0));
        unsafe { free(b, len) };
        release_cached_memory();
    }

    #[test]
    fn small_blocks_are_not_cached_and_sizes_that_overflow_are_refused() {
        let a = allocate(100).expect("memory");
        unsafe { free(a, 100) };
        assert!(allocate(usize::MAX - 10).is_none());
    }
}
