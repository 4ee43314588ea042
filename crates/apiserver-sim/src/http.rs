//! HTTP: routing of Kubernetes API paths onto the store, watch streams, and
//! the `/_sim/` control endpoints.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::Shared;
use crate::faults::{Admit, FaultRequest, RequestInfo};
use crate::openapi::{self, FieldValidation};
use crate::protobuf;
use crate::resources::{self, BINDINGS, PODS, RESOURCES, SERVICE_ACCOUNTS, SUBJECT_ACCESS_REVIEWS, TOKEN_REVIEWS};
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::{self, ApiError};
use crate::store::{Filter, WatchFrom, WatchMsg};
use crate::table;

/// The router: discovery, the API, and `/_sim/`.
pub fn router(shared: Arc<Shared>) -> axum::Router {
    axum::Router::new()
        .fallback(api)
        .layer(axum::extract::DefaultBodyLimit::max(16 << 20))
        .with_state(shared)
}

fn json_bytes(code: u16, body: Bytes) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

fn json_value(code: u16, v: &Value) -> Response {
    json_bytes(code, Bytes::from(serde_json::to_vec(v).expect("JSON values serialize")))
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut r = json_value(self.code, &self.to_status());
        if let Some(s) = self.retry_after {
            r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        r
    }
}

/// What a path names.
struct Target {
    res: usize,
    ns: Option<String>,
    name: Option<String>,
    sub: Option<String>,
}

enum Route {
    Discovery(Value),
    Api(Target),
}

fn route(path: &str, server_address: &str) -> Result<Route, ApiError> {
    let not_found = || ApiError::no_route(path);
    let segs: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    let (group, version, rest) = match segs.as_slice() {
        ["version"] => return Ok(Route::Discovery(resources::version())),
        ["api"] => return Ok(Route::Discovery(resources::core_versions(server_address))),
        ["apis"] => return Ok(Route::Discovery(resources::group_list())),
        ["apis", g] => return resources::group(g).map(Route::Discovery).ok_or_else(not_found),
        ["api", v] => {
            return resources::resource_list("", v)
                .map(Route::Discovery)
                .ok_or_else(not_found);
        }
        ["apis", g, v] => {
            return resources::resource_list(g, v)
                .map(Route::Discovery)
                .ok_or_else(not_found);
        }
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Err(not_found()),
    };
    let owned = |s: Option<&&str>| s.map(|s| (*s).to_owned());
    let (plural, ns, name, sub) = match rest {
        ["namespaces", ns, plural, more @ ..] if !matches!(*plural, "status" | "finalize") || !more.is_empty() => {
            (*plural, Some((*ns).to_owned()), owned(more.first()), owned(more.get(1)))
        }
        [plural, more @ ..] => (*plural, None, owned(more.first()), owned(more.get(1))),
        [] => return Err(not_found()),
    };
    let res = resources::find(group, version, plural).ok_or_else(not_found)?;
    let def = &RESOURCES[res];
    if def.namespaced != ns.is_some() && (name.is_some() || !def.namespaced) {
        return Err(not_found());
    }
    if let Some(s) = &sub
        && !def.subresources.contains(&s.as_str())
    {
        return Err(not_found());
    }
    Ok(Route::Api(Target { res, ns, name, sub }))
}

async fn api(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
    body: Bytes,
) -> Response {
    let path = uri.path();
    if let Some(ctl) = path.strip_prefix("/_sim/") {
        return control(&shared, &method, ctl, &body).unwrap_or_else(IntoResponse::into_response);
    }
    let watch = query.get("watch").is_some_and(|w| w == "1" || w == "true");
    let user_agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let req = RequestInfo {
        method: method.as_str(),
        path,
        user_agent,
        watch,
    };
    let (lose_answer, stall) = match shared.faults.before(req).await {
        Admit::Fail(code) => return ApiError::from_code(code).into_response(),
        Admit::Serve { lose_answer, stall } => (lose_answer, stall),
    };
    let response = serve(&shared, &method, req, &headers, &query, &body);
    if lose_answer {
        // Served (a write is applied) but never answered: the client
        // gives up, or the server stops.
        return std::future::pending().await;
    }
    if stall {
        return stalled(response, watch).await;
    }
    response
}

/// `response` with its status and headers, then half its body (a watch:
/// none of it), then silence on an open connection.
async fn stalled(response: Response, watch: bool) -> Response {
    use futures_util::StreamExt;
    let (parts, body) = response.into_parts();
    let first = if watch {
        Bytes::new()
    } else {
        let whole = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
        whole.slice(..whole.len() / 2)
    };
    let silent = futures_util::stream::once(async move { Ok::<_, std::convert::Infallible>(first) })
        .chain(futures_util::stream::pending());
    Response::from_parts(parts, axum::body::Body::from_stream(silent))
}

