//! Live metrics for plugins: one value per node for each metric source of
//! the configuration (`metrics.sources`), with what was placed on the node
//! since the value was taken.
//!
//! The values come from outside (the daemon's Prometheus queries, or a
//! snapshot file for `simulate`); this module only keeps them. A source's
//! series are matched to nodes once per refresh (by node name, or by an
//! `instance` address matched to a node's addresses), so reading a value in
//! a cycle is an index by node id. When a value is installed, the node's
//! running count of placements ([`Placed`]) is recorded beside it: the
//! difference with the count when a plugin reads the value is what was
//! placed since, which the value cannot show yet (between two refreshes,
//! every pod would otherwise go to the same "best" node).

pub mod config;
pub mod snapshot;

use std::collections::HashMap;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::node::NodeInfo;

/// Pods bound or assumed on a node since the cache first saw it, and the
/// sum of their CPU and memory requests: a running count, never decreased
/// by a pod leaving (only by an assumption undone).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Placed {
    /// Pods.
    pub pods: i64,
    /// Their CPU requests, millicores.
    pub milli_cpu: i64,
    /// Their memory requests, bytes.
    pub memory: i64,
}

impl Placed {
    /// `self - base`, each count at least 0 (a node deleted and re-added
    /// starts counting again).
    pub fn since(self, base: Placed) -> Placed {
        Placed {
            pods: (self.pods - base.pods).max(0),
            milli_cpu: (self.milli_cpu - base.milli_cpu).max(0),
            memory: (self.memory - base.memory).max(0),
        }
    }
}

/// One series of a source's answer: the value of the node label
/// (`nodeLabel`) it carries, and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The node label's value: a node name, or an address (`10.0.0.5:9100`).
    pub node: String,
    /// The value.
    pub value: f64,
    /// When it was taken, milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// Placements to count as made since the value was taken, beyond those
    /// the cache sees from now on (snapshot files set it; 0 from a live
    /// source).
    pub since: Placed,
}

/// One node's value of a source.
#[derive(Debug, Clone)]
pub struct Sample {
    /// The node it is for (a node id is reused after its node goes).
    pub node: Arc<str>,
    /// The value.
    pub value: f64,
    /// When it was taken, milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// The node's [`Placed`] count when the value was taken.
    pub base: Placed,
}

/// What a plugin reads for one node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// The value.
    pub value: f64,
    /// Its age, milliseconds.
    pub age_ms: u64,
    /// What was placed on the node since.
    pub since: Placed,
}

/// The current values of one source, by node id.
#[derive(Debug, Clone, Default)]
pub struct SourceValues {
    /// Values older than this read as absent (none: never).
    pub stale_after_ms: Option<i64>,
    by_id: Vec<Option<Sample>>,
}

impl SourceValues {
    /// The value for `node` at `now_ms`: none when the source has none for
    /// it or it is stale.
    pub fn reading(&self, node: &NodeInfo, now_ms: i64) -> Option<Reading> {
        let s = self.by_id.get(node.node.id as usize)?.as_ref()?;
        if *s.node != *node.node.name {
            return None;
        }
        let age = now_ms.saturating_sub(s.at_ms).max(0);
        if self.stale_after_ms.is_some_and(|limit| age > limit) {
            return None;
        }
        Some(Reading {
            value: s.value,
            age_ms: age as u64,
            since: node.usage.placed.since(s.base),
        })
    }
}

/// Every configured source's values.
#[derive(Debug, Clone, Default)]
pub struct MetricTable {
    sources: FxHashMap<String, Arc<SourceValues>>,
}

impl MetricTable {
    /// The values of a configured source (none: no such source).
    pub fn source(&self, name: &str) -> Option<&SourceValues> {
        self.sources.get(name).map(|s| &**s)
    }

