//! Reading and writing NumPy `.npy` files as literals. Types NumPy lacks (bf16, f8, sub-byte
//! integers) travel as unsigned integers of the same width holding the raw bits, as JAX's
//! tooling stores them; the caller says which element type such a file holds. Files that
//! `np.save` writes from ml_dtypes arrays (`bfloat16` as `<V2`, `float8_e4m3fn` as `<V1`,
//! `float8_e5m2` as `<f1`: raw bytes of the element's width) are read the same way.
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
use crate::physical::{for_each_index, PhysicalLayout};
use crate::shape::Layout;
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
    /// Raw bytes (ml_dtypes' bf16 or f8 saved with `np.save`) read without an element type.
    #[error(".npy dtype '{0}' is raw bytes (ml_dtypes' bfloat16 or float8 as np.save writes them): say which element type it holds")]
    RawBits(String),
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

/// The element width of a descriptor that ml_dtypes' types are saved with: `V<n>` (raw bytes)
/// and `f1` (NumPy has no 1-byte float of its own).
fn raw_bits_width(descr: &str) -> Option<usize> {
    match descr.trim_start_matches(['<', '|', '=']) {
        "V1" | "f1" => Some(1),
        "V2" => Some(2),
        _ => None,
    }
}

/// Types NumPy lacks, whose values only travel as raw bits.
fn holds_raw_bits(t: ElementType) -> bool {
    t.is_float() && matches!(descr_for(t), "<u2" | "|u1")
}

/// The unsigned type of a raw element width, which sizes the data.
fn raw_storage(width: usize) -> ElementType {
    if width == 1 { ElementType::U8 } else { ElementType::U16 }
}

/// Parses `.npy` bytes. With `want`, the data is taken as that element type (it must be the
/// type's own dtype or its raw-bits storage dtype); without, the dtype's natural type is used.
/// Fortran-order files are transposed into row-major order; header versions 1 to 3 are read.
///
/// The header must be the dictionary NumPy writes — exactly the keys `descr`, `fortran_order`
/// and `shape`, a dtype string, `True` or `False`, a tuple of non-negative integers — and the
/// data exactly as long as the shape says.
///
/// # Errors
/// [`NpyError::Format`] for a malformed file, [`NpyError::Dtype`] for big-endian and
/// non-numeric dtypes, [`NpyError::Mismatch`] when `want` does not fit the dtype.
pub fn parse(bytes: &[u8], want: Option<ElementType>) -> Result<ArrayLiteral, NpyError> {
    let format = NpyError::Format;
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(format("missing magic string".into()));
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (header_len, start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12),
        2 | 3 => return Err(format("truncated header".into())),
        _ => return Err(format(format!("unknown format version {major}.{minor}"))),
    };
    let header = bytes.get(start..start + header_len).ok_or_else(|| format("truncated header".into()))?;
    let header = std::str::from_utf8(header).map_err(|_| format("header is not UTF-8".into()))?;
    let header = parse_header(header).map_err(|m| format(format!("bad header: {m}")))?;
    let descr = header.descr;
    if descr.starts_with('>') {
        return Err(NpyError::Dtype(descr));
    }
    let (native, element_type) = match (native_type(&descr), raw_bits_width(&descr), want) {
        (Some(native), _, None) => (native, native),
        (Some(native), _, Some(t)) if t == native || descr_for(t) == descr || (t.is_pred() && native == ElementType::U8) => {
            (native, t)
        }
        (_, Some(width), Some(t)) if holds_raw_bits(t) && t.byte_size() == width => (raw_storage(width), t),
        (None, Some(_), None) => return Err(NpyError::RawBits(descr)),
        (None, None, _) => return Err(NpyError::Dtype(descr)),
        (_, _, Some(t)) => return Err(NpyError::Mismatch { descr, wanted: t }),
    };
    let dims = header.shape;
    // Checks the shape against the size limits before any arithmetic on it.
    let size = PhysicalLayout::for_layout(&dims, &Layout::row_major(dims.len()))
        .map_err(|e| format(format!("shape {dims:?}: {e}")))?
        .storage_bytes(native) as usize;
    let data = &bytes[start + header_len..];
    if data.len() != size {
        return Err(format(format!("the shape {dims:?} of {descr} takes {size} data bytes, the file has {}", data.len())));
    }
    if !header.fortran_order || dims.len() < 2 {
        return ArrayLiteral::from_bytes(element_type, &dims, data).map_err(|e| format(e.to_string()));
    }
    // Fortran order: the first index varies fastest.
    let n = native.byte_size();
    let mut out = ArrayLiteral::try_zeros(element_type, &dims).map_err(|e| format(e.to_string()))?;
    let mut col_strides = vec![1i64; dims.len()];
    for d in 1..dims.len() {
        col_strides[d] = col_strides[d - 1] * dims[d - 1];
    }
    let dst = out.bytes_mut();
    for_each_index(&dims, |linear, index| {
        let src: i64 = index.iter().zip(&col_strides).map(|(i, s)| i * s).sum();
        let src = src as usize * n;
        dst[linear * n..(linear + 1) * n].copy_from_slice(&data[src..src + n]);
    });
    Ok(out)
}

