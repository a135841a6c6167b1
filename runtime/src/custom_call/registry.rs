//! Where custom-call targets come from. A target is found by name, in this order: functions
//! registered with a registry (Rust or C function pointers), the exports of plugins the
//! registry loaded at run time, the main executable's own functions only where the user
//! allows them ([`ProcessSymbols`]), and finally hlojit's built-in implementations of JAX's
//! LAPACK targets ([`crate::linalg`]), last so that any of the others (jaxlib's own handlers,
//! say) can replace them. Nothing else in the process (the C library above all) is a target.
//!
//! A registry is cheap to clone (clones share their contents), so the same one can hang under
//! compile options or a client. [`CustomCallRegistry::global`] is the process-wide registry the
//! CLI's `--plugin` loads into and handlers registered through `XLA_FFI_Handler_Register` land
//! in; compilation consults it after the registry it was given.

use super::process_symbols::ProcessSymbols;
use hlojit_ffi::status::{OriginalFn, StatusReturningFn, StatusReturningUnifiedFn};
use hlojit_ffi::xla::XLA_FFI_Handler;
use std::collections::HashMap;
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, RwLock};
use thiserror::Error;

/// A failure to load a plugin.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("cannot load custom-call plugin {path}: {message}")]
pub struct PluginError {
    /// The library's path, as given.
    pub path: String,
    /// Why it failed (the dynamic loader's message).
    pub message: String,
}

/// A shared library loaded for its custom-call targets; unloaded when the last executable
/// using it and its registry are gone.
pub struct Plugin {
    path: PathBuf,
    /// Keeps the code loaded (lookups go through `handle` where the platform allows).
    #[cfg_attr(all(target_os = "linux", target_env = "gnu"), allow(dead_code))]
    library: libloading::Library,
    /// The `dlopen` handle of `library`, for lookups restricted to the plugin's own symbols.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    handle: usize,
}

impl Plugin {
    /// The path the library was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A function the plugin itself defines, never one of the libraries it links against
    /// (`dlsym` on the handle would find the C library's `system` through any plugin).
    fn symbol(&self, name: &str) -> Option<usize> {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            // SAFETY: the handle lives as long as `library`; the symbol is only looked up.
            unsafe { super::process_symbols::function_defined_by(self.handle, name) }
        }
        #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
        {
            // SAFETY: the symbol is only looked up, never called here; the caller decides how.
            unsafe { self.library.get::<*const c_void>(name.as_bytes()).ok().map(|s| *s as usize) }
        }
    }
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin").field("path", &self.path).finish_non_exhaustive()
    }
}

/// A resolved target: its address, and the plugin it lives in (to keep it loaded).
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The target function's address.
    pub address: usize,
    /// The plugin that defines it, if any: holding it keeps the code loaded.
    pub plugin: Option<Arc<Plugin>>,
}

#[derive(Default)]
struct Inner {
    functions: HashMap<String, usize>,
    plugins: Vec<Arc<Plugin>>,
}

/// Custom-call targets by name: registered functions and loaded plugins.
#[derive(Clone, Default)]
pub struct CustomCallRegistry {
    inner: Arc<RwLock<Inner>>,
}

impl std::fmt::Debug for CustomCallRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.read();
        let mut names: Vec<&String> = inner.functions.keys().collect();
        names.sort();
        f.debug_struct("CustomCallRegistry").field("functions", &names).field("plugins", &inner.plugins).finish()
    }
}

impl CustomCallRegistry {
    /// An empty registry: no functions, no plugins.
    pub fn new() -> CustomCallRegistry {
        CustomCallRegistry::default()
    }

    /// The process-wide registry.
    pub fn global() -> &'static CustomCallRegistry {
        static GLOBAL: OnceLock<CustomCallRegistry> = OnceLock::new();
        GLOBAL.get_or_init(CustomCallRegistry::new)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a function of any calling convention by address; the HLO instruction's
    /// `api_version` says how it is called. Replaces an earlier registration of the name.
    ///
    /// # Safety
    /// `address` must be a function with the calling convention every custom call naming it
    /// declares, callable for as long as executables compiled with it live.
    pub unsafe fn register_raw(&self, name: &str, address: *const c_void) {
        self.write().functions.insert(name.to_string(), address as usize);
    }

    /// Registers a typed-FFI handler (`api_version=API_VERSION_TYPED_FFI`).
    pub fn register_ffi_handler(&self, name: &str, handler: XLA_FFI_Handler) {
        self.write().functions.insert(name.to_string(), handler as usize);
    }

    /// Registers an `API_VERSION_ORIGINAL` target.
    pub fn register_original(&self, name: &str, f: OriginalFn) {
        self.write().functions.insert(name.to_string(), f as usize);
    }

    /// Registers an `API_VERSION_STATUS_RETURNING` target.
    pub fn register_status_returning(&self, name: &str, f: StatusReturningFn) {
        self.write().functions.insert(name.to_string(), f as usize);
    }

    /// Registers an `API_VERSION_STATUS_RETURNING_UNIFIED` target.
    pub fn register_unified(&self, name: &str, f: StatusReturningUnifiedFn) {
        self.write().functions.insert(name.to_string(), f as usize);
    }

