//! The object store: every resource kept as JSON under one monotonically
//! increasing resourceVersion, a bounded history of changes for watches to
//! resume from, and the open watches themselves.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, Namespace, Node, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::rbac::v1 as rbac;
use k8s_openapi::api::resource::v1 as dra;
use k8s_openapi::api::scheduling::v1alpha2 as scheduling;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use wasmsched_core::rng::Rng;

use crate::resources::{
    NAMESPACES, NODES, POD_GROUPS, PODS, PRIORITY_CLASSES, RESOURCES, ResourceDef, SERVICE_ACCOUNTS, WORKLOADS,
};
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::{admission, defaults, patch, podgroup_protection, resourceclaim, validation};

/// `(namespace, name)`; the namespace is `""` for cluster-scoped objects.
pub type Key = (String, String);

/// One stored object: the JSON value and its serialized bytes (served as is
/// by gets, lists and watches).
#[derive(Debug, Clone)]
pub struct Stored {
    /// The object, `metadata.resourceVersion` included.
    pub value: Arc<Value>,
    /// `value` serialized.
    pub json: Bytes,
}

impl Stored {
    fn new(value: Value) -> Self {
        let json = Bytes::from(serde_json::to_vec(&value).expect("JSON values serialize"));
        Self {
            value: Arc::new(value),
            json,
        }
    }
}

/// A watch event's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// `ADDED`
    Added,
    /// `MODIFIED`
    Modified,
    /// `DELETED`
    Deleted,
}

impl EventType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One change to one object, as kept in the history.
#[derive(Debug)]
pub struct Change {
    /// Index into [`RESOURCES`].
    pub res: usize,
    /// What happened.
    pub kind: EventType,
    /// The resourceVersion the change created.
    pub rv: u64,
    /// The object after the change (before it, for a deletion; with the
    /// deletion's resourceVersion).
    pub object: Stored,
    /// The object before the change, to tell watchers with selectors that an
    /// object entered or left their selection.
    pub prev: Option<Arc<Value>>,
}

/// What a watch selects.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only this namespace (namespaced resources).
    pub namespace: Option<String>,
    /// `labelSelector`.
    pub labels: LabelSelector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
}

impl Filter {
    /// Whether `obj` is selected.
    pub fn matches(&self, obj: &Value) -> bool {
        if let Some(ns) = &self.namespace
            && obj.pointer("/metadata/namespace").and_then(Value::as_str) != Some(ns.as_str())
        {
            return false;
        }
        self.labels.matches(obj.pointer("/metadata/labels")) && self.fields.matches(obj)
    }

    /// The event a watcher with this filter sees for `change`, if any: an
    /// object that starts matching is `ADDED`, one that stops is `DELETED`.
    fn view(&self, change: &Change) -> Option<EventType> {
        let now = self.matches(&change.object.value);
        let before = change.prev.as_deref().map(|p| self.matches(p));
        match (change.kind, before, now) {
            (EventType::Added, _, true) => Some(EventType::Added),
            (EventType::Deleted, _, true) => Some(EventType::Deleted),
            (EventType::Modified, Some(true), true) => Some(EventType::Modified),
            (EventType::Modified, Some(false) | None, true) => Some(EventType::Added),
            (EventType::Modified, Some(true), false) => Some(EventType::Deleted),
            _ => None,
        }
    }
}

/// What a watch stream carries.
#[derive(Debug)]
pub enum WatchMsg {
    /// An object event.
    Event(EventType, Arc<Change>),
    /// A synthetic `ADDED` for the initial state.
    Initial(Stored),
    /// `BOOKMARK` at a resourceVersion; `true` marks the end of the initial
    /// events of a streaming list.
    Bookmark(u64, bool),
    /// An `ERROR` event; the stream ends after it.
    Error(ApiError),
}

struct Watcher {
    res: usize,
    filter: Filter,
    bookmarks: bool,
    tx: mpsc::Sender<WatchMsg>,
}

/// Where a new watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchFrom {
    /// No resourceVersion or `0`: synthetic `ADDED` events for the current
    /// state, then changes.
    Now,
    /// Changes after this resourceVersion.
    Version(u64),
}

/// Events a watcher may fall behind by before the server closes its watch (the
/// client then resumes from its last resourceVersion), as kube-apiserver does
/// with slow watchers.
const WATCH_BUFFER: usize = 100_000;

/// A page of a list.
#[derive(Debug)]
pub struct Page {
    /// The list's resourceVersion.
    pub rv: u64,
    /// The objects.
    pub items: Vec<Stored>,
    /// The token for the next page.
    pub continue_token: Option<String>,
    /// Objects after this page, when there is a next page.
    pub remaining: Option<u64>,
}

/// A binding's outcome for statistics.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counters {
    /// Bindings that succeeded.
    pub bindings: u64,
    /// Bindings refused with 409 (already bound or UID mismatch).
    pub binding_conflicts: u64,
    /// Bindings to a pod that did not exist.
    pub binding_not_found: u64,
    /// Watches closed because their client fell behind.
    pub slow_watchers_closed: u64,
    /// Watches answered with 410 `Expired`.
    pub watches_expired: u64,
}

