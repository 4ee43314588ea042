//! The daemon: watchers feed a scheduling thread that owns the core
//! scheduler; placed pods are bound off that thread with bounded
//! concurrency; outcomes come back as messages.
//!
//! ```text
//! node watcher ─┐                          ┌─> binder tasks (POST pods/binding) ─┐
//! pod watcher  ─┼─> scheduling thread ─────┤                                     │
//! leader lease ─┘        ^                 └─> reporter (events, pod condition)  │
//!                        └──────────── binding outcomes ─────────────────────────┘
//! ```

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::watcher::{self, Event as WatchEvent};
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc, watch};
use wasmsched_core::config::Config;
use wasmsched_core::framework::ScheduleError;
use wasmsched_core::plugins::Registry;
use wasmsched_core::queue::Location;
use wasmsched_core::scheduler::{Responsibility, Scheduler};

use crate::leader::{self, LeaderElection};
use crate::metrics::Metrics;

/// How the daemon runs.
pub struct Options {
    /// The scheduler configuration (profiles, plugins, backoff).
    pub config: Config,
    /// Plugins the profiles may enable (built-ins, plus WebAssembly plugins).
    pub registry: Registry,
    /// The WebAssembly plugin host, for readiness and metrics.
    pub plugins: Option<Arc<wasmsched_wasm::PluginHost>>,
    /// Seed of tie-breaking.
    pub seed: u64,
    /// This replica's identity in the lease and in events.
    pub identity: String,
    /// Leader election.
    pub leader_election: LeaderElection,
    /// Binding requests in flight at most.
    pub bind_concurrency: usize,
    /// Address of `/healthz`, `/readyz`, `/metrics` (none: not served).
    pub admin: Option<SocketAddr>,
}

/// What the scheduling thread is told.
enum Msg {
    Node(Box<Node>),
    NodeGone(String),
    NodesSynced(HashSet<String>),
    Pod(Box<Pod>),
    PodGone(String),
    PodsSynced(HashSet<String>),
    Bound(BindOutcome),
    Leader(bool),
    Stop,
}

struct BindJob {
    namespace: String,
    name: String,
    uid: String,
    node: String,
    profile: String,
    queued_at: Instant,
}

enum BindResult {
    Ok,
    /// 409 (bound by someone else) or 404 (gone): drop the pod.
    Drop(String),
    /// Retryable failure after retries, or any other error: forget and requeue.
    Failed(String),
}

struct BindOutcome {
    job: BindJob,
    result: BindResult,
}

/// A report for the reporter task.
enum Report {
    Scheduled {
        job_ns: String,
        name: String,
        uid: String,
        node: String,
        profile: String,
    },
    Unschedulable {
        ns: String,
        name: String,
        uid: String,
        profile: String,
        message: String,
    },
    Forget(String),
}

/// Shared state for the admin endpoints.
pub struct Status {
    /// Metrics.
    pub metrics: Metrics,
    nodes_synced: AtomicBool,
    pods_synced: AtomicBool,
    plugins: Option<Arc<wasmsched_wasm::PluginHost>>,
}

impl Status {
    /// Ready: both caches synced (and plugins loaded, which happens before start).
    pub fn ready(&self) -> bool {
        self.nodes_synced.load(Ordering::Relaxed) && self.pods_synced.load(Ordering::Relaxed)
    }
}

