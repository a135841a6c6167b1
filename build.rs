//! Exports the runtime's C symbols from the test, example and benchmark executables (see
//! `build-support/dynamic_symbols.rs`).

include!("build-support/dynamic_symbols.rs");

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build-support/dynamic_symbols.rs");
    if let Some(arg) = dynamic_symbols_link_arg() {
        println!("cargo:rustc-link-arg-tests={arg}");
        println!("cargo:rustc-link-arg-examples={arg}");
        println!("cargo:rustc-link-arg-benches={arg}");
    }
}
