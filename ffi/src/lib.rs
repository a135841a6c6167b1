//! The C ABI between hlojit and custom-call plugins.
//!
//! hlojit calls custom-call targets with every CPU calling convention XLA has
//! (`api_version=` in HLO text): the legacy `void f(void* out, const void** in, ...)` forms with
//! an optional [`status::XlaCustomCallStatus`], and XLA's typed FFI, whose C types are mirrored
//! in [`xla`] with XLA's layout so that handlers compiled against XLA's own headers run
//! unchanged. [`handler`] lets a Rust plugin export a typed handler without unsafe code
//! ([`export_handler!`]).
//!
//! C and C++ authors include `include/hlojit_ffi.h` (see [`HEADER`]), or XLA's headers.

pub mod handler;
pub mod status;
pub mod xla;

/// The C header for plugin authors and AOT users (`ffi/include/hlojit_ffi.h`).
pub const HEADER: &str = include_str!("../include/hlojit_ffi.h");

/// Where the header lives in the source tree, for build scripts that compile C plugins.
pub fn include_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("include")
}
