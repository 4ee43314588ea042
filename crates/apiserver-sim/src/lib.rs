//! A Kubernetes API server double for tests, demos and benchmarks.
//!
//! It serves real HTTP and speaks the genuine wire format with k8s-openapi's
//! types: core/v1 nodes, pods (with the `status` and `binding`
//! subresources), namespaces, events, configmaps, services,
//! replicationcontrollers, persistentvolumeclaims, persistentvolumes and
//! serviceaccounts (with the `token` subresource), `apps/v1` replicasets
//! and statefulsets, `policy/v1` poddisruptionbudgets, `storage.k8s.io/v1`
//! storageclasses and csinodes, `events.k8s.io/v1` events,
//! `coordination.k8s.io/v1` leases, `rbac.authorization.k8s.io/v1`
//! clusterroles, clusterrolebindings, roles and rolebindings,
//! `scheduling.k8s.io/v1` priorityclasses, `scheduling.k8s.io/v1alpha2`
//! podgroups (with `status`) and workloads (as a cluster with the
//! `GenericWorkload` and `GangScheduling` feature gates serves them),
//! `resource.k8s.io/v1` deviceclasses, resourceslices, resourceclaims
//! (with `status`) and resourceclaimtemplates, each validated, defaulted
//! and admitted as kube-apiserver does for what scheduling reads, and the
//! create-only `authentication.k8s.io/v1` tokenreviews and
//! `authorization.k8s.io/v1` subjectaccessreviews (answered from the issued
//! and [static](ApiServer::add_token) tokens and by RBAC over the stored
//! roles, as kube-apiserver answers a component's delegated authentication
//! and authorization); lists with label and field
//! selectors, `limit` and `continue`; watches from a resourceVersion, with
//! bookmarks, `410 Expired` for a compacted version and streaming lists;
//! optimistic concurrency; errors as `Status` objects with kube's reasons and
//! wording; discovery, `/version` and the OpenAPI v3 documents of the served
//! kinds (with `fieldValidation` checked against them), enough for kube-rs
//! and `kubectl`.
//!
//! It also does what kube-controller-manager does for these objects: each
//! new namespace gets its `default` ServiceAccount
//! ([`Config::default_service_accounts`]), the resourceclaim controller
//! is played ([`Config::resourceclaim_controller`]): pods get their
//! ResourceClaims from their templates, and claims are released,
//! deallocated and deleted as their pods go; and so is the
//! podgroup-protection controller
//! ([`Config::podgroup_protection_controller`]): a deleted PodGroup, held
//! by its `scheduling.k8s.io/podgroup-protection` finalizer, goes once no
//! active pod names it.
//!
//! Faults are scriptable from Rust ([`ApiServer::faults`],
//! [`ApiServer::drop_watches`], [`ApiServer::compact`]) and over HTTP
//! (`POST /_sim/faults`, see [`FaultRequest`]).
//!
//! `docs/apiserver-conformance.md` lists each behaviour with the
//! kube-apiserver behaviour it mirrors, and the known differences.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use wasmsched_apiserver_sim::{ApiServer, Config};
//! let server = ApiServer::start("127.0.0.1:0".parse().unwrap(), Config::default()).await?;
//! server.load_text("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n").unwrap();
//! println!("kubectl --server {} get nodes", server.url());
//! server.faults().fail_fraction(0.2, 500);
//! server.drop_watches();
//! # Ok(()) }
//! ```

mod admission;
mod auth;
mod defaults;
mod faults;
mod http;
mod openapi;
mod patch;
mod podgroup_protection;
mod protobuf;
mod resourceclaim;
pub mod resources;
mod selector;
mod status;
mod store;
mod table;
mod validation;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::task::JoinHandle;

pub use auth::{API_AUDIENCE, StaticToken};
pub use faults::{FailRule, FaultRequest, Faults, LoseRule, Match, SlowRule};
pub use patch::{json_patch, merge, strategic};
pub use resourceclaim::offline_claims;
pub use selector::{FieldSelector, LabelSelector};
pub use status::ApiError;
pub use store::{BindRecord, Change, Counters, EventType, Filter, Page, Store, Stored, WatchFrom, WatchMsg};

