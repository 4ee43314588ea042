//! The host side of the contract: bindings generated from `wit/`, and the
//! read-only views of the pod and the node batch a plugin call receives.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use wasmsched_core::node::TaintEffect;
use wasmsched_core::resources::Resources;
use wasmsched_core::{NodeInfo, PodInfo};
use wasmtime::component::Resource;
use wasmtime::{ResourceLimiter, StoreLimits, format_err};

wasmtime::component::bindgen!({
    world: "scheduler-plugin",
    path: "../../wit",
    imports: { default: trappable },
    with: {
        "wasmsched:plugin/cluster.pod": PodHandle,
        "wasmsched:plugin/cluster.nodes": NodesHandle,
    },
});

use wasmsched::plugin::cluster::{self, Condition, Image, Quantity, Taint, Toleration};
use wasmsched::plugin::host::{self, Level};

/// The type behind `resource pod`: the pod of the current call lives in the
/// store's [`HostState`], so the handle carries nothing.
pub struct PodHandle;

/// The type behind `resource nodes`: the batch of the current call lives in
/// the store's [`HostState`].
pub struct NodesHandle;

/// The store's limits, plus the linear memory its instance holds (what
/// the pool looks at to retire an instance before it runs out).
pub struct Limiter {
    limits: StoreLimits,
    /// Size of the instance's largest linear memory, in bytes (the cap
    /// applies to each memory).
    pub(crate) memory_bytes: usize,
}

impl Limiter {
    pub(crate) fn new(limits: StoreLimits) -> Self {
        Self {
            limits,
            memory_bytes: 0,
        }
    }
}

impl ResourceLimiter for Limiter {
    fn memory_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let ok = self.limits.memory_growing(current, desired, maximum)?;
        if ok {
            self.memory_bytes = self.memory_bytes.max(desired);
        }
        Ok(ok)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.memory_grow_failed(error)
    }

    fn table_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

/// What a plugin's store holds: its limits and the data of the call in
/// progress.
pub struct HostState {
    pub(crate) limits: Limiter,
    pub(crate) plugin: Arc<str>,
    pub(crate) seed: u64,
    pub(crate) pod: Option<Arc<PodInfo>>,
    pub(crate) nodes: Vec<Arc<NodeInfo>>,
}

impl HostState {
    pub(crate) fn new(plugin: Arc<str>, limits: StoreLimits, seed: u64) -> Self {
        Self {
            limits: Limiter::new(limits),
            plugin,
            seed,
            pod: None,
            nodes: Vec::new(),
        }
    }

    fn pod(&self) -> wasmtime::Result<&PodInfo> {
        self.pod.as_deref().ok_or_else(|| format_err!("no pod in this call"))
    }

    fn node(&self, index: u32) -> wasmtime::Result<&NodeInfo> {
        self.nodes
            .get(index as usize)
            .map(|n| &**n)
            .ok_or_else(|| format_err!("node index {index} out of range (batch of {})", self.nodes.len()))
    }
}

fn pairs(map: Option<&std::collections::BTreeMap<String, String>>) -> Vec<(String, String)> {
    map.map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

fn quantities(r: &Resources) -> Vec<Quantity> {
    let mut out = Vec::with_capacity(4 + r.scalar.len());
    for (name, amount) in [
        ("cpu", r.milli_cpu),
        ("memory", r.memory),
        ("ephemeral-storage", r.ephemeral_storage),
        ("pods", r.pods),
    ] {
        if amount != 0 {
            out.push(Quantity {
                name: name.into(),
                amount,
            });
        }
    }
    out.extend(r.scalar.iter().filter(|(_, a)| *a != 0).map(|(n, a)| Quantity {
        name: n.clone(),
        amount: *a,
    }));
    out
}

/// What the pods on a node request of one resource (`pods`: how many).
fn requested(n: &NodeInfo, name: &str) -> i64 {
    if name == "pods" {
        n.usage.pods
    } else {
        n.usage.requested.get(name)
    }
}

fn annotation<'a>(n: &'a NodeInfo, key: &str) -> Option<&'a str> {
    n.node
        .object
        .metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// A decimal number as plugins read prices and weights from labels and
/// annotations.
fn number(v: &str) -> Option<f64> {
    v.trim().parse::<f64>().ok().filter(|f| f.is_finite())
}

fn pod_object(p: &PodInfo) -> &Pod {
    &p.object
}

fn node_object(n: &NodeInfo) -> &Node {
    &n.node.object
}

/// SplitMix64 finalizer over a running hash: a cheap, well-mixed,
/// reproducible number for a (seed, pod, node) triple.
fn mix(mut h: u64, bytes: &[u8]) -> u64 {
    for chunk in bytes.chunks(8) {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        h ^= u64::from_le_bytes(w);
        h = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
        h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        h ^= h >> 31;
    }
    h
}

impl cluster::Host for HostState {}

