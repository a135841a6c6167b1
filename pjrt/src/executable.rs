//! Compiling (`PJRT_Client_Compile`: StableHLO or HLO text plus serialized compile options)
//! and the compiled program's handles: `PJRT_Executable` (what was compiled) and
//! `PJRT_LoadedExecutable` (it, on the devices of its device assignment).

use crate::abi::args::*;
use crate::abi::{LogicalDeviceIds, Program};
use crate::client::{Client, Device, MEMORY_KIND};
use crate::dtype;
use crate::error::{guard, non_null, PjrtError, Result};
use crate::options::{decode, Options};
use crate::util::{bytes, string};
use std::ffi::c_char;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A compiled program and what the API reports about it (kept here so that the pointers
/// handed out stay valid as long as the executable).
pub struct Compiled {
    pub name: String,
    pub exe: hlojit::Executable,
    pub options: Options,
    /// The module as compiled (per device), for its optimized program.
    pub module: hlojit::hlo::Module,
    /// That program as a serialized `HloModuleProtoWithConfig`, made on first request
    /// (`PJRT_Executable_OptimizedProgram`).
    pub optimized: std::sync::OnceLock<std::result::Result<Vec<u8>, String>>,
    pub fingerprint: String,
    /// The `CompileOptionsProto` it was compiled with, for its serialization.
    pub serialized_options: Vec<u8>,
    /// Parameter leaves as the caller passes them (tokens included).
    pub num_parameters: usize,
    /// For each parameter leaf: the executor's argument it is, or `None` for a token.
    pub parameter_leaves: Vec<Option<usize>>,
    /// For each output leaf: the executor's result it is, or `None` for a token.
    pub output_leaves: Vec<Option<usize>>,
    /// Parameter leaves (as the caller counts them) an output may be computed in (`input_output_alias`): donated at
    /// execution unless the caller says otherwise.
    pub donatable: Vec<bool>,
    pub output_types: Vec<i32>,
    pub output_dims: Vec<i64>,
    pub output_dim_sizes: Vec<usize>,
    kind_ptrs: Vec<*const c_char>,
    kind_sizes: Vec<usize>,
}
// SAFETY: the raw pointers point at a static string.
unsafe impl Send for Compiled {}
unsafe impl Sync for Compiled {}

/// `PJRT_Executable`: each handle the caller gets is its own (destroyed separately).
#[repr(C)]
pub struct Executable(pub crate::abi::HandleHead, pub Arc<Compiled>);

/// `PJRT_LoadedExecutable`.
#[repr(C)]
pub struct LoadedExecutable {
    pub head: crate::abi::HandleHead,
    pub compiled: Arc<Compiled>,
    /// Devices by logical id (replica-major), as the device assignment says.
    pub devices: Vec<*mut Device>,
    pub logical_ids: Vec<LogicalDeviceIds>,
    pub deleted: AtomicBool,
    /// The device assignment as a serialized `DeviceAssignmentProto`.
    pub serialized_assignment: Vec<u8>,
}

/// Compiles `code` (StableHLO bytecode or text, or HLO text: chosen by content) with the
/// serialized `CompileOptionsProto` in `options`.
pub fn compile(client: &Client, format: &str, code: &[u8], options_bytes: &[u8]) -> Result<LoadedExecutable> {
    let options = decode(options_bytes, client.devices.len())?;
    // Several partitions with SPMD partitioning on: the StableHLO front end turns programs that
    // are per device already (pmap, shard_map over every mesh axis) into the program each
    // device runs and refuses the rest (see compiler/src/stablehlo/convert/manual.rs). HLO
    // text has no such check, so it must not ask for partitioning.
    let partitioned = options.partitions > 1 && options.spmd;
    // By content: callers send HLO text under the format name "mlir" too.
    let hlo_text = matches!(hlojit::stablehlo::detect(code), hlojit::stablehlo::InputKind::HloText);
    if partitioned && (format != "mlir" || hlo_text) {
        return Err(PjrtError::new(
            crate::abi::ErrorCode::Unimplemented,
            format!(
                "hlojit does not partition sharded programs (SPMD partitioning over {} partitions); \
                 it runs StableHLO programs that are already per device (jax.pmap, shard_map)",
                options.partitions
            ),
        ));
    }
    if format != "mlir" && format != "hlo" && format != "hlo_with_config" {
        return Err(PjrtError::new(crate::abi::ErrorCode::Unimplemented, format!("hlojit cannot compile programs of format '{format}' (it takes 'mlir' and HLO text)")));
    }
    let mut module = hlojit::parse_module_bytes(code).map_err(|e| {
        let mut e = PjrtError::from(e);
        if format != "mlir" {
            e.message = format!("{} (a serialized HloModuleProto is not supported: send HLO text or StableHLO)", e.message);
        }
        e
    })?;
    if partitioned {
        let declared = module.header_attributes.iter().find(|(k, _)| k == "num_partitions").map(|(_, v)| v.as_str()).unwrap_or("1");
        if declared != options.partitions.to_string() {
            return Err(PjrtError::invalid(format!(
                "the program declares {declared} partitions (mhlo.num_partitions), the compile options {}",
                options.partitions
            )));
        }
    }
    module.header_attributes.retain(|(k, _)| k != "replica_count" && k != "num_partitions");
    if options.replicas > 1 {
        module.header_attributes.push(("replica_count".into(), options.replicas.to_string()));
    }
    if options.partitions > 1 {
        module.header_attributes.push(("num_partitions".into(), options.partitions.to_string()));
    }
    let exe = client.compiler.compile(&module)?;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    code.hash(&mut hasher);
    (options.replicas, options.partitions, &options.assignment).hash(&mut hasher);
    let fingerprint = format!("hlojit-{:016x}", hasher.finish());
    assemble(client, exe, module, options, options_bytes.to_vec(), fingerprint)
}

/// The loaded executable of `exe`, compiled from `module` with `options`.
pub fn assemble(client: &Client, exe: hlojit::Executable, module: hlojit::hlo::Module, options: Options, serialized_options: Vec<u8>, fingerprint: String) -> Result<LoadedExecutable> {
    let signature = exe.executor().signature();
    let parameter_leaves = crate::tokens::leaves(&signature.parameters);
    let output_leaves = crate::tokens::leaves(std::slice::from_ref(&signature.result));
    let arrays = exe.output_shapes().into_iter().cloned().collect::<Vec<_>>();
    // A token output is reported as XLA reports it: type TOKEN, no dimensions.
    let outputs: Vec<Option<hlojit::ArrayShape>> = output_leaves.iter().map(|l| l.map(|i| arrays[i].clone())).collect();
    let num_parameters = parameter_leaves.len();
    let mut donatable = vec![false; num_parameters];
    for a in &signature.aliases {
        if let Some(k) = parameter_leaves.iter().position(|&l| l == Some(a.parameter)) {
            donatable[k] = true;
        }
    }
    let kinds = outputs.len().max(num_parameters);
    let devices = options.assignment.iter().map(|&d| client.device(d)).collect::<Result<Vec<_>>>()?;
    let logical_ids = (0..options.assignment.len())
        .map(|i| LogicalDeviceIds { replica: (i / options.partitions) as i32, partition: (i % options.partitions) as i32 })
        .collect();
    let compiled = Compiled {
        name: module.name.clone(),
        fingerprint,
        serialized_options,
        num_parameters,
        parameter_leaves,
        output_leaves,
        donatable,
        output_types: outputs.iter().map(|s| s.as_ref().map_or(dtype::TOKEN, |s| dtype::to_pjrt(s.element_type))).collect(),
        output_dims: outputs.iter().flatten().flat_map(|s| s.dims.iter().copied()).collect(),
        output_dim_sizes: outputs.iter().map(|s| s.as_ref().map_or(0, |s| s.dims.len())).collect(),
        kind_ptrs: vec![MEMORY_KIND.as_ptr().cast(); kinds],
        kind_sizes: vec![MEMORY_KIND.len(); kinds],
        exe,
        options,
        module,
        optimized: std::sync::OnceLock::new(),
    };
    let serialized_assignment = crate::options::encode_assignment(&compiled.options);
    Ok(LoadedExecutable { head: Default::default(), compiled: Arc::new(compiled), devices, logical_ids, deleted: AtomicBool::new(false), serialized_assignment })
}

pub unsafe extern "C" fn client_compile(args: *mut ClientCompileArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let client = non_null(a.client, "client")?;
            let program: &Program = a.program.as_ref().ok_or_else(|| PjrtError::invalid("program is null"))?;
            if program.struct_size < Program::STRUCT_SIZE {
                return Err(PjrtError::invalid(format!("PJRT_Program: struct_size is {}, at least {} needed", program.struct_size, Program::STRUCT_SIZE)));
            }
            let format = string(program.format, program.format_size);
            let code = bytes(program.code.cast(), program.code_size);
            let options = bytes(a.compile_options.cast(), a.compile_options_size);
            a.executable = Box::into_raw(Box::new(compile(client, &format, code, options)?));
            Ok(())
        })
    }
}

