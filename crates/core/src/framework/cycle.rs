//! One scheduling cycle for one pod.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use rayon::prelude::*;

use super::{Code, CycleState, Enabled, Framework, MAX_NODE_SCORE, MIN_NODE_SCORE, Status, num_feasible_nodes_to_find};
use crate::cache::Snapshot;
use crate::node::{NodeInfo, NodeRow};
use crate::pod::PodInfo;
use crate::rng::Rng;

/// Below this many nodes a block is filtered or scored on the calling
/// thread: handing work to the pool costs more than it saves. The loop that
/// runs cycles inside the pool (`Scheduler::with_pool`, as `bench` and
/// `simulate` do) splits a block from 128 nodes: its worker is already on
/// the pool. One that runs them outside (the daemon, whose cycles come one
/// at a time between API events) splits from 1024: each split is a
/// hand-off to a worker, some 50 µs of CPU (waking it, and its spinning
/// before it sleeps again), as much as filtering and scoring about 500
/// nodes from their rows, and the daemon shares its cores with the API
/// server and its own clients.
fn parallel_threshold(pool: &rayon::ThreadPool) -> usize {
    if pool.current_thread_index().is_some() {
        128
    } else {
        1024
    }
}

/// The outcome of a successful cycle.
#[derive(Debug, Clone)]
pub struct ScheduleResult {
    /// The selected node.
    pub node: String,
    /// Nodes the filters examined (sampling stops early).
    pub evaluated_nodes: usize,
    /// Feasible nodes found.
    pub feasible_nodes: usize,
    /// Per-node verdicts and scores, when asked for.
    pub explanation: Option<Explanation>,
    /// What VolumeBinding decided at Reserve for the pod's unbound claims:
    /// written to the API before the pod is bound (PreBind).
    pub volumes: Option<crate::storage::VolumePlan>,
    /// What DynamicResources decided at Reserve for the pod's claims
    /// (allocations, reservations): written to the API before the pod is
    /// bound (PreBind).
    pub devices: Option<crate::dra::DraPlan>,
    /// A Permit plugin asked the pod to wait: the binding cycle waits for
    /// [`super::WaitingPods::outcome`] before anything is written.
    pub waiting: bool,
    /// What plugins kept for the pod's cycle, for PreBind and PostBind.
    pub plugin_data: Option<Arc<super::PluginData>>,
}

/// What a cycle found on each node it looked at, kept when asked
/// ([`super::CycleState::keep_record`]) without the cost of an
/// [`Explanation`]: positions in the snapshot, no names copied.
#[derive(Debug, Clone, Default)]
pub struct CycleRecord {
    /// Feasible nodes with their weighted totals (`None`: not scored, as
    /// the only feasible node or the nominated one is not).
    pub feasible: Vec<(usize, Option<i64>)>,
    /// Rejected nodes with the status of the filter that rejected each
    /// (naming its plugin).
    pub rejected: Vec<(usize, Status)>,
}

impl CycleRecord {
    /// What the cycle said about the node at `pos`: `Some(Ok(total))` when
    /// feasible, `Some(Err(status))` when rejected, `None` when it did not
    /// look at it.
    pub fn verdict(&self, pos: usize) -> Option<Result<Option<i64>, &Status>> {
        if let Some((_, t)) = self.feasible.iter().find(|(p, _)| *p == pos) {
            return Some(Ok(*t));
        }
        self.rejected.iter().find(|(p, _)| *p == pos).map(|(_, st)| Err(st))
    }
}

/// A cycle's outcome in words: where the pod goes, or why it does not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CycleOutcome {
    /// Placed on this node.
    Placed(String),
    /// No node fits: the message, as the pod's condition would say it.
    Unschedulable(String),
    /// The cycle failed (a plugin's error, a panic).
    Error(String),
}

impl CycleOutcome {
    /// The outcome of `result`.
    pub fn of(result: &Result<ScheduleResult, ScheduleError>) -> Self {
        match result {
            Ok(r) => CycleOutcome::Placed(r.node.clone()),
            Err(ScheduleError::Error(e)) => CycleOutcome::Error(e.clone()),
            Err(e) => CycleOutcome::Unschedulable(e.to_string()),
        }
    }
}

/// The explanation a cycle kept, placed or not (when it was asked for).
pub fn explanation_of(result: &Result<ScheduleResult, ScheduleError>) -> Option<&Explanation> {
    match result {
        Ok(r) => r.explanation.as_ref(),
        Err(ScheduleError::Unschedulable(fit)) => fit.explanation.as_ref(),
        Err(_) => None,
    }
}

/// Why a cycle did not place the pod.
#[derive(Debug, Clone)]
pub enum ScheduleError {
    /// The cluster has no nodes.
    NoNodes,
    /// No node is feasible.
    Unschedulable(Box<FitError>),
    /// A plugin failed; the pod is retried with backoff.
    Error(String),
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScheduleError::NoNodes => f.write_str("no nodes available to schedule pods"),
            ScheduleError::Unschedulable(e) => e.fmt(f),
            ScheduleError::Error(e) => f.write_str(e),
        }
    }
}

