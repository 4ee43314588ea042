//! The workloads that select pods (Services, ReplicationControllers,
//! ReplicaSets, StatefulSets), kept by their selectors only: PodTopologySpread
//! derives the selector of its default constraints from them, as
//! kube-scheduler's `helper.DefaultSelector` does.

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
}

impl WorkloadKind {
    /// The kind of an `apiVersion` and `kind`, if one of these.
    pub fn of(api_version: &str, kind: &str) -> Option<Self> {
        match (api_version, kind) {
            ("v1", "Service") => Some(Self::Service),
            ("v1", "ReplicationController") => Some(Self::ReplicationController),
            ("apps/v1", "ReplicaSet") => Some(Self::ReplicaSet),
            ("apps/v1", "StatefulSet") => Some(Self::StatefulSet),
            _ => None,
        }
    }
}

/// A workload's selector, as default spreading reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkloadSelector {
    /// A map of labels (Services, ReplicationControllers); `None` for a
    /// Service without a selector, which selects nothing.
    Labels(Option<BTreeMap<String, String>>),
    /// A label selector (ReplicaSets, StatefulSets).
    Selector(LabelSelector),
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
            WorkloadKind::ReplicaSet | WorkloadKind::StatefulSet => {
                let parsed = selector
                    .map(|s| serde_json::from_value(s.clone()))
                    .transpose()
                    .map_err(|e| ModelError::new(&object, "spec.selector", e))?;
                WorkloadSelector::Selector(LabelSelector::parse(parsed.as_ref(), &object, "spec.selector")?)
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
        } else {
            self.controllers.remove(&(kind, namespace.to_owned(), name.to_owned()));
        }
    }

    /// Every workload key, for dropping what a relist no longer has.
    pub fn keys(&self) -> Vec<(WorkloadKind, String, String)> {
        let mut out: Vec<(WorkloadKind, String, String)> = self.controllers.keys().cloned().collect();
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
        if let Some((api_version, kind, name)) = &pod.controller
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
