//! `scheduling.k8s.io/v1alpha2` PodGroups and Workloads
//! (`pkg/registry/scheduling/{podgroup,workload}`, `pkg/apis/scheduling/
//! validation`, the declarative rules of `pkg/apis/scheduling/v1alpha2/
//! zz_generated.validations.go`), with the feature gates of the recorded
//! cluster: `GenericWorkload` and `GangScheduling` on;
//! `TopologyAwareWorkloadScheduling`, `DRAWorkloadResourceClaims` and
//! `WorkloadAwarePreemption` off (their v1.36 defaults).
//!
//! The strategies' `PrepareForCreate`/`PrepareForUpdate` ([`prepare`])
//! drop the fields of the gates that are off unless the object they
//! replace uses them, so `schedulingConstraints`, `resourceClaims`,
//! `disruptionMode`, `priorityClassName` and `priority` are dropped
//! silently; a PodGroup's `disruptionMode` is defaulted again to `Pod` as
//! it is read back ([`crate::defaults::pod_group`]), so an update that
//! changes it is `Forbidden`. What is left is checked in kube's order: the
//! hand-written rules (object metadata, a status's conditions), then the
//! declarative ones, field by field in declaration order, skipping on
//! update what did not change.

use serde_json::{Map, Value, json};

use super::{
    Errors, label_errors, label_key_errors, name as name_of, path_segment_errors, quoted, regex_error, subdomain_errors,
};
use crate::resources::{POD_GROUPS, RESOURCES};
use crate::status::ApiError;

const GROUP: &str = "scheduling.k8s.io";

/// `scheduling.PodGroupProtectionFinalizer`: put on every new PodGroup by
/// the `PodGroupProtection` admission plugin, removed by
/// kube-controller-manager once the group is being deleted and no pod uses
/// it.
pub(crate) const PROTECTION_FINALIZER: &str = "scheduling.k8s.io/podgroup-protection";

/// The fields a gate that is off drops from a PodGroup's spec or a
/// Workload's template (`dropDisabledPodGroupSpecFields`), with what
/// "in use" means for each: `schedulingConstraints` (non-nil),
/// `resourceClaims` (non-empty), `disruptionMode` (non-nil),
/// `priorityClassName` (non-empty), `priority` (non-nil).
const GATED: [&str; 5] = [
    "schedulingConstraints",
    "resourceClaims",
    "disruptionMode",
    "priorityClassName",
    "priority",
];

