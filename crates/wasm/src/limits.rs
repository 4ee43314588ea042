//! What a guest may take from the host, and the accounting that enforces
//! it. wasmtime caps nothing by default but what a store's limiter says, so
//! every instance gets a [`Limiter`] that caps, all memories together, the
//! plugin's linear memory; the number of memories, tables and core
//! instances; the elements of all tables together; and draws every byte it
//! grants from the plugin's [`Share`] of the host's [`Budget`], the total
//! every plugin instance of the process may hold.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use wasmtime::ResourceLimiter;

/// Linear memories one instance may define (components of every supported
/// language use a few: the guest's own, an adapter's).
pub const MAX_MEMORIES: usize = 16;
/// Tables one instance may define.
pub const MAX_TABLES: usize = 64;
/// Core instances one component instance may create (checked before the
/// component is compiled; see [`crate::shape`]).
pub use crate::shape::MAX_INSTANCES;
/// Elements of all tables of one instance together (each costs the host a
/// pointer; an interpreter's function table holds tens of thousands).
pub const MAX_TABLE_ELEMENTS: usize = 1 << 20;
/// Host memory one table element is counted as, against the budget.
const TABLE_ELEMENT_BYTES: usize = 8;
/// Bytes of arguments a guest may hand the host in one call (wasmtime's
/// "hostcall fuel", 128 MiB by default): more than any legitimate call of
/// the contract needs, far less than a plugin's memory cap.
pub const HOSTCALL_FUEL: usize = 1 << 20;

/// Which limit stopped a guest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitExceeded {
    /// The plugin's linear memory (all memories together).
    #[error("out of memory (limit {0} MiB)")]
    Memory(usize),
    /// The elements of its tables.
    #[error("table elements over the limit ({0})")]
    TableElements(usize),
    /// The host's total budget for plugin memory.
    #[error("the host's plugin memory budget ({0} MiB) is used up")]
    Budget(usize),
    /// The plugin's share of the budget (its instances together).
    #[error(
        "the plugin's share of the host's plugin memory budget is used up ({share} MiB: {budget} MiB among {plugins} plugins)"
    )]
    Share {
        /// The share, in MiB.
        share: usize,
        /// The budget, in MiB.
        budget: usize,
        /// Plugins the budget is divided among.
        plugins: usize,
    },
}

/// The host's total budget of guest memory (linear memory and tables of
/// every instance of every plugin), shared by all stores.
#[derive(Debug)]
pub struct Budget {
    limit: AtomicUsize,
    used: AtomicUsize,
    plugins: AtomicUsize,
    /// Plugins loaded per directory sharing this budget (the serving
    /// directory and the shadow directory): `plugins` is their sum.
    by_directory: std::sync::Mutex<std::collections::BTreeMap<u64, usize>>,
}

impl Budget {
    /// A budget of `limit` bytes, all of it one plugin's share until
    /// [`Budget::set_plugins`] divides it.
    pub fn new(limit: usize) -> Self {
        Self {
            limit: AtomicUsize::new(limit),
            used: AtomicUsize::new(0),
            plugins: AtomicUsize::new(1),
            by_directory: Default::default(),
        }
    }

    /// Divides the budget into equal shares among `n` plugins (the plugin
    /// directory sets it to the plugins it has loaded). A share that a
    /// plugin holds more of than a smaller new share allows is not taken
    /// back: the plugin cannot grow until its instances are replaced.
    pub fn set_plugins(&self, n: usize) {
        self.set_plugins_of(0, n);
    }

    /// [`Budget::set_plugins`] for one of several directories whose plugins
    /// share the budget (`directory`: any id of its own): the budget is
    /// divided among the plugins of all of them, so a shadow version draws
    /// from a share of its own, not from the serving version's.
    pub fn set_plugins_of(&self, directory: u64, n: usize) {
        let mut by = self.by_directory.lock().unwrap_or_else(|p| p.into_inner());
        by.insert(directory, n);
        self.plugins.store(by.values().sum::<usize>().max(1), Ordering::Relaxed);
    }

    /// Plugins the budget is divided among.
    pub fn plugins(&self) -> usize {
        self.plugins.load(Ordering::Relaxed)
    }

    /// One plugin's share, in bytes.
    pub fn share_limit(&self) -> usize {
        self.limit() / self.plugins()
    }

    /// The budget derived from the container's memory limit when there is
    /// one (half of it: the scheduler's own caches need the rest), else
    /// 2 GiB.
    pub fn default_limit() -> usize {
        container_memory_limit().map_or(2 << 30, |l| l / 2)
    }

    /// Bytes granted now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// The limit in bytes.
    pub fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    /// Sets the limit (configuration).
    pub fn set_limit(&self, bytes: usize) {
        self.limit.store(bytes, Ordering::Relaxed);
    }

