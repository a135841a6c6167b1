//! The machine code is generated for: the host CPU (with all its features, so AVX-512 is used
//! where present) unless a triple and CPU are given for cross compilation.

use crate::error::{Error, Result};
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine, TargetTriple};
use inkwell::OptimizationLevel;
use std::sync::{Mutex, Once, OnceLock};
use super::optimization::Optimization;

/// Target selection and optimization settings.
///
/// ```rust
/// use hlojit_compiler::backend::target::TargetOptions;
///
/// // Cross-compile (AOT) for AArch64 Linux with the Neoverse V1's features.
/// let arm = TargetOptions {
///     triple: Some("aarch64-unknown-linux-gnu".into()),
///     cpu: Some("neoverse-v1".into()),
///     features: None, // with a triple, no host features are assumed
/// };
/// assert!(!arm.is_host() && !arm.is_x86_64());
/// assert!(TargetOptions::default().is_host());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TargetOptions {
    /// LLVM target triple; the host's when `None`.
    pub triple: Option<String>,
    /// CPU name (`skylake-avx512`, `znver4`, ...); the host CPU when `None` and no triple is given.
    pub cpu: Option<String>,
    /// Feature string (`+avx2,-avx512f`); the host's features when `None` and no triple is given.
    pub features: Option<String>,
}

/// LLVM 19's x86 processors without 64-bit mode (X86TargetParser's 32-bit entries).
const X86_32_BIT_CPUS: &[&str] = &[
    "i386", "i486", "i586", "i686", "pentium", "pentium-mmx", "pentiumpro", "pentium2", "pentium3", "pentium3m",
    "pentium-m", "pentium4", "pentium4m", "prescott", "yonah", "lakemont", "winchip-c6", "winchip2", "c3", "c3-2",
    "geode", "k6", "k6-2", "k6-3", "athlon", "athlon-tbird", "athlon-4", "athlon-xp", "athlon-mp",
];

/// Registers the host's LLVM target (once per process): all the JIT and host AOT need.
/// Registering every target LLVM was built with pages in all their back ends' code, ~1.4 ms
/// CPU of a process's first compile; [`initialize_all`] does that for other triples.
pub(crate) fn initialize() {
    static NATIVE: Once = Once::new();
    NATIVE.call_once(|| {
        if Target::initialize_native(&InitializationConfig::default()).is_err() {
            initialize_all();
        }
        if let Ok(options) = std::env::var(LLVM_OPTIONS_VARIABLE) {
            parse_llvm_options(&options.split_whitespace().collect::<Vec<_>>());
        }
    });
}

/// Names LLVM command-line options (`-time-passes -disable-lsr`, space separated) to set
/// once per process: a knob for measuring LLVM's phases and codegen options inside a real
/// compile, like `HLOJIT_LLVM_PASSES`.
pub const LLVM_OPTIONS_VARIABLE: &str = "HLOJIT_LLVM_OPTIONS";

/// Sets LLVM's process-wide command-line options (an option may be given again later: the
/// last value holds).
pub(crate) fn parse_llvm_options(options: &[&str]) {
    let args: Vec<std::ffi::CString> =
        std::iter::once("hlojit").chain(options.iter().copied()).filter_map(|a| std::ffi::CString::new(a).ok()).collect();
    let pointers: Vec<*const std::ffi::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    // SAFETY: the pointers point into `args`, alive for the call; LLVM copies what it keeps.
    unsafe { llvm_sys::support::LLVMParseCommandLineOptions(pointers.len() as i32, pointers.as_ptr(), std::ptr::null()) };
}

/// Registers every target LLVM was built with (once per process), for cross compilation.
fn initialize_all() {
    static ALL: Once = Once::new();
    ALL.call_once(|| Target::initialize_all(&InitializationConfig::default()));
}

/// The host CPU's LLVM name and feature string, asked once: LLVM finds them with dozens of
/// `cpuid` instructions, each a trap to the hypervisor in a virtual machine.
pub fn host_cpu() -> &'static (String, String) {
    static HOST: OnceLock<(String, String)> = OnceLock::new();
    HOST.get_or_init(|| (TargetMachine::get_host_cpu_name().to_string(), TargetMachine::get_host_cpu_features().to_string()))
}

