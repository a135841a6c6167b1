//! The runtime's static library of this build (`libhlojit_runtime.a`), which AOT objects link.

use std::path::{Path, PathBuf};

/// The newest of `profile_dir/libhlojit_runtime.a` (where `cargo build` of the runtime puts
/// it) and `profile_dir/deps/libhlojit_runtime-<hash>.a` (built as a dependency of `hlojit`).
pub fn runtime_static_library(profile_dir: &Path) -> Option<PathBuf> {
    let top = Some(profile_dir.join("libhlojit_runtime.a")).filter(|p| p.exists());
    let deps = std::fs::read_dir(profile_dir.join("deps")).into_iter().flatten().flatten().map(|e| e.path()).filter(|p| {
        p.file_name().is_some_and(|n| {
            let n = n.to_string_lossy();
            n.starts_with("libhlojit_runtime-") && n.ends_with(".a")
        })
    });
    top.into_iter().chain(deps).max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
}

/// The build profile directory (`target/<profile>`) of the running executable: its own
/// directory, or the parent of `deps/` for a test binary.
pub fn current_profile_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    Some(if dir.file_name().is_some_and(|n| n == "deps") { dir.parent()?.to_path_buf() } else { dir.to_path_buf() })
}
