//! parse → verify → compile (all HLO passes and LLVM code generation) on small modules: any
//! module that parses must compile or give an error, never panic or crash.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Small modules only: compile time grows with the text, and bugs show on small ones.
    if data.len() > 4096 {
        return;
    }
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(module) = hlojit::parse_module(text) else { return };
    // Arrays beyond a few million elements make compiling (constant folding) slow, not buggy.
    let _ = hlojit::Executable::compile(&module, &hlojit::CompileOptions::default());
});
