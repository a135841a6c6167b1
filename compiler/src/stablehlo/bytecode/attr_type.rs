//! Attribute and type entries, decoded on first use and kept: the builtin dialect's encodings
//! (mlir/include/mlir/IR/BuiltinDialectBytecode.td) and VHLO's (stablehlo/dialect/
//! VhloBytecode.cpp), into the op tree's `Attr` / `Type`. Entries written as assembly text
//! (no custom encoding) go through the MLIR text parser.
//!
//! VHLO values take the form the text parser gives the matching StableHLO ones: enums become
//! `Attr::Enum`, `vhlo.tensor_v1` dense elements, function types the `[inputs, results]` pair
//! of `function_type`. Entries the converter never reads (locations, shardings) are not decoded.

mod sdy;

use super::reader::{BcError, BcResult, Reader};
use super::sections::Entry;
use crate::stablehlo::attrs::bytes_to_bits;
use crate::stablehlo::ir::{Attr, DenseElements, ScalarType, TensorType, Type};
use hlojit_runtime::ElementType;
use std::collections::BTreeMap;

/// Nesting limit for attributes and types inside one another (cycles in garbage input end here).
const MAX_DEPTH: usize = 64;

/// A type as VHLO has it: an op-tree type, or a function type (only inside `function_type`).
#[derive(Clone, Debug)]
pub enum BType {
    Ir(Type),
    Function(Vec<Type>, Vec<Type>),
}

pub struct AttrTypes<'a> {
    strings: &'a [String],
    dialects: &'a [String],
    attr_entries: Vec<Entry<'a>>,
    type_entries: Vec<Entry<'a>>,
    attrs: Vec<Option<Attr>>,
    types: Vec<Option<BType>>,
}

