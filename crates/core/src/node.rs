//! Nodes as the scheduler sees them: the parsed, immutable part of the Node
//! object ([`NodeData`]) and the usage of the pods on it ([`NodeInfo`]).

use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use rustc_hash::FxHashMap;

use crate::ModelError;
use crate::pod::HostPort;
use crate::resources::Resources;

/// The effect of a taint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaintEffect {
    /// New pods that do not tolerate it are not scheduled here.
    NoSchedule,
    /// The scheduler tries to avoid the node.
    PreferNoSchedule,
    /// Like NoSchedule, and running pods are evicted.
    NoExecute,
}

impl TaintEffect {
    /// Parses the API string.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "NoSchedule" => Some(Self::NoSchedule),
            "PreferNoSchedule" => Some(Self::PreferNoSchedule),
            "NoExecute" => Some(Self::NoExecute),
            _ => None,
        }
    }

    /// The API string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoSchedule => "NoSchedule",
            Self::PreferNoSchedule => "PreferNoSchedule",
            Self::NoExecute => "NoExecute",
        }
    }
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Taint {
    /// Taint key.
    pub key: String,
    /// Taint value (may be empty).
    pub value: String,
    /// Effect.
    pub effect: TaintEffect,
}

impl Taint {
    /// A taint.
    pub fn new(key: impl Into<String>, value: impl Into<String>, effect: TaintEffect) -> Self {
        Taint {
            key: key.into(),
            value: value.into(),
            effect,
        }
    }
}

/// Node labels.
pub type Labels = FxHashMap<String, String>;

/// No labels (what an object without any, or an unknown namespace, has).
pub fn no_labels() -> &'static Labels {
    static EMPTY: std::sync::OnceLock<Labels> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Labels::default)
}

/// The labels of an object's metadata, as a fast map.
pub fn labels_of(labels: Option<&std::collections::BTreeMap<String, String>>) -> Labels {
    labels
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// A label or annotation value read as a decimal number (`0.25`, `3`,
/// `1e3`, spaces around allowed): none when it is not one, or not finite.
/// What plugins' number columns give.
pub fn number(v: &str) -> Option<f64> {
    v.trim().parse::<f64>().ok().filter(|f| f.is_finite())
}

/// The annotations of a node whose values are numbers ([`number`]), parsed
/// when the node is stored. A plugin reading one annotation of 500 nodes
/// as numbers (a price) then touches one small block per node, found by the
/// key's hash, instead of walking each object's annotation map to strings
/// on the heap and parsing them: at thousands of nodes those reads are
/// cache misses, and they cost a plugin more than its own work. Keys are
/// kept in the same block as the values, so checking one costs no further
/// miss.
#[derive(Debug, Clone, Default)]
pub struct Numbers {
    /// Entry after entry: the key's hash (8 bytes), the value (8, an
    /// `f64`'s bits), the key's length (4), the key; little-endian.
    block: Box<[u8]>,
}

impl Numbers {
    const HEAD: usize = 20;

    fn of<'a>(pairs: impl Iterator<Item = (&'a String, &'a String)>) -> Self {
        let mut block = Vec::new();
        for (k, v) in pairs {
            let Some(v) = number(v) else { continue };
            block.extend_from_slice(&Self::hash(k).to_le_bytes());
            block.extend_from_slice(&v.to_bits().to_le_bytes());
            block.extend_from_slice(&(k.len() as u32).to_le_bytes());
            block.extend_from_slice(k.as_bytes());
        }
        Numbers { block: block.into() }
    }

    fn hash(key: &str) -> u64 {
        use std::hash::{BuildHasher, BuildHasherDefault};
        BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(key)
    }

    /// The number under `key`: none when absent or not a number.
    pub fn get(&self, key: &str) -> Option<f64> {
        Self::find(&self.block, Self::hash(key), key)
    }

    /// The number under `key` of each of `nodes`. At thousands of nodes a
    /// node's data and its block are cache misses, the second waiting for
    /// the first; each level is read for every node before the next, in
    /// loops small enough that the processor keeps many misses in flight
    /// instead of one.
    pub fn of_each(nodes: &[&NodeData], key: &str) -> Vec<Option<f64>> {
        let blocks: Vec<&[u8]> = nodes.iter().map(|d| &*d.annotation_numbers.block).collect();
        // Each block's first byte, read for every node before any is
        // searched: the search then finds it in the cache.
        for b in &blocks {
            if let Some(first) = b.first() {
                std::hint::black_box(*first);
            }
        }
        let h = Self::hash(key);
        blocks.iter().map(|b| Self::find(b, h, key)).collect()
    }

    fn find(b: &[u8], h: u64, key: &str) -> Option<f64> {
        let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        let mut at = 0;
        while at < b.len() {
            let len = u32::from_le_bytes(b[at + 16..at + Self::HEAD].try_into().unwrap()) as usize;
            let next = at + Self::HEAD + len;
            if word(at) == h && &b[at + Self::HEAD..next] == key.as_bytes() {
                return Some(f64::from_bits(word(at + 8)));
            }
            at = next;
        }
        None
    }
}