impl TargetOptions {
    /// True when no triple is given, so code is generated for the machine running the
    /// compiler (cpu and features may still be overridden).
    pub fn is_host(&self) -> bool {
        self.triple.is_none()
    }

    /// The LLVM target triple: the one given, or the host's default triple.
    pub fn triple(&self) -> TargetTriple {
        match &self.triple {
            Some(t) => TargetTriple::create(t),
            None => TargetMachine::get_default_triple(),
        }
    }

    /// Whether the target is x86-64 (the MXCSR controls flush-to-zero there).
    pub fn is_x86_64(&self) -> bool {
        self.triple().as_str().to_string_lossy().starts_with("x86_64")
    }

    /// Refuses CPU and feature choices LLVM cannot generate code for: on an x86-64 triple, a
    /// 32-bit-only CPU (`pentium`) or a feature string that turns off 64-bit mode makes LLVM
    /// abort the process ("64-bit code requested on a subtarget that doesn't support it").
    pub fn validate(&self) -> Result<()> {
        let features = self.feature_string();
        let mut long_mode: Option<bool> = None;
        for feature in features.split(',').map(str::trim).filter(|f| !f.is_empty()) {
            let (on, name) = match feature.split_at(1) {
                ("+", name) => (true, name),
                ("-", name) => (false, name),
                _ => return Err(Error::InvalidArgument(format!("target feature '{feature}' must start with '+' or '-'"))),
            };
            if name == "64bit" {
                long_mode = Some(on);
            }
        }
        if !self.is_x86_64() {
            return Ok(());
        }
        let cpu = self.cpu.as_deref().unwrap_or("");
        if long_mode == Some(false) || (X86_32_BIT_CPUS.contains(&cpu) && long_mode != Some(true)) {
            return Err(Error::InvalidArgument(format!(
                "CPU '{cpu}' with these features cannot run 64-bit code, which target {} needs: choose an x86-64 CPU (x86-64, x86-64-v3, skylake-avx512, znver4, ...) or a 32-bit triple (i686-unknown-linux-gnu)",
                self.triple().as_str().to_string_lossy()
            )));
        }
        Ok(())
    }

    /// The feature string LLVM gets: the one given; the host's for the host's own CPU; none for
    /// a named CPU, whose name says its features (`--cpu haswell` is Haswell's instructions,
    /// not Haswell tuning with this machine's).
    fn feature_string(&self) -> String {
        match (&self.triple, &self.cpu, &self.features) {
            (_, _, Some(features)) => features.clone(),
            (None, None, None) => host_cpu().1.clone(),
            _ => String::new(),
        }
    }

    /// A target machine for code that is relocatable (AOT) or loaded in this process (JIT):
    /// an idle one made earlier for the same target if there is one (see [`Machine`]).
    pub fn machine(&self, for_jit: bool) -> Result<Machine> {
        initialize();
        if self.triple.is_some() {
            initialize_all();
        }
        self.validate()?;
        let triple = self.triple();
        let cpu = match (&self.triple, &self.cpu) {
            (_, Some(cpu)) => cpu.clone(),
            (None, None) => host_cpu().0.clone(),
            (Some(_), None) => "generic".into(),
        };
        let key = (triple.as_str().to_string_lossy().into_owned(), cpu, self.feature_string());
        if let Some(machine) = Machine::reuse(&key) {
            return Ok(machine);
        }
        let target = Target::from_triple(&triple).map_err(|e| Error::Llvm(format!("unknown target {triple}: {e}")))?;
        // Position-independent code for the JIT too: it maps code anywhere in the address space.
        let _ = for_jit;
        let reloc = RelocMode::PIC;
        let tm = target
            .create_target_machine(&triple, &key.1, &key.2, OptimizationLevel::Aggressive, reloc, CodeModel::Default)
            .ok_or_else(|| Error::Llvm(format!("cannot create a target machine for {triple} / {}", key.1)))?;
        Ok(Machine { key, tm: Some(tm) })
    }
}

/// Triple, CPU and feature string: what makes two target machines interchangeable.
type MachineKey = (String, String, String);

