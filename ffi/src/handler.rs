//! Safe access to a typed-FFI call frame for handlers written in Rust, and the glue that turns
//! a plain Rust function into an exported `XLA_FFI_Handler` (see
//! [`export_handler!`](crate::export_handler)).
//!
//! A handler written this way runs on any host that implements XLA's FFI C API: hlojit, or XLA
//! itself.
//!
//! Below, the hidden lines play the host: they describe two `f32[3]` buffers and a `factor`
//! attribute in a call frame, as hlojit does for
//! `custom-call(x), custom_call_target="scale", api_version=API_VERSION_TYPED_FFI,
//! backend_config={factor = 2.0 : f64}`.
//!
//! ```rust
//! use hlojit_ffi::handler::{dispatch, Call, Error, HandlerResult};
//! # use hlojit_ffi::xla::*;
//! # use std::ffi::{c_char, c_void};
//! # use std::ptr::null_mut;
//!
//! fn scale(mut call: Call) -> HandlerResult {
//!     call.expect_arity(1, 1)?;
//!     let factor = call.attrs.f64("factor")? as f32;
//!     let x = call.arg(0)?.as_slice::<f32>()?; // an error, not a panic, if x is not f32
//!     let y = call.rets[0].as_mut_slice::<f32>()?;
//!     for (y, x) in y.iter_mut().zip(x) {
//!         *y = x * factor;
//!     }
//!     Ok(())
//! }
//!
//! let x = [1.0f32, 2.0, 3.0];
//! let mut y = [0.0f32; 3];
//! # unsafe extern "C" fn error_create(_: *mut XLA_FFI_Error_Create_Args) -> *mut XLA_FFI_Error {
//! #     std::ptr::NonNull::dangling().as_ptr() // a host would allocate an error object
//! # }
//! # // SAFETY: every field of the table is a number, a pointer or an optional function.
//! # let mut api: XLA_FFI_Api = unsafe { std::mem::zeroed() };
//! # api.XLA_FFI_Error_Create = Some(error_create);
//! # let mut dims = [3i64];
//! # let buffer = |data: *mut c_void, dims: *mut i64| XLA_FFI_Buffer {
//! #     struct_size: sizes::buffer(), extension_start: null_mut(), dtype: XLA_FFI_DataType_F32, data, rank: 1, dims,
//! # };
//! # let mut xb = buffer(x.as_ptr() as *mut c_void, dims.as_mut_ptr());
//! # let mut yb = buffer(y.as_mut_ptr() as *mut c_void, dims.as_mut_ptr());
//! # let mut arg_types = [XLA_FFI_ArgType_BUFFER];
//! # let mut args = [&mut xb as *mut XLA_FFI_Buffer as *mut c_void];
//! # let mut ret_types = [XLA_FFI_RetType_BUFFER];
//! # let mut rets = [&mut yb as *mut XLA_FFI_Buffer as *mut c_void];
//! # let mut factor = 2.0f64;
//! # let mut scalar = XLA_FFI_Scalar { dtype: XLA_FFI_DataType_F64, value: &mut factor as *mut f64 as *mut c_void };
//! # let mut name = XLA_FFI_ByteSpan { ptr: "factor".as_ptr() as *const c_char, len: 6 };
//! # let mut names = [&mut name as *mut XLA_FFI_ByteSpan];
//! # let mut attr_types = [XLA_FFI_AttrType_SCALAR];
//! # let mut attrs = [&mut scalar as *mut XLA_FFI_Scalar as *mut c_void];
//! # let mut frame = XLA_FFI_CallFrame {
//! #     struct_size: sizes::call_frame(),
//! #     extension_start: null_mut(),
//! #     api: &api,
//! #     ctx: null_mut(),
//! #     stage: XLA_FFI_ExecutionStage_EXECUTE,
//! #     args: XLA_FFI_Args { struct_size: sizes::args(), extension_start: null_mut(), size: 1, types: arg_types.as_mut_ptr(), args: args.as_mut_ptr() },
//! #     rets: XLA_FFI_Rets { struct_size: sizes::rets(), extension_start: null_mut(), size: 1, types: ret_types.as_mut_ptr(), rets: rets.as_mut_ptr() },
//! #     attrs: XLA_FFI_Attrs {
//! #         struct_size: sizes::attrs(), extension_start: null_mut(), size: 1,
//! #         types: attr_types.as_mut_ptr(), names: names.as_mut_ptr(), attrs: attrs.as_mut_ptr(),
//! #     },
//! #     future: null_mut(),
//! # };
//! // What the exported symbol does with the host's call frame (see `export_handler!`):
//! let error = unsafe { dispatch(&mut frame, scale) };
//! assert!(error.is_null()); // success
//! assert_eq!(y, [2.0, 4.0, 6.0]);
//!
//! // A handler's `Err` (or panic) becomes an error object created through the host's API.
//! let error = unsafe { dispatch(&mut frame, |_| Err(Error::invalid_argument("no"))) };
//! assert!(!error.is_null());
//! ```

