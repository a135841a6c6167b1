//! The device a thread runs as, and running one program on several devices at once.

use super::communicator::Communicator;
use super::rendezvous::{InstanceKey, Rendezvous};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

/// Which device of a multi-device run: replica `replica`, partition `partition`, global id
/// `replica * partitions + partition`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceId {
    /// `replica * partitions + partition`: the device's place in a run's argument lists.
    pub global: usize,
    /// What `replica-id` gives on this device.
    pub replica: usize,
    /// What `partition-id` gives on this device.
    pub partition: usize,
    /// Devices in the run.
    pub devices: usize,
}

pub(crate) struct DeviceContext {
    pub(crate) id: DeviceId,
    pub(crate) communicator: Arc<dyn Communicator>,
    /// How often each collective op ran on this device.
    pub(crate) sequence: HashMap<i64, u64>,
    /// The instance this device arrived at and has not departed yet.
    pub(crate) pending: Option<InstanceKey>,
}

thread_local! {
    pub(crate) static DEVICE: RefCell<Option<DeviceContext>> = const { RefCell::new(None) };
}

/// The device this thread runs as; `None` outside [`run_on_devices`].
pub fn current_device() -> Option<DeviceId> {
    DEVICE.with(|d| d.borrow().as_ref().map(|c| c.id))
}

/// Clears the thread's device when the device's work ends, however it ends.
struct Installed;

impl Drop for Installed {
    fn drop(&mut self) {
        DEVICE.with(|d| *d.borrow_mut() = None);
    }
}

/// Runs `work(device)` for every device of `replicas` × `partitions`, each on its own thread
/// with its collectives meeting the others', and returns the results in global device order.
///
/// If one device fails (or panics), the run is aborted: devices waiting in a collective stop
/// waiting, and the error returned is the first failure.
///
/// Each device gets a thread pool of its own (the machine's threads shared out), so a device
/// that waits in a collective never holds up another device's kernels.
pub fn run_on_devices<T: Send>(
    replicas: usize,
    partitions: usize,
    work: impl Fn(DeviceId) -> Result<T, String> + Sync,
) -> Result<Vec<T>, String> {
    let devices = replicas * partitions;
    if devices == 0 {
        return Err("a run needs at least one device".into());
    }
    let rendezvous = Arc::new(Rendezvous::new(devices));
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let threads = (cores / devices).max(1);
    let work = &work;
    let results: Vec<Result<T, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..devices)
            .map(|global| {
                let rendezvous = rendezvous.clone();
                let id = DeviceId { global, replica: global / partitions, partition: global % partitions, devices };
                s.spawn(move || {
                    let run = || {
                        DEVICE.with(|d| {
                            *d.borrow_mut() = Some(DeviceContext {
                                id,
                                communicator: rendezvous.clone(),
                                sequence: HashMap::new(),
                                pending: None,
                            })
                        });
                        let _installed = Installed;
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(id)))
                            .unwrap_or_else(|p| Err(panic_message(p)))
                    };
                    let pool = rayon::ThreadPoolBuilder::new()
                        .num_threads(threads)
                        .thread_name(move |i| format!("hlojit-device{global}-{i}"))
                        .build();
                    let result = match pool {
                        Ok(pool) => pool.install(run),
                        Err(_) => run(),
                    };
                    match &result {
                        Ok(_) => rendezvous.finish(global),
                        Err(e) => rendezvous.abort(format!("device {global}: {e}")),
                    }
                    result
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|p| Err(panic_message(p)))).collect()
    });
    if let Some(reason) = rendezvous.failure() {
        return Err(reason);
    }
    results.into_iter().collect()
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    let text = p
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    format!("panic: {text}")
}

/// The device this thread runs as and how it reaches the others; `None` outside a
/// multi-device run.
pub(crate) fn current_communicator() -> Option<(DeviceId, Arc<dyn Communicator>)> {
    DEVICE.with(|d| d.borrow().as_ref().map(|c| (c.id, c.communicator.clone())))
}

/// Runs `work` on this thread as device `id` of a run whose devices reach each other through
/// `communicator` (one process per device, say): collectives, send and recv in the programs
/// `work` runs go through it. Tells the communicator when the device finished, or aborts the
/// run with the error.
pub fn run_as_device<T>(id: DeviceId, communicator: Arc<dyn Communicator>, work: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    DEVICE.with(|d| {
        *d.borrow_mut() = Some(DeviceContext { id, communicator: communicator.clone(), sequence: HashMap::new(), pending: None })
    });
    let _installed = Installed;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|p| Err(panic_message(p)));
    match &result {
        Ok(_) => communicator.finish(id.global),
        Err(e) => communicator.abort(format!("device {}: {e}", id.global)),
    }
    result
}