impl cluster::HostPod for HostState {
    fn name(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<String> {
        Ok(self.pod()?.name.clone())
    }

    fn namespace(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<String> {
        Ok(self.pod()?.namespace.clone())
    }

    fn uid(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<String> {
        Ok(self.pod()?.uid.clone())
    }

    fn label(&mut self, _: Resource<PodHandle>, key: String) -> wasmtime::Result<Option<String>> {
        Ok(pod_object(self.pod()?)
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(&key).cloned()))
    }

    fn labels(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<Vec<(String, String)>> {
        Ok(pairs(pod_object(self.pod()?).metadata.labels.as_ref()))
    }

    fn annotation(&mut self, _: Resource<PodHandle>, key: String) -> wasmtime::Result<Option<String>> {
        Ok(pod_object(self.pod()?)
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(&key).cloned()))
    }

    fn annotations(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<Vec<(String, String)>> {
        Ok(pairs(pod_object(self.pod()?).metadata.annotations.as_ref()))
    }

    fn request(&mut self, _: Resource<PodHandle>, name: String) -> wasmtime::Result<i64> {
        Ok(self.pod()?.requests.requests.get(&name))
    }

    fn requests(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<Vec<Quantity>> {
        Ok(quantities(&self.pod()?.requests.requests))
    }

    fn tolerations(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<Vec<Toleration>> {
        let spec = pod_object(self.pod()?).spec.as_ref();
        Ok(spec
            .and_then(|s| s.tolerations.as_ref())
            .map(|ts| {
                ts.iter()
                    .map(|t| Toleration {
                        key: t.key.clone().unwrap_or_default(),
                        operator: t.operator.clone().unwrap_or_else(|| "Equal".into()),
                        value: t.value.clone().unwrap_or_default(),
                        effect: t.effect.clone().unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    fn images(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<Vec<String>> {
        Ok(self.pod()?.images.clone())
    }

    fn node_selector(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<Vec<(String, String)>> {
        let spec = pod_object(self.pod()?).spec.as_ref();
        Ok(pairs(spec.and_then(|s| s.node_selector.as_ref())))
    }

    fn priority(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<i32> {
        Ok(self.pod()?.priority)
    }

    fn scheduler_name(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<String> {
        Ok(self.pod()?.scheduler_name.clone())
    }

    fn owner_kind(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<Option<String>> {
        Ok(pod_object(self.pod()?)
            .metadata
            .owner_references
            .as_ref()
            .and_then(|o| o.iter().find(|r| r.controller == Some(true)))
            .map(|r| r.kind.clone()))
    }

    fn json(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<String> {
        Ok(serde_json::to_string(pod_object(self.pod()?))?)
    }

    fn drop(&mut self, _: Resource<PodHandle>) -> wasmtime::Result<()> {
        Ok(())
    }
}

impl cluster::HostNodes for HostState {
    fn len(&mut self, _: Resource<NodesHandle>) -> wasmtime::Result<u32> {
        Ok(self.nodes.len() as u32)
    }

    fn name(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<String> {
        Ok(self.node(i)?.node.name.clone())
    }

    fn label(&mut self, _: Resource<NodesHandle>, i: u32, key: String) -> wasmtime::Result<Option<String>> {
        Ok(self.node(i)?.node.labels.get(&key).cloned())
    }

    fn labels(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<Vec<(String, String)>> {
        let mut l: Vec<(String, String)> = self
            .node(i)?
            .node
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        l.sort_unstable();
        Ok(l)
    }

    fn annotation(&mut self, _: Resource<NodesHandle>, i: u32, key: String) -> wasmtime::Result<Option<String>> {
        Ok(annotation(self.node(i)?, &key).map(str::to_owned))
    }

    fn annotations(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<Vec<(String, String)>> {
        Ok(pairs(node_object(self.node(i)?).metadata.annotations.as_ref()))
    }

    fn allocatable(&mut self, _: Resource<NodesHandle>, i: u32, name: String) -> wasmtime::Result<i64> {
        Ok(self.node(i)?.node.allocatable.get(&name))
    }

    fn allocatables(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<Vec<Quantity>> {
        Ok(quantities(&self.node(i)?.node.allocatable))
    }

    fn requested(&mut self, _: Resource<NodesHandle>, i: u32, name: String) -> wasmtime::Result<i64> {
        Ok(requested(self.node(i)?, &name))
    }

    fn requesteds(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<Vec<Quantity>> {
        let n = self.node(i)?;
        let mut r = n.usage.requested.clone();
        r.pods = n.usage.pods;
        Ok(quantities(&r))
    }

    fn pod_count(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<i64> {
        Ok(self.node(i)?.usage.pods)
    }

    fn unschedulable(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<bool> {
        Ok(self.node(i)?.node.unschedulable)
    }

    fn taints(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<Vec<Taint>> {
        Ok(self
            .node(i)?
            .node
            .taints
            .iter()
            .map(|t| Taint {
                key: t.key.clone(),
                value: t.value.clone(),
                effect: match t.effect {
                    TaintEffect::NoSchedule => "NoSchedule",
                    TaintEffect::PreferNoSchedule => "PreferNoSchedule",
                    TaintEffect::NoExecute => "NoExecute",
                }
                .into(),
            })
            .collect())
    }

    fn conditions(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<Vec<Condition>> {
        Ok(node_object(self.node(i)?)
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .map(|cs| {
                cs.iter()
                    .map(|c| Condition {
                        type_: c.type_.clone(),
                        status: c.status.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    fn image_size(&mut self, _: Resource<NodesHandle>, i: u32, name: String) -> wasmtime::Result<Option<i64>> {
        let n = self.node(i)?;
        Ok(n.node
            .images
            .get(&name)
            .or_else(|| n.node.images.get(&format!("{name}:latest")))
            .copied())
    }

    fn images(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<Vec<Image>> {
        Ok(node_object(self.node(i)?)
            .status
            .as_ref()
            .and_then(|s| s.images.as_ref())
            .map(|imgs| {
                imgs.iter()
                    .map(|im| Image {
                        names: im.names.clone().unwrap_or_default(),
                        size_bytes: im.size_bytes.unwrap_or(0),
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    fn random(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<u64> {
        let node = self.node(i)?.node.name.as_bytes();
        let pod = mix(mix(self.seed, self.pod()?.uid.as_bytes()), b"/");
        Ok(mix(pod, node))
    }

    fn json(&mut self, _: Resource<NodesHandle>, i: u32) -> wasmtime::Result<String> {
        Ok(serde_json::to_string(node_object(self.node(i)?))?)
    }

    fn names(&mut self, _: Resource<NodesHandle>) -> wasmtime::Result<Vec<String>> {
        Ok(self.nodes.iter().map(|n| n.node.name.clone()).collect())
    }

    fn label_values(&mut self, _: Resource<NodesHandle>, key: String) -> wasmtime::Result<Vec<Option<String>>> {
        Ok(self.nodes.iter().map(|n| n.node.labels.get(&key).cloned()).collect())
    }

    fn annotation_values(&mut self, _: Resource<NodesHandle>, key: String) -> wasmtime::Result<Vec<Option<String>>> {
        Ok(self
            .nodes
            .iter()
            .map(|n| annotation(n, &key).map(str::to_owned))
            .collect())
    }

    fn label_numbers(&mut self, _: Resource<NodesHandle>, key: String) -> wasmtime::Result<Vec<Option<f64>>> {
        Ok(self
            .nodes
            .iter()
            .map(|n| n.node.labels.get(&key).and_then(|v| number(v)))
            .collect())
    }

    fn annotation_numbers(&mut self, _: Resource<NodesHandle>, key: String) -> wasmtime::Result<Vec<Option<f64>>> {
        Ok(self
            .nodes
            .iter()
            .map(|n| annotation(n, &key).and_then(number))
            .collect())
    }

    fn allocatable_all(&mut self, _: Resource<NodesHandle>, name: String) -> wasmtime::Result<Vec<i64>> {
        Ok(self.nodes.iter().map(|n| n.node.allocatable.get(&name)).collect())
    }

    fn requested_all(&mut self, _: Resource<NodesHandle>, name: String) -> wasmtime::Result<Vec<i64>> {
        Ok(self.nodes.iter().map(|n| requested(n, &name)).collect())
    }

    fn image_bytes(&mut self, _: Resource<NodesHandle>, names: Vec<String>) -> wasmtime::Result<Vec<i64>> {
        let wanted: Vec<String> = names
            .iter()
            .map(|n| {
                if n.contains(':') || n.contains('@') {
                    n.clone()
                } else {
                    format!("{n}:latest")
                }
            })
            .collect();
        Ok(self
            .nodes
            .iter()
            .map(|n| wanted.iter().filter_map(|w| n.node.images.get(w)).sum())
            .collect())
    }

    fn randoms(&mut self, _: Resource<NodesHandle>) -> wasmtime::Result<Vec<u64>> {
        let pod = mix(mix(self.seed, self.pod()?.uid.as_bytes()), b"/");
        Ok(self.nodes.iter().map(|n| mix(pod, n.node.name.as_bytes())).collect())
    }

    fn drop(&mut self, _: Resource<NodesHandle>) -> wasmtime::Result<()> {
        Ok(())
    }
}

impl host::Host for HostState {
    fn log(&mut self, level: Level, message: String) -> wasmtime::Result<()> {
        let plugin = &*self.plugin;
        match level {
            Level::Trace => tracing::trace!(plugin, "{message}"),
            Level::Debug => tracing::debug!(plugin, "{message}"),
            Level::Info => tracing::info!(plugin, "{message}"),
            Level::Warn => tracing::warn!(plugin, "{message}"),
            Level::Error => tracing::error!(plugin, "{message}"),
        }
        Ok(())
    }
}
