//! The collective functions generated code calls.
//!
//! A collective op runs as: `hlojit_rt_collective_enter` (publish this device's operand
//! buffers, wait for the group, receive every member's buffers), generated code that reads
//! them and writes this device's results, then `hlojit_rt_collective_leave` (wait until no
//! member reads this device's buffers any more).
//!
//! Groups are precomputed by the compiler as a table with one row of `stride` i64 per global
//! device: `[size, member_0, ..., member_{size-1}]`, members as global device ids in the
//! order the op's results use.

use super::device::DEVICE;
use super::communicator::Contribution;
use super::rendezvous::InstanceKey;
use crate::custom_call::last_error::set_last_error;

/// The replica this thread runs as (0 outside a multi-device run).
#[no_mangle]
pub extern "C" fn hlojit_rt_replica_id() -> u32 {
    DEVICE.with(|d| d.borrow().as_ref().map_or(0, |c| c.id.replica as u32))
}

/// The partition this thread runs as (0 outside a multi-device run).
#[no_mangle]
pub extern "C" fn hlojit_rt_partition_id() -> u32 {
    DEVICE.with(|d| d.borrow().as_ref().map_or(0, |c| c.id.partition as u32))
}

/// Joins collective op `op` with the group `groups` gives this device. Writes member `g`'s
/// pointer for leaf `l` (`sizes[l]` bytes) to `peers[g * leaves + l]`, this device's position in the group to
/// `rank` and the group's size to `size`. Returns 0, or 1 with the thread's last error set.
///
/// # Safety
/// `groups` must hold `devices * stride` values as described in the module docs, `mine`
/// `leaves` pointers, `peers` room for `size * leaves` pointers, `rank` and `size` one i64.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_collective_enter(
    op: i64,
    devices: i64,
    groups: *const i64,
    stride: i64,
    leaves: i64,
    mine: *const *const u8,
    sizes: *const i64,
    peers: *mut *const u8,
    rank: *mut i64,
    size: *mut i64,
) -> i32 {
    let leaves = leaves.max(0) as usize;
    let stride = stride.max(1) as usize;
    // SAFETY: the caller passes `leaves` operand pointers and sizes.
    let own: Vec<Contribution> = (0..leaves)
        .map(|l| unsafe { Contribution { address: *mine.add(l) as usize, bytes: (*sizes.add(l)).max(0) as usize } })
        .collect();
    let group_of = |device: usize| -> Vec<usize> {
        // SAFETY: the table has a row for every device the program was compiled for.
        let row = unsafe { std::slice::from_raw_parts(groups.add(device * stride), stride) };
        let n = (row[0].max(0) as usize).min(stride - 1);
        row[1..=n].iter().map(|&m| m as usize).collect()
    };
    let outcome = DEVICE.with(|d| -> Result<(usize, Vec<Vec<usize>>), String> {
        let mut d = d.borrow_mut();
        let Some(ctx) = d.as_mut() else {
            // A single-device run: only a group of this device alone can be met.
            let members = group_of(0);
            if members.len() != 1 || devices != 1 {
                return Err(format!(
                    "collective op {op} needs {devices} devices; run the program with Executable::run_devices"
                ));
            }
            return Ok((0, vec![own.iter().map(|c| c.address).collect()]));
        };
        if devices as usize != ctx.communicator.devices() {
            return Err(format!("the program was compiled for {devices} devices, the run has {}", ctx.communicator.devices()));
        }
        let members = group_of(ctx.id.global);
        let me = members
            .iter()
            .position(|&m| m == ctx.id.global)
            .ok_or_else(|| format!("device {} is in no group of collective op {op}", ctx.id.global))?;
        let counter = ctx.sequence.entry(op).or_insert(0);
        let key = InstanceKey { op, sequence: *counter, leader: members[0] };
        *counter += 1;
        let rendezvous = ctx.communicator.clone();
        ctx.pending = Some(key);
        drop(d);
        let published = rendezvous.arrive(key, &members, me, &own)?;
        Ok((me, published))
    });
    match outcome {
        Ok((me, published)) => {
            for (g, ptrs) in published.iter().enumerate() {
                for l in 0..leaves {
                    // SAFETY: the caller sized `peers` for the group.
                    unsafe { *peers.add(g * leaves + l) = ptrs.get(l).copied().unwrap_or(0) as *const u8 };
                }
            }
            // SAFETY: valid out-pointers.
            unsafe {
                *rank = me as i64;
                *size = published.len() as i64;
            }
            0
        }
        Err(e) => {
            set_last_error(e);
            1
        }
    }
}

