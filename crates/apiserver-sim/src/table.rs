//! `meta.k8s.io/v1` `Table` responses, which `kubectl get` asks for
//! (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), with the
//! columns kube-apiserver prints for nodes, pods and PodGroups (name and
//! age for the other kinds).

use serde_json::{Value, json};

use crate::resources::{NODES, POD_GROUPS, PODS};
use crate::store::Stored;

fn column(name: &str, kind: &str, priority: u8, description: &str) -> Value {
    let format = if name == "Name" { "name" } else { "" };
    json!({"name": name, "type": kind, "format": format, "description": description, "priority": priority})
}

/// The `Name` column every table starts with.
fn name_column() -> Value {
    column("Name", "string", 0, "Name must be unique within a namespace.")
}

/// The `Age` column (`metadata.creationTimestamp`).
fn age_column() -> Value {
    column(
        "Age",
        "string",
        0,
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
    )
}

/// A `Table` of `items` of resource `res`.
pub fn table(res: usize, items: &[Stored], rv: u64, continue_token: Option<&str>) -> Value {
    let columns = match res {
        NODES => vec![
            name_column(),
            column("Status", "string", 0, "The status of the node"),
            column("Roles", "string", 0, "The roles of the node"),
            age_column(),
            column("Version", "string", 0, "Kubelet Version reported by the node."),
            column("Internal-IP", "string", 1, "List of internal IPs for the node."),
        ],
        PODS => vec![
            name_column(),
            column(
                "Ready",
                "string",
                0,
                "The aggregate readiness state of this pod for accepting traffic.",
            ),
            column(
                "Status",
                "string",
                0,
                "The aggregate status of the containers in this pod.",
            ),
            column(
                "Restarts",
                "string",
                0,
                "The number of times the containers in this pod have been restarted.",
            ),
            age_column(),
            column("IP", "string", 1, "IP address allocated to the pod."),
            column("Node", "string", 1, "Name of the Node this pod is assigned to."),
        ],
        POD_GROUPS => vec![
            name_column(),
            column(
                "Policy",
                "string",
                0,
                "SchedulingPolicy defines the scheduling policy for this instance of the PodGroup. Controllers are expected to fill this field by copying it from a PodGroupTemplate. This field is immutable.",
            ),
            column("Workload", "string", 0, "Name of the referenced Workload object"),
            column("Status", "string", 0, "Status of the PodGroup"),
            age_column(),
        ],
        _ => vec![name_column(), age_column()],
    };
    let now = crate::store::now_ts();
    let rows: Vec<Value> = items
        .iter()
        .map(|s| {
            let o = &*s.value;
            let name = o.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
            let age = o
                .pointer("/metadata/creationTimestamp")
                .and_then(Value::as_str)
                .and_then(|t| t.parse::<k8s_openapi::jiff::Timestamp>().ok())
                .map(|t| human_age((now.as_second() - t.as_second()).max(0)))
                .unwrap_or_else(|| "<unknown>".into());
            let cells = match res {
                NODES => node_cells(o, name, age),
                PODS => pod_cells(o, name, age),
                POD_GROUPS => pod_group_cells(o, name, age),
                _ => vec![json!(name), json!(age)],
            };
            json!({
                "cells": cells,
                "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]},
            })
        })
        .collect();
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if let Some(c) = continue_token {
        meta["continue"] = json!(c);
    }
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "columnDefinitions": columns, "rows": rows})
}

fn node_cells(o: &Value, name: &str, age: String) -> Vec<Value> {
    let ready = o
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
        .map(|c| if c["status"] == "True" { "Ready" } else { "NotReady" })
        .unwrap_or("Unknown");
    let mut status = ready.to_owned();
    if o.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    let mut roles: Vec<&str> = o
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|l| {
            l.keys()
                .filter_map(|k| k.strip_prefix("node-role.kubernetes.io/"))
                .collect()
        })
        .unwrap_or_default();
    roles.sort_unstable();
    let roles = if roles.is_empty() {
        "<none>".to_owned()
    } else {
        roles.join(",")
    };
    let version = o
        .pointer("/status/nodeInfo/kubeletVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let ip = o
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .and_then(|a| a.iter().find(|x| x["type"] == "InternalIP"))
        .and_then(|x| x["address"].as_str())
        .unwrap_or("<none>");
    vec![
        json!(name),
        json!(status),
        json!(roles),
        json!(age),
        json!(version),
        json!(ip),
    ]
}

