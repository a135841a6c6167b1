//! Heap memory with the alignment generated code expects (64 bytes: one cache line, one
//! AVX-512 vector).

use crate::block_cache;
pub use crate::block_cache::BUFFER_ALIGNMENT;
use crate::limits::describe_bytes;
use std::ptr::NonNull;
use thiserror::Error;

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

/// An allocation the system refused (or a size no allocation can have).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[error("cannot allocate {}", describe_bytes(*bytes as u128))]
pub struct AllocError {
    /// The size asked for.
    pub bytes: usize,
}

impl AlignedBuffer {
    /// `len` bytes, all zero.
    ///
    /// # Panics
    /// Aborts (through `handle_alloc_error`) when the allocation fails, as `Vec` does; see
    /// [`AlignedBuffer::try_zeroed`] for sizes that come from input.
    pub fn zeroed(len: usize) -> AlignedBuffer {
        Self::try_zeroed(len).unwrap_or_else(|e| out_of_memory(e.bytes))
    }

    /// `len` bytes, all zero, or an error when the memory cannot be had.
    pub fn try_zeroed(len: usize) -> Result<AlignedBuffer, AllocError> {
        if len == 0 {
            return Ok(AlignedBuffer { ptr: dangling_aligned(), len: 0 });
        }
        let ptr = block_cache::allocate_zeroed(len).ok_or(AllocError { bytes: len })?;
        Ok(AlignedBuffer { ptr, len })
    }

    /// Allocates without initializing, or fails with an error when the memory cannot be had.
    ///
    /// # Safety
    /// Every byte must be written (through `as_mut_ptr`) before any is read.
    pub unsafe fn try_uninit(len: usize) -> Result<AlignedBuffer, AllocError> {
        if len == 0 {
            return Ok(AlignedBuffer { ptr: dangling_aligned(), len: 0 });
        }
        let ptr = block_cache::allocate(len).ok_or(AllocError { bytes: len })?;
        Ok(AlignedBuffer { ptr, len })
    }

    /// A copy of `bytes` in aligned memory.
    pub fn from_bytes(bytes: &[u8]) -> AlignedBuffer {
        Self::try_from_bytes(bytes).unwrap_or_else(|e| out_of_memory(e.bytes))
    }

    /// A copy of `bytes` in aligned memory, or an error when the memory cannot be had.
    pub fn try_from_bytes(bytes: &[u8]) -> Result<AlignedBuffer, AllocError> {
        // SAFETY: every byte is written right away.
        let mut buffer = unsafe { AlignedBuffer::try_uninit(bytes.len())? };
        buffer.as_mut_slice().copy_from_slice(bytes);
        Ok(buffer)
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
pub(crate) fn out_of_memory(len: usize) -> ! {
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

impl AlignedBuffer {
    /// A copy, or an error when the memory cannot be had.
    pub fn try_clone(&self) -> Result<AlignedBuffer, AllocError> {
        AlignedBuffer::try_from_bytes(self.as_slice())
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
