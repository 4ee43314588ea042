//! kube-controller-manager's podgroup-protection controller
//! (`pkg/controller/scheduling/podgroupprotection`, v1.36), played by the
//! store so that PodGroups go away when deleted with no controller
//! manager around.
//!
//! Every new PodGroup carries `scheduling.k8s.io/podgroup-protection`
//! (the `PodGroupProtection` admission plugin puts it there), so a DELETE
//! only marks it (`deletionTimestamp`). The controller then removes the
//! finalizer once no active pod uses the group: none in its namespace that
//! is not `Succeeded` or `Failed` names it in `spec.schedulingGroup.
//! podGroupName`. The update that empties the finalizers deletes the group,
//! as kube-apiserver deletes an object being deleted whose last finalizer
//! goes.
//!
//! As in the controller, [`observe`] is the informers' event handlers (a
//! PodGroup being deleted with the finalizer is queued; so is the group of
//! a pod that is deleted, replaced or done) and keeps the index of active
//! pods by group, and [`run`] is the worker. As the resourceclaim
//! controller's, the work runs synchronously right after the write that
//! causes it, through the store's own `update`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::Value;

use crate::resources::{POD_GROUPS, PODS};
use crate::store::{Change, EventType, Key, Store};
use crate::validation::pod_group::PROTECTION_FINALIZER;

/// Work items handled in one run before giving up on what is left.
const MAX_ITEMS_PER_RUN: usize = 100_000;

/// The controller's queue (PodGroup keys) and its pod index. The index is
/// kept up to date whether or not the controller runs.
#[derive(Debug, Default)]
pub(crate) struct Controller {
    queue: VecDeque<Key>,
    queued: BTreeSet<Key>,
    running: bool,
    /// `activePodSchedulingGroupIndex`: `(namespace, group)` to the pods
    /// that are not terminated and name the group.
    active_pods: BTreeMap<Key, BTreeSet<String>>,
}

impl Controller {
    fn add(&mut self, key: Key) {
        if self.queued.insert(key.clone()) {
            self.queue.push_back(key);
        }
    }

    fn pop(&mut self) -> Option<Key> {
        let key = self.queue.pop_front()?;
        self.queued.remove(&key);
        Some(key)
    }

    /// Whether an active pod names the group `key`.
    pub(crate) fn in_use(&self, key: &Key) -> bool {
        self.active_pods.get(key).is_some_and(|p| !p.is_empty())
    }
}

fn text<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// The group a pod names, `(namespace, name)`.
fn group_of(pod: &Value) -> Option<Key> {
    let name = pod
        .pointer("/spec/schedulingGroup/podGroupName")
        .and_then(Value::as_str)?;
    Some((text(pod, "/metadata/namespace").to_owned(), name.to_owned()))
}

/// `isPodTerminated`.
fn terminated(pod: &Value) -> bool {
    matches!(text(pod, "/status/phase"), "Succeeded" | "Failed")
}

/// `protectionutil.IsDeletionCandidate`: being deleted, with the finalizer.
pub(crate) fn deletion_candidate(pg: &Value) -> bool {
    pg.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
        && pg
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| f.iter().any(|f| f == PROTECTION_FINALIZER))
}

/// The event handlers; called by the store for every change.
pub(crate) fn observe(store: &mut Store, change: &Change) {
    let on = store.podgroup_protection_controller;
    let deleted = change.kind == EventType::Deleted;
    match change.res {
        PODS => {
            let old = change.prev.as_deref();
            let new = (!deleted).then_some(&*change.object.value);
            let index = &mut store.pod_groups.active_pods;
            let pod = text(&change.object.value, "/metadata/name");
            if let Some(key) = old.and_then(group_of)
                && let Some(set) = index.get_mut(&key)
            {
                set.remove(pod);
                if set.is_empty() {
                    index.remove(&key);
                }
            }
            if let Some(new) = new
                && !terminated(new)
                && let Some(key) = group_of(new)
            {
                index.entry(key).or_default().insert(pod.to_owned());
            }
            if !on {
                return;
            }
            // `handlePodChange`: a pod that is done, replaced (another UID
            // under the same name) or deleted may have been the last user.
            let c = &mut store.pod_groups;
            if let Some(new) = new
                && terminated(new)
                && let Some(key) = group_of(new)
            {
                c.add(key);
            }
            if let (Some(old), Some(new)) = (old, new)
                && text(old, "/metadata/uid") != text(new, "/metadata/uid")
                && let Some(key) = group_of(old)
            {
                c.add(key);
            }
            if new.is_none()
                && let Some(key) = old.or(Some(&*change.object.value)).and_then(group_of)
            {
                c.add(key);
            }
        }
        // `handlePodGroupUpdate`, on add and update.
        POD_GROUPS if on && !deleted && deletion_candidate(&change.object.value) => {
            let v = &change.object.value;
            let key = (
                text(v, "/metadata/namespace").to_owned(),
                text(v, "/metadata/name").to_owned(),
            );
            store.pod_groups.add(key);
        }
        _ => {}
    }
}