/// A target machine in use by one compilation, back to the idle ones when dropped. Creating
/// one builds its subtarget's instruction-lowering tables (about a millisecond, for every
/// LLVM module of every compilation); a machine holds no per-module state between uses, so
/// the next compilation for the same target takes it over.
pub struct Machine {
    key: MachineKey,
    tm: Option<TargetMachine>,
}

/// Idle machines; a few per target are plenty (one per compile thread).
static IDLE_MACHINES: Mutex<Vec<(MachineKey, IdleMachine)>> = Mutex::new(Vec::new());
const MAX_IDLE_MACHINES: usize = 8;

/// An idle machine. LLVM's target machines may move between threads; only concurrent use
/// is unsafe, and an idle one has no user.
struct IdleMachine(TargetMachine);
// SAFETY: see above: held by the pool only while no thread uses it.
unsafe impl Send for IdleMachine {}

impl Machine {
    fn reuse(key: &MachineKey) -> Option<Machine> {
        let mut idle = IDLE_MACHINES.lock().unwrap_or_else(|e| e.into_inner());
        let at = idle.iter().position(|(k, _)| k == key)?;
        let (key, IdleMachine(tm)) = idle.swap_remove(at);
        Some(Machine { key, tm: Some(tm) })
    }
}

impl std::ops::Deref for Machine {
    type Target = TargetMachine;
    fn deref(&self) -> &TargetMachine {
        self.tm.as_ref().expect("a machine in use")
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        if let Some(tm) = self.tm.take() {
            let mut idle = IDLE_MACHINES.lock().unwrap_or_else(|e| e.into_inner());
            if idle.len() < MAX_IDLE_MACHINES {
                idle.push((std::mem::take(&mut self.key), IdleMachine(tm)));
            }
        }
    }
}

/// Bytes in the widest SIMD register the machine's features enable (AVX-512: 64, AVX: 32,
/// otherwise 16).
pub fn simd_bytes(machine: &TargetMachine) -> u32 {
    if has_feature(machine, "avx512f") {
        64
    } else if has_feature(machine, "avx") {
        32
    } else {
        16
    }
}

/// Whether the machine has `feature` (`avx512bf16`, say): as its feature string says, or else
/// as its CPU's name implies (`cpu_features.rs`).
pub fn has_feature(machine: &TargetMachine, feature: &str) -> bool {
    let features = feature_string(machine);
    let said = features.split(',').rev().find_map(|x| match x.split_at_checked(1) {
        Some(("+", name)) if name == feature => Some(true),
        Some(("-", name)) if name == feature => Some(false),
        _ => None,
    });
    said.or_else(|| super::cpu_features::implies(&machine.get_cpu().to_string(), feature)).unwrap_or(false)
}

/// The machine's feature string. (inkwell's `get_feature_string` never frees the copy LLVM
/// makes: a kilobyte lost per call, three calls per compiled module.)
fn feature_string(machine: &TargetMachine) -> String {
    // SAFETY: LLVM returns a new C string, which we copy and then dispose of as documented.
    unsafe {
        let raw = llvm_sys::target_machine::LLVMGetTargetMachineFeatureString(machine.as_mut_ptr());
        if raw.is_null() {
            return String::new();
        }
        let features = std::ffi::CStr::from_ptr(raw).to_string_lossy().into_owned();
        llvm_sys::core::LLVMDisposeMessage(raw);
        features
    }
}

/// Lets instruction selection fuse a float multiply with the add or subtract that uses it into
/// one fused multiply-add, as XLA:CPU does: it creates its target machines with LLVM's
/// `AllowFPOpFusion = Fast`, so on a CPU with FMA `a * b + c` is rounded once. Rounding twice
/// differs in the last bit, and where `a * b` overflows it gives an infinity that a later step
/// can turn into the opposite sign (seen in `hyp2f1`'s derivatives). LLVM's C API cannot set
/// that target option, so every float add, subtract, multiply and negation carries the `contract`
/// flag instead, which allows the same fusions.
pub fn allow_fp_contraction(module: &inkwell::module::Module) {
    use inkwell::values::{FastMathFlags, InstructionOpcode};
    for function in module.get_functions() {
        for block in function.get_basic_blocks() {
            let mut next = block.get_first_instruction();
            while let Some(i) = next {
                next = i.get_next_instruction();
                if matches!(i.get_opcode(), InstructionOpcode::FAdd | InstructionOpcode::FSub | InstructionOpcode::FMul | InstructionOpcode::FNeg) {
                    if let Ok(flags) = i.get_fast_math_flags() {
                        let _ = i.set_fast_math_flags(flags | FastMathFlags::AllowContract);
                    }
                }
            }
        }
    }
}

