//! Shapes and layouts as HLO describes them (arrays, tuples, tokens; `minor_to_major`, tiles,
//! memory spaces). Printing follows HLO text exactly; parsing lives in the compiler.

use crate::element_type::ElementType;
use std::fmt::{self, Write};

/// One tile of a tiled layout, `T(8,128)`. A dimension of [`TILE_COMBINE_DIMENSION`] is XLA's
/// combine dimension `*`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Tile {
    /// Tile sizes, major to minor, applied to the same number of minor-most dimensions.
    pub dims: Vec<i64>,
}

/// The value a [`Tile`] dimension holds for XLA's `*` (combine the dimension with the next
/// more minor one). Printed back as `*`; hlojit's host-side layout code does not support it.
pub const TILE_COMBINE_DIMENSION: i64 = i64::MIN;

/// How an array is stored in memory.
///
/// Prints as in HLO text (`{1,0}`, `{0,1:T(8,128)}`); parsing is
/// `hlojit_compiler::hlo::text::parse_shape` on a whole shape. The default layout (empty
/// `minor_to_major`) is that of a scalar.
///
/// ```rust
/// use hlojit_runtime::{Layout, Tile};
///
/// let row_major = Layout::row_major(3);
/// assert_eq!(row_major.minor_to_major, vec![2, 1, 0]);
/// assert!(row_major.is_row_major());
/// assert_eq!(row_major.to_string(), "{2,1,0}");
///
/// let tiled = Layout { tiles: vec![Tile { dims: vec![8, 128] }], ..Layout::new(vec![0, 1]) };
/// assert_eq!(tiled.to_string(), "{0,1:T(8,128)}");
/// assert_eq!(tiled.major_to_minor(), vec![1, 0]);
/// assert!(!tiled.is_untiled());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Layout {
    /// Dimensions from fastest-varying to slowest-varying.
    pub minor_to_major: Vec<i64>,
    /// Tiles, applied one after the other to the minor-most dimensions.
    pub tiles: Vec<Tile>,
    /// `L(n)`: total element count padded to a multiple of this (0 = none).
    pub tail_padding_alignment_in_elements: i64,
    /// `E(n)`: bits per element when packed (0 = the type's natural size).
    pub element_size_in_bits: i64,
    /// `S(n)`: the memory space (0 = default device memory).
    pub memory_space: i64,
    /// Layout attributes hlojit does not interpret (`D(...)`, `#(...)`, `*(...)`, `P(...)`),
    /// kept verbatim so they print back.
    pub other: Vec<String>,
}

impl Layout {
    /// A plain (untiled, unpadded) layout with the given minor-to-major dimension order, as in
    /// `{1,0}` for `vec![1, 0]`.
    pub fn new(minor_to_major: Vec<i64>) -> Layout {
        Layout { minor_to_major, ..Layout::default() }
    }

    /// Row-major: the last dimension varies fastest.
    pub fn row_major(rank: usize) -> Layout {
        Layout::new((0..rank as i64).rev().collect())
    }

    /// True when the minor-to-major order is `{rank-1,...,1,0}` (tiles and padding are not
    /// looked at).
    pub fn is_row_major(&self) -> bool {
        self.minor_to_major.iter().rev().enumerate().all(|(i, &d)| i as i64 == d)
    }

    /// Dimensions from slowest to fastest varying.
    pub fn major_to_minor(&self) -> Vec<i64> {
        self.minor_to_major.iter().rev().copied().collect()
    }

