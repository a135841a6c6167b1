//! The C types of XLA's FFI (custom-call) API, laid out exactly as XLA's `xla/ffi/api/c_api.h`
//! version 0.3 lays them out, so that handlers compiled against XLA's headers run unchanged on
//! hlojit's implementation. Names keep their C spelling so that they can be matched against
//! the header one for one.
//!
//! Conventions, as in the C API: every `*_Args` struct is the single argument of the API
//! function of the same name (a field of [`XLA_FFI_Api`]). Its `struct_size` is set by the
//! caller to the struct's size up to the last field it knows of ([`xla_struct_size!`](crate::xla_struct_size)), so
//! that implementation and handler built against different minor versions can tell which
//! fields exist; `extension_start` heads an optional linked list of extensions. Fields marked
//! "Out" are written by the callee. An API function returns null on success or an
//! [`XLA_FFI_Error`] the caller must destroy. Strings are [`XLA_FFI_ByteSpan`]s unless a field
//! says NUL-terminated.
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]

use std::ffi::{c_char, c_int, c_void};

/// Major version of the API this mirror describes.
pub const XLA_FFI_API_MAJOR: c_int = 0;
/// Minor version of the API this mirror describes.
pub const XLA_FFI_API_MINOR: c_int = 3;

/// `struct_size` of a struct: the offset past its last field that belongs to the checked
/// size (XLA's `XLA_FFI_STRUCT_SIZE(type, last_field)`).
#[macro_export]
macro_rules! xla_struct_size {
    ($t:ty, $last:ident) => {{
        let uninit = std::mem::MaybeUninit::<$t>::uninit();
        let base = uninit.as_ptr();
        // SAFETY: only the address of a field is computed, nothing is read.
        let field = unsafe { std::ptr::addr_of!((*base).$last) };
        fn size_of_pointee<T>(_: *const T) -> usize {
            std::mem::size_of::<T>()
        }
        (field as usize - base as usize) + size_of_pointee(field)
    }};
}

/// Identifies an extension's kind.
pub type XLA_FFI_Extension_Type = c_int;
/// The extension through which a handler reports its metadata.
pub const XLA_FFI_Extension_Metadata: XLA_FFI_Extension_Type = 1;

/// Header of every extension; extensions form a singly linked list.
#[repr(C)]
pub struct XLA_FFI_Extension_Base {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// Which extension this is (`XLA_FFI_Extension_Metadata`, ...).
    pub type_: XLA_FFI_Extension_Type,
    /// The next extension in the list, or null.
    pub next: *mut XLA_FFI_Extension_Base,
}

/// An API version (see [`XLA_FFI_API_MAJOR`]).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct XLA_FFI_Api_Version {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// Incompatible changes bump this ([`XLA_FFI_API_MAJOR`]).
    pub major_version: c_int,
    /// Compatible additions bump this ([`XLA_FFI_API_MINOR`]).
    pub minor_version: c_int,
}

/// An error object; its contents belong to the API implementation.
#[repr(C)]
pub struct XLA_FFI_Error {
    _opaque: [u8; 0],
}

