//! The daemon (`wasmsched_kube::run`, in process) against the API server
//! double over HTTP, with a plugin that panics: the engine's own code paths
//! are real; only the plugin is a test's. A panic in a cycle (here inside
//! the filter worker pool) fails that pod with `SchedulerError` and
//! scheduling goes on.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use serde_json::json;
use wasmsched_apiserver_sim::{ApiServer, Config as SimConfig};
use wasmsched_core::config::Config;
use wasmsched_core::framework::{CycleState, Plugin, Points, Status};
use wasmsched_core::plugins::Registry;
use wasmsched_core::{NodeInfo, PodInfo};
use wasmsched_kube::{LeaderElection, Options};

/// Panics in Filter for pods whose name starts with `boom`, as a plugin with
/// an arithmetic bug would.
struct Panicky;

impl Plugin for Panicky {
    fn name(&self) -> &str {
        "Panicky"
    }
    fn points(&self) -> Points {
        Points::FILTER
    }
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if pod.name.starts_with("boom") && node.name().ends_with('7') {
            let zero = pod.name.len() - pod.name.len();
            let _ = 1 / zero;
        }
        Status::success()
    }
}

type Daemon = tokio::task::JoinHandle<anyhow::Result<Arc<wasmsched_kube::Status>>>;

/// Runs the daemon in process against `s`, one replica (no election),
/// until the returned sender is used.
fn start(s: &ApiServer, config: Config, registry: Registry) -> (tokio::sync::oneshot::Sender<()>, Daemon) {
    start_with(s, config, registry, |_| {})
}

/// [`start`], with the options changed by `tweak`.
fn start_with(
    s: &ApiServer,
    config: Config,
    registry: Registry,
    tweak: impl FnOnce(&mut Options),
) -> (tokio::sync::oneshot::Sender<()>, Daemon) {
    let mut opts = options(config, registry);
    tweak(&mut opts);
    let client = kube::Client::try_from(kube::Config::new(s.url().parse().unwrap())).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let daemon = tokio::spawn(wasmsched_kube::run(client, opts, async move {
        let _ = stopped.await;
    }));
    (stop, daemon)
}

/// One replica (no election), fast timeouts.
fn options(config: Config, registry: Registry) -> Options {
    Options {
        config,
        registry,
        plugins: None,
        seed: 1,
        identity: "test".into(),
        leader_election: LeaderElection {
            enabled: false,
            ..Default::default()
        },
        bind_concurrency: 8,
        api_timeout: Duration::from_secs(5),
        admin: None,
        review_client: None,
        lease_client: None,
        events_client: None,
        drain_timeout: std::time::Duration::from_secs(10),
        stall_timeout: std::time::Duration::from_secs(30),
        null_placement: false,
        shadow: None,
    }
}

