//! VolumeBinding: a pod's PersistentVolumeClaims decide where it can run.
//!
//! A bound claim's volume must admit the node (its node affinity). A claim
//! of a `WaitForFirstConsumer` StorageClass that is not bound yet is bound
//! here: to the smallest available volume that fits it and admits the node
//! (static binding), or else provisioned on the node if the class has a
//! provisioner whose `allowedTopologies` admit it (dynamic). An unbound
//! claim of an `Immediate` class makes the pod wait for the PersistentVolume
//! controller. At Reserve the plugin leaves the chosen bindings in a
//! [`VolumePlan`] that the scheduler assumes and the daemon writes to the
//! API before binding the pod (kube-scheduler's PreBind).

use std::sync::Arc;

use serde::Deserialize;

use crate::cache::Snapshot;
use crate::events::{Action, Change, ClusterEvent, QueueingHint, Resource};
use crate::framework::{Code, CycleState, Plugin, Points, Reason, Status};
use crate::node::{NodeData, NodeInfo};
use crate::pod::PodInfo;
use crate::storage::{Claim, NO_PROVISIONER, Storage, StorageKind, VOLUME_PLAN, Volume, VolumePlan, claim_not_found};

/// A bound claim's volume does not admit the node.
pub const ERR_REASON_NODE_CONFLICT: &str = "node(s) didn't match PersistentVolume's node affinity";
/// No volume to bind and no way to provision one on the node.
pub const ERR_REASON_BIND_CONFLICT: &str = "node(s) didn't find available persistent volumes to bind";
/// A bound claim's volume does not exist.
pub const ERR_REASON_PV_NOT_EXIST: &str = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";
/// An `Immediate` claim the PersistentVolume controller has not bound yet.
pub const ERR_UNBOUND_IMMEDIATE_PVC: &str = "pod has unbound immediate PersistentVolumeClaims";

/// `VolumeBindingArgs`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VolumeBindingArgs {
    /// How long PreBind waits for the claims to be bound (default 600).
    #[serde(default = "default_bind_timeout")]
    pub bind_timeout_seconds: i64,
    /// Capacity scoring (`StorageCapacityScoring`), which kube-scheduler
    /// leaves off by default; refused when given.
    #[serde(default)]
    pub shape: Option<serde_json::Value>,
    /// Accepted for compatibility with kube-scheduler configs.
    #[serde(default)]
    pub api_version: Option<String>,
    /// Accepted for compatibility with kube-scheduler configs.
    #[serde(default)]
    pub kind: Option<String>,
}

/// The longest `bindTimeoutSeconds`: the largest Go `time.Duration` in seconds.
pub const MAX_BIND_TIMEOUT_SECONDS: i64 = i64::MAX / 1_000_000_000;

fn default_bind_timeout() -> i64 {
    600
}

impl Default for VolumeBindingArgs {
    fn default() -> Self {
        VolumeBindingArgs {
            bind_timeout_seconds: default_bind_timeout(),
            shape: None,
            api_version: None,
            kind: None,
        }
    }
}

/// The VolumeBinding plugin.
#[derive(Debug)]
pub struct VolumeBinding {
    bind_timeout_seconds: u64,
}

impl VolumeBinding {
    /// Validates the args.
    pub fn new(args: VolumeBindingArgs) -> Result<Self, String> {
        if args.bind_timeout_seconds < 0 {
            return Err("bindTimeoutSeconds: invalid BindTimeoutSeconds, should not be a negative value".into());
        }
        if args.bind_timeout_seconds > MAX_BIND_TIMEOUT_SECONDS {
            // kube-scheduler multiplies it into a Go Duration, which ends
            // here (292 years); past it the wait would wrap around there,
            // and overflow a deadline here.
            return Err(format!(
                "bindTimeoutSeconds: {} is longer than a wait can be ({MAX_BIND_TIMEOUT_SECONDS} seconds, 292 years)",
                args.bind_timeout_seconds
            ));
        }
        if args.shape.is_some() {
            return Err("shape: capacity scoring (kube-scheduler's StorageCapacityScoring) is not supported".into());
        }
        Ok(VolumeBinding {
            bind_timeout_seconds: args.bind_timeout_seconds as u64,
        })
    }
}

