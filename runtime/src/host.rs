//! Host arrays as executables take and return them: an owned [`HostBuffer`] or a borrowed
//! [`ArrayView`], each with its element type, dimensions and layout. Data is in the layout's
//! physical order (row-major unless a layout says otherwise).

use crate::buffer::{AlignedBuffer, AllocError};
use crate::element_type::ElementType;
use crate::literal::{ArrayLiteral, NativeType};
use crate::npy;
use crate::physical::{logical_to_physical, physical_to_logical, LayoutError, PhysicalLayout};
use crate::shape::{ArrayShape, Layout};
use std::borrow::Cow;
use std::sync::Arc;
use std::path::Path;
use thiserror::Error;

/// Why a host array could not be made, read or viewed.
#[derive(Debug, Error)]
pub enum HostError {
    /// The bytes given do not fill the shape's storage exactly (padding included).
    #[error("{shape} needs {expected} bytes, {got} given")]
    Size {
        /// The shape, with its layout, in HLO text.
        shape: String,
        /// Bytes the layout's storage takes.
        expected: usize,
        /// Bytes given.
        got: usize,
    },
    /// The layout does not fit the shape or is one hlojit cannot lay out on the host.
    #[error("{0}")]
    Layout(#[from] LayoutError),
    /// Elements read as a Rust type that is not the array's element type.
    #[error("element type mismatch: the array holds {actual}, {requested} requested")]
    Type {
        /// The array's element type.
        actual: ElementType,
        /// The element type of the Rust type asked for.
        requested: ElementType,
    },
    /// A `.npy` file could not be read or written.
    #[error("{0}")]
    Npy(#[from] npy::NpyError),
    /// The memory for the array could not be had.
    #[error("{shape}: {source}")]
    Allocation {
        /// The shape, with its layout, in HLO text.
        shape: String,
        /// The size that could not be allocated.
        source: AllocError,
    },
}

impl HostError {
    fn allocation(shape: &ArrayShape) -> impl FnOnce(AllocError) -> HostError + '_ {
        move |source| HostError::Allocation { shape: shape.to_string(), source }
    }
}

fn with_layout(shape: &ArrayShape, layout: Option<Layout>) -> ArrayShape {
    let layout = layout.unwrap_or_else(|| shape.layout_or_default());
    ArrayShape { layout: Some(layout), ..shape.clone() }
}

fn storage_bytes(shape: &ArrayShape) -> Result<usize, HostError> {
    Ok(PhysicalLayout::new(shape)?.storage_bytes(shape.element_type) as usize)
}

fn as_bytes<T: NativeType>(values: &[T]) -> &[u8] {
    // SAFETY: NativeType types are plain data without padding.
    unsafe { std::slice::from_raw_parts(values.as_ptr() as *const u8, std::mem::size_of_val(values)) }
}

/// A borrowed host array: no copy is made when a computation reads it.
///
/// The bytes are in the physical order of the view's layout (row-major unless one is given),
/// so a view can describe, say, column-major data without moving it.
///
/// ```rust
/// use hlojit_runtime::{ArrayView, Layout};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let row_major = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
/// let view = ArrayView::from_slice(&row_major, &[2, 3])?;
/// assert_eq!(view.shape().to_string(), "f32[2,3]{1,0}");
///
/// // The same six numbers read as a column-major 2x3 array: element (i, j) is at i + 2*j.
/// let col_major = ArrayView::from_slice(&row_major, &[2, 3])?.with_layout(Layout::new(vec![0, 1]))?;
/// assert_eq!(col_major.to_literal().as_slice::<f32>()?, &[1.0, 3.0, 5.0, 2.0, 4.0, 6.0]);
///
/// // A wrong length is an error, not a panic.
/// assert!(ArrayView::from_slice(&row_major, &[4, 2]).is_err());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct ArrayView<'a> {
    /// Borrowed from the buffer a view of a `HostBuffer` looks at: making one allocates nothing.
    shape: Cow<'a, ArrayShape>,
    data: &'a [u8],
}