fn compiled<'a>(e: *mut Executable) -> Result<&'a Compiled> {
    Ok(&non_null(e, "executable")?.1)
}

pub unsafe extern "C" fn executable_destroy(args: *mut ExecutableDestroyArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            if !a.executable.is_null() {
                drop(Box::from_raw(a.executable));
            }
            Ok(())
        })
    }
}

pub unsafe extern "C" fn executable_name(args: *mut ExecutableNameArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let c = compiled(a.executable)?;
            a.executable_name = c.name.as_ptr().cast();
            a.executable_name_size = c.name.len();
            Ok(())
        })
    }
}

pub unsafe extern "C" fn executable_num_replicas(args: *mut ExecutableNumReplicasArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { a.num_replicas = compiled(a.executable)?.options.replicas; Ok(()) }) }
}

pub unsafe extern "C" fn executable_num_partitions(args: *mut ExecutableNumPartitionsArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { a.num_partitions = compiled(a.executable)?.options.partitions; Ok(()) }) }
}

pub unsafe extern "C" fn executable_num_outputs(args: *mut ExecutableNumOutputsArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { a.num_outputs = compiled(a.executable)?.output_types.len(); Ok(()) }) }
}

pub unsafe extern "C" fn executable_code_size(args: *mut ExecutableSizeOfGeneratedCodeInBytesArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { compiled(a.executable)?; a.size_in_bytes = 0; Ok(()) }) }
}

