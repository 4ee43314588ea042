//! The web view in a real browser: Debian's Chromium, headless, driven over
//! the DevTools protocol (chromiumoxide), loads the page `wasmsched run`
//! serves on its admin port while it schedules the bundled example cluster
//! on the API server double. The DOM is checked view by view (node tiles,
//! a pending pod's reason in kube-scheduler's words, the plugins), the
//! page follows a pod created meanwhile without a reload, that pod's
//! decision shows each plugin's score per node as `simulate --explain`
//! gives it for the same cluster, nothing hostile
//! from the cluster runs, and each view is saved as a screenshot under
//! `target/artifacts/web/`. The same decision, in the page `simulate
//! --html` writes for the same cluster, opened from its file.

mod guest;
mod support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use chromiumoxide::browser::{Browser, BrowserConfig};
use chromiumoxide::cdp::browser_protocol::page::CaptureScreenshotFormat;
use chromiumoxide::page::{Page, ScreenshotParams};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};
use wasmsched_apiserver_sim::{ApiServer, Config as SimConfig};

struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// `expr` evaluated in the page, until `done` holds for its value (or the
/// deadline passes, which fails with the last value).
async fn wait_for(page: &Page, expr: &str, done: impl Fn(&Value) -> bool, what: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let v: Value = match page.evaluate_expression(expr).await {
            Ok(r) => r.into_value().unwrap_or(Value::Null),
            Err(_) => Value::Null,
        };
        if done(&v) {
            return v;
        }
        if Instant::now() >= deadline {
            let html = page
                .evaluate_expression("document.getElementById('main').innerHTML.slice(0, 1500)")
                .await
                .ok()
                .and_then(|r| r.into_value::<Value>().ok())
                .unwrap_or(Value::Null);
            panic!("{what}: last {v}; the page shows {html}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn with_kind(mut v: Value, kind: &str) -> Value {
    v["apiVersion"] = json!("v1");
    v["kind"] = json!(kind);
    v
}

fn ours(p: &Pod) -> bool {
    p.spec.as_ref().and_then(|s| s.scheduler_name.as_deref()) == Some("wasm-scheduler")
}

fn bound(p: &Pod) -> bool {
    p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()
}

/// `expr` evaluated in the page.
async fn eval(page: &Page, expr: &str) -> Value {
    page.evaluate_expression(expr).await.unwrap().into_value().unwrap()
}

/// A decision table's rows, and each as `[node, [[plugin, score]], total, chosen]`.
const ROWS: &str = "table.explain tbody tr";
const ROW: &str = "r => [r.dataset.node, \
     Array.from(r.querySelectorAll('td[data-plugin]')).map(c => [c.dataset.plugin, c.textContent.trim()]), \
     r.querySelector('.total').textContent.trim(), r.classList.contains('selected')]";

type Scores = std::collections::BTreeMap<String, (String, Vec<(String, String)>)>;

/// Node → (total, [(plugin, weighted score)]) of a decision table's
/// feasible nodes (a plugin that skipped the pod left out).
fn scores_of(table: &Value) -> Scores {
    table
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r[2] != "")
        .map(|r| {
            let scores = r[1]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c[1] != "–")
                .map(|c| (c[0].as_str().unwrap().to_owned(), c[1].as_str().unwrap().to_owned()))
                .collect();
            (
                r[0].as_str().unwrap().to_owned(),
                (r[2].as_str().unwrap().to_owned(), scores),
            )
        })
        .collect()
}

