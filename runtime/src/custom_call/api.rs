//! hlojit's implementation of XLA's FFI C API: the function table every call frame carries.
//! Errors, type ids, host memory, a thread pool, futures and handler registration work as in
//! XLA:CPU; what only makes sense on devices (streams) or with per-executable state reports an
//! error the handler can pass on.

use super::registry::CustomCallRegistry;
use hlojit_ffi::xla::*;
use std::collections::HashMap;
use std::ffi::{c_void, CStr, CString};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

/// An error a handler created, owned by whoever receives it until destroyed.
struct FfiError {
    code: XLA_FFI_Error_Code,
    message: CString,
}

/// Creates an API error object (for errors raised by the host itself).
pub(crate) fn new_error(code: XLA_FFI_Error_Code, message: &str) -> *mut XLA_FFI_Error {
    let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
    Box::into_raw(Box::new(FfiError { code, message })) as *mut XLA_FFI_Error
}

/// Takes ownership of an error and returns its message.
///
/// # Safety
/// `error` must come from this API and not be used afterwards.
pub(crate) unsafe fn consume_error(error: *mut XLA_FFI_Error) -> String {
    let e = Box::from_raw(error as *mut FfiError);
    let text = e.message.to_string_lossy().into_owned();
    if text.is_empty() {
        format!("error code {}", e.code)
    } else {
        text
    }
}

/// The message of an error this API created, taking ownership of it (for callers outside
/// the runtime that called an API function themselves).
///
/// # Safety
/// `error` must come from this API and not be used afterwards.
pub unsafe fn take_error_message(error: *mut XLA_FFI_Error) -> String {
    consume_error(error)
}

unsafe extern "C" fn error_create(args: *mut XLA_FFI_Error_Create_Args) -> *mut XLA_FFI_Error {
    let Some(a) = args.as_ref() else { return new_error(XLA_FFI_Error_Code_INVALID_ARGUMENT, "null arguments") };
    let message =
        if a.message.is_null() { String::new() } else { CStr::from_ptr(a.message).to_string_lossy().into_owned() };
    new_error(a.errc, &message)
}

unsafe extern "C" fn error_get_message(args: *mut XLA_FFI_Error_GetMessage_Args) {
    if let Some(a) = args.as_mut() {
        a.message = match (a.error as *const FfiError).as_ref() {
            Some(e) => e.message.as_ptr(),
            None => c"".as_ptr(),
        };
    }
}

unsafe extern "C" fn error_destroy(args: *mut XLA_FFI_Error_Destroy_Args) {
    if let Some(a) = args.as_ref() {
        if !a.error.is_null() {
            drop(Box::from_raw(a.error as *mut FfiError));
        }
    }
}

unsafe fn span_str(s: &XLA_FFI_ByteSpan) -> String {
    if s.ptr.is_null() || s.len == 0 {
        return String::new();
    }
    String::from_utf8_lossy(std::slice::from_raw_parts(s.ptr as *const u8, s.len)).into_owned()
}

/// Registration from a plugin's static initializer (`XLA_FFI_REGISTER_HANDLER`): the execute
/// handler becomes a target of the process-wide registry under its name.
unsafe extern "C" fn handler_register(args: *mut XLA_FFI_Handler_Register_Args) -> *mut XLA_FFI_Error {
    let Some(a) = args.as_ref() else { return new_error(XLA_FFI_Error_Code_INVALID_ARGUMENT, "null arguments") };
    let name = span_str(&a.name);
    let platform = span_str(&a.platform).to_ascii_lowercase();
    if !matches!(platform.as_str(), "host" | "cpu") {
        // Handlers for other platforms are not ours to run; XLA:CPU ignores them too.
        return std::ptr::null_mut();
    }
    let Some(execute) = a.bundle.execute else {
        return new_error(XLA_FFI_Error_Code_INVALID_ARGUMENT, &format!("handler '{name}' has no execute stage"));
    };
    CustomCallRegistry::global().register_ffi_handler(&name, execute);
    std::ptr::null_mut()
}

unsafe extern "C" fn stream_get(_args: *mut XLA_FFI_Stream_Get_Args) -> *mut XLA_FFI_Error {
    new_error(XLA_FFI_Error_Code_UNIMPLEMENTED, "hlojit runs custom calls on the host: there is no device stream")
}