/// One successful binding: which pod (by UID), where, who asked, and when.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BindRecord {
    /// The pod's UID.
    pub uid: String,
    /// `namespace/name`.
    pub pod: String,
    /// The node it was bound to.
    pub node: String,
    /// The requester's `User-Agent` (empty when bound from Rust).
    pub binder: String,
    /// When the binding was applied.
    pub at: std::time::SystemTime,
}

/// The object store. All methods are synchronous and short; the server holds
/// it behind a mutex.
pub struct Store {
    rv: u64,
    objects: Vec<BTreeMap<Key, Stored>>,
    history: VecDeque<Arc<Change>>,
    window: usize,
    /// Every change after this resourceVersion is still in `history`.
    earliest: u64,
    watchers: Vec<Watcher>,
    rng: Rng,
    /// Counters for tests and benchmarks.
    pub counters: Counters,
    bind_log: Vec<BindRecord>,
    /// Whether a new namespace gets its `default` ServiceAccount (see
    /// [`Config::default_service_accounts`](crate::Config)).
    pub default_service_accounts: bool,
    /// Whether the store plays kube-controller-manager's resourceclaim
    /// controller (see [`Config::resourceclaim_controller`](crate::Config)).
    pub resourceclaim_controller: bool,
    /// That controller's queue and indexes.
    pub(crate) claims: resourceclaim::Controller,
    /// Whether the store plays kube-controller-manager's
    /// podgroup-protection controller (see
    /// [`Config::podgroup_protection_controller`](crate::Config)).
    pub podgroup_protection_controller: bool,
    /// That controller's queue and index.
    pub(crate) pod_groups: podgroup_protection::Controller,
}

impl Store {
    /// An empty store that keeps the last `window` changes for watches to
    /// resume from. `seed` makes UIDs and generated names reproducible.
    pub fn new(window: usize, seed: u64) -> Self {
        let mut store = Self {
            rv: 1,
            objects: RESOURCES.iter().map(|_| BTreeMap::new()).collect(),
            history: VecDeque::new(),
            window: window.max(1),
            earliest: 1,
            watchers: Vec::new(),
            rng: Rng::new(seed),
            counters: Counters::default(),
            bind_log: Vec::new(),
            default_service_accounts: true,
            resourceclaim_controller: true,
            claims: resourceclaim::Controller::default(),
            podgroup_protection_controller: true,
            pod_groups: podgroup_protection::Controller::default(),
        };
        // kube-apiserver creates the system classes at start.
        for (name, value, description) in validation::priority_class::SYSTEM_CLASSES {
            let pc = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": name}, "value": value, "description": description});
            store
                .create(PRIORITY_CLASSES, None, pc)
                .expect("the system classes are valid");
        }
        store
    }

    /// The current resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    /// The oldest resourceVersion a watch can start from.
    pub fn earliest(&self) -> u64 {
        self.earliest
    }

    /// Number of open watches.
    pub fn watch_count(&self) -> usize {
        self.watchers.len()
    }

    fn uid(&mut self) -> String {
        let a = self.rng.next_u64();
        uuid_v4(a, self.rng.next_u64())
    }

    fn suffix(&mut self) -> String {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        (0..5)
            .map(|_| ALPHABET[self.rng.below(ALPHABET.len() as u64) as usize] as char)
            .collect()
    }

    /// Records a change: bumps the resourceVersion, stores the object, keeps
    /// the change in the history and sends it to the matching watches.
    fn commit(&mut self, res: usize, key: Key, mut value: Value, kind: EventType) -> Stored {
        self.rv += 1;
        let rv = self.rv;
        value["metadata"]["resourceVersion"] = Value::String(rv.to_string());
        let stored = Stored::new(value);
        let prev = if kind == EventType::Deleted {
            self.objects[res].remove(&key).map(|s| s.value)
        } else {
            self.objects[res].insert(key, stored.clone()).map(|s| s.value)
        };
        let change = Arc::new(Change {
            res,
            kind,
            rv,
            object: stored.clone(),
            prev,
        });
        self.history.push_back(change.clone());
        while self.history.len() > self.window {
            let old = self.history.pop_front().expect("non-empty");
            self.earliest = old.rv;
        }
        let counters = &mut self.counters;
        self.watchers.retain(|w| {
            if w.res != res {
                return true;
            }
            let Some(view) = w.filter.view(&change) else {
                return true;
            };
            let ok = w.tx.try_send(WatchMsg::Event(view, change.clone())).is_ok();
            if !ok && !w.tx.is_closed() {
                counters.slow_watchers_closed += 1;
            }
            ok
        });
        // kube-controller-manager's resourceclaim controller reacts to the
        // change; its own writes come back here and queue more work, which
        // the outermost call runs.
        resourceclaim::observe(self, &change);
        resourceclaim::run(self);
        podgroup_protection::observe(self, &change);
        podgroup_protection::run(self);
        stored
    }

