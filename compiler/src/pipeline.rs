//! The compilation pipeline: HLO passes, lowering to LLVM, optimization and object code.

use crate::backend::library_program::{entry_calls, kernel_calls, Call};
use crate::backend::optimization::{optimization_for, precompiled_products_expected, Optimization, Products};
use crate::backend::strength_reduction;
use crate::backend::target::{emit_object, optimize, TargetOptions};
use crate::codegen::context::Codegen;
use crate::codegen::function::{KernelInfo, ModuleLowering};
use crate::codegen::kernel::emit_kernels;
use crate::codegen::plan::{KernelJob, LoweringPlan};
use crate::error::{Error, Result};
use crate::hlo::{Module, Opcode};
use crate::passes;
use crate::passes::pass::DumpOptions;
use hlojit_runtime::custom_call::{CustomCallRegistry, ProcessSymbols};
use inkwell::context::Context;
use inkwell::targets::{FileType, TargetMachine};
use std::time::{Duration, Instant};

/// How to compile a module: for which machine, with which custom calls, on how many threads.
///
/// ```rust
/// use hlojit_compiler::backend::target::TargetOptions;
/// use hlojit_compiler::{Client, CompileOptions};
///
/// // Code using Haswell's features only (AVX2, not the host's AVX-512, say), compiled on the
/// // calling thread. Without `features`, the host's features would be enabled.
/// let options = CompileOptions {
///     target: TargetOptions { cpu: Some("haswell".into()), features: Some(String::new()), ..TargetOptions::default() },
///     parallel_compile: false,
///     ..CompileOptions::default()
/// };
/// assert!(options.target.is_host()); // no triple: still this machine's OS and ABI
/// let client = Client::with_options(options);
/// assert!(!client.options().parallel_compile);
/// ```
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// The machine to generate code for (the host, with all its CPU features, by default).
    pub target: TargetOptions,
    /// Where custom-call targets are looked up first (then the process-wide registry, then
    /// hlojit's built-ins). Ignored for AOT output, whose targets the linker resolves.
    pub custom_calls: CustomCallRegistry,
    /// Whether functions the main executable itself exports may be custom-call targets
    /// (never the C library or other shared libraries). Off by default: with it on, HLO text
    /// can call any such function, so allow only the names you need
    /// (`ProcessSymbols::only(["my_target"])`) or trust the modules you compile.
    pub process_symbols: ProcessSymbols,
    /// Compile independent parts of a module on several threads (JIT only). Off, everything
    /// is one LLVM module compiled on the calling thread.
    pub parallel_compile: bool,
    /// Run the verifier after every HLO pass that changed the module (always on in debug
    /// builds; tests turn it on), so that a pass that breaks the IR is named.
    pub verify_passes: bool,
    /// Write the HLO after each pass, the kernel list, the buffer assignment and each LLVM
    /// module's IR and assembly to a directory (see [`crate::dump`]). By default what
    /// `HLOJIT_DUMP_DIR` / `HLOJIT_DUMP_PASSES` say.
    pub dump: Option<DumpOptions>,
    /// Time every kernel call into `hlojit_runtime::profile`'s table, by the kernel's number
    /// in [`crate::codegen::plan::LoweringPlan`] (what `hlojit profile` reads). Off: no timers.
    pub profile: bool,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            target: TargetOptions::default(),
            custom_calls: CustomCallRegistry::default(),
            process_symbols: ProcessSymbols::None,
            parallel_compile: true,
            verify_passes: false,
            dump: DumpOptions::from_env(),
            profile: false,
        }
    }
}

