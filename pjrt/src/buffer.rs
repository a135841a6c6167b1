//! `PJRT_Buffer`: an array in host memory on one hlojit device. Copies in from the caller's
//! memory (any byte strides), out to it (row-major, byte strides or another minor-to-major
//! order), between devices; a donated or deleted buffer has no data left.

use crate::abi::args::*;
use crate::abi::{MemoryLayout, MemoryLayoutTiled, MemoryLayoutUnion, LAYOUT_STRIDES, LAYOUT_TILED};
use crate::client::{Client, Device};
use crate::dtype;
use crate::error::{guard, non_null, PjrtError, Result};
use crate::event::Event;
use crate::util::slice;
use hlojit::{ArrayShape, ElementType, HostBuffer, Layout};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

#[repr(C)]
pub struct Buffer {
    pub head: crate::abi::HandleHead,
    pub device: *mut Device,
    pub element_type: ElementType,
    pub dims: Vec<i64>,
    /// The layout the data is stored in (what `PJRT_Buffer_GetMemoryLayout` reports).
    pub minor_to_major: Vec<i64>,
    /// Bytes of storage, kept after deletion for `OnDeviceSizeInBytes`.
    pub size: usize,
    /// `None` once deleted or donated to an execution.
    pub data: RwLock<Option<HostBuffer>>,
    /// A `token[]` a program returned: reported as PJRT's TOKEN type with no dimensions, as
    /// XLA:CPU reports its token buffers (jaxlib then refuses to read one as an array); it
    /// holds an empty array only so that passing it back as an argument works like any buffer.
    pub token: bool,
}

impl Buffer {
    /// A buffer holding `data` on `device`. Data in another layout is stored row-major: the
    /// framework reads CPU buffers in place (`PJRT_Buffer_OpaqueDeviceMemoryDataPointer`) as
    /// dense row-major arrays.
    pub fn new(device: *mut Device, data: HostBuffer) -> Box<Buffer> {
        let rank = data.dims().len();
        let data = if data.layout().is_row_major() && data.layout().is_untiled() {
            data
        } else {
            match data.relayout(Layout::row_major(rank)) {
                Ok(d) => d,
                // Out of memory for the copy: keep the data as it is (reported by its layout).
                Err(_) => data,
            }
        };
        Box::new(Buffer {
            head: Default::default(),
            device,
            element_type: data.element_type(),
            dims: data.dims().to_vec(),
            minor_to_major: data.layout().minor_to_major.clone(),
            size: data.bytes().len(),
            data: RwLock::new(Some(data)),
            token: false,
        })
    }

    /// A token buffer on `device` (see [`Buffer::token`]).
    pub fn new_token(device: *mut Device) -> Box<Buffer> {
        let empty = HostBuffer::zeros(&ArrayShape::new(ElementType::Pred, vec![0])).expect("an empty array needs no memory");
        let mut b = Buffer::new(device, empty);
        b.token = true;
        b.dims.clear();
        b.minor_to_major.clear();
        b
    }

    pub fn read(&self) -> RwLockReadGuard<'_, Option<HostBuffer>> {
        self.data.read().unwrap_or_else(|p| p.into_inner())
    }

    pub fn write(&self) -> RwLockWriteGuard<'_, Option<HostBuffer>> {
        self.data.write().unwrap_or_else(|p| p.into_inner())
    }

    fn shape_text(&self) -> String {
        ArrayShape::new(self.element_type, self.dims.clone()).to_string()
    }

    pub fn deleted_error(&self) -> PjrtError {
        PjrtError::new(
            crate::abi::ErrorCode::FailedPrecondition,
            format!("the {} buffer was deleted or donated to an earlier execution", self.shape_text()),
        )
    }
}

fn element_type(t: i32) -> Result<ElementType> {
    dtype::from_pjrt(t).ok_or_else(|| PjrtError::new(crate::abi::ErrorCode::Unimplemented, format!("hlojit has no array type for PJRT_Buffer_Type {t}")))
}

/// Row-major byte strides of `dims` with `esize`-byte elements.
fn dense_strides(dims: &[i64], esize: usize) -> Vec<i64> {
    let mut strides = vec![0; dims.len()];
    let mut s = esize as i64;
    for i in (0..dims.len()).rev() {
        strides[i] = s;
        s = s.saturating_mul(dims[i].max(1));
    }
    strides
}