/// The answer to an API request that passed the faults.
fn serve(
    shared: &Arc<Shared>,
    method: &Method,
    req: RequestInfo<'_>,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
    body: &Bytes,
) -> Response {
    let RequestInfo {
        path,
        user_agent,
        watch,
        ..
    } = req;
    if let Some(rest) = path.strip_prefix("/openapi/v3")
        && (rest.is_empty() || rest.starts_with('/'))
    {
        if method != Method::GET {
            return ApiError::method_not_allowed(format!("{method} is not allowed on {path}")).into_response();
        }
        return openapi::serve(rest, query.get("hash").map(String::as_str), headers);
    }
    let route = match route(path, &shared.addr.to_string()) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let t = match route {
        Route::Discovery(v) if method == Method::GET => return json_value(200, &v),
        Route::Discovery(_) => {
            return ApiError::method_not_allowed(format!("{method} is not allowed on {path}")).into_response();
        }
        Route::Api(t) => t,
    };
    // `binding` and `token` are create-only: kube-apiserver serves no other
    // verb on them.
    if matches!(t.sub.as_deref(), Some("binding" | "token")) && method != Method::POST {
        return ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({method} {path})"
        ))
        .into_response();
    }
    let decoded;
    let body = if header_is(headers, header::CONTENT_TYPE, protobuf::CONTENT_TYPE)
        && matches!(*method, Method::POST | Method::PUT)
    {
        match protobuf::decode(body) {
            Ok(v) => {
                decoded = Bytes::from(serde_json::to_vec(&v).expect("JSON values serialize"));
                &decoded
            }
            Err(e) => return e.into_response(),
        }
    } else {
        body
    };
    let result = match (method, &t.name) {
        (&Method::GET, None) if watch => return watch_response(shared, &t, query),
        (&Method::GET, None) => list(shared, &t, query, headers),
        (&Method::GET, Some(name)) => get(shared, &t, name, headers),
        (&Method::POST, None) => create(shared, &t, body, query, user_agent),
        (&Method::POST, Some(name)) if t.sub.as_deref() == Some("binding") => {
            bind(shared, &t, name, body, query, user_agent)
        }
        (&Method::POST, Some(name)) if t.sub.as_deref() == Some("token") => token(shared, &t, name, body, query),
        (&Method::PUT, Some(name)) => update(shared, &t, name, body, query),
        (&Method::PATCH, Some(name)) => {
            let ct = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.split(';').next())
                .unwrap_or("")
                .trim()
                .to_owned();
            patch(shared, &t, name, &ct, body, query)
        }
        (&Method::DELETE, Some(name)) => {
            let opts = if body.is_empty() { None } else { parse_body(body).ok() };
            let pre = opts.as_ref().and_then(|o| o.get("preconditions"));
            shared
                .lock()
                .delete(t.res, ns_of(&t), name, pre)
                .map(|s| json_bytes(200, s.json))
        }
        _ => Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({method} {path})"
        ))),
    };
    result.unwrap_or_else(IntoResponse::into_response)
}

/// Whether a header's media type (parameters aside) is `media_type`.
fn header_is(headers: &HeaderMap, name: header::HeaderName, media_type: &str) -> bool {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(media_type))
}

fn ns_of(t: &Target) -> &str {
    t.ns.as_deref().unwrap_or("")
}

fn parse_body(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))
}

fn wants_table(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("as=Table"))
}

fn filter(t: &Target, query: &HashMap<String, String>) -> Result<Filter, ApiError> {
    let kind = RESOURCES[t.res].kind;
    Ok(Filter {
        namespace: t.ns.clone(),
        labels: LabelSelector::parse(query.get("labelSelector").map_or("", String::as_str))
            .map_err(|e| ApiError::bad_request(format!("unable to parse labelSelector: {e}")))?,
        fields: FieldSelector::parse(query.get("fieldSelector").map_or("", String::as_str), kind)
            .map_err(ApiError::bad_request)?,
    })
}

