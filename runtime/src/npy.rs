//! Reading and writing NumPy `.npy` files as literals. Types NumPy lacks (bf16, f8, sub-byte
//! integers) travel as unsigned integers of the same width holding the raw bits, as JAX's
//! tooling stores them; the caller says which element type such a file holds.
//!
//! ```rust
//! use hlojit_runtime::{npy, ArrayLiteral, ElementType};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let a = ArrayLiteral::from_slice(&[2, 3], &[1i32, 2, 3, 4, 5, 6])?;
//! let bytes = npy::to_bytes(&a);
//! assert_eq!(npy::parse(&bytes, None)?, a);
//!
//! // bf16 travels as raw u16 bits: say which type the file holds to get it back.
//! let b = ArrayLiteral::from_f64s(ElementType::BF16, &[2], &[1.5, -2.0])?;
//! assert_eq!(npy::descr_for(ElementType::BF16), "<u2");
//! let back = npy::parse(&npy::to_bytes(&b), Some(ElementType::BF16))?;
//! assert_eq!(back, b);
//! assert_eq!(npy::parse(&npy::to_bytes(&b), None)?.element_type(), ElementType::U16);
//!
//! // Files work the same way.
//! let path = std::env::temp_dir().join(format!("hlojit-npy-doc-{}.npy", std::process::id()));
//! npy::write(&path, &a)?;
//! assert_eq!(npy::read(&path, None)?, a);
//! # std::fs::remove_file(&path)?;
//! # Ok(())
//! # }
//! ```

use crate::element_type::ElementType;
use crate::literal::ArrayLiteral;
use crate::physical::for_each_index;
use std::path::Path;
use thiserror::Error;

/// Why a `.npy` file could not be read or written.
#[derive(Debug, Error)]
pub enum NpyError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The bytes are not a well-formed `.npy` file (bad magic, header or data length); says
    /// what is wrong (and, from [`read`], in which file).
    #[error("not a .npy file: {0}")]
    Format(String),
    /// A dtype descriptor hlojit does not read (big-endian, strings, records, ...).
    #[error("unsupported .npy dtype '{0}'")]
    Dtype(String),
    /// The element type asked for is neither the file's dtype nor stored with it.
    #[error(".npy dtype '{descr}' cannot hold {wanted} values")]
    Mismatch {
        /// The file's dtype descriptor (`<f4`, `|u1`, ...).
        descr: String,
        /// The element type asked for.
        wanted: ElementType,
    },
}

const MAGIC: &[u8] = b"\x93NUMPY";

/// The NumPy dtype descriptor a literal of this element type is stored with.
pub fn descr_for(t: ElementType) -> &'static str {
    use ElementType::*;
    match t {
        Pred => "|b1",
        S2 | S4 | S8 => "|i1",
        S16 => "<i2",
        S32 => "<i4",
        S64 => "<i8",
        U2 | U4 | U8 | F8E5M2 | F8E4M3FN | F8E4M3B11FNUZ | F8E5M2FNUZ | F8E4M3FNUZ | F8E4M3 | F8E3M4
        | F8E8M0FNU | F4E2M1FN => "|u1",
        U16 | BF16 => "<u2",
        U32 => "<u4",
        U64 => "<u8",
        F16 => "<f2",
        F32 => "<f4",
        F64 => "<f8",
        C64 => "<c8",
        C128 => "<c16",
    }
}

/// The element type a NumPy dtype descriptor natively denotes.
fn native_type(descr: &str) -> Option<ElementType> {
    use ElementType::*;
    let d = descr.trim_start_matches(['<', '|', '=']);
    Some(match d {
        "b1" | "?" => Pred,
        "i1" => S8,
        "i2" => S16,
        "i4" => S32,
        "i8" => S64,
        "u1" => U8,
        "u2" => U16,
        "u4" => U32,
        "u8" => U64,
        "f2" => F16,
        "f4" => F32,
        "f8" => F64,
        "c8" => C64,
        "c16" => C128,
        _ => return None,
    })
}

