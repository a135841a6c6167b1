//! `PJRT_Api`: the version header and the function table, slot for slot in the header's
//! order. Every slot holds a function: hlojit's implementation, or a stub that returns an
//! UNIMPLEMENTED error naming the entry point (so a caller never jumps through null).

use super::{ApiVersion, Args, ExtensionBase, API_MAJOR, API_MINOR};
use crate::error::PjrtError;
use std::ffi::c_void;
use std::sync::OnceLock;

/// Every entry point has this shape in C (`PJRT_Error* f(Args*)`; the two `void` ones are
/// called the same way and their return register ignored).
pub type RawFn = unsafe extern "C" fn(*mut c_void) -> *mut PjrtError;

/// An implementation and the slot it fills (named by its argument type).
pub struct Entry {
    pub name: &'static str,
    pub function: RawFn,
}

/// The slot of `A`'s entry point, filled with `f`.
pub fn entry<A: Args>(f: unsafe extern "C" fn(*mut A) -> *mut PjrtError) -> Entry {
    // SAFETY: function pointers taking one pointer and returning one have the same ABI
    // whatever the pointee types.
    Entry { name: A::NAME, function: unsafe { std::mem::transmute::<unsafe extern "C" fn(*mut A) -> *mut PjrtError, RawFn>(f) } }
}

macro_rules! slots {
    ($($name:ident),* $(,)?) => {
        /// The entry points in `PJRT_Api` order.
        pub const NAMES: &[&str] = &[$(stringify!($name)),*];
        mod stubs {
            use crate::error::PjrtError;
            use std::ffi::c_void;
            $(
                #[allow(non_snake_case)]
                pub unsafe extern "C" fn $name(_: *mut c_void) -> *mut PjrtError {
                    crate::error::unimplemented(stringify!($name))
                }
            )*
        }
        const STUBS: &[RawFn] = &[$(stubs::$name),*];
    };
}

