//! The scheduling thread: owns the core scheduler, applies every cluster
//! change before each cycle, runs cycles while this replica leads, hands
//! placements to the binder and failures to the reporter.
//!
//! Channels are bounded: watchers wait when the thread is behind; a full
//! bind queue makes the thread wait for the binder; a report that does not
//! fit is dropped and counted (events are advice, kube-scheduler's
//! broadcaster drops too). Binding outcomes come back on their own channel,
//! bounded by the binds in flight.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use tokio::sync::mpsc;
use wasmsched_core::framework::ScheduleError;
use wasmsched_core::queue::Location;
use wasmsched_core::scheduler::Scheduler;

use crate::binder::{BindJob, BindOutcome, BindResult};
use crate::leader::Leadership;
use crate::metrics::Metrics;
use crate::reporter::{PodRef, Queued, REASON_SCHEDULER_ERROR, REASON_UNSCHEDULABLE, Report};
use crate::status::Status;

/// What the scheduling thread is told.
#[derive(Debug)]
pub(crate) enum Msg {
    Node(Box<Node>),
    NodeGone(String),
    NodesSynced(HashSet<String>),
    Pod(Box<Pod>),
    PodGone {
        key: String,
        uid: String,
    },
    PodsSynced(HashSet<String>),
    Namespace(Box<Namespace>),
    NamespaceGone(String),
    NamespacesSynced(HashSet<String>),
    /// A Service, ReplicationController, ReplicaSet or StatefulSet.
    Workload(Box<serde_json::Value>),
    WorkloadGone {
        kind: wasmsched_core::workloads::WorkloadKind,
        namespace: String,
        name: String,
    },
    WorkloadsSynced(wasmsched_core::workloads::WorkloadKind, HashSet<String>),
    /// A PersistentVolumeClaim, PersistentVolume, StorageClass or CSINode.
    Storage(Box<serde_json::Value>),
    StorageGone {
        kind: wasmsched_core::storage::StorageKind,
        namespace: String,
        name: String,
    },
    StorageSynced(wasmsched_core::storage::StorageKind, HashSet<String>),
    /// A PodGroup.
    PodGroup(Box<k8s_openapi::api::scheduling::v1alpha2::PodGroup>),
    PodGroupGone {
        namespace: String,
        name: String,
    },
    PodGroupsSynced(HashSet<String>),
    /// A metric source's new values.
    Metrics {
        source: String,
        series: Vec<wasmsched_core::metrics::Series>,
        /// The label of a series that names its node (for the log's hint).
        node_label: String,
    },
    /// Leadership changed (wakes the thread; the flag itself is read from
    /// [`Leadership`]).
    Leader,
    /// A WebAssembly plugin's serving version changed (wakes the thread,
    /// which retries the pods parked unschedulable).
    PluginsChanged,
}

/// The thread's ends of the channels.
pub(crate) struct Channels {
    pub msgs: mpsc::Receiver<Msg>,
    pub outcomes: mpsc::UnboundedReceiver<BindOutcome>,
    /// The victims (UIDs) whose evictions ended, done or failed. Unbounded,
    /// like `outcomes`: the executor never waits for this thread, so this
    /// thread may wait for the executor.
    pub evictions: mpsc::UnboundedReceiver<crate::preempt::EvictionsDone>,
    /// `None` once the thread stops scheduling (the binder then drains).
    pub jobs: Option<mpsc::Sender<BindJob>>,
    pub reports: mpsc::Sender<Queued>,
    /// Bounded ([`crate::preempt::QUEUE`]): a preemption that finds it full
    /// is retried ([`Loop::preempt`]).
    pub preemptions: mpsc::Sender<crate::preempt::PreemptJob>,
    /// True: stop scheduling, let the bindings in flight finish, then end.
    pub stop: tokio::sync::watch::Receiver<bool>,
}

enum Next {
    Msg(Msg),
    Outcome(Box<BindOutcome>),
    Evicted(crate::preempt::EvictionsDone),
    Idle,
    Closed,
}

struct Loop {
    sched: Scheduler,
    ch: Channels,
    status: Arc<Status>,
    leadership: Arc<Leadership>,
    rt: tokio::runtime::Handle,
    /// Which first lists have been applied.
    synced: Synced,
    /// The plugin host's change count last seen.
    plugin_changes: u64,
    /// Its change counts per plugin last seen.
    plugin_changes_by_name: std::collections::BTreeMap<String, u64>,
    /// What each pending pod's last failed attempt said and whom its
    /// preemption evicts (for the web view; pruned to the pods still queued).
    notes: crate::web::Notes,
}

