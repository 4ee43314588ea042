//! NodeVolumeLimits: the CSI volumes a node has attached stay within what
//! its CSINode says each driver can attach (`spec.drivers[].allocatable
//! .count`). Volumes count once per node however many pods use them; a claim
//! not bound yet counts against its StorageClass's provisioner; in-tree
//! volumes count as the CSI driver they migrated to where the node's CSINode
//! lists them as migrated.

use std::collections::BTreeMap;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::cache::Snapshot;
use crate::events::{Action, Change, ClusterEvent, QueueingHint, Resource};
use crate::framework::{CycleState, Plugin, Points, Status};
use crate::node::NodeInfo;
use crate::pod::PodInfo;
use crate::storage::{CsiNode, Storage, StorageKind};

/// The reason, in kube-scheduler's words.
pub const ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED: &str = "node(s) exceed max volume count";

/// The NodeVolumeLimits plugin (kube-scheduler's `CSILimits`).
#[derive(Debug, Default)]
pub struct NodeVolumeLimits;

/// The storage objects of the cycle, kept from PreFilter for Filter.
struct PreFilterState(Arc<Storage>);

/// Adds the volumes `pod` attaches on a node with this CSINode to `out`
/// (unique name `driver/handle` → driver). For the pod being placed a
/// missing claim is an error; other pods' missing claims do not count.
fn attachable_volumes(
    storage: &Storage,
    pod: &PodInfo,
    csi_node: Option<&CsiNode>,
    new_pod: bool,
    out: &mut FxHashMap<String, String>,
) -> Result<(), Status> {
    for c in &pod.volumes.claims {
        let Some(claim) = storage.pod_claim(pod, c) else {
            if new_pod {
                return Err(Status::unresolvable(format!(
                    "looking up PVC {}/{}: {}",
                    pod.namespace,
                    c.claim,
                    crate::storage::claim_not_found(&c.claim)
                )));
            }
            continue;
        };
        if c.ephemeral
            && let Err(e) = claim.check_for_pod(pod)
        {
            if new_pod {
                return Err(Status::error(e));
            }
            continue;
        }
        if let Some((driver, handle)) = storage.attachable_of_claim(claim, csi_node) {
            out.insert(format!("{driver}/{handle}"), driver);
        }
    }
    for a in pod.volumes.attachable.iter().filter(|a| a.counts_on(csi_node)) {
        out.insert(format!("{}/{}", a.driver, a.handle), a.driver.clone());
    }
    Ok(())
}

impl Plugin for NodeVolumeLimits {
    fn name(&self) -> &str {
        super::names::NODE_VOLUME_LIMITS
    }

