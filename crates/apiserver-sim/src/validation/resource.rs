//! `resource.k8s.io/v1` (`pkg/apis/resource/validation`): DeviceClasses,
//! ResourceSlices, ResourceClaims and their templates, for the rules a
//! scheduler's objects meet. CEL selectors are compiled with the
//! scheduler's own compiler ([`wasmsched_core::dra::cel`]) and refused in
//! `validateCELSelector`'s words.

use std::sync::LazyLock;

use serde_json::Value;
use wasmsched_core::dra::cel::{CelCache, CelErrorKind};

use super::{Errors, is_dns_subdomain, list, name as name_of, quoted, text};
use crate::resources::NAMESPACES;
use crate::status::ApiError;
use crate::store::Store;

const GROUP: &str = "resource.k8s.io";

/// `IsDNS1123Subdomain`'s message.
const SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// The label a namespace needs for claims that ask for admin access.
const ADMIN_ACCESS_LABEL: &str = "resource.kubernetes.io/admin-access";

/// Checks an object of `kind` being created or replaced.
pub(crate) fn validate(store: &Store, kind: &str, v: &Value) -> Result<(), ApiError> {
    let name = name_of(v);
    let mut errs = Errors::default();
    match kind {
        "DeviceClass" => class(&mut errs, &v["spec"]),
        "ResourceSlice" => slice(&mut errs, &v["spec"]),
        "ResourceClaim" => claim(&mut errs, store, v, &v["spec"], "spec"),
        "ResourceClaimTemplate" => claim(&mut errs, store, v, &v["spec"]["spec"], "spec.spec"),
        _ => {}
    }
    errs.into_result(GROUP, kind, name)
}

/// Compiled selectors, by expression: an object is validated on each
/// create and update.
static SELECTORS: LazyLock<CelCache> = LazyLock::new(|| CelCache::new(1024));

/// A selector's expression is required, and must compile
/// (`validateCELSelector`): too long, it is refused without compiling; not
/// compiling, it is an invalid value with the compiler's message; too
/// costly, it is forbidden.
fn selectors(errs: &mut Errors, selectors: &[Value], path: &str) {
    for (i, s) in selectors.iter().enumerate() {
        let at = format!("{path}[{i}].cel.expression");
        let expression = match s.pointer("/cel/expression").and_then(Value::as_str) {
            None | Some("") => {
                errs.required(at, "");
                continue;
            }
            Some(expression) => expression,
        };
        if let Err(e) = SELECTORS.get(expression).as_ref() {
            match e.kind() {
                CelErrorKind::TooLong => errs.push(at, format!("Too long: {}", e.message())),
                CelErrorKind::TooComplex => errs.forbidden(at, e.message()),
                _ => errs.invalid(at, &quoted(expression), e.message()),
            }
        }
    }
}

fn class(errs: &mut Errors, spec: &Value) {
    selectors(errs, list(spec, "selectors"), "spec.selectors");
}

fn slice(errs: &mut Errors, spec: &Value) {
    let driver = text(spec, "driver");
    if driver.is_empty() {
        errs.required("spec.driver", "");
    } else if !is_dns_subdomain(driver) {
        errs.invalid("spec.driver", &quoted(driver), SUBDOMAIN);
    }
    if text(&spec["pool"], "name").is_empty() {
        errs.required("spec.pool.name", "");
    }
    let set: Vec<&str> = [
        (
            "nodeName",
            spec.get("nodeName")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty()),
        ),
        ("nodeSelector", spec.get("nodeSelector").is_some_and(|s| !s.is_null())),
        ("allNodes", spec.get("allNodes").and_then(Value::as_bool) == Some(true)),
        (
            "perDeviceNodeSelection",
            spec.get("perDeviceNodeSelection").and_then(Value::as_bool) == Some(true),
        ),
    ]
    .into_iter()
    .filter(|(_, on)| *on)
    .map(|(f, _)| f)
    .collect();
    const ONE_OF: &str = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required";
    match set.len() {
        0 => errs.required("spec", ONE_OF),
        1 => {}
        _ => {
            let shown: Vec<String> = set.iter().map(|f| format!("`{f}`")).collect();
            errs.invalid(
                "spec",
                &quoted(&format!("{{{}}}", shown.join(", "))),
                &format!("{ONE_OF}, but multiple fields are set"),
            );
        }
    }
    let mut names: Vec<&str> = Vec::new();
    for (i, d) in list(spec, "devices").iter().enumerate() {
        let name = text(d, "name");
        if names.contains(&name) {
            errs.duplicate(format!("spec.devices[{i}]"), &quoted(name));
        }
        names.push(name);
        if let Some(attrs) = d.get("attributes").and_then(Value::as_object) {
            for (key, a) in attrs {
                attribute(errs, a, &format!("spec.devices[{i}].attributes[{key}]"));
            }
        }
    }
}