/// The HLO passes that prepare a module for code generation, in order.
pub fn hlo_pipeline(options: &CompileOptions) -> passes::pass::PassPipeline {
    use passes::*;
    let mut pipeline = pass::PassPipeline::new()
        // First: jaxlib folds while it turns what it receives into HLO, before any HLO pass.
        .add(stablehlo_folding::StablehloFolding)
        // XLA's simplifier swaps convolution operands; conv_taps classifies the result.
        .add(conv_operand_swap::ConvOperandSwap)
        // Before inlining: XLA:CPU's choice depends on which computation a convolution is in.
        .add(conv_taps::ConvTapsPass)
        .add(inline_calls::InlineCalls)
        // Before the markers go: it reads their shardings at manual-region boundaries.
        .add(spmd_whole_arrays::SpmdWholeArrays)
        .add(sharding_markers::ShardingMarkers)
        .add(trivial_reductions::TrivialReductions)
        .add(topk_sorts::TopkSorts)
        .add(unfuse::Unfuse)
        .add(dynamic_padder::DynamicPadder)
        .add(batch_norm_expander::BatchNormExpander)
        .add(rng_expander::RngExpander)
        .add(algebraic_simplifier::AlgebraicSimplifier)
        // After the simplifier, as in XLA's simplification pipeline: folding is where
        // XLA's results come from its evaluator rather than its generated code.
        .add(constant_folding::ConstantFolding)
        // XLA repeats simplifier and folding until neither changes anything: what folding
        // made constant (a divisor sin(0), say) is simplified again (fuzz program 9000079).
        .add(algebraic_simplifier::AlgebraicSimplifier)
        .add(constant_folding::ConstantFolding)
        .add(transpose_folding::TransposeFolding)
        .add(cse::Cse)
        .add(dce::Dce)
        // Before dead-state removal, which then drops the stacks it stops reading.
        .add(while_residual_remat::WhileResidualRemat)
        .add(while_dead_state::WhileDeadState)
        .add(while_licm::WhileLicm)
        // After hoisting: what leaves a loop is computed on XLA's main path. Before the input
        // projection, which XLA does not do, so loops are judged on the bodies XLA sees.
        .add(small_call_marks::SmallCallMarks)
        // After licm, which makes scaled weights invariant state elements it needs.
        .add(while_input_projection::WhileInputProjection)
        .add(while_init_broadcasts::WhileInitBroadcasts)
        .add(while_dead_init::WhileDeadInit)
        // Before layout assignment, which gives the new inner reductions their layouts.
        .add(reduction_splitting::ReductionSplitting)
        .add(layout_assignment::LayoutAssignment)
        .add(fusion::Fusion)
        // After fusion, which has gathered each dot's elementwise consumers into one loop;
        // before the multi-output passes, which leave the resulting kOutput fusions alone.
        .add(dot_epilogue_fusion::DotEpilogueFusion)
        // Before multi-output fusion: a row reduction that merges into its loop no longer
        // needs to share an operand walk with a sibling.
        .add(row_fusion::RowFusion)
        // After row fusion, which makes a softmax one loop over the scores it reads.
        .add(dot_row_epilogue_fusion::DotRowEpilogueFusion)
        // Multi-output fusion after plain fusion, as XLA orders them: it merges the kernels
        // fusion made (producer into consumer first, then siblings of a shared operand).
        .add(producer_consumer_fusion::ProducerConsumerFusion)
        .add(sibling_fusion::SiblingFusion)
        // Fusion's second round can leave a claimed producer's computation uncalled, and the
        // multi-output passes leave the merged fusions' computations uncalled.
        .add(dce::Dce)
        .add(channel_order::ChannelOrder);
    pipeline.verify |= options.verify_passes;
    pipeline.dump = options.dump.clone();
    pipeline
}

/// Verifies a module and runs the HLO passes that prepare it for code generation.
pub fn prepare(module: &Module, options: &CompileOptions) -> Result<Module> {
    crate::hlo::verify_module(module)?;
    let mut m = module.clone();
    hlo_pipeline(options).run(&mut m)?;
    Ok(m)
}

/// Lowers a prepared module into one LLVM module, its entry exported as `entry_name`.
pub fn lower(cg: &Codegen, module: &Module, entry_name: &str) -> Result<()> {
    lower_planned(cg, module, &LoweringPlan::new(module, entry_name)?, None)
}

fn lower_planned(cg: &Codegen, module: &Module, plan: &LoweringPlan, dump: Option<&DumpOptions>) -> Result<()> {
    let all: Vec<usize> = (0..plan.kernels.len()).collect();
    let kernels = kernel_infos(plan, emit_kernels(cg, module, plan, &all, false)?);
    dump_plan(dump, module, plan, &kernels)?;
    ModuleLowering::new(cg, module, plan, &kernels).lower_all()?;
    verify(cg)
}