/// Names an LLVM pass pipeline (`opt -passes=` syntax) to run instead of hlojit's own: a
/// knob for experiments, like `HLOJIT_DUMP_IR`; compilations with it are not cached.
pub const PASSES_VARIABLE: &str = "HLOJIT_LLVM_PASSES";

/// Runs LLVM's optimization pipeline on a module.
pub fn optimize(module: &inkwell::module::Module, machine: &TargetMachine, optimization: Optimization) -> Result<()> {
    allow_fp_contraction(module);
    let name = module.get_context().metadata_string(optimization.name());
    let node = module.get_context().metadata_node(&[name.into()]);
    module
        .add_global_metadata("hlojit.optimization", &node)
        .map_err(|e| Error::Llvm(format!("cannot name the optimization: {e}")))?;
    let options = PassBuilderOptions::create();
    options.set_loop_vectorization(true);
    options.set_loop_slp_vectorization(true);
    options.set_loop_unrolling(false);
    // For measuring other pipelines (compile time against run time) without rebuilding.
    let passes = std::env::var(PASSES_VARIABLE).unwrap_or_else(|_| optimization.passes().into());
    module
        .run_passes(&passes, machine, options)
        .map_err(|e| Error::Llvm(format!("optimization failed: {e}")))
}

pub fn emit_object(module: &inkwell::module::Module, machine: &TargetMachine, file_type: FileType) -> Result<Vec<u8>> {
    let buffer = machine
        .write_to_memory_buffer(module, file_type)
        .map_err(|e| Error::Llvm(format!("code generation failed: {e}")))?;
    Ok(buffer.as_slice().to_vec())
}

#[cfg(test)]
mod tests {
    use super::{feature_string, has_feature, simd_bytes, TargetOptions};

    #[test]
    fn a_named_cpu_has_its_own_features_not_the_host_s() {
        let machine = |cpu: &str, features: Option<&str>| {
            TargetOptions { cpu: Some(cpu.into()), features: features.map(String::from), ..TargetOptions::default() }.machine(false).expect("a machine")
        };
        let haswell = machine("haswell", None);
        assert_eq!(feature_string(&haswell), "", "no host features with a named CPU");
        assert_eq!((simd_bytes(&haswell), has_feature(&haswell, "fma"), has_feature(&haswell, "avx512f")), (32, true, false));
        assert_eq!(simd_bytes(&machine("x86-64", None)), 16);
        let zen4 = machine("znver4", None);
        assert!(has_feature(&zen4, "avx512bf16") && has_feature(&zen4, "avx512vnni") && !has_feature(&zen4, "amx-tile"));
        // A feature string overrides what the name implies, later entries over earlier ones.
        let zen4_less = machine("znver4", Some("+avx512bf16,-avx512bf16,+amx-tile"));
        assert!(!has_feature(&zen4_less, "avx512bf16") && has_feature(&zen4_less, "amx-tile") && has_feature(&zen4_less, "avx512f"));
    }

    #[test]
    fn an_idle_machine_is_reused_for_the_same_target_only() {
        // A feature string no other test uses, so no other test takes this machine meanwhile.
        let options = TargetOptions { cpu: Some("haswell".into()), features: Some("+avx2,+fma,+bmi2,+popcnt".into()), ..TargetOptions::default() };
        let first = options.machine(true).expect("a machine");
        let address = first.as_mut_ptr();
        drop(first);
        let again = options.machine(true).expect("a machine");
        assert_eq!(again.as_mut_ptr(), address, "the idle machine is taken over");
        let other = TargetOptions { features: Some("+avx2,+fma,+bmi2".into()), ..options.clone() };
        let different = other.machine(true).expect("a machine");
        assert_ne!(different.as_mut_ptr(), address, "a machine in use is never handed out twice, nor one for other features");
    }
}
