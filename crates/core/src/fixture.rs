//! Reading nodes, pods and namespaces from YAML or JSON text.
//!
//! Accepts what people have at hand: one object per document
//! (multi-document YAML separated by `---`), a `List` as
//! `kubectl get nodes,pods -o yaml` prints it, or a typed `NodeList`/`PodList`
//! as the API server returns it. JSON is read by the same path (it is YAML).
//! Services, ReplicationControllers, ReplicaSets, StatefulSets and
//! PodDisruptionBudgets are kept for their selectors, PersistentVolumeClaims,
//! PersistentVolumes, StorageClasses and CSINodes for the volume plugins,
//! PriorityClasses for the pods that name them (a pod without
//! `spec.priority` gets its class's, as the API server's Priority admission
//! gives it); objects of other kinds are reported in
//! [`Objects::ignored`], never dropped silently.

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use serde::Deserialize;
use serde_json::Value;

/// Nodes and pods read from a document stream, in the order they appear.
#[derive(Debug, Default, Clone)]
pub struct Objects {
    /// Every `Node` found.
    pub nodes: Vec<Node>,
    /// Every `Pod` found; pods without a namespace get `default`.
    pub pods: Vec<Pod>,
    /// Every `Namespace` found (their labels matter to namespace selectors).
    pub namespaces: Vec<Namespace>,
    /// Every Service, ReplicationController, ReplicaSet and StatefulSet
    /// found, as JSON (their selectors matter to default spreading).
    pub workloads: Vec<Value>,
    /// Every PersistentVolumeClaim, PersistentVolume, StorageClass and
    /// CSINode found, as JSON (the volume plugins read them).
    pub storage: Vec<Value>,
    /// Every `scheduling.k8s.io/v1` PriorityClass found, as JSON.
    pub priority_classes: Vec<Value>,
    /// Every `resource.k8s.io/v1` ResourceClaimTemplate found, as JSON
    /// (`simulate` makes pods' claims from them, as the resourceclaim
    /// controller does).
    pub claim_templates: Vec<Value>,
    /// Every `scheduling.k8s.io/v1alpha2` PodGroup found.
    pub pod_groups: Vec<k8s_openapi::api::scheduling::v1alpha2::PodGroup>,
    /// `kind/name` of objects of other kinds, which were skipped.
    pub ignored: Vec<String>,
}

impl Objects {
    /// Appends everything from `other`.
    pub fn extend(&mut self, other: Objects) {
        self.nodes.extend(other.nodes);
        self.pods.extend(other.pods);
        self.namespaces.extend(other.namespaces);
        self.workloads.extend(other.workloads);
        self.storage.extend(other.storage);
        self.priority_classes.extend(other.priority_classes);
        self.claim_templates.extend(other.claim_templates);
        self.pod_groups.extend(other.pod_groups);
        self.ignored.extend(other.ignored);
    }
}

/// Why a document stream could not be read. The message names the document
/// (1-based), the list item if any, and the object.
#[derive(Debug, thiserror::Error)]
#[error("document {doc}{item}: {reason}", item = .item.map(|i| format!(", item {i}")).unwrap_or_default())]
pub struct FixtureError {
    /// 1-based index of the YAML document.
    pub doc: usize,
    /// 0-based index inside a `List`'s `items`, when the error is in one.
    pub item: Option<usize>,
    /// What is wrong.
    pub reason: String,
}

/// Parses nodes and pods from YAML or JSON text.
///
/// # Example
/// ```
/// let objs = wasmsched_core::fixture::parse_objects(r#"
/// apiVersion: v1
/// kind: Node
/// metadata: {name: n1}
/// ---
/// apiVersion: v1
/// kind: Pod
/// metadata: {name: p1}
/// spec: {containers: [{name: c, image: nginx}]}
/// "#).unwrap();
/// assert_eq!(objs.nodes.len(), 1);
/// assert_eq!(objs.pods[0].metadata.namespace.as_deref(), Some("default"));
/// ```
pub fn parse_objects(text: &str) -> Result<Objects, FixtureError> {
    let mut out = Objects::default();
    // The document (and list item) each pod came from, for errors found
    // once every class is known.
    let mut pod_docs: Vec<(usize, Option<usize>)> = Vec::new();
    for (i, doc) in serde_norway::Deserializer::from_str(text).enumerate() {
        let doc_no = i + 1;
        let value = Value::deserialize(doc).map_err(|e| FixtureError {
            doc: doc_no,
            item: None,
            reason: format!("not valid YAML or JSON: {e}"),
        })?;
        if value.is_null() {
            continue; // empty document, e.g. a trailing `---`
        }
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or_default().to_owned();
        if kind.ends_with("List") {
            let item_kind = kind.strip_suffix("List").unwrap_or_default();
            let items = match value.get("items") {
                Some(Value::Array(items)) => items.clone(),
                Some(Value::Null) | None => Vec::new(),
                Some(_) => {
                    return Err(FixtureError {
                        doc: doc_no,
                        item: None,
                        reason: format!("{kind}: `items` is not a list"),
                    });
                }
            };
            for (j, item) in items.into_iter().enumerate() {
                add_object(&mut out, item, item_kind).map_err(|reason| FixtureError {
                    doc: doc_no,
                    item: Some(j),
                    reason,
                })?;
                pod_docs.resize(out.pods.len(), (doc_no, Some(j)));
            }
        } else {
            add_object(&mut out, value, "").map_err(|reason| FixtureError {
                doc: doc_no,
                item: None,
                reason,
            })?;
            pod_docs.resize(out.pods.len(), (doc_no, None));
        }
    }
    for (pod, (doc, item)) in out.pods.iter_mut().zip(pod_docs) {
        admit_priority(pod, &out.priority_classes).map_err(|reason| FixtureError { doc, item, reason })?;
    }
    Ok(out)
}