fn type_ids() -> &'static Mutex<HashMap<String, i64>> {
    static IDS: OnceLock<Mutex<HashMap<String, i64>>> = OnceLock::new();
    IDS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Gives each type name one id (the same name always gets the same one).
unsafe extern "C" fn type_register(args: *mut XLA_FFI_Type_Register_Args) -> *mut XLA_FFI_Error {
    let Some(a) = args.as_mut() else { return new_error(XLA_FFI_Error_Code_INVALID_ARGUMENT, "null arguments") };
    let Some(id) = a.type_id.as_mut() else { return new_error(XLA_FFI_Error_Code_INVALID_ARGUMENT, "null type id") };
    let name = span_str(&a.name);
    let mut ids = type_ids().lock().unwrap_or_else(|p| p.into_inner());
    let next = ids.len() as i64 + 1;
    let assigned = *ids.entry(name.clone()).or_insert(if id.type_id != 0 { id.type_id } else { next });
    if id.type_id != 0 && id.type_id != assigned {
        return new_error(XLA_FFI_Error_Code_ALREADY_EXISTS, &format!("type '{name}' is registered with another id"));
    }
    id.type_id = assigned;
    std::ptr::null_mut()
}

/// User data of the run the call belongs to (the frame's `ctx` is always one of
/// `context::ExecutionContext`, see `call.rs`).
unsafe extern "C" fn execution_context_get(args: *mut XLA_FFI_ExecutionContext_Get_Args) -> *mut XLA_FFI_Error {
    let Some(a) = args.as_mut() else { return new_error(XLA_FFI_Error_Code_INVALID_ARGUMENT, "null arguments") };
    let Some(id) = a.type_id.as_ref().map(|t| t.type_id) else {
        return new_error(XLA_FFI_Error_Code_INVALID_ARGUMENT, "null type id");
    };
    let Some(context) = (a.ctx as *const super::context::ExecutionContext).as_ref() else {
        return new_error(XLA_FFI_Error_Code_INVALID_ARGUMENT, "null execution context");
    };
    match context.lookup(id) {
        Some(data) => {
            a.data = data;
            std::ptr::null_mut()
        }
        None => new_error(XLA_FFI_Error_Code_NOT_FOUND, &format!("no user data of type id {id} in the execution context of this run")),
    }
}

unsafe extern "C" fn state_set(_args: *mut XLA_FFI_State_Set_Args) -> *mut XLA_FFI_Error {
    new_error(
        XLA_FFI_Error_Code_UNIMPLEMENTED,
        "hlojit does not run the instantiate stage: handler state cannot be set",
    )
}

/// hlojit runs no instantiate stage, so there is never a state: the handler gets null. (XLA
/// reports an error when a handler's bundle has no instantiate stage; jaxlib's CPU callback
/// handlers do have one, but jaxlib exports only their execute stage, and they use the state
/// — a cache of transpose plans — only for callback results not in row-major order.)
unsafe extern "C" fn state_get(args: *mut XLA_FFI_State_Get_Args) -> *mut XLA_FFI_Error {
    let Some(a) = args.as_mut() else { return new_error(XLA_FFI_Error_Code_INVALID_ARGUMENT, "null arguments") };
    a.state = std::ptr::null_mut();
    std::ptr::null_mut()
}

/// Host memory for a handler. The free call does not repeat the alignment, so the block
/// starts with a header recording the size and alignment it was allocated with.
const HEADER: usize = 16;

unsafe extern "C" fn device_memory_allocate(args: *mut XLA_FFI_DeviceMemory_Allocate_Args) -> *mut XLA_FFI_Error {
    let Some(a) = args.as_mut() else { return new_error(XLA_FFI_Error_Code_INVALID_ARGUMENT, "null arguments") };
    let align = a.alignment.max(crate::buffer::BUFFER_ALIGNMENT);
    let layout = a.size.checked_add(align).and_then(|total| std::alloc::Layout::from_size_align(total, align).ok());
    let Some(layout) = layout else {
        return new_error(
            XLA_FFI_Error_Code_INVALID_ARGUMENT,
            &format!("bad allocation: {} bytes aligned to {}", a.size, a.alignment),
        );
    };
    let base = std::alloc::alloc(layout);
    if base.is_null() {
        return new_error(XLA_FFI_Error_Code_RESOURCE_EXHAUSTED, &format!("cannot allocate {} bytes", a.size));
    }
    let data = base.add(align);
    (data.sub(HEADER) as *mut [usize; 2]).write_unaligned([layout.size(), align]);
    a.data = data as *mut c_void;
    std::ptr::null_mut()
}

