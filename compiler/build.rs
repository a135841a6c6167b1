//! Gives the compiler a build identity for its on-disk executable cache: a hash of the sources
//! that decide what code it generates (compiler, runtime, FFI). The crate version alone would
//! let a rebuilt compiler load objects an older one generated.

include!("../build-support/source_hash.rs");

fn main() {
    let manifest = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let roots = [manifest.join("src"), manifest.join("../runtime/src"), manifest.join("../ffi/src")];
    println!("cargo:rerun-if-changed=../build-support/source_hash.rs");
    println!("cargo:rustc-env=HLOJIT_BUILD_ID={}", source_hash(&roots));
}
