//! All-reduces with MPI's built-in reductions (MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_BAND,
//! MPI_BOR, MPI_BXOR) for the reductions the runtime lets a communicator run natively: those
//! whose result is the same in any combining order (see
//! `hlojit_runtime::collectives::BuiltinReduction`), so MPI's result is XLA's bit for bit.
//!
//! Before the reduction the group's members tell each other which collective instance they
//! reached (the same check the exchange makes); only then does this rank enter MPI's
//! reduction. That keeps the failure guarantees of the rest of this crate: a member that
//! finished the program, reached another collective or was cancelled is reported while the
//! others wait in the handshake (which polls), never inside the reduction, which every member
//! reaches once the handshake succeeded.

use crate::{MpiCommunicator, COLLECTIVE_TAG};
use hlojit_runtime::collectives::{BuiltinElement, BuiltinOp, BuiltinReduction, InstanceKey, ReduceLeaf};
use mpi::collective::{CommunicatorCollectives, SystemOperation};
use mpi::datatype::Equivalence;
use mpi::point_to_point::Source;
use mpi::request::StaticScope;
use mpi::topology::{Communicator as _, Group as _, SimpleCommunicator};

/// The tag `MPI_Comm_create_group` uses for a group's communicator.
const GROUP_TAG: i32 = 4;

impl MpiCommunicator {
    pub(crate) fn reduce_natively(&self, key: InstanceKey, members: &[usize], rank: usize, reduction: BuiltinReduction, leaves: &[ReduceLeaf]) -> Result<(), String> {
        self.on_mpi_thread()?;
        if members.len() > 1 {
            self.handshake(key, members, rank)?;
        }
        let op = match reduction.op {
            BuiltinOp::Sum => SystemOperation::sum(),
            BuiltinOp::Product => SystemOperation::product(),
            BuiltinOp::Min => SystemOperation::min(),
            BuiltinOp::Max => SystemOperation::max(),
            // Predicates are bytes holding 0 or 1: the bitwise operations are the logical ones.
            BuiltinOp::And => SystemOperation::bitwise_and(),
            BuiltinOp::Or => SystemOperation::bitwise_or(),
            BuiltinOp::Xor => SystemOperation::bitwise_xor(),
        };
        for leaf in leaves {
            if members.len() == 1 {
                // A group of one: the reduction of one value is the value.
                if leaf.input != leaf.output {
                    // SAFETY: generated code passes two live buffers of `bytes` bytes.
                    unsafe { std::ptr::copy(leaf.input as *const u8, leaf.output as *mut u8, leaf.bytes) };
                }
                continue;
            }
            let what = || format!("all-reduce op {:x} (instance {})", key.op, key.sequence);
            self.with_group(members, |group| match reduction.element {
                BuiltinElement::S8 => reduce_leaf::<i8>(group, leaf, op, &what),
                BuiltinElement::S16 => reduce_leaf::<i16>(group, leaf, op, &what),
                BuiltinElement::S32 => reduce_leaf::<i32>(group, leaf, op, &what),
                BuiltinElement::S64 => reduce_leaf::<i64>(group, leaf, op, &what),
                BuiltinElement::U8 | BuiltinElement::Pred => reduce_leaf::<u8>(group, leaf, op, &what),
                BuiltinElement::U16 => reduce_leaf::<u16>(group, leaf, op, &what),
                BuiltinElement::U32 => reduce_leaf::<u32>(group, leaf, op, &what),
                BuiltinElement::U64 => reduce_leaf::<u64>(group, leaf, op, &what),
            })??;
        }
        Ok(())
    }

