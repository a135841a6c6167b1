//! Which devices take part in a collective with which (XLA's `GetParticipatingDevices`).
//!
//! Global device id `r * partitions + p` is replica `r`, partition `p`. What the ids in
//! `replica_groups` mean depends on the op's group mode, which `channel_id` and
//! `use_global_device_ids` select:
//! - no channel_id: cross-replica, groups of replica ids within this device's partition;
//! - channel_id, no use_global_device_ids attribute (all-to-all, collective-permute):
//!   cross-partition, groups of partition ids within this device's replica;
//! - channel_id, use_global_device_ids=false: cross-replica-and-partition, groups of replica
//!   ids, each with every partition (replica-major);
//! - channel_id, use_global_device_ids=true: flattened ids, groups of global device ids.
//!
//! Empty `replica_groups` mean one group of all (replicas or partitions).

use crate::hlo::{Instruction, Module, Opcode};

/// The devices of a multi-device program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceGrid {
    pub replicas: usize,
    pub partitions: usize,
}

impl DeviceGrid {
    /// From the module header's `replica_count` and `num_partitions` (1 when absent).
    pub fn of(module: &Module) -> DeviceGrid {
        let count = |key: &str| module.header_attribute(key).and_then(|v| v.trim().parse::<usize>().ok()).unwrap_or(1).max(1);
        DeviceGrid { replicas: count("replica_count"), partitions: count("num_partitions") }
    }

