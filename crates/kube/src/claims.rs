//! DynamicResources' PreBind and Unreserve: before a pod with resource
//! claims is bound, write the [`DraPlan`] its cycle chose to the claims, as
//! kube-scheduler's `bindClaim` does:
//!
//! - a claim allocated in the cycle first gets the finalizer
//!   `resource.kubernetes.io/delete-protection` (a normal update), then
//!   its `status.allocation` (with `allocationTimestamp`) and the pod in
//!   `status.reservedFor` (one status update);
//! - a claim allocated already gets the pod in `status.reservedFor`;
//! - a conflict reads the claim again and retries (five tries); a claim
//!   deleted, replaced, or allocated by someone else meanwhile fails the
//!   binding.
//!
//! When the pod is not bound after all (its binding failed, it is gone),
//! the pod is taken out of the `reservedFor` of each claim written, as
//! kube-scheduler's Unreserve does; the allocation stays, and the
//! resourceclaim controller deallocates a claim no one reserves. Every
//! request is bounded in time and made only while the lease holds; the
//! claims as the API answered go back to the scheduler, which sees them
//! before it drops the assumption.
//!
//! PostFilter's deallocation, too: a claim allocated for nodes where its
//! pod no longer fits, and reserved for no one else, has its allocation
//! cleared so that the pod's next attempt may allocate it elsewhere.

use std::time::Duration;

use k8s_openapi::api::resource::v1::ResourceClaim;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, PostParams};
use serde_json::Value;
use wasmsched_core::dra::devices::{FINALIZER, reserved_for};
use wasmsched_core::dra::{DraPlan, PlannedClaim};

use crate::leader::Leadership;

/// Tries of one claim's write on conflicts (client-go's `DefaultRetry`).
const TRIES: usize = 5;

/// What a request failed with: a conflict is retried.
enum Failure {
    Conflict,
    Other(String),
}

async fn request<T>(
    leadership: &Leadership,
    timeout: Duration,
    f: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<T, Failure> {
    if !leadership.is_leading() {
        return Err(Failure::Other("lost leadership before binding".into()));
    }
    match tokio::time::timeout(timeout.min(leadership.remaining()), f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(kube::Error::Api(s))) if s.code == 409 => Err(Failure::Conflict),
        Ok(Err(kube::Error::Api(s))) => Err(Failure::Other(s.message)),
        Ok(Err(e)) => Err(Failure::Other(e.to_string())),
        Err(_) => Err(Failure::Other(format!("no answer within {timeout:?}"))),
    }
}

fn other(f: Failure) -> String {
    match f {
        Failure::Conflict => "the object has been modified".into(),
        Failure::Other(s) => s,
    }
}

/// The claims written so far, as the API answered (for the scheduler), and
/// the error that stopped the writes, if one did.
pub(crate) struct Written {
    pub claims: Vec<Value>,
    pub error: Option<String>,
}

/// Writes the plan's claims in order; stops at the first failure.
pub(crate) async fn reserve(
    client: &kube::Client,
    plan: &DraPlan,
    leadership: &Leadership,
    timeout: Duration,
) -> Written {
    let mut written = Written {
        claims: Vec::new(),
        error: None,
    };
    for pc in &plan.claims {
        match bind_claim(client, plan, pc, leadership, timeout).await {
            Ok(c) => written.claims.push(serde_json::to_value(&c).unwrap_or_default()),
            Err(e) => {
                written.error = Some(e);
                break;
            }
        }
    }
    written
}