    /// True when the physical storage is a plain permutation of the logical dimensions.
    pub fn is_untiled(&self) -> bool {
        self.tiles.is_empty() && self.tail_padding_alignment_in_elements <= 1
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_char('{')?;
        write_joined(f, &self.minor_to_major)?;
        let mut suffix = String::new();
        for attr in &self.other {
            if attr.starts_with("D(") {
                suffix.push_str(attr);
            }
        }
        if !self.tiles.is_empty() {
            suffix.push('T');
            for tile in &self.tiles {
                suffix.push('(');
                for (i, d) in tile.dims.iter().enumerate() {
                    if i > 0 {
                        suffix.push(',');
                    }
                    if *d == TILE_COMBINE_DIMENSION {
                        suffix.push('*');
                    } else {
                        let _ = write!(suffix, "{d}");
                    }
                }
                suffix.push(')');
            }
        }
        if self.tail_padding_alignment_in_elements > 1 {
            let _ = write!(suffix, "L({})", self.tail_padding_alignment_in_elements);
        }
        if self.element_size_in_bits != 0 {
            let _ = write!(suffix, "E({})", self.element_size_in_bits);
        }
        for attr in &self.other {
            if !attr.starts_with("D(") && !attr.starts_with("P(") {
                suffix.push_str(attr);
            }
        }
        if self.memory_space != 0 {
            let _ = write!(suffix, "S({})", self.memory_space);
        }
        for attr in &self.other {
            if attr.starts_with("P(") {
                suffix.push_str(attr);
            }
        }
        if !suffix.is_empty() {
            write!(f, ":{suffix}")?;
        }
        f.write_char('}')
    }
}

/// A dense array's shape: element type, dimension sizes, dynamic-ness and layout.
///
/// ```rust
/// use hlojit_runtime::{ArrayShape, ElementType, Layout};
///
/// let s = ArrayShape::new(ElementType::BF16, vec![2, 3]);
/// assert_eq!((s.rank(), s.element_count()), (2, 6));
/// assert_eq!(s.to_string(), "bf16[2,3]"); // no layout given: none printed
/// let c = s.clone().with_layout(Layout::new(vec![0, 1]));
/// assert_eq!(c.to_string(), "bf16[2,3]{0,1}");
/// assert!(c.same_dims_and_type(&s));
/// assert_eq!(s.layout_or_default(), Layout::row_major(2));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArrayShape {
    /// The type of every element.
    pub element_type: ElementType,
    /// Dimension sizes, major-most first as written (`f32[2,3]` is `[2, 3]`); for a dynamic
    /// dimension, its upper bound.
    pub dims: Vec<i64>,
    /// `<=N` dimensions: the size is a bound, the actual size is known at run time.
    /// One entry per dimension.
    pub dynamic: Vec<bool>,
    /// The layout written after the dimensions (`{1,0}`), or `None` when the text gave none
    /// (then it means row-major, see [`ArrayShape::layout_or_default`]).
    pub layout: Option<Layout>,
}

impl ArrayShape {
    /// A static array shape with no layout.
    pub fn new(element_type: ElementType, dims: Vec<i64>) -> ArrayShape {
        let rank = dims.len();
        ArrayShape { element_type, dims, dynamic: vec![false; rank], layout: None }
    }

    /// The same shape with `layout` set.
    pub fn with_layout(mut self, layout: Layout) -> ArrayShape {
        self.layout = Some(layout);
        self
    }

    /// Number of dimensions (0 for a scalar).
    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// Product of the dimension sizes (1 for a scalar, the bound for dynamic dimensions).
    pub fn element_count(&self) -> i64 {
        self.dims.iter().product()
    }

    /// The declared layout, or row-major when none is given.
    pub fn layout_or_default(&self) -> Layout {
        self.layout.clone().unwrap_or_else(|| Layout::row_major(self.rank()))
    }

    /// True when any dimension is dynamic (`<=N`).
    pub fn is_dynamic(&self) -> bool {
        self.dynamic.iter().any(|&d| d)
    }

    /// Same element type and dimensions, layouts ignored.
    pub fn same_dims_and_type(&self, other: &ArrayShape) -> bool {
        self.element_type == other.element_type && self.dims == other.dims
    }
}