fn condition(p: &Pod) -> Option<(String, String, String)> {
    let c = p
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "PodScheduled")?
        .clone();
    Some((c.status, c.reason.unwrap_or_default(), c.message.unwrap_or_default()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_in_a_cycle_fails_that_pod_and_scheduling_goes_on() {
    let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())
        .await
        .unwrap();
    for i in 0..300 {
        s.create(
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": format!("n{i:03}")},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}),
        )
        .unwrap();
    }
    let pod = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulerName": "wasm-scheduler", "containers": [{"name": "c", "image": "x",
            "resources": {"requests": {"cpu": "100m"}}}]}})
    };
    for i in 0..3 {
        s.create(pod(&format!("boom-{i}"))).unwrap();
    }
    for i in 0..200 {
        s.create(pod(&format!("fine-{i:03}"))).unwrap();
    }
    let mut registry = Registry::builtin();
    registry.register("Panicky", Arc::new(|_| Ok(Arc::new(Panicky) as Arc<dyn Plugin>)));
    let config = Config::from_yaml(
        "percentageOfNodesToScore: 100\nprofiles:\n- schedulerName: wasm-scheduler\n  plugins:\n    filter:\n      enabled: [{name: Panicky}]\n",
    )
    .unwrap();
    let (stop, daemon) = start(&s, config, registry);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let pods = s.list::<Pod>();
        let fine = pods
            .iter()
            .filter(|p| p.metadata.name.as_deref().unwrap().starts_with("fine"))
            .filter(|p| p.spec.as_ref().unwrap().node_name.is_some())
            .count();
        let booms: Vec<_> = pods
            .iter()
            .filter(|p| p.metadata.name.as_deref().unwrap().starts_with("boom"))
            .filter_map(condition)
            .collect();
        if fine == 200 && booms.len() == 3 {
            for (status, reason, message) in booms {
                assert_eq!(status, "False");
                assert_eq!(reason, "SchedulerError");
                assert_eq!(message, "scheduling cycle panicked: attempt to divide by zero");
            }
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{fine} fine pods bound; boom conditions {booms:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = stop.send(());
    let status = daemon.await.unwrap().expect("the daemon stops cleanly");
    assert!(status.healthy());
    let metrics = status.metrics_text();
    let panics: u64 = metrics
        .lines()
        .find(|l| l.starts_with("wasmsched_scheduling_cycle_panics_total "))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap();
    assert!(panics >= 3, "{metrics}");
    assert!(
        s.list::<Pod>()
            .iter()
            .filter(|p| p.metadata.name.as_deref().unwrap().starts_with("boom"))
            .all(|p| p.spec.as_ref().unwrap().node_name.is_none())
    );
}

/// No cycle runs before the first lists of nodes *and* pods are applied:
/// a pending pod listed before the bound pods that fill its node must not be
/// placed on a node that only looks free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_pod_is_placed_before_the_bound_pods_are_known() {
    let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())
        .await
        .unwrap();
    s.create(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "only"},
        "status": {"allocatable": {"cpu": "1", "memory": "16Gi", "pods": "200"}}}))
        .unwrap();
    let pod = |name: &str, node: Option<&str>| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulerName": "wasm-scheduler", "nodeName": node, "containers": [{"name": "c", "image": "x",
            "resources": {"requests": {"cpu": "10m"}}}]}})
    };
    // Listed first (by name), then 100 bound pods that fill the node.
    s.create(pod("a-pending", None)).unwrap();
    for i in 0..100 {
        s.create(pod(&format!("z-bound-{i:03}"), Some("only"))).unwrap();
    }
    let (stop, daemon) = start(&s, Config::default(), Registry::builtin());
    let deadline = Instant::now() + Duration::from_secs(20);
    let cond = loop {
        let p: Pod = s.get("default", "a-pending").unwrap();
        if let Some(c) = condition(&p) {
            break c;
        }
        assert!(Instant::now() < deadline, "no verdict for a-pending");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        cond,
        (
            "False".to_owned(),
            "Unschedulable".to_owned(),
            "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.".to_owned()
        )
    );
    let _ = stop.send(());
    daemon.await.unwrap().unwrap();
}

fn node(name: &str, cpu: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
        "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"}}})
}

fn pod(name: &str, cpu: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulerName": "wasm-scheduler", "containers": [{"name": "c", "image": "x",
        "resources": {"requests": {"cpu": cpu}}}]}})
}

fn bound(s: &ApiServer, prefix: &str) -> usize {
    s.list::<Pod>()
        .iter()
        .filter(|p| p.metadata.name.as_deref().unwrap_or_default().starts_with(prefix))
        .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some())
        .count()
}

