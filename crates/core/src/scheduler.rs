//! The scheduler: profiles, cache and queue, and the loop step that takes
//! one pod through one scheduling cycle.
//!
//! Callers feed it cluster changes (`on_*`), call [`Scheduler::schedule_one`]
//! and bind the pods it places, reporting back with
//! [`Scheduler::binding_finished`]. `simulate`, `bench` and the daemon all
//! drive this same type.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::{Node, Pod};

use crate::ModelError;
use crate::cache::{Cache, Snapshot};
use crate::config::{Config, ConfigError};
use crate::events::{self, Action, Change, ClusterEvent, QueueingHint};
use crate::framework::{CycleRecord, CycleState, Framework, Nominating, ScheduleError, ScheduleResult, WaitingPods};
use crate::node::NodeData;
use crate::nominator::Nominator;
use crate::plugins::{Registry, gang_scheduling};
use crate::pod::PodInfo;
use crate::queue::SchedulingQueue;
use crate::rng::Rng;

mod pod_group_cycle;

/// Which pods the scheduler takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Responsibility {
    /// Only pods whose `spec.schedulerName` names a profile (the daemon).
    OwnProfiles,
    /// Every pending pod; pods naming no profile use the first one
    /// (`simulate`: a what-if tool).
    AllPods,
    /// No pending pod: the scheduler only keeps the cluster's state (an
    /// extender, which places nothing itself).
    CachedOnly,
}

/// The outcome of one scheduling attempt.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// The pod.
    pub pod: Arc<PodInfo>,
    /// The profile that scheduled it.
    pub profile: String,
    /// Attempts so far, this one included.
    pub attempts: u32,
    /// When the pod first entered the queue.
    pub queued_at: Instant,
    /// The placement, or why there is none. On success the pod is assumed in
    /// the cache: bind it and call [`Scheduler::binding_finished`].
    pub result: Result<ScheduleResult, ScheduleError>,
    /// Per-plugin timings, in the cycles sampled for them (one in
    /// [`PLUGIN_TIMING_SAMPLE`], as kube-scheduler samples 10 %).
    pub plugin_timings: Vec<crate::framework::PluginTiming>,
    /// Pods of lower priority whose nomination to the node this pod's
    /// preemption chose was cleared (they may no longer fit there).
    pub cleared_nominations: Vec<Arc<PodInfo>>,
    /// On the first attempt of a pod group cycle: how the group fared,
    /// for its `PodGroupScheduled` condition (None when the condition
    /// would not change: a group scheduled once stays so).
    pub pod_group: Option<Arc<GroupOutcome>>,
}

/// The outcome of one cycle of a pod group's pods, as its
/// `PodGroupScheduled` condition says it (kube-scheduler's
/// `updatePodGroupCondition`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupOutcome {
    /// The group's namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// `metadata.generation` of the group read (`observedGeneration`).
    pub generation: i64,
    /// The condition's status: the group was placed.
    pub scheduled: bool,
    /// `Scheduled`, `Unschedulable` or `SchedulerError`.
    pub reason: &'static str,
    /// Empty when placed.
    pub message: String,
    /// The group's pods that took part in the cycle.
    pub pods: usize,
    /// Of them, those that fit (placed, or placed and undone because the
    /// group was not).
    pub fit: usize,
    /// Of them, those placed.
    pub placed: usize,
    /// How many pods name the group.
    pub all_pods: usize,
}

/// One scheduling cycle's result, before it is settled.
struct Cycle {
    result: Result<ScheduleResult, ScheduleError>,
    plugin_timings: Vec<crate::framework::PluginTiming>,
    plugin_data: Option<Arc<crate::framework::PluginData>>,
}

impl Attempt {
    /// The preemption this attempt decided: the pod is nominated to a node
    /// and waits for the victims to go, which the caller evicts.
    pub fn nomination(&self) -> Option<&crate::framework::Nomination> {
        match &self.result {
            Err(ScheduleError::Unschedulable(fit)) => match &fit.nominating {
                Nominating::Node(n) => Some(n),
                _ => None,
            },
            _ => None,
        }
    }
}

/// One cycle in this many records per-plugin timings.
pub const PLUGIN_TIMING_SAMPLE: u64 = 10;

/// A scheduling cycle handed to a shadow ([`Scheduler::set_shadow`]):
/// everything the serving cycle started from, and what it found. The
/// snapshot and nominations are shared, not copied (the next cycle copies
/// the snapshot once if the shadow still holds it).
#[derive(Debug, Clone)]
pub struct ShadowCase {
    /// Index of the profile ([`Scheduler::frameworks`]).
    pub profile: usize,
    /// The pod.
    pub pod: Arc<PodInfo>,
    /// The snapshot the cycle ran on.
    pub snapshot: Arc<Snapshot>,
    /// The nominations the cycle saw.
    pub nominator: Arc<Nominator>,
    /// Where the cycle started sampling nodes.
    pub next_start: usize,
    /// The tie-breaker as the cycle found it.
    pub rng: Rng,
    /// What the serving cycle decided.
    pub serving: crate::framework::CycleOutcome,
    /// What it found node by node.
    pub record: CycleRecord,
    /// How long the serving cycle took (Reserve included).
    pub took: std::time::Duration,
}

impl ShadowCase {
    /// Decides the pod again with `fw` from what the cycle started from
    /// (its own copy of the tie-breaker and node sampling), keeping a
    /// record of the cycle, or explaining it; a panic is the cycle's error,
    /// as in [`Scheduler::schedule_one`].
    pub fn decide(&self, fw: &Framework, explain: bool) -> (Result<ScheduleResult, ScheduleError>, CycleRecord) {
        let mut state = CycleState::default();
        if !explain {
            state.keep_record();
        }
        let result = self.decide_in(fw, &mut state, explain);
        (result, state.take_record().unwrap_or_default())
    }

    /// [`ShadowCase::decide`] in `state`, which the caller reads after
    /// (what the cycle's plugins left there, for Reserve).
    pub fn decide_in(
        &self,
        fw: &Framework,
        state: &mut CycleState,
        explain: bool,
    ) -> Result<ScheduleResult, ScheduleError> {
        state.set_snapshot(self.snapshot.clone());
        state.set_nominator(self.nominator.clone());
        let (mut next_start, mut rng) = (self.next_start, self.rng.clone());
        std::panic::catch_unwind(AssertUnwindSafe(|| {
            fw.schedule(state, &self.pod, &self.snapshot, &mut next_start, &mut rng, explain)
        }))
        .unwrap_or_else(|panic| {
            Err(ScheduleError::Error(format!(
                "scheduling cycle panicked: {}",
                panic_message(&*panic)
            )))
        })
    }
}

/// Where sampled cycles go: a shadow compares its own decision with the
/// serving one, off the scheduling thread. Both calls are made on the
/// scheduling thread and must not wait.
pub trait ShadowTap: Send {
    /// Whether the cycle of `pod` in profile `profile` may be sampled now.
    fn wants(&self, profile: usize, pod: &PodInfo) -> bool;
    /// Takes a sampled cycle (a shadow that is behind drops it, counted).
    fn take(&mut self, case: ShadowCase);
    /// Whether it reads [`ShadowCase::record`] (keeping it costs the cycle
    /// a copy of each rejection; without it the record is empty).
    fn needs_record(&self) -> bool {
        true
    }
}

/// A shadow and its sampling.
struct Shadow {
    tap: Box<dyn ShadowTap>,
    percent: u32,
    /// Percent points owed: a cycle is sampled each time it reaches 100,
    /// so 10 % is every tenth cycle of a shadowed profile (no randomness
    /// taken from the tie-breaker).
    owed: u32,
}

/// What one plugin of a profile registered, for queueing hints.
struct Registration {
    plugin: Arc<dyn crate::framework::Plugin>,
    events: Vec<ClusterEvent>,
}

/// Profiles, cache and queue.
pub struct Scheduler {
    /// Nodes and the pods on them.
    pub cache: Cache,
    /// Pending pods.
    pub queue: SchedulingQueue,
    frameworks: Vec<Framework>,
    /// Shared with the cycle in progress ([`CycleState::snapshot`]); unique
    /// again between cycles, so updating it copies nothing.
    snapshot: Arc<Snapshot>,
    rng: Rng,
    next_start: usize,
    responsibility: Responsibility,
    cycles: u64,
    panics: u64,
    /// Per profile: plugin name → what it registered.
    registrations: Vec<HashMap<String, Registration>>,
    /// Pending pods of ours held back by `spec.schedulingGates`.
    /// (With the pod, and since when it has been gated.)
    gated: HashMap<crate::pod::PodKey, (Arc<PodInfo>, Instant)>,
    /// Pods nominated to nodes by preemption, and victims being evicted;
    /// shared with each cycle, unique again between cycles.
    nominator: Arc<Nominator>,
    /// No scheduling cycle: each pod goes to the next node in turn (see
    /// [`Scheduler::set_null_placement`]).
    null_placement: bool,
    /// Where sampled cycles go ([`Scheduler::set_shadow`]), at most 64.
    taps: Vec<Shadow>,
    /// The pods waiting at Permit.
    waiting: Arc<WaitingPods>,
    /// Placed pods whose binding is in flight, by UID (a pod created again
    /// under the name of one whose binding is in flight is another entry):
    /// their profile, node and plugins' cycle data, for Unreserve when the
    /// binding fails.
    reserved: rustc_hash::FxHashMap<String, Reserved>,
    /// The PodGroups and the pods that name them.
    groups: crate::pod_groups::PodGroups,
    /// Attempts a pod group cycle decided beyond its first, handed out by
    /// the next calls of [`Scheduler::schedule_one`].
    decided: std::collections::VecDeque<Attempt>,
    /// Each group's last cycle, by `namespace/name` (for the web view).
    group_cycles: rustc_hash::FxHashMap<String, Arc<GroupOutcome>>,
}

/// A placed pod whose binding is in flight.
struct Reserved {
    profile: usize,
    pod: Arc<PodInfo>,
    node: String,
    data: Option<Arc<crate::framework::PluginData>>,
}

/// Runs Permit after a successful Reserve (kube-scheduler's
/// `RunPermitPlugins` in the scheduling cycle): a rejection undoes every
/// Reserve and fails the attempt as a one-node `FitError`; a wait marks
/// the placement so its binding cycle waits.
fn permit(
    fw: &Framework,
    state: &mut CycleState,
    pod: &Arc<PodInfo>,
    result: Result<crate::framework::ScheduleResult, ScheduleError>,
    waiting: &WaitingPods,
    now: Instant,
) -> Result<crate::framework::ScheduleResult, ScheduleError> {
    use crate::framework::{FitError, PermitOutcome};
    let mut r = result?;
    if fw.permit.is_empty() {
        return Ok(r);
    }
    match fw.run_permit(state, pod, &r.node, waiting, now) {
        PermitOutcome::Allowed => Ok(r),
        PermitOutcome::Waiting => {
            r.waiting = true;
            Ok(r)
        }
        PermitOutcome::Rejected(st) => {
            fw.run_unreserve(state, pod, &r.node);
            if !st.is_rejected() {
                return Err(ScheduleError::Error(st.message()));
            }
            Err(ScheduleError::Unschedulable(Box::new(FitError::on_node(&r.node, st))))
        }
    }
}

