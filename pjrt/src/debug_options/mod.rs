//! `compiler_options` as XLA checks them. `jax.jit(f, compiler_options={...})` reaches the
//! plugin as the `env_option_overrides` of the CompileOptionsProto (JAX itself takes out the
//! effort levels it sets on the build options); XLA applies each one to its DebugOptions and
//! refuses a name DebugOptions has no field for, or a value of the wrong type, with the
//! errors below (xla/pjrt `CompileOptions::ApplyOption`). hlojit has none of XLA's debug knobs
//! to set, so a valid option is accepted and has no effect, but a typo is still an error.

mod fields;

use crate::error::{PjrtError, Result};

/// One override's value (`xla.OptionOverrideProto`'s oneof).
#[derive(Clone, Debug, PartialEq)]
pub enum OptionValue {
    String(String),
    Bool(bool),
    Int(i64),
    Double(f64),
}

impl std::fmt::Display for OptionValue {
    /// As `absl::StrCat` prints it in XLA's message (a bool as 1 or 0).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OptionValue::String(s) => f.write_str(s),
            OptionValue::Bool(b) => write!(f, "{}", u8::from(*b)),
            OptionValue::Int(i) => write!(f, "{i}"),
            OptionValue::Double(d) => write!(f, "{d}"),
        }
    }
}

/// Whether XLA would accept `key = value` as a compile option.
pub fn check(key: &str, value: &OptionValue) -> Result<()> {
    let Ok(k) = fields::FIELDS.binary_search_by(|(name, _, _)| (*name).cmp(key)) else {
        return Err(PjrtError::invalid(format!("No such compile option: '{key}'")));
    };
    let (_, repeated, kind) = fields::FIELDS[k];
    let ok = match value {
        OptionValue::Bool(_) => kind == "bool",
        // A string is parsed as the field's type (ApplyOptionFromString).
        OptionValue::String(s) => match kind {
            "string" => true,
            "int32" => s.trim().parse::<i32>().is_ok(),
            // XLA parses into an int for int64 fields too.
            "int64" => s.trim().parse::<i32>().is_ok(),
            "float" => s.trim().parse::<f32>().is_ok(),
            "bool" => s == "True" || s == "False",
            _ => false,
        },
        OptionValue::Int(_) => !repeated && (kind == "int32" || kind == "int64"),
        OptionValue::Double(_) => !repeated && (kind == "float" || kind == "double"),
    };
    if ok {
        Ok(())
    } else {
        Err(PjrtError::invalid(format!("While setting option {key}, '{value}' is not a valid {kind} value.")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(r: Result<()>) -> String {
        r.unwrap_err().message
    }

    #[test]
    fn checks_names_and_types_as_xla_does() {
        assert!(fields::FIELDS.windows(2).all(|w| w[0].0 < w[1].0), "the table is sorted");
        assert!(check("xla_embed_ir_in_executable", &OptionValue::Bool(true)).is_ok());
        assert!(check("xla_embed_ir_in_executable", &OptionValue::String("True".into())).is_ok());
        assert!(check("xla_dump_to", &OptionValue::String("/tmp/x".into())).is_ok());
        assert!(check("xla_backend_optimization_level", &OptionValue::Int(2)).is_ok());
        assert!(check("xla_backend_optimization_level", &OptionValue::String("2".into())).is_ok());
        assert!(message(check("invalid_key", &OptionValue::String("v".into()))).contains("No such compile option: 'invalid_key'"));
        assert!(message(check("exec_time_compilation_effort", &OptionValue::Double(0.0))).contains("No such compile option"));
        let m = message(check("xla_embed_ir_in_executable", &OptionValue::String("invalid_value".into())));
        assert!(m.contains("While setting option xla_embed_ir_in_executable, 'invalid_value' is not a valid bool value."), "{m}");
        assert!(message(check("xla_backend_optimization_level", &OptionValue::Bool(true))).contains("'1' is not a valid int32 value."));
    }
}
