//! The scheduler's view of the cluster: nodes, the pods bound (or assumed)
//! on them, and the snapshot a scheduling cycle reads.
//!
//! The cache is updated from the outside (a watch, a fixture file) and by
//! the scheduler itself: at Reserve it *assumes* the pod on its node, so the
//! next cycle sees the usage before the binding is confirmed; if binding
//! fails, [`Cache::forget_pod`] undoes it. Snapshots are updated
//! incrementally: only nodes whose usage changed are replaced, and node data
//! is shared, so a cycle over 5000 nodes costs no copying.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;

use crate::node::{ImageIndex, Labels, NodeData, NodeInfo, NodeRow, Usage};
use crate::pod::{PodInfo, PodKey};
use crate::shapes::{ShapeEntry, ShapeTable, count_on_node};

/// A pod the cache accounts on a node.
#[derive(Debug, Clone)]
pub struct CachedPod {
    /// The pod.
    pub pod: Arc<PodInfo>,
    /// The node it is bound or assumed on.
    pub node: String,
    /// Whether it is only assumed (binding not yet confirmed).
    pub assumed: bool,
}

/// How many distinct lists of node taints get an id
/// ([`NodeData::taint_set`]); the ids are never reused, so this bounds what
/// they hold in a cluster whose taints keep changing.
pub const MAX_TAINT_SETS: usize = 4096;

/// The cluster state the scheduler keeps.
#[derive(Debug, Default)]
pub struct Cache {
    nodes: Vec<Arc<NodeInfo>>,
    index: HashMap<String, usize>,
    /// Usage of pods bound to nodes the cache does not know (yet).
    orphan_usage: HashMap<String, Usage>,
    pods: HashMap<PodKey, CachedPod>,
    /// Image name → its size on each node holding it.
    image_nodes: Arc<ImageIndex>,
    /// Namespace name → its labels (for namespace selectors).
    namespaces: Arc<FxHashMap<String, Labels>>,
    /// The accounted pods by shape.
    shapes: ShapeTable,
    /// Services and controllers, by their selectors.
    workloads: Arc<crate::workloads::Workloads>,
    /// Claims, volumes, storage classes, CSI nodes and assumed bindings.
    storage: Arc<crate::storage::Storage>,
    /// Live metrics of the configured sources.
    metrics: Arc<crate::metrics::MetricTable>,
    /// Accounted pods with pod (anti-)affinity terms, and with required
    /// anti-affinity terms: plugins skip whole scans when there are none.
    with_affinity: usize,
    with_required_anti_affinity: usize,
    /// Bumped when a node's labels change: topology indexes are rebuilt.
    labels_generation: u64,
    /// Node ids given out (from 1) and free for reuse.
    next_node_id: u32,
    /// Taint lists by their id ([`NodeData::taint_set`]), from 1.
    taint_sets: FxHashMap<Vec<crate::node::Taint>, u32>,
    free_node_ids: Vec<u32>,
    /// Bumped when the node set (or a node's zone) changes: snapshots rebuild.
    structure_generation: u64,
    /// Nodes whose info changed since the last snapshot update.
    dirty: Vec<usize>,
    dirty_flag: Vec<bool>,
}

/// The nodes one scheduling cycle sees, ordered so that consecutive nodes
/// alternate between zones (as kube-scheduler's node tree does), which makes
/// node sampling spread over zones.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Nodes in sampling order. Whoever replaces or changes one calls
    /// [`Snapshot::refresh_row`] for its position.
    pub nodes: Vec<Arc<NodeInfo>>,
    /// Each node's [`NodeRow`], by position in `nodes`.
    rows: Vec<NodeRow>,
    /// Image name → its size on each node holding it.
    pub image_nodes: Arc<ImageIndex>,
    /// Namespace name → labels.
    pub namespaces: Arc<FxHashMap<String, Labels>>,
    /// Pods on these nodes with pod (anti-)affinity terms.
    pub pods_with_affinity: usize,
    /// Pods on these nodes with required anti-affinity terms.
    pub pods_with_required_anti_affinity: usize,
    /// Topology domains by key, computed on first use.
    topology: Arc<TopologyIndex>,
    /// The pods on these nodes by shape.
    pub(crate) shapes: Arc<Vec<Option<Arc<ShapeEntry>>>>,
    /// Services and controllers, by their selectors (default spreading).
    pub workloads: Arc<crate::workloads::Workloads>,
    /// Claims, volumes, storage classes, CSI nodes and assumed bindings.
    pub storage: Arc<crate::storage::Storage>,
    /// Live metrics of the configured sources.
    pub metrics: Arc<crate::metrics::MetricTable>,
    /// Cache index → position in `nodes`.
    pos: Vec<usize>,
    /// Position in `nodes` → cache index (what shape entries hold).
    pub(crate) cache_idx: Vec<u32>,
    /// Node name → position in `nodes`.
    by_name: Arc<FxHashMap<String, usize>>,
    structure_generation: u64,
    labels_generation: u64,
    built: bool,
}

