//! `namespace-quota`: a per-namespace quota of one resource, counted by the
//! scheduler (contract 0.7). Each namespace with a limit may have at most
//! that much of the resource reserved by the pods this scheduler placed.
//!
//! The usage lives in the host's state, shared by every instance of the
//! plugin and kept across pods (and across a new version: `keep-state`):
//!
//! - `used/NAMESPACE`: the namespace's usage, a counter (`state::add`);
//! - `pod/UID`: what the pod of that UID took, 8 bytes little-endian, so
//!   that Unreserve gives back exactly that.
//!
//! - PreFilter: rejects the pod (unschedulable) when its request would take
//!   the namespace past its limit.
//! - Reserve: takes the request, in one step however many instances run at
//!   once, and gives it back at once when another pod took the room first.
//! - Unreserve: gives back what the pod took.
//!
//! Args: `{"resource": "cpu", "limits": {"NAMESPACE": AMOUNT}}`, amounts in
//! the contract's units (millicores for `cpu`, bytes for `memory`, a count
//! otherwise). A namespace without a limit is not counted.

use std::collections::BTreeMap;

use wasmsched_plugin::serde_json::Value;
use wasmsched_plugin::{Nodes, Plugin, Pod, Points, Status, state, success, unschedulable};

struct NamespaceQuota {
    resource: String,
    limits: BTreeMap<String, i64>,
}

fn used_key(namespace: &str) -> String {
    format!("used/{namespace}")
}

fn pod_key(uid: &str) -> String {
    format!("pod/{uid}")
}

impl NamespaceQuota {
    /// Why the pod does not fit, `used` being the namespace's usage
    /// without it.
    fn exceeded(&self, namespace: &str, used: i64, req: i64, limit: i64) -> Status {
        unschedulable(format!(
            "namespace {namespace}: {} quota exceeded (used {used} + requested {req} > limit {limit})",
            self.resource
        ))
    }
}

impl Plugin for NamespaceQuota {
    const NAME: &'static str = "namespace-quota";
    const VERSION: &'static str = "1.0.0";
    /// The usage counts pods already placed: a new version goes on from it.
    const KEEP_STATE: bool = true;

    fn points() -> Points {
        Points::PRE_FILTER | Points::RESERVE
    }

    fn configure(args: &Value) -> Result<Self, String> {
        let empty = Default::default();
        let args = match args {
            Value::Object(m) => m,
            // `null` is no args.
            Value::Null => &empty,
            _ => return Err("args must be a JSON object".into()),
        };
        if let Some(key) = args.keys().find(|k| *k != "resource" && *k != "limits") {
            return Err(format!("unknown field {key}"));
        }
        let resource = match args.get("resource") {
            None => "cpu".to_owned(),
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Err("resource must be a string".into()),
        };
        let limits = match args.get("limits") {
            None => BTreeMap::new(),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(ns, v)| {
                    v.as_i64()
                        .filter(|n| *n >= 0)
                        .map(|n| (ns.clone(), n))
                        .ok_or(format!("limits.{ns} must be a non-negative integer"))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("limits must be an object".into()),
        };
        Ok(NamespaceQuota { resource, limits })
    }

    /// Rejects the pod while its namespace has no room for it.
    fn pre_filter(&self, pod: &Pod) -> Result<Status, String> {
        let namespace = pod.namespace();
        let Some(&limit) = self.limits.get(&namespace) else {
            return Ok(success());
        };
        let req = pod.request(&self.resource);
        let used = state::get_i64(&used_key(&namespace)).unwrap_or(0);
        if used.saturating_add(req) > limit {
            return Ok(self.exceeded(&namespace, used, req, limit));
        }
        Ok(success())
    }

    /// Takes the pod's request from its namespace's room, or fails when
    /// another pod took it since PreFilter.
    fn reserve(&self, pod: &Pod, _: &Nodes) -> Result<Status, String> {
        let namespace = pod.namespace();
        let Some(&limit) = self.limits.get(&namespace) else {
            return Ok(success());
        };
        let req = pod.request(&self.resource);
        let key = used_key(&namespace);
        let new = state::add(&key, req)?;
        if new > limit {
            state::add(&key, -req)?;
            return Ok(self.exceeded(&namespace, new - req, req, limit));
        }
        if let Err(e) = state::set(&pod_key(&pod.uid()), &req.to_le_bytes()) {
            // Unreserve could not give it back: do not take it.
            state::add(&key, -req)?;
            return Err(e);
        }
        Ok(success())
    }

    /// Gives back what the pod took.
    fn unreserve(&self, pod: &Pod, _node: &str) {
        let key = pod_key(&pod.uid());
        let Some(taken) = state::get(&key) else {
            return;
        };
        if let Ok(amount) = <[u8; 8]>::try_from(taken.as_slice()).map(i64::from_le_bytes) {
            // Cannot fail: the counter holds at least the amount taken.
            let _ = state::add(&used_key(&pod.namespace()), -amount);
        }
        state::remove(&key);
    }
}

wasmsched_plugin::export!(NamespaceQuota);
