//! A loaded plugin version and the slot that makes it a `core` plugin,
//! swapped atomically when a new version is loaded.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use serde::Deserialize;
use wasmsched_core::framework::{Code, CycleState, Points, Status};
use wasmsched_core::{NodeInfo, Plugin, PodInfo, Snapshot};
use wasmtime::component::Resource;
use wasmtime::{Store, StoreLimitsBuilder, Trap};

use crate::LoadError;
use crate::engine::{Compiled, EPOCH_TICK};
use crate::host::exports::wasmsched::plugin::plugin as guest;
use crate::host::{HostState, SchedulerPlugin};

/// What happens when a plugin call fails (error, trap, timeout, out of memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum FailurePolicy {
    /// Filter: the nodes of the call are infeasible with the reason
    /// `plugin X: <error>`; Score: the scheduling attempt fails and the pod is
    /// retried with backoff.
    #[default]
    #[serde(rename = "fail", alias = "Fail")]
    Fail,
    /// The plugin is skipped for that pod; the error is logged.
    #[serde(rename = "ignore", alias = "Ignore")]
    Ignore,
}

/// Limits and policy of one plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Deadline of one call.
    pub timeout: std::time::Duration,
    /// Linear memory cap of one instance, in bytes.
    pub memory_bytes: usize,
    /// Failure policy.
    pub failure_policy: FailurePolicy,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout: std::time::Duration::from_millis(10),
            memory_bytes: 64 << 20,
            failure_policy: FailurePolicy::Fail,
        }
    }
}

/// Counters of one plugin, across versions (for metrics).
#[derive(Debug, Default)]
pub struct PluginStats {
    /// Versions loaded.
    pub loads: AtomicU64,
    /// Versions rejected.
    pub load_errors: AtomicU64,
    /// Calls that trapped.
    pub traps: AtomicU64,
    /// Calls that ran past their deadline.
    pub timeouts: AtomicU64,
    /// Calls that ran out of memory.
    pub out_of_memory: AtomicU64,
    /// Calls that returned an error.
    pub errors: AtomicU64,
    /// Instances retired after a call because their linear memory had
    /// grown past three quarters of the cap (a fresh one serves the next
    /// call, so a guest whose heap only grows never runs out mid-call).
    pub retired: AtomicU64,
}

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallError {
    /// The guest returned an error.
    #[error("{0}")]
    Plugin(String),
    /// The call ran past its deadline.
    #[error("timed out after {0:?}")]
    Timeout(std::time::Duration),
    /// An instance hit its memory cap.
    #[error("out of memory (limit {0} MiB)")]
    OutOfMemory(usize),
    /// Any other trap.
    #[error("trapped: {0}")]
    Trap(String),
}

/// Most nodes in one Filter or Score call: a call's deadline bounds the work
/// of one batch, so a large cluster does not turn into one long call.
pub const MAX_BATCH: usize = 512;

struct Instance {
    store: Store<HostState>,
    bindings: SchedulerPlugin,
}

/// One version of a plugin, instantiated with its args. Instances are
/// pooled: a call takes one, and returns it unless it trapped.
pub struct Loaded {
    /// `metadata().name`.
    pub name: String,
    /// `metadata().version`.
    pub version: String,
    /// sha256 of the component file.
    pub sha256: String,
    /// The file it came from.
    pub file: String,
    /// Whether the compiled code came from the on-disk cache.
    pub cached: bool,
    points: guest::Points,
    compiled: Arc<Compiled>,
    args: String,
    limits: Limits,
    seed: u64,
    pool: Mutex<Vec<Instance>>,
    stats: Arc<PluginStats>,
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loaded")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("sha256", &self.sha256)
            .finish()
    }
}

/// The metadata a component reports, read without configuring it.
pub(crate) fn probe(compiled: &Compiled, limits: &Limits) -> Result<guest::PluginMetadata, LoadError> {
    let mut inst = instantiate(compiled, "?".into(), limits, 0).map_err(LoadError::Instantiate)?;
    init_deadline(&mut inst.store, limits);
    inst.bindings
        .wasmsched_plugin_plugin()
        .call_metadata(&mut inst.store)
        .map_err(|e| LoadError::Instantiate(classify(e, limits).to_string()))
}

