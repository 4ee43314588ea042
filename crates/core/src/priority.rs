//! PriorityClasses as the API server's Priority admission reads them
//! (`plugin/pkg/admission/priority`): shared by the fixture reader, which
//! gives a pod without a priority its class's, and the API double's
//! admission.

use serde_json::Value;

/// The class a pod's priority comes from: the one `named`, or with none
/// named the cluster's default (the `globalDefault` class of lowest value,
/// as when a race made two). `Ok(None)`: no class, priority 0. `Err`: the
/// named class does not exist.
pub fn class_for<'a>(
    named: Option<&str>,
    classes: impl IntoIterator<Item = &'a Value>,
) -> Result<Option<&'a Value>, NoSuchClass> {
    let mut classes = classes.into_iter();
    match named.filter(|n| !n.is_empty()) {
        Some(n) => classes
            .find(|pc| name(pc) == n)
            .map(Some)
            .ok_or_else(|| NoSuchClass(n.to_owned())),
        None => Ok(classes
            .filter(|pc| pc.get("globalDefault").and_then(Value::as_bool) == Some(true))
            .min_by_key(|pc| value(pc))),
    }
}

/// A pod names a PriorityClass that does not exist (worded as the
/// admission plugin words it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no PriorityClass with name {0} was found")]
pub struct NoSuchClass(pub String);

/// A class's name.
pub fn name(pc: &Value) -> &str {
    pc.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("")
}

/// A class's value.
pub fn value(pc: &Value) -> i64 {
    pc.get("value").and_then(Value::as_i64).unwrap_or(0)
}

/// A class's preemption policy (`PreemptLowerPriority` unless it says).
pub fn preemption_policy(pc: &Value) -> &str {
    pc.get("preemptionPolicy")
        .and_then(Value::as_str)
        .unwrap_or("PreemptLowerPriority")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_named_class_or_the_lowest_default() {
        let classes = [
            json!({"metadata": {"name": "high"}, "value": 1000}),
            json!({"metadata": {"name": "a"}, "value": 20, "globalDefault": true}),
            json!({"metadata": {"name": "b"}, "value": 10, "globalDefault": true}),
        ];
        assert_eq!(class_for(Some("high"), &classes).unwrap().map(name), Some("high"));
        assert_eq!(class_for(None, &classes).unwrap().map(name), Some("b"));
        assert_eq!(class_for(Some(""), &classes[..1]).unwrap(), None);
        assert!(class_for(Some("nope"), &classes).is_err());
    }
}
