//! The plugin as a C caller sees it: every call goes through the `PJRT_Api` function table
//! `GetPjrtApi` returns, with argument structs filled as the C header says.

use hlojit_pjrt::abi::args::*;
use hlojit_pjrt::abi::table::Api;
use hlojit_pjrt::abi::{Args, Program};
use hlojit_pjrt::buffer::Buffer;
use hlojit_pjrt::client::{Client, Device};
use hlojit_pjrt::error::PjrtError;
use hlojit_pjrt::executable::LoadedExecutable;
use std::ffi::c_void;
use std::ptr::null_mut;

fn api() -> &'static Api {
    // SAFETY: GetPjrtApi returns the process's table.
    unsafe { &*hlojit_pjrt::GetPjrtApi() }
}

/// A zeroed argument struct with `struct_size` set.
fn args<A: Args>() -> A {
    // SAFETY: every argument struct is plain data for which all-zero bytes are valid (null
    // pointers, zero sizes, false).
    let mut a: A = unsafe { std::mem::zeroed() };
    // SAFETY: struct_size is the first field of every argument struct.
    unsafe { *(&mut a as *mut A as *mut usize) = std::mem::size_of::<A>() };
    a
}

/// Calls entry point `A::NAME` through the table; an error comes back as (code, message).
fn call<A: Args>(a: &mut A) -> Result<(), (i32, String)> {
    let f = api().function(A::NAME).unwrap_or_else(|| panic!("{} has no slot", A::NAME));
    // SAFETY: the slot's function takes this argument struct.
    let e = unsafe { f(a as *mut A as *mut c_void) };
    if e.is_null() {
        return Ok(());
    }
    let mut m: ErrorMessageArgs = args();
    m.error = e;
    let mut c: ErrorGetCodeArgs = args();
    c.error = e;
    call(&mut m).unwrap();
    call(&mut c).unwrap();
    // SAFETY: the message lives as long as the error.
    let text = String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(m.message.cast::<u8>(), m.message_size) }).into_owned();
    let mut d: ErrorDestroyArgs = args();
    d.error = e;
    call(&mut d).unwrap();
    Err((c.code, text))
}

fn client() -> *mut Client {
    let mut a: ClientCreateArgs = args();
    call(&mut a).unwrap();
    assert!(!a.client.is_null());
    a.client
}

fn destroy_client(c: *mut Client) {
    let mut a: ClientDestroyArgs = args();
    a.client = c;
    call(&mut a).unwrap();
}

fn device0(c: *mut Client) -> *mut Device {
    let mut a: ClientAddressableDevicesArgs = args();
    a.client = c;
    call(&mut a).unwrap();
    assert!(a.num_addressable_devices >= 1);
    // SAFETY: the client's device list.
    unsafe { *a.addressable_devices }
}

fn destroy_event(e: *mut hlojit_pjrt::event::Event) {
    let mut a: EventDestroyArgs = args();
    a.event = e;
    call(&mut a).unwrap();
}

/// A buffer from host data (element type given as PJRT_Buffer_Type).
fn upload(c: *mut Client, ty: i32, dims: &[i64], data: &[u8], strides: Option<&[i64]>) -> *mut Buffer {
    let mut a: ClientBufferFromHostBufferArgs = args();
    a.client = c;
    a.data = data.as_ptr().cast();
    a.element_type = ty;
    a.dims = dims.as_ptr();
    a.num_dims = dims.len();
    if let Some(s) = strides {
        a.byte_strides = s.as_ptr();
        a.num_byte_strides = s.len();
    }
    a.device = device0(c);
    call(&mut a).unwrap();
    destroy_event(a.done_with_host_buffer);
    a.buffer
}

fn download(b: *mut Buffer) -> Vec<u8> {
    let mut a: BufferToHostBufferArgs = args();
    a.src = b;
    call(&mut a).unwrap();
    let mut out = vec![0u8; a.dst_size];
    a.dst = out.as_mut_ptr().cast();
    call(&mut a).unwrap();
    let mut w: EventAwaitArgs = args();
    w.event = a.event;
    call(&mut w).unwrap();
    destroy_event(a.event);
    out
}