/// Writes the kernel list and the buffer assignment when dumping.
fn dump_plan(dump: Option<&DumpOptions>, module: &Module, plan: &LoweringPlan, kernels: &[KernelInfo]) -> Result<()> {
    if let Some(d) = dump {
        let stem = crate::dump::file_name(&module.name);
        crate::dump::write(d, &format!("{stem}.kernels.txt"), crate::dump::kernels::report(module, plan, kernels).as_bytes())?;
        crate::dump::write(d, &format!("{stem}.buffers.txt"), crate::dump::buffers::report(module, plan).as_bytes())?;
    }
    Ok(())
}

fn verify(cg: &Codegen) -> Result<()> {
    cg.module.verify().map_err(|e| Error::Llvm(format!("generated IR is invalid: {}", e.to_string())))
}

fn kernel_infos(plan: &LoweringPlan, emitted: Vec<(usize, KernelInfo)>) -> Vec<KernelInfo> {
    let mut infos: Vec<Option<KernelInfo>> = vec![None; plan.kernels.len()];
    for (j, info) in emitted {
        infos[j] = Some(info);
    }
    infos.into_iter().map(|i| i.expect("every kernel emitted")).collect()
}

/// Where compilation time goes. With parallel compilation, the LLVM phases are summed over
/// the threads (the wall time is the executable's compile time).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CompileStats {
    /// Verification and HLO passes.
    pub prepare: Duration,
    /// Generating LLVM IR.
    pub lower: Duration,
    /// LLVM's optimization pipeline.
    pub optimize: Duration,
    /// Machine code generation.
    pub codegen: Duration,
    /// Loading the objects into the JIT.
    pub load: Duration,
    /// LLVM modules compiled (in parallel when more than one).
    pub partitions: usize,
    /// Whether the code was compiled now or came from a cache (then the LLVM phases are zero).
    pub source: CodeSource,
}

/// Where an executable's machine code came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CodeSource {
    /// Compiled by LLVM for this executable.
    #[default]
    Compiled,
    /// Shared with an executable the same client compiled before.
    MemoryCache,
    /// Loaded from the on-disk cache (`HLOJIT_CACHE_DIR`).
    DiskCache,
    /// Loaded from bytes [`Executable::serialize`](crate::Executable::serialize) made.
    Deserialized,
    /// No machine code: every kernel is a call of a precompiled runtime function, replayed by
    /// a program (see [`crate::backend::library_program`]); `lower` is the time reading them.
    RuntimeCalls,
}

impl std::ops::AddAssign for CompileStats {
    fn add_assign(&mut self, o: CompileStats) {
        self.prepare += o.prepare;
        self.lower += o.lower;
        self.optimize += o.optimize;
        self.codegen += o.codegen;
        self.load += o.load;
        self.partitions += o.partitions;
    }
}

impl std::fmt::Display for CompileStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        match self.source {
            CodeSource::Compiled => {}
            CodeSource::MemoryCache => return write!(f, "the client's cached executable"),
            // A hit runs no HLO pass (the entry records the prepared module's signature).
            CodeSource::DiskCache => return write!(f, "from the compilation cache, no passes run: loading {:.1} ms", ms(self.load)),
            CodeSource::Deserialized => return write!(f, "deserialized, no passes run: loading {:.1} ms", ms(self.load)),
            CodeSource::RuntimeCalls => {
                return write!(
                    f,
                    "no machine code, the kernels are calls of precompiled runtime functions: passes {:.1} ms, reading the kernels {:.1} ms",
                    ms(self.prepare),
                    ms(self.lower)
                )
            }
        }
        write!(
            f,
            "passes {:.1} ms, LLVM IR {:.1} ms, optimization {:.1} ms, machine code {:.1} ms, loading {:.1} ms; {} LLVM module{}",
            ms(self.prepare),
            ms(self.lower),
            ms(self.optimize),
            ms(self.codegen),
            ms(self.load),
            self.partitions,
            if self.partitions == 1 { "" } else { "s compiled in parallel: the LLVM phases are summed over threads and overlap, so they add up to more than the wall time" }
        )
    }
}

/// What to emit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    /// Optimized LLVM IR, as text (`.ll`).
    LlvmIr,
    /// Assembly for the target, as text (`.s`).
    Assembly,
    /// A relocatable object file (`.o`), to link into a program.
    Object,
}