/// The pod's claims, sorted by PreFilter.
struct PreFilterState {
    storage: Arc<Storage>,
    /// Claims bound by the PersistentVolume controller.
    bound: Vec<Arc<Claim>>,
    /// `WaitForFirstConsumer` claims to bind, smallest request first, each
    /// with the volumes that may take it (of its class, or pre-bound to
    /// it), chosen once for every node.
    to_bind: Vec<(Arc<Claim>, Vec<Arc<Volume>>)>,
}

/// Why a node does not do, in kube-scheduler's order.
#[derive(Default)]
struct Conflicts {
    node: bool,
    bind: bool,
    pv_missing: bool,
}

impl Conflicts {
    fn status(&self) -> Option<Status> {
        let reasons: Vec<Reason> = [
            (self.node, ERR_REASON_NODE_CONFLICT),
            (self.bind, ERR_REASON_BIND_CONFLICT),
            (self.pv_missing, ERR_REASON_PV_NOT_EXIST),
        ]
        .into_iter()
        .filter(|(on, _)| *on)
        .map(|(_, r)| Reason::from(r))
        .collect();
        (!reasons.is_empty()).then(|| Status::new(Code::UnschedulableAndUnresolvable, reasons))
    }
}

/// kube-scheduler's `FindMatchingVolume` for a node: the volume pre-bound
/// to the claim if it admits the node, else the smallest available volume
/// of the claim's class that is large enough, matches its mode, selector
/// and access modes and admits the node; among `candidates`, not one of
/// `taken`.
fn matching_volume<'a>(
    storage: &Storage,
    claim: &Claim,
    candidates: &'a [Arc<Volume>],
    node: &NodeData,
    taken: &[&str],
) -> Option<&'a Arc<Volume>> {
    let mut smallest: Option<&Arc<Volume>> = None;
    for pv in candidates {
        if taken.contains(&pv.name.as_str()) {
            continue;
        }
        let pre_bound = pre_bound_to(pv, claim);
        if storage.is_claimed(pv) && !pre_bound {
            continue;
        }
        if pv.capacity < claim.request || pv.volume_mode != claim.volume_mode || pv.deleting {
            continue;
        }
        let admits = pv.admits(&node.labels, &node.name);
        if pre_bound {
            return admits.then_some(pv);
        }
        if pv.phase != "Available"
            || claim.selector.as_ref().is_some_and(|s| !s.matches(&pv.labels))
            || pv.class != claim.class
            || !admits
            || !claim.access_modes.iter().all(|m| pv.access_modes.contains(m))
        {
            continue;
        }
        if smallest.is_none_or(|s| s.capacity > pv.capacity) {
            smallest = Some(pv);
        }
    }
    smallest
}

/// Whether the volume's `claimRef` names the claim (its UID, when set).
fn pre_bound_to(pv: &Volume, claim: &Claim) -> bool {
    pv.claim_ref.as_ref().is_some_and(|r| {
        r.namespace == claim.namespace && r.name == claim.name && (r.uid.is_empty() || r.uid == claim.uid)
    })
}