/// Image name → the nodes that hold it ([`ImageHolders`]): one table per
/// image that ImageLocality reads for every node it scores, instead of a
/// table of each node.
pub type ImageIndex = FxHashMap<String, Arc<ImageHolders>>;

/// The nodes that hold one image, by node id ([`NodeData::id`]), with the
/// size each reports.
///
/// An image most nodes hold (the common case that matters: ImageLocality
/// reads the table for every node it scores) is a bit per node id and the
/// size most of them report, with a table of the few that report another:
/// the lookup of a node is a bit test in a few cache lines, where a hash
/// table of sizes spread the same lookups over kilobytes. An image few
/// nodes hold stays a table of sizes, so a cluster of many rare images
/// does not pay a bit per node for each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageHolders {
    /// Holders.
    count: usize,
    /// A bit per node id (empty: every holder is in `sizes`).
    bits: Vec<u64>,
    /// The size a holder with its bit set reports unless `sizes` says
    /// otherwise.
    size: i64,
    /// Sizes by node id: every holder's without bits, else the holders'
    /// whose size differs from `size`.
    sizes: FxHashMap<u32, i64>,
}

impl ImageHolders {
    /// Below this many holders an image stays a table of sizes.
    const DENSE_FROM: usize = 64;

    /// The size the node with id `id` reports, if it holds the image.
    #[inline]
    pub fn get(&self, id: u32) -> Option<i64> {
        if self.bits.is_empty() {
            return self.sizes.get(&id).copied();
        }
        if !Self::bit(&self.bits, id) {
            return None;
        }
        if self.sizes.is_empty() {
            return Some(self.size);
        }
        Some(self.sizes.get(&id).copied().unwrap_or(self.size))
    }

    /// The bits of the holders when they all report one size, and that
    /// size: whether node `id` holds the image is then
    /// [`ImageHolders::bit`], with no table to consult.
    #[inline]
    pub fn uniform(&self) -> Option<(&[u64], i64)> {
        (!self.bits.is_empty() && self.sizes.is_empty()).then_some((&self.bits, self.size))
    }

    /// Whether node `id`'s bit is set in `bits` (from [`ImageHolders::uniform`]).
    #[inline]
    pub fn bit(bits: &[u64], id: u32) -> bool {
        bits.get(id as usize / 64).is_some_and(|w| (w >> (id % 64)) & 1 == 1)
    }

    /// How many nodes hold the image.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether no node holds it.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The node with id `id` holds the image, of `size` bytes.
    pub fn insert(&mut self, id: u32, size: i64) {
        self.remove(id);
        self.count += 1;
        if self.bits.is_empty() {
            self.sizes.insert(id, size);
            // Bits cost a byte per 8 node ids; a table entry about 16
            // bytes: bits once the image is held by one node in 128.
            if self.count >= Self::DENSE_FROM {
                let max = self.sizes.keys().max().copied().unwrap_or(0) as usize;
                if self.count * 128 >= max {
                    self.densify(max);
                }
            }
            return;
        }
        let w = id as usize / 64;
        if self.bits.len() <= w {
            self.bits.resize(w + 1, 0);
        }
        self.bits[w] |= 1 << (id % 64);
        if size != self.size {
            self.sizes.insert(id, size);
        }
    }