/// An HLO shape.
///
/// `Display` prints HLO text with layouts (`(f32[2]{0}, s32[])`); [`Shape::to_text`] can
/// leave them out. Parsing is in the compiler (`hlojit_compiler::hlo::text::parse_shape`).
///
/// ```rust
/// use hlojit_runtime::{ElementType, Shape};
///
/// let t = Shape::Tuple(vec![
///     Shape::array_row_major(ElementType::F32, [2, 3]),
///     Shape::Tuple(vec![Shape::scalar(ElementType::S32), Shape::Token]),
/// ]);
/// assert_eq!(t.to_string(), "(f32[2,3]{1,0}, (s32[], token[]))");
/// assert_eq!(t.to_text(false), "(f32[2,3], (s32[], token[]))");
/// assert_eq!(t.subshape(&[1, 0]), Some(&Shape::scalar(ElementType::S32)));
/// assert_eq!(t.array_leaves().len(), 2); // tokens are not arrays
/// assert_eq!(t.leaf_offset(&[1]), Some(1));
/// assert!(t.compatible(&t.without_layouts()));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// A dense array (a scalar is a rank-0 array).
    Array(ArrayShape),
    /// A tuple of shapes, possibly nested and possibly empty (`()`).
    Tuple(Vec<Shape>),
    /// `token[]`: orders side effects; carries no data.
    Token,
    /// `opaque[]`: a value only custom calls understand; carries no data hlojit can see.
    Opaque,
}

impl Shape {
    /// An array shape with no layout.
    pub fn array(element_type: ElementType, dims: impl Into<Vec<i64>>) -> Shape {
        Shape::Array(ArrayShape::new(element_type, dims.into()))
    }

    /// An array shape with the row-major layout set explicitly.
    pub fn array_row_major(element_type: ElementType, dims: impl Into<Vec<i64>>) -> Shape {
        let dims = dims.into();
        let rank = dims.len();
        Shape::Array(ArrayShape::new(element_type, dims).with_layout(Layout::row_major(rank)))
    }

    /// A rank-0 array shape.
    pub fn scalar(element_type: ElementType) -> Shape {
        Shape::array(element_type, Vec::new())
    }