    fn reserve(&self, n: usize) -> bool {
        reserve_within(&self.used, n, self.limit())
    }

    fn release(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }
}

/// Adds `n` to `used` unless that would pass `limit`.
fn reserve_within(used: &AtomicUsize, n: usize, limit: usize) -> bool {
    used.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |u| {
        u.checked_add(n).filter(|t| *t <= limit)
    })
    .is_ok()
}

/// What every instance of one plugin (all its versions) holds of the
/// budget. Capped at [`Budget::share_limit`], so a plugin whose instances
/// grow without end runs out on its own, and never makes another plugin
/// fail mid-call because the budget is used up.
#[derive(Debug, Default)]
pub struct Share {
    used: AtomicUsize,
}

impl Share {
    /// Bytes the plugin's instances hold now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    fn reserve(&self, n: usize, limit: usize) -> bool {
        reserve_within(&self.used, n, limit)
    }

    fn release(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }
}

/// cgroup v2's `memory.max` (or v1's limit) of this process, if set.
pub(crate) fn container_memory_limit() -> Option<usize> {
    for path in [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ] {
        if let Ok(s) = std::fs::read_to_string(path) {
            // "max", or v1's "unlimited" (a huge number).
            if let Ok(v) = s.trim().parse::<u64>()
                && v < (1 << 50)
            {
                return usize::try_from(v).ok();
            }
        }
    }
    None
}

/// One instance's accounting.
pub struct Limiter {
    memory_cap: usize,
    /// Linear memory of the instance, all memories together, in bytes.
    pub memory_bytes: usize,
    /// Elements of all its tables.
    pub table_elements: usize,
    budget: Arc<Budget>,
    share: Arc<Share>,
    reserved: usize,
    /// The limit that stopped the last growth, if any.
    pub(crate) exceeded: Option<LimitExceeded>,
}

impl Limiter {
    /// An instance's accounting: `memory_cap` bytes of linear memory, drawn
    /// from the plugin's `share` of `budget`.
    pub fn new(memory_cap: usize, budget: Arc<Budget>, share: Arc<Share>) -> Self {
        Self {
            memory_cap,
            memory_bytes: 0,
            table_elements: 0,
            budget,
            share,
            reserved: 0,
            exceeded: None,
        }
    }

    /// Draws `bytes` the instance takes before any growth (its core
    /// instances' contexts, [`crate::shape`]) from the budget; refused when
    /// the budget cannot hold them.
    pub fn reserve_fixed(&mut self, bytes: usize) -> Result<(), LimitExceeded> {
        self.grant(bytes)
    }

    /// Gives back `bytes` drawn with [`Limiter::reserve_fixed`].
    pub fn give_back(&mut self, bytes: usize) {
        let bytes = bytes.min(self.reserved);
        self.share.release(bytes);
        self.budget.release(bytes);
        self.reserved -= bytes;
    }

    fn refuse(&mut self, e: LimitExceeded) -> wasmtime::Result<bool> {
        self.exceeded = Some(e.clone());
        Err(e.into())
    }

    /// Draws `bytes` from the plugin's share, then from the budget.
    fn grant(&mut self, bytes: usize) -> Result<(), LimitExceeded> {
        // With one plugin its share is the whole budget, which says so.
        let (share, plugins) = (self.budget.share_limit(), self.budget.plugins());
        if !self.share.reserve(bytes, if plugins > 1 { share } else { usize::MAX }) {
            return Err(LimitExceeded::Share {
                share: share >> 20,
                budget: self.budget.limit() >> 20,
                plugins,
            });
        }
        if !self.budget.reserve(bytes) {
            self.share.release(bytes);
            return Err(LimitExceeded::Budget(self.budget.limit() >> 20));
        }
        self.reserved += bytes;
        Ok(())
    }
}

impl Drop for Limiter {
    fn drop(&mut self) {
        self.share.release(self.reserved);
        self.budget.release(self.reserved);
    }
}

impl ResourceLimiter for Limiter {
    fn memory_growing(&mut self, current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        let delta = desired.saturating_sub(current);
        let total = self.memory_bytes.saturating_add(delta);
        if total > self.memory_cap {
            return self.refuse(LimitExceeded::Memory(self.memory_cap >> 20));
        }
        if let Err(e) = self.grant(delta) {
            return self.refuse(e);
        }
        self.memory_bytes = total;
        Ok(true)
    }

    fn table_growing(&mut self, current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        let delta = desired.saturating_sub(current);
        let total = self.table_elements.saturating_add(delta);
        if total > MAX_TABLE_ELEMENTS {
            return self.refuse(LimitExceeded::TableElements(MAX_TABLE_ELEMENTS));
        }
        if let Err(e) = self.grant(delta.saturating_mul(TABLE_ELEMENT_BYTES)) {
            return self.refuse(e);
        }
        self.table_elements = total;
        Ok(true)
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }
}
