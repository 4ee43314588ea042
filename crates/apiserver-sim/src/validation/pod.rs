//! Pods: resources (extended resources and huge pages need limits equal to
//! their requests, integers where kube counts whole units, requests within
//! limits), resource claims, the PodGroup a pod names, and scheduling
//! gates with `nodeName`.

use serde_json::{Map, Value};
use wasmsched_core::quantity::{QuantityError, parse_milli, parse_value};

use super::{Errors, list, name as name_of, quoted, subdomain_errors, text};
use crate::status::ApiError;

/// `resource.ParseQuantity`'s grammar, as the decoder's error quotes it.
const QUANTITY_GRAMMAR: &str = "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// Checks a pod as `ValidatePodCreate` does, for the rules above. A
/// quantity that does not parse is refused before validation (400), as
/// kube's decoder refuses it.
pub(crate) fn validate(pod: &Value) -> Result<(), ApiError> {
    let name = name_of(pod);
    let spec = &pod["spec"];
    check_quantities(spec)?;
    let mut errs = Errors::default();
    let claim_names: Vec<&str> = list(spec, "resourceClaims")
        .iter()
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect();
    for (i, claim) in list(spec, "resourceClaims").iter().enumerate() {
        let path = format!("spec.resourceClaims[{i}]");
        let set = |f: &str| claim.get(f).and_then(Value::as_str).is_some_and(|s| !s.is_empty());
        if set("resourceClaimName") && set("resourceClaimTemplateName") {
            let shown = serde_json::json!({
                "Name": claim.get("name").and_then(Value::as_str).unwrap_or(""),
                "ResourceClaimName": claim["resourceClaimName"],
                "ResourceClaimTemplateName": claim["resourceClaimTemplateName"],
            });
            errs.invalid(
                path,
                &shown.to_string(),
                "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified",
            );
        }
    }
    for kind in ["initContainers", "containers"] {
        for (i, c) in list(spec, kind).iter().enumerate() {
            requirements(
                &mut errs,
                &c["resources"],
                &format!("spec.{kind}[{i}].resources"),
                &claim_names,
            );
        }
    }
    if spec.get("resources").is_some_and(Value::is_object) {
        requirements(&mut errs, &spec["resources"], "spec.resources", &claim_names);
    }
    // `validateSchedulingGroup`: one of its members (only `podGroupName`
    // so far), a DNS subdomain. The group need not exist.
    if let Some(group) = spec.get("schedulingGroup").filter(|g| !g.is_null()) {
        let at = "spec.schedulingGroup.podGroupName";
        match group.get("podGroupName").and_then(Value::as_str) {
            None => errs.invalid(at, "null", "must specify one of: `podGroupName`"),
            Some(name) => {
                for m in subdomain_errors(name, "characters") {
                    errs.invalid(at, &quoted(name), &m);
                }
            }
        }
    }
    let gated = !list(spec, "schedulingGates").is_empty();
    if gated
        && spec
            .get("nodeName")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty())
    {
        errs.forbidden(
            "spec.nodeName",
            "cannot be set until all schedulingGates have been cleared",
        );
    }
    errs.into_result("", "Pod", name)
}

fn map<'a>(v: &'a Value, field: &str) -> Option<&'a Map<String, Value>> {
    v.get(field).and_then(Value::as_object)
}

