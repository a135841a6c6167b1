//! Detecting a true deadlock across processes: every rank still running waits for a message
//! that nobody will send.
//!
//! Each rank counts the data messages (collective exchanges, sends) it sent to and received
//! from every other rank, per tag. A rank that has waited a while tells every other rank what
//! it waits for — (sender, tag) — with its counters ([`Report`]). A waiting rank declares a
//! deadlock when, for the current run, every other rank either finished or has reported a wait,
//! and for every waiting rank X whose wait is (Y, tag) Y has not finished and Y's report says
//! it sent X exactly as many messages with that tag as X's report says X received.
//!
//! Why that is sound although reports are stale snapshots: a rank stops waiting only by
//! receiving the message it waits for. Suppose some rank stopped waiting after its latest
//! report; take the one that did so first, X, when it received m from Y. Y sent m while
//! running. If Y's latest report came after sending m, it counts m, which X's report (sent
//! before X received m) does not: the counters differ. If it came before, Y was waiting then
//! and running when it sent m, so Y stopped waiting after its report, and before X did: a
//! contradiction. So when every check passes, no rank stopped waiting after its report: every
//! running rank waits, with nothing in flight for what it waits for — forever.

use std::collections::HashMap;

/// The tag of a [`Report`].
pub(crate) const REPORT_TAG: i32 = 5;

/// What a waiting rank tells the others.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Report {
    /// The run (how many runs the rank finished before this one).
    pub run: u64,
    /// The rank and tag it waits for.
    pub from: usize,
    pub tag: i32,
    /// How many messages with that tag it received from that rank.
    pub received: u64,
    /// Every data message it sent: (receiver, tag) -> count.
    pub sent: Vec<(usize, i32, u64)>,
}

impl Report {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(40 + 24 * self.sent.len());
        for v in [self.run, self.from as u64, self.tag as i64 as u64, self.received, self.sent.len() as u64] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for &(to, tag, n) in &self.sent {
            for v in [to as u64, tag as i64 as u64, n] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Report> {
        let word = |i: usize| bytes.get(i * 8..i * 8 + 8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes);
        let count = word(4)? as usize;
        let sent = (0..count).map(|k| Some((word(5 + 3 * k)? as usize, word(6 + 3 * k)? as i64 as i32, word(7 + 3 * k)?))).collect::<Option<Vec<_>>>()?;
        Some(Report { run: word(0)?, from: word(1)? as usize, tag: word(2)? as i64 as i32, received: word(3)?, sent })
    }

    fn sent_to(&self, to: usize, tag: i32) -> u64 {
        self.sent.iter().find(|&&(t, g, _)| t == to && g == tag).map_or(0, |&(_, _, n)| n)
    }
}

/// One rank's view: its own counters, which runs the others finished, their latest reports.
#[derive(Default)]
pub(crate) struct Watch {
    sent: HashMap<(usize, i32), u64>,
    received: HashMap<(usize, i32), u64>,
    /// Per rank: how many runs it finished.
    finished: HashMap<usize, u64>,
    reports: HashMap<usize, Report>,
}

impl Watch {
    pub fn sent(&mut self, to: usize, tag: i32) {
        *self.sent.entry((to, tag)).or_insert(0) += 1;
    }

    pub fn received(&mut self, from: usize, tag: i32) {
        *self.received.entry((from, tag)).or_insert(0) += 1;
    }

    /// `rank` finished its run `run`.
    pub fn finished(&mut self, rank: usize, run: u64) {
        let f = self.finished.entry(rank).or_insert(0);
        *f = (*f).max(run + 1);
    }

    /// Whether `rank` finished run `run`.
    pub fn has_finished(&self, rank: usize, run: u64) -> bool {
        self.finished.get(&rank).is_some_and(|&f| f > run)
    }

    pub fn report_from(&mut self, rank: usize, report: Report) {
        self.reports.insert(rank, report);
    }

    /// This rank's report while it waits for `(from, tag)` in run `run`.
    pub fn report(&self, run: u64, from: usize, tag: i32) -> Report {
        let mut sent: Vec<(usize, i32, u64)> = self.sent.iter().map(|(&(to, tag), &n)| (to, tag, n)).collect();
        sent.sort_unstable();
        Report { run, from, tag, received: self.received.get(&(from, tag)).copied().unwrap_or(0), sent }
    }

    /// The waits of a deadlock of the `ranks` ranks in run `run`, this rank (`me`) waiting for
    /// `(from, tag)`, or `None` when some rank may still make progress (module docs).
    pub fn deadlock(&self, ranks: usize, me: usize, run: u64, from: usize, tag: i32) -> Option<Vec<(usize, usize, i32)>> {
        let mine = self.report(run, from, tag);
        let report = |r: usize| if r == me { Some(&mine) } else { self.reports.get(&r).filter(|p| p.run == run) };
        let mut waits = Vec::new();
        for r in 0..ranks {
            if self.has_finished(r, run) {
                continue;
            }
            let wait = report(r)?;
            // Waiting for a rank that finished fails on its own; that is not a deadlock.
            if self.has_finished(wait.from, run) || wait.from >= ranks {
                return None;
            }
            if report(wait.from)?.sent_to(r, wait.tag) != wait.received {
                return None;
            }
            waits.push((r, wait.from, wait.tag));
        }
        Some(waits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_round_trip() {
        let r = Report { run: 3, from: 1, tag: 19, received: 7, sent: vec![(0, 1, 2), (1, 19, 8)] };
        assert_eq!(Report::decode(&r.encode()), Some(r));
        assert_eq!(Report::decode(&[1, 2, 3]), None);
    }

    #[test]
    fn every_rank_waiting_with_nothing_in_flight_is_a_deadlock() {
        // Rank 0 and 1 each wait for the other on tag 19; nothing was sent.
        let mut w = Watch::default();
        assert_eq!(w.deadlock(2, 0, 0, 1, 19), None, "no report from rank 1 yet");
        w.report_from(1, Report { run: 0, from: 0, tag: 19, received: 0, sent: vec![] });
        assert_eq!(w.deadlock(2, 0, 0, 1, 19), Some(vec![(0, 1, 19), (1, 0, 19)]));
        // A report of an earlier run says nothing about this one.
        assert_eq!(w.deadlock(2, 0, 1, 1, 19), None);
    }

    #[test]
    fn a_message_in_flight_or_a_finished_peer_is_no_deadlock() {
        let mut w = Watch::default();
        // Rank 1 reported after sending rank 0 the value it waits for: in flight.
        w.report_from(1, Report { run: 0, from: 0, tag: 19, received: 0, sent: vec![(0, 19, 1)] });
        assert_eq!(w.deadlock(2, 0, 0, 1, 19), None);
        // Once rank 0 received it and waits again, the counts agree.
        w.received(1, 19);
        assert_eq!(w.deadlock(2, 0, 0, 1, 19), Some(vec![(0, 1, 19), (1, 0, 19)]));
        // Waiting for a rank that finished is reported as that, not as a deadlock.
        w.finished(1, 0);
        assert_eq!(w.deadlock(2, 0, 0, 1, 19), None);
        // A finished third rank does not keep the other two from deadlocking.
        let mut w = Watch::default();
        w.finished(2, 0);
        w.report_from(1, Report { run: 0, from: 0, tag: 1, received: 0, sent: vec![] });
        assert!(w.deadlock(3, 0, 0, 1, 1).is_some());
    }
}
