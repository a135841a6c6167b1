//! A compiled, loaded computation: run it on host literals as often as you like, from as many
//! threads as you like. Running (argument checks, donation, output allocation, deadlines) is
//! the runtime's [`Executor`], which AOT users share; this adds the JIT-loaded code under it.

use crate::backend::jit::Jit;
use crate::backend::library_program::{Call, Field};
use crate::codegen::array::buffer_bytes;
use crate::codegen::collectives::groups::DeviceGrid;
use crate::codegen::custom_call::custom_call_targets;
use crate::error::{Error, Result};
use crate::hlo::{AliasKind, Module, Opcode};
use crate::cache::disk::{Entry, Lookup};
use crate::cache::meta::EntryMeta;
use crate::cache::{self, DiskCache, Fingerprint, MemoryCache};
use crate::pipeline::{compile_objects, prepare, runtime_calls, CodeSource, CompileOptions, CompileStats};
use hlojit_runtime::custom_call::{resolve_target, CustomCallRegistry, Plugin, Resolved as ResolvedTarget};
use hlojit_runtime::executor::{Alias, EntryFn, EntryProgram, Executor, RunOptions, Signature};
use hlojit_runtime::transfers::{self, Transfers};
use hlojit_runtime::{ArrayShape, HostBuffer, Literal, Shape};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use hlojit_runtime::executor::Argument;

const ENTRY_SYMBOL: &str = "hlojit_entry";

/// How many of the largest buffers an out-of-memory error names.
const BUFFERS_NAMED_ON_OOM: usize = 3;

/// A compiled computation, loaded and ready to run.
pub struct Executable {
    /// The loaded code, shared with the client's cache and other executables of one module.
    pub(crate) loaded: Arc<Loaded>,
    compile_time: Duration,
    compile_stats: CompileStats,
    /// Replicas × partitions the program runs on (see `run_devices`).
    pub(crate) grid: DeviceGrid,
    /// Host queues of infeed, outfeed and host send/recv (see `feeds.rs`).
    pub(crate) transfers: Arc<Transfers>,
}

/// Loaded code and what runs it.
pub(crate) struct Loaded {
    /// Runs the loaded entry function; declared first so that it goes before the code does.
    pub(crate) executor: Executor,
    /// The code, unless the module runs as a program of runtime calls.
    _jit: Option<Jit>,
    /// Plugins holding custom-call targets of this code; unloaded only after the code is.
    _plugins: Vec<Arc<Plugin>>,
    /// The custom-call targets the code was linked with, and their addresses.
    pub(crate) targets: Vec<(String, usize)>,
    /// The code as it was loaded, kept so that the executable can be serialized.
    pub(crate) code: Code,
    /// Compiler build and target the code is for (the cache key's header).
    pub(crate) header: String,
}

/// An executable's code in a form that loads in another process.
pub(crate) enum Code {
    /// Object files, loaded into the JIT in order.
    Objects(Vec<Vec<u8>>),
    /// A program of runtime calls (no machine code).
    Calls(Vec<Call>),
}

impl std::fmt::Debug for Executable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executable")
            .field("parameter_shapes", &self.parameter_shapes())
            .field("result_shape", &self.result_shape())
            .finish_non_exhaustive()
    }
}

impl Executable {
    /// Compiles and loads a module for this machine. Custom-call targets are resolved now:
    /// from `options.custom_calls`, then the process-wide registry (functions, then plugins),
    /// then hlojit's built-in targets, and only when `options.process_symbols` allows it the
    /// process's own exported functions; a target found nowhere is an error naming it.
    pub fn compile(module: &Module, options: &CompileOptions) -> Result<Executable> {
        Executable::compile_cached(module, options, None)
    }

