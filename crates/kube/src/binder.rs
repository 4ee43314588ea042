//! The binder: `POST pods/NAME/binding` for each placed pod (its volumes
//! bound first, [`crate::volumes`]), off the
//! scheduling thread, with bounded concurrency. Every request is bounded in
//! time, and made only while this replica's lease holds; when the daemon
//! stops, what is still in flight after a grace period is cancelled before
//! the lease is released.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::leader::Leadership;
use crate::status::Status;

/// The longest pause between two attempts of one binding.
pub(crate) const MAX_RETRY_PAUSE: Duration = Duration::from_secs(2);

/// A placed pod to bind.
#[derive(Debug)]
pub(crate) struct BindJob {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub node: String,
    pub profile: String,
    pub queued_at: Instant,
    /// Volume bindings to make first (VolumeBinding's PreBind).
    pub volumes: Option<wasmsched_core::storage::VolumePlan>,
    /// Claim allocations and reservations to write next
    /// (DynamicResources' PreBind).
    pub devices: Option<wasmsched_core::dra::DraPlan>,
    /// The profile's plugins of the binding cycle, when it has any, or
    /// when a Permit plugin holds the pod.
    pub plugins: Option<Box<BindPlugins>>,
}

/// What the binding cycle runs besides the built-in writes: the wait for
/// Permit, then the PreBind plugins, and after the binding the PostBind
/// ones (WebAssembly plugins, called off the async threads).
pub(crate) struct BindPlugins {
    pub pod: Arc<wasmsched_core::PodInfo>,
    /// A Permit plugin holds the pod: wait for its outcome first.
    pub wait: bool,
    pub waiting: Arc<wasmsched_core::framework::WaitingPods>,
    pub data: Option<Arc<wasmsched_core::framework::PluginData>>,
    pub pre_bind: Vec<Arc<dyn wasmsched_core::Plugin>>,
    pub post_bind: Vec<Arc<dyn wasmsched_core::Plugin>>,
}

impl std::fmt::Debug for BindPlugins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BindPlugins").field("wait", &self.wait).finish()
    }
}

impl BindPlugins {
    fn state(&self) -> wasmsched_core::CycleState {
        let mut state = wasmsched_core::CycleState::with_plugin_data(self.data.clone());
        state.set_waiting(self.waiting.clone());
        state
    }

    /// Waits until the pod is allowed or rejected (at its deadline at the
    /// latest): kube-scheduler's `WaitOnPermit`.
    async fn wait_on_permit(&self) -> Result<(), wasmsched_core::framework::Status> {
        let uid = self.pod.uid.clone();
        loop {
            let notify = Arc::new(tokio::sync::Notify::new());
            let woken = notify.clone();
            if let Some(outcome) = self.waiting.outcome(&uid, move || woken.notify_one()) {
                return outcome;
            }
            let deadline = self.waiting.deadline(&uid);
            match deadline {
                Some(d) => {
                    let at = tokio::time::Instant::from_std(d);
                    tokio::select! {
                        _ = notify.notified() => {}
                        _ = tokio::time::sleep_until(at) => {
                            self.waiting.expire(std::time::Instant::now());
                        }
                    }
                }
                None => notify.notified().await,
            }
        }
    }

    /// Runs the PreBind plugins in order; the first failure's message.
    async fn pre_bind(&self, node: &str) -> Result<(), String> {
        for p in &self.pre_bind {
            let (p, pod, node, state) = (p.clone(), self.pod.clone(), node.to_owned(), self.state());
            let name = p.name().to_owned();
            let st = tokio::task::spawn_blocking(move || p.pre_bind(&state, &pod, &node))
                .await
                .map_err(|e| format!("running PreBind plugin {name:?}: {e}"))?;
            if !st.is_success() {
                return Err(format!("running PreBind plugin {name:?}: {}", st.message()));
            }
        }
        Ok(())
    }

    /// Runs the PostBind plugins (informational; nobody waits for them).
    fn post_bind(&self, node: &str) {
        if self.post_bind.is_empty() {
            return;
        }
        let (plugins, pod, node, state) = (self.post_bind.clone(), self.pod.clone(), node.to_owned(), self.state());
        tokio::task::spawn_blocking(move || {
            for p in plugins {
                p.post_bind(&state, &pod, &node);
            }
        });
    }
}

