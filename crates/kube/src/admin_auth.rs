//! Who may read the admin port, decided as kube-scheduler's secure port
//! decides it: the bearer token is reviewed by the API server
//! (`TokenReview`), and the user it names must be allowed the request's
//! verb on its path (`SubjectAccessReview` with non-resource attributes),
//! except on the paths always allowed (the probes'). Answers are cached
//! briefly, as kube-scheduler's delegating authenticator and authorizer
//! cache them (10 s each by default), so a scrape every few seconds costs
//! the API server nothing more.
//!
//! Served as plain HTTP on a loopback address (`demo`, local runs), the
//! port authenticates nobody, and checks the `Host` header instead: a page
//! a browser loaded from another site can reach a loopback port (or a
//! `kubectl port-forward`) by rebinding its own name to 127.0.0.1, but its
//! requests then carry that name.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use kube::api::{Api, PostParams};
use sha2::{Digest, Sha256};

/// kube-scheduler's `--authorization-always-allow-paths` default.
pub const DEFAULT_ALWAYS_ALLOW: &[&str] = &["/healthz", "/readyz", "/livez"];
/// How long a review's answer is reused (kube-scheduler's
/// `--authentication-token-webhook-cache-ttl` and
/// `--authorization-webhook-cache-{authorized,unauthorized}-ttl`).
pub const CACHE_TTL: Duration = Duration::from_secs(10);
/// Answers kept at most per cache; past it the oldest go first.
const CACHE_ENTRIES: usize = 4096;
/// Longest one review may take.
const REVIEW_TIMEOUT: Duration = Duration::from_secs(10);

/// How the admin port is protected.
#[derive(Clone)]
pub enum Access {
    /// Plain HTTP, no authentication: only on a loopback address, and only
    /// for requests whose `Host` is `localhost` or an IP address.
    Loopback,
    /// TLS (set up by the caller), every request but the always-allowed
    /// paths authenticated and authorized through the API server. Without
    /// a client, nobody is authenticated: only those paths answer.
    Delegated {
        /// The API server that reviews tokens and access.
        client: Option<kube::Client>,
        /// Paths served to anyone (exact, or a prefix ending in `*`).
        always_allow: Vec<String>,
    },
}

/// The user a token names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct User {
    name: String,
    uid: String,
    groups: Vec<String>,
    extra: Vec<(String, Vec<String>)>,
}

/// A small map of answers that expire.
struct Cache<K, V> {
    entries: Mutex<HashMap<K, (Instant, V)>>,
}

impl<K: std::hash::Hash + Eq + Clone, V: Clone> Cache<K, V> {
    fn new() -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn get(&self, k: &K) -> Option<V> {
        let map = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        map.get(k)
            .filter(|(t, _)| t.elapsed() < CACHE_TTL)
            .map(|(_, v)| v.clone())
    }

    fn put(&self, k: K, v: V) {
        let mut map = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= CACHE_ENTRIES {
            map.retain(|_, (t, _)| t.elapsed() < CACHE_TTL);
        }
        if map.len() >= CACHE_ENTRIES {
            // Still full of live answers: drop the oldest half.
            let mut ages: Vec<Instant> = map.values().map(|(t, _)| *t).collect();
            ages.sort_unstable();
            let cut = ages[ages.len() / 2];
            map.retain(|_, (t, _)| *t > cut);
        }
        map.insert(k, (Instant::now(), v));
    }
}

/// The delegated authenticator and authorizer of one admin port.
pub struct Guard {
    access: Access,
    /// By the token's SHA-256 (never the token itself): who it names, or
    /// none when the API server said it names nobody.
    tokens: Cache<[u8; 32], Option<User>>,
    /// By user, path and verb: allowed or not.
    decisions: Cache<(User, String, String), bool>,
}

impl Guard {
    /// A guard for `access`.
    pub fn new(access: Access) -> Self {
        Self {
            access,
            tokens: Cache::new(),
            decisions: Cache::new(),
        }
    }

