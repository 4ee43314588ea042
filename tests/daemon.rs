//! End-to-end tests of `wasmsched run`, the real binary, against the API
//! server double over HTTP: placement, events and conditions, and the fault
//! suite (dropped watches, 410 on relist, 500/429, conflicting binders,
//! deletions mid-cycle, leader hand-off, restarts, requests that hang,
//! pods re-created under the same name, status-only update storms). After
//! each: no pod lost, none bound twice (the server logs every binding by
//! UID and binder), no node overcommitted, never two replicas binding at
//! the same time.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::events::v1::Event;
use serde_json::json;
use wasmsched_apiserver_sim::{ApiServer, Config as SimConfig, Match};
use wasmsched_core::{Cache, NodeData, PodInfo};

use support::FAST_LEASE;
use support::prometheus::Prometheus;

mod guest;
mod support;

struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn config_file() -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("wasmsched-daemon-test-{}.yaml", std::process::id()));
    std::fs::write(&p, FAST_LEASE).unwrap();
    p
}

fn daemon(server: &ApiServer, identity: &str, admin: &str) -> Daemon {
    run_daemon(server, identity, admin, &config_file(), &[], None)
}

/// `wasmsched run` against `server` with `config` and `extra` arguments;
/// its warnings go to `log` (none: nowhere).
fn run_daemon(
    server: &ApiServer,
    identity: &str,
    admin: &str,
    config: &std::path::Path,
    extra: &[&std::ffi::OsStr],
    log: Option<&std::path::Path>,
) -> Daemon {
    let stderr = match log {
        Some(p) => Stdio::from(std::fs::File::create(p).unwrap()),
        None => Stdio::null(),
    };
    let child = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .args([
            "run",
            "--master",
            &server.url(),
            "--identity",
            identity,
            "--admin-address",
            admin,
            "--admin-plain-http",
        ])
        .arg("--config")
        .arg(config)
        .args(extra)
        .env("WASMSCHED_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("start wasmsched run");
    Daemon(child)
}

/// A daemon with its own configuration (`FAST_LEASE` followed by `more`,
/// where `{CACHE}` names a fresh compile cache and `{PLUGINS}` the plugin
/// directory) and a plugin directory holding `files` (name, which may be
/// in a subdirectory, and source) from the start, in a fresh directory
/// tagged `tag` (whose `daemon.log` gets its warnings); returns it, its
/// admin address, the plugin directory and the directory to remove.
fn daemon_with_plugins(
    server: &ApiServer,
    tag: &str,
    more: &str,
    files: &[(&str, PathBuf)],
) -> (Daemon, String, PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("wasmsched-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    for (name, src) in files {
        let to = plugins.join(name);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(src, to).unwrap();
    }
    let config = dir.join("config.yaml");
    let more = more
        .replace("{CACHE}", &dir.join("cache").display().to_string())
        .replace("{PLUGINS}", &plugins.display().to_string());
    std::fs::write(&config, format!("{FAST_LEASE}{more}")).unwrap();
    let admin = free_port();
    let d = run_daemon(
        server,
        "replica-a",
        &admin,
        &config,
        &["--plugins".as_ref(), plugins.as_os_str()],
        Some(&dir.join("daemon.log")),
    );
    (d, admin, plugins, dir)
}

/// The message of a pod's `PodScheduled` condition, if any.
fn scheduled_message(s: &ApiServer, name: &str) -> Option<String> {
    s.get::<Pod>("default", name)?
        .status?
        .conditions?
        .into_iter()
        .find(|c| c.type_ == "PodScheduled")?
        .message
}

fn sigterm(d: &mut Daemon) {
    let _ = Command::new("kill").arg("-TERM").arg(d.0.id().to_string()).status();
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        if d.0.try_wait().unwrap().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the daemon did not stop on SIGTERM");
}

async fn server(nodes: usize) -> ApiServer {
    let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())
        .await
        .unwrap();
    s.create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}))
        .ok();
    for i in 0..nodes {
        add_node(&s, &format!("node-{i:03}"), "16", "64Gi");
    }
    s
}

fn add_node(s: &ApiServer, name: &str, cpu: &str, mem: &str) {
    s.create(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": format!("z{}", name.len() % 3)}},
        "status": {"allocatable": {"cpu": cpu, "memory": mem, "pods": "110"}, "conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .unwrap();
}

fn add_pod(s: &ApiServer, name: &str, scheduler: &str, cpu: &str) {
    s.create(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu, "memory": "128Mi"}}}]}
    }))
    .unwrap();
}

fn ours(p: &Pod) -> bool {
    p.spec.as_ref().and_then(|s| s.scheduler_name.as_deref()) == Some("wasm-scheduler")
}

fn bound(p: &Pod) -> bool {
    p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()
}

async fn wait_all_bound(s: &ApiServer, expect: usize, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let pods = s.list::<Pod>();
        let n = pods.iter().filter(|p| ours(p) && bound(p)).count();
        if n >= expect {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "only {n} of {expect} pods bound in {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// No node holds more than it can: recomputed from the server's objects
/// with the engine's own accounting.
fn assert_no_overcommit(s: &ApiServer) {
    let mut cache = Cache::new();
    for n in s.list::<Node>() {
        cache.upsert_node(NodeData::from_node(&n).unwrap());
    }
    for p in s.list::<Pod>() {
        if bound(&p) {
            cache.upsert_pod(Arc::new(PodInfo::from_pod(&p).unwrap()));
        }
    }
    assert_eq!(cache.overcommitted_nodes(), Vec::<String>::new());
}

fn free_port() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binds_500_pods_on_50_nodes_with_events_and_metrics() {
    let s = server(50).await;
    for i in 0..500 {
        add_pod(&s, &format!("p-{i:03}"), "wasm-scheduler", "250m");
    }
    for i in 0..5 {
        add_pod(&s, &format!("other-{i}"), "someone-else", "100m");
    }
    let admin = free_port();
    let _d = daemon(&s, "replica-a", &admin);
    wait_all_bound(&s, 500, Duration::from_secs(60)).await;
    assert_no_overcommit(&s);
    let pods = s.list::<Pod>();
    assert!(
        pods.iter().filter(|p| !ours(p)).all(|p| !bound(p)),
        "pods of another scheduler are left alone"
    );
    for p in pods.iter().filter(|p| ours(p)) {
        let cond = p.status.as_ref().unwrap().conditions.as_ref().unwrap();
        assert!(cond.iter().any(|c| c.type_ == "PodScheduled" && c.status == "True"));
    }
    assert_eq!(s.counters().bindings, 500);
    // events: one Scheduled per pod, by the profile's reporting controller
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let evs = s.list::<Event>();
        let scheduled: Vec<&Event> = evs
            .iter()
            .filter(|e| e.reason.as_deref() == Some("Scheduled"))
            .collect();
        if scheduled.len() == 500 {
            let e = scheduled[0];
            assert_eq!(e.reporting_controller.as_deref(), Some("wasm-scheduler"));
            assert_eq!(e.reporting_instance.as_deref(), Some("replica-a"));
            assert!(
                e.note
                    .as_deref()
                    .unwrap()
                    .starts_with("Successfully assigned default/p-")
            );
            break;
        }
        assert!(Instant::now() < deadline, "{} Scheduled events", scheduled.len());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // admin port
    let metrics = http_get(&admin, "/metrics").await;
    assert!(
        metrics.contains("scheduler_schedule_attempts_total{profile=\"wasm-scheduler\",result=\"scheduled\"} 500"),
        "{metrics}"
    );
    assert!(metrics.contains("scheduler_pending_pods{queue=\"active\"}"));
    assert!(metrics.contains("wasmsched_leader 1"));
    assert!(
        metrics.contains("scheduler_plugin_execution_duration_seconds_count{extension_point=\"Filter\",plugin=\"NodeResourcesFit\",status=\"Success\"}"),
        "{metrics}"
    );
    assert!(http_get(&admin, "/readyz").await.contains("ok"));
}

async fn http_get(addr: &str, path: &str) -> String {
    try_http_get(addr, path).await.unwrap()
}

/// The response to `GET path`, headers included, or why there is none.
async fn try_http_get(addr: &str, path: &str) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut c = tokio::net::TcpStream::connect(addr).await?;
    c.write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes())
        .await?;
    let mut out = String::new();
    c.read_to_string(&mut out).await?;
    Ok(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unschedulable_pod_gets_a_condition_and_one_event_then_binds_when_a_node_fits() {
    let s = server(3).await;
    add_pod(&s, "big", "wasm-scheduler", "40");
    let _d = daemon(&s, "replica-a", &free_port());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let p: Pod = s.get("default", "big").unwrap();
        let cond = p
            .status
            .as_ref()
            .and_then(|st| st.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "PodScheduled").cloned());
        if let Some(c) = cond
            && c.status == "False"
        {
            assert_eq!(c.reason.as_deref(), Some("Unschedulable"));
            assert_eq!(
                c.message.as_deref(),
                Some(
                    "0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
                )
            );
            break;
        }
        assert!(Instant::now() < deadline, "no Unschedulable condition");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Retries (node changes, the periodic flush) do not add events.
    add_node(&s, "small", "2", "4Gi");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let failed: Vec<Event> = s
        .list::<Event>()
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("FailedScheduling"))
        .collect();
    assert_eq!(failed.len(), 1, "one event, however many retries");
    assert_eq!(failed[0].type_.as_deref(), Some("Warning"));
    let t = Instant::now();
    add_node(&s, "huge", "64", "256Gi");
    wait_all_bound(&s, 1, Duration::from_secs(10)).await;
    let p: Pod = s.get("default", "big").unwrap();
    assert_eq!(p.spec.unwrap().node_name.as_deref(), Some("huge"));
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "bound {:?} after the node came",
        t.elapsed()
    );
    // A pod that finishes frees its node (it leaves the daemon's watch, which
    // asks for unfinished pods only, as kube-scheduler's informer does).
    add_pod(&s, "big-2", "wasm-scheduler", "40");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!bound(&s.get::<Pod>("default", "big-2").unwrap()), "huge is full");
    s.store()
        .patch(
            wasmsched_apiserver_sim::resources::PODS,
            "default",
            "big",
            Some("status"),
            "application/merge-patch+json",
            &json!({"status": {"phase": "Succeeded"}}),
        )
        .unwrap();
    wait_all_bound(&s, 2, Duration::from_secs(10)).await;
}

