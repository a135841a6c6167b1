//! `PJRT_Executable_Serialize` and `PJRT_Executable_DeserializeAndLoad`: what JAX's
//! persistent compilation cache and `jax.experimental.serialize_executable` store and load.
//!
//! The bytes are the compiler's serialized executable (`hlojit::Executable::serialize_with`:
//! build, target, record and code under a checksum) with the plugin's own fields attached:
//! the fingerprint, the serialized compile options and the module as compiled (for
//! `OptimizedProgram` and the executable's name). Loading gives an executable that reports
//! and runs as the compiled one; compile options the caller passes (`overridden`) choose the
//! devices instead of the stored ones, for the same number of replicas and partitions.

use crate::abi::args::{ExecutableDeserializeAndLoadArgs, ExecutableSerializeArgs};
use crate::client::Client;
use crate::error::{guard, non_null, PjrtError, Result};
use crate::executable::{assemble, Compiled, Executable, LoadedExecutable};
use crate::util::bytes;
use hlojit_compiler::cache::fields::{Reader, Writer};
use std::ffi::c_void;

/// What the plugin's attachment starts with (its layout's version).
const ATTACHMENT: &str = "hlojit-pjrt executable 1";

/// The bytes of `c`.
pub fn serialize(c: &Compiled) -> Result<Vec<u8>> {
    let mut w = Writer::default();
    w.string(ATTACHMENT);
    w.string(&c.fingerprint);
    w.bytes(&c.serialized_options);
    w.string(&c.module.to_string());
    Ok(c.exe.serialize_with(&w.0)?)
}

/// The executable in `bytes`, loaded on `client`'s devices (those `overridden` compile options
/// assign, if given, else the stored ones).
pub fn deserialize(client: &Client, bytes: &[u8], overridden: Option<&[u8]>) -> Result<LoadedExecutable> {
    let (exe, attachment) = hlojit::Executable::deserialize_with(bytes, client.compiler.options())?;
    let malformed = |why: String| PjrtError::invalid(format!("cannot load the serialized executable: {why}"));
    let mut r = Reader::new(&attachment);
    if r.string().ok().as_deref() != Some(ATTACHMENT) {
        return Err(malformed("it was not serialized by the hlojit PJRT plugin".into()));
    }
    let fingerprint = r.string().map_err(malformed)?;
    let stored_options = r.chunk().map_err(malformed)?;
    let text = r.string().map_err(malformed)?;
    if !r.at_end() {
        return Err(malformed("trailing bytes".into()));
    }
    let module = hlojit::hlo::text::parse_module(&text).map_err(|e| malformed(format!("its module does not parse: {e}")))?;
    let options_bytes = overridden.unwrap_or(stored_options);
    let options = crate::options::decode(options_bytes, client.devices.len())?;
    let declared = |key: &str| module.header_attribute(key).and_then(|v| v.trim().parse::<usize>().ok()).unwrap_or(1);
    if (options.replicas, options.partitions) != (declared("replica_count"), declared("num_partitions")) {
        return Err(PjrtError::invalid(format!(
            "the compile options ask for {} replicas and {} partitions, the serialized executable was compiled for {} and {}",
            options.replicas,
            options.partitions,
            declared("replica_count"),
            declared("num_partitions")
        )));
    }
    assemble(client, exe, module, options, options_bytes.to_vec(), fingerprint)
}

/// Frees bytes handed out by `executable_serialize`.
unsafe extern "C" fn free_serialized(p: *mut c_void) {
    if !p.is_null() {
        // SAFETY: made by `Box::into_raw` below, freed once (the C API's contract).
        drop(unsafe { Box::from_raw(p.cast::<Vec<u8>>()) });
    }
}

pub unsafe extern "C" fn executable_serialize(args: *mut ExecutableSerializeArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let e: &Executable = non_null(a.executable, "executable")?;
            let serialized = Box::new(serialize(&e.1)?);
            a.serialized_bytes = serialized.as_ptr().cast();
            a.serialized_bytes_size = serialized.len();
            a.serialized_executable = Box::into_raw(serialized).cast();
            a.serialized_executable_deleter = Some(free_serialized);
            Ok(())
        })
    }
}

pub unsafe extern "C" fn executable_deserialize_and_load(args: *mut ExecutableDeserializeAndLoadArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let client = non_null(a.client, "client")?;
            if a.serialized_executable.is_null() {
                return Err(PjrtError::invalid("serialized_executable is null"));
            }
            let serialized = bytes(a.serialized_executable.cast(), a.serialized_executable_size);
            let overridden = (!a.overridden_serialized_compile_options.is_null())
                .then(|| bytes(a.overridden_serialized_compile_options.cast(), a.overridden_serialized_compile_options_size));
            a.loaded_executable = Box::into_raw(Box::new(deserialize(client, serialized, overridden)?));
            Ok(())
        })
    }
}