async fn wait_bound(s: &ApiServer, prefix: &str, n: usize, within: Duration) {
    let deadline = Instant::now() + within;
    while bound(s, prefix) < n {
        assert!(
            Instant::now() < deadline,
            "{} of {n} {prefix}* pods bound within {within:?}",
            bound(s, prefix)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn events(s: &ApiServer, reason: &str) -> usize {
    s.list::<k8s_openapi::api::events::v1::Event>()
        .iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .count()
}

/// The value of a metric line that starts with `prefix` (summed over the
/// lines that do).
fn metric(text: &str, prefix: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn free_addr() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut c) = tokio::net::TcpStream::connect(addr).await else {
        return (0, String::new());
    };
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    c.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    let _ = c.read_to_string(&mut out).await;
    let code = out.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (code, body)
}

/// Reports keep up with bindings and none vanishes: with every request
/// slowed, every bound pod has its Scheduled event and every pod that fits
/// nowhere its FailedScheduling event and condition once the daemon has
/// stopped, and the metrics account for every write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_report_is_written_by_the_time_the_daemon_stops() {
    let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())
        .await
        .unwrap();
    for i in 0..40 {
        s.create(node(&format!("n{i:02}"), "16")).unwrap();
    }
    s.faults().set_latency(Duration::from_millis(3));
    let (stop, daemon) = start_with(&s, Config::default(), Registry::builtin(), |o| {
        o.drain_timeout = Duration::from_secs(60)
    });
    for i in 0..400 {
        s.create(pod(&format!("fits-{i:03}"), "100m")).unwrap();
    }
    for i in 0..10 {
        s.create(pod(&format!("huge-{i}"), "100")).unwrap();
    }
    wait_bound(&s, "fits-", 400, Duration::from_secs(60)).await;
    // The last attempts of the pods that fit nowhere are reported too.
    let deadline = Instant::now() + Duration::from_secs(20);
    while (0..10).any(|i| condition(&s.get::<Pod>("default", &format!("huge-{i}")).unwrap()).is_none()) {
        assert!(Instant::now() < deadline, "conditions of the pods that fit nowhere");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stopping = Instant::now();
    let _ = stop.send(());
    let status = daemon.await.unwrap().unwrap();
    // The drain ends when the queue is empty, not at its bound.
    assert!(stopping.elapsed() < Duration::from_secs(30), "{:?}", stopping.elapsed());
    assert_eq!(events(&s, "Scheduled"), 400, "one Scheduled event per bound pod");
    assert!(events(&s, "FailedScheduling") >= 10);
    let m = status.metrics_text();
    assert_eq!(metric(&m, "wasmsched_reports_dropped_total{"), 0.0, "{m}");
    assert_eq!(metric(&m, "wasmsched_report_backlog "), 0.0, "{m}");
    assert!(metric(&m, "wasmsched_events_total ") >= 410.0, "{m}");
    assert!(metric(&m, "wasmsched_conditions_written_total ") >= 10.0, "{m}");
}

/// Events the API server never answers are counted, not lost: a stop
/// drains within its bound, and every Scheduled report is then either
/// written or counted as dropped with its reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_the_server_does_not_take_are_counted_and_the_stop_is_bounded() {
    let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())
        .await
        .unwrap();
    for i in 0..5 {
        s.create(node(&format!("n{i}"), "16")).unwrap();
    }
    s.faults().hang(wasmsched_apiserver_sim::Match {
        method: Some("POST".into()),
        ..wasmsched_apiserver_sim::Match::path("/events")
    });
    let (stop, daemon) = start_with(&s, Config::default(), Registry::builtin(), |o| {
        o.drain_timeout = Duration::from_secs(1);
        o.api_timeout = Duration::from_secs(30);
    });
    for i in 0..60 {
        s.create(pod(&format!("p-{i:02}"), "100m")).unwrap();
    }
    wait_bound(&s, "p-", 60, Duration::from_secs(30)).await;
    let stopping = Instant::now();
    let _ = stop.send(());
    let status = daemon.await.unwrap().unwrap();
    // Bindings are done; the drain is 1 s; nothing else may hold the stop.
    assert!(stopping.elapsed() < Duration::from_secs(8), "{:?}", stopping.elapsed());
    let m = status.metrics_text();
    let written = metric(&m, "wasmsched_events_total ");
    let dropped = metric(&m, "wasmsched_reports_dropped_total{write=\"event\"");
    assert_eq!(written + dropped, 60.0, "every event written or counted: {m}");
    assert!(
        metric(
            &m,
            "wasmsched_reports_dropped_total{write=\"event\",reason=\"shutdown\"}"
        ) > 0.0,
        "{m}"
    );
    s.faults().clear();
}

