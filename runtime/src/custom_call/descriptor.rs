//! What a typed-FFI call site knows at compile time — the target's name, the element types
//! and dimensions of its arguments and results, its attributes — serialized into a byte
//! string the compiler embeds in the generated code next to the call. The runtime decodes it
//! (once per call site and thread) to build XLA call frames; only the buffer addresses change
//! from call to call.

#![allow(non_upper_case_globals)] // XLA's C constant names, matched in patterns

use crate::ElementType;
use hlojit_ffi::xla::*;

const MAGIC: &[u8; 4] = b"HJFD";
const VERSION: u32 = 1;

/// The element type and dimensions of one argument or result.
#[derive(Clone, Debug, PartialEq)]
pub struct BufferSpec {
    /// An `XLA_FFI_DataType`.
    pub dtype: XLA_FFI_DataType,
    pub dims: Vec<i64>,
}

/// The elements of an array attribute.
#[derive(Clone, Debug, PartialEq)]
pub enum ArrayValue {
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

/// One attribute value, as XLA's FFI passes it.
#[derive(Clone, Debug, PartialEq)]
pub enum AttrValue {
    Bool(bool),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    F32(f32),
    F64(f64),
    Str(String),
    Array(ArrayValue),
    /// A nested dictionary, sorted by name like the top level.
    Dict(Vec<(String, AttrValue)>),
}

impl AttrValue {
    /// The `XLA_FFI_DataType` of a scalar, or `None` for other kinds.
    pub fn scalar_dtype(&self) -> Option<XLA_FFI_DataType> {
        Some(match self {
            AttrValue::Bool(_) => XLA_FFI_DataType_PRED,
            AttrValue::I8(_) => XLA_FFI_DataType_S8,
            AttrValue::I16(_) => XLA_FFI_DataType_S16,
            AttrValue::I32(_) => XLA_FFI_DataType_S32,
            AttrValue::I64(_) => XLA_FFI_DataType_S64,
            AttrValue::U8(_) => XLA_FFI_DataType_U8,
            AttrValue::U16(_) => XLA_FFI_DataType_U16,
            AttrValue::U32(_) => XLA_FFI_DataType_U32,
            AttrValue::U64(_) => XLA_FFI_DataType_U64,
            AttrValue::F32(_) => XLA_FFI_DataType_F32,
            AttrValue::F64(_) => XLA_FFI_DataType_F64,
            _ => return None,
        })
    }

