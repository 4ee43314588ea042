//! `load-aware`: keep pods off busy nodes, by measured usage.
//!
//! Two live metric sources give each node's CPU and memory usage as a
//! fraction (0..1), e.g. from a stock node_exporter through Prometheus:
//!
//! - `cpu`: `1 - avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}[1m]))`
//! - `memory`: `1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes`
//!
//! The requests of the pods placed on a node since its value was taken are
//! added (as a fraction of the node's allocatable), since the value cannot
//! show them yet. Filter rejects a node above `cpuThreshold` or
//! `memoryThreshold`; Score prefers the least used. A node without values
//! passes and scores neutral.
//!
//! Args: `{"cpuSource": "cpu", "memorySource": "memory", "cpuThreshold": 0.8,
//! "memoryThreshold": 0.8}` (the defaults).

use wasmsched_plugin::serde_json::{Map, Value};
use wasmsched_plugin::{Code, Nodes, Plugin, Pod, Points, Rejection};

/// Score of a node without values.
const NEUTRAL: i64 = 50;

struct LoadAware {
    cpu_source: String,
    memory_source: String,
    cpu_threshold: f64,
    memory_threshold: f64,
}

/// `floor(x + 0.5)`: the rounding every language's version of this plugin uses.
fn round(x: f64) -> f64 {
    (x + 0.5).floor()
}

fn source(args: &Map<String, Value>, key: &str, default: &str) -> Result<String, String> {
    match args.get(key) {
        None => Ok(default.to_owned()),
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(_) => Err(format!("args.{key}: must be a non-empty string")),
    }
}

fn threshold(args: &Map<String, Value>, key: &str) -> Result<f64, String> {
    match args.get(key) {
        None => Ok(0.8),
        Some(v) => v
            .as_f64()
            .filter(|t| *t > 0.0 && *t <= 1.0)
            .ok_or_else(|| format!("args.{key}: must be a number in (0, 1]")),
    }
}

impl LoadAware {
    /// Each node's usage from `source`, corrected by the requests placed
    /// since (`resource` is `cpu` or `memory`); none without a value.
    fn usage(&self, nodes: &Nodes, source: &str, resource: &str) -> Result<Vec<Option<f64>>, String> {
        let metrics = nodes.metrics(source).map_err(|e| format!("metrics({source}): {e}"))?;
        let allocatable = nodes.allocatable_all(resource);
        Ok(metrics
            .into_iter()
            .zip(allocatable)
            .map(|(m, alloc)| {
                let m = m.filter(|m| m.value.is_finite())?;
                let since = if resource == "cpu" { m.cpu_since } else { m.memory_since };
                let added = if alloc > 0 { since as f64 / alloc as f64 } else { 0.0 };
                Some(m.value + added)
            })
            .collect())
    }
}

impl Plugin for LoadAware {
    const NAME: &'static str = "load-aware";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    fn points() -> Points {
        Points::FILTER | Points::SCORE
    }

    fn configure(args: &Value) -> Result<Self, String> {
        let args = args.as_object().ok_or("args: must be an object")?;
        let plugin = LoadAware {
            cpu_source: source(args, "cpuSource", "cpu")?,
            memory_source: source(args, "memorySource", "memory")?,
            cpu_threshold: threshold(args, "cpuThreshold")?,
            memory_threshold: threshold(args, "memoryThreshold")?,
        };
        let known = ["cpuSource", "memorySource", "cpuThreshold", "memoryThreshold"];
        let mut keys: Vec<&String> = args.keys().collect();
        keys.sort();
        if let Some(k) = keys.into_iter().find(|k| !known.contains(&k.as_str())) {
            return Err(format!("args: unknown field {k:?}"));
        }
        Ok(plugin)
    }

    fn metric_sources(&self) -> Vec<String> {
        vec![self.cpu_source.clone(), self.memory_source.clone()]
    }

    fn filter(&self, _: &Pod, nodes: &Nodes) -> Result<Vec<Rejection>, String> {
        let cpu = self.usage(nodes, &self.cpu_source, "cpu")?;
        let memory = self.usage(nodes, &self.memory_source, "memory")?;
        let reject = |index: usize, reason: &str| Rejection {
            index: index as u32,
            code: Code::Unschedulable,
            reason: reason.into(),
        };
        Ok(cpu
            .iter()
            .zip(&memory)
            .enumerate()
            .filter_map(|(i, (c, m))| {
                if c.is_some_and(|c| c > self.cpu_threshold) {
                    Some(reject(i, "node(s) had CPU usage above the threshold"))
                } else if m.is_some_and(|m| m > self.memory_threshold) {
                    Some(reject(i, "node(s) had memory usage above the threshold"))
                } else {
                    None
                }
            })
            .collect())
    }

    /// The least used node scores highest: 100 × (1 − mean usage).
    fn score(&self, _: &Pod, nodes: &Nodes) -> Result<Vec<i64>, String> {
        let cpu = self.usage(nodes, &self.cpu_source, "cpu")?;
        let memory = self.usage(nodes, &self.memory_source, "memory")?;
        Ok(cpu
            .iter()
            .zip(&memory)
            .map(|(c, m)| {
                let present: Vec<f64> = [*c, *m].into_iter().flatten().collect();
                if present.is_empty() {
                    return NEUTRAL;
                }
                let mean = present.iter().sum::<f64>() / present.len() as f64;
                (round((1.0 - mean) * 100.0) as i64).clamp(0, 100)
            })
            .collect())
    }
}

wasmsched_plugin::export!(LoadAware);
