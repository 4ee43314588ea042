//! `wasmsched simulate`: schedules the pending pods of a cluster snapshot
//! through the real framework, offline, and prints where each went and why.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::ValueEnum;
use serde_json::{Value, json};
use wasmsched_core::config::Config;
use wasmsched_core::fixture::{Objects, parse_objects};
use wasmsched_core::framework::{Explanation, PreemptionTry, ScheduleError};
use wasmsched_core::plugins::Registry;
use wasmsched_core::scheduler::{Responsibility, Scheduler};
use wasmsched_kube::web::devices_of;

/// The bundled example cluster.
pub const EXAMPLE_CLUSTER: &str = include_str!("../data/example-cluster.yaml");

/// The cluster a command places pods in: a snapshot, and more pods.
#[derive(Debug, clap::Args)]
pub(crate) struct ClusterArgs {
    /// Nodes and pods (YAML or JSON, multi-document or a List, as `kubectl get
    /// nodes,pods -o yaml` prints). Bound pods count as usage; unbound pods are
    /// placed. Default: the bundled example cluster.
    #[arg(long)]
    cluster: Option<PathBuf>,
    /// More pods to place (repeatable).
    #[arg(long)]
    pods: Vec<PathBuf>,
}

impl ClusterArgs {
    /// The snapshot's objects (default: the bundled example) and the pods
    /// of `--pods`.
    pub(crate) fn read(&self) -> anyhow::Result<Objects> {
        let mut objs = match &self.cluster {
            Some(p) => {
                parse_objects(&crate::read_file(p)?).with_context(|| format!("cannot read cluster {}", p.display()))?
            }
            None => parse_objects(EXAMPLE_CLUSTER).context("the bundled example cluster is invalid")?,
        };
        for p in &self.pods {
            let more: Objects =
                parse_objects(&crate::read_file(p)?).with_context(|| format!("cannot read pods {}", p.display()))?;
            objs.extend(more);
        }
        for i in &objs.ignored {
            tracing::warn!(object = %i, "ignoring an object of a kind the scheduler does not read");
        }
        Ok(objs)
    }
}

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Scheduler configuration (KubeSchedulerConfiguration YAML).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Table)]
    output: Output,
    /// Show every plugin's verdict and score per node for this pod (NAMESPACE/NAME; repeatable).
    #[arg(long, value_name = "NS/POD")]
    explain: Vec<String>,
    /// Also write the outcome as a self-contained web page: the cluster
    /// after placement, the pods left pending and why, every attempt (the
    /// pods of --explain, or else the first 50 attempted, with each
    /// plugin's score per node) and the plugins; it opens offline.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Seed for breaking ties between equally scored nodes (and for plugins' random numbers).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Directory of WebAssembly plugins to run beside the built-ins; those the
    /// configuration does not mention are enabled in every profile.
    #[arg(long, value_name = "DIR")]
    plugins: Option<PathBuf>,
    /// Score weight of a plugin (NAME=WEIGHT, repeatable): a plugin of
    /// --plugins is enabled at weight 1, which the built-ins' sum can drown.
    #[arg(long, value_name = "NAME=WEIGHT", value_parser = parse_weight)]
    plugin_weight: Vec<(String, i64)>,
    /// Print the cluster's nodes (zone, capacity, taints, labels, pods
    /// bound) and pending pods instead of placing anything.
    #[arg(long)]
    print_cluster: bool,
    /// Live metric values per node for plugins that read metric sources
    /// (JSON `{"sources": {"NAME": {"NODE": VALUE}}}`, or Prometheus text
    /// with the source as the metric name and a `node` or `instance` label).
    #[arg(long, value_name = "FILE")]
    metrics: Option<PathBuf>,
}

