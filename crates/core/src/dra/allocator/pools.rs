//! Resource pools (pools_stable.go): the slices, indexed once; the pools
//! one node sees, gathered per call with their generations, completeness
//! and validity; the counters a pool has left after the allocated devices.

use std::sync::{Arc, OnceLock};

use k8s_openapi::api::core::v1::NodeSelector;
use k8s_openapi::api::resource::v1::{CounterSet, Device, ResourceSlice};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use rustc_hash::{FxHashMap, FxHashSet};

use super::Allocator;
use crate::dra::DeviceId;
use crate::node::NodeData;
use crate::quantity::{self, QuantityError};
use crate::selector::Term;

/// A parsed node selector: OR of its terms, or why it cannot be parsed.
pub(crate) type Selector = Result<Vec<Term>, String>;

/// One slice and what is derived from it on first use.
pub(super) struct SliceEntry<'a> {
    pub slice: &'a ResourceSlice,
    pub devices: &'a [Device],
    /// Whether each device is among the allocated ones.
    allocated: OnceLock<Box<[bool]>>,
    /// `spec.nodeSelector`, parsed.
    node_selector: OnceLock<Selector>,
    /// Each device's `nodeSelector`, parsed (per-device node selection).
    device_selectors: OnceLock<Box<[Option<Selector>]>>,
}

impl<'a> SliceEntry<'a> {
    fn node_selector(&self) -> Option<&Selector> {
        let sel = self.slice.spec.node_selector.as_ref()?;
        Some(
            self.node_selector
                .get_or_init(|| parse_selector(sel, &format!("ResourceSlice {}", self.name()), "spec.nodeSelector")),
        )
    }

    pub(super) fn device_selector(&self, d: usize) -> Option<&Selector> {
        self.device_selectors
            .get_or_init(|| {
                let object = format!("ResourceSlice {}", self.name());
                self.devices
                    .iter()
                    .enumerate()
                    .map(|(i, dev)| {
                        let sel = dev.node_selector.as_ref()?;
                        Some(parse_selector(sel, &object, &format!("spec.devices[{i}].nodeSelector")))
                    })
                    .collect()
            })
            .get(d)?
            .as_ref()
    }

    pub fn name(&self) -> &'a str {
        self.slice.metadata.name.as_deref().unwrap_or("")
    }

    pub fn driver(&self) -> &'a str {
        &self.slice.spec.driver
    }

    pub fn pool(&self) -> &'a str {
        &self.slice.spec.pool.name
    }

    fn has_counter_sets(&self) -> bool {
        self.slice.spec.shared_counters.as_ref().is_some_and(|c| !c.is_empty())
    }

    pub fn per_device_node_selection(&self) -> bool {
        self.slice.spec.per_device_node_selection == Some(true)
    }
}

pub(crate) fn parse_selector(sel: &NodeSelector, object: &str, field: &str) -> Selector {
    sel.node_selector_terms
        .iter()
        .enumerate()
        .map(|(i, t)| Term::parse(t, object, &format!("{field}.nodeSelectorTerms[{i}]")))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            let text = serde_json::to_string(sel).unwrap_or_default();
            format!("failed to parse node selector {text}: {e}")
        })
}

/// Go's `NodeMatches`: a node name, all nodes, or a selector, in that order.
pub(crate) fn node_matches(
    node: &NodeData,
    node_name: Option<&str>,
    all_nodes: Option<bool>,
    selector: Option<&Selector>,
) -> Result<bool, String> {
    if let Some(name) = node_name.filter(|n| !n.is_empty()) {
        return Ok(node.name == name);
    }
    if all_nodes == Some(true) {
        return Ok(true);
    }
    match selector {
        Some(sel) => {
            let terms = sel.as_ref().map_err(Clone::clone)?;
            Ok(terms.iter().any(|t| t.matches(&node.labels, &node.name)))
        }
        None => Ok(false),
    }
}