/// What the filters said about each node of a pod that fits nowhere.
#[derive(Debug, Clone, Default)]
pub struct Diagnosis {
    /// Each rejected node with the status of the first plugin that rejected it.
    pub node_statuses: Vec<(String, Status)>,
    /// Nodes left out by PreFilter plugins' node subsets, and the status
    /// they count under (`node(s) didn't satisfy plugin(s) [NodeAffinity]`).
    pub absent: Option<(usize, Status)>,
    /// The PreFilter message, when a PreFilter plugin rejected the pod.
    pub pre_filter_msg: Option<String>,
    /// What PostFilter plugins said.
    pub post_filter_msg: Option<String>,
    /// Plugins that rejected at least one node.
    pub unschedulable_plugins: Vec<String>,
}

/// No node is feasible: kube-scheduler's `FitError`.
#[derive(Debug, Clone)]
pub struct FitError {
    /// Nodes in the snapshot.
    pub num_all_nodes: usize,
    /// Per-node reasons.
    pub diagnosis: Diagnosis,
    /// Per-node verdicts, when asked for.
    pub explanation: Option<Explanation>,
    /// What PostFilter did to the pod's nomination (preemption).
    pub nominating: super::Nominating,
    /// A claim PostFilter asked to deallocate (see
    /// [`PostFilterResult::deallocate`](super::PostFilterResult)).
    pub deallocate: Option<std::sync::Arc<k8s_openapi::api::resource::v1::ResourceClaim>>,
    /// Set when the pod itself fit but its PodGroup could not be placed
    /// (or waits for preemption): the message is then this, kube-scheduler's
    /// `pod group is unschedulable, ...`, not a count of nodes.
    pub group_message: Option<String>,
}

impl FitError {
    /// A failure with this diagnosis, nothing explained or nominated.
    pub fn new(num_all_nodes: usize, diagnosis: Diagnosis) -> Self {
        FitError {
            num_all_nodes,
            diagnosis,
            explanation: None,
            nominating: super::Nominating::Keep,
            deallocate: None,
            group_message: None,
        }
    }

    /// A pod that fit, on `node`, but whose PodGroup did not (the group's
    /// message, `pod group is unschedulable, <reason>`).
    pub fn of_group(node: &str, reason: &str) -> Self {
        let mut fit = FitError::on_node(
            node,
            super::Status::unschedulable(reason.to_owned()).with_plugin(crate::plugins::gang_scheduling::NAME),
        );
        fit.group_message = Some(if reason.is_empty() {
            crate::plugins::gang_scheduling::GROUP_UNSCHEDULABLE.to_owned()
        } else {
            format!("{}, {reason}", crate::plugins::gang_scheduling::GROUP_UNSCHEDULABLE)
        });
        fit
    }

    /// A rejection on the one node a pod was placed on (at Permit, in the
    /// scheduling cycle or the binding cycle), as kube-scheduler words it:
    /// `0/1 nodes are available: 1 <reason>.`
    pub fn on_node(node: &str, status: super::Status) -> Self {
        let plugin = status.plugin().unwrap_or_default().to_owned();
        FitError::new(
            1,
            Diagnosis {
                node_statuses: vec![(node.to_owned(), status)],
                unschedulable_plugins: vec![plugin],
                ..Default::default()
            },
        )
    }

    /// Reason → number of nodes, as counted for the message.
    pub fn histogram(&self) -> BTreeMap<String, usize> {
        let mut h = BTreeMap::new();
        for (_, st) in &self.diagnosis.node_statuses {
            for r in st.reasons() {
                *h.entry(r.to_owned()).or_insert(0) += 1;
            }
        }
        if let Some((n, st)) = self.diagnosis.absent.as_ref().filter(|(n, _)| *n > 0) {
            for r in st.reasons() {
                *h.entry(r.to_owned()).or_insert(0) += n;
            }
        }
        h
    }
}

impl fmt::Display for FitError {
    /// kube-scheduler's wording: `0/5 nodes are available: 2 Insufficient
    /// cpu, 3 node(s) had untolerated taint(s).`, cut at
    /// [`super::MAX_MESSAGE_BYTES`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut whole = String::new();
        self.write_message(&mut whole)?;
        f.write_str(&super::truncate_message(whole, super::MAX_MESSAGE_BYTES))
    }
}

impl FitError {
    fn write_message(&self, f: &mut impl fmt::Write) -> fmt::Result {
        if let Some(msg) = &self.group_message {
            return f.write_str(msg);
        }
        write!(f, "0/{} nodes are available:", self.num_all_nodes)?;
        if let Some(msg) = &self.diagnosis.pre_filter_msg {
            write!(f, " {msg}.")?;
        } else {
            let mut reasons: Vec<String> = self.histogram().into_iter().map(|(r, n)| format!("{n} {r}")).collect();
            reasons.sort();
            if !reasons.is_empty() {
                write!(f, " {}.", reasons.join(", "))?;
            }
        }
        // PostFilter messages end with their own period (kube-scheduler's).
        if let Some(msg) = &self.diagnosis.post_filter_msg {
            write!(f, " {msg}")?;
        }
        Ok(())
    }
}

/// Every plugin's verdict and score for each evaluated node.
#[derive(Debug, Clone, Default)]
pub struct Explanation {
    /// Filter plugins in the order they ran.
    pub filters: Vec<String>,
    /// Score plugins with their weights.
    pub scores: Vec<(String, i64)>,
    /// How many nodes the cycle wanted to find (sampling).
    pub nodes_to_find: usize,
    /// Evaluated nodes, in evaluation order.
    pub nodes: Vec<NodeExplanation>,
    /// The victim search of preemption, node by node, when it ran.
    pub preemption: Vec<super::PreemptionTry>,
}

