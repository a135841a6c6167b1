//! Multi-device programs across processes: `mpirun -n N hlojit run --distributed mpi ...`
//! runs one device per MPI rank (rank = global device id). [`MpiCommunicator`] implements the
//! runtime's [`Communicator`], so generated code runs the same collectives as in one process;
//! here a collective copies each member's operand buffers to every other member of its group
//! (non-blocking sends to all, then the receives), and the reduction itself runs in generated
//! code on the copies, so any reduction computation works. All-reduces whose reduction MPI
//! has built in, with the same result in any combining order, run as MPI reductions instead
//! (`builtin`).
//!
//! Errors end every rank: [`Communicator::abort`] prints the message and calls `MPI_Abort`.
//! No wait blocks inside MPI: a rank polls for the message it waits for, so it notices when the
//! sender finished the program without sending (every rank announces that it finished) or when
//! the run was cancelled or timed out, and fails with a message instead of hanging; and when
//! every running rank waits for a message nobody will send, each one reports the deadlock
//! (`deadlock`).

mod builtin;
mod deadlock;
mod wire;

use deadlock::{Report, Watch, REPORT_TAG};
use hlojit_runtime::collectives::{BuiltinReduction, Communicator, Contribution, InstanceKey, ReduceLeaf};
use hlojit_runtime::{AlignedBuffer, HostBuffer};
use mpi::datatype::Equivalence;
use mpi::point_to_point::{Destination, Source};
use mpi::request::{Request, StaticScope};
use mpi::topology::{Communicator as _, SimpleCommunicator};
use std::collections::HashMap;
use std::sync::Mutex;
use std::thread::ThreadId;

/// The tag of collective exchanges; sends and recvs use [`channel_tag`], gathers [`GATHER_TAG`].
const COLLECTIVE_TAG: i32 = 1;
/// The tag of [`MpiCommunicator::gather_to_root`].
pub const GATHER_TAG: i32 = 2;
/// The tag of "this rank finished run k" (k as little-endian u64), sent to every other rank.
const FINISHED_TAG: i32 = 3;

fn channel_tag(channel: i64) -> i32 {
    16 + channel.rem_euclid(1 << 24) as i32
}

