//! {{name}}: rejects nodes that lack a label (args `{"label": "..."}`,
//! default `wasmsched.io/allowed`).

use wasmsched_plugin::{Nodes, Plugin, Pod, Points, Rejection, reject, serde_json::Value};

struct Scaffold {
    label: String,
}

impl Plugin for Scaffold {
    const NAME: &'static str = "{{name}}";
    fn points() -> Points {
        Points::FILTER
    }
    fn configure(args: &Value) -> Result<Self, String> {
        Ok(Scaffold { label: args.get("label").and_then(Value::as_str).unwrap_or("wasmsched.io/allowed").to_owned() })
    }
    fn filter(&self, _pod: &Pod, nodes: &Nodes) -> Result<Vec<Rejection>, String> {
        let reason = format!("node(s) had no label {}", self.label);
        Ok(nodes
            .label_values(&self.label)
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_none())
            .map(|(i, _)| reject(i as u32, reason.clone()))
            .collect())
    }
}

wasmsched_plugin::export!(Scaffold);