#![allow(non_upper_case_globals)] // XLA's C constant names, matched in patterns

use crate::xla::*;
use std::ffi::{c_void, CString};
use std::marker::PhantomData;

/// What a handler returns: `Err` becomes an `XLA_FFI_Error` the host reports.
pub type HandlerResult = Result<(), Error>;

/// A handler failure: an XLA error code and a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// An `XLA_FFI_Error_Code_*` (absl status code); `OK` is reported as `UNKNOWN`.
    pub code: XLA_FFI_Error_Code,
    /// What went wrong, for the host to show (NUL bytes become spaces when it is passed on).
    pub message: String,
}

impl Error {
    /// An error with an `XLA_FFI_Error_Code_*` code.
    pub fn new(code: XLA_FFI_Error_Code, message: impl Into<String>) -> Error {
        Error { code, message: message.into() }
    }

    /// An `INVALID_ARGUMENT` error: bad operands or attributes.
    pub fn invalid_argument(message: impl Into<String>) -> Error {
        Error::new(XLA_FFI_Error_Code_INVALID_ARGUMENT, message)
    }

    /// An `INTERNAL` error: the handler's own invariant broke.
    pub fn internal(message: impl Into<String>) -> Error {
        Error::new(XLA_FFI_Error_Code_INTERNAL, message)
    }
}

impl From<String> for Error {
    fn from(message: String) -> Error {
        Error::new(XLA_FFI_Error_Code_UNKNOWN, message)
    }
}

impl From<&str> for Error {
    fn from(message: &str) -> Error {
        Error::new(XLA_FFI_Error_Code_UNKNOWN, message)
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// An element type a buffer or attribute array can be viewed as.
///
/// Implemented for `i8`..`i64`, `u8`..`u64`, `f32`, `f64` and `bool` (`pred`, one byte of 0
/// or 1). Other element types (f16, bf16, complex) are reached through the raw data pointer.
pub trait Element: Copy + 'static {
    /// The FFI element type this Rust type reads.
    const DTYPE: XLA_FFI_DataType;
}

macro_rules! element {
    ($($t:ty => $d:ident),* $(,)?) => { $(impl Element for $t { const DTYPE: XLA_FFI_DataType = $d; })* };
}
element!(
    i8 => XLA_FFI_DataType_S8, i16 => XLA_FFI_DataType_S16, i32 => XLA_FFI_DataType_S32, i64 => XLA_FFI_DataType_S64,
    u8 => XLA_FFI_DataType_U8, u16 => XLA_FFI_DataType_U16, u32 => XLA_FFI_DataType_U32, u64 => XLA_FFI_DataType_U64,
    f32 => XLA_FFI_DataType_F32, f64 => XLA_FFI_DataType_F64, bool => XLA_FFI_DataType_PRED,
);

/// An argument buffer: element type, dimensions and read-only data in the layout the HLO
/// specifies for it (row-major unless the custom call constrains operand layouts).
#[derive(Clone, Copy)]
pub struct Buffer<'a> {
    dtype: XLA_FFI_DataType,
    dims: &'a [i64],
    data: *const c_void,
}