    /// The configured sources' names, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut n: Vec<&str> = self.sources.keys().map(String::as_str).collect();
        n.sort_unstable();
        n
    }

    /// Declares a source (before its first values), keeping its values if
    /// it is known already.
    pub fn define(&mut self, name: &str, stale_after_ms: Option<i64>) {
        let s = self.sources.entry(name.to_owned()).or_default();
        Arc::make_mut(s).stale_after_ms = stale_after_ms;
    }

    /// The error a plugin gets for a source nobody configured.
    pub fn unknown(&self, name: &str) -> String {
        let names = self.names();
        if names.is_empty() {
            format!("no metric source {name:?} is configured (metrics.sources is empty)")
        } else {
            format!(
                "no metric source {name:?} is configured (metrics.sources: {})",
                names.join(", ")
            )
        }
    }

    /// Replaces a source's values with `series`, matched to `nodes`;
    /// defines the source if needed. Reports what matched and what did not.
    pub fn install(&mut self, name: &str, series: &[Series], nodes: &[Arc<NodeInfo>]) -> InstallReport {
        let mut report = InstallReport::default();
        let by_name: HashMap<&str, &Arc<NodeInfo>> = nodes.iter().map(|n| (n.name(), n)).collect();
        let mut by_address: Option<HashMap<&str, &Arc<NodeInfo>>> = None;
        // Node id → (series matched, the sample of the first).
        let mut found: FxHashMap<u32, (u32, Sample)> = FxHashMap::default();
        for s in series {
            if !s.value.is_finite() {
                report.not_finite.push(s.node.clone());
                continue;
            }
            let host = host_of(&s.node);
            let node = by_name
                .get(s.node.as_str())
                .or_else(|| by_name.get(host))
                .or_else(|| by_address.get_or_insert_with(|| addresses(nodes)).get(host));
            let Some(node) = node else {
                report.unmatched.push(s.node.clone());
                continue;
            };
            let sample = Sample {
                node: Arc::from(node.name()),
                value: s.value,
                at_ms: s.at_ms,
                base: Placed {
                    pods: node.usage.placed.pods - s.since.pods,
                    milli_cpu: node.usage.placed.milli_cpu - s.since.milli_cpu,
                    memory: node.usage.placed.memory - s.since.memory,
                },
            };
            found
                .entry(node.node.id)
                .and_modify(|(n, _)| *n += 1)
                .or_insert((1, sample));
        }
        let slot = self.sources.entry(name.to_owned()).or_default();
        let values = Arc::make_mut(slot);
        values.by_id.clear();
        for (id, (n, sample)) in found {
            if n > 1 {
                // Several series for one node: which one holds is unknown,
                // so none does.
                report.ambiguous.push((sample.node.to_string(), n));
                continue;
            }
            let id = id as usize;
            if values.by_id.len() <= id {
                values.by_id.resize(id + 1, None);
            }
            values.by_id[id] = Some(sample);
            report.matched += 1;
        }
        report.ambiguous.sort_unstable();
        report
    }
}

/// What [`MetricTable::install`] matched.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InstallReport {
    /// Nodes that got a value.
    pub matched: usize,
    /// Series' node label values that name no node.
    pub unmatched: Vec<String>,
    /// Nodes with several series (none kept), with their number.
    pub ambiguous: Vec<(String, u32)>,
    /// Series whose value is NaN or infinite (dropped), by node label value.
    pub not_finite: Vec<String>,
}

/// The host of an `instance` label: `10.0.0.5:9100` → `10.0.0.5`,
/// `[fd00::1]:9100` → `fd00::1`, a bare name or IPv6 address as is.
fn host_of(instance: &str) -> &str {
    if let Some(rest) = instance.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match instance.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => instance,
    }
}

