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
//! An answer is read series by series, at most [`MAX_SERIES`] of them (a
//! larger one is refused); a sample stamped in the future reads as taken
//! when the answer came; what the endpoint says is escaped before a log
//! line shows it.

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

/// Most series (elements of `data.result`) one answer may hold: one per
/// node of a cluster twice the largest benchmarked (50 000 nodes). A larger
/// answer is refused whole; what is past the limit is counted, not kept.
const MAX_SERIES: usize = 100_000;

/// How far ahead of this host's clock a sample's timestamp may be (clock
/// skew) before the log says so. Any later timestamp reads as the answer's
/// time: one in the future would keep its value from going stale.
const MAX_SKEW_MS: i64 = 60_000;

/// Longest text of an answer (a label value, a value, an error) put into
/// a log line, in bytes, once escaped.
const MAX_SHOWN_BYTES: usize = 256;

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
            // A clock ahead of ours is said once: it does not change by itself.
            let mut told_future = false;
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
                    Ok(Answer { series, dropped, future }) => {
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
                        if !future.is_empty() && !std::mem::replace(&mut told_future, true) {
                            tracing::warn!(source = %name, "metric source: {future}");
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

/// A source's usable series, what was dropped, and the series stamped
/// in the future (empty: none).
#[derive(Debug, PartialEq)]
struct Answer {
    series: Vec<Series>,
    dropped: String,
    future: String,
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
/// one node's value. `now_ms` stamps series without a usable timestamp, and
/// those stamped after it (a sample is never newer than its answer).
///
/// The answer is read into typed values, never a JSON tree: what is kept
/// is the node label's value and the sample of each series, at most
/// [`MAX_SERIES`] of them, whatever else the answer holds.
fn parse_answer(
    status: http::StatusCode,
    html: bool,
    body: &[u8],
    node_label: &str,
    now_ms: i64,
) -> Result<Answer, String> {
    let text = || {
        let t: String = String::from_utf8_lossy(&body[..body.len().min(1024)])
            .chars()
            .take(160)
            .collect();
        shown(&t.split_whitespace().collect::<Vec<_>>().join(" "))
    };
    let wire: Wire = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) if html => {
            return Err(format!(
                "HTTP {status} with an HTML page, not Prometheus' JSON: {}",
                text()
            ));
        }
        Err(e) => {
            return Err(format!(
                "HTTP {status}, not Prometheus' JSON ({}): {}",
                shown(&e.to_string()),
                text()
            ));
        }
    };
    if wire.status.as_deref() != Some("success") {
        return Err(format!(
            "HTTP {status}: Prometheus says {}: {}",
            wire.error_type.as_deref().map_or("error".into(), shown),
            wire.error.as_deref().map_or("(no message)".into(), shown)
        ));
    }
    let data = wire.data.unwrap_or_default();
    match data.result_type.as_deref() {
        Some("vector") => {}
        other => {
            return Err(format!(
                "the query returns {}, not a vector of one series per node (an instant vector, e.g. `avg by ({node_label}) (...)`)",
                other.map_or("nothing".into(), shown)
            ));
        }
    }
    let result = data.result.ok_or("the answer has no data.result list")?;
    let mut read = Read {
        node_label,
        now_ms,
        ..Read::default()
    };
    serde::de::DeserializeSeed::deserialize(&mut read, &mut serde_json::Deserializer::from_str(result.get()))
        .map_err(|e| format!("data.result is not a list of series ({})", shown(&e.to_string())))?;
    if read.count > MAX_SERIES {
        return Err(format!(
            "the answer has {} series, more than the {MAX_SERIES} a source takes: refused (one series per node is what plugins read, e.g. `avg by ({node_label}) (...)`)",
            read.count
        ));
    }
    let mut dropped = Vec::new();
    if read.no_label > 0 {
        dropped.push(format!("{} without the label {node_label:?}", read.no_label));
    }
    if read.not_finite.total > 0 {
        dropped.push(format!("{} not finite ({})", read.not_finite.total, read.not_finite));
    }
    if read.not_numbers.total > 0 {
        dropped.push(format!("{} not numbers ({})", read.not_numbers.total, read.not_numbers));
    }
    let future = match read.ahead_ms {
        0 => String::new(),
        ms => format!(
            "{} series stamped up to {} s ahead of this host's clock, more than the {} s of skew allowed ({}): read as taken when the answer came, so they go stale after staleAfter",
            read.future.total,
            (ms + 999) / 1000,
            MAX_SKEW_MS / 1000,
            read.future
        ),
    };
    Ok(Answer {
        series: read.series,
        dropped: dropped.join("; "),
        future,
    })
}

/// Text of an answer (a label value, an error) as a log line may show it:
/// control characters and bidirectional overrides escaped, cut.
fn shown(s: &str) -> String {
    wasmsched_wasm::text::guest_text(s, MAX_SHOWN_BYTES)
}

/// Prometheus' answer as read: `data.result` is kept as its text, read
/// series by series once the answer is known to be a vector.
#[derive(serde::Deserialize)]
struct Wire<'a> {
    status: Option<String>,
    #[serde(rename = "errorType")]
    error_type: Option<String>,
    error: Option<String>,
    #[serde(borrow)]
    data: Option<WireData<'a>>,
}

