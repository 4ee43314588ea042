//! `wasmsched bench --extender`: the extender (in this process, fed by the
//! API server double) answering kube-scheduler's `filter` and `prioritize`
//! over HTTP, as kube-scheduler calls it, in both modes: node names
//! (`nodeCacheCapable: true`) and whole nodes. Reports requests per second
//! and p50/p99 latency per verb, measured at the client (one keep-alive
//! connection, requests one after another, as kube-scheduler's one
//! scheduling thread makes them).
//!
//! Each request carries the nodes kube-scheduler would send: it calls its
//! extenders with the feasible nodes its own filters found, and stops
//! filtering at `numFeasibleNodesToFind` (all nodes below 100, 50% minus
//! 1% per 125 nodes above, at least 5% and 100: 230 of 500 nodes, 500 of
//! 5000; `--percentage` sets `percentageOfNodesToScore`, 100 sends every
//! node), starting where the previous pod's search stopped.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use wasmsched_apiserver_sim::{ApiServer, Config as SimConfig};
use wasmsched_core::fixture::Objects;
use wasmsched_core::synthetic;
use wasmsched_kube::extender::{ExtenderOptions, serve};

pub struct ExtenderBench {
    pub nodes: usize,
    /// kube-scheduler's `percentageOfNodesToScore` (0: adaptive).
    pub percentage: u32,
    pub pods: usize,
    pub seed: u64,
    pub json: bool,
    pub config: Option<PathBuf>,
    pub wasm: PathBuf,
}

/// One HTTP/1.1 connection, kept alive.
struct Conn {
    stream: BufReader<TcpStream>,
}

impl Conn {
    async fn open(addr: SocketAddr) -> anyhow::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream: BufReader::new(stream),
        })
    }

    /// POSTs `body` to `path`; the response body (status 200 required).
    async fn post(&mut self, path: &str, body: &[u8]) -> anyhow::Result<Vec<u8>> {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: extender\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        let s = self.stream.get_mut();
        s.write_all(head.as_bytes()).await?;
        s.write_all(body).await?;
        let mut line = String::new();
        self.stream.read_line(&mut line).await?;
        anyhow::ensure!(line.starts_with("HTTP/1.1 200"), "{path}: {}", line.trim());
        let mut len = 0usize;
        loop {
            line.clear();
            self.stream.read_line(&mut line).await?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                len = v.trim().parse()?;
            }
        }
        let mut out = vec![0; len];
        self.stream.read_exact(&mut out).await?;
        Ok(out)
    }
}

/// Latencies of one verb in one mode.
#[derive(Default)]
struct Verb {
    took: Vec<Duration>,
}

impl Verb {
    fn summary(&mut self) -> Value {
        self.took.sort_unstable();
        let total: f64 = self.took.iter().map(Duration::as_secs_f64).sum();
        json!({
            "requests": self.took.len(),
            "requests_per_second": if total > 0.0 { (self.took.len() as f64 / total).round() } else { 0.0 },
            "p50_ms": (crate::bench::percentile(&self.took, 0.50) * 1000.0).round() / 1000.0,
            "p99_ms": (crate::bench::percentile(&self.took, 0.99) * 1000.0).round() / 1000.0,
        })
    }
}

