//! The scheduler: profiles, cache and queue, and the loop step that takes
//! one pod through one scheduling cycle.
//!
//! Callers feed it cluster changes (`on_*`), call [`Scheduler::schedule_one`]
//! and bind the pods it places, reporting back with
//! [`Scheduler::binding_finished`]. `simulate`, `bench` and the daemon all
//! drive this same type.

use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::{Node, Pod};

use crate::ModelError;
use crate::cache::{Cache, Snapshot};
use crate::config::{Config, ConfigError};
use crate::framework::{CycleState, Framework, ScheduleError, ScheduleResult};
use crate::node::NodeData;
use crate::plugins::Registry;
use crate::pod::PodInfo;
use crate::queue::SchedulingQueue;
use crate::rng::Rng;

/// Which pods the scheduler takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Responsibility {
    /// Only pods whose `spec.schedulerName` names a profile (the daemon).
    OwnProfiles,
    /// Every pending pod; pods naming no profile use the first one
    /// (`simulate`: a what-if tool).
    AllPods,
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
}

/// One cycle in this many records per-plugin timings.
pub const PLUGIN_TIMING_SAMPLE: u64 = 10;

/// Profiles, cache and queue.
pub struct Scheduler {
    /// Nodes and the pods on them.
    pub cache: Cache,
    /// Pending pods.
    pub queue: SchedulingQueue,
    frameworks: Vec<Framework>,
    snapshot: Snapshot,
    rng: Rng,
    next_start: usize,
    responsibility: Responsibility,
    cycles: u64,
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
        Ok(Scheduler {
            cache: Cache::new(),
            queue: SchedulingQueue::new(config.initial_backoff(), config.max_backoff()),
            frameworks: config.build_frameworks(registry)?,
            snapshot: Snapshot::default(),
            rng: Rng::new(seed),
            next_start: 0,
            cycles: 0,
            responsibility,
        })
    }

    /// Runs `f` on the filter/score worker pool, so the parallel sections of
    /// each cycle split work among the pool's threads directly instead of
    /// handing it over from outside (which costs a wake-up per section).
    /// Drive the scheduling loop through this.
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
        match self.frameworks.iter().position(|f| f.profile == scheduler_name) {
            Some(i) => Some(i),
            None if self.responsibility == Responsibility::AllPods => Some(0),
            None => None,
        }
    }

    /// Whether a pod with this `schedulerName` is ours.
    pub fn is_responsible(&self, scheduler_name: &str) -> bool {
        self.framework_index(scheduler_name).is_some()
    }

    /// A node was added or changed. Unschedulable pods are retried.
    pub fn on_node(&mut self, node: &Node, now: Instant) -> Result<(), ModelError> {
        self.cache.upsert_node(NodeData::from_node(node)?);
        self.queue.move_all_to_active_or_backoff(now);
        Ok(())
    }

    /// A node was deleted.
    pub fn on_node_deleted(&mut self, name: &str) {
        self.cache.remove_node(name);
    }

    /// A pod was added or changed. Bound pods count as usage (and leave the
    /// queue); pending pods of ours are queued, unless assumed (our binding
    /// is in flight); terminal pods free their node.
    pub fn on_pod(&mut self, pod: &Pod, now: Instant) -> Result<(), ModelError> {
        let info = Arc::new(PodInfo::from_pod(pod)?);
        self.on_pod_info(info, now);
        Ok(())
    }

    /// [`Scheduler::on_pod`] for an already parsed pod.
    pub fn on_pod_info(&mut self, info: Arc<PodInfo>, now: Instant) {
        if info.node_name.is_some() || info.terminal {
            let was_accounted = self.cache.pod(&info.key).is_some();
            self.queue.delete(&info.key);
            self.cache.upsert_pod(info.clone());
            if info.terminal && was_accounted {
                self.queue.move_all_to_active_or_backoff(now);
            }
        } else if self.cache.is_assumed(&info.key) {
            // Our binding is in flight; the watch has not caught up yet.
        } else if self.is_responsible(&info.scheduler_name) {
            self.queue.add(info, now);
        }
    }

    /// A pod was deleted. If it used a node, unschedulable pods are retried.
    pub fn on_pod_deleted(&mut self, key: &str, now: Instant) {
        self.queue.delete(key);
        if self.cache.remove_pod(key) {
            self.queue.move_all_to_active_or_backoff(now);
        }
    }

    /// Takes the next pod from the queue through one scheduling cycle. On
    /// success the pod is reserved and assumed on its node; on failure it is
    /// parked (unschedulable) or backed off (error). `None` when no pod is
    /// ready.
    pub fn schedule_one(&mut self, now: Instant, explain: bool) -> Option<Attempt> {
        loop {
            let qp = self.queue.pop(now)?;
            let key = qp.pod.key.clone();
            let Some(fi) = self.framework_index(&qp.pod.scheduler_name) else {
                self.queue.done(&key);
                continue;
            };
            self.cache.update_snapshot(&mut self.snapshot);
            let fw = &self.frameworks[fi];
            let mut state = CycleState::default();
            self.cycles += 1;
            if self.cycles.is_multiple_of(PLUGIN_TIMING_SAMPLE) {
                state.sample_plugin_timings();
            }
            let mut result = fw.schedule(
                &mut state,
                &qp.pod,
                &self.snapshot,
                &mut self.next_start,
                &mut self.rng,
                explain,
            );
            if let Ok(r) = &result {
                let st = fw.run_reserve(&mut state, &qp.pod, &r.node);
                if !st.is_success() {
                    result = Err(ScheduleError::Error(format!(
                        "running Reserve plugin {:?}: {}",
                        st.plugin().unwrap_or_default(),
                        st.message()
                    )));
                }
            }
            match &result {
                Ok(r) => self.cache.assume_pod(qp.pod.clone(), &r.node),
                Err(ScheduleError::Unschedulable(_) | ScheduleError::NoNodes) => {
                    self.queue.add_unschedulable(&key, now)
                }
                Err(ScheduleError::Error(_)) => self.queue.add_backoff(&key, now),
            }
            return Some(Attempt {
                pod: qp.pod,
                profile: fw.profile.clone(),
                attempts: qp.attempts,
                queued_at: qp.initial,
                result,
                plugin_timings: state.take_plugin_timings(),
            });
        }
    }

    /// Reports the binding of a placed pod: on success the assumption is
    /// confirmed and the pod leaves the queue; on failure it is forgotten
    /// (its node is freed) and the pod retried after backoff.
    pub fn binding_finished(&mut self, key: &str, ok: bool, now: Instant) {
        if ok {
            self.cache.finish_binding(key);
            self.queue.done(key);
        } else {
            self.cache.forget_pod(key);
            self.queue.add_backoff(key, now);
        }
    }

    /// Drops a pod that no longer needs scheduling (bound by someone else, or
    /// deleted) whatever its state in the queue, and forgets its assumption.
    pub fn drop_pod(&mut self, key: &str) {
        self.cache.forget_pod(key);
        self.queue.delete(key);
        self.queue.done(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::parse_objects;

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
        let mut s = Scheduler::new(&Config::default(), &Registry::builtin(), 1, Responsibility::AllPods).unwrap();
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
                    s.binding_finished(&a.pod.key, true, now);
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
            "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 Insufficient cpu."
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
        s.binding_finished(&a.pod.key, false, now);
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
}