/// Settings of a server.
#[derive(Debug, Clone)]
pub struct Config {
    /// Changes kept for watches to resume from; a watch from before the
    /// oldest kept change gets `410 Expired`. kube-apiserver's watch cache
    /// keeps a comparable window (etcd compacts every 5 minutes).
    pub history_window: usize,
    /// How often watches that allow bookmarks get one.
    pub bookmark_interval: Duration,
    /// Longest a watch stays open (and the default when the client names no
    /// `timeoutSeconds`).
    pub max_watch_timeout: Duration,
    /// Seed for UIDs, generated names and fractional faults.
    pub seed: u64,
    /// Give each new namespace its `default` ServiceAccount at once, as
    /// kube-controller-manager does. Without it (a server with no
    /// controller manager), pods are refused until someone creates it.
    pub default_service_accounts: bool,
    /// Play kube-controller-manager's resourceclaim controller: a pod's
    /// claims are created from its ResourceClaimTemplates, and claims are
    /// released (deallocated, or deleted when generated for the pod) when
    /// their pods are deleted or done. Without it (a server with no
    /// controller manager), such pods wait for claims nobody makes.
    pub resourceclaim_controller: bool,
    /// Play kube-controller-manager's podgroup-protection controller: a
    /// deleted PodGroup loses its `scheduling.k8s.io/podgroup-protection`
    /// finalizer, and so goes, once no active pod names it. Without it (a
    /// server with no controller manager), deleted PodGroups stay, marked
    /// as being deleted, until someone removes the finalizer.
    pub podgroup_protection_controller: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            history_window: 100_000,
            bookmark_interval: Duration::from_secs(1),
            max_watch_timeout: Duration::from_secs(1800),
            seed: 1,
            default_service_accounts: true,
            resourceclaim_controller: true,
            podgroup_protection_controller: true,
        }
    }
}