/// Watches dropped every second and history compacted (every resume is a
/// 410 and a relist), 20 % of requests failing with 500 or 429, another
/// actor binding some pods first, pods and nodes deleted mid-run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_suite_watch_drops_410_errors_conflicts_deletions() {
    let s = Arc::new(server(60).await);
    let total = 2000;
    for i in 0..total {
        add_pod(&s, &format!("p-{i:04}"), "wasm-scheduler", "100m");
    }
    s.faults().add_rule(wasmsched_apiserver_sim::FailRule {
        code: 500,
        count: None,
        fraction: Some(0.1),
        matching: Default::default(),
    });
    s.faults().add_rule(wasmsched_apiserver_sim::FailRule {
        code: 429,
        count: None,
        fraction: Some(0.1),
        matching: Default::default(),
    });
    let chaos = {
        let s = s.clone();
        tokio::spawn(async move {
            for _ in 0..8 {
                tokio::time::sleep(Duration::from_secs(1)).await;
                s.drop_watches();
                s.compact();
            }
        })
    };
    // Another actor binds 50 pods itself (the daemon gets 409 for those it tries).
    for i in 0..50 {
        let name = format!("p-{:04}", i * 7);
        let mut store = s.store();
        let _ = store.bind("default", &name, &json!({"target": {"name": "node-000"}}));
    }
    let _d = daemon(&s, "replica-a", &free_port());
    // Pods and nodes deleted mid-run.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for i in 0..40 {
        let _ = s.store().delete(
            wasmsched_apiserver_sim::resources::PODS,
            "default",
            &format!("p-{:04}", 1000 + i),
            None,
        );
    }
    for n in ["node-058", "node-059"] {
        let _ = s.store().delete(wasmsched_apiserver_sim::resources::NODES, "", n, None);
    }
    let expect = total - 40;
    wait_all_bound(&s, expect, Duration::from_secs(120)).await;
    chaos.abort();
    s.faults().clear();
    let pods = s.list::<Pod>();
    assert_eq!(pods.iter().filter(|p| ours(p)).count(), expect, "no pod lost");
    assert!(pods.iter().filter(|p| ours(p)).all(bound));
    // Bindings that succeeded: ours plus the other actor's, each pod once.
    assert_eq!(s.counters().bindings as usize, expect, "no pod bound twice");
    assert!(
        s.faults().injected() > 100,
        "the faults happened: {}",
        s.faults().injected()
    );
    assert!(s.counters().watches_expired > 0, "resumed watches got 410 and relisted");
    assert_no_overcommit(&s);
    // A binding refused five times, then served with its answer lost: the
    // binder gives up not knowing it landed. The pod says it did, and it
    // gets its Scheduled event.
    let binding = || Match {
        skip_watches: true,
        ..Match::path("/binding")
    };
    s.faults().add_rule(wasmsched_apiserver_sim::FailRule {
        code: 500,
        count: Some(5),
        fraction: None,
        matching: binding(),
    });
    s.faults().lose_answers(binding(), 1);
    add_pod(&s, "answer-lost", "wasm-scheduler", "100m");
    let uid = s
        .get::<Pod>("default", "answer-lost")
        .and_then(|p| p.metadata.uid)
        .unwrap();
    wait_all_bound(&s, expect + 1, Duration::from_secs(30)).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while !s.list::<Event>().iter().any(|e| {
        e.reason.as_deref() == Some("Scheduled")
            && e.regarding.as_ref().and_then(|r| r.uid.as_deref()) == Some(uid.as_str())
    }) {
        assert!(
            Instant::now() < deadline,
            "the pod whose binding answer was lost has no Scheduled event"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Two replicas; the leader is killed mid-run and the other takes over;
/// then the survivor is stopped with SIGTERM (releasing the lease) and a
/// third replica, a restart, finishes the job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_handoff_and_restart_lose_nothing() {
    let s = server(60).await;
    let total = 2000;
    let mut a = daemon(&s, "replica-a", &free_port());
    // a leads first
    let deadline = Instant::now() + Duration::from_secs(20);
    while s
        .get::<k8s_openapi::api::coordination::v1::Lease>("kube-system", "wasm-scheduler")
        .and_then(|l| l.spec?.holder_identity)
        .as_deref()
        != Some("replica-a")
    {
        assert!(Instant::now() < deadline, "replica-a never led");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut b = daemon(&s, "replica-b", &free_port());
    let created = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for i in 0..total {
        add_pod(&s, &format!("p-{i:04}"), "wasm-scheduler", "100m");
        created.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if i == 700 {
            let _ = a.0.kill(); // no lease release: b waits out the lease
            let _ = a.0.wait();
        }
        if i == 1400 {
            // b must have taken over by now or soon; stop it politely
            wait_bound_at_least(&s, 900, Duration::from_secs(30)).await;
            sigterm(&mut b);
        }
    }
    let _c = daemon(&s, "replica-c", &free_port());
    wait_all_bound(&s, total, Duration::from_secs(120)).await;
    assert_eq!(s.counters().bindings as usize, total, "no pod bound twice");
    // The replica stopped with SIGTERM bound nothing after it released the
    // lease: every change of binder is a clean hand-off.
    assert_bindings_sound(&s, Duration::from_millis(50));
    assert_no_overcommit(&s);
    let holders: BTreeMap<String, usize> = s
        .list::<Event>()
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("Scheduled"))
        .fold(BTreeMap::new(), |mut m, e| {
            *m.entry(e.reporting_instance.unwrap_or_default()).or_default() += 1;
            m
        });
    assert!(holders.len() >= 2, "more than one replica bound pods: {holders:?}");
}

async fn wait_bound_at_least(s: &ApiServer, n: usize, within: Duration) {
    wait_all_bound(s, n, within).await;
}

fn lease_holder(s: &ApiServer) -> Option<String> {
    s.get::<k8s_openapi::api::coordination::v1::Lease>("kube-system", "wasm-scheduler")
        .and_then(|l| l.spec?.holder_identity)
}

async fn wait_leader(s: &ApiServer, identity: &str, within: Duration) {
    let deadline = Instant::now() + within;
    while lease_holder(s).as_deref() != Some(identity) {
        assert!(Instant::now() < deadline, "{identity} never led");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// From the server's binding log: no pod (UID) bound twice, and replicas
/// never bound at the same time: any two bindings by different replicas are
/// at least `min_gap` apart. Returns the bindings per binder.
fn assert_bindings_sound(s: &ApiServer, min_gap: Duration) -> BTreeMap<String, usize> {
    let mut log = s.binding_log();
    let mut per_uid: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &log {
        *per_uid.entry(r.uid.as_str()).or_default() += 1;
    }
    let twice: Vec<_> = per_uid.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "pods bound twice: {twice:?}");
    log.sort_by_key(|r| r.at);
    for w in log.windows(2) {
        if w[0].binder != w[1].binder {
            let gap = w[1].at.duration_since(w[0].at).unwrap_or_default();
            assert!(
                gap >= min_gap,
                "{} bound {} and {} bound {} only {gap:?} apart",
                w[0].binder,
                w[0].pod,
                w[1].binder,
                w[1].pod
            );
        }
    }
    log.iter().fold(BTreeMap::new(), |mut m, r| {
        *m.entry(r.binder.clone()).or_default() += 1;
        m
    })
}

/// Creates `n` pods in the background, about `per_sec` a second.
fn create_pods(s: &Arc<ApiServer>, n: usize, per_sec: usize) -> tokio::task::JoinHandle<()> {
    let s = s.clone();
    tokio::spawn(async move {
        let batch = (per_sec / 20).max(1);
        for i in 0..n {
            add_pod(&s, &format!("p-{i:05}"), "wasm-scheduler", "100m");
            if i % batch == batch - 1 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    })
}

/// The leader's lease renewals hang (an overloaded API server, a dead
/// connection): it must stop binding within its renew deadline, before the
/// other replica can take the lease, so two replicas never bind at once.
/// 10 000 pods: none lost, none bound twice, no node overcommitted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_whose_renewals_hang_stops_binding_before_another_takes_over() {
    let s = Arc::new(server(100).await);
    let total = 10_000;
    let _a = daemon(&s, "replica-a", &free_port());
    wait_leader(&s, "replica-a", Duration::from_secs(20)).await;
    let _b = daemon(&s, "replica-b", &free_port());
    let creator = create_pods(&s, total, 2000);
    wait_bound_at_least(&s, 1000, Duration::from_secs(30)).await;
    s.faults().hang(Match::path("/leases/").from_agent("(replica-a)"));
    wait_leader(&s, "replica-b", Duration::from_secs(20)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    s.faults().unhang();
    creator.await.unwrap();
    wait_all_bound(&s, total, Duration::from_secs(120)).await;
    assert!(s.faults().held() > 0, "renewals were held");
    let per_binder = assert_bindings_sound(&s, Duration::from_millis(250));
    assert_eq!(per_binder.len(), 2, "both replicas bound pods: {per_binder:?}");
    assert_eq!(s.counters().bindings as usize, total);
    assert_no_overcommit(&s);
}

/// The leader's bindings hang (never answered) while its renewals work:
/// each binding gives up in time and the pod is retried, so nothing waits
/// forever on a dead connection. Then every request of the leader hangs:
/// it steps down, the pods it had placed are retried, and the other replica
/// binds everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bindings_and_renewals_that_hang_lose_no_pod() {
    let s = Arc::new(server(60).await);
    let total = 3000;
    let _a = daemon(&s, "replica-a", &free_port());
    wait_leader(&s, "replica-a", Duration::from_secs(20)).await;
    let _b = daemon(&s, "replica-b", &free_port());
    let creator = create_pods(&s, total, 1000);
    wait_bound_at_least(&s, 300, Duration::from_secs(30)).await;
    s.faults().hang(Match::path("/binding").from_agent("(replica-a)"));
    tokio::time::sleep(Duration::from_secs(2)).await;
    s.faults().unhang();
    assert_eq!(
        lease_holder(&s).as_deref(),
        Some("replica-a"),
        "renewals worked throughout"
    );
    wait_bound_at_least(&s, 1500, Duration::from_secs(30)).await;
    s.faults().hang(Match::any().from_agent("(replica-a)"));
    wait_leader(&s, "replica-b", Duration::from_secs(20)).await;
    creator.await.unwrap();
    wait_all_bound(&s, total, Duration::from_secs(120)).await;
    assert!(s.faults().held() > 0);
    assert_bindings_sound(&s, Duration::from_millis(250));
    assert_eq!(s.counters().bindings as usize, total);
    assert_no_overcommit(&s);
}

/// StatefulSet-style churn: bound pods are deleted and re-created under the
/// same name (a new UID) while the daemon works. Every pod that exists in
/// the end is bound, each UID at most once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_recreated_under_the_same_name_are_all_bound_once() {
    let s = Arc::new(server(40).await);
    let total = 2000;
    let _d = daemon(&s, "replica-a", &free_port());
    let creator = create_pods(&s, total, 2000);
    let churn = {
        let s = s.clone();
        tokio::spawn(async move {
            let mut recreated = 0;
            for round in 0..40 {
                tokio::time::sleep(Duration::from_millis(50)).await;
                for i in (round * 7..total).step_by(97) {
                    let name = format!("p-{i:05}");
                    let gone = s
                        .store()
                        .delete(wasmsched_apiserver_sim::resources::PODS, "default", &name, None);
                    if gone.is_ok() {
                        add_pod(&s, &name, "wasm-scheduler", "100m");
                        recreated += 1;
                    }
                }
            }
            recreated
        })
    };
    creator.await.unwrap();
    let recreated = churn.await.unwrap();
    assert!(recreated > 500, "{recreated} pods re-created");
    wait_all_bound(&s, total, Duration::from_secs(60)).await;
    assert_bindings_sound(&s, Duration::ZERO);
    let log = s.binding_log();
    for p in s.list::<Pod>() {
        let uid = p.metadata.uid.unwrap();
        assert_eq!(log.iter().filter(|r| r.uid == uid).count(), 1, "{:?}", p.metadata.name);
    }
    assert_no_overcommit(&s);
}

/// Status-only updates of unschedulable pods (another controller's
/// condition, our own condition patches) retry nothing; a node heartbeat
/// neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_only_updates_do_not_retry_unschedulable_pods() {
    let s = Arc::new(server(5).await);
    for i in 0..30 {
        add_pod(&s, &format!("huge-{i:02}"), "wasm-scheduler", "64");
    }
    let admin = free_port();
    let _d = daemon(&s, "replica-a", &admin);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = unschedulable_attempts(&admin).await;
    assert!(before >= 30, "{before}");
    let storm = {
        let s = s.clone();
        tokio::spawn(async move {
            for round in 0..100 {
                for i in 0..30 {
                    let patch = json!({"status": {"conditions": [{"type": "example.com/Probed", "status": "True", "message": format!("round {round}")}]}});
                    let _ = s.store().patch(
                        wasmsched_apiserver_sim::resources::PODS,
                        "default",
                        &format!("huge-{i:02}"),
                        Some("status"),
                        "application/strategic-merge-patch+json",
                        &patch,
                    );
                }
                let hb = json!({"status": {"conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": format!("2026-01-01T00:00:{:02}Z", round % 60)}]}});
                let _ = s.store().patch(
                    wasmsched_apiserver_sim::resources::NODES,
                    "",
                    "node-000",
                    Some("status"),
                    "application/strategic-merge-patch+json",
                    &hb,
                );
                tokio::time::sleep(Duration::from_millis(40)).await;
            }
        })
    };
    storm.await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = unschedulable_attempts(&admin).await;
    assert!(
        after - before <= 5,
        "{} retries from status-only updates",
        after - before
    );
}

