//! The watchers: kube-rs' `watcher` over nodes, pods and namespaces (whose
//! labels namespace selectors of pod affinity read), with its default
//! backoff, turned into messages for the scheduling thread. A relist ends
//! with the set of keys it saw, so the thread can drop what is gone.

use std::collections::HashSet;
use std::sync::Arc;

use futures_util::StreamExt;
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController, Service,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use k8s_openapi::api::scheduling::v1alpha2::PodGroup;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector;
use kube::runtime::watcher::{self, Event as WatchEvent};
use tokio::sync::{mpsc, watch};
use wasmsched_core::storage::StorageKind;
use wasmsched_core::workloads::WorkloadKind;

use crate::daemon::supervise;
use crate::schedule::Msg;
use crate::status::Status;

/// How one kind's watch events become messages for the scheduling thread.
pub(crate) struct Kind<K> {
    what: &'static str,
    key: fn(&K) -> String,
    apply: fn(K) -> Msg,
    gone: fn(&K) -> Msg,
    synced: fn(HashSet<String>) -> Msg,
    /// A field selector the API server applies (none: every object).
    fields: Option<&'static str>,
}

/// `namespace/name` of a pod.
pub(crate) fn pod_key(p: &Pod) -> String {
    format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or("default"),
        p.metadata.name.as_deref().unwrap_or_default()
    )
}

pub(crate) const NODES: Kind<Node> = Kind {
    what: "nodes",
    key: name_key,
    apply: |n| Msg::Node(Box::new(n)),
    gone: |n| Msg::NodeGone(n.metadata.name.clone().unwrap_or_default()),
    synced: Msg::NodesSynced,
    fields: None,
};

/// Pods, as kube-scheduler's informer lists them: not those that finished
/// (a pod that finishes leaves the watch as deleted, freeing its node),
/// and without `metadata.managedFields`, which nothing reads and which is
/// often most of a pod's size.
pub(crate) const PODS: Kind<Pod> = Kind {
    what: "pods",
    key: pod_key,
    apply: |mut p| {
        p.metadata.managed_fields = None;
        Msg::Pod(Box::new(p))
    },
    gone: |p| Msg::PodGone {
        key: pod_key(p),
        uid: p.metadata.uid.clone().unwrap_or_default(),
    },
    synced: Msg::PodsSynced,
    fields: Some("status.phase!=Succeeded,status.phase!=Failed"),
};

pub(crate) const NAMESPACES: Kind<Namespace> = Kind {
    what: "namespaces",
    key: name_key,
    apply: |n| Msg::Namespace(Box::new(n)),
    gone: |n| Msg::NamespaceGone(n.metadata.name.clone().unwrap_or_default()),
    synced: Msg::NamespacesSynced,
    fields: None,
};

/// `namespace/name` of a namespaced object.
fn ns_key<K: kube::Resource>(o: &K) -> String {
    let m = o.meta();
    format!(
        "{}/{}",
        m.namespace.as_deref().unwrap_or("default"),
        m.name.as_deref().unwrap_or_default()
    )
}

fn workload_apply<K: serde::Serialize>(o: K) -> Msg {
    Msg::Workload(Box::new(serde_json::to_value(&o).unwrap_or_default()))
}

fn workload_gone<K: kube::Resource>(kind: WorkloadKind, o: &K) -> Msg {
    let m = o.meta();
    Msg::WorkloadGone {
        kind,
        namespace: m.namespace.clone().unwrap_or_else(|| "default".into()),
        name: m.name.clone().unwrap_or_default(),
    }
}

/// One workload kind whose selectors PodTopologySpread's default
/// constraints use (kube-scheduler's `DefaultSelector`).
macro_rules! workload_kind {
    ($name:ident, $ty:ty, $what:literal, $kind:expr) => {
        pub(crate) const $name: Kind<$ty> = Kind {
            what: $what,
            key: ns_key,
            apply: workload_apply,
            gone: |o| workload_gone($kind, o),
            synced: |keys| Msg::WorkloadsSynced($kind, keys),
            fields: None,
        };
    };
}

workload_kind!(SERVICES, Service, "services", WorkloadKind::Service);
workload_kind!(
    REPLICATION_CONTROLLERS,
    ReplicationController,
    "replicationcontrollers",
    WorkloadKind::ReplicationController
);
workload_kind!(REPLICA_SETS, ReplicaSet, "replicasets", WorkloadKind::ReplicaSet);
workload_kind!(STATEFUL_SETS, StatefulSet, "statefulsets", WorkloadKind::StatefulSet);
workload_kind!(
    DISRUPTION_BUDGETS,
    PodDisruptionBudget,
    "poddisruptionbudgets",
    WorkloadKind::PodDisruptionBudget
);

fn storage_apply<K: serde::Serialize>(o: K) -> Msg {
    Msg::Storage(Box::new(serde_json::to_value(&o).unwrap_or_default()))
}

