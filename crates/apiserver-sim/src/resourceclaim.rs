//! kube-controller-manager's resourceclaim controller
//! (`pkg/controller/resourceclaim/controller.go`, v1.36), played by the
//! store so that pods with claim templates run without a controller manager.
//!
//! As in the controller, [`observe`] is the informers' event handlers: every
//! committed change to a pod, claim or template queues the work it causes
//! (`pod:` and `claim:` keys, de-duplicated as a workqueue does), and
//! [`run`] is the worker: [`sync_pod`] creates a pod's claims from its
//! templates, records them in `status.resourceClaimStatuses` and reserves
//! allocated claims for bound pods; [`sync_claim`] drops from
//! `status.reservedFor` the pods that are gone or done, deallocates a claim
//! nobody uses any more, and deletes the claims generated for a pod that will
//! not run. The garbage collector's part in the same story (a claim whose
//! owning pod is gone is deleted) is played here too, as the double has no
//! garbage collector.
//!
//! Unlike the controller, the work runs synchronously, right after the write
//! that caused it and under the same lock: the claim of a new pod exists by
//! the time the pod's create answers, and watches see the pod's `ADDED`, the
//! claim's `ADDED`, then the pod's `MODIFIED`, as they would see them from a
//! cluster. Every write goes through the store's own `create`, `update` and
//! `delete`, so it is defaulted, validated, versioned and watched like a
//! client's. Work that fails (a template that does not exist yet) is not
//! retried on a timer: it is tried again on the next change that queues it
//! (the template's creation, for instance).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::{Value, json};

use crate::resources::{PODS, RESOURCE_CLAIM_TEMPLATES, RESOURCE_CLAIMS};
use crate::store::{Change, EventType, Key, Store};

/// `resourceapi.PodResourceClaimAnnotation`: on a claim generated for a pod,
/// the name of the pod's claim entry it was made for.
pub(crate) const POD_CLAIM_NAME_ANNOTATION: &str = "resource.kubernetes.io/pod-claim-name";

/// `resourceapi.Finalizer`: the scheduler puts it on a claim it allocates;
/// only a claim carrying it is deallocated here when its last user goes.
pub(crate) const DELETE_PROTECTION_FINALIZER: &str = "resource.kubernetes.io/delete-protection";

/// Longest `generateName` the controller makes: 63 characters less the
/// hyphen and the five random ones.
const MAX_BASE_LEN: usize = 57;

/// Work items handled in one run before giving up on what is left: the
/// controller's writes converge, so reaching this is a bug, not a load.
const MAX_ITEMS_PER_RUN: usize = 100_000;

/// A workqueue key (`pod:NS/NAME`, `claim:NS/NAME`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Item {
    Pod(Key),
    Claim(Key),
}

/// The controller's queue and the informer indexes it looks pods and claims
/// up by. The indexes are kept up to date whether or not the controller runs.
#[derive(Debug, Default)]
pub(crate) struct Controller {
    queue: VecDeque<Item>,
    queued: BTreeSet<Item>,
    running: bool,
    /// `podResourceClaimIndex`: `(namespace, claim name)` to the pods whose
    /// claim entries resolve to that claim.
    pods_by_claim: BTreeMap<Key, BTreeSet<String>>,
    /// `podResourceClaimTemplateIndex`: `(namespace, template name)` to the
    /// pods with an entry naming that template.
    pods_by_template: BTreeMap<Key, BTreeSet<String>>,
    /// `claimPodOwnerIndex`, for every pod owner rather than the controller
    /// only (the garbage collector reads it too): pod UID to claims.
    claims_by_owner: BTreeMap<String, BTreeSet<Key>>,
}

impl Controller {
    fn add(&mut self, item: Item) {
        if self.queued.insert(item.clone()) {
            self.queue.push_back(item);
        }
    }

    fn pop(&mut self) -> Option<Item> {
        let item = self.queue.pop_front()?;
        self.queued.remove(&item);
        Some(item)
    }
}

/// The event handlers: keeps the indexes and, when the controller is on,
/// queues the work `change` causes. Called by the store for every change.
pub(crate) fn observe(store: &mut Store, change: &Change) {
    let on = store.resourceclaim_controller;
    let deleted = change.kind == EventType::Deleted;
    let obj = &change.object.value;
    match change.res {
        PODS => {
            let (ns, name) = (text(obj, "/metadata/namespace"), text(obj, "/metadata/name"));
            let (prev, now) = (change.prev.as_deref(), (!deleted).then_some(&**obj));
            let c = &mut store.claims;
            reindex(&mut c.pods_by_claim, ns, name, prev, now, pod_claim_keys);
            reindex(&mut c.pods_by_template, ns, name, prev, now, pod_template_keys);
            if on {
                enqueue_pod(store, obj, deleted);
            }
        }
        RESOURCE_CLAIMS => {
            let key = (
                text(obj, "/metadata/namespace").to_owned(),
                text(obj, "/metadata/name").to_owned(),
            );
            let c = &mut store.claims;
            for uid in change.prev.as_deref().map(pod_owner_uids).unwrap_or_default() {
                if let Some(set) = c.claims_by_owner.get_mut(&uid) {
                    set.remove(&key);
                    if set.is_empty() {
                        c.claims_by_owner.remove(&uid);
                    }
                }
            }
            if !deleted {
                for uid in pod_owner_uids(obj) {
                    c.claims_by_owner.entry(uid).or_default().insert(key.clone());
                }
            }
            if on {
                // `enqueueResourceClaim`: the claim itself (its reservations
                // may name pods already gone), then the pods using it.
                if !deleted {
                    store.claims.add(Item::Claim(key.clone()));
                }
                enqueue_pods_of(store, PodIndex::Claim, &key);
            }
        }
        // `enqueueResourceClaimTemplate`, on add and update only.
        RESOURCE_CLAIM_TEMPLATES if on && !deleted => {
            let key = (
                text(obj, "/metadata/namespace").to_owned(),
                text(obj, "/metadata/name").to_owned(),
            );
            enqueue_pods_of(store, PodIndex::Template, &key);
        }
        _ => {}
    }
}

