//! `label-gate`: a pod that asks for a node class with an annotation (by
//! default `cluster.type: raspberry`) only goes to nodes whose label of the
//! same key has that value. Pods that ask for nothing pass everywhere.
//!
//! Args: `{"key": "cluster.type"}`.

use wasmsched_plugin::{Nodes, Plugin, Pod, Points, Rejection, Status, reject_unresolvable, serde_json::Value, skip, success};

struct LabelGate {
    key: String,
}

impl Plugin for LabelGate {
    const NAME: &'static str = "label-gate";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    fn points() -> Points {
        Points::PRE_FILTER | Points::FILTER
    }

    fn configure(args: &Value) -> Result<Self, String> {
        let key = args.get("key").and_then(Value::as_str).unwrap_or("cluster.type");
        if key.is_empty() {
            return Err("args.key: must not be empty".into());
        }
        Ok(LabelGate { key: key.to_owned() })
    }

    /// Pods that ask for no class skip the filter.
    fn pre_filter(&self, pod: &Pod) -> Result<Status, String> {
        Ok(if pod.annotation(&self.key).is_some() { success() } else { skip() })
    }

    fn filter(&self, pod: &Pod, nodes: &Nodes) -> Result<Vec<Rejection>, String> {
        let Some(want) = pod.annotation(&self.key) else { return Ok(Vec::new()) };
        let reason = format!("node(s) were not of the requested {} {want}", self.key);
        Ok(nodes
            .label_values(&self.key)
            .iter()
            .enumerate()
            .filter(|(_, v)| v.as_deref() != Some(want.as_str()))
            .map(|(i, _)| reject_unresolvable(i as u32, reason.clone()))
            .collect())
    }
}

wasmsched_plugin::export!(LabelGate);
