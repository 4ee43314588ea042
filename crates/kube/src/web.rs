//! The web view on the admin port (`/ui`): the cluster as the scheduler
//! sees it (a tile per node), the queue (each pending pod with the reason
//! its last attempt gave and how long it has waited; gated pods with their
//! gates; nominated pods), and the plugins (each WebAssembly plugin's
//! version, digest, compiler, failures and memory, and the shadow
//! comparison). Read-only: nothing on it changes the cluster.
//!
//! Server-rendered HTML (maud escapes every value: labels, reasons and
//! plugin names come from the cluster and from plugins), with a small
//! script and stylesheet embedded in the binary, no CDN: the page works in
//! an air-gapped cluster. The script refreshes the view shown every two
//! seconds by fetching its fragment (`/ui/cluster`, `/ui/queue`,
//! `/ui/plugins`); without it the page is a snapshot.
//!
//! The scheduling thread owns the state. It publishes a [`View`] (at most
//! twice a second) only while someone looked at the page in the last ten
//! seconds, so a scheduler nobody watches pays nothing.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use maud::{DOCTYPE, Markup, PreEscaped, html};
use wasmsched_core::CycleState;
use wasmsched_core::dra::DraPlan;
use wasmsched_core::framework::{CycleOutcome, Explanation, Framework, ScheduleError, ScheduleResult, explanation_of};
use wasmsched_core::queue::Location;
use wasmsched_core::scheduler::{Scheduler, ShadowCase, ShadowTap};

/// Nodes on one page of the cluster view.
pub const NODES_PER_PAGE: usize = 200;
/// Pods named on a node's tile (the rest are counted).
const PODS_PER_TILE: usize = 8;
/// DRA devices named on a node's tile (the rest are counted).
const DEVICES_PER_TILE: usize = 8;
/// Pending pods listed in the queue view (the rest are counted).
const QUEUE_ROWS: usize = 500;
/// Attempts listed, while the page is open.
const ATTEMPTS_KEPT: usize = 200;
/// Attempts kept with what they started from, to explain.
pub const DECISIONS_KEPT: usize = 50;
/// At most one attempt in this long is kept with what it started from:
/// keeping one makes the next cycle copy the node list (the ring holds the
/// snapshot the cycle would otherwise update in place), so every attempt
/// would cost a busy scheduler about a fifth of its throughput.
pub const EXPLAIN_EVERY: Duration = Duration::from_millis(100);
/// How long the page's last request keeps the thread recording attempts.
const WATCHED_FOR: Duration = Duration::from_secs(10);
/// Views are built at most this often, however many requests come: a
/// view newer than this is served as it is (the page refreshes every two
/// seconds; a build at 5000 nodes takes the scheduling thread ~23 ms).
pub const VIEW_EVERY: Duration = Duration::from_millis(500);
/// How long a decision explained again is served to the next requests for
/// the same pod before it is decided again.
const EXPLAINED_FOR: Duration = Duration::from_secs(2);
/// How long a pod whose decision was asked for keeps its next attempt
/// wanted.
const ASKED_FOR: Duration = Duration::from_secs(60);

const SCRIPT: &str = include_str!("web/app.js");
const STYLE: &str = include_str!("web/style.css");

/// The page's `Content-Security-Policy`: its one script and stylesheet,
/// known by their hashes, fragments fetched from the same origin, nothing
/// else, and no other site may frame it. Style attributes (the tiles'
/// bars) are allowed; they carry only numbers the server writes.
pub fn content_security_policy() -> &'static str {
    static CSP: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        use base64::Engine as _;
        use sha2::Digest as _;
        let hash = |s: &str| base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(s.as_bytes()));
        format!(
            "default-src 'none'; script-src 'sha256-{}'; style-src 'sha256-{}'; style-src-attr 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
            hash(SCRIPT),
            hash(STYLE)
        )
    });
    &CSP
}

/// One node as a tile.
#[derive(Debug, Clone)]
pub struct NodeTile {
    pub name: String,
    pub zone: String,
    pub cpu_allocatable_m: i64,
    pub cpu_requested_m: i64,
    pub memory_allocatable: i64,
    pub memory_requested: i64,
    pub pods: usize,
    /// The first pods' `namespace/name`.
    pub pod_names: Vec<String>,
    /// `key=value:Effect`.
    pub taints: Vec<String>,
    pub unschedulable: bool,
    /// The `Ready` condition is not `True`.
    pub not_ready: bool,
    /// Labels, for the filter.
    pub labels: Vec<(String, String)>,
    /// Pods on it per profile of this scheduler (by index in
    /// [`View::profiles`]; pods of other schedulers are not counted).
    pub by_profile: Vec<(usize, usize)>,
    /// The DRA devices it can use (ResourceSlices of the node, of nodes it
    /// matches, or of all nodes).
    pub devices: usize,
    /// Of those, the ones taken: allocated to a claim, or assumed for a
    /// pod whose binding is in flight.
    pub devices_taken: usize,
    /// The first devices as `driver/pool/device`, each with whether it is
    /// taken.
    pub device_names: Vec<(String, bool)>,
}

/// One pending pod.
#[derive(Debug, Clone)]
pub struct Pending {
    pub pod: String,
    pub profile: String,
    /// `active`, `backoff`, `unschedulable`, `in flight`, `gated` or
    /// `permit` (placed, held at Permit).
    pub state: &'static str,
    pub waited: Duration,
    pub attempts: u32,
    /// What its last attempt said (kube-scheduler's message).
    pub reason: Option<String>,
    /// Its scheduling gates, when gated.
    pub gates: Vec<String>,
    /// The node its preemption nominated.
    pub nominated: Option<String>,
    /// The pods its preemption evicts there.
    pub victims: Vec<String>,
    /// Its PodGroup (`namespace/name`) and the line the queue shows for
    /// it: name, policy, how many pods it has and how many fit in its
    /// last cycle.
    pub group: Option<(String, String)>,
}

/// How the queue names a pod's group: `pod group ml/train (gang,
/// minCount 4): 4 pods, 3 fit, 0 placed`.
fn group_line(sched: &Scheduler, pod: &wasmsched_core::PodInfo) -> Option<(String, String)> {
    let name = pod.scheduling_group.as_deref()?;
    let key = wasmsched_core::pod_groups::group_key(&pod.namespace, name);
    let groups = sched.pod_groups();
    let policy = match groups.get(&key).map(|g| g.policy) {
        Some(wasmsched_core::pod_groups::Policy::Gang { min_count }) => format!("gang, minCount {min_count}"),
        Some(wasmsched_core::pod_groups::Policy::Basic) => "basic".into(),
        None => "not created".into(),
    };
    let mut line = format!("pod group {key} ({policy}): {} pods", groups.all_pods(&key));
    if let Some(c) = sched.last_group_cycle(&key) {
        line.push_str(&format!(", {} fit, {} placed in its last cycle", c.fit, c.placed));
    }
    Some((key, line))
}

/// What the page shows, as the scheduling thread last published it.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// When it was built (RFC 3339).
    pub at: String,
    pub profiles: Vec<String>,
    pub nodes: Vec<NodeTile>,
    pub pending: Vec<Pending>,
    /// Pending pods in all (the view lists the first [`QUEUE_ROWS`]).
    pub pending_total: usize,
    /// The queue is this process's (not so for the extender, whose
    /// caller, kube-scheduler, holds it).
    pub has_queue: bool,
}

/// What the scheduling thread knows of pending pods beyond the queue: what
/// each one's last attempt said, and whom its preemption evicts.
#[derive(Debug, Default)]
pub struct Notes {
    pub reasons: HashMap<String, String>,
    pub victims: HashMap<String, Vec<String>>,
}

