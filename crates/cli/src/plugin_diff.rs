//! `wasmsched plugin diff OLD NEW`: places a cluster snapshot's pending pods
//! with each version of a plugin, and prints the pods that land elsewhere,
//! become unschedulable or schedulable, or get other DRA devices on the
//! same node, and why: each version's verdict and score on the nodes
//! involved.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::{Value, json};
use wasmsched_core::framework::Explanation;

use crate::simulate::Row;

/// Arguments of `plugin diff`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The version serving now (`.wasm` or `.wasm.gz`).
    old: PathBuf,
    /// The version to compare with it: the same plugin (the same name).
    new: PathBuf,
    #[command(flatten)]
    cluster: crate::simulate::ClusterArgs,
    /// Scheduler configuration; a profile that does not mention the plugin
    /// runs it at weight 1 where it scores.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Live metric values per node (the format of `simulate --metrics`).
    #[arg(long, value_name = "FILE")]
    metrics: Option<PathBuf>,
    /// Seed for breaking ties (the same for both versions).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = crate::simulate::Output::Table)]
    output: crate::simulate::Output,
    /// Exit with an error when any pod is placed differently (for CI).
    #[arg(long)]
    fail_on_change: bool,
}

/// One version's run.
struct Run {
    file: String,
    name: String,
    version: String,
    rows: Vec<Row>,
}

/// How a pod's outcome differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// Placed by both, on other nodes.
    Moved,
    /// Placed by both on the same node, with other DRA devices (earlier
    /// pods took others).
    Devices,
    /// Placed by the old version only.
    Unschedulable,
    /// Placed by the new version only.
    Schedulable,
    /// Placed by neither, for another reason.
    Reason,
}