impl Loop {
    fn may_schedule(&self) -> bool {
        self.synced.all() && self.leadership.is_leading()
    }

    fn report(&self, r: Report) {
        crate::reporter::queue(&self.ch.reports, &self.status, r);
    }

    fn stopping(&self) -> bool {
        *self.ch.stop.borrow()
    }

    /// Applies one message.
    fn handle(&mut self, msg: Msg) {
        if let Applied::MalformedPod(p, e) = apply(&mut self.sched, &mut self.synced, msg, &self.status.metrics) {
            self.refuse_malformed(&p, &e);
        }
    }

    /// A pending pod of ours that cannot be parsed is not placed blindly:
    /// it is reported unschedulable with the field and the reason.
    fn refuse_malformed(&self, p: &Pod, error: &str) {
        let spec = p.spec.as_ref();
        let pending = spec.and_then(|s| s.node_name.as_deref()).is_none_or(str::is_empty);
        let profile = spec
            .and_then(|s| s.scheduler_name.as_deref())
            .unwrap_or("default-scheduler");
        if !pending || !self.sched.is_responsible(profile) || !self.leadership.is_leading() {
            return;
        }
        self.report(Report::failed(p, profile, REASON_UNSCHEDULABLE, error.to_owned()));
    }

    fn outcome(&mut self, BindOutcome { job, result, claims }: BindOutcome) {
        let now = Instant::now();
        let key = job.key();
        // The claims as written, before the assumption that covered them
        // goes (a watch that lags must not make their devices look free).
        for c in &claims {
            if let Err(e) = self.sched.on_storage(c, now) {
                tracing::warn!(error = %e, "a claim written for a pod cannot be read back");
            }
        }
        match result {
            BindResult::Ok => {
                self.sched.binding_finished(&key, &job.uid, true, now);
                self.status.metrics.bound(&job.profile, job.queued_at.elapsed());
                self.report(Report::Scheduled {
                    pod: PodRef {
                        namespace: job.namespace,
                        name: job.name,
                        uid: job.uid,
                    },
                    node: job.node,
                    profile: job.profile,
                });
            }
            BindResult::Drop(why) => {
                tracing::info!(pod = %key, reason = %why, "not binding: the pod is bound elsewhere or gone");
                self.sched.drop_pod(&key, &job.uid, now);
            }
            BindResult::Rejected(why) => {
                tracing::info!(pod = %key, reason = %why, "rejected at Permit; the pod is retried after backoff");
                self.sched.binding_finished(&key, &job.uid, false, now);
                // The queue view says why it waits again.
                self.notes.reasons.insert(key.clone(), why.clone());
                if self.leadership.is_leading()
                    && let Some(q) = self.sched.queue.get(&key).filter(|q| q.pod.uid == job.uid)
                {
                    let report = Report::failed(&q.pod.object.pod(), &job.profile, REASON_UNSCHEDULABLE, why);
                    self.report(report);
                }
            }
            BindResult::Failed(why) => {
                tracing::warn!(pod = %key, error = %why, "binding failed; the pod is retried after backoff");
                self.sched.binding_finished(&key, &job.uid, false, now);
                // (The queue may already hold another pod of that name.)
                if self.leadership.is_leading()
                    && let Some(q) = self.sched.queue.get(&key).filter(|q| q.pod.uid == job.uid)
                {
                    // kube-scheduler reports a failed binding as a SchedulerError.
                    let report = Report::failed(
                        &q.pod.object.pod(),
                        &job.profile,
                        REASON_SCHEDULER_ERROR,
                        if why.starts_with("running PreBind plugin") {
                            why
                        } else {
                            format!("running Bind plugin \"DefaultBinder\": {why}")
                        },
                    );
                    self.report(report);
                }
            }
        }
    }

    /// The binding cycle's plugins for a placed pod (none when the profile
    /// has none and no Permit plugin holds it).
    fn bind_plugins(
        &self,
        profile: &str,
        pod: &Arc<wasmsched_core::PodInfo>,
        r: &wasmsched_core::framework::ScheduleResult,
    ) -> Option<Box<crate::binder::BindPlugins>> {
        let fw = self.sched.frameworks().iter().find(|f| f.profile == profile)?;
        if !r.waiting && fw.pre_bind.is_empty() && fw.post_bind.is_empty() {
            return None;
        }
        let plugins = |l: &[wasmsched_core::framework::Enabled]| l.iter().map(|e| e.plugin.clone()).collect();
        Some(Box::new(crate::binder::BindPlugins {
            pod: pod.clone(),
            wait: r.waiting,
            waiting: self.sched.waiting().clone(),
            data: r.plugin_data.clone(),
            pre_bind: plugins(&fw.pre_bind),
            post_bind: plugins(&fw.post_bind),
        }))
    }

