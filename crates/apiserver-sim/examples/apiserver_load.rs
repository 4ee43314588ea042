//! Load on the API server double as the end-to-end benchmarks put it: a
//! scheduler's binding requests (kube-rs `create_subresource`, many in
//! flight) while three kube-rs watchers follow every pod change.
//!
//! ```sh
//! cargo run --release -p wasmsched-apiserver-sim --example apiserver_load -- [PODS] [NODES] [IN_FLIGHT]
//! ```
//!
//! Prints one JSON object: bindings/s, and whether each watcher saw every
//! binding.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};
use kube::runtime::watcher::{self, Event};
use wasmsched_apiserver_sim::{ApiServer, Config};
use wasmsched_core::fixture::Objects;
use wasmsched_core::synthetic;

const WATCHERS: usize = 3;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let arg = |i: usize, default: usize| std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let (n_pods, n_nodes, in_flight) = (arg(1, 20_000), arg(2, 500), arg(3, 64));
    let server = ApiServer::start("127.0.0.1:0".parse()?, Config::default()).await?;
    let objects = Objects {
        nodes: synthetic::nodes(n_nodes, 1),
        pods: synthetic::pods(n_pods, "wasm-scheduler", 1),
        priority_classes: synthetic::priority_classes(),
        ..Default::default()
    };
    server.load(&objects)?;
    let client = kube::Client::try_from(kube::Config::new(server.url().parse()?))?;

    // Three watchers, each counting the pods it has seen bound.
    let mut synced = Vec::new();
    let mut counters = Vec::new();
    for _ in 0..WATCHERS {
        let bound = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = tokio::sync::oneshot::channel();
        let api: Api<Pod> = Api::all(client.clone());
        let b = bound.clone();
        tokio::spawn(async move {
            let mut tx = Some(tx);
            let mut s = watcher::watcher(api, watcher::Config::default()).boxed();
            while let Some(e) = s.next().await {
                match e {
                    Ok(Event::InitDone) => {
                        if let Some(tx) = tx.take() {
                            let _ = tx.send(());
                        }
                    }
                    Ok(Event::Apply(p)) if p.spec.as_ref().is_some_and(|s| s.node_name.is_some()) => {
                        b.fetch_add(1, Ordering::Relaxed);
                    }
                    _ => {}
                }
            }
        });
        synced.push(rx);
        counters.push(bound);
    }
    for rx in synced {
        rx.await?;
    }

    let pods: Vec<(String, String)> = objects
        .pods
        .iter()
        .map(|p| (p.metadata.namespace.clone().unwrap(), p.metadata.name.clone().unwrap()))
        .collect();
    let start = Instant::now();
    let results: Vec<bool> = futures_util::stream::iter(pods.into_iter().enumerate())
        .map(|(i, (ns, name))| {
            let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
            let node = format!("node-{:05}", i % n_nodes);
            async move {
                let binding = Binding {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        ..Default::default()
                    },
                    target: ObjectReference {
                        kind: Some("Node".into()),
                        name: Some(node),
                        ..Default::default()
                    },
                };
                api.create_subresource::<_, serde_json::Value>("binding", &name, &PostParams::default(), &binding)
                    .await
                    .is_ok()
            }
        })
        .buffer_unordered(in_flight)
        .collect()
        .await;
    let bind_secs = start.elapsed().as_secs_f64();
    let ok = results.iter().filter(|r| **r).count();
    // Wait for the watchers to drain.
    let deadline = Instant::now() + Duration::from_secs(60);
    while counters.iter().any(|c| c.load(Ordering::Relaxed) < ok) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let all_secs = start.elapsed().as_secs_f64();
    let seen: Vec<usize> = counters.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    println!(
        "{}",
        serde_json::json!({
            "pods": n_pods,
            "in_flight": in_flight,
            "watchers": WATCHERS,
            "bindings_ok": ok,
            "bindings_per_sec": (ok as f64 / bind_secs).round(),
            "bind_secs": (bind_secs * 1000.0).round() / 1000.0,
            "watchers_done_secs": (all_secs * 1000.0).round() / 1000.0,
            "events_seen_per_watcher": seen,
        })
    );
    anyhow::ensure!(ok == n_pods, "{} bindings failed", n_pods - ok);
    anyhow::ensure!(seen.iter().all(|s| *s == ok), "a watcher missed bindings: {seen:?}");
    Ok(())
}