/// One node in an [`Explanation`].
#[derive(Debug, Clone)]
pub struct NodeExplanation {
    /// Node name.
    pub node: String,
    /// The rejecting status (with its plugin), or `None` if feasible.
    pub rejected: Option<Status>,
    /// Scores by plugin (empty if rejected, or if scoring was not needed).
    pub scores: Vec<PluginScore>,
    /// Weighted total.
    pub total: Option<i64>,
    /// Whether this node was selected.
    pub selected: bool,
}

/// One plugin's score for one node.
#[derive(Debug, Clone)]
pub struct PluginScore {
    /// Plugin name.
    pub plugin: String,
    /// Score before NormalizeScore; `None` if the plugin skipped the pod.
    pub raw: Option<i64>,
    /// Score after NormalizeScore.
    pub normalized: i64,
    /// Normalized score times weight.
    pub weighted: i64,
}

/// What the filters said about one chunk of consecutive nodes: per node,
/// [`FEASIBLE`] or the index of its rejection in `rejected` (which holds the
/// rejecting filter's index and status, in the order the filters ran). No
/// allocation per node, no sorting, no plugin name copied.
struct ChunkOut {
    /// Per node of the chunk: FEASIBLE, or the index of its rejection in
    /// `rejected`.
    verdict: Vec<u32>,
    /// The rejections; nodes rejected one after the other by the same
    /// filter with the very same status ([`Status::is_same`]: a selector's
    /// or a taint's fixed reason) share one entry, so a filter that rejects
    /// most of a large cluster writes and frees a few statuses, not one a
    /// node.
    rejected: Vec<(u16, Status)>,
    /// Whether some status in `rejected` is an error rather than a
    /// rejection (the cycle then fails): the statuses are not read again
    /// to find out.
    failed: bool,
}

const FEASIBLE: u32 = u32::MAX;

/// `i % all` for `i < 2 * all` (a position at most one lap past the end),
/// without the division `%` costs on every node a cycle visits.
#[inline]
fn wrap(i: usize, all: usize) -> usize {
    debug_assert!(i < 2 * all);
    if i >= all { i - all } else { i }
}

/// The plugins that narrowed a cycle's nodes (PreFilter node subsets),
/// sorted and deduplicated in place, and the status of the nodes they left
/// out, as kube-scheduler words it.
pub(crate) fn narrowed_out(plugins: &mut Vec<String>) -> Status {
    plugins.sort();
    plugins.dedup();
    Status::unresolvable(format!("node(s) didn't satisfy plugin(s) [{}]", plugins.join(" ")))
}

/// A rejected node: snapshot index, filter index, status.
pub(crate) type Rejection = (usize, usize, Status);

/// The nodes a cycle's filters rejected, each with the rejecting filter and
/// its status. The statuses stay in the chunks the filters wrote them to:
/// a pod that is placed never reads them (unless its cycle is recorded or
/// explained), so they are not moved one by one into a list of their own.
#[derive(Default)]
pub(crate) struct Rejected {
    chunks: Vec<ChunkOut>,
    /// (snapshot index, chunk, index of its rejection there), in the order
    /// the nodes were examined.
    at: Vec<(usize, u32, u32)>,
    /// Rejections found after the filters ran (nominated pods' recheck).
    more: Vec<Rejection>,
}

impl Rejected {
    /// Takes the rejections of the chunk `out` for the nodes at snapshot
    /// positions `idx(k)` (k: offset in the chunk), up to and including
    /// offset `last`; the cycle's error when a filter failed rather than
    /// rejected.
    fn add_chunk(
        &mut self,
        fw: &Framework,
        snapshot: &Snapshot,
        out: ChunkOut,
        last: usize,
        idx: impl Fn(usize) -> usize,
    ) -> Result<(), ScheduleError> {
        let c = self.chunks.len() as u32;
        for (k, &v) in out.verdict[..=last].iter().enumerate() {
            if v == FEASIBLE {
                continue;
            }
            let (fi, st) = &out.rejected[v as usize];
            if out.failed && !st.is_rejected() {
                return Err(ScheduleError::Error(format!(
                    "running Filter plugin {:?} on node {:?}: {}",
                    fw.filter[*fi as usize].plugin.name(),
                    snapshot.nodes[idx(k)].name(),
                    st.message()
                )));
            }
            self.at.push((idx(k), c, v));
        }
        self.chunks.push(out);
        Ok(())
    }

    /// Adds one rejection after the others.
    pub(crate) fn push(&mut self, r: Rejection) {
        self.more.push(r);
    }

    /// Each rejection: (snapshot index, filter index, status).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (usize, usize, &Status)> {
        self.at
            .iter()
            .map(|&(i, c, v)| {
                let (fi, st) = &self.chunks[c as usize].rejected[v as usize];
                (i, *fi as usize, st)
            })
            .chain(self.more.iter().map(|(i, fi, st)| (*i, *fi, st)))
    }

    /// The rejections, one per node (a status nodes share is copied for
    /// each, a reference count at most).
    pub(crate) fn into_vec(mut self) -> Vec<Rejection> {
        let mut v = Vec::with_capacity(self.at.len() + self.more.len());
        for &(i, c, k) in &self.at {
            // Nodes may share an entry (`ChunkOut::rejected`): each gets a
            // copy, which for a shared status is a reference count.
            let (fi, st) = &self.chunks[c as usize].rejected[k as usize];
            v.push((i, *fi as usize, st.clone()));
        }
        v.append(&mut self.more);
        v
    }
}