/// An owned host array, 64-byte aligned.
///
/// A host buffer always has a layout (row-major when its shape came without one) and holds
/// exactly the bytes that layout's storage takes, padding included. It is what executables
/// return, and what they take as donated arguments.
///
/// ```rust
/// use hlojit_runtime::{ArrayShape, ElementType, HostBuffer, Layout};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let a = HostBuffer::from_slice(&[2, 2], &[1i32, 2, 3, 4])?;
/// assert_eq!(a.element_type(), ElementType::S32);
/// assert_eq!(a.dims(), &[2, 2]);
/// assert!(a.layout().is_row_major());
/// assert_eq!(a.as_slice::<i32>()?, &[1, 2, 3, 4]);
/// assert!(a.as_slice::<f32>().is_err()); // wrong element type
///
/// // Column-major storage of the same logical array.
/// let t = a.relayout(Layout::new(vec![0, 1]))?;
/// assert_eq!(t.as_slice::<i32>()?, &[1, 3, 2, 4]);
/// assert_eq!(t.to_literal(), a.to_literal());
///
/// let z = HostBuffer::zeros(&ArrayShape::new(ElementType::F32, vec![3]))?;
/// assert_eq!(z.bytes().len(), 12);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct HostBuffer {
    /// Shared with the executor that allocated it (outputs of a run share their plan's shape).
    shape: Arc<ArrayShape>,
    data: AlignedBuffer,
}

impl HostBuffer {
    /// Zeros of `shape` (row-major unless the shape has a layout).
    pub fn zeros(shape: &ArrayShape) -> Result<HostBuffer, HostError> {
        let shape = with_layout(shape, None);
        let data = AlignedBuffer::try_zeroed(storage_bytes(&shape)?).map_err(HostError::allocation(&shape))?;
        Ok(HostBuffer { shape: Arc::new(shape), data })
    }

    /// A buffer for a computation to write its output into: left uninitialized when the
    /// output fills it completely, zeroed when the layout has padding.
    ///
    /// # Safety
    /// Every element must be written before the buffer is read.
    pub unsafe fn for_output(shape: &ArrayShape) -> Result<HostBuffer, HostError> {
        let shape = Arc::new(with_layout(shape, None));
        let bytes = storage_bytes(&shape)?;
        let dense = bytes == shape.element_count() as usize * shape.element_type.byte_size();
        // SAFETY: with no padding, writing every element writes every byte.
        let data = if dense { unsafe { AlignedBuffer::try_uninit(bytes) } } else { AlignedBuffer::try_zeroed(bytes) };
        Ok(HostBuffer { data: data.map_err(HostError::allocation(&shape))?, shape })
    }

    /// [`HostBuffer::for_output`] for a shape with its layout set whose storage size is known.
    ///
    /// # Safety
    /// As [`HostBuffer::for_output`]; `bytes` and `dense` are `shape`'s storage size and whether
    /// it has no padding.
    pub(crate) unsafe fn for_output_sized(shape: Arc<ArrayShape>, bytes: usize, dense: bool) -> Result<HostBuffer, HostError> {
        // SAFETY: with no padding, writing every element writes every byte.
        let data = if dense { unsafe { AlignedBuffer::try_uninit(bytes) } } else { AlignedBuffer::try_zeroed(bytes) };
        Ok(HostBuffer { data: data.map_err(HostError::allocation(&shape))?, shape })
    }

    /// A row-major array from a slice of values (copied into aligned memory).
    ///
    /// # Errors
    /// [`HostError::Size`] when `values.len()` is not the product of `dims`.
    pub fn from_slice<T: NativeType>(dims: &[i64], values: &[T]) -> Result<HostBuffer, HostError> {
        Self::from_bytes(&ArrayShape::new(T::TYPE, dims.to_vec()), as_bytes(values))
    }

    /// An array from raw bytes in the physical order of the shape's layout (row-major when
    /// the shape has none).
    ///
    /// # Errors
    /// [`HostError::Layout`] when the layout does not fit the shape, [`HostError::Size`] when
    /// `bytes` is not exactly the layout's storage size (padding included).
    pub fn from_bytes(shape: &ArrayShape, bytes: &[u8]) -> Result<HostBuffer, HostError> {
        let shape = with_layout(shape, None);
        let expected = storage_bytes(&shape)?;
        if bytes.len() != expected {
            return Err(HostError::Size { shape: shape.to_string(), expected, got: bytes.len() });
        }
        let data = AlignedBuffer::try_from_bytes(bytes).map_err(HostError::allocation(&shape))?;
        Ok(HostBuffer { shape: Arc::new(shape), data })
    }

