//! `wasmsched bench --first-load FILE`: how long a scheduler that starts
//! with an empty compiled cache (an `emptyDir`) takes before a plugin
//! serves. The daemon (`wasmsched run`, a child process) starts against the
//! API server double with a pending pod of a profile that enables the
//! plugin (failure policy `fail`, so the pod waits for it); the time is
//! from the daemon's start to the pod's binding. Three starts per file:
//! baseline code first (the default), Cranelift only, and a warm cache
//! (what any precompiled artifact would give: a load with no compile).

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::json;
use wasmsched_apiserver_sim::{ApiServer, Config as SimConfig};
use wasmsched_core::fixture::Objects;
use wasmsched_core::synthetic;
use wasmsched_wasm::{PluginHost, Tier, WasmConfig, WasmEngine};

/// Settings of a first-load run.
pub struct FirstLoad {
    pub files: Vec<PathBuf>,
    pub nodes: usize,
    pub seed: u64,
    pub json: bool,
}

/// What one start of the daemon took.
struct Start {
    /// From the start to the plugin loaded (compiled, instantiated,
    /// configured, in its profile's slot).
    loaded: Duration,
    /// From the start to the pod bound: the plugin served it.
    served: Duration,
    /// From the start to Cranelift's code serving, when it replaced
    /// baseline code.
    optimized: Option<Duration>,
}

