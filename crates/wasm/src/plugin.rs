//! A loaded plugin version and the slot that makes it a `core` plugin,
//! swapped atomically when a new version is loaded.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use serde::Deserialize;
use wasmsched_core::events::{Action, Change, ClusterEvent, QueueingHint, Resource};
use wasmsched_core::framework::{Code, CycleState, Points, Status};
use wasmsched_core::node::NodeRow;
use wasmsched_core::{NodeInfo, Plugin, PodInfo, Snapshot};
use wasmtime::{Store, Trap};

use crate::LoadError;
use crate::engine::{Compiled, EPOCH_TICK};
use crate::host::exports::wasmsched::plugin::plugin as guest;
use crate::host::{Bindings, DeadlineExceeded, HostState};
use crate::limits::{HOSTCALL_FUEL, LimitExceeded};
use crate::text::{MAX_ERROR_BYTES, MAX_REASON_BYTES, guest_text};

thread_local! {
    /// Calls on this thread leave no mark on their plugin's failure record.
    static OFF_THE_RECORD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with the plugin calls it makes on this thread kept out of each
/// plugin's failure record: they neither start nor end a back-off. A
/// decision explained again for a person (the web view) runs the serving
/// versions, and a plugin failing there must not make live cycles skip it.
pub fn off_the_record<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            OFF_THE_RECORD.set(self.0);
        }
    }
    let _restore = Restore(OFF_THE_RECORD.replace(true));
    f()
}

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

impl Limits {
    /// How long loading an instance (start and `configure`) may take off
    /// the scheduling path: [`INIT_DEADLINE`], or the call deadline if longer.
    pub fn load_deadline(&self) -> std::time::Duration {
        self.timeout.max(INIT_DEADLINE)
    }
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
    /// Calls stopped by another limit of the host (table elements, memory
    /// budget, the size of a host call's input).
    pub limits: AtomicU64,
    /// Log lines of the plugin dropped by the rate limit.
    pub logs_dropped: AtomicU64,
    /// Whether a version read live metrics (the pods it rejects are then
    /// retried when metrics refresh).
    pub reads_metrics: std::sync::atomic::AtomicBool,
    /// Calls not made because the plugin was backing off after failing
    /// repeatedly (its failure policy applied).
    pub skipped_backing_off: AtomicU64,
    pub(crate) log_limit: crate::host::LogLimit,
    /// Instances retired after a call because their linear memory had
    /// grown past three quarters of the cap (a fresh one serves the next
    /// call, so a guest whose heap only grows never runs out mid-call).
    pub retired: AtomicU64,
    /// What its instances hold of the host's memory budget.
    pub share: Arc<crate::limits::Share>,
    /// The plugin's store (contract 0.7's `state`), shared by its slots
    /// (one per profile) and kept across its versions.
    pub(crate) store: std::sync::OnceLock<Arc<crate::state::PluginStore>>,
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
    /// An instance hit another limit of the host (table elements, the
    /// host's memory budget, the size of a host call's input).
    #[error("{0}")]
    Limit(String),
    /// Any other trap.
    #[error("trapped: {0}")]
    Trap(String),
    /// Not called: the plugin failed repeatedly and backs off.
    #[error("not called: backing off for {wait:?} after {failures} consecutive failures (last: {last})")]
    BackingOff {
        /// Consecutive failures.
        failures: u32,
        /// What is left of the back-off.
        wait: std::time::Duration,
        /// The last failure.
        last: String,
    },
}

/// A Filter call's rejections, checked against its own batch before they
/// are shifted to the whole list (where a wrong index could name another
/// call's node): at most one per node, each index in the batch and named
/// once. Checked before anything is made of them, so a flood costs the host
/// one pass over what the guest returned.
fn check_rejections(rs: Vec<guest::Rejection>, batch: usize) -> Result<Vec<guest::Rejection>, String> {
    if rs.len() > batch {
        return Err(format!(
            "filter returned {} rejections for a batch of {batch} nodes (at most one per node)",
            rs.len()
        ));
    }
    let mut seen = vec![false; batch];
    for r in &rs {
        let i = r.index as usize;
        match seen.get_mut(i) {
            None => {
                return Err(format!(
                    "filter returned a rejection for node index {i} of a batch of {batch}"
                ));
            }
            Some(true) => return Err(format!("filter rejected node index {i} twice")),
            Some(s) => *s = true,
        }
    }
    Ok(rs)
}

/// A verdict's reason as it may reach a pod's condition ([`crate::text`]).
fn truncate_reason(r: String) -> String {
    guest_text(&r, MAX_REASON_BYTES)
}

/// A plugin's error as it may reach a log and a pod's condition.
fn plugin_error(m: String) -> CallError {
    CallError::Plugin(guest_text(&m, MAX_ERROR_BYTES))
}

/// Most nodes in one Filter or Score call: a call's deadline bounds the work
/// of one batch, so a large cluster does not turn into one long call.
pub const MAX_BATCH: usize = 512;

/// Most metric sources a plugin may declare (more refuses the version).
pub const MAX_METRIC_SOURCES: usize = 64;

/// Longest name of a metric source a plugin may declare.
pub const MAX_SOURCE_NAME_BYTES: usize = 256;

struct Instance {
    store: Store<HostState>,
    bindings: Bindings,
}

/// Failures (errors, traps, timeouts, limits) of a plugin version and the
/// back-off they earned: from the third in a row, or the third among its
/// last [`RECENT_CALLS`] calls (a plugin that fails every other call), the
/// plugin is not called for 1 s, doubling to 60 s while it keeps failing,
/// and its failure policy applies at once.
#[derive(Debug, Default)]
struct Failures {
    consecutive: u32,
    /// The outcomes of the last calls, one bit each (1: failed), newest lowest.
    recent: u16,
    /// Back-offs since the plugin last went [`RECENT_CALLS`] calls without
    /// failing.
    backoffs: u32,
    until: Option<std::time::Instant>,
    last: String,
}

/// Calls whose failures count toward a back-off.
pub const RECENT_CALLS: u32 = 10;

/// Instances kept ready per plugin version: as many as calls that may run
/// at once (one per scheduling worker, a worker per core), at most 16. The
/// pool never holds more: an instance made on the scheduling path while
/// every pooled one was busy is dropped after its call.
pub fn warm_instances() -> usize {
    // Asked once: the standard library reads the cgroup's CPU quota from
    // /proc and /sys on every call, which cost a plugin call ~15 µs when
    // asked per call.
    static WARM: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *WARM.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 16))
}

