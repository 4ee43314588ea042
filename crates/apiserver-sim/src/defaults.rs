//! The defaults kube-apiserver gives an object as it decodes it, for the
//! kinds whose defaults scheduling reads (`pkg/apis/core/v1/defaults.go`,
//! `pkg/apis/scheduling/v1/defaults.go`).

use serde_json::{Value, json};

/// Pods: requests from limits where a request is missing (a pod asking only
/// for limits is scheduled by them), the container and pod-spec defaults.
pub(crate) fn pod(v: &mut Value) {
    let spec = &mut v["spec"];
    for kind in ["initContainers", "containers"] {
        let Some(Value::Array(cs)) = spec.get_mut(kind) else {
            continue;
        };
        for c in cs.iter_mut().filter(|c| c.is_object()) {
            container(c);
        }
    }
    // Pod-level resources: only the resources they support get requests.
    if let Some(r) = spec.get_mut("resources").filter(|r| r.is_object()) {
        requests_from_limits(r, |name| {
            matches!(name, "cpu" | "memory") || name.starts_with("hugepages-")
        });
    }
    for (field, value) in [
        ("restartPolicy", json!("Always")),
        ("terminationGracePeriodSeconds", json!(30)),
        ("dnsPolicy", json!("ClusterFirst")),
        ("securityContext", json!({})),
        ("schedulerName", json!("default-scheduler")),
        ("enableServiceLinks", json!(true)),
    ] {
        if spec.get(field).is_none_or(Value::is_null) {
            spec[field] = value;
        }
    }
    if v.pointer("/status/phase").is_none() {
        v["status"]["phase"] = json!("Pending");
    }
}

fn container(c: &mut Value) {
    if c.get("resources").is_none_or(Value::is_null) {
        c["resources"] = json!({});
    }
    requests_from_limits(&mut c["resources"], |_| true);
    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
    // `:latest` or no tag pulls every time; a tag or digest if absent.
    let last = image.rsplit('/').next().unwrap_or("");
    let always = !image.contains('@') && last.split_once(':').is_none_or(|(_, tag)| tag == "latest");
    for (field, value) in [
        ("terminationMessagePath", json!("/dev/termination-log")),
        ("terminationMessagePolicy", json!("File")),
        ("imagePullPolicy", json!(if always { "Always" } else { "IfNotPresent" })),
    ] {
        if c.get(field).is_none_or(Value::is_null) {
            c[field] = value;
        }
    }
}

/// `requests[r] = limits[r]` for each limited resource `which` takes that
/// has no request.
fn requests_from_limits(r: &mut Value, which: impl Fn(&str) -> bool) {
    let Some(limits) = r.get("limits").and_then(Value::as_object).cloned() else {
        return;
    };
    for (name, q) in limits {
        if !which(&name) {
            continue;
        }
        if !r.get("requests").is_some_and(Value::is_object) {
            r["requests"] = json!({});
        }
        if r["requests"].get(&name).is_none() {
            r["requests"][&name] = q;
        }
    }
}

/// PriorityClasses preempt lower priorities unless they say not to; their
/// generation starts at 1.
pub(crate) fn priority_class(v: &mut Value) {
    generation(v);
    if v.get("preemptionPolicy").is_none_or(Value::is_null) {
        v["preemptionPolicy"] = json!("PreemptLowerPriority");
    }
}

/// Cluster-scoped objects whose strategy starts their generation at 1
/// (PriorityClass, DeviceClass, ResourceSlice).
pub(crate) fn generation(v: &mut Value) {
    if v.pointer("/metadata/generation").is_none_or(Value::is_null) {
        v["metadata"]["generation"] = json!(1);
    }
}

/// `resource.k8s.io/v1` (`pkg/apis/resource/v1/defaults.go`): a request,
/// or a subrequest, asks for `ExactCount` of 1 device unless it says
/// otherwise; a claim starts with an empty status; a template's object
/// metadata is an object; a taint gets the time it was added.
pub(crate) fn resource(kind: &str, v: &mut Value) {
    let exact = |r: &mut Value| {
        if !r.is_object() {
            return;
        }
        if r.get("allocationMode")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            r["allocationMode"] = json!("ExactCount");
        }
        if r["allocationMode"] == "ExactCount" && r.get("count").and_then(Value::as_i64).unwrap_or(0) == 0 {
            r["count"] = json!(1);
        }
    };
    let claim_spec = |spec: &mut Value| {
        let Some(Value::Array(requests)) = spec.pointer_mut("/devices/requests") else {
            return;
        };
        for r in requests {
            if let Some(e) = r.get_mut("exactly") {
                exact(e);
            }
            if let Some(Value::Array(subs)) = r.get_mut("firstAvailable") {
                subs.iter_mut().for_each(exact);
            }
        }
    };
    match kind {
        "ResourceClaim" => {
            claim_spec(&mut v["spec"]);
            if v.get("status").is_none_or(Value::is_null) {
                v["status"] = json!({});
            }
        }
        "ResourceClaimTemplate" => {
            claim_spec(&mut v["spec"]["spec"]);
            if v["spec"].get("metadata").is_none_or(Value::is_null) {
                v["spec"]["metadata"] = json!({});
            }
        }
        "DeviceClass" => generation(v),
        "ResourceSlice" => {
            generation(v);
            let now = crate::store::now();
            if let Some(Value::Array(devices)) = v.pointer_mut("/spec/devices") {
                for d in devices {
                    if let Some(Value::Array(taints)) = d.get_mut("taints") {
                        for t in taints
                            .iter_mut()
                            .filter(|t| t.get("timeAdded").is_none_or(Value::is_null))
                        {
                            t["timeAdded"] = json!(now);
                        }
                    }
                }
            }
        }
        _ => {}
    }
}

