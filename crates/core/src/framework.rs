//! The scheduling framework: extension points, statuses, the per-cycle
//! state, and one scheduling cycle (PreFilter → Filter → PostFilter →
//! PreScore → Score → NormalizeScore → select → Reserve) with node sampling
//! and parallel filtering and scoring over node chunks.

mod cycle;
mod extender;
mod permit;
mod post_filter;
mod status;

pub use cycle::{
    CycleOutcome, CycleRecord, Diagnosis, Explanation, FitError, NodeExplanation, PluginScore, ScheduleError,
    ScheduleResult, explanation_of,
};
pub use extender::ExtenderVerdicts;
pub use permit::{MAX_PERMIT_WAIT, Permit, PermitOutcome, PluginData, WaitingPod, WaitingPods};
pub use post_filter::{Nominating, Nomination, PostFilterContext, PostFilterResult, PreemptionTry};
pub use status::{Code, MAX_MESSAGE_BYTES, Reason, Status, truncate_message};

use std::any::Any;
use std::sync::Arc;

use crate::cache::Snapshot;
use crate::events::{Change, ClusterEvent, QueueingHint};
use crate::node::{NodeInfo, NodeRow};
use crate::pod::PodInfo;

/// The highest score a plugin may give a node (after NormalizeScore).
pub const MAX_NODE_SCORE: i64 = 100;
/// The lowest score.
pub const MIN_NODE_SCORE: i64 = 0;

/// A set of extension points, as a plugin declares which it implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Points(u16);

impl Points {
    /// PreFilter.
    pub const PRE_FILTER: Points = Points(1);
    /// Filter.
    pub const FILTER: Points = Points(2);
    /// PostFilter.
    pub const POST_FILTER: Points = Points(4);
    /// PreScore.
    pub const PRE_SCORE: Points = Points(8);
    /// Score (with NormalizeScore).
    pub const SCORE: Points = Points(16);
    /// Reserve/Unreserve.
    pub const RESERVE: Points = Points(32);
    /// Permit.
    pub const PERMIT: Points = Points(64);
    /// PreBind.
    pub const PRE_BIND: Points = Points(128);
    /// PostBind.
    pub const POST_BIND: Points = Points(256);
    /// None.
    pub const NONE: Points = Points(0);

    /// Whether every point of `other` is in `self`.
    pub const fn contains(self, other: Points) -> bool {
        self.0 & other.0 == other.0 && other.0 != 0
    }

    /// The union.
    pub const fn with(self, other: Points) -> Points {
        Points(self.0 | other.0)
    }

    /// The extension point names in this set, in kube-scheduler's words.
    pub fn names(self) -> Vec<&'static str> {
        [
            (Self::PRE_FILTER, "PreFilter"),
            (Self::FILTER, "Filter"),
            (Self::POST_FILTER, "PostFilter"),
            (Self::PRE_SCORE, "PreScore"),
            (Self::SCORE, "Score"),
            (Self::RESERVE, "Reserve"),
            (Self::PERMIT, "Permit"),
            (Self::PRE_BIND, "PreBind"),
            (Self::POST_BIND, "PostBind"),
        ]
        .into_iter()
        .filter(|(p, _)| self.contains(*p))
        .map(|(_, n)| n)
        .collect()
    }
}

impl std::ops::BitOr for Points {
    type Output = Points;
    fn bitor(self, rhs: Points) -> Points {
        self.with(rhs)
    }
}

/// Data one scheduling cycle shares between its plugins and extension
/// points. Plugins store what they compute in PreFilter/PreScore under their
/// own name and read it back in Filter/Score.
#[derive(Default)]
pub struct CycleState {
    data: rustc_hash::FxHashMap<String, Box<dyn Any + Send + Sync>>,
    /// Number of nodes in the snapshot.
    pub total_nodes: usize,
    /// Image name → its size on each node holding it, from the snapshot.
    pub image_nodes: Arc<crate::node::ImageIndex>,
    skip_filter: Vec<bool>,
    skip_score: Vec<bool>,
    /// PreFilter node subsets so far: the plugins that narrowed, and the
    /// node names every one of them allows.
    pub(crate) node_subset: Option<(Vec<String>, Vec<String>)>,
    /// Per-plugin timings, recorded when this cycle is sampled
    /// ([`CycleState::sample_plugin_timings`]).
    timings: Option<std::sync::Mutex<Vec<PluginTiming>>>,
    /// The cycle's snapshot, for plugins that read it at Filter and Score
    /// (WebAssembly plugins' pod views), which receive only nodes there.
    snapshot: Option<Arc<crate::cache::Snapshot>>,
    /// The pods nominated to nodes (their room is held).
    nominator: Option<Arc<crate::nominator::Nominator>>,
    /// What the cycle found, when kept ([`CycleState::keep_record`]).
    record: Option<CycleRecord>,
    /// What plugins keep for the pod's cycle through the binding cycle
    /// (made when a plugin first asks for it).
    plugin_data: std::sync::OnceLock<Arc<PluginData>>,
    /// The pods waiting at Permit, for plugins that read them.
    waiting: Option<Arc<WaitingPods>>,
}