/// Pods waiting for volumes a provisioner never makes do not take the
/// binder's slots: the other pods keep binding, and a waiting pod that is
/// deleted stops being waited for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volume_waits_do_not_stop_other_bindings() {
    let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())
        .await
        .unwrap();
    for i in 0..4 {
        s.create(node(&format!("n{i}"), "64")).unwrap();
    }
    s.create(
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "slow"},
        "provisioner": "csi.example.com", "volumeBindingMode": "WaitForFirstConsumer"}),
    )
    .unwrap();
    let (stop, daemon) = start_with(&s, Config::default(), Registry::builtin(), |o| o.bind_concurrency = 2);
    for i in 0..8 {
        s.create(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": format!("data-{i}"), "namespace": "default"},
            "spec": {"storageClassName": "slow", "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Pending"}}))
            .unwrap();
        let mut p = pod(&format!("wait-{i}"), "100m");
        p["spec"]["volumes"] = json!([{"name": "d", "persistentVolumeClaim": {"claimName": format!("data-{i}")}}]);
        s.create(p).unwrap();
    }
    // Every waiting pod's claim got its node: they all hold a binding now.
    let deadline = Instant::now() + Duration::from_secs(20);
    let selected = |s: &ApiServer| {
        s.list::<k8s_openapi::api::core::v1::PersistentVolumeClaim>()
            .iter()
            .filter(|c| {
                c.metadata
                    .annotations
                    .as_ref()
                    .is_some_and(|a| a.contains_key("volume.kubernetes.io/selected-node"))
            })
            .count()
    };
    while selected(&s) < 8 {
        assert!(Instant::now() < deadline, "{} claims selected", selected(&s));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for i in 0..40 {
        s.create(pod(&format!("plain-{i:02}"), "100m")).unwrap();
    }
    wait_bound(&s, "plain-", 40, Duration::from_secs(20)).await;
    assert_eq!(bound(&s, "wait-"), 0, "no provisioner: the volume waits go on");
    // A waiting pod deleted: its binding ends ("gone") at the next poll.
    let res = wasmsched_apiserver_sim::resources::find_kind("v1", "Pod").unwrap();
    s.store().delete(res, "default", "wait-0", None).unwrap();
    let _ = stop.send(());
    let status = daemon.await.unwrap().unwrap();
    let m = status.metrics_text();
    assert!(metric(&m, "wasmsched_bindings_total{result=\"gone\"}") >= 1.0, "{m}");
}

/// Blocks in Filter while `STUCK` is set: a scheduling loop that does not
/// turn.
static STUCK: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

struct Stuck;

impl Plugin for Stuck {
    fn name(&self) -> &str {
        "Stuck"
    }
    fn points(&self) -> Points {
        Points::FILTER
    }
    fn filter(&self, _: &CycleState, pod: &PodInfo, _: &NodeInfo) -> Status {
        while pod.name.starts_with("stuck") && STUCK.load(std::sync::atomic::Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(10));
        }
        Status::success()
    }
}