/// Calls `f(element_index, byte_offset)` for every element in row-major order, the offset
/// following `strides`.
fn for_each_offset(dims: &[i64], strides: &[i64], mut f: impl FnMut(usize, i64)) {
    let count: i64 = dims.iter().product();
    if count <= 0 {
        return;
    }
    let mut index = vec![0i64; dims.len()];
    let mut offset = 0i64;
    for e in 0..count as usize {
        f(e, offset);
        for d in (0..dims.len()).rev() {
            index[d] += 1;
            offset += strides[d];
            if index[d] < dims[d] {
                break;
            }
            offset -= strides[d] * dims[d];
            index[d] = 0;
        }
    }
}

fn check_dims(dims: &[i64]) -> Result<()> {
    let mut n: i64 = 1;
    for &d in dims {
        if d < 0 {
            return Err(PjrtError::invalid(format!("dimension sizes must not be negative: {dims:?}")));
        }
        n = n.checked_mul(d).ok_or_else(|| PjrtError::invalid(format!("{dims:?} has too many elements")))?;
    }
    if n > hlojit_limits_elements() {
        return Err(PjrtError::invalid(format!("{dims:?} has too many elements")));
    }
    Ok(())
}

fn hlojit_limits_elements() -> i64 {
    1 << 48
}

/// The caller's host array (`strides` in bytes, or row-major when empty) as a row-major
/// hlojit buffer.
///
/// # Safety
/// `data` addresses every element the dims and strides reach.
pub unsafe fn from_host(data: *const u8, element_type: ElementType, dims: &[i64], strides: &[i64]) -> Result<HostBuffer> {
    check_dims(dims)?;
    let esize = dtype::host_size(element_type);
    let shape = ArrayShape::new(element_type, dims.to_vec());
    let count: i64 = dims.iter().product();
    let bytes = count as usize * esize;
    if bytes > 0 && data.is_null() {
        return Err(PjrtError::invalid("the host data pointer is null"));
    }
    if !strides.is_empty() && strides.len() != dims.len() {
        return Err(PjrtError::invalid(format!("{} byte strides for {} dimensions", strides.len(), dims.len())));
    }
    let err = |e: hlojit_runtime::host::HostError| PjrtError::new(crate::abi::ErrorCode::ResourceExhausted, e.to_string());
    if strides.is_empty() || strides == dense_strides(dims, esize).as_slice() || bytes == 0 {
        let src = if bytes == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(data, bytes) } };
        return HostBuffer::from_bytes(&shape, src).map_err(err);
    }
    let mut out = HostBuffer::zeros(&shape).map_err(err)?;
    let dst = out.bytes_mut();
    for_each_offset(dims, strides, |e, off| {
        // SAFETY: the caller's strides address its own array.
        let src = unsafe { std::slice::from_raw_parts(data.offset(off as isize), esize) };
        dst[e * esize..(e + 1) * esize].copy_from_slice(src);
    });
    Ok(out)
}

/// Where the caller wants the data: row-major, byte strides, or a minor-to-major order.
enum HostLayout {
    RowMajor,
    Strides(Vec<i64>),
    MinorToMajor(Vec<i64>),
}

fn host_layout(p: *const MemoryLayout, rank: usize) -> Result<HostLayout> {
    // SAFETY: null or the caller's layout struct.
    let Some(l) = (unsafe { p.as_ref() }) else { return Ok(HostLayout::RowMajor) };
    // SAFETY: the union member is the one `kind` names.
    unsafe {
        match l.kind {
            LAYOUT_STRIDES => Ok(HostLayout::Strides(slice(l.layout.strides.byte_strides, l.layout.strides.num_byte_strides).to_vec())),
            LAYOUT_TILED => {
                let t = l.layout.tiled;
                if t.num_tiles > 0 {
                    return Err(PjrtError::new(crate::abi::ErrorCode::Unimplemented, "tiled host layouts are not supported by hlojit"));
                }
                let m2m = slice(t.minor_to_major, t.minor_to_major_size).to_vec();
                if m2m.len() != rank {
                    return Err(PjrtError::invalid(format!("a host layout of rank {} for an array of rank {rank}", m2m.len())));
                }
                Ok(HostLayout::MinorToMajor(m2m))
            }
            k => Err(PjrtError::invalid(format!("unknown PJRT_Buffer_MemoryLayout type {k}"))),
        }
    }
}