/// The next node in turn that the pod's node selector and required node
/// affinity allow, for [`Scheduler::set_null_placement`].
fn null_place(
    snapshot: &Snapshot,
    pod: &crate::PodInfo,
    next: &mut usize,
) -> Result<crate::framework::ScheduleResult, ScheduleError> {
    let n = snapshot.nodes.len();
    let Some(i) = (0..n)
        .map(|k| (*next + k) % n)
        .find(|&i| crate::plugins::node_affinity::NodeAffinity::matches(pod, &snapshot.nodes[i]))
    else {
        return Err(ScheduleError::Error("no node matches the pod's node selector".into()));
    };
    *next = i + 1;
    Ok(crate::framework::ScheduleResult {
        node: snapshot.nodes[i].name().to_owned(),
        evaluated_nodes: 1,
        feasible_nodes: 1,
        explanation: None,
        volumes: None,
        devices: None,
        waiting: false,
        plugin_data: None,
    })
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field(
                "profiles",
                &self.frameworks.iter().map(|f| &f.profile).collect::<Vec<_>>(),
            )
            .field("nodes", &self.cache.node_count())
            .finish()
    }
}

impl Scheduler {
    /// Builds a scheduler; `seed` makes tie-breaking reproducible.
    pub fn new(
        config: &Config,
        registry: &Registry,
        seed: u64,
        responsibility: Responsibility,
    ) -> Result<Self, ConfigError> {
        let frameworks = config.build_frameworks(registry)?;
        let registrations = frameworks
            .iter()
            .map(|fw| {
                fw.plugins()
                    .into_iter()
                    .map(|p| {
                        let events = p.events_to_register();
                        (p.name().to_owned(), Registration { plugin: p, events })
                    })
                    .collect()
            })
            .collect();
        let mut cache = Cache::new();
        for source in &config.metrics.sources {
            let stale = i64::try_from(source.stale_after().as_millis()).unwrap_or(i64::MAX);
            cache.define_metric_source(&source.name, Some(stale));
        }
        Ok(Scheduler {
            cache,
            queue: SchedulingQueue::new(config.initial_backoff(), config.max_backoff()),
            frameworks,
            registrations,
            snapshot: Arc::default(),
            rng: Rng::new(seed),
            next_start: 0,
            cycles: 0,
            panics: 0,
            responsibility,
            gated: Default::default(),
            nominator: Arc::default(),
            null_placement: false,
            taps: Vec::new(),
            waiting: Arc::default(),
            reserved: Default::default(),
            groups: Default::default(),
            decided: Default::default(),
            group_cycles: Default::default(),
        })
    }

    /// The pods waiting at Permit (shared with the binding cycles, which
    /// wait for their outcome).
    pub fn waiting(&self) -> &Arc<WaitingPods> {
        &self.waiting
    }

    /// What deciding the pod `key` (`namespace/name`) again against the
    /// cluster as it is now starts from: a bound (or assumed) pod taken off
    /// its node, with that node; a pending pod as it stands. None when this
    /// scheduler knows no such pod or places none like it. Copies the
    /// snapshot for a bound pod: for a person's question, not per cycle.
    pub fn case_now(&mut self, key: &str) -> Option<(ShadowCase, Option<String>)> {
        self.cache.update_snapshot(Arc::make_mut(&mut self.snapshot));
        let (pod, node) = match self.cache.pod(key) {
            Some(c) => (c.pod.clone(), Some(c.node.clone())),
            None => (self.queue.get(key)?.pod.clone(), None),
        };
        let profile = self.framework_index(&pod.scheduler_name)?;
        // Decided as if pending: a bound pod names its node (NodeName would
        // keep it there), the pod being decided does not.
        let pod = match &pod.node_name {
            Some(_) => {
                let mut p = (*pod).clone();
                p.node_name = None;
                Arc::new(p)
            }
            None => pod,
        };
        let (snapshot, serving) = match &node {
            Some(n) => {
                let pos = self.snapshot.position(n)?;
                let mut without = crate::what_if::WhatIf::new(&self.snapshot);
                without.remove(pos, &pod);
                (
                    without.snapshot().clone(),
                    crate::framework::CycleOutcome::Placed(n.clone()),
                )
            }
            None => (
                self.snapshot.clone(),
                crate::framework::CycleOutcome::Unschedulable("pending".into()),
            ),
        };
        let case = ShadowCase {
            profile,
            pod,
            snapshot,
            nominator: self.nominator.clone(),
            next_start: self.next_start,
            rng: self.rng.clone(),
            serving,
            record: CycleRecord::default(),
            took: std::time::Duration::ZERO,
        };
        Some((case, node))
    }

    /// Places each pod on the next node in turn that its node selector and
    /// required node affinity allow, without a scheduling cycle (no other
    /// filter, no score: a node may be overcommitted). Everything
    /// around the cycle stays (the queue, assuming, binding, events): what
    /// a client that did no scheduling would cost the API server, for
    /// `bench --e2e --null`. Not for a cluster.
    pub fn set_null_placement(&mut self, on: bool) {
        self.null_placement = on;
    }

    /// Hands `percent` of the cycles of each profile `tap` wants to `tap`
    /// (1 to 100), after they ran: a shadow decides them again its own way
    /// and compares. Nothing the tap does changes a placement: it gets the
    /// cycle's inputs, the tie-breaker and node sampling as they were.
    /// Several taps may be set (a shadow, the web view's decisions); each
    /// samples on its own.
    pub fn set_shadow(&mut self, tap: Box<dyn ShadowTap>, percent: u32) {
        assert!(self.taps.len() < 64, "at most 64 taps");
        self.taps.push(Shadow {
            tap,
            percent: percent.clamp(1, 100),
            owed: 0,
        });
    }

    /// Stops handing cycles to the taps; returns them (dropping a shadow's
    /// lets it finish what it was handed and stop).
    pub fn set_shadow_off(&mut self) -> Vec<Box<dyn ShadowTap>> {
        std::mem::take(&mut self.taps).into_iter().map(|sh| sh.tap).collect()
    }

    /// Runs `f` on the filter/score worker pool, so the parallel sections of
    /// each cycle split work among the pool's threads directly instead of
    /// handing it over from outside (which costs a wake-up per section).
    /// Drive a loop of cycles run back to back through this (`bench`,
    /// `simulate`); entering it for a single cycle is itself a hand-off,
    /// so a caller whose cycles come one at a time (the daemon) calls
    /// [`Scheduler::schedule_one`] directly, and its sections split only
    /// big blocks.
    pub fn with_pool<R: Send>(&mut self, f: impl FnOnce(&mut Self) -> R + Send) -> R {
        match self.frameworks.first().and_then(|fw| fw.pool()).cloned() {
            Some(pool) => pool.install(|| f(self)),
            None => f(self),
        }
    }

    /// The profiles' frameworks.
    pub fn frameworks(&self) -> &[Framework] {
        &self.frameworks
    }

    fn framework_index(&self, scheduler_name: &str) -> Option<usize> {
        profile_index(&self.frameworks, self.responsibility, scheduler_name)
    }

    /// The storage and device objects, to change. The snapshot between
    /// cycles shares them: when nothing else holds the snapshot, it lets go
    /// of them first (the next cycle's update shares them again), so a
    /// change does not copy every claim, slice and allocated device.
    fn storage_mut(&mut self) -> &mut crate::storage::Storage {
        if let Some(snap) = Arc::get_mut(&mut self.snapshot) {
            snap.storage = Arc::default();
        }
        self.cache.storage_mut()
    }

    /// Whether the pod's profile runs DynamicResources and a claim of the
    /// pod keeps it out of the queue (its PreEnqueue).
    fn waits_for_claims(&self, info: &PodInfo) -> bool {
        if info.resource_claims.is_empty() {
            return false;
        }
        let Some(fi) = self.framework_index(&info.scheduler_name) else {
            return false;
        };
        self.frameworks[fi].has_plugin(crate::plugins::dynamic_resources::NAME)
            && crate::plugins::dynamic_resources::pre_enqueue(info, self.cache.storage().devices()).is_some()
    }

    /// Whether the pod's profile runs GangScheduling and its PreEnqueue
    /// keeps the pod out of the queue (its PodGroup does not exist, or a
    /// gang has fewer than `minCount` pods).
    fn waits_for_group(&self, info: &PodInfo) -> bool {
        if info.scheduling_group.is_none() {
            return false;
        }
        let Some(fi) = self.framework_index(&info.scheduler_name) else {
            return false;
        };
        self.frameworks[fi].has_plugin(gang_scheduling::NAME)
            && gang_scheduling::pre_enqueue(info, &self.groups).is_some()
    }

    /// Why a pod waits outside the queue: its scheduling gates, or a
    /// plugin's PreEnqueue (DynamicResources: a claim that does not exist
    /// yet; GangScheduling: its group, or a gang's pods, not all there).
    pub fn gated_reason(&self, info: &PodInfo) -> String {
        if !info.scheduling_gates.is_empty() {
            return format!("scheduling gates: {}", info.scheduling_gates.join(", "));
        }
        crate::plugins::dynamic_resources::pre_enqueue(info, self.cache.storage().devices())
            .or_else(|| gang_scheduling::pre_enqueue(info, &self.groups))
            .unwrap_or_default()
    }

    /// The PodGroups and the pods that name them.
    pub fn pod_groups(&self) -> &crate::pod_groups::PodGroups {
        &self.groups
    }

    /// A PodGroup was added or changed: its pods waiting for it (or for
    /// enough of a gang's pods) are queued if they may be now. A group
    /// that cannot be read is an error naming the field; the version
    /// before it stays.
    pub fn on_pod_group(
        &mut self,
        group: &k8s_openapi::api::scheduling::v1alpha2::PodGroup,
        now: Instant,
    ) -> Result<(), ModelError> {
        let g = crate::pod_groups::PodGroup::parse(group)?;
        let key = g.key();
        self.groups.upsert(g);
        self.recheck_group_waiters(&key, now);
        Ok(())
    }

    /// A PodGroup was deleted: its pods not yet placed wait for it again
    /// (those queued find it gone when their cycle comes).
    pub fn on_pod_group_deleted(&mut self, namespace: &str, name: &str) {
        self.groups.remove(namespace, name);
        self.group_cycles.remove(&crate::pod_groups::group_key(namespace, name));
    }

    /// The last cycle of the group `namespace/name`: how many of its pods
    /// took part, fit and were placed, and its condition.
    pub fn last_group_cycle(&self, key: &str) -> Option<&Arc<GroupOutcome>> {
        self.group_cycles.get(key)
    }

    /// Pods of the group `key` waiting before the queue are queued if
    /// nothing keeps them out any more (kube-scheduler's GangScheduling
    /// hints: a pod of the group added, the group added).
    fn recheck_group_waiters(&mut self, key: &str, now: Instant) {
        let ready: Vec<Arc<PodInfo>> = self
            .groups
            .members(key)
            .filter_map(|m| self.gated.get(&m.key).map(|(p, _)| p.clone()))
            .filter(|p| p.scheduling_gates.is_empty() && !self.waits_for_claims(p) && !self.waits_for_group(p))
            .collect();
        for p in ready {
            self.gated.remove(&p.key);
            self.queue.add(p, now);
        }
    }