/// Error codes, numbered as `absl::StatusCode`.
pub type XLA_FFI_Error_Code = c_int;
/// Success.
pub const XLA_FFI_Error_Code_OK: XLA_FFI_Error_Code = 0;
/// The operation was cancelled.
pub const XLA_FFI_Error_Code_CANCELLED: XLA_FFI_Error_Code = 1;
/// An error of no other kind.
pub const XLA_FFI_Error_Code_UNKNOWN: XLA_FFI_Error_Code = 2;
/// Bad operands or attributes.
pub const XLA_FFI_Error_Code_INVALID_ARGUMENT: XLA_FFI_Error_Code = 3;
/// Timed out.
pub const XLA_FFI_Error_Code_DEADLINE_EXCEEDED: XLA_FFI_Error_Code = 4;
/// Something looked up does not exist.
pub const XLA_FFI_Error_Code_NOT_FOUND: XLA_FFI_Error_Code = 5;
/// Something to create exists already.
pub const XLA_FFI_Error_Code_ALREADY_EXISTS: XLA_FFI_Error_Code = 6;
/// Not allowed.
pub const XLA_FFI_Error_Code_PERMISSION_DENIED: XLA_FFI_Error_Code = 7;
/// Out of memory or another resource.
pub const XLA_FFI_Error_Code_RESOURCE_EXHAUSTED: XLA_FFI_Error_Code = 8;
/// The system is not in a state to do this.
pub const XLA_FFI_Error_Code_FAILED_PRECONDITION: XLA_FFI_Error_Code = 9;
/// Aborted (a concurrency conflict, say).
pub const XLA_FFI_Error_Code_ABORTED: XLA_FFI_Error_Code = 10;
/// A value or index past a valid range.
pub const XLA_FFI_Error_Code_OUT_OF_RANGE: XLA_FFI_Error_Code = 11;
/// Not implemented or not supported.
pub const XLA_FFI_Error_Code_UNIMPLEMENTED: XLA_FFI_Error_Code = 12;
/// A broken invariant.
pub const XLA_FFI_Error_Code_INTERNAL: XLA_FFI_Error_Code = 13;
/// Transiently unavailable; retrying may help.
pub const XLA_FFI_Error_Code_UNAVAILABLE: XLA_FFI_Error_Code = 14;
/// Unrecoverable data loss.
pub const XLA_FFI_Error_Code_DATA_LOSS: XLA_FFI_Error_Code = 15;
/// No valid credentials.
pub const XLA_FFI_Error_Code_UNAUTHENTICATED: XLA_FFI_Error_Code = 16;

/// Arguments of `XLA_FFI_Error_Create`.
#[repr(C)]
pub struct XLA_FFI_Error_Create_Args {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// NUL-terminated message, copied into the error.
    pub message: *const c_char,
    /// The error code (an `XLA_FFI_Error_Code_*`, not OK).
    pub errc: XLA_FFI_Error_Code,
}

/// Arguments of `XLA_FFI_Error_GetMessage`.
#[repr(C)]
pub struct XLA_FFI_Error_GetMessage_Args {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The error to read.
    pub error: *mut XLA_FFI_Error,
    /// Out: its NUL-terminated message, owned by the error.
    pub message: *const c_char,
}

/// Arguments of `XLA_FFI_Error_Destroy`.
#[repr(C)]
pub struct XLA_FFI_Error_Destroy_Args {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The error to free.
    pub error: *mut XLA_FFI_Error,
}

