//! Events, core/v1 and `events.k8s.io/v1` (`ValidateEventCreate`): both
//! are checked as the internal core Event, so both are refused as `Event`;
//! `events.k8s.io/v1` adds the strict rules on create.

use serde_json::Value;

use super::{Errors, is_qualified_name, name, quoted};
use crate::status::ApiError;

const REPORTING_INSTANCE_LIMIT: usize = 128;
const ACTION_LIMIT: usize = 128;
const REASON_LIMIT: usize = 128;
const NOTE_LIMIT: usize = 1024;

/// The internal Event's fields, read from either version.
struct Fields<'a> {
    namespace: &'a str,
    involved_namespace: &'a str,
    event_time: bool,
    reporting_controller: &'a str,
    reporting_instance: &'a str,
    action: &'a str,
    reason: &'a str,
    message: &'a str,
    type_: &'a str,
    first_timestamp: bool,
    last_timestamp: bool,
    count: i64,
    source: bool,
    series: Option<&'a Value>,
}

impl<'a> Fields<'a> {
    fn read(ev: &'a Value, events_v1: bool) -> Self {
        let s = |ptr: &str| ev.pointer(ptr).and_then(Value::as_str).unwrap_or("");
        let set = |ptr: &str| ev.pointer(ptr).is_some_and(|v| !v.is_null());
        let (involved, message, first, last, count, source, controller) = if events_v1 {
            (
                "/regarding/namespace",
                "/note",
                "/deprecatedFirstTimestamp",
                "/deprecatedLastTimestamp",
                "/deprecatedCount",
                "/deprecatedSource",
                "/reportingController",
            )
        } else {
            (
                "/involvedObject/namespace",
                "/message",
                "/firstTimestamp",
                "/lastTimestamp",
                "/count",
                "/source",
                "/reportingComponent",
            )
        };
        let source_set = ev.pointer(source).is_some_and(|v| {
            ["component", "host"]
                .iter()
                .any(|f| v.get(f).and_then(Value::as_str).is_some_and(|s| !s.is_empty()))
        });
        Self {
            namespace: s("/metadata/namespace"),
            involved_namespace: s(involved),
            event_time: set("/eventTime"),
            reporting_controller: s(controller),
            reporting_instance: s("/reportingInstance"),
            action: s("/action"),
            reason: s("/reason"),
            message: s(message),
            type_: s("/type"),
            first_timestamp: set(first),
            last_timestamp: set(last),
            count: ev.pointer(count).and_then(Value::as_i64).unwrap_or(0),
            source: source_set,
            series: ev.get("series").filter(|v| !v.is_null()),
        }
    }
}

/// Checks an event being created; `events_v1` for `events.k8s.io/v1`.
pub(crate) fn validate_create(ev: &Value, events_v1: bool) -> Result<(), ApiError> {
    let f = Fields::read(ev, events_v1);
    let mut errs = legacy(&f, events_v1);
    if events_v1 {
        series(&mut errs, f.series);
        if !f.event_time {
            errs.required("eventTime", "");
        }
        if f.type_ != "Normal" && f.type_ != "Warning" {
            errs.invalid("type", "\"\"", &format!("has invalid value: {}", f.type_));
        }
        for (set, field) in [
            (f.first_timestamp, "firstTimestamp"),
            (f.last_timestamp, "lastTimestamp"),
            (f.count != 0, "count"),
            (f.source, "source"),
        ] {
            if set {
                errs.invalid(field, "\"\"", "needs to be unset");
            }
        }
    }
    errs.into_result("", "Event", name(ev))
}

/// Checks an event being replaced: the rules every event meets.
pub(crate) fn validate_update(ev: &Value, events_v1: bool) -> Result<(), ApiError> {
    let f = Fields::read(ev, events_v1);
    legacy(&f, events_v1).into_result("", "Event", name(ev))
}

/// `legacyValidateEvent`.
fn legacy(f: &Fields, events_v1: bool) -> Errors {
    let mut errs = Errors::default();
    let mismatch = |errs: &mut Errors| {
        errs.invalid(
            "involvedObject.namespace",
            &quoted(f.involved_namespace),
            "does not match event.namespace",
        );
    };
    if !f.event_time {
        let ok = if f.involved_namespace.is_empty() {
            f.namespace.is_empty() || f.namespace == "default"
        } else {
            f.namespace == f.involved_namespace
        };
        if !ok {
            mismatch(&mut errs);
        }
        return errs;
    }
    if f.involved_namespace.is_empty() && f.namespace != "default" && f.namespace != "kube-system" {
        mismatch(&mut errs);
    }
    let controller_field = if events_v1 {
        "reportingController"
    } else {
        "reportingComponent"
    };
    if f.reporting_controller.is_empty() {
        errs.required(controller_field, "");
    } else if !is_qualified_name(f.reporting_controller) {
        errs.invalid(
            controller_field,
            &quoted(f.reporting_controller),
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        );
    }
    for (value, field, limit) in [
        (f.reporting_instance, "reportingInstance", REPORTING_INSTANCE_LIMIT),
        (f.action, "action", ACTION_LIMIT),
        (f.reason, "reason", REASON_LIMIT),
    ] {
        if value.is_empty() {
            errs.required(field, "");
        }
        if value.len() > limit {
            errs.invalid(field, "\"\"", &format!("can have at most {limit} characters"));
        }
    }
    if f.message.len() > NOTE_LIMIT {
        errs.invalid("message", "\"\"", &format!("can have at most {NOTE_LIMIT} characters"));
    }
    errs
}

/// `validateV1EventSeries`.
fn series(errs: &mut Errors, series: Option<&Value>) {
    let Some(s) = series else { return };
    if s.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
        errs.invalid("series.count", "\"\"", "should be at least 2");
    }
    if s.get("lastObservedTime").is_none_or(Value::is_null) {
        errs.required("series.lastObservedTime", "");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn v1_event() -> Value {
        json!({"metadata": {"name": "e", "namespace": "fid"}, "eventTime": "2026-11-28T00:00:00.000000Z",
            "reportingController": "wasmsched", "reportingInstance": "wasmsched-1", "action": "Binding",
            "reason": "Scheduled", "regarding": {"kind": "Pod", "namespace": "fid", "name": "p"}, "type": "Normal"})
    }

    #[test]
    fn an_events_v1_event_needs_its_action_type_and_time() {
        assert!(validate_create(&v1_event(), true).is_ok());
        let mut e = v1_event();
        e.as_object_mut().unwrap().remove("action");
        assert_eq!(
            validate_create(&e, true).unwrap_err().message,
            "Event \"e\" is invalid: action: Required value"
        );
        let mut e = v1_event();
        e["type"] = json!("Odd");
        e["series"] = json!({"count": 1});
        let m = validate_create(&e, true).unwrap_err().message;
        assert!(
            m.contains("series.count: Invalid value: \"\": should be at least 2"),
            "{m}"
        );
        assert!(m.contains("series.lastObservedTime: Required value"), "{m}");
        assert!(m.contains("type: Invalid value: \"\": has invalid value: Odd"), "{m}");
    }

    #[test]
    fn a_core_event_without_a_time_only_matches_namespaces() {
        let e = json!({"metadata": {"name": "e", "namespace": "a"}, "involvedObject": {"namespace": "b"}});
        let m = validate_create(&e, false).unwrap_err().message;
        assert!(m.ends_with("involvedObject.namespace: Invalid value: \"b\": does not match event.namespace"));
        let e = json!({"metadata": {"name": "e", "namespace": "a"}, "involvedObject": {"namespace": "a"}});
        assert!(validate_create(&e, false).is_ok());
    }
}