impl VolumeBinding {
    /// kube-scheduler's `FindPodVolumes`: the plan for `node`, why the node
    /// does not do, or an error (a claim without a usable class).
    fn find(&self, st: &PreFilterState, node: &NodeData) -> Result<Result<VolumePlan, Status>, Status> {
        let storage = &*st.storage;
        let mut conflicts = Conflicts::default();
        for claim in &st.bound {
            match claim.volume_name.as_deref().and_then(|v| storage.volume(v)) {
                None => {
                    conflicts.pv_missing = true;
                    break;
                }
                Some(pv) if !pv.admits(&node.labels, &node.name) => {
                    conflicts.node = true;
                    break;
                }
                Some(_) => {}
            }
        }
        let mut plan = VolumePlan {
            node: node.name.clone(),
            bind_timeout_seconds: self.bind_timeout_seconds,
            ..Default::default()
        };
        'unbound: {
            let mut to_provision: Vec<&Claim> = Vec::new();
            let mut to_match: Vec<(&Claim, &[Arc<Volume>])> = Vec::new();
            for (claim, candidates) in &st.to_bind {
                match storage.selected_node_of(claim) {
                    Some(n) if n != node.name => {
                        conflicts.bind = true;
                        break 'unbound;
                    }
                    Some(_) => to_provision.push(claim),
                    None => to_match.push((claim, candidates)),
                }
            }
            let mut taken: Vec<&str> = Vec::new();
            for (claim, candidates) in to_match {
                match matching_volume(storage, claim, candidates, node, &taken) {
                    Some(pv) => {
                        taken.push(&pv.name);
                        plan.bindings.push((claim.key(), pv.name.clone()));
                    }
                    None => to_provision.push(claim),
                }
            }
            for claim in to_provision {
                if claim.class.is_empty() {
                    return Err(Status::error(format!("no class for claim {:?}", claim.key())));
                }
                let Some(class) = storage.class(&claim.class) else {
                    return Err(Status::error(format!("failed to find storage class {:?}", claim.class)));
                };
                if class.provisioner.is_empty()
                    || class.provisioner == NO_PROVISIONER
                    || !class.allows(&node.labels, &node.name)
                {
                    conflicts.bind = true;
                    break 'unbound;
                }
                plan.provisions.push(claim.key());
            }
        }
        Ok(match conflicts.status() {
            Some(st) => Err(st),
            None => Ok(plan),
        })
    }
}

impl Plugin for VolumeBinding {
    fn name(&self) -> &str {
        super::names::VOLUME_BINDING
    }

