//! `node-price`: prefer the node with the lowest price, read from a node
//! annotation (key configurable). Nodes without a valid price score 0; the
//! cheapest scores 100, the dearest 0, the others in between.
//!
//! Args: `{"annotation": "price"}` (the default).

use wasmsched_plugin::{Nodes, Plugin, Pod, Points, serde_json::Value};

/// Raw score of a node without a price.
const NO_PRICE: i64 = -1;

struct NodePrice {
    annotation: String,
}

impl Plugin for NodePrice {
    const NAME: &'static str = "node-price";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    fn points() -> Points {
        Points::SCORE | Points::NORMALIZE_SCORE
    }

    fn configure(args: &Value) -> Result<Self, String> {
        let annotation = match args.get("annotation") {
            None => "price".to_owned(),
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(_) => return Err("args.annotation: must not be empty".into()),
        };
        Ok(NodePrice { annotation })
    }

    /// Raw score: the price in thousandths (a price of 0.25 is 250). One host
    /// call for the whole batch, prices already parsed.
    fn score(&self, _: &Pod, nodes: &Nodes) -> Result<Vec<i64>, String> {
        Ok(nodes
            .annotation_numbers(&self.annotation)
            .into_iter()
            .map(|p| p.filter(|p| *p >= 0.0).map_or(NO_PRICE, |p| (p * 1000.0).round() as i64))
            .collect())
    }

    /// Cheapest → 100, dearest → 0; no price → 0.
    fn normalize_score(&self, _: &Pod, scores: Vec<i64>) -> Result<Vec<i64>, String> {
        let priced = || scores.iter().copied().filter(|s| *s != NO_PRICE);
        let (Some(lo), Some(hi)) = (priced().min(), priced().max()) else {
            return Ok(vec![0; scores.len()]);
        };
        Ok(scores
            .iter()
            .map(|&s| match s {
                NO_PRICE => 0,
                _ if hi == lo => 100,
                s => 100 - (s - lo) * 100 / (hi - lo),
            })
            .collect())
    }
}

wasmsched_plugin::export!(NodePrice);
