//! The argument struct of every entry point hlojit implements, field for field as the C
//! header declares them after `struct_size` and `extension_start`.

use super::{Args, ExecuteOptions, ExtensionBase, LogicalDeviceIds, MemoryLayout, NamedValue, OnReadyCallback, Program};
use crate::buffer::Buffer;
use crate::client::{Client, Device, DeviceDescription, Memory, Topology};
use crate::error::PjrtError;
use crate::event::Event;
use crate::executable::{Executable, LoadedExecutable};
use std::ffi::{c_char, c_void};

/// Declares `#[repr(C)] struct NAME { struct_size, extension_start, fields... }` and its
/// [`Args`] impl; `STRUCT_SIZE` is where the last field ends (the C header's
/// `PJRT_STRUCT_SIZE(type, last_field)`).
macro_rules! args {
    ($($name:ident = $cname:literal { $($field:ident : $ty:ty),* $(,)? })*) => {$(
        #[repr(C)]
        pub struct $name {
            pub struct_size: usize,
            pub extension_start: *mut ExtensionBase,
            $(pub $field: $ty,)*
        }
        impl Args for $name {
            const NAME: &'static str = $cname;
            const STRUCT_SIZE: usize = {
                #[allow(unused_mut)]
                let mut end = 16;
                $(
                    let e = std::mem::offset_of!($name, $field) + std::mem::size_of::<$ty>();
                    if e > end { end = e; }
                )*
                end
            };
            fn struct_size(&self) -> usize { self.struct_size }
        }
    )*};
}

type Str = *const c_char;

