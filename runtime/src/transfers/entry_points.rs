//! The one function generated code calls for infeed, outfeed, send and recv.

use super::queues::current;
use crate::collectives::current_communicator;
use crate::custom_call::last_error::set_last_error;
use crate::{ArrayShape, ElementType, HostBuffer, Shape};
use std::ffi::{c_char, CStr};

/// What a [`hlojit_rt_transfer`] call does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum TransferKind {
    /// Read the next value of the device's infeed into the buffers.
    Infeed = 0,
    /// Append the buffers to the device's outfeed.
    Outfeed = 1,
    /// Send the buffers to another device of the run on a channel.
    SendToDevice = 2,
    /// Receive a value another device of the run sent on a channel.
    RecvFromDevice = 3,
    /// Send the buffers to the host on a channel (`is_host_transfer=true`).
    SendToHost = 4,
    /// Receive a value the host sent on a channel (`is_host_transfer=true`).
    RecvFromHost = 5,
}

impl TransferKind {
    fn from_i32(k: i32) -> Option<TransferKind> {
        use TransferKind::*;
        [Infeed, Outfeed, SendToDevice, RecvFromDevice, SendToHost, RecvFromHost].into_iter().find(|t| *t as i32 == k)
    }
}

/// The code of an element type in a transfer's shape table (its place in
/// [`ElementType::all`]).
pub fn element_type_code(t: ElementType) -> i64 {
    ElementType::all().iter().position(|&e| e == t).map_or(-1, |i| i as i64)
}

/// Decodes `leaves` row-major array shapes from `[type code, rank, dims...]` records.
fn decode_shapes(table: &[i64], leaves: usize) -> Result<Vec<ArrayShape>, String> {
    let mut shapes = Vec::with_capacity(leaves);
    let mut at = 0usize;
    for _ in 0..leaves {
        let t = *table.get(at).ok_or("truncated transfer shape table")?;
        let rank = *table.get(at + 1).ok_or("truncated transfer shape table")? as usize;
        let dims = table.get(at + 2..at + 2 + rank).ok_or("truncated transfer shape table")?.to_vec();
        let element_type = *ElementType::all().get(t as usize).ok_or("bad element type in a transfer shape table")?;
        shapes.push(ArrayShape::new(element_type, dims));
        at += 2 + rank;
    }
    Ok(shapes)
}

fn byte_len(shape: &ArrayShape) -> usize {
    shape.element_count().max(0) as usize * shape.element_type.byte_size()
}

/// Moves the arrays of one infeed, outfeed, send or recv op between the program and the
/// host queues of the running executable (or the other devices of the run).
///
/// `table` describes the `leaves` arrays as `[type code, rank, dims...]` records (type codes
/// from [`element_type_code`]); `buffers` points at each, row-major. `peers` (when `devices`
/// is non-zero) holds, by global device id, the device a send goes to or a recv comes from
/// (-1: this device sends nothing / receives zeros); without it a value goes to whichever
/// device receives on the channel. `name` (a C string) names the op in errors.
/// Returns 0, or 1 with the thread's last error set.
///
/// # Safety
/// `table` must hold the records, `buffers` `leaves` pointers to buffers of those shapes,
/// `peers` `devices` values, and `name` a NUL-terminated string.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn hlojit_rt_transfer(
    kind: i32,
    channel: i64,
    peers: *const i64,
    devices: i64,
    table: *const i64,
    table_len: i64,
    leaves: i64,
    buffers: *const *mut u8,
    name: *const c_char,
) -> i32 {
    // SAFETY: the caller passes a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned();
    // SAFETY: the caller passes `table_len` values, `leaves` pointers and `devices` peers.
    let table = unsafe { std::slice::from_raw_parts(table, table_len.max(0) as usize) };
    let buffers = unsafe { std::slice::from_raw_parts(buffers, leaves.max(0) as usize) };
    let peers = if devices > 0 { Some(unsafe { std::slice::from_raw_parts(peers, devices as usize) }) } else { None };
    match transfer(kind, channel, peers, table, buffers, &name) {
        Ok(()) => 0,
        Err(e) => {
            set_last_error(e);
            1
        }
    }
}

