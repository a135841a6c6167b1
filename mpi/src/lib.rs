//! Multi-device programs across processes: `mpirun -n N hlojit run --distributed mpi ...`
//! runs one device per MPI rank (rank = global device id). [`MpiCommunicator`] implements the
//! runtime's [`Communicator`], so generated code runs the same collectives as in one process;
//! here a collective copies each member's operand buffers to every other member of its group
//! (a ring of `MPI_Sendrecv`s, no deadlock whatever the sizes), and the reduction itself runs in
//! generated code on the copies, so any reduction computation works.
//!
//! Errors end every rank: [`Communicator::abort`] prints the message and calls `MPI_Abort`.

mod wire;

use hlojit_runtime::collectives::{Communicator, Contribution, InstanceKey};
use hlojit_runtime::{AlignedBuffer, HostBuffer};
use mpi::point_to_point::{send_receive_into_with_tags, Destination, Source};
use mpi::request::{Request, StaticScope};
use mpi::topology::{Communicator as _, SimpleCommunicator};
use std::collections::HashMap;
use std::sync::Mutex;
use std::thread::ThreadId;

/// The tag of collective exchanges; sends and recvs use [`channel_tag`], gathers [`GATHER_TAG`].
const COLLECTIVE_TAG: i32 = 1;
/// The tag of [`MpiCommunicator::gather_to_root`].
pub const GATHER_TAG: i32 = 2;

fn channel_tag(channel: i64) -> i32 {
    16 + channel.rem_euclid(1 << 24) as i32
}

/// A send in flight: MPI reads the leaked buffer until the request completes.
struct PendingSend {
    request: Request<'static, [u8], StaticScope>,
    buffer: *mut [u8],
}

#[derive(Default)]
struct State {
    /// Copies of the other members' buffers of each collective this rank is in.
    received: HashMap<InstanceKey, Vec<Option<AlignedBuffer>>>,
    sends: Vec<PendingSend>,
}

/// MPI's world communicator as hlojit's collectives interface: rank r is global device r.
pub struct MpiCommunicator {
    world: SimpleCommunicator,
    /// MPI is initialized for one thread: every call must come from this one.
    thread: ThreadId,
    state: Mutex<State>,
}

// SAFETY: the MPI handles and requests are only used from the thread that initialized MPI
// (`on_mpi_thread` checks it), which is the thread that runs the device's program.
unsafe impl Send for MpiCommunicator {}
// SAFETY: as above.
unsafe impl Sync for MpiCommunicator {}

impl MpiCommunicator {
    /// The world communicator of an initialized MPI `universe`, used from this thread.
    pub fn new(universe: &mpi::environment::Universe) -> MpiCommunicator {
        MpiCommunicator { world: universe.world(), thread: std::thread::current().id(), state: Mutex::new(State::default()) }
    }

    /// This process's rank: its global device id.
    pub fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    fn on_mpi_thread(&self) -> Result<(), String> {
        if std::thread::current().id() != self.thread {
            return Err("MPI is used from another thread than the one that initialized it".into());
        }
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Rank 0 gets every rank's `bytes` in rank order; the others get `None`.
    pub fn gather_to_root(&self, bytes: &[u8]) -> Option<Vec<Vec<u8>>> {
        if self.rank() != 0 {
            self.world.process_at_rank(0).send_with_tag(bytes, GATHER_TAG);
            return None;
        }
        let mut all = vec![bytes.to_vec()];
        for r in 1..self.world.size() {
            let (v, _) = self.world.process_at_rank(r).receive_vec_with_tag::<u8>(GATHER_TAG);
            all.push(v);
        }
        Some(all)
    }

    fn wait_sends(&self) {
        let sends = std::mem::take(&mut self.lock().sends);
        for s in sends {
            s.request.wait();
            // SAFETY: the buffer was leaked from a Box for this send, which has completed.
            drop(unsafe { Box::from_raw(s.buffer) });
        }
    }
}

impl Communicator for MpiCommunicator {
    fn devices(&self) -> usize {
        self.world.size() as usize
    }