    /// Whether `path` is served to anyone.
    fn always_allowed(&self, path: &str) -> bool {
        match &self.access {
            Access::Loopback => true,
            Access::Delegated { always_allow, .. } => always_allow.iter().any(|p| match p.strip_suffix('*') {
                Some(prefix) => path.starts_with(prefix),
                None => path == p,
            }),
        }
    }

    /// None when the request may go on; otherwise the answer to send.
    /// `certificate`: the client certificate the connection presented,
    /// already verified against the configured CA.
    pub async fn check(
        &self,
        method: &Method,
        path: &str,
        headers: &HeaderMap,
        certificate: Option<&[u8]>,
    ) -> Option<Response> {
        if let Access::Loopback = self.access {
            return host_refused(headers);
        }
        if self.always_allowed(path) {
            return None;
        }
        let Access::Delegated {
            client: Some(client), ..
        } = &self.access
        else {
            return Some(unauthorized());
        };
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty());
        // A bearer token first, as kube-apiserver's union authenticator
        // does when both are presented; else the client certificate.
        let user = match (token, certificate.and_then(user_of_certificate)) {
            (Some(token), _) => match self.authenticate(client, token).await {
                Ok(Some(u)) => u,
                Ok(None) => return Some(unauthorized()),
                Err(e) => {
                    tracing::warn!(error = %e, "the API server could not review a token for the admin port");
                    return Some(unauthorized());
                }
            },
            (None, Some(u)) => u,
            (None, None) => return Some(unauthorized()),
        };
        let verb = verb(method);
        match self.authorize(client, &user, path, &verb).await {
            Ok(true) => None,
            Ok(false) => Some(forbidden(&user.name, &verb, path, "")),
            Err(e) => {
                tracing::warn!(error = %e, user = %user.name, path, "the API server could not review an admin request");
                Some(forbidden(&user.name, &verb, path, &e))
            }
        }
    }

    async fn authenticate(&self, client: &kube::Client, token: &str) -> Result<Option<User>, String> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(u) = self.tokens.get(&key) {
            return Ok(u);
        }
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_owned(),
                audiences: None,
            },
            ..Default::default()
        };
        let api: Api<TokenReview> = Api::all(client.clone());
        let answer = tokio::time::timeout(REVIEW_TIMEOUT, api.create(&PostParams::default(), &review))
            .await
            .map_err(|_| format!("TokenReview took longer than {REVIEW_TIMEOUT:?}"))?
            .map_err(|e| format!("TokenReview: {e}"))?;
        let status = answer.status.unwrap_or_default();
        let user = match (status.authenticated, status.user) {
            (Some(true), Some(u)) => Some(user_of(u)),
            _ => None,
        };
        self.tokens.put(key, user.clone());
        Ok(user)
    }

    async fn authorize(&self, client: &kube::Client, user: &User, path: &str, verb: &str) -> Result<bool, String> {
        let key = (user.clone(), path.to_owned(), verb.to_owned());
        if let Some(allowed) = self.decisions.get(&key) {
            return Ok(allowed);
        }
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.name.clone()),
                uid: Some(user.uid.clone()).filter(|u| !u.is_empty()),
                groups: Some(user.groups.clone()),
                extra: (!user.extra.is_empty()).then(|| user.extra.iter().cloned().collect()),
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_owned()),
                    verb: Some(verb.to_owned()),
                }),
                resource_attributes: None,
            },
            ..Default::default()
        };
        let api: Api<SubjectAccessReview> = Api::all(client.clone());
        let answer = tokio::time::timeout(REVIEW_TIMEOUT, api.create(&PostParams::default(), &review))
            .await
            .map_err(|_| format!("SubjectAccessReview took longer than {REVIEW_TIMEOUT:?}"))?
            .map_err(|e| format!("SubjectAccessReview: {e}"))?;
        let status = answer.status.unwrap_or_default();
        if let Some(e) = status.evaluation_error.filter(|e| !e.is_empty())
            && !status.allowed
        {
            return Err(e);
        }
        let allowed = status.allowed && !status.denied.unwrap_or(false);
        self.decisions.put(key, allowed);
        Ok(allowed)
    }
}