    /// [`Executable::compile`] through the caches: `memory` (a client's executables) first,
    /// then the on-disk cache `HLOJIT_CACHE_DIR` names, if any. Both are keyed by the module
    /// as given, so a hit runs no HLO pass and no LLVM: it loads the stored code.
    pub(crate) fn compile_cached(module: &Module, options: &CompileOptions, memory: Option<&MemoryCache>) -> Result<Executable> {
        let start = Instant::now();
        if !options.target.is_host() {
            return Err(Error::Unsupported("JIT compilation for a target other than the host".into()));
        }
        let disk = DiskCache::from_env();
        let key = match (memory.is_some() || disk.is_some()) && cache::allowed(options) {
            true => Some(Fingerprint::of(module, options)?),
            false => None,
        };
        let done = |loaded: Arc<Loaded>, compile_stats: CompileStats| {
            if let (Some(memory), Some(key)) = (memory, &key) {
                if compile_stats.source != CodeSource::MemoryCache {
                    memory.insert(key.clone(), loaded.clone());
                }
            }
            Executable { loaded, compile_time: start.elapsed(), compile_stats, grid: DeviceGrid::of(module), transfers: Arc::new(Transfers::new()) }
        };
        if let (Some(memory), Some(key)) = (memory, &key) {
            let still_valid = |l: &Loaded| l.targets.iter().all(|(t, a)| resolve(options, t).is_some_and(|r| r.address == *a));
            if let Some(loaded) = memory.get(key, still_valid) {
                return Ok(done(loaded, CompileStats { source: CodeSource::MemoryCache, ..CompileStats::default() }));
            }
        }
        if let (Some(disk), Some(key)) = (&disk, &key) {
            let unusable = match disk.load(key) {
                Lookup::Hit(entry) => match EntryMeta::decode(&entry.meta) {
                    Ok(meta) => {
                        let t = Instant::now();
                        let loaded = load_stored(options, meta, entry.objects, key.header.clone())?;
                        let stats = CompileStats { source: CodeSource::DiskCache, load: t.elapsed(), ..CompileStats::default() };
                        return Ok(done(loaded, stats));
                    }
                    Err(why) => Some(format!("{}: {why}", disk.path(key).display())),
                },
                Lookup::Miss => None,
                Lookup::Corrupt(why) => Some(why),
            };
            if let Some(why) = unusable {
                eprintln!("warning: hlojit: ignoring an unusable compilation cache entry ({why}); compiling again");
            }
        }
        let prepared = prepare(module, options)?;
        let prepare_time = start.elapsed();
        let linked = Linked::resolve(options, custom_call_targets(&prepared))?;
        // A module of runtime calls only needs no code, so it is not stored on disk either.
        let header = key.as_ref().map_or_else(|| cache::fingerprint::header(options), |k| k.header.clone());
        let read_start = Instant::now();
        if let Some(calls) = runtime_calls(&prepared, ENTRY_SYMBOL, options)? {
            if let Some(program) = crate::backend::library_program::program(&calls) {
                let loaded = with_program(linked, program, calls, signature(module, &prepared), header);
                let stats = CompileStats { source: CodeSource::RuntimeCalls, prepare: prepare_time, lower: read_start.elapsed(), ..CompileStats::default() };
                return Ok(done(loaded, stats));
            }
        }
        let (objects, mut stats) = compile_objects(&prepared, ENTRY_SYMBOL, options)?;
        stats.prepare = prepare_time;
        let signature = signature(module, &prepared);
        if let (Some(disk), Some(key)) = (&disk, &key) {
            let targets = linked.targets.iter().map(|(t, _)| t.clone()).collect();
            let meta = EntryMeta { signature: signature.clone(), targets, grid: DeviceGrid::of(module), calls: None };
            // A record that would not read back equal is not stored (the code still runs).
            match meta.encode() {
                Some(meta) => {
                    if let Err(e) = disk.store(key, &Entry { meta, objects: objects.clone() }) {
                        eprintln!("warning: hlojit: cannot write to the compilation cache {}: {e}", disk.dir().display());
                    }
                }
                None => eprintln!("warning: hlojit: not cached: the signature of {} does not read back equal from a cache entry", module.name),
            }
        }
        let load_start = Instant::now();
        let loaded = load(linked, objects, signature, header)?;
        stats.load = load_start.elapsed();
        Ok(done(loaded, stats))
    }

    /// An executable of loaded code (deserialized), for `grid`'s devices.
    pub(crate) fn from_loaded(loaded: Arc<Loaded>, grid: DeviceGrid, compile_stats: CompileStats, compile_time: Duration) -> Executable {
        Executable { loaded, compile_time, compile_stats, grid, transfers: Arc::new(Transfers::new()) }
    }

    /// The entry computation's parameter shapes, with the layouts arguments must have (those of
    /// `entry_computation_layout`, or the default descending layout).
    pub fn parameter_shapes(&self) -> &[Shape] {
        &self.loaded.executor.signature().parameters
    }

    /// The entry computation's result shape; a tuple result comes back from [`Executable::run`]
    /// as its leaves, in order.
    pub fn result_shape(&self) -> &Shape {
        &self.loaded.executor.signature().result
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
        self.loaded.executor.signature().argument_shapes()
    }

    /// The result leaves as `run` returns them.
    pub fn output_shapes(&self) -> Vec<&ArrayShape> {
        self.loaded.executor.signature().output_shapes()
    }

    /// The runtime executor that runs the loaded code.
    pub fn executor(&self) -> &Executor {
        &self.loaded.executor
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
        self.run_with(args, &RunOptions::default())
    }

