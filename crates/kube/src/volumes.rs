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
//!   volume must point back at it, as the watchers' stores show them (the
//!   wait makes no request).
//!
//! Every request is bounded in time and made only while the lease holds.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::reflector::ObjectRef;
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

/// Why the volumes of a placement were not bound.
#[derive(Debug)]
pub(crate) enum VolumeError {
    /// The pod was deleted (or replaced by another of its name) meanwhile:
    /// stop waiting, drop it.
    PodGone,
    /// The reason the pod is retried, in kube-scheduler's words where it
    /// has some.
    Failed(String),
}

impl From<String> for VolumeError {
    fn from(s: String) -> Self {
        VolumeError::Failed(s)
    }
}

/// Writes the plan and waits for the claims to be bound, as long as the
/// pod exists.
pub(crate) async fn bind(
    client: &kube::Client,
    plan: &VolumePlan,
    job: &crate::binder::BindJob,
    leadership: &Leadership,
    status: &crate::status::Status,
    timeout: Duration,
) -> Result<(), VolumeError> {
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    let claims = |ns: &str| -> Api<PersistentVolumeClaim> { Api::namespaced(client.clone(), ns) };
    for (key, pv_name) in &plan.bindings {
        let (ns, name) = split(key);
        let claim = request(leadership, timeout, "reading the claim", claims(ns).get(name)).await?;
        let mut pv = request(leadership, timeout, "reading the volume", pvs.get(pv_name)).await?;
        let spec = pv.spec.get_or_insert_with(Default::default);
        // Still available, or already ours: another claim's binding (made
        // since our cycle read the volume) is never overwritten. The
        // replace below carries the resourceVersion just read, so a change
        // in between is a conflict, not an overwrite.
        if let Some(r) = &spec.claim_ref {
            let ours = r.namespace.as_deref() == Some(ns)
                && r.name.as_deref() == Some(name)
                && r.uid.as_ref().is_none_or(|u| claim.metadata.uid.as_ref() == Some(u));
            if !ours {
                return Err(VolumeError::Failed(format!(
                    "binding volumes: pv \"{pv_name}\" is already bound to claim \"{}/{}\"",
                    r.namespace.as_deref().unwrap_or_default(),
                    r.name.as_deref().unwrap_or_default()
                )));
            }
        } else {
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
        let claim = request(leadership, timeout, "reading the claim", claims(ns).get(name)).await?;
        let selected = claim
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANN_SELECTED_NODE));
        match selected {
            Some(n) if *n == plan.node => continue,
            Some(n) => {
                return Err(VolumeError::Failed(format!(
                    "binding volumes: claim \"{name}\" is already being provisioned on node \"{n}\""
                )));
            }
            None => {}
        }
        // Conditioned on the claim as just read: a claim changed since
        // (another scheduler selected a node) is a conflict.
        let patch = json!({"metadata": {
            "resourceVersion": claim.metadata.resource_version,
            "annotations": {ANN_SELECTED_NODE: plan.node},
        }});
        request(
            leadership,
            timeout,
            "annotating the claim",
            claims(ns).patch(name, &PatchParams::default(), &Patch::Merge(&patch)),
        )
        .await?;
    }

    status.volumes_wait(&job.uid);
    let waited = wait(plan, job, leadership, status).await;
    status.volumes_done(&job.uid);
    waited
}

/// Waits until every claim of the plan is bound, reading the watchers'
/// stores, never the API: a few hundred pods waiting for provisioners cost
/// the API server nothing, and leave the client's budget to bindings.
async fn wait(
    plan: &VolumePlan,
    job: &crate::binder::BindJob,
    leadership: &Leadership,
    status: &crate::status::Status,
) -> Result<(), VolumeError> {
    let Some(stores) = status.volume_stores() else {
        return Err(VolumeError::Failed(
            "binding volumes: no cache of claims and volumes (their watchers are not running)".into(),
        ));
    };
    // Bounded by the configuration's check; saturating all the same.
    let now = Instant::now();
    let deadline = now
        .checked_add(Duration::from_secs(plan.bind_timeout_seconds))
        .unwrap_or(now + Duration::from_secs(365 * 24 * 3600));
    let mut seen = std::collections::HashSet::new();
    loop {
        if !leadership.is_leading() {
            return Err(VolumeError::Failed("lost leadership before binding volumes".into()));
        }
        if bound(stores, plan, &mut seen)? {
            return Ok(());
        }
        if Instant::now() + POLL > deadline {
            return Err(VolumeError::Failed("binding volumes: context deadline exceeded".into()));
        }
        tokio::time::sleep(POLL).await;
        // kube-scheduler stops waiting when the pod is gone.
        if status.volumes_pod_gone(&job.uid) {
            return Err(VolumeError::PodGone);
        }
    }
}

