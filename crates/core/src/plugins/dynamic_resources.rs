//! DynamicResources: devices for pods through ResourceClaims, as
//! kube-scheduler v1.36's plugin does it with structured parameters.
//!
//! A pod waits before the queue (PreEnqueue) until each of its claims
//! exists. PreFilter gathers the claims: one allocated already pins the pod
//! to its allocation's nodes; the others are allocated per node at Filter
//! by the [`crate::dra::allocator`], over the slices and the devices no
//! other claim (or assumed plan) holds. Score prefers the nodes where a
//! `firstAvailable` request got an earlier choice. Reserve leaves a
//! [`DraPlan`] (the allocations chosen, the reservations to add) that the
//! scheduler assumes, so the next cycle does not give the same devices to
//! another claim, and that the daemon writes to the claims' status before
//! binding the pod (PreBind).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::resource::v1::{AllocationResult, ResourceClaim};
use rustc_hash::FxHashMap;
use serde::Deserialize;

use crate::cache::Snapshot;
use crate::dra::allocator::{AllocError, Allocator, Features};
use crate::dra::cel::CelCache;
use crate::dra::devices::{allocation, claim_key, reserved_for};
use crate::dra::{DRA_PLAN, Devices, DraPlan, PlannedClaim};
use crate::events::{Action, Change, ClusterEvent, QueueingHint, Resource};
use crate::framework::{CycleState, Plugin, Points, Status};
use crate::node::NodeInfo;
use crate::pod::{ClaimName, PodInfo};
use crate::selector::Term;
use crate::storage::StorageKind;

/// The plugin's name.
pub const NAME: &str = "DynamicResources";

/// A node where the allocator found no devices for the pod's claims.
pub const ERR_CANNOT_ALLOCATE: &str = "cannot allocate all claims";
/// A claim allocated already, for nodes that do not include this one.
pub const ERR_NOT_AVAILABLE: &str = "resourceclaim not available on the node";

/// The cycle state key PreFilter writes before anything else.
const PRE_FILTER_RAN: &str = "DynamicResources/ran";

/// `FirstAvailableDeviceRequestMaxSize`: the longest `firstAvailable`
/// list, and what the first choice of one scores.
const FIRST_AVAILABLE_MAX: i64 = 8;

/// Compiled CEL selectors kept (by expression text).
const CEL_CACHE_ENTRIES: usize = 1024;

/// `DynamicResourcesArgs`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DynamicResourcesArgs {
    /// How long Filter may search one node for devices (default 10s;
    /// `0s` means no limit).
    #[serde(default)]
    pub filter_timeout: Option<String>,
    /// How long PreBind waits for devices' binding conditions; devices
    /// with binding conditions are not allocated by wasmsched, so only a
    /// valid duration is accepted.
    #[serde(default)]
    pub binding_timeout: Option<String>,
    /// Accepted for compatibility with kube-scheduler configs.
    #[serde(default)]
    pub api_version: Option<String>,
    /// Accepted for compatibility with kube-scheduler configs.
    #[serde(default)]
    pub kind: Option<String>,
}

/// The DynamicResources plugin.
pub struct DynamicResources {
    filter_timeout: Option<Duration>,
    cel: Arc<CelCache>,
}

impl std::fmt::Debug for DynamicResources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamicResources")
            .field("filter_timeout", &self.filter_timeout)
            .finish()
    }
}

impl Default for DynamicResources {
    fn default() -> Self {
        Self::new(DynamicResourcesArgs::default()).expect("the defaults are valid")
    }
}

fn duration(field: &str, text: &str) -> Result<Duration, String> {
    let ns = go_parse_duration::parse_duration(text).map_err(|e| format!("{field}: {text:?}: {e:?}"))?;
    if ns < 0 {
        return Err(format!("{field}: must not be negative"));
    }
    Ok(Duration::from_nanos(ns as u64))
}

