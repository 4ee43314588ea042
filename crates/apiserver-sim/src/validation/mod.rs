//! What kube-apiserver's validation refuses, for the kinds and fields the
//! double's clients write, in `field.Error`'s words (`pkg/apis/core/
//! validation`, `pkg/apis/scheduling/validation`). Each kind's rules are in
//! a file of its own; what is not checked is listed in
//! `docs/apiserver-conformance.md`.

pub(crate) mod event;
pub(crate) mod pod;
pub(crate) mod pod_group;
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

    /// `field.TooMany`: `Too many: <n>: must have at most <max> items`.
    pub(crate) fn too_many(&mut self, field: impl Into<String>, n: usize, max: usize) {
        let items = if max == 1 { "item" } else { "items" };
        self.push(field, format!("Too many: {n}: must have at most {max} {items}"));
    }

    /// `field.TooLong`: `Too long: may not be more than <max> bytes`.
    pub(crate) fn too_long(&mut self, field: impl Into<String>, max: usize) {
        let bytes = if max == 1 { "byte" } else { "bytes" };
        self.push(field, format!("Too long: may not be more than {max} {bytes}"));
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

/// `IsDNS1123Subdomain`'s message (without the examples and regex).
const SUBDOMAIN_WORDS: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// `IsDNS1123Label`'s message (without the examples and regex).
const LABEL_WORDS: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";

/// `dns1123LabelFmt`.
const LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";

/// `dns1123SubdomainFmt`.
const SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";

/// `labelKeyFmt` (a qualified name's name part).
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";

/// `labelKeyErrMsg`.
const LABEL_KEY_WORDS: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// `RegexError`: the message, its examples and the regex, worded (and
/// spaced: two spaces before each further `or`) as apimachinery words it.
pub(crate) fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{re}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{e}', "));
    }
    out.push_str(&format!("regex used for validation is '{re}')"));
    out
}

/// `dns1123LabelRegexp`: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, whatever its length.
fn label_form(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// `dns1123SubdomainRegexp`: labels joined by dots, whatever the length.
fn subdomain_form(s: &str) -> bool {
    s.split('.').all(label_form)
}

/// `IsDNS1123Subdomain`'s messages: `util/validation`'s (`unit`
/// `characters`, for object names) or `validate/content`'s (`bytes`, for
/// declarative validation's `k8s-long-name`).
pub(crate) fn subdomain_errors(s: &str, unit: &str) -> Vec<String> {
    let mut out = Vec::new();
    if s.len() > 253 {
        out.push(format!("must be no more than 253 {unit}"));
    }
    if !subdomain_form(s) {
        out.push(regex_error(SUBDOMAIN_WORDS, SUBDOMAIN_FMT, &["example.com"]));
    }
    out
}

/// `content.IsDNS1123Label`'s messages (declarative validation's
/// `k8s-short-name`).
pub(crate) fn label_errors(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    if s.len() > 63 {
        out.push("must be no more than 63 bytes".to_owned());
    }
    if !label_form(s) {
        if subdomain_form(s) {
            out.push("must not contain dots".to_owned());
        } else {
            out.push(regex_error(LABEL_WORDS, LABEL_FMT, &["my-name", "123-abc"]));
        }
    }
    out
}

/// `content.IsLabelKey` (also `IsQualifiedName`): an optional DNS
/// subdomain prefix and `/`, then a name of at most 63 characters.
pub(crate) fn label_key_errors(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                out.push("prefix part must be non-empty".to_owned());
            } else {
                out.extend(
                    subdomain_errors(prefix, "bytes")
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            out.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_WORDS, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return out;
        }
    };
    if name.is_empty() {
        out.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        out.push("name part must be no more than 63 bytes".to_owned());
    }
    let name_form = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && name.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && name.bytes().last().is_some_and(|b| b.is_ascii_alphanumeric());
    if !name_form {
        out.push(format!(
            "name part {}",
            regex_error(LABEL_KEY_WORDS, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
        ));
    }
    out
}

/// `content.IsPathSegmentName`.
pub(crate) fn path_segment_errors(s: &str) -> Vec<String> {
    if s == "." || s == ".." {
        return vec![format!("may not be '{s}'")];
    }
    ["/", "%"]
        .iter()
        .filter(|c| s.contains(*c))
        .map(|c| format!("may not contain '{c}'"))
        .collect()
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

    #[test]
    fn format_messages_are_apimachinerys() {
        assert_eq!(
            label_errors("a.b"),
            ["must not contain dots"],
            "a subdomain that is not a label"
        );
        assert_eq!(
            label_errors("Bad"),
            [
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
        assert_eq!(
            subdomain_errors(&"a".repeat(254), "characters"),
            ["must be no more than 253 characters"]
        );
        assert_eq!(
            subdomain_errors("x_y", "bytes"),
            [
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert_eq!(label_key_errors("example.com/PodGroupScheduled"), Vec::<String>::new());
        assert_eq!(label_key_errors("/x"), ["prefix part must be non-empty"]);
        assert_eq!(label_key_errors("").len(), 2, "empty, and not matching");
        assert_eq!(path_segment_errors(".."), ["may not be '..'"]);
        assert_eq!(
            path_segment_errors("a/b%"),
            ["may not contain '/'", "may not contain '%'"]
        );
    }
}