    /// Pods waiting for a claim of `namespace` are queued if their claims
    /// now all exist.
    fn recheck_claim_waiters(&mut self, namespace: &str, now: Instant) {
        let ready: Vec<Arc<PodInfo>> = self
            .gated
            .values()
            .filter(|(p, _)| p.namespace == namespace && p.scheduling_gates.is_empty())
            .map(|(p, _)| p.clone())
            .filter(|p| !self.waits_for_claims(p) && !self.waits_for_group(p))
            .collect();
        for p in ready {
            self.gated.remove(&p.key);
            self.queue.add(p, now);
        }
    }

    /// Whether a pod with this `schedulerName` is ours.
    pub fn is_responsible(&self, scheduler_name: &str) -> bool {
        self.framework_index(scheduler_name).is_some()
    }

    /// A node was added or changed. Unschedulable pods are retried if a
    /// plugin that rejected them says the change may help.
    pub fn on_node(&mut self, node: &Node, now: Instant) -> Result<(), ModelError> {
        let data = NodeData::from_node(node)?;
        let name = data.name.clone();
        let old = self.cache.node(&name).map(|n| n.node.clone());
        self.cache.upsert_node(data);
        let new = self.cache.node(&name).map(|n| n.node.clone()).expect("just added");
        match old {
            None => self.requeue_for(&Change::NodeAdded(&new), now),
            Some(old) => {
                let action = events::node_change(&old, &new);
                // One change per kind, as kube-scheduler emits them.
                for bit in single_bits(action) {
                    self.requeue_for(
                        &Change::NodeUpdated {
                            old: &old,
                            new: &new,
                            action: bit,
                        },
                        now,
                    );
                }
            }
        }
        Ok(())
    }

    /// A node was deleted.
    pub fn on_node_deleted(&mut self, name: &str) {
        self.cache.remove_node(name);
    }

    /// A namespace was added or changed: its labels matter to namespace
    /// selectors of pod affinity terms.
    pub fn on_namespace(&mut self, ns: &k8s_openapi::api::core::v1::Namespace, now: Instant) {
        let Some(name) = ns.metadata.name.as_deref() else {
            return;
        };
        if self
            .cache
            .upsert_namespace(name, crate::node::labels_of(ns.metadata.labels.as_ref()))
        {
            self.requeue_for(&Change::NamespaceChanged { name }, now);
        }
    }

    /// A namespace was deleted.
    pub fn on_namespace_deleted(&mut self, name: &str) {
        self.cache.remove_namespace(name);
    }

    /// A Service, ReplicationController, ReplicaSet or StatefulSet was added
    /// or changed (given as JSON): its selector feeds PodTopologySpread's
    /// default constraints. Other kinds are ignored.
    pub fn on_workload(&mut self, obj: &serde_json::Value) -> Result<(), ModelError> {
        if let Some(w) = crate::workloads::Workload::from_value(obj)? {
            self.cache.workloads_mut().upsert(w);
        }
        Ok(())
    }

    /// A workload was deleted.
    pub fn on_workload_deleted(&mut self, kind: crate::workloads::WorkloadKind, namespace: &str, name: &str) {
        self.cache.workloads_mut().remove(kind, namespace, name);
    }

    /// A PersistentVolumeClaim, PersistentVolume, StorageClass or CSINode
    /// was added or changed (given as JSON): the volume plugins read them,
    /// and pods they rejected are retried. Other kinds are ignored.
    pub fn on_storage(&mut self, obj: &serde_json::Value, now: Instant) -> Result<(), ModelError> {
        let s = |p: &str| obj.pointer(p).and_then(serde_json::Value::as_str).unwrap_or_default();
        let Some(kind) = crate::storage::StorageKind::of(s("/apiVersion"), s("/kind")) else {
            return Ok(());
        };
        let key = crate::storage::storage_key(kind, s("/metadata/namespace"), s("/metadata/name"));
        let existed = self.cache.storage().keys_contain(kind, &key);
        self.storage_mut().upsert(obj)?;
        let action = if existed { Action::UPDATE } else { Action::ADD };
        if kind == crate::storage::StorageKind::ResourceClaim {
            self.recheck_claim_waiters(s("/metadata/namespace"), now);
        }
        self.requeue_for(
            &Change::StorageChanged {
                kind,
                key: &key,
                action,
            },
            now,
        );
        Ok(())
    }

    /// A storage object was deleted.
    pub fn on_storage_deleted(&mut self, kind: crate::storage::StorageKind, namespace: &str, name: &str, now: Instant) {
        self.storage_mut().remove(kind, namespace, name);
        self.requeue_for(
            &Change::StorageChanged {
                kind,
                key: &crate::storage::storage_key(kind, namespace, name),
                action: Action::DELETE,
            },
            now,
        );
    }

    /// A metric source's values were refreshed: they replace the source's
    /// previous values (a source the configuration does not define is
    /// defined, its values never stale), and pods rejected by a plugin that
    /// reads live metrics are retried.
    pub fn on_metrics(
        &mut self,
        source: &str,
        series: &[crate::metrics::Series],
        now: Instant,
    ) -> crate::metrics::InstallReport {
        let report = self.cache.install_metrics(source, series);
        self.requeue_for(&Change::MetricsRefreshed { source }, now);
        report
    }

    /// The live metrics the scheduler holds.
    pub fn metrics(&self) -> &crate::metrics::MetricTable {
        self.cache.metrics()
    }

    /// A pod was added or changed. Bound pods count as usage (and leave the
    /// queue); pending pods of ours are queued; terminal pods free their
    /// node. A malformed pod is an error naming the field; if it was
    /// queued, its older version leaves the queue (it must not be placed by
    /// a spec that is no longer the pod's).
    pub fn on_pod(&mut self, pod: &Pod, now: Instant) -> Result<(), ModelError> {
        match PodInfo::for_cache(pod) {
            Ok(info) => {
                self.on_pod_info(Arc::new(info), now);
                Ok(())
            }
            Err(e) => {
                let unbound = pod
                    .spec
                    .as_ref()
                    .and_then(|s| s.node_name.as_deref())
                    .is_none_or(str::is_empty);
                if unbound {
                    let key = format!(
                        "{}/{}",
                        pod.metadata.namespace.as_deref().unwrap_or("default"),
                        pod.metadata.name.as_deref().unwrap_or_default()
                    );
                    self.queue.delete(&key, pod.metadata.uid.as_deref().unwrap_or(""));
                }
                Err(e)
            }
        }
    }

    /// [`Scheduler::on_pod`] for an already parsed pod.
    pub fn on_pod_info(&mut self, info: Arc<PodInfo>, now: Instant) {
        let joined = match &info.scheduling_group {
            // kube-scheduler's PodGroupState counts every pod of the group
            // that has not finished, whoever schedules it.
            Some(g) if !info.terminal => {
                let key = crate::pod_groups::group_key(&info.namespace, g);
                self.groups.add_pod(&key, &info.key, &info.uid).then_some(key)
            }
            _ => {
                self.groups.remove_pod_key(&info.key, "");
                None
            }
        };
        self.on_pod_info_inner(info, now);
        if let Some(key) = joined {
            self.recheck_group_waiters(&key, now);
        }
    }

    fn on_pod_info_inner(&mut self, info: Arc<PodInfo>, now: Instant) {
        let cached = self.cache.pod(&info.key).map(|c| c.pod.clone());
        let gated_since = self.gated.remove(&info.key).map(|(_, since)| since);
        if info.deleting && self.nominator.is_evicting(&info.uid) {
            // The victim's eviction is visible: the pod says so itself now.
            Arc::make_mut(&mut self.nominator).evicted(&info.uid);
        }
        if info.node_name.is_some() || info.terminal {
            if self.nominator.node_of(&info.key).is_some() {
                Arc::make_mut(&mut self.nominator).remove(&info.key);
            }
            self.queue.delete(&info.key, "");
            self.cache.upsert_pod(info.clone());
            let Some(old) = cached else {
                if !info.terminal {
                    self.requeue_for(&Change::AssignedPodAdded(&info), now);
                }
                return;
            };
            if old.uid != info.uid || info.terminal {
                // The pod that used the node is gone (replaced, or finished).
                self.requeue_for(&Change::AssignedPodDeleted(&old), now);
                if !info.terminal {
                    self.requeue_for(&Change::AssignedPodAdded(&info), now);
                }
                return;
            }
            if events::scaled_down(&old, &info) {
                self.requeue_for(&Change::AssignedPodScaledDown { old: &old, new: &info }, now);
            }
            if old.labels != info.labels {
                self.requeue_for(&Change::AssignedPodRelabelled { old: &old, new: &info }, now);
            }
            return;
        }
        if let Some(old) = cached {
            if old.uid == info.uid {
                // The cache holds this pod on a node (our binding is in
                // flight or done): a pending version is stale (the watch has
                // not caught up, or a relist predates the binding). Keep it
                // for a retry should the binding fail, but never requeue it.
                self.queue.update(info);
                return;
            }
            // Another pod of that name: the one on the node is gone.
            self.cache.remove_pod(&old.key);
            self.requeue_for(&Change::AssignedPodDeleted(&old), now);
        }
        if info.deleting {
            // kube-scheduler skips pods being deleted.
            self.queue.delete(&info.key, &info.uid);
            return;
        }
        if !self.is_responsible(&info.scheduler_name) {
            self.queue.delete(&info.key, "");
            return;
        }
        if !info.scheduling_gates.is_empty() {
            // kube-scheduler's SchedulingGates (PreEnqueue): a gated pod is
            // not queued, holds nothing and gets no event; the update that
            // removes its last gate queues it.
            self.queue.delete(&info.key, "");
            self.gated
                .insert(info.key.clone(), (info.clone(), gated_since.unwrap_or(now)));
            return;
        }
        if self.waits_for_claims(&info) || self.waits_for_group(&info) {
            // DynamicResources' PreEnqueue: a claim not created yet (or
            // missing) keeps the pod out of the queue like a gate; the
            // claim's arrival, or the pod's update, queues it. So does
            // GangScheduling's, until the pod's group and enough of a
            // gang's pods exist.
            self.queue.delete(&info.key, "");
            self.gated
                .insert(info.key.clone(), (info.clone(), gated_since.unwrap_or(now)));
            return;
        }
        let queued = self
            .queue
            .get(&info.key)
            .filter(|q| q.pod.uid == info.uid)
            .map(|q| q.pod.clone());
        self.nominate_from_status(&info, queued.as_ref());
        let change = queued.and_then(|old| events::pod_change(&old, &info).map(|a| (old, a)));
        self.queue.add(info.clone(), now);
        if let Some((old, action)) = change {
            let actions = if action == Action::UPDATE {
                vec![action]
            } else {
                single_bits(action)
            };
            let regs = self
                .framework_index(&info.scheduler_name)
                .map(|fi| &self.registrations[fi]);
            let worth = actions.into_iter().any(|a| {
                let change = Change::PodUpdated {
                    old: &old,
                    new: &info,
                    action: a,
                };
                regs.is_some_and(|r| worth_requeuing(r, &info, self.queue.rejectors(&info.key), &change))
            });
            if worth {
                self.queue.move_one(&info.key, now);
            }
        }
    }

