//! Metric sources: each `metrics.sources[]` Prometheus query runs on its
//! own task every `interval`, off the scheduling path; its answer goes to
//! the scheduling thread as one message, which replaces the source's values
//! before the next cycle.
//!
//! A query that fails (no answer within `timeout`, an HTTP error, an answer
//! that is not Prometheus', a result that is not one series per node) is
//! logged when its reason changes and counted; the values it would have
//! replaced keep serving until `staleAfter`, then read as absent: plugins
//! fall back, scheduling goes on. Series that carry no usable value (NaN,
//! ±Inf, not a number, no node label) are dropped and named in the log.

use std::sync::Arc;

use http_body_util::{BodyExt as _, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::sync::{mpsc, watch};
use tokio_rustls::rustls;
use wasmsched_core::metrics::Series;
use wasmsched_core::metrics::config::{MetricSource, PrometheusSource};

use crate::schedule::Msg;

/// Largest answer read from Prometheus (a series per node of a large
/// cluster is a few hundred KiB).
const MAX_ANSWER_BYTES: usize = 16 << 20;

type HttpClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<bytes::Bytes>>;

/// Starts one task per source.
pub(crate) fn spawn(
    sources: &[MetricSource],
    tx: &mpsc::Sender<Msg>,
    status: &Arc<crate::status::Status>,
    stop: &watch::Receiver<bool>,
) -> anyhow::Result<Vec<tokio::task::JoinHandle<()>>> {
    let mut tasks = Vec::new();
    for s in sources {
        let Some(p) = s.prometheus.clone() else { continue };
        let client = client(&p).map_err(|e| anyhow::anyhow!("metrics source {}: {e}", s.name))?;
        status.metrics.metric_source(&s.name);
        let (name, tx, st, mut stop) = (s.name.clone(), tx.clone(), status.clone(), stop.clone());
        tasks.push(crate::daemon::supervise(status, "metric source", async move {
            let status = st;
            let mut ticker = tokio::time::interval(p.times.interval);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut last_error: Option<String> = None;
            let mut last_dropped = String::new();
            // When the source last answered with values, whether it has
            // answered with none since, and whether its values went stale.
            let mut values_at: Option<tokio::time::Instant> = None;
            let mut empty = false;
            let mut stale = false;
            loop {
                let stale_at = values_at.filter(|_| !stale).map(|t| t + p.times.stale_after);
                tokio::select! {
                    _ = ticker.tick() => {}
                    _ = stop.changed() => return,
                    _ = sleep_until_some(stale_at) => {
                        stale = true;
                        status.metrics.metric_stale(&name, true);
                        let why = format!(
                            "metric source {name}: no values for staleAfter ({:?}); plugins see none and fall back until it answers again",
                            p.times.stale_after
                        );
                        tracing::warn!(source = %name, "{why}");
                        status.metrics.metric_note(&name, Some(why));
                        continue;
                    }
                }
                let answer = match tokio::time::timeout(p.times.timeout, query(&client, &p)).await {
                    Ok(r) => r,
                    Err(_) => Err(format!("no answer within timeout ({:?})", p.times.timeout)),
                };
                match answer {
                    Ok(Answer { series, dropped }) => {
                        status.metrics.metric_success(&name, series.len());
                        if last_error.take().is_some() {
                            tracing::info!(source = %name, series = series.len(), "metric source answers again");
                        }
                        if series.is_empty() && dropped.is_empty() {
                            status.metrics.metric_empty(&name);
                            if !empty {
                                empty = true;
                                let why = format!(
                                    "metric source {name}: the query answers with no series (a misspelt metric name, or labels no series has): plugins see no values"
                                );
                                tracing::warn!(source = %name, query = %p.query, "{why}");
                                status.metrics.metric_note(&name, Some(why));
                            }
                        } else if !series.is_empty() {
                            values_at = Some(tokio::time::Instant::now());
                            if std::mem::take(&mut empty) {
                                tracing::info!(source = %name, series = series.len(), "metric source answers with series again");
                            }
                            if std::mem::take(&mut stale) {
                                status.metrics.metric_stale(&name, false);
                                tracing::info!(source = %name, series = series.len(), "metric source has fresh values again");
                            }
                            status.metrics.metric_note(&name, None);
                        }
                        if dropped != last_dropped {
                            if !dropped.is_empty() {
                                tracing::warn!(source = %name, "metric source: series dropped: {dropped}");
                            }
                            last_dropped = dropped;
                        }
                        let msg = Msg::Metrics {
                            source: name.clone(),
                            series,
                            node_label: p.node_label.clone(),
                        };
                        if tx.send(msg).await.is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        status.metrics.metric_error(&name);
                        if last_error.as_deref() != Some(e.as_str()) {
                            tracing::warn!(
                                source = %name,
                                url = %p.url,
                                "metric source query failed: {e}; its last values serve until staleAfter ({:?}), then plugins see none",
                                p.times.stale_after
                            );
                            last_error = Some(e);
                        }
                    }
                }
            }
        }));
    }
    Ok(tasks)
}

/// Sleeps until `at`, or forever when there is none.
async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// The HTTP(S) client of one source: system roots, or `caFile`, or no
/// verification (`insecureSkipVerify`).
fn client(p: &PrometheusSource) -> Result<HttpClient, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let tls = if p.insecure_skip_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(crate::tls::AnyCertificate(provider)))
            .with_no_client_auth()
    } else {
        let mut roots = rustls::RootCertStore::empty();
        match &p.ca_file {
            Some(path) => {
                use rustls_pki_types::pem::PemObject as _;
                let certs =
                    rustls_pki_types::CertificateDer::pem_file_iter(path).map_err(|e| format!("caFile {path}: {e}"))?;
                for c in certs {
                    roots
                        .add(c.map_err(|e| format!("caFile {path}: {e}"))?)
                        .map_err(|e| format!("caFile {path}: {e}"))?;
                }
            }
            None => {
                for c in rustls_native_certs::load_native_certs().certs {
                    let _ = roots.add(c);
                }
            }
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .build();
    Ok(Client::builder(TokioExecutor::new()).build(https))
}

/// A source's usable series, and what was dropped (empty: nothing).
#[derive(Debug, PartialEq)]
struct Answer {
    series: Vec<Series>,
    dropped: String,
}

async fn query(client: &HttpClient, p: &PrometheusSource) -> Result<Answer, String> {
    let url = format!(
        "{}/api/v1/query?query={}",
        p.url.trim_end_matches('/'),
        encode(&p.query)
    );
    let mut req = http::Request::get(&url).header(http::header::ACCEPT, "application/json");
    if let Some(f) = &p.bearer_token_file {
        // Read every time: a projected service account token rotates.
        // A small local file: reading it does not hold the runtime up.
        let token = std::fs::read_to_string(f).map_err(|e| format!("bearerTokenFile {f}: {e}"))?;
        req = req.header(http::header::AUTHORIZATION, format!("Bearer {}", token.trim()));
    }
    let req = req
        .body(Full::new(bytes::Bytes::new()))
        .map_err(|e| format!("bad request URL {url}: {e}"))?;
    let resp = client.request(req).await.map_err(|e| error_chain(&e))?;
    let status = resp.status();
    let html = resp
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    let body = Limited::new(resp.into_body(), MAX_ANSWER_BYTES)
        .collect()
        .await
        .map_err(|e| format!("reading the answer: {e}"))?
        .to_bytes();
    // An error page says what was asked (a wrong path is the usual cause).
    parse_answer(status, html, &body, &p.node_label, wasmsched_wasm::unix_ms()).map_err(|e| {
        if status.is_success() {
            e
        } else {
            format!("{e} (GET {url})")
        }
    })
}

/// An error with its causes (hyper's own message is only "client error").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}

/// Percent-encodes a query parameter.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Reads Prometheus' answer to an instant query: a vector of series, each
/// one node's value. `now_ms` stamps series without a usable timestamp.
fn parse_answer(
    status: http::StatusCode,
    html: bool,
    body: &[u8],
    node_label: &str,
    now_ms: i64,
) -> Result<Answer, String> {
    let text = || {
        let t: String = String::from_utf8_lossy(body)
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .take(160)
            .collect();
        t.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let v: serde_json::Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) if html => {
            return Err(format!(
                "HTTP {status} with an HTML page, not Prometheus' JSON: {}",
                text()
            ));
        }
        Err(e) => return Err(format!("HTTP {status}, not Prometheus' JSON ({e}): {}", text())),
    };
    let s = |p: &str| v.pointer(p).and_then(serde_json::Value::as_str);
    if s("/status") != Some("success") {
        return Err(format!(
            "HTTP {status}: Prometheus says {}: {}",
            s("/errorType").unwrap_or("error"),
            s("/error").unwrap_or("(no message)")
        ));
    }
    match s("/data/resultType") {
        Some("vector") => {}
        other => {
            return Err(format!(
                "the query returns {}, not a vector of one series per node (an instant vector, e.g. `avg by ({node_label}) (...)`)",
                other.unwrap_or("nothing")
            ));
        }
    }
    let result = v
        .pointer("/data/result")
        .and_then(serde_json::Value::as_array)
        .ok_or("the answer has no data.result list")?;
    let mut series = Vec::with_capacity(result.len());
    let (mut no_label, mut not_numbers, mut not_finite) = (0usize, Vec::new(), Vec::new());
    for r in result {
        let Some(node) = r
            .pointer(&format!("/metric/{}", pointer_escape(node_label)))
            .and_then(|v| v.as_str())
        else {
            no_label += 1;
            continue;
        };
        let at_ms = r
            .pointer("/value/0")
            .and_then(serde_json::Value::as_f64)
            .map_or(now_ms, |t| (t * 1000.0) as i64);
        let raw = r.pointer("/value/1").and_then(serde_json::Value::as_str);
        match raw.and_then(wasmsched_core::metrics::snapshot::parse_value) {
            Some(value) if value.is_finite() => series.push(Series {
                node: node.to_owned(),
                value,
                at_ms,
                since: Default::default(),
            }),
            Some(_) => not_finite.push(format!("{node}={}", raw.unwrap_or_default())),
            None => not_numbers.push(format!("{node}={}", raw.unwrap_or("(none)"))),
        }
    }
    let mut dropped = Vec::new();
    if no_label > 0 {
        dropped.push(format!("{no_label} without the label {node_label:?}"));
    }
    if !not_finite.is_empty() {
        dropped.push(format!("{} not finite ({})", not_finite.len(), first_few(&not_finite)));
    }
    if !not_numbers.is_empty() {
        dropped.push(format!(
            "{} not numbers ({})",
            not_numbers.len(),
            first_few(&not_numbers)
        ));
    }
    Ok(Answer {
        series,
        dropped: dropped.join("; "),
    })
}

