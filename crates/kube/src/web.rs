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
use wasmsched_core::framework::{CycleOutcome, Explanation, Framework, explanation_of};
use wasmsched_core::queue::Location;
use wasmsched_core::scheduler::{Scheduler, ShadowCase, ShadowTap};

/// Nodes on one page of the cluster view.
pub const NODES_PER_PAGE: usize = 200;
/// Pods named on a node's tile (the rest are counted).
const PODS_PER_TILE: usize = 8;
/// Pending pods listed in the queue view (the rest are counted).
const QUEUE_ROWS: usize = 500;
/// Attempts kept with what they started from, while the page is open.
const DECISIONS_KEPT: usize = 50;
/// How long the page's last request keeps the thread publishing.
const WATCHED_FOR: Duration = Duration::from_secs(10);
/// How often the thread publishes while watched.
pub(crate) const PUBLISH_EVERY: Duration = Duration::from_millis(500);

const SCRIPT: &str = include_str!("web/app.js");
const STYLE: &str = include_str!("web/style.css");

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
}

/// One pending pod.
#[derive(Debug, Clone)]
pub struct Pending {
    pub pod: String,
    pub profile: String,
    /// `active`, `backoff`, `unschedulable`, `in flight` or `gated`.
    pub state: &'static str,
    pub waited: Duration,
    pub attempts: u32,
    /// What its last attempt said (kube-scheduler's message).
    pub reason: Option<String>,
    /// Its scheduling gates, when gated.
    pub gates: Vec<String>,
    /// The node its preemption nominated, with the victims being evicted there.
    pub nominated: Option<String>,
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
}

/// The page's side of the view: what the thread published, and when the
/// page last asked.
#[derive(Default)]
pub struct Board {
    /// The view, and when it was published (milliseconds after `origin`).
    view: Mutex<Option<(u64, std::sync::Arc<View>)>>,
    /// When the page last asked (0: never).
    asked_ms: AtomicU64,
    origin: std::sync::OnceLock<Instant>,
    /// The last attempts made while the page was open, with what each
    /// started from (newest last).
    decisions: Mutex<std::collections::VecDeque<(String, ShadowCase)>>,
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

    /// Publishes a view.
    pub(crate) fn publish(&self, view: View) {
        let at = self.now_ms();
        *self.view.lock().unwrap_or_else(|p| p.into_inner()) = Some((at, std::sync::Arc::new(view)));
    }

    /// Sets the frameworks decisions are explained with.
    pub(crate) fn set_frameworks(&self, frameworks: Vec<Framework>) {
        let _ = self
            .frameworks
            .set(frameworks.into_iter().map(|f| f.with_pool(None)).collect());
    }

    fn record(&self, case: ShadowCase) {
        let mut d = self.decisions.lock().unwrap_or_else(|p| p.into_inner());
        if d.len() == DECISIONS_KEPT {
            d.pop_front();
        }
        d.push_back((crate::daemon::time_now(), case));
    }

    /// The attempts recorded, newest first: time, pod, outcome.
    pub fn decisions(&self) -> Vec<(String, String, CycleOutcome)> {
        let d = self.decisions.lock().unwrap_or_else(|p| p.into_inner());
        d.iter()
            .rev()
            .map(|(at, c)| (at.clone(), c.pod.key.clone(), c.serving.clone()))
            .collect()
    }

    /// The newest recorded attempt of `pod`, decided again with every
    /// plugin's verdict and score per node (`None`: none recorded).
    pub fn explain(&self, pod: &str) -> Option<Decision> {
        let (at, case) = {
            let d = self.decisions.lock().unwrap_or_else(|p| p.into_inner());
            d.iter().rev().find(|(_, c)| c.pod.key == pod).cloned()?
        };
        let fw = self.frameworks.get()?.get(case.profile)?;
        let (result, _) = case.decide(fw, true);
        let explanation = explanation_of(&result).cloned();
        Some(Decision {
            at,
            pod: case.pod.key.clone(),
            profile: fw.profile.clone(),
            decided: case.serving.clone(),
            again: CycleOutcome::of(&result),
            explanation: explanation.unwrap_or_default(),
        })
    }

    /// The page asks: the thread records and publishes for a while.
    /// Returns when it asked.
    pub fn ask(&self) -> u64 {
        let asked = self.now_ms();
        self.asked_ms.store(asked, Ordering::Relaxed);
        asked
    }