    /// Validates and normalizes `value` for resource `res`: decodes it as
    /// its k8s-openapi type (dropping unknown fields, as the API server
    /// prunes them) and applies the defaults the API server applies.
    fn normalize(&self, res: usize, value: Value) -> Result<Value, ApiError> {
        let def = &RESOURCES[res];
        let name = value
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let mut value = value;
        if res == POD_GROUPS {
            defaults::pod_group_times(&mut value);
        }
        let mut v = match (def.group, def.kind) {
            ("", "Pod") => round_trip::<Pod>(def, value)?,
            ("", "Node") => round_trip::<Node>(def, value)?,
            ("", "Namespace") => round_trip::<Namespace>(def, value)?,
            ("", "Event") => round_trip::<CoreEvent>(def, value)?,
            ("", "ConfigMap") => round_trip::<ConfigMap>(def, value)?,
            ("coordination.k8s.io", "Lease") => round_trip::<Lease>(def, value)?,
            ("events.k8s.io", "Event") => round_trip::<Event>(def, value)?,
            ("", "Service") => round_trip::<k8s_openapi::api::core::v1::Service>(def, value)?,
            ("", "ReplicationController") => {
                round_trip::<k8s_openapi::api::core::v1::ReplicationController>(def, value)?
            }
            ("apps", "ReplicaSet") => round_trip::<k8s_openapi::api::apps::v1::ReplicaSet>(def, value)?,
            ("apps", "StatefulSet") => round_trip::<k8s_openapi::api::apps::v1::StatefulSet>(def, value)?,
            ("", "ServiceAccount") => round_trip::<k8s_openapi::api::core::v1::ServiceAccount>(def, value)?,
            ("rbac.authorization.k8s.io", "ClusterRole") => round_trip::<rbac::ClusterRole>(def, value)?,
            ("rbac.authorization.k8s.io", "ClusterRoleBinding") => round_trip::<rbac::ClusterRoleBinding>(def, value)?,
            ("rbac.authorization.k8s.io", "Role") => round_trip::<rbac::Role>(def, value)?,
            ("rbac.authorization.k8s.io", "RoleBinding") => round_trip::<rbac::RoleBinding>(def, value)?,
            ("scheduling.k8s.io", "PriorityClass") => {
                round_trip::<k8s_openapi::api::scheduling::v1::PriorityClass>(def, value)?
            }
            ("resource.k8s.io", "DeviceClass") => round_trip::<dra::DeviceClass>(def, value)?,
            ("resource.k8s.io", "ResourceSlice") => round_trip::<dra::ResourceSlice>(def, value)?,
            ("resource.k8s.io", "ResourceClaim") => round_trip::<dra::ResourceClaim>(def, value)?,
            ("resource.k8s.io", "ResourceClaimTemplate") => round_trip::<dra::ResourceClaimTemplate>(def, value)?,
            ("scheduling.k8s.io", "PodGroup") => round_trip::<scheduling::PodGroup>(def, value)?,
            ("scheduling.k8s.io", "Workload") => round_trip::<scheduling::Workload>(def, value)?,
            _ => value,
        };
        match res {
            PODS => {
                let containers = v.pointer("/spec/containers").and_then(Value::as_array);
                if containers.is_none_or(|c| c.is_empty()) {
                    return Err(ApiError::invalid("", "Pod", &name, "spec.containers", "Required value"));
                }
                defaults::pod(&mut v);
            }
            PRIORITY_CLASSES => defaults::priority_class(&mut v),
            NAMESPACES => defaults::namespace(&mut v),
            POD_GROUPS => defaults::pod_group(&mut v),
            WORKLOADS => defaults::workload(&mut v),
            _ if (def.group, def.kind) == ("events.k8s.io", "Event") => defaults::event(&mut v),
            _ if def.group == "resource.k8s.io" => defaults::resource(def.kind, &mut v),
            _ => {}
        }
        Ok(v)
    }

    /// kube-apiserver's validation of the kinds it has rules for here
    /// (`old`: the object an update replaces; `status`: of the status
    /// subresource).
    fn validate(&self, res: usize, value: &Value, old: Option<&Value>, status: bool) -> Result<(), ApiError> {
        if matches!(res, POD_GROUPS | WORKLOADS) {
            return validation::pod_group::validate(res, value, old, status);
        }
        match (RESOURCES[res].group, RESOURCES[res].kind) {
            ("", "Pod") => validation::pod::validate(value),
            ("scheduling.k8s.io", "PriorityClass") => validation::priority_class::validate(value, old),
            ("resource.k8s.io", kind) => validation::resource::validate(self, kind, value),
            (group, "Event") => match old {
                None => validation::event::validate_create(value, !group.is_empty()),
                Some(_) => validation::event::validate_update(value, !group.is_empty()),
            },
            _ => Ok(()),
        }
    }