async fn unschedulable_attempts(admin: &str) -> u64 {
    let m = http_get(admin, "/metrics").await;
    m.lines()
        .find(|l| {
            l.starts_with("scheduler_schedule_attempts_total{profile=\"wasm-scheduler\",result=\"unschedulable\"}")
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// A leader and a standby while pods are created and deleted in waves,
/// every other wave under a fault (failed bindings, failed event writes,
/// watches dropped, 429s, history compacted), and the leader taken away
/// twice mid-wave: a third of the way, killed (SIGKILL), and a third
/// replica started; two thirds of the way, partitioned from the API server
/// (every request it makes held unanswered, as behind a dead link) until
/// its wave is bound. Across both takeovers no pod is lost or bound twice,
/// no two replicas bind at once, no node is overcommitted, every bound
/// pod's `Scheduled` event is written or counted as dropped (a killed
/// replica's reports of its last two seconds, queued in its memory, die
/// with it; kube-scheduler's do too), and the replica that lives through
/// the whole run (standby, then leader, then standby) does not grow with
/// the number of pods ever seen. The pod count is `WASMSCHED_SOAK_PODS`
/// (30 000 by default; `docs/benchmarks.md` has the figures at 100 000).
/// Keeping every event the leader wrote for six minutes (a recorder cache)
/// grew it by ~20 MiB over 30 000 pods; this allows 12.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_under_faults_and_failovers_loses_nothing_and_memory_stays_flat() {
    use wasmsched_apiserver_sim::FailRule;
    let total: usize = std::env::var("WASMSCHED_SOAK_PODS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30_000);
    let wave = 2000;
    let waves = total / wave;
    let s = Arc::new(
        ApiServer::start(
            "127.0.0.1:0".parse().unwrap(),
            SimConfig {
                history_window: 20_000,
                ..SimConfig::default()
            },
        )
        .await
        .unwrap(),
    );
    // 64 CPUs a node, a CPU a pod: a wave fills the nodes to 78 %, so a
    // pod counted twice or a deletion missed shows as an overcommitted node.
    for i in 0..40 {
        add_node(&s, &format!("node-{i:03}"), "64", "256Gi");
    }
    // The replicas running: identity, process, admin address.
    let mut replicas: Vec<(String, Daemon, String)> = Vec::new();
    let start = |replicas: &mut Vec<(String, Daemon, String)>, name: &str| {
        let admin = free_port();
        replicas.push((name.to_owned(), daemon(&s, name, &admin), admin));
    };
    start(&mut replicas, "replica-a");
    wait_leader(&s, "replica-a", Duration::from_secs(20)).await;
    start(&mut replicas, "replica-b");
    let fail = |code, fraction, path: &str| FailRule {
        code,
        count: None,
        fraction: Some(fraction),
        matching: Match {
            skip_watches: true,
            ..Match::path(path)
        },
    };
    let (kill_at, partition_at) = (waves / 3, waves * 2 / 3);
    let mut killed: Option<String> = None;
    let mut lost_with_it: HashSet<String> = HashSet::new();
    let mut takeovers = Vec::new();
    let mut dropped_by_killed = 0.0;
    let t0 = Instant::now();
    let mut samples = Vec::new();
    let mut faults = Vec::new();
    for w in 0..waves {
        // Odd waves run under a fault, switched on before the wave and off
        // after it is bound; the watch faults strike in its middle.
        let fault = match w % 12 {
            1 => {
                s.faults().add_rule(fail(500, 0.1, "/binding"));
                "10 % of bindings fail (500)"
            }
            3 => {
                s.faults().add_rule(fail(503, 0.2, "/events"));
                "20 % of event writes fail (503)"
            }
            5 => "every watch dropped mid-wave",
            7 => {
                s.faults().add_rule(fail(429, 0.05, "/"));
                "5 % of all requests throttled (429)"
            }
            9 => "history compacted and every watch dropped mid-wave (410 on resume)",
            11 => {
                s.faults().set_latency(Duration::from_millis(3));
                "3 ms added to every request"
            }
            _ => "none",
        };
        for i in 0..wave {
            add_pod(&s, &format!("w{w}-{i:04}"), "wasm-scheduler", "1");
            if i == wave / 2 && matches!(w % 12, 5 | 9) {
                if w % 12 == 9 {
                    s.compact();
                }
                s.drop_watches();
            }
            if i == wave / 2 && (w == kill_at || w == partition_at) {
                let leader = lease_holder(&s).expect("a leader mid-wave");
                if w == kill_at {
                    // What it counted as dropped dies with it: read first.
                    let (_, _, admin) = replicas.iter().find(|r| r.0 == leader).unwrap();
                    dropped_by_killed = dropped_events(admin).await;
                    let pos = replicas.iter().position(|r| r.0 == leader).unwrap();
                    let (name, mut d, _) = replicas.remove(pos);
                    let _ = d.0.kill();
                    let _ = d.0.wait();
                    // What reached the server before it died has landed
                    // by now; the rest of its reports died with it.
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    lost_with_it = unreported_bindings(&s, &name);
                    killed = Some(name);
                    start(&mut replicas, "replica-c");
                    takeovers.push(format!("wave {w}: {leader} killed"));
                } else {
                    s.faults().hang(Match {
                        user_agent_contains: Some(format!("({leader})")),
                        ..Match::any()
                    });
                    // Its open watches are cut too; the others' come back.
                    s.drop_watches();
                    takeovers.push(format!("wave {w}: {leader} partitioned"));
                }
            }
        }
        wait_all_bound(&s, wave, Duration::from_secs(120)).await;
        s.faults().clear();
        faults.push(fault);
        assert_no_node_overcommitted(&s, &format!("wave {w} ({fault})"));
        for i in 0..wave {
            let _ = s.store().delete(
                wasmsched_apiserver_sim::resources::PODS,
                "default",
                &format!("w{w}-{i:04}"),
                None,
            );
        }
        let b = replicas.iter().find(|r| r.0 == "replica-b").unwrap();
        samples.push(((w + 1) * wave, rss_kib(b.1.0.id())));
    }
    let per_binder = assert_bindings_sound(&s, Duration::from_millis(250));
    let bound = s.binding_log().len();
    assert_eq!(bound, waves * wave, "every pod bound once");
    assert!(
        per_binder.len() >= 3,
        "each takeover moved the binding to another replica: {per_binder:?}"
    );
    // Every Scheduled event is written, or counted as dropped by the
    // replica that bound the pod: the last bindings' reports may still be
    // on their way (a binding is visible before its answer reaches the
    // binder), so this is checked until it holds or the bound passes. The
    // killed replica's unwritten reports died with it.
    killed.expect("the leader was killed");
    let deadline = Instant::now() + Duration::from_secs(60);
    let (scheduled, missing, dropped) = loop {
        let mut dropped = dropped_by_killed;
        for (_, _, admin) in &replicas {
            dropped += dropped_events(admin).await;
        }
        let scheduled: HashSet<String> = s
            .list::<Event>()
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("Scheduled"))
            .filter_map(|e| e.regarding?.uid)
            .collect();
        let unexplained: Vec<_> = s
            .binding_log()
            .into_iter()
            .filter(|r| !scheduled.contains(&r.uid) && !lost_with_it.contains(&r.uid))
            .collect();
        if unexplained.len() as f64 <= dropped {
            break (scheduled, unexplained.len(), dropped);
        }
        if Instant::now() >= deadline {
            let which: Vec<_> = unexplained
                .iter()
                .map(|r| format!("{} (by {})", r.pod, r.binder))
                .collect();
            panic!(
                "{} bound pods have no Scheduled event, {dropped} events counted as dropped: {which:?}",
                which.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    eprintln!(
        "soak: {total} pods in {:?}, takeovers {takeovers:?}, bindings per replica {per_binder:?}, Scheduled events {} ({missing} missing, {dropped} counted as dropped, {} bound by the killed replica and not reported when it died), faults by wave {faults:?}; pods created, replica-b RSS KiB: {samples:?}",
        t0.elapsed(),
        scheduled.len(),
        lost_with_it.len()
    );
    // After the first quarter (caches, pools and allocator arenas warmed
    // up), memory does not follow the pods seen. A leak grows with every
    // wave, so it also grows over the last third; a fault's relist or retry
    // burst, or becoming leader, raises the high-water mark once and stays
    // flat after.
    // The end is the lowest of the last three samples: a leak raises every
    // one, a burst of allocation just before a sample only that one.
    let quarter = samples[samples.len() / 4];
    let two_thirds = samples[samples.len() * 2 / 3];
    let end = samples.iter().rev().take(3).map(|s| s.1).min().unwrap();
    let (mid, late) = (quarter.1, two_thirds.1);
    assert!(
        end <= mid + 12 * 1024 || end <= late + 4 * 1024,
        "replica-b grew from {mid} KiB to {end} KiB over {total} pods ({late} KiB at two thirds): {samples:?}"
    );
}

/// The UIDs of the pods `replica` bound that have no Scheduled event.
fn unreported_bindings(s: &ApiServer, replica: &str) -> HashSet<String> {
    let scheduled: HashSet<String> = s
        .list::<Event>()
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("Scheduled"))
        .filter_map(|e| e.regarding?.uid)
        .collect();
    s.binding_log()
        .into_iter()
        .filter(|r| r.binder.contains(&format!("({replica})")) && !scheduled.contains(&r.uid))
        .map(|r| r.uid)
        .collect()
}

/// The events a replica counted as dropped (0 when it does not answer).
async fn dropped_events(admin: &str) -> f64 {
    try_http_get(admin, "/metrics")
        .await
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("wasmsched_reports_dropped_total{write=\"event\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// No node holds pods requesting more CPU than it has (requests and
/// allocatable read as the engine reads them).
fn assert_no_node_overcommitted(s: &ApiServer, when: &str) {
    let allocatable: HashMap<String, i64> = s
        .list::<Node>()
        .iter()
        .map(|n| NodeData::from_node(n).unwrap())
        .map(|n| (n.name.clone(), n.allocatable.milli_cpu))
        .collect();
    let mut used: HashMap<String, i64> = HashMap::new();
    for p in s.list::<Pod>() {
        let Some(node) = p.spec.as_ref().and_then(|s| s.node_name.clone()) else {
            continue;
        };
        *used.entry(node).or_default() += PodInfo::from_pod(&p).unwrap().requests.requests.milli_cpu;
    }
    for (node, u) in used {
        assert!(
            u <= allocatable[&node],
            "{when}: {node} holds {u}m CPU of {}m",
            allocatable[&node]
        );
    }
}

/// A binding the API server keeps refusing is reported as kube-scheduler
/// reports it (a `FailedScheduling` event, `PodScheduled=False` with
/// reason `SchedulerError`), and the pod is bound on a later attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_binding_gets_an_event_and_the_pod_is_retried() {
    let s = server(3).await;
    s.faults().add_rule(wasmsched_apiserver_sim::FailRule {
        code: 500,
        count: Some(6),
        fraction: None,
        matching: Match::path("/pods/victim/binding"),
    });
    add_pod(&s, "victim", "wasm-scheduler", "100m");
    let _d = daemon(&s, "replica-a", &free_port());
    wait_all_bound(&s, 1, Duration::from_secs(30)).await;
    let ev: Vec<Event> = s
        .list::<Event>()
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("FailedScheduling"))
        .collect();
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(
        ev[0].note.as_deref(),
        Some("running Bind plugin \"DefaultBinder\": the API server kept refusing the binding")
    );
    let p: Pod = s.get("default", "victim").unwrap();
    let c = p.status.unwrap().conditions.unwrap();
    let c = c.iter().find(|c| c.type_ == "PodScheduled").unwrap();
    assert_eq!(c.status, "True", "bound in the end");
    assert_eq!(s.binding_log().len(), 1);
}

/// A gated pod is neither bound nor reported while it has gates, and is
/// bound once the last one is removed; so is a pod whose claim or
/// PodGroup does not exist yet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gated_pods_and_pods_waiting_for_their_claim_or_group_wait_unreported() {
    let s = server(3).await;
    s.create(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "gated", "namespace": "default"},
        "spec": {"schedulerName": "wasm-scheduler", "schedulingGates": [{"name": "example.com/quota"}, {"name": "example.com/data"}],
                 "containers": [{"name": "c", "image": "nginx"}]}
    }))
    .unwrap();
    s.create(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "grouped", "namespace": "default"},
        "spec": {"schedulerName": "wasm-scheduler",
                 "schedulingGroup": {"podGroupName": "training"},
                 "containers": [{"name": "c", "image": "nginx"}]}
    }))
    .unwrap();
    // A claim that does not exist keeps its pod out of the queue, as a
    // gate does (DynamicResources' PreEnqueue).
    s.create(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "claims", "namespace": "default"},
        "spec": {"schedulerName": "wasm-scheduler",
                 "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-0"}],
                 "containers": [{"name": "c", "image": "nginx"}]}
    }))
    .unwrap();
    add_pod(&s, "plain", "wasm-scheduler", "100m");
    let _d = daemon(&s, "replica-a", &free_port());
    wait_all_bound(&s, 1, Duration::from_secs(30)).await;
    // A pod whose PodGroup does not exist waits before the queue, as a
    // gated pod does (GangScheduling's PreEnqueue): nothing at all.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for name in ["gated", "claims", "grouped"] {
        let gated: Pod = s.get("default", name).unwrap();
        assert!(!bound(&gated));
        assert!(gated.status.and_then(|st| st.conditions).is_none(), "{name}");
        let about_gated = s
            .list::<Event>()
            .into_iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
            .count();
        assert_eq!(about_gated, 0, "a gated pod gets no event");
    }
    // Removing one gate leaves it waiting; removing the last binds it.
    let ungate = |gates: serde_json::Value| {
        s.store()
            .patch(
                wasmsched_apiserver_sim::resources::PODS,
                "default",
                "gated",
                None,
                "application/merge-patch+json",
                &json!({"spec": {"schedulingGates": gates}}),
            )
            .unwrap();
    };
    ungate(json!([{"name": "example.com/data"}]));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!bound(&s.get::<Pod>("default", "gated").unwrap()));
    ungate(json!(null));
    wait_all_bound(&s, 2, Duration::from_secs(10)).await;
    assert!(bound(&s.get::<Pod>("default", "gated").unwrap()));
    assert!(!bound(&s.get::<Pod>("default", "grouped").unwrap()));
    assert!(!bound(&s.get::<Pod>("default", "claims").unwrap()));
}

/// `wasmsched demo` on the bundled cluster: the checkout group (required
/// anti-affinity by hostname, zone spread with maxSkew 1) lands one per
/// node over zones within one of each other, and the gated pod waits.
#[test]
fn demo_honours_anti_affinity_spreading_and_gates() {
    let out = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .args(["demo", "--timeout", "60"])
        .env("WASMSCHED_LOG", "warn")
        .output()
        .expect("run wasmsched demo");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    let line = text
        .lines()
        .find(|l| l.starts_with("shop/checkout:"))
        .unwrap_or_else(|| panic!("no checkout summary in:\n{text}"));
    assert!(
        line.starts_with("shop/checkout: 4 pods on 4 nodes; per zone: "),
        "{line}"
    );
    let counts: Vec<usize> = line
        .split("per zone: ")
        .nth(1)
        .unwrap()
        .split(", ")
        .map(|z| z.rsplit(' ').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(counts.iter().sum::<usize>(), 4, "{line}");
    assert!(
        counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1,
        "{line}"
    );
    assert_eq!(
        counts.len(),
        3,
        "every zone of the general-purpose nodes is used: {line}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("shop/migration-0")
            && l.ends_with("gated: waiting for scheduling gates: [example.com/approved]")),
        "{text}"
    );
}

/// Over HTTP: the daemon watches Services, and a Service selecting a pod
/// gives the default spreading its selector (the cluster of
/// `tests/data/default-spreading.yaml`: by resources alone the pod would go
/// to `a`, spread with its Service's pods it goes to `b`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_spreading_reads_the_services_the_daemon_watches() {
    let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())
        .await
        .unwrap();
    let text = std::fs::read_to_string(format!(
        "{}/../../tests/data/default-spreading.yaml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    s.load_text(&text).unwrap();
    s.create(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "svc-ours", "namespace": "shop", "labels": {"app": "svc"}},
        "spec": {"schedulerName": "wasm-scheduler", "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}
    }))
    .unwrap();
    let _d = daemon(&s, "replica-a", &free_port());
    wait_all_bound(&s, 1, Duration::from_secs(30)).await;
    let p: Pod = s.get("shop", "svc-ours").unwrap();
    assert_eq!(p.spec.unwrap().node_name.as_deref(), Some("b"));
}