impl BindJob {
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// What came of a binding.
#[derive(Debug)]
pub(crate) enum BindResult {
    Ok,
    /// 409 (bound by someone else, or another pod of that name) or 404
    /// (gone): drop the pod.
    Drop(String),
    /// Not bound (lost leadership, retries exhausted, refused): forget the
    /// assumption and retry the pod after backoff.
    Failed(String),
    /// A Permit plugin rejected it (or its wait timed out): unschedulable,
    /// with kube-scheduler's one-node message.
    Rejected(String),
}

#[derive(Debug)]
pub(crate) struct BindOutcome {
    pub job: BindJob,
    pub result: BindResult,
    /// The resource claims written for the pod, as the API answered them
    /// (last answer per claim last): the scheduler applies them before it
    /// drops the pod's assumption.
    pub claims: Vec<Value>,
}

/// How the binder works.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BinderSettings {
    /// Requests in flight at most.
    pub concurrency: usize,
    /// Longest one request may take.
    pub request_timeout: Duration,
    /// How long bindings in flight may finish once the daemon stops.
    pub grace: Duration,
}

/// Binds jobs until the job channel closes (the scheduling thread ended),
/// lets those in flight finish within the grace period, then cancels the
/// rest; returns how many it cancelled (a cancelled request may still land).
pub(crate) async fn run(
    client: kube::Client,
    mut jobs: mpsc::Receiver<BindJob>,
    outcomes: mpsc::UnboundedSender<BindOutcome>,
    leadership: Arc<Leadership>,
    status: Arc<Status>,
    settings: BinderSettings,
) -> usize {
    // Bindings that first wait for their volumes run beside the others,
    // not in their slots: a provisioner may take minutes, and sixteen such
    // pods would otherwise stop every binding (kube-scheduler runs each
    // binding cycle on its own). Their requests still wait for the
    // client's token bucket.
    let mut set = JoinSet::new();
    let mut waiting = JoinSet::new();
    loop {
        tokio::select! {
            Some(_) = set.join_next(), if !set.is_empty() => {}
            Some(_) = waiting.join_next(), if !waiting.is_empty() => {}
            job = jobs.recv(), if set.len() < settings.concurrency.max(1) => {
                let Some(job) = job else { break };
                let (client, outcomes, leadership, status) =
                    (client.clone(), outcomes.clone(), leadership.clone(), status.clone());
                let waits = job.volumes.as_ref().is_some_and(|p| !p.is_empty())
                    || job.plugins.as_ref().is_some_and(|p| p.wait);
                let to = if waits { &mut waiting } else { &mut set };
                to.spawn(async move {
                    let mut claims = Vec::new();
                    let result = settle(&status, &job, bind(&client, &job, &leadership, &status, settings.request_timeout, &mut claims)).await;
                    let _ = outcomes.send(BindOutcome { job, result, claims });
                });
            }
        }
    }
    let drained = tokio::time::timeout(settings.grace, async {
        while set.join_next().await.is_some() {}
        while waiting.join_next().await.is_some() {}
    })
    .await;
    let cancelled = set.len() + waiting.len();
    if drained.is_err() {
        tracing::warn!(
            cancelled,
            "bindings still in flight after the grace period are cancelled"
        );
    }
    set.shutdown().await;
    waiting.shutdown().await;
    cancelled
}

/// The result of `binding`, or, when it panics, a failure naming the
/// panic: the outcome reaches the scheduling thread either way, so the pod
/// never stays in flight with its resources reserved.
async fn settle(status: &Status, job: &BindJob, binding: impl Future<Output = BindResult>) -> BindResult {
    match crate::daemon::unwound(binding).await {
        Ok(r) => r,
        Err(panic) => {
            tracing::error!(pod = %job.key(), error = %panic, "the binding task panicked");
            status.metrics.binding("error");
            BindResult::Failed(format!("the binding task panicked: {panic}"))
        }
    }
}

/// PreBind (volumes, then claims) and the binding; the claims written go
/// to `claims`, and when the pod is not bound after all, so do the
/// answers of taking it out of their `reservedFor` again.
pub(crate) async fn bind(
    client: &kube::Client,
    job: &BindJob,
    leadership: &Leadership,
    status: &Status,
    timeout: Duration,
    claims: &mut Vec<Value>,
) -> BindResult {
    if let Some(p) = job.plugins.as_ref().filter(|p| p.wait)
        && let Err(st) = p.wait_on_permit().await
    {
        status.metrics.binding("rejected");
        return BindResult::Rejected(wasmsched_core::framework::FitError::on_node(&job.node, st).to_string());
    }
    let result = bind_pod(client, job, leadership, status, timeout, claims).await;
    if let (BindResult::Ok, Some(p)) = (&result, &job.plugins) {
        p.post_bind(&job.node);
    }
    if !matches!(result, BindResult::Ok)
        && let Some(plan) = job.devices.as_ref().filter(|_| !claims.is_empty())
    {
        let answers = crate::claims::unreserve(client, plan, claims, leadership, timeout).await;
        claims.extend(answers);
    }
    result
}