    /// [`Board::ask`], then the view published after this request, waiting
    /// at most `limit` for it (the last one otherwise, if any). Blocking:
    /// call it off the async workers.
    pub fn fresh(&self, limit: Duration) -> Option<std::sync::Arc<View>> {
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
}

/// Records every attempt, with what it started from, while the page is
/// open (the snapshot is then shared with the ring, so the next cycle
/// copies its node list once); nothing while it is not.
pub struct DecisionTap(pub(crate) std::sync::Arc<crate::daemon::Status>);

impl ShadowTap for DecisionTap {
    fn wants(&self, _profile: usize) -> bool {
        self.0.web.watched()
    }

    fn take(&mut self, case: ShadowCase) {
        self.0.web.record(case);
    }

    fn needs_record(&self) -> bool {
        false
    }
}

/// The view of `sched` now; `reasons` holds what each pending pod's last
/// attempt said.
pub(crate) fn build(sched: &Scheduler, reasons: &HashMap<String, String>, now: Instant) -> View {
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
            NodeTile {
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
            }
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
                reason: reasons.get(&key).cloned(),
                gates: Vec::new(),
                nominated: sched.nominator().node_of(&key).map(str::to_owned),
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
            reason: None,
            gates: p.scheduling_gates.clone(),
            nominated: None,
        });
    }
    // The longest waiting first.
    pending.sort_by(|a, b| b.waited.cmp(&a.waited).then_with(|| a.pod.cmp(&b.pod)));
    let pending_total = pending.len();
    pending.truncate(QUEUE_ROWS);
    View {
        at: crate::daemon::time_now(),
        profiles: sched.frameworks().iter().map(|f| f.profile.clone()).collect(),
        nodes,
        pending,
        pending_total,
    }
}

/// What the cluster view shows: a page of the nodes matching `filter`
/// (a substring of the name, zone, or a `key=value` label).
#[derive(Debug, Default, serde::Deserialize)]
pub struct ClusterQuery {
    #[serde(default)]
    pub page: usize,
    #[serde(default)]
    pub filter: String,
}

