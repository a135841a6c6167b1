//! Shapes, layouts and constants as `xla.ShapeProto` and `xla.LiteralProto`.

use super::messages::{LayoutProto, LiteralProto, ShapeProto, TileProto};
use hlojit::{ArrayLiteral, ArrayShape, ElementType, Layout, Literal, Shape};

/// `xla.PrimitiveType` of an element type (xla_data.proto's numbering).
pub fn primitive_type(t: ElementType) -> i32 {
    use ElementType::*;
    match t {
        Pred => 1,
        S2 => 26,
        S4 => 21,
        S8 => 2,
        S16 => 3,
        S32 => 4,
        S64 => 5,
        U2 => 27,
        U4 => 22,
        U8 => 6,
        U16 => 7,
        U32 => 8,
        U64 => 9,
        F16 => 10,
        BF16 => 16,
        F32 => 11,
        F64 => 12,
        F8E5M2 => 19,
        F8E4M3FN => 20,
        F8E4M3B11FNUZ => 23,
        F8E5M2FNUZ => 24,
        F8E4M3FNUZ => 25,
        F8E4M3 => 28,
        F8E3M4 => 29,
        F8E8M0FNU => 33,
        F4E2M1FN => 32,
        C64 => 15,
        C128 => 18,
    }
}

const TUPLE: i32 = 13;
const OPAQUE_TYPE: i32 = 14;
const TOKEN: i32 = 17;

/// A shape with its layouts; arrays without one get the row-major layout, which is what an
/// absent layout means in hlojit's IR (XLA would print a module without layouts otherwise).
pub fn shape(s: &Shape) -> ShapeProto {
    match s {
        Shape::Array(a) => array_shape(a),
        Shape::Tuple(elements) => ShapeProto { element_type: TUPLE, tuple_shapes: elements.iter().map(shape).collect(), ..empty() },
        Shape::Token => ShapeProto { element_type: TOKEN, ..empty() },
        Shape::Opaque => ShapeProto { element_type: OPAQUE_TYPE, ..empty() },
    }
}

fn empty() -> ShapeProto {
    ShapeProto { element_type: 0, dimensions: Vec::new(), tuple_shapes: Vec::new(), layout: None, is_dynamic_dimension: Vec::new() }
}

fn array_shape(a: &ArrayShape) -> ShapeProto {
    ShapeProto {
        element_type: primitive_type(a.element_type),
        dimensions: a.dims.clone(),
        // XLA lists is_dynamic_dimension for every dimension or for none.
        is_dynamic_dimension: if a.is_dynamic() { a.dynamic.clone() } else { Vec::new() },
        layout: Some(layout(&a.layout_or_default())),
        ..empty()
    }
}

fn layout(l: &Layout) -> LayoutProto {
    LayoutProto {
        minor_to_major: l.minor_to_major.clone(),
        tiles: l.tiles.iter().map(|t| TileProto { dimensions: t.dims.clone() }).collect(),
        element_size_in_bits: l.element_size_in_bits,
        memory_space: l.memory_space,
        tail_padding_alignment_in_elements: l.tail_padding_alignment_in_elements,
    }
}

/// A constant's value. `as_shape` is the instruction's shape: XLA requires the literal's
/// shape to match it including the minor-to-major order, and reads the values in that
/// order, so an array is written in its layout's element order (hlojit keeps literals
/// row-major).
pub fn literal(value: &Literal, as_shape: &Shape) -> LiteralProto {
    match (value, as_shape) {
        (Literal::Array(a), Shape::Array(s)) => array_literal(a, &s.layout_or_default()),
        (Literal::Array(a), _) => array_literal(a, &Layout::row_major(a.dims().len())),
        (Literal::Tuple(elements), _) => {
            let shapes = as_shape.tuple_elements().unwrap_or(&[]);
            let tuple_literals: Vec<LiteralProto> = elements
                .iter()
                .enumerate()
                .map(|(i, e)| literal(e, shapes.get(i).unwrap_or(&literal_shape(e))))
                .collect();
            let shape = ShapeProto { element_type: TUPLE, tuple_shapes: tuple_literals.iter().filter_map(|l| l.shape.clone()).collect(), ..empty() };
            LiteralProto { shape: Some(shape), tuple_literals, ..LiteralProto::default() }
        }
        (Literal::Token, _) => LiteralProto { shape: Some(shape(as_shape)), ..LiteralProto::default() },
    }
}

