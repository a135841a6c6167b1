//! The C types of XLA's FFI (custom-call) API, laid out exactly as XLA's `xla/ffi/api/c_api.h`
//! version 0.3 lays them out, so that handlers compiled against XLA's headers run unchanged on
//! hlojit's implementation. Names keep their C spelling so that they can be matched against
//! the header one for one.
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

pub type XLA_FFI_Extension_Type = c_int;
pub const XLA_FFI_Extension_Metadata: XLA_FFI_Extension_Type = 1;

#[repr(C)]
pub struct XLA_FFI_Extension_Base {
    pub struct_size: usize,
    pub type_: XLA_FFI_Extension_Type,
    pub next: *mut XLA_FFI_Extension_Base,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct XLA_FFI_Api_Version {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub major_version: c_int,
    pub minor_version: c_int,
}

/// An error object; its contents belong to the API implementation.
#[repr(C)]
pub struct XLA_FFI_Error {
    _opaque: [u8; 0],
}

pub type XLA_FFI_Error_Code = c_int;
pub const XLA_FFI_Error_Code_OK: XLA_FFI_Error_Code = 0;
pub const XLA_FFI_Error_Code_CANCELLED: XLA_FFI_Error_Code = 1;
pub const XLA_FFI_Error_Code_UNKNOWN: XLA_FFI_Error_Code = 2;
pub const XLA_FFI_Error_Code_INVALID_ARGUMENT: XLA_FFI_Error_Code = 3;
pub const XLA_FFI_Error_Code_DEADLINE_EXCEEDED: XLA_FFI_Error_Code = 4;
pub const XLA_FFI_Error_Code_NOT_FOUND: XLA_FFI_Error_Code = 5;
pub const XLA_FFI_Error_Code_ALREADY_EXISTS: XLA_FFI_Error_Code = 6;
pub const XLA_FFI_Error_Code_PERMISSION_DENIED: XLA_FFI_Error_Code = 7;
pub const XLA_FFI_Error_Code_RESOURCE_EXHAUSTED: XLA_FFI_Error_Code = 8;
pub const XLA_FFI_Error_Code_FAILED_PRECONDITION: XLA_FFI_Error_Code = 9;
pub const XLA_FFI_Error_Code_ABORTED: XLA_FFI_Error_Code = 10;
pub const XLA_FFI_Error_Code_OUT_OF_RANGE: XLA_FFI_Error_Code = 11;
pub const XLA_FFI_Error_Code_UNIMPLEMENTED: XLA_FFI_Error_Code = 12;
pub const XLA_FFI_Error_Code_INTERNAL: XLA_FFI_Error_Code = 13;
pub const XLA_FFI_Error_Code_UNAVAILABLE: XLA_FFI_Error_Code = 14;
pub const XLA_FFI_Error_Code_DATA_LOSS: XLA_FFI_Error_Code = 15;
pub const XLA_FFI_Error_Code_UNAUTHENTICATED: XLA_FFI_Error_Code = 16;

#[repr(C)]
pub struct XLA_FFI_Error_Create_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub message: *const c_char,
    pub errc: XLA_FFI_Error_Code,
}

#[repr(C)]
pub struct XLA_FFI_Error_GetMessage_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub error: *mut XLA_FFI_Error,
    pub message: *const c_char,
}

#[repr(C)]
pub struct XLA_FFI_Error_Destroy_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub error: *mut XLA_FFI_Error,
}

