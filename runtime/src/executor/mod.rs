//! Running compiled code on host arrays, for JIT executables and AOT objects alike: argument
//! checks, donation and copy protection of aliased parameters (`input_output_alias`), output
//! allocation, deadlines and cancellation, and errors with context for every failure.
//!
//! An [`Executor`] pairs an entry function (`int f(const void* const* args, void* const*
//! results)`, what hlojit generates) with the [`Signature`] it was compiled for. The compiler's
//! `Executable` holds one; an AOT user builds one from the linked function.

mod interrupt;

pub use interrupt::{hlojit_rt_interrupt_requested, hlojit_rt_poll_interrupt, CancellationToken, RunOptions};

use crate::custom_call::{clear_last_error, take_last_error};
use crate::host::{ArrayView, HostBuffer, HostError};
use crate::literal::{ArrayLiteral, Literal};
use crate::physical::PhysicalLayout;
use crate::shape::{ArrayShape, Shape};
use interrupt::{Interruption, RunGuard};
use std::time::Instant;
use thiserror::Error;

/// The entry function hlojit generates: argument and result buffer tables in, 0 on success.
pub type EntryFn = unsafe extern "C" fn(*const *const u8, *const *mut u8) -> i32;

/// An entry that is not machine code: a program of the runtime's own functions (a module whose
/// every kernel is one call of a precompiled GEMM or convolution needs no code generated for
/// it). Same contract as [`EntryFn`]: argument and result buffer tables in, 0 on success.
pub type EntryProgram = std::sync::Arc<dyn Fn(*const *const u8, *const *mut u8) -> i32 + Send + Sync>;

/// What [`Executor::run`] calls.
enum Entry {
    Native(EntryFn),
    Program(EntryProgram),
}

/// Why a run failed.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum RunError {
    /// Arguments that do not fit the parameters (count, element type, dimensions, layout), or
    /// a `must-alias` parameter passed without donating it.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Memory for an output, a copy or the program's temporaries could not be had; names the
    /// buffer and its size.
    #[error("out of memory: {0}")]
    OutOfMemory(String),
    /// The computation reported a failure (a custom call's message, say).
    #[error("execution failed: {0}")]
    Failed(String),
    /// The run's deadline passed before it finished.
    #[error("the run's deadline passed ({0})")]
    DeadlineExceeded(String),
    /// The run's cancellation token was cancelled.
    #[error("the run was cancelled")]
    Cancelled,
}

/// An output that reuses a parameter's memory (`input_output_alias`), over flattened leaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Alias {
    /// The result leaf.
    pub output: usize,
    /// The parameter leaf whose buffer it may (or must) be computed in.
    pub parameter: usize,
    /// `must-alias`: the argument has to be donated.
    pub must: bool,
}

/// What an entry function takes and returns: shapes (with the layouts buffers must have),
/// names for messages, aliasing, and the largest buffers it computes (named when temporaries
/// cannot be allocated).
#[derive(Clone, Debug, PartialEq)]
pub struct Signature {
    /// The entry computation's parameters, layouts included (tuples are passed as leaves).
    pub parameters: Vec<Shape>,
    /// The entry computation's result (a tuple comes back as its leaves).
    pub result: Shape,
    /// For each parameter leaf, how messages name it (`parameter 0 (x)`).
    pub argument_names: Vec<String>,
    /// For each result leaf, how messages name it (`output 0 (add.3)`).
    pub output_names: Vec<String>,
    /// Outputs computed in a parameter's memory.
    pub aliases: Vec<Alias>,
    /// The largest buffers the program computes besides its outputs, largest first, as
    /// (instruction name, shape with layout, bytes); named when memory runs out mid-run.
    pub largest_buffers: Vec<(String, String, u64)>,
}

impl Signature {
    /// A signature with plain names (`parameter 0`, `output 0`), no aliasing and no
    /// buffer information, as an AOT user may write it from the generated header.
    pub fn new(parameters: Vec<Shape>, result: Shape) -> Signature {
        let leaves = |shapes: &[Shape]| shapes.iter().map(|s| s.array_leaves().len()).sum::<usize>();
        let argument_names = (0..leaves(&parameters))
            .map(|j| format!("parameter leaf {j}"))
            .collect();
        let output_names = (0..leaves(std::slice::from_ref(&result)))
            .map(|k| format!("output {k}"))
            .collect();
        Signature {
            parameters,
            result,
            argument_names,
            output_names,
            aliases: Vec::new(),
            largest_buffers: Vec::new(),
        }
    }

