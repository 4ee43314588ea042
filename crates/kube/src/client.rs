//! The Kubernetes client as the configuration's `clientConnection` says:
//! which kubeconfig, and a token bucket of `qps` requests per second with
//! `burst` (client-go's `flowcontrol.NewTokenBucketRateLimiter`, here
//! `governor`'s GCRA, which admits the same sequences) in front of every
//! request, watches and lists included, as client-go's rate limiter is.
//!
//! A request that is not a watch is also bounded in time: a list sent on a
//! connection that went half-open would otherwise wait for the kernel's
//! retransmissions (a quarter of an hour) with the cache it refills frozen.
//! Watches have kube-runtime's idle timeout instead.

use std::future::Future;
use std::num::NonZeroU32;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use serde::Deserialize;

/// `clientConnection` of a `KubeSchedulerConfiguration`, defaulted as
/// kube-scheduler defaults it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientConnection {
    /// Kubeconfig file; `None`: the command line's, else in-cluster.
    pub kubeconfig: Option<std::path::PathBuf>,
    /// Requests per second; `None`: unlimited (a negative `qps`, as in client-go).
    pub qps: Option<f32>,
    /// Requests that may be sent at once above `qps`.
    pub burst: u32,
    /// Longest a request other than a watch waits for its answer
    /// ([`REQUEST_TIMEOUT`]; not a field of the configuration).
    pub request_timeout: Duration,
}

