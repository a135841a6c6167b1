//! In-process loading of compiled objects with LLVM's ORC LLJIT. Runtime functions and
//! registered custom-call targets are defined as absolute symbols; anything else (libm, libc)
//! is found among the process's exported symbols.

use crate::error::{Error, Result};
use llvm_sys::error::{LLVMDisposeErrorMessage, LLVMErrorRef, LLVMGetErrorMessage};
use llvm_sys::orc2::lljit::*;
use llvm_sys::orc2::*;
use std::ffi::{c_char, CStr, CString};

/// One LLJIT instance holding the code of one executable.
pub struct Jit {
    jit: LLVMOrcLLJITRef,
    /// Errors the execution session reported outside a call's own result (boxed: the JIT
    /// holds its address; dropped after the JIT, see `Drop`).
    session_errors: Box<SessionErrors>,
}

/// Materialization errors LLVM reports to the session instead of to the lookup that caused
/// them. With the code split over several objects, an object that fails to link (a symbol not
/// found) is reported here while the lookup of the entry can still succeed, and running the
/// entry then jumps into the failed object's freed memory: a crash, found by fuzz-diff (a
/// bf16 module needing a libcall, then another one in the same process). LLVM's default
/// reporter only prints "JIT session error: ..." to stderr.
#[derive(Default)]
struct SessionErrors(std::sync::Mutex<Vec<String>>);

extern "C" fn report_session_error(ctx: *mut std::ffi::c_void, err: LLVMErrorRef) {
    // SAFETY: ctx is the JIT's boxed SessionErrors, alive as long as the JIT (Drop order).
    let errors = unsafe { &*(ctx as *const SessionErrors) };
    if let Err(Error::Llvm(message)) = check(err, "loading compiled code") {
        errors.0.lock().unwrap_or_else(|p| p.into_inner()).push(message);
    }
}

// LLJIT is internally synchronized; after loading, we only look up addresses.
unsafe impl Send for Jit {}
unsafe impl Sync for Jit {}

fn check(err: LLVMErrorRef, what: &str) -> Result<()> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: a non-null LLVMErrorRef is consumed by LLVMGetErrorMessage.
    let message = unsafe {
        let m = LLVMGetErrorMessage(err);
        let s = CStr::from_ptr(m).to_string_lossy().into_owned();
        LLVMDisposeErrorMessage(m);
        s
    };
    Err(Error::Llvm(format!("{what}: {message}")))
}

/// `HLOJIT_PERF=1` makes generated functions visible to Linux `perf`: LLVM's perf listener
/// writes a jitdump file (`perf record -k mono`, then `perf inject --jit`).
fn profiling_requested() -> bool {
    std::env::var_os("HLOJIT_PERF").is_some_and(|v| v != "0")
}

/// The object layer LLJIT uses when profiling: the perf listener works with RuntimeDyld,
/// not with JITLink (LLJIT's default on x86-64 Linux).
extern "C" fn object_layer_for_perf(
    _ctx: *mut std::ffi::c_void,
    session: LLVMOrcExecutionSessionRef,
    _triple: *const c_char,
) -> LLVMOrcObjectLayerRef {
    // SAFETY: LLJIT calls this with its live execution session; the listener is a process-wide
    // singleton (null when LLVM was built without perf support).
    unsafe {
        let layer = llvm_sys::orc2::ee::LLVMOrcCreateRTDyldObjectLinkingLayerWithSectionMemoryManager(session);
        let listener = llvm_sys::execution_engine::LLVMCreatePerfJITEventListener();
        if !listener.is_null() {
            llvm_sys::orc2::ee::LLVMOrcRTDyldObjectLinkingLayerRegisterJITEventListener(layer, listener);
        }
        layer
    }
}

