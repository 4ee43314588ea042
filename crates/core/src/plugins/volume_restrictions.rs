//! VolumeRestrictions: a claim with the `ReadWriteOncePod` access mode is
//! used by one pod in the whole cluster, and the inline disks that cannot be
//! shared (GCE PD, AWS EBS, iSCSI, Ceph RBD mounted read-write) are used by
//! one pod per node.

use crate::cache::Snapshot;
use crate::events::{Action, Change, ClusterEvent, QueueingHint, Resource};
use crate::framework::{CycleState, Plugin, Points, Status};
use crate::node::NodeInfo;
use crate::pod::PodInfo;
use crate::storage::{StorageKind, claim_not_found};

/// Disk conflict, in kube-scheduler's words.
pub const ERR_REASON_DISK_CONFLICT: &str = "node(s) had no available disk";
/// `ReadWriteOncePod` conflict, in kube-scheduler's words.
pub const ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT: &str =
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode";

/// What PreFilter found: how many of the pod's `ReadWriteOncePod` claims a
/// scheduled pod already uses.
struct PreFilterState {
    conflicting_claims: usize,
}

/// The VolumeRestrictions plugin.
#[derive(Debug, Default)]
pub struct VolumeRestrictions;

impl Plugin for VolumeRestrictions {
    fn name(&self) -> &str {
        super::names::VOLUME_RESTRICTIONS
    }

    fn points(&self) -> Points {
        Points::PRE_FILTER | Points::FILTER
    }

