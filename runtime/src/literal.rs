//! Host values: arrays in logical row-major order (whatever layout a device buffer has) and
//! tuples of them. Constants in HLO, arguments and results are all literals.

use crate::buffer::{out_of_memory, AlignedBuffer, AllocError};
use crate::element_type::ElementType;
use crate::float_bits;
use crate::physical::{LayoutError, PhysicalLayout};
use crate::shape::{ArrayShape, Layout, Shape};
use half::{bf16, f16};
use num_complex::{Complex32, Complex64};
use thiserror::Error;

/// A literal that cannot be built, reshaped or read as asked.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum LiteralError {
    /// The values given (or the new dimensions) do not match the shape's element count.
    #[error("expected {expected} elements for shape {shape}, got {got}")]
    ElementCount {
        /// The shape asked for, in HLO text.
        shape: String,
        /// Elements that shape holds.
        expected: usize,
        /// Elements given (for raw bytes: whole elements' worth of bytes).
        got: usize,
    },
    /// Elements read as a Rust type that is not the literal's element type.
    #[error("element type mismatch: literal is {actual}, requested {requested}")]
    TypeMismatch {
        /// The literal's element type.
        actual: ElementType,
        /// The HLO name of the element type asked for.
        requested: &'static str,
    },
    /// A tuple or token used where an array is needed; holds its shape in HLO text.
    #[error("a {0} literal is not an array")]
    NotArray(String),
    /// Dimensions that are negative or whose size is beyond [`crate::limits`].
    #[error("{0}")]
    Size(#[from] LayoutError),
    /// The memory for the array could not be had.
    #[error("{shape}: {source}")]
    Allocation {
        /// The shape in HLO text.
        shape: String,
        /// The size that could not be allocated.
        source: AllocError,
    },
}

/// Bytes a row-major array of `dims` takes, checked against the limits.
fn checked_bytes(element_type: ElementType, dims: &[i64]) -> Result<usize, LayoutError> {
    let physical = PhysicalLayout::for_layout(dims, &Layout::row_major(dims.len()))?;
    Ok(physical.storage_bytes(element_type) as usize)
}

/// A Rust type that is the in-memory representation of one element type.
///
/// Implemented for `i8`..`i64`, `u8`..`u64`, `half::f16`, `half::bf16`, `f32`, `f64` and
/// `num_complex::Complex32`/`Complex64`; `pred` and the sub-byte and f8 types have none (use
/// [`ArrayLiteral::from_bools`], [`ArrayLiteral::from_f64s`] or the `bits` accessors).
pub trait NativeType: Copy + Send + Sync + 'static {
    /// The element type whose in-memory form this Rust type is.
    const TYPE: ElementType;
}

macro_rules! native {
    ($t:ty, $e:ident) => {
        impl NativeType for $t {
            const TYPE: ElementType = ElementType::$e;
        }
    };
}
native!(i8, S8);
native!(i16, S16);
native!(i32, S32);
native!(i64, S64);
native!(u8, U8);
native!(u16, U16);
native!(u32, U32);
native!(u64, U64);
native!(f16, F16);
native!(bf16, BF16);
native!(f32, F32);
native!(f64, F64);
native!(Complex32, C64);
native!(Complex64, C128);

/// A dense array in logical row-major order: `byte_size` bytes per element, pred as 0/1 bytes,
/// sub-byte integers and floats one per byte (low bits).
///
/// ```rust
/// use hlojit_runtime::{ArrayLiteral, ElementType, Literal};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let a = ArrayLiteral::from_slice(&[2, 2], &[1.0f32, 2.0, 3.0, 4.0])?;
/// assert_eq!(a.shape().to_string(), "f32[2,2]");
/// assert_eq!(a.as_slice::<f32>()?[3], 4.0);
///
/// // Any element type from f64s, converted as XLA's convert does.
/// let h = ArrayLiteral::from_f64s(ElementType::BF16, &[3], &[1.0, 0.1, -2.5])?;
/// assert_eq!(h.get_f64(1), 0.10009765625); // rounded to bf16
/// let i = ArrayLiteral::from_f64s(ElementType::S8, &[2], &[300.0, -1.9])?;
/// assert_eq!(i.as_slice::<i8>()?, &[127, -1]); // saturated, truncated toward zero
///
/// let r = a.reshaped(&[4])?;
/// assert_eq!(r.dims(), &[4]);
/// assert!(ArrayLiteral::from_slice(&[3], &[1i32, 2]).is_err());
///
/// let pair = Literal::Tuple(vec![r.into(), ArrayLiteral::scalar(7i32).into()]);
/// assert_eq!(pair.shape().to_string(), "(f32[4], s32[])");
/// assert_eq!(pair.leaves().len(), 2);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayLiteral {
    element_type: ElementType,
    dims: Vec<i64>,
    data: AlignedBuffer,
}