/// State shared by the HTTP handlers.
pub(crate) struct Shared {
    store: Mutex<Store>,
    tokens: Mutex<auth::Tokens>,
    faults: Faults,
    config: Config,
    addr: SocketAddr,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The tokens; taken before the store when both are needed.
    fn tokens(&self) -> MutexGuard<'_, auth::Tokens> {
        self.tokens.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub(crate) fn apply_fault_request(shared: &Shared, req: FaultRequest) {
    if req.clear {
        shared.faults.clear();
    }
    for rule in req.fail {
        shared.faults.add_rule(rule);
    }
    for m in req.hang {
        shared.faults.hang(m);
    }
    for r in req.lose_answer {
        shared.faults.lose_answers(r.matching, r.count);
    }
    for r in req.stall {
        shared.faults.stall(r.matching, r.count);
    }
    for r in req.slow {
        shared.faults.slow(r.matching, Duration::from_millis(r.delay_ms));
    }
    if let Some(ms) = req.latency_ms {
        shared.faults.set_latency(Duration::from_millis(ms));
    }
    match req.paused {
        Some(true) => shared.faults.pause(),
        Some(false) => shared.faults.resume(),
        None => {}
    }
    if req.drop_watches {
        shared.lock().drop_watches();
    }
    if req.compact {
        shared.lock().compact();
    }
}

pub(crate) fn stats(shared: &Shared) -> Value {
    let store = shared.lock();
    json!({
        "resourceVersion": store.resource_version(),
        "earliestResourceVersion": store.earliest(),
        "watches": store.watch_count(),
        "counters": store.counters,
        "injectedFaults": shared.faults.injected(),
    })
}

/// Why a fixture could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The text is not a valid object stream.
    #[error(transparent)]
    Parse(#[from] wasmsched_core::fixture::FixtureError),
    /// The server refused an object.
    #[error("{kind} {name}: {error}")]
    Refused {
        /// Object kind.
        kind: &'static str,
        /// Object name.
        name: String,
        /// What the server answered.
        error: Box<ApiError>,
    },
}

/// A running server. Dropping it stops it.
pub struct ApiServer {
    shared: Arc<Shared>,
    server: JoinHandle<()>,
    ticker: JoinHandle<()>,
}

impl ApiServer {
    /// Binds `addr` (port 0 picks a free port) and serves until dropped.
    pub async fn start(addr: SocketAddr, config: Config) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            store: Mutex::new({
                let mut store = Store::new(config.history_window, config.seed);
                store.default_service_accounts = config.default_service_accounts;
                store.resourceclaim_controller = config.resourceclaim_controller;
                store.podgroup_protection_controller = config.podgroup_protection_controller;
                store
            }),
            tokens: Mutex::new(auth::Tokens::new(config.seed)),
            faults: Faults::new(config.seed),
            config,
            addr,
        });
        let app = http::router(shared.clone());
        let server = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "API server double stopped");
            }
        });
        let weak = Arc::downgrade(&shared);
        let interval = shared.config.bookmark_interval;
        let ticker = tokio::spawn(async move {
            let mut tick = tokio::time::interval(interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(shared) = weak.upgrade() else { return };
                shared.lock().bookmark_all();
            }
        });
        tracing::info!(%addr, "API server double listening");
        Ok(Self { shared, server, ticker })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.shared.addr)
    }

    /// The fault switches.
    pub fn faults(&self) -> &Faults {
        &self.shared.faults
    }

    /// Direct access to the store (to check outcomes, or to change objects
    /// without going through HTTP). Keep the guard short: requests wait on it.
    pub fn store(&self) -> MutexGuard<'_, Store> {
        self.shared.lock()
    }

    /// Applies a fault request, as `POST /_sim/faults` does.
    pub fn apply(&self, req: FaultRequest) {
        apply_fault_request(&self.shared, req);
    }

    /// Closes every open watch now; returns how many there were.
    pub fn drop_watches(&self) -> usize {
        self.shared.lock().drop_watches()
    }

    /// Expires every resourceVersion before now (watches and continue
    /// tokens from them get `410 Expired`).
    pub fn compact(&self) {
        self.shared.lock().compact();
    }

    /// Registers a static bearer token for `user` in `groups`, as a line of
    /// kube-apiserver's `--token-auth-file` does: a TokenReview of it
    /// authenticates as that user, with `system:authenticated` added.
    /// (`POST /_sim/tokens` does the same over HTTP.)
    pub fn add_token(&self, token: &str, user: &str, groups: &[&str]) {
        self.add_static_token(StaticToken {
            token: token.to_owned(),
            user: user.to_owned(),
            uid: String::new(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        });
    }

    /// [`ApiServer::add_token`] with every field of a token file's line.
    pub fn add_static_token(&self, token: StaticToken) {
        self.shared.tokens().add_static(token);
    }

    /// Issues a one-hour token for the ServiceAccount `namespace/name`, as
    /// `POST .../serviceaccounts/NAME/token` (and `kubectl create token`)
    /// does; `404` when the account does not exist.
    pub fn create_token(&self, namespace: &str, name: &str) -> Result<String, ApiError> {
        let mut tokens = self.shared.tokens();
        let answer = tokens.issue(&self.shared.lock(), namespace, name, json!({}))?;
        Ok(answer["status"]["token"].as_str().unwrap_or_default().to_owned())
    }

    /// Counters of bindings and watches.
    pub fn counters(&self) -> Counters {
        self.shared.lock().counters
    }

    /// Every successful binding so far (see [`Store::binding_log`]).
    pub fn binding_log(&self) -> Vec<BindRecord> {
        self.shared.lock().binding_log().to_vec()
    }

    /// Loads the nodes and pods of a YAML or JSON document stream (the
    /// format `wasmsched simulate` reads), creating the namespaces they use
    /// and the PriorityClasses before the pods (whose admission reads them),
    /// and the other kinds it holds (PodGroups among them) before the nodes.
    /// Returns how many objects were created.
    pub fn load_text(&self, text: &str) -> Result<usize, LoadError> {
        let objects = wasmsched_core::fixture::parse_objects(text)?;
        self.load(&objects)
    }

    /// Loads parsed nodes and pods (see [`ApiServer::load_text`]).
    pub fn load(&self, objects: &wasmsched_core::fixture::Objects) -> Result<usize, LoadError> {
        let mut store = self.shared.lock();
        let mut created = 0;
        for ns in &objects.namespaces {
            let name = ns.metadata.name.clone().unwrap_or_default();
            if store.get(resources::NAMESPACES, "", &name).is_err() {
                let v = serde_json::to_value(ns).expect("namespaces serialize");
                refused("Namespace", &name, store.create(resources::NAMESPACES, None, v))?;
                created += 1;
            }
        }
        let mut namespaces: Vec<String> = vec!["default".into(), "kube-system".into()];
        let pod_namespaces = objects.pods.iter().map(|p| &p.metadata.namespace);
        let group_namespaces = objects.pod_groups.iter().map(|g| &g.metadata.namespace);
        for ns in pod_namespaces.chain(group_namespaces).flatten() {
            if !namespaces.contains(ns) {
                namespaces.push(ns.clone());
            }
        }
        for ns in namespaces {
            if store.get(resources::NAMESPACES, "", &ns).is_err() {
                let v = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}, "status": {"phase": "Active"}});
                refused("Namespace", &ns, store.create(resources::NAMESPACES, None, v))?;
                created += 1;
            }
        }
        for pc in &objects.priority_classes {
            let name = pc.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
            if store.get(resources::PRIORITY_CLASSES, "", name).is_err() {
                refused(
                    "PriorityClass",
                    name,
                    store.create(resources::PRIORITY_CLASSES, None, pc.clone()),
                )?;
                created += 1;
            }
        }
        for w in objects
            .workloads
            .iter()
            .chain(&objects.storage)
            .chain(&objects.claim_templates)
        {
            let api_version = w.get("apiVersion").and_then(Value::as_str).unwrap_or("v1");
            let kind = w.get("kind").and_then(Value::as_str).unwrap_or("");
            let name = w
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let Some(res) = resources::find_kind(api_version, kind) else {
                continue;
            };
            let ns = w
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("default");
            let ns = resources::RESOURCES[res].namespaced.then_some(ns);
            refused(resources::RESOURCES[res].kind, &name, store.create(res, ns, w.clone()))?;
            created += 1;
        }
        for pg in &objects.pod_groups {
            let name = pg.metadata.name.clone().unwrap_or_default();
            let v = serde_json::to_value(pg).expect("PodGroups serialize");
            refused(
                "PodGroup",
                &name,
                store.create(resources::POD_GROUPS, pg.metadata.namespace.as_deref(), v),
            )?;
            created += 1;
        }
        for node in &objects.nodes {
            let name = node.metadata.name.clone().unwrap_or_default();
            let v = serde_json::to_value(node).expect("nodes serialize");
            refused("Node", &name, store.create(resources::NODES, None, v))?;
            created += 1;
        }
        for pod in &objects.pods {
            let name = pod.metadata.name.clone().unwrap_or_default();
            let v = serde_json::to_value(pod).expect("pods serialize");
            refused(
                "Pod",
                &name,
                store.create(resources::PODS, pod.metadata.namespace.as_deref(), v),
            )?;
            created += 1;
        }
        Ok(created)
    }

    /// Creates an object given as JSON (`apiVersion` and `kind` pick the
    /// resource), as a POST would.
    pub fn create(&self, value: Value) -> Result<Value, ApiError> {
        let api_version = value.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
        let res = resources::find_kind(api_version, kind)
            .ok_or_else(|| ApiError::bad_request(format!("no resource for {api_version}/{kind}")))?;
        let ns = value
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let s = self.shared.lock().create(res, ns.as_deref(), value)?;
        Ok((*s.value).clone())
    }

    /// Every object of a k8s-openapi type, e.g. `server.list::<Pod>()`.
    pub fn list<K>(&self) -> Vec<K>
    where
        K: k8s_openapi::Resource + serde::de::DeserializeOwned,
    {
        let Some(res) = resources::find(K::GROUP, K::VERSION, K::URL_PATH_SEGMENT) else {
            return Vec::new();
        };
        let store = self.shared.lock();
        store
            .all(res)
            .filter_map(|s| serde_json::from_value((*s.value).clone()).ok())
            .collect()
    }

    /// One object of a k8s-openapi type (`ns` is `""` for cluster-scoped).
    pub fn get<K>(&self, ns: &str, name: &str) -> Option<K>
    where
        K: k8s_openapi::Resource + serde::de::DeserializeOwned,
    {
        let res = resources::find(K::GROUP, K::VERSION, K::URL_PATH_SEGMENT)?;
        let s = self.shared.lock().get(res, ns, name).ok()?;
        serde_json::from_value((*s.value).clone()).ok()
    }

    /// Stops serving: closes watches, then the listener.
    pub async fn shutdown(mut self) {
        self.drop_watches();
        self.ticker.abort();
        self.server.abort();
        let _ = (&mut self.server).await;
    }
}

fn refused(kind: &'static str, name: &str, r: Result<store::Stored, ApiError>) -> Result<(), LoadError> {
    r.map(drop).map_err(|error| LoadError::Refused {
        kind,
        name: name.to_owned(),
        error: Box::new(error),
    })
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.shared.lock().drop_watches();
        self.ticker.abort();
        self.server.abort();
    }
}