    /// One scheduling cycle; false when no pod was ready.
    fn cycle(&mut self) -> bool {
        let started = Instant::now();
        let panics_before = self.sched.panics();
        // Not through `with_pool`: entering the pool for one cycle is a
        // hand-off every cycle, and most cycles split no work; a section
        // that does hands its work over itself.
        let Some(attempt) = self.sched.schedule_one(started, false) else {
            return false;
        };
        if self.sched.panics() != panics_before {
            self.status.metrics.cycle_panics.inc();
        }
        let took = started.elapsed();
        for t in &attempt.plugin_timings {
            self.status
                .metrics
                .plugin(&t.plugin, t.extension_point, t.status, t.took);
        }
        let pod = &attempt.pod;
        self.status.web.list_attempt(&attempt);
        if let Some(group) = &attempt.pod_group {
            self.report(Report::PodGroup(group.clone()));
        }
        match &attempt.result {
            Ok(r) => {
                self.status.metrics.attempt(&attempt.profile, "scheduled", took);
                let job = BindJob {
                    namespace: pod.namespace.clone(),
                    name: pod.name.clone(),
                    uid: pod.uid.clone(),
                    node: r.node.clone(),
                    profile: attempt.profile.clone(),
                    queued_at: attempt.queued_at,
                    volumes: r.volumes.clone(),
                    devices: r.devices.clone(),
                    plugins: self.bind_plugins(&attempt.profile, pod, r),
                };
                // Waits when the binder is behind (backpressure); outcomes
                // never wait, so this cannot deadlock; a stop ends the wait
                // (the pod stays assumed until the process ends).
                let Some(jobs) = &self.ch.jobs else { return false };
                let mut stop = self.ch.stop.clone();
                let status = &self.status;
                let sent = self.rt.block_on(async {
                    loop {
                        tokio::select! {
                            slot = jobs.reserve() => match slot {
                                Ok(slot) => {
                                    slot.send(job);
                                    return true;
                                }
                                Err(_) => return false,
                            },
                            _ = stop.wait_for(|s| *s) => return false,
                            // A binder that is behind but moving is progress.
                            _ = tokio::time::sleep(Duration::from_millis(500)) => status.waiting_on_binder(),
                        }
                    }
                });
                if !sent {
                    return false;
                }
            }
            Err(e) => {
                if self.preempt(&attempt).is_err() {
                    return false;
                }
                let (result, reason) = if matches!(e, ScheduleError::Error(_)) {
                    ("error", REASON_SCHEDULER_ERROR)
                } else {
                    ("unschedulable", REASON_UNSCHEDULABLE)
                };
                if let ScheduleError::Error(msg) = e {
                    tracing::warn!(pod = %pod.key, error = %msg, "error scheduling pod; retrying");
                }
                self.status.metrics.attempt(&attempt.profile, result, took);
                let message = e.to_string();
                self.notes.reasons.insert(pod.key.clone(), message.clone());
                if let Some(n) = attempt.nomination() {
                    let victims = n.victims.iter().map(|v| v.key.clone()).collect();
                    self.notes.victims.insert(pod.key.clone(), victims);
                }
                self.report(Report::failed(&pod.object.pod(), &attempt.profile, reason, message));
            }
        }
        true
    }

