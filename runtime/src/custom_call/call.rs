//! Typed-FFI calls from generated code: `hlojit_rt_ffi_call` turns the call site's descriptor
//! and the current buffer addresses into an XLA call frame, runs the handler, and reports its
//! error (or its asynchronous completion's error) as the thread's last error.

use super::api::{api, consume_error, release_future};
use super::descriptor::{AttrValue, CallDescriptor};
use super::last_error::set_last_error;
use hlojit_ffi::xla::*;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::rc::Rc;

/// Attributes in XLA's encoding, with the storage every pointer in it points into. Pointers
/// go into heap blocks (boxes, vector buffers) that stay put when this struct moves.
struct EncodedAttrs {
    _names: Vec<String>,
    _spans: Vec<XLA_FFI_ByteSpan>,
    span_ptrs: Vec<*mut XLA_FFI_ByteSpan>,
    types: Vec<XLA_FFI_AttrType>,
    values: Vec<*mut c_void>,
    _storage: Vec<Storage>,
    raw: Box<XLA_FFI_Attrs>,
}

/// Owners of the memory the encoded pointers point into; never read, only kept alive.
#[allow(dead_code)]
enum Storage {
    Scalar(Box<XLA_FFI_Scalar>, Box<[u64; 1]>),
    Str(Box<XLA_FFI_ByteSpan>, String),
    Array(Box<XLA_FFI_Array>, Vec<u64>),
    Dict(Box<EncodedAttrs>),
}

/// Copies little-endian bytes into 8-byte-aligned words.
fn words(bytes: &[u8]) -> Vec<u64> {
    let mut w = vec![0u64; bytes.len().div_ceil(8).max(1)];
    // SAFETY: the word buffer holds at least `bytes.len()` bytes.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), w.as_mut_ptr() as *mut u8, bytes.len()) };
    w
}

impl EncodedAttrs {
    fn new(attrs: &[(String, AttrValue)]) -> EncodedAttrs {
        let mut sorted: Vec<&(String, AttrValue)> = attrs.iter().collect();
        sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let names: Vec<String> = sorted.iter().map(|(n, _)| n.clone()).collect();
        let mut types = Vec::with_capacity(sorted.len());
        let mut values = Vec::with_capacity(sorted.len());
        let mut storage = Vec::with_capacity(sorted.len());
        for (_, value) in &sorted {
            let (ty, ptr, st) = match value {
                AttrValue::Str(s) => {
                    let s = s.clone();
                    let span = Box::new(XLA_FFI_ByteSpan { ptr: s.as_ptr() as *const _, len: s.len() });
                    let p = &*span as *const XLA_FFI_ByteSpan as *mut c_void;
                    (XLA_FFI_AttrType_STRING, p, Storage::Str(span, s))
                }
                AttrValue::Array(a) => {
                    let data = words(&a.bytes());
                    let arr =
                        Box::new(XLA_FFI_Array { dtype: a.dtype(), size: a.len(), data: data.as_ptr() as *mut c_void });
                    let p = &*arr as *const XLA_FFI_Array as *mut c_void;
                    (XLA_FFI_AttrType_ARRAY, p, Storage::Array(arr, data))
                }
                AttrValue::Dict(d) => {
                    let nested = Box::new(EncodedAttrs::new(d));
                    let p = &*nested.raw as *const XLA_FFI_Attrs as *mut c_void;
                    (XLA_FFI_AttrType_DICTIONARY, p, Storage::Dict(nested))
                }
                scalar => {
                    let bytes = scalar.scalar_bytes().unwrap_or_default();
                    let cell = Box::new([words(&bytes)[0]]);
                    let dtype = scalar.scalar_dtype().unwrap_or(XLA_FFI_DataType_INVALID);
                    let s = Box::new(XLA_FFI_Scalar { dtype, value: cell.as_ptr() as *mut c_void });
                    let p = &*s as *const XLA_FFI_Scalar as *mut c_void;
                    (XLA_FFI_AttrType_SCALAR, p, Storage::Scalar(s, cell))
                }
            };
            types.push(ty);
            values.push(ptr);
            storage.push(st);
        }
        let mut spans: Vec<XLA_FFI_ByteSpan> =
            names.iter().map(|n| XLA_FFI_ByteSpan { ptr: n.as_ptr() as *const _, len: n.len() }).collect();
        let mut span_ptrs: Vec<*mut XLA_FFI_ByteSpan> = spans.iter_mut().map(|s| s as *mut XLA_FFI_ByteSpan).collect();
        let raw = Box::new(XLA_FFI_Attrs {
            struct_size: sizes::attrs(),
            extension_start: std::ptr::null_mut(),
            size: names.len() as i64,
            types: types.as_mut_ptr(),
            names: span_ptrs.as_mut_ptr(),
            attrs: values.as_mut_ptr(),
        });
        EncodedAttrs { _names: names, _spans: spans, span_ptrs, types, values, _storage: storage, raw }
    }