#[derive(serde::Deserialize, Default)]
struct WireData<'a> {
    #[serde(rename = "resultType")]
    result_type: Option<String>,
    #[serde(borrow)]
    result: Option<&'a serde_json::value::RawValue>,
}

/// A few of a list's items for a log line (escaped), and how many there
/// were.
#[derive(Default)]
struct Examples {
    shown: Vec<String>,
    total: usize,
}

impl Examples {
    fn add(&mut self, item: impl FnOnce() -> String) {
        if self.shown.len() < 5 {
            self.shown.push(item());
        }
        self.total += 1;
    }
}

impl std::fmt::Display for Examples {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown.join(", "))?;
        if self.total > self.shown.len() {
            write!(f, " and {} more", self.total - self.shown.len())?;
        }
        Ok(())
    }
}

/// `data.result` read series by series: past [`MAX_SERIES`] elements are
/// only counted.
#[derive(Default)]
struct Read<'a> {
    node_label: &'a str,
    now_ms: i64,
    /// Elements of the list.
    count: usize,
    series: Vec<Series>,
    no_label: usize,
    not_finite: Examples,
    not_numbers: Examples,
    /// Series stamped beyond the allowed skew, and the farthest ahead.
    future: Examples,
    ahead_ms: i64,
}

impl<'de> serde::de::DeserializeSeed<'de> for &mut Read<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for &mut Read<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of series")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while self.count < MAX_SERIES {
            let Some(item) = seq.next_element_seed(Item(self.node_label))? else {
                return Ok(());
            };
            self.count += 1;
            self.add(item);
        }
        // Too many: the rest is counted, not kept (the answer is refused).
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
            self.count += 1;
        }
        Ok(())
    }
}

impl Read<'_> {
    fn add(&mut self, (node, at, raw): (Option<String>, Atom, Atom)) {
        let Some(node) = node else {
            self.no_label += 1;
            return;
        };
        let at_ms = match at {
            Atom::Number(t) => (t * 1000.0) as i64,
            _ => self.now_ms,
        };
        // A clock ahead of ours would keep the value from ever going stale.
        let ahead = at_ms.saturating_sub(self.now_ms);
        if ahead > MAX_SKEW_MS {
            self.ahead_ms = self.ahead_ms.max(ahead);
            self.future.add(|| shown(&node));
        }
        let at_ms = at_ms.min(self.now_ms);
        let raw = match raw {
            Atom::Text(s) => Some(s),
            _ => None,
        };
        match raw.as_deref().and_then(wasmsched_core::metrics::snapshot::parse_value) {
            Some(value) if value.is_finite() => self.series.push(Series {
                node,
                value,
                at_ms,
                since: Default::default(),
            }),
            Some(_) => self
                .not_finite
                .add(|| format!("{}={}", shown(&node), shown(raw.as_deref().unwrap_or_default()))),
            None => self
                .not_numbers
                .add(|| format!("{}={}", shown(&node), raw.as_deref().map_or("(none)".into(), shown))),
        }
    }
}

/// One element of `data.result`: the node label's value, and the sample's
/// timestamp and value (`{"metric": {...}, "value": [t, "v"]}`); anything
/// else in it is skipped unread.
struct Item<'a>(&'a str);

impl<'de> serde::de::DeserializeSeed<'de> for Item<'_> {
    type Value = (Option<String>, Atom, Atom);
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Item<'_> {
    type Value = (Option<String>, Atom, Atom);
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a series")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = (None, Atom::Other, Atom::Other);
        while let Some(key) = map.next_key::<ItemKey>()? {
            match key {
                ItemKey::Metric => out.0 = map.next_value_seed(Labels(self.0))?,
                ItemKey::Value => {
                    let Pair(at, raw) = map.next_value()?;
                    (out.1, out.2) = (at, raw);
                }
                ItemKey::Other => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(out)
    }
}

