//! The admin port: `/healthz` (the scheduling loop turns, no task it
//! depends on died), `/readyz` (caches synced, plugins loaded),
//! `/metrics` (Prometheus text), `/debug/shadow` (how the shadow versions'
//! decisions compare with serving's, as JSON), `/ui` (the web view:
//! [`crate::web`]).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::daemon::Status;

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

/// Binds `addr` and serves the admin endpoints in the background.
pub async fn serve(addr: SocketAddr, status: Arc<Status>) -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {addr} for the admin port: {e}"))?;
    let bound = listener.local_addr()?;
    let app = axum::Router::new()
        .route(
            "/healthz",
            get({
                let s = status.clone();
                move || async move {
                    match s.health() {
                        Ok(()) => (StatusCode::OK, "ok".to_owned()).into_response(),
                        Err(why) => (StatusCode::INTERNAL_SERVER_ERROR, why).into_response(),
                    }
                }
            }),
        )
        .route(
            "/readyz",
            get({
                let s = status.clone();
                move || async move {
                    // The plugin host's state is behind std mutexes: read
                    // off the async workers.
                    let (ready, missing) = {
                        let s = s.clone();
                        tokio::task::spawn_blocking(move || (s.ready(), s.missing_plugins()))
                            .await
                            .unwrap_or_default()
                    };
                    // A metric source that answers nothing, or went stale,
                    // is shown, not failed: plugins fall back and pods are
                    // still placed.
                    let lines: String = missing
                        .iter()
                        .map(|(why, _)| why.clone())
                        .chain(s.metrics.metric_notes())
                        .map(|l| format!("{l}\n"))
                        .collect();
                    if !ready {
                        (StatusCode::SERVICE_UNAVAILABLE, "caches not synced").into_response()
                    } else if missing.iter().any(|(_, fail)| *fail) {
                        // Pods of the profiles that enable them cannot be placed.
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
        .with_state(status.clone());
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "admin server stopped");
        }
    });
    tracing::info!(%bound, "admin endpoints: /healthz /readyz /metrics");
    Ok(bound)
}
