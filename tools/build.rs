//! Exports the runtime's C symbols from the `hlojit` command and the tools' tests (see
//! `build-support/dynamic_symbols.rs`), so plugins loaded with `--plugin` bind to them.

include!("../build-support/dynamic_symbols.rs");

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../build-support/dynamic_symbols.rs");
    if let Some(arg) = dynamic_symbols_link_arg() {
        println!("cargo:rustc-link-arg-bins={arg}");
        println!("cargo:rustc-link-arg-tests={arg}");
    }
}