/// Runs the daemon until `shutdown` resolves: then it stops scheduling,
/// finishes the bindings in flight, releases the lease and returns.
pub async fn run(
    client: kube::Client,
    opts: Options,
    shutdown: impl std::future::Future<Output = ()>,
) -> anyhow::Result<Arc<Status>> {
    let status = Arc::new(Status {
        metrics: Metrics::default(),
        nodes_synced: AtomicBool::new(false),
        pods_synced: AtomicBool::new(false),
        plugins: opts.plugins.clone(),
    });
    let sched = Scheduler::new(&opts.config, &opts.registry, opts.seed, Responsibility::OwnProfiles)?;
    let (tx, rx) = std::sync::mpsc::channel::<Msg>();
    let (bind_tx, mut bind_rx) = mpsc::unbounded_channel::<BindJob>();
    let (report_tx, report_rx) = mpsc::unbounded_channel::<Report>();
    let (stop_tx, stop_rx) = watch::channel(false);
    let (leader_tx, mut leader_rx) = watch::channel(false);

    if let Some(addr) = opts.admin {
        crate::admin::serve(addr, status.clone()).await?;
    }

    // Watchers.
    let mut tasks = Vec::new();
    tasks.push(tokio::spawn(watch_kind(
        client.clone(),
        NODES,
        tx.clone(),
        status.clone(),
        stop_rx.clone(),
    )));
    tasks.push(tokio::spawn(watch_kind(
        client.clone(),
        PODS,
        tx.clone(),
        status.clone(),
        stop_rx.clone(),
    )));
    // Leader election.
    let election = tokio::spawn(leader::run(
        client.clone(),
        opts.leader_election.clone(),
        opts.identity.clone(),
        leader_tx,
        stop_rx.clone(),
    ));
    {
        let tx = tx.clone();
        let status = status.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                let leading = *leader_rx.borrow_and_update();
                status.metrics.leader.store(leading, Ordering::Relaxed);
                if tx.send(Msg::Leader(leading)).is_err() || leader_rx.changed().await.is_err() {
                    return;
                }
            }
        }));
    }
    // Reporter.
    tasks.push(tokio::spawn(reporter(
        client.clone(),
        opts.identity.clone(),
        report_rx,
        status.clone(),
    )));

    // Binder: bounded concurrency, off the scheduling thread.
    let permits = Arc::new(Semaphore::new(opts.bind_concurrency.max(1)));
    let leading_flag = Arc::new(AtomicBool::new(false));
    let binder = {
        let client = client.clone();
        let tx = tx.clone();
        let permits = permits.clone();
        let leading = leading_flag.clone();
        let status = status.clone();
        tokio::spawn(async move {
            while let Some(job) = bind_rx.recv().await {
                let Ok(permit) = permits.clone().acquire_owned().await else {
                    return;
                };
                let client = client.clone();
                let tx = tx.clone();
                let leading = leading.clone();
                let status = status.clone();
                tokio::spawn(async move {
                    let result = bind(&client, &job, &leading, &status).await;
                    drop(permit);
                    let _ = tx.send(Msg::Bound(BindOutcome { job, result }));
                });
            }
        })
    };

    // The scheduling thread.
    let thread = {
        let status = status.clone();
        let leading = leading_flag.clone();
        std::thread::Builder::new()
            .name("scheduler".into())
            .spawn(move || scheduling_loop(sched, rx, bind_tx, report_tx, status, leading))?
    };

    shutdown.await;
    tracing::info!("shutting down: no new scheduling cycles, finishing bindings in flight");
    let _ = tx.send(Msg::Stop);
    let _ = tokio::task::spawn_blocking(move || thread.join()).await;
    // Every binding in flight holds a permit: take them all back.
    let all = opts.bind_concurrency.max(1) as u32;
    let _ = tokio::time::timeout(Duration::from_secs(10), permits.acquire_many(all)).await;
    binder.abort();
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(5), election).await;
    for t in tasks {
        t.abort();
    }
    Ok(status)
}

struct Loop {
    sched: Scheduler,
    bind_tx: mpsc::UnboundedSender<BindJob>,
    report_tx: mpsc::UnboundedSender<Report>,
    status: Arc<Status>,
    leading_flag: Arc<AtomicBool>,
    leading: bool,
}

impl Loop {
    /// Applies one message; false when the loop must stop.
    fn handle(&mut self, msg: Msg) -> bool {
        let now = Instant::now();
        let sched = &mut self.sched;
        match msg {
            Msg::Stop => return false,
            Msg::Leader(l) => {
                self.leading = l;
                self.leading_flag.store(l, Ordering::SeqCst);
            }
            Msg::Node(n) => {
                if let Err(e) = sched.on_node(&n, now) {
                    self.status.metrics.malformed_objects.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(error = %e, "skipping a node that cannot be parsed");
                }
            }
            Msg::NodeGone(name) => sched.on_node_deleted(&name),
            Msg::NodesSynced(names) => {
                let gone: Vec<String> = sched
                    .cache
                    .node_names()
                    .filter(|n| !names.contains(*n))
                    .map(str::to_owned)
                    .collect();
                for n in gone {
                    sched.on_node_deleted(&n);
                }
            }
            Msg::Pod(p) => {
                if let Err(e) = sched.on_pod(&p, now) {
                    self.status.metrics.malformed_objects.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(error = %e, "skipping a pod that cannot be parsed");
                }
            }
            Msg::PodGone(key) => {
                sched.on_pod_deleted(&key, now);
                let _ = self.report_tx.send(Report::Forget(key));
            }
            Msg::PodsSynced(keys) => {
                // A relist: whatever we know that the server no longer has is gone.
                let mut known: Vec<String> = sched.cache.pod_keys().cloned().collect();
                known.extend(sched.queue.all_keys());
                for k in known {
                    if !keys.contains(&k) && !sched.cache.is_assumed(&k) {
                        sched.on_pod_deleted(&k, now);
                    }
                }
            }
            Msg::Bound(BindOutcome { job, result }) => {
                let key = format!("{}/{}", job.namespace, job.name);
                match result {
                    BindResult::Ok => {
                        sched.binding_finished(&key, true, now);
                        self.status.metrics.bound(&job.profile, job.queued_at.elapsed());
                        let _ = self.report_tx.send(Report::Scheduled {
                            job_ns: job.namespace,
                            name: job.name,
                            uid: job.uid,
                            node: job.node,
                            profile: job.profile,
                        });
                    }
                    BindResult::Drop(why) => {
                        tracing::info!(pod = %key, reason = %why, "not binding: the pod is bound elsewhere or gone");
                        sched.drop_pod(&key);
                    }
                    BindResult::Failed(why) => {
                        tracing::warn!(pod = %key, error = %why, "binding failed; the pod is retried after backoff");
                        sched.binding_finished(&key, false, now);
                    }
                }
            }
        }
        true
    }