/// The worker: handles queued work until none is left. Re-entrant calls
/// (from the worker's own writes) return at once; the outer loop picks up
/// what they queued.
pub(crate) fn run(store: &mut Store) {
    if store.claims.running || store.claims.queue.is_empty() {
        return;
    }
    store.claims.running = true;
    let mut handled = 0;
    while let Some(item) = store.claims.pop() {
        handled += 1;
        if handled > MAX_ITEMS_PER_RUN {
            tracing::error!(
                left = store.claims.queue.len() + 1,
                "resourceclaim controller does not converge; dropping its queue"
            );
            store.claims.queue.clear();
            store.claims.queued.clear();
            break;
        }
        let result = match &item {
            Item::Pod((ns, name)) => sync_pod(store, ns, name),
            Item::Claim((ns, name)) => sync_claim(store, ns, name),
        };
        if let Err(error) = result {
            // The controller logs it, emits an event and retries with
            // backoff; here the next change that queues the item retries it.
            tracing::warn!(item = ?item, %error, "resourceclaim controller: work item failed");
        }
    }
    store.claims.running = false;
}

#[derive(Clone, Copy)]
enum PodIndex {
    Claim,
    Template,
}

/// Queues, as `enqueuePod` would, the pods an index lists under `key`.
fn enqueue_pods_of(store: &mut Store, index: PodIndex, key: &Key) {
    let c = &store.claims;
    let map = match index {
        PodIndex::Claim => &c.pods_by_claim,
        PodIndex::Template => &c.pods_by_template,
    };
    let Some(pods) = map.get(key).cloned() else {
        return;
    };
    for pod in pods {
        if let Ok(p) = store.get(PODS, &key.0, &pod) {
            enqueue_pod(store, &p.value, false);
        }
    }
}

/// `enqueuePod`: a pod that no longer needs its claims queues them (to
/// release its reservations); one that may need work queues itself.
fn enqueue_pod(store: &mut Store, pod: &Value, deleted: bool) {
    let ns = text(pod, "/metadata/namespace");
    if deleted {
        // The garbage collector's part: the claims the pod owns.
        if let Some(claims) = store.claims.claims_by_owner.get(text(pod, "/metadata/uid")).cloned() {
            claims.into_iter().for_each(|k| store.claims.add(Item::Claim(k)));
        }
    }
    let extended = pod
        .pointer("/status/extendedResourceClaimStatus/resourceClaimName")
        .and_then(Value::as_str);
    if pod_claims(pod).is_empty() && extended.is_none() {
        return;
    }
    if !pod_needs_claims(pod, deleted) {
        for pc in pod_claims(pod) {
            if let Ok(Some((claim, _))) = claim_name(pod, pc) {
                store.claims.add(Item::Claim((ns.to_owned(), claim)));
            }
        }
        // Claims the scheduler made for extended resources are released too.
        if let Some(claim) = extended {
            store.claims.add(Item::Claim((ns.to_owned(), claim.to_owned())));
        }
    }
    if !deleted && pod_needs_work(store, pod) {
        store
            .claims
            .add(Item::Pod((ns.to_owned(), text(pod, "/metadata/name").to_owned())));
    }
}

/// `podNeedsClaims`: false once the pod is removed, terminal, or deleted
/// before it was scheduled.
fn pod_needs_claims(pod: &Value, deleted: bool) -> bool {
    !(deleted || pod_terminal(pod) || (has(pod, "/metadata/deletionTimestamp") && node_name(pod).is_empty()))
}

/// `podNeedsWork`: a claim to create, or an allocated claim to reserve for
/// the bound pod. Unlike v1.36's, it is false for a pod that no longer needs
/// its claims (as a later upstream fix makes it): otherwise a done
/// pod would get back the reservation just dropped, or a new claim for the
/// one just deleted, and so on forever (the controller's mutation cache
/// mostly hides the second).
fn pod_needs_work(store: &Store, pod: &Value) -> bool {
    if has(pod, "/metadata/deletionTimestamp") || !pod_needs_claims(pod, false) {
        return false;
    }
    let ns = text(pod, "/metadata/namespace");
    for pc in pod_claims(pod) {
        let (name, check_owner) = match claim_name(pod, pc) {
            Err(_) => return true,
            Ok(None) => continue,
            Ok(Some(n)) => n,
        };
        let Ok(claim) = store.get(RESOURCE_CLAIMS, ns, &name) else {
            if has(pc, "/resourceClaimTemplateName") {
                return true; // must create it from the template
            }
            continue; // the user has to create it
        };
        let claim = &claim.value;
        if (check_owner && !is_for_pod(pod, claim)) || node_name(pod).is_empty() {
            continue;
        }
        if has(claim, "/status/allocation") && !reserved_for_pod(pod, claim) {
            return true;
        }
    }
    false
}

