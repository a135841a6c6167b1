//! The HLO text parser on arbitrary bytes: it must return a module or an error, never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = hlojit_compiler::hlo::text::parse_module(text);
    }
});
