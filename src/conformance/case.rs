//! One case of the conformance corpus: `case.json`, HLO text, `.npy` inputs and outputs.

use hlojit_runtime::{npy, ArrayLiteral, ElementType};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// An array file of a case with the HLO element type it holds.
#[derive(Clone, Debug)]
pub struct ArrayFile {
    pub file: String,
    pub element_type: ElementType,
    pub dims: Vec<i64>,
}

#[derive(Clone, Debug)]
pub struct Case {
    pub dir: PathBuf,
    pub name: String,
    pub group: String,
    pub inputs: Vec<ArrayFile>,
    pub outputs: Vec<ArrayFile>,
    pub rtol: f64,
    pub atol: f64,
    pub exact: bool,
    /// Devices the case runs on (collective cases); 1 otherwise.
    pub replicas: usize,
}

impl Case {
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
        })
    }

    pub fn read_array(&self, a: &ArrayFile) -> Result<ArrayLiteral, String> {
        let lit = npy::read(&self.dir.join(&a.file), Some(a.element_type)).map_err(|e| e.to_string())?;
        if lit.dims() != a.dims.as_slice() {
            return Err(format!("{}: shape {:?} differs from case.json's {:?}", a.file, lit.dims(), a.dims));
        }
        Ok(lit)
    }
}