/// The slices, with indexes by node and by pool.
pub(super) struct SliceIndex<'a> {
    pub entries: Vec<SliceEntry<'a>>,
    /// Slices bound to one node by `spec.nodeName`, without counter sets
    /// (which every node needs), in input order.
    on_node: FxHashMap<&'a str, Vec<u32>>,
    /// The other slices, in input order.
    shared: Vec<u32>,
    /// Every slice of a pool, in input order.
    by_pool: FxHashMap<(&'a str, &'a str), Vec<u32>>,
}

impl<'a> SliceIndex<'a> {
    pub fn new(slices: &'a [Arc<ResourceSlice>]) -> Self {
        let mut index = SliceIndex {
            entries: Vec::with_capacity(slices.len()),
            on_node: FxHashMap::default(),
            shared: Vec::new(),
            by_pool: FxHashMap::default(),
        };
        for (i, slice) in slices.iter().enumerate() {
            let i = i as u32;
            let entry = SliceEntry {
                slice,
                devices: slice.spec.devices.as_deref().unwrap_or(&[]),
                allocated: OnceLock::new(),
                node_selector: OnceLock::new(),
                device_selectors: OnceLock::new(),
            };
            match slice.spec.node_name.as_deref() {
                Some(node) if !node.is_empty() && !entry.has_counter_sets() => {
                    index.on_node.entry(node).or_default().push(i)
                }
                _ => index.shared.push(i),
            }
            index.by_pool.entry((entry.driver(), entry.pool())).or_default().push(i);
            index.entries.push(entry);
        }
        index
    }
}

/// A pool as one node sees it (Go's `Pool`).
pub(super) struct Pool<'a> {
    pub driver: &'a str,
    pub name: &'a str,
    pub incomplete: bool,
    pub invalid: bool,
    /// The slices with devices that the node may use.
    pub device_slices: Vec<u32>,
    /// The pool's other slices with devices, when the node does not see
    /// them all: their allocated devices consume counters too.
    pub other_slices: Vec<u32>,
    pub counter_sets: Vec<&'a CounterSet>,
}

impl<'a> Pool<'a> {
    fn new(driver: &'a str, name: &'a str) -> Self {
        Pool {
            driver,
            name,
            incomplete: false,
            invalid: false,
            device_slices: Vec::new(),
            other_slices: Vec::new(),
            counter_sets: Vec::new(),
        }
    }

    fn invalid(driver: &'a str, name: &'a str) -> Self {
        Pool {
            invalid: true,
            ..Pool::new(driver, name)
        }
    }
}

/// The counters left in each counter set of a pool.
pub(super) type Counters<'a> = Vec<(&'a str, Vec<(&'a str, i128)>)>;

/// A counter's value in nano-units; beyond 2^63 of those, whole units
/// (rounded up) times 10^9.
pub(super) fn counter_value(q: &Quantity) -> Result<i128, QuantityError> {
    match quantity::parse_scaled(&q.0, 9) {
        Ok(v) => Ok(i128::from(v)),
        Err(QuantityError::Overflow(_)) => Ok(i128::from(quantity::parse_scaled(&q.0, 0)?) * 1_000_000_000),
        Err(e) => Err(e),
    }
}

/// One pool's slices of the newest generation seen, while gathering.
struct Group<'a> {
    id: (&'a str, &'a str),
    generation: i64,
    slices: Vec<u32>,
}

