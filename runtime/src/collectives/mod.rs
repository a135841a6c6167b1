//! Collectives for programs that run on several devices in one process (XLA's replicas and
//! partitions): every device runs the same compiled code on its own thread, and collective
//! ops meet in a [`Rendezvous`] where each device publishes its operand buffers and reads its
//! peers' directly.
//!
//! Generated code finds its device through a thread-local [`DeviceContext`] that
//! [`run_on_devices`] installs on each device thread; without one (a single-device run) every
//! collective involves this device alone.

mod builtin;
mod communicator;
mod device;
pub mod entry_points;
mod rendezvous;
pub use rendezvous::InstanceKey;

pub use builtin::{BuiltinElement, BuiltinOp, BuiltinReduction, ReduceLeaf};
pub use communicator::{Communicator, Contribution};
pub use device::{current_device, run_as_device, run_on_devices, DeviceId};
pub(crate) use device::current_communicator;
pub use rendezvous::Rendezvous;
