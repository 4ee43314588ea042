//! Built-in plugins, one module each, with kube-scheduler's names and
//! semantics, and the [`Registry`] that names every plugin a profile can use.

pub mod default_preemption;
pub mod dynamic_resources;
pub mod gang_scheduling;
pub mod image_locality;
pub mod inter_pod_affinity;
pub mod node_affinity;
pub mod node_name;
pub mod node_ports;
pub mod node_resources_balanced_allocation;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod node_volume_limits;
pub mod pod_topology_spread;
pub mod taint_toleration;
pub mod volume_binding;
pub mod volume_restrictions;
pub mod volume_zone;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::de::DeserializeOwned;

use crate::framework::Plugin;

/// Plugin names, as kube-scheduler spells them.
pub mod names {
    /// NodeName.
    pub const NODE_NAME: &str = "NodeName";
    /// NodeUnschedulable.
    pub const NODE_UNSCHEDULABLE: &str = "NodeUnschedulable";
    /// NodeResourcesFit.
    pub const NODE_RESOURCES_FIT: &str = "NodeResourcesFit";
    /// NodeResourcesBalancedAllocation.
    pub const NODE_RESOURCES_BALANCED_ALLOCATION: &str = "NodeResourcesBalancedAllocation";
    /// TaintToleration.
    pub const TAINT_TOLERATION: &str = "TaintToleration";
    /// NodeAffinity.
    pub const NODE_AFFINITY: &str = "NodeAffinity";
    /// NodePorts.
    pub const NODE_PORTS: &str = "NodePorts";
    /// ImageLocality.
    pub const IMAGE_LOCALITY: &str = "ImageLocality";
    /// InterPodAffinity.
    pub const INTER_POD_AFFINITY: &str = "InterPodAffinity";
    /// PodTopologySpread.
    pub const POD_TOPOLOGY_SPREAD: &str = "PodTopologySpread";
    /// DefaultPreemption.
    pub const DEFAULT_PREEMPTION: &str = "DefaultPreemption";
    /// VolumeRestrictions.
    pub const VOLUME_RESTRICTIONS: &str = "VolumeRestrictions";
    /// NodeVolumeLimits.
    pub const NODE_VOLUME_LIMITS: &str = "NodeVolumeLimits";
    /// VolumeBinding.
    pub const VOLUME_BINDING: &str = "VolumeBinding";
    /// VolumeZone.
    pub const VOLUME_ZONE: &str = "VolumeZone";
    /// DynamicResources.
    pub const DYNAMIC_RESOURCES: &str = super::dynamic_resources::NAME;
    /// GangScheduling.
    pub const GANG_SCHEDULING: &str = super::gang_scheduling::NAME;
}

/// kube-scheduler's default `multiPoint` plugins that wasmsched implements,
/// in kube-scheduler's order (which is the order filters run in), with their
/// default score weights.
pub const DEFAULT_PLUGINS: &[(&str, i64)] = &[
    (names::NODE_UNSCHEDULABLE, 0),
    (names::NODE_NAME, 0),
    (names::TAINT_TOLERATION, 3),
    (names::NODE_AFFINITY, 2),
    (names::NODE_PORTS, 0),
    (names::NODE_RESOURCES_FIT, 1),
    (names::VOLUME_RESTRICTIONS, 0),
    (names::NODE_VOLUME_LIMITS, 0),
    (names::VOLUME_BINDING, 0),
    (names::VOLUME_ZONE, 0),
    (names::POD_TOPOLOGY_SPREAD, 2),
    (names::INTER_POD_AFFINITY, 2),
    (names::DYNAMIC_RESOURCES, 2),
    (names::NODE_RESOURCES_BALANCED_ALLOCATION, 1),
    (names::IMAGE_LOCALITY, 1),
    (names::DEFAULT_PREEMPTION, 0),
    // v1.36 appends it when `GangScheduling` is on; wasmsched has it on.
    (names::GANG_SCHEDULING, 0),
];

/// kube-scheduler plugins that wasmsched does not implement. A configuration
/// may disable them (configs written for kube-scheduler often do); enabling
/// one is an error rather than a silent no-op. `PrioritySort` and
/// `DefaultBinder` are what wasmsched always does.
pub const KNOWN_UNSUPPORTED: &[&str] = &[
    "SchedulingGates",
    "PrioritySort",
    "DefaultBinder",
    // v1.36's TopologyAwareWorkloadScheduling (PodGroups' topology
    // constraints, which wasmsched refuses by field).
    "TopologyPlacementGenerator",
    "PodGroupPodsCount",
];

/// Builds a plugin from its `pluginConfig` args (`None` when none are given).
pub type Factory = Arc<dyn Fn(Option<&serde_json::Value>) -> Result<Arc<dyn Plugin>, String> + Send + Sync>;

/// Every plugin a profile can enable, by name. Starts with the built-ins;
/// the WebAssembly host registers loaded plugins here too.
#[derive(Clone)]
pub struct Registry {
    factories: BTreeMap<String, Factory>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.factories.keys()).finish()
    }
}

