//! Leader election on a `coordination.k8s.io/v1` Lease, as client-go's
//! leaderelection does it: acquire when the holder's record has not changed
//! for a lease duration (judged by our own clock, so clock skew between
//! replicas does not matter), renew every retry period, give up when a renew
//! has not succeeded within the renew deadline.
//!
//! What the binder trusts is [`Leadership`], written by the election task
//! itself: leading, and until when the last successful renewal holds
//! (renewal start + renew deadline). A renewal that hangs therefore cannot
//! keep a replica binding: the validity runs out on its own, before
//! another replica can see the lease expire (lease duration after it last
//! saw the record change).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};
use tokio::sync::watch;

/// Lease settings (kube-scheduler's defaults: 15 s / 10 s / 2 s).
#[derive(Debug, Clone)]
pub struct LeaderElection {
    /// Whether to elect at all (false: always lead; one replica only).
    pub enabled: bool,
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// How long a lease is valid without renewal.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it steps down.
    pub renew_deadline: Duration,
    /// Time between attempts.
    pub retry_period: Duration,
}

impl Default for LeaderElection {
    fn default() -> Self {
        Self {
            enabled: true,
            namespace: "kube-system".into(),
            name: "wasm-scheduler".into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// Whether this replica may bind now. Cheap to read on every binding.
#[derive(Debug)]
pub struct Leadership {
    origin: Instant,
    leading: AtomicBool,
    /// Nanoseconds after `origin` until which the last renewal holds.
    valid_until: AtomicU64,
    /// Stepped down for good: a renewal still in flight cannot make this
    /// replica lead again.
    abdicated: AtomicBool,
    /// On stop, leave the lease to expire instead of releasing it: a
    /// binding request may still land (one was cancelled, or the binder
    /// did not end), and another replica must not bind meanwhile.
    keep_lease: AtomicBool,
}

impl Default for Leadership {
    fn default() -> Self {
        Self {
            origin: Instant::now(),
            leading: AtomicBool::new(false),
            keep_lease: AtomicBool::new(false),
            valid_until: AtomicU64::new(0),
            abdicated: AtomicBool::new(false),
        }
    }
}

impl Leadership {
    fn nanos(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.origin).as_nanos()).unwrap_or(u64::MAX)
    }

    /// Leading, and the last renewal still holds.
    pub fn is_leading(&self) -> bool {
        self.leading.load(Ordering::SeqCst) && self.nanos(Instant::now()) < self.valid_until.load(Ordering::SeqCst)
    }

    /// How long the last renewal still holds (zero when not leading).
    pub fn remaining(&self) -> Duration {
        if !self.leading.load(Ordering::SeqCst) {
            return Duration::ZERO;
        }
        let until = self.valid_until.load(Ordering::SeqCst);
        Duration::from_nanos(until.saturating_sub(self.nanos(Instant::now())))
    }

    /// A renewal that started at `started` succeeded: lead until
    /// `started + renew_deadline` unless renewed again.
    pub(crate) fn renewed(&self, started: Instant, renew_deadline: Duration) {
        if self.abdicated.load(Ordering::SeqCst) {
            return;
        }
        self.valid_until
            .store(self.nanos(started + renew_deadline), Ordering::SeqCst);
        self.leading.store(true, Ordering::SeqCst);
    }

    /// Leads for good (leader election disabled).
    pub(crate) fn lead_forever(&self) {
        if self.abdicated.load(Ordering::SeqCst) {
            return;
        }
        self.valid_until.store(u64::MAX, Ordering::SeqCst);
        self.leading.store(true, Ordering::SeqCst);
    }

    /// Stops binding at once and for good (the daemon is stopping, or the
    /// scheduling thread or a task it depends on died).
    pub fn abdicate(&self) {
        self.abdicated.store(true, Ordering::SeqCst);
        self.step_down();
    }

    /// On stop, the lease is left to expire rather than released (see
    /// [`run`]): bindings sent under it may still land.
    pub fn keep_lease_until_expiry(&self) {
        self.keep_lease.store(true, Ordering::SeqCst);
    }

    /// Whether [`Leadership::abdicate`] was called.
    pub fn abdicated(&self) -> bool {
        self.abdicated.load(Ordering::SeqCst)
    }

    /// Stops binding at once.
    pub fn step_down(&self) {
        self.leading.store(false, Ordering::SeqCst);
        self.valid_until.store(0, Ordering::SeqCst);
    }
}

pub use wasmsched_core::config::parse_duration;

/// Now, to the microsecond (what `metav1.MicroTime` carries).
pub(crate) fn now() -> k8s_openapi::jiff::Timestamp {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    k8s_openapi::jiff::Timestamp::new(d.as_secs() as i64, (d.subsec_micros() * 1000) as i32)
        .unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)
}