impl Framework {
    /// Runs one scheduling cycle for `pod` on `snapshot`: PreFilter, Filter
    /// over a sample of nodes starting at `*next_start` (advanced like
    /// kube-scheduler's `nextStartNodeIndex`), PostFilter if nothing fits,
    /// PreScore, Score, NormalizeScore, weighting, and selection of the best
    /// node (ties broken by `rng`). Reserve is run separately, by whoever
    /// assumes the pod.
    pub fn schedule(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Arc<Snapshot>,
        next_start: &mut usize,
        rng: &mut Rng,
        explain: bool,
    ) -> Result<ScheduleResult, ScheduleError> {
        let all = snapshot.len();
        if all == 0 {
            return Err(ScheduleError::NoNodes);
        }
        self.start_cycle(state, snapshot);

        // Honour or refuse: a field the engine does not implement (or the
        // profile disabled the plugin for) makes the pod unschedulable, as
        // a PreFilter rejection would.
        let without_dra = || {
            (!pod.resource_claims.is_empty() && !self.has_plugin(crate::plugins::dynamic_resources::NAME))
                .then(|| "spec.resourceClaims".to_owned())
        };
        let without_gangs = || {
            (pod.scheduling_group.is_some() && !self.has_plugin(crate::plugins::gang_scheduling::NAME))
                .then(|| "spec.schedulingGroup".to_owned())
        };
        if let Some(field) = pod.unsupported.clone().or_else(without_dra).or_else(without_gangs) {
            return Err(ScheduleError::Unschedulable(Box::new(FitError::new(
                all,
                Diagnosis {
                    pre_filter_msg: Some(format!("pod uses {field}, which {} does not support", self.profile)),
                    ..Default::default()
                },
            ))));
        }

        match self.find_and_select(state, pod, snapshot, next_start, rng, explain) {
            Err(ScheduleError::Unschedulable(mut fit)) => {
                self.run_post_filter(state, pod, snapshot, rng, &mut fit, explain);
                Err(ScheduleError::Unschedulable(fit))
            }
            other => other,
        }
    }