fn destroy_buffer(b: *mut Buffer) {
    let mut a: BufferDestroyArgs = args();
    a.buffer = b;
    call(&mut a).unwrap();
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn to_f32s(b: &[u8]) -> Vec<f32> {
    b.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn compile(c: *mut Client, code: &str) -> Result<*mut LoadedExecutable, (i32, String)> {
    compile_with(c, code, &[])
}

fn compile_with(c: *mut Client, code: &str, options: &[u8]) -> Result<*mut LoadedExecutable, (i32, String)> {
    let format = "mlir";
    let program = Program {
        struct_size: Program::STRUCT_SIZE,
        extension_start: null_mut(),
        code: code.as_ptr() as *mut _,
        code_size: code.len(),
        format: format.as_ptr().cast(),
        format_size: format.len(),
    };
    let mut a: ClientCompileArgs = args();
    a.client = c;
    a.program = &program;
    a.compile_options = options.as_ptr().cast();
    a.compile_options_size = options.len();
    call(&mut a)?;
    Ok(a.executable)
}

/// Runs a single-device executable; returns its output buffers.
fn execute(e: *mut LoadedExecutable, inputs: &[*mut Buffer], num_outputs: usize) -> Result<Vec<*mut Buffer>, (i32, String)> {
    let list: Vec<*mut Buffer> = inputs.to_vec();
    let lists = [list.as_ptr()];
    let mut outputs = vec![null_mut::<Buffer>(); num_outputs];
    let output_lists = [outputs.as_mut_ptr()];
    let mut a: LoadedExecutableExecuteArgs = args();
    a.executable = e;
    a.argument_lists = lists.as_ptr();
    a.num_devices = 1;
    a.num_args = inputs.len();
    a.output_lists = output_lists.as_ptr();
    call(&mut a)?;
    Ok(outputs)
}

const F32: i32 = 11;

#[test]
fn the_table_reports_api_0_112_and_hlojit_attributes() {
    let api = api();
    assert_eq!((api.pjrt_api_version.major_version, api.pjrt_api_version.minor_version), (0, 112));
    assert_eq!(api.struct_size, 1144);
    let mut a: PluginAttributesArgs = args();
    call(&mut a).unwrap();
    let attrs = hlojit_pjrt::util::named_values(a.attributes, a.num_attributes);
    assert!(attrs.iter().any(|(n, _)| n == "stablehlo_current_version"), "{attrs:?}");
}

#[test]
fn client_devices_and_memories() {
    let c = client();
    let mut name: ClientPlatformNameArgs = args();
    name.client = c;
    call(&mut name).unwrap();
    assert_eq!(hlojit_pjrt::util::string(name.platform_name, name.platform_name_size), "cpu");
    let d = device0(c);
    let mut desc: DeviceGetDescriptionArgs = args();
    desc.device = d;
    call(&mut desc).unwrap();
    let mut id: DeviceDescriptionIdArgs = args();
    id.device_description = desc.device_description;
    call(&mut id).unwrap();
    assert_eq!(id.id, 0);
    let mut mem: DeviceDefaultMemoryArgs = args();
    mem.device = d;
    call(&mut mem).unwrap();
    let mut kind: MemoryKindArgs = args();
    kind.memory = mem.memory;
    call(&mut kind).unwrap();
    assert_eq!(hlojit_pjrt::util::string(kind.kind, kind.kind_size), "device");
    let mut lookup: ClientLookupDeviceArgs = args();
    lookup.client = c;
    lookup.id = 7;
    let (code, message) = call(&mut lookup).unwrap_err();
    assert_eq!(code, 5, "NOT_FOUND");
    assert!(message.contains("no hlojit device with id 7"), "{message}");
    destroy_client(c);
}

#[test]
fn buffers_round_trip_with_byte_strides() {
    let c = client();
    // Column-major 2x3 storage of [[1,2,3],[4,5,6]]: byte strides (4, 8).
    let data = f32s(&[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    let b = upload(c, F32, &[2, 3], &data, Some(&[4, 8]));
    assert_eq!(to_f32s(&download(b)), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let mut dims: BufferDimensionsArgs = args();
    dims.buffer = b;
    call(&mut dims).unwrap();
    assert_eq!(hlojit_pjrt::util::slice(dims.dims, dims.num_dims), &[2, 3]);
    let mut ty: BufferElementTypeArgs = args();
    ty.buffer = b;
    call(&mut ty).unwrap();
    assert_eq!(ty.element_type, F32);
    // bf16 keeps its bits.
    let bits: Vec<u8> = [0x3f80u16, 0xc000].iter().flat_map(|x| x.to_le_bytes()).collect();
    let h = upload(c, 13, &[2], &bits, None);
    assert_eq!(download(h), bits);
    destroy_buffer(h);
    let mut del: BufferDeleteArgs = args();
    del.buffer = b;
    call(&mut del).unwrap();
    let mut out: BufferToHostBufferArgs = args();
    out.src = b;
    let mut space = [0u8; 24];
    out.dst = space.as_mut_ptr().cast();
    out.dst_size = 24;
    let (code, message) = call(&mut out).unwrap_err();
    assert_eq!(code, 9, "FAILED_PRECONDITION");
    assert!(message.contains("deleted or donated"), "{message}");
    destroy_buffer(b);
    destroy_client(c);
}

#[test]
fn compiles_and_runs_stablehlo_and_hlo_text() {
    let c = client();
    let stablehlo = r#"module @jit_f {
  func.func public @main(%arg0: tensor<3xf32>, %arg1: tensor<3xf32>) -> (tensor<3xf32>) {
    %0 = stablehlo.multiply %arg0, %arg1 : tensor<3xf32>
    %1 = stablehlo.add %0, %arg0 : tensor<3xf32>
    return %1 : tensor<3xf32>
  }
}"#;
    let e = compile(c, stablehlo).unwrap();
    let x = upload(c, F32, &[3], &f32s(&[1.0, 2.0, 3.0]), None);
    let y = upload(c, F32, &[3], &f32s(&[10.0, 20.0, 30.0]), None);
    let out = execute(e, &[x, y], 1).unwrap();
    // x * y + x, as numpy computes it.
    assert_eq!(to_f32s(&download(out[0])), vec![11.0, 42.0, 93.0]);
    let mut n: LoadedExecutableGetExecutableArgs = args();
    n.loaded_executable = e;
    call(&mut n).unwrap();
    let mut outs: ExecutableNumOutputsArgs = args();
    outs.executable = n.executable;
    call(&mut outs).unwrap();
    assert_eq!(outs.num_outputs, 1);
    let mut d: ExecutableDestroyArgs = args();
    d.executable = n.executable;
    call(&mut d).unwrap();

    let hlo = "HloModule m\nENTRY e { p = f32[3] parameter(0)\n ROOT n = f32[3] negate(p) }";
    let h = compile(c, hlo).unwrap();
    let out2 = execute(h, &[x], 1).unwrap();
    assert_eq!(to_f32s(&download(out2[0])), vec![-1.0, -2.0, -3.0]);
    let (code, message) = execute(h, &[x, y], 1).unwrap_err();
    assert_eq!(code, 3);
    assert!(message.contains("takes 1 arguments, 2 given"), "{message}");
    for b in [x, y, out[0], out2[0]] {
        destroy_buffer(b);
    }
    for e in [e, h] {
        let mut a: LoadedExecutableDestroyArgs = args();
        a.executable = e;
        call(&mut a).unwrap();
    }
    destroy_client(c);
}

#[test]
fn donated_arguments_are_consumed() {
    let c = client();
    let hlo = "HloModule m, input_output_alias={ {}: (0, {}, may-alias) }\n\
               ENTRY e { p = f32[2] parameter(0)\n ROOT a = f32[2] add(p, p) }";
    let e = compile(c, hlo).unwrap();
    let x = upload(c, F32, &[2], &f32s(&[1.5, 2.5]), None);
    let out = execute(e, &[x], 1).unwrap();
    assert_eq!(to_f32s(&download(out[0])), vec![3.0, 5.0]);
    let mut d: BufferIsDeletedArgs = args();
    d.buffer = x;
    call(&mut d).unwrap();
    assert!(d.is_deleted, "a donated argument is gone after the execution");
    destroy_buffer(x);
    destroy_buffer(out[0]);
    destroy_client(c);
}

#[test]
fn errors_carry_hlojit_messages_and_unimplemented_entry_points_name_themselves() {
    let c = client();
    let (code, message) = compile(c, "HloModule m\nENTRY e { p = f32[3] parameter(0)\n ROOT n = f32[4] negate(p) }").unwrap_err();
    assert_eq!(code, 3);
    assert!(message.contains("instruction n: expected shape f32[3]"), "{message}");
    // A slot hlojit leaves empty answers with an error naming it.
    let f = api().function("PJRT_Executable_GetCompileOptions").unwrap();
    let mut a: ExecutableNameArgs = args();
    // SAFETY: stubs read nothing.
    let e = unsafe { f(&mut a as *mut _ as *mut c_void) };
    assert!(!e.is_null());
    // SAFETY: an error we own.
    let err = unsafe { Box::from_raw(e as *mut PjrtError) };
    assert_eq!(err.code as i32, 12);
    assert!(err.message.contains("PJRT_Executable_GetCompileOptions"), "{}", err.message);
    // A struct too small for the fields an entry point needs is refused.
    let mut small: ClientPlatformNameArgs = args();
    small.struct_size = 16;
    small.client = c;
    let (_, message) = call(&mut small).unwrap_err();
    assert!(message.contains("struct_size"), "{message}");
    destroy_client(c);
}

#[test]
fn replicas_run_on_two_devices_with_an_all_reduce() {
    use hlojit_pjrt::abi::{NamedValue, NamedValueUnion, NAMED_INT64};
    use hlojit_pjrt::options::{CompileOptionsProto, ExecutableBuildOptionsProto};
    use prost::Message;
    let name = "num_devices";
    let option = NamedValue {
        struct_size: NamedValue::STRUCT_SIZE,
        extension_start: null_mut(),
        name: name.as_ptr().cast(),
        name_size: name.len(),
        kind: NAMED_INT64,
        value: NamedValueUnion { int64_value: 2 },
        value_size: 1,
    };
    let mut create: ClientCreateArgs = args();
    create.create_options = &option;
    create.num_options = 1;
    call(&mut create).unwrap();
    let c = create.client;
    let mut devices: ClientDevicesArgs = args();
    devices.client = c;
    call(&mut devices).unwrap();
    assert_eq!(devices.num_devices, 2);
    let options = CompileOptionsProto {
        executable_build_options: Some(ExecutableBuildOptionsProto { num_replicas: 2, num_partitions: 1, ..Default::default() }),
        ..Default::default()
    };
    let hlo = "HloModule m\nadd { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n\
               ENTRY e { p = f32[2] parameter(0)\n ROOT r = f32[2] all-reduce(p), replica_groups={}, to_apply=add }";
    let e = compile_with(c, hlo, &options.encode_to_vec()).unwrap();
    let x0 = upload(c, F32, &[2], &f32s(&[1.0, 2.0]), None);
    let x1 = upload(c, F32, &[2], &f32s(&[10.0, 20.0]), None);
    let (l0, l1) = ([x0], [x1]);
    let lists = [l0.as_ptr(), l1.as_ptr()];
    let mut o0 = [null_mut::<Buffer>()];
    let mut o1 = [null_mut::<Buffer>()];
    let output_lists = [o0.as_mut_ptr(), o1.as_mut_ptr()];
    let mut a: LoadedExecutableExecuteArgs = args();
    a.executable = e;
    a.argument_lists = lists.as_ptr();
    a.num_devices = 2;
    a.num_args = 1;
    a.output_lists = output_lists.as_ptr();
    call(&mut a).unwrap();
    // Each replica gets the sum of both, on its own device.
    for (out, device) in [(o0[0], 0), (o1[0], 1)] {
        assert_eq!(to_f32s(&download(out)), vec![11.0, 22.0]);
        let mut d: BufferDeviceArgs = args();
        d.buffer = out;
        call(&mut d).unwrap();
        // SAFETY: the client's device list.
        assert_eq!(d.device, unsafe { *devices.devices.add(device) });
        destroy_buffer(out);
    }
    // SPMD partitioning of a sharded program is refused with a reason.
    let sharded = CompileOptionsProto {
        executable_build_options: Some(ExecutableBuildOptionsProto { num_partitions: 2, use_spmd_partitioning: true, ..Default::default() }),
        ..Default::default()
    };
    let (code, message) = compile_with(c, "HloModule m\nENTRY e { ROOT p = f32[2] parameter(0) }", &sharded.encode_to_vec()).unwrap_err();
    assert_eq!(code, 12);
    assert!(message.contains("does not partition sharded programs"), "{message}");
    destroy_buffer(x0);
    destroy_buffer(x1);
    destroy_client(c);
}

#[test]
fn the_optimized_program_is_hlojits_module_as_an_hlo_module_proto() {
    use hlojit_pjrt::hlo_proto::messages::HloModuleProtoWithConfig;
    use prost::Message;
    let c = client();
    let hlo = "HloModule m\nENTRY e { p = f32[4] parameter(0)\n n = f32[4] negate(p)\n ROOT x = f32[4] exponential(n) }";
    let e = compile(c, hlo).unwrap();
    let mut g: LoadedExecutableGetExecutableArgs = args();
    g.loaded_executable = e;
    call(&mut g).unwrap();
    let mut program = Program {
        struct_size: Program::STRUCT_SIZE,
        extension_start: null_mut(),
        code: null_mut(),
        code_size: 0,
        format: std::ptr::null(),
        format_size: 0,
    };
    let mut a: ExecutableOptimizedProgramArgs = args();
    a.executable = g.executable;
    a.program = &mut program;
    // The C API's two calls: the size first, then the proto into the caller's buffer.
    call(&mut a).unwrap();
    let mut code = vec![0u8; program.code_size];
    program.code = code.as_mut_ptr().cast();
    call(&mut a).unwrap();
    // SAFETY: the plugin's static format name.
    let format = unsafe { std::slice::from_raw_parts(program.format.cast::<u8>(), program.format_size) };
    // The one format besides MLIR that jaxlib's GetHloModules reads.
    assert_eq!(format, b"hlo_with_config");
    let proto = HloModuleProtoWithConfig::decode(code.as_slice()).unwrap();
    let module = proto.hlo_module.unwrap();
    let config = proto.config.unwrap();
    // XLA checks the config's entry layout against the module's program shape.
    assert_eq!(config.entry_computation_layout, module.host_program_shape);
    assert_eq!((config.replica_count, config.num_partitions), (1, 1));
    // After hlojit's passes: negate and exponential fused into one kernel; the fusion body
    // comes first (callees before callers) and is marked as one.
    assert_eq!(module.name, "m");
    assert_eq!(module.computations.len(), 2, "{module:?}");
    let (body, entry) = (&module.computations[0], &module.computations[1]);
    assert!(body.is_fusion_computation && !entry.is_fusion_computation);
    assert_eq!(module.entry_computation_id, entry.id);
    let opcodes: Vec<&str> = body.instructions.iter().map(|i| i.opcode.as_str()).collect();
    assert_eq!(opcodes, ["parameter", "negate", "exponential"]);
    let fusion = entry.instructions.iter().find(|i| i.opcode == "fusion").unwrap();
    assert_eq!((fusion.fusion_kind.as_str(), fusion.called_computation_ids.as_slice()), ("kLoop", &[body.id][..]));
    assert_eq!(entry.root_id, fusion.id);
    // A buffer too small is an error, not an overrun.
    // SAFETY: `a.program` points to `program`, alive until the end of this function.
    unsafe { (*a.program).code_size = 3 };
    let (code, message) = call(&mut a).unwrap_err();
    assert_eq!(code, 3, "{message}");
    let mut d: ExecutableDestroyArgs = args();
    d.executable = g.executable;
    call(&mut d).unwrap();
    let mut l: LoadedExecutableDestroyArgs = args();
    l.executable = e;
    call(&mut l).unwrap();
    destroy_client(c);
}

/// The executable of a loaded one (destroy it with `ExecutableDestroyArgs`).
fn executable_of(e: *mut LoadedExecutable) -> *mut hlojit_pjrt::executable::Executable {
    let mut g: LoadedExecutableGetExecutableArgs = args();
    g.loaded_executable = e;
    call(&mut g).unwrap();
    g.executable
}

fn fingerprint(e: *mut LoadedExecutable) -> String {
    let mut f: LoadedExecutableFingerprintArgs = args();
    f.executable = e;
    call(&mut f).unwrap();
    // SAFETY: the plugin's string, alive as long as the executable.
    String::from_utf8(unsafe { std::slice::from_raw_parts(f.executable_fingerprint.cast::<u8>(), f.executable_fingerprint_size) }.to_vec()).unwrap()
}

fn deserialize(c: *mut Client, bytes: &[u8]) -> Result<*mut LoadedExecutable, (i32, String)> {
    let mut d: ExecutableDeserializeAndLoadArgs = args();
    d.client = c;
    d.serialized_executable = bytes.as_ptr().cast();
    d.serialized_executable_size = bytes.len();
    call(&mut d)?;
    Ok(d.loaded_executable)
}

#[test]
fn serialized_executables_load_and_run_as_the_compiled_ones() {
    let c = client();
    let hlo = "HloModule m, input_output_alias={ {0}: (0, {}, may-alias) }\n\
               ENTRY e { p = f32[2] parameter(0)\n a = f32[2] add(p, p)\n ROOT t = (f32[2], f32[2]) tuple(a, p) }";
    let e = compile(c, hlo).unwrap();
    let exe = executable_of(e);
    let mut s: ExecutableSerializeArgs = args();
    s.executable = exe;
    call(&mut s).unwrap();
    // SAFETY: the plugin's bytes, alive until the deleter runs.
    let bytes = unsafe { std::slice::from_raw_parts(s.serialized_bytes.cast::<u8>(), s.serialized_bytes_size) }.to_vec();
    // SAFETY: called once on the object the plugin handed out.
    unsafe { (s.serialized_executable_deleter.unwrap())(s.serialized_executable) };
    let loaded = deserialize(c, &bytes).unwrap();
    assert_eq!(fingerprint(loaded), fingerprint(e));
    let mut n: ExecutableNameArgs = args();
    n.executable = executable_of(loaded);
    call(&mut n).unwrap();
    assert_eq!(n.executable_name_size, 1);
    // Same outputs, and the donated argument consumed as by the compiled executable.
    let x = upload(c, F32, &[2], &f32s(&[1.5, 2.5]), None);
    let out = execute(loaded, &[x], 2).unwrap();
    assert_eq!(to_f32s(&download(out[0])), vec![3.0, 5.0]);
    assert_eq!(to_f32s(&download(out[1])), vec![1.5, 2.5]);
    let mut d: BufferIsDeletedArgs = args();
    d.buffer = x;
    call(&mut d).unwrap();
    assert!(d.is_deleted);
    // Bytes that are not a whole serialized executable of this build are refused.
    let (code, message) = deserialize(c, b"not an executable").unwrap_err();
    assert_eq!(code, 3);
    assert!(message.contains("not a serialized executable"), "{message}");
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 1;
    let (_, message) = deserialize(c, &flipped).unwrap_err();
    assert!(message.contains("checksum mismatch"), "{message}");
    let plain = hlojit::Client::new().compile_text(hlo).unwrap().serialize().unwrap();
    let (_, message) = deserialize(c, &plain).unwrap_err();
    assert!(message.contains("not serialized by the hlojit PJRT plugin"), "{message}");
    for b in [x, out[0], out[1]] {
        destroy_buffer(b);
    }
    for x in [exe, n.executable] {
        let mut d: ExecutableDestroyArgs = args();
        d.executable = x;
        call(&mut d).unwrap();
    }
    for e in [e, loaded] {
        let mut a: LoadedExecutableDestroyArgs = args();
        a.executable = e;
        call(&mut a).unwrap();
    }
    destroy_client(c);
}