/// What a `.npy` header says.
struct Header {
    descr: String,
    fortran_order: bool,
    shape: Vec<i64>,
}

/// Parses the header dictionary, `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`
/// followed by padding and a newline, as NumPy's reader does: exactly these three keys.
fn parse_header(text: &str) -> Result<Header, String> {
    let mut c = HeaderCursor { rest: text };
    c.expect("{")?;
    let (mut descr, mut fortran_order, mut shape) = (None, None, None);
    while !c.eat("}") {
        let key = c.string()?;
        c.expect(":")?;
        let duplicate = match key.as_str() {
            "descr" => descr.replace(c.string()?).is_some(),
            "fortran_order" => fortran_order.replace(c.boolean()?).is_some(),
            "shape" => shape.replace(c.shape()?).is_some(),
            other => return Err(format!("unexpected key '{other}' (a .npy header has descr, fortran_order and shape)")),
        };
        if duplicate {
            return Err(format!("key '{key}' appears twice"));
        }
        if !c.eat(",") {
            c.expect("}")?;
            break;
        }
    }
    if !c.rest.trim_matches([' ', '\n', '\t', '\r', '\0']).is_empty() {
        return Err(format!("unexpected text after the dictionary: {:?}", c.excerpt()));
    }
    Ok(Header {
        descr: descr.ok_or("no 'descr'")?,
        fortran_order: fortran_order.ok_or("no 'fortran_order'")?,
        shape: shape.ok_or("no 'shape'")?,
    })
}

/// Reads the header's few kinds of Python literal.
struct HeaderCursor<'a> {
    rest: &'a str,
}