/// Element types, numbered as XLA's `PrimitiveType`.
pub type XLA_FFI_DataType = c_int;
pub const XLA_FFI_DataType_INVALID: XLA_FFI_DataType = 0;
pub const XLA_FFI_DataType_PRED: XLA_FFI_DataType = 1;
pub const XLA_FFI_DataType_S8: XLA_FFI_DataType = 2;
pub const XLA_FFI_DataType_S16: XLA_FFI_DataType = 3;
pub const XLA_FFI_DataType_S32: XLA_FFI_DataType = 4;
pub const XLA_FFI_DataType_S64: XLA_FFI_DataType = 5;
pub const XLA_FFI_DataType_U8: XLA_FFI_DataType = 6;
pub const XLA_FFI_DataType_U16: XLA_FFI_DataType = 7;
pub const XLA_FFI_DataType_U32: XLA_FFI_DataType = 8;
pub const XLA_FFI_DataType_U64: XLA_FFI_DataType = 9;
pub const XLA_FFI_DataType_F16: XLA_FFI_DataType = 10;
pub const XLA_FFI_DataType_F32: XLA_FFI_DataType = 11;
pub const XLA_FFI_DataType_F64: XLA_FFI_DataType = 12;
pub const XLA_FFI_DataType_C64: XLA_FFI_DataType = 15;
pub const XLA_FFI_DataType_BF16: XLA_FFI_DataType = 16;
pub const XLA_FFI_DataType_TOKEN: XLA_FFI_DataType = 17;
pub const XLA_FFI_DataType_C128: XLA_FFI_DataType = 18;
pub const XLA_FFI_DataType_F8E5M2: XLA_FFI_DataType = 19;
pub const XLA_FFI_DataType_F8E4M3FN: XLA_FFI_DataType = 20;
pub const XLA_FFI_DataType_S4: XLA_FFI_DataType = 21;
pub const XLA_FFI_DataType_U4: XLA_FFI_DataType = 22;
pub const XLA_FFI_DataType_F8E4M3B11FNUZ: XLA_FFI_DataType = 23;
pub const XLA_FFI_DataType_F8E5M2FNUZ: XLA_FFI_DataType = 24;
pub const XLA_FFI_DataType_F8E4M3FNUZ: XLA_FFI_DataType = 25;
pub const XLA_FFI_DataType_S2: XLA_FFI_DataType = 26;
pub const XLA_FFI_DataType_U2: XLA_FFI_DataType = 27;
pub const XLA_FFI_DataType_F8E4M3: XLA_FFI_DataType = 28;
pub const XLA_FFI_DataType_F8E3M4: XLA_FFI_DataType = 29;
pub const XLA_FFI_DataType_S1: XLA_FFI_DataType = 30;
pub const XLA_FFI_DataType_U1: XLA_FFI_DataType = 31;
pub const XLA_FFI_DataType_F4E2M1FN: XLA_FFI_DataType = 32;
pub const XLA_FFI_DataType_F8E8M0FNU: XLA_FFI_DataType = 33;

#[repr(C)]
pub struct XLA_FFI_Buffer {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub dtype: XLA_FFI_DataType,
    pub data: *mut c_void,
    pub rank: i64,
    pub dims: *mut i64,
}

pub type XLA_FFI_ArgType = c_int;
pub const XLA_FFI_ArgType_BUFFER: XLA_FFI_ArgType = 1;
pub type XLA_FFI_RetType = c_int;
pub const XLA_FFI_RetType_BUFFER: XLA_FFI_RetType = 1;

pub type XLA_FFI_AttrType = c_int;
pub const XLA_FFI_AttrType_ARRAY: XLA_FFI_AttrType = 1;
pub const XLA_FFI_AttrType_DICTIONARY: XLA_FFI_AttrType = 2;
pub const XLA_FFI_AttrType_SCALAR: XLA_FFI_AttrType = 3;
pub const XLA_FFI_AttrType_STRING: XLA_FFI_AttrType = 4;

/// The execution context of one call; its contents belong to the API implementation.
#[repr(C)]
pub struct XLA_FFI_ExecutionContext {
    _opaque: [u8; 0],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct XLA_FFI_ByteSpan {
    pub ptr: *const c_char,
    pub len: usize,
}

#[repr(C)]
pub struct XLA_FFI_Scalar {
    pub dtype: XLA_FFI_DataType,
    pub value: *mut c_void,
}

#[repr(C)]
pub struct XLA_FFI_Array {
    pub dtype: XLA_FFI_DataType,
    pub size: usize,
    pub data: *mut c_void,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XLA_FFI_TypeId {
    pub type_id: i64,
}

#[repr(C)]
pub struct XLA_FFI_TypeInfo {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub deleter: Option<unsafe extern "C" fn(object: *mut c_void)>,
}

/// An asynchronous completion; its contents belong to the API implementation.
#[repr(C)]
pub struct XLA_FFI_Future {
    _opaque: [u8; 0],
}

#[repr(C)]
pub struct XLA_FFI_Future_Create_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub future: *mut XLA_FFI_Future,
}

#[repr(C)]
pub struct XLA_FFI_Future_SetAvailable_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub future: *mut XLA_FFI_Future,
}

#[repr(C)]
pub struct XLA_FFI_Future_SetError_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub future: *mut XLA_FFI_Future,
    pub error: *mut XLA_FFI_Error,
}

pub type XLA_FFI_ExecutionStage = c_int;
pub const XLA_FFI_ExecutionStage_INSTANTIATE: XLA_FFI_ExecutionStage = 0;
pub const XLA_FFI_ExecutionStage_PREPARE: XLA_FFI_ExecutionStage = 1;
pub const XLA_FFI_ExecutionStage_INITIALIZE: XLA_FFI_ExecutionStage = 2;
pub const XLA_FFI_ExecutionStage_EXECUTE: XLA_FFI_ExecutionStage = 3;

