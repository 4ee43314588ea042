//! VolumeBinding's PreBind: before a pod with unbound `WaitForFirstConsumer`
//! claims is bound, write the [`VolumePlan`] its cycle chose to the API and
//! wait until the PersistentVolume controller (or the provisioner) finishes
//! the binding, as kube-scheduler's `BindPodVolumes` does:
//!
//! - a static binding sets the volume's `spec.claimRef` to the claim (and
//!   `pv.kubernetes.io/bound-by-controller: "yes"`);
//! - a claim to provision gets `volume.kubernetes.io/selected-node`;
//! - then, every second until `bindTimeoutSeconds`, every claim of the plan
//!   must show its volume and `pv.kubernetes.io/bind-completed`, and that
//!   volume must point back at it.
//!
//! Every request is bounded in time and made only while the lease holds.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use wasmsched_core::storage::{ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE, VolumePlan};

use crate::leader::Leadership;

/// How often the claims are checked while waiting.
const POLL: Duration = Duration::from_secs(1);

/// Runs one request within `timeout` and the lease.
async fn request<T>(
    leadership: &Leadership,
    timeout: Duration,
    what: &str,
    f: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<T, String> {
    if !leadership.is_leading() {
        return Err("lost leadership before binding volumes".into());
    }
    match tokio::time::timeout(timeout.min(leadership.remaining()), f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(kube::Error::Api(s))) => Err(format!("{what}: {}", s.message)),
        Ok(Err(e)) => Err(format!("{what}: {e}")),
        Err(_) => Err(format!("{what}: no answer within {timeout:?}")),
    }
}

fn split(key: &str) -> (&str, &str) {
    key.split_once('/').unwrap_or(("default", key))
}

/// Writes the plan and waits for the claims to be bound. The error is the
/// reason the pod is retried, in kube-scheduler's words where it has some.
pub(crate) async fn bind(
    client: &kube::Client,
    plan: &VolumePlan,
    leadership: &Leadership,
    timeout: Duration,
) -> Result<(), String> {
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    let claims = |ns: &str| -> Api<PersistentVolumeClaim> { Api::namespaced(client.clone(), ns) };
    for (key, pv_name) in &plan.bindings {
        let (ns, name) = split(key);
        let claim = request(leadership, timeout, "reading the claim", claims(ns).get(name)).await?;
        let mut pv = request(leadership, timeout, "reading the volume", pvs.get(pv_name)).await?;
        let spec = pv.spec.get_or_insert_with(Default::default);
        if spec.claim_ref.is_none() {
            pv.metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(ANN_BOUND_BY_CONTROLLER.into(), "yes".into());
        }
        spec.claim_ref = Some(k8s_openapi::api::core::v1::ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("PersistentVolumeClaim".into()),
            namespace: Some(ns.into()),
            name: Some(name.into()),
            uid: claim.metadata.uid.clone(),
            resource_version: claim.metadata.resource_version.clone(),
            ..Default::default()
        });
        request(
            leadership,
            timeout,
            "binding the volume",
            pvs.replace(pv_name, &PostParams::default(), &pv),
        )
        .await?;
    }
    for key in &plan.provisions {
        let (ns, name) = split(key);
        let patch = json!({"metadata": {"annotations": {ANN_SELECTED_NODE: plan.node}}});
        request(
            leadership,
            timeout,
            "annotating the claim",
            claims(ns).patch(name, &PatchParams::default(), &Patch::Merge(&patch)),
        )
        .await?;
    }

    let deadline = Instant::now() + Duration::from_secs(plan.bind_timeout_seconds);
    loop {
        if bound(&pvs, &claims, plan, leadership, timeout).await? {
            return Ok(());
        }
        if Instant::now() + POLL > deadline {
            return Err("binding volumes: context deadline exceeded".into());
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Whether every claim of the plan is bound (kube-scheduler's
/// `checkBindings`); an error when the binding was undone.
async fn bound(
    pvs: &Api<PersistentVolume>,
    claims: &impl Fn(&str) -> Api<PersistentVolumeClaim>,
    plan: &VolumePlan,
    leadership: &Leadership,
    timeout: Duration,
) -> Result<bool, String> {
    let keys = plan
        .bindings
        .iter()
        .map(|(c, _)| (c, false))
        .chain(plan.provisions.iter().map(|c| (c, true)));
    for (key, provisioned) in keys {
        let (ns, name) = split(key);
        let claim = request(leadership, timeout, "binding volumes", claims(ns).get(name)).await?;
        let ann = claim.metadata.annotations.clone().unwrap_or_default();
        if provisioned && !ann.contains_key(ANN_SELECTED_NODE) {
            return Err(format!(
                "binding volumes: selectedNode annotation reset for PVC \"{name}\""
            ));
        }
        let volume = claim
            .spec
            .as_ref()
            .and_then(|s| s.volume_name.clone())
            .unwrap_or_default();
        if volume.is_empty() || !ann.contains_key(ANN_BIND_COMPLETED) {
            return Ok(false);
        }
        let pv = request(leadership, timeout, "binding volumes", pvs.get(&volume)).await?;
        let claim_ref = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
        match claim_ref {
            Some(r) if r.uid.is_some() && r.uid == claim.metadata.uid => {}
            Some(r) if r.uid.is_none() => return Ok(false),
            _ => {
                return Err(format!("binding volumes: ClaimRef got reset for pv \"{volume}\""));
            }
        }
    }
    Ok(true)
}