/// Whether every claim of the plan is bound (kube-scheduler's
/// `checkBindings`); an error when the binding was undone. A store trails
/// the writes of the plan: what it wrote is "not yet" until the store has
/// shown it once (`seen`, by claim and volume), and only then may its
/// absence be an undoing (kube-scheduler's assume cache does the same).
fn bound(
    stores: &crate::status::VolumeStores,
    plan: &VolumePlan,
    seen: &mut std::collections::HashSet<String>,
) -> Result<bool, String> {
    let keys = plan
        .bindings
        .iter()
        .map(|(c, _)| (c, false))
        .chain(plan.provisions.iter().map(|c| (c, true)));
    for (key, provisioned) in keys {
        let (ns, name) = split(key);
        let Some(claim) = stores.0.get(&ObjectRef::new(name).within(ns)) else {
            return Err(format!("binding volumes: persistentvolumeclaim \"{name}\" not found"));
        };
        let ann = claim.metadata.annotations.clone().unwrap_or_default();
        if provisioned {
            if ann.contains_key(ANN_SELECTED_NODE) {
                seen.insert(key.clone());
            } else if seen.contains(key) {
                return Err(format!(
                    "binding volumes: selectedNode annotation reset for PVC \"{name}\""
                ));
            } else {
                return Ok(false);
            }
        }
        let volume = claim
            .spec
            .as_ref()
            .and_then(|s| s.volume_name.clone())
            .unwrap_or_default();
        if volume.is_empty() || !ann.contains_key(ANN_BIND_COMPLETED) {
            return Ok(false);
        }
        let Some(pv) = stores.1.get(&ObjectRef::new(&volume)) else {
            // Not in the store yet (its watch trails the claim's).
            return Ok(false);
        };
        let claim_ref = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
        let pv_key = format!("pv/{volume}");
        match claim_ref {
            Some(r) if r.uid.is_some() && r.uid == claim.metadata.uid => {
                seen.insert(pv_key);
            }
            Some(r) if r.uid.is_none() => return Ok(false),
            _ if !seen.contains(&pv_key) => return Ok(false),
            _ => {
                return Err(format!("binding volumes: ClaimRef got reset for pv \"{volume}\""));
            }
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binder::BindJob;
    use wasmsched_apiserver_sim::{ApiServer, Config};

    fn job() -> BindJob {
        BindJob {
            namespace: "default".into(),
            name: "p".into(),
            uid: "u".into(),
            node: "n1".into(),
            profile: "wasm-scheduler".into(),
            queued_at: Instant::now(),
            volumes: None,
            devices: None,
            plugins: None,
        }
    }

    fn claim(name: &str, annotations: serde_json::Value) -> serde_json::Value {
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": "default", "annotations": annotations},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    }

    /// Writing a plan never overwrites what another scheduler or claim
    /// did since the cycle read the cluster.
    #[tokio::test]
    async fn a_plan_does_not_overwrite_another_claims_binding_or_node() {
        let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), Config::default())
            .await
            .unwrap();
        s.create(claim("mine", json!({}))).unwrap();
        s.create(
            json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "hostPath": {"path": "/x"},
                     "claimRef": {"namespace": "default", "name": "other", "uid": "other-uid"}}}),
        )
        .unwrap();
        s.create(claim("elsewhere", json!({"volume.kubernetes.io/selected-node": "n2"})))
            .unwrap();
        let client = kube::Client::try_from(kube::Config::new(s.url().parse().unwrap())).unwrap();
        let leadership = Leadership::default();
        leadership.lead_forever();
        let plan = |bindings: Vec<(String, String)>, provisions: Vec<String>| VolumePlan {
            node: "n1".into(),
            bindings,
            provisions,
            bind_timeout_seconds: 1,
        };
        let taken = plan(vec![("default/mine".into(), "pv1".into())], vec![]);
        let status = crate::status::Status::new(None);
        let e = bind(&client, &taken, &job(), &leadership, &status, Duration::from_secs(5)).await;
        match e {
            Err(VolumeError::Failed(m)) => {
                assert_eq!(
                    m,
                    "binding volumes: pv \"pv1\" is already bound to claim \"default/other\""
                )
            }
            other => panic!("{other:?}"),
        }
        let pv: PersistentVolume = s.get("", "pv1").unwrap();
        assert_eq!(pv.spec.unwrap().claim_ref.unwrap().name.as_deref(), Some("other"));
        let moved = plan(vec![], vec!["default/elsewhere".into()]);
        let e = bind(&client, &moved, &job(), &leadership, &status, Duration::from_secs(5)).await;
        match e {
            Err(VolumeError::Failed(m)) => assert_eq!(
                m,
                "binding volumes: claim \"elsewhere\" is already being provisioned on node \"n2\""
            ),
            other => panic!("{other:?}"),
        }
    }
}