/// What the Priority admission gives a pod that states no priority: its
/// class's value and preemption policy, or the default class's (the
/// `globalDefault` one of lowest value). A pod that states one keeps it (an
/// object read back from a cluster was admitted already).
fn admit_priority(pod: &mut Pod, classes: &[Value]) -> Result<(), String> {
    let Some(spec) = pod.spec.as_mut() else { return Ok(()) };
    if spec.priority.is_some() {
        return Ok(());
    }
    let named = spec.priority_class_name.as_deref();
    let class = crate::priority::class_for(named, classes).map_err(|e| {
        format!(
            "Pod {}: spec.priorityClassName: {e} (add it to the input, or set spec.priority)",
            pod.metadata.name.as_deref().unwrap_or("")
        )
    })?;
    if let Some(pc) = class {
        spec.priority_class_name = Some(crate::priority::name(pc).to_owned());
        spec.priority = Some(i32::try_from(crate::priority::value(pc)).unwrap_or(i32::MAX));
        spec.preemption_policy
            .get_or_insert_with(|| crate::priority::preemption_policy(pc).to_owned());
    }
    Ok(())
}

fn add_object(out: &mut Objects, mut value: Value, default_kind: &str) -> Result<(), String> {
    let kind = value
        .get("kind")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| default_kind.to_owned());
    let name = value
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if kind.is_empty() {
        return Err(format!("object {name:?} has no `kind`"));
    }
    // Items of a typed list carry no apiVersion of their own.
    let default_version = match kind.as_str() {
        "StorageClass" | "CSINode" => "storage.k8s.io/v1",
        "DeviceClass" | "ResourceSlice" | "ResourceClaim" => "resource.k8s.io/v1",
        "PriorityClass" => "scheduling.k8s.io/v1",
        _ => "v1",
    };
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or(default_version)
        .to_owned();
    let api_version = api_version.as_str();
    if crate::workloads::WorkloadKind::of(api_version, &kind).is_some() {
        if let Value::Object(map) = &mut value {
            map.entry("apiVersion").or_insert_with(|| Value::from("v1"));
            map.entry("kind").or_insert_with(|| Value::from(kind.clone()));
        }
        crate::workloads::Workload::from_value(&value).map_err(|e| e.to_string())?;
        out.workloads.push(value);
        return Ok(());
    }
    if crate::storage::StorageKind::of(api_version, &kind).is_some() {
        if let Value::Object(map) = &mut value {
            map.entry("kind").or_insert_with(|| Value::from(kind.clone()));
            map.entry("apiVersion").or_insert_with(|| Value::from(api_version));
            if kind == "PersistentVolumeClaim" || kind == "ResourceClaim" {
                let meta = map.entry("metadata").or_insert_with(|| serde_json::json!({}));
                if let Value::Object(m) = meta {
                    m.entry("namespace").or_insert_with(|| Value::from("default"));
                }
            }
        }
        // Checked here, so a bad object is reported with its document.
        crate::storage::Storage::default()
            .upsert(&value)
            .map_err(|e| e.to_string())?;
        out.storage.push(value);
        return Ok(());
    }
    if (api_version, kind.as_str()) == ("scheduling.k8s.io/v1", "PriorityClass") {
        let value_ok = value
            .get("value")
            .and_then(Value::as_i64)
            .is_some_and(|v| i32::try_from(v).is_ok());
        if !value_ok {
            return Err(format!("PriorityClass {name}: `value` must be a 32-bit integer"));
        }
        out.priority_classes.push(value);
        return Ok(());
    }
    if (api_version, kind.as_str()) == ("resource.k8s.io/v1", "ResourceClaimTemplate") {
        if let Value::Object(map) = &mut value {
            map.entry("kind").or_insert_with(|| Value::from(kind.clone()));
            map.entry("apiVersion").or_insert_with(|| Value::from(api_version));
            if let Value::Object(m) = map.entry("metadata").or_insert_with(|| serde_json::json!({})) {
                m.entry("namespace").or_insert_with(|| Value::from("default"));
            }
        }
        out.claim_templates.push(value);
        return Ok(());
    }
    if (api_version, kind.as_str()) == (crate::pod_groups::API_VERSION, "PodGroup") {
        if let Value::Object(map) = &mut value
            && let Value::Object(m) = map.entry("metadata").or_insert_with(|| serde_json::json!({}))
        {
            m.entry("namespace").or_insert_with(|| Value::from("default"));
        }
        let group: k8s_openapi::api::scheduling::v1alpha2::PodGroup =
            from_value(value).map_err(|e| format!("PodGroup {name}: {e}"))?;
        // Checked here, so a bad group is reported with its document.
        crate::pod_groups::PodGroup::parse(&group).map_err(|e| e.to_string())?;
        out.pod_groups.push(group);
        return Ok(());
    }
    if kind != "Node" && kind != "Pod" && kind != "Namespace" {
        out.ignored.push(format!("{kind}/{name}"));
        return Ok(());
    }
    if name.is_empty() {
        return Err(format!("{kind} has no metadata.name"));
    }
    // Items of a typed list (PodList) carry no apiVersion/kind of their own.
    if let Value::Object(map) = &mut value {
        map.entry("apiVersion").or_insert_with(|| Value::from("v1"));
        map.entry("kind").or_insert_with(|| Value::from(kind.clone()));
    }
    if kind == "Node" {
        let node: Node = from_value(value).map_err(|e| format!("Node {name}: {e}"))?;
        out.nodes.push(node);
    } else if kind == "Namespace" {
        let ns: Namespace = from_value(value).map_err(|e| format!("Namespace {name}: {e}"))?;
        out.namespaces.push(ns);
    } else {
        let mut pod: Pod = from_value(value).map_err(|e| format!("Pod {name}: {e}"))?;
        pod.metadata.namespace.get_or_insert_with(|| "default".to_owned());
        out.pods.push(pod);
    }
    Ok(())
}

