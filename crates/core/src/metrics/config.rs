//! `metrics:` in the configuration: the sources of live metrics plugins
//! read (`nodes.metrics(source)` in the contract).
//!
//! ```yaml
//! metrics:
//!   sources:
//!   - name: latency
//!     prometheus:
//!       url: http://prometheus.monitoring:9090
//!       query: avg by (node) (probe_http_duration_seconds)
//!       nodeLabel: node        # default instance
//!       interval: 15s          # default 15s
//!       timeout: 5s            # default 5s, at most interval
//!       staleAfter: 1m         # default 1m, at least interval
//! ```

use std::time::Duration;

use serde::Deserialize;

use crate::config::{ConfigError, parse_duration};

/// `metrics`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    /// The sources, each a name plugins ask for.
    #[serde(default)]
    pub sources: Vec<MetricSource>,
}

/// `metrics.sources[]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricSource {
    /// The name plugins read it by.
    #[serde(default)]
    pub name: String,
    /// A Prometheus instant query.
    pub prometheus: Option<PrometheusSource>,
}

/// `metrics.sources[].prometheus`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PrometheusSource {
    /// Prometheus' base URL (`http://prometheus:9090`); the query goes to
    /// `URL/api/v1/query`.
    #[serde(default)]
    pub url: String,
    /// PromQL, evaluated as an instant query: one series per node.
    #[serde(default)]
    pub query: String,
    /// The label that names each series' node: a node name, or an
    /// address (`instance="10.0.0.5:9100"`) matched to the node's
    /// addresses. Default `instance`.
    #[serde(default = "default_node_label")]
    pub node_label: String,
    /// How often the query runs (default 15s).
    #[serde(default)]
    pub interval: Option<String>,
    /// How long one query may take (default 5s, at most `interval`).
    #[serde(default)]
    pub timeout: Option<String>,
    /// How long values keep serving without a successful query (default
    /// 1m, at least `interval`); older ones read as absent.
    #[serde(default)]
    pub stale_after: Option<String>,
    /// A file holding a bearer token, read before each query (a rotated
    /// service account token is picked up).
    #[serde(default)]
    pub bearer_token_file: Option<String>,
    /// A PEM file of the CAs to trust for `https` (default: the system's).
    #[serde(default)]
    pub ca_file: Option<String>,
    /// Skips certificate verification for `https` (tests only).
    #[serde(default)]
    pub insecure_skip_verify: bool,
    /// Parsed `interval`, `timeout`, `staleAfter`.
    #[serde(skip)]
    pub times: Times,
}

/// A source's durations, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Times {
    /// `interval`.
    pub interval: Duration,
    /// `timeout`.
    pub timeout: Duration,
    /// `staleAfter`.
    pub stale_after: Duration,
}

impl Default for Times {
    fn default() -> Self {
        Times {
            interval: Duration::from_secs(15),
            timeout: Duration::from_secs(5),
            stale_after: Duration::from_secs(60),
        }
    }
}

fn default_node_label() -> String {
    "instance".into()
}

impl MetricsConfig {
    pub(crate) fn validate(&mut self) -> Result<(), ConfigError> {
        for i in 0..self.sources.len() {
            let at = format!("metrics.sources[{i}]");
            let name = &self.sources[i].name;
            if name.is_empty() {
                return Err(ConfigError::new(format!("{at}.name"), "is required"));
            }
            if name.len() > 253 || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(ConfigError::new(
                    format!("{at}.name"),
                    format!("{name:?} must be at most 253 characters without spaces"),
                ));
            }
            if self.sources[..i].iter().any(|o| o.name == *name) {
                return Err(ConfigError::new(
                    format!("{at}.name"),
                    format!("duplicate metric source {name:?}"),
                ));
            }
            let Some(p) = self.sources[i].prometheus.as_mut() else {
                return Err(ConfigError::new(
                    format!("{at}.prometheus"),
                    "is required (the only kind of source)",
                ));
            };
            p.validate(&format!("{at}.prometheus"))?;
        }
        Ok(())
    }
}

impl MetricSource {
    /// How long its values serve.
    pub fn stale_after(&self) -> Duration {
        self.prometheus
            .as_ref()
            .map_or(Times::default().stale_after, |p| p.times.stale_after)
    }
}

