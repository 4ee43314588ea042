//! State the host keeps for a plugin (contract 0.7's `state`): a bounded
//! key-value store shared by every instance of the plugin, kept across
//! calls and versions (cleared for a version that does not declare
//! `keep-state`), whose bytes are drawn from the plugin's share of the
//! host's plugin memory budget.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::limits::Limiter;

/// Keys a plugin's store holds at most.
pub const MAX_KEYS: usize = 65_536;
/// Bytes of one key at most.
pub const MAX_KEY_BYTES: usize = 1024;
/// Keys `keys` returns at most.
pub const MAX_LISTED_KEYS: usize = 10_000;

#[derive(Default)]
struct Inner {
    map: BTreeMap<String, Vec<u8>>,
    bytes: usize,
    /// Draws the bytes from the plugin's share (set once a version with a
    /// budget serves).
    limiter: Option<Limiter>,
    /// The version (its sha256) whose state it holds.
    owner: Option<String>,
}

/// One plugin's store.
pub struct PluginStore {
    /// Bytes of keys and values together at most.
    max_bytes: usize,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for PluginStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginStore")
            .field("max_bytes", &self.max_bytes)
            .finish()
    }
}

impl PluginStore {
    /// A store of at most `max_bytes`.
    pub fn new(max_bytes: usize) -> Self {
        Self {
            max_bytes,
            inner: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Charges the store's bytes to `limiter` from now on (what it holds
    /// already included); kept if one is set already.
    pub(crate) fn charge_to(&self, mut limiter: Limiter) {
        let mut inner = self.lock();
        if inner.limiter.is_some() {
            return;
        }
        if limiter.reserve_fixed(inner.bytes).is_ok() {
            inner.limiter = Some(limiter);
        }
    }

    /// Bytes of keys and values held.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// Keys held.
    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets everything (a new version that does not keep the state).
    pub fn clear(&self) {
        Self::empty(&mut self.lock());
    }

    fn empty(inner: &mut Inner) {
        let bytes = std::mem::take(&mut inner.bytes);
        inner.map.clear();
        if let Some(l) = inner.limiter.as_mut() {
            l.give_back(bytes);
        }
    }

    /// The version `version` (its sha256) serves now: a version other
    /// than the one whose state the store holds starts it empty, unless it
    /// `keep`s it. The same version again (another profile's slot) changes
    /// nothing.
    pub fn adopt(&self, version: &str, keep: bool) {
        let mut inner = self.lock();
        if inner.owner.as_deref() == Some(version) {
            return;
        }
        if inner.owner.is_some() && !keep {
            Self::empty(&mut inner);
        }
        inner.owner = Some(version.to_owned());
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.lock().map.get(key).cloned()
    }

    /// Stores `value` under `key`, within the bounds.
    pub fn set(&self, key: &str, value: Vec<u8>) -> Result<(), String> {
        let mut inner = self.lock();
        Self::put(&mut inner, self.max_bytes, key, value)
    }

    fn put(inner: &mut Inner, max_bytes: usize, key: &str, value: Vec<u8>) -> Result<(), String> {
        if key.len() > MAX_KEY_BYTES {
            return Err(format!("a key of {} bytes is longer than {MAX_KEY_BYTES}", key.len()));
        }
        let old = inner.map.get(key).map(|v| key.len() + v.len());
        if old.is_none() && inner.map.len() >= MAX_KEYS {
            return Err(format!("the store holds {MAX_KEYS} keys already, its limit"));
        }
        let new = key.len() + value.len();
        let total = inner.bytes - old.unwrap_or(0) + new;
        if total > max_bytes {
            return Err(format!(
                "the store would hold {total} bytes, over its limit of {max_bytes} (a quarter of the plugin's memory cap)"
            ));
        }
        let grow = total.saturating_sub(inner.bytes);
        if let Some(l) = inner.limiter.as_mut()
            && grow > 0
        {
            l.reserve_fixed(grow)
                .map_err(|e| format!("the store cannot grow: {e}"))?;
        }
        if let Some(l) = inner.limiter.as_mut()
            && total < inner.bytes
        {
            l.give_back(inner.bytes - total);
        }
        inner.bytes = total;
        inner.map.insert(key.to_owned(), value);
        Ok(())
    }

    /// Removes `key`; whether it was there.
    pub fn remove(&self, key: &str) -> bool {
        let mut inner = self.lock();
        let Some(v) = inner.map.remove(key) else { return false };
        let freed = key.len() + v.len();
        inner.bytes -= freed;
        if let Some(l) = inner.limiter.as_mut() {
            l.give_back(freed);
        }
        true
    }

    /// The keys starting with `prefix`, sorted, at most [`MAX_LISTED_KEYS`].
    pub fn keys(&self, prefix: &str) -> Vec<String> {
        self.lock()
            .map
            .range(prefix.to_owned()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .take(MAX_LISTED_KEYS)
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Adds `delta` to the s64 counter under `key` in one step.
    pub fn add(&self, key: &str, delta: i64) -> Result<i64, String> {
        let mut inner = self.lock();
        let now = match inner.map.get(key) {
            None => 0,
            Some(v) => {
                let b: [u8; 8] = v
                    .as_slice()
                    .try_into()
                    .map_err(|_| format!("the value under {key:?} is {} bytes, not a counter's 8", v.len()))?;
                i64::from_le_bytes(b)
            }
        };
        let sum = now
            .checked_add(delta)
            .ok_or_else(|| format!("the counter under {key:?} would overflow"))?;
        Self::put(&mut inner, self.max_bytes, key, sum.to_le_bytes().to_vec())?;
        Ok(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bounds on keys and bytes; a counter adds in one step and refuses a
    /// value that is not one.
    #[test]
    fn the_store_is_bounded_and_counts() {
        let s = PluginStore::new(64);
        assert_eq!(s.add("used/a", 5), Ok(5));
        assert_eq!(s.add("used/a", -2), Ok(3));
        s.set("x", vec![1, 2]).unwrap();
        assert!(s.add("x", 1).unwrap_err().contains("not a counter"));
        assert!(s.set("big", vec![0; 64]).unwrap_err().contains("over its limit of 64"));
        assert!(s.set(&"k".repeat(2000), vec![]).is_err());
        assert_eq!(s.keys("used/"), ["used/a"]);
        assert!(s.remove("x"));
        assert!(!s.remove("x"));
        assert_eq!(s.bytes(), "used/a".len() + 8);
        s.clear();
        assert!(s.is_empty());
        assert_eq!(s.bytes(), 0);
    }

    /// A new version empties the store unless it keeps it; the same
    /// version adopted again (another profile's slot) keeps it.
    #[test]
    fn a_new_version_starts_empty_unless_it_keeps_the_state() {
        let s = PluginStore::new(1024);
        s.adopt("v1", false);
        s.set("k", vec![1]).unwrap();
        s.adopt("v1", false);
        assert_eq!(s.get("k"), Some(vec![1]), "the same version");
        s.adopt("v2", true);
        assert_eq!(s.get("k"), Some(vec![1]), "kept");
        s.adopt("v3", false);
        assert!(s.is_empty(), "a version that does not keep it");
    }
}
