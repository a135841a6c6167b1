//! `PJRT_Plugin_Initialize` and `PJRT_Plugin_Attributes`: what the plugin tells the framework
//! before any client exists, among them the StableHLO versions it reads (the framework
//! serializes programs for `stablehlo_current_version`).

use crate::abi::args::{PluginAttributesArgs, PluginInitializeArgs};
use crate::error::{guard, PjrtError};
use crate::util::{OwnedNamedValues, Value};
use std::sync::OnceLock;

/// StableHLO versions the front end reads: what jaxlib 0.10.2 writes (current) down to the
/// oldest version the portable-artifact format keeps compatible.
pub const STABLEHLO_CURRENT: [i64; 3] = [1, 17, 0];
pub const STABLEHLO_MINIMUM: [i64; 3] = [0, 9, 0];

fn attributes() -> &'static OwnedNamedValues {
    static A: OnceLock<OwnedNamedValues> = OnceLock::new();
    A.get_or_init(|| {
        OwnedNamedValues::new(vec![
            ("xla_version", Value::Int64(2)),
            ("stablehlo_current_version", Value::Int64List(STABLEHLO_CURRENT.to_vec())),
            ("stablehlo_minimum_version", Value::Int64List(STABLEHLO_MINIMUM.to_vec())),
            ("supports_cross_host_transfers", Value::Bool(false)),
        ])
    })
}

pub unsafe extern "C" fn plugin_initialize(args: *mut PluginInitializeArgs) -> *mut PjrtError {
    unsafe { guard(args, |_| Ok(())) }
}

pub unsafe extern "C" fn plugin_attributes(args: *mut PluginAttributesArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let v = &attributes().values;
            a.attributes = v.as_ptr();
            a.num_attributes = v.len();
            Ok(())
        })
    }
}