async fn bind_pod(
    client: &kube::Client,
    job: &BindJob,
    leadership: &Leadership,
    status: &Status,
    timeout: Duration,
    claims: &mut Vec<Value>,
) -> BindResult {
    if let Some(plan) = &job.volumes {
        match crate::volumes::bind(client, plan, job, leadership, status, timeout).await {
            Ok(()) => {}
            Err(crate::volumes::VolumeError::PodGone) => {
                status.metrics.binding("gone");
                return BindResult::Drop("the pod was deleted while its volumes were being bound".into());
            }
            Err(crate::volumes::VolumeError::Failed(e)) => {
                status.metrics.binding("error");
                return BindResult::Failed(format!("running PreBind plugin \"VolumeBinding\": {e}"));
            }
        }
    }
    if let Some(plan) = &job.devices {
        let written = crate::claims::reserve(client, plan, leadership, timeout).await;
        claims.extend(written.claims);
        if let Some(e) = written.error {
            status.metrics.binding("error");
            return BindResult::Failed(format!("running PreBind plugin \"DynamicResources\": {e}"));
        }
    }
    if let Some(p) = &job.plugins
        && let Err(e) = p.pre_bind(&job.node).await
    {
        status.metrics.binding("error");
        return BindResult::Failed(e);
    }
    let api: Api<Pod> = Api::namespaced(client.clone(), &job.namespace);
    let body = json!({
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": job.name, "uid": job.uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": job.node},
    });
    let pp = PostParams::default();
    let mut delay = Duration::from_millis(100);
    // Whether an attempt may have landed with its answer lost (no answer,
    // a broken connection, a 5xx): then a failure is checked against the
    // pod before it is reported.
    let mut maybe_landed = false;
    for _ in 0..6 {
        if !leadership.is_leading() {
            return failed(
                &api,
                job,
                status,
                timeout,
                maybe_landed,
                "lost leadership before binding",
            )
            .await;
        }
        // A request may not outlive the lease it was sent under.
        let limit = timeout.min(leadership.remaining());
        let request = api.create_subresource::<_, Value>("binding", &job.name, &pp, &body);
        // Each request and each pause is bounded: marking both, a binder
        // that moves is told from one that is stuck.
        status.binder_moved();
        let answered = tokio::time::timeout(limit, request).await;
        status.binder_moved();
        match answered {
            Ok(Ok(_)) => {
                status.metrics.binding("ok");
                return BindResult::Ok;
            }
            Ok(Err(kube::Error::Api(s))) if s.code == 409 => {
                // Our own earlier attempt may have landed (its answer lost).
                if maybe_landed
                    && s.message
                        .ends_with(&format!("is already assigned to node \"{}\"", job.node))
                {
                    status.metrics.binding("ok");
                    return BindResult::Ok;
                }
                status.metrics.binding("conflict");
                return BindResult::Drop(s.message.clone());
            }
            Ok(Err(kube::Error::Api(s))) if s.code == 404 => {
                status.metrics.binding("gone");
                return BindResult::Drop(s.message.clone());
            }
            Ok(Err(kube::Error::Api(s))) if s.code == 429 || s.code >= 500 => {
                // 429 is a refusal before any work; a 5xx may come after the write.
                maybe_landed |= s.code != 429;
                status.metrics.binding("retry");
                tracing::debug!(pod = %job.key(), code = s.code, "binding refused; retrying");
            }
            Ok(Err(kube::Error::Api(s))) => {
                status.metrics.binding("error");
                return BindResult::Failed(s.message.clone());
            }
            Ok(Err(e)) => {
                maybe_landed = true;
                status.metrics.binding("retry");
                tracing::debug!(pod = %job.key(), error = %e, "binding request failed; retrying");
            }
            Err(_) => {
                maybe_landed = true;
                status.metrics.binding("timeout");
                tracing::warn!(pod = %job.key(), after = ?limit, "binding request did not answer in time; retrying");
            }
        }
        tokio::time::sleep(delay).await;
        status.binder_moved();
        delay = (delay * 2).min(MAX_RETRY_PAUSE);
    }
    failed(
        &api,
        job,
        status,
        timeout,
        maybe_landed,
        "the API server kept refusing the binding",
    )
    .await
}