    /// The array shape, or `None` for a tuple, token or opaque shape.
    pub fn as_array(&self) -> Option<&ArrayShape> {
        match self {
            Shape::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The array shape, mutably, or `None` for a tuple, token or opaque shape.
    pub fn as_array_mut(&mut self) -> Option<&mut ArrayShape> {
        match self {
            Shape::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The element shapes of a tuple, or `None` when this is not a tuple.
    pub fn tuple_elements(&self) -> Option<&[Shape]> {
        match self {
            Shape::Tuple(elements) => Some(elements),
            _ => None,
        }
    }

    /// True for an array (scalars included).
    pub fn is_array(&self) -> bool {
        matches!(self, Shape::Array(_))
    }

    /// True for a tuple (the empty tuple included).
    pub fn is_tuple(&self) -> bool {
        matches!(self, Shape::Tuple(_))
    }

    /// True for `token[]`.
    pub fn is_token(&self) -> bool {
        matches!(self, Shape::Token)
    }

    /// The element type of an array, or `None` for other shapes.
    pub fn element_type(&self) -> Option<ElementType> {
        self.as_array().map(|a| a.element_type)
    }

    /// The dimensions of an array; empty for scalars and for non-array shapes.
    pub fn dims(&self) -> &[i64] {
        self.as_array().map(|a| a.dims.as_slice()).unwrap_or(&[])
    }

    /// The rank of an array; 0 for scalars and for non-array shapes.
    pub fn rank(&self) -> usize {
        self.dims().len()
    }

    /// True for a rank-0 array.
    pub fn is_scalar(&self) -> bool {
        matches!(self, Shape::Array(a) if a.dims.is_empty())
    }

    /// The shape at a tuple index path (`{1, 0}`), if it exists.
    pub fn subshape(&self, index: &[usize]) -> Option<&Shape> {
        match index.split_first() {
            None => Some(self),
            Some((&i, rest)) => self.tuple_elements()?.get(i)?.subshape(rest),
        }
    }

    /// The position, among [`Shape::array_leaves`], of the first leaf under tuple index `path`.
    pub fn leaf_offset(&self, path: &[i64]) -> Option<usize> {
        match path.split_first() {
            None => Some(0),
            Some((&i, rest)) => {
                let elements = self.tuple_elements()?;
                let i = usize::try_from(i).ok()?;
                let before: usize = elements.get(..i)?.iter().map(|e| e.array_leaves().len()).sum();
                Some(before + elements.get(i)?.leaf_offset(rest)?)
            }
        }
    }

    /// Array leaves in depth-first order (tokens and opaque leaves excluded).
    pub fn array_leaves(&self) -> Vec<&ArrayShape> {
        let mut out = Vec::new();
        self.collect_leaves(&mut out);
        out
    }

    fn collect_leaves<'a>(&'a self, out: &mut Vec<&'a ArrayShape>) {
        match self {
            Shape::Array(a) => out.push(a),
            Shape::Tuple(elements) => elements.iter().for_each(|e| e.collect_leaves(out)),
            Shape::Token | Shape::Opaque => {}
        }
    }

    /// Same structure, element types and dimensions; layouts ignored.
    pub fn compatible(&self, other: &Shape) -> bool {
        match (self, other) {
            (Shape::Array(a), Shape::Array(b)) => a.same_dims_and_type(b),
            (Shape::Tuple(a), Shape::Tuple(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.compatible(y))
            }
            (Shape::Token, Shape::Token) | (Shape::Opaque, Shape::Opaque) => true,
            _ => false,
        }
    }

    /// Like [`Shape::compatible`], but also ignoring element types of arrays.
    pub fn same_structure_and_dims(&self, other: &Shape) -> bool {
        match (self, other) {
            (Shape::Array(a), Shape::Array(b)) => a.dims == b.dims,
            (Shape::Tuple(a), Shape::Tuple(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_structure_and_dims(y))
            }
            (Shape::Token, Shape::Token) | (Shape::Opaque, Shape::Opaque) => true,
            _ => false,
        }
    }

    /// Removes every layout (for comparisons and for printing without layouts).
    pub fn without_layouts(&self) -> Shape {
        match self {
            Shape::Array(a) => Shape::Array(ArrayShape { layout: None, ..a.clone() }),
            Shape::Tuple(elements) => Shape::Tuple(elements.iter().map(Shape::without_layouts).collect()),
            other => other.clone(),
        }
    }

    /// Fills in the row-major layout wherever an array has none.
    pub fn with_default_layouts(&self) -> Shape {
        match self {
            Shape::Array(a) => Shape::Array(ArrayShape { layout: Some(a.layout_or_default()), ..a.clone() }),
            Shape::Tuple(elements) => {
                Shape::Tuple(elements.iter().map(Shape::with_default_layouts).collect())
            }
            other => other.clone(),
        }
    }

    /// Prints the shape in HLO syntax, with or without layouts.
    pub fn to_text(&self, with_layout: bool) -> String {
        let mut s = String::new();
        let _ = write_shape(&mut s, self, with_layout);
        s
    }
}

fn write_joined(f: &mut impl Write, values: &[i64]) -> fmt::Result {
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            f.write_char(',')?;
        }
        write!(f, "{v}")?;
    }
    Ok(())
}

fn write_shape(f: &mut impl Write, shape: &Shape, with_layout: bool) -> fmt::Result {
    match shape {
        Shape::Array(a) => {
            write!(f, "{}[", a.element_type)?;
            for (i, d) in a.dims.iter().enumerate() {
                if i > 0 {
                    f.write_char(',')?;
                }
                if a.dynamic.get(i).copied().unwrap_or(false) {
                    f.write_str("<=")?;
                }
                write!(f, "{d}")?;
            }
            f.write_char(']')?;
            if with_layout && !a.dims.is_empty() {
                if let Some(layout) = &a.layout {
                    write!(f, "{layout}")?;
                }
            }
            Ok(())
        }
        Shape::Tuple(elements) => {
            f.write_char('(')?;
            for (i, e) in elements.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write_shape(f, e, with_layout)?;
            }
            f.write_char(')')
        }
        Shape::Token => f.write_str("token[]"),
        Shape::Opaque => f.write_str("opaque[]"),
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_shape(f, self, true)
    }
}

impl fmt::Display for ArrayShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_shape(f, &Shape::Array(self.clone()), true)
    }
}