    /// Follows a pending pod's `status.nominatedNodeName` (kube-scheduler's
    /// nominator): set, it nominates; removed, it clears; absent before and
    /// after, a nomination this scheduler made (and has not written yet)
    /// stays, holding the latest version of the pod.
    fn nominate_from_status(&mut self, info: &Arc<PodInfo>, old: Option<&Arc<PodInfo>>) {
        match (&info.nominated_node, old.and_then(|o| o.nominated_node.as_ref())) {
            (Some(node), _) => {
                if self.nominator.node_of(&info.key) != Some(node.as_str())
                    || self.nominator.on_node(node).iter().all(|p| !Arc::ptr_eq(p, info))
                {
                    Arc::make_mut(&mut self.nominator).nominate(info.clone(), node);
                }
            }
            (None, Some(_)) => {
                Arc::make_mut(&mut self.nominator).remove(&info.key);
            }
            (None, None) => {
                if self.nominator.node_of(&info.key).is_some() {
                    Arc::make_mut(&mut self.nominator).refresh(info);
                }
            }
        }
    }

    /// The pods nominated to nodes, and the victims being evicted.
    pub fn nominator(&self) -> &Nominator {
        &self.nominator
    }

    /// The eviction of the victim of `uid` ended (it failed, or the victim
    /// is gone): a preemptor waiting on it may preempt again.
    pub fn eviction_finished(&mut self, uid: &str) {
        if self.nominator.is_evicting(uid) {
            Arc::make_mut(&mut self.nominator).evicted(uid);
        }
    }

    /// A pod was deleted (`uid` empty: whichever pod has that name). If it
    /// used a node, unschedulable pods it may make room for are retried.
    pub fn on_pod_deleted(&mut self, key: &str, uid: &str, now: Instant) {
        // A pod held at Permit: its binding cycle ends, and Unreserve runs,
        // when it hears.
        let held: Vec<String> = match uid {
            "" => self
                .reserved
                .values()
                .filter(|r| r.pod.key.as_str() == key)
                .map(|r| r.pod.uid.clone())
                .collect(),
            uid => vec![uid.to_owned()],
        };
        for uid in held {
            self.waiting.reject(&uid, "", "removed");
        }
        self.groups.remove_pod_key(key, uid);
        self.queue.delete(key, uid);
        self.gated.remove(key);
        if self.nominator.node_of(key).is_some() {
            Arc::make_mut(&mut self.nominator).remove(key);
        }
        if let Some(c) = self.cache.pod(key) {
            let uid = c.pod.uid.clone();
            self.eviction_finished(&uid);
        }
        let Some(old) = self.cache.pod(key).map(|c| c.pod.clone()) else {
            return;
        };
        if uid.is_empty() || old.uid == uid {
            let assumed = self.cache.is_assumed(key);
            self.cache.remove_pod(key);
            if assumed {
                // Deleted while its binding (and its volumes') was in flight.
                self.free_volume_plan(key, now);
            }
            self.requeue_for(&Change::AssignedPodDeleted(&old), now);
        }
    }

    /// A cluster change: moves the unschedulable pods it may help.
    fn requeue_for(&mut self, change: &Change<'_>, now: Instant) {
        let (resource, action) = change.event();
        let interesting = self
            .registrations
            .iter()
            .flat_map(|m| m.values())
            .any(|r| r.events.iter().any(|e| e.matches(resource, action)));
        if !interesting {
            return;
        }
        // No unschedulable pod was rejected by a plugin that registered for
        // this change (or by a plugin a profile does not know): nothing to
        // scan. Keeps a success from costing a pass over a large backlog.
        let registrations = &self.registrations;
        let matters = |plugin: &str| {
            registrations.iter().any(|r| {
                r.get(plugin)
                    .is_none_or(|reg| reg.events.iter().any(|e| e.matches(resource, action)))
            })
        };
        if !self.queue.unschedulable_rejected_by(matters) {
            return;
        }
        let Scheduler {
            queue,
            frameworks,
            registrations,
            responsibility,
            ..
        } = self;
        queue.move_matching(now, |qp, rejectors| {
            profile_index(frameworks, *responsibility, &qp.pod.scheduler_name)
                .is_some_and(|fi| worth_requeuing(&registrations[fi], &qp.pod, rejectors, change))
        });
    }

    /// Takes the next pod from the queue through one scheduling cycle. On
    /// success the pod is reserved and assumed on its node; on failure it is
    /// parked (unschedulable) or backed off (error). A pod of a PodGroup
    /// brings the group's other queued pods into one pod group cycle
    /// (`pod_group_cycle.rs`): the first of their attempts is returned, the
    /// others by the next calls. `None` when no pod is ready.
    pub fn schedule_one(&mut self, now: Instant, explain: bool) -> Option<Attempt> {
        if let Some(a) = self.decided.pop_front() {
            return Some(a);
        }
        loop {
            let qp = self.queue.pop(now)?;
            let key = qp.pod.key.clone();
            let Some(fi) = self.framework_index(&qp.pod.scheduler_name) else {
                self.queue.done(&key, &qp.pod.uid);
                continue;
            };
            if qp.pod.deleting {
                self.queue.done(&key, &qp.pod.uid);
                continue;
            }
            if qp.pod.scheduling_group.is_some() && self.frameworks[fi].has_plugin(gang_scheduling::NAME) {
                let mut attempts = self.schedule_group(qp, fi, now, explain).into_iter();
                let Some(first) = attempts.next() else { continue };
                self.decided.extend(attempts);
                return Some(first);
            }
            let cycle = self.cycle(fi, &qp.pod, now, explain, None);
            if let Some(a) = self.settle(fi, qp, cycle, now) {
                return Some(a);
            }
        }
    }

    /// Forgets the attempts a pod group cycle decided and has not handed
    /// out yet (the caller stopped scheduling: it lost its lease): the
    /// pods placed are forgotten and backed off, as after a failed
    /// binding; the others are in the queue already. Returns how many
    /// placements were forgotten.
    pub fn forget_decided(&mut self, now: Instant) -> usize {
        let mut forgotten = 0;
        for a in std::mem::take(&mut self.decided) {
            if a.result.is_ok() {
                self.binding_finished(&a.pod.key, &a.pod.uid, false, now);
                forgotten += 1;
            }
        }
        forgotten
    }

