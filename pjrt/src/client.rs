//! `PJRT_Client` and what it owns: devices (CPU threads of this process; collectives meet in
//! hlojit's in-process rendezvous), their descriptions, one memory per device, the topology.

use crate::abi::args::*;
use crate::error::{guard, non_null, PjrtError, Result};
use crate::util::{named_values, OwnedNamedValues, Value};

/// What JAX sees as the platform. "cpu": hlojit runs JAX's CPU lowerings (its LAPACK
/// custom calls, CPU-specific rules) unchanged.
pub const PLATFORM_NAME: &str = "cpu";
pub const PLATFORM_VERSION: &str = concat!("hlojit ", env!("CARGO_PKG_VERSION"));
pub const DEVICE_KIND: &str = "cpu";
pub const MEMORY_KIND: &str = "device";

/// Devices when neither the `num_devices` create option nor `HLOJIT_DEVICE_COUNT` says.
const DEFAULT_DEVICES: usize = 1;

#[repr(C)]
pub struct DeviceDescription {
    pub head: crate::abi::HandleHead,
    pub id: i32,
    pub debug_string: String,
    pub to_string: String,
    pub attributes: OwnedNamedValues,
}

#[repr(C)]
pub struct Device {
    pub head: crate::abi::HandleHead,
    pub description: DeviceDescription,
    pub memory: *mut Memory,
}

impl Device {
    pub fn id(&self) -> i32 {
        self.description.id
    }
}

#[repr(C)]
pub struct Memory {
    pub head: crate::abi::HandleHead,
    pub id: i32,
    pub device: *mut Device,
    pub debug_string: String,
    pub to_string: String,
}

#[repr(C)]
pub struct Topology {
    pub head: crate::abi::HandleHead,
    pub descriptions: Vec<*mut DeviceDescription>,
    pub attributes: OwnedNamedValues,
}

#[repr(C)]
pub struct Client {
    pub head: crate::abi::HandleHead,
    pub compiler: hlojit::Client,
    /// Boxed: handles are addresses and must stay put.
    pub devices: Vec<Box<Device>>,
    pub memories: Vec<Box<Memory>>,
    pub device_ptrs: Vec<*mut Device>,
    pub memory_ptrs: Vec<*mut Memory>,
    pub topology: Box<Topology>,
}

impl Client {
    pub fn new(num_devices: usize) -> Result<Box<Client>> {
        if num_devices == 0 || num_devices > 1024 {
            return Err(PjrtError::invalid(format!("num_devices must be between 1 and 1024, not {num_devices}")));
        }
        let mut devices: Vec<Box<Device>> = (0..num_devices as i32)
            .map(|id| {
                Box::new(Device {
                    head: Default::default(),
                    description: DeviceDescription {
                        head: Default::default(),
                        id,
                        debug_string: format!("hlojit:{id}"),
                        to_string: format!("HlojitDevice(id={id})"),
                        attributes: OwnedNamedValues::new(vec![]),
                    },
                    memory: std::ptr::null_mut(),
                })
            })
            .collect();
        let mut memories: Vec<Box<Memory>> = devices
            .iter_mut()
            .map(|d| {
                let id = d.id();
                Box::new(Memory {
                    head: Default::default(),
                    id,
                    device: &mut **d,
                    debug_string: format!("hlojit:{id}:{MEMORY_KIND}"),
                    to_string: format!("MEMORY_SPACE(id={id}, kind={MEMORY_KIND})"),
                })
            })
            .collect();
        for (d, m) in devices.iter_mut().zip(memories.iter_mut()) {
            d.memory = &mut **m;
        }
        let device_ptrs = devices.iter_mut().map(|d| &mut **d as *mut Device).collect();
        let memory_ptrs = memories.iter_mut().map(|m| &mut **m as *mut Memory).collect();
        let topology = Box::new(Topology {
            head: Default::default(),
            descriptions: devices.iter_mut().map(|d| &mut d.description as *mut DeviceDescription).collect(),
            attributes: OwnedNamedValues::new(vec![]),
        });
        Ok(Box::new(Client { head: Default::default(), compiler: hlojit::Client::new(), devices, memories, device_ptrs, memory_ptrs, topology }))
    }

