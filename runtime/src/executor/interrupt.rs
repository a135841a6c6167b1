//! Ending runs early: a deadline, or a cancellation token another thread triggers.
//!
//! Generated code cannot be stopped from outside, so it polls. Each iteration of a `while`
//! loop loads one process-wide flag, [`hlojit_rt_interrupt_requested`], and branches on it:
//! while no run anywhere needs interrupting the flag is zero and the poll costs a load and a
//! predictable branch. When a token is cancelled, or the deadline watcher thread sees a deadline
//! pass, the flag goes up and every polling loop calls [`hlojit_rt_poll_interrupt`], which
//! looks at the run of its own thread: an interrupted one returns non-zero and the generated
//! code unwinds with a failure status; others carry on. The flag comes down when the last
//! interrupted run has ended.
//!
//! Runs without a deadline or token are not registered anywhere and pay nothing beyond the
//! poll itself.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// Non-zero while some run of this process has been cancelled or is past its deadline.
/// Generated code loads it in every iteration of every `while` loop.
#[no_mangle]
pub static hlojit_rt_interrupt_requested: AtomicU32 = AtomicU32::new(0);

/// Called by generated code when [`hlojit_rt_interrupt_requested`] is set: non-zero when the
/// run on this thread has been cancelled or has passed its deadline and must stop.
#[no_mangle]
pub extern "C" fn hlojit_rt_poll_interrupt() -> i32 {
    CURRENT.with(|runs| runs.borrow().last().map_or(0, |run| i32::from(run.should_stop())))
}

/// A flag one thread sets to stop runs that others started with it.
///
/// Clones share the flag. Cancelling is permanent: a run started with a cancelled token stops
/// before it begins.
///
/// ```rust
/// use hlojit_runtime::executor::CancellationToken;
///
/// let token = CancellationToken::new();
/// let for_the_worker = token.clone();
/// assert!(!for_the_worker.is_cancelled());
/// token.cancel();
/// assert!(for_the_worker.is_cancelled());
/// ```
#[derive(Clone, Debug, Default)]
pub struct CancellationToken {
    cancelled: Arc<AtomicBool>,
}

impl CancellationToken {
    /// A token not cancelled yet.
    pub fn new() -> CancellationToken {
        CancellationToken::default()
    }

    /// Stops every run using this token at its next poll (the next iteration of a `while`
    /// loop, or before it starts).
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        let active = lock(&registry().active);
        if active.iter().any(|run| {
            run.token
                .as_ref()
                .is_some_and(|t| Arc::ptr_eq(&t.cancelled, &self.cancelled))
        }) {
            hlojit_rt_interrupt_requested.store(1, Ordering::SeqCst);
        }
    }

    /// Whether [`CancellationToken::cancel`] was called on this token or a clone.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }
}

/// How a run may end early. The default has no deadline and no token.
///
/// ```rust
/// use hlojit_runtime::executor::{CancellationToken, RunOptions};
/// use std::time::Duration;
///
/// let token = CancellationToken::new();
/// let options = RunOptions::default().with_timeout(Duration::from_secs(5)).with_cancellation(token.clone());
/// assert_eq!(options.timeout, Some(Duration::from_secs(5)));
/// ```
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// The run fails with a deadline error if it has not finished by then.
    pub deadline: Option<Instant>,
    /// The run fails with a deadline error if it has not finished this long after it started
    /// (each run, when the options are reused).
    pub timeout: Option<Duration>,
    /// The run fails with a cancellation error once this token is cancelled.
    pub cancellation: Option<CancellationToken>,
    /// User data typed-FFI handlers of this run may look up (XLA's execution context; JAX
    /// passes its host callbacks this way).
    pub ffi_context: Option<std::sync::Arc<crate::custom_call::ExecutionContext>>,
}

impl RunOptions {
    /// The same options with a timeout, counted from the start of each run.
    pub fn with_timeout(self, timeout: Duration) -> RunOptions {
        RunOptions {
            timeout: Some(timeout),
            ..self
        }
    }

    /// The same options with a deadline.
    pub fn with_deadline(self, deadline: Instant) -> RunOptions {
        RunOptions {
            deadline: Some(deadline),
            ..self
        }
    }

    /// The same options with user data for the run's typed-FFI handlers.
    pub fn with_ffi_context(self, context: std::sync::Arc<crate::custom_call::ExecutionContext>) -> RunOptions {
        RunOptions {
            ffi_context: Some(context),
            ..self
        }
    }

    /// The same options with a cancellation token.
    pub fn with_cancellation(self, token: CancellationToken) -> RunOptions {
        RunOptions {
            cancellation: Some(token),
            ..self
        }
    }

