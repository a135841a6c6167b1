//! Host-side queues of one executable: per device an infeed (array leaves, in the order the
//! program reads them), an outfeed (one entry per outfeed op run, its leaves), and per channel
//! the values the program sends to the host and the host sends to the program.

use crate::collectives::current_device;
use crate::HostBuffer;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long generated code waits for an infeed value or a host send before the run fails
/// (unless [`Transfers::set_wait_limit`] says otherwise): long enough for a host thread that
/// produces data as the program runs, short enough that a missing value is an error, not a hang.
pub const DEFAULT_WAIT_LIMIT: Duration = Duration::from_secs(30);

/// How often a waiting program looks at its run's deadline and cancellation token.
const POLL: Duration = Duration::from_millis(20);

#[derive(Default)]
struct DeviceQueues {
    infeed: VecDeque<HostBuffer>,
    outfeed: VecDeque<Vec<HostBuffer>>,
    to_host: HashMap<i64, VecDeque<Vec<HostBuffer>>>,
    from_host: HashMap<i64, VecDeque<HostBuffer>>,
}

struct State {
    devices: Vec<DeviceQueues>,
    wait_limit: Duration,
}

impl State {
    fn device(&mut self, d: usize) -> &mut DeviceQueues {
        if self.devices.len() <= d {
            self.devices.resize_with(d + 1, DeviceQueues::default);
        }
        &mut self.devices[d]
    }
}

/// The host queues of one executable, for every device it runs on.
pub struct Transfers {
    state: Mutex<State>,
    changed: Condvar,
}

impl Default for Transfers {
    fn default() -> Self {
        Transfers::new()
    }
}