/// Parses `.npy` bytes. With `want`, the data is taken as that element type (it must be the
/// type's own dtype or its raw-bits storage dtype); without, the dtype's natural type is used.
/// Fortran-order files are transposed into row-major order; header versions 1 to 3 are read.
///
/// # Errors
/// [`NpyError::Format`] for a malformed file, [`NpyError::Dtype`] for big-endian and
/// non-numeric dtypes, [`NpyError::Mismatch`] when `want` does not fit the dtype.
pub fn parse(bytes: &[u8], want: Option<ElementType>) -> Result<ArrayLiteral, NpyError> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(NpyError::Format("missing magic string".into()));
    }
    let major = bytes[6];
    let (header_len, start) = if major == 1 {
        (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10)
    } else {
        if bytes.len() < 12 {
            return Err(NpyError::Format("truncated header".into()));
        }
        (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
    };
    let header = bytes
        .get(start..start + header_len)
        .ok_or_else(|| NpyError::Format("truncated header".into()))?;
    let header = std::str::from_utf8(header).map_err(|_| NpyError::Format("header is not UTF-8".into()))?;
    let descr = dict_value(header, "descr")
        .and_then(quoted)
        .ok_or_else(|| NpyError::Format("no descr".into()))?;
    let fortran = dict_value(header, "fortran_order").map(|s| s.starts_with("True")).unwrap_or(false);
    let shape_text = dict_value(header, "shape").ok_or_else(|| NpyError::Format("no shape".into()))?;
    let dims: Vec<i64> = shape_text
        .trim_start_matches('(')
        .split(')')
        .next()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<i64>().map_err(|_| NpyError::Format(format!("bad shape {shape_text}"))))
        .collect::<Result<_, _>>()?;
    if descr.starts_with('>') {
        return Err(NpyError::Dtype(descr));
    }
    let native = native_type(&descr).ok_or_else(|| NpyError::Dtype(descr.clone()))?;
    let element_type = match want {
        None => native,
        Some(t) if t == native || descr_for(t) == descr || (t.is_pred() && native == ElementType::U8) => t,
        Some(t) => return Err(NpyError::Mismatch { descr, wanted: t }),
    };
    let data = &bytes[start + header_len..];
    let count: i64 = dims.iter().product();
    let size = count as usize * native.byte_size();
    if data.len() < size {
        return Err(NpyError::Format(format!("expected {size} data bytes, found {}", data.len())));
    }
    let data = &data[..size];
    if !fortran || dims.len() < 2 {
        return ArrayLiteral::from_bytes(element_type, &dims, data).map_err(|e| NpyError::Format(e.to_string()));
    }
    // Fortran order: the first index varies fastest.
    let n = native.byte_size();
    let mut out = vec![0u8; size];
    let mut col_strides = vec![1i64; dims.len()];
    for d in 1..dims.len() {
        col_strides[d] = col_strides[d - 1] * dims[d - 1];
    }
    for_each_index(&dims, |linear, index| {
        let src: i64 = index.iter().zip(&col_strides).map(|(i, s)| i * s).sum();
        let src = src as usize * n;
        out[linear * n..(linear + 1) * n].copy_from_slice(&data[src..src + n]);
    });
    ArrayLiteral::from_bytes(element_type, &dims, &out).map_err(|e| NpyError::Format(e.to_string()))
}

fn dict_value<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let pos = header.find(&format!("'{key}'")).or_else(|| header.find(&format!("\"{key}\"")))?;
    let rest = &header[pos + key.len() + 2..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    Some(rest)
}

/// The text between the quotes that open `s`.
fn quoted(s: &str) -> Option<String> {
    let q = s.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let rest = &s[1..];
    Some(rest[..rest.find(q)?].to_string())
}

/// Serialises an array as `.npy` (version 1.0, C order, dtype from [`descr_for`]), with the
/// header padded so that the data starts at a 64-byte offset.
pub fn to_bytes(array: &ArrayLiteral) -> Vec<u8> {
    let shape = match array.dims() {
        [] => "()".to_string(),
        [d] => format!("({d},)"),
        dims => format!("({})", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let mut header = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}",
        descr_for(array.element_type())
    );
    // Pad so that the data starts on a 64-byte boundary, header ending in a newline.
    let unpadded = MAGIC.len() + 4 + header.len() + 1;
    header.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    header.push('\n');
    let mut out = Vec::with_capacity(MAGIC.len() + 4 + header.len() + array.bytes().len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(array.bytes());
    out
}

/// Reads a `.npy` file; `want` as in [`parse`].
///
/// # Errors
/// [`NpyError::Io`] when the file cannot be read, otherwise as [`parse`] (format errors name
/// the file).
pub fn read(path: &Path, want: Option<ElementType>) -> Result<ArrayLiteral, NpyError> {
    let bytes = std::fs::read(path).map_err(|source| NpyError::Io { path: path.display().to_string(), source })?;
    parse(&bytes, want).map_err(|e| match e {
        NpyError::Format(m) => NpyError::Format(format!("{}: {m}", path.display())),
        other => other,
    })
}

/// Writes `array` as a `.npy` file (see [`to_bytes`]), replacing any file at `path`.
///
/// # Errors
/// [`NpyError::Io`] when the file cannot be written.
pub fn write(path: &Path, array: &ArrayLiteral) -> Result<(), NpyError> {
    std::fs::write(path, to_bytes(array)).map_err(|source| NpyError::Io { path: path.display().to_string(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let a = ArrayLiteral::from_slice(&[2, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let b = parse(&to_bytes(&a), None).unwrap();
        assert_eq!(a, b);
        let bf = ArrayLiteral::from_f64s(ElementType::BF16, &[2], &[1.5, -2.0]).unwrap();
        let back = parse(&to_bytes(&bf), Some(ElementType::BF16)).unwrap();
        assert_eq!(bf, back);
        assert!(parse(&to_bytes(&bf), Some(ElementType::F32)).is_err());
    }
}