/// How long one plugin took at one extension point in a sampled cycle (for
/// `scheduler_plugin_execution_duration_seconds`). Filter and Score are
/// timed per batch of nodes.
#[derive(Debug, Clone)]
pub struct PluginTiming {
    /// Plugin name.
    pub plugin: String,
    /// `PreFilter`, `Filter`, `PostFilter`, `PreScore`, `Score`, `NormalizeScore`, `Reserve`.
    pub extension_point: &'static str,
    /// The status code's name.
    pub status: &'static str,
    /// Time taken.
    pub took: std::time::Duration,
}

impl CycleState {
    /// The data plugins keep for this pod's cycle (made on first use).
    pub fn plugin_data(&self) -> &Arc<PluginData> {
        self.plugin_data.get_or_init(Default::default)
    }

    /// The data, if a plugin made it (for the binding cycle).
    pub fn take_plugin_data(&mut self) -> Option<Arc<PluginData>> {
        self.plugin_data.take()
    }

    /// A state holding only `data` (Unreserve after the scheduling cycle).
    pub fn with_plugin_data(data: Option<Arc<PluginData>>) -> Self {
        let state = CycleState::default();
        if let Some(d) = data {
            let _ = state.plugin_data.set(d);
        }
        state
    }

    /// Lets plugins read the pods waiting at Permit.
    pub fn set_waiting(&mut self, waiting: Arc<WaitingPods>) {
        self.waiting = Some(waiting);
    }

    /// The pods waiting at Permit (none outside a scheduler).
    pub fn waiting(&self) -> Option<&Arc<WaitingPods>> {
        self.waiting.as_ref()
    }

    /// Records per-plugin timings for this cycle.
    pub fn sample_plugin_timings(&mut self) {
        self.timings = Some(std::sync::Mutex::new(Vec::new()));
    }

    /// Keeps what the cycle finds node by node ([`CycleRecord`]), at a
    /// small cost: what a shadow's cycle is compared with.
    pub fn keep_record(&mut self) {
        self.record = Some(CycleRecord::default());
    }

    /// What the cycle found, if kept.
    pub fn take_record(&mut self) -> Option<CycleRecord> {
        self.record.take()
    }

    /// The record being kept, if any.
    pub(crate) fn record_mut(&mut self) -> Option<&mut CycleRecord> {
        self.record.as_mut()
    }

    /// The timings recorded, if the cycle was sampled.
    pub fn take_plugin_timings(&mut self) -> Vec<PluginTiming> {
        self.timings
            .take()
            .map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()))
            .unwrap_or_default()
    }

    /// A start time when the cycle is sampled.
    #[inline]
    pub(crate) fn clock(&self) -> Option<std::time::Instant> {
        self.timings.as_ref().map(|_| std::time::Instant::now())
    }

    /// Records a timing started with [`CycleState::clock`].
    pub(crate) fn record(
        &self,
        plugin: &dyn Plugin,
        point: &'static str,
        code: Code,
        start: Option<std::time::Instant>,
    ) {
        if let (Some(t), Some(m)) = (start, &self.timings) {
            let took = t.elapsed();
            m.lock().unwrap_or_else(|p| p.into_inner()).push(PluginTiming {
                plugin: plugin.name().to_owned(),
                extension_point: point,
                status: code.as_str(),
                took,
            });
        }
    }
}

impl std::fmt::Debug for CycleState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CycleState")
            .field("keys", &self.data.keys().collect::<Vec<_>>())
            .field("total_nodes", &self.total_nodes)
            .finish()
    }
}