async fn screenshot(page: &Page, name: &str) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/artifacts/web");
    std::fs::create_dir_all(&dir).unwrap();
    page.save_screenshot(
        ScreenshotParams::builder()
            .format(CaptureScreenshotFormat::Png)
            .full_page(true)
            .build(),
        dir.join(format!("{name}.png")),
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_view_shows_the_cluster_the_queue_and_the_plugins_live() {
    let s = ApiServer::start("127.0.0.1:0".parse().unwrap(), SimConfig::default())
        .await
        .unwrap();
    s.load_text(&std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/data/example-cluster.yaml")).unwrap())
        .unwrap();
    // What the cluster says is shown as text, never run.
    let hostile = "<img src=x onerror=\"window.hacked=1\"><script>window.hacked=2</script>";
    s.create(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "evil-1", "labels": {"topology.kubernetes.io/zone": "eu-west-1c"}},
        "spec": {"taints": [{"key": "evil", "value": hostile, "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}, "conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .unwrap();
    let dir = std::env::temp_dir().join(format!("wasmsched-web-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    std::fs::copy(guest::zone_gate(None), dir.join("plugins/zone-gate.wasm")).unwrap();
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection: {{leaderElect: false}}\n\
             profiles:\n- schedulerName: wasm-scheduler\n  plugins: {{multiPoint: {{enabled: [{{name: zone-gate}}]}}}}\n\
             wasmPlugins: {{cacheDirectory: {}}}\n",
            dir.join("cache").display()
        ),
    )
    .unwrap();
    let admin = free_port();
    let _daemon = Daemon(
        Command::new(env!("CARGO_BIN_EXE_wasmsched"))
            .args([
                "run",
                "--master",
                &s.url(),
                "--admin-address",
                &admin,
                "--admin-plain-http",
            ])
            .arg("--config")
            .arg(&config)
            .arg("--plugins")
            .arg(dir.join("plugins"))
            .env("WASMSCHED_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );

    let profile = dir.join("chromium");
    let (mut browser, mut handler) = Browser::launch(
        BrowserConfig::builder()
            .chrome_executable("/usr/bin/chromium")
            .no_sandbox()
            .user_data_dir(&profile)
            .window_size(1400, 1000)
            .viewport(None)
            .arg("disable-gpu")
            .launch_timeout(Duration::from_secs(60))
            .build()
            .unwrap(),
    )
    .await
    .expect("start headless Chromium (scripts/install-test-tools.sh installs Debian's chromium)");
    let events = tokio::spawn(async move { while handler.next().await.is_some() {} });
    let page = browser.new_page("about:blank").await.unwrap();

    // Cluster: a tile per node, once the daemon is up.
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(&admin).is_err() {
        assert!(Instant::now() < deadline, "the admin port did not open");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    page.goto(format!("http://{admin}/ui")).await.unwrap();
    let tiles = wait_for(
        &page,
        "document.querySelectorAll('.tile').length",
        |v| v.as_u64() == Some(32),
        "a tile per node (31 of the example cluster and evil-1)",
    )
    .await;
    assert_eq!(tiles, 32);
    // The hostile taint is text on its tile, and ran nowhere.
    let evil = eval(
        &page,
        "document.querySelector('[data-node=\"evil-1\"] .taint').textContent",
    )
    .await;
    assert!(
        evil.as_str().unwrap().contains("<script>window.hacked=2</script>"),
        "{evil}"
    );
    // Pods bound by the daemon appear on their tiles.
    wait_for(
        &page,
        "Array.from(document.querySelectorAll('.tile li')).map(l => l.textContent).join(' ')",
        |v| v.as_str().is_some_and(|t| t.contains("shop/api-1")),
        "shop/api-1 bound, on its tile",
    )
    .await;
    screenshot(&page, "cluster").await;

    // The cluster as it is now, for `simulate --explain` below: the nodes,
    // the pods bound, the pods of ours still pending (another scheduler's
    // are not placed here).
    support::wait_settled(&s, Duration::from_secs(30)).await;
    let state = dir.join("state.json");
    let items: Vec<Value> = s
        .list::<k8s_openapi::api::core::v1::Node>()
        .into_iter()
        .map(|n| with_kind(serde_json::to_value(n).unwrap(), "Node"))
        .chain(
            s.list::<Pod>()
                .into_iter()
                .filter(|p| bound(p) || ours(p))
                .map(|p| with_kind(serde_json::to_value(p).unwrap(), "Pod")),
        )
        .collect();
    std::fs::write(
        &state,
        json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string(),
    )
    .unwrap();

    // Its decision asked for before it exists: its first attempt is kept
    // whatever the sampling.
    let admin_addr: std::net::SocketAddr = admin.parse().unwrap();
    let early = support::http(admin_addr, "GET", "/ui/decision?pod=default%2Flive-0", None, None).await;
    assert!(
        String::from_utf8_lossy(&early.body).contains("its next attempt will be"),
        "{early:?}"
    );
    // Live: a pod created now shows up bound, without a reload.
    let live = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "live-0", "namespace": "default"},
        "spec": {"schedulerName": "wasm-scheduler", "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}]}
    });
    std::fs::write(dir.join("live-0.json"), live.to_string()).unwrap();
    s.create(live).unwrap();
    wait_for(
        &page,
        "Array.from(document.querySelectorAll('.tile li')).map(l => l.textContent).join(' ')",
        |v| v.as_str().is_some_and(|t| t.contains("default/live-0")),
        "default/live-0 appears bound without a reload",
    )
    .await;

    // Its decision, recorded while the page was open: each plugin's score
    // on each node, as `simulate --explain` gives them for the same pod
    // on the same cluster, and the node chosen is the one it is bound to.
    page.goto(format!("http://{admin}/ui?view=decision&pod=default%2Flive-0"))
        .await
        .unwrap();
    let table = wait_for(
        &page,
        &format!("Array.from(document.querySelectorAll('{ROWS}')).map({ROW})"),
        |v| v.as_array().is_some_and(|a| !a.is_empty()),
        "default/live-0's decision table",
    )
    .await;
    let report = dir.join("report.html");
    let out = Command::new(env!("CARGO_BIN_EXE_wasmsched"))
        .args(["simulate", "-o", "json", "--explain", "default/live-0", "--cluster"])
        .arg(&state)
        .arg("--html")
        .arg(&report)
        .arg("--pods")
        .arg(dir.join("live-0.json"))
        .arg("--plugins")
        .arg(dir.join("plugins"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let sim: Value = serde_json::from_slice(&out.stdout).unwrap();
    let placed = sim["placements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pod"] == "default/live-0")
        .unwrap();
    let expected: Scores = placed["explain"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["total"].is_i64())
        .map(|n| {
            let scores = n["scores"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|s| !s["raw"].is_null())
                .map(|s| (s["plugin"].as_str().unwrap().to_owned(), s["weighted"].to_string()))
                .collect();
            (n["node"].as_str().unwrap().to_owned(), (n["total"].to_string(), scores))
        })
        .collect();
    let shown = scores_of(&table);
    assert_eq!(shown, expected, "the page's scores against simulate --explain");
    let chosen = table.as_array().unwrap().iter().find(|r| r[3] == true).unwrap()[0].clone();
    let bound_to = s
        .get::<Pod>("default", "live-0")
        .and_then(|p| p.spec?.node_name)
        .unwrap();
    assert_eq!(chosen, bound_to.as_str());
    screenshot(&page, "decision").await;

    // Refreshed in place more than once by now: nothing of the taint ran.
    let hacked = eval(&page, "String(window.hacked)").await;
    assert_eq!(hacked, "undefined");

    // Queue: the pod that fits nowhere, with kube-scheduler's reason.
    page.goto(format!("http://{admin}/ui?view=queue")).await.unwrap();
    let reason = wait_for(
        &page,
        "(document.querySelector('tr[data-pod=\"batch/giant-0\"] .reason') || {}).textContent || null",
        |v| v.as_str().is_some_and(|t| t.starts_with("0/32 nodes are available:")),
        "batch/giant-0's reason",
    )
    .await;
    assert!(reason.as_str().unwrap().contains("Insufficient"), "{reason}");
    let gated = eval(
        &page,
        "document.querySelector('tr[data-pod=\"shop/migration-0\"] .reason').textContent",
    )
    .await;
    assert_eq!(gated, "gates: example.com/approved");
    // A pod whose PodGroup does not exist waits before the queue, and its
    // row names its group and why.
    s.create(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "eval-0", "namespace": "ml"},
        "spec": {"schedulerName": "wasm-scheduler", "schedulingGroup": {"podGroupName": "eval"},
                 "containers": [{"name": "c", "image": "eval"}]}
    }))
    .unwrap();
    let grouped = wait_for(
        &page,
        "(document.querySelector('tr[data-pod=\"ml/eval-0\"] .reason') || {}).textContent || null",
        |v| v.is_string(),
        "ml/eval-0's row",
    )
    .await;
    let grouped = grouped.as_str().unwrap();
    assert!(grouped.contains("pod group ml/eval (not created): 1 pods"), "{grouped}");
    assert!(
        grouped.contains("waiting for pods's pod group \"eval\" to appear in scheduling queue"),
        "{grouped}"
    );
    screenshot(&page, "queue").await;

    // The profile filter: the nodes holding pods of ours.
    let ours_on: std::collections::BTreeSet<String> = s
        .list::<Pod>()
        .into_iter()
        .filter(ours)
        .filter_map(|p| p.spec?.node_name)
        .collect();
    page.goto(format!("http://{admin}/ui?view=cluster&profile=wasm-scheduler"))
        .await
        .unwrap();
    let nodes = wait_for(
        &page,
        "Array.from(document.querySelectorAll('.tile')).map(t => t.dataset.node).sort()",
        |v| v.as_array().is_some_and(|a| a.len() == ours_on.len()),
        "a tile per node holding a pod of wasm-scheduler",
    )
    .await;
    assert_eq!(nodes, json!(ours_on.iter().collect::<Vec<_>>()));

    // Plugins: the one loaded, its version and compiler, and its timings.
    page.goto(format!("http://{admin}/ui?view=plugins")).await.unwrap();
    let row = wait_for(
        &page,
        "(document.querySelector('tr[data-plugin=\"zone-gate\"]') || {}).textContent || null",
        |v| v.as_str().is_some_and(|t| t.contains("1.0.0")),
        "zone-gate's row",
    )
    .await;
    assert!(row.as_str().unwrap().contains("serving"), "{row}");
    let timed = eval(&page, "Array.from(document.querySelectorAll('table.timings tr[data-plugin=\"zone-gate\"]')).map(r => r.dataset.point)").await;
    assert!(
        timed.as_array().is_some_and(|a| !a.is_empty()),
        "zone-gate's timings: {timed}"
    );
    screenshot(&page, "plugins").await;

    // A pod placed before the page opened (no attempt of it kept): decided
    // against the cluster as it is now, without it, and said to be so.
    let bound_before = s
        .get::<Pod>("shop", "web-1")
        .and_then(|p| p.spec?.node_name)
        .expect("shop/web-1 is bound");
    page.goto(format!("http://{admin}/ui?view=decision&pod=shop%2Fweb-1"))
        .await
        .unwrap();
    let now_table = wait_for(
        &page,
        &format!("Array.from(document.querySelectorAll('{ROWS}')).map({ROW})"),
        |v| v.as_array().is_some_and(|a| !a.is_empty()),
        "shop/web-1's decision, made now",
    )
    .await;
    let note = eval(
        &page,
        "document.querySelector('p.note') && document.querySelector('p.note').textContent",
    )
    .await;
    assert!(
        note.as_str()
            .is_some_and(|n| n.contains("against the cluster as it was then, without the pod")
                && n.contains(&format!("bound to {bound_before}"))),
        "{note}"
    );
    assert!(
        now_table
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r[0] == bound_before.as_str()),
        "{now_table}"
    );
    let rejected_by_name = eval(
        &page,
        &format!(
            "Array.from(document.querySelectorAll('{ROWS}')).filter(r => r.textContent.includes('NodeName')).length"
        ),
    )
    .await;
    assert_eq!(rejected_by_name, 0, "decided as if pending, not held to its node");
    screenshot(&page, "decision-now").await;

    // The report simulate --html wrote: one file, opened offline, its
    // decision of live-0 the same table.
    page.goto(format!("file://{}#decision-default/live-0", report.display()))
        .await
        .unwrap();
    let in_report = wait_for(
        &page,
        &format!("Array.from(document.querySelectorAll('[id=\"decision-default/live-0\"] {ROWS}')).map({ROW})"),
        |v| v.as_array().is_some_and(|a| !a.is_empty()),
        "live-0's decision in the report",
    )
    .await;
    assert_eq!(
        scores_of(&in_report),
        expected,
        "the report's scores against simulate --explain"
    );
    screenshot(&page, "report").await;

    browser.close().await.unwrap();
    let _ = browser.wait().await;
    let _ = tokio::time::timeout(Duration::from_secs(5), events).await;
    let _ = std::fs::remove_dir_all(&dir);
}
