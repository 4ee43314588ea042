//! The DRA objects of a cluster as the scheduler keeps them: device
//! classes, resource slices, resource claims, and on top the allocations
//! and reservations assumed for pods whose binding is in flight
//! (kube-scheduler's assume cache and in-flight allocations).
//!
//! A claim is seen through its *effective* version: the API's, with the
//! plans of the assumed pods applied in the order they were assumed (an
//! allocation where the claim has none, the pod added to
//! `status.reservedFor`). Applying a plan is idempotent, so a version from
//! the API that already shows the daemon's write changes nothing, and one
//! that shows something else (allocated elsewhere) makes the daemon's
//! PreBind fail, which forgets the plan. The devices of every effective
//! allocation (except admin access) are the allocated set the allocator
//! avoids: two cycles back to back never hand out one device twice.

use std::sync::Arc;

use k8s_openapi::api::resource::v1::{
    AllocationResult, Device, DeviceClass, ResourceClaim, ResourceClaimConsumerReference, ResourceClaimStatus,
    ResourceSlice,
};
use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::Value;

use super::DeviceId;
use crate::ModelError;
use crate::pod::PodKey;

/// The cycle state key under which DynamicResources leaves its
/// [`DraPlan`] at Reserve, for the scheduler to assume and return.
pub const DRA_PLAN: &str = "DynamicResources/plan";

/// The finalizer the scheduler adds to a claim it allocates
/// (`resourceapi.Finalizer`).
pub const FINALIZER: &str = "resource.kubernetes.io/delete-protection";

/// What PreBind writes for one claim of a placed pod.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedClaim {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid` (the write is refused if the claim was replaced).
    pub uid: String,
    /// The allocation chosen in this cycle (`None`: the claim was
    /// allocated already; only the reservation is added).
    pub allocation: Option<AllocationResult>,
}

impl PlannedClaim {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// The claim writes one pod's placement needs before the pod is bound
/// (DynamicResources' PreBind): every claim of the pod not yet reserved
/// for it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DraPlan {
    /// The node chosen.
    pub node: String,
    /// The pod's name and UID, the consumer added to `reservedFor`.
    pub pod_name: String,
    /// See `pod_name`.
    pub pod_uid: String,
    /// The claims, in the pod's order.
    pub claims: Vec<PlannedClaim>,
}

impl DraPlan {
    /// Whether there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.claims.is_empty()
    }

    /// The consumer reference of the pod.
    pub fn consumer(&self) -> ResourceClaimConsumerReference {
        ResourceClaimConsumerReference {
            api_group: None,
            resource: "pods".into(),
            name: self.pod_name.clone(),
            uid: self.pod_uid.clone(),
        }
    }
}

/// The DRA objects, and the plans assumed on top.
#[derive(Debug, Clone, Default)]
pub struct Devices {
    classes: FxHashMap<String, Arc<DeviceClass>>,
    slices: FxHashMap<String, Arc<ResourceSlice>>,
    /// Every slice, by name: what the allocator reads.
    slice_list: Arc<Vec<Arc<ResourceSlice>>>,
    /// Positions in `slice_list` of the slices of each `spec.nodeName`,
    /// and of those for several nodes (a selector, all nodes, per device).
    by_node: FxHashMap<String, Vec<usize>>,
    shared: Vec<usize>,
    /// Claims as the API has them.
    claims: FxHashMap<String, Arc<ResourceClaim>>,
    /// Claims as the assumed plans leave them (only those they touch).
    effective: FxHashMap<String, Arc<ResourceClaim>>,
    /// The assumed plans, oldest first.
    plans: Vec<(PodKey, Arc<DraPlan>)>,
    /// How many effective allocations use each device (admin access
    /// excluded), and the set of those used at all.
    in_use: FxHashMap<DeviceId, u32>,
    allocated: FxHashSet<DeviceId>,
    /// The devices each claim's effective version counts in `in_use`.
    counted: FxHashMap<String, Vec<DeviceId>>,
    /// Extended resources classes provide (`spec.extendedResourceName`):
    /// resource name → class name.
    extended: FxHashMap<String, String>,
}

/// Whether a claim is reserved for the pod of `uid`.
pub fn reserved_for(claim: &ResourceClaim, uid: &str) -> bool {
    claim
        .status
        .as_ref()
        .and_then(|s| s.reserved_for.as_ref())
        .is_some_and(|r| r.iter().any(|c| c.uid == uid))
}