impl DynamicResources {
    /// Validates the args.
    pub fn new(args: DynamicResourcesArgs) -> Result<Self, String> {
        let filter_timeout = match args.filter_timeout.as_deref() {
            None => Some(Duration::from_secs(10)),
            Some(t) => Some(duration("filterTimeout", t)?).filter(|d| !d.is_zero()),
        };
        if let Some(t) = args.binding_timeout.as_deref() {
            let d = duration("bindingTimeout", t)?;
            if d.is_zero() {
                return Err("bindingTimeout: must be positive".into());
            }
        }
        Ok(Self {
            filter_timeout,
            cel: Arc::new(CelCache::new(CEL_CACHE_ENTRIES)),
        })
    }
}

/// Why a pod's claims keep it out of the queue (kube-scheduler's
/// PreEnqueue): a claim not created yet, missing, being deleted, or
/// generated for another pod. `None`: it may be queued.
pub fn pre_enqueue(pod: &PodInfo, devices: &Devices) -> Option<String> {
    pod_claims(pod, devices).err()
}

/// The pod's claims that name one, in its order
/// (`foreachPodResourceClaim`).
fn pod_claims(pod: &PodInfo, devices: &Devices) -> Result<Vec<Arc<ResourceClaim>>, String> {
    let mut claims = Vec::with_capacity(pod.resource_claims.len());
    for c in &pod.resource_claims {
        let (name, generated) = match &c.claim {
            ClaimName::Named(n) => (n, false),
            ClaimName::Generated(n) => (n, true),
            ClaimName::NotNeeded => continue,
            ClaimName::NotCreated => {
                return Err(format!(
                    "pod \"{}/{}\": ResourceClaim not created yet",
                    pod.namespace, pod.name
                ));
            }
            ClaimName::Unsupported => {
                return Err(format!(
                    "pod \"{}/{}\", spec.resourceClaim {:?}: none of the supported fields are set",
                    pod.namespace, pod.name, c.name
                ));
            }
        };
        let Some(claim) = devices.claim(&format!("{}/{name}", pod.namespace)) else {
            return Err(format!("resourceclaim.resource.k8s.io \"{name}\" not found"));
        };
        if claim.metadata.deletion_timestamp.is_some() {
            return Err(format!("resourceclaim {name:?} is being deleted"));
        }
        if generated {
            let owned = claim
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.controller == Some(true) && o.uid == pod.uid);
            if !owned {
                return Err(format!(
                    "ResourceClaim {}/{name} was not created for Pod {}/{} (Pod is not owner)",
                    pod.namespace, pod.namespace, pod.name
                ));
            }
        }
        claims.push(claim.clone());
    }
    Ok(claims)
}

/// What Filter allocated for the pod's unallocated claims on each node it
/// accepted, by node name (one result per claim, in the pod's order).
pub type NodeAllocations = Arc<Mutex<FxHashMap<String, Arc<Vec<AllocationResult>>>>>;

/// The cycle's allocations by node, for plugins that read what
/// DynamicResources chose (none when the pod has no claim to allocate).
pub fn allocations(state: &CycleState) -> Option<NodeAllocations> {
    state
        .read::<PreFilterState>(NAME)
        .filter(|st| st.allocator.is_some())
        .map(|st| st.allocations.clone())
}

/// What the cycle's allocator borrows: the cluster's DRA objects and the
/// compiled selectors.
struct AllocInputs {
    storage: Arc<crate::storage::Storage>,
    cel: Arc<CelCache>,
}

self_cell::self_cell!(
    /// The allocator of one cycle (built at PreFilter, as kube-scheduler
    /// builds it, and asked for each node at Filter), with what it borrows.
    struct CycleAllocator {
        owner: AllocInputs,
        #[not_covariant]
        dependent: Allocator,
    }
);

/// What PreFilter found, for Filter, Score and Reserve.
struct PreFilterState {
    /// `None` when every claim is allocated already.
    allocator: Option<CycleAllocator>,
    claims: Vec<Arc<ResourceClaim>>,
    /// For each claim allocated already with a node selector: the terms
    /// (ORed) its nodes must match.
    available_on: Vec<Option<Vec<Term>>>,
    /// Indices of the claims to allocate.
    to_allocate: Vec<usize>,
    /// What Filter allocated on each node it accepted.
    allocations: NodeAllocations,
    /// Indices of the claims allocated already for nodes Filter found
    /// them unavailable on: PostFilter may deallocate one.
    unavailable: Mutex<std::collections::BTreeSet<usize>>,
}

