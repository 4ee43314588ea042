//! `wasmsched bench --e2e`: the daemon (a child process running `wasmsched
//! run`) against the API server double over HTTP, or against any cluster
//! ([`crate::bench_e2e_cluster`]). Pods are created in the double; each
//! one's create→bound latency is measured from the double's own watch, and
//! the daemon's peak memory from /proc.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::events::v1::Event;
use serde_json::json;
use wasmsched_apiserver_sim::{ApiServer, Config as SimConfig, Filter, WatchFrom, WatchMsg, resources};
use wasmsched_core::fixture::Objects;
use wasmsched_core::synthetic;

/// Settings of an end-to-end run.
pub struct E2e {
    pub nodes: usize,
    pub pods: usize,
    pub rate: u32,
    pub seed: u64,
    pub json: bool,
    /// Bind pods to nodes in turn, without scheduling (`--null`).
    pub null: bool,
    /// WebAssembly plugins the profile enables (`--wasm`).
    pub wasm: Option<PathBuf>,
    /// Shadow versions of them (`--shadow`), at `shadow_percent`.
    pub shadow: Option<PathBuf>,
    pub shadow_percent: u32,
    /// The daemon's `parallelism` (`--parallelism`; default: its own).
    pub parallelism: Option<usize>,
    /// Keep the web view open during the run (its cluster view fetched
    /// every 2 s, as the page does), and measure its first load after.
    pub web: bool,
    /// Requests a second on the view (`--web-rate`; none: the page's one
    /// every 2 s).
    pub web_rate: Option<u32>,
    /// Any cluster instead of the in-process double (`--master`,
    /// `--kubeconfig`).
    pub cluster: Option<Target>,
}

/// A cluster to run against: its API server (`--master`), its kubeconfig
/// (`--kubeconfig`), or both (the kubeconfig's credentials at that URL).
#[derive(Debug, Clone)]
pub struct Target {
    pub kubeconfig: Option<PathBuf>,
    pub master: Option<String>,
}

impl Target {
    /// The daemon's arguments naming the cluster.
    pub(crate) fn args(&self) -> Vec<std::ffi::OsString> {
        let mut a = Vec::new();
        if let Some(k) = &self.kubeconfig {
            a.extend(["--kubeconfig".into(), k.clone().into_os_string()]);
        }
        if let Some(m) = &self.master {
            a.extend(["--master".into(), m.into()]);
        }
        a
    }
}

/// The profile's scheduler name on the double (the synthetic pods' own).
const SCHEDULER: &str = "wasm-scheduler";

/// The daemon's configuration: the client budget, the profile named
/// `scheduler` (with `--wasm`, enabling the directory's plugins and its
/// shadows), and where its lease is kept.
pub(crate) fn daemon_config(e: &E2e, scheduler: &str, lease: (&str, &str)) -> anyhow::Result<serde_json::Value> {
    let mut config = json!({
        "clientConnection": {"qps": 5000, "burst": 5000},
        "leaderElection": {"leaderElect": true, "resourceNamespace": lease.0, "resourceName": lease.1},
        "profiles": [{"schedulerName": scheduler}],
    });
    if let Some(p) = e.parallelism {
        anyhow::ensure!(p > 0, "--parallelism must be at least 1");
        config["parallelism"] = json!(p);
    }
    if let Some(dir) = &e.wasm {
        // The names its files provide (compiled here once: the daemon
        // then loads them from the compiled cache).
        let mut probe = wasmsched_core::config::Config::from_yaml("{}")?;
        let (_, host) = crate::plugin::registry(
            &mut probe,
            Some(dir),
            e.seed,
            crate::plugin::FirstScan::Now,
            wasmsched_wasm::Tiering::Off,
            &[],
        )?;
        let names: Vec<serde_json::Value> = host
            .map(|h| h.versions().into_iter().map(|(_, n, _)| json!({"name": n})).collect())
            .unwrap_or_default();
        anyhow::ensure!(!names.is_empty(), "{} holds no plugin", dir.display());
        config["profiles"] = json!([{"schedulerName": scheduler, "plugins": {"multiPoint": {"enabled": names}}}]);
        config["wasmPlugins"] = json!({"directory": dir});
        if let Some(sh) = &e.shadow {
            config["wasmPlugins"]["shadow"] = json!({"directory": sh, "samplePercent": e.shadow_percent});
        }
    }
    Ok(config)
}