    /// The device with id `id`.
    pub fn device(&self, id: i32) -> Result<*mut Device> {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.device_ptrs.get(i).copied())
            .ok_or_else(|| PjrtError::new(crate::abi::ErrorCode::NotFound, format!("no hlojit device with id {id} (there are {})", self.devices.len())))
    }
}

fn device_count(options: &[(String, Value)]) -> Result<usize> {
    for (name, value) in options {
        if name == "num_devices" {
            return match value {
                Value::Int64(n) => usize::try_from(*n).map_err(|_| PjrtError::invalid(format!("num_devices is {n}"))),
                Value::String(s) => s.parse().map_err(|_| PjrtError::invalid(format!("num_devices is '{s}', not a number"))),
                other => Err(PjrtError::invalid(format!("num_devices must be an integer, not {other:?}"))),
            };
        }
    }
    match std::env::var("HLOJIT_DEVICE_COUNT") {
        Ok(s) => s.parse().map_err(|_| PjrtError::invalid(format!("HLOJIT_DEVICE_COUNT is '{s}', not a number"))),
        Err(_) => Ok(DEFAULT_DEVICES),
    }
}

fn set_str(s: &str, p: &mut *const std::ffi::c_char, n: &mut usize) {
    *p = s.as_ptr().cast();
    *n = s.len();
}

pub unsafe extern "C" fn client_create(args: *mut ClientCreateArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let options = named_values(a.create_options, a.num_options);
            let client = Client::new(device_count(&options)?)?;
            a.client = Box::into_raw(client);
            Ok(())
        })
    }
}

pub unsafe extern "C" fn client_destroy(args: *mut ClientDestroyArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            if !a.client.is_null() {
                drop(Box::from_raw(a.client));
            }
            Ok(())
        })
    }
}

pub unsafe extern "C" fn client_platform_name(args: *mut ClientPlatformNameArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { non_null(a.client, "client")?; set_str(PLATFORM_NAME, &mut a.platform_name, &mut a.platform_name_size); Ok(()) }) }
}

pub unsafe extern "C" fn client_process_index(args: *mut ClientProcessIndexArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { non_null(a.client, "client")?; a.process_index = 0; Ok(()) }) }
}

pub unsafe extern "C" fn client_platform_version(args: *mut ClientPlatformVersionArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { non_null(a.client, "client")?; set_str(PLATFORM_VERSION, &mut a.platform_version, &mut a.platform_version_size); Ok(()) }) }
}

pub unsafe extern "C" fn client_topology_description(args: *mut ClientTopologyDescriptionArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { a.topology = &mut *non_null(a.client, "client")?.topology; Ok(()) }) }
}

pub unsafe extern "C" fn client_devices(args: *mut ClientDevicesArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let c = non_null(a.client, "client")?;
            a.devices = c.device_ptrs.as_ptr();
            a.num_devices = c.device_ptrs.len();
            Ok(())
        })
    }
}

pub unsafe extern "C" fn client_addressable_devices(args: *mut ClientAddressableDevicesArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let c = non_null(a.client, "client")?;
            a.addressable_devices = c.device_ptrs.as_ptr();
            a.num_addressable_devices = c.device_ptrs.len();
            Ok(())
        })
    }
}

pub unsafe extern "C" fn client_lookup_device(args: *mut ClientLookupDeviceArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { a.device = non_null(a.client, "client")?.device(a.id)?; Ok(()) }) }
}

pub unsafe extern "C" fn client_lookup_addressable_device(args: *mut ClientLookupAddressableDeviceArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { a.addressable_device = non_null(a.client, "client")?.device(a.local_hardware_id)?; Ok(()) }) }
}

pub unsafe extern "C" fn client_addressable_memories(args: *mut ClientAddressableMemoriesArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let c = non_null(a.client, "client")?;
            a.addressable_memories = c.memory_ptrs.as_ptr();
            a.num_addressable_memories = c.memory_ptrs.len();
            Ok(())
        })
    }
}