    fn points(&self) -> Points {
        Points::PRE_FILTER | Points::FILTER | Points::RESERVE
    }

    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, snapshot: &Snapshot) -> Status {
        if pod.volumes.claims.is_empty() {
            return Status::skip();
        }
        let storage = &snapshot.storage;
        let mut st = PreFilterState {
            storage: storage.clone(),
            bound: Vec::new(),
            to_bind: Vec::new(),
        };
        let mut claims = Vec::new();
        for c in &pod.volumes.claims {
            let Some(claim) = storage.pod_claim(pod, c) else {
                return Status::unresolvable(if c.ephemeral {
                    format!(
                        "waiting for ephemeral volume controller to create the persistentvolumeclaim \"{}\"",
                        c.claim
                    )
                } else {
                    claim_not_found(&c.claim)
                });
            };
            if claim.phase == "Lost" {
                return Status::unresolvable(format!(
                    "persistentvolumeclaim \"{}\" bound to non-existent persistentvolume \"{}\"",
                    claim.name,
                    claim.volume_name.as_deref().unwrap_or_default()
                ));
            }
            if claim.deleting {
                return Status::unresolvable(format!("persistentvolumeclaim \"{}\" is being deleted", claim.name));
            }
            if c.ephemeral
                && let Err(e) = claim.check_for_pod(pod)
            {
                return Status::unresolvable(e);
            }
            claims.push(claim.clone());
        }
        let mut immediate = false;
        for claim in claims {
            if claim.fully_bound() {
                st.bound.push(claim);
                continue;
            }
            let delayed = if claim.class.is_empty() {
                false
            } else {
                match storage.class(&claim.class) {
                    Some(class) => class.wait_for_first_consumer,
                    None => {
                        return Status::error(format!("storageclass.storage.k8s.io \"{}\" not found", claim.class));
                    }
                }
            };
            if delayed && claim.volume_name.is_none() {
                let candidates = storage
                    .volumes()
                    .filter(|pv| pv.class == claim.class || pre_bound_to(pv, &claim))
                    .cloned()
                    .collect();
                st.to_bind.push((claim, candidates));
            } else {
                immediate = true;
            }
        }
        if immediate {
            return Status::unresolvable(ERR_UNBOUND_IMMEDIATE_PVC);
        }
        st.to_bind.sort_by_key(|(c, _)| c.request);
        state.write(self.name(), st);
        Status::success()
    }

    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(st) = state.read::<PreFilterState>(self.name()) else {
            return Status::success();
        };
        match self.find(st, &node.node) {
            Ok(Ok(_)) => Status::success(),
            Ok(Err(st)) | Err(st) => st,
        }
    }

    /// Leaves the plan for the chosen node under [`VOLUME_PLAN`].
    fn reserve(&self, state: &mut CycleState, _pod: &PodInfo, node: &str) -> Status {
        let Some(st) = state.read::<PreFilterState>(self.name()) else {
            return Status::success();
        };
        if st.to_bind.is_empty() {
            return Status::success();
        }
        let Some(info) = state
            .snapshot()
            .and_then(|s| s.position(node).map(|i| s.nodes[i].node.clone()))
        else {
            return Status::error(format!("no pod volumes found for node {node:?}"));
        };
        match self.find(st, &info) {
            Ok(Ok(plan)) => {
                state.write(VOLUME_PLAN, plan);
                Status::success()
            }
            Ok(Err(st)) | Err(st) => Status::error(st.message()),
        }
    }

    fn unreserve(&self, state: &mut CycleState, _pod: &PodInfo, _node: &str) {
        state.write(VOLUME_PLAN, VolumePlan::default());
    }

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        let add_update = Action::ADD.union(Action::UPDATE);
        vec![
            ClusterEvent {
                resource: Resource::StorageClass,
                action: add_update,
            },
            ClusterEvent {
                resource: Resource::PersistentVolumeClaim,
                action: add_update,
            },
            ClusterEvent {
                resource: Resource::PersistentVolume,
                action: add_update,
            },
            ClusterEvent {
                resource: Resource::Node,
                action: Action::ADD
                    .union(Action::UPDATE_NODE_LABEL)
                    .union(Action::UPDATE_NODE_TAINT),
            },
            ClusterEvent {
                resource: Resource::CsiNode,
                action: add_update,
            },
        ]
    }

    /// A volume changing matters to pods with claims; everything else it
    /// registered for may help.
    fn queueing_hint(&self, pod: &PodInfo, change: &Change<'_>) -> QueueingHint {
        match change {
            Change::StorageChanged {
                kind: StorageKind::Volume,
                ..
            } if pod.volumes.claims.is_empty() => QueueingHint::Skip,
            _ => QueueingHint::Queue,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::plugins::testutil::{cluster, spec_pod};

    fn class(name: &str, provisioner: &str, wffc: bool, zones: &[&str]) -> Value {
        let mut c = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
                           "provisioner": provisioner,
                           "volumeBindingMode": if wffc { "WaitForFirstConsumer" } else { "Immediate" }});
        if !zones.is_empty() {
            c["allowedTopologies"] =
                json!([{"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": zones}]}]);
        }
        c
    }

    fn claim(name: &str, class: &str, size: &str, volume: Option<&str>, bound: bool) -> Value {
        let mut c = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
               "spec": {"storageClassName": class, "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": size}}}});
        if let Some(v) = volume {
            c["spec"]["volumeName"] = json!(v);
        }
        if bound {
            c["metadata"]["annotations"] = json!({crate::storage::ANN_BIND_COMPLETED: "yes"});
        }
        c
    }

    fn volume(name: &str, class: &str, size: &str, hosts: &[&str]) -> Value {
        let mut v = json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
               "spec": {"storageClassName": class, "capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                        "local": {"path": "/mnt"}},
               "status": {"phase": "Available"}});
        if !hosts.is_empty() {
            v["spec"]["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": hosts}]}]}});
        }
        v
    }

    fn claims_pod(claims: &[&str]) -> PodInfo {
        let volumes: Vec<Value> = claims
            .iter()
            .enumerate()
            .map(|(i, c)| json!({"name": format!("v{i}"), "persistentVolumeClaim": {"claimName": c}}))
            .collect();
        PodInfo::from_pod(&spec_pod("p", "default", json!({}), "", json!({"volumes": volumes}))).unwrap()
    }

    fn snapshot(objects: &[Value]) -> Arc<Snapshot> {
        let node = |name: &'static str, zone: &str| {
            (
                name,
                json!({"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}),
                json!({}),
            )
        };
        let nodes = [node("a", "z1"), node("b", "z1"), node("c", "z2")];
        let mut snap = cluster(&nodes, &[], &[]);
        let mut storage = Storage::default();
        for o in objects {
            storage.upsert(o).unwrap();
        }
        snap.storage = Arc::new(storage);
        Arc::new(snap)
    }

    /// PreFilter's outcome, else Filter's per node (`a`, `b`, `c`).
    fn run(objects: &[Value], pod: &PodInfo) -> Result<Vec<String>, (Code, String)> {
        let snap = snapshot(objects);
        let vb = VolumeBinding::new(VolumeBindingArgs::default()).unwrap();
        let mut st = CycleState::default();
        let pre = vb.pre_filter(&mut st, pod, &snap);
        if !pre.is_success() {
            return Err((pre.code(), pre.message()));
        }
        Ok(["a", "b", "c"]
            .iter()
            .map(|name| {
                let f = vb.filter(&st, pod, &snap.nodes[snap.position(name).unwrap()]);
                if f.is_success() { "ok".to_owned() } else { f.message() }
            })
            .collect())
    }

    #[test]
    fn prefilter_rejections() {
        let objects = [
            class("fast", "csi.example.com", false, &[]),
            class("local", NO_PROVISIONER, true, &[]),
            claim("immediate", "fast", "1Gi", None, false),
            claim("prebound", "local", "1Gi", Some("pv"), false),
        ];
        let cases = [
            (vec![], Err((Code::Skip, String::new()))),
            (
                vec!["data"],
                Err((
                    Code::UnschedulableAndUnresolvable,
                    "persistentvolumeclaim \"data\" not found".into(),
                )),
            ),
            (
                vec!["immediate"],
                Err((Code::UnschedulableAndUnresolvable, ERR_UNBOUND_IMMEDIATE_PVC.into())),
            ),
            // A claim naming its volume is the controller's to bind.
            (
                vec!["prebound"],
                Err((Code::UnschedulableAndUnresolvable, ERR_UNBOUND_IMMEDIATE_PVC.into())),
            ),
        ];
        for (claims, want) in cases {
            assert_eq!(run(&objects, &claims_pod(&claims)), want, "{claims:?}");
        }
        let ghost = [claim("c", "ghost", "1Gi", None, false)];
        assert_eq!(
            run(&ghost, &claims_pod(&["c"])),
            Err((Code::Error, "storageclass.storage.k8s.io \"ghost\" not found".into()))
        );
    }

    #[test]
    fn filter_bound_static_and_dynamic() {
        let ok = || "ok".to_owned();
        let node_conflict = || ERR_REASON_NODE_CONFLICT.to_owned();
        let bind_conflict = || ERR_REASON_BIND_CONFLICT.to_owned();
        let objects = [
            class("local", NO_PROVISIONER, true, &[]),
            class("zonal", "csi.example.com", true, &["z1"]),
            // Bound to a volume on node b.
            claim("bound", "local", "1Gi", Some("pv-b"), true),
            volume("pv-b", "local", "1Gi", &["b"]),
            claim("gone", "local", "1Gi", Some("nowhere"), true),
            // Static: volumes on a (too small) and c.
            claim("static", "local", "5Gi", None, false),
            volume("pv-a-small", "local", "1Gi", &["a"]),
            volume("pv-c", "local", "10Gi", &["c"]),
            // Dynamic, allowed in zone z1 only.
            claim("dynamic", "zonal", "1Gi", None, false),
        ];
        let cases: Vec<(Vec<&str>, Vec<String>)> = vec![
            (vec!["bound"], vec![node_conflict(), ok(), node_conflict()]),
            (vec!["gone"], vec![ERR_REASON_PV_NOT_EXIST.to_owned(); 3]),
            (vec!["static"], vec![bind_conflict(), bind_conflict(), ok()]),
            (vec!["dynamic"], vec![ok(), ok(), bind_conflict()]),
            // Both reasons at once on c.
            (
                vec!["bound", "dynamic"],
                vec![
                    node_conflict(),
                    ok(),
                    format!("{}, {}", node_conflict(), bind_conflict()),
                ],
            ),
        ];
        for (claims, want) in cases {
            assert_eq!(run(&objects, &claims_pod(&claims)), Ok(want), "{claims:?}");
        }
    }

    #[test]
    fn reserve_plans_the_smallest_volume_and_provisioning() {
        let objects = [
            class("local", NO_PROVISIONER, true, &[]),
            class("zonal", "csi.example.com", true, &["z1"]),
            claim("small", "local", "1Gi", None, false),
            claim("big", "local", "3Gi", None, false),
            claim("dynamic", "zonal", "1Gi", None, false),
            volume("pv-2", "local", "2Gi", &["a"]),
            volume("pv-4", "local", "4Gi", &["a"]),
            volume("pv-9", "local", "9Gi", &[]),
        ];
        let snap = snapshot(&objects);
        let vb = VolumeBinding::new(VolumeBindingArgs::default()).unwrap();
        let pod = claims_pod(&["big", "small", "dynamic"]);
        let mut st = CycleState::default();
        st.set_snapshot(snap.clone());
        assert!(vb.pre_filter(&mut st, &pod, &snap).is_success());
        assert!(vb.reserve(&mut st, &pod, "a").is_success());
        let plan = st.read::<VolumePlan>(VOLUME_PLAN).unwrap();
        // The smallest claim picks first; each takes the smallest that fits.
        assert_eq!(
            plan.bindings,
            vec![
                ("default/small".to_owned(), "pv-2".to_owned()),
                ("default/big".to_owned(), "pv-4".to_owned())
            ]
        );
        assert_eq!(plan.provisions, vec!["default/dynamic".to_owned()]);
        assert_eq!((plan.node.as_str(), plan.bind_timeout_seconds), ("a", 600));

        // Once assumed, the volumes are taken for the next pod.
        let mut storage = (*snap.storage).clone();
        storage.assume("default/p", plan.clone());
        let mut snap2 = (*snap).clone();
        snap2.storage = Arc::new(storage);
        let other = [claim("small2", "local", "1Gi", None, false)];
        let mut snap2_storage = (*snap2.storage).clone();
        snap2_storage.upsert(&other[0]).unwrap();
        snap2.storage = Arc::new(snap2_storage);
        let mut st = CycleState::default();
        let pod2 = claims_pod(&["small2"]);
        assert!(vb.pre_filter(&mut st, &pod2, &snap2).is_success());
        let at = |name: &str| &snap2.nodes[snap2.position(name).unwrap()];
        let on_a = vb.filter(&st, &pod2, at("a"));
        assert!(on_a.is_success(), "pv-9 admits every node");
        let mut st = CycleState::default();
        st.set_snapshot(Arc::new(snap2.clone()));
        assert!(vb.pre_filter(&mut st, &pod2, &snap2).is_success());
        assert!(vb.reserve(&mut st, &pod2, "a").is_success());
        assert_eq!(
            st.read::<VolumePlan>(VOLUME_PLAN).unwrap().bindings,
            vec![("default/small2".to_owned(), "pv-9".to_owned())]
        );
        // A claim being provisioned elsewhere keeps to its node.
        let pod3 = claims_pod(&["dynamic"]);
        let mut st = CycleState::default();
        assert!(vb.pre_filter(&mut st, &pod3, &snap2).is_success());
        assert!(vb.filter(&st, &pod3, at("a")).is_success());
        assert_eq!(vb.filter(&st, &pod3, at("b")).message(), ERR_REASON_BIND_CONFLICT);
    }

    #[test]
    fn args() {
        assert!(VolumeBinding::new(serde_json::from_value(json!({"bindTimeoutSeconds": -1})).unwrap()).is_err());
        assert!(VolumeBinding::new(serde_json::from_value(json!({"shape": []})).unwrap()).is_err());
        // A wait longer than any deadline is refused, naming the field.
        let e =
            VolumeBinding::new(serde_json::from_value(json!({"bindTimeoutSeconds": i64::MAX})).unwrap()).unwrap_err();
        assert!(e.starts_with("bindTimeoutSeconds: "), "{e}");
        assert!(
            VolumeBinding::new(
                serde_json::from_value(json!({"bindTimeoutSeconds": MAX_BIND_TIMEOUT_SECONDS})).unwrap()
            )
            .is_ok()
        );
        assert_eq!(
            VolumeBinding::new(serde_json::from_value(json!({"bindTimeoutSeconds": 30})).unwrap())
                .unwrap()
                .bind_timeout_seconds,
            30
        );
    }
}