fn parse_weight(s: &str) -> Result<(String, i64), String> {
    let (name, w) = s.split_once('=').ok_or("expected NAME=WEIGHT, e.g. node-price=5")?;
    let w: i64 = w.parse().map_err(|_| format!("{w:?} is not a whole number"))?;
    if !(1..=100).contains(&w) {
        return Err(format!(
            "the weight of {name} must be from 1 to 100 (kube-scheduler's range), not {w}"
        ));
    }
    Ok((name.to_owned(), w))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Output {
    Table,
    Json,
}

/// One pod's outcome.
pub(crate) struct Row {
    pub(crate) pod: String,
    /// The profile that attempted it (none: not attempted).
    profile: String,
    pub(crate) node: Option<String>,
    pub(crate) reason: String,
    score: Option<i64>,
    feasible: usize,
    evaluated: usize,
    pub(crate) explanation: Option<Explanation>,
    /// Not attempted: waiting for its scheduling gates.
    gated: bool,
    /// The pods its preemption evicted, and the node they were on.
    preempted: Option<(String, Vec<String>)>,
    /// The victim search of its preemption (when explained).
    search: Vec<PreemptionTry>,
    /// Evicted by this preemptor's preemption.
    preempted_by: Option<String>,
    /// The devices its claims were allocated, as
    /// `claim: request=driver/pool/device`.
    pub(crate) devices: Vec<String>,
    /// Its PodGroup (`namespace/name`), if it names one.
    pub(crate) group: Option<String>,
    /// Its PodGroup's last cycle, as `--explain` prints it.
    group_cycle: Option<String>,
}

impl Row {
    fn new(pod: String, reason: String) -> Self {
        Row {
            pod,
            profile: String::new(),
            node: None,
            reason,
            score: None,
            feasible: 0,
            evaluated: 0,
            explanation: None,
            gated: false,
            preempted: None,
            search: Vec::new(),
            preempted_by: None,
            devices: Vec::new(),
            group: None,
            group_cycle: None,
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let objs = args.cluster.read()?;
    if args.print_cluster {
        return print_cluster(&mut std::io::stdout().lock(), &objs);
    }
    let mut config = crate::load_config(args.config.as_deref())?;
    let explain = Explain {
        first: if args.html.is_some() && args.explain.is_empty() {
            wasmsched_kube::web::DECISIONS_KEPT
        } else {
            0
        },
        pods: args.explain.iter().cloned().collect(),
    };
    let config_name = args
        .config
        .as_ref()
        .map_or("the default configuration".to_owned(), |p| p.display().to_string());
    crate::plugin::refuse_shadow(&config, "simulate")?;
    let metrics = args.metrics.as_deref().map(crate::read_metrics).transpose()?;
    let (registry, plugins) = crate::plugin::registry(
        &mut config,
        args.plugins.as_deref(),
        args.seed,
        crate::plugin::FirstScan::Now,
        wasmsched_wasm::Tiering::Off,
        &metrics.as_ref().map(crate::Metrics::names).unwrap_or_default(),
    )?;
    for (name, w) in &args.plugin_weight {
        if !config.set_weight(name, *w) {
            bail!("--plugin-weight {name}={w}: no profile enables {name} at multiPoint or score");
        }
    }
    if plugins.is_some() {
        eprintln!("{}", score_weights(&config, &registry)?);
    }
    let Simulation {
        rows,
        groups,
        sched,
        timings,
    } = simulate(
        &config,
        &registry,
        &config_name,
        &objs,
        metrics.as_ref(),
        args.seed,
        &explain,
    )?;
    if let Some(host) = &plugins {
        let mut seen = BTreeSet::new();
        for s in host.slots() {
            if let Some(why) = s.not_loaded()
                && seen.insert(why.clone())
            {
                let effect = match s.failure_policy() {
                    wasmsched_wasm::FailurePolicy::Fail => "the pods of the profiles that enable it are not placed",
                    wasmsched_wasm::FailurePolicy::Ignore => "skipped (failurePolicy ignore)",
                };
                eprintln!("warning: {why}; {effect}");
            }
        }
    }
    for e in &explain.pods {
        if !rows.iter().any(|r| &r.pod == e) {
            bail!("--explain {e}: no pending pod of that name (use NAMESPACE/NAME)");
        }
    }
    if let Some(file) = &args.html {
        let page = report(&rows, &sched, &timings, plugins.as_deref());
        std::fs::write(file, page).with_context(|| format!("--html: cannot write {}", file.display()))?;
        eprintln!("wrote {} (open it in a browser)", file.display());
    }
    let mut out = std::io::stdout().lock();
    match args.output {
        Output::Table => {
            print_table(&mut out, &rows, objs.nodes.len())?;
            print_groups(&mut out, &groups)?;
        }
        Output::Json => {
            let mut v = to_json(&rows);
            v["podGroups"] = groups_json(&groups);
            writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?
        }
    }
    Ok(())
}

/// The web view of a simulation (`--html`): the cluster after it, what is
/// left pending and why, every attempt (the explained ones decided as they
/// were), and the plugins with the timings of the sampled cycles.
fn report(
    rows: &[Row],
    sched: &Scheduler,
    timings: &wasmsched_kube::metrics::Metrics,
    host: Option<&wasmsched_wasm::PluginHost>,
) -> String {
    use wasmsched_core::framework::CycleOutcome;
    use wasmsched_kube::web;
    let mut notes = web::Notes::default();
    let outcome = |r: &Row| match &r.node {
        Some(n) => CycleOutcome::Placed(n.clone()),
        None => CycleOutcome::Unschedulable(r.reason.clone()),
    };
    let mut attempts = Vec::new();
    let mut decided = Vec::new();
    for r in rows.iter().filter(|r| !r.profile.is_empty()) {
        if r.node.is_none() {
            notes.reasons.insert(r.pod.clone(), r.reason.clone());
        }
        if let Some((_, victims)) = &r.preempted {
            notes.victims.insert(r.pod.clone(), victims.clone());
        }
        attempts.push(web::Attempt {
            at: None,
            pod: r.pod.clone(),
            profile: r.profile.clone(),
            outcome: outcome(r),
            explained: r.explanation.is_some(),
            held: false,
        });
        if let Some(x) = &r.explanation {
            decided.push(web::Decision {
                at: String::new(),
                pod: r.pod.clone(),
                profile: r.profile.clone(),
                decided: outcome(r),
                again: outcome(r),
                explanation: x.clone(),
                devices: r.devices.clone(),
                now: None,
            });
        }
    }
    let view = web::build(sched, &notes, Instant::now());
    let plugins = web::plugins(host, None, &timings.plugin_latencies());
    web::report(&view, &attempts, &decided, plugins).into_string()
}

/// Which attempts keep their explanation.
#[derive(Debug, Default)]
pub(crate) struct Explain {
    /// The pods named (`NAMESPACE/NAME`).
    pub(crate) pods: BTreeSet<String>,
    /// And the first attempts, this many.
    pub(crate) first: usize,
}

/// A simulation's outcome: a row per pod, the scheduler as it ends, and the
/// plugin timings of its sampled cycles.
pub(crate) struct Simulation {
    pub(crate) rows: Vec<Row>,
    /// Each PodGroup's last outcome, by `namespace/name`.
    pub(crate) groups: BTreeMap<String, GroupLine>,
    pub(crate) sched: Scheduler,
    pub(crate) timings: wasmsched_kube::metrics::Metrics,
}

/// Well-known labels `--print-cluster` shows in columns of their own (or
/// not at all), not among the other labels.
const SHOWN_LABELS: &[&str] = &[
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
];

/// `--print-cluster`: one line per node, then the pending pods.
/// `NAMESPACE/NAME` of every pod of `objs` not bound to a node.
pub(crate) fn pending_pods(objs: &Objects) -> Vec<String> {
    objs.pods
        .iter()
        .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()).is_none())
        .map(|p| {
            format!(
                "{}/{}",
                p.metadata.namespace.as_deref().unwrap_or("default"),
                p.metadata.name.as_deref().unwrap_or_default()
            )
        })
        .collect()
}

fn print_cluster(out: &mut impl Write, objs: &Objects) -> anyhow::Result<()> {
    let mut bound: std::collections::HashMap<&str, usize> = Default::default();
    for n in objs.pods.iter().filter_map(|p| p.spec.as_ref()?.node_name.as_deref()) {
        *bound.entry(n).or_default() += 1;
    }
    let pending = pending_pods(objs);
    let mut lines = vec![["NODE", "ZONE", "CPU", "MEMORY", "PODS", "TAINTS", "LABELS"].map(str::to_owned)];
    for n in &objs.nodes {
        let name = n.metadata.name.clone().unwrap_or_default();
        let labels = n.metadata.labels.clone().unwrap_or_default();
        let alloc = n
            .status
            .as_ref()
            .and_then(|s| s.allocatable.clone())
            .unwrap_or_default();
        let q = |r: &str| alloc.get(r).map_or("-".to_owned(), |q| q.0.clone());
        let mut taints: Vec<String> = n
            .spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default()
            .iter()
            .map(|t| match &t.value {
                Some(v) => format!("{}={v}:{}", t.key, t.effect),
                None => format!("{}:{}", t.key, t.effect),
            })
            .collect();
        if n.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
            taints.insert(0, "cordoned".into());
        }
        let other: Vec<String> = labels
            .iter()
            .filter(|(k, _)| !SHOWN_LABELS.contains(&k.as_str()))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        lines.push([
            name.clone(),
            labels.get("topology.kubernetes.io/zone").cloned().unwrap_or("-".into()),
            q("cpu"),
            q("memory"),
            format!("{}/{}", bound.get(name.as_str()).copied().unwrap_or(0), q("pods")),
            if taints.is_empty() {
                "-".into()
            } else {
                taints.join(",")
            },
            if other.is_empty() { "-".into() } else { other.join(",") },
        ]);
    }
    let widths: Vec<usize> = (0..7)
        .map(|i| lines.iter().map(|l| l[i].len()).max().unwrap_or(0))
        .collect();
    for l in &lines {
        let cells: Vec<String> = l.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        writeln!(out, "{}", cells.join("  ").trim_end())?;
    }
    writeln!(
        out,
        "\n{} nodes; {} pending pods: {}",
        objs.nodes.len(),
        pending.len(),
        pending.join(" ")
    )?;
    Ok(())
}