/// Element types, numbered as XLA's `PrimitiveType`.
pub type XLA_FFI_DataType = c_int;
/// No type.
pub const XLA_FFI_DataType_INVALID: XLA_FFI_DataType = 0;
/// `pred`.
pub const XLA_FFI_DataType_PRED: XLA_FFI_DataType = 1;
/// `s8`.
pub const XLA_FFI_DataType_S8: XLA_FFI_DataType = 2;
/// `s16`.
pub const XLA_FFI_DataType_S16: XLA_FFI_DataType = 3;
/// `s32`.
pub const XLA_FFI_DataType_S32: XLA_FFI_DataType = 4;
/// `s64`.
pub const XLA_FFI_DataType_S64: XLA_FFI_DataType = 5;
/// `u8`.
pub const XLA_FFI_DataType_U8: XLA_FFI_DataType = 6;
/// `u16`.
pub const XLA_FFI_DataType_U16: XLA_FFI_DataType = 7;
/// `u32`.
pub const XLA_FFI_DataType_U32: XLA_FFI_DataType = 8;
/// `u64`.
pub const XLA_FFI_DataType_U64: XLA_FFI_DataType = 9;
/// `f16`.
pub const XLA_FFI_DataType_F16: XLA_FFI_DataType = 10;
/// `f32`.
pub const XLA_FFI_DataType_F32: XLA_FFI_DataType = 11;
/// `f64`.
pub const XLA_FFI_DataType_F64: XLA_FFI_DataType = 12;
/// `c64`.
pub const XLA_FFI_DataType_C64: XLA_FFI_DataType = 15;
/// `bf16`.
pub const XLA_FFI_DataType_BF16: XLA_FFI_DataType = 16;
/// A token (no data).
pub const XLA_FFI_DataType_TOKEN: XLA_FFI_DataType = 17;
/// `c128`.
pub const XLA_FFI_DataType_C128: XLA_FFI_DataType = 18;
/// `f8e5m2`.
pub const XLA_FFI_DataType_F8E5M2: XLA_FFI_DataType = 19;
/// `f8e4m3fn`.
pub const XLA_FFI_DataType_F8E4M3FN: XLA_FFI_DataType = 20;
/// `s4`.
pub const XLA_FFI_DataType_S4: XLA_FFI_DataType = 21;
/// `u4`.
pub const XLA_FFI_DataType_U4: XLA_FFI_DataType = 22;
/// `f8e4m3b11fnuz`.
pub const XLA_FFI_DataType_F8E4M3B11FNUZ: XLA_FFI_DataType = 23;
/// `f8e5m2fnuz`.
pub const XLA_FFI_DataType_F8E5M2FNUZ: XLA_FFI_DataType = 24;
/// `f8e4m3fnuz`.
pub const XLA_FFI_DataType_F8E4M3FNUZ: XLA_FFI_DataType = 25;
/// `s2`.
pub const XLA_FFI_DataType_S2: XLA_FFI_DataType = 26;
/// `u2`.
pub const XLA_FFI_DataType_U2: XLA_FFI_DataType = 27;
/// `f8e4m3`.
pub const XLA_FFI_DataType_F8E4M3: XLA_FFI_DataType = 28;
/// `f8e3m4`.
pub const XLA_FFI_DataType_F8E3M4: XLA_FFI_DataType = 29;
/// 1-bit signed integer (no hlojit element type).
pub const XLA_FFI_DataType_S1: XLA_FFI_DataType = 30;
/// 1-bit unsigned integer (no hlojit element type).
pub const XLA_FFI_DataType_U1: XLA_FFI_DataType = 31;
/// `f4e2m1fn`.
pub const XLA_FFI_DataType_F4E2M1FN: XLA_FFI_DataType = 32;
/// `f8e8m0fnu`.
pub const XLA_FFI_DataType_F8E8M0FNU: XLA_FFI_DataType = 33;

/// A dense array operand or result.
#[repr(C)]
pub struct XLA_FFI_Buffer {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// Element type (an `XLA_FFI_DataType_*`).
    pub dtype: XLA_FFI_DataType,
    /// The first element; the data is dense, row-major unless the custom call's
    /// `operand_layout_constraints` give another layout.
    pub data: *mut c_void,
    /// Number of dimensions.
    pub rank: i64,
    /// `rank` dimension sizes, major-most first.
    pub dims: *mut i64,
}

/// The kind of an operand.
pub type XLA_FFI_ArgType = c_int;
/// An [`XLA_FFI_Buffer`] operand.
pub const XLA_FFI_ArgType_BUFFER: XLA_FFI_ArgType = 1;
/// The kind of a result.
pub type XLA_FFI_RetType = c_int;
/// An [`XLA_FFI_Buffer`] result.
pub const XLA_FFI_RetType_BUFFER: XLA_FFI_RetType = 1;

