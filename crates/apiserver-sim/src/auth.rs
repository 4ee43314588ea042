//! Delegated authentication and authorization, as kube-apiserver answers
//! them for components that check their own callers (kube-scheduler's secure
//! port): `serviceaccounts/token` issues tokens, `tokenreviews` tells who a
//! token belongs to, and `subjectaccessreviews` evaluates RBAC over the
//! stored roles and bindings.
//!
//! The double itself still serves every request unauthenticated: these are
//! answers about other requests.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use serde::Deserialize;
use serde_json::{Map, Value, json};
use wasmsched_core::rng::Rng;

use crate::resources::{CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, ROLE_BINDINGS, ROLES, SERVICE_ACCOUNTS};
use crate::status::ApiError;
use crate::store::{Store, now_ts};

/// The audience of tokens that name none, and of reviews that ask for
/// none: kube-apiserver's `--api-audiences`, by default its
/// `--service-account-issuer` (kubeadm's value).
pub const API_AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";

/// kube's validation bounds of `TokenRequest.spec.expirationSeconds`.
const MIN_EXPIRATION: i64 = 10 * 60;
const MAX_EXPIRATION: i64 = 1 << 32;
/// `TokenRequestSpec`'s default.
const DEFAULT_EXPIRATION: i64 = 3600;

const AUTHENTICATION: &str = "authentication.k8s.io";
const AUTHORIZATION: &str = "authorization.k8s.io";
const RBAC: &str = "rbac.authorization.k8s.io";

/// A static bearer token, as a line of kube-apiserver's `--token-auth-file`
/// (`token,user,uid,"group1,group2"`) declares one. Also the body of
/// `POST /_sim/tokens`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StaticToken {
    /// The bearer token.
    pub token: String,
    /// The user it authenticates as.
    pub user: String,
    /// The user's UID (may be empty).
    pub uid: String,
    /// The user's groups (`system:authenticated` is added, as
    /// kube-apiserver adds it to every authenticated user).
    pub groups: Vec<String>,
}

/// A token issued through `serviceaccounts/token`.
#[derive(Debug, Clone)]
struct Issued {
    namespace: String,
    name: String,
    /// The ServiceAccount's UID when issued: a recreated account does not
    /// inherit its predecessor's tokens.
    uid: String,
    audiences: Vec<String>,
    expires: SystemTime,
    /// The token's ID, shown as the user's `credential-id` extra.
    jti: String,
}

/// The tokens the server knows: issued and static.
pub(crate) struct Tokens {
    issued: HashMap<String, Issued>,
    fixed: HashMap<String, StaticToken>,
    rng: Rng,
}

impl Tokens {
    pub(crate) fn new(seed: u64) -> Self {
        // Tokens are credentials: unlike UIDs they should not repeat from
        // one run (or one server) to the next.
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Self {
            issued: HashMap::new(),
            fixed: HashMap::new(),
            rng: Rng::new(seed ^ nanos ^ 0x746f_6b65_6e73),
        }
    }

    pub(crate) fn add_static(&mut self, token: StaticToken) {
        self.fixed.insert(token.token.clone(), token);
    }