    /// Takes a literal's memory without copying (a literal is row-major).
    pub fn from_literal(literal: ArrayLiteral) -> HostBuffer {
        let shape = with_layout(&literal.shape(), None);
        HostBuffer { shape: Arc::new(shape), data: literal.into_buffer() }
    }

    /// A copy of a logical array laid out as `layout` says.
    pub fn from_literal_with_layout(literal: &ArrayLiteral, layout: Layout) -> Result<HostBuffer, HostError> {
        let shape = with_layout(&literal.shape(), Some(layout));
        let physical = PhysicalLayout::new(&shape)?;
        let elem = shape.element_type.byte_size();
        let bytes = physical.storage_bytes(shape.element_type) as usize;
        let mut data = AlignedBuffer::try_zeroed(bytes).map_err(HostError::allocation(&shape))?;
        logical_to_physical(literal.bytes(), data.as_mut_slice(), &shape.dims, &physical, elem);
        Ok(HostBuffer { shape: Arc::new(shape), data })
    }

    /// Reads a `.npy` file as a row-major array of `element_type` (raw-bits storage for types
    /// NumPy lacks, as in [`npy`]). Without `element_type`, the file's dtype decides.
    ///
    /// ```rust
    /// use hlojit_runtime::{ElementType, HostBuffer, Layout};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let path = std::env::temp_dir().join(format!("hlojit-host-doc-{}.npy", std::process::id()));
    /// let col_major = HostBuffer::from_slice(&[2, 2], &[1.0f64, 2.0, 3.0, 4.0])?.relayout(Layout::new(vec![0, 1]))?;
    /// col_major.write_npy(&path)?; // written in logical order
    /// let back = HostBuffer::read_npy(&path, Some(ElementType::F64))?;
    /// assert_eq!(back.as_slice::<f64>()?, &[1.0, 2.0, 3.0, 4.0]);
    /// assert!(back.layout().is_row_major());
    /// # std::fs::remove_file(&path)?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`HostError::Npy`] when the file cannot be read or does not hold `element_type`.
    pub fn read_npy(path: &Path, element_type: Option<ElementType>) -> Result<HostBuffer, HostError> {
        Ok(Self::from_literal(npy::read(path, element_type)?))
    }

    /// Writes the array as `.npy` (in logical order, whatever its layout).
    pub fn write_npy(&self, path: &Path) -> Result<(), HostError> {
        Ok(npy::write(path, &self.to_literal())?)
    }

    /// The same data in another layout.
    pub fn relayout(&self, layout: Layout) -> Result<HostBuffer, HostError> {
        Self::from_literal_with_layout(&self.to_literal(), layout)
    }

    /// The shape, always with its layout set.
    pub fn shape(&self) -> &ArrayShape {
        &self.shape
    }

    /// The type of each element.
    pub fn element_type(&self) -> ElementType {
        self.shape.element_type
    }

    /// Logical dimension sizes, major-most first as in `f32[2,3]`.
    pub fn dims(&self) -> &[i64] {
        &self.shape.dims
    }

    /// The storage layout (never absent for a host buffer).
    pub fn layout(&self) -> &Layout {
        self.shape.layout.as_ref().expect("host buffers always have a layout")
    }

    /// The raw bytes in physical order.
    pub fn bytes(&self) -> &[u8] {
        self.data.as_slice()
    }

    /// The raw bytes in physical order, for writing in place.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.data.as_mut_slice()
    }

    /// The address of the data (stable while the buffer lives; a donated buffer's address is
    /// that of the output that reuses it).
    pub fn as_ptr(&self) -> *const u8 {
        self.data.as_ptr()
    }

    /// The mutable address of the data; see [`HostBuffer::as_ptr`].
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.data.as_mut_ptr()
    }

    /// The elements in physical order as `T`.
    pub fn as_slice<T: NativeType>(&self) -> Result<&[T], HostError> {
        if T::TYPE != self.element_type() {
            return Err(HostError::Type { actual: self.element_type(), requested: T::TYPE });
        }
        let n = self.data.len() / std::mem::size_of::<T>();
        // SAFETY: the buffer is 64-byte aligned and holds n values of T.
        Ok(unsafe { std::slice::from_raw_parts(self.data.as_ptr() as *const T, n) })
    }

    /// The array in logical row-major order.
    pub fn to_literal(&self) -> ArrayLiteral {
        self.view().to_literal()
    }

    /// The array in logical row-major order, without copying when it already is.
    pub fn into_literal(self) -> ArrayLiteral {
        let dense = PhysicalLayout::new(&self.shape).is_ok_and(|p| p.is_row_major_dense());
        let count = self.shape.element_count() as usize * self.shape.element_type.byte_size();
        if dense && self.data.len() == count {
            return ArrayLiteral::from_buffer(self.shape.element_type, &self.shape.dims, self.data);
        }
        self.to_literal()
    }

    /// A borrowed view of the same bytes and shape (no copy).
    pub fn view(&self) -> ArrayView<'_> {
        ArrayView { shape: Cow::Borrowed(&self.shape), data: self.data.as_slice() }
    }
}

