//! `fastest-node`: prefer the node with the lowest measured latency (an
//! HTTP response time from the monitoring system, in seconds), read from a
//! live metric source.
//!
//! Between two refreshes of the source every pod would see the same
//! "fastest" node; each pod placed there since the value was taken adds
//! `penaltyPerPod` of the measured latency. Each pod goes to the node whose
//! corrected latency is lowest, so the fastest node fills until its
//! corrected latency reaches the next node's, then both fill together (a
//! water level, not a share in proportion to speed: see plugins/README.md).
//! A node without a value (the monitoring system is down, the node is new)
//! gets a neutral score.
//!
//! Args: `{"source": "latency", "penaltyPerPod": 0.1}` (the defaults;
//! `penaltyPerPod: 0` turns the correction off).

use wasmsched_plugin::serde_json::Value;
use wasmsched_plugin::{Nodes, Plugin, Pod, Points};

/// Raw score of a node without a value.
const NO_VALUE: i64 = -1;
/// Normalized score of a node without a value: neither preferred nor avoided.
const NEUTRAL: i64 = 50;
/// Highest raw score (microseconds): keeps the arithmetic of NormalizeScore in range.
const MAX_RAW: i64 = 1_000_000_000_000;

struct FastestNode {
    source: String,
    penalty_per_pod: f64,
}

/// `floor(x + 0.5)`: the rounding every language's version of this plugin uses.
fn round(x: f64) -> f64 {
    (x + 0.5).floor()
}

impl Plugin for FastestNode {
    const NAME: &'static str = "fastest-node";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    fn points() -> Points {
        Points::SCORE | Points::NORMALIZE_SCORE
    }

    fn configure(args: &Value) -> Result<Self, String> {
        let args = args.as_object().ok_or("args: must be an object")?;
        let source = match args.get("source") {
            None => "latency".to_owned(),
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(_) => return Err("args.source: must be a non-empty string".into()),
        };
        let penalty_per_pod = match args.get("penaltyPerPod") {
            None => 0.1,
            Some(v) => v
                .as_f64()
                .filter(|p| p.is_finite() && *p >= 0.0)
                .ok_or("args.penaltyPerPod: must be a number >= 0")?,
        };
        let mut keys: Vec<&String> = args.keys().collect();
        keys.sort();
        if let Some(k) = keys.into_iter().find(|k| !["source", "penaltyPerPod"].contains(&k.as_str())) {
            return Err(format!("args: unknown field {k:?}"));
        }
        Ok(FastestNode { source, penalty_per_pod })
    }

    fn metric_sources(&self) -> Vec<String> {
        vec![self.source.clone()]
    }

    /// Raw score: the corrected latency in microseconds (lower is better).
    fn score(&self, _: &Pod, nodes: &Nodes) -> Result<Vec<i64>, String> {
        let metrics = nodes
            .metrics(&self.source)
            .map_err(|e| format!("metrics({}): {e}", self.source))?;
        Ok(metrics
            .into_iter()
            .map(|m| match m {
                Some(m) if m.value.is_finite() && m.value >= 0.0 => {
                    let corrected = m.value * (1.0 + self.penalty_per_pod * f64::from(m.pods_since));
                    (round(corrected * 1_000_000.0) as i64).min(MAX_RAW)
                }
                _ => NO_VALUE,
            })
            .collect())
    }

    /// Fastest → 100, slowest → 0, no value → 50.
    fn normalize_score(&self, _: &Pod, scores: Vec<i64>) -> Result<Vec<i64>, String> {
        let present = || scores.iter().copied().filter(|s| *s != NO_VALUE);
        let (Some(lo), Some(hi)) = (present().min(), present().max()) else {
            return Ok(vec![NEUTRAL; scores.len()]);
        };
        Ok(scores
            .iter()
            .map(|&s| match s {
                NO_VALUE => NEUTRAL,
                _ if hi == lo => 100,
                s => 100 - (s - lo) * 100 / (hi - lo),
            })
            .collect())
    }
}

wasmsched_plugin::export!(FastestNode);
