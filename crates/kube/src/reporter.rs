//! The reporter: events (`events.k8s.io/v1`, through kube-rs' `Recorder`,
//! which names events uniquely and aggregates repeats into a series) and
//! the pod's `PodScheduled=False` condition after a failed attempt.
//!
//! The condition patch carries the resourceVersion the failed attempt saw,
//! so it can never land on a pod that was bound (or changed) since: the
//! server answers 409 and the report is checked against the pod as it is
//! now. A pod that is bound is never marked unschedulable.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use serde_json::json;
use tokio::sync::mpsc;

use crate::status::Status;
use wasmsched_core::framework::truncate_message;

/// kube-scheduler's condition reasons.
pub(crate) const REASON_UNSCHEDULABLE: &str = "Unschedulable";
pub(crate) const REASON_SCHEDULER_ERROR: &str = "SchedulerError";

/// The pod a report is about.
#[derive(Debug, Clone)]
pub(crate) struct PodRef {
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

impl PodRef {
    /// Of a parsed pod.
    pub fn of(p: &wasmsched_core::PodInfo) -> Self {
        PodRef {
            namespace: p.namespace.clone(),
            name: p.name.clone(),
            uid: p.uid.clone(),
        }
    }

    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    pub(crate) fn object_ref(&self) -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            namespace: Some(self.namespace.clone()),
            name: Some(self.name.clone()),
            uid: Some(self.uid.clone()),
            ..Default::default()
        }
    }
}

/// The pod's `PodScheduled` condition as the failed attempt saw it.
#[derive(Debug, Clone, Default)]
pub(crate) struct SeenCondition {
    pub status: Option<String>,
    pub reason: Option<String>,
    pub message: Option<String>,
    pub last_transition_time: Option<String>,
}

impl SeenCondition {
    pub fn of(pod: &Pod) -> Self {
        let c = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "PodScheduled"));
        match c {
            None => Self::default(),
            Some(c) => Self {
                status: Some(c.status.clone()),
                reason: c.reason.clone(),
                message: c.message.clone(),
                last_transition_time: c
                    .last_transition_time
                    .as_ref()
                    .map(|t| t.0.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()),
            },
        }
    }
}

/// A report for the reporter task.
#[derive(Debug)]
pub(crate) enum Report {
    Scheduled {
        pod: PodRef,
        node: String,
        profile: String,
    },
    Failed {
        pod: PodRef,
        profile: String,
        /// [`REASON_UNSCHEDULABLE`] or [`REASON_SCHEDULER_ERROR`].
        reason: &'static str,
        message: String,
        /// The pod's resourceVersion when the attempt started.
        resource_version: String,
        seen: SeenCondition,
    },
    /// A PodGroup's `PodGroupScheduled` condition after a cycle of its pods.
    PodGroup(std::sync::Arc<wasmsched_core::scheduler::GroupOutcome>),
}

impl Report {
    /// A failed attempt for `pod` as the attempt saw it: the condition
    /// patch is conditioned on that version of the pod.
    pub fn failed(pod: &Pod, profile: &str, reason: &'static str, message: String) -> Self {
        Report::Failed {
            pod: PodRef {
                namespace: pod.metadata.namespace.clone().unwrap_or_else(|| "default".into()),
                name: pod.metadata.name.clone().unwrap_or_default(),
                uid: pod.metadata.uid.clone().unwrap_or_default(),
            },
            profile: profile.to_owned(),
            reason,
            // The condition says what the event says, within the same bound.
            message: truncate_message(message, NOTE_LIMIT),
            resource_version: pod.metadata.resource_version.clone().unwrap_or_default(),
            seen: SeenCondition::of(pod),
        }
    }
}

/// Longest note an event may carry (the API server refuses more).
const NOTE_LIMIT: usize = wasmsched_core::framework::MAX_MESSAGE_BYTES;

/// Reports written at once. The client's token bucket (`clientConnection`)
/// sets the pace; this only keeps enough requests waiting for it that the
/// latency of one request does not: one writer at a time trailed the
/// bindings by a factor of ten on a real API server.
pub(crate) const WRITERS: usize = 32;

/// A report with its ticket in the backlog ([`crate::metrics::ReportBacklog`]).
#[derive(Debug)]
pub(crate) struct Queued {
    pub ticket: u64,
    pub report: Report,
}