impl Notes {
    /// Forgets the pods no longer pending.
    pub(crate) fn retain(&mut self, pending: impl Fn(&str) -> bool) {
        self.reasons.retain(|k, _| pending(k));
        self.victims.retain(|k, _| pending(k));
    }
}

/// Builds a view on the caller's thread (the extender's: it has no
/// scheduling thread to publish one).
type Source = Box<dyn Fn() -> View + Send + Sync>;

/// The page's side of the view: what the thread published, and when the
/// page last asked.
#[derive(Default)]
pub struct Board {
    /// The view, and when it was published (milliseconds after `origin`).
    view: Mutex<Option<(u64, std::sync::Arc<View>)>>,
    /// When the last view was published (0: never).
    published_ms: AtomicU64,
    /// Builds views where no thread publishes them.
    source: std::sync::OnceLock<Source>,
    /// When the page last asked (0: never).
    asked_ms: AtomicU64,
    origin: std::sync::OnceLock<Instant>,
    /// The last attempts made while the page was open (newest last).
    attempts: Mutex<std::collections::VecDeque<Attempt>>,
    /// The attempts sampled with what each started from (newest last).
    decisions: Mutex<std::collections::VecDeque<(String, ShadowCase, Option<Now>)>>,
    /// A pod asked about that no kept attempt explains: the scheduling
    /// thread decides it against the cluster as it is now (one at a time).
    now_wanted: Mutex<Option<String>>,
    /// When the last attempt was sampled (milliseconds after `origin`;
    /// 0: never, so the first attempt after the page opens is).
    sampled_ms: AtomicU64,
    /// Pods whose decision was asked for and not kept, with when: their
    /// next attempt within [`ASKED_FOR`] is (at most [`DECISIONS_KEPT`]
    /// of them; the names come from requests).
    asked_pods: Mutex<HashMap<String, Instant>>,
    /// Builds views one at a time where no thread publishes them.
    building: Mutex<()>,
    /// Decisions are explained one at a time; the last one is served
    /// again for [`EXPLAINED_FOR`].
    explaining: Mutex<Option<(Instant, Decision)>>,
    /// `asked_pods` is not empty (read each cycle without the lock).
    any_asked: std::sync::atomic::AtomicBool,
    /// Wakes an idle scheduling thread when a request waits for a view.
    wake: tokio::sync::Notify,
    /// The profiles' frameworks, to explain a decision again (on the
    /// caller's thread, no worker pool).
    frameworks: std::sync::OnceLock<Vec<Framework>>,
}

impl Board {
    fn now_ms(&self) -> u64 {
        let origin = *self.origin.get_or_init(Instant::now);
        u64::try_from(origin.elapsed().as_millis()).unwrap_or(u64::MAX).max(1)
    }

    /// Whether the page asked recently.
    pub(crate) fn watched(&self) -> bool {
        let asked = self.asked_ms.load(Ordering::Relaxed);
        asked > 0 && self.now_ms().saturating_sub(asked) < WATCHED_FOR.as_millis() as u64
    }

    /// Whether a request waits for a view newer than the last published
    /// (and that one is at least [`VIEW_EVERY`] old).
    pub(crate) fn wanted(&self) -> bool {
        let published = self.published_ms.load(Ordering::Relaxed);
        self.asked_ms.load(Ordering::Relaxed) > published
            && (published == 0 || self.now_ms().saturating_sub(published) >= VIEW_EVERY.as_millis() as u64)
    }

    /// Publishes a view.
    pub(crate) fn publish(&self, view: View) {
        let at = self.now_ms();
        *self.view.lock().unwrap_or_else(|p| p.into_inner()) = Some((at, std::sync::Arc::new(view)));
        self.published_ms.store(at, Ordering::Relaxed);
    }

    /// Views are built on request by `source` (for a process without a
    /// scheduling thread).
    pub fn set_source(&self, source: impl Fn() -> View + Send + Sync + 'static) {
        let _ = self.source.set(Box::new(source));
    }

    /// Sets the frameworks decisions are explained with.
    pub fn set_frameworks(&self, frameworks: Vec<Framework>) {
        let _ = self
            .frameworks
            .set(frameworks.into_iter().map(|f| f.with_pool(None)).collect());
    }

    /// Whether the attempt of `pod` is to be kept with what it started
    /// from: it was asked for, or none was kept for a while.
    fn sample_due(&self, pod: &str) -> bool {
        if !self.watched() {
            return false;
        }
        if self.any_asked.load(Ordering::Relaxed)
            && self
                .asked_pods
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(pod)
                .is_some_and(|t| t.elapsed() < ASKED_FOR)
        {
            return true;
        }
        // `now_ms` counts from the page's first request: from 0, the first
        // attempt would wait out `EXPLAIN_EVERY` after it.
        let last = self.sampled_ms.load(Ordering::Relaxed);
        last == 0 || self.now_ms().saturating_sub(last) >= EXPLAIN_EVERY.as_millis() as u64
    }

    fn record(&self, case: ShadowCase) {
        self.sampled_ms.store(self.now_ms(), Ordering::Relaxed);
        if self.any_asked.load(Ordering::Relaxed) {
            let mut asked = self.asked_pods.lock().unwrap_or_else(|p| p.into_inner());
            asked.remove(&case.pod.key);
            asked.retain(|_, t| t.elapsed() < ASKED_FOR);
            self.any_asked.store(!asked.is_empty(), Ordering::Relaxed);
        }
        let mut d = self.decisions.lock().unwrap_or_else(|p| p.into_inner());
        if d.len() == DECISIONS_KEPT {
            d.pop_front();
        }
        d.push_back((crate::daemon::time_now(), case, None));
    }

