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
use wasmsched_core::node::NodeRow;
use wasmsched_core::{Cache, NodeData, NodeInfo, Plugin, PodInfo};
use wasmsched_wasm::{CallError, LoadError, PluginHost, PluginSlot, Tier, Tiering, WasmConfig, WasmEngine};

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

fn refs<T>(n: &[T]) -> Vec<&T> {
    n.iter().collect()
}

/// The nodes' rows, as a cycle passes them beside the nodes.
fn rows(n: &[Arc<NodeInfo>]) -> Vec<NodeRow> {
    n.iter().map(|n| NodeRow::of(n)).collect()
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
    let raw = l.score(&p, &refs(&ns), None).unwrap();
    assert_eq!(raw, [100, 300, -1, 200, -1]);
    assert_eq!(l.normalize(&p, &raw).unwrap(), [100, 0, 0, 50, 0]);
    // the annotation key is configurable
    let custom = host
        .load_file(&guest::node_price(), r#"{"annotation": "cost"}"#)
        .unwrap();
    assert_eq!(custom.score(&p, &refs(&ns), None).unwrap(), [-1; 5]);
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
    slot.filter_nodes(&state, &pi, &refs(&ns), &refs(&rows(&ns)), &mut rejected);
    let got: Vec<(usize, String)> = rejected.iter().map(|(i, s)| (*i, s.message())).collect();
    let why = "node(s) were not of the requested cluster.type raspberry".to_owned();
    assert_eq!(got, [(1, why.clone()), (2, why)]);
}

#[test]
fn traps_timeouts_and_memory_exhaustion_are_plugin_errors() {
    limits_hold(Tier::Optimized);
}

/// Code from the baseline compiler (Winch) is stopped at the same deadline
/// and held to the same memory cap as Cranelift's.
#[test]
fn baseline_code_is_held_to_the_same_limits() {
    limits_hold(Tier::Baseline);
}

fn limits_hold(tier: Tier) {
    let host = host_for(
        None,
        json!({"plugins": [{"name": "misbehave", "memoryMib": 16, "timeoutMs": 50}]}),
    );
    let ns = nodes(&[None, None]);
    let p = pod(json!({}));
    let load = |args: &str| {
        let l = host.load_file_with(&guest::misbehave(), args, tier);
        if let Ok(l) = &l {
            assert_eq!(l.tier, tier);
        }
        l
    };
    let call = |mode: &str| {
        load(&format!(r#"{{"mode": "{mode}"}}"#))
            .unwrap()
            .score(&p, &refs(&ns), None)
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
    let leaky = load(r#"{"mode": "leak"}"#).unwrap();
    for i in 0..64 {
        assert_eq!(leaky.score(&p, &refs(&ns), None), Ok(vec![50, 50]), "call {i}");
    }
    let stats = leaky.stats();
    assert!(stats.retired.load(Ordering::Relaxed) >= 4, "{stats:?}");
    assert_eq!(stats.out_of_memory.load(Ordering::Relaxed), 0);
    assert_eq!(
        call("error"),
        Err(CallError::Plugin("refusing 2 nodes on purpose".into()))
    );
    let bad = load(r#"{"mode": "bad-config"}"#).unwrap_err();
    assert_eq!(bad, LoadError::Configure("mode bad-config: refusing to start".into()));
    // A declaration of metric sources is bounded: more than 64 names, or
    // one over 256 bytes, refuses the version (none escapes the check of
    // the configured sources); one that traps refuses it too.
    assert_eq!(
        load(r#"{"mode": "many-sources"}"#).unwrap_err(),
        LoadError::Configure("metric-sources declares 1000 sources, more than the host reads (64)".into())
    );
    match load(r#"{"mode": "long-source"}"#).unwrap_err() {
        LoadError::Configure(why) => assert!(
            why.starts_with("metric-sources declares a name of 1000 bytes, longer than a source's name may be (256)"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
    match load(r#"{"mode": "trap-sources"}"#).unwrap_err() {
        LoadError::Instantiate(why) => assert!(why.starts_with("metric-sources: "), "{why}"),
        other => panic!("{other:?}"),
    }
}

/// Calls that find every pooled instance busy make instances of their own;
/// the pool keeps no more than [`warm_instances`] of them afterwards.
#[test]
fn the_pool_keeps_at_most_the_warm_instances() {
    // 24 calls that spin keep every core busy: not beside tests that measure.
    let _alone = exclusive();
    let host = host_for(None, json!({"defaults": {"timeoutMs": 5000}}));
    let l = host.load_file(&guest::misbehave(), r#"{"mode": "busy"}"#).unwrap();
    let ns = nodes(&[None]);
    let p = pod(json!({}));
    let start = std::sync::Barrier::new(24);
    std::thread::scope(|s| {
        for _ in 0..24 {
            s.spawn(|| {
                start.wait();
                l.score(&p, &refs(&ns), None).unwrap();
            });
        }
    });
    let warm = wasmsched_wasm::warm_instances();
    assert!(l.pooled() <= warm, "{} pooled, {warm} warm", l.pooled());
    assert!(l.pooled() >= 1);
}

#[test]
fn a_trapped_instance_is_replaced() {
    let host = host_for(None, json!({}));
    let l = host
        .load_file(&guest::misbehave(), r#"{"mode": "trap-after-1"}"#)
        .unwrap();
    let ns = nodes(&[None]);
    let p = pod(json!({}));
    assert!(l.score(&p, &refs(&ns), None).is_ok());
    assert!(matches!(l.score(&p, &refs(&ns), None), Err(CallError::Trap(_))));
    // a fresh instance (configured again, its call count back to 0) serves
    assert!(l.score(&p, &refs(&ns), None).is_ok());
}

#[test]
fn failure_policy_fail_is_an_error_and_ignore_skips_the_plugin() {
    let ns = nodes(&[None, None, None]);
    let p = pod(json!({}));
    let state = CycleState::default();
    let (_h, fail) = slot("misbehave", &guest::misbehave(), r#"{"mode":"error"}"#, json!({}));
    let mut rejected = Vec::new();
    fail.filter_nodes(&state, &p, &refs(&ns), &refs(&rows(&ns)), &mut rejected);
    // An error, not a rejection: the cycle fails (SchedulerError), the pod backs off.
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0].1.code(), wasmsched_core::Code::Error);
    assert_eq!(rejected[0].1.message(), "plugin misbehave: refusing 3 nodes on purpose");
    let mut out = [7; 3];
    let err = fail
        .score_nodes(&state, &p, &refs(&ns), &refs(&rows(&ns)), &mut out)
        .unwrap_err();
    assert_eq!(err.message(), "plugin misbehave: refusing 3 nodes on purpose");
    let (_h, ignore) = slot(
        "misbehave",
        &guest::misbehave(),
        r#"{"mode":"trap"}"#,
        json!({"plugins": [{"name": "misbehave", "failurePolicy": "ignore"}]}),
    );
    let mut rejected = Vec::new();
    ignore.filter_nodes(&state, &p, &refs(&ns), &refs(&rows(&ns)), &mut rejected);
    assert!(rejected.is_empty());
    ignore
        .score_nodes(&state, &p, &refs(&ns), &refs(&rows(&ns)), &mut out)
        .unwrap();
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
    let cache = temp_dir("cache").join("compiled");
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
    assert_eq!(
        l.score(&pod(json!({})), &refs(&nodes(&[Some("1")])), None).unwrap(),
        [1000]
    );
    let mut entries: Vec<String> = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    assert_eq!(entries.len(), 2, "the artifact and its digest: {entries:?}");
    assert!(entries[0].contains("-wasmtime48.0.8-") && entries[0].ends_with(".cwasm"));
    assert!(entries[1].ends_with(".cwasm.sha256"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o077, 0, "created private: {mode:o}");
    }
}

/// A flipped byte in a cached artifact is detected: the component is
/// compiled again (never run from the tampered file), and the entry rewritten.
#[test]
fn a_tampered_cache_entry_is_recompiled() {
    let cache = temp_dir("tamper").join("compiled");
    let engine = || WasmEngine::new(Some(cache.clone())).unwrap();
    let host = PluginHost::new(engine(), WasmConfig::default(), 1);
    assert!(!host.load_file(&guest::node_price(), "{}").unwrap().cached);
    let artifact = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .unwrap();
    let mut bytes = std::fs::read(&artifact).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    std::fs::write(&artifact, &bytes).unwrap();
    let host = PluginHost::new(engine(), WasmConfig::default(), 1);
    let l = host.load_file(&guest::node_price(), "{}").unwrap();
    assert!(!l.cached, "recompiled, not loaded from the tampered file");
    assert_eq!(
        l.score(&pod(json!({})), &refs(&nodes(&[Some("1")])), None).unwrap(),
        [1000]
    );
    let host = PluginHost::new(engine(), WasmConfig::default(), 1);
    assert!(host.load_file(&guest::node_price(), "{}").unwrap().cached, "rewritten");
}

/// A scheduler's host serves a big component (here any, with
/// `baselineMinMib: 0`) on baseline code at once, then swaps Cranelift's
/// code into the slot without counting it as a plugin change, and caches
/// only that code: a restart loads it without compiling.
#[test]
fn a_big_component_serves_on_baseline_code_until_cranelifts_replaces_it() {
    let dir = temp_dir("tiers");
    let cache = dir.join("cache");
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(guest::node_price(), plugins.join("node-price.wasm")).unwrap();
    let start = || {
        let mut cfg = WasmConfig::from_value(Some(&json!({"baselineMinMib": 0}))).unwrap();
        cfg.directory = Some(plugins.clone());
        let host = PluginHost::new(WasmEngine::new(Some(cache.clone())).unwrap(), cfg, 7);
        host.set_tiering(Tiering::BaselineFirst);
        host
    };
    let host = start();
    // The slot exists before the scan, as a daemon's profiles make it.
    host.expect(["node-price".to_owned()]);
    let slot = host
        .slot("node-price", r#"{"annotation": "price"}"#.to_owned())
        .unwrap();
    let wakes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let w = wakes.clone();
    host.on_change(Box::new(move || {
        w.fetch_add(1, Ordering::Relaxed);
    }));
    let ns = nodes(&[Some("3"), Some("1")]);
    let scores = |slot: &PluginSlot| {
        slot.current()
            .unwrap()
            .score(&pod(json!({})), &refs(&ns), None)
            .unwrap()
    };
    assert_eq!(host.scan().loaded.len(), 1);
    let first = slot.current().unwrap();
    assert_eq!(first.tier, Tier::Baseline, "serves at once on baseline code");
    assert!(!first.cached);
    // Raw scores: the price, in thousandths (NormalizeScore inverts them).
    assert_eq!(scores(&slot), [3000, 1000]);
    let changes = host.changes();
    assert!(wakes.load(Ordering::Relaxed) >= 1, "a load wakes the scheduler");
    assert_eq!(
        host.changes_by_plugin().get("node-price"),
        Some(&1),
        "a change of that plugin"
    );
    wait_for("Cranelift's code", || slot.current().unwrap().tier == Tier::Optimized);
    assert_eq!(scores(&slot), [3000, 1000], "the same plugin on other code");
    assert_eq!(
        host.changes(),
        changes,
        "not a change of plugin: nothing is retried for it"
    );
    let artifacts = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
        .count();
    assert_eq!(artifacts, 1, "Cranelift's code alone is cached");
    // A restart: the cache has the optimised code, so no baseline code.
    let host = start();
    assert_eq!(host.scan().loaded.len(), 1);
    let slot = host
        .slot("node-price", r#"{"annotation": "price"}"#.to_owned())
        .unwrap();
    let l = slot.current().unwrap();
    assert_eq!((l.tier, l.cached), (Tier::Optimized, true));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A component using a proposal the baseline compiler lacks (tail calls)
/// is compiled by Cranelift, not refused.
#[test]
fn a_component_the_baseline_compiler_cannot_compile_is_compiled_by_cranelift() {
    let tail_calls = guest::hostile_component("tail-call", |t| {
        let at = t.find("    (data (;0;)").unwrap();
        let func = "(func $spin (result i32) return_call $spin)\n";
        format!("{}{func}{}", &t[..at], &t[at..])
    });
    let host = host_for(None, json!({}));
    let refused = host.load_file_with(&tail_calls, "{}", Tier::Baseline).unwrap_err();
    assert!(refused.to_string().contains("tail call"), "{refused}");
    let dir = temp_dir("tail-call-dir");
    std::fs::copy(&tail_calls, dir.join("misbehave.wasm")).unwrap();
    let host = host_for(Some(&dir), json!({"baselineMinMib": 0}));
    host.set_tiering(Tiering::BaselineOnly);
    let report = host.scan();
    assert!(report.rejected.is_empty(), "{report:?}");
    let slot = host.slot("misbehave", r#"{"mode": "ok"}"#.to_owned()).unwrap();
    assert_eq!(slot.current().unwrap().tier, Tier::Optimized);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A cache directory others may write (an emptyDir is 0777) is used
/// through a private subdirectory.
#[cfg(unix)]
#[test]
fn a_shared_cache_directory_gets_a_private_subdirectory() {
    use std::os::unix::fs::PermissionsExt as _;
    let shared = temp_dir("shared");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let host = PluginHost::new(WasmEngine::new(Some(shared.clone())).unwrap(), WasmConfig::default(), 1);
    host.load_file(&guest::node_price(), "{}").unwrap();
    let private = shared.join("private");
    assert_eq!(std::fs::metadata(&private).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(std::fs::read_dir(&private).unwrap().count(), 2);
    assert_eq!(
        std::fs::read_dir(&shared).unwrap().count(),
        1,
        "nothing but the private directory"
    );
    // Someone who may write the shared parent swaps `private` for a
    // directory of their own holding an artifact under the same name (here
    // label-gate's code named as node-price's, with its digest): the
    // running scheduler reads through the directory as it is now, refuses
    // it, and compiles node-price again.
    let planted = shared.join("planted");
    std::fs::create_dir(&planted).unwrap();
    let other = temp_dir("other-cache");
    PluginHost::new(WasmEngine::new(Some(other.clone())).unwrap(), WasmConfig::default(), 1)
        .load_file(&guest::label_gate(), "{}")
        .unwrap();
    let names: Vec<std::ffi::OsString> = std::fs::read_dir(&private)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    let theirs: Vec<PathBuf> = std::fs::read_dir(&other).unwrap().flatten().map(|e| e.path()).collect();
    for name in &names {
        let ext = if name.to_string_lossy().ends_with(".sha256") {
            ".sha256"
        } else {
            ".cwasm"
        };
        let src = theirs.iter().find(|p| p.to_string_lossy().ends_with(ext)).unwrap();
        std::fs::copy(src, planted.join(name)).unwrap();
    }
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::rename(&private, shared.join("old")).unwrap();
    std::fs::rename(&planted, &private).unwrap();
    let l = host.load_file(&guest::node_price(), "{}").unwrap();
    assert!(!l.cached, "compiled again, not loaded from the planted directory");
    assert_eq!(l.name, "node-price");
    // ... nor is what it compiled written there: writes, like reads, go
    // through the directory as opened, refused when it is not private.
    assert!(
        std::fs::read_dir(&private).unwrap().count() == 2,
        "nothing written into the planted directory"
    );

    // A `private` planted as a link to another directory of this user's
    // (where native code must not be written) is not followed: the cache
    // is refused, naming the directory.
    let shared = temp_dir("shared-link");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mine = temp_dir("mine");
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(&mine, shared.join("private")).unwrap();
    let e = WasmEngine::new(Some(shared.clone())).unwrap_err().to_string();
    assert!(e.contains("others may write it"), "{e}");
    assert_eq!(std::fs::read_dir(&mine).unwrap().count(), 0);
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
    let _alone = exclusive();
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

    // What is tested is the swap, not the deadline: a call must not fail
    // because the new version is being compiled beside it on a busy machine.
    let host = host_for(Some(&dir), json!({"defaults": {"timeoutMs": 2000}}));
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
                slot.score_nodes(&state, &p, &refs(&ns), &refs(&rows(&ns)), &mut out)
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
        .score(&pod(json!({})), &refs(&nodes(&[Some("2")])), None)
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
    let (_h, range) = slot("misbehave", &guest::misbehave(), r#"{"mode":"range"}"#, json!({}));
    let mut out = [0; 2];
    let err = range
        .score_nodes(&state, &p, &refs(&ns), &refs(&rows(&ns)), &mut out)
        .unwrap_err();
    assert_eq!(
        err.message(),
        "plugin misbehave: score 1000 for node n0 is outside 0..=100 (implement normalize-score to map raw scores)"
    );
    // Scores packed (contract 0.5) are taken as values, and NormalizeScore
    // gets them packed as Score returned them; packed bytes that are not 8
    // per score are the plugin's error.
    let (_h, packed) = slot("misbehave", &guest::misbehave(), r#"{"mode":"packed"}"#, json!({}));
    packed
        .score_nodes(&state, &p, &refs(&ns), &refs(&rows(&ns)), &mut out)
        .unwrap();
    assert_eq!(out, [50, 50]);
    let loaded = packed.current().expect("loaded");
    assert_eq!(loaded.normalize(&p, &out).unwrap(), [50, 50]);
    let (_h, short) = slot("misbehave", &guest::misbehave(), r#"{"mode":"bad-packed"}"#, json!({}));
    let err = short
        .score_nodes(&state, &p, &refs(&ns), &refs(&rows(&ns)), &mut out)
        .unwrap_err();
    assert_eq!(
        err.message(),
        "plugin misbehave: score returned 15 packed bytes, not 8 per score"
    );
    // A component of another world: valid, but it does not export the plugin interface.
    let other = guest::assemble("other-world", "(component)");
    let host = host_for(None, json!({}));
    match host.load_file(&other, "{}").unwrap_err() {
        LoadError::Invalid(m) => assert!(
            m.contains("does not export wasmsched:plugin/plugin@0.7.0 (or 0.6.0 to 0.1.0, the earlier contracts)"),
            "{m}"
        ),
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

/// Runs `f` and returns how long it took and this process's peak RSS after.
fn timed<R>(f: impl FnOnce() -> R) -> (R, Duration) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed())
}

/// Tests that measure the process's memory or keep tight deadlines run
/// alone (the others may run beside them).
fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ALONE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Resets the process's peak RSS (`/proc/self/clear_refs`) and returns
/// the RSS now, in MiB: what a test's [`peak_rss_mib`] is compared with.
fn rss_now_mib() -> u64 {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    status_mib("VmRSS:")
}

/// The process's peak RSS since the last [`rss_now_mib`], in MiB.
fn peak_rss_mib() -> u64 {
    status_mib("VmHWM:")
}

fn status_mib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .unwrap_or(0)
        >> 10
}

/// Assembles hand-written WebAssembly text.
fn wat(text: &str) -> Vec<u8> {
    std::fs::read(guest::assemble("wat", text)).unwrap()
}

/// A store with the host's limiter, as every plugin instance gets.
fn limited_store(engine: &WasmEngine, cap_mib: usize) -> wasmtime::Store<wasmsched_wasm::limits::Limiter> {
    let budget = Arc::new(wasmsched_wasm::limits::Budget::new(256 << 20));
    let mut store = wasmtime::Store::new(
        engine.engine(),
        wasmsched_wasm::limits::Limiter::new(cap_mib << 20, budget, Arc::default()),
    );
    store.limiter(|l| l);
    store.set_epoch_deadline(10_000);
    store
}

/// A table of 10^8 elements (≈ 800 MB of host memory), at start or by
/// `table.grow` in a call, and twelve 63 MiB memories: refused, and the
/// process does not grow.
#[test]
fn table_bombs_and_many_memories_are_refused_with_bounded_memory() {
    let _alone = exclusive();
    let engine = WasmEngine::new(None).unwrap();
    let before = rss_now_mib();
    let big_table = wat("(module (table 100000000 funcref))");
    let m = wasmtime::Module::new(engine.engine(), &big_table).unwrap();
    let mut store = limited_store(&engine, 64);
    let e = wasmtime::Instance::new(&mut store, &m, &[]).unwrap_err();
    assert!(format!("{e:#}").contains("table elements over the limit"), "{e:#}");
    let grow = wat(r#"(module (table 1 funcref)
             (func (export "bomb") (result i32) (table.grow 0 (ref.null func) (i32.const 100000000))))"#);
    let m = wasmtime::Module::new(engine.engine(), &grow).unwrap();
    let mut store = limited_store(&engine, 64);
    let i = wasmtime::Instance::new(&mut store, &m, &[]).unwrap();
    let bomb = i.get_typed_func::<(), i32>(&mut store, "bomb").unwrap();
    let e = bomb.call(&mut store, ()).unwrap_err();
    assert!(format!("{e:#}").contains("table elements over the limit"), "{e:#}");
    // Several memories in one module: the proposal is off.
    let mems: String = (0..12).map(|_| "(memory 1008)").collect();
    let many = wat(&format!("(module {mems})"));
    let e = wasmtime::Module::new(engine.engine(), &many).unwrap_err();
    assert!(format!("{e:#}").contains("multiple memories"), "{e:#}");
    // Twelve modules of one 63 MiB memory each in one store: the cap is on
    // all memories together.
    let one = wat("(module (memory 1008))");
    let m = wasmtime::Module::new(engine.engine(), &one).unwrap();
    let mut store = limited_store(&engine, 64);
    wasmtime::Instance::new(&mut store, &m, &[]).unwrap();
    let e = wasmtime::Instance::new(&mut store, &m, &[]).unwrap_err();
    assert!(format!("{e:#}").contains("out of memory (limit 64 MiB)"), "{e:#}");
    assert_eq!(store.data().memory_bytes, 63 << 20);
    // The host's budget caps the total across stores.
    let budget = Arc::new(wasmsched_wasm::limits::Budget::new(100 << 20));
    let instances = |share: &Arc<wasmsched_wasm::limits::Share>, n: usize, want: &str| {
        let mut stores = Vec::new();
        for _ in 0..n {
            let mut s = wasmtime::Store::new(
                engine.engine(),
                wasmsched_wasm::limits::Limiter::new(64 << 20, budget.clone(), share.clone()),
            );
            s.limiter(|l| l);
            match wasmtime::Instance::new(&mut s, &m, &[]) {
                Ok(_) => stores.push(s),
                Err(e) => assert!(format!("{e:#}").contains(want), "{e:#}"),
            }
        }
        stores
    };
    let stores = instances(&Arc::default(), 4, "plugin memory budget (100 MiB)");
    assert_eq!(stores.len(), 1);
    assert_eq!(budget.used(), 63 << 20);
    drop(stores);
    assert_eq!(budget.used(), 0, "released with the store");
    // Shared among plugins: one whose instances take all they can stops at
    // its share, and another still gets its own.
    budget.set_limit(200 << 20);
    budget.set_plugins(2);
    let (greedy, other) = (Arc::default(), Arc::default());
    let g = instances(
        &greedy,
        3,
        "share of the host's plugin memory budget is used up (100 MiB: 200 MiB among 2 plugins)",
    );
    assert_eq!((g.len(), greedy.used()), (1, 63 << 20));
    let o = instances(&other, 1, "none");
    assert_eq!((o.len(), other.used(), budget.used()), (1, 63 << 20, 126 << 20));
    drop((g, o));
    assert_eq!((greedy.used(), other.used(), budget.used()), (0, 0, 0));
    let grew = peak_rss_mib().saturating_sub(before);
    assert!(grew < 200, "peak RSS grew {grew} MiB");
}

/// Giant inputs to host functions, floods of host calls and logs, a wrong
/// rejection index: each is an error of the plugin, in bounded time.
#[test]
fn hostile_host_calls_are_bounded_in_time_and_memory() {
    let _alone = exclusive();
    let ns = nodes(&vec![None; 512]);
    let p = pod(json!({}));
    let before = rss_now_mib();
    let call = |mode: &str| {
        // Building a giant input takes the guest a while: those modes get
        // the time to reach the host.
        let timeout = if mode.starts_with("giant") { 2000 } else { 20 };
        let host = host_for(None, json!({"plugins": [{"name": "misbehave", "timeoutMs": timeout}]}));
        let l = host
            .load_file(&guest::misbehave(), &format!(r#"{{"mode": "{mode}"}}"#))
            .unwrap();
        let (r, took) = timed(|| l.filter(&p, &refs(&ns), None));
        (r, took, l)
    };
    let (r, took, l) = call("giant-key");
    let e = r.unwrap_err().to_string();
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert!(
        e.contains("longer than") || e.contains("larger than the host takes"),
        "{e}"
    );
    assert_eq!(l.stats().limits.load(Ordering::Relaxed), 1);
    let (r, took, _) = call("giant-names");
    let e = r.unwrap_err().to_string();
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert!(
        e.contains("image names") || e.contains("larger than the host takes"),
        "{e}"
    );
    let (r, took, l) = call("host-loop");
    assert_eq!(r.unwrap_err(), CallError::Timeout(Duration::from_millis(20)));
    assert!(took < Duration::from_millis(500), "{took:?}");
    assert_eq!(l.stats().timeouts.load(Ordering::Relaxed), 1);
    let (r, took, l) = call("log-flood");
    assert!(took < Duration::from_millis(500), "{took:?}");
    assert!(r.is_err(), "the flood runs past the deadline");
    assert!(l.stats().logs_dropped.load(Ordering::Relaxed) > 1000);
    // A reason goes into events and the pod's condition: it is cut.
    let (r, _, _) = call("long-reason");
    let rs = r.unwrap();
    assert_eq!(rs.len(), 1);
    assert!(
        rs[0].reason.len() <= 256 && rs[0].reason.ends_with(" ..."),
        "{} bytes",
        rs[0].reason.len()
    );
    let (r, _, _) = call("bad-index");
    assert_eq!(
        r.unwrap_err(),
        CallError::Plugin("filter returned a rejection for node index 4294966784 of a batch of 512".into())
    );
    let grew = peak_rss_mib().saturating_sub(before);
    assert!(grew < 200, "peak RSS grew {grew} MiB");
}

/// A plugin whose start is slow and whose every call traps: the start runs
/// off the scheduling path (or within the call's deadline when it must run
/// on it), and after three failures in a row the plugin backs off: its
/// failure policy applies without calling it.
#[test]
fn a_plugin_that_keeps_failing_backs_off() {
    let (_host, slot) = slot(
        "misbehave",
        &guest::misbehave(),
        r#"{"mode": "slow-start"}"#,
        json!({"plugins": [{"name": "misbehave", "timeoutMs": 20}]}),
    );
    let ns = nodes(&[None, None]);
    let p = pod(json!({}));
    let state = CycleState::default();
    let (_, took) = timed(|| {
        for _ in 0..50 {
            let mut out = [0; 2];
            let e = slot
                .score_nodes(&state, &p, &refs(&ns), &refs(&rows(&ns)), &mut out)
                .unwrap_err();
            assert!(e.message().starts_with("plugin misbehave: "), "{}", e.message());
        }
    });
    let stats = slot.stats();
    let called = stats.traps.load(Ordering::Relaxed) + stats.timeouts.load(Ordering::Relaxed);
    assert!(called <= 4, "{called} calls reached the plugin");
    assert!(stats.skipped_backing_off.load(Ordering::Relaxed) >= 46);
    assert!(took < Duration::from_secs(1), "50 attempts took {took:?}");
}

/// Calls made off the record (a decision explained again for the web
/// view) fail as any other, but never start the back-off that live cycles
/// follow: the next live calls reach the plugin.
#[test]
fn calls_off_the_record_never_back_a_plugin_off() {
    let (_host, slot) = slot(
        "misbehave",
        &guest::misbehave(),
        r#"{"mode": "trap"}"#,
        json!({"plugins": [{"name": "misbehave"}]}),
    );
    let ns = nodes(&[None, None]);
    let p = pod(json!({}));
    let state = CycleState::default();
    let call = || {
        let mut out = [0; 2];
        slot.score_nodes(&state, &p, &refs(&ns), &refs(&rows(&ns)), &mut out)
            .unwrap_err()
            .message()
            .to_owned()
    };
    for _ in 0..10 {
        let e = wasmsched_wasm::off_the_record(call);
        assert!(e.contains("trapped"), "{e}");
    }
    assert_eq!(slot.stats().skipped_backing_off.load(Ordering::Relaxed), 0);
    // Live calls: the plugin is reached, then backs off after its three.
    for _ in 0..5 {
        call();
    }
    assert_eq!(
        slot.stats().traps.load(Ordering::Relaxed),
        13,
        "10 off the record, then 3 live"
    );
    assert_eq!(slot.stats().skipped_backing_off.load(Ordering::Relaxed), 2);
}

fn host_dir(dir: &Path, config: serde_json::Value) -> Arc<PluginHost> {
    host_for(Some(dir), config)
}

/// Renaming a plugin's file (or ConfigMap key) keeps the plugin loaded.
#[test]
fn renaming_a_plugin_file_keeps_it_loaded() {
    let dir = temp_dir("rename");
    std::fs::copy(guest::node_price(), dir.join("node-price.wasm")).unwrap();
    let host = host_dir(&dir, json!({}));
    host.scan();
    let slot = host.slot("node-price", "{}".into()).unwrap();
    assert!(slot.current().is_some());
    std::fs::rename(dir.join("node-price.wasm"), dir.join("price-v2.wasm")).unwrap();
    let report = host.scan();
    assert!(report.rejected.is_empty(), "{report:?}");
    assert_eq!(slot.current().unwrap().file, "price-v2.wasm");
    // A file refused for a clash is retried when the clash goes away.
    std::fs::copy(guest::node_price(), dir.join("copy.wasm")).unwrap();
    let report = host.scan();
    assert_eq!(report.rejected.len(), 1, "{report:?}");
    std::fs::remove_file(dir.join("price-v2.wasm")).unwrap();
    host.scan();
    assert_eq!(slot.current().unwrap().file, "copy.wasm");
    // The memory budget is divided among the plugins enabled (with a
    // slot), not files, nor plugins loaded that nothing enables.
    assert_eq!(host.budget().plugins(), 1);
    std::fs::copy(guest::label_gate(), dir.join("label-gate.wasm")).unwrap();
    host.scan();
    assert_eq!(host.budget().plugins(), 1);
    let _gate = host.slot("label-gate", "{}".into()).unwrap();
    assert_eq!(host.budget().plugins(), 2);
    drop(slot);
    std::fs::remove_file(dir.join("copy.wasm")).unwrap();
    host.scan();
    assert_eq!(host.budget().plugins(), 1);
}

/// A plugin the profile enables but that is not loaded: with `fail` every
/// pod is refused naming the plugin; with `ignore` it is skipped.
#[test]
fn a_missing_plugin_refuses_pods_under_fail_and_is_skipped_under_ignore() {
    let dir = temp_dir("missing");
    let ns = nodes(&[None, None]);
    let p = pod(json!({}));
    let snapshot = wasmsched_core::Snapshot::default();
    let fail = host_dir(&dir, json!({"plugins": [{"name": "label-gate"}]}));
    fail.scan();
    let slot = fail.slot("label-gate", "{}".into()).unwrap();
    let mut state = CycleState::default();
    let st = slot.pre_filter(&mut state, &p, &snapshot);
    assert_eq!(st.code(), wasmsched_core::Code::UnschedulableAndUnresolvable);
    let why = format!(
        "plugin label-gate is not loaded: no file in {} provides it",
        dir.display()
    );
    assert_eq!(st.message(), why);
    // Enabled at filter or score alone (no PreFilter or PreScore runs): the
    // filter rejects every node and the score fails, naming why.
    let mut rejected = Vec::new();
    slot.filter_nodes(&state, &p, &refs(&ns), &refs(&rows(&ns)), &mut rejected);
    assert_eq!(rejected.len(), 2);
    assert!(rejected.iter().all(|(_, st)| st.message() == why));
    let mut out = [0; 2];
    let err = slot
        .score_nodes(&state, &p, &refs(&ns), &refs(&rows(&ns)), &mut out)
        .unwrap_err();
    assert_eq!(err.message(), why);
    let ignore = host_dir(
        &dir,
        json!({"plugins": [{"name": "label-gate", "failurePolicy": "ignore"}]}),
    );
    let slot = ignore.slot("label-gate", "{}".into()).unwrap();
    assert!(slot.pre_filter(&mut state, &p, &snapshot).is_skip());
    let mut rejected = Vec::new();
    slot.filter_nodes(&state, &p, &refs(&ns), &refs(&rows(&ns)), &mut rejected);
    assert!(rejected.is_empty());
    assert_eq!(
        slot.score_nodes(&state, &p, &refs(&ns), &refs(&rows(&ns)), &mut [7; 2]),
        Ok(())
    );
    // A file whose configure fails: not loaded, not fatal, and says why.
    std::fs::copy(guest::misbehave(), dir.join("misbehave.wasm")).unwrap();
    let host = host_dir(&dir, json!({}));
    host.scan();
    let slot = host.slot("misbehave", r#"{"mode": "bad-config"}"#.into()).unwrap();
    assert!(slot.current().is_none());
    let st = slot.pre_filter(&mut state, &p, &snapshot);
    assert!(
        st.message().starts_with(
            "plugin misbehave is not loaded: misbehave.wasm was refused: configure failed: mode bad-config"
        ),
        "{}",
        st.message()
    );
}

/// An idle watched directory is not rescanned (the scan's own reads of the
/// directory must not trigger the next scan).
#[test]
fn an_idle_directory_is_not_rescanned() {
    let dir = temp_dir("idle");
    std::fs::copy(guest::node_price(), dir.join("node-price.wasm")).unwrap();
    let host = host_dir(&dir, json!({}));
    host.scan();
    let _w = host
        .watch(Duration::from_millis(50), Duration::from_secs(3600))
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let settled = host.scans();
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(host.scans(), settled, "scans while nothing changed");
    std::fs::copy(guest::label_gate(), dir.join("label-gate.wasm")).unwrap();
    wait_for("the new file's scan", || host.scans() > settled);
}

/// Bytes this thread has read through system calls.
#[cfg(target_os = "linux")]
fn thread_read_bytes() -> u64 {
    let io = std::fs::read_to_string("/proc/thread-self/io").unwrap();
    io.lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// A rescan does not read a file whose device, inode, size and times are
/// what they were; it reads one that was written again.
#[cfg(target_os = "linux")]
#[test]
fn unchanged_files_are_not_read_again() {
    let dir = temp_dir("stamp");
    let mut bytes = std::fs::read(guest::node_price()).unwrap();
    // A custom section of 8 MiB, so that reading the file shows.
    let (name, payload) = (b"padding", vec![0u8; 8 << 20]);
    let mut body = vec![name.len() as u8];
    body.extend_from_slice(name);
    body.extend_from_slice(&payload);
    bytes.push(0);
    let mut n = body.len();
    while n >= 0x80 {
        bytes.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    bytes.push(n as u8);
    bytes.extend_from_slice(&body);
    let file = dir.join("node-price.wasm");
    std::fs::write(&file, &bytes).unwrap();
    let host = host_dir(&dir, json!({}));
    let report = host.scan();
    assert_eq!(report.loaded.len(), 1, "{report:?}");
    let before = thread_read_bytes();
    assert_eq!(host.scan(), Default::default());
    let read = thread_read_bytes() - before;
    assert!(read < 1 << 20, "an unchanged file was read again ({read} bytes)");
    // Written again with the same bytes: read, and found unchanged.
    std::fs::write(&file, &bytes).unwrap();
    let before = thread_read_bytes();
    assert_eq!(host.scan(), Default::default());
    let read = thread_read_bytes() - before;
    assert!(read >= 8 << 20, "a rewritten file was not read ({read} bytes)");
}

/// Only regular files inside the directory are read: a link out of it, a
/// FIFO and a file over the size limit are refused with a message.
#[cfg(unix)]
#[test]
fn links_out_fifos_and_oversized_files_are_refused() {
    let dir = temp_dir("special");
    let outside = temp_dir("outside");
    std::fs::copy(guest::node_price(), outside.join("np.wasm")).unwrap();
    std::os::unix::fs::symlink(outside.join("np.wasm"), dir.join("linked.wasm")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero.wasm")).unwrap();
    let fifo = dir.join("fifo.wasm");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let mut big = std::fs::read(guest::label_gate()).unwrap();
    big.resize(3 << 20, 0);
    std::fs::write(dir.join("big.wasm"), big).unwrap();
    let host = host_dir(&dir, json!({"maxFileMib": 2}));
    let (report, took) = timed(|| host.scan());
    assert!(took < Duration::from_secs(5), "{took:?}");
    let mut rejected = report.rejected.clone();
    rejected.sort();
    let why: Vec<(&str, &str)> = rejected.iter().map(|(f, w)| (f.as_str(), w.as_str())).collect();
    assert_eq!(why[0].0, "big.wasm");
    assert_eq!(
        why[0].1,
        "refused: it is 3.0 MiB, more than wasmPlugins.maxFileMib (2 MiB)"
    );
    assert_eq!(why[1], ("fifo.wasm", "refused: it is not a regular file"));
    assert_eq!(why[2].0, "linked.wasm");
    assert!(why[2].1.contains("outside the plugin directory"), "{}", why[2].1);
    assert_eq!(why[3].0, "zero.wasm");
    assert!(why[3].1.contains("outside the plugin directory"), "{}", why[3].1);
    assert!(report.loaded.is_empty());
}

/// Replaces the first core table (or memory) declaration of the guest
/// module: `(table (;0;) 19 19 funcref)`, `(memory (;0;) 17)`; it ends at
/// its second `)`, the first closing `(;0;)`.
fn first_decl(text: &str, what: &str, new: &str) -> String {
    let start = text.find(&format!("({what} (;0;) ")).unwrap();
    let end = start + text[start..].match_indices(')').nth(1).unwrap().0 + 1;
    format!("{}{new}{}", &text[..start], &text[end..])
}

/// Real components with one hostile change each: a table of 10^8 elements,
/// a first memory past the cap, twelve memories. Each is refused at load
/// with the limit it hit; the process does not grow; the other plugins of
/// the directory load.
#[test]
fn hostile_components_are_refused_at_load_naming_the_limit() {
    let _alone = exclusive();
    let table = guest::hostile_component("table-bomb", |t| {
        first_decl(t, "table", "(table (;0;) 100000000 100000000 funcref)")
    });
    let memory = guest::hostile_component("memory-bomb", |t| first_decl(t, "memory", "(memory (;0;) 1100)"));
    let many = guest::hostile_component("many-memories", |t| {
        let extra: String = (0..11).map(|_| " (memory 1008)").collect();
        first_decl(t, "memory", &format!("(memory (;0;) 17){extra}"))
    });
    let dir = temp_dir("hostile-dir");
    for (f, name) in [
        (&table, "table-bomb"),
        (&memory, "memory-bomb"),
        (&many, "many-memories"),
    ] {
        std::fs::copy(f, dir.join(format!("{name}.wasm"))).unwrap();
    }
    std::fs::copy(guest::node_price(), dir.join("node-price.wasm")).unwrap();
    let before = rss_now_mib();
    let host = host_for(Some(&dir), json!({}));
    let report = host.scan();
    let mut rejected = report.rejected.clone();
    rejected.sort();
    assert_eq!(rejected.len(), 3, "{report:?}");
    assert_eq!(rejected[0].0, "many-memories.wasm");
    assert!(rejected[0].1.contains("multiple memories"), "{}", rejected[0].1);
    assert_eq!(rejected[1].0, "memory-bomb.wasm");
    assert!(
        rejected[1].1.contains("out of memory (limit 64 MiB)"),
        "{}",
        rejected[1].1
    );
    assert_eq!(rejected[2].0, "table-bomb.wasm");
    assert!(
        rejected[2].1.contains("table elements over the limit (1048576)"),
        "{}",
        rejected[2].1
    );
    assert_eq!(report.loaded.len(), 1, "node-price still loads: {report:?}");
    let grew = peak_rss_mib().saturating_sub(before);
    assert!(grew < 200, "peak RSS grew {grew} MiB");
}

/// A file that takes longer to compile than `compileTimeoutSeconds` is
/// refused, and the scan goes on (the other plugins load).
#[test]
fn a_file_that_compiles_too_long_is_refused() {
    let _alone = exclusive();
    // One function of 600 000 additions: a few seconds of Cranelift here
    // (1.1 s for 400 000 in a release build).
    let slow = guest::slow_compiling(600_000);
    let dir = temp_dir("slow-dir");
    std::fs::copy(&slow, dir.join("slow.wasm")).unwrap();
    std::fs::copy(guest::node_price(), dir.join("node-price.wasm")).unwrap();
    let host = host_for(Some(&dir), json!({"compileTimeoutSeconds": 1}));
    let (report, took) = timed(|| host.scan());
    assert_eq!(report.loaded.len(), 1, "{report:?}");
    assert_eq!(
        report.rejected,
        [(
            "slow.wasm".to_owned(),
            "refused: compiling it took longer than wasmPlugins.compileTimeoutSeconds (1s)".to_owned()
        )]
    );
    assert!(took < Duration::from_secs(4), "{took:?}");
    // Another file changing does not compile it again: it would take as
    // long again (only its own change retries it).
    std::fs::copy(guest::label_gate(), dir.join("label-gate.wasm")).unwrap();
    let (report, took) = timed(|| host.scan());
    assert_eq!(report.loaded.len(), 1, "{report:?}");
    assert!(report.rejected.is_empty(), "{report:?}");
    assert!(took < Duration::from_secs(4), "{took:?}");
    // The abandoned compilation finishes on its own thread: wait for it, so
    // it does not starve the tests that run after this one.
    let deadline = Instant::now() + Duration::from_secs(60);
    while host.compiling() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(host.compiling(), 0);
}

/// Components built against contracts 0.1 to 0.6 still load on the host
/// of 0.7, keep their event registrations (0.1: every change), and answer
/// as the same plugin built from today's source (against 0.7), which
/// declares the metric sources it reads (0.3 could not); a 0.4 plugin's
/// scores, raw and normalized, are those of today's build.
#[test]
fn components_built_against_earlier_contracts_keep_loading() {
    let host = host_for(None, json!({}));
    let v0_1 = host.load_file(&guest::label_gate_v0_1(), "{}").unwrap();
    let v0_2 = host.load_file(&guest::label_gate_v0_2(), "{}").unwrap();
    let v0_3 = host.load_file(&guest::v0_3("label-gate"), "{}").unwrap();
    let v0_4 = host.load_file(&guest::v0_4("label-gate"), "{}").unwrap();
    let v0_5 = host.load_file(&guest::v0_5("label-gate"), "{}").unwrap();
    let v0_6 = host.load_file(&guest::v0_6("label-gate"), "{}").unwrap();
    let new = host.load_file(&guest::label_gate(), "{}").unwrap();
    assert_eq!(
        (
            v0_1.contract,
            v0_2.contract,
            v0_3.contract,
            v0_4.contract,
            v0_5.contract,
            v0_6.contract,
            new.contract
        ),
        ("0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7")
    );
    assert_eq!(v0_5.events, new.events, "0.5 registrations carry over");
    assert_eq!(v0_6.events, new.events, "0.6 registrations carry over");
    assert_eq!(v0_6.point_names(), new.point_names());
    assert_eq!(v0_5.metric_sources(), new.metric_sources());
    assert_eq!(v0_1.events, None, "0.1 plugins register for every change");
    assert_eq!(v0_3.events, new.events, "0.3 registrations carry over");
    assert_eq!(v0_4.events, new.events, "0.4 registrations carry over");
    assert_eq!((v0_3.metric_sources(), new.metric_sources()), (None, Some(&[][..])));
    assert_eq!(v0_4.metric_sources(), new.metric_sources());
    let price_v0_4 = host.load_file(&guest::v0_4("node-price"), "{}").unwrap();
    let price_v0_5 = host.load_file(&guest::v0_5("node-price"), "{}").unwrap();
    let price_v0_6 = host.load_file(&guest::v0_6("node-price"), "{}").unwrap();
    let price = host.load_file(&guest::node_price(), "{}").unwrap();
    let priced = nodes(&[Some("0.10"), Some("0.30"), None, Some("0.20")]);
    let anyone = pod(json!({}));
    let scored = |l: &wasmsched_wasm::Loaded| {
        let raw = l.score(&anyone, &refs(&priced), None).unwrap();
        let normalized = l.normalize(&anyone, &raw).unwrap();
        (raw, normalized)
    };
    assert_eq!(scored(&price_v0_4), scored(&price));
    assert_eq!(scored(&price_v0_5), scored(&price));
    assert_eq!(scored(&price_v0_6), scored(&price));
    assert_eq!(scored(&price).1, [100, 0, 0, 50]);
    let args = r#"{"source": "rtt"}"#;
    let fastest_v0_3 = host.load_file(&guest::v0_3("fastest-node"), args).unwrap();
    let fastest = host
        .load_file(&guest::build("examples/fastest-node/rust", None), args)
        .unwrap();
    assert_eq!(fastest_v0_3.metric_sources(), None);
    assert_eq!(fastest.metric_sources(), Some(&["rtt".to_owned()][..]));
    let spread_v0_2 = host
        .load_file(&guest::label_spread_v0_2(), r#"{"topologyKey": "zone"}"#)
        .unwrap();
    let spread = host
        .load_file(&guest::label_spread(), r#"{"topologyKey": "zone"}"#)
        .unwrap();
    assert!(spread.events.is_some());
    assert_eq!(spread_v0_2.events, spread.events, "0.2 registrations carry over");
    assert_eq!(v0_1.point_names(), new.point_names());
    assert_eq!(v0_2.point_names(), new.point_names());
    let ns = nodes(&[None, None, None]);
    let pi = pod(json!({"cluster.type": "raspberry"}));
    let verdicts = |l: &wasmsched_wasm::Loaded| {
        let st = l.pre_filter(&pi).unwrap();
        let rs = l.filter(&pi, &refs(&ns), None).unwrap();
        (
            st.code,
            rs.into_iter().map(|r| (r.index, r.code, r.reason)).collect::<Vec<_>>(),
        )
    };
    assert_eq!(verdicts(&v0_1), verdicts(&new));
    assert_eq!(verdicts(&v0_2), verdicts(&new));
    assert_eq!(verdicts(&v0_3), verdicts(&new));
    assert_eq!(verdicts(&v0_4), verdicts(&new));
}

/// The next pod's cycle fails, rejected by `plugin` alone, with `message`
/// among the reasons.
fn assert_unschedulable(sched: &mut wasmsched_core::scheduler::Scheduler, now: Instant, plugin: &str, message: &str) {
    let a = sched.schedule_one(now, false).expect("a pod to schedule");
    match &a.result {
        Err(wasmsched_core::framework::ScheduleError::Unschedulable(fit)) => {
            assert_eq!(fit.diagnosis.unschedulable_plugins, [plugin]);
            assert!(fit.to_string().contains(message), "{fit}");
        }
        r => panic!("unexpected {r:?}"),
    }
}

/// A scheduler with `config` (YAML) whose plugin directory (tagged `tag`)
/// holds `component`; the plugin host with it.
fn scheduler_with(
    tag: &str,
    component: &Path,
    config: &str,
) -> (wasmsched_core::scheduler::Scheduler, Arc<PluginHost>) {
    use wasmsched_core::scheduler::{Responsibility, Scheduler};
    let dir = temp_dir(tag);
    std::fs::copy(component, dir.join(component.file_name().unwrap())).unwrap();
    let config = wasmsched_core::config::Config::from_yaml(config).unwrap();
    let mut wasm = WasmConfig::from_value(config.wasm_plugins.as_ref()).unwrap();
    wasm.directory = Some(dir);
    let host = PluginHost::new(WasmEngine::new(None).unwrap(), wasm, 1);
    assert!(host.scan().rejected.is_empty());
    let mut registry = wasmsched_core::plugins::Registry::builtin();
    host.register(&mut registry);
    let sched = Scheduler::new(&config, &registry, 1, Responsibility::AllPods).unwrap();
    (sched, host)
}

fn labelled_pod(name: &str, labels: serde_json::Value, node: Option<&str>) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}"), "labels": labels},
        "spec": {"schedulerName": "wasm-scheduler", "nodeName": node,
                 "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}]}
    }))
    .unwrap()
}

/// label-spread counts the cluster's pods (bound and assumed) through the
/// pod views of contract 0.2 and spreads them; a pod it rejected waits for
/// the changes it registered for (a node relabelled), not for any change
/// (a node's taints).
#[test]
fn pod_views_spread_pods_and_declared_events_decide_retries() {
    let (mut sched, _host) = scheduler_with(
        "spread",
        &guest::label_spread(),
        "profiles:\n- schedulerName: wasm-scheduler\n  plugins:\n    multiPoint:\n      enabled: [{name: label-spread}]\n  pluginConfig:\n  - name: label-spread\n    args: {topologyKey: zone}\n",
    );
    let node = |name: &str, labels: serde_json::Value, taints: serde_json::Value| -> Node {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints},
            "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}}))
        .unwrap()
    };
    let t0 = Instant::now();
    sched.on_node(&node("n0", json!({}), json!([])), t0).unwrap();
    sched.on_node(&node("n1", json!({}), json!([])), t0).unwrap();

    // No node has the topology label: unschedulable, for label-spread.
    sched
        .on_pod(&labelled_pod("web-0", json!({"app": "web"}), None), t0)
        .unwrap();
    assert_unschedulable(&mut sched, t0, "label-spread", "2 node(s) didn't have label zone");
    // A taint on n0 is not a change label-spread registered for: the pod
    // stays parked (well past its backoff).
    let t1 = t0 + Duration::from_secs(30);
    let taint = json!([{"key": "k", "value": "v", "effect": "PreferNoSchedule"}]);
    sched.on_node(&node("n0", json!({}), taint.clone()), t1).unwrap();
    assert!(sched.schedule_one(t1 + Duration::from_secs(30), false).is_none());
    // A label is: the pod is retried and placed.
    let t2 = t1 + Duration::from_secs(60);
    sched.on_node(&node("n0", json!({"zone": "a"}), taint), t2).unwrap();
    let a = sched
        .schedule_one(t2 + Duration::from_secs(30), false)
        .expect("retried");
    assert_eq!(a.result.as_ref().unwrap().node, "n0");
    sched.on_node(&node("n1", json!({"zone": "b"}), json!([])), t2).unwrap();

    // Two zones: each next pod goes where its value has fewest pods, so
    // zones never differ by more than maxSkew (1). Pods of another value
    // and another namespace do not count.
    let t3 = t2 + Duration::from_secs(120);
    let mut other = labelled_pod("db-0", json!({"app": "db"}), Some("n1"));
    other.metadata.namespace = Some("other".into());
    sched.on_pod(&other, t3).unwrap();
    let mut zones = std::collections::BTreeMap::from([("n0", 1u32), ("n1", 0)]);
    for i in 1..6 {
        sched
            .on_pod(&labelled_pod(&format!("web-{i}"), json!({"app": "web"}), None), t3)
            .unwrap();
        let a = sched.schedule_one(t3, false).unwrap();
        let node = a.result.as_ref().map(|r| r.node.clone()).unwrap();
        *zones.get_mut(node.as_str()).unwrap() += 1;
        let (a, b) = (zones["n0"], zones["n1"]);
        assert!(a.abs_diff(b) <= 1, "web-{i} on {node}: {zones:?}");
    }
}

/// load-aware reads two live metric sources through contract 0.3: a node
/// whose usage, corrected by the requests placed since the sample, is above
/// the threshold is rejected, and the pod waits; metrics are not a cluster
/// event, yet their refresh retries the pods a plugin that read them
/// rejected (and not those another plugin rejected). An unknown source is
/// an error naming the configured ones.
#[test]
fn metric_refreshes_retry_pods_a_metric_plugin_rejected() {
    use wasmsched_core::metrics::{Placed, Series};
    let (mut sched, host) = scheduler_with(
        "load-aware",
        &guest::build("examples/load-aware/rust", None),
        "profiles:\n- schedulerName: wasm-scheduler\n  plugins:\n    multiPoint:\n      enabled: [{name: load-aware}]\n\
         metrics:\n  sources:\n  - {name: cpu, prometheus: {url: 'http://p', query: q}}\n  - {name: memory, prometheus: {url: 'http://p', query: q}}\n",
    );
    let t0 = Instant::now();
    for n in ["n0", "n1"] {
        let node: Node = serde_json::from_value(json!({"metadata": {"name": n},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}))
        .unwrap();
        sched.on_node(&node, t0).unwrap();
    }
    let now = wasmsched_wasm::unix_ms();
    let series = |values: &[(&str, f64)], since_cpu: i64| -> Vec<Series> {
        values
            .iter()
            .map(|(n, v)| Series {
                node: (*n).into(),
                value: *v,
                at_ms: now,
                since: Placed {
                    pods: 1,
                    milli_cpu: since_cpu,
                    memory: 0,
                },
            })
            .collect()
    };
    // Both nodes are busy once the core placed on each since the sample
    // (a quarter of 4 cores) is counted: 0.9 and 0.6 read 1.15 and 0.85.
    sched.on_metrics("cpu", &series(&[("n0", 0.9), ("n1", 0.6)], 1000), t0);
    sched
        .on_pod(&labelled_pod("web-0", json!({"app": "web"}), None), t0)
        .unwrap();
    assert_unschedulable(
        &mut sched,
        t0,
        "load-aware",
        "2 node(s) had CPU usage above the threshold",
    );
    // Nothing changed: still parked, well past its backoff.
    let t1 = t0 + Duration::from_secs(30);
    assert!(sched.schedule_one(t1, false).is_none());
    // New values: n0 cooled down (0.7 and 0.1 placed since is not above
    // 0.8), n1 did not (0.75 and 0.1). The pod is retried and lands on n0.
    sched.on_metrics("cpu", &series(&[("n0", 0.7), ("n1", 0.75)], 400), t1);
    let a = sched
        .schedule_one(t1 + Duration::from_secs(30), false)
        .expect("retried");
    assert_eq!(a.result.as_ref().unwrap().node, "n0");
    // A source the configuration does not define is an error naming those
    // it does.
    let snapshot = Arc::new(sched.snapshot_now().as_ref().clone());
    let ns: Vec<Arc<NodeInfo>> = snapshot.nodes.clone();
    let refs: Vec<&Arc<NodeInfo>> = ns.iter().collect();
    let other = host
        .load_file(
            &guest::build("examples/load-aware/rust", None),
            r#"{"cpuSource": "gpu"}"#,
        )
        .unwrap();
    let e = other.filter(&pod(json!({})), &refs, Some(&snapshot)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "metrics(gpu): no metric source \"gpu\" is configured (metrics.sources: cpu, memory)"
    );
}

/// A selector Kubernetes would refuse is the plugin's error, naming the
/// field; the plugin's failure policy applies.
#[test]
fn an_invalid_pod_selector_is_an_error_naming_the_field() {
    let host = host_for(None, json!({}));
    let l = host
        .load_file(&guest::misbehave(), r#"{"mode": "bad-selector"}"#)
        .unwrap();
    let ns = nodes(&[None, None]);
    let snapshot = Arc::new(wasmsched_core::Snapshot::default());
    let e = l.filter(&pod(json!({})), &refs(&ns), Some(&snapshot)).unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"selector.match-expressions[0].operator: "Matches" is not one of In, NotIn, Exists, DoesNotExist"#
    );
}

/// A gzip-compressed component (`.wasm.gz`, for plugins above a
/// ConfigMap's 1 MiB) loads as the component it holds; what it decompresses
/// to is held to `maxFileMib` (a small bomb is refused), and a file that is
/// not gzip is refused with the reason.
#[test]
fn gzip_compressed_components_load_within_the_size_limit() {
    use std::io::Write as _;
    let gz = |bytes: &[u8]| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    };
    let dir = temp_dir("gz");
    let component = std::fs::read(guest::node_price()).unwrap();
    std::fs::write(dir.join("node-price.wasm.gz"), gz(&component)).unwrap();
    // 3 MiB of zeros after a valid component: a few KiB compressed.
    let mut bomb = std::fs::read(guest::label_gate()).unwrap();
    bomb.resize(3 << 20, 0);
    let bomb = gz(&bomb);
    assert!(bomb.len() < 64 << 10);
    std::fs::write(dir.join("bomb.wasm.gz"), bomb).unwrap();
    std::fs::write(dir.join("plain.wasm.gz"), &component).unwrap();
    let host = host_dir(&dir, json!({"maxFileMib": 2}));
    let report = host.scan();
    let mut rejected = report.rejected.clone();
    rejected.sort();
    assert_eq!(
        rejected,
        [
            (
                "bomb.wasm.gz".to_owned(),
                "refused: it decompresses to more than wasmPlugins.maxFileMib (2 MiB)".to_owned()
            ),
            (
                "plain.wasm.gz".to_owned(),
                "refused: it is not valid gzip: invalid gzip header".to_owned()
            ),
        ]
    );
    let slot = host.slot("node-price", "{}".into()).unwrap();
    let loaded = slot.current().expect("node-price loaded from its .wasm.gz");
    assert_eq!(loaded.file, "node-price.wasm.gz");
    assert_eq!(loaded.component_bytes, component.len());
    let ns = nodes(&[Some("0.3"), Some("0.1")]);
    assert!(loaded.score(&pod(json!({})), &refs(&ns), None).is_ok());
}

/// Whether `text` is safe in a log line or a pod's condition: no control
/// character, line or paragraph separator or bidirectional override.
fn printable(text: &str) -> bool {
    !text.chars().any(|c| {
        c.is_control()
            || matches!(c, '\u{2028}' | '\u{2029}' | '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    })
}

/// What a plugin says reaches the cluster cut and escaped, and an error is
/// a failure: a 1 MiB error full of newlines, ESC bytes and bidirectional
/// overrides, different on every call, becomes a message of at most the
/// stated bound and counts toward back-off like a trap; a host error deep
/// in a guest whose functions carry 20 KB names (wasmtime's backtrace
/// would name 20 of them) says what failed, not where; 600 nodes rejected
/// with 600 different reasons make a message cut at the stated limit.
#[test]
fn what_a_plugin_says_is_cut_and_escaped() {
    use wasmsched_wasm::text::MAX_ERROR_BYTES;
    let ns = nodes(&[None, None]);
    let p = pod(json!({}));
    let state = CycleState::default();
    let bound = "plugin misbehave: ".len() + MAX_ERROR_BYTES;

    let (_host, big) = slot("misbehave", &guest::misbehave(), r#"{"mode": "big-error"}"#, json!({}));
    for call in 0..5 {
        let mut out = [0; 2];
        let msg = big
            .score_nodes(&state, &p, &refs(&ns), &refs(&rows(&ns)), &mut out)
            .unwrap_err()
            .message();
        assert!(printable(&msg), "{msg}");
        if call < 3 {
            assert!(msg.len() <= bound, "{} bytes", msg.len());
            assert!(msg.starts_with("plugin misbehave: call "), "{msg}");
        } else {
            assert!(msg.contains("not called: backing off"), "{msg}");
        }
    }
    assert_eq!(big.stats().errors.load(Ordering::Relaxed), 3);
    assert_eq!(big.stats().skipped_backing_off.load(Ordering::Relaxed), 2);

    let named = guest::hostile_component("long-names", |t| {
        let mut n = 0;
        let mut out = String::with_capacity(t.len() * 2);
        let mut rest = t;
        while let Some(at) = rest.find("(func (;") {
            out.push_str(&rest[..at]);
            out.push_str(&format!("(func ${}{n} (;", "n".repeat(20_000)));
            rest = &rest[at + "(func (;".len()..];
            n += 1;
        }
        out.push_str(rest);
        out
    });
    let (_host, deep) = slot("misbehave", &named, r#"{"mode": "deep-host-error"}"#, json!({}));
    let st = deep.filter(&state, &p, &ns[0]);
    let msg = st.message();
    assert!(
        msg.len() <= bound,
        "{} bytes: {}",
        msg.len(),
        &msg[..200.min(msg.len())]
    );
    assert!(printable(&msg) && !msg.contains("nnnnnnnnnn"), "{msg}");
    assert!(msg.contains("utf-8"), "{msg}");

    let (mut sched, _host) = scheduler_with(
        "many-reasons",
        &guest::misbehave(),
        "profiles:\n- schedulerName: wasm-scheduler\n  plugins:\n    multiPoint:\n      enabled: [{name: misbehave}]\n  pluginConfig:\n  - name: misbehave\n    args: {mode: many-reasons}\n",
    );
    let t0 = Instant::now();
    for i in 0..600 {
        let n: Node = serde_json::from_value(json!({"metadata": {"name": format!("n{i:03}")},
            "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}}))
        .unwrap();
        sched.on_node(&n, t0).unwrap();
    }
    sched.on_pod(&labelled_pod("web-0", json!({}), None), t0).unwrap();
    let a = sched.schedule_one(t0, false).expect("a pod to schedule");
    let Err(wasmsched_core::framework::ScheduleError::Unschedulable(fit)) = &a.result else {
        panic!("{:?}", a.result);
    };
    let msg = fit.to_string();
    assert!(
        msg.len() <= wasmsched_core::framework::MAX_MESSAGE_BYTES,
        "{} bytes",
        msg.len()
    );
    assert!(msg.starts_with("0/600 nodes are available: "), "{msg}");
    assert!(msg.contains(" is not wanted: xxx"), "{msg}");
    assert!(msg.ends_with(" ..."), "{msg}");
}

/// Real components with core instances added: each instance's context is
/// allocated outside the store's limiter, so they are bounded before the
/// component is compiled. A module of 500 000 globals instantiated 30
/// times (8 MiB of contexts each, 240 MiB together), a small module
/// instantiated 65 times, and 20 instances of 600 KiB each are refused
/// naming the limit, the process does not grow, and the real guests of
/// every SDK pass (their largest: Python's, 38 instances, 422 KB).
#[test]
fn core_instances_are_bounded_before_they_are_made() {
    let _alone = exclusive();
    let with_instances = |tag: &str, globals: usize, instances: usize| {
        guest::hostile_component(tag, |t| {
            let body = t.trim_end().strip_suffix(')').unwrap();
            let mut out = String::with_capacity(body.len() + globals * 28 + 100);
            out.push_str(body);
            out.push_str("(core module $extra");
            for _ in 0..globals {
                out.push_str(" (global i32 (i32.const 0))");
            }
            out.push_str(")\n");
            for _ in 0..instances {
                out.push_str("(core instance (instantiate $extra))\n");
            }
            out.push(')');
            out
        })
    };
    let globals = with_instances("globals", 500_000, 30);
    let many = with_instances("many-instances", 1, 65);
    let wide = with_instances("wide", 38_000, 20);
    let dir = temp_dir("instances-dir");
    for (f, name) in [(&globals, "globals"), (&many, "many"), (&wide, "wide")] {
        std::fs::copy(f, dir.join(format!("{name}.wasm"))).unwrap();
    }
    std::fs::copy(guest::node_price(), dir.join("node-price.wasm")).unwrap();
    let before = rss_now_mib();
    let host = host_for(Some(&dir), json!({}));
    let report = host.scan();
    let mut rejected = report.rejected.clone();
    rejected.sort();
    assert_eq!(rejected.len(), 3, "{report:?}");
    assert_eq!(rejected[0].0, "globals.wasm");
    assert!(
        rejected[0]
            .1
            .contains("one of its core instances takes 7812 KiB of host memory before it runs (limit 1024 KiB)"),
        "{}",
        rejected[0].1
    );
    assert_eq!(rejected[1].0, "many.wasm");
    assert!(
        rejected[1].1.contains("it creates 68 core instances (limit 64)"),
        "{}",
        rejected[1].1
    );
    assert_eq!(rejected[2].0, "wide.wasm");
    assert!(rejected[2].1.contains("its core instances take "), "{}", rejected[2].1);
    assert!(rejected[2].1.contains("(limit 4096 KiB)"), "{}", rejected[2].1);
    assert_eq!(report.loaded.len(), 1, "node-price still loads: {report:?}");
    let grew = peak_rss_mib().saturating_sub(before);
    assert!(grew < 100, "peak RSS grew {grew} MiB");
    // The real guests' shapes, as wasmtime allocates them.
    let s = wasmsched_wasm::shape::shape(&std::fs::read(guest::node_price()).unwrap()).unwrap();
    assert_eq!(s.core_instances, 3, "{s:?}");
    assert!(s.bytes > 1024 && s.bytes < 8192, "{s:?}");
}

/// A directory of gzip bombs (each decompresses to 60 MiB, under the file
/// limit; 15 fit in a 1 MiB ConfigMap) is read one file at a time: the
/// scan holds one decompressed file, not all of them.
#[test]
fn a_directory_of_gzip_bombs_is_read_one_file_at_a_time() {
    use std::io::Write as _;
    let _alone = exclusive();
    let dir = temp_dir("bombs");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&vec![0u8; 60 << 20]).unwrap();
    let gz = gz.finish().unwrap();
    assert!(gz.len() < 100 << 10);
    for i in 0..15 {
        std::fs::write(dir.join(format!("bomb-{i:02}.wasm.gz")), &gz).unwrap();
    }
    let before = rss_now_mib();
    let host = host_for(Some(&dir), json!({}));
    let report = host.scan();
    assert_eq!(report.rejected.len(), 15, "{report:?}");
    assert!(report.rejected[0].1.contains("it is not WebAssembly"), "{report:?}");
    let grew = peak_rss_mib().saturating_sub(before);
    assert!(grew < 300, "peak RSS grew {grew} MiB (all 15 at once: 900)");
    assert!(
        host.scan().rejected.is_empty(),
        "unchanged refused files are not retried"
    );
}

/// A plugin that traps on every third call never fails three times in a
/// row; three failures among its last ten calls make it back off all the
/// same.
#[test]
fn a_plugin_that_fails_every_third_call_backs_off() {
    // A deadline no loaded machine misses: only the traps fail.
    let (_host, slot) = slot(
        "misbehave",
        &guest::misbehave(),
        r#"{"mode": "trap-every-third"}"#,
        json!({"defaults": {"timeoutMs": 5000}}),
    );
    let ns = nodes(&[None, None]);
    let p = pod(json!({}));
    let state = CycleState::default();
    let call = || {
        let mut out = [0; 2];
        let _ = slot.score_nodes(&state, &p, &refs(&ns), &refs(&rows(&ns)), &mut out);
    };
    let stats = slot.stats();
    // Each instance traps on its third call (a spare made beside the
    // scheduling path may serve some calls, so which calls trap varies).
    let mut calls = 0;
    while stats.skipped_backing_off.load(Ordering::Relaxed) == 0 {
        assert!(
            calls < 30,
            "no back-off after {calls} calls and {} traps",
            stats.traps.load(Ordering::Relaxed)
        );
        call();
        calls += 1;
    }
    // The back-off (of a second) began at the third failure among the
    // last ten calls, and the next call is not made either. (Counted, not
    // timed: a loaded machine may take longer than the back-off for many
    // calls.)
    assert_eq!(stats.traps.load(Ordering::Relaxed), 3, "after {calls} calls");
    call();
    assert_eq!(stats.skipped_backing_off.load(Ordering::Relaxed), 2);
    assert_eq!(stats.traps.load(Ordering::Relaxed), 3);
}

/// A pod view over a large cluster is held to the call's deadline: the
/// call fails as timed out (it once counted as a success when the host's
/// work ran past the deadline without entering the guest again).
#[test]
fn a_pod_view_over_a_large_cluster_stops_at_the_deadline() {
    let (mut sched, host) = scheduler_with(
        "big-view",
        &guest::label_spread(),
        "wasmPlugins:\n  plugins:\n  - {name: label-spread, timeoutMs: 1}\nprofiles:\n- schedulerName: wasm-scheduler\n  plugins:\n    multiPoint:\n      enabled: [{name: label-spread}]\n  pluginConfig:\n  - name: label-spread\n    args: {topologyKey: zone}\n",
    );
    let t0 = Instant::now();
    for i in 0..500 {
        let n: Node = serde_json::from_value(
            json!({"metadata": {"name": format!("n{i:03}"), "labels": {"zone": format!("z{}", i % 50)}},
            "status": {"allocatable": {"cpu": "1000", "memory": "1000Gi", "pods": "1000"}}}),
        )
        .unwrap();
        sched.on_node(&n, t0).unwrap();
    }
    for i in 0..100_000 {
        let labels = json!({"app": "web", "i": format!("{}", i % 997)});
        sched
            .on_pod(
                &labelled_pod(&format!("b{i}"), labels, Some(&format!("n{:03}", i % 500))),
                t0,
            )
            .unwrap();
    }
    sched
        .on_pod(&labelled_pod("web-new", json!({"app": "web"}), None), t0)
        .unwrap();
    let a = sched.schedule_one(t0, false).expect("a pod to schedule");
    let msg = match &a.result {
        Err(e) => e.to_string(),
        Ok(r) => panic!("placed on {} within 1 ms", r.node),
    };
    assert!(msg.contains("timed out after 1ms"), "{msg}");
    let _ = host;
}

/// A scan does not hold the host's lock while a plugin starts (its start
/// and `configure` run the guest, up to the load deadline): what `/readyz`,
/// `/metrics` and new slots read stays available meanwhile.
#[test]
fn a_plugin_starting_does_not_block_readers_of_the_host() {
    let dir = temp_dir("slow-start-dir");
    std::fs::copy(guest::misbehave(), dir.join("misbehave.wasm")).unwrap();
    let host = host_for(Some(&dir), json!({"plugins": [{"name": "misbehave"}]}));
    let _slot = host.slot("misbehave", r#"{"mode": "slow-start"}"#.into()).unwrap();
    let scanning = {
        let host = host.clone();
        std::thread::spawn(move || host.scan())
    };
    // configure spins about 2 s; reading the host must not wait for it.
    let mut slowest = Duration::ZERO;
    while !scanning.is_finished() {
        let (_, took) = timed(|| host.slots().len());
        slowest = slowest.max(took);
        std::thread::sleep(Duration::from_millis(5));
    }
    let report = scanning.join().unwrap();
    assert_eq!(report.loaded.len(), 1, "{report:?}");
    assert!(slowest < Duration::from_millis(500), "a reader waited {slowest:?}");
}

/// Spare instances are made on a thread of lower priority (nice 10) than
/// the scheduling workers: a plugin whose instances keep being discarded
/// does not take a core from the cycles.
#[cfg(target_os = "linux")]
#[test]
fn spare_instances_are_made_at_lower_priority() {
    // slow-start spins about 2 s in `configure`: the spare thread is seen.
    let (_host, slot) = slot("misbehave", &guest::misbehave(), r#"{"mode": "slow-start"}"#, json!({}));
    let ns = nodes(&[None]);
    let p = pod(json!({}));
    let mut out = [0; 1];
    // A trap discards the instance; the pool is refilled in the background.
    let _ = slot.score_nodes(&CycleState::default(), &p, &refs(&ns), &refs(&rows(&ns)), &mut out);
    let nice = |stat: &str| -> Option<i64> {
        // Fields after the command's closing parenthesis; nice is the 19th
        // field of the line, the 17th after it.
        stat.rsplit_once(')')?.1.split_whitespace().nth(16)?.parse().ok()
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let spare = std::fs::read_dir("/proc/self/task").unwrap().flatten().find_map(|t| {
            let comm = std::fs::read_to_string(t.path().join("comm")).ok()?;
            comm.starts_with("wasm-spare-")
                .then(|| std::fs::read_to_string(t.path().join("stat")).ok())?
        });
        if let Some(stat) = spare {
            assert_eq!(nice(&stat), Some(10), "{stat}");
            return;
        }
        assert!(Instant::now() < deadline, "no spare thread seen");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A cluster of `n` nodes in 50 zones, with `pods` pods of distinct labels
/// (each its own shape, as StatefulSet pods are), as one snapshot.
fn big_snapshot(n: usize, pods: usize) -> (Arc<wasmsched_core::Snapshot>, Vec<Arc<NodeInfo>>) {
    let mut cache = Cache::new();
    for i in 0..n {
        let node: Node = serde_json::from_value(
            json!({"metadata": {"name": format!("n{i:05}"), "labels": {"zone": format!("z{}", i % 50)}},
            "status": {"allocatable": {"cpu": "1000", "memory": "1000Gi", "pods": "1000"}}}),
        )
        .unwrap();
        cache.upsert_node(NodeData::from_node(&node).unwrap());
    }
    for i in 0..pods {
        let p: Pod = serde_json::from_value(json!({
            "metadata": {"name": format!("sts-{i}"), "namespace": "default", "uid": format!("u-{i}"),
                "labels": {"app": "db", "statefulset.kubernetes.io/pod-name": format!("sts-{i}")}},
            "spec": {"nodeName": format!("n{:05}", i % n), "containers": [{"name": "c", "image": "db"}]}
        }))
        .unwrap();
        cache.upsert_pod(Arc::new(PodInfo::from_pod(&p).unwrap()));
    }
    let snapshot = Arc::new(cache.snapshot());
    let batch = snapshot.nodes[..MAX_BATCH_NODES].to_vec();
    (snapshot, batch)
}

const MAX_BATCH_NODES: usize = 512;

/// Pod views cost the host bounded memory and time: of the topology keys a
/// plugin names (200 new ones a call), the snapshot keeps the first 8 (it
/// kept a table over every node per key until the nodes changed); the rest
/// are counted for their call alone; and a selector of 64 requirements over 12 000 shapes is
/// stopped at the call's deadline, not after matching every shape.
#[test]
fn pod_views_keep_no_table_per_key_and_stop_at_the_deadline() {
    let _alone = exclusive();
    let (snapshot, batch) = big_snapshot(2000, 12_000);
    let p = pod(json!({}));
    let load = |mode: &str, timeout: u64| {
        let host = host_for(None, json!({"plugins": [{"name": "misbehave", "timeoutMs": timeout}]}));
        let l = host
            .load_file(&guest::misbehave(), &format!(r#"{{"mode": "{mode}"}}"#))
            .unwrap();
        (host, l)
    };
    let before = rss_now_mib();
    let (_host, keys) = load("domain-keys", 10_000);
    for call in 0..20 {
        let r = keys.filter(&p, &refs(&batch), Some(&snapshot));
        assert!(r.is_ok(), "call {call}: {r:?}");
    }
    assert_eq!(
        snapshot.cached_topology_keys(),
        wasmsched_core::cache::MAX_PLUGIN_TOPOLOGY_KEYS,
        "4000 keys named, the first 8 kept"
    );
    let grew = rss_now_mib().saturating_sub(before);
    assert!(grew < 64, "RSS grew {grew} MiB over 4000 keys of 2000 nodes");

    let (_host, wide) = load("wide-selector", 10);
    for _ in 0..3 {
        let (r, took) = timed(|| wide.filter(&p, &refs(&batch), Some(&snapshot)));
        match r {
            Err(CallError::Timeout(_)) | Ok(_) => {}
            Err(CallError::BackingOff { .. }) => break,
            Err(e) => panic!("{e}"),
        }
        assert!(
            took < Duration::from_millis(60),
            "a call took {took:?} against a 10 ms deadline"
        );
    }
}

/// A Filter call that returns more rejections than its batch has nodes,
/// or names one node twice, is an error of the plugin before anything is
/// made of its rejections, and counts toward its back-off.
#[test]
fn a_flood_of_rejections_is_an_error_that_backs_off() {
    let (_host, l) = {
        // Making 32 768 rejections takes the guest a while.
        let host = host_for(None, json!({"plugins": [{"name": "misbehave", "timeoutMs": 2000}]}));
        let l = host
            .load_file(&guest::misbehave(), r#"{"mode": "many-rejections"}"#)
            .unwrap();
        (host, l)
    };
    let ns = nodes(&vec![None; 512]);
    let p = pod(json!({}));
    for call in 0..5 {
        let (r, took) = timed(|| l.filter(&p, &refs(&ns), None));
        let e = r.unwrap_err().to_string();
        if call < 3 {
            assert_eq!(
                e,
                "filter returned 32768 rejections for a batch of 512 nodes (at most one per node)"
            );
        } else {
            assert!(e.contains("not called: backing off"), "{e}");
        }
        assert!(took < Duration::from_secs(2), "{took:?}");
    }
    assert_eq!(l.stats().errors.load(Ordering::Relaxed), 3);
}

/// An instance that ends every call past 3/4 of its memory cap is retired
/// after each, and each retirement counts toward the back-off: the spare
/// thread does not rebuild instances after every call.
#[test]
fn instances_retired_after_every_call_back_off() {
    let host = host_for(
        None,
        json!({"plugins": [{"name": "misbehave", "memoryMib": 16, "timeoutMs": 1000}]}),
    );
    let l = host.load_file(&guest::misbehave(), r#"{"mode": "fill"}"#).unwrap();
    let ns = nodes(&[None, None]);
    let p = pod(json!({}));
    let mut answers = Vec::new();
    for _ in 0..6 {
        answers.push(l.score(&p, &refs(&ns), None).map_err(|e| e.to_string()));
        // The spare thread refills between calls, as between cycles.
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(answers[..3].iter().all(|a| a == &Ok(vec![50, 50])), "{answers:?}");
    let last = answers[3].as_ref().unwrap_err();
    assert!(
        last.contains("not called: backing off") && last.contains("was retired"),
        "{last}"
    );
    let retired = l.stats().retired.load(Ordering::Relaxed);
    assert_eq!(retired, 3, "instances made and retired");
}

/// A plugin's name and version reach logs, metrics and what `plugin
/// check` prints: one that is not a name a profile can hold (escape
/// sequences, 60 KB) is refused, and the message shows it escaped and cut.
#[test]
fn a_plugin_name_or_version_that_is_not_one_is_refused() {
    let host = host_for(None, json!({}));
    let evil = guest::build_with(
        "testdata/misbehave",
        None,
        &[("MISBEHAVE_NAME", "evil\u{1b}[31m\nINFO forged")],
    );
    let e = host.load_file(&evil, "{}").unwrap_err().to_string();
    assert!(e.contains(r#"metadata().name "evil\u{1b}[31m\nINFO forged""#), "{e}");
    assert!(e.contains("is not a plugin name: 1 to 63 letters"), "{e}");
    let long = "9".repeat(60_000);
    let big = guest::build_with("testdata/misbehave", None, &[("MISBEHAVE_VERSION", &long)]);
    let e = host.load_file(&big, "{}").unwrap_err().to_string();
    assert!(e.len() < 400, "{} bytes", e.len());
    assert!(e.contains("(60000 bytes) is not a version"), "{e}");
}

/// A directory is read up to its limits, in name order, one file at a
/// time: 200 gzip bombs (60 MiB of zeros each in 60 KB) are refused, the
/// first ones read and found not to be WebAssembly, those past 1 GiB read
/// (16 times `maxFileMib`) and those past 128 files refused unread, each
/// naming the limit; the host's memory does not grow with them.
#[test]
fn a_directory_is_read_up_to_its_file_and_byte_limits() {
    use std::io::Write as _;
    let _alone = exclusive();
    let dir = temp_dir("many-bombs");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&vec![0u8; 60 << 20]).unwrap();
    let gz = gz.finish().unwrap();
    for i in 0..200 {
        std::fs::write(dir.join(format!("bomb-{i:03}.wasm.gz")), &gz).unwrap();
    }
    let before = rss_now_mib();
    let host = host_for(Some(&dir), json!({}));
    let report = host.scan();
    assert_eq!(report.rejected.len(), 200, "{report:?}");
    let why = |i: usize| {
        let file = format!("bomb-{i:03}.wasm.gz");
        report.rejected.iter().find(|(f, _)| *f == file).unwrap().1.clone()
    };
    // 18 files reach 1 GiB (60 MiB each); the 19th finds it reached.
    for i in 0..18 {
        assert!(why(i).contains("it is not WebAssembly"), "{i}: {}", why(i));
    }
    assert!(
        why(18).contains("already hold 1080 MiB, as much as the host reads from a directory (1024 MiB"),
        "{}",
        why(18)
    );
    assert!(
        why(128).contains("the directory holds 200 plugin files, more than the host reads (128)"),
        "{}",
        why(128)
    );
    let grew = peak_rss_mib().saturating_sub(before);
    assert!(grew < 300, "peak RSS grew {grew} MiB");
}

/// The memory budget is shared among the plugins profiles enable: sixty
/// components no profile enables, beside the one that serves, leave it the
/// whole budget (it had 1/61 of it).
#[test]
fn unused_components_take_no_share_of_the_budget() {
    let dir = temp_dir("unused");
    let bytes = std::fs::read(guest::misbehave()).unwrap();
    std::fs::write(dir.join("misbehave.wasm"), &bytes).unwrap();
    let name = b"misbehave";
    for i in 0..60 {
        // The same component under another name of the same length.
        let other = format!("misbeh{i:03}");
        let mut b = bytes.clone();
        let mut at = 0;
        while let Some(p) = b[at..].windows(name.len()).position(|w| w == name) {
            b[at + p..at + p + name.len()].copy_from_slice(other.as_bytes());
            at += p + name.len();
        }
        std::fs::write(dir.join(format!("{other}.wasm")), &b).unwrap();
    }
    let host = host_for(Some(&dir), json!({}));
    host.budget().set_limit(610 << 20);
    let report = host.scan();
    assert_eq!(report.loaded.len(), 61, "{:?}", report.rejected);
    let slot = host.slot("misbehave", r#"{"mode": "ok"}"#.into()).unwrap();
    assert!(slot.current().is_some());
    assert_eq!(host.budget().plugins(), 1, "one plugin enabled");
    assert_eq!(host.budget().share_limit(), 610 << 20);
}

/// Slots live as long as their users: a shadow rebuilt a hundred times
/// (each time asking for new slots and dropping the old ones) leaves none
/// behind, nor their instances.
#[test]
fn slots_dropped_are_released() {
    let dir = temp_dir("released");
    std::fs::copy(guest::misbehave(), dir.join("misbehave.wasm")).unwrap();
    let host = host_for(Some(&dir), json!({}));
    host.scan();
    let kept = host.slot("misbehave", r#"{"mode": "ok"}"#.into()).unwrap();
    for _ in 0..100 {
        let s = host.slot("misbehave", r#"{"mode": "ok"}"#.into()).unwrap();
        drop(s);
    }
    assert_eq!(host.slots().len(), 1);
    assert!(Arc::ptr_eq(&host.slots()[0], &kept));
    assert_eq!(host.budget().plugins(), 1);
}

/// A slot's instance is made outside the host's lock: while one starts
/// (its `configure` spins about 2 s), readers of the host do not wait.
#[test]
fn a_slot_starting_does_not_block_readers_of_the_host() {
    let dir = temp_dir("slow-slot");
    std::fs::copy(guest::misbehave(), dir.join("misbehave.wasm")).unwrap();
    let host = host_for(Some(&dir), json!({"plugins": [{"name": "misbehave"}]}));
    host.scan();
    let making = {
        let host = host.clone();
        std::thread::spawn(move || host.slot("misbehave", r#"{"mode": "slow-start"}"#.into()))
    };
    let mut slowest = Duration::ZERO;
    while !making.is_finished() {
        let (_, took) = timed(|| host.slots().len());
        slowest = slowest.max(took);
        std::thread::sleep(Duration::from_millis(5));
    }
    let slot = making.join().unwrap().unwrap();
    assert!(slot.current().is_some());
    assert!(slowest < Duration::from_millis(500), "a reader waited {slowest:?}");
}

/// A hostile plugin at the points of contract 0.7 is bounded: a Permit
/// that would wait 49 days holds its pod 15 minutes at most; `allow` and
/// `reject` of pods another plugin holds change nothing; a Reserve that
/// fills the plugin's store is refused past a quarter of its memory cap,
/// with the host's reason.
#[test]
fn a_hostile_plugin_at_reserve_and_permit_is_bounded() {
    use wasmsched_core::framework::{MAX_PERMIT_WAIT, Permit, WaitingPods};
    let hostile = guest::build_with("testdata/misbehave", None, &[("MISBEHAVE_BINDING", "1")]);
    let mut cache = Cache::new();
    let node: Node = serde_json::from_value(json!({"metadata": {"name": "n0"},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}))
    .unwrap();
    cache.upsert_node(NodeData::from_node(&node).unwrap());
    let snapshot = Arc::new(cache.snapshot());
    let waiting = Arc::new(WaitingPods::default());
    let state = || {
        let mut st = CycleState::default();
        st.set_snapshot(snapshot.clone());
        st.set_waiting(waiting.clone());
        st
    };
    let p = pod(json!({}));

    let (_h, forever) = slot("misbehave", &hostile, r#"{"mode": "wait-forever"}"#, json!({}));
    let Permit::Wait(d) = forever.permit(&mut state(), &p, "n0") else {
        panic!("no wait")
    };
    assert_eq!(d, Duration::from_millis(u64::from(u32::MAX)));
    let now = Instant::now();
    waiting.add(Arc::new(p.clone()), "n0", &[("misbehave".into(), d)], now);
    assert_eq!(waiting.deadline(&p.uid), Some(now + MAX_PERMIT_WAIT));
    waiting.remove(&p.uid);

    // Another plugin holds a pod: the hostile one can neither release nor
    // reject it.
    let held = pod(json!({"held": "yes"}));
    let other = PodInfo {
        uid: "u-held".into(),
        ..held
    };
    waiting.add(
        Arc::new(other),
        "n0",
        &[("coscheduling".into(), Duration::from_secs(60))],
        now,
    );
    let (_h, meddler) = slot("misbehave", &hostile, r#"{"mode": "allow-others"}"#, json!({}));
    assert!(matches!(meddler.permit(&mut state(), &p, "n0"), Permit::Wait(_)));
    assert_eq!(waiting.len(), 1);
    assert!(
        waiting.outcome("u-held", || {}).is_none(),
        "still held, by its own plugin"
    );

    // (Time enough to write 16 MiB through the host in a test build.)
    let (_h, filler) = slot(
        "misbehave",
        &hostile,
        r#"{"mode": "fill-state"}"#,
        json!({"plugins": [{"name": "misbehave", "timeoutMs": 10000}]}),
    );
    let st = filler.reserve(&mut state(), &p, "n0");
    assert!(!st.is_success());
    assert!(
        st.message()
            .contains("over its limit of 16777216 (a quarter of the plugin's memory cap)"),
        "{}",
        st.message()
    );
    assert!(filler.store().bytes() <= 16 << 20);
}

/// A plugin's store is one for all its slots (a slot per profile): what a
/// profile's Reserve counts, another profile's sees.
#[test]
fn a_plugins_store_is_shared_by_its_slots() {
    let hostile = guest::build_with("testdata/misbehave", None, &[("MISBEHAVE_BINDING", "1")]);
    let (host, a) = slot("misbehave", &hostile, "{}", json!({}));
    let b = host.slot("misbehave", r#"{"mode": "ok"}"#.to_owned()).unwrap();
    a.store().set("used/team", 7i64.to_le_bytes().to_vec()).unwrap();
    assert_eq!(b.store().add("used/team", 1), Ok(8));
    assert!(Arc::ptr_eq(a.store(), b.store()));
}