#[repr(C)]
pub struct XLA_FFI_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub size: i64,
    pub types: *mut XLA_FFI_ArgType,
    pub args: *mut *mut c_void,
}

#[repr(C)]
pub struct XLA_FFI_Rets {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub size: i64,
    pub types: *mut XLA_FFI_RetType,
    pub rets: *mut *mut c_void,
}

#[repr(C)]
pub struct XLA_FFI_Attrs {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub size: i64,
    pub types: *mut XLA_FFI_AttrType,
    pub names: *mut *mut XLA_FFI_ByteSpan,
    pub attrs: *mut *mut c_void,
}

#[repr(C)]
pub struct XLA_FFI_CallFrame {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub api: *const XLA_FFI_Api,
    pub ctx: *mut XLA_FFI_ExecutionContext,
    pub stage: XLA_FFI_ExecutionStage,
    pub args: XLA_FFI_Args,
    pub rets: XLA_FFI_Rets,
    pub attrs: XLA_FFI_Attrs,
    /// Set by an asynchronous handler; not part of the checked struct size.
    pub future: *mut XLA_FFI_Future,
}

/// A typed-FFI handler: what `XLA_FFI_DEFINE_HANDLER_SYMBOL` exports.
pub type XLA_FFI_Handler = unsafe extern "C" fn(call_frame: *mut XLA_FFI_CallFrame) -> *mut XLA_FFI_Error;

#[repr(C)]
pub struct XLA_FFI_Handler_Bundle {
    pub instantiate: Option<XLA_FFI_Handler>,
    pub prepare: Option<XLA_FFI_Handler>,
    pub initialize: Option<XLA_FFI_Handler>,
    pub execute: Option<XLA_FFI_Handler>,
}

pub type XLA_FFI_Handler_Traits = u32;

#[repr(C)]
pub struct XLA_FFI_Handler_Register_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub name: XLA_FFI_ByteSpan,
    pub platform: XLA_FFI_ByteSpan,
    pub bundle: XLA_FFI_Handler_Bundle,
    pub traits: XLA_FFI_Handler_Traits,
}

#[repr(C)]
pub struct XLA_FFI_Type_Register_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub name: XLA_FFI_ByteSpan,
    pub type_id: *mut XLA_FFI_TypeId,
    pub type_info: *const XLA_FFI_TypeInfo,
}

#[repr(C)]
pub struct XLA_FFI_ExecutionContext_Get_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub ctx: *mut XLA_FFI_ExecutionContext,
    pub type_id: *mut XLA_FFI_TypeId,
    pub data: *mut c_void,
}

#[repr(C)]
pub struct XLA_FFI_State_Set_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub ctx: *mut XLA_FFI_ExecutionContext,
    pub stage: XLA_FFI_ExecutionStage,
    pub type_id: *mut XLA_FFI_TypeId,
    pub state: *mut c_void,
}

#[repr(C)]
pub struct XLA_FFI_State_Get_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub ctx: *mut XLA_FFI_ExecutionContext,
    pub stage: XLA_FFI_ExecutionStage,
    pub type_id: *mut XLA_FFI_TypeId,
    pub state: *mut c_void,
}

#[repr(C)]
pub struct XLA_FFI_Stream_Get_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub ctx: *mut XLA_FFI_ExecutionContext,
    pub stream: *mut c_void,
}

#[repr(C)]
pub struct XLA_FFI_DeviceMemory_Allocate_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub ctx: *mut XLA_FFI_ExecutionContext,
    pub size: usize,
    pub alignment: usize,
    pub data: *mut c_void,
}

#[repr(C)]
pub struct XLA_FFI_DeviceMemory_Free_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub ctx: *mut XLA_FFI_ExecutionContext,
    pub size: usize,
    pub data: *mut c_void,
}

/// A task for the thread pool.
pub type XLA_FFI_Task = unsafe extern "C" fn(data: *mut c_void);

#[repr(C)]
pub struct XLA_FFI_ThreadPool_Schedule_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub ctx: *mut XLA_FFI_ExecutionContext,
    pub task: Option<XLA_FFI_Task>,
    pub data: *mut c_void,
}

#[repr(C)]
pub struct XLA_FFI_ThreadPool_NumThreads_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub ctx: *mut XLA_FFI_ExecutionContext,
    pub num_threads: *mut i64,
}

#[repr(C)]
pub struct XLA_FFI_RunId_Get_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub ctx: *mut XLA_FFI_ExecutionContext,
    pub run_id: i64,
}

#[repr(C)]
pub struct XLA_FFI_DeviceOrdinal_Get_Args {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub ctx: *mut XLA_FFI_ExecutionContext,
    pub device_ordinal: i32,
}

