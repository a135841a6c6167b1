//! StableHLO in: MLIR text as `jax.jit(f).lower(x).as_text()` prints it, converted to HLO as
//! XLA's own translation does, so everything after parsing is shared with HLO text.
//!
//! Files: `cursor` (characters with line:column), `types`, `attrs`, `parser` (module, generic
//! ops, regions), `pretty` (the ops' custom assembly forms), `ir` (the generic op tree),
//! `convert/` (op tree to HLO).

mod attrs;
pub mod bytecode;
pub mod export;
mod convert;
mod cursor;
pub mod ir;
mod parser;
mod pretty;
mod types;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod manual_tests;

use crate::error::Error;
use crate::hlo::text::parse_module;
use crate::hlo::Module;

/// What a module file holds, told by its content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// HLO text (`HloModule ...`).
    HloText,
    /// StableHLO / MLIR text (`module @... {`, `func.func ...`).
    MlirText,
    /// MLIR bytecode (`ML\xEFR` magic): a StableHLO portable artifact.
    MlirBytecode,
    /// A `jax.export` serialization (a flatbuffer wrapping MLIR bytecode).
    JaxExport,
}

/// Tells the kind of a module from its first bytes.
pub fn detect(bytes: &[u8]) -> InputKind {
    if bytes.starts_with(b"ML\xEFR") {
        return InputKind::MlirBytecode;
    }
    // Leading comment lines may be longer than the window looked at (file tests keep their
    // expected values there): skip them first.
    let mut start = 0;
    loop {
        while start < bytes.len() && bytes[start].is_ascii_whitespace() {
            start += 1;
        }
        if !bytes[start..].starts_with(b"//") {
            break;
        }
        start = bytes[start..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |k| start + k + 1);
    }
    let window = &bytes[start..bytes.len().min(start + 4096)];
    let text = std::str::from_utf8(window).unwrap_or_else(|e| {
        std::str::from_utf8(&window[..e.valid_up_to()]).unwrap_or("")
    });
    if text.is_empty() && !window.is_empty() {
        return InputKind::JaxExport;
    }
    let mut rest = text.trim_start();
    // Skip comments and attribute aliases before the first op.
    loop {
        if rest.starts_with("//") {
            rest = rest.split_once('\n').map_or("", |x| x.1).trim_start();
        } else if rest.starts_with("#loc") || rest.starts_with("#sdy") {
            rest = rest.split_once('\n').map_or("", |x| x.1).trim_start();
        } else {
            break;
        }
    }
    if rest.starts_with("module") || rest.starts_with("func.func") || rest.starts_with("\"builtin.module\"") {
        InputKind::MlirText
    } else if bytes.len() >= 8 && bytes.iter().take(64).any(|&b| b == 0) {
        InputKind::JaxExport
    } else {
        InputKind::HloText
    }
}

/// Converts StableHLO MLIR text to HLO text (what the HLO parser then reads).
pub fn mlir_text_to_hlo_text(text: &str) -> Result<String, Error> {
    let module = parser::parse_mlir_text(text)?;
    let converted = convert::convert_module(&module).map_err(|e| located(e.loc, e.message))?;
    Ok(converted.text)
}

/// Parses StableHLO MLIR text into an HLO module.
pub fn parse_mlir_text(text: &str) -> Result<Module, Error> {
    convert_and_parse(&parser::parse_mlir_text(text)?)
}

/// The op tree (from text or bytecode) to HLO, errors pointing at the MLIR op.
fn convert_and_parse(module: &ir::MlirModule) -> Result<Module, Error> {
    let converted = convert::convert_module(module).map_err(|e| located(e.loc, e.message))?;
    parse_module(&converted.text).map_err(|e| match e {
        // A problem found in the converted text: point at the MLIR op it came from.
        Error::Parse { message, line, .. } => {
            let instr = converted.text.lines().nth(line.saturating_sub(1)).unwrap_or("").trim().to_string();
            let name = instr.trim_start_matches("ROOT ").split(" = ").next().unwrap_or("").to_string();
            match converted.locations.get(&name) {
                Some((op, loc)) => located(*loc, format!("{op}: {message}")),
                None => Error::Internal(format!("converted HLO line {line} ('{instr}'): {message}")),
            }
        }
        other => other,
    })
}

/// Any module file: HLO text, StableHLO text, bytecode or jax.export, by content.
pub fn parse_any(bytes: &[u8]) -> Result<Module, Error> {
    match detect(bytes) {
        InputKind::HloText | InputKind::MlirText => {
            let text = std::str::from_utf8(bytes).map_err(|e| {
                let valid = &bytes[..e.valid_up_to()];
                let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
                let column = valid.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
                Error::Parse { line, column, message: format!("the module text is not UTF-8 (byte {} is invalid)", valid.len()) }
            })?;
            if detect(bytes) == InputKind::MlirText {
                parse_mlir_text(text)
            } else {
                parse_module(text)
            }
        }
        InputKind::MlirBytecode => parse_bytecode(bytes),
        InputKind::JaxExport => parse_jax_export(bytes),
    }
}

/// Parses a StableHLO portable artifact (MLIR bytecode of the VHLO dialect) into an HLO module.
pub fn parse_bytecode(bytes: &[u8]) -> Result<Module, Error> {
    let module = bytecode::parse_bytecode(bytes).map_err(|e| Error::Bytecode { offset: e.offset, message: e.message })?;
    convert_and_parse(&module)
}

/// Parses a `jax.export` serialization: checks what it declares, reads the portable artifact
/// inside. Byte offsets in errors are offsets in the whole file.
pub fn parse_jax_export(bytes: &[u8]) -> Result<Module, Error> {
    let exp = export::read_exported(bytes).map_err(|message| Error::Bytecode { offset: 0, message })?;
    let base = exp.module_offset;
    let shift = |e: bytecode::BcError| Error::Bytecode { offset: base + e.offset, message: format!("in the module of jax.export '{}': {}", exp.function_name, e.message) };
    let mut module = bytecode::parse_bytecode(exp.module).map_err(shift)?;
    export::bind_platform_index(&mut module, &exp).map_err(|message| Error::Bytecode { offset: base, message })?;
    convert_and_parse(&module).map_err(|e| match e {
        Error::Bytecode { offset, message } => Error::Bytecode { offset: base + offset, message },
        other => other,
    })
}

fn located(loc: ir::Loc, message: String) -> Error {
    match loc {
        ir::Loc::Text { line, column } => Error::Parse { line, column, message },
        ir::Loc::Bytecode { offset } => Error::Bytecode { offset, message },
        other => Error::Parse { line: 0, column: 0, message: format!("{other}: {message}") },
    }
}
