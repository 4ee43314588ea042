//! Prometheus metrics, with kube-scheduler's names where the meaning is the
//! same, rendered in the text exposition format.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Histogram bucket bounds, in seconds (kube-scheduler's attempt buckets).
const BUCKETS: [f64; 15] = [
    0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096, 8.192, 16.384,
];

/// Victims per preemption: kube-scheduler's (1, ×2, 7 buckets).
const VICTIM_BUCKETS: [f64; 7] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];

/// Plugin execution buckets: kube-scheduler's (10 µs, ×1.5, 20 buckets, to ~22 ms).
const PLUGIN_BUCKETS: [f64; 20] = [
    1e-05,
    1.5e-05,
    2.25e-05,
    3.375e-05,
    5.0625e-05,
    7.59375e-05,
    0.00011390625,
    0.000170859375,
    0.000256289063,
    0.000384433594,
    0.000576650391,
    0.000864975586,
    0.00129746338,
    0.00194619507,
    0.0029192926,
    0.0043789389,
    0.00656840836,
    0.00985261253,
    0.0147789188,
    0.0221683782,
];

/// One metric source's state, as `/metrics` shows it.
#[derive(Debug, Clone, Default)]
struct SourceStat {
    /// Unix time of the last answer that was used.
    last_success: f64,
    errors: u64,
    /// Series in the last answer used.
    series: u64,
    /// Nodes that got a value from it.
    nodes: u64,
    /// What the last answer did not match (logged when it changes).
    unmatched: String,
}

#[derive(Debug, Clone)]
struct Histogram {
    bounds: &'static [f64],
    counts: Vec<u64>,
    count: u64,
    sum: f64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::with(&BUCKETS)
    }
}

impl Histogram {
    fn with(bounds: &'static [f64]) -> Self {
        Self {
            bounds,
            counts: vec![0; bounds.len()],
            count: 0,
            sum: 0.0,
        }
    }

    fn observe(&mut self, secs: f64) {
        for (i, b) in self.bounds.iter().enumerate() {
            if secs <= *b {
                self.counts[i] += 1;
            }
        }
        self.count += 1;
        self.sum += secs;
    }
}