unsafe extern "C" fn device_memory_free(args: *mut XLA_FFI_DeviceMemory_Free_Args) -> *mut XLA_FFI_Error {
    let Some(a) = args.as_ref() else { return new_error(XLA_FFI_Error_Code_INVALID_ARGUMENT, "null arguments") };
    if a.data.is_null() {
        return std::ptr::null_mut();
    }
    let data = a.data as *mut u8;
    let [total, align] = (data.sub(HEADER) as *const [usize; 2]).read_unaligned();
    match std::alloc::Layout::from_size_align(total, align) {
        Ok(layout) => {
            std::alloc::dealloc(data.sub(align), layout);
            std::ptr::null_mut()
        }
        Err(_) => new_error(XLA_FFI_Error_Code_INVALID_ARGUMENT, "freeing memory this API did not allocate"),
    }
}

/// The pool FFI handlers schedule their work on: separate from the pool that runs generated
/// kernels, so that a handler blocking on its tasks never starves the tasks it waits for.
fn ffi_pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        rayon::ThreadPoolBuilder::new().num_threads(threads).thread_name(|i| format!("hlojit-ffi-{i}")).build().ok()
    })
    .as_ref()
}

struct SendTask(XLA_FFI_Task, usize);

unsafe extern "C" fn thread_pool_schedule(args: *mut XLA_FFI_ThreadPool_Schedule_Args) -> *mut XLA_FFI_Error {
    let Some(a) = args.as_ref() else { return new_error(XLA_FFI_Error_Code_INVALID_ARGUMENT, "null arguments") };
    let Some(task) = a.task else { return new_error(XLA_FFI_Error_Code_INVALID_ARGUMENT, "null task") };
    let Some(pool) = ffi_pool() else {
        // The caller runs the task itself when scheduling fails.
        return new_error(XLA_FFI_Error_Code_UNIMPLEMENTED, "no thread pool");
    };
    let job = SendTask(task, a.data as usize);
    pool.spawn(move || {
        let job = job;
        let _env = crate::float_env::FlushDenormals::new();
        // SAFETY: the handler handed us this task and its data to run once.
        unsafe { (job.0)(job.1 as *mut c_void) };
    });
    std::ptr::null_mut()
}

unsafe extern "C" fn thread_pool_num_threads(args: *mut XLA_FFI_ThreadPool_NumThreads_Args) -> *mut XLA_FFI_Error {
    let Some(a) = args.as_ref() else { return new_error(XLA_FFI_Error_Code_INVALID_ARGUMENT, "null arguments") };
    if let Some(n) = a.num_threads.as_mut() {
        *n = ffi_pool().map_or(0, |p| p.current_num_threads() as i64);
    }
    std::ptr::null_mut()
}

/// A future an asynchronous handler completes later; the runtime waits for it.
#[derive(Default)]
pub(crate) struct Future {
    state: Mutex<FutureState>,
    done: Condvar,
}

#[derive(Default)]
struct FutureState {
    ready: bool,
    error: Option<String>,
}

impl Future {
    fn complete(&self, error: Option<String>) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.ready = true;
        s.error = error;
        self.done.notify_all();
    }

    /// Blocks until the future completes; its error, if any.
    pub(crate) fn wait(&self) -> Option<String> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while !s.ready {
            s = self.done.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        s.error.take()
    }
}

/// Takes back the reference the handler was given with the future.
///
/// # Safety
/// `future` must come from `XLA_FFI_Future_Create` and be released once.
pub(crate) unsafe fn release_future(future: *mut XLA_FFI_Future) -> Arc<Future> {
    Arc::from_raw(future as *const Future)
}

unsafe extern "C" fn future_create(args: *mut XLA_FFI_Future_Create_Args) -> *mut XLA_FFI_Error {
    let Some(a) = args.as_mut() else { return new_error(XLA_FFI_Error_Code_INVALID_ARGUMENT, "null arguments") };
    // Two references: the handler's (completing it) and the runtime's (waiting on it).
    let f = Arc::new(Future::default());
    let raw = Arc::into_raw(f);
    Arc::increment_strong_count(raw);
    a.future = raw as *mut XLA_FFI_Future;
    std::ptr::null_mut()
}

