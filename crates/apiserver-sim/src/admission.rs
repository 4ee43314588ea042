//! The admission plugins of kube-apiserver's defaults that the double's
//! clients meet. `ServiceAccount` (`plugin/pkg/admission/serviceaccount`):
//! a pod runs as its namespace's `default` account unless it names one, and
//! is refused while that account does not exist. `Priority`
//! (`plugin/pkg/admission/priority`): a pod gets its
//! priority and preemption policy from its PriorityClass, or from the
//! cluster's default class (0 when there is none); a pod that states
//! another priority, or names no class that exists, is refused. At most one
//! class is the default. `PodGroupProtection`
//! (`plugin/pkg/admission/scheduling/podgroupprotection`): a new PodGroup
//! carries the protection finalizer. `PodGroupWorkloadExists`
//! (`plugin/pkg/admission/podgroup`): a new PodGroup made from a
//! Workload's template names a Workload and a template that exist.

use serde_json::{Value, json};

use wasmsched_core::priority;

use crate::resources::{NAMESPACES, PRIORITY_CLASSES, SERVICE_ACCOUNTS, WORKLOADS};
use crate::status::ApiError;
use crate::store::Store;

/// The PriorityClasses stored.
fn classes(store: &Store) -> impl Iterator<Item = &Value> {
    store.all(PRIORITY_CLASSES).map(|s| &*s.value)
}

/// `ServiceAccount` on create: names the account and checks that it
/// exists. (In a namespace the double does not have, which a cluster's
/// `NamespaceLifecycle` would refuse, there is no account to look up.)
pub(crate) fn admit_service_account(store: &Store, ns: &str, pod: &mut Value) -> Result<(), ApiError> {
    let spec = &mut pod["spec"];
    let account = spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .filter(|a| !a.is_empty())
        .unwrap_or("default")
        .to_owned();
    spec["serviceAccountName"] = json!(account);
    if store.get(NAMESPACES, "", ns).is_ok() && store.get(SERVICE_ACCOUNTS, ns, &account).is_err() {
        let name = pod.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
        return Err(ApiError::forbidden(
            "",
            "pods",
            name,
            format!("error looking up service account {ns}/{account}: serviceaccount \"{account}\" not found"),
        ));
    }
    Ok(())
}

/// `admitPod` on create: sets `priorityClassName`, `priority` and
/// `preemptionPolicy`.
pub(crate) fn admit_pod(store: &Store, pod: &mut Value) -> Result<(), ApiError> {
    let name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let forbidden = |why: String| ApiError::forbidden("", "pods", &name, why);
    let named = pod.pointer("/spec/priorityClassName").and_then(Value::as_str);
    let class = priority::class_for(named, classes(store)).map_err(|e| forbidden(e.to_string()))?;
    let (class, value, policy) = match class {
        Some(pc) => (
            json!(priority::name(pc)),
            priority::value(pc),
            json!(priority::preemption_policy(pc)),
        ),
        None => (Value::Null, 0, json!("PreemptLowerPriority")),
    };
    let spec = &mut pod["spec"];
    if let Some(given) = spec.get("priority").and_then(Value::as_i64)
        && given != value
    {
        return Err(forbidden(format!(
            "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"
        )));
    }
    if !class.is_null() {
        spec["priorityClassName"] = class;
    }
    spec["priority"] = json!(value);
    if let Some(given) = spec.get("preemptionPolicy").and_then(Value::as_str)
        && Some(given) != policy.as_str()
    {
        return Err(forbidden(format!(
            "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {} from the given PriorityClass name",
            policy.as_str().unwrap_or("")
        )));
    }
    spec["preemptionPolicy"] = policy;
    Ok(())
}

/// `admitPod` on update: a replacement that leaves out the priority or
/// the policy keeps the ones admitted.
pub(crate) fn keep_pod_priority(old: &Value, new: &mut Value) {
    for field in ["priority", "preemptionPolicy"] {
        if new["spec"].get(field).is_none_or(Value::is_null)
            && let Some(v) = old["spec"].get(field).filter(|v| !v.is_null())
        {
            new["spec"][field] = v.clone();
        }
    }
}

/// `validatePriorityClass`: a second default is refused.
pub(crate) fn admit_priority_class(store: &Store, pc: &Value, update: bool) -> Result<(), ApiError> {
    if pc.get("globalDefault").and_then(Value::as_bool) != Some(true) {
        return Ok(());
    }
    let name = priority::name(pc);
    let Ok(Some(current)) = priority::class_for(None, classes(store)) else {
        return Ok(());
    };
    let current = priority::name(current);
    if !update || current != name {
        return Err(ApiError::forbidden(
            "scheduling.k8s.io",
            "priorityclasses",
            name,
            format!("PriorityClass {current} is already marked as default. Only one default can exist"),
        ));
    }
    Ok(())
}

/// `PodGroupProtection` on create: appends the protection finalizer
/// unless the group has it.
pub(crate) fn admit_pod_group_protection(pg: &mut Value) {
    let finalizer = crate::validation::pod_group::PROTECTION_FINALIZER;
    let meta = &mut pg["metadata"];
    match meta.get_mut("finalizers") {
        Some(Value::Array(list)) => {
            if !list.iter().any(|f| f == finalizer) {
                list.push(json!(finalizer));
            }
        }
        _ => meta["finalizers"] = json!([finalizer]),
    }
}

/// `PodGroupWorkloadExists` on create: the Workload a group's
/// `spec.podGroupTemplateRef.workload` names exists in its namespace, is
/// not being deleted, and has the template.
pub(crate) fn admit_pod_group_workload(store: &Store, ns: &str, pg: &Value) -> Result<(), ApiError> {
    let Some(r) = pg
        .pointer("/spec/podGroupTemplateRef/workload")
        .filter(|r| r.is_object())
    else {
        return Ok(());
    };
    let text = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or("");
    let (workload, template) = (text("workloadName"), text("podGroupTemplateName"));
    let name = pg.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    let forbidden = |why: String| ApiError::forbidden("scheduling.k8s.io", "podgroups", name, why);
    let Ok(w) = store.get(WORKLOADS, ns, workload) else {
        return Err(forbidden(format!("PodGroup rejected: Workload {workload:?} not found")));
    };
    if w.value
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        return Err(forbidden(format!(
            "PodGroup rejected: Workload {workload:?} is being deleted"
        )));
    }
    let templates = w.value.pointer("/spec/podGroupTemplates").and_then(Value::as_array);
    if templates.is_some_and(|ts| ts.iter().any(|t| t["name"] == template)) {
        return Ok(());
    }
    Err(forbidden(format!(
        "PodGroup rejected: PodGroupTemplate {template:?} not found in Workload {workload:?}"
    )))
}
