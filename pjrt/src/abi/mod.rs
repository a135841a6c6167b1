//! The PJRT C API's types, written in Rust from `xla/pjrt/c/pjrt_c_api.h` (API version 0.112,
//! the one jaxlib 0.10.2 was built with). Argument structs start with `struct_size` and
//! `extension_start`; callers newer than us pass larger structs (fields are only ever
//! appended), older ones smaller: every entry point checks that the caller's struct reaches
//! the last field it reads or writes (see [`Args::STRUCT_SIZE`]).

pub mod args;
pub mod table;

use std::ffi::{c_char, c_void};

pub const API_MAJOR: i32 = 0;
pub const API_MINOR: i32 = 112;

/// `PJRT_Extension_Base`: a linked list of optional extension structs.
#[repr(C)]
pub struct ExtensionBase {
    pub struct_size: usize,
    pub kind: i32,
    pub next: *mut ExtensionBase,
}

/// From API 0.105 on the framework reads the first word of a handle (`PJRT_Memory*` and
/// others): when it is not null it points at a table through which the framework attaches
/// its own objects to the handle. hlojit's handles all start with this null word.
#[repr(C)]
#[derive(Default, Debug)]
pub struct HandleHead(usize);

/// `PJRT_Api_Version`.
#[repr(C)]
pub struct ApiVersion {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub major_version: i32,
    pub minor_version: i32,
}

/// Opaque to callers: `PJRT_Error*` points at one of these.
pub use crate::error::PjrtError;

/// `PJRT_Error_Code` (absl status codes).
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    Cancelled = 1,
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
}

/// `PJRT_NamedValue_Type`.
pub const NAMED_STRING: i32 = 0;
pub const NAMED_INT64: i32 = 1;
pub const NAMED_INT64_LIST: i32 = 2;
pub const NAMED_FLOAT: i32 = 3;
pub const NAMED_BOOL: i32 = 4;

/// The value union of `PJRT_NamedValue`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union NamedValueUnion {
    pub string_value: *const c_char,
    pub int64_value: i64,
    pub int64_array_value: *const i64,
    pub float_value: f32,
    pub bool_value: bool,
}

/// `PJRT_NamedValue`: a key and a typed value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct NamedValue {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub name: *const c_char,
    pub name_size: usize,
    pub kind: i32,
    pub value: NamedValueUnion,
    /// Elements of a list or string; 1 for scalars.
    pub value_size: usize,
}

impl NamedValue {
    pub const STRUCT_SIZE: usize = std::mem::offset_of!(NamedValue, value_size) + 8;
}

/// `PJRT_Buffer_MemoryLayout_Tiled`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct MemoryLayoutTiled {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub minor_to_major: *const i64,
    pub minor_to_major_size: usize,
    pub tile_dims: *const i64,
    pub tile_dim_sizes: *const usize,
    pub num_tiles: usize,
}

/// `PJRT_Buffer_MemoryLayout_Strides`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct MemoryLayoutStrides {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub byte_strides: *const i64,
    pub num_byte_strides: usize,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union MemoryLayoutUnion {
    pub tiled: MemoryLayoutTiled,
    pub strides: MemoryLayoutStrides,
}

pub const LAYOUT_TILED: i32 = 0;
pub const LAYOUT_STRIDES: i32 = 1;

/// `PJRT_Buffer_MemoryLayout`: minor-to-major order (with tiles) or byte strides.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct MemoryLayout {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub layout: MemoryLayoutUnion,
    pub kind: i32,
}

impl MemoryLayout {
    pub const STRUCT_SIZE: usize = std::mem::offset_of!(MemoryLayout, kind) + 4;
}

/// `PJRT_Program`: the code to compile and its format (`"mlir"`, `"hlo"`, ...).
#[repr(C)]
pub struct Program {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub code: *mut c_char,
    pub code_size: usize,
    pub format: *const c_char,
    pub format_size: usize,
}

impl Program {
    pub const STRUCT_SIZE: usize = std::mem::offset_of!(Program, format_size) + 8;
}

/// `PJRT_ExecuteOptions` (the fields we read; later ones are the caller's business).
#[repr(C)]
pub struct ExecuteOptions {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub send_callbacks: *mut *mut c_void,
    pub recv_callbacks: *mut *mut c_void,
    pub num_send_ops: usize,
    pub num_recv_ops: usize,
    pub launch_id: i32,
    pub non_donatable_input_indices: *const i64,
    pub num_non_donatable_input_indices: usize,
    /// A `PJRT_ExecuteContext` (from API 0.54 on; read only when `struct_size` reaches it).
    pub context: *mut c_void,
}

impl ExecuteOptions {
    pub const STRUCT_SIZE: usize = std::mem::offset_of!(ExecuteOptions, num_non_donatable_input_indices) + 8;
    /// Where `context` ends.
    pub const WITH_CONTEXT: usize = std::mem::offset_of!(ExecuteOptions, context) + 8;
}

/// `PJRT_LogicalDeviceIds`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogicalDeviceIds {
    pub replica: i32,
    pub partition: i32,
}

/// Callback type of `PJRT_Event_OnReady`.
pub type OnReadyCallback = Option<unsafe extern "C" fn(error: *mut PjrtError, user_arg: *mut c_void)>;

/// An argument struct of one entry point: its C name and the size up to its last field.
pub trait Args {
    const NAME: &'static str;
    const STRUCT_SIZE: usize;
    fn struct_size(&self) -> usize;
}