/// Every quantity of every resource requirement parses.
fn check_quantities(spec: &Value) -> Result<(), ApiError> {
    let containers = list(spec, "initContainers").iter().chain(list(spec, "containers"));
    let requirements = containers
        .map(|c| &c["resources"])
        .chain(std::iter::once(&spec["resources"]));
    for r in requirements {
        for field in ["limits", "requests"] {
            for q in map(r, field).into_iter().flat_map(|m| m.values()) {
                let ok = q.as_str().is_some_and(|s| amount(s).is_some());
                if !ok {
                    return Err(ApiError::bad_request(format!(
                        "Pod in version \"v1\" cannot be handled as a Pod: quantities must match the regular expression {QUANTITY_GRAMMAR}"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// A quantity in thousandths, wide enough for any that parses.
fn amount(s: &str) -> Option<i128> {
    match parse_milli(s) {
        Ok(m) => Some(i128::from(m)),
        Err(QuantityError::Overflow(_)) => parse_value(s).ok().map(|v| i128::from(v) * 1000),
        Err(_) => None,
    }
}

/// `resources.limits`/`requests` of a container or the pod, as
/// `validateResourceRequirements` checks them (each map in name order).
fn requirements(errs: &mut Errors, r: &Value, path: &str, claim_names: &[&str]) {
    let empty = Map::new();
    let limits = map(r, "limits").unwrap_or(&empty);
    let requests = map(r, "requests").unwrap_or(&empty);
    let (mut cpu_or_memory, mut huge) = (false, false);
    for (res, q) in limits {
        let q = q.as_str().unwrap_or("");
        quantity(errs, res, q, &format!("{path}.limits[{res}]"));
        huge |= res.starts_with("hugepages-");
        cpu_or_memory |= matches!(res.as_str(), "cpu" | "memory");
    }
    for (res, q) in requests {
        let q = q.as_str().unwrap_or("");
        quantity(errs, res, q, &format!("{path}.requests[{res}]"));
        match limits.get(res).and_then(Value::as_str) {
            Some(limit) => {
                let (req, lim) = (amount(q).unwrap_or(0), amount(limit).unwrap_or(0));
                if req != lim && !overcommit_allowed(res) {
                    let why = format!("must be equal to {res} limit of {limit}");
                    errs.invalid(format!("{path}.requests"), &quoted(q), &why);
                } else if req > lim {
                    let why = format!("must be less than or equal to {res} limit of {limit}");
                    errs.invalid(format!("{path}.requests"), &quoted(q), &why);
                }
            }
            None if !overcommit_allowed(res) => {
                errs.required(
                    format!("{path}.limits"),
                    "Limit must be set for non overcommitable resources",
                );
            }
            None => {}
        }
        huge |= res.starts_with("hugepages-");
        cpu_or_memory |= matches!(res.as_str(), "cpu" | "memory");
    }
    if huge && !cpu_or_memory {
        errs.forbidden(path, "HugePages require cpu or memory");
    }
    claims(errs, r, &format!("{path}.claims"), claim_names);
}

/// One quantity: not negative, and whole where kube counts units.
fn quantity(errs: &mut Errors, res: &str, q: &str, path: &str) {
    let Some(a) = amount(q) else { return };
    if a < 0 {
        errs.invalid(path, &quoted(q), "must be greater than or equal to 0");
    }
    if integer_resource(res) && a % 1000 != 0 {
        errs.invalid(path, &quoted(q), "must be an integer");
    }
}

/// `IsNativeResource`: no domain, or kube's own.
fn native(res: &str) -> bool {
    !res.contains('/') || res.contains("kubernetes.io/")
}

/// `IsOvercommitAllowed`: a native resource that is not huge pages.
fn overcommit_allowed(res: &str) -> bool {
    native(res) && !res.starts_with("hugepages-")
}

/// `IsIntegerResourceName`: `pods`, `services`-like counts, and every
/// extended resource (a domain-prefixed name outside kube's).
fn integer_resource(res: &str) -> bool {
    matches!(
        res,
        "pods"
            | "services"
            | "replicationcontrollers"
            | "resourcequotas"
            | "secrets"
            | "configmaps"
            | "persistentvolumeclaims"
            | "services.nodeports"
            | "services.loadbalancers"
    ) || (!native(res) && !res.starts_with("requests."))
}

/// `resources.claims` name entries of `spec.resourceClaims`, each once.
fn claims(errs: &mut Errors, r: &Value, path: &str, claim_names: &[&str]) {
    let mut seen: Vec<String> = Vec::new();
    for (i, claim) in list(r, "claims").iter().enumerate() {
        let name = text(claim, "name");
        let at = format!("{path}[{i}]");
        if name.is_empty() {
            errs.required(at, "");
            continue;
        }
        let request = text(claim, "request");
        let key = if request.is_empty() {
            name.to_owned()
        } else {
            format!("{name}/{request}")
        };
        if seen.iter().any(|s| s == name) {
            errs.duplicate(at.clone(), &quoted(name));
        } else if seen.contains(&key) {
            errs.duplicate(at.clone(), &quoted(&key));
        } else if request.is_empty() && seen.iter().any(|s| s.split_once('/').is_some_and(|(n, _)| n == name)) {
            errs.duplicate(at.clone(), &quoted(name));
        }
        seen.push(key);
        if !claim_names.contains(&name) {
            let mut known: Vec<&str> = claim_names.to_vec();
            known.sort_unstable();
            let detail = if known.is_empty() {
                "must be one of the names in pod.spec.resourceClaims which is empty".to_owned()
            } else {
                format!(
                    "must be one of the names in pod.spec.resourceClaims: {}",
                    known.join(", ")
                )
            };
            errs.not_found(at, &quoted(name), &detail);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(resources: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": resources}]}})
    }

    fn message(p: &Value) -> String {
        validate(p).err().map(|e| e.message).unwrap_or_default()
    }

    #[test]
    fn extended_resources_need_equal_whole_limits() {
        assert_eq!(
            message(&pod(json!({"requests": {"nvidia.com/gpu": "1"}}))),
            "Pod \"p\" is invalid: spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"
        );
        assert_eq!(
            message(&pod(
                json!({"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "2"}})
            )),
            "Pod \"p\" is invalid: spec.containers[0].resources.requests: Invalid value: \"1\": must be equal to nvidia.com/gpu limit of 2"
        );
        assert!(
            message(&pod(
                json!({"requests": {"nvidia.com/gpu": "2"}, "limits": {"nvidia.com/gpu": "2"}})
            ))
            .is_empty()
        );
        assert!(message(&pod(json!({"limits": {"example.com/fpga": "500m"}}))).contains("must be an integer"));
    }

    #[test]
    fn native_resources_may_overcommit_but_not_exceed() {
        assert!(message(&pod(json!({"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}))).is_empty());
        assert!(message(&pod(json!({"requests": {"cpu": "1500m"}}))).is_empty());
        assert!(
            message(&pod(json!({"requests": {"cpu": "2"}, "limits": {"cpu": "1"}})))
                .ends_with("must be less than or equal to cpu limit of 1")
        );
        assert!(
            message(&pod(json!({"requests": {"hugepages-2Mi": "2Mi", "memory": "1Gi"}})))
                .contains("Limit must be set for non overcommitable resources")
        );
    }

    #[test]
    fn a_quantity_that_does_not_parse_is_a_bad_request() {
        let e = validate(&pod(json!({"requests": {"cpu": "one"}}))).unwrap_err();
        assert_eq!(e.code, 400);
    }

    #[test]
    fn a_scheduling_group_names_a_pod_group() {
        let with = |group: Value| json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}], "schedulingGroup": group}});
        assert!(message(&with(json!({"podGroupName": "train"}))).is_empty());
        assert_eq!(
            message(&with(json!({}))),
            "Pod \"p\" is invalid: spec.schedulingGroup.podGroupName: Invalid value: null: must specify one of: `podGroupName`"
        );
        assert_eq!(
            message(&with(json!({"podGroupName": "Train"}))),
            "Pod \"p\" is invalid: spec.schedulingGroup.podGroupName: Invalid value: \"Train\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        );
    }

    #[test]
    fn container_claims_name_the_pod_claims() {
        let p = json!({"metadata": {"name": "p"}, "spec": {
            "containers": [{"name": "c", "resources": {"claims": [{"name": "h"}]}}],
            "resourceClaims": [{"name": "g", "resourceClaimName": "one"}]}});
        assert!(message(&p).ends_with(
            "spec.containers[0].resources.claims[0]: Not found: \"h\": must be one of the names in pod.spec.resourceClaims: g"
        ));
    }
}
