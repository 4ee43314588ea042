//! The daemon: watchers feed a scheduling thread that owns the core
//! scheduler; placed pods are bound off that thread with bounded
//! concurrency; outcomes come back as messages.
//!
//! ```text
//! node watcher ─┐                          ┌─> binder tasks (POST pods/binding) ─┐
//! pod watcher  ─┼─> scheduling thread ─────┤                                     │
//! leader lease ─┤        ^                 ├─> reporter (events, pod condition)  │
//! metric query ─┘        │                 │                                     │
//!                        │                 └─> preemption executor (evictions) ─┤
//!                        └──────────── binding outcomes ─────────────────────────┘
//! ```
//!
//! The pieces live in their own modules: [`crate::watch`], [`crate::schedule`]
//! (the thread), [`crate::binder`], [`crate::reporter`], [`crate::preempt`],
//! [`crate::leader`], `metric_sources` (the Prometheus queries).
//! This one wires them, supervises the thread, and stops them in the order
//! that keeps the guarantees: no new cycle, bindings in flight finished or
//! cancelled, and only then the lease released.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use wasmsched_core::config::Config;
use wasmsched_core::plugins::Registry;
use wasmsched_core::scheduler::{Responsibility, Scheduler};

use crate::binder::{self, BinderSettings};
use crate::leader::{self, LeaderElection, Leadership};
use crate::metrics::Metrics;
use crate::schedule::{self, Channels, Msg};
use crate::watch::spawn_watchers;

/// Messages from the watchers the scheduling thread may fall behind by.
pub(crate) const MSG_CAPACITY: usize = 4096;
/// Reports (events, conditions) waiting for the API server at most.
const REPORT_CAPACITY: usize = 10_000;

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
    /// Longest any API request may take (events, conditions); a binding is
    /// further bounded by what is left of the lease.
    pub api_timeout: Duration,
    /// Address of `/healthz`, `/readyz`, `/metrics` (none: not served).
    pub admin: Option<SocketAddr>,
}

/// Shared state for the admin endpoints.
pub struct Status {
    /// Metrics.
    pub metrics: Metrics,
    pub(crate) nodes_synced: AtomicBool,
    pub(crate) pods_synced: AtomicBool,
    pub(crate) namespaces_synced: AtomicBool,
    /// Services and controllers listed (default spreading; not a condition
    /// of readiness: without them pods are only scored differently).
    pub(crate) workloads_synced: AtomicBool,
    /// Claims, volumes, storage classes and CSI nodes listed.
    pub(crate) storage_synced: AtomicBool,
    /// False once the scheduling thread died.
    alive: AtomicBool,
    plugins: Option<Arc<wasmsched_wasm::PluginHost>>,
}

impl Status {
    pub(crate) fn new(plugins: Option<Arc<wasmsched_wasm::PluginHost>>) -> Self {
        Self {
            metrics: Metrics::default(),
            nodes_synced: AtomicBool::new(false),
            pods_synced: AtomicBool::new(false),
            namespaces_synced: AtomicBool::new(false),
            workloads_synced: AtomicBool::new(false),
            storage_synced: AtomicBool::new(false),
            alive: AtomicBool::new(true),
            plugins,
        }
    }

    /// Marks every cache synced (a process that keeps none: a stateless
    /// extender).
    pub(crate) fn mark_synced(&self) {
        for f in [
            &self.nodes_synced,
            &self.pods_synced,
            &self.namespaces_synced,
            &self.workloads_synced,
            &self.storage_synced,
        ] {
            f.store(true, Ordering::Relaxed);
        }
    }

    /// Ready: every cache synced (and plugins loaded, which happens before start).
    pub fn ready(&self) -> bool {
        self.nodes_synced.load(Ordering::Relaxed)
            && self.pods_synced.load(Ordering::Relaxed)
            && self.namespaces_synced.load(Ordering::Relaxed)
    }

