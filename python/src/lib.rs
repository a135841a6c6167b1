//! `hlojit._hlojit`: compile HLO or StableHLO (text or bytes) and run it on host arrays
//! handed over as raw bytes (the Python side, `hlojit/__init__.py`, turns numpy arrays into
//! those and back). The same library is the PJRT plugin: `GetPjrtApi`, which `hlojit-pjrt`
//! defines, is exported from it (a cdylib exports its dependencies' `#[no_mangle]` functions).

// Linked for its exported `GetPjrtApi`.
use hlojit_pjrt as _;

mod targets;

use hlojit::{Argument, ArrayShape, ArrayView, ElementType, HostBuffer, Layout};
use pyo3::buffer::PyBuffer;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::exceptions::PyBufferError;
use std::ffi::{c_int, c_void};

create_exception!(_hlojit, HlojitError, PyException, "An error hlojit reports (parse, verify, compile or run).");

fn err(e: impl std::fmt::Display) -> PyErr {
    HlojitError::new_err(e.to_string())
}

/// numpy's (and ml_dtypes') dtype names and hlojit's element types.
const DTYPES: &[(&str, ElementType)] = &[
    ("bool", ElementType::Pred),
    ("int2", ElementType::S2),
    ("int4", ElementType::S4),
    ("int8", ElementType::S8),
    ("int16", ElementType::S16),
    ("int32", ElementType::S32),
    ("int64", ElementType::S64),
    ("uint2", ElementType::U2),
    ("uint4", ElementType::U4),
    ("uint8", ElementType::U8),
    ("uint16", ElementType::U16),
    ("uint32", ElementType::U32),
    ("uint64", ElementType::U64),
    ("float16", ElementType::F16),
    ("bfloat16", ElementType::BF16),
    ("float32", ElementType::F32),
    ("float64", ElementType::F64),
    ("float8_e5m2", ElementType::F8E5M2),
    ("float8_e4m3fn", ElementType::F8E4M3FN),
    ("float8_e4m3b11fnuz", ElementType::F8E4M3B11FNUZ),
    ("float8_e5m2fnuz", ElementType::F8E5M2FNUZ),
    ("float8_e4m3fnuz", ElementType::F8E4M3FNUZ),
    ("float8_e4m3", ElementType::F8E4M3),
    ("float8_e3m4", ElementType::F8E3M4),
    ("float8_e8m0fnu", ElementType::F8E8M0FNU),
    ("float4_e2m1fn", ElementType::F4E2M1FN),
    ("complex64", ElementType::C64),
    ("complex128", ElementType::C128),
];

fn element_type(name: &str) -> PyResult<ElementType> {
    DTYPES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t).ok_or_else(|| err(format!("hlojit has no element type for numpy dtype '{name}'")))
}

fn dtype_name(t: ElementType) -> &'static str {
    DTYPES.iter().find(|(_, e)| *e == t).map_or("uint8", |(n, _)| n)
}

/// A result array's storage, lent to numpy without a copy through the buffer protocol
/// (read only: one flat run of bytes in the physical order of its layout).
#[pyclass(frozen, module = "hlojit._hlojit")]
struct Output {
    data: HostBuffer,
}

#[pymethods]
impl Output {
    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut pyo3::ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        use pyo3::ffi;
        if view.is_null() {
            return Err(PyBufferError::new_err("the buffer view is null"));
        }
        if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err("hlojit results are read only"));
        }
        let bytes = slf.get().data.bytes();
        let (ptr, len) = (bytes.as_ptr(), bytes.len());
        // SAFETY: `view` is the caller's Py_buffer to fill; the data lives in the object the
        // view holds a reference to (`obj`), and HostBuffer storage never moves.
        unsafe {
            (*view).obj = slf.into_any().into_ptr();
            (*view).buf = ptr as *mut c_void;
            (*view).len = len as isize;
            (*view).readonly = 1;
            (*view).itemsize = 1;
            (*view).format = if flags & ffi::PyBUF_FORMAT == ffi::PyBUF_FORMAT { c"B".as_ptr() as *mut _ } else { std::ptr::null_mut() };
            (*view).ndim = 1;
            (*view).shape = if flags & ffi::PyBUF_ND == ffi::PyBUF_ND { &mut (*view).len } else { std::ptr::null_mut() };
            (*view).strides = if flags & ffi::PyBUF_STRIDES == ffi::PyBUF_STRIDES { &mut (*view).itemsize } else { std::ptr::null_mut() };
            (*view).suboffsets = std::ptr::null_mut();
            (*view).internal = std::ptr::null_mut();
        }
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, _view: *mut pyo3::ffi::Py_buffer) {}
}

/// A compiled module.
#[pyclass(frozen, module = "hlojit._hlojit")]
struct Executable {
    exe: hlojit::Executable,
}

