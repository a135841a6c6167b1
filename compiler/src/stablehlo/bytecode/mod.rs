//! StableHLO portable artifacts: MLIR bytecode (format versions 1 to 6) holding the VHLO
//! dialect, as `jax.export` and PJRT clients write them, read into the same generic op tree
//! the MLIR text parser produces.
//!
//! Files: `reader` (varints, strings, sections), `sections` (header, string table, dialects
//! and op names, properties, attribute/type offsets), `attr_type` (builtin and VHLO attribute
//! and type encodings), `ir_section` (ops, regions, value numbering), `vhlo` (VHLO ops to
//! StableHLO ones, the table of VHLO ops).

mod attr_type;
mod ir_section;
mod reader;
mod sections;
mod vhlo;

#[cfg(test)]
pub(crate) mod tests;

use super::ir::MlirModule;
pub use reader::BcError;

/// Reads a StableHLO portable artifact. Errors name the byte offset and, inside an op, the op.
pub fn parse_bytecode(bytes: &[u8]) -> Result<MlirModule, BcError> {
    let header = sections::read_header(bytes)?;
    match vhlo::producer_version(&header.producer) {
        Some(v) if v > vhlo::NEWEST => {
            return Err(BcError {
                offset: 5,
                message: format!(
                    "written by {} ({}.{}.{}), newer than the newest StableHLO version read ({}.{}.{})",
                    header.producer, v.0, v.1, v.2, vhlo::NEWEST.0, vhlo::NEWEST.1, vhlo::NEWEST.2
                ),
            })
        }
        Some(_) => {}
        None => {
            return Err(BcError {
                offset: 5,
                message: format!("producer '{}' is not StableHLO (a portable artifact's producer is StableHLO_vX.Y.Z)", header.producer),
            })
        }
    }
    let [strings, dialects, attr_types, attr_type_offsets, ir, _, _, _, properties] = header.sections;
    let (Some(strings), Some(dialects), Some(attr_types), Some(attr_type_offsets), Some(ir)) = (strings, dialects, attr_types, attr_type_offsets, ir) else {
        return Err(BcError { offset: 0, message: "a required section is missing".into() });
    };
    let strings = sections::read_strings(strings)?;
    let d = sections::read_dialects(dialects, &strings, header.version)?;
    let properties = sections::read_properties(properties)?;
    let (attr_entries, type_entries) = sections::read_attr_type_offsets(attr_type_offsets, attr_types, d.names.len())?;
    let at = attr_type::AttrTypes::new(&strings, &d.names, attr_entries, type_entries);
    let mut ir_reader = ir_section::IrReader::new(header.version, &d.ops, &properties, at);
    ir_reader.read_module(ir)
}
