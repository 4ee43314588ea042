//! What kube-apiserver's validation refuses, for the kinds and fields the
//! double's clients write, in `field.Error`'s words (`pkg/apis/core/
//! validation`, `pkg/apis/scheduling/validation`). Each kind's rules are in
//! a file of its own; what is not checked is listed in
//! `docs/apiserver-conformance.md`.

pub(crate) mod event;
pub(crate) mod pod;
pub(crate) mod priority_class;
pub(crate) mod resource;

use serde_json::Value;

use crate::status::ApiError;

/// Field errors in the order kube finds them; refused together as one 422.
#[derive(Debug, Default)]
pub(crate) struct Errors(Vec<(String, String)>);

impl Errors {
    /// `field.Required`: `Required value[: detail]`.
    pub(crate) fn required(&mut self, field: impl Into<String>, detail: &str) {
        self.push(field, with_detail("Required value", detail));
    }

    /// `field.Invalid`: `Invalid value: <value>: detail`, the value as Go
    /// prints it (see [`quoted`]).
    pub(crate) fn invalid(&mut self, field: impl Into<String>, value: &str, detail: &str) {
        self.push(field, with_detail(&format!("Invalid value: {value}"), detail));
    }

    /// `field.Forbidden`: `Forbidden: detail`.
    pub(crate) fn forbidden(&mut self, field: impl Into<String>, detail: &str) {
        self.push(field, with_detail("Forbidden", detail));
    }

    /// `field.NotFound` with an explanation: `Not found: <value>: detail`.
    pub(crate) fn not_found(&mut self, field: impl Into<String>, value: &str, detail: &str) {
        self.push(field, with_detail(&format!("Not found: {value}"), detail));
    }

    /// `field.Duplicate`: `Duplicate value: <value>`.
    pub(crate) fn duplicate(&mut self, field: impl Into<String>, value: &str) {
        self.push(field, format!("Duplicate value: {value}"));
    }

    /// `field.NotSupported`: `Unsupported value: <value>: supported values: "a", "b"`.
    pub(crate) fn not_supported(&mut self, field: impl Into<String>, value: &str, supported: &[&str]) {
        let list: Vec<String> = supported.iter().map(|s| quoted(s)).collect();
        self.push(
            field,
            format!("Unsupported value: {value}: supported values: {}", list.join(", ")),
        );
    }

    fn push(&mut self, field: impl Into<String>, body: String) {
        self.0.push((field.into(), body));
    }

    /// `Ok` when empty, else the 422 naming `kind` (of `group`) `name`.
    pub(crate) fn into_result(self, group: &str, kind: &str, name: &str) -> Result<(), ApiError> {
        if self.0.is_empty() {
            return Ok(());
        }
        let errors: Vec<(&str, &str)> = self.0.iter().map(|(f, b)| (f.as_str(), b.as_str())).collect();
        Err(ApiError::invalid_fields(group, kind, name, &errors))
    }
}

fn with_detail(head: &str, detail: &str) -> String {
    if detail.is_empty() {
        head.to_owned()
    } else {
        format!("{head}: {detail}")
    }
}

/// The array at `field` of `v` (empty when absent or not an array).
pub(crate) fn list<'a>(v: &'a Value, field: &str) -> &'a [Value] {
    v.get(field).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// An object's `metadata.name` (empty when absent).
pub(crate) fn name(v: &Value) -> &str {
    v.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("")
}

/// The string at `field` of `v` (empty when absent).
pub(crate) fn text<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get(field).and_then(Value::as_str).unwrap_or("")
}

/// A string as Go's `%q` prints it (which is what `field.Invalid` does with
/// a string value).
pub(crate) fn quoted(s: &str) -> String {
    serde_json::to_string(s).expect("strings serialize")
}

/// An RFC 1123 subdomain (`a.b-c`), at most 253 characters.
pub(crate) fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// A qualified name (`example.com/name` or `name`), as `IsQualifiedName`
/// takes it: an optional DNS subdomain prefix, then 1–63 alphanumerics,
/// `-`, `_` or `.`, starting and ending with an alphanumeric.
pub(crate) fn is_qualified_name(s: &str) -> bool {
    let (prefix, name) = match s.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && name.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && name.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric());
    name_ok && prefix.is_none_or(is_dns_subdomain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_worded_and_aggregated_as_kube_does() {
        let mut e = Errors::default();
        e.invalid("spec.a", &quoted("500m"), "must be an integer");
        e.required("spec.b", "");
        let err = e.into_result("", "Pod", "p").unwrap_err();
        assert_eq!(
            err.message,
            "Pod \"p\" is invalid: [spec.a: Invalid value: \"500m\": must be an integer, spec.b: Required value]"
        );
        let causes = &err.details.unwrap()["causes"];
        assert_eq!(causes[0]["reason"], "FieldValueInvalid");
        assert_eq!(causes[1]["reason"], "FieldValueRequired");
        assert!(Errors::default().into_result("", "Pod", "p").is_ok());
    }

    #[test]
    fn names_are_checked_as_kube_checks_them() {
        assert!(is_dns_subdomain("gpu.example.com"));
        assert!(!is_dns_subdomain("GPU_Example"));
        assert!(is_qualified_name("wasm-scheduler"));
        assert!(is_qualified_name("example.com/sched_1"));
        assert!(!is_qualified_name("-x"));
        assert!(!is_qualified_name("a/b/c"));
    }
}