/// The kind of an attribute value.
pub type XLA_FFI_AttrType = c_int;
/// An [`XLA_FFI_Array`] of scalars.
pub const XLA_FFI_AttrType_ARRAY: XLA_FFI_AttrType = 1;
/// A nested [`XLA_FFI_Attrs`].
pub const XLA_FFI_AttrType_DICTIONARY: XLA_FFI_AttrType = 2;
/// An [`XLA_FFI_Scalar`].
pub const XLA_FFI_AttrType_SCALAR: XLA_FFI_AttrType = 3;
/// An [`XLA_FFI_ByteSpan`].
pub const XLA_FFI_AttrType_STRING: XLA_FFI_AttrType = 4;

/// The execution context of one call; its contents belong to the API implementation.
#[repr(C)]
pub struct XLA_FFI_ExecutionContext {
    _opaque: [u8; 0],
}

/// A string that is not NUL-terminated: a pointer and a length.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct XLA_FFI_ByteSpan {
    /// The first byte (not NUL-terminated).
    pub ptr: *const c_char,
    /// Length in bytes.
    pub len: usize,
}

/// A scalar attribute value.
#[repr(C)]
pub struct XLA_FFI_Scalar {
    /// Type of the value (an `XLA_FFI_DataType_*`).
    pub dtype: XLA_FFI_DataType,
    /// Points to the value, of `dtype`'s native type.
    pub value: *mut c_void,
}

/// An array attribute value.
#[repr(C)]
pub struct XLA_FFI_Array {
    /// Element type (an `XLA_FFI_DataType_*`).
    pub dtype: XLA_FFI_DataType,
    /// Number of elements.
    pub size: usize,
    /// The elements, contiguous, of `dtype`'s native type.
    pub data: *mut c_void,
}

/// The id of a registered user type (state, user data).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XLA_FFI_TypeId {
    /// The identifier; 0 (unknown) before registration assigns one.
    pub type_id: i64,
}

/// What the implementation needs to know of a registered type.
#[repr(C)]
pub struct XLA_FFI_TypeInfo {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// Frees an object of the type (state or user data), or `None`.
    pub deleter: Option<unsafe extern "C" fn(object: *mut c_void)>,
}

/// An asynchronous completion; its contents belong to the API implementation.
#[repr(C)]
pub struct XLA_FFI_Future {
    _opaque: [u8; 0],
}

/// Arguments of `XLA_FFI_Future_Create`.
#[repr(C)]
pub struct XLA_FFI_Future_Create_Args {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// Out: the new, pending future.
    pub future: *mut XLA_FFI_Future,
}

/// Arguments of `XLA_FFI_Future_SetAvailable`.
#[repr(C)]
pub struct XLA_FFI_Future_SetAvailable_Args {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The future to complete successfully.
    pub future: *mut XLA_FFI_Future,
}

/// Arguments of `XLA_FFI_Future_SetError`.
#[repr(C)]
pub struct XLA_FFI_Future_SetError_Args {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The future to complete with an error.
    pub future: *mut XLA_FFI_Future,
    /// The error; ownership passes to the future.
    pub error: *mut XLA_FFI_Error,
}

/// The stage a handler is called for.
pub type XLA_FFI_ExecutionStage = c_int;
/// Once, when the executable is built.
pub const XLA_FFI_ExecutionStage_INSTANTIATE: XLA_FFI_ExecutionStage = 0;
/// Before each run, to request resources.
pub const XLA_FFI_ExecutionStage_PREPARE: XLA_FFI_ExecutionStage = 1;
/// Before each run, to initialize them.
pub const XLA_FFI_ExecutionStage_INITIALIZE: XLA_FFI_ExecutionStage = 2;
/// The call itself.
pub const XLA_FFI_ExecutionStage_EXECUTE: XLA_FFI_ExecutionStage = 3;

/// A call's operands.
#[repr(C)]
pub struct XLA_FFI_Args {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// Number of operands.
    pub size: i64,
    /// `size` kinds, one per operand (`XLA_FFI_ArgType_BUFFER`).
    pub types: *mut XLA_FFI_ArgType,
    /// `size` pointers, each to an [`XLA_FFI_Buffer`].
    pub args: *mut *mut c_void,
}

