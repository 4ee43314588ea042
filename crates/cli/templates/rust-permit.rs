//! {{name}}: holds the pods of a group (label `group`, key in args
//! `{"label": "..."}`) at Permit until `min` of them (args `{"min": N}`,
//! default 2) are reserved, then lets them be bound together; a pod waits
//! at most 30 s. The count lives in the host's state: instances are pooled
//! and share no memory.

use std::time::Duration;

use wasmsched_plugin::{Nodes, Permit, Plugin, Pod, Points, Status, serde_json::Value, state, success, waiting};

struct Scaffold {
    label: String,
    min: i64,
}

impl Scaffold {
    /// The state key counting the pod's group, if it has one.
    fn key(&self, pod: &Pod) -> Option<String> {
        pod.label(&self.label).map(|group| format!("reserved/{}/{group}", pod.namespace()))
    }
}

impl Plugin for Scaffold {
    const NAME: &'static str = "{{name}}";
    fn points() -> Points {
        // RESERVE declares Reserve and Unreserve.
        Points::RESERVE | Points::PERMIT
    }
    fn configure(args: &Value) -> Result<Self, String> {
        Ok(Scaffold {
            label: args.get("label").and_then(Value::as_str).unwrap_or("group").to_owned(),
            min: args.get("min").and_then(Value::as_i64).unwrap_or(2),
        })
    }
    // Reserve: count the pod in its group, in one step across instances.
    fn reserve(&self, pod: &Pod, _nodes: &Nodes) -> Result<Status, String> {
        if let Some(key) = self.key(pod) {
            state::add(&key, 1)?;
        }
        Ok(success())
    }
    // Unreserve: the pod will not be bound (rejected, timed out, binding
    // failed): take it out of the count. It cannot fail.
    fn unreserve(&self, pod: &Pod, _node: &str) {
        if let Some(key) = self.key(pod) {
            let _ = state::add(&key, -1);
        }
    }
    // Permit: wait until the group is complete; the pod that completes it
    // allows the others of its group, which are waiting.
    fn permit(&self, pod: &Pod, _nodes: &Nodes) -> Result<Permit, String> {
        let (Some(key), Some(group)) = (self.key(pod), pod.label(&self.label)) else {
            return Ok(Permit::Allow);
        };
        if state::get_i64(&key).unwrap_or(0) < self.min {
            return Ok(Permit::Wait(Duration::from_secs(30)));
        }
        let namespace = pod.namespace();
        for w in waiting::pods() {
            if w.namespace == namespace && w.label(&self.label) == Some(group.as_str()) {
                waiting::allow(&w.uid);
            }
        }
        Ok(Permit::Allow)
    }
}

wasmsched_plugin::export!(Scaffold);
