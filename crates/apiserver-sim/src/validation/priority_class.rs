//! PriorityClasses (`ValidatePriorityClass`, `ValidatePriorityClassUpdate`):
//! the `system-` names are the system's, user values stop at one billion,
//! and value and preemption policy never change.

use serde_json::Value;

use super::{Errors, name as name_of, quoted};
use crate::status::ApiError;

/// `HighestUserDefinablePriority`.
pub(crate) const HIGHEST_USER_DEFINABLE: i64 = 1_000_000_000;

/// The classes every cluster has (`SystemPriorityClasses`): name, value,
/// description.
pub(crate) const SYSTEM_CLASSES: [(&str, i64, &str); 2] = [
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

const GROUP: &str = "scheduling.k8s.io";

/// Checks a PriorityClass being created or replaced (`old`).
pub(crate) fn validate(pc: &Value, old: Option<&Value>) -> Result<(), ApiError> {
    let name = name_of(pc);
    let value = pc.get("value").and_then(Value::as_i64).unwrap_or(0);
    let global_default = pc.get("globalDefault").and_then(Value::as_bool).unwrap_or(false);
    let mut errs = Errors::default();
    if let Some(old) = old {
        if old.get("value").and_then(Value::as_i64).unwrap_or(0) != value {
            errs.forbidden("value", "may not be changed in an update.");
        }
        let policy = |v: &Value| v.get("preemptionPolicy").cloned().unwrap_or(Value::Null);
        if policy(old) != policy(pc) {
            let shown = policy(pc).as_str().map_or_else(|| "null".to_owned(), quoted);
            errs.invalid("preemptionPolicy", &shown, "field is immutable");
        }
        return errs.into_result(GROUP, "PriorityClass", name);
    }
    if name.starts_with("system-") {
        if let Err(why) = known_system_class(name, value, global_default) {
            errs.forbidden(
                "metadata.name",
                &format!("priority class names with 'system-' prefix are reserved for system use only. error: {why}"),
            );
        }
    } else if value > HIGHEST_USER_DEFINABLE {
        errs.forbidden(
            "value",
            &format!("maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE}"),
        );
    }
    if let Some(p) = pc.get("preemptionPolicy").and_then(Value::as_str)
        && !matches!(p, "PreemptLowerPriority" | "Never")
    {
        errs.not_supported("preemptionPolicy", &quoted(p), &["Never", "PreemptLowerPriority"]);
    }
    errs.into_result(GROUP, "PriorityClass", name)
}

/// `IsKnownSystemPriorityClass`.
fn known_system_class(name: &str, value: i64, global_default: bool) -> Result<(), String> {
    match SYSTEM_CLASSES.iter().find(|(n, ..)| *n == name) {
        Some((_, v, _)) if *v != value => Err(format!("value of {name} PriorityClass must be {v}")),
        Some(_) if global_default => Err(format!("globalDefault of {name} PriorityClass must be false")),
        Some(_) => Ok(()),
        None => Err(format!("{name} is not a known system priority class")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn system_names_and_high_values_are_the_systems() {
        let e = validate(&json!({"metadata": {"name": "system-mine"}, "value": 100}), None).unwrap_err();
        assert!(
            e.message
                .ends_with("error: system-mine is not a known system priority class")
        );
        let e = validate(&json!({"metadata": {"name": "too-high"}, "value": 2_000_000_000}), None).unwrap_err();
        assert!(
            e.message
                .ends_with("value: Forbidden: maximum allowed value of a user defined priority is 1000000000")
        );
        let ok = json!({"metadata": {"name": "system-cluster-critical"}, "value": 2_000_000_000});
        assert!(validate(&ok, None).is_ok());
    }

    #[test]
    fn value_and_policy_are_immutable() {
        let old = json!({"metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"});
        let new = json!({"metadata": {"name": "high"}, "value": 5, "preemptionPolicy": "PreemptLowerPriority"});
        let e = validate(&new, Some(&old)).unwrap_err();
        assert!(
            e.message.contains("value: Forbidden: may not be changed in an update."),
            "{}",
            e.message
        );
        assert!(
            e.message
                .contains("preemptionPolicy: Invalid value: \"PreemptLowerPriority\": field is immutable")
        );
    }
}