/// Parses plugin args strictly (unknown fields are errors), defaulting when
/// absent.
pub fn parse_args<T: DeserializeOwned + Default>(args: Option<&serde_json::Value>) -> Result<T, String> {
    match args {
        None | Some(serde_json::Value::Null) => Ok(T::default()),
        Some(v) => serde_path_to_error::deserialize(v).map_err(crate::path_error),
    }
}

fn no_args<P: Plugin + Default + 'static>(name: &'static str) -> Factory {
    Arc::new(move |args| {
        match args {
            None | Some(serde_json::Value::Null) => {}
            Some(serde_json::Value::Object(m))
                if m.is_empty() || m.keys().all(|k| k == "apiVersion" || k == "kind") => {}
            Some(_) => return Err(format!("{name} takes no args")),
        }
        Ok(Arc::new(P::default()) as Arc<dyn Plugin>)
    })
}

impl Registry {
    /// The built-in plugins.
    pub fn builtin() -> Self {
        let mut r = Registry {
            factories: BTreeMap::new(),
        };
        r.register(names::NODE_NAME, no_args::<node_name::NodeName>(names::NODE_NAME));
        r.register(
            names::NODE_UNSCHEDULABLE,
            no_args::<node_unschedulable::NodeUnschedulable>(names::NODE_UNSCHEDULABLE),
        );
        r.register(
            names::TAINT_TOLERATION,
            no_args::<taint_toleration::TaintToleration>(names::TAINT_TOLERATION),
        );
        r.register(names::NODE_PORTS, no_args::<node_ports::NodePorts>(names::NODE_PORTS));
        r.register(
            names::IMAGE_LOCALITY,
            no_args::<image_locality::ImageLocality>(names::IMAGE_LOCALITY),
        );
        r.register(
            names::NODE_AFFINITY,
            Arc::new(|a| Ok(Arc::new(node_affinity::NodeAffinity::new(parse_args(a)?)?) as _)),
        );
        r.register(
            names::VOLUME_RESTRICTIONS,
            no_args::<volume_restrictions::VolumeRestrictions>(names::VOLUME_RESTRICTIONS),
        );
        r.register(
            names::NODE_VOLUME_LIMITS,
            no_args::<node_volume_limits::NodeVolumeLimits>(names::NODE_VOLUME_LIMITS),
        );
        r.register(
            names::VOLUME_ZONE,
            no_args::<volume_zone::VolumeZone>(names::VOLUME_ZONE),
        );
        r.register(
            names::VOLUME_BINDING,
            Arc::new(|a| Ok(Arc::new(volume_binding::VolumeBinding::new(parse_args(a)?)?) as _)),
        );
        r.register(
            names::DYNAMIC_RESOURCES,
            Arc::new(|a| Ok(Arc::new(dynamic_resources::DynamicResources::new(parse_args(a)?)?) as _)),
        );
        r.register(
            names::GANG_SCHEDULING,
            no_args::<gang_scheduling::GangScheduling>(names::GANG_SCHEDULING),
        );
        r.register(
            names::DEFAULT_PREEMPTION,
            Arc::new(|a| Ok(Arc::new(default_preemption::DefaultPreemption::new(parse_args(a)?)?) as _)),
        );
        r.register(
            names::POD_TOPOLOGY_SPREAD,
            Arc::new(|a| Ok(Arc::new(pod_topology_spread::PodTopologySpread::new(parse_args(a)?)?) as _)),
        );
        r.register(
            names::INTER_POD_AFFINITY,
            Arc::new(|a| Ok(Arc::new(inter_pod_affinity::InterPodAffinity::new(parse_args(a)?)?) as _)),
        );
        r.register(
            names::NODE_RESOURCES_FIT,
            Arc::new(|a| Ok(Arc::new(node_resources_fit::NodeResourcesFit::new(parse_args(a)?)?) as _)),
        );
        r.register(
            names::NODE_RESOURCES_BALANCED_ALLOCATION,
            Arc::new(|a| {
                Ok(Arc::new(node_resources_balanced_allocation::BalancedAllocation::new(
                    parse_args(a)?,
                )?) as _)
            }),
        );
        r
    }

    /// Registers (or replaces) a plugin factory.
    pub fn register(&mut self, name: impl Into<String>, factory: Factory) {
        self.factories.insert(name.into(), factory);
    }

    /// The factory for `name`.
    pub fn get(&self, name: &str) -> Option<&Factory> {
        self.factories.get(name)
    }

    /// Every registered name.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.factories.keys().map(String::as_str)
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Builders for table-driven plugin tests.
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::{Node, Pod};
    use serde_json::{Value, json};

    use crate::node::{NodeData, NodeInfo};
    use crate::pod::PodInfo;

