//! `label-gate`: a pod that asks for a node class with an annotation (by
//! default `cluster.type: raspberry`) only goes to nodes whose label of the
//! same key has that value. Pods that ask for nothing pass everywhere.
//!
//! Args: `{"key": "cluster.type"}`.

use std::sync::Mutex;

wit_bindgen::generate!({ world: "scheduler-plugin", path: "../../../../wit" });

use exports::wasmsched::plugin::plugin::{Code, Guest, PluginMetadata, Points, Rejection, Status};
use wasmsched::plugin::cluster::{Nodes, Pod};

static KEY: Mutex<String> = Mutex::new(String::new());

struct LabelGate;

impl Guest for LabelGate {
    fn metadata() -> PluginMetadata {
        PluginMetadata {
            name: "label-gate".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            points: Points::PRE_FILTER | Points::FILTER,
        }
    }

    fn configure(args: String) -> Result<(), String> {
        let key = find_string(&args, "key").unwrap_or_else(|| "cluster.type".into());
        if key.is_empty() {
            return Err("args.key: must not be empty".into());
        }
        *KEY.lock().unwrap() = key;
        Ok(())
    }

    /// Pods that ask for no class skip the filter.
    fn pre_filter(pod: &Pod) -> Result<Status, String> {
        let key = KEY.lock().unwrap();
        let code = if pod.annotation(&key).is_some() { Code::Success } else { Code::Skip };
        Ok(Status { code, reason: String::new() })
    }

    fn filter(pod: &Pod, nodes: &Nodes) -> Result<Vec<Rejection>, String> {
        let key = KEY.lock().unwrap();
        let Some(want) = pod.annotation(&key) else { return Ok(Vec::new()) };
        Ok((0..nodes.len())
            .filter(|&i| nodes.label(i, &key).as_deref() != Some(want.as_str()))
            .map(|i| Rejection {
                index: i,
                code: Code::UnschedulableAndUnresolvable,
                reason: format!("node(s) were not of the requested {key} {want}"),
            })
            .collect())
    }

    fn pre_score(_: &Pod, _: &Nodes) -> Result<Status, String> {
        Err("not implemented".into())
    }

    fn score(_: &Pod, _: &Nodes) -> Result<Vec<i64>, String> {
        Err("not implemented".into())
    }

    fn normalize_score(_: &Pod, _: Vec<i64>) -> Result<Vec<i64>, String> {
        Err("not implemented".into())
    }
}

fn find_string(json: &str, key: &str) -> Option<String> {
    let at = json.find(&format!("\"{key}\""))?;
    let rest = json[at + key.len() + 2..].trim_start().strip_prefix(':')?.trim_start();
    let body = rest.strip_prefix('"')?;
    Some(body[..body.find('"')?].to_owned())
}

export!(LabelGate);