pub unsafe extern "C" fn executable_fingerprint(args: *mut ExecutableFingerprintArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let c = compiled(a.executable)?;
            a.executable_fingerprint = c.fingerprint.as_ptr().cast();
            a.executable_fingerprint_size = c.fingerprint.len();
            Ok(())
        })
    }
}

/// No cost model: an empty property list (JAX treats that as "unknown").
pub unsafe extern "C" fn executable_cost_analysis(args: *mut ExecutableGetCostAnalysisArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            compiled(a.executable)?;
            a.num_properties = 0;
            a.properties = std::ptr::null();
            Ok(())
        })
    }
}

pub unsafe extern "C" fn executable_memory_stats(args: *mut ExecutableGetCompiledMemoryStatsArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let c = compiled(a.executable)?;
            let bytes = |shapes: Vec<&hlojit::ArrayShape>| -> i64 {
                shapes.iter().map(|s| s.element_count().saturating_mul(s.element_type.byte_size() as i64)).sum()
            };
            a.generated_code_size_in_bytes = 0;
            a.argument_size_in_bytes = bytes(c.exe.argument_shapes());
            a.output_size_in_bytes = bytes(c.exe.output_shapes());
            a.alias_size_in_bytes = 0;
            a.temp_size_in_bytes = 0;
            a.host_generated_code_size_in_bytes = 0;
            a.host_argument_size_in_bytes = 0;
            a.host_output_size_in_bytes = 0;
            a.host_alias_size_in_bytes = 0;
            a.host_temp_size_in_bytes = 0;
            Ok(())
        })
    }
}

