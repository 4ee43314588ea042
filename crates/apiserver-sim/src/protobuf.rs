//! Request bodies in Kubernetes' protobuf encoding, for the kinds that
//! kubectl's typed clients send that way and only that way (`kubectl create
//! serviceaccount`, `kubectl create token`, `kubectl create clusterrole`,
//! `role`, `clusterrolebinding`, `rolebinding`, `kubectl create
//! priorityclass`): client-go sends protobuf
//! for built-in types and does not fall back to JSON. Everything else the double
//! reads is JSON; another protobuf body is `415`.

use serde_json::{Map, Value, json};

use crate::status::ApiError;

/// `application/vnd.kubernetes.protobuf`.
pub(crate) const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// kube's envelope: `k8s\0`, then a `runtime.Unknown`.
const MAGIC: &[u8] = b"k8s\0";

/// The body as the JSON object it encodes, when it is a kind read here.
pub(crate) fn decode(body: &[u8]) -> Result<Value, ApiError> {
    let unsupported = || {
        let mut e = ApiError::unsupported_media_type(CONTENT_TYPE);
        e.message = format!(
            "the body of the request was in an unknown format - accepted media types include: application/json (got {CONTENT_TYPE:?})"
        );
        e
    };
    let bad = |why: &str| ApiError::bad_request(format!("the protobuf body could not be decoded: {why}"));
    let envelope = body.strip_prefix(MAGIC).ok_or_else(|| bad("no k8s envelope"))?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    for (field, value) in fields(envelope).map_err(bad)? {
        match (field, value) {
            (1, Wire::Bytes(meta)) => {
                for (f, v) in fields(meta).map_err(bad)? {
                    match (f, v) {
                        (1, Wire::Bytes(s)) => api_version = text(s),
                        (2, Wire::Bytes(s)) => kind = text(s),
                        _ => {}
                    }
                }
            }
            (2, Wire::Bytes(r)) => raw = r,
            _ => {}
        }
    }
    let mut obj = match (api_version.as_str(), kind.as_str()) {
        ("authentication.k8s.io/v1", "TokenRequest") => token_request(raw).map_err(bad)?,
        ("v1", "ServiceAccount") => service_account(raw).map_err(bad)?,
        ("rbac.authorization.k8s.io/v1", "ClusterRole" | "Role") => role(raw).map_err(bad)?,
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding" | "RoleBinding") => binding(raw).map_err(bad)?,
        ("scheduling.k8s.io/v1", "PriorityClass") => priority_class(raw).map_err(bad)?,
        _ => return Err(unsupported()),
    };
    obj["apiVersion"] = json!(api_version);
    obj["kind"] = json!(kind);
    Ok(obj)
}

/// One field's value, by wire type.
enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

fn varint(b: &[u8], pos: &mut usize) -> Result<u64, &'static str> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*pos).ok_or("truncated varint")?;
        *pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("varint too long")
}

