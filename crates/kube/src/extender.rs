//! Extender mode: the same profiles and plugins behind kube-scheduler's
//! extender protocol (`filter`, `prioritize`), for clusters that keep
//! kube-scheduler and add wasmsched to its `extenders:`.
//!
//! With an API server the extender keeps the cluster's state as the daemon
//! does (watchers feeding the core scheduler's cache, which places
//! nothing), so it answers `nodeCacheCapable` requests (node names only)
//! with usage-aware plugins. Without one it answers from what each request
//! holds (full `Nodes`, no bound pods).
//!
//! `preempt` keeps the nodes where the plugins accept the pod once the
//! victims are gone; `bind` (with `--bind`) binds through the API server
//! with the daemon's binder.
//!
//! ```text
//! kube-scheduler ── POST {prefix}/filter, /prioritize, /preempt ──> axum ──> worker thread:
//!                                                         framework on the cache's snapshot
//! watchers ──> cache thread (core scheduler, no queue) ──┘
//! ```

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Bytes;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use tokio::sync::{mpsc, watch};
use wasmsched_core::cache::{Cache, Snapshot};
use wasmsched_core::config::Config;
use wasmsched_core::extender::{
    ExtenderArgs, ExtenderBindingArgs, ExtenderBindingResult, ExtenderFilterResult, ExtenderPreemptionArgs,
    ExtenderPreemptionResult, HostPriority, MetaPod, MetaVictims, NodeList, extender_score,
};
use wasmsched_core::framework::{Code, CycleState, Framework, ScheduleError};
use wasmsched_core::plugins::Registry;
use wasmsched_core::scheduler::{PLUGIN_TIMING_SAMPLE, Responsibility, Scheduler};
use wasmsched_core::{NodeData, PodInfo};

use crate::binder::BindResult;
use crate::leader::Leadership;
use crate::schedule::{Msg, Synced, apply};
use crate::status::Status;
use crate::watch::spawn_watchers;

/// How the extender runs.
pub struct ExtenderOptions {
    /// The scheduler configuration (its profiles and plugins).
    pub config: Config,
    /// Plugins the profiles may enable (built-ins, plus WebAssembly plugins).
    pub registry: Registry,
    /// The WebAssembly plugin host, for readiness and metrics.
    pub plugins: Option<Arc<wasmsched_wasm::PluginHost>>,
    /// The profile whose plugins run (none: the first).
    pub profile: Option<String>,
    /// Run the profile's built-in plugins too (by default only its
    /// WebAssembly plugins run: kube-scheduler runs its own built-ins).
    pub builtins: bool,
    /// Where the verbs are served.
    pub listen: SocketAddr,
    /// The path the verbs hang under (kube-scheduler's `urlPrefix` path):
    /// `{prefix}/filter`, `{prefix}/prioritize`.
    pub prefix: String,
    /// Where and how the admin endpoints are served (none: not served).
    pub admin: Option<crate::admin::AdminOptions>,
    /// Largest request body read, in bytes (whole nodes: ~1–5 KiB each).
    /// With a cache, a request is further bounded by what the nodes it
    /// knows can need ([`body_limit`]).
    pub max_request_bytes: usize,
    /// Requests whose bodies are read and answered at once, at most; more
    /// wait (unread) for one to end. Memory for requests is bounded by this
    /// times the body limit.
    pub max_in_flight: usize,
    /// Serve `{prefix}/bind`: bind pods through the API server as `run`
    /// does (kube-scheduler's `bindVerb`). Needs an API server.
    pub bind: bool,
    /// Longest one binding request may take.
    pub api_timeout: std::time::Duration,
    /// Serve HTTPS with this certificate chain and key (PEM files), for
    /// kube-scheduler's `enableHTTPS: true`; none: plain HTTP.
    pub tls: Option<crate::tls::CertFiles>,
    /// Require of every connection a client certificate signed by this CA
    /// (kube-scheduler's `tlsConfig.certFile`); needs `tls`.
    pub client_ca: Option<std::path::PathBuf>,
}

