// Shared by the build scripts of `hlojit` and `hlojit-tools` (through `include!`): the linker
// argument that exports the runtime's C symbols from an executable, so that custom-call plugins
// loaded at run time bind to `XlaCustomCallStatusSetSuccess`/`SetFailure` (and the rest of what
// the runtime provides) as they would inside XLA. Only those symbols are exported (`Xla*`,
// `XLA_FFI_*`, `hlojit_*`), not the whole Rust symbol table. `None` off Linux and the BSDs.
fn dynamic_symbols_link_arg() -> Option<String> {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os != "linux" && !os.ends_with("bsd") {
        return None;
    }
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let list = out.join("exported-symbols.list");
    let text = "{\n  Xla*;\n  XLA_FFI_*;\n  hlojit_*;\n};\n";
    if std::fs::read_to_string(&list).ok().as_deref() != Some(text) {
        std::fs::write(&list, text).expect("writing the dynamic symbol list");
    }
    Some(format!("-Wl,--dynamic-list={}", list.display()))
}
