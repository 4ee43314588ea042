//! `node-price`: prefer the node with the lowest price, read from a node
//! annotation (key configurable). Nodes without a valid price score 0; the
//! cheapest scores 100, the dearest 0, the others in between.
//!
//! Args: `{"annotation": "price"}` (the default).

use std::sync::Mutex;

wit_bindgen::generate!({ world: "scheduler-plugin", path: "../../../../wit" });

use exports::wasmsched::plugin::plugin::{Guest, PluginMetadata, Points, Rejection, Status};
use wasmsched::plugin::cluster::{Nodes, Pod};

static ANNOTATION: Mutex<String> = Mutex::new(String::new());

/// Raw score of a node without a price.
const NO_PRICE: i64 = -1;

struct NodePrice;

impl Guest for NodePrice {
    fn metadata() -> PluginMetadata {
        PluginMetadata {
            name: "node-price".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            points: Points::SCORE | Points::NORMALIZE_SCORE,
        }
    }

    fn configure(args: String) -> Result<(), String> {
        let key = match find_string(&args, "annotation") {
            Some(k) if k.is_empty() => return Err("args.annotation: must not be empty".into()),
            Some(k) => k,
            None => "price".into(),
        };
        *ANNOTATION.lock().unwrap() = key;
        Ok(())
    }

    fn pre_filter(_: &Pod) -> Result<Status, String> {
        Err("not implemented".into())
    }

    fn filter(_: &Pod, _: &Nodes) -> Result<Vec<Rejection>, String> {
        Err("not implemented".into())
    }

    fn pre_score(_: &Pod, _: &Nodes) -> Result<Status, String> {
        Err("not implemented".into())
    }

    /// Raw score: the price in thousandths (a price of 0.25 is 250).
    fn score(_: &Pod, nodes: &Nodes) -> Result<Vec<i64>, String> {
        let key = ANNOTATION.lock().unwrap();
        // One host call for the whole batch, prices already parsed.
        Ok(nodes
            .annotation_numbers(&key)
            .into_iter()
            .map(|p| p.filter(|p| *p >= 0.0).map_or(NO_PRICE, |p| (p * 1000.0).round() as i64))
            .collect())
    }

    /// Cheapest → 100, dearest → 0; no price → 0.
    fn normalize_score(_: &Pod, scores: Vec<i64>) -> Result<Vec<i64>, String> {
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

/// The string value of `"key": "..."` in a flat JSON object (enough for
/// this plugin's args, without a JSON dependency in the component).
fn find_string(json: &str, key: &str) -> Option<String> {
    let at = json.find(&format!("\"{key}\""))?;
    let rest = json[at + key.len() + 2..].trim_start().strip_prefix(':')?.trim_start();
    let body = rest.strip_prefix('"')?;
    Some(body[..body.find('"')?].to_owned())
}

export!(NodePrice);