/// The claim's allocation, if any.
pub fn allocation(claim: &ResourceClaim) -> Option<&AllocationResult> {
    claim.status.as_ref().and_then(|s| s.allocation.as_ref())
}

/// How many consumers the claim is reserved for.
pub fn reservations(claim: &ResourceClaim) -> usize {
    claim
        .status
        .as_ref()
        .and_then(|s| s.reserved_for.as_ref())
        .map_or(0, Vec::len)
}

/// `namespace/name` of a claim.
pub fn claim_key(claim: &ResourceClaim) -> String {
    format!(
        "{}/{}",
        claim.metadata.namespace.as_deref().unwrap_or_default(),
        claim.metadata.name.as_deref().unwrap_or_default()
    )
}

/// Whether a slice's (or a device's) node selection includes the node,
/// as the allocator decides it (a selector that cannot be parsed includes
/// none).
fn node_selected(
    name: Option<&str>,
    all: Option<bool>,
    selector: Option<&k8s_openapi::api::core::v1::NodeSelector>,
    node: &crate::node::NodeData,
) -> bool {
    use super::allocator::{node_matches, parse_selector};
    let parsed = selector.map(|sel| parse_selector(sel, "ResourceSlice", "spec.nodeSelector"));
    node_matches(node, name, all, parsed.as_ref()).unwrap_or(false)
}

/// An allocation's devices as `claim: request=driver/pool/device`, one
/// per result, as `simulate` and `demo` print them.
pub fn describe<'a>(claim: &'a str, a: &'a AllocationResult) -> impl Iterator<Item = String> + 'a {
    a.devices
        .iter()
        .flat_map(|d| d.results.iter().flatten())
        .map(move |r| format!("{claim}: {}={}/{}/{}", r.request, r.driver, r.pool, r.device))
}

/// Whether `new` is an earlier version of the same claim than `old`
/// (resource versions compared as integers, as kube-scheduler's assume
/// cache does; ones that are not integers are never older).
fn older(new: &ResourceClaim, old: &ResourceClaim) -> bool {
    let rv = |c: &ResourceClaim| {
        c.metadata
            .resource_version
            .as_deref()
            .and_then(|v| v.parse::<u64>().ok())
    };
    new.metadata.uid == old.metadata.uid && matches!((rv(new), rv(old)), (Some(n), Some(o)) if n < o)
}

/// The devices an allocation takes for itself (admin access shares).
fn taken(a: &AllocationResult) -> impl Iterator<Item = DeviceId> + '_ {
    a.devices
        .iter()
        .flat_map(|d| d.results.iter().flatten())
        .filter(|r| r.admin_access != Some(true))
        .map(|r| DeviceId::new(&r.driver, &r.pool, &r.device))
}

impl Devices {
    /// A device class by name.
    pub fn class(&self, name: &str) -> Option<&Arc<DeviceClass>> {
        self.classes.get(name)
    }

    /// The DeviceClass that provides an extended resource through DRA
    /// (`spec.extendedResourceName`), if one does.
    pub fn extended_resource_class(&self, resource: &str) -> Option<&str> {
        self.extended.get(resource).map(String::as_str)
    }

    /// Whether some class provides an extended resource.
    pub fn has_extended_resources(&self) -> bool {
        !self.extended.is_empty()
    }

    fn reindex_classes(&mut self) {
        let mut names: Vec<&String> = self.classes.keys().collect();
        names.sort();
        self.extended = FxHashMap::default();
        for n in names {
            if let Some(r) = self.classes[n].spec.extended_resource_name.as_ref() {
                self.extended.entry(r.clone()).or_insert_with(|| n.clone());
            }
        }
    }

    /// Every slice, ordered by name.
    pub fn slices(&self) -> &Arc<Vec<Arc<ResourceSlice>>> {
        &self.slice_list
    }

    /// A claim by `namespace/name`, as the assumed plans leave it.
    pub fn claim(&self, key: &str) -> Option<&Arc<ResourceClaim>> {
        self.effective.get(key).or_else(|| self.claims.get(key))
    }

    /// The devices allocated to claims (admin access excluded).
    pub fn allocated(&self) -> &FxHashSet<DeviceId> {
        &self.allocated
    }