/// `scheduling.k8s.io/v1alpha2` PodGroups, before they are decoded: a
/// condition without a `lastTransitionTime` gets Go's zero time, which
/// kube's decoder leaves there (k8s-openapi's type requires one) and
/// validation refuses.
pub(crate) fn pod_group_times(v: &mut Value) {
    if let Some(Value::Array(conditions)) = v.pointer_mut("/status/conditions") {
        for c in conditions.iter_mut().filter(|c| c.is_object()) {
            if c.get("lastTransitionTime").is_none_or(Value::is_null) {
                c["lastTransitionTime"] = json!(crate::validation::pod_group::ZERO_TIME);
            }
        }
    }
}

/// PodGroups as decoded (`v1alpha2/zz_generated.defaults.go`):
/// `spec.disruptionMode` is `Pod` unless set. And as Go writes them:
/// `spec.podGroupTemplateRef` has no `omitempty` (`null`), nor has
/// `status` (`{}`), while a condition's `observedGeneration` has (0 is
/// left out).
pub(crate) fn pod_group(v: &mut Value) {
    if !v.get("spec").is_some_and(Value::is_object) {
        v["spec"] = json!({});
    }
    let spec = &mut v["spec"];
    if spec.get("disruptionMode").is_none_or(Value::is_null) {
        spec["disruptionMode"] = json!("Pod");
    }
    if spec.get("podGroupTemplateRef").is_none() {
        spec["podGroupTemplateRef"] = Value::Null;
    }
    if !v.get("status").is_some_and(Value::is_object) {
        v["status"] = json!({});
    }
    if let Some(Value::Array(conditions)) = v.pointer_mut("/status/conditions") {
        for c in conditions.iter_mut().filter_map(Value::as_object_mut) {
            if c.get("observedGeneration").and_then(Value::as_i64) == Some(0) {
                c.remove("observedGeneration");
            }
        }
    }
}

/// Workloads have no defaults; as Go writes them, a template's
/// `schedulingConstraints` has no `omitempty` (`null`).
pub(crate) fn workload(v: &mut Value) {
    if let Some(Value::Array(templates)) = v.pointer_mut("/spec/podGroupTemplates") {
        for t in templates.iter_mut().filter_map(Value::as_object_mut) {
            t.entry("schedulingConstraints").or_insert(Value::Null);
        }
    }
}

/// `events.k8s.io/v1` events: the deprecated source is an empty object.
pub(crate) fn event(v: &mut Value) {
    if v.get("deprecatedSource").is_none_or(Value::is_null) {
        v["deprecatedSource"] = json!({});
    }
}

/// Namespaces: the `kubernetes.io/metadata.name` label (which namespace
/// selectors match), the `kubernetes` finalizer, phase `Active`.
pub(crate) fn namespace(v: &mut Value) {
    let name = v
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if !v["metadata"].get("labels").is_some_and(Value::is_object) {
        v["metadata"]["labels"] = json!({});
    }
    v["metadata"]["labels"]["kubernetes.io/metadata.name"] = json!(name);
    if v.pointer("/spec/finalizers").is_none() {
        v["spec"]["finalizers"] = json!(["kubernetes"]);
    }
    if v.pointer("/status/phase").is_none() {
        v["status"]["phase"] = json!("Active");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_without_a_request_becomes_the_request() {
        let mut p = json!({"spec": {"containers": [{"name": "c", "image": "app:1",
            "resources": {"limits": {"cpu": "2", "nvidia.com/gpu": "1"}, "requests": {"cpu": "1"}}}]}});
        pod(&mut p);
        let c = &p["spec"]["containers"][0];
        assert_eq!(c["resources"]["requests"], json!({"cpu": "1", "nvidia.com/gpu": "1"}));
        assert_eq!(c["imagePullPolicy"], "IfNotPresent");
        assert_eq!(p["spec"]["schedulerName"], "default-scheduler");
        assert_eq!(p["status"]["phase"], "Pending");
    }

    #[test]
    fn untagged_and_latest_images_are_always_pulled() {
        for (image, policy) in [
            ("app", "Always"),
            ("app:latest", "Always"),
            ("registry:5000/app", "Always"),
            ("registry:5000/app:1", "IfNotPresent"),
            ("app@sha256:00", "IfNotPresent"),
        ] {
            let mut c = json!({"name": "c", "image": image});
            container(&mut c);
            assert_eq!(c["imagePullPolicy"], policy, "{image}");
        }
    }
}