/// A plugin the profile enables is missing at start: its pods wait,
/// unschedulable, naming it. When its file appears in the directory the
/// daemon loads it and retries them at once (no cluster event would: they
/// would otherwise wait for the five-minute flush).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_waiting_for_a_missing_plugin_are_retried_when_it_loads() {
    let s = server(3).await;
    let (_d, _admin, plugins, dir) = daemon_with_plugins(
        &s,
        "late-plugin",
        "profiles:\n- schedulerName: wasm-scheduler\n  plugins:\n    multiPoint:\n      enabled: [{name: node-price}]\n  pluginConfig:\n  - name: node-price\n    args: {annotation: price}\nwasmPlugins:\n  plugins: [{name: node-price, failurePolicy: fail}]\n",
        &[],
    );
    add_pod(&s, "priced", "wasm-scheduler", "100m");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(m) = scheduled_message(&s, "priced") {
            assert!(m.contains("plugin node-price is not loaded"), "{m}");
            break;
        }
        assert!(Instant::now() < deadline, "no condition while the plugin is missing");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../plugins/prebuilt/node-price.wasm"),
        plugins.join("node-price.wasm"),
    )
    .unwrap();
    wait_all_bound(&s, 1, Duration::from_secs(60)).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// `wasmsched run` schedules while its plugin directory compiles: the pods
/// of a profile without WebAssembly plugins are bound at once; those of a
/// profile whose plugin is still compiling wait with a condition saying so,
/// and are bound once it is loaded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduling_starts_while_the_plugin_directory_compiles() {
    let s = server(3).await;
    add_pod(&s, "plain", "wasm-scheduler", "100m");
    add_pod(&s, "slow", "slow-scheduler", "100m");
    // Seconds of Cranelift in a test build, there from the start.
    let slow = guest::slow_compiling(600_000);
    let (_d, admin, _, dir) = daemon_with_plugins(
        &s,
        "compiling",
        "profiles:\n- schedulerName: wasm-scheduler\n- schedulerName: slow-scheduler\n  plugins:\n    multiPoint:\n      enabled: [{name: misbehave}]\n  pluginConfig:\n  - name: misbehave\n    args: {mode: none}\nwasmPlugins:\n  cacheDirectory: {CACHE}\n  compileTimeoutSeconds: 600\n  plugins: [{name: misbehave, failurePolicy: fail}]\n",
        &[("slow.wasm", slow)],
    );
    let is_bound = |name: &str| bound(&s.get::<Pod>("default", name).unwrap());
    let deadline = Instant::now() + Duration::from_secs(60);
    while !is_bound("plain") {
        assert!(Instant::now() < deadline, "the plain pod was not bound");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Bound while the directory was still being compiled.
    let metrics = http_get(&admin, "/metrics").await;
    assert!(metrics.contains("wasmsched_plugin_directory_scanned 0"), "{metrics}");
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut said_why = false;
    while !is_bound("slow") {
        if let Some(m) = scheduled_message(&s, "slow") {
            assert!(
                m.contains("plugin misbehave is not loaded: the plugin directory is still being compiled"),
                "{m}"
            );
            said_why = true;
        }
        assert!(
            Instant::now() < deadline,
            "the slow profile's pod was not bound once its plugin loaded"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(said_why, "the slow profile's pod waited without a condition saying why");
    let _ = std::fs::remove_dir_all(&dir);
}

/// With an empty compiled cache, a plugin at least `baselineMinMib` big
/// serves on baseline code (Winch, in the compiler process) while Cranelift
/// compiles it in the background; Cranelift's code then replaces it and is
/// cached, so a restart serves it at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_serves_on_baseline_code_until_cranelifts_is_ready() {
    let s = server(3).await;
    add_pod(&s, "first", "wasm-scheduler", "100m");
    // Seconds of Cranelift in a test build; a fraction of one for Winch.
    let slow = guest::slow_compiling(600_000);
    let (mut d, admin, plugins, dir) = daemon_with_plugins(
        &s,
        "tiers",
        "profiles:\n- schedulerName: wasm-scheduler\n  plugins:\n    multiPoint:\n      enabled: [{name: misbehave}]\n  pluginConfig:\n  - name: misbehave\n    args: {mode: none}\nwasmPlugins:\n  cacheDirectory: {CACHE}\n  baselineMinMib: 0\n  compileTimeoutSeconds: 600\n  plugins: [{name: misbehave, failurePolicy: fail}]\n",
        &[("slow.wasm", slow)],
    );
    let compiler = |metrics: &str| {
        metrics
            .lines()
            .find(|l| l.starts_with("wasmsched_plugin_info{") && l.contains("plugin=\"misbehave\""))
            .and_then(|l| l.split("compiler=\"").nth(1))
            .and_then(|rest| rest.split('"').next())
            .map(str::to_owned)
    };
    wait_all_bound(&s, 1, Duration::from_secs(60)).await;
    let m = http_get(&admin, "/metrics").await;
    assert_eq!(
        compiler(&m).as_deref(),
        Some("winch"),
        "bound by baseline code while Cranelift compiles: {m}"
    );
    let deadline = Instant::now() + Duration::from_secs(300);
    while compiler(&http_get(&admin, "/metrics").await).as_deref() != Some("cranelift") {
        assert!(
            Instant::now() < deadline,
            "Cranelift's code never replaced the baseline code"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    sigterm(&mut d);
    drop(d);
    let admin = free_port();
    let _d = run_daemon(
        &s,
        "replica-a",
        &admin,
        &dir.join("config.yaml"),
        &["--plugins".as_ref(), plugins.as_os_str()],
        None,
    );
    add_pod(&s, "second", "wasm-scheduler", "100m");
    wait_all_bound(&s, 2, Duration::from_secs(60)).await;
    assert_eq!(
        compiler(&http_get(&admin, "/metrics").await).as_deref(),
        Some("cranelift"),
        "a restart loads the cached code"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A pending 10 GiB ReadWriteOnce claim of storage class `class`.
fn add_pending_claim(s: &ApiServer, name: &str, class: &str) {
    s.create(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"storageClassName": class, "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "10Gi"}}},
        "status": {"phase": "Pending"}}))
        .unwrap();
}

/// A pending pod of `image` asking for `cpu`, mounting the claim `claim`.
fn add_pod_with_claim(s: &ApiServer, name: &str, claim: &str, image: &str, cpu: &str) {
    s.create(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulerName": "wasm-scheduler",
            "containers": [{"name": "c", "image": image, "resources": {"requests": {"cpu": cpu}}}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}}))
        .unwrap();
}

/// A bound pod of priority 0 (no class names another) asking for `cpu` on
/// `node`, with `labels`.
fn add_bound_pod(s: &ApiServer, name: &str, node: &str, cpu: &str, labels: serde_json::Value) {
    s.create(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"nodeName": node,
            "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]},
        "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
    }))
    .unwrap();
}

/// A high-priority pod arrives on a full cluster: the victim is chosen (a
/// PodDisruptionBudget steers the choice away from the pod it protects),
/// marked `DisruptionTarget` and deleted with a `Preempted` event, the
/// preemptor nominated to its node and bound there once the victim is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_high_priority_pod_preempts_and_is_bound_where_it_made_room() {
    let s = server(0).await;
    add_node(&s, "n1", "4", "16Gi");
    add_node(&s, "n2", "4", "16Gi");
    add_bound_pod(&s, "db-0", "n1", "3", json!({"app": "db"}));
    add_bound_pod(&s, "batch-0", "n2", "3", json!({"app": "batch"}));
    s.create(json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": "urgent"}, "value": 1000}))
        .unwrap();
    s.create(json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "db"}}, "minAvailable": 1},
        "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1}}))
        .unwrap();
    let from = s.store().resource_version();
    let _d = daemon(&s, "replica-a", &free_port());
    s.create(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "urgent", "namespace": "default"},
        "spec": {"schedulerName": "wasm-scheduler", "priorityClassName": "urgent",
            "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "2"}}}]}
    }))
    .unwrap();
    wait_all_bound(&s, 1, Duration::from_secs(30)).await;
    let urgent: Pod = s.get("default", "urgent").unwrap();
    assert_eq!(urgent.spec.as_ref().unwrap().node_name.as_deref(), Some("n2"));
    assert!(s.get::<Pod>("default", "batch-0").is_none(), "the victim is deleted");
    assert!(s.get::<Pod>("default", "db-0").is_some(), "the budget's pod is spared");
    assert_no_overcommit(&s);

    // What the victim went through, from the server's history: the
    // condition, then the deletion; and the preemptor's nomination.
    let mut rx = s
        .store()
        .watch(
            wasmsched_apiserver_sim::resources::PODS,
            Default::default(),
            wasmsched_apiserver_sim::WatchFrom::Version(from),
            false,
            false,
        )
        .unwrap();
    let (mut marked, mut deleted_after_mark, mut nominated) = (false, false, false);
    while let Ok(msg) = rx.try_recv() {
        let wasmsched_apiserver_sim::WatchMsg::Event(kind, change) = msg else {
            continue;
        };
        let pod: Pod = serde_json::from_value((*change.object.value).clone()).unwrap();
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let conditions = pod
            .status
            .as_ref()
            .and_then(|st| st.conditions.clone())
            .unwrap_or_default();
        if name == "batch-0" {
            let c = conditions.iter().find(|c| c.type_ == "DisruptionTarget");
            if let Some(c) = c {
                assert_eq!(c.status, "True");
                assert_eq!(c.reason.as_deref(), Some("PreemptionByScheduler"));
                assert_eq!(
                    c.message.as_deref(),
                    Some("wasm-scheduler: preempting to accommodate a higher priority pod")
                );
                marked = true;
            }
            deleted_after_mark |= marked && kind == wasmsched_apiserver_sim::EventType::Deleted;
        }
        if name == "urgent" {
            nominated |= pod.status.as_ref().and_then(|st| st.nominated_node_name.as_deref()) == Some("n2");
        }
    }
    assert!(marked && deleted_after_mark, "condition set, then deleted");
    assert!(nominated, "the preemptor was nominated to n2");
    let uid = urgent.metadata.uid.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let preempted: Vec<Event> = s
            .list::<Event>()
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("Preempted"))
            .collect();
        if let Some(e) = preempted.first() {
            assert_eq!(e.regarding.as_ref().and_then(|r| r.name.as_deref()), Some("batch-0"));
            assert_eq!(e.related.as_ref().and_then(|r| r.name.as_deref()), Some("urgent"));
            assert_eq!(
                e.note.as_deref(),
                Some(format!("Preempted by pod {uid} on node n2").as_str())
            );
            break;
        }
        assert!(Instant::now() < deadline, "no Preempted event");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Plays the PersistentVolume controller and a CSI provisioner for one
/// claim: once the claim names its node (`volume.kubernetes.io/
/// selected-node`), creates a volume there and binds the claim to it.
/// Returns the node the claim was provisioned on.
async fn provision_when_selected(s: &ApiServer, claim: &str, within: Duration) -> String {
    let node = selected_node(s, claim, within).await;
    provision(s, claim, &node);
    node
}

/// The node a claim's provisioning was asked on, once it is.
async fn selected_node(s: &ApiServer, claim: &str, within: Duration) -> String {
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    let deadline = Instant::now() + within;
    loop {
        let pvc: PersistentVolumeClaim = s.get("default", claim).expect("the claim");
        let selected = pvc
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("volume.kubernetes.io/selected-node").cloned());
        if let Some(node) = selected {
            return node;
        }
        assert!(Instant::now() < deadline, "the claim was never given a node");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Provisions a volume for `claim` on `node` and binds them, as a CSI
/// provisioner and the PersistentVolume controller do.
fn provision(s: &ApiServer, claim: &str, node: &str) {
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    let pvc: PersistentVolumeClaim = s.get("default", claim).expect("the claim");
    let pv = format!("pvc-{}", pvc.metadata.uid.clone().unwrap());
    s.create(json!({"apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": pv, "labels": {"topology.kubernetes.io/zone": "z-a"}},
        "spec": {"storageClassName": "zonal", "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                 "csi": {"driver": "csi.example.com", "volumeHandle": pv},
                 "claimRef": {"kind": "PersistentVolumeClaim", "namespace": "default", "name": claim, "uid": pvc.metadata.uid},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}},
        "status": {"phase": "Bound"}}))
    .unwrap();
    let res = wasmsched_apiserver_sim::resources::find_kind("v1", "PersistentVolumeClaim").unwrap();
    s.store()
        .patch(
            res,
            "default",
            claim,
            None,
            "application/merge-patch+json",
            &json!({"metadata": {"annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
                    "spec": {"volumeName": pv}, "status": {"phase": "Bound"}}),
        )
        .unwrap();
}