fn in_use(spec: Option<&Value>, field: &str) -> bool {
    match spec.and_then(|s| s.get(field)) {
        None | Some(Value::Null) => false,
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

/// Drops from `spec` the gated fields `old` (the spec it replaces) does
/// not use. A Workload template's `schedulingConstraints` has no
/// `omitempty`: dropped, it is `null`.
fn drop_gated(spec: &mut Value, old: Option<&Value>, null_constraints: bool) {
    let Some(m) = spec.as_object_mut() else { return };
    for field in GATED {
        if !in_use(old, field) {
            m.remove(field);
        }
    }
    if null_constraints && !m.contains_key("schedulingConstraints") {
        m.insert("schedulingConstraints".into(), Value::Null);
    }
}

/// The strategies' `PrepareForCreate` (`old` is `None`) and
/// `PrepareForUpdate`, for the main resource or (`status`) the status
/// subresource: a new PodGroup's status is reset, an update of the main
/// resource keeps the old status, one of the status keeps the old spec
/// (done by the store), and the gated fields are dropped.
pub(crate) fn prepare(res: usize, v: &mut Value, old: Option<&Value>, status: bool) {
    if res == POD_GROUPS {
        if status {
            // `dropDisabledPodGroupStatusFields`: claim statuses need the
            // DRAWorkloadResourceClaims gate, or claims in the old spec.
            if !in_use(old.and_then(|o| o.get("spec")), "resourceClaims")
                && let Some(s) = v.get_mut("status").and_then(Value::as_object_mut)
            {
                s.remove("resourceClaimStatuses");
            }
            return;
        }
        v["status"] = old.and_then(|o| o.get("status")).cloned().unwrap_or_else(|| json!({}));
        if !v.get("spec").is_some_and(Value::is_object) {
            v["spec"] = json!({});
        }
        drop_gated(&mut v["spec"], old.and_then(|o| o.get("spec")), false);
    } else {
        let old_templates = old.map_or(&[][..], |o| templates(o));
        if let Some(Value::Array(list)) = v.pointer_mut("/spec/podGroupTemplates") {
            // Compared with the old template at the same index, not by name.
            for (i, t) in list.iter_mut().enumerate() {
                drop_gated(t, old_templates.get(i), true);
            }
        }
    }
}

fn templates(v: &Value) -> &[Value] {
    v.pointer("/spec/podGroupTemplates")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
}

/// Checks a PodGroup or Workload being created (`old` is `None`) or
/// replaced, or (`status`) a PodGroup's status being replaced.
pub(crate) fn validate(res: usize, v: &Value, old: Option<&Value>, status: bool) -> Result<(), ApiError> {
    let kind = RESOURCES[res].kind;
    let mut errs = Errors::default();
    if let Some(old) = old {
        metadata_update(&mut errs, v, old);
    }
    if status {
        pod_group_status(&mut errs, &v["status"], &v["spec"]);
    } else if res == POD_GROUPS {
        // `Validate_PodGroup`: an unchanged spec is not checked again.
        let old_spec = old.map(|o| &o["spec"]);
        if old_spec != Some(&v["spec"]) {
            pod_group_spec(&mut errs, &v["spec"], old_spec);
        }
    } else {
        let old_spec = old.map(|o| &o["spec"]);
        if old_spec != Some(&v["spec"]) {
            workload_spec(&mut errs, &v["spec"], old_spec);
        }
    }
    errs.into_result(GROUP, kind, name_of(v))
}

/// The part of `ValidateObjectMetaUpdate` the store does not already
/// check: an object being deleted takes no new finalizers.
fn metadata_update(errs: &mut Errors, v: &Value, old: &Value) {
    if old.pointer("/metadata/deletionTimestamp").is_none_or(Value::is_null) {
        return;
    }
    let finalizers = |o: &Value| -> Vec<String> {
        super::list(&o["metadata"], "finalizers")
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    };
    let before = finalizers(old);
    let mut extra: Vec<String> = finalizers(v).into_iter().filter(|f| !before.contains(f)).collect();
    extra.sort();
    extra.dedup();
    if !extra.is_empty() {
        let shown: Vec<String> = extra.iter().map(|f| quoted(f)).collect();
        errs.forbidden(
            "metadata.finalizers",
            &format!(
                "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                shown.join(", ")
            ),
        );
    }
}

/// `Immutable` on update: `Invalid value: null: field is immutable`.
fn immutable(errs: &mut Errors, path: &str) {
    errs.invalid(path, "null", "field is immutable");
}

/// A value a field of `v` holds, absent and `null` alike.
fn field<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    v.get(name).filter(|x| !x.is_null())
}

fn string<'a>(v: &'a Value, name: &str) -> &'a str {
    v.get(name).and_then(Value::as_str).unwrap_or("")
}

/// `+k8s:required` and `+k8s:format`: `Required value` for the empty
/// string, else one error per message of the format.
fn required_format(errs: &mut Errors, path: &str, value: &str, format: fn(&str) -> Vec<String>) {
    if value.is_empty() {
        errs.required(path, "");
        return;
    }
    for m in format(value) {
        errs.invalid(path, &quoted(value), &m);
    }
}

fn long_name(s: &str) -> Vec<String> {
    subdomain_errors(s, "bytes")
}

/// `Validate_PodGroupSpec`.
fn pod_group_spec(errs: &mut Errors, spec: &Value, old: Option<&Value>) {
    let update = old.is_some();
    let changed = |f: &str| old.is_none_or(|o| field(o, f) != field(spec, f));
    if changed("podGroupTemplateRef") {
        if update {
            immutable(errs, "spec.podGroupTemplateRef");
        } else if let Some(r) = field(spec, "podGroupTemplateRef") {
            // `Validate_PodGroupTemplateReference`: a union of one member.
            union(errs, "spec.podGroupTemplateRef", r, &["workload"]);
            if let Some(w) = field(r, "workload") {
                required_format(
                    errs,
                    "spec.podGroupTemplateRef.workload.workloadName",
                    string(w, "workloadName"),
                    long_name,
                );
                required_format(
                    errs,
                    "spec.podGroupTemplateRef.workload.podGroupTemplateName",
                    string(w, "podGroupTemplateName"),
                    label_errors,
                );
            }
        }
    }
    if changed("schedulingPolicy") {
        if update {
            immutable(errs, "spec.schedulingPolicy");
        } else {
            scheduling_policy(
                errs,
                "spec.schedulingPolicy",
                spec.get("schedulingPolicy").unwrap_or(&Value::Null),
            );
        }
    }
    // The gated fields: what survived `prepare` was in the old object. The
    // claims are immutable; the others may not change while their gate is
    // off (`IfOption(..., false, ForbiddenPointer)`: one set back to
    // nothing is not an error).
    for f in GATED {
        if !update || !changed(f) {
            continue;
        }
        if f == "resourceClaims" {
            immutable(errs, "spec.resourceClaims");
        } else if in_use(Some(spec), f) {
            errs.forbidden(format!("spec.{f}"), "");
        }
    }
}