    /// PreFilter, Filter (the nominated node first), Score and selection.
    fn find_and_select(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        next_start: &mut usize,
        rng: &mut Rng,
        explain: bool,
    ) -> Result<ScheduleResult, ScheduleError> {
        let all = snapshot.len();
        self.run_pre_filter(state, pod, snapshot)?;

        // PreFilter node subsets (kube-scheduler's PreFilterResult): only
        // the nodes every narrowing plugin named are filtered; the others
        // count as rejected by those plugins.
        let mut absent = None;
        let mut narrowed_by: Vec<String> = Vec::new();
        let subset = match state.node_subset.take() {
            None => None,
            Some((mut plugins, names)) => {
                let left_out = narrowed_out(&mut plugins);
                if names.is_empty() {
                    let msg = if plugins.len() == 1 {
                        format!("node(s) didn't satisfy plugin {}", plugins[0])
                    } else {
                        format!(
                            "node(s) didn't satisfy plugin(s) [{}] simultaneously",
                            plugins.join(" ")
                        )
                    };
                    let st = Status::unresolvable(msg.clone());
                    return Err(ScheduleError::Unschedulable(Box::new(FitError::new(
                        all,
                        Diagnosis {
                            absent: Some((all, st)),
                            pre_filter_msg: Some(msg),
                            unschedulable_plugins: plugins,
                            ..Default::default()
                        },
                    ))));
                }
                let mut idx: Vec<usize> = names.iter().filter_map(|n| snapshot.position(n)).collect();
                idx.sort_unstable();
                idx.dedup();
                absent = Some((all - idx.len(), left_out));
                narrowed_by = plugins;
                Some(idx)
            }
        };

        // A pod nominated by its preemption tries that node first
        // (kube-scheduler's evaluateNominatedNode).
        let nominated = state
            .nominator()
            .and_then(|n| n.node_of(&pod.key))
            .or(pod.nominated_node.as_deref())
            .and_then(|n| snapshot.position(n))
            .filter(|p| subset.as_ref().is_none_or(|idx| idx.contains(p)));
        if let Some(p) = nominated {
            let (mut feasible, mut rejected, _) = self.filter_subset(state, pod, snapshot, &[p])?;
            self.recheck_nominated(state, pod, snapshot, &mut feasible, &mut rejected)?;
            if !feasible.is_empty() {
                if let Some(r) = state.record_mut() {
                    r.feasible.push((p, None));
                }
                let node = snapshot.nodes[p].name().to_owned();
                return Ok(ScheduleResult {
                    explanation: explain.then(|| Explanation {
                        filters: self.filter.iter().map(|e| e.plugin.name().to_owned()).collect(),
                        scores: Vec::new(),
                        nodes_to_find: 1,
                        nodes: vec![NodeExplanation {
                            node: node.clone(),
                            rejected: None,
                            scores: Vec::new(),
                            total: None,
                            selected: true,
                        }],
                        preemption: Vec::new(),
                    }),
                    node,
                    evaluated_nodes: 1,
                    feasible_nodes: 1,
                    volumes: None,
                    devices: None,
                    waiting: false,
                    plugin_data: None,
                });
            }
        }

        // Filter
        let want = num_feasible_nodes_to_find(self.percentage_of_nodes_to_score, all);
        // The cluster may have shrunk since the last cycle.
        let start = *next_start % all;
        let (mut feasible, mut rejected, processed) = match &subset {
            None => {
                let r = self.find_feasible(state, pod, snapshot, start, want)?;
                *next_start = (start + r.2) % all;
                r
            }
            Some(idx) => self.filter_subset(state, pod, snapshot, idx)?,
        };
        self.recheck_nominated(state, pod, snapshot, &mut feasible, &mut rejected)?;
        if let Some(r) = state.record_mut() {
            // One name per filter, shared by the nodes it rejected.
            let names: Vec<Arc<str>> = self.filter.iter().map(|e| Arc::from(e.plugin.name())).collect();
            r.rejected = rejected
                .iter()
                .map(|(i, fi, st)| (i, st.clone().with_plugin(names[fi].clone())))
                .collect();
        }

        let mut explanation = explain.then(|| Explanation {
            filters: self.filter.iter().map(|e| e.plugin.name().to_owned()).collect(),
            scores: self
                .score
                .iter()
                .map(|e| (e.plugin.name().to_owned(), e.weight))
                .collect(),
            nodes_to_find: want,
            nodes: Vec::new(),
            preemption: Vec::new(),
        });
        if let Some(x) = &mut explanation {
            // Evaluation order: rejected and feasible nodes interleave by position.
            let mut evaluated: Vec<(usize, Option<Status>)> = rejected
                .iter()
                .map(|(i, fi, st)| {
                    (
                        i,
                        Some(st.clone().with_plugin(self.filter[fi].plugin.name().to_owned())),
                    )
                })
                .chain(feasible.iter().map(|&i| (i, None)))
                .collect();
            evaluated.sort_by_key(|(i, _)| (i + all - start) % all);
            x.nodes = evaluated
                .into_iter()
                .map(|(i, rejected)| NodeExplanation {
                    node: snapshot.nodes[i].name().to_owned(),
                    rejected,
                    scores: Vec::new(),
                    total: None,
                    selected: false,
                })
                .collect();
        }

        if feasible.is_empty() {
            let mut unschedulable_plugins: Vec<String> = narrowed_by;
            let node_statuses: Vec<(String, Status)> = rejected
                .into_vec()
                .into_iter()
                .map(|(i, fi, st)| {
                    let p = self.filter[fi].plugin.name().to_owned();
                    if !unschedulable_plugins.contains(&p) {
                        unschedulable_plugins.push(p.clone());
                    }
                    (snapshot.nodes[i].name().to_owned(), st.with_plugin(p))
                })
                .collect();
            let diagnosis = Diagnosis {
                node_statuses,
                absent,
                pre_filter_msg: None,
                post_filter_msg: None,
                unschedulable_plugins,
            };
            let mut fit = FitError::new(all, diagnosis);
            fit.explanation = explanation;
            return Err(ScheduleError::Unschedulable(Box::new(fit)));
        }

        if feasible.len() == 1 && !explain {
            if let Some(r) = state.record_mut() {
                r.feasible.push((feasible[0], None));
            }
            return Ok(ScheduleResult {
                node: snapshot.nodes[feasible[0]].name().to_owned(),
                evaluated_nodes: processed,
                feasible_nodes: 1,
                explanation: None,
                volumes: None,
                devices: None,
                waiting: false,
                plugin_data: None,
            });
        }

        let (nodes, rows) = snapshot.at(feasible.iter().copied());
        self.run_pre_score(state, pod, snapshot, &nodes)?;

        // Score, NormalizeScore, weights
        let mut per_plugin: Vec<(Vec<i64>, Vec<i64>)> = Vec::new();
        let totals = self.weighted_scores(state, pod, &nodes, &rows, explain.then_some(&mut per_plugin))?;
        if let Some(r) = state.record_mut() {
            r.feasible = feasible.iter().zip(&totals).map(|(&i, &t)| (i, Some(t))).collect();
        }

        // Select: highest total, ties uniformly at random (reservoir sampling).
        let mut best = 0;
        let mut ties = 1u64;
        for k in 1..totals.len() {
            if totals[k] > totals[best] {
                best = k;
                ties = 1;
            } else if totals[k] == totals[best] {
                ties += 1;
                if rng.below(ties) == 0 {
                    best = k;
                }
            }
        }

        if let Some(x) = &mut explanation {
            let by_name: std::collections::HashMap<&str, usize> =
                nodes.iter().enumerate().map(|(k, n)| (n.name(), k)).collect();
            for ne in &mut x.nodes {
                let Some(&k) = by_name.get(ne.node.as_str()) else {
                    continue;
                };
                ne.total = Some(totals[k]);
                ne.selected = k == best;
                ne.scores = self
                    .score
                    .iter()
                    .zip(&per_plugin)
                    .map(|(e, (before, after))| PluginScore {
                        plugin: e.plugin.name().to_owned(),
                        raw: before.get(k).copied(),
                        normalized: after.get(k).copied().unwrap_or(0),
                        weighted: after.get(k).copied().unwrap_or(0) * e.weight,
                    })
                    .collect();
            }
        }

        Ok(ScheduleResult {
            node: nodes[best].name().to_owned(),
            evaluated_nodes: processed,
            feasible_nodes: nodes.len(),
            explanation,
            volumes: None,
            devices: None,
            waiting: false,
            plugin_data: None,
        })
    }

