//! The PJRT FFI extension (`pjrt_c_api_ffi_extension.h`) and execute contexts.
//!
//! JAX runs host callbacks (`jax.debug.print`, `jax.pure_callback`, `io_callback`) by putting
//! its callables into the execute context's user data (`FfiLoadedHostCallbacks`): the C API
//! client creates a `PJRT_ExecuteContext`, adds each user-data object through this extension's
//! `user_data_add` and passes the context in `PJRT_ExecuteOptions`; the run hands it to the
//! typed-FFI handlers (jaxlib's `xla_ffi_python_cpu_callback` looks the callables up there).
//! `register_handler` puts FFI handlers into hlojit's process-wide custom-call registry.

use crate::abi::{ExtensionBase, HandleHead};
use crate::error::{PjrtError, Result};
use hlojit_runtime::custom_call::{CustomCallRegistry, ExecutionContext};
use hlojit_runtime::custom_call::api::api as xla_ffi_api;
use std::ffi::{c_char, c_void};
use std::sync::Arc;

/// `PJRT_Extension_Type_FFI` in the header's enum.
pub const EXTENSION_TYPE_FFI: i32 = 5;

/// What a `PJRT_ExecuteContext*` points at.
pub struct ExecuteContext {
    _head: HandleHead,
    pub context: Arc<ExecutionContext>,
}

impl ExecuteContext {
    pub fn new() -> ExecuteContext {
        ExecuteContext { _head: HandleHead::default(), context: Arc::new(ExecutionContext::new()) }
    }
}

impl Default for ExecuteContext {
    fn default() -> Self {
        Self::new()
    }
}

/// `PJRT_FFI_UserData`.
#[repr(C)]
pub struct UserData {
    pub type_id: i64,
    pub data: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut c_void)>,
}

/// `PJRT_FFI_UserData_Add_Args`.
#[repr(C)]
pub struct UserDataAddArgs {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub context: *mut ExecuteContext,
    pub user_data: UserData,
}

/// `PJRT_FFI_TypeID_Register_Args` (the later `PJRT_FFI_Type_Register_Args` appends a
/// `type_info` pointer; the fields read here are at the same offsets in both).
#[repr(C)]
pub struct TypeRegisterArgs {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub type_name: *const c_char,
    pub type_name_size: usize,
    pub type_id: i64,
}

/// `PJRT_FFI_Register_Handler_Args` (no `extension_start` in this one).
#[repr(C)]
pub struct RegisterHandlerArgs {
    pub struct_size: usize,
    pub target_name: *const c_char,
    pub target_name_size: usize,
    pub api_version: i32,
    pub handler: *mut c_void,
    pub platform_name: *const c_char,
    pub platform_name_size: usize,
    pub traits: u32,
}

type FfiFn<A> = unsafe extern "C" fn(*mut A) -> *mut PjrtError;

/// `PJRT_FFI_Extension`.
#[repr(C)]
pub struct FfiExtension {
    pub base: ExtensionBase,
    pub type_id_register: FfiFn<TypeRegisterArgs>,
    pub user_data_add: FfiFn<UserDataAddArgs>,
    pub register_handler: FfiFn<RegisterHandlerArgs>,
}

const USER_DATA_ADD_MIN: usize = std::mem::offset_of!(UserDataAddArgs, user_data) + 16;
const USER_DATA_ADD_WITH_DELETER: usize = std::mem::offset_of!(UserDataAddArgs, user_data) + 24;
const TYPE_REGISTER_MIN: usize = std::mem::offset_of!(TypeRegisterArgs, type_id) + 8;
const REGISTER_HANDLER_MIN: usize = std::mem::offset_of!(RegisterHandlerArgs, traits) + 4;

fn text(ptr: *const c_char, len: usize) -> Result<String> {
    let bytes = crate::util::slice(ptr as *const u8, len);
    std::str::from_utf8(bytes).map(str::to_string).map_err(|_| PjrtError::invalid("a name is not UTF-8"))
}

fn checked<'a, A>(args: *mut A, name: &str, min: usize, size: impl Fn(&A) -> usize) -> Result<&'a mut A> {
    // SAFETY: null or the caller's argument struct.
    let a = unsafe { args.as_mut() }.ok_or_else(|| PjrtError::invalid(format!("{name}: null arguments")))?;
    if size(a) < min {
        return Err(PjrtError::invalid(format!("{name}: struct_size is {}, at least {min} needed", size(a))));
    }
    Ok(a)
}

fn respond(r: Result<()>) -> *mut PjrtError {
    match r {
        Ok(()) => std::ptr::null_mut(),
        Err(e) => e.into_raw(),
    }
}

unsafe extern "C" fn user_data_add(args: *mut UserDataAddArgs) -> *mut PjrtError {
    respond((|| {
        let a = checked(args, "PJRT_FFI_UserData_Add", USER_DATA_ADD_MIN, |a| a.struct_size)?;
        // SAFETY: null or a context from PJRT_ExecuteContext_Create.
        let context = unsafe { a.context.as_ref() }
            .ok_or_else(|| PjrtError::invalid("PJRT_FFI_UserData_Add: the execute context is null"))?;
        // Callers built before the deleter was added pass a shorter struct.
        let deleter = if a.struct_size >= USER_DATA_ADD_WITH_DELETER { a.user_data.deleter } else { None };
        // SAFETY: the caller keeps its data alive while the context is in use, as the C API
        // requires.
        unsafe { context.context.insert(a.user_data.type_id, a.user_data.data, deleter) }.map_err(PjrtError::invalid)
    })())
}