/// `syncPod`: creates the pod's missing claims from their templates, records
/// them in the pod's status and, once the pod is bound, reserves its
/// allocated claims for it.
fn sync_pod(store: &mut Store, ns: &str, name: &str) -> Result<(), String> {
    let Ok(pod) = store.get(PODS, ns, name) else {
        return Ok(()); // gone
    };
    let pod = pod.value;
    if has(&pod, "/metadata/deletionTimestamp") || !pod_needs_claims(&pod, false) {
        return Ok(()); // (see `pod_needs_work`)
    }
    let mut created: Vec<(String, String)> = Vec::new();
    for pc in pod_claims(&pod) {
        handle_claim(store, &pod, pc, &mut created)
            .map_err(|e| format!("pod {ns}/{name}, PodResourceClaim {}: {e}", text(pc, "/name")))?;
    }
    let pod = if created.is_empty() {
        pod
    } else {
        // The controller applies these entries (server-side apply, keyed by
        // name); the double merges them into the status by name.
        let mut v = (*pod).clone();
        let statuses = &mut v["status"]["resourceClaimStatuses"];
        if !statuses.is_array() {
            *statuses = json!([]);
        }
        let list = statuses.as_array_mut().expect("array");
        for (pc, claim) in created {
            let entry = json!({"name": pc, "resourceClaimName": claim});
            match list.iter_mut().find(|s| s["name"] == pc.as_str()) {
                Some(s) => *s = entry,
                None => list.push(entry),
            }
        }
        store
            .update(PODS, ns, name, Some("status"), v)
            .map_err(|e| format!("update pod {ns}/{name} ResourceClaimStatuses: {}", e.message))?
            .value
    };
    if node_name(&pod).is_empty() {
        return Ok(()); // the scheduler reserves the claims
    }
    for pc in pod_claims(&pod) {
        let (claim_name, check_owner) = match claim_name(&pod, pc) {
            Err(e) => return Err(e.to_owned()),
            Ok(None) => continue,
            Ok(Some(n)) => n,
        };
        let Ok(claim) = store.get(RESOURCE_CLAIMS, ns, &claim_name) else {
            return Ok(());
        };
        if check_owner && !is_for_pod(&pod, &claim.value) {
            return Err(format!(
                "ResourceClaim {ns}/{claim_name} was not created for Pod {ns}/{name} (Pod is not owner)"
            ));
        }
        if has(&claim.value, "/status/allocation") && !reserved_for_pod(&pod, &claim.value) {
            // `reserveFor`, with the pod as consumer (`BindTo` without PodGroups).
            let mut v = (*claim.value).clone();
            let entry = json!({"resource": "pods", "name": name, "uid": text(&pod, "/metadata/uid")});
            match v["status"]["reservedFor"].as_array_mut() {
                Some(list) => list.push(entry),
                None => v["status"]["reservedFor"] = json!([entry]),
            }
            store
                .update(RESOURCE_CLAIMS, ns, &claim_name, Some("status"), v)
                .map_err(|e| format!("reserve claim {ns}/{claim_name}: {}", e.message))?;
        }
    }
    Ok(())
}

/// `handleClaim`: for one claim entry of the pod, creates the claim from its
/// template unless it exists (named in the pod's status, or an orphan the
/// pod owns), and records in `created` the entries the status must name.
fn handle_claim(store: &mut Store, pod: &Value, pc: &Value, created: &mut Vec<(String, String)>) -> Result<(), String> {
    let ns = text(pod, "/metadata/namespace");
    let pc_name = text(pc, "/name");
    match claim_name(pod, pc) {
        Err(e) if e == CLAIM_NOT_FOUND => {}
        Err(e) => return Err(format!("checking for claim before creating it: {e}")),
        Ok(None) => return Ok(()),
        Ok(Some((name, check_owner))) if !name.is_empty() => {
            // Named in the status, but perhaps deleted since: re-created then.
            if let Ok(claim) = store.get(RESOURCE_CLAIMS, ns, &name) {
                if !check_owner || is_for_pod(pod, &claim.value) {
                    return Ok(());
                }
                tracing::warn!(pod = %format!("{ns}/{}", text(pod, "/metadata/name")), claim = %name,
                    "claim that was created for the pod is no longer owned by the pod, creating a new one");
            }
        }
        Ok(Some(_)) => {}
    }
    let Some(template_name) = pc.get("resourceClaimTemplateName").and_then(Value::as_str) else {
        return Ok(());
    };
    // A claim created before a failed status update is picked up again.
    let claim_name = match find_pod_claim(store, pod, pc_name) {
        Some(name) => name,
        None => {
            let template = store
                .get(RESOURCE_CLAIM_TEMPLATES, ns, template_name)
                .map_err(|e| format!("resource claim template {template_name:?}: {}", e.message))?;
            let claim = claim_from_template(pod, pc_name, &template.value);
            store
                .create(RESOURCE_CLAIMS, Some(ns), claim)
                .map_err(|e| format!("create ResourceClaim : {}", e.message))?
                .value
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        }
    };
    created.push((pc_name.to_owned(), claim_name));
    Ok(())
}

/// The claim the controller creates for entry `pc_name` of `pod` from
/// `template`: a generated name from both names, the pod as controlling
/// owner, the template's labels and annotations plus the pod-claim-name
/// annotation, the template's claim spec.
fn claim_from_template(pod: &Value, pc_name: &str, template: &Value) -> Value {
    let mut annotations = template
        .pointer("/spec/metadata/annotations")
        .filter(|a| a.is_object())
        .cloned()
        .unwrap_or_else(|| json!({}));
    annotations[POD_CLAIM_NAME_ANNOTATION] = json!(pc_name);
    let pod_name = text(pod, "/metadata/name");
    let mut metadata = json!({
        "generateName": generate_name(pod_name, pc_name),
        "ownerReferences": [{
            "apiVersion": "v1",
            "kind": "Pod",
            "name": pod_name,
            "uid": text(pod, "/metadata/uid"),
            "controller": true,
        }],
        "annotations": annotations,
    });
    if let Some(labels) = template.pointer("/spec/metadata/labels").filter(|l| l.is_object()) {
        metadata["labels"] = labels.clone();
    }
    json!({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": metadata,
        "spec": template.pointer("/spec/spec").cloned().unwrap_or_else(|| json!({})),
    })
}

