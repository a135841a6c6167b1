//! Links the system LAPACK and BLAS when the `system-lapack` feature is on (the default):
//! `lapack-sys` and `blas-sys` only declare the Fortran routines. On Debian these are
//! `liblapack.so.3` / `libblas.so.3` (reference LAPACK, or OpenBLAS through the alternatives
//! system when libopenblas0 is installed); `cargo xtask setup` installs them.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_SYSTEM_LAPACK").is_some() {
        println!("cargo:rustc-link-lib=dylib=lapack");
        println!("cargo:rustc-link-lib=dylib=blas");
    }
}