fn list(
    shared: &Shared,
    t: &Target,
    query: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let def = &RESOURCES[t.res];
    if !def.stored {
        return Err(ApiError::method_not_allowed(format!("{} cannot be listed", def.plural)));
    }
    let filter = filter(t, query)?;
    let limit: usize = query.get("limit").and_then(|l| l.parse().ok()).unwrap_or(0);
    let store = shared.lock();
    let rv_param = query.get("resourceVersion").map(String::as_str).unwrap_or("");
    if query.get("resourceVersionMatch").map(String::as_str) == Some("Exact") {
        let rv: u64 = rv_param
            .parse()
            .map_err(|_| ApiError::bad_request(format!("invalid resource version {rv_param:?}")))?;
        if rv < store.earliest() {
            return Err(ApiError::expired(format!(
                "too old resource version: {rv} ({})",
                store.earliest()
            )));
        }
    }
    let after = match query.get("continue").filter(|c| !c.is_empty()) {
        Some(token) => Some(store.decode_continue(token)?),
        None => None,
    };
    let page = store.list(t.res, &filter, limit, after.as_ref());
    drop(store);
    if wants_table(headers) {
        return Ok(json_value(
            200,
            &table::table(t.res, &page.items, page.rv, page.continue_token.as_deref()),
        ));
    }
    // Assembled from the stored bytes: no object is serialized again.
    let mut meta = json!({"resourceVersion": page.rv.to_string()});
    if let Some(c) = &page.continue_token {
        meta["continue"] = json!(c);
        if let Some(n) = page.remaining {
            meta["remainingItemCount"] = json!(n);
        }
    }
    let head = format!(
        "{{\"kind\":\"{}List\",\"apiVersion\":\"{}\",\"metadata\":{},\"items\":[",
        def.kind,
        def.api_version(),
        meta
    );
    let mut out = Vec::with_capacity(head.len() + page.items.iter().map(|s| s.json.len() + 1).sum::<usize>() + 2);
    out.extend_from_slice(head.as_bytes());
    for (i, s) in page.items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(&s.json);
    }
    out.extend_from_slice(b"]}");
    Ok(json_bytes(200, Bytes::from(out)))
}

fn get(shared: &Shared, t: &Target, name: &str, headers: &HeaderMap) -> Result<Response, ApiError> {
    let s = shared.lock().get(t.res, ns_of(t), name)?;
    if wants_table(headers) {
        let rv = shared.lock().resource_version();
        return Ok(json_value(
            200,
            &table::table(t.res, std::slice::from_ref(&s), rv, None),
        ));
    }
    Ok(json_bytes(200, s.json))
}

/// A write's body, parsed and checked under the request's
/// `fieldValidation` (named in errors as `options`, e.g. `CreateOptions`),
/// with the warnings to send back.
fn checked_body(
    query: &HashMap<String, String>,
    options: &str,
    res: usize,
    body: &[u8],
) -> Result<(Value, Vec<String>), ApiError> {
    let directive = directive(query, options)?;
    let v = parse_body(body)?;
    let warnings = check_fields(res, &v, directive)?;
    Ok((v, warnings))
}

/// kube-apiserver's `fieldValidation` of a decoded body: `Strict` refuses
/// unknown fields as its strict decoder does, `Warn` (the default) returns
/// them to become `Warning` headers, `Ignore` drops them silently.
fn check_fields(res: usize, v: &Value, directive: FieldValidation) -> Result<Vec<String>, ApiError> {
    check_fields_as(res, RESOURCES[res].kind, v, directive)
}

/// [`check_fields`] for a body of another `kind` than the resource's (a
/// subresource's, such as `TokenRequest`), described in the same document.
fn check_fields_as(res: usize, kind: &str, v: &Value, directive: FieldValidation) -> Result<Vec<String>, ApiError> {
    let def = &RESOURCES[res];
    if directive == FieldValidation::Ignore {
        return Ok(Vec::new());
    }
    let unknown = openapi::unknown_fields(def, kind, v);
    if directive == FieldValidation::Strict && !unknown.is_empty() {
        return Err(ApiError::bad_request(format!(
            "{kind} in version {v:?} cannot be handled as a {kind}: {}",
            openapi::strict_error(&unknown),
            v = def.version
        )));
    }
    Ok(unknown)
}

fn directive(query: &HashMap<String, String>, options: &str) -> Result<FieldValidation, ApiError> {
    FieldValidation::parse(query.get("fieldValidation").map(String::as_str), options)
}

/// `Warning: 299 - "unknown field \"spec.x\""`, one header per warning.
fn with_warnings(mut r: Response, warnings: &[String]) -> Response {
    for w in warnings {
        if let Ok(v) = HeaderValue::from_bytes(format!("299 - {}", openapi::go_quote(w)).as_bytes()) {
            r.headers_mut().append(header::WARNING, v);
        }
    }
    r
}

