//! `PJRT_LoadedExecutable_Execute`: runs a compiled program on its devices (one thread per
//! device when there are several; collectives meet in hlojit's in-process rendezvous).
//! Arguments an output is aliased with are donated (the buffer is consumed, the output
//! computed in its memory) unless the caller lists them as non-donatable.

use crate::abi::args::LoadedExecutableExecuteArgs;
use crate::abi::{ExecuteOptions, ErrorCode};
use crate::buffer::Buffer;
use crate::error::{guard, non_null, PjrtError, Result};
use crate::event::Event;
use crate::executable::LoadedExecutable;
use crate::util::slice;
use hlojit::{Argument, HostBuffer};
use std::sync::atomic::Ordering;
use std::sync::RwLockReadGuard;

enum Held<'a> {
    Borrowed(RwLockReadGuard<'a, Option<HostBuffer>>),
    Donated(Option<HostBuffer>),
}

pub unsafe extern "C" fn loaded_execute(args: *mut LoadedExecutableExecuteArgs) -> *mut PjrtError {
    unsafe { guard(args, |a| execute(a)) }
}

unsafe fn execute(a: &mut LoadedExecutableExecuteArgs) -> Result<()> {
    let le: &LoadedExecutable = non_null(a.executable, "executable")?;
    if le.deleted.load(Ordering::Acquire) {
        return Err(PjrtError::new(ErrorCode::FailedPrecondition, "the executable was deleted"));
    }
    let c = &le.compiled;
    let mut non_donatable: Vec<i64> = Vec::new();
    let mut run_options = hlojit::RunOptions::default();
    // SAFETY: null or the caller's options struct.
    if let Some(o) = unsafe { a.options.as_ref() } {
        if o.struct_size < ExecuteOptions::STRUCT_SIZE {
            return Err(PjrtError::invalid(format!("PJRT_ExecuteOptions: struct_size is {}, at least {} needed", o.struct_size, ExecuteOptions::STRUCT_SIZE)));
        }
        if o.num_send_ops > 0 || o.num_recv_ops > 0 {
            return Err(PjrtError::new(ErrorCode::Unimplemented, "send/recv callbacks are not supported by the hlojit PJRT plugin"));
        }
        non_donatable = slice(o.non_donatable_input_indices, o.num_non_donatable_input_indices).to_vec();
        if o.struct_size >= ExecuteOptions::WITH_CONTEXT && !o.context.is_null() {
            // SAFETY: a context from PJRT_ExecuteContext_Create, alive during the call.
            let context = unsafe { &*o.context.cast::<crate::ffi::ExecuteContext>() };
            run_options = run_options.with_ffi_context(context.context.clone());
        }
    }
    let devices = if a.execute_device.is_null() {
        le.devices.clone()
    } else {
        vec![a.execute_device]
    };
    if a.num_devices != devices.len() {
        return Err(PjrtError::invalid(format!("the executable runs on {} devices, arguments for {} given", devices.len(), a.num_devices)));
    }
    if a.num_args != c.num_parameters {
        return Err(PjrtError::invalid(format!("the executable takes {} arguments, {} given", c.num_parameters, a.num_args)));
    }
    // SAFETY: `num_devices` lists of `num_args` buffers, as the C API says.
    let lists: Vec<&[*mut Buffer]> = slice(a.argument_lists, a.num_devices).iter().map(|&l| slice(l, a.num_args)).collect();
    if lists.iter().any(|l| l.len() != a.num_args) {
        return Err(PjrtError::invalid("an argument list is null"));
    }
    // Token arguments carry no data: checked for presence, not passed on.
    let buffers: Vec<Vec<(usize, &Buffer)>> = lists
        .iter()
        .map(|l| {
            l.iter()
                .enumerate()
                // The message is made only for a null argument: formatting one per argument
                // showed in profiles of a trivial call.
                .map(|(i, &b)| if b.is_null() { Err(PjrtError::invalid(format!("argument {i} is null"))) } else { non_null(b, "argument").map(|b| (i, &*b)) })
                .filter(|r| r.as_ref().map_or(true, |(i, _)| c.parameter_leaves[*i].is_some()))
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<_>>()?;
    // Donations first (each takes and releases its buffer's write lock), then shared reads.
    let mut held: Vec<Vec<Option<Held>>> = buffers.iter().map(|l| l.iter().map(|_| None).collect()).collect();
    for (d, list) in buffers.iter().enumerate() {
        for (k, (i, b)) in list.iter().enumerate() {
            let i = *i;
            if c.donatable[i] && !non_donatable.contains(&(i as i64)) {
                let data = b.write().take().ok_or_else(|| b.deleted_error())?;
                held[d][k] = Some(Held::Donated(Some(data)));
            }
        }
    }
    for (d, list) in buffers.iter().enumerate() {
        for (k, (_, b)) in list.iter().enumerate() {
            if held[d][k].is_none() {
                let g = b.read();
                if g.is_none() {
                    return Err(b.deleted_error());
                }
                held[d][k] = Some(Held::Borrowed(g));
            }
        }
    }
    let arguments: Vec<Vec<Argument<'_>>> = held
        .iter_mut()
        .map(|row| {
            row.iter_mut()
                .map(|h| match h {
                    Some(Held::Borrowed(g)) => Argument::Borrowed(g.as_ref().map(|b| b.view()).expect("checked above")),
                    Some(Held::Donated(b)) => Argument::Donated(b.take().expect("taken once")),
                    None => unreachable!("every argument is held"),
                })
                .collect()
        })
        .collect();
    let results = if c.exe.num_devices() == 1 && arguments.len() == 1 {
        let mut arguments = arguments;
        vec![c.exe.run_with(arguments.pop().unwrap_or_default(), &run_options)?]
    } else {
        c.exe.run_devices_with(arguments, &run_options)?
    };
    drop(held);
    let outputs: Vec<*mut *mut Buffer> = slice(a.output_lists, a.num_devices).to_vec();
    // A program without outputs gets null lists (the C++ client passes `vector::data()` of
    // empty vectors).
    let has_outputs = !c.output_leaves.is_empty();
    if outputs.len() != devices.len() || (has_outputs && outputs.iter().any(|p| p.is_null())) {
        return Err(PjrtError::invalid("output_lists must hold one list per device"));
    }
    for ((list, device), result) in outputs.iter().zip(&devices).zip(results) {
        let mut result: Vec<Option<HostBuffer>> = result.into_iter().map(Some).collect();
        for (i, leaf) in c.output_leaves.iter().enumerate() {
            let buffer = match leaf {
                Some(j) => Buffer::new(*device, result.get_mut(*j).and_then(Option::take).ok_or_else(|| PjrtError::new(ErrorCode::Internal, format!("output {i} is missing")))?),
                None => Buffer::new_token(*device),
            };
            // SAFETY: the caller's list has room for every output of the executable.
            unsafe { *list.add(i) = Box::into_raw(buffer) };
        }
    }
    if !a.device_complete_events.is_null() {
        for d in 0..devices.len() {
            // SAFETY: one event slot per device.
            unsafe { *a.device_complete_events.add(d) = Event::ready(Ok(())) };
        }
    }
    Ok(())
}