/// A host value: an array, a tuple of values, or a token.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// An array value.
    Array(ArrayLiteral),
    /// A tuple of values, possibly nested.
    Tuple(Vec<Literal>),
    /// A token value (no data); also stands for `opaque[]` values.
    Token,
}

impl ArrayLiteral {
    /// An array of `dims` whose bytes are all zero (0, `false`, +0.0).
    ///
    /// # Panics
    /// When the dimensions are negative or beyond [`crate::limits`], and (aborting, as `Vec`
    /// does) when the memory cannot be had; [`ArrayLiteral::try_zeros`] returns errors instead.
    pub fn zeros(element_type: ElementType, dims: &[i64]) -> ArrayLiteral {
        Self::try_zeros(element_type, dims).unwrap_or_else(|e| match e {
            LiteralError::Allocation { source, .. } => out_of_memory(source.bytes),
            other => panic!("ArrayLiteral::zeros: {other}"),
        })
    }

    /// An array of `dims` whose bytes are all zero, or an error for dimensions that are
    /// negative or too large and for memory that cannot be had.
    pub fn try_zeros(element_type: ElementType, dims: &[i64]) -> Result<ArrayLiteral, LiteralError> {
        let bytes = checked_bytes(element_type, dims)?;
        let data = AlignedBuffer::try_zeroed(bytes).map_err(|source| LiteralError::Allocation {
            shape: ArrayShape::new(element_type, dims.to_vec()).to_string(),
            source,
        })?;
        Ok(ArrayLiteral { element_type, dims: dims.to_vec(), data })
    }

    /// An array from raw element bytes (`byte_size` per element, row-major).
    ///
    /// # Errors
    /// [`LiteralError::ElementCount`] when `bytes` is not `byte_size` times the element count.
    pub fn from_bytes(element_type: ElementType, dims: &[i64], bytes: &[u8]) -> Result<ArrayLiteral, LiteralError> {
        let expected = checked_bytes(element_type, dims)?;
        let count = expected / element_type.byte_size().max(1);
        if bytes.len() != expected {
            return Err(LiteralError::ElementCount {
                shape: ArrayShape::new(element_type, dims.to_vec()).to_string(),
                expected: count,
                got: bytes.len() / element_type.byte_size().max(1),
            });
        }
        let data = AlignedBuffer::try_from_bytes(bytes).map_err(|source| LiteralError::Allocation {
            shape: ArrayShape::new(element_type, dims.to_vec()).to_string(),
            source,
        })?;
        Ok(ArrayLiteral { element_type, dims: dims.to_vec(), data })
    }

    /// Takes an aligned buffer of exactly `element_count * byte_size` bytes.
    pub(crate) fn from_buffer(element_type: ElementType, dims: &[i64], data: AlignedBuffer) -> ArrayLiteral {
        ArrayLiteral { element_type, dims: dims.to_vec(), data }
    }

    /// A row-major array of `dims` from values of the matching Rust type.
    ///
    /// # Errors
    /// [`LiteralError::ElementCount`] when `values.len()` is not the product of `dims`.
    pub fn from_slice<T: NativeType>(dims: &[i64], values: &[T]) -> Result<ArrayLiteral, LiteralError> {
        // SAFETY: NativeType types are plain data without padding.
        let bytes = unsafe { std::slice::from_raw_parts(values.as_ptr() as *const u8, std::mem::size_of_val(values)) };
        Self::from_bytes(T::TYPE, dims, bytes)
    }

    /// A `pred` array from booleans (stored as 0/1 bytes).
    ///
    /// # Errors
    /// [`LiteralError::ElementCount`] when `values.len()` is not the product of `dims`.
    pub fn from_bools(dims: &[i64], values: &[bool]) -> Result<ArrayLiteral, LiteralError> {
        let bytes: Vec<u8> = values.iter().map(|&b| b as u8).collect();
        Self::from_bytes(ElementType::Pred, dims, &bytes)
    }