fn transfer(kind: i32, channel: i64, peers: Option<&[i64]>, table: &[i64], buffers: &[*mut u8], name: &str) -> Result<(), String> {
    let kind = TransferKind::from_i32(kind).ok_or_else(|| format!("{name}: unknown transfer kind {kind}"))?;
    let shapes = decode_shapes(table, buffers.len())?;
    // SAFETY (both closures): each buffer holds its shape's bytes, row-major.
    let read = || -> Result<Vec<HostBuffer>, String> {
        shapes
            .iter()
            .zip(buffers)
            .map(|(s, &p)| HostBuffer::from_bytes(s, unsafe { std::slice::from_raw_parts(p, byte_len(s)) }).map_err(|e| e.to_string()))
            .collect()
    };
    let write = |values: Vec<HostBuffer>| -> Result<(), String> {
        for (k, ((s, &p), v)) in shapes.iter().zip(buffers).zip(values).enumerate() {
            // Types NumPy lacks (bf16, f8) may come as raw bits in unsigned integers.
            let raw_bits = v.element_type().is_unsigned_int()
                && v.element_type().byte_size() == s.element_type.byte_size()
                && s.element_type.is_float()
                && s.element_type.bit_width() <= 16;
            if v.dims() != s.dims.as_slice() || (v.element_type() != s.element_type && !raw_bits) {
                return Err(format!("{name}: value {k} is {}, the program reads {}", Shape::Array(ArrayShape { layout: None, ..v.shape().clone() }).to_text(false), Shape::Array(s.clone()).to_text(false)));
            }
            unsafe { std::ptr::copy_nonoverlapping(v.bytes().as_ptr(), p, byte_len(s)) };
        }
        Ok(())
    };
    let zero = || {
        for (s, &p) in shapes.iter().zip(buffers) {
            unsafe { std::ptr::write_bytes(p, 0, byte_len(s)) };
        }
    };
    match kind {
        TransferKind::Infeed | TransferKind::Outfeed | TransferKind::SendToHost | TransferKind::RecvFromHost => {
            let (queues, device) = current().ok_or_else(|| format!("{name}: no host queues (run the program through an Executable)"))?;
            match kind {
                // An empty tuple reads nothing (the spec's no-op infeed).
                TransferKind::Infeed if shapes.is_empty() => Ok(()),
                TransferKind::Infeed => write(queues.take_infeed(device, shapes.len(), name)?),
                TransferKind::Outfeed => {
                    queues.push_outfeed(device, read()?);
                    Ok(())
                }
                TransferKind::SendToHost => {
                    queues.push_to_host(device, channel, read()?);
                    Ok(())
                }
                _ => write(queues.take_from_host(device, channel, shapes.len(), name)?),
            }
        }
        TransferKind::SendToDevice | TransferKind::RecvFromDevice => {
            let (id, rendezvous) = current_communicator()
                .ok_or_else(|| format!("{name}: send and recv between devices need a multi-device run (Executable::run_devices)"))?;
            let peer = match peers {
                Some(p) => match p.get(id.global).copied() {
                    Some(d) if d >= 0 => Some(Some(d as usize)),
                    _ => None,
                },
                None => Some(None),
            };
            match (kind, peer) {
                (TransferKind::SendToDevice, Some(to)) => rendezvous.post(channel, id.global, to, read()?),
                (TransferKind::SendToDevice, None) => Ok(()),
                (_, Some(from)) => write(rendezvous.take(channel, id.global, from).map_err(|e| format!("{name}: {e}"))?),
                (_, None) => {
                    zero();
                    Ok(())
                }
            }
        }
    }
}
