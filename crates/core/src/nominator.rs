//! Pods nominated to nodes (kube-scheduler's `PodNominator`): a pod whose
//! preemption made room on a node waits for its victims to go, and the room
//! is held for it: pods of lower or equal priority are filtered as if it
//! were already there. Also the victims whose eviction is under way, so a
//! preemptor does not preempt again while they terminate.

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::pod::{PodInfo, PodKey};

/// Nominated pods by node, and victims being evicted.
#[derive(Debug, Clone, Default)]
pub struct Nominator {
    by_node: FxHashMap<String, Vec<Arc<PodInfo>>>,
    node_of: FxHashMap<PodKey, String>,
    evicting: FxHashSet<String>,
}

impl Nominator {
    /// Nominates `pod` to `node` (replacing an earlier nomination).
    pub fn nominate(&mut self, pod: Arc<PodInfo>, node: &str) {
        self.remove(&pod.key);
        self.node_of.insert(pod.key.clone(), node.to_owned());
        self.by_node.entry(node.to_owned()).or_default().push(pod);
    }

    /// Keeps the latest version of a nominated pod (its priority and
    /// requests are what the nomination holds room for).
    pub fn refresh(&mut self, pod: &Arc<PodInfo>) {
        if let Some(node) = self.node_of.get(&pod.key)
            && let Some(slot) = self
                .by_node
                .get_mut(node)
                .and_then(|v| v.iter_mut().find(|p| p.key == pod.key))
        {
            *slot = pod.clone();
        }
    }

    /// Drops the nomination of the pod `key`; returns its node.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        let node = self.node_of.remove(key)?;
        if let Some(v) = self.by_node.get_mut(&node) {
            v.retain(|p| p.key != key);
            if v.is_empty() {
                self.by_node.remove(&node);
            }
        }
        Some(node)
    }

    /// The pods nominated to `node`.
    pub fn on_node(&self, node: &str) -> &[Arc<PodInfo>] {
        self.by_node.get(node).map_or(&[], Vec::as_slice)
    }

    /// The node the pod `key` is nominated to.
    pub fn node_of(&self, key: &str) -> Option<&str> {
        self.node_of.get(key).map(String::as_str)
    }

    /// Whether no pod is nominated.
    pub fn is_empty(&self) -> bool {
        self.node_of.is_empty()
    }

    /// The pods nominated to `node` that `pod` must leave room for: of
    /// higher or equal priority, other than itself.
    pub fn holding_room(&self, node: &str, pod: &PodInfo) -> Vec<Arc<PodInfo>> {
        self.on_node(node)
            .iter()
            .filter(|p| p.priority >= pod.priority && p.key != pod.key)
            .cloned()
            .collect()
    }

    /// The victim of `uid` is being evicted.
    pub fn evicting(&mut self, uid: &str) {
        // (Pods of a fixture may have no UID: nothing to track them by.)
        if !uid.is_empty() {
            self.evicting.insert(uid.to_owned());
        }
    }

    /// The victim of `uid` is gone (or its eviction ended).
    pub fn evicted(&mut self, uid: &str) -> bool {
        self.evicting.remove(uid)
    }

    /// Whether the pod of `uid` is a victim being evicted.
    pub fn is_evicting(&self, uid: &str) -> bool {
        self.evicting.contains(uid)
    }
}