    fn arrive(&self, key: InstanceKey, members: &[usize], rank: usize, own: &[Contribution]) -> Result<Vec<Vec<usize>>, String> {
        self.on_mpi_thread()?;
        let n = members.len();
        // Generated code loads with the alignment of hlojit's buffers: every leaf of a copy
        // starts at a multiple of it, after a header of that size.
        let align = hlojit_runtime::block_cache::BUFFER_ALIGNMENT;
        let padded = |b: usize| b.div_ceil(align) * align;
        let mut offsets = Vec::with_capacity(own.len());
        let mut total = align;
        for c in own {
            offsets.push(total);
            total += padded(c.bytes);
        }
        let header = [key.op, key.sequence as i64];
        let mut blob = AlignedBuffer::try_zeroed(total).map_err(|e| format!("collective buffer of {total} bytes: {e}"))?;
        for (i, v) in header.iter().enumerate() {
            blob.as_mut_slice()[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        for (c, &at) in own.iter().zip(&offsets) {
            // SAFETY: generated code passes live buffers of `bytes` bytes.
            blob.as_mut_slice()[at..at + c.bytes].copy_from_slice(unsafe { std::slice::from_raw_parts(c.address as *const u8, c.bytes) });
        }
        let mut copies: Vec<Option<AlignedBuffer>> = (0..n).map(|_| None).collect();
        for k in 1..n {
            let to = members[(rank + k) % n];
            let from_rank = (rank + n - k) % n;
            let from = members[from_rank];
            let mut buf = AlignedBuffer::try_zeroed(total).map_err(|e| format!("collective buffer of {total} bytes: {e}"))?;
            send_receive_into_with_tags(
                blob.as_slice(),
                &self.world.process_at_rank(to as i32),
                COLLECTIVE_TAG,
                buf.as_mut_slice(),
                &self.world.process_at_rank(from as i32),
                COLLECTIVE_TAG,
            );
            let got = [0, 1].map(|i| i64::from_le_bytes(buf.as_slice()[i * 8..i * 8 + 8].try_into().unwrap_or_default()));
            if got != header {
                return Err(format!(
                    "device {from} reached another collective (op {:x}, instance {}) than device {} (op {:x}, instance {})",
                    got[0], got[1], members[rank], key.op, key.sequence
                ));
            }
            copies[from_rank] = Some(buf);
        }
        let addresses = (0..n)
            .map(|g| match &copies[g] {
                Some(copy) => offsets.iter().map(|&at| copy.as_ptr() as usize + at).collect(),
                None => own.iter().map(|c| c.address).collect(),
            })
            .collect();
        self.lock().received.insert(key, copies);
        Ok(addresses)
    }

    fn depart(&self, key: InstanceKey) -> Result<(), String> {
        // The members' buffers were copied: nobody reads this rank's any more.
        self.lock().received.remove(&key);
        Ok(())
    }

    fn post(&self, channel: i64, _from: usize, to: Option<usize>, leaves: Vec<HostBuffer>) -> Result<(), String> {
        self.on_mpi_thread()?;
        let to = to.ok_or("a send between processes needs _xla_send_recv_source_target_pairs to name its receiver")?;
        let buffer: &'static mut [u8] = Box::leak(wire::encode(&leaves).into_boxed_slice());
        let pointer: *mut [u8] = buffer;
        let request = self.world.process_at_rank(to as i32).immediate_send_with_tag(StaticScope, &*buffer, channel_tag(channel));
        self.lock().sends.push(PendingSend { request, buffer: pointer });
        Ok(())
    }

    fn take(&self, channel: i64, _me: usize, from: Option<usize>) -> Result<Vec<HostBuffer>, String> {
        self.on_mpi_thread()?;
        let from = from.ok_or("a recv between processes needs _xla_send_recv_source_target_pairs to name its sender")?;
        let (bytes, _) = self.world.process_at_rank(from as i32).receive_vec_with_tag::<u8>(channel_tag(channel));
        wire::decode(&bytes)
    }

    fn finish(&self, _device: usize) {
        self.wait_sends();
    }

    fn abort(&self, reason: String) {
        eprintln!("error: {reason}");
        self.world.abort(1);
    }
}

/// Initializes MPI for this thread (`None` when it already is); MPI ends when the universe drops.
pub fn initialize() -> Option<mpi::environment::Universe> {
    mpi::initialize()
}
