//! What the admin port reports: health, readiness, metrics, plugins, the
//! shadow and the web view's board, shared by every task of the daemon
//! (and the extender) that changes them.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::metrics::Metrics;

/// The claims and volumes as the watchers keep them, for the binder to
/// read while it waits for a volume binding (kube-scheduler's
/// `checkBindings` reads its informers' caches).
pub(crate) type VolumeStores = (
    kube::runtime::reflector::Store<k8s_openapi::api::core::v1::PersistentVolumeClaim>,
    kube::runtime::reflector::Store<k8s_openapi::api::core::v1::PersistentVolume>,
);

/// The watches of a process, as readiness sees them.
#[derive(Debug, Default)]
struct Watches {
    /// Set once the watchers start.
    expected: Option<Vec<&'static str>>,
    listed: std::collections::HashSet<&'static str>,
    /// The last error of each watch that has not listed.
    errors: std::collections::HashMap<&'static str, String>,
    /// A process that keeps no cache.
    stateless: bool,
}

/// Shared state for the admin endpoints.
pub struct Status {
    /// Metrics.
    pub metrics: Metrics,
    /// The watches the caches are fed by, and how far each got.
    watches: Mutex<Watches>,
    /// See [`VolumeStores`].
    volume_stores: std::sync::OnceLock<VolumeStores>,
    /// Pods (by UID) whose binding waits for their volumes, and whether the
    /// pod watch saw them deleted since.
    volume_waits: Mutex<std::collections::HashMap<String, bool>>,
    /// False once the scheduling thread died.
    pub(crate) alive: AtomicBool,
    plugins: Option<Arc<wasmsched_wasm::PluginHost>>,
    origin: Instant,
    /// When the scheduling loop last turned (ms after `origin`).
    heartbeat: AtomicU64,
    /// When a binding request last ended (ms after `origin`).
    binder_heartbeat: AtomicU64,
    /// See [`Status::set_binder_step`].
    binder_step: Mutex<Duration>,
    /// How long the loop may go without turning (none: no loop to watch).
    stall_after: Mutex<Option<Duration>>,
    /// Set when the daemon starts to stop: tasks ending after that are not deaths.
    pub(crate) stopping: AtomicBool,
    /// Tasks the daemon depends on that died, and how.
    dead: Mutex<Vec<String>>,
    /// Woken when a task dies.
    pub(crate) death: tokio::sync::Notify,
    /// The shadow, when one is configured.
    pub(crate) shadow: std::sync::OnceLock<Arc<crate::shadow::Shadow>>,
    /// What the web view shows, published by the scheduling thread while
    /// the page is open.
    pub web: crate::web::Board,
}

impl Status {
    /// The status of a process serving `plugins`.
    pub fn new(plugins: Option<Arc<wasmsched_wasm::PluginHost>>) -> Self {
        Self {
            metrics: Metrics::default(),
            watches: Mutex::new(Watches::default()),
            volume_stores: std::sync::OnceLock::new(),
            volume_waits: Mutex::new(std::collections::HashMap::new()),
            alive: AtomicBool::new(true),
            plugins,
            origin: Instant::now(),
            heartbeat: AtomicU64::new(0),
            binder_heartbeat: AtomicU64::new(0),
            binder_step: Mutex::new(Duration::ZERO),
            stall_after: Mutex::new(None),
            stopping: AtomicBool::new(false),
            dead: Mutex::new(Vec::new()),
            death: tokio::sync::Notify::new(),
            shadow: std::sync::OnceLock::new(),
            web: crate::web::Board::default(),
        }
    }

    /// The scheduling loop turned (it is not stuck).
    pub(crate) fn turned(&self) {
        let ms = u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.heartbeat.store(ms, Ordering::Relaxed);
    }

    /// A binding request started or ended, or the binder paused before a
    /// retry.
    pub(crate) fn binder_moved(&self) {
        let ms = u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.binder_heartbeat.store(ms, Ordering::Relaxed);
    }

    /// The scheduling loop waits for the binder, which is behind: that is
    /// progress as long as binding requests keep ending (a slow admission
    /// webhook), not when none has for the stall bound (a wedged binder).
    pub(crate) fn waiting_on_binder(&self) {
        let Some(after) = *self.stall_after.lock().unwrap_or_else(|p| p.into_inner()) else {
            return;
        };
        // The binder marks each request's start and end and each pause
        // between retries, so a moving binder marks at least every
        // request timeout (or pause).
        let bound = after.max(*self.binder_step.lock().unwrap_or_else(|p| p.into_inner()));
        let last = Duration::from_millis(self.binder_heartbeat.load(Ordering::Relaxed));
        if self.origin.elapsed().saturating_sub(last) <= bound {
            self.turned();
        }
    }

    /// The longest a moving binder goes without a mark: its request
    /// timeout, or its longest pause between retries.
    pub(crate) fn set_binder_step(&self, step: Duration) {
        *self.binder_step.lock().unwrap_or_else(|p| p.into_inner()) = step;
    }

    /// Watches the scheduling loop: unhealthy when it has not turned for `after`.
    pub(crate) fn watch_loop(&self, after: Duration) {
        self.turned();
        *self.stall_after.lock().unwrap_or_else(|p| p.into_inner()) = Some(after);
    }

    /// A task the daemon depends on died (`how`: it ended, or panicked).
    pub(crate) fn task_died(&self, task: &str, how: &str) {
        tracing::error!(task, how, "a task the scheduler depends on died; stopping");
        self.dead
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(format!("the {task} task {how}"));
        self.death.notify_one();
    }

