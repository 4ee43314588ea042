//! A private copy of a snapshot in which pods are removed from or added to
//! one node at a time, then put back: preemption's "this node without these
//! pods", and the nominated pods a node must still hold room for.
//!
//! Everything a plugin reads changes with the pods: the node's usage, its
//! pod list, the per-shape counts the inter-pod plugins and WebAssembly pod
//! views add up, and the snapshot's affinity counters. A change is undone
//! by restoring what it replaced, so a search over many nodes copies the
//! snapshot once.

use std::sync::Arc;

use crate::cache::{Snapshot, affinity_kinds, apply};
use crate::node::NodeInfo;
use crate::pod::PodInfo;
use crate::shapes::ShapeEntry;

/// A snapshot to try changes on ([`WhatIf::remove`], [`WhatIf::add`]) and
/// undo ([`WhatIf::reset`]).
#[derive(Debug)]
pub struct WhatIf {
    snap: Arc<Snapshot>,
    /// Node positions changed, with their node before the first change.
    saved_nodes: Vec<(usize, Arc<NodeInfo>)>,
    /// Shape ids changed, with their entry before the first change (and
    /// how many entries there were, for shapes a change created).
    saved_shapes: Vec<(u32, Option<Arc<ShapeEntry>>)>,
    shape_count: usize,
    counters: (usize, usize),
}

impl WhatIf {
    /// A private copy of `base`.
    pub fn new(base: &Snapshot) -> Self {
        WhatIf {
            shape_count: base.shapes.len(),
            counters: (base.pods_with_affinity, base.pods_with_required_anti_affinity),
            snap: Arc::new(base.clone()),
            saved_nodes: Vec::new(),
            saved_shapes: Vec::new(),
        }
    }

    /// The snapshot with the changes so far (hand it to a cycle's state;
    /// drop that state before the next change, or the change copies it).
    pub fn snapshot(&self) -> &Arc<Snapshot> {
        &self.snap
    }

    /// The pod `pod` gone from the node at position `pos`.
    pub fn remove(&mut self, pos: usize, pod: &Arc<PodInfo>) {
        self.change(pos, pod, false);
    }

    /// The pod `pod` also on the node at position `pos`.
    pub fn add(&mut self, pos: usize, pod: &Arc<PodInfo>) {
        self.change(pos, pod, true);
    }

    fn change(&mut self, pos: usize, pod: &Arc<PodInfo>, add: bool) {
        let snap = Arc::make_mut(&mut self.snap);
        if !self.saved_nodes.iter().any(|(p, _)| *p == pos) {
            self.saved_nodes.push((pos, snap.nodes[pos].clone()));
        }
        // The pod's shape: one of the node's when removing; any when adding
        // (a nominated pod's shape may be new to the cluster).
        let shapes = Arc::make_mut(&mut snap.shapes);
        let id = if add {
            shapes.iter().position(|e| e.as_ref().is_some_and(|e| e.holds(pod)))
        } else {
            snap.nodes[pos]
                .usage
                .shapes
                .iter()
                .map(|&(id, _)| id as usize)
                .find(|&id| shapes[id].as_ref().is_some_and(|e| e.holds(pod)))
        };
        let id = match id {
            Some(id) => id,
            None if add => {
                shapes.push(Some(Arc::new(ShapeEntry::new(pod.clone()))));
                shapes.len() - 1
            }
            // Not on this node: nothing to remove.
            None => return,
        };
        if !self.saved_shapes.iter().any(|(s, _)| *s as usize == id) {
            let before = if id < self.shape_count {
                shapes[id].clone()
            } else {
                None
            };
            self.saved_shapes.push((id as u32, before));
        }
        let delta = if add { 1 } else { -1 };
        if let Some(e) = shapes[id].as_mut() {
            Arc::make_mut(e).place(snap.cache_idx[pos] as usize, delta);
        }
        apply(&mut Arc::make_mut(&mut snap.nodes[pos]).usage, pod, id as u32, add);
        snap.refresh_row(pos);
        let (aff, anti) = affinity_kinds(pod);
        let step = |n: &mut usize, on: bool| {
            if on {
                *n = if add { *n + 1 } else { n.saturating_sub(1) };
            }
        };
        step(&mut snap.pods_with_affinity, aff);
        step(&mut snap.pods_with_required_anti_affinity, anti);
    }

    /// Undoes every change since the copy was made (or last reset).
    pub fn reset(&mut self) {
        if self.saved_nodes.is_empty() && self.saved_shapes.is_empty() {
            return;
        }
        let snap = Arc::make_mut(&mut self.snap);
        for (pos, node) in self.saved_nodes.drain(..) {
            snap.nodes[pos] = node;
            snap.refresh_row(pos);
        }
        let shapes = Arc::make_mut(&mut snap.shapes);
        for (id, entry) in self.saved_shapes.drain(..) {
            shapes[id as usize] = entry;
        }
        shapes.truncate(self.shape_count);
        (snap.pods_with_affinity, snap.pods_with_required_anti_affinity) = self.counters;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::Cache;
    use crate::node::NodeData;
    use k8s_openapi::api::core::v1::{Node, Pod};
    use serde_json::json;

    fn pod(name: &str, node: &str, app: &str) -> Arc<PodInfo> {
        let p: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "d", "uid": name, "labels": {"app": app}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
        }))
        .unwrap();
        Arc::new(PodInfo::from_pod(&p).unwrap())
    }

    fn count(s: &Snapshot, app: &str, pos: usize) -> i64 {
        s.shapes()
            .filter(|(_, e)| e.rep.labels.get("app").map(String::as_str) == Some(app))
            .flat_map(|(_, e)| s.positions(e).collect::<Vec<_>>())
            .filter(|(p, _)| *p == pos)
            .map(|(_, c)| c)
            .sum()
    }

    /// Removing a pod frees its requests and its shape's count on that
    /// node only; adding a pod of a new shape counts it; reset restores
    /// the copy exactly, and the base is never touched.
    #[test]
    fn changes_follow_usage_and_shapes_and_reset_restores() {
        let mut cache = Cache::new();
        for n in ["a", "b"] {
            let node: Node = serde_json::from_value(json!({"metadata": {"name": n},
                "status": {"allocatable": {"cpu": "4", "pods": "10"}}}))
            .unwrap();
            cache.upsert_node(NodeData::from_node(&node).unwrap());
        }
        let (w1, w2, x) = (pod("w1", "a", "web"), pod("w2", "b", "web"), pod("x", "", "new"));
        cache.upsert_pod(w1.clone());
        cache.upsert_pod(w2);
        let base = cache.snapshot();
        let a = base.position("a").unwrap();
        let mut w = WhatIf::new(&base);
        w.remove(a, &w1);
        let s = w.snapshot();
        assert_eq!(s.nodes[a].usage.requested.milli_cpu, 0);
        assert!(s.nodes[a].usage.pod_infos.is_empty());
        assert_eq!(count(s, "web", a), 0);
        assert_eq!(count(s, "web", 1 - a), 1);
        w.add(a, &x);
        assert_eq!(count(w.snapshot(), "new", a), 1);
        assert_eq!(w.snapshot().nodes[a].usage.requested.milli_cpu, 1000);
        w.reset();
        let s = w.snapshot();
        assert_eq!(count(s, "web", a), 1);
        assert_eq!(count(s, "new", a), 0);
        assert_eq!(s.nodes[a].usage.pod_infos[0].name, "w1");
        assert_eq!(count(&base, "web", a), 1);
    }
}