/// At most five items of a list for a log line, and how many more.
fn first_few(v: &[String]) -> String {
    let mut l = v.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    if v.len() > 5 {
        l.push_str(&format!(" and {} more", v.len() - 5));
    }
    l
}

/// What an answer's series did not give a node, for the log (empty:
/// every series matched one node).
pub(crate) fn unmatched(r: &wasmsched_core::metrics::InstallReport, node_label: &str) -> String {
    let mut out = Vec::new();
    if !r.unmatched.is_empty() {
        let mut names = r.unmatched.clone();
        names.sort_unstable();
        let mut line = format!("no node matches {}", first_few(&names));
        // `host:port` values: an exporter's address, not the node's.
        if names.iter().any(|n| {
            n.rsplit_once(':')
                .is_some_and(|(_, port)| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
        }) {
            line.push_str(&format!(
                " (values of {node_label} are matched to node names and to the nodes' addresses, the port dropped: when the exporter does not run on the node, set the source's nodeLabel to a label holding the node's name or IP)"
            ));
        }
        out.push(line);
    }
    for (node, n) in &r.ambiguous {
        out.push(format!(
            "{n} series for node {node} (none used; aggregate by the node label)"
        ));
    }
    out.join("; ")
}

/// A JSON pointer token (`~` and `/` escaped).
fn pointer_escape(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::StatusCode;

    fn parse(status: u16, html: bool, body: &str) -> Result<Answer, String> {
        parse_answer(StatusCode::from_u16(status).unwrap(), html, body.as_bytes(), "node", 5)
    }

    #[test]
    fn bad_answers_are_errors_or_dropped_series_with_a_reason() {
        let ok = parse(
            200,
            false,
            r#"{"status":"success","data":{"resultType":"vector","result":[
              {"metric":{"node":"a"},"value":[1700000000.5,"0.25"]},
              {"metric":{"node":"b"},"value":[1700000000.5,"NaN"]},
              {"metric":{"node":"c"},"value":[1700000000.5,"+Inf"]},
              {"metric":{"node":"d"},"value":[1700000000.5,"fast"]},
              {"metric":{"instance":"x:9100"},"value":[1700000000.5,"1"]},
              {"metric":{"node":"a"},"value":[1700000000.5,"0.5"]}]}}"#,
        )
        .unwrap();
        assert_eq!(
            ok.series
                .iter()
                .map(|s| (s.node.as_str(), s.value, s.at_ms))
                .collect::<Vec<_>>(),
            [("a", 0.25, 1_700_000_000_500), ("a", 0.5, 1_700_000_000_500)],
            "two series for one node reach the scheduler, which keeps neither"
        );
        assert_eq!(
            ok.dropped,
            "1 without the label \"node\"; 2 not finite (b=NaN, c=+Inf); 1 not numbers (d=fast)"
        );
        for (status, html, body, want) in [
            (
                500,
                false,
                "internal error",
                "HTTP 500 Internal Server Error, not Prometheus' JSON",
            ),
            (
                502,
                true,
                "<html><body><h1>502 Bad Gateway</h1></body></html>",
                "HTTP 502 Bad Gateway with an HTML page, not Prometheus' JSON: <html><body><h1>502 Bad Gateway",
            ),
            (
                400,
                false,
                r#"{"status":"error","errorType":"bad_data","error":"parse error at char 3"}"#,
                "HTTP 400 Bad Request: Prometheus says bad_data: parse error at char 3",
            ),
            (
                200,
                false,
                r#"{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}"#,
                "the query returns scalar, not a vector of one series per node",
            ),
        ] {
            let e = parse(status, html, body).unwrap_err();
            assert!(e.starts_with(want), "{body}: {e}");
        }
        assert_eq!(
            encode("avg by (node) (x{a=\"b\"})"),
            "avg%20by%20%28node%29%20%28x%7Ba%3D%22b%22%7D%29"
        );
    }
}