/// Failures in a row before a plugin backs off.
pub const BACKOFF_AFTER: u32 = 3;
/// Longest back-off.
pub const MAX_BACKOFF: std::time::Duration = std::time::Duration::from_secs(60);

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
    /// Size of the component (decompressed, for a `.wasm.gz`), in bytes.
    pub component_bytes: usize,
    /// Whether the compiled code came from the on-disk cache.
    pub cached: bool,
    /// The compiler of the code it runs (baseline until Cranelift's code
    /// replaces it, for a big component in a scheduler).
    pub tier: crate::Tier,
    /// The minor of the contract it was built against (`0.1` to `0.5`).
    pub contract: &'static str,
    /// The language it was written in, when the component says
    /// (`Rust`, `Go`, `Python`, ...).
    pub language: Option<String>,
    /// The cluster changes it registered for (none: every change).
    pub events: Option<Vec<ClusterEvent>>,
    points: guest::Points,
    compiled: Arc<Compiled>,
    args: String,
    limits: Limits,
    seed: u64,
    pool: Mutex<Vec<Instance>>,
    stats: Arc<PluginStats>,
    failures: Mutex<Failures>,
    /// An instance was discarded: make a spare off the scheduling path.
    needs_spare: std::sync::atomic::AtomicBool,
    refilling: std::sync::atomic::AtomicBool,
    /// The metric sources it declares (contract 0.4 on; none before).
    metric_sources: Option<Vec<String>>,
    /// Its Score last returned packed scores (contract 0.5): NormalizeScore
    /// gets them packed too.
    packed_scores: std::sync::atomic::AtomicBool,
    /// It keeps the store of the version it replaces (contract 0.7).
    pub keep_state: bool,
    /// The plugin's store, which its slot hands every version.
    store: std::sync::OnceLock<Arc<crate::state::PluginStore>>,
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

/// A guest's event registration, in the engine's terms.
/// A plugin's registrations, folded to the few that differ: duplicates
/// dropped, and one whose actions another of the same resource covers. A
/// plugin's metadata may list a hundred thousand; they are scanned for every
/// pending pod on every change of the cluster.
fn fold_events(es: impl Iterator<Item = ClusterEvent>) -> Vec<ClusterEvent> {
    // Distinct, in the order declared.
    let mut seen = std::collections::HashSet::new();
    let distinct: Vec<ClusterEvent> = es.filter(|e| seen.insert((e.resource, e.action))).collect();
    let mut by_resource: std::collections::HashMap<Resource, Vec<Action>> = std::collections::HashMap::new();
    for e in &distinct {
        by_resource.entry(e.resource).or_default().push(e.action);
    }
    distinct
        .into_iter()
        .filter(|e| {
            !by_resource[&e.resource]
                .iter()
                .any(|&o| o != e.action && o.contains(e.action))
        })
        .collect()
}

/// What a call sees of its cycle beside the pod and the nodes: the
/// snapshot (pod views, metrics), the storage and device objects
/// (`pod.claims`, `nodes.devices`) and what DynamicResources allocated
/// for the pod on each node (`nodes.allocation`).
#[derive(Clone, Default)]
pub struct CycleView<'a> {
    /// The cycle's snapshot (none: pod views and metrics fail).
    pub snapshot: Option<&'a Arc<Snapshot>>,
    /// The cluster's storage and device objects.
    pub storage: Option<&'a Arc<wasmsched_core::storage::Storage>>,
    /// DynamicResources' allocations by node, this cycle.
    pub allocations: Option<wasmsched_core::plugins::dynamic_resources::NodeAllocations>,
    /// What plugins keep for the pod's cycle (contract 0.7's `cycle-get`).
    pub data: Option<&'a Arc<wasmsched_core::framework::PluginData>>,
    /// The pods waiting at Permit.
    pub waiting: Option<&'a Arc<wasmsched_core::framework::WaitingPods>>,
}

impl<'a> CycleView<'a> {
    /// What a scheduling cycle's state holds.
    pub fn of(state: &'a CycleState) -> Self {
        let snapshot = state.snapshot();
        Self {
            snapshot,
            storage: snapshot.map(|s| &s.storage),
            allocations: wasmsched_core::plugins::dynamic_resources::allocations(state),
            data: Some(state.plugin_data()),
            waiting: state.waiting(),
        }
    }

    /// A snapshot alone (its devices, no allocations).
    pub fn snapshot(snapshot: Option<&'a Arc<Snapshot>>) -> Self {
        Self {
            snapshot,
            storage: snapshot.map(|s| &s.storage),
            ..Self::default()
        }
    }
}

fn cluster_event(e: &guest::ClusterEvent) -> ClusterEvent {
    use guest::EventActions as A;
    let resource = match e.resource {
        guest::EventResource::Node => Resource::Node,
        guest::EventResource::Pod => Resource::AssignedPod,
        guest::EventResource::Namespace => Resource::Namespace,
        guest::EventResource::ResourceClaim => Resource::ResourceClaim,
        guest::EventResource::ResourceSlice => Resource::ResourceSlice,
        guest::EventResource::DeviceClass => Resource::DeviceClass,
    };
    let action = [
        (A::ADD, Action::ADD),
        (A::DELETE, Action::DELETE),
        (A::UPDATE, Action::UPDATE),
        (A::UPDATE_NODE_ALLOCATABLE, Action::UPDATE_NODE_ALLOCATABLE),
        (A::UPDATE_NODE_LABEL, Action::UPDATE_NODE_LABEL),
        (A::UPDATE_NODE_TAINT, Action::UPDATE_NODE_TAINT),
        (A::UPDATE_NODE_CONDITION, Action::UPDATE_NODE_CONDITION),
        (A::UPDATE_NODE_ANNOTATION, Action::UPDATE_NODE_ANNOTATION),
        (A::UPDATE_POD_LABEL, Action::UPDATE_POD_LABEL),
        (A::UPDATE_POD_SCALE_DOWN, Action::UPDATE_POD_SCALE_DOWN),
        (A::UPDATE_POD_TOLERATION, Action::UPDATE_POD_TOLERATION),
    ]
    .into_iter()
    .filter(|(a, _)| e.actions.contains(*a))
    .fold(Action::NONE, |acc, (_, b)| acc | b);
    ClusterEvent { resource, action }
}

/// Longest plugin name: one a profile's configuration can name.
pub const MAX_NAME_BYTES: usize = 63;

/// Longest plugin version.
pub const MAX_VERSION_BYTES: usize = 64;

