//! GangScheduling, as kube-scheduler v1.36's: pods of a PodGroup whose
//! policy is `gang` wait before the queue (PreEnqueue) until the group
//! exists and `minCount` of its pods do, and at Permit until `minCount`
//! of them are scheduled (assumed or bound), 5 minutes at most. The
//! scheduler's pod group cycle (`Scheduler::schedule_one`) places a
//! group's queued pods together and asks this Permit after each; when the
//! last needed pod is placed it allows those waiting. Pods of a `basic`
//! group, or of none, pass.

use std::time::Duration;

use crate::framework::{CycleState, Permit, Plugin, Points};
use crate::pod::PodInfo;
use crate::pod_groups::{PodGroup, PodGroups, Policy};

/// The plugin's name.
pub const NAME: &str = "GangScheduling";

/// How long a gang's pod waits at Permit for the rest of its gang
/// (kube-scheduler's `permitTimeoutDuration`).
pub const PERMIT_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// The Permit status of a gang's pod that waits for the rest of its gang;
/// also the message of each of a gang's pods when the gang cannot be
/// placed whole.
pub const WAITING_MESSAGE: &str = "waiting for minCount pods from a gang to be scheduled";

/// What the framework adds to the status of a pod some Permit plugin
/// holds (kube-scheduler's `RunPermitPlugins`).
pub const ASKED_TO_WAIT: &str = "one or more plugins asked to wait and no plugin rejected pod";

/// The first words of the message of a pod whose group could not be
/// placed (kube-scheduler's `errPodGroupUnschedulable`), and the
/// condition message of such a group.
pub const GROUP_UNSCHEDULABLE: &str = "pod group is unschedulable";

/// Why the pods of a group that fits once victims are gone go back to the
/// queue, nominated to their nodes.
pub const WAITING_FOR_PREEMPTION: &str = "pod group is waiting for preemption to complete";

/// The key under which the scheduler leaves a [`GroupView`] in the cycle
/// state of a group's pod.
pub const GROUP_VIEW: &str = "GangScheduling/group";

/// What Permit reads of the pod's group, left in the cycle state by the
/// scheduler: the group's policy and how many of its pods are scheduled
/// now (assumed or bound, this one included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupView {
    /// The group's policy.
    pub policy: Policy,
    /// Its pods assumed or bound, this one included.
    pub scheduled: usize,
}

/// PreEnqueue: why a pod of a group may not be queued yet (kube-scheduler's
/// words), or `None` when it may.
pub fn pre_enqueue(pod: &PodInfo, groups: &PodGroups) -> Option<String> {
    let name = pod.scheduling_group.as_deref()?;
    let key = crate::pod_groups::group_key(&pod.namespace, name);
    let Some(group) = groups.get(&key) else {
        return Some(format!(
            "waiting for pods's pod group {name:?} to appear in scheduling queue"
        ));
    };
    match group.policy {
        Policy::Gang { min_count } if groups.all_pods(&key) < min_count as usize => {
            Some("waiting for minCount pods from a gang to appear in scheduling queue".into())
        }
        _ => None,
    }
}

/// Whether the group's policy is met with `scheduled` of its pods
/// scheduled.
pub fn quorum(group: &PodGroup, scheduled: usize) -> bool {
    match group.policy {
        Policy::Basic => true,
        Policy::Gang { min_count } => scheduled >= min_count as usize,
    }
}

/// The plugin. Its PreEnqueue is [`pre_enqueue`], which the scheduler asks
/// when a pod arrives; its events (a pod of the group added, the group
/// created) are the scheduler's too, which knows the groups.
#[derive(Debug, Default)]
pub struct GangScheduling;

impl Plugin for GangScheduling {
    fn name(&self) -> &str {
        NAME
    }

    fn points(&self) -> Points {
        Points::PERMIT
    }

    fn permit(&self, state: &mut CycleState, _pod: &PodInfo, _node: &str) -> Permit {
        match state.read::<GroupView>(GROUP_VIEW) {
            Some(GroupView {
                policy: Policy::Gang { min_count },
                scheduled,
            }) if *scheduled < *min_count as usize => Permit::Wait(PERMIT_TIMEOUT),
            _ => Permit::Allow,
        }
    }

    fn events_to_register(&self) -> Vec<crate::events::ClusterEvent> {
        // Retried by the scheduler itself when a pod of the group arrives
        // or the group is created (kube-scheduler's Pod/Add and
        // PodGroup/Add, with hints matching the group).
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod::PodKey;
    use serde_json::json;

    fn pod(group: Option<&str>) -> PodInfo {
        let mut spec = json!({"containers": [{"name": "c", "image": "i"}]});
        if let Some(g) = group {
            spec["schedulingGroup"] = json!({"podGroupName": g});
        }
        let p: k8s_openapi::api::core::v1::Pod =
            serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": spec}))
                .unwrap();
        PodInfo::from_pod(&p).unwrap()
    }

    fn group(policy: serde_json::Value) -> PodGroup {
        PodGroup::parse(
            &serde_json::from_value(json!({"metadata": {"name": "g", "namespace": "ns"},
                "spec": {"schedulingPolicy": policy}}))
            .unwrap(),
        )
        .unwrap()
    }

    /// Ported from v1.36's `TestPreEnqueue`: a pod without a group passes;
    /// one whose group does not exist waits for it; a gang's pod waits
    /// until `minCount` pods exist; a basic group's pod passes.
    #[test]
    fn pre_enqueue_waits_for_the_group_and_its_pods() {
        let mut gs = PodGroups::default();
        assert_eq!(pre_enqueue(&pod(None), &gs), None);
        assert_eq!(
            pre_enqueue(&pod(Some("g")), &gs).as_deref(),
            Some("waiting for pods's pod group \"g\" to appear in scheduling queue")
        );
        gs.upsert(group(json!({"gang": {"minCount": 2}})));
        gs.add_pod("ns/g", &PodKey::from("ns/p".to_owned()), "u");
        assert_eq!(
            pre_enqueue(&pod(Some("g")), &gs).as_deref(),
            Some("waiting for minCount pods from a gang to appear in scheduling queue")
        );
        gs.add_pod("ns/g", &PodKey::from("ns/q".to_owned()), "u2");
        assert_eq!(pre_enqueue(&pod(Some("g")), &gs), None);
        let mut basic = PodGroups::default();
        basic.upsert(group(json!({"basic": {}})));
        assert_eq!(pre_enqueue(&pod(Some("g")), &basic), None);
    }

    /// Ported from v1.36's `TestPermit`: a gang's pod waits 5 minutes
    /// while fewer than `minCount` are scheduled, and is allowed once
    /// enough are; other pods pass.
    #[test]
    fn permit_waits_for_the_quorum() {
        let p = GangScheduling;
        let mut st = CycleState::default();
        let info = pod(Some("g"));
        assert_eq!(p.permit(&mut st, &info, "n"), Permit::Allow, "no group view: no group");
        let gang = Policy::Gang { min_count: 3 };
        st.write(
            GROUP_VIEW,
            GroupView {
                policy: gang,
                scheduled: 2,
            },
        );
        assert_eq!(p.permit(&mut st, &info, "n"), Permit::Wait(PERMIT_TIMEOUT));
        st.write(
            GROUP_VIEW,
            GroupView {
                policy: gang,
                scheduled: 3,
            },
        );
        assert_eq!(p.permit(&mut st, &info, "n"), Permit::Allow);
        st.write(
            GROUP_VIEW,
            GroupView {
                policy: Policy::Basic,
                scheduled: 1,
            },
        );
        assert_eq!(p.permit(&mut st, &info, "n"), Permit::Allow);
    }
}