/// A call's results.
#[repr(C)]
pub struct XLA_FFI_Rets {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// Number of results.
    pub size: i64,
    /// `size` kinds, one per result (`XLA_FFI_RetType_BUFFER`).
    pub types: *mut XLA_FFI_RetType,
    /// `size` pointers, each to an [`XLA_FFI_Buffer`] to write.
    pub rets: *mut *mut c_void,
}

/// A call's attributes (the custom call's `backend_config` dictionary), or a nested dictionary.
#[repr(C)]
pub struct XLA_FFI_Attrs {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// Number of attributes.
    pub size: i64,
    /// `size` kinds (`XLA_FFI_AttrType_*`).
    pub types: *mut XLA_FFI_AttrType,
    /// `size` names, sorted as XLA sorts them (byte order).
    pub names: *mut *mut XLA_FFI_ByteSpan,
    /// `size` pointers to the values: [`XLA_FFI_Scalar`], [`XLA_FFI_Array`], [`XLA_FFI_ByteSpan`] or a nested [`XLA_FFI_Attrs`] as `types` says.
    pub attrs: *mut *mut c_void,
}

/// Everything a handler receives for one call.
#[repr(C)]
pub struct XLA_FFI_CallFrame {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The API function table.
    pub api: *const XLA_FFI_Api,
    /// The execution context of this call.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// Which stage runs (always `EXECUTE` in hlojit).
    pub stage: XLA_FFI_ExecutionStage,
    /// The operands.
    pub args: XLA_FFI_Args,
    /// The results.
    pub rets: XLA_FFI_Rets,
    /// The backend-config attributes.
    pub attrs: XLA_FFI_Attrs,
    /// Set by an asynchronous handler; not part of the checked struct size.
    pub future: *mut XLA_FFI_Future,
}

/// A typed-FFI handler: what `XLA_FFI_DEFINE_HANDLER_SYMBOL` exports.
pub type XLA_FFI_Handler = unsafe extern "C" fn(call_frame: *mut XLA_FFI_CallFrame) -> *mut XLA_FFI_Error;

/// A handler for each execution stage.
#[repr(C)]
pub struct XLA_FFI_Handler_Bundle {
    /// Run once when the executable is made, or `None`.
    pub instantiate: Option<XLA_FFI_Handler>,
    /// Run before each execution, or `None`.
    pub prepare: Option<XLA_FFI_Handler>,
    /// Run before each execution after `prepare`, or `None`.
    pub initialize: Option<XLA_FFI_Handler>,
    /// The handler that does the work (required).
    pub execute: Option<XLA_FFI_Handler>,
}

/// Bit set of handler traits.
pub type XLA_FFI_Handler_Traits = u32;

/// Arguments of `XLA_FFI_Handler_Register`.
#[repr(C)]
pub struct XLA_FFI_Handler_Register_Args {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The custom-call target name.
    pub name: XLA_FFI_ByteSpan,
    /// The platform (`Host` for CPU).
    pub platform: XLA_FFI_ByteSpan,
    /// The handler of each stage.
    pub bundle: XLA_FFI_Handler_Bundle,
    /// Bit set of handler traits (`1` = command-buffer compatible).
    pub traits: XLA_FFI_Handler_Traits,
}

/// Arguments of `XLA_FFI_Type_Register`.
#[repr(C)]
pub struct XLA_FFI_Type_Register_Args {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The type's unique name.
    pub name: XLA_FFI_ByteSpan,
    /// In/out: the id to use, or 0 to have one assigned.
    pub type_id: *mut XLA_FFI_TypeId,
    /// The type's deleter.
    pub type_info: *const XLA_FFI_TypeInfo,
}

/// Arguments of `XLA_FFI_ExecutionContext_Get` (user data lookup).
#[repr(C)]
pub struct XLA_FFI_ExecutionContext_Get_Args {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The execution context of the call, from the call frame.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// The type of the user data wanted.
    pub type_id: *mut XLA_FFI_TypeId,
    /// Out: the user data of that type, or null.
    pub data: *mut c_void,
}

