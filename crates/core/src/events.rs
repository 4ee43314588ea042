//! Cluster events and queueing hints, as kube-scheduler's: a change to the
//! cluster (a node added or updated, a bound pod deleted or scaled down, a
//! pending pod updated) is described by what changed, and a pod parked
//! unschedulable is retried only when one of the plugins that rejected it
//! registered for that kind of change and its hint says the change may
//! help. Node heartbeats, status-only pod updates and our own condition
//! patches therefore retry nothing.

use std::ops::BitOr;
use std::sync::Arc;

use crate::node::NodeData;
use crate::pod::PodInfo;

/// What kind of object changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resource {
    /// A node.
    Node,
    /// A pod bound (or assumed) to a node.
    AssignedPod,
    /// A pending pod (the one being considered, for its own updates).
    UnscheduledPod,
    /// A namespace (its labels matter to namespace selectors).
    Namespace,
    /// A PersistentVolumeClaim.
    PersistentVolumeClaim,
    /// A PersistentVolume.
    PersistentVolume,
    /// A StorageClass.
    StorageClass,
    /// A CSINode.
    CsiNode,
    /// A DeviceClass.
    DeviceClass,
    /// A ResourceSlice.
    ResourceSlice,
    /// A ResourceClaim.
    ResourceClaim,
    /// A metric source's values (`metrics.sources`), refreshed: not a
    /// Kubernetes object, a wasmsched event for plugins that read live
    /// metrics.
    Metric,
}

impl Resource {
    /// The resource a storage kind's changes are.
    pub fn of_storage(kind: crate::storage::StorageKind) -> Self {
        use crate::storage::StorageKind as K;
        match kind {
            K::Claim => Resource::PersistentVolumeClaim,
            K::Volume => Resource::PersistentVolume,
            K::Class => Resource::StorageClass,
            K::CsiNode => Resource::CsiNode,
            K::DeviceClass => Resource::DeviceClass,
            K::ResourceSlice => Resource::ResourceSlice,
            K::ResourceClaim => Resource::ResourceClaim,
        }
    }
}

/// How it changed: kube-scheduler's `ActionType` bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Action(u32);

impl Action {
    /// Nothing.
    pub const NONE: Action = Action(0);
    /// Added.
    pub const ADD: Action = Action(1);
    /// Deleted (or no longer using its node).
    pub const DELETE: Action = Action(1 << 1);
    /// A node's allocatable changed.
    pub const UPDATE_NODE_ALLOCATABLE: Action = Action(1 << 2);
    /// A node's labels changed.
    pub const UPDATE_NODE_LABEL: Action = Action(1 << 3);
    /// A node's taints changed, or it became schedulable.
    pub const UPDATE_NODE_TAINT: Action = Action(1 << 4);
    /// A node's condition statuses changed.
    pub const UPDATE_NODE_CONDITION: Action = Action(1 << 5);
    /// A node's annotations changed.
    pub const UPDATE_NODE_ANNOTATION: Action = Action(1 << 6);
    /// A pod's labels changed.
    pub const UPDATE_POD_LABEL: Action = Action(1 << 7);
    /// A pod requests less than before.
    pub const UPDATE_POD_SCALE_DOWN: Action = Action(1 << 8);
    /// A pod's tolerations changed.
    pub const UPDATE_POD_TOLERATION: Action = Action(1 << 9);
    /// Any update.
    pub const UPDATE: Action = Action(((1 << 10) - 1) & !3);
    /// Anything.
    pub const ALL: Action = Action((1 << 10) - 1);

    /// Combines two actions (in constants, where `|` is not available).
    pub const fn union(self, other: Action) -> Action {
        Action(self.0 | other.0)
    }

    /// Whether any bit of `other` is set here.
    pub const fn intersects(self, other: Action) -> bool {
        self.0 & other.0 != 0
    }

