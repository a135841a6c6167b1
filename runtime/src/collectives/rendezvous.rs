//! Where the devices of one run meet for each collective op instance.
//!
//! A device arrives with the pointers of its operand buffers and waits until every member of
//! its group has arrived; it then reads its peers' buffers, and departs. A buffer must stay
//! untouched until every member departed, so departing waits too. Waits use a condition
//! variable, never spinning, and end early when the run is aborted (a device failed) or when a
//! member the others wait for has already finished the program without arriving.

use super::communicator::{Communicator, Contribution};
use crate::HostBuffer;
use std::collections::{HashMap, VecDeque};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// One collective op instance: the op, how often this op ran before on the device (so an op
/// in a loop meets its own iteration), and the group (its first member).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InstanceKey {
    pub op: i64,
    pub sequence: u64,
    pub leader: usize,
}

struct Instance {
    members: Vec<usize>,
    published: Vec<Option<Vec<usize>>>,
    arrived: usize,
    departed: usize,
}

struct State {
    failure: Option<String>,
    finished: Vec<bool>,
    instances: HashMap<InstanceKey, Instance>,
    /// Values sent between devices and not received yet, by (channel, receiver when the
    /// send named one): (sender, the value's leaves).
    messages: HashMap<(i64, Option<usize>), VecDeque<(usize, Vec<HostBuffer>)>>,
    /// Devices waiting in [`Rendezvous::take`]: what each waits for (channel, from).
    receiving: HashMap<usize, (i64, Option<usize>)>,
}

impl State {
    fn has_message(&self, channel: i64, me: usize, from: Option<usize>) -> bool {
        self.messages
            .get(&(channel, from.map(|_| me)))
            .is_some_and(|q| q.iter().any(|(s, _)| from.is_none_or(|f| f == *s)))
    }

    /// Every device still running waits in a receive nothing can satisfy: nobody is left to send.
    fn receives_deadlocked(&self) -> bool {
        self.finished.iter().enumerate().all(|(d, &done)| {
            done || self.receiving.get(&d).is_some_and(|&(channel, from)| !self.has_message(channel, d, from))
        })
    }
}

/// The meeting point of the devices of one run.
pub struct Rendezvous {
    devices: usize,
    state: Mutex<State>,
    changed: Condvar,
}

impl Rendezvous {
    /// A rendezvous for a run on `devices` devices.
    pub fn new(devices: usize) -> Rendezvous {
        Rendezvous {
            devices,
            state: Mutex::new(State { failure: None, finished: vec![false; devices], instances: HashMap::new(), messages: HashMap::new(), receiving: HashMap::new() }),
            changed: Condvar::new(),
        }
    }