fn storage_gone<K: kube::Resource>(kind: StorageKind, o: &K) -> Msg {
    let m = o.meta();
    Msg::StorageGone {
        kind,
        namespace: m.namespace.clone().unwrap_or_default(),
        name: m.name.clone().unwrap_or_default(),
    }
}

/// One storage kind the volume plugins read; `key` as
/// [`wasmsched_core::storage::storage_key`] spells it.
macro_rules! storage_kind {
    ($name:ident, $ty:ty, $kind:expr, $key:expr) => {
        pub(crate) const $name: Kind<$ty> = Kind {
            what: $kind.plural(),
            key: $key,
            apply: storage_apply,
            gone: |o| storage_gone($kind, o),
            synced: |keys| Msg::StorageSynced($kind, keys),
            fields: None,
        };
    };
}

storage_kind!(CLAIMS, PersistentVolumeClaim, StorageKind::Claim, ns_key);
storage_kind!(VOLUMES, PersistentVolume, StorageKind::Volume, name_key);
storage_kind!(STORAGE_CLASSES, StorageClass, StorageKind::Class, name_key);
storage_kind!(CSI_NODES, CSINode, StorageKind::CsiNode, name_key);
storage_kind!(DEVICE_CLASSES, DeviceClass, StorageKind::DeviceClass, name_key);
storage_kind!(RESOURCE_SLICES, ResourceSlice, StorageKind::ResourceSlice, name_key);
storage_kind!(RESOURCE_CLAIMS, ResourceClaim, StorageKind::ResourceClaim, ns_key);

/// PodGroups (`scheduling.k8s.io/v1alpha2`), which GangScheduling reads.
pub(crate) const POD_GROUPS: Kind<PodGroup> = Kind {
    what: "podgroups",
    key: ns_key,
    apply: |g| Msg::PodGroup(Box::new(g)),
    gone: |g| Msg::PodGroupGone {
        namespace: g.metadata.namespace.clone().unwrap_or_default(),
        name: g.metadata.name.clone().unwrap_or_default(),
    },
    synced: Msg::PodGroupsSynced,
    fields: None,
};

/// Follows PodGroups where the API server serves them. The API is alpha
/// in v1.36 (off unless `scheduling.k8s.io/v1alpha2` is enabled): where
/// discovery does not list it, there is nothing to follow, the kind
/// counts as listed (empty) and pods naming a group wait for it
/// (GangScheduling's PreEnqueue); a pod cannot name one there anyway,
/// the API server drops `spec.schedulingGroup` with the gate off.
async fn watch_pod_groups(
    client: kube::Client,
    tx: mpsc::Sender<Msg>,
    status: Arc<Status>,
    mut stop: watch::Receiver<bool>,
) {
    let mut pause = std::time::Duration::from_millis(500);
    loop {
        let served = tokio::select! {
            r = client.list_api_group_resources("scheduling.k8s.io/v1alpha2") => r,
            _ = stop.wait_for(|s| *s) => return,
        };
        let mut not_served = false;
        match served {
            Ok(list) if list.resources.iter().any(|r| r.name == "podgroups") => {
                return watch_kind(client, POD_GROUPS, tx, status, stop, None).await;
            }
            Ok(_) => not_served = true,
            Err(kube::Error::Api(s)) if s.code == 404 => not_served = true,
            Err(e) => {
                tracing::warn!(error = %e, "cannot tell whether PodGroups are served; asking again");
                status.watch_failed(POD_GROUPS.what, &e.to_string());
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
                pause = (pause * 2).min(std::time::Duration::from_secs(30));
            }
        }
        if not_served {
            tracing::info!(
                "the API server does not serve scheduling.k8s.io/v1alpha2 PodGroups: pods naming one wait for it"
            );
            status.watch_listed(POD_GROUPS.what);
            if tx.send(Msg::PodGroupsSynced(HashSet::new())).await.is_err() {
                return;
            }
            let _ = stop.wait_for(|s| *s).await;
            return;
        }
    }
}

/// The name of a cluster-scoped object.
fn name_key<K: kube::Resource>(o: &K) -> String {
    o.meta().name.clone().unwrap_or_default()
}