    /// Creates an object. `ns` is the namespace of the request path
    /// (namespaced resources); the object's own must be absent or equal.
    pub fn create(&mut self, res: usize, ns: Option<&str>, mut value: Value) -> Result<Stored, ApiError> {
        let def = &RESOURCES[res];
        if !def.stored {
            return Err(ApiError::method_not_allowed(format!(
                "{} cannot be created directly",
                def.plural
            )));
        }
        if !value.is_object() {
            return Err(ApiError::bad_request(format!(
                "{} in version {:?} cannot be handled as a {}: expected an object",
                def.kind, def.version, def.kind
            )));
        }
        let meta = value
            .as_object_mut()
            .expect("object")
            .entry("metadata")
            .or_insert_with(|| json!({}));
        if !meta.is_object() {
            return Err(ApiError::bad_request("metadata must be an object"));
        }
        let ns = scope(def, ns, meta.get("namespace").and_then(Value::as_str))?;
        if def.namespaced {
            meta["namespace"] = json!(ns);
        } else if let Some(m) = meta.as_object_mut() {
            m.remove("namespace");
        }
        let mut name = meta.get("name").and_then(Value::as_str).unwrap_or("").to_owned();
        if name.is_empty() {
            match meta.get("generateName").and_then(Value::as_str) {
                Some(prefix) if !prefix.is_empty() => {
                    let prefix = prefix.to_owned();
                    name = format!("{prefix}{}", self.suffix());
                }
                _ => {
                    return Err(ApiError::invalid(
                        def.group,
                        def.kind,
                        "",
                        "metadata.name",
                        "Required value: name or generateName is required",
                    ));
                }
            }
        }
        check_name(def, &name)?;
        let uid = self.uid();
        let meta = value["metadata"].as_object_mut().expect("object");
        meta.insert("name".into(), json!(name));
        meta.insert("uid".into(), json!(uid));
        meta.insert("creationTimestamp".into(), json!(now()));
        meta.remove("resourceVersion");
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
        let key = (ns.clone(), name.clone());
        if let Some(existing) = self.objects[res].get(&key) {
            let mut e = ApiError::already_exists(def.group, def.plural, &name);
            if existing.value.pointer("/metadata/deletionTimestamp").is_some() {
                e.message = format!("object is being deleted: {}", e.message);
            }
            return Err(e);
        }
        let mut value = self.normalize(res, value)?;
        // Mutating admission, the strategy's preparation, validation, then
        // validating admission, as kube-apiserver runs them.
        if res == PODS {
            admission::admit_service_account(self, &ns, &mut value)?;
            admission::admit_pod(self, &mut value)?;
        }
        if res == POD_GROUPS {
            admission::admit_pod_group_protection(&mut value);
        }
        if matches!(res, POD_GROUPS | WORKLOADS) {
            validation::pod_group::prepare(res, &mut value, None, false);
        }
        self.validate(res, &value, None, false)?;
        if res == PRIORITY_CLASSES {
            admission::admit_priority_class(self, &value, false)?;
        }
        if res == POD_GROUPS {
            admission::admit_pod_group_workload(self, &ns, &value)?;
            // As it is read back: decoded, so defaulted again.
            defaults::pod_group(&mut value);
        }
        let stored = self.commit(res, key, value, EventType::Added);
        // kube-controller-manager's serviceaccounts controller gives every
        // namespace its `default` account at once; clients wait for it.
        if res == NAMESPACES
            && self.default_service_accounts
            && !self.objects[SERVICE_ACCOUNTS].contains_key(&(name.clone(), "default".into()))
        {
            let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}});
            self.create(SERVICE_ACCOUNTS, Some(&name), sa)?;
        }
        Ok(stored)
    }

    /// One object.
    pub fn get(&self, res: usize, ns: &str, name: &str) -> Result<Stored, ApiError> {
        let def = &RESOURCES[res];
        self.objects[res]
            .get(&(ns.to_owned(), name.to_owned()))
            .cloned()
            .ok_or_else(|| ApiError::not_found(def.group, def.plural, name))
    }

    /// A page of the objects `filter` selects, in key order, starting after
    /// `after` (from a continue token), at most `limit` (0: all).
    pub fn list(&self, res: usize, filter: &Filter, limit: usize, after: Option<&Key>) -> Page {
        let map = &self.objects[res];
        let start = match (after, &filter.namespace) {
            (Some(k), _) => std::ops::Bound::Excluded(k.clone()),
            (None, Some(ns)) => std::ops::Bound::Included((ns.clone(), String::new())),
            (None, None) => std::ops::Bound::Unbounded,
        };
        let mut items = Vec::new();
        // Without selectors the range is the selection: no object is read.
        // With them, what remains is not counted (kube-apiserver leaves
        // `remainingItemCount` out of a list with a selector: counting would
        // read every object left after each page, quadratic in a paged list).
        let everything = filter.labels.is_empty() && filter.fields.is_empty();
        let mut iter = map
            .range((start, std::ops::Bound::Unbounded))
            .take_while(|(k, _)| filter.namespace.as_ref().is_none_or(|ns| &k.0 == ns))
            .filter(|(_, s)| everything || filter.matches(&s.value));
        let mut last = None;
        for (k, s) in iter.by_ref() {
            items.push(s.clone());
            last = Some(k);
            if limit > 0 && items.len() == limit {
                break;
            }
        }
        let mut page = Page {
            rv: self.rv,
            items,
            continue_token: None,
            remaining: None,
        };
        if limit > 0 && page.items.len() == limit {
            let rest = if everything {
                iter.count() as u64
            } else {
                u64::from(iter.next().is_some())
            };
            if rest > 0 {
                let k = last.expect("a full page has a last item");
                page.continue_token = Some(encode_continue(self.rv, k));
                page.remaining = everything.then_some(rest);
            }
        }
        page
    }

    /// The resourceVersion and position a continue token resumes from; 410
    /// when the token's resourceVersion was compacted.
    pub fn decode_continue(&self, token: &str) -> Result<Key, ApiError> {
        let bad = || ApiError::bad_request(format!("continue key is not valid: {token:?}"));
        let (rv, key) = decode_continue(token).ok_or_else(bad)?;
        if rv < self.earliest {
            return Err(ApiError::expired(
                "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
            ));
        }
        Ok(key)
    }

    /// Replaces an object (PUT), or its status (`sub` = `status`).
    pub fn update(
        &mut self,
        res: usize,
        ns: &str,
        name: &str,
        sub: Option<&str>,
        mut value: Value,
    ) -> Result<Stored, ApiError> {
        let def = &RESOURCES[res];
        let old = self.get(res, ns, name)?;
        if !value.is_object() || !value.get("metadata").is_none_or(Value::is_object) {
            return Err(ApiError::bad_request(format!(
                "{} in version {:?} cannot be handled as a {}: expected an object",
                def.kind, def.version, def.kind
            )));
        }
        let body_name = value.pointer("/metadata/name").and_then(Value::as_str).unwrap_or(name);
        if body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        // A UID the object does not have: the write was meant for another
        // object of that name (kube-apiserver's common metadata validation;
        // clients put it in a patch as a precondition).
        if let Some(uid) = value.pointer("/metadata/uid").and_then(Value::as_str)
            && !uid.is_empty()
            && Some(uid) != old.value.pointer("/metadata/uid").and_then(Value::as_str)
        {
            return Err(ApiError::invalid(
                def.group,
                def.kind,
                name,
                "metadata.uid",
                &format!("Invalid value: {uid:?}: field is immutable"),
            ));
        }
        if let Some(rv) = value.pointer("/metadata/resourceVersion").and_then(Value::as_str)
            && !rv.is_empty()
            && Some(rv) != old.value.pointer("/metadata/resourceVersion").and_then(Value::as_str)
        {
            return Err(ApiError::stale(def.group, def.plural, name));
        }
        // Server-owned metadata stays; the status subresource changes only
        // the status, the main resource of pods and nodes everything else.
        let mut new = if sub == Some("status") {
            let mut v = (*old.value).clone();
            v["status"] = value.get("status").cloned().unwrap_or(Value::Null);
            v
        } else {
            if matches!(res, PODS | NODES | NAMESPACES | POD_GROUPS) {
                value["status"] = old.value.get("status").cloned().unwrap_or(Value::Null);
            }
            for field in [
                "uid",
                "creationTimestamp",
                "namespace",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
            ] {
                match old.value["metadata"].get(field) {
                    Some(v) => value["metadata"][field] = v.clone(),
                    None => {
                        if let Some(m) = value["metadata"].as_object_mut() {
                            m.remove(field);
                        }
                    }
                }
            }
            value["metadata"]["name"] = json!(name);
            value
        };
        if new.get("status").is_some_and(Value::is_null)
            && let Some(m) = new.as_object_mut()
        {
            m.remove("status");
        }
        new = self.normalize(res, new)?;
        if res == PODS && sub != Some("status") {
            admission::keep_pod_priority(&old.value, &mut new);
            check_pod_update(name, &old.value, &new)?;
        }
        let status = sub == Some("status");
        if matches!(res, POD_GROUPS | WORKLOADS) {
            validation::pod_group::prepare(res, &mut new, Some(&old.value), status);
        }
        self.validate(res, &new, Some(&old.value), status)?;
        if res == PRIORITY_CLASSES {
            admission::admit_priority_class(self, &new, true)?;
        }
        if res == POD_GROUPS {
            defaults::pod_group(&mut new);
        }
        // An object being deleted (with no grace period left) whose last
        // finalizer goes is deleted by the update (`ShouldDeleteDuringUpdate`):
        // watchers see it `DELETED` as it was stored, the writer gets what it
        // wrote.
        if old
            .value
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|t| !t.is_null())
            && old
                .value
                .pointer("/metadata/deletionGracePeriodSeconds")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                == 0
            && new
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty)
        {
            let gone = self.commit(
                res,
                (ns.to_owned(), name.to_owned()),
                (*old.value).clone(),
                EventType::Deleted,
            );
            new["metadata"]["resourceVersion"] = gone.value["metadata"]["resourceVersion"].clone();
            return Ok(Stored::new(new));
        }
        if same_but_version(&old.value, &new) {
            return Ok(old); // a no-op update neither bumps the version nor notifies
        }
        Ok(self.commit(res, (ns.to_owned(), name.to_owned()), new, EventType::Modified))
    }

    /// Applies a patch of `content_type` to an object (or its status).
    pub fn patch(
        &mut self,
        res: usize,
        ns: &str,
        name: &str,
        sub: Option<&str>,
        content_type: &str,
        body: &Value,
    ) -> Result<Stored, ApiError> {
        self.patch_checked(res, ns, name, sub, content_type, body, &mut |_| Ok(()))
    }

    /// [`Store::patch`], with `check` run on the patched object before it is
    /// decoded, where kube-apiserver's strict field validation looks.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn patch_checked(
        &mut self,
        res: usize,
        ns: &str,
        name: &str,
        sub: Option<&str>,
        content_type: &str,
        body: &Value,
        check: &mut dyn FnMut(&Value) -> Result<(), ApiError>,
    ) -> Result<Stored, ApiError> {
        let old = self.get(res, ns, name)?;
        let mut v = (*old.value).clone();
        match content_type {
            "application/merge-patch+json" => patch::merge(&mut v, body),
            "application/strategic-merge-patch+json" => patch::strategic(&mut v, body),
            "application/json-patch+json" => patch::json_patch(&mut v, body).map_err(|e| {
                let mut err = ApiError::invalid(RESOURCES[res].group, RESOURCES[res].kind, name, "patch", &e);
                err.message = format!("the server rejected our request due to an error in our request: {e}");
                err
            })?,
            other => return Err(ApiError::unsupported_media_type(other)),
        }
        check(&v)?;
        // A patch carrying no resourceVersion applies to the current object.
        if body.pointer("/metadata/resourceVersion").is_none() {
            v["metadata"]["resourceVersion"] = old.value["metadata"]["resourceVersion"].clone();
        }
        self.update(res, ns, name, sub, v)
    }

    /// Deletes an object at once (as with grace period 0: there is no
    /// kubelet to confirm termination), checking `preconditions`. A
    /// PodGroup with finalizers is only marked as being deleted
    /// (`deletionTimestamp`, answered as such) until they are removed.
    pub fn delete(
        &mut self,
        res: usize,
        ns: &str,
        name: &str,
        preconditions: Option<&Value>,
    ) -> Result<Stored, ApiError> {
        let def = &RESOURCES[res];
        let old = self.get(res, ns, name)?;
        if let Some(p) = preconditions {
            for (field, ptr) in [
                ("uid", "/metadata/uid"),
                ("resourceVersion", "/metadata/resourceVersion"),
            ] {
                let Some(want) = p.get(field).and_then(Value::as_str) else {
                    continue;
                };
                let have = old.value.pointer(ptr).and_then(Value::as_str).unwrap_or("");
                if want != have {
                    let label = if field == "uid" { "UID" } else { "ResourceVersion" };
                    return Err(ApiError::conflict(
                        def.group,
                        def.plural,
                        name,
                        format!("Precondition failed: {label} in precondition: {want}, {label} in object meta: {have}"),
                    ));
                }
            }
        }
        let held = res == POD_GROUPS
            && old
                .value
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|f| !f.is_empty());
        if held {
            if old.value.pointer("/metadata/deletionTimestamp").is_some() {
                return Ok(old); // already being deleted
            }
            let mut v = (*old.value).clone();
            v["metadata"]["deletionTimestamp"] = json!(now());
            v["metadata"]["deletionGracePeriodSeconds"] = json!(0);
            return Ok(self.commit(res, (ns.to_owned(), name.to_owned()), v, EventType::Modified));
        }
        Ok(self.commit(
            res,
            (ns.to_owned(), name.to_owned()),
            (*old.value).clone(),
            EventType::Deleted,
        ))
    }

    /// `pods/binding`: assigns the pod to `binding.target.name` and sets
    /// `PodScheduled=True`. Like kube-apiserver it does not check that the
    /// node exists.
    pub fn bind(&mut self, ns: &str, name: &str, binding: &Value) -> Result<(), ApiError> {
        self.bind_as(ns, name, binding, "")
    }

    /// Every successful binding so far, in order: tests check from it that
    /// no pod (UID) was bound twice and that no two binders overlapped.
    pub fn binding_log(&self) -> &[BindRecord] {
        &self.bind_log
    }

    /// [`Store::bind`], recording `binder` (the requester's `User-Agent`)
    /// in the [binding log](Store::binding_log).
    pub fn bind_as(&mut self, ns: &str, name: &str, binding: &Value, binder: &str) -> Result<(), ApiError> {
        let target = binding.pointer("/target/name").and_then(Value::as_str).unwrap_or("");
        if target.is_empty() {
            return Err(ApiError::invalid("", "Binding", name, "target.name", "Required value"));
        }
        if let Some(kind) = binding.pointer("/target/kind").and_then(Value::as_str)
            && !kind.is_empty()
            && kind != "Node"
        {
            return Err(ApiError::invalid(
                "",
                "Binding",
                name,
                "target.kind",
                &format!("Unsupported value: {kind:?}: supported values: \"Node\""),
            ));
        }
        let old = match self.get(PODS, ns, name) {
            Ok(o) => o,
            Err(e) => {
                self.counters.binding_not_found += 1;
                return Err(e);
            }
        };
        let conflict = |why: String| ApiError::conflict("", "pods/binding", name, why);
        if let Some(want) = binding.pointer("/metadata/uid").and_then(Value::as_str)
            && !want.is_empty()
        {
            let have = old.value.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("");
            if want != have {
                self.counters.binding_conflicts += 1;
                return Err(conflict(format!(
                    "Precondition failed: UID in precondition: {want}, UID in object meta: {have}"
                )));
            }
        }
        if let Some(node) = old.value.pointer("/spec/nodeName").and_then(Value::as_str)
            && !node.is_empty()
        {
            self.counters.binding_conflicts += 1;
            return Err(conflict(format!("pod {name} is already assigned to node {node:?}")));
        }
        // The API server refuses to bind a pod that still has scheduling gates.
        if old
            .value
            .pointer("/spec/schedulingGates")
            .and_then(Value::as_array)
            .is_some_and(|g| !g.is_empty())
        {
            self.counters.binding_conflicts += 1;
            return Err(conflict(format!("pod {name} has non-empty .spec.schedulingGates")));
        }
        let mut pod = (*old.value).clone();
        pod["spec"]["nodeName"] = json!(target);
        if let Some(Value::Object(ann)) = binding.pointer("/metadata/annotations") {
            for (k, v) in ann {
                pod["metadata"]["annotations"][k] = v.clone();
            }
        }
        let cond =
            json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now()});
        let conds = &mut pod["status"]["conditions"];
        if !conds.is_array() {
            *conds = json!([]);
        }
        let list = conds.as_array_mut().expect("array");
        match list.iter_mut().find(|c| c["type"] == "PodScheduled") {
            Some(c) => *c = cond,
            None => list.push(cond),
        }
        self.counters.bindings += 1;
        self.bind_log.push(BindRecord {
            uid: old
                .value
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            pod: format!("{ns}/{name}"),
            node: target.to_owned(),
            binder: binder.to_owned(),
            at: std::time::SystemTime::now(),
        });
        self.commit(PODS, (ns.to_owned(), name.to_owned()), pod, EventType::Modified);
        Ok(())
    }

    /// Opens a watch. Under the store's lock, so no change falls between the
    /// initial events and the live ones.
    pub fn watch(
        &mut self,
        res: usize,
        filter: Filter,
        from: WatchFrom,
        bookmarks: bool,
        initial_end_bookmark: bool,
    ) -> Result<mpsc::Receiver<WatchMsg>, ApiError> {
        let (tx, rx) = mpsc::channel(WATCH_BUFFER + self.objects[res].len());
        match from {
            WatchFrom::Version(rv) if rv < self.earliest => {
                self.counters.watches_expired += 1;
                let err = ApiError::expired(format!("too old resource version: {rv} ({})", self.earliest));
                let _ = tx.try_send(WatchMsg::Error(err));
                return Ok(rx);
            }
            WatchFrom::Version(rv) => {
                let skip = self.history.partition_point(|c| c.rv <= rv);
                for change in self.history.iter().skip(skip).filter(|c| c.res == res) {
                    if let Some(view) = filter.view(change) {
                        let _ = tx.try_send(WatchMsg::Event(view, change.clone()));
                    }
                }
            }
            WatchFrom::Now => {
                let page = self.list(res, &filter, 0, None);
                for item in page.items {
                    let _ = tx.try_send(WatchMsg::Initial(item));
                }
                if initial_end_bookmark {
                    let _ = tx.try_send(WatchMsg::Bookmark(self.rv, true));
                }
            }
        }
        self.watchers.push(Watcher {
            res,
            filter,
            bookmarks,
            tx,
        });
        Ok(rx)
    }

    /// Sends a `BOOKMARK` with the current resourceVersion to every watch
    /// that asked for bookmarks.
    pub fn bookmark_all(&mut self) {
        let rv = self.rv;
        self.watchers
            .retain(|w| !w.bookmarks || w.tx.try_send(WatchMsg::Bookmark(rv, false)).is_ok() || !w.tx.is_closed());
        self.watchers.retain(|w| !w.tx.is_closed());
    }

    /// Closes every open watch (clients see their stream end and resume).
    pub fn drop_watches(&mut self) -> usize {
        let n = self.watchers.len();
        self.watchers.clear();
        n
    }

    /// Forgets the history: a watch or continue token from any resourceVersion
    /// before now gets 410 `Expired`.
    pub fn compact(&mut self) {
        self.history.clear();
        self.earliest = self.rv;
    }

    /// Every object of a resource.
    pub fn all(&self, res: usize) -> impl Iterator<Item = &Stored> {
        self.objects[res].values()
    }
}

fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(
    def: &ResourceDef,
    value: Value,
) -> Result<Value, ApiError> {
    let typed: T = serde_json::from_value(value).map_err(|e| {
        ApiError::bad_request(format!(
            "{kind} in version {v:?} cannot be handled as a {kind}: {e}",
            kind = def.kind,
            v = def.version
        ))
    })?;
    Ok(serde_json::to_value(typed).expect("k8s-openapi types serialize"))
}

/// The namespace an object of `def` lives in, from the path and the object.
fn scope(def: &ResourceDef, path_ns: Option<&str>, obj_ns: Option<&str>) -> Result<String, ApiError> {
    if !def.namespaced {
        return Ok(String::new());
    }
    match (path_ns, obj_ns) {
        (Some(p), Some(o)) if !o.is_empty() && p != o => Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        (Some(p), _) => Ok(p.to_owned()),
        (None, Some(o)) if !o.is_empty() => Ok(o.to_owned()),
        (None, _) => Ok("default".to_owned()),
    }
}

/// A random (version 4) UUID from two random words, as kube-apiserver
/// writes UIDs.
pub(crate) fn uuid_v4(a: u64, b: u64) -> String {
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        (b >> 48) & 0x3fff | 0x8000,
        b & 0xffff_ffff_ffff
    )
}

