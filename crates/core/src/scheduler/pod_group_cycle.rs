//! The pod group cycle, as kube-scheduler v1.36's `scheduleOnePodGroup`
//! (with `GenericWorkload` and `GangScheduling` on, topology-aware
//! scheduling and workload-aware preemption off): when a pod of a PodGroup
//! is popped, the group's other queued pods are taken out of the queue
//! with it, sorted (priority, then first attempt), and each is scheduled in
//! turn against the cluster with the earlier ones placed, Permit deciding
//! after each. The group is placed when one pod's Permit allows it (for a
//! gang: `minCount` of its pods are assumed or bound); then every pod
//! placed binds. Otherwise every placement is undone and each pod goes
//! back to the queue (backoff, as v1.36 requeues a group's pods) with the
//! group's message; nothing is held for others meanwhile.

use std::sync::Arc;
use std::time::Instant;

use super::{Attempt, Cycle, GroupOutcome, Scheduler};
use crate::framework::{Diagnosis, FitError, Nominating, Nomination, ScheduleError};
use crate::plugins::gang_scheduling::{
    self, ASKED_TO_WAIT, GROUP_UNSCHEDULABLE, GroupView, WAITING_FOR_PREEMPTION, WAITING_MESSAGE,
};
use crate::pod::PodInfo;
use crate::pod_groups::{PodGroup, Policy, group_key};
use crate::queue::QueuedPod;

/// How one pod of the group fared in the group's cycle.
enum Tried {
    /// Placed (assumed, reserved, Permit run); `waits` when a Permit
    /// plugin holds it, `gang_waits` when GangScheduling is one.
    Placed {
        node: String,
        waits: bool,
        gang_waits: bool,
        nominated: Option<String>,
    },
    /// Fits once preemption's victims are gone: counted as placed on its
    /// nominated node for the pods after it (its room taken there).
    Preempting { node: String },
    /// Fits nowhere, or failed.
    Failed,
    /// Not tried: an error stopped the cycle before it.
    Skipped,
}

/// What the whole group's cycle decided.
#[derive(Debug, PartialEq, Eq)]
enum GroupStatus {
    /// Placed: its placed pods bind.
    Scheduled,
    /// Not placed: each pod goes back with the group's message.
    Unschedulable,
    /// Placed once preemption's victims are gone: each pod goes back,
    /// nominated to its node.
    WaitingOnPreemption,
    /// A pod's cycle failed: nothing is placed.
    Error(String),
}

impl Scheduler {
    /// The pods of the group `key` assumed or bound now.
    fn scheduled_members(&self, key: &str) -> usize {
        self.groups
            .members(key)
            .filter(|m| self.cache.pod(&m.key).is_some_and(|c| c.pod.uid == m.uid))
            .count()
    }

    /// Undoes a placement the group cycle made: Unreserve runs, the pod
    /// stops waiting at Permit, its node, volumes and devices are freed.
    /// Nothing is requeued: nobody saw the placement.
    fn undo_placement(&mut self, pod: &PodInfo) {
        self.unreserve(&pod.uid);
        self.cache.forget_pod(&pod.key, &pod.uid);
        self.drop_plans(&pod.key);
    }