    /// An array of any element type from f64 values, each converted as XLA converts (rounding
    /// to nearest even for floats, truncation toward zero and saturation for integers).
    pub fn from_f64s(element_type: ElementType, dims: &[i64], values: &[f64]) -> Result<ArrayLiteral, LiteralError> {
        let mut lit = Self::try_zeros(element_type, dims)?;
        if values.len() != lit.element_count() {
            return Err(LiteralError::ElementCount {
                shape: lit.shape().to_string(),
                expected: lit.element_count(),
                got: values.len(),
            });
        }
        for (i, &v) in values.iter().enumerate() {
            lit.set_f64(i, v);
        }
        Ok(lit)
    }

    /// A rank-0 array holding `value`.
    pub fn scalar<T: NativeType>(value: T) -> ArrayLiteral {
        Self::from_slice(&[], &[value]).expect("one element")
    }

    /// The type of each element.
    pub fn element_type(&self) -> ElementType {
        self.element_type
    }

    /// Dimension sizes, major-most first.
    pub fn dims(&self) -> &[i64] {
        &self.dims
    }

    /// The array's shape (without a layout: literals are always row-major).
    pub fn shape(&self) -> ArrayShape {
        ArrayShape::new(self.element_type, self.dims.clone())
    }

    /// Number of elements (1 for a scalar).
    pub fn element_count(&self) -> usize {
        self.dims.iter().product::<i64>() as usize
    }

    /// The elements' bytes, row-major, `byte_size` per element.
    pub fn bytes(&self) -> &[u8] {
        self.data.as_slice()
    }