fn instantiate(compiled: &Compiled, name: Arc<str>, limits: &Limits, seed: u64) -> Result<Instance, String> {
    let store_limits = StoreLimitsBuilder::new()
        .memory_size(limits.memory_bytes)
        .trap_on_grow_failure(true)
        .build();
    let mut store = Store::new(compiled.pre.engine(), HostState::new(name, store_limits, seed));
    store.limiter(|s| &mut s.limits);
    init_deadline(&mut store, limits);
    let bindings = compiled.pre.instantiate(&mut store).map_err(|e| format!("{e:#}"))?;
    Ok(Instance { store, bindings })
}

fn deadline(store: &mut Store<HostState>, limits: &Limits) {
    set_deadline(store, limits.timeout);
}

/// Instantiating and configuring a plugin happen off the scheduling path
/// and may take longer than a call (an interpreter's image initializes):
/// they get this much, at least.
pub const INIT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

fn init_deadline(store: &mut Store<HostState>, limits: &Limits) {
    set_deadline(store, limits.timeout.max(INIT_DEADLINE));
}

fn set_deadline(store: &mut Store<HostState>, d: std::time::Duration) {
    let ticks = d.as_nanos().div_ceil(EPOCH_TICK.as_nanos()) as u64 + 1;
    store.set_epoch_deadline(ticks);
}

fn classify(e: wasmtime::Error, limits: &Limits) -> CallError {
    if e.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
        return CallError::Timeout(limits.timeout);
    }
    let text = format!("{e:#}");
    if text.contains("forcing trap when growing memory") || text.contains("forcing a memory growth failure") {
        return CallError::OutOfMemory(limits.memory_bytes >> 20);
    }
    CallError::Trap(e.downcast_ref::<Trap>().map_or(text, |t| t.to_string()))
}

impl Loaded {
    /// Instantiates `compiled` and configures it with `args`; an error
    /// rejects the version.
    pub(crate) fn new(
        compiled: Arc<Compiled>,
        meta: &guest::PluginMetadata,
        file: String,
        args: String,
        limits: Limits,
        seed: u64,
        stats: Arc<PluginStats>,
    ) -> Result<Self, LoadError> {
        let loaded = Self {
            name: meta.name.clone(),
            version: meta.version.clone(),
            sha256: compiled.sha256.clone(),
            cached: compiled.cached,
            file,
            points: meta.points,
            compiled,
            args,
            limits,
            seed,
            pool: Mutex::new(Vec::new()),
            stats,
        };
        let inst = loaded.fresh().map_err(|e| match e {
            CallError::Plugin(m) => LoadError::Configure(m),
            other => LoadError::Instantiate(other.to_string()),
        })?;
        loaded.pool.lock().unwrap_or_else(|p| p.into_inner()).push(inst);
        Ok(loaded)
    }

    /// Whether the guest implements a point.
    pub fn implements(&self, p: guest::Points) -> bool {
        self.points.contains(p)
    }

    /// The plugin's counters (shared by its versions).
    pub fn stats(&self) -> &PluginStats {
        &self.stats
    }

    /// Size of the largest linear memory of an idle instance (after
    /// `configure` when nothing has run yet), if one is pooled.
    pub fn memory_bytes(&self) -> Option<usize> {
        let pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        pool.last().map(|i| i.store.data().limits.memory_bytes)
    }