/// What a data message with `tag` carries, for messages.
fn describe_tag(tag: i32) -> String {
    if tag == COLLECTIVE_TAG {
        "a collective".into()
    } else {
        format!("channel {}", tag - 16)
    }
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
    /// Runs this rank finished: a "finished" message of an earlier run is stale.
    runs_finished: u64,
    /// The communicators of the groups built-in all-reduces ran on, by sorted members.
    groups: HashMap<Vec<usize>, SimpleCommunicator>,
    /// Message counts, finished runs and wait reports, for deadlock detection.
    watch: Watch,
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

    /// Waits (polling, so nothing blocks inside MPI) until a message with `tag` from rank
    /// `from` can be received; returns its size in bytes. Fails when `from` finished the run
    /// without sending it (`what` says what this rank waited for), when every running rank
    /// waits for a message nobody will send (`deadlock`), or when the run was cancelled or
    /// timed out.
    fn await_message(&self, from: usize, tag: i32, what: &dyn Fn() -> String) -> Result<usize, String> {
        let source = self.world.process_at_rank(from as i32);
        let this_run = self.lock().runs_finished;
        let mut polls = 0u32;
        loop {
            if let Some(status) = source.immediate_probe_with_tag(tag) {
                return Ok(status.count(u8::equivalent_datatype()).max(0) as usize);
            }
            self.drain_control();
            if self.lock().watch.has_finished(from, this_run) {
                // A rank's messages arrive in order: what it sent before finishing is here.
                if let Some(status) = source.immediate_probe_with_tag(tag) {
                    return Ok(status.count(u8::equivalent_datatype()).max(0) as usize);
                }
                return Err(format!("device {from} finished the program without {}", what()));
            }
            if hlojit_runtime::executor::hlojit_rt_poll_interrupt() != 0 {
                return Err(format!("the run was interrupted while {}", what()));
            }
            // Yield at first (the message is usually close), then sleep: with more processes
            // than cores a spinning rank takes the core from the one it waits for. A wait that
            // lasts is announced to every rank, for deadlock detection.
            polls += 1;
            if polls < 100 {
                std::thread::yield_now();
                continue;
            }
            if polls == 100 {
                self.announce_wait(this_run, from, tag);
            }
            let size = self.world.size() as usize;
            if let Some(waits) = self.lock().watch.deadlock(size, self.rank(), this_run, from, tag) {
                let waits: Vec<String> = waits.iter().map(|&(r, f, t)| format!("device {r} for device {f} ({})", describe_tag(t))).collect();
                return Err(format!("deadlock: every running device waits for a value no device will send: {}", waits.join(", ")));
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }

    /// Takes every "finished" message and wait report the other ranks sent so far.
    fn drain_control(&self) {
        let me = self.rank();
        for r in (0..self.world.size() as usize).filter(|&r| r != me) {
            let source = self.world.process_at_rank(r as i32);
            while source.immediate_probe_with_tag(FINISHED_TAG).is_some() {
                let (run, _) = source.receive_vec_with_tag::<u8>(FINISHED_TAG);
                let run = u64::from_le_bytes(run.get(..8).and_then(|b| b.try_into().ok()).unwrap_or_default());
                self.lock().watch.finished(r, run);
            }
            while source.immediate_probe_with_tag(REPORT_TAG).is_some() {
                let (bytes, _) = source.receive_vec_with_tag::<u8>(REPORT_TAG);
                if let Some(report) = Report::decode(&bytes) {
                    self.lock().watch.report_from(r, report);
                }
            }
        }
    }

    /// Tells every other rank that this one waits for `(from, tag)` in run `run`.
    fn announce_wait(&self, run: u64, from: usize, tag: i32) {
        let report = self.lock().watch.report(run, from, tag).encode();
        let me = self.rank() as i32;
        for r in (0..self.world.size()).filter(|&r| r != me) {
            // Small enough to go out eagerly: this does not wait for the receiver.
            self.world.process_at_rank(r).send_with_tag(&report[..], REPORT_TAG);
        }
    }

    fn wait_sends(&self) {
        let sends = std::mem::take(&mut self.lock().sends);
        for s in sends {
            s.request.wait();
            // SAFETY: the buffer was leaked from a Box for this send, which has completed.
            drop(unsafe { Box::from_raw(s.buffer) });
        }
    }

    /// Sends a copy of `bytes` to every other member of a group (`members`, this rank at index
    /// `rank`) with non-blocking sends, then runs `receive` and completes the sends. Every send
    /// is posted before any receive, so no order of arrivals can deadlock; MPI reads the one
    /// leaked copy until the sends complete. When `receive` fails the run ends (the caller
    /// aborts every rank): the sends may never complete and an unfinished request must not be
    /// dropped, so both stay leaked.
    fn send_to_all_then<R>(&self, bytes: &[u8], members: &[usize], rank: usize, receive: impl FnOnce() -> Result<R, String>) -> Result<R, String> {
        let n = members.len();
        let shared: &'static mut [u8] = Box::leak(bytes.to_vec().into_boxed_slice());
        let pointer: *mut [u8] = shared;
        let shared: &'static [u8] = shared;
        let requests: Vec<Request<'static, [u8], StaticScope>> = (1..n)
            .map(|k| {
                let to = members[(rank + k) % n];
                self.lock().watch.sent(to, COLLECTIVE_TAG);
                self.world.process_at_rank(to as i32).immediate_send_with_tag(StaticScope, shared, COLLECTIVE_TAG)
            })
            .collect();
        let result = receive();
        if result.is_err() {
            std::mem::forget(requests);
            return result;
        }
        for request in requests {
            request.wait();
        }
        // SAFETY: leaked above for these sends, which have completed.
        drop(unsafe { Box::from_raw(pointer) });
        result
    }
}

impl Communicator for MpiCommunicator {
    fn devices(&self) -> usize {
        self.world.size() as usize
    }

    fn local_device(&self) -> Option<usize> {
        Some(self.rank())
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
        self.send_to_all_then(blob.as_slice(), members, rank, || {
            (1..n).try_for_each(|k| -> Result<(), String> {
                let from_rank = (rank + n - k) % n;
                let from = members[from_rank];
                let what = || format!("joining collective op {:x} (instance {})", key.op, key.sequence);
                let bytes = self.await_message(from, COLLECTIVE_TAG, &what)?;
                let mut buf = AlignedBuffer::try_zeroed(bytes.max(16)).map_err(|e| format!("collective buffer of {bytes} bytes: {e}"))?;
                self.world.process_at_rank(from as i32).receive_into_with_tag(&mut buf.as_mut_slice()[..bytes], COLLECTIVE_TAG);
                self.lock().watch.received(from, COLLECTIVE_TAG);
                let got = [0, 1].map(|i| i64::from_le_bytes(buf.as_slice()[i * 8..i * 8 + 8].try_into().unwrap_or_default()));
                if got != header || bytes != total {
                    return Err(format!(
                        "device {from} reached another collective (op {:x}, instance {}) than device {} (op {:x}, instance {})",
                        got[0], got[1], members[rank], key.op, key.sequence
                    ));
                }
                copies[from_rank] = Some(buf);
                Ok(())
            })
        })?;
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

    fn reduce_builtin(&self, key: InstanceKey, members: &[usize], rank: usize, reduction: BuiltinReduction, leaves: &[ReduceLeaf]) -> Option<Result<(), String>> {
        Some(self.reduce_natively(key, members, rank, reduction, leaves))
    }

    fn post(&self, channel: i64, _from: usize, to: Option<usize>, leaves: Vec<HostBuffer>) -> Result<(), String> {
        self.on_mpi_thread()?;
        let to = to.ok_or_else(|| unpaired("send", channel))?;
        let buffer: &'static mut [u8] = Box::leak(wire::encode(&leaves).into_boxed_slice());
        let pointer: *mut [u8] = buffer;
        self.lock().watch.sent(to, channel_tag(channel));
        let request = self.world.process_at_rank(to as i32).immediate_send_with_tag(StaticScope, &*buffer, channel_tag(channel));
        self.lock().sends.push(PendingSend { request, buffer: pointer });
        Ok(())
    }

    fn take(&self, channel: i64, _me: usize, from: Option<usize>) -> Result<Vec<HostBuffer>, String> {
        self.on_mpi_thread()?;
        let from = from.ok_or_else(|| unpaired("recv", channel))?;
        self.await_message(from, channel_tag(channel), &|| format!("sending on channel {channel}"))?;
        let (bytes, _) = self.world.process_at_rank(from as i32).receive_vec_with_tag::<u8>(channel_tag(channel));
        self.lock().watch.received(from, channel_tag(channel));
        wire::decode(&bytes)
    }

    fn finish(&self, _device: usize) {
        self.wait_sends();
        // Tell every other rank, so one that still waits for this rank stops waiting.
        let run = {
            let mut state = self.lock();
            let run = state.runs_finished;
            state.runs_finished += 1;
            run
        };
        let me = self.rank() as i32;
        for r in (0..self.world.size()).filter(|&r| r != me) {
            self.world.process_at_rank(r).send_with_tag(&run.to_le_bytes()[..], FINISHED_TAG);
        }
    }

    fn abort(&self, reason: String) {
        eprintln!("error: {reason}");
        self.world.abort(1);
    }
}

/// Why a device-to-device send or recv without `_xla_send_recv_source_target_pairs` cannot
/// run across processes. XLA:CPU runs no send or recv at all (its thunk emitter has no case for
/// them: "HLO opcode `send` is not supported by XLA:CPU ThunkEmitter"), so there is no XLA
/// behaviour to follow; in one process hlojit hands the value to whichever device receives on
/// the channel, but an MPI message has to name its rank when it is sent.
fn unpaired(op: &str, channel: i64) -> String {
    format!(
        "{op} on channel {channel} names no peer device: across processes (--distributed mpi) a device-to-device send/recv \
         needs _xla_send_recv_source_target_pairs in its frontend_attributes (XLA:CPU runs no send/recv at all; \
         pairing by channel alone works only in one process)"
    )
}

/// Initializes MPI for this thread (`None` when it already is); MPI ends when the universe drops.
pub fn initialize() -> Option<mpi::environment::Universe> {
    mpi::initialize()
}