impl Jit {
    /// A JIT that resolves `symbols` (name, address) first and the process's symbols second.
    pub fn new(symbols: &[(String, usize)]) -> Result<Jit> {
        super::target::initialize();
        let mut jit: LLVMOrcLLJITRef = std::ptr::null_mut();
        // SAFETY: plain C API calls; every error is checked.
        unsafe {
            let builder = if profiling_requested() {
                let builder = LLVMOrcCreateLLJITBuilder();
                LLVMOrcLLJITBuilderSetObjectLinkingLayerCreator(builder, object_layer_for_perf, std::ptr::null_mut());
                builder
            } else {
                std::ptr::null_mut()
            };
            check(LLVMOrcCreateLLJIT(&mut jit, builder), "creating the JIT")?;
            let jit = Jit { jit, session_errors: Box::default() };
            LLVMOrcExecutionSessionSetErrorReporter(
                LLVMOrcLLJITGetExecutionSession(jit.jit),
                report_session_error,
                &*jit.session_errors as *const SessionErrors as *mut std::ffi::c_void,
            );
            let dylib = LLVMOrcLLJITGetMainJITDylib(jit.jit);
            if !symbols.is_empty() {
                let mut pairs: Vec<LLVMOrcCSymbolMapPair> = Vec::with_capacity(symbols.len());
                for (name, address) in symbols {
                    let c = CString::new(name.as_str()).map_err(|_| Error::Internal(format!("symbol name {name:?}")))?;
                    pairs.push(LLVMOrcCSymbolMapPair {
                        Name: LLVMOrcLLJITMangleAndIntern(jit.jit, c.as_ptr()),
                        Sym: LLVMJITEvaluatedSymbol {
                            Address: *address as u64,
                            Flags: LLVMJITSymbolFlags {
                                GenericFlags: LLVMJITSymbolGenericFlags::LLVMJITSymbolGenericFlagsExported as u8
                                    | LLVMJITSymbolGenericFlags::LLVMJITSymbolGenericFlagsCallable as u8,
                                TargetFlags: 0,
                            },
                        },
                    });
                }
                let unit = LLVMOrcAbsoluteSymbols(pairs.as_mut_ptr(), pairs.len());
                check(LLVMOrcJITDylibDefine(dylib, unit), "defining runtime symbols")?;
            }
            let mut generator: LLVMOrcDefinitionGeneratorRef = std::ptr::null_mut();
            let prefix = LLVMOrcLLJITGetGlobalPrefix(jit.jit) as c_char;
            check(
                LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&mut generator, prefix, None, std::ptr::null_mut()),
                "searching the process for symbols",
            )?;
            LLVMOrcJITDylibAddGenerator(dylib, generator);
            Ok(jit)
        }
    }

    /// Loads an object file.
    pub fn add_object(&self, object: &[u8]) -> Result<()> {
        // SAFETY: the buffer is copied by LLVM and then owned by the JIT.
        unsafe {
            let name = c"hlojit-object";
            let buffer = llvm_sys::core::LLVMCreateMemoryBufferWithMemoryRangeCopy(
                object.as_ptr() as *const c_char,
                object.len(),
                name.as_ptr(),
            );
            let dylib = LLVMOrcLLJITGetMainJITDylib(self.jit);
            check(LLVMOrcLLJITAddObjectFile(self.jit, dylib, buffer), "loading compiled code")
        }
    }

    /// The address of a loaded function (linking the object on first lookup).
    pub fn lookup(&self, name: &str) -> Result<usize> {
        let c = CString::new(name).map_err(|_| Error::Internal(format!("symbol name {name:?}")))?;
        let mut address = 0u64;
        // SAFETY: plain C API call; the error is checked.
        let found = unsafe { check(LLVMOrcLLJITLookup(self.jit, &mut address, c.as_ptr()), &format!("resolving {name}")) };
        // A failure in another object the entry depends on may only have been reported to
        // the session: then the address is not safe to call. The session's message is the
        // more useful one either way (it names the missing symbol).
        let errors = self.session_errors.0.lock().unwrap_or_else(|p| p.into_inner());
        if !errors.is_empty() {
            return Err(Error::Llvm(errors.join("; ")));
        }
        found?;
        Ok(address as usize)
    }
}

impl Drop for Jit {
    fn drop(&mut self) {
        // SAFETY: disposing the JIT we created; nothing runs its code any more.
        unsafe {
            let err = LLVMOrcDisposeLLJIT(self.jit);
            let _ = check(err, "disposing the JIT");
        }
    }
}