/// What a request needs beyond its nodes: the pod (the API server stores
/// objects of at most 1.5 MiB) and the rest of the arguments.
const BODY_BASE: usize = 2 << 20;
/// What one node may need in a request: its name (`NodeNames`), or the
/// whole object (`Nodes`: ~1–5 KiB, more with many images).
const BODY_PER_NODE: usize = 32 << 10;

/// The largest body a request may have: `max` without a cache, else what
/// the nodes the cache knows can need (at least 100 nodes' worth, so a
/// cache still filling refuses nothing kube-scheduler can send).
pub fn body_limit(max: usize, nodes: Option<usize>) -> usize {
    match nodes {
        None => max,
        Some(n) => max.min(BODY_BASE + n.max(100).saturating_mul(BODY_PER_NODE)),
    }
}

/// The default of [`ExtenderOptions::max_request_bytes`]: 5000 whole nodes
/// of several KiB each fit.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 64 << 20;

/// A running extender.
pub struct Running {
    /// Where the verbs are served.
    pub addr: SocketAddr,
    /// Where the admin endpoints are served.
    pub admin: Option<crate::admin::Served>,
    /// Ends when the server stops.
    pub server: tokio::task::JoinHandle<()>,
    /// Whether it serves HTTPS.
    pub tls: bool,
}

struct Extender {
    framework: Framework,
    /// The cluster as the watchers report it (none: stateless).
    cluster: Option<Mutex<Scheduler>>,
    status: Arc<Status>,
    /// The API server and the binder's settings, when `bind` is served.
    binder: Option<(kube::Client, Arc<Leadership>, std::time::Duration)>,
    /// Requests judged, for sampling plugin timings as the daemon samples
    /// its cycles.
    requests: std::sync::atomic::AtomicU64,
    /// Nodes in the cache, for the body limit.
    nodes: std::sync::atomic::AtomicUsize,
    /// Requests being read or answered.
    in_flight: tokio::sync::Semaphore,
    /// The configured largest body.
    max_request_bytes: usize,
}

/// The framework of `profile` (or the first), without its built-in plugins
/// unless `builtins`.
fn extender_framework(config: &Config, registry: &Registry, opts: &ExtenderOptions) -> anyhow::Result<Framework> {
    let frameworks = config.build_frameworks(registry)?;
    let mut fw = match &opts.profile {
        None => frameworks.into_iter().next(),
        Some(p) => frameworks.into_iter().find(|f| &f.profile == p),
    }
    .ok_or_else(|| {
        anyhow::anyhow!(
            "no profile {} in the configuration",
            opts.profile.as_deref().unwrap_or("at all")
        )
    })?;
    if !opts.builtins {
        let builtin = Registry::builtin();
        let ours = |e: &wasmsched_core::framework::Enabled| builtin.get(e.plugin.name()).is_none();
        fw.pre_filter.retain(ours);
        fw.filter.retain(ours);
        fw.post_filter.clear();
        fw.pre_score.retain(ours);
        fw.score.retain(ours);
        fw.reserve.retain(ours);
    }
    Ok(fw)
}