    /// One scheduling cycle; false when no pod was ready.
    fn cycle(&mut self) -> bool {
        let started = Instant::now();
        let Some(attempt) = self.sched.with_pool(|s| s.schedule_one(started, false)) else {
            return false;
        };
        let took = started.elapsed();
        for t in &attempt.plugin_timings {
            self.status
                .metrics
                .plugin(&t.plugin, t.extension_point, t.status, t.took);
        }
        let pod = &attempt.pod;
        match &attempt.result {
            Ok(r) => {
                self.status.metrics.attempt(&attempt.profile, "scheduled", took);
                let _ = self.bind_tx.send(BindJob {
                    namespace: pod.namespace.clone(),
                    name: pod.name.clone(),
                    uid: pod.uid.clone(),
                    node: r.node.clone(),
                    profile: attempt.profile.clone(),
                    queued_at: attempt.queued_at,
                });
            }
            Err(e) => {
                let result = if matches!(e, ScheduleError::Error(_)) {
                    "error"
                } else {
                    "unschedulable"
                };
                self.status.metrics.attempt(&attempt.profile, result, took);
                let _ = self.report_tx.send(Report::Unschedulable {
                    ns: pod.namespace.clone(),
                    name: pod.name.clone(),
                    uid: pod.uid.clone(),
                    profile: attempt.profile.clone(),
                    message: e.to_string(),
                });
            }
        }
        true
    }
}

fn scheduling_loop(
    sched: Scheduler,
    rx: std::sync::mpsc::Receiver<Msg>,
    bind_tx: mpsc::UnboundedSender<BindJob>,
    report_tx: mpsc::UnboundedSender<Report>,
    status: Arc<Status>,
    leading_flag: Arc<AtomicBool>,
) {
    let mut l = Loop {
        sched,
        bind_tx,
        report_tx,
        status,
        leading_flag,
        leading: false,
    };
    let mut last_gauge = Instant::now();
    let mut idle = false;
    loop {
        // Apply every change that arrived before the next cycle; when idle
        // (or not leading), sleep until a change or the next backoff expiry.
        let mut wait = if !l.leading {
            Duration::from_millis(500)
        } else if idle {
            l.sched
                .queue
                .next_backoff_expiry()
                .map_or(Duration::from_millis(500), |t| {
                    t.saturating_duration_since(Instant::now())
                })
                .clamp(Duration::from_millis(1), Duration::from_millis(500))
        } else {
            Duration::ZERO
        };
        loop {
            let msg = if wait.is_zero() {
                match rx.try_recv() {
                    Ok(m) => m,
                    Err(std::sync::mpsc::TryRecvError::Empty) => break,
                    Err(std::sync::mpsc::TryRecvError::Disconnected) => return,
                }
            } else {
                match rx.recv_timeout(wait) {
                    Ok(m) => m,
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => break,
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                }
            };
            wait = Duration::ZERO;
            if !l.handle(msg) {
                return;
            }
        }
        if last_gauge.elapsed() > Duration::from_millis(500) {
            last_gauge = Instant::now();
            let q = &l.sched.queue;
            l.status.metrics.set_pending(
                q.len(Location::Active),
                q.len(Location::Backoff),
                q.len(Location::Unschedulable),
            );
        }
        idle = !(l.leading && l.cycle());
    }
}

