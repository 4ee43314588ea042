//! OpenAPI v3 as kube-apiserver publishes it: `/openapi/v3` lists one
//! document per served group-version with a `serverRelativeURL` carrying the
//! document's hash, `/openapi/v3/<group-version>` serves it (what `kubectl
//! explain`, `create`/`apply` validation and `apply`'s patch computation
//! read), and the same schemas tell which fields exist for the
//! `fieldValidation` of writes.
//!
//! The component schemas are stored in `openapi/` (see its README): the
//! real ones, from k8s-openapi's types and the Go types' patch markers. The
//! paths are built here from [`RESOURCES`], so the document describes exactly
//! the routes and query parameters the double serves.

use std::collections::HashMap;
use std::io::Read;
use std::sync::OnceLock;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha512};

use crate::resources::{RESOURCES, ResourceDef};
use crate::status::ApiError;

/// The stored schemas, gzip-compressed, per group-version.
const STORED: &[(&str, &str, &[u8])] = &[
    ("", "v1", include_bytes!("../openapi/api__v1_schemas.json.gz")),
    (
        "apps",
        "v1",
        include_bytes!("../openapi/apis__apps__v1_schemas.json.gz"),
    ),
    (
        "policy",
        "v1",
        include_bytes!("../openapi/apis__policy__v1_schemas.json.gz"),
    ),
    (
        "storage.k8s.io",
        "v1",
        include_bytes!("../openapi/apis__storage.k8s.io__v1_schemas.json.gz"),
    ),
    (
        "coordination.k8s.io",
        "v1",
        include_bytes!("../openapi/apis__coordination.k8s.io__v1_schemas.json.gz"),
    ),
    (
        "events.k8s.io",
        "v1",
        include_bytes!("../openapi/apis__events.k8s.io__v1_schemas.json.gz"),
    ),
    (
        "authentication.k8s.io",
        "v1",
        include_bytes!("../openapi/apis__authentication.k8s.io__v1_schemas.json.gz"),
    ),
    (
        "authorization.k8s.io",
        "v1",
        include_bytes!("../openapi/apis__authorization.k8s.io__v1_schemas.json.gz"),
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        include_bytes!("../openapi/apis__rbac.authorization.k8s.io__v1_schemas.json.gz"),
    ),
    (
        "scheduling.k8s.io",
        "v1",
        include_bytes!("../openapi/apis__scheduling.k8s.io__v1_schemas.json.gz"),
    ),
    (
        "scheduling.k8s.io",
        "v1alpha2",
        include_bytes!("../openapi/apis__scheduling.k8s.io__v1alpha2_schemas.json.gz"),
    ),
    (
        "resource.k8s.io",
        "v1",
        include_bytes!("../openapi/apis__resource.k8s.io__v1_schemas.json.gz"),
    ),
];

/// One group-version's document.
struct Doc {
    group: &'static str,
    version: &'static str,
    /// The document, served as is.
    json: Bytes,
    /// Upper-case hex SHA-512 of `json`: kube-openapi's ETag and `?hash=`.
    hash: String,
    /// `components.schemas`, for field validation.
    schemas: Map<String, Value>,
    /// Kind to schema name, from `x-kubernetes-group-version-kind`.
    kinds: HashMap<String, String>,
}

impl Doc {
    /// `api/v1`, `apis/apps/v1`: the key in `/openapi/v3`.
    fn key(&self) -> String {
        if self.group.is_empty() {
            format!("api/{}", self.version)
        } else {
            format!("apis/{}/{}", self.group, self.version)
        }
    }
}

struct Docs {
    docs: Vec<Doc>,
    discovery: Bytes,
    discovery_hash: String,
}

fn hash(bytes: &[u8]) -> String {
    Sha512::digest(bytes).iter().map(|b| format!("{b:02X}")).collect()
}