async fn bind_claim(
    client: &kube::Client,
    plan: &DraPlan,
    pc: &PlannedClaim,
    leadership: &Leadership,
    timeout: Duration,
) -> Result<ResourceClaim, String> {
    let api: Api<ResourceClaim> = Api::namespaced(client.clone(), &pc.namespace);
    let key = pc.key();
    let mut last = String::new();
    for _ in 0..TRIES {
        let mut claim = request(leadership, timeout, api.get(&pc.name))
            .await
            .map_err(|e| format!("get updated claim {key} after conflict: {}", other(e)))?;
        if claim.metadata.deletion_timestamp.is_some() || claim.metadata.uid.as_deref() != Some(pc.uid.as_str()) {
            return Err(format!("claim {key} got deleted in the meantime"));
        }
        if reserved_for(&claim, &plan.pod_uid) && claim.status.as_ref().is_some_and(|s| s.allocation.is_some()) {
            // An earlier attempt landed with its answer lost.
            return Ok(claim);
        }
        if let Some(allocation) = &pc.allocation {
            if claim.status.as_ref().is_some_and(|s| s.allocation.is_some()) {
                return Err(format!("claim {key} got allocated elsewhere in the meantime"));
            }
            let finalizers = claim.metadata.finalizers.get_or_insert_with(Vec::new);
            if !finalizers.iter().any(|f| f == FINALIZER) {
                finalizers.push(FINALIZER.into());
                claim = match request(
                    leadership,
                    timeout,
                    api.replace(&pc.name, &PostParams::default(), &claim),
                )
                .await
                {
                    Ok(c) => c,
                    Err(Failure::Conflict) => {
                        last = format!("add finalizer to claim {key}: the object has been modified");
                        continue;
                    }
                    Err(Failure::Other(e)) => return Err(format!("add finalizer to claim {key}: {e}")),
                };
            }
            claim.status.get_or_insert_with(Default::default).allocation = Some(allocation.clone());
        }
        let status = claim.status.get_or_insert_with(Default::default);
        status.reserved_for.get_or_insert_with(Vec::new).push(plan.consumer());
        let Some(allocation) = status.allocation.as_mut() else {
            return Err(format!("claim {key} got deallocated elsewhere in the meantime"));
        };
        if allocation.allocation_timestamp.is_none() {
            allocation.allocation_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::now()));
        }
        let what = if pc.allocation.is_some() {
            "add allocation and reservation to claim"
        } else {
            "add reservation to claim"
        };
        match request(
            leadership,
            timeout,
            api.replace_status(&pc.name, &PostParams::default(), &claim),
        )
        .await
        {
            Ok(c) => return Ok(c),
            Err(Failure::Conflict) => last = format!("{what} {key}: the object has been modified"),
            Err(Failure::Other(e)) => return Err(format!("{what} {key}: {e}")),
        }
    }
    Err(last)
}

/// Takes the pod out of `reservedFor` of each written claim (by name in
/// `written`); returns the claims as the API answered. Failures are
/// logged: the resourceclaim controller also drops a deleted pod's
/// reservations.
pub(crate) async fn unreserve(
    client: &kube::Client,
    plan: &DraPlan,
    written: &[Value],
    leadership: &Leadership,
    timeout: Duration,
) -> Vec<Value> {
    let mut answers = Vec::new();
    for w in written {
        let s = |p: &str| w.pointer(p).and_then(Value::as_str).unwrap_or_default().to_owned();
        let (ns, name) = (s("/metadata/namespace"), s("/metadata/name"));
        let api: Api<ResourceClaim> = Api::namespaced(client.clone(), &ns);
        let mut done = false;
        for _ in 0..TRIES {
            let Ok(mut claim) = request(leadership, timeout, api.get(&name)).await else {
                break;
            };
            let Some(list) = claim.status.as_mut().and_then(|s| s.reserved_for.as_mut()) else {
                done = true;
                break;
            };
            let before = list.len();
            list.retain(|r| r.uid != plan.pod_uid);
            if list.len() == before {
                done = true;
                break;
            }
            match request(
                leadership,
                timeout,
                api.replace_status(&name, &PostParams::default(), &claim),
            )
            .await
            {
                Ok(c) => {
                    answers.push(serde_json::to_value(&c).unwrap_or_default());
                    done = true;
                    break;
                }
                Err(Failure::Conflict) => continue,
                Err(Failure::Other(e)) => {
                    tracing::warn!(claim = %format!("{ns}/{name}"), error = %e, "unreserve: the pod stays in the claim's reservedFor");
                    break;
                }
            }
        }
        if !done {
            tracing::warn!(claim = %format!("{ns}/{name}"), pod = %plan.pod_name, "unreserve did not complete");
        }
    }
    answers
}

/// Clears the claim's `status.allocation`, `reservedFor` and `devices`, as
/// kube-scheduler's PostFilter does: one status update of the claim as the
/// cycle saw it, so a claim changed since (reserved by another pod,
/// allocated again) is left alone by the API server's conflict. Failures
/// are logged; the claim's update, or the pod's next attempt, tells the
/// scheduler.
pub(crate) async fn deallocate(
    client: &kube::Client,
    claim: &ResourceClaim,
    leadership: &Leadership,
    timeout: Duration,
) {
    let (ns, name) = (
        claim.metadata.namespace.clone().unwrap_or_default(),
        claim.metadata.name.clone().unwrap_or_default(),
    );
    let api: Api<ResourceClaim> = Api::namespaced(client.clone(), &ns);
    let mut cleared = claim.clone();
    if let Some(s) = cleared.status.as_mut() {
        s.allocation = None;
        s.reserved_for = None;
        s.devices = None;
    }
    match request(
        leadership,
        timeout,
        api.replace_status(&name, &PostParams::default(), &cleared),
    )
    .await
    {
        Ok(_) => {
            tracing::info!(claim = %format!("{ns}/{name}"), "deallocated the claim: its pod fits nowhere it is allocated")
        }
        Err(f) => tracing::warn!(claim = %format!("{ns}/{name}"), error = %other(f), "cannot deallocate the claim"),
    }
}