    /// Devices taking part in the run.
    pub fn devices(&self) -> usize {
        self.devices
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking device thread is reported through `abort`; the state stays consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Publishes `pointers` as member `rank` of `members` and waits for the whole group;
    /// returns every member's pointers in group order.
    pub fn arrive_pointers(&self, key: InstanceKey, members: &[usize], rank: usize, pointers: Vec<usize>) -> Result<Vec<Vec<usize>>, String> {
        let mut state = self.lock();
        if let Some(f) = &state.failure {
            return Err(f.clone());
        }
        let instance = state.instances.entry(key).or_insert_with(|| Instance {
            members: members.to_vec(),
            published: vec![None; members.len()],
            arrived: 0,
            departed: 0,
        });
        if instance.members != members {
            let message = format!(
                "collective op {} (instance {}): devices disagree on the group ({:?} and {:?})",
                key.op, key.sequence, instance.members, members
            );
            drop(state);
            self.abort(message.clone());
            return Err(message);
        }
        if instance.published[rank].is_some() {
            return Err(format!("collective op {}: device {} arrived twice", key.op, members[rank]));
        }
        instance.published[rank] = Some(pointers);
        instance.arrived += 1;
        self.changed.notify_all();
        loop {
            if let Some(f) = &state.failure {
                return Err(f.clone());
            }
            let instance = state.instances.get(&key).ok_or("collective instance vanished")?;
            if instance.arrived == instance.members.len() {
                return Ok(instance.published.iter().map(|p| p.clone().unwrap_or_default()).collect());
            }
            let missing = instance.members.iter().zip(&instance.published).find(|(&m, p)| p.is_none() && state.finished[m]);
            if let Some((&m, _)) = missing {
                let message = format!("device {m} finished without joining collective op {} (instance {})", key.op, key.sequence);
                drop(state);
                self.abort(message.clone());
                return Err(message);
            }
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Leaves instance `key` once every member is done reading the published buffers.
    pub fn depart(&self, key: InstanceKey) -> Result<(), String> {
        let mut state = self.lock();
        let instance = state.instances.get_mut(&key).ok_or("departing a collective that was never joined")?;
        instance.departed += 1;
        if instance.departed == instance.members.len() {
            state.instances.remove(&key);
            self.changed.notify_all();
            return Ok(());
        }
        loop {
            if let Some(f) = &state.failure {
                return Err(f.clone());
            }
            if !state.instances.contains_key(&key) {
                return Ok(());
            }
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Leaves a value sent on `channel` by device `from` for device `to` (`None`: for
    /// whichever device receives on the channel first). Never waits.
    pub fn post(&self, channel: i64, from: usize, to: Option<usize>, leaves: Vec<HostBuffer>) -> Result<(), String> {
        let mut state = self.lock();
        if let Some(f) = &state.failure {
            return Err(f.clone());
        }
        state.messages.entry((channel, to)).or_default().push_back((from, leaves));
        self.changed.notify_all();
        Ok(())
    }

    /// Waits for the next value device `me` receives on `channel` from device `from`
    /// (`None`: from any device, sent to no device in particular). Fails when the run is
    /// aborted or interrupted, or when no device that could still send is running.
    pub fn take(&self, channel: i64, me: usize, from: Option<usize>) -> Result<Vec<HostBuffer>, String> {
        let key = (channel, from.map(|_| me));
        let mut state = self.lock();
        let outcome = loop {
            if let Some(f) = &state.failure {
                break Err(f.clone());
            }
            if let Some(q) = state.messages.get_mut(&key) {
                if let Some(i) = q.iter().position(|(s, _)| from.is_none_or(|f| f == *s)) {
                    if let Some((_, leaves)) = q.remove(i) {
                        break Ok(leaves);
                    }
                }
            }
            let who = from.map_or("any device".to_string(), |s| format!("device {s}"));
            let senders_done = match from {
                Some(s) => state.finished.get(s).copied().unwrap_or(true),
                None => state.finished.iter().enumerate().all(|(d, &f)| f || d == me),
            };
            if senders_done {
                break Err(format!("device {me} waits on channel {channel} for a value {who} never sent"));
            }
            state.receiving.insert(me, (channel, from));
            if state.receives_deadlocked() {
                let message = format!("deadlock: device {me} waits on channel {channel} for a value from {who}, and every running device waits to receive");
                state.failure.get_or_insert(message.clone());
                self.changed.notify_all();
                break Err(message);
            }
            if crate::executor::hlojit_rt_poll_interrupt() != 0 {
                break Err("the run was interrupted".into());
            }
            state = self.changed.wait_timeout(state, Duration::from_millis(50)).unwrap_or_else(|e| e.into_inner()).0;
        };
        state.receiving.remove(&me);
        outcome
    }

    /// Marks `device` as done with the program: nobody may wait for it any more.
    pub fn finish(&self, device: usize) {
        let mut state = self.lock();
        if let Some(f) = state.finished.get_mut(device) {
            *f = true;
        }
        self.changed.notify_all();
    }

    /// Ends the run: every waiting device (and every later arrival) fails with the first
    /// recorded reason.
    pub fn abort(&self, reason: String) {
        let mut state = self.lock();
        if state.failure.is_none() {
            state.failure = Some(reason);
        }
        self.changed.notify_all();
    }

    /// Why the run was aborted, if it was.
    pub fn failure(&self) -> Option<String> {
        self.lock().failure.clone()
    }
}

/// Devices are threads of this process: members read each other's buffers where they are.
impl Communicator for Rendezvous {
    fn devices(&self) -> usize {
        self.devices
    }

    fn arrive(&self, key: InstanceKey, members: &[usize], rank: usize, own: &[Contribution]) -> Result<Vec<Vec<usize>>, String> {
        self.arrive_pointers(key, members, rank, own.iter().map(|c| c.address).collect())
    }

    fn depart(&self, key: InstanceKey) -> Result<(), String> {
        Rendezvous::depart(self, key)
    }

    fn post(&self, channel: i64, from: usize, to: Option<usize>, leaves: Vec<HostBuffer>) -> Result<(), String> {
        Rendezvous::post(self, channel, from, to, leaves)
    }

    fn take(&self, channel: i64, me: usize, from: Option<usize>) -> Result<Vec<HostBuffer>, String> {
        Rendezvous::take(self, channel, me, from)
    }

    fn finish(&self, device: usize) {
        Rendezvous::finish(self, device)
    }

    fn abort(&self, reason: String) {
        Rendezvous::abort(self, reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn every_member_sees_every_publication_in_group_order() {
        let r = Arc::new(Rendezvous::new(3));
        let key = InstanceKey { op: 7, sequence: 0, leader: 0 };
        let handles: Vec<_> = (0..3)
            .map(|d| {
                let r = r.clone();
                std::thread::spawn(move || {
                    let got = r.arrive_pointers(key, &[0, 1, 2], d, vec![100 + d]).unwrap();
                    r.depart(key).unwrap();
                    got
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), vec![vec![100], vec![101], vec![102]]);
        }
    }

    #[test]
    fn abort_wakes_waiters_and_finished_peers_are_detected() {
        let r = Arc::new(Rendezvous::new(2));
        let key = InstanceKey { op: 1, sequence: 0, leader: 0 };
        let r2 = r.clone();
        let waiter = std::thread::spawn(move || r2.arrive_pointers(key, &[0, 1], 0, vec![1]));
        std::thread::sleep(std::time::Duration::from_millis(20));
        r.abort("device 1 failed".into());
        assert_eq!(waiter.join().unwrap().unwrap_err(), "device 1 failed");

        let r = Arc::new(Rendezvous::new(2));
        r.finish(1);
        let err = r.arrive_pointers(key, &[0, 1], 0, vec![1]).unwrap_err();
        assert!(err.contains("device 1 finished without joining"), "{err}");
    }
}