    /// Hands what a preemption decided to the executor (waiting when it is
    /// behind); Err when the executor is gone.
    fn preempt(&mut self, attempt: &wasmsched_core::scheduler::Attempt) -> Result<(), ()> {
        use wasmsched_core::framework::Nominating;
        let Err(ScheduleError::Unschedulable(fit)) = &attempt.result else {
            return Ok(());
        };
        let deallocate = fit.deallocate.clone();
        let (nominate, node, victims) = match &fit.nominating {
            Nominating::Keep if deallocate.is_none() => return Ok(()),
            Nominating::Keep => (false, None, Vec::new()),
            // Preemption cannot help: the pod's nomination, if it has one, goes.
            Nominating::Clear if attempt.pod.nominated_node.is_none() && deallocate.is_none() => {
                self.status.metrics.preemption_attempts.inc();
                return Ok(());
            }
            Nominating::Clear => (attempt.pod.nominated_node.is_some(), None, Vec::new()),
            Nominating::Node(n) => (
                true,
                Some(n.node.clone()),
                n.victims.iter().map(|v| PodRef::of(v)).collect(),
            ),
        };
        if !matches!(fit.nominating, Nominating::Keep) {
            self.status.metrics.preemption_attempts.inc();
        }
        if node.is_some() {
            self.status.metrics.preempted(victims.len());
            tracing::info!(pod = %attempt.pod.key, node = node.as_deref().unwrap_or_default(),
                victims = %victims.iter().map(PodRef::key).collect::<Vec<_>>().join(", "), "preempting");
        }
        let job = crate::preempt::PreemptJob {
            preemptor: PodRef::of(&attempt.pod),
            profile: attempt.profile.clone(),
            nominate,
            node,
            victims,
            cleared: attempt.cleared_nominations.iter().map(|p| PodRef::of(p)).collect(),
            deallocate,
        };
        match self.ch.preemptions.try_send(job) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Closed(_)) => Err(()),
            Err(mpsc::error::TrySendError::Full(job)) => {
                // The executor is far behind: nothing is evicted for this
                // decision, and the preemptor is decided again later, as when
                // an eviction fails.
                self.status.metrics.preemptions_deferred.inc();
                tracing::warn!(pod = %job.preemptor.key(), queued = crate::preempt::QUEUE, "the preemption queue is full; the pod will be decided again");
                for v in &job.victims {
                    self.sched.eviction_finished(&v.uid);
                }
                self.sched.queue.move_one(&job.preemptor.key(), Instant::now());
                Ok(())
            }
        }
    }

    /// The next message or outcome, waiting at most `wait`.
    fn next(&mut self, wait: Duration) -> Next {
        use mpsc::error::TryRecvError;
        match self.ch.outcomes.try_recv() {
            Ok(o) => return Next::Outcome(Box::new(o)),
            Err(TryRecvError::Disconnected | TryRecvError::Empty) => {}
        }
        if let Ok(v) = self.ch.evictions.try_recv() {
            return Next::Evicted(v);
        }
        match self.ch.msgs.try_recv() {
            Ok(m) => return Next::Msg(m),
            Err(TryRecvError::Disconnected) => return Next::Closed,
            Err(TryRecvError::Empty) => {}
        }
        if wait.is_zero() {
            return Next::Idle;
        }
        let Channels {
            msgs,
            outcomes,
            evictions,
            stop,
            ..
        } = &mut self.ch;
        let web = &self.status.web;
        self.rt.block_on(async {
            tokio::select! {
                m = msgs.recv() => m.map_or(Next::Closed, Next::Msg),
                Some(o) = outcomes.recv() => Next::Outcome(Box::new(o)),
                Some(v) = evictions.recv() => Next::Evicted(v),
                _ = stop.wait_for(|s| *s) => Next::Idle,
                // The web view waits for a view: build it now.
                _ = web.woken() => Next::Idle,
                _ = tokio::time::sleep(wait) => Next::Idle,
            }
        })
    }

    /// After a stop: no cycle, no message applied; the binder, whose job
    /// channel is now closed, finishes (or cancels) what is in flight, and
    /// each outcome is still confirmed and reported, so a pod bound during
    /// the stop gets its event.
    fn finish_bindings(&mut self) {
        self.ch.jobs = None;
        while let Some(o) = self.rt.block_on(self.ch.outcomes.recv()) {
            self.outcome(o);
        }
    }
}