    /// Looks the pod's claims up (a missing one rejects the pod) and counts
    /// the scheduled pods that use its single-pod claims. Preemption's
    /// what-if reruns this without the victims, which is kube-scheduler's
    /// `RemovePod`.
    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, snapshot: &Snapshot) -> Status {
        let mut single_pod: Vec<&str> = Vec::new();
        for c in pod.volumes.claims.iter().filter(|c| !c.ephemeral) {
            let Some(claim) = snapshot.storage.pod_claim(pod, c) else {
                return Status::unresolvable(claim_not_found(&c.claim));
            };
            if claim.read_write_once_pod() && !single_pod.contains(&c.claim.as_str()) {
                single_pod.push(&c.claim);
            }
        }
        let conflicting_claims = single_pod
            .iter()
            .filter(|name| {
                snapshot.nodes.iter().any(|n| {
                    n.usage.pod_infos.iter().any(|p| {
                        p.namespace == pod.namespace
                            && p.volumes.claims.iter().any(|c| !c.ephemeral && c.claim == **name)
                    })
                })
            })
            .count();
        if pod.volumes.disks.is_empty() && conflicting_claims == 0 {
            return Status::skip();
        }
        state.write(self.name(), PreFilterState { conflicting_claims });
        Status::success()
    }

    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let disk_conflict = pod.volumes.disks.iter().any(|d| {
            node.usage
                .pod_infos
                .iter()
                .any(|p| p.volumes.disks.iter().any(|e| d.conflicts(e)))
        });
        if disk_conflict {
            return Status::unschedulable(ERR_REASON_DISK_CONFLICT);
        }
        match state.read::<PreFilterState>(self.name()) {
            Some(s) if s.conflicting_claims > 0 => Status::unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT),
            _ => Status::success(),
        }
    }

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent {
                resource: Resource::AssignedPod,
                action: Action::DELETE,
            },
            ClusterEvent {
                resource: Resource::Node,
                action: Action::ADD,
            },
            ClusterEvent {
                resource: Resource::PersistentVolumeClaim,
                action: Action::ADD,
            },
        ]
    }

    /// A pod leaving that held a conflicting disk or shared a claim; a new
    /// node; the claim the pod names appearing.
    fn queueing_hint(&self, pod: &PodInfo, change: &Change<'_>) -> QueueingHint {
        let queue = match change {
            Change::NodeAdded(_) => true,
            Change::AssignedPodDeleted(gone) => {
                gone.namespace == pod.namespace
                    && (pod
                        .volumes
                        .disks
                        .iter()
                        .any(|d| gone.volumes.disks.iter().any(|g| d.conflicts(g)))
                        || pod.volumes.claims.iter().any(|c| gone.volumes.claims.contains(c)))
            }
            Change::StorageChanged {
                kind: StorageKind::Claim,
                key,
                ..
            } => pod.volumes.uses_claim(&pod.namespace, key),
            _ => false,
        };
        if queue { QueueingHint::Queue } else { QueueingHint::Skip }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{Value, json};

    use super::*;
    use crate::framework::Code;
    use crate::plugins::testutil::{cluster, spec_pod};

    fn claim(name: &str, modes: &[&str]) -> Value {
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": name, "namespace": "default"},
               "spec": {"accessModes": modes}})
    }

    fn with_claim(name: &str, node: &str, claim: &str) -> k8s_openapi::api::core::v1::Pod {
        spec_pod(
            name,
            "default",
            json!({}),
            node,
            json!({"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}]}),
        )
    }

    fn with_disk(name: &str, node: &str, disk: Value) -> k8s_openapi::api::core::v1::Pod {
        spec_pod(name, "default", json!({}), node, json!({"volumes": [disk]}))
    }

    /// Runs PreFilter and Filter on node `a` of a cluster of `a` and `b`.
    fn run(pods: &[k8s_openapi::api::core::v1::Pod], claims: &[Value], pod: &PodInfo) -> (Code, Option<String>) {
        let mut snap = cluster(&[("a", json!({}), json!({})), ("b", json!({}), json!({}))], pods, &[]);
        let mut storage = crate::storage::Storage::default();
        for c in claims {
            storage.upsert(c).unwrap();
        }
        snap.storage = Arc::new(storage);
        let mut st = CycleState::default();
        let pre = VolumeRestrictions.pre_filter(&mut st, pod, &snap);
        if !pre.is_success() {
            return (pre.code(), pre.has_reasons().then(|| pre.message()));
        }
        let f = VolumeRestrictions.filter(&st, pod, &snap.nodes[snap.position("a").unwrap()]);
        (f.code(), f.has_reasons().then(|| f.message()))
    }

    /// (name, pods placed, pod, code, message).
    type Case = (
        &'static str,
        Vec<k8s_openapi::api::core::v1::Pod>,
        k8s_openapi::api::core::v1::Pod,
        Code,
        Option<&'static str>,
    );

    #[test]
    fn read_write_once_pod_and_disk_conflicts() {
        let info = |p: &k8s_openapi::api::core::v1::Pod| PodInfo::from_pod(p).unwrap();
        let gce = |pd: &str, ro: bool| json!({"name": "d", "gcePersistentDisk": {"pdName": pd, "readOnly": ro}});
        let ebs = |id: &str| json!({"name": "d", "awsElasticBlockStore": {"volumeID": id}});
        let iscsi = |iqn: &str, ro: bool| json!({"name": "d", "iscsi": {"iqn": iqn, "targetPortal": "t", "lun": 0, "readOnly": ro}});
        let rbd = |mons: &[&str], image: &str, ro: bool| json!({"name": "d", "rbd": {"monitors": mons, "image": image, "readOnly": ro}});
        let rwop = [
            claim("data", &["ReadWriteOncePod"]),
            claim("shared", &["ReadWriteOnce"]),
        ];
        let cases: Vec<Case> = vec![
            (
                "no volumes",
                vec![],
                spec_pod("p", "default", json!({}), "", json!({})),
                Code::Skip,
                None,
            ),
            (
                "missing claim",
                vec![],
                with_claim("p", "", "nope"),
                Code::UnschedulableAndUnresolvable,
                Some("persistentvolumeclaim \"nope\" not found"),
            ),
            (
                "RWOP claim unused",
                vec![],
                with_claim("p", "", "data"),
                Code::Skip,
                None,
            ),
            (
                // The user sits on the other node: the conflict is cluster-wide.
                "RWOP claim used on another node",
                vec![with_claim("user", "b", "data")],
                with_claim("p", "", "data"),
                Code::Unschedulable,
                Some(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT),
            ),
            (
                "RWO claim shared",
                vec![with_claim("user", "a", "shared")],
                with_claim("p", "", "shared"),
                Code::Skip,
                None,
            ),
            (
                "same GCE disk",
                vec![with_disk("u", "a", gce("pd1", false))],
                with_disk("p", "", gce("pd1", false)),
                Code::Unschedulable,
                Some(ERR_REASON_DISK_CONFLICT),
            ),
            (
                "GCE disk both read-only",
                vec![with_disk("u", "a", gce("pd1", true))],
                with_disk("p", "", gce("pd1", true)),
                Code::Success,
                None,
            ),
            (
                "GCE disk on the other node",
                vec![with_disk("u", "b", gce("pd1", false))],
                with_disk("p", "", gce("pd1", false)),
                Code::Success,
                None,
            ),
            (
                "same EBS volume",
                vec![with_disk("u", "a", ebs("vol-1"))],
                with_disk("p", "", ebs("vol-1")),
                Code::Unschedulable,
                Some(ERR_REASON_DISK_CONFLICT),
            ),
            (
                "other EBS volume",
                vec![with_disk("u", "a", ebs("vol-1"))],
                with_disk("p", "", ebs("vol-2")),
                Code::Success,
                None,
            ),
            (
                "same iSCSI IQN, one writer",
                vec![with_disk("u", "a", iscsi("iqn.a", true))],
                with_disk("p", "", iscsi("iqn.a", false)),
                Code::Unschedulable,
                Some(ERR_REASON_DISK_CONFLICT),
            ),
            (
                "RBD sharing a monitor",
                vec![with_disk("u", "a", rbd(&["m1", "m2"], "img", false))],
                with_disk("p", "", rbd(&["m2"], "img", false)),
                Code::Unschedulable,
                Some(ERR_REASON_DISK_CONFLICT),
            ),
            (
                "RBD, no common monitor",
                vec![with_disk("u", "a", rbd(&["m1"], "img", false))],
                with_disk("p", "", rbd(&["m3"], "img", false)),
                Code::Success,
                None,
            ),
        ];
        for (name, pods, pod, code, msg) in cases {
            let got = run(&pods, &rwop, &info(&pod));
            assert_eq!(got, (code, msg.map(str::to_owned)), "{name}");
        }
    }

    #[test]
    fn queueing_hints() {
        let pod = PodInfo::from_pod(&with_claim("p", "", "data")).unwrap();
        let holder = PodInfo::from_pod(&with_claim("u", "a", "data")).unwrap();
        let other = PodInfo::from_pod(&with_claim("o", "a", "other")).unwrap();
        let hint = |c: &Change<'_>| VolumeRestrictions.queueing_hint(&pod, c);
        assert_eq!(hint(&Change::AssignedPodDeleted(&holder)), QueueingHint::Queue);
        assert_eq!(hint(&Change::AssignedPodDeleted(&other)), QueueingHint::Skip);
        let added = |key| Change::StorageChanged {
            kind: StorageKind::Claim,
            key,
            action: Action::ADD,
        };
        assert_eq!(hint(&added("default/data")), QueueingHint::Queue);
        assert_eq!(hint(&added("other/data")), QueueingHint::Skip);
        assert_eq!(hint(&added("default/else")), QueueingHint::Skip);
    }
}
