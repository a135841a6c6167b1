//! `jax.export` serializations (`Exported.serialize()`): a FlatBuffer (schema
//! jax/_src/export/serialization.fbs, table `Exported`) wrapping the StableHLO portable
//! artifact, with what the module expects of its caller. What hlojit cannot honour is refused
//! by name: a platform list without `cpu`, more than one device, a calling convention outside
//! the versions JAX itself reads (9 and 10). A module exported for several platforms takes
//! the platform's index as its first argument; it is bound to cpu's index here.

mod flatbuffer;

use super::ir::{Attr, DenseElements, MlirModule, Op, ScalarType, TensorType, Type};
use flatbuffer::Table;
use hlojit_runtime::ElementType;

/// Calling convention versions JAX 0.10 exports and reads.
pub const CALLING_CONVENTIONS: std::ops::RangeInclusive<u16> = 9..=10;

// Field slots of table `Exported` (serialization.fbs, in declaration order).
const FUNCTION_NAME: usize = 1;
const NR_DEVICES_SHORT: usize = 6;
const PLATFORMS: usize = 9;
const ORDERED_EFFECTS: usize = 10;
const MLIR_MODULE_SERIALIZED: usize = 13;
const CALLING_CONVENTION_VERSION: usize = 14;
const USES_GLOBAL_CONSTANTS: usize = 16;
const NR_DEVICES: usize = 18;

/// What a jax.export file declares, and where its module bytes are.
#[derive(Debug)]
pub struct Exported<'a> {
    pub function_name: String,
    pub platforms: Vec<String>,
    pub nr_devices: u32,
    pub calling_convention_version: u16,
    pub module: &'a [u8],
    /// Offset of the module bytes in the file (errors in the module add it).
    pub module_offset: usize,
}

pub fn read_exported(buf: &[u8]) -> Result<Exported<'_>, String> {
    let fb = |e: String| format!("not a readable jax.export serialization: {e}");
    let t = Table::root(buf).map_err(fb)?;
    let function_name = t.string(FUNCTION_NAME).map_err(fb)?.unwrap_or_default();
    let platforms = t.strings(PLATFORMS).map_err(fb)?;
    let nr_devices = match t.u32(NR_DEVICES).map_err(fb)? {
        0 => u32::from(t.u16(NR_DEVICES_SHORT).map_err(fb)?),
        n => n,
    };
    let calling_convention_version = t.u16(CALLING_CONVENTION_VERSION).map_err(fb)?;
    let (module, module_offset) = t.bytes(MLIR_MODULE_SERIALIZED).map_err(fb)?.ok_or("the jax.export serialization holds no module")?;
    let exp = Exported { function_name, platforms, nr_devices, calling_convention_version, module, module_offset };
    if !exp.platforms.iter().any(|p| p == "cpu") {
        return Err(format!("'{}' was exported for platforms [{}], not for cpu (export with platforms=['cpu'])", exp.function_name, exp.platforms.join(", ")));
    }
    if exp.nr_devices != 1 {
        return Err(format!("'{}' was exported for {} devices; hlojit runs jax.export modules on one device", exp.function_name, exp.nr_devices));
    }
    if !CALLING_CONVENTIONS.contains(&exp.calling_convention_version) {
        return Err(format!(
            "'{}' uses jax.export calling convention version {}; versions {} to {} are read",
            exp.function_name,
            exp.calling_convention_version,
            CALLING_CONVENTIONS.start(),
            CALLING_CONVENTIONS.end()
        ));
    }
    if t.vector_len(ORDERED_EFFECTS).map_err(fb)? > 0 {
        return Err(format!("'{}' has ordered effects (token arguments), which hlojit does not run", exp.function_name));
    }
    let _ = USES_GLOBAL_CONSTANTS;
    Ok(exp)
}

/// A module exported for several platforms takes the platform index as a first `tensor<i32>`
/// argument of `main`: it becomes a constant, cpu's index, so the module has the caller-visible
/// parameters alone.
pub fn bind_platform_index(module: &mut MlirModule, exp: &Exported<'_>) -> Result<(), String> {
    if exp.platforms.len() < 2 {
        return Ok(());
    }
    let cpu = exp.platforms.iter().position(|p| p == "cpu").unwrap_or(0) as u64;
    let main = module
        .ops
        .iter_mut()
        .find(|op| op.name == "func.func" && matches!(op.attr("sym_name"), Some(Attr::String(s)) if s == "main"))
        .ok_or("the exported module has no function @main")?;
    let block = main.regions.first_mut().and_then(|r| r.blocks.first_mut()).ok_or("@main has no body")?;
    if block.args.is_empty() {
        return Err("@main of a multi-platform export has no platform index argument".into());
    }
    let (name, _) = block.args.remove(0);
    let ty = TensorType { dims: Vec::new(), bounds: None, element: ScalarType::Element(ElementType::S32) };
    let mut constant = Op { name: "stablehlo.constant".into(), results: vec![(name, 1)], ..Default::default() };
    constant.attrs.insert("value".into(), Attr::Dense(DenseElements { ty: ty.clone(), bits: vec![cpu], resource: None }));
    constant.result_types.push(Type::Tensor(ty));
    block.ops.insert(0, constant);
    if let Some(Attr::Array(parts)) = main.attrs.get_mut("function_type") {
        if let Some(Attr::Array(ins)) = parts.first_mut() {
            if !ins.is_empty() {
                ins.remove(0);
            }
        }
    }
    if let Some(Attr::Array(a)) = main.attrs.get_mut("arg_attrs") {
        if !a.is_empty() {
            a.remove(0);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