/// DNS-1123 subdomain, as kube-apiserver checks object names; RBAC's
/// kinds take any path segment (`system:auth-delegator`), as its
/// `ValidateRBACName` does.
fn check_name(def: &ResourceDef, name: &str) -> Result<(), ApiError> {
    if def.group == "rbac.authorization.k8s.io" {
        let why = match name {
            "." | ".." => Some(format!("may not be '{name}'")),
            _ => ["/", "%"]
                .iter()
                .find(|c| name.contains(*c))
                .map(|c| format!("may not contain '{c}'")),
        };
        return match why {
            None => Ok(()),
            Some(why) => Err(ApiError::invalid(
                def.group,
                def.kind,
                name,
                "metadata.name",
                &format!("Invalid value: {name:?}: {why}"),
            )),
        };
    }
    let errors: Vec<String> = validation::subdomain_errors(name, "characters")
        .into_iter()
        .map(|m| format!("Invalid value: {}: {m}", validation::quoted(name)))
        .collect();
    if errors.is_empty() {
        return Ok(());
    }
    let fields: Vec<(&str, &str)> = errors.iter().map(|e| ("metadata.name", e.as_str())).collect();
    Err(ApiError::invalid_fields(def.group, def.kind, name, &fields))
}

/// Pod specs are immutable but for a few fields (kube-apiserver's rule);
/// in particular `spec.nodeName` changes only through a binding.
fn check_pod_update(name: &str, old: &Value, new: &Value) -> Result<(), ApiError> {
    fn mutable_stripped(spec: &Value) -> Value {
        let mut s = spec.clone();
        if let Some(m) = s.as_object_mut() {
            for f in [
                "activeDeadlineSeconds",
                "tolerations",
                "terminationGracePeriodSeconds",
                "schedulingGates",
            ] {
                m.remove(f);
            }
            for list in ["containers", "initContainers"] {
                if let Some(Value::Array(cs)) = m.get_mut(list) {
                    for c in cs {
                        if let Some(c) = c.as_object_mut() {
                            c.remove("image");
                        }
                    }
                }
            }
        }
        s
    }
    if mutable_stripped(&old["spec"]) != mutable_stripped(&new["spec"]) {
        return Err(ApiError::invalid(
            "",
            "Pod",
            name,
            "spec",
            "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
        ));
    }
    Ok(())
}