/// Every metric the daemon exports.
#[derive(Debug, Default)]
pub struct Metrics {
    attempts: Mutex<BTreeMap<(String, &'static str), u64>>,
    attempt_duration: Mutex<BTreeMap<(String, &'static str), Histogram>>,
    e2e_duration: Mutex<BTreeMap<String, Histogram>>,
    pending: Mutex<[u64; 4]>,
    bindings: Mutex<BTreeMap<&'static str, u64>>,
    plugins: Mutex<BTreeMap<(String, &'static str, &'static str), Histogram>>,
    extender: Mutex<BTreeMap<(&'static str, &'static str), Histogram>>,
    evictions: Mutex<BTreeMap<&'static str, u64>>,
    preemption_victims: Mutex<Option<Histogram>>,
    metric_sources: Mutex<BTreeMap<String, SourceStat>>,
    /// Attempts that ran preemption and decided (nominated, or found that
    /// preemption cannot help).
    pub preemption_attempts: AtomicU64,
    /// 1 while this replica leads.
    pub leader: AtomicBool,
    /// Events written.
    pub events: AtomicU64,
    /// Objects from the API that could not be parsed.
    pub malformed_objects: AtomicU64,
    /// Scheduling cycles that panicked (each failed its pod only).
    pub cycle_panics: AtomicU64,
    /// Reports (events, conditions) dropped because the reporter was behind.
    pub reports_dropped: AtomicU64,
}

impl Metrics {
    /// One scheduling attempt: `result` is `scheduled`, `unschedulable` or `error`.
    pub fn attempt(&self, profile: &str, result: &'static str, took: Duration) {
        *lock(&self.attempts).entry((profile.to_owned(), result)).or_default() += 1;
        lock(&self.attempt_duration)
            .entry((profile.to_owned(), result))
            .or_default()
            .observe(took.as_secs_f64());
    }

    /// From first queued to bound.
    pub fn bound(&self, profile: &str, since_queued: Duration) {
        lock(&self.e2e_duration)
            .entry(profile.to_owned())
            .or_default()
            .observe(since_queued.as_secs_f64());
    }

    /// One plugin's time at one extension point (sampled cycles).
    pub fn plugin(&self, plugin: &str, point: &'static str, status: &'static str, took: Duration) {
        lock(&self.plugins)
            .entry((plugin.to_owned(), point, status))
            .or_insert_with(|| Histogram::with(&PLUGIN_BUCKETS))
            .observe(took.as_secs_f64());
    }

    /// One extender request: `verb` (`filter`, `prioritize`), `result`
    /// (`ok`, `error`), and how long it took from its first byte read to
    /// its answer written.
    pub fn extender_request(&self, verb: &'static str, result: &'static str, took: Duration) {
        lock(&self.extender)
            .entry((verb, result))
            .or_insert_with(|| Histogram::with(&PLUGIN_BUCKETS))
            .observe(took.as_secs_f64());
    }

    /// A binding's outcome: `ok`, `conflict`, `gone`, `retry`, `error`.
    pub fn eviction(&self, result: &'static str) {
        *lock(&self.evictions).entry(result).or_default() += 1;
    }

    /// A preemption decided to evict `victims` pods.
    pub fn preempted(&self, victims: usize) {
        lock(&self.preemption_victims)
            .get_or_insert_with(|| Histogram::with(&VICTIM_BUCKETS))
            .observe(victims as f64);
    }

    /// Declares a metric source, so it shows before its first query.
    pub fn metric_source(&self, source: &str) {
        lock(&self.metric_sources).entry(source.to_owned()).or_default();
    }

    /// A metric source answered with `series` usable series.
    pub fn metric_success(&self, source: &str, series: usize) {
        let mut m = lock(&self.metric_sources);
        let s = m.entry(source.to_owned()).or_default();
        s.last_success = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        s.series = series as u64;
    }

    /// A metric source's query failed.
    pub fn metric_error(&self, source: &str) {
        lock(&self.metric_sources).entry(source.to_owned()).or_default().errors += 1;
    }

    /// A metric source's values reached `nodes` nodes; `unmatched` says what
    /// did not match. True when that differs from the last time (worth a
    /// log line).
    pub fn metric_matched(&self, source: &str, nodes: usize, unmatched: String) -> bool {
        let mut m = lock(&self.metric_sources);
        let s = m.entry(source.to_owned()).or_default();
        s.nodes = nodes as u64;
        let changed = s.unmatched != unmatched;
        s.unmatched = unmatched;
        changed
    }

    pub fn binding(&self, result: &'static str) {
        *lock(&self.bindings).entry(result).or_default() += 1;
    }

    /// Pending pods per queue: active, backoff, unschedulable, gated.
    pub fn set_pending(&self, active: usize, backoff: usize, unschedulable: usize, gated: usize) {
        *lock(&self.pending) = [active as u64, backoff as u64, unschedulable as u64, gated as u64];
    }

    /// The text exposition, with the plugins' own counters appended.
    pub fn render(&self, plugins: Option<&wasmsched_wasm::PluginHost>) -> String {
        let mut o = String::new();
        o.push_str("# HELP scheduler_schedule_attempts_total Number of attempts to schedule pods, by the result.\n# TYPE scheduler_schedule_attempts_total counter\n");
        for ((profile, result), n) in lock(&self.attempts).iter() {
            let _ = writeln!(
                o,
                "scheduler_schedule_attempts_total{{profile=\"{}\",result=\"{result}\"}} {n}",
                Esc(profile)
            );
        }
        o.push_str("# HELP scheduler_scheduling_attempt_duration_seconds Scheduling attempt latency in seconds (scheduling algorithm + binding).\n# TYPE scheduler_scheduling_attempt_duration_seconds histogram\n");
        for ((profile, result), h) in lock(&self.attempt_duration).iter() {
            histogram(
                &mut o,
                "scheduler_scheduling_attempt_duration_seconds",
                &format!("profile=\"{}\",result=\"{result}\"", Esc(profile)),
                h,
            );
        }
        o.push_str("# HELP scheduler_pod_scheduling_sli_duration_seconds E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue.\n# TYPE scheduler_pod_scheduling_sli_duration_seconds histogram\n");
        for (profile, h) in lock(&self.e2e_duration).iter() {
            histogram(
                &mut o,
                "scheduler_pod_scheduling_sli_duration_seconds",
                &format!("profile=\"{}\"", Esc(profile)),
                h,
            );
        }
        o.push_str("# HELP scheduler_plugin_execution_duration_seconds Duration for running a plugin at a specific extension point (sampled cycles; Filter and Score per batch of nodes).\n# TYPE scheduler_plugin_execution_duration_seconds histogram\n");
        for ((plugin, point, status), h) in lock(&self.plugins).iter() {
            histogram(
                &mut o,
                "scheduler_plugin_execution_duration_seconds",
                &format!(
                    "extension_point=\"{point}\",plugin=\"{}\",status=\"{status}\"",
                    Esc(plugin)
                ),
                h,
            );
        }
        let extender = lock(&self.extender);
        if !extender.is_empty() {
            o.push_str("# HELP wasmsched_extender_requests_total Extender requests, by verb and result.\n# TYPE wasmsched_extender_requests_total counter\n");
            for ((verb, result), h) in extender.iter() {
                let _ = writeln!(
                    o,
                    "wasmsched_extender_requests_total{{verb=\"{verb}\",result=\"{result}\"}} {}",
                    h.count
                );
            }
            o.push_str("# HELP wasmsched_extender_request_duration_seconds Extender request latency in seconds, by verb and result.\n# TYPE wasmsched_extender_request_duration_seconds histogram\n");
            for ((verb, result), h) in extender.iter() {
                histogram(
                    &mut o,
                    "wasmsched_extender_request_duration_seconds",
                    &format!("verb=\"{verb}\",result=\"{result}\""),
                    h,
                );
            }
        }
        drop(extender);
        o.push_str("# HELP scheduler_pending_pods Number of pending pods, by the queue type.\n# TYPE scheduler_pending_pods gauge\n");
        let p = *lock(&self.pending);
        for (q, n) in ["active", "backoff", "unschedulable", "gated"].iter().zip(p) {
            let _ = writeln!(o, "scheduler_pending_pods{{queue=\"{q}\"}} {n}");
        }
        let _ = writeln!(
            o,
            "# HELP scheduler_preemption_attempts_total Total preemption attempts in the cluster till now\n# TYPE scheduler_preemption_attempts_total counter\nscheduler_preemption_attempts_total {}",
            self.preemption_attempts.load(Ordering::Relaxed)
        );
        o.push_str("# HELP scheduler_preemption_victims Number of selected preemption victims\n# TYPE scheduler_preemption_victims histogram\n");
        let victims = lock(&self.preemption_victims).clone();
        histogram(
            &mut o,
            "scheduler_preemption_victims",
            "",
            &victims.unwrap_or_else(|| Histogram::with(&VICTIM_BUCKETS)),
        );
        o.push_str("# HELP wasmsched_evictions_total Preemption victims evicted (condition set and deleted), by outcome.\n# TYPE wasmsched_evictions_total counter\n");
        for (r, n) in lock(&self.evictions).iter() {
            let _ = writeln!(o, "wasmsched_evictions_total{{result=\"{r}\"}} {n}");
        }
        o.push_str(
            "# HELP wasmsched_bindings_total Binding requests, by outcome.\n# TYPE wasmsched_bindings_total counter\n",
        );
        for (r, n) in lock(&self.bindings).iter() {
            let _ = writeln!(o, "wasmsched_bindings_total{{result=\"{r}\"}} {n}");
        }
        let _ = writeln!(
            o,
            "# HELP wasmsched_leader Whether this replica holds the lease.\n# TYPE wasmsched_leader gauge\nwasmsched_leader {}",
            u8::from(self.leader.load(Ordering::Relaxed))
        );
        let _ = writeln!(
            o,
            "# HELP wasmsched_events_total Events written.\n# TYPE wasmsched_events_total counter\nwasmsched_events_total {}",
            self.events.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            o,
            "# HELP wasmsched_malformed_objects_total Objects from the API server that could not be parsed (skipped).\n# TYPE wasmsched_malformed_objects_total counter\nwasmsched_malformed_objects_total {}",
            self.malformed_objects.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            o,
            "# HELP wasmsched_scheduling_cycle_panics_total Scheduling cycles that panicked (the pod is retried after backoff).\n# TYPE wasmsched_scheduling_cycle_panics_total counter\nwasmsched_scheduling_cycle_panics_total {}",
            self.cycle_panics.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            o,
            "# HELP wasmsched_reports_dropped_total Events and condition updates dropped because the API server was behind.\n# TYPE wasmsched_reports_dropped_total counter\nwasmsched_reports_dropped_total {}",
            self.reports_dropped.load(Ordering::Relaxed)
        );
        let sources = lock(&self.metric_sources);
        if !sources.is_empty() {
            o.push_str("# HELP wasmsched_metric_source_last_success_timestamp_seconds When a metric source last answered with values (Unix time; 0: never).\n# TYPE wasmsched_metric_source_last_success_timestamp_seconds gauge\n");
            for (name, s) in sources.iter() {
                let _ = writeln!(
                    o,
                    "wasmsched_metric_source_last_success_timestamp_seconds{{source=\"{}\"}} {}",
                    Esc(name),
                    s.last_success
                );
            }
            o.push_str("# HELP wasmsched_metric_source_errors_total Metric source queries that failed (no answer in time, an HTTP error, an answer that is not Prometheus').\n# TYPE wasmsched_metric_source_errors_total counter\n");
            for (name, s) in sources.iter() {
                let _ = writeln!(
                    o,
                    "wasmsched_metric_source_errors_total{{source=\"{}\"}} {}",
                    Esc(name),
                    s.errors
                );
            }
            o.push_str("# HELP wasmsched_metric_source_series Series in a metric source's last answer that carry a value and a node label.\n# TYPE wasmsched_metric_source_series gauge\n");
            for (name, s) in sources.iter() {
                let _ = writeln!(
                    o,
                    "wasmsched_metric_source_series{{source=\"{}\"}} {}",
                    Esc(name),
                    s.series
                );
            }
            o.push_str("# HELP wasmsched_metric_source_nodes_matched Nodes that got a value from a metric source's last answer.\n# TYPE wasmsched_metric_source_nodes_matched gauge\n");
            for (name, s) in sources.iter() {
                let _ = writeln!(
                    o,
                    "wasmsched_metric_source_nodes_matched{{source=\"{}\"}} {}",
                    Esc(name),
                    s.nodes
                );
            }
        }
        drop(sources);
        if let Some(host) = plugins {
            render_plugins(&mut o, host);
        }
        o
    }
}

fn render_plugins(o: &mut String, host: &wasmsched_wasm::PluginHost) {
    let budget = host.budget();
    let _ = writeln!(
        o,
        "# HELP wasmsched_plugin_memory_budget_bytes The memory every plugin instance together may hold.\n# TYPE wasmsched_plugin_memory_budget_bytes gauge\nwasmsched_plugin_memory_budget_bytes {}\n# HELP wasmsched_plugin_memory_bytes The memory plugin instances hold now (linear memory and tables).\n# TYPE wasmsched_plugin_memory_bytes gauge\nwasmsched_plugin_memory_bytes {}",
        budget.limit(),
        budget.used()
    );
    let _ = writeln!(
        o,
        "# HELP wasmsched_plugin_file_errors_total Plugin files rejected (not a component, bad import, failing configure).\n# TYPE wasmsched_plugin_file_errors_total counter\nwasmsched_plugin_file_errors_total {}",
        host.load_errors.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        o,
        "# HELP wasmsched_plugin_files_compiling Plugin files being compiled now.\n# TYPE wasmsched_plugin_files_compiling gauge\nwasmsched_plugin_files_compiling {}\n# HELP wasmsched_plugin_directory_scanned Whether the plugin directory has been read and compiled once.\n# TYPE wasmsched_plugin_directory_scanned gauge\nwasmsched_plugin_directory_scanned {}",
        host.compiling(),
        u8::from(host.scanned())
    );
    let slots = host.slots();
    let mut seen = std::collections::BTreeSet::new();
    type Counter = fn(&wasmsched_wasm::PluginStats) -> &AtomicU64;
    let counters: [(&str, &str, Counter); 10] = [
        ("wasmsched_plugin_loads_total", "Plugin versions loaded.", |s| &s.loads),
        ("wasmsched_plugin_load_errors_total", "Plugin versions rejected.", |s| {
            &s.load_errors
        }),
        ("wasmsched_plugin_traps_total", "Plugin calls that trapped.", |s| {
            &s.traps
        }),
        (
            "wasmsched_plugin_timeouts_total",
            "Plugin calls that ran past their deadline.",
            |s| &s.timeouts,
        ),
        (
            "wasmsched_plugin_out_of_memory_total",
            "Plugin calls that hit the memory cap.",
            |s| &s.out_of_memory,
        ),
        (
            "wasmsched_plugin_errors_total",
            "Plugin calls that returned an error.",
            |s| &s.errors,
        ),
        (
            "wasmsched_plugin_instances_retired_total",
            "Plugin instances retired after a call with their memory past 3/4 of the cap.",
            |s| &s.retired,
        ),
        (
            "wasmsched_plugin_limits_exceeded_total",
            "Plugin calls stopped by a host limit (table elements, memory budget, host call input size).",
            |s| &s.limits,
        ),
        (
            "wasmsched_plugin_logs_dropped_total",
            "Plugin log lines dropped by the rate limit.",
            |s| &s.logs_dropped,
        ),
        (
            "wasmsched_plugin_backoff_skips_total",
            "Plugin calls not made while the plugin backed off after repeated failures.",
            |s| &s.skipped_backing_off,
        ),
    ];
    for (name, help, get) in counters {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} counter");
        seen.clear();
        for s in &slots {
            use wasmsched_core::Plugin as _;
            if seen.insert(s.name().to_owned()) {
                let _ = writeln!(
                    o,
                    "{name}{{plugin=\"{}\"}} {}",
                    Esc(s.name()),
                    get(s.stats()).load(Ordering::Relaxed)
                );
            }
        }
    }
    let _ = writeln!(
        o,
        "# HELP wasmsched_plugin_info The plugin version serving, by content sha256.\n# TYPE wasmsched_plugin_info gauge"
    );
    seen.clear();
    for s in &slots {
        use wasmsched_core::Plugin as _;
        if let Some(v) = s.current()
            && seen.insert(s.name().to_owned())
        {
            let _ = writeln!(
                o,
                "wasmsched_plugin_info{{plugin=\"{}\",version=\"{}\",sha256=\"{}\"}} 1",
                Esc(s.name()),
                Esc(&v.version),
                Esc(&v.sha256)
            );
        }
    }
}

/// A label value as the text format needs it: backslash, double quote and
/// newline escaped, so that no value (a plugin's version comes from the
/// plugin) can end its label or forge a line.
struct Esc<'a>(&'a str);

