//! The verifier on every module the parser accepts, and the printer: a module that verifies
//! prints as text that parses and verifies again.
#![no_main]
use hlojit_compiler::hlo::text::{parse_module, print_module};
use hlojit_compiler::hlo::verifier::verify_module;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(module) = parse_module(text) else { return };
    if verify_module(&module).is_ok() {
        let printed = print_module(&module);
        let again = parse_module(&printed).unwrap_or_else(|e| panic!("printed module does not parse: {e}\n{printed}"));
        if let Err(e) = verify_module(&again) {
            panic!("printed module does not verify: {e}\n{printed}");
        }
    }
});