    /// Whether nothing of DRA is known (a cluster without it).
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty() && self.slices.is_empty() && self.claims.is_empty()
    }

    /// Adds or replaces a DeviceClass, ResourceSlice or ResourceClaim
    /// given as JSON (`kind` says which).
    pub fn upsert(&mut self, kind: crate::storage::StorageKind, v: &Value) -> Result<(), ModelError> {
        use crate::storage::StorageKind as K;
        let name = v.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        let object = format!(
            "{} {name}",
            v.pointer("/kind").and_then(Value::as_str).unwrap_or_default()
        );
        let bad = |e: serde_json::Error| ModelError::new(&object, "", e);
        match kind {
            K::DeviceClass => {
                let c: DeviceClass = serde_json::from_value(v.clone()).map_err(bad)?;
                self.classes.insert(name.to_owned(), Arc::new(c));
                self.reindex_classes();
            }
            K::ResourceSlice => {
                let s: ResourceSlice = serde_json::from_value(v.clone()).map_err(bad)?;
                self.slices.insert(name.to_owned(), Arc::new(s));
                self.relist_slices();
            }
            K::ResourceClaim => {
                let c: ResourceClaim = serde_json::from_value(v.clone()).map_err(bad)?;
                let key = claim_key(&c);
                if self.claims.get(&key).is_some_and(|old| older(&c, old)) {
                    // The daemon's own write came back first; the watch's
                    // earlier version is stale (the assume cache's rule).
                    return Ok(());
                }
                self.claims.insert(key.clone(), Arc::new(c));
                self.refresh(&key);
            }
            _ => {}
        }
        Ok(())
    }

    /// Removes an object (`key` as [`crate::storage::storage_key`] spells
    /// it).
    pub fn remove(&mut self, kind: crate::storage::StorageKind, key: &str) {
        use crate::storage::StorageKind as K;
        match kind {
            K::DeviceClass if self.classes.remove(key).is_some() => self.reindex_classes(),
            K::ResourceSlice if self.slices.remove(key).is_some() => self.relist_slices(),
            K::ResourceClaim => {
                self.claims.remove(key);
                self.refresh(key);
            }
            _ => {}
        }
    }

    /// Every key of a kind.
    pub fn keys(&self, kind: crate::storage::StorageKind) -> Vec<String> {
        use crate::storage::StorageKind as K;
        match kind {
            K::DeviceClass => self.classes.keys().cloned().collect(),
            K::ResourceSlice => self.slices.keys().cloned().collect(),
            K::ResourceClaim => self.claims.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }

    /// Whether an object of that kind and key is known.
    pub fn contains(&self, kind: crate::storage::StorageKind, key: &str) -> bool {
        use crate::storage::StorageKind as K;
        match kind {
            K::DeviceClass => self.classes.contains_key(key),
            K::ResourceSlice => self.slices.contains_key(key),
            K::ResourceClaim => self.claims.contains_key(key),
            _ => false,
        }
    }

    fn relist_slices(&mut self) {
        let mut list: Vec<_> = self.slices.values().cloned().collect();
        list.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        self.by_node = FxHashMap::default();
        self.shared = Vec::new();
        for (i, s) in list.iter().enumerate() {
            match s.spec.node_name.as_deref().filter(|n| !n.is_empty()) {
                Some(n) => self.by_node.entry(n.to_owned()).or_default().push(i),
                None => self.shared.push(i),
            }
        }
        self.slice_list = Arc::new(list);
    }

    /// The devices the node can use, with their slice: those of slices
    /// for the node, for a selector it matches, for all nodes, or (with
    /// `perDeviceNodeSelection`) each device's own node selection. In
    /// slice name order.
    pub fn node_devices<'a>(&'a self, node: &crate::node::NodeData) -> Vec<(&'a ResourceSlice, &'a Device)> {
        let own = self.by_node.get(&node.name).into_iter().flatten();
        let mut positions: Vec<usize> = own.chain(&self.shared).copied().collect();
        positions.sort_unstable();
        let mut out = Vec::new();
        for i in positions {
            let slice = &*self.slice_list[i];
            let spec = &slice.spec;
            let per_device = spec.per_device_node_selection == Some(true);
            if !per_device
                && !node_selected(
                    spec.node_name.as_deref(),
                    spec.all_nodes,
                    spec.node_selector.as_ref(),
                    node,
                )
            {
                continue;
            }
            for d in spec.devices.iter().flatten() {
                if !per_device || node_selected(d.node_name.as_deref(), d.all_nodes, d.node_selector.as_ref(), node) {
                    out.push((slice, d));
                }
            }
        }
        out
    }

    /// Assumes a placed pod's plan: its claims look allocated and
    /// reserved, their devices taken, until [`Devices::confirm`] or
    /// [`Devices::forget`].
    pub fn assume(&mut self, pod: &str, plan: DraPlan) {
        self.forget(pod);
        let keys: Vec<String> = plan.claims.iter().map(PlannedClaim::key).collect();
        self.plans.push((pod.to_owned(), Arc::new(plan)));
        for k in keys {
            self.refresh(&k);
        }
    }

    /// Whether a plan is assumed for the pod.
    pub fn has_plan(&self, pod: &str) -> bool {
        self.plans.iter().any(|(p, _)| p == pod)
    }

    /// The pod is bound: its claims' writes are carried out. Their
    /// effective versions become the claims as known (the daemon gave the
    /// API's answers to [`Devices::upsert`] first, so nothing changes;
    /// `simulate` and `bench`, which write nothing, keep the allocations
    /// this way), and the plan goes.
    pub fn confirm(&mut self, pod: &str) {
        let Some(i) = self.plans.iter().position(|(p, _)| p == pod) else {
            return;
        };
        let (_, plan) = self.plans.remove(i);
        for c in &plan.claims {
            let key = c.key();
            if let Some(e) = self.effective.get(&key).cloned() {
                let mut baked = (*e).clone();
                // Without the other plans still assumed on it.
                if let Some(list) = baked.status.as_mut().and_then(|s| s.reserved_for.as_mut()) {
                    list.retain(|r| {
                        r.uid == plan.pod_uid || self.claims.get(&key).is_some_and(|api| reserved_for(api, &r.uid))
                    });
                }
                self.claims.insert(key.clone(), Arc::new(baked));
            }
            self.refresh(&key);
        }
    }

    /// Drops the pod's plan (its binding failed, or it is gone); `true` if
    /// there was one.
    pub fn forget(&mut self, pod: &str) -> bool {
        let Some(i) = self.plans.iter().position(|(p, _)| p == pod) else {
            return false;
        };
        let (_, plan) = self.plans.remove(i);
        for c in &plan.claims {
            self.refresh(&c.key());
        }
        true
    }

    /// Recomputes a claim's effective version and the devices it takes.
    fn refresh(&mut self, key: &str) {
        let mut effective: Option<ResourceClaim> = None;
        let (namespace, name) = key.split_once('/').unwrap_or(("", key));
        if let Some(api) = self.claims.get(key) {
            for (_, plan) in &self.plans {
                for pc in plan
                    .claims
                    .iter()
                    .filter(|pc| pc.namespace == namespace && pc.name == name)
                {
                    // A claim written without a UID (a file's, in `simulate`)
                    // is planned with an empty one.
                    if api.metadata.uid.as_deref().unwrap_or_default() != pc.uid {
                        continue;
                    }
                    let c = effective.get_or_insert_with(|| (**api).clone());
                    let status = c.status.get_or_insert_with(ResourceClaimStatus::default);
                    if status.allocation.is_none() {
                        status.allocation.clone_from(&pc.allocation);
                    }
                    let consumers = status.reserved_for.get_or_insert_with(Vec::new);
                    if !consumers.iter().any(|r| r.uid == plan.pod_uid) {
                        consumers.push(plan.consumer());
                    }
                }
            }
        }
        match effective {
            Some(c) => {
                self.effective.insert(key.to_owned(), Arc::new(c));
            }
            None => {
                self.effective.remove(key);
            }
        }
        for d in self.counted.remove(key).unwrap_or_default() {
            if let Some(n) = self.in_use.get_mut(&d) {
                *n -= 1;
                if *n == 0 {
                    self.in_use.remove(&d);
                    self.allocated.remove(&d);
                }
            }
        }
        let now: Vec<DeviceId> = self
            .claim(key)
            .and_then(|c| allocation(c))
            .map(|a| taken(a).collect())
            .unwrap_or_default();
        for d in &now {
            *self.in_use.entry(d.clone()).or_default() += 1;
            self.allocated.insert(d.clone());
        }
        if !now.is_empty() {
            self.counted.insert(key.to_owned(), now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::StorageKind;
    use serde_json::json;

    fn claim(name: &str, status: Value) -> Value {
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
               "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "resourceVersion": "1"},
               "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
               "status": status})
    }

    fn allocation_of(device: &str) -> AllocationResult {
        serde_json::from_value(json!({"devices": {"results": [
            {"request": "r", "driver": "d", "pool": "p", "device": device}]}}))
        .unwrap()
    }

    /// A claim of a file, without a UID, is allocated by its plan like any
    /// other (it was planned with an empty UID): its device is taken.
    #[test]
    fn a_claim_without_uid_takes_its_planned_device() {
        let mut d = Devices::default();
        let mut c = claim("c", json!({}));
        c["metadata"].as_object_mut().unwrap().remove("uid");
        d.upsert(StorageKind::ResourceClaim, &c).unwrap();
        let plan = DraPlan {
            node: "n".into(),
            pod_name: "p".into(),
            pod_uid: String::new(),
            claims: vec![PlannedClaim {
                namespace: "ns".into(),
                name: "c".into(),
                uid: String::new(),
                allocation: Some(allocation_of("gpu-0")),
            }],
        };
        d.assume("ns/p", plan);
        assert!(d.allocated().contains(&DeviceId::new("d", "p", "gpu-0")));
        d.confirm("ns/p");
        assert!(
            d.allocated().contains(&DeviceId::new("d", "p", "gpu-0")),
            "kept once bound"
        );
    }

    /// An assumed plan takes its devices and reserves its claims; the API's
    /// version with the same write changes nothing; forgetting frees them.
    #[test]
    fn assumed_plans_take_devices_until_forgotten() {
        let mut d = Devices::default();
        d.upsert(StorageKind::ResourceClaim, &claim("c", json!({}))).unwrap();
        d.upsert(
            StorageKind::ResourceClaim,
            &claim(
                "shared",
                json!({"allocation": {"devices": {"results": [
                {"request": "r", "driver": "d", "pool": "p", "device": "gpu-1"}]}}}),
            ),
        )
        .unwrap();
        assert_eq!(d.allocated().len(), 1);
        let plan = DraPlan {
            node: "n".into(),
            pod_name: "p".into(),
            pod_uid: "pod-uid".into(),
            claims: vec![
                PlannedClaim {
                    namespace: "ns".into(),
                    name: "c".into(),
                    uid: "uid-c".into(),
                    allocation: Some(allocation_of("gpu-0")),
                },
                PlannedClaim {
                    namespace: "ns".into(),
                    name: "shared".into(),
                    uid: "uid-shared".into(),
                    allocation: None,
                },
            ],
        };
        d.assume("ns/p", plan);
        assert!(d.allocated().contains(&DeviceId::new("d", "p", "gpu-0")));
        assert!(reserved_for(d.claim("ns/c").unwrap(), "pod-uid"));
        assert!(reserved_for(d.claim("ns/shared").unwrap(), "pod-uid"));
        assert_eq!(d.allocated().len(), 2);

        // The API's answer to the write: the same, nothing counted twice;
        // the watch's stale version after it changes nothing.
        let mut answer = claim(
            "c",
            json!({"allocation": {"devices": {"results": [
                {"request": "r", "driver": "d", "pool": "p", "device": "gpu-0"}]}},
                "reservedFor": [{"resource": "pods", "name": "p", "uid": "pod-uid"}]}),
        );
        answer["metadata"]["resourceVersion"] = json!("2");
        d.upsert(StorageKind::ResourceClaim, &answer).unwrap();
        d.upsert(StorageKind::ResourceClaim, &claim("c", json!({}))).unwrap();
        assert_eq!(d.allocated().len(), 2);
        assert_eq!(reservations(d.claim("ns/c").unwrap()), 1);

        d.forget("ns/p");
        assert!(!reserved_for(d.claim("ns/shared").unwrap(), "pod-uid"));
        // The API still shows c allocated: its device stays taken.
        assert_eq!(d.allocated().len(), 2);
        let mut deallocated = claim("c", json!({}));
        deallocated["metadata"]["resourceVersion"] = json!("3");
        d.upsert(StorageKind::ResourceClaim, &deallocated).unwrap();
        assert_eq!(d.allocated().len(), 1);
        d.remove(StorageKind::ResourceClaim, "ns/shared");
        assert!(d.allocated().is_empty());
    }

    /// A plan for a claim that was replaced (another UID) is not applied.
    #[test]
    fn a_replaced_claim_is_not_assumed() {
        let mut d = Devices::default();
        d.upsert(StorageKind::ResourceClaim, &claim("c", json!({}))).unwrap();
        d.assume(
            "ns/p",
            DraPlan {
                node: "n".into(),
                pod_name: "p".into(),
                pod_uid: "pod-uid".into(),
                claims: vec![PlannedClaim {
                    namespace: "ns".into(),
                    name: "c".into(),
                    uid: "another".into(),
                    allocation: Some(allocation_of("gpu-0")),
                }],
            },
        );
        assert!(d.allocated().is_empty());
        assert!(allocation(d.claim("ns/c").unwrap()).is_none());
    }
}
