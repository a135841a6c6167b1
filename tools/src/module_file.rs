//! Reading HLO module files with a bound on their size, so that `hlojit run /dev/zero` is an
//! error rather than a process that grows until the kernel kills it.

use hlojit::hlo::Module;
use hlojit::parse_module_bytes;
use hlojit_runtime::limits::{describe_bytes, MAX_MODULE_TEXT_BYTES};
use std::io::Read;
use std::path::Path;

/// The bytes of a module file: at most [`MAX_MODULE_TEXT_BYTES`].
pub fn read_module_bytes(path: &Path) -> Result<Vec<u8>, String> {
    let at = |e: std::io::Error| format!("{}: {e}", path.display());
    let file = std::fs::File::open(path).map_err(at)?;
    let too_large = || {
        format!(
            "{}: larger than {}, the most hlojit reads as module text",
            path.display(),
            describe_bytes(MAX_MODULE_TEXT_BYTES as u128)
        )
    };
    if file.metadata().map_err(at)?.len() > MAX_MODULE_TEXT_BYTES {
        return Err(too_large());
    }
    // Devices and pipes report no length: read one byte past the limit to notice.
    let mut bytes = Vec::new();
    file.take(MAX_MODULE_TEXT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(at)?;
    if bytes.len() as u64 > MAX_MODULE_TEXT_BYTES {
        return Err(too_large());
    }
    Ok(bytes)
}

/// The text of a module file: at most [`MAX_MODULE_TEXT_BYTES`], UTF-8.
pub fn read_module_text(path: &Path) -> Result<String, String> {
    let bytes = read_module_bytes(path)?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        let column = valid.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
        format!(
            "{}:{line}:{column}: the module text is not UTF-8 (byte {} is invalid)",
            path.display(),
            valid.len()
        )
    })
}

/// A module file, parsed; errors start with the path. The kind of module (HLO text,
/// StableHLO text, MLIR bytecode, jax.export) is told by its content, not its name.
pub fn read_module(path: &Path) -> Result<Module, String> {
    let bytes = read_module_bytes(path)?;
    parse_module_bytes(&bytes).map_err(|e| format!("{}:{e}{}", path.display(), way_out(path, &bytes)))
}

/// For a module that did not parse and looks like a binary HloModuleProto (XLA's
/// `--xla_dump_hlo_as_proto`, `.pb`), how to turn it into text hlojit reads.
fn way_out(path: &Path, bytes: &[u8]) -> String {
    let binary = bytes.iter().take(256).any(|&b| b == 0 || (b < 0x20 && !b"\t\r\n".contains(&b)));
    let proto_name = path.extension().is_some_and(|e| e == "pb" || e == "proto" || e == "binpb");
    if !(binary || proto_name) {
        return String::new();
    }
    format!(
        "\n  hlojit reads HLO text and StableHLO (MLIR) text. If this is a serialized HloModuleProto, \
         print it as text with jaxlib:\n    python3 -c \"import sys; from jax._src.lib import xla_client as x; \
         print(x.hlo.HloModule.from_serialized_hlo_module_proto(open(sys.argv[1], 'rb').read()).to_string())\" {} > module.hlo\n  \
         (from JAX directly: jax.jit(f, keep_unused=True).lower(*args).as_text(dialect=\"hlo\"))",
        path.display()
    )
}