/// Pods waiting for their volumes read the watchers' caches, never the
/// API: while twenty of them wait for a provisioner, every read of a
/// single claim, volume or pod fails (500), and once the volumes are
/// provisioned every pod is bound all the same, with no such read made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volume_waits_read_the_caches_not_the_api() {
    let s = server(0).await;
    for i in 0..4 {
        add_node(&s, &format!("a{i}"), "64", "256Gi");
    }
    s.create(
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "zonal"},
        "provisioner": "csi.example.com", "volumeBindingMode": "WaitForFirstConsumer"}),
    )
    .unwrap();
    let log = std::env::temp_dir().join(format!("wasmsched-volume-waits-{}.log", std::process::id()));
    let _d = run_daemon(&s, "replica-a", &free_port(), &config_file(), &[], Some(&log));
    let n = 20;
    for i in 0..n {
        add_pending_claim(&s, &format!("data-{i}"), "zonal");
        add_pod_with_claim(&s, &format!("db-{i}"), &format!("data-{i}"), "postgres", "1");
    }
    let mut nodes = Vec::new();
    for i in 0..n {
        nodes.push(selected_node(&s, &format!("data-{i}"), Duration::from_secs(30)).await);
    }
    for path in ["/persistentvolumeclaims/", "/persistentvolumes/", "/pods/"] {
        s.faults().add_rule(wasmsched_apiserver_sim::FailRule {
            code: 500,
            count: None,
            fraction: Some(1.0),
            matching: wasmsched_apiserver_sim::Match {
                method: Some("GET".into()),
                skip_watches: true,
                ..wasmsched_apiserver_sim::Match::path(path)
            },
        });
    }
    // Several seconds of waiting: a poll of the API would meet the faults.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for (i, node) in nodes.iter().enumerate() {
        provision(&s, &format!("data-{i}"), node);
    }
    wait_all_bound(&s, n, Duration::from_secs(30)).await;
    assert_eq!(
        s.faults().injected(),
        0,
        "a wait read the API: {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    assert_no_overcommit(&s);
}

/// A StatefulSet-like pod whose claim waits for its first consumer: the
/// daemon picks a node the StorageClass allows (zone `z-a` only), annotates
/// the claim with it, waits for the provisioner to bind the claim, then
/// binds the pod there. A second replica's claim goes through the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_waiting_for_its_first_consumer_is_provisioned_on_the_node_chosen() {
    let s = server(0).await;
    for (name, zone) in [("a1", "z-a"), ("b1", "z-b"), ("a2", "z-a"), ("b2", "z-b")] {
        add_node(&s, name, "4", "16Gi");
        let res = wasmsched_apiserver_sim::resources::find_kind("v1", "Node").unwrap();
        s.store()
            .patch(
                res,
                "",
                name,
                None,
                "application/merge-patch+json",
                &json!({"metadata": {"labels": {"topology.kubernetes.io/zone": zone}}}),
            )
            .unwrap();
    }
    s.create(
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "zonal"},
        "provisioner": "csi.example.com", "volumeBindingMode": "WaitForFirstConsumer",
        "allowedTopologies": [{"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["z-a"]}]}]}),
    )
    .unwrap();
    let _d = daemon(&s, "replica-a", &free_port());
    for i in 0..2 {
        add_pending_claim(&s, &format!("data-web-{i}"), "zonal");
        add_pod_with_claim(&s, &format!("web-{i}"), &format!("data-web-{i}"), "nginx", "3");
        let node = provision_when_selected(&s, &format!("data-web-{i}"), Duration::from_secs(30)).await;
        assert!(node.starts_with('a'), "provisioned in the allowed zone, not on {node}");
        wait_all_bound(&s, i + 1, Duration::from_secs(30)).await;
        let pod: Pod = s.get("default", &format!("web-{i}")).unwrap();
        assert_eq!(
            pod.spec.unwrap().node_name.as_deref(),
            Some(node.as_str()),
            "bound where its volume is"
        );
    }
    let nodes: Vec<String> = s.list::<Pod>().into_iter().filter_map(|p| p.spec?.node_name).collect();
    assert_eq!(nodes.len(), 2);
    assert_ne!(nodes[0], nodes[1], "3 cpu each: one replica per node");
    assert_no_overcommit(&s);
}

/// A pod whose claim does not exist yet is unschedulable in kube-scheduler's
/// words; it is retried when the claim appears, and then goes where the
/// claim's bound volume allows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_waits_for_its_missing_claim_and_follows_its_volume() {
    let s = server(0).await;
    add_node(&s, "n1", "4", "16Gi");
    add_node(&s, "n2", "4", "16Gi");
    let _d = daemon(&s, "replica-a", &free_port());
    add_pod_with_claim(&s, "db-0", "data", "postgres", "1");
    let deadline = Instant::now() + Duration::from_secs(30);
    let want = "0/2 nodes are available: persistentvolumeclaim \"data\" not found. not found";
    while scheduled_message(&s, "db-0").as_deref() != Some(want) {
        assert!(
            Instant::now() < deadline,
            "condition: {:?}",
            scheduled_message(&s, "db-0")
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A local volume on n2, and its claim, bound by the controller.
    s.create(
        json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "local-n2"},
        "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"], "local": {"path": "/mnt/disk"},
                 "claimRef": {"namespace": "default", "name": "data"},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n2"]}]}]}}},
        "status": {"phase": "Bound"}}),
    )
    .unwrap();
    s.create(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "default", "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
        "spec": {"volumeName": "local-n2", "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}},
        "status": {"phase": "Bound"}}))
        .unwrap();
    wait_all_bound(&s, 1, Duration::from_secs(30)).await;
    let pod: Pod = s.get("default", "db-0").unwrap();
    assert_eq!(pod.spec.unwrap().node_name.as_deref(), Some("n2"));
}

/// A claim of a class without a provisioner is bound to the smallest local
/// volume that fits on a node the pod fits: the daemon writes the volume's
/// `claimRef`, the PersistentVolume controller (played here) completes the
/// claim, and the pod is bound on the volume's node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_is_bound_to_the_smallest_local_volume_that_fits() {
    use k8s_openapi::api::core::v1::PersistentVolume;
    let s = server(0).await;
    add_node(&s, "n1", "4", "16Gi");
    add_node(&s, "n2", "4", "16Gi");
    s.create(
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"},
        "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"}),
    )
    .unwrap();
    let volumes = [
        ("big-n1", "n1", "100Gi"),
        ("fit-n1", "n1", "20Gi"),
        ("small-n1", "n1", "1Gi"),
        ("small-n2", "n2", "5Gi"),
    ];
    for (name, node, size) in volumes {
        s.create(
            json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"storageClassName": "local", "capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                     "local": {"path": "/mnt/disk"},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}},
            "status": {"phase": "Available"}}),
        )
        .unwrap();
    }
    s.create(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "cache", "namespace": "default"},
        "spec": {"storageClassName": "local", "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "10Gi"}}}}))
        .unwrap();
    let _d = daemon(&s, "replica-a", &free_port());
    add_pod_with_claim(&s, "cache-0", "cache", "redis", "1");
    let deadline = Instant::now() + Duration::from_secs(30);
    let chosen = loop {
        let claimed: Vec<PersistentVolume> = s
            .list::<PersistentVolume>()
            .into_iter()
            .filter(|pv| pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref()).is_some())
            .collect();
        if let Some(pv) = claimed.first() {
            assert_eq!(claimed.len(), 1);
            let r = pv.spec.as_ref().unwrap().claim_ref.as_ref().unwrap();
            assert_eq!(
                (r.namespace.as_deref(), r.name.as_deref()),
                (Some("default"), Some("cache"))
            );
            assert!(r.uid.is_some(), "the claimRef names the claim's uid");
            let ann = pv.metadata.annotations.clone().unwrap_or_default();
            assert_eq!(
                ann.get("pv.kubernetes.io/bound-by-controller").map(String::as_str),
                Some("yes")
            );
            break pv.metadata.name.clone().unwrap();
        }
        assert!(Instant::now() < deadline, "no volume was given the claim");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // n2 has no volume large enough; on n1, big-n1 would do too, but the
    // smallest that fits is chosen.
    assert_eq!(chosen, "fit-n1");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !bound(&s.get::<Pod>("default", "cache-0").unwrap()),
        "the pod waits for the claim to be bound"
    );
    let res = wasmsched_apiserver_sim::resources::find_kind("v1", "PersistentVolumeClaim").unwrap();
    s.store()
        .patch(
            res,
            "default",
            "cache",
            None,
            "application/merge-patch+json",
            &json!({"metadata": {"annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
                    "spec": {"volumeName": chosen}, "status": {"phase": "Bound"}}),
        )
        .unwrap();
    wait_all_bound(&s, 1, Duration::from_secs(30)).await;
    let pod: Pod = s.get("default", "cache-0").unwrap();
    assert_eq!(pod.spec.unwrap().node_name.as_deref(), Some("n1"));
}

/// An exporter of per-node gauges the test sets
/// (`node_http_latency_seconds{node="..."}`), served on `addr`.
fn serve_exporter(
    listener: tokio::net::TcpListener,
    gauges: Arc<std::sync::Mutex<BTreeMap<String, f64>>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        loop {
            let Ok((mut c, _)) = listener.accept().await else {
                return;
            };
            let gauges = gauges.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match c.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let mut body = String::from("# TYPE node_http_latency_seconds gauge\n");
                for (node, v) in gauges.lock().unwrap().iter() {
                    body.push_str(&format!("node_http_latency_seconds{{node=\"{node}\"}} {v}\n"));
                }
                let _ = c
                    .write_all(
                        format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        )
                        .as_bytes(),
                    )
                    .await;
            });
        }
    })
}