    /// The points it implements, as names.
    pub fn point_names(&self) -> Vec<&'static str> {
        [
            (guest::Points::PRE_FILTER, "PreFilter"),
            (guest::Points::FILTER, "Filter"),
            (guest::Points::PRE_SCORE, "PreScore"),
            (guest::Points::SCORE, "Score"),
            (guest::Points::NORMALIZE_SCORE, "NormalizeScore"),
        ]
        .into_iter()
        .filter(|(p, _)| self.points.contains(*p))
        .map(|(_, n)| n)
        .collect()
    }

    fn fresh(&self) -> Result<Instance, CallError> {
        let mut inst =
            instantiate(&self.compiled, self.name.as_str().into(), &self.limits, self.seed).map_err(CallError::Trap)?;
        deadline(&mut inst.store, &self.limits);
        let plugin = inst.bindings.wasmsched_plugin_plugin();
        plugin
            .call_configure(&mut inst.store, &self.args)
            .map_err(|e| classify(e, &self.limits))?
            .map_err(CallError::Plugin)?;
        Ok(inst)
    }

    /// Runs `f` on a pooled instance with `pod` and `nodes` in view. A trap
    /// discards the instance (its state may be broken); the next call gets a
    /// fresh one.
    fn call<R>(
        &self,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        f: impl FnOnce(&guest::Guest, &mut Store<HostState>) -> wasmtime::Result<Result<R, String>>,
    ) -> Result<R, CallError> {
        let popped = self.pool.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut inst = match popped {
            Some(i) => i,
            None => self.fresh()?,
        };
        {
            let data = inst.store.data_mut();
            if !data.pod.as_ref().is_some_and(|p| Arc::ptr_eq(&p.object, &pod.object)) {
                data.pod = Some(Arc::new(pod.clone()));
            }
            data.nodes.clear();
            data.nodes.extend(nodes.iter().map(|n| Arc::clone(n)));
        }
        deadline(&mut inst.store, &self.limits);
        let result = f(inst.bindings.wasmsched_plugin_plugin(), &mut inst.store);
        inst.store.data_mut().nodes.clear();
        match result {
            Ok(r) => {
                // Garbage-collected guests (JavaScript, Python) and leaky
                // allocators only ever grow their memory; an instance near
                // the cap would fail a later call, so retire it now.
                if inst.store.data().limits.memory_bytes > self.limits.memory_bytes / 4 * 3 {
                    self.stats.retired.fetch_add(1, Ordering::Relaxed);
                } else {
                    self.pool.lock().unwrap_or_else(|p| p.into_inner()).push(inst);
                }
                r.map_err(|m| {
                    self.stats.errors.fetch_add(1, Ordering::Relaxed);
                    CallError::Plugin(m)
                })
            }
            Err(e) => {
                let err = classify(e, &self.limits);
                let counter = match err {
                    CallError::Timeout(_) => &self.stats.timeouts,
                    CallError::OutOfMemory(_) => &self.stats.out_of_memory,
                    _ => &self.stats.traps,
                };
                counter.fetch_add(1, Ordering::Relaxed);
                Err(err)
            }
        }
    }

    /// PreFilter.
    pub fn pre_filter(&self, pod: &PodInfo) -> Result<guest::Status, CallError> {
        self.call(pod, &[], |g, s| g.call_pre_filter(&mut *s, Resource::new_borrow(0)))
    }

    /// Filter over a batch: the rejections (indexes into `nodes`). Large
    /// batches go in calls of at most [`MAX_BATCH`] nodes, each with its own
    /// deadline.
    pub fn filter(&self, pod: &PodInfo, nodes: &[&Arc<NodeInfo>]) -> Result<Vec<guest::Rejection>, CallError> {
        let mut out = Vec::new();
        for (c, chunk) in nodes.chunks(MAX_BATCH).enumerate() {
            let rs = self.call(pod, chunk, |g, s| {
                g.call_filter(&mut *s, Resource::new_borrow(0), Resource::new_borrow(0))
            })?;
            out.extend(rs.into_iter().map(|mut r| {
                r.index += (c * MAX_BATCH) as u32;
                r
            }));
        }
        Ok(out)
    }

    /// PreScore.
    pub fn pre_score(&self, pod: &PodInfo, nodes: &[&Arc<NodeInfo>]) -> Result<guest::Status, CallError> {
        self.call(pod, nodes, |g, s| {
            g.call_pre_score(&mut *s, Resource::new_borrow(0), Resource::new_borrow(0))
        })
    }

    /// Score over a batch (in calls of at most [`MAX_BATCH`] nodes).
    pub fn score(&self, pod: &PodInfo, nodes: &[&Arc<NodeInfo>]) -> Result<Vec<i64>, CallError> {
        let mut out = Vec::with_capacity(nodes.len());
        for chunk in nodes.chunks(MAX_BATCH) {
            let scores = self.call(pod, chunk, |g, s| {
                g.call_score(&mut *s, Resource::new_borrow(0), Resource::new_borrow(0))
            })?;
            if scores.len() != chunk.len() {
                return Err(CallError::Plugin(format!(
                    "returned {} scores for {} nodes",
                    scores.len(),
                    chunk.len()
                )));
            }
            out.extend(scores);
        }
        Ok(out)
    }

    /// NormalizeScore.
    pub fn normalize(&self, pod: &PodInfo, scores: &[i64]) -> Result<Vec<i64>, CallError> {
        let out = self.call(pod, &[], |g, s| {
            g.call_normalize_score(&mut *s, Resource::new_borrow(0), scores)
        })?;
        if out.len() != scores.len() {
            return Err(CallError::Plugin(format!(
                "normalize-score returned {} scores for {}",
                out.len(),
                scores.len()
            )));
        }
        Ok(out)
    }
}