fn now_micro() -> MicroTime {
    MicroTime(now())
}

/// Runs the election until `stop` turns true, keeping `leadership` up to
/// date and publishing changes on `leader`. Every attempt is bounded: a
/// leader's by what is left of its renew deadline, a candidate's by the
/// retry period (at least a second). Once `leadership` abdicates, nothing
/// is renewed; the lease is released only when `stop` turns true, which
/// the caller signals once its bindings are done, so another replica takes
/// over at once, unless the caller asked to keep it until it expires
/// ([`Leadership::keep_lease_until_expiry`]).
pub async fn run(
    client: kube::Client,
    cfg: LeaderElection,
    identity: String,
    leadership: std::sync::Arc<Leadership>,
    leader: watch::Sender<bool>,
    mut stop: watch::Receiver<bool>,
) {
    if !cfg.enabled {
        leadership.lead_forever();
        leader.send_replace(true);
        let _ = stop.wait_for(|s| *s).await;
        leadership.step_down();
        leader.send_replace(false);
        return;
    }
    let api: Api<Lease> = Api::namespaced(client, &cfg.namespace);
    // The holder's record as we last saw it, and when we first saw it so.
    let mut observed: Option<(String, Instant)> = None;
    let mut held = false;
    loop {
        if leadership.abdicated() {
            // The daemon is stopping (or its scheduling thread died): no
            // more renewals; the lease is released below, once the caller
            // says its bindings are done.
            let _ = stop.wait_for(|s| *s).await;
            break;
        }
        let started = Instant::now();
        let limit = if held {
            leadership.remaining()
        } else {
            cfg.retry_period.max(Duration::from_secs(1))
        };
        let attempt = tokio::select! {
            r = tokio::time::timeout(limit, try_acquire_or_renew(&api, &cfg, &identity, &mut observed)) => r,
            _ = stop.wait_for(|s| *s) => break,
        };
        match attempt {
            Ok(Ok(true)) => {
                leadership.renewed(started, cfg.renew_deadline);
                if !held {
                    held = true;
                    tracing::info!(lease = %format!("{}/{}", cfg.namespace, cfg.name), identity = %identity, "became leader");
                    leader.send_replace(true);
                }
            }
            Ok(Ok(false)) => {
                if held {
                    held = false;
                    leadership.step_down();
                    tracing::warn!("another replica holds the lease; stepping down");
                    leader.send_replace(false);
                }
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "leader election: cannot reach the lease"),
            Err(_) => tracing::warn!(after = ?limit, "leader election: the lease request did not answer in time"),
        }
        if held && !leadership.is_leading() {
            held = false;
            leadership.step_down();
            tracing::error!("could not renew the lease within the renew deadline; stepping down");
            leader.send_replace(false);
        }
        // Sleep the retry period, but wake when the renew deadline passes,
        // so that stepping down is never late.
        let pause = if held {
            cfg.retry_period.min(leadership.remaining())
        } else {
            cfg.retry_period
        };
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = stop.wait_for(|s| *s) => break,
        }
    }
    leadership.step_down();
    if held {
        leader.send_replace(false);
    }
    if held && leadership.keep_lease.load(Ordering::SeqCst) {
        tracing::warn!("leaving the lease to expire: a binding sent under it may still land");
    } else if held {
        match tokio::time::timeout(
            cfg.retry_period.max(Duration::from_secs(1)),
            release(&api, &cfg, &identity),
        )
        .await
        {
            Ok(Ok(())) => tracing::info!("released the lease"),
            Ok(Err(e)) => tracing::warn!(error = %e, "could not release the lease"),
            Err(_) => tracing::warn!("could not release the lease: the request did not answer in time"),
        }
    }
}

async fn try_acquire_or_renew(
    api: &Api<Lease>,
    cfg: &LeaderElection,
    identity: &str,
    observed: &mut Option<(String, Instant)>,
) -> Result<bool, kube::Error> {
    let pp = PostParams::default();
    let now = now_micro();
    let Some(mut lease) = api.get_opt(&cfg.name).await? else {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(cfg.name.clone()),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(identity.to_owned()),
                lease_duration_seconds: Some(cfg.lease_duration.as_secs().max(1) as i32),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                lease_transitions: Some(0),
                ..Default::default()
            }),
        };
        return match api.create(&pp, &lease).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        };
    };
    let spec = lease.spec.get_or_insert_with(Default::default);
    let holder = spec.holder_identity.clone().unwrap_or_default();
    let record = format!(
        "{holder}|{:?}|{:?}",
        spec.renew_time.as_ref().map(|t| t.0),
        spec.lease_duration_seconds
    );
    let seen_since = match observed {
        Some((r, t)) if *r == record => *t,
        _ => {
            *observed = Some((record, Instant::now()));
            Instant::now()
        }
    };
    let duration = Duration::from_secs(spec.lease_duration_seconds.unwrap_or(15).max(1) as u64);
    let mine = holder == identity;
    let free = holder.is_empty() || seen_since.elapsed() > duration;
    if !mine && !free {
        return Ok(false);
    }
    if !mine {
        spec.acquire_time = Some(now.clone());
        spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        spec.holder_identity = Some(identity.to_owned());
    }
    spec.renew_time = Some(now);
    spec.lease_duration_seconds = Some(cfg.lease_duration.as_secs().max(1) as i32);
    // The lease's resourceVersion makes this a compare-and-swap: a replica
    // that raced us gets 409 and tries again next period. A holder's own
    // renewal can get 409 too (an earlier renewal that timed out for us
    // landed meanwhile): that is an error to retry until the renew
    // deadline, as client-go does, not a reason to step down.
    match api.replace(&cfg.name, &pp, &lease).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 409 && !mine => Ok(false),
        Err(e) => Err(e),
    }
}