    /// Whether every bit of `other` is set here.
    pub const fn contains(self, other: Action) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether no bit is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Each bit set, on its own.
    pub fn each(self) -> impl Iterator<Item = Action> {
        (0..10).map(|i| Action(1 << i)).filter(move |b| self.intersects(*b))
    }
}

impl BitOr for Action {
    type Output = Action;
    fn bitor(self, rhs: Action) -> Action {
        self.union(rhs)
    }
}

/// A kind of change a plugin registers for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterEvent {
    /// What changed. A registration for [`Resource::AssignedPod`] also
    /// covers the pending pod's own updates (kube-scheduler's `Pod`).
    pub resource: Resource,
    /// How.
    pub action: Action,
}

impl ClusterEvent {
    /// Every kind of change (the default of a plugin that says nothing).
    pub const ALL: &'static [ClusterEvent] = &[
        ClusterEvent {
            resource: Resource::Node,
            action: Action::ALL,
        },
        ClusterEvent {
            resource: Resource::AssignedPod,
            action: Action::ALL,
        },
    ];

    /// Whether this registration covers an incoming change
    /// (kube-scheduler's `MatchClusterEvents`): same resource, a common bit,
    /// and no bit the registration lacks.
    pub fn matches(&self, resource: Resource, action: Action) -> bool {
        let same = self.resource == resource
            || (self.resource == Resource::AssignedPod && resource == Resource::UnscheduledPod);
        same && self.action.intersects(action) && self.action.contains(action)
    }
}

impl std::fmt::Display for ClusterEvent {
    /// kube-scheduler's names: `Pod/Add|UpdatePodLabel`, `Node/Update`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let resource = match self.resource {
            Resource::Node => "Node",
            Resource::AssignedPod => "Pod",
            Resource::UnscheduledPod => "UnscheduledPod",
            Resource::Namespace => "Namespace",
            Resource::PersistentVolumeClaim => "PersistentVolumeClaim",
            Resource::PersistentVolume => "PersistentVolume",
            Resource::StorageClass => "StorageClass",
            Resource::CsiNode => "CSINode",
            Resource::DeviceClass => "DeviceClass",
            Resource::ResourceSlice => "ResourceSlice",
            Resource::ResourceClaim => "ResourceClaim",
            Resource::Metric => "Metric",
        };
        let mut names: Vec<&str> = Vec::new();
        let mut rest = self.action;
        for (bits, name) in [
            (Action::ALL, "All"),
            (Action::UPDATE, "Update"),
            (Action::ADD, "Add"),
            (Action::DELETE, "Delete"),
            (Action::UPDATE_NODE_ALLOCATABLE, "UpdateNodeAllocatable"),
            (Action::UPDATE_NODE_LABEL, "UpdateNodeLabel"),
            (Action::UPDATE_NODE_TAINT, "UpdateNodeTaint"),
            (Action::UPDATE_NODE_CONDITION, "UpdateNodeCondition"),
            (Action::UPDATE_NODE_ANNOTATION, "UpdateNodeAnnotation"),
            (Action::UPDATE_POD_LABEL, "UpdatePodLabel"),
            (Action::UPDATE_POD_SCALE_DOWN, "UpdatePodScaleDown"),
            (Action::UPDATE_POD_TOLERATION, "UpdatePodToleration"),
        ] {
            if rest.contains(bits) && !bits.is_empty() {
                names.push(name);
                rest = Action(rest.0 & !bits.0);
            }
        }
        if names.is_empty() {
            names.push("None");
        }
        write!(f, "{resource}/{}", names.join("|"))
    }
}