/// What the controller would make for a pending pod, without a store (for
/// `simulate`, which has no controller manager either): for each claim
/// entry naming a template that `template` finds (by name, in the pod's
/// namespace) and that the pod's status does not name yet, the claim made
/// from it, named `<pod>-<claim>-` and five characters drawn from the
/// names (not at random, so that a simulation is reproducible), with the
/// pod's `status.resourceClaimStatuses` entries naming them. Entries whose
/// template is missing are left out: the pod then waits, as it would.
pub fn offline_claims(pod: &Value, template: impl Fn(&str) -> Option<Value>) -> (Vec<Value>, Vec<Value>) {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let (mut claims, mut statuses) = (Vec::new(), Vec::new());
    let named: BTreeSet<&str> = list(pod, "/status/resourceClaimStatuses")
        .iter()
        .map(|s| text(s, "/name"))
        .collect();
    for pc in pod_claims(pod) {
        let pc_name = text(pc, "/name");
        let Some(t) = pc.get("resourceClaimTemplateName").and_then(Value::as_str) else {
            continue;
        };
        if named.contains(pc_name) {
            continue;
        }
        let Some(template) = template(t) else { continue };
        let mut claim = claim_from_template(pod, pc_name, &template);
        let base = generate_name(text(pod, "/metadata/name"), pc_name);
        // FNV-1a of the pod's key and the entry's name.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in format!(
            "{}/{}/{pc_name}",
            text(pod, "/metadata/namespace"),
            text(pod, "/metadata/name")
        )
        .bytes()
        {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        let suffix: String = (0..5)
            .map(|i| char::from(ALPHABET[((h >> (i * 8)) % ALPHABET.len() as u64) as usize]))
            .collect();
        let name = format!("{base}{suffix}");
        if let Some(m) = claim["metadata"].as_object_mut() {
            m.remove("generateName");
            m.insert("name".into(), json!(name));
            m.insert("namespace".into(), json!(text(pod, "/metadata/namespace")));
        }
        claims.push(claim);
        statuses.push(json!({"name": pc_name, "resourceClaimName": name}));
    }
    (claims, statuses)
}

/// `<pod>-<claim>-`; when that is over 57 characters both names are cut in
/// proportion to their lengths (the controller's rule, so that a long pod
/// name does not push the claim's name out), and the last hyphen is dropped.
pub(crate) fn generate_name(pod: &str, claim: &str) -> String {
    let full = format!("{pod}-{claim}-");
    if full.len() <= MAX_BASE_LEN {
        return full;
    }
    let cut = |s: &str| {
        let mut n = s.len() * MAX_BASE_LEN / full.len();
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        s[..n].to_owned()
    };
    format!("{}-{}", cut(pod), cut(claim))
}

/// `findPodResourceClaim`: a claim the pod controls that carries the
/// annotation for entry `pc_name` (the first, by name).
fn find_pod_claim(store: &Store, pod: &Value, pc_name: &str) -> Option<String> {
    let uid = text(pod, "/metadata/uid");
    let keys = store.claims.claims_by_owner.get(uid)?;
    keys.iter().find_map(|(ns, name)| {
        let claim = store.get(RESOURCE_CLAIMS, ns, name).ok()?;
        let controlled = controller_ref(&claim.value)
            .is_some_and(|o| o["apiVersion"] == "v1" && o["kind"] == "Pod" && o["uid"] == uid);
        let annotation = claim
            .value
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(POD_CLAIM_NAME_ANNOTATION))
            .and_then(Value::as_str);
        (controlled && annotation == Some(pc_name)).then(|| name.clone())
    })
}

/// `syncClaim`: drops from `reservedFor` the pods that are gone, replaced
/// or done; deallocates the claim when the last one goes (only a claim with
/// the delete-protection finalizer, which the scheduler puts on what it
/// allocates) and then removes the finalizer; deletes a claim generated for
/// a pod that will not run. Then the garbage collector's part: a claim whose
/// owning pods are all gone is deleted.
fn sync_claim(store: &mut Store, ns: &str, name: &str) -> Result<(), String> {
    let Ok(claim) = store.get(RESOURCE_CLAIMS, ns, name) else {
        return Ok(()); // gone
    };
    let mut claim = claim.value;
    let reserved = list(&claim, "/status/reservedFor");
    // Only pods are checked; other consumers (PodGroups) are kept.
    let remaining: Vec<Value> = reserved
        .iter()
        .filter(|r| {
            let pod_ref = text(r, "/apiGroup").is_empty() && text(r, "/resource") == "pods";
            !pod_ref
                || store
                    .get(PODS, ns, text(r, "/name"))
                    .is_ok_and(|p| text(&p.value, "/metadata/uid") == text(r, "/uid") && !pod_done(&p.value))
        })
        .cloned()
        .collect();
    if remaining.len() < reserved.len() {
        let mut v = (*claim).clone();
        let status = v["status"]
            .as_object_mut()
            .expect("a claim with reservations has a status");
        if remaining.is_empty() {
            status.remove("reservedFor");
            // Deallocated as the last user goes, so the next user gets a
            // fresh allocation; a claim without the finalizer was not
            // allocated by the scheduler and keeps its allocation.
            if has_finalizer(&claim) {
                status.remove("allocation");
            }
        } else {
            status.insert("reservedFor".into(), Value::Array(remaining.clone()));
        }
        claim = store
            .update(RESOURCE_CLAIMS, ns, name, Some("status"), v)
            .map_err(|e| e.message)?
            .value;
        if has_finalizer(&claim) && !has(&claim, "/status/allocation") {
            claim = remove_finalizer(store, &claim)?;
        }
    }
    // (The controller's branch for a claim being deleted, with its
    // deletionTimestamp set, is what `delete_claim` does before deleting:
    // the double deletes at once, so no claim is ever being deleted.)
    if remaining.is_empty()
        && let Some((pod_name, pod_uid)) = owning_pod(&claim)
        && let Ok(pod) = store.get(PODS, ns, &pod_name)
        && (text(&pod.value, "/metadata/uid") != pod_uid || pod_done(&pod.value))
    {
        // Generated for a pod that was replaced or will not run.
        return delete_claim(store, &claim, false);
    }
    // The garbage collector deletes a dependent whose owners are gone; with
    // reservations left and the finalizer on, its deletion would wait for
    // them, so here the claim stays until then.
    if (remaining.is_empty() || !has_finalizer(&claim)) && owners_gone(store, &claim) {
        return delete_claim(store, &claim, true);
    }
    Ok(())
}