/// A plugin as the framework sees it: a stable name whose current version
/// is swapped when the file changes. Calls in flight keep the version they
/// started with.
pub struct PluginSlot {
    name: String,
    pub(crate) args: String,
    pub(crate) limits: Limits,
    points: Points,
    current: RwLock<Option<Arc<Loaded>>>,
    pub(crate) stats: Arc<PluginStats>,
}

impl std::fmt::Debug for PluginSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginSlot")
            .field("name", &self.name)
            .field("current", &self.current())
            .finish()
    }
}

fn status_of(s: guest::Status) -> Status {
    match s.code {
        guest::Code::Success => Status::success(),
        guest::Code::Skip => Status::new(Code::Skip, []),
        guest::Code::Unschedulable => Status::unschedulable(s.reason),
        guest::Code::UnschedulableAndUnresolvable => Status::unresolvable(s.reason),
    }
}

impl PluginSlot {
    pub(crate) fn new(
        name: String,
        args: String,
        limits: Limits,
        initial: Option<Arc<Loaded>>,
        stats: Arc<PluginStats>,
    ) -> Self {
        // Points are fixed for the framework's lifetime: those of the first
        // version, plus PreFilter/PreScore through which the slot skips the
        // points a later version (or no version) does not implement. With no
        // version yet, it may become a filter or a score plugin.
        let mut points = Points::PRE_FILTER.with(Points::PRE_SCORE);
        match &initial {
            Some(l) => {
                if l.implements(guest::Points::FILTER) || l.implements(guest::Points::PRE_FILTER) {
                    points = points.with(Points::FILTER);
                }
                if l.implements(guest::Points::SCORE) {
                    points = points.with(Points::SCORE);
                }
            }
            None => points = points.with(Points::FILTER).with(Points::SCORE),
        }
        Self {
            name,
            args,
            limits,
            points,
            current: RwLock::new(initial),
            stats,
        }
    }

    /// The version serving now, if any.
    pub fn current(&self) -> Option<Arc<Loaded>> {
        self.current.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(crate) fn swap(&self, new: Option<Arc<Loaded>>) -> Option<Arc<Loaded>> {
        std::mem::replace(&mut *self.current.write().unwrap_or_else(|p| p.into_inner()), new)
    }

    /// Counters.
    pub fn stats(&self) -> &PluginStats {
        &self.stats
    }

    fn failed(&self, pod: &PodInfo, point: &str, e: &CallError) {
        tracing::warn!(plugin = %self.name, pod = %pod.key, point, error = %e, policy = ?self.limits.failure_policy, "plugin call failed");
    }

    fn reason(&self, e: &CallError) -> String {
        format!("plugin {}: {e}", self.name)
    }
}

impl Plugin for PluginSlot {
    fn name(&self) -> &str {
        &self.name
    }

    fn points(&self) -> Points {
        self.points
    }

    fn pre_filter(&self, _: &mut CycleState, pod: &PodInfo, _: &Snapshot) -> Status {
        let Some(v) = self.current() else {
            return Status::new(Code::Skip, []);
        };
        if !v.implements(guest::Points::FILTER) {
            return Status::new(Code::Skip, []);
        }
        if !v.implements(guest::Points::PRE_FILTER) {
            return Status::success();
        }
        match v.pre_filter(pod) {
            Ok(s) => status_of(s),
            Err(e) => {
                self.failed(pod, "PreFilter", &e);
                // A failing plugin is an error (the pod is retried after
                // backoff, reason SchedulerError), not a misfit.
                match self.limits.failure_policy {
                    FailurePolicy::Fail => Status::error(self.reason(&e)),
                    FailurePolicy::Ignore => Status::new(Code::Skip, []),
                }
            }
        }
    }

    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let node = Arc::new(node.clone());
        let mut rejected = Vec::new();
        self.filter_nodes(state, pod, &[&node], &mut rejected);
        rejected.pop().map_or_else(Status::success, |(_, s)| s)
    }

