//! VolumeZone: a pod whose bound volumes carry zone or region labels runs
//! in a node of those zones and regions. A label value may list several
//! zones joined by `__`; the beta labels match the GA labels of the node.
//! Nodes without any zone or region label pass.

use crate::cache::Snapshot;
use crate::events::{Action, Change, ClusterEvent, QueueingHint, Resource};
use crate::framework::{CycleState, Plugin, Points, Status};
use crate::node::NodeInfo;
use crate::pod::PodInfo;
use crate::storage::{StorageKind, claim_not_found};

/// The reason, in kube-scheduler's words.
pub const ERR_REASON_CONFLICT: &str = "node(s) had no available volume zone";

/// GA zone label.
const ZONE: &str = "topology.kubernetes.io/zone";
/// GA region label.
const REGION: &str = "topology.kubernetes.io/region";
/// Beta zone label.
const BETA_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
/// Beta region label.
const BETA_REGION: &str = "failure-domain.beta.kubernetes.io/region";
/// The labels VolumeZone reads.
const TOPOLOGY_LABELS: [&str; 4] = [ZONE, REGION, BETA_ZONE, BETA_REGION];

/// The GA label of a beta one.
fn ga_label(key: &str) -> &str {
    match key {
        BETA_ZONE => ZONE,
        BETA_REGION => REGION,
        other => other,
    }
}

/// The (label, allowed values) the pod's volumes require.
struct PreFilterState(Vec<(&'static str, Vec<String>)>);

/// The VolumeZone plugin.
#[derive(Debug, Default)]
pub struct VolumeZone;

impl Plugin for VolumeZone {
    fn name(&self) -> &str {
        super::names::VOLUME_ZONE
    }

    fn points(&self) -> Points {
        Points::PRE_FILTER | Points::FILTER
    }

    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, snapshot: &Snapshot) -> Status {
        let storage = &snapshot.storage;
        let mut topology: Vec<(&'static str, Vec<String>)> = Vec::new();
        for c in pod.volumes.claims.iter().filter(|c| !c.ephemeral) {
            let Some(claim) = storage.pod_claim(pod, c) else {
                return Status::unresolvable(claim_not_found(&c.claim));
            };
            let Some(pv_name) = &claim.volume_name else {
                if claim.class.is_empty() {
                    return Status::unresolvable("PersistentVolumeClaim had no pv name and storageClass name");
                }
                match storage.class(&claim.class) {
                    None => {
                        return Status::unresolvable(format!(
                            "storageclass.storage.k8s.io \"{}\" not found",
                            claim.class
                        ));
                    }
                    Some(class) if class.wait_for_first_consumer => continue,
                    Some(_) => return Status::unresolvable("PersistentVolume had no name"),
                }
            };
            let Some(pv) = storage.volume(pv_name) else {
                return Status::unresolvable(format!("persistentvolume \"{pv_name}\" not found"));
            };
            for key in TOPOLOGY_LABELS {
                if let Some(v) = pv.labels.get(key) {
                    topology.push((key, v.split("__").map(|z| z.trim().to_owned()).collect()));
                }
            }
        }
        if topology.is_empty() {
            return Status::skip();
        }
        state.write(self.name(), PreFilterState(topology));
        Status::success()
    }

    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(PreFilterState(topology)) = state.read::<PreFilterState>(self.name()) else {
            return Status::success();
        };
        let labels = &node.node.labels;
        if !TOPOLOGY_LABELS.iter().any(|k| labels.contains_key(*k)) {
            return Status::success();
        }
        for (key, values) in topology {
            let v = labels.get(*key).or_else(|| labels.get(ga_label(key)));
            if !v.is_some_and(|v| values.contains(v)) {
                return Status::unresolvable(ERR_REASON_CONFLICT);
            }
        }
        Status::success()
    }

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        let add_update = Action::ADD.union(Action::UPDATE);
        vec![
            ClusterEvent {
                resource: Resource::StorageClass,
                action: Action::ADD,
            },
            ClusterEvent {
                resource: Resource::Node,
                action: Action::ADD
                    .union(Action::UPDATE_NODE_LABEL)
                    .union(Action::UPDATE_NODE_TAINT),
            },
            ClusterEvent {
                resource: Resource::PersistentVolumeClaim,
                action: add_update,
            },
            ClusterEvent {
                resource: Resource::PersistentVolume,
                action: add_update,
            },
        ]
    }

    /// A claim of the pod changing; a volume or class that may be one of
    /// its; a node.
    fn queueing_hint(&self, pod: &PodInfo, change: &Change<'_>) -> QueueingHint {
        let queue = match change {
            Change::StorageChanged {
                kind: StorageKind::Claim,
                key,
                ..
            } => pod.volumes.uses_claim(&pod.namespace, key),
            Change::StorageChanged { .. } => !pod.volumes.claims.is_empty(),
            _ => true,
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

    fn bound(claim: &str, pv: &str, labels: Value) -> [Value; 2] {
        [
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                   "metadata": {"name": claim, "namespace": "default"}, "spec": {"volumeName": pv}}),
            json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv, "labels": labels},
                   "spec": {}}),
        ]
    }

    #[test]
    fn zones_and_regions() {
        let mut objects = Vec::new();
        objects.extend(bound("one-zone", "pv1", json!({ZONE: "z1"})));
        objects.extend(bound("two-zones", "pv2", json!({ZONE: "z1__z2"})));
        objects.extend(bound("beta", "pv3", json!({BETA_ZONE: "z2", BETA_REGION: "r1"})));
        objects.extend(bound("plain", "pv4", json!({})));
        let nodes = [
            ("z1", json!({ZONE: "z1", REGION: "r1"}), json!({})),
            ("z2", json!({ZONE: "z2", REGION: "r1"}), json!({})),
            ("unlabelled", json!({}), json!({})),
        ];
        let mut snap = cluster(&nodes, &[], &[]);
        let mut storage = crate::storage::Storage::default();
        for o in &objects {
            storage.upsert(o).unwrap();
        }
        snap.storage = Arc::new(storage);
        let conflict = || ERR_REASON_CONFLICT.to_owned();
        let ok = || "ok".to_owned();
        let cases = [
            ("one-zone", Ok(vec![ok(), conflict(), ok()])),
            ("two-zones", Ok(vec![ok(), ok(), ok()])),
            ("beta", Ok(vec![conflict(), ok(), ok()])),
            ("plain", Err(Code::Skip)),
            ("missing", Err(Code::UnschedulableAndUnresolvable)),
        ];
        for (claim, want) in cases {
            let pod = PodInfo::from_pod(&spec_pod(
                "p",
                "default",
                json!({}),
                "",
                json!({"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}]}),
            ))
            .unwrap();
            let mut st = CycleState::default();
            let pre = VolumeZone.pre_filter(&mut st, &pod, &snap);
            let got = if pre.is_success() {
                Ok(["z1", "z2", "unlabelled"]
                    .iter()
                    .map(|n| {
                        let f = VolumeZone.filter(&st, &pod, &snap.nodes[snap.position(n).unwrap()]);
                        if f.is_success() { ok() } else { f.message() }
                    })
                    .collect::<Vec<_>>())
            } else {
                Err(pre.code())
            };
            assert_eq!(got, want, "{claim}");
        }
    }
}