/// Arguments of `XLA_FFI_State_Set`.
#[repr(C)]
pub struct XLA_FFI_State_Set_Args {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The execution context of the call, from the call frame.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// The stage whose state this is.
    pub stage: XLA_FFI_ExecutionStage,
    /// The state's registered type.
    pub type_id: *mut XLA_FFI_TypeId,
    /// The state object; ownership passes to the implementation.
    pub state: *mut c_void,
}

/// Arguments of `XLA_FFI_State_Get`.
#[repr(C)]
pub struct XLA_FFI_State_Get_Args {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The execution context of the call, from the call frame.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// The stage whose state is wanted.
    pub stage: XLA_FFI_ExecutionStage,
    /// The state's registered type (checked).
    pub type_id: *mut XLA_FFI_TypeId,
    /// Out: the state object, or null.
    pub state: *mut c_void,
}

/// Arguments of `XLA_FFI_Stream_Get`.
#[repr(C)]
pub struct XLA_FFI_Stream_Get_Args {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The execution context of the call, from the call frame.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// Out: the device stream (hlojit has none and reports UNIMPLEMENTED).
    pub stream: *mut c_void,
}

/// Arguments of `XLA_FFI_DeviceMemory_Allocate`.
#[repr(C)]
pub struct XLA_FFI_DeviceMemory_Allocate_Args {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The execution context of the call, from the call frame.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// Bytes to allocate.
    pub size: usize,
    /// Required alignment in bytes (a power of two).
    pub alignment: usize,
    /// Out: the allocated memory.
    pub data: *mut c_void,
}

/// Arguments of `XLA_FFI_DeviceMemory_Free`.
#[repr(C)]
pub struct XLA_FFI_DeviceMemory_Free_Args {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The execution context of the call, from the call frame.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// The size it was allocated with.
    pub size: usize,
    /// Memory from `XLA_FFI_DeviceMemory_Allocate`.
    pub data: *mut c_void,
}

/// A task for the thread pool.
pub type XLA_FFI_Task = unsafe extern "C" fn(data: *mut c_void);

/// Arguments of `XLA_FFI_ThreadPool_Schedule`.
#[repr(C)]
pub struct XLA_FFI_ThreadPool_Schedule_Args {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The execution context of the call, from the call frame.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// The function to run on a pool thread.
    pub task: Option<XLA_FFI_Task>,
    /// Its argument.
    pub data: *mut c_void,
}

/// Arguments of `XLA_FFI_ThreadPool_NumThreads`.
#[repr(C)]
pub struct XLA_FFI_ThreadPool_NumThreads_Args {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The execution context of the call, from the call frame.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// Out: threads in the pool.
    pub num_threads: *mut i64,
}

/// Arguments of `XLA_FFI_RunId_Get`.
#[repr(C)]
pub struct XLA_FFI_RunId_Get_Args {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The execution context of the call, from the call frame.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// Out: the id of the current run (0 in hlojit).
    pub run_id: i64,
}

/// Arguments of `XLA_FFI_DeviceOrdinal_Get`.
#[repr(C)]
pub struct XLA_FFI_DeviceOrdinal_Get_Args {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The execution context of the call, from the call frame.
    pub ctx: *mut XLA_FFI_ExecutionContext,
    /// Out: the device the call runs on (0 in hlojit).
    pub device_ordinal: i32,
}

/// What a handler reports when called with the metadata extension instead of running.
#[repr(C)]
pub struct XLA_FFI_Metadata {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// The API version the handler was built against.
    pub api_version: XLA_FFI_Api_Version,
    /// The handler's traits.
    pub traits: XLA_FFI_Handler_Traits,
    /// The type of the state its instantiate stage creates, if any.
    pub state_type_id: XLA_FFI_TypeId,
}