impl CycleState {
    /// Restricts this cycle to the nodes named (kube-scheduler's
    /// `PreFilterResult`): Filter runs only on them, intersected with what
    /// other PreFilter plugins allowed; the other nodes are reported as
    /// `node(s) didn't satisfy plugin(s) [<plugin>]`.
    pub fn restrict_nodes(&mut self, plugin: &str, names: Vec<String>) {
        self.node_subset = Some(match self.node_subset.take() {
            None => (vec![plugin.to_owned()], names),
            Some((mut plugins, before)) => {
                plugins.push(plugin.to_owned());
                (plugins, before.into_iter().filter(|n| names.contains(n)).collect())
            }
        });
    }

    /// Shares the cycle's snapshot with the plugins ([`CycleState::snapshot`]).
    pub fn set_snapshot(&mut self, snapshot: Arc<crate::cache::Snapshot>) {
        self.snapshot = Some(snapshot);
    }

    /// The cycle's snapshot, when the scheduler shared it (it always does).
    pub fn snapshot(&self) -> Option<&Arc<crate::cache::Snapshot>> {
        self.snapshot.as_ref()
    }

    /// Stores a value under `key` (by convention the plugin's name).
    pub fn write<T: Any + Send + Sync>(&mut self, key: &str, value: T) {
        self.data.insert(key.to_owned(), Box::new(value));
    }

    /// Reads a value stored under `key`, if it has type `T`.
    pub fn read<T: Any + Send + Sync>(&self, key: &str) -> Option<&T> {
        self.data.get(key).and_then(|b| b.downcast_ref())
    }
}

/// A scheduling plugin: built in (Rust) or loaded from WebAssembly.
///
/// Every extension point has a default that does nothing, so a plugin
/// implements what it declares in [`Plugin::points`]. The `*_nodes` methods
/// are the batch forms the framework calls (one call per chunk of nodes);
/// their defaults call the per-node method, and plugins whose calls are
/// costly (WebAssembly) override them to cross the boundary once per chunk.
pub trait Plugin: Send + Sync {
    /// The plugin's name, as the configuration refers to it.
    fn name(&self) -> &str;

    /// The extension points it implements.
    fn points(&self) -> Points;

    /// PreFilter: once per cycle before Filter. `Skip` skips this plugin's
    /// Filter for the cycle; `Unschedulable` rejects the pod on every node.
    fn pre_filter(&self, _state: &mut CycleState, _pod: &PodInfo, _snapshot: &Snapshot) -> Status {
        Status::success()
    }

    /// Filter: whether the pod fits on the node.
    fn filter(&self, _state: &CycleState, _pod: &PodInfo, _node: &NodeInfo) -> Status {
        Status::success()
    }