impl Queued {
    /// The pod it reports on (`namespace/name`).
    fn pod(&self) -> String {
        match &self.report {
            Report::Scheduled { pod, .. } | Report::Failed { pod, .. } => pod.key(),
            // Apart from pods' keys: a group's writes keep their order too.
            Report::PodGroup(g) => format!("podgroup:{}/{}", g.namespace, g.name),
        }
    }

    /// The writes this report makes: an event, and after a failed attempt
    /// the condition.
    fn writes(&self) -> &'static [&'static str] {
        match self.report {
            Report::Scheduled { .. } => &["event"],
            Report::Failed { .. } => &["event", "condition"],
            Report::PodGroup(_) => &["podgroup_condition"],
        }
    }
}

/// Queues a report for the reporter; a report that does not fit is counted
/// as dropped (`queue_full`), never waited for: the scheduling thread does
/// not stop for events.
pub(crate) fn queue(tx: &mpsc::Sender<Queued>, status: &Status, report: Report) {
    let ticket = status.metrics.backlog.enter();
    if let Err(e) = tx.try_send(Queued { ticket, report }) {
        let q = e.into_inner();
        status.metrics.backlog.leave(q.ticket);
        for w in q.writes() {
            status.metrics.report_dropped(w, "queue_full");
        }
    }
}

/// Writes reports, [`WRITERS`] at a time, until the channel closes and
/// what was queued is written, or `drain` says when to give up: what is
/// not written by then is counted (`shutdown`) and logged. API calls are
/// bounded by `timeout`; a write that fails is counted and logged at
/// debug (the next attempt of the pod reports again).
pub(crate) async fn run(
    client: kube::Client,
    identity: String,
    mut rx: mpsc::Receiver<Queued>,
    status: Arc<Status>,
    timeout: Duration,
    mut drain: tokio::sync::watch::Receiver<Option<tokio::time::Instant>>,
) {
    let new_recorder = {
        let (client, identity) = (client.clone(), identity.clone());
        move |profile: &str| {
            Recorder::new(
                client.clone(),
                Reporter {
                    controller: profile.to_owned(),
                    instance: Some(identity.clone()),
                },
            )
        }
    };
    let mut recorders: HashMap<String, Recorder> = HashMap::new();
    let mut writing: tokio::task::JoinSet<()> = tokio::task::JoinSet::new();
    // The writes of the reports in flight, by task, for the count at the
    // end, with their pod.
    let mut in_flight: HashMap<tokio::task::Id, (u64, &'static [&'static str], String)> = HashMap::new();
    // One pod's reports are written in the order of its attempts: a later
    // one waits here while an earlier one is in flight, or an older
    // condition (re-applied after a conflict) could overwrite a newer.
    let mut waiting: HashMap<String, std::collections::VecDeque<Queued>> = HashMap::new();
    let mut open = true;
    let mut start = |q: Queued, writing: &mut tokio::task::JoinSet<()>| {
        let (writes, ticket, pod) = (q.writes(), q.ticket, q.pod());
        let recorder = match &q.report {
            // A pod is scheduled once: nothing to aggregate, so a
            // recorder of its own, whose cache goes with it (a shared
            // one would keep every Scheduled event for six minutes).
            Report::Scheduled { profile, .. } => Some(new_recorder(profile)),
            Report::Failed { profile, .. } => Some(
                recorders
                    .entry(profile.clone())
                    .or_insert_with(|| new_recorder(profile))
                    .clone(),
            ),
            Report::PodGroup(_) => None,
        };
        let (client, status) = (client.clone(), status.clone());
        let handle = writing.spawn(async move { write(&client, &recorder, q.report, &status, timeout).await });
        (handle.id(), (ticket, writes, pod))
    };
    loop {
        tokio::select! {
            done = writing.join_next_with_id(), if !writing.is_empty() => {
                let id = match done {
                    Some(Ok((id, ()))) => id,
                    Some(Err(e)) => e.id(),
                    None => continue,
                };
                if let Some((ticket, _, pod)) = in_flight.remove(&id) {
                    status.metrics.backlog.leave(ticket);
                    // The pod's next report, if one waits.
                    let next = waiting.get_mut(&pod).and_then(|w| w.pop_front());
                    if waiting.get(&pod).is_some_and(|w| w.is_empty()) {
                        waiting.remove(&pod);
                    }
                    if let Some(q) = next {
                        let (id, entry) = start(q, &mut writing);
                        in_flight.insert(id, entry);
                    }
                }
            }
            q = rx.recv(), if open && writing.len() < WRITERS => match q {
                // Closed: the scheduling thread ended; finish what is in flight.
                None => open = false,
                Some(q) => {
                    let pod = q.pod();
                    if in_flight.values().any(|(_, _, p)| *p == pod) {
                        waiting.entry(pod).or_default().push_back(q);
                    } else {
                        let (id, entry) = start(q, &mut writing);
                        in_flight.insert(id, entry);
                    }
                }
            },
            () = deadline(&mut drain) => break,
        }
        if !open && writing.is_empty() {
            return;
        }
    }
    // The drain at shutdown ran out: count and log what is left.
    writing.abort_all();
    let mut lost: HashMap<&'static str, u64> = HashMap::new();
    let parked = waiting.into_values().flatten().map(|q| (q.ticket, q.writes()));
    for (ticket, writes) in in_flight.into_values().map(|(t, w, _)| (t, w)).chain(parked) {
        status.metrics.backlog.leave(ticket);
        for w in writes {
            status.metrics.report_dropped(w, "shutdown");
            *lost.entry(w).or_default() += 1;
        }
    }
    rx.close();
    while let Ok(q) = rx.try_recv() {
        status.metrics.backlog.leave(q.ticket);
        for w in q.writes() {
            status.metrics.report_dropped(w, "shutdown");
            *lost.entry(w).or_default() += 1;
        }
    }
    while writing.join_next().await.is_some() {}
    tracing::warn!(
        events = lost.get("event").copied().unwrap_or(0),
        conditions = lost.get("condition").copied().unwrap_or(0),
        "shutting down: reports not written within the drain period are dropped"
    );
}

