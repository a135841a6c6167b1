//! The in-process cache: a [`Client`](crate::Client) hands out the executable it already
//! compiled for the same fingerprint (shared code, no LLVM work) as long as each custom-call
//! target still resolves to the function the code was linked with. It keeps the most
//! recently used executables alive, at most [`CAPACITY`].

use super::fingerprint::Fingerprint;
use crate::executable::Loaded;
use std::sync::{Arc, Mutex};

/// Executables kept per client.
pub const CAPACITY: usize = 32;

/// Shared by the clones of a client.
#[derive(Clone, Default)]
pub struct MemoryCache {
    entries: Arc<Mutex<Vec<(Fingerprint, Arc<Loaded>)>>>,
}

impl std::fmt::Debug for MemoryCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryCache").field("entries", &self.len()).finish()
    }
}

impl MemoryCache {
    /// The executable compiled for `key` whose custom-call targets `still_valid` accepts
    /// (made most recently used).
    pub(crate) fn get(&self, key: &Fingerprint, still_valid: impl Fn(&Loaded) -> bool) -> Option<Arc<Loaded>> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let i = entries.iter().position(|(k, loaded)| k == key && still_valid(loaded))?;
        let entry = entries.remove(i);
        let loaded = entry.1.clone();
        entries.push(entry);
        Some(loaded)
    }

    /// Remembers `loaded` for `key`, replacing an entry for the same key and dropping the
    /// least recently used beyond the capacity.
    pub(crate) fn insert(&self, key: Fingerprint, loaded: Arc<Loaded>) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.retain(|(k, _)| *k != key);
        entries.push((key, loaded));
        if entries.len() > CAPACITY {
            let excess = entries.len() - CAPACITY;
            entries.drain(..excess);
        }
    }

    /// Executables held.
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every cached executable (those still in use stay loaded until dropped).
    pub fn clear(&self) {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}