unsafe extern "C" fn future_set_available(args: *mut XLA_FFI_Future_SetAvailable_Args) -> *mut XLA_FFI_Error {
    let Some(a) = args.as_ref().filter(|a| !a.future.is_null()) else {
        return new_error(XLA_FFI_Error_Code_INVALID_ARGUMENT, "null future");
    };
    let f = Arc::from_raw(a.future as *const Future);
    f.complete(None);
    std::ptr::null_mut()
}

unsafe extern "C" fn future_set_error(args: *mut XLA_FFI_Future_SetError_Args) -> *mut XLA_FFI_Error {
    let Some(a) = args.as_ref().filter(|a| !a.future.is_null()) else {
        return new_error(XLA_FFI_Error_Code_INVALID_ARGUMENT, "null future");
    };
    let message = if a.error.is_null() { "asynchronous handler failed".to_string() } else { consume_error(a.error) };
    let f = Arc::from_raw(a.future as *const Future);
    f.complete(Some(message));
    std::ptr::null_mut()
}

unsafe extern "C" fn run_id_get(args: *mut XLA_FFI_RunId_Get_Args) -> *mut XLA_FFI_Error {
    if let Some(a) = args.as_mut() {
        a.run_id = 0;
    }
    std::ptr::null_mut()
}

unsafe extern "C" fn device_ordinal_get(args: *mut XLA_FFI_DeviceOrdinal_Get_Args) -> *mut XLA_FFI_Error {
    if let Some(a) = args.as_mut() {
        a.device_ordinal = 0;
    }
    std::ptr::null_mut()
}

struct ApiTable(XLA_FFI_Api);

// SAFETY: the table is immutable after construction and holds only function pointers.
unsafe impl Send for ApiTable {}
unsafe impl Sync for ApiTable {}

/// The API table handed to every typed-FFI handler.
pub fn api() -> &'static XLA_FFI_Api {
    static API: OnceLock<ApiTable> = OnceLock::new();
    &API.get_or_init(|| {
        ApiTable(XLA_FFI_Api {
            struct_size: sizes::api(),
            extension_start: std::ptr::null_mut(),
            api_version: XLA_FFI_Api_Version {
                struct_size: sizes::api_version(),
                extension_start: std::ptr::null_mut(),
                major_version: XLA_FFI_API_MAJOR,
                minor_version: XLA_FFI_API_MINOR,
            },
            internal_api: std::ptr::null(),
            XLA_FFI_Error_Create: Some(error_create),
            XLA_FFI_Error_GetMessage: Some(error_get_message),
            XLA_FFI_Error_Destroy: Some(error_destroy),
            XLA_FFI_Handler_Register: Some(handler_register),
            XLA_FFI_Stream_Get: Some(stream_get),
            XLA_FFI_Type_Register: Some(type_register),
            XLA_FFI_ExecutionContext_Get: Some(execution_context_get),
            XLA_FFI_State_Set: Some(state_set),
            XLA_FFI_State_Get: Some(state_get),
            XLA_FFI_DeviceMemory_Allocate: Some(device_memory_allocate),
            XLA_FFI_DeviceMemory_Free: Some(device_memory_free),
            XLA_FFI_ThreadPool_Schedule: Some(thread_pool_schedule),
            XLA_FFI_ThreadPool_NumThreads: Some(thread_pool_num_threads),
            XLA_FFI_Future_Create: Some(future_create),
            XLA_FFI_Future_SetAvailable: Some(future_set_available),
            XLA_FFI_Future_SetError: Some(future_set_error),
            XLA_FFI_RunId_Get: Some(run_id_get),
            XLA_FFI_DeviceOrdinal_Get: Some(device_ordinal_get),
        })
    })
    .0
}

/// XLA's entry point for plugins that register handlers themselves
/// (`XLA_FFI_REGISTER_HANDLER(XLA_FFI_GetApi(), ...)`).
#[no_mangle]
pub extern "C" fn XLA_FFI_GetApi() -> *const XLA_FFI_Api {
    api()
}