    /// A scalar's value as little-endian bytes (8 at most).
    pub fn scalar_bytes(&self) -> Option<Vec<u8>> {
        Some(match self {
            AttrValue::Bool(v) => vec![*v as u8],
            AttrValue::I8(v) => v.to_le_bytes().to_vec(),
            AttrValue::I16(v) => v.to_le_bytes().to_vec(),
            AttrValue::I32(v) => v.to_le_bytes().to_vec(),
            AttrValue::I64(v) => v.to_le_bytes().to_vec(),
            AttrValue::U8(v) => v.to_le_bytes().to_vec(),
            AttrValue::U16(v) => v.to_le_bytes().to_vec(),
            AttrValue::U32(v) => v.to_le_bytes().to_vec(),
            AttrValue::U64(v) => v.to_le_bytes().to_vec(),
            AttrValue::F32(v) => v.to_le_bytes().to_vec(),
            AttrValue::F64(v) => v.to_le_bytes().to_vec(),
            _ => return None,
        })
    }
}

impl ArrayValue {
    pub fn dtype(&self) -> XLA_FFI_DataType {
        match self {
            ArrayValue::I8(_) => XLA_FFI_DataType_S8,
            ArrayValue::I16(_) => XLA_FFI_DataType_S16,
            ArrayValue::I32(_) => XLA_FFI_DataType_S32,
            ArrayValue::I64(_) => XLA_FFI_DataType_S64,
            ArrayValue::U8(_) => XLA_FFI_DataType_U8,
            ArrayValue::U16(_) => XLA_FFI_DataType_U16,
            ArrayValue::U32(_) => XLA_FFI_DataType_U32,
            ArrayValue::U64(_) => XLA_FFI_DataType_U64,
            ArrayValue::F32(_) => XLA_FFI_DataType_F32,
            ArrayValue::F64(_) => XLA_FFI_DataType_F64,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            ArrayValue::I8(v) => v.len(),
            ArrayValue::I16(v) => v.len(),
            ArrayValue::I32(v) => v.len(),
            ArrayValue::I64(v) => v.len(),
            ArrayValue::U8(v) => v.len(),
            ArrayValue::U16(v) => v.len(),
            ArrayValue::U32(v) => v.len(),
            ArrayValue::U64(v) => v.len(),
            ArrayValue::F32(v) => v.len(),
            ArrayValue::F64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements as little-endian bytes.
    pub fn bytes(&self) -> Vec<u8> {
        fn le<T: Copy, const N: usize>(v: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
            v.iter().flat_map(|&x| f(x)).collect()
        }
        match self {
            ArrayValue::I8(v) => le(v, i8::to_le_bytes),
            ArrayValue::I16(v) => le(v, i16::to_le_bytes),
            ArrayValue::I32(v) => le(v, i32::to_le_bytes),
            ArrayValue::I64(v) => le(v, i64::to_le_bytes),
            ArrayValue::U8(v) => v.clone(),
            ArrayValue::U16(v) => le(v, u16::to_le_bytes),
            ArrayValue::U32(v) => le(v, u32::to_le_bytes),
            ArrayValue::U64(v) => le(v, u64::to_le_bytes),
            ArrayValue::F32(v) => le(v, f32::to_le_bytes),
            ArrayValue::F64(v) => le(v, f64::to_le_bytes),
        }
    }

    fn from_bytes(dtype: XLA_FFI_DataType, bytes: &[u8]) -> Result<ArrayValue, String> {
        fn read<T, const N: usize>(bytes: &[u8], f: fn([u8; N]) -> T) -> Result<Vec<T>, String> {
            #[allow(clippy::manual_is_multiple_of)] // is_multiple_of needs Rust 1.87; the MSRV is 1.80
            if bytes.len() % N != 0 {
                return Err("array attribute bytes do not divide into elements".into());
            }
            Ok(bytes.chunks_exact(N).map(|c| f(c.try_into().expect("chunk of N bytes"))).collect())
        }
        Ok(match dtype {
            XLA_FFI_DataType_S8 => ArrayValue::I8(read(bytes, i8::from_le_bytes)?),
            XLA_FFI_DataType_S16 => ArrayValue::I16(read(bytes, i16::from_le_bytes)?),
            XLA_FFI_DataType_S32 => ArrayValue::I32(read(bytes, i32::from_le_bytes)?),
            XLA_FFI_DataType_S64 => ArrayValue::I64(read(bytes, i64::from_le_bytes)?),
            XLA_FFI_DataType_U8 => ArrayValue::U8(bytes.to_vec()),
            XLA_FFI_DataType_U16 => ArrayValue::U16(read(bytes, u16::from_le_bytes)?),
            XLA_FFI_DataType_U32 => ArrayValue::U32(read(bytes, u32::from_le_bytes)?),
            XLA_FFI_DataType_U64 => ArrayValue::U64(read(bytes, u64::from_le_bytes)?),
            XLA_FFI_DataType_F32 => ArrayValue::F32(read(bytes, f32::from_le_bytes)?),
            XLA_FFI_DataType_F64 => ArrayValue::F64(read(bytes, f64::from_le_bytes)?),
            other => return Err(format!("array attribute of unsupported element type {other}")),
        })
    }
}

/// XLA's FFI number for an element type.
pub fn ffi_dtype(t: ElementType) -> XLA_FFI_DataType {
    use ElementType::*;
    match t {
        Pred => XLA_FFI_DataType_PRED,
        S2 => XLA_FFI_DataType_S2,
        S4 => XLA_FFI_DataType_S4,
        S8 => XLA_FFI_DataType_S8,
        S16 => XLA_FFI_DataType_S16,
        S32 => XLA_FFI_DataType_S32,
        S64 => XLA_FFI_DataType_S64,
        U2 => XLA_FFI_DataType_U2,
        U4 => XLA_FFI_DataType_U4,
        U8 => XLA_FFI_DataType_U8,
        U16 => XLA_FFI_DataType_U16,
        U32 => XLA_FFI_DataType_U32,
        U64 => XLA_FFI_DataType_U64,
        F16 => XLA_FFI_DataType_F16,
        BF16 => XLA_FFI_DataType_BF16,
        F32 => XLA_FFI_DataType_F32,
        F64 => XLA_FFI_DataType_F64,
        F8E5M2 => XLA_FFI_DataType_F8E5M2,
        F8E4M3FN => XLA_FFI_DataType_F8E4M3FN,
        F8E4M3B11FNUZ => XLA_FFI_DataType_F8E4M3B11FNUZ,
        F8E5M2FNUZ => XLA_FFI_DataType_F8E5M2FNUZ,
        F8E4M3FNUZ => XLA_FFI_DataType_F8E4M3FNUZ,
        F8E4M3 => XLA_FFI_DataType_F8E4M3,
        F8E3M4 => XLA_FFI_DataType_F8E3M4,
        F8E8M0FNU => XLA_FFI_DataType_F8E8M0FNU,
        F4E2M1FN => XLA_FFI_DataType_F4E2M1FN,
        C64 => XLA_FFI_DataType_C64,
        C128 => XLA_FFI_DataType_C128,
    }
}

/// Everything about a typed-FFI call site except the buffer addresses.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct CallDescriptor {
    pub target: String,
    pub args: Vec<BufferSpec>,
    pub rets: Vec<BufferSpec>,
    /// Sorted by name.
    pub attrs: Vec<(String, AttrValue)>,
}

const TAG_SCALAR: u8 = 1;
const TAG_STRING: u8 = 2;
const TAG_ARRAY: u8 = 3;
const TAG_DICT: u8 = 4;

impl CallDescriptor {
    /// The byte string the compiler embeds.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::new());
        w.0.extend_from_slice(MAGIC);
        w.u32(VERSION);
        w.str(&self.target);
        for specs in [&self.args, &self.rets] {
            w.u32(specs.len() as u32);
            for s in specs {
                w.i32(s.dtype);
                w.u32(s.dims.len() as u32);
                for &d in &s.dims {
                    w.i64(d);
                }
            }
        }
        w.dict(&self.attrs);
        w.0
    }