pub fn run(b: ExtenderBench) -> anyhow::Result<()> {
    let mut config = crate::load_config(b.config.as_deref())?;
    crate::plugin::refuse_shadow(&config, "bench --extender")?;
    let (registry, plugins) = crate::plugin::registry(
        &mut config,
        Some(&b.wasm),
        b.seed,
        crate::plugin::FirstScan::Now,
        wasmsched_wasm::Tiering::Off,
        &[],
    )?;
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async move {
        let nodes = synthetic::nodes(b.nodes, b.seed);
        let server = ApiServer::start("127.0.0.1:0".parse()?, SimConfig::default()).await?;
        server.load(&Objects {
            nodes: nodes.clone(),
            ..Default::default()
        })?;
        let client = kube::Client::try_from(kube::Config::new(server.url().parse()?))?;
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let running = serve(
            ExtenderOptions {
                config,
                registry,
                plugins,
                profile: None,
                builtins: false,
                listen: "127.0.0.1:0".parse()?,
                prefix: "/".into(),
                admin: None,
                max_request_bytes: wasmsched_kube::extender::DEFAULT_MAX_REQUEST_BYTES,
                max_in_flight: 8,
                bind: false,
                api_timeout: Duration::from_secs(10),
                tls: None,
                client_ca: None,
            },
            Some(client),
            stop_rx,
        )
        .await?;
        let names: Vec<String> = nodes
            .iter()
            .map(|n| n.metadata.name.clone().unwrap_or_default())
            .collect();
        let pods = synthetic::pods(b.pods, "default-scheduler", b.seed);
        let mut conn = Conn::open(running.addr).await?;
        // Ready when the cache knows every node.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let probe = json!({"Pod": pods[0], "NodeNames": names});
            let r: Value = serde_json::from_slice(&conn.post("/filter", &serde_json::to_vec(&probe)?).await?)?;
            if !r["FailedNodes"].to_string().contains("not in the extender's cache") {
                break;
            }
            anyhow::ensure!(Instant::now() < deadline, "the extender's cache never saw every node");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let sample = wasmsched_core::framework::num_feasible_nodes_to_find(b.percentage, nodes.len());
        let mut report = serde_json::Map::new();
        for mode in ["names", "nodes"] {
            let (mut filter, mut prioritize) = (Verb::default(), Verb::default());
            let mut start = 0;
            for pod in &pods {
                let pick: Vec<usize> = (0..sample).map(|k| (start + k) % nodes.len()).collect();
                start = (start + sample) % nodes.len();
                let body = match mode {
                    "names" => {
                        let names: Vec<&String> = pick.iter().map(|&i| &names[i]).collect();
                        json!({"Pod": pod, "NodeNames": names, "Nodes": null})
                    }
                    _ => {
                        let items: Vec<&k8s_openapi::api::core::v1::Node> = pick.iter().map(|&i| &nodes[i]).collect();
                        json!({"Pod": pod, "Nodes": {"items": items}, "NodeNames": null})
                    }
                };
                let body = serde_json::to_vec(&body)?;
                let t = Instant::now();
                let r = conn.post("/filter", &body).await?;
                filter.took.push(t.elapsed());
                let r: Value = serde_json::from_slice(&r)?;
                anyhow::ensure!(r["Error"] == "", "filter: {}", r["Error"]);
                let body = match mode {
                    "names" => json!({"Pod": pod, "NodeNames": r["NodeNames"], "Nodes": null}),
                    _ => json!({"Pod": pod, "Nodes": r["Nodes"], "NodeNames": null}),
                };
                let body = serde_json::to_vec(&body)?;
                let t = Instant::now();
                conn.post("/prioritize", &body).await?;
                prioritize.took.push(t.elapsed());
            }
            report.insert(
                mode.into(),
                json!({"filter": filter.summary(), "prioritize": prioritize.summary()}),
            );
        }
        let _ = stop_tx.send(true);
        let out = json!({
            "nodes": b.nodes,
            "nodes_per_request": sample,
            "pods": b.pods,
            "wasm": b.wasm,
            "modes": report,
        });
        if !b.json {
            println!(
                "extender, {} nodes ({sample} per request, as kube-scheduler samples them), {} pods (filter then prioritize each), one connection:",
                b.nodes, b.pods
            );
            for mode in ["names", "nodes"] {
                for verb in ["filter", "prioritize"] {
                    let v = &out["modes"][mode][verb];
                    println!(
                        "  {mode:<6} {verb:<10} {:>7} req/s  p50 {:>7.3} ms  p99 {:>7.3} ms",
                        v["requests_per_second"], v["p50_ms"].as_f64().unwrap_or(0.0), v["p99_ms"].as_f64().unwrap_or(0.0)
                    );
                }
            }
        }
        if b.json {
            println!("{}", serde_json::to_string(&out).context("report")?);
        }
        Ok(())
    })
}