impl<'a> AttrTypes<'a> {
    pub fn new(strings: &'a [String], dialects: &'a [String], attr_entries: Vec<Entry<'a>>, type_entries: Vec<Entry<'a>>) -> AttrTypes<'a> {
        let (na, nt) = (attr_entries.len(), type_entries.len());
        AttrTypes { strings, dialects, attr_entries, type_entries, attrs: vec![None; na], types: vec![None; nt] }
    }

    pub fn attr(&mut self, index: u64, at: &Reader<'_>) -> BcResult<Attr> {
        self.attr_depth(index, at, 0)
    }

    pub fn ty(&mut self, index: u64, at: &Reader<'_>) -> BcResult<Type> {
        match self.btype(index, at, 0)? {
            BType::Ir(t) => Ok(t),
            BType::Function(..) => at.error("a function type where a value type belongs"),
        }
    }

    fn attr_depth(&mut self, index: u64, at: &Reader<'_>, depth: usize) -> BcResult<Attr> {
        let i = usize::try_from(index).unwrap_or(usize::MAX);
        if i >= self.attrs.len() {
            return at.error(format!("attribute index {index} out of range ({} attributes)", self.attrs.len()));
        }
        if let Some(a) = &self.attrs[i] {
            return Ok(a.clone());
        }
        if depth > MAX_DEPTH {
            return at.error("attributes nested too deeply (a cycle?)");
        }
        let entry = self.attr_entries[i];
        let mut r = entry.data;
        let dialect = self.dialects.get(entry.dialect).map(String::as_str).unwrap_or("");
        let a = if !entry.custom {
            asm_attr(&mut r)?
        } else {
            match dialect {
                "builtin" => self.builtin_attr(&mut r, depth)?,
                "vhlo" => self.vhlo_attr(&mut r, depth)?,
                "sdy" => self.sdy_attr(&mut r, depth)?,
                other => Attr::Opaque(format!("#{other}")),
            }
        };
        self.attrs[i] = Some(a.clone());
        Ok(a)
    }

    fn btype(&mut self, index: u64, at: &Reader<'_>, depth: usize) -> BcResult<BType> {
        let i = usize::try_from(index).unwrap_or(usize::MAX);
        if i >= self.types.len() {
            return at.error(format!("type index {index} out of range ({} types)", self.types.len()));
        }
        if let Some(t) = &self.types[i] {
            return Ok(t.clone());
        }
        if depth > MAX_DEPTH {
            return at.error("types nested too deeply (a cycle?)");
        }
        let entry = self.type_entries[i];
        let mut r = entry.data;
        let dialect = self.dialects.get(entry.dialect).map(String::as_str).unwrap_or("");
        let t = if !entry.custom {
            BType::Ir(asm_type(&mut r)?)
        } else {
            match dialect {
                "builtin" => self.builtin_type(&mut r, depth)?,
                "vhlo" => self.vhlo_type(&mut r, depth)?,
                other => BType::Ir(Type::Other(format!("!{other}"))),
            }
        };
        self.types[i] = Some(t.clone());
        Ok(t)
    }

    fn sub_attr(&mut self, r: &mut Reader<'_>, depth: usize) -> BcResult<Attr> {
        let i = r.varint()?;
        self.attr_depth(i, r, depth + 1)
    }

    fn sub_type(&mut self, r: &mut Reader<'_>, depth: usize) -> BcResult<Type> {
        let i = r.varint()?;
        match self.btype(i, r, depth + 1)? {
            BType::Ir(t) => Ok(t),
            BType::Function(..) => r.error("a function type where a value type belongs"),
        }
    }

    fn string(&self, r: &mut Reader<'_>) -> BcResult<String> {
        let i = r.varint()?;
        super::sections::string_at(self.strings, r, i)
    }

    fn attr_list(&mut self, r: &mut Reader<'_>, depth: usize) -> BcResult<Vec<Attr>> {
        let n = r.bounded_count("attributes")?;
        (0..n).map(|_| self.sub_attr(r, depth)).collect()
    }

    fn type_list(&mut self, r: &mut Reader<'_>, depth: usize) -> BcResult<Vec<Type>> {
        let n = r.bounded_count("types")?;
        (0..n).map(|_| self.sub_type(r, depth)).collect()
    }

    fn svarints(r: &mut Reader<'_>) -> BcResult<Vec<i64>> {
        let n = r.bounded_count("integers")?;
        (0..n).map(|_| r.svarint()).collect()
    }

    /// Builtin attributes, by their code's position in BuiltinDialectAttributes.
    fn builtin_attr(&mut self, r: &mut Reader<'_>, depth: usize) -> BcResult<Attr> {
        let at = r.offset();
        let code = r.varint()?;
        Ok(match code {
            0 => Attr::Array(self.attr_list(r, depth)?),
            1 => {
                let n = r.bounded_count("named attributes")?;
                let mut m = BTreeMap::new();
                for _ in 0..n {
                    let key = match self.sub_attr(r, depth)? {
                        Attr::String(s) => s,
                        other => return r.error(format!("dictionary key is not a string: {other:?}")),
                    };
                    m.insert(key, self.sub_attr(r, depth)?);
                }
                Attr::Dict(m)
            }
            2 => Attr::String(self.string(r)?),
            3 => {
                let s = self.string(r)?;
                self.sub_type(r, depth)?;
                Attr::String(s)
            }
            4 => match self.sub_attr(r, depth)? {
                Attr::String(s) => Attr::Symbol(s),
                other => return r.error(format!("symbol reference is not a string: {other:?}")),
            },
            6 => Attr::Type(self.sub_type(r, depth)?),
            7 => Attr::Unit,
            8 => {
                let t = self.sub_type(r, depth)?;
                let (st, width) = scalar_of(&t).ok_or(BcError { offset: at, message: format!("integer attribute of type {t:?}") })?;
                let v = read_apint(r, width)?;
                Attr::Int(int_value(v, st, width), Some(st))
            }
            9 => {
                let t = self.sub_type(r, depth)?;
                let (st, width) = scalar_of(&t).ok_or(BcError { offset: at, message: format!("float attribute of type {t:?}") })?;
                let v = read_apint(r, width)?;
                Attr::Float(float_value(v, st), Some(st))
            }
            10..=15 => Attr::Opaque("loc".into()),
            _ => Attr::Opaque(format!("builtin attribute {code}")),
        })
    }

    fn builtin_type(&mut self, r: &mut Reader<'_>, depth: usize) -> BcResult<BType> {
        let at = r.offset();
        let code = r.varint()?;
        let e = |t: ElementType| BType::Ir(Type::Scalar(ScalarType::Element(t)));
        Ok(match code {
            0 => {
                let ws = r.varint()?;
                let (width, signedness) = (ws >> 2, ws & 3);
                let t = match (width, signedness) {
                    (1, _) => ElementType::Pred,
                    (8, 2) => ElementType::U8,
                    (16, 2) => ElementType::U16,
                    (32, 2) => ElementType::U32,
                    (64, 2) => ElementType::U64,
                    (8, _) => ElementType::S8,
                    (16, _) => ElementType::S16,
                    (32, _) => ElementType::S32,
                    (64, _) => ElementType::S64,
                    _ => return Ok(BType::Ir(Type::Other(format!("i{width}")))),
                };
                e(t)
            }
            1 => BType::Ir(Type::Scalar(ScalarType::Index)),
            2 => {
                let ins = self.type_list(r, depth)?;
                let outs = self.type_list(r, depth)?;
                BType::Function(ins, outs)
            }
            3 => e(ElementType::BF16),
            4 => e(ElementType::F16),
            5 => e(ElementType::F32),
            6 => e(ElementType::F64),
            9 => BType::Ir(Type::Scalar(complex_of(&self.sub_type(r, depth)?, at)?)),
            12 => BType::Ir(Type::Scalar(ScalarType::None)),
            13 => {
                let dims = Self::svarints(r)?;
                let el = self.sub_type(r, depth)?;
                BType::Ir(tensor_type(dims, el, None, at)?)
            }
            15 => BType::Ir(Type::Tuple(self.type_list(r, depth)?)),
            _ => BType::Ir(Type::Other(format!("builtin type {code}"))),
        })
    }

    /// VHLO attributes, by VhloBytecode.cpp's AttributeCode.
    fn vhlo_attr(&mut self, r: &mut Reader<'_>, depth: usize) -> BcResult<Attr> {
        let at = r.offset();
        let code = r.varint()?;
        let enum_of = |r: &mut Reader<'_>, names: &[&str], what: &str| -> BcResult<Attr> {
            let at = r.offset();
            let v = r.varint()?;
            match usize::try_from(v).ok().and_then(|i| names.get(i)) {
                Some(n) => Ok(Attr::Enum(n.to_string())),
                None => Err(BcError { offset: at, message: format!("unknown {what} value {v}") }),
            }
        };
        Ok(match code {
            1 => Attr::Array(self.attr_list(r, depth)?),
            2 => match r.varint()? {
                0 => Attr::Bool(false),
                1 => Attr::Bool(true),
                v => return Err(BcError { offset: at, message: format!("boolean attribute of value {v}") }),
            },
            3 => enum_of(r, &["EQ", "NE", "GE", "GT", "LE", "LT"], "comparison direction")?,
            4 => enum_of(r, &["NOTYPE", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"], "comparison type")?,
            // The converter reads api_version as a number, as the text form prints it.
            5 => {
                let v = r.varint()?;
                if v > 4 {
                    return Err(BcError { offset: at, message: format!("unknown custom-call API version {v}") });
                }
                Attr::Int(i128::from(v), Some(ScalarType::Element(ElementType::S32)))
            }
            6 => {
                let n = r.bounded_count("dictionary entries")?;
                let mut m = BTreeMap::new();
                for _ in 0..n {
                    let key = match self.sub_attr(r, depth)? {
                        Attr::String(s) => s,
                        other => return r.error(format!("dictionary key is not a string: {other:?}")),
                    };
                    m.insert(key, self.sub_attr(r, depth)?);
                }
                Attr::Dict(m)
            }
            7 => enum_of(r, &["FFT", "IFFT", "RFFT", "IRFFT"], "FFT type")?,
            8 => {
                let t = self.sub_type(r, depth)?;
                let (st, width) = scalar_of(&t).ok_or(BcError { offset: at, message: format!("float attribute of type {t:?}") })?;
                let v = read_apint(r, width)?;
                Attr::Float(float_value(v, st), Some(st))
            }
            9 => {
                let t = self.sub_type(r, depth)?;
                let (st, width) = scalar_of(&t).ok_or(BcError { offset: at, message: format!("integer attribute of type {t:?}") })?;
                let v = read_apint(r, width)?;
                Attr::Int(int_value(v, st, width), Some(st))
            }
            10 => {
                let mut fields = BTreeMap::new();
                fields.insert("output_tuple_indices".into(), Attr::DenseArray(Self::svarints(r)?));
                fields.insert("operand_index".into(), Attr::Int(i128::from(r.svarint()?), None));
                fields.insert("operand_tuple_indices".into(), Attr::DenseArray(Self::svarints(r)?));
                Attr::Dialect { name: "output_operand_alias".into(), fields }
            }
            11 => enum_of(r, &["DEFAULT", "HIGH", "HIGHEST"], "precision")?,
            12 => enum_of(r, &["DEFAULT", "THREE_FRY", "PHILOX"], "RNG algorithm")?,
            13 => enum_of(r, &["", "UNIFORM", "NORMAL"], "RNG distribution")?,
            14 => Attr::String(self.string(r)?),
            15 => {
                let t = self.sub_type(r, depth)?;
                let Type::Tensor(tt) = t else {
                    return Err(BcError { offset: at, message: format!("tensor attribute of type {t:?}") });
                };
                let n = r.count()?;
                let blob = r.bytes(n)?;
                Attr::Dense(dense(tt, blob, at)?)
            }
            16 => enum_of(r, &["TRANSPOSE_INVALID", "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"], "transpose")?,
            17 => {
                let i = r.varint()?;
                match self.btype(i, r, depth + 1)? {
                    BType::Ir(t) => Attr::Type(t),
                    // `function_type` as the text parser has it: [inputs, results].
                    BType::Function(ins, outs) => Attr::Array(vec![
                        Attr::Array(ins.into_iter().map(Attr::Type).collect()),
                        Attr::Array(outs.into_iter().map(Attr::Type).collect()),
                    ]),
                }
            }
            18 => {
                let bounds = Self::svarints(r)?;
                let mut fields = BTreeMap::new();
                fields.insert("bounds".into(), Attr::DenseArray(bounds));
                Attr::Dialect { name: "type_extensions".into(), fields }
            }
            19 => enum_of(r, &["DEFAULT", "HIGHEST", "TOLERANCE"], "result accuracy mode")?,
            // Result accuracy, shardy axes and meshes: nothing the converter reads.
            20..=25 => Attr::Opaque(format!("vhlo attribute {code}")),
            _ => return Err(BcError { offset: at, message: format!("unknown VHLO attribute code {code} (written by a newer StableHLO?)") }),
        })
    }

    /// VHLO types, by VhloBytecode.cpp's TypeCode.
    fn vhlo_type(&mut self, r: &mut Reader<'_>, depth: usize) -> BcResult<BType> {
        use ElementType as E;
        let at = r.offset();
        let code = r.varint()?;
        let e = |t: ElementType| BType::Ir(Type::Scalar(ScalarType::Element(t)));
        Ok(match code {
            0 => e(E::Pred),
            1 => BType::Ir(Type::Scalar(complex_of(&self.sub_type(r, depth)?, at)?)),
            2 => e(E::BF16),
            3 => e(E::F16),
            4 => e(E::F32),
            5 => e(E::F64),
            6 => e(E::F8E4M3FN),
            7 => e(E::F8E5M2),
            8 => {
                let ins = self.type_list(r, depth)?;
                let outs = self.type_list(r, depth)?;
                BType::Function(ins, outs)
            }
            9 => BType::Ir(Type::Scalar(ScalarType::Index)),
            10 => e(E::S4),
            11 => e(E::S8),
            12 => e(E::S16),
            13 => e(E::S32),
            14 => e(E::S64),
            15 => e(E::U4),
            16 => e(E::U8),
            17 => e(E::U16),
            18 => e(E::U32),
            19 => e(E::U64),
            20 | 21 => {
                let encoding = if code == 21 { Some(self.sub_attr(r, depth)?) } else { None };
                let dims = Self::svarints(r)?;
                let el = self.sub_type(r, depth)?;
                BType::Ir(tensor_type(dims, el, encoding, at)?)
            }
            22 => BType::Ir(Type::Token),
            23 => BType::Ir(Type::Tuple(self.type_list(r, depth)?)),
            27 => e(E::F8E4M3FNUZ),
            28 => e(E::F8E5M2FNUZ),
            29 => e(E::F8E4M3B11FNUZ),
            31 => e(E::S2),
            32 => e(E::U2),
            33 => BType::Ir(Type::Scalar(ScalarType::None)),
            35 => e(E::F8E4M3),
            36 => e(E::F8E3M4),
            37 => e(E::F4E2M1FN),
            40 => e(E::F8E8M0FNU),
            24 | 30 => BType::Ir(Type::Other("quantized type".into())),
            25 => BType::Ir(Type::Other("unranked tensor".into())),
            26 => BType::Ir(Type::Other("!vhlo.witness".into())),
            34 => BType::Ir(Type::Other("tf32".into())),
            38 => BType::Ir(Type::Other("f6E2M3FN".into())),
            39 => BType::Ir(Type::Other("f6E3M2FN".into())),
            41 => BType::Ir(Type::Other("buffer type".into())),
            42 => BType::Ir(Type::Other("future type".into())),
            _ => return Err(BcError { offset: at, message: format!("unknown VHLO type code {code} (written by a newer StableHLO?)") }),
        })
    }
}