/// The score plugins of each profile with their weights, for the header
/// of a run with `--plugins` (whose plugins run at weight 1 unless told).
fn score_weights(config: &Config, registry: &Registry) -> anyhow::Result<String> {
    let lines: Vec<String> = config
        .build_frameworks(registry)?
        .iter()
        .map(|fw| {
            let total: i64 = fw.score.iter().map(|e| e.weight).sum();
            let each: Vec<String> = fw
                .score
                .iter()
                .map(|e| format!("{} {}", e.plugin.name(), e.weight))
                .collect();
            format!("score weights of {} (total {total}): {}", fw.profile, each.join(", "))
        })
        .collect();
    Ok(format!(
        "{}\n(set a plugin's weight with --plugin-weight NAME=WEIGHT, or in the configuration)",
        lines.join("\n")
    ))
}

/// The claims kube-controller-manager's resourceclaim controller would
/// make from a pending pod's claim templates (found among the objects),
/// and the pod naming them in its status; none when it makes none.
fn template_claims(
    pod: &k8s_openapi::api::core::v1::Pod,
    objs: &Objects,
) -> Option<(Vec<serde_json::Value>, k8s_openapi::api::core::v1::Pod)> {
    let uses_templates = pod
        .spec
        .as_ref()
        .and_then(|s| s.resource_claims.as_ref())
        .is_some_and(|l| l.iter().any(|c| c.resource_claim_template_name.is_some()));
    if !uses_templates || pod.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some() {
        return None;
    }
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    let mut v = serde_json::to_value(pod).ok()?;
    v["metadata"]["namespace"] = serde_json::json!(ns);
    let template = |name: &str| {
        objs.claim_templates
            .iter()
            .find(|o| {
                o.pointer("/metadata/name").and_then(serde_json::Value::as_str) == Some(name)
                    && o.pointer("/metadata/namespace")
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or("default")
                        == ns
            })
            .cloned()
    };
    let (claims, statuses) = wasmsched_apiserver_sim::offline_claims(&v, template);
    if claims.is_empty() {
        return None;
    }
    let list = &mut v["status"]["resourceClaimStatuses"];
    match list.as_array_mut() {
        Some(l) => l.extend(statuses),
        None => *list = serde_json::Value::Array(statuses),
    }
    Some((claims, serde_json::from_value(v).ok()?))
}