/// The value of one sample of the daemon's `/metrics` (the first line that
/// starts with `series`).
async fn admin_metric(admin: &str, series: &str) -> Option<f64> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // None while the daemon is not serving yet.
    let mut c = tokio::net::TcpStream::connect(admin).await.ok()?;
    c.write_all(format!("GET /metrics HTTP/1.1\r\nHost: {admin}\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut out = String::new();
    c.read_to_string(&mut out).await.ok()?;
    out.lines().find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

/// Creates pods `{prefix}-0..n` and waits for them to be bound; returns
/// their nodes.
async fn place(s: &ApiServer, prefix: &str, n: usize) -> Vec<String> {
    for i in 0..n {
        add_pod(s, &format!("{prefix}-{i}"), "wasm-scheduler", "10m");
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let nodes: Vec<String> = (0..n)
            .filter_map(|i| s.get::<Pod>("default", &format!("{prefix}-{i}"))?.spec?.node_name)
            .collect();
        if nodes.len() == n {
            return nodes;
        }
        assert!(
            Instant::now() < deadline,
            "{prefix}: only {} of {n} pods bound",
            nodes.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Live metrics from a real Prometheus reach a plugin: Prometheus scrapes
/// gauges the test controls, the daemon queries it every second, and
/// fastest-node (with no built-in score beside it) places pods on the node
/// the gauges say is fastest. A change of the gauges is followed; with
/// Prometheus stopped the values go stale after `staleAfter`, the plugin's
/// neutral fallback applies and pods keep being bound (the daemon stays
/// ready); restarted, values come back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_from_a_real_prometheus_steer_a_plugin_and_go_stale_when_it_stops() {
    let s = server(3).await;
    let gauges = Arc::new(std::sync::Mutex::new(BTreeMap::from([
        ("node-000".to_owned(), 0.05),
        ("node-001".to_owned(), 0.01),
        ("node-002".to_owned(), 0.09),
    ])));
    let exporter = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = exporter.local_addr().unwrap().to_string();
    let _exporter = serve_exporter(exporter, gauges.clone());
    let prom_dir = std::env::temp_dir().join(format!("wasmsched-prometheus-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&prom_dir);
    let prom_addr = free_port();
    let config = format!(
        "profiles:\n- plugins:\n    score:\n      disabled: [{{name: '*'}}]\n      enabled: [{{name: fastest-node}}]\n  pluginConfig:\n  - name: fastest-node\n    args: {{penaltyPerPod: 0}}\n\
         metrics:\n  sources:\n  - name: latency\n    prometheus:\n      url: http://{prom_addr}\n      query: node_http_latency_seconds\n      nodeLabel: node\n      interval: 1s\n      timeout: 1s\n      staleAfter: 3s\n"
    );
    let (_d, admin, _plugins, dir) = daemon_with_plugins(
        &s,
        "prometheus",
        &config,
        &[("fastest-node.wasm", guest::build("examples/fastest-node/rust", None))],
    );
    // Prometheus scrapes the gauges, and the daemon's own /metrics.
    let targets = [("nodes", target.as_str()), ("wasmsched", admin.as_str())];
    let mut prometheus = Some(Prometheus::start(&prom_dir, &prom_addr, &targets).await);
    // The values reach the daemon: three nodes matched.
    let matched = "wasmsched_metric_source_nodes_matched{source=\"latency\"}";
    let deadline = Instant::now() + Duration::from_secs(30);
    while admin_metric(&admin, matched).await != Some(3.0) {
        assert!(Instant::now() < deadline, "{}", http_get(&admin, "/metrics").await);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(place(&s, "first", 3).await, ["node-001"; 3]);
    let exposition = http_get(&admin, "/metrics").await;
    assert!(
        !exposition.lines().any(|l| l.starts_with("# HELP") && l.ends_with("..")),
        "{exposition}"
    );
    // And Prometheus reads the daemon's exposition: the attempts are there.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let answer = http_get(
            &prom_addr,
            "/api/v1/query?query=scheduler_schedule_attempts_total%7Bresult%3D%22scheduled%22%7D",
        )
        .await;
        if answer.contains("\"profile\":\"wasm-scheduler\"") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus did not scrape the daemon: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // node-002 becomes the fastest: followed within a refresh (Prometheus
    // scrapes every second, the daemon queries every second).
    gauges.lock().unwrap().insert("node-002".into(), 0.001);
    let changed = Instant::now();
    let mut i = 0;
    loop {
        let node = place(&s, &format!("probe-{i}"), 1).await.remove(0);
        if node == "node-002" {
            break;
        }
        assert!(
            changed.elapsed() < Duration::from_secs(15),
            "the new values never reached the plugin"
        );
        i += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(place(&s, "second", 3).await, ["node-002"; 3]);

    // Prometheus stops: the last values serve, then go stale; the plugin
    // falls back to a neutral score, so ties spread the pods, and every pod
    // is still bound.
    drop(prometheus.take());
    let stopped = Instant::now();
    let errors = "wasmsched_metric_source_errors_total{source=\"latency\"}";
    while admin_metric(&admin, errors).await.unwrap_or(0.0) < 1.0 {
        assert!(stopped.elapsed() < Duration::from_secs(15), "no query error counted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let last = "wasmsched_metric_source_last_success_timestamp_seconds{source=\"latency\"}";
    let last_success = admin_metric(&admin, last).await.unwrap();
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    // The values are stamped with the query's evaluation time, a little
    // before the last success: a second of margin past staleAfter.
    while now() - last_success < 4.0 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let fallback = place(&s, "stale", 12).await;
    let spread: std::collections::BTreeSet<&String> = fallback.iter().collect();
    assert!(spread.len() >= 2, "stale values must not keep steering: {fallback:?}");
    // Going stale is said: in the log, a gauge, and /readyz (still ready).
    let stale = "wasmsched_metric_source_stale{source=\"latency\"}";
    assert_eq!(admin_metric(&admin, stale).await, Some(1.0));
    assert_eq!(admin_metric(&admin, matched).await, Some(0.0));
    let ready = http_get(&admin, "/readyz").await;
    assert!(
        ready.contains("200 OK") && ready.contains("no values for staleAfter (3s)"),
        "{ready}"
    );
    let log = std::fs::read_to_string(dir.join("daemon.log")).unwrap_or_default();
    assert!(
        log.contains("metric source latency: no values for staleAfter (3s)"),
        "{log}"
    );
    // No false alarm before the nodes were known.
    assert!(!log.contains("no node matches"), "{log}");

    // Restarted (with node-000 now the fastest), values come back.
    gauges.lock().unwrap().insert("node-000".into(), 0.0001);
    let _prometheus = Prometheus::start(&prom_dir, &prom_addr, &targets).await;
    let restarted = Instant::now();
    let mut i = 0;
    loop {
        let node = place(&s, &format!("back-{i}"), 1).await.remove(0);
        if node == "node-000" && place(&s, &format!("again-{i}"), 3).await == ["node-000"; 3] {
            break;
        }
        assert!(
            restarted.elapsed() < Duration::from_secs(30),
            "values did not come back"
        );
        i += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(admin_metric(&admin, stale).await, Some(0.0));
    assert!(!http_get(&admin, "/readyz").await.contains("staleAfter"));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&prom_dir);
}

/// What a broken "Prometheus" answers, by the test's choice: (status line,
/// content type, body), or none to hang.
type FakeAnswer = Option<(&'static str, &'static str, &'static str)>;

const BAD_ANSWERS: [(FakeAnswer, &str); 10] = [
    // First a good answer, while the node list is still being read.
    (
        Some((
            "200 OK",
            "application/json",
            r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":"node-000"},"value":[1,"0.1"]},{"metric":{"node":"node-001"},"value":[1,"0.2"]},{"metric":{"node":"node-002"},"value":[1,"0.3"]}]}}"#,
        )),
        "",
    ),
    (
        Some((
            "200 OK",
            "application/json",
            r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#,
        )),
        "the query answers with no series (a misspelt metric name",
    ),
    (
        Some(("404 Not Found", "text/plain", "404 page not found")),
        "404 page not found (GET http://",
    ),
    (
        Some((
            "200 OK",
            "application/json",
            r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":"10.9.9.9:9100"},"value":[1,"0.1"]}]}}"#,
        )),
        "no node matches 10.9.9.9:9100 (values of node are matched to node names and to the nodes' addresses",
    ),
    (
        Some(("500 Internal Server Error", "text/plain", "internal error")),
        "HTTP 500 Internal Server Error, not Prometheus' JSON",
    ),
    (
        Some((
            "502 Bad Gateway",
            "text/html",
            "<html><body><h1>502 Bad Gateway</h1></body></html>",
        )),
        "HTTP 502 Bad Gateway with an HTML page, not Prometheus' JSON",
    ),
    (
        Some((
            "400 Bad Request",
            "application/json",
            r#"{"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected end of input"}"#,
        )),
        "Prometheus says bad_data: 1:5: parse error",
    ),
    (
        Some((
            "200 OK",
            "application/json",
            r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":"node-000"},"value":[1,"fast"]},{"metric":{"node":"node-001"},"value":[1,"NaN"]},{"metric":{"node":"node-002"},"value":[1,"+Inf"]}]}}"#,
        )),
        "series dropped: 2 not finite (node-001=NaN, node-002=+Inf); 1 not numbers (node-000=fast)",
    ),
    (
        Some((
            "200 OK",
            "application/json",
            r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"node":"node-000","pod":"a"},"value":[1,"0.1"]},{"metric":{"node":"node-000","pod":"b"},"value":[1,"0.2"]},{"metric":{"node":"node-001"},"value":[1,"0.3"]}]}}"#,
        )),
        "2 series for node node-000 (none used; aggregate by the node label)",
    ),
    (None, "no answer within timeout (1s)"),
];

/// A metric source that answers badly in every way (an HTTP 500, an HTML
/// error page, a Prometheus error, values that are not numbers, several
/// series for one node, no answer at all): each gets a log line naming
/// the source and the reason, and pods keep being bound throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_metric_answers_are_logged_and_scheduling_goes_on() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = server(3).await;
    let which = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    {
        let which = which.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut c, _)) = listener.accept().await else {
                    return;
                };
                let answer = BAD_ANSWERS[which.load(std::sync::atomic::Ordering::Relaxed)].0;
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 8192];
                    let _ = c.read(&mut buf).await;
                    let Some((status, ctype, body)) = answer else {
                        tokio::time::sleep(Duration::from_secs(10)).await;
                        return;
                    };
                    let _ = c
                        .write_all(
                            format!(
                                "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                                body.len()
                            )
                            .as_bytes(),
                        )
                        .await;
                });
            }
        });
    }
    // A second profile enables load-aware, which declares the sources cpu
    // and memory (its defaults) that this configuration does not define.
    let config = format!(
        "profiles:\n- plugins:\n    score:\n      enabled: [{{name: fastest-node}}]\n\
         - schedulerName: load-aware-scheduler\n  plugins:\n    multiPoint:\n      enabled: [{{name: load-aware}}]\n\
         wasmPlugins: {{plugins: [{{name: load-aware, failurePolicy: ignore}}]}}\n\
         metrics:\n  sources:\n  - name: latency\n    prometheus:\n      url: {url}\n      query: probe_duration_seconds\n      nodeLabel: node\n      interval: 1s\n      timeout: 1s\n"
    );
    // The node list is slow to come: the first answer arrives before it.
    s.faults().slow(
        wasmsched_apiserver_sim::Match {
            method: Some("GET".into()),
            path_contains: Some("/api/v1/nodes".into()),
            skip_watches: true,
            ..Default::default()
        },
        Duration::from_secs(2),
    );
    let (_d, admin, _plugins, dir) = daemon_with_plugins(
        &s,
        "bad-metrics",
        &config,
        &[
            ("fastest-node.wasm", guest::build("examples/fastest-node/rust", None)),
            ("load-aware.wasm", guest::build("examples/load-aware/rust", None)),
        ],
    );
    let log = dir.join("daemon.log");
    // A source a plugin declares and the configuration lacks is said at
    // start, naming both, not when the first pod comes.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ready = try_http_get(&admin, "/readyz").await.unwrap_or_default();
        if ready.contains("200 OK") {
            assert!(
                ready.contains(
                    "load-aware.wasm was refused: configure failed: it reads metric source \"cpu\" (its metric-sources, from its args), which metrics.sources does not define (defined: latency)"
                ),
                "{ready}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "{ready}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for (i, (_, message)) in BAD_ANSWERS.iter().enumerate() {
        which.store(i, std::sync::atomic::Ordering::Relaxed);
        if message.is_empty() {
            // Matched once the nodes are known, and no false alarm before.
            let matched = "wasmsched_metric_source_nodes_matched{source=\"latency\"}";
            let deadline = Instant::now() + Duration::from_secs(20);
            while admin_metric(&admin, matched).await != Some(3.0) {
                assert!(Instant::now() < deadline, "{}", http_get(&admin, "/metrics").await);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            assert!(!text.contains("no node matches"), "{text}");
            continue;
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.lines().any(|l| l.contains(message) && l.contains("latency")) {
                break;
            }
            assert!(Instant::now() < deadline, "no log line {message:?}:\n{text}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        if message.contains("no series") {
            // Counted, said by /readyz (still ready), and not a success.
            let empty = "wasmsched_metric_source_empty_answers_total{source=\"latency\"}";
            assert!(admin_metric(&admin, empty).await.unwrap_or(0.0) >= 1.0);
            let ready = http_get(&admin, "/readyz").await;
            assert!(
                ready.contains("200 OK") && ready.contains("answers with no series"),
                "{ready}"
            );
            let series = "wasmsched_metric_source_series{source=\"latency\"}";
            assert_eq!(admin_metric(&admin, series).await, Some(0.0));
        }
        place(&s, &format!("during-{i}"), 2).await;
    }
    assert_no_overcommit(&s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Where each pod of ours is bound (pods left pending are absent).
fn placements(s: &ApiServer) -> BTreeMap<String, String> {
    s.list::<Pod>()
        .into_iter()
        .filter(|p| ours(p) && bound(p))
        .map(|p| {
            let node = p.spec.as_ref().unwrap().node_name.clone().unwrap();
            (
                format!("{}/{}", p.metadata.namespace.unwrap(), p.metadata.name.unwrap()),
                node,
            )
        })
        .collect()
}

/// Shadow mode on the bundled example cluster: `zone-gate` 1.0.0 serves
/// and 2.0.0, which rejects zone eu-west-1a, shadows every cycle. The
/// shadow's disagreements are exactly the pods serving placed in that
/// zone, which are the pods `plugin diff` finds 2.0.0 rejecting where
/// 1.0.0 put them; `/debug/shadow` shows both verdicts on both nodes and
/// `/metrics` the counts. A hostile shadow (its calls trap, loop and flood
/// the log) is contained. Every placement, with either shadow, is the
/// serving-only run's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shadow_version_is_compared_on_live_cycles_and_places_nothing() {
    let (v1, v2, hostile) = (
        guest::zone_gate(None),
        guest::zone_gate(Some("eu-west-1a")),
        guest::zone_gate_hostile(),
    );
    // The bundled example cluster without the pending pod another
    // scheduler owns (`plugin diff`, like `simulate`, places every pending
    // pod; the daemon only its own).
    let mut cluster: serde_json::Value = serde_norway::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/data/example-cluster.yaml")).unwrap(),
    )
    .unwrap();
    cluster["items"].as_array_mut().unwrap().retain(|o| {
        o["spec"]["nodeName"].is_string() || o["kind"] != "Pod" || o["spec"]["schedulerName"] == "wasm-scheduler"
    });
    // Nor its training gang: the daemon places a group when its last pod
    // arrives, `plugin diff` where its first pod comes in the order.
    cluster["items"]
        .as_array_mut()
        .unwrap()
        .retain(|o| o["kind"] != "PodGroup" && o["spec"]["schedulingGroup"].is_null());
    // In the API server's order (namespace, name), which is the order the
    // daemon lists them in and the order `plugin diff` places them in.
    cluster["items"].as_array_mut().unwrap().sort_by_key(|o| {
        let pending = o["kind"] == "Pod" && !o["spec"]["nodeName"].is_string();
        let key = format!(
            "{}/{}",
            o["metadata"]["namespace"].as_str().unwrap_or(""),
            o["metadata"]["name"].as_str().unwrap_or("")
        );
        (pending, if pending { key } else { String::new() })
    });
    let cluster_file = std::env::temp_dir().join(format!("wasmsched-shadow-cluster-{}.json", std::process::id()));
    std::fs::write(&cluster_file, cluster.to_string()).unwrap();
    let cluster = cluster.to_string();
    let profile = r#"
profiles:
- schedulerName: wasm-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: zone-gate
"#;
    // A deadline no loaded machine misses by accident (the hostile
    // version's loops still pass it), for both versions alike.
    let deadline = "  plugins: [{name: zone-gate, timeoutMs: 200}]\n";
    let shadowed = format!(
        "{profile}wasmPlugins:\n  cacheDirectory: {{CACHE}}\n{deadline}  shadow:\n    directory: {{PLUGINS}}/shadow\n    samplePercent: 100\n"
    );
    // The shadow is deployed first; the serving version follows, as a
    // hot reload, once the shadow is ready to compare every cycle (until
    // then the pods wait for their plugin).
    let mut runs = Vec::new();
    for (tag, shadow) in [
        ("shadow-none", None),
        ("shadow-v2", Some(&v2)),
        ("shadow-hostile", Some(&hostile)),
    ] {
        let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())
            .await
            .unwrap();
        s.load_text(&cluster).unwrap();
        let (files, more) = match shadow {
            Some(f) => (vec![("shadow/zone-gate.wasm", f.clone())], shadowed.clone()),
            None => (
                Vec::new(),
                format!("{profile}wasmPlugins:\n  cacheDirectory: {{CACHE}}\n{deadline}"),
            ),
        };
        let (d, admin, plugins, dir) = daemon_with_plugins(&s, tag, &more, &files);
        runs.push((s, d, admin, dir, plugins, shadow.is_some()));
    }
    for (_, _, admin, _, plugins, shadowed) in &runs {
        let deadline = Instant::now() + Duration::from_secs(60);
        while *shadowed
            && !try_http_get(admin, "/debug/shadow")
                .await
                .unwrap_or_default()
                .contains("\"shadowedProfiles\": [\n    \"wasm-scheduler\"")
        {
            assert!(Instant::now() < deadline, "the shadow did not load");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        std::fs::copy(&v1, plugins.join("zone-gate.wasm.tmp")).unwrap();
        std::fs::rename(plugins.join("zone-gate.wasm.tmp"), plugins.join("zone-gate.wasm")).unwrap();
    }
    for (s, ..) in &runs {
        support::wait_settled(s, Duration::from_secs(60)).await;
    }
    let serving_only = placements(&runs[0].0);
    assert!(serving_only.len() >= 15, "{serving_only:?}");

    // The shadow has compared every sampled cycle.
    let shadow_report = |admin: String| async move {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let text = http_get(&admin, "/debug/shadow").await;
            let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
            let r: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text}"));
            let p = &r["profiles"]["wasm-scheduler"];
            let done: u64 = p["results"]
                .as_object()
                .map_or(0, |m| m.values().map(|v| v.as_u64().unwrap()).sum());
            if done > 0 && done + r["dropped"].as_u64().unwrap() == r["sampled"].as_u64().unwrap() {
                return r;
            }
            assert!(Instant::now() < deadline, "the shadow did not catch up: {r:#}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let zone_of: HashMap<String, String> = runs[0]
        .0
        .list::<Node>()
        .into_iter()
        .map(|n| {
            let zone = n.metadata.labels.unwrap_or_default()["topology.kubernetes.io/zone"].clone();
            (n.metadata.name.unwrap(), zone)
        })
        .collect();

    // 2.0.0: disagrees on exactly the pods serving placed in the zone.
    let r = shadow_report(runs[1].2.clone()).await;
    assert_eq!(placements(&runs[1].0), serving_only, "a shadow changed a placement");
    assert_eq!(r["dropped"], 0, "{r:#}");
    assert_eq!(r["versions"][0]["version"], "2.0.0", "{r:#}");
    let in_zone: BTreeSet<&String> = serving_only
        .iter()
        .filter(|(_, n)| zone_of[*n] == "eu-west-1a")
        .map(|(p, _)| p)
        .collect();
    assert!(!in_zone.is_empty());
    let disagreements = r["disagreements"].as_array().unwrap();
    let disagreeing: BTreeSet<&str> = disagreements.iter().map(|d| d["pod"].as_str().unwrap()).collect();
    assert_eq!(
        disagreeing,
        in_zone.iter().map(|p| p.as_str()).collect::<BTreeSet<_>>(),
        "{r:#}"
    );
    for d in disagreements {
        let node = d["serving"]["node"].as_str().unwrap();
        let on = d["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["node"] == node)
            .unwrap();
        assert_eq!(on["serving"]["feasible"], true, "{d:#}");
        assert_eq!(on["shadow"]["rejected"], "node(s) were in zone eu-west-1a", "{d:#}");
        assert_eq!(on["shadow"]["plugin"], "zone-gate", "{d:#}");
        if let Some(other) = d["shadow"]["node"].as_str() {
            assert_ne!(zone_of[other], "eu-west-1a", "{d:#}");
        } else {
            assert!(
                d["shadow"]["unschedulable"]
                    .as_str()
                    .unwrap()
                    .contains("node(s) were in zone eu-west-1a")
            );
        }
    }
    let p = &r["profiles"]["wasm-scheduler"];
    assert_eq!(
        p["results"]["other_node"].as_u64().unwrap() + p["results"]["unschedulable"].as_u64().unwrap(),
        in_zone.len() as u64,
        "{r:#}"
    );
    assert!(p["results"]["same_node"].as_u64().unwrap() > 0, "{r:#}");
    if let Some(rho) = p["rankCorrelation"].as_f64() {
        // A filter changes which nodes are feasible, not their scores.
        assert!(rho > 0.99, "{r:#}");
    }
    // `plugin diff` on the same cluster predicts the same pods.
    let diff = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .args([
            "plugin",
            "diff",
            v1.to_str().unwrap(),
            v2.to_str().unwrap(),
            "-o",
            "json",
            "--cluster",
        ])
        .arg(&cluster_file)
        .output()
        .unwrap();
    assert!(diff.status.success(), "{}", String::from_utf8_lossy(&diff.stderr));
    let diff: serde_json::Value = serde_json::from_slice(&diff.stdout).unwrap();
    let predicted: BTreeSet<&str> = diff["changed"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            let old = c["old"]["node"].as_str();
            c["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| Some(n["node"].as_str().unwrap()) == old && n["new"]["rejected"].is_string())
        })
        .map(|c| c["pod"].as_str().unwrap())
        .collect();
    assert_eq!(
        predicted,
        in_zone.iter().map(|s| s.as_str()).collect::<BTreeSet<_>>(),
        "plugin diff predicts other pods: {diff:#}"
    );
    let metrics = http_get(&runs[1].2, "/metrics").await;
    assert!(
        metrics.contains(&format!(
            "wasmsched_shadow_cycles_total{{profile=\"wasm-scheduler\",result=\"same_node\"}} {}",
            p["results"]["same_node"]
        )),
        "{metrics}"
    );
    assert!(
        metrics.contains("wasmsched_shadow_plugin_info{plugin=\"zone-gate\",version=\"2.0.0\""),
        "{metrics}"
    );

    // Promotion is the ordinary hot reload: the shadow's file becomes the
    // serving file; the shadow's history stays.
    let (s, admin, plugins) = (&runs[1].0, &runs[1].2, &runs[1].4);
    std::fs::rename(plugins.join("shadow/zone-gate.wasm"), plugins.join("zone-gate.wasm")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !http_get(admin, "/metrics")
        .await
        .contains("wasmsched_plugin_info{plugin=\"zone-gate\",version=\"2.0.0\"")
        || !http_get(admin, "/debug/shadow")
            .await
            .contains("\"shadowedProfiles\": []")
    {
        assert!(Instant::now() < deadline, "2.0.0 was not promoted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    add_pod(s, "after-promotion", "wasm-scheduler", "100m");
    wait_all_bound(s, serving_only.len() + 1, Duration::from_secs(30)).await;
    let node = &placements(s)["default/after-promotion"];
    assert_ne!(zone_of[node], "eu-west-1a", "2.0.0 serves");
    let text = http_get(admin, "/debug/shadow").await;
    let after: serde_json::Value = serde_json::from_str(text.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(after["shadowedProfiles"], json!([]), "{after:#}");
    assert_eq!(
        after["profiles"]["wasm-scheduler"]["versionsCompared"],
        json!(["zone-gate 2.0.0"]),
        "{after:#}"
    );
    // Kept (the pods serving retries when its plugin changes may still be
    // compared, until the shadow's frameworks follow the directory).
    for (k, before) in r["profiles"]["wasm-scheduler"]["results"].as_object().unwrap() {
        let now = &after["profiles"]["wasm-scheduler"]["results"][k];
        assert!(now.as_u64() >= before.as_u64(), "{k}: {before} -> {now}");
    }

    // The hostile shadow: its failures are counted as its own.
    let r = shadow_report(runs[2].2.clone()).await;
    assert_eq!(
        placements(&runs[2].0),
        serving_only,
        "a hostile shadow changed a placement"
    );
    let v = &r["versions"][0];
    assert_eq!(v["version"], "3.0.0-hostile", "{r:#}");
    assert!(
        v["traps"].as_u64().unwrap() + v["timeouts"].as_u64().unwrap() > 0,
        "{r:#}"
    );
    assert!(
        r["profiles"]["wasm-scheduler"]["results"]["shadow_error"]
            .as_u64()
            .unwrap()
            > 0,
        "{r:#}"
    );
    assert!(http_get(&runs[2].2, "/healthz").await.ends_with("\r\n\r\nok"));
    // No shadow configured: said so.
    assert!(
        http_get(&runs[0].2, "/debug/shadow")
            .await
            .contains("no shadow is configured")
    );
    for (_, d, _, dir, ..) in runs {
        drop(d);
        let _ = std::fs::remove_dir_all(dir);
    }
    let _ = std::fs::remove_file(cluster_file);
}

/// A ResourceSlice of `driver` for `node`: its devices (name, attributes,
/// capacity) as JSON.
fn add_slice(s: &ApiServer, driver: &str, node: &str, devices: serde_json::Value) {
    s.create(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": format!("{node}-{driver}")},
        "spec": {"driver": driver, "nodeName": node,
                 "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                 "devices": devices}
    }))
    .unwrap();
}

fn add_device_class(s: &ApiServer, name: &str, cel: &str) {
    s.create(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": cel}}]}
    }))
    .unwrap();
}

fn add_resource_claim(s: &ApiServer, name: &str, spec: serde_json::Value) {
    s.create(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"}, "spec": spec
    }))
    .unwrap();
}

/// A pending pod of ours with `claims` (its `spec.resourceClaims`) and
/// `extra` merged into its spec.
fn add_pod_with_devices(s: &ApiServer, name: &str, claims: serde_json::Value, extra: serde_json::Value) {
    let mut spec = json!({"schedulerName": "wasm-scheduler", "resourceClaims": claims,
        "containers": [{"name": "c", "image": "trainer", "resources": {"requests": {"cpu": "1"}}}]});
    if let (Some(spec), serde_json::Value::Object(more)) = (spec.as_object_mut(), extra) {
        spec.extend(more);
    }
    s.create(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}),
    )
    .unwrap();
}

/// The devices a claim was allocated, as `request=driver/pool/device`,
/// and the names of the pods it is reserved for.
fn claim_state(s: &ApiServer, name: &str) -> (Vec<String>, Vec<String>) {
    use k8s_openapi::api::resource::v1::ResourceClaim;
    let Some(c) = s.get::<ResourceClaim>("default", name) else {
        return (Vec::new(), Vec::new());
    };
    let status = c.status.unwrap_or_default();
    let devices = status
        .allocation
        .and_then(|a| a.devices)
        .map(|d| d.results.unwrap_or_default())
        .unwrap_or_default()
        .into_iter()
        .map(|r| format!("{}={}/{}/{}", r.request, r.driver, r.pool, r.device))
        .collect();
    let pods = status
        .reserved_for
        .unwrap_or_default()
        .into_iter()
        .map(|r| r.name)
        .collect();
    (devices, pods)
}

fn node_of(s: &ApiServer, pod: &str) -> Option<String> {
    s.get::<Pod>("default", pod)
        .and_then(|p| p.spec)
        .and_then(|s| s.node_name)
}

async fn wait_bound(s: &ApiServer, pod: &str, within: Duration) -> String {
    let deadline = Instant::now() + within;
    loop {
        if let Some(n) = node_of(s, pod) {
            return n;
        }
        assert!(Instant::now() < deadline, "{pod} not bound within {within:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The daemon with six nodes of GPUs and NICs (published in
/// ResourceSlices, as drivers do): a claim from a template asking for a GPU
/// and a NIC on the same PCIe root (matchAttribute across drivers), a
/// firstAvailable claim that prefers two 80 GiB GPUs, a claim shared by two
/// pods, and one no node can satisfy. Claims get their allocation and
/// reservations before their pods are bound; devices come back when a pod
/// goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_get_devices_through_resource_claims() {
    let s = server(6).await;
    for i in 0..6 {
        let node = format!("node-{i:03}");
        let memory = if i >= 4 { "80Gi" } else { "40Gi" };
        let gpu = |d: usize| {
            json!({"name": format!("gpu-{d}"),
                   "attributes": {"model": {"string": "a100"},
                                  "resource.kubernetes.io/pcieRoot": {"string": format!("pci-{i}-{d}")}},
                   "capacity": {"memory": {"value": memory}}})
        };
        add_slice(&s, "gpu.example.com", &node, json!([gpu(0), gpu(1)]));
        add_slice(
            &s,
            "nic.example.com",
            &node,
            json!([{"name": "nic-0", "attributes": {"resource.kubernetes.io/pcieRoot": {"string": format!("pci-{i}-1")}}}]),
        );
    }
    add_device_class(&s, "gpu", r#"device.driver == "gpu.example.com""#);
    add_device_class(
        &s,
        "big-gpu",
        r#"device.driver == "gpu.example.com" && device.capacity["gpu.example.com"].memory.compareTo(quantity("80Gi")) >= 0"#,
    );
    add_device_class(&s, "nic", r#"device.driver == "nic.example.com""#);
    s.create(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu-and-nic", "namespace": "default"},
        "spec": {"spec": {"devices": {
            "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}},
                         {"name": "nic", "exactly": {"deviceClassName": "nic"}}],
            "constraints": [{"requests": ["gpu", "nic"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}]}}}
    }))
    .unwrap();
    add_resource_claim(
        &s,
        "flexible",
        json!({"devices": {"requests": [{"name": "gpu", "firstAvailable": [
            {"name": "big", "deviceClassName": "big-gpu", "count": 2},
            {"name": "small", "deviceClassName": "gpu"}]}]}}),
    );
    add_resource_claim(
        &s,
        "shared",
        json!({"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}),
    );
    add_resource_claim(
        &s,
        "huge",
        json!({"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "big-gpu", "count": 3}}]}}),
    );
    let _d = daemon(&s, "replica-a", &free_port());

    add_pod_with_devices(
        &s,
        "trainer",
        json!([{"name": "dev", "resourceClaimTemplateName": "gpu-and-nic"}]),
        json!({}),
    );
    let trainer_node = wait_bound(&s, "trainer", Duration::from_secs(30)).await;
    let trainer: Pod = s.get("default", "trainer").unwrap();
    let generated = trainer
        .status
        .and_then(|st| st.resource_claim_statuses)
        .and_then(|l| l.into_iter().next())
        .and_then(|c| c.resource_claim_name)
        .expect("the controller named the generated claim");
    let (devices, pods) = claim_state(&s, &generated);
    let i: usize = trainer_node.trim_start_matches("node-").parse().unwrap();
    assert_eq!(
        devices,
        [
            format!("gpu=gpu.example.com/{trainer_node}/gpu-1"),
            format!("nic=nic.example.com/{trainer_node}/nic-0")
        ],
        "the GPU on the NIC's PCIe root (pci-{i}-1)"
    );
    assert_eq!(pods, ["trainer"]);

    add_pod_with_devices(
        &s,
        "flex",
        json!([{"name": "gpus", "resourceClaimName": "flexible"}]),
        json!({}),
    );
    let flex_node = wait_bound(&s, "flex", Duration::from_secs(30)).await;
    assert!(flex_node == "node-004" || flex_node == "node-005", "{flex_node}");
    let (devices, _) = claim_state(&s, "flexible");
    assert_eq!(
        devices,
        [
            format!("gpu/big=gpu.example.com/{flex_node}/gpu-0"),
            format!("gpu/big=gpu.example.com/{flex_node}/gpu-1")
        ],
        "the first choice of the list, where a node has it"
    );

    add_pod_with_devices(
        &s,
        "reader-a",
        json!([{"name": "gpu", "resourceClaimName": "shared"}]),
        json!({}),
    );
    let a = wait_bound(&s, "reader-a", Duration::from_secs(30)).await;
    add_pod_with_devices(
        &s,
        "reader-b",
        json!([{"name": "gpu", "resourceClaimName": "shared"}]),
        json!({}),
    );
    let b = wait_bound(&s, "reader-b", Duration::from_secs(30)).await;
    assert_eq!(a, b, "a shared claim's pods run where its device is");
    let (devices, mut pods) = claim_state(&s, "shared");
    pods.sort();
    assert_eq!(devices.len(), 1);
    assert_eq!(pods, ["reader-a", "reader-b"]);

    add_pod_with_devices(
        &s,
        "greedy",
        json!([{"name": "gpus", "resourceClaimName": "huge"}]),
        json!({}),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let message = loop {
        if let Some(m) = scheduled_message(&s, "greedy") {
            break m;
        }
        assert!(Instant::now() < deadline, "no condition on the pod no node can take");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        message,
        "0/6 nodes are available: 6 cannot allocate all claims. still not schedulable, preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling."
    );
    assert_eq!(claim_state(&s, "huge"), (Vec::new(), Vec::new()));
    let failed = s
        .list::<Event>()
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("greedy"))
        .filter(|e| e.reason.as_deref() == Some("FailedScheduling"))
        .count();
    assert_eq!(failed, 1, "one FailedScheduling event");

    // The trainer's node has one GPU on the NIC's root: a second trainer
    // pinned there waits until the first one's devices come back.
    add_pod_with_devices(
        &s,
        "trainer-2",
        json!([{"name": "dev", "resourceClaimTemplateName": "gpu-and-nic"}]),
        json!({"nodeSelector": {"kubernetes.io/hostname": trainer_node}}),
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(node_of(&s, "trainer-2"), None, "its devices are taken");
    s.store()
        .delete(wasmsched_apiserver_sim::resources::PODS, "default", "trainer", None)
        .unwrap();
    assert_eq!(wait_bound(&s, "trainer-2", Duration::from_secs(30)).await, trainer_node);
    let scheduled = s
        .list::<Event>()
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("Scheduled"))
        .count();
    assert!(scheduled >= 5, "{scheduled} Scheduled events");
}

/// A claim allocated for a node where its pod cannot run (the node is
/// gone) and reserved for no one: PostFilter deallocates it, as
/// kube-scheduler's does, and the pod's next attempt allocates it on a
/// node that exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_allocated_where_its_pod_cannot_run_is_deallocated_and_allocated_again() {
    let s = server(2).await;
    for i in 0..2 {
        let node = format!("node-{i:03}");
        add_slice(&s, "gpu.example.com", &node, json!([{"name": "gpu-0"}]));
    }
    add_device_class(&s, "gpu", r#"device.driver == "gpu.example.com""#);
    add_resource_claim(
        &s,
        "stale",
        json!({"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}),
    );
    let mut c: serde_json::Value = serde_json::to_value(
        s.get::<k8s_openapi::api::resource::v1::ResourceClaim>("default", "stale")
            .unwrap(),
    )
    .unwrap();
    c["status"] = json!({"allocation": {
        "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "node-009", "device": "gpu-0"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["node-009"]}]}]}}});
    s.store()
        .update(
            wasmsched_apiserver_sim::resources::RESOURCE_CLAIMS,
            "default",
            "stale",
            Some("status"),
            c,
        )
        .unwrap();
    let _d = daemon(&s, "replica-a", &free_port());
    add_pod_with_devices(
        &s,
        "late",
        json!([{"name": "gpu", "resourceClaimName": "stale"}]),
        json!({}),
    );
    let node = wait_bound(&s, "late", Duration::from_secs(30)).await;
    let (devices, pods) = claim_state(&s, "stale");
    assert_eq!(devices, [format!("gpu=gpu.example.com/{node}/gpu-0")]);
    assert_eq!(pods, ["late"]);
    let failed: Vec<String> = s
        .list::<Event>()
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("FailedScheduling"))
        .filter_map(|e| e.note)
        .collect();
    assert_eq!(
        failed,
        [
            "0/2 nodes are available: 2 resourceclaim not available on the node. deallocation of ResourceClaim completed, \
          preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
        ],
        "one attempt failed, and deallocated the claim"
    );
}

/// A gang's pod (`example.com/gang`, of `size`) of 1.5 CPU.
fn add_gang_pod(s: &ApiServer, gang: &str, i: usize, size: usize) {
    s.create(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("{gang}-{i}"), "namespace": "default",
                     "labels": {"example.com/gang": gang},
                     "annotations": {"example.com/gang-size": size.to_string()}},
        "spec": {"schedulerName": "wasm-scheduler", "containers": [{"name": "c", "image": "trainer",
                 "resources": {"requests": {"cpu": "1500m", "memory": "128Mi"}}}]}
    }))
    .unwrap();
}

/// How many pods of each gang are bound.
fn gangs_bound(s: &ApiServer) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for p in s.list::<Pod>() {
        let Some(g) = p
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("example.com/gang"))
            .cloned()
        else {
            continue;
        };
        *out.entry(g).or_insert(0) += usize::from(bound(&p));
    }
    out
}

const COSCHEDULING: &str = "profiles:\n- schedulerName: wasm-scheduler\n  plugins:\n    multiPoint:\n      enabled: [{name: coscheduling}]\n  pluginConfig:\n  - name: coscheduling\n    args: {timeoutSeconds: 5}\nwasmPlugins:\n  cacheDirectory: {CACHE}\n  plugins: [{name: coscheduling, failurePolicy: fail}]\n";

/// The coscheduling example plugin holds a gang's pods at Permit until the
/// whole gang is placed: three of a gang of four wait, unbound, until the
/// fourth comes; three gangs of four pods of 1.5 CPU on four nodes of 4 CPU
/// (room for eight) end with two whole gangs bound and none of the third,
/// past its Permit timeout; once a bound gang is deleted, the third binds
/// whole. A daemon restarted while part of a gang waits binds none of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gangs_bind_whole_or_not_at_all() {
    let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())
        .await
        .unwrap();
    for i in 0..4 {
        add_node(&s, &format!("node-{i:03}"), "4", "16Gi");
    }
    let prebuilt = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../plugins/prebuilt/coscheduling.wasm"
    ));
    let (mut d, _admin, _plugins, dir) =
        daemon_with_plugins(&s, "gangs", COSCHEDULING, &[("coscheduling.wasm", prebuilt.clone())]);
    let whole = |m: &BTreeMap<String, usize>| m.values().all(|&n| n == 0 || n == 4);
    let until = |what: &str, done: &dyn Fn(&BTreeMap<String, usize>) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let m = gangs_bound(&s);
            if done(&m) {
                return;
            }
            assert!(Instant::now() < deadline, "{what}: {m:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    for i in 0..3 {
        add_gang_pod(&s, "a", i, 4);
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(gangs_bound(&s).get("a"), Some(&0), "three of four wait at Permit");
    add_gang_pod(&s, "a", 3, 4);
    until("a bound whole", &|m| m.get("a") == Some(&4));
    for gang in ["b", "c"] {
        for i in 0..4 {
            add_gang_pod(&s, gang, i, 4);
        }
    }
    until("b bound whole", &|m| m.get("b") == Some(&4));
    // The third stays out, whole, past its Permit timeout.
    tokio::time::sleep(Duration::from_secs(7)).await;
    let m = gangs_bound(&s);
    assert_eq!(m.get("c"), Some(&0), "{m:?}");
    assert!(whole(&m), "{m:?}");
    let delete_gang = |gang: &str| {
        for i in 0..4 {
            s.store()
                .delete(
                    wasmsched_apiserver_sim::resources::PODS,
                    "default",
                    &format!("{gang}-{i}"),
                    None,
                )
                .unwrap();
        }
    };
    delete_gang("a");
    until("c bound whole", &|m| m.get("c") == Some(&4));
    // Room for four: three of a gang of four wait; a restart binds none of
    // them; the fourth's arrival binds all four.
    delete_gang("b");
    for i in 0..3 {
        add_gang_pod(&s, "d", i, 4);
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(gangs_bound(&s).get("d"), Some(&0));
    sigterm(&mut d);
    drop(d);
    let (_d2, _admin, _plugins, dir2) =
        daemon_with_plugins(&s, "gangs-again", COSCHEDULING, &[("coscheduling.wasm", prebuilt)]);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(gangs_bound(&s).get("d"), Some(&0), "no partial gang after the restart");
    add_gang_pod(&s, "d", 3, 4);
    until("d bound whole", &|m| m.get("d") == Some(&4));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&dir2);
}

/// The namespace-quota example caps a namespace exactly: 200 pods of 100m
/// created at once in a namespace capped at 5 CPU bind 50, whatever
/// instance of the plugin each call lands on (the usage lives in the
/// host's state); the others wait, unschedulable, naming the quota.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_quota_caps_exactly_while_pods_arrive_at_once() {
    let s = server(3).await;
    s.create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}))
        .unwrap();
    let prebuilt = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../plugins/prebuilt/namespace-quota.wasm"
    ));
    let (_d, _admin, _plugins, dir) = daemon_with_plugins(
        &s,
        "quota",
        "profiles:\n- schedulerName: wasm-scheduler\n  plugins:\n    multiPoint:\n      enabled: [{name: namespace-quota}]\n  pluginConfig:\n  - name: namespace-quota\n    args: {limits: {team: 5000}}\nwasmPlugins:\n  cacheDirectory: {CACHE}\n  plugins: [{name: namespace-quota, failurePolicy: fail}]\n",
        &[("namespace-quota.wasm", prebuilt)],
    );
    for i in 0..200 {
        s.create(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("job-{i:03}"), "namespace": "team"},
            "spec": {"schedulerName": "wasm-scheduler", "containers": [{"name": "c", "image": "worker",
                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}
        }))
        .unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(90);
    let (bound, refused) = loop {
        let pods = s.list::<Pod>();
        let placed = pods.iter().filter(|p| bound(p)).count();
        let refused: Vec<String> = pods
            .iter()
            .filter(|p| !bound(p))
            .filter_map(|p| {
                p.status
                    .as_ref()?
                    .conditions
                    .as_ref()?
                    .iter()
                    .find(|c| c.type_ == "PodScheduled")?
                    .message
                    .clone()
            })
            .collect();
        // (Pods tried while the plugin still compiles say so, and are
        // tried again once it loads.)
        let quota = "namespace team: cpu quota exceeded (used 5000 + requested 100 > limit 5000)";
        if placed + refused.len() == 200 && refused.iter().all(|m| m.contains(quota)) {
            break (placed, refused);
        }
        let other: Vec<&String> = refused.iter().filter(|m| !m.contains(quota)).take(3).collect();
        assert!(
            Instant::now() < deadline,
            "{placed} bound, {} refused, some otherwise: {other:?}",
            refused.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(bound, 50, "5 CPU of 100m pods");
    assert_eq!(refused.len(), 150);
    let _ = std::fs::remove_dir_all(&dir);
}