    /// Sets up the cycle state for this framework and snapshot.
    pub(crate) fn start_cycle(&self, state: &mut CycleState, snapshot: &Snapshot) {
        state.total_nodes = snapshot.len();
        state.image_nodes = snapshot.image_nodes.clone();
        state.skip_filter = vec![false; self.filter.len()];
        state.skip_score = vec![false; self.score.len()];
    }

    /// Runs the PreFilter plugins: a `Skip` skips that plugin's Filter; a
    /// rejection rejects the pod on every node; an error fails the cycle.
    pub(crate) fn run_pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> Result<(), ScheduleError> {
        let all = snapshot.len();
        for e in &self.pre_filter {
            let name = e.plugin.name();
            let t = state.clock();
            let st = e.plugin.pre_filter(state, pod, snapshot);
            state.record(&*e.plugin, "PreFilter", st.code(), t);
            match st.code() {
                Code::Success => {}
                Code::Skip => {
                    for (i, f) in self.filter.iter().enumerate() {
                        if f.plugin.name() == name {
                            state.skip_filter[i] = true;
                        }
                    }
                }
                Code::Error | Code::Wait => {
                    return Err(ScheduleError::Error(format!(
                        "running PreFilter plugin {name:?}: {}",
                        st.message()
                    )));
                }
                Code::Unschedulable | Code::UnschedulableAndUnresolvable => {
                    let st = st.with_plugin(name.to_owned());
                    let diagnosis = Diagnosis {
                        node_statuses: snapshot
                            .nodes
                            .iter()
                            .map(|n| (n.name().to_owned(), st.clone()))
                            .collect(),
                        absent: None,
                        pre_filter_msg: Some(st.message()),
                        post_filter_msg: None,
                        unschedulable_plugins: vec![name.to_owned()],
                    };
                    return Err(ScheduleError::Unschedulable(Box::new(FitError::new(all, diagnosis))));
                }
            }
        }

        Ok(())
    }