    fn filter_nodes(
        &self,
        _: &CycleState,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        rejected: &mut Vec<(usize, Status)>,
    ) {
        let Some(v) = self.current() else { return };
        if !v.implements(guest::Points::FILTER) {
            return;
        }
        match v.filter(pod, nodes) {
            Ok(mut rs) => {
                rs.sort_by_key(|r| r.index);
                for r in rs {
                    if (r.index as usize) < nodes.len() && !matches!(r.code, guest::Code::Success | guest::Code::Skip) {
                        rejected.push((
                            r.index as usize,
                            status_of(guest::Status {
                                code: r.code,
                                reason: r.reason,
                            }),
                        ));
                    }
                }
            }
            Err(e) => {
                self.failed(pod, "Filter", &e);
                if self.limits.failure_policy == FailurePolicy::Fail && !nodes.is_empty() {
                    // An error, not a misfit: the cycle fails and the pod is
                    // retried after backoff (kube-scheduler's SchedulerError).
                    rejected.push((0, Status::error(self.reason(&e))));
                }
            }
        }
    }

    fn pre_score(&self, _: &mut CycleState, pod: &PodInfo, nodes: &[&Arc<NodeInfo>]) -> Status {
        let Some(v) = self.current() else {
            return Status::new(Code::Skip, []);
        };
        if !v.implements(guest::Points::SCORE) {
            return Status::new(Code::Skip, []);
        }
        if !v.implements(guest::Points::PRE_SCORE) {
            return Status::success();
        }
        match v.pre_score(pod, nodes) {
            Ok(s) => status_of(s),
            Err(e) => {
                self.failed(pod, "PreScore", &e);
                match self.limits.failure_policy {
                    FailurePolicy::Fail => Status::error(self.reason(&e)),
                    FailurePolicy::Ignore => Status::new(Code::Skip, []),
                }
            }
        }
    }

    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let node = Arc::new(node.clone());
        let mut out = [0];
        self.score_nodes(state, pod, &[&node], &mut out)?;
        Ok(out[0])
    }

    fn score_nodes(
        &self,
        _: &CycleState,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        out: &mut [i64],
    ) -> Result<(), Status> {
        let Some(v) = self.current() else {
            out.fill(0);
            return Ok(());
        };
        if !v.implements(guest::Points::SCORE) {
            out.fill(0);
            return Ok(());
        }
        let normalized = v.implements(guest::Points::NORMALIZE_SCORE);
        let result = v.score(pod, nodes).and_then(|scores| {
            if !normalized && let Some((i, s)) = scores.iter().enumerate().find(|(_, s)| !(0..=100).contains(*s)) {
                return Err(CallError::Plugin(format!(
                    "score {s} for node {} is outside 0..=100 (implement normalize-score to map raw scores)",
                    nodes[i].name()
                )));
            }
            Ok(scores)
        });
        match result {
            Ok(scores) => {
                out.copy_from_slice(&scores);
                Ok(())
            }
            Err(e) => {
                self.failed(pod, "Score", &e);
                out.fill(0);
                match self.limits.failure_policy {
                    FailurePolicy::Fail => Err(Status::error(self.reason(&e))),
                    FailurePolicy::Ignore => Ok(()),
                }
            }
        }
    }

    fn normalize_scores(&self, _: &CycleState, pod: &PodInfo, scores: &mut [i64]) -> Status {
        let Some(v) = self.current() else {
            return Status::success();
        };
        if !v.implements(guest::Points::NORMALIZE_SCORE) || !v.implements(guest::Points::SCORE) {
            return Status::success();
        }
        let result = v
            .normalize(pod, scores)
            .and_then(|out| match out.iter().find(|s| !(0..=100).contains(*s)) {
                Some(s) => Err(CallError::Plugin(format!("normalized score {s} is outside 0..=100"))),
                None => Ok(out),
            });
        match result {
            Ok(out) => {
                scores.copy_from_slice(&out);
                Status::success()
            }
            Err(e) => {
                self.failed(pod, "NormalizeScore", &e);
                scores.fill(0);
                match self.limits.failure_policy {
                    FailurePolicy::Fail => Status::error(self.reason(&e)),
                    FailurePolicy::Ignore => Status::success(),
                }
            }
        }
    }
}