/// A change to the cluster, with the objects it concerns.
#[derive(Debug, Clone, Copy)]
pub enum Change<'a> {
    /// A node appeared.
    NodeAdded(&'a Arc<NodeData>),
    /// A node changed; `action` says how.
    NodeUpdated {
        /// Before.
        old: &'a Arc<NodeData>,
        /// After.
        new: &'a Arc<NodeData>,
        /// What changed.
        action: Action,
    },
    /// A pod started using a node (bound by another actor, or assumed by
    /// this scheduler).
    AssignedPodAdded(&'a PodInfo),
    /// A bound or assumed pod stopped using its node (deleted, terminated,
    /// its binding failed).
    AssignedPodDeleted(&'a PodInfo),
    /// A bound pod's labels changed.
    AssignedPodRelabelled {
        /// Before.
        old: &'a PodInfo,
        /// After.
        new: &'a PodInfo,
    },
    /// A namespace appeared or its labels changed (an update of the
    /// namespace, whichever it was).
    NamespaceChanged {
        /// Its name.
        name: &'a str,
    },
    /// A bound pod now requests less.
    AssignedPodScaledDown {
        /// Before.
        old: &'a PodInfo,
        /// After.
        new: &'a PodInfo,
    },
    /// A storage object was added (`Action::ADD`), changed
    /// (`Action::UPDATE`) or deleted (`Action::DELETE`).
    StorageChanged {
        /// Its kind.
        kind: crate::storage::StorageKind,
        /// `namespace/name` of a claim, the name of the others (empty: some
        /// object of the kind).
        key: &'a str,
        /// How.
        action: Action,
    },
    /// A metric source's values were refreshed.
    MetricsRefreshed {
        /// The source's name.
        source: &'a str,
    },
    /// The pending pod itself changed (its spec or labels, not its status).
    PodUpdated {
        /// Before.
        old: &'a PodInfo,
        /// After.
        new: &'a PodInfo,
        /// What changed.
        action: Action,
    },
}

impl Change<'_> {
    /// The resource and action, for matching registrations.
    pub fn event(&self) -> (Resource, Action) {
        match self {
            Change::NodeAdded(_) => (Resource::Node, Action::ADD),
            Change::NodeUpdated { action, .. } => (Resource::Node, *action),
            Change::AssignedPodAdded(_) => (Resource::AssignedPod, Action::ADD),
            Change::AssignedPodDeleted(_) => (Resource::AssignedPod, Action::DELETE),
            Change::AssignedPodRelabelled { .. } => (Resource::AssignedPod, Action::UPDATE_POD_LABEL),
            Change::NamespaceChanged { .. } => (Resource::Namespace, Action::UPDATE),
            Change::AssignedPodScaledDown { .. } => (Resource::AssignedPod, Action::UPDATE_POD_SCALE_DOWN),
            Change::PodUpdated { action, .. } => (Resource::UnscheduledPod, *action),
            Change::StorageChanged { kind, action, .. } => (Resource::of_storage(*kind), *action),
            Change::MetricsRefreshed { .. } => (Resource::Metric, Action::UPDATE),
        }
    }
}

/// A plugin's verdict on a change, for a pod it rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueingHint {
    /// The change may make the pod schedulable: retry it.
    Queue,
    /// The change cannot help this pod.
    Skip,
}

/// What changed between two versions of a node (kube-scheduler's
/// `NodeSchedulingPropertiesChange`); [`Action::NONE`] for a heartbeat.
pub fn node_change(old: &NodeData, new: &NodeData) -> Action {
    let mut a = Action::NONE;
    if old.unschedulable && !new.unschedulable {
        a = a | Action::UPDATE_NODE_TAINT;
    }
    if old.allocatable != new.allocatable {
        a = a | Action::UPDATE_NODE_ALLOCATABLE;
    }
    if old.labels != new.labels {
        a = a | Action::UPDATE_NODE_LABEL;
    }
    if old.taints != new.taints {
        a = a | Action::UPDATE_NODE_TAINT;
    }
    let conditions = |n: &NodeData| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = n
            .object
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .map(|c| (c.type_.clone(), c.status.clone()))
            .collect();
        v.sort();
        v
    };
    if conditions(old) != conditions(new) {
        a = a | Action::UPDATE_NODE_CONDITION;
    }
    if old.object.metadata.annotations != new.object.metadata.annotations {
        a = a | Action::UPDATE_NODE_ANNOTATION;
    }
    a
}

