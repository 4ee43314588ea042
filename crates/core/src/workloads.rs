//! The workloads that select pods (Services, ReplicationControllers,
//! ReplicaSets, StatefulSets), kept by their selectors only: PodTopologySpread
//! derives the selector of its default constraints from them, as
//! kube-scheduler's `helper.DefaultSelector` does. PodDisruptionBudgets,
//! which also select pods, are kept here for preemption.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde_json::Value;

use crate::ModelError;
use crate::node::Labels;
use crate::pod::PodInfo;
use crate::selector::{LabelSelector, Requirement};

/// The kinds that select pods for default spreading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WorkloadKind {
    /// `v1` Service (selects pods by its `spec.selector` map).
    Service,
    /// `v1` ReplicationController.
    ReplicationController,
    /// `apps/v1` ReplicaSet.
    ReplicaSet,
    /// `apps/v1` StatefulSet.
    StatefulSet,
    /// `policy/v1` PodDisruptionBudget (preemption prefers victims whose
    /// budget allows their disruption).
    PodDisruptionBudget,
}

impl WorkloadKind {
    /// The kind of an `apiVersion` and `kind`, if one of these.
    pub fn of(api_version: &str, kind: &str) -> Option<Self> {
        match (api_version, kind) {
            ("v1", "Service") => Some(Self::Service),
            ("v1", "ReplicationController") => Some(Self::ReplicationController),
            ("apps/v1", "ReplicaSet") => Some(Self::ReplicaSet),
            ("apps/v1", "StatefulSet") => Some(Self::StatefulSet),
            ("policy/v1", "PodDisruptionBudget") => Some(Self::PodDisruptionBudget),
            _ => None,
        }
    }

    /// Every kind (the daemon lists each before its first cycle).
    pub const ALL: [WorkloadKind; 5] = [
        Self::Service,
        Self::ReplicationController,
        Self::ReplicaSet,
        Self::StatefulSet,
        Self::PodDisruptionBudget,
    ];
}

/// A workload's selector, as default spreading reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkloadSelector {
    /// A map of labels (Services, ReplicationControllers); `None` for a
    /// Service without a selector, which selects nothing.
    Labels(Option<BTreeMap<String, String>>),
    /// A label selector (ReplicaSets, StatefulSets).
    Selector(LabelSelector),
    /// A PodDisruptionBudget's selector and status.
    Budget(Budget),
}

/// What preemption reads of a PodDisruptionBudget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    /// Namespace (a budget protects pods of its own namespace).
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `spec.selector`; an empty or absent one selects nothing.
    pub selector: LabelSelector,
    /// `status.disruptionsAllowed`.
    pub disruptions_allowed: i32,
    /// `status.disruptedPods` (names): disruptions the API server already
    /// counted, which do not count again.
    pub disrupted: Vec<String>,
}

impl Budget {
    /// Whether the budget protects `pod`.
    pub fn selects(&self, pod: &PodInfo) -> bool {
        self.namespace == pod.namespace
            && !self.selector.is_everything()
            && !self.selector.is_nothing()
            && self.selector.matches(&pod.labels)
    }
}

/// One workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    /// Kind.
    pub kind: WorkloadKind,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Its selector.
    pub selector: WorkloadSelector,
}

impl Workload {
    /// Reads a Service, ReplicationController, ReplicaSet or StatefulSet
    /// given as JSON; `Ok(None)` for other kinds.
    pub fn from_value(v: &Value) -> Result<Option<Self>, ModelError> {
        let s = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or_default();
        let Some(kind) = WorkloadKind::of(s("/apiVersion"), s("/kind")) else {
            return Ok(None);
        };
        let namespace = match s("/metadata/namespace") {
            "" => "default".to_owned(),
            ns => ns.to_owned(),
        };
        let name = s("/metadata/name").to_owned();
        let object = format!("{} {namespace}/{name}", s("/kind"));
        let selector = v.pointer("/spec/selector").filter(|s| !s.is_null());
        let selector = match kind {
            WorkloadKind::Service | WorkloadKind::ReplicationController => {
                let map = selector
                    .map(|s| serde_json::from_value::<BTreeMap<String, String>>(s.clone()))
                    .transpose()
                    .map_err(|e| ModelError::new(&object, "spec.selector", e))?;
                WorkloadSelector::Labels(map)
            }
            WorkloadKind::ReplicaSet | WorkloadKind::StatefulSet | WorkloadKind::PodDisruptionBudget => {
                let parsed = selector
                    .map(|s| serde_json::from_value(s.clone()))
                    .transpose()
                    .map_err(|e| ModelError::new(&object, "spec.selector", e))?;
                let selector = LabelSelector::parse(parsed.as_ref(), &object, "spec.selector")?;
                if kind != WorkloadKind::PodDisruptionBudget {
                    WorkloadSelector::Selector(selector)
                } else {
                    let allowed = v.pointer("/status/disruptionsAllowed").unwrap_or(&Value::Null);
                    let disruptions_allowed = match allowed {
                        Value::Null => 0,
                        a => a.as_i64().and_then(|a| i32::try_from(a).ok()).ok_or_else(|| {
                            ModelError::new(&object, "status.disruptionsAllowed", "is not a 32-bit integer")
                        })?,
                    };
                    let disrupted = v
                        .pointer("/status/disruptedPods")
                        .and_then(Value::as_object)
                        .map(|m| m.keys().cloned().collect())
                        .unwrap_or_default();
                    WorkloadSelector::Budget(Budget {
                        namespace: namespace.clone(),
                        name: name.clone(),
                        selector,
                        disruptions_allowed,
                        disrupted,
                    })
                }
            }
        };
        Ok(Some(Workload {
            kind,
            namespace,
            name,
            selector,
        }))
    }
}

