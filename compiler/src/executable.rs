//! A compiled, loaded computation: run it on host literals as often as you like, from as many
//! threads as you like.

use crate::backend::jit::Jit;
use crate::codegen::custom_call::custom_call_targets;
use crate::error::{Error, Result};
use crate::hlo::Module;
use crate::pipeline::{compile_to, prepare, CompileOptions, OutputKind};
use hlojit_runtime::custom_call::{clear_last_error, resolve_target, take_last_error, CustomCallRegistry, Plugin};
use hlojit_runtime::physical::{logical_to_physical, physical_to_logical, PhysicalLayout};
use hlojit_runtime::{AlignedBuffer, ArrayLiteral, ArrayShape, Literal, Shape};
use std::sync::Arc;
use std::time::{Duration, Instant};

type EntryFn = unsafe extern "C" fn(*const *const u8, *const *mut u8) -> i32;

const ENTRY_SYMBOL: &str = "hlojit_entry";

/// A compiled computation, loaded and ready to run.
pub struct Executable {
    _jit: Jit,
    /// Plugins holding custom-call targets of this code; unloaded only after the code is.
    _plugins: Vec<Arc<Plugin>>,
    entry: EntryFn,
    parameter_shapes: Vec<Shape>,
    result_shape: Shape,
    compile_time: Duration,
}

impl std::fmt::Debug for Executable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executable")
            .field("parameter_shapes", &self.parameter_shapes)
            .field("result_shape", &self.result_shape)
            .finish_non_exhaustive()
    }
}

impl Executable {
    /// Compiles and loads a module for this machine. Custom-call targets are resolved now:
    /// from `options.custom_calls`, then the process-wide registry (functions, then plugins),
    /// then the process's exported symbols; a target found nowhere is an error naming it.
    pub fn compile(module: &Module, options: &CompileOptions) -> Result<Executable> {
        let start = Instant::now();
        if !options.target.is_host() {
            return Err(Error::Unsupported("JIT compilation for a target other than the host".into()));
        }
        let prepared = prepare(module)?;
        let mut symbols: Vec<(String, usize)> =
            hlojit_runtime::symbols::runtime_symbols().into_iter().map(|(n, a)| (n.to_string(), a)).collect();
        let mut plugins: Vec<Arc<Plugin>> = Vec::new();
        let registries = [&options.custom_calls, CustomCallRegistry::global()];
        for target in custom_call_targets(&prepared) {
            let resolved = resolve_target(&registries, &target).ok_or_else(|| Error::MissingCustomCallTarget(target.clone()))?;
            if let Some(p) = resolved.plugin {
                if !plugins.iter().any(|q| Arc::ptr_eq(q, &p)) {
                    plugins.push(p);
                }
            }
            symbols.retain(|(n, _)| *n != target);
            symbols.push((target, resolved.address));
        }
        let object = compile_to(&prepared, ENTRY_SYMBOL, options, OutputKind::Object, true)?;
        let jit = Jit::new(&symbols)?;
        jit.add_object(&object)?;
        let address = jit.lookup(ENTRY_SYMBOL)?;
        // SAFETY: the symbol is the entry function we generated with this signature.
        let entry: EntryFn = unsafe { std::mem::transmute::<usize, EntryFn>(address) };
        Ok(Executable {
            _jit: jit,
            _plugins: plugins,
            entry,
            parameter_shapes: prepared.entry_parameter_shapes(),
            result_shape: prepared.entry_result_shape(),
            compile_time: start.elapsed(),
        })
    }

    pub fn parameter_shapes(&self) -> &[Shape] {
        &self.parameter_shapes
    }

    pub fn result_shape(&self) -> &Shape {
        &self.result_shape
    }

    /// Time spent compiling and loading.
    pub fn compile_time(&self) -> Duration {
        self.compile_time
    }