    pub fn devices(&self) -> usize {
        self.replicas * self.partitions
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    CrossReplica,
    CrossPartition,
    CrossReplicaAndPartition,
    FlattenedId,
}

fn mode(inst: &Instruction) -> Result<Mode, String> {
    // all-to-all, collective-permute and collective-broadcast have no use_global_device_ids
    // attribute at all.
    let has_flag =
        !matches!(inst.opcode, Opcode::AllToAll | Opcode::CollectivePermute | Opcode::CollectivePermuteStart | Opcode::CollectiveBroadcast);
    match (inst.attrs.channel_id.is_some(), has_flag, inst.attrs.use_global_device_ids) {
        (false, _, true) => Err("use_global_device_ids=true needs a channel_id".into()),
        (false, _, false) => Ok(Mode::CrossReplica),
        (true, false, _) => Ok(Mode::CrossPartition),
        (true, true, false) => Ok(Mode::CrossReplicaAndPartition),
        (true, true, true) => Ok(Mode::FlattenedId),
    }
}

/// The group (of `0..count` ids) holding `id`; all ids if there are no groups.
fn group_of(groups: &[Vec<i64>], id: usize, count: usize) -> Result<Vec<usize>, String> {
    find_group(groups, id, count)?.ok_or_else(|| format!("id {id} is in none of the replica_groups {groups:?}"))
}

/// The group (of `0..count` ids) holding `id`, `None` when no group does; all ids if there
/// are no groups.
fn find_group(groups: &[Vec<i64>], id: usize, count: usize) -> Result<Option<Vec<usize>>, String> {
    if groups.is_empty() {
        return Ok(Some((0..count).collect()));
    }
    let Some(g) = groups.iter().find(|g| g.contains(&(id as i64))) else { return Ok(None) };
    g.iter()
        .map(|&m| if m >= 0 && (m as usize) < count { Ok(m as usize) } else { Err(format!("replica_groups name id {m}, beyond the {count} there are")) })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// For every global device, the global ids of its group, in the order the op's results use.
pub fn participants(inst: &Instruction, grid: DeviceGrid) -> Result<Vec<Vec<usize>>, String> {
    let mode = mode(inst)?;
    let groups = inst.attrs.replica_groups.as_deref().unwrap_or(&[]);
    let p_count = grid.partitions;
    (0..grid.devices())
        .map(|d| {
            let (r, p) = (d / p_count, d % p_count);
            Ok(match mode {
                Mode::CrossReplica => group_of(groups, r, grid.replicas)?.into_iter().map(|r2| r2 * p_count + p).collect(),
                Mode::CrossPartition => group_of(groups, p, p_count)?.into_iter().map(|p2| r * p_count + p2).collect(),
                Mode::CrossReplicaAndPartition => group_of(groups, r, grid.replicas)?
                    .into_iter()
                    .flat_map(|r2| (0..p_count).map(move |p2| r2 * p_count + p2))
                    .collect(),
                Mode::FlattenedId => {
                    if groups.is_empty() {
                        return Err("replica_groups must not be empty with use_global_device_ids=true".into());
                    }
                    group_of(groups, d, grid.devices())?
                }
            })
        })
        .collect()
}

/// collective-permute: for every global device, the global device it receives from (`None`:
/// it receives zeros). Pairs name replicas without a channel_id, partitions with one.
pub fn permute_sources(inst: &Instruction, grid: DeviceGrid) -> Result<Vec<Option<usize>>, String> {
    let pairs = inst.attrs.source_target_pairs.as_deref().unwrap_or(&[]);
    let cross_partition = inst.attrs.channel_id.is_some();
    let count = if cross_partition { grid.partitions } else { grid.replicas };
    for &(s, t) in pairs {
        if s < 0 || t < 0 || s as usize >= count || t as usize >= count {
            return Err(format!("source_target_pairs name {{{s},{t}}}, beyond the {count} ids there are"));
        }
        if pairs.iter().filter(|&&(_, t2)| t2 == t).count() > 1 {
            return Err(format!("source_target_pairs name target {t} twice"));
        }
    }
    Ok((0..grid.devices())
        .map(|d| {
            let (r, p) = (d / grid.partitions, d % grid.partitions);
            let me = if cross_partition { p } else { r };
            pairs.iter().find(|&&(_, t)| t as usize == me).map(|&(s, _)| {
                let s = s as usize;
                if cross_partition { r * grid.partitions + s } else { s * grid.partitions + p }
            })
        })
        .collect())
}

/// collective-broadcast: for every global device, the global device whose operand it gets —
/// the first of its group (StableHLO's `collective_broadcast`; XLA's GPU runtime broadcasts
/// from the group's first member too) — or `None` for a device in no group, which gets zeros.
/// Ids in the groups are replicas without a channel_id, partitions with one (like
/// collective-permute, the op has no use_global_device_ids).
pub fn broadcast_sources(inst: &Instruction, grid: DeviceGrid) -> Result<Vec<Option<usize>>, String> {
    let groups = inst.attrs.replica_groups.as_deref().unwrap_or(&[]);
    let cross_partition = mode(inst)? == Mode::CrossPartition;
    let p_count = grid.partitions;
    (0..grid.devices())
        .map(|d| {
            let (r, p) = (d / p_count, d % p_count);
            Ok(if cross_partition {
                find_group(groups, p, p_count)?.map(|g| r * p_count + g[0])
            } else {
                find_group(groups, r, grid.replicas)?.map(|g| g[0] * p_count + p)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hlojit_runtime::Shape;

    fn inst(op: Opcode, channel: bool, global: bool, groups: Option<Vec<Vec<i64>>>) -> Instruction {
        let mut i = Instruction::new("x", op, Shape::Tuple(Vec::new()), Vec::new());
        i.attrs.channel_id = channel.then_some(1);
        i.attrs.use_global_device_ids = global;
        i.attrs.replica_groups = groups;
        i
    }

    #[test]
    fn group_modes_follow_xla() {
        let grid = DeviceGrid { replicas: 2, partitions: 2 };
        // Cross-replica: devices of one partition, groups of replica ids.
        let cr = participants(&inst(Opcode::AllReduce, false, false, None), grid).unwrap();
        assert_eq!(cr, vec![vec![0, 2], vec![1, 3], vec![0, 2], vec![1, 3]]);
        // Cross-partition (all-to-all with a channel): devices of one replica.
        let cp = participants(&inst(Opcode::AllToAll, true, false, Some(vec![vec![1, 0]])), grid).unwrap();
        assert_eq!(cp, vec![vec![1, 0], vec![1, 0], vec![3, 2], vec![3, 2]]);
        // Cross-replica-and-partition: replica groups times every partition, replica-major.
        let crp = participants(&inst(Opcode::AllGather, true, false, Some(vec![vec![1, 0]])), grid).unwrap();
        assert_eq!(crp[0], vec![2, 3, 0, 1]);
        // Flattened ids.
        let flat = participants(&inst(Opcode::AllReduce, true, true, Some(vec![vec![0, 3], vec![2, 1]])), grid).unwrap();
        assert_eq!(flat, vec![vec![0, 3], vec![2, 1], vec![2, 1], vec![0, 3]]);
        assert!(participants(&inst(Opcode::AllReduce, false, true, None), grid).is_err());
    }

    #[test]
    fn permute_sources_by_replica_or_partition() {
        let grid = DeviceGrid { replicas: 1, partitions: 4 };
        let mut i = inst(Opcode::CollectivePermute, true, false, None);
        i.attrs.source_target_pairs = Some(vec![(0, 1), (1, 2)]);
        assert_eq!(permute_sources(&i, grid).unwrap(), vec![None, Some(0), Some(1), None]);
        let grid = DeviceGrid { replicas: 2, partitions: 2 };
        i.attrs.channel_id = None;
        i.attrs.source_target_pairs = Some(vec![(1, 0)]);
        assert_eq!(permute_sources(&i, grid).unwrap(), vec![Some(2), Some(3), None, None]);
    }

    #[test]
    fn broadcast_from_the_first_of_each_group() {
        let grid = DeviceGrid { replicas: 4, partitions: 1 };
        let i = inst(Opcode::CollectiveBroadcast, false, false, Some(vec![vec![2, 1], vec![3]]));
        assert_eq!(broadcast_sources(&i, grid).unwrap(), vec![None, Some(2), Some(2), Some(3)]);
        let grid = DeviceGrid { replicas: 2, partitions: 2 };
        let i = inst(Opcode::CollectiveBroadcast, true, false, Some(vec![vec![1, 0]]));
        assert_eq!(broadcast_sources(&i, grid).unwrap(), vec![Some(1), Some(1), Some(3), Some(3)]);
        let i = inst(Opcode::CollectiveBroadcast, false, false, Some(vec![vec![0, 5]]));
        assert!(broadcast_sources(&i, grid).is_err());
    }
}