/// Healthy means making progress: a scheduling loop stuck in a cycle fails
/// /healthz within the bound, and a stop still ends and releases the lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_scheduling_loop_fails_health_and_the_stop_releases_the_lease() {
    let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())
        .await
        .unwrap();
    s.create(node("n0", "8")).unwrap();
    let mut registry = Registry::builtin();
    registry.register("Stuck", Arc::new(|_| Ok(Arc::new(Stuck) as Arc<dyn Plugin>)));
    let config = Config::from_yaml(
        "profiles:\n- schedulerName: wasm-scheduler\n  plugins:\n    filter:\n      enabled: [{name: Stuck}]\n",
    )
    .unwrap();
    let admin = free_addr();
    let (stop, daemon) = start_with(&s, config, registry, |o| {
        o.admin = Some(wasmsched_kube::AdminOptions::loopback(admin));
        o.stall_timeout = Duration::from_secs(1);
        o.leader_election = LeaderElection {
            lease_duration: Duration::from_secs(2),
            renew_deadline: Duration::from_millis(1500),
            retry_period: Duration::from_millis(200),
            ..Default::default()
        };
    });
    s.create(pod("first", "100m")).unwrap();
    wait_bound(&s, "first", 1, Duration::from_secs(20)).await;
    assert_eq!(get(admin, "/healthz").await.0, 200);
    STUCK.store(true, std::sync::atomic::Ordering::SeqCst);
    s.create(pod("stuck", "100m")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let why = loop {
        let (code, body) = get(admin, "/healthz").await;
        if code == 500 {
            break body;
        }
        assert!(Instant::now() < deadline, "/healthz still {code} {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(why.contains("has not turned"), "{why}");
    let _ = stop.send(());
    tokio::time::sleep(Duration::from_millis(300)).await;
    STUCK.store(false, std::sync::atomic::Ordering::SeqCst);
    daemon.await.unwrap().unwrap();
    let lease: k8s_openapi::api::coordination::v1::Lease = s.get("kube-system", "wasm-scheduler").unwrap();
    assert_eq!(lease.spec.unwrap().holder_identity, None, "the lease is released");
}

/// A 409 on the leader's own renewal (an earlier renewal landed late) is
/// retried until the renew deadline, as client-go does: the leader does not
/// step down and keeps binding.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_on_its_own_renewal_does_not_make_the_leader_step_down() {
    let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())
        .await
        .unwrap();
    s.create(node("n0", "64")).unwrap();
    let admin = free_addr();
    let (stop, daemon) = start_with(&s, Config::default(), Registry::builtin(), |o| {
        o.admin = Some(wasmsched_kube::AdminOptions::loopback(admin));
        o.leader_election = LeaderElection {
            lease_duration: Duration::from_secs(3),
            renew_deadline: Duration::from_secs(2),
            retry_period: Duration::from_millis(200),
            ..Default::default()
        };
    });
    s.create(pod("before", "100m")).unwrap();
    wait_bound(&s, "before", 1, Duration::from_secs(20)).await;
    s.faults().add_rule(wasmsched_apiserver_sim::FailRule {
        code: 409,
        count: Some(3),
        fraction: None,
        matching: wasmsched_apiserver_sim::Match {
            method: Some("PUT".into()),
            ..wasmsched_apiserver_sim::Match::path("/leases/")
        },
    });
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        let (_, m) = get(admin, "/metrics").await;
        assert_eq!(
            metric(&m, "wasmsched_leader "),
            1.0,
            "stepped down on its own renewal's conflict"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(s.faults().injected(), 3, "the renewals met the conflicts");
    s.create(pod("after", "100m")).unwrap();
    wait_bound(&s, "after", 1, Duration::from_secs(10)).await;
    let _ = stop.send(());
    daemon.await.unwrap().unwrap();
}

/// A relist whose list never answers (a half-open connection) is given up
/// after the client's request timeout and retried, so the cache refills
/// when the server answers again instead of staying frozen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_that_never_answers_is_given_up_and_retried() {
    let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())
        .await
        .unwrap();
    s.create(node("n0", "64")).unwrap();
    let conn = wasmsched_kube::ClientConnection {
        qps: None,
        request_timeout: Duration::from_secs(1),
        ..Default::default()
    };
    let client = wasmsched_kube::client::build(kube::Config::new(s.url().parse().unwrap()), &conn).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let mut opts = options(Config::default(), Registry::builtin());
    opts.admin = None;
    let daemon = tokio::spawn(wasmsched_kube::run(client, opts, async move {
        let _ = stopped.await;
    }));
    s.create(pod("first", "100m")).unwrap();
    wait_bound(&s, "first", 1, Duration::from_secs(20)).await;
    // Lists of pods hang; the pods' watch is cut and its history
    // compacted, so the watcher must list again.
    s.faults().hang(wasmsched_apiserver_sim::Match {
        method: Some("GET".into()),
        skip_watches: true,
        ..wasmsched_apiserver_sim::Match::path("/pods")
    });
    // (No await in between: the watcher cannot come back before the
    // history it would resume from is gone.)
    s.drop_watches();
    s.create(pod("second", "100m")).unwrap();
    s.compact();
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.faults().held() == 0 {
        assert!(Instant::now() < deadline, "the relist was never sent");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    s.faults().unhang();
    wait_bound(&s, "second", 1, Duration::from_secs(20)).await;
    let _ = stop.send(());
    daemon.await.unwrap().unwrap();
}