    /// The elements' bytes, row-major, for writing in place.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.data.as_mut_slice()
    }

    /// The aligned buffer the elements live in.
    pub fn buffer(&self) -> &AlignedBuffer {
        &self.data
    }

    /// Gives up the aligned buffer holding the elements (no copy).
    pub fn into_buffer(self) -> AlignedBuffer {
        self.data
    }

    /// Reinterprets the literal with new dimensions of the same element count.
    pub fn reshaped(mut self, dims: &[i64]) -> Result<ArrayLiteral, LiteralError> {
        let count = checked_bytes(self.element_type, dims)? / self.element_type.byte_size().max(1);
        if count != self.element_count() {
            return Err(LiteralError::ElementCount {
                shape: ArrayShape::new(self.element_type, dims.to_vec()).to_string(),
                expected: count,
                got: self.element_count(),
            });
        }
        self.dims = dims.to_vec();
        Ok(self)
    }

    /// The elements as `T`, row-major.
    ///
    /// # Errors
    /// [`LiteralError::TypeMismatch`] when `T` is not the Rust type of the element type.
    pub fn as_slice<T: NativeType>(&self) -> Result<&[T], LiteralError> {
        if self.element_type != T::TYPE {
            return Err(LiteralError::TypeMismatch { actual: self.element_type, requested: T::TYPE.name() });
        }
        // SAFETY: the buffer is 64-byte aligned and holds element_count values of T.
        Ok(unsafe { std::slice::from_raw_parts(self.data.as_ptr() as *const T, self.element_count()) })
    }

    /// The elements as mutable `T`, row-major.
    ///
    /// # Errors
    /// [`LiteralError::TypeMismatch`] when `T` is not the Rust type of the element type.
    pub fn as_mut_slice<T: NativeType>(&mut self) -> Result<&mut [T], LiteralError> {
        if self.element_type != T::TYPE {
            return Err(LiteralError::TypeMismatch { actual: self.element_type, requested: T::TYPE.name() });
        }
        let n = self.element_count();
        // SAFETY: as above, with exclusive access.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.data.as_mut_ptr() as *mut T, n) })
    }

    /// The raw bits of element `i`, zero-extended.
    pub fn bits(&self, i: usize) -> u64 {
        let n = self.element_type.byte_size();
        let mut word = [0u8; 8];
        let bytes = &self.data.as_slice()[i * n..(i + 1) * n];
        word[..n.min(8)].copy_from_slice(&bytes[..n.min(8)]);
        u64::from_le_bytes(word)
    }

    /// Stores the low `byte_size` bytes (at most 8) of `bits` as element `i`, unchanged.
    ///
    /// # Panics
    /// When `i` is out of range.
    pub fn set_bits(&mut self, i: usize, bits: u64) {
        let n = self.element_type.byte_size().min(8);
        let bytes = bits.to_le_bytes();
        self.data.as_mut_slice()[i * n..i * n + n].copy_from_slice(&bytes[..n]);
    }

    /// Element `i` as f64 (real part for complex, 0/1 for pred, sign-extended sub-byte ints).
    pub fn get_f64(&self, i: usize) -> f64 {
        let t = self.element_type;
        let bits = self.bits(i);
        match t {
            ElementType::Pred => (bits != 0) as u8 as f64,
            _ if t.is_signed_int() => sign_extend(bits, t.bit_width()) as f64,
            _ if t.is_unsigned_int() => (bits & width_mask(t.bit_width())) as f64,
            ElementType::F32 => f32::from_bits(bits as u32) as f64,
            ElementType::F64 => f64::from_bits(bits),
            ElementType::C64 => self.get_c128(i).re,
            ElementType::C128 => self.get_c128(i).re,
            _ => float_bits::decode(bits & width_mask(t.bit_width()), t.float_format().expect("float")),
        }
    }

    /// Element `i` as i64 for integer and pred types (wrapping for u64 above i64::MAX).
    pub fn get_i64(&self, i: usize) -> i64 {
        let t = self.element_type;
        let bits = self.bits(i);
        match t {
            ElementType::Pred => (bits != 0) as i64,
            _ if t.is_signed_int() => sign_extend(bits, t.bit_width()),
            _ if t.is_unsigned_int() => (bits & width_mask(t.bit_width())) as i64,
            _ => self.get_f64(i) as i64,
        }
    }

    /// Element `i` as a complex number (imaginary part 0 for real types).
    pub fn get_c128(&self, i: usize) -> Complex64 {
        let data = self.data.as_slice();
        match self.element_type {
            ElementType::C64 => {
                let re = f32::from_le_bytes(data[i * 8..i * 8 + 4].try_into().expect("4 bytes"));
                let im = f32::from_le_bytes(data[i * 8 + 4..i * 8 + 8].try_into().expect("4 bytes"));
                Complex64::new(re as f64, im as f64)
            }
            ElementType::C128 => {
                let re = f64::from_le_bytes(data[i * 16..i * 16 + 8].try_into().expect("8 bytes"));
                let im = f64::from_le_bytes(data[i * 16 + 8..i * 16 + 16].try_into().expect("8 bytes"));
                Complex64::new(re, im)
            }
            _ => Complex64::new(self.get_f64(i), 0.0),
        }
    }

    /// Stores `v` converted to the element type (XLA's convert semantics for integers:
    /// truncation toward zero, saturation, NaN to 0).
    pub fn set_f64(&mut self, i: usize, v: f64) {
        let t = self.element_type;
        match t {
            ElementType::Pred => self.set_bits(i, (v != 0.0) as u64),
            _ if t.is_signed_int() => {
                let w = t.bit_width();
                let (lo, hi) = (-(2f64.powi(w as i32 - 1)), 2f64.powi(w as i32 - 1) - 1.0);
                let x = if v.is_nan() { 0.0 } else { v.trunc().clamp(lo, hi) };
                self.set_bits(i, (x as i64 as u64) & width_mask(w));
            }
            _ if t.is_unsigned_int() => {
                let w = t.bit_width();
                let hi = if w == 64 { u64::MAX as f64 } else { 2f64.powi(w as i32) - 1.0 };
                let x = if v.is_nan() { 0.0 } else { v.trunc().clamp(0.0, hi) };
                self.set_bits(i, if x >= u64::MAX as f64 { u64::MAX } else { x as u64 });
            }
            ElementType::F32 => self.set_bits(i, (v as f32).to_bits() as u64),
            ElementType::F64 => self.set_bits(i, v.to_bits()),
            ElementType::C64 | ElementType::C128 => self.set_c128(i, Complex64::new(v, 0.0)),
            _ => self.set_bits(i, float_bits::encode(v, t.float_format().expect("float"))),
        }
    }

    /// Stores an integer exactly (wrapping to the element width).
    pub fn set_i64(&mut self, i: usize, v: i64) {
        let t = self.element_type;
        if t.is_int() || t.is_pred() {
            let bits = if t.is_pred() { (v != 0) as u64 } else { v as u64 & width_mask(t.bit_width()) };
            self.set_bits(i, bits);
        } else {
            self.set_f64(i, v as f64);
        }
    }

    /// Stores `v` as element `i`: both parts for complex types, the real part converted (as
    /// [`ArrayLiteral::set_f64`]) otherwise.
    pub fn set_c128(&mut self, i: usize, v: Complex64) {
        let data = self.data.as_mut_slice();
        match self.element_type {
            ElementType::C64 => {
                data[i * 8..i * 8 + 4].copy_from_slice(&(v.re as f32).to_le_bytes());
                data[i * 8 + 4..i * 8 + 8].copy_from_slice(&(v.im as f32).to_le_bytes());
            }
            ElementType::C128 => {
                data[i * 16..i * 16 + 8].copy_from_slice(&v.re.to_le_bytes());
                data[i * 16 + 8..i * 16 + 16].copy_from_slice(&v.im.to_le_bytes());
            }
            _ => self.set_f64(i, v.re),
        }
    }
}