/// The values one topology key takes over the nodes of a snapshot, each
/// with a small integer id, so plugins count per domain in a vector
/// rather than a map of strings.
#[derive(Debug, Default)]
pub struct Domains {
    /// Label value → domain id.
    pub ids: FxHashMap<String, u32>,
    /// Snapshot position → domain id, [`Domains::NONE`] when the node
    /// lacks the key.
    pub of_node: Vec<u32>,
    /// The same by node id ([`NodeData::id`]).
    of_id: Vec<u32>,
}

impl Domains {
    /// A node without the key.
    pub const NONE: u32 = u32::MAX;

    /// Number of domains.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no node has the key.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The domain of a node for `key`: an array read for a node of the
    /// snapshot, a label lookup for any other.
    #[inline]
    pub fn of(&self, key: &str, node: &NodeData) -> u32 {
        match self.of_id(node.id) {
            Some(d) => d,
            None => self.of_labels(key, &node.labels),
        }
    }

    /// The domain of the snapshot's node of id `id` ([`NodeData::id`]);
    /// `None` for a node not from the snapshot these domains were made of.
    #[inline]
    pub fn of_id(&self, id: u32) -> Option<u32> {
        if id == 0 {
            None
        } else {
            self.of_id.get(id as usize).copied()
        }
    }

    /// The domain of a node, by its labels.
    #[inline]
    pub fn of_labels(&self, key: &str, labels: &Labels) -> u32 {
        labels
            .get(key)
            .and_then(|v| self.ids.get(v))
            .copied()
            .unwrap_or(Self::NONE)
    }
}

/// A count per domain of one topology key (pods matching, or scores), for
/// plugins that count the pods around nodes.
#[derive(Debug)]
pub struct DomainCounts {
    /// The key's domains.
    pub domains: Arc<Domains>,
    /// By domain id.
    pub counts: Vec<i64>,
}

impl DomainCounts {
    /// Zero in every domain of `key`.
    pub fn new(snapshot: &Snapshot, key: &str) -> Self {
        Self::of(snapshot.domains(key))
    }

    /// Zero in every domain of `domains`.
    pub fn of(domains: Arc<Domains>) -> Self {
        DomainCounts {
            counts: vec![0; domains.len()],
            domains,
        }
    }

    /// Adds `v` to the domain of the node at snapshot position `pos`;
    /// false when the node lacks the key.
    #[inline]
    pub fn add(&mut self, pos: usize, v: i64) -> bool {
        match self.domains.of_node[pos] {
            Domains::NONE => false,
            d => {
                self.counts[d as usize] += v;
                true
            }
        }
    }

    /// The count of `node`'s domain (`None`: it lacks the key).
    #[inline]
    pub fn at(&self, key: &str, node: &NodeData) -> Option<i64> {
        match self.domains.of(key, node) {
            Domains::NONE => None,
            d => Some(self.counts[d as usize]),
        }
    }
}

/// Per topology key, its [`Domains`]; valid while the node set and node
/// labels stay the same.
#[derive(Debug, Default)]
struct TopologyIndex {
    by_key: Mutex<FxHashMap<String, Arc<Domains>>>,
    /// Keys kept for plugins' pod views (at most
    /// [`MAX_PLUGIN_TOPOLOGY_KEYS`]).
    plugin_keys: std::sync::atomic::AtomicUsize,
}

/// Topology keys named by plugins' pod views whose tables a snapshot keeps
/// (a plugin's usual key or two stay cached; a plugin naming a new key on
/// every call gets tables made for its call alone).
pub const MAX_PLUGIN_TOPOLOGY_KEYS: usize = 8;

impl Snapshot {
    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there are no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The nodes' rows, by position (what filters read of every node).
    #[inline]
    pub fn rows(&self) -> &[NodeRow] {
        &self.rows
    }

    /// The nodes at `positions`, and their rows, as batch plugin calls
    /// take them.
    pub fn at(&self, positions: impl Iterator<Item = usize>) -> (Vec<&Arc<NodeInfo>>, Vec<&NodeRow>) {
        let n = positions.size_hint().0;
        let (mut nodes, mut rows) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for p in positions {
            nodes.push(&self.nodes[p]);
            rows.push(&self.rows[p]);
        }
        (nodes, rows)
    }

    /// The `n` nodes from position `from` (below the node count), wrapping
    /// past the last to the first, and their rows: [`Snapshot::at`] for a
    /// run of positions, copied slice by slice.
    pub fn run(&self, from: usize, n: usize) -> (Vec<&Arc<NodeInfo>>, Vec<&NodeRow>) {
        let all = self.nodes.len();
        debug_assert!(from < all && n <= all);
        let head = (all - from).min(n);
        let (mut nodes, mut rows) = (Vec::with_capacity(n), Vec::with_capacity(n));
        nodes.extend(self.nodes[from..from + head].iter().chain(&self.nodes[..n - head]));
        rows.extend(self.rows[from..from + head].iter().chain(&self.rows[..n - head]));
        (nodes, rows)
    }