pub unsafe extern "C" fn client_default_device_assignment(args: *mut ClientDefaultDeviceAssignmentArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let c = non_null(a.client, "client")?;
            let n = (a.num_replicas.max(0) as usize) * (a.num_partitions.max(0) as usize);
            if n > c.devices.len() {
                return Err(PjrtError::invalid(format!(
                    "{} replicas x {} partitions need {n} devices; the hlojit client has {} (set HLOJIT_DEVICE_COUNT)",
                    a.num_replicas,
                    a.num_partitions,
                    c.devices.len()
                )));
            }
            if a.default_assignment_size < n || (n > 0 && a.default_assignment.is_null()) {
                return Err(PjrtError::invalid(format!("default_assignment has room for {}, {n} needed", a.default_assignment_size)));
            }
            for i in 0..n {
                *a.default_assignment.add(i) = i as i32;
            }
            Ok(())
        })
    }
}

pub unsafe extern "C" fn device_description_id(args: *mut DeviceDescriptionIdArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { a.id = non_null(a.device_description, "device_description")?.id; Ok(()) }) }
}

pub unsafe extern "C" fn device_description_process_index(args: *mut DeviceDescriptionProcessIndexArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { non_null(a.device_description, "device_description")?; a.process_index = 0; Ok(()) }) }
}

pub unsafe extern "C" fn device_description_attributes(args: *mut DeviceDescriptionAttributesArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let d = non_null(a.device_description, "device_description")?;
            a.attributes = d.attributes.values.as_ptr();
            a.num_attributes = d.attributes.values.len();
            Ok(())
        })
    }
}

pub unsafe extern "C" fn device_description_kind(args: *mut DeviceDescriptionKindArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { non_null(a.device_description, "device_description")?; set_str(DEVICE_KIND, &mut a.device_kind, &mut a.device_kind_size); Ok(()) }) }
}

pub unsafe extern "C" fn device_description_debug_string(args: *mut DeviceDescriptionDebugStringArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let d = non_null(a.device_description, "device_description")?;
            set_str(&d.debug_string, &mut a.debug_string, &mut a.debug_string_size);
            Ok(())
        })
    }
}

pub unsafe extern "C" fn device_description_to_string(args: *mut DeviceDescriptionToStringArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let d = non_null(a.device_description, "device_description")?;
            set_str(&d.to_string, &mut a.to_string, &mut a.to_string_size);
            Ok(())
        })
    }
}

pub unsafe extern "C" fn device_get_description(args: *mut DeviceGetDescriptionArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { a.device_description = &mut non_null(a.device, "device")?.description; Ok(()) }) }
}

pub unsafe extern "C" fn device_is_addressable(args: *mut DeviceIsAddressableArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { non_null(a.device, "device")?; a.is_addressable = true; Ok(()) }) }
}

pub unsafe extern "C" fn device_local_hardware_id(args: *mut DeviceLocalHardwareIdArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { a.local_hardware_id = non_null(a.device, "device")?.id(); Ok(()) }) }
}

pub unsafe extern "C" fn device_addressable_memories(args: *mut DeviceAddressableMemoriesArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let d = non_null(a.device, "device")?;
            a.memories = &d.memory;
            a.num_memories = 1;
            Ok(())
        })
    }
}

/// The device's attributes live as long as the device: nothing for the caller to free.
unsafe extern "C" fn no_attributes_to_free(_: *mut std::ffi::c_void) {}

pub unsafe extern "C" fn device_get_attributes(args: *mut DeviceGetAttributesArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let d = non_null(a.device, "device")?;
            a.attributes = d.description.attributes.values.as_ptr();
            a.num_attributes = d.description.attributes.values.len();
            a.device_attributes = std::ptr::null_mut();
            a.attributes_deleter = Some(no_attributes_to_free);
            Ok(())
        })
    }
}

/// hlojit does not track device memory (it is the process's heap): nothing in use is reported
/// and the optional statistics are left unset.
pub unsafe extern "C" fn device_memory_stats(args: *mut DeviceMemoryStatsArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            non_null(a.device, "device")?;
            let size = a.struct_size;
            // Zero every output field the caller's struct has (all "not set").
            let base = (a as *mut DeviceMemoryStatsArgs).cast::<u8>();
            let start = std::mem::offset_of!(DeviceMemoryStatsArgs, bytes_in_use);
            std::ptr::write_bytes(base.add(start), 0, size.saturating_sub(start));
            Ok(())
        })
    }
}