/// Decompressed and assembled once, on first use: a few MB that most runs of
/// the double never need.
fn docs() -> &'static Docs {
    static DOCS: OnceLock<Docs> = OnceLock::new();
    DOCS.get_or_init(|| {
        let docs: Vec<Doc> = STORED.iter().map(|(g, v, gz)| build(g, v, gz)).collect();
        let paths: Map<String, Value> = docs
            .iter()
            .map(|d| {
                let url = format!("/openapi/v3/{}?hash={}", d.key(), d.hash);
                (d.key(), json!({"serverRelativeURL": url}))
            })
            .collect();
        let discovery = Bytes::from(serde_json::to_vec(&json!({"paths": paths})).expect("serializes"));
        Docs {
            discovery_hash: hash(&discovery),
            discovery,
            docs,
        }
    })
}

fn build(group: &'static str, version: &'static str, gz: &[u8]) -> Doc {
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut text)
        .expect("the stored schemas decompress");
    let mut stored: Value = serde_json::from_slice(&text).expect("the stored schemas are JSON");
    let schemas = match stored.pointer_mut("/components/schemas").map(Value::take) {
        Some(Value::Object(m)) => m,
        _ => panic!("the stored schemas have components.schemas"),
    };
    let mut kinds = HashMap::new();
    let mut foreign = Vec::new();
    for (name, s) in &schemas {
        for gvk in s["x-kubernetes-group-version-kind"].as_array().into_iter().flatten() {
            let kind = gvk["kind"].as_str().unwrap_or("").to_owned();
            if gvk["group"] == group && gvk["version"] == version {
                kinds.insert(kind, name.clone());
            } else {
                foreign.push((kind, name.clone()));
            }
        }
    }
    // Another group's kind that a subresource takes (TokenRequest in
    // core/v1), unless the document has a kind of that name of its own.
    for (kind, name) in foreign {
        kinds.entry(kind).or_insert(name);
    }
    let doc = json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.36.0"},
        "paths": paths(group, version, &kinds),
        "components": {"schemas": schemas},
    });
    let json = Bytes::from(serde_json::to_vec(&doc).expect("serializes"));
    let Value::Object(mut doc) = doc else { unreachable!() };
    let schemas = match doc.remove("components") {
        Some(Value::Object(mut c)) => match c.remove("schemas") {
            Some(Value::Object(s)) => s,
            _ => Map::new(),
        },
        _ => Map::new(),
    };
    Doc {
        group,
        version,
        hash: hash(&json),
        json,
        schemas,
        kinds,
    }
}

/// `GET /openapi/v3` and `GET /openapi/v3/<group-version>`, as kube-openapi's
/// handler answers them: ETags, `If-None-Match`, a `301` to the current hash
/// when `?hash=` is stale, and immutable caching when it is current.
pub(crate) fn serve(rest: &str, query_hash: Option<&str>, headers: &HeaderMap) -> Response {
    let all = docs();
    let rest = rest.trim_matches('/');
    if rest.is_empty() {
        return content(&all.discovery, &all.discovery_hash, headers);
    }
    let Some(doc) = all.docs.iter().find(|d| d.key() == rest) else {
        return ApiError::no_route(&format!("/openapi/v3/{rest}")).into_response();
    };
    // Only JSON: the protobuf form kube-openapi also offers is not served.
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("*/*");
    let json_ok = accept.split(',').any(|c| {
        let t = c.split(';').next().unwrap_or("").trim();
        matches!(t, "" | "*/*" | "application/*" | "application/json")
    });
    if !json_ok {
        return StatusCode::NOT_ACCEPTABLE.into_response();
    }
    let mut r = match query_hash {
        Some(h) if !h.is_empty() && h != doc.hash => {
            let mut r = StatusCode::MOVED_PERMANENTLY.into_response();
            let to = format!("/openapi/v3/{}?hash={}", doc.key(), doc.hash);
            r.headers_mut()
                .insert(header::LOCATION, HeaderValue::from_str(&to).expect("ASCII"));
            return r;
        }
        Some(h) if !h.is_empty() => {
            let mut r = content(&doc.json, &doc.hash, headers);
            let expires = crate::store::now_ts() + k8s_openapi::jiff::SignedDuration::from_hours(365 * 24);
            let expires = expires.strftime("%a, %d %b %Y %H:%M:%S GMT").to_string();
            let h = r.headers_mut();
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, immutable"));
            h.insert(header::EXPIRES, HeaderValue::from_str(&expires).expect("ASCII"));
            r
        }
        _ => content(&doc.json, &doc.hash, headers),
    };
    r.headers_mut().insert(header::VARY, HeaderValue::from_static("Accept"));
    r
}