fn asm_attr(r: &mut Reader<'_>) -> BcResult<Attr> {
    let at = r.offset();
    let text = String::from_utf8_lossy(r.nul_string()?).into_owned();
    let mut c = crate::stablehlo::cursor::Cursor::new(&text);
    crate::stablehlo::attrs::parse_attr(&mut c).map_err(|e| BcError { offset: at, message: format!("attribute '{text}': {e}") })
}

fn asm_type(r: &mut Reader<'_>) -> BcResult<Type> {
    let at = r.offset();
    let text = String::from_utf8_lossy(r.nul_string()?).into_owned();
    let mut c = crate::stablehlo::cursor::Cursor::new(&text);
    crate::stablehlo::types::parse_type(&mut c).map_err(|e| BcError { offset: at, message: format!("type '{text}': {e}") })
}

fn complex_of(t: &Type, at: usize) -> BcResult<ScalarType> {
    match t {
        Type::Scalar(ScalarType::Element(ElementType::F32)) => Ok(ScalarType::Element(ElementType::C64)),
        Type::Scalar(ScalarType::Element(ElementType::F64)) => Ok(ScalarType::Element(ElementType::C128)),
        other => Err(BcError { offset: at, message: format!("complex type of {other:?} (complex<f32> and complex<f64> are read)") }),
    }
}