impl std::fmt::Display for Esc<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for c in self.0.chars() {
            match c {
                '\\' => f.write_str("\\\\")?,
                '"' => f.write_str("\\\"")?,
                '\n' => f.write_str("\\n")?,
                c => std::fmt::Write::write_char(f, c)?,
            }
        }
        Ok(())
    }
}

fn histogram(o: &mut String, name: &str, labels: &str, h: &Histogram) {
    let (sep, own) = if labels.is_empty() {
        ("", String::new())
    } else {
        (",", format!("{{{labels}}}"))
    };
    for (i, b) in h.bounds.iter().enumerate() {
        let _ = writeln!(o, "{name}_bucket{{{labels}{sep}le=\"{b}\"}} {}", h.counts[i]);
    }
    let _ = writeln!(o, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}", h.count);
    let _ = writeln!(o, "{name}_sum{own} {}", h.sum);
    let _ = writeln!(o, "{name}_count{own} {}", h.count);
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(Esc("plain-1.0").to_string(), "plain-1.0");
        assert_eq!(
            Esc("1\"} 1\nfake_metric 2 \\").to_string(),
            "1\\\"} 1\\nfake_metric 2 \\\\"
        );
        let m = Metrics::default();
        m.attempt("a\"b", "scheduled", Duration::from_millis(1));
        let text = m.render(None);
        assert!(text.contains("profile=\"a\\\"b\""), "{text}");
    }
}
