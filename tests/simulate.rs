//! End-to-end tests of `wasmsched simulate`: the real binary on the bundled
//! example cluster and on fixtures, with placements checked against the
//! cluster by rules written here independently of the engine's plugins.

mod guest;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{Value, json};

fn wasmsched(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .args(args)
        .output()
        .expect("run wasmsched")
}

fn stdout_json(args: &[&str]) -> Value {
    let out = wasmsched(args);
    assert!(
        out.status.success(),
        "wasmsched {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

/// [`stdout_json`] run from the repository's root (for the paths of
/// `plugins/testdata`).
fn repo_json(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .current_dir(env!("CARGO_MANIFEST_DIR").to_owned() + "/../..")
        .args(args)
        .output()
        .expect("run wasmsched");
    assert!(
        out.status.success(),
        "wasmsched {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

fn data(name: &str) -> String {
    format!("{}/../../tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// `cpu` in millicores, others in base units (a small, independent parser
/// for the suffixes the example cluster uses).
fn qty(s: &str, milli: bool) -> i64 {
    let (num, mult): (&str, f64) = match s {
        _ if s.ends_with("Gi") => (&s[..s.len() - 2], (1u64 << 30) as f64),
        _ if s.ends_with("Mi") => (&s[..s.len() - 2], (1u64 << 20) as f64),
        _ if s.ends_with("Ki") => (&s[..s.len() - 2], 1024.0),
        _ if s.ends_with('m') => (&s[..s.len() - 1], 0.001),
        _ => (s, 1.0),
    };
    let v: f64 = num.parse::<f64>().unwrap_or_else(|_| panic!("quantity {s}")) * mult;
    (if milli { v * 1000.0 } else { v }).ceil() as i64
}

fn requests(pod: &Value) -> HashMap<String, i64> {
    let mut app: HashMap<String, i64> = HashMap::new();
    let sum = |containers: &Value| {
        let mut out: HashMap<String, i64> = HashMap::new();
        for c in containers.as_array().into_iter().flatten() {
            for (k, v) in c
                .pointer("/resources/requests")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                *out.entry(k.clone()).or_default() += qty(v.as_str().unwrap(), k == "cpu");
            }
        }
        out
    };
    for (k, v) in sum(&pod["spec"]["containers"]) {
        app.insert(k, v);
    }
    // Init containers run one at a time: each must fit on its own.
    for c in pod["spec"]["initContainers"].as_array().into_iter().flatten() {
        for (k, v) in sum(&Value::Array(vec![c.clone()])) {
            let e = app.entry(k).or_default();
            *e = (*e).max(v);
        }
    }
    app
}

fn tolerates(pod: &Value, key: &str, value: &str, effect: &str) -> bool {
    pod["spec"]["tolerations"].as_array().into_iter().flatten().any(|t| {
        let k = t["key"].as_str().unwrap_or("");
        let op = t["operator"].as_str().unwrap_or("Equal");
        let e = t["effect"].as_str().unwrap_or("");
        (e.is_empty() || e == effect)
            && (k.is_empty() || k == key)
            && (op == "Exists" || t["value"].as_str().unwrap_or("") == value)
    })
}

/// Every placement respects resources, taints, cordons, node selectors,
/// required zone affinity and host ports.
fn check_placements(cluster: &Value, placements: &[Value]) {
    let items = cluster["items"].as_array().unwrap();
    let nodes: HashMap<&str, &Value> = items
        .iter()
        .filter(|o| o["kind"] == "Node")
        .map(|n| (n["metadata"]["name"].as_str().unwrap(), n))
        .collect();
    let pods: HashMap<String, &Value> = items
        .iter()
        .filter(|o| o["kind"] == "Pod")
        .map(|p| {
            (
                format!(
                    "{}/{}",
                    p["metadata"]["namespace"].as_str().unwrap(),
                    p["metadata"]["name"].as_str().unwrap()
                ),
                p,
            )
        })
        .collect();
    let mut used: HashMap<&str, HashMap<String, i64>> = HashMap::new();
    let mut ports: HashMap<&str, Vec<i64>> = HashMap::new();
    let mut account = |node: &'static str, pod: &Value, used: &mut HashMap<&str, HashMap<String, i64>>| {
        for (k, v) in requests(pod) {
            *used.entry(node).or_default().entry(k).or_default() += v;
        }
        for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
            for p in c["ports"].as_array().into_iter().flatten() {
                if let Some(hp) = p["hostPort"].as_i64() {
                    let list = ports.entry(node).or_default();
                    assert!(!list.contains(&hp), "host port {hp} used twice on {node}");
                    list.push(hp);
                }
            }
        }
    };
    let leak = |s: &str| -> &'static str { Box::leak(s.to_owned().into_boxed_str()) };
    for p in pods.values() {
        if let Some(n) = p["spec"]["nodeName"].as_str() {
            account(leak(n), p, &mut used);
        }
    }
    for pl in placements {
        let Some(node_name) = pl["node"].as_str() else { continue };
        let pod = pods[pl["pod"].as_str().unwrap()];
        let node = nodes[node_name];
        let who = format!("{} on {node_name}", pl["pod"]);
        assert_ne!(
            node["spec"]["unschedulable"],
            Value::Bool(true),
            "{who}: node is cordoned"
        );
        for t in node["spec"]["taints"].as_array().into_iter().flatten() {
            let effect = t["effect"].as_str().unwrap();
            if effect != "PreferNoSchedule" {
                let (k, v) = (t["key"].as_str().unwrap(), t["value"].as_str().unwrap_or(""));
                assert!(tolerates(pod, k, v, effect), "{who}: untolerated taint {k}");
            }
        }
        for (k, v) in pod["spec"]["nodeSelector"].as_object().into_iter().flatten() {
            assert_eq!(&node["metadata"]["labels"][k], v, "{who}: nodeSelector {k}");
        }
        let req = &pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
        for term in req["nodeSelectorTerms"].as_array().into_iter().flatten() {
            for e in term["matchExpressions"].as_array().into_iter().flatten() {
                assert_eq!(e["operator"], "In", "the fixture only uses In");
                let label = &node["metadata"]["labels"][e["key"].as_str().unwrap()];
                assert!(
                    e["values"].as_array().unwrap().contains(label),
                    "{who}: required affinity"
                );
            }
        }
        account(leak(node_name), pod, &mut used);
    }
    for (node, u) in &used {
        let alloc = &nodes[node]["status"]["allocatable"];
        for (k, v) in u {
            let cap = alloc[k.as_str()].as_str().map_or(0, |a| qty(a, k == "cpu"));
            assert!(*v <= cap, "{node} overcommitted on {k}: {v} > {cap}");
        }
    }
}

fn example_cluster() -> Value {
    let text = std::fs::read_to_string(format!("{}/data/example-cluster.yaml", env!("CARGO_MANIFEST_DIR"))).unwrap();
    serde_norway::from_str(&text).unwrap()
}

#[test]
fn bundled_example_places_pods_respecting_every_filter() {
    let out = stdout_json(&["simulate", "-o", "json"]);
    let placements = out["placements"].as_array().unwrap();
    assert_eq!(out["summary"]["pods"], placements.len());
    assert!(out["summary"]["scheduled"].as_u64().unwrap() >= 15, "{out}");
    check_placements(&example_cluster(), placements);
    // The pods that cannot fit say why, in kube-scheduler's words.
    let giant = placements.iter().find(|p| p["pod"] == "batch/giant-0").unwrap();
    assert!(giant["node"].is_null());
    let reason = giant["reason"].as_str().unwrap();
    assert!(reason.starts_with("0/31 nodes are available: "), "{reason}");
    assert!(
        reason.contains("Insufficient cpu") && reason.contains("node(s) were unschedulable"),
        "{reason}"
    );
    assert!(reason.contains("5 node(s) had untolerated taint(s)"), "{reason}");
    // GPU jobs land on GPU nodes only, edge pods on the Raspberry Pis.
    for p in placements {
        let (pod, node) = (p["pod"].as_str().unwrap(), p["node"].as_str().unwrap_or("-"));
        if pod.starts_with("ml/trainer") {
            assert!(node.starts_with("gpu-"), "{pod} on {node}");
        }
        if pod.starts_with("edge/") {
            assert!(node.starts_with("pi-"), "{pod} on {node}");
        }
    }
}

#[test]
fn same_seed_same_placements() {
    let a = stdout_json(&["simulate", "-o", "json", "--seed", "7"]);
    let b = stdout_json(&["simulate", "-o", "json", "--seed", "7"]);
    assert_eq!(a, b);
}

#[test]
fn table_and_explain() {
    let out = wasmsched(&["simulate", "--explain", "infra/ingress-3"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("pods on 31 nodes"), "{text}");
    assert!(text.contains("infra/ingress-3: 31 nodes evaluated"), "{text}");
    assert!(
        text.contains("NodePorts: node(s) didn't have free ports for the requested pod ports"),
        "{text}"
    );
    assert!(text.contains("NodeUnschedulable: node(s) were unschedulable"), "{text}");
    assert!(text.contains("feasible, selected"), "{text}");
    assert!(text.contains("\"Plugin scored node for pod\""), "{text}");
    let out = stdout_json(&["simulate", "-o", "json", "--explain", "shop/web-1"]);
    let web = out["placements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pod"] == "shop/web-1")
        .unwrap();
    let nodes = web["explain"]["nodes"].as_array().unwrap();
    let selected: Vec<&Value> = nodes.iter().filter(|n| n["selected"] == true).collect();
    assert_eq!(selected.len(), 1);
    assert_eq!(selected[0]["node"], web["node"]);
    let best = nodes.iter().filter_map(|n| n["total"].as_i64()).max().unwrap();
    assert_eq!(
        selected[0]["total"].as_i64().unwrap(),
        best,
        "the selected node has the highest total"
    );
    // Each plugin's weighted score is its normalized score times its
    // weight, and the total their sum, as kube-scheduler computes them.
    let weights: std::collections::HashMap<&str, i64> = web["explain"]["scorePlugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["weight"].as_i64().unwrap()))
        .collect();
    for n in nodes.iter().filter(|n| n["feasible"] == true) {
        let scores = n["scores"].as_array().unwrap();
        for s in scores.iter().filter(|s| !s["raw"].is_null()) {
            let w = weights[s["plugin"].as_str().unwrap()];
            assert_eq!(
                s["weighted"].as_i64().unwrap(),
                s["normalized"].as_i64().unwrap() * w,
                "{s}"
            );
        }
        let sum: i64 = scores.iter().filter_map(|s| s["weighted"].as_i64()).sum();
        assert_eq!(n["total"].as_i64().unwrap(), sum, "{n}");
    }
}

#[test]
fn configuration_changes_the_strategy() {
    let cluster = data("three-nodes.yaml");
    let spread = stdout_json(&["simulate", "--cluster", &cluster, "-o", "json"]);
    let packed = stdout_json(&[
        "simulate",
        "--cluster",
        &cluster,
        "--config",
        &data("binpack-config.yaml"),
        "-o",
        "json",
    ]);
    let nodes = |v: &Value| -> BTreeMap<String, String> {
        v["placements"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["pod"].as_str().unwrap().to_owned(),
                    p["node"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    // LeastAllocated spreads onto the large node; MostAllocated packs the small ones.
    assert!(nodes(&spread).values().all(|n| n == "large"), "{spread}");
    let packed = nodes(&packed);
    assert!(packed.values().all(|n| n.starts_with("small")), "{packed:?}");
    assert_eq!(packed["default/a"], packed["default/b"], "bin-packed together");
}

#[test]
fn bad_input_is_a_clear_error() {
    let out = wasmsched(&["simulate", "--config", &data("bad-config.yaml")]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad-config.yaml"), "{err}");
    assert!(
        err.contains("profiles[0].plugins.score.enabled[1].name: unknown plugin \"NodeResourceFit\""),
        "{err}"
    );

    let dir = std::env::temp_dir().join(format!("wasmsched-sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("cluster.yaml");
    std::fs::write(
        &bad,
        "kind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: lots}}\n",
    )
    .unwrap();
    let out = wasmsched(&["simulate", "--cluster", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Node n: status.allocatable[cpu]: quantity \"lots\" has no valid number"),
        "{err}"
    );
    std::fs::write(&bad, "kind: Node\nmetadata: {name: n}\nspec: {taints: 3}\n").unwrap();
    let out = wasmsched(&["simulate", "--cluster", bad.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("document 1: Node n: spec.taints: invalid type"), "{err}");
    // A malformed pod is reported in its row; the other pods are still placed.
    std::fs::write(
        &bad,
        "kind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: '1', memory: 1Gi, pods: '5'}}\n---\nkind: Pod\nmetadata: {name: ok}\nspec: {containers: [{name: c}]}\n---\nkind: Pod\nmetadata: {name: broken}\nspec: {containers: [{name: c, resources: {requests: {cpu: x}}}]}\n",
    )
    .unwrap();
    let out = stdout_json(&["simulate", "--cluster", bad.to_str().unwrap(), "-o", "json"]);
    let rows = out["placements"].as_array().unwrap();
    assert!(
        rows.iter().any(|p| p["pod"] == "default/ok" && p["node"] == "n"),
        "{out}"
    );
    assert!(
        rows.iter()
            .any(|p| p["pod"] == "default/broken" && p["reason"].as_str().unwrap().contains("requests[cpu]")),
        "{out}"
    );
    std::fs::remove_dir_all(&dir).ok();
    let out = wasmsched(&["simulate", "--explain", "nope/nope"]);
    assert!(!out.status.success());
}

/// A plugin whose `configure` refuses its args is not loaded, and that is
/// not fatal: `simulate` says so, and places the pods by its failure
/// policy (`ignore`: as if it were not there; `fail`: not at all, naming it).
#[test]
fn a_plugin_that_fails_to_configure_follows_its_failure_policy() {
    let dir = guest::prebuilt_dir("sim-configure", &["node-price"]);
    for (policy, placed) in [("ignore", true), ("fail", false)] {
        let config = dir.join(format!("{policy}.yaml"));
        std::fs::write(
            &config,
            format!(
                "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: wasm-scheduler\n  plugins:\n    multiPoint:\n      enabled: [{{name: node-price}}]\n  pluginConfig:\n  - name: node-price\n    args: {{annotation: \"\"}}\nwasmPlugins:\n  plugins: [{{name: node-price, failurePolicy: {policy}}}]\n"
            ),
        )
        .unwrap();
        let out = wasmsched(&[
            "simulate",
            "--plugins",
            dir.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
            "-o",
            "json",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{policy}: {stderr}");
        assert!(
            stderr.contains("plugin node-price is not loaded: node-price.wasm was refused: configure failed: args.annotation: must not be empty"),
            "{policy}: {stderr}"
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let placements = v["placements"].as_array().unwrap();
        let bound = placements.iter().filter(|p| !p["node"].is_null()).count();
        if placed {
            assert!(bound > 0, "{v}");
        } else {
            assert_eq!(bound, 0, "{v}");
            assert!(
                placements[0]["reason"]
                    .as_str()
                    .unwrap()
                    .contains("plugin node-price is not loaded"),
                "{v}"
            );
        }
    }
}

/// Processes whose environment holds `mark` (a compiler process left
/// behind would be one).
fn processes_marked(mark: &str) -> usize {
    let needle = format!("WASMSCHED_TEST_MARK={mark}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()))
        .filter(|e| {
            std::fs::read(e.path().join("environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
        })
        .count()
}

/// Components are compiled by a process of wasmsched's own: one that
/// compiles past `compileTimeoutSeconds` is killed (not left running), one
/// that needs more memory than `compileMemoryMib` fails alone; either way
/// the file is refused with a message naming the limit, and the pods are
/// placed without it.
#[test]
fn a_runaway_compile_is_stopped_and_capped_in_a_process_of_its_own() {
    let dir = std::env::temp_dir().join(format!("wasmsched-sim-compile-{}", std::process::id()));
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    // Seconds of Cranelift, and hundreds of MiB.
    std::fs::copy(guest::slow_compiling(600_000), plugins.join("slow.wasm")).unwrap();
    for (case, limits, want) in [
        (
            "time",
            "compileTimeoutSeconds: 1",
            "plugin slow.wasm rejected: refused: compiling it took longer than wasmPlugins.compileTimeoutSeconds (1s); the compiler was stopped",
        ),
        (
            "memory",
            "compileMemoryMib: 32",
            "plugin slow.wasm rejected: refused: compiling it needed more than wasmPlugins.compileMemoryMib (32 MiB)",
        ),
    ] {
        let config = dir.join(format!("{case}.yaml"));
        // A fresh cache each time: nothing compiled before is reused.
        let cache = dir.join(format!("cache-{case}"));
        std::fs::write(
            &config,
            format!("wasmPlugins:\n  cacheDirectory: {}\n  {limits}\n", cache.display()),
        )
        .unwrap();
        let mark = format!("{}-{case}", std::process::id());
        let out = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
            .args([
                "simulate",
                "--plugins",
                plugins.to_str().unwrap(),
                "--config",
                config.to_str().unwrap(),
            ])
            .env("WASMSCHED_TEST_MARK", &mark)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{case}: {stderr}");
        assert!(stderr.contains(want), "{case}: {stderr}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("scheduled"), "{case}");
        assert_eq!(
            processes_marked(&mark),
            0,
            "{case}: a compiler process was left running"
        );
    }
}

/// `tests/data/constraints.yaml`: each pending pod states one kind of
/// constraint; the nodes it may go to and the message when there are none
/// are exactly kube-scheduler's answers for that cluster.
#[test]
fn pod_affinity_spread_gates_volumes_and_refusals_on_a_zoned_cluster() {
    let pods = [
        "shop/web-new-0",
        "shop/near-cache",
        "shop/not-beside-cache",
        "shop/not-in-cache-zone",
        "shop/batch-1",
        "shop/near-ledger",
        "shop/near-ledger-same-ns",
        "shop/first-of-group",
        "shop/spread-by-rack",
        "shop/with-claim",
    ];
    let mut args = vec!["simulate", "--cluster", "", "-o", "json"];
    let cluster = data("constraints.yaml");
    args[2] = &cluster;
    for p in &pods {
        args.extend(["--explain", p]);
    }
    let out = stdout_json(&args);
    let placements = out["placements"].as_array().unwrap();
    let row = |pod: &str| {
        placements
            .iter()
            .find(|p| p["pod"] == pod)
            .unwrap_or_else(|| panic!("no row for {pod}"))
    };
    let feasible = |pod: &str| -> Vec<String> {
        let mut v: Vec<String> = row(pod)["explain"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["feasible"] == true)
            .map(|n| n["node"].as_str().unwrap().to_owned())
            .collect();
        v.sort();
        v
    };
    let cases: &[(&str, &[&str], &str)] = &[
        // Zone a already runs two `app: web` pods, b and c none: placing a
        // third in a would make the skew 3 − 0 > 1.
        ("shop/web-new-0", &["b-1", "b-2", "c-1"], ""),
        // The only `app: cache` pod runs in zone a.
        ("shop/near-cache", &["a-1", "a-2"], ""),
        // Not on cache's node (hostname), anywhere else.
        ("shop/not-beside-cache", &["a-2", "b-1", "b-2", "c-1"], ""),
        // Not in cache's zone.
        ("shop/not-in-cache-zone", &["b-1", "b-2", "c-1"], ""),
        // No terms of its own, but db-0 on b-1 refuses `app: batch` beside it.
        ("shop/batch-1", &["a-1", "a-2", "b-2", "c-1"], ""),
        // The namespace selector (team: pay) reaches billing's ledger in zone c.
        ("shop/near-ledger", &["c-1"], ""),
        // Without it the term looks in shop only, where no ledger runs; the
        // pod does not match its own term, so the first-pod rule does not apply.
        (
            "shop/near-ledger-same-ns",
            &[],
            "0/5 nodes are available: 5 node(s) didn't match pod affinity rules. no new claims to deallocate, preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling.",
        ),
        // The first pod of a group that selects itself may go anywhere.
        ("shop/first-of-group", &["a-1", "a-2", "b-1", "b-2", "c-1"], ""),
        // No node has the `rack` key.
        (
            "shop/spread-by-rack",
            &[],
            "0/5 nodes are available: 5 node(s) didn't match pod topology spread constraints (missing required label). no new claims to deallocate, preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling.",
        ),
    ];
    for (pod, nodes, reason) in cases {
        assert_eq!(feasible(pod), *nodes, "{pod}");
        assert_eq!(row(pod)["reason"], *reason, "{pod}");
        if !nodes.is_empty() {
            assert!(nodes.contains(&row(pod)["node"].as_str().unwrap()), "{pod}");
        }
    }
    assert_eq!(
        row("shop/gated")["reason"],
        "waiting for scheduling gates: [example.com/quota]"
    );
    assert_eq!(feasible("shop/with-claim"), ["b-2"]);
    assert_eq!(row("shop/with-claim")["node"], "b-2");
    assert_eq!(
        row("shop/claim-missing")["reason"],
        "0/5 nodes are available: persistentvolumeclaim \"scratch\" not found. not found"
    );
    assert_eq!(out["summary"]["gated"], 1);
}

/// `tests/data/default-spreading.yaml`: the Service that selects a pod
/// gives PodTopologySpread's system defaults their selector; without it
/// the pod is placed by resources alone.
#[test]
fn default_spreading_follows_the_service_that_selects_the_pod() {
    let with = data("default-spreading.yaml");
    let out = stdout_json(&["simulate", "--cluster", &with, "-o", "json"]);
    assert_eq!(out["placements"][0]["node"], "b", "{out}");
    // The same cluster without the Service.
    let text = std::fs::read_to_string(&with).unwrap();
    let without = text.split("\n---\n").next().unwrap();
    let dir = std::env::temp_dir().join(format!("wasmsched-spreading-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cluster.yaml");
    std::fs::write(&path, without).unwrap();
    let out = stdout_json(&["simulate", "--cluster", path.to_str().unwrap(), "-o", "json"]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out["placements"][0]["node"], "a", "{out}");
}

/// Logs written to a pipe (or a file) are plain text: no colour codes.
#[test]
fn logs_to_a_pipe_carry_no_colour_codes() {
    let dir = guest::prebuilt_dir("sim-logs", &["node-price"]);
    let out = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .args(["--log", "info", "simulate", "--plugins", dir.to_str().unwrap()])
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("plugin loaded"), "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "{stderr}");
}

/// `plugin test` applies the checks the scheduler applies and fails on
/// any: a score outside 0..=100 without NormalizeScore is an error and a
/// non-zero exit, not a table of scores that `simulate` would refuse.
#[test]
fn plugin_test_fails_on_what_the_scheduler_refuses() {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../../plugins/testdata/fixture");
    let out = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .args(["plugin", "test"])
        .arg(guest::misbehave())
        .args(["--args", r#"{"mode": "range"}"#, "--pod"])
        .arg(format!("{fixture}/pod-web.yaml"))
        .arg("--nodes")
        .arg(format!("{fixture}/nodes.yaml"))
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("plugin misbehave failed 1 check(s): Score (score in Rust): score 1000 for node cheap is outside 0..=100 (implement normalize_score to map raw scores)"),
        "{err}"
    );
    assert!(!err.contains("stack backtrace"), "a user's error is a message: {err}");
}

/// `plugin test` runs PreScore on the nodes that pass Filter, and a skip
/// spares Score, as in a cycle: gpu-memory skips a pod without claims (no
/// score), and scores one with a claim.
#[test]
fn plugin_test_runs_pre_score_and_honours_its_skip() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");
    let run = |pod: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
            .args(["plugin", "test", "--json"])
            .arg(format!("{root}plugins/prebuilt/gpu-memory.wasm"))
            .arg("--pod")
            .arg(format!("{root}{pod}"))
            .arg("--nodes")
            .arg(format!("{root}plugins/testdata/dra/cluster.yaml"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let plain = run("plugins/testdata/fixture/pod-web.yaml");
    assert_eq!(plain["preScore"], "skip", "{plain}");
    let nodes = plain["nodes"].as_array().unwrap();
    assert!(!nodes.is_empty());
    assert!(nodes.iter().all(|n| n["score"].is_null()), "{plain}");
    let gpu = run("plugins/testdata/dra/pod-gpu.yaml");
    assert_eq!(gpu["preScore"], "success", "{gpu}");
    assert!(
        gpu["nodes"].as_array().unwrap().iter().any(|n| n["score"] == 100),
        "{gpu}"
    );
}

/// With `--plugins`, simulate says each score plugin's weight (a plugin of
/// the directory runs at 1, beside built-ins that sum to more), and
/// `--plugin-weight` changes it; a weight for a plugin no profile enables
/// is an error.
#[test]
fn plugin_weights_are_shown_and_settable() {
    let dir = guest::prebuilt_dir("sim-weights", &["node-price"]);
    let run = |extra: &[&str]| {
        let mut args = vec!["simulate", "--plugins", dir.to_str().unwrap()];
        args.extend_from_slice(extra);
        wasmsched(&args)
    };
    let out = run(&[]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("score weights of wasm-scheduler (total 15): "),
        "{stderr}"
    );
    assert!(stderr.contains(", node-price 1\n"), "{stderr}");
    let out = run(&["--plugin-weight", "node-price=5"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains(", node-price 5\n"));
    let out = run(&["--plugin-weight", "node-prize=5"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("--plugin-weight node-prize=5: no profile enables node-prize at multiPoint or score")
    );
}

/// A pod that fits nowhere preempts: the victim is the pod no budget
/// protects, the preemptor lands where it made room, the victim's row says
/// who evicted it, `--explain` shows the victim search node by node, and a
/// pod that may not preempt says so in kube-scheduler's words.
#[test]
fn preemption_evicts_victims_and_explains_the_search() {
    let cluster = data("preemption-cluster.yaml");
    let v = stdout_json(&["simulate", "--cluster", &cluster, "-o", "json"]);
    let row = |pod: &str| {
        v["placements"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["pod"] == pod)
            .cloned()
            .unwrap_or_else(|| panic!("no row for {pod}: {v}"))
    };
    let web = row("apps/web-0");
    assert_eq!(web["node"], "n2", "{web}");
    assert_eq!(web["preemption"]["victims"], serde_json::json!(["apps/batch-0"]));
    assert_eq!(row("apps/batch-0")["reason"], "preempted by apps/web-0 on n2");
    let patient = row("apps/patient-0");
    assert!(
        patient["reason"]
            .as_str()
            .unwrap()
            .ends_with("preemption: not eligible due to preemptionPolicy=Never."),
        "{patient}"
    );
    assert_eq!(v["summary"]["preempted"], 1);

    let out = wasmsched(&["simulate", "--cluster", &cluster, "--explain", "apps/web-0"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("after preempting apps/batch-0"), "{text}");
    assert!(
        text.contains("apps/web-0: preemption tried 2 node(s), nominated to n2"),
        "{text}"
    );
    let line = |node: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(node) && l.contains("evict"))
            .unwrap_or_else(|| panic!("no search line for {node}: {text}"))
            .to_owned()
    };
    assert!(line("n2").contains("evict apps/batch-0 (priority 0); 0 PodDisruptionBudget violation(s)  <- chosen"));
    assert!(line("n1").contains("evict apps/db-0 (priority 100); 1 PodDisruptionBudget violation(s)"));
}

/// A WebAssembly filter takes part in the victim search and sees the node
/// without its victims: `label-spread` (maxSkew 1 per hostname, through the
/// pod views) rejects n1, which holds two `app=web` pods to n2's one; once
/// one of them is gone it accepts, so exactly one is evicted. n2 is full of
/// a pod of higher priority.
#[test]
fn webassembly_filters_see_the_node_without_its_victims() {
    let dir = guest::prebuilt_dir("preempt-views", &["label-spread"]);
    let cluster = dir.join("cluster.yaml");
    let pod = |name: &str, node: &str, prio: i32, cpu: &str| {
        format!(
            "- apiVersion: v1\n  kind: Pod\n  metadata: {{name: {name}, namespace: d, labels: {{app: web}}}}\n  spec: {{nodeName: {node}, priority: {prio}, containers: [{{name: c, resources: {{requests: {{cpu: \"{cpu}\"}}}}}}]}}\n  status: {{phase: Running}}\n"
        )
    };
    let node = |name: &str, cpu: &str| {
        format!(
            "- apiVersion: v1\n  kind: Node\n  metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}\n  status: {{allocatable: {{cpu: \"{cpu}\", memory: 16Gi, pods: \"110\"}}}}\n"
        )
    };
    let text = format!(
        "apiVersion: v1\nkind: List\nitems:\n{}{}{}{}{}- apiVersion: v1\n  kind: Pod\n  metadata: {{name: web-new, namespace: d, labels: {{app: web}}}}\n  spec: {{priority: 10, containers: [{{name: c, resources: {{requests: {{cpu: \"1\"}}}}}}]}}\n",
        node("n1", "16"),
        node("n2", "4"),
        pod("web-a", "n1", 0, "100m"),
        pod("web-b", "n1", 0, "100m"),
        pod("web-c", "n2", 100, "4"),
    );
    std::fs::write(&cluster, text).unwrap();
    let plugins = dir.display().to_string();
    let v = stdout_json(&[
        "simulate",
        "--cluster",
        cluster.to_str().unwrap(),
        "--plugins",
        &plugins,
        "-o",
        "json",
    ]);
    let web = v["placements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pod"] == "d/web-new")
        .cloned()
        .unwrap();
    assert_eq!(web["node"], "n1", "{v}");
    let victims = web["preemption"]["victims"].as_array().unwrap();
    assert_eq!(victims.len(), 1, "{v}");
    assert!(["d/web-a", "d/web-b"].contains(&victims[0].as_str().unwrap()), "{v}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--print-cluster` shows what the bundled cluster holds: every node with
/// its zone and taints, and the pending pods, without placing anything.
#[test]
fn print_cluster_shows_the_bundled_nodes_and_their_zones() {
    let out = wasmsched(&["simulate", "--print-cluster"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("NODE") && lines[0].contains("ZONE") && lines[0].contains("TAINTS"));
    let cluster = example_cluster();
    let items = cluster["items"].as_array().unwrap();
    let (mut nodes, mut pending) = (0, 0);
    for o in items {
        let name = o["metadata"]["name"].as_str().unwrap();
        match o["kind"].as_str() {
            Some("Node") => {
                nodes += 1;
                let zone = o["metadata"]["labels"]["topology.kubernetes.io/zone"]
                    .as_str()
                    .unwrap_or("-");
                let line = lines
                    .iter()
                    .find(|l| l.split_whitespace().next() == Some(name))
                    .unwrap_or_else(|| panic!("no line for {name}"));
                assert_eq!(line.split_whitespace().nth(1), Some(zone), "{line}");
                for t in o["spec"]["taints"].as_array().into_iter().flatten() {
                    assert!(line.contains(t["key"].as_str().unwrap()), "{line}");
                }
            }
            Some("Pod") if o["spec"]["nodeName"].is_null() => pending += 1,
            _ => {}
        }
    }
    assert_eq!(lines.len(), nodes + 3, "{text}");
    assert!(
        text.contains(&format!("{nodes} nodes; {pending} pending pods: ")),
        "{text}"
    );
}

/// A cluster of four roomy nodes, `pods` pending pods, and a latency per node
/// (10, 20, 40, 80 ms), in a directory of their own; returns it with the
/// paths of the cluster and the metrics.
fn herd_fixture(tag: &str, pods: usize) -> (PathBuf, String, String) {
    let dir = std::env::temp_dir().join(format!("wasmsched-herd-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut docs = Vec::new();
    for n in ["n1", "n2", "n3", "n4"] {
        docs.push(format!(
            "apiVersion: v1\nkind: Node\nmetadata: {{name: {n}, labels: {{kubernetes.io/hostname: {n}}}}}\nstatus: {{allocatable: {{cpu: '64', memory: 256Gi, pods: '500'}}}}\n"
        ));
    }
    for i in 0..pods {
        docs.push(format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: web-{i}, namespace: shop, uid: u{i}}}\nspec:\n  schedulerName: wasm-scheduler\n  containers: [{{name: c, image: x, resources: {{requests: {{cpu: 10m}}}}}}]\n"
        ));
    }
    let cluster = dir.join("cluster.yaml");
    std::fs::write(&cluster, docs.join("---\n")).unwrap();
    let metrics = dir.join("metrics.json");
    std::fs::write(
        &metrics,
        r#"{"sources": {"latency": {"n1": 0.010, "n2": 0.020, "n3": 0.040, "n4": 0.080}}}"#,
    )
    .unwrap();
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(
        guest::build("examples/fastest-node/rust", None),
        plugins.join("fastest-node.wasm"),
    )
    .unwrap();
    (
        dir,
        cluster.to_str().unwrap().to_owned(),
        metrics.to_str().unwrap().to_owned(),
    )
}

/// Pods per node of a `simulate -o json` run.
fn per_node(v: &Value) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for p in v["placements"].as_array().unwrap() {
        *out.entry(p["node"].as_str().unwrap_or("-").to_owned()).or_default() += 1;
    }
    out
}

/// 100 pods arrive between two refreshes of a latency source. With the
/// correction for what was placed since the sample (fastest-node's
/// `penaltyPerPod`), they fill the fast nodes to one corrected latency (a
/// water level); without it, every pod goes to the one fastest node. Only
/// the plugin scores, so the difference is the correction's.
#[test]
fn pods_placed_between_refreshes_do_not_herd_onto_one_node() {
    let (dir, cluster, metrics) = herd_fixture("spread", 100);
    let run = |penalty: f64| {
        let config = dir.join(format!("config-{penalty}.yaml"));
        std::fs::write(
            &config,
            format!(
                "profiles:\n- plugins:\n    score:\n      disabled: [{{name: '*'}}]\n      enabled: [{{name: fastest-node}}]\n  pluginConfig:\n  - name: fastest-node\n    args: {{penaltyPerPod: {penalty}}}\n"
            ),
        )
        .unwrap();
        let v = stdout_json(&[
            "simulate",
            "--cluster",
            &cluster,
            "--config",
            config.to_str().unwrap(),
            "--plugins",
            dir.join("plugins").to_str().unwrap(),
            "--metrics",
            &metrics,
            "-o",
            "json",
        ]);
        assert_eq!(v["summary"]["scheduled"], 100, "{v}");
        per_node(&v)
    };
    let herd = run(0.0);
    assert_eq!(herd.get("n1"), Some(&100), "without the correction: {herd:?}");
    let spread = run(0.1);
    let n = |k: &str| spread.get(k).copied().unwrap_or(0);
    eprintln!("with the correction: {spread:?}");
    // Equal corrected latency: 10(1 + k1/10) = 20(1 + k2/10) = 40(1 + k3/10)
    // with k1 + k2 + k3 (+ k4) = 100 gives about 65, 27, 8 and 0.
    assert!((60..=70).contains(&n("n1")), "{spread:?}");
    assert!((22..=32).contains(&n("n2")), "{spread:?}");
    assert!((4..=12).contains(&n("n3")), "{spread:?}");
    assert!(n("n4") <= 1, "{spread:?}");
}

/// A metric plugin without its source configured is refused at load,
/// naming the source (it declares it), and fails every pod of its profile
/// though enabled at score alone; with a snapshot of values it scores by
/// them, and a value the snapshot does not have is neutral.
#[test]
fn simulate_reads_metric_snapshots_in_json_and_prometheus_text() {
    let (dir, cluster, _) = herd_fixture("snapshot", 1);
    let plugins = dir.join("plugins");
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        "profiles:\n- plugins:\n    score:\n      disabled: [{name: '*'}]\n      enabled: [{name: fastest-node}]\n",
    )
    .unwrap();
    let base = [
        "simulate",
        "--cluster",
        &cluster,
        "--config",
        config.to_str().unwrap(),
        "--plugins",
        plugins.to_str().unwrap(),
        "-o",
        "json",
    ];
    let v = stdout_json(&base);
    let reason = v["placements"][0]["reason"].as_str().unwrap_or_default().to_owned();
    assert!(
        reason.contains(
            "running Score plugin \"fastest-node\": plugin fastest-node is not loaded: fastest-node.wasm was refused: configure failed: it reads metric source \"latency\" (its metric-sources, from its args), which metrics.sources does not define (none is defined)"
        ),
        "{v}"
    );
    assert_eq!(v["placements"][0]["node"], serde_json::Value::Null, "{v}");
    // Prometheus' text format: n3 is the fastest, n1 has no value.
    let text = dir.join("metrics.prom");
    std::fs::write(
        &text,
        "# TYPE latency gauge\nlatency{node=\"n2\"} 0.5\nlatency{node=\"n3\"} 0.25\nlatency{node=\"n4\"} 0.75\nlatency{node=\"elsewhere\"} 0.1\n",
    )
    .unwrap();
    let mut args = base.to_vec();
    args.extend(["--metrics", text.to_str().unwrap()]);
    let out = wasmsched(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("latency: no node matches elsewhere"), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["placements"][0]["node"], "n3", "{v}");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"sources": {"latency": {"n1": "fast"}}}"#).unwrap();
    let mut args = base.to_vec();
    args.extend(["--metrics", bad.to_str().unwrap()]);
    let out = wasmsched(&args);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("invalid metrics") && stderr.contains("sources.latency.n1: must be a number, not \"fast\""),
        "{stderr}"
    );
}

/// `plugin test` names a failing point as the plugin's author wrote it
/// (the component says its language): a Python plugin whose
/// `normalize_score` returns scores out of range fails the test, naming
/// `normalize_score`.
#[test]
fn plugin_test_names_points_in_the_plugins_language() {
    let dir = std::env::temp_dir().join(format!("wasmsched-lang-names-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = wasmsched(&[
        "plugin",
        "new",
        "in-python",
        "--lang",
        "python",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let src = dir.join("in_python.py");
    let src = if src.exists() {
        src
    } else {
        std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "py"))
            .expect("the scaffold's Python file")
    };
    let text = std::fs::read_to_string(&src).unwrap();
    std::fs::write(
        &src,
        format!("{text}\n    def normalize_score(self, pod, scores):\n        return [s + 1000 for s in scores]\n"),
    )
    .unwrap();
    let wasm = dir.join("in-python.wasm");
    let built = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../plugins/build.sh"))
        .arg("python")
        .arg(&dir)
        .arg(&wasm)
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../../plugins/testdata/fixture");
    let out = wasmsched(&[
        "plugin",
        "test",
        wasm.to_str().unwrap(),
        "--pod",
        &format!("{fixture}/pod-web.yaml"),
        "--nodes",
        &format!("{fixture}/nodes.yaml"),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("NormalizeScore (normalize_score in Python): normalized score 1000 is outside 0..=100"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `plugin diff`: a version of `zone-gate` that rejects one zone moves
/// exactly the pods the old version put there (or leaves them
/// unschedulable), says why on each node, and fails CI with
/// `--fail-on-change`; a version against itself changes nothing.
#[test]
fn plugin_diff_shows_the_pods_a_new_version_places_differently() {
    let (v1, v2) = (guest::zone_gate(None), guest::zone_gate(Some("eu-west-1a")));
    let (v1, v2) = (v1.to_str().unwrap(), v2.to_str().unwrap());
    let cluster = example_cluster();
    let zone_of: HashMap<String, String> = cluster["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == "Node")
        .map(|n| {
            (
                n["metadata"]["name"].as_str().unwrap().to_owned(),
                n["metadata"]["labels"]["topology.kubernetes.io/zone"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    let d = stdout_json(&["plugin", "diff", v1, v2, "-o", "json"]);
    assert_eq!(
        (
            d["plugin"].as_str(),
            d["old"]["version"].as_str(),
            d["new"]["version"].as_str()
        ),
        (Some("zone-gate"), Some("1.0.0"), Some("2.0.0"))
    );
    let changed = d["changed"].as_array().unwrap();
    // What the old version placed in the zone.
    let old = stdout_json(&["simulate", "--plugins", &dir_of(v1), "-o", "json"]);
    let in_zone: Vec<&str> = old["placements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["node"].as_str().is_some_and(|n| zone_of[n] == "eu-west-1a"))
        .map(|p| p["pod"].as_str().unwrap())
        .collect();
    assert!(!in_zone.is_empty());
    for pod in &in_zone {
        let c = changed
            .iter()
            .find(|c| c["pod"] == *pod)
            .unwrap_or_else(|| panic!("{pod} is not in the diff: {d:#}"));
        assert!(c["change"] == "moved" || c["change"] == "unschedulable", "{c}");
        let old_node = c["old"]["node"].as_str().unwrap();
        let on_old = c["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["node"] == old_node)
            .unwrap();
        assert_eq!(on_old["new"]["rejected"], "node(s) were in zone eu-west-1a", "{c}");
        assert_eq!(c["pluginVerdictsDiffer"], true, "{c}");
        assert!(on_old["old"].get("rejected").is_none(), "{c}");
    }
    // Nothing lands in the zone with the new version.
    for c in changed {
        if let Some(n) = c["new"]["node"].as_str() {
            assert_ne!(zone_of[n], "eu-west-1a", "{c}");
        }
    }
    // The table says the same, and CI fails on it.
    let out = wasmsched(&["plugin", "diff", v1, v2, "--fail-on-change"]);
    assert!(!out.status.success());
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("zone-gate 1.0.0") && table.contains("-> 2.0.0"),
        "{table}"
    );
    assert!(
        table.contains("new rejects: node(s) were in zone eu-west-1a"),
        "{table}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("placed differently (--fail-on-change)"));
    // A version against itself: no change, success.
    let same = stdout_json(&["plugin", "diff", v1, v1, "-o", "json", "--fail-on-change"]);
    assert_eq!(same["changed"], serde_json::json!([]));
}

/// A directory holding only `file` (for `simulate --plugins`).
fn dir_of(file: &str) -> String {
    let dir = std::env::temp_dir().join(format!("wasmsched-dir-of-{}-{}", std::process::id(), file.len()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(file, dir.join("plugin.wasm")).unwrap();
    dir.to_str().unwrap().to_owned()
}

/// Pods whose claims come from a ResourceClaimTemplate get them made as
/// the resourceclaim controller makes them, and each its own device.
#[test]
fn simulate_makes_claims_from_templates() {
    let v = repo_json(&[
        "simulate",
        "--cluster",
        "plugins/testdata/dra/cluster.yaml",
        "--pods",
        "plugins/testdata/dra/pods-template.yaml",
        "-o",
        "json",
    ]);
    let mut devices = std::collections::BTreeSet::new();
    for p in v["placements"].as_array().unwrap() {
        let pod = p["pod"].as_str().unwrap().trim_start_matches("ml/").to_owned();
        assert!(p["node"].is_string(), "{p}");
        let d = p["devices"][0].as_str().unwrap_or_else(|| panic!("no devices: {p}"));
        let (claim, device) = d.split_once(": ").unwrap();
        assert!(claim.starts_with(&format!("{pod}-gpu-")), "{d}");
        assert!(devices.insert(device.to_owned()), "{device} twice");
    }
    assert_eq!(devices.len(), 3);
}

/// simulate runs Permit (contract 0.7): with the coscheduling example, a
/// whole gang is placed; a gang that cannot fit is rejected whole (its
/// waiting pods by its PostFilter); one that waits for a missing member is
/// rejected when the wait times out.
#[test]
fn simulate_holds_gangs_at_permit() {
    let dir = guest::prebuilt_dir("sim-gangs", &["coscheduling"]);
    let v = repo_json(&[
        "simulate",
        "--cluster",
        "plugins/testdata/gangs/cluster.yaml",
        "--pods",
        "plugins/testdata/gangs/pods.yaml",
        "-o",
        "json",
        "--plugins",
        dir.to_str().unwrap(),
    ]);
    let rows = v["placements"].as_array().unwrap();
    let of = |gang: &'static str| {
        rows.iter()
            .filter(move |r| r["pod"].as_str().unwrap().starts_with(&format!("ml/{gang}-")))
    };
    assert!(of("a").all(|r| r["node"].is_string()), "{v}");
    assert_eq!(of("a").count(), 4);
    assert!(of("e").all(|r| r["node"].is_null()), "{v}");
    assert!(
        of("e").any(|r| r["reason"].as_str().unwrap().contains("then rejected: gang e: member")),
        "{v}"
    );
    assert!(
        of("d").all(|r| r["reason"]
            .as_str()
            .unwrap()
            .ends_with("then rejected: rejected due to timeout after waiting 1m0s at plugin coscheduling")),
        "{v}"
    );
}

/// A plugin that reads devices (contract 0.6): without it the GPU pod goes
/// to gpu-a (the built-ins' choice); with gpu-memory, which prefers the node
/// where the GPU DynamicResources allocates has the most memory, to gpu-c,
/// and the placement names the device allocated there.
#[test]
fn a_device_plugin_steers_a_pod_with_a_resource_claim() {
    let dir = guest::prebuilt_dir("sim-gpu-memory", &["gpu-memory"]);
    let run = |plugins: Option<&str>| {
        let mut args = vec![
            "simulate",
            "--cluster",
            "plugins/testdata/dra/cluster.yaml",
            "--pods",
            "plugins/testdata/dra/pod-gpu.yaml",
            "-o",
            "json",
        ];
        if let Some(p) = plugins {
            args.extend(["--plugins", p]);
        }
        repo_json(&args)["placements"][0].clone()
    };
    let without = run(None);
    assert_eq!(without["node"], "gpu-a", "{without}");
    let with = run(Some(dir.to_str().unwrap()));
    assert_eq!(with["node"], "gpu-c", "{with}");
    assert_eq!(
        with["devices"],
        json!(["inference-gpu: gpu=gpu.example.com/gpu-c/gpu-0"])
    );
    // `--explain` says which devices, above the plugins' scores per node.
    let out = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .current_dir(env!("CARGO_MANIFEST_DIR").to_owned() + "/../..")
        .args([
            "simulate",
            "--cluster",
            "plugins/testdata/dra/cluster.yaml",
            "--pods",
            "plugins/testdata/dra/pod-gpu.yaml",
            "--plugins",
            dir.to_str().unwrap(),
            "--explain",
            "ml/inference-0",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("devices DynamicResources allocated on gpu-c: inference-gpu: gpu=gpu.example.com/gpu-c/gpu-0"),
        "{text}"
    );
    assert!(text.contains("gpu-memory×1"), "{text}");
}

/// The page `simulate --html` writes shows each node's devices, free and
/// taken (gpu-b's by the claim of the pod running there, gpu-a's by the
/// pod placed), and the device the placed pod's decision got.
#[test]
fn the_html_report_shows_devices() {
    let repo = env!("CARGO_MANIFEST_DIR").to_owned() + "/../..";
    let page = std::env::temp_dir().join(format!("wasmsched-html-dra-{}.html", std::process::id()));
    let out = wasmsched(&[
        "simulate",
        "--cluster",
        &format!("{repo}/plugins/testdata/dra/cluster.yaml"),
        "--pods",
        &format!("{repo}/plugins/testdata/dra/pod-gpu.yaml"),
        "--html",
        page.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    let _ = std::fs::remove_file(&page);
    let tile = |node: &str| {
        let start = html.find(&format!(r#"data-node="{node}""#)).unwrap();
        let end = html[start..]
            .find(r#"<div class="tile"#)
            .map_or(html.len(), |e| start + e);
        html[start..end].to_owned()
    };
    let gpu_a = tile("gpu-a");
    assert!(gpu_a.contains("devices 1 of 2 free"), "{gpu_a}");
    assert!(gpu_a.contains("gpu.example.com/gpu-a/gpu-0 (taken)"), "{gpu_a}");
    assert!(gpu_a.contains("<li>gpu.example.com/gpu-a/gpu-1</li>"), "{gpu_a}");
    let gpu_b = tile("gpu-b");
    assert!(gpu_b.contains("devices 1 of 2 free"), "{gpu_b}");
    assert!(gpu_b.contains("gpu.example.com/gpu-b/gpu-0 (taken)"), "{gpu_b}");
    assert!(tile("gpu-c").contains("devices 1 of 1 free"));
    assert!(!tile("cpu-1").contains("devices"));
    assert!(
        html.contains("devices: inference-gpu: gpu=gpu.example.com/gpu-a/gpu-0"),
        "{html}"
    );
}

/// `plugin diff` on pods with claims: a pod the new version keeps on its
/// node but with another device (an earlier pod took the first) is a
/// change of its own, and each version's devices are printed.
#[test]
fn plugin_diff_shows_other_devices_on_the_same_node() {
    // `big` (eu-west-1a, preferred: more room) has one GPU, `small` two.
    // 1.0.0 puts job-1 on big and job-2 on small's gpu-0; 2.0.0 rejects
    // eu-west-1a, so job-1 takes small's gpu-0 and job-2 gets gpu-1.
    let mut fixture = r#"
apiVersion: v1
kind: List
items:
- {apiVersion: resource.k8s.io/v1, kind: DeviceClass, metadata: {name: gpu.example.com},
   spec: {selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]}}
- {apiVersion: v1, kind: Node, metadata: {name: big, labels: {topology.kubernetes.io/zone: eu-west-1a}},
   status: {allocatable: {cpu: "32", memory: 128Gi, pods: "110"}}}
- {apiVersion: v1, kind: Node, metadata: {name: small, labels: {topology.kubernetes.io/zone: eu-west-1b}},
   status: {allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}}
- {apiVersion: resource.k8s.io/v1, kind: ResourceSlice, metadata: {name: big},
   spec: {driver: gpu.example.com, nodeName: big, pool: {name: big, generation: 1, resourceSliceCount: 1},
     devices: [{name: gpu-0}]}}
- {apiVersion: resource.k8s.io/v1, kind: ResourceSlice, metadata: {name: small},
   spec: {driver: gpu.example.com, nodeName: small, pool: {name: small, generation: 1, resourceSliceCount: 1},
     devices: [{name: gpu-0}, {name: gpu-1}]}}
"#
    .to_owned();
    for i in 1..=2 {
        fixture += &format!(
            r#"- {{apiVersion: resource.k8s.io/v1, kind: ResourceClaim, metadata: {{name: job-{i}, namespace: ml, uid: claim-{i}}},
   spec: {{devices: {{requests: [{{name: gpu, exactly: {{deviceClassName: gpu.example.com}}}}]}}}}}}
- {{apiVersion: v1, kind: Pod, metadata: {{name: job-{i}, namespace: ml, uid: pod-{i}}},
   spec: {{resourceClaims: [{{name: gpu, resourceClaimName: job-{i}}}],
     containers: [{{name: c, image: i, resources: {{requests: {{cpu: "2", memory: 8Gi}}, claims: [{{name: gpu}}]}}}}]}}}}
"#
        );
    }
    let file = std::env::temp_dir().join(format!("wasmsched-diff-dra-{}.yaml", std::process::id()));
    std::fs::write(&file, fixture).unwrap();
    let (v1, v2) = (guest::zone_gate(None), guest::zone_gate(Some("eu-west-1a")));
    let (v1, v2, cluster) = (v1.to_str().unwrap(), v2.to_str().unwrap(), file.to_str().unwrap());
    let d = stdout_json(&["plugin", "diff", v1, v2, "--cluster", cluster, "-o", "json"]);
    let changed = d["changed"].as_array().unwrap();
    assert_eq!(changed.len(), 2, "{d:#}");
    assert_eq!(
        (&changed[0]["pod"], &changed[0]["change"]),
        (&json!("ml/job-1"), &json!("moved"))
    );
    assert_eq!(
        changed[0]["new"]["devices"],
        json!(["job-1: gpu=gpu.example.com/small/gpu-0"])
    );
    assert_eq!(
        (&changed[1]["pod"], &changed[1]["change"]),
        (&json!("ml/job-2"), &json!("devices"))
    );
    assert_eq!(
        (&changed[1]["old"], &changed[1]["new"]),
        (
            &json!({"node": "small", "reason": null, "devices": ["job-2: gpu=gpu.example.com/small/gpu-0"]}),
            &json!({"node": "small", "reason": null, "devices": ["job-2: gpu=gpu.example.com/small/gpu-1"]})
        )
    );
    let table =
        String::from_utf8_lossy(&wasmsched(&["plugin", "diff", v1, v2, "--cluster", cluster]).stdout).into_owned();
    assert!(
        table.contains("ml/job-2 (devices)\n  old: small with devices job-2: gpu=gpu.example.com/small/gpu-0\n  new: small with devices job-2: gpu=gpu.example.com/small/gpu-1"),
        "{table}"
    );
    let _ = std::fs::remove_file(&file);
}

/// PodGroups in the files are placed as kube-scheduler v1.36 places them:
/// two of three gangs of four whole and none of the third (which says
/// why, and so does its group), a basic group pod by pod, and a pod whose
/// group does not exist waits for it.
#[test]
fn simulate_places_pod_groups_whole_or_not_at_all() {
    let v = repo_json(&[
        "simulate",
        "--cluster",
        "plugins/testdata/podgroups/cluster.yaml",
        "-o",
        "json",
    ]);
    let rows = v["placements"].as_array().unwrap();
    let placed = |group: &str| {
        rows.iter()
            .filter(|r| r["podGroup"] == format!("ml/{group}") && r["node"].is_string())
            .count()
    };
    let mut gangs = [placed("train-a"), placed("train-b"), placed("train-c")];
    gangs.sort();
    assert_eq!(gangs, [0, 4, 4], "{v}");
    assert_eq!(placed("eval"), 2);
    let groups = v["podGroups"].as_array().unwrap();
    let group = |name: &str| {
        groups
            .iter()
            .find(|g| g["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {v}"))
    };
    let unplaced: Vec<&Value> = groups
        .iter()
        .filter(|g| g["policy"] == "gang (minCount 4)" && g["placed"] == 0)
        .collect();
    assert_eq!(unplaced.len(), 1, "{v}");
    assert_eq!(unplaced[0]["reason"], "Unschedulable");
    assert_eq!(unplaced[0]["message"], "pod group is unschedulable");
    assert_eq!(group("ml/eval")["reason"], "Scheduled");
    assert_eq!(group("ml/missing")["reason"], "Waiting");
    assert_eq!(
        unplaced[0]["fit"], 0,
        "each node has 1 CPU left: none of the third fits: {v}"
    );
    // --explain says how its group fared.
    let out = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .current_dir(env!("CARGO_MANIFEST_DIR").to_owned() + "/../..")
        .args([
            "simulate",
            "--cluster",
            "plugins/testdata/podgroups/cluster.yaml",
            "--explain",
            "ml/eval-0",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("pod group ml/eval, basic: 2 pods, 2 fit and 2 placed in its last cycle; Scheduled"),
        "{text}"
    );
    let orphan = rows.iter().find(|r| r["pod"] == "ml/orphan-0").unwrap();
    assert_eq!(
        orphan["reason"],
        "waiting: waiting for pods's pod group \"missing\" to appear in scheduling queue"
    );
}
