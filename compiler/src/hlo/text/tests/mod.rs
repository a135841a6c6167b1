//! Tests of the HLO text parser and printer.

mod corpus;
mod errors;
mod robustness;
mod values;