    /// The node with id `id` no longer holds the image.
    pub fn remove(&mut self, id: u32) {
        if self.bits.is_empty() {
            if self.sizes.remove(&id).is_some() {
                self.count -= 1;
            }
            return;
        }
        let w = id as usize / 64;
        let bit = 1 << (id % 64);
        if self.bits.get(w).is_none_or(|b| b & bit == 0) {
            return;
        }
        self.bits[w] &= !bit;
        self.sizes.remove(&id);
        self.count -= 1;
        // Back to a table when the bits are mostly empty (a quarter of the
        // density that made them, so an image on the edge does not flip).
        if self.count * 512 < self.bits.len() * 64 {
            let sizes = self.holders().collect();
            *self = ImageHolders {
                count: self.count,
                sizes,
                ..Default::default()
            };
        }
    }

    /// Every holder with its size, by id.
    pub fn holders(&self) -> impl Iterator<Item = (u32, i64)> + '_ {
        let (bits, sizes) = if self.bits.is_empty() {
            (None, Some(self.sizes.iter().map(|(&id, &s)| (id, s))))
        } else {
            let ids = self.bits.iter().enumerate().flat_map(|(w, &b)| {
                (0..64)
                    .filter(move |i| b & (1 << i) != 0)
                    .map(move |i| (w * 64 + i) as u32)
            });
            (
                Some(ids.map(|id| (id, self.sizes.get(&id).copied().unwrap_or(self.size)))),
                None,
            )
        };
        bits.into_iter().flatten().chain(sizes.into_iter().flatten())
    }

    /// From a table of sizes to bits, up to node id `max`: the most common
    /// size becomes the default.
    fn densify(&mut self, max: usize) {
        let mut counts: FxHashMap<i64, usize> = FxHashMap::default();
        for &s in self.sizes.values() {
            *counts.entry(s).or_default() += 1;
        }
        let size = counts.into_iter().max_by_key(|&(s, n)| (n, s)).map_or(0, |(s, _)| s);
        let mut bits = vec![0u64; max / 64 + 1];
        for &id in self.sizes.keys() {
            bits[id as usize / 64] |= 1 << (id % 64);
        }
        self.sizes.retain(|_, s| *s != size);
        self.bits = bits;
        self.size = size;
    }
}

impl FromIterator<(u32, i64)> for ImageHolders {
    fn from_iter<I: IntoIterator<Item = (u32, i64)>>(iter: I) -> Self {
        let mut h = ImageHolders::default();
        for (id, size) in iter {
            h.insert(id, size);
        }
        h
    }
}

/// The taint the node controller puts on cordoned nodes.
pub const TAINT_NODE_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";

/// The parsed, immutable part of a node: what changes only when the Node
/// object changes. Shared (`Arc`) between the cache and snapshots.
///
/// Laid out for the scheduling cycle, which reads every node's data for
/// every pod: what the default plugins read of every node (allocatable,
/// cordoned, its id, taints) comes first.
#[derive(Debug, Clone)]
#[repr(C)]
pub struct NodeData {
    /// `status.allocatable` (or `status.capacity` when allocatable is absent).
    pub allocatable: Resources,
    /// `spec.unschedulable` (cordoned).
    pub unschedulable: bool,
    /// A small id the cache gives the node for its life there (0: not
    /// from a cache): per-node tables index by it.
    pub id: u32,
    /// An id the cache gives the node's list of taints, the same for
    /// every node with the same list (0: none given): a plugin deciding by
    /// taints decides once per list.
    pub taint_set: u32,
    /// `spec.taints` with a known effect.
    pub taints: Vec<Taint>,
    /// Image sizes by every name in `status.images[].names`.
    pub images: FxHashMap<String, i64>,
    /// `metadata.labels` (a fast hash map: label lookups are the hottest
    /// operation of node affinity).
    pub labels: Labels,
    /// `metadata.annotations` that are numbers, parsed.
    pub annotation_numbers: Numbers,
    /// `metadata.name`.
    pub name: String,
    /// The zone (`topology.kubernetes.io/zone`), used to spread sampling.
    pub zone: String,
    /// The object as received.
    pub object: Arc<Node>,
}