    /// Filter over a chunk of nodes: pushes `(index in nodes, status)` for
    /// every node that does not pass (rejected, or an error), in increasing
    /// index order. Nodes that pass cost nothing. `rows[i]` is the
    /// [`NodeRow`] of `nodes[i]`: a plugin that can decide from it avoids
    /// reading the node.
    fn filter_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        _rows: &[&NodeRow],
        rejected: &mut Vec<(usize, Status)>,
    ) {
        for (i, n) in nodes.iter().enumerate() {
            let st = self.filter(state, pod, n);
            if !st.is_success() && !st.is_skip() {
                rejected.push((i, st));
            }
        }
    }

    /// PostFilter: called when no node is feasible. A success means the
    /// plugin made room (the pod waits for it on the nominated node); a
    /// message on a non-success status is added to the failure message.
    fn post_filter(
        &self,
        _ctx: &mut PostFilterContext<'_>,
        _pod: &PodInfo,
        _diagnosis: &Diagnosis,
    ) -> PostFilterResult {
        PostFilterResult::none(Status::new(Code::Unschedulable, []))
    }

    /// PreScore: once per cycle with the feasible nodes. `Skip` skips this
    /// plugin's Score for the cycle.
    fn pre_score(
        &self,
        _state: &mut CycleState,
        _pod: &PodInfo,
        _snapshot: &Snapshot,
        _nodes: &[&Arc<NodeInfo>],
    ) -> Status {
        Status::success()
    }

    /// Score: a raw score for the node (0–100 unless NormalizeScore maps it).
    fn score(&self, _state: &CycleState, _pod: &PodInfo, _node: &NodeInfo) -> Result<i64, Status> {
        Ok(0)
    }

    /// Score over a chunk of nodes: writes one score per node into `out`.
    /// `rows[i]` is the [`NodeRow`] of `nodes[i]`.
    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        _rows: &[&NodeRow],
        out: &mut [i64],
    ) -> Result<(), Status> {
        score_each(self, state, pod, nodes, out)
    }

    /// NormalizeScore: maps the raw scores of all feasible nodes into 0–100.
    fn normalize_scores(&self, _state: &CycleState, _pod: &PodInfo, _scores: &mut [i64]) -> Status {
        Status::success()
    }

    /// Reserve: the pod is about to be assumed on `node`.
    fn reserve(&self, _state: &mut CycleState, _pod: &PodInfo, _node: &str) -> Status {
        Status::success()
    }

    /// Unreserve: undo Reserve (a later step failed). Called on the
    /// scheduling thread, in the cycle's state when the cycle itself failed,
    /// else (Permit rejected or timed out, the binding failed, the pod was
    /// deleted while waiting) in a state holding only [`CycleState::plugin_data`].
    fn unreserve(&self, _state: &mut CycleState, _pod: &PodInfo, _node: &str) {}

    /// Permit: after Reserve, whether the pod may be bound now, never, or
    /// once released from [`WaitingPods`] (see [`Permit::Wait`]).
    fn permit(&self, _state: &mut CycleState, _pod: &PodInfo, _node: &str) -> Permit {
        Permit::Allow
    }

    /// PreBind: in the binding cycle (off the scheduling thread), before
    /// the binding is written; a failure fails the binding. `state` holds
    /// only the cycle's [`CycleState::plugin_data`] and the waiting pods.
    fn pre_bind(&self, _state: &CycleState, _pod: &PodInfo, _node: &str) -> Status {
        Status::success()
    }

    /// PostBind: the pod is bound (informational), in the binding cycle.
    fn post_bind(&self, _state: &CycleState, _pod: &PodInfo, _node: &str) {}

    /// The kinds of cluster change after which a pod this plugin rejected
    /// may fit (kube-scheduler's `EventsToRegister`). The default, every
    /// change, is always safe; a narrower list saves retries.
    fn events_to_register(&self) -> Vec<ClusterEvent> {
        ClusterEvent::ALL.to_vec()
    }

    /// Whether `change` (one this plugin registered for) may make `pod`,
    /// which this plugin rejected, schedulable.
    fn queueing_hint(&self, _pod: &PodInfo, _change: &Change<'_>) -> QueueingHint {
        QueueingHint::Queue
    }
}

/// Scores a batch one node at a time ([`Plugin::score`]): the default
/// [`Plugin::score_nodes`], and the way back for a plugin whose batch is
/// computed inline only in its common case.
pub fn score_each<P: Plugin + ?Sized>(
    plugin: &P,
    state: &CycleState,
    pod: &PodInfo,
    nodes: &[&Arc<NodeInfo>],
    out: &mut [i64],
) -> Result<(), Status> {
    for (o, n) in out.iter_mut().zip(nodes) {
        *o = plugin.score(state, pod, n)?;
    }
    Ok(())
}

/// kube-scheduler's `DefaultNormalizeScore`: scales scores so the highest
/// becomes `MAX_NODE_SCORE`; with `reverse`, the highest becomes 0.
pub fn default_normalize_score(scores: &mut [i64], reverse: bool) {
    let max = scores.iter().copied().max().unwrap_or(0);
    if max == 0 {
        if reverse {
            scores.iter_mut().for_each(|s| *s = MAX_NODE_SCORE);
        }
        return;
    }
    for s in scores.iter_mut() {
        // Most scores are 0 where a plugin counts something few nodes
        // have (soft taints): no division for them.
        if *s != 0 {
            *s = MAX_NODE_SCORE * *s / max;
        }
        if reverse {
            *s = MAX_NODE_SCORE - *s;
        }
    }
}

/// A plugin enabled at an extension point, with its score weight.
#[derive(Clone)]
pub struct Enabled {
    /// The plugin.
    pub plugin: Arc<dyn Plugin>,
    /// Score weight (1 unless configured).
    pub weight: i64,
}