fn update(
    shared: &Shared,
    t: &Target,
    name: &str,
    body: &[u8],
    query: &HashMap<String, String>,
) -> Result<Response, ApiError> {
    let (v, warnings) = checked_body(query, "UpdateOptions", t.res, body)?;
    let s = shared.lock().update(t.res, ns_of(t), name, t.sub.as_deref(), v)?;
    Ok(with_warnings(json_bytes(200, s.json), &warnings))
}

fn patch(
    shared: &Shared,
    t: &Target,
    name: &str,
    content_type: &str,
    body: &[u8],
    query: &HashMap<String, String>,
) -> Result<Response, ApiError> {
    let directive = directive(query, "PatchOptions")?;
    let v = parse_body(body)?;
    let mut warnings = Vec::new();
    // kube-apiserver checks the patched object; a refusal is a 422 naming
    // the patch as its strategic merge patcher prints it (a Go map), or the
    // patched object for JSON and merge patches.
    let mut check = |patched: &Value| {
        if directive == FieldValidation::Ignore {
            return Ok(());
        }
        let def = &RESOURCES[t.res];
        let unknown = openapi::unknown_fields(def, def.kind, patched);
        if directive == FieldValidation::Warn || unknown.is_empty() {
            warnings = unknown;
            return Ok(());
        }
        let shown = if content_type == "application/strategic-merge-patch+json" {
            openapi::go_format(&v)
        } else {
            serde_json::to_string(patched).expect("serializes")
        };
        let why = format!(
            "Invalid value: {}: {}",
            openapi::go_quote(&shown),
            openapi::strict_error(&unknown)
        );
        let mut e = ApiError::invalid("", "", "", "patch", &why);
        e.message = format!(" \"\" is invalid: patch: {why}");
        Err(e)
    };
    let s = shared
        .lock()
        .patch_checked(t.res, ns_of(t), name, t.sub.as_deref(), content_type, &v, &mut check)?;
    Ok(with_warnings(json_bytes(200, s.json), &warnings))
}

fn create(
    shared: &Shared,
    t: &Target,
    body: &[u8],
    query: &HashMap<String, String>,
    user_agent: &str,
) -> Result<Response, ApiError> {
    let (v, warnings) = checked_body(query, "CreateOptions", t.res, body)?;
    if t.res == BINDINGS {
        // POST namespaces/NS/bindings: the older form of pods/NAME/binding.
        let name = v
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        shared.lock().bind_as(ns_of(t), &name, &v, user_agent)?;
        return Ok(with_warnings(json_value(201, &status::success(201)), &warnings));
    }
    // Reviews are answered, not stored.
    if t.res == TOKEN_REVIEWS {
        let tokens = shared.tokens();
        let answer = tokens.review(&shared.lock(), v)?;
        return Ok(with_warnings(json_value(201, &answer), &warnings));
    }
    if t.res == SUBJECT_ACCESS_REVIEWS {
        let answer = crate::auth::access_review(&shared.lock(), v)?;
        return Ok(with_warnings(json_value(201, &answer), &warnings));
    }
    let s = shared.lock().create(t.res, t.ns.as_deref(), v)?;
    Ok(with_warnings(json_bytes(201, s.json), &warnings))
}

/// `POST namespaces/NS/serviceaccounts/NAME/token`: a TokenRequest.
fn token(
    shared: &Shared,
    t: &Target,
    name: &str,
    body: &[u8],
    query: &HashMap<String, String>,
) -> Result<Response, ApiError> {
    debug_assert_eq!(t.res, SERVICE_ACCOUNTS);
    let directive = directive(query, "CreateOptions")?;
    let v = parse_body(body)?;
    let warnings = check_fields_as(t.res, "TokenRequest", &v, directive)?;
    let mut tokens = shared.tokens();
    let answer = tokens.issue(&shared.lock(), ns_of(t), name, v)?;
    Ok(with_warnings(json_value(201, &answer), &warnings))
}

fn bind(
    shared: &Shared,
    t: &Target,
    name: &str,
    body: &[u8],
    query: &HashMap<String, String>,
    user_agent: &str,
) -> Result<Response, ApiError> {
    let (v, warnings) = checked_body(query, "CreateOptions", BINDINGS, body)?;
    if let Some(n) = v.pointer("/metadata/name").and_then(Value::as_str)
        && n != name
    {
        return Err(ApiError::bad_request(format!(
            "name in URL does not match name in Binding object ({name} != {n})"
        )));
    }
    debug_assert_eq!(t.res, PODS);
    shared.lock().bind_as(ns_of(t), name, &v, user_agent)?;
    Ok(with_warnings(json_value(201, &status::success(201)), &warnings))
}