impl PrometheusSource {
    fn validate(&mut self, at: &str) -> Result<(), ConfigError> {
        let field = |f: &str| format!("{at}.{f}");
        let (scheme, host) = self.url.split_once("://").unwrap_or_default();
        match scheme {
            "http" | "https" if !host.is_empty() => {}
            _ if self.url.is_empty() => return Err(ConfigError::new(field("url"), "is required")),
            _ => {
                return Err(ConfigError::new(
                    field("url"),
                    format!("{:?} is not an http:// or https:// URL", self.url),
                ));
            }
        }
        // The API's path is the client's to add: a URL that already ends
        // in it would be asked for `.../api/v1/query/api/v1/query`.
        if let Some(base) = ["/api/v1/query", "/api/v1/query/", "/api/v1", "/api/v1/"]
            .iter()
            .find_map(|suffix| self.url.strip_suffix(suffix))
        {
            return Err(ConfigError::new(
                field("url"),
                format!(
                    "{:?} ends in Prometheus' API path: give the server's base URL ({base:?}); the query API's path is added to it",
                    self.url
                ),
            ));
        }
        if self.query.trim().is_empty() {
            return Err(ConfigError::new(field("query"), "is required"));
        }
        if self.node_label.is_empty() {
            return Err(ConfigError::new(field("nodeLabel"), "must not be empty"));
        }
        let defaults = Times::default();
        let parse = |name: &str, v: &Option<String>, default: Duration| match v {
            None => Ok(default),
            Some(s) => match parse_duration(s) {
                Some(d) if !d.is_zero() => Ok(d),
                _ => Err(ConfigError::new(
                    field(name),
                    format!("{s:?} is not a positive duration (e.g. 15s, 1m30s)"),
                )),
            },
        };
        let interval = parse("interval", &self.interval, defaults.interval)?;
        let timeout = parse("timeout", &self.timeout, defaults.timeout.min(interval))?;
        let stale_after = parse("staleAfter", &self.stale_after, defaults.stale_after.max(interval))?;
        if timeout > interval {
            return Err(ConfigError::new(field("timeout"), "must be at most interval"));
        }
        if stale_after < interval {
            return Err(ConfigError::new(field("staleAfter"), "must be at least interval"));
        }
        if scheme == "http" && (self.ca_file.is_some() || self.insecure_skip_verify) {
            return Err(ConfigError::new(
                field(if self.ca_file.is_some() {
                    "caFile"
                } else {
                    "insecureSkipVerify"
                }),
                "applies to https:// URLs only",
            ));
        }
        if self.ca_file.is_some() && self.insecure_skip_verify {
            return Err(ConfigError::new(
                field("insecureSkipVerify"),
                "cannot be set with caFile",
            ));
        }
        self.times = Times {
            interval,
            timeout,
            stale_after,
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use std::time::Duration;

    fn err(yaml: &str) -> String {
        Config::from_yaml(yaml).unwrap_err().to_string()
    }

    #[test]
    fn sources_parse_with_defaults_and_errors_name_the_field() {
        let c = Config::from_yaml(
            "metrics: {sources: [{name: cpu, prometheus: {url: 'http://p:9090', query: 'up'}}, \
             {name: lat, prometheus: {url: 'https://p', query: q, nodeLabel: node, interval: 1s, timeout: 500ms, staleAfter: 3s}}]}",
        )
        .unwrap();
        let p = c.metrics.sources[0].prometheus.as_ref().unwrap();
        assert_eq!(p.node_label, "instance");
        assert_eq!(
            (p.times.interval, p.times.timeout, p.times.stale_after),
            (Duration::from_secs(15), Duration::from_secs(5), Duration::from_secs(60))
        );
        let p = c.metrics.sources[1].prometheus.as_ref().unwrap();
        assert_eq!(
            (p.times.interval, p.times.timeout, p.times.stale_after),
            (
                Duration::from_secs(1),
                Duration::from_millis(500),
                Duration::from_secs(3)
            )
        );
        // A short interval lowers the default timeout with it.
        let c =
            Config::from_yaml("metrics: {sources: [{name: a, prometheus: {url: 'http://p', query: q, interval: 2s}}]}")
                .unwrap();
        assert_eq!(
            c.metrics.sources[0].prometheus.as_ref().unwrap().times.timeout,
            Duration::from_secs(2)
        );
        for (yaml, want) in [
            (
                "metrics: {sources: [{prometheus: {url: 'http://p', query: q}}]}",
                "metrics.sources[0].name: is required",
            ),
            (
                "metrics: {sources: [{name: a, prometheus: {url: 'http://p', query: q}}, {name: a, prometheus: {url: 'http://p', query: q}}]}",
                "metrics.sources[1].name: duplicate metric source \"a\"",
            ),
            (
                "metrics: {sources: [{name: a}]}",
                "metrics.sources[0].prometheus: is required (the only kind of source)",
            ),
            (
                "metrics: {sources: [{name: a, prometheus: {url: 'p:9090', query: q}}]}",
                "metrics.sources[0].prometheus.url: \"p:9090\" is not an http:// or https:// URL",
            ),
            (
                "metrics: {sources: [{name: a, prometheus: {url: 'http://p:9090/api/v1/query', query: q}}]}",
                "metrics.sources[0].prometheus.url: \"http://p:9090/api/v1/query\" ends in Prometheus' API path: give the server's base URL (\"http://p:9090\"); the query API's path is added to it",
            ),
            (
                "metrics: {sources: [{name: a, prometheus: {url: 'http://p', query: ' '}}]}",
                "metrics.sources[0].prometheus.query: is required",
            ),
            (
                "metrics: {sources: [{name: a, prometheus: {url: 'http://p', query: q, interval: soon}}]}",
                "metrics.sources[0].prometheus.interval: \"soon\" is not a positive duration (e.g. 15s, 1m30s)",
            ),
            (
                "metrics: {sources: [{name: a, prometheus: {url: 'http://p', query: q, interval: 5s, timeout: 10s}}]}",
                "metrics.sources[0].prometheus.timeout: must be at most interval",
            ),
            (
                "metrics: {sources: [{name: a, prometheus: {url: 'http://p', query: q, staleAfter: 5s}}]}",
                "metrics.sources[0].prometheus.staleAfter: must be at least interval",
            ),
            (
                "metrics: {sources: [{name: a, prometheus: {url: 'http://p', query: q, caFile: /ca.pem}}]}",
                "metrics.sources[0].prometheus.caFile: applies to https:// URLs only",
            ),
        ] {
            assert_eq!(err(yaml), want, "{yaml}");
        }
        assert!(
            err("metrics: {sources: [{name: a, prometheus: {url: 'http://p', query: q, typo: 1}}]}")
                .contains("unknown field `typo`")
        );
    }
}