async fn bind(client: &kube::Client, job: &BindJob, leading: &AtomicBool, status: &Status) -> BindResult {
    let api: Api<Pod> = Api::namespaced(client.clone(), &job.namespace);
    let body = json!({
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": job.name, "uid": job.uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": job.node},
    });
    let mut delay = Duration::from_millis(100);
    for attempt in 0..6 {
        if !leading.load(Ordering::SeqCst) {
            status.metrics.binding("error");
            return BindResult::Failed("lost leadership before binding".into());
        }
        match api
            .create_subresource::<_, Value>("binding", &job.name, &PostParams::default(), &body)
            .await
        {
            Ok(_) => {
                status.metrics.binding("ok");
                return BindResult::Ok;
            }
            Err(kube::Error::Api(s)) if s.code == 409 => {
                // Our own earlier attempt may have landed (its answer lost).
                if s.message
                    .ends_with(&format!("is already assigned to node \"{}\"", job.node))
                    && attempt > 0
                {
                    status.metrics.binding("ok");
                    return BindResult::Ok;
                }
                status.metrics.binding("conflict");
                return BindResult::Drop(s.message.clone());
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {
                status.metrics.binding("gone");
                return BindResult::Drop(s.message.clone());
            }
            Err(kube::Error::Api(s)) if s.code == 429 || s.code >= 500 => {
                status.metrics.binding("retry");
                tracing::debug!(pod = %job.name, code = s.code, "binding refused; retrying");
            }
            Err(kube::Error::Api(s)) => {
                status.metrics.binding("error");
                return BindResult::Failed(s.message.clone());
            }
            Err(e) => {
                status.metrics.binding("retry");
                tracing::debug!(pod = %job.name, error = %e, "binding request failed; retrying");
            }
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(2));
    }
    status.metrics.binding("error");
    BindResult::Failed("the API server kept refusing the binding".into())
}

/// How one kind's watch events become messages for the scheduling thread.
struct Kind<K> {
    what: &'static str,
    key: fn(&K) -> String,
    apply: fn(K) -> Msg,
    gone: fn(String) -> Msg,
    synced: fn(HashSet<String>) -> Msg,
    synced_flag: fn(&Status) -> &AtomicBool,
}

fn pod_key(p: &Pod) -> String {
    format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or("default"),
        p.metadata.name.as_deref().unwrap_or_default()
    )
}

const NODES: Kind<Node> = Kind {
    what: "nodes",
    key: |n| n.metadata.name.clone().unwrap_or_default(),
    apply: |n| Msg::Node(Box::new(n)),
    gone: Msg::NodeGone,
    synced: Msg::NodesSynced,
    synced_flag: |s| &s.nodes_synced,
};

const PODS: Kind<Pod> = Kind {
    what: "pods",
    key: pod_key,
    apply: |p| Msg::Pod(Box::new(p)),
    gone: Msg::PodGone,
    synced: Msg::PodsSynced,
    synced_flag: |s| &s.pods_synced,
};

/// Follows every object of one kind with kube-rs' watcher. A relist ends
/// with the set of keys it saw, so the scheduling thread can drop the rest.
async fn watch_kind<K>(
    client: kube::Client,
    kind: Kind<K>,
    tx: std::sync::mpsc::Sender<Msg>,
    status: Arc<Status>,
    mut stop: watch::Receiver<bool>,
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::all(client);
    let mut stream = watcher::watcher(api, watcher::Config::default()).boxed();
    let mut init: HashSet<String> = HashSet::new();
    let mut failures = 0u32;
    loop {
        let ev = tokio::select! {
            ev = stream.next() => ev,
            _ = stop.wait_for(|s| *s) => return,
        };
        let Some(ev) = ev else { return };
        let msg = match ev {
            Ok(WatchEvent::Init) => {
                init.clear();
                continue;
            }
            Ok(WatchEvent::InitApply(o)) => {
                init.insert((kind.key)(&o));
                (kind.apply)(o)
            }
            Ok(WatchEvent::InitDone) => {
                failures = 0;
                (kind.synced_flag)(&status).store(true, Ordering::Relaxed);
                (kind.synced)(std::mem::take(&mut init))
            }
            Ok(WatchEvent::Apply(o)) => (kind.apply)(o),
            Ok(WatchEvent::Delete(o)) => (kind.gone)((kind.key)(&o)),
            Err(e) => {
                backoff(&mut failures, kind.what, &e).await;
                continue;
            }
        };
        if tx.send(msg).is_err() {
            return;
        }
    }
}

