//! Prometheus metrics, with kube-scheduler's names where the meaning is the
//! same, through `prometheus-client` (the exposition format, label values
//! escaped, histograms and counters as the format defines them). The
//! plugins' own counters are read from the plugin host when scraped.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, text};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

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

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ProfileResult {
    pub profile: String,
    pub result: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ProfileLabel {
    pub profile: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginPoint {
    extension_point: &'static str,
    plugin: String,
    status: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerbResult {
    verb: &'static str,
    result: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabel {
    queue: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DropLabel {
    /// `event` or `condition`.
    write: &'static str,
    reason: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabel {
    source: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginLabel {
    plugin: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginInfo {
    plugin: String,
    version: String,
    sha256: String,
    /// `winch` while a big component serves on baseline code, then
    /// `cranelift`.
    compiler: &'static str,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

fn attempt_buckets() -> Histogram {
    Histogram::new(BUCKETS)
}

fn plugin_buckets() -> Histogram {
    Histogram::new(PLUGIN_BUCKETS)
}

/// Every metric the daemon exports.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    attempts: Family<ProfileResult, Counter>,
    attempt_duration: Histograms<ProfileResult>,
    e2e_duration: Histograms<ProfileLabel>,
    pending: Family<QueueLabel, Gauge>,
    bindings: Family<ResultLabel, Counter>,
    plugins: Histograms<PluginPoint>,
    extender_requests: Family<VerbResult, Counter>,
    extender_duration: Histograms<VerbResult>,
    evictions: Family<ResultLabel, Counter>,
    preemption_victims: Histogram,
    source_success: Family<SourceLabel, Gauge<f64, AtomicU64>>,
    source_errors: Family<SourceLabel, Counter>,
    source_series: Family<SourceLabel, Gauge>,
    source_nodes: Family<SourceLabel, Gauge>,
    source_empty: Family<SourceLabel, Counter>,
    source_stale: Family<SourceLabel, Gauge>,
    /// What is wrong with each metric source now, for `/readyz`.
    source_notes: Mutex<BTreeMap<String, String>>,
    /// What each source's last answer did not match (logged when it changes).
    source_unmatched: Mutex<HashMap<String, String>>,
    /// Attempts that ran preemption and decided (nominated, or found that
    /// preemption cannot help).
    pub preemption_attempts: Counter,
    /// Preemptions not carried out because the executor's queue was full
    /// (their pods are decided again).
    pub preemptions_deferred: Counter,
    /// 1 while this replica leads.
    pub leader: Gauge,
    /// Events written.
    pub events: Counter,
    /// Objects from the API that could not be parsed.
    pub malformed_objects: Counter,
    /// Scheduling cycles that panicked (each failed its pod only).
    pub cycle_panics: Counter,
    /// Writes of reports given up, by what and why.
    reports_dropped: Family<DropLabel, Counter>,
    /// `PodScheduled` conditions written (or found already so).
    pub conditions: Counter,
    /// Reports queued or being written, by when each was queued.
    pub backlog: ReportBacklog,
    backlog_oldest: Gauge<f64, AtomicU64>,
    backlog_len: Gauge,
    /// The plugin histogram's bucket counts per plugin and extension point
    /// (the client's histogram does not give them back), for the web view.
    /// By plugin, then point: looked up by `&str`, with no key allocated
    /// per observation.
    plugin_buckets: Mutex<BTreeMap<String, BTreeMap<&'static str, [u64; PLUGIN_BUCKETS.len() + 1]>>>,
}

/// One plugin's timings at one extension point (of the sampled cycles).
#[derive(Debug, Clone, PartialEq)]
pub struct PluginLatency {
    pub plugin: String,
    pub extension_point: &'static str,
    pub calls: u64,
    /// The bound of the bucket the median call falls in: every call
    /// below it took less (a histogram knows no more than its buckets).
    pub p50: Quantile,
    pub p99: Quantile,
}

/// Where a quantile of timed calls lies, as far as the buckets tell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Quantile {
    /// No call timed.
    None,
    /// Under this bound (the upper bound of its bucket).
    Below(Duration),
    /// Past the last bound.
    Above(Duration),
}

/// The bucket of the `q` quantile of bucket counts `counts` (the last:
/// past the bounds).
fn quantile(counts: &[u64], q: f64) -> Quantile {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return Quantile::None;
    }
    let rank = q * total as f64;
    let mut below = 0u64;
    for (i, &c) in counts.iter().enumerate() {
        if (below + c) as f64 >= rank && c > 0 {
            return match PLUGIN_BUCKETS.get(i) {
                Some(upper) => Quantile::Below(Duration::from_secs_f64(*upper)),
                None => Quantile::Above(Duration::from_secs_f64(PLUGIN_BUCKETS[PLUGIN_BUCKETS.len() - 1])),
            };
        }
        below += c;
    }
    Quantile::None
}

/// The reports (events, conditions) not written yet, so that the age of the
/// oldest one can be exported: how far the reporter trails the bindings.
#[derive(Debug, Default)]
pub struct ReportBacklog {
    next: AtomicU64,
    queued: Mutex<std::collections::BTreeMap<u64, std::time::Instant>>,
}

impl ReportBacklog {
    /// A report is queued: its ticket.
    pub fn enter(&self) -> u64 {
        let t = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(t, std::time::Instant::now());
        t
    }

    /// The report of `ticket` is written or given up.
    pub fn leave(&self, ticket: u64) {
        self.lock().remove(&ticket);
    }

    /// Reports not written yet, and the age of the oldest.
    pub fn state(&self) -> (usize, Duration) {
        let q = self.lock();
        let oldest = q.values().next().map_or(Duration::ZERO, |t| t.elapsed());
        (q.len(), oldest)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::BTreeMap<u64, std::time::Instant>> {
        self.queued.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let m = Metrics {
            registry: Registry::default(),
            attempts: Family::default(),
            attempt_duration: Family::new_with_constructor(attempt_buckets),
            e2e_duration: Family::new_with_constructor(attempt_buckets),
            pending: Family::default(),
            bindings: Family::default(),
            plugins: Family::new_with_constructor(plugin_buckets),
            extender_requests: Family::default(),
            extender_duration: Family::new_with_constructor(attempt_buckets),
            evictions: Family::default(),
            preemption_victims: Histogram::new(VICTIM_BUCKETS),
            source_success: Family::default(),
            source_errors: Family::default(),
            source_series: Family::default(),
            source_nodes: Family::default(),
            source_empty: Family::default(),
            source_stale: Family::default(),
            source_notes: Mutex::default(),
            source_unmatched: Mutex::default(),
            preemption_attempts: Counter::default(),
            preemptions_deferred: Counter::default(),
            leader: Gauge::default(),
            events: Counter::default(),
            malformed_objects: Counter::default(),
            cycle_panics: Counter::default(),
            reports_dropped: Family::default(),
            conditions: Counter::default(),
            backlog: ReportBacklog::default(),
            backlog_oldest: Gauge::default(),
            backlog_len: Gauge::default(),
            plugin_buckets: Mutex::default(),
        };
        let mut r = Registry::default();
        r.register(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result",
            m.attempts.clone(),
        );
        r.register(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            m.attempt_duration.clone(),
        );
        r.register(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue",
            m.e2e_duration.clone(),
        );
        r.register(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point (sampled cycles; Filter and Score per batch of nodes)",
            m.plugins.clone(),
        );
        r.register(
            "wasmsched_extender_requests",
            "Extender requests, by verb and result",
            m.extender_requests.clone(),
        );
        r.register(
            "wasmsched_extender_request_duration_seconds",
            "Extender request latency in seconds, by verb and result",
            m.extender_duration.clone(),
        );
        r.register(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type",
            m.pending.clone(),
        );
        r.register(
            "scheduler_preemption_attempts",
            "Total preemption attempts in the cluster till now",
            m.preemption_attempts.clone(),
        );
        r.register(
            "wasmsched_preemptions_deferred",
            "Preemptions not carried out because the eviction queue was full; their pods are decided again",
            m.preemptions_deferred.clone(),
        );
        r.register(
            "scheduler_preemption_victims",
            "Number of selected preemption victims",
            m.preemption_victims.clone(),
        );
        r.register(
            "wasmsched_evictions",
            "Preemption victims evicted (condition set and deleted), by outcome",
            m.evictions.clone(),
        );
        r.register("wasmsched_bindings", "Binding requests, by outcome", m.bindings.clone());
        r.register(
            "wasmsched_leader",
            "Whether this replica holds the lease",
            m.leader.clone(),
        );
        r.register("wasmsched_events", "Events written", m.events.clone());
        r.register(
            "wasmsched_malformed_objects",
            "Objects from the API server that could not be parsed (skipped)",
            m.malformed_objects.clone(),
        );
        r.register(
            "wasmsched_scheduling_cycle_panics",
            "Scheduling cycles that panicked (the pod is retried after backoff)",
            m.cycle_panics.clone(),
        );
        r.register(
            "wasmsched_reports_dropped",
            "Events and PodScheduled conditions not written, by write and reason (queue_full: the reporter was behind; error: the API server refused it; timeout: no answer in time; shutdown: still queued when the drain at shutdown ended)",
            m.reports_dropped.clone(),
        );
        r.register(
            "wasmsched_conditions_written",
            "PodScheduled=False conditions written after failed attempts (or found already so)",
            m.conditions.clone(),
        );
        r.register(
            "wasmsched_report_backlog_oldest_seconds",
            "Age of the oldest event or condition queued and not written yet (0: none)",
            m.backlog_oldest.clone(),
        );
        r.register(
            "wasmsched_report_backlog",
            "Reports (an event, and after a failed attempt a condition) queued or being written",
            m.backlog_len.clone(),
        );
        r.register(
            "wasmsched_metric_source_last_success_timestamp_seconds",
            "When a metric source last answered with values (Unix time; 0: never)",
            m.source_success.clone(),
        );
        r.register(
            "wasmsched_metric_source_errors",
            "Metric source queries that failed (no answer in time, an HTTP error, an answer that is not Prometheus')",
            m.source_errors.clone(),
        );
        r.register(
            "wasmsched_metric_source_series",
            "Series in a metric source's last answer that carry a value and a node label",
            m.source_series.clone(),
        );
        r.register(
            "wasmsched_metric_source_nodes_matched",
            "Nodes that got a value from a metric source's last answer (0 once its values are stale)",
            m.source_nodes.clone(),
        );
        r.register(
            "wasmsched_metric_source_empty_answers",
            "Metric source queries answered with no series at all (a query that matches nothing)",
            m.source_empty.clone(),
        );
        r.register(
            "wasmsched_metric_source_stale",
            "Whether a metric source's values are older than its staleAfter (1: plugins see none)",
            m.source_stale.clone(),
        );
        // Every queue shows from the start, empty.
        m.set_pending(0, 0, 0, 0);
        Metrics { registry: r, ..m }
    }
}

impl Metrics {
    /// A write of a report given up: `write` is `event` or `condition`;
    /// `reason` `queue_full`, `error`, `timeout` or `shutdown`.
    pub fn report_dropped(&self, write: &'static str, reason: &'static str) {
        self.reports_dropped.get_or_create(&DropLabel { write, reason }).inc();
    }

    /// Writes given up for `write` so far, all reasons.
    pub fn reports_dropped(&self, write: &'static str) -> u64 {
        ["queue_full", "error", "timeout", "shutdown"]
            .into_iter()
            .map(|reason| self.reports_dropped.get_or_create(&DropLabel { write, reason }).get())
            .sum()
    }

    /// One scheduling attempt: `result` is `scheduled`, `unschedulable` or `error`.
    pub fn attempt(&self, profile: &str, result: &'static str, took: Duration) {
        let l = ProfileResult {
            profile: profile.to_owned(),
            result,
        };
        self.attempts.get_or_create(&l).inc();
        self.attempt_duration.get_or_create(&l).observe(took.as_secs_f64());
    }

    /// From first queued to bound.
    pub fn bound(&self, profile: &str, since_queued: Duration) {
        self.e2e_duration
            .get_or_create(&ProfileLabel {
                profile: profile.to_owned(),
            })
            .observe(since_queued.as_secs_f64());
    }

    /// One plugin's run at an extension point.
    pub fn plugin(&self, plugin: &str, point: &'static str, status: &'static str, took: Duration) {
        self.plugins
            .get_or_create(&PluginPoint {
                extension_point: point,
                plugin: plugin.to_owned(),
                status,
            })
            .observe(took.as_secs_f64());
        let secs = took.as_secs_f64();
        let bucket = PLUGIN_BUCKETS
            .iter()
            .position(|b| secs <= *b)
            .unwrap_or(PLUGIN_BUCKETS.len());
        let mut buckets = self.plugin_buckets.lock().unwrap_or_else(|p| p.into_inner());
        let points = match buckets.get_mut(plugin) {
            Some(points) => points,
            None => buckets.entry(plugin.to_owned()).or_default(),
        };
        points.entry(point).or_insert([0; PLUGIN_BUCKETS.len() + 1])[bucket] += 1;
    }

    /// Each plugin's sampled calls and their p50 and p99, per extension point.
    pub fn plugin_latencies(&self) -> Vec<PluginLatency> {
        let buckets = self.plugin_buckets.lock().unwrap_or_else(|p| p.into_inner());
        buckets
            .iter()
            .flat_map(|(plugin, points)| {
                points.iter().map(move |(point, counts)| PluginLatency {
                    plugin: plugin.clone(),
                    extension_point: point,
                    calls: counts.iter().sum(),
                    p50: quantile(counts, 0.5),
                    p99: quantile(counts, 0.99),
                })
            })
            .collect()
    }

    /// One extender request: `verb` is `filter`, `prioritize`, ...; `result` `ok` or `error`.
    pub fn extender_request(&self, verb: &'static str, result: &'static str, took: Duration) {
        let l = VerbResult { verb, result };
        self.extender_requests.get_or_create(&l).inc();
        self.extender_duration.get_or_create(&l).observe(took.as_secs_f64());
    }

    /// A victim's eviction: `ok`, `gone`, `error`.
    pub fn eviction(&self, result: &'static str) {
        self.evictions.get_or_create(&ResultLabel { result }).inc();
    }

    /// A preemption decided to evict `victims` pods.
    pub fn preempted(&self, victims: usize) {
        self.preemption_victims.observe(victims as f64);
    }

    /// Declares a metric source, so it shows before its first query.
    pub fn metric_source(&self, source: &str) {
        let l = SourceLabel {
            source: source.to_owned(),
        };
        let _ = self.source_success.get_or_create(&l);
        let _ = self.source_errors.get_or_create(&l);
        let _ = self.source_series.get_or_create(&l);
        let _ = self.source_nodes.get_or_create(&l);
        let _ = self.source_empty.get_or_create(&l);
        let _ = self.source_stale.get_or_create(&l);
    }

    /// A metric source answered with `series` usable series (none: the
    /// last success stays when it was).
    pub fn metric_success(&self, source: &str, series: usize) {
        let l = SourceLabel {
            source: source.to_owned(),
        };
        if series > 0 {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64());
            self.source_success.get_or_create(&l).set(now);
        }
        self.source_series.get_or_create(&l).set(series as i64);
    }

    /// A metric source answered with no series at all.
    pub fn metric_empty(&self, source: &str) {
        self.source_empty
            .get_or_create(&SourceLabel {
                source: source.to_owned(),
            })
            .inc();
    }

    /// A metric source's values went stale (or are fresh again): a stale
    /// source gives no series and no node.
    pub fn metric_stale(&self, source: &str, stale: bool) {
        let l = SourceLabel {
            source: source.to_owned(),
        };
        self.source_stale.get_or_create(&l).set(i64::from(stale));
        if stale {
            self.source_series.get_or_create(&l).set(0);
            self.source_nodes.get_or_create(&l).set(0);
        }
    }

    /// What is wrong with a metric source now (none: nothing).
    pub fn metric_note(&self, source: &str, note: Option<String>) {
        let mut notes = self.source_notes.lock().unwrap_or_else(|p| p.into_inner());
        match note {
            Some(n) => notes.insert(source.to_owned(), n),
            None => notes.remove(source),
        };
    }

    /// The metric sources' notes, one line each.
    pub fn metric_notes(&self) -> Vec<String> {
        let notes = self.source_notes.lock().unwrap_or_else(|p| p.into_inner());
        notes.values().cloned().collect()
    }

    /// A metric source's query failed.
    pub fn metric_error(&self, source: &str) {
        self.source_errors
            .get_or_create(&SourceLabel {
                source: source.to_owned(),
            })
            .inc();
    }

    /// A metric source's values reached `nodes` nodes; `unmatched` says what
    /// did not match. True when that differs from the last time (worth a
    /// log line).
    pub fn metric_matched(&self, source: &str, nodes: usize, unmatched: String) -> bool {
        self.source_nodes
            .get_or_create(&SourceLabel {
                source: source.to_owned(),
            })
            .set(nodes as i64);
        let mut last = self.source_unmatched.lock().unwrap_or_else(|p| p.into_inner());
        last.insert(source.to_owned(), unmatched.clone()).unwrap_or_default() != unmatched
    }

    /// A binding's outcome: `ok`, `conflict`, `gone`, `retry`, `error`.
    pub fn binding(&self, result: &'static str) {
        self.bindings.get_or_create(&ResultLabel { result }).inc();
    }

    /// Pending pods per queue: active, backoff, unschedulable, gated.
    pub fn set_pending(&self, active: usize, backoff: usize, unschedulable: usize, gated: usize) {
        for (queue, n) in [
            ("active", active),
            ("backoff", backoff),
            ("unschedulable", unschedulable),
            ("gated", gated),
        ] {
            self.pending.get_or_create(&QueueLabel { queue }).set(n as i64);
        }
    }

    /// The exposition, with the plugins' own counters.
    pub fn render(
        &self,
        plugins: Option<&wasmsched_wasm::PluginHost>,
        shadow: Option<&crate::shadow::Shadow>,
    ) -> String {
        let (len, oldest) = self.backlog.state();
        self.backlog_len.set(len as i64);
        self.backlog_oldest.set(oldest.as_secs_f64());
        let mut o = String::new();
        // Writing to a String cannot fail.
        let _ = text::encode_registry(&mut o, &self.registry);
        if let Some(host) = plugins {
            let _ = text::encode_registry(&mut o, &plugin_registry(host));
        }
        if let Some(sh) = shadow {
            // The shadow directory's plugins: their own counters (the
            // budget and the files are the serving host's to report).
            let mut r = sh.registry();
            plugin_counters(&mut r, sh.host(), "wasmsched_shadow_plugin");
            let _ = text::encode_registry(&mut o, &r);
        }
        let _ = text::encode_eof(&mut o);
        o
    }
}

/// The plugin host's state as metrics, read when scraped.
fn plugin_registry(host: &wasmsched_wasm::PluginHost) -> Registry {
    let mut r = Registry::default();
    let gauge = |v: u64| {
        let g: Gauge = Gauge::default();
        g.set(i64::try_from(v).unwrap_or(i64::MAX));
        g
    };
    let budget = host.budget();
    r.register(
        "wasmsched_plugin_memory_budget_bytes",
        "The memory every plugin instance together may hold",
        gauge(budget.limit() as u64),
    );
    r.register(
        "wasmsched_plugin_memory_bytes",
        "The memory plugin instances hold now (linear memory and tables)",
        gauge(budget.used() as u64),
    );
    let file_errors = Counter::<u64>::default();
    file_errors.inc_by(host.load_errors.load(Ordering::Relaxed));
    r.register(
        "wasmsched_plugin_file_errors",
        "Plugin files rejected (not a component, bad import, failing configure)",
        file_errors,
    );
    r.register(
        "wasmsched_plugin_files_compiling",
        "Plugin files being compiled now",
        gauge(host.compiling() as u64),
    );
    r.register(
        "wasmsched_plugin_directory_scanned",
        "Whether the plugin directory has been read and compiled once",
        gauge(u64::from(host.scanned())),
    );
    plugin_counters(&mut r, host, "wasmsched_plugin");
    r.register(
        "wasmsched_plugin_memory_share_bytes",
        "Each plugin's share of the memory budget (the budget divided among the plugins loaded)",
        gauge(host.budget().share_limit() as u64),
    );
    r
}

/// Per plugin: its counters, version and memory, named `{prefix}_*`.
fn plugin_counters(r: &mut Registry, host: &wasmsched_wasm::PluginHost, prefix: &str) {
    // One row per plugin name (several profiles may enable one plugin).
    let mut slots = host.slots();
    {
        use wasmsched_core::Plugin as _;
        slots.sort_by(|a, b| a.name().cmp(b.name()));
        slots.dedup_by(|a, b| a.name() == b.name());
    }
    type Stat = fn(&wasmsched_wasm::PluginStats) -> &AtomicU64;
    let counters: [(&str, &str, Stat); 10] = [
        ("loads", "Plugin versions loaded", |s| &s.loads),
        ("load_errors", "Plugin versions rejected", |s| &s.load_errors),
        ("traps", "Plugin calls that trapped", |s| &s.traps),
        ("timeouts", "Plugin calls that ran past their deadline", |s| &s.timeouts),
        ("out_of_memory", "Plugin calls that hit the memory cap", |s| {
            &s.out_of_memory
        }),
        ("errors", "Plugin calls that returned an error", |s| &s.errors),
        (
            "instances_retired",
            "Plugin instances retired after a call with their memory past 3/4 of the cap",
            |s| &s.retired,
        ),
        (
            "limits_exceeded",
            "Plugin calls stopped by a host limit (table elements, memory budget, host call input size)",
            |s| &s.limits,
        ),
        ("logs_dropped", "Plugin log lines dropped by the rate limit", |s| {
            &s.logs_dropped
        }),
        (
            "backoff_skips",
            "Plugin calls not made while the plugin backed off after repeated failures",
            |s| &s.skipped_backing_off,
        ),
    ];
    for (name, help, get) in counters {
        let family = Family::<PluginLabel, Counter>::default();
        for s in &slots {
            use wasmsched_core::Plugin as _;
            family
                .get_or_create(&PluginLabel {
                    plugin: s.name().to_owned(),
                })
                .inc_by(get(s.stats()).load(Ordering::Relaxed));
        }
        r.register(format!("{prefix}_{name}"), help, family);
    }
    let info = Family::<PluginInfo, Gauge>::default();
    for s in &slots {
        use wasmsched_core::Plugin as _;
        if let Some(v) = s.current() {
            info.get_or_create(&PluginInfo {
                plugin: s.name().to_owned(),
                version: v.version.clone(),
                sha256: v.sha256.clone(),
                compiler: v.tier.compiler(),
            })
            .set(1);
        }
    }
    r.register(
        format!("{prefix}_info"),
        "The plugin version serving, by content sha256, and the compiler of its code",
        info,
    );
    let held = Family::<PluginLabel, Gauge>::default();
    for s in &slots {
        use wasmsched_core::Plugin as _;
        let bytes = s.stats().share.used();
        held.get_or_create(&PluginLabel {
            plugin: s.name().to_owned(),
        })
        .set(i64::try_from(bytes).unwrap_or(i64::MAX));
    }
    r.register(
        format!("{prefix}_instance_memory_bytes"),
        "The memory a plugin's instances hold now, of its share of the budget",
        held,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_quantiles_are_the_bounds_of_their_buckets() {
        let m = Metrics::default();
        // 99 calls of 12 µs (bucket 10–15 µs), one of 1 s (past the last bound).
        for _ in 0..99 {
            m.plugin("p", "Filter", "Success", Duration::from_micros(12));
        }
        m.plugin("p", "Filter", "Success", Duration::from_secs(1));
        let l = m.plugin_latencies();
        assert_eq!(l.len(), 1);
        assert_eq!(
            (l[0].plugin.as_str(), l[0].extension_point, l[0].calls),
            ("p", "Filter", 100)
        );
        // Under the bucket's bound: nothing finer is known (an estimate
        // within the bucket showed every fast plugin alike).
        assert_eq!(l[0].p50, Quantile::Below(Duration::from_secs_f64(1.5e-5)));
        assert_eq!(l[0].p99, Quantile::Below(Duration::from_secs_f64(1.5e-5)));
        m.plugin("q", "Score", "Success", Duration::from_secs(1));
        assert_eq!(
            m.plugin_latencies()[1].p50,
            Quantile::Above(Duration::from_secs_f64(PLUGIN_BUCKETS[PLUGIN_BUCKETS.len() - 1])),
            "past the last bound"
        );
    }

    #[test]
    fn label_values_are_escaped_and_names_are_kube_schedulers() {
        let m = Metrics::default();
        m.attempt("a\"b\nfake_metric 2", "scheduled", Duration::from_millis(1));
        m.set_pending(1, 2, 3, 4);
        m.leader.set(1);
        let text = m.render(None, None);
        assert!(
            text.contains(
                "scheduler_schedule_attempts_total{profile=\"a\\\"b\\nfake_metric 2\",result=\"scheduled\"} 1"
            ),
            "{text}"
        );
        assert!(!text.lines().any(|l| l.starts_with("fake_metric")), "{text}");
        assert!(
            text.contains("scheduler_pending_pods{queue=\"unschedulable\"} 3"),
            "{text}"
        );
        assert!(text.contains("wasmsched_leader 1"), "{text}");
        assert!(
            text.contains("scheduler_scheduling_attempt_duration_seconds_bucket{le=\"0.001\",profile="),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
