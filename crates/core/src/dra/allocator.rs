//! The structured-parameters allocator of kube-scheduler v1.36, its stable
//! path (`k8s.io/dynamic-resource-allocation/structured/internal/stable`),
//! ported: which devices of the ResourceSlices satisfy a pod's
//! ResourceClaims on one node.
//!
//! # The search
//!
//! As in Go, the claims are allocated one after the other, each claim's
//! requests in order, each request's devices one at a time, and each device
//! is tried from the candidates in order: the node's pools, each pool's
//! slices in the order they were given, each slice's devices in order. A
//! candidate must not be in use (by another claim, or earlier in this
//! search), must match the class's and the request's CEL selectors, must not
//! be tainted without a toleration, must leave its pool enough counters and
//! must keep every `matchAttribute` constraint of its claim; then the search
//! goes on with the next device, and comes back to try the next candidate
//! when that fails (backtracking). The first complete solution is the
//! answer. A `firstAvailable` request tries its subrequests in order;
//! `allocationMode: All` takes every matching device of the node, or none.
//! Error messages are Go's, `klog.KObj(claim)` written `namespace/name`.
//!
//! Go's stable path visits the pools in the random order of a Go map; here
//! they are sorted by driver and pool name, as the incubating path (the one
//! kube-scheduler runs when beta DRA features are on) sorts them, so the
//! same devices are chosen on every run.
//!
//! # Outcomes
//!
//! [`Allocator::allocate`] answers, for one node:
//! - `Ok(Some(results))`: one [`AllocationResult`] per claim, in order, built
//!   as Go builds them (results, the class's and the claim's configuration,
//!   the node selector; no timestamp).
//! - `Ok(None)`: the claims cannot be allocated on this node (Go's `nil,
//!   nil`).
//! - `Err(`[`AllocError::FailedOnNode`]`)`: neither can they, with a reason
//!   worth showing (Go's errors wrapping `ErrFailedAllocationOnNode`):
//!   kube-scheduler makes it the node's unschedulable reason.
//! - `Err(`[`AllocError::Aborted`]`)`: the time limit passed
//!   (`DRASchedulerFilterTimeout`); kube-scheduler retries the pod later.
//! - `Err(`[`AllocError::Invalid`]`)`: a claim, class or slice cannot be
//!   used at all (unknown class, CEL error, ...); the pod fails, on every
//!   node.
//!
//! # What wasmsched refuses
//!
//! kube-scheduler v1.36 runs with DRAConsumableCapacity and
//! DRADeviceBindingConditions on by default, which this path does not
//! implement ([`Allocator::new`] refuses [`Features`] asking for them).
//! Rather than ignore those fields, the allocator refuses them:
//! - A claim asking for them is invalid: a request's or subrequest's
//!   `capacity` (`claim ns/c, request r: capacity requests
//!   (spec.devices.requests[0].exactly.capacity) are not supported by
//!   wasmsched`, for a subrequest `claim ns/c, request r/s: capacity
//!   requests (spec.devices.requests[0].firstAvailable[1].capacity) ...`),
//!   a `distinctAttribute` constraint (`claim ns/c, constraint #0:
//!   distinctAttribute constraints
//!   (spec.devices.constraints[0].distinctAttribute) are not supported by
//!   wasmsched`).
//! - A device using them is never allocated: `bindingConditions`,
//!   `bindingFailureConditions`, `bindsToNode: true`,
//!   `allowMultipleAllocations: true`, a `capacity[].requestPolicy`, or a
//!   list-typed attribute (DRAListTypeAttributes). Go's stable path
//!   skips devices with binding conditions silently, before their
//!   selectors; here a device is refused after its selectors, so that
//!   only a device the request would otherwise have taken is remembered; when no solution is found the answer is
//!   [`AllocError::FailedOnNode`] naming it (`device d/p/x cannot be
//!   allocated: binding conditions (ResourceSlice s, spec.devices[0].bindingConditions)
//!   are not supported by wasmsched`) instead of a silent `Ok(None)`. An
//!   `allocationMode: All` request that matches such a device fails on the
//!   node with that reason at once: allocating all devices but that one
//!   would not be what kube-scheduler allocates.
//! - A list-typed attribute reached by a CEL selector fails the pod with
//!   Go's own error (`... CEL runtime error: attribute a: unsupported
//!   attribute value`), as the stable path does without
//!   DRAListTypeAttributes.
//!
//! # Other differences from Go
//!
//! - Requests without `allocationMode` are `ExactCount`, without `count`
//!   ask for 1: the API server's defaults (Go only ever sees defaulted
//!   objects).
//! - Counter values are compared exactly to the nano-unit (beyond
//!   2^63 nano-units, to the unit); an unparsable one makes its pool
//!   invalid. The counters left in a pool are cached per driver and pool
//!   (Go keys them by pool name only).
//! - As in Go, a device whose counters were reserved and which is then
//!   rejected for a taint or a constraint keeps them reserved until the end
//!   of the call: kept for the same choices.
//! - Node selectors are parsed by [`crate::selector::Term`]; a selector that
//!   cannot be parsed is shown as JSON in the error, not in Go's `String()`
//!   form.
//!
//! # Cost
//!
//! The scheduler calls [`Allocator::allocate`] for every candidate node. The
//! slices are indexed once by `spec.nodeName` (as the incubating path's
//! `slicesOnNode`) and by pool, so one node's call reads the node's slices
//! and the ones not bound to a node, not all slices; node selectors are
//! parsed once per slice and which devices are allocated is worked out once
//! per slice, both on first use and shared by all calls.