/// Starts the extender: the watchers (with `client`), the cache thread,
/// the verbs and the admin endpoints. Stops when `stop` turns true.
pub async fn serve(
    opts: ExtenderOptions,
    client: Option<kube::Client>,
    stop: watch::Receiver<bool>,
) -> anyhow::Result<Running> {
    let framework = extender_framework(&opts.config, &opts.registry, &opts)?;
    let names: Vec<String> = framework.plugins().iter().map(|p| p.name().to_owned()).collect();
    tracing::info!(profile = %framework.profile, plugins = ?names, "extender plugins");
    let status = Arc::new(Status::new(opts.plugins.clone()));
    let cluster = match &client {
        Some(_) => Some(Mutex::new(Scheduler::new(
            &opts.config,
            &opts.registry,
            0,
            Responsibility::CachedOnly,
        )?)),
        None => {
            tracing::warn!(
                "no API server: each request is answered from what it holds (full Nodes, without the pods bound on them); requests with NodeNames only are refused"
            );
            status.mark_synced();
            None
        }
    };
    if opts.bind && client.is_none() {
        anyhow::bail!("the bind verb binds through an API server: give one (--master or --kubeconfig)");
    }
    if opts.bind && opts.client_ca.is_none() {
        // Whoever reaches the port could bind any pod anywhere.
        anyhow::bail!(
            "the bind verb binds pods for whoever calls it: serve it over TLS with a client CA (--tls-cert, --tls-key, --client-ca-file), whose certificate kube-scheduler presents (tlsConfig.certFile)"
        );
    }
    if opts.client_ca.is_some() && opts.tls.is_none() {
        anyhow::bail!(
            "--client-ca-file checks client certificates in the TLS handshake: give --tls-cert and --tls-key too"
        );
    }
    // kube-scheduler, which has its own leader election, is the only
    // caller: the extender binds whenever it is asked.
    let binder = client.clone().filter(|_| opts.bind).map(|c| {
        let leadership = Arc::new(Leadership::default());
        leadership.lead_forever();
        (c, leadership, opts.api_timeout)
    });
    let ext = Arc::new(Extender {
        framework,
        cluster,
        status: status.clone(),
        binder,
        requests: Default::default(),
        nodes: Default::default(),
        in_flight: tokio::sync::Semaphore::new(opts.max_in_flight.max(1)),
        max_request_bytes: opts.max_request_bytes,
    });
    if let Some(client) = client.clone() {
        start_watchers(client, ext.clone(), &opts.config.metrics.sources, stop.clone())?;
    }
    {
        // The web view's cluster, built from the cache on request (the
        // queue is kube-scheduler's; a stateless extender has no cluster).
        // Weak: the status holds the source.
        let weak = Arc::downgrade(&ext);
        status.web.set_source(move || {
            let Some(ext) = weak.upgrade() else {
                return Default::default();
            };
            let Some(cluster) = &ext.cluster else {
                return Default::default();
            };
            let sched = cluster.lock().unwrap_or_else(|p| p.into_inner());
            crate::web::View {
                has_queue: false,
                ..crate::web::build(&sched, &Default::default(), Instant::now())
            }
        });
    }
    let admin = match &opts.admin {
        Some(a) => Some(crate::admin::serve(a, status.clone(), client.clone()).await?),
        None => None,
    };
    let listener = tokio::net::TcpListener::bind(opts.listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {} for the extender: {e}", opts.listen))?;
    let addr = listener.local_addr()?;
    let prefix = opts.prefix.trim_end_matches('/').to_owned();
    let app = axum::Router::new()
        .route(
            &format!("{prefix}/filter"),
            post({
                let ext = ext.clone();
                move |req: axum::extract::Request| verb(ext, "filter", req)
            }),
        )
        .route(
            &format!("{prefix}/prioritize"),
            post({
                let ext = ext.clone();
                move |req: axum::extract::Request| verb(ext, "prioritize", req)
            }),
        )
        .route(
            &format!("{prefix}/preempt"),
            post({
                let ext = ext.clone();
                move |req: axum::extract::Request| verb(ext, "preempt", req)
            }),
        )
        .route(
            &format!("{prefix}/bind"),
            post({
                let ext = ext.clone();
                move |req: axum::extract::Request| bind_verb(ext, req)
            }),
        )
        // Bodies are read by the verbs, within the limit of the moment.
        .layer(axum::extract::DefaultBodyLimit::disable());
    let mut stop_server = stop;
    let stopping = ext.status.clone();
    let shutdown = async move {
        let _ = stop_server.wait_for(|s| *s).await;
        // The watchers end now: not a death.
        stopping.stopping.store(true, std::sync::atomic::Ordering::SeqCst);
    };
    let server = match &opts.tls {
        None => spawn_server(listener, app, shutdown),
        Some(files) => {
            let clients = match opts.client_ca.as_deref() {
                Some(ca) => crate::tls::ClientCerts::Required(ca),
                None => crate::tls::ClientCerts::None,
            };
            let config = crate::tls::server_config(Some(files), &[], clients)?;
            spawn_server(
                crate::tls::TlsListener::new(listener, config, "extender"),
                app,
                shutdown,
            )
        }
    };
    let verbs = if opts.bind {
        "filter prioritize preempt bind"
    } else {
        "filter prioritize preempt"
    };
    tracing::info!(%addr, prefix = %format!("{prefix}/"), verbs, "extender verbs");
    Ok(Running {
        addr,
        admin,
        server,
        tls: opts.tls.is_some(),
    })
}

/// Serves `app` on `listener` until `shutdown`.
fn spawn_server<L>(
    listener: L,
    app: axum::Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> tokio::task::JoinHandle<()>
where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).with_graceful_shutdown(shutdown).await {
            tracing::error!(error = %e, "extender server stopped");
        }
    })
}