    /// Every member tells every other one which instance it reached and waits (polling) until
    /// all of them did; fails as the exchange does when one finished, was cancelled or
    /// reached another collective.
    fn handshake(&self, key: InstanceKey, members: &[usize], rank: usize) -> Result<(), String> {
        let n = members.len();
        let mut header = [0u8; 16];
        header[..8].copy_from_slice(&key.op.to_le_bytes());
        header[8..].copy_from_slice(&(key.sequence as i64).to_le_bytes());
        self.send_to_all_then(&header, members, rank, || {
            (1..n).try_for_each(|k| -> Result<(), String> {
                let from = members[(rank + n - k) % n];
                let what = || format!("joining collective op {:x} (instance {})", key.op, key.sequence);
                let bytes = self.await_message(from, COLLECTIVE_TAG, &what)?;
                let (got, _) = self.world.process_at_rank(from as i32).receive_vec_with_tag::<u8>(COLLECTIVE_TAG);
                self.lock().watch.received(from, COLLECTIVE_TAG);
                if bytes != 16 || got[..] != header[..] {
                    let field = |i: usize| got.get(i * 8..i * 8 + 8).and_then(|b| b.try_into().ok()).map_or(-1, i64::from_le_bytes);
                    return Err(format!(
                        "device {from} reached another collective (op {:x}, instance {}) than device {} (op {:x}, instance {})",
                        field(0),
                        field(1),
                        members[rank],
                        key.op,
                        key.sequence
                    ));
                }
                Ok(())
            })
        })
    }

    /// Runs `f` on the communicator of `members` (created on first use, collectively by the
    /// members only, which all passed the handshake; then cached).
    fn with_group<R>(&self, members: &[usize], f: impl FnOnce(&SimpleCommunicator) -> R) -> Result<R, String> {
        let mut sorted = members.to_vec();
        sorted.sort_unstable();
        if sorted.iter().copied().eq(0..self.world.size() as usize) {
            return Ok(f(&self.world));
        }
        let mut state = self.lock();
        if !state.groups.contains_key(&sorted) {
            let ranks: Vec<i32> = sorted.iter().map(|&m| m as i32).collect();
            let group = self.world.group().include(&ranks);
            let comm = self
                .world
                .split_by_subgroup_with_tag(&group, GROUP_TAG)
                .ok_or_else(|| format!("MPI gave no communicator for the group {sorted:?}"))?;
            state.groups.insert(sorted.clone(), comm);
        }
        let comm = state.groups.get(&sorted).ok_or("group communicator vanished")?;
        Ok(f(comm))
    }
}

/// Reduces one leaf over `group` with MPI's `op`, polling so a cancelled or timed-out run
/// stops waiting.
fn reduce_leaf<T: Equivalence + Copy + 'static>(group: &SimpleCommunicator, leaf: &ReduceLeaf, op: SystemOperation, what: &dyn Fn() -> String) -> Result<(), String> {
    let count = leaf.bytes / std::mem::size_of::<T>();
    // SAFETY: generated code passes live, aligned buffers of `bytes` bytes of T, untouched
    // until this returns: the request completes below, or the run is aborted (every rank
    // ends) with the request leaked. MPI reads the input and writes the output, so an
    // operand that shares the result's buffer is copied first.
    let (input, output): (&'static [T], &'static mut [T]) = unsafe {
        let output = std::slice::from_raw_parts_mut(leaf.output as *mut T, count);
        let input: &'static [T] = if leaf.input == leaf.output {
            Box::leak(std::slice::from_raw_parts(leaf.input as *const T, count).to_vec().into_boxed_slice())
        } else {
            std::slice::from_raw_parts(leaf.input as *const T, count)
        };
        (input, output)
    };
    let copied = leaf.input == leaf.output;
    let mut request = group.immediate_all_reduce_into(StaticScope, input, output, op);
    let mut polls = 0u32;
    loop {
        match request.test() {
            Ok(_) => break,
            Err(pending) => request = pending,
        }
        if hlojit_runtime::executor::hlojit_rt_poll_interrupt() != 0 {
            std::mem::forget(request);
            return Err(format!("the run was interrupted while in {}", what()));
        }
        polls += 1;
        if polls < 100 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }
    if copied {
        // SAFETY: leaked above for this reduction, which has completed.
        drop(unsafe { Box::from_raw(input as *const [T] as *mut [T]) });
    }
    Ok(())
}
