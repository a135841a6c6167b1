//! What a compilation writes for inspection when asked (`--dump DIR` on the command line,
//! `HLOJIT_DUMP_DIR=DIR` or [`CompileOptions::dump`](crate::CompileOptions) for library
//! users), like XLA's `--xla_dump_to`. Files are named after the module:
//!
//! - `<module>.NN.<pass>.hlo`: the HLO before the passes (`00.input`) and after every pass
//!   that changed it, numbered in pipeline order (written by [`crate::passes::pass`]);
//! - `<module>.kernels.txt`: every kernel — the instructions it fuses, the loop nest it walks,
//!   how many threads run it, the bytes it moves and the flops it does ([`kernels`]);
//! - `<module>.buffers.txt`: the buffer assignment of each sequenced function and the peak
//!   temporary memory ([`buffers`]);
//! - `<llvm module>.ir-unoptimized.ll`, `.ir-optimized.ll` and `.s`: each LLVM module's IR
//!   before and after LLVM's optimization and its assembly (a large module compiled in
//!   parallel has one LLVM module per partition, `<module>.partN`, plus the sequencing code).

pub mod buffers;
pub mod kernels;

use crate::error::{Error, Result};
pub use crate::passes::pass::DumpOptions;

/// Writes `contents` to `<dir>/<file>`, creating the directory.
pub fn write(dump: &DumpOptions, file: &str, contents: &[u8]) -> Result<()> {
    let path = dump.dir.join(file);
    std::fs::create_dir_all(&dump.dir)
        .and_then(|_| std::fs::write(&path, contents))
        .map_err(|e| Error::Internal(format!("{}: cannot write the dump: {e}", path.display())))
}

/// A module (or other) name as a file name: path separators and other unusual characters
/// become `_`.
pub fn file_name(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect()
}