#[derive(serde::Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum ItemKey {
    Metric,
    Value,
    #[serde(other)]
    Other,
}

/// A series' labels: the value of the node label (`.0`), if a string; the
/// others are compared with its name and skipped, never kept.
struct Labels<'a>(&'a str);

impl<'de> serde::de::DeserializeSeed<'de> for Labels<'_> {
    type Value = Option<String>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Labels<'_> {
    type Value = Option<String>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a series' labels")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut node = None;
        while let Some(is_node) = map.next_key_seed(KeyIs(self.0))? {
            if is_node {
                node = match map.next_value()? {
                    Atom::Text(s) => Some(s),
                    _ => None,
                };
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(node)
    }
}

/// A map key compared with `.0`, not kept.
struct KeyIs<'a>(&'a str);

impl<'de> serde::de::DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl serde::de::Visitor<'_> for KeyIs<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a label name")
    }
    fn visit_str<E>(self, v: &str) -> Result<bool, E> {
        Ok(v == self.0)
    }
}

/// A sample, `[timestamp, "value"]`: its first two elements, the rest
/// skipped.
struct Pair(Atom, Atom);

impl<'de> serde::Deserialize<'de> for Pair {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(PairVisitor)
    }
}

struct PairVisitor;

impl<'de> serde::de::Visitor<'de> for PairVisitor {
    type Value = Pair;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a sample [timestamp, value]")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Pair, A::Error> {
        let at = seq.next_element()?.unwrap_or(Atom::Other);
        let raw = seq.next_element()?.unwrap_or(Atom::Other);
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(Pair(at, raw))
    }
}

/// A JSON value where a number or a string is expected; any other value
/// is skipped unread.
enum Atom {
    Number(f64),
    Text(String),
    Other,
}

impl<'de> serde::Deserialize<'de> for Atom {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(AtomVisitor)
    }
}

struct AtomVisitor;