/// Runs the scheduling thread until told to stop or the channels close.
pub(crate) fn run(
    sched: Scheduler,
    ch: Channels,
    status: Arc<Status>,
    leadership: Arc<Leadership>,
    rt: tokio::runtime::Handle,
) {
    let mut l = Loop {
        sched,
        ch,
        status,
        leadership,
        rt,
        synced: Synced::default(),
        plugin_changes: 0,
        plugin_changes_by_name: Default::default(),
        notes: Default::default(),
    };
    let mut last_gauge = Instant::now();
    let mut idle = false;
    loop {
        l.status.turned();
        if l.stopping() {
            l.finish_bindings();
            return;
        }
        // A WebAssembly plugin loaded, replaced or unloaded: pods parked
        // unschedulable (by it, while it was missing) are retried.
        if let Some(h) = l.status.plugins()
            && h.changes() != l.plugin_changes
        {
            l.plugin_changes = h.changes();
            // The pods a plugin that changed rejected (while it was
            // missing, or as the version now replaced) try it at once; the
            // others after their backoff.
            let by_plugin = h.changes_by_plugin();
            let changed: Vec<&String> = by_plugin
                .iter()
                .filter(|(name, n)| l.plugin_changes_by_name.get(*name) != Some(*n))
                .map(|(name, _)| name)
                .collect();
            let now = Instant::now();
            l.sched
                .queue
                .move_rejected_by_now(now, |p| changed.iter().any(|n| *n == p));
            l.sched.queue.move_all_to_active_or_backoff(now);
            l.plugin_changes_by_name = by_plugin;
            idle = false;
        }
        let leading = l.may_schedule();
        if !l.leadership.is_leading() {
            // A group's placements not handed to the binder yet are not
            // this replica's to bind any more.
            l.sched.forget_decided(Instant::now());
        }
        // Apply every change that arrived before the next cycle; when idle
        // (or not leading), sleep until a change or the next backoff expiry.
        let mut wait = if !leading {
            Duration::from_millis(200)
        } else if idle {
            l.sched
                .queue
                .next_backoff_expiry()
                .map_or(Duration::from_millis(500), |t| {
                    t.saturating_duration_since(Instant::now())
                })
                .clamp(Duration::from_millis(1), Duration::from_millis(500))
        } else {
            Duration::ZERO
        };
        loop {
            match l.next(wait) {
                Next::Msg(m) => l.handle(m),
                Next::Outcome(o) => l.outcome(*o),
                Next::Evicted(done) => {
                    for uid in &done.victims {
                        l.sched.eviction_finished(uid);
                    }
                    if done.failed {
                        // It may preempt again (other victims, another node).
                        l.sched.queue.move_one(&done.preemptor, Instant::now());
                    }
                }
                Next::Idle => break,
                Next::Closed => {
                    l.finish_bindings();
                    return;
                }
            }
            if l.stopping() {
                break;
            }
            wait = Duration::ZERO;
        }
        if last_gauge.elapsed() > Duration::from_millis(500) {
            last_gauge = Instant::now();
            let q = &l.sched.queue;
            l.status.metrics.set_pending(
                q.len(Location::Active),
                q.len(Location::Backoff),
                q.len(Location::Unschedulable),
                l.sched.gated_pods(),
            );
            let q = &l.sched.queue;
            l.notes.retain(|key| q.location(key).is_some());
        }
        // A pod asked about on the web view, decided as the cluster is now.
        if let Some(key) = l.status.web.take_now()
            && let Some((case, node)) = l.sched.case_now(&key)
        {
            l.status.web.record_now(case, node);
        }
        // The web view, when a request waits for it.
        if l.status.web.wanted() {
            l.status
                .web
                .publish(crate::web::build(&l.sched, &l.notes, Instant::now()));
        }
        if l.stopping() {
            continue;
        }
        idle = !(l.may_schedule() && l.cycle());
    }
}

/// Which first lists have been applied: no cycle runs before every one (as
/// kube-scheduler waits for its informers), or bound pods not listed yet
/// would leave their nodes looking free, namespace selectors select
/// nothing, and default spreading spreads nothing.
#[derive(Debug, Default)]
pub(crate) struct Synced {
    /// Nodes, pods, namespaces.
    pub lists: (bool, bool, bool),
    /// The workload kinds listed (Services, ReplicationControllers,
    /// ReplicaSets, StatefulSets: default spreading reads them;
    /// PodDisruptionBudgets: preemption does).
    pub workloads: HashSet<wasmsched_core::workloads::WorkloadKind>,
    /// The storage kinds listed (claims, volumes, classes, CSI nodes: the
    /// volume plugins read them).
    pub storage: HashSet<wasmsched_core::storage::StorageKind>,
    /// PodGroups (listed, or not served).
    pub pod_groups: bool,
}

impl Synced {
    /// Every first list applied.
    pub fn all(&self) -> bool {
        self.lists == (true, true, true)
            && self.workloads.len() == wasmsched_core::workloads::WorkloadKind::ALL.len()
            && self.storage.len() == wasmsched_core::storage::StorageKind::ALL.len()
            && self.pod_groups
    }
}

/// What applying a watch message leaves to its caller.
pub(crate) enum Applied {
    /// Nothing.
    Done,
    /// A pod that cannot be parsed (and why): the scheduler refuses it if
    /// it is pending and its own.
    MalformedPod(Box<Pod>, String),
}