/// Compiles a prepared module to one optimized LLVM IR text, assembly file or object file.
pub fn compile_to(module: &Module, entry_name: &str, options: &CompileOptions, output: OutputKind, for_jit: bool) -> Result<Vec<u8>> {
    let machine = options.target.machine(for_jit)?;
    let context = Context::create();
    let mut cg = codegen_for(&context, &module.name, options, &machine);
    cg.for_linker = !for_jit;
    let plan = LoweringPlan::new(module, entry_name)?;
    lower_planned(&cg, module, &plan, options.dump.as_ref())?;
    if !for_jit {
        crate::backend::aot::reference_runtime_identity(&cg, entry_name)?;
    }
    let optimization = optimization_for(module, &plan, &(0..plan.kernels.len()).collect::<Vec<_>>(), true, Products::lowered(cg.generated_products.get()));
    finish(&cg, &machine, optimization, strength_reduction_for(module, &plan), output, options.dump.as_ref(), &mut CompileStats::default())
}

fn codegen_for<'ctx>(context: &'ctx Context, name: &str, options: &CompileOptions, machine: &TargetMachine) -> Codegen<'ctx> {
    let mut cg = Codegen::new(context, name, options.target.is_x86_64());
    cg.simd_bytes = crate::backend::target::simd_bytes(machine);
    cg.avx512_bf16 = crate::backend::target::has_feature(machine, "avx512bf16");
    cg.avx512_vnni = ["avx512vnni", "avx512bw"].iter().all(|f| crate::backend::target::has_feature(machine, f));
    let amx = |product: &str| ["amx-tile", product].iter().all(|f| crate::backend::target::has_feature(machine, f));
    (cg.amx_bf16, cg.amx_int8) = (amx("amx-bf16"), amx("amx-int8"));
    cg.profile = options.profile;
    cg.fma = crate::backend::target::has_feature(machine, "fma");
    cg.avx2 = crate::backend::target::has_feature(machine, "avx2");
    cg.cpu = machine.get_cpu().to_string();
    cg.module.set_triple(&machine.get_triple());
    cg.module.set_data_layout(&machine.get_target_data().get_data_layout());
    cg
}

/// Names a file to write each compiled module's optimized LLVM IR to (for debugging).
const DUMP_IR_VARIABLE: &str = "HLOJIT_DUMP_IR";

/// Optimizes the module and emits it, timing both.
fn finish(
    cg: &Codegen,
    machine: &TargetMachine,
    optimization: Optimization,
    lsr: bool,
    output: OutputKind,
    dump: Option<&DumpOptions>,
    stats: &mut CompileStats,
) -> Result<Vec<u8>> {
    let stem = crate::dump::file_name(&cg.module.get_name().to_string_lossy());
    if let Some(d) = dump {
        crate::dump::write(d, &format!("{stem}.ir-unoptimized.ll"), cg.module.print_to_string().to_bytes())?;
    }
    let t = Instant::now();
    optimize(&cg.module, machine, optimization)?;
    stats.optimize += t.elapsed();
    // Held while code is generated, the dumped assembly's too (see strength_reduction).
    let _lsr = strength_reduction::enter(lsr);
    if let Ok(path) = std::env::var(DUMP_IR_VARIABLE) {
        let _ = cg.module.print_to_file(path);
    }
    if let Some(d) = dump {
        crate::dump::write(d, &format!("{stem}.ir-optimized.ll"), cg.module.print_to_string().to_bytes())?;
        crate::dump::write(d, &format!("{stem}.s"), &emit_object(&cg.module, machine, FileType::Assembly)?)?;
    }
    let t = Instant::now();
    let code = match output {
        OutputKind::LlvmIr => cg.module.print_to_string().to_bytes().to_vec(),
        OutputKind::Assembly => emit_object(&cg.module, machine, FileType::Assembly)?,
        OutputKind::Object => emit_object(&cg.module, machine, FileType::Object)?,
    };
    stats.codegen += t.elapsed();
    stats.partitions += 1;
    Ok(code)
}

