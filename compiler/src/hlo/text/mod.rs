//! HLO text: a hand-written recursive-descent parser for the format XLA and JAX print, and a
//! printer that writes it back.
//!
//! Parsing is pure: any input gives a [`Module`] or an [`Error::Parse`] with the 1-based
//! line and column of the offending token; it never panics. Printing then parsing is lossless:
//! `print_module(&parse_module(&print_module(&m))?)` equals `print_module(&m)`.
//!
//! Files: `cursor` (the lexer), `shape` (shapes and layouts), `literal_text` (constants),
//! `attrs` (attribute values), `parser` (module, computations, instructions), `printer`.

mod attrs;
mod cursor;
mod literal_text;
mod parser;
mod printer;
mod shape;

#[cfg(test)]
mod tests;

use crate::error::Error;
use crate::hlo::module::Module;
use hlojit_runtime::{Literal, Shape};

pub use literal_text::{element_to_text, float_to_text, literal_to_text};
pub use parser::parse_module;
pub use printer::{print_computation, print_instruction, print_module};

/// Parses a shape such as `f32[2,3]{0,1}`, `(s32[], pred[4])` or `bf16[16,128]{1,0:T(8,128)(2,1)}`;
/// the whole text must be the shape.
pub fn parse_shape(text: &str) -> Result<Shape, Error> {
    parser::parse_shape_text(text)
}

/// Parses the text of a constant (what `constant(...)` holds) as a literal of `shape`; the
/// whole text must be the literal.
pub fn parse_literal(text: &str, shape: &Shape) -> Result<Literal, Error> {
    let mut c = cursor::Cursor::new(text);
    let literal = literal_text::parse_literal(&mut c, shape, 0)?;
    if !c.at_end() {
        return Err(c.expected("end of literal"));
    }
    Ok(literal)
}

impl std::str::FromStr for Module {
    type Err = Error;

    fn from_str(text: &str) -> Result<Module, Error> {
        parse_module(text)
    }
}

impl std::fmt::Display for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&print_module(self))
    }
}