/// A plugin's name and version reach logs, metrics, the web view and what
/// `plugin check` and `plugin diff` print: a name is what a profile can
/// name (letters, digits, `-`, `_`, `.`), a version what a release is
/// called (also `+`); anything else refuses the component, shown escaped
/// and cut.
fn check_metadata(meta: &guest::PluginMetadata) -> Result<(), LoadError> {
    let ok = |s: &str, max: usize, extra: &[u8]| {
        !s.is_empty()
            && s.len() <= max
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.') || extra.contains(&b))
    };
    if !ok(&meta.name, MAX_NAME_BYTES, &[]) {
        return Err(LoadError::Invalid(format!(
            "metadata().name \"{}\" ({} bytes) is not a plugin name: 1 to {MAX_NAME_BYTES} letters, digits, '-', '_' or '.'",
            guest_text(&meta.name, 64),
            meta.name.len()
        )));
    }
    if !ok(&meta.version, MAX_VERSION_BYTES, b"+") {
        return Err(LoadError::Invalid(format!(
            "plugin {}: metadata().version \"{}\" ({} bytes) is not a version: 1 to {MAX_VERSION_BYTES} letters, digits, '.', '-', '_' or '+'",
            meta.name,
            guest_text(&meta.version, 64),
            meta.version.len()
        )));
    }
    Ok(())
}

/// The metadata a component reports, read without configuring it.
pub(crate) fn probe(compiled: &Compiled, limits: &Limits) -> Result<guest::PluginMetadata, LoadError> {
    let within = limits.load_deadline();
    let mut inst = instantiate(compiled, "?".into(), limits, 0, within, Arc::default())
        .map_err(|e| LoadError::Instantiate(e.to_string()))?;
    // `metadata` runs within what the start left of `within`.
    let meta = inst
        .bindings
        .metadata(&mut inst.store)
        .map_err(|e| LoadError::Instantiate(classify(e, limits, within).to_string()))?;
    check_metadata(&meta)?;
    // A plugin that implements nothing would run as a silent no-op (a
    // misspelt method in an SDK that finds points by name does that).
    if meta.points == guest::Points::empty() {
        return Err(LoadError::Invalid(format!(
            "plugin {} implements no extension point (metadata().points is empty): implement at least one of PreFilter, Filter, PreScore, Score, NormalizeScore (check the names of its methods)",
            meta.name
        )));
    }
    Ok(meta)
}

/// Creates an instance (its start function runs within `within`).
fn instantiate(
    compiled: &Compiled,
    name: Arc<str>,
    limits: &Limits,
    seed: u64,
    within: std::time::Duration,
    stats: Arc<PluginStats>,
) -> Result<Instance, CallError> {
    let state = HostState::new(
        name,
        limits.memory_bytes,
        compiled.budget.clone(),
        seed,
        stats,
        compiled.epochs.clone(),
    );
    let mut store = Store::new(compiled.pre.engine(), state);
    // The core instances' contexts are allocated outside the limiter: draw
    // them from the budget first.
    store
        .data_mut()
        .limits
        .reserve_fixed(compiled.shape.bytes)
        .map_err(|e| CallError::Limit(e.to_string()))?;
    store.limiter(|s| &mut s.limits);
    store.set_hostcall_fuel(HOSTCALL_FUEL);
    set_deadline(&mut store, within);
    let bindings = compiled
        .pre
        .instantiate(&mut store)
        .map_err(|e| classify(e, limits, within))?;
    Ok(Instance { store, bindings })
}

/// Loading a version (instantiating and configuring it) happens off the
/// scheduling path and may take longer than a call (an interpreter's image
/// initializes): it gets this much, at least.
pub const INIT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

/// Sets both clocks of a call: the epoch deadline (guest code) and the
/// deadline host functions check.
fn set_deadline(store: &mut Store<HostState>, d: std::time::Duration) {
    let ticks = d.as_nanos().div_ceil(EPOCH_TICK.as_nanos()) as u64 + 1;
    store.set_epoch_deadline(ticks);
    let data = store.data_mut();
    let now = data.epochs.load(Ordering::Relaxed);
    data.deadline = Some(now + ticks);
}

/// What went wrong in a call that had `within` to run.
fn classify(e: wasmtime::Error, limits: &Limits, within: std::time::Duration) -> CallError {
    if e.downcast_ref::<Trap>() == Some(&Trap::Interrupt) || e.downcast_ref::<DeadlineExceeded>().is_some() {
        return CallError::Timeout(within);
    }
    match e.downcast_ref::<LimitExceeded>() {
        Some(LimitExceeded::Memory(mib)) => return CallError::OutOfMemory(*mib),
        Some(other) => return CallError::Limit(other.to_string()),
        None => {}
    }
    if let Some(crate::host::InputTooLarge(what)) = e.downcast_ref() {
        return CallError::Limit(what.clone());
    }
    let text = format!("{e:#}");
    if text.contains("fuel allocated for hostcalls has been exhausted") {
        return CallError::Limit(format!(
            "a host call's input is larger than the host takes ({} KiB)",
            crate::limits::HOSTCALL_FUEL >> 10
        ));
    }
    if text.contains("forcing trap when growing memory") || text.contains("forcing a memory growth failure") {
        return CallError::OutOfMemory(limits.memory_bytes >> 20);
    }
    // What failed, not where: wasmtime's backtrace names up to 20 frames
    // with names the guest chose.
    let what = match e.downcast_ref::<Trap>() {
        Some(t) => t.to_string(),
        None => e.root_cause().to_string(),
    };
    CallError::Trap(guest_text(&what, MAX_ERROR_BYTES))
}

