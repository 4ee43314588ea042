//! Shadow mode: a new version of a plugin decides a sample of the live
//! scheduling cycles again, off the scheduling thread, and is compared
//! with the version serving. It never places a pod, writes an event or a
//! condition, or touches the queue: it gets each sampled cycle's inputs
//! (the snapshot, the nominations, the tie-breaker and the node sampling
//! as they were) after the cycle ran, through a bounded queue that drops
//! (and counts) what it cannot take rather than wait, and what would make
//! it hold more copies of the snapshot than `PINNED_NODES` allows.
//!
//! The shadow versions come from a directory of their own
//! (`wasmPlugins.shadow.directory`), loaded and watched like the serving
//! one, under the same limits: a component there shadows the serving
//! plugin of the same name in every profile that enables it. Its memory
//! comes from a share of the budget of its own, so a shadow that eats
//! memory, traps or loops fails its own calls, never serving's.
//!
//! It runs the points that decide the node, PostFilter included, and skips
//! Reserve, Permit, PreBind and PostBind: they act on the decision (the
//! plugin's state, pods held at Permit, the binding), which a shadow must
//! not.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasmsched_core::Snapshot;
use wasmsched_core::config::Config;
use wasmsched_core::framework::{CycleOutcome, CycleRecord, Explanation, Framework, ScheduleError, explanation_of};
use wasmsched_core::plugins::Registry;
use wasmsched_core::scheduler::{ShadowCase, ShadowTap};
use wasmsched_wasm::PluginHost;

/// Sampled cycles waiting for the shadow at most; more are dropped.
const QUEUE: usize = 64;
/// Node rows the snapshot versions held by the queued cycles may have
/// together (about 120 bytes each: 12 MB). A cycle sampled on a snapshot
/// the queue still holds makes the next cycle copy it (copy on write), so
/// each version the queue holds is a copy the scheduling thread made; a
/// cycle on one more version past this is dropped. 2 versions at 50 000
/// nodes, the whole queue under 1 563; one version is always taken.
const PINNED_NODES: usize = 100_000;
/// Disagreements kept for `/debug/shadow`.
const KEPT: usize = 50;
/// The shadow thread works at most this share of the time: after a cycle
/// of `d` it rests `d × (100 / DUTY_PERCENT − 1)`, and what is sampled
/// meanwhile waits in the queue or is dropped. On a busy machine a thread
/// that works without rest slows serving even at idle priority (the cores'
/// caches and memory bandwidth are shared); a quarter bounds that.
const DUTY_PERCENT: u32 = 25;

/// A shadow directory to compare with serving (`wasmPlugins.shadow`).
pub struct ShadowOptions {
    /// The shadow directory's plugins (sharing the serving engine and its
    /// budget).
    pub host: Arc<PluginHost>,
    /// Percent of a shadowed profile's cycles compared.
    pub sample_percent: u32,
}

/// What the shadow thread builds its frameworks from.
struct Setup {
    host: Arc<PluginHost>,
    /// The serving registry: built-ins and the serving plugins.
    registry: Registry,
    /// The scheduler configuration (its profiles).
    config: Config,
    /// Per profile, the plugins its serving framework runs.
    profile_plugins: Vec<Vec<String>>,
}

/// How a shadow's decision compares with the serving one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Comparison {
    /// The same node, or one the shadow scores as high as its own choice
    /// (a tie it broke otherwise).
    SameNode,
    /// Both placed the pod, on different nodes.
    OtherNode,
    /// Serving placed the pod; the shadow would leave it unschedulable.
    Unschedulable,
    /// Serving could not place the pod; the shadow could.
    Schedulable,
    /// Neither could place it.
    BothUnschedulable,
    /// The shadow's cycle failed (its plugin's error, trap, timeout).
    ShadowError,
    /// The serving cycle failed: nothing to compare.
    ServingError,
}

impl Comparison {
    /// All of them, in the order reports list them.
    pub const ALL: [Comparison; 7] = [
        Comparison::SameNode,
        Comparison::OtherNode,
        Comparison::Unschedulable,
        Comparison::Schedulable,
        Comparison::BothUnschedulable,
        Comparison::ShadowError,
        Comparison::ServingError,
    ];

    /// Its name in metrics and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Comparison::SameNode => "same_node",
            Comparison::OtherNode => "other_node",
            Comparison::Unschedulable => "unschedulable",
            Comparison::Schedulable => "schedulable",
            Comparison::BothUnschedulable => "both_unschedulable",
            Comparison::ShadowError => "shadow_error",
            Comparison::ServingError => "serving_error",
        }
    }

    /// Whether a person should look at it.
    fn disagrees(self) -> bool {
        matches!(
            self,
            Comparison::OtherNode | Comparison::Unschedulable | Comparison::Schedulable | Comparison::ShadowError
        )
    }
}