    /// Reads what [`encode`](Self::encode) wrote.
    pub fn decode(bytes: &[u8]) -> Result<CallDescriptor, String> {
        let mut r = Reader { bytes, pos: 0 };
        if r.take(4)? != MAGIC {
            return Err("not a custom-call descriptor".into());
        }
        let version = r.u32()?;
        if version != VERSION {
            return Err(format!("custom-call descriptor version {version}, this runtime reads {VERSION}"));
        }
        let target = r.str()?;
        let mut lists = Vec::new();
        for _ in 0..2 {
            let n = r.count()?;
            let mut specs = Vec::with_capacity(n);
            for _ in 0..n {
                let dtype = r.i32()?;
                let rank = r.count()?;
                let dims = (0..rank).map(|_| r.i64()).collect::<Result<_, _>>()?;
                specs.push(BufferSpec { dtype, dims });
            }
            lists.push(specs);
        }
        let attrs = r.dict(0)?;
        if r.pos != bytes.len() {
            return Err("trailing bytes after the custom-call descriptor".into());
        }
        let rets = lists.pop().unwrap_or_default();
        let args = lists.pop().unwrap_or_default();
        Ok(CallDescriptor { target, args, rets, attrs })
    }
}

struct Writer(Vec<u8>);

impl Writer {
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }
    fn dict(&mut self, attrs: &[(String, AttrValue)]) {
        self.u32(attrs.len() as u32);
        for (name, value) in attrs {
            self.str(name);
            self.value(value);
        }
    }
    fn value(&mut self, v: &AttrValue) {
        match v {
            AttrValue::Str(s) => {
                self.0.push(TAG_STRING);
                self.str(s);
            }
            AttrValue::Array(a) => {
                self.0.push(TAG_ARRAY);
                self.i32(a.dtype());
                self.bytes(&a.bytes());
            }
            AttrValue::Dict(d) => {
                self.0.push(TAG_DICT);
                self.dict(d);
            }
            scalar => {
                self.0.push(TAG_SCALAR);
                self.i32(scalar.scalar_dtype().unwrap_or(XLA_FFI_DataType_INVALID));
                self.bytes(&scalar.scalar_bytes().unwrap_or_default());
            }
        }
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

/// Dictionaries nest no deeper than this (a guard against corrupt input).
const MAX_DEPTH: usize = 64;

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end =
            self.pos.checked_add(n).filter(|&e| e <= self.bytes.len()).ok_or("truncated custom-call descriptor")?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn i32(&mut self) -> Result<i32, String> {
        Ok(i32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn i64(&mut self) -> Result<i64, String> {
        Ok(i64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    /// A count no larger than the bytes left could describe.
    fn count(&mut self) -> Result<usize, String> {
        let n = self.u32()? as usize;
        if n > self.bytes.len() - self.pos {
            return Err("custom-call descriptor count exceeds its size".into());
        }
        Ok(n)
    }
    fn blob(&mut self) -> Result<&'a [u8], String> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn str(&mut self) -> Result<String, String> {
        String::from_utf8(self.blob()?.to_vec()).map_err(|_| "custom-call descriptor string is not UTF-8".to_string())
    }
    fn dict(&mut self, depth: usize) -> Result<Vec<(String, AttrValue)>, String> {
        if depth > MAX_DEPTH {
            return Err("custom-call attributes nest too deeply".into());
        }
        let n = self.count()?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let name = self.str()?;
            let value = self.value(depth)?;
            out.push((name, value));
        }
        Ok(out)
    }
    fn value(&mut self, depth: usize) -> Result<AttrValue, String> {
        let tag = self.take(1)?[0];
        match tag {
            TAG_STRING => Ok(AttrValue::Str(self.str()?)),
            TAG_ARRAY => {
                let dtype = self.i32()?;
                Ok(AttrValue::Array(ArrayValue::from_bytes(dtype, self.blob()?)?))
            }
            TAG_DICT => Ok(AttrValue::Dict(self.dict(depth + 1)?)),
            TAG_SCALAR => {
                let dtype = self.i32()?;
                let b = self.blob()?;
                scalar_from_bytes(dtype, b)
            }
            other => Err(format!("unknown attribute tag {other} in a custom-call descriptor")),
        }
    }
}

fn scalar_from_bytes(dtype: XLA_FFI_DataType, b: &[u8]) -> Result<AttrValue, String> {
    fn arr<const N: usize>(b: &[u8]) -> Result<[u8; N], String> {
        b.try_into().map_err(|_| "scalar attribute of the wrong size".to_string())
    }
    Ok(match dtype {
        XLA_FFI_DataType_PRED => AttrValue::Bool(arr::<1>(b)?[0] != 0),
        XLA_FFI_DataType_S8 => AttrValue::I8(i8::from_le_bytes(arr(b)?)),
        XLA_FFI_DataType_S16 => AttrValue::I16(i16::from_le_bytes(arr(b)?)),
        XLA_FFI_DataType_S32 => AttrValue::I32(i32::from_le_bytes(arr(b)?)),
        XLA_FFI_DataType_S64 => AttrValue::I64(i64::from_le_bytes(arr(b)?)),
        XLA_FFI_DataType_U8 => AttrValue::U8(u8::from_le_bytes(arr(b)?)),
        XLA_FFI_DataType_U16 => AttrValue::U16(u16::from_le_bytes(arr(b)?)),
        XLA_FFI_DataType_U32 => AttrValue::U32(u32::from_le_bytes(arr(b)?)),
        XLA_FFI_DataType_U64 => AttrValue::U64(u64::from_le_bytes(arr(b)?)),
        XLA_FFI_DataType_F32 => AttrValue::F32(f32::from_le_bytes(arr(b)?)),
        XLA_FFI_DataType_F64 => AttrValue::F64(f64::from_le_bytes(arr(b)?)),
        other => return Err(format!("scalar attribute of unsupported element type {other}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> CallDescriptor {
        CallDescriptor {
            target: "my_target".into(),
            args: vec![BufferSpec { dtype: XLA_FFI_DataType_F32, dims: vec![2, 3] }],
            rets: vec![
                BufferSpec { dtype: XLA_FFI_DataType_S32, dims: vec![] },
                BufferSpec { dtype: XLA_FFI_DataType_F64, dims: vec![4] },
            ],
            attrs: vec![
                ("a".into(), AttrValue::F32(2.5)),
                ("b".into(), AttrValue::Array(ArrayValue::I64(vec![1, -2, 3]))),
                (
                    "c".into(),
                    AttrValue::Dict(vec![
                        ("x".into(), AttrValue::Bool(true)),
                        ("y".into(), AttrValue::Str("hi".into())),
                    ]),
                ),
                ("d".into(), AttrValue::U8(76)),
            ],
        }
    }

    #[test]
    fn round_trips() {
        let d = sample();
        assert_eq!(CallDescriptor::decode(&d.encode()).unwrap(), d);
    }

    #[test]
    fn rejects_truncated_and_corrupt_input() {
        let bytes = sample().encode();
        for cut in 0..bytes.len() {
            assert!(CallDescriptor::decode(&bytes[..cut]).is_err(), "prefix of {cut} bytes decoded");
        }
        let mut bad = bytes.clone();
        bad[0] = b'X';
        assert!(CallDescriptor::decode(&bad).is_err());
    }
}