/// A watch: HTTP 200 with one JSON event per line, until the timeout, the
/// client leaving, or the server closing the watch.
fn watch_response(shared: &Arc<Shared>, t: &Target, query: &HashMap<String, String>) -> Response {
    let def = &RESOURCES[t.res];
    let setup = || -> Result<mpsc::Receiver<WatchMsg>, ApiError> {
        if !def.stored {
            return Err(ApiError::method_not_allowed(format!(
                "{} cannot be watched",
                def.plural
            )));
        }
        let filter = filter(t, query)?;
        let rv = query.get("resourceVersion").map(String::as_str).unwrap_or("");
        let from = match rv {
            "" | "0" => WatchFrom::Now,
            v => WatchFrom::Version(
                v.parse()
                    .map_err(|_| ApiError::bad_request(format!("invalid resource version {v:?}")))?,
            ),
        };
        let bookmarks = query
            .get("allowWatchBookmarks")
            .is_some_and(|b| b == "true" || b == "1");
        let initial = query.get("sendInitialEvents").is_some_and(|b| b == "true");
        if initial && from != WatchFrom::Now {
            return Err(ApiError::invalid(
                "",
                "ListOptions",
                "",
                "sendInitialEvents",
                "Forbidden: sendInitialEvents is only supported with resourceVersion unset or 0",
            ));
        }
        shared
            .lock()
            .watch(t.res, filter, from, bookmarks, initial && bookmarks)
    };
    let rx = match setup() {
        Ok(rx) => rx,
        Err(e) => return e.into_response(),
    };
    let timeout = query
        .get("timeoutSeconds")
        .and_then(|s| s.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(shared.config.max_watch_timeout)
        .min(shared.config.max_watch_timeout);
    let deadline = tokio::time::Instant::now() + timeout;
    let kind = def.kind;
    let api_version = def.api_version();
    let stream = futures_util::stream::unfold(Some(rx), move |rx| {
        let api_version = api_version.clone();
        async move {
            let mut rx = rx?;
            let msg = tokio::time::timeout_at(deadline, rx.recv()).await.ok().flatten()?;
            let (bytes, last) = match msg {
                WatchMsg::Event(t, change) => (frame(t.as_str(), &change.object.json), false),
                WatchMsg::Initial(s) => (frame("ADDED", &s.json), false),
                WatchMsg::Bookmark(rv, end) => {
                    let mut meta = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
                    if end {
                        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
                    }
                    let obj = json!({"kind": kind, "apiVersion": api_version, "metadata": meta});
                    (frame("BOOKMARK", &serde_json::to_vec(&obj).expect("serializes")), false)
                }
                WatchMsg::Error(e) => (
                    frame("ERROR", &serde_json::to_vec(&e.to_status()).expect("serializes")),
                    true,
                ),
            };
            Some((Ok::<_, Infallible>(bytes), if last { None } else { Some(rx) }))
        }
    });
    let mut r = Response::new(Body::from_stream(stream));
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

fn frame(kind: &str, object: &[u8]) -> Bytes {
    let mut b = Vec::with_capacity(object.len() + 32);
    b.extend_from_slice(b"{\"type\":\"");
    b.extend_from_slice(kind.as_bytes());
    b.extend_from_slice(b"\",\"object\":");
    b.extend_from_slice(object);
    b.extend_from_slice(b"}\n");
    Bytes::from(b)
}

/// `/_sim/faults` (GET the state, POST a [`FaultRequest`]), `/_sim/stats`,
/// `/_sim/tokens` (POST a [`crate::StaticToken`]).
fn control(shared: &Shared, method: &Method, path: &str, body: &[u8]) -> Result<Response, ApiError> {
    match (method, path) {
        (&Method::GET, "faults") => Ok(json_value(200, &shared.faults.describe())),
        (&Method::POST, "faults") => {
            let req: FaultRequest =
                serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("fault request: {e}")))?;
            crate::apply_fault_request(shared, req);
            Ok(json_value(200, &shared.faults.describe()))
        }
        (&Method::GET, "stats") => Ok(json_value(200, &crate::stats(shared))),
        (&Method::POST, "tokens") => {
            let token: crate::StaticToken =
                serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("static token: {e}")))?;
            if token.token.is_empty() || token.user.is_empty() {
                return Err(ApiError::bad_request("static token: token and user are required"));
            }
            let answer = json!({"user": token.user, "uid": token.uid, "groups": token.groups});
            shared.tokens().add_static(token);
            Ok(json_value(201, &answer))
        }
        _ => Err(ApiError::no_route(&format!("/_sim/{path}"))),
    }
}
