//! A compiled, loaded computation: run it on host literals as often as you like, from as many
//! threads as you like.

use crate::backend::jit::Jit;
use crate::codegen::custom_call::custom_call_targets;
use crate::error::{Error, Result};
use crate::hlo::Module;
use crate::pipeline::{compile_objects, prepare, CompileOptions, CompileStats};
use crate::hlo::AliasKind;
use crate::codegen::collectives::groups::DeviceGrid;
use hlojit_runtime::custom_call::{clear_last_error, resolve_target, take_last_error, CustomCallRegistry, Plugin};
use hlojit_runtime::physical::PhysicalLayout;
use hlojit_runtime::{ArrayLiteral, ArrayShape, ArrayView, HostBuffer, Literal, Shape};
use std::collections::HashMap;
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
    /// For each argument (parameter leaf), how errors name it.
    argument_names: Vec<String>,
    /// (result leaf, parameter leaf, kind) of `input_output_alias`.
    aliases: Vec<(usize, usize, AliasKind)>,
    compile_time: Duration,
    compile_stats: CompileStats,
    /// Replicas × partitions the program runs on (see `run_devices`).
    pub(crate) grid: DeviceGrid,
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
        let prepare_time = start.elapsed();
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
        let (objects, mut stats) = compile_objects(&prepared, ENTRY_SYMBOL, options)?;
        stats.prepare = prepare_time;
        let load_start = Instant::now();
        let jit = Jit::new(&symbols)?;
        for object in &objects {
            jit.add_object(object)?;
        }
        let address = jit.lookup(ENTRY_SYMBOL)?;
        stats.load = load_start.elapsed();
        // SAFETY: the symbol is the entry function we generated with this signature.
        let entry: EntryFn = unsafe { std::mem::transmute::<usize, EntryFn>(address) };
        let entry_comp = prepared.entry_computation();
        let mut argument_names = Vec::new();
        for (i, p) in entry_comp.parameters().into_iter().enumerate() {
            let inst = entry_comp.get(p);
            let leaves = inst.shape.array_leaves().len();
            for l in 0..leaves {
                let leaf = if leaves > 1 || inst.shape.is_tuple() { format!(", leaf {l}") } else { String::new() };
                argument_names.push(format!("parameter {i} ({}{leaf})", inst.name));
            }
        }
        let aliases = prepared.alias_leaf_pairs();
        Ok(Executable {
            _jit: jit,
            _plugins: plugins,
            entry,
            parameter_shapes: prepared.entry_parameter_shapes(),
            result_shape: prepared.entry_result_shape(),
            argument_names,
            aliases,
            compile_time: start.elapsed(),
            compile_stats: stats,
            grid: DeviceGrid::of(module),
        })
    }

    /// The entry computation's parameter shapes, with the layouts arguments must have (those of
    /// `entry_computation_layout`, or the default descending layout).
    pub fn parameter_shapes(&self) -> &[Shape] {
        &self.parameter_shapes
    }

    /// The entry computation's result shape; a tuple result comes back from [`Executable::run`]
    /// as its leaves, in order.
    pub fn result_shape(&self) -> &Shape {
        &self.result_shape
    }

    /// Time spent compiling and loading.
    pub fn compile_time(&self) -> Duration {
        self.compile_time
    }

    /// Time spent in each phase of compilation.
    pub fn compile_stats(&self) -> &CompileStats {
        &self.compile_stats
    }

    /// The parameter leaves as `run` takes them (tuple parameters flattened depth-first).
    pub fn argument_shapes(&self) -> Vec<&ArrayShape> {
        self.parameter_shapes.iter().flat_map(Shape::array_leaves).collect()
    }

    /// The result leaves as `run` returns them.
    pub fn output_shapes(&self) -> Vec<&ArrayShape> {
        self.result_shape.array_leaves()
    }

    /// Runs the computation on host arrays, one per parameter leaf (tuple parameters
    /// flattened depth-first), each in its parameter's layout; returns one buffer per result
    /// leaf.
    ///
    /// An argument passed by value ([`Argument::Donated`], or a `HostBuffer`) is donated: an
    /// output the module aliases with it (`input_output_alias`) is computed in its memory and
    /// returned in it. An argument passed by reference is never modified: an aliased output
    /// gets a copy of it to work in. A `must-alias` parameter must be donated.
    ///
    /// A program for several devices (`replica_count` or `num_partitions` above 1) runs with
    /// [`Executable::run_devices`] instead.
    pub fn run<'a, A: Into<Argument<'a>>>(&self, args: impl IntoIterator<Item = A>) -> Result<Vec<HostBuffer>> {
        self.check_single_device()?;
        self.run_on_this_thread(args.into_iter().map(Into::into).collect())
    }

    /// `run` for the device this thread runs as (any device of a multi-device run).
    pub(crate) fn run_on_this_thread<'a>(&self, args: Vec<Argument<'a>>) -> Result<Vec<HostBuffer>> {
        let params = self.argument_shapes();
        if args.len() != params.len() {
            return Err(Error::InvalidArgument(format!(
                "the computation takes {} arguments, {} given",
                params.len(),
                args.len()
            )));
        }
        for (j, (arg, want)) in args.iter().zip(&params).enumerate() {
            self.check_argument(j, arg.shape(), want)?;
        }
        // Memory of aliased parameters: the donated buffer, or a private copy.
        let mut owned: Vec<Option<HostBuffer>> = Vec::with_capacity(args.len());
        let mut views: Vec<Option<ArrayView<'a>>> = Vec::with_capacity(args.len());
        let aliased_param: HashMap<usize, (usize, AliasKind)> = self.aliases.iter().map(|&(k, j, kind)| (j, (k, kind))).collect();
        for (j, arg) in args.into_iter().enumerate() {
            match (arg, aliased_param.get(&j)) {
                (Argument::Donated(b), _) => {
                    owned.push(Some(b));
                    views.push(None);
                }
                (Argument::Borrowed(v), Some(&(k, AliasKind::MustAlias))) => {
                    let _ = v;
                    return Err(Error::InvalidArgument(format!(
                        "{} must be donated: the module makes output {k} must-alias it",
                        self.argument_names[j]
                    )));
                }
                (Argument::Borrowed(v), Some(_)) => {
                    owned.push(Some(v.to_buffer()));
                    views.push(None);
                }
                (Argument::Borrowed(v), None) => {
                    owned.push(None);
                    views.push(Some(v));
                }
            }
        }
        let aliased_output: HashMap<usize, usize> = self.aliases.iter().map(|&(k, j, _)| (k, j)).collect();
        let mut outputs: Vec<Option<HostBuffer>> = Vec::new();
        for (k, shape) in self.output_shapes().into_iter().enumerate() {
            outputs.push(match aliased_output.get(&k) {
                Some(_) => None,
                // SAFETY: the computation writes every element of its outputs before returning.
                None => Some(unsafe { HostBuffer::for_output(shape) }.map_err(|e| Error::Internal(e.to_string()))?),
            });
        }
        let arg_ptrs: Vec<*const u8> = owned
            .iter_mut()
            .zip(&views)
            .map(|(o, v)| match (o, v) {
                (Some(b), _) => b.as_mut_ptr() as *const u8,
                (None, Some(v)) => v.bytes().as_ptr(),
                (None, None) => std::ptr::null(),
            })
            .collect();
        let mut result_ptrs: Vec<*mut u8> = outputs
            .iter_mut()
            .enumerate()
            .map(|(k, o)| match o {
                Some(b) => b.as_mut_ptr(),
                None => arg_ptrs[aliased_output[&k]] as *mut u8,
            })
            .collect();
        clear_last_error();
        // SAFETY: every pointer is a live buffer of the size and layout the code expects;
        // aliased outputs point at memory this call owns.
        let status = unsafe { (self.entry)(arg_ptrs.as_ptr(), result_ptrs.as_mut_ptr()) };
        if status != 0 {
            // A failed custom call left its message on this thread.
            let message = take_last_error().unwrap_or_else(|| format!("the computation failed with status {status}"));
            return Err(Error::Execution(message));
        }
        let mut results = Vec::with_capacity(outputs.len());
        for (k, o) in outputs.into_iter().enumerate() {
            results.push(match o {
                Some(b) => b,
                None => owned[aliased_output[&k]].take().ok_or_else(|| {
                    Error::Internal(format!("output {k} and another output alias the same parameter"))
                })?,
            });
        }
        Ok(results)
    }

    fn check_argument(&self, j: usize, got: &ArrayShape, want: &ArrayShape) -> Result<()> {
        let name = &self.argument_names[j];
        if got.element_type != want.element_type || got.dims != want.dims {
            return Err(Error::InvalidArgument(format!(
                "argument {j} for {name} is {}, the parameter is {}",
                ArrayShape { layout: None, ..got.clone() },
                ArrayShape { layout: None, ..want.clone() }
            )));
        }
        if got.layout_or_default() != want.layout_or_default() {
            return Err(Error::InvalidArgument(format!(
                "argument {j} for {name} is laid out {}, the parameter expects {} (HostBuffer::relayout converts)",
                got.layout_or_default(),
                want.layout_or_default()
            )));
        }
        Ok(())
    }

    /// Runs the computation on logical (row-major) literals, one per parameter (tuples as
    /// tuple literals), converting to and from the entry layouts; returns the result the same
    /// way.
    pub fn run_literals(&self, args: &[Literal]) -> Result<Literal> {
        self.check_single_device()?;
        self.run_literals_on_this_thread(args)
    }

    /// `run_literals` for the device this thread runs as.
    pub(crate) fn run_literals_on_this_thread(&self, args: &[Literal]) -> Result<Literal> {
        if args.len() != self.parameter_shapes.len() {
            return Err(Error::InvalidArgument(format!(
                "the computation takes {} arguments, {} given",
                self.parameter_shapes.len(),
                args.len()
            )));
        }
        let mut staged: Vec<HostBuffer> = Vec::new();
        let mut leaves: Vec<&ArrayLiteral> = Vec::new();
        for (i, (arg, shape)) in args.iter().zip(&self.parameter_shapes).enumerate() {
            if !arg.shape().compatible(shape) {
                return Err(Error::InvalidArgument(format!(
                    "argument {i} has shape {}, parameter {i} is {}",
                    arg.shape().to_text(false),
                    shape.to_text(false)
                )));
            }
            leaves.extend(arg.leaves());
        }
        let params = self.argument_shapes();
        let mut needs_copy = Vec::new();
        for (leaf, shape) in leaves.iter().zip(&params) {
            let layout = shape.layout_or_default();
            let row_major = PhysicalLayout::for_layout(&shape.dims, &layout).is_ok_and(|p| p.is_row_major_dense());
            needs_copy.push(!row_major);
            if !row_major {
                staged.push(HostBuffer::from_literal_with_layout(leaf, layout).map_err(|e| Error::Unsupported(e.to_string()))?);
            }
        }
        let mut staged_iter = staged.iter();
        let views: Vec<ArrayView> = leaves
            .iter()
            .zip(&needs_copy)
            .map(|(leaf, &copy)| if copy { staged_iter.next().expect("staged").view() } else { ArrayView::from_literal(leaf) })
            .collect();
        let outputs = self.run_on_this_thread(views.into_iter().map(Argument::from).collect())?;
        let mut it = outputs.into_iter().map(HostBuffer::into_literal);
        Literal::from_leaves(&self.result_shape, &mut it).ok_or_else(|| Error::Internal("result leaves missing".into()))
    }
}