/// A gated pod deleted while the watch was down is forgotten by the relist
/// (its gauge with it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gated_pod_deleted_during_a_watch_gap_is_forgotten() {
    let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())
        .await
        .unwrap();
    s.create(node("n0", "8")).unwrap();
    let admin = free_addr();
    let (stop, daemon) = start_with(&s, Config::default(), Registry::builtin(), |o| {
        o.admin = Some(wasmsched_kube::AdminOptions::loopback(admin));
    });
    let mut gated = pod("gated", "100m");
    gated["spec"]["schedulingGates"] = json!([{"name": "example.com/wait"}]);
    s.create(gated).unwrap();
    let gauge = async || {
        metric(
            &get(admin, "/metrics").await.1,
            "scheduler_pending_pods{queue=\"gated\"}",
        )
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while gauge().await != 1.0 {
        assert!(Instant::now() < deadline, "the gated pod is never counted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Deleted where the watch cannot see it: the watch cut and the history
    // compacted past the deletion (no await in between), so only a relist
    // can tell.
    let res = wasmsched_apiserver_sim::resources::find_kind("v1", "Pod").unwrap();
    s.drop_watches();
    s.store().delete(res, "default", "gated", None).unwrap();
    s.compact();
    let deadline = Instant::now() + Duration::from_secs(15);
    while gauge().await != 0.0 {
        assert!(Instant::now() < deadline, "the deleted gated pod is still counted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = stop.send(());
    daemon.await.unwrap().unwrap();
}

/// A preemption wave while every DELETE is slow and a burst of watch
/// events arrives: 100 preemptors each evict a victim, and scheduling goes
/// on meanwhile (pods for another node pool keep binding, the loop turns,
/// /healthz stays ok); the stop is prompt. The scheduling thread once
/// blocked sending into a full preemption channel while the executors
/// blocked sending their results into the message channel only that
/// thread drains.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preemption_wave_with_slow_deletes_and_a_watch_burst_does_not_wedge() {
    let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())
        .await
        .unwrap();
    let pool = |name: &str, cpu: &str, pool: &str| {
        let mut n = node(name, cpu);
        n["metadata"]["labels"] = json!({"pool": pool});
        n
    };
    for i in 0..4 {
        s.create(pool(&format!("small-{i}"), "2500m", "small")).unwrap();
    }
    s.create(pool("plain-0", "64", "plain")).unwrap();
    s.create(json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": "high"}, "value": 1000}))
        .unwrap();
    // The API server computes a pod's priority from its class.
    let in_pool = |name: String, pool: &str, high: bool| {
        let mut p = pod(&name, "100m");
        p["spec"]["nodeSelector"] = json!({"pool": pool});
        if high {
            p["spec"]["priorityClassName"] = json!("high");
        }
        p
    };
    // 100 victims fill the small pool.
    for i in 0..100 {
        let mut p = in_pool(format!("low-{i:03}"), "small", false);
        p["spec"]["nodeName"] = json!(format!("small-{}", i % 4));
        p["status"] = json!({"phase": "Running", "startTime": "2026-01-01T00:00:00Z"});
        s.create(p).unwrap();
    }
    let admin = free_addr();
    let (stop, daemon) = start_with(&s, Config::default(), Registry::builtin(), |o| {
        o.admin = Some(wasmsched_kube::AdminOptions::loopback(admin));
    });
    wait_bound(&s, "low-", 100, Duration::from_secs(10)).await;
    s.faults().slow(
        wasmsched_apiserver_sim::Match {
            method: Some("DELETE".into()),
            ..Default::default()
        },
        Duration::from_millis(200),
    );
    for i in 0..100 {
        s.create(in_pool(format!("high-{i:03}"), "small", true)).unwrap();
    }
    // The burst: 3000 pods of another scheduler, and ours for the other pool.
    for i in 0..3000 {
        let mut p = pod(&format!("other-{i:04}"), "10m");
        p["spec"]["schedulerName"] = json!("default-scheduler");
        s.create(p).unwrap();
        if i % 75 == 0 {
            s.create(in_pool(format!("plain-{:02}", i / 75), "plain", false))
                .unwrap();
        }
    }
    wait_bound(&s, "plain-", 40, Duration::from_secs(20)).await;
    assert_eq!(get(admin, "/healthz").await.0, 200, "the loop turns during the wave");
    wait_bound(&s, "high-", 100, Duration::from_secs(60)).await;
    assert_eq!(bound(&s, "low-"), 0, "every victim evicted");
    let started = Instant::now();
    let _ = stop.send(());
    let status = tokio::time::timeout(Duration::from_secs(20), daemon)
        .await
        .expect("the stop is bounded")
        .unwrap()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(15));
    assert!(metric(&status.metrics_text(), "wasmsched_evictions_total") >= 100.0);
}

/// Readiness means a cycle can run: each of the watches a cycle needs is a
/// condition of `/readyz`. Without the right to list CSINodes (a ClusterRole
/// that lacks them answers 403), nothing is placed and `/readyz` says so,
/// naming the watch and the API server's answer; once the list succeeds,
/// the pod is placed and the daemon is ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_that_cannot_list_keeps_the_daemon_unready_and_names_it() {
    let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())
        .await
        .unwrap();
    s.create(node("n0", "8")).unwrap();
    s.faults().add_rule(wasmsched_apiserver_sim::FailRule {
        code: 403,
        count: None,
        fraction: Some(1.0),
        matching: wasmsched_apiserver_sim::Match::path("/csinodes"),
    });
    let admin = free_addr();
    let (stop, daemon) = start_with(&s, Config::default(), Registry::builtin(), |o| {
        o.admin = Some(wasmsched_kube::AdminOptions::loopback(admin));
    });
    s.create(pod("waits", "100m")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let body = loop {
        let (code, body) = get(admin, "/readyz").await;
        if code == 503 && body.contains("csinodes") && body.contains("403") {
            break body;
        }
        assert!(Instant::now() < deadline, "/readyz {code}: {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(!body.contains("the nodes watch"), "the other watches listed: {body}");
    assert_eq!(get(admin, "/healthz").await.0, 200, "not ready is not dead");
    let p: Pod = s.get("default", "waits").unwrap();
    assert_eq!(p.spec.unwrap().node_name, None, "no cycle runs without every cache");

    s.faults().clear();
    wait_bound(&s, "waits", 1, Duration::from_secs(60)).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while get(admin, "/readyz").await.0 != 200 {
        assert!(Instant::now() < deadline, "{}", get(admin, "/readyz").await.1);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = stop.send(());
    daemon.await.unwrap().unwrap();
}

/// Healthy means making progress, and a binder that is slow but moving is
/// progress: with every binding taking longer than the stall bound to
/// drain (an admission webhook in a brown-out), the scheduling loop waits
/// on the full bind queue, and `/healthz` stays ok while the bindings land.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_binder_is_progress_for_liveness() {
    let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())
        .await
        .unwrap();
    s.create(node("n0", "64")).unwrap();
    s.faults().slow(
        wasmsched_apiserver_sim::Match {
            method: Some("POST".into()),
            ..wasmsched_apiserver_sim::Match::path("/binding")
        },
        Duration::from_millis(1500),
    );
    let admin = free_addr();
    let (stop, daemon) = start_with(&s, Config::default(), Registry::builtin(), |o| {
        o.admin = Some(wasmsched_kube::AdminOptions::loopback(admin));
        // One binding at a time, four queued: the loop waits 1.5 s for
        // each slot, longer than the stall bound, while every binding
        // lands within its request timeout.
        o.bind_concurrency = 1;
        o.stall_timeout = Duration::from_secs(1);
    });
    while get(admin, "/healthz").await.0 != 200 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for i in 0..8 {
        s.create(pod(&format!("slow-{i:02}"), "100m")).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while bound(&s, "slow-") < 8 {
        let (code, body) = get(admin, "/healthz").await;
        assert_eq!(code, 200, "a moving binder fails liveness: {body}");
        assert!(Instant::now() < deadline, "only {} bound", bound(&s, "slow-"));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = stop.send(());
    daemon.await.unwrap().unwrap();
}

/// A connection that goes silent mid-answer is given up within the read
/// timeout and the request made again: a list whose body stops half-way
/// (the daemon's first list of pods), then a watch that stops sending (a
/// dead NAT entry, a wedged proxy). Each time the pod created meanwhile is
/// bound within the bound, through the daemon's own client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_gone_silent_is_given_up_within_the_read_timeout() {
    use wasmsched_kube::client::{READ_TIMEOUT, build};
    let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())
        .await
        .unwrap();
    s.create(node("n0", "8")).unwrap();
    let pods = wasmsched_apiserver_sim::Match {
        method: Some("GET".into()),
        ..wasmsched_apiserver_sim::Match::path("/api/v1/pods")
    };
    s.faults().stall(pods.clone(), 1);
    s.create(pod("listed", "100m")).unwrap();
    let client = build(
        kube::Config::new(s.url().parse().unwrap()),
        &wasmsched_kube::ClientConnection::default(),
    )
    .unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let daemon = tokio::spawn(wasmsched_kube::run(
        client,
        options(Config::default(), Registry::builtin()),
        async move {
            let _ = stopped.await;
        },
    ));
    let bound_within = READ_TIMEOUT + Duration::from_secs(15);
    wait_bound(&s, "listed", 1, bound_within).await;
    assert_eq!(s.faults().injected(), 1, "the first list stalled");

    // The watch goes silent: the pod made next reaches the daemon once it
    // gives the watch up.
    s.faults().stall(pods, 1);
    s.drop_watches();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(s.faults().injected(), 2, "the watch made again stalled");
    s.create(pod("watched", "100m")).unwrap();
    wait_bound(&s, "watched", 1, bound_within).await;
    let _ = stop.send(());
    daemon.await.unwrap().unwrap();
}