impl<'a> Buffer<'a> {
    /// # Safety
    /// `raw` must point to a valid buffer description that outlives `'a`.
    unsafe fn from_raw(raw: *const XLA_FFI_Buffer) -> Result<Buffer<'a>, Error> {
        let raw = raw.as_ref().ok_or_else(|| Error::invalid_argument("null buffer"))?;
        let dims = if raw.rank <= 0 || raw.dims.is_null() {
            &[][..]
        } else {
            std::slice::from_raw_parts(raw.dims, raw.rank as usize)
        };
        Ok(Buffer { dtype: raw.dtype, dims, data: raw.data })
    }

    /// The element type (an `XLA_FFI_DataType_*`; see [`dtype_name`]).
    pub fn dtype(&self) -> XLA_FFI_DataType {
        self.dtype
    }

    /// Dimension sizes, major-most first (empty for a scalar).
    pub fn dims(&self) -> &'a [i64] {
        self.dims
    }

    /// Number of elements (1 for a scalar, 0 when a dimension is 0).
    pub fn element_count(&self) -> usize {
        self.dims.iter().map(|&d| d.max(0) as usize).product()
    }

    /// The first element, for element types without an [`Element`] impl.
    pub fn data(&self) -> *const c_void {
        self.data
    }

    /// The elements, if the buffer holds `T`s.
    pub fn as_slice<T: Element>(&self) -> Result<&'a [T], Error> {
        check_dtype::<T>(self.dtype)?;
        let n = self.element_count();
        if n == 0 {
            return Ok(&[]);
        }
        // SAFETY: the host guarantees `n` elements of this type at `data` for the call.
        Ok(unsafe { std::slice::from_raw_parts(self.data as *const T, n) })
    }
}

/// A result buffer the handler writes.
///
/// hlojit gives every result its own memory. XLA itself may pass the same memory as an
/// argument and a result that the HLO aliases (`output_to_operand_aliasing`); a handler meant
/// for XLA too should then not hold a slice of that argument while writing the result (work
/// through [`BufferMut::data`] instead).
pub struct BufferMut<'a> {
    dtype: XLA_FFI_DataType,
    dims: &'a [i64],
    data: *mut c_void,
}

impl<'a> BufferMut<'a> {
    /// The element type (an `XLA_FFI_DataType_*`; see [`dtype_name`]).
    pub fn dtype(&self) -> XLA_FFI_DataType {
        self.dtype
    }

    /// Dimension sizes, major-most first (empty for a scalar).
    pub fn dims(&self) -> &'a [i64] {
        self.dims
    }

    /// Number of elements (1 for a scalar, 0 when a dimension is 0).
    pub fn element_count(&self) -> usize {
        self.dims.iter().map(|&d| d.max(0) as usize).product()
    }

    /// The first element to write, for element types without an [`Element`] impl.
    pub fn data(&mut self) -> *mut c_void {
        self.data
    }

    /// The elements to write, if the buffer holds `T`s.
    pub fn as_mut_slice<T: Element>(&mut self) -> Result<&mut [T], Error> {
        check_dtype::<T>(self.dtype)?;
        let n = self.element_count();
        if n == 0 {
            return Ok(&mut []);
        }
        // SAFETY: the host guarantees `n` writable elements at `data`; `&mut self` prevents a
        // second view through this result. hlojit never passes a result's memory as an
        // argument too (an aliased output starts as a copy of its operand instead); see the
        // type's documentation for hosts that do.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.data as *mut T, n) })
    }
}

fn check_dtype<T: Element>(dtype: XLA_FFI_DataType) -> Result<(), Error> {
    if dtype == T::DTYPE {
        Ok(())
    } else {
        Err(Error::invalid_argument(format!(
            "buffer has element type {} ({}), viewed as {} ({})",
            dtype_name(dtype),
            dtype,
            dtype_name(T::DTYPE),
            T::DTYPE
        )))
    }
}