impl Loaded {
    /// Instantiates `compiled` and configures it with `args`; an error
    /// rejects the version, as does a metric source it declares that
    /// `sources` (when given) lacks.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        compiled: Arc<Compiled>,
        meta: &guest::PluginMetadata,
        file: String,
        args: String,
        limits: Limits,
        seed: u64,
        stats: Arc<PluginStats>,
        sources: Option<&std::collections::BTreeSet<String>>,
    ) -> Result<Self, LoadError> {
        let mut loaded = Self {
            name: meta.name.clone(),
            version: meta.version.clone(),
            sha256: compiled.sha256.clone(),
            cached: compiled.cached,
            tier: compiled.tier,
            component_bytes: compiled.len,
            contract: compiled.pre.minor(),
            language: compiled.language.clone(),
            events: meta.events.as_ref().map(|es| fold_events(es.iter().map(cluster_event))),
            file,
            points: meta.points,
            compiled,
            args,
            limits,
            seed,
            pool: Mutex::new(Vec::new()),
            stats,
            failures: Mutex::default(),
            // Warm the pool off the scheduling path at first use.
            needs_spare: std::sync::atomic::AtomicBool::new(true),
            refilling: Default::default(),
            metric_sources: None,
            packed_scores: std::sync::atomic::AtomicBool::new(false),
            keep_state: meta.keep_state,
            store: std::sync::OnceLock::new(),
        };
        let within = loaded.limits.load_deadline();
        let mut inst = loaded.fresh(within).map_err(|e| match e {
            CallError::Plugin(m) => LoadError::Configure(m),
            other => LoadError::Instantiate(other.to_string()),
        })?;
        // What it reads, checked against what is configured (0.4 on).
        set_deadline(&mut inst.store, loaded.limits.timeout);
        let declared = inst
            .bindings
            .metric_sources(&mut inst.store)
            .map_err(|e| LoadError::Instantiate(format!("metric-sources: {}", classify(e, &loaded.limits, within))))?;
        // Every name it declares is checked below: more than the host reads,
        // or one too long to be a source's name, refuses the version rather
        // than leaving names out of the check.
        if let Some(names) = &declared {
            if names.len() > MAX_METRIC_SOURCES {
                return Err(LoadError::Configure(format!(
                    "metric-sources declares {} sources, more than the host reads ({MAX_METRIC_SOURCES})",
                    names.len()
                )));
            }
            if let Some(long) = names.iter().find(|n| n.len() > MAX_SOURCE_NAME_BYTES) {
                return Err(LoadError::Configure(format!(
                    "metric-sources declares a name of {} bytes, longer than a source's name may be ({MAX_SOURCE_NAME_BYTES}): {}",
                    long.len(),
                    guest_text(long, 64)
                )));
            }
        }
        loaded.metric_sources =
            declared.map(|names| names.iter().map(|n| guest_text(n, MAX_SOURCE_NAME_BYTES)).collect());
        if let (Some(declared), Some(known)) = (&loaded.metric_sources, sources)
            && let Some(missing) = declared.iter().find(|n| !known.contains(*n))
        {
            let defined = if known.is_empty() {
                "none is defined".to_owned()
            } else {
                format!("defined: {}", known.iter().cloned().collect::<Vec<_>>().join(", "))
            };
            return Err(LoadError::Configure(format!(
                "it reads metric source {missing:?} (its metric-sources, from its args), which metrics.sources does not define ({defined})"
            )));
        }
        loaded.pool.lock().unwrap_or_else(|p| p.into_inner()).push(inst);
        Ok(loaded)
    }

    /// The compiled component it instantiates.
    pub(crate) fn compiled(&self) -> &Arc<Compiled> {
        &self.compiled
    }

    /// What instantiating it costs the host before its code runs.
    pub fn shape(&self) -> crate::shape::Shape {
        self.compiled.shape
    }

    /// The metric sources it declares reading (none before contract 0.4).
    pub fn metric_sources(&self) -> Option<&[String]> {
        self.metric_sources.as_deref()
    }

    /// The limits it runs under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Whether the guest implements a point.
    pub fn implements(&self, p: guest::Points) -> bool {
        self.points.contains(p)
    }

    /// The plugin's counters (shared by its versions).
    pub fn stats(&self) -> &PluginStats {
        &self.stats
    }

    /// Linear memory of an idle instance, all memories together (after
    /// `configure` when nothing has run yet), if one is pooled.
    pub fn memory_bytes(&self) -> Option<usize> {
        let pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        pool.last().map(|i| i.store.data().limits.memory_bytes)
    }

    /// Table elements of an idle instance, all tables together.
    pub fn table_elements(&self) -> Option<usize> {
        let pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        pool.last().map(|i| i.store.data().limits.table_elements)
    }

    /// Instances pooled now.
    pub fn pooled(&self) -> usize {
        self.pool.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Warms the pool to [`warm_instances`] on a thread of its own (at nice
    /// 10) at first use and after an instance was discarded (trap,
    /// retirement), so calls do not instantiate on the scheduling path.
    pub(crate) fn ensure_spare(self: &Arc<Self>) {
        if !self.needs_spare.swap(false, Ordering::AcqRel) || self.refilling.swap(true, Ordering::AcqRel) {
            return;
        }
        let me = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name(format!("wasm-spare-{}", self.name))
            .spawn(move || {
                // Behind the scheduling workers: a plugin whose instances
                // keep failing must not take a core from the cycles.
                let _ = crate::engine::lower_priority();
                let within = me.limits.load_deadline();
                while me.pooled() < warm_instances() && me.backing_off().is_none() {
                    match me.fresh(within) {
                        Ok(inst) => me.pool.lock().unwrap_or_else(|p| p.into_inner()).push(inst),
                        Err(e) => {
                            me.failed(&e);
                            break;
                        }
                    }
                }
                me.refilling.store(false, Ordering::Release);
            });
        if spawned.is_err() {
            self.refilling.store(false, Ordering::Release);
        }
    }

    fn failed(&self, e: &CallError) {
        if OFF_THE_RECORD.get() {
            return;
        }
        let mut f = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        f.consecutive += 1;
        f.recent = ((f.recent << 1) | 1) & ((1 << RECENT_CALLS) - 1);
        f.last = e.to_string();
        if f.consecutive >= BACKOFF_AFTER || f.recent.count_ones() >= BACKOFF_AFTER {
            let exp = f.backoffs.min(6);
            f.backoffs += 1;
            let wait = (std::time::Duration::from_secs(1) * 2u32.pow(exp)).min(MAX_BACKOFF);
            f.until = Some(std::time::Instant::now() + wait);
        }
    }

    fn succeeded(&self) {
        if OFF_THE_RECORD.get() {
            return;
        }
        let mut f = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        f.consecutive = 0;
        f.recent = (f.recent << 1) & ((1 << RECENT_CALLS) - 1);
        if f.recent == 0 {
            f.backoffs = 0;
        }
        f.until = None;
    }

    fn backing_off(&self) -> Option<CallError> {
        let f = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let wait = f.until?.checked_duration_since(std::time::Instant::now())?;
        Some(CallError::BackingOff {
            failures: f.consecutive,
            wait,
            last: f.last.clone(),
        })
    }

    /// The points it implements, as names.
    pub fn point_names(&self) -> Vec<&'static str> {
        [
            (guest::Points::PRE_FILTER, "PreFilter"),
            (guest::Points::FILTER, "Filter"),
            (guest::Points::PRE_SCORE, "PreScore"),
            (guest::Points::SCORE, "Score"),
            (guest::Points::NORMALIZE_SCORE, "NormalizeScore"),
            (guest::Points::POST_FILTER, "PostFilter"),
            (guest::Points::RESERVE, "Reserve"),
            (guest::Points::PERMIT, "Permit"),
            (guest::Points::PRE_BIND, "PreBind"),
            (guest::Points::POST_BIND, "PostBind"),
        ]
        .into_iter()
        .filter(|(p, _)| self.points.contains(*p))
        .map(|(_, n)| n)
        .collect()
    }

    /// A new instance, configured; its start and `configure` run within `within`.
    fn fresh(&self, within: std::time::Duration) -> Result<Instance, CallError> {
        let mut inst = instantiate(
            &self.compiled,
            self.name.as_str().into(),
            &self.limits,
            self.seed,
            within,
            self.stats.clone(),
        )?;
        // `configure` runs within what the start left of `within`.
        inst.bindings
            .configure(&mut inst.store, &self.args)
            .map_err(|e| classify(e, &self.limits, within))?
            .map_err(plugin_error)?;
        Ok(inst)
    }

    /// Runs `f` on a pooled instance with `pod` and `nodes` in view. A trap
    /// discards the instance (its state may be broken); the next call gets a
    /// fresh one.
    fn call<R>(
        &self,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        view: &CycleView<'_>,
        f: impl FnOnce(&Bindings, &mut Store<HostState>) -> wasmtime::Result<Result<R, String>>,
    ) -> Result<R, CallError> {
        if let Some(e) = self.backing_off() {
            self.stats.skipped_backing_off.fetch_add(1, Ordering::Relaxed);
            return Err(e);
        }
        let popped = self.pool.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let (mut inst, made_now) = match popped {
            Some(i) => (i, false),
            // Every instance is busy (or the spare is not ready): this one
            // starts, and the call runs, within the call's own deadline.
            None => (
                self.fresh(self.limits.timeout).inspect_err(|e| {
                    self.needs_spare.store(true, Ordering::Release);
                    self.failed(e);
                })?,
                true,
            ),
        };
        {
            let data = inst.store.data_mut();
            data.set_pod(pod);
            data.nodes.clear();
            data.nodes.extend(nodes.iter().map(|n| Arc::clone(n)));
            data.snapshot = view.snapshot.cloned();
            data.storage = view.storage.cloned();
            data.allocations = view.allocations.clone();
            data.cycle = view.data.cloned();
            data.waiting = view.waiting.cloned();
            data.store = self.store.get().cloned();
        }
        if !made_now {
            set_deadline(&mut inst.store, self.limits.timeout);
        }
        let result = f(&inst.bindings, &mut inst.store);
        // The snapshot goes back to the scheduler unshared (it updates it
        // in place between cycles).
        let data = inst.store.data_mut();
        data.nodes.clear();
        data.snapshot = None;
        data.storage = None;
        data.allocations = None;
        data.cycle = None;
        data.waiting = None;
        // A call that ended past its deadline without entering the guest
        // again (a host function's work) failed all the same.
        let result = match result {
            Ok(_) if inst.store.data().late() => Err(DeadlineExceeded.into()),
            r => r,
        };
        match result {
            Ok(r) => {
                // Garbage-collected guests (JavaScript, Python) and leaky
                // allocators only ever grow their memory; an instance near
                // the cap would fail a later call, so retire it now.
                let used = inst.store.data().limits.memory_bytes;
                let retired = used > self.limits.memory_bytes / 4 * 3;
                if retired {
                    self.stats.retired.fetch_add(1, Ordering::Relaxed);
                    self.needs_spare.store(true, Ordering::Release);
                } else {
                    let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
                    if pool.len() < warm_instances() {
                        pool.push(inst);
                    }
                }
                // An error is a failure like a trap: a plugin whose every
                // call returns one backs off too.
                match r {
                    // Its answer stands, but a retirement costs a new
                    // instance (up to the load deadline on the spare
                    // thread): it counts toward the back-off, so a plugin
                    // that fills its memory on every call is not rebuilt
                    // after every call.
                    Ok(v) if retired => {
                        self.failed(&CallError::Limit(format!(
                            "an instance was retired after a call left {} MiB of linear memory, more than 3/4 of the cap ({} MiB)",
                            used >> 20,
                            self.limits.memory_bytes >> 20
                        )));
                        Ok(v)
                    }
                    Ok(v) => {
                        self.succeeded();
                        Ok(v)
                    }
                    Err(m) => {
                        self.stats.errors.fetch_add(1, Ordering::Relaxed);
                        let err = plugin_error(m);
                        self.failed(&err);
                        Err(err)
                    }
                }
            }
            Err(e) => {
                let err = classify(e, &self.limits, self.limits.timeout);
                self.needs_spare.store(true, Ordering::Release);
                self.failed(&err);
                let counter = match err {
                    CallError::Timeout(_) => &self.stats.timeouts,
                    CallError::OutOfMemory(_) => &self.stats.out_of_memory,
                    CallError::Limit(_) => &self.stats.limits,
                    _ => &self.stats.traps,
                };
                counter.fetch_add(1, Ordering::Relaxed);
                Err(err)
            }
        }
    }

    /// PreFilter.
    pub fn pre_filter(&self, pod: &PodInfo) -> Result<guest::Status, CallError> {
        self.pre_filter_in(pod, &CycleView::default())
    }

    /// PreFilter, with the cycle's devices in view.
    pub fn pre_filter_in(&self, pod: &PodInfo, view: &CycleView<'_>) -> Result<guest::Status, CallError> {
        self.call(pod, &[], view, |g, s| g.pre_filter(s))
    }

    /// Filter over a batch: the rejections (indexes into `nodes`). Large
    /// batches go in calls of at most [`MAX_BATCH`] nodes, each with its own
    /// deadline. `snapshot` is what the pod views count (none: they fail).
    pub fn filter(
        &self,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        snapshot: Option<&Arc<Snapshot>>,
    ) -> Result<Vec<guest::Rejection>, CallError> {
        self.filter_in(pod, nodes, &CycleView::snapshot(snapshot))
    }

    /// Filter, with what `view` holds of the cycle.
    pub fn filter_in(
        &self,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        view: &CycleView<'_>,
    ) -> Result<Vec<guest::Rejection>, CallError> {
        let mut out = Vec::new();
        for (c, chunk) in nodes.chunks(MAX_BATCH).enumerate() {
            // Checked inside the call, so a bad answer is an error of the
            // plugin that counts toward its back-off.
            let rs = self.call(pod, chunk, view, |g, s| {
                Ok(g.filter(s)?.and_then(|rs| check_rejections(rs, chunk.len())))
            })?;
            for mut r in rs {
                r.index += (c * MAX_BATCH) as u32;
                r.reason = truncate_reason(r.reason);
                out.push(r);
            }
        }
        Ok(out)
    }

    /// PreScore.
    pub fn pre_score(
        &self,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        snapshot: Option<&Arc<Snapshot>>,
    ) -> Result<guest::Status, CallError> {
        self.pre_score_in(pod, nodes, &CycleView::snapshot(snapshot))
    }

    /// PreScore, with what `view` holds of the cycle.
    pub fn pre_score_in(
        &self,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        view: &CycleView<'_>,
    ) -> Result<guest::Status, CallError> {
        self.call(pod, nodes, view, |g, s| g.pre_score(s))
    }

    /// Score over a batch (in calls of at most [`MAX_BATCH`] nodes).
    pub fn score(
        &self,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        snapshot: Option<&Arc<Snapshot>>,
    ) -> Result<Vec<i64>, CallError> {
        self.score_in(pod, nodes, &CycleView::snapshot(snapshot))
    }

    /// Score, with what `view` holds of the cycle.
    pub fn score_in(
        &self,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        view: &CycleView<'_>,
    ) -> Result<Vec<i64>, CallError> {
        let mut out = Vec::with_capacity(nodes.len());
        for chunk in nodes.chunks(MAX_BATCH) {
            let (scores, packed) = self.call(pod, chunk, view, |g, s| g.score(s))?;
            self.packed_scores.store(packed, Ordering::Relaxed);
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
        let packed = self.packed_scores.load(Ordering::Relaxed);
        let out = self.call(pod, &[], &CycleView::default(), |g, s| {
            g.normalize_score(s, scores, packed)
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

impl Loaded {
    /// Hands the version its plugin's store.
    pub fn use_store(&self, store: Arc<crate::state::PluginStore>) {
        store.charge_to(crate::limits::Limiter::new(
            usize::MAX,
            self.compiled.budget.clone(),
            self.stats.share.clone(),
        ));
        let _ = self.store.set(store);
    }

    /// PostFilter (0.7): `nodes` and `statuses` in the same order.
    pub fn post_filter_in(
        &self,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        statuses: &[guest::NodeStatus],
        view: &CycleView<'_>,
    ) -> Result<guest::PostFilterResult, CallError> {
        self.call(pod, nodes, view, |g, s| g.post_filter(s, statuses))
    }

    /// Reserve (0.7), with the chosen node as a batch of one.
    pub fn reserve_in(
        &self,
        pod: &PodInfo,
        node: &Arc<NodeInfo>,
        view: &CycleView<'_>,
    ) -> Result<guest::Status, CallError> {
        self.call(pod, &[node], view, |g, s| g.reserve(s))
    }

    /// Unreserve (0.7).
    pub fn unreserve_in(&self, pod: &PodInfo, node: &str, view: &CycleView<'_>) -> Result<(), CallError> {
        self.call(pod, &[], view, |g, s| g.unreserve(s, node))
    }

    /// Permit (0.7), with the chosen node as a batch of one.
    pub fn permit_in(
        &self,
        pod: &PodInfo,
        node: &Arc<NodeInfo>,
        view: &CycleView<'_>,
    ) -> Result<guest::PermitVerdict, CallError> {
        self.call(pod, &[node], view, |g, s| g.permit(s))
    }

    /// PreBind (0.7).
    pub fn pre_bind_in(&self, pod: &PodInfo, node: &str, view: &CycleView<'_>) -> Result<guest::Status, CallError> {
        self.call(pod, &[], view, |g, s| g.pre_bind(s, node))
    }

    /// PostBind (0.7).
    pub fn post_bind_in(&self, pod: &PodInfo, node: &str, view: &CycleView<'_>) -> Result<(), CallError> {
        self.call(pod, &[], view, |g, s| g.post_bind(s, node))
    }
}

/// The points of contract 0.7 and the framework's.
const POINTS_0_7: [(guest::Points, Points); 5] = [
    (guest::Points::POST_FILTER, Points::POST_FILTER),
    (guest::Points::RESERVE, Points::RESERVE),
    (guest::Points::PERMIT, Points::PERMIT),
    (guest::Points::PRE_BIND, Points::PRE_BIND),
    (guest::Points::POST_BIND, Points::POST_BIND),
];

/// Nodes PostFilter is shown at most.
pub const MAX_POST_FILTER_NODES: usize = 1000;

/// A plugin as the framework sees it: a stable name whose current version
/// is swapped when the file changes. Calls in flight keep the version they
/// started with.
pub struct PluginSlot {
    name: String,
    pub(crate) args: String,
    pub(crate) limits: Limits,
    points: Points,
    current: RwLock<Option<Arc<Loaded>>>,
    /// Why no version serves, when none does.
    missing: RwLock<String>,
    pub(crate) stats: Arc<PluginStats>,
    /// When a failed call was last logged, and failures not logged since.
    warned: Mutex<Option<std::time::Instant>>,
    unlogged: AtomicU64,
    /// What the host keeps for the plugin (contract 0.7's `state`): one
    /// store for all of its slots, across its versions.
    store: Arc<crate::state::PluginStore>,
}

/// At most one failed call of a plugin is logged per this interval.
pub const WARN_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

impl std::fmt::Debug for PluginSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginSlot")
            .field("name", &self.name)
            .field("current", &self.current())
            .finish()
    }
}

pub(crate) fn status_of(s: guest::Status) -> Status {
    let s = guest::Status {
        code: s.code,
        reason: truncate_reason(s.reason),
    };
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
        for (g, p) in POINTS_0_7 {
            if initial.as_ref().is_none_or(|l| l.implements(g)) {
                points = points.with(p);
            }
        }
        let store = stats
            .store
            .get_or_init(|| Arc::new(crate::state::PluginStore::new(limits.memory_bytes / 4)))
            .clone();
        if let Some(l) = &initial {
            store.adopt(&l.sha256, l.keep_state);
            l.use_store(store.clone());
        }
        Self {
            name,
            args,
            limits,
            points,
            current: RwLock::new(initial),
            missing: RwLock::new(String::new()),
            stats,
            warned: Mutex::new(None),
            unlogged: AtomicU64::new(0),
            store,
        }
    }

    /// Says why no version serves (shown while none does).
    pub(crate) fn set_missing(&self, why: String) {
        *self.missing.write().unwrap_or_else(|p| p.into_inner()) = why;
    }

    /// The failure policy.
    pub fn failure_policy(&self) -> FailurePolicy {
        self.limits.failure_policy
    }

    /// `plugin X is not loaded: <why>`, while no version serves.
    pub fn not_loaded(&self) -> Option<String> {
        if self.current().is_some() {
            return None;
        }
        let why = self.missing.read().unwrap_or_else(|p| p.into_inner()).clone();
        Some(format!("plugin {} is not loaded: {why}", self.name))
    }

    /// The version serving now, if any.
    pub fn current(&self) -> Option<Arc<Loaded>> {
        self.current.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The version to call, with a spare instance on its way if the last
    /// call discarded one.
    fn serving(&self) -> Option<Arc<Loaded>> {
        let v = self.current()?;
        v.ensure_spare();
        Some(v)
    }

    pub(crate) fn swap(&self, new: Option<Arc<Loaded>>) -> Option<Arc<Loaded>> {
        if let Some(n) = &new {
            // A new version starts with the store empty unless it keeps it
            // (once, whichever of the plugin's slots takes it first).
            self.store.adopt(&n.sha256, n.keep_state);
            n.use_store(self.store.clone());
        }
        std::mem::replace(&mut *self.current.write().unwrap_or_else(|p| p.into_inner()), new)
    }

    /// The plugin's store.
    pub fn store(&self) -> &Arc<crate::state::PluginStore> {
        &self.store
    }

    /// The version serving, if it implements `point` (contract 0.7).
    fn serving_at(&self, point: guest::Points) -> Option<Arc<Loaded>> {
        self.serving().filter(|v| v.implements(point))
    }

    /// Counters.
    pub fn stats(&self) -> &PluginStats {
        &self.stats
    }

    /// Logs a failed call: the first, then at most one every
    /// [`WARN_EVERY`] with how many were not logged (every one is counted in
    /// the plugin's metrics).
    fn failed(&self, pod: &PodInfo, point: &str, e: &CallError) {
        let now = std::time::Instant::now();
        let mut last = self.warned.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_some_and(|t| now.duration_since(t) < WARN_EVERY) {
            self.unlogged.fetch_add(1, Ordering::Relaxed);
            return;
        }
        *last = Some(now);
        let unlogged = self.unlogged.swap(0, Ordering::Relaxed);
        tracing::warn!(plugin = %self.name, pod = %pod.key, point, error = %e, policy = ?self.limits.failure_policy, unlogged, "plugin call failed");
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

    /// Every change: the versions that serve the slot come and go, and each
    /// may register for other changes; [`Plugin::queueing_hint`] applies
    /// the registration of the version serving when the change comes.
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        ClusterEvent::ALL
            .iter()
            .copied()
            .chain([
                ClusterEvent {
                    resource: Resource::Namespace,
                    action: Action::ALL,
                },
                ClusterEvent {
                    resource: Resource::Metric,
                    action: Action::ALL,
                },
            ])
            .collect()
    }

    fn queueing_hint(&self, _: &PodInfo, change: &Change<'_>) -> QueueingHint {
        let (resource, action) = change.event();
        // Metrics are not something a plugin declares: a plugin that read
        // them may decide otherwise once they change.
        if resource == Resource::Metric {
            return match self.stats.reads_metrics.load(Ordering::Relaxed) {
                true => QueueingHint::Queue,
                false => QueueingHint::Skip,
            };
        }
        let Some(v) = self.current() else {
            return QueueingHint::Queue;
        };
        let events = v.events.as_deref().unwrap_or(ClusterEvent::ALL);
        if events.iter().any(|e| e.matches(resource, action)) {
            QueueingHint::Queue
        } else {
            QueueingHint::Skip
        }
    }

    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, _: &Snapshot) -> Status {
        // Honour or refuse: a plugin the profile enables but that is not
        // loaded makes every pod of the profile unschedulable under
        // `fail` (the message names the plugin), and is skipped under `ignore`.
        let Some(v) = self.serving() else {
            return match (self.limits.failure_policy, self.not_loaded()) {
                (FailurePolicy::Fail, Some(why)) => Status::unresolvable(why),
                _ => Status::new(Code::Skip, []),
            };
        };
        let filters = v.implements(guest::Points::FILTER);
        if !v.implements(guest::Points::PRE_FILTER) {
            return if filters {
                Status::success()
            } else {
                Status::new(Code::Skip, [])
            };
        }
        match v.pre_filter_in(pod, &CycleView::of(state)) {
            // A plugin without Filter (one for Reserve or Permit) runs its
            // PreFilter all the same; its Filter is skipped.
            Ok(s) if !filters && s.code == guest::Code::Success => Status::new(Code::Skip, []),
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
        let row = NodeRow::of(node);
        let node = Arc::new(node.clone());
        let mut rejected = Vec::new();
        self.filter_nodes(state, pod, &[&node], &[&row], &mut rejected);
        rejected.pop().map_or_else(Status::success, |(_, s)| s)
    }

    fn filter_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        _: &[&NodeRow],
        rejected: &mut Vec<(usize, Status)>,
    ) {
        let Some(v) = self.serving() else {
            // Enabled at filter alone (no PreFilter to refuse the pod):
            // not loaded under `fail` rejects every node, naming why.
            if let (FailurePolicy::Fail, Some(why)) = (self.limits.failure_policy, self.not_loaded()) {
                rejected.extend((0..nodes.len()).map(|i| (i, Status::unresolvable(why.clone()))));
            }
            return;
        };
        if !v.implements(guest::Points::FILTER) {
            return;
        }
        match v.filter_in(pod, nodes, &CycleView::of(state)) {
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

    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &wasmsched_core::Snapshot,
        nodes: &[&Arc<NodeInfo>],
    ) -> Status {
        let Some(v) = self.serving() else {
            return match (self.limits.failure_policy, self.not_loaded()) {
                (FailurePolicy::Fail, Some(why)) => Status::error(why),
                _ => Status::new(Code::Skip, []),
            };
        };
        if !v.implements(guest::Points::SCORE) {
            return Status::new(Code::Skip, []);
        }
        if !v.implements(guest::Points::PRE_SCORE) {
            return Status::success();
        }
        match v.pre_score_in(pod, nodes, &CycleView::of(state)) {
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
        let row = NodeRow::of(node);
        let node = Arc::new(node.clone());
        let mut out = [0];
        self.score_nodes(state, pod, &[&node], &[&row], &mut out)?;
        Ok(out[0])
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        _: &[&NodeRow],
        out: &mut [i64],
    ) -> Result<(), Status> {
        let Some(v) = self.serving() else {
            // Enabled at score alone (no PreScore to fail the cycle): not
            // loaded under `fail` fails it, naming why; `ignore` scores 0.
            if let (FailurePolicy::Fail, Some(why)) = (self.limits.failure_policy, self.not_loaded()) {
                return Err(Status::error(why));
            }
            out.fill(0);
            return Ok(());
        };
        if !v.implements(guest::Points::SCORE) {
            out.fill(0);
            return Ok(());
        }
        let normalized = v.implements(guest::Points::NORMALIZE_SCORE);
        let result = v.score_in(pod, nodes, &CycleView::of(state)).and_then(|scores| {
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
        let Some(v) = self.serving() else {
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

    fn post_filter(
        &self,
        ctx: &mut wasmsched_core::framework::PostFilterContext<'_>,
        pod: &PodInfo,
        diagnosis: &wasmsched_core::framework::Diagnosis,
    ) -> wasmsched_core::framework::PostFilterResult {
        use wasmsched_core::framework::PostFilterResult;
        let none = |st| PostFilterResult::none(st);
        let Some(v) = self.serving_at(guest::Points::POST_FILTER) else {
            return none(Status::new(Code::Unschedulable, []));
        };
        let snapshot = ctx.snapshot;
        let mut nodes = Vec::new();
        let mut statuses = Vec::new();
        for (name, st) in diagnosis.node_statuses.iter().take(MAX_POST_FILTER_NODES) {
            let Some(n) = snapshot.node(name) else { continue };
            nodes.push(n);
            statuses.push(guest::NodeStatus {
                node: name.clone(),
                code: match st.code() {
                    Code::UnschedulableAndUnresolvable => guest::Code::UnschedulableAndUnresolvable,
                    _ => guest::Code::Unschedulable,
                },
                reason: st.message(),
                plugin: st.plugin().unwrap_or_default().to_owned(),
            });
        }
        match v.post_filter_in(pod, &nodes, &statuses, &CycleView::of(ctx.state)) {
            Ok(r) => crate::post_filter::result(&self.name, pod, snapshot, r),
            Err(e) => {
                self.failed(pod, "PostFilter", &e);
                match self.limits.failure_policy {
                    FailurePolicy::Fail => none(Status::error(self.reason(&e))),
                    FailurePolicy::Ignore => none(Status::new(Code::Unschedulable, [])),
                }
            }
        }
    }

    fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        let Some(v) = self.serving_at(guest::Points::RESERVE) else {
            return Status::success();
        };
        let Some(n) = state.snapshot().and_then(|s| s.node(node)).map(Arc::clone) else {
            return Status::error(format!("node {node} is not in the cycle's snapshot"));
        };
        match v.reserve_in(pod, &n, &CycleView::of(state)) {
            Ok(s) if s.code == guest::Code::Skip => Status::success(),
            Ok(s) => status_of(s),
            Err(e) => {
                self.failed(pod, "Reserve", &e);
                match self.limits.failure_policy {
                    FailurePolicy::Fail => Status::error(self.reason(&e)),
                    FailurePolicy::Ignore => Status::success(),
                }
            }
        }
    }

    fn unreserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) {
        let Some(v) = self.serving_at(guest::Points::RESERVE) else {
            return;
        };
        let view = CycleView::of(state);
        if let Err(e) = v.unreserve_in(pod, node, &view) {
            self.failed(pod, "Unreserve", &e);
        }
    }

    fn permit(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> wasmsched_core::framework::Permit {
        use wasmsched_core::framework::Permit;
        let Some(v) = self.serving_at(guest::Points::PERMIT) else {
            return Permit::Allow;
        };
        let Some(n) = state.snapshot().and_then(|s| s.node(node)).map(Arc::clone) else {
            return Permit::Reject(Status::error(format!("node {node} is not in the cycle's snapshot")));
        };
        match v.permit_in(pod, &n, &CycleView::of(state)) {
            Ok(guest::PermitVerdict::Allow) => Permit::Allow,
            Ok(guest::PermitVerdict::Reject(why)) => Permit::Reject(Status::unschedulable(truncate_reason(why))),
            Ok(guest::PermitVerdict::Wait(ms)) => Permit::Wait(std::time::Duration::from_millis(u64::from(ms))),
            Err(e) => {
                self.failed(pod, "Permit", &e);
                match self.limits.failure_policy {
                    FailurePolicy::Fail => Permit::Reject(Status::error(self.reason(&e))),
                    FailurePolicy::Ignore => Permit::Allow,
                }
            }
        }
    }

    fn pre_bind(&self, state: &CycleState, pod: &PodInfo, node: &str) -> Status {
        let Some(v) = self.serving_at(guest::Points::PRE_BIND) else {
            return Status::success();
        };
        let view = CycleView::of(state);
        match v.pre_bind_in(pod, node, &view) {
            Ok(s) if s.code == guest::Code::Success || s.code == guest::Code::Skip => Status::success(),
            Ok(s) => Status::error(truncate_reason(s.reason)),
            Err(e) => {
                self.failed(pod, "PreBind", &e);
                match self.limits.failure_policy {
                    FailurePolicy::Fail => Status::error(self.reason(&e)),
                    FailurePolicy::Ignore => Status::success(),
                }
            }
        }
    }

    fn post_bind(&self, state: &CycleState, pod: &PodInfo, node: &str) {
        let Some(v) = self.serving_at(guest::Points::POST_BIND) else {
            return;
        };
        let view = CycleView::of(state);
        if let Err(e) = v.post_bind_in(pod, node, &view) {
            self.failed(pod, "PostBind", &e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hundred thousand registrations fold to the distinct ones no other
    /// of the same resource covers, in the order declared.
    #[test]
    fn event_registrations_fold_to_the_few_that_differ() {
        let e = |resource, action| ClusterEvent { resource, action };
        let node_label = e(Resource::Node, Action::UPDATE_NODE_LABEL);
        let node_add_label = e(Resource::Node, Action::ADD | Action::UPDATE_NODE_LABEL);
        let pod_delete = e(Resource::AssignedPod, Action::DELETE);
        let declared = (0..100_000).map(|i| match i % 3 {
            0 => node_label,
            1 => pod_delete,
            _ => node_add_label,
        });
        assert_eq!(fold_events(declared), [pod_delete, node_add_label]);
    }
}