fn matches(n: &NodeTile, filter: &str) -> bool {
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

/// The cluster view: totals per zone, then a page of node tiles.
pub fn cluster(view: &View, q: &ClusterQuery) -> Markup {
    let shown: Vec<&NodeTile> = view.nodes.iter().filter(|n| matches(n, &q.filter)).collect();
    let pages = shown.len().div_ceil(NODES_PER_PAGE).max(1);
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
            form.filter method="get" action="/ui" {
                input type="hidden" name="view" value="cluster";
                input type="search" name="filter" value=(q.filter) placeholder="name, zone or key=value";
                button type="submit" { "Filter" }
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
                        a href={ "/ui?view=cluster&page=" (page - 1) "&filter=" (urlencode(&q.filter)) } { "previous" }
                        " "
                    }
                    @if page + 1 < pages {
                        a href={ "/ui?view=cluster&page=" (page + 1) "&filter=" (urlencode(&q.filter)) } { "next" }
                    }
                }
            }
            div.tiles {
                @for n in shown.iter().skip(page * NODES_PER_PAGE).take(NODES_PER_PAGE) {
                    @let cpu = percent(n.cpu_requested_m, n.cpu_allocatable_m);
                    @let mem = percent(n.memory_requested, n.memory_allocatable);
                    div.tile.cordoned[n.unschedulable].notready[n.not_ready] data-node=(n.name) {
                        div.name { (n.name) }
                        div.zone { @if n.zone.is_empty() { "no zone" } @else { (n.zone) } }
                        div.bar title={ "CPU " (n.cpu_requested_m) "m of " (n.cpu_allocatable_m) "m" } {
                            span style={ "width:" (cpu.min(100)) "%" } {}
                        }
                        div.bar.mem title={ "memory " (gib(n.memory_requested)) " of " (gib(n.memory_allocatable)) " GiB" } {
                            span style={ "width:" (mem.min(100)) "%" } {}
                        }
                        div.figures { "cpu " (cpu) " % · mem " (mem) " % · " (n.pods) " pods" }
                        @if n.unschedulable { div.flag { "cordoned" } }
                        @if n.not_ready { div.flag { "not ready" } }
                        @for t in &n.taints { div.taint { (t) } }
                        @if !n.pod_names.is_empty() {
                            ul.pods {
                                @for p in &n.pod_names { li { (p) } }
                                @if n.pods > n.pod_names.len() { li.more { "+" (n.pods - n.pod_names.len()) } }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The queue view.
pub fn queue(view: &View) -> Markup {
    html! {
        section #queue data-view="queue" {
            p.summary {
                (view.pending_total) " pending"
                @if view.pending_total > view.pending.len() { " (the " (view.pending.len()) " waiting longest shown)" }
                " · as of " (view.at)
            }
            table.queue {
                thead { tr { th { "pod" } th { "profile" } th { "state" } th { "waiting" } th { "attempts" } th { "why" } } }
                tbody {
                    @for p in &view.pending {
                        tr data-pod=(p.pod) data-state=(p.state) {
                            td.pod { (p.pod) }
                            td { (p.profile) }
                            td.state { (p.state) }
                            td { (format_wait(p.waited)) }
                            td { (p.attempts) }
                            td.reason {
                                @if let Some(r) = &p.reason { (r) }
                                @if !p.gates.is_empty() { "gates: " (p.gates.join(", ")) }
                                @if let Some(n) = &p.nominated { " nominated to " (n) }
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
pub fn decisions(board: &Board) -> Markup {
    let list = board.decisions();
    html! {
        section #decisions data-view="decisions" {
            p.summary {
                "The last " (DECISIONS_KEPT) " attempts made while this page was open (the scheduler records none while nobody looks). "
                "Each one is decided again, explained, when you open it."
            }
            table.decisions {
                thead { tr { th { "when" } th { "pod" } th { "outcome" } } }
                tbody {
                    @for (at, pod, o) in &list {
                        tr data-pod=(pod) {
                            td { (at) }
                            td { a href={ "/ui?view=decision&pod=" (urlencode(pod)) } { (pod) } }
                            td.outcome { (outcome(o)) }
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
            section #decision data-view="decision" {
                p { "No attempt of " (pod) " was recorded while this page was open." }
            }
        };
    };
    let x = &d.explanation;
    let best = x.nodes.iter().filter_map(|n| n.total).max().unwrap_or(0).max(1);
    let mut rows: Vec<&wasmsched_core::framework::NodeExplanation> = x.nodes.iter().collect();
    rows.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| a.node.cmp(&b.node)));
    html! {
        section #decision data-view="decision" data-pod=(d.pod) {
            h2 { (d.pod) }
            p.summary {
                "profile " (d.profile) " · at " (d.at) " · " (outcome(&d.decided))
                @if d.again != d.decided { " · decided again now: " (outcome(&d.again)) }
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

/// The plugins view: the serving WebAssembly plugins, then the shadow's.
pub fn plugins(host: Option<&wasmsched_wasm::PluginHost>, shadow: Option<&crate::shadow::Shadow>) -> Markup {
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
            @if let Some(sh) = shadow {
                h2 { "Shadow (" (sh.percent()) " % of cycles)" }
                pre.shadow { (serde_json::to_string_pretty(&sh.json()).unwrap_or_default()) }
            }
        }
    }
}

/// The whole page, with `view` shown first.
pub fn page(body: Markup, shown: &str) -> Markup {
    let tab = |name: &str, label: &str| {
        html! { a.tab.active[name == shown] href={ "/ui?view=" (name) } data-tab=(name) { (label) } }
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
            body data-view=(shown) {
                header {
                    span.brand { "wasmsched" }
                    nav {
                        (tab("cluster", "Cluster")) (tab("queue", "Queue")) (tab("decisions", "Decisions"))
                        (tab("plugins", "Plugins"))
                    }
                    span #live {}
                }
                main #main { (body) }
                script { (PreEscaped(SCRIPT)) }
            }
        }
    }
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
            }],
            pending_total: 1,
        };
        let q = ClusterQuery {
            page: 0,
            filter: hostile.into(),
        };
        for html in [
            page(cluster(&view, &q), "cluster").into_string(),
            queue(&view).into_string(),
        ] {
            assert!(!html.contains("<script>alert"), "{html}");
            assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{html}");
        }
        assert_eq!(format_wait(Duration::from_secs(75)), "1m15s");
        assert_eq!(urlencode("a b&c"), "a%20b%26c");
    }
}
