//! Tools around hlojit that library users do not need: the conformance-corpus runner, the
//! file-test runner and the benchmark driver, used by the `hlojit` command line and by the
//! integration tests. Keeping them here keeps clap, rand, serde_json and rayon out of the
//! dependencies of programs that only compile and run HLO.

pub mod bench;
pub mod conformance;
pub mod distributed;
pub mod feeds;
pub mod filecheck;
pub mod filetest;
pub mod fuzz_diff;
pub mod fuzzgen;
pub mod graph;
pub mod input_files;
pub mod module_file;
pub mod peaks;
pub mod profile;
pub mod progress;
pub mod roofline;
pub mod runtime_library;
pub mod stream;
pub mod summary;
mod numpy_random;
