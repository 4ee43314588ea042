//! The preemption executor: carries out what a preemption decided, off the
//! scheduling thread, as kube-scheduler's asynchronous preemption does.
//!
//! For each victim: the `DisruptionTarget` condition (reason
//! `PreemptionByScheduler`), a graceful delete conditioned on its UID, and
//! a `Preempted` event naming the preemptor. The preemptor's
//! `status.nominatedNodeName` is set (or cleared when preemption cannot
//! help), and lower-priority pods nominated to that node lose theirs. When
//! the victims' calls are done the scheduling thread is told, so a
//! preemptor whose eviction failed may preempt again; the victims' deletion
//! itself reaches it through the watch, which retries the preemptor.
//!
//! It also writes what DynamicResources' PostFilter decided for the same
//! pod: the deallocation of a claim allocated where the pod no longer fits
//! (kube-scheduler's PostFilter writes it before DefaultPreemption runs).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use serde_json::json;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::leader::Leadership;
use crate::reporter::PodRef;
use crate::status::Status;

/// What one preemption decided.
#[derive(Debug)]
pub(crate) struct PreemptJob {
    pub preemptor: PodRef,
    /// The preemptor's profile (`spec.schedulerName`), for the condition's
    /// message and the events' reporter.
    pub profile: String,
    /// Its nomination is written: to `node`, or cleared when `None`.
    pub nominate: bool,
    /// The node it is nominated to.
    pub node: Option<String>,
    pub victims: Vec<PodRef>,
    /// Pods whose nomination to that node is cleared.
    pub cleared: Vec<PodRef>,
    /// A claim of the preemptor's to deallocate first.
    pub deallocate: Option<Arc<k8s_openapi::api::resource::v1::ResourceClaim>>,
}

/// The end of one preemption's evictions, for the scheduling thread.
#[derive(Debug)]
pub(crate) struct EvictionsDone {
    /// The preemptor (`namespace/name`).
    pub preemptor: String,
    /// The victims' UIDs.
    pub victims: Vec<String>,
    /// Some eviction failed: the preemptor is retried at once (it may
    /// preempt again), as kube-scheduler reactivates it.
    pub failed: bool,
}

/// Preemption decisions waiting for the executor at most.
pub(crate) const QUEUE: usize = 1024;

/// Runs jobs until the channel closes, a few at a time.
pub(crate) async fn run(
    client: kube::Client,
    identity: String,
    mut jobs: mpsc::Receiver<PreemptJob>,
    done: mpsc::UnboundedSender<EvictionsDone>,
    leadership: Arc<Leadership>,
    status: Arc<Status>,
    timeout: Duration,
) {
    let mut set = JoinSet::new();
    loop {
        tokio::select! {
            Some(_) = set.join_next(), if !set.is_empty() => {}
            job = jobs.recv(), if set.len() < 8 => {
                let Some(job) = job else { break };
                let (client, identity, done, leadership, status) =
                    (client.clone(), identity.clone(), done.clone(), leadership.clone(), status.clone());
                set.spawn(async move {
                    let victims: Vec<String> = job.victims.iter().map(|v| v.uid.clone()).collect();
                    // A panic is a failed eviction: the preemptor is retried.
                    let failed = match crate::daemon::unwound(execute(&client, &identity, &job, &leadership, &status, timeout)).await {
                        Ok(done) => !done,
                        Err(panic) => {
                            tracing::error!(preemptor = %job.preemptor.key(), error = %panic, "the eviction task panicked");
                            true
                        }
                    };
                    let _ = done.send(EvictionsDone { preemptor: job.preemptor.key(), victims, failed });
                });
            }
        }
    }
    while set.join_next().await.is_some() {}
}

/// Carries out one preemption; false when an eviction failed.
async fn execute(
    client: &kube::Client,
    identity: &str,
    job: &PreemptJob,
    leadership: &Leadership,
    status: &Status,
    timeout: Duration,
) -> bool {
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: job.profile.clone(),
            instance: Some(identity.to_owned()),
        },
    );
    let evictions = job.victims.iter().map(|v| async {
        if !leadership.is_leading() {
            return true;
        }
        let result = tokio::time::timeout(timeout, evict(client, v, job)).await;
        let outcome = match result {
            Ok(Ok(())) => "ok",
            Ok(Err(e)) => {
                tracing::warn!(victim = %v.key(), preemptor = %job.preemptor.key(), error = %e, "cannot evict a preemption victim");
                "error"
            }
            Err(_) => {
                tracing::warn!(victim = %v.key(), "evicting a preemption victim did not answer in time");
                "timeout"
            }
        };
        status.metrics.eviction(outcome);
        if outcome == "ok" {
            let ev = Event {
                type_: EventType::Normal,
                reason: "Preempted".into(),
                note: Some(format!(
                    "Preempted by pod {} on node {}",
                    job.preemptor.uid,
                    job.node.as_deref().unwrap_or_default()
                )),
                action: "Preempting".into(),
                secondary: Some(job.preemptor.object_ref()),
            };
            crate::reporter::publish(&recorder, &ev, v, status, timeout).await;
        }
        outcome == "ok"
    });
    if let Some(claim) = &job.deallocate {
        crate::claims::deallocate(client, claim, leadership, timeout).await;
    }
    // The nomination first: the victims' deletion retries the preemptor.
    if !leadership.is_leading() || !job.nominate {
        return true;
    }
    // The decision may be late (jobs queue behind slow evictions): no pod
    // is evicted for a preemptor that was bound or deleted since.
    // The same for a nomination alone: a pod bound since needs none.
    if (job.node.is_some() || !job.victims.is_empty()) && !still_pending(client, &job.preemptor, timeout).await {
        tracing::info!(pod = %job.preemptor.key(), "not preempting: the pod was bound or deleted since");
        return true;
    }
    set_nominated(client, &job.preemptor, job.node.as_deref(), timeout).await;
    for p in &job.cleared {
        set_nominated(client, p, None, timeout).await;
    }
    futures_util::future::join_all(evictions).await.into_iter().all(|ok| ok)
}