    /// The pod asked about to decide against the cluster as it is now, if
    /// any (the scheduling thread takes it between cycles).
    pub(crate) fn take_now(&self) -> Option<String> {
        self.now_wanted.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Keeps `case`, a pod decided against the cluster as it is now
    /// ([`wasmsched_core::scheduler::Scheduler::case_now`]), bound to
    /// `node` or pending, to explain.
    pub(crate) fn record_now(&self, case: ShadowCase, node: Option<String>) {
        let mut d = self.decisions.lock().unwrap_or_else(|p| p.into_inner());
        if d.len() == DECISIONS_KEPT {
            d.pop_front();
        }
        d.push_back((crate::daemon::time_now(), case, Some(Now { bound_to: node })));
    }

    /// Lists an attempt (the scheduling thread calls it after each cycle
    /// while the page is open). Its decision can be explained when the
    /// cycle was sampled: the last case recorded is its own.
    fn attempt(&self, profile: &str, pod: &str, outcome: CycleOutcome, held: bool) {
        let explained = self
            .decisions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .back()
            .is_some_and(|(_, c, now)| now.is_none() && c.pod.key == pod && c.serving == outcome);
        let mut a = self.attempts.lock().unwrap_or_else(|p| p.into_inner());
        if a.len() == ATTEMPTS_KEPT {
            a.pop_front();
        }
        a.push_back(Attempt {
            at: Some(std::time::SystemTime::now()),
            pod: pod.to_owned(),
            profile: profile.to_owned(),
            outcome,
            explained,
            held,
        });
    }

    /// Lists `attempt` while the page is open.
    pub fn list_attempt(&self, attempt: &wasmsched_core::scheduler::Attempt) {
        if self.watched() {
            let held = attempt.result.as_ref().is_ok_and(|r| r.waiting);
            self.attempt(
                &attempt.profile,
                &attempt.pod.key,
                CycleOutcome::of(&attempt.result),
                held,
            );
        }
    }

    /// How many attempts are listed and how many kept to explain.
    pub fn recorded(&self) -> (usize, usize) {
        let listed = self.attempts.lock().unwrap_or_else(|p| p.into_inner()).len();
        (listed, self.decisions.lock().unwrap_or_else(|p| p.into_inner()).len())
    }

    /// The attempts listed, newest first.
    pub fn attempts(&self) -> Vec<Attempt> {
        let a = self.attempts.lock().unwrap_or_else(|p| p.into_inner());
        a.iter().rev().cloned().collect()
    }

    /// The newest recorded attempt of `pod`, decided again with every
    /// plugin's verdict and score per node (`None`: none recorded; its
    /// next attempt will be).
    pub fn explain(&self, pod: &str) -> Option<Decision> {
        let found = {
            let d = self.decisions.lock().unwrap_or_else(|p| p.into_inner());
            d.iter().rev().find(|(_, c, _)| c.pod.key == pod).cloned()
        };
        let Some((at, case, now)) = found else {
            // Decided against the cluster as it is now, by the scheduling
            // thread between cycles; the page asks again shortly.
            *self.now_wanted.lock().unwrap_or_else(|p| p.into_inner()) = Some(pod.to_owned());
            self.wake.notify_one();
            let mut asked = self.asked_pods.lock().unwrap_or_else(|p| p.into_inner());
            asked.retain(|_, t| t.elapsed() < ASKED_FOR);
            if asked.len() < DECISIONS_KEPT || asked.contains_key(pod) {
                asked.insert(pod.to_owned(), Instant::now());
            }
            self.any_asked.store(!asked.is_empty(), Ordering::Relaxed);
            return None;
        };
        // One at a time, whoever asks: each is a whole cycle on this
        // thread. Requests for the pod just explained share its answer.
        let mut last = self.explaining.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((when, d)) = &*last
            && d.pod == pod
            && d.at == at
            && when.elapsed() < EXPLAINED_FOR
        {
            return Some(d.clone());
        }
        let fw = self.frameworks.get()?.get(case.profile)?;
        // The serving versions decide again, but a plugin failing here
        // leaves no mark on the back-off that live cycles follow.
        let (result, devices) = wasmsched_wasm::off_the_record(|| decide_with_devices(&case, fw));
        let explanation = explanation_of(&result).cloned();
        let decision = Decision {
            at,
            pod: case.pod.key.clone(),
            profile: fw.profile.clone(),
            decided: case.serving.clone(),
            again: CycleOutcome::of(&result),
            explanation: explanation.unwrap_or_default(),
            devices,
            now,
        };
        *last = Some((Instant::now(), decision.clone()));
        Some(decision)
    }

    /// The page asks: the thread records and publishes for a while.
    /// Returns when it asked.
    pub fn ask(&self) -> u64 {
        let asked = self.now_ms();
        self.asked_ms.store(asked, Ordering::Relaxed);
        self.wake.notify_one();
        asked
    }

    /// Completes when a request asked (the scheduling thread's idle wait).
    pub(crate) async fn woken(&self) {
        self.wake.notified().await;
    }

    /// [`Board::ask`], then the view published after this request, waiting
    /// at most `limit` for it (the last one otherwise, if any). Blocking:
    /// call it off the async workers.
    pub fn fresh(&self, limit: Duration) -> Option<std::sync::Arc<View>> {
        let recent = |board: &Self| {
            let current = board.view.lock().unwrap_or_else(|p| p.into_inner()).clone();
            current.filter(|(at, _)| board.now_ms().saturating_sub(*at) < VIEW_EVERY.as_millis() as u64)
        };
        if let Some(source) = self.source.get() {
            // One build at a time; those who waited for it share it.
            let _building = self.building.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((_, v)) = recent(self) {
                return Some(v);
            }
            let v = std::sync::Arc::new(source());
            let at = self.now_ms();
            *self.view.lock().unwrap_or_else(|p| p.into_inner()) = Some((at, v.clone()));
            return Some(v);
        }
        // A view built less than VIEW_EVERY ago is served as it is: the
        // scheduling thread builds no more often, whoever asks.
        if let Some((_, v)) = recent(self) {
            return Some(v);
        }
        let asked = self.ask();
        let deadline = Instant::now() + limit;
        loop {
            let current = self.view.lock().unwrap_or_else(|p| p.into_inner()).clone();
            match current {
                Some((at, v)) if at >= asked => return Some(v),
                other if Instant::now() >= deadline => return other.map(|(_, v)| v),
                _ => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
}

/// Decides `case` again, explained, as [`ShadowCase::decide`] does, and
/// names the pod's devices on the node chosen.
fn decide_with_devices(case: &ShadowCase, fw: &Framework) -> (Result<ScheduleResult, ScheduleError>, Vec<String>) {
    let mut state = CycleState::default();
    let result = case.decide_in(fw, &mut state, true);
    let devices = match &result {
        Ok(r) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            devices_on(fw, &mut state, case, &r.node)
        }))
        .unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    (result, devices)
}

/// The pod's devices on `node` after its cycle in `state`: what
/// DynamicResources' Reserve allocates there (it only writes the cycle's
/// state; no other Reserve plugin runs), then the devices of its claims
/// allocated before, marked so.
fn devices_on(fw: &Framework, state: &mut CycleState, case: &ShadowCase, node: &str) -> Vec<String> {
    use wasmsched_core::dra::devices::{allocation, describe};
    use wasmsched_core::plugins::dynamic_resources::NAME;
    let pod = &case.pod;
    if pod.resource_claims.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut planned = Vec::new();
    if let Some(e) = fw.reserve.iter().find(|e| e.plugin.name() == NAME)
        && e.plugin.reserve(state, pod, node).is_success()
        && let Some(plan) = state.read::<DraPlan>(wasmsched_core::dra::DRA_PLAN)
    {
        out = devices_of(plan);
        planned = plan
            .claims
            .iter()
            .filter(|c| c.allocation.is_some())
            .map(|c| c.name.clone())
            .collect();
    }
    let claims = case.snapshot.storage.devices();
    for c in &pod.resource_claims {
        use wasmsched_core::pod::ClaimName;
        let (ClaimName::Named(name) | ClaimName::Generated(name)) = &c.claim else {
            continue;
        };
        if planned.contains(name) {
            continue;
        }
        if let Some(a) = claims
            .claim(&format!("{}/{name}", pod.namespace))
            .and_then(|c| allocation(c))
        {
            out.extend(describe(name, a).map(|d| format!("{d} (allocated before)")));
        }
    }
    out
}

/// A plan's allocations as `claim: request=driver/pool/device` (a claim
/// allocated before, only reserved, is not listed).
pub fn devices_of(plan: &DraPlan) -> Vec<String> {
    plan.claims
        .iter()
        .flat_map(|c| {
            c.allocation
                .iter()
                .flat_map(|a| wasmsched_core::dra::devices::describe(&c.name, a))
        })
        .collect()
}

/// One attempt made while the page was open.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// When (none in a simulation); formatted when shown, not per cycle.
    pub at: Option<std::time::SystemTime>,
    pub pod: String,
    pub profile: String,
    pub outcome: CycleOutcome,
    /// It was sampled: [`Board::explain`] decides it again.
    pub explained: bool,
    /// Placed, and held at Permit (its binding waits for the plugins).
    pub held: bool,
}

/// A recorded attempt decided again, explained.
#[derive(Debug, Clone)]
pub struct Decision {
    pub at: String,
    pub pod: String,
    pub profile: String,
    /// What the attempt decided.
    pub decided: CycleOutcome,
    /// What deciding it again on the same inputs gives (the same, unless
    /// a plugin is not deterministic or changed since).
    pub again: CycleOutcome,
    pub explanation: Explanation,
    /// The pod's DRA devices on the node chosen, as
    /// `claim: request=driver/pool/device`: those DynamicResources
    /// allocated for it, and those of its claims allocated before.
    pub devices: Vec<String>,
    /// Not an attempt kept but the pod decided against the cluster as it
    /// is now, without it.
    pub now: Option<Now>,
}

/// A pod decided against the cluster as it is now, without it.
#[derive(Debug, Clone)]
pub struct Now {
    /// The node it is bound (or assumed) on; none: pending.
    pub bound_to: Option<String>,
}

/// Keeps an attempt with what it started from at most every
/// [`EXPLAIN_EVERY`] while the page is open, and the next attempt of a pod
/// whose decision was asked for; nothing while the page is closed.
pub struct DecisionTap(std::sync::Arc<crate::status::Status>);

impl DecisionTap {
    /// The tap of `status`'s web view, for [`Scheduler::set_shadow`] at 100 %.
    pub fn new(status: std::sync::Arc<crate::status::Status>) -> Self {
        Self(status)
    }
}

impl ShadowTap for DecisionTap {
    fn wants(&self, _profile: usize, pod: &wasmsched_core::PodInfo) -> bool {
        self.0.web.sample_due(&pod.key)
    }