    /// The parameter leaves as [`Executor::run`] takes them.
    pub fn argument_shapes(&self) -> Vec<&ArrayShape> {
        self.parameters.iter().flat_map(Shape::array_leaves).collect()
    }

    /// The result leaves as [`Executor::run`] returns them.
    pub fn output_shapes(&self) -> Vec<&ArrayShape> {
        self.result.array_leaves()
    }
}

/// An argument of a run: borrowed (never modified) or donated.
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

/// An entry function and its signature: runs it as often as asked, from any number of threads.
pub struct Executor {
    entry: Entry,
    signature: Signature,
    /// What every run needs from the signature, worked out once.
    plan: RunPlan,
}

/// The signature's leaves as runs use them, so that a run allocates nothing but its outputs
/// (and its small pointer tables): measured by the `per_call` bench.
#[derive(Debug)]
struct RunPlan {
    /// Parameter leaves, each with its layout set (as arguments' shapes always are).
    arguments: Vec<ArrayShape>,
    /// Per parameter leaf: whether an output aliases it, and the output it must alias.
    aliased: Vec<bool>,
    must_alias: Vec<Option<usize>>,
    /// Per result leaf: the parameter leaf it is computed in, if aliased.
    output_alias: Vec<Option<usize>>,
    /// Per result leaf: its shape with layout set, storage bytes and whether that is dense
    /// (`None` when the layout's size cannot be worked out: the run reports it).
    outputs: Vec<Option<(std::sync::Arc<ArrayShape>, usize, bool)>>,
}

impl RunPlan {
    fn new(signature: &Signature) -> RunPlan {
        let with_layout = |s: &ArrayShape| ArrayShape { layout: Some(s.layout_or_default()), ..s.clone() };
        let arguments: Vec<ArrayShape> = signature.argument_shapes().into_iter().map(with_layout).collect();
        let aliased = (0..arguments.len()).map(|j| signature.aliases.iter().any(|a| a.parameter == j)).collect();
        let must_alias = (0..arguments.len())
            .map(|j| signature.aliases.iter().find(|a| a.parameter == j && a.must).map(|a| a.output))
            .collect();
        let leaves = signature.output_shapes();
        let output_alias = (0..leaves.len()).map(|k| signature.aliases.iter().find(|a| a.output == k).map(|a| a.parameter)).collect();
        let outputs = leaves
            .into_iter()
            .map(|s| {
                let shape = with_layout(s);
                let bytes = PhysicalLayout::new(&shape).ok()?.storage_bytes(shape.element_type);
                let bytes = usize::try_from(bytes).ok()?;
                let dense = bytes as u128 == shape.element_count() as u128 * shape.element_type.byte_size() as u128;
                Some((std::sync::Arc::new(shape), bytes, dense))
            })
            .collect();
        RunPlan { arguments, aliased, must_alias, output_alias, outputs }
    }
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("signature", &self.signature)
            .finish_non_exhaustive()
    }
}

/// Argument and result tables up to this many leaves are built on the stack.
const TABLE_ON_STACK: usize = 16;

/// The first `n` slots of `stack`, or `heap` grown to `n` when that is too small.
fn table<'t, T: Copy>(stack: &'t mut [T; TABLE_ON_STACK], heap: &'t mut Vec<T>, n: usize) -> &'t mut [T] {
    if n <= TABLE_ON_STACK {
        &mut stack[..n]
    } else {
        heap.resize(n, stack[0]);
        &mut heap[..]
    }
}

/// Where an argument's memory comes from for the call.
enum ArgumentMemory<'a> {
    /// Read in place.
    Borrowed(ArrayView<'a>),
    /// Owned for the call (donated, or a private copy an aliased output is computed in);
    /// `None` once moved into the results.
    Owned(Option<HostBuffer>),
}

impl Executor {
    /// An executor calling `entry`.
    ///
    /// # Safety
    /// `entry` must be a function hlojit generated for exactly this signature (parameter and
    /// result leaves with these shapes and layouts, these aliases), and must stay callable for
    /// as long as the executor lives.
    pub unsafe fn new(entry: EntryFn, signature: Signature) -> Executor {
        let plan = RunPlan::new(&signature);
        Executor { entry: Entry::Native(entry), signature, plan }
    }

    /// An executor running `program` instead of a compiled entry function.
    ///
    /// # Safety
    /// As for [`Executor::new`]: `program` must read and write exactly the buffers of this
    /// signature (it is handed the same tables an entry function would be).
    pub unsafe fn with_program(program: EntryProgram, signature: Signature) -> Executor {
        let plan = RunPlan::new(&signature);
        Executor { entry: Entry::Program(program), signature, plan }
    }