impl NodeData {
    /// Parses a Node. Quantities and taints are converted here, once.
    pub fn from_node(node: &Node) -> Result<Self, ModelError> {
        let name = node.metadata.name.clone().unwrap_or_default();
        let object = format!("Node {name}");
        if name.is_empty() {
            return Err(ModelError::new("Node", "metadata.name", "is empty"));
        }
        let spec = node.spec.as_ref();
        let status = node.status.as_ref();
        let mut taints = Vec::new();
        for (i, t) in spec.and_then(|s| s.taints.as_ref()).into_iter().flatten().enumerate() {
            let effect = TaintEffect::parse(&t.effect).ok_or_else(|| {
                ModelError::new(
                    &object,
                    format!("spec.taints[{i}].effect"),
                    format!("unknown effect {:?}", t.effect),
                )
            })?;
            taints.push(Taint::new(t.key.clone(), t.value.clone().unwrap_or_default(), effect));
        }
        let allocatable = match status.and_then(|s| s.allocatable.as_ref().or(s.capacity.as_ref())) {
            Some(list) => {
                let field = if status.and_then(|s| s.allocatable.as_ref()).is_some() {
                    "status.allocatable"
                } else {
                    "status.capacity"
                };
                Resources::from_list(list, &object, field)?
            }
            None => Resources::default(),
        };
        let mut images = FxHashMap::default();
        for img in status.and_then(|s| s.images.as_ref()).into_iter().flatten() {
            for n in img.names.iter().flatten() {
                images.insert(n.clone(), img.size_bytes.unwrap_or(0));
            }
        }
        let labels: Labels = labels_of(node.metadata.labels.as_ref());
        let zone = labels
            .get("topology.kubernetes.io/zone")
            .or_else(|| labels.get("failure-domain.beta.kubernetes.io/zone"))
            .cloned()
            .unwrap_or_default();
        Ok(NodeData {
            name,
            labels,
            annotation_numbers: Numbers::of(node.metadata.annotations.iter().flatten()),
            unschedulable: spec.and_then(|s| s.unschedulable).unwrap_or(false),
            taints,
            allocatable,
            images,
            zone,
            object: Arc::new(node.clone()),
            id: 0,
            taint_set: 0,
        })
    }
}

/// What the pods on a node use. The amounts every Filter and Score of
/// resources reads come first (see [`NodeInfo`]).
#[derive(Debug, Clone, Default)]
#[repr(C)]
pub struct Usage {
    /// Number of pods.
    pub pods: i64,
    /// Sum of the pods' non-zero CPU requests (for scoring).
    pub non_zero_milli_cpu: i64,
    /// Sum of the pods' non-zero memory requests (for scoring).
    pub non_zero_memory: i64,
    /// Sum of the pods' requests.
    pub requested: Resources,
    /// Host ports in use.
    pub ports: Vec<HostPort>,
    /// (shape id, pods of that shape here): see [`crate::shapes`].
    pub shapes: Vec<(u32, u32)>,
    /// The pods themselves (preemption chooses among them).
    pub pod_infos: Vec<Arc<crate::pod::PodInfo>>,
    /// Running count of the pods placed here (what live metrics cannot
    /// show yet is the difference since their sample).
    pub placed: crate::metrics::Placed,
}

/// A node and the usage of its pods, as one scheduling cycle sees it.
///
/// A cycle reads this for every node it examines: the node, its pod count
/// and the amounts its pods request come first, to share a cache line.
#[derive(Debug, Clone)]
#[repr(C)]
pub struct NodeInfo {
    /// The parsed node.
    pub node: Arc<NodeData>,
    /// Usage by the pods bound or assumed on it.
    pub usage: Usage,
}

