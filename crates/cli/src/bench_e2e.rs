//! `wasmsched bench --e2e`: the daemon (a child process running `wasmsched
//! run`) against the API server double over HTTP. Pods are created in the
//! double; each one's create→bound latency is measured from the double's
//! own watch, and the daemon's peak memory from /proc.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
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
    /// Keep the web view open during the run (its cluster view fetched
    /// every 2 s, as the page does), and measure its first load after.
    pub web: bool,
}

/// The daemon's configuration: the client budget, and with `--wasm` a
/// profile enabling the directory's plugins (and its shadows).
fn daemon_config(e: &E2e) -> anyhow::Result<serde_json::Value> {
    let mut config = json!({"clientConnection": {"qps": 5000, "burst": 5000}});
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
        config["profiles"] =
            json!([{"schedulerName": "wasm-scheduler", "plugins": {"multiPoint": {"enabled": names}}}]);
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
    c.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut out = String::new();
    c.read_to_string(&mut out).await.ok()?;
    let status = out.split(' ').nth(1)?.parse().ok()?;
    Some((status, out.split_once("\r\n\r\n")?.1.to_owned()))
}

pub fn run(e: E2e) -> anyhow::Result<()> {
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async move {
        let server = ApiServer::start("127.0.0.1:0".parse()?, SimConfig::default()).await?;
        server.load(&Objects { nodes: synthetic::nodes(e.nodes, e.seed), ..Default::default() })?;
        let pods = synthetic::pods(e.pods, "wasm-scheduler", e.seed);
        // kube-scheduler's scheduler_perf budget (qps 5000): the bench
        // measures the scheduler, not the default 50 requests per second.
        let config = std::env::temp_dir().join(format!("wasmsched-bench-e2e-{}.yaml", std::process::id()));
        std::fs::write(&config, daemon_config(&e)?.to_string())?;
        let admin = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.to_string();
        let mut child = Command::new(std::env::current_exe()?)
            .args(["run", "--master", &server.url(), "--identity", "bench", "--admin-address", &admin])
            .arg("--config")
            .arg(&config)
            .args(e.null.then_some("--null-placement"))
            .env("WASMSCHED_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .context("cannot start the daemon")?;
        // Wait for leadership (the daemon has synced its caches by then or soon after).
        let deadline = Instant::now() + Duration::from_secs(30);
        while server
            .get::<k8s_openapi::api::coordination::v1::Lease>("kube-system", "wasm-scheduler")
            .and_then(|l| l.spec?.holder_identity)
            .is_none()
        {
            anyhow::ensure!(Instant::now() < deadline, "the daemon did not take the lease");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        // Plugins loaded (and their shadows comparing) before the clock starts.
        if e.wasm.is_some() {
            loop {
                let ready = get(&admin, "/readyz").await.is_some_and(|(s, _)| s == 200);
                let shadowing = e.shadow.is_none()
                    || get(&admin, "/debug/shadow").await.is_some_and(|(_, b)| {
                        serde_json::from_str::<serde_json::Value>(&b)
                            .is_ok_and(|v| v["shadowedProfiles"].as_array().is_some_and(|a| !a.is_empty()))
                    });
                if ready && shadowing {
                    break;
                }
                anyhow::ensure!(Instant::now() < deadline + Duration::from_secs(60), "the daemon's plugins did not load");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        let rv = server.store().resource_version();
        let mut rx = server
            .store()
            .watch(resources::PODS, Filter::default(), WatchFrom::Version(rv), false, false)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut created: HashMap<String, Instant> = HashMap::with_capacity(pods.len());
        // CPU of the daemon, and of this process (the API server double,
        // creating the pods, watching them), over the measured part.
        let daemon_cpu_before = crate::bench::cpu_seconds_of(&child.id().to_string());
        let own_cpu_before = crate::bench::cpu_seconds_of("self");
        // An open page: what it costs the daemon to record and publish.
        let watcher = e.web.then(|| {
            let admin = admin.clone();
            tokio::spawn(async move {
                loop {
                    let _ = get(&admin, "/ui/cluster").await;
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
            })
        });
        let start = Instant::now();
        let mut bound_at: HashMap<String, Instant> = HashMap::with_capacity(pods.len());
        let drain = |rx: &mut tokio::sync::mpsc::Receiver<WatchMsg>, bound_at: &mut HashMap<String, Instant>| {
            while let Ok(m) = rx.try_recv() {
                if let WatchMsg::Event(_, c) = m {
                    let o = &c.object.value;
                    if o.pointer("/spec/nodeName").and_then(|v| v.as_str()).is_some() {
                        let key = format!("{}/{}", o["metadata"]["namespace"].as_str().unwrap_or(""), o["metadata"]["name"].as_str().unwrap_or(""));
                        bound_at.entry(key).or_insert_with(Instant::now);
                    }
                }
            }
        };
        for (i, p) in pods.iter().enumerate() {
            if e.rate > 0 {
                let due = start + Duration::from_secs_f64(i as f64 / f64::from(e.rate));
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    tokio::time::sleep(wait).await;
                }
            }
            let key = format!("{}/{}", p.metadata.namespace.as_deref().unwrap_or("default"), p.metadata.name.as_deref().unwrap_or(""));
            let mut v = serde_json::to_value(p)?;
            v["apiVersion"] = json!("v1");
            v["kind"] = json!("Pod");
            created.insert(key, Instant::now());
            server.create(v).map_err(|e| anyhow::anyhow!("{e}"))?;
            drain(&mut rx, &mut bound_at);
        }
        let created_in = start.elapsed();
        // Wait until every pod is bound or nothing moves for 5 s.
        let mut last_progress = Instant::now();
        let mut last_n = 0;
        while bound_at.len() < pods.len() && last_progress.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(10)).await;
            drain(&mut rx, &mut bound_at);
            if bound_at.len() != last_n {
                last_n = bound_at.len();
                last_progress = Instant::now();
            }
        }
        // Events written when the last pod is bound, and after a normal
        // stop (SIGTERM: the daemon drains what is queued).
        let scheduled_events = || {
            server
                .list::<k8s_openapi::api::events::v1::Event>()
                .iter()
                .filter(|ev| ev.reason.as_deref() == Some("Scheduled"))
                .count()
        };
        let events_at_last_bind = scheduled_events();
        let rss = crate::bench::peak_rss_mb_of(&child.id().to_string());
        let per_pod_ms = |before: Option<f64>, after: Option<f64>| {
            Some((after? - before?) * 1000.0 / bound_at.len().max(1) as f64)
        };
        let daemon_cpu = per_pod_ms(daemon_cpu_before, crate::bench::cpu_seconds_of(&child.id().to_string()));
        if let Some(w) = watcher {
            w.abort();
        }
        // The page's first load now, view by view: time to the whole
        // answer, and its size.
        let mut web = Vec::new();
        if e.web {
            for path in ["/ui", "/ui?view=queue", "/ui?view=decisions", "/ui?view=plugins"] {
                let t = Instant::now();
                let bytes = get(&admin, path).await.map_or(0, |(_, b)| b.len());
                web.push(json!({"path": path, "ms": (t.elapsed().as_secs_f64() * 1e4).round() / 10.0, "bytes": bytes}));
            }
        }
        let shadow: Option<serde_json::Value> = match e.shadow {
            Some(_) => get(&admin, "/debug/shadow").await.and_then(|(_, b)| serde_json::from_str(&b).ok()),
            None => None,
        };
        let server_cpu = per_pod_ms(own_cpu_before, crate::bench::cpu_seconds_of("self"));
        let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
        let _ = child.wait();
        let _ = std::fs::remove_file(&config);
        let events_after_stop = scheduled_events();
        let share = |n: usize| 100.0 * n as f64 / bound_at.len().max(1) as f64;
        let mut lat: Vec<f64> = bound_at
            .iter()
            .filter_map(|(k, t)| created.get(k).map(|c| t.saturating_duration_since(*c).as_secs_f64() * 1000.0))
            .collect();
        lat.sort_by(f64::total_cmp);
        let pct = |p: f64| if lat.is_empty() { 0.0 } else { lat[((lat.len() as f64 * p).ceil() as usize).clamp(1, lat.len()) - 1] };
        let last_bound = bound_at.values().max().copied().unwrap_or(start);
        let span = last_bound.saturating_duration_since(start).as_secs_f64().max(1e-9);
        let per_sec = bound_at.len() as f64 / span;
        println!(
            "end to end{}: {} nodes, {} pods created in {:.2} s ({}), {} bound in {:.2} s: {:.0} pods/s; create→bound p50 {:.1} ms, p99 {:.1} ms; daemon peak RSS {:.0} MiB",
            if e.null { " (null placement: no scheduling cycle)" } else { "" },
            e.nodes,
            e.pods,
            created_in.as_secs_f64(),
            if e.rate > 0 { format!("{} pods/s", e.rate) } else { "at once".into() },
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
            "CPU per pod bound: daemon {:.2} ms, API server double and bench {:.2} ms",
            daemon_cpu.unwrap_or(0.0),
            server_cpu.unwrap_or(0.0)
        );
        for w in &web {
            println!("web view {}: {} ms, {} bytes", w["path"].as_str().unwrap_or(""), w["ms"], w["bytes"]);
        }
        if let Some(sh) = &shadow {
            let p = &sh["profiles"]["wasm-scheduler"];
            println!(
                "shadow at {}%: {} cycles handed over, {} dropped, {} compared, agreement {}",
                sh["samplePercent"], sh["sampled"], sh["dropped"], p["compared"], p["agreement"]
            );
        }
        if e.json {
            println!(
                "{}",
                json!({
                    "mode": if e.null { "e2e-null" } else { "e2e" }, "nodes": e.nodes, "pods": e.pods, "rate": e.rate, "bound": bound_at.len(),
                    "pods_per_sec": (per_sec * 10.0).round() / 10.0,
                    "p50_ms": (pct(0.5) * 10.0).round() / 10.0, "p99_ms": (pct(0.99) * 10.0).round() / 10.0,
                    "daemon_peak_rss_mb": rss.map(f64::round),
                    "events_at_last_bind": events_at_last_bind, "events_after_stop": events_after_stop,
                    "daemon_cpu_ms_per_pod": daemon_cpu.map(|v| (v * 1000.0).round() / 1000.0),
                    "server_cpu_ms_per_pod": server_cpu.map(|v| (v * 1000.0).round() / 1000.0),
                    "web": e.web.then_some(&web),
                    "shadow": shadow.as_ref().map(|sh| json!({
                        "sample_percent": sh["samplePercent"], "sampled": sh["sampled"], "dropped": sh["dropped"],
                        "compared": sh["profiles"]["wasm-scheduler"]["compared"],
                    })),
                })
            );
        }
        server.shutdown().await;
        Ok(())
    })
}