impl HeaderCursor<'_> {
    fn eat(&mut self, token: &str) -> bool {
        self.rest = self.rest.trim_start();
        match self.rest.strip_prefix(token) {
            Some(rest) => {
                self.rest = rest;
                true
            }
            None => false,
        }
    }

    fn expect(&mut self, token: &str) -> Result<(), String> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(format!("expected '{token}' at {:?}", self.excerpt()))
        }
    }

    fn excerpt(&self) -> String {
        self.rest.trim().chars().take(20).collect()
    }

    /// A quoted string without escapes (NumPy's keys and dtype strings have none).
    fn string(&mut self) -> Result<String, String> {
        self.rest = self.rest.trim_start();
        let quote = self.rest.chars().next().filter(|&q| q == '\'' || q == '"');
        let quote = quote.ok_or_else(|| format!("expected a quoted string at {:?}", self.excerpt()))?;
        let body = &self.rest[1..];
        let end = body.find(quote).ok_or("unterminated string")?;
        let value = &body[..end];
        if value.contains('\\') {
            return Err(format!("unexpected escape in {value:?}"));
        }
        self.rest = &body[end + 1..];
        Ok(value.to_string())
    }

    fn boolean(&mut self) -> Result<bool, String> {
        if self.eat("True") {
            Ok(true)
        } else if self.eat("False") {
            Ok(false)
        } else {
            Err(format!("expected True or False at {:?}", self.excerpt()))
        }
    }

    /// `()`, `(3,)`, `(2, 3)`: non-negative integers (old Pythons wrote an `L` suffix).
    fn shape(&mut self) -> Result<Vec<i64>, String> {
        self.expect("(")?;
        let mut dims = Vec::new();
        while !self.eat(")") {
            self.rest = self.rest.trim_start();
            let digits = self.rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return Err(format!("expected a dimension size at {:?}", self.excerpt()));
            }
            let text = &self.rest[..digits];
            dims.push(text.parse::<i64>().map_err(|_| format!("dimension size {text} is too large"))?);
            self.rest = &self.rest[digits..];
            self.eat("L");
            if !self.eat(",") {
                if dims.len() == 1 {
                    // `(3)` is a number in Python, not a tuple.
                    return Err(format!("a one-dimensional shape is written ({text},)"));
                }
                self.expect(")")?;
                break;
            }
        }
        Ok(dims)
    }
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

    /// ml_dtypes' arrays as `np.save` writes them (headers copied from its output).
    #[test]
    fn ml_dtypes_raw_bytes() {
        let bf16 = file("{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }", &[0xc0, 0x3f, 0x00, 0xc0]);
        let want = ArrayLiteral::from_f64s(ElementType::BF16, &[2], &[1.5, -2.0]).unwrap();
        assert_eq!(parse(&bf16, Some(ElementType::BF16)).unwrap(), want);
        let e4m3 = file("{'descr': '<V1', 'fortran_order': False, 'shape': (1,), }", &[0x38]);
        assert_eq!(parse(&e4m3, Some(ElementType::F8E4M3FN)).unwrap().get_f64(0), 1.0);
        let e5m2 = file("{'descr': '<f1', 'fortran_order': False, 'shape': (1,), }", &[0x3c]);
        assert_eq!(parse(&e5m2, Some(ElementType::F8E5M2)).unwrap().get_f64(0), 1.0);
        assert!(parse(&bf16, None).unwrap_err().to_string().contains("say which element type"));
        for wrong in [ElementType::U16, ElementType::F16, ElementType::F8E5M2] {
            assert!(matches!(parse(&bf16, Some(wrong)), Err(NpyError::Mismatch { .. })), "{wrong:?}");
        }
    }

    /// A version 1.0 file with this header text and data.
    fn file(header: &str, data: &[u8]) -> Vec<u8> {
        let mut header = header.to_string();
        header.push('\n');
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out
    }

    fn error(header: &str, data: &[u8]) -> String {
        parse(&file(header, data), None).unwrap_err().to_string()
    }

    #[test]
    fn headers_must_be_what_numpy_writes() {
        let ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
        assert_eq!(parse(&file(ok, &[0; 8]), None).unwrap().dims(), &[2]);
        let cases = [
            (",,,", "expected '{'"),
            ("{'descr': '<f4', 'fortran_order': maybe, 'shape': (2,), }", "expected True or False"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': ((2,),), }", "expected a dimension size"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2), }", "one-dimensional shape is written (2,)"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", "expected a dimension size"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", "unexpected key 'extra'"),
            ("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "'descr' appears twice"),
            ("{'descr': '<f4', 'shape': (2,)}", "no 'fortran_order'"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", "unexpected text after the dictionary"),
        ];
        for (header, expected) in cases {
            let e = error(header, &[0; 8]);
            assert!(e.contains(expected), "{header}: {e}");
        }
    }

    #[test]
    fn data_must_fill_the_shape_exactly() {
        let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
        assert!(error(header, &[0; 20]).contains("takes 24 data bytes, the file has 20"));
        assert!(error(header, &[0; 28]).contains("takes 24 data bytes, the file has 28"));
        // Element counts that overflow, or pass the limits, are errors before any allocation.
        let huge = "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }";
        assert!(error(huge, &[]).contains("more than hlojit's limit"), "{}", error(huge, &[]));
        let too_big = "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }";
        assert!(error(too_big, &[]).contains("too large"));
    }

    #[test]
    fn unsupported_dtypes_and_versions_are_named() {
        assert_eq!(error("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", &[0; 8]), "unsupported .npy dtype '|O'");
        assert_eq!(error("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", &[0; 4]), "unsupported .npy dtype '>f4'");
        let mut v9 = to_bytes(&ArrayLiteral::scalar(1.0f32));
        v9[6] = 9;
        assert!(parse(&v9, None).unwrap_err().to_string().contains("unknown format version 9.0"));
        let whole = to_bytes(&ArrayLiteral::scalar(1.0f32));
        assert!(parse(&whole[..whole.len() - 80], None).unwrap_err().to_string().contains("truncated header"));
    }

    #[test]
    fn fortran_order_is_read_in_logical_order() {
        // [[1, 2, 3], [4, 5, 6]] stored column by column.
        let data: Vec<u8> = [1i32, 4, 2, 5, 3, 6].iter().flat_map(|v| v.to_le_bytes()).collect();
        let a = parse(&file("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }", &data), None).unwrap();
        assert_eq!(a.as_slice::<i32>().unwrap(), &[1, 2, 3, 4, 5, 6]);
    }
}