pub unsafe extern "C" fn device_default_memory(args: *mut DeviceDefaultMemoryArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { a.memory = non_null(a.device, "device")?.memory; Ok(()) }) }
}

pub unsafe extern "C" fn memory_id(args: *mut MemoryIdArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { a.id = non_null(a.memory, "memory")?.id; Ok(()) }) }
}

pub unsafe extern "C" fn memory_kind(args: *mut MemoryKindArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { non_null(a.memory, "memory")?; set_str(MEMORY_KIND, &mut a.kind, &mut a.kind_size); Ok(()) }) }
}

pub unsafe extern "C" fn memory_kind_id(args: *mut MemoryKindIdArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { non_null(a.memory, "memory")?; a.kind_id = 0; Ok(()) }) }
}

pub unsafe extern "C" fn memory_debug_string(args: *mut MemoryDebugStringArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let m = non_null(a.memory, "memory")?;
            set_str(&m.debug_string, &mut a.debug_string, &mut a.debug_string_size);
            Ok(())
        })
    }
}

pub unsafe extern "C" fn memory_to_string(args: *mut MemoryToStringArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let m = non_null(a.memory, "memory")?;
            set_str(&m.to_string, &mut a.to_string, &mut a.to_string_size);
            Ok(())
        })
    }
}

pub unsafe extern "C" fn memory_addressable_by_devices(args: *mut MemoryAddressableByDevicesArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let m = non_null(a.memory, "memory")?;
            a.devices = &m.device;
            a.num_devices = 1;
            Ok(())
        })
    }
}

pub unsafe extern "C" fn topology_destroy(args: *mut TopologyDescriptionDestroyArgs) -> *mut PjrtError {
    // The client owns its topology (PJRT_Client_TopologyDescription's is not the caller's to free).
    unsafe { guard(args, |_| Ok(())) }
}

pub unsafe extern "C" fn topology_platform_name(args: *mut TopologyDescriptionPlatformNameArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { set_str(PLATFORM_NAME, &mut a.platform_name, &mut a.platform_name_size); Ok(()) }) }
}

pub unsafe extern "C" fn topology_platform_version(args: *mut TopologyDescriptionPlatformVersionArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| { set_str(PLATFORM_VERSION, &mut a.platform_version, &mut a.platform_version_size); Ok(()) }) }
}

pub unsafe extern "C" fn topology_device_descriptions(args: *mut TopologyDescriptionGetDeviceDescriptionsArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let t = a.topology.as_ref().ok_or_else(|| PjrtError::invalid("topology is null"))?;
            a.descriptions = t.descriptions.as_ptr();
            a.num_descriptions = t.descriptions.len();
            Ok(())
        })
    }
}

pub unsafe extern "C" fn topology_attributes(args: *mut TopologyDescriptionAttributesArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let t = non_null(a.topology, "topology")?;
            a.attributes = t.attributes.values.as_ptr();
            a.num_attributes = t.attributes.values.len();
            Ok(())
        })
    }
}

pub unsafe extern "C" fn topology_fingerprint(args: *mut TopologyDescriptionFingerprintArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let t = a.topology.as_ref().ok_or_else(|| PjrtError::invalid("topology is null"))?;
            a.fingerprint = 0x686c_6f6a_6974_0000 ^ t.descriptions.len() as u64;
            Ok(())
        })
    }
}

/// An execute context: user data for the FFI handlers of the runs it is passed to (see `ffi`).
pub unsafe extern "C" fn execute_context_create(args: *mut ExecuteContextCreateArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            a.context = Box::into_raw(Box::new(crate::ffi::ExecuteContext::new())).cast();
            Ok(())
        })
    }
}

pub unsafe extern "C" fn execute_context_destroy(args: *mut ExecuteContextDestroyArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            if !a.context.is_null() {
                drop(Box::from_raw(a.context.cast::<crate::ffi::ExecuteContext>()));
            }
            Ok(())
        })
    }
}