/// Bytes of `b` as the host layout wants them, or (for strides) the row-major bytes and the strides.
fn host_bytes(b: &HostBuffer, layout: &HostLayout) -> Result<(Vec<u8>, Option<Vec<i64>>)> {
    let err = |e: hlojit_runtime::host::HostError| PjrtError::invalid(e.to_string());
    let rank = b.dims().len();
    let in_layout = |m2m: Vec<i64>| -> Result<Vec<u8>> {
        if b.layout().minor_to_major == m2m && b.layout().is_untiled() {
            Ok(b.bytes().to_vec())
        } else {
            Ok(b.relayout(Layout::new(m2m)).map_err(err)?.bytes().to_vec())
        }
    };
    match layout {
        HostLayout::RowMajor => Ok((in_layout(Layout::row_major(rank).minor_to_major)?, None)),
        HostLayout::MinorToMajor(m) => Ok((in_layout(m.clone())?, None)),
        HostLayout::Strides(s) => {
            if s.len() != rank {
                return Err(PjrtError::invalid(format!("{} byte strides for {rank} dimensions", s.len())));
            }
            Ok((in_layout(Layout::row_major(rank).minor_to_major)?, Some(s.clone())))
        }
    }
}

fn strided_extent(dims: &[i64], strides: &[i64], esize: usize) -> Result<usize> {
    if dims.iter().any(|&d| d == 0) {
        return Ok(0);
    }
    let mut end = esize as i64;
    for (&d, &s) in dims.iter().zip(strides) {
        if s < 0 {
            return Err(PjrtError::new(crate::abi::ErrorCode::Unimplemented, "negative byte strides are not supported by hlojit"));
        }
        end += (d - 1) * s;
    }
    Ok(end as usize)
}

pub unsafe extern "C" fn client_buffer_from_host_buffer(args: *mut ClientBufferFromHostBufferArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let client: &mut Client = non_null(a.client, "client")?;
            let device = target_device(client, a.device, a.memory)?;
            let t = element_type(a.element_type)?;
            let dims = slice(a.dims, a.num_dims);
            let strides = slice(a.byte_strides, a.num_byte_strides);
            let data = from_host(a.data.cast(), t, dims, strides)?;
            let data = match device_layout(a.device_layout, dims.len())? {
                Some(layout) => data.relayout(layout).map_err(|e| PjrtError::invalid(e.to_string()))?,
                None => data,
            };
            // Copied already: the caller may reuse its memory at once.
            a.done_with_host_buffer = Event::ready(Ok(()));
            a.buffer = Box::into_raw(Buffer::new(device, data));
            Ok(())
        })
    }
}

/// A device layout the caller asks for, when it is not row-major.
fn device_layout(p: *const MemoryLayout, rank: usize) -> Result<Option<Layout>> {
    match host_layout(p, rank)? {
        HostLayout::MinorToMajor(m) if m != Layout::row_major(rank).minor_to_major => Ok(Some(Layout::new(m))),
        HostLayout::Strides(_) => Err(PjrtError::new(crate::abi::ErrorCode::Unimplemented, "device layouts given as strides are not supported by hlojit")),
        _ => Ok(None),
    }
}

/// The device a new buffer goes to: `device`, else `memory`'s, else device 0.
fn target_device(client: &Client, device: *mut Device, memory: *mut crate::client::Memory) -> Result<*mut Device> {
    if !device.is_null() {
        return Ok(device);
    }
    // SAFETY: null or a memory handle of this client.
    if let Some(m) = unsafe { memory.as_ref() } {
        return Ok(m.device);
    }
    client.device(0)
}

pub unsafe extern "C" fn client_create_uninitialized_buffer(args: *mut ClientCreateUninitializedBufferArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let client: &mut Client = non_null(a.client, "client")?;
            let device = target_device(client, a.device, a.memory)?;
            let t = element_type(a.shape_element_type)?;
            let dims = slice(a.shape_dims, a.shape_num_dims);
            check_dims(dims)?;
            let mut shape = ArrayShape::new(t, dims.to_vec());
            if let Some(l) = device_layout(a.shape_layout, dims.len())? {
                shape = shape.with_layout(l);
            }
            let data = HostBuffer::zeros(&shape).map_err(|e| PjrtError::new(crate::abi::ErrorCode::ResourceExhausted, e.to_string()))?;
            a.buffer = Box::into_raw(Buffer::new(device, data));
            Ok(())
        })
    }
}

pub unsafe extern "C" fn buffer_destroy(args: *mut BufferDestroyArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            if !a.buffer.is_null() {
                drop(Box::from_raw(a.buffer));
            }
            Ok(())
        })
    }
}

