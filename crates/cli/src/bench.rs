//! `wasmsched bench`: schedules a synthetic cluster in memory through the
//! real framework and reports throughput, latency and memory.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::json;
use wasmsched_core::scheduler::{Responsibility, Scheduler};
use wasmsched_core::synthetic;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Nodes in the synthetic cluster.
    #[arg(long, default_value_t = 5000)]
    nodes: usize,
    /// Pods to schedule (and measure).
    #[arg(long, default_value_t = 10000)]
    pods: usize,
    /// Kind of pods (scheduler_perf's workloads of the same names).
    #[arg(long, default_value = "plain", value_parser = parse_workload)]
    workload: synthetic::Workload,
    /// Pods of the workload scheduled first, unmeasured (scheduler_perf's
    /// `initPods`): the cluster the measured pods meet.
    #[arg(long, default_value_t = 0)]
    init_pods: usize,
    /// percentageOfNodesToScore (0 = kube-scheduler's adaptive default).
    #[arg(long)]
    percentage: Option<u32>,
    /// Worker threads for filtering and scoring (default: the machine's
    /// cores); with --e2e, the daemon's `parallelism`.
    #[arg(long)]
    parallelism: Option<usize>,
    /// Scheduler configuration to use instead of the defaults.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Seed of the synthetic cluster and of tie-breaking.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one JSON object on the last line of stdout.
    #[arg(long)]
    json: bool,
    /// End to end: run the daemon (`wasmsched run`, a child process) against
    /// the API server double (or a cluster: --master, --kubeconfig) and
    /// measure create→bound.
    #[arg(long)]
    e2e: bool,
    /// With --e2e: pods created per second (0: all at once).
    #[arg(long, default_value_t = 0)]
    rate: u32,
    /// With --e2e: run on this API server instead of the double (e.g.
    /// `kubectl proxy`'s http://127.0.0.1:8001; with --kubeconfig, its
    /// credentials at this URL). The bench makes fake nodes and its pods in
    /// a namespace of its own, and removes them at the end.
    #[arg(long, value_name = "URL", requires = "e2e")]
    master: Option<String>,
    /// With --e2e: run on the cluster of this kubeconfig instead of the
    /// double (see --master).
    #[arg(long, value_name = "FILE", requires = "e2e")]
    kubeconfig: Option<PathBuf>,
    /// With --e2e: bind each pod to the next node in turn, without a
    /// scheduling cycle, everything else as usual (the same client,
    /// watchers, events and conditions): the API server's limit for this
    /// client, to read a real run as a fraction of.
    #[arg(long, requires = "e2e")]
    null: bool,
    /// Keep the web view open during the run: with --e2e, fetched every
    /// 2 s as the page does, and its first load measured at the end;
    /// without, the scheduler lists every attempt and keeps a sample to
    /// explain, as it does while the page is open.
    #[arg(long)]
    web: bool,
    /// With --e2e --web: requests a second on the web view instead of the
    /// page's one every 2 s, spread over the cluster, queue and decision
    /// views (the decisions of pods just created), as many viewers or a
    /// hostile client would make them.
    #[arg(long, requires = "web", value_name = "N")]
    web_rate: Option<u32>,
    /// Directory of WebAssembly plugins to add to the run (enabled in the
    /// profile unless the configuration mentions them).
    #[arg(long, value_name = "DIR")]
    wasm: Option<PathBuf>,
    /// Run the plugins of --wasm on baseline code (Winch) instead of
    /// Cranelift's: what calls cost while a big component's optimised code
    /// is being compiled.
    #[arg(long, requires = "wasm")]
    baseline_code: bool,
    /// Directory of shadow versions of plugins of --wasm (as
    /// `wasmPlugins.shadow.directory`): each decides a sample of the cycles
    /// again on its own thread, compared with serving's decision.
    #[arg(long, value_name = "DIR", requires = "wasm")]
    shadow: Option<PathBuf>,
    /// Percent of the cycles the shadow decides again (with --shadow).
    #[arg(long, value_name = "PERCENT", requires = "shadow")]
    shadow_percent: Option<u32>,
    /// Live metric sources with a value per node (seeded, uniform in
    /// 0..1), for plugins of --wasm that read them (NAME, repeatable or
    /// comma-separated, e.g. `latency` or `cpu,memory`).
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    synthetic_metrics: Vec<String>,
    /// The extender (`wasmsched extender`, fed by the API server double)
    /// answering `--pods` filter and prioritize requests over all nodes,
    /// with node names and with whole nodes; needs `--wasm DIR`.
    #[arg(long, conflicts_with = "e2e")]
    extender: bool,
    /// How long the daemon, started with an empty compiled cache, takes
    /// before this plugin component serves (a pending pod of a profile
    /// that enables it is bound): baseline code first, Cranelift only, and
    /// with a warm cache (repeatable).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["e2e", "extender"])]
    first_load: Vec<PathBuf>,
    /// How long `wasmsched run` takes from its start to a full cache and
    /// to its first binding, and `wasmsched extender` to a full cache,
    /// with --nodes nodes and --pods pods already bound to them (the API
    /// server double, children of the bench).
    #[arg(long, conflicts_with_all = ["e2e", "extender", "first_load"])]
    startup: bool,
}