async fn release(api: &Api<Lease>, cfg: &LeaderElection, identity: &str) -> Result<(), kube::Error> {
    let Some(mut lease) = api.get_opt(&cfg.name).await? else {
        return Ok(());
    };
    let spec = lease.spec.get_or_insert_with(Default::default);
    if spec.holder_identity.as_deref() != Some(identity) {
        return Ok(());
    }
    spec.holder_identity = None;
    spec.lease_duration_seconds = Some(1);
    spec.renew_time = Some(now_micro());
    api.replace(&cfg.name, &PostParams::default(), &lease).await.map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leadership_lapses_at_the_renew_deadline_without_the_election_task() {
        let l = Leadership::default();
        assert!(!l.is_leading());
        // a renewal that started 900 ms ago with a 1 s deadline
        l.renewed(Instant::now() - Duration::from_millis(900), Duration::from_secs(1));
        assert!(l.is_leading());
        assert!(l.remaining() <= Duration::from_millis(100));
        // nobody renews (the request hangs): the validity runs out on its own
        std::thread::sleep(Duration::from_millis(150));
        assert!(!l.is_leading());
        assert_eq!(l.remaining(), Duration::ZERO);
        l.lead_forever();
        assert!(l.is_leading());
        l.step_down();
        assert!(!l.is_leading());
    }

    /// The lease stays held from abdication until the caller's stop (its
    /// bindings done), and is then released, or left to expire when a
    /// binding may still land.
    #[tokio::test]
    async fn the_lease_is_released_only_once_the_bindings_are_done() {
        let s = wasmsched_apiserver_sim::ApiServer::start("127.0.0.1:0".parse().unwrap(), Default::default())
            .await
            .unwrap();
        let client = kube::Client::try_from(kube::Config::new(s.url().parse().unwrap())).unwrap();
        let cfg = LeaderElection {
            lease_duration: Duration::from_secs(2),
            renew_deadline: Duration::from_millis(1500),
            retry_period: Duration::from_millis(100),
            ..Default::default()
        };
        let holder = || {
            s.get::<Lease>(&cfg.namespace, &cfg.name)
                .and_then(|l| l.spec?.holder_identity)
        };
        for keep in [false, true] {
            let leadership = std::sync::Arc::new(Leadership::default());
            let (leader_tx, mut leader_rx) = watch::channel(false);
            let (stop_tx, stop_rx) = watch::channel(false);
            let election = tokio::spawn(run(
                client.clone(),
                cfg.clone(),
                "me".into(),
                leadership.clone(),
                leader_tx,
                stop_rx,
            ));
            leader_rx.wait_for(|l| *l).await.unwrap();
            // The scheduling thread died: no renewal, but the lease stays
            // while the bindings in flight finish.
            leadership.abdicate();
            tokio::time::sleep(Duration::from_millis(500)).await;
            assert_eq!(
                holder().as_deref(),
                Some("me"),
                "released before the bindings were done"
            );
            if keep {
                leadership.keep_lease_until_expiry();
            }
            stop_tx.send_replace(true);
            election.await.unwrap();
            let expected = if keep { Some("me") } else { None };
            assert_eq!(holder().as_deref(), expected, "keep: {keep}");
            if !keep {
                // Taken again for the next round.
                tokio::time::sleep(Duration::from_millis(50)).await;
            } else {
                break;
            }
        }
    }

    #[test]
    fn after_abdicating_no_renewal_makes_a_replica_lead_again() {
        let l = Leadership::default();
        l.renewed(Instant::now(), Duration::from_secs(10));
        assert!(l.is_leading());
        // The scheduling thread died: a renewal in flight lands after.
        l.abdicate();
        l.renewed(Instant::now(), Duration::from_secs(10));
        assert!(!l.is_leading());
        l.lead_forever();
        assert!(!l.is_leading());
    }
}