fn scalar_of(t: &Type) -> Option<(ScalarType, u32)> {
    match t {
        Type::Scalar(ScalarType::Index) => Some((ScalarType::Index, 64)),
        Type::Scalar(st @ ScalarType::Element(e)) if !e.is_complex() => Some((*st, e.bit_width() as u32)),
        _ => None,
    }
}

/// `readAPIntWithKnownWidth`: a byte up to 8 bits, a signed varint up to 64 (holding the
/// zero-extended bit pattern); wider values are not read.
fn read_apint(r: &mut Reader<'_>, width: u32) -> BcResult<u64> {
    if width <= 8 {
        Ok(u64::from(r.byte()?))
    } else if width <= 64 {
        Ok(r.svarint()? as u64)
    } else {
        r.error(format!("{width}-bit integers are not read"))
    }
}

fn int_value(bits: u64, st: ScalarType, width: u32) -> i128 {
    let signed = match st {
        ScalarType::Element(e) => e.is_signed_int(),
        _ => true,
    };
    if width >= 64 {
        return if signed { i128::from(bits as i64) } else { i128::from(bits) };
    }
    let masked = bits & ((1u64 << width) - 1);
    if signed && width > 1 && masked >> (width - 1) == 1 {
        i128::from(masked) - (1i128 << width)
    } else {
        i128::from(masked)
    }
}