impl Transfers {
    pub fn new() -> Transfers {
        Transfers { state: Mutex::new(State { devices: Vec::new(), wait_limit: DEFAULT_WAIT_LIMIT }), changed: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How long generated code waits for an infeed value or a value the host sends before
    /// failing the run (zero: fail at once when the queue is empty).
    pub fn set_wait_limit(&self, limit: Duration) {
        self.lock().wait_limit = limit;
        self.changed.notify_all();
    }

    /// Appends array leaves to `device`'s infeed; an infeed op takes as many as its shape has.
    /// They are kept row-major.
    pub fn push_infeed(&self, device: usize, leaves: Vec<HostBuffer>) -> Result<(), String> {
        let leaves = row_major(leaves)?;
        self.lock().device(device).infeed.extend(leaves);
        self.changed.notify_all();
        Ok(())
    }

    /// Leaves in `device`'s infeed that no infeed op has read yet.
    pub fn infeed_len(&self, device: usize) -> usize {
        self.lock().device(device).infeed.len()
    }

    /// The next value an outfeed op of `device` wrote (its leaves, row-major), waiting up to
    /// `timeout` for one.
    pub fn pop_outfeed(&self, device: usize, timeout: Duration) -> Result<Vec<HostBuffer>, String> {
        self.wait_for(timeout, |s| s.device(device).outfeed.pop_front())
            .ok_or_else(|| format!("no outfeed value from device {device} within {timeout:?}"))
    }

    /// Values outfed by `device` and not read yet.
    pub fn outfeed_len(&self, device: usize) -> usize {
        self.lock().device(device).outfeed.len()
    }

    /// Gives `device` leaves for its recv ops of host channel `channel` (`is_host_transfer`).
    pub fn send_to_device(&self, device: usize, channel: i64, leaves: Vec<HostBuffer>) -> Result<(), String> {
        let leaves = row_major(leaves)?;
        self.lock().device(device).from_host.entry(channel).or_default().extend(leaves);
        self.changed.notify_all();
        Ok(())
    }

    /// The next value `device` sent to the host on channel `channel`, waiting up to `timeout`.
    pub fn recv_from_device(&self, device: usize, channel: i64, timeout: Duration) -> Result<Vec<HostBuffer>, String> {
        self.wait_for(timeout, |s| s.device(device).to_host.get_mut(&channel).and_then(VecDeque::pop_front))
            .ok_or_else(|| format!("device {device} sent nothing on host channel {channel} within {timeout:?}"))
    }

    fn wait_for<T>(&self, timeout: Duration, mut take: impl FnMut(&mut State) -> Option<T>) -> Option<T> {
        let deadline = Instant::now().checked_add(timeout);
        let mut state = self.lock();
        loop {
            if let Some(v) = take(&mut state) {
                return Some(v);
            }
            let left = deadline.map_or(POLL, |d| d.saturating_duration_since(Instant::now()));
            if left.is_zero() {
                return None;
            }
            state = self.changed.wait_timeout(state, left).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    /// For generated code: takes `count` leaves from the infeed of `device`, waiting for them
    /// as long as the wait limit allows and the run is not interrupted.
    pub(crate) fn take_infeed(&self, device: usize, count: usize, what: &str) -> Result<Vec<HostBuffer>, String> {
        self.take_waiting(what, |s| {
            let q = &mut s.device(device).infeed;
            (q.len() >= count).then(|| q.drain(..count).collect())
        })
        .map_err(|waited| format!("{what}: device {device}'s infeed holds {} of the {count} arrays it reads{waited}", self.infeed_len(device)))
    }

    pub(crate) fn push_outfeed(&self, device: usize, leaves: Vec<HostBuffer>) {
        self.lock().device(device).outfeed.push_back(leaves);
        self.changed.notify_all();
    }

    pub(crate) fn push_to_host(&self, device: usize, channel: i64, leaves: Vec<HostBuffer>) {
        self.lock().device(device).to_host.entry(channel).or_default().push_back(leaves);
        self.changed.notify_all();
    }

    pub(crate) fn take_from_host(&self, device: usize, channel: i64, count: usize, what: &str) -> Result<Vec<HostBuffer>, String> {
        self.take_waiting(what, |s| {
            let q = s.device(device).from_host.entry(channel).or_default();
            (q.len() >= count).then(|| q.drain(..count).collect())
        })
        .map_err(|waited| format!("{what}: the host sent device {device} nothing on channel {channel}{waited}"))
    }

    /// Waits until `take` succeeds; Err(how long it waited, as text) when the wait limit
    /// passes or the run is interrupted (the executor then reports the deadline or cancellation).
    fn take_waiting<T>(&self, _what: &str, mut take: impl FnMut(&mut State) -> Option<T>) -> Result<T, String> {
        let start = Instant::now();
        let mut state = self.lock();
        loop {
            if let Some(v) = take(&mut state) {
                return Ok(v);
            }
            let limit = state.wait_limit;
            let waited = start.elapsed();
            if waited >= limit {
                return Err(if limit.is_zero() { String::new() } else { format!(" (waited {limit:?})") });
            }
            if crate::executor::hlojit_rt_poll_interrupt() != 0 {
                return Err(" (the run was interrupted)".into());
            }
            let wait = (limit - waited).min(POLL);
            state = self.changed.wait_timeout(state, wait).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}

fn row_major(leaves: Vec<HostBuffer>) -> Result<Vec<HostBuffer>, String> {
    leaves
        .into_iter()
        .map(|b| {
            if b.layout().is_row_major() {
                Ok(b)
            } else {
                b.relayout(crate::Layout::row_major(b.dims().len())).map_err(|e| e.to_string())
            }
        })
        .collect()
}

thread_local! {
    static CURRENT: RefCell<Option<(Arc<Transfers>, usize)>> = const { RefCell::new(None) };
}

/// Makes `transfers` the queues of the program this thread runs until the guard drops; the
/// device is the thread's device in a multi-device run, 0 otherwise.
pub fn install(transfers: &Arc<Transfers>) -> Installed {
    let device = current_device().map_or(0, |d| d.global);
    let previous = CURRENT.with(|c| c.borrow_mut().replace((transfers.clone(), device)));
    Installed { previous }
}

/// Restores the queues installed before (nested runs on one thread).
pub struct Installed {
    previous: Option<(Arc<Transfers>, usize)>,
}

impl Drop for Installed {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// The queues and device of the program this thread runs.
pub(crate) fn current() -> Option<(Arc<Transfers>, usize)> {
    CURRENT.with(|c| c.borrow().clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infeed_is_taken_in_order_and_an_empty_queue_is_an_error_after_the_limit() {
        let t = Transfers::new();
        t.set_wait_limit(Duration::from_millis(30));
        t.push_infeed(0, vec![HostBuffer::from_slice(&[1], &[1f32]).unwrap(), HostBuffer::from_slice(&[1], &[2f32]).unwrap()]).unwrap();
        let got = t.take_infeed(0, 2, "infeed.1").unwrap();
        assert_eq!(got[1].as_slice::<f32>().unwrap(), &[2.0]);
        let err = t.take_infeed(0, 1, "infeed.2").unwrap_err();
        assert!(err.contains("infeed.2") && err.contains("holds 0 of the 1"), "{err}");
    }

    #[test]
    fn outfeed_waits_for_a_value_from_another_thread() {
        let t = Arc::new(Transfers::new());
        let t2 = t.clone();
        let h = std::thread::spawn(move || t2.pop_outfeed(1, Duration::from_secs(5)));
        std::thread::sleep(Duration::from_millis(20));
        t.push_outfeed(1, vec![HostBuffer::from_slice(&[], &[7i32]).unwrap()]);
        assert_eq!(h.join().unwrap().unwrap()[0].as_slice::<i32>().unwrap(), &[7]);
        assert!(t.pop_outfeed(1, Duration::from_millis(10)).unwrap_err().contains("no outfeed value"));
    }
}