    /// Runs one scheduling cycle of `pod` with profile `fi` (Filter and
    /// Score, Reserve, Permit) against the cluster as it is now, handing it
    /// to the shadow taps it is due to. Changes nothing but the plugins'
    /// reservations and the waiting pods: the caller settles it.
    fn cycle(
        &mut self,
        fi: usize,
        pod: &Arc<PodInfo>,
        now: Instant,
        explain: bool,
        group: Option<gang_scheduling::GroupView>,
    ) -> Cycle {
        self.cache.update_snapshot(Arc::make_mut(&mut self.snapshot));
        let fw = &self.frameworks[fi];
        let mut state = CycleState::default();
        state.set_snapshot(self.snapshot.clone());
        state.set_nominator(self.nominator.clone());
        state.set_waiting(self.waiting.clone());
        if let Some(view) = group {
            state.write(gang_scheduling::GROUP_VIEW, view);
        }
        self.cycles += 1;
        if self.cycles.is_multiple_of(PLUGIN_TIMING_SAMPLE) {
            state.sample_plugin_timings();
        }
        let null = self.null_placement;
        // Which taps this cycle is due to, one bit each, and whether one
        // of them reads the cycle's record.
        let mut due = 0u64;
        let mut record = false;
        if !null {
            for (i, sh) in self.taps.iter_mut().enumerate() {
                if !sh.tap.wants(fi, pod) {
                    continue;
                }
                sh.owed += sh.percent;
                if sh.owed >= 100 {
                    sh.owed -= 100;
                    due |= 1 << i;
                    record |= sh.tap.needs_record();
                }
            }
        }
        let before = (due != 0).then(|| {
            if record {
                state.keep_record();
            }
            (self.next_start, self.rng.clone(), Instant::now())
        });
        let (snapshot, next_start, rng, waiting) = (&self.snapshot, &mut self.next_start, &mut self.rng, &self.waiting);
        // A panic in a plugin (or in the engine) fails this attempt, not
        // the scheduler: the pod is retried after backoff.
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            if null {
                return null_place(snapshot, pod, next_start);
            }
            let mut result = fw.schedule(&mut state, pod, snapshot, next_start, rng, explain);
            if let Ok(r) = &mut result {
                let st = fw.run_reserve(&mut state, pod, &r.node);
                r.volumes = state
                    .read::<crate::storage::VolumePlan>(crate::storage::VOLUME_PLAN)
                    .filter(|p| !p.is_empty())
                    .cloned();
                r.devices = state
                    .read::<crate::dra::DraPlan>(crate::dra::DRA_PLAN)
                    .filter(|p| !p.is_empty())
                    .cloned();
                if !st.is_success() {
                    result = Err(ScheduleError::Error(format!(
                        "running Reserve plugin {:?}: {}",
                        st.plugin().unwrap_or_default(),
                        st.message()
                    )));
                } else {
                    result = permit(fw, &mut state, pod, result, waiting, now);
                }
            }
            result
        }));
        let result = outcome.unwrap_or_else(|panic| {
            self.panics += 1;
            Err(ScheduleError::Error(format!(
                "scheduling cycle panicked: {}",
                panic_message(&*panic)
            )))
        });
        if let Some((next_start, rng, t0)) = before {
            let case = ShadowCase {
                profile: fi,
                pod: pod.clone(),
                snapshot: self.snapshot.clone(),
                nominator: self.nominator.clone(),
                next_start,
                rng,
                serving: crate::framework::CycleOutcome::of(&result),
                record: state.take_record().unwrap_or_default(),
                took: t0.elapsed(),
            };
            let last = 63 - due.leading_zeros() as usize;
            let mut case = Some(case);
            for (i, sh) in self.taps.iter_mut().enumerate() {
                if due & (1 << i) != 0 {
                    let c = if i == last { case.take() } else { case.clone() };
                    if let Some(c) = c {
                        sh.tap.take(c);
                    }
                }
            }
        }
        // The cycle's state shares the snapshot and the nominations:
        // dropped here, both are unique again for the updates below.
        let plugin_timings = state.take_plugin_timings();
        let plugin_data = state.take_plugin_data();
        drop(state);
        let mut result = result;
        if let Ok(r) = &mut result {
            r.plugin_data = plugin_data.clone();
        }
        Cycle {
            result,
            plugin_timings,
            plugin_data,
        }
    }

    /// Assumes a placed pod on its node, with its volumes and devices,
    /// until its binding is confirmed or fails; false if the pod is bound
    /// already (a bound pod is never moved).
    fn assume(
        &mut self,
        fi: usize,
        pod: &Arc<PodInfo>,
        r: &ScheduleResult,
        data: Option<Arc<crate::framework::PluginData>>,
    ) -> bool {
        if !self.cache.assume_pod(pod.clone(), &r.node) {
            return false;
        }
        self.reserved.insert(
            pod.uid.clone(),
            Reserved {
                profile: fi,
                pod: pod.clone(),
                node: r.node.clone(),
                data,
            },
        );
        let key = &pod.key;
        if let Some(plan) = &r.volumes {
            // The chosen volumes are taken until the API shows
            // the binding or it fails.
            self.storage_mut().assume(key, plan.clone());
        }
        if let Some(plan) = &r.devices {
            // So are the devices, until the claims' status is
            // written and the pod bound, or that fails.
            self.storage_mut().devices_mut().assume(key, plan.clone());
        }
        true
    }

    /// What a failed attempt does to the nominations (preemption's, and
    /// those of lower-priority pods it displaces); returns the pods whose
    /// nomination was cleared.
    fn nominate_after(
        &mut self,
        pod: &Arc<PodInfo>,
        fit: &crate::framework::FitError,
        now: Instant,
    ) -> Vec<Arc<PodInfo>> {
        let mut cleared = Vec::new();
        let nominator = Arc::make_mut(&mut self.nominator);
        match &fit.nominating {
            Nominating::Keep => {}
            Nominating::Clear => {
                nominator.remove(&pod.key);
            }
            Nominating::Node(n) => {
                // Lower-priority pods nominated there may no
                // longer fit: they look for another place.
                for p in nominator.on_node(&n.node).to_vec() {
                    if p.priority < pod.priority {
                        nominator.remove(&p.key);
                        cleared.push(p);
                    }
                }
                nominator.nominate(pod.clone(), &n.node);
                for v in &n.victims {
                    nominator.evicting(&v.uid);
                }
            }
        }
        for p in &cleared {
            self.queue.move_one(&p.key, now);
        }
        cleared
    }

    /// Settles a single pod's cycle: a placed pod is assumed, a pod that
    /// fits nowhere parked (or nominated where preemption makes room), one
    /// that failed backed off. None when the pod turned out bound already.
    fn settle(&mut self, fi: usize, qp: crate::queue::QueuedPod, cycle: Cycle, now: Instant) -> Option<Attempt> {
        let Cycle {
            result,
            plugin_timings,
            plugin_data,
        } = cycle;
        let key = &qp.pod.key;
        let uid = &qp.pod.uid;
        let mut cleared_nominations = Vec::new();
        match &result {
            Ok(r) => {
                if self.nominator.node_of(key).is_some() {
                    Arc::make_mut(&mut self.nominator).remove(key);
                }
                if !self.assume(fi, &qp.pod, r, plugin_data) {
                    // Already bound (a bound pod is never moved): nothing to do.
                    if r.waiting {
                        self.waiting.remove(uid);
                    }
                    self.queue.done(key, uid);
                    return None;
                }
                // Pods waiting for this one (pod affinity) may fit now.
                self.requeue_for(&Change::AssignedPodAdded(&qp.pod), now);
            }
            Err(ScheduleError::Unschedulable(fit)) => {
                cleared_nominations = self.nominate_after(&qp.pod, fit, now);
                let rejectors = fit.diagnosis.unschedulable_plugins.clone();
                self.queue.add_unschedulable(key, uid, rejectors, now)
            }
            Err(ScheduleError::NoNodes) => self.queue.add_unschedulable(key, uid, Vec::new(), now),
            Err(ScheduleError::Error(_)) => self.queue.add_backoff(key, uid, now),
        }
        Some(self.attempt(fi, qp, result, plugin_timings, cleared_nominations))
    }

    /// The attempt of `qp` with profile `fi`.
    fn attempt(
        &self,
        fi: usize,
        qp: crate::queue::QueuedPod,
        result: Result<ScheduleResult, ScheduleError>,
        plugin_timings: Vec<crate::framework::PluginTiming>,
        cleared_nominations: Vec<Arc<PodInfo>>,
    ) -> Attempt {
        Attempt {
            profile: self.frameworks[fi].profile.clone(),
            attempts: qp.attempts,
            queued_at: qp.initial,
            result,
            plugin_timings,
            cleared_nominations,
            pod_group: None,
            pod: qp.pod,
        }
    }

    /// Reports the binding of a placed pod (of `uid`: the outcome of an
    /// earlier pod of the same name touches nothing): on success the
    /// assumption is confirmed and the pod leaves the queue; on failure it is
    /// forgotten (its node is freed, which may make room for unschedulable
    /// pods) and the pod retried after backoff.
    pub fn binding_finished(&mut self, key: &str, uid: &str, ok: bool, now: Instant) {
        if ok {
            if self.cache.storage().has_plan(key) {
                self.storage_mut().confirm(key);
            }
            if self.cache.storage().devices().has_plan(key) {
                self.storage_mut().devices_mut().confirm(key);
            }
            self.cache.finish_binding(key, uid);
            self.queue.done(key, uid);
            self.reserved.remove(uid);
        } else {
            self.unreserve(uid);
            self.forget(key, uid, now);
            self.queue.add_backoff(key, uid, now);
        }
    }

    /// Runs the Unreserve plugins of a placed pod whose binding cycle
    /// failed (Permit rejected or timed out, PreBind or the binding
    /// failed, the pod was deleted meanwhile), in reverse order, with what
    /// its plugins kept for the cycle.
    fn unreserve(&mut self, uid: &str) {
        let Some(r) = self.reserved.remove(uid) else { return };
        self.waiting.remove(uid);
        let mut state = CycleState::with_plugin_data(r.data);
        state.set_waiting(self.waiting.clone());
        if let Some(fw) = self.frameworks.get(r.profile) {
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| fw.run_unreserve(&mut state, &r.pod, &r.node)));
            if outcome.is_err() {
                self.panics += 1;
            }
        }
    }

    /// Drops a pod (of `uid`) that no longer needs scheduling (bound by
    /// someone else, or deleted) whatever its state in the queue, and
    /// forgets its assumption.
    pub fn drop_pod(&mut self, key: &str, uid: &str, now: Instant) {
        self.unreserve(uid);
        self.forget(key, uid, now);
        self.queue.delete(key, uid);
        self.queue.done(key, uid);
    }

    /// The volumes and devices the assumed pod `key` was to bind (if any)
    /// are free again: the pods waiting for them may fit.
    fn free_volume_plan(&mut self, key: &str, now: Instant) {
        let (devices, volumes) = self.drop_plans(key);
        for (freed, kind) in [
            (devices, crate::storage::StorageKind::ResourceClaim),
            (volumes, crate::storage::StorageKind::Volume),
        ] {
            if freed {
                self.requeue_for(
                    &Change::StorageChanged {
                        kind,
                        key: "",
                        action: Action::UPDATE,
                    },
                    now,
                );
            }
        }
    }

    /// Forgets the devices and volumes the assumed pod `key` was to bind;
    /// says which it had.
    fn drop_plans(&mut self, key: &str) -> (bool, bool) {
        let devices = self.cache.storage().devices().has_plan(key);
        if devices {
            self.storage_mut().devices_mut().forget(key);
        }
        let volumes = self.cache.storage().has_plan(key);
        if volumes {
            self.storage_mut().forget(key);
        }
        (devices, volumes)
    }

    fn forget(&mut self, key: &str, uid: &str, now: Instant) {
        if let Some(old) = self.cache.forget_pod(key, uid) {
            self.free_volume_plan(key, now);
            // kube-scheduler's AssignedPodDelete after a failed binding.
            self.requeue_for(&Change::AssignedPodDeleted(&old), now);
        }
    }

    /// Pending pods of ours waiting for their scheduling gates to be
    /// removed (kube-scheduler's `gated` pending pods).
    pub fn gated_pods(&self) -> usize {
        self.gated.len()
    }

    /// The keys of the gated pods (a relist drops those the server no
    /// longer has).
    pub fn gated_keys(&self) -> Vec<crate::pod::PodKey> {
        self.gated.keys().cloned().collect()
    }

    /// The gated pods (their gates in [`PodInfo::scheduling_gates`]), each
    /// with when it was first seen gated.
    pub fn gated(&self) -> impl Iterator<Item = (&Arc<PodInfo>, Instant)> {
        self.gated.values().map(|(p, since)| (p, *since))
    }

    /// Scheduling cycles that panicked so far (each failed its pod only).
    pub fn panics(&self) -> u64 {
        self.panics
    }

    /// The cluster as it is now (bound and assumed pods, nodes), for
    /// evaluating plugins outside a scheduling cycle (an extender).
    pub fn snapshot_now(&mut self) -> Arc<Snapshot> {
        self.cache.update_snapshot(Arc::make_mut(&mut self.snapshot));
        self.snapshot.clone()
    }
}

/// The profile that schedules pods naming `scheduler_name`.
fn profile_index(frameworks: &[Framework], responsibility: Responsibility, scheduler_name: &str) -> Option<usize> {
    if responsibility == Responsibility::CachedOnly {
        return None;
    }
    match frameworks.iter().position(|f| f.profile == scheduler_name) {
        Some(i) => Some(i),
        None if responsibility == Responsibility::AllPods => Some(0),
        None => None,
    }
}

/// Whether any plugin of the pod's profile (`regs`) that rejected `pod`
/// (all of them: `rejectors` empty) registered for `change` and says it may
/// help.
fn worth_requeuing(
    regs: &HashMap<String, Registration>,
    pod: &PodInfo,
    rejectors: &[String],
    change: &Change<'_>,
) -> bool {
    let (resource, action) = change.event();
    if rejectors.is_empty() {
        return regs
            .values()
            .any(|r| r.events.iter().any(|e| e.matches(resource, action)));
    }
    rejectors.iter().any(|name| {
        regs.get(name).is_none_or(|r| {
            r.events.iter().any(|e| e.matches(resource, action))
                && r.plugin.queueing_hint(pod, change) == QueueingHint::Queue
        })
    })
}

/// Each bit of an action on its own.
fn single_bits(action: Action) -> Vec<Action> {
    action.each().collect()
}

/// The message of a caught panic (`panic!` with a literal or a format).
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::parse_objects;
    use crate::queue::Location;

    const CLUSTER: &str = r#"
kind: List
items:
- kind: Node
  metadata: {name: small, labels: {topology.kubernetes.io/zone: a}}
  status: {allocatable: {cpu: "1", memory: 2Gi, pods: "10"}}
- kind: Node
  metadata: {name: big, labels: {topology.kubernetes.io/zone: b}}
  status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
- kind: Node
  metadata: {name: gpu, labels: {topology.kubernetes.io/zone: b}}
  spec: {taints: [{key: dedicated, value: gpu, effect: NoSchedule}]}
  status: {allocatable: {cpu: "16", memory: 64Gi, pods: "10"}}
- kind: Pod
  metadata: {name: running, namespace: default}
  spec: {nodeName: big, containers: [{name: c, resources: {requests: {cpu: "3"}}}]}