    fn points(&self) -> Points {
        Points::PRE_FILTER | Points::FILTER
    }

    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, snapshot: &Snapshot) -> Status {
        if pod.volumes.claims.is_empty() && pod.volumes.attachable.is_empty() {
            return Status::skip();
        }
        state.write(self.name(), PreFilterState(snapshot.storage.clone()));
        Status::success()
    }

    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(PreFilterState(storage)) = state.read::<PreFilterState>(self.name()) else {
            return Status::success();
        };
        let csi_node = storage.csi_node(node.name()).map(|n| &**n);
        let mut new = FxHashMap::default();
        if let Err(st) = attachable_volumes(storage, pod, csi_node, true, &mut new) {
            return st;
        }
        if new.is_empty() {
            return Status::success();
        }
        let limits: BTreeMap<&str, i64> = csi_node
            .iter()
            .flat_map(|n| n.limits.iter())
            .filter_map(|(driver, count)| count.map(|c| (driver.as_str(), c)))
            .collect();
        if limits.is_empty() {
            return Status::success();
        }
        let mut attached = FxHashMap::default();
        for p in &node.usage.pod_infos {
            let _ = attachable_volumes(storage, p, csi_node, false, &mut attached);
        }
        let mut attached_count: FxHashMap<&str, i64> = FxHashMap::default();
        for driver in attached.values() {
            *attached_count.entry(driver).or_default() += 1;
        }
        // A volume the node already has attached costs nothing more.
        let mut new_count: FxHashMap<&str, i64> = FxHashMap::default();
        for (unique, driver) in &new {
            if !attached.contains_key(unique) {
                *new_count.entry(driver).or_default() += 1;
            }
        }
        for (driver, count) in new_count {
            if let Some(limit) = limits.get(driver)
                && attached_count.get(driver).copied().unwrap_or(0) + count > *limit
            {
                return Status::unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED);
            }
        }
        Status::success()
    }

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        vec![
            ClusterEvent {
                resource: Resource::CsiNode,
                action: Action::ADD,
            },
            ClusterEvent {
                resource: Resource::AssignedPod,
                action: Action::DELETE,
            },
            ClusterEvent {
                resource: Resource::PersistentVolumeClaim,
                action: Action::ADD,
            },
        ]
    }

    /// A new CSINode; a pod with volumes leaving a node; the claim the pod
    /// names appearing.
    fn queueing_hint(&self, pod: &PodInfo, change: &Change<'_>) -> QueueingHint {
        let queue = match change {
            Change::StorageChanged {
                kind: StorageKind::CsiNode,
                ..
            } => true,
            Change::AssignedPodDeleted(gone) => !gone.volumes.claims.is_empty() || !gone.volumes.attachable.is_empty(),
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
    use serde_json::{Value, json};

    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::framework::Code;
    use crate::plugins::testutil::{cluster, spec_pod};

    fn claim(name: &str, volume: Option<&str>, class: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": name, "namespace": "default"},
               "spec": {"volumeName": volume, "storageClassName": class}})
    }

    fn csi_volume(name: &str, driver: &str, handle: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
               "spec": {"csi": {"driver": driver, "volumeHandle": handle}}})
    }

    fn claims_pod(name: &str, node: &str, claims: &[&str]) -> k8s_openapi::api::core::v1::Pod {
        let volumes: Vec<Value> = claims
            .iter()
            .enumerate()
            .map(|(i, c)| json!({"name": format!("v{i}"), "persistentVolumeClaim": {"claimName": c}}))
            .collect();
        spec_pod(name, "default", json!({}), node, json!({"volumes": volumes}))
    }

    fn csi_node(limits: &[(&str, i32)], migrated: &str) -> Value {
        let drivers: Vec<Value> = limits
            .iter()
            .map(|(d, n)| json!({"name": d, "nodeID": "a", "allocatable": {"count": n}}))
            .collect();
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
               "metadata": {"name": "a", "annotations": {crate::storage::ANN_MIGRATED_PLUGINS: migrated}},
               "spec": {"drivers": drivers}})
    }

    fn run(
        objects: &[Value],
        on_node: &[k8s_openapi::api::core::v1::Pod],
        pod: &k8s_openapi::api::core::v1::Pod,
    ) -> (Code, String) {
        let mut snap = cluster(&[("a", json!({}), json!({}))], on_node, &[]);
        let mut storage = Storage::default();
        for o in objects {
            storage.upsert(o).unwrap();
        }
        snap.storage = Arc::new(storage);
        let pod = PodInfo::from_pod(pod).unwrap();
        let mut st = CycleState::default();
        let pre = NodeVolumeLimits.pre_filter(&mut st, &pod, &snap);
        if !pre.is_success() {
            return (pre.code(), pre.message());
        }
        let f = NodeVolumeLimits.filter(&st, &pod, &snap.nodes[0]);
        (f.code(), f.message())
    }

    /// (name, pods on the node, pod, outcome).
    type Case<'a> = (&'a str, &'a [Pod], Pod, (Code, String));

    #[test]
    fn counts_unique_volumes_against_the_csinode_limit() {
        let mut objects = vec![
            csi_node(&[("ebs.csi.aws.com", 2)], "kubernetes.io/aws-ebs"),
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "gp3"},
                   "provisioner": "ebs.csi.aws.com", "volumeBindingMode": "WaitForFirstConsumer"}),
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "nfs"},
                   "provisioner": "nfs.example.com"}),
        ];
        for i in 1..=3 {
            objects.push(csi_volume(&format!("pv{i}"), "ebs.csi.aws.com", &format!("vol-{i}")));
            objects.push(claim(&format!("c{i}"), Some(&format!("pv{i}")), "gp3"));
        }
        // Two claims naming the same volume handle: one attachment.
        objects.push(csi_volume("pv1-again", "ebs.csi.aws.com", "vol-1"));
        objects.push(claim("c1-again", Some("pv1-again"), "gp3"));
        objects.push(claim("unbound", None, "gp3"));
        objects.push(claim("other-driver", None, "nfs"));
        let exceeded = (Code::Unschedulable, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED.to_owned());
        let fits = (Code::Success, String::new());
        let two = [claims_pod("u", "a", &["c1", "c2"])];
        let cases: Vec<Case<'_>> = vec![
            (
                "room for one more",
                &[],
                claims_pod("p", "", &["c1", "c2"]),
                fits.clone(),
            ),
            (
                "a third volume exceeds",
                &two,
                claims_pod("p", "", &["c3"]),
                exceeded.clone(),
            ),
            (
                "a volume already attached counts once",
                &two,
                claims_pod("p", "", &["c1"]),
                fits.clone(),
            ),
            (
                "another claim on an attached handle counts once",
                &two,
                claims_pod("p", "", &["c1-again"]),
                fits.clone(),
            ),
            (
                "an unbound claim counts against its class's driver",
                &two,
                claims_pod("p", "", &["unbound"]),
                exceeded.clone(),
            ),
            (
                "another driver has no limit",
                &two,
                claims_pod("p", "", &["other-driver"]),
                fits.clone(),
            ),
            (
                "a migrated inline EBS volume counts",
                &two,
                spec_pod(
                    "p",
                    "default",
                    json!({}),
                    "",
                    json!({"volumes": [{"name": "d", "awsElasticBlockStore": {"volumeID": "vol-9"}}]}),
                ),
                exceeded.clone(),
            ),
            (
                "an inline CSI volume does not count",
                &two,
                spec_pod(
                    "p",
                    "default",
                    json!({}),
                    "",
                    json!({"volumes": [{"name": "d", "csi": {"driver": "ebs.csi.aws.com"}}]}),
                ),
                (Code::Skip, String::new()),
            ),
            (
                "a missing claim",
                &[],
                claims_pod("p", "", &["nope"]),
                (
                    Code::UnschedulableAndUnresolvable,
                    "looking up PVC default/nope: persistentvolumeclaim \"nope\" not found".to_owned(),
                ),
            ),
        ];
        for (name, on_node, pod, want) in cases {
            assert_eq!(run(&objects, on_node, &pod), want, "{name}");
        }
        // Without the migration annotation the in-tree volume is not counted.
        objects[0] = csi_node(&[("ebs.csi.aws.com", 2)], "");
        let inline = spec_pod(
            "p",
            "default",
            json!({}),
            "",
            json!({"volumes": [{"name": "d", "awsElasticBlockStore": {"volumeID": "vol-9"}}]}),
        );
        assert_eq!(run(&objects, &two, &inline), fits);
    }
}