/// `validate.Union` over `members`: none set is `Invalid value: ""`, more
/// than one `Invalid value: "{a, b}"`, naming them in declaration order.
fn union(errs: &mut Errors, path: &str, v: &Value, members: &[&str]) {
    let set: Vec<&str> = members.iter().copied().filter(|m| field(v, m).is_some()).collect();
    let all: Vec<String> = members.iter().map(|m| format!("`{m}`")).collect();
    match set.len() {
        0 => errs.invalid(path, "\"\"", &format!("must specify one of: {}", all.join(", "))),
        1 => {}
        _ => errs.invalid(
            path,
            &quoted(&format!("{{{}}}", set.join(", "))),
            &format!("must specify exactly one of: {}", all.join(", ")),
        ),
    }
}

/// `Validate_PodGroupSchedulingPolicy`: exactly one of `basic` and
/// `gang`; a gang's `minCount` is required (0 counts as unset) and
/// positive. The gang is checked even when the union is not satisfied.
fn scheduling_policy(errs: &mut Errors, path: &str, policy: &Value) {
    union(errs, path, policy, &["basic", "gang"]);
    if let Some(gang) = field(policy, "gang") {
        let at = format!("{path}.gang.minCount");
        match gang.get("minCount").and_then(Value::as_i64).unwrap_or(0) {
            0 => errs.required(at, ""),
            n if n < 1 => errs.invalid(at, &n.to_string(), "must be greater than or equal to 1"),
            _ => {}
        }
    }
}

/// `Validate_WorkloadSpec`.
fn workload_spec(errs: &mut Errors, spec: &Value, old: Option<&Value>) {
    let update = old.is_some();
    let changed = |f: &str| old.is_none_or(|o| field(o, f) != field(spec, f));
    if changed("controllerRef") {
        if update {
            immutable(errs, "spec.controllerRef");
        } else if let Some(r) = field(spec, "controllerRef") {
            let group = string(r, "apiGroup");
            if !group.is_empty() {
                for m in long_name(group) {
                    errs.invalid("spec.controllerRef.apiGroup", &quoted(group), &m);
                }
            }
            required_format(errs, "spec.controllerRef.kind", string(r, "kind"), path_segment_errors);
            required_format(errs, "spec.controllerRef.name", string(r, "name"), path_segment_errors);
        }
    }
    // An empty list and a missing one are the same to Semantic.DeepEqual.
    let list = |s: &Value| {
        field(s, "podGroupTemplates")
            .and_then(Value::as_array)
            .filter(|l| !l.is_empty())
            .cloned()
    };
    if old.is_some_and(|o| list(o) == list(spec)) {
        return;
    }
    let items = super::list(spec, "podGroupTemplates");
    let path = "spec.podGroupTemplates";
    let mut stop = false;
    if update {
        immutable(errs, path);
        stop = true;
    }
    if items.len() > 8 {
        errs.too_many(path, items.len(), 8);
        stop = true;
    }
    if items.is_empty() {
        errs.required(path, "");
        stop = true;
    }
    if stop {
        return;
    }
    // `validate.Unique`: every later item with a name seen before.
    for (j, t) in items.iter().enumerate() {
        if items[..j].iter().any(|x| string(x, "name") == string(t, "name")) {
            errs.duplicate(format!("{path}[{j}]"), &template_json(t));
        }
    }
    for (i, t) in items.iter().enumerate() {
        let at = format!("{path}[{i}]");
        required_format(errs, &format!("{at}.name"), string(t, "name"), label_errors);
        scheduling_policy(
            errs,
            &format!("{at}.schedulingPolicy"),
            t.get("schedulingPolicy").unwrap_or(&Value::Null),
        );
    }
}