    /// The signature the entry function was compiled for.
    pub fn signature(&self) -> &Signature {
        &self.signature
    }

    /// Runs the entry function on one array per parameter leaf, each in its parameter's
    /// layout; returns one buffer per result leaf.
    ///
    /// A donated argument's memory holds the output aliased with it, computed in place; a
    /// borrowed one is never modified (an aliased output gets a copy to work in). A
    /// `must-alias` parameter must be donated.
    ///
    /// # Errors
    /// [`RunError::InvalidArgument`] before anything runs when the arguments do not fit;
    /// [`RunError::OutOfMemory`] naming the buffer when memory runs out;
    /// [`RunError::DeadlineExceeded`] or [`RunError::Cancelled`] when `options` end the run;
    /// [`RunError::Failed`] with the computation's message otherwise.
    pub fn run<'a>(&self, args: Vec<Argument<'a>>, options: &RunOptions) -> Result<Vec<HostBuffer>, RunError> {
        let start = Instant::now();
        self.check_arguments(&args)?;
        let guard = RunGuard::enter(options, start);
        if let Some(why) = guard.as_ref().and_then(RunGuard::interruption) {
            return Err(interrupted(why, guard.as_ref(), start));
        }
        let mut memory = self.argument_memory(args)?;
        let mut outputs = self.allocate_outputs()?;
        let aliased_output = |k: usize| self.plan.output_alias.get(k).copied().flatten();
        // The pointer tables live on the stack for up to TABLE_ON_STACK leaves.
        let mut arg_stack = [std::ptr::null::<u8>(); TABLE_ON_STACK];
        let mut arg_heap = Vec::new();
        let arg_ptrs: &mut [*const u8] = table(&mut arg_stack, &mut arg_heap, memory.len());
        for (slot, m) in arg_ptrs.iter_mut().zip(memory.iter_mut()) {
            *slot = match m {
                ArgumentMemory::Borrowed(v) => v.bytes().as_ptr(),
                ArgumentMemory::Owned(Some(b)) => b.as_mut_ptr() as *const u8,
                ArgumentMemory::Owned(None) => std::ptr::null(),
            };
        }
        let mut result_stack = [std::ptr::null_mut::<u8>(); TABLE_ON_STACK];
        let mut result_heap = Vec::new();
        let result_ptrs: &mut [*mut u8] = table(&mut result_stack, &mut result_heap, outputs.len());
        for (k, (slot, o)) in result_ptrs.iter_mut().zip(outputs.iter_mut()).enumerate() {
            *slot = match (o, aliased_output(k)) {
                (Some(b), _) => b.as_mut_ptr(),
                (None, Some(j)) => arg_ptrs[j] as *mut u8,
                (None, None) => std::ptr::null_mut(),
            };
        }
        clear_last_error();
        let _context = crate::custom_call::context::install(options.ffi_context.as_ref());
        // SAFETY: every pointer is a live buffer of the size and layout the signature gives
        // (checked above), aliased outputs point at memory this call owns, and `new`'s caller
        // vouched that the function takes exactly these.
        let status = match &self.entry {
            Entry::Native(f) => unsafe { f(arg_ptrs.as_ptr(), result_ptrs.as_ptr()) },
            Entry::Program(p) => p(arg_ptrs.as_ptr(), result_ptrs.as_ptr()),
        };
        if status != 0 {
            if let Some(why) = guard.as_ref().and_then(RunGuard::interruption) {
                return Err(interrupted(why, guard.as_ref(), start));
            }
            return Err(self.failure(status));
        }
        drop(guard);
        outputs
            .into_iter()
            .enumerate()
            .map(|(k, o)| match o {
                Some(b) => Ok(b),
                None => match aliased_output(k).map(|j| &mut memory[j]) {
                    Some(ArgumentMemory::Owned(b)) => b
                        .take()
                        .ok_or_else(|| RunError::Failed(format!("outputs {k} and another alias the same parameter"))),
                    _ => Err(RunError::Failed(format!(
                        "output {k} aliases a parameter with no memory of its own"
                    ))),
                },
            })
            .collect()
    }

    /// Runs on logical (row-major) literals, one per parameter (tuples as tuple literals),
    /// converting to and from the entry layouts; returns the result the same way.
    pub fn run_literals(&self, args: &[Literal], options: &RunOptions) -> Result<Literal, RunError> {
        let params = &self.signature.parameters;
        if args.len() != params.len() {
            return Err(RunError::InvalidArgument(format!(
                "the computation takes {} arguments, {} given",
                params.len(),
                args.len()
            )));
        }
        let mut leaves: Vec<&ArrayLiteral> = Vec::new();
        for (i, (arg, shape)) in args.iter().zip(params).enumerate() {
            if !arg.shape().compatible(shape) {
                return Err(RunError::InvalidArgument(format!(
                    "argument {i} has shape {}, parameter {i} is {}",
                    arg.shape().to_text(false),
                    shape.to_text(false)
                )));
            }
            leaves.extend(arg.leaves());
        }
        // Leaves whose parameter layout is not row-major are staged in that layout.
        let mut staged: Vec<Option<HostBuffer>> = Vec::with_capacity(leaves.len());
        for (j, (leaf, shape)) in leaves.iter().zip(self.signature.argument_shapes()).enumerate() {
            let layout = shape.layout_or_default();
            let row_major = PhysicalLayout::for_layout(&shape.dims, &layout).is_ok_and(|p| p.is_row_major_dense());
            staged.push(if row_major {
                None
            } else {
                let staging = HostBuffer::from_literal_with_layout(leaf, layout);
                Some(staging.map_err(|e| self.host_error(format!("staging {}", self.signature.argument_names[j]), e))?)
            });
        }
        let views: Vec<Argument> = leaves
            .iter()
            .zip(&staged)
            .map(|(leaf, s)| {
                Argument::Borrowed(
                    s.as_ref()
                        .map_or_else(|| ArrayView::from_literal(leaf), HostBuffer::view),
                )
            })
            .collect();
        let outputs = self.run(views, options)?;
        let mut it = outputs.into_iter().map(HostBuffer::into_literal);
        Literal::from_leaves(&self.signature.result, &mut it)
            .ok_or_else(|| RunError::Failed("the computation returned fewer results than its shape has".into()))
    }

    fn check_arguments(&self, args: &[Argument]) -> Result<(), RunError> {
        // The common case without allocating: every argument as the plan expects it.
        let plan = &self.plan;
        let fits = |(j, arg): (usize, &Argument)| {
            let (got, want) = (arg.shape(), &plan.arguments[j]);
            got.element_type == want.element_type
                && got.dims == want.dims
                && got.layout == want.layout
                && !(matches!(arg, Argument::Borrowed(_)) && plan.must_alias[j].is_some())
        };
        if args.len() == plan.arguments.len() && args.iter().enumerate().all(fits) {
            return Ok(());
        }
        self.explain_arguments(args)
    }

    /// The error for arguments that do not fit.
    fn explain_arguments(&self, args: &[Argument]) -> Result<(), RunError> {
        let params = self.signature.argument_shapes();
        if args.len() != params.len() {
            return Err(RunError::InvalidArgument(format!(
                "the computation takes {} arguments, {} given",
                params.len(),
                args.len()
            )));
        }
        for (j, (arg, want)) in args.iter().zip(&params).enumerate() {
            let got = arg.shape();
            let name = &self.signature.argument_names[j];
            if !got.same_dims_and_type(want) {
                return Err(RunError::InvalidArgument(format!(
                    "argument {j} for {name} is {}, the parameter is {}",
                    ArrayShape {
                        layout: None,
                        ..got.clone()
                    },
                    ArrayShape {
                        layout: None,
                        ..(*want).clone()
                    }
                )));
            }
            if got.layout_or_default() != want.layout_or_default() {
                return Err(RunError::InvalidArgument(format!(
                    "argument {j} for {name} is laid out {}, the parameter expects {} (HostBuffer::relayout converts)",
                    got.layout_or_default(),
                    want.layout_or_default()
                )));
            }
            if let (Argument::Borrowed(_), Some(alias)) =
                (arg, self.signature.aliases.iter().find(|a| a.parameter == j && a.must))
            {
                return Err(RunError::InvalidArgument(format!(
                    "{name} must be donated: the module makes output {} must-alias it",
                    alias.output
                )));
            }
        }
        Ok(())
    }

    /// Memory for each argument: donated buffers, private copies of borrowed arguments an
    /// output is computed in (copy protection), views of the rest.
    fn argument_memory<'a>(&self, args: Vec<Argument<'a>>) -> Result<Vec<ArgumentMemory<'a>>, RunError> {
        args.into_iter()
            .enumerate()
            .map(|(j, arg)| match arg {
                Argument::Donated(b) => Ok(ArgumentMemory::Owned(Some(b))),
                Argument::Borrowed(v) if self.plan.aliased[j] => {
                    let copy = v.try_to_buffer().map_err(|e| {
                        self.host_error(
                            format!(
                                "the copy of {} its aliased output is computed in",
                                self.signature.argument_names[j]
                            ),
                            e,
                        )
                    })?;
                    Ok(ArgumentMemory::Owned(Some(copy)))
                }
                Argument::Borrowed(v) => Ok(ArgumentMemory::Borrowed(v)),
            })
            .collect()
    }

    /// A buffer for every output not computed in a parameter's memory.
    fn allocate_outputs(&self) -> Result<Vec<Option<HostBuffer>>, RunError> {
        if self.plan.outputs.iter().all(Option::is_some) {
            return self
                .plan
                .outputs
                .iter()
                .zip(&self.plan.output_alias)
                .enumerate()
                .filter_map(|(k, (planned, alias))| Some((k, planned.as_ref()?, alias)))
                .map(|(k, (shape, bytes, dense), alias)| {
                    if alias.is_some() {
                        return Ok(None);
                    }
                    // SAFETY: the computation writes every element of its outputs before returning.
                    let buffer = unsafe { HostBuffer::for_output_sized(shape.clone(), *bytes, *dense) };
                    buffer.map(Some).map_err(|e| self.host_error(self.signature.output_names[k].clone(), e))
                })
                .collect();
        }
        self.signature
            .output_shapes()
            .into_iter()
            .enumerate()
            .map(|(k, shape)| {
                if self.signature.aliases.iter().any(|a| a.output == k) {
                    return Ok(None);
                }
                // SAFETY: the computation writes every element of its outputs before returning.
                let buffer = unsafe { HostBuffer::for_output(shape) };
                buffer
                    .map(Some)
                    .map_err(|e| self.host_error(self.signature.output_names[k].clone(), e))
            })
            .collect()
    }

    fn host_error(&self, what: String, e: HostError) -> RunError {
        match e {
            HostError::Allocation { shape, source } => RunError::OutOfMemory(format!("{what} ({shape}): {source}")),
            other => RunError::Failed(format!("{what}: {other}")),
        }
    }

    /// The error for a failed status: the message the failing part left on this thread, with
    /// the program's largest buffers when it ran out of memory.
    fn failure(&self, status: i32) -> RunError {
        let message = take_last_error().unwrap_or_else(|| format!("the computation failed with status {status}"));
        if !message.starts_with(crate::symbols::ALLOCATION_FAILURE) {
            return RunError::Failed(message);
        }
        let largest: Vec<String> = self
            .signature
            .largest_buffers
            .iter()
            .map(|(name, shape, bytes)| format!("{name} ({shape}, {})", crate::limits::describe_bytes(*bytes as u128)))
            .collect();
        if largest.is_empty() {
            RunError::OutOfMemory(message)
        } else {
            RunError::OutOfMemory(format!(
                "{message}; the largest buffers it computes: {}",
                largest.join(", ")
            ))
        }
    }
}