/// `GET path` on `addr`: the status and the body.
pub(crate) async fn get(addr: &str, path: &str) -> Option<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut c = tokio::net::TcpStream::connect(addr).await.ok()?;
    c.write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut out = String::new();
    c.read_to_string(&mut out).await.ok()?;
    let status = out.split(' ').nth(1)?.parse().ok()?;
    Some((status, out.split_once("\r\n\r\n")?.1.to_owned()))
}

/// What a cluster under the bench does for it: create the pods, say which
/// are bound, count the `Scheduled` events, check the nodes.
pub(crate) trait Cluster {
    /// Creates `pod` (or starts to), noting when in `created`.
    async fn create(&mut self, pod: Pod, created: &mut HashMap<String, Instant>) -> anyhow::Result<()>;
    /// Waits for the creations started.
    async fn created_all(&mut self) -> anyhow::Result<()>;
    /// Moves the bindings seen since the last call into `bound_at`.
    fn bound(&mut self, bound_at: &mut HashMap<String, Instant>);
    /// `Scheduled` events about the bench's pods.
    async fn scheduled_events(&self) -> anyhow::Result<usize>;
    /// Nodes whose bound pods request more than they have.
    async fn overcommitted(&self) -> anyhow::Result<Vec<String>>;
}

/// The in-process double: pods created and watched in its store.
struct Double {
    server: ApiServer,
    rx: tokio::sync::mpsc::Receiver<WatchMsg>,
}

impl Cluster for Double {
    async fn create(&mut self, pod: Pod, created: &mut HashMap<String, Instant>) -> anyhow::Result<()> {
        let mut v = serde_json::to_value(&pod)?;
        v["apiVersion"] = json!("v1");
        v["kind"] = json!("Pod");
        created.insert(key(&pod), Instant::now());
        self.server.create(v).map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(())
    }

    async fn created_all(&mut self) -> anyhow::Result<()> {
        Ok(())
    }

    fn bound(&mut self, bound_at: &mut HashMap<String, Instant>) {
        while let Ok(m) = self.rx.try_recv() {
            if let WatchMsg::Event(_, c) = m {
                let o = &c.object.value;
                if o.pointer("/spec/nodeName").and_then(|v| v.as_str()).is_some() {
                    let key = format!(
                        "{}/{}",
                        o["metadata"]["namespace"].as_str().unwrap_or(""),
                        o["metadata"]["name"].as_str().unwrap_or("")
                    );
                    bound_at.entry(key).or_insert_with(Instant::now);
                }
            }
        }
    }

    async fn scheduled_events(&self) -> anyhow::Result<usize> {
        Ok(self
            .server
            .list::<Event>()
            .iter()
            .filter(|ev| ev.reason.as_deref() == Some("Scheduled"))
            .count())
    }

    async fn overcommitted(&self) -> anyhow::Result<Vec<String>> {
        overcommitted(&self.server.list::<Node>(), &self.server.list::<Pod>())
    }
}

/// `namespace/name` of a pod.
pub(crate) fn key(p: &Pod) -> String {
    format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or("default"),
        p.metadata.name.as_deref().unwrap_or("")
    )
}

/// The nodes among `nodes` whose bound `pods` request more than they have.
pub(crate) fn overcommitted(nodes: &[Node], pods: &[Pod]) -> anyhow::Result<Vec<String>> {
    let mut cache = wasmsched_core::Cache::new();
    for n in nodes {
        cache.upsert_node(wasmsched_core::NodeData::from_node(n)?);
    }
    for p in pods {
        if p.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| !n.is_empty())
        {
            cache.upsert_pod(std::sync::Arc::new(wasmsched_core::PodInfo::from_pod(p)?));
        }
    }
    Ok(cache.overcommitted_nodes())
}

/// The daemon under the bench, a child process.
pub(crate) struct Daemon {
    child: std::process::Child,
    admin: String,
    config: PathBuf,
}