    /// Why the process is not healthy: the scheduling thread died, a task
    /// it depends on died, or its loop has not turned within the bound.
    pub fn health(&self) -> Result<(), String> {
        if !self.alive.load(Ordering::Relaxed) {
            return Err("the scheduling thread died".into());
        }
        if let Some(d) = self.dead.lock().unwrap_or_else(|p| p.into_inner()).first() {
            return Err(d.clone());
        }
        if let Some(after) = *self.stall_after.lock().unwrap_or_else(|p| p.into_inner()) {
            let last = Duration::from_millis(self.heartbeat.load(Ordering::Relaxed));
            let since = self.origin.elapsed().saturating_sub(last);
            if since > after {
                return Err(format!(
                    "the scheduling loop has not turned for {}s (stuck; bound {}s)",
                    since.as_secs(),
                    after.as_secs()
                ));
            }
        }
        Ok(())
    }

    /// Marks every cache synced (a process that keeps none: a stateless
    /// extender).
    pub(crate) fn mark_synced(&self) {
        self.watches.lock().unwrap_or_else(|p| p.into_inner()).stateless = true;
    }

    /// Sets the stores the binder reads claims and volumes from.
    pub(crate) fn set_volume_stores(
        &self,
        claims: kube::runtime::reflector::Store<k8s_openapi::api::core::v1::PersistentVolumeClaim>,
        volumes: kube::runtime::reflector::Store<k8s_openapi::api::core::v1::PersistentVolume>,
    ) {
        let _ = self.volume_stores.set((claims, volumes));
    }

    /// The stores of claims and volumes (none: no watchers, read the API).
    pub(crate) fn volume_stores(&self) -> Option<&VolumeStores> {
        self.volume_stores.get()
    }

    /// The binding of the pod `uid` waits for its volumes: its deletion is
    /// noted from now on ([`Status::pod_gone`]) until [`Status::volumes_done`].
    pub(crate) fn volumes_wait(&self, uid: &str) {
        self.volume_waits
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(uid.to_owned(), false);
    }

    /// The pod watch saw the pod `uid` deleted.
    pub(crate) fn pod_gone(&self, uid: &str) {
        if let Some(gone) = self.volume_waits.lock().unwrap_or_else(|p| p.into_inner()).get_mut(uid) {
            *gone = true;
        }
    }

    /// Whether the pod `uid`, waiting for its volumes, was deleted.
    pub(crate) fn volumes_pod_gone(&self, uid: &str) -> bool {
        self.volume_waits
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(uid)
            .copied()
            .unwrap_or(false)
    }

    /// The binding of the pod `uid` no longer waits.
    pub(crate) fn volumes_done(&self, uid: &str) {
        self.volume_waits.lock().unwrap_or_else(|p| p.into_inner()).remove(uid);
    }

    /// The watches a cycle needs; each must list once before the process
    /// is ready.
    pub(crate) fn expect_watches(&self, kinds: &[&'static str]) {
        let mut w = self.watches.lock().unwrap_or_else(|p| p.into_inner());
        w.expected = Some(kinds.to_vec());
    }

    /// The watch of `kind` listed (its cache holds the cluster's objects).
    pub(crate) fn watch_listed(&self, kind: &'static str) {
        let mut w = self.watches.lock().unwrap_or_else(|p| p.into_inner());
        w.listed.insert(kind);
        w.errors.remove(kind);
    }

    /// The watch of `kind` failed with `error` (it retries with backoff).
    pub(crate) fn watch_failed(&self, kind: &'static str, error: &str) {
        let mut w = self.watches.lock().unwrap_or_else(|p| p.into_inner());
        if !w.listed.contains(kind) {
            let mut e = error.to_owned();
            e.truncate(e.floor_char_boundary(512));
            w.errors.insert(kind, e);
        }
    }

    /// Why the process is not ready: each watch that has not listed yet,
    /// with its last error. Empty: ready.
    pub fn not_ready(&self) -> Vec<String> {
        let w = self.watches.lock().unwrap_or_else(|p| p.into_inner());
        if w.stateless {
            return Vec::new();
        }
        let Some(expected) = &w.expected else {
            return vec!["the watches have not started".into()];
        };
        expected
            .iter()
            .filter(|k| !w.listed.contains(*k))
            .map(|k| match w.errors.get(k) {
                Some(e) => format!("the {k} watch has not listed: {e}"),
                None => format!("the {k} watch has not listed yet"),
            })
            .collect()
    }

    /// Ready: every watch a cycle needs listed once (plugins are judged
    /// apart: [`Status::missing_plugins`]).
    pub fn ready(&self) -> bool {
        self.not_ready().is_empty()
    }

    /// The WebAssembly plugin host, if plugins are configured.
    pub(crate) fn plugins(&self) -> Option<&Arc<wasmsched_wasm::PluginHost>> {
        self.plugins.as_ref()
    }

    /// Plugins the profiles enable that are not loaded, with why, and
    /// whether their failure policy is `fail` (their pods cannot be placed).
    pub fn missing_plugins(&self) -> Vec<(String, bool)> {
        let Some(host) = &self.plugins else {
            return Vec::new();
        };
        let mut out: Vec<(String, bool)> = host
            .slots()
            .iter()
            .filter_map(|s| {
                s.not_loaded()
                    .map(|why| (why, s.failure_policy() == wasmsched_wasm::FailurePolicy::Fail))
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Healthy: see [`Status::health`].
    pub fn healthy(&self) -> bool {
        self.health().is_ok()
    }

    /// The metrics text.
    pub fn metrics_text(&self) -> String {
        self.metrics.render(self.plugins.as_deref(), self.shadow())
    }

    /// The shadow, when one is configured.
    pub fn shadow(&self) -> Option<&crate::shadow::Shadow> {
        self.shadow.get().map(|s| &**s)
    }
}