    /// Runs the computation. Arguments are logical (row-major) host arrays, one per parameter
    /// (tuple parameters as tuple literals); the result is returned the same way.
    pub fn run(&self, args: &[Literal]) -> Result<Literal> {
        if args.len() != self.parameter_shapes.len() {
            return Err(Error::InvalidArgument(format!(
                "the computation takes {} arguments, {} given",
                self.parameter_shapes.len(),
                args.len()
            )));
        }
        let mut inputs: Vec<Staged> = Vec::new();
        for (i, (arg, shape)) in args.iter().zip(&self.parameter_shapes).enumerate() {
            if !arg.shape().compatible(shape) {
                return Err(Error::InvalidArgument(format!(
                    "argument {i} has shape {}, parameter {i} is {}",
                    arg.shape().to_text(false),
                    shape.to_text(false)
                )));
            }
            for (leaf, leaf_shape) in arg.leaves().into_iter().zip(shape.array_leaves()) {
                inputs.push(Staged::input(leaf, leaf_shape)?);
            }
        }
        let mut outputs: Vec<(AlignedBuffer, ArrayShape, PhysicalLayout)> = Vec::new();
        for leaf in self.result_shape.array_leaves() {
            let physical = PhysicalLayout::new(leaf).map_err(|e| Error::Unsupported(e.to_string()))?;
            let bytes = physical.storage_elements as usize * leaf.element_type.byte_size();
            outputs.push((AlignedBuffer::zeroed(bytes), leaf.clone(), physical));
        }
        let arg_ptrs: Vec<*const u8> = inputs.iter().map(Staged::ptr).collect();
        let mut result_ptrs: Vec<*mut u8> = outputs.iter_mut().map(|(b, _, _)| b.as_mut_ptr()).collect();
        clear_last_error();
        // SAFETY: every pointer is a live buffer of the size and layout the code expects.
        let status = unsafe { (self.entry)(arg_ptrs.as_ptr(), result_ptrs.as_mut_ptr()) };
        if status != 0 {
            // A failed custom call left its message on this thread.
            let message = take_last_error().unwrap_or_else(|| format!("the computation failed with status {status}"));
            return Err(Error::Execution(message));
        }
        let mut leaves = outputs.into_iter().map(|(buffer, shape, physical)| {
            let mut out = ArrayLiteral::zeros(shape.element_type, &shape.dims);
            let elem = shape.element_type.byte_size();
            physical_to_logical(buffer.as_slice(), out.bytes_mut(), &shape.dims, &physical, elem);
            out
        });
        Ok(rebuild(&self.result_shape, &mut leaves))
    }
}

/// An argument leaf in the layout the code expects: the literal itself when that layout is
/// row-major, a converted copy otherwise.
enum Staged<'a> {
    Borrowed(&'a ArrayLiteral),
    Converted(AlignedBuffer),
}

impl<'a> Staged<'a> {
    fn input(leaf: &'a ArrayLiteral, shape: &ArrayShape) -> Result<Staged<'a>> {
        let physical = PhysicalLayout::new(shape).map_err(|e| Error::Unsupported(e.to_string()))?;
        if physical.is_row_major_dense() {
            return Ok(Staged::Borrowed(leaf));
        }
        let elem = shape.element_type.byte_size();
        let mut buffer = AlignedBuffer::zeroed(physical.storage_elements as usize * elem);
        logical_to_physical(leaf.bytes(), buffer.as_mut_slice(), &shape.dims, &physical, elem);
        Ok(Staged::Converted(buffer))
    }

    fn ptr(&self) -> *const u8 {
        match self {
            Staged::Borrowed(l) => l.bytes().as_ptr(),
            Staged::Converted(b) => b.as_ptr(),
        }
    }
}

fn rebuild(shape: &Shape, leaves: &mut impl Iterator<Item = ArrayLiteral>) -> Literal {
    match shape {
        Shape::Array(_) => Literal::Array(leaves.next().expect("one literal per leaf")),
        Shape::Tuple(elements) => Literal::Tuple(elements.iter().map(|e| rebuild(e, leaves)).collect()),
        Shape::Token | Shape::Opaque => Literal::Token,
    }
}