    /// The attribute table by value, for a call frame.
    fn table(&self) -> XLA_FFI_Attrs {
        XLA_FFI_Attrs {
            struct_size: self.raw.struct_size,
            extension_start: std::ptr::null_mut(),
            size: self.raw.size,
            types: self.types.as_ptr() as *mut _,
            names: self.span_ptrs.as_ptr() as *mut _,
            attrs: self.values.as_ptr() as *mut _,
        }
    }
}

/// A decoded call site.
struct Prepared {
    bytes: Vec<u8>,
    descriptor: CallDescriptor,
    attrs: EncodedAttrs,
}

thread_local! {
    static PREPARED: RefCell<HashMap<(usize, usize), Rc<Prepared>>> = RefCell::new(HashMap::new());
}

/// Call sites remembered per thread before the cache starts over.
const CACHE_LIMIT: usize = 4096;

/// The decoded descriptor at `bytes`, decoding it on first use on this thread. Entries are
/// checked against the bytes, since code (and its descriptors) can be unloaded and other code
/// loaded at the same address.
fn prepared(bytes: &[u8]) -> Result<Rc<Prepared>, String> {
    let key = (bytes.as_ptr() as usize, bytes.len());
    if let Some(p) = PREPARED.with(|c| c.borrow().get(&key).cloned()) {
        if p.bytes == bytes {
            return Ok(p);
        }
    }
    let descriptor = CallDescriptor::decode(bytes)?;
    let attrs = EncodedAttrs::new(&descriptor.attrs);
    let p = Rc::new(Prepared { bytes: bytes.to_vec(), descriptor, attrs });
    PREPARED.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= CACHE_LIMIT {
            c.clear();
        }
        c.insert(key, p.clone());
    });
    Ok(p)
}

fn buffers(specs: &[super::descriptor::BufferSpec], data: *const *mut c_void) -> Vec<XLA_FFI_Buffer> {
    specs
        .iter()
        .enumerate()
        .map(|(i, s)| XLA_FFI_Buffer {
            struct_size: sizes::buffer(),
            extension_start: std::ptr::null_mut(),
            dtype: s.dtype,
            // SAFETY: generated code passes one pointer per spec.
            data: unsafe { *data.add(i) },
            rank: s.dims.len() as i64,
            dims: s.dims.as_ptr() as *mut i64,
        })
        .collect()
}