/// The extension a handler's metadata is requested through.
#[repr(C)]
pub struct XLA_FFI_Metadata_Extension {
    /// The extension header (`type_` = `XLA_FFI_Extension_Metadata`).
    pub extension_base: XLA_FFI_Extension_Base,
    /// Where the handler writes its metadata.
    pub metadata: *mut XLA_FFI_Metadata,
}

/// An API function: takes its argument struct, returns null or an error.
pub type ApiFn<A> = unsafe extern "C" fn(args: *mut A) -> *mut XLA_FFI_Error;
/// An API function that cannot fail.
pub type ApiVoidFn<A> = unsafe extern "C" fn(args: *mut A);

/// The function table a handler receives in every call frame.
#[repr(C)]
pub struct XLA_FFI_Api {
    /// Size in bytes up to the last field the caller knows of (`XLA_FFI_STRUCT_SIZE`); lets either side detect an older layout.
    pub struct_size: usize,
    /// First of a linked list of extensions, or null (none are read by hlojit).
    pub extension_start: *mut XLA_FFI_Extension_Base,
    /// The version the implementation provides.
    pub api_version: XLA_FFI_Api_Version,
    /// XLA-internal functions; null in hlojit.
    pub internal_api: *const c_void,
    /// Makes an error from a code and message.
    pub XLA_FFI_Error_Create: Option<ApiFn<XLA_FFI_Error_Create_Args>>,
    /// Reads an error's message.
    pub XLA_FFI_Error_GetMessage: Option<ApiVoidFn<XLA_FFI_Error_GetMessage_Args>>,
    /// Frees an error.
    pub XLA_FFI_Error_Destroy: Option<ApiVoidFn<XLA_FFI_Error_Destroy_Args>>,
    /// Registers a handler under a target name and platform.
    pub XLA_FFI_Handler_Register: Option<ApiFn<XLA_FFI_Handler_Register_Args>>,
    /// The device stream (an UNIMPLEMENTED error in hlojit: the host has none).
    pub XLA_FFI_Stream_Get: Option<ApiFn<XLA_FFI_Stream_Get_Args>>,
    /// Registers a user type and gets its id.
    pub XLA_FFI_Type_Register: Option<ApiFn<XLA_FFI_Type_Register_Args>>,
    /// Looks up user data by type id (NOT_FOUND in hlojit, which passes none).
    pub XLA_FFI_ExecutionContext_Get: Option<ApiFn<XLA_FFI_ExecutionContext_Get_Args>>,
    /// Stores per-stage handler state (UNIMPLEMENTED in hlojit).
    pub XLA_FFI_State_Set: Option<ApiFn<XLA_FFI_State_Set_Args>>,
    /// Reads per-stage handler state (UNIMPLEMENTED in hlojit).
    pub XLA_FFI_State_Get: Option<ApiFn<XLA_FFI_State_Get_Args>>,
    /// Allocates scratch memory (host memory in hlojit).
    pub XLA_FFI_DeviceMemory_Allocate: Option<ApiFn<XLA_FFI_DeviceMemory_Allocate_Args>>,
    /// Frees memory from `XLA_FFI_DeviceMemory_Allocate`.
    pub XLA_FFI_DeviceMemory_Free: Option<ApiFn<XLA_FFI_DeviceMemory_Free_Args>>,
    /// Runs a task on the intra-op thread pool.
    pub XLA_FFI_ThreadPool_Schedule: Option<ApiFn<XLA_FFI_ThreadPool_Schedule_Args>>,
    /// Threads in that pool.
    pub XLA_FFI_ThreadPool_NumThreads: Option<ApiFn<XLA_FFI_ThreadPool_NumThreads_Args>>,
    /// Makes a future an asynchronous handler completes later.
    pub XLA_FFI_Future_Create: Option<ApiFn<XLA_FFI_Future_Create_Args>>,
    /// Completes a future successfully.
    pub XLA_FFI_Future_SetAvailable: Option<ApiFn<XLA_FFI_Future_SetAvailable_Args>>,
    /// Completes a future with an error.
    pub XLA_FFI_Future_SetError: Option<ApiFn<XLA_FFI_Future_SetError_Args>>,
    /// The id of the current run (0 in hlojit).
    pub XLA_FFI_RunId_Get: Option<ApiFn<XLA_FFI_RunId_Get_Args>>,
    /// The device the call runs on (0 in hlojit).
    pub XLA_FFI_DeviceOrdinal_Get: Option<ApiFn<XLA_FFI_DeviceOrdinal_Get_Args>>,
}