/// Every address of every node (`status.addresses`: InternalIP, Hostname,
/// ExternalIP, ...), to match `instance` labels.
fn addresses(nodes: &[Arc<NodeInfo>]) -> HashMap<&str, &Arc<NodeInfo>> {
    let mut out = HashMap::new();
    for n in nodes {
        let addrs = n.node.object.status.as_ref().and_then(|s| s.addresses.as_ref());
        for a in addrs.into_iter().flatten() {
            out.entry(a.address.as_str()).or_insert(n);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::Cache;
    use crate::node::NodeData;
    use k8s_openapi::api::core::v1::Node;

    fn node(name: &str, ip: &str) -> NodeData {
        let n: Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": format!("{name}.lan")}]}
        }))
        .unwrap();
        NodeData::from_node(&n).unwrap()
    }

    fn series(node: &str, value: f64) -> Series {
        Series {
            node: node.into(),
            value,
            at_ms: 1_000,
            since: Placed::default(),
        }
    }

    #[test]
    fn series_match_names_addresses_and_instances() {
        assert_eq!(host_of("10.0.0.5:9100"), "10.0.0.5");
        assert_eq!(host_of("[fd00::1]:9100"), "fd00::1");
        assert_eq!(host_of("fd00::1"), "fd00::1");
        assert_eq!(host_of("node-a"), "node-a");
        let mut cache = Cache::new();
        for (n, ip) in [
            ("a", "10.0.0.1"),
            ("b", "10.0.0.2"),
            ("c", "10.0.0.3"),
            ("d", "10.0.0.4"),
        ] {
            cache.upsert_node(node(n, ip));
        }
        let report = cache.install_metrics(
            "cpu",
            &[
                series("a", 0.5),
                series("10.0.0.2:9100", 0.25),
                series("c.lan", 0.75),
                series("d", 0.1),
                series("10.0.0.4:9100", 0.2),
                series("gone", 1.0),
                series("a-bis", f64::NAN),
            ],
        );
        let t = cache.metrics().clone();
        assert_eq!(report.matched, 3);
        assert_eq!(report.unmatched, ["gone"]);
        assert_eq!(report.ambiguous, [("d".to_owned(), 2)]);
        assert_eq!(report.not_finite, ["a-bis"]);
        let s = t.source("cpu").unwrap();
        let value = |n: &str| s.reading(cache.node(n).unwrap(), 1_500).map(|r| r.value);
        assert_eq!(
            [value("a"), value("b"), value("c"), value("d")],
            [Some(0.5), Some(0.25), Some(0.75), None]
        );
        assert!(t.source("memory").is_none());
        assert!(
            t.unknown("memory").contains("metrics.sources: cpu"),
            "{}",
            t.unknown("memory")
        );
    }

    #[test]
    fn readings_age_go_stale_and_count_what_was_placed_since() {
        let mut cache = Cache::new();
        cache.upsert_node(node("a", "10.0.0.1"));
        cache.define_metric_source("cpu", Some(10_000));
        let mut old = series("a", 0.5);
        old.since = Placed {
            pods: 1,
            milli_cpu: 100,
            memory: 0,
        };
        cache.install_metrics("cpu", &[old]);
        let t = cache.metrics().clone();
        let pod = |name: &str| {
            let p: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": "ns", "uid": name},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}}]}
            }))
            .unwrap();
            Arc::new(crate::pod::PodInfo::from_pod(&p).unwrap())
        };
        cache.assume_pod(pod("p1"), "a");
        cache.assume_pod(pod("p2"), "a");
        // An assumption undone was never placed; a pod leaving does not
        // undo its placement.
        cache.forget_pod("ns/p2", "p2");
        cache.remove_pod("ns/p1");
        cache.assume_pod(pod("p3"), "a");
        let s = t.source("cpu").unwrap();
        let r = s.reading(cache.node("a").unwrap(), 4_000).unwrap();
        assert_eq!(r.age_ms, 3_000);
        assert_eq!(
            r.since,
            Placed {
                pods: 3,
                milli_cpu: 600,
                memory: 2 << 30
            }
        );
        assert!(s.reading(cache.node("a").unwrap(), 11_001).is_none(), "stale");
        // A node that goes and comes back under another id reads nothing
        // until the next refresh.
        cache.remove_node("a");
        cache.upsert_node(node("b", "10.0.0.2"));
        assert!(s.reading(cache.node("b").unwrap(), 4_000).is_none());
    }
}