/// What the filters read of every node a cycle visits, kept by the
/// snapshot in one array by position ([`crate::cache::Snapshot::rows`]).
///
/// At tens of thousands of nodes a pod that few nodes fit visits most of
/// them, and reading each node's [`NodeInfo`] and [`NodeData`] (two
/// allocations apart) cost a cache miss or more per node and filter; the
/// rows are read in order from contiguous memory. A filter that needs more
/// than this reads the node as before.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeRow {
    /// Allocatable CPU (millicores).
    pub alloc_milli_cpu: i64,
    /// Allocatable memory (bytes).
    pub alloc_memory: i64,
    /// Allocatable ephemeral storage (bytes).
    pub alloc_ephemeral_storage: i64,
    /// Allocatable pods.
    pub alloc_pods: i64,
    /// CPU the pods on it request ([`Usage::requested`]).
    pub used_milli_cpu: i64,
    /// Memory the pods on it request.
    pub used_memory: i64,
    /// Ephemeral storage the pods on it request.
    pub used_ephemeral_storage: i64,
    /// Pods on it.
    pub pods: i64,
    /// [`Usage::non_zero_milli_cpu`].
    pub non_zero_milli_cpu: i64,
    /// [`Usage::non_zero_memory`].
    pub non_zero_memory: i64,
    /// [`NodeData::id`].
    pub id: u32,
    /// [`NodeData::taint_set`].
    pub taint_set: u32,
    /// `spec.unschedulable`.
    pub unschedulable: bool,
    /// Whether some taint has the effect `NoSchedule` or `NoExecute`.
    pub hard_taints: bool,
    /// Whether some taint has the effect `PreferNoSchedule`.
    pub soft_taints: bool,
    /// Whether some scalar resource (extended resources, hugepages) is
    /// allocatable in a non-zero amount.
    pub scalars: bool,
}

impl NodeRow {
    /// The row of `info`.
    pub fn of(info: &NodeInfo) -> Self {
        let (a, u) = (&info.node.allocatable, &info.usage);
        let effect = |f: fn(TaintEffect) -> bool| info.node.taints.iter().any(|t| f(t.effect));
        NodeRow {
            alloc_milli_cpu: a.milli_cpu,
            alloc_memory: a.memory,
            alloc_ephemeral_storage: a.ephemeral_storage,
            alloc_pods: a.pods,
            used_milli_cpu: u.requested.milli_cpu,
            used_memory: u.requested.memory,
            used_ephemeral_storage: u.requested.ephemeral_storage,
            pods: u.pods,
            non_zero_milli_cpu: u.non_zero_milli_cpu,
            non_zero_memory: u.non_zero_memory,
            id: info.node.id,
            taint_set: info.node.taint_set,
            unschedulable: info.node.unschedulable,
            hard_taints: effect(|e| matches!(e, TaintEffect::NoSchedule | TaintEffect::NoExecute)),
            soft_taints: effect(|e| e == TaintEffect::PreferNoSchedule),
            scalars: a.scalar.iter().any(|(_, q)| *q != 0),
        }
    }
}