/// An argument of [`Executable::run`]: borrowed (never modified) or donated.
#[derive(Debug)]
pub enum Argument<'a> {
    /// Read only: an output aliased with this parameter gets a fresh buffer (the argument is
    /// copied into it first when the computation updates it in place).
    Borrowed(ArrayView<'a>),
    /// Given up to the execution: an output aliased with this parameter (`input_output_alias`)
    /// is computed in this buffer's memory, in place.
    Donated(HostBuffer),
}

impl Argument<'_> {
    /// The argument's shape, layout included.
    pub fn shape(&self) -> &ArrayShape {
        match self {
            Argument::Borrowed(v) => v.shape(),
            Argument::Donated(b) => b.shape(),
        }
    }
}

impl<'a> From<ArrayView<'a>> for Argument<'a> {
    fn from(v: ArrayView<'a>) -> Argument<'a> {
        Argument::Borrowed(v)
    }
}

impl<'a> From<&'a HostBuffer> for Argument<'a> {
    fn from(b: &'a HostBuffer) -> Argument<'a> {
        Argument::Borrowed(b.view())
    }
}

impl<'a> From<&'a ArrayLiteral> for Argument<'a> {
    fn from(l: &'a ArrayLiteral) -> Argument<'a> {
        Argument::Borrowed(ArrayView::from_literal(l))
    }
}

impl From<HostBuffer> for Argument<'_> {
    fn from(b: HostBuffer) -> Self {
        Argument::Donated(b)
    }
}