    /// Recomputes the row of the node at `pos` after it was replaced or
    /// changed.
    pub fn refresh_row(&mut self, pos: usize) {
        self.rows[pos] = NodeRow::of(&self.nodes[pos]);
    }

    /// The domains of topology key `key` (computed once per key while
    /// nodes and their labels stay the same). For the keys of the cluster's
    /// own objects (pod specs, configuration); a key a plugin names goes
    /// through [`Snapshot::domains_uncached`].
    pub fn domains(&self, key: &str) -> Arc<Domains> {
        let mut map = self.topology.by_key.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(d) = map.get(key) {
            return d.clone();
        }
        let d = Arc::new(self.build_domains(key));
        map.insert(key.to_owned(), d.clone());
        d
    }

    /// The domains of `key` for a plugin: the cached table when there is
    /// one; else one made and kept while plugins have had fewer than
    /// [`MAX_PLUGIN_TOPOLOGY_KEYS`] kept for these nodes, or made for the
    /// caller alone. A plugin may name a new key on every call; kept, each
    /// would hold a table over every node until the nodes change.
    pub fn domains_uncached(&self, key: &str) -> Arc<Domains> {
        if let Some(d) = self.topology.by_key.lock().unwrap_or_else(|p| p.into_inner()).get(key) {
            return d.clone();
        }
        let d = Arc::new(self.build_domains(key));
        let mut map = self.topology.by_key.lock().unwrap_or_else(|p| p.into_inner());
        let kept = self.topology.plugin_keys.load(std::sync::atomic::Ordering::Relaxed);
        if kept < MAX_PLUGIN_TOPOLOGY_KEYS && !map.contains_key(key) {
            self.topology
                .plugin_keys
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            map.insert(key.to_owned(), d.clone());
        }
        d
    }

    /// How many topology keys have their domains cached.
    pub fn cached_topology_keys(&self) -> usize {
        self.topology.by_key.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    fn build_domains(&self, key: &str) -> Domains {
        let max_id = self.nodes.iter().map(|n| n.node.id).max().unwrap_or(0) as usize;
        let mut d = Domains {
            ids: FxHashMap::default(),
            of_node: Vec::with_capacity(self.nodes.len()),
            of_id: vec![Domains::NONE; max_id + 1],
        };
        for n in &self.nodes {
            let id = match n.node.labels.get(key) {
                Some(v) => {
                    let next = d.ids.len() as u32;
                    *d.ids.entry(v.clone()).or_insert(next)
                }
                None => Domains::NONE,
            };
            d.of_node.push(id);
            d.of_id[n.node.id as usize] = id;
        }
        d
    }

    /// Every shape of the pods on these nodes (with its id), and where its
    /// pods are ([`Snapshot::positions`]).
    pub fn shapes(&self) -> impl Iterator<Item = (u32, &ShapeEntry)> {
        self.shapes
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.as_deref().map(|e| (i as u32, e)))
    }

    /// A node by name (a hash lookup).
    pub fn node(&self, name: &str) -> Option<&Arc<NodeInfo>> {
        self.position(name).map(|p| &self.nodes[p])
    }

    /// The position of the node named `name`.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// Number of shape ids (for per-shape tables indexed by id).
    pub fn shape_ids(&self) -> usize {
        self.shapes.len()
    }

    /// The nodes (snapshot positions) holding pods of a shape, with how many.
    pub fn positions<'a>(&'a self, shape: &'a ShapeEntry) -> impl Iterator<Item = (usize, i64)> + 'a {
        shape
            .nodes
            .iter()
            .map(|&(idx, c)| (self.pos[idx as usize], i64::from(c)))
    }

    /// The labels of namespace `ns` (empty when unknown, as kube-scheduler
    /// reads a namespace it has not seen).
    pub fn namespace_labels(&self, ns: &str) -> &Labels {
        self.namespaces.get(ns).unwrap_or_else(|| crate::node::no_labels())
    }
}

/// Whether a pod carries pod (anti-)affinity terms, and required
/// anti-affinity terms.
pub(crate) fn affinity_kinds(pod: &PodInfo) -> (bool, bool) {
    match &pod.pod_affinity {
        Some(a) => (true, !a.required_anti_affinity.is_empty()),
        None => (false, false),
    }
}

pub(crate) fn apply(usage: &mut Usage, pod: &Arc<PodInfo>, shape: u32, add: bool) {
    count_on_node(&mut usage.shapes, shape, if add { 1 } else { -1 });
    let r = &pod.requests;
    if add {
        usage.requested.add(&r.requests);
        usage.non_zero_milli_cpu += r.non_zero_milli_cpu;
        usage.non_zero_memory += r.non_zero_memory;
        usage.pods += 1;
        usage.ports.extend(pod.host_ports.iter().cloned());
        usage.pod_infos.push(pod.clone());
    } else {
        if let Some(i) = usage.pod_infos.iter().position(|p| p.key == pod.key) {
            usage.pod_infos.swap_remove(i);
        }
        usage.requested.sub(&r.requests);
        usage.non_zero_milli_cpu -= r.non_zero_milli_cpu;
        usage.non_zero_memory -= r.non_zero_memory;
        usage.pods -= 1;
        for p in &pod.host_ports {
            if let Some(i) = usage.ports.iter().position(|q| q == p) {
                usage.ports.swap_remove(i);
            }
        }
    }
}