fn pod_cells(o: &Value, name: &str, age: String) -> Vec<Value> {
    let containers = o
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let statuses = o.pointer("/status/containerStatuses").and_then(Value::as_array);
    let ready = statuses.map_or(0, |s| s.iter().filter(|c| c["ready"] == true).count());
    let restarts: u64 = statuses.map_or(0, |s| s.iter().filter_map(|c| c["restartCount"].as_u64()).sum());
    let phase = o
        .pointer("/status/reason")
        .or_else(|| o.pointer("/status/phase"))
        .and_then(Value::as_str)
        .unwrap_or("Pending");
    let ip = o.pointer("/status/podIP").and_then(Value::as_str).unwrap_or("<none>");
    let node = o
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .unwrap_or("<none>");
    vec![
        json!(name),
        json!(format!("{ready}/{containers}")),
        json!(phase),
        json!(restarts.to_string()),
        json!(age),
        json!(ip),
        json!(node),
    ]
}

/// `printPodGroup`: the policy (`Gang` or `Basic`), the Workload whose
/// template made the group, and its status: `Pending` until the
/// scheduler's `PodGroupScheduled` condition says `Scheduled` (`True`) or
/// `Unschedulable`, or a `DisruptionTarget` condition's reason.
fn pod_group_cells(o: &Value, name: &str, age: String) -> Vec<Value> {
    let gang = o.pointer("/spec/schedulingPolicy/gang").is_some_and(|g| !g.is_null());
    let policy = if gang { "Gang" } else { "Basic" };
    let workload = o
        .pointer("/spec/podGroupTemplateRef/workload/workloadName")
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    let conditions = o.pointer("/status/conditions").and_then(Value::as_array);
    let condition = |t: &str| conditions.and_then(|cs| cs.iter().rev().find(|c| c["type"] == t));
    let mut status = "Pending";
    if let Some(c) = condition("PodGroupScheduled") {
        status = if c["status"] == "True" {
            "Scheduled"
        } else {
            "Unschedulable"
        };
    }
    if let Some(c) = condition("DisruptionTarget") {
        status = c["reason"].as_str().unwrap_or("");
    }
    vec![json!(name), json!(policy), json!(workload), json!(status), json!(age)]
}

/// `5s`, `3m`, `2h`, `4d` as kubectl prints ages.
fn human_age(secs: i64) -> String {
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 3600 * 2 => format!("{}m", s / 60),
        s if s < 86400 * 2 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::WORKLOADS;

    fn stored(v: Value) -> Stored {
        let json = bytes::Bytes::from(serde_json::to_vec(&v).unwrap());
        Stored {
            value: std::sync::Arc::new(v),
            json,
        }
    }

    #[test]
    fn pod_groups_show_their_policy_workload_and_status() {
        let pending = json!({"metadata": {"name": "train", "creationTimestamp": crate::store::now()},
            "spec": {"podGroupTemplateRef": null, "schedulingPolicy": {"gang": {"minCount": 4}}}, "status": {}});
        let mut scheduled = json!({"metadata": {"name": "web"},
            "spec": {"podGroupTemplateRef": {"workload": {"workloadName": "job", "podGroupTemplateName": "w"}},
                     "schedulingPolicy": {"basic": {}}},
            "status": {"conditions": [{"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled"}]}});
        let t = table(POD_GROUPS, &[stored(pending), stored(scheduled.clone())], 7, None);
        let names: Vec<&str> = t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["Name", "Policy", "Workload", "Status", "Age"]);
        assert_eq!(t["columnDefinitions"][0]["format"], "name");
        assert_eq!(
            t["rows"][0]["cells"],
            json!(["train", "Gang", "<none>", "Pending", "0s"])
        );
        assert_eq!(
            t["rows"][1]["cells"],
            json!(["web", "Basic", "job", "Scheduled", "<unknown>"])
        );
        scheduled["status"]["conditions"][0]["status"] = json!("False");
        let t = table(POD_GROUPS, &[stored(scheduled.clone())], 7, None);
        assert_eq!(t["rows"][0]["cells"][3], "Unschedulable");
        scheduled["status"]["conditions"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}));
        let t = table(POD_GROUPS, &[stored(scheduled)], 7, None);
        assert_eq!(t["rows"][0]["cells"][3], "PreemptionByScheduler");
    }

    #[test]
    fn workloads_show_name_and_age() {
        let w = json!({"metadata": {"name": "job"}, "spec": {"podGroupTemplates": []}});
        let t = table(WORKLOADS, &[stored(w)], 7, None);
        assert_eq!(t["columnDefinitions"].as_array().unwrap().len(), 2);
        assert_eq!(t["rows"][0]["cells"], json!(["job", "<unknown>"]));
    }
}
