//! Facts about HLO that both the passes and code generation need. They live below both so
//! that a pass decides with exactly the rule codegen later applies, without importing codegen.

pub mod buffers;
pub mod cost;
pub mod custom_calls;
pub mod rng;
pub mod row_values;
