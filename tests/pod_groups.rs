//! PodGroups (`scheduling.k8s.io/v1alpha2`) end to end: the real daemon
//! against the API server double, which serves PodGroups as a v1.36
//! kube-apiserver does. Gangs bind whole or not at all, a group that
//! cannot fit holds nothing, pods wait for their group, and a leader
//! failover in the middle of a group loses nothing.

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::scheduling::v1alpha2::PodGroup;
use serde_json::json;
use wasmsched_apiserver_sim::{ApiServer, Config as SimConfig};

mod support;

struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn daemon(s: &ApiServer, identity: &str) -> Daemon {
    let config = std::env::temp_dir().join(format!("wasmsched-podgroups-{}.yaml", std::process::id()));
    std::fs::write(&config, support::FAST_LEASE).unwrap();
    let admin = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .args(["run", "--master", &s.url(), "--identity", identity])
        .args(["--admin-address", &admin.to_string(), "--admin-plain-http"])
        .arg("--config")
        .arg(&config)
        .env("WASMSCHED_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start wasmsched run");
    Daemon(child)
}

async fn server(nodes: usize, cpu: &str) -> ApiServer {
    let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())
        .await
        .unwrap();
    for i in 0..nodes {
        s.create(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": format!("node-{i}"), "labels": {"kubernetes.io/hostname": format!("node-{i}")}},
            "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}
        }))
        .unwrap();
    }
    s
}

fn add_group(s: &ApiServer, name: &str, min_count: u32) {
    s.create(json!({
        "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    }))
    .unwrap();
}

fn add_member(s: &ApiServer, group: &str, i: usize, cpu: &str) {
    s.create(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("{group}-{i}"), "namespace": "default", "labels": {"group": group}},
        "spec": {"schedulerName": "wasm-scheduler", "schedulingGroup": {"podGroupName": group},
                 "containers": [{"name": "c", "image": "trainer", "resources": {"requests": {"cpu": cpu, "memory": "128Mi"}}}]}
    }))
    .unwrap();
}

fn delete_members(s: &ApiServer, group: &str, n: usize) {
    for i in 0..n {
        s.store()
            .delete(
                wasmsched_apiserver_sim::resources::PODS,
                "default",
                &format!("{group}-{i}"),
                None,
            )
            .unwrap();
    }
}

fn bound(p: &Pod) -> bool {
    p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()
}

/// Bound pods per group.
fn bound_per_group(s: &ApiServer) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for p in s.list::<Pod>() {
        if let Some(g) = p.metadata.labels.as_ref().and_then(|l| l.get("group")) {
            *out.entry(g.clone()).or_insert(0) += usize::from(bound(&p));
        }
    }
    out
}