pub unsafe extern "C" fn executable_output_element_types(args: *mut ExecutableOutputElementTypesArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let c = compiled(a.executable)?;
            a.output_types = c.output_types.as_ptr();
            a.num_output_types = c.output_types.len();
            Ok(())
        })
    }
}

pub unsafe extern "C" fn executable_output_dimensions(args: *mut ExecutableOutputDimensionsArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let c = compiled(a.executable)?;
            a.num_outputs = c.output_dim_sizes.len();
            a.dims = c.output_dims.as_ptr();
            a.dim_sizes = c.output_dim_sizes.as_ptr();
            Ok(())
        })
    }
}

pub unsafe extern "C" fn executable_output_memory_kinds(args: *mut ExecutableOutputMemoryKindsArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let c = compiled(a.executable)?;
            a.num_outputs = c.output_types.len();
            a.memory_kinds = c.kind_ptrs.as_ptr();
            a.memory_kind_sizes = c.kind_sizes.as_ptr();
            Ok(())
        })
    }
}

pub unsafe extern "C" fn executable_parameter_memory_kinds(args: *mut ExecutableParameterMemoryKindsArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let c = compiled(a.executable)?;
            a.num_parameters = c.num_parameters;
            a.memory_kinds = c.kind_ptrs.as_ptr();
            a.memory_kind_sizes = c.kind_sizes.as_ptr();
            Ok(())
        })
    }
}

fn loaded<'a>(e: *mut LoadedExecutable) -> Result<&'a LoadedExecutable> {
    Ok(non_null(e, "loaded executable")?)
}

pub unsafe extern "C" fn loaded_destroy(args: *mut LoadedExecutableDestroyArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            if !a.executable.is_null() {
                drop(Box::from_raw(a.executable));
            }
            Ok(())
        })
    }
}

pub unsafe extern "C" fn loaded_get_executable(args: *mut LoadedExecutableGetExecutableArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let l = loaded(a.loaded_executable)?;
            a.executable = Box::into_raw(Box::new(Executable(Default::default(), l.compiled.clone())));
            Ok(())
        })
    }
}

pub unsafe extern "C" fn loaded_addressable_devices(args: *mut LoadedExecutableAddressableDevicesArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let l = loaded(a.executable)?;
            a.addressable_devices = l.devices.as_ptr();
            a.num_addressable_devices = l.devices.len();
            Ok(())
        })
    }
}

pub unsafe extern "C" fn loaded_logical_ids(args: *mut LoadedExecutableAddressableDeviceLogicalIdsArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let l = loaded(a.executable)?;
            a.addressable_device_logical_ids = l.logical_ids.as_ptr();
            a.num_addressable_device_logical_ids = l.logical_ids.len();
            Ok(())
        })
    }
}

/// The bytes live as long as the executable: nothing for the caller to free.
unsafe extern "C" fn nothing_to_free(_: *mut std::ffi::c_void) {}

pub unsafe extern "C" fn loaded_device_assignment(args: *mut LoadedExecutableGetDeviceAssignmentArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let l = loaded(a.executable)?;
            a.serialized_bytes = l.serialized_assignment.as_ptr().cast();
            a.serialized_bytes_size = l.serialized_assignment.len();
            a.serialized_device_assignment = std::ptr::null_mut();
            a.serialized_device_assignment_deleter = Some(nothing_to_free);
            Ok(())
        })
    }
}

pub unsafe extern "C" fn loaded_delete(args: *mut LoadedExecutableDeleteArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { loaded(a.executable)?.deleted.store(true, Ordering::Release); Ok(()) }) }
}

pub unsafe extern "C" fn loaded_is_deleted(args: *mut LoadedExecutableIsDeletedArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { a.is_deleted = loaded(a.executable)?.deleted.load(Ordering::Acquire); Ok(()) }) }
}

pub unsafe extern "C" fn loaded_fingerprint(args: *mut LoadedExecutableFingerprintArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let c = &loaded(a.executable)?.compiled;
            a.executable_fingerprint = c.fingerprint.as_ptr().cast();
            a.executable_fingerprint_size = c.fingerprint.len();
            Ok(())
        })
    }
}