/// Deserializes with the path of the offending field in the error
/// (`spec.containers[0].resources.requests: invalid type ...`).
fn from_value<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(crate::path_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_kubectl_list_and_typed_lists() {
        let text = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: a}
- apiVersion: v1
  kind: Service
  metadata: {name: svc}
  spec: {selector: {app: web}}
- apiVersion: v1
  kind: Secret
  metadata: {name: s}
- apiVersion: v1
  kind: Pod
  metadata: {name: p, namespace: ns}
  spec: {containers: [{name: c}]}
---
{"kind": "PodList", "apiVersion": "v1", "items": [{"metadata": {"name": "q"}, "spec": {"containers": []}}]}
---
"#;
        let objs = parse_objects(text).unwrap();
        assert_eq!(objs.nodes.len(), 1);
        assert_eq!(objs.pods.len(), 2);
        assert_eq!(objs.pods[1].metadata.name.as_deref(), Some("q"));
        assert_eq!(objs.workloads.len(), 1, "Services select pods for default spreading");
        assert_eq!(objs.ignored, vec!["Secret/s".to_owned()]);
    }

    #[test]
    fn errors_name_document_item_and_field() {
        let text = "kind: Node\nmetadata: {name: a}\n---\nkind: List\nitems:\n- kind: Pod\n  metadata: {name: p}\n  spec: {containers: 5}\n";
        let err = parse_objects(text).unwrap_err().to_string();
        assert!(err.starts_with("document 2, item 0: Pod p: spec.containers"), "{err}");
        let err = parse_objects("kind: Pod\nmetadata: {}\n").unwrap_err().to_string();
        assert_eq!(err, "document 1: Pod has no metadata.name");
        let err = parse_objects("a: [").unwrap_err().to_string();
        assert!(err.starts_with("document 1: not valid YAML or JSON"), "{err}");
    }

    #[test]
    fn pods_get_the_priority_of_their_class_or_the_default() {
        let text = "kind: Pod\nmetadata: {name: a}\nspec: {priorityClassName: high, containers: []}\n---\n\
            kind: Pod\nmetadata: {name: b}\nspec: {containers: []}\n---\n\
            kind: Pod\nmetadata: {name: c}\nspec: {priority: 7, containers: []}\n---\n\
            apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\npreemptionPolicy: Never\n---\n\
            apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: everyday}\nvalue: 10\nglobalDefault: true\n";
        let objs = parse_objects(text).unwrap();
        let spec = |i: usize| objs.pods[i].spec.clone().unwrap();
        assert_eq!(
            (spec(0).priority, spec(0).preemption_policy.as_deref()),
            (Some(1000), Some("Never"))
        );
        assert_eq!(
            (spec(1).priority, spec(1).priority_class_name.as_deref()),
            (Some(10), Some("everyday"))
        );
        assert_eq!(spec(2).priority, Some(7));
        let err = parse_objects("kind: Pod\nmetadata: {name: a}\nspec: {priorityClassName: nope, containers: []}\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("document 1: Pod a: spec.priorityClassName: no PriorityClass with name nope"),
            "{err}"
        );
    }
}
