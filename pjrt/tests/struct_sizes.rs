//! Every argument struct against the C header's `PJRT_*_STRUCT_SIZE` (API 0.104's header;
//! 0.105..0.112 only appended to the table). A struct hlojit declares only a prefix of (it
//! reads none of the later fields) must stop short of the C size, never past it.

use hlojit_pjrt::abi::args::*;
use hlojit_pjrt::abi::{Args, MemoryLayout, NamedValue, Program};

/// Structs whose later fields hlojit neither reads nor writes, with the fields it leaves out.
const PREFIXES: &[&str] = &[
    "PJRT_Client_Create",                     // kv_try_get_callback, kv_try_get_user_arg
    "PJRT_Executable_GetCompiledMemoryStats", // peak_memory_in_bytes and later
    "PJRT_Device_MemoryStats",                // num_allocs and later (zeroed up to struct_size)
];

macro_rules! sizes {
    ($(($t:ident, $c:expr)),* $(,)?) => {
        #[test]
        fn argument_structs_match_the_c_header() {
            let mut wrong = Vec::new();
            $(
                let (name, rust, c) = (<$t as Args>::NAME, <$t as Args>::STRUCT_SIZE, $c as usize);
                let ok = if PREFIXES.contains(&name) { rust < c } else { rust == c };
                if !ok {
                    wrong.push(format!("{name}: hlojit {rust}, C {c}"));
                }
            )*
            assert!(wrong.is_empty(), "{wrong:#?}");
        }
    };
}

sizes!(
(ErrorDestroyArgs, 24),
(ErrorMessageArgs, 40),
(ErrorGetCodeArgs, 28),
(LoadedExecutableGetDeviceAssignmentArgs, 56),
(DeviceMemoryStatsArgs, 185),
(ErrorForEachPayloadArgs, 40),
(DeviceGetAttributesArgs, 56),
(PluginInitializeArgs, 16),
(PluginAttributesArgs, 32),
(EventDestroyArgs, 24),
(EventIsReadyArgs, 25),
(EventErrorArgs, 24),
(EventAwaitArgs, 24),
(EventOnReadyArgs, 40),
(EventCreateArgs, 24),
(EventSetArgs, 48),
(ClientCreateArgs, 88),
(ClientDestroyArgs, 24),
(ClientPlatformNameArgs, 40),
(ClientProcessIndexArgs, 28),
(ClientPlatformVersionArgs, 40),
(ClientTopologyDescriptionArgs, 32),
(ClientDevicesArgs, 40),
(ClientAddressableDevicesArgs, 40),
(ClientLookupDeviceArgs, 40),
(ClientLookupAddressableDeviceArgs, 40),
(ClientAddressableMemoriesArgs, 40),
(ClientCompileArgs, 56),
(ExecutableSerializeArgs, 56),
(ExecutableDeserializeAndLoadArgs, 64),
(ClientDefaultDeviceAssignmentArgs, 48),
(ClientBufferFromHostBufferArgs, 120),
(ClientCreateUninitializedBufferArgs, 80),
(DeviceDescriptionIdArgs, 28),
(DeviceDescriptionProcessIndexArgs, 28),
(DeviceDescriptionAttributesArgs, 40),
(DeviceDescriptionKindArgs, 40),
(DeviceDescriptionDebugStringArgs, 40),
(DeviceDescriptionToStringArgs, 40),
(DeviceGetDescriptionArgs, 32),
(DeviceIsAddressableArgs, 25),
(DeviceLocalHardwareIdArgs, 28),
(DeviceAddressableMemoriesArgs, 40),
(DeviceDefaultMemoryArgs, 32),
(MemoryIdArgs, 28),
(MemoryKindArgs, 40),
(MemoryKindIdArgs, 28),
(MemoryDebugStringArgs, 40),
(MemoryToStringArgs, 40),
(MemoryAddressableByDevicesArgs, 40),
(ExecuteContextCreateArgs, 24),
(ExecuteContextDestroyArgs, 24),
(ExecutableDestroyArgs, 24),
(ExecutableNameArgs, 40),
(ExecutableNumReplicasArgs, 32),
(ExecutableNumPartitionsArgs, 32),
(ExecutableNumOutputsArgs, 32),
(ExecutableSizeOfGeneratedCodeInBytesArgs, 32),
(ExecutableFingerprintArgs, 40),
(ExecutableGetCostAnalysisArgs, 40),
(ExecutableGetCompiledMemoryStatsArgs, 144),
(ExecutableOutputElementTypesArgs, 40),
(ExecutableOutputDimensionsArgs, 48),
(ExecutableParameterMemoryKindsArgs, 48),
(ExecutableOutputMemoryKindsArgs, 48),
(ExecutableOptimizedProgramArgs, 32),
(LoadedExecutableDestroyArgs, 24),
(LoadedExecutableGetExecutableArgs, 32),
(LoadedExecutableAddressableDevicesArgs, 40),
(LoadedExecutableAddressableDeviceLogicalIdsArgs, 40),
(LoadedExecutableDeleteArgs, 24),
(LoadedExecutableIsDeletedArgs, 25),
(LoadedExecutableFingerprintArgs, 40),
(LoadedExecutableExecuteArgs, 80),
(BufferDestroyArgs, 24),
(BufferElementTypeArgs, 28),
(BufferDimensionsArgs, 40),
(BufferUnpaddedDimensionsArgs, 40),
(BufferDynamicDimensionIndicesArgs, 40),
(BufferGetMemoryLayoutArgs, 104),
(BufferToHostBufferArgs, 56),
(BufferOnDeviceSizeInBytesArgs, 32),
(BufferDeleteArgs, 24),
(BufferIsDeletedArgs, 25),
(BufferCopyRawToHostArgs, 56),
(BufferCopyToDeviceArgs, 40),
(BufferCopyToMemoryArgs, 40),
(BufferIsOnCpuArgs, 25),
(BufferDeviceArgs, 32),
(BufferMemoryArgs, 32),
(BufferReadyEventArgs, 32),
(BufferUnsafePointerArgs, 32),
(BufferIncreaseExternalReferenceCountArgs, 24),
(BufferDecreaseExternalReferenceCountArgs, 24),
(BufferOpaqueDeviceMemoryDataPointerArgs, 32),
(TopologyDescriptionDestroyArgs, 24),
(TopologyDescriptionPlatformNameArgs, 40),
(TopologyDescriptionPlatformVersionArgs, 40),
(TopologyDescriptionGetDeviceDescriptionsArgs, 40),
(TopologyDescriptionAttributesArgs, 40),
(TopologyDescriptionFingerprintArgs, 32),
);

#[test]
fn shared_structs_match_the_c_header() {
    assert_eq!(NamedValue::STRUCT_SIZE, 56);
    assert_eq!(MemoryLayout::STRUCT_SIZE, 76);
    assert_eq!(Program::STRUCT_SIZE, 48);
    assert_eq!(hlojit_pjrt::abi::ExecuteOptions::STRUCT_SIZE, 72);
    assert_eq!(std::mem::size_of::<hlojit_pjrt::abi::ApiVersion>(), 24);
}