    /// The WebAssembly plugin host, if plugins are configured.
    pub(crate) fn plugins(&self) -> Option<&Arc<wasmsched_wasm::PluginHost>> {
        self.plugins.as_ref()
    }

    /// Plugins the profiles enable that are not loaded, with why, and
    /// whether their failure policy is `fail` (their pods cannot be placed).
    pub fn missing_plugins(&self) -> Vec<(String, bool)> {
        let Some(host) = &self.plugins else {
            return Vec::new();
        };
        let mut out: Vec<(String, bool)> = host
            .slots()
            .iter()
            .filter_map(|s| {
                s.not_loaded()
                    .map(|why| (why, s.failure_policy() == wasmsched_wasm::FailurePolicy::Fail))
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Healthy: the scheduling thread is running.
    pub fn healthy(&self) -> bool {
        self.alive.load(Ordering::Relaxed)
    }

    /// The metrics text.
    pub fn metrics_text(&self) -> String {
        self.metrics.render(self.plugins.as_deref())
    }
}

/// Now as `metav1.Time` writes it (whole seconds).
pub(crate) fn time_now() -> String {
    leader::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Starts `body` on a named thread that reports its own death: if it
/// panics, `leadership` is stepped down at once (no binding after that),
/// `/healthz` fails, and the returned receiver gets the panic's message.
pub(crate) fn spawn_supervised(
    status: Arc<Status>,
    leadership: Arc<Leadership>,
    body: impl FnOnce() + Send + 'static,
) -> std::io::Result<(std::thread::JoinHandle<()>, oneshot::Receiver<String>)> {
    let (died_tx, died_rx) = oneshot::channel();
    let handle = std::thread::Builder::new().name("scheduler".into()).spawn(move || {
        if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
            leadership.step_down();
            status.alive.store(false, Ordering::Relaxed);
            let msg = wasmsched_core::scheduler::panic_message(&*panic);
            tracing::error!(error = %msg, "the scheduling thread died");
            let _ = died_tx.send(msg);
        }
    })?;
    Ok((handle, died_rx))
}

/// Runs the daemon until `shutdown` resolves: then it stops scheduling,
/// finishes the bindings in flight (cancelling what is left after a grace
/// period), releases the lease and returns. If the scheduling thread dies,
/// it stops the same way, without binding anything more, and returns an
/// error (the process should exit non-zero so another replica, or the
/// kubelet's restart, takes over).
pub async fn run(
    client: kube::Client,
    opts: Options,
    shutdown: impl std::future::Future<Output = ()>,
) -> anyhow::Result<Arc<Status>> {
    let status = Arc::new(Status::new(opts.plugins.clone()));
    let sched = Scheduler::new(&opts.config, &opts.registry, opts.seed, Responsibility::OwnProfiles)?;
    let leadership = Arc::new(Leadership::default());
    let (tx, msgs) = mpsc::channel::<Msg>(MSG_CAPACITY);
    let (outcome_tx, outcomes) = mpsc::unbounded_channel();
    let concurrency = opts.bind_concurrency.max(1);
    let (jobs_tx, jobs) = mpsc::channel(concurrency * 4);
    let (reports_tx, reports) = mpsc::channel(REPORT_CAPACITY);
    let (preempt_tx, preempt_jobs) = mpsc::channel(64);
    let (stop_tx, stop_rx) = watch::channel(false);
    let (leader_tx, mut leader_rx) = watch::channel(false);

    if let Some(addr) = opts.admin {
        crate::admin::serve(addr, status.clone()).await?;
    }

    if let Some(h) = &opts.plugins {
        // A plugin loaded while the thread sleeps: wake it, so the pods
        // waiting for it are retried now, not at its next timeout.
        let tx = tx.clone();
        h.on_change(Box::new(move || {
            let _ = tx.try_send(Msg::PluginsChanged);
        }));
    }
    let mut tasks = spawn_watchers(&client, &tx, &status, &stop_rx);
    tasks.extend(crate::metric_sources::spawn(
        &opts.config.metrics.sources,
        &tx,
        &status,
        &stop_rx,
    )?);
    let election = tokio::spawn(leader::run(
        client.clone(),
        opts.leader_election.clone(),
        opts.identity.clone(),
        leadership.clone(),
        leader_tx,
        stop_rx.clone(),
    ));
    {
        // Wakes the thread and updates the gauge when leadership changes.
        let tx = tx.clone();
        let status = status.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                let leading = *leader_rx.borrow_and_update();
                status.metrics.leader.set(i64::from(leading));
                if tx.send(Msg::Leader).await.is_err() || leader_rx.changed().await.is_err() {
                    return;
                }
            }
        }));
    }
    let reporter = tokio::spawn(crate::reporter::run(
        client.clone(),
        opts.identity.clone(),
        reports,
        status.clone(),
        opts.api_timeout,
    ));
    // A binding may not outlive the lease it was sent under: once the renew
    // deadline passes, another replica may take over after the rest of the
    // lease duration.
    let request_timeout = if opts.leader_election.enabled {
        opts.api_timeout
            .min(opts.leader_election.lease_duration - opts.leader_election.renew_deadline)
    } else {
        opts.api_timeout
    };
    let binder = tokio::spawn(binder::run(
        client.clone(),
        jobs,
        outcome_tx,
        leadership.clone(),
        status.clone(),
        BinderSettings {
            concurrency,
            request_timeout,
            grace: Duration::from_secs(10).max(request_timeout),
        },
    ));

    let executor = tokio::spawn(crate::preempt::run(
        client.clone(),
        opts.identity.clone(),
        preempt_jobs,
        tx.clone(),
        leadership.clone(),
        status.clone(),
        request_timeout,
    ));

    let (thread, mut died) = {
        let ch = Channels {
            msgs,
            outcomes,
            jobs: jobs_tx,
            reports: reports_tx,
            preemptions: preempt_tx,
        };
        let (status, leadership) = (status.clone(), leadership.clone());
        let rt = tokio::runtime::Handle::current();
        spawn_supervised(status.clone(), leadership.clone(), move || {
            schedule::run(sched, ch, status, leadership, rt)
        })?
    };

    let death = tokio::select! {
        _ = shutdown => None,
        msg = &mut died => msg.ok(),
    };
    match &death {
        None => tracing::info!("shutting down: no new scheduling cycles, finishing bindings in flight"),
        Some(_) => tracing::error!("stopping: the scheduling thread died; no binding from now on"),
    }
    let _ = tx.try_send(Msg::Stop);
    drop(tx);
    // The thread ends within a cycle; its job sender closes, which lets the
    // binder drain, then cancel, what is in flight.
    let _ = tokio::task::spawn_blocking(move || thread.join()).await;
    let _ = binder.await;
    let _ = executor.await;
    // Only now may another replica take over: release the lease.
    leadership.step_down();
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(5), election).await;
    let _ = tokio::time::timeout(Duration::from_secs(2), reporter).await;
    for t in tasks {
        t.abort();
    }
    match death {
        None => Ok(status),
        Some(msg) => Err(anyhow::anyhow!("the scheduling thread panicked: {msg}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_scheduling_thread_stops_binding_and_fails_health() {
        let status = Arc::new(Status::new(None));
        let leadership = Arc::new(Leadership::default());
        leadership.renewed(std::time::Instant::now(), Duration::from_secs(10));
        assert!(leadership.is_leading());
        let (thread, died) = spawn_supervised(status.clone(), leadership.clone(), || {
            let v: Vec<u64> = Vec::new();
            let _ = v[3]; // a bug outside any cycle
        })
        .unwrap();
        let msg = died.blocking_recv().expect("the death is reported");
        thread.join().unwrap();
        assert!(msg.contains("index out of bounds"), "{msg}");
        assert!(!status.healthy());
        assert!(!leadership.is_leading(), "no binding after the thread died");
    }
}