/// Rounds in which `simulate` tries again the pods rejected at Permit.
const MAX_PERMIT_ROUNDS: usize = 10;

/// Binds the held pods a Permit plugin allowed, and fails those it
/// rejected (recording why); true when some were rejected (their retry
/// is worth another round).
pub(crate) fn settle_permits(
    sched: &mut Scheduler,
    held: &mut Vec<(String, String)>,
    permit: &mut std::collections::HashMap<String, Result<(), String>>,
    clock: Instant,
) -> bool {
    let mut rejected = false;
    let waiting = sched.waiting().clone();
    held.retain(|(key, uid)| match waiting.outcome(uid, || {}) {
        None => true,
        Some(Ok(())) => {
            sched.binding_finished(key, uid, true, clock);
            permit.insert(key.clone(), Ok(()));
            false
        }
        Some(Err(st)) => {
            sched.binding_finished(key, uid, false, clock);
            permit.insert(key.clone(), Err(st.message()));
            rejected = true;
            false
        }
    });
    rejected
}

/// Places the pending pods of `objs` (the attempts `explain` names
/// explained): one row per pod, in the order of their last attempt.
pub(crate) fn simulate(
    config: &Config,
    registry: &Registry,
    config_name: &str,
    objs: &Objects,
    metrics: Option<&crate::Metrics>,
    seed: u64,
    explain: &Explain,
) -> anyhow::Result<Simulation> {
    let mut sched = Scheduler::new(config, registry, seed, Responsibility::AllPods)
        .with_context(|| format!("invalid config {config_name}"))?;
    let now = Instant::now();
    for n in &objs.nodes {
        sched.on_node(n, now)?;
    }
    for ns in &objs.namespaces {
        sched.on_namespace(ns, now);
    }
    for w in &objs.workloads {
        sched.on_workload(w)?;
    }
    for o in &objs.storage {
        sched.on_storage(o, now)?;
    }
    for g in &objs.pod_groups {
        sched.on_pod_group(g, now)?;
    }
    if let Some(m) = metrics {
        for (source, series) in &m.sources {
            let report = sched.on_metrics(source, series, now);
            crate::warn_unmatched(&m.path, source, &report);
        }
    }
    let mut rows = Vec::new();
    for p in &objs.pods {
        let generated = template_claims(p, objs);
        if let Some((claims, _)) = &generated {
            for c in claims {
                sched.on_storage(c, now)?;
            }
        }
        let p = generated.as_ref().map_or(p, |(_, p)| p);
        // Pods of a file often have no UID; the scheduler tells pods in
        // flight (held at Permit, placed by one group cycle) apart by it.
        let with_uid;
        let p = if p.metadata.uid.as_deref().is_none_or(str::is_empty) {
            let mut q = p.clone();
            q.metadata.uid = Some(format!(
                "{}/{}",
                q.metadata.namespace.as_deref().unwrap_or("default"),
                q.metadata.name.as_deref().unwrap_or_default()
            ));
            with_uid = q;
            &with_uid
        } else {
            p
        };
        if let Err(e) = sched.on_pod(p, now) {
            // A malformed pod is reported, not fatal: the others are still placed.
            let ns = p.metadata.namespace.as_deref().unwrap_or("default");
            let name = p.metadata.name.as_deref().unwrap_or_default();
            rows.push(Row::new(format!("{ns}/{name}"), format!("invalid pod: {e}")));
        }
    }
    // A preemption evicts its victims at once (as if their grace period
    // were over): the preemptor is retried and lands on its node.
    // Time stands still but for that: when a round of cycles preempted,
    // the clock jumps to the end of the backoff of the pods it requeued.
    // Pods a Permit plugin holds are bound once allowed; one rejected
    // (by a plugin, or at its deadline) is retried after backoff, as a
    // binding cycle's failure. When nothing else can happen, time jumps to
    // the deadlines of those still held.
    let mut permit: std::collections::HashMap<String, Result<(), String>> = Default::default();
    let attempts = sched.with_pool(|sched| {
        let mut attempts = Vec::new();
        let mut held: Vec<(String, String)> = Vec::new();
        let mut clock = now;
        let (mut timed_out, mut rejections) = (false, 0);
        loop {
            let (mut preempted, mut rejected) = (false, false);
            while let Some(a) = sched.schedule_one(clock, !explain.pods.is_empty() || attempts.len() < explain.first) {
                match &a.result {
                    Ok(r) if r.waiting => held.push((a.pod.key.clone(), a.pod.uid.clone())),
                    Ok(_) => sched.binding_finished(&a.pod.key, &a.pod.uid, true, clock),
                    Err(_) => {}
                }
                for v in a.nomination().map(|n| n.victims.as_slice()).unwrap_or_default() {
                    sched.on_pod_deleted(&v.key, &v.uid, clock);
                    preempted = true;
                }
                attempts.push(a);
                rejected |= settle_permits(sched, &mut held, &mut permit, clock);
            }
            if !held.is_empty() && !timed_out {
                // Nothing allows them any more: their waits time out (once;
                // the pods rejected then are not tried again).
                let latest = held.iter().filter_map(|(_, uid)| sched.waiting().deadline(uid)).max();
                if let Some(t) = latest {
                    clock = clock.max(t);
                    sched.waiting().expire(clock);
                    settle_permits(sched, &mut held, &mut permit, clock);
                }
                timed_out = true;
            }
            // Pods a plugin rejected at Permit are tried again a few times
            // (a gang that cannot fit would be forever).
            rejections += usize::from(rejected);
            match sched.queue.next_backoff_expiry() {
                Some(t) if preempted || (rejected && rejections <= MAX_PERMIT_ROUNDS) => clock = clock.max(t),
                _ => break,
            }
        }
        attempts
    });
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let timings = wasmsched_kube::metrics::Metrics::default();
    let mut groups: BTreeMap<String, GroupLine> = BTreeMap::new();
    for (i, attempt) in attempts.into_iter().enumerate() {
        if let Some(g) = &attempt.pod_group {
            groups.insert(format!("{}/{}", g.namespace, g.name), GroupLine::of(g, &sched));
        }
        let group = attempt
            .pod
            .scheduling_group
            .as_deref()
            .map(|g| format!("{}/{g}", attempt.pod.namespace));
        for t in &attempt.plugin_timings {
            timings.plugin(&t.plugin, t.extension_point, t.status, t.took);
        }
        let key = attempt.pod.key.clone();
        let want_explain = explain.pods.contains(&key) || i < explain.first;
        let profile = attempt.profile.clone();
        let nomination = attempt.nomination().cloned();
        let mut row = match attempt.result {
            Ok(r) if r.waiting && !matches!(permit.get(&key), Some(Ok(()))) => Row {
                evaluated: r.evaluated_nodes,
                feasible: r.feasible_nodes,
                ..Row::new(
                    key.clone(),
                    match permit.get(&key) {
                        Some(Err(why)) => format!("held at Permit on {}, then rejected: {why}", r.node),
                        _ => format!("waiting at Permit on {}", r.node),
                    },
                )
            },
            Ok(r) => {
                let score = r
                    .explanation
                    .as_ref()
                    .and_then(|x| x.nodes.iter().find(|n| n.selected))
                    .and_then(|n| n.total);
                Row {
                    devices: r.devices.as_ref().map(devices_of).unwrap_or_default(),
                    node: Some(r.node),
                    score,
                    feasible: r.feasible_nodes,
                    evaluated: r.evaluated_nodes,
                    explanation: r.explanation.filter(|_| want_explain),
                    ..Row::new(key.clone(), String::new())
                }
            }
            Err(e) => {
                let explanation = match &e {
                    ScheduleError::Unschedulable(fe) => fe.explanation.clone(),
                    _ => None,
                };
                Row {
                    evaluated: sched.cache.node_count(),
                    explanation: explanation.filter(|_| want_explain),
                    ..Row::new(key.clone(), e.to_string())
                }
            }
        };
        // A pod attempted again keeps one row: the last outcome, with the
        // preemption an earlier attempt made.
        if let Some(&i) = at.get(&key) {
            let earlier = std::mem::replace(&mut rows[i], Row::new(String::new(), String::new()));
            row.preempted = earlier.preempted;
            row.search = earlier.search;
        }
        row.profile = profile;
        row.group = group;
        if let Some(x) = &mut row.explanation {
            row.search.append(&mut x.preemption);
        }
        if let Some(n) = nomination {
            let victims: Vec<String> = n.victims.iter().map(|v| v.key.clone()).collect();
            for v in &victims {
                let evicted = Row {
                    preempted_by: Some(format!("{key} on {}", n.node)),
                    ..Row::new(v.clone(), format!("preempted by {key} on {}", n.node))
                };
                match at.get(v) {
                    Some(&i) => rows[i] = evicted,
                    None => {
                        at.insert(v.clone(), rows.len());
                        rows.push(evicted);
                    }
                }
            }
            row.preempted = Some((n.node.clone(), victims));
        }
        match at.get(&key) {
            Some(&i) => rows[i] = row,
            None => {
                at.insert(key, rows.len());
                rows.push(row);
            }
        }
    }
    // Gated pods are not attempted; say what they wait for, in
    // kube-scheduler's words.
    for p in &objs.pods {
        let Some(spec) = &p.spec else { continue };
        let gates: Vec<&str> = spec
            .scheduling_gates
            .iter()
            .flatten()
            .map(|g| g.name.as_str())
            .collect();
        if gates.is_empty() || spec.node_name.as_deref().is_some_and(|n| !n.is_empty()) {
            continue;
        }
        let ns = p.metadata.namespace.as_deref().unwrap_or("default");
        rows.push(Row {
            gated: true,
            ..Row::new(
                format!("{ns}/{}", p.metadata.name.as_deref().unwrap_or_default()),
                format!("waiting for scheduling gates: [{}]", gates.join(" ")),
            )
        });
    }
    // Pods whose claims do not exist wait outside the queue too
    // (DynamicResources' PreEnqueue).
    for (p, _) in sched.gated() {
        if p.scheduling_gates.is_empty() {
            let group = p.scheduling_group.as_deref().map(|g| format!("{}/{g}", p.namespace));
            if let Some(g) = &group {
                groups
                    .entry(g.clone())
                    .or_insert_with(|| GroupLine::waiting(g, sched.gated_reason(p), &sched));
            }
            rows.push(Row {
                gated: true,
                group,
                ..Row::new(p.key.clone(), format!("waiting: {}", sched.gated_reason(p)))
            });
        }
    }
    for r in &mut rows {
        if let Some(g) = r.group.as_ref().and_then(|k| groups.get(k).map(|g| (k, g))) {
            let (k, g) = g;
            let result = match g.message.as_str() {
                "" => g.reason.clone(),
                m => format!("{}: {m}", g.reason),
            };
            r.group_cycle = Some(format!(
                "pod group {k}, {}: {} pods, {} fit and {} placed in its last cycle; {result}",
                g.policy, g.pods, g.fit, g.placed
            ));
        }
    }
    let over = sched.cache.overcommitted_nodes();
    if !over.is_empty() {
        bail!("internal error: nodes overcommitted: {over:?}");
    }
    Ok(Simulation {
        rows,
        groups,
        sched,
        timings,
    })
}