mod constraints;
mod pools;
mod results;
mod search;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::resource::v1::{AllocationResult, DeviceClass, ResourceClaim, ResourceSlice};
use rustc_hash::{FxHashMap, FxHashSet};

pub(crate) use pools::{node_matches, parse_selector};

use super::DeviceId;
use super::cel::CelCache;
use crate::node::NodeData;

/// The most devices one claim may be allocated
/// (`resourceapi.AllocationResultsMaxSize`).
pub const ALLOCATION_RESULTS_MAX_SIZE: usize = 32;

/// Optional allocator behaviour, as Go's `internal.Features`: each field
/// stands for the feature gate(s) whose control flow it switches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Features {
    /// DRAAdminAccess: requests with `adminAccess`.
    pub admin_access: bool,
    /// DRAConsumableCapacity (not supported by this path).
    pub consumable_capacity: bool,
    /// DRADeviceBindingConditions + DRAResourceClaimDeviceStatus (not
    /// supported by this path).
    pub device_binding_and_status: bool,
    /// DRADeviceTaints: tainted devices need a toleration.
    pub device_taints: bool,
    /// DRAListTypeAttributes (not supported by this path).
    pub list_type_attributes: bool,
    /// DRAPartitionableDevices: shared counters, per-device node selection.
    pub partitionable_devices: bool,
    /// DRAPrioritizedList: `firstAvailable` requests.
    pub prioritized_list: bool,
}

impl Features {
    /// What the stable path supports (Go's `stable.SupportedFeatures`).
    pub const SUPPORTED: Features = Features {
        admin_access: true,
        consumable_capacity: false,
        device_binding_and_status: false,
        device_taints: true,
        list_type_attributes: false,
        partitionable_devices: true,
        prioritized_list: true,
    };

    /// Every feature on (Go's `FeaturesAll`).
    pub const ALL: Features = Features {
        admin_access: true,
        consumable_capacity: true,
        device_binding_and_status: true,
        device_taints: true,
        list_type_attributes: true,
        partitionable_devices: true,
        prioritized_list: true,
    };

    /// The names of the features that are on, sorted (Go's `Set()`).
    pub fn names(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = [
            (self.admin_access, "DRAAdminAccess"),
            (self.consumable_capacity, "DRAConsumableCapacity"),
            (
                self.device_binding_and_status,
                "DRADeviceBindingConditions+DRAResourceClaimDeviceStatus",
            ),
            (self.device_taints, "DRADeviceTaints"),
            (self.list_type_attributes, "DRAListTypeAttributes"),
            (self.partitionable_devices, "DRAPartitionableDevices"),
            (self.prioritized_list, "DRAPrioritizedList"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        names.sort_unstable();
        names
    }

    /// The names of the features that are on here but not supported by this
    /// path, sorted.
    pub fn unsupported(&self) -> Vec<&'static str> {
        let supported = Self::SUPPORTED.names();
        self.names().into_iter().filter(|n| !supported.contains(n)).collect()
    }
}

/// Looks DeviceClasses up by name (Go's `DeviceClassLister.Get`). Closures
/// `Fn(&str) -> Option<Arc<DeviceClass>>` and maps by name are listers.
pub trait ClassLister: Sync {
    /// The class with this name, if there is one.
    fn get(&self, name: &str) -> Option<Arc<DeviceClass>>;
}

impl<F> ClassLister for F
where
    F: Fn(&str) -> Option<Arc<DeviceClass>> + Sync,
{
    fn get(&self, name: &str) -> Option<Arc<DeviceClass>> {
        self(name)
    }
}

impl<S: std::hash::BuildHasher + Sync> ClassLister for std::collections::HashMap<String, Arc<DeviceClass>, S> {
    fn get(&self, name: &str) -> Option<Arc<DeviceClass>> {
        std::collections::HashMap::get(self, name).cloned()
    }
}

/// Why claims could not be allocated; the message is Go's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllocError {
    /// This node cannot be used, others may be (Go's errors wrapping
    /// `ErrFailedAllocationOnNode`): kube-scheduler makes the message the
    /// node's unschedulable reason.
    #[error("{0}")]
    FailedOnNode(String),
    /// The caller's time limit passed (Go's context errors).
    #[error("{0}")]
    Aborted(String),
    /// A claim, class or slice cannot be used (every other error of Go):
    /// the pod cannot be scheduled anywhere until it changes.
    #[error("{0}")]
    Invalid(String),
}