impl Default for ClientConnection {
    fn default() -> Self {
        // kube-scheduler's defaults (`SetDefaults_KubeSchedulerConfiguration`).
        Self {
            kubeconfig: None,
            qps: Some(50.0),
            burst: 100,
            request_timeout: REQUEST_TIMEOUT,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Raw {
    kubeconfig: Option<String>,
    accept_content_types: Option<String>,
    content_type: Option<String>,
    qps: Option<f32>,
    burst: Option<i64>,
}

/// The only media type the client speaks.
const JSON: &str = "application/json";

impl ClientConnection {
    /// Reads `clientConnection`; errors name the field. What is not
    /// implemented (protobuf) is refused, not ignored.
    pub fn from_config(v: Option<&serde_json::Value>) -> anyhow::Result<Self> {
        let mut c = Self::default();
        let Some(v) = v else {
            return Ok(c);
        };
        let raw: Raw = serde_path_to_error::deserialize(v)
            .map_err(|e| anyhow::anyhow!("clientConnection.{}: {}", e.path(), e.inner()))?;
        if let Some(t) = raw.content_type.as_deref().filter(|t| !t.is_empty() && *t != JSON) {
            anyhow::bail!(
                "clientConnection.contentType: {t:?} is not supported: wasmsched's client sends {JSON} only (leave it empty or set {JSON:?})"
            );
        }
        if let Some(t) = raw.accept_content_types.as_deref().filter(|t| !t.is_empty())
            && let Some(other) = t.split(',').map(str::trim).find(|m| *m != JSON)
        {
            anyhow::bail!(
                "clientConnection.acceptContentTypes: {other:?} is not supported: wasmsched's client reads {JSON} only (leave it empty or set {JSON:?})"
            );
        }
        if let Some(b) = raw.burst {
            // component-base's ValidateClientConnectionConfiguration.
            if b < 0 {
                anyhow::bail!("clientConnection.burst: Invalid value: {b}: must be non-negative");
            }
            if b > 0 {
                c.burst = u32::try_from(b).map_err(|_| anyhow::anyhow!("clientConnection.burst: {b} is too large"))?;
            }
        }
        match raw.qps {
            None => {}
            Some(q) if q.is_nan() => anyhow::bail!("clientConnection.qps: must be a number"),
            // 0 takes the default, as kube-scheduler's defaulting does.
            Some(0.0) => {}
            Some(q) if q < 0.0 => c.qps = None,
            Some(q) => c.qps = Some(q),
        }
        c.kubeconfig = raw.kubeconfig.filter(|k| !k.is_empty()).map(Into::into);
        Ok(c)
    }

    /// A fresh token bucket for one client (`None`: unlimited).
    fn limiter(&self) -> Option<Arc<DefaultDirectRateLimiter>> {
        let qps = self.qps?;
        // GCRA's period per token is 1/qps; the bucket holds `burst`.
        let period = Duration::from_secs_f64(1.0 / f64::from(qps));
        let burst = NonZeroU32::new(self.burst.max(1))?;
        let quota = Quota::with_period(period)?.allow_burst(burst);
        Some(Arc::new(RateLimiter::direct(quota)))
    }
}

/// Longest a request other than a watch may wait for its answer's headers.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Longest a connection may go without a byte while an answer is awaited
/// or read: a list whose body stalls, or a watch gone silent, is given up
/// after this and retried on a new connection. A healthy watch is never
/// silent this long: the API server ends it after [`WATCH_TIMEOUT_SECONDS`]
/// (with a bookmark just before). kube-rs's builder makes its own TCP
/// connector, whose keepalive cannot be set; this bound covers what it
/// would find (a peer gone) and what it would not (a peer that stopped
/// sending).
pub const READ_TIMEOUT: Duration = Duration::from_secs(45);

/// Watches are asked to end after this many seconds (`timeoutSeconds`),
/// then resumed from their last resourceVersion without a list, so that
/// no healthy watch stays silent for [`READ_TIMEOUT`].
pub const WATCH_TIMEOUT_SECONDS: u32 = 30;

/// A client over `config` with its own token bucket. kube-scheduler makes
/// two clients from one configuration, one for events, each with its own
/// budget; call this once for each.
pub fn build(mut config: kube::Config, connection: &ClientConnection) -> Result<kube::Client, kube::Error> {
    config.read_timeout = Some(READ_TIMEOUT);
    config.write_timeout = Some(READ_TIMEOUT);
    let layer = ThrottleLayer {
        limiter: connection.limiter(),
        timeout: connection.request_timeout,
    };
    Ok(kube::client::ClientBuilder::try_from(config)?
        .with_layer(&layer)
        .build())
}

/// The tower layer that throttles and bounds requests.
#[derive(Clone)]
struct ThrottleLayer {
    limiter: Option<Arc<DefaultDirectRateLimiter>>,
    timeout: Duration,
}

impl<S> tower_layer::Layer<S> for ThrottleLayer {
    type Service = Throttle<S>;

    fn layer(&self, inner: S) -> Throttle<S> {
        Throttle {
            inner,
            limiter: self.limiter.clone(),
            timeout: self.timeout,
            waiting: None,
            admitted: false,
        }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Waits for a token in `poll_ready`, so that requests leave in the order
/// they were made (kube's client puts a buffer in front of its stack, whose
/// worker polls readiness one request at a time).
struct Throttle<S> {
    inner: S,
    limiter: Option<Arc<DefaultDirectRateLimiter>>,
    timeout: Duration,
    waiting: Option<BoxFuture<()>>,
    admitted: bool,
}

fn is_watch(uri: &http::Uri) -> bool {
    uri.query()
        .is_some_and(|q| q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1"))
}

impl<S, B> tower_service::Service<http::Request<B>> for Throttle<S>
where
    S: tower_service::Service<http::Request<B>>,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = BoxFuture<Result<S::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if !self.admitted
            && let Some(l) = &self.limiter
        {
            let w = self.waiting.get_or_insert_with(|| {
                let l = l.clone();
                Box::pin(async move { l.until_ready().await })
            });
            match w.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(()) => {
                    self.waiting = None;
                    self.admitted = true;
                }
            }
        }
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        self.admitted = false;
        let watch = is_watch(req.uri());
        let timeout = self.timeout;
        let fut = self.inner.call(req);
        Box::pin(async move {
            if watch {
                return fut.await.map_err(Into::into);
            }
            match tokio::time::timeout(timeout, fut).await {
                Ok(r) => r.map_err(Into::into),
                Err(_) => Err(format!("no answer within {timeout:?}").into()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> anyhow::Result<ClientConnection> {
        ClientConnection::from_config(Some(&v))
    }

    #[test]
    fn fields_are_defaulted_honoured_or_refused() {
        assert_eq!(
            ClientConnection::from_config(None).unwrap(),
            ClientConnection::default()
        );
        let c = parse(json!({"qps": 200, "burst": 400, "kubeconfig": "/etc/k.conf"})).unwrap();
        assert_eq!((c.qps, c.burst), (Some(200.0), 400));
        assert_eq!(c.kubeconfig.as_deref(), Some(std::path::Path::new("/etc/k.conf")));
        assert_eq!(parse(json!({"qps": -1})).unwrap().qps, None, "negative: unlimited");
        assert_eq!(
            parse(json!({"qps": 0, "burst": 0})).unwrap(),
            ClientConnection::default()
        );
        let e = parse(json!({"contentType": "application/vnd.kubernetes.protobuf"})).unwrap_err();
        assert!(e.to_string().starts_with("clientConnection.contentType: "), "{e}");
        let e =
            parse(json!({"acceptContentTypes": "application/vnd.kubernetes.protobuf,application/json"})).unwrap_err();
        assert!(
            e.to_string().starts_with("clientConnection.acceptContentTypes: "),
            "{e}"
        );
        parse(json!({"contentType": "application/json", "acceptContentTypes": "application/json"})).unwrap();
        let e = parse(json!({"burst": -3})).unwrap_err();
        assert!(e.to_string().starts_with("clientConnection.burst: "), "{e}");
        let e = parse(json!({"qsp": 5})).unwrap_err();
        assert!(e.to_string().contains("unknown field `qsp`"), "{e}");
    }

    /// The bucket sits in the client's own stack: requests made through
    /// the kube client wait for it.
    #[tokio::test]
    async fn the_client_sends_at_most_qps_after_its_burst() {
        let s = wasmsched_apiserver_sim::ApiServer::start("127.0.0.1:0".parse().unwrap(), Default::default())
            .await
            .unwrap();
        let c = ClientConnection {
            qps: Some(20.0),
            burst: 2,
            ..Default::default()
        };
        let client = build(kube::Config::new(s.url().parse().unwrap()), &c).unwrap();
        let ns: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client);
        let start = std::time::Instant::now();
        for _ in 0..12 {
            ns.list(&Default::default()).await.unwrap();
        }
        // 2 at once, then 10 at 20 per second.
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(450), "{took:?}");
    }

    #[test]
    fn watches_are_told_apart() {
        assert!(is_watch(&"/api/v1/pods?watch=true&resourceVersion=5".parse().unwrap()));
        assert!(!is_watch(&"/api/v1/pods?limit=500".parse().unwrap()));
    }
}
