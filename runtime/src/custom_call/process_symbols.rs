//! Custom-call targets among the running program's own symbols, when the user allows it.
//!
//! HLO text names its custom-call targets, and whoever writes the text chooses the name. If
//! any symbol of the process could be a target, `custom_call_target="system"` would call
//! libc's `system()` with a buffer pointer for a command line, and `"abort"` would end the
//! process. So by default no process symbol is a target: targets come from registries,
//! plugins the user loaded, and hlojit's built-ins.
//!
//! Programs that link their targets into their own executable (and export them, with
//! `-rdynamic` or `--export-dynamic-symbol`) can opt in with [`ProcessSymbols`]. Even then a
//! name resolves only to a *function defined by the main executable itself* — never to the C
//! library, libm, libpthread, the dynamic loader or any other shared library, whatever the
//! executable imports — and never to names reserved to the implementation (`_` and `__`
//! prefixes: C's reserved identifiers, mangled Rust and C++ symbols), the Rust runtime
//! (`rust_*`) or hlojit's own runtime entry points. Plugins are held to the same rule: a
//! plugin's targets are the functions it defines, not those of the libraries it links.

use std::collections::BTreeSet;

/// Which of the running program's own symbols custom-call targets may resolve to.
///
/// ```rust
/// use hlojit_runtime::custom_call::ProcessSymbols;
///
/// assert_eq!(ProcessSymbols::default(), ProcessSymbols::None);
/// let only = ProcessSymbols::only(["my_target"]);
/// assert!(only.admits("my_target") && !only.admits("system"));
/// assert!(!ProcessSymbols::MainExecutable.admits("__libc_start_main"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ProcessSymbols {
    /// None: targets come only from registries, plugins and hlojit's built-ins (the default).
    #[default]
    None,
    /// Any function the main executable defines and exports, except reserved names. Every
    /// such function becomes callable from HLO text: use it for modules you trust, or prefer
    /// [`ProcessSymbols::Only`].
    MainExecutable,
    /// Only these names, each still only as a function the main executable defines.
    Only(BTreeSet<String>),
}

impl ProcessSymbols {
    /// [`ProcessSymbols::Only`] the given names.
    pub fn only<S: Into<String>>(names: impl IntoIterator<Item = S>) -> ProcessSymbols {
        ProcessSymbols::Only(names.into_iter().map(Into::into).collect())
    }

    /// Whether this policy lets `name` be looked up at all (before asking whether the
    /// executable defines it).
    pub fn admits(&self, name: &str) -> bool {
        match self {
            ProcessSymbols::None => false,
            ProcessSymbols::MainExecutable => !is_reserved(name),
            ProcessSymbols::Only(names) => names.contains(name) && !is_reserved(name),
        }
    }

    /// `name` as a function the main executable defines, when this policy admits it.
    pub fn resolve(&self, name: &str) -> Option<usize> {
        if self.admits(name) {
            main_executable_function(name)
        } else {
            None
        }
    }
}

/// Names no custom call may bind to: reserved identifiers (leading underscore, which also
/// covers mangled Rust `_ZN`/`_R` and C++ `_Z` names and glibc's internals), the Rust runtime's
/// unmangled entry points, and hlojit's runtime ABI (which generated code binds to itself).
fn is_reserved(name: &str) -> bool {
    name.is_empty()
        || name.starts_with('_')
        || name.starts_with("rust_")
        || name.starts_with("hlojit_rt_")
        || name.starts_with("XLA_FFI_")
        || name.starts_with("XlaCustomCallStatus")
        || crate::symbols::runtime_symbols().iter().any(|(n, _)| *n == name)
}

