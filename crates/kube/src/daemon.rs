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

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use wasmsched_core::config::Config;
use wasmsched_core::plugins::Registry;
use wasmsched_core::scheduler::{Responsibility, Scheduler};

use crate::binder::{self, BinderSettings};
use crate::leader::{self, LeaderElection, Leadership};
use crate::schedule::{self, Channels, Msg};
use crate::status::Status;
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
    /// Where and how the admin endpoints are served (none: not served).
    pub admin: Option<crate::admin::AdminOptions>,
    /// The client the admin port reviews tokens and access with (none:
    /// `client`).
    pub review_client: Option<kube::Client>,
    /// The client the lease is renewed with (none: `client`). client-go's
    /// leader election has a client of its own, so that renewals never
    /// wait behind bindings in the main client's token bucket.
    pub lease_client: Option<kube::Client>,
    /// The client events are written with (none: `client`). kube-scheduler
    /// writes events with a client of its own, whose token bucket is not the
    /// one bindings wait on.
    pub events_client: Option<kube::Client>,
    /// On shutdown, how long the events and conditions still queued may
    /// take once the bindings in flight are done; what is left is counted
    /// and logged.
    pub drain_timeout: Duration,
    /// `/healthz` fails when the scheduling loop has not turned for this
    /// long (it turns at least every half second when idle).
    pub stall_timeout: Duration,
    /// Bind each pod to the next node in turn, without a scheduling cycle
    /// (`bench --e2e --null`: the API server's limit for this client).
    pub null_placement: bool,
    /// New plugin versions compared with the serving ones on a sample of
    /// live cycles (`wasmPlugins.shadow`).
    pub shadow: Option<crate::shadow::ShadowOptions>,
}

/// How long bindings in flight may finish once the daemon stops.
pub const BIND_GRACE: Duration = Duration::from_secs(10);

/// Now as `metav1.Time` writes it (whole seconds).
pub(crate) fn time_now() -> String {
    rfc3339(std::time::SystemTime::now())
}

/// `t` as RFC 3339, to the second.
pub(crate) fn rfc3339(t: std::time::SystemTime) -> String {
    let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    k8s_openapi::jiff::Timestamp::from_second(d.as_secs() as i64)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

/// Runs `fut`; a panic becomes `Err` with its message, so the task that
/// ran it can still report an outcome.
pub(crate) async fn unwound<F: std::future::Future>(fut: F) -> Result<F::Output, String> {
    use futures_util::FutureExt;
    std::panic::AssertUnwindSafe(fut)
        .catch_unwind()
        .await
        .map_err(|p| wasmsched_core::scheduler::panic_message(&*p))
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
            leadership.abdicate();
            status.alive.store(false, Ordering::Relaxed);
            let msg = wasmsched_core::scheduler::panic_message(&*panic);
            tracing::error!(error = %msg, "the scheduling thread died");
            let _ = died_tx.send(msg);
        }
    })?;
    Ok((handle, died_rx))
}