/// Deletes a claim, as the controller (or, `by_gc`, the garbage collector,
/// with a UID precondition) asks. kube-apiserver would only mark a claim
/// with the finalizer as being deleted, and the controller then clear its
/// allocation and remove the finalizer; the double deletes at once, so those
/// two writes come first.
fn delete_claim(store: &mut Store, claim: &Value, by_gc: bool) -> Result<(), String> {
    let (ns, name) = (text(claim, "/metadata/namespace"), text(claim, "/metadata/name"));
    let mut claim = claim.clone();
    if has_finalizer(&claim) {
        if has(&claim, "/status/allocation") {
            let mut v = claim.clone();
            if let Some(s) = v["status"].as_object_mut() {
                s.remove("allocation");
            }
            claim = (*store
                .update(RESOURCE_CLAIMS, ns, name, Some("status"), v)
                .map_err(|e| e.message)?
                .value)
                .clone();
        }
        claim = (*remove_finalizer(store, &claim)?).clone();
    }
    let precondition = by_gc.then(|| json!({"uid": text(&claim, "/metadata/uid")}));
    store
        .delete(RESOURCE_CLAIMS, ns, name, precondition.as_ref())
        .map_err(|e| format!("delete unused generated claim {ns}/{name}: {}", e.message))?;
    Ok(())
}

/// Updates the claim without the delete-protection finalizer.
fn remove_finalizer(store: &mut Store, claim: &Value) -> Result<std::sync::Arc<Value>, String> {
    let (ns, name) = (text(claim, "/metadata/namespace"), text(claim, "/metadata/name"));
    let mut v = claim.clone();
    if let Some(Value::Array(f)) = v["metadata"].get_mut("finalizers") {
        f.retain(|f| f != DELETE_PROTECTION_FINALIZER);
        if f.is_empty() {
            v["metadata"].as_object_mut().expect("object").remove("finalizers");
        }
    }
    Ok(store
        .update(RESOURCE_CLAIMS, ns, name, None, v)
        .map_err(|e| e.message)?
        .value)
}

/// Whether a claim has owners, all of them pods, none of which exists any
/// more (by UID). Owners of other kinds are the garbage collector's to
/// judge, which the double does not play: such a claim is left alone.
fn owners_gone(store: &Store, claim: &Value) -> bool {
    let ns = text(claim, "/metadata/namespace");
    let owners = list(claim, "/metadata/ownerReferences");
    !owners.is_empty()
        && owners.iter().all(|o| {
            o["apiVersion"] == "v1"
                && o["kind"] == "Pod"
                && !store
                    .get(PODS, ns, text(o, "/name"))
                    .is_ok_and(|p| text(&p.value, "/metadata/uid") == text(o, "/uid"))
        })
}

/// What `resourceclaim.Name` says when a template's claim is not in the
/// pod's status yet (`ErrClaimNotFound`).
const CLAIM_NOT_FOUND: &str = "ResourceClaim not created yet";

/// `resourceclaim.Name`: the claim an entry of the pod uses, `None` when it
/// was decided that none is needed, and whether it must be checked to be
/// the pod's own (generated from a template).
fn claim_name(pod: &Value, pc: &Value) -> Result<Option<(String, bool)>, &'static str> {
    if let Some(name) = pc.get("resourceClaimName").and_then(Value::as_str) {
        return Ok(Some((name.to_owned(), false)));
    }
    if !has(pc, "/resourceClaimTemplateName") {
        return Err("none of the supported fields are set");
    }
    let status = list(pod, "/status/resourceClaimStatuses")
        .iter()
        .find(|s| s["name"] == pc["name"])
        .ok_or(CLAIM_NOT_FOUND)?;
    Ok(status
        .get("resourceClaimName")
        .and_then(Value::as_str)
        .map(|n| (n.to_owned(), true)))
}

/// The claims a pod's entries resolve to (the claim index's keys).
fn pod_claim_keys(pod: &Value) -> Vec<String> {
    pod_claims(pod)
        .iter()
        .filter_map(|pc| claim_name(pod, pc).ok().flatten().map(|(n, _)| n))
        .collect()
}