pub fn run(b: FirstLoad) -> anyhow::Result<()> {
    anyhow::ensure!(!b.files.is_empty(), "--first-load needs a component file");
    let mut rows = Vec::new();
    for file in &b.files {
        let name = plugin_name(file)?;
        let work = std::env::temp_dir().join(format!("wasmsched-first-load-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&work);
        let plugins = work.join("plugins");
        std::fs::create_dir_all(&plugins)?;
        let file_name = file.file_name().context("--first-load takes a file")?;
        std::fs::copy(file, plugins.join(file_name)).with_context(|| format!("cannot copy {}", file.display()))?;
        let size_mib = std::fs::metadata(file)?.len() as f64 / f64::from(1 << 20);
        let start = |cache: &str, baseline_min_mib: Option<u64>, wait_optimized: bool| {
            daemon_start(&b, &name, &plugins, &work.join(cache), baseline_min_mib, wait_optimized)
        };
        let tiered = start("tiered", None, true)?;
        // Above any file's size: no baseline code.
        let cranelift = start("cranelift", Some(1 << 20), false)?;
        let warm = start("cranelift", None, false)?;
        let _ = std::fs::remove_dir_all(&work);
        let secs = |d: Duration| d.as_secs_f64();
        let round = |d: Duration| (secs(d) * 100.0).round() / 100.0;
        println!(
            "{} ({name}, {size_mib:.1} MiB), from the daemon's start:",
            file.display()
        );
        println!(
            "  fresh cache, baseline code first: loaded {:.2} s, pod bound {:.2} s; Cranelift's code from {}",
            secs(tiered.loaded),
            secs(tiered.served),
            tiered.optimized.map_or_else(
                || "(not this component's size)".to_owned(),
                |d| format!("{:.2} s", secs(d))
            )
        );
        println!(
            "  fresh cache, Cranelift only:      loaded {:.2} s, pod bound {:.2} s{}",
            secs(cranelift.loaded),
            secs(cranelift.served),
            if tiered.optimized.is_some() {
                format!(
                    " ({:.1}x the load with baseline code first)",
                    secs(cranelift.loaded) / secs(tiered.loaded)
                )
            } else {
                String::new()
            },
        );
        println!(
            "  warm cache (no compile):          loaded {:.2} s, pod bound {:.2} s",
            secs(warm.loaded),
            secs(warm.served),
        );
        rows.push(json!({
            "file": file.display().to_string(), "plugin": name, "mib": (size_mib * 10.0).round() / 10.0,
            "baseline_first": { "loaded_s": round(tiered.loaded), "bound_s": round(tiered.served), "optimized_s": tiered.optimized.map(round) },
            "cranelift_only": { "loaded_s": round(cranelift.loaded), "bound_s": round(cranelift.served) },
            "warm_cache": { "loaded_s": round(warm.loaded), "bound_s": round(warm.served) },
        }));
    }
    if b.json {
        println!("{}", json!({ "mode": "first-load", "files": rows }));
    }
    Ok(())
}

/// The name the component's metadata reports (loaded here on baseline
/// code, with no cache: this is not measured).
fn plugin_name(file: &Path) -> anyhow::Result<String> {
    let engine = WasmEngine::new(None).context("cannot start the WebAssembly engine")?;
    let host = PluginHost::new(engine, WasmConfig::default(), 1);
    let tier = if host.engine().has_baseline() {
        Tier::Baseline
    } else {
        Tier::Optimized
    };
    let loaded = host
        .load_file_with(file, "{}", tier)
        .map_err(|e| anyhow::anyhow!("{} rejected: {e}", file.display()))?;
    Ok(loaded.name.clone())
}

/// Starts the daemon with the plugin directory `plugins` and the compiled
/// cache `cache`, and times it until the pending pod is bound (and, with
/// `wait_optimized`, until Cranelift's code serves).
fn daemon_start(
    b: &FirstLoad,
    plugin: &str,
    plugins: &Path,
    cache: &Path,
    baseline_min_mib: Option<u64>,
    wait_optimized: bool,
) -> anyhow::Result<Start> {
    let config = cache.with_extension("yaml");
    let mut wasm = json!({ "directory": plugins, "cacheDirectory": cache });
    if let Some(m) = baseline_min_mib {
        wasm["baselineMinMib"] = json!(m);
    }
    let cfg = json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{
            "schedulerName": "wasm-scheduler",
            "plugins": { "multiPoint": { "enabled": [{ "name": plugin }] } },
        }],
        "wasmPlugins": wasm,
    });
    std::fs::write(&config, serde_json::to_vec_pretty(&cfg)?)?;
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async move {
        let server = ApiServer::start("127.0.0.1:0".parse()?, SimConfig::default()).await?;
        let mut pods = synthetic::pods(1, "wasm-scheduler", b.seed);
        let pod = pods.pop().context("no pod")?;
        let (ns, name) = (
            pod.metadata.namespace.clone().unwrap_or_else(|| "default".into()),
            pod.metadata.name.clone().unwrap_or_default(),
        );
        server.load(&Objects {
            nodes: synthetic::nodes(b.nodes, b.seed),
            pods: vec![pod],
            priority_classes: synthetic::priority_classes(),
            ..Default::default()
        })?;
        let started = Instant::now();
        let mut child = Command::new(std::env::current_exe()?)
            .args([
                "run",
                "--master",
                &server.url(),
                "--identity",
                "bench",
                "--admin-address",
                "127.0.0.1:0",
                "--admin-plain-http",
            ])
            .arg("--config")
            .arg(&config)
            .env("WASMSCHED_LOG", "info")
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot start the daemon")?;
        // The daemon says when the plugin loaded, and when Cranelift's
        // code replaced the baseline code.
        let (loaded_tx, loaded_rx) = std::sync::mpsc::channel();
        let (optimized_tx, optimized_rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().context("piped")?;
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("plugin loaded") {
                    let _ = loaded_tx.send(Instant::now());
                } else if line.contains("plugin optimised") {
                    let _ = optimized_tx.send(Instant::now());
                }
            }
        });
        let deadline = started + Duration::from_secs(180);
        let served = loop {
            let bound = server
                .get::<k8s_openapi::api::core::v1::Pod>(&ns, &name)
                .and_then(|p| p.spec?.node_name)
                .is_some();
            if bound {
                break started.elapsed();
            }
            if Instant::now() > deadline || child.try_wait()?.is_some() {
                let _ = child.kill();
                anyhow::bail!("the pod was not bound: did the plugin {plugin} load and accept it?");
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        let loaded = loaded_rx
            .recv_timeout(Duration::from_secs(5))
            .map(|t| t.saturating_duration_since(started))
            .context("the daemon did not log the plugin loaded")?;
        let optimized = if wait_optimized {
            let left = deadline.saturating_duration_since(Instant::now());
            optimized_rx
                .recv_timeout(left)
                .ok()
                .map(|t| t.saturating_duration_since(started))
        } else {
            None
        };
        let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
        let _ = child.wait();
        server.shutdown().await;
        Ok(Start {
            loaded,
            served,
            optimized,
        })
    })
}
