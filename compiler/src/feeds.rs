//! The host side of infeed, outfeed and host send/recv: each executable has one queue of
//! each kind per device (global device id; 0 for a single-device program), filled and
//! drained while or before it runs, from any thread.

use crate::error::{Error, Result};
use crate::executable::Executable;
use hlojit_runtime::{HostBuffer, Literal};
use std::time::Duration;

/// The leaves of a literal as row-major buffers (tuples flattened depth-first).
fn leaves(value: &Literal) -> Vec<HostBuffer> {
    match value {
        Literal::Array(a) => vec![HostBuffer::from_literal(a.clone())],
        Literal::Tuple(items) => items.iter().flat_map(leaves).collect(),
        Literal::Token => Vec::new(),
    }
}

impl Executable {
    fn check_device(&self, device: usize) -> Result<()> {
        if device >= self.num_devices() {
            return Err(Error::InvalidArgument(format!("device {device} does not exist: the program runs on {}", self.num_devices())));
        }
        Ok(())
    }

    /// Queues `value` for `device`'s infeed: the next infeed op the device runs reads it (a
    /// tuple value feeds one infeed of that tuple shape; its leaves may also be queued one by
    /// one). Values are read in the order they were queued. An infeed op that finds nothing
    /// waits up to [`Executable::set_transfer_wait_limit`] (30 s unless set), then fails the
    /// run.
    ///
    /// ```
    /// # use hlojit_compiler::Client;
    /// # use hlojit_runtime::{ArrayLiteral, Literal};
    /// # use std::time::Duration;
    /// let exe = Client::new().compile_text("HloModule m
    /// ENTRY e {
    ///   t = token[] after-all()
    ///   in = (f32[2], token[]) infeed(t)
    ///   x = f32[2] get-tuple-element(in), index=0
    ///   y = f32[2] add(x, x)
    ///   tk = token[] get-tuple-element(in), index=1
    ///   out = token[] outfeed(y, tk), outfeed_shape=f32[2]
    ///   ROOT r = f32[2] negate(x)
    /// }")?;
    /// exe.infeed(0, &ArrayLiteral::from_slice(&[2], &[1f32, 2.0])?.into())?;
    /// let result = exe.run(Vec::<hlojit_runtime::HostBuffer>::new())?;
    /// assert_eq!(result[0].as_slice::<f32>()?, &[-1.0, -2.0]);
    /// let fed_out = exe.outfeed(0, Duration::from_secs(1))?;
    /// assert_eq!(fed_out[0].as_slice::<f32>()?, &[2.0, 4.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn infeed(&self, device: usize, value: &Literal) -> Result<()> {
        self.check_device(device)?;
        self.transfers.push_infeed(device, leaves(value)).map_err(Error::InvalidArgument)
    }

    /// The next value an outfeed op of `device` wrote, as its leaves (row-major), waiting up
    /// to `timeout` for one; an error when none comes.
    pub fn outfeed(&self, device: usize, timeout: Duration) -> Result<Vec<HostBuffer>> {
        self.check_device(device)?;
        self.transfers.pop_outfeed(device, timeout).map_err(Error::Execution)
    }

    /// Outfed values of `device` not read yet.
    pub fn outfeed_len(&self, device: usize) -> usize {
        self.transfers.outfeed_len(device)
    }

    /// Infeed arrays queued for `device` and not read by the program yet.
    pub fn infeed_len(&self, device: usize) -> usize {
        self.transfers.infeed_len(device)
    }

    /// Gives `device` a value for its `recv` ops with `is_host_transfer=true` on channel
    /// `channel` (the host's side of a host recv).
    pub fn send_to_device(&self, device: usize, channel: i64, value: &Literal) -> Result<()> {
        self.check_device(device)?;
        self.transfers.send_to_device(device, channel, leaves(value)).map_err(Error::InvalidArgument)
    }

    /// The next value `device` sent to the host with `send(..), is_host_transfer=true` on
    /// channel `channel`, waiting up to `timeout`.
    pub fn recv_from_device(&self, device: usize, channel: i64, timeout: Duration) -> Result<Vec<HostBuffer>> {
        self.check_device(device)?;
        self.transfers.recv_from_device(device, channel, timeout).map_err(Error::Execution)
    }

    /// How long an infeed op (or a host recv) waits for a value the host has not queued yet
    /// before the run fails; zero fails at once. 30 s unless set.
    pub fn set_transfer_wait_limit(&self, limit: Duration) {
        self.transfers.set_wait_limit(limit);
    }
}
