//! The on-disk cache: one file per executable, `DIR/<fingerprint hash>.hlojit`, holding the
//! full key, the executable's record (signature and custom-call targets, see [`super::meta`])
//! and the object files the JIT loads. Entries are written to a temporary file in the
//! same directory and renamed into place, so concurrent readers and writers (threads or
//! processes) see a whole entry or none; two writers of one key both write valid entries and
//! the last rename wins. An entry that is truncated or damaged fails its checksum and is
//! ignored with a warning (and replaced by the next compilation); one whose key differs (a
//! hash collision, another compiler build) is a miss.

use super::fields::{Reader, Writer};
use super::fingerprint::Fingerprint;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

// X2: entries hold the executable's record, so that a hit runs no HLO passes. X3: the
// record holds the device grid and a program of runtime calls.
const MAGIC: &[u8; 8] = b"HLOJITX3";
const EXTENSION: &str = "hlojit";

/// What an entry holds besides its key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The executable's record ([`super::meta::EntryMeta`], encoded).
    pub meta: Vec<u8>,
    /// The object files, loaded into the JIT in order.
    pub objects: Vec<Vec<u8>>,
}

/// A cache directory (created on first store).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskCache {
    dir: PathBuf,
}

/// What a lookup found.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The entry.
    Hit(Entry),
    /// No entry for this key.
    Miss,
    /// An entry that cannot be used, and why (the caller warns and compiles).
    Corrupt(String),
}

impl DiskCache {
    pub fn new(dir: impl Into<PathBuf>) -> DiskCache {
        DiskCache { dir: dir.into() }
    }

    /// The cache `HLOJIT_CACHE_DIR` names, if set and not empty.
    pub fn from_env() -> Option<DiskCache> {
        let dir = std::env::var_os(super::CACHE_DIR_VARIABLE)?;
        (!dir.is_empty()).then(|| DiskCache::new(dir))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the entry for `key` lives.
    pub fn path(&self, key: &Fingerprint) -> PathBuf {
        self.dir.join(format!("{}.{EXTENSION}", key.hex()))
    }

    /// The entry stored for `key`.
    pub fn load(&self, key: &Fingerprint) -> Lookup {
        let path = self.path(key);
        if !self.dir.is_dir() {
            return Lookup::Miss;
        }
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Lookup::Miss,
            Err(e) => return Lookup::Corrupt(format!("{}: {e}", path.display())),
        };
        match decode(&bytes, key) {
            Ok(Some(entry)) => Lookup::Hit(entry),
            Ok(None) => Lookup::Miss,
            Err(why) => Lookup::Corrupt(format!("{}: {why}", path.display())),
        }
    }

    /// Stores `entry` under `key`: written to a temporary file, then renamed into place.
    pub fn store(&self, key: &Fingerprint, entry: &Entry) -> std::io::Result<()> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        std::fs::create_dir_all(&self.dir)?;
        let tmp = self.dir.join(format!(
            ".{}.{}.{}.tmp",
            key.hex(),
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let result = (|| {
            let mut file = std::fs::File::create(&tmp)?;
            // No fsync: an entry a crash cuts short fails its checksum and is replaced.
            file.write_all(&encode(key, entry))?;
            drop(file);
            std::fs::rename(&tmp, self.path(key))
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }
}

fn encode(key: &Fingerprint, entry: &Entry) -> Vec<u8> {
    encode_entry(MAGIC, key.header.as_bytes(), key.module.as_bytes(), entry)
}

/// The entry for `key` in `bytes`; `None` when the entry is whole but for another key.
fn decode(bytes: &[u8], key: &Fingerprint) -> Result<Option<Entry>, String> {
    let (header, module, entry) = decode_entry(MAGIC, "a cache entry", bytes)?;
    if header != key.header.as_bytes() || module != key.module.as_bytes() {
        return Ok(None);
    }
    if entry.objects.is_empty() {
        return Err("malformed entry".into());
    }
    Ok(Some(entry))
}

/// The entry format, shared with serialized executables (which have a magic of their own):
/// `magic`, `header`, `module` and the record as fields, the objects' count and the objects,
/// then a checksum of all that.
pub(crate) fn encode_entry(magic: &[u8; 8], header: &[u8], module: &[u8], entry: &Entry) -> Vec<u8> {
    let objects = &entry.objects;
    let size = 64 + header.len() + module.len() + entry.meta.len() + objects.iter().map(|o| o.len() + 8).sum::<usize>();
    let mut w = Writer(Vec::with_capacity(size));
    w.0.extend_from_slice(magic);
    for part in [header, module, &entry.meta] {
        w.bytes(part);
    }
    w.u64(objects.len() as u64);
    for o in objects {
        w.bytes(o);
    }
    let sum = checksum(&w.0);
    w.u64(sum);
    w.0
}

/// Header, module and entry of bytes in the entry format with `magic` (`what` names the kind
/// in the error when the magic differs).
pub(crate) fn decode_entry<'a>(magic: &[u8; 8], what: &str, bytes: &'a [u8]) -> Result<(&'a [u8], &'a [u8], Entry), String> {
    if bytes.len() < magic.len() + 8 || &bytes[..magic.len()] != magic {
        return Err(format!("not {what} of this hlojit version"));
    }
    let (body, sum) = bytes.split_at(bytes.len() - 8);
    if checksum(body) != u64::from_le_bytes(sum.try_into().expect("8 bytes")) {
        return Err("checksum mismatch (truncated or damaged)".into());
    }
    let mut r = Reader::new(&body[magic.len()..]);
    let header = r.chunk()?;
    let module = r.chunk()?;
    let meta = r.chunk()?.to_vec();
    let objects = (0..r.count()?).map(|_| r.chunk().map(<[u8]>::to_vec)).collect::<Result<Vec<_>, _>>()?;
    if !r.at_end() {
        return Err("malformed entry".into());
    }
    Ok((header, module, Entry { meta, objects }))
}

/// FNV-1a, 64 bits: catches truncation and damaged bytes (not tampering: the cache directory
/// is as trusted as the compiler's own files).
fn checksum(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(module: &str) -> Fingerprint {
        let header = "compiler: test\n".to_string();
        let hash = super::super::fingerprint::hash128(&[header.as_bytes(), module.as_bytes()]);
        Fingerprint { header, module: module.into(), hash }
    }

    fn entry(meta: &[u8], objects: Vec<Vec<u8>>) -> Entry {
        Entry { meta: meta.to_vec(), objects }
    }

    #[test]
    fn store_then_load_is_a_hit_and_another_key_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(dir.path().join("nested/cache"));
        let k = key("HloModule a");
        assert_eq!(cache.load(&k), Lookup::Miss);
        let stored = entry(b"record", vec![b"object one".to_vec(), vec![0u8, 1, 2, 255]]);
        cache.store(&k, &stored).unwrap();
        assert_eq!(cache.load(&k), Lookup::Hit(stored));
        assert_eq!(cache.load(&key("HloModule b")), Lookup::Miss);
        // No temporary files are left behind.
        let names: Vec<_> = std::fs::read_dir(cache.dir()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from(format!("{}.hlojit", k.hex()))]);
    }

