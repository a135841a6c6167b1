//! The system LAPACK and BLAS, opened the first time a LAPACK target runs rather than linked:
//! OpenBLAS (what Debian's `liblapack.so.3` often is) starts a spinning thread pool when it is
//! loaded, which would cost every hlojit process a core for its first ~100 ms.
//!
//! `HLOJIT_LAPACK` overrides the libraries: a list of paths or names separated like `PATH`
//! (e.g. one `libopenblas.so.0` or `libmkl_rt.so`, which hold BLAS too), searched in order for
//! each routine; `none` loads nothing, so the pure-Rust fallbacks serve the targets they cover.

use crate::custom_call::registry::with_sources;
use hlojit_ffi::handler::Error;
use hlojit_ffi::xla::XLA_FFI_Error_Code_UNAVAILABLE;
use std::ffi::OsString;
use std::sync::OnceLock;

/// The environment variable naming the libraries to load instead of the defaults.
pub const ENV: &str = "HLOJIT_LAPACK";

/// Groups of alternatives: the first of each group that loads is used.
#[cfg(target_os = "macos")]
const DEFAULT: &[&[&str]] = &[&["/System/Library/Frameworks/Accelerate.framework/Accelerate"]];
#[cfg(not(target_os = "macos"))]
const DEFAULT: &[&[&str]] =
    &[&["liblapack.so.3", "liblapack.so", "libopenblas.so.0", "libflexiblas.so.3"], &["libblas.so.3", "libblas.so"]];

/// What loading found, once per process.
struct Libraries {
    /// The libraries that loaded, by the name they were asked for, in search order.
    loaded: Vec<(String, libloading::Library)>,
    /// Why the others did not (the dynamic loader's messages), or that loading is disabled.
    problems: Vec<String>,
}

static LIBRARIES: OnceLock<Libraries> = OnceLock::new();

fn libraries() -> &'static Libraries {
    LIBRARIES.get_or_init(|| match std::env::var_os(ENV) {
        Some(v) if v == "none" => Libraries { loaded: Vec::new(), problems: vec![format!("{ENV}=none disables loading LAPACK")] },
        Some(v) if !v.is_empty() => {
            let names: Vec<OsString> = std::env::split_paths(&v).map(OsString::from).collect();
            open(names.iter().map(|n| vec![n.to_string_lossy().into_owned()]))
        }
        _ => open(DEFAULT.iter().map(|group| group.iter().map(|n| n.to_string()).collect())),
    })
}

fn open(groups: impl Iterator<Item = Vec<String>>) -> Libraries {
    let mut libs = Libraries { loaded: Vec::new(), problems: Vec::new() };
    for group in groups {
        let mut errors = Vec::new();
        for name in &group {
            // SAFETY: loading runs the library's initializers; these are the system's LAPACK
            // and BLAS, or what the user named in HLOJIT_LAPACK.
            match unsafe { libloading::Library::new(name) } {
                Ok(lib) => {
                    libs.loaded.push((name.clone(), lib));
                    errors.clear();
                    break;
                }
                Err(e) => errors.push(format!("{name}: {}", with_sources(&e))),
            }
        }
        libs.problems.extend(errors);
    }
    libs
}

/// The address of the Fortran routine `symbol` (`sgetrf_`), from the first library that has it.
fn find(symbol: &str) -> Option<usize> {
    libraries().loaded.iter().find_map(|(_, lib)| {
        // SAFETY: the symbol's address is only taken here; callers give it its Fortran type.
        unsafe { lib.get::<unsafe extern "C" fn()>(symbol.as_bytes()) }.ok().map(|f| *f as usize)
    })
}

/// Why `symbol` cannot be called: the libraries searched, or why none loaded.
fn missing(symbol: &str) -> Error {
    let libs = libraries();
    let searched: Vec<&str> = libs.loaded.iter().map(|(n, _)| n.as_str()).collect();
    let message = if searched.is_empty() {
        format!(
            "LAPACK routine {symbol} is unavailable: no LAPACK library was loaded ({}); install one (Debian: liblapack3 \
             or libopenblas0) or name it in {ENV}",
            libs.problems.join("; ")
        )
    } else {
        format!("LAPACK routine {symbol} is not in {} (name a library that has it in {ENV})", searched.join(", "))
    };
    Error::new(XLA_FFI_Error_Code_UNAVAILABLE, message)
}

/// One Fortran routine, looked up once.
pub struct Routine {
    symbol: &'static str,
    address: OnceLock<Option<usize>>,
}

impl Routine {
    pub const fn new(symbol: &'static str) -> Routine {
        Routine { symbol, address: OnceLock::new() }
    }

    /// The routine's address, or an error naming it and the libraries searched.
    pub fn address(&self) -> Result<usize, Error> {
        self.address.get_or_init(|| find(self.symbol)).ok_or_else(|| missing(self.symbol))
    }
}

/// The names of the libraries loaded so far (none before the first LAPACK target runs).
pub fn loaded_names() -> Vec<String> {
    LIBRARIES.get().map(|l| l.loaded.iter().map(|(n, _)| n.clone()).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_absent_library_is_named_in_the_error() {
        let libs = open([vec!["libhlojit-no-such-lapack.so.3".to_string()]].into_iter());
        assert!(libs.loaded.is_empty());
        assert!(libs.problems[0].contains("libhlojit-no-such-lapack.so.3"), "{:?}", libs.problems);
    }

    #[test]
    fn a_missing_routine_is_an_error_naming_it() {
        let e = Routine::new("hlojit_no_such_routine_").address().unwrap_err();
        assert!(e.to_string().contains("hlojit_no_such_routine_"), "{e}");
    }
}