slots!(
    PJRT_Error_Destroy, PJRT_Error_Message, PJRT_Error_GetCode,
    PJRT_Plugin_Initialize, PJRT_Plugin_Attributes,
    PJRT_Event_Destroy, PJRT_Event_IsReady, PJRT_Event_Error, PJRT_Event_Await, PJRT_Event_OnReady,
    PJRT_Client_Create, PJRT_Client_Destroy, PJRT_Client_PlatformName, PJRT_Client_ProcessIndex,
    PJRT_Client_PlatformVersion, PJRT_Client_Devices, PJRT_Client_AddressableDevices,
    PJRT_Client_LookupDevice, PJRT_Client_LookupAddressableDevice, PJRT_Client_AddressableMemories,
    PJRT_Client_Compile, PJRT_Client_DefaultDeviceAssignment, PJRT_Client_BufferFromHostBuffer,
    PJRT_DeviceDescription_Id, PJRT_DeviceDescription_ProcessIndex, PJRT_DeviceDescription_Attributes,
    PJRT_DeviceDescription_Kind, PJRT_DeviceDescription_DebugString, PJRT_DeviceDescription_ToString,
    PJRT_Device_GetDescription, PJRT_Device_IsAddressable, PJRT_Device_LocalHardwareId,
    PJRT_Device_AddressableMemories, PJRT_Device_DefaultMemory, PJRT_Device_MemoryStats,
    PJRT_Memory_Id, PJRT_Memory_Kind, PJRT_Memory_DebugString, PJRT_Memory_ToString,
    PJRT_Memory_AddressableByDevices,
    PJRT_Executable_Destroy, PJRT_Executable_Name, PJRT_Executable_NumReplicas,
    PJRT_Executable_NumPartitions, PJRT_Executable_NumOutputs,
    PJRT_Executable_SizeOfGeneratedCodeInBytes, PJRT_Executable_GetCostAnalysis,
    PJRT_Executable_OutputMemoryKinds, PJRT_Executable_OptimizedProgram, PJRT_Executable_Serialize,
    PJRT_LoadedExecutable_Destroy, PJRT_LoadedExecutable_GetExecutable,
    PJRT_LoadedExecutable_AddressableDevices, PJRT_LoadedExecutable_Delete,
    PJRT_LoadedExecutable_IsDeleted, PJRT_LoadedExecutable_Execute, PJRT_Executable_DeserializeAndLoad,
    PJRT_LoadedExecutable_Fingerprint,
    PJRT_Buffer_Destroy, PJRT_Buffer_ElementType, PJRT_Buffer_Dimensions, PJRT_Buffer_UnpaddedDimensions,
    PJRT_Buffer_DynamicDimensionIndices, PJRT_Buffer_GetMemoryLayout, PJRT_Buffer_OnDeviceSizeInBytes,
    PJRT_Buffer_Device, PJRT_Buffer_Memory, PJRT_Buffer_Delete, PJRT_Buffer_IsDeleted,
    PJRT_Buffer_CopyToDevice, PJRT_Buffer_ToHostBuffer, PJRT_Buffer_IsOnCpu, PJRT_Buffer_ReadyEvent,
    PJRT_Buffer_UnsafePointer, PJRT_Buffer_IncreaseExternalReferenceCount,
    PJRT_Buffer_DecreaseExternalReferenceCount, PJRT_Buffer_OpaqueDeviceMemoryDataPointer,
    PJRT_CopyToDeviceStream_Destroy, PJRT_CopyToDeviceStream_AddChunk, PJRT_CopyToDeviceStream_TotalBytes,
    PJRT_CopyToDeviceStream_GranuleSize, PJRT_CopyToDeviceStream_CurrentBytes,
    PJRT_TopologyDescription_Create, PJRT_TopologyDescription_Destroy,
    PJRT_TopologyDescription_PlatformName, PJRT_TopologyDescription_PlatformVersion,
    PJRT_TopologyDescription_GetDeviceDescriptions, PJRT_TopologyDescription_Serialize,
    PJRT_TopologyDescription_Attributes, PJRT_Compile,
    PJRT_Executable_OutputElementTypes, PJRT_Executable_OutputDimensions, PJRT_Buffer_CopyToMemory,
    PJRT_Client_CreateViewOfDeviceBuffer, PJRT_Executable_Fingerprint, PJRT_Client_TopologyDescription,
    PJRT_Executable_GetCompiledMemoryStats, PJRT_Memory_Kind_Id, PJRT_ExecuteContext_Create,
    PJRT_ExecuteContext_Destroy, PJRT_Buffer_CopyRawToHost,
    PJRT_AsyncHostToDeviceTransferManager_Destroy, PJRT_AsyncHostToDeviceTransferManager_TransferData,
    PJRT_Client_CreateBuffersForAsyncHostToDevice, PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer,
    PJRT_AsyncHostToDeviceTransferManager_Device, PJRT_AsyncHostToDeviceTransferManager_BufferCount,
    PJRT_AsyncHostToDeviceTransferManager_BufferSize, PJRT_AsyncHostToDeviceTransferManager_SetBufferError,
    PJRT_AsyncHostToDeviceTransferManager_AddMetadata, PJRT_Client_DmaMap, PJRT_Client_DmaUnmap,
    PJRT_Client_CreateUninitializedBuffer, PJRT_Client_UpdateGlobalProcessInfo,
    PJRT_TopologyDescription_Deserialize, PJRT_Client_CreateAliasBuffer, PJRT_Client_FulfillAliasBuffer,
    PJRT_LoadedExecutable_GetDeviceAssignment, PJRT_Client_CreateErrorBuffer,
    PJRT_AsyncHostToDeviceTransferManager_TransferLiteral, PJRT_Buffer_CopyRawToHostFuture,
    PJRT_Device_PoisonExecution, PJRT_Device_CreateAsyncTrackingEvent, PJRT_AsyncTrackingEvent_Destroy,
    PJRT_Executable_GetCompileOptions, PJRT_Buffer_DonateWithControlDependency, PJRT_Event_Create,
    PJRT_Event_Set, PJRT_Device_GetAttributes, PJRT_Client_Load,
    PJRT_LoadedExecutable_AddressableDeviceLogicalIds, PJRT_Buffer_Bitcast, PJRT_Error_ForEachPayload,
    PJRT_TopologyDescription_Fingerprint, PJRT_Executable_ParameterMemoryKinds,
    // Added in 0.105 .. 0.112.
    PJRT_Device_ClearMemoryStats, PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace,
    PJRT_TopologyDescription_GetMemorySpaceKindIds,
);

/// Function slots in API 0.112.
pub const NUM_FUNCTIONS: usize = 138;

/// `PJRT_Api`.
#[repr(C)]
pub struct Api {
    pub struct_size: usize,
    pub extension_start: *mut ExtensionBase,
    pub pjrt_api_version: ApiVersion,
    pub functions: [RawFn; NUM_FUNCTIONS],
}

impl Api {
    /// The function in slot `name` (for tests and for callers in Rust).
    pub fn function(&self, name: &str) -> Option<RawFn> {
        NAMES.iter().position(|n| *n == name).map(|i| self.functions[i])
    }
}

struct Shared(Api);
// SAFETY: the table is built once and never written again; its pointers are functions and
// the immutable extension list.
unsafe impl Sync for Shared {}
unsafe impl Send for Shared {}

/// The process's table, built on first use.
pub fn api() -> &'static Api {
    static API: OnceLock<Shared> = OnceLock::new();
    &API.get_or_init(|| {
        let mut functions = [STUBS[0]; NUM_FUNCTIONS];
        functions.copy_from_slice(STUBS);
        for e in crate::implemented() {
            if let Some(i) = NAMES.iter().position(|n| *n == e.name) {
                functions[i] = e.function;
            }
        }
        Shared(Api {
            struct_size: std::mem::size_of::<Api>(),
            // The FFI extension: execute-context user data (JAX's host callbacks) and handler
            // registration.
            extension_start: crate::ffi::extension(),
            pjrt_api_version: ApiVersion {
                struct_size: std::mem::size_of::<ApiVersion>(),
                extension_start: std::ptr::null_mut(),
                major_version: API_MAJOR,
                minor_version: API_MINOR,
            },
            functions,
        })
    })
    .0
}