    /// Runs the PreScore plugins over the feasible `nodes`: a `Skip` skips
    /// that plugin's Score; anything but success fails the cycle.
    pub(crate) fn run_pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        nodes: &[&Arc<NodeInfo>],
    ) -> Result<(), ScheduleError> {
        for e in &self.pre_score {
            let name = e.plugin.name();
            let t = state.clock();
            let st = e.plugin.pre_score(state, pod, snapshot, nodes);
            state.record(&*e.plugin, "PreScore", st.code(), t);
            match st.code() {
                Code::Success => {}
                Code::Skip => {
                    for (i, s) in self.score.iter().enumerate() {
                        if s.plugin.name() == name {
                            state.skip_score[i] = true;
                        }
                    }
                }
                _ => {
                    return Err(ScheduleError::Error(format!(
                        "running PreScore plugin {name:?}: {}",
                        st.message()
                    )));
                }
            }
        }

        Ok(())
    }

    /// Score, NormalizeScore and weights over the feasible `nodes` (with
    /// their rows): the weighted total of each. With `keep`, each plugin's
    /// scores before and after NormalizeScore are kept (for explanations).
    pub(crate) fn weighted_scores(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        rows: &[&NodeRow],
        mut keep: Option<&mut Vec<(Vec<i64>, Vec<i64>)>>,
    ) -> Result<Vec<i64>, ScheduleError> {
        let p = state.skip_score.iter().filter(|skip| !**skip).count();
        let n = nodes.len();
        let (mut raw, chunk) = self.score_all(state, pod, nodes, rows)?;
        let mut totals = vec![0i64; n];
        // Scored in one chunk, each plugin's scores are already one run of
        // `raw`, normalized where they are; from several chunks they are
        // gathered into `gathered` first.
        let one_chunk = chunk >= n;
        let mut gathered = if one_chunk { Vec::new() } else { vec![0i64; n] };
        // The column of the next plugin that scored.
        let mut next = 0;
        for (e, skip) in self.score.iter().zip(&state.skip_score) {
            if *skip {
                if let Some(k) = keep.as_deref_mut() {
                    k.push((Vec::new(), Vec::new()));
                }
                continue;
            }
            let j = next;
            next += 1;
            let column = if one_chunk {
                &mut raw[j * n..(j + 1) * n]
            } else {
                // Plugin j's scores of each chunk, one after the other.
                for o in (0..n).step_by(chunk.max(1)) {
                    let m = chunk.min(n - o);
                    gathered[o..o + m].copy_from_slice(&raw[o * p + j * m..o * p + (j + 1) * m]);
                }
                &mut gathered[..]
            };
            let before = if keep.is_some() { column.to_vec() } else { Vec::new() };
            let t = state.clock();
            let st = e.plugin.normalize_scores(state, pod, column);
            state.record(&*e.plugin, "NormalizeScore", st.code(), t);
            if !st.is_success() {
                return Err(ScheduleError::Error(format!(
                    "running NormalizeScore of plugin {:?}: {}",
                    e.plugin.name(),
                    st.message()
                )));
            }
            for (k, &s) in column.iter().enumerate() {
                if !(MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(&s) {
                    return Err(ScheduleError::Error(format!(
                        "plugin {:?} returns an invalid score {s} for node {:?}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                        e.plugin.name(),
                        nodes[k].name()
                    )));
                }
                totals[k] += s * e.weight;
            }
            if let Some(k) = keep.as_deref_mut() {
                k.push((before, column.to_vec()));
            }
        }

        Ok(totals)
    }

    /// Runs the Reserve plugins; on failure, Unreserve runs for those that
    /// reserved, in reverse order.
    pub fn run_reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        for (i, e) in self.reserve.iter().enumerate() {
            let t = state.clock();
            let st = e.plugin.reserve(state, pod, node);
            state.record(&*e.plugin, "Reserve", st.code(), t);
            if !st.is_success() {
                for e in self.reserve[..=i].iter().rev() {
                    e.plugin.unreserve(state, pod, node);
                }
                return st.with_plugin(e.plugin.name().to_owned());
            }
        }
        Status::success()
    }

    /// Runs Unreserve on every Reserve plugin, in reverse order.
    pub fn run_unreserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) {
        for e in self.reserve.iter().rev() {
            e.plugin.unreserve(state, pod, node);
        }
    }

    /// Filters nodes from `start` until `want` are feasible or all were
    /// examined. Returns feasible node indices in order, rejected ones with
    /// the rejecting filter and its status, and how many nodes were processed.
    fn find_feasible(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        start: usize,
        want: usize,
    ) -> Result<(Vec<usize>, Rejected, usize), ScheduleError> {
        let all = snapshot.len();
        let filters = self.active_filters(state);
        let mut feasible = Vec::with_capacity(want.min(all));
        let mut rejected = Rejected::default();
        let mut pos = 0;
        let mut processed = 0;
        'blocks: while pos < all && feasible.len() < want {
            let need = want - feasible.len();
            let block = if pos == 0 {
                need
            } else if feasible.is_empty() {
                all - pos
            } else {
                // Size the next block by the feasibility rate seen so far.
                let rate = feasible.len() as f64 / pos as f64;
                (need as f64 / rate * 1.2) as usize + 16
            }
            .min(all - pos);
            let from = start + pos;
            for (chunk_start, out) in self.filter_block(state, pod, snapshot, from, block, &filters) {
                let at = |off: usize| wrap(from + chunk_start + off, all);
                let Some(mut last) = out.verdict.len().checked_sub(1) else {
                    continue;
                };
                for (off, &v) in out.verdict.iter().enumerate() {
                    if v == FEASIBLE {
                        feasible.push(at(off));
                        if feasible.len() == want {
                            last = off;
                            break;
                        }
                    }
                }
                processed = pos + chunk_start + last + 1;
                rejected.add_chunk(self, snapshot, out, last, at)?;
                if feasible.len() == want {
                    break 'blocks;
                }
            }
            pos += block;
        }
        Ok((feasible, rejected, processed))
    }

    /// The Filter plugins this cycle runs (PreFilter may have skipped some),
    /// with their indexes.
    fn active_filters(&self, state: &CycleState) -> Vec<(usize, &Enabled)> {
        self.filter
            .iter()
            .enumerate()
            .filter(|(i, _)| !state.skip_filter[*i])
            .collect()
    }

    /// Filters only the nodes at snapshot positions `idx` (a PreFilter node
    /// subset), all of them.
    pub(crate) fn filter_subset(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        idx: &[usize],
    ) -> Result<(Vec<usize>, Rejected, usize), ScheduleError> {
        let filters = self.active_filters(state);
        let (nodes, rows) = snapshot.at(idx.iter().copied());
        let out = filter_chunk(state, pod, nodes, rows, &filters);
        let feasible = (out.verdict.iter().enumerate())
            .filter(|(_, v)| **v == FEASIBLE)
            .map(|(k, _)| idx[k])
            .collect();
        let mut rejected = Rejected::default();
        if !idx.is_empty() {
            rejected.add_chunk(self, snapshot, out, idx.len() - 1, |k| idx[k])?;
        }
        Ok((feasible, rejected, idx.len()))
    }

    /// Filters `len` nodes from `from` (wrapping), in parallel chunks when
    /// worth it. Returns each chunk's start offset and result, in order.
    fn filter_block(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        from: usize,
        len: usize,
        filters: &[(usize, &Enabled)],
    ) -> Vec<(usize, ChunkOut)> {
        let all = snapshot.len();
        let run = |offset: usize, n: usize| {
            let (nodes, rows) = snapshot.run(wrap(from + offset, all), n);
            (offset, filter_chunk(state, pod, nodes, rows, filters))
        };
        match &self.pool {
            Some(pool) if len >= parallel_threshold(pool) => {
                // One chunk per worker: a block is a few hundred nodes at
                // adaptive sampling, too little work to pay for more hand-offs.
                let chunk = len.div_ceil(pool.current_num_threads()).max(32);
                let starts: Vec<usize> = (0..len).step_by(chunk).collect();
                pool.install(|| starts.par_iter().map(|&s| run(s, chunk.min(len - s))).collect())
            }
            _ => vec![run(0, len)],
        }
    }

    /// Raw scores of every plugin PreScore did not skip for every node, and
    /// the number of nodes per chunk they were scored in: the chunk of
    /// nodes from `o` (`m` nodes, fewer in the last) holds
    /// `raw[o * p..(o + m) * p]`, plugin after plugin (`p` such plugins, in
    /// their order). Each plugin writes its scores of a chunk where they
    /// stay, one run of `m`, not scattered node by node.
    fn score_all(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
        rows: &[&NodeRow],
    ) -> Result<(Vec<i64>, usize), ScheduleError> {
        // Columns for the plugins that score this pod only (PreScore skips
        // most of them for most pods).
        let active: Vec<&Enabled> = (self.score.iter().enumerate())
            .filter(|(j, _)| !state.skip_score[*j])
            .map(|(_, e)| e)
            .collect();
        let p = active.len();
        let mut raw = vec![0i64; nodes.len() * p];
        if p == 0 || nodes.is_empty() {
            return Ok((raw, nodes.len()));
        }
        let run = |offset: usize, out: &mut [i64]| -> Result<(), ScheduleError> {
            let m = out.len() / p;
            let chunk_nodes = &nodes[offset..offset + m];
            let chunk_rows = &rows[offset..offset + m];
            for (e, col) in active.iter().zip(out.chunks_exact_mut(m)) {
                let t = state.clock();
                let r = e.plugin.score_nodes(state, pod, chunk_nodes, chunk_rows, col);
                state.record(
                    &*e.plugin,
                    "Score",
                    r.as_ref().map_or_else(|st| st.code(), |_| Code::Success),
                    t,
                );
                r.map_err(|st| {
                    ScheduleError::Error(format!("running Score plugin {:?}: {}", e.plugin.name(), st.message()))
                })?;
            }
            Ok(())
        };
        match &self.pool {
            Some(pool) if nodes.len() >= parallel_threshold(pool) => {
                let chunk = nodes.len().div_ceil(pool.current_num_threads()).max(32);
                pool.install(|| {
                    raw.par_chunks_mut(chunk * p)
                        .enumerate()
                        .try_for_each(|(c, out)| run(c * chunk, out))
                })?;
                Ok((raw, chunk))
            }
            _ => {
                run(0, &mut raw)?;
                Ok((raw, nodes.len()))
            }
        }
    }
}