impl Daemon {
    /// Starts `wasmsched run` on the cluster `cluster_args` name, with
    /// `config`, as `identity`.
    pub(crate) fn start(
        e: &E2e,
        cluster_args: &[std::ffi::OsString],
        identity: &str,
        config: &serde_json::Value,
    ) -> anyhow::Result<Self> {
        let path = std::env::temp_dir().join(format!("wasmsched-bench-e2e-{}.yaml", std::process::id()));
        std::fs::write(&path, config.to_string())?;
        let admin = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.to_string();
        let child = Command::new(std::env::current_exe()?)
            .arg("run")
            .args(cluster_args)
            .args(["--identity", identity, "--admin-address", &admin, "--admin-plain-http"])
            .arg("--config")
            .arg(&path)
            .args(e.null.then_some("--null-placement"))
            .env("WASMSCHED_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .context("cannot start the daemon")?;
        Ok(Self {
            child,
            admin,
            config: path,
        })
    }

    /// Waits until the daemon holds `lease` and, with `--wasm`, its
    /// plugins (and their shadows) serve.
    pub(crate) async fn ready(&mut self, e: &E2e, client: &kube::Client, lease: (&str, &str)) -> anyhow::Result<()> {
        let leases: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
            kube::Api::namespaced(client.clone(), lease.0);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let held = leases
                .get_opt(lease.1)
                .await
                .ok()
                .flatten()
                .and_then(|l| l.spec?.holder_identity);
            if held.is_some() {
                break;
            }
            if let Some(status) = self.child.try_wait()? {
                anyhow::bail!("the daemon exited ({status}) before it led");
            }
            anyhow::ensure!(Instant::now() < deadline, "the daemon did not take the lease");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The daemon has synced its caches by then or soon after.
        tokio::time::sleep(Duration::from_millis(500)).await;
        if e.wasm.is_some() {
            loop {
                let ready = get(&self.admin, "/readyz").await.is_some_and(|(s, _)| s == 200);
                let shadowing = e.shadow.is_none()
                    || get(&self.admin, "/debug/shadow").await.is_some_and(|(_, b)| {
                        serde_json::from_str::<serde_json::Value>(&b)
                            .is_ok_and(|v| v["shadowedProfiles"].as_array().is_some_and(|a| !a.is_empty()))
                    });
                if ready && shadowing {
                    break;
                }
                anyhow::ensure!(
                    Instant::now() < deadline + Duration::from_secs(60),
                    "the daemon's plugins did not load"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Ok(())
    }

    /// Stops it as a node's kubelet would (SIGTERM: it drains its reports).
    fn stop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.config);
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.stop();
        }
    }
}

/// Where a run was made, for its report.
pub(crate) enum Place {
    /// The in-process double.
    Double,
    /// A cluster: the namespace the bench used.
    Cluster { namespace: String },
}

/// Creates `pods` in `cluster`, which `daemon` schedules, and reports;
/// returns the summary `--json` prints.
pub(crate) async fn measure<C: Cluster>(
    e: &E2e,
    cluster: &mut C,
    mut daemon: Daemon,
    pods: Vec<Pod>,
    place: &Place,
) -> anyhow::Result<serde_json::Value> {
    let mut created: HashMap<String, Instant> = HashMap::with_capacity(pods.len());
    // CPU of the daemon, and of this process (creating the pods, watching
    // them, and on the double, serving the API), over the measured part.
    let pid = daemon.child.id().to_string();
    let daemon_cpu_before = crate::bench::cpu_seconds_of(&pid);
    let own_cpu_before = crate::bench::cpu_seconds_of("self");
    // An open page: what it costs the daemon to record and publish.
    let names: Vec<String> = pods
        .iter()
        .map(|p| {
            format!(
                "{}/{}",
                p.metadata.namespace.as_deref().unwrap_or("default"),
                p.metadata.name.as_deref().unwrap_or_default()
            )
        })
        .collect();
    let watcher = e.web.then(|| {
        let admin = daemon.admin.clone();
        let rate = e.web_rate;
        tokio::spawn(async move {
            let Some(rate) = rate.filter(|r| *r > 0) else {
                loop {
                    let _ = get(&admin, "/ui/cluster").await;
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
            };
            // Each request on its own connection, none waiting for the
            // last: the views in turn, decisions of pods already created.
            let every = Duration::from_secs_f64(1.0 / f64::from(rate));
            let started = Instant::now();
            for i in 0usize.. {
                let path = match i % 3 {
                    0 => "/ui/cluster".to_owned(),
                    1 => "/ui/queue".to_owned(),
                    _ => format!(
                        "/ui/decision?pod={}",
                        names.get((i / 3) % names.len().max(1)).map_or("", String::as_str)
                    ),
                };
                let admin = admin.clone();
                tokio::spawn(async move {
                    let _ = get(&admin, &path).await;
                });
                if let Some(wait) = (started + every * (i as u32 + 1)).checked_duration_since(Instant::now()) {
                    tokio::time::sleep(wait).await;
                }
            }
        })
    });
    let start = Instant::now();
    let mut bound_at: HashMap<String, Instant> = HashMap::with_capacity(pods.len());
    let total = pods.len();
    for (i, p) in pods.into_iter().enumerate() {
        if e.rate > 0 {
            let due = start + Duration::from_secs_f64(i as f64 / f64::from(e.rate));
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                tokio::time::sleep(wait).await;
            }
        }
        cluster.create(p, &mut created).await?;
        cluster.bound(&mut bound_at);
    }
    cluster.created_all().await?;
    let created_in = start.elapsed();
    // Wait until every pod is bound or nothing moves for 5 s.
    let mut last_progress = Instant::now();
    let mut last_n = 0;
    while bound_at.len() < total && last_progress.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(10)).await;
        cluster.bound(&mut bound_at);
        if bound_at.len() != last_n {
            last_n = bound_at.len();
            last_progress = Instant::now();
        }
    }
    // Events written when the last pod is bound, and after a normal stop.
    let events_at_last_bind = cluster.scheduled_events().await?;
    let rss = crate::bench::peak_rss_mb_of(&pid);
    let per_pod_ms =
        |before: Option<f64>, after: Option<f64>| Some((after? - before?) * 1000.0 / bound_at.len().max(1) as f64);
    let daemon_cpu = per_pod_ms(daemon_cpu_before, crate::bench::cpu_seconds_of(&pid));
    if let Some(w) = watcher {
        w.abort();
    }
    // The page's first load now, view by view: time to the whole answer,
    // and its size.
    let mut web = Vec::new();
    if e.web {
        for path in ["/ui", "/ui?view=queue", "/ui?view=decisions", "/ui?view=plugins"] {
            let t = Instant::now();
            let bytes = get(&daemon.admin, path).await.map_or(0, |(_, b)| b.len());
            web.push(json!({"path": path, "ms": (t.elapsed().as_secs_f64() * 1e4).round() / 10.0, "bytes": bytes}));
        }
    }
    let shadow: Option<serde_json::Value> = match e.shadow {
        Some(_) => get(&daemon.admin, "/debug/shadow")
            .await
            .and_then(|(_, b)| serde_json::from_str(&b).ok()),
        None => None,
    };
    let own_cpu = per_pod_ms(own_cpu_before, crate::bench::cpu_seconds_of("self"));
    daemon.stop();
    let events_after_stop = cluster.scheduled_events().await?;
    let overcommitted = cluster.overcommitted().await?;
    let share = |n: usize| 100.0 * n as f64 / bound_at.len().max(1) as f64;
    let mut lat: Vec<Duration> = bound_at
        .iter()
        .filter_map(|(k, t)| created.get(k).map(|c| t.saturating_duration_since(*c)))
        .collect();
    lat.sort();
    let pct = |p: f64| crate::bench::percentile(&lat, p);
    let last_bound = bound_at.values().max().copied().unwrap_or(start);
    let span = last_bound.saturating_duration_since(start).as_secs_f64().max(1e-9);
    let per_sec = bound_at.len() as f64 / span;
    println!(
        "end to end{}{}: {} nodes, {} pods created in {:.2} s ({}), {} bound in {:.2} s: {:.0} pods/s; create→bound p50 {:.1} ms, p99 {:.1} ms; daemon peak RSS {:.0} MiB",
        if e.null {
            " (null placement: no scheduling cycle)"
        } else {
            ""
        },
        match place {
            Place::Double => String::new(),
            Place::Cluster { namespace } => format!(" on the cluster (namespace {namespace})"),
        },
        e.nodes,
        total,
        created_in.as_secs_f64(),
        if e.rate > 0 {
            format!("{} pods/s", e.rate)
        } else {
            "at once".into()
        },
        bound_at.len(),
        span,
        per_sec,
        pct(0.5),
        pct(0.99),
        rss.unwrap_or(0.0)
    );
    println!(
        "Scheduled events: {events_at_last_bind} ({:.1} %) written when the last pod was bound, {events_after_stop} ({:.1} %) after the daemon stopped",
        share(events_at_last_bind),
        share(events_after_stop)
    );
    println!(
        "CPU per pod bound: daemon {:.2} ms, {} {:.2} ms",
        daemon_cpu.unwrap_or(0.0),
        match place {
            Place::Double => "API server double and bench",
            Place::Cluster { .. } => "bench",
        },
        own_cpu.unwrap_or(0.0)
    );
    if overcommitted.is_empty() {
        println!("no node overcommitted");
    } else {
        println!(
            "{} nodes overcommitted{}: {}",
            overcommitted.len(),
            if e.null {
                " (null placement places without looking)"
            } else {
                ""
            },
            overcommitted.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
        );
    }
    for w in &web {
        println!(
            "web view {}: {} ms, {} bytes",
            w["path"].as_str().unwrap_or(""),
            w["ms"],
            w["bytes"]
        );
    }
    let profile = match place {
        Place::Double => SCHEDULER,
        Place::Cluster { namespace } => namespace,
    };
    if let Some(sh) = &shadow {
        let p = &sh["profiles"][profile];
        println!(
            "shadow at {}%: {} cycles handed over, {} dropped, {} compared, agreement {}",
            sh["samplePercent"], sh["sampled"], sh["dropped"], p["compared"], p["agreement"]
        );
    }
    {
        let own = match place {
            Place::Double => "server_cpu_ms_per_pod",
            Place::Cluster { .. } => "bench_cpu_ms_per_pod",
        };
        let mut v = json!({
            "mode": if e.null { "e2e-null" } else { "e2e" }, "nodes": e.nodes, "pods": total, "rate": e.rate, "bound": bound_at.len(),
            "pods_per_sec": (per_sec * 10.0).round() / 10.0,
            "p50_ms": (pct(0.5) * 10.0).round() / 10.0, "p99_ms": (pct(0.99) * 10.0).round() / 10.0,
            "daemon_peak_rss_mb": rss.map(f64::round),
            "events_at_last_bind": events_at_last_bind, "events_after_stop": events_after_stop,
            "overcommitted_nodes": overcommitted.len(),
            "daemon_cpu_ms_per_pod": daemon_cpu.map(|v| (v * 1000.0).round() / 1000.0),
            own: own_cpu.map(|v| (v * 1000.0).round() / 1000.0),
            "web": e.web.then_some(&web),
            "shadow": shadow.as_ref().map(|sh| json!({
                "sample_percent": sh["samplePercent"], "sampled": sh["sampled"], "dropped": sh["dropped"],
                "compared": sh["profiles"][profile]["compared"],
            })),
        });
        if let Place::Cluster { namespace } = place {
            v["namespace"] = json!(namespace);
        }
        Ok(v)
    }
}