/// The templates a pod's entries name (the template index's keys).
fn pod_template_keys(pod: &Value) -> Vec<String> {
    pod_claims(pod)
        .iter()
        .filter_map(|pc| pc.get("resourceClaimTemplateName").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

/// Moves `pod` in a pod index from the keys of its version `prev` to those
/// of `now` (`None`: not there).
fn reindex(
    index: &mut BTreeMap<Key, BTreeSet<String>>,
    ns: &str,
    pod: &str,
    prev: Option<&Value>,
    now: Option<&Value>,
    keys: fn(&Value) -> Vec<String>,
) {
    for k in prev.map(keys).unwrap_or_default() {
        let key = (ns.to_owned(), k);
        if let Some(set) = index.get_mut(&key) {
            set.remove(pod);
            if set.is_empty() {
                index.remove(&key);
            }
        }
    }
    for k in now.map(keys).unwrap_or_default() {
        index.entry((ns.to_owned(), k)).or_default().insert(pod.to_owned());
    }
}

/// The UIDs of the pods among a claim's owners.
fn pod_owner_uids(claim: &Value) -> Vec<String> {
    list(claim, "/metadata/ownerReferences")
        .iter()
        .filter(|o| o["apiVersion"] == "v1" && o["kind"] == "Pod")
        .map(|o| text(o, "/uid").to_owned())
        .collect()
}

/// `metav1.GetControllerOf`: the owner reference marked as controller.
fn controller_ref(obj: &Value) -> Option<&Value> {
    list(obj, "/metadata/ownerReferences")
        .iter()
        .find(|o| o.get("controller").and_then(Value::as_bool) == Some(true))
}

/// `owningPod`: the pod a claim was generated for (its controlling owner
/// reference to a v1 Pod), by name and UID.
fn owning_pod(claim: &Value) -> Option<(String, String)> {
    list(claim, "/metadata/ownerReferences")
        .iter()
        .find(|o| {
            o.get("controller").and_then(Value::as_bool) == Some(true) && o["apiVersion"] == "v1" && o["kind"] == "Pod"
        })
        .map(|o| (text(o, "/name").to_owned(), text(o, "/uid").to_owned()))
}

/// `resourceclaim.IsForPod`: the claim is in the pod's namespace and the
/// pod is its controller.
fn is_for_pod(pod: &Value, claim: &Value) -> bool {
    text(claim, "/metadata/namespace") == text(pod, "/metadata/namespace")
        && controller_ref(claim).is_some_and(|o| text(o, "/uid") == text(pod, "/metadata/uid"))
}

/// `resourceclaim.IsReservedForPod`.
fn reserved_for_pod(pod: &Value, claim: &Value) -> bool {
    let uid = text(pod, "/metadata/uid");
    list(claim, "/status/reservedFor")
        .iter()
        .any(|r| text(r, "/uid") == uid)
}

/// `podutil.IsPodPhaseTerminal`.
fn pod_terminal(pod: &Value) -> bool {
    matches!(text(pod, "/status/phase"), "Succeeded" | "Failed")
}

/// `isPodDone`: none of its containers runs or ever will.
fn pod_done(pod: &Value) -> bool {
    pod_terminal(pod) || (has(pod, "/metadata/deletionTimestamp") && node_name(pod).is_empty())
}

fn has_finalizer(claim: &Value) -> bool {
    list(claim, "/metadata/finalizers")
        .iter()
        .any(|f| f == DELETE_PROTECTION_FINALIZER)
}

fn pod_claims(pod: &Value) -> &[Value] {
    list(pod, "/spec/resourceClaims")
}

fn node_name(pod: &Value) -> &str {
    text(pod, "/spec/nodeName")
}

fn list<'a>(v: &'a Value, ptr: &str) -> &'a [Value] {
    v.pointer(ptr).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn text<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// Set and not null.
fn has(v: &Value, ptr: &str) -> bool {
    v.pointer(ptr).is_some_and(|x| !x.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::NAMESPACES;

    /// Offline, a pod's template claims are made as the controller makes
    /// them, under names that do not change from one run to the next; a
    /// claim the status names already, or whose template is missing, is not.
    #[test]
    fn offline_claims_are_made_from_templates_reproducibly() {
        let pod = json!({"metadata": {"name": "trainer", "namespace": "ml", "uid": "u1"},
            "spec": {"resourceClaims": [
                {"name": "gpu", "resourceClaimTemplateName": "one-gpu"},
                {"name": "nic", "resourceClaimTemplateName": "missing"},
                {"name": "done", "resourceClaimTemplateName": "one-gpu"},
                {"name": "plain", "resourceClaimName": "shared"}]},
            "status": {"resourceClaimStatuses": [{"name": "done", "resourceClaimName": "trainer-done-abcde"}]}});
        let template = |name: &str| {
            (name == "one-gpu").then(|| {
                json!({"spec": {"metadata": {"labels": {"team": "a"}},
                "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu"}}]}}}})
            })
        };
        let (claims, statuses) = offline_claims(&pod, template);
        assert_eq!(claims.len(), 1);
        let c = &claims[0];
        let name = c["metadata"]["name"].as_str().unwrap();
        assert!(
            name.starts_with("trainer-gpu-") && name.len() == "trainer-gpu-".len() + 5,
            "{name}"
        );
        assert_eq!(c["metadata"]["namespace"], "ml");
        assert_eq!(c["metadata"]["labels"]["team"], "a");
        assert_eq!(c["metadata"]["ownerReferences"][0]["uid"], "u1");
        assert_eq!(c["metadata"]["annotations"][POD_CLAIM_NAME_ANNOTATION], "gpu");
        assert_eq!(statuses, [json!({"name": "gpu", "resourceClaimName": name})]);
        assert_eq!(offline_claims(&pod, template).0, claims, "the same names every run");
    }

    const NS: &str = "ml";

    fn store() -> Store {
        let mut s = Store::new(10_000, 1);
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}});
        s.create(NAMESPACES, None, ns).unwrap();
        s
    }

    fn get(s: &Store, res: usize, name: &str) -> Value {
        (*s.get(res, NS, name).unwrap().value).clone()
    }

    fn claims(s: &Store) -> Vec<Value> {
        s.all(RESOURCE_CLAIMS).map(|c| (*c.value).clone()).collect()
    }

    fn uid(s: &Store, pod: &str) -> String {
        text(&get(s, PODS, pod), "/metadata/uid").to_owned()
    }

    fn template(s: &mut Store, name: &str, metadata: Value) {
        let t = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name},
            "spec": {"metadata": metadata,
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}});
        s.create(RESOURCE_CLAIM_TEMPLATES, Some(NS), t).unwrap();
    }

    /// A pod with one claim entry `gpu`, from a template or naming a claim.
    fn pod(s: &mut Store, name: &str, entry: Value) {
        let mut entry = entry;
        entry["name"] = json!("gpu");
        let p = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "app:1", "resources": {"claims": [{"name": "gpu"}]}}],
                "resourceClaims": [entry]}});
        s.create(PODS, Some(NS), p).unwrap();
    }

    fn shared_claim(s: &mut Store, name: &str) {
        let c = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}});
        s.create(RESOURCE_CLAIMS, Some(NS), c).unwrap();
    }

    /// Allocates a claim and reserves it for `pods`, as the scheduler does
    /// (the finalizer first, then the status).
    fn allocate(s: &mut Store, claim: &str, pods: &[&str], finalizer: bool) {
        let mut c = get(s, RESOURCE_CLAIMS, claim);
        if finalizer {
            c["metadata"]["finalizers"] = json!([DELETE_PROTECTION_FINALIZER]);
            c = (*s.update(RESOURCE_CLAIMS, NS, claim, None, c).unwrap().value).clone();
        }
        let reserved: Vec<Value> = pods
            .iter()
            .map(|p| json!({"resource": "pods", "name": p, "uid": uid(s, p)}))
            .collect();
        c["status"] = json!({"allocation": {
            "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}},
            "reservedFor": reserved});
        s.update(RESOURCE_CLAIMS, NS, claim, Some("status"), c).unwrap();
    }

    fn set_phase(s: &mut Store, pod: &str, phase: &str) {
        let mut p = get(s, PODS, pod);
        p["status"]["phase"] = json!(phase);
        s.update(PODS, NS, pod, Some("status"), p).unwrap();
    }

    fn reserved(c: &Value) -> Vec<&str> {
        list(c, "/status/reservedFor")
            .iter()
            .map(|r| text(r, "/name"))
            .collect()
    }

    #[test]
    fn a_pod_gets_its_claim_from_its_template() {
        let mut s = store();
        template(
            &mut s,
            "gpu-template",
            json!({"labels": {"team": "ml"}, "annotations": {"note": "from the template"}}),
        );
        pod(&mut s, "trainer", json!({"resourceClaimTemplateName": "gpu-template"}));
        let all = claims(&s);
        assert_eq!(all.len(), 1);
        let c = &all[0];
        let name = text(c, "/metadata/name");
        assert_eq!(c["metadata"]["generateName"], "trainer-gpu-");
        assert!(
            name.starts_with("trainer-gpu-") && name.len() == "trainer-gpu-".len() + 5,
            "{name}"
        );
        assert_eq!(
            c["metadata"]["ownerReferences"],
            json!([{"apiVersion": "v1", "kind": "Pod", "name": "trainer", "uid": uid(&s, "trainer"), "controller": true}])
        );
        assert_eq!(
            c["metadata"]["annotations"],
            json!({"note": "from the template", POD_CLAIM_NAME_ANNOTATION: "gpu"})
        );
        assert_eq!(c["metadata"]["labels"], json!({"team": "ml"}));
        assert_eq!(
            c["spec"]["devices"]["requests"][0]["exactly"],
            json!({"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}),
            "the template's spec, defaulted as any claim"
        );
        assert_eq!(
            get(&s, PODS, "trainer")["status"]["resourceClaimStatuses"],
            json!([{"name": "gpu", "resourceClaimName": name}])
        );
    }

    #[test]
    fn changes_do_not_make_a_second_claim() {
        let mut s = store();
        template(&mut s, "t", json!({}));
        pod(&mut s, "p", json!({"resourceClaimTemplateName": "t"}));
        let name = text(&claims(&s)[0], "/metadata/name").to_owned();
        let mut p = get(&s, PODS, "p");
        p["metadata"]["labels"] = json!({"touched": "yes"});
        s.update(PODS, NS, "p", None, p).unwrap();
        let mut t = get(&s, RESOURCE_CLAIM_TEMPLATES, "t");
        t["metadata"]["labels"] = json!({"touched": "yes"});
        s.update(RESOURCE_CLAIM_TEMPLATES, NS, "t", None, t).unwrap();
        let mut c = get(&s, RESOURCE_CLAIMS, &name);
        c["metadata"]["labels"] = json!({"touched": "yes"});
        s.update(RESOURCE_CLAIMS, NS, &name, None, c).unwrap();
        assert_eq!(claims(&s).len(), 1);
        assert_eq!(
            get(&s, PODS, "p")["status"]["resourceClaimStatuses"],
            json!([{"name": "gpu", "resourceClaimName": name}])
        );
    }

    #[test]
    fn a_claim_the_pod_already_owns_is_taken_up() {
        // As when the controller created the claim but failed to update the
        // pod's status: the next sync finds it by owner and annotation.
        let mut s = store();
        s.resourceclaim_controller = false;
        template(&mut s, "t", json!({}));
        pod(&mut s, "p", json!({"resourceClaimTemplateName": "t"}));
        let mut orphan = claim_from_template(&get(&s, PODS, "p"), "gpu", &get(&s, RESOURCE_CLAIM_TEMPLATES, "t"));
        orphan["metadata"]["name"] = json!("earlier");
        s.create(RESOURCE_CLAIMS, Some(NS), orphan).unwrap();
        s.resourceclaim_controller = true;
        let mut p = get(&s, PODS, "p");
        p["metadata"]["labels"] = json!({"touched": "yes"});
        s.update(PODS, NS, "p", None, p).unwrap();
        assert_eq!(claims(&s).len(), 1);
        assert_eq!(
            get(&s, PODS, "p")["status"]["resourceClaimStatuses"],
            json!([{"name": "gpu", "resourceClaimName": "earlier"}])
        );
    }

    #[test]
    fn a_template_created_later_makes_the_claim() {
        let mut s = store();
        pod(&mut s, "p", json!({"resourceClaimTemplateName": "late"}));
        assert!(claims(&s).is_empty());
        assert!(get(&s, PODS, "p")["status"].get("resourceClaimStatuses").is_none());
        template(&mut s, "late", json!({}));
        let all = claims(&s);
        assert_eq!(all.len(), 1);
        assert_eq!(
            get(&s, PODS, "p")["status"]["resourceClaimStatuses"][0]["resourceClaimName"],
            all[0]["metadata"]["name"]
        );
    }

    #[test]
    fn an_entry_naming_a_claim_creates_nothing() {
        let mut s = store();
        pod(&mut s, "p", json!({"resourceClaimName": "shared"}));
        assert!(claims(&s).is_empty());
        assert!(get(&s, PODS, "p")["status"].get("resourceClaimStatuses").is_none());
    }

    #[test]
    fn a_shared_claim_is_deallocated_when_its_last_pod_goes() {
        let mut s = store();
        shared_claim(&mut s, "shared");
        pod(&mut s, "a", json!({"resourceClaimName": "shared"}));
        pod(&mut s, "b", json!({"resourceClaimName": "shared"}));
        allocate(&mut s, "shared", &["a", "b"], true);
        s.delete(PODS, NS, "a", None).unwrap();
        let c = get(&s, RESOURCE_CLAIMS, "shared");
        assert_eq!(reserved(&c), ["b"], "the deleted pod's reservation is dropped");
        assert!(has(&c, "/status/allocation"), "b still uses it");
        assert!(has_finalizer(&c));
        set_phase(&mut s, "b", "Succeeded");
        let c = get(&s, RESOURCE_CLAIMS, "shared");
        assert!(reserved(&c).is_empty(), "a done pod's reservation is dropped");
        assert!(!has(&c, "/status/allocation"), "deallocated: nobody is left");
        assert!(!has_finalizer(&c), "and its finalizer removed");
    }

    #[test]
    fn without_the_finalizer_the_allocation_stays() {
        let mut s = store();
        shared_claim(&mut s, "shared");
        pod(&mut s, "a", json!({"resourceClaimName": "shared"}));
        allocate(&mut s, "shared", &["a"], false);
        s.delete(PODS, NS, "a", None).unwrap();
        let c = get(&s, RESOURCE_CLAIMS, "shared");
        assert!(reserved(&c).is_empty());
        assert!(has(&c, "/status/allocation"));
    }

    #[test]
    fn a_reservation_for_a_replaced_pod_is_dropped() {
        let mut s = store();
        shared_claim(&mut s, "shared");
        pod(&mut s, "a", json!({"resourceClaimName": "shared"}));
        allocate(&mut s, "shared", &["a"], true);
        let mut c = get(&s, RESOURCE_CLAIMS, "shared");
        c["status"]["reservedFor"][0]["uid"] = json!("an-earlier-pod-a");
        s.update(RESOURCE_CLAIMS, NS, "shared", Some("status"), c).unwrap();
        let c = get(&s, RESOURCE_CLAIMS, "shared");
        assert!(reserved(&c).is_empty() && !has(&c, "/status/allocation"));
    }

    #[test]
    fn a_generated_claim_goes_with_its_pod() {
        let mut s = store();
        template(&mut s, "t", json!({}));
        pod(&mut s, "p", json!({"resourceClaimTemplateName": "t"}));
        let name = text(&claims(&s)[0], "/metadata/name").to_owned();
        allocate(&mut s, &name, &["p"], true);
        let mut watch = s
            .watch(
                RESOURCE_CLAIMS,
                Default::default(),
                crate::WatchFrom::Version(s.resource_version()),
                false,
                false,
            )
            .unwrap();
        s.delete(PODS, NS, "p", None).unwrap();
        assert!(claims(&s).is_empty(), "deleted, as the garbage collector deletes it");
        let mut seen = Vec::new();
        while let Ok(crate::WatchMsg::Event(kind, change)) = watch.try_recv() {
            let v = &change.object.value;
            seen.push((kind, reserved(v).len(), has(v, "/status/allocation"), has_finalizer(v)));
        }
        assert_eq!(
            seen,
            [
                (EventType::Modified, 0, false, true),
                (EventType::Modified, 0, false, false),
                (EventType::Deleted, 0, false, false),
            ],
            "released and deallocated, the finalizer removed, then deleted"
        );
    }

    #[test]
    fn a_generated_claim_goes_when_its_pod_is_done() {
        let mut s = store();
        template(&mut s, "t", json!({}));
        pod(&mut s, "p", json!({"resourceClaimTemplateName": "t"}));
        let name = text(&claims(&s)[0], "/metadata/name").to_owned();
        allocate(&mut s, &name, &["p"], true);
        set_phase(&mut s, "p", "Failed");
        assert!(claims(&s).is_empty());
        assert!(s.get(PODS, NS, "p").is_ok());
    }

    #[test]
    fn a_generated_claim_deleted_by_hand_is_made_again() {
        let mut s = store();
        template(&mut s, "t", json!({}));
        pod(&mut s, "p", json!({"resourceClaimTemplateName": "t"}));
        let first = text(&claims(&s)[0], "/metadata/name").to_owned();
        s.delete(RESOURCE_CLAIMS, NS, &first, None).unwrap();
        let all = claims(&s);
        assert_eq!(all.len(), 1);
        let second = text(&all[0], "/metadata/name");
        assert_ne!(second, first);
        assert_eq!(
            get(&s, PODS, "p")["status"]["resourceClaimStatuses"],
            json!([{"name": "gpu", "resourceClaimName": second}])
        );
    }

    #[test]
    fn a_bound_pod_reserves_its_allocated_claim() {
        let mut s = store();
        shared_claim(&mut s, "shared");
        pod(&mut s, "a", json!({"resourceClaimName": "shared"}));
        allocate(&mut s, "shared", &[], true);
        s.bind(NS, "a", &json!({"target": {"name": "n1"}})).unwrap();
        let c = get(&s, RESOURCE_CLAIMS, "shared");
        assert_eq!(
            c["status"]["reservedFor"],
            json!([{"resource": "pods", "name": "a", "uid": uid(&s, "a")}])
        );
    }

    #[test]
    fn switched_off_it_does_nothing() {
        let mut s = store();
        s.resourceclaim_controller = false;
        template(&mut s, "t", json!({}));
        pod(&mut s, "p", json!({"resourceClaimTemplateName": "t"}));
        assert!(claims(&s).is_empty());
    }

    #[test]
    fn generated_names_cut_both_names_in_proportion() {
        assert_eq!(generate_name("web", "gpu"), "web-gpu-");
        let (pod, claim) = ("p".repeat(49), "gpu123");
        assert_eq!(generate_name(&pod, claim), format!("{pod}-{claim}-"), "57 is kept");
        // 60 + 3 + 2 = 65 characters: 60 * 57 / 65 = 52 and 3 * 57 / 65 = 2.
        assert_eq!(generate_name(&"p".repeat(60), "gpu"), format!("{}-gp", "p".repeat(52)));
    }
}