impl Cache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Number of pods accounted (bound or assumed).
    pub fn pod_count(&self) -> usize {
        self.pods.len()
    }

    /// A node by name.
    pub fn node(&self, name: &str) -> Option<&Arc<NodeInfo>> {
        self.index.get(name).map(|&i| &self.nodes[i])
    }

    /// All nodes, in insertion order.
    pub fn nodes(&self) -> impl Iterator<Item = &Arc<NodeInfo>> {
        self.nodes.iter()
    }

    /// A pod accounted by the cache.
    pub fn pod(&self, key: &str) -> Option<&CachedPod> {
        self.pods.get(key)
    }

    /// Keys of every pod the cache accounts (bound or assumed).
    pub fn pod_keys(&self) -> impl Iterator<Item = &PodKey> {
        self.pods.keys()
    }

    /// Names of every node.
    pub fn node_names(&self) -> impl Iterator<Item = &str> {
        self.nodes.iter().map(|n| n.name())
    }

    /// Whether the pod is assumed and not yet confirmed.
    pub fn is_assumed(&self, key: &str) -> bool {
        self.pods.get(key).is_some_and(|p| p.assumed)
    }

    fn mark_dirty(&mut self, i: usize) {
        if self.dirty_flag.len() <= i {
            self.dirty_flag.resize(i + 1, false);
        }
        if !self.dirty_flag[i] {
            self.dirty_flag[i] = true;
            self.dirty.push(i);
        }
    }

    fn index_images(&mut self, data: &NodeData, add: bool) {
        if data.images.is_empty() {
            return;
        }
        let map = Arc::make_mut(&mut self.image_nodes);
        for (name, &size) in &data.images {
            if add {
                Arc::make_mut(map.entry(name.clone()).or_default()).insert(data.id, size);
            } else if let Some(on) = map.get_mut(name) {
                Arc::make_mut(on).remove(data.id);
                if on.is_empty() {
                    map.remove(name);
                }
            }
        }
    }

    /// Adds a node, or replaces the node of the same name.
    pub fn upsert_node(&mut self, mut data: NodeData) {
        data.id = match self.index.get(&data.name) {
            Some(&i) => self.nodes[i].node.id,
            None => self.free_node_ids.pop().unwrap_or_else(|| {
                self.next_node_id += 1;
                self.next_node_id
            }),
        };
        data.taint_set = self.taint_set(&data.taints);
        let data = Arc::new(data);
        if let Some(&i) = self.index.get(&data.name) {
            let old = self.nodes[i].node.clone();
            // A node's status is written every few seconds; its images
            // seldom change.
            if old.images != data.images {
                self.index_images(&old, false);
                self.index_images(&data, true);
            }
            if old.zone != data.zone {
                self.structure_generation += 1;
            }
            if old.labels != data.labels {
                self.labels_generation += 1;
            }
            Arc::make_mut(&mut self.nodes[i]).node = data;
            self.mark_dirty(i);
        } else {
            self.index_images(&data, true);
            let usage = self.orphan_usage.remove(&data.name).unwrap_or_default();
            for &(id, c) in &usage.shapes {
                self.shapes.place(id, self.nodes.len(), i64::from(c));
            }
            self.index.insert(data.name.clone(), self.nodes.len());
            self.nodes.push(Arc::new(NodeInfo { node: data, usage }));
            self.structure_generation += 1;
        }
    }

    /// The id of a list of taints: the one it has, or a new one. Lists are
    /// few in a cluster; past [`MAX_TAINT_SETS`] a new one gets none (0),
    /// and plugins read such nodes' taints themselves.
    fn taint_set(&mut self, taints: &[crate::node::Taint]) -> u32 {
        if let Some(&id) = self.taint_sets.get(taints) {
            return id;
        }
        if self.taint_sets.len() >= MAX_TAINT_SETS {
            return 0;
        }
        let id = self.taint_sets.len() as u32 + 1;
        self.taint_sets.insert(taints.to_vec(), id);
        id
    }

    /// Removes a node. Its pods stay accounted (they are deleted by their
    /// own events) and come back if the node does.
    pub fn remove_node(&mut self, name: &str) -> bool {
        let Some(i) = self.index.remove(name) else {
            return false;
        };
        let info = self.nodes.swap_remove(i);
        self.free_node_ids.push(info.node.id);
        for &(id, c) in &info.usage.shapes {
            self.shapes.place(id, i, -i64::from(c));
        }
        if i < self.nodes.len() {
            let moved = self.nodes[i].name().to_owned();
            self.index.insert(moved, i);
            let from = self.nodes.len();
            for &(id, _) in &self.nodes[i].usage.shapes {
                self.shapes.move_node(id, from, i);
            }
        }
        self.index_images(&info.node, false);
        if info.usage.pods != 0 {
            self.orphan_usage.insert(name.to_owned(), info.usage.clone());
        }
        self.structure_generation += 1;
        true
    }

    fn account(&mut self, node: &str, pod: &Arc<PodInfo>, add: bool) {
        let (aff, anti) = affinity_kinds(pod);
        if add {
            self.with_affinity += usize::from(aff);
            self.with_required_anti_affinity += usize::from(anti);
        } else {
            self.with_affinity -= usize::from(aff);
            self.with_required_anti_affinity -= usize::from(anti);
        }
        let shape = if add {
            self.shapes.acquire(pod)
        } else {
            self.shapes.id(pod).expect("an accounted pod has a shape")
        };
        if let Some(&i) = self.index.get(node) {
            apply(&mut Arc::make_mut(&mut self.nodes[i]).usage, pod, shape, add);
            self.shapes.place(shape, i, if add { 1 } else { -1 });
            self.mark_dirty(i);
        } else {
            let u = self.orphan_usage.entry(node.to_owned()).or_default();
            apply(u, pod, shape, add);
            if u.pods == 0 {
                self.orphan_usage.remove(node);
            }
        }
        if !add {
            self.shapes.release(shape);
        }
    }

    /// A copy of this cache without the pods whose UIDs are in `uids`: the
    /// cluster as it would be once they are gone (preemption's what-if).
    /// Costs a pass over every node and pod.
    pub fn without_pods(&self, uids: &std::collections::HashSet<&str>) -> Cache {
        let mut c = Cache::new();
        for n in &self.nodes {
            c.upsert_node((*n.node).clone());
        }
        c.namespaces = self.namespaces.clone();
        c.workloads = self.workloads.clone();
        c.storage = self.storage.clone();
        c.metrics = self.metrics.clone();
        for cp in self.pods.values() {
            if uids.contains(cp.pod.uid.as_str()) {
                continue;
            }
            if cp.assumed {
                c.assume_pod(cp.pod.clone(), &cp.node);
            } else {
                c.upsert_pod(cp.pod.clone());
            }
        }
        c
    }

    /// Adds or updates a pod seen in the cluster. Bound, non-terminal pods
    /// count as usage on their node; an assumed pod that is now seen bound to
    /// the same node is confirmed; unbound or terminal pods are removed.
    pub fn upsert_pod(&mut self, pod: Arc<PodInfo>) {
        let node = match (&pod.node_name, pod.terminal) {
            (Some(n), false) => n.clone(),
            _ => {
                self.remove_pod(&pod.key);
                return;
            }
        };
        if let Some(old) = self.pods.get(&pod.key) {
            let (old_pod, old_node) = (old.pod.clone(), old.node.clone());
            if old_node == node
                && old_pod.requests == pod.requests
                && old_pod.host_ports == pod.host_ports
                && old_pod.labels == pod.labels
                && old_pod.pod_affinity == pod.pod_affinity
                && old_pod.deleting == pod.deleting
            {
                let e = self.pods.get_mut(&pod.key).expect("present");
                e.pod = pod.clone();
                e.assumed = false;
                // The node's list holds the latest version (preemption reads
                // its start time and conditions).
                let usage = match self.index.get(&node) {
                    Some(&i) => {
                        self.mark_dirty(i);
                        Some(&mut Arc::make_mut(&mut self.nodes[i]).usage)
                    }
                    None => self.orphan_usage.get_mut(&node),
                };
                if let Some(slot) = usage.and_then(|u| u.pod_infos.iter_mut().find(|p| p.key == pod.key)) {
                    *slot = pod;
                }
                return;
            }
            self.account(&old_node, &old_pod, false);
            if old_node != node {
                self.count_placement(&node, &pod, 1);
            }
        } else {
            self.count_placement(&node, &pod, 1);
        }
        self.account(&node, &pod, true);
        self.pods.insert(
            pod.key.clone(),
            CachedPod {
                pod,
                node,
                assumed: false,
            },
        );
    }

    /// Counts a pod placed on `node` (`sign` 1), or an assumption undone
    /// (-1), in the node's running [`crate::metrics::Placed`] count.
    fn count_placement(&mut self, node: &str, pod: &PodInfo, sign: i64) {
        if let Some(&i) = self.index.get(node) {
            let placed = &mut Arc::make_mut(&mut self.nodes[i]).usage.placed;
            placed.pods += sign;
            placed.milli_cpu += sign * pod.requests.requests.milli_cpu;
            placed.memory += sign * pod.requests.requests.memory;
            self.mark_dirty(i);
        }
    }

    /// Removes a pod (deleted, or no longer bound).
    pub fn remove_pod(&mut self, key: &str) -> bool {
        match self.pods.remove(key) {
            Some(old) => {
                self.account(&old.node, &old.pod, false);
                true
            }
            None => false,
        }
    }

    /// Assumes `pod` on `node`: the usage counts at once, before binding.
    /// A pod the cache holds as bound (confirmed) is never moved: false,
    /// and nothing changes (a second attempt must not free a bound pod's
    /// usage on its real node).
    pub fn assume_pod(&mut self, pod: Arc<PodInfo>, node: &str) -> bool {
        if self
            .pods
            .get(&pod.key)
            .is_some_and(|p| !p.assumed && p.pod.uid == pod.uid)
        {
            return false;
        }
        self.remove_pod(&pod.key);
        self.count_placement(node, &pod, 1);
        self.account(node, &pod, true);
        self.pods.insert(
            pod.key.clone(),
            CachedPod {
                pod,
                node: node.to_owned(),
                assumed: true,
            },
        );
        true
    }

    /// Confirms an assumed pod (of `uid`) once its binding succeeded.
    pub fn finish_binding(&mut self, key: &str, uid: &str) {
        if let Some(p) = self.pods.get_mut(key)
            && p.pod.uid == uid
        {
            p.assumed = false;
        }
    }

    /// Undoes [`Cache::assume_pod`] (binding failed) for the pod of `uid`
    /// (empty: whatever its UID), returning it. Confirmed pods, and another
    /// pod of the same name, are left alone.
    pub fn forget_pod(&mut self, key: &str, uid: &str) -> Option<Arc<PodInfo>> {
        let p = self.pods.get(key)?;
        if !p.assumed || !(uid.is_empty() || p.pod.uid == uid) {
            return None;
        }
        let (pod, node) = (p.pod.clone(), p.node.clone());
        self.remove_pod(key);
        self.count_placement(&node, &pod, -1);
        Some(pod)
    }

    /// Brings `snap` up to date: replaces only the nodes that changed, or
    /// rebuilds when the node set changed.
    pub fn update_snapshot(&mut self, snap: &mut Snapshot) {
        if !snap.built || snap.structure_generation != self.structure_generation {
            self.rebuild(snap);
        } else {
            for &i in &self.dirty {
                if let Some(&p) = snap.pos.get(i) {
                    snap.nodes[p] = self.nodes[i].clone();
                    snap.refresh_row(p);
                }
            }
        }
        for &i in &self.dirty {
            self.dirty_flag[i] = false;
        }
        self.dirty.clear();
        if !Arc::ptr_eq(&snap.image_nodes, &self.image_nodes) {
            snap.image_nodes = self.image_nodes.clone();
        }
        if !Arc::ptr_eq(&snap.workloads, &self.workloads) {
            snap.workloads = self.workloads.clone();
        }
        if !Arc::ptr_eq(&snap.storage, &self.storage) {
            snap.storage = self.storage.clone();
        }
        if !Arc::ptr_eq(&snap.metrics, &self.metrics) {
            snap.metrics = self.metrics.clone();
        }
        if !Arc::ptr_eq(&snap.shapes, &self.shapes.entries) {
            snap.shapes = self.shapes.entries.clone();
        }
        if !Arc::ptr_eq(&snap.namespaces, &self.namespaces) {
            snap.namespaces = self.namespaces.clone();
        }
        if snap.labels_generation != self.labels_generation {
            snap.labels_generation = self.labels_generation;
            snap.topology = Arc::default();
        }
        snap.pods_with_affinity = self.with_affinity;
        snap.pods_with_required_anti_affinity = self.with_required_anti_affinity;
    }

    /// Adds or updates a namespace's labels; false when they were already
    /// these.
    pub fn upsert_namespace(&mut self, name: &str, labels: Labels) -> bool {
        if self.namespaces.get(name) == Some(&labels) {
            return false;
        }
        Arc::make_mut(&mut self.namespaces).insert(name.to_owned(), labels);
        true
    }

    /// Removes a namespace.
    pub fn remove_namespace(&mut self, name: &str) -> Option<Labels> {
        if self.namespaces.contains_key(name) {
            Arc::make_mut(&mut self.namespaces).remove(name)
        } else {
            None
        }
    }

    /// The Services and controllers the cache knows.
    pub fn workloads(&self) -> &crate::workloads::Workloads {
        &self.workloads
    }

    /// Changes the Services and controllers.
    pub fn workloads_mut(&mut self) -> &mut crate::workloads::Workloads {
        Arc::make_mut(&mut self.workloads)
    }

    /// The storage objects the cache knows.
    pub fn storage(&self) -> &crate::storage::Storage {
        &self.storage
    }

    /// Changes the storage objects.
    pub fn storage_mut(&mut self) -> &mut crate::storage::Storage {
        Arc::make_mut(&mut self.storage)
    }

    /// The live metrics the cache holds.
    pub fn metrics(&self) -> &crate::metrics::MetricTable {
        &self.metrics
    }

    /// Declares a metric source (its values read as absent until the first
    /// refresh).
    pub fn define_metric_source(&mut self, name: &str, stale_after_ms: Option<i64>) {
        Arc::make_mut(&mut self.metrics).define(name, stale_after_ms);
    }

    /// Replaces a metric source's values, matched to the nodes known now
    /// (whose placement counts become the values' baseline).
    pub fn install_metrics(
        &mut self,
        source: &str,
        series: &[crate::metrics::Series],
    ) -> crate::metrics::InstallReport {
        Arc::make_mut(&mut self.metrics).install(source, series, &self.nodes)
    }

    /// Names of the namespaces the cache knows.
    pub fn namespace_names(&self) -> Vec<String> {
        self.namespaces.keys().cloned().collect()
    }

    /// A fresh snapshot.
    pub fn snapshot(&mut self) -> Snapshot {
        let mut s = Snapshot::default();
        self.update_snapshot(&mut s);
        s
    }

    fn rebuild(&self, snap: &mut Snapshot) {
        // Group by zone in order of first appearance, then take one node of
        // each zone in turn.
        let mut zones: Vec<(&str, Vec<usize>)> = Vec::new();
        let mut zone_idx: HashMap<&str, usize> = HashMap::new();
        for (i, n) in self.nodes.iter().enumerate() {
            let z = n.node.zone.as_str();
            let zi = *zone_idx.entry(z).or_insert_with(|| {
                zones.push((z, Vec::new()));
                zones.len() - 1
            });
            zones[zi].1.push(i);
        }
        snap.nodes.clear();
        snap.cache_idx.clear();
        snap.pos = vec![0; self.nodes.len()];
        let longest = zones.iter().map(|z| z.1.len()).max().unwrap_or(0);
        for round in 0..longest {
            for (_, members) in &zones {
                if let Some(&i) = members.get(round) {
                    snap.pos[i] = snap.nodes.len();
                    snap.cache_idx.push(i as u32);
                    snap.nodes.push(self.nodes[i].clone());
                }
            }
        }
        snap.rows = snap.nodes.iter().map(|n| NodeRow::of(n)).collect();
        snap.by_name = Arc::new(
            snap.nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.name().to_owned(), i))
                .collect(),
        );
        snap.structure_generation = self.structure_generation;
        snap.topology = Arc::default();
        snap.built = true;
    }

    /// Nodes whose accounted requests exceed their allocatable CPU, memory,
    /// ephemeral storage, scalar resources or pod count. Empty in a healthy
    /// scheduler: used by tests and benchmarks as an invariant.
    pub fn overcommitted_nodes(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|n| {
                let (a, r) = (&n.node.allocatable, &n.usage.requested);
                r.milli_cpu > a.milli_cpu
                    || r.memory > a.memory
                    || r.ephemeral_storage > a.ephemeral_storage
                    || n.usage.pods > a.pods
                    || r.scalar.iter().any(|(k, v)| *v > a.scalar_get(k))
            })
            .map(|n| n.name().to_owned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Node, Pod};
    use serde_json::json;

    fn node(name: &str, zone: &str) -> NodeData {
        let n: Node = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}, "images": [{"names": ["img:1"], "sizeBytes": 100}]}
        }))
        .unwrap();
        NodeData::from_node(&n).unwrap()
    }

    fn pod(name: &str, node: Option<&str>, cpu: &str) -> Arc<PodInfo> {
        let p: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
        }))
        .unwrap();
        Arc::new(PodInfo::from_pod(&p).unwrap())
    }

    /// The cache without some pods is the cluster once they are gone: their
    /// usage and counts leave their nodes, everything else stays, and the
    /// cache itself is untouched.
    #[test]
    fn a_cache_without_pods_frees_their_usage() {
        let mut c = Cache::new();
        c.upsert_node(node("a", "z1"));
        c.upsert_node(node("b", "z2"));
        let with_uid = |name: &str, node: &str, cpu: &str| {
            let mut p = (*pod(name, Some(node), cpu)).clone();
            p.uid = format!("uid-{name}");
            Arc::new(p)
        };
        let victim = with_uid("victim", "a", "3");
        c.upsert_pod(victim.clone());
        c.upsert_pod(with_uid("stays", "a", "500m"));
        c.upsert_pod(with_uid("other", "b", "1"));
        let uids = std::collections::HashSet::from([victim.uid.as_str()]);
        let mut without = c.without_pods(&uids);
        let cpu = |c: &mut Cache, n: &str| {
            let s = c.snapshot();
            let i = s.position(n).unwrap();
            (s.nodes[i].usage.requested.milli_cpu, s.nodes[i].usage.pods)
        };
        assert_eq!(cpu(&mut without, "a"), (500, 1));
        assert_eq!(cpu(&mut without, "b"), (1000, 1));
        assert_eq!(cpu(&mut c, "a"), (3500, 2));
        assert_eq!(without.pod_count(), 2);
    }

    /// Per shape and node, the counts the snapshot's shape index gives
    /// equal those of the pods the cache accounts on each node, through node removals (pods
    /// left on unknown nodes), re-additions, relabels and deletions.
    #[test]
    fn shape_index_follows_pods_and_nodes() {
        let labelled = |name: &str, node: &str, app: &str| {
            let p: Pod = serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
                "spec": {"nodeName": node, "containers": [{"name": "c"}]}
            }))
            .unwrap();
            Arc::new(PodInfo::from_pod(&p).unwrap())
        };
        let check = |c: &mut Cache| {
            let snap = c.snapshot();
            let mut from_index: Vec<(String, String, i64)> = Vec::new();
            for (_, shape) in snap.shapes() {
                for (pos, n) in snap.positions(shape) {
                    from_index.push((snap.nodes[pos].name().to_owned(), shape.rep.labels["app"].clone(), n));
                }
            }
            // The truth: the pods the cache accounts on nodes it knows.
            let mut per: std::collections::BTreeMap<(String, String), i64> = Default::default();
            for cp in c.pods.values().filter(|cp| c.index.contains_key(&cp.node)) {
                *per.entry((cp.node.clone(), cp.pod.labels["app"].clone())).or_default() += 1;
            }
            let mut from_pods: Vec<(String, String, i64)> = per.into_iter().map(|((n, a), k)| (n, a, k)).collect();
            from_index.sort();
            from_pods.sort();
            assert_eq!(from_index, from_pods);
        };
        let mut rng = crate::rng::Rng::new(7);
        let mut c = Cache::new();
        let names = ["a", "b", "c", "d"];
        for n in names {
            c.upsert_node(node(n, "z"));
        }
        for step in 0..400 {
            let node_name = names[rng.below(4) as usize];
            let pod_name = format!("p{}", rng.below(30));
            let app = ["web", "db", "cache"][rng.below(3) as usize];
            match rng.below(10) {
                0 => {
                    c.remove_node(node_name);
                }
                1 => c.upsert_node(node(node_name, "z")),
                2 | 3 => {
                    c.remove_pod(&format!("default/{pod_name}"));
                }
                4 => {
                    c.assume_pod(labelled(&pod_name, node_name, app), node_name);
                }
                _ => c.upsert_pod(labelled(&pod_name, node_name, app)),
            }
            if step % 7 == 0 {
                check(&mut c);
            }
        }
        for n in names {
            c.upsert_node(node(n, "z"));
        }
        check(&mut c);
    }

    #[test]
    fn assume_forget_confirm() {
        let mut c = Cache::new();
        c.upsert_node(node("a", "z1"));
        let mut snap = c.snapshot();
        let p = pod("p", None, "1");
        c.assume_pod(p.clone(), "a");
        c.update_snapshot(&mut snap);
        assert_eq!(snap.nodes[0].usage.requested.milli_cpu, 1000);
        assert!(c.forget_pod("default/p", "").is_some());
        c.update_snapshot(&mut snap);
        assert_eq!(snap.nodes[0].usage.requested.milli_cpu, 0);
        assert_eq!(snap.nodes[0].usage.pods, 0);

        c.assume_pod(p, "a");
        // the watch then reports the pod bound to the same node: confirmed, counted once
        c.upsert_pod(pod("p", Some("a"), "1"));
        assert!(!c.is_assumed("default/p"));
        assert!(c.forget_pod("default/p", "").is_none());
        assert_eq!(c.node("a").unwrap().usage.requested.milli_cpu, 1000);
    }

    #[test]
    fn pods_before_their_node_and_node_removal() {
        let mut c = Cache::new();
        c.upsert_pod(pod("p", Some("late"), "500m"));
        c.upsert_node(node("late", "z1"));
        assert_eq!(c.node("late").unwrap().usage.requested.milli_cpu, 500);
        assert!(c.remove_node("late"));
        c.upsert_node(node("late", "z1"));
        assert_eq!(c.node("late").unwrap().usage.pods, 1);
        c.remove_pod("default/p");
        assert_eq!(c.node("late").unwrap().usage.pods, 0);
    }

    #[test]
    fn snapshot_interleaves_zones_and_counts_images() {
        let mut c = Cache::new();
        for (n, z) in [("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("c1", "c")] {
            c.upsert_node(node(n, z));
        }
        let snap = c.snapshot();
        let names: Vec<_> = snap.nodes.iter().map(|n| n.name().to_owned()).collect();
        assert_eq!(names, ["a1", "b1", "c1", "a2", "a3"]);
        assert_eq!(snap.image_nodes.get("img:1").map(|on| on.len()), Some(5));
        c.remove_node("a2");
        let snap = c.snapshot();
        assert_eq!(snap.len(), 4);
        assert_eq!(snap.image_nodes.get("img:1").map(|on| on.len()), Some(4));
    }

    #[test]
    fn overcommit_detection() {
        let mut c = Cache::new();
        c.upsert_node(node("a", "z"));
        c.upsert_pod(pod("p1", Some("a"), "3"));
        assert!(c.overcommitted_nodes().is_empty());
        c.upsert_pod(pod("p2", Some("a"), "2"));
        assert_eq!(c.overcommitted_nodes(), ["a"]);
    }
}