/// The workloads of a cluster, by namespace.
#[derive(Debug, Clone, Default)]
pub struct Workloads {
    services: FxHashMap<String, BTreeMap<String, Option<BTreeMap<String, String>>>>,
    controllers: FxHashMap<(WorkloadKind, String, String), WorkloadSelector>,
    budgets: std::collections::BTreeMap<(String, String), Budget>,
}

fn map_matches(map: &BTreeMap<String, String>, labels: &Labels) -> bool {
    map.iter().all(|(k, v)| labels.get(k) == Some(v))
}

impl Workloads {
    /// Adds or replaces a workload.
    pub fn upsert(&mut self, w: Workload) {
        match (w.kind, w.selector) {
            (WorkloadKind::Service, WorkloadSelector::Labels(map)) => {
                self.services.entry(w.namespace).or_default().insert(w.name, map);
            }
            (_, WorkloadSelector::Budget(b)) => {
                self.budgets.insert((w.namespace, w.name), b);
            }
            (kind, selector) => {
                self.controllers.insert((kind, w.namespace, w.name), selector);
            }
        }
    }

    /// Removes a workload.
    pub fn remove(&mut self, kind: WorkloadKind, namespace: &str, name: &str) {
        if kind == WorkloadKind::Service {
            if let Some(m) = self.services.get_mut(namespace) {
                m.remove(name);
            }
        } else if kind == WorkloadKind::PodDisruptionBudget {
            self.budgets.remove(&(namespace.to_owned(), name.to_owned()));
        } else {
            self.controllers.remove(&(kind, namespace.to_owned(), name.to_owned()));
        }
    }

    /// Every PodDisruptionBudget.
    pub fn budgets(&self) -> impl Iterator<Item = &Budget> {
        self.budgets.values()
    }

    /// Every workload key, for dropping what a relist no longer has.
    pub fn keys(&self) -> Vec<(WorkloadKind, String, String)> {
        let mut out: Vec<(WorkloadKind, String, String)> = self.controllers.keys().cloned().collect();
        out.extend(
            self.budgets
                .keys()
                .map(|(ns, n)| (WorkloadKind::PodDisruptionBudget, ns.clone(), n.clone())),
        );
        for (ns, m) in &self.services {
            out.extend(m.keys().map(|n| (WorkloadKind::Service, ns.clone(), n.clone())));
        }
        out
    }

    /// The selector of the pods `pod` is spread with by default
    /// (kube-scheduler's `DefaultSelector`): the selectors of the Services
    /// of its namespace that select it, merged, and of its controller
    /// (ReplicationController, ReplicaSet or StatefulSet). `None` when that
    /// selects by nothing: then no default constraint applies.
    pub fn default_selector(&self, pod: &PodInfo) -> Option<LabelSelector> {
        let mut set: BTreeMap<String, String> = BTreeMap::new();
        for map in self.services.get(&pod.namespace).into_iter().flat_map(|m| m.values()) {
            if let Some(map) = map
                && map_matches(map, &pod.labels)
            {
                set.extend(map.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        let mut extra: Vec<Requirement> = Vec::new();
        if let Some((api_version, kind, name)) = pod.controller.as_deref()
            && let Some(k) = WorkloadKind::of(api_version, kind)
            && k != WorkloadKind::Service
        {
            match self.controllers.get(&(k, pod.namespace.clone(), name.clone())) {
                Some(WorkloadSelector::Labels(Some(map))) => set.extend(map.clone()),
                Some(WorkloadSelector::Selector(s)) => extra.extend(s.requirements().into_iter().flatten().cloned()),
                _ => {}
            }
        }
        let mut selector = LabelSelector::everything();
        for (k, v) in &set {
            selector.add(Requirement::equals(k, v));
        }
        for r in extra {
            selector.add(r);
        }
        (!selector.is_everything()).then_some(selector)
    }
}