/// The HLO name of an FFI element type (`f32`, `s64`, ...), or `"?"`.
pub fn dtype_name(dtype: XLA_FFI_DataType) -> &'static str {
    match dtype {
        XLA_FFI_DataType_PRED => "pred",
        XLA_FFI_DataType_S8 => "s8",
        XLA_FFI_DataType_S16 => "s16",
        XLA_FFI_DataType_S32 => "s32",
        XLA_FFI_DataType_S64 => "s64",
        XLA_FFI_DataType_U8 => "u8",
        XLA_FFI_DataType_U16 => "u16",
        XLA_FFI_DataType_U32 => "u32",
        XLA_FFI_DataType_U64 => "u64",
        XLA_FFI_DataType_F16 => "f16",
        XLA_FFI_DataType_BF16 => "bf16",
        XLA_FFI_DataType_F32 => "f32",
        XLA_FFI_DataType_F64 => "f64",
        XLA_FFI_DataType_C64 => "c64",
        XLA_FFI_DataType_C128 => "c128",
        XLA_FFI_DataType_TOKEN => "token",
        _ => "?",
    }
}

/// One attribute value.
#[derive(Clone, Copy, Debug)]
///
/// Scalars keep the type the attribute was written with (`42 : i32` is `I32(42)`); the
/// [`Attrs`] getters convert between widths.
pub enum Attr<'a> {
    /// `true`/`false` (an `i1` / `pred` scalar).
    Bool(bool),
    /// An `i8` scalar.
    I8(i8),
    /// An `i16` scalar.
    I16(i16),
    /// An `i32` scalar.
    I32(i32),
    /// An `i64` scalar.
    I64(i64),
    /// A `ui8` scalar.
    U8(u8),
    /// A `ui16` scalar.
    U16(u16),
    /// A `ui32` scalar.
    U32(u32),
    /// A `ui64` scalar.
    U64(u64),
    /// An `f32` scalar.
    F32(f32),
    /// An `f64` scalar.
    F64(f64),
    /// A string (`"..."`), UTF-8.
    Str(&'a str),
    /// An array of scalars.
    Array(ArrayAttr<'a>),
    /// A nested dictionary (`{a = 1 : i32}`).
    Dict(Attrs<'a>),
}

impl<'a> Attr<'a> {
    /// The value as an integer, if it is one (booleans included).
    pub fn as_i64(&self) -> Option<i64> {
        Some(match *self {
            Attr::Bool(v) => v as i64,
            Attr::I8(v) => v as i64,
            Attr::I16(v) => v as i64,
            Attr::I32(v) => v as i64,
            Attr::I64(v) => v,
            Attr::U8(v) => v as i64,
            Attr::U16(v) => v as i64,
            Attr::U32(v) => v as i64,
            Attr::U64(v) => i64::try_from(v).ok()?,
            _ => return None,
        })
    }

    /// The value as a float, if it is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Attr::F32(v) => Some(v as f64),
            Attr::F64(v) => Some(v),
            _ => self.as_i64().map(|v| v as f64),
        }
    }

    /// The value, if it is a string.
    pub fn as_str(&self) -> Option<&'a str> {
        match *self {
            Attr::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// An array attribute (`array<i32: 1, 2>` or `dense<...>`).
#[derive(Clone, Copy, Debug)]
pub struct ArrayAttr<'a> {
    dtype: XLA_FFI_DataType,
    len: usize,
    data: *const c_void,
    _life: PhantomData<&'a ()>,
}

impl<'a> ArrayAttr<'a> {
    /// The element type (an `XLA_FFI_DataType_*`).
    pub fn dtype(&self) -> XLA_FFI_DataType {
        self.dtype
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements, if the array holds `T`s; [`Error::invalid_argument`] otherwise.
    pub fn as_slice<T: Element>(&self) -> Result<&'a [T], Error> {
        check_dtype::<T>(self.dtype)?;
        if self.len == 0 {
            return Ok(&[]);
        }
        // SAFETY: the host guarantees `len` elements of this type for the call.
        Ok(unsafe { std::slice::from_raw_parts(self.data as *const T, self.len) })
    }
}

/// The attributes of a call (or of a dictionary attribute), by name.
#[derive(Clone, Copy, Debug)]
pub struct Attrs<'a> {
    raw: *const XLA_FFI_Attrs,
    _life: PhantomData<&'a ()>,
}