    /// A pod from a JSON `spec`.
    pub fn pod(spec: Value) -> PodInfo {
        let p: Pod =
            serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "default"}, "spec": spec})).unwrap();
        PodInfo::from_pod(&p).unwrap()
    }

    /// A pod with one container requesting `cpu` and `mem`.
    pub fn pod_req(cpu: &str, mem: &str) -> PodInfo {
        pod(json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": mem}}}]}))
    }

    /// A node from JSON `metadata`, `spec`, `status` parts.
    pub fn node(name: &str, labels: Value, spec: Value, allocatable: Value) -> NodeInfo {
        let n: Node = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels},
            "spec": spec,
            "status": {"allocatable": allocatable}
        }))
        .unwrap();
        NodeInfo {
            node: Arc::new(NodeData::from_node(&n).unwrap()),
            usage: Default::default(),
        }
    }

    /// What `plugin`'s batch Filter rejects of `nodes` (with their rows,
    /// as a cycle passes them).
    pub fn filter_batch(
        plugin: &dyn crate::framework::Plugin,
        state: &crate::framework::CycleState,
        pod: &PodInfo,
        nodes: &[&Arc<NodeInfo>],
    ) -> Vec<(usize, crate::framework::Status)> {
        let rows: Vec<crate::node::NodeRow> = nodes.iter().map(|n| crate::node::NodeRow::of(n)).collect();
        let rows: Vec<&crate::node::NodeRow> = rows.iter().collect();
        let mut rejected = Vec::new();
        plugin.filter_nodes(state, pod, nodes, &rows, &mut rejected);
        rejected
    }

    /// A node with `cpu`, `mem` and 110 pods allocatable.
    pub fn node_alloc(name: &str, cpu: &str, mem: &str) -> NodeInfo {
        node(
            name,
            json!({}),
            json!({}),
            json!({"cpu": cpu, "memory": mem, "pods": "110"}),
        )
    }

    /// A pod `name` in `ns` with `labels`, bound to `node` (empty:
    /// pending), one container, and the fields of `spec` added to its spec.
    pub fn spec_pod(name: &str, ns: &str, labels: Value, node: &str, spec: Value) -> Pod {
        let mut s = json!({"containers": [{"name": "c"}]});
        if !node.is_empty() {
            s["nodeName"] = json!(node);
        }
        if let Value::Object(m) = spec {
            for (k, v) in m {
                s[k] = v;
            }
        }
        serde_json::from_value(
            json!({"metadata": {"name": name, "namespace": ns, "uid": name, "labels": labels}, "spec": s}),
        )
        .unwrap()
    }

    /// A snapshot of nodes (`name`, labels, spec) with `pods` on them and
    /// namespaces with their labels, built through the cache.
    pub fn cluster(
        nodes: &[(&str, Value, Value)],
        pods: &[Pod],
        namespaces: &[(&str, Value)],
    ) -> crate::cache::Snapshot {
        let mut c = crate::cache::Cache::new();
        for (name, labels, spec) in nodes {
            let n: Node =
                serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "spec": spec})).unwrap();
            c.upsert_node(NodeData::from_node(&n).unwrap());
        }
        for p in pods {
            c.upsert_pod(Arc::new(PodInfo::from_pod(p).unwrap()));
        }
        for (ns, labels) in namespaces {
            c.upsert_namespace(ns, serde_json::from_value(labels.clone()).unwrap());
        }
        c.snapshot()
    }

    /// Asserts that `plugin` scores a batch as it scores each node alone,
    /// for each of `pods`, on nodes empty, used, without memory and past
    /// their CPU.
    pub fn assert_batch_scores_as_single(plugin: &dyn crate::framework::Plugin, pods: &[PodInfo]) {
        let st = crate::framework::CycleState::default();
        let nodes: Vec<Arc<NodeInfo>> = [
            ("4", "8Gi", "0", "0"),
            ("4", "8Gi", "3", "1Gi"),
            ("2", "0", "1", "0"),
            ("64", "1Ti", "70", "10Gi"),
        ]
        .iter()
        .map(|(c, m, uc, um)| Arc::new(with_pod(node_alloc("n", c, m), &pod_req(uc, um))))
        .collect();
        let refs: Vec<&Arc<NodeInfo>> = nodes.iter().collect();
        let rows: Vec<crate::node::NodeRow> = nodes.iter().map(|n| crate::node::NodeRow::of(n)).collect();
        let rows: Vec<&crate::node::NodeRow> = rows.iter().collect();
        for pd in pods {
            let mut out = vec![0; nodes.len()];
            plugin.score_nodes(&st, pd, &refs, &rows, &mut out).unwrap();
            let each: Vec<i64> = nodes.iter().map(|n| plugin.score(&st, pd, n).unwrap()).collect();
            assert_eq!(out, each, "{}", pd.name);
        }
    }

    /// Accounts `pod` on `node` as the cache would.
    pub fn with_pod(mut node: NodeInfo, pod: &PodInfo) -> NodeInfo {
        let u = &mut node.usage;
        u.requested.add(&pod.requests.requests);
        u.non_zero_milli_cpu += pod.requests.non_zero_milli_cpu;
        u.non_zero_memory += pod.requests.non_zero_memory;
        u.pods += 1;
        u.ports.extend(pod.host_ports.iter().cloned());
        node
    }
}