/// Distinct unschedulable reasons kept per profile; the rest are counted
/// under [`OTHER_REASONS`].
const REASONS_KEPT: usize = 64;
const OTHER_REASONS: &str = "(other reasons)";

/// One profile's counts.
#[derive(Debug, Default, Clone)]
struct Tally {
    by: BTreeMap<Comparison, u64>,
    /// Sum and count of the rank correlations of the cycles that had one.
    rank_sum: f64,
    ranked: u64,
    /// The shadow's reasons for the pods it would leave unschedulable
    /// (that serving placed): reason → nodes, summed over pods, as
    /// kube-scheduler counts them in its message.
    reasons: BTreeMap<String, u64>,
    /// Reasons counted under [`OTHER_REASONS`], not kept.
    reasons_folded: u64,
    /// Serving's and the shadow's cycle time, summed over compared cycles.
    serving_seconds: f64,
    shadow_seconds: f64,
    timed: u64,
    /// The shadow versions compared (`plugin version`): kept after a
    /// promotion, when the directory no longer holds them.
    versions: BTreeSet<String>,
}

impl Tally {
    /// Adds `histogram` (reason, nodes) to the reasons. Reasons are
    /// plugins' text: a plugin that words each one differently (one per
    /// node) fills no more than [`REASONS_KEPT`] entries.
    fn count_reasons(&mut self, histogram: impl IntoIterator<Item = (String, usize)>) {
        for (reason, nodes) in histogram {
            let key = if self.reasons.len() < REASONS_KEPT || self.reasons.contains_key(&reason) {
                reason
            } else {
                self.reasons_folded += 1;
                OTHER_REASONS.to_owned()
            };
            *self.reasons.entry(key).or_default() += nodes as u64;
        }
    }
}

/// What the shadow found so far: a tally per profile, [`KEPT`]
/// disagreements. Cloned whole for `/debug/shadow` and `/metrics`.
#[derive(Default, Clone)]
struct Report {
    by_profile: BTreeMap<String, Tally>,
    /// Shared, so that a copy of the report costs no copy of them.
    recent: VecDeque<Arc<Value>>,
    /// Why a shadowed profile has no shadow framework, if it failed to build.
    build_errors: Vec<String>,
}

/// The shadow's shared state: what `/debug/shadow` and `/metrics` read.
pub struct Shadow {
    host: Arc<PluginHost>,
    percent: u32,
    /// Per profile: whether it has a shadow framework now.
    shadowed: Vec<AtomicBool>,
    /// Profile names, by index.
    profiles: Vec<String>,
    sampled: AtomicU64,
    dropped: AtomicU64,
    /// Cycles the shadow thread is done with.
    done: AtomicU64,
    report: Mutex<Report>,
    /// The shadow's cycle time.
    durations: prometheus_client::metrics::histogram::Histogram,
}

/// Hands sampled cycles to the shadow thread.
struct Tap {
    tx: SyncSender<Queued>,
    shared: Arc<Shadow>,
    pins: Pins,
}

/// A sampled cycle on its way to the shadow, with the pin of its snapshot
/// version (dropped after the case: fields drop in order).
struct Queued {
    case: ShadowCase,
    pin: Pin,
}

/// One in each queued cycle of a snapshot version and one in [`Pins`]:
/// the version is held for the shadow while any other remains.
type Pin = Arc<()>;

/// The snapshot versions the queued cycles hold, each a copy of the
/// snapshot the scheduling thread made because the shadow held the last,
/// bounded by [`PINNED_NODES`]. Only the scheduling thread (the tap)
/// uses it.
#[derive(Default)]
struct Pins {
    versions: Vec<Pinned>,
}

struct Pinned {
    /// Which version: the allocation stays while this is held, so its
    /// address names no other snapshot meanwhile.
    snapshot: Weak<Snapshot>,
    nodes: usize,
    held: Pin,
}

impl Pins {
    /// A pin for a cycle on `snapshot`; none when holding one more version
    /// would pass [`PINNED_NODES`].
    fn pin(&mut self, snapshot: &Arc<Snapshot>) -> Option<Pin> {
        self.versions.retain(|v| Arc::strong_count(&v.held) > 1);
        if let Some(v) = self
            .versions
            .iter()
            .find(|v| v.snapshot.as_ptr() == Arc::as_ptr(snapshot))
        {
            return Some(v.held.clone());
        }
        let nodes = snapshot.nodes.len();
        let held: usize = self.versions.iter().map(|v| v.nodes).sum();
        if !self.versions.is_empty() && held + nodes > PINNED_NODES {
            return None;
        }
        let held = Pin::default();
        self.versions.push(Pinned {
            snapshot: Arc::downgrade(snapshot),
            nodes,
            held: held.clone(),
        });
        Some(held)
    }
}