/// Resolves when the drain at shutdown ends (never before it is set).
async fn deadline(drain: &mut tokio::sync::watch::Receiver<Option<tokio::time::Instant>>) {
    let at = match drain.wait_for(Option::is_some).await {
        Ok(d) => Some(d.unwrap_or_else(tokio::time::Instant::now)),
        Err(_) => None,
    };
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Writes one report: its event, and after a failed attempt the condition.
async fn write(client: &kube::Client, recorder: &Option<Recorder>, report: Report, status: &Status, timeout: Duration) {
    // A group's condition needs no recorder; a pod's report always has one.
    let (recorder, report) = match (recorder, report) {
        (_, Report::PodGroup(g)) => return write_group(client, &g, status, timeout).await,
        (Some(r), report) => (r, report),
        (None, _) => return,
    };
    match report {
        Report::Scheduled { pod, node, profile: _ } => {
            let note = format!("Successfully assigned {}/{} to {node}", pod.namespace, pod.name);
            let ev = Event {
                type_: EventType::Normal,
                reason: "Scheduled".into(),
                note: Some(truncate_message(note, NOTE_LIMIT)),
                action: "Binding".into(),
                secondary: None,
            };
            publish(recorder, &ev, &pod, status, timeout).await;
        }
        Report::PodGroup(_) => {} // written above
        Report::Failed {
            pod,
            profile: _,
            reason,
            message,
            resource_version,
            seen,
        } => {
            let ev = Event {
                type_: EventType::Warning,
                reason: "FailedScheduling".into(),
                note: Some(truncate_message(message.clone(), NOTE_LIMIT)),
                action: "Scheduling".into(),
                secondary: None,
            };
            publish(recorder, &ev, &pod, status, timeout).await;
            let pods: Api<Pod> = Api::namespaced(client.clone(), &pod.namespace);
            let patched = tokio::time::timeout(
                timeout,
                set_condition(&pods, &pod, reason, &message, resource_version, seen),
            )
            .await;
            match patched {
                Ok(Ok(())) => {
                    status.metrics.conditions.inc();
                }
                Ok(Err(e)) => {
                    status.metrics.report_dropped("condition", "error");
                    tracing::debug!(pod = %pod.key(), error = %e, "cannot set the PodScheduled condition")
                }
                Err(_) => {
                    status.metrics.report_dropped("condition", "timeout");
                    tracing::debug!(pod = %pod.key(), "setting the PodScheduled condition did not answer in time")
                }
            }
        }
    }
}

/// Writes a group's condition, counted as dropped when it fails.
async fn write_group(
    client: &kube::Client,
    g: &wasmsched_core::scheduler::GroupOutcome,
    status: &Status,
    timeout: Duration,
) {
    let group = format!("{}/{}", g.namespace, g.name);
    match tokio::time::timeout(timeout, set_group_condition(client, g)).await {
        Ok(Ok(())) => {
            status.metrics.conditions.inc();
        }
        Ok(Err(e)) => {
            status.metrics.report_dropped("podgroup_condition", "error");
            tracing::debug!(group = %group, error = %e, "cannot set the PodGroupScheduled condition")
        }
        Err(_) => {
            status.metrics.report_dropped("podgroup_condition", "timeout");
            tracing::debug!(group = %group, "setting the PodGroupScheduled condition did not answer in time")
        }
    }
}

/// Sets a PodGroup's `PodGroupScheduled` condition as kube-scheduler's
/// `updatePodGroupCondition` does: never from `True` back to `False`,
/// `lastTransitionTime` kept unless the status changes, nothing written
/// when nothing changes; `observedGeneration` is the group's generation
/// the cycle read. Conditioned on the version read, and read again on a
/// conflict.
async fn set_group_condition(
    client: &kube::Client,
    g: &wasmsched_core::scheduler::GroupOutcome,
) -> Result<(), kube::Error> {
    use k8s_openapi::api::scheduling::v1alpha2::PodGroup;
    let groups: Api<PodGroup> = Api::namespaced(client.clone(), &g.namespace);
    let status = if g.scheduled { "True" } else { "False" };
    for _ in 0..3 {
        let Some(now) = groups.get_opt(&g.name).await? else {
            return Ok(());
        };
        let existing = now.status.as_ref().and_then(|s| s.conditions.as_ref()).and_then(|cs| {
            cs.iter()
                .find(|c| c.type_ == wasmsched_core::pod_groups::SCHEDULED_CONDITION)
        });
        if let Some(c) = existing {
            if c.status == "True" && !g.scheduled {
                return Ok(());
            }
            if c.status == status
                && c.reason == g.reason
                && c.message == g.message
                && c.observed_generation == Some(g.generation)
            {
                return Ok(());
            }
        }
        let transition = match existing {
            Some(c) if c.status == status => c.last_transition_time.0.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            _ => crate::daemon::time_now(),
        };
        let patch = json!({
            "metadata": {"resourceVersion": now.metadata.resource_version},
            "status": {"conditions": [{
                "type": wasmsched_core::pod_groups::SCHEDULED_CONDITION, "status": status,
                "reason": g.reason, "message": g.message,
                "observedGeneration": g.generation,
                "lastTransitionTime": transition,
            }]},
        });
        let (params, patch) = (PatchParams::default(), Patch::Strategic(&patch));
        match with_retries(|| groups.patch_status(&g.name, &params, &patch)).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Tries a write up to [`WRITE_ATTEMPTS`] times while the API server
/// answers 429 or 5xx or the connection fails, with a doubling pause from
/// 100 ms, as client-go's event sink retries (an overloaded API server
/// sheds writes with 429 first; dropping the event then loses it for good).
async fn with_retries<T, F, Fut>(mut write: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    let mut pause = Duration::from_millis(100);
    let mut attempt = 1;
    loop {
        match write().await {
            Err(e) if attempt < WRITE_ATTEMPTS && transient(&e) => {
                tokio::time::sleep(pause).await;
                pause *= 2;
                attempt += 1;
            }
            done => return done,
        }
    }
}

/// Attempts at one write ([`with_retries`]).
const WRITE_ATTEMPTS: u32 = 4;

/// Whether a failed write may succeed when tried again.
fn transient(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => s.code == 429 || s.code >= 500,
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

/// Writes an event, counted as written or dropped.
pub(crate) async fn publish(recorder: &Recorder, ev: &Event, pod: &PodRef, status: &Status, timeout: Duration) {
    let reference = pod.object_ref();
    let written = with_retries(|| recorder.publish(ev, &reference));
    match tokio::time::timeout(timeout, written).await {
        Ok(Ok(())) => {
            status.metrics.events.inc();
        }
        Ok(Err(e)) => {
            status.metrics.report_dropped("event", "error");
            tracing::debug!(error = %e, reason = %ev.reason, "cannot write an event")
        }
        Err(_) => {
            status.metrics.report_dropped("event", "timeout");
            tracing::debug!(reason = %ev.reason, "writing an event did not answer in time")
        }
    }
}

/// Sets `PodScheduled=False` as kube-scheduler's `updatePod` does: nothing
/// when the condition already says so, `lastTransitionTime` kept unless
/// the status changes, and never on a pod bound since the attempt.
async fn set_condition(
    pods: &Api<Pod>,
    pod: &PodRef,
    reason: &str,
    message: &str,
    mut resource_version: String,
    mut seen: SeenCondition,
) -> Result<(), kube::Error> {
    for _ in 0..2 {
        if seen.status.as_deref() == Some("False")
            && seen.reason.as_deref() == Some(reason)
            && seen.message.as_deref() == Some(message)
        {
            return Ok(());
        }
        let transition = match (&seen.status, &seen.last_transition_time) {
            (Some(s), Some(t)) if s == "False" => t.clone(),
            _ => crate::daemon::time_now(),
        };
        let patch = json!({
            "metadata": {"resourceVersion": resource_version},
            "status": {"conditions": [{
                "type": "PodScheduled", "status": "False", "reason": reason,
                "message": message, "lastProbeTime": null,
                "lastTransitionTime": transition,
            }]},
        });
        let (params, patch) = (PatchParams::default(), Patch::Strategic(&patch));
        let patched = with_retries(|| pods.patch_status(&pod.name, &params, &patch));
        match patched.await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => {
                // The pod changed since the attempt: look at it as it is now.
                let Some(now) = pods.get_opt(&pod.name).await? else {
                    return Ok(());
                };
                let bound = now.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some();
                if bound || now.metadata.uid.as_deref() != Some(&pod.uid) {
                    return Ok(());
                }
                resource_version = now.metadata.resource_version.clone().unwrap_or_default();
                seen = SeenCondition::of(&now);
            }
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmsched_apiserver_sim::{ApiServer, Config};

    async fn server_with_pod() -> (ApiServer, Api<Pod>, PodRef, Pod) {
        let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), Config::default())
            .await
            .unwrap();
        s.create(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "x"}]}}),
        )
        .unwrap();
        let client = kube::Client::try_from(kube::Config::new(s.url().parse().unwrap())).unwrap();
        let pods: Api<Pod> = Api::namespaced(client, "default");
        let pod = pods.get("p").await.unwrap();
        let r = PodRef {
            namespace: "default".into(),
            name: "p".into(),
            uid: pod.metadata.uid.clone().unwrap(),
        };
        (s, pods, r, pod)
    }

    fn condition(p: &Pod) -> SeenCondition {
        SeenCondition::of(p)
    }

    #[tokio::test]
    async fn a_late_unschedulable_report_never_marks_a_bound_pod() {
        let (s, pods, r, seen) = server_with_pod().await;
        let rv = seen.metadata.resource_version.clone().unwrap();
        // attempt k failed; before its report lands, attempt k+1 bound the pod
        s.store()
            .bind("default", "p", &json!({"target": {"name": "n1"}}))
            .unwrap();
        set_condition(
            &pods,
            &r,
            REASON_UNSCHEDULABLE,
            "0/1 nodes are available",
            rv,
            condition(&seen),
        )
        .await
        .unwrap();
        let now = pods.get("p").await.unwrap();
        assert_eq!(condition(&now).status.as_deref(), Some("True"), "still scheduled");
    }

    #[tokio::test]
    async fn last_transition_time_changes_only_with_the_status() {
        let (_s, pods, r, seen) = server_with_pod().await;
        let rv = seen.metadata.resource_version.clone().unwrap();
        set_condition(&pods, &r, REASON_UNSCHEDULABLE, "first", rv, condition(&seen))
            .await
            .unwrap();
        let p1 = pods.get("p").await.unwrap();
        let t1 = condition(&p1).last_transition_time.unwrap();
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let rv = p1.metadata.resource_version.clone().unwrap();
        set_condition(&pods, &r, REASON_SCHEDULER_ERROR, "second", rv, condition(&p1))
            .await
            .unwrap();
        let p2 = pods.get("p").await.unwrap();
        let c2 = condition(&p2);
        assert_eq!(c2.message.as_deref(), Some("second"));
        assert_eq!(c2.reason.as_deref(), Some(REASON_SCHEDULER_ERROR));
        assert_eq!(c2.last_transition_time.unwrap(), t1, "the status stayed False");
        // the same condition again: no request at all
        let rv2 = p2.metadata.resource_version.clone();
        set_condition(
            &pods,
            &r,
            REASON_SCHEDULER_ERROR,
            "second",
            rv2.clone().unwrap(),
            condition(&p2),
        )
        .await
        .unwrap();
        assert_eq!(pods.get("p").await.unwrap().metadata.resource_version, rv2);
    }

    /// Writes the API server sheds (429, 503) are tried again; a refusal
    /// (403) is not.
    #[tokio::test]
    async fn writes_refused_for_a_while_are_tried_again() {
        let (s, _pods, r, _) = server_with_pod().await;
        let rule = |code, count| wasmsched_apiserver_sim::FailRule {
            code,
            count: Some(count),
            fraction: None,
            matching: wasmsched_apiserver_sim::Match::path("/events"),
        };
        s.faults().add_rule(rule(429, 1));
        s.faults().add_rule(rule(503, 2));
        let client = kube::Client::try_from(kube::Config::new(s.url().parse().unwrap())).unwrap();
        let recorder = Recorder::new(client, "wasm-scheduler".into());
        let status = Status::new(None);
        let ev = Event {
            type_: EventType::Normal,
            reason: "Scheduled".into(),
            note: None,
            action: "Binding".into(),
            secondary: None,
        };
        publish(&recorder, &ev, &r, &status, Duration::from_secs(10)).await;
        assert_eq!(status.metrics.events.get(), 1, "written on the fourth attempt");
        assert_eq!(s.list::<k8s_openapi::api::events::v1::Event>().len(), 1);
        s.faults().add_rule(rule(403, 1));
        publish(&recorder, &ev, &r, &status, Duration::from_secs(10)).await;
        assert_eq!(status.metrics.events.get(), 1);
        assert_eq!(s.faults().injected(), 4, "the refusal was not tried again");
    }

    /// Two failed attempts of one pod: the first report's event is refused
    /// once (and tried again after a backoff). Written side by side, the
    /// second condition landed first and the first, re-applied after the
    /// conflict, overwrote it; in order, the pod says what its last
    /// attempt said.
    #[tokio::test]
    async fn one_pods_reports_are_written_in_the_order_of_its_attempts() {
        let (s, pods, _r, pod) = server_with_pod().await;
        s.faults().add_rule(wasmsched_apiserver_sim::FailRule {
            code: 503,
            count: Some(1),
            fraction: None,
            matching: wasmsched_apiserver_sim::Match::path("/events"),
        });
        let client = kube::Client::try_from(kube::Config::new(s.url().parse().unwrap())).unwrap();
        let status = Arc::new(Status::new(None));
        let (tx, rx) = mpsc::channel(8);
        let (_drain, drain) = tokio::sync::watch::channel(None);
        for message in ["first", "second"] {
            let report = Report::failed(&pod, "wasm-scheduler", REASON_UNSCHEDULABLE, message.into());
            queue(&tx, &status, report);
        }
        drop(tx);
        run(
            client,
            "test".into(),
            rx,
            status.clone(),
            Duration::from_secs(10),
            drain,
        )
        .await;
        let now = pods.get("p").await.unwrap();
        assert_eq!(condition(&now).message.as_deref(), Some("second"));
        assert_eq!(status.metrics.conditions.get(), 2);
    }

    #[test]
    fn notes_are_truncated_as_kube_scheduler_does() {
        let long = "x".repeat(2000);
        let t = truncate_message(long, NOTE_LIMIT);
        assert_eq!(t.len(), NOTE_LIMIT);
        assert!(t.ends_with(" ..."));
        assert_eq!(truncate_message("short".into(), NOTE_LIMIT), "short");
    }
}