// The table is immutable and its functions are thread-safe.
unsafe impl Sync for XLA_FFI_Api {}

/// The struct sizes a conforming implementation and handler agree on.
pub mod sizes {
    use super::*;

    /// Checked size of [`XLA_FFI_CallFrame`] (up to `attrs`).
    pub fn call_frame() -> usize {
        xla_struct_size!(XLA_FFI_CallFrame, attrs)
    }
    /// Checked size of [`XLA_FFI_Api`] (up to `XLA_FFI_DeviceOrdinal_Get`).
    pub fn api() -> usize {
        xla_struct_size!(XLA_FFI_Api, XLA_FFI_DeviceOrdinal_Get)
    }
    /// Checked size of [`XLA_FFI_Api_Version`].
    pub fn api_version() -> usize {
        xla_struct_size!(XLA_FFI_Api_Version, minor_version)
    }
    /// Checked size of [`XLA_FFI_Buffer`].
    pub fn buffer() -> usize {
        xla_struct_size!(XLA_FFI_Buffer, dims)
    }
    /// Checked size of [`XLA_FFI_Args`].
    pub fn args() -> usize {
        xla_struct_size!(XLA_FFI_Args, args)
    }
    /// Checked size of [`XLA_FFI_Rets`].
    pub fn rets() -> usize {
        xla_struct_size!(XLA_FFI_Rets, rets)
    }
    /// Checked size of [`XLA_FFI_Attrs`].
    pub fn attrs() -> usize {
        xla_struct_size!(XLA_FFI_Attrs, attrs)
    }
    /// Checked size of [`XLA_FFI_Error_Create_Args`].
    pub fn error_create_args() -> usize {
        xla_struct_size!(XLA_FFI_Error_Create_Args, errc)
    }
    /// Checked size of [`XLA_FFI_Metadata`].
    pub fn metadata() -> usize {
        xla_struct_size!(XLA_FFI_Metadata, traits)
    }
    /// Checked size of [`XLA_FFI_Metadata_Extension`].
    pub fn metadata_extension() -> usize {
        xla_struct_size!(XLA_FFI_Metadata_Extension, metadata)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sizes XLA's header computes on LP64 targets (worked out by hand from the field
    /// lists: 8-byte pointers and sizes, 4-byte enums and ints, natural alignment).
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn struct_sizes_match_the_c_layout() {
        assert_eq!(sizes::buffer(), 8 + 8 + 8 + 8 + 8 + 8); // dtype padded to 8 before data
        assert_eq!(sizes::args(), 40);
        assert_eq!(sizes::attrs(), 48);
        // struct_size, extension_start, api, ctx, stage(+pad), args(40), rets(40), attrs(48)
        assert_eq!(sizes::call_frame(), 8 + 8 + 8 + 8 + 8 + 40 + 40 + 48);
        assert_eq!(std::mem::size_of::<XLA_FFI_CallFrame>(), sizes::call_frame() + 8);
        assert_eq!(sizes::api_version(), 24);
        // header (8 + 8 + 24 + 8) plus 18 function pointers
        assert_eq!(sizes::api(), 48 + 18 * 8);
        assert_eq!(sizes::error_create_args(), 8 + 8 + 8 + 4);
    }
}