fn literal_shape(l: &Literal) -> Shape {
    match l {
        Literal::Array(a) => Shape::array(a.element_type(), a.dims().to_vec()),
        Literal::Tuple(e) => Shape::Tuple(e.iter().map(literal_shape).collect()),
        Literal::Token => Shape::Token,
    }
}

fn array_literal(a: &ArrayLiteral, layout: &Layout) -> LiteralProto {
    let t = a.element_type();
    let plain = Layout { minor_to_major: layout.minor_to_major.clone(), ..Layout::default() };
    let shape = array_shape(&ArrayShape::new(t, a.dims().to_vec()).with_layout(plain));
    let bytes = in_layout_order(a.bytes(), a.dims(), &layout.minor_to_major, t.byte_size());
    let mut p = LiteralProto { shape: Some(shape), ..LiteralProto::default() };
    use ElementType::*;
    match t {
        Pred => p.preds = bytes.iter().map(|&b| b != 0).collect(),
        S32 => p.s32s = words(&bytes, 4, |c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        S64 => p.s64s = words(&bytes, 8, |c| i64::from_le_bytes(eight(c))),
        U32 => p.u32s = words(&bytes, 4, |c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        U64 => p.u64s = words(&bytes, 8, |c| u64::from_le_bytes(eight(c))),
        F32 => p.f32s = words(&bytes, 4, |c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        F64 => p.f64s = words(&bytes, 8, |c| f64::from_le_bytes(eight(c))),
        // Complex values are interleaved (real, imaginary) components, as hlojit stores them.
        C64 => p.c64s = words(&bytes, 4, |c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        C128 => p.c128s = words(&bytes, 8, |c| f64::from_le_bytes(eight(c))),
        // The 16-bit and 8-bit types are little-endian bytes; the sub-byte ones one value per
        // byte, as hlojit stores them.
        U8 => p.u8s = bytes,
        S8 => p.s8s = bytes,
        U16 => p.u16s = bytes,
        S16 => p.s16s = bytes,
        F16 => p.f16s = bytes,
        BF16 => p.bf16s = bytes,
        S4 => p.s4s = bytes,
        U4 => p.u4s = bytes,
        S2 => p.s2s = bytes,
        U2 => p.u2s = bytes,
        F8E5M2 => p.f8e5m2s = bytes,
        F8E4M3FN => p.f8e4m3fns = bytes,
        F8E4M3B11FNUZ => p.f8e4m3b11fnuzs = bytes,
        F8E5M2FNUZ => p.f8e5m2fnuzs = bytes,
        F8E4M3FNUZ => p.f8e4m3fnuzs = bytes,
        F8E4M3 => p.f8e4m3s = bytes,
        F8E3M4 => p.f8e3m4s = bytes,
        F8E8M0FNU => p.f8e8m0fnus = bytes,
        F4E2M1FN => p.f4e2m1fns = bytes,
    }
    p
}

fn eight(c: &[u8]) -> [u8; 8] {
    [c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]
}

fn words<T>(bytes: &[u8], size: usize, f: impl Fn(&[u8]) -> T) -> Vec<T> {
    bytes.chunks_exact(size).map(f).collect()
}

/// Row-major element bytes reordered so that `minor_to_major[0]` varies fastest.
fn in_layout_order(row_major: &[u8], dims: &[i64], minor_to_major: &[i64], size: usize) -> Vec<u8> {
    let rank = dims.len();
    let identity = minor_to_major.iter().rev().copied().eq(0..rank as i64);
    if identity || minor_to_major.len() != rank || row_major.is_empty() {
        return row_major.to_vec();
    }
    // Row-major strides (in elements) of each dimension.
    let mut stride = vec![1usize; rank];
    for d in (0..rank.saturating_sub(1)).rev() {
        stride[d] = stride[d + 1] * dims[d + 1].max(0) as usize;
    }
    let mut out = Vec::with_capacity(row_major.len());
    let mut index = vec![0i64; rank];
    let count = row_major.len() / size;
    for _ in 0..count {
        let at: usize = (0..rank).map(|d| index[d] as usize * stride[d]).sum();
        out.extend_from_slice(&row_major[at * size..(at + 1) * size]);
        // Advance the multi-index with minor_to_major[0] fastest.
        for &d in minor_to_major {
            let d = d as usize;
            index[d] += 1;
            if index[d] < dims[d] {
                break;
            }
            index[d] = 0;
        }
    }
    out
}