impl<'a> ArrayView<'a> {
    /// A row-major view of a slice of values. Note the argument order: values first, unlike
    /// [`HostBuffer::from_slice`].
    ///
    /// # Errors
    /// [`HostError::Size`] when `values.len()` is not the product of `dims`.
    pub fn from_slice<T: NativeType>(values: &'a [T], dims: &[i64]) -> Result<ArrayView<'a>, HostError> {
        Self::from_bytes(&ArrayShape::new(T::TYPE, dims.to_vec()), as_bytes(values))
    }

    /// A view of raw bytes in the physical order of the shape's layout (row-major when the
    /// shape has none).
    ///
    /// # Errors
    /// As [`HostBuffer::from_bytes`].
    pub fn from_bytes(shape: &ArrayShape, data: &'a [u8]) -> Result<ArrayView<'a>, HostError> {
        let shape = with_layout(shape, None);
        let expected = storage_bytes(&shape)?;
        if data.len() != expected {
            return Err(HostError::Size { shape: shape.to_string(), expected, got: data.len() });
        }
        Ok(ArrayView { shape: Cow::Owned(shape), data })
    }

    /// A view of a literal (row-major).
    pub fn from_literal(literal: &'a ArrayLiteral) -> ArrayView<'a> {
        ArrayView { shape: Cow::Owned(with_layout(&literal.shape(), None)), data: literal.bytes() }
    }

    /// The same bytes taken to be laid out as `layout` says (say, column-major data).
    pub fn with_layout(self, layout: Layout) -> Result<ArrayView<'a>, HostError> {
        Self::from_bytes(&ArrayShape { layout: Some(layout), ..self.shape.into_owned() }, self.data)
    }

    /// The shape, always with its layout set.
    pub fn shape(&self) -> &ArrayShape {
        &self.shape
    }

    /// The viewed bytes, in the physical order of the layout.
    pub fn bytes(&self) -> &'a [u8] {
        self.data
    }

    /// The array in logical row-major order.
    pub fn to_literal(&self) -> ArrayLiteral {
        let mut out = ArrayLiteral::zeros(self.shape.element_type, &self.shape.dims);
        let physical = PhysicalLayout::new(&self.shape).expect("checked when the view was made");
        let elem = self.shape.element_type.byte_size();
        physical_to_logical(self.data, out.bytes_mut(), &self.shape.dims, &physical, elem);
        out
    }

    /// An owned copy.
    pub fn to_buffer(&self) -> HostBuffer {
        HostBuffer { shape: Arc::new(ArrayShape::clone(&self.shape)), data: AlignedBuffer::from_bytes(self.data) }
    }

    /// An owned copy, or an error when the memory cannot be had.
    pub fn try_to_buffer(&self) -> Result<HostBuffer, HostError> {
        let data = AlignedBuffer::try_from_bytes(self.data).map_err(HostError::allocation(&self.shape))?;
        Ok(HostBuffer { shape: Arc::new(ArrayShape::clone(&self.shape)), data })
    }
}

impl<'a> From<&'a ArrayLiteral> for ArrayView<'a> {
    fn from(literal: &'a ArrayLiteral) -> ArrayView<'a> {
        ArrayView::from_literal(literal)
    }
}

impl<'a> From<&'a HostBuffer> for ArrayView<'a> {
    fn from(buffer: &'a HostBuffer) -> ArrayView<'a> {
        buffer.view()
    }
}