/// A PodGroup's outcome, as `simulate` reports it.
#[derive(Debug, Clone)]
pub(crate) struct GroupLine {
    /// `basic`, or `gang (minCount N)`.
    policy: String,
    /// How many pods name it.
    pods: usize,
    /// Its pods that fit in its last cycle (placed, or undone with it).
    fit: usize,
    /// Its pods placed by its last cycle.
    placed: usize,
    /// Its `PodGroupScheduled` condition's reason, or `Waiting` when no
    /// cycle ran (its pods wait before the queue).
    reason: String,
    /// The condition's message, or why its pods wait.
    message: String,
}

impl GroupLine {
    fn policy(key: &str, sched: &Scheduler) -> String {
        match sched.pod_groups().get(key).map(|g| g.policy) {
            Some(wasmsched_core::pod_groups::Policy::Gang { min_count }) => format!("gang (minCount {min_count})"),
            Some(wasmsched_core::pod_groups::Policy::Basic) => "basic".into(),
            None => "not found".into(),
        }
    }

    fn of(g: &wasmsched_core::scheduler::GroupOutcome, sched: &Scheduler) -> Self {
        let key = format!("{}/{}", g.namespace, g.name);
        GroupLine {
            policy: Self::policy(&key, sched),
            pods: g.all_pods,
            fit: g.fit,
            placed: g.placed,
            reason: g.reason.to_owned(),
            message: g.message.clone(),
        }
    }