/// A `PodGroupTemplate` as Go's `encoding/json` writes it (how
/// `field.Duplicate` shows it): its fields in declaration order, without
/// the empty `omitempty` ones.
fn template_json(t: &Value) -> String {
    let mut out = Map::new();
    out.insert("name".into(), json!(string(t, "name")));
    let policy = t.get("schedulingPolicy").unwrap_or(&Value::Null);
    let mut p = Vec::new();
    if field(policy, "basic").is_some() {
        p.push("\"basic\":{}".to_owned());
    }
    if let Some(g) = field(policy, "gang") {
        p.push(format!(
            "\"gang\":{{\"minCount\":{}}}",
            g.get("minCount").and_then(Value::as_i64).unwrap_or(0)
        ));
    }
    let mut s = format!(
        "{{\"name\":{},\"schedulingPolicy\":{{{}}},\"schedulingConstraints\":{}",
        out["name"],
        p.join(","),
        t.get("schedulingConstraints").unwrap_or(&Value::Null)
    );
    for f in ["resourceClaims", "disruptionMode", "priorityClassName", "priority"] {
        if in_use(Some(t), f) {
            s.push_str(&format!(",{}:{}", quoted(f), t[f]));
        }
    }
    s.push('}');
    s
}

/// `ValidatePodGroupStatusUpdate`: the conditions, as
/// `metav1validation.ValidateConditions` checks them, and the claim
/// statuses naming claims of the spec.
fn pod_group_status(errs: &mut Errors, status: &Value, spec: &Value) {
    let conditions = super::list(status, "conditions");
    let mut seen: Vec<&str> = Vec::new();
    for (i, c) in conditions.iter().enumerate() {
        let at = format!("status.conditions[{i}]");
        let ty = string(c, "type");
        if seen.contains(&ty) {
            errs.duplicate(format!("{at}.type"), &quoted(ty));
        } else {
            seen.push(ty);
        }
        condition(errs, c, &at);
    }
    let claims: Vec<&str> = super::list(spec, "resourceClaims")
        .iter()
        .map(|c| string(c, "name"))
        .collect();
    for (i, s) in super::list(status, "resourceClaimStatuses").iter().enumerate() {
        let name = string(s, "name");
        if !claims.contains(&name) {
            errs.invalid(
                format!("status.resourceClaimStatuses[{i}].name"),
                &quoted(name),
                "must match the name of an entry in `spec.resourceClaims`",
            );
        }
    }
}

/// Go's zero `metav1.Time`, which the store writes for a condition's
/// missing `lastTransitionTime` so that it decodes (as kube's decoder
/// leaves it zero) and is refused here.
pub(crate) const ZERO_TIME: &str = "0001-01-01T00:00:00Z";

/// `ValidateCondition`.
fn condition(errs: &mut Errors, c: &Value, at: &str) {
    let ty = string(c, "type");
    for m in label_key_errors(ty) {
        errs.invalid(format!("{at}.type"), &quoted(ty), &m);
    }
    let status = string(c, "status");
    if !matches!(status, "True" | "False" | "Unknown") {
        errs.not_supported(format!("{at}.status"), &quoted(status), &["False", "True", "Unknown"]);
    }
    if let Some(g) = c.get("observedGeneration").and_then(Value::as_i64)
        && g < 0
    {
        errs.invalid(
            format!("{at}.observedGeneration"),
            &g.to_string(),
            "must be greater than or equal to zero",
        );
    }
    let time = string(c, "lastTransitionTime");
    if time.is_empty() || time.starts_with(&ZERO_TIME[..19]) {
        errs.required(format!("{at}.lastTransitionTime"), "");
    }
    let reason = string(c, "reason");
    if reason.is_empty() {
        errs.required(format!("{at}.reason"), "");
    } else {
        if !reason_form(reason) {
            errs.invalid(
                format!("{at}.reason"),
                &quoted(reason),
                &regex_error(
                    "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'",
                    "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?",
                    &["my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB"],
                ),
            );
        }
        if reason.len() > 1024 {
            errs.too_long(format!("{at}.reason"), 1024);
        }
    }
    if string(c, "message").len() > 32 * 1024 {
        errs.too_long(format!("{at}.message"), 32 * 1024);
    }
}