/// Whether a bound pod now requests less of some resource than before.
pub fn scaled_down(old: &PodInfo, new: &PodInfo) -> bool {
    let (o, n) = (&old.requests.requests, &new.requests.requests);
    n.milli_cpu < o.milli_cpu
        || n.memory < o.memory
        || n.ephemeral_storage < o.ephemeral_storage
        || o.scalar.iter().any(|(k, v)| n.scalar_get(k) < *v)
}

/// What changed in a pending pod that may matter to scheduling, or `None`
/// when only its status (or resourceVersion, managedFields) changed, as
/// kube-scheduler's `isPodUpdated` judges it.
pub fn pod_change(old: &PodInfo, new: &PodInfo) -> Option<Action> {
    if old.object.json() == new.object.json() {
        return None;
    }
    // Pending pods' objects are kept packed; an update is rare enough to
    // read both again.
    let (o, n) = (&old.object.pod(), &new.object.pod());
    let meta_same = o.metadata.labels == n.metadata.labels
        && o.metadata.annotations == n.metadata.annotations
        && o.metadata.deletion_timestamp == n.metadata.deletion_timestamp
        && o.metadata.owner_references == n.metadata.owner_references
        && o.metadata.finalizers == n.metadata.finalizers;
    if meta_same && o.spec == n.spec {
        return None;
    }
    let mut a = Action::NONE;
    if o.metadata.labels != n.metadata.labels {
        a = a | Action::UPDATE_POD_LABEL;
    }
    if scaled_down(old, new) {
        a = a | Action::UPDATE_POD_SCALE_DOWN;
    }
    if old.tolerations.len() != new.tolerations.len() {
        a = a | Action::UPDATE_POD_TOLERATION;
    }
    Some(if a.is_empty() { Action::UPDATE } else { a })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_print_as_kube_scheduler_names_them() {
        let e = |resource, action| ClusterEvent { resource, action }.to_string();
        assert_eq!(
            e(Resource::AssignedPod, Action::ADD | Action::UPDATE_POD_LABEL),
            "Pod/Add|UpdatePodLabel"
        );
        assert_eq!(e(Resource::Node, Action::ALL), "Node/All");
        assert_eq!(
            e(Resource::Namespace, Action::UPDATE | Action::ADD),
            "Namespace/Update|Add"
        );
        assert_eq!(e(Resource::Node, Action::NONE), "Node/None");
    }

    /// A pending pod's update is judged on its packed object as
    /// kube-scheduler's `isPodUpdated` judges it: status and
    /// resourceVersion alone are no change.
    #[test]
    fn pod_updates_are_judged_on_the_packed_object() {
        let info = |v: serde_json::Value| PodInfo::from_pod(&serde_json::from_value(v).unwrap()).unwrap();
        let base = serde_json::json!({
            "metadata": {"name": "p", "namespace": "default", "resourceVersion": "1", "labels": {"app": "a"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
        });
        let old = info(base.clone());
        assert_eq!(pod_change(&old, &info(base.clone())), None);
        let mut status = base.clone();
        status["metadata"]["resourceVersion"] = "2".into();
        status["status"] = serde_json::json!({"conditions": [{"type": "PodScheduled", "status": "False"}]});
        assert_eq!(pod_change(&old, &info(status)), None);
        let mut relabelled = base.clone();
        relabelled["metadata"]["labels"]["app"] = "b".into();
        assert_eq!(pod_change(&old, &info(relabelled)), Some(Action::UPDATE_POD_LABEL));
        let mut smaller = base;
        smaller["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "500m".into();
        assert_eq!(pod_change(&old, &info(smaller)), Some(Action::UPDATE_POD_SCALE_DOWN));
    }
}