    fn waiting(key: &str, why: String, sched: &Scheduler) -> Self {
        GroupLine {
            policy: Self::policy(key, sched),
            pods: sched.pod_groups().all_pods(key),
            fit: 0,
            placed: 0,
            reason: "Waiting".into(),
            message: why,
        }
    }
}

/// The PodGroups after the table: each with its policy, pods, those
/// placed, and its condition.
fn print_groups(out: &mut impl Write, groups: &BTreeMap<String, GroupLine>) -> anyhow::Result<()> {
    if groups.is_empty() {
        return Ok(());
    }
    let w = groups.keys().map(String::len).max().unwrap_or(9).max(9);
    writeln!(
        out,
        "\n{:w$}  {:20}  {:6}  {:6}  RESULT",
        "POD GROUP", "POLICY", "PODS", "PLACED"
    )?;
    for (name, g) in groups {
        let result = match (g.reason.as_str(), g.message.as_str()) {
            (r, "") => r.to_owned(),
            (r, m) => format!("{r}: {m}"),
        };
        writeln!(
            out,
            "{name:w$}  {:20}  {:6}  {:6}  {result}",
            g.policy, g.pods, g.placed
        )?;
    }
    Ok(())
}

fn groups_json(groups: &BTreeMap<String, GroupLine>) -> Value {
    json!(
        groups
            .iter()
            .map(
                |(name, g)| json!({"name": name, "policy": g.policy, "pods": g.pods, "fit": g.fit, "placed": g.placed,
            "reason": g.reason, "message": g.message})
            )
            .collect::<Vec<_>>()
    )
}

