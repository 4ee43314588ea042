//! The wasmtime host with real components built from `plugins/` by the
//! Rust guest toolchain: calls, limits, failure policies, the compile
//! cache and hot reload of a directory laid out like a ConfigMap volume.

mod guest;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::json;
use wasmsched_core::framework::CycleState;
use wasmsched_core::{Cache, NodeData, NodeInfo, Plugin, PodInfo};
use wasmsched_wasm::{CallError, LoadError, PluginHost, PluginSlot, WasmConfig, WasmEngine};

fn nodes(prices: &[Option<&str>]) -> Vec<Arc<NodeInfo>> {
    let mut cache = Cache::new();
    for (i, p) in prices.iter().enumerate() {
        let mut n = json!({"metadata": {"name": format!("n{i}"), "labels": {"cluster.type": if i == 0 { "raspberry" } else { "x86" }}},
                           "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}});
        if let Some(p) = p {
            n["metadata"]["annotations"] = json!({"price": p});
        }
        let node: Node = serde_json::from_value(n).unwrap();
        cache.upsert_node(NodeData::from_node(&node).unwrap());
    }
    let mut v: Vec<Arc<NodeInfo>> = cache.snapshot().nodes.clone();
    v.sort_by(|a, b| a.name().cmp(b.name()));
    v
}

fn pod(annotations: serde_json::Value) -> PodInfo {
    let p: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p", "namespace": "default", "uid": "u-1", "annotations": annotations},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "250m"}}}]}
    }))
    .unwrap();
    PodInfo::from_pod(&p).unwrap()
}

fn refs(n: &[Arc<NodeInfo>]) -> Vec<&Arc<NodeInfo>> {
    n.iter().collect()
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wasmsched-{tag}-{}-{:?}", std::process::id(), Instant::now()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn host_for(dir: Option<&Path>, config: serde_json::Value) -> Arc<PluginHost> {
    let mut cfg = WasmConfig::from_value(Some(&config)).unwrap();
    cfg.directory = dir.map(Path::to_owned);
    PluginHost::new(WasmEngine::new(None).unwrap(), cfg, 7)
}

/// A directory holding copies of `files`, scanned, with a slot for `name`.
fn slot(name: &str, file: &Path, args: &str, config: serde_json::Value) -> (Arc<PluginHost>, Arc<PluginSlot>) {
    let dir = temp_dir("slot");
    std::fs::copy(file, dir.join(format!("{name}.wasm"))).unwrap();
    let host = host_for(Some(&dir), config);
    let report = host.scan();
    assert!(report.rejected.is_empty(), "{report:?}");
    let slot = host.slot(name, args.to_owned()).unwrap();
    (host, slot)
}