/// Spawns a task the daemon depends on (a watcher, the binder, the
/// reporter, ...). If it ends or panics before the daemon stops, `/healthz`
/// fails naming it and the daemon stops as when the scheduling thread dies:
/// a watcher that is gone would leave its cache frozen, a binder that is
/// gone would leave pods assumed forever.
pub(crate) fn supervise<F>(status: &Arc<Status>, task: &'static str, fut: F) -> tokio::task::JoinHandle<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    struct Guard {
        status: Arc<Status>,
        task: &'static str,
        ended: bool,
    }
    impl Drop for Guard {
        fn drop(&mut self) {
            if !self.status.stopping.load(Ordering::SeqCst) {
                self.status
                    .task_died(self.task, if self.ended { "ended" } else { "panicked" });
            }
        }
    }
    let status = status.clone();
    tokio::spawn(async move {
        let mut guard = Guard {
            status,
            task,
            ended: false,
        };
        let out = fut.await;
        guard.ended = true;
        out
    })
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
    let mut sched = Scheduler::new(&opts.config, &opts.registry, opts.seed, Responsibility::OwnProfiles)?;
    sched.set_null_placement(opts.null_placement);
    // The web view's decisions, while the page is open.
    status.web.set_frameworks(sched.frameworks().to_vec());
    sched.set_shadow(Box::new(crate::web::DecisionTap::new(status.clone())), 100);
    if let Some(sh) = opts.shadow {
        let shadow = crate::shadow::Shadow::start(sh, opts.registry.clone(), opts.config.clone(), &mut sched)?;
        let _ = status.shadow.set(shadow);
    }
    let leadership = Arc::new(Leadership::default());
    let (tx, msgs) = mpsc::channel::<Msg>(MSG_CAPACITY);
    let (outcome_tx, outcomes) = mpsc::unbounded_channel();
    let (evicted_tx, evictions) = mpsc::unbounded_channel();
    let concurrency = opts.bind_concurrency.max(1);
    let (jobs_tx, jobs) = mpsc::channel(concurrency * 4);
    let (reports_tx, reports) = mpsc::channel(REPORT_CAPACITY);
    let (preempt_tx, preempt_jobs) = mpsc::channel(crate::preempt::QUEUE);
    let (stop_tx, stop_rx) = watch::channel(false);
    // Stops the scheduling thread (a flag, not a message: a full message
    // channel cannot lose it).
    let (halt_tx, halt_rx) = watch::channel(false);
    let (drain_tx, drain_rx) = watch::channel(None);
    let (leader_tx, mut leader_rx) = watch::channel(false);

    if let Some(admin) = &opts.admin {
        let reviews = opts.review_client.clone().unwrap_or_else(|| client.clone());
        crate::admin::serve(admin, status.clone(), Some(reviews)).await?;
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
    let election = supervise(
        &status,
        "leader election",
        leader::run(
            opts.lease_client.clone().unwrap_or_else(|| client.clone()),
            opts.leader_election.clone(),
            opts.identity.clone(),
            leadership.clone(),
            leader_tx,
            stop_rx.clone(),
        ),
    );
    {
        // Wakes the thread and updates the gauge when leadership changes.
        let tx = tx.clone();
        let st = status.clone();
        tasks.push(supervise(&status, "leadership notifier", async move {
            loop {
                let leading = *leader_rx.borrow_and_update();
                st.metrics.leader.set(i64::from(leading));
                if tx.send(Msg::Leader).await.is_err() || leader_rx.changed().await.is_err() {
                    // The thread or the election ended: only at a stop.
                    return std::future::pending().await;
                }
            }
        }));
    }
    let reporter = supervise(
        &status,
        "reporter",
        crate::reporter::run(
            opts.events_client.clone().unwrap_or_else(|| client.clone()),
            opts.identity.clone(),
            reports,
            status.clone(),
            opts.api_timeout,
            drain_rx,
        ),
    );
    // A binding may not outlive the lease it was sent under: once the renew
    // deadline passes, another replica may take over after the rest of the
    // lease duration.
    let request_timeout = if opts.leader_election.enabled {
        opts.api_timeout
            .min(opts.leader_election.lease_duration - opts.leader_election.renew_deadline)
    } else {
        opts.api_timeout
    };
    status.set_binder_step(request_timeout.max(binder::MAX_RETRY_PAUSE) + Duration::from_secs(1));
    let binder = supervise(
        &status,
        "binder",
        binder::run(
            client.clone(),
            jobs,
            outcome_tx,
            leadership.clone(),
            status.clone(),
            BinderSettings {
                concurrency,
                request_timeout,
                grace: BIND_GRACE.max(request_timeout),
            },
        ),
    );

    let executor = supervise(
        &status,
        "preemption executor",
        crate::preempt::run(
            client.clone(),
            opts.identity.clone(),
            preempt_jobs,
            evicted_tx,
            leadership.clone(),
            status.clone(),
            request_timeout,
        ),
    );

    status.watch_loop(opts.stall_timeout);
    let (thread, mut died) = {
        let ch = Channels {
            msgs,
            outcomes,
            evictions,
            jobs: Some(jobs_tx),
            reports: reports_tx,
            preemptions: preempt_tx,
            stop: halt_rx,
        };
        let (status, leadership) = (status.clone(), leadership.clone());
        let rt = tokio::runtime::Handle::current();
        spawn_supervised(status.clone(), leadership.clone(), move || {
            schedule::run(sched, ch, status, leadership, rt)
        })?
    };

    let death = tokio::select! {
        _ = shutdown => None,
        msg = &mut died => Some(match msg {
            Ok(panic) => format!("the scheduling thread panicked: {panic}"),
            Err(_) => "the scheduling thread ended".into(),
        }),
        _ = status.death.notified() => Some(status.health().err().unwrap_or_default()),
    };
    status.stopping.store(true, Ordering::SeqCst);
    match &death {
        None => tracing::info!("shutting down: no new scheduling cycles, finishing bindings in flight"),
        Some(why) => {
            // Nothing may be bound from now on, and no renewal may make
            // this replica lead again.
            leadership.abdicate();
            tracing::error!(reason = %why, "stopping: no binding from now on");
        }
    }
    let _ = halt_tx.send(true);
    drop(tx);
    // The thread ends within a cycle and drops its job sender, which lets
    // the binder drain, then cancel, what is in flight; the thread reports
    // each outcome until the binder is done.
    let joined = tokio::task::spawn_blocking(move || thread.join());
    if tokio::time::timeout(BIND_GRACE + Duration::from_secs(5), joined)
        .await
        .is_err()
    {
        tracing::error!("the scheduling thread did not stop in time; stopping without it");
    }
    // The binder ends within its grace period (cancelling what is left),
    // whether the thread stopped or died.
    let cancelled = match tokio::time::timeout(BIND_GRACE.max(request_timeout) + Duration::from_secs(5), binder).await {
        Ok(Ok(cancelled)) => cancelled,
        _ => usize::MAX,
    };
    let _ = tokio::time::timeout(Duration::from_secs(5), executor).await;
    // Only now may another replica take over: release the lease, unless a
    // binding sent under it may still land (cancelled, or the binder did
    // not end): then it expires, after which none can.
    if cancelled > 0 {
        leadership.keep_lease_until_expiry();
    }
    leadership.abdicate();
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(5), election).await;
    // Then the events and conditions still queued, within the drain period.
    let _ = drain_tx.send(Some(tokio::time::Instant::now() + opts.drain_timeout));
    let _ = tokio::time::timeout(opts.drain_timeout + Duration::from_secs(5), reporter).await;
    for t in tasks {
        t.abort();
    }
    match death {
        None => Ok(status),
        Some(msg) => Err(anyhow::anyhow!("{msg}")),
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
        leadership.renewed(std::time::Instant::now(), Duration::from_secs(10));
        assert!(!leadership.is_leading(), "and no renewal makes it lead again");
    }

    #[tokio::test]
    async fn a_task_that_dies_fails_health_and_wakes_the_daemon() {
        let status = Arc::new(Status::new(None));
        let woken = status.death.notified();
        let t = supervise(&status, "pods", async {
            let v: Vec<u64> = Vec::new();
            let _ = v[3];
        });
        assert!(t.await.is_err(), "it panicked");
        woken.await;
        assert_eq!(status.health(), Err("the pods task panicked".into()));
        // Ending is a death too; not once the daemon is stopping.
        let status = Arc::new(Status::new(None));
        supervise(&status, "binder", async {}).await.unwrap();
        assert_eq!(status.health(), Err("the binder task ended".into()));
        let status = Arc::new(Status::new(None));
        status.stopping.store(true, Ordering::SeqCst);
        supervise(&status, "binder", async {}).await.unwrap();
        assert!(status.healthy());
    }

    #[test]
    fn a_loop_that_does_not_turn_fails_health() {
        let status = Status::new(None);
        status.watch_loop(Duration::from_millis(100));
        assert!(status.healthy());
        std::thread::sleep(Duration::from_millis(250));
        let why = status.health().unwrap_err();
        assert!(why.starts_with("the scheduling loop has not turned for"), "{why}");
        status.turned();
        assert!(status.healthy());
    }
}