/// The fields of a message, in order.
fn fields(b: &[u8]) -> Result<Vec<(u64, Wire<'_>)>, &'static str> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < b.len() {
        let key = varint(b, &mut pos)?;
        let value = match key & 7 {
            0 => Wire::Varint(varint(b, &mut pos)?),
            1 => {
                pos += 8;
                Wire::Fixed
            }
            2 => {
                let len = varint(b, &mut pos)? as usize;
                let end = pos
                    .checked_add(len)
                    .filter(|e| *e <= b.len())
                    .ok_or("truncated field")?;
                let v = &b[pos..end];
                pos = end;
                Wire::Bytes(v)
            }
            5 => {
                pos += 4;
                Wire::Fixed
            }
            _ => return Err("unsupported wire type"),
        };
        if pos > b.len() {
            return Err("truncated field");
        }
        out.push((key >> 3, value));
    }
    Ok(out)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `ObjectMeta`: the fields a client sets on create.
fn object_meta(b: &[u8]) -> Result<Value, &'static str> {
    let mut m = Map::new();
    for (f, v) in fields(b)? {
        match (f, v) {
            (1, Wire::Bytes(s)) => drop(m.insert("name".into(), json!(text(s)))),
            (2, Wire::Bytes(s)) => drop(m.insert("generateName".into(), json!(text(s)))),
            (3, Wire::Bytes(s)) => drop(m.insert("namespace".into(), json!(text(s)))),
            (11 | 12, Wire::Bytes(entry)) => {
                let (mut k, mut val) = (String::new(), String::new());
                for (ef, ev) in fields(entry)? {
                    match (ef, ev) {
                        (1, Wire::Bytes(s)) => k = text(s),
                        (2, Wire::Bytes(s)) => val = text(s),
                        _ => {}
                    }
                }
                let key = if f == 11 { "labels" } else { "annotations" };
                m.entry(key).or_insert_with(|| json!({}))[k] = json!(val);
            }
            _ => {}
        }
    }
    Ok(Value::Object(m))
}

fn token_request(b: &[u8]) -> Result<Value, &'static str> {
    let mut obj = json!({});
    for (f, v) in fields(b)? {
        match (f, v) {
            (1, Wire::Bytes(meta)) => obj["metadata"] = object_meta(meta)?,
            (2, Wire::Bytes(spec_bytes)) => {
                let mut spec = json!({});
                for (sf, sv) in fields(spec_bytes)? {
                    match (sf, sv) {
                        (1, Wire::Bytes(a)) => {
                            if !spec["audiences"].is_array() {
                                spec["audiences"] = json!([]);
                            }
                            spec["audiences"].as_array_mut().expect("array").push(json!(text(a)));
                        }
                        (4, Wire::Varint(n)) => spec["expirationSeconds"] = json!(n as i64),
                        (3, Wire::Bytes(r)) => {
                            let mut bound = json!({});
                            for (rf, rv) in fields(r)? {
                                let key = match rf {
                                    1 => "kind",
                                    2 => "apiVersion",
                                    3 => "name",
                                    4 => "uid",
                                    _ => continue,
                                };
                                if let Wire::Bytes(s) = rv {
                                    bound[key] = json!(text(s));
                                }
                            }
                            spec["boundObjectRef"] = bound;
                        }
                        _ => {}
                    }
                }
                obj["spec"] = spec;
            }
            _ => {}
        }
    }
    Ok(obj)
}

fn service_account(b: &[u8]) -> Result<Value, &'static str> {
    let mut obj = json!({});
    for (f, v) in fields(b)? {
        match (f, v) {
            (1, Wire::Bytes(meta)) => obj["metadata"] = object_meta(meta)?,
            (4, Wire::Varint(n)) => obj["automountServiceAccountToken"] = json!(n != 0),
            // Secrets and image pull secrets are references: refuse rather
            // than drop them silently.
            (2 | 3, _) => return Err("secrets and imagePullSecrets are not read from protobuf"),
            _ => {}
        }
    }
    Ok(obj)
}

/// `scheduling/v1` `PriorityClass` (`kubectl create priorityclass`).
fn priority_class(b: &[u8]) -> Result<Value, &'static str> {
    let mut obj = json!({});
    for (f, v) in fields(b)? {
        match (f, v) {
            (1, Wire::Bytes(meta)) => obj["metadata"] = object_meta(meta)?,
            // An int32 travels as a 64-bit varint, negative ones sign-extended.
            (2, Wire::Varint(n)) => obj["value"] = json!(n as i64 as i32),
            (3, Wire::Varint(n)) => obj["globalDefault"] = json!(n != 0),
            (4, Wire::Bytes(s)) => obj["description"] = json!(text(s)),
            (5, Wire::Bytes(s)) => obj["preemptionPolicy"] = json!(text(s)),
            _ => {}
        }
    }
    Ok(obj)
}