#[test]
fn node_price_scores_the_cheapest_node_highest() {
    let host = host_for(None, json!({}));
    let l = host.load_file(&guest::node_price(), "{}").unwrap();
    assert_eq!(
        (l.name.as_str(), l.point_names()),
        ("node-price", vec!["Score", "NormalizeScore"])
    );
    let ns = nodes(&[Some("0.10"), Some("0.30"), None, Some("0.20"), Some("lots")]);
    let p = pod(json!({}));
    let raw = l.score(&p, &refs(&ns)).unwrap();
    assert_eq!(raw, [100, 300, -1, 200, -1]);
    assert_eq!(l.normalize(&p, &raw).unwrap(), [100, 0, 0, 50, 0]);
    // the annotation key is configurable
    let custom = host
        .load_file(&guest::node_price(), r#"{"annotation": "cost"}"#)
        .unwrap();
    assert_eq!(custom.score(&p, &refs(&ns)).unwrap(), [-1; 5]);
    let bad = host
        .load_file(&guest::node_price(), r#"{"annotation": ""}"#)
        .unwrap_err();
    assert_eq!(bad, LoadError::Configure("args.annotation: must not be empty".into()));
}

#[test]
fn label_gate_filters_through_the_framework_adapter() {
    let (_host, slot) = slot("label-gate", &guest::label_gate(), "{}", json!({}));
    let ns = nodes(&[None, None, None]);
    let mut state = CycleState::default();
    let snapshot = wasmsched_core::Snapshot::default();
    // a pod that asks for nothing skips the filter
    assert!(slot.pre_filter(&mut state, &pod(json!({})), &snapshot).is_skip());
    let pi = pod(json!({"cluster.type": "raspberry"}));
    assert!(slot.pre_filter(&mut state, &pi, &snapshot).is_success());
    let mut rejected = Vec::new();
    slot.filter_nodes(&state, &pi, &refs(&ns), &mut rejected);
    let got: Vec<(usize, String)> = rejected.iter().map(|(i, s)| (*i, s.message())).collect();
    let why = "node(s) were not of the requested cluster.type raspberry".to_owned();
    assert_eq!(got, [(1, why.clone()), (2, why)]);
}

#[test]
fn traps_timeouts_and_memory_exhaustion_are_plugin_errors() {
    let host = host_for(
        None,
        json!({"plugins": [{"name": "misbehave", "memoryMib": 16, "timeoutMs": 50}]}),
    );
    let ns = nodes(&[None, None]);
    let p = pod(json!({}));
    let call = |mode: &str| {
        host.load_file(&guest::misbehave(), &format!(r#"{{"mode": "{mode}"}}"#))
            .unwrap()
            .score(&p, &refs(&ns))
    };
    assert_eq!(call("ok").unwrap(), [50, 50]);
    assert!(
        matches!(call("trap"), Err(CallError::Trap(m)) if m.contains("unreachable")),
        "{:?}",
        call("trap")
    );
    let t = Instant::now();
    assert_eq!(call("loop"), Err(CallError::Timeout(Duration::from_millis(50))));
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "the deadline stops an endless loop"
    );
    assert_eq!(call("oom"), Err(CallError::OutOfMemory(16)));
    // A guest whose heap only grows (1 MiB a call here) never runs out in a
    // call: its instance is retired once past 3/4 of the cap.
    let leaky = host.load_file(&guest::misbehave(), r#"{"mode": "leak"}"#).unwrap();
    for i in 0..64 {
        assert_eq!(leaky.score(&p, &refs(&ns)), Ok(vec![50, 50]), "call {i}");
    }
    let stats = leaky.stats();
    assert!(stats.retired.load(Ordering::Relaxed) >= 4, "{stats:?}");
    assert_eq!(stats.out_of_memory.load(Ordering::Relaxed), 0);
    assert_eq!(
        call("error"),
        Err(CallError::Plugin("refusing 2 nodes on purpose".into()))
    );
    let bad = host
        .load_file(&guest::misbehave(), r#"{"mode": "bad-config"}"#)
        .unwrap_err();
    assert_eq!(bad, LoadError::Configure("mode bad-config: refusing to start".into()));
}

#[test]
fn a_trapped_instance_is_replaced() {
    let host = host_for(None, json!({}));
    let l = host
        .load_file(&guest::misbehave(), r#"{"mode": "trap-after-1"}"#)
        .unwrap();
    let ns = nodes(&[None]);
    let p = pod(json!({}));
    assert!(l.score(&p, &refs(&ns)).is_ok());
    assert!(matches!(l.score(&p, &refs(&ns)), Err(CallError::Trap(_))));
    // a fresh instance (configured again, its call count back to 0) serves
    assert!(l.score(&p, &refs(&ns)).is_ok());
}

#[test]
fn failure_policy_fail_is_an_error_and_ignore_skips_the_plugin() {
    let ns = nodes(&[None, None, None]);
    let p = pod(json!({}));
    let state = CycleState::default();
    let (_h, fail) = slot("misbehave", &guest::misbehave(), r#"{"mode":"error"}"#, json!({}));
    let mut rejected = Vec::new();
    fail.filter_nodes(&state, &p, &refs(&ns), &mut rejected);
    // An error, not a rejection: the cycle fails (SchedulerError), the pod backs off.
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0].1.code(), wasmsched_core::Code::Error);
    assert_eq!(rejected[0].1.message(), "plugin misbehave: refusing 3 nodes on purpose");
    let mut out = [7; 3];
    let err = fail.score_nodes(&state, &p, &refs(&ns), &mut out).unwrap_err();
    assert_eq!(err.message(), "plugin misbehave: refusing 3 nodes on purpose");
    let (_h, ignore) = slot(
        "misbehave",
        &guest::misbehave(),
        r#"{"mode":"trap"}"#,
        json!({"plugins": [{"name": "misbehave", "failurePolicy": "ignore"}]}),
    );
    let mut rejected = Vec::new();
    ignore.filter_nodes(&state, &p, &refs(&ns), &mut rejected);
    assert!(rejected.is_empty());
    ignore.score_nodes(&state, &p, &refs(&ns), &mut out).unwrap();
    assert_eq!(out, [0; 3]);
    assert_eq!(ignore.stats().traps.load(std::sync::atomic::Ordering::Relaxed), 2);
}

#[test]
fn components_that_import_wasi_or_are_not_components_are_rejected() {
    let host = host_for(None, json!({}));
    let wasi = guest::build("testdata/misbehave", Some("wasm32-wasip2"));
    match host.load_file(&wasi, "{}").unwrap_err() {
        LoadError::ForbiddenImport(m) => assert!(m.contains("imports the interface `wasi:"), "{m}"),
        other => panic!("{other:?}"),
    }
    let dir = temp_dir("bad");
    let garbage = dir.join("garbage.wasm");
    std::fs::write(&garbage, b"not wasm").unwrap();
    assert!(matches!(
        host.load_file(&garbage, "{}"),
        Err(LoadError::NotAComponent(_))
    ));
    let core_module = dir.join("core.wasm");
    std::fs::write(&core_module, b"\0asm\x01\0\0\0").unwrap();
    match host.load_file(&core_module, "{}").unwrap_err() {
        LoadError::NotAComponent(m) => assert!(m.contains("core WebAssembly module"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn compiled_components_are_cached_on_disk() {
    let cache = temp_dir("cache");
    let cfg = WasmConfig {
        cache_directory: Some(cache.clone()),
        ..Default::default()
    };
    let first = PluginHost::new(WasmEngine::new(Some(cache.clone())).unwrap(), cfg.clone(), 1);
    assert!(!first.load_file(&guest::node_price(), "{}").unwrap().cached);
    // a new engine, as after a restart
    let second = PluginHost::new(WasmEngine::new(Some(cache.clone())).unwrap(), cfg, 1);
    let l = second.load_file(&guest::node_price(), "{}").unwrap();
    assert!(l.cached);
    assert_eq!(l.score(&pod(json!({})), &refs(&nodes(&[Some("1")]))).unwrap(), [1000]);
    let entries: Vec<_> = std::fs::read_dir(&cache).unwrap().flatten().collect();
    assert_eq!(entries.len(), 1);
    assert!(entries[0].file_name().to_string_lossy().contains("-wasmtime48.0.8-"));
}

/// The same component with different bytes (a custom section appended).
fn variant(file: &Path, tag: &str) -> Vec<u8> {
    let mut b = std::fs::read(file).unwrap();
    let payload = tag.as_bytes();
    b.push(0); // custom section
    b.push((1 + 1 + payload.len()) as u8);
    b.push(1);
    b.push(b'v');
    b.extend_from_slice(payload);
    b
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A ConfigMap volume: `..data` points at a timestamped directory, the
/// visible name is a symlink through it; an update swaps `..data` at once.
#[cfg(unix)]
#[test]
fn hot_reload_follows_configmap_updates_and_keeps_the_last_good_version() {
    use std::os::unix::fs::symlink;
    let dir = temp_dir("configmap");
    let publish = |generation: &str, bytes: Option<&[u8]>| {
        let data = dir.join(format!("..{generation}"));
        std::fs::create_dir_all(&data).unwrap();
        if let Some(b) = bytes {
            std::fs::write(data.join("node-price.wasm"), b).unwrap();
        }
        let tmp = dir.join("..data_tmp");
        let _ = std::fs::remove_file(&tmp);
        symlink(format!("..{generation}"), &tmp).unwrap();
        std::fs::rename(&tmp, dir.join("..data")).unwrap();
    };
    let v1 = variant(&guest::node_price(), "1");
    publish("2026_11_23_01", Some(&v1));
    symlink("..data/node-price.wasm", dir.join("node-price.wasm")).unwrap();

    let host = host_for(Some(&dir), json!({}));
    assert_eq!(host.scan().loaded.len(), 1);
    let slot = host.slot("node-price", "{}".into()).unwrap();
    let sha1 = slot.current().unwrap().sha256.clone();
    let _watch = host.watch(Duration::from_millis(100), Duration::from_secs(60)).unwrap();

    // an update: the new version replaces the old for the next calls, and
    // no call fails while it happens
    let in_flight = slot.current().unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let caller = {
        let (slot, stop) = (slot.clone(), stop.clone());
        std::thread::spawn(move || {
            let (ns, p, state) = (nodes(&[Some("1"), Some("2")]), pod(json!({})), CycleState::default());
            let mut calls = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let mut out = [0; 2];
                slot.score_nodes(&state, &p, &refs(&ns), &mut out)
                    .expect("no call fails during a swap");
                calls += 1;
            }
            calls
        })
    };
    let swapped = Instant::now();
    publish("2026_11_23_02", Some(&variant(&guest::node_price(), "2")));
    wait_for("version 2", || slot.current().unwrap().sha256 != sha1);
    let took = swapped.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(caller.join().unwrap() > 0);
    eprintln!("new version serving {took:?} after the ..data swap");
    assert_eq!(in_flight.sha256, sha1, "a call holding version 1 keeps it");
    let sha2 = slot.current().unwrap().sha256.clone();

    // a broken update is rejected; version 2 keeps serving
    let errors = host.load_errors.load(std::sync::atomic::Ordering::Relaxed);
    publish("2026_11_23_03", Some(b"\0asm garbage"));
    wait_for("the rejection", || {
        host.load_errors.load(std::sync::atomic::Ordering::Relaxed) > errors
    });
    assert_eq!(slot.current().unwrap().sha256, sha2);
    let scores = slot
        .current()
        .unwrap()
        .score(&pod(json!({})), &refs(&nodes(&[Some("2")])))
        .unwrap();
    assert_eq!(scores, [2000]);

    // the key is removed from the ConfigMap: the plugin is unloaded
    std::fs::remove_file(dir.join("node-price.wasm")).unwrap();
    wait_for("the unload", || slot.current().is_none());
}

/// A copy tool writing the file in two steps loads it once, whole.
#[test]
fn hot_reload_debounces_writes_in_several_steps() {
    let dir = temp_dir("steps");
    let host = host_for(Some(&dir), json!({}));
    host.scan();
    let slot = host.slot("label-gate", "{}".into()).unwrap();
    assert!(slot.current().is_none(), "no file yet: the plugin passes every node");
    let _watch = host.watch(Duration::from_millis(300), Duration::from_secs(60)).unwrap();
    let bytes = std::fs::read(guest::label_gate()).unwrap();
    let path = dir.join("label-gate.wasm");
    let (a, b) = bytes.split_at(bytes.len() / 2);
    std::fs::write(&path, a).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    std::io::Write::write_all(&mut f, b).unwrap();
    drop(f);
    wait_for("the new plugin", || slot.current().is_some());
    assert_eq!(
        host.load_errors.load(std::sync::atomic::Ordering::Relaxed),
        0,
        "the half-written file was never loaded"
    );
    assert_eq!(slot.stats().loads.load(std::sync::atomic::Ordering::Relaxed), 1);
}

#[test]
fn out_of_range_scores_and_foreign_components_are_refused() {
    let ns = nodes(&[None, None]);
    let p = pod(json!({}));
    let state = CycleState::default();
    let (_h, slot) = slot("misbehave", &guest::misbehave(), r#"{"mode":"range"}"#, json!({}));
    let mut out = [0; 2];
    let err = slot.score_nodes(&state, &p, &refs(&ns), &mut out).unwrap_err();
    assert_eq!(
        err.message(),
        "plugin misbehave: score 1000 for node n0 is outside 0..=100 (implement normalize-score to map raw scores)"
    );
    // A component of another world: valid, but it does not export the plugin interface.
    let dir = temp_dir("world");
    let wat = dir.join("empty.wat");
    std::fs::write(&wat, "(component)").unwrap();
    let other = dir.join("other-world.wasm");
    let st = std::process::Command::new("wasm-tools")
        .arg("parse")
        .arg(&wat)
        .arg("-o")
        .arg(&other)
        .status()
        .unwrap();
    assert!(st.success());
    let host = host_for(None, json!({}));
    match host.load_file(&other, "{}").unwrap_err() {
        LoadError::Invalid(m) => assert!(m.contains("does not export wasmsched:plugin/plugin@0.1.0"), "{m}"),
        e => panic!("{e:?}"),
    }
}

/// The scheduler keeps scheduling around a plugin that traps on every call:
/// with `ignore` the pods are placed by the other plugins; with `fail` they
/// are unschedulable with the plugin's error as the reason.
#[test]
fn the_scheduler_keeps_scheduling_around_a_trapping_plugin() {
    use wasmsched_core::config::Config;
    use wasmsched_core::scheduler::{Responsibility, Scheduler};
    let dir = temp_dir("sched");
    std::fs::copy(guest::misbehave(), dir.join("misbehave.wasm")).unwrap();
    std::fs::copy(guest::node_price(), dir.join("node-price.wasm")).unwrap();
    for (policy, expect_bound) in [("ignore", true), ("fail", false)] {
        let yaml = format!(
            "profiles:\n- schedulerName: wasm-scheduler\n  plugins:\n    multiPoint:\n      enabled: [{{name: misbehave}}, {{name: node-price}}]\n  pluginConfig:\n  - name: misbehave\n    args: {{mode: trap}}\nwasmPlugins:\n  plugins: [{{name: misbehave, failurePolicy: {policy}}}]\n"
        );
        let config = Config::from_yaml(&yaml).unwrap();
        let mut wasm = WasmConfig::from_value(config.wasm_plugins.as_ref()).unwrap();
        wasm.directory = Some(dir.clone());
        let host = PluginHost::new(WasmEngine::new(None).unwrap(), wasm, 1);
        host.scan();
        let mut registry = wasmsched_core::plugins::Registry::builtin();
        host.register(&mut registry);
        let mut sched = Scheduler::new(&config, &registry, 1, Responsibility::AllPods).unwrap();
        let now = Instant::now();
        for i in 0..3 {
            let n: Node = serde_json::from_value(
                json!({"metadata": {"name": format!("n{i}"), "annotations": {"price": format!("0.{i}1")}},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}),
            )
            .unwrap();
            sched.on_node(&n, now).unwrap();
        }
        let p: Pod = serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "default", "uid": "u"},
            "spec": {"schedulerName": "wasm-scheduler", "containers": [{"name": "c", "image": "x"}]}}))
        .unwrap();
        sched.on_pod(&p, now).unwrap();
        let attempt = sched.schedule_one(now, false).unwrap();
        match (&attempt.result, expect_bound) {
            (Ok(r), true) => assert_eq!(r.node, "n0", "node-price still picks the cheapest"),
            (Err(e @ wasmsched_core::framework::ScheduleError::Error(_)), false) => {
                assert!(e.to_string().contains("plugin misbehave: trapped"), "{e}")
            }
            (r, _) => panic!("{policy}: unexpected {r:?}"),
        }
    }
}
