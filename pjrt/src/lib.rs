//! hlojit as a PJRT plugin: `GetPjrtApi` returns the PJRT C API function table (API 0.112,
//! as jaxlib 0.10.2 expects it), so `JAX_PLATFORMS=hlojit` runs JAX programs on hlojit.
//!
//! Layout: `abi/` is the C ABI (argument structs, the function table); `plugin`, `client`,
//! `buffer`, `event`, `executable` (compile), `execute` implement the entry points over the
//! `hlojit` library. Entry points hlojit does not implement return an UNIMPLEMENTED error
//! naming themselves.

pub mod abi;
pub mod buffer;
pub mod debug_options;
pub mod client;
pub mod dtype;
pub mod error;
pub mod event;
pub mod executable;
pub mod ffi;
pub mod hlo_proto;
pub mod execute;
pub mod optimized;
pub mod options;
pub mod plugin;
pub mod serialize;
pub mod tokens;
pub mod util;

use abi::table::{entry, Entry};

/// The implemented entry points.
pub(crate) fn implemented() -> Vec<Entry> {
    use buffer::*;
    use client::*;
    use event::*;
    use executable::*;
    vec![
        entry(error::error_destroy),
        entry(error::error_message),
        entry(error::error_get_code),
        entry(error::error_for_each_payload),
        entry(plugin::plugin_initialize),
        entry(plugin::plugin_attributes),
        entry(event_destroy),
        entry(event_is_ready),
        entry(event_error),
        entry(event_await),
        entry(event_on_ready),
        entry(event_create),
        entry(event_set),
        entry(client_create),
        entry(client_destroy),
        entry(client_platform_name),
        entry(client_process_index),
        entry(client_platform_version),
        entry(client_topology_description),
        entry(client_devices),
        entry(client_addressable_devices),
        entry(client_lookup_device),
        entry(client_lookup_addressable_device),
        entry(client_addressable_memories),
        entry(client_compile),
        entry(client_default_device_assignment),
        entry(client_buffer_from_host_buffer),
        entry(client_create_uninitialized_buffer),
        entry(device_description_id),
        entry(device_description_process_index),
        entry(device_description_attributes),
        entry(device_description_kind),
        entry(device_description_debug_string),
        entry(device_description_to_string),
        entry(device_get_description),
        entry(device_is_addressable),
        entry(device_local_hardware_id),
        entry(device_addressable_memories),
        entry(device_default_memory),
        entry(device_get_attributes),
        entry(device_memory_stats),
        entry(memory_id),
        entry(memory_kind),
        entry(memory_kind_id),
        entry(memory_debug_string),
        entry(memory_to_string),
        entry(memory_addressable_by_devices),
        entry(execute_context_create),
        entry(execute_context_destroy),
        entry(executable_destroy),
        entry(executable_name),
        entry(executable_num_replicas),
        entry(executable_num_partitions),
        entry(executable_num_outputs),
        entry(executable_code_size),
        entry(executable_fingerprint),
        entry(optimized::executable_optimized_program),
        entry(serialize::executable_serialize),
        entry(serialize::executable_deserialize_and_load),
        entry(executable_cost_analysis),
        entry(executable_memory_stats),
        entry(executable_output_element_types),
        entry(executable_output_dimensions),
        entry(executable_output_memory_kinds),
        entry(executable_parameter_memory_kinds),
        entry(loaded_destroy),
        entry(loaded_get_executable),
        entry(loaded_addressable_devices),
        entry(loaded_logical_ids),
        entry(loaded_delete),
        entry(loaded_device_assignment),
        entry(loaded_is_deleted),
        entry(loaded_fingerprint),
        entry(execute::loaded_execute),
        entry(buffer_destroy),
        entry(buffer_element_type),
        entry(buffer_dimensions),
        entry(buffer_unpadded_dimensions),
        entry(buffer_dynamic_dimension_indices),
        entry(buffer_get_memory_layout),
        entry(buffer_to_host_buffer),
        entry(buffer_copy_raw_to_host),
        entry(buffer_on_device_size),
        entry(buffer_delete),
        entry(buffer_is_deleted),
        entry(buffer_copy_to_device),
        entry(buffer_copy_to_memory),
        entry(buffer_is_on_cpu),
        entry(buffer_device),
        entry(buffer_memory),
        entry(buffer_ready_event),
        entry(buffer_unsafe_pointer),
        entry(buffer_opaque_pointer),
        entry(buffer_increase_ref),
        entry(buffer_decrease_ref),
        entry(topology_destroy),
        entry(topology_platform_name),
        entry(topology_platform_version),
        entry(topology_device_descriptions),
        entry(topology_attributes),
        entry(topology_fingerprint),
    ]
}

/// The PJRT plugin's entry point: the function table, valid for the life of the process.
#[no_mangle]
pub extern "C" fn GetPjrtApi() -> *const abi::table::Api {
    abi::table::api()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_implementation_fills_a_slot_once() {
        let mut seen = std::collections::HashSet::new();
        for e in implemented() {
            assert!(abi::table::NAMES.contains(&e.name), "{} is not a PJRT_Api slot", e.name);
            assert!(seen.insert(e.name), "{} implemented twice", e.name);
        }
        assert_eq!(abi::table::NAMES.len(), abi::table::NUM_FUNCTIONS);
        // 0.112's table: 5 header words and 138 functions.
        assert_eq!(std::mem::size_of::<abi::table::Api>(), 1144);
    }
}