/// A mask of the low `bits` bits (all ones from 64 up).
pub fn width_mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Sign-extends the low `width` bits of `bits` to an i64 (unchanged from 64 up).
pub fn sign_extend(bits: u64, width: u32) -> i64 {
    if width >= 64 {
        return bits as i64;
    }
    let shift = 64 - width;
    ((bits << shift) as i64) >> shift
}

impl Literal {
    /// The value's shape (arrays without layouts).
    pub fn shape(&self) -> Shape {
        match self {
            Literal::Array(a) => Shape::Array(a.shape()),
            Literal::Tuple(elements) => Shape::Tuple(elements.iter().map(Literal::shape).collect()),
            Literal::Token => Shape::Token,
        }
    }

    /// The array, or [`LiteralError::NotArray`] for a tuple or token.
    pub fn as_array(&self) -> Result<&ArrayLiteral, LiteralError> {
        match self {
            Literal::Array(a) => Ok(a),
            other => Err(LiteralError::NotArray(other.shape().to_string())),
        }
    }

    /// The arrays in depth-first order (tuples flattened).
    pub fn leaves(&self) -> Vec<&ArrayLiteral> {
        let mut out = Vec::new();
        fn walk<'a>(l: &'a Literal, out: &mut Vec<&'a ArrayLiteral>) {
            match l {
                Literal::Array(a) => out.push(a),
                Literal::Tuple(elements) => elements.iter().for_each(|e| walk(e, out)),
                Literal::Token => {}
            }
        }
        walk(self, &mut out);
        out
    }

    /// Builds a value of `shape` from its array leaves in depth-first order (the inverse of
    /// [`Literal::into_leaves`]); `None` when the leaves run out.
    pub fn from_leaves(shape: &Shape, leaves: &mut impl Iterator<Item = ArrayLiteral>) -> Option<Literal> {
        Some(match shape {
            Shape::Array(_) => Literal::Array(leaves.next()?),
            Shape::Tuple(elements) => {
                Literal::Tuple(elements.iter().map(|e| Literal::from_leaves(e, leaves)).collect::<Option<_>>()?)
            }
            Shape::Token | Shape::Opaque => Literal::Token,
        })
    }

    /// Arguments for parameters of `shapes` from all their array leaves, depth-first.
    pub fn group_leaves(shapes: &[Shape], leaves: Vec<ArrayLiteral>) -> Result<Vec<Literal>, String> {
        let total: usize = shapes.iter().map(|s| s.array_leaves().len()).sum();
        if total != leaves.len() {
            return Err(format!("the parameters take {total} arrays, {} given", leaves.len()));
        }
        let mut it = leaves.into_iter();
        Ok(shapes.iter().map(|s| Literal::from_leaves(s, &mut it).expect("counted")).collect())
    }

    /// The arrays in depth-first order, taken out of their tuples (tokens dropped).
    pub fn into_leaves(self) -> Vec<ArrayLiteral> {
        match self {
            Literal::Array(a) => vec![a],
            Literal::Tuple(elements) => elements.into_iter().flat_map(Literal::into_leaves).collect(),
            Literal::Token => Vec::new(),
        }
    }
}

impl From<ArrayLiteral> for Literal {
    fn from(a: ArrayLiteral) -> Literal {
        Literal::Array(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_follow_xla() {
        let lit = ArrayLiteral::from_f64s(ElementType::S8, &[4], &[300.0, -300.0, f64::NAN, -2.7]).unwrap();
        assert_eq!(lit.as_slice::<i8>().unwrap(), &[127, -128, 0, -2]);
        let lit = ArrayLiteral::from_f64s(ElementType::U8, &[2], &[-5.0, 255.9]).unwrap();
        assert_eq!(lit.as_slice::<u8>().unwrap(), &[0, 255]);
        let lit = ArrayLiteral::from_f64s(ElementType::S4, &[2], &[-3.0, 9.0]).unwrap();
        assert_eq!(lit.get_i64(0), -3);
        assert_eq!(lit.get_i64(1), 7);
    }
}