/// The watchers (and the metric sources' queries) feed a thread that
/// applies their messages to the cache.
fn start_watchers(
    client: kube::Client,
    ext: Arc<Extender>,
    sources: &[wasmsched_core::metrics::config::MetricSource],
    stop: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let (tx, mut rx) = mpsc::channel::<Msg>(crate::daemon::MSG_CAPACITY);
    spawn_watchers(&client, &tx, &ext.status, &stop);
    crate::metric_sources::spawn(sources, &tx, &ext.status, &stop)?;
    drop(tx);
    std::thread::Builder::new()
        .name("extender-cache".into())
        .spawn(move || {
            let mut synced = Synced::default();
            while let Some(msg) = rx.blocking_recv() {
                let Some(cluster) = &ext.cluster else { return };
                let mut sched = cluster.lock().unwrap_or_else(|p| p.into_inner());
                apply(&mut sched, &mut synced, msg, &ext.status.metrics);
                // Apply what else is waiting under the same lock.
                while let Ok(msg) = rx.try_recv() {
                    apply(&mut sched, &mut synced, msg, &ext.status.metrics);
                }
                ext.nodes
                    .store(sched.cache.node_count(), std::sync::atomic::Ordering::Relaxed);
            }
        })
        .expect("cannot start the extender's cache thread");
    Ok(())
}