    /// Schedules the group of `first` (which was popped) in one cycle and
    /// settles each of its pods; returns their attempts, the first
    /// carrying the group's outcome.
    pub(super) fn schedule_group(&mut self, first: QueuedPod, fi: usize, now: Instant, explain: bool) -> Vec<Attempt> {
        let name = first.pod.scheduling_group.clone().expect("a pod of a group");
        let key = group_key(&first.pod.namespace, &name);
        let first_key = first.pod.key.clone();
        let mut members = vec![first];
        let others: Vec<_> = self.groups.members(&key).filter(|m| m.key != first_key).collect();
        for m in others {
            if let Some(qp) = self.queue.pop_specific(&m.key, &m.uid, now) {
                if qp.pod.deleting {
                    self.queue.done(&qp.pod.key, &qp.pod.uid);
                    continue;
                }
                members.push(qp);
            }
        }
        // kube-scheduler's order: priority, then the first attempt (then
        // the name, so that a run is reproducible).
        members.sort_by(|a, b| {
            b.pod
                .priority
                .cmp(&a.pod.priority)
                .then(a.initial.cmp(&b.initial))
                .then_with(|| a.pod.key.cmp(&b.pod.key))
        });

        let Some(group) = self.groups.get(&key).cloned() else {
            // Deleted since the pods were queued: they wait for it again.
            for qp in members {
                self.queue.done(&qp.pod.key, &qp.pod.uid);
                self.gated.insert(qp.pod.key.clone(), (qp.pod.clone(), now));
            }
            return Vec::new();
        };
        let profile = self.frameworks[fi].profile.clone();
        if let Some(other) = members
            .iter()
            .find(|m| m.pod.scheduler_name != members[0].pod.scheduler_name)
        {
            let msg = format!(
                "all pods in a single pod group should have the same .spec.schedulerName set, got: {:?} and {:?}",
                other.pod.scheduler_name, members[0].pod.scheduler_name
            );
            return self.fail_all(
                &group,
                fi,
                members,
                |_| ScheduleError::Error(msg.clone()),
                "SchedulerError",
                now,
            );
        }
        if let Some(field) = group.unsupported {
            let all = self.cache.node_count();
            let msg = format!(
                "pod's pod group {:?} uses {field}, which {profile} does not support",
                group.name
            );
            return self.fail_all(
                &group,
                fi,
                members,
                |_| {
                    ScheduleError::Unschedulable(Box::new(FitError::new(
                        all,
                        Diagnosis {
                            pre_filter_msg: Some(msg.clone()),
                            ..Default::default()
                        },
                    )))
                },
                "Unschedulable",
                now,
            );
        }

        let mut scheduled = self.scheduled_members(&key);
        let mut status = GroupStatus::Unschedulable;
        let mut requires_preemption = false;
        let mut tried: Vec<(Tried, Option<Cycle>)> = Vec::with_capacity(members.len());
        for qp in &members {
            if matches!(status, GroupStatus::Error(_)) {
                tried.push((Tried::Skipped, None));
                continue;
            }
            let view = GroupView {
                policy: group.policy,
                scheduled: scheduled + 1,
            };
            let cycle = self.cycle(fi, &qp.pod, now, explain, Some(view));
            let (t, permitted) = match &cycle.result {
                Ok(r) => {
                    if self.assume(fi, &qp.pod, r, cycle.plugin_data.clone()) {
                        scheduled += 1;
                        // Placed, it no longer holds the room of a
                        // nomination (given back if the group is not).
                        let nominated = self.nominator.node_of(&qp.pod.key).map(str::to_owned);
                        if nominated.is_some() {
                            Arc::make_mut(&mut self.nominator).remove(&qp.pod.key);
                        }
                        (
                            Tried::Placed {
                                node: r.node.clone(),
                                waits: r.waiting,
                                gang_waits: !gang_scheduling::quorum(&group, scheduled),
                                nominated,
                            },
                            !r.waiting,
                        )
                    } else {
                        // Bound already (a stale pending version).
                        if r.waiting {
                            self.waiting.remove(&qp.pod.uid);
                        }
                        self.unreserve(&qp.pod.uid);
                        (Tried::Failed, false)
                    }
                }
                Err(ScheduleError::Unschedulable(fit)) => match &fit.nominating {
                    Nominating::Node(n) => {
                        // Its room on the nominated node is taken for the
                        // pods after it (the victims are still there).
                        self.cache.assume_pod(qp.pod.clone(), &n.node);
                        scheduled += 1;
                        requires_preemption = true;
                        (
                            Tried::Preempting { node: n.node.clone() },
                            gang_scheduling::quorum(&group, scheduled),
                        )
                    }
                    _ => (Tried::Failed, false),
                },
                Err(ScheduleError::NoNodes) => (Tried::Failed, false),
                Err(ScheduleError::Error(e)) => {
                    status = GroupStatus::Error(format!("failed to schedule other pod from a pod group: {e}"));
                    (Tried::Failed, false)
                }
            };
            if permitted && !matches!(status, GroupStatus::Error(_)) {
                status = if requires_preemption {
                    GroupStatus::WaitingOnPreemption
                } else {
                    GroupStatus::Scheduled
                };
            }
            tried.push((t, Some(cycle)));
        }

        // Everything placed is undone unless the group is placed; a pod
        // that needs preemption is never kept where its victims still are.
        let keep = status == GroupStatus::Scheduled;
        for (qp, (t, _)) in members.iter().zip(&tried) {
            match t {
                Tried::Placed { nominated, .. } if !keep => {
                    self.undo_placement(&qp.pod);
                    if let Some(n) = nominated {
                        Arc::make_mut(&mut self.nominator).nominate(qp.pod.clone(), n);
                    }
                }
                Tried::Preempting { .. } => {
                    self.cache.forget_pod(&qp.pod.key, &qp.pod.uid);
                }
                Tried::Placed { .. } => {}
                _ => {}
            }
        }

        let fit = tried
            .iter()
            .filter(|(t, _)| matches!(t, Tried::Placed { .. } | Tried::Preempting { .. }))
            .count();
        let placed = if keep {
            tried.iter().filter(|(t, _)| matches!(t, Tried::Placed { .. })).count()
        } else {
            0
        };
        let all_pods = self.groups.all_pods(&key);
        let (cond_status, reason, message) = match &status {
            GroupStatus::Scheduled => (true, "Scheduled", String::new()),
            GroupStatus::Unschedulable => (false, "Unschedulable", GROUP_UNSCHEDULABLE.to_owned()),
            GroupStatus::WaitingOnPreemption => (
                false,
                "Unschedulable",
                format!("{GROUP_UNSCHEDULABLE}, {WAITING_FOR_PREEMPTION}"),
            ),
            GroupStatus::Error(e) => (false, "SchedulerError", e.clone()),
        };
        let outcome = self.group_outcome(
            &group,
            cond_status,
            reason,
            message,
            (members.len(), fit, placed),
            all_pods,
        );

        let mut attempts = Vec::with_capacity(members.len());
        for (qp, (t, cycle)) in members.into_iter().zip(tried) {
            let (result, plugin_timings) = match cycle {
                Some(c) => (Some(c.result), c.plugin_timings),
                None => (None, Vec::new()),
            };
            let result = match (&status, t, result) {
                // The pod whose cycle failed keeps its own error.
                (GroupStatus::Error(_), _, Some(Err(ScheduleError::Error(e)))) => Err(ScheduleError::Error(e)),
                (GroupStatus::Error(e), _, _) => Err(ScheduleError::Error(e.clone())),
                (GroupStatus::Scheduled, Tried::Placed { waits, .. }, Some(Ok(r))) => {
                    if waits {
                        // The quorum is met: GangScheduling lets it go (the
                        // pod that met it allows those waiting).
                        self.waiting.allow(&qp.pod.uid, gang_scheduling::NAME);
                    }
                    Ok(r)
                }
                (GroupStatus::WaitingOnPreemption, Tried::Placed { node, .. }, _) => {
                    let mut fit = FitError::of_group(&node, WAITING_FOR_PREEMPTION);
                    fit.nominating = Nominating::Node(Nomination {
                        node,
                        victims: Vec::new(),
                        pdb_violations: 0,
                    });
                    Err(ScheduleError::Unschedulable(Box::new(fit)))
                }
                (GroupStatus::Unschedulable, Tried::Placed { node, gang_waits, .. }, _) => {
                    Err(ScheduleError::Unschedulable(Box::new(cleared(FitError::of_group(
                        &node,
                        &permit_message(&group, gang_waits),
                    )))))
                }
                (GroupStatus::Unschedulable, Tried::Preempting { node }, _) => {
                    // It would preempt for a group that does not fit even
                    // so: no victim is evicted.
                    Err(ScheduleError::Unschedulable(Box::new(cleared(FitError::of_group(
                        &node,
                        &permit_message(&group, true),
                    )))))
                }
                (_, _, Some(result)) => result,
                (_, _, None) => unreachable!("only an error stops a group's cycle before one of its pods"),
            };
            attempts.push(self.settle_member(fi, qp, result, plugin_timings, now));
        }
        if let Some(first) = attempts.first_mut() {
            first.pod_group = outcome;
        }
        attempts
    }