pub fn run(e: E2e) -> anyhow::Result<()> {
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async move {
        if let Some(target) = e.cluster.clone() {
            return crate::bench_e2e_cluster::run(&e, &target).await;
        }
        let server = ApiServer::start("127.0.0.1:0".parse()?, SimConfig::default()).await?;
        server.load(&Objects {
            nodes: synthetic::nodes(e.nodes, e.seed),
            priority_classes: synthetic::priority_classes(),
            ..Default::default()
        })?;
        let pods = synthetic::pods(e.pods, SCHEDULER, e.seed);
        let lease = ("kube-system", SCHEDULER);
        let daemon_args = ["--master".into(), server.url().into()];
        let mut daemon = Daemon::start(&e, &daemon_args, "bench", &daemon_config(&e, SCHEDULER, lease)?)?;
        let client = kube::Client::try_from(kube::Config::new(server.url().parse()?))?;
        daemon.ready(&e, &client, lease).await?;
        let rv = server.store().resource_version();
        let rx = server
            .store()
            .watch(resources::PODS, Filter::default(), WatchFrom::Version(rv), false, false)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut double = Double { server, rx };
        let summary = measure(&e, &mut double, daemon, pods, &Place::Double).await;
        double.server.shutdown().await;
        if e.json {
            println!("{}", summary?);
        }
        Ok(())
    })
}