impl<'de> serde::de::Visitor<'de> for AtomVisitor {
    type Value = Atom;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a number or a string")
    }
    fn visit_f64<E>(self, v: f64) -> Result<Atom, E> {
        Ok(Atom::Number(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Atom, E> {
        Ok(Atom::Number(v as f64))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Atom, E> {
        Ok(Atom::Number(v as f64))
    }
    fn visit_str<E>(self, v: &str) -> Result<Atom, E> {
        Ok(Atom::Text(v.to_owned()))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Atom, E> {
        Ok(Atom::Other)
    }
    fn visit_unit<E>(self) -> Result<Atom, E> {
        Ok(Atom::Other)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Atom, A::Error> {
        serde::de::IgnoredAny.visit_seq(seq)?;
        Ok(Atom::Other)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Atom, A::Error> {
        serde::de::IgnoredAny.visit_map(map)?;
        Ok(Atom::Other)
    }
}

/// At most five items of a list for a log line (escaped: they are label
/// values), and how many more.
fn first_few(v: &[String]) -> String {
    let mut l = v.iter().take(5).map(|s| shown(s)).collect::<Vec<_>>().join(", ");
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
            "{n} series for node {} (none used; aggregate by the node label)",
            shown(node)
        ));
    }
    out.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::StatusCode;

    fn parse(status: u16, html: bool, body: &str) -> Result<Answer, String> {
        // A minute after the samples below were taken.
        parse_answer(
            StatusCode::from_u16(status).unwrap(),
            html,
            body.as_bytes(),
            "node",
            1_700_000_060_000,
        )
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

    #[test]
    fn an_answer_with_too_many_series_is_refused_without_keeping_them() {
        let answer =
            |list: &str| format!(r#"{{"status":"success","data":{{"resultType":"vector","result":[{list}]}}}}"#);
        // The largest answer read (16 MiB) of series without labels: a tree
        // of JSON values of half a GiB, before.
        let n = MAX_ANSWER_BYTES / 3;
        let mut list = "{},".repeat(n);
        list.pop();
        let e = parse(200, false, &answer(&list)).unwrap_err();
        assert_eq!(
            e,
            format!(
                "the answer has {n} series, more than the 100000 a source takes: refused (one series per node is what plugins read, e.g. `avg by (node) (...)`)"
            )
        );
        let series = |i| format!(r#"{{"metric":{{"node":"n{i}","job":"x"}},"value":[1700000000,"{i}"]}}"#);
        let at_limit: Vec<String> = (0..MAX_SERIES).map(series).collect();
        let body = |v: &[String]| answer(&v.join(","));
        assert_eq!(parse(200, false, &body(&at_limit)).unwrap().series.len(), MAX_SERIES);
        let over: Vec<String> = (0..=MAX_SERIES).map(series).collect();
        assert!(
            parse(200, false, &body(&over))
                .unwrap_err()
                .contains("100001 series, more than the 100000")
        );
        // What a series holds besides its node and sample is skipped.
        let ok = parse(
            200,
            false,
            &answer(r#"{"metric":{"job":[0,0,0],"node":"a"},"value":[1,"2",[0,0]],"histogram":{"x":[0]}}"#),
        )
        .unwrap();
        assert_eq!(ok.series.len(), 1);
        assert_eq!((ok.series[0].node.as_str(), ok.series[0].value), ("a", 2.0));
    }

    #[test]
    fn a_sample_stamped_in_the_future_reads_as_taken_now() {
        let now = 1_700_000_000_000;
        let body = format!(
            r#"{{"status":"success","data":{{"resultType":"vector","result":[
              {{"metric":{{"node":"past"}},"value":[{},"1"]}},
              {{"metric":{{"node":"skewed"}},"value":[{},"1"]}},
              {{"metric":{{"node":"ahead"}},"value":[{},"1"]}},
              {{"metric":{{"node":"year-2100"}},"value":[4102444800,"1"]}}]}}}}"#,
            (now - 5_000) as f64 / 1000.0,
            (now + 30_000) as f64 / 1000.0,
            (now + 3_600_000) as f64 / 1000.0,
        );
        let a = parse_answer(StatusCode::OK, false, body.as_bytes(), "node", now).unwrap();
        let at: Vec<(&str, i64)> = a.series.iter().map(|s| (s.node.as_str(), s.at_ms)).collect();
        assert_eq!(
            at,
            [
                ("past", now - 5_000),
                ("skewed", now),
                ("ahead", now),
                ("year-2100", now)
            ]
        );
        assert_eq!(
            a.future,
            format!(
                "2 series stamped up to {} s ahead of this host's clock, more than the 60 s of skew allowed (ahead, year-2100): read as taken when the answer came, so they go stale after staleAfter",
                (4_102_444_800_000 - now) / 1000
            )
        );
        let within = parse_answer(StatusCode::OK, false, body.replace("3600", "0").as_bytes(), "node", now);
        assert!(!within.unwrap().future.contains("ahead,"));
    }

    #[test]
    fn what_an_endpoint_says_is_escaped_before_it_is_logged() {
        let ok = parse(
            200,
            false,
            r#"{"status":"success","data":{"resultType":"vector","result":[
              {"metric":{"node":"a\nINFO forged"},"value":[1,"fast\u001b[31m"]},
              {"metric":{"node":"b\u202e"},"value":[1,"NaN"]}]}}"#,
        )
        .unwrap();
        assert_eq!(
            ok.dropped,
            r"1 not finite (b\u{202e}=NaN); 1 not numbers (a\nINFO forged=fast\u{1b}[31m)"
        );
        let e = parse(
            400,
            false,
            r#"{"status":"error","errorType":"bad\rdata","error":"line\nWARN forged"}"#,
        )
        .unwrap_err();
        assert_eq!(e, r"HTTP 400 Bad Request: Prometheus says bad\rdata: line\nWARN forged");
        let e = parse(200, false, r#"{"status":"success","data":{"resultType":"x\ny"}}"#).unwrap_err();
        assert!(e.starts_with(r"the query returns x\ny, not"), "{e}");
        let long = "x".repeat(10_000);
        let e = parse(200, false, &format!(r#"{{"status":"error","error":"{long}"}}"#)).unwrap_err();
        assert!(e.len() < MAX_SHOWN_BYTES + 64, "{e}");
        let report = wasmsched_core::metrics::InstallReport {
            unmatched: vec!["evil\n2026-01-01 ERROR forged".into()],
            ambiguous: vec![("c\u{1b}[2J".into(), 2)],
            ..Default::default()
        };
        assert_eq!(
            unmatched(&report, "node"),
            r"no node matches evil\n2026-01-01 ERROR forged; 2 series for node c\u{1b}[2J (none used; aggregate by the node label)"
        );
    }
}
