//! Errors as the API server sends them: a `meta/v1` `Status` with the HTTP
//! code, a machine-readable `reason` and details naming the object.

use serde_json::{Value, json};

/// A failed request, rendered as a Kubernetes `Status` body.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status code (also the Status' `code`).
    pub code: u16,
    /// `StatusReason`: `NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, ...
    pub reason: &'static str,
    /// Human-readable message, worded as kube-apiserver words it.
    pub message: String,
    /// `details`: the object's name, group and kind (resource), when known.
    pub details: Option<Value>,
    /// Seconds for a `Retry-After` header (429 and some 5xx).
    pub retry_after: Option<u64>,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    fn with_details(mut self, group: &str, kind: &str, name: &str) -> Self {
        let mut d = json!({"name": name, "kind": kind});
        if !group.is_empty() {
            d["group"] = json!(group);
        }
        self.details = Some(d);
        self
    }

    /// 404 `pods "x" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, resource)),
        )
        .with_details(group, resource, name)
    }

    /// 409 `pods "x" already exists`.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, resource)),
        )
        .with_details(group, resource, name)
    }

    /// 409 `Operation cannot be fulfilled on leases.coordination.k8s.io "x": <why>`.
    pub fn conflict(group: &str, resource: &str, name: &str, why: impl std::fmt::Display) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(group, resource)
            ),
        )
        .with_details(group, resource, name)
    }

    /// 409 for an update carrying a stale `metadata.resourceVersion`.
    pub fn stale(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 `Pod "x" is invalid: <field>: <why>` (the kind qualified by its
    /// group, `Lease.coordination.k8s.io "x"`, as kube's `NewInvalid` says).
    pub fn invalid(group: &str, kind: &str, name: &str, field: &str, why: &str) -> Self {
        Self::invalid_fields(group, kind, name, &[(field, why)])
    }

    /// 422 for several field errors, aggregated as kube aggregates them:
    /// `SubjectAccessReview.authorization.k8s.io "" is invalid: [a: ..., b: ...]`.
    pub fn invalid_fields(group: &str, kind: &str, name: &str, errors: &[(&str, &str)]) -> Self {
        let all: Vec<String> = errors.iter().map(|(f, why)| format!("{f}: {why}")).collect();
        let all = match all.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        let qualified_kind = if group.is_empty() {
            kind.to_owned()
        } else {
            format!("{kind}.{group}")
        };
        let mut e = Self::new(422, "Invalid", format!("{qualified_kind} \"{name}\" is invalid: {all}"));
        let causes: Vec<Value> = errors
            .iter()
            .map(|(f, why)| json!({"reason": cause_reason(why), "message": why, "field": f}))
            .collect();
        let mut d = json!({"name": name, "kind": kind, "causes": causes});
        if !group.is_empty() {
            d["group"] = json!(group);
        }
        e.details = Some(d);
        e
    }

    /// 403 `pods "x" is forbidden: <why>`, as an admission plugin refuses.
    pub fn forbidden(group: &str, resource: &str, name: &str, why: impl std::fmt::Display) -> Self {
        Self::new(
            403,
            "Forbidden",
            format!("{} \"{name}\" is forbidden: {why}", qualified(group, resource)),
        )
        .with_details(group, resource, name)
    }

    /// 400 with reason `BadRequest`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 405 for a verb the resource does not support.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    /// 415 for a patch type the server does not take.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got {content_type:?})"
            ),
        )
    }

    /// 410 `Expired`, as for a watch or list from a compacted resourceVersion.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 404 for a path that names no resource.
    pub fn no_route(path: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource (path {path})"),
        )
    }

    /// 500 `InternalError`, as an injected fault.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// 429 `TooManyRequests` with `Retry-After`.
    pub fn too_many_requests(retry_after: u64) -> Self {
        let mut e = Self::new(
            429,
            "TooManyRequests",
            "the server has received too many requests and has asked us to try again later",
        );
        e.retry_after = Some(retry_after);
        e.details = Some(json!({"retryAfterSeconds": retry_after}));
        e
    }

    /// Any other code (used by fault injection), with kube's reason for it.
    pub fn from_code(code: u16) -> Self {
        match code {
            429 => Self::too_many_requests(1),
            500 => {
                Self::internal("an error on the server (\"injected fault\") has prevented the request from succeeding")
            }
            503 => {
                let mut e = Self::new(
                    503,
                    "ServiceUnavailable",
                    "the server is currently unable to handle the request",
                );
                e.retry_after = Some(1);
                e
            }
            504 => Self::new(
                504,
                "Timeout",
                "the server was unable to return a response in the time allotted",
            ),
            c => Self::new(c, "InternalError", format!("injected fault with status {c}")),
        }
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut v = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            v["details"] = d.clone();
        }
        v
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

/// A field error's `CauseType`, from the words its body starts with (as
/// `field.Error` writes them: `Required value`, `Forbidden: ...`).
fn cause_reason(body: &str) -> &'static str {
    [
        ("Required value", "FieldValueRequired"),
        ("Forbidden", "FieldValueForbidden"),
        ("Not found", "FieldValueNotFound"),
        ("Duplicate value", "FieldValueDuplicate"),
        ("Unsupported value", "FieldValueNotSupported"),
        ("Too long", "FieldValueTooLong"),
        ("Too many", "FieldValueTooMany"),
    ]
    .iter()
    .find(|(words, _)| body.starts_with(words))
    .map_or("FieldValueInvalid", |(_, reason)| reason)
}

/// A success `Status` (what a binding answers).
pub fn success(code: u16) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code})
}

/// `leases.coordination.k8s.io`, `pods`: how kube names a resource in messages.
pub fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    }
}