impl<'a> Attrs<'a> {
    /// Number of attributes.
    pub fn len(&self) -> usize {
        // SAFETY: `raw` is valid for `'a` (checked at construction).
        unsafe { (*self.raw).size.max(0) as usize }
    }

    /// True when there are no attributes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Attribute `i`: its name and value.
    pub fn entry(&self, i: usize) -> Result<(&'a str, Attr<'a>), Error> {
        if i >= self.len() {
            return Err(Error::invalid_argument(format!("attribute index {i} out of range")));
        }
        // SAFETY: the host provides `size` valid names, types and values.
        unsafe {
            let raw = &*self.raw;
            let name = &**raw.names.add(i);
            let bytes = std::slice::from_raw_parts(name.ptr as *const u8, name.len);
            let name =
                std::str::from_utf8(bytes).map_err(|_| Error::invalid_argument("attribute name is not UTF-8"))?;
            let value = decode_attr(*raw.types.add(i), *raw.attrs.add(i), name)?;
            Ok((name, value))
        }
    }

    /// The attribute called `name`.
    pub fn get(&self, name: &str) -> Option<Attr<'a>> {
        (0..self.len()).filter_map(|i| self.entry(i).ok()).find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// An integer attribute (any integer width, or a boolean).
    pub fn i64(&self, name: &str) -> Result<i64, Error> {
        self.required(name)?.as_i64().ok_or_else(|| wrong_kind(name, "an integer"))
    }

    /// A numeric attribute as a float.
    pub fn f64(&self, name: &str) -> Result<f64, Error> {
        self.required(name)?.as_f64().ok_or_else(|| wrong_kind(name, "a number"))
    }

    /// A string attribute; an `INVALID_ARGUMENT` error when it is missing or not a string.
    pub fn str(&self, name: &str) -> Result<&'a str, Error> {
        self.required(name)?.as_str().ok_or_else(|| wrong_kind(name, "a string"))
    }

    /// A boolean attribute; an `INVALID_ARGUMENT` error when it is missing or not a boolean.
    pub fn bool(&self, name: &str) -> Result<bool, Error> {
        match self.required(name)? {
            Attr::Bool(b) => Ok(b),
            _ => Err(wrong_kind(name, "a boolean")),
        }
    }

    /// An array attribute; an `INVALID_ARGUMENT` error when it is missing or not an array.
    pub fn array(&self, name: &str) -> Result<ArrayAttr<'a>, Error> {
        match self.required(name)? {
            Attr::Array(a) => Ok(a),
            _ => Err(wrong_kind(name, "an array")),
        }
    }

    /// A dictionary attribute; an `INVALID_ARGUMENT` error when it is missing or not one.
    pub fn dict(&self, name: &str) -> Result<Attrs<'a>, Error> {
        match self.required(name)? {
            Attr::Dict(d) => Ok(d),
            _ => Err(wrong_kind(name, "a dictionary")),
        }
    }

    fn required(&self, name: &str) -> Result<Attr<'a>, Error> {
        self.get(name).ok_or_else(|| Error::invalid_argument(format!("missing attribute '{name}'")))
    }
}

fn wrong_kind(name: &str, what: &str) -> Error {
    Error::invalid_argument(format!("attribute '{name}' is not {what}"))
}