#[pymethods]
impl Executable {
    /// Runs on one device: `args` are (dtype name, shape, minor-to-major order, bytes in that
    /// physical order) per parameter leaf; returns (dtype name, shape, minor-to-major order,
    /// buffer) per result leaf. An argument laid out as its parameter is read in place, and a
    /// result handed over without a copy whenever its layout is a plain permutation of the
    /// dimensions (numpy strides express it); only other layouts are copied.
    #[allow(clippy::type_complexity)]
    fn run<'py>(&self, py: Python<'py>, args: Vec<(String, Vec<i64>, Vec<i64>, Bound<'py, PyAny>)>) -> PyResult<Vec<(String, Vec<i64>, Vec<i64>, Bound<'py, Output>)>> {
        let mut buffers = Vec::with_capacity(args.len());
        for (_, _, _, data) in &args {
            buffers.push(PyBuffer::<u8>::get(data)?);
        }
        let mut views = Vec::with_capacity(args.len());
        for ((dtype, dims, minor_to_major, _), buffer) in args.iter().zip(&buffers) {
            if !buffer.is_c_contiguous() {
                return Err(err("arguments must be C-contiguous byte buffers"));
            }
            // SAFETY: the buffer stays exported (so its memory valid and unmoved) until
            // `buffers` drops, after the run; nothing writes to it meanwhile (borrowed
            // arguments are read only).
            let bytes = unsafe { std::slice::from_raw_parts(buffer.buf_ptr() as *const u8, buffer.len_bytes()) };
            let shape = ArrayShape::new(element_type(dtype)?, dims.clone()).with_layout(Layout::new(minor_to_major.clone()));
            views.push(ArrayView::from_bytes(&shape, bytes).map_err(err)?);
        }
        // Arguments whose parameter wants another layout: one copy, in the parameter's layout.
        // (Ones that do not fit the parameter at all go through as given, for Executable::run
        // to say what is wrong.)
        let parameters = self.exe.argument_shapes();
        let staged: Vec<Option<HostBuffer>> = views
            .iter()
            .enumerate()
            .map(|(j, view)| match parameters.get(j) {
                Some(p) if p.same_dims_and_type(view.shape()) && p.layout_or_default() != view.shape().layout_or_default() => {
                    let (want, literal) = (p.layout_or_default(), view.to_literal());
                    // A literal is row-major: a row-major parameter takes its memory as it is.
                    if want == Layout::row_major(literal.shape().dims.len()) {
                        Ok(Some(HostBuffer::from_literal(literal)))
                    } else {
                        HostBuffer::from_literal_with_layout(&literal, want).map(Some).map_err(err)
                    }
                }
                _ => Ok(None),
            })
            .collect::<PyResult<_>>()?;
        let arguments: Vec<Argument> = views
            .into_iter()
            .zip(&staged)
            .map(|(view, s)| Argument::Borrowed(s.as_ref().map_or(view, HostBuffer::view)))
            .collect();
        let exe = &self.exe;
        let outputs: Vec<HostBuffer> = py.detach(|| exe.run(arguments)).map_err(err)?;
        drop(buffers);
        outputs
            .into_iter()
            .map(|b| {
                // numpy strides express a permutation of the dimensions, not tiles or packed
                // sub-byte elements.
                let plain = b.layout().is_untiled() && b.layout().element_size_in_bits == 0;
                let b = if plain { b } else { b.relayout(Layout::row_major(b.dims().len())).map_err(err)? };
                let minor_to_major = b.layout().minor_to_major.clone();
                Ok((dtype_name(b.element_type()).to_string(), b.dims().to_vec(), minor_to_major, Bound::new(py, Output { data: b })?))
            })
            .collect()
    }

    /// Parameter leaves as (dtype name, shape).
    fn parameters(&self) -> Vec<(String, Vec<i64>)> {
        self.exe.argument_shapes().iter().map(|s| (dtype_name(s.element_type).to_string(), s.dims.clone())).collect()
    }

    /// Result leaves as (dtype name, shape).
    fn results(&self) -> Vec<(String, Vec<i64>)> {
        self.exe.output_shapes().iter().map(|s| (dtype_name(s.element_type).to_string(), s.dims.clone())).collect()
    }
}

/// Compiles HLO text or StableHLO (MLIR text; bytecode once hlojit reads it), chosen by content.
#[pyfunction]
fn compile(py: Python<'_>, module: Vec<u8>) -> PyResult<Executable> {
    let exe = py.detach(|| hlojit::Client::new().compile_stablehlo(&module)).map_err(err)?;
    Ok(Executable { exe })
}

#[pymodule]
fn _hlojit(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(targets::register_custom_call_target, m)?)?;
    m.add_class::<Executable>()?;
    m.add_class::<Output>()?;
    m.add("HlojitError", m.py().get_type::<HlojitError>())?;
    Ok(())
}
