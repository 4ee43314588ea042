//! `label-spread`: spreads the pods that share a value of a custom label
//! (by default `app`) over a topology (by default one domain per node),
//! as a PodTopologySpread constraint would, but configured once for every
//! pod instead of written into each. It counts the cluster's pods through
//! the pod views of contract 0.2, at the cost of one host call per batch.
//!
//! - Filter: a node is rejected when placing the pod there would put more
//!   than `maxSkew` pods of its label value in the node's domain beyond
//!   the emptiest domain; nodes without the topology label are rejected
//!   for good.
//! - Score: fewer pods of the value on the node itself is better.
//!
//! Pods without the label are left alone. Args:
//! `{"label": "app", "topologyKey": "kubernetes.io/hostname", "maxSkew": 1}`.

use wasmsched_plugin::serde_json::Value;
use wasmsched_plugin::{
    ClusterEvent, EventActions, EventResource, Nodes, Plugin, Pod, PodSelector, Points, Rejection, Status, event,
    reject, reject_unresolvable, skip, success,
};

struct LabelSpread {
    label: String,
    topology_key: String,
    max_skew: u32,
}

fn non_empty(args: &Value, key: &str, default: &str) -> Result<String, String> {
    match args.get(key) {
        None => Ok(default.to_owned()),
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(_) => Err(format!("args.{key}: must be a non-empty string")),
    }
}

impl LabelSpread {
    /// The pods of the pod's namespace with its value of the label.
    fn peers(&self, pod: &Pod) -> Option<(String, PodSelector)> {
        let value = pod.label(&self.label)?;
        let selector = PodSelector::labels([(self.label.clone(), value.clone())]);
        Some((value, selector))
    }
}

impl Plugin for LabelSpread {
    const NAME: &'static str = "label-spread";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn points() -> Points {
        Points::PRE_FILTER | Points::FILTER | Points::SCORE | Points::NORMALIZE_SCORE
    }

    /// A rejected pod may fit once a peer goes or a domain appears.
    fn events() -> Option<Vec<ClusterEvent>> {
        Some(vec![
            event(
                EventResource::Pod,
                EventActions::ADD | EventActions::DELETE | EventActions::UPDATE_POD_LABEL,
            ),
            event(EventResource::Node, EventActions::ADD | EventActions::UPDATE_NODE_LABEL),
        ])
    }

    fn configure(args: &Value) -> Result<Self, String> {
        if !args.is_object() {
            return Err("args: must be a JSON object".into());
        }
        // The range is PodTopologySpread's (an int32).
        let max_skew = match args.get("maxSkew") {
            None => 1,
            Some(v) => v
                .as_u64()
                .filter(|n| (1..=i32::MAX as u64).contains(n))
                .ok_or(format!("args.maxSkew: must be an integer from 1 to {}", i32::MAX))? as u32,
        };
        Ok(LabelSpread {
            label: non_empty(args, "label", "app")?,
            topology_key: non_empty(args, "topologyKey", "kubernetes.io/hostname")?,
            max_skew,
        })
    }

    /// Pods without the label skip the filter.
    fn pre_filter(&self, pod: &Pod) -> Result<Status, String> {
        Ok(if pod.label(&self.label).is_some() { success() } else { skip() })
    }

    fn filter(&self, pod: &Pod, nodes: &Nodes) -> Result<Vec<Rejection>, String> {
        let Some((value, selector)) = self.peers(pod) else { return Ok(Vec::new()) };
        let min = nodes
            .domains(&self.topology_key, &selector)?
            .iter()
            .map(|(_, c)| *c)
            .min()
            .unwrap_or(0);
        let counts = nodes.domain_counts(&self.topology_key, &selector)?;
        let mut out = Vec::new();
        for (i, c) in counts.iter().enumerate() {
            match c {
                None => out.push(reject_unresolvable(
                    i as u32,
                    format!("node(s) didn't have label {}", self.topology_key),
                )),
                Some(c) if u64::from(*c) + 1 - u64::from(min) > u64::from(self.max_skew) => out.push(reject(
                    i as u32,
                    format!(
                        "node(s) would exceed maxSkew {} of pods with {}={value} per {}",
                        self.max_skew, self.label, self.topology_key
                    ),
                )),
                Some(_) => {}
            }
        }
        Ok(out)
    }

    /// Raw score: the pods of the value on the node.
    fn score(&self, pod: &Pod, nodes: &Nodes) -> Result<Vec<i64>, String> {
        let Some((_, selector)) = self.peers(pod) else { return Ok(vec![0; nodes.len() as usize]) };
        Ok(nodes.pod_counts(&selector)?.into_iter().map(i64::from).collect())
    }

    /// Fewest pods → 100, most → 0.
    fn normalize_score(&self, _pod: &Pod, scores: Vec<i64>) -> Result<Vec<i64>, String> {
        let max = scores.iter().copied().max().unwrap_or(0);
        if max == 0 {
            return Ok(vec![100; scores.len()]);
        }
        Ok(scores.into_iter().map(|s| 100 - s * 100 / max).collect())
    }
}

wasmsched_plugin::export!(LabelSpread);