/// # Safety
/// `value` must be a valid attribute of type `ty`.
unsafe fn decode_attr<'a>(ty: XLA_FFI_AttrType, value: *mut c_void, name: &str) -> Result<Attr<'a>, Error> {
    if value.is_null() {
        return Err(Error::invalid_argument(format!("attribute '{name}' has no value")));
    }
    Ok(match ty {
        XLA_FFI_AttrType_STRING => {
            let span = &*(value as *const XLA_FFI_ByteSpan);
            let bytes =
                if span.len == 0 { &[][..] } else { std::slice::from_raw_parts(span.ptr as *const u8, span.len) };
            Attr::Str(
                std::str::from_utf8(bytes)
                    .map_err(|_| Error::invalid_argument(format!("attribute '{name}' is not UTF-8")))?,
            )
        }
        XLA_FFI_AttrType_DICTIONARY => Attr::Dict(Attrs { raw: value as *const XLA_FFI_Attrs, _life: PhantomData }),
        XLA_FFI_AttrType_ARRAY => {
            let a = &*(value as *const XLA_FFI_Array);
            Attr::Array(ArrayAttr { dtype: a.dtype, len: a.size, data: a.data, _life: PhantomData })
        }
        XLA_FFI_AttrType_SCALAR => {
            let s = &*(value as *const XLA_FFI_Scalar);
            let p = s.value;
            match s.dtype {
                XLA_FFI_DataType_PRED => Attr::Bool(*(p as *const u8) != 0),
                XLA_FFI_DataType_S8 => Attr::I8(*(p as *const i8)),
                XLA_FFI_DataType_S16 => Attr::I16(*(p as *const i16)),
                XLA_FFI_DataType_S32 => Attr::I32(*(p as *const i32)),
                XLA_FFI_DataType_S64 => Attr::I64(*(p as *const i64)),
                XLA_FFI_DataType_U8 => Attr::U8(*(p as *const u8)),
                XLA_FFI_DataType_U16 => Attr::U16(*(p as *const u16)),
                XLA_FFI_DataType_U32 => Attr::U32(*(p as *const u32)),
                XLA_FFI_DataType_U64 => Attr::U64(*(p as *const u64)),
                XLA_FFI_DataType_F32 => Attr::F32(*(p as *const f32)),
                XLA_FFI_DataType_F64 => Attr::F64(*(p as *const f64)),
                other => {
                    return Err(Error::invalid_argument(format!(
                        "attribute '{name}' has unsupported scalar type {other}"
                    )))
                }
            }
        }
        other => return Err(Error::invalid_argument(format!("attribute '{name}' has unknown kind {other}"))),
    })
}

/// One call of a handler: its arguments, results and attributes.
pub struct Call<'a> {
    /// The operands, in order (see [`Call::arg`] for a checked lookup).
    pub args: Vec<Buffer<'a>>,
    /// The results to write, in order (one per leaf of the custom call's result shape).
    pub rets: Vec<BufferMut<'a>>,
    /// The attributes of the custom call's `backend_config` dictionary.
    pub attrs: Attrs<'a>,
}

impl<'a> Call<'a> {
    /// Argument `i`.
    pub fn arg(&self, i: usize) -> Result<Buffer<'a>, Error> {
        self.args.get(i).copied().ok_or_else(|| Error::invalid_argument(format!("the call has no argument {i}")))
    }

    /// Checks the numbers of arguments and results.
    pub fn expect_arity(&self, args: usize, rets: usize) -> Result<(), Error> {
        if self.args.len() != args || self.rets.len() != rets {
            return Err(Error::invalid_argument(format!(
                "expected {args} arguments and {rets} results, got {} and {}",
                self.args.len(),
                self.rets.len()
            )));
        }
        Ok(())
    }
}

/// Runs `f` on the call in `frame` and reports its outcome the way XLA's FFI expects: null
/// on success, an error created by the host's API otherwise. Also answers the metadata
/// query hosts send before the first call, and turns a panic into an error.
///
/// # Safety
/// `frame` must be a call frame from a host implementing XLA's FFI C API.
pub unsafe fn dispatch(frame: *mut XLA_FFI_CallFrame, f: impl FnOnce(Call<'_>) -> HandlerResult) -> *mut XLA_FFI_Error {
    let Some(frame) = frame.as_mut() else { return std::ptr::null_mut() };
    let api = frame.api;
    if frame.struct_size < sizes::call_frame() {
        return create_error(api, &Error::invalid_argument("call frame from an older FFI API version"));
    }
    if !frame.extension_start.is_null() && (*frame.extension_start).type_ == XLA_FFI_Extension_Metadata {
        let ext = frame.extension_start as *mut XLA_FFI_Metadata_Extension;
        if let Some(metadata) = (*ext).metadata.as_mut() {
            metadata.api_version = XLA_FFI_Api_Version {
                struct_size: sizes::api_version(),
                extension_start: std::ptr::null_mut(),
                major_version: XLA_FFI_API_MAJOR,
                minor_version: XLA_FFI_API_MINOR,
            };
            metadata.traits = 0;
            metadata.state_type_id = XLA_FFI_TypeId { type_id: 0 };
        }
        return std::ptr::null_mut();
    }
    if frame.stage != XLA_FFI_ExecutionStage_EXECUTE {
        // Handlers made this way have no instantiate/prepare/initialize work.
        return std::ptr::null_mut();
    }
    let call = match build_call(frame) {
        Ok(c) => c,
        Err(e) => return create_error(api, &e),
    };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(call)));
    match outcome {
        Ok(Ok(())) => std::ptr::null_mut(),
        Ok(Err(e)) => create_error(api, &e),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            create_error(api, &Error::internal(format!("handler panicked: {what}")))
        }
    }
}