fn interrupted(why: Interruption, guard: Option<&RunGuard>, start: Instant) -> RunError {
    match why {
        Interruption::Cancelled => RunError::Cancelled,
        Interruption::DeadlinePassed => {
            let late = guard
                .and_then(RunGuard::deadline)
                .map(|d| Instant::now().saturating_duration_since(d))
                .unwrap_or_default();
            RunError::DeadlineExceeded(format!(
                "stopped {:.3} s after it started, {:.3} s past the deadline",
                start.elapsed().as_secs_f64(),
                late.as_secs_f64()
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::element_type::ElementType;

    /// An entry function whose temporaries cannot be allocated, as generated code reports it:
    /// `hlojit_rt_alloc` returns null and the function returns a failure status.
    unsafe extern "C" fn needs_too_much(_args: *const *const u8, _results: *const *mut u8) -> i32 {
        let arena = crate::symbols::hlojit_rt_alloc(1 << 60);
        i32::from(arena.is_null())
    }

    #[test]
    fn temporaries_that_cannot_be_allocated_are_named() {
        let mut signature = Signature::new(Vec::new(), Shape::array_row_major(ElementType::F32, vec![2]));
        signature.largest_buffers = vec![("broadcast.3".into(), "f32[1000000000000]{0}".into(), 4_000_000_000_000)];
        // SAFETY: the function takes no arguments and writes no results.
        let executor = unsafe { Executor::new(needs_too_much, signature) };
        let err = executor.run(Vec::new(), &RunOptions::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "out of memory: cannot allocate 1152921504606846976 bytes (1.0 EiB) of temporary memory; the largest \
             buffers it computes: broadcast.3 (f32[1000000000000]{0}, 4000000000000 bytes (3.6 TiB))"
        );
    }
}