    fn take(&mut self, case: ShadowCase) {
        self.0.web.record(case);
    }

    fn needs_record(&self) -> bool {
        false
    }
}

/// The view of `sched` now, with what `notes` knows of its pending pods.
pub fn build(sched: &Scheduler, notes: &Notes, now: Instant) -> View {
    let profiles: Vec<String> = sched.frameworks().iter().map(|f| f.profile.clone()).collect();
    // Devices only where the cluster publishes any.
    let dra = sched.cache.storage().devices();
    let dra = (!dra.slices().is_empty()).then_some(dra);
    let mut nodes = sched
        .cache
        .nodes()
        .map(|n| {
            let d = &n.node;
            let u = &n.usage;
            let not_ready = d
                .object
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
                .is_none_or(|c| c.status != "True");
            let mut tile = NodeTile {
                name: d.name.clone(),
                zone: d.zone.clone(),
                cpu_allocatable_m: d.allocatable.milli_cpu,
                cpu_requested_m: u.requested.milli_cpu,
                memory_allocatable: d.allocatable.memory,
                memory_requested: u.requested.memory,
                pods: u.pod_infos.len(),
                pod_names: u.pod_infos.iter().take(PODS_PER_TILE).map(|p| p.key.clone()).collect(),
                taints: d
                    .taints
                    .iter()
                    .map(|t| {
                        let v = if t.value.is_empty() {
                            String::new()
                        } else {
                            format!("={}", t.value)
                        };
                        format!("{}{v}:{:?}", t.key, t.effect)
                    })
                    .collect(),
                unschedulable: d.unschedulable,
                not_ready,
                labels: d.labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
                by_profile: {
                    let mut counts = vec![0; profiles.len()];
                    for p in &u.pod_infos {
                        if let Some(i) = profiles.iter().position(|n| *n == p.scheduler_name) {
                            counts[i] += 1;
                        }
                    }
                    counts.into_iter().enumerate().filter(|(_, c)| *c > 0).collect()
                },
                devices: 0,
                devices_taken: 0,
                device_names: Vec::new(),
            };
            if let Some(dra) = dra {
                node_devices(&mut tile, dra, d);
            }
            tile
        })
        .collect::<Vec<_>>();
    nodes.sort_by(|a, b| (&a.zone, &a.name).cmp(&(&b.zone, &b.name)));
    let mut pending = Vec::new();
    for (loc, state) in [
        (Location::Active, "active"),
        (Location::InFlight, "in flight"),
        (Location::Backoff, "backoff"),
        (Location::Unschedulable, "unschedulable"),
    ] {
        for key in sched.queue.keys(loc) {
            let Some(q) = sched.queue.get(&key) else { continue };
            pending.push(Pending {
                pod: key.clone(),
                profile: q.pod.scheduler_name.clone(),
                state,
                waited: now.saturating_duration_since(q.initial),
                attempts: q.attempts,
                reason: notes.reasons.get(&key).cloned(),
                gates: Vec::new(),
                nominated: sched.nominator().node_of(&key).map(str::to_owned),
                victims: notes.victims.get(&key).cloned().unwrap_or_default(),
                group: group_line(sched, &q.pod),
            });
        }
    }
    for (p, since) in sched.gated() {
        pending.push(Pending {
            pod: p.key.clone(),
            profile: p.scheduler_name.clone(),
            state: "gated",
            waited: now.saturating_duration_since(since),
            attempts: 0,
            // Waiting for a plugin's PreEnqueue (its claims, its group),
            // not for gates: why.
            reason: p
                .scheduling_gates
                .is_empty()
                .then(|| sched.gated_reason(p))
                .filter(|r| !r.is_empty()),
            gates: p.scheduling_gates.clone(),
            nominated: None,
            victims: Vec::new(),
            group: group_line(sched, p),
        });
    }
    // Pods held at Permit: placed, their binding waiting for plugins.
    let instant = now;
    for w in sched.waiting().list(instant) {
        // (Its queue entry says "in flight": this says more.)
        pending.retain(|p| p.pod != w.pod.key.as_str());
        pending.push(Pending {
            pod: w.pod.key.to_string(),
            profile: w.pod.scheduler_name.clone(),
            state: "permit",
            waited: w.waited,
            attempts: 0,
            reason: Some(format!("held at Permit on {} by {}", w.node, w.plugins.join(", "))),
            gates: Vec::new(),
            nominated: None,
            victims: Vec::new(),
            group: group_line(sched, &w.pod),
        });
    }
    // The longest waiting first; a group's pods together, where the one
    // of them waiting longest is.
    pending.sort_by(|a, b| b.waited.cmp(&a.waited).then_with(|| a.pod.cmp(&b.pod)));
    let mut first_of: HashMap<String, usize> = HashMap::new();
    for (i, p) in pending.iter().enumerate() {
        if let Some((g, _)) = &p.group {
            first_of.entry(g.clone()).or_insert(i);
        }
    }
    let rank = |i: usize, p: &Pending| p.group.as_ref().map_or(i, |(g, _)| first_of[g]);
    let mut ranked: Vec<(usize, usize, Pending)> = pending
        .into_iter()
        .enumerate()
        .map(|(i, p)| (rank(i, &p), i, p))
        .collect();
    ranked.sort_by_key(|(r, i, _)| (*r, *i));
    let mut pending: Vec<Pending> = ranked.into_iter().map(|(_, _, p)| p).collect();
    let pending_total = pending.len();
    pending.truncate(QUEUE_ROWS);
    View {
        at: crate::daemon::time_now(),
        profiles,
        nodes,
        pending,
        pending_total,
        has_queue: true,
    }
}

/// Counts the DRA devices `node` can use on its tile, free and taken
/// (allocated, or assumed for a pod being bound: what a plugin's
/// `nodes.devices` calls taken), and names the first ones.
fn node_devices(tile: &mut NodeTile, dra: &wasmsched_core::dra::Devices, node: &wasmsched_core::NodeData) {
    let allocated = dra.allocated();
    for (slice, d) in dra.node_devices(node) {
        let id = wasmsched_core::dra::DeviceId::new(&slice.spec.driver, &slice.spec.pool.name, &d.name);
        let taken = allocated.contains(&id);
        tile.devices += 1;
        tile.devices_taken += usize::from(taken);
        if tile.device_names.len() < DEVICES_PER_TILE {
            tile.device_names.push((id.to_string(), taken));
        }
    }
}

/// What the cluster view shows: a page of the nodes matching `filter`
/// (a substring of the name, zone, or a `key=value` label) that hold pods
/// of `profile` (any, when empty).
#[derive(Debug, Default, serde::Deserialize)]
pub struct ClusterQuery {
    #[serde(default)]
    pub page: usize,
    #[serde(default)]
    pub filter: String,
    #[serde(default)]
    pub profile: String,
}

impl ClusterQuery {
    /// The query string of page `page`.
    fn href(&self, page: usize) -> String {
        format!(
            "/ui?view=cluster&page={page}&filter={}&profile={}",
            urlencode(&self.filter),
            urlencode(&self.profile)
        )
    }
}

fn matches(n: &NodeTile, filter: &str, profile: Option<usize>) -> bool {
    if let Some(i) = profile
        && !n.by_profile.iter().any(|(p, _)| *p == i)
    {
        return false;
    }
    let f = filter.trim();
    if f.is_empty() {
        return true;
    }
    if let Some((k, v)) = f.split_once('=') {
        return n.labels.iter().any(|(lk, lv)| lk == k.trim() && lv == v.trim());
    }
    n.name.contains(f) || n.zone.contains(f)
}

fn percent(part: i64, whole: i64) -> i64 {
    if whole <= 0 {
        0
    } else {
        (part * 100 / whole).clamp(0, 999)
    }
}

fn gib(bytes: i64) -> String {
    format!("{:.1}", bytes as f64 / f64::from(1u32 << 30))
}

/// A choice of profile (the empty value: all).
fn profile_choice(profiles: &[String], chosen: &str) -> Markup {
    html! {
        select name="profile" {
            option value="" selected[chosen.is_empty()] { "every profile" }
            @for p in profiles { option value=(p) selected[p == chosen] { (p) } }
        }
    }
}

/// The cluster view: totals per zone, then a page of node tiles (every
/// node, in a report: it has no server to ask for the next page).
pub fn cluster(view: &View, q: &ClusterQuery, report: bool) -> Markup {
    let per_page = if report { usize::MAX } else { NODES_PER_PAGE };
    let profile = view.profiles.iter().position(|p| *p == q.profile);
    let profile = if q.profile.is_empty() {
        None
    } else {
        Some(profile.unwrap_or(usize::MAX))
    };
    let shown: Vec<&NodeTile> = view.nodes.iter().filter(|n| matches(n, &q.filter, profile)).collect();
    let pages = shown.len().div_ceil(per_page).max(1);
    let page = q.page.min(pages - 1);
    let mut zones: std::collections::BTreeMap<&str, (usize, i64, i64, usize)> = Default::default();
    for n in &shown {
        let z = zones.entry(n.zone.as_str()).or_default();
        z.0 += 1;
        z.1 += n.cpu_requested_m;
        z.2 += n.cpu_allocatable_m;
        z.3 += n.pods;
    }
    html! {
        section #cluster data-view="cluster" {
            @if report {
                // The script filters the tiles in place.
                input #tile-filter type="search" placeholder="name, zone or key=value";
            } @else {
                form.filter method="get" action="/ui" {
                    input type="hidden" name="view" value="cluster";
                    input type="search" name="filter" value=(q.filter) placeholder="name, zone or key=value";
                    @if view.profiles.len() > 1 { (profile_choice(&view.profiles, &q.profile)) }
                    button type="submit" { "Filter" }
                }
            }
            p.summary {
                (shown.len()) " of " (view.nodes.len()) " nodes · "
                (view.pending_total) " pending · profiles " (view.profiles.join(", "))
                " · as of " (view.at)
            }
            table.zones {
                thead { tr { th { "zone" } th { "nodes" } th { "CPU requested" } th { "pods" } } }
                tbody {
                    @for (zone, (count, req, alloc, pods)) in &zones {
                        tr {
                            td { @if zone.is_empty() { "(none)" } @else { (zone) } }
                            td { (count) }
                            td { (percent(*req, *alloc)) " %" }
                            td { (pods) }
                        }
                    }
                }
            }
            @if pages > 1 {
                nav.pages {
                    "page " (page + 1) " of " (pages) " "
                    @if page > 0 {
                        a href=(q.href(page - 1)) { "previous" }
                        " "
                    }
                    @if page + 1 < pages {
                        a href=(q.href(page + 1)) { "next" }
                    }
                }
            }
            div.tiles {
                @for n in shown.iter().skip(page.saturating_mul(per_page)).take(per_page) {
                    @let cpu = percent(n.cpu_requested_m, n.cpu_allocatable_m);
                    @let mem = percent(n.memory_requested, n.memory_allocatable);
                    div.tile.cordoned[n.unschedulable].notready[n.not_ready] data-node=(n.name)
                        data-labels=[report.then(|| n.labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" "))] {
                        div.name { (n.name) }
                        div.zone { @if n.zone.is_empty() { "no zone" } @else { (n.zone) } }
                        div.bar title={ "CPU " (n.cpu_requested_m) "m of " (n.cpu_allocatable_m) "m" } {
                            span style={ "width:" (cpu.min(100)) "%" } {}
                        }
                        div.bar.mem title={ "memory " (gib(n.memory_requested)) " of " (gib(n.memory_allocatable)) " GiB" } {
                            span style={ "width:" (mem.min(100)) "%" } {}
                        }
                        div.figures {
                            "cpu " (cpu) " % · mem " (mem) " % · " (n.pods) " pods"
                            @if let Some((_, c)) = n.by_profile.iter().find(|(p, _)| Some(*p) == profile) {
                                " (" (c) " of " (q.profile) ")"
                            }
                        }
                        @if n.unschedulable { div.flag { "cordoned" } }
                        @if n.not_ready { div.flag { "not ready" } }
                        @for t in &n.taints { div.taint { (t) } }
                        @if !n.pod_names.is_empty() {
                            ul.pods {
                                @for p in &n.pod_names { li { (p) } }
                                @if n.pods > n.pod_names.len() { li.more { "+" (n.pods - n.pod_names.len()) } }
                            }
                        }
                        @if n.devices > 0 {
                            div.devices { "devices " (n.devices - n.devices_taken) " of " (n.devices) " free" }
                            ul.devices {
                                @for (d, taken) in &n.device_names {
                                    @if *taken { li.taken { (d) " (taken)" } } @else { li { (d) } }
                                }
                                @if n.devices > n.device_names.len() { li.more { "+" (n.devices - n.device_names.len()) } }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The queue view (the pods of `profile`, or of every profile when empty).
pub fn queue(view: &View, profile: &str) -> Markup {
    if !view.has_queue {
        return html! {
            section #queue data-view="queue" {
                p.summary { "kube-scheduler holds the queue: this extender answers its filter and prioritize requests." }
            }
        };
    }
    html! {
        section #queue data-view="queue" {
            @if view.profiles.len() > 1 {
                form.filter method="get" action="/ui" {
                    input type="hidden" name="view" value="queue";
                    (profile_choice(&view.profiles, profile))
                    button type="submit" { "Filter" }
                }
            }
            p.summary {
                (view.pending_total) " pending"
                @if view.pending_total > view.pending.len() { " (the " (view.pending.len()) " waiting longest shown)" }
                " · as of " (view.at)
            }
            table.queue {
                thead { tr { th { "pod" } th { "profile" } th { "state" } th { "waiting" } th { "attempts" } th { "why" } } }
                tbody {
                    @for p in view.pending.iter().filter(|p| profile.is_empty() || p.profile == profile) {
                        tr data-pod=(p.pod) data-state=(p.state) {
                            td.pod { (p.pod) }
                            td { (p.profile) }
                            td.state { (p.state) }
                            td { (format_wait(p.waited)) }
                            td { (p.attempts) }
                            td.reason {
                                @if let Some((_, g)) = &p.group { span.group { (g) } br; }
                                @if let Some(r) = &p.reason { (r) }
                                @if !p.gates.is_empty() { "gates: " (p.gates.join(", ")) }
                                @if let Some(n) = &p.nominated {
                                    " nominated to " (n)
                                    @if !p.victims.is_empty() { ", evicting " (p.victims.join(", ")) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn format_wait(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s / 60 % 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

fn outcome(o: &CycleOutcome) -> Markup {
    match o {
        CycleOutcome::Placed(n) => html! { "placed on " strong { (n) } },
        CycleOutcome::Unschedulable(m) => html! { "unschedulable: " (m) },
        CycleOutcome::Error(m) => html! { "error: " (m) },
    }
}

/// The decisions view: the attempts recorded while the page was open.
pub fn decisions(board: &Board, profile: &str) -> Markup {
    let summary = html! {
        "The last " (ATTEMPTS_KEPT) " attempts made while this page was open (the scheduler records none while nobody looks). "
        "At most one every " (EXPLAIN_EVERY.as_millis()) " ms is kept with the cluster it saw, and decided again, explained, when you open it. "
        "Any other pod, placed or pending, is decided against the cluster as it is now: "
        form.ask action="/ui" method="get" {
            input type="hidden" name="view" value="decision";
            input type="text" name="pod" placeholder="namespace/name" required;
            button type="submit" { "Explain" }
        }
    };
    attempts_table(&board.attempts(), profile, summary, |pod| {
        format!("/ui?view=decision&pod={}", urlencode(pod))
    })
}

/// The anchor of a pod's decision in a report.
fn anchor(pod: &str) -> String {
    format!("decision-{pod}")
}

/// A list of attempts, newest first; the explained ones link to `link(pod)`.
fn attempts_table(list: &[Attempt], profile: &str, summary: Markup, link: impl Fn(&str) -> String) -> Markup {
    html! {
        section #decisions data-view="decisions" {
            p.summary { (summary) }
            table.decisions.sortable {
                thead { tr { th { "when" } th { "pod" } th { "profile" } th { "outcome" } } }
                tbody {
                    @for a in list.iter().filter(|a| profile.is_empty() || a.profile == profile) {
                        tr data-pod=(a.pod) data-profile=(a.profile) {
                            td { @if let Some(t) = a.at { (crate::daemon::rfc3339(t)) } }
                            td {
                                @if a.explained {
                                    a href=(link(&a.pod)) { (a.pod) }
                                } @else {
                                    span title="not sampled" { (a.pod) }
                                }
                            }
                            td { (a.profile) }
                            td.outcome {
                                (outcome(&a.outcome))
                                @if a.held { " · held at Permit" }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// One decision: every node the cycle looked at, each plugin's verdict and
/// weighted score, the total, the node chosen (sortable by any column).
pub fn decision(d: Option<&Decision>, pod: &str) -> Markup {
    let Some(d) = d else {
        return html! {
            section.decision data-view="decision" {
                p { "No attempt of " (pod) " was kept while this page was open: its next attempt will be, and meanwhile the scheduler decides it against the cluster as it is now, which this view shows in a moment (a pod it does not place, or that is gone, never shows)." }
            }
        };
    };
    let x = &d.explanation;
    let best = x.nodes.iter().filter_map(|n| n.total).max().unwrap_or(0).max(1);
    let mut rows: Vec<&wasmsched_core::framework::NodeExplanation> = x.nodes.iter().collect();
    rows.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| a.node.cmp(&b.node)));
    html! {
        section.decision data-view="decision" data-pod=(d.pod) {
            h2 { (d.pod) }
            @if let Some(now) = &d.now {
                p.note {
                    "Not an attempt kept: this is the pod decided at " (d.at) " against the cluster as it was then, without the pod"
                    @if let Some(n) = &now.bound_to { " (it is bound to " (n) "; plugins that read the pod's object see its names and labels only, which is what the scheduler keeps of a bound pod)" }
                    ". Its own attempt may have seen other nodes, other pods and other usage."
                }
            }
            p.summary {
                "profile " (d.profile) " · at " (d.at) " · " (outcome(&d.decided))
                @if d.again != d.decided { " · decided again now: " (outcome(&d.again)) }
                @if !d.devices.is_empty() { " · devices: " (d.devices.join(", ")) }
                " · " (x.nodes.len()) " nodes looked at (wanted " (x.nodes_to_find) " feasible)"
            }
            table.sortable.explain {
                thead {
                    tr {
                        th { "node" }
                        @for (plugin, weight) in &x.scores { th.num title={ "weight " (weight) } { (plugin) } }
                        th.num { "total" }
                        th { "verdict" }
                    }
                }
                tbody {
                    @for n in &rows {
                        tr data-node=(n.node) .selected[n.selected] {
                            td { (n.node) }
                            @for (plugin, _) in &x.scores {
                                @let s = n.scores.iter().find(|s| &s.plugin == plugin);
                                td.num data-plugin=(plugin) title=[s.and_then(|s| s.raw).map(|r| format!("raw {r}"))] {
                                    @match s {
                                        Some(s) if s.raw.is_some() => (s.weighted),
                                        Some(_) => span.skip title="skipped: the plugin does not score this pod" { "–" },
                                        None => "",
                                    }
                                }
                            }
                            td.num.total { @if let Some(t) = n.total { (t) } }
                            td.verdict {
                                @if let Some(st) = &n.rejected {
                                    "rejected by " (st.plugin().unwrap_or("?")) ": " (st.message())
                                } @else if n.selected {
                                    "chosen"
                                } @else { "feasible" }
                                @if let Some(t) = n.total {
                                    div.bar.total { span style={ "width:" ((t.max(0) * 100 / best).min(100)) "%" } {} }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The plugins view: the serving WebAssembly plugins, every plugin's
/// timings, then the shadow's comparison.
pub fn plugins(
    host: Option<&wasmsched_wasm::PluginHost>,
    shadow: Option<&crate::shadow::Shadow>,
    latencies: &[crate::metrics::PluginLatency],
) -> Markup {
    let micros = |q: crate::metrics::Quantile| match q {
        crate::metrics::Quantile::None => "–".to_owned(),
        crate::metrics::Quantile::Below(d) => format!("< {}", duration_text(d)),
        crate::metrics::Quantile::Above(d) => format!("≥ {}", duration_text(d)),
    };
    let rows = |h: &wasmsched_wasm::PluginHost| {
        use wasmsched_core::Plugin as _;
        let mut slots = h.slots();
        slots.sort_by(|a, b| a.name().cmp(b.name()));
        slots.dedup_by(|a, b| a.name() == b.name());
        slots
    };
    html! {
        section #plugins data-view="plugins" {
            @match host {
                None => p { "No WebAssembly plugin directory is configured." },
                Some(h) => {
                    table.plugins {
                        thead { tr {
                            th { "plugin" } th { "version" } th { "sha256" } th { "compiler" } th { "traps" }
                            th { "timeouts" } th { "errors" } th { "back-off skips" } th { "memory" } th { "status" }
                        } }
                        tbody {
                            @for s in rows(h) {
                                @let st = s.stats();
                                @let cur = s.current();
                                tr data-plugin=(wasmsched_core::Plugin::name(&*s)) {
                                    td { (wasmsched_core::Plugin::name(&*s)) }
                                    td { @if let Some(v) = &cur { (v.version) } }
                                    td.digest { @if let Some(v) = &cur { (v.sha256.get(..12).unwrap_or(&v.sha256)) } }
                                    td { @if let Some(v) = &cur { (v.tier.compiler()) } }
                                    td { (st.traps.load(Ordering::Relaxed)) }
                                    td { (st.timeouts.load(Ordering::Relaxed)) }
                                    td { (st.errors.load(Ordering::Relaxed)) }
                                    td { (st.skipped_backing_off.load(Ordering::Relaxed)) }
                                    td { (format!("{:.1} MiB", st.share.used() as f64 / f64::from(1u32 << 20))) }
                                    td { @if let Some(why) = s.not_loaded() { (why) } @else { "serving" } }
                                }
                            }
                        }
                    }
                }
            }
            h2 { "Timings" }
            p.summary { "Of one cycle in " (wasmsched_core::scheduler::PLUGIN_TIMING_SAMPLE) ", as kube-scheduler samples them (scheduler_plugin_execution_duration_seconds)." }
            table.timings.sortable {
                thead { tr { th { "plugin" } th { "extension point" } th.num { "calls timed" } th.num { "p50" } th.num { "p99" } } }
                tbody {
                    @for l in latencies {
                        tr data-plugin=(l.plugin) data-point=(l.extension_point) {
                            td { (l.plugin) }
                            td { (l.extension_point) }
                            td.num { (l.calls) }
                            td.num { (micros(l.p50)) }
                            td.num { (micros(l.p99)) }
                        }
                    }
                }
            }
            @if let Some(sh) = shadow {
                h2 { "Shadow (" (sh.percent()) " % of cycles)" }
                pre.shadow { (serde_json::to_string_pretty(&sh.json()).unwrap_or_default()) }
            }
        }
    }
}

/// The whole page, with `view` shown first.
pub fn page(body: Markup, shown: &str) -> Markup {
    document(body, shown, false)
}

/// Every view in one self-contained file (`wasmsched simulate --html`):
/// the cluster and queue as `view` shows them, `attempts` (the explained
/// ones with their decisions below), and `plugins`. The script shows one
/// view at a time; without it, the file shows them all.
pub fn report(view: &View, attempts: &[Attempt], decided: &[Decision], plugins: Markup) -> Markup {
    let summary = html! {
        "Every pod the simulation attempted, in order; "
        @if decided.len() < attempts.len() { "the " (decided.len()) " explained (" (DECISIONS_KEPT) " at most, or those of --explain) link to their decision." }
        @else { "each links to its decision." }
    };
    let mut list = attempts.to_vec();
    list.reverse();
    let body = html! {
        (cluster(view, &ClusterQuery::default(), true))
        (queue(view, ""))
        (attempts_table(&list, "", summary, |pod| format!("#{}", anchor(pod))))
        div data-view="decisions" {
            @for d in decided {
                div.decision id=(anchor(&d.pod)) { (decision(Some(d), &d.pod)) }
            }
        }
        (plugins)
    };
    document(body, "cluster", true)
}

fn document(body: Markup, shown: &str, report: bool) -> Markup {
    let tab = |name: &str, label: &str| {
        let href = if report {
            format!("#{name}")
        } else {
            format!("/ui?view={name}")
        };
        html! { a.tab.active[name == shown] href=(href) data-tab=(name) { (label) } }
    };
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "wasmsched" }
                style { (PreEscaped(STYLE)) }
            }
            body data-view=(shown) data-report=[report.then_some("1")] {
                header {
                    span.brand { "wasmsched" }
                    nav {
                        (tab("cluster", "Cluster")) (tab("queue", "Queue")) (tab("decisions", "Decisions"))
                        (tab("plugins", "Plugins"))
                    }
                    span #live { @if report { "snapshot of " (crate::daemon::time_now()) } }
                }
                main #main { (body) }
                script { (PreEscaped(SCRIPT)) }
            }
        }
    }
}

/// A bucket bound as a person reads it: `10 µs`, `22.5 µs`, `1.3 ms`.
fn duration_text(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    let (v, unit) = if us < 1000.0 { (us, "µs") } else { (us / 1000.0, "ms") };
    let v = format!("{v:.1}");
    format!("{} {unit}", v.trim_end_matches(".0"))
}

/// `s` as a URL query value.
fn urlencode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first attempt after the page opens is kept to explain at once,
    /// the next only `EXPLAIN_EVERY` after it.
    #[test]
    fn the_first_attempt_after_the_page_opens_is_sampled() {
        let board = Board::default();
        assert!(!board.sample_due("ns/p"), "the page is closed");
        board.ask();
        assert!(board.sample_due("ns/p"), "opened just now");
        board.sampled_ms.store(board.now_ms(), Ordering::Relaxed);
        assert!(!board.sample_due("ns/p"), "sampled just now");
    }

    /// However many requests come, a view is built at most every
    /// `VIEW_EVERY`, and those that waited for a build share it.
    #[test]
    fn views_are_built_at_most_at_the_stated_rate() {
        let board = std::sync::Arc::new(Board::default());
        let builds = std::sync::Arc::new(AtomicU64::new(0));
        let b = builds.clone();
        board.set_source(move || {
            b.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(20));
            View::default()
        });
        let requests: Vec<_> = (0..8)
            .map(|_| {
                let board = board.clone();
                std::thread::spawn(move || {
                    for _ in 0..10 {
                        board.fresh(Duration::from_secs(1)).unwrap();
                    }
                })
            })
            .collect();
        let started = Instant::now();
        for r in requests {
            r.join().unwrap();
        }
        let allowed = 1 + (started.elapsed().as_millis() / VIEW_EVERY.as_millis()) as u64;
        assert!(builds.load(Ordering::Relaxed) <= allowed, "{builds:?} builds");

        // The scheduling thread's side: a view published just now is not
        // wanted again, whoever asks.
        let board = Board::default();
        board.ask();
        assert!(board.wanted(), "the first view");
        board.publish(View::default());
        board.ask();
        assert!(!board.wanted(), "published less than VIEW_EVERY ago");
        assert!(board.fresh(Duration::ZERO).is_some(), "served as it is");
    }

    /// Names of pods asked for come from requests: they are bounded and
    /// expire.
    #[test]
    fn asked_pods_are_bounded() {
        let board = Board::default();
        board.ask();
        for i in 0..10 * DECISIONS_KEPT {
            assert!(board.explain(&format!("ns/p-{i}")).is_none());
        }
        let asked = board.asked_pods.lock().unwrap();
        assert!(asked.len() <= DECISIONS_KEPT, "{}", asked.len());
        assert!(asked.contains_key("ns/p-0"));
    }

    #[test]
    fn bucket_bounds_read_as_durations() {
        assert_eq!(duration_text(Duration::from_micros(10)), "10 µs");
        assert_eq!(duration_text(Duration::from_secs_f64(2.25e-5)), "22.5 µs");
        assert_eq!(duration_text(Duration::from_secs_f64(1.3e-3)), "1.3 ms");
    }

    #[test]
    fn what_comes_from_the_cluster_is_escaped() {
        let hostile = "<script>alert(1)</script>\"'&";
        let view = View {
            at: "now".into(),
            profiles: vec![hostile.into()],
            nodes: vec![NodeTile {
                name: hostile.into(),
                zone: hostile.into(),
                cpu_allocatable_m: 1000,
                cpu_requested_m: 500,
                memory_allocatable: 1 << 30,
                memory_requested: 0,
                pods: 1,
                pod_names: vec![hostile.into()],
                taints: vec![hostile.into()],
                unschedulable: false,
                not_ready: false,
                labels: vec![(hostile.into(), hostile.into())],
                by_profile: vec![(0, 1)],
                devices: 1,
                devices_taken: 1,
                device_names: vec![(hostile.into(), true)],
            }],
            pending: vec![Pending {
                pod: hostile.into(),
                profile: hostile.into(),
                state: "unschedulable",
                waited: Duration::from_secs(75),
                attempts: 2,
                reason: Some(hostile.into()),
                gates: vec![hostile.into()],
                nominated: Some(hostile.into()),
                victims: vec![hostile.into()],
                group: Some((hostile.into(), hostile.into())),
            }],
            pending_total: 1,
            has_queue: true,
        };
        let q = ClusterQuery {
            page: 0,
            filter: hostile.into(),
            profile: hostile.into(),
        };
        let attempt = Attempt {
            at: None,
            pod: hostile.into(),
            profile: hostile.into(),
            outcome: CycleOutcome::Unschedulable(hostile.into()),
            explained: true,
            held: false,
        };
        for html in [
            page(cluster(&view, &q, false), "cluster").into_string(),
            queue(&view, hostile).into_string(),
            report(&view, &[attempt], &[], html! {}).into_string(),
        ] {
            assert!(!html.contains("<script>alert"), "{html}");
            assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{html}");
        }
        assert_eq!(format_wait(Duration::from_secs(75)), "1m15s");
        assert_eq!(urlencode("a b&c"), "a%20b%26c");
        // The profile filter keeps the nodes holding its pods.
        let shown = cluster(&view, &q, false).into_string();
        assert!(shown.contains("1 of 1 nodes"), "{shown}");
        let other = ClusterQuery {
            profile: "other".into(),
            ..ClusterQuery::default()
        };
        assert!(cluster(&view, &other, false).into_string().contains("0 of 1 nodes"));
    }
    /// A node's tile counts its DRA devices, free of all, and names the
    /// first, the taken ones (allocated, or assumed for a pod being bound)
    /// marked; a node without devices shows none. A decision names the
    /// devices allocated for the pod on the node chosen.
    #[test]
    fn devices_show_on_tiles_and_decisions() {
        use wasmsched_core::dra::Devices;
        use wasmsched_core::storage::StorageKind;
        let mut dra = Devices::default();
        let devices: Vec<serde_json::Value> = (0..10)
            .map(|i| serde_json::json!({"name": format!("gpu-{i}")}))
            .collect();
        dra.upsert(
            StorageKind::ResourceSlice,
            &serde_json::json!({
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": {"name": "gpu-a-slice"},
                "spec": {"driver": "gpu.example.com", "nodeName": "gpu-a",
                    "pool": {"name": "gpu-a", "generation": 1, "resourceSliceCount": 1}, "devices": devices},
            }),
        )
        .unwrap();
        dra.upsert(
            StorageKind::ResourceClaim,
            &serde_json::json!({
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": "trainer", "namespace": "ml", "uid": "c1"},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
                "status": {"allocation": {"devices": {"results": [
                    {"request": "gpu", "driver": "gpu.example.com", "pool": "gpu-a", "device": "gpu-1"},
                ]}}},
            }),
        )
        .unwrap();
        let node = |name: &str| {
            let n: k8s_openapi::api::core::v1::Node =
                serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap();
            wasmsched_core::NodeData::from_node(&n).unwrap()
        };
        let tile = |name: &str| {
            let mut t = NodeTile {
                name: name.into(),
                zone: String::new(),
                cpu_allocatable_m: 1000,
                cpu_requested_m: 0,
                memory_allocatable: 1 << 30,
                memory_requested: 0,
                pods: 0,
                pod_names: Vec::new(),
                taints: Vec::new(),
                unschedulable: false,
                not_ready: false,
                labels: Vec::new(),
                by_profile: Vec::new(),
                devices: 0,
                devices_taken: 0,
                device_names: Vec::new(),
            };
            node_devices(&mut t, &dra, &node(name));
            t
        };
        let (gpu, cpu) = (tile("gpu-a"), tile("cpu-1"));
        assert_eq!(
            (gpu.devices, gpu.devices_taken, gpu.device_names.len()),
            (10, 1, DEVICES_PER_TILE)
        );
        assert_eq!((cpu.devices, cpu.device_names.len()), (0, 0));
        let view = View {
            nodes: vec![gpu, cpu],
            ..View::default()
        };
        let html = cluster(&view, &ClusterQuery::default(), false).into_string();
        assert!(html.contains("devices 9 of 10 free"), "{html}");
        assert!(html.contains("<li>gpu.example.com/gpu-a/gpu-0</li>"), "{html}");
        assert!(
            html.contains(r#"<li class="taken">gpu.example.com/gpu-a/gpu-1 (taken)</li>"#),
            "{html}"
        );
        assert!(html.contains(r#"<li class="more">+2</li>"#), "{html}");
        assert_eq!(html.matches("devices ").count(), 1, "cpu-1 has none: {html}");

        let d = Decision {
            at: "now".into(),
            pod: "ml/inference-0".into(),
            profile: "default-scheduler".into(),
            decided: CycleOutcome::Placed("gpu-a".into()),
            again: CycleOutcome::Placed("gpu-a".into()),
            explanation: Explanation::default(),
            devices: vec!["inference-gpu: gpu=gpu.example.com/gpu-a/gpu-0".into()],
            now: None,
        };
        let html = decision(Some(&d), &d.pod).into_string();
        assert!(
            html.contains("devices: inference-gpu: gpu=gpu.example.com/gpu-a/gpu-0"),
            "{html}"
        );
    }
    /// A pod decided again names the devices DynamicResources allocates
    /// for it on the node chosen (not one another claim holds); a bound
    /// pod, whose claims are allocated already, names those.
    #[test]
    fn a_decision_decided_again_names_the_pods_devices() {
        use serde_json::json;
        use wasmsched_core::config::Config;
        use wasmsched_core::plugins::Registry;
        use wasmsched_core::scheduler::Responsibility;
        let now = Instant::now();
        let mut sched = Scheduler::new(&Config::default(), &Registry::builtin(), 1, Responsibility::AllPods).unwrap();
        let node = json!({"metadata": {"name": "gpu-a", "labels": {"kubernetes.io/hostname": "gpu-a"}},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}});
        sched.on_node(&serde_json::from_value(node).unwrap(), now).unwrap();
        let claim = |name: &str, status: serde_json::Value| {
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": "ml", "uid": format!("claim-{name}")},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
                "status": status})
        };
        for o in [
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
                "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}}),
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "gpu-a"},
                "spec": {"driver": "gpu.example.com", "nodeName": "gpu-a",
                    "pool": {"name": "gpu-a", "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}}),
            claim(
                "trainer",
                json!({
                "allocation": {"devices": {"results": [
                    {"request": "gpu", "driver": "gpu.example.com", "pool": "gpu-a", "device": "gpu-0"}]}},
                "reservedFor": [{"resource": "pods", "name": "trainer", "uid": "pod-trainer"}]}),
            ),
            claim("inference", json!({})),
        ] {
            sched.on_storage(&o, now).unwrap();
        }
        let pod = |name: &str, node: Option<&str>| {
            let p = json!({"metadata": {"name": name, "namespace": "ml", "uid": format!("pod-{name}")},
                "spec": {"nodeName": node, "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
                    "containers": [{"name": "c", "image": "i", "resources": {"claims": [{"name": "gpu"}]}}]}});
            serde_json::from_value(p).unwrap()
        };
        sched.on_pod(&pod("trainer", Some("gpu-a")), now).unwrap();
        sched.on_pod(&pod("inference", None), now).unwrap();
        let decided = |sched: &mut Scheduler, key: &str| {
            let (case, _) = sched.case_now(key).unwrap();
            let (result, devices) = decide_with_devices(&case, &sched.frameworks()[case.profile]);
            (CycleOutcome::of(&result), devices)
        };
        assert_eq!(
            decided(&mut sched, "ml/inference"),
            (
                CycleOutcome::Placed("gpu-a".into()),
                vec!["inference: gpu=gpu.example.com/gpu-a/gpu-1".to_owned()]
            )
        );
        assert_eq!(
            decided(&mut sched, "ml/trainer"),
            (
                CycleOutcome::Placed("gpu-a".into()),
                vec!["trainer: gpu=gpu.example.com/gpu-a/gpu-0 (allocated before)".to_owned()]
            )
        );
    }
}
