//! The parts of `xla.CompileOptionsProto` (xla/pjrt/proto/compile_options.proto) hlojit
//! reads: replicas, partitions, SPMD partitioning and the device assignment. prost skips
//! every other field.

use crate::error::{PjrtError, Result};
use prost::Message;

#[derive(Clone, PartialEq, Message)]
pub struct CompileOptionsProto {
    #[prost(bool, tag = "2")]
    pub parameter_is_tupled_arguments: bool,
    #[prost(message, optional, tag = "3")]
    pub executable_build_options: Option<ExecutableBuildOptionsProto>,
    #[prost(bool, tag = "4")]
    pub compile_portable_executable: bool,
    /// `compiler_options` of `jax.jit`, checked as XLA checks them (`debug_options`).
    #[prost(btree_map = "string, message", tag = "7")]
    pub env_option_overrides: std::collections::BTreeMap<String, OptionOverrideProto>,
}

#[derive(Clone, PartialEq, Message)]
pub struct OptionOverrideProto {
    #[prost(oneof = "OptionOverride", tags = "1, 2, 3, 4")]
    pub value: Option<OptionOverride>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum OptionOverride {
    #[prost(string, tag = "1")]
    StringField(String),
    #[prost(bool, tag = "2")]
    BoolField(bool),
    #[prost(int64, tag = "3")]
    IntField(i64),
    #[prost(double, tag = "4")]
    DoubleField(f64),
}

#[derive(Clone, PartialEq, Message)]
pub struct ExecutableBuildOptionsProto {
    #[prost(int64, tag = "1")]
    pub device_ordinal: i64,
    #[prost(int64, tag = "4")]
    pub num_replicas: i64,
    #[prost(int64, tag = "5")]
    pub num_partitions: i64,
    #[prost(bool, tag = "6")]
    pub use_spmd_partitioning: bool,
    #[prost(bool, tag = "7")]
    pub use_auto_spmd_partitioning: bool,
    #[prost(message, optional, tag = "9")]
    pub device_assignment: Option<DeviceAssignmentProto>,
}

#[derive(Clone, PartialEq, Message)]
pub struct DeviceAssignmentProto {
    #[prost(int32, tag = "1")]
    pub replica_count: i32,
    #[prost(int32, tag = "2")]
    pub computation_count: i32,
    #[prost(message, repeated, tag = "3")]
    pub computation_devices: Vec<ComputationDevice>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ComputationDevice {
    #[prost(int64, repeated, tag = "1")]
    pub replica_device_ids: Vec<i64>,
}

/// What a compilation needs from the options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    pub replicas: usize,
    pub partitions: usize,
    pub spmd: bool,
    /// Device ids by logical id `replica * partitions + partition`.
    pub assignment: Vec<i32>,
    /// Set for a portable executable (runs on the device given at execution).
    pub portable: bool,
}

pub fn decode(bytes: &[u8], num_devices: usize) -> Result<Options> {
    let proto = CompileOptionsProto::decode(bytes).map_err(|e| PjrtError::invalid(format!("cannot decode the serialized CompileOptionsProto: {e}")))?;
    for (key, o) in &proto.env_option_overrides {
        use crate::debug_options::OptionValue as V;
        let value = match &o.value {
            Some(OptionOverride::StringField(s)) => V::String(s.clone()),
            Some(OptionOverride::BoolField(b)) => V::Bool(*b),
            Some(OptionOverride::IntField(i)) => V::Int(*i),
            Some(OptionOverride::DoubleField(d)) => V::Double(*d),
            None => return Err(PjrtError::new(crate::abi::ErrorCode::Internal, "OptionOverrideProto value not set.")),
        };
        crate::debug_options::check(key, &value)?;
    }
    let build = proto.executable_build_options.unwrap_or_default();
    let replicas = build.num_replicas.max(1) as usize;
    let partitions = build.num_partitions.max(1) as usize;
    let n = replicas.checked_mul(partitions).filter(|&n| n <= 1024).ok_or_else(|| PjrtError::invalid(format!("{replicas} replicas x {partitions} partitions is too many devices")))?;
    let assignment = match &build.device_assignment {
        Some(da) if !da.computation_devices.is_empty() => {
            // computation_devices[partition].replica_device_ids[replica].
            let mut ids = vec![0i32; n];
            if da.computation_devices.len() != partitions {
                return Err(PjrtError::invalid(format!("the device assignment has {} computations for {partitions} partitions", da.computation_devices.len())));
            }
            for (p, c) in da.computation_devices.iter().enumerate() {
                if c.replica_device_ids.len() != replicas {
                    return Err(PjrtError::invalid(format!("the device assignment has {} replicas for {replicas}", c.replica_device_ids.len())));
                }
                for (r, &d) in c.replica_device_ids.iter().enumerate() {
                    ids[r * partitions + p] = i32::try_from(d).map_err(|_| PjrtError::invalid(format!("device id {d}")))?;
                }
            }
            ids
        }
        _ => (0..n as i32).collect(),
    };
    for &d in &assignment {
        if d < 0 || d as usize >= num_devices {
            return Err(PjrtError::invalid(format!(
                "the device assignment names device {d}; the hlojit client has {num_devices} (set HLOJIT_DEVICE_COUNT)"
            )));
        }
    }
    Ok(Options { replicas, partitions, spmd: build.use_spmd_partitioning || build.use_auto_spmd_partitioning, assignment, portable: proto.compile_portable_executable })
}

/// `options`' device assignment as a serialized `DeviceAssignmentProto`.
pub fn encode_assignment(options: &Options) -> Vec<u8> {
    let computation_devices = (0..options.partitions)
        .map(|p| ComputationDevice {
            replica_device_ids: (0..options.replicas).map(|r| options.assignment[r * options.partitions + p] as i64).collect(),
        })
        .collect();
    DeviceAssignmentProto { replica_count: options.replicas as i32, computation_count: options.partitions as i32, computation_devices }.encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_partitions_and_assignment_decode() {
        let proto = CompileOptionsProto {
            parameter_is_tupled_arguments: false,
            executable_build_options: Some(ExecutableBuildOptionsProto {
                num_replicas: 2,
                num_partitions: 1,
                device_assignment: Some(DeviceAssignmentProto {
                    replica_count: 2,
                    computation_count: 1,
                    computation_devices: vec![ComputationDevice { replica_device_ids: vec![1, 0] }],
                }),
                ..Default::default()
            }),
            compile_portable_executable: false,
            env_option_overrides: Default::default(),
        };
        let o = decode(&proto.encode_to_vec(), 2).unwrap();
        assert_eq!((o.replicas, o.partitions, o.spmd), (2, 1, false));
        assert_eq!(o.assignment, vec![1, 0]);
        let back = DeviceAssignmentProto::decode(&encode_assignment(&o)[..]).unwrap();
        assert_eq!(back.computation_devices[0].replica_device_ids, vec![1, 0]);
        let err = decode(&proto.encode_to_vec(), 1).unwrap_err();
        assert!(err.message.contains("names device 1"), "{}", err.message);
        assert_eq!(decode(&[], 1).unwrap().assignment, vec![0]);
        assert!(decode(&[0xff, 0xff], 1).is_err());
    }

    #[test]
    fn compiler_options_are_checked_against_xlas_debug_options() {
        let with = |key: &str, value: OptionOverride| {
            let mut proto = CompileOptionsProto::default();
            proto.env_option_overrides.insert(key.to_string(), OptionOverrideProto { value: Some(value) });
            decode(&proto.encode_to_vec(), 1).map(|_| ()).map_err(|e| e.message)
        };
        assert_eq!(with("xla_embed_ir_in_executable", OptionOverride::BoolField(true)), Ok(()));
        assert_eq!(with("invalid_key", OptionOverride::StringField("invalid_value".into())), Err("No such compile option: 'invalid_key'".into()));
        assert!(with("xla_embed_ir_in_executable", OptionOverride::StringField("invalid_value".into())).unwrap_err().ends_with("is not a valid bool value."));
    }
}
