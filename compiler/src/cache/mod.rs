//! Compiling a module once: executables cached in process (per [`Client`](crate::Client)) and,
//! opt-in with `HLOJIT_CACHE_DIR`, their object code cached on disk for later processes (as
//! JAX's persistent compilation cache). Both are keyed by a [`Fingerprint`]: the module's
//! canonical text, the target machine and the compiler's build.

pub mod disk;
pub mod fields;
pub mod fingerprint;
pub mod memory;
pub mod meta;

pub use disk::DiskCache;
pub use fingerprint::Fingerprint;
pub use memory::MemoryCache;

/// The environment variable naming the on-disk cache's directory.
pub const CACHE_DIR_VARIABLE: &str = "HLOJIT_CACHE_DIR";

/// Whether compilations may be served from a cache: not while the optimized IR or the passes
/// are being dumped (`HLOJIT_DUMP_IR`, [`CompileOptions::dump`](crate::CompileOptions)), which
/// only a real compilation writes.
pub fn allowed(options: &crate::CompileOptions) -> bool {
    std::env::var_os("HLOJIT_DUMP_IR").is_none()
        && std::env::var_os(crate::backend::target::PASSES_VARIABLE).is_none()
        && options.dump.is_none()
}

#[cfg(test)]
mod tests;
