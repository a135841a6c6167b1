//! Random numbers, tokens and host transfers (infeed, outfeed, send, recv).

use super::{Builder, Op};
use crate::error::Result;
use crate::hlo::attributes::{Attributes, RngAlgorithm, RngDistribution};
use crate::hlo::opcode::Opcode;
use hlojit_runtime::{ElementType, Shape};
use std::panic::Location;

impl Builder {
    /// Random numbers of `shape` uniform in `[low, high)` (scalars of the shape's type).
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::F32, Shape};
    /// let b = Builder::new("m");
    /// let u = b.rng_uniform(&b.zero(F32)?, &b.one(F32)?, Shape::array(F32, [3]))?;
    /// assert_eq!(u.dims(), &[3]);
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn rng_uniform(&self, low: &Op, high: &Op, shape: Shape) -> Result<Op> {
        let attrs = Attributes { distribution: Some(RngDistribution::Uniform), ..Attributes::default() };
        self.emit(Location::caller(), Opcode::Rng, &[low, high], attrs, &[], Some(&shape))
    }

    /// Normally distributed random numbers of `shape` with mean `mu` and standard deviation
    /// `sigma` (float scalars).
    #[track_caller]
    pub fn rng_normal(&self, mu: &Op, sigma: &Op, shape: Shape) -> Result<Op> {
        let attrs = Attributes { distribution: Some(RngDistribution::Normal), ..Attributes::default() };
        self.emit(Location::caller(), Opcode::Rng, &[mu, sigma], attrs, &[], Some(&shape))
    }

    /// Random bits of `shape` (an integer array) from `algorithm` and a rank-1 integer
    /// `initial_state`: the tuple `(new_state, bits)`.
    #[track_caller]
    pub fn rng_bit_generator(&self, algorithm: RngAlgorithm, initial_state: &Op, shape: Shape) -> Result<Op> {
        let declared = Shape::Tuple(vec![initial_state.shape().clone(), shape]);
        let attrs = Attributes { rng_algorithm: Some(algorithm), ..Attributes::default() };
        self.emit(Location::caller(), Opcode::RngBitGenerator, &[initial_state], attrs, &[], Some(&declared))
    }

    /// A token joining `tokens` (none: a fresh token), to order side effects.
    #[track_caller]
    pub fn after_all(&self, tokens: &[&Op]) -> Result<Op> {
        self.emit(Location::caller(), Opcode::AfterAll, tokens, Attributes::default(), &[], None)
    }

    /// A fresh token (`after-all()` of nothing).
    #[track_caller]
    pub fn create_token(&self) -> Result<Op> {
        self.emit(Location::caller(), Opcode::AfterAll, &[], Attributes::default(), &[], None)
    }

    /// Reads a value of `shape` from the host's infeed after `token`: the tuple
    /// `(value, token)`.
    #[track_caller]
    pub fn infeed(&self, token: &Op, shape: Shape) -> Result<Op> {
        let declared = Shape::Tuple(vec![shape, Shape::Token]);
        self.emit(Location::caller(), Opcode::Infeed, &[token], Attributes::default(), &[], Some(&declared))
    }

    /// Writes `value` to the host's outfeed after `token`; returns a token.
    #[track_caller]
    pub fn outfeed(&self, value: &Op, token: &Op) -> Result<Op> {
        self.emit(Location::caller(), Opcode::Outfeed, &[value, token], Attributes::default(), &[], None)
    }

    /// Sends `value` on channel `channel_id` after `token` (a `send` and its `send-done`);
    /// returns the token of the completed send.
    #[track_caller]
    pub fn send(&self, value: &Op, token: &Op, channel_id: i64) -> Result<Op> {
        let at = Location::caller();
        let attrs = Attributes { channel_id: Some(channel_id), ..Attributes::default() };
        let send = self.emit(at, Opcode::Send, &[value, token], attrs.clone(), &[], None)?;
        self.emit(at, Opcode::SendDone, &[&send], attrs, &[], None)
    }

    /// Receives a value of `shape` on channel `channel_id` after `token` (a `recv` and its
    /// `recv-done`): the tuple `(value, token)`.
    #[track_caller]
    pub fn recv(&self, token: &Op, shape: Shape, channel_id: i64) -> Result<Op> {
        let at = Location::caller();
        let attrs = Attributes { channel_id: Some(channel_id), ..Attributes::default() };
        let declared = Shape::Tuple(vec![shape, Shape::scalar(ElementType::U32), Shape::Token]);
        let recv = self.emit(at, Opcode::Recv, &[token], attrs.clone(), &[], Some(&declared))?;
        self.emit(at, Opcode::RecvDone, &[&recv], attrs, &[], None)
    }
}