/// kube-rs' watcher yields an error and retries on the next poll (a 410
/// relists); back off so a failing API server is not hammered.
async fn backoff(failures: &mut u32, what: &str, e: &watcher::Error) {
    *failures += 1;
    let delay = Duration::from_millis(100 * 2u64.pow((*failures).min(6))).min(Duration::from_secs(5));
    tracing::warn!(resource = what, error = %e, retry_in = ?delay, "watch failed");
    tokio::time::sleep(delay).await;
}

/// Now as `metav1.MicroTime` writes it.
fn micro_now() -> String {
    leader::now().strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string()
}

/// Now as `metav1.Time` writes it (whole seconds).
fn time_now() -> String {
    leader::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Writes events (`events.k8s.io/v1`) and the pods' `PodScheduled`
/// condition. Repeated failures of a pod with the same message update one
/// event's series instead of creating new events.
async fn reporter(
    client: kube::Client,
    identity: String,
    mut rx: mpsc::UnboundedReceiver<Report>,
    status: Arc<Status>,
) {
    // pod key → (event name, message, count, last series update)
    let mut failing: HashMap<String, (String, String, u32, Instant)> = HashMap::new();
    let mut seq: u64 = 0;
    while let Some(r) = rx.recv().await {
        match r {
            Report::Forget(key) => {
                failing.remove(&key);
            }
            Report::Scheduled {
                job_ns,
                name,
                uid,
                node,
                profile,
            } => {
                failing.remove(&format!("{job_ns}/{name}"));
                seq += 1;
                let note = format!("Successfully assigned {job_ns}/{name} to {node}");
                let ev = event(
                    &job_ns,
                    &name,
                    &uid,
                    &profile,
                    &identity,
                    "Normal",
                    "Scheduled",
                    "Binding",
                    &note,
                    seq,
                );
                post_event(&client, &job_ns, ev, &status).await;
            }
            Report::Unschedulable {
                ns,
                name,
                uid,
                profile,
                message,
            } => {
                let key = format!("{ns}/{name}");
                match failing.get_mut(&key) {
                    Some((ev_name, msg, count, last)) if *msg == message => {
                        *count += 1;
                        // Aggregate: bump the series at most every 10 s.
                        if last.elapsed() > Duration::from_secs(10) {
                            *last = Instant::now();
                            let api: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), &ns);
                            let patch = json!({"series": {"count": *count, "lastObservedTime": micro_now()}});
                            if let Err(e) = api.patch(ev_name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                                tracing::debug!(error = %e, "cannot update the event series");
                            }
                        }
                    }
                    _ => {
                        seq += 1;
                        let ev = event(
                            &ns,
                            &name,
                            &uid,
                            &profile,
                            &identity,
                            "Warning",
                            "FailedScheduling",
                            "Scheduling",
                            &message,
                            seq,
                        );
                        let ev_name = ev["metadata"]["name"].as_str().unwrap_or_default().to_owned();
                        post_event(&client, &ns, ev, &status).await;
                        failing.insert(key.clone(), (ev_name, message.clone(), 1, Instant::now()));
                        // The pod's condition, as kube-scheduler sets it.
                        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
                        let cond = json!({"status": {"conditions": [{
                            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                            "message": message, "lastProbeTime": null,
                            "lastTransitionTime": time_now(),
                        }]}});
                        if let Err(e) = pods
                            .patch_status(&name, &PatchParams::default(), &Patch::Strategic(&cond))
                            .await
                        {
                            tracing::debug!(pod = %key, error = %e, "cannot set the PodScheduled condition");
                        }
                    }
                }
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn event(
    ns: &str,
    name: &str,
    uid: &str,
    profile: &str,
    identity: &str,
    kind: &str,
    reason: &str,
    action: &str,
    note: &str,
    seq: u64,
) -> Value {
    let now = micro_now();
    json!({
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": format!("{name}.{:x}{seq:04x}", std::process::id()), "namespace": ns},
        "eventTime": now,
        "reportingController": profile,
        "reportingInstance": identity,
        "action": action,
        "reason": reason,
        "type": kind,
        "note": note.chars().take(1024).collect::<String>(),
        "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": name, "uid": uid},
    })
}

async fn post_event(client: &kube::Client, ns: &str, ev: Value, status: &Status) {
    let api: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), ns);
    let typed = match serde_json::from_value(ev) {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(error = %e, "cannot build an event");
            return;
        }
    };
    match api.create(&PostParams::default(), &typed).await {
        Ok(_) => {
            status.metrics.events.fetch_add(1, Ordering::Relaxed);
        }
        Err(e) => tracing::debug!(error = %e, "cannot write an event"),
    }
}

impl Status {
    /// The metrics text.
    pub fn metrics_text(&self) -> String {
        self.metrics.render(self.plugins.as_deref())
    }
}