"#;

    fn sched() -> Scheduler {
        loaded(Scheduler::new(&Config::default(), &Registry::builtin(), 1, Responsibility::AllPods).unwrap())
    }

    /// `s` with the nodes and pods of `CLUSTER`.
    fn loaded(mut s: Scheduler) -> Scheduler {
        let objs = parse_objects(CLUSTER).unwrap();
        let now = Instant::now();
        for n in &objs.nodes {
            s.on_node(n, now).unwrap();
        }
        for p in &objs.pods {
            s.on_pod(p, now).unwrap();
        }
        s
    }

    fn pending(name: &str, cpu: &str) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
        }))
        .unwrap()
    }

    /// A bound pod is decided again on the cluster as it is without it:
    /// its node has its requests free; a pending pod as it stands; an
    /// unknown pod, nothing.
    #[test]
    fn a_pod_is_decided_now_without_itself() {
        let mut s = sched();
        let (case, node) = s.case_now("default/running").unwrap();
        assert_eq!(node.as_deref(), Some("big"));
        let big = &case.snapshot.nodes[case.snapshot.position("big").unwrap()];
        assert_eq!(big.usage.requested.milli_cpu, 0, "its 3 CPUs are free again");
        let live = &s.snapshot.nodes[s.snapshot.position("big").unwrap()];
        assert_eq!(live.usage.requested.milli_cpu, 3000, "the live snapshot keeps it");
        assert_eq!(case.pod.node_name, None, "decided as if pending");
        let (again, _) = case.decide(&s.frameworks()[case.profile], false);
        assert!(again.is_ok(), "{again:?}");
        s.on_pod(&pending("waiting", "100m"), Instant::now()).unwrap();
        let (case, node) = s.case_now("default/waiting").unwrap();
        assert_eq!(node, None);
        assert_eq!(case.pod.key, "default/waiting");
        assert!(s.case_now("default/nobody").is_none());
    }

    /// A bound pod from the API keeps only what names it; a pending one
    /// keeps its whole object (reports and plugins read it).
    #[test]
    fn bound_pods_keep_only_their_names_and_labels() {
        let mut s = sched();
        let now = Instant::now();
        let mut p = pending("waiting", "100m");
        p.metadata.labels = Some([("app".to_owned(), "web".to_owned())].into());
        p.metadata.annotations = Some([("note".to_owned(), "x".repeat(1000))].into());
        s.on_pod(&p, now).unwrap();
        assert!(s.queue.get("default/waiting").unwrap().pod.object.pod().spec.is_some());
        p.spec.as_mut().unwrap().node_name = Some("small".into());
        s.on_pod(&p, now).unwrap();
        let cached = &s.cache.pod("default/waiting").unwrap().pod;
        assert_eq!(cached.node_name.as_deref(), Some("small"));
        assert_eq!(cached.requests.requests.milli_cpu, 100, "parsed before shedding");
        let o = &cached.object.pod();
        assert!(o.spec.is_none() && o.status.is_none() && o.metadata.annotations.is_none());
        assert_eq!(o.metadata.name.as_deref(), Some("waiting"));
        assert_eq!(o.metadata.labels, p.metadata.labels);
    }

    /// Nodes one filter rejects in a row with the same status share it in
    /// the cycle's record of rejections; each still counts, and each is
    /// named with its own plugin and reason.
    #[test]
    fn nodes_rejected_alike_are_each_counted_and_named() {
        let mut s = Scheduler::new(&Config::default(), &Registry::builtin(), 1, Responsibility::AllPods).unwrap();
        let now = Instant::now();
        let node = |name: &str, zone: &str, cpu: &str, taint: bool| -> Node {
            let taints = if taint {
                serde_json::json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
            } else {
                serde_json::json!([])
            };
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
                "spec": {"taints": taints},
                "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "10"}}
            }))
            .unwrap()
        };
        for n in [
            node("b1", "b", "4", false),
            node("b2", "b", "4", false),
            node("a-tainted", "a", "4", true),
            node("b3", "b", "4", false),
            node("a-small", "a", "1", false),
            node("b4", "b", "4", false),
            node("a-big", "a", "4", false),
        ] {
            s.on_node(&n, now).unwrap();
        }
        let mut p = pending("picky", "2");
        p.spec.as_mut().unwrap().node_selector =
            Some([("topology.kubernetes.io/zone".to_owned(), "a".to_owned())].into());
        s.on_pod(&p, now).unwrap();
        // The one node that fits is taken; then, with it full, none fits.
        assert_eq!(s.schedule_one(now, false).unwrap().result.unwrap().node, "a-big");
        let mut p2 = pending("picky-2", "3");
        p2.spec = p.spec.clone();
        p2.spec.as_mut().unwrap().containers[0].resources =
            Some(serde_json::from_value(serde_json::json!({"requests": {"cpu": "3"}})).unwrap());
        s.on_pod(&p2, now).unwrap();
        let a = s.schedule_one(now, false).unwrap();
        let Err(ScheduleError::Unschedulable(fit)) = &a.result else {
            panic!("{:?}", a.result.map(|r| r.node));
        };
        assert!(
            fit.to_string().starts_with(
                "0/7 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu, \
                 4 node(s) didn't match Pod's node affinity/selector."
            ),
            "{fit}"
        );
        let mut by_node: Vec<(String, String)> = fit
            .diagnosis
            .node_statuses
            .iter()
            .map(|(n, st)| {
                (
                    n.clone(),
                    format!("{}: {}", st.plugin().unwrap_or_default(), st.message()),
                )
            })
            .collect();
        by_node.sort();
        let selector = "NodeAffinity: node(s) didn't match Pod's node affinity/selector";
        assert_eq!(
            by_node,
            [
                ("a-big", "NodeResourcesFit: Insufficient cpu"),
                ("a-small", "NodeResourcesFit: Insufficient cpu"),
                ("a-tainted", "TaintToleration: node(s) had untolerated taint(s)"),
                ("b1", selector),
                ("b2", selector),
                ("b3", selector),
                ("b4", selector),
            ]
            .map(|(n, m)| (n.to_owned(), m.to_owned()))
        );
    }

    /// Null placement takes the nodes in turn, skipping those the pod's
    /// node selector does not allow.
    #[test]
    fn null_placement_honours_the_node_selector() {
        let mut s = sched();
        s.set_null_placement(true);
        let now = Instant::now();
        for i in 0..4 {
            let mut p = pending(&format!("p{i}"), "100m");
            p.spec.as_mut().unwrap().node_selector =
                Some([("topology.kubernetes.io/zone".to_owned(), "b".to_owned())].into());
            s.on_pod(&p, now).unwrap();
        }
        let mut nodes = Vec::new();
        while let Some(a) = s.schedule_one(now, false) {
            nodes.push(a.result.unwrap().node);
        }
        nodes.sort();
        assert_eq!(nodes, ["big", "big", "gpu", "gpu"]);
    }

    #[test]
    fn places_respecting_usage_and_explains_failures() {
        let mut s = sched();
        let now = Instant::now();
        s.on_pod(&pending("a", "800m"), now).unwrap();
        s.on_pod(&pending("b", "800m"), now).unwrap();
        s.on_pod(&pending("c", "2"), now).unwrap();
        let mut placed = Vec::new();
        while let Some(a) = s.schedule_one(now, false) {
            match a.result {
                Ok(r) => {
                    s.binding_finished(&a.pod.key, &a.pod.uid, true, now);
                    placed.push((a.pod.name.clone(), r.node));
                }
                Err(e) => placed.push((a.pod.name.clone(), e.to_string())),
            }
        }
        // big has 1 cpu free, small 1 cpu: a and b take one each, c fits nowhere.
        let nodes: Vec<&str> = placed.iter().map(|(_, n)| n.as_str()).collect();
        assert!(
            nodes[..2].contains(&"small") && nodes[..2].contains(&"big"),
            "{placed:?}"
        );
        assert_eq!(
            placed[2].1,
            "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling."
        );
        assert!(s.cache.overcommitted_nodes().is_empty());
        // a node is added: the unschedulable pod is retried and placed
        let n: Node = serde_json::from_value(serde_json::json!({"metadata": {"name": "new"}, "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "10"}}})).unwrap();
        let later = now + std::time::Duration::from_secs(2);
        s.on_node(&n, later).unwrap();
        let a = s.schedule_one(later, false).unwrap();
        assert_eq!(a.result.unwrap().node, "new");
    }

    #[test]
    fn failed_binding_frees_the_node_and_backs_off() {
        let mut s = sched();
        let now = Instant::now();
        s.on_pod(&pending("a", "1"), now).unwrap();
        let a = s.schedule_one(now, false).unwrap();
        let node = a.result.unwrap().node;
        assert_eq!(
            s.cache.node(&node).unwrap().usage.pods,
            if node == "big" { 2 } else { 1 }
        );
        s.binding_finished(&a.pod.key, &a.pod.uid, false, now);
        assert_eq!(
            s.cache.node(&node).unwrap().usage.pods,
            if node == "big" { 1 } else { 0 }
        );
        assert!(s.schedule_one(now, false).is_none(), "backing off");
        assert!(s.schedule_one(now + std::time::Duration::from_secs(1), false).is_some());
    }

    #[test]
    fn own_profiles_only() {
        let mut s = Scheduler::new(&Config::default(), &Registry::builtin(), 1, Responsibility::OwnProfiles).unwrap();
        let now = Instant::now();
        s.on_pod(&pending("theirs", "1"), now).unwrap();
        assert!(s.queue.is_empty());
        let mut ours = pending("ours", "1");
        ours.spec.as_mut().unwrap().scheduler_name = Some("wasm-scheduler".into());
        s.on_pod(&ours, now).unwrap();
        assert!(!s.queue.is_empty());
        let a = s.schedule_one(now, false).unwrap();
        assert_eq!(a.result.unwrap_err().to_string(), "no nodes available to schedule pods");
    }

    fn ours(name: &str, uid: &str, cpu: &str) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "default", "uid": uid, "resourceVersion": "1"},
            "spec": {"schedulerName": "wasm-scheduler", "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
        }))
        .unwrap()
    }

    fn bound_to(mut p: Pod, node: &str) -> Pod {
        p.spec.as_mut().unwrap().node_name = Some(node.into());
        p
    }

    fn own_sched() -> Scheduler {
        loaded(Scheduler::new(&Config::default(), &Registry::builtin(), 1, Responsibility::OwnProfiles).unwrap())
    }

    fn used(s: &Scheduler, node: &str) -> i64 {
        s.cache.node(node).unwrap().usage.requested.milli_cpu
    }

    #[test]
    fn a_stale_pending_update_of_a_bound_pod_is_ignored() {
        let mut s = own_sched();
        let now = Instant::now();
        s.on_pod(&ours("a", "u1", "500m"), now).unwrap();
        let a = s.schedule_one(now, false).unwrap();
        let node = a.result.unwrap().node;
        s.binding_finished("default/a", "u1", true, now);
        // Our own condition patch, or a relist older than the binding, still
        // shows the pod pending: it must not be queued and placed again.
        let mut stale = ours("a", "u1", "500m");
        stale.metadata.resource_version = Some("2".into());
        s.on_pod(&stale, now).unwrap();
        assert!(s.queue.is_empty(), "not queued again");
        assert!(s.schedule_one(now + std::time::Duration::from_secs(1), false).is_none());
        assert_eq!(used(&s, &node), if node == "big" { 3500 } else { 500 });
        // and the watch then confirms the binding: counted once
        s.on_pod(&bound_to(ours("a", "u1", "500m"), &node), now).unwrap();
        assert_eq!(used(&s, &node), if node == "big" { 3500 } else { 500 });
    }

    #[test]
    fn a_bound_pods_usage_is_never_moved_by_a_second_attempt() {
        let mut s = own_sched();
        let now = Instant::now();
        s.on_pod(&bound_to(ours("a", "u1", "500m"), "small"), now).unwrap();
        let info = Arc::new(PodInfo::from_pod(&ours("a", "u1", "500m")).unwrap());
        assert!(
            !s.cache.assume_pod(info, "big"),
            "a confirmed pod is not assumed elsewhere"
        );
        assert_eq!(used(&s, "small"), 500);
        assert_eq!(used(&s, "big"), 3000);
    }

    #[test]
    fn a_pod_recreated_while_its_binding_is_in_flight_is_scheduled() {
        let mut s = own_sched();
        let now = Instant::now();
        s.on_pod(&ours("web-0", "old", "500m"), now).unwrap();
        let a = s.schedule_one(now, false).unwrap();
        assert!(a.result.is_ok());
        // StatefulSet: deleted and re-created under the same name
        s.on_pod_deleted("default/web-0", "old", now);
        s.on_pod(&ours("web-0", "new", "500m"), now).unwrap();
        // the old binding's answer (409: UID precondition) arrives last
        s.drop_pod("default/web-0", "old", now);
        let b = s.schedule_one(now, false).expect("the new pod is still queued");
        assert_eq!(b.pod.uid, "new");
        assert!(b.result.is_ok());
        // an update while the new pod's binding is in flight is kept for a retry
        let mut newer = ours("web-0", "new", "200m");
        newer.metadata.labels = Some([("v".to_owned(), "2".to_owned())].into());
        s.on_pod(&newer, now).unwrap();
        s.binding_finished("default/web-0", "new", false, now);
        let later = now + std::time::Duration::from_secs(2);
        let c = s.schedule_one(later, false).unwrap();
        assert_eq!(c.pod.requests.requests.milli_cpu, 200, "the retry uses the newest spec");
    }

    #[test]
    fn a_failed_binding_retries_pods_waiting_for_room() {
        let mut s = own_sched();
        let now = Instant::now();
        // "small" has 1 cpu; "big" 1 free: two pods of 1 cpu fill both
        s.on_pod(&ours("a", "ua", "1"), now).unwrap();
        s.on_pod(&ours("b", "ub", "1"), now).unwrap();
        let a = s.schedule_one(now, false).unwrap();
        let _b = s.schedule_one(now, false).unwrap();
        s.on_pod(&ours("c", "uc", "1"), now).unwrap();
        let c = s.schedule_one(now, false).unwrap();
        assert!(c.result.is_err());
        assert_eq!(s.queue.location("default/c"), Some(Location::Unschedulable));
        // a's binding fails: its node is free again, c is retried
        s.binding_finished("default/a", &a.pod.uid, false, now);
        assert_ne!(s.queue.location("default/c"), Some(Location::Unschedulable));
    }

    #[test]
    fn only_changes_that_may_help_retry_unschedulable_pods() {
        let mut s = own_sched();
        let now = Instant::now();
        s.on_pod(&ours("huge", "u", "64"), now).unwrap();
        assert!(s.schedule_one(now, false).unwrap().result.is_err());
        let parked = |s: &Scheduler| s.queue.location("default/huge") == Some(Location::Unschedulable);
        assert!(parked(&s));
        // a status-only update of the pod (our own condition patch)
        let mut p = ours("huge", "u", "64");
        p.metadata.resource_version = Some("7".into());
        p.status = Some(
            serde_json::from_value(serde_json::json!({"conditions": [{"type": "PodScheduled", "status": "False"}]}))
                .unwrap(),
        );
        s.on_pod(&p, now).unwrap();
        assert!(parked(&s), "status-only update");
        // a node heartbeat, and a label change that NodeResourcesFit ignores
        let objs = parse_objects(CLUSTER).unwrap();
        let mut big = objs.nodes[1].clone();
        big.status.as_mut().unwrap().conditions = Some(vec![
            serde_json::from_value(
                serde_json::json!({"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-01-01T00:00:00Z"}),
            )
            .unwrap(),
        ]);
        s.on_node(&big, now).unwrap();
        big.metadata.labels.as_mut().unwrap().insert("x".into(), "y".into());
        s.on_node(&big, now).unwrap();
        assert!(parked(&s), "heartbeat and labels");
        // a bound pod leaving, a node too small, a node's allocatable growing too little
        s.on_pod(&bound_to(ours("other", "o", "100m"), "small"), now).unwrap();
        s.on_pod_deleted("default/other", "o", now);
        assert!(!parked(&s), "NodeResourcesFit queues on AssignedPod delete");
        let later = now + std::time::Duration::from_secs(2);
        assert!(s.schedule_one(later, false).unwrap().result.is_err());
        assert!(parked(&s));
        // (tainted like gpu, so that TaintToleration, which also rejected
        // the pod there, has nothing to gain either)
        let tiny: Node = serde_json::from_value(serde_json::json!({"metadata": {"name": "tiny"},
            "spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "2", "memory": "1Gi", "pods": "10"}}}))
        .unwrap();
        s.on_node(&tiny, later).unwrap();
        assert!(parked(&s), "a node the pod could never fit");
        let roomy: Node = serde_json::from_value(serde_json::json!({"metadata": {"name": "roomy"}, "status": {"allocatable": {"cpu": "128", "memory": "1Ti", "pods": "10"}}})).unwrap();
        s.on_node(&roomy, later).unwrap();
        assert!(!parked(&s), "a node that fits");
    }

    #[test]
    fn pods_being_deleted_are_not_scheduled() {
        let mut s = own_sched();
        let now = Instant::now();
        let mut p = ours("going", "u", "100m");
        p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ));
        s.on_pod(&p, now).unwrap();
        assert!(s.schedule_one(now, false).is_none());
        // queued first, then deleted gracefully
        s.on_pod(&ours("later", "u2", "100m"), now).unwrap();
        let mut p = ours("later", "u2", "100m");
        p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ));
        s.on_pod(&p, now).unwrap();
        assert!(s.schedule_one(now, false).is_none());
    }

    #[test]
    fn requests_that_overflow_are_refused_naming_the_field() {
        let mut s = own_sched();
        let now = Instant::now();
        let p: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "huge", "namespace": "default", "uid": "u"},
            "spec": {"schedulerName": "wasm-scheduler", "containers": [
                {"name": "a", "resources": {"requests": {"memory": "5Ei"}}},
                {"name": "b", "resources": {"requests": {"memory": "5Ei"}}}]}
        }))
        .unwrap();
        let e = s.on_pod(&p, now).unwrap_err();
        assert_eq!(e.field, "spec.containers[1].resources.requests[memory]");
        assert!(s.schedule_one(now, false).is_none(), "never placed");
    }

    struct Panicky;
    impl crate::framework::Plugin for Panicky {
        fn name(&self) -> &str {
            "Panicky"
        }
        fn points(&self) -> crate::framework::Points {
            crate::framework::Points::FILTER
        }
        fn filter(&self, _: &CycleState, pod: &PodInfo, node: &crate::node::NodeInfo) -> crate::framework::Status {
            if pod.name == "boom" {
                panic!("attempt to add with overflow");
            }
            if pod.name == "err" && node.name() == "big" {
                return crate::framework::Status::error("disk unreadable");
            }
            crate::framework::Status::success()
        }
    }

    /// Counts the Unreserve calls it gets, by pod UID.
    struct Counting(Arc<std::sync::Mutex<Vec<String>>>);
    impl crate::framework::Plugin for Counting {
        fn name(&self) -> &str {
            "Counting"
        }
        fn points(&self) -> crate::framework::Points {
            crate::framework::Points::RESERVE
        }
        fn unreserve(&self, _: &mut CycleState, pod: &PodInfo, _: &str) {
            self.0.lock().unwrap().push(pod.uid.clone());
        }
    }

    /// A pod deleted while its binding is in flight and created again
    /// under its name: the old binding's failure unreserves nothing of the
    /// new pod, whose own failure still unreserves it.
    #[test]
    fn a_late_failure_of_an_old_pod_leaves_the_new_pods_reservation() {
        let unreserved = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut registry = Registry::builtin();
        let seen = unreserved.clone();
        registry.register("Counting", Arc::new(move |_| Ok(Arc::new(Counting(seen.clone())) as _)));
        let config = Config::from_yaml(
            "profiles:\n- schedulerName: wasm-scheduler\n  plugins:\n    reserve:\n      enabled: [{name: Counting}]\n",
        )
        .unwrap();
        let mut s = Scheduler::new(&config, &registry, 1, Responsibility::OwnProfiles).unwrap();
        for n in &parse_objects(CLUSTER).unwrap().nodes {
            s.on_node(n, Instant::now()).unwrap();
        }
        let now = Instant::now();
        s.on_pod(&ours("db-0", "old", "100m"), now).unwrap();
        assert!(s.schedule_one(now, false).unwrap().result.is_ok());
        s.on_pod_deleted("default/db-0", "old", now);
        s.on_pod(&ours("db-0", "new", "100m"), now).unwrap();
        assert!(s.schedule_one(now, false).unwrap().result.is_ok());
        s.binding_finished("default/db-0", "old", false, now);
        s.binding_finished("default/db-0", "new", false, now);
        assert_eq!(*unreserved.lock().unwrap(), ["old", "new"]);
    }

    fn with_panicky() -> Scheduler {
        let mut registry = Registry::builtin();
        registry.register("Panicky", Arc::new(|_| Ok(Arc::new(Panicky) as _)));
        let config = Config::from_yaml(
            "profiles:\n- schedulerName: wasm-scheduler\n  plugins:\n    filter:\n      enabled: [{name: Panicky}]\n",
        )
        .unwrap();
        let mut s = Scheduler::new(&config, &registry, 1, Responsibility::OwnProfiles).unwrap();
        for n in &parse_objects(CLUSTER).unwrap().nodes {
            s.on_node(n, Instant::now()).unwrap();
        }
        s
    }

    /// A filter that fails on a node (rather than rejecting the pod there)
    /// fails the cycle, naming the plugin and the node, though other nodes
    /// are feasible; the pod is retried after backoff.
    #[test]
    fn a_filter_error_on_one_node_fails_the_cycle_naming_plugin_and_node() {
        let mut s = with_panicky();
        let now = Instant::now();
        s.on_pod(&ours("err", "u1", "100m"), now).unwrap();
        let a = s.schedule_one(now, false).expect("a pod was ready");
        assert_eq!(
            a.result.map(|r| r.node).map_err(|e| e.to_string()),
            Err(r#"running Filter plugin "Panicky" on node "big": disk unreadable"#.to_owned())
        );
        assert_eq!(s.queue.location("default/err"), Some(Location::Backoff));
    }

    #[test]
    fn a_panic_in_a_cycle_fails_that_pod_only() {
        let mut s = with_panicky();
        let now = Instant::now();
        s.on_pod(&ours("boom", "u1", "100m"), now).unwrap();
        s.on_pod(&ours("fine", "u2", "100m"), now).unwrap();
        let mut results = Vec::new();
        while let Some(a) = s.schedule_one(now, false) {
            results.push((a.pod.name.clone(), a.result.map(|r| r.node).map_err(|e| e.to_string())));
        }
        assert_eq!(s.panics(), 1);
        let boom = results.iter().find(|r| r.0 == "boom").unwrap();
        assert_eq!(
            boom.1.as_ref().unwrap_err(),
            "scheduling cycle panicked: attempt to add with overflow"
        );
        assert!(results.iter().find(|r| r.0 == "fine").unwrap().1.is_ok());
        assert_eq!(s.queue.location("default/boom"), Some(Location::Backoff));
    }
}

