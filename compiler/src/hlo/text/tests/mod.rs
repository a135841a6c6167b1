//! Tests of the HLO text parser and printer.

mod corpus;