    /// [`Executable::run`] with a deadline or a cancellation token: a run still going when the
    /// deadline passes or the token is cancelled stops at its next `while` loop iteration with
    /// [`Error::DeadlineExceeded`] or [`Error::Cancelled`].
    ///
    /// ```rust
    /// use hlojit_compiler::{Client, Error};
    /// use hlojit_runtime::executor::RunOptions;
    /// use std::time::Duration;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let forever = Client::new().compile_text(
    ///     "HloModule m
    ///      cond { s = s32[] parameter(0)
    ///             ROOT t = pred[] constant(true) }
    ///      body { s = s32[] parameter(0)
    ///             ROOT n = s32[] add(s, s) }
    ///      ENTRY e { x = s32[] parameter(0)
    ///                ROOT w = s32[] while(x), condition=cond, body=body }",
    /// )?;
    /// let x = hlojit_runtime::HostBuffer::from_slice(&[], &[1i32])?;
    /// let options = RunOptions::default().with_timeout(Duration::from_millis(50));
    /// let err = forever.run_with([&x], &options).unwrap_err();
    /// assert!(matches!(err, Error::DeadlineExceeded(_)), "{err}");
    /// # Ok(())
    /// # }
    /// ```
    pub fn run_with<'a, A: Into<Argument<'a>>>(
        &self,
        args: impl IntoIterator<Item = A>,
        options: &RunOptions,
    ) -> Result<Vec<HostBuffer>> {
        self.check_single_device()?;
        self.run_on_this_thread(args.into_iter().map(Into::into).collect(), options)
    }

    /// `run` for the device this thread runs as (any device of a multi-device run).
    pub(crate) fn run_on_this_thread(&self, args: Vec<Argument<'_>>, options: &RunOptions) -> Result<Vec<HostBuffer>> {
        let _queues = transfers::install(&self.transfers);
        Ok(self.loaded.executor.run(args, options)?)
    }

    /// Runs the computation on logical (row-major) literals, one per parameter (tuples as
    /// tuple literals), converting to and from the entry layouts; returns the result the same
    /// way.
    pub fn run_literals(&self, args: &[Literal]) -> Result<Literal> {
        self.check_single_device()?;
        self.run_literals_on_this_thread(args, &RunOptions::default())
    }

    /// `run_literals` for the device this thread runs as.
    pub(crate) fn run_literals_on_this_thread(&self, args: &[Literal], options: &RunOptions) -> Result<Literal> {
        let _queues = transfers::install(&self.transfers);
        Ok(self.loaded.executor.run_literals(args, options)?)
    }
}

/// Where a custom-call target resolves for these options: the options' registry, then the
/// process-wide one, then hlojit's built-ins (and the process, where allowed).
fn resolve(options: &CompileOptions, target: &str) -> Option<ResolvedTarget> {
    resolve_target(&[&options.custom_calls, CustomCallRegistry::global()], target, &options.process_symbols)
}

/// The symbols generated code links against: the runtime's, then the module's custom-call
/// targets as resolved for these options (with the plugins that hold them).
struct Linked {
    symbols: Vec<(String, usize)>,
    plugins: Vec<Arc<Plugin>>,
    targets: Vec<(String, usize)>,
}

impl Linked {
    fn resolve(options: &CompileOptions, custom_call_targets: Vec<String>) -> Result<Linked> {
        let mut symbols: Vec<(String, usize)> =
            hlojit_runtime::symbols::runtime_symbols().into_iter().map(|(n, a)| (n.to_string(), a)).collect();
        let mut plugins: Vec<Arc<Plugin>> = Vec::new();
        let mut targets = Vec::new();
        for target in custom_call_targets {
            let resolved = resolve(options, &target).ok_or_else(|| Error::MissingCustomCallTarget(target.clone()))?;
            if let Some(p) = resolved.plugin {
                if !plugins.iter().any(|q| Arc::ptr_eq(q, &p)) {
                    plugins.push(p);
                }
            }
            symbols.retain(|(n, _)| *n != target);
            symbols.push((target.clone(), resolved.address));
            targets.push((target, resolved.address));
        }
        Ok(Linked { symbols, plugins, targets })
    }
}

/// Loads object files into a new JIT and wraps their entry function in an executor.
fn load(linked: Linked, objects: Vec<Vec<u8>>, signature: Signature, header: String) -> Result<Arc<Loaded>> {
    let jit = Jit::new(&linked.symbols)?;
    for object in &objects {
        jit.add_object(object)?;
    }
    let address = jit.lookup(ENTRY_SYMBOL)?;
    // SAFETY: the symbol is the entry function generated with this signature (compiled now,
    // or stored together with the signature in a cache entry or a serialized executable).
    let entry: EntryFn = unsafe { std::mem::transmute::<usize, EntryFn>(address) };
    // SAFETY: the JIT holding the entry's code lives as long as the executor (dropped first).
    let executor = unsafe { Executor::new(entry, signature) };
    Ok(Arc::new(Loaded { executor, _jit: Some(jit), _plugins: linked.plugins, targets: linked.targets, code: Code::Objects(objects), header }))
}