args! {
    ErrorDestroyArgs = "PJRT_Error_Destroy" { error: *mut PjrtError }
    ErrorMessageArgs = "PJRT_Error_Message" { error: *const PjrtError, message: Str, message_size: usize }
    ErrorGetCodeArgs = "PJRT_Error_GetCode" { error: *const PjrtError, code: i32 }
    ErrorForEachPayloadArgs = "PJRT_Error_ForEachPayload" { error: *const PjrtError, visitor: *mut c_void, user_arg: *mut c_void }

    PluginInitializeArgs = "PJRT_Plugin_Initialize" {}
    PluginAttributesArgs = "PJRT_Plugin_Attributes" { attributes: *const NamedValue, num_attributes: usize }

    EventDestroyArgs = "PJRT_Event_Destroy" { event: *mut Event }
    EventIsReadyArgs = "PJRT_Event_IsReady" { event: *mut Event, is_ready: bool }
    EventErrorArgs = "PJRT_Event_Error" { event: *mut Event }
    EventAwaitArgs = "PJRT_Event_Await" { event: *mut Event }
    EventOnReadyArgs = "PJRT_Event_OnReady" { event: *mut Event, callback: OnReadyCallback, user_arg: *mut c_void }
    EventCreateArgs = "PJRT_Event_Create" { event: *mut Event }
    EventSetArgs = "PJRT_Event_Set" { event: *mut Event, error_code: i32, error_message: Str, error_message_size: usize }

    // The key-value callbacks (and `kv_try_get_*` after `client`) are for multi-process
    // clients, which hlojit is not; they are not read.
    ClientCreateArgs = "PJRT_Client_Create" {
        create_options: *const NamedValue, num_options: usize,
        kv_get_callback: *mut c_void, kv_get_user_arg: *mut c_void,
        kv_put_callback: *mut c_void, kv_put_user_arg: *mut c_void,
        client: *mut Client,
    }
    ClientDestroyArgs = "PJRT_Client_Destroy" { client: *mut Client }
    ClientPlatformNameArgs = "PJRT_Client_PlatformName" { client: *mut Client, platform_name: Str, platform_name_size: usize }
    ClientProcessIndexArgs = "PJRT_Client_ProcessIndex" { client: *mut Client, process_index: i32 }
    ClientPlatformVersionArgs = "PJRT_Client_PlatformVersion" { client: *mut Client, platform_version: Str, platform_version_size: usize }
    ClientTopologyDescriptionArgs = "PJRT_Client_TopologyDescription" { client: *mut Client, topology: *mut Topology }
    ClientDevicesArgs = "PJRT_Client_Devices" { client: *mut Client, devices: *const *mut Device, num_devices: usize }
    ClientAddressableDevicesArgs = "PJRT_Client_AddressableDevices" { client: *mut Client, addressable_devices: *const *mut Device, num_addressable_devices: usize }
    ClientLookupDeviceArgs = "PJRT_Client_LookupDevice" { client: *mut Client, id: i32, device: *mut Device }
    ClientLookupAddressableDeviceArgs = "PJRT_Client_LookupAddressableDevice" { client: *mut Client, local_hardware_id: i32, addressable_device: *mut Device }
    ClientAddressableMemoriesArgs = "PJRT_Client_AddressableMemories" { client: *mut Client, addressable_memories: *const *mut Memory, num_addressable_memories: usize }
    ClientCompileArgs = "PJRT_Client_Compile" {
        client: *mut Client, program: *const Program,
        compile_options: Str, compile_options_size: usize,
        executable: *mut LoadedExecutable,
    }
    ClientDefaultDeviceAssignmentArgs = "PJRT_Client_DefaultDeviceAssignment" {
        client: *mut Client, num_replicas: i32, num_partitions: i32,
        default_assignment_size: usize, default_assignment: *mut i32,
    }
    ClientBufferFromHostBufferArgs = "PJRT_Client_BufferFromHostBuffer" {
        client: *mut Client, data: *const c_void, element_type: i32,
        dims: *const i64, num_dims: usize,
        byte_strides: *const i64, num_byte_strides: usize,
        host_buffer_semantics: i32,
        device: *mut Device, memory: *mut Memory, device_layout: *mut MemoryLayout,
        done_with_host_buffer: *mut Event, buffer: *mut Buffer,
    }
    ClientCreateUninitializedBufferArgs = "PJRT_Client_CreateUninitializedBuffer" {
        client: *mut Client, shape_dims: *const i64, shape_num_dims: usize,
        shape_element_type: i32, shape_layout: *mut MemoryLayout,
        device: *mut Device, memory: *mut Memory, buffer: *mut Buffer,
    }

    DeviceDescriptionIdArgs = "PJRT_DeviceDescription_Id" { device_description: *mut DeviceDescription, id: i32 }
    DeviceDescriptionProcessIndexArgs = "PJRT_DeviceDescription_ProcessIndex" { device_description: *mut DeviceDescription, process_index: i32 }
    DeviceDescriptionAttributesArgs = "PJRT_DeviceDescription_Attributes" { device_description: *mut DeviceDescription, num_attributes: usize, attributes: *const NamedValue }
    DeviceDescriptionKindArgs = "PJRT_DeviceDescription_Kind" { device_description: *mut DeviceDescription, device_kind: Str, device_kind_size: usize }
    DeviceDescriptionDebugStringArgs = "PJRT_DeviceDescription_DebugString" { device_description: *mut DeviceDescription, debug_string: Str, debug_string_size: usize }
    DeviceDescriptionToStringArgs = "PJRT_DeviceDescription_ToString" { device_description: *mut DeviceDescription, to_string: Str, to_string_size: usize }

    DeviceGetDescriptionArgs = "PJRT_Device_GetDescription" { device: *mut Device, device_description: *mut DeviceDescription }
    DeviceIsAddressableArgs = "PJRT_Device_IsAddressable" { device: *mut Device, is_addressable: bool }
    DeviceLocalHardwareIdArgs = "PJRT_Device_LocalHardwareId" { device: *mut Device, local_hardware_id: i32 }
    DeviceAddressableMemoriesArgs = "PJRT_Device_AddressableMemories" { device: *mut Device, memories: *const *mut Memory, num_memories: usize }
    DeviceGetAttributesArgs = "PJRT_Device_GetAttributes" {
        device: *mut Device, attributes: *const NamedValue, num_attributes: usize,
        device_attributes: *mut c_void,
        attributes_deleter: Option<unsafe extern "C" fn(*mut c_void)>,
    }
    DeviceMemoryStatsArgs = "PJRT_Device_MemoryStats" { device: *mut Device, bytes_in_use: i64, peak_bytes_in_use: i64, peak_bytes_in_use_is_set: bool }
    DeviceDefaultMemoryArgs = "PJRT_Device_DefaultMemory" { device: *mut Device, memory: *mut Memory }

    MemoryIdArgs = "PJRT_Memory_Id" { memory: *mut Memory, id: i32 }
    MemoryKindArgs = "PJRT_Memory_Kind" { memory: *mut Memory, kind: Str, kind_size: usize }
    MemoryKindIdArgs = "PJRT_Memory_Kind_Id" { memory: *mut Memory, kind_id: i32 }
    MemoryDebugStringArgs = "PJRT_Memory_DebugString" { memory: *mut Memory, debug_string: Str, debug_string_size: usize }
    MemoryToStringArgs = "PJRT_Memory_ToString" { memory: *mut Memory, to_string: Str, to_string_size: usize }
    MemoryAddressableByDevicesArgs = "PJRT_Memory_AddressableByDevices" { memory: *mut Memory, devices: *const *mut Device, num_devices: usize }

    ExecuteContextCreateArgs = "PJRT_ExecuteContext_Create" { context: *mut c_void }
    ExecuteContextDestroyArgs = "PJRT_ExecuteContext_Destroy" { context: *mut c_void }

    ExecutableDestroyArgs = "PJRT_Executable_Destroy" { executable: *mut Executable }
    ExecutableNameArgs = "PJRT_Executable_Name" { executable: *mut Executable, executable_name: Str, executable_name_size: usize }
    ExecutableNumReplicasArgs = "PJRT_Executable_NumReplicas" { executable: *mut Executable, num_replicas: usize }
    ExecutableNumPartitionsArgs = "PJRT_Executable_NumPartitions" { executable: *mut Executable, num_partitions: usize }
    ExecutableNumOutputsArgs = "PJRT_Executable_NumOutputs" { executable: *mut Executable, num_outputs: usize }
    ExecutableSizeOfGeneratedCodeInBytesArgs = "PJRT_Executable_SizeOfGeneratedCodeInBytes" { executable: *mut Executable, size_in_bytes: i64 }
    ExecutableFingerprintArgs = "PJRT_Executable_Fingerprint" { executable: *mut Executable, executable_fingerprint: Str, executable_fingerprint_size: usize }
    ExecutableGetCostAnalysisArgs = "PJRT_Executable_GetCostAnalysis" { executable: *mut Executable, num_properties: usize, properties: *const NamedValue }
    ExecutableGetCompiledMemoryStatsArgs = "PJRT_Executable_GetCompiledMemoryStats" {
        executable: *mut Executable,
        generated_code_size_in_bytes: i64, argument_size_in_bytes: i64, output_size_in_bytes: i64,
        alias_size_in_bytes: i64, temp_size_in_bytes: i64,
        host_generated_code_size_in_bytes: i64, host_argument_size_in_bytes: i64,
        host_output_size_in_bytes: i64, host_alias_size_in_bytes: i64, host_temp_size_in_bytes: i64,
    }
    ExecutableOutputElementTypesArgs = "PJRT_Executable_OutputElementTypes" { executable: *mut Executable, output_types: *const i32, num_output_types: usize }
    ExecutableOutputDimensionsArgs = "PJRT_Executable_OutputDimensions" { executable: *mut Executable, num_outputs: usize, dims: *const i64, dim_sizes: *const usize }
    ExecutableParameterMemoryKindsArgs = "PJRT_Executable_ParameterMemoryKinds" { executable: *mut Executable, num_parameters: usize, memory_kinds: *const Str, memory_kind_sizes: *const usize }
    ExecutableOutputMemoryKindsArgs = "PJRT_Executable_OutputMemoryKinds" { executable: *mut Executable, num_outputs: usize, memory_kinds: *const Str, memory_kind_sizes: *const usize }
    ExecutableOptimizedProgramArgs = "PJRT_Executable_OptimizedProgram" { executable: *mut Executable, program: *mut Program }
    ExecutableSerializeArgs = "PJRT_Executable_Serialize" {
        executable: *mut Executable, serialized_bytes: Str, serialized_bytes_size: usize,
        serialized_executable: *mut c_void, serialized_executable_deleter: Option<unsafe extern "C" fn(*mut c_void)>,
    }
    ExecutableDeserializeAndLoadArgs = "PJRT_Executable_DeserializeAndLoad" {
        client: *mut Client, serialized_executable: Str, serialized_executable_size: usize,
        loaded_executable: *mut LoadedExecutable,
        overridden_serialized_compile_options: Str, overridden_serialized_compile_options_size: usize,
    }

    LoadedExecutableDestroyArgs = "PJRT_LoadedExecutable_Destroy" { executable: *mut LoadedExecutable }
    LoadedExecutableGetExecutableArgs = "PJRT_LoadedExecutable_GetExecutable" { loaded_executable: *mut LoadedExecutable, executable: *mut Executable }
    LoadedExecutableAddressableDevicesArgs = "PJRT_LoadedExecutable_AddressableDevices" { executable: *mut LoadedExecutable, addressable_devices: *const *mut Device, num_addressable_devices: usize }
    LoadedExecutableAddressableDeviceLogicalIdsArgs = "PJRT_LoadedExecutable_AddressableDeviceLogicalIds" { executable: *mut LoadedExecutable, addressable_device_logical_ids: *const LogicalDeviceIds, num_addressable_device_logical_ids: usize }
    LoadedExecutableGetDeviceAssignmentArgs = "PJRT_LoadedExecutable_GetDeviceAssignment" {
        executable: *mut LoadedExecutable, serialized_bytes: Str, serialized_bytes_size: usize,
        serialized_device_assignment: *mut c_void,
        serialized_device_assignment_deleter: Option<unsafe extern "C" fn(*mut c_void)>,
    }
    LoadedExecutableDeleteArgs = "PJRT_LoadedExecutable_Delete" { executable: *mut LoadedExecutable }
    LoadedExecutableIsDeletedArgs = "PJRT_LoadedExecutable_IsDeleted" { executable: *mut LoadedExecutable, is_deleted: bool }
    LoadedExecutableFingerprintArgs = "PJRT_LoadedExecutable_Fingerprint" { executable: *mut LoadedExecutable, executable_fingerprint: Str, executable_fingerprint_size: usize }
    LoadedExecutableExecuteArgs = "PJRT_LoadedExecutable_Execute" {
        executable: *mut LoadedExecutable, options: *mut ExecuteOptions,
        argument_lists: *const *const *mut Buffer, num_devices: usize, num_args: usize,
        output_lists: *const *mut *mut Buffer, device_complete_events: *mut *mut Event,
        execute_device: *mut Device,
    }

    BufferDestroyArgs = "PJRT_Buffer_Destroy" { buffer: *mut Buffer }
    BufferElementTypeArgs = "PJRT_Buffer_ElementType" { buffer: *mut Buffer, element_type: i32 }
    BufferDimensionsArgs = "PJRT_Buffer_Dimensions" { buffer: *mut Buffer, dims: *const i64, num_dims: usize }
    BufferUnpaddedDimensionsArgs = "PJRT_Buffer_UnpaddedDimensions" { buffer: *mut Buffer, unpadded_dims: *const i64, num_dims: usize }
    BufferDynamicDimensionIndicesArgs = "PJRT_Buffer_DynamicDimensionIndices" { buffer: *mut Buffer, dynamic_dim_indices: *const usize, num_dynamic_dims: usize }
    BufferGetMemoryLayoutArgs = "PJRT_Buffer_GetMemoryLayout" { buffer: *mut Buffer, layout: MemoryLayout }
    BufferToHostBufferArgs = "PJRT_Buffer_ToHostBuffer" { src: *mut Buffer, host_layout: *mut MemoryLayout, dst: *mut c_void, dst_size: usize, event: *mut Event }
    BufferOnDeviceSizeInBytesArgs = "PJRT_Buffer_OnDeviceSizeInBytes" { buffer: *mut Buffer, on_device_size_in_bytes: usize }
    BufferDeleteArgs = "PJRT_Buffer_Delete" { buffer: *mut Buffer }
    BufferIsDeletedArgs = "PJRT_Buffer_IsDeleted" { buffer: *mut Buffer, is_deleted: bool }
    BufferCopyRawToHostArgs = "PJRT_Buffer_CopyRawToHost" { buffer: *mut Buffer, dst: *mut c_void, offset: i64, transfer_size: i64, event: *mut Event }
    BufferCopyToDeviceArgs = "PJRT_Buffer_CopyToDevice" { buffer: *mut Buffer, dst_device: *mut Device, dst_buffer: *mut Buffer }
    BufferCopyToMemoryArgs = "PJRT_Buffer_CopyToMemory" { buffer: *mut Buffer, dst_memory: *mut Memory, dst_buffer: *mut Buffer }
    BufferIsOnCpuArgs = "PJRT_Buffer_IsOnCpu" { buffer: *mut Buffer, is_on_cpu: bool }
    BufferDeviceArgs = "PJRT_Buffer_Device" { buffer: *mut Buffer, device: *mut Device }
    BufferMemoryArgs = "PJRT_Buffer_Memory" { buffer: *mut Buffer, memory: *mut Memory }
    BufferReadyEventArgs = "PJRT_Buffer_ReadyEvent" { buffer: *mut Buffer, event: *mut Event }
    BufferUnsafePointerArgs = "PJRT_Buffer_UnsafePointer" { buffer: *mut Buffer, buffer_pointer: usize }
    BufferIncreaseExternalReferenceCountArgs = "PJRT_Buffer_IncreaseExternalReferenceCount" { buffer: *mut Buffer }
    BufferDecreaseExternalReferenceCountArgs = "PJRT_Buffer_DecreaseExternalReferenceCount" { buffer: *mut Buffer }
    BufferOpaqueDeviceMemoryDataPointerArgs = "PJRT_Buffer_OpaqueDeviceMemoryDataPointer" { buffer: *mut Buffer, device_memory_ptr: *mut c_void }

    TopologyDescriptionDestroyArgs = "PJRT_TopologyDescription_Destroy" { topology: *mut Topology }
    TopologyDescriptionPlatformNameArgs = "PJRT_TopologyDescription_PlatformName" { topology: *const Topology, platform_name: Str, platform_name_size: usize }
    TopologyDescriptionPlatformVersionArgs = "PJRT_TopologyDescription_PlatformVersion" { topology: *mut Topology, platform_version: Str, platform_version_size: usize }
    TopologyDescriptionGetDeviceDescriptionsArgs = "PJRT_TopologyDescription_GetDeviceDescriptions" { topology: *const Topology, descriptions: *const *mut DeviceDescription, num_descriptions: usize }
    TopologyDescriptionAttributesArgs = "PJRT_TopologyDescription_Attributes" { topology: *mut Topology, attributes: *const NamedValue, num_attributes: usize }
    TopologyDescriptionFingerprintArgs = "PJRT_TopologyDescription_Fingerprint" { topology: *const Topology, fingerprint: u64 }
}