/// Serves one verb: the body is decoded and answered on a blocking thread
/// (the framework's own pool does the parallel part), never on the
/// reactor. An error of the extender is the answer's `Error` (filter), or
/// a 500 with the message (prioritize, whose answer is a bare list).
async fn verb(ext: Arc<Extender>, verb: &'static str, req: axum::extract::Request) -> Response {
    let started = Instant::now();
    let Ok(_slot) = ext.in_flight.acquire().await else {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    let body = match ext.read_body(req).await {
        Ok(b) => b,
        Err(refused) => {
            ext.status.metrics.extender_request(verb, "error", started.elapsed());
            return refused;
        }
    };
    let work = {
        let ext = ext.clone();
        tokio::task::spawn_blocking(move || match verb {
            "filter" => {
                let r = ext.filter(&body);
                let ok = r.error.is_empty();
                (serde_json::to_vec(&r).map_err(|e| e.to_string()), ok)
            }
            "prioritize" => match ext.prioritize(&body) {
                Ok(list) => (serde_json::to_vec(&list).map_err(|e| e.to_string()), true),
                Err(e) => (Err(e), false),
            },
            _ => match ext.preempt(&body) {
                Ok(r) => (serde_json::to_vec(&r).map_err(|e| e.to_string()), true),
                Err(e) => (Err(e), false),
            },
        })
    };
    let (answer, ok) = work
        .await
        .unwrap_or_else(|e| (Err(format!("the request failed: {e}")), false));
    ext.status
        .metrics
        .extender_request(verb, if ok { "ok" } else { "error" }, started.elapsed());
    match answer {
        Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(e) => {
            tracing::warn!(verb, error = %e, "extender request failed");
            (StatusCode::INTERNAL_SERVER_ERROR, e).into_response()
        }
    }
}

/// Serves `bind`: binds through the API server with the daemon's binder
/// (bounded in time, retried on 429/5xx); a refusal is the answer's `Error`.
async fn bind_verb(ext: Arc<Extender>, req: axum::extract::Request) -> Response {
    let started = Instant::now();
    let Ok(_slot) = ext.in_flight.acquire().await else {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    let body = match ext.read_body(req).await {
        Ok(b) => b,
        Err(refused) => {
            ext.status.metrics.extender_request("bind", "error", started.elapsed());
            return refused;
        }
    };
    let result = async {
        let Some((client, leadership, timeout)) = &ext.binder else {
            return Err("this extender does not bind (start it with --bind)".to_owned());
        };
        let args: ExtenderBindingArgs =
            serde_json::from_slice(&body).map_err(|e| format!("cannot read the request (ExtenderBindingArgs): {e}"))?;
        let job = crate::binder::BindJob {
            namespace: args.pod_namespace,
            name: args.pod_name,
            uid: args.pod_uid,
            node: args.node,
            profile: ext.framework.profile.clone(),
            queued_at: started,
            // kube-scheduler binds the pod's volumes and writes its
            // claims itself before it calls the extender's bind.
            volumes: None,
            devices: None,
            plugins: None,
        };
        match crate::binder::bind(client, &job, leadership, &ext.status, *timeout, &mut Vec::new()).await {
            BindResult::Ok => Ok(()),
            BindResult::Drop(why) | BindResult::Failed(why) | BindResult::Rejected(why) => Err(why),
        }
    }
    .await;
    let error = result.err().unwrap_or_default();
    let outcome = if error.is_empty() { "ok" } else { "error" };
    ext.status.metrics.extender_request("bind", outcome, started.elapsed());
    let answer = ExtenderBindingResult { error };
    (
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::to_vec(&answer).unwrap_or_default(),
    )
        .into_response()
}

/// The nodes of a request, resolved against a snapshot.
struct Candidates {
    snapshot: Arc<Snapshot>,
    /// Snapshot positions, in request order.
    idx: Vec<usize>,
    /// Names the snapshot does not know (names mode only).
    unknown: Vec<String>,
    /// The request's node objects by name, to echo back: present in
    /// full-node mode, absent in names mode (which answers with names).
    objects: Option<HashMap<String, Box<serde_json::value::RawValue>>>,
}

impl Extender {
    /// The request's body, within [`body_limit`]; a larger one is refused
    /// with 413 before it is read (by its `Content-Length`) or as soon as
    /// it passes the limit.
    async fn read_body(&self, req: axum::extract::Request) -> Result<Bytes, Response> {
        let nodes = self
            .cluster
            .as_ref()
            .map(|_| self.nodes.load(std::sync::atomic::Ordering::Relaxed));
        let limit = body_limit(self.max_request_bytes, nodes);
        let too_large = || {
            (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the request is larger than this extender reads ({limit} bytes: {} nodes known; --max-request-mib)\n",
                    nodes.map_or_else(|| "no".to_owned(), |n| n.to_string())
                ),
            )
                .into_response()
        };
        let declared = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit as u64) {
            return Err(too_large());
        }
        axum::body::to_bytes(req.into_body(), limit).await.map_err(|e| {
            let inner = e.into_inner();
            let over = std::iter::successors(Some(&*inner as &(dyn std::error::Error + 'static)), |e| e.source())
                .any(|e| e.is::<http_body_util::LengthLimitError>());
            if over {
                too_large()
            } else {
                (StatusCode::BAD_REQUEST, format!("cannot read the request: {inner}\n")).into_response()
            }
        })
    }

    fn decode(&self, body: &[u8]) -> Result<(PodInfo, Candidates), String> {
        let args: ExtenderArgs =
            serde_json::from_slice(body).map_err(|e| format!("cannot read the request (ExtenderArgs): {e}"))?;
        let pod = args.pod.ok_or("the request has no Pod")?;
        let pod = PodInfo::from_pod(&pod).map_err(|e| e.to_string())?;
        let candidates = match (args.node_names, args.nodes) {
            (Some(names), _) => {
                let Some(cluster) = &self.cluster else {
                    return Err("this extender has no API server, so it knows no node by name: configure it with nodeCacheCapable: false".into());
                };
                let snapshot = cluster.lock().unwrap_or_else(|p| p.into_inner()).snapshot_now();
                let mut idx = Vec::with_capacity(names.len());
                let mut unknown = Vec::new();
                for n in names {
                    match snapshot.position(&n) {
                        Some(i) => idx.push(i),
                        None => unknown.push(n),
                    }
                }
                Candidates {
                    snapshot,
                    idx,
                    unknown,
                    objects: None,
                }
            }
            (None, Some(list)) => self.whole_nodes(list)?,
            (None, None) => return Err("the request has neither Nodes nor NodeNames".into()),
        };
        Ok((pod, candidates))
    }

    /// Full-node mode: from the cache when it knows every node of the
    /// request (usage included; the nodes' JSON is then only read for their
    /// names), else from the request's objects alone.
    fn whole_nodes(&self, list: NodeList) -> Result<Candidates, String> {
        let names = list.names().map_err(|e| format!("cannot read Nodes: {e}"))?;
        let cached = self.cluster.as_ref().and_then(|c| {
            let snapshot = c.lock().unwrap_or_else(|p| p.into_inner()).snapshot_now();
            let idx: Option<Vec<usize>> = names.iter().map(|n| snapshot.position(n)).collect();
            idx.map(|idx| (snapshot, idx))
        });
        let (snapshot, idx) = match cached {
            Some(found) => found,
            None => {
                let mut cache = Cache::new();
                for n in list.nodes().map_err(|e| format!("cannot read Nodes: {e}"))? {
                    cache.upsert_node(NodeData::from_node(&n).map_err(|e| e.to_string())?);
                }
                let snapshot = Arc::new(cache.snapshot());
                let idx = names.iter().filter_map(|n| snapshot.position(n)).collect();
                (snapshot, idx)
            }
        };
        Ok(Candidates {
            snapshot,
            idx,
            unknown: Vec::new(),
            objects: Some(names.into_iter().zip(list.items).collect()),
        })
    }

    fn filter(&self, body: &[u8]) -> ExtenderFilterResult {
        let (pod, c) = match self.decode(body) {
            Ok(d) => d,
            Err(error) => {
                return ExtenderFilterResult {
                    error,
                    ..Default::default()
                };
            }
        };
        let mut state = self.cycle_state(c.snapshot.clone());
        let verdicts = self
            .framework
            .filter_for_extender(&mut state, &pod, &c.snapshot, &c.idx);
        self.record_timings(&mut state);
        let verdicts = match verdicts {
            Ok(v) => v,
            Err(e) => {
                return ExtenderFilterResult {
                    error: error_text(e),
                    ..Default::default()
                };
            }
        };
        let mut out = ExtenderFilterResult::default();
        for n in c.unknown {
            out.failed_nodes
                .insert(n, "node(s) were not in the extender's cache yet".into());
        }
        for (i, st) in verdicts.rejected {
            let name = c.snapshot.nodes[i].name().to_owned();
            let map = if st.code() == Code::UnschedulableAndUnresolvable {
                &mut out.failed_and_unresolvable_nodes
            } else {
                &mut out.failed_nodes
            };
            map.insert(name, st.message());
        }
        let passed = verdicts.feasible.iter().map(|&i| c.snapshot.nodes[i].name());
        match c.objects {
            None => out.node_names = Some(passed.map(str::to_owned).collect()),
            Some(mut objects) => {
                out.nodes = Some(NodeList {
                    items: passed.filter_map(|n| objects.remove(n)).collect(),
                })
            }
        }
        out
    }

    fn prioritize(&self, body: &[u8]) -> Result<Vec<HostPriority>, String> {
        let (pod, c) = self.decode(body)?;
        let mut state = self.cycle_state(c.snapshot.clone());
        let judged = self
            .framework
            .prioritize_for_extender(&mut state, &pod, &c.snapshot, &c.idx);
        self.record_timings(&mut state);
        let (totals, max) = judged.map_err(error_text)?;
        let mut out: Vec<HostPriority> = c
            .idx
            .iter()
            .zip(totals)
            .map(|(&i, t)| HostPriority {
                host: c.snapshot.nodes[i].name().to_owned(),
                score: extender_score(t, max),
            })
            .collect();
        // Nodes the cache does not know yet score 0.
        out.extend(c.unknown.into_iter().map(|host| HostPriority { host, score: 0 }));
        Ok(out)
    }
}

impl Extender {
    /// A request's cycle state on `snapshot`; one request in
    /// [`PLUGIN_TIMING_SAMPLE`] times its plugins, as the daemon samples its
    /// cycles.
    fn cycle_state(&self, snapshot: Arc<Snapshot>) -> CycleState {
        let mut state = CycleState::default();
        state.set_snapshot(snapshot);
        let n = self.requests.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if n.is_multiple_of(PLUGIN_TIMING_SAMPLE) {
            state.sample_plugin_timings();
        }
        state
    }

    /// Exports a sampled request's plugin timings
    /// (`scheduler_plugin_execution_duration_seconds`).
    fn record_timings(&self, state: &mut CycleState) {
        for t in state.take_plugin_timings() {
            self.status
                .metrics
                .plugin(&t.plugin, t.extension_point, t.status, t.took);
        }
    }

    /// `preempt`: of the nodes kube-scheduler would preempt on, those where
    /// the profile's Filter accepts the pod once that node's victims are
    /// gone, with the same victims (by UID). Evaluated on a copy of the
    /// cache without every victim of the request.
    fn preempt(&self, body: &[u8]) -> Result<ExtenderPreemptionResult, String> {
        let args: ExtenderPreemptionArgs = serde_json::from_slice(body)
            .map_err(|e| format!("cannot read the request (ExtenderPreemptionArgs): {e}"))?;
        let pod = args.pod.ok_or("the request has no Pod")?;
        let pod = PodInfo::from_pod(&pod).map_err(|e| e.to_string())?;
        let Some(cluster) = &self.cluster else {
            return Err(
                "this extender has no API server, so it knows no node's pods: it cannot judge preemption".into(),
            );
        };
        // Victims by UID, whichever form they came in.
        let mut victims: BTreeMap<String, MetaVictims> = args.node_name_to_meta_victims;
        for (node, v) in args.node_name_to_victims {
            victims.entry(node).or_insert_with(|| MetaVictims {
                pods: v
                    .pods
                    .iter()
                    .map(|p| MetaPod {
                        uid: p.metadata.uid.clone().unwrap_or_default(),
                    })
                    .collect(),
                num_pdb_violations: v.num_pdb_violations,
            });
        }
        let uids: HashSet<&str> = victims
            .values()
            .flat_map(|v| v.pods.iter().map(|p| p.uid.as_str()))
            .collect();
        let snapshot = {
            let sched = cluster.lock().unwrap_or_else(|p| p.into_inner());
            Arc::new(sched.cache.without_pods(&uids).snapshot())
        };
        let idx: Vec<usize> = victims.keys().filter_map(|n| snapshot.position(n)).collect();
        let mut state = self.cycle_state(snapshot.clone());
        let verdicts = self.framework.filter_for_extender(&mut state, &pod, &snapshot, &idx);
        self.record_timings(&mut state);
        let verdicts = verdicts.map_err(error_text)?;
        let mut out = ExtenderPreemptionResult::default();
        for i in verdicts.feasible {
            let name = snapshot.nodes[i].name();
            if let Some(v) = victims.remove(name) {
                out.node_name_to_meta_victims.insert(name.to_owned(), v);
            }
        }
        Ok(out)
    }
}

fn error_text(e: ScheduleError) -> String {
    match e {
        ScheduleError::Error(m) => m,
        other => other.to_string(),
    }
}