impl<'a> Allocator<'a> {
    pub(super) fn entry(&self, s: u32) -> &SliceEntry<'a> {
        &self.index.entries[s as usize]
    }

    pub(super) fn device(&self, s: u32, d: u32) -> &'a Device {
        &self.index.entries[s as usize].devices[d as usize]
    }

    /// Whether a device is among the allocated ones.
    pub(super) fn is_allocated(&self, s: u32, d: u32) -> bool {
        let entry = self.entry(s);
        let bits = entry.allocated.get_or_init(|| {
            if self.allocated.is_empty() {
                return vec![false; entry.devices.len()].into();
            }
            // One key, refilled per device: no allocation per lookup.
            let mut key = DeviceId::new(entry.driver(), entry.pool(), String::new());
            entry
                .devices
                .iter()
                .map(|dev| {
                    key.device.clear();
                    key.device.push_str(&dev.name);
                    self.allocated.contains(&key)
                })
                .collect()
        });
        bits[d as usize]
    }

    /// Go's `GatherPools`: the pools with devices this node may use, sorted
    /// by driver and pool.
    pub(super) fn gather_pools(&self, node: &NodeData) -> Result<Vec<Pool<'a>>, String> {
        let index = &self.index;
        let local = index.on_node.get(node.name.as_str()).map(Vec::as_slice).unwrap_or(&[]);
        let mut groups: Vec<Group<'a>> = Vec::new();
        let mut by_id: FxHashMap<(&'a str, &'a str), usize> = FxHashMap::default();
        // The node's slices and the shared ones, merged back into input
        // order: the order of a pool's slices is the order of its devices.
        let (mut l, mut s) = (0, 0);
        loop {
            let i = match (local.get(l), index.shared.get(s)) {
                (Some(&a), Some(&b)) if a < b => {
                    l += 1;
                    a
                }
                (_, Some(&b)) => {
                    s += 1;
                    b
                }
                (Some(&a), None) => {
                    l += 1;
                    a
                }
                (None, None) => break,
            };
            let entry = &index.entries[i as usize];
            let spec = &entry.slice.spec;
            let counter_sets = entry.has_counter_sets();
            if !self.features.partitionable_devices && (spec.per_device_node_selection.is_some() || counter_sets) {
                continue;
            }
            let node_name = spec.node_name.as_deref().filter(|n| !n.is_empty());
            let relevant = if counter_sets {
                // Counter sets are needed by the pool's devices wherever
                // those are.
                true
            } else if node_name.is_some() || spec.all_nodes == Some(true) || spec.node_selector.is_some() {
                node_matches(node, node_name, spec.all_nodes, entry.node_selector())
                    .map_err(|e| format!("failed to perform node selection for slice {}: {e}", entry.name()))?
            } else if entry.per_device_node_selection() {
                let mut any = false;
                for (d, dev) in entry.devices.iter().enumerate() {
                    let matches = node_matches(node, dev.node_name.as_deref(), dev.all_nodes, entry.device_selector(d))
                        .map_err(|e| {
                            format!(
                                "failed to perform node selection for device {} in slice {}: {e}",
                                dev.name,
                                entry.name()
                            )
                        })?;
                    if matches {
                        any = true;
                        break;
                    }
                }
                any
            } else {
                // Some unknown, future way of selecting nodes.
                continue;
            };
            if !relevant {
                continue;
            }
            let id = (entry.driver(), entry.pool());
            let generation = spec.pool.generation;
            match by_id.get(&id) {
                None => {
                    by_id.insert(id, groups.len());
                    groups.push(Group {
                        id,
                        generation,
                        slices: vec![i],
                    });
                }
                Some(&g) => {
                    let group = &mut groups[g];
                    if generation > group.generation {
                        group.generation = generation;
                        group.slices.clear();
                        group.slices.push(i);
                    } else if generation == group.generation {
                        group.slices.push(i);
                    }
                }
            }
        }
        groups.sort_unstable_by(|a, b| a.id.cmp(&b.id));

        let mut pools = Vec::with_capacity(groups.len());
        for group in &groups {
            let (driver, name) = group.id;
            let count = index.entries[group.slices[0] as usize]
                .slice
                .spec
                .pool
                .resource_slice_count;
            if group.slices.len() as i64 == count {
                pools.push(self.build_pool(group, None));
                continue;
            }
            // Some slices were left out as not being for this node, or the
            // pool is being updated: look at all of them.
            let mut all = Vec::new();
            let mut obsolete = false;
            for &i in index.by_pool.get(&group.id).map(Vec::as_slice).unwrap_or(&[]) {
                let g = index.entries[i as usize].slice.spec.pool.generation;
                if g == group.generation {
                    all.push(i);
                } else if g > group.generation {
                    obsolete = true;
                    break;
                }
            }
            if obsolete {
                // The driver is replacing this generation: ignore it.
                continue;
            }
            if all.len() as i64 != count {
                pools.push(Pool {
                    incomplete: true,
                    ..Pool::new(driver, name)
                });
                continue;
            }
            pools.push(self.build_pool(group, Some(&all)));
        }
        Ok(pools)
    }

    /// Go's `buildPool`: checks the pool and sorts its slices.
    fn build_pool(&self, group: &Group<'a>, all: Option<&[u32]>) -> Pool<'a> {
        let (driver, name) = group.id;
        let entries = &self.index.entries;
        let mut pool = Pool::new(driver, name);
        let mut counter_slices = Vec::new();
        for &i in &group.slices {
            if self.features.partitionable_devices && entries[i as usize].has_counter_sets() {
                counter_slices.push(i);
            } else {
                pool.device_slices.push(i);
            }
        }
        let mut names = FxHashSet::default();
        for &i in &pool.device_slices {
            for dev in entries[i as usize].devices {
                if !names.insert(dev.name.as_str()) {
                    // Duplicate device name.
                    return Pool::invalid(driver, name);
                }
            }
        }
        if !self.features.partitionable_devices {
            return pool;
        }
        for &i in &counter_slices {
            for set in entries[i as usize].slice.spec.shared_counters.iter().flatten() {
                if pool.counter_sets.iter().any(|s| s.name == set.name) {
                    // Duplicate counter set name.
                    return Pool::invalid(driver, name);
                }
                if set.counters.values().any(|c| counter_value(&c.value).is_err()) {
                    return Pool::invalid(driver, name);
                }
                pool.counter_sets.push(set);
            }
        }
        if !self.consumption_valid(&pool.counter_sets, &group.slices) {
            return Pool::invalid(driver, name);
        }
        let Some(all) = all.filter(|all| all.len() != group.slices.len()) else {
            return pool;
        };
        // The pool's slices that are not for this node: their allocated
        // devices consume counters too, so they must be valid as well.
        let seen: FxHashSet<&str> = group.slices.iter().map(|&i| entries[i as usize].name()).collect();
        pool.other_slices = all
            .iter()
            .copied()
            .filter(|&i| !seen.contains(entries[i as usize].name()))
            .collect();
        if !self.consumption_valid(&pool.counter_sets, &pool.other_slices) {
            return Pool::invalid(driver, name);
        }
        pool
    }

    /// Go's `validateDeviceCounterConsumption`: every counter a device
    /// consumes exists in the pool (and, here, is a quantity).
    fn consumption_valid(&self, sets: &[&CounterSet], slices: &[u32]) -> bool {
        slices.iter().all(|&i| {
            self.index.entries[i as usize].devices.iter().all(|dev| {
                dev.consumes_counters.iter().flatten().all(|cc| {
                    let Some(set) = sets.iter().find(|s| s.name == cc.counter_set) else {
                        return false;
                    };
                    cc.counters
                        .iter()
                        .all(|(n, c)| set.counters.contains_key(n) && counter_value(&c.value).is_ok())
                })
            })
        })
    }

    /// The counters a (valid) pool has left after the allocated devices.
    pub(super) fn available_counters(&self, pool: &Pool<'a>) -> Arc<Counters<'a>> {
        let key = (pool.driver, pool.name);
        if let Some(c) = self.available.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return c.clone();
        }
        let mut left: Counters<'a> = pool
            .counter_sets
            .iter()
            .map(|set| {
                let counters = set
                    .counters
                    .iter()
                    .map(|(n, c)| (n.as_str(), counter_value(&c.value).unwrap_or(0)))
                    .collect();
                (set.name.as_str(), counters)
            })
            .collect();
        for &s in pool.device_slices.iter().chain(&pool.other_slices) {
            for (d, dev) in self.entry(s).devices.iter().enumerate() {
                if !self.is_allocated(s, d as u32) {
                    continue;
                }
                for cc in dev.consumes_counters.iter().flatten() {
                    let Some((_, counters)) = left.iter_mut().find(|(n, _)| *n == cc.counter_set) else {
                        continue;
                    };
                    for (name, c) in &cc.counters {
                        if let Some((_, v)) = counters.iter_mut().find(|(n, _)| n == name) {
                            // May go below zero: then nothing is left.
                            *v -= counter_value(&c.value).unwrap_or(0);
                        }
                    }
                }
            }
        }
        let left = Arc::new(left);
        self.available
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key)
            .or_insert(left)
            .clone()
    }
}