/// Polls until `done` holds, checking `always` at every look.
async fn until(
    s: &ApiServer,
    what: &str,
    within: Duration,
    always: &dyn Fn(&BTreeMap<String, usize>),
    done: &dyn Fn(&BTreeMap<String, usize>) -> bool,
) {
    let deadline = Instant::now() + within;
    loop {
        let m = bound_per_group(s);
        always(&m);
        if done(&m) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {m:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The group's `PodGroupScheduled` condition: status, reason, message.
fn group_condition(s: &ApiServer, name: &str) -> Option<(String, String, String)> {
    let g: PodGroup = s.get("default", name)?;
    let c = g
        .status?
        .conditions?
        .into_iter()
        .find(|c| c.type_ == "PodGroupScheduled")?;
    Some((c.status, c.reason, c.message))
}

async fn wait_group_condition(s: &ApiServer, name: &str, status: &str) -> (String, String, String) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(c) = group_condition(s, name).filter(|c| c.0 == status) {
            return c;
        }
        assert!(Instant::now() < deadline, "{name}: {:?}", group_condition(s, name));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn pod_message(s: &ApiServer, name: &str) -> Option<String> {
    let p: Pod = s.get("default", name)?;
    p.status?
        .conditions?
        .into_iter()
        .find(|c| c.type_ == "PodScheduled")?
        .message
}

/// Three gangs of four pods of 1.5 CPU on four nodes of 4 CPU (room for
/// eight): exactly two bind, whole, and no more than two gangs ever have a
/// pod bound; the third holds nothing and says why, as its group does.
/// Deleting a bound gang binds the third, whole. A gang of five that can
/// never fit binds none; pods whose group does not exist wait, unreported,
/// and bind once it is created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gangs_of_a_pod_group_bind_whole_or_not_at_all() {
    let s = server(4, "4").await;
    let _d = daemon(&s, "replica-a");
    for g in ["a", "b", "c"] {
        add_group(&s, g, 4);
    }
    for g in ["a", "b", "c"] {
        for i in 0..4 {
            add_member(&s, g, i, "1500m");
        }
    }
    let never_three = |m: &BTreeMap<String, usize>| {
        let started = m.values().filter(|&&n| n > 0).count();
        assert!(started <= 2, "a third gang got a pod bound: {m:?}");
    };
    let two_whole = |m: &BTreeMap<String, usize>| m.values().filter(|&&n| n == 4).count() == 2;
    until(&s, "two gangs bound", Duration::from_secs(30), &never_three, &two_whole).await;
    // It stays so: the third keeps trying (backoff) and holds nothing.
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        let m = bound_per_group(&s);
        never_three(&m);
        assert!(two_whole(&m), "{m:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let m = bound_per_group(&s);
    let third = m.iter().find(|(_, n)| **n == 0).map(|(g, _)| g.clone()).unwrap();
    let (_, reason, message) = wait_group_condition(&s, &third, "False").await;
    assert_eq!(
        (reason.as_str(), message.as_str()),
        ("Unschedulable", "pod group is unschedulable")
    );
    for (g, _) in m.iter().filter(|(_, n)| **n == 4) {
        let (_, reason, message) = wait_group_condition(&s, g, "True").await;
        assert_eq!((reason.as_str(), message.as_str()), ("Scheduled", ""));
    }
    // Its pods say why: those that would fit wait for the rest.
    let messages: Vec<String> = (0..4)
        .filter_map(|i| pod_message(&s, &format!("{third}-{i}")))
        .collect();
    assert!(
        messages.iter().all(|m| m.starts_with("pod group is unschedulable")
            || m.starts_with("0/4 nodes are available: 4 Insufficient cpu.")),
        "{messages:?}"
    );
    let failed_events = s
        .list::<Event>()
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("FailedScheduling"))
        .count();
    assert!(failed_events > 0);

    let (first, _) = m.iter().find(|(_, n)| **n == 4).unwrap();
    delete_members(&s, first, 4);
    until(&s, "the third bound whole", Duration::from_secs(30), &|_| {}, &|m| {
        m.get(&third) == Some(&4)
    })
    .await;
    let (_, reason, _) = wait_group_condition(&s, &third, "True").await;
    assert_eq!(reason, "Scheduled");

    // Room is one CPU a node now: five pods of one CPU never fit.
    add_group(&s, "d", 5);
    for i in 0..5 {
        add_member(&s, "d", i, "1");
    }
    // A group created after its pods: they wait for it, unreported.
    for i in 0..2 {
        add_member(&s, "e", i, "100m");
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let m = bound_per_group(&s);
    assert_eq!((m.get("d"), m.get("e")), (Some(&0), Some(&0)), "{m:?}");
    assert_eq!(
        pod_message(&s, "e-0"),
        None,
        "a pod waiting for its group gets no condition"
    );
    let (_, reason, _) = wait_group_condition(&s, "d", "False").await;
    assert_eq!(reason, "Unschedulable");
    add_group(&s, "e", 2);
    until(&s, "e bound", Duration::from_secs(20), &|_| {}, &|m| {
        m.get("e") == Some(&2)
    })
    .await;
    assert_eq!(bound_per_group(&s).get("d"), Some(&0));
    assert_eq!(s.counters().bindings, 8 + 4 + 2, "no pod bound twice");
}

/// A gang whose pods arrive while one replica leads, and the rest after
/// it dies without handing over, is bound whole by the next leader, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_failover_in_the_middle_of_a_group_loses_nothing() {
    let s = server(2, "4").await;
    let mut a = daemon(&s, "replica-a");
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
    let _b = daemon(&s, "replica-b");
    add_group(&s, "train", 4);
    for i in 0..3 {
        add_member(&s, "train", i, "1");
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        bound_per_group(&s).get("train"),
        Some(&0),
        "three of four wait for the fourth"
    );
    let _ = a.0.kill(); // no lease release: b waits out the lease
    let _ = a.0.wait();
    add_member(&s, "train", 3, "1");
    until(
        &s,
        "the gang bound by the next leader",
        Duration::from_secs(30),
        &|_| {},
        &|m| m.get("train") == Some(&4),
    )
    .await;
    assert_eq!(s.counters().bindings, 4, "each pod bound once");
    let (_, reason, _) = wait_group_condition(&s, "train", "True").await;
    assert_eq!(reason, "Scheduled");
}