/// The module as a program of runtime calls, when each of its kernels is nothing but calls
/// of precompiled runtime functions (see [`crate::backend::library_program`]); `None` when
/// it needs generated code, or when code is asked for (dumps, profiling timers).
pub fn runtime_calls(module: &Module, entry_name: &str, options: &CompileOptions) -> Result<Option<Vec<Call>>> {
    if options.profile || options.dump.is_some() || std::env::var_os(DUMP_IR_VARIABLE).is_some() || !options.target.is_host() {
        return Ok(None);
    }
    let plan = LoweringPlan::new(module, entry_name)?;
    // Only dots, convolutions, softmax and layernorm fusions, row reductions and sorts by a
    // key have precompiled kernels:
    // anything else would generate its kernels' IR for nothing.
    let [fp] = plan.functions.as_slice() else { return Ok(None) };
    let comp = module.computation(fp.comp);
    let precompiled = |i: &crate::hlo::Instruction| match (i.opcode, i.fused_computation()) {
        (Opcode::Dot | Opcode::Convolution, _) => true,
        (Opcode::Fusion, Some(f)) => {
            let fused = module.computation(f);
            let reductions = fused.instructions.iter().any(|i| i.opcode == Opcode::Reduce)
                && fused.instructions.iter().all(|i| matches!(i.opcode, Opcode::Parameter | Opcode::Constant | Opcode::Reduce | Opcode::Tuple));
            reductions
                || crate::codegen::emitters::softmax_rows::softmax_input(module, fused, fused.root).is_some()
                || crate::codegen::emitters::layernorm_rows::layernorm(module, fused, fused.root).is_some()
        }
        (Opcode::Reduce, _) => true,
        (Opcode::Sort, _) => crate::codegen::emitters::sort_rows::runtime_sort(module, comp, i).is_some(),
        _ => false,
    };
    let library_ops = fp.kernels.keys().all(|&id| precompiled(comp.get(id)));
    if plan.kernels.is_empty() || !library_ops {
        return Ok(None);
    }
    let machine = options.target.machine(true)?;
    let context = Context::create();
    let cg = codegen_for(&context, &module.name, options, &machine);
    let all: Vec<usize> = (0..plan.kernels.len()).collect();
    let kernels: Vec<(KernelInfo, Option<Vec<Call>>)> = kernel_infos(&plan, emit_kernels(&cg, module, &plan, &all, false)?)
        .into_iter()
        .map(|info| {
            let calls = cg.module.get_function(&info.name).and_then(kernel_calls);
            (info, calls)
        })
        .collect();
    Ok(entry_calls(module, &plan, &kernels))
}

/// Whether a module's code is generated with loop strength reduction: by the whole module's
/// kind, not each partition's, since partitions that differed would generate their code one
/// after the other (see strength_reduction). Any dot or convolution keeps it on, even one that
/// calls the runtime: taken per partition, it saved transformer_train 15% of its compile CPU
/// but made the window-sum loops of batch-1 lenet, beside generated convolutions, 2% slower.
fn strength_reduction_for(module: &Module, plan: &LoweringPlan) -> bool {
    strength_reduction::wanted(optimization_for(module, plan, &(0..plan.kernels.len()).collect::<Vec<_>>(), true, Products::Generated))
}

/// Kernel work below which splitting the module across threads costs more than it saves
/// (every LLVM module has a fixed optimization and code generation cost).
const PARALLEL_COMPILE_MIN_WORK: usize = 96;