/// The binding failed with `why`; but when an attempt may have landed with
/// its answer lost, the pod as it is now decides: bound to this node by
/// that attempt is a success (reported as such, with its Scheduled event),
/// bound elsewhere or gone is dropped. Reading needs no lease.
async fn failed(
    api: &Api<Pod>,
    job: &BindJob,
    status: &Status,
    timeout: Duration,
    maybe_landed: bool,
    why: &str,
) -> BindResult {
    if maybe_landed {
        for _ in 0..3 {
            status.binder_moved();
            let read = tokio::time::timeout(timeout, api.get(&job.name)).await;
            status.binder_moved();
            match read {
                Ok(Ok(pod)) if pod.metadata.uid.as_deref() == Some(job.uid.as_str()) => {
                    match pod.spec.and_then(|s| s.node_name).filter(|n| !n.is_empty()) {
                        Some(node) if node == job.node => {
                            status.metrics.binding("ok");
                            return BindResult::Ok;
                        }
                        Some(node) => {
                            status.metrics.binding("conflict");
                            return BindResult::Drop(format!("the pod was bound to node \"{node}\" meanwhile"));
                        }
                        None => break,
                    }
                }
                Ok(Ok(_)) => {
                    status.metrics.binding("gone");
                    return BindResult::Drop("the pod was replaced while it was being bound".into());
                }
                Ok(Err(kube::Error::Api(s))) if s.code == 404 => {
                    status.metrics.binding("gone");
                    return BindResult::Drop("the pod was deleted while it was being bound".into());
                }
                Ok(Err(_)) | Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }
    status.metrics.binding("error");
    BindResult::Failed(why.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The job of pod `ns/p` (`u`) on node `n`, with these plugins.
    fn job(plugins: Option<Box<BindPlugins>>) -> BindJob {
        BindJob {
            namespace: "ns".into(),
            name: "p".into(),
            uid: "u".into(),
            node: "n".into(),
            profile: "wasm-scheduler".into(),
            queued_at: Instant::now(),
            volumes: None,
            devices: None,
            plugins,
        }
    }

    /// A binding task that panics still reports: the pod fails its attempt
    /// (and is retried) instead of staying in flight.
    #[tokio::test]
    async fn a_panicking_binding_still_has_an_outcome() {
        let status = Status::new(None);
        let job = job(None);
        let r = settle(&status, &job, async {
            panic!("a bug");
        })
        .await;
        match r {
            BindResult::Failed(why) => assert_eq!(why, "the binding task panicked: a bug"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            settle(&status, &job, async { BindResult::Ok }).await,
            BindResult::Ok
        ));
    }

    /// A pod held at Permit whose wait ends is not bound: it is rejected
    /// with kube-scheduler's one-node message, before any request is made.
    #[tokio::test]
    async fn a_held_pod_whose_wait_ends_is_rejected_in_kube_schedulers_words() {
        let status = Status::new(None);
        let p: Pod = serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}))
        .unwrap();
        let pod = Arc::new(wasmsched_core::PodInfo::from_pod(&p).unwrap());
        let waiting = Arc::new(wasmsched_core::framework::WaitingPods::default());
        waiting.add(
            pod.clone(),
            "n",
            &[("gang".into(), Duration::from_millis(50))],
            Instant::now(),
        );
        let job = job(Some(Box::new(BindPlugins {
            pod,
            wait: true,
            waiting,
            data: None,
            pre_bind: Vec::new(),
            post_bind: Vec::new(),
        })));
        // No server: nothing may be asked of it.
        let client = kube::Client::try_from(kube::Config::new("http://127.0.0.1:1".parse().unwrap())).unwrap();
        let leadership = Leadership::default();
        match bind(
            &client,
            &job,
            &leadership,
            &status,
            Duration::from_secs(1),
            &mut Vec::new(),
        )
        .await
        {
            BindResult::Rejected(why) => assert_eq!(
                why,
                "0/1 nodes are available: 1 rejected due to timeout after waiting 50ms at plugin gang."
            ),
            other => panic!("{other:?}"),
        }
    }
}
