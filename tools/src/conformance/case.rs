//! One case of the conformance corpus: `case.json`, HLO text, `.npy` inputs and outputs.

use hlojit_runtime::{npy, ArrayLiteral, ElementType};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// An array file of a case with the HLO element type it holds.
#[derive(Clone, Debug)]
pub struct ArrayFile {
    /// The `.npy` file's name, relative to the case directory.
    pub file: String,
    /// The element type the file holds (raw bits for types NumPy lacks; see
    /// [`hlojit_runtime::npy`]).
    pub element_type: ElementType,
    /// The dimensions `case.json` declares; [`Case::read_array`] checks the file against them.
    pub dims: Vec<i64>,
}

/// A corpus case as `case.json` describes it.
#[derive(Clone, Debug)]
pub struct Case {
    /// The case directory.
    pub dir: PathBuf,
    /// The case's name.
    pub name: String,
    /// The case's group, by which reports tally results.
    pub group: String,
    /// The argument leaves, in depth-first order over the entry's parameters.
    pub inputs: Vec<ArrayFile>,
    /// XLA:CPU's result leaves, in depth-first order.
    pub outputs: Vec<ArrayFile>,
    /// Relative tolerance of float comparisons (`|got - want| <= atol + rtol * |want|`).
    pub rtol: f64,
    /// Absolute tolerance of float comparisons.
    pub atol: f64,
    /// Compare bitwise (any NaN matching any NaN) instead of within tolerances; the default.
    pub exact: bool,
    /// Devices the case runs on (collective cases); 1 otherwise.
    pub replicas: usize,
    /// The results are unique only up to unit-modulus factors (`"unique_up_to_phase": true`):
    /// complex outputs compare by magnitude (see `compare::compare_up_to_phase`).
    pub unique_up_to_phase: bool,
}

impl Case {
    /// Reads `dir/case.json`. Missing numbers take defaults (`rtol`/`atol` 0, `exact` true,
    /// `replicas` 1); an unreadable file, invalid JSON, missing `inputs`/`outputs` or an
    /// unknown dtype is an error naming the file.
    pub fn load(dir: &Path) -> Result<Case, String> {
        let path = dir.join("case.json");
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let json: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let arrays = |key: &str| -> Result<Vec<ArrayFile>, String> {
            json[key]
                .as_array()
                .ok_or_else(|| format!("{}: no {key}", path.display()))?
                .iter()
                .map(|a| {
                    let dtype = a["dtype"].as_str().unwrap_or("");
                    Ok(ArrayFile {
                        file: a["file"].as_str().unwrap_or("").to_string(),
                        element_type: ElementType::from_name(dtype).ok_or_else(|| format!("unknown dtype {dtype}"))?,
                        dims: a["shape"].as_array().map(|d| d.iter().filter_map(Value::as_i64).collect()).unwrap_or_default(),
                    })
                })
                .collect()
        };
        Ok(Case {
            dir: dir.to_path_buf(),
            name: json["name"].as_str().unwrap_or_default().to_string(),
            group: json["group"].as_str().unwrap_or_default().to_string(),
            inputs: arrays("inputs")?,
            outputs: arrays("outputs")?,
            rtol: json["rtol"].as_f64().unwrap_or(0.0),
            atol: json["atol"].as_f64().unwrap_or(0.0),
            exact: json["exact"].as_bool().unwrap_or(true),
            replicas: json["replicas"].as_u64().unwrap_or(1) as usize,
            unique_up_to_phase: json["unique_up_to_phase"].as_bool().unwrap_or(false),
        })
    }

    /// Reads one of the case's arrays as its declared element type; an error if the file
    /// cannot be read or its dimensions differ from the declared ones.
    pub fn read_array(&self, a: &ArrayFile) -> Result<ArrayLiteral, String> {
        let lit = npy::read(&self.dir.join(&a.file), Some(a.element_type)).map_err(|e| e.to_string())?;
        if lit.dims() != a.dims.as_slice() {
            return Err(format!("{}: shape {:?} differs from case.json's {:?}", a.file, lit.dims(), a.dims));
        }
        Ok(lit)
    }
}