/// Gives a type name its id in the registry hlojit's FFI handlers use (the same registry as
/// `XLA_FFI_Type_Register`), so user data and handlers agree on it.
unsafe extern "C" fn type_id_register(args: *mut TypeRegisterArgs) -> *mut PjrtError {
    respond((|| {
        let a = checked(args, "PJRT_FFI_TypeID_Register", TYPE_REGISTER_MIN, |a| a.struct_size)?;
        let name = text(a.type_name, a.type_name_size)?;
        let mut id = hlojit_ffi::xla::XLA_FFI_TypeId { type_id: a.type_id };
        let mut reg = hlojit_ffi::xla::XLA_FFI_Type_Register_Args {
            struct_size: std::mem::size_of::<hlojit_ffi::xla::XLA_FFI_Type_Register_Args>(),
            extension_start: std::ptr::null_mut(),
            name: hlojit_ffi::xla::XLA_FFI_ByteSpan { ptr: name.as_ptr() as *const c_char, len: name.len() },
            type_id: &mut id,
            type_info: std::ptr::null(),
        };
        let register = xla_ffi_api().XLA_FFI_Type_Register.ok_or_else(|| PjrtError::new(crate::abi::ErrorCode::Internal, "no type registry"))?;
        // SAFETY: the arguments above live across the call.
        let error = unsafe { register(&mut reg) };
        if !error.is_null() {
            // SAFETY: an error of the FFI API, consumed once.
            let message = unsafe { hlojit_runtime::custom_call::api::take_error_message(error) };
            return Err(PjrtError::invalid(format!("PJRT_FFI_TypeID_Register '{name}': {message}")));
        }
        a.type_id = id.type_id;
        Ok(())
    })())
}

/// Registers an FFI handler (`api_version` 1) or an untyped custom call (0) for the host
/// platform in hlojit's process-wide registry; handlers for other platforms are not hlojit's
/// to run and are ignored, as XLA:CPU ignores them.
unsafe extern "C" fn register_handler(args: *mut RegisterHandlerArgs) -> *mut PjrtError {
    respond((|| {
        let a = checked(args, "PJRT_FFI_Register_Handler", REGISTER_HANDLER_MIN, |a| a.struct_size)?;
        let name = text(a.target_name, a.target_name_size)?;
        let platform = text(a.platform_name, a.platform_name_size)?.to_ascii_lowercase();
        if a.handler.is_null() {
            return Err(PjrtError::invalid(format!("PJRT_FFI_Register_Handler '{name}': the handler is null")));
        }
        if !matches!(platform.as_str(), "host" | "cpu") {
            return Ok(());
        }
        match a.api_version {
            // SAFETY: the caller registers a function of the convention it names.
            0 | 1 => unsafe { CustomCallRegistry::global().register_raw(&name, a.handler) },
            v => return Err(PjrtError::invalid(format!("PJRT_FFI_Register_Handler '{name}': api_version {v} (0 or 1 expected)"))),
        }
        Ok(())
    })())
}

struct Shared(FfiExtension);
// SAFETY: immutable after construction: function pointers and a null link.
unsafe impl Sync for Shared {}
unsafe impl Send for Shared {}

/// The extension, first (and only) in the API's extension list.
pub fn extension() -> *mut ExtensionBase {
    static EXT: std::sync::OnceLock<Shared> = std::sync::OnceLock::new();
    let ext = EXT.get_or_init(|| {
        Shared(FfiExtension {
            base: ExtensionBase {
                struct_size: std::mem::size_of::<FfiExtension>(),
                kind: EXTENSION_TYPE_FFI,
                next: std::ptr::null_mut(),
            },
            type_id_register,
            user_data_add,
            register_handler,
        })
    });
    &ext.0 as *const FfiExtension as *mut ExtensionBase
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_data_reaches_the_context_and_short_structs_are_refused() {
        let mut ctx = ExecuteContext::new();
        let mut value = 5i32;
        let mut args = UserDataAddArgs {
            struct_size: std::mem::size_of::<UserDataAddArgs>(),
            extension_start: std::ptr::null_mut(),
            context: &mut ctx,
            user_data: UserData { type_id: 77, data: &mut value as *mut i32 as *mut c_void, deleter: None },
        };
        assert!(unsafe { user_data_add(&mut args) }.is_null());
        assert_eq!(ctx.context.lookup(77), Some(&mut value as *mut i32 as *mut c_void));
        args.struct_size = 16;
        let e = unsafe { user_data_add(&mut args) };
        assert!(!e.is_null());
        drop(unsafe { Box::from_raw(e) });
    }

    #[test]
    fn type_names_get_one_id() {
        let name = "hlojit_test_type";
        let mut a = TypeRegisterArgs {
            struct_size: std::mem::size_of::<TypeRegisterArgs>(),
            extension_start: std::ptr::null_mut(),
            type_name: name.as_ptr() as *const c_char,
            type_name_size: name.len(),
            type_id: 0,
        };
        assert!(unsafe { type_id_register(&mut a) }.is_null());
        let first = a.type_id;
        assert_ne!(first, 0);
        a.type_id = 0;
        assert!(unsafe { type_id_register(&mut a) }.is_null());
        assert_eq!(a.type_id, first);
    }
}