    /// Loads a shared library whose exported symbols become targets (after registered
    /// functions, before the process's symbols). Loading the same path twice is harmless.
    ///
    /// Loading runs the library's initializers, as any `dlopen` does: load only trusted code.
    pub fn load_plugin(&self, path: impl AsRef<Path>) -> Result<(), PluginError> {
        let path = path.as_ref();
        let err = |message: String| PluginError { path: path.display().to_string(), message };
        let canonical = path.canonicalize().map_err(|e| err(e.to_string()))?;
        if self.read().plugins.iter().any(|p| p.path == canonical) {
            return Ok(());
        }
        // SAFETY: loading a library runs its initializers; the caller chose to trust it.
        let library = unsafe { libloading::Library::new(&canonical) }.map_err(|e| err(with_sources(&e)))?;
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        let (library, handle) = {
            let raw = libloading::os::unix::Library::from(library).into_raw();
            // SAFETY: `raw` is the handle just taken out of a live library, put back at once.
            (libloading::Library::from(unsafe { libloading::os::unix::Library::from_raw(raw) }), raw as usize)
        };
        self.write().plugins.push(Arc::new(Plugin {
            path: canonical,
            library,
            #[cfg(all(target_os = "linux", target_env = "gnu"))]
            handle,
        }));
        Ok(())
    }

    /// The plugins loaded so far, in load order.
    pub fn plugins(&self) -> Vec<Arc<Plugin>> {
        self.read().plugins.clone()
    }

    /// A registered function called `name`.
    pub fn registered(&self, name: &str) -> Option<usize> {
        self.read().functions.get(name).copied()
    }

    /// `name` as exported by one of the loaded plugins (the first that has it).
    pub fn from_plugins(&self, name: &str) -> Option<Resolved> {
        self.read()
            .plugins
            .iter()
            .find_map(|p| p.symbol(name).map(|address| Resolved { address, plugin: Some(p.clone()) }))
    }
}

/// An error's message followed by its sources' (`dlopen failed: libfoo.so: undefined symbol:
/// bar`): the dynamic loader's own text is what tells the user what is wrong.
pub(crate) fn with_sources(e: &dyn std::error::Error) -> String {
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}

/// Finds target `name`: registered functions of each registry in turn, then the plugins of
/// each registry in turn, then the main executable's functions as `process` allows, then the
/// built-in targets (`builtin_targets`).
pub fn resolve_target(registries: &[&CustomCallRegistry], name: &str, process: &ProcessSymbols) -> Option<Resolved> {
    if let Some(address) = registries.iter().find_map(|r| r.registered(name)) {
        return Some(Resolved { address, plugin: None });
    }
    if let Some(r) = registries.iter().find_map(|r| r.from_plugins(name)) {
        return Some(r);
    }
    process
        .resolve(name)
        .or_else(|| super::builtin_target(name).map(|h| h as usize))
        .map(|address| Resolved { address, plugin: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn first(_: *mut c_void, _: *const *const c_void) {}
    unsafe extern "C" fn second(_: *mut c_void, _: *const *const c_void) {}

    #[test]
    fn registered_functions_come_first_and_registries_in_order() {
        let a = CustomCallRegistry::new();
        let b = CustomCallRegistry::new();
        a.register_original("t", first);
        b.register_original("t", second);
        let none = ProcessSymbols::None;
        assert_eq!(resolve_target(&[&a, &b], "t", &none).unwrap().address, first as *const () as usize);
        assert_eq!(resolve_target(&[&b, &a], "t", &none).unwrap().address, second as *const () as usize);
    }

    #[test]
    fn the_c_library_is_never_a_target() {
        // Exported by every Unix process, but not the main executable's own functions.
        for policy in [ProcessSymbols::None, ProcessSymbols::MainExecutable, ProcessSymbols::only(["system"])] {
            for name in ["system", "abort", "strlen"] {
                assert!(resolve_target(&[&CustomCallRegistry::new()], name, &policy).is_none(), "{name} {policy:?}");
            }
        }
        assert!(resolve_target(&[], "no_such_target_anywhere_42", &ProcessSymbols::MainExecutable).is_none());
    }

    #[test]
    fn builtin_lapack_targets_come_last() {
        let builtin = crate::linalg::builtin_handler("lapack_spotrf_ffi").expect("built in") as usize;
        let none = ProcessSymbols::None;
        assert_eq!(resolve_target(&[], "lapack_spotrf_ffi", &none).unwrap().address, builtin);
        let r = CustomCallRegistry::new();
        r.register_original("lapack_spotrf_ffi", first);
        assert_eq!(resolve_target(&[&r], "lapack_spotrf_ffi", &none).unwrap().address, first as *const () as usize);
    }

    /// jaxlib's `dce_sink` is built in, and like the LAPACK targets it yields to a registration.
    #[test]
    fn jaxlib_dce_sink_is_built_in() {
        let none = ProcessSymbols::None;
        let builtin = super::super::jaxlib_targets::handler("dce_sink").expect("built in") as usize;
        assert_eq!(resolve_target(&[], "dce_sink", &none).unwrap().address, builtin);
        let r = CustomCallRegistry::new();
        r.register_original("dce_sink", first);
        assert_eq!(resolve_target(&[&r], "dce_sink", &none).unwrap().address, first as *const () as usize);
    }

    #[test]
    fn missing_plugin_is_an_error_naming_the_path() {
        let e = CustomCallRegistry::new().load_plugin("/nonexistent/libplugin.so").unwrap_err();
        assert!(e.to_string().contains("/nonexistent/libplugin.so"), "{e}");
    }

    #[test]
    fn a_plugin_the_loader_refuses_shows_the_loaders_message() {
        let path = std::env::temp_dir().join(format!("hlojit-not-a-library-{}.so", std::process::id()));
        std::fs::write(&path, b"not a shared library").unwrap();
        let e = CustomCallRegistry::new().load_plugin(&path).unwrap_err().to_string();
        std::fs::remove_file(&path).unwrap();
        // glibc says "file too short" or "invalid ELF header"; either way, more than "dlopen failed".
        assert!(e.contains("dlopen failed: ") && e.contains(&path.display().to_string()), "{e}");
    }
}