    /// Every pod of the group fails alike (before any is tried).
    fn fail_all(
        &mut self,
        group: &PodGroup,
        fi: usize,
        members: Vec<QueuedPod>,
        error: impl Fn(&QueuedPod) -> ScheduleError,
        reason: &'static str,
        now: Instant,
    ) -> Vec<Attempt> {
        let message = error(&members[0]).to_string();
        let all_pods = self.groups.all_pods(&group.key());
        let outcome = self.group_outcome(group, false, reason, message, (members.len(), 0, 0), all_pods);
        let mut attempts: Vec<Attempt> = members
            .into_iter()
            .map(|qp| {
                let e = error(&qp);
                self.settle_member(fi, qp, Err(e), Vec::new(), now)
            })
            .collect();
        if let Some(first) = attempts.first_mut() {
            first.pod_group = outcome;
        }
        attempts
    }

    /// The group's condition after this cycle (`counts`: its pods that
    /// took part, fit, and were placed), kept as its last cycle; None when
    /// the condition would not change (a group scheduled once is not set
    /// back to unschedulable).
    fn group_outcome(
        &mut self,
        group: &PodGroup,
        scheduled: bool,
        reason: &'static str,
        message: String,
        counts: (usize, usize, usize),
        all_pods: usize,
    ) -> Option<Arc<GroupOutcome>> {
        let (pods, fit, placed) = counts;
        let outcome = Arc::new(GroupOutcome {
            namespace: group.namespace.clone(),
            name: group.name.clone(),
            generation: group.generation,
            scheduled,
            reason,
            message,
            pods,
            fit,
            placed,
            all_pods,
        });
        self.group_cycles.insert(group.key(), outcome.clone());
        if group.scheduled && !scheduled {
            return None;
        }
        if scheduled && !group.scheduled {
            let mut g = group.clone();
            g.scheduled = true;
            self.groups.upsert(g);
        }
        Some(outcome)
    }