/// Follows every object of one kind until `stop` turns true. Sending waits
/// when the scheduling thread is behind (the channel is bounded), which
/// slows the watch instead of growing memory.
pub(crate) async fn watch_kind<K>(
    client: kube::Client,
    kind: Kind<K>,
    tx: mpsc::Sender<Msg>,
    status: Arc<Status>,
    mut stop: watch::Receiver<bool>,
    store: Option<reflector::store::Writer<K>>,
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
{
    let api: Api<K> = Api::all(client);
    // kube-rs' backoff: exponential with jitter, reset after a healthy stretch.
    let mut config = watcher::Config::default().timeout(crate::client::WATCH_TIMEOUT_SECONDS);
    if let Some(f) = kind.fields {
        config = config.fields(f);
    }
    let events = watcher::watcher(api, config).default_backoff();
    // A kind the binder reads while it waits (claims, volumes) is also
    // kept in a reflector's store, which it reads instead of the API.
    let mut stream = match store {
        Some(w) => reflector::reflector(w, events).boxed(),
        None => events.boxed(),
    };
    let mut init: HashSet<String> = HashSet::new();
    loop {
        let ev = tokio::select! {
            ev = stream.next() => ev,
            _ = stop.wait_for(|s| *s) => return,
        };
        let Some(ev) = ev else { return };
        let msg = match ev {
            Ok(WatchEvent::Init) => {
                init.clear();
                continue;
            }
            Ok(WatchEvent::InitApply(o)) => {
                init.insert((kind.key)(&o));
                (kind.apply)(o)
            }
            Ok(WatchEvent::InitDone) => {
                status.watch_listed(kind.what);
                (kind.synced)(std::mem::take(&mut init))
            }
            Ok(WatchEvent::Apply(o)) => (kind.apply)(o),
            Ok(WatchEvent::Delete(o)) => {
                let msg = (kind.gone)(&o);
                if let Msg::PodGone { uid, .. } = &msg {
                    status.pod_gone(uid);
                }
                msg
            }
            Err(e) => {
                // Repeats at the backoff's pace, as long as the watch fails.
                tracing::warn!(resource = kind.what, error = %e, "watch failed; retrying with backoff");
                status.watch_failed(kind.what, &e.to_string());
                continue;
            }
        };
        if tx.send(msg).await.is_err() {
            return;
        }
    }
}

/// Starts the watcher of one kind, supervised under the kind's name,
/// keeping `store` too when given.
fn spawn_kind<K>(
    client: &kube::Client,
    kind: Kind<K>,
    tx: &mpsc::Sender<Msg>,
    status: &Arc<Status>,
    stop: &watch::Receiver<bool>,
    store: Option<reflector::store::Writer<K>>,
) -> tokio::task::JoinHandle<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
{
    let what = kind.what;
    supervise(
        status,
        what,
        watch_kind(client.clone(), kind, tx.clone(), status.clone(), stop.clone(), store),
    )
}

/// Starts a watcher for every kind the scheduler keeps (nodes, pods,
/// namespaces, the four workload kinds default spreading reads,
/// PodDisruptionBudgets for preemption, claims, volumes, storage classes
/// and CSI nodes for the volume plugins, device classes, resource slices
/// and resource claims for DynamicResources, and PodGroups for
/// GangScheduling), all sending to `tx`.
pub(crate) fn spawn_watchers(
    client: &kube::Client,
    tx: &mpsc::Sender<Msg>,
    status: &Arc<Status>,
    stop: &watch::Receiver<bool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let (c, t, s, x) = (client, tx, status, stop);
    // A cycle needs every one of them: each is a condition of readiness.
    status.expect_watches(&[
        NODES.what,
        PODS.what,
        NAMESPACES.what,
        SERVICES.what,
        REPLICATION_CONTROLLERS.what,
        REPLICA_SETS.what,
        STATEFUL_SETS.what,
        DISRUPTION_BUDGETS.what,
        CLAIMS.what,
        VOLUMES.what,
        STORAGE_CLASSES.what,
        CSI_NODES.what,
        DEVICE_CLASSES.what,
        RESOURCE_SLICES.what,
        RESOURCE_CLAIMS.what,
        POD_GROUPS.what,
    ]);
    let (claims, claims_writer) = reflector::store();
    let (volumes, volumes_writer) = reflector::store();
    status.set_volume_stores(claims, volumes);
    vec![
        spawn_kind(c, NODES, t, s, x, None),
        spawn_kind(c, PODS, t, s, x, None),
        spawn_kind(c, NAMESPACES, t, s, x, None),
        spawn_kind(c, SERVICES, t, s, x, None),
        spawn_kind(c, REPLICATION_CONTROLLERS, t, s, x, None),
        spawn_kind(c, REPLICA_SETS, t, s, x, None),
        spawn_kind(c, STATEFUL_SETS, t, s, x, None),
        spawn_kind(c, DISRUPTION_BUDGETS, t, s, x, None),
        spawn_kind(c, CLAIMS, t, s, x, Some(claims_writer)),
        spawn_kind(c, VOLUMES, t, s, x, Some(volumes_writer)),
        spawn_kind(c, STORAGE_CLASSES, t, s, x, None),
        spawn_kind(c, CSI_NODES, t, s, x, None),
        spawn_kind(c, DEVICE_CLASSES, t, s, x, None),
        spawn_kind(c, RESOURCE_SLICES, t, s, x, None),
        spawn_kind(c, RESOURCE_CLAIMS, t, s, x, None),
        supervise(
            s,
            POD_GROUPS.what,
            watch_pod_groups(c.clone(), t.clone(), s.clone(), x.clone()),
        ),
    ]
}
