//! Data that enters or leaves a running program other than through its parameters and
//! results: infeed and outfeed (per-device host queues), send and recv to and from the host
//! (`is_host_transfer=true`, queues per device and channel), and send and recv between the
//! devices of one run (a mailbox in the run's rendezvous, see `collectives`).
//!
//! The host side of the queues is a [`Transfers`] object that an executable owns; generated
//! code reaches it through a thread-local that [`install`] sets around a run, the same way
//! collectives find their device. Generated code hands over arrays row-major (it copies from
//! and to other layouts itself) and describes them with the table documented at
//! [`entry_points::hlojit_rt_transfer`].

pub mod entry_points;
mod queues;

pub use queues::{install, Installed, Transfers, DEFAULT_WAIT_LIMIT};