#[cfg(test)]
mod gate_and_refusal_tests {
    use super::*;
    use serde_json::json;

    fn sched() -> Scheduler {
        let mut s = Scheduler::new(&Config::default(), &Registry::builtin(), 1, Responsibility::OwnProfiles).unwrap();
        let n: Node = serde_json::from_value(
            json!({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}}}),
        )
        .unwrap();
        s.on_node(&n, Instant::now()).unwrap();
        s
    }

    fn pod(spec: serde_json::Value) -> Pod {
        let mut spec = spec;
        spec["schedulerName"] = json!("wasm-scheduler");
        spec["containers"] = json!([{"name": "c", "resources": {"requests": {"cpu": "1"}}}]);
        serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "default", "uid": "u1"}, "spec": spec}))
            .unwrap()
    }

    #[test]
    fn a_gated_pod_waits_holding_nothing_until_its_last_gate_is_removed() {
        let mut s = sched();
        let now = Instant::now();
        s.on_pod(&pod(json!({"schedulingGates": [{"name": "a"}, {"name": "b"}]})), now)
            .unwrap();
        assert!(s.schedule_one(now, false).is_none(), "a gated pod is not scheduled");
        assert_eq!(s.gated_pods(), 1);
        s.on_pod(&pod(json!({"schedulingGates": [{"name": "b"}]})), now)
            .unwrap();
        assert!(s.schedule_one(now, false).is_none(), "one gate left");
        assert_eq!(s.cache.node("n1").unwrap().usage.pods, 0, "it holds nothing");
        s.on_pod(&pod(json!({})), now).unwrap();
        assert_eq!(s.gated_pods(), 0);
        let a = s.schedule_one(now, false).expect("queued once ungated");
        assert_eq!(a.result.unwrap().node, "n1");
    }

    #[test]
    fn a_gated_pod_deleted_is_forgotten() {
        let mut s = sched();
        let now = Instant::now();
        s.on_pod(&pod(json!({"schedulingGates": [{"name": "a"}]})), now)
            .unwrap();
        s.on_pod_deleted("default/p", "u1", now);
        assert_eq!(s.gated_pods(), 0);
    }

    #[test]
    fn fields_the_engine_does_not_implement_are_refused_by_name() {
        // Resource claims are refused where the profile disables
        // DynamicResources.
        let without = |plugin: &str| {
            let cfg = Config::from_yaml(&format!(
                "profiles: [{{schedulerName: wasm-scheduler, plugins: {{multiPoint: {{disabled: [{{name: {plugin}}}]}}}}}}]"
            ))
            .unwrap();
            let mut s = Scheduler::new(&cfg, &Registry::builtin(), 1, Responsibility::OwnProfiles).unwrap();
            let n: Node = serde_json::from_value(
                json!({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}}}),
            )
            .unwrap();
            s.on_node(&n, Instant::now()).unwrap();
            s
        };
        let cases = [
            (
                json!({"resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}]}),
                "spec.resourceClaims",
                without("DynamicResources"),
            ),
            // Scheduling groups where it disables GangScheduling.
            (
                json!({"schedulingGroup": {"podGroupName": "g"}}),
                "spec.schedulingGroup",
                without("GangScheduling"),
            ),
        ];
        for (spec, field, mut s) in cases {
            let now = Instant::now();
            s.on_pod(&pod(spec.clone()), now).unwrap();
            let a = s.schedule_one(now, false).unwrap();
            assert_eq!(
                a.result.unwrap_err().to_string(),
                format!("0/1 nodes are available: pod uses {field}, which wasm-scheduler does not support."),
                "{spec}"
            );
            assert_eq!(s.cache.node("n1").unwrap().usage.pods, 0);
        }
    }

    #[test]
    fn a_pod_waits_for_its_claim_then_binds_it_on_the_node_chosen() {
        let mut s = sched();
        let now = Instant::now();
        let claims = json!({"volumes": [
            {"name": "cfg", "configMap": {"name": "x"}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]});
        s.on_pod(&pod(claims), now).unwrap();
        let a = s.schedule_one(now, false).unwrap();
        assert_eq!(
            a.result.unwrap_err().to_string(),
            "0/1 nodes are available: persistentvolumeclaim \"data\" not found. not found"
        );
        assert!(s.schedule_one(now, false).is_none(), "it waits for the claim");

        // A StorageClass alone does not help; the claim appearing does.
        let class = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"},
                           "provisioner": "csi.example.com", "volumeBindingMode": "WaitForFirstConsumer"});
        s.on_storage(&class, now).unwrap();
        assert!(s.schedule_one(now, false).is_none());
        let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                           "metadata": {"name": "data", "namespace": "default", "uid": "c1"},
                           "spec": {"storageClassName": "fast", "accessModes": ["ReadWriteOnce"],
                                    "resources": {"requests": {"storage": "1Gi"}}}});
        s.on_storage(&claim, now).unwrap();
        let later = now + std::time::Duration::from_secs(20);
        let a = s.schedule_one(later, false).expect("requeued by the claim");
        let r = a.result.unwrap();
        let plan = r.volumes.expect("a plan to provision the claim");
        assert_eq!(
            (plan.node.as_str(), plan.provisions),
            ("n1", vec!["default/data".to_owned()])
        );
        assert_eq!(
            s.cache
                .storage()
                .claim("default/data")
                .map(|c| s.cache.storage().selected_node_of(c).map(str::to_owned)),
            Some(Some("n1".to_owned())),
            "the provisioning is assumed"
        );
        // A failed binding forgets it.
        s.binding_finished("default/p", "u1", false, later);
        let storage = s.cache.storage();
        assert_eq!(storage.selected_node_of(storage.claim("default/data").unwrap()), None);
        // So does the pod's deletion while its binding is in flight.
        let retry = later + std::time::Duration::from_secs(20);
        assert!(s.schedule_one(retry, false).unwrap().result.unwrap().volumes.is_some());
        assert!(s.cache.storage().has_plan("default/p"));
        s.on_pod_deleted("default/p", "u1", retry);
        assert!(
            !s.cache.storage().has_plan("default/p"),
            "the deleted pod's volumes are free"
        );
        let storage = s.cache.storage();
        assert_eq!(storage.selected_node_of(storage.claim("default/data").unwrap()), None);
    }

    #[test]
    fn volumes_that_do_not_constrain_placement_are_fine() {
        let mut s = sched();
        let now = Instant::now();
        let spec = json!({"volumes": [{"name": "c", "csi": {"driver": "d"}}]});
        s.on_pod(&pod(spec), now).unwrap();
        assert_eq!(s.schedule_one(now, false).unwrap().result.unwrap().node, "n1");
        let mut s = sched();
        let spec = json!({"volumes": [
            {"name": "a", "emptyDir": {}}, {"name": "b", "secret": {"secretName": "s"}},
            {"name": "c", "projected": {"sources": []}}, {"name": "d", "hostPath": {"path": "/x"}},
            {"name": "e", "downwardAPI": {}}]});
        s.on_pod(&pod(spec), now).unwrap();
        assert_eq!(s.schedule_one(now, false).unwrap().result.unwrap().node, "n1");
    }
}

