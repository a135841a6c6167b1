//! Heap memory with the alignment generated code expects (64 bytes: one cache line, one
//! AVX-512 vector).

use crate::block_cache;
pub use crate::block_cache::BUFFER_ALIGNMENT;
use std::ptr::NonNull;

/// An owned, zero-initialised, 64-byte-aligned byte buffer.
///
/// A zero-length buffer allocates nothing (its pointer is dangling but still aligned).
///
/// ```rust
/// use hlojit_runtime::buffer::{AlignedBuffer, BUFFER_ALIGNMENT};
///
/// let mut buf = AlignedBuffer::zeroed(16);
/// assert_eq!(buf.as_ptr() as usize % BUFFER_ALIGNMENT, 0);
/// buf.as_mut_slice()[0] = 7;
/// assert_eq!(buf.as_slice()[..2], [7, 0]);
/// assert_eq!(buf, AlignedBuffer::from_bytes(&buf.as_slice().to_vec()));
/// ```
pub struct AlignedBuffer {
    ptr: NonNull<u8>,
    len: usize,
}

// The buffer owns its memory exclusively, like a Vec<u8>.
unsafe impl Send for AlignedBuffer {}
unsafe impl Sync for AlignedBuffer {}

impl AlignedBuffer {
    /// `len` bytes, all zero.
    ///
    /// # Panics
    /// When `len` rounded up to the alignment overflows `isize`; aborts (through
    /// `handle_alloc_error`) when the allocation fails.
    pub fn zeroed(len: usize) -> AlignedBuffer {
        if len == 0 {
            return AlignedBuffer { ptr: dangling_aligned(), len: 0 };
        }
        let ptr = block_cache::allocate_zeroed(len).unwrap_or_else(|| out_of_memory(len));
        AlignedBuffer { ptr, len }
    }

    /// Allocates without initializing.
    ///
    /// # Safety
    /// Every byte must be written (through `as_mut_ptr`) before any is read.
    pub unsafe fn uninit(len: usize) -> AlignedBuffer {
        if len == 0 {
            return AlignedBuffer { ptr: dangling_aligned(), len: 0 };
        }
        let ptr = block_cache::allocate(len).unwrap_or_else(|| out_of_memory(len));
        AlignedBuffer { ptr, len }
    }

    /// A copy of `bytes` in aligned memory.
    pub fn from_bytes(bytes: &[u8]) -> AlignedBuffer {
        let mut buffer = AlignedBuffer::zeroed(bytes.len());
        buffer.as_mut_slice().copy_from_slice(bytes);
        buffer
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a zero-length buffer.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The contents as bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for len bytes (or dangling and aligned with len 0).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The contents as mutable bytes.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and we hold the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Address of the first byte, 64-byte aligned (dangling, not null, when empty).
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// Mutable address of the first byte, as [`AlignedBuffer::as_ptr`].
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

/// Like a `Vec` that cannot grow, an allocation failure aborts through the standard handler.
fn out_of_memory(len: usize) -> ! {
    let layout = std::alloc::Layout::from_size_align(len, BUFFER_ALIGNMENT).unwrap_or(std::alloc::Layout::new::<u8>());
    std::alloc::handle_alloc_error(layout)
}

fn dangling_aligned() -> NonNull<u8> {
    // A non-null address with the full alignment; never dereferenced for a zero-length buffer.
    NonNull::new(BUFFER_ALIGNMENT as *mut u8).expect("non-zero")
}

impl Drop for AlignedBuffer {
    fn drop(&mut self) {
        if self.len != 0 {
            // SAFETY: allocated by the block cache with this length, and no longer used.
            unsafe { block_cache::free(self.ptr, self.len) }
        }
    }
}

impl Clone for AlignedBuffer {
    fn clone(&self) -> AlignedBuffer {
        AlignedBuffer::from_bytes(self.as_slice())
    }
}

impl std::fmt::Debug for AlignedBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuffer({} bytes)", self.len)
    }
}

impl PartialEq for AlignedBuffer {
    fn eq(&self, other: &AlignedBuffer) -> bool {
        self.as_slice() == other.as_slice()
    }
}