/// Calls a typed-FFI handler for the call site described by the `descriptor_len` bytes at
/// `descriptor`, with one data pointer per argument in `args` and per result in `rets`.
/// Returns 0, or 1 after recording the failure as the thread's last error.
///
/// # Safety
/// `handler` must be an `XLA_FFI_Handler`; the descriptor must be one the compiler emitted and
/// the pointer arrays must hold as many valid buffers as it describes.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_ffi_call(
    handler: *const c_void,
    descriptor: *const u8,
    descriptor_len: i64,
    args: *const *mut c_void,
    rets: *const *mut c_void,
) -> i32 {
    if handler.is_null() || descriptor.is_null() || descriptor_len <= 0 {
        set_last_error("typed-FFI call without a handler or descriptor");
        return 1;
    }
    let bytes = std::slice::from_raw_parts(descriptor, descriptor_len as usize);
    let p = match prepared(bytes) {
        Ok(p) => p,
        Err(e) => {
            set_last_error(format!("bad custom-call descriptor: {e}"));
            return 1;
        }
    };
    let d = &p.descriptor;
    let mut arg_bufs = buffers(&d.args, args);
    let mut ret_bufs = buffers(&d.rets, rets);
    let mut arg_types = vec![XLA_FFI_ArgType_BUFFER; arg_bufs.len()];
    let mut ret_types = vec![XLA_FFI_RetType_BUFFER; ret_bufs.len()];
    let mut arg_ptrs: Vec<*mut c_void> = arg_bufs.iter_mut().map(|b| b as *mut XLA_FFI_Buffer as *mut c_void).collect();
    let mut ret_ptrs: Vec<*mut c_void> = ret_bufs.iter_mut().map(|b| b as *mut XLA_FFI_Buffer as *mut c_void).collect();
    let mut frame = XLA_FFI_CallFrame {
        struct_size: sizes::call_frame(),
        extension_start: std::ptr::null_mut(),
        api: api(),
        // The run's user data (see `context`); never null.
        ctx: super::context::current() as *mut XLA_FFI_ExecutionContext,
        stage: XLA_FFI_ExecutionStage_EXECUTE,
        args: XLA_FFI_Args {
            struct_size: sizes::args(),
            extension_start: std::ptr::null_mut(),
            size: arg_ptrs.len() as i64,
            types: arg_types.as_mut_ptr(),
            args: arg_ptrs.as_mut_ptr(),
        },
        rets: XLA_FFI_Rets {
            struct_size: sizes::rets(),
            extension_start: std::ptr::null_mut(),
            size: ret_ptrs.len() as i64,
            types: ret_types.as_mut_ptr(),
            rets: ret_ptrs.as_mut_ptr(),
        },
        attrs: p.attrs.table(),
        future: std::ptr::null_mut(),
    };
    let handler: XLA_FFI_Handler = std::mem::transmute::<*const c_void, XLA_FFI_Handler>(handler);
    let error = handler(&mut frame);
    if !error.is_null() {
        set_last_error(format!("custom call '{}' failed: {}", d.target, consume_error(error)));
        return 1;
    }
    if !frame.future.is_null() {
        if let Some(e) = release_future(frame.future).wait() {
            set_last_error(format!("custom call '{}' failed: {e}", d.target));
            return 1;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::super::descriptor::{ArrayValue, BufferSpec};
    use super::super::last_error::take_last_error;
    use super::*;
    use hlojit_ffi::handler::{dispatch, Call, Error, HandlerResult};

    /// y = x * scale + offset, with `scale` an f32 attribute and `offset` an element of the
    /// dictionary attribute `extra`; `tag` must be the string "ok".
    fn affine(mut call: Call) -> HandlerResult {
        if call.attrs.str("tag")? != "ok" {
            return Err(Error::invalid_argument("tag is not ok"));
        }
        let scale = call.attrs.f64("scale")? as f32;
        let offset = call.attrs.dict("extra")?.array("offset")?.as_slice::<i32>()?[1] as f32;
        let x = call.arg(0)?.as_slice::<f32>()?;
        let y = call.rets[0].as_mut_slice::<f32>()?;
        for (y, x) in y.iter_mut().zip(x) {
            *y = x * scale + offset;
        }
        Ok(())
    }

    unsafe extern "C" fn affine_handler(frame: *mut XLA_FFI_CallFrame) -> *mut XLA_FFI_Error {
        dispatch(frame, affine)
    }

    fn descriptor(tag: &str) -> Vec<u8> {
        CallDescriptor {
            target: "affine".into(),
            args: vec![BufferSpec { dtype: XLA_FFI_DataType_F32, dims: vec![3] }],
            rets: vec![BufferSpec { dtype: XLA_FFI_DataType_F32, dims: vec![3] }],
            attrs: vec![
                ("tag".into(), AttrValue::Str(tag.into())),
                ("scale".into(), AttrValue::F32(2.0)),
                (
                    "extra".into(),
                    AttrValue::Dict(vec![("offset".into(), AttrValue::Array(ArrayValue::I32(vec![0, 10])))]),
                ),
            ],
        }
        .encode()
    }

    fn run(bytes: &[u8], x: &mut [f32; 3], y: &mut [f32; 3]) -> i32 {
        let args = [x.as_mut_ptr() as *mut c_void];
        let rets = [y.as_mut_ptr() as *mut c_void];
        unsafe {
            hlojit_rt_ffi_call(
                affine_handler as *const c_void,
                bytes.as_ptr(),
                bytes.len() as i64,
                args.as_ptr(),
                rets.as_ptr(),
            )
        }
    }

    #[test]
    fn handler_sees_buffers_and_attributes() {
        let bytes = descriptor("ok");
        let mut x = [1.0f32, -2.0, 0.5];
        let mut y = [0.0f32; 3];
        assert_eq!(run(&bytes, &mut x, &mut y), 0, "{:?}", take_last_error());
        assert_eq!(y, [12.0, 6.0, 11.0]);
        // Second call through the cache.
        x[0] = 3.0;
        assert_eq!(run(&bytes, &mut x, &mut y), 0);
        assert_eq!(y[0], 16.0);
    }

    #[test]
    fn handler_error_is_reported_with_the_target_name() {
        let bytes = descriptor("bad");
        let (mut x, mut y) = ([0.0f32; 3], [0.0f32; 3]);
        assert_eq!(run(&bytes, &mut x, &mut y), 1);
        assert_eq!(take_last_error().as_deref(), Some("custom call 'affine' failed: tag is not ok"));
    }
}