impl Change {
    fn name(self) -> &'static str {
        match self {
            Change::Moved => "moved",
            Change::Devices => "devices",
            Change::Unschedulable => "unschedulable",
            Change::Schedulable => "schedulable",
            Change::Reason => "reason",
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let objs = args.cluster.read()?;
    let metrics = args.metrics.as_deref().map(crate::read_metrics).transpose()?;
    // Every pending pod explained: the verdicts on the nodes that differ.
    let explain = crate::simulate::Explain {
        pods: crate::simulate::pending_pods(&objs).into_iter().collect(),
        first: 0,
    };
    let old = place_with(&args.old, &args, &objs, metrics.as_ref(), &explain)?;
    let new = place_with(&args.new, &args, &objs, metrics.as_ref(), &explain)?;
    if old.name != new.name {
        bail!(
            "{} is plugin {} and {} is plugin {}: diff compares two versions of one plugin",
            old.file,
            old.name,
            new.file,
            new.name
        );
    }
    let changes = compare(&old, &new);
    let mut out = std::io::stdout().lock();
    match args.output {
        crate::simulate::Output::Table => print_table(&mut out, &old, &new, &changes)?,
        crate::simulate::Output::Json => {
            use std::io::Write as _;
            writeln!(out, "{}", serde_json::to_string_pretty(&to_json(&old, &new, &changes))?)?;
        }
    }
    if args.fail_on_change && !changes.is_empty() {
        bail!(
            "{} of {} pods placed differently (--fail-on-change)",
            changes.len(),
            new.rows.len()
        );
    }
    Ok(())
}

/// Places the pods with `file` as the only plugin of a directory of its own.
fn place_with(
    file: &Path,
    args: &Args,
    objs: &wasmsched_core::fixture::Objects,
    metrics: Option<&crate::Metrics>,
    explain: &crate::simulate::Explain,
) -> anyhow::Result<Run> {
    let meta = std::fs::metadata(file).with_context(|| format!("cannot read {}", file.display()))?;
    if !meta.is_file() {
        bail!("{} is not a file", file.display());
    }
    let base = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = TempDir::new()?;
    std::fs::copy(file, dir.0.join(&base)).with_context(|| format!("cannot copy {}", file.display()))?;
    let mut config = crate::load_config(args.config.as_deref())?;
    crate::plugin::refuse_shadow(&config, "plugin diff")?;
    let (registry, host) = crate::plugin::registry(
        &mut config,
        Some(&dir.0),
        args.seed,
        crate::plugin::FirstScan::Now,
        wasmsched_wasm::Tiering::Off,
        &metrics.map(crate::Metrics::names).unwrap_or_default(),
    )?;
    let (_, name, version) = host
        .as_ref()
        .and_then(|h| h.versions().into_iter().next())
        .with_context(|| format!("{} was not loaded (see the warning above)", file.display()))?;
    let config_name = args
        .config
        .as_ref()
        .map_or("the default configuration".to_owned(), |p| p.display().to_string());
    let rows = crate::simulate::simulate(&config, &registry, &config_name, objs, metrics, args.seed, explain)?.rows;
    Ok(Run {
        file: file.display().to_string(),
        name,
        version,
        rows,
    })
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> anyhow::Result<Self> {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!("wasmsched-diff-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&d).with_context(|| format!("cannot create {}", d.display()))?;
        Ok(Self(d))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The pods whose outcome differs, in the new run's order.
fn compare<'r>(old: &'r Run, new: &'r Run) -> Vec<(Change, &'r Row, &'r Row)> {
    let by_pod: std::collections::HashMap<&str, &Row> = old.rows.iter().map(|r| (r.pod.as_str(), r)).collect();
    new.rows
        .iter()
        .filter_map(|n| {
            let o = by_pod.get(n.pod.as_str())?;
            let change = match (&o.node, &n.node) {
                (Some(a), Some(b)) if a == b && o.devices == n.devices => return None,
                (Some(a), Some(b)) if a == b => Change::Devices,
                (Some(_), Some(_)) => Change::Moved,
                (Some(_), None) => Change::Unschedulable,
                (None, Some(_)) => Change::Schedulable,
                (None, None) if o.reason == n.reason => return None,
                (None, None) => Change::Reason,
            };
            Some((change, *o, n))
        })
        .collect()
}

/// What the plugin said about `node` in one run: its rejection, or its
/// score and the node's total.
fn verdict(x: Option<&Explanation>, node: &str, plugin: &str) -> Value {
    let Some(n) = x.and_then(|x| x.nodes.iter().find(|n| n.node == node)) else {
        return json!({"evaluated": false});
    };
    if let Some(st) = &n.rejected {
        return match st.plugin() {
            Some(p) if p == plugin => json!({"rejected": st.message()}),
            other => json!({"rejectedBy": other.unwrap_or("?"), "reason": st.message()}),
        };
    }
    let score = n.scores.iter().find(|s| s.plugin == plugin);
    json!({
        "score": score.map(|s| s.normalized),
        "weighted": score.map(|s| s.weighted),
        "total": n.total,
    })
}

fn verdict_text(v: &Value) -> String {
    if v.get("evaluated") == Some(&Value::Bool(false)) {
        return "not evaluated".into();
    }
    if let Some(r) = v.get("rejected").and_then(Value::as_str) {
        return format!("rejects: {r}");
    }
    if let Some(by) = v.get("rejectedBy").and_then(Value::as_str) {
        return format!("rejected by {by} first");
    }
    let total = v.get("total").and_then(Value::as_i64);
    match (v.get("score").and_then(Value::as_i64), total) {
        (Some(s), Some(t)) => format!("passes, scores {s} (node total {t})"),
        (None, Some(t)) => format!("passes (node total {t})"),
        (Some(s), None) => format!("passes, scores {s}"),
        (None, None) => "passes".into(),
    }
}

/// The nodes each version chose for the pod (one or two).
fn nodes_of<'r>(o: &'r Row, n: &'r Row) -> Vec<&'r str> {
    let mut v: Vec<&str> = o.node.iter().chain(n.node.iter()).map(String::as_str).collect();
    v.dedup();
    v
}

fn outcome(r: &Row) -> String {
    match &r.node {
        Some(n) if r.devices.is_empty() => n.clone(),
        Some(n) => format!("{n} with devices {}", r.devices.join(", ")),
        None => format!("unschedulable: {}", r.reason),
    }
}

fn print_table(
    out: &mut impl std::io::Write,
    old: &Run,
    new: &Run,
    changes: &[(Change, &Row, &Row)],
) -> anyhow::Result<()> {
    writeln!(
        out,
        "{} {} ({}) -> {} ({}): {} pods placed, {} differently",
        old.name,
        old.version,
        old.file,
        new.version,
        new.file,
        new.rows.len(),
        changes.len()
    )?;
    for (change, o, n) in changes {
        writeln!(out, "\n{} ({})", n.pod, change.name())?;
        writeln!(out, "  old: {}", outcome(o))?;
        writeln!(out, "  new: {}", outcome(n))?;
        for node in nodes_of(o, n) {
            let vo = verdict_text(&verdict(o.explanation.as_ref(), node, &old.name));
            let vn = verdict_text(&verdict(n.explanation.as_ref(), node, &new.name));
            writeln!(out, "  on {node}: old {vo}; new {vn}")?;
        }
        if !own_verdicts_differ(old, new, o, n) {
            writeln!(
                out,
                "  (the plugin said the same of these nodes in both versions: earlier pods placed differently, or a tie broken another way)"
            )?;
        }
    }
    Ok(())
}

/// Whether the plugin itself judged the pod's nodes differently (a
/// rejection, or its own score), rather than the rest of the cluster
/// having changed under it.
fn own_verdicts_differ(old: &Run, new: &Run, o: &Row, n: &Row) -> bool {
    let own = |v: Value| json!([v.get("rejected"), v.get("score")]);
    nodes_of(o, n).iter().any(|node| {
        own(verdict(o.explanation.as_ref(), node, &old.name)) != own(verdict(n.explanation.as_ref(), node, &new.name))
    })
}

fn to_json(old: &Run, new: &Run, changes: &[(Change, &Row, &Row)]) -> Value {
    let side = |r: &Row| {
        let mut v = json!({"node": r.node, "reason": if r.node.is_none() { Some(&r.reason) } else { None }});
        if !r.devices.is_empty() {
            v["devices"] = json!(r.devices);
        }
        v
    };
    json!({
        "plugin": new.name,
        "old": {"file": old.file, "version": old.version},
        "new": {"file": new.file, "version": new.version},
        "pods": new.rows.len(),
        "changed": changes.iter().map(|(change, o, n)| json!({
            "pod": n.pod,
            "change": change.name(),
            "pluginVerdictsDiffer": own_verdicts_differ(old, new, o, n),
            "old": side(o),
            "new": side(n),
            "nodes": nodes_of(o, n).iter().map(|node| json!({
                "node": node,
                "old": verdict(o.explanation.as_ref(), node, &old.name),
                "new": verdict(n.explanation.as_ref(), node, &new.name),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}
