//! {{name}}: scores each node by a numeric label (args `{"label": "..."}`,
//! default `score`), clamped to 0..=100; nodes without it score 0.

use wasmsched_plugin::{Nodes, Plugin, Pod, Points, serde_json::Value};

struct Scaffold {
    label: String,
}

impl Plugin for Scaffold {
    const NAME: &'static str = "{{name}}";
    fn points() -> Points {
        Points::SCORE
    }
    fn configure(args: &Value) -> Result<Self, String> {
        Ok(Scaffold { label: args.get("label").and_then(Value::as_str).unwrap_or("score").to_owned() })
    }
    fn score(&self, _pod: &Pod, nodes: &Nodes) -> Result<Vec<i64>, String> {
        Ok(nodes.label_numbers(&self.label).into_iter().map(|v| v.map_or(0, |v| v.clamp(0.0, 100.0) as i64)).collect())
    }
}

wasmsched_plugin::export!(Scaffold);
