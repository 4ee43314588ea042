//! `wasmsched bench --startup`: how long `wasmsched run` takes from its
//! start to a full cache (`/readyz` ok: every first list applied) and to
//! its first binding, and `wasmsched extender` to a full cache, against
//! the API server double holding `--nodes` nodes and `--pods` pods already
//! bound to them (and one pending pod of ours, the first to bind). Each is
//! a child process; its peak memory is read from /proc.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;
use wasmsched_apiserver_sim::{ApiServer, Config as SimConfig};
use wasmsched_core::fixture::Objects;
use wasmsched_core::synthetic;

/// Settings of a start-up run.
pub struct Startup {
    pub nodes: usize,
    pub pods: usize,
    pub seed: u64,
    pub json: bool,
}

/// What one process took to start.
#[derive(Debug, Default)]
struct Started {
    ready: Option<Duration>,
    first_binding: Option<Duration>,
    peak_rss_mb: Option<f64>,
}

/// The longest a start may take before the bench gives up.
const GIVE_UP: Duration = Duration::from_secs(300);

/// A child killed when dropped (the bench failing midway leaves none).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The cluster: `nodes` synthetic nodes, `pods` synthetic pods bound to
/// them in turn (requests made small, so that no node is overcommitted
/// and the pending pod finds room), and the pending pod
/// `bench/first-binding` for `wasm-scheduler`.
fn cluster(s: &Startup) -> anyhow::Result<Objects> {
    anyhow::ensure!(s.nodes > 0, "--startup needs at least one node");
    let nodes = synthetic::nodes(s.nodes, s.seed);
    let names: Vec<String> = nodes
        .iter()
        .map(|n| n.metadata.name.clone().unwrap_or_default())
        .collect();
    let mut pods = synthetic::pods(s.pods, "default-scheduler", s.seed);
    for (i, p) in pods.iter_mut().enumerate() {
        let spec = p.spec.as_mut().context("synthetic pod without a spec")?;
        spec.node_name = Some(names[i % names.len()].clone());
        for c in &mut spec.containers {
            c.resources = Some(serde_json::from_value(
                json!({"requests": {"cpu": "10m", "memory": "16Mi"}}),
            )?);
        }
        p.status = Some(serde_json::from_value(json!({"phase": "Running"}))?);
    }
    let first: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "first-binding", "namespace": "bench", "uid": "uid-first-binding"},
        "spec": {"schedulerName": "wasm-scheduler",
            "containers": [{"name": "main", "image": "nginx", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]},
        "status": {"phase": "Pending"}
    }))?;
    pods.push(first);
    Ok(Objects {
        nodes,
        pods,
        priority_classes: synthetic::priority_classes(),
        ..Default::default()
    })
}

/// Starts `args` (a subcommand of this binary) and polls its admin port
/// until it is ready and, with `first_binding`, until the pending pod is
/// bound.
async fn start(server: &ApiServer, args: &[&str], first_binding: bool) -> anyhow::Result<Started> {
    let admin = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.to_string();
    let config = std::env::temp_dir().join(format!("wasmsched-bench-startup-{}.yaml", std::process::id()));
    std::fs::write(
        &config,
        json!({"clientConnection": {"qps": 5000, "burst": 5000}}).to_string(),
    )?;
    let t0 = Instant::now();
    let child = Killed(
        Command::new(std::env::current_exe()?)
            .args(args)
            .args([
                "--master",
                &server.url(),
                "--admin-address",
                &admin,
                "--admin-plain-http",
            ])
            .arg("--config")
            .arg(&config)
            .env("WASMSCHED_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start wasmsched {}", args[0]))?,
    );
    let pid = child.0.id().to_string();
    let mut out = Started::default();
    while out.ready.is_none() || (first_binding && out.first_binding.is_none()) {
        anyhow::ensure!(
            t0.elapsed() < GIVE_UP,
            "wasmsched {} did not start within {GIVE_UP:?}",
            args[0]
        );
        if out.ready.is_none()
            && crate::bench_e2e::get(&admin, "/readyz")
                .await
                .is_some_and(|(s, _)| s == 200)
        {
            out.ready = Some(t0.elapsed());
        }
        if first_binding
            && out.first_binding.is_none()
            && server
                .get::<Pod>("bench", "first-binding")
                .and_then(|p| p.spec?.node_name)
                .is_some()
        {
            out.first_binding = Some(t0.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    out.peak_rss_mb = crate::bench::peak_rss_mb_of(&pid);
    let _ = std::fs::remove_file(&config);
    Ok(out)
}

fn ms(d: Option<Duration>) -> Option<f64> {
    d.map(|d| (d.as_secs_f64() * 1e4).round() / 10.0)
}

pub fn run(s: Startup) -> anyhow::Result<()> {
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async move {
        let objects = cluster(&s)?;
        let server = ApiServer::start("127.0.0.1:0".parse()?, SimConfig::default()).await?;
        server.load(&objects)?;
        drop(objects);
        let daemon = start(&server, &["run", "--identity", "bench"], true).await?;
        // The extender's cache, from the same cluster (the pod bound by now).
        let extender = start(&server, &["extender", "--listen", "127.0.0.1:0"], false).await?;
        println!("{} nodes, {} bound pods", s.nodes, s.pods);
        println!(
            "wasmsched run: full cache (/readyz ok) after {:.0} ms, first binding after {:.0} ms, peak RSS {:.0} MiB",
            ms(daemon.ready).unwrap_or_default(),
            ms(daemon.first_binding).unwrap_or_default(),
            daemon.peak_rss_mb.unwrap_or_default()
        );
        println!(
            "wasmsched extender: full cache (/readyz ok) after {:.0} ms, peak RSS {:.0} MiB",
            ms(extender.ready).unwrap_or_default(),
            extender.peak_rss_mb.unwrap_or_default()
        );
        if s.json {
            println!(
                "{}",
                json!({
                    "mode": "startup",
                    "nodes": s.nodes,
                    "pods": s.pods,
                    "daemon": {
                        "ready_ms": ms(daemon.ready),
                        "first_binding_ms": ms(daemon.first_binding),
                        "peak_rss_mb": daemon.peak_rss_mb.map(f64::round),
                    },
                    "extender": {
                        "ready_ms": ms(extender.ready),
                        "peak_rss_mb": extender.peak_rss_mb.map(f64::round),
                    },
                })
            );
        }
        Ok(())
    })
}