impl std::fmt::Debug for Enabled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}(weight {})", self.plugin.name(), self.weight)
    }
}

/// One profile's plugins per extension point, in order, and its settings.
#[derive(Debug, Clone)]
pub struct Framework {
    /// The profile's `schedulerName`.
    pub profile: String,
    /// PreFilter plugins.
    pub pre_filter: Vec<Enabled>,
    /// Filter plugins, in the order they run.
    pub filter: Vec<Enabled>,
    /// PostFilter plugins.
    pub post_filter: Vec<Enabled>,
    /// PreScore plugins.
    pub pre_score: Vec<Enabled>,
    /// Score plugins with their weights.
    pub score: Vec<Enabled>,
    /// Reserve plugins.
    pub reserve: Vec<Enabled>,
    /// Permit plugins.
    pub permit: Vec<Enabled>,
    /// PreBind plugins (besides the built-in volume and device writes,
    /// which the daemon makes first).
    pub pre_bind: Vec<Enabled>,
    /// PostBind plugins.
    pub post_bind: Vec<Enabled>,
    /// `percentageOfNodesToScore`: 0 means kube-scheduler's adaptive default.
    pub percentage_of_nodes_to_score: u32,
    pool: Option<Arc<rayon::ThreadPool>>,
}

/// kube-scheduler's minimum number of feasible nodes to find.
pub const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// kube-scheduler's minimum adaptive percentage.
pub const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: i64 = 5;

/// How many feasible nodes a cycle looks for before it stops filtering, as
/// kube-scheduler's `numFeasibleNodesToFind`: all nodes below 100; else the
/// configured percentage, or adaptively `50 - nodes/125` percent (at least
/// 5%), and never fewer than 100.
pub fn num_feasible_nodes_to_find(percentage: u32, all: usize) -> usize {
    if all < MIN_FEASIBLE_NODES_TO_FIND || percentage >= 100 {
        return all;
    }
    let mut pct = i64::from(percentage);
    if pct == 0 {
        pct = (50 - all as i64 / 125).max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND);
    }
    let n = (all as i64 * pct / 100) as usize;
    n.max(MIN_FEASIBLE_NODES_TO_FIND)
}

impl Framework {
    /// An empty framework for `profile`.
    pub fn new(profile: impl Into<String>) -> Self {
        Framework {
            profile: profile.into(),
            pre_filter: Vec::new(),
            filter: Vec::new(),
            post_filter: Vec::new(),
            pre_score: Vec::new(),
            score: Vec::new(),
            reserve: Vec::new(),
            permit: Vec::new(),
            pre_bind: Vec::new(),
            post_bind: Vec::new(),
            percentage_of_nodes_to_score: 0,
            pool: None,
        }
    }

    /// Runs filter and score on `parallelism` worker threads (1: inline).
    pub fn with_parallelism(mut self, parallelism: usize) -> Self {
        self.pool = (parallelism > 1).then(|| {
            Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(parallelism)
                    .thread_name(|i| format!("sched-worker-{i}"))
                    .build()
                    .expect("cannot start scheduler worker threads"),
            )
        });
        self
    }

    /// Shares a worker pool (profiles of one scheduler share theirs).
    pub fn with_pool(mut self, pool: Option<Arc<rayon::ThreadPool>>) -> Self {
        self.pool = pool;
        self
    }

    /// The worker pool, if filtering and scoring run in parallel.
    pub fn pool(&self) -> Option<&Arc<rayon::ThreadPool>> {
        self.pool.as_ref()
    }

    /// Whether the profile enables the plugin at its Filter point, or (a
    /// plugin without one, such as GangScheduling) at Permit.
    pub fn has_plugin(&self, name: &str) -> bool {
        self.filter.iter().chain(&self.permit).any(|e| e.plugin.name() == name)
    }

    /// Every distinct plugin of this profile.
    pub fn plugins(&self) -> Vec<Arc<dyn Plugin>> {
        let mut seen: Vec<Arc<dyn Plugin>> = Vec::new();
        for e in self
            .pre_filter
            .iter()
            .chain(&self.filter)
            .chain(&self.post_filter)
            .chain(&self.pre_score)
            .chain(&self.score)
            .chain(&self.reserve)
        {
            if !seen.iter().any(|p| p.name() == e.plugin.name()) {
                seen.push(e.plugin.clone());
            }
        }
        seen
    }
}