    /// Settles one pod of a group cycle: a placed pod stays assumed (its
    /// binding follows); any other goes back to the queue after backoff,
    /// as v1.36 requeues a group's pods, with its nomination as decided.
    fn settle_member(
        &mut self,
        fi: usize,
        qp: QueuedPod,
        result: Result<crate::framework::ScheduleResult, ScheduleError>,
        plugin_timings: Vec<crate::framework::PluginTiming>,
        now: Instant,
    ) -> Attempt {
        let (key, uid) = (qp.pod.key.clone(), qp.pod.uid.clone());
        let mut cleared_nominations = Vec::new();
        match &result {
            Ok(_) => {
                if self.nominator.node_of(&key).is_some() {
                    Arc::make_mut(&mut self.nominator).remove(&key);
                }
                self.requeue_for(&crate::events::Change::AssignedPodAdded(&qp.pod), now);
            }
            Err(ScheduleError::Unschedulable(fit)) => {
                cleared_nominations = self.nominate_after(&qp.pod, fit, now);
                self.queue.add_backoff(&key, &uid, now);
            }
            Err(_) => self.queue.add_backoff(&key, &uid, now),
        }
        self.attempt(fi, qp, result, plugin_timings, cleared_nominations)
    }
}

/// The Permit status of a pod held at Permit when its group fell short
/// (kube-scheduler's, with the framework's words for a wait).
fn permit_message(group: &PodGroup, gang_waits: bool) -> String {
    match group.policy {
        Policy::Gang { .. } if gang_waits => format!("{WAITING_MESSAGE}, {ASKED_TO_WAIT}"),
        _ => ASKED_TO_WAIT.to_owned(),
    }
}

/// The pod's nomination is cleared (kube-scheduler's `clearNominatedNode`).
fn cleared(mut fit: FitError) -> FitError {
    fit.nominating = Nominating::Clear;
    fit
}