#[repr(C)]
pub struct XLA_FFI_Metadata {
    pub struct_size: usize,
    pub api_version: XLA_FFI_Api_Version,
    pub traits: XLA_FFI_Handler_Traits,
    pub state_type_id: XLA_FFI_TypeId,
}

#[repr(C)]
pub struct XLA_FFI_Metadata_Extension {
    pub extension_base: XLA_FFI_Extension_Base,
    pub metadata: *mut XLA_FFI_Metadata,
}

/// An API function: takes its argument struct, returns null or an error.
pub type ApiFn<A> = unsafe extern "C" fn(args: *mut A) -> *mut XLA_FFI_Error;
/// An API function that cannot fail.
pub type ApiVoidFn<A> = unsafe extern "C" fn(args: *mut A);

/// The function table a handler receives in every call frame.
#[repr(C)]
pub struct XLA_FFI_Api {
    pub struct_size: usize,
    pub extension_start: *mut XLA_FFI_Extension_Base,
    pub api_version: XLA_FFI_Api_Version,
    pub internal_api: *const c_void,
    pub XLA_FFI_Error_Create: Option<ApiFn<XLA_FFI_Error_Create_Args>>,
    pub XLA_FFI_Error_GetMessage: Option<ApiVoidFn<XLA_FFI_Error_GetMessage_Args>>,
    pub XLA_FFI_Error_Destroy: Option<ApiVoidFn<XLA_FFI_Error_Destroy_Args>>,
    pub XLA_FFI_Handler_Register: Option<ApiFn<XLA_FFI_Handler_Register_Args>>,
    pub XLA_FFI_Stream_Get: Option<ApiFn<XLA_FFI_Stream_Get_Args>>,
    pub XLA_FFI_Type_Register: Option<ApiFn<XLA_FFI_Type_Register_Args>>,
    pub XLA_FFI_ExecutionContext_Get: Option<ApiFn<XLA_FFI_ExecutionContext_Get_Args>>,
    pub XLA_FFI_State_Set: Option<ApiFn<XLA_FFI_State_Set_Args>>,
    pub XLA_FFI_State_Get: Option<ApiFn<XLA_FFI_State_Get_Args>>,
    pub XLA_FFI_DeviceMemory_Allocate: Option<ApiFn<XLA_FFI_DeviceMemory_Allocate_Args>>,
    pub XLA_FFI_DeviceMemory_Free: Option<ApiFn<XLA_FFI_DeviceMemory_Free_Args>>,
    pub XLA_FFI_ThreadPool_Schedule: Option<ApiFn<XLA_FFI_ThreadPool_Schedule_Args>>,
    pub XLA_FFI_ThreadPool_NumThreads: Option<ApiFn<XLA_FFI_ThreadPool_NumThreads_Args>>,
    pub XLA_FFI_Future_Create: Option<ApiFn<XLA_FFI_Future_Create_Args>>,
    pub XLA_FFI_Future_SetAvailable: Option<ApiFn<XLA_FFI_Future_SetAvailable_Args>>,
    pub XLA_FFI_Future_SetError: Option<ApiFn<XLA_FFI_Future_SetError_Args>>,
    pub XLA_FFI_RunId_Get: Option<ApiFn<XLA_FFI_RunId_Get_Args>>,
    pub XLA_FFI_DeviceOrdinal_Get: Option<ApiFn<XLA_FFI_DeviceOrdinal_Get_Args>>,
}

// The table is immutable and its functions are thread-safe.
unsafe impl Sync for XLA_FFI_Api {}

/// The struct sizes a conforming implementation and handler agree on.
pub mod sizes {
    use super::*;

    pub fn call_frame() -> usize {
        xla_struct_size!(XLA_FFI_CallFrame, attrs)
    }
    pub fn api() -> usize {
        xla_struct_size!(XLA_FFI_Api, XLA_FFI_DeviceOrdinal_Get)
    }
    pub fn api_version() -> usize {
        xla_struct_size!(XLA_FFI_Api_Version, minor_version)
    }
    pub fn buffer() -> usize {
        xla_struct_size!(XLA_FFI_Buffer, dims)
    }
    pub fn args() -> usize {
        xla_struct_size!(XLA_FFI_Args, args)
    }
    pub fn rets() -> usize {
        xla_struct_size!(XLA_FFI_Rets, rets)
    }
    pub fn attrs() -> usize {
        xla_struct_size!(XLA_FFI_Attrs, attrs)
    }
    pub fn error_create_args() -> usize {
        xla_struct_size!(XLA_FFI_Error_Create_Args, errc)
    }
    pub fn metadata() -> usize {
        xla_struct_size!(XLA_FFI_Metadata, traits)
    }
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