    fn random(&mut self, len: usize) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        (0..len)
            .map(|_| ALPHABET[self.rng.below(ALPHABET.len() as u64) as usize] as char)
            .collect()
    }

    fn jti(&mut self) -> String {
        let (a, b) = (self.rng.next_u64(), self.rng.next_u64());
        crate::store::uuid_v4(a, b)
    }

    /// `POST namespaces/NS/serviceaccounts/NAME/token`: the TokenRequest
    /// answered, with `status.token` and `status.expirationTimestamp`.
    pub(crate) fn issue(&mut self, store: &Store, ns: &str, name: &str, mut req: Value) -> Result<Value, ApiError> {
        if !req.is_object() {
            return Err(ApiError::bad_request(
                "TokenRequest in version \"v1\" cannot be handled as a TokenRequest: expected an object",
            ));
        }
        let invalid = |field: &str, value: &str, why: &str| {
            ApiError::invalid(
                AUTHENTICATION,
                "TokenRequest",
                name,
                field,
                &format!("Invalid value: {value:?}: {why}"),
            )
        };
        let meta_str = |req: &Value, f: &str| {
            req.pointer(&format!("/metadata/{f}"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let body_name = meta_str(&req, "name");
        if !body_name.is_empty() && body_name != name {
            return Err(invalid(
                "metadata.name",
                &body_name,
                "must match the service account name if specified",
            ));
        }
        let body_ns = meta_str(&req, "namespace");
        if !body_ns.is_empty() && body_ns != ns {
            return Err(invalid(
                "metadata.namespace",
                &body_ns,
                "must match the service account namespace if specified",
            ));
        }
        let sa = store.get(SERVICE_ACCOUNTS, ns, name)?;
        let uid = sa.value.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("");
        let spec = req
            .as_object_mut()
            .expect("object")
            .entry("spec")
            .or_insert_with(|| json!({}));
        if !spec.is_object() {
            *spec = json!({});
        }
        let audiences: Vec<String> = spec
            .get("audiences")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .filter(|a: &Vec<String>| !a.is_empty())
            .unwrap_or_else(|| vec![API_AUDIENCE.to_owned()]);
        let seconds = match spec.get("expirationSeconds") {
            None | Some(Value::Null) => DEFAULT_EXPIRATION,
            Some(v) => v.as_i64().ok_or_else(|| {
                ApiError::bad_request(format!(
                    "TokenRequest in version \"v1\" cannot be handled as a TokenRequest: spec.expirationSeconds: expected an integer, got {v}"
                ))
            })?,
        };
        let why = if seconds < MIN_EXPIRATION {
            Some("may not specify a duration less than 10 minutes")
        } else if seconds > MAX_EXPIRATION {
            Some("may not specify a duration larger than 2^32 seconds")
        } else {
            None
        };
        if let Some(why) = why {
            // kube names no object in this one: it validates after defaulting.
            return Err(ApiError::invalid(
                AUTHENTICATION,
                "TokenRequest",
                "",
                "spec.expirationSeconds",
                &format!("Invalid value: {seconds}: {why}"),
            ));
        }
        spec["audiences"] = json!(audiences);
        spec["expirationSeconds"] = json!(seconds);
        if spec.get("boundObjectRef").is_none() {
            spec["boundObjectRef"] = Value::Null;
        }
        let token = self.random(48);
        let jti = self.jti();
        let issued_at = now_ts();
        let expires_at = issued_at + k8s_openapi::jiff::SignedDuration::from_secs(seconds);
        self.issued.insert(
            token.clone(),
            Issued {
                namespace: ns.to_owned(),
                name: name.to_owned(),
                uid: uid.to_owned(),
                audiences,
                expires: SystemTime::now() + Duration::from_secs(seconds as u64),
                jti,
            },
        );
        req["kind"] = json!("TokenRequest");
        req["apiVersion"] = json!("authentication.k8s.io/v1");
        req["metadata"] = json!({
            "name": name,
            "namespace": ns,
            "creationTimestamp": issued_at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        });
        req["status"] = json!({
            "token": token,
            "expirationTimestamp": expires_at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        });
        Ok(req)
    }

    /// `POST tokenreviews`: the TokenReview with its status filled in.
    pub(crate) fn review(&self, store: &Store, mut review: Value) -> Result<Value, ApiError> {
        if !review.is_object() {
            return Err(ApiError::bad_request(
                "TokenReview in version \"v1\" cannot be handled as a TokenReview: expected an object",
            ));
        }
        let token = review.pointer("/spec/token").and_then(Value::as_str).unwrap_or("");
        if token.is_empty() {
            return Err(ApiError::bad_request(
                "token is required for TokenReview in authentication",
            ));
        }
        let wanted: Vec<String> = review
            .pointer("/spec/audiences")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .filter(|a: &Vec<String>| !a.is_empty())
            .unwrap_or_else(|| vec![API_AUDIENCE.to_owned()]);
        let status = match self.authenticate(store, token, &wanted, SystemTime::now()) {
            Ok((user, audiences)) => json!({"authenticated": true, "user": user, "audiences": audiences}),
            Err(error) => json!({"user": {}, "error": error}),
        };
        echo(&mut review, "TokenReview", "authentication.k8s.io/v1");
        review["status"] = status;
        Ok(review)
    }

    /// Who `token` is (kube's `UserInfo`) and the audiences it was accepted
    /// for, or the authenticator's error.
    fn authenticate(
        &self,
        store: &Store,
        token: &str,
        wanted: &[String],
        now: SystemTime,
    ) -> Result<(Value, Vec<String>), String> {
        const INVALID: &str = "invalid bearer token";
        if let Some(t) = self.fixed.get(token) {
            // Static tokens are audience-agnostic: valid for the API's own.
            if !wanted.iter().any(|a| a == API_AUDIENCE) {
                return Err(INVALID.into());
            }
            let mut groups = t.groups.clone();
            if !groups.iter().any(|g| g == "system:authenticated") {
                groups.push("system:authenticated".into());
            }
            let mut user = json!({"username": t.user, "groups": groups});
            if !t.uid.is_empty() {
                user["uid"] = json!(t.uid);
            }
            return Ok((user, wanted.to_vec()));
        }
        let Some(t) = self.issued.get(token) else {
            return Err(INVALID.into());
        };
        let fail = |why: &str| format!("[{INVALID}, {why}]");
        if now >= t.expires {
            return Err(fail("service account token has expired"));
        }
        let accepted: Vec<String> = t.audiences.iter().filter(|a| wanted.contains(a)).cloned().collect();
        if accepted.is_empty() {
            return Err(fail(&format!(
                "token audiences {} is invalid for the target audiences {}",
                go_strings(&t.audiences),
                go_strings(wanted)
            )));
        }
        let current = store.get(SERVICE_ACCOUNTS, &t.namespace, &t.name).ok().and_then(|sa| {
            sa.value
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        if current.as_deref() != Some(t.uid.as_str()) {
            return Err(fail("service account token has been invalidated"));
        }
        let user = json!({
            "username": format!("system:serviceaccount:{}:{}", t.namespace, t.name),
            "uid": t.uid,
            "groups": ["system:serviceaccounts", format!("system:serviceaccounts:{}", t.namespace), "system:authenticated"],
            "extra": {"authentication.kubernetes.io/credential-id": [format!("JTI={}", t.jti)]},
        });
        Ok((user, accepted))
    }
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
fn go_strings(v: &[String]) -> String {
    format!("[{}]", v.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(" "))
}

/// A review answered as kube-apiserver returns it: the request as decoded
/// (`metadata.creationTimestamp: null` when unset), its `kind` and version.
fn echo(review: &mut Value, kind: &str, api_version: &str) {
    review["kind"] = json!(kind);
    review["apiVersion"] = json!(api_version);
    let meta = review
        .as_object_mut()
        .expect("object")
        .entry("metadata")
        .or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    meta.as_object_mut()
        .expect("object")
        .entry("creationTimestamp")
        .or_insert(Value::Null);
}

/// What a SubjectAccessReview asks about.
enum Attributes<'a> {
    NonResource {
        path: &'a str,
        verb: &'a str,
    },
    Resource {
        namespace: &'a str,
        verb: &'a str,
        group: &'a str,
        resource: &'a str,
        subresource: &'a str,
        name: &'a str,
    },
}

/// `POST subjectaccessreviews`: the SubjectAccessReview with its status.
pub(crate) fn access_review(store: &Store, mut review: Value) -> Result<Value, ApiError> {
    if !review.is_object() {
        return Err(ApiError::bad_request(
            "SubjectAccessReview in version \"v1\" cannot be handled as a SubjectAccessReview: expected an object",
        ));
    }
    let spec = review.get("spec").cloned().unwrap_or_else(|| json!({}));
    let str_at = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("").to_owned();
    let user = str_at(&spec, "/user");
    let groups: Vec<String> = spec
        .get("groups")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    let non_resource = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    let resource = spec.get("resourceAttributes").filter(|v| !v.is_null());
    // kube's ValidateSubjectAccessReviewSpec, in its order; bad values
    // are shown as JSON of the internal (untagged) Go types.
    let mut errors: Vec<(&str, String)> = Vec::new();
    if let (Some(n), Some(_)) = (non_resource, resource) {
        let shown = json!({"Path": str_at(n, "/path"), "Verb": str_at(n, "/verb")});
        errors.push((
            "spec.nonResourceAttributes",
            format!("Invalid value: {shown}: cannot be specified in combination with resourceAttributes"),
        ));
    }
    if non_resource.is_none() && resource.is_none() {
        errors.push((
            "spec.resourceAttributes",
            "Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified".into(),
        ));
    }
    if user.is_empty() && groups.is_empty() {
        errors.push((
            "spec.user",
            "Invalid value: \"\": at least one of user or group must be specified".into(),
        ));
    }
    if !errors.is_empty() {
        let errors: Vec<(&str, &str)> = errors.iter().map(|(f, w)| (*f, w.as_str())).collect();
        return Err(ApiError::invalid_fields(
            AUTHORIZATION,
            "SubjectAccessReview",
            "",
            &errors,
        ));
    }
    let (ra, na);
    let attrs = match (resource, non_resource) {
        (Some(r), _) => {
            ra = ["/namespace", "/verb", "/group", "/resource", "/subresource", "/name"].map(|p| str_at(r, p));
            Attributes::Resource {
                namespace: &ra[0],
                verb: &ra[1],
                group: &ra[2],
                resource: &ra[3],
                subresource: &ra[4],
                name: &ra[5],
            }
        }
        (None, Some(n)) => {
            na = [str_at(n, "/path"), str_at(n, "/verb")];
            Attributes::NonResource {
                path: &na[0],
                verb: &na[1],
            }
        }
        (None, None) => unreachable!("validated above"),
    };
    let (allowed, reason) = authorize(store, &user, &groups, &attrs);
    echo(&mut review, "SubjectAccessReview", "authorization.k8s.io/v1");
    let mut status = Map::new();
    status.insert("allowed".into(), json!(allowed));
    if !reason.is_empty() {
        status.insert("reason".into(), json!(reason));
    }
    review["status"] = Value::Object(status);
    Ok(review)
}

/// kube-apiserver's authorizer chain for a user that is not a node: the
/// `system:masters` group is allowed everything, then RBAC. The reason is
/// RBAC's: which binding allowed, or the errors met on the way (a binding
/// to a missing role) when nothing did.
fn authorize(store: &Store, user: &str, groups: &[String], attrs: &Attributes<'_>) -> (bool, String) {
    if groups.iter().any(|g| g == "system:masters") {
        return (true, String::new());
    }
    let mut errors: Vec<String> = Vec::new();
    let bindings = store.all(CLUSTER_ROLE_BINDINGS).map(|b| ("", b));
    let namespace = match attrs {
        Attributes::Resource { namespace, .. } => *namespace,
        Attributes::NonResource { .. } => "",
    };
    let local = store
        .all(ROLE_BINDINGS)
        .filter(|b| {
            !namespace.is_empty() && b.value.pointer("/metadata/namespace").and_then(Value::as_str) == Some(namespace)
        })
        .map(|b| (namespace, b));
    for (binding_ns, b) in bindings.chain(local) {
        let b = &*b.value;
        let Some(subject) = b
            .get("subjects")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|s| applies(s, user, groups, binding_ns))
        else {
            continue;
        };
        let role_kind = b.pointer("/roleRef/kind").and_then(Value::as_str).unwrap_or("");
        let role_name = b.pointer("/roleRef/name").and_then(Value::as_str).unwrap_or("");
        let role = match role_kind {
            "ClusterRole" => store.get(CLUSTER_ROLES, "", role_name).map_err(|_| "clusterrole"),
            "Role" => store.get(ROLES, binding_ns, role_name).map_err(|_| "role"),
            _ => {
                errors.push(format!("unsupported role reference kind: {role_kind:?}"));
                continue;
            }
        };
        let role = match role {
            Ok(r) => r,
            Err(resource) => {
                errors.push(format!("{resource}.{RBAC} {role_name:?} not found"));
                continue;
            }
        };
        let rules = role.value.get("rules").and_then(Value::as_array);
        if rules.into_iter().flatten().any(|r| rule_allows(r, attrs)) {
            let name = b.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
            let source = if binding_ns.is_empty() {
                format!("ClusterRoleBinding {name:?}")
            } else {
                format!("RoleBinding \"{name}/{binding_ns}\"")
            };
            return (
                true,
                format!(
                    "RBAC: allowed by {source} of {role_kind} {role_name:?} to {}",
                    describe(subject, binding_ns)
                ),
            );
        }
    }
    let mut seen: Vec<&str> = Vec::new();
    for e in &errors {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    let reason = match seen.as_slice() {
        [] => String::new(),
        [one] => format!("RBAC: {one}"),
        many => format!("RBAC: [{}]", many.join(", ")),
    };
    (false, reason)
}

/// Whether a binding's subject is the user (RBAC's `appliesToUser`); a
/// ServiceAccount without a namespace is the binding's namespace's.
fn applies(subject: &Value, user: &str, groups: &[String], binding_ns: &str) -> bool {
    let s = |f: &str| subject.get(f).and_then(Value::as_str).unwrap_or("");
    match s("kind") {
        "User" => s("name") == user,
        "Group" => groups.iter().any(|g| g == s("name")),
        "ServiceAccount" => {
            let ns = if s("namespace").is_empty() {
                binding_ns
            } else {
                s("namespace")
            };
            !ns.is_empty() && user == format!("system:serviceaccount:{ns}:{}", s("name"))
        }
        _ => false,
    }
}

/// `User "alice"`, `ServiceAccount "name/namespace"`, as RBAC's reasons say.
fn describe(subject: &Value, binding_ns: &str) -> String {
    let s = |f: &str| subject.get(f).and_then(Value::as_str).unwrap_or("");
    match s("kind") {
        "ServiceAccount" => {
            let ns = if s("namespace").is_empty() {
                binding_ns
            } else {
                s("namespace")
            };
            format!("ServiceAccount \"{}/{ns}\"", s("name"))
        }
        kind => format!("{kind} {:?}", s("name")),
    }
}

/// RBAC's `RuleAllows`.
fn rule_allows(rule: &Value, attrs: &Attributes<'_>) -> bool {
    let list = |f: &str| -> Vec<&str> {
        rule.get(f)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    };
    let has = |f: &str, want: &str| list(f).iter().any(|v| *v == "*" || *v == want);
    match attrs {
        Attributes::NonResource { path, verb } => {
            has("verbs", verb)
                && list("nonResourceURLs").iter().any(|u| {
                    *u == "*" || u == path || u.strip_suffix('*').is_some_and(|prefix| path.starts_with(prefix))
                })
        }
        Attributes::Resource {
            verb,
            group,
            resource,
            subresource,
            name,
            ..
        } => {
            let combined = if subresource.is_empty() {
                (*resource).to_owned()
            } else {
                format!("{resource}/{subresource}")
            };
            let resource_ok = list("resources").iter().any(|r| {
                *r == "*" || *r == combined || (!subresource.is_empty() && r.strip_prefix("*/") == Some(*subresource))
            });
            let names = list("resourceNames");
            has("verbs", verb) && has("apiGroups", group) && resource_ok && (names.is_empty() || names.contains(name))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_with(objects: &[Value]) -> Store {
        let mut store = Store::new(100, 1);
        for o in objects {
            let res =
                crate::resources::find_kind(o["apiVersion"].as_str().unwrap(), o["kind"].as_str().unwrap()).unwrap();
            let ns = o.pointer("/metadata/namespace").and_then(Value::as_str);
            store.create(res, ns, o.clone()).unwrap();
        }
        store
    }

    #[test]
    fn issued_tokens_expire_and_follow_their_account() {
        let mut store = store_with(&[
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa", "namespace": "ns"}}),
        ]);
        let mut tokens = Tokens::new(1);
        let answer = tokens.issue(&store, "ns", "sa", json!({"spec": {}})).unwrap();
        let token = answer["status"]["token"].as_str().unwrap();
        let api = [API_AUDIENCE.to_owned()];
        let now = SystemTime::now();
        let (user, auds) = tokens.authenticate(&store, token, &api, now).unwrap();
        assert_eq!(user["username"], "system:serviceaccount:ns:sa");
        assert_eq!(auds, api);
        let later = now + Duration::from_secs(3601);
        assert_eq!(
            tokens.authenticate(&store, token, &api, later).unwrap_err(),
            "[invalid bearer token, service account token has expired]"
        );
        assert!(
            tokens
                .authenticate(&store, token, &["other".to_owned()], now)
                .unwrap_err()
                .contains("token audiences [\"https://kubernetes.default.svc.cluster.local\"] is invalid for the target audiences [\"other\"]")
        );
        store.delete(SERVICE_ACCOUNTS, "ns", "sa", None).unwrap();
        store
            .create(SERVICE_ACCOUNTS, Some("ns"), json!({"metadata": {"name": "sa"}}))
            .unwrap();
        assert_eq!(
            tokens.authenticate(&store, token, &api, now).unwrap_err(),
            "[invalid bearer token, service account token has been invalidated]"
        );
    }

    #[test]
    fn rules_match_as_rbac_matches_them() {
        let rule = json!({"apiGroups": [""], "resources": ["pods/status", "*/scale"], "verbs": ["get"], "resourceNames": ["a"]});
        let r = |resource, subresource, name, verb| Attributes::Resource {
            namespace: "x",
            verb,
            group: "",
            resource,
            subresource,
            name,
        };
        assert!(rule_allows(&rule, &r("pods", "status", "a", "get")));
        assert!(rule_allows(&rule, &r("deployments", "scale", "a", "get")));
        assert!(!rule_allows(&rule, &r("pods", "", "a", "get")));
        assert!(!rule_allows(&rule, &r("pods", "status", "b", "get")));
        assert!(!rule_allows(&rule, &r("pods", "status", "a", "list")));
        let urls = json!({"nonResourceURLs": ["/metrics", "/debug/*"], "verbs": ["get"]});
        let n = |path, verb| Attributes::NonResource { path, verb };
        assert!(rule_allows(&urls, &n("/metrics", "get")));
        assert!(rule_allows(&urls, &n("/debug/pprof/heap", "get")));
        assert!(!rule_allows(&urls, &n("/metrics/extra", "get")));
        assert!(!rule_allows(&urls, &n("/metrics", "post")));
    }

    #[test]
    fn a_binding_to_a_missing_role_is_the_reason_of_a_denial() {
        let store = store_with(&[json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "b"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "gone"},
            "subjects": [{"kind": "User", "name": "alice"}],
        })]);
        let attrs = Attributes::NonResource {
            path: "/metrics",
            verb: "get",
        };
        assert_eq!(
            authorize(&store, "alice", &[], &attrs),
            (
                false,
                "RBAC: clusterrole.rbac.authorization.k8s.io \"gone\" not found".to_owned()
            )
        );
        assert_eq!(
            authorize(&store, "bob", &["system:masters".into()], &attrs),
            (true, String::new())
        );
    }
}
