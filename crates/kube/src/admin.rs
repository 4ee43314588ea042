//! The admin port: `/healthz` and `/livez` (the scheduling loop turns, no
//! task it depends on died), `/readyz` (caches synced, plugins loaded),
//! `/metrics` (Prometheus text), `/debug/shadow` (how the shadow versions'
//! decisions compare with serving's, as JSON), `/ui` (the web view:
//! [`crate::web`]).
//!
//! Served as kube-scheduler serves its secure port: over TLS, every path
//! but the probes' authenticated and authorized by the API server
//! ([`crate::admin_auth`]); or, on a loopback address only, plain HTTP
//! for local runs.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::admin_auth::{Access, Guard};
use crate::status::Status;
use crate::tls::CertFiles;

/// Where and how the admin endpoints are served.
#[derive(Debug, Clone)]
pub struct AdminOptions {
    /// The address to listen on.
    pub addr: SocketAddr,
    /// Plain HTTP without authentication (a loopback address only).
    pub plain_http: bool,
    /// The certificate served (none: a self-signed one made at start).
    pub cert: Option<CertFiles>,
    /// Paths served to anyone (exact, or a prefix ending in `*`).
    pub always_allow: Vec<String>,
    /// A client certificate this CA signed names its user (CN) and groups
    /// (O), as kube-apiserver's x509 authenticator reads them
    /// (kube-scheduler's `--client-ca-file`); none: tokens only.
    pub client_ca: Option<std::path::PathBuf>,
}

impl AdminOptions {
    /// Plain HTTP on `addr`, which must be a loopback address.
    pub fn loopback(addr: SocketAddr) -> Self {
        Self {
            addr,
            plain_http: true,
            cert: None,
            always_allow: Vec::new(),
            client_ca: None,
        }
    }

    /// TLS on `addr` with a self-signed certificate, the probes' paths open.
    pub fn secure(addr: SocketAddr) -> Self {
        Self {
            addr,
            plain_http: false,
            cert: None,
            always_allow: crate::admin_auth::DEFAULT_ALWAYS_ALLOW
                .iter()
                .map(|p| (*p).to_owned())
                .collect(),
            client_ca: None,
        }
    }

    /// Refuses plain HTTP anywhere but on loopback.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.plain_http && !self.addr.ip().is_loopback() {
            anyhow::bail!(
                "--admin-plain-http serves the admin port without authentication, so only on a loopback address (127.0.0.1, ::1), not {}; without it the port is served over TLS with the API server's authentication and authorization",
                self.addr
            );
        }
        Ok(())
    }
}

/// The admin port, once it listens.
#[derive(Debug, Clone, Copy)]
pub struct Served {
    /// The address bound.
    pub addr: SocketAddr,
    /// Whether it speaks TLS.
    pub https: bool,
}

impl Served {
    /// `https://ADDR` or `http://ADDR`.
    pub fn url(&self) -> String {
        format!("{}://{}", if self.https { "https" } else { "http" }, self.addr)
    }
}

/// Query of `/ui` and its fragments.
#[derive(Debug, Default, serde::Deserialize)]
struct UiQuery {
    #[serde(default)]
    view: Option<String>,
    #[serde(default)]
    page: usize,
    #[serde(default)]
    filter: String,
    /// Only this profile's pods (cluster, queue, decisions).
    #[serde(default)]
    profile: String,
    /// The pod of the decision view.
    #[serde(default)]
    pod: String,
}

/// One view of the web page, rendered from the view the scheduling thread
/// publishes (waiting up to a second for a fresh one).
async fn render(status: Arc<Status>, view: String, q: UiQuery, whole: bool) -> axum::response::Response {
    let rendered = tokio::task::spawn_blocking(move || {
        let body = match view.as_str() {
            "plugins" => crate::web::plugins(
                status.plugins().map(|h| &**h),
                status.shadow(),
                &status.metrics.plugin_latencies(),
            ),
            "decisions" => {
                status.web.ask();
                crate::web::decisions(&status.web, &q.profile)
            }
            "decision" => {
                status.web.ask();
                crate::web::decision(status.web.explain(&q.pod).as_ref(), &q.pod)
            }
            "cluster" | "queue" => match status.web.fresh(std::time::Duration::from_secs(1)) {
                Some(v) if view == "queue" => crate::web::queue(&v, &q.profile),
                Some(v) => crate::web::cluster(
                    &v,
                    &crate::web::ClusterQuery {
                        page: q.page,
                        filter: q.filter,
                        profile: q.profile,
                    },
                    false,
                ),
                None => maud::html! { p { "The scheduler has not published its view yet (it does while the page is open)." } },
            },
            _ => return None,
        };
        Some(if whole { crate::web::page(body, &view) } else { body }.into_string())
    })
    .await
    .ok()
    .flatten();
    match rendered {
        Some(html) => ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            "no such view (cluster, queue, decisions, decision, plugins)\n",
        )
            .into_response(),
    }
}

async fn ui_page(
    axum::extract::State(status): axum::extract::State<Arc<Status>>,
    axum::extract::Query(q): axum::extract::Query<UiQuery>,
) -> axum::response::Response {
    let view = q.view.clone().unwrap_or_else(|| "cluster".into());
    render(status, view, q, true).await
}