/// The strings of the fields of `b` numbered in `names` (repeated strings
/// become arrays, others strings), as a JSON object.
fn strings(b: &[u8], names: &[(u64, &str, bool)]) -> Result<Value, &'static str> {
    let mut obj = json!({});
    for (f, v) in fields(b)? {
        let (Some((_, name, repeated)), Wire::Bytes(s)) = (names.iter().find(|(n, _, _)| *n == f), v) else {
            continue;
        };
        if *repeated {
            obj.as_object_mut()
                .expect("object")
                .entry(*name)
                .or_insert_with(|| json!([]))
                .as_array_mut()
                .expect("array")
                .push(json!(text(s)));
        } else {
            obj[*name] = json!(text(s));
        }
    }
    Ok(obj)
}

/// `rbac/v1` `ClusterRole` and `Role`: metadata and rules.
fn role(b: &[u8]) -> Result<Value, &'static str> {
    const RULE: &[(u64, &str, bool)] = &[
        (1, "verbs", true),
        (2, "apiGroups", true),
        (3, "resources", true),
        (4, "resourceNames", true),
        (5, "nonResourceURLs", true),
    ];
    let mut obj = json!({});
    for (f, v) in fields(b)? {
        match (f, v) {
            (1, Wire::Bytes(meta)) => obj["metadata"] = object_meta(meta)?,
            (2, Wire::Bytes(rule)) => {
                if !obj["rules"].is_array() {
                    obj["rules"] = json!([]);
                }
                obj["rules"].as_array_mut().expect("array").push(strings(rule, RULE)?);
            }
            // Label selectors are not read: refuse rather than drop them.
            (3, _) => return Err("aggregationRule is not read from protobuf"),
            _ => {}
        }
    }
    Ok(obj)
}

/// `rbac/v1` `ClusterRoleBinding` and `RoleBinding`: metadata, subjects and
/// the role.
fn binding(b: &[u8]) -> Result<Value, &'static str> {
    const SUBJECT: &[(u64, &str, bool)] = &[
        (1, "kind", false),
        (2, "apiGroup", false),
        (3, "name", false),
        (4, "namespace", false),
    ];
    const ROLE_REF: &[(u64, &str, bool)] = &[(1, "apiGroup", false), (2, "kind", false), (3, "name", false)];
    let mut obj = json!({});
    for (f, v) in fields(b)? {
        match (f, v) {
            (1, Wire::Bytes(meta)) => obj["metadata"] = object_meta(meta)?,
            (2, Wire::Bytes(subject)) => {
                if !obj["subjects"].is_array() {
                    obj["subjects"] = json!([]);
                }
                obj["subjects"]
                    .as_array_mut()
                    .expect("array")
                    .push(strings(subject, SUBJECT)?);
            }
            (3, Wire::Bytes(role_ref)) => obj["roleRef"] = strings(role_ref, ROLE_REF)?,
            _ => {}
        }
    }
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(n: u64, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![(n << 3 | 2) as u8, bytes.len() as u8];
        out.extend_from_slice(bytes);
        out
    }

    #[test]
    fn a_token_request_envelope_decodes() {
        let meta = [field(1, b"authentication.k8s.io/v1"), field(2, b"TokenRequest")].concat();
        let spec = [field(1, b"aud"), vec![4 << 3, 0x84, 0x07]].concat();
        let raw = [field(1, &field(3, b"ns")), field(2, &spec)].concat();
        let body = [MAGIC.to_vec(), field(1, &meta), field(2, &raw)].concat();
        assert_eq!(
            decode(&body).unwrap(),
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                   "metadata": {"namespace": "ns"}, "spec": {"audiences": ["aud"], "expirationSeconds": 900}})
        );
        let pod = [MAGIC.to_vec(), field(1, &[field(1, b"v1"), field(2, b"Pod")].concat())].concat();
        assert_eq!(decode(&pod).unwrap_err().code, 415);
    }
}