/// A device attribute holds exactly one value, shown as Go prints the
/// struct when it does not.
fn attribute(errs: &mut Errors, a: &Value, path: &str) {
    const FIELDS: [(&str, &str); 8] = [
        ("int", "IntValue"),
        ("bool", "BoolValue"),
        ("string", "StringValue"),
        ("version", "VersionValue"),
        ("ints", "IntValues"),
        ("bools", "BoolValues"),
        ("strings", "StringValues"),
        ("versions", "VersionValues"),
    ];
    let set = FIELDS
        .iter()
        .filter(|(f, _)| a.get(*f).is_some_and(|v| !v.is_null()))
        .count();
    if set == 1 {
        return;
    }
    let shown: Vec<String> = FIELDS
        .iter()
        .map(|(f, go)| format!("{}:{}", quoted(go), a.get(*f).unwrap_or(&Value::Null)))
        .collect();
    errs.invalid(
        path,
        &format!("{{{}}}", shown.join(",")),
        "exactly one value must be specified",
    );
}

/// A claim's spec (a claim's, or a template's `spec.spec`) at `path`.
fn claim(errs: &mut Errors, store: &Store, obj: &Value, spec: &Value, path: &str) {
    let devices = &spec["devices"];
    let requests = list(devices, "requests");
    let mut names: Vec<&str> = Vec::new();
    // Request names, and `request/subrequest` for prioritized lists.
    let mut known: Vec<String> = Vec::new();
    let admin_ok = || {
        let ns = obj.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("");
        store.get(NAMESPACES, "", ns).is_ok_and(|n| {
            n.value
                .pointer("/metadata/labels")
                .and_then(|l| l.get(ADMIN_ACCESS_LABEL))
                == Some(&Value::from("true"))
        })
    };
    for (i, r) in requests.iter().enumerate() {
        let at = format!("{path}.devices.requests[{i}]");
        let name = text(r, "name");
        if name.is_empty() {
            errs.required(format!("{at}.name"), "");
        } else if names.contains(&name) {
            errs.duplicate(at.clone(), &quoted(name));
        }
        names.push(name);
        known.push(name.to_owned());
        let exactly = r.get("exactly").filter(|e| !e.is_null());
        let first = r.get("firstAvailable").filter(|f| !f.is_null());
        const ONE_OF: &str = "exactly one of `exactly` or `firstAvailable` is required";
        match (exactly, first) {
            (Some(_), Some(_)) => errs.invalid(at.clone(), "null", &format!("{ONE_OF}, but multiple fields are set")),
            (None, None) => errs.required(at.clone(), ONE_OF),
            _ => {}
        }
        if let Some(e) = exactly {
            request(errs, e, &format!("{at}.exactly"));
            if e.get("adminAccess").and_then(Value::as_bool) == Some(true) && !admin_ok() {
                errs.forbidden(
                    format!("{at}.adminAccess"),
                    &format!("admin access to devices requires the `{ADMIN_ACCESS_LABEL}: true` label on the containing namespace"),
                );
            }
        }
        for (j, sub) in first
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .enumerate()
        {
            request(errs, sub, &format!("{at}.firstAvailable[{j}]"));
            known.push(format!("{name}/{}", text(sub, "name")));
        }
    }
    for (i, c) in list(devices, "constraints").iter().enumerate() {
        for (j, r) in list(c, "requests").iter().enumerate() {
            let r = r.as_str().unwrap_or("");
            if !known.iter().any(|k| k == r) {
                errs.invalid(
                    format!("{path}.devices.constraints[{i}].requests[{j}]"),
                    &quoted(r),
                    "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'",
                );
            }
        }
    }
}

/// An `exactly` request or a subrequest: a class, and a count only for
/// `ExactCount`.
fn request(errs: &mut Errors, r: &Value, at: &str) {
    if text(r, "deviceClassName").is_empty() {
        errs.required(format!("{at}.deviceClassName"), "");
    }
    let count = r.get("count").and_then(Value::as_i64).unwrap_or(0);
    match text(r, "allocationMode") {
        "All" if count != 0 => {
            errs.invalid(
                format!("{at}.count"),
                &count.to_string(),
                "must not be specified when allocationMode is 'All'",
            );
        }
        "ExactCount" if count <= 0 => {
            errs.invalid(format!("{at}.count"), &count.to_string(), "must be greater than zero");
        }
        "All" | "ExactCount" => {}
        other => errs.not_supported(format!("{at}.allocationMode"), &quoted(other), &["All", "ExactCount"]),
    }
    selectors(errs, list(r, "selectors"), &format!("{at}.selectors"));
}
