//! Gives the runtime its ABI identity (`abi_identity.rs`): a hash of the sources that define
//! what generated code relies on — descriptor layouts, function signatures and meanings, the
//! symbol set — which are the runtime's and the FFI types' it uses.

include!("../build-support/source_hash.rs");

fn main() {
    let manifest = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-changed=../build-support/source_hash.rs");
    println!("cargo:rustc-env=HLOJIT_RUNTIME_ABI={}", source_hash(&[manifest.join("src"), manifest.join("../ffi/src")]));
}