/// Whether the preemptor is still the pending pod of that UID (a read that
/// fails counts as pending: the eviction is what the cycle decided).
async fn still_pending(client: &kube::Client, pod: &PodRef, timeout: Duration) -> bool {
    let pods: Api<Pod> = Api::namespaced(client.clone(), &pod.namespace);
    match tokio::time::timeout(timeout, pods.get_opt(&pod.name)).await {
        Ok(Ok(None)) => false,
        Ok(Ok(Some(p))) => {
            p.metadata.uid.as_deref() == Some(pod.uid.as_str())
                && p.spec
                    .as_ref()
                    .and_then(|s| s.node_name.as_deref())
                    .is_none_or(str::is_empty)
        }
        _ => true,
    }
}

/// Marks the victim and deletes it, gracefully, only if it is still the
/// pod of that UID. A victim already gone is fine.
async fn evict(client: &kube::Client, v: &PodRef, job: &PreemptJob) -> Result<(), kube::Error> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), &v.namespace);
    let condition = json!({"status": {"conditions": [{
        "type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
        "message": format!("{}: preempting to accommodate a higher priority pod", job.profile),
        "lastTransitionTime": crate::daemon::time_now(),
    }]}});
    match pods
        .patch_status(&v.name, &PatchParams::default(), &Patch::Strategic(&condition))
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
        Err(e) => return Err(e),
    }
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(v.uid.clone()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match pods.delete(&v.name, &dp).await {
        Ok(_) => Ok(()),
        // Gone, or another pod of that name now.
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Sets (or clears) a pending pod's `status.nominatedNodeName`, only on
/// the pod of that UID: the UID in the patch is checked by the API server
/// (an object's UID is immutable), so a pod re-created under the same name
/// (a StatefulSet's) does not inherit another's nomination.
async fn set_nominated(client: &kube::Client, pod: &PodRef, node: Option<&str>, timeout: Duration) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), &pod.namespace);
    let patch = json!({"metadata": {"uid": pod.uid}, "status": {"nominatedNodeName": node}});
    let r = tokio::time::timeout(
        timeout,
        pods.patch_status(&pod.name, &PatchParams::default(), &Patch::Merge(&patch)),
    )
    .await;
    match r {
        Ok(Ok(_)) | Ok(Err(kube::Error::Api(_))) => {}
        Ok(Err(e)) => tracing::debug!(pod = %pod.key(), error = %e, "cannot set nominatedNodeName"),
        Err(_) => tracing::debug!(pod = %pod.key(), "setting nominatedNodeName did not answer in time"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmsched_apiserver_sim::{ApiServer, Config};

    /// A late preemption evicts nothing for a preemptor bound, deleted or
    /// replaced since the cycle that chose its victims.
    #[tokio::test]
    async fn no_victim_is_evicted_for_a_preemptor_bound_or_gone_since() {
        let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), Config::default())
            .await
            .unwrap();
        let pod = |name: &str| {
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": "x"}]}})
        };
        let uid = |v: serde_json::Value| v["metadata"]["uid"].as_str().unwrap().to_owned();
        let pending = uid(s.create(pod("pending")).unwrap());
        let bound = uid(s.create(pod("bound")).unwrap());
        s.store()
            .bind("default", "bound", &json!({"target": {"name": "n1"}}))
            .unwrap();
        let client = kube::Client::try_from(kube::Config::new(s.url().parse().unwrap())).unwrap();
        let r = |name: &str, uid: &str| PodRef {
            namespace: "default".into(),
            name: name.into(),
            uid: uid.into(),
        };
        let t = Duration::from_secs(5);
        assert!(still_pending(&client, &r("pending", &pending), t).await);
        assert!(!still_pending(&client, &r("bound", &bound), t).await, "bound since");
        assert!(
            !still_pending(&client, &r("pending", "an-older-uid"), t).await,
            "replaced"
        );
        assert!(!still_pending(&client, &r("gone", "u"), t).await, "deleted");
    }

    /// A nomination reaches only the pod it was decided for: a pod
    /// re-created under the same name (a StatefulSet's) is left alone.
    #[tokio::test]
    async fn a_nomination_does_not_reach_a_pod_recreated_under_the_name() {
        let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), Config::default())
            .await
            .unwrap();
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db-0", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "x"}]}});
        let old_uid = s.create(pod.clone()).unwrap()["metadata"]["uid"]
            .as_str()
            .unwrap()
            .to_owned();
        let client = kube::Client::try_from(kube::Config::new(s.url().parse().unwrap())).unwrap();
        let r = |uid: &str| PodRef {
            namespace: "default".into(),
            name: "db-0".into(),
            uid: uid.into(),
        };
        let t = Duration::from_secs(5);
        let nominated = || {
            s.get::<Pod>("default", "db-0")
                .and_then(|p| p.status?.nominated_node_name)
        };
        set_nominated(&client, &r(&old_uid), Some("n1"), t).await;
        assert_eq!(nominated().as_deref(), Some("n1"));
        // Deleted and re-created: a late nomination of the old pod.
        s.store()
            .delete(wasmsched_apiserver_sim::resources::PODS, "default", "db-0", None)
            .unwrap();
        s.create(pod).unwrap();
        set_nominated(&client, &r(&old_uid), Some("n2"), t).await;
        assert_eq!(nominated(), None, "the new pod inherits nothing");
    }
}