    #[test]
    fn an_entry_for_another_key_under_the_same_name_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(dir.path());
        let k = key("HloModule a");
        let mut other = key("HloModule other");
        other.hash = k.hash; // a collision
        cache.store(&other, &entry(b"", vec![b"x".to_vec()])).unwrap();
        assert_eq!(cache.load(&k), Lookup::Miss);
    }

    #[test]
    fn damaged_and_truncated_entries_are_reported_not_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(dir.path());
        let k = key("HloModule a");
        cache.store(&k, &entry(b"r", vec![vec![7u8; 1000]])).unwrap();
        let path = cache.path(&k);
        let good = std::fs::read(&path).unwrap();
        let mut flipped = good.clone();
        flipped[good.len() / 2] ^= 1;
        for bad in [flipped, good[..good.len() - 3].to_vec(), good[..5].to_vec(), Vec::new(), b"garbage garbage garbage".to_vec()] {
            std::fs::write(&path, &bad).unwrap();
            assert!(matches!(cache.load(&k), Lookup::Corrupt(_)), "{} bytes", bad.len());
        }
        // A length field pointing past the end with a valid checksum is malformed, not a panic.
        let mut forged = MAGIC.to_vec();
        forged.extend_from_slice(&u64::MAX.to_le_bytes());
        let sum = checksum(&forged);
        forged.extend_from_slice(&sum.to_le_bytes());
        std::fs::write(&path, &forged).unwrap();
        assert_eq!(cache.load(&k), Lookup::Corrupt(format!("{}: malformed entry", path.display())));
        // The next store replaces the damaged entry.
        cache.store(&k, &entry(b"r", vec![b"fresh".to_vec()])).unwrap();
        assert_eq!(cache.load(&k), Lookup::Hit(entry(b"r", vec![b"fresh".to_vec()])));
    }

    #[test]
    fn concurrent_writers_and_readers_see_whole_entries() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiskCache::new(dir.path());
        let k = key("HloModule shared");
        std::thread::scope(|s| {
            for t in 0..8u8 {
                let (cache, k) = (&cache, &k);
                s.spawn(move || {
                    for i in 0..50u8 {
                        // Every writer's entry is valid: a reader gets one of them whole.
                        cache.store(k, &entry(&[t], vec![vec![t; 4096 + i as usize]])).unwrap();
                        match cache.load(k) {
                            Lookup::Hit(e) => {
                                let o = &e.objects[0];
                                assert_eq!(e.meta, [o[0]]);
                                assert!(o.len() >= 4096 && o.iter().all(|&b| b == o[0]));
                            }
                            other => panic!("{other:?}"),
                        }
                    }
                });
            }
        });
        let leftovers = std::fs::read_dir(cache.dir()).unwrap().count();
        assert_eq!(leftovers, 1);
    }
}
