//! Unit tests of shape inference, one module per op family.