/// Runs every filter over a chunk of nodes, each plugin once for the nodes
/// that are still feasible, so a rejected node is counted under the first
/// plugin that rejects it.
fn filter_chunk(
    state: &CycleState,
    pod: &PodInfo,
    mut batch: Vec<&Arc<NodeInfo>>,
    mut rows: Vec<&NodeRow>,
    filters: &[(usize, &Enabled)],
) -> ChunkOut {
    // A row out of step with its node would let filters decide on stale
    // data: every test run checks them.
    debug_assert!(
        batch.iter().zip(&rows).all(|(n, r)| NodeRow::of(n) == **r),
        "a snapshot row is out of step with its node"
    );
    // Sized for every node rejected: grown node by node, as selectors
    // reject most of a cluster, it copied each rejection again and again.
    let mut out = ChunkOut {
        verdict: vec![FEASIBLE; batch.len()],
        rejected: Vec::with_capacity(batch.len()),
        failed: false,
    };
    // `alive[i]` is the chunk offset of `batch[i]` (and `rows[i]`); all
    // three shrink together, and only when a filter rejected something.
    let mut alive: Vec<u32> = (0..batch.len() as u32).collect();
    let mut rejected = REJECTED.take();
    rejected.reserve(batch.len());
    for (ran, &(fi, e)) in filters.iter().enumerate() {
        rejected.clear();
        let t = state.clock();
        e.plugin.filter_nodes(state, pod, &batch, &rows, &mut rejected);
        let code = if rejected.is_empty() {
            Code::Success
        } else {
            Code::Unschedulable
        };
        state.record(&*e.plugin, "Filter", code, t);
        if rejected.is_empty() {
            continue;
        }
        let mut last = None;
        // This filter's last entry, which the next rejection may share.
        let mut shared: Option<u32> = None;
        for (i, st) in rejected.drain(..) {
            let valid = i < batch.len() && last.is_none_or(|l| i > l);
            let st = if valid {
                st
            } else {
                Status::error(format!("returned a status for node index {i} out of order"))
            };
            let i = i.min(batch.len() - 1);
            last = Some(i);
            let k = alive[i] as usize;
            if out.verdict[k] == FEASIBLE {
                out.failed |= !st.is_rejected();
                if let Some(same) = shared.filter(|&s| out.rejected[s as usize].1.is_same(&st)) {
                    out.verdict[k] = same;
                } else {
                    shared = Some(out.rejected.len() as u32);
                    out.verdict[k] = out.rejected.len() as u32;
                    out.rejected.push((fi as u16, st));
                }
            }
        }
        if ran + 1 == filters.len() {
            // No filter after this one reads what is left.
            break;
        }
        // Keep the nodes still feasible, without a branch on each (which
        // ones a filter rejects follows no pattern a processor predicts).
        let n = batch.len();
        let (alive_n, batch_n, rows_n) = (&mut alive[..n], &mut batch[..n], &mut rows[..n]);
        let mut keep = 0;
        for i in 0..n {
            let a = alive_n[i];
            alive_n[keep] = a;
            batch_n[keep] = batch_n[i];
            rows_n[keep] = rows_n[i];
            keep += (out.verdict[a as usize] == FEASIBLE) as usize;
        }
        alive.truncate(keep);
        batch.truncate(keep);
        rows.truncate(keep);
        if alive.is_empty() {
            break;
        }
    }
    REJECTED.set(rejected);
    out
}

thread_local! {
    /// The list each filter writes its rejections to, kept from chunk to
    /// chunk and cycle to cycle: written for every node a selector
    /// rejects, memory written every cycle stays in the processor's cache,
    /// where a new list had to be fetched line by line first. It keeps
    /// the size of the most rejections one chunk had (72 bytes each: a
    /// few megabytes a thread at 50 000 nodes).
    static REJECTED: std::cell::Cell<Vec<(usize, Status)>> = const { std::cell::Cell::new(Vec::new()) };
}
