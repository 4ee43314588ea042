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
    let opts = Options {
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
    };
    let client = kube::Client::try_from(kube::Config::new(s.url().parse().unwrap())).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let daemon = tokio::spawn(wasmsched_kube::run(client, opts, async move {
        let _ = stopped.await;
    }));
    (stop, daemon)
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
            "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.".to_owned()
        )
    );
    let _ = stop.send(());
    daemon.await.unwrap().unwrap();
}