fn print_table(out: &mut impl Write, rows: &[Row], nodes: usize) -> anyhow::Result<()> {
    let w = rows.iter().map(|r| r.pod.len()).max().unwrap_or(3).max(3);
    let nw = rows
        .iter()
        .filter_map(|r| r.node.as_ref().map(String::len))
        .max()
        .unwrap_or(4)
        .max(4);
    writeln!(out, "{:w$}  {:nw$}  RESULT", "POD", "NODE")?;
    for r in rows {
        match &r.node {
            Some(n) => {
                write!(
                    out,
                    "{:w$}  {n:nw$}  scheduled ({} of {} evaluated nodes feasible)",
                    r.pod, r.feasible, r.evaluated
                )?;
                if let Some((_, victims)) = &r.preempted {
                    write!(out, " after preempting {}", victims.join(", "))?;
                }
                if !r.devices.is_empty() {
                    write!(out, " with devices {}", r.devices.join(", "))?;
                }
                writeln!(out)?;
            }
            None => writeln!(out, "{:w$}  {:nw$}  {}", r.pod, "-", r.reason)?,
        }
    }
    let c = Counts::of(rows);
    write!(
        out,
        "\n{} pods on {nodes} nodes: {} scheduled, {} unschedulable",
        rows.len(),
        c.placed,
        c.unschedulable
    )?;
    if c.gated > 0 {
        write!(out, ", {} gated", c.gated)?;
    }
    if c.preempted > 0 {
        write!(out, ", {} preempted", c.preempted)?;
    }
    writeln!(out, ".")?;
    for r in rows {
        if let Some(x) = &r.explanation {
            writeln!(out)?;
            print_explanation(out, r, x)?;
        }
        if !r.search.is_empty() {
            if r.explanation.is_none() {
                writeln!(out)?;
            }
            print_search(out, r)?;
        }
    }
    Ok(())
}

/// How many rows ended each way.
struct Counts {
    placed: usize,
    gated: usize,
    preempted: usize,
    unschedulable: usize,
}

impl Counts {
    fn of(rows: &[Row]) -> Self {
        let placed = rows.iter().filter(|r| r.node.is_some()).count();
        let gated = rows.iter().filter(|r| r.gated).count();
        let preempted = rows.iter().filter(|r| r.preempted_by.is_some()).count();
        Counts {
            placed,
            gated,
            preempted,
            unschedulable: rows.len() - placed - gated - preempted,
        }
    }
}

/// The victim search of a pod's preemption, node by node.
fn print_search(out: &mut impl Write, row: &Row) -> anyhow::Result<()> {
    writeln!(
        out,
        "{}: preemption tried {} node(s){}",
        row.pod,
        row.search.len(),
        match &row.preempted {
            Some((node, _)) => format!(", nominated to {node}"),
            None => ", none helps".to_owned(),
        }
    )?;
    let nw = row.search.iter().map(|t| t.node.len()).max().unwrap_or(4).max(4);
    for t in &row.search {
        let what = match &t.outcome {
            Ok((victims, violations)) => {
                let names: Vec<String> = victims
                    .iter()
                    .map(|v| format!("{} (priority {})", v.key, v.priority))
                    .collect();
                format!(
                    "evict {}; {violations} PodDisruptionBudget violation(s)",
                    names.join(", ")
                )
            }
            Err(st) => format!("{}: {}", st.plugin().unwrap_or("DefaultPreemption"), st.message()),
        };
        let chosen = row.preempted.as_ref().is_some_and(|(n, _)| *n == t.node);
        writeln!(
            out,
            "  {:nw$}  {what}{}",
            t.node,
            if chosen { "  <- chosen" } else { "" }
        )?;
    }
    Ok(())
}