pub unsafe extern "C" fn buffer_element_type(args: *mut BufferElementTypeArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let b = non_null(a.buffer, "buffer")?;
            a.element_type = if b.token { dtype::TOKEN } else { dtype::to_pjrt(b.element_type) };
            Ok(())
        })
    }
}

pub unsafe extern "C" fn buffer_dimensions(args: *mut BufferDimensionsArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let b = non_null(a.buffer, "buffer")?;
            a.dims = b.dims.as_ptr();
            a.num_dims = b.dims.len();
            Ok(())
        })
    }
}

pub unsafe extern "C" fn buffer_unpadded_dimensions(args: *mut BufferUnpaddedDimensionsArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let b = non_null(a.buffer, "buffer")?;
            a.unpadded_dims = b.dims.as_ptr();
            a.num_dims = b.dims.len();
            Ok(())
        })
    }
}

pub unsafe extern "C" fn buffer_dynamic_dimension_indices(args: *mut BufferDynamicDimensionIndicesArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            non_null(a.buffer, "buffer")?;
            a.dynamic_dim_indices = std::ptr::null();
            a.num_dynamic_dims = 0;
            Ok(())
        })
    }
}

pub unsafe extern "C" fn buffer_get_memory_layout(args: *mut BufferGetMemoryLayoutArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let b = non_null(a.buffer, "buffer")?;
            a.layout = MemoryLayout {
                struct_size: MemoryLayout::STRUCT_SIZE,
                extension_start: std::ptr::null_mut(),
                layout: MemoryLayoutUnion {
                    tiled: MemoryLayoutTiled {
                        struct_size: std::mem::size_of::<MemoryLayoutTiled>(),
                        extension_start: std::ptr::null_mut(),
                        minor_to_major: b.minor_to_major.as_ptr(),
                        minor_to_major_size: b.minor_to_major.len(),
                        tile_dims: std::ptr::null(),
                        tile_dim_sizes: std::ptr::null(),
                        num_tiles: 0,
                    },
                },
                kind: LAYOUT_TILED,
            };
            Ok(())
        })
    }
}

pub unsafe extern "C" fn buffer_to_host_buffer(args: *mut BufferToHostBufferArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let b = non_null(a.src, "src buffer")?;
            if b.token {
                return Err(PjrtError::invalid("a token buffer holds no data to copy to the host"));
            }
            let layout = host_layout(a.host_layout, b.dims.len())?;
            let esize = dtype::host_size(b.element_type);
            let count: i64 = b.dims.iter().product();
            let needed = match &layout {
                HostLayout::Strides(s) => strided_extent(&b.dims, s, esize)?,
                _ => count as usize * esize,
            };
            if a.dst.is_null() {
                a.dst_size = needed;
                return Ok(());
            }
            if a.dst_size < needed {
                return Err(PjrtError::invalid(format!("the destination holds {} bytes, the {} array needs {needed}", a.dst_size, b.shape_text())));
            }
            let guard = b.read();
            let data = guard.as_ref().ok_or_else(|| b.deleted_error())?;
            let (bytes, strides) = host_bytes(data, &layout)?;
            let dst = a.dst.cast::<u8>();
            match strides {
                None => std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len()),
                Some(s) => for_each_offset(&b.dims, &s, |e, off| {
                    std::ptr::copy_nonoverlapping(bytes.as_ptr().add(e * esize), dst.offset(off as isize), esize)
                }),
            }
            a.event = Event::ready(Ok(()));
            Ok(())
        })
    }
}

pub unsafe extern "C" fn buffer_copy_raw_to_host(args: *mut BufferCopyRawToHostArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let b = non_null(a.buffer, "buffer")?;
            let guard = b.read();
            let data = guard.as_ref().ok_or_else(|| b.deleted_error())?;
            let bytes = data.bytes();
            let (off, n) = (a.offset, a.transfer_size);
            if off < 0 || n < 0 || (off as u64).saturating_add(n as u64) > bytes.len() as u64 {
                return Err(PjrtError::invalid(format!("bytes {off}..{off}+{n} are outside the buffer's {} bytes", bytes.len())));
            }
            if n > 0 {
                if a.dst.is_null() {
                    return Err(PjrtError::invalid("dst is null"));
                }
                std::ptr::copy_nonoverlapping(bytes.as_ptr().add(off as usize), a.dst.cast::<u8>(), n as usize);
            }
            a.event = Event::ready(Ok(()));
            Ok(())
        })
    }
}