unsafe fn build_call<'a>(frame: &'a XLA_FFI_CallFrame) -> Result<Call<'a>, Error> {
    let mut args = Vec::with_capacity(frame.args.size.max(0) as usize);
    for i in 0..frame.args.size.max(0) as usize {
        if *frame.args.types.add(i) != XLA_FFI_ArgType_BUFFER {
            return Err(Error::invalid_argument(format!("argument {i} is not a buffer")));
        }
        args.push(Buffer::from_raw(*frame.args.args.add(i) as *const XLA_FFI_Buffer)?);
    }
    let mut rets = Vec::with_capacity(frame.rets.size.max(0) as usize);
    for i in 0..frame.rets.size.max(0) as usize {
        if *frame.rets.types.add(i) != XLA_FFI_RetType_BUFFER {
            return Err(Error::invalid_argument(format!("result {i} is not a buffer")));
        }
        let b = Buffer::from_raw(*frame.rets.rets.add(i) as *const XLA_FFI_Buffer)?;
        rets.push(BufferMut { dtype: b.dtype, dims: b.dims, data: b.data as *mut c_void });
    }
    Ok(Call { args, rets, attrs: Attrs { raw: &frame.attrs, _life: PhantomData } })
}

/// Creates an error through the host's API.
///
/// # Safety
/// `api` must be null or a valid API table.
pub unsafe fn create_error(api: *const XLA_FFI_Api, error: &Error) -> *mut XLA_FFI_Error {
    let Some(create) = api.as_ref().and_then(|a| a.XLA_FFI_Error_Create) else {
        // A host without the error constructor cannot be told about the failure, and a null
        // return would report success: stopping is the only honest outcome.
        std::process::abort()
    };
    let message = CString::new(error.message.replace('\0', " ")).unwrap_or_default();
    let mut args = XLA_FFI_Error_Create_Args {
        struct_size: sizes::error_create_args(),
        extension_start: std::ptr::null_mut(),
        message: message.as_ptr(),
        errc: if error.code == XLA_FFI_Error_Code_OK { XLA_FFI_Error_Code_UNKNOWN } else { error.code },
    };
    create(&mut args)
}

/// Exports a Rust function `fn(Call) -> HandlerResult` as a typed-FFI handler symbol, the way
/// `XLA_FFI_DEFINE_HANDLER_SYMBOL` does in C++:
///
/// ```
/// use hlojit_ffi::handler::{Call, HandlerResult};
///
/// fn scale(mut call: Call) -> HandlerResult {
///     let factor = call.attrs.f64("factor")? as f32;
///     let x = call.arg(0)?.as_slice::<f32>()?;
///     let y = call.rets[0].as_mut_slice::<f32>()?;
///     for (y, x) in y.iter_mut().zip(x) {
///         *y = x * factor;
///     }
///     Ok(())
/// }
/// hlojit_ffi::export_handler!(my_scale, scale);
/// ```
#[macro_export]
macro_rules! export_handler {
    ($name:ident, $f:path) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            call_frame: *mut $crate::xla::XLA_FFI_CallFrame,
        ) -> *mut $crate::xla::XLA_FFI_Error {
            // SAFETY: the host passes a valid call frame.
            unsafe { $crate::handler::dispatch(call_frame, $f) }
        }
    };
}
