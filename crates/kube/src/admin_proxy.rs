//! `wasmsched ui`: the web view of a scheduler in a cluster, for a
//! person's browser. The admin port wants a bearer token on every request
//! but the probes', and a browser has no way to present one; so this
//! serves the view on a loopback port (plain HTTP, `Host` checked, as
//! `--admin-plain-http`) and forwards each `GET` to the admin port
//! (usually through `kubectl port-forward`) with the person's token, which
//! the scheduler then reviews and authorizes as any other.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::admin_auth::{Access, Guard};

/// The largest answer forwarded (a page of the web view is well under).
const MAX_ANSWER_BYTES: usize = 64 << 20;

/// What the proxy forwards, and to where.
#[derive(Debug, Clone)]
pub struct ProxyOptions {
    /// The loopback address served to the browser.
    pub listen: SocketAddr,
    /// The admin port, `https://HOST:PORT`.
    pub upstream: String,
    /// The file holding the bearer token presented (read at each request:
    /// a projected token rotates).
    pub token_file: PathBuf,
    /// The CA that signed the admin port's certificate (none: any
    /// certificate, as for the self-signed one a replica makes).
    pub ca: Option<PathBuf>,
}

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<bytes::Bytes>>;

struct Proxy {
    opts: ProxyOptions,
    client: HttpsClient,
    guard: Guard,
}

/// Serves the proxy in the background; returns the address bound.
pub async fn serve(opts: ProxyOptions) -> anyhow::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    anyhow::ensure!(
        opts.listen.ip().is_loopback(),
        "--listen {}: the web view is served without authentication here, so only on a loopback address",
        opts.listen
    );
    anyhow::ensure!(
        opts.upstream.starts_with("https://") || opts.upstream.starts_with("http://"),
        "--admin {:?} is not a URL like https://127.0.0.1:10259",
        opts.upstream
    );
    std::fs::metadata(&opts.token_file)
        .map_err(|e| anyhow::anyhow!("--token-file {}: {e}", opts.token_file.display()))?;
    let tls = crate::tls::client_config(opts.ca.as_deref())?;
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config((*tls).clone())
        .https_or_http()
        .enable_http1()
        .build();
    let client = Client::builder(TokioExecutor::new()).build(https);
    let listener = tokio::net::TcpListener::bind(opts.listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", opts.listen))?;
    let bound = listener.local_addr()?;
    let proxy = Arc::new(Proxy {
        opts,
        client,
        guard: Guard::new(Access::Loopback),
    });
    let app = axum::Router::new().fallback(move |req: axum::extract::Request| forward(proxy.clone(), req));
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "the web view proxy stopped");
        }
    });
    Ok((bound, task))
}

async fn forward(proxy: Arc<Proxy>, req: axum::extract::Request) -> Response {
    if let Some(refused) = proxy
        .guard
        .check(req.method(), req.uri().path(), req.headers(), None)
        .await
    {
        return refused;
    }
    if req.method() != http::Method::GET {
        return (StatusCode::METHOD_NOT_ALLOWED, "the web view is read-only\n").into_response();
    }
    let target = format!(
        "{}{}",
        proxy.opts.upstream.trim_end_matches('/'),
        req.uri().path_and_query().map_or("/", |p| p.as_str())
    );
    let token = match std::fs::read_to_string(&proxy.opts.token_file) {
        Ok(t) => t.trim().to_owned(),
        Err(e) => {
            return (
                StatusCode::BAD_GATEWAY,
                format!("--token-file {}: {e}\n", proxy.opts.token_file.display()),
            )
                .into_response();
        }
    };
    let upstream = http::Request::get(&target)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Full::new(bytes::Bytes::new()));
    let upstream = match upstream {
        Ok(r) => r,
        Err(e) => return (StatusCode::BAD_REQUEST, format!("{target}: {e}\n")).into_response(),
    };
    let resp = match proxy.client.request(upstream).await {
        Ok(r) => r,
        Err(e) => {
            return (
                StatusCode::BAD_GATEWAY,
                format!("the admin port {} did not answer: {e}\n", proxy.opts.upstream),
            )
                .into_response();
        }
    };
    let (parts, body) = resp.into_parts();
    let body = match Limited::new(body, MAX_ANSWER_BYTES).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return (StatusCode::BAD_GATEWAY, format!("reading the answer: {e}\n")).into_response(),
    };
    // The admin port's own headers (type, security policy) go through.
    let mut out = Response::new(axum::body::Body::from(body));
    *out.status_mut() = parts.status;
    for (k, v) in &parts.headers {
        if k != header::CONNECTION && k != header::TRANSFER_ENCODING && k != header::CONTENT_LENGTH {
            out.headers_mut().append(k, v.clone());
        }
    }
    out
}