/// Compiles a prepared module for the JIT into object files: the kernels are split into
/// partitions compiled on separate threads when there is enough work, and the sequencing
/// code (which needs to know each kernel's parallel extent) is compiled last.
pub fn compile_objects(module: &Module, entry_name: &str, options: &CompileOptions) -> Result<(Vec<Vec<u8>>, CompileStats)> {
    let mut stats = CompileStats::default();
    let start = Instant::now();
    let plan = LoweringPlan::new(module, entry_name)?;
    let work: Vec<usize> = plan.kernels.iter().map(|k| kernel_work(module, &plan, k)).collect();
    let total: usize = work.iter().sum();
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    // An IR dump shows the whole program, so it asks for a single module.
    let parallel = options.parallel_compile && std::env::var_os(DUMP_IR_VARIABLE).is_none();
    // Small loop bodies' kernels go to the sequencing module, where LLVM inlines them into
    // their loop (codegen/loop_inlining.rs); the rest is split across threads if it is enough.
    let inlined = crate::codegen::loop_inlining::inlined_kernels(&plan, &work);
    let mut is_inlined = vec![false; plan.kernels.len()];
    inlined.iter().for_each(|&j| is_inlined[j] = true);
    let split_work: usize = work.iter().zip(&is_inlined).filter(|(_, &i)| !i).map(|(w, _)| w).sum();
    let split_jobs = is_inlined.iter().filter(|&&i| !i).count();
    let partitions = if !parallel || total < PARALLEL_COMPILE_MIN_WORK || split_work < PARALLEL_COMPILE_MIN_WORK { 1 } else { threads.min(split_jobs) };
    let machine = options.target.machine(true)?;
    if partitions <= 1 {
        let context = Context::create();
        let cg = codegen_for(&context, &module.name, options, &machine);
        lower_planned(&cg, module, &plan, options.dump.as_ref())?;
        stats.lower = start.elapsed();
        let optimization = optimization_for(module, &plan, &(0..plan.kernels.len()).collect::<Vec<_>>(), true, Products::lowered(cg.generated_products.get()));
        let object = finish(&cg, &machine, optimization, strength_reduction_for(module, &plan), OutputKind::Object, options.dump.as_ref(), &mut stats)?;
        return Ok((vec![object], stats));
    }
    let lsr = strength_reduction_for(module, &plan);
    // Kernels are grouped before they are lowered: by what the target's products are expected
    // to become.
    let products = if precompiled_products_expected(&machine, options.target.is_x86_64()) { Products::Expected } else { Products::Generated };
    let parts = partition_by_optimization(module, &plan, &work, &is_inlined, partitions, products);
    let results: Vec<Result<CompiledPartition>> = std::thread::scope(|scope| {
        let handles: Vec<_> = parts
            .iter()
            .enumerate()
            .map(|(i, (_, jobs))| {
                let plan = &plan;
                scope.spawn(move || compile_partition(module, plan, jobs, lsr, options, &format!("{}.part{i}", module.name)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(Error::Internal("a compilation thread panicked".into())))).collect()
    });
    let mut objects = Vec::with_capacity(partitions + 1);
    let mut emitted = Vec::new();
    for r in results {
        let (object, infos, part_stats) = r?;
        objects.push(object);
        emitted.extend(infos);
        stats += part_stats;
    }
    let context = Context::create();
    let cg = codegen_for(&context, &module.name, options, &machine);
    let t = Instant::now();
    emitted.extend(emit_kernels(&cg, module, &plan, &inlined, false)?);
    let kernels = kernel_infos(&plan, emitted);
    dump_plan(options.dump.as_ref(), module, &plan, &kernels)?;
    ModuleLowering::new(&cg, module, &plan, &kernels).lower_all()?;
    verify(&cg)?;
    stats.lower += t.elapsed();
    let optimization = optimization_for(module, &plan, &inlined, true, Products::lowered(cg.generated_products.get()));
    objects.push(finish(&cg, &machine, optimization, lsr, OutputKind::Object, options.dump.as_ref(), &mut stats)?);
    Ok((objects, stats))
}

/// Splits the kernels that are not inlined into at most `partitions` groups of each
/// optimization kind, largest kernels first, each to the least loaded group of its kind. Kinds
/// are kept apart because a partition gets the optimization of its most demanding kernel: one
/// generated dot among loop kernels would put them all through O3. `products`: what the dots
/// and convolutions are expected to become before lowering.
fn partition_by_optimization(
    module: &Module,
    plan: &LoweringPlan,
    work: &[usize],
    is_inlined: &[bool],
    partitions: usize,
    products: Products,
) -> Vec<(usize, Vec<usize>)> {
    let mut parts = Vec::new();
    for kind in [Optimization::Full, Optimization::LoopKernels] {
        let mut order: Vec<usize> =
            (0..plan.kernels.len()).filter(|&j| !is_inlined[j] && optimization_for(module, plan, &[j], false, products) == kind).collect();
        order.sort_by_key(|&j| std::cmp::Reverse(work[j]));
        let mut kind_parts: Vec<(usize, Vec<usize>)> = vec![(0, Vec::new()); partitions.min(order.len())];
        for j in order {
            let lightest = kind_parts.iter_mut().min_by_key(|(w, _)| *w).expect("partitions");
            lightest.0 += work[j];
            lightest.1.push(j);
        }
        parts.extend(kind_parts);
    }
    parts
}

/// A partition's object file, the kernels it defines and its compile times.
type CompiledPartition = (Vec<u8>, Vec<(usize, KernelInfo)>, CompileStats);

/// One partition of kernels in its own LLVM context, on the calling thread.
fn compile_partition(
    module: &Module,
    plan: &LoweringPlan,
    jobs: &[usize],
    lsr: bool,
    options: &CompileOptions,
    name: &str,
) -> Result<CompiledPartition> {
    let mut stats = CompileStats::default();
    let t = Instant::now();
    let machine = options.target.machine(true)?;
    let context = Context::create();
    let cg = codegen_for(&context, name, options, &machine);
    let infos = emit_kernels(&cg, module, plan, jobs, true)?;
    verify(&cg)?;
    stats.lower = t.elapsed();
    let object = finish(&cg, &machine, optimization_for(module, plan, jobs, false, Products::lowered(cg.generated_products.get())), lsr, OutputKind::Object, options.dump.as_ref(), &mut stats)?;
    Ok((object, infos, stats))
}

/// A rough measure of how much LLVM work a kernel is: its fused instructions, more for the
/// ops whose emitters generate large loop nests.
pub(crate) fn kernel_work(module: &Module, plan: &LoweringPlan, job: &KernelJob) -> usize {
    let comp = module.computation(plan.functions[job.function].comp);
    let inst = comp.get(job.inst);
    let body: Vec<&crate::hlo::Instruction> = match inst.fused_computation() {
        Some(f) => module.computation(f).instructions.iter().collect(),
        None => vec![inst],
    };
    body.iter().map(|i| i.opcode.weight()).sum::<usize>().max(1)
}

#[cfg(test)]
mod tests {
    use super::{kernel_work, partition_by_optimization, prepare, CompileOptions};
    use crate::backend::optimization::{optimization_for, Optimization, Products};
    use crate::codegen::plan::LoweringPlan;

    /// Two dots beside reductions along both dimensions and an elementwise chain: kernels of
    /// both optimization kinds.
    const MIXED: &str = "HloModule m
add { x = f32[] parameter(0)  y = f32[] parameter(1)  ROOT s = f32[] add(x, y) }
ENTRY main {
  a = f32[256,256] parameter(0)
  b = f32[256,256] parameter(1)
  ab = f32[256,256] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ba = f32[256,256] dot(b, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = f32[] constant(0)
  rows = f32[256] reduce(ab, z), dimensions={1}, to_apply=add
  cols = f32[256] reduce(ba, z), dimensions={0}, to_apply=add
  e = f32[256,256] exponential(a)
  t = f32[256,256] tanh(e)
  ROOT o = (f32[256], f32[256], f32[256,256]) tuple(rows, cols, t)
}
";

    #[test]
    fn partitions_keep_loop_kernels_apart_from_generated_dots() {
        let parsed = crate::hlo::text::parse_module(MIXED).expect("parses");
        let module = prepare(&parsed, &CompileOptions::default()).expect("prepares");
        let plan = LoweringPlan::new(&module, "entry").expect("plans");
        let work: Vec<usize> = plan.kernels.iter().map(|k| kernel_work(&module, &plan, k)).collect();
        let not_inlined = vec![false; plan.kernels.len()];
        let parts = partition_by_optimization(&module, &plan, &work, &not_inlined, 2, Products::Generated);
        let kinds: Vec<Optimization> = parts.iter().map(|(_, jobs)| optimization_for(&module, &plan, jobs, false, Products::Generated)).collect();
        assert!(kinds.contains(&Optimization::Full) && kinds.contains(&Optimization::LoopKernels), "{kinds:?}");
        for (_, jobs) in &parts {
            let kind = optimization_for(&module, &plan, jobs, false, Products::Generated);
            assert!(jobs.iter().all(|&j| optimization_for(&module, &plan, &[j], false, Products::Generated) == kind), "a mixed partition: {parts:?}");
        }
        let mut all: Vec<usize> = parts.iter().flat_map(|(_, jobs)| jobs.iter().copied()).collect();
        all.sort_unstable();
        assert_eq!(all, (0..plan.kernels.len()).collect::<Vec<_>>(), "every kernel in exactly one partition");
        // Dots expected to call the precompiled GEMM (row-major operands and result) are
        // partitioned with the loop kernels.
        let lean = partition_by_optimization(&module, &plan, &work, &not_inlined, 2, Products::Expected);
        assert!(lean.iter().all(|(_, jobs)| optimization_for(&module, &plan, jobs, false, Products::Expected) == Optimization::LoopKernels), "{lean:?}");
        assert!(lean.len() <= 2, "one kind: at most the 2 partitions asked for, not 2 per kind: {lean:?}");
    }
}
