//! The one interface collectives, send and recv between devices go through. Generated code
//! calls the same runtime functions whatever implements it: the in-process [`Rendezvous`]
//! (devices are threads of this process, buffers are read in place) or a message-passing one
//! across processes (the `hlojit-mpi` crate: each process is one device, buffers are copied).
//!
//! [`Rendezvous`]: super::Rendezvous

use super::builtin::{BuiltinReduction, ReduceLeaf};
use super::rendezvous::InstanceKey;
use crate::HostBuffer;

/// One leaf a device contributes to a collective: its address and its size in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Contribution {
    pub address: usize,
    pub bytes: usize,
}

/// How the devices of one run reach each other.
pub trait Communicator: Send + Sync {
    /// Devices taking part in the run.
    fn devices(&self) -> usize;

    /// The one device this process runs when the communicator connects processes of one
    /// device each (MPI: the rank); `None` when it connects the devices of this process (the
    /// in-process rendezvous, where every device has its own thread).
    fn local_device(&self) -> Option<usize> {
        None
    }

    /// Contributes `own` as member `rank` of `members` (global device ids) to collective
    /// instance `key` and waits for the group; returns the address of every member's leaves,
    /// in group order, valid until [`Communicator::depart`].
    fn arrive(&self, key: InstanceKey, members: &[usize], rank: usize, own: &[Contribution]) -> Result<Vec<Vec<usize>>, String>;

    /// Ends instance `key` for this device once no member reads its buffers any more.
    fn depart(&self, key: InstanceKey) -> Result<(), String>;

    /// Runs all-reduce instance `key` with `reduction` itself, as member `rank` of `members`:
    /// writes the reduction of every member's `input` to this device's `output`, leaf by leaf.
    /// `None` when this communicator has no native reduction: the caller then exchanges the
    /// buffers through [`Communicator::arrive`] and reduces them in generated code.
    fn reduce_builtin(&self, key: InstanceKey, members: &[usize], rank: usize, reduction: BuiltinReduction, leaves: &[ReduceLeaf]) -> Option<Result<(), String>> {
        let _ = (key, members, rank, reduction, leaves);
        None
    }

    /// Sends `leaves` on `channel` from device `from` to device `to` (`None`: whichever
    /// device receives on the channel). Does not wait for the receiver.
    fn post(&self, channel: i64, from: usize, to: Option<usize>, leaves: Vec<HostBuffer>) -> Result<(), String>;

    /// Receives the next value device `me` gets on `channel` from `from` (`None`: any).
    fn take(&self, channel: i64, me: usize, from: Option<usize>) -> Result<Vec<HostBuffer>, String>;

    /// `device` finished the program.
    fn finish(&self, device: usize);

    /// Ends the run on every device with `reason`.
    fn abort(&self, reason: String);
}