impl NodeInfo {
    /// The node's name.
    #[inline]
    pub fn name(&self) -> &str {
        &self.node.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn image_holders_answer_as_a_table_of_sizes_through_bits_and_back() {
        // Node ids 1..=2000: an image gains holders until it is bits (most
        // with one size, some with another), then loses them until it is a
        // table again; every answer is the table's.
        let mut rng = crate::rng::Rng::new(3);
        let mut h = ImageHolders::default();
        let mut want: FxHashMap<u32, i64> = FxHashMap::default();
        let check = |h: &ImageHolders, want: &FxHashMap<u32, i64>| {
            assert_eq!(h.len(), want.len());
            for id in 0..2100 {
                assert_eq!(h.get(id), want.get(&id).copied(), "node id {id}");
            }
            let mut all: Vec<(u32, i64)> = h.holders().collect();
            all.sort_unstable();
            let mut w: Vec<(u32, i64)> = want.iter().map(|(&k, &v)| (k, v)).collect();
            w.sort_unstable();
            assert_eq!(all, w);
        };
        for round in 0..1500 {
            let id = 1 + rng.below(2000) as u32;
            let size = if rng.below(10) == 0 { 7 } else { 100 };
            if rng.below(4) != 0 {
                h.insert(id, size);
                want.insert(id, size);
            } else {
                h.remove(id);
                want.remove(&id);
            }
            if round % 100 == 0 {
                check(&h, &want);
            }
        }
        check(&h, &want);
        assert!(!h.bits.is_empty(), "{} holders of 2000 are not bits", h.len());
        for id in 1..=2000 {
            h.remove(id);
            want.remove(&id);
            if id % 100 == 0 {
                check(&h, &want);
            }
            if want.len() == 1 {
                assert!(h.bits.is_empty(), "one holder left, still bits");
            }
        }
        // A node that reports a new size for an image it holds.
        h = (1..=200).map(|id| (id, 5)).collect();
        assert!(!h.bits.is_empty());
        h.insert(9, 6);
        assert_eq!((h.get(9), h.get(10), h.len()), (Some(6), Some(5), 200));
    }

    #[test]
    fn annotations_that_are_numbers_are_parsed_once_and_found_by_key() {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": "n1", "annotations": {
                "price": "0.25", "spaced": " 3 ", "exp": "1e3", "nan": "NaN", "inf": "inf",
                "word": "cheap", "empty": ""}},
        }))
        .unwrap();
        let d = NodeData::from_node(&node).unwrap();
        let n = &d.annotation_numbers;
        assert_eq!(
            (n.get("price"), n.get("spaced"), n.get("exp")),
            (Some(0.25), Some(3.0), Some(1000.0))
        );
        for k in ["nan", "inf", "word", "empty", "absent", "pric", "price "] {
            assert_eq!(n.get(k), None, "{k}");
        }
        assert_eq!(
            n.block.len(),
            3 * Numbers::HEAD + "pricespacedexp".len(),
            "only numbers are kept"
        );
        // Keys of any length and script, each found by its own bytes.
        let long = "example.com/".to_owned() + &"p".repeat(300);
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": "n2", "annotations": {&long: "7", "größe": "2", "x": "1"}},
        }))
        .unwrap();
        let n = NodeData::from_node(&node).unwrap().annotation_numbers;
        assert_eq!(
            (n.get(&long), n.get("größe"), n.get("x")),
            (Some(7.0), Some(2.0), Some(1.0))
        );
        assert_eq!((n.get(&long[..long.len() - 1]), n.get("gr")), (None, None));
        // The same answers for a batch of nodes, one of them without numbers.
        let none = NodeData::from_node(&serde_json::from_value(json!({"metadata": {"name": "n3"}})).unwrap()).unwrap();
        let batch = [&d, &none, &NodeData::from_node(&node).unwrap()];
        assert_eq!(Numbers::of_each(&batch, "price"), [Some(0.25), None, None]);
        assert_eq!(Numbers::of_each(&batch, "x"), [None, None, Some(1.0)]);
    }

    #[test]
    fn parses_node() {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "z1"}},
            "spec": {"unschedulable": true, "taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {
                "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                "allocatable": {"cpu": "7500m", "memory": "30Gi", "pods": "110", "nvidia.com/gpu": "4"},
                "images": [{"names": ["nginx:1.25", "docker.io/library/nginx:1.25"], "sizeBytes": 70000000}]
            }
        }))
        .unwrap();
        let d = NodeData::from_node(&node).unwrap();
        assert_eq!(d.allocatable.milli_cpu, 7500);
        assert_eq!(d.allocatable.pods, 110);
        assert_eq!(d.allocatable.scalar_get("nvidia.com/gpu"), 4);
        assert!(d.unschedulable);
        assert_eq!(d.taints[0].effect, TaintEffect::NoSchedule);
        assert_eq!(d.images.get("nginx:1.25"), Some(&70_000_000));
        assert_eq!(d.zone, "z1");
    }

    #[test]
    fn bad_fields_are_named() {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "many"}}
        }))
        .unwrap();
        let e = NodeData::from_node(&node).unwrap_err().to_string();
        assert_eq!(
            e,
            "Node n1: status.allocatable[cpu]: quantity \"many\" has no valid number"
        );
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": "n1"},
            "spec": {"taints": [{"key": "k", "effect": "Sometimes"}]}
        }))
        .unwrap();
        let e = NodeData::from_node(&node).unwrap_err().to_string();
        assert_eq!(e, "Node n1: spec.taints[0].effect: unknown effect \"Sometimes\"");
    }
}
