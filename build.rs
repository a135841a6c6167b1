//! Exports the runtime's C symbols from the `hlojit` binary and the test binaries, so that
//! custom-call plugins loaded at run time bind to `XlaCustomCallStatusSetSuccess`/`SetFailure`
//! (and the rest of what the runtime provides) as they would inside XLA. Only those symbols
//! are exported (`Xla*`, `XLA_FFI_*`, `hlojit_*`), not the whole Rust symbol table.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os != "linux" && !os.ends_with("bsd") {
        return;
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let list = out.join("exported-symbols.list");
    let text = "{\n  Xla*;\n  XLA_FFI_*;\n  hlojit_*;\n};\n";
    if std::fs::read_to_string(&list).ok().as_deref() != Some(text) {
        std::fs::write(&list, text).expect("writing the dynamic symbol list");
    }
    let arg = format!("-Wl,--dynamic-list={}", list.display());
    println!("cargo:rustc-link-arg-bins={arg}");
    println!("cargo:rustc-link-arg-tests={arg}");
}