#[cfg(test)]
mod node_subset_tests {
    use super::*;
    use serde_json::json;

    /// 20 nodes; `n-00` has no room for a 1-cpu pod.
    fn sched() -> Scheduler {
        let mut s = Scheduler::new(&Config::default(), &Registry::builtin(), 1, Responsibility::AllPods).unwrap();
        for i in 0..20 {
            let cpu = if i == 0 { "500m" } else { "4" };
            let n: Node = serde_json::from_value(json!({"metadata": {"name": format!("n-{i:02}")},
                "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "10"}}}))
            .unwrap();
            s.on_node(&n, Instant::now()).unwrap();
        }
        s
    }

    fn pinned(terms: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "ds-pod", "namespace": "default", "uid": "u"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}}
        }))
        .unwrap()
    }

    fn name_in(names: &[&str]) -> serde_json::Value {
        json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": names}]})
    }

    fn attempt(terms: serde_json::Value) -> Result<ScheduleResult, ScheduleError> {
        let mut s = sched();
        let now = Instant::now();
        s.on_pod(&pinned(terms), now).unwrap();
        s.schedule_one(now, false).unwrap().result
    }

    #[test]
    fn a_pod_pinned_by_name_is_filtered_on_that_node_only() {
        let r = attempt(json!([name_in(&["n-07"])])).unwrap();
        assert_eq!((r.node.as_str(), r.evaluated_nodes), ("n-07", 1));
        // Terms are ORed: the union of their names.
        let r = attempt(json!([name_in(&["n-00"]), name_in(&["n-03"])])).unwrap();
        assert_eq!((r.node.as_str(), r.evaluated_nodes), ("n-03", 2));
    }

    #[test]
    fn the_other_nodes_are_reported_under_the_narrowing_plugin() {
        let e = attempt(json!([name_in(&["n-00"])])).unwrap_err().to_string();
        assert_eq!(
            e,
            "0/20 nodes are available: 1 Insufficient cpu, 19 node(s) didn't satisfy plugin(s) [NodeAffinity]. no new claims to deallocate, preemption: 0/20 nodes are available: 20 Preemption is not helpful for scheduling."
        );
        // A name no node has: every node is absent.
        let e = attempt(json!([name_in(&["gone"])])).unwrap_err().to_string();
        assert_eq!(
            e,
            "0/20 nodes are available: 20 node(s) didn't satisfy plugin(s) [NodeAffinity]. no new claims to deallocate, preemption: 0/20 nodes are available: 20 Preemption is not helpful for scheduling."
        );
        // Fields of one term are ANDed; nothing is in both.
        let conflict = json!([{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n-01"]},
            {"key": "metadata.name", "operator": "In", "values": ["n-02"]}]}]);
        let e = attempt(conflict).unwrap_err().to_string();
        assert_eq!(e, "0/20 nodes are available: pod affinity terms conflict. not found");
        // A term without names lets every node be considered.
        let r = attempt(json!([name_in(&["n-00"]), {"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}]))
            .unwrap();
        assert_eq!(r.evaluated_nodes, 20);
    }
}

#[cfg(test)]
mod inter_pod_requeue_tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, labels: serde_json::Value, node: Option<&str>, affinity: serde_json::Value) -> Pod {
        let mut spec = json!({"containers": [{"name": "c"}]});
        if let Some(n) = node {
            spec["nodeName"] = json!(n);
        }
        if !affinity.is_null() {
            spec["affinity"] = affinity;
        }
        serde_json::from_value(
            json!({"metadata": {"name": name, "namespace": "default", "uid": name, "labels": labels}, "spec": spec}),
        )
        .unwrap()
    }

    /// A pod waiting for a pod it needs beside it is retried when one is
    /// bound, and not for unrelated pods or node heartbeats.
    #[test]
    fn a_pod_waiting_for_affinity_is_retried_when_a_matching_pod_is_bound() {
        let mut s = Scheduler::new(&Config::default(), &Registry::builtin(), 1, Responsibility::AllPods).unwrap();
        let t0 = Instant::now();
        let n: Node = serde_json::from_value(json!({"metadata": {"name": "n1", "labels": {"zone": "a"}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}}}))
        .unwrap();
        s.on_node(&n, t0).unwrap();
        let needs_cache = json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "zone"}]}});
        s.on_pod(&pod("web", json!({"app": "web"}), None, needs_cache), t0)
            .unwrap();
        let a = s.schedule_one(t0, false).unwrap();
        assert_eq!(
            a.result.unwrap_err().to_string(),
            "0/1 nodes are available: 1 node(s) didn't match pod affinity rules. no new claims to deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
        );
        let later = t0 + std::time::Duration::from_secs(20);
        s.on_pod(
            &pod("other", json!({"app": "other"}), Some("n1"), serde_json::Value::Null),
            later,
        )
        .unwrap();
        assert!(
            s.schedule_one(later, false).is_none(),
            "an unrelated pod retries nothing"
        );
        s.on_pod(
            &pod("cache", json!({"app": "cache"}), Some("n1"), serde_json::Value::Null),
            later,
        )
        .unwrap();
        let a = s.schedule_one(later, false).expect("retried");
        assert_eq!(a.result.unwrap().node, "n1");
    }
}