/// Runs `program`, made of `calls`, as the module's entry.
fn with_program(linked: Linked, program: EntryProgram, calls: Vec<Call>, signature: Signature, header: String) -> Arc<Loaded> {
    // SAFETY: the program makes the calls the entry compiled with this signature would make,
    // on the buffers of its signature.
    let executor = unsafe { Executor::with_program(program, signature) };
    Arc::new(Loaded { executor, _jit: None, _plugins: linked.plugins, targets: linked.targets, code: Code::Calls(calls), header })
}

/// Loads stored code (a cache entry's or a serialized executable's) with its record, the
/// custom-call targets resolved for `options`.
pub(crate) fn load_stored(options: &CompileOptions, meta: EntryMeta, objects: Vec<Vec<u8>>, header: String) -> Result<Arc<Loaded>> {
    let linked = Linked::resolve(options, meta.targets)?;
    match meta.calls {
        Some(calls) => {
            // The program indexes the executor's tables of parameters and results by these.
            let (arguments, outputs) = (meta.signature.argument_shapes().len(), meta.signature.output_shapes().len());
            let in_range = |f: &Field| match *f {
                Field::Parameter(n) => n < arguments,
                Field::Result(n) => n < outputs,
                Field::Temp { offset, size } => offset >= 0 && size >= 0 && offset.checked_add(size).is_some(),
                Field::Const(_) | Field::Slot(_) => true,
            };
            if !calls.iter().flat_map(|c| &c.fields).all(in_range) {
                return Err(Error::InvalidArgument("the executable's runtime calls name buffers it does not have".into()));
            }
            let program = crate::backend::library_program::program(&calls)
                .ok_or_else(|| Error::InvalidArgument("the executable calls a runtime function this hlojit does not have".into()))?;
            Ok(with_program(linked, program, calls, meta.signature, header))
        }
        None if objects.is_empty() => Err(Error::InvalidArgument("the executable has no code".into())),
        None => load(linked, objects, meta.signature, header),
    }
}

/// The entry signature of a prepared module: shapes with their entry layouts, names for
/// messages (from the module as the user wrote it), aliasing, and its largest computed buffers.
fn signature(module: &Module, prepared: &Module) -> Signature {
    let entry = prepared.entry_computation();
    let mut argument_names = Vec::new();
    for (i, p) in entry.parameters().into_iter().enumerate() {
        let inst = entry.get(p);
        let leaves = inst.shape.array_leaves().len();
        for l in 0..leaves {
            let leaf = if leaves > 1 || inst.shape.is_tuple() { format!(", leaf {l}") } else { String::new() };
            argument_names.push(format!("parameter {i} ({}{leaf})", inst.name));
        }
    }
    let root = module.entry_computation().root_instruction();
    let result = prepared.entry_result_shape();
    let outputs = result.array_leaves().len();
    let output_names = (0..outputs)
        .map(|k| if outputs == 1 { format!("output {k} ({})", root.name) } else { format!("output {k} (of {})", root.name) })
        .collect();
    let aliases = prepared
        .alias_leaf_pairs()
        .into_iter()
        .map(|(output, parameter, kind)| Alias { output, parameter, must: kind == AliasKind::MustAlias })
        .collect();
    Signature {
        parameters: prepared.entry_parameter_shapes(),
        result,
        argument_names,
        output_names,
        aliases,
        largest_buffers: largest_buffers(prepared),
    }
}

/// The largest arrays the module's instructions compute (parameters and constants are the
/// caller's or the code's), for out-of-memory messages.
fn largest_buffers(module: &Module) -> Vec<(String, String, u64)> {
    let mut buffers: Vec<(String, String, u64)> = module
        .computations
        .iter()
        .flat_map(|c| c.instructions.iter())
        .filter(|i| !matches!(i.opcode, Opcode::Parameter | Opcode::Constant | Opcode::Tuple | Opcode::GetTupleElement))
        .flat_map(|i| {
            i.shape.array_leaves().into_iter().filter_map(move |a| {
                let bytes = u64::try_from(buffer_bytes(a).ok()?).ok()?;
                Some((i.name.clone(), a.to_string(), bytes))
            })
        })
        .collect();
    buffers.sort_by(|a, b| b.2.cmp(&a.2));
    buffers.truncate(BUFFERS_NAMED_ON_OOM);
    buffers
}