fn float_value(bits: u64, st: ScalarType) -> f64 {
    match st {
        ScalarType::Element(ElementType::F64) => f64::from_bits(bits),
        ScalarType::Element(ElementType::F32) => f64::from(f32::from_bits(bits as u32)),
        ScalarType::Element(ElementType::BF16) => f64::from(f32::from_bits((bits as u32) << 16)),
        ScalarType::Element(ElementType::F16) => half_to_f64(bits as u16),
        _ => f64::NAN,
    }
}

fn half_to_f64(h: u16) -> f64 {
    let sign = if h >> 15 == 1 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1F);
    let man = f64::from(h & 0x3FF);
    sign * match exp {
        0 => man * 2f64.powi(-24),
        31 if man == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1.0 + man / 1024.0) * 2f64.powi(exp - 15),
    }
}

fn tensor_type(dims: Vec<i64>, element: Type, encoding: Option<Attr>, at: usize) -> BcResult<Type> {
    let element = match element {
        Type::Scalar(s) => s,
        other => return Err(BcError { offset: at, message: format!("tensor of {other:?}") }),
    };
    let dims: Vec<Option<i64>> = dims.into_iter().map(|d| if d < 0 { None } else { Some(d) }).collect();
    let bounds = match encoding {
        Some(Attr::Dialect { name, fields }) if name == "type_extensions" => match fields.get("bounds") {
            Some(Attr::DenseArray(b)) => Some(b.iter().map(|&x| if x < 0 { None } else { Some(x) }).collect()),
            _ => None,
        },
        _ => None,
    };
    Ok(Type::Tensor(TensorType { dims, bounds, element }))
}

