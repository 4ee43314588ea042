//! `wasmsched bench --json` prints one JSON object on its last line with the
//! documented fields (a small run: figures are measured by the benchmark
//! itself, never asserted here).

mod guest;

use std::process::Command;

/// What `wasmsched ARGS` (a bench with `--json`), which must succeed,
/// printed: all of it, and its last line's JSON.
fn bench_json<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> (String, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let v = serde_json::from_str(text.lines().last().unwrap()).unwrap_or_else(|e| panic!("{e}: {text}"));
    (text, v)
}

#[test]
fn json_summary_on_last_line() {
    let out = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .args(["bench", "--nodes", "300", "--pods", "500", "--json", "--web"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let last = text.lines().last().unwrap();
    let v: serde_json::Value = serde_json::from_str(last).unwrap();
    for key in [
        "nodes",
        "pods",
        "scheduled",
        "unschedulable",
        "pods_per_sec",
        "p50_ms",
        "p99_ms",
        "peak_rss_mb",
    ] {
        assert!(v.get(key).is_some(), "missing {key} in {last}");
    }
    assert_eq!(v["nodes"], 300);
    assert_eq!(
        v["scheduled"].as_u64().unwrap() + v["unschedulable"].as_u64().unwrap(),
        500
    );
    assert!(v["pods_per_sec"].as_f64().unwrap() > 0.0);
    // With the web view open: the last 200 attempts listed, the first
    // (and one every 100 ms after it) kept to explain.
    assert_eq!(v["web"]["listed"], 200, "{last}");
    assert!(v["web"]["kept"].as_u64().unwrap() >= 1, "{last}");
}

/// `bench --extender` asks the extender (fed by the API server double) as
/// kube-scheduler would, in both modes, and reports each verb.
#[test]
fn extender_bench_reports_both_modes() {
    let dir = guest::prebuilt_dir("bench-extender", &["node-price"]);
    let dir = dir.to_str().unwrap();
    let (_, v) = bench_json(&[
        "bench",
        "--extender",
        "--nodes",
        "300",
        "--pods",
        "20",
        "--json",
        "--wasm",
        dir,
    ]);
    // kube-scheduler sends 50% - 300/125 % = 48% of 300 nodes.
    assert_eq!(v["nodes_per_request"], 144);
    for mode in ["names", "nodes"] {
        for verb in ["filter", "prioritize"] {
            let m = &v["modes"][mode][verb];
            assert_eq!(m["requests"], 20, "{mode} {verb}: {v}");
            assert!(m["p99_ms"].as_f64().unwrap() >= m["p50_ms"].as_f64().unwrap());
        }
    }
    let out = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .args(["bench", "--extender"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--wasm DIR"));
}

/// `bench --workload preemption` (scheduler_perf's PreemptionBasic): every
/// measured pod preempts and is then bound; the count is reported.
#[test]
fn the_preemption_workload_preempts_for_every_pod() {
    let (text, v) = bench_json(&[
        "bench",
        "--workload",
        "preemption",
        "--nodes",
        "50",
        "--init-pods",
        "200",
        "--pods",
        "50",
        "--json",
    ]);
    assert_eq!(v["scheduled"], 50, "{text}");
    assert_eq!(v["preemptions"], 50, "{text}");
    assert!(text.contains("50 preemptions"), "{text}");
}

/// `bench --e2e` runs the daemon against the API server double and counts
/// every pod bound and every `Scheduled` event; `--null` does the same
/// with no scheduling cycle (the API server's limit for this client).
#[test]
fn end_to_end_bench_with_and_without_scheduling() {
    for null in [false, true] {
        let mut args = vec!["bench", "--e2e", "--nodes", "20", "--pods", "200", "--json"];
        if null {
            args.push("--null");
        } else {
            args.push("--web");
        }
        let (text, v) = bench_json(&args);
        if !null {
            // Each view of the page open during the run, loaded once at the end.
            let views = v["web"].as_array().unwrap_or_else(|| panic!("{text}"));
            assert_eq!(views.len(), 4, "{text}");
            assert!(views.iter().all(|w| w["bytes"].as_u64() > Some(1000)), "{text}");
        }
        assert_eq!(v["mode"], if null { "e2e-null" } else { "e2e" }, "{text}");
        assert!(v["daemon_cpu_ms_per_pod"].as_f64().unwrap() > 0.0, "{text}");
        assert_eq!(
            (v["bound"].as_u64(), v["events_after_stop"].as_u64()),
            (Some(200), Some(200)),
            "{text}"
        );
    }
}

/// `bench --startup`: the daemon reaches a full cache and binds the pending
/// pod, the extender reaches a full cache, each measured.
#[test]
fn startup_bench_reports_the_daemon_and_the_extender() {
    let (text, v) = bench_json(&["bench", "--startup", "--nodes", "50", "--pods", "500", "--json"]);
    assert_eq!(v["mode"], "startup", "{text}");
    let ready = v["daemon"]["ready_ms"].as_f64().unwrap();
    let bound = v["daemon"]["first_binding_ms"].as_f64().unwrap();
    assert!(ready > 0.0 && bound > 0.0, "{text}");
    assert!(v["extender"]["ready_ms"].as_f64().unwrap() > 0.0, "{text}");
    assert!(v["daemon"]["peak_rss_mb"].as_f64().unwrap() > 0.0, "{text}");
}

/// `bench --shadow`: every cycle is handed to the shadow at 100 %, and a
/// shadow that decides like serving on these nodes (2.0.0 rejects a zone
/// the synthetic cluster does not have) agrees on every one it compared.
/// On a loaded machine a shadow call may pass its time limit (10 ms, a
/// debug build): that cycle counts as the shadow's error, named in the
/// report, never as another decision.
#[test]
fn a_shadow_beside_the_bench_sees_every_sampled_cycle() {
    let dir = |tag: &str, file: std::path::PathBuf| {
        let d = std::env::temp_dir().join(format!("wasmsched-bench-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::copy(file, d.join("zone-gate.wasm")).unwrap();
        d
    };
    let serving = dir("serving", guest::zone_gate(None));
    let shadow = dir("shadow", guest::zone_gate(Some("eu-west-1a")));
    let (text, v) = bench_json(&[
        "bench".as_ref(),
        "--nodes".as_ref(),
        "200".as_ref(),
        "--pods".as_ref(),
        "300".as_ref(),
        "--json".as_ref(),
        "--wasm".as_ref(),
        serving.as_os_str(),
        "--shadow".as_ref(),
        shadow.as_os_str(),
        "--shadow-percent".as_ref(),
        "100".as_ref(),
    ]);
    let sh = &v["shadow"];
    assert_eq!(sh["sampled"], 300, "{text}");
    assert!(sh["compared"].as_u64().unwrap() > 0, "{text}");
    assert_eq!(
        sh["compared"].as_u64().unwrap() + sh["dropped"].as_u64().unwrap(),
        300,
        "{text}"
    );
    let results = &sh["results"];
    let count = |k: &str| results[k].as_u64().unwrap_or_else(|| panic!("no {k} in {text}"));
    assert_eq!(
        count("same_node") + count("shadow_error"),
        sh["compared"].as_u64().unwrap(),
        "only agreement, or a shadow call past its time limit: {text}"
    );
    assert!(count("same_node") > 0, "{text}");
    for d in sh["disagreements"].as_array().unwrap() {
        assert_eq!(d["result"], "shadow_error", "{text}");
        assert!(
            d["shadow"]["error"].as_str().unwrap().contains("timed out after 10ms"),
            "{text}"
        );
    }
    if count("shadow_error") == 0 {
        assert_eq!(sh["agreement"], 1.0, "{text}");
    }
    for d in [serving, shadow] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// The gangs workload with the coscheduling plugin: every pod is held at
/// Permit until its gang is whole, then bound, and counted once.
#[test]
fn gangs_held_at_permit_are_all_bound_and_counted_once() {
    let dir = guest::prebuilt_dir("bench-gangs", &["coscheduling"]);
    let (_, v) = bench_json(&[
        "bench",
        "--nodes",
        "50",
        "--init-pods",
        "0",
        "--pods",
        "80",
        "--workload",
        "gangs",
        "--json",
        "--wasm",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(
        (v["scheduled"].as_u64(), v["unschedulable"].as_u64()),
        (Some(80), Some(0)),
        "{v}"
    );
}

/// `bench --workload podgroups`: gangs of 8 stated as PodGroups are all
/// bound by the built-in GangScheduling, each pod counted once.
#[test]
fn podgroups_are_bound_whole_by_the_builtin_gang_scheduling() {
    let (_, v) = bench_json(&[
        "bench",
        "--nodes",
        "50",
        "--pods",
        "80",
        "--workload",
        "podgroups",
        "--json",
    ]);
    assert_eq!(
        (v["scheduled"].as_u64(), v["unschedulable"].as_u64()),
        (Some(80), Some(0)),
        "{v}"
    );
}

/// `--e2e` creates the plain workload's pods: another workload is refused
/// by name, not run as the plain one.
#[test]
fn e2e_refuses_a_workload_it_does_not_create() {
    let out = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .args([
            "bench",
            "--e2e",
            "--workload",
            "podgroups",
            "--nodes",
            "2",
            "--pods",
            "2",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--workload podgroups"), "{err}");
}