impl AllocError {
    /// The message.
    pub fn message(&self) -> &str {
        match self {
            AllocError::FailedOnNode(m) | AllocError::Aborted(m) | AllocError::Invalid(m) => m,
        }
    }
}

/// An allocator over one view of the cluster: the slices, the devices
/// already allocated and the classes. Built once per scheduling cycle (Go's
/// `NewAllocator` in PreFilter), asked once per node ([`Self::allocate`]);
/// it may be shared between threads.
pub struct Allocator<'a> {
    features: Features,
    allocated: &'a FxHashSet<DeviceId>,
    classes: &'a dyn ClassLister,
    cel: &'a CelCache,
    index: pools::SliceIndex<'a>,
    /// The counters each pool has left after the allocated devices, by
    /// driver and pool: the same for every node, so computed once.
    available: Mutex<FxHashMap<(&'a str, &'a str), Arc<pools::Counters<'a>>>>,
    /// How often the search stepped (Go's `NumAllocateOneInvocations`).
    steps: AtomicU64,
}

impl<'a> Allocator<'a> {
    /// An allocator for these slices, with `allocated` the devices in use by
    /// claims that are already allocated (or being allocated in parallel).
    /// Fails, as Go's `NewAllocator`, when `features` asks for something
    /// this path does not implement ([`Features::unsupported`]).
    pub fn new(
        features: Features,
        allocated: &'a FxHashSet<DeviceId>,
        classes: &'a dyn ClassLister,
        slices: &'a [Arc<ResourceSlice>],
        cel: &'a CelCache,
    ) -> Result<Self, AllocError> {
        let unsupported = features.unsupported();
        if !unsupported.is_empty() {
            return Err(AllocError::Invalid(format!(
                "internal error: no allocator available for feature set [{}]: wasmsched's allocator does not support {}",
                features.names().join(" "),
                unsupported.join(", ")
            )));
        }
        Ok(Allocator {
            features,
            allocated,
            classes,
            cel,
            index: pools::SliceIndex::new(slices),
            available: Mutex::new(FxHashMap::default()),
            steps: AtomicU64::new(0),
        })
    }

    /// The features this allocator was built with.
    pub fn features(&self) -> Features {
        self.features
    }

    /// Allocates `claims` (none of them allocated yet) for `node`: see the
    /// module documentation for the answers. `expired` is asked at every
    /// step of the search, where Go checks its context; once it answers
    /// true the call ends with [`AllocError::Aborted`].
    pub fn allocate(
        &self,
        node: &NodeData,
        claims: &[&ResourceClaim],
        expired: &dyn Fn() -> bool,
    ) -> Result<Option<Vec<AllocationResult>>, AllocError> {
        search::allocate(self, node, claims, expired)
    }

    /// How many steps the searches of this allocator took so far (Go's
    /// `Stats.NumAllocateOneInvocations`): a measure of their work.
    pub fn steps(&self) -> u64 {
        self.steps.load(Ordering::Relaxed)
    }
}

/// `klog.KObj(claim)`: `namespace/name`, or `name` without a namespace.
fn kobj(claim: &ResourceClaim) -> String {
    let name = claim.metadata.name.as_deref().unwrap_or("");
    match claim.metadata.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_owned(),
    }
}