/// `[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?`.
fn reason_form(s: &str) -> bool {
    let b = s.as_bytes();
    b.first().is_some_and(u8::is_ascii_alphabetic)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b',' | b':'))
        && b.last().is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::WORKLOADS;

    fn group(spec: Value) -> Value {
        json!({"metadata": {"name": "g", "namespace": "ns"}, "spec": spec, "status": {}})
    }

    fn message(res: usize, v: &Value, old: Option<&Value>, status: bool) -> String {
        validate(res, v, old, status)
            .err()
            .map(|e| e.message)
            .unwrap_or_default()
    }

    #[test]
    fn a_policy_is_one_of_basic_and_gang() {
        let m = |spec: Value| message(POD_GROUPS, &group(spec), None, false);
        assert_eq!(
            m(json!({"schedulingPolicy": {"gang": {"minCount": 2}, "basic": {}}})),
            "PodGroup.scheduling.k8s.io \"g\" is invalid: spec.schedulingPolicy: Invalid value: \"{basic, gang}\": must specify exactly one of: `basic`, `gang`"
        );
        assert_eq!(
            m(json!({"schedulingPolicy": {}})),
            "PodGroup.scheduling.k8s.io \"g\" is invalid: spec.schedulingPolicy: Invalid value: \"\": must specify one of: `basic`, `gang`"
        );
        assert_eq!(
            m(json!({"schedulingPolicy": {"gang": {"minCount": 0}}})),
            "PodGroup.scheduling.k8s.io \"g\" is invalid: spec.schedulingPolicy.gang.minCount: Required value"
        );
        assert_eq!(
            m(json!({"schedulingPolicy": {"gang": {"minCount": -1}, "basic": {}}})),
            "PodGroup.scheduling.k8s.io \"g\" is invalid: [spec.schedulingPolicy: Invalid value: \"{basic, gang}\": must specify exactly one of: `basic`, `gang`, spec.schedulingPolicy.gang.minCount: Invalid value: -1: must be greater than or equal to 1]"
        );
        assert!(m(json!({"schedulingPolicy": {"basic": {}}})).is_empty());
    }

    #[test]
    fn a_template_reference_names_a_workload_and_a_template() {
        let m = |r: Value| {
            message(
                POD_GROUPS,
                &group(json!({"podGroupTemplateRef": r, "schedulingPolicy": {"basic": {}}})),
                None,
                false,
            )
        };
        assert_eq!(
            m(json!({})),
            "PodGroup.scheduling.k8s.io \"g\" is invalid: spec.podGroupTemplateRef: Invalid value: \"\": must specify one of: `workload`"
        );
        assert_eq!(
            m(json!({"workload": {"workloadName": "", "podGroupTemplateName": "a.b"}})),
            "PodGroup.scheduling.k8s.io \"g\" is invalid: [spec.podGroupTemplateRef.workload.workloadName: Required value, spec.podGroupTemplateRef.workload.podGroupTemplateName: Invalid value: \"a.b\": must not contain dots]"
        );
        assert!(m(json!({"workload": {"workloadName": "job", "podGroupTemplateName": "workers"}})).is_empty());
    }

    #[test]
    fn a_spec_does_not_change() {
        let old = group(
            json!({"podGroupTemplateRef": null, "schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": "Pod"}),
        );
        let mut new = old.clone();
        new["spec"]["schedulingPolicy"]["gang"]["minCount"] = json!(3);
        new["spec"]["disruptionMode"] = json!("PodGroup");
        assert_eq!(
            message(POD_GROUPS, &new, Some(&old), false),
            "PodGroup.scheduling.k8s.io \"g\" is invalid: [spec.schedulingPolicy: Invalid value: null: field is immutable, spec.disruptionMode: Forbidden]"
        );
        let mut labelled = old.clone();
        labelled["metadata"]["labels"] = json!({"a": "b"});
        assert!(message(POD_GROUPS, &labelled, Some(&old), false).is_empty());
    }

    #[test]
    fn a_group_being_deleted_takes_no_new_finalizer() {
        let mut old = group(json!({"schedulingPolicy": {"basic": {}}}));
        old["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        old["metadata"]["finalizers"] = json!([PROTECTION_FINALIZER]);
        let mut new = old.clone();
        new["metadata"]["finalizers"] = json!([PROTECTION_FINALIZER, "b/x", "a/y"]);
        assert_eq!(
            message(POD_GROUPS, &new, Some(&old), false),
            "PodGroup.scheduling.k8s.io \"g\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"a/y\", \"b/x\"}"
        );
    }

    #[test]
    fn conditions_are_checked_as_metav1_checks_them() {
        let mut v = group(json!({"schedulingPolicy": {"basic": {}}}));
        v["status"] = json!({"conditions": [
            {"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "PodGroupScheduled", "status": "Maybe", "reason": "not ok", "message": "", "lastTransitionTime": ZERO_TIME, "observedGeneration": -1},
        ]});
        assert_eq!(
            message(POD_GROUPS, &v, Some(&v.clone()), true),
            "PodGroup.scheduling.k8s.io \"g\" is invalid: [status.conditions[1].type: Duplicate value: \"PodGroupScheduled\", \
             status.conditions[1].status: Unsupported value: \"Maybe\": supported values: \"False\", \"True\", \"Unknown\", \
             status.conditions[1].observedGeneration: Invalid value: -1: must be greater than or equal to zero, \
             status.conditions[1].lastTransitionTime: Required value, \
             status.conditions[1].reason: Invalid value: \"not ok\": a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')]"
        );
    }

    fn workload(templates: Value) -> Value {
        json!({"metadata": {"name": "job", "namespace": "ns"}, "spec": {"podGroupTemplates": templates}})
    }

    #[test]
    fn workload_templates_are_named_once_and_at_most_eight() {
        let m = |t: Value| message(WORKLOADS, &workload(t), None, false);
        assert_eq!(
            m(json!([])),
            "Workload.scheduling.k8s.io \"job\" is invalid: spec.podGroupTemplates: Required value"
        );
        let nine: Vec<Value> = (0..9)
            .map(|i| json!({"name": format!("t{i}"), "schedulingPolicy": {"basic": {}}}))
            .collect();
        assert_eq!(
            m(json!(nine)),
            "Workload.scheduling.k8s.io \"job\" is invalid: spec.podGroupTemplates: Too many: 9: must have at most 8 items"
        );
        assert_eq!(
            m(json!([
                {"name": "a", "schedulingPolicy": {"gang": {"minCount": 2}}, "schedulingConstraints": null},
                {"name": "a", "schedulingPolicy": {"gang": {"minCount": 2}}, "schedulingConstraints": null},
                {"name": "B", "schedulingPolicy": {}, "schedulingConstraints": null},
            ])),
            "Workload.scheduling.k8s.io \"job\" is invalid: [spec.podGroupTemplates[1]: Duplicate value: {\"name\":\"a\",\"schedulingPolicy\":{\"gang\":{\"minCount\":2}},\"schedulingConstraints\":null}, \
             spec.podGroupTemplates[2].name: Invalid value: \"B\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?'), \
             spec.podGroupTemplates[2].schedulingPolicy: Invalid value: \"\": must specify one of: `basic`, `gang`]"
        );
    }

    #[test]
    fn workload_templates_and_controller_do_not_change() {
        let mut old =
            workload(json!([{"name": "a", "schedulingPolicy": {"basic": {}}, "schedulingConstraints": null}]));
        old["spec"]["controllerRef"] = json!({"kind": "Job", "name": "j"});
        let mut new = old.clone();
        new["spec"]["controllerRef"]["name"] = json!("k");
        new["spec"]["podGroupTemplates"] = json!([]);
        assert_eq!(
            message(WORKLOADS, &new, Some(&old), false),
            "Workload.scheduling.k8s.io \"job\" is invalid: [spec.controllerRef: Invalid value: null: field is immutable, spec.podGroupTemplates: Invalid value: null: field is immutable, spec.podGroupTemplates: Required value]"
        );
        let mut bad = workload(json!([{"name": "a", "schedulingPolicy": {"basic": {}}}]));
        bad["spec"]["controllerRef"] = json!({"apiGroup": "Batch", "kind": "", "name": "a/b"});
        assert_eq!(
            message(WORKLOADS, &bad, None, false),
            "Workload.scheduling.k8s.io \"job\" is invalid: [spec.controllerRef.apiGroup: Invalid value: \"Batch\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), spec.controllerRef.kind: Required value, spec.controllerRef.name: Invalid value: \"a/b\": may not contain '/']"
        );
    }

    #[test]
    fn gated_fields_are_dropped_unless_in_use() {
        let mut v = group(json!({"schedulingPolicy": {"basic": {}},
            "schedulingConstraints": {"topology": [{"key": "zone"}]}, "disruptionMode": "Pod",
            "priorityClassName": "high", "priority": 5, "resourceClaims": [{"name": "c", "resourceClaimName": "x"}]}));
        v["status"] = json!({"conditions": []});
        prepare(POD_GROUPS, &mut v, None, false);
        assert_eq!(v["spec"], json!({"schedulingPolicy": {"basic": {}}}));
        assert_eq!(v["status"], json!({}));
        let old = group(json!({"schedulingPolicy": {"basic": {}}, "disruptionMode": "Pod"}));
        let mut new = group(json!({"schedulingPolicy": {"basic": {}}, "disruptionMode": "PodGroup", "priority": 1}));
        prepare(POD_GROUPS, &mut new, Some(&old), false);
        assert_eq!(
            new["spec"],
            json!({"schedulingPolicy": {"basic": {}}, "disruptionMode": "PodGroup"})
        );
        let mut w = workload(json!([{"name": "a", "schedulingPolicy": {"basic": {}}, "disruptionMode": "PodGroup"}]));
        prepare(WORKLOADS, &mut w, None, false);
        assert_eq!(
            w["spec"]["podGroupTemplates"],
            json!([{"name": "a", "schedulingPolicy": {"basic": {}}, "schedulingConstraints": null}])
        );
    }

    /// The kinds through the store: as created, patched and replaced.
    mod through_the_store {
        use serde_json::{Value, json};

        use crate::resources::{NAMESPACES, POD_GROUPS, WORKLOADS};
        use crate::store::Store;

        const NS: &str = "fid";

        fn store() -> Store {
            let mut s = Store::new(10_000, 1);
            let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}});
            s.create(NAMESPACES, None, ns).unwrap();
            s
        }

        fn create(s: &mut Store, res: usize, body: Value) -> Result<Value, String> {
            s.create(res, Some(NS), body)
                .map(|x| (*x.value).clone())
                .map_err(|e| format!("{} {}", e.code, e.message))
        }

        fn strip(mut v: Value) -> Value {
            for f in ["uid", "resourceVersion", "creationTimestamp"] {
                v["metadata"].as_object_mut().unwrap().remove(f);
            }
            v
        }

        #[test]
        fn a_group_is_stored_as_kube_apiserver_stores_it() {
            let mut s = store();
            let pg = create(
                &mut s,
                POD_GROUPS,
                json!({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                    "metadata": {"name": "topo", "namespace": NS},
                    "spec": {"schedulingPolicy": {"gang": {"minCount": 2}},
                             "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]}},
                    "status": {"conditions": [{"type": "PodGroupScheduled", "status": "True"}]}}),
            )
            .unwrap();
            assert_eq!(
                strip(pg),
                json!({"kind": "PodGroup", "apiVersion": "scheduling.k8s.io/v1alpha2",
                    "metadata": {"name": "topo", "namespace": NS, "finalizers": ["scheduling.k8s.io/podgroup-protection"]},
                    "spec": {"podGroupTemplateRef": null, "schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": "Pod"},
                    "status": {}})
            );
            let w = create(
                &mut s,
                WORKLOADS,
                json!({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "Workload", "metadata": {"name": "job"},
                    "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}},
                        "disruptionMode": "PodGroup", "priorityClassName": "high"}]}}),
            )
            .unwrap();
            assert_eq!(
                strip(w),
                json!({"kind": "Workload", "apiVersion": "scheduling.k8s.io/v1alpha2",
                    "metadata": {"name": "job", "namespace": NS},
                    "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}, "schedulingConstraints": null}]}})
            );
        }

        #[test]
        fn a_group_made_from_a_template_needs_the_workload_and_the_template() {
            let mut s = store();
            let from = |workload: &str, template: &str| {
                json!({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": "g"},
                    "spec": {"podGroupTemplateRef": {"workload": {"workloadName": workload, "podGroupTemplateName": template}},
                             "schedulingPolicy": {"basic": {}}}})
            };
            assert_eq!(
                create(&mut s, POD_GROUPS, from("job", "workers")).unwrap_err(),
                "403 podgroups.scheduling.k8s.io \"g\" is forbidden: PodGroup rejected: Workload \"job\" not found"
            );
            create(
                &mut s,
                WORKLOADS,
                json!({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "Workload", "metadata": {"name": "job"},
                    "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"basic": {}}}]}}),
            )
            .unwrap();
            assert_eq!(
                create(&mut s, POD_GROUPS, from("job", "leaders")).unwrap_err(),
                "403 podgroups.scheduling.k8s.io \"g\" is forbidden: PodGroup rejected: PodGroupTemplate \"leaders\" not found in Workload \"job\""
            );
            assert_eq!(
                create(&mut s, POD_GROUPS, from("", "leaders")).unwrap_err(),
                "422 PodGroup.scheduling.k8s.io \"g\" is invalid: spec.podGroupTemplateRef.workload.workloadName: Required value",
                "validation comes before validating admission"
            );
            let pg = create(&mut s, POD_GROUPS, from("job", "workers")).unwrap();
            assert_eq!(pg["spec"]["podGroupTemplateRef"]["workload"]["workloadName"], "job");
        }

        fn scheduled(time: &str) -> Value {
            json!({"status": {"conditions": [{"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled",
                "message": "", "lastTransitionTime": time, "observedGeneration": 0}]}})
        }

        #[test]
        fn the_scheduler_patches_conditions_into_the_status_by_type() {
            let mut s = store();
            create(
                &mut s,
                POD_GROUPS,
                json!({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": "train"},
                    "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}),
            )
            .unwrap();
            let smp = "application/strategic-merge-patch+json";
            let mut unschedulable = scheduled("2026-01-01T00:00:00Z");
            unschedulable["status"]["conditions"][0]["status"] = json!("False");
            unschedulable["status"]["conditions"][0]["reason"] = json!("Unschedulable");
            s.patch(POD_GROUPS, NS, "train", Some("status"), smp, &unschedulable)
                .unwrap();
            let other = json!({"status": {"conditions": [{"type": "example.com/Checked", "status": "True", "reason": "Done",
                "message": "", "lastTransitionTime": "2026-01-01T00:00:01Z"}]}});
            s.patch(POD_GROUPS, NS, "train", Some("status"), smp, &other).unwrap();
            let pg = s
                .patch(
                    POD_GROUPS,
                    NS,
                    "train",
                    Some("status"),
                    smp,
                    &scheduled("2026-01-01T00:00:02Z"),
                )
                .unwrap();
            let conditions = &pg.value["status"]["conditions"];
            assert_eq!(conditions.as_array().unwrap().len(), 2, "{conditions}");
            assert_eq!(
                conditions[0],
                json!({"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled", "message": "",
                    "lastTransitionTime": "2026-01-01T00:00:02Z"}),
                "merged by type, observedGeneration 0 left out as Go leaves it out"
            );
            assert_eq!(conditions[1]["type"], "example.com/Checked");
            assert_eq!(pg.value["spec"]["disruptionMode"], "Pod");
            // The main resource ignores the status; the status subresource the spec.
            let mut v = (*pg.value).clone();
            v["status"] = json!({});
            v["spec"]["schedulingPolicy"] = json!({"basic": {}});
            let e = s.update(POD_GROUPS, NS, "train", None, v.clone()).unwrap_err();
            assert_eq!(
                e.message,
                "PodGroup.scheduling.k8s.io \"train\" is invalid: spec.schedulingPolicy: Invalid value: null: field is immutable"
            );
            let after = s.update(POD_GROUPS, NS, "train", Some("status"), v).unwrap();
            assert_eq!(
                after.value["spec"]["schedulingPolicy"],
                json!({"gang": {"minCount": 2}})
            );
            assert_eq!(after.value["status"], json!({}));
        }

        #[test]
        fn a_condition_without_its_time_is_refused_not_undecodable() {
            let mut s = store();
            create(
                &mut s,
                POD_GROUPS,
                json!({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": "train"},
                    "spec": {"schedulingPolicy": {"basic": {}}}}),
            )
            .unwrap();
            let mut body = scheduled("");
            body["status"]["conditions"][0]
                .as_object_mut()
                .unwrap()
                .remove("lastTransitionTime");
            let e = s
                .patch(
                    POD_GROUPS,
                    NS,
                    "train",
                    Some("status"),
                    "application/merge-patch+json",
                    &body,
                )
                .unwrap_err();
            assert_eq!(
                (e.code, e.message.as_str()),
                (
                    422,
                    "PodGroup.scheduling.k8s.io \"train\" is invalid: status.conditions[0].lastTransitionTime: Required value"
                )
            );
        }
    }
}
