//! What the unit tests of the passes share.

use crate::error::Result;
use crate::hlo::text::parse_module;
use crate::hlo::Module;

/// Parses `text`, runs `pass` on it with the verifier before and after, and returns whether
/// the pass changed the module and the module.
pub fn run_verified(text: &str, pass: fn(&mut Module) -> Result<bool>) -> (bool, Module) {
    let mut m = parse_module(text).unwrap();
    crate::hlo::verify_module(&m).unwrap();
    let changed = pass(&mut m).unwrap();
    crate::hlo::verify_module(&m).unwrap();
    (changed, m)
}