/// The worker: handles queued PodGroups until none is left. Re-entrant
/// calls (from its own writes) return at once.
pub(crate) fn run(store: &mut Store) {
    if store.pod_groups.running || store.pod_groups.queue.is_empty() {
        return;
    }
    store.pod_groups.running = true;
    let mut handled = 0;
    while let Some(key) = store.pod_groups.pop() {
        handled += 1;
        if handled > MAX_ITEMS_PER_RUN {
            tracing::error!("podgroup-protection controller does not converge; dropping its queue");
            store.pod_groups.queue.clear();
            store.pod_groups.queued.clear();
            break;
        }
        if let Err(error) = sync(store, &key) {
            // The controller retries with backoff; here the next change that
            // queues the group retries it.
            tracing::warn!(podgroup = %format!("{}/{}", key.0, key.1), %error, "podgroup-protection controller: work item failed");
        }
    }
    store.pod_groups.running = false;
}

/// `processPodGroup`: a group being deleted that no active pod uses loses
/// its finalizer.
fn sync(store: &mut Store, key: &Key) -> Result<(), String> {
    let Ok(pg) = store.get(POD_GROUPS, &key.0, &key.1) else {
        return Ok(()); // gone
    };
    if !deletion_candidate(&pg.value) || store.pod_groups.in_use(key) {
        return Ok(());
    }
    let mut v = (*pg.value).clone();
    if let Some(Value::Array(f)) = v["metadata"].get_mut("finalizers") {
        f.retain(|f| f != PROTECTION_FINALIZER);
    }
    store
        .update(POD_GROUPS, &key.0, &key.1, None, v)
        .map_err(|e| format!("removing the protection finalizer: {}", e.message))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::resources::NAMESPACES;

    const NS: &str = "ml";

    fn store() -> Store {
        let mut s = Store::new(10_000, 1);
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}});
        s.create(NAMESPACES, None, ns).unwrap();
        s
    }

    fn group(s: &mut Store, name: &str) {
        let pg = json!({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": name},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}});
        s.create(POD_GROUPS, Some(NS), pg).unwrap();
    }

    fn member(s: &mut Store, name: &str, group: &str) {
        let p = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "app:1"}], "schedulingGroup": {"podGroupName": group}}});
        s.create(PODS, Some(NS), p).unwrap();
    }

    fn get(s: &Store, name: &str) -> Option<Value> {
        s.get(POD_GROUPS, NS, name).ok().map(|g| (*g.value).clone())
    }

    #[test]
    fn an_unused_group_goes_when_deleted() {
        let mut s = store();
        group(&mut s, "train");
        assert_eq!(
            get(&s, "train").unwrap()["metadata"]["finalizers"],
            json!([PROTECTION_FINALIZER])
        );
        let answer = s.delete(POD_GROUPS, NS, "train", None).unwrap();
        assert!(
            answer.value["metadata"]["deletionTimestamp"].is_string(),
            "the DELETE answers the marked group"
        );
        assert_eq!(answer.value["metadata"]["deletionGracePeriodSeconds"], 0);
        assert!(get(&s, "train").is_none(), "the controller let it go");
    }

    #[test]
    fn a_group_in_use_stays_until_its_pods_are_done_or_gone() {
        let mut s = store();
        group(&mut s, "train");
        member(&mut s, "a", "train");
        member(&mut s, "b", "train");
        member(&mut s, "other", "elsewhere");
        s.delete(POD_GROUPS, NS, "train", None).unwrap();
        let held = get(&s, "train").expect("held by its finalizer");
        assert!(deletion_candidate(&held));
        s.delete(POD_GROUPS, NS, "train", None).unwrap();
        assert!(get(&s, "train").is_some(), "a second DELETE changes nothing");
        s.delete(PODS, NS, "a", None).unwrap();
        assert!(get(&s, "train").is_some(), "b still uses it");
        let mut b = (*s.get(PODS, NS, "b").unwrap().value).clone();
        b["status"]["phase"] = json!("Succeeded");
        s.update(PODS, NS, "b", Some("status"), b).unwrap();
        assert!(get(&s, "train").is_none(), "its last pod is done");
    }

    #[test]
    fn switched_off_the_group_is_held_until_its_finalizer_is_removed() {
        let mut s = store();
        s.podgroup_protection_controller = false;
        group(&mut s, "train");
        s.delete(POD_GROUPS, NS, "train", None).unwrap();
        let mut held = get(&s, "train").expect("held by its finalizer");
        let created = s.create(
            POD_GROUPS,
            Some(NS),
            json!({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": "train"},
                "spec": {"schedulingPolicy": {"basic": {}}}}),
        );
        assert_eq!(
            created.unwrap_err().message,
            "object is being deleted: podgroups.scheduling.k8s.io \"train\" already exists"
        );
        held["metadata"]["finalizers"] = json!([]);
        let answer = s.update(POD_GROUPS, NS, "train", None, held).unwrap();
        assert_eq!(answer.value["metadata"]["finalizers"], json!([]));
        assert!(get(&s, "train").is_none(), "emptied, it is deleted");
    }
}