/// `vhlo.tensor_v1` data: the raw little-endian elements (a single one for a splat); i1 data
/// may be bit-packed (eight per byte, or 0xFF for a splat of true), as VHLO writes it.
fn dense(ty: TensorType, blob: &[u8], at: usize) -> BcResult<DenseElements> {
    let e = match ty.element {
        ScalarType::Element(e) => e,
        // Layouts of custom calls: `dense<[1, 0]> : tensor<2xindex>`, 64-bit storage.
        ScalarType::Index => ElementType::S64,
        ScalarType::None => return Err(BcError { offset: at, message: "tensor constant of none elements".into() }),
    };
    let count = ty
        .dims
        .iter()
        .try_fold(1u64, |acc, d| d.and_then(|d| u64::try_from(d).ok()).and_then(|d| acc.checked_mul(d)))
        .ok_or(BcError { offset: at, message: "tensor constant with a dynamic or too large shape".into() })?;
    let bits = if e == ElementType::Pred {
        let packed_len = count.div_ceil(8);
        if blob == [0xFF] {
            vec![1]
        } else if blob.len() as u64 == packed_len && blob.len() as u64 != count {
            (0..count as usize).map(|i| u64::from((blob[i / 8] >> (i % 8)) & 1)).collect()
        } else {
            blob.iter().map(|&b| u64::from(b != 0)).collect()
        }
    } else {
        bytes_to_bits(blob, e).ok_or(BcError { offset: at, message: format!("{} bytes of data do not hold whole {} elements", blob.len(), e.name()) })?
    };
    let per = if e.is_complex() { 2 } else { 1 };
    if bits.len() != per && bits.len() as u64 != count.saturating_mul(per as u64) {
        return Err(BcError { offset: at, message: format!("tensor constant has {} values for {count} elements", bits.len() / per) });
    }
    Ok(DenseElements { ty, bits, resource: None })
}
