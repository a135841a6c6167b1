//! Executables as bytes, for another process to load without compiling (what PJRT's
//! `PJRT_Executable_Serialize` and JAX's persistent compilation cache need).
//!
//! The bytes are a cache entry (see [`crate::cache::disk`]) under a magic of their own: the
//! header names the compiler build and the target (triple, CPU, features) the code is for, the
//! record is the executable's ([`EntryMeta`]: signature, custom-call targets, device grid, or
//! the program of runtime calls of a module without machine code), then the object files and a
//! checksum. Where the disk cache has the module's text, the caller's attachment is stored (the
//! PJRT plugin keeps its compile options and module there).
//!
//! Loading checks the magic, the checksum, that the build is this one and that this host can
//! run the code (same triple, the CPU it was compiled for or a baseline one, every feature it
//! uses present); custom-call targets are resolved again by name, as on a cache hit. The
//! machine code itself is loaded as it is: serialized executables are trusted input, as the
//! compiler's own files are (the checksum catches damage, not tampering).

use crate::cache::disk::{decode_entry, encode_entry, Entry};
use crate::cache::fingerprint::{compiler_build, host_target};
use crate::cache::meta::EntryMeta;
use crate::error::{Error, Result};
use crate::executable::{load_stored, Code, Executable};
use crate::pipeline::{CodeSource, CompileOptions, CompileStats};
use std::time::Instant;

/// Serialized executables start with this (`S1`: the first format).
const MAGIC: &[u8; 8] = b"HLOJITS1";

/// CPU names whose code runs on any CPU of their triple.
const BASELINE_CPUS: &[&str] = &["generic", "x86-64"];

impl Executable {
    /// The executable as bytes [`Executable::deserialize`] loads in another process (of the
    /// same hlojit build, on a host that can run its code).
    ///
    /// ```rust
    /// use hlojit_compiler::{Client, CompileOptions, Executable};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let exe = Client::new().compile_text("HloModule m\nENTRY e { x = f32[2] parameter(0)\n ROOT y = f32[2] negate(x) }")?;
    /// let bytes = exe.serialize()?;
    /// let again = Executable::deserialize(&bytes, &CompileOptions::default())?;
    /// let x = hlojit_runtime::HostBuffer::from_slice(&[2], &[1.0f32, -2.0])?;
    /// assert_eq!(again.run([&x])?[0].as_slice::<f32>()?, &[-1.0, 2.0]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn serialize(&self) -> Result<Vec<u8>> {
        self.serialize_with(&[])
    }

    /// [`Executable::serialize`] with bytes of the caller's own (`attachment`), which
    /// [`Executable::deserialize_with`] gives back, under the same checksum.
    pub fn serialize_with(&self, attachment: &[u8]) -> Result<Vec<u8>> {
        let loaded = &self.loaded;
        let (objects, calls) = match &loaded.code {
            Code::Objects(objects) => (objects.clone(), None),
            Code::Calls(calls) => (Vec::new(), Some(calls.clone())),
        };
        let targets = loaded.targets.iter().map(|(t, _)| t.clone()).collect();
        let meta = EntryMeta { signature: loaded.executor.signature().clone(), targets, grid: self.grid, calls };
        let meta = meta.encode().ok_or_else(|| Error::Unsupported("serializing this executable: its signature does not read back equal".into()))?;
        Ok(encode_entry(MAGIC, loaded.header.as_bytes(), attachment, &Entry { meta, objects }))
    }

    /// Loads an executable [`Executable::serialize`] made, its custom-call targets resolved
    /// for `options` (the options' registry, then the process's, then hlojit's built-ins).
    /// Bytes of another hlojit build, for a target this host cannot run, damaged or cut
    /// short are an error saying which.
    pub fn deserialize(bytes: &[u8], options: &CompileOptions) -> Result<Executable> {
        Ok(Executable::deserialize_with(bytes, options)?.0)
    }

    /// [`Executable::deserialize`], with the attachment given to [`Executable::serialize_with`].
    pub fn deserialize_with(bytes: &[u8], options: &CompileOptions) -> Result<(Executable, Vec<u8>)> {
        let start = Instant::now();
        let invalid = |why: String| Error::InvalidArgument(format!("cannot load the serialized executable: {why}"));
        let (header, attachment, entry) = decode_entry(MAGIC, "a serialized executable", bytes).map_err(invalid)?;
        let header = std::str::from_utf8(header).map_err(|_| invalid("malformed header".into()))?;
        check_runnable(header).map_err(invalid)?;
        let meta = EntryMeta::decode(&entry.meta).map_err(invalid)?;
        let grid = meta.grid;
        let loaded = load_stored(options, meta, entry.objects, header.to_string())?;
        let stats = CompileStats { source: CodeSource::Deserialized, load: start.elapsed(), ..CompileStats::default() };
        Ok((Executable::from_loaded(loaded, grid, stats, start.elapsed()), attachment.to_vec()))
    }
}

/// Whether code with `header` (see [`crate::cache::fingerprint`]) was made by this build of
/// hlojit for a target this host runs.
fn check_runnable(header: &str) -> std::result::Result<(), String> {
    let field = |name: &str| {
        header.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(": ")).ok_or_else(|| format!("the header has no '{name}'"))
    };
    let build = field("compiler")?;
    if build != compiler_build() {
        return Err(format!("it was compiled by {build}, this is {}: compile it again", compiler_build()));
    }
    let (triple, cpu, features) = (field("triple")?, field("cpu")?, field("features")?);
    let (host_triple, host_cpu, host_features) = host_target();
    if triple != host_triple {
        return Err(format!("it is for {triple}, this host is {host_triple}"));
    }
    if cpu != host_cpu && !BASELINE_CPUS.contains(&cpu) {
        return Err(format!("it was compiled for CPU {cpu}, this host is {host_cpu}"));
    }
    let enabled = |list: &str| list.split(',').filter_map(|f| f.trim().strip_prefix('+')).map(str::to_string).collect::<Vec<_>>();
    let host = enabled(host_features);
    let missing: Vec<String> = enabled(features).into_iter().filter(|f| !host.contains(f)).collect();
    if !missing.is_empty() {
        return Err(format!("its code uses CPU features this host lacks: {}", missing.join(", ")));
    }
    Ok(())
}

#[cfg(test)]
#[path = "serialized_tests.rs"]
mod tests;