fn content(body: &Bytes, hash: &str, headers: &HeaderMap) -> Response {
    let etag = format!("\"{hash}\"");
    let unchanged = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut r = if unchanged {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        Response::new(Body::from(body.clone()))
    };
    let h = r.headers_mut();
    h.insert(header::ETAG, HeaderValue::from_str(&etag).expect("ASCII"));
    if !unchanged {
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    }
    r
}

/// The paths of a group-version, with kube-apiserver's operation ids,
/// `x-kubernetes-action` and `x-kubernetes-group-version-kind`. Only the query
/// parameters the double honours are listed: clients that check for a
/// parameter (kubectl does for `fieldValidation` and `dryRun`) then know what
/// to expect.
fn paths(group: &str, version: &str, kinds: &HashMap<String, String>) -> Map<String, Value> {
    let prefix = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    };
    let word = group.split('.').next().filter(|w| !w.is_empty()).unwrap_or("core");
    let gv_id = format!("{}{}", capitalize(word), capitalize(version));
    let tag = format!("{word}_{version}");
    let schema = |kind: &str| {
        let name = kinds.get(kind).cloned().unwrap_or_default();
        json!({"application/json": {"schema": {"$ref": format!("#/components/schemas/{name}")}}})
    };
    let status = json!({"application/json": {"schema": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Status"}}});
    let mut out = Map::new();
    for def in RESOURCES.iter().filter(|r| r.group == group && r.version == version) {
        let gvk = json!({"group": group, "kind": def.kind, "version": version});
        let op = |action: &str, verb: &str, scope: &str, sub: &str, what: String, params: Vec<Value>| {
            json!({
                "description": what,
                "operationId": format!("{verb}{gv_id}{scope}{}{}", def.kind, capitalize(sub)),
                "parameters": params,
                "responses": {"401": {"description": "Unauthorized"}},
                "tags": [tag],
                "x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": gvk,
            })
        };
        let namespaced = if def.namespaced { "Namespaced" } else { "" };
        let collection = if def.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}", def.plural)
        } else {
            format!("{prefix}/{}", def.plural)
        };
        let mut scope_params = Vec::new();
        if def.namespaced {
            scope_params.push(path_param(
                "namespace",
                "object name and auth scope, such as for teams and projects",
            ));
        }
        let named = |params: &[Value]| {
            let mut p = params.to_vec();
            p.insert(0, path_param("name", &format!("name of the {}", def.kind)));
            p
        };
        let mut coll = Map::new();
        coll.insert("parameters".into(), json!(scope_params));
        let mut create = op(
            "post",
            "create",
            namespaced,
            "",
            format!("create {}", article(def.kind)),
            write_params(),
        );
        create["requestBody"] = json!({"content": schema(def.kind), "required": true});
        if !def.stored {
            // A binding answers a Status, a review the review.
            let answer = if def.kind == "Binding" {
                status.clone()
            } else {
                schema(def.kind)
            };
            create["responses"]["201"] = json!({"description": "Created", "content": answer});
            coll.insert("post".into(), create);
            out.insert(collection, Value::Object(coll));
            continue;
        }
        create["responses"]["201"] = json!({"description": "Created", "content": schema(def.kind)});
        coll.insert("post".into(), create);
        let mut list = op(
            "list",
            "list",
            namespaced,
            "",
            format!("list or watch objects of kind {}", def.kind),
            list_params(),
        );
        list["responses"]["200"] = json!({"description": "OK", "content": schema(&format!("{}List", def.kind))});
        coll.insert("get".into(), list);
        out.insert(collection.clone(), Value::Object(coll));
        if def.namespaced {
            let mut all = op(
                "list",
                "list",
                "",
                "",
                format!("list or watch objects of kind {}", def.kind),
                list_params(),
            );
            all["operationId"] = json!(format!("list{gv_id}{}ForAllNamespaces", def.kind));
            all["responses"]["200"] = json!({"description": "OK", "content": schema(&format!("{}List", def.kind))});
            out.insert(format!("{prefix}/{}", def.plural), json!({"get": all}));
        }
        let item = format!("{collection}/{{name}}");
        let mut one = Map::new();
        one.insert("parameters".into(), json!(named(&scope_params)));
        for sub in std::iter::once("").chain(def.subresources.iter().copied()) {
            let (path, what) = match sub {
                "" => (item.clone(), format!("the specified {}", def.kind)),
                s => (format!("{item}/{s}"), format!("{s} of the specified {}", def.kind)),
            };
            if sub == "binding" || sub == "token" {
                // Create-only: a Binding answered with a Status, a
                // TokenRequest (authentication.k8s.io) with itself.
                let body_kind = if sub == "binding" { "Binding" } else { "TokenRequest" };
                let mut post = op(
                    "post",
                    "create",
                    namespaced,
                    sub,
                    format!("create {sub} of {}", article(def.kind)),
                    write_params(),
                );
                post["requestBody"] = json!({"content": schema(body_kind), "required": true});
                let answer = if sub == "binding" {
                    status.clone()
                } else {
                    schema(body_kind)
                };
                post["responses"]["201"] = json!({"description": "Created", "content": answer});
                post["x-kubernetes-group-version-kind"]["kind"] = json!(body_kind);
                if sub == "token" {
                    post["x-kubernetes-group-version-kind"]["group"] = json!("authentication.k8s.io");
                }
                out.insert(path, json!({"parameters": named(&scope_params), "post": post}));
                continue;
            }
            let mut ops = if sub.is_empty() {
                std::mem::take(&mut one)
            } else {
                let mut m = Map::new();
                m.insert("parameters".into(), json!(named(&scope_params)));
                m
            };
            let mut read = op("get", "read", namespaced, sub, format!("read {what}"), vec![]);
            read["responses"]["200"] = json!({"description": "OK", "content": schema(def.kind)});
            let mut replace = op(
                "put",
                "replace",
                namespaced,
                sub,
                format!("replace {what}"),
                write_params(),
            );
            replace["requestBody"] = json!({"content": schema(def.kind), "required": true});
            replace["responses"]["200"] = json!({"description": "OK", "content": schema(def.kind)});
            let mut patch = op(
                "patch",
                "patch",
                namespaced,
                sub,
                format!("partially update {what}"),
                write_params(),
            );
            let patch_body =
                json!({"schema": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}});
            patch["requestBody"] = json!({"content": {
                "application/json-patch+json": patch_body,
                "application/merge-patch+json": patch_body,
                "application/strategic-merge-patch+json": patch_body,
            }, "required": true});
            patch["responses"]["200"] = json!({"description": "OK", "content": schema(def.kind)});
            ops.insert("get".into(), read);
            ops.insert("put".into(), replace);
            ops.insert("patch".into(), patch);
            if sub.is_empty() {
                let mut delete = op(
                    "delete",
                    "delete",
                    namespaced,
                    "",
                    format!("delete {}", article(def.kind)),
                    vec![],
                );
                delete["requestBody"] = json!({"content": {"application/json": {"schema": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"}}}});
                delete["responses"]["200"] = json!({"description": "OK", "content": schema(def.kind)});
                ops.insert("delete".into(), delete);
            }
            out.insert(path, Value::Object(ops));
        }
    }
    out
}

fn path_param(name: &str, description: &str) -> Value {
    json!({"description": description, "in": "path", "name": name, "required": true, "schema": {"type": "string", "uniqueItems": true}})
}

fn query_param(name: &str, ty: &str, description: &str) -> Value {
    json!({"description": description, "in": "query", "name": name, "schema": {"type": ty, "uniqueItems": true}})
}

fn write_params() -> Vec<Value> {
    vec![query_param(
        "fieldValidation",
        "string",
        "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.",
    )]
}

fn list_params() -> Vec<Value> {
    vec![
        query_param(
            "allowWatchBookmarks",
            "boolean",
            "allowWatchBookmarks requests watch events with type \"BOOKMARK\".",
        ),
        query_param(
            "continue",
            "string",
            "The continue option should be set when retrieving more results from the server.",
        ),
        query_param(
            "fieldSelector",
            "string",
            "A selector to restrict the list of returned objects by their fields. Defaults to everything.",
        ),
        query_param(
            "labelSelector",
            "string",
            "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
        ),
        query_param(
            "limit",
            "integer",
            "limit is a maximum number of responses to return for a list call.",
        ),
        query_param(
            "resourceVersion",
            "string",
            "resourceVersion sets a constraint on what resource versions a request may be served from.",
        ),
        query_param(
            "resourceVersionMatch",
            "string",
            "resourceVersionMatch determines how resourceVersion is applied to list calls.",
        ),
        query_param(
            "sendInitialEvents",
            "boolean",
            "`sendInitialEvents=true` may be set together with `watch=true`: the stream begins with synthetic events for the current state.",
        ),
        query_param("timeoutSeconds", "integer", "Timeout for the list/watch call."),
        query_param(
            "watch",
            "boolean",
            "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.",
        ),
    ]
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn article(kind: &str) -> String {
    format!(
        "{} {kind}",
        if kind.starts_with(['A', 'E', 'I', 'O', 'U']) {
            "an"
        } else {
            "a"
        }
    )
}

/// The `fieldValidation` of a write (kube-apiserver's default is `Warn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

impl FieldValidation {
    /// From the query parameter; `options` names the request's options kind
    /// (`CreateOptions`, `UpdateOptions`, `PatchOptions`) for the error.
    pub(crate) fn parse(value: Option<&str>, options: &str) -> Result<Self, ApiError> {
        match value.unwrap_or("") {
            "" | "Warn" => Ok(Self::Warn),
            "Ignore" => Ok(Self::Ignore),
            "Strict" => Ok(Self::Strict),
            other => {
                let why = format!(
                    "Unsupported value: {}: supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"",
                    go_quote(other)
                );
                let mut e = ApiError::invalid("meta.k8s.io", options, "", "fieldValidation", &why);
                e.message = format!("{options}.meta.k8s.io \"\" is invalid: fieldValidation: {why}");
                Err(e)
            }
        }
    }
}

/// The fields of `obj` that the schema of `def`'s kind does not have, as
/// kube's strict decoding names them (`spec.containers[0].imagePullPolice`).
pub(crate) fn unknown_fields(def: &ResourceDef, kind: &str, obj: &Value) -> Vec<String> {
    let Some(doc) = docs()
        .docs
        .iter()
        .find(|d| d.group == def.group && d.version == def.version)
    else {
        return Vec::new();
    };
    let Some(schema) = doc.kinds.get(kind).and_then(|n| doc.schemas.get(n)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    walk(&doc.schemas, schema, obj, &mut String::new(), &mut out);
    out
}

/// Follows `$ref` and `allOf: [{$ref}]` to the schema that has the shape.
fn resolve<'a>(schemas: &'a Map<String, Value>, mut s: &'a Value) -> &'a Value {
    for _ in 0..32 {
        let r = s
            .get("$ref")
            .or_else(|| s.pointer("/allOf/0/$ref"))
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/components/schemas/"));
        match r.and_then(|r| schemas.get(r)) {
            Some(next) => s = next,
            None => break,
        }
    }
    s
}

fn walk(schemas: &Map<String, Value>, schema: &Value, v: &Value, path: &mut String, out: &mut Vec<String>) {
    let s = resolve(schemas, schema);
    match v {
        Value::Object(m) => {
            if s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
                return;
            }
            let props = s.get("properties").and_then(Value::as_object);
            let extra = s.get("additionalProperties").filter(|a| a.is_object());
            // An object schema with neither (FieldsV1, RawExtension) takes anything.
            if props.is_none() && extra.is_none() {
                return;
            }
            for (k, child) in m {
                let len = path.len();
                match props.and_then(|p| p.get(k)).or(extra) {
                    Some(cs) => {
                        if !path.is_empty() {
                            path.push('.');
                        }
                        path.push_str(k);
                        walk(schemas, cs, child, path, out);
                    }
                    None if path.is_empty() => out.push(format!("unknown field \"{k}\"")),
                    None => out.push(format!("unknown field \"{path}.{k}\"")),
                }
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            let Some(is) = s.get("items") else { return };
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk(schemas, is, item, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// `strict decoding error: unknown field "a", unknown field "b"`.
pub(crate) fn strict_error(errors: &[String]) -> String {
    format!("strict decoding error: {}", errors.join(", "))
}

/// A value as Go's `%+v` prints what `encoding/json` decodes into
/// `map[string]interface{}` (how kube-apiserver shows a refused patch).
pub(crate) fn go_format(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(a) => format!("[{}]", a.iter().map(go_format).collect::<Vec<_>>().join(" ")),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let items: Vec<String> = keys.iter().map(|k| format!("{k}:{}", go_format(&m[*k]))).collect();
            format!("map[{}]", items.join(" "))
        }
    }
}

/// Go's `%q`.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::{PODS, find};

    #[test]
    fn every_served_kind_has_a_schema_and_a_patch_path() {
        for def in RESOURCES {
            let doc = docs()
                .docs
                .iter()
                .find(|d| d.group == def.group && d.version == def.version)
                .unwrap_or_else(|| panic!("no document for {}", def.api_version()));
            assert!(doc.kinds.contains_key(def.kind), "{} {}", def.api_version(), def.kind);
            let v: Value = serde_json::from_slice(&doc.json).unwrap();
            let gvk = json!({"group": def.group, "kind": def.kind, "version": def.version});
            let ops: Vec<&Value> = v["paths"]
                .as_object()
                .unwrap()
                .values()
                .filter_map(|p| p.get(if def.stored { "patch" } else { "post" }))
                .filter(|op| op["x-kubernetes-group-version-kind"] == gvk)
                .collect();
            assert!(!ops.is_empty(), "{} {}", def.api_version(), def.kind);
            for op in ops {
                assert!(
                    op["parameters"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|p| p["name"] == "fieldValidation"),
                    "{op}"
                );
            }
        }
        assert_eq!(docs().docs[0].hash.len(), 128);
    }

    #[test]
    fn unknown_fields_are_named_by_their_path() {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"any": "thing"}, "managedFields": [{"fieldsV1": {"f:spec": {}}}]},
            "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": "1"}}},
                                    {"name": "d", "imagePullPolice": "Always"}],
                     "nodeSelector": {"a": "b"}, "bogus": 1},
            "extra": true,
        });
        assert_eq!(
            unknown_fields(&RESOURCES[PODS], "Pod", &pod),
            vec![
                "unknown field \"extra\"",
                "unknown field \"spec.bogus\"",
                "unknown field \"spec.containers[1].imagePullPolice\"",
            ]
        );
        let lease = find("coordination.k8s.io", "v1", "leases").unwrap();
        let ok = json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "a", "renewTime": "2024-01-01T00:00:00.000000Z"}});
        assert!(unknown_fields(&RESOURCES[lease], "Lease", &ok).is_empty());
        let pg = json!({"metadata": {"name": "g"}, "spec": {"schedulingPolicy": {"gang": {"minCount": 2, "size": 3}}},
            "status": {"conditions": [{"type": "PodGroupScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "Scheduled", "message": ""}]}});
        assert_eq!(
            unknown_fields(&RESOURCES[crate::resources::POD_GROUPS], "PodGroup", &pg),
            vec!["unknown field \"spec.schedulingPolicy.gang.size\""]
        );
    }

    /// One HTTP/1.1 exchange: status code, headers (lower-case names), body.
    async fn get(addr: std::net::SocketAddr, path: &str, extra: &str) -> (u16, Vec<(String, String)>, String) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{extra}\r\n");
        s.write_all(req.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).await.unwrap();
        let raw = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap();
        let mut lines = head.lines();
        let code = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
        let headers = lines
            .filter_map(|l| l.split_once(": "))
            .map(|(k, v)| (k.to_ascii_lowercase(), v.to_owned()))
            .collect();
        (code, headers, body.to_owned())
    }

    fn header<'a>(h: &'a [(String, String)], name: &str) -> Option<&'a str> {
        h.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// kube-openapi's handler3: the discovery lists each group-version with
    /// `?hash=` (its SHA-512), a current hash makes the answer immutable, a
    /// stale one redirects, and ETags give `304`s.
    #[tokio::test]
    async fn documents_are_served_with_their_hash() {
        let server = crate::ApiServer::start("127.0.0.1:0".parse().unwrap(), crate::Config::default())
            .await
            .unwrap();
        let addr = server.addr();
        let (code, _, body) = get(addr, "/openapi/v3", "").await;
        assert_eq!(code, 200);
        let disc: Value = serde_json::from_str(&body).unwrap();
        let keys: Vec<&String> = disc["paths"].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "api/v1",
                "apis/apps/v1",
                "apis/authentication.k8s.io/v1",
                "apis/authorization.k8s.io/v1",
                "apis/coordination.k8s.io/v1",
                "apis/events.k8s.io/v1",
                "apis/policy/v1",
                "apis/rbac.authorization.k8s.io/v1",
                "apis/resource.k8s.io/v1",
                "apis/scheduling.k8s.io/v1",
                "apis/scheduling.k8s.io/v1alpha2",
                "apis/storage.k8s.io/v1"
            ]
        );
        let url = disc["paths"]["api/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap()
            .to_owned();
        let (code, h, body) = get(addr, &url, "Accept: application/json\r\n").await;
        assert_eq!(code, 200);
        assert_eq!(header(&h, "cache-control"), Some("public, immutable"));
        let hash = url.split_once("?hash=").unwrap().1;
        assert_eq!(hash, super::hash(body.as_bytes()));
        let etag = header(&h, "etag").unwrap().to_owned();
        assert_eq!(etag, format!("\"{hash}\""));
        let doc: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(doc["openapi"], "3.0.0");
        let pod = &doc["components"]["schemas"]["io.k8s.api.core.v1.Pod"];
        assert_eq!(
            pod["x-kubernetes-group-version-kind"],
            json!([{"group": "", "kind": "Pod", "version": "v1"}])
        );
        let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
        assert_eq!(patch["operationId"], "patchCoreV1NamespacedPod");
        assert!(patch["requestBody"]["content"]["application/strategic-merge-patch+json"].is_object());

        let (code, _, _) = get(addr, &url, &format!("If-None-Match: {etag}\r\n")).await;
        assert_eq!(code, 304);
        let (code, h, _) = get(addr, "/openapi/v3/api/v1?hash=0123", "").await;
        assert_eq!((code, header(&h, "location")), (301, Some(url.as_str())));
        let (code, h, _) = get(addr, "/openapi/v3/api/v1", "").await;
        assert_eq!((code, header(&h, "cache-control")), (200, None));
        let pb = "Accept: application/com.github.proto-openapi.spec.v3.v1.0+protobuf\r\n";
        assert_eq!(get(addr, "/openapi/v3/api/v1", pb).await.0, 406);
        assert_eq!(get(addr, "/openapi/v3/apis/batch/v1", "").await.0, 404);
    }

    #[test]
    fn go_renders_maps_as_kube_apiserver_prints_them() {
        let v = json!({"spec": {"containers": [{"name": "c", "x": 1, "y": null}]}, "a": "b\"c"});
        assert_eq!(
            go_format(&v),
            "map[a:b\"c spec:map[containers:[map[name:c x:1 y:<nil>]]]]"
        );
        assert_eq!(go_quote("a\"b\n"), "\"a\\\"b\\n\"");
    }
}