/// The user a verified client certificate names: its subject's common
/// name, in the groups of its organizations (kube-apiserver's x509
/// authenticator), and `system:authenticated`. None without a common name.
fn user_of_certificate(der: &[u8]) -> Option<User> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let name = subject.iter_common_name().next()?.as_str().ok()?.to_owned();
    let mut groups: Vec<String> = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_owned))
        .collect();
    groups.push("system:authenticated".into());
    Some(User {
        name,
        uid: String::new(),
        groups,
        extra: Vec::new(),
    })
}

fn user_of(u: UserInfo) -> User {
    let mut extra: Vec<(String, Vec<String>)> = u.extra.unwrap_or_default().into_iter().collect();
    extra.sort();
    User {
        name: u.username.unwrap_or_default(),
        uid: u.uid.unwrap_or_default(),
        groups: u.groups.unwrap_or_default(),
        extra,
    }
}

/// The authorization verb of an HTTP method on a non-resource path, as
/// kube-apiserver names it: the method in lower case.
fn verb(method: &Method) -> String {
    method.as_str().to_ascii_lowercase()
}

fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"))],
        "Unauthorized\n",
    )
        .into_response()
}

/// kube-apiserver's wording for a non-resource request it refuses.
fn forbidden(user: &str, verb: &str, path: &str, why: &str) -> Response {
    let mut text = format!("Forbidden: User {user:?} cannot {verb} path {path:?}");
    if !why.is_empty() {
        text.push_str(": ");
        text.push_str(why);
    }
    text.push('\n');
    (StatusCode::FORBIDDEN, text).into_response()
}

/// The answer to a request whose `Host` is not this machine by a name no
/// other site can take: `localhost` or an IP address. None: it may go on.
fn host_refused(headers: &HeaderMap) -> Option<Response> {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    if local_host(host) {
        return None;
    }
    Some(
        (
            StatusCode::FORBIDDEN,
            format!(
                "Forbidden: Host {host:?} is not this machine's; the admin port answers http://localhost or an IP address (a page of another site must not reach it)\n"
            ),
        )
            .into_response(),
    )
}

/// `localhost`, `localhost:PORT`, an IPv4 address or `[IPv6]`, with or
/// without a port.
fn local_host(host: &str) -> bool {
    if host.parse::<SocketAddr>().is_ok() || host.parse::<std::net::IpAddr>().is_ok() {
        return true;
    }
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return v6.parse::<std::net::Ipv6Addr>().is_ok();
    }
    let name = match host.rsplit_once(':') {
        Some((name, port)) if port.parse::<u16>().is_ok() => name,
        _ => host,
    };
    name.eq_ignore_ascii_case("localhost")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_names_reach_a_loopback_port() {
        for ok in [
            "localhost",
            "localhost:10259",
            "LOCALHOST:1",
            "127.0.0.1",
            "127.0.0.1:8080",
            "[::1]:80",
            "[::1]",
        ] {
            assert!(local_host(ok), "{ok}");
        }
        for bad in [
            "",
            "evil.example",
            "evil.example:10259",
            "localhost.evil.example",
            "127.0.0.1.nip.io:80",
        ] {
            assert!(!local_host(bad), "{bad}");
        }
    }

    #[test]
    fn always_allowed_paths_match_exactly_or_by_prefix() {
        let g = Guard::new(Access::Delegated {
            client: None,
            always_allow: vec!["/healthz".into(), "/debug/pprof/*".into()],
        });
        assert!(g.always_allowed("/healthz"));
        assert!(!g.always_allowed("/healthz/extra"));
        assert!(g.always_allowed("/debug/pprof/heap"));
        assert!(!g.always_allowed("/metrics"));
    }

    #[test]
    fn the_cache_expires_and_stays_bounded() {
        let c: Cache<u32, bool> = Cache::new();
        for i in 0..(CACHE_ENTRIES as u32 + 10) {
            c.put(i, true);
        }
        assert!(c.entries.lock().unwrap().len() <= CACHE_ENTRIES);
        assert_eq!(c.get(&(CACHE_ENTRIES as u32 + 9)), Some(true));
    }
}