fn print_explanation(out: &mut impl Write, row: &Row, x: &Explanation) -> anyhow::Result<()> {
    writeln!(
        out,
        "{}: {} nodes evaluated (looking for {} feasible), {}",
        row.pod,
        x.nodes.len(),
        x.nodes_to_find,
        match &row.node {
            Some(n) => format!("selected {n}"),
            None => "none feasible".to_owned(),
        }
    )?;
    if let Some(g) = &row.group_cycle {
        writeln!(out, "  {g}")?;
    }
    if let (Some(n), false) = (&row.node, row.devices.is_empty()) {
        writeln!(
            out,
            "  devices DynamicResources allocated on {n}: {}",
            row.devices.join(", ")
        )?;
    }
    let nw = x.nodes.iter().map(|n| n.node.len()).max().unwrap_or(4).max(4);
    let cols: Vec<String> = x.scores.iter().map(|(p, w)| format!("{p}×{w}")).collect();
    write!(out, "  {:nw$}  ", "NODE")?;
    for c in &cols {
        write!(out, "{c:>w$}  ", w = c.len())?;
    }
    writeln!(out, "TOTAL  VERDICT")?;
    for n in &x.nodes {
        write!(out, "  {:nw$}  ", n.node)?;
        for (i, c) in cols.iter().enumerate() {
            let cell = n.scores.get(i).map(|s| match s.raw {
                Some(_) => s.weighted.to_string(),
                None => "skip".to_owned(),
            });
            write!(out, "{:>w$}  ", cell.unwrap_or_else(|| "-".into()), w = c.len())?;
        }
        let total = n.total.map_or("-".to_owned(), |t| t.to_string());
        let verdict = match &n.rejected {
            Some(st) => format!("{}: {}", st.plugin().unwrap_or("?"), st.message()),
            None if n.selected => "feasible, selected".to_owned(),
            None => "feasible".to_owned(),
        };
        writeln!(out, "{total:>5}  {verdict}")?;
    }
    writeln!(
        out,
        "  (each cell is the plugin's score after NormalizeScore times its weight, as kube-scheduler logs it at -v=10 \"Plugin scored node for pod\"; TOTAL is their sum, its \"Calculated node's final score for pod\"; -o json adds the raw and normalized scores)"
    )?;
    Ok(())
}

fn explanation_json(x: &Explanation) -> Value {
    json!({
        "filters": x.filters,
        "scorePlugins": x.scores.iter().map(|(p, w)| json!({"name": p, "weight": w})).collect::<Vec<_>>(),
        "nodesToFind": x.nodes_to_find,
        "nodes": x.nodes.iter().map(|n| json!({
            "node": n.node,
            "feasible": n.rejected.is_none(),
            "rejectedBy": n.rejected.as_ref().and_then(|s| s.plugin()),
            "reasons": n.rejected.as_ref().map(|s| s.reasons().collect::<Vec<_>>()),
            "scores": n.scores.iter().map(|s| json!({"plugin": s.plugin, "raw": s.raw, "normalized": s.normalized, "weighted": s.weighted})).collect::<Vec<_>>(),
            "total": n.total,
            "selected": n.selected,
        })).collect::<Vec<_>>(),
    })
}

fn to_json(rows: &[Row]) -> Value {
    let c = Counts::of(rows);
    json!({
        "placements": rows.iter().map(|r| {
            let mut v = json!({
                "pod": r.pod,
                "node": r.node,
                "reason": r.reason,
                "feasibleNodes": r.feasible,
                "evaluatedNodes": r.evaluated,
            });
            if let Some(s) = r.score { v["score"] = json!(s); }
            if let Some(x) = &r.explanation { v["explain"] = explanation_json(x); }
            if let Some((node, victims)) = &r.preempted { v["preemption"] = json!({"node": node, "victims": victims}); }
            if !r.devices.is_empty() { v["devices"] = json!(r.devices); }
            if let Some(g) = &r.group { v["podGroup"] = json!(g); }
            if !r.search.is_empty() {
                v["preemptionSearch"] = json!(r.search.iter().map(|t| match &t.outcome {
                    Ok((victims, violations)) => json!({"node": t.node,
                        "victims": victims.iter().map(|p| &p.key).collect::<Vec<_>>(), "pdbViolations": violations}),
                    Err(st) => json!({"node": t.node, "reasons": st.reasons().collect::<Vec<_>>()}),
                }).collect::<Vec<_>>());
            }
            v
        }).collect::<Vec<_>>(),
        "summary": {"pods": rows.len(), "scheduled": c.placed, "unschedulable": c.unschedulable, "gated": c.gated,
            "preempted": c.preempted},
    })
}