/// The features of kube-scheduler v1.36's allocator that this one has
/// (the stable path's; the others are refused by field).
fn features() -> Features {
    Features {
        admin_access: true,
        prioritized_list: true,
        partitionable_devices: true,
        device_taints: true,
        ..Features::default()
    }
}

impl crate::dra::allocator::ClassLister for Devices {
    fn get(&self, name: &str) -> Option<Arc<k8s_openapi::api::resource::v1::DeviceClass>> {
        self.class(name).cloned()
    }
}

impl Plugin for DynamicResources {
    fn name(&self) -> &str {
        NAME
    }

    fn points(&self) -> Points {
        Points::PRE_FILTER | Points::FILTER | Points::POST_FILTER | Points::PRE_SCORE | Points::SCORE | Points::RESERVE
    }

    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, snapshot: &Snapshot) -> Status {
        // What kube-scheduler's PreFilter writes first, whatever follows:
        // PostFilter tells by it whether PreFilter ran.
        state.write(PRE_FILTER_RAN, ());
        let storage = &snapshot.storage;
        let devices = storage.devices();
        if devices.has_extended_resources()
            && let Some(st) = refuse_extended_resources(pod, devices)
        {
            return st;
        }
        if pod.resource_claims.is_empty() {
            return Status::skip();
        }
        let claims = match pod_claims(pod, devices) {
            Ok(c) => c,
            Err(e) => return Status::unresolvable(e),
        };
        if claims.is_empty() {
            return Status::skip();
        }
        let mut available_on = Vec::with_capacity(claims.len());
        let mut to_allocate = Vec::new();
        for (i, claim) in claims.iter().enumerate() {
            let key = claim_key(claim);
            match allocation(claim) {
                Some(a) => {
                    let terms = match &a.node_selector {
                        Some(sel) => {
                            let parsed: Result<Vec<Term>, _> = sel
                                .node_selector_terms
                                .iter()
                                .enumerate()
                                .map(|(j, t)| {
                                    Term::parse(
                                        t,
                                        &format!("ResourceClaim {key}"),
                                        &format!("status.allocation.nodeSelector.nodeSelectorTerms[{j}]"),
                                    )
                                })
                                .collect();
                            match parsed {
                                Ok(t) => Some(t),
                                Err(e) => return Status::error(e.to_string()),
                            }
                        }
                        None => None,
                    };
                    available_on.push(terms);
                }
                None => {
                    available_on.push(None);
                    to_allocate.push(i);
                    if let Err(st) = check_classes(claim, devices) {
                        return st;
                    }
                }
            }
        }
        let allocator = if to_allocate.is_empty() {
            None
        } else {
            let inputs = AllocInputs {
                storage: storage.clone(),
                cel: self.cel.clone(),
            };
            let built = CycleAllocator::try_new(inputs, |i| {
                let d = i.storage.devices();
                Allocator::new(features(), d.allocated(), d, d.slices(), &i.cel)
            });
            match built {
                Ok(a) => Some(a),
                Err(e) => return Status::error(e.to_string()),
            }
        };
        state.write(
            NAME,
            PreFilterState {
                allocator,
                claims,
                available_on,
                to_allocate,
                allocations: NodeAllocations::default(),
                unavailable: Mutex::default(),
            },
        );
        Status::success()
    }

    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(st) = state.read::<PreFilterState>(NAME) else {
            return Status::success();
        };
        let data = &node.node;
        // Every claim not available here is remembered, as kube-scheduler's
        // Filter does, for PostFilter to deallocate.
        let unavailable: Vec<usize> = st
            .available_on
            .iter()
            .enumerate()
            .filter(|(_, terms)| {
                terms
                    .as_ref()
                    .is_some_and(|terms| !terms.iter().any(|t| t.matches(&data.labels, &data.name)))
            })
            .map(|(i, _)| i)
            .collect();
        if !unavailable.is_empty() {
            if let Ok(mut set) = st.unavailable.lock() {
                set.extend(unavailable);
            }
            return Status::unresolvable(ERR_NOT_AVAILABLE);
        }
        let Some(allocator) = &st.allocator else {
            return Status::success();
        };
        let claims: Vec<&ResourceClaim> = st.to_allocate.iter().map(|&i| &*st.claims[i]).collect();
        // DRASchedulerFilterTimeout: a bound on one node's search.
        let deadline = self.filter_timeout.map(|t| std::time::Instant::now() + t);
        let expired = || deadline.is_some_and(|d| std::time::Instant::now() >= d);
        let answer = allocator.with_dependent(|_, a| a.allocate(data, &claims, &expired));
        match answer {
            Ok(Some(results)) if results.len() == claims.len() => {
                if let Ok(mut m) = st.allocations.lock() {
                    m.insert(data.name.clone(), Arc::new(results));
                }
                Status::success()
            }
            Ok(_) => Status::unresolvable(ERR_CANNOT_ALLOCATE),
            // Potentially transient: an error retries the pod after
            // backoff rather than parking it until a cluster change.
            Err(AllocError::Aborted(_)) => {
                Status::error(format!("node {}: timed out trying to allocate devices", data.name))
            }
            Err(AllocError::FailedOnNode(e)) => Status::unresolvable(e),
            Err(AllocError::Invalid(e)) => {
                let _ = pod;
                Status::error(e)
            }
        }
    }

    /// kube-scheduler's PostFilter for a pod that fits nowhere, whose
    /// answer joins the failure message: `no new claims to deallocate` for
    /// a pod without claims to allocate; `deallocation of ResourceClaim
    /// completed` when one of its claims is allocated for nodes where the
    /// pod does not fit and reserved for no one else (the claim is in
    /// [`PostFilterResult::deallocate`](crate::framework::PostFilterResult),
    /// which the daemon writes, so that the next attempt may allocate it
    /// elsewhere); else `still not schedulable`. When an earlier PreFilter
    /// stopped the cycle before this plugin's, kube-scheduler's finds no
    /// state and fails with `not found` (which ends PostFilter: no
    /// preemption is tried), and so does this one.
    fn post_filter(
        &self,
        ctx: &mut crate::framework::PostFilterContext<'_>,
        pod: &PodInfo,
        diagnosis: &crate::framework::Diagnosis,
    ) -> crate::framework::PostFilterResult {
        use crate::framework::PostFilterResult;
        // kube-scheduler runs every PreFilter after one that answers
        // Unschedulable (only UnschedulableAndUnresolvable stops them);
        // this framework stops at either, so a resolvable rejection counts
        // as if this PreFilter had run and found nothing to allocate.
        let stopped_resolvable = diagnosis.pre_filter_msg.is_some()
            && diagnosis
                .node_statuses
                .first()
                .is_some_and(|(_, st)| st.code() == crate::framework::Code::Unschedulable);
        if ctx.state.read::<()>(PRE_FILTER_RAN).is_none() && !stopped_resolvable {
            return PostFilterResult::none(Status::error("not found"));
        }
        let Some(st) = ctx.state.read::<PreFilterState>(NAME) else {
            return PostFilterResult::none(Status::unschedulable("no new claims to deallocate"));
        };
        // kube-scheduler picks one at random (a map's order); the first
        // keeps a simulation reproducible.
        let unavailable = st.unavailable.lock().map(|s| s.clone()).unwrap_or_default();
        for i in unavailable {
            let claim = &st.claims[i];
            let reserved = claim
                .status
                .as_ref()
                .and_then(|s| s.reserved_for.as_deref())
                .unwrap_or_default();
            if reserved.is_empty() || reserved.len() == 1 && reserved[0].uid == pod.uid {
                let mut r = PostFilterResult::none(Status::unschedulable("deallocation of ResourceClaim completed"));
                r.deallocate = Some(claim.clone());
                return r;
            }
        }
        PostFilterResult::none(Status::unschedulable("still not schedulable"))
    }

    /// Score only where a claim has a `firstAvailable` request (every
    /// other node would score 0): a pod without one costs nothing per node.
    fn pre_score(
        &self,
        state: &mut CycleState,
        _pod: &PodInfo,
        _snapshot: &Snapshot,
        _nodes: &[&Arc<NodeInfo>],
    ) -> Status {
        let prioritized = state.read::<PreFilterState>(NAME).is_some_and(|st| {
            st.claims.iter().any(|c| {
                c.spec
                    .devices
                    .iter()
                    .flat_map(|d| d.requests.iter().flatten())
                    .any(|r| r.first_available.as_ref().is_some_and(|f| !f.is_empty()))
            })
        });
        if prioritized { Status::success() } else { Status::skip() }
    }

    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let Some(st) = state.read::<PreFilterState>(NAME) else {
            return Ok(0);
        };
        let allocations = st.allocations.lock().ok().and_then(|m| m.get(&node.node.name).cloned());
        let mut score = 0;
        let mut next = 0;
        for claim in &st.claims {
            let a = match allocation(claim) {
                Some(a) => a,
                None => match allocations.as_ref().and_then(|v| v.get(next)) {
                    Some(a) => {
                        next += 1;
                        a
                    }
                    None => return Ok(0),
                },
            };
            let chosen: Vec<&str> = a
                .devices
                .iter()
                .flat_map(|d| d.results.iter().flatten())
                .map(|r| r.request.as_str())
                .filter(|r| r.contains('/'))
                .collect();
            for req in claim.spec.devices.iter().flat_map(|d| d.requests.iter().flatten()) {
                if req.exactly.is_some() {
                    continue;
                }
                for (i, sub) in req.first_available.iter().flatten().enumerate() {
                    let reference = (req.name.as_str(), sub.name.as_str());
                    if chosen.iter().any(|c| c.split_once('/') == Some(reference)) {
                        score += FIRST_AVAILABLE_MAX - i as i64;
                    }
                }
            }
        }
        Ok(score)
    }

    fn normalize_scores(&self, _state: &CycleState, _pod: &PodInfo, scores: &mut [i64]) -> Status {
        crate::framework::default_normalize_score(scores, false);
        Status::success()
    }

    /// Leaves the plan for the chosen node under [`DRA_PLAN`]: the
    /// allocations Filter found there and a reservation on every claim
    /// not yet reserved for the pod.
    fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        let Some(st) = state.read::<PreFilterState>(NAME) else {
            return Status::success();
        };
        let found = st.allocations.lock().ok().and_then(|m| m.get(node).cloned());
        if !st.to_allocate.is_empty() && found.as_ref().is_none_or(|a| a.len() != st.to_allocate.len()) {
            return Status::error("claim allocation not found for node");
        }
        let mut plan = DraPlan {
            node: node.to_owned(),
            pod_name: pod.name.clone(),
            pod_uid: pod.uid.clone(),
            claims: Vec::new(),
        };
        let mut next = 0;
        for claim in &st.claims {
            let new = if allocation(claim).is_none() {
                let a = found.as_ref().map(|v| v[next].clone());
                next += 1;
                a
            } else {
                None
            };
            if new.is_none() && reserved_for(claim, &pod.uid) {
                continue;
            }
            plan.claims.push(PlannedClaim {
                namespace: claim.metadata.namespace.clone().unwrap_or_default(),
                name: claim.metadata.name.clone().unwrap_or_default(),
                uid: claim.metadata.uid.clone().unwrap_or_default(),
                allocation: new,
            });
        }
        state.write(DRA_PLAN, plan);
        Status::success()
    }

    fn unreserve(&self, state: &mut CycleState, _pod: &PodInfo, _node: &str) {
        state.write(DRA_PLAN, DraPlan::default());
    }

    fn events_to_register(&self) -> Vec<ClusterEvent> {
        let add_update = Action::ADD.union(Action::UPDATE);
        vec![
            ClusterEvent {
                resource: Resource::Node,
                action: Action::ADD
                    .union(Action::UPDATE_NODE_LABEL)
                    .union(Action::UPDATE_NODE_ALLOCATABLE),
            },
            ClusterEvent {
                resource: Resource::ResourceClaim,
                action: add_update,
            },
            ClusterEvent {
                resource: Resource::DeviceClass,
                action: add_update,
            },
            ClusterEvent {
                resource: Resource::ResourceSlice,
                action: add_update,
            },
        ]
    }

    /// A claim's change matters to pods with claims (a deallocation frees
    /// devices for any of them); slices, classes and nodes may help.
    fn queueing_hint(&self, pod: &PodInfo, change: &Change<'_>) -> QueueingHint {
        match change {
            Change::StorageChanged {
                kind: StorageKind::ResourceClaim,
                ..
            } if pod.resource_claims.is_empty() => QueueingHint::Skip,
            _ => QueueingHint::Queue,
        }
    }
}