/// Applies one watch message to the scheduler's state (its cache and
/// queue) and to `synced`; says what the caller must do about it.
pub(crate) fn apply(sched: &mut Scheduler, synced: &mut Synced, msg: Msg, metrics: &Metrics) -> Applied {
    let now = Instant::now();
    match msg {
        Msg::Leader | Msg::PluginsChanged => {}
        Msg::Node(n) => {
            if let Err(e) = sched.on_node(&n, now) {
                metrics.malformed_objects.inc();
                tracing::warn!(error = %e, "skipping a node that cannot be parsed");
            }
        }
        Msg::NodeGone(name) => sched.on_node_deleted(&name),
        Msg::NodesSynced(names) => {
            synced.lists.0 = true;
            let gone: Vec<String> = sched
                .cache
                .node_names()
                .filter(|n| !names.contains(*n))
                .map(str::to_owned)
                .collect();
            for n in gone {
                sched.on_node_deleted(&n);
            }
        }
        Msg::Pod(p) => {
            if let Err(e) = sched.on_pod(&p, now) {
                metrics.malformed_objects.inc();
                tracing::warn!(error = %e, "a pod cannot be parsed");
                return Applied::MalformedPod(p, e.to_string());
            }
        }
        Msg::PodGone { key, uid } => sched.on_pod_deleted(&key, &uid, now),
        Msg::Namespace(ns) => sched.on_namespace(&ns, now),
        Msg::Workload(w) => {
            if let Err(e) = sched.on_workload(&w) {
                metrics.malformed_objects.inc();
                tracing::warn!(error = %e, "skipping a workload whose selector cannot be parsed");
            }
        }
        Msg::WorkloadGone { kind, namespace, name } => sched.on_workload_deleted(kind, &namespace, &name),
        Msg::WorkloadsSynced(kind, keys) => {
            synced.workloads.insert(kind);
            for (k, ns, name) in sched.cache.workloads().keys() {
                if k == kind && !keys.contains(&format!("{ns}/{name}")) {
                    sched.on_workload_deleted(k, &ns, &name);
                }
            }
        }
        Msg::Storage(o) => {
            if let Err(e) = sched.on_storage(&o, now) {
                metrics.malformed_objects.inc();
                tracing::warn!(error = %e, "skipping a storage object that cannot be parsed");
            }
        }
        Msg::StorageGone { kind, namespace, name } => sched.on_storage_deleted(kind, &namespace, &name, now),
        Msg::StorageSynced(kind, keys) => {
            synced.storage.insert(kind);
            for key in sched.cache.storage().keys(kind) {
                if !keys.contains(&key) {
                    let (ns, name) = key.split_once('/').unwrap_or(("", &key));
                    let (ns, name) = (ns.to_owned(), name.to_owned());
                    sched.on_storage_deleted(kind, &ns, &name, now);
                }
            }
        }
        Msg::NamespaceGone(name) => sched.on_namespace_deleted(&name),
        Msg::PodGroup(g) => {
            if let Err(e) = sched.on_pod_group(&g, now) {
                metrics.malformed_objects.inc();
                tracing::warn!(error = %e, "skipping a PodGroup that cannot be read");
            }
        }
        Msg::PodGroupGone { namespace, name } => sched.on_pod_group_deleted(&namespace, &name),
        Msg::PodGroupsSynced(keys) => {
            synced.pod_groups = true;
            let gone: Vec<String> = sched
                .pod_groups()
                .keys()
                .filter(|k| !keys.contains(*k))
                .cloned()
                .collect();
            for k in gone {
                let (ns, name) = k.split_once('/').unwrap_or(("", &k));
                let (ns, name) = (ns.to_owned(), name.to_owned());
                sched.on_pod_group_deleted(&ns, &name);
            }
        }
        Msg::Metrics {
            source,
            series,
            node_label,
        } => {
            let r = sched.on_metrics(&source, &series, now);
            // Before the node list is read, nothing matches: that says
            // nothing about the source.
            if synced.lists.0 {
                let unmatched = crate::metric_sources::unmatched(&r, &node_label);
                if metrics.metric_matched(&source, r.matched, unmatched.clone()) && !unmatched.is_empty() {
                    tracing::warn!(source = %source, nodes = r.matched, "metric source: {unmatched}");
                }
            }
        }
        Msg::NamespacesSynced(names) => {
            synced.lists.2 = true;
            for n in sched.cache.namespace_names() {
                if !names.contains(&n) {
                    sched.on_namespace_deleted(&n);
                }
            }
        }
        Msg::PodsSynced(keys) => {
            synced.lists.1 = true;
            // A relist: whatever we know that the server no longer has is gone.
            let mut known: Vec<String> = sched.cache.pod_keys().cloned().collect();
            known.extend(sched.queue.all_keys());
            known.extend(sched.gated_keys());
            for k in known {
                if !keys.contains(&k) && !sched.cache.is_assumed(&k) {
                    sched.on_pod_deleted(&k, "", now);
                }
            }
        }
    }
    Applied::Done
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmsched_core::config::Config;
    use wasmsched_core::plugins::Registry;
    use wasmsched_core::scheduler::Responsibility;

    fn obj<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> Box<T> {
        Box::new(serde_json::from_value(v).unwrap())
    }

    /// Until the first lists of nodes and pods are applied, nothing is
    /// placed: bound pods not listed yet would leave their nodes looking free.
    /// A scheduling thread (leading, default profile) and the ends of its
    /// channels a test drives and reads.
    struct Harness {
        rt: tokio::runtime::Runtime,
        tx: mpsc::Sender<Msg>,
        outcome_tx: mpsc::UnboundedSender<BindOutcome>,
        jobs: mpsc::Receiver<BindJob>,
        preempt_jobs: mpsc::Receiver<crate::preempt::PreemptJob>,
        halt: tokio::sync::watch::Sender<bool>,
        status: Arc<Status>,
        thread: std::thread::JoinHandle<()>,
        _reports: mpsc::Receiver<crate::reporter::Queued>,
        _evicted: mpsc::UnboundedSender<crate::preempt::EvictionsDone>,
    }

    /// Starts the thread, its preemption queue holding `preemptions`.
    fn harness(preemptions: usize) -> Harness {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let (tx, msgs) = mpsc::channel(64);
        let (outcome_tx, outcomes) = mpsc::unbounded_channel();
        let (jobs_tx, jobs) = mpsc::channel(8);
        let (reports_tx, reports) = mpsc::channel(64);
        let (preempt_tx, preempt_jobs) = mpsc::channel(preemptions);
        let (evicted, evictions) = mpsc::unbounded_channel();
        let (halt, stop) = tokio::sync::watch::channel(false);
        let status = Arc::new(Status::new(None));
        let leadership = Arc::new(Leadership::default());
        leadership.lead_forever();
        let sched = Scheduler::new(&Config::default(), &Registry::builtin(), 1, Responsibility::OwnProfiles).unwrap();
        let ch = Channels {
            msgs,
            outcomes,
            evictions,
            jobs: Some(jobs_tx),
            reports: reports_tx,
            preemptions: preempt_tx,
            stop,
        };
        let handle = rt.handle().clone();
        let st = status.clone();
        let thread = std::thread::spawn(move || run(sched, ch, st, leadership, handle));
        Harness {
            rt,
            tx,
            outcome_tx,
            jobs,
            preempt_jobs,
            halt,
            status,
            thread,
            _reports: reports,
            _evicted: evicted,
        }
    }

    impl Harness {
        /// The binder is done (its outcome sender gone) and the thread is
        /// told to stop: it ends.
        fn stop(self) {
            drop(self.outcome_tx);
            self.halt.send(true).unwrap();
            self.thread.join().unwrap();
        }
    }

    #[test]
    fn no_cycle_runs_before_every_list_is_applied() {
        let mut h = harness(crate::preempt::QUEUE);
        let (tx, jobs) = (h.tx.clone(), &mut h.jobs);
        let node =
            obj(serde_json::json!({"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "1", "pods": "10"}}}));
        let pod = obj(
            serde_json::json!({"metadata": {"name": "p", "namespace": "default", "uid": "u"},
            "spec": {"schedulerName": "wasm-scheduler", "containers": [{"name": "c"}]}}),
        );
        h.rt.block_on(async {
            tx.send(Msg::Node(node)).await.unwrap();
            tx.send(Msg::Pod(pod)).await.unwrap();
            tx.send(Msg::NodesSynced(["n".to_owned()].into())).await.unwrap();
            // The pods' list is not complete yet: nothing may be placed.
            let early = tokio::time::timeout(Duration::from_millis(300), jobs.recv()).await;
            assert!(early.is_err(), "placed before the pods were listed: {early:?}");
            tx.send(Msg::PodsSynced(["default/p".to_owned()].into())).await.unwrap();
            // Nor before the namespaces' (namespace selectors read them).
            let early = tokio::time::timeout(Duration::from_millis(300), jobs.recv()).await;
            assert!(early.is_err(), "placed before the namespaces were listed: {early:?}");
            tx.send(Msg::NamespacesSynced(["default".to_owned()].into()))
                .await
                .unwrap();
            // Nor before Services, controllers (default spreading reads
            // them) and budgets (preemption does).
            use wasmsched_core::storage::StorageKind;
            use wasmsched_core::workloads::WorkloadKind::*;
            for kind in [Service, ReplicationController, ReplicaSet, PodDisruptionBudget] {
                tx.send(Msg::WorkloadsSynced(kind, HashSet::new())).await.unwrap();
            }
            let early = tokio::time::timeout(Duration::from_millis(300), jobs.recv()).await;
            assert!(
                early.is_err(),
                "placed before every workload kind was listed: {early:?}"
            );
            tx.send(Msg::WorkloadsSynced(StatefulSet, HashSet::new()))
                .await
                .unwrap();
            // Nor before claims, volumes, classes and CSI nodes (the volume
            // plugins read them).
            let (last, rest) = StorageKind::ALL.split_last().unwrap();
            for kind in rest {
                tx.send(Msg::StorageSynced(*kind, HashSet::new())).await.unwrap();
            }
            let early = tokio::time::timeout(Duration::from_millis(300), jobs.recv()).await;
            assert!(early.is_err(), "placed before every storage kind was listed: {early:?}");
            tx.send(Msg::StorageSynced(*last, HashSet::new())).await.unwrap();
            // Nor before PodGroups (GangScheduling reads them).
            let early = tokio::time::timeout(Duration::from_millis(300), jobs.recv()).await;
            assert!(early.is_err(), "placed before PodGroups were listed: {early:?}");
            tx.send(Msg::PodGroupsSynced(HashSet::new())).await.unwrap();
            let job = tokio::time::timeout(Duration::from_secs(5), jobs.recv())
                .await
                .unwrap()
                .unwrap();
            assert_eq!((job.name.as_str(), job.node.as_str()), ("p", "n"));
        });
        h.stop();
    }

    /// Every list a cycle waits for, applied (empty but for nodes and pods).
    async fn all_listed(tx: &mpsc::Sender<Msg>, nodes: &[&str], pods: &[&str]) {
        use wasmsched_core::storage::StorageKind;
        use wasmsched_core::workloads::WorkloadKind::*;
        tx.send(Msg::NodesSynced(nodes.iter().map(|n| (*n).to_owned()).collect()))
            .await
            .unwrap();
        tx.send(Msg::PodsSynced(pods.iter().map(|p| (*p).to_owned()).collect()))
            .await
            .unwrap();
        tx.send(Msg::NamespacesSynced(["default".to_owned()].into()))
            .await
            .unwrap();
        for kind in [
            Service,
            ReplicationController,
            ReplicaSet,
            StatefulSet,
            PodDisruptionBudget,
        ] {
            tx.send(Msg::WorkloadsSynced(kind, HashSet::new())).await.unwrap();
        }
        for kind in StorageKind::ALL {
            tx.send(Msg::StorageSynced(kind, HashSet::new())).await.unwrap();
        }
        tx.send(Msg::PodGroupsSynced(HashSet::new())).await.unwrap();
    }

    /// The evictions a preemption decides wait in a bounded queue: one that
    /// finds it full evicts nothing, is counted, and its pod is decided
    /// again later; the scheduling thread never waits on it.
    #[test]
    fn a_full_preemption_queue_defers_the_preemption() {
        // Room for one decision, which nobody takes.
        let mut h = harness(1);
        let (tx, status, preempt_jobs) = (h.tx.clone(), h.status.clone(), &mut h.preempt_jobs);
        let node = |name: &str| {
            obj(serde_json::json!({"metadata": {"name": name},
                "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}}}))
        };
        let pod = |name: &str, node: Option<&str>, priority: i32| {
            obj(
                serde_json::json!({"metadata": {"name": name, "namespace": "default", "uid": name},
                "spec": {"schedulerName": "wasm-scheduler", "nodeName": node, "priority": priority,
                         "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
                "status": {"phase": if node.is_some() { "Running" } else { "Pending" }}}),
            )
        };
        h.rt.block_on(async {
            for n in ["n1", "n2"] {
                tx.send(Msg::Node(node(n))).await.unwrap();
            }
            tx.send(Msg::Pod(pod("low-1", Some("n1"), 0))).await.unwrap();
            tx.send(Msg::Pod(pod("low-2", Some("n2"), 0))).await.unwrap();
            all_listed(&tx, &["n1", "n2"], &["default/low-1", "default/low-2"]).await;
            // Each preempts on a node of its own: the first decision fills
            // the queue, the second finds it full.
            tx.send(Msg::Pod(pod("high-1", None, 1000))).await.unwrap();
            tx.send(Msg::Pod(pod("high-2", None, 1000))).await.unwrap();
            let deadline = Instant::now() + Duration::from_secs(5);
            while status.metrics.preemptions_deferred.get() == 0 {
                assert!(Instant::now() < deadline, "no preemption deferred");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let queued = preempt_jobs.try_recv().expect("the first decision is queued");
            assert!(queued.preemptor.name.starts_with("high-"));
            assert!(preempt_jobs.try_recv().is_err(), "nothing waits beyond the bound");
        });
        h.stop();
    }
}