/// Cases of v1.36's `TestPodGroupScheduling` (one node of 4 CPUs, pods of
/// 1 CPU, a gang of `minCount` 3), and of `TestSubmitPodGroupAlgorithmResult`'s
/// messages and conditions.
#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::config::Config;
    use crate::plugins::Registry;
    use crate::scheduler::Responsibility;

    const FEASIBLE_BUT_SHORT: &str = "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, one or more plugins asked to wait and no plugin rejected pod";

    fn sched() -> Scheduler {
        let mut s = Scheduler::new(&Config::default(), &Registry::builtin(), 1, Responsibility::OwnProfiles).unwrap();
        let n: k8s_openapi::api::core::v1::Node = serde_json::from_value(json!({
            "metadata": {"name": "node", "labels": {"topology.kubernetes.io/zone": "zone1"}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "32"}}
        }))
        .unwrap();
        s.on_node(&n, Instant::now()).unwrap();
        s
    }

    fn pod(
        name: &str,
        group: Option<&str>,
        cpu: &str,
        priority: i32,
        node: Option<&str>,
    ) -> k8s_openapi::api::core::v1::Pod {
        let mut spec = json!({
            "schedulerName": "wasm-scheduler",
            "priority": priority,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
        });
        if let Some(g) = group {
            spec["schedulingGroup"] = json!({"podGroupName": g});
        }
        if let Some(n) = node {
            spec["nodeName"] = json!(n);
        }
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "ns1", "uid": format!("uid-{name}")},
            "spec": spec,
        }))
        .unwrap()
    }

    fn group(name: &str, policy: serde_json::Value) -> k8s_openapi::api::scheduling::v1alpha2::PodGroup {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "ns1", "uid": format!("uid-{name}"), "generation": 1},
            "spec": {"schedulingPolicy": policy},
        }))
        .unwrap()
    }

    fn gang(name: &str, min: i32) -> k8s_openapi::api::scheduling::v1alpha2::PodGroup {
        group(name, json!({"gang": {"minCount": min}}))
    }

    /// Runs every ready cycle; placed pods are bound at once. Returns the
    /// attempts by pod name.
    fn run(s: &mut Scheduler, now: Instant) -> Vec<Attempt> {
        let mut out = Vec::new();
        while let Some(a) = s.schedule_one(now, false) {
            if let Ok(r) = &a.result {
                if r.waiting {
                    assert_eq!(
                        s.waiting.outcome(&a.pod.uid, || {}),
                        Some(Ok(())),
                        "{} allowed",
                        a.pod.name
                    );
                }
                s.binding_finished(&a.pod.key, &a.pod.uid, true, now);
            }
            out.push(a);
        }
        out
    }

    fn placed(attempts: &[Attempt]) -> Vec<&str> {
        let mut v: Vec<&str> = attempts
            .iter()
            .filter(|a| a.result.is_ok())
            .map(|a| a.pod.name.as_str())
            .collect();
        v.sort();
        v
    }

    fn message(attempts: &[Attempt], name: &str) -> String {
        let a = attempts.iter().find(|a| a.pod.name == name).unwrap();
        a.result.as_ref().unwrap_err().to_string()
    }

    fn used_cpu(s: &Scheduler) -> i64 {
        s.cache.node("node").unwrap().usage.requested.milli_cpu
    }

    #[test]
    fn a_gang_schedules_when_its_group_and_room_are_there() {
        let mut s = sched();
        let now = Instant::now();
        s.on_pod_group(&gang("pg1", 3), now).unwrap();
        for p in ["p1", "p2", "p3"] {
            s.on_pod(&pod(p, Some("pg1"), "1", 100, None), now).unwrap();
        }
        let a = run(&mut s, now);
        assert_eq!(placed(&a), ["p1", "p2", "p3"]);
        let g = a[0].pod_group.as_deref().unwrap();
        assert_eq!((g.scheduled, g.reason, g.message.as_str()), (true, "Scheduled", ""));
        assert_eq!((g.pods, g.placed, g.all_pods), (3, 3, 3));
        assert!(s.waiting.is_empty());
    }

    #[test]
    fn a_gang_waits_for_its_quorum_to_start() {
        let mut s = sched();
        let now = Instant::now();
        s.on_pod_group(&gang("pg1", 3), now).unwrap();
        for p in ["p1", "p2"] {
            s.on_pod(&pod(p, Some("pg1"), "1", 100, None), now).unwrap();
        }
        assert!(run(&mut s, now).is_empty());
        assert_eq!(s.gated_pods(), 2);
        let (p1, _) = s.gated().next().unwrap();
        assert_eq!(
            s.gated_reason(p1),
            "waiting for minCount pods from a gang to appear in scheduling queue"
        );
        s.on_pod(&pod("p3", Some("pg1"), "1", 100, None), now).unwrap();
        assert_eq!(placed(&run(&mut s, now)), ["p1", "p2", "p3"]);
    }

    #[test]
    fn a_gang_waits_for_its_group_then_for_room_holding_nothing() {
        let mut s = sched();
        let now = Instant::now();
        s.on_pod(&pod("blocker", None, "2", 100, Some("node")), now).unwrap();
        for p in ["p1", "p2", "p3"] {
            s.on_pod(&pod(p, Some("pg1"), "1", 100, None), now).unwrap();
        }
        assert!(run(&mut s, now).is_empty());
        let (p1, _) = s.gated().next().unwrap();
        assert_eq!(
            s.gated_reason(p1),
            "waiting for pods's pod group \"pg1\" to appear in scheduling queue"
        );
        s.on_pod_group(&gang("pg1", 3), now).unwrap();
        let a = run(&mut s, now);
        assert_eq!(a.len(), 3);
        assert!(placed(&a).is_empty());
        assert_eq!(message(&a, "p1"), FEASIBLE_BUT_SHORT);
        assert_eq!(message(&a, "p2"), FEASIBLE_BUT_SHORT);
        assert!(message(&a, "p3").starts_with("0/1 nodes are available: 1 Insufficient cpu."));
        let g = a[0].pod_group.as_deref().unwrap();
        assert_eq!(
            (g.scheduled, g.reason, g.message.as_str()),
            (false, "Unschedulable", "pod group is unschedulable")
        );
        assert_eq!(used_cpu(&s), 2000, "nothing is held for the gang");
        assert!(s.waiting.is_empty());
        assert!(s.reserved.is_empty());
        // Each goes back after backoff, not to wait for an event.
        assert_eq!(s.queue.len(crate::queue::Location::Backoff), 3);

        s.on_pod_deleted("ns1/blocker", "uid-blocker", now);
        let a = run(&mut s, now + Duration::from_secs(11));
        assert_eq!(placed(&a), ["p1", "p2", "p3"]);
        assert!(a[0].pod_group.as_deref().unwrap().scheduled);
    }

    #[test]
    fn the_quorum_binds_and_the_pod_beyond_it_waits_for_room() {
        let mut s = sched();
        let now = Instant::now();
        s.on_pod(&pod("small-blocker", None, "1", 100, Some("node")), now)
            .unwrap();
        for p in ["p1", "p2", "p3", "p4"] {
            s.on_pod(&pod(p, Some("pg1"), "1", 100, None), now).unwrap();
        }
        s.on_pod_group(&gang("pg1", 3), now).unwrap();
        let a = run(&mut s, now);
        assert_eq!(placed(&a).len(), 3);
        assert_eq!(a.len(), 4);
        s.on_pod_deleted("ns1/small-blocker", "uid-small-blocker", now);
        let later = run(&mut s, now + Duration::from_secs(11));
        assert_eq!(placed(&later).len(), 1);
        assert_eq!(used_cpu(&s), 4000);
    }

    #[test]
    fn two_gangs_competing_for_room_do_not_deadlock() {
        let mut s = sched();
        let now = Instant::now();
        s.on_pod_group(&gang("pg1", 3), now).unwrap();
        s.on_pod_group(&gang("pg2", 3), now).unwrap();
        for (p, g) in [
            ("other-p3", "pg2"),
            ("p3", "pg1"),
            ("other-p2", "pg2"),
            ("p2", "pg1"),
            ("other-p1", "pg2"),
            ("p1", "pg1"),
        ] {
            s.on_pod(&pod(p, Some(g), "1", 100, None), now + Duration::from_millis(1))
                .unwrap();
        }
        let a = run(&mut s, now);
        assert_eq!(placed(&a), ["other-p1", "other-p2", "other-p3"]);
        assert_eq!(used_cpu(&s), 3000, "no pod of the other gang holds anything");
        // The one that fit waits for the others, which do not.
        let msgs: Vec<String> = ["p1", "p2", "p3"].iter().map(|p| message(&a, p)).collect();
        assert_eq!(msgs.iter().filter(|m| *m == FEASIBLE_BUT_SHORT).count(), 1, "{msgs:?}");
        assert_eq!(
            msgs.iter()
                .filter(|m| m.starts_with("0/1 nodes are available: 1 Insufficient cpu."))
                .count(),
            2,
            "{msgs:?}"
        );
    }

    #[test]
    fn a_gang_that_fits_once_victims_go_is_nominated_whole() {
        let mut s = sched();
        let now = Instant::now();
        s.on_pod(&pod("low-priority-blocker", None, "2", 10, Some("node")), now)
            .unwrap();
        s.on_pod_group(&gang("pg1", 3), now).unwrap();
        for p in ["p1", "p2", "p3", "p4"] {
            s.on_pod(&pod(p, Some("pg1"), "1", 100, None), now).unwrap();
        }
        let a = run(&mut s, now);
        assert!(placed(&a).is_empty());
        let g = a[0].pod_group.as_deref().unwrap();
        assert_eq!(
            g.message,
            "pod group is unschedulable, pod group is waiting for preemption to complete"
        );
        let victims: Vec<&str> = a
            .iter()
            .filter_map(|a| a.nomination())
            .flat_map(|n| n.victims.iter().map(|v| v.name.as_str()))
            .collect();
        assert!(victims.contains(&"low-priority-blocker"), "{victims:?}");
        assert!(a.iter().all(|a| a.nomination().is_some_and(|n| n.node == "node")));
        assert_eq!(used_cpu(&s), 2000);
        // The victim goes; the gang binds whole.
        s.on_pod_deleted("ns1/low-priority-blocker", "uid-low-priority-blocker", now);
        let a = run(&mut s, now + Duration::from_secs(11));
        assert_eq!(placed(&a), ["p1", "p2", "p3", "p4"]);
    }

    #[test]
    fn a_basic_group_places_what_fits() {
        let mut s = sched();
        let now = Instant::now();
        s.on_pod(&pod("blocker", None, "2", 100, Some("node")), now).unwrap();
        s.on_pod_group(&group("pg1", json!({"basic": {}})), now).unwrap();
        for p in ["p1", "p2", "p3"] {
            s.on_pod(&pod(p, Some("pg1"), "1", 100, None), now).unwrap();
        }
        let a = run(&mut s, now);
        assert_eq!(placed(&a).len(), 2);
        let failed = a.iter().find(|a| a.result.is_err()).unwrap();
        let msg = failed.result.as_ref().unwrap_err().to_string();
        assert!(msg.starts_with("0/1 nodes are available: 1 Insufficient cpu."), "{msg}");
        assert!(a[0].pod_group.as_deref().unwrap().scheduled);
    }

    #[test]
    fn a_group_with_a_field_not_implemented_is_refused_by_name() {
        let mut s = sched();
        let now = Instant::now();
        let mut g = gang("pg1", 1);
        g.spec.scheduling_constraints = serde_json::from_value(json!({"topology": [{"key": "rack"}]})).unwrap();
        s.on_pod_group(&g, now).unwrap();
        s.on_pod(&pod("p1", Some("pg1"), "1", 100, None), now).unwrap();
        let a = run(&mut s, now);
        assert_eq!(
            message(&a, "p1"),
            "0/1 nodes are available: pod's pod group \"pg1\" uses spec.schedulingConstraints.topology, which wasm-scheduler does not support."
        );
        assert_eq!(used_cpu(&s), 0);
    }

    /// Fails the Filter of pod `p2` with an error.
    struct Broken;
    impl crate::framework::Plugin for Broken {
        fn name(&self) -> &str {
            "Broken"
        }
        fn points(&self) -> crate::framework::Points {
            crate::framework::Points::FILTER
        }
        fn filter(
            &self,
            _: &crate::framework::CycleState,
            pod: &PodInfo,
            _: &crate::node::NodeInfo,
        ) -> crate::framework::Status {
            if pod.name == "p2" {
                return crate::framework::Status::error("disk unreadable");
            }
            crate::framework::Status::success()
        }
    }

    /// A pod whose cycle fails with an error stops the group's cycle
    /// (v1.36's `failed to schedule other pod from a pod group`): it keeps
    /// its own error, the others get the group's, nothing is held, and the
    /// group's condition says `SchedulerError`.
    #[test]
    fn an_error_in_one_pods_cycle_fails_the_group_holding_nothing() {
        let mut registry = Registry::builtin();
        registry.register("Broken", std::sync::Arc::new(|_| Ok(std::sync::Arc::new(Broken) as _)));
        let config = Config::from_yaml(
            "profiles:\n- schedulerName: wasm-scheduler\n  plugins:\n    filter:\n      enabled: [{name: Broken}]\n",
        )
        .unwrap();
        let mut s = Scheduler::new(&config, &registry, 1, Responsibility::OwnProfiles).unwrap();
        let n: k8s_openapi::api::core::v1::Node = serde_json::from_value(json!({
            "metadata": {"name": "node"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "32"}}
        }))
        .unwrap();
        let now = Instant::now();
        s.on_node(&n, now).unwrap();
        s.on_pod_group(&gang("pg1", 3), now).unwrap();
        for p in ["p1", "p2", "p3"] {
            s.on_pod(&pod(p, Some("pg1"), "1", 100, None), now).unwrap();
        }
        let a = run(&mut s, now);
        assert_eq!(a.len(), 3);
        assert!(placed(&a).is_empty());
        assert!(message(&a, "p2").contains("disk unreadable"), "{}", message(&a, "p2"));
        for p in ["p1", "p3"] {
            let m = message(&a, p);
            assert!(
                m.starts_with("failed to schedule other pod from a pod group: "),
                "{p}: {m}"
            );
            assert!(m.contains("disk unreadable"), "{p}: {m}");
        }
        let g = a[0].pod_group.as_deref().unwrap();
        assert_eq!((g.scheduled, g.reason), (false, "SchedulerError"));
        assert!(g.message.starts_with("failed to schedule other pod from a pod group: "));
        assert_eq!(used_cpu(&s), 0);
        assert!(s.reserved.is_empty() && s.waiting.is_empty());
    }

    /// A group's placements not handed out yet are forgotten when the
    /// caller stops (a lost lease): nothing stays assumed.
    #[test]
    fn decided_placements_are_forgotten_when_the_caller_stops() {
        let mut s = sched();
        let now = Instant::now();
        s.on_pod_group(&gang("pg1", 3), now).unwrap();
        for p in ["p1", "p2", "p3"] {
            s.on_pod(&pod(p, Some("pg1"), "1", 100, None), now).unwrap();
        }
        let first = s.schedule_one(now, false).unwrap();
        assert!(first.result.is_ok());
        assert_eq!(s.forget_decided(now), 2);
        s.binding_finished(&first.pod.key, &first.pod.uid, false, now);
        assert_eq!(used_cpu(&s), 0);
        assert!(s.reserved.is_empty());
        assert!(s.schedule_one(now, false).is_none(), "all three back off");
        assert_eq!(placed(&run(&mut s, now + Duration::from_secs(11))).len(), 3);
    }

    /// A scheduled group's condition is not set back by a later cycle of
    /// extra pods that do not fit.
    #[test]
    fn a_scheduled_group_is_not_set_back() {
        let mut s = sched();
        let now = Instant::now();
        s.on_pod_group(&gang("pg1", 2), now).unwrap();
        for p in ["p1", "p2"] {
            s.on_pod(&pod(p, Some("pg1"), "2", 100, None), now).unwrap();
        }
        assert_eq!(placed(&run(&mut s, now)).len(), 2);
        s.on_pod(&pod("p3", Some("pg1"), "1", 100, None), now).unwrap();
        let a = run(&mut s, now);
        assert_eq!(a.len(), 1);
        assert!(a[0].result.is_err());
        assert!(a[0].pod_group.is_none());
    }
}