/// Leaves the collective this device last entered, once every member is done with it.
/// Returns 0, or 1 with the thread's last error set.
#[no_mangle]
pub extern "C" fn hlojit_rt_collective_leave() -> i32 {
    let pending = DEVICE.with(|d| d.borrow_mut().as_mut().and_then(|c| c.pending.take().map(|k| (k, c.communicator.clone()))));
    let Some((key, rendezvous)) = pending else { return 0 };
    match rendezvous.depart(key) {
        Ok(()) => 0,
        Err(e) => {
            set_last_error(e);
            1
        }
    }
}

/// What [`hlojit_rt_collective_reduce_builtin`] returns when the run's communicator has no
/// native reduction: generated code then runs the all-reduce through enter / leave.
pub const REDUCE_BY_EXCHANGE: i32 = 2;

/// All-reduce `op` whose reduction computation is the built-in `reduction` (a
/// [`BuiltinOp`](super::BuiltinOp) code) on `element` (a [`BuiltinElement`](super::BuiltinElement)
/// code), run by the communicator itself when it can: leaf `l` reduces `inputs[l]` into
/// `outputs[l]`, `sizes[l]` bytes each, same layout. `groups` and `stride` as for
/// [`hlojit_rt_collective_enter`]. Returns 0, 1 with the thread's last error set, or
/// [`REDUCE_BY_EXCHANGE`] (nothing happened; the op's instance count is unchanged).
///
/// # Safety
/// As for [`hlojit_rt_collective_enter`]; `inputs`, `outputs` and `sizes` hold `leaves` values.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_collective_reduce_builtin(
    op: i64,
    devices: i64,
    groups: *const i64,
    stride: i64,
    leaves: i64,
    inputs: *const *const u8,
    outputs: *const *mut u8,
    sizes: *const i64,
    reduction: i32,
    element: i32,
) -> i32 {
    let spec = super::BuiltinOp::from_code(reduction)
        .zip(super::BuiltinElement::from_code(element))
        .and_then(|(o, e)| super::BuiltinReduction::new(o, e));
    let Some(spec) = spec else {
        set_last_error(format!("collective op {op}: no built-in reduction {reduction} on element type {element}"));
        return 1;
    };
    let stride = stride.max(1) as usize;
    // SAFETY: the caller passes `leaves` pointers and sizes.
    let own: Vec<super::ReduceLeaf> = (0..leaves.max(0) as usize)
        .map(|l| unsafe {
            super::ReduceLeaf { input: *inputs.add(l) as usize, output: *outputs.add(l) as usize, bytes: (*sizes.add(l)).max(0) as usize }
        })
        .collect();
    let outcome = DEVICE.with(|d| -> Option<Result<(), String>> {
        let mut d = d.borrow_mut();
        let ctx = d.as_mut()?;
        if devices as usize != ctx.communicator.devices() {
            return None;
        }
        // SAFETY: the table has a row for every device the program was compiled for.
        let row = unsafe { std::slice::from_raw_parts(groups.add(ctx.id.global * stride), stride) };
        let n = (row[0].max(0) as usize).min(stride - 1);
        let members: Vec<usize> = row[1..=n].iter().map(|&m| m as usize).collect();
        let me = members.iter().position(|&m| m == ctx.id.global)?;
        let sequence = ctx.sequence.get(&op).copied().unwrap_or(0);
        let key = InstanceKey { op, sequence, leader: members[0] };
        let communicator = ctx.communicator.clone();
        drop(d);
        let result = communicator.reduce_builtin(key, &members, me, spec, &own)?;
        // Counted only when it ran here, so the exchange fallback meets the same instance.
        DEVICE.with(|d| {
            if let Some(ctx) = d.borrow_mut().as_mut() {
                *ctx.sequence.entry(op).or_insert(0) += 1;
            }
        });
        Some(result)
    });
    match outcome {
        None => REDUCE_BY_EXCHANGE,
        Some(Ok(())) => 0,
        Some(Err(e)) => {
            set_last_error(e);
            1
        }
    }
}