impl ShadowTap for Tap {
    fn wants(&self, profile: usize, _pod: &wasmsched_core::PodInfo) -> bool {
        self.shared
            .shadowed
            .get(profile)
            .is_some_and(|b| b.load(Ordering::Relaxed))
    }

    fn take(&mut self, case: ShadowCase) {
        self.shared.sampled.fetch_add(1, Ordering::Relaxed);
        // Dropped when the queue is full, or when it would hold one more
        // snapshot version than it may.
        let sent = self
            .pins
            .pin(&case.snapshot)
            .is_some_and(|pin| self.tx.try_send(Queued { case, pin }).is_ok());
        if !sent {
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Shadow {
    /// Starts the shadow thread for the profiles of `config` (whose
    /// serving frameworks `sched` runs, built from `registry`) and hands
    /// its tap to `sched`. The thread ends when `sched` is dropped.
    pub fn start(
        opts: ShadowOptions,
        registry: Registry,
        config: Config,
        sched: &mut wasmsched_core::Scheduler,
    ) -> std::io::Result<Arc<Shadow>> {
        let profile_plugins: Vec<Vec<String>> = sched
            .frameworks()
            .iter()
            .map(|fw| fw.plugins().iter().map(|p| p.name().to_owned()).collect())
            .collect();
        let n = profile_plugins.len();
        let setup = Setup {
            host: opts.host,
            registry,
            config,
            profile_plugins,
        };
        let shared = Arc::new(Shadow {
            host: setup.host.clone(),
            percent: opts.sample_percent,
            shadowed: (0..n).map(|_| AtomicBool::new(false)).collect(),
            profiles: setup.config.profiles.iter().map(|p| p.scheduler_name.clone()).collect(),
            sampled: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            done: AtomicU64::new(0),
            report: Mutex::default(),
            durations: prometheus_client::metrics::histogram::Histogram::new(
                prometheus_client::metrics::histogram::exponential_buckets(0.000_1, 2.0, 16),
            ),
        });
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
        let mut runner = Runner {
            setup,
            shared: shared.clone(),
            frameworks: (0..n).map(|_| None).collect(),
            built_at: None,
        };
        // Frameworks for the shadows already loaded, before any cycle.
        runner.refresh();
        std::thread::Builder::new().name("shadow".into()).spawn(move || {
            // Serving's threads first. Not `SCHED_IDLE`: a thread that may
            // wait for a core without bound would see its plugin calls pass
            // their deadlines (wall clock) on a busy machine, and report
            // timeouts the version does not have.
            if let Err(e) = wasmsched_wasm::lower_priority() {
                tracing::warn!(error = %e, "the shadow thread runs at the scheduler's priority");
            }
            runner.run(rx);
        })?;
        sched.set_shadow(
            Box::new(Tap {
                tx,
                shared: shared.clone(),
                pins: Pins::default(),
            }),
            opts.sample_percent,
        );
        Ok(shared)
    }

    /// The percent of cycles sampled.
    pub fn percent(&self) -> u32 {
        self.percent
    }

    /// The shadow directory's host.
    pub fn host(&self) -> &Arc<PluginHost> {
        &self.host
    }

    /// Sampled cycles dropped because the shadow was behind.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Waits, at most `limit`, until the shadow has compared every cycle
    /// it was handed and did not drop; whether it has.
    pub fn wait_idle(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            let handed = self.sampled.load(Ordering::Acquire);
            let settled = self.done.load(Ordering::Acquire) + self.dropped();
            if settled >= handed {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Report> {
        self.report.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `/debug/shadow`: the versions compared, the counts per profile, and
    /// the last disagreements, newest first.
    pub fn json(&self) -> Value {
        // Formatted from a copy (bounded, its disagreements shared), not
        // under the lock the shadow thread records each cycle under.
        let report = self.lock().clone();
        self.render(&report)
    }

    /// [`Shadow::json`] of `r`.
    fn render(&self, r: &Report) -> Value {
        let profiles: serde_json::Map<String, Value> = r
            .by_profile
            .iter()
            .map(|(name, t)| {
                let counts: serde_json::Map<String, Value> = Comparison::ALL
                    .iter()
                    .map(|c| (c.name().to_owned(), json!(t.by.get(c).copied().unwrap_or(0))))
                    .collect();
                let compared: u64 =
                    t.by.iter()
                        .filter(|(c, _)| **c != Comparison::ServingError)
                        .map(|(_, n)| n)
                        .sum();
                let same = t.by.get(&Comparison::SameNode).copied().unwrap_or(0);
                let mean = |s: f64| (t.timed > 0).then(|| s / t.timed as f64 * 1e3);
                (
                    name.clone(),
                    json!({
                        "compared": compared,
                        "agreement": (compared > 0).then(|| same as f64 / compared as f64),
                        "results": counts,
                        "rankCorrelation": (t.ranked > 0).then(|| t.rank_sum / t.ranked as f64),
                        "unschedulableReasons": t.reasons,
                        "unschedulableReasonsFolded": t.reasons_folded,
                        "versionsCompared": t.versions,
                        "servingMeanMs": mean(t.serving_seconds),
                        "shadowMeanMs": mean(t.shadow_seconds),
                    }),
                )
            })
            .collect();
        json!({
            "samplePercent": self.percent,
            "directory": self.host.config().directory,
            "versions": self.versions(),
            "shadowedProfiles": self
                .profiles
                .iter()
                .zip(&self.shadowed)
                .filter(|(_, on)| on.load(Ordering::Relaxed))
                .map(|(p, _)| p)
                .collect::<Vec<_>>(),
            "sampled": self.sampled.load(Ordering::Relaxed),
            "dropped": self.dropped(),
            "profiles": profiles,
            "buildErrors": r.build_errors,
            "disagreements": r.recent.iter().rev().map(|d| &**d).collect::<Vec<_>>(),
        })
    }

    /// The shadow versions loaded, with their sandbox counters.
    fn versions(&self) -> Vec<Value> {
        let slots = self.host.slots();
        self.host
            .versions()
            .into_iter()
            .map(|(file, plugin, version)| {
                use wasmsched_core::Plugin as _;
                let stats = slots.iter().find(|s| s.name() == plugin).map(|s| s.stats());
                let count = |f: fn(&wasmsched_wasm::PluginStats) -> &AtomicU64| {
                    stats.as_ref().map_or(0, |s| f(s).load(Ordering::Relaxed))
                };
                json!({
                    "file": file,
                    "plugin": plugin,
                    "version": version,
                    "traps": count(|s| &s.traps),
                    "timeouts": count(|s| &s.timeouts),
                    "errors": count(|s| &s.errors),
                    "outOfMemory": count(|s| &s.out_of_memory),
                    "logsDropped": count(|s| &s.logs_dropped),
                    "memoryBytes": stats.as_ref().map_or(0, |s| s.share.used()),
                })
            })
            .collect()
    }

    /// The shadow's metrics, read when scraped.
    pub fn registry(&self) -> prometheus_client::registry::Registry {
        use crate::metrics::{ProfileLabel, ProfileResult};
        use prometheus_client::metrics::counter::Counter;
        use prometheus_client::metrics::family::Family;
        use prometheus_client::metrics::gauge::Gauge;
        let mut reg = prometheus_client::registry::Registry::default();
        let cycles = Family::<ProfileResult, Counter>::default();
        let rank = Family::<ProfileLabel, prometheus_client::metrics::gauge::Gauge<f64, std::sync::atomic::AtomicU64>>::default();
        let by_profile = self.lock().by_profile.clone();
        for (profile, t) in &by_profile {
            for c in Comparison::ALL {
                cycles
                    .get_or_create(&ProfileResult {
                        profile: profile.clone(),
                        result: c.name(),
                    })
                    .inc_by(t.by.get(&c).copied().unwrap_or(0));
            }
            if t.ranked > 0 {
                rank.get_or_create(&ProfileLabel {
                    profile: profile.clone(),
                })
                .set(t.rank_sum / t.ranked as f64);
            }
        }
        reg.register(
            "wasmsched_shadow_cycles",
            "Sampled scheduling cycles the shadow decided again, by how its decision compares with serving's",
            cycles,
        );
        reg.register(
            "wasmsched_shadow_rank_correlation",
            "Mean rank correlation (Spearman) of serving's and the shadow's node totals, over the nodes both found feasible",
            rank,
        );
        let dropped = Counter::<u64>::default();
        dropped.inc_by(self.dropped());
        reg.register(
            "wasmsched_shadow_cycles_dropped",
            "Sampled cycles not compared because the shadow was behind",
            dropped,
        );
        reg.register(
            "wasmsched_shadow_cycle_duration_seconds",
            "The shadow's scheduling cycle time",
            self.durations.clone(),
        );
        let pct: Gauge = Gauge::default();
        pct.set(i64::from(self.percent));
        reg.register(
            "wasmsched_shadow_sample_percent",
            "Percent of a shadowed profile's cycles the shadow decides again",
            pct,
        );
        reg
    }
}

/// The shadow thread's own state.
struct Runner {
    setup: Setup,
    shared: Arc<Shadow>,
    /// Per profile, its shadow framework when one of its plugins has a
    /// shadow version.
    frameworks: Vec<Option<Framework>>,
    /// The host's change count and the plugin names the frameworks were
    /// built for.
    built_at: Option<(u64, BTreeSet<String>)>,
}

impl Runner {
    fn run(&mut self, rx: Receiver<Queued>) {
        loop {
            self.refresh();
            match rx.recv_timeout(Duration::from_millis(500)) {
                Ok(Queued { case, pin }) => {
                    let t0 = Instant::now();
                    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.compare(case)));
                    // Done with its snapshot: not held while resting.
                    drop(pin);
                    if let Err(p) = result {
                        tracing::error!(
                            error = %wasmsched_core::scheduler::panic_message(&*p),
                            "the shadow's cycle panicked"
                        );
                    }
                    self.shared.done.fetch_add(1, Ordering::Release);
                    std::thread::sleep(t0.elapsed() * (100 / DUTY_PERCENT - 1));
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// Rebuilds the shadow frameworks when the set of shadow plugins
    /// loaded changed (a new version of one is swapped into its slot by
    /// the host, without a rebuild).
    fn refresh(&mut self) {
        let host = &self.setup.host;
        let changes = host.changes();
        if self.built_at.as_ref().is_some_and(|(c, _)| *c == changes) {
            return;
        }
        let loaded: BTreeSet<String> = host.versions().into_iter().map(|(_, n, _)| n).collect();
        if self.built_at.as_ref().is_some_and(|(_, names)| *names == loaded) {
            self.built_at = Some((changes, loaded));
            return;
        }
        let mut registry = self.setup.registry.clone();
        host.register_loaded(&mut registry);
        let mut errors = Vec::new();
        for (i, plugins) in self.setup.profile_plugins.iter().enumerate() {
            let shadowed = plugins.iter().any(|p| loaded.contains(p));
            self.frameworks[i] = if shadowed {
                match self.setup.config.build_framework(i, &registry) {
                    Ok(fw) => Some(fw),
                    Err(e) => {
                        let profile = self.shared.profiles.get(i).cloned().unwrap_or_default();
                        tracing::error!(profile, error = %e, "the shadow of this profile cannot be built");
                        errors.push(format!("profile {profile}: {e}"));
                        None
                    }
                }
            } else {
                None
            };
            self.shared.shadowed[i].store(self.frameworks[i].is_some(), Ordering::Relaxed);
        }
        if !loaded.is_empty() {
            tracing::info!(plugins = ?loaded, percent = self.shared.percent, "shadow versions compared on live cycles");
        }
        self.shared.lock().build_errors = errors;
        self.built_at = Some((changes, loaded));
    }

    /// Decides the case's pod with the shadow framework and records how it
    /// compares. The cycle keeps a record (totals and rejections by node
    /// position), as cheap as serving's; only a disagreement is decided
    /// again, explained, for its per-plugin scores.
    fn compare(&mut self, case: ShadowCase) {
        let Some(fw) = self.frameworks.get(case.profile).and_then(Option::as_ref) else {
            return;
        };
        let t0 = Instant::now();
        let (result, record) = case.decide(fw, false);
        let took = t0.elapsed();
        self.shared.durations.observe(took.as_secs_f64());
        let shadow = CycleOutcome::of(&result);
        let verdict = classify(&case, &shadow, &record);
        let rank = rank_correlation(&case.record, &record);
        let entry = verdict.disagrees().then(|| {
            // A failed cycle is not run again: its error says what failed,
            // and a shadow that traps or loops is not called twice for it.
            let explained = (verdict != Comparison::ShadowError).then(|| case.decide(fw, true).0);
            let explanation = explained.as_ref().and_then(explanation_of);
            disagreement(&fw.profile, verdict, &case, &shadow, &record, explanation)
        });
        let versions = self.versions();
        let mut report = self.shared.lock();
        let t = report.by_profile.entry(fw.profile.clone()).or_default();
        *t.by.entry(verdict).or_default() += 1;
        if t.versions.len() < 16 {
            t.versions.extend(versions.iter().map(|(p, v)| format!("{p} {v}")));
        }
        if let Some(r) = rank {
            t.rank_sum += r;
            t.ranked += 1;
        }
        if verdict != Comparison::ServingError {
            t.serving_seconds += case.took.as_secs_f64();
            t.shadow_seconds += took.as_secs_f64();
            t.timed += 1;
        }
        if let (Comparison::Unschedulable, Err(ScheduleError::Unschedulable(fit))) = (verdict, &result) {
            t.count_reasons(fit.histogram());
        }
        if let Some(mut entry) = entry {
            entry["shadowVersions"] = json!(versions);
            if report.recent.len() == KEPT {
                report.recent.pop_front();
            }
            report.recent.push_back(Arc::new(entry));
        }
    }

    /// `plugin → version` of the shadow versions loaded.
    fn versions(&self) -> BTreeMap<String, String> {
        self.setup
            .host
            .versions()
            .into_iter()
            .map(|(_, plugin, version)| (plugin, version))
            .collect()
    }
}

/// How the shadow's outcome (and `record`) compares with serving's.
fn classify(case: &ShadowCase, shadow: &CycleOutcome, record: &CycleRecord) -> Comparison {
    use CycleOutcome::*;
    match (&case.serving, shadow) {
        (Error(_), _) => Comparison::ServingError,
        (_, Error(_)) => Comparison::ShadowError,
        (Placed(a), Placed(b)) if a == b => Comparison::SameNode,
        (Placed(a), Placed(b)) => {
            // A tie the shadow broke otherwise is no disagreement.
            let total = |n: &str| match case.snapshot.position(n).and_then(|p| record.verdict(p)) {
                Some(Ok(t)) => t,
                _ => None,
            };
            match (total(a), total(b)) {
                (Some(x), Some(y)) if x == y => Comparison::SameNode,
                _ => Comparison::OtherNode,
            }
        }
        (Placed(_), Unschedulable(_)) => Comparison::Unschedulable,
        (Unschedulable(_), Placed(_)) => Comparison::Schedulable,
        (Unschedulable(_), Unschedulable(_)) => Comparison::BothUnschedulable,
    }
}

/// Spearman's rank correlation of serving's and the shadow's totals over
/// the nodes both scored; `None` with fewer than two such nodes, or when
/// either side scores them all alike.
fn rank_correlation(serving: &CycleRecord, shadow: &CycleRecord) -> Option<f64> {
    let theirs: std::collections::HashMap<usize, i64> =
        shadow.feasible.iter().filter_map(|(p, t)| Some((*p, (*t)?))).collect();
    let pairs: Vec<(f64, f64)> = serving
        .feasible
        .iter()
        .filter_map(|(p, t)| Some(((*t)? as f64, *theirs.get(p)? as f64)))
        .collect();
    if pairs.len() < 2 {
        return None;
    }
    let (a, b): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
    pearson(&ranks(&a), &ranks(&b))
}

/// Ranks (1-based), ties sharing their mean rank.
fn ranks(v: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&i, &j| v[i].total_cmp(&v[j]));
    let mut out = vec![0.0; v.len()];
    let mut k = 0;
    while k < idx.len() {
        let mut end = k;
        while end + 1 < idx.len() && v[idx[end + 1]] == v[idx[k]] {
            end += 1;
        }
        let mean = (k + end) as f64 / 2.0 + 1.0;
        for &i in &idx[k..=end] {
            out[i] = mean;
        }
        k = end + 1;
    }
    out
}

fn pearson(a: &[f64], b: &[f64]) -> Option<f64> {
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let (mut cov, mut va, mut vb) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        cov += (x - ma) * (y - mb);
        va += (x - ma) * (x - ma);
        vb += (y - mb) * (y - mb);
    }
    (va > 0.0 && vb > 0.0).then(|| cov / (va * vb).sqrt())
}

/// A disagreement for a person to read: the pod, both decisions, and what
/// each version said about both nodes (the shadow's per-plugin scores
/// from `explanation`, its cycle decided again).
fn disagreement(
    profile: &str,
    verdict: Comparison,
    case: &ShadowCase,
    shadow: &CycleOutcome,
    record: &CycleRecord,
    explanation: Option<&Explanation>,
) -> Value {
    let side = |o: &CycleOutcome| match o {
        CycleOutcome::Placed(n) => json!({ "node": n }),
        CycleOutcome::Unschedulable(m) => json!({ "node": null, "unschedulable": m }),
        CycleOutcome::Error(m) => json!({ "node": null, "error": m }),
    };
    let said = |r: &CycleRecord, node: &str| match case.snapshot.position(node).and_then(|p| r.verdict(p)) {
        Some(Ok(total)) => json!({ "feasible": true, "total": total }),
        Some(Err(st)) => json!({ "rejected": st.message(), "plugin": st.plugin() }),
        None => json!({ "evaluated": false }),
    };
    let mut nodes: Vec<&str> = Vec::new();
    for o in [&case.serving, shadow] {
        if let CycleOutcome::Placed(n) = o
            && !nodes.contains(&n.as_str())
        {
            nodes.push(n);
        }
    }
    let on: Vec<Value> = nodes
        .into_iter()
        .map(|node| {
            let mut theirs = said(record, node);
            let scores = explanation
                .and_then(|x| x.nodes.iter().find(|n| n.node == node))
                .filter(|n| n.rejected.is_none() && !n.scores.is_empty());
            if let Some(n) = scores {
                theirs["scores"] = n
                    .scores
                    .iter()
                    .map(|s| json!({ "plugin": s.plugin, "raw": s.raw, "weighted": s.weighted }))
                    .collect();
            }
            json!({ "node": node, "serving": said(&case.record, node), "shadow": theirs })
        })
        .collect();
    json!({
        "time": crate::daemon::time_now(),
        "profile": profile,
        "pod": case.pod.key,
        "result": verdict.name(),
        "serving": side(&case.serving),
        "shadow": side(shadow),
        "nodes": on,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_share_their_rank_and_opposite_orders_correlate_minus_one() {
        assert_eq!(ranks(&[10.0, 20.0, 20.0, 5.0]), vec![2.0, 3.5, 3.5, 1.0]);
        let r = pearson(&ranks(&[1.0, 2.0, 3.0]), &ranks(&[30.0, 20.0, 10.0])).unwrap();
        assert!((r + 1.0).abs() < 1e-9);
        assert_eq!(pearson(&ranks(&[1.0, 1.0]), &ranks(&[1.0, 2.0])), None);
    }

    #[test]
    fn the_reasons_table_is_bounded() {
        let mut t = Tally::default();
        t.count_reasons((0..1000).map(|i| (format!("node {i} is too slow"), 1)));
        t.count_reasons([("node 0 is too slow".to_owned(), 2)]);
        assert_eq!(t.reasons.len(), REASONS_KEPT + 1);
        assert_eq!(t.reasons["node 0 is too slow"], 3);
        assert_eq!(t.reasons[OTHER_REASONS], 1000 - REASONS_KEPT as u64);
        assert_eq!(t.reasons_folded, 1000 - REASONS_KEPT as u64);
    }

    /// Many compared cycles of a large cluster, each with a reason per
    /// node (a plugin naming the node in its reason): the table keeps its
    /// size, and says how many reasons it folded.
    #[test]
    fn the_reasons_table_stays_bounded_over_many_cycles_of_many_nodes() {
        let (cycles, nodes) = (200, 5000);
        let mut t = Tally::default();
        for c in 0..cycles {
            t.count_reasons((0..nodes).map(|n| (format!("node-{n:05} is too slow in cycle {c}"), 1)));
            assert!(t.reasons.len() <= REASONS_KEPT + 1);
        }
        let bytes: usize = t.reasons.keys().map(String::len).sum();
        assert!(bytes < 4096, "{bytes} bytes of reasons");
        assert_eq!(t.reasons.values().sum::<u64>(), (cycles * nodes) as u64);
        assert_eq!(t.reasons_folded, (cycles * nodes - REASONS_KEPT) as u64);
    }

    /// A shadow with no thread and an empty host, for what the tap and the
    /// report do.
    fn idle_shadow() -> Arc<Shadow> {
        let engine = wasmsched_wasm::WasmEngine::new(None).unwrap();
        let host = PluginHost::new(engine, wasmsched_wasm::WasmConfig::default(), 1);
        Arc::new(Shadow {
            host,
            percent: 100,
            shadowed: vec![AtomicBool::new(true)],
            profiles: vec!["p".into()],
            sampled: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            done: AtomicU64::new(0),
            report: Mutex::default(),
            durations: prometheus_client::metrics::histogram::Histogram::new([1.0]),
        })
    }

    #[test]
    fn debug_shadow_is_formatted_outside_the_lock_the_shadow_records_under() {
        let shadow = idle_shadow();
        {
            let mut r = shadow.lock();
            for i in 0..KEPT {
                r.recent.push_back(Arc::new(json!({ "pod": format!("d/p{i}") })));
            }
            let t = r.by_profile.entry("p".into()).or_default();
            t.count_reasons((0..5000).map(|n| (format!("node-{n} is too slow"), 1)));
            *t.by.entry(Comparison::Unschedulable).or_default() += 1;
        }
        // The copy taken under the lock shares the disagreements.
        let copy = shadow.lock().clone();
        assert!(Arc::ptr_eq(&copy.recent[0], &shadow.lock().recent[0]));
        // Formatting while the shadow thread holds the lock does not wait.
        let recording = shadow.lock();
        let (tx, rx) = std::sync::mpsc::channel();
        let s = shadow.clone();
        std::thread::spawn(move || tx.send(s.render(&copy)).unwrap());
        let v = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("formatting waited for the shadow's lock");
        drop(recording);
        assert_eq!(v["disagreements"].as_array().unwrap().len(), KEPT);
        assert_eq!(v["disagreements"][0]["pod"], format!("d/p{}", KEPT - 1));
        let p = &v["profiles"]["p"];
        assert_eq!(p["unschedulableReasons"].as_object().unwrap().len(), REASONS_KEPT + 1);
        assert_eq!(p["unschedulableReasonsFolded"], 5000 - REASONS_KEPT);
        assert_eq!(shadow.json(), v);
    }

    /// A snapshot of the nodes `a`, `b` and `c`.
    fn three_nodes() -> Snapshot {
        let mut cache = wasmsched_core::Cache::new();
        for n in ["a", "b", "c"] {
            let node: k8s_openapi::api::core::v1::Node = serde_json::from_value(json!({
                "metadata": {"name": n},
                "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}}
            }))
            .unwrap();
            cache.upsert_node(wasmsched_core::NodeData::from_node(&node).unwrap());
        }
        let mut snapshot = Snapshot::default();
        cache.update_snapshot(&mut snapshot);
        snapshot
    }

    /// A sampled cycle of a pod on `snapshot`.
    fn case_on(snapshot: Arc<Snapshot>, serving: CycleOutcome) -> ShadowCase {
        let pod: k8s_openapi::api::core::v1::Pod =
            serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "d"}})).unwrap();
        ShadowCase {
            profile: 0,
            pod: Arc::new(wasmsched_core::pod::PodInfo::from_pod(&pod).unwrap()),
            snapshot,
            nominator: Arc::default(),
            next_start: 0,
            rng: wasmsched_core::rng::Rng::new(0),
            serving,
            record: CycleRecord::default(),
            took: Duration::ZERO,
        }
    }

    /// A shadow that takes nothing off its queue, fed 65 sampled cycles
    /// each on a snapshot version of its own (as the scheduling thread
    /// copies the snapshot the queue holds): at 50 000 nodes it holds two
    /// versions, drops the rest, and takes a new one once done with one.
    #[test]
    fn a_slow_shadow_pins_a_bounded_number_of_snapshot_versions() {
        let small = three_nodes();
        let mut big = Snapshot::default();
        big.nodes = vec![small.nodes[0].clone(); 50_000];
        let shadow = idle_shadow();
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
        let mut tap = Tap {
            tx,
            shared: shadow.clone(),
            pins: Pins::default(),
        };
        let placed = || CycleOutcome::Placed("a".into());
        for _ in 0..=QUEUE {
            tap.take(case_on(Arc::new(big.clone()), placed()));
        }
        assert_eq!(shadow.sampled.load(Ordering::Relaxed), QUEUE as u64 + 1);
        assert_eq!(shadow.dropped(), QUEUE as u64 - 1);
        let queued: Vec<Queued> = rx.try_iter().collect();
        assert_eq!(queued.len(), 2);
        // More cycles on a version the queue holds pin nothing more.
        tap.take(case_on(queued[1].case.snapshot.clone(), placed()));
        assert_eq!(shadow.dropped(), QUEUE as u64 - 1);
        tap.take(case_on(Arc::new(big.clone()), placed()));
        assert_eq!(shadow.dropped(), QUEUE as u64);
        // The shadow is done with the first version: one more fits.
        let mut queued = queued.into_iter();
        drop(queued.next());
        tap.take(case_on(Arc::new(big.clone()), placed()));
        tap.take(case_on(Arc::new(big.clone()), placed()));
        assert_eq!(shadow.dropped(), QUEUE as u64 + 1);
        assert_eq!(rx.try_iter().count(), 2, "the second version's cycle, and the third's");
        // A small cluster's versions fill the queue, and one version larger
        // than the bound is taken alone.
        let mut pins = Pins::default();
        let mut versions: Vec<(Arc<Snapshot>, Pin)> = Vec::new();
        for _ in 0..QUEUE {
            let v = Arc::new(small.clone());
            versions.push((v.clone(), pins.pin(&v).unwrap()));
        }
        let mut huge = Snapshot::default();
        huge.nodes = vec![small.nodes[0].clone(); PINNED_NODES + 1];
        let huge = Arc::new(huge);
        assert!(pins.pin(&huge).is_none());
        versions.clear();
        let pin = pins.pin(&huge).unwrap();
        assert!(pins.pin(&Arc::new(small.clone())).is_none());
        drop(pin);
    }

    #[test]
    fn a_tie_broken_otherwise_is_agreement() {
        let snapshot = three_nodes();
        let pos = |n: &str| snapshot.position(n).unwrap();
        let shadow_record = CycleRecord {
            feasible: vec![(pos("a"), Some(100)), (pos("b"), Some(100)), (pos("c"), Some(50))],
            rejected: Vec::new(),
        };
        let case = |serving: CycleOutcome| case_on(Arc::new(snapshot.clone()), serving);
        let placed = |n: &str| CycleOutcome::Placed(n.into());
        let unsched = CycleOutcome::Unschedulable("0/3 nodes are available".into());
        let cmp = |serving: CycleOutcome, shadow: &CycleOutcome| classify(&case(serving), shadow, &shadow_record);
        assert_eq!(cmp(placed("a"), &placed("b")), Comparison::SameNode);
        assert_eq!(cmp(placed("c"), &placed("b")), Comparison::OtherNode);
        assert_eq!(cmp(placed("a"), &unsched), Comparison::Unschedulable);
        assert_eq!(cmp(unsched.clone(), &placed("a")), Comparison::Schedulable);
        assert_eq!(
            cmp(CycleOutcome::Error("x".into()), &placed("a")),
            Comparison::ServingError
        );
    }
}