/// The address of `name` if the main executable defines it as a function and exports it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn main_executable_function(name: &str) -> Option<usize> {
    // SAFETY: dlopen(NULL) names the main program, which is always loaded.
    let main = unsafe { libc::dlopen(std::ptr::null(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
    if main.is_null() {
        return None;
    }
    // SAFETY: `main` is a live handle, closed right after.
    unsafe {
        let found = function_defined_by(main as usize, name);
        libc::dlclose(main);
        found
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn main_executable_function(_name: &str) -> Option<usize> {
    None
}

/// The address of `name` if the object `handle` (from `dlopen`) itself defines it as a
/// function.
///
/// `dlsym` on a handle searches the object and everything it depends on, so `dlsym(plugin,
/// "system")` finds the C library's `system` (and on the main program's handle, every loaded
/// library's). The answer is checked with `dladdr1`: the symbol table entry must belong to the
/// object's own link map and be a defined function (an undefined entry with a PLT address, as
/// non-PIE executables have for functions whose address they take, does not count).
///
/// # Safety
/// `handle` must be a live handle from `dlopen`.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) unsafe fn function_defined_by(handle: usize, name: &str) -> Option<usize> {
    use std::ffi::{c_void, CString};
    const RTLD_DL_SYMENT: i32 = 1;
    const RTLD_DL_LINKMAP: i32 = 2;
    const STT_FUNC: u8 = 2;
    const STT_GNU_IFUNC: u8 = 10;
    let c_name = CString::new(name).ok()?;
    let handle = handle as *mut c_void;
    // SAFETY: plain dynamic-loader queries on a live handle; the symbol entry is read while
    // its object is loaded (the handle keeps it so).
    unsafe {
        let address = libc::dlsym(handle, c_name.as_ptr());
        if address.is_null() {
            return None;
        }
        let mut own_map: *mut c_void = std::ptr::null_mut();
        if libc::dlinfo(handle, libc::RTLD_DI_LINKMAP, &mut own_map as *mut _ as *mut c_void) != 0 {
            return None;
        }
        let mut info: libc::Dl_info = std::mem::zeroed();
        let mut map: *mut c_void = std::ptr::null_mut();
        if libc::dladdr1(address, &mut info, &mut map, RTLD_DL_LINKMAP) == 0 || map != own_map {
            return None;
        }
        let mut entry: *mut c_void = std::ptr::null_mut();
        if libc::dladdr1(address, &mut info, &mut entry, RTLD_DL_SYMENT) == 0 || entry.is_null() {
            return None;
        }
        let sym = &*(entry as *const libc::Elf64_Sym);
        let kind = sym.st_info & 0xf;
        let defined = sym.st_shndx != 0; // SHN_UNDEF
        let exact = info.dli_saddr == address;
        (defined && exact && (kind == STT_FUNC || kind == STT_GNU_IFUNC)).then_some(address as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_resolves_by_default() {
        assert_eq!(ProcessSymbols::default().resolve("strlen"), None);
        assert_eq!(ProcessSymbols::None.resolve("hlojit_test_exported_target"), None);
    }

    #[test]
    fn the_c_library_never_resolves_even_when_allowed() {
        for name in ["system", "abort", "execve", "strlen", "malloc", "dlopen", "sinf"] {
            assert_eq!(ProcessSymbols::MainExecutable.resolve(name), None, "{name}");
            assert_eq!(ProcessSymbols::only([name]).resolve(name), None, "{name}");
        }
    }

    #[test]
    fn reserved_and_runtime_names_are_never_admitted() {
        for name in [
            "_start",
            "__libc_start_main",
            "_ZN3std2rt10lang_start17h0E",
            "rust_eh_personality",
            "hlojit_rt_alloc",
            "XLA_FFI_GetApi",
            "XlaCustomCallStatusSetFailure",
            "hlojit_last_error",
            "",
        ] {
            assert!(!ProcessSymbols::MainExecutable.admits(name), "{name}");
        }
        assert!(ProcessSymbols::MainExecutable.admits("my_model_target"));
        assert!(!ProcessSymbols::only(["a"]).admits("b"));
    }
}
