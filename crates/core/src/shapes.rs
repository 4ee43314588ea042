//! Pods grouped by what inter-pod plugins read of them: namespace, labels,
//! pod (anti-)affinity terms, and whether they are terminating. Replicas of
//! one workload share a shape, so InterPodAffinity and PodTopologySpread
//! evaluate a selector once per shape and add up per-node counts kept in
//! contiguous vectors, instead of visiting every pod of the cluster (a
//! visit is a handful of cache misses; at 10 000 pods that was 10 ms a
//! cycle).

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::constraints::PodAffinity;
use crate::pod::PodInfo;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ShapeKey {
    namespace: String,
    labels: Vec<(String, String)>,
    affinity: Option<PodAffinity>,
    deleting: bool,
}

impl ShapeKey {
    fn of(pod: &PodInfo) -> Self {
        let mut labels: Vec<(String, String)> = pod.labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        labels.sort_unstable();
        ShapeKey {
            namespace: pod.namespace.clone(),
            labels,
            affinity: pod.pod_affinity.as_deref().cloned(),
            deleting: pod.deleting,
        }
    }
}

/// The pods of one shape and the nodes they are on.
#[derive(Debug, Clone)]
pub struct ShapeEntry {
    /// One of its pods: what plugins match selectors against.
    pub rep: Arc<PodInfo>,
    /// (cache node index, pods of this shape there), by node index.
    pub(crate) nodes: Vec<(u32, u32)>,
    /// Pods of this shape the cache accounts (on known nodes or not).
    total: u32,
}

impl ShapeEntry {
    /// A shape with one representative pod and no placement yet.
    pub(crate) fn new(rep: Arc<PodInfo>) -> Self {
        ShapeEntry {
            rep,
            nodes: Vec::new(),
            total: 0,
        }
    }

    /// Whether `pod` has this shape.
    pub(crate) fn holds(&self, pod: &PodInfo) -> bool {
        ShapeKey::of(&self.rep) == ShapeKey::of(pod)
    }

    /// Adds `delta` pods of this shape on the node at cache index `idx`.
    pub(crate) fn place(&mut self, idx: usize, delta: i64) {
        let nodes = &mut self.nodes;
        let idx = idx as u32;
        match nodes.binary_search_by_key(&idx, |(i, _)| *i) {
            Ok(at) => {
                let c = i64::from(nodes[at].1) + delta;
                if c <= 0 {
                    nodes.remove(at);
                } else {
                    nodes[at].1 = c as u32;
                }
            }
            Err(at) if delta > 0 => nodes.insert(at, (idx, delta as u32)),
            Err(_) => {}
        }
    }
}

/// Every shape of the accounted pods, by id. Ids are reused once a shape
/// has no pod left.
#[derive(Debug, Default)]
pub(crate) struct ShapeTable {
    ids: FxHashMap<ShapeKey, u32>,
    /// Shared with snapshots; changing one entry copies that entry only.
    pub(crate) entries: Arc<Vec<Option<Arc<ShapeEntry>>>>,
    free: Vec<u32>,
}

impl ShapeTable {
    /// Counts one more pod of `pod`'s shape; returns its id.
    pub(crate) fn acquire(&mut self, pod: &Arc<PodInfo>) -> u32 {
        let key = ShapeKey::of(pod);
        if let Some(&id) = self.ids.get(&key) {
            let entries = Arc::make_mut(&mut self.entries);
            if let Some(e) = entries[id as usize].as_mut() {
                Arc::make_mut(e).total += 1;
            }
            return id;
        }
        let entry = Some(Arc::new(ShapeEntry {
            rep: pod.clone(),
            nodes: Vec::new(),
            total: 1,
        }));
        let entries = Arc::make_mut(&mut self.entries);
        let id = match self.free.pop() {
            Some(id) => {
                entries[id as usize] = entry;
                id
            }
            None => {
                entries.push(entry);
                (entries.len() - 1) as u32
            }
        };
        self.ids.insert(key, id);
        id
    }

    /// The id of `pod`'s shape (it must have been acquired).
    pub(crate) fn id(&self, pod: &PodInfo) -> Option<u32> {
        self.ids.get(&ShapeKey::of(pod)).copied()
    }

    /// Counts one pod of shape `id` less; the shape goes with its last pod.
    pub(crate) fn release(&mut self, id: u32) {
        let entries = Arc::make_mut(&mut self.entries);
        let Some(e) = entries[id as usize].as_mut() else { return };
        let e = Arc::make_mut(e);
        e.total -= 1;
        if e.total == 0 {
            let key = ShapeKey::of(&e.rep);
            entries[id as usize] = None;
            self.ids.remove(&key);
            self.free.push(id);
        }
    }

    /// Adds `delta` pods of shape `id` on the node at cache index `idx`.
    pub(crate) fn place(&mut self, id: u32, idx: usize, delta: i64) {
        let entries = Arc::make_mut(&mut self.entries);
        if let Some(e) = entries[id as usize].as_mut() {
            Arc::make_mut(e).place(idx, delta);
        }
    }

    /// The node at cache index `from` is now at `to`.
    pub(crate) fn move_node(&mut self, id: u32, from: usize, to: usize) {
        let count = self.entries[id as usize]
            .as_ref()
            .and_then(|e| e.nodes.iter().find(|(i, _)| *i as usize == from))
            .map_or(0, |(_, c)| *c);
        if count > 0 {
            self.place(id, from, -i64::from(count));
            self.place(id, to, i64::from(count));
        }
    }
}

/// Adds `delta` pods of shape `id` to a node's shape list.
pub(crate) fn count_on_node(shapes: &mut Vec<(u32, u32)>, id: u32, delta: i64) {
    match shapes.iter().position(|(s, _)| *s == id) {
        Some(at) => {
            let c = i64::from(shapes[at].1) + delta;
            if c <= 0 {
                shapes.swap_remove(at);
            } else {
                shapes[at].1 = c as u32;
            }
        }
        None if delta > 0 => shapes.push((id, delta as u32)),
        None => {}
    }
}