pub unsafe extern "C" fn buffer_on_device_size(args: *mut BufferOnDeviceSizeInBytesArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { a.on_device_size_in_bytes = non_null(a.buffer, "buffer")?.size; Ok(()) }) }
}

pub unsafe extern "C" fn buffer_delete(args: *mut BufferDeleteArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { *non_null(a.buffer, "buffer")?.write() = None; Ok(()) }) }
}

pub unsafe extern "C" fn buffer_is_deleted(args: *mut BufferIsDeletedArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { a.is_deleted = non_null(a.buffer, "buffer")?.read().is_none(); Ok(()) }) }
}

fn copy_to(b: &Buffer, device: *mut Device) -> Result<*mut Buffer> {
    let guard = b.read();
    let data = guard.as_ref().ok_or_else(|| b.deleted_error())?;
    Ok(Box::into_raw(Buffer::new(device, data.clone())))
}

pub unsafe extern "C" fn buffer_copy_to_device(args: *mut BufferCopyToDeviceArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let b = non_null(a.buffer, "buffer")?;
            non_null(a.dst_device, "dst_device")?;
            a.dst_buffer = copy_to(b, a.dst_device)?;
            Ok(())
        })
    }
}

pub unsafe extern "C" fn buffer_copy_to_memory(args: *mut BufferCopyToMemoryArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let b = non_null(a.buffer, "buffer")?;
            let m = non_null(a.dst_memory, "dst_memory")?;
            a.dst_buffer = copy_to(b, m.device)?;
            Ok(())
        })
    }
}

pub unsafe extern "C" fn buffer_is_on_cpu(args: *mut BufferIsOnCpuArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { non_null(a.buffer, "buffer")?; a.is_on_cpu = true; Ok(()) }) }
}

pub unsafe extern "C" fn buffer_device(args: *mut BufferDeviceArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { a.device = non_null(a.buffer, "buffer")?.device; Ok(()) }) }
}

pub unsafe extern "C" fn buffer_memory(args: *mut BufferMemoryArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let d = non_null(non_null(a.buffer, "buffer")?.device, "the buffer's device")?;
            a.memory = d.memory;
            Ok(())
        })
    }
}

pub unsafe extern "C" fn buffer_ready_event(args: *mut BufferReadyEventArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { non_null(a.buffer, "buffer")?; a.event = Event::ready(Ok(())); Ok(()) }) }
}

fn data_pointer(b: &Buffer) -> Result<*mut u8> {
    let guard = b.read();
    let data = guard.as_ref().ok_or_else(|| b.deleted_error())?;
    Ok(data.as_ptr().cast_mut())
}

pub unsafe extern "C" fn buffer_unsafe_pointer(args: *mut BufferUnsafePointerArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { a.buffer_pointer = data_pointer(non_null(a.buffer, "buffer")?)? as usize; Ok(()) }) }
}

pub unsafe extern "C" fn buffer_opaque_pointer(args: *mut BufferOpaqueDeviceMemoryDataPointerArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { a.device_memory_ptr = data_pointer(non_null(a.buffer, "buffer")?)?.cast(); Ok(()) }) }
}

/// External references (dlpack, numpy views) keep nothing alive beyond the buffer itself,
/// whose data never moves.
pub unsafe extern "C" fn buffer_increase_ref(args: *mut BufferIncreaseExternalReferenceCountArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { non_null(a.buffer, "buffer")?; Ok(()) }) }
}

pub unsafe extern "C" fn buffer_decrease_ref(args: *mut BufferDecreaseExternalReferenceCountArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { non_null(a.buffer, "buffer")?; Ok(()) }) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_input_is_gathered_in_row_major_order() {
        // A 2x3 int32 view of a 3x2 array's transpose: strides (4, 8) bytes.
        let src: [i32; 6] = [1, 2, 3, 4, 5, 6]; // rows of the 3x2 array
        let b = unsafe { from_host(src.as_ptr().cast(), ElementType::S32, &[2, 3], &[4, 8]) }.unwrap();
        assert_eq!(b.as_slice::<i32>().unwrap(), &[1, 3, 5, 2, 4, 6]);
    }

    #[test]
    fn dense_strides_are_row_major() {
        assert_eq!(dense_strides(&[2, 3, 4], 2), vec![24, 8, 2]);
        assert_eq!(strided_extent(&[2, 3], &[4, 8], 4).unwrap(), 4 + 4 + 16);
    }
}