/// Honour or refuse: an extended resource a DeviceClass provides through
/// DRA (`spec.extendedResourceName`, kube-scheduler's DRAExtendedResource)
/// is not allocated by wasmsched, so a pod that requests one is refused by
/// name rather than placed as if the class did not say so.
fn refuse_extended_resources(pod: &PodInfo, devices: &Devices) -> Option<Status> {
    pod.requests.requests.scalar.iter().find_map(|(name, _)| {
        let class = devices.extended_resource_class(name)?;
        Some(Status::unresolvable(format!(
            "pod requests {name}, which DeviceClass {class} provides through Dynamic Resource Allocation \
             (spec.extendedResourceName): wasmsched does not allocate extended resources backed by devices"
        )))
    })
}

/// Every request's class must exist (`validateDeviceClass`).
fn check_classes(claim: &ResourceClaim, devices: &Devices) -> Result<(), Status> {
    let key = claim_key(claim);
    for req in claim.spec.devices.iter().flat_map(|d| d.requests.iter().flatten()) {
        let check = |class: &str, name: &str| -> Result<(), Status> {
            if class.is_empty() {
                return Err(Status::error(format!("request {name}: unsupported request type")));
            }
            if devices.class(class).is_none() {
                return Err(Status::unresolvable(format!(
                    "request {name}: device class {class} does not exist"
                )));
            }
            Ok(())
        };
        match (&req.exactly, &req.first_available) {
            (Some(e), _) => check(&e.device_class_name, &req.name)?,
            (None, Some(subs)) if !subs.is_empty() => {
                for s in subs {
                    check(&s.device_class_name, &format!("{}/{}", req.name, s.name))?;
                }
            }
            _ => {
                return Err(Status::unresolvable(format!(
                    "resource claim {key}, request {}: unknown request type",
                    req.name
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use k8s_openapi::api::core::v1::{Node, Pod};
    use serde_json::{Value, json};

    use crate::config::Config;
    use crate::plugins::Registry;
    use crate::scheduler::{Responsibility, Scheduler};

    fn sched(nodes: &[&str]) -> Scheduler {
        let mut s = Scheduler::new(&Config::default(), &Registry::builtin(), 1, Responsibility::OwnProfiles).unwrap();
        let now = Instant::now();
        for n in nodes {
            let node: Node =
                serde_json::from_value(json!({"metadata": {"name": n, "labels": {"kubernetes.io/hostname": n}},
                "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "10"}}}))
                .unwrap();
            s.on_node(&node, now).unwrap();
            s.on_storage(
                &json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": format!("{n}-gpu")},
                    "spec": {"driver": "gpu.example.com", "nodeName": n,
                             "pool": {"name": n, "generation": 1, "resourceSliceCount": 1},
                             "devices": [{"name": "gpu-0"}]}}),
                now,
            )
            .unwrap();
        }
        s
    }

    fn object(kind: &str, name: &str, spec: Value) -> Value {
        json!({"apiVersion": "resource.k8s.io/v1", "kind": kind,
               "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"), "resourceVersion": "1"},
               "spec": spec})
    }

    fn gpu_claim(name: &str) -> Value {
        object(
            "ResourceClaim",
            name,
            json!({"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}),
        )
    }

    fn pod(name: &str, claim: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
            "spec": {"schedulerName": "wasm-scheduler", "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
                     "containers": [{"name": "c"}]}}))
        .unwrap()
    }

    fn class(s: &mut Scheduler, extra: Value) {
        let mut c = json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}});
        if let (Some(spec), Value::Object(more)) = (c["spec"].as_object_mut(), extra) {
            spec.extend(more);
        }
        s.on_storage(&c, Instant::now()).unwrap();
    }

    /// A pod waits outside the queue until its claim exists; then each of
    /// two back-to-back cycles gets its own device (the first one's is
    /// assumed), and a third finds none left.
    #[test]
    fn claims_gate_the_pod_and_assumed_devices_are_not_given_twice() {
        let mut s = sched(&["n1", "n2"]);
        class(&mut s, json!({}));
        let now = Instant::now();
        s.on_pod(&pod("a", "c-a"), now).unwrap();
        assert!(s.schedule_one(now, false).is_none(), "waits for its claim");
        assert_eq!(s.gated_pods(), 1);
        assert_eq!(
            s.gated_reason(s.gated().next().unwrap().0),
            "resourceclaim.resource.k8s.io \"c-a\" not found"
        );
        for c in ["c-a", "c-b", "c-c"] {
            s.on_storage(&gpu_claim(c), now).unwrap();
        }
        assert_eq!(s.gated_pods(), 0, "queued once its claim exists");
        s.on_pod(&pod("b", "c-b"), now).unwrap();
        s.on_pod(&pod("c", "c-c"), now).unwrap();
        let mut taken = Vec::new();
        for _ in 0..2 {
            let a = s.schedule_one(now, false).unwrap();
            let r = a.result.expect("placed");
            let plan = r.devices.expect("a plan to write");
            let alloc = plan.claims[0].allocation.clone().expect("allocated in the cycle");
            let d = &alloc.devices.unwrap().results.unwrap()[0];
            taken.push(format!("{}/{}", d.pool, d.device));
            assert_eq!(plan.pod_name, a.pod.name);
        }
        taken.sort();
        assert_eq!(taken, ["n1/gpu-0", "n2/gpu-0"]);
        let third = s.schedule_one(now, false).unwrap();
        assert_eq!(
            third.result.unwrap_err().to_string(),
            "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
        );
        // A binding that fails gives its device back.
        s.binding_finished("default/a", "uid-a", false, now);
        assert_eq!(s.cache.storage().devices().allocated().len(), 1);
    }

    /// A class that does not exist, and an extended resource a class backs
    /// with DRA, are refused with kube-scheduler's words and the field.
    #[test]
    fn missing_classes_and_extended_resources_are_refused_by_name() {
        let mut s = sched(&["n1"]);
        let now = Instant::now();
        s.on_storage(&gpu_claim("c"), now).unwrap();
        s.on_pod(&pod("a", "c"), now).unwrap();
        let a = s.schedule_one(now, false).unwrap();
        assert!(
            a.result
                .unwrap_err()
                .to_string()
                .starts_with("0/1 nodes are available: request gpu: device class gpu does not exist."),
        );
        class(&mut s, json!({"extendedResourceName": "example.com/gpu"}));
        let p: Pod = serde_json::from_value(json!({
            "metadata": {"name": "x", "namespace": "default", "uid": "uid-x"},
            "spec": {"schedulerName": "wasm-scheduler",
                     "containers": [{"name": "c", "resources": {"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "1"}}}]}}))
        .unwrap();
        s.on_pod(&p, now).unwrap();
        let mut msg = String::new();
        while let Some(a) = s.schedule_one(now, false) {
            if a.pod.name == "x" {
                msg = a.result.unwrap_err().to_string();
            }
        }
        assert!(
            msg.contains("(spec.extendedResourceName): wasmsched does not allocate"),
            "{msg}"
        );
    }
}