fn same_but_version(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v["metadata"].as_object_mut() {
            m.remove("resourceVersion");
        }
        v
    };
    strip(old) == strip(new)
}

/// Now, as kube serializes `metav1.Time` (seconds, UTC).
pub fn now() -> String {
    let t = now_ts();
    format!("{}", t.strftime("%Y-%m-%dT%H:%M:%SZ"))
}

fn encode_continue(rv: u64, key: &Key) -> String {
    let raw =
        serde_json::to_vec(&json!({"v": "meta.k8s.io/v1", "rv": rv, "start": [key.0, key.1]})).expect("serializes");
    raw.iter().map(|b| format!("{b:02x}")).collect()
}

fn decode_continue(token: &str) -> Option<(u64, Key)> {
    if !token.len().is_multiple_of(2) {
        return None;
    }
    let raw: Vec<u8> = (0..token.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(token.get(i..i + 2)?, 16).ok())
        .collect::<Option<_>>()?;
    let v: Value = serde_json::from_slice(&raw).ok()?;
    let rv = v.get("rv")?.as_u64()?;
    let start = v.get("start")?.as_array()?;
    Some((
        rv,
        (start.first()?.as_str()?.to_owned(), start.get(1)?.as_str()?.to_owned()),
    ))
}

/// The current time as a jiff timestamp (whole seconds).
pub(crate) fn now_ts() -> k8s_openapi::jiff::Timestamp {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    k8s_openapi::jiff::Timestamp::from_second(secs).unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)
}