fn parse_workload(s: &str) -> Result<synthetic::Workload, String> {
    synthetic::Workload::ALL
        .iter()
        .find(|(n, _)| *n == s)
        .map(|(_, w)| *w)
        .ok_or_else(|| {
            let names: Vec<&str> = synthetic::Workload::ALL.iter().map(|(n, _)| *n).collect();
            format!("unknown workload {s:?} (one of: {})", names.join(", "))
        })
}

/// Peak resident memory of this process in MiB (Linux `VmHWM`).
pub fn peak_rss_mb() -> Option<f64> {
    peak_rss_mb_of("self")
}

/// Peak resident memory of process `pid` (or `self`) in MiB.
pub fn peak_rss_mb_of(pid: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// CPU time the threads of process `pid` (or `self`) have used, in seconds
/// (the sum of each live thread's time on a CPU, from
/// `/proc/PID/task/*/schedstat`).
pub fn cpu_seconds_of(pid: &str) -> Option<f64> {
    let mut ns = 0u64;
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
        let stat = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
        ns += stat
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Some(ns as f64 / 1e9)
}

/// The `p` quantile (0..=1) of `sorted`, in milliseconds (0 when empty):
/// the smallest value with at least a share `p` of the values at or below it.
pub(crate) fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1000.0
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if args.startup {
        return crate::bench_startup::run(crate::bench_startup::Startup {
            nodes: args.nodes,
            pods: args.pods,
            seed: args.seed,
            json: args.json,
        });
    }
    if !args.first_load.is_empty() {
        return crate::bench_first_load::run(crate::bench_first_load::FirstLoad {
            files: args.first_load,
            nodes: args.nodes,
            seed: args.seed,
            json: args.json,
        });
    }
    if args.extender {
        let Some(wasm) = args.wasm else {
            anyhow::bail!("--extender runs WebAssembly plugins: give their directory with --wasm DIR");
        };
        return crate::bench_extender::run(crate::bench_extender::ExtenderBench {
            nodes: args.nodes,
            percentage: args.percentage.unwrap_or(0).min(100),
            pods: args.pods,
            seed: args.seed,
            json: args.json,
            config: args.config,
            wasm,
        });
    }
    if args.e2e && args.workload != synthetic::Workload::Plain {
        let name = synthetic::Workload::ALL
            .iter()
            .find(|(_, w)| *w == args.workload)
            .map_or("", |(n, _)| *n);
        anyhow::bail!("--workload {name}: --e2e creates the plain workload's pods only");
    }
    if args.e2e {
        return crate::bench_e2e::run(crate::bench_e2e::E2e {
            nodes: args.nodes,
            pods: args.pods,
            rate: args.rate,
            seed: args.seed,
            json: args.json,
            null: args.null,
            wasm: args.wasm,
            shadow: args.shadow,
            shadow_percent: args
                .shadow_percent
                .unwrap_or(wasmsched_wasm::DEFAULT_SHADOW_SAMPLE_PERCENT),
            web: args.web,
            web_rate: args.web_rate,
            parallelism: args.parallelism,
            cluster: (args.master.is_some() || args.kubeconfig.is_some()).then_some(crate::bench_e2e::Target {
                kubeconfig: args.kubeconfig,
                master: args.master,
            }),
        });
    }
    let mut config = crate::load_config(args.config.as_deref())?;
    if let Some(p) = args.percentage {
        anyhow::ensure!(p <= 100, "--percentage must be in 0..=100");
        config.percentage_of_nodes_to_score = Some(i64::from(p));
        for prof in &mut config.profiles {
            prof.percentage_of_nodes_to_score = None;
        }
    }
    if let Some(p) = args.parallelism {
        anyhow::ensure!(p > 0, "--parallelism must be at least 1");
        config.parallelism = Some(p as i64);
    }
    let profile = config.profiles[0].scheduler_name.clone();
    if let Some(dir) = &args.shadow {
        let wasm = config.wasm_plugins.get_or_insert_with(|| json!({}));
        anyhow::ensure!(wasm.is_object(), "wasmPlugins: must be a mapping");
        wasm["shadow"] = json!({
            "directory": dir,
            "samplePercent": args.shadow_percent.unwrap_or(wasmsched_wasm::DEFAULT_SHADOW_SAMPLE_PERCENT),
        });
    }
    let (registry, plugins) = crate::plugin::registry(
        &mut config,
        args.wasm.as_deref(),
        args.seed,
        crate::plugin::FirstScan::Now,
        if args.baseline_code {
            wasmsched_wasm::Tiering::BaselineOnly
        } else {
            wasmsched_wasm::Tiering::Off
        },
        &args.synthetic_metrics,
    )?;
    let wasm_plugins: Vec<String> = plugins.as_ref().map(|h| h.names()).unwrap_or_default();
    let mut sched =
        Scheduler::new(&config, &registry, args.seed, Responsibility::OwnProfiles).context("invalid configuration")?;
    let shadow = match &plugins {
        Some(h) => crate::plugin::shadow(h, args.seed, wasmsched_wasm::Tiering::Off)?,
        None => None,
    };
    let shadow = match shadow {
        Some(opts) => {
            for (file, why) in opts.host.scan().rejected {
                eprintln!("warning: shadow plugin {file} rejected: {why}");
            }
            Some(wasmsched_kube::shadow::Shadow::start(
                opts,
                registry.clone(),
                config.clone(),
                &mut sched,
            )?)
        }
        None => None,
    };

    // The web view open: attempts listed and sampled as the daemon does.
    let web = args.web.then(|| {
        let status = std::sync::Arc::new(wasmsched_kube::Status::new(plugins.clone()));
        status.web.set_frameworks(sched.frameworks().to_vec());
        sched.set_shadow(Box::new(wasmsched_kube::web::DecisionTap::new(status.clone())), 100);
        status
    });

    let setup = Instant::now();
    let now = Instant::now();
    // The cache keeps its own copy of each node: each of the bench's is
    // dropped once read, or it would count in the peak RSS reported
    // (about 1.5 KB a node).
    let nodes = args.workload.nodes(args.nodes, args.seed);
    let names: Vec<String> = nodes
        .iter()
        .map(|n| n.metadata.name.clone().unwrap_or_default())
        .collect();
    for n in nodes {
        sched.on_node(&n, now)?;
    }
    for o in synthetic::workload_objects(args.workload, args.nodes) {
        sched.on_storage(&o, now)?;
    }
    for g in synthetic::workload_pod_groups(args.workload, args.init_pods + args.pods) {
        sched.on_pod_group(&g, now)?;
    }
    let at_ms = wasmsched_wasm::unix_ms();
    for (i, source) in args.synthetic_metrics.iter().enumerate() {
        let mut rng = wasmsched_core::rng::Rng::new(args.seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9));
        let series: Vec<wasmsched_core::metrics::Series> = names
            .iter()
            .map(|n| wasmsched_core::metrics::Series {
                node: n.clone(),
                value: rng.below(1_000_000) as f64 / 1e6,
                at_ms,
                since: Default::default(),
            })
            .collect();
        sched.on_metrics(source, &series, now);
    }
    drop(names);
    // The initial pods are scheduled first, unmeasured.
    for c in synthetic::workload_claims(args.workload, 0, args.init_pods + args.pods) {
        sched.on_storage(&c, now)?;
    }
    for p in synthetic::workload_stream(args.workload, 0, args.init_pods, &profile, args.seed) {
        sched.on_pod(&p, now)?;
    }
    let init_scheduled = sched.with_pool(|sched| {
        let mut n = 0;
        while let Some(a) = sched.schedule_one(now, false) {
            if a.result.is_ok() {
                sched.binding_finished(&a.pod.key, &a.pod.uid, true, now);
                n += 1;
            }
        }
        n
    });
    for p in synthetic::workload_stream(args.workload, args.init_pods, args.pods, &profile, args.seed) {
        sched.on_pod(&p, now)?;
    }
    let setup = setup.elapsed();

    let mut latencies = Vec::with_capacity(args.pods);
    let (mut scheduled, mut unschedulable, mut preemptions) = (0usize, 0usize, 0usize);
    let start = Instant::now();
    let mut held: Vec<(String, String)> = Vec::new();
    let mut permits = std::collections::HashMap::new();
    sched.with_pool(|sched| {
        // Victims go at once; the preemptors they make room for wait out
        // their backoff on a clock that jumps (nothing sleeps). Pods a
        // Permit plugin holds are bound once it allows them, as a binding
        // cycle would; the scheduling thread does not wait for them.
        let mut clock = now;
        let mut preempted = false;
        let mut group_cycle: Option<(String, std::time::Duration)> = None;
        loop {
            let t = Instant::now();
            let Some(a) = sched.schedule_one(clock, false) else {
                match sched.queue.next_backoff_expiry() {
                    Some(e) if preempted => {
                        clock = clock.max(e);
                        preempted = false;
                        continue;
                    }
                    _ => break,
                }
            };
            // A group's pods are decided in one cycle, whose first call
            // returns the first of them: each waited for the whole cycle.
            let took = match (&a.pod.scheduling_group, &a.pod_group) {
                (Some(g), Some(_)) => {
                    group_cycle = Some((format!("{}/{g}", a.pod.namespace), t.elapsed()));
                    t.elapsed()
                }
                (Some(g), None) => match &group_cycle {
                    Some((k, d)) if *k == format!("{}/{g}", a.pod.namespace) => *d,
                    _ => t.elapsed(),
                },
                _ => t.elapsed(),
            };
            latencies.push(took);
            if let Some(status) = &web {
                // The page asks every two seconds; this keeps it "open".
                if latencies.len() % 1000 == 1 {
                    status.web.ask();
                }
                status.web.list_attempt(&a);
            }
            if let Some(n) = a.nomination() {
                for v in &n.victims {
                    sched.on_pod_deleted(&v.key, &v.uid, clock);
                }
                preemptions += 1;
                preempted = true;
            }
            match a.result {
                // Counted once its plugins allow or reject it.
                Ok(r) if r.waiting => held.push((a.pod.key.clone(), a.pod.uid.clone())),
                Ok(_) => {
                    sched.binding_finished(&a.pod.key, &a.pod.uid, true, clock);
                    scheduled += 1;
                }
                Err(_) => unschedulable += 1,
            }
            if !held.is_empty() {
                crate::simulate::settle_permits(sched, &mut held, &mut permits, clock);
            }
        }
    });
    let elapsed = start.elapsed();
    // Pods held at Permit and then allowed are scheduled; those rejected
    // or still held at the end are not.
    for outcome in permits.values() {
        match outcome {
            Ok(()) => scheduled += 1,
            Err(_) => unschedulable += 1,
        }
    }
    unschedulable += held.len();
    // What the shadow compared, once it has taken what it was handed.
    let shadow = shadow.map(|sh| {
        drop(sched.set_shadow_off());
        sh.wait_idle(std::time::Duration::from_secs(60));
        sh.json()
    });
    let over = sched.cache.overcommitted_nodes();
    anyhow::ensure!(over.is_empty(), "nodes overcommitted: {over:?}");
    latencies.sort_unstable();
    let pods_per_sec = latencies.len() as f64 / elapsed.as_secs_f64();
    let (p50, p99) = (percentile(&latencies, 0.50), percentile(&latencies, 0.99));
    let rss = peak_rss_mb().unwrap_or(0.0);
    let pct = config.percentage_of_nodes_to_score.unwrap_or(0);
    println!(
        "{} nodes, {} pods, percentageOfNodesToScore {}, parallelism {}",
        args.nodes,
        args.pods,
        if pct == 0 {
            "adaptive".to_owned()
        } else {
            pct.to_string()
        },
        config.parallelism()
    );
    let workload = synthetic::Workload::ALL
        .iter()
        .find(|(_, w)| *w == args.workload)
        .map_or("plain", |(n, _)| n);
    println!(
        "workload {workload}, {init_scheduled} of {} initial pods placed",
        args.init_pods
    );
    println!(
        "setup (parse nodes and pods, schedule the initial ones, fill cache and queue): {:.2} s",
        setup.as_secs_f64()
    );
    println!(
        "scheduled {scheduled}, unschedulable {unschedulable} in {:.3} s",
        elapsed.as_secs_f64()
    );
    if !wasm_plugins.is_empty() {
        println!(
            "WebAssembly plugins: {} ({} code)",
            wasm_plugins.join(", "),
            if args.baseline_code { "baseline" } else { "Cranelift's" }
        );
    }
    println!("{pods_per_sec:.0} pods/s, per-pod latency p50 {p50:.3} ms, p99 {p99:.3} ms, peak RSS {rss:.0} MiB");
    if let Some(sh) = &shadow {
        let p = &sh["profiles"][&profile];
        println!(
            "shadow at {}%: {} cycles handed over, {} dropped (the shadow was behind), {} compared, agreement {}",
            sh["samplePercent"],
            sh["sampled"],
            sh["dropped"],
            p["compared"],
            p["agreement"].as_f64().map_or("-".to_owned(), |a| format!("{:.3}", a))
        );
    }
    let web = web.map(|status| {
        drop(sched.set_shadow_off());
        status.web.recorded()
    });
    if let Some((listed, kept)) = web {
        println!("web view open: the last {listed} attempts listed, {kept} kept to explain");
    }
    let preemptions_per_sec = preemptions as f64 / elapsed.as_secs_f64();
    if preemptions > 0 {
        println!(
            "{preemptions} preemptions, {preemptions_per_sec:.0} per second ({:.0} pods bound per second)",
            scheduled as f64 / elapsed.as_secs_f64()
        );
    }
    if args.json {
        println!(
            "{}",
            json!({
                "nodes": args.nodes,
                "pods": args.pods,
                "workload": workload,
                "init_pods": args.init_pods,
                "scheduled": scheduled,
                "unschedulable": unschedulable,
                "percentage": pct,
                "parallelism": config.parallelism(),
                "pods_per_sec": (pods_per_sec * 10.0).round() / 10.0,
                "p50_ms": (p50 * 1000.0).round() / 1000.0,
                "p99_ms": (p99 * 1000.0).round() / 1000.0,
                "peak_rss_mb": rss.round(),
                "wasm_plugins": wasm_plugins,
                "metric_sources": args.synthetic_metrics,
                "preemptions": preemptions,
                "preemptions_per_sec": (preemptions_per_sec * 10.0).round() / 10.0,
                "shadow": shadow.as_ref().map(|sh| json!({
                    "sample_percent": sh["samplePercent"],
                    "sampled": sh["sampled"],
                    "dropped": sh["dropped"],
                    "compared": sh["profiles"][&profile]["compared"],
                    "agreement": sh["profiles"][&profile]["agreement"],
                    "results": sh["profiles"][&profile]["results"],
                    "disagreements": sh["disagreements"],
                })),
                "web": web.map(|(listed, kept)| json!({"listed": listed, "kept": kept})),
            })
        );
    }
    Ok(())
}