    /// The deadline of a run starting at `start`: the earlier of the deadline and the timeout.
    pub fn deadline_from(&self, start: Instant) -> Option<Instant> {
        // A timeout too long to represent is no deadline at all.
        let timed = self.timeout.and_then(|t| start.checked_add(t));
        match (self.deadline, timed) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Why a run was stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Interruption {
    Cancelled,
    DeadlinePassed,
}

/// One registered run (one thread running an entry function).
#[derive(Debug)]
struct RunState {
    deadline: Option<Instant>,
    token: Option<CancellationToken>,
}

impl RunState {
    fn interruption(&self) -> Option<Interruption> {
        if self.token.as_ref().is_some_and(CancellationToken::is_cancelled) {
            Some(Interruption::Cancelled)
        } else if self.deadline.is_some_and(|d| Instant::now() >= d) {
            Some(Interruption::DeadlinePassed)
        } else {
            None
        }
    }

    fn should_stop(&self) -> bool {
        self.interruption().is_some()
    }
}

thread_local! {
    /// The registered runs of this thread, innermost last (a custom call may run another
    /// executable).
    static CURRENT: RefCell<Vec<Arc<RunState>>> = const { RefCell::new(Vec::new()) };
}

struct Registry {
    active: Mutex<Vec<Arc<RunState>>>,
    /// Wakes the deadline watcher when a run with an earlier deadline registers.
    changed: Condvar,
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        std::thread::Builder::new()
            .name("hlojit-deadlines".into())
            .spawn(watch_deadlines)
            .expect("cannot start hlojit's deadline thread");
        Registry {
            active: Mutex::new(Vec::new()),
            changed: Condvar::new(),
        }
    })
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Raises the flag when a registered run's deadline passes.
fn watch_deadlines() {
    let registry = registry();
    let mut active = lock(&registry.active);
    loop {
        let now = Instant::now();
        if active.iter().any(|r| r.should_stop()) {
            hlojit_rt_interrupt_requested.store(1, Ordering::SeqCst);
        }
        let next = active.iter().filter_map(|r| r.deadline).filter(|&d| d > now).min();
        active = match next {
            Some(d) => {
                registry
                    .changed
                    .wait_timeout(active, d - now)
                    .unwrap_or_else(|p| p.into_inner())
                    .0
            }
            None => registry.changed.wait(active).unwrap_or_else(|p| p.into_inner()),
        };
    }
}

/// A run registered for interruption on this thread, for as long as it lives.
pub(crate) struct RunGuard {
    state: Arc<RunState>,
}

impl RunGuard {
    /// Registers a run starting at `start` with `options`; `None` when it has neither a
    /// deadline nor a token.
    pub(crate) fn enter(options: &RunOptions, start: Instant) -> Option<RunGuard> {
        let deadline = options.deadline_from(start);
        if deadline.is_none() && options.cancellation.is_none() {
            return None;
        }
        let state = Arc::new(RunState {
            deadline,
            token: options.cancellation.clone(),
        });
        let registry = registry();
        lock(&registry.active).push(state.clone());
        registry.changed.notify_all();
        CURRENT.with(|runs| runs.borrow_mut().push(state.clone()));
        Some(RunGuard { state })
    }

    /// Why the run must stop, if it must.
    pub(crate) fn interruption(&self) -> Option<Interruption> {
        self.state.interruption()
    }

    /// The run's deadline, if it has one.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.state.deadline
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        CURRENT.with(|runs| {
            let mut runs = runs.borrow_mut();
            if let Some(i) = runs.iter().rposition(|r| Arc::ptr_eq(r, &self.state)) {
                runs.remove(i);
            }
        });
        let mut active = lock(&registry().active);
        if let Some(i) = active.iter().position(|r| Arc::ptr_eq(r, &self.state)) {
            active.swap_remove(i);
        }
        // The flag stays up only while some other interrupted run has yet to notice.
        let still_needed = active.iter().any(|r| r.should_stop());
        hlojit_rt_interrupt_requested.store(u32::from(still_needed), Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polls_see_their_own_run_only() {
        let token = CancellationToken::new();
        let guard = RunGuard::enter(&RunOptions::default().with_cancellation(token.clone()), Instant::now())
            .expect("registered");
        assert_eq!(hlojit_rt_poll_interrupt(), 0);
        token.cancel();
        assert_eq!(hlojit_rt_interrupt_requested.load(Ordering::SeqCst), 1);
        assert_eq!(hlojit_rt_poll_interrupt(), 1);
        // Another thread with no run of its own carries on.
        assert_eq!(std::thread::spawn(|| hlojit_rt_poll_interrupt()).join().unwrap(), 0);
        assert_eq!(guard.interruption(), Some(Interruption::Cancelled));
        drop(guard);
        assert_eq!(hlojit_rt_poll_interrupt(), 0);
    }

    #[test]
    fn the_watcher_raises_the_flag_when_a_deadline_passes() {
        let options = RunOptions::default().with_timeout(Duration::from_millis(20));
        let guard = RunGuard::enter(&options, Instant::now()).expect("registered");
        let start = Instant::now();
        // Another test's cancelled run may raise the flag first: wait for this run's deadline.
        while hlojit_rt_interrupt_requested.load(Ordering::SeqCst) == 0 || guard.interruption().is_none() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the deadline thread never raised the flag"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(guard.interruption(), Some(Interruption::DeadlinePassed));
        assert_eq!(hlojit_rt_poll_interrupt(), 1);
    }
}