async fn ui_fragment(
    axum::extract::State(status): axum::extract::State<Arc<Status>>,
    axum::extract::Path(view): axum::extract::Path<String>,
    axum::extract::Query(q): axum::extract::Query<UiQuery>,
) -> axum::response::Response {
    render(status, view, q, false).await
}

/// Authenticates and authorizes each request (or checks its `Host` on
/// plain HTTP), then adds the headers that keep the web view out of other
/// sites' frames and scripts.
async fn guarded(
    axum::extract::State(guard): axum::extract::State<Arc<Guard>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let certificate = req
        .extensions()
        .get::<axum::extract::ConnectInfo<crate::tls::Peer>>()
        .and_then(|c| c.0.certificate.clone());
    let refused = guard
        .check(req.method(), req.uri().path(), req.headers(), certificate.as_deref())
        .await;
    let mut resp = match refused {
        Some(r) => r,
        None => next.run(req).await,
    };
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(crate::web::content_security_policy()),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    // What it shows is the cluster's: no shared cache keeps it.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// Binds the admin address and serves the endpoints in the background;
/// `client` reviews tokens and access on the secure port (none: only the
/// always-allowed paths answer).
pub async fn serve(opts: &AdminOptions, status: Arc<Status>, client: Option<kube::Client>) -> anyhow::Result<Served> {
    opts.check()?;
    let addr = opts.addr;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {addr} for the admin port: {e}"))?;
    let bound = listener.local_addr()?;
    let access = if opts.plain_http {
        Access::Loopback
    } else {
        if client.is_none() {
            tracing::warn!(
                "no API server to review tokens: the admin port serves only {:?}",
                opts.always_allow
            );
        }
        Access::Delegated {
            client,
            always_allow: opts.always_allow.clone(),
        }
    };
    let guard = Arc::new(Guard::new(access));
    let health = {
        let s = status.clone();
        move || async move {
            match s.health() {
                Ok(()) => (StatusCode::OK, "ok".to_owned()).into_response(),
                Err(why) => (StatusCode::INTERNAL_SERVER_ERROR, why).into_response(),
            }
        }
    };
    let app = axum::Router::new()
        .route("/healthz", get(health.clone()))
        .route("/livez", get(health))
        .route(
            "/readyz",
            get({
                let s = status.clone();
                move || async move {
                    // The plugin host's state is behind std mutexes: read
                    // off the async workers.
                    let (not_ready, missing) = {
                        let s = s.clone();
                        tokio::task::spawn_blocking(move || (s.not_ready(), s.missing_plugins()))
                            .await
                            .unwrap_or_default()
                    };
                    // A metric source that answers nothing, or went stale,
                    // is shown, not failed: plugins fall back and pods are
                    // still placed.
                    let lines: String = not_ready
                        .iter()
                        .cloned()
                        .chain(missing.iter().map(|(why, _)| why.clone()))
                        .chain(s.metrics.metric_notes())
                        .map(|l| format!("{l}\n"))
                        .collect();
                    if !not_ready.is_empty() || missing.iter().any(|(_, fail)| *fail) {
                        // No cycle runs without every cache; pods of the
                        // profiles that enable a missing plugin cannot be
                        // placed.
                        (StatusCode::SERVICE_UNAVAILABLE, lines).into_response()
                    } else {
                        (StatusCode::OK, format!("ok\n{lines}")).into_response()
                    }
                }
            }),
        )
        .route("/ui", get(ui_page))
        .route("/ui/{view}", get(ui_fragment))
        .route(
            "/debug/shadow",
            get({
                let s = status.clone();
                move || async move {
                    let s = s.clone();
                    // The shadow host's state is behind std mutexes.
                    let body = tokio::task::spawn_blocking(move || s.shadow().map(|sh| sh.json()))
                        .await
                        .unwrap_or_default();
                    match body {
                        Some(v) => (
                            [(header::CONTENT_TYPE, "application/json")],
                            serde_json::to_string_pretty(&v).unwrap_or_default(),
                        )
                            .into_response(),
                        None => {
                            (StatusCode::NOT_FOUND, "no shadow is configured (wasmPlugins.shadow)\n").into_response()
                        }
                    }
                }
            }),
        )
        .route(
            "/metrics",
            get({
                let s = status.clone();
                move || async move {
                    let s = s.clone();
                    let text = tokio::task::spawn_blocking(move || s.metrics_text())
                        .await
                        .unwrap_or_default();
                    (
                        [(
                            header::CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        text,
                    )
                }
            }),
        )
        .with_state(status.clone())
        .layer(axum::middleware::from_fn_with_state(guard, guarded));
    let served = Served {
        addr: bound,
        https: !opts.plain_http,
    };
    if opts.plain_http {
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "admin server stopped");
            }
        });
    } else {
        let clients = match opts.client_ca.as_deref() {
            Some(ca) => crate::tls::ClientCerts::Optional(ca),
            None => crate::tls::ClientCerts::None,
        };
        let config = crate::tls::server_config(opts.cert.as_ref(), &crate::tls::default_names(addr), clients)?;
        let listener = crate::tls::TlsListener::new(listener, config, "admin");
        let app = app.into_make_service_with_connect_info::<crate::tls::Peer>();
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "admin server stopped");
            }
        });
    }
    tracing::info!(url = %served.url(), "admin endpoints: /healthz /livez /readyz /metrics /ui /debug/shadow");
    Ok(served)
}
